/* GpuJob and TeamQuota validation, table-driven from files: every manifest
 * in examples/ is valid (and decodes to what it says), and every manifest in
 * tests/fixtures/invalid/ is rejected with exactly the message on its
 * "# want:" line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decide/las.h"

#include "api/gpujob.h"
#include "api/teamquota.h"
#include "api/yaml.h"
#include "base/alloc.h"
#include "base/err.h"
#include "cli/validate.h"
#include "tests/support/fixture.h"

/* Loads the single document of a manifest file. */
static json_t *load_one(const char *path)
{
  char err[512];
  json_t *docs, *obj;

  if (gq_yaml_load_file(path, &docs, err, sizeof(err)) != 0)
    fail_msg("%s", err);
  if (json_array_size(docs) != 1)
    fail_msg("%s: want one document, got %zu", path, json_array_size(docs));
  obj = json_incref(json_array_get(docs, 0));
  json_decref(docs);
  return obj;
}

static void test_examples_valid(void **state)
{
  size_t n, jobs = 0, quotas = 0;
  char **files = gq_test_list_dir("examples", ".yaml", &n);

  (void)state;
  assert_true(n >= 4);
  for (size_t i = 0; i < n; i++) {
    json_t *obj = load_one(files[i]);
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    char err[1024];
    int rc = gq_validate_object(obj, err, sizeof(err));

    if (rc != 1)
      fail_msg("%s: %s", files[i], rc == 0 ? "not a gpuq kind" : err);
    jobs += strcmp(kind, "GpuJob") == 0;
    quotas += strcmp(kind, "TeamQuota") == 0;
    json_decref(obj);
  }
  assert_true(jobs >= 2 && quotas >= 1);
  gq_test_free_list(files);
}

/* The flagship example decodes to the values DESIGN §2 describes. */
static void test_example_llama_fields(void **state)
{
  json_t *obj = load_one("examples/gpujob-llama-finetune.yaml");
  struct gq_gpujob j;
  char err[512];

  (void)state;
  assert_int_equal(gq_gpujob_decode(obj, &j, err, sizeof(err)), 0);
  assert_string_equal(j.meta.ns, "research");
  assert_string_equal(j.team, "research");
  assert_int_equal(j.priority, 100);
  assert_int_equal(j.replicas, 2);
  assert_int_equal(j.gpus_per_replica, 8);
  assert_int_equal(j.gpus, 16);
  assert_string_equal(j.gpu_resource, "nvidia.com/gpu");
  assert_int_equal(j.n_products, 2);
  assert_string_equal(j.products[0], "NVIDIA-H100-80GB-HBM3");
  assert_int_equal(j.min_memory_mib, 40000);
  assert_true(j.has_checkpoint);
  assert_int_equal(j.grace_s, 300);
  assert_int_equal(j.checkpoint_interval_s, 1800);
  assert_int_equal(j.drain, GQ_DRAIN_CHECKPOINT);
  assert_int_equal(j.expected_duration_s, 7200);
  assert_int_equal(j.backoff_limit, 3);
  assert_true(j.preemptible);
  assert_false(j.suspend);
  assert_true(j.sched->cpu_milli > 0);
  assert_true(j.sched->n_tolerations >= 1);
  assert_int_equal(j.status.phase, GQ_PHASE_NONE);
  gq_gpujob_release(&j);
  json_decref(obj);
}

/* Defaults apply when fields are absent (DESIGN §2, the CRD's defaults). */
static void test_job_defaults(void **state)
{
  json_t *obj = json_loads(
      "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
      "\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\"},"
      "\"spec\":{\"team\":\"t\",\"gpusPerReplica\":3,\"template\":{\"spec\":"
      "{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}",
      0, NULL);
  struct gq_gpujob j;
  char err[512];

  (void)state;
  assert_int_equal(gq_gpujob_decode(obj, &j, err, sizeof(err)), 0);
  assert_int_equal(j.priority, 0);
  assert_int_equal(j.replicas, 1);
  assert_int_equal(j.gpus, 3);
  assert_string_equal(j.gpu_resource, "nvidia.com/gpu");
  assert_int_equal(j.n_products, 0);
  assert_true(j.preemptible);
  assert_false(j.has_checkpoint);
  assert_int_equal(j.drain, GQ_DRAIN_REQUEUE);
  assert_int_equal(j.expected_duration_s, -1);
  assert_int_equal(j.active_deadline_s, -1);
  assert_int_equal(j.startup_timeout_s, -1);
  assert_int_equal(j.backoff_limit, 3);
  assert_int_equal(j.sched->grace_s, 30);
  gq_gpujob_release(&j);
  json_decref(obj);
}

static void test_quota_semantics(void **state)
{
  json_t *obj = load_one("examples/teamquota-research.yaml");
  const struct gq_quota_res *r;
  struct gq_teamquota q;
  char err[512];

  (void)state;
  assert_int_equal(gq_teamquota_decode(obj, &q, err, sizeof(err)), 0);
  assert_string_equal(q.meta.name, "research");
  assert_string_equal(q.cohort, "ml");
  assert_true(q.weight == 2.0);
  assert_true(gq_teamquota_admits_namespace(&q, "research-dev"));
  assert_false(gq_teamquota_admits_namespace(&q, "vision"));
  r = gq_teamquota_find(&q, "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu");
  assert_non_null(r);
  assert_int_equal(r->nominal, 16);
  assert_int_equal(r->borrow_limit, 16);
  assert_int_equal(r->lend_limit, 8);
  r = gq_teamquota_find(&q, "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu");
  assert_non_null(r);
  assert_int_equal(r->borrow_limit, GQ_NO_LIMIT); /* absent: unbounded */
  assert_int_equal(r->lend_limit, GQ_NO_LIMIT);
  assert_null(gq_teamquota_find(&q, "Tesla-T4", "nvidia.com/gpu"));
  assert_int_equal(q.within_team, GQ_WITHIN_LOWER_PRIORITY);
  assert_int_equal(q.reclaim, GQ_RECLAIM_ANY);
  assert_int_equal(q.sched, -1); /* absent: the controller's --scheduling */
  gq_teamquota_release(&q);
  json_decref(obj);
  obj = load_one("examples/teamquota-vision.yaml");
  assert_int_equal(gq_teamquota_decode(obj, &q, err, sizeof(err)), 0);
  assert_int_equal(q.sched, GQ_SCHED_ATTAINED);
  gq_teamquota_release(&q);
  json_decref(obj);
}

/* Reads "# want: ..." from the first line of a fixture. */
static char *want_line(const char *path)
{
  char *text = gq_test_read_file(path, NULL), *nl, *want;

  if (!text || strncmp(text, "# want: ", 8) != 0)
    fail_msg("%s: first line must be '# want: <message>'", path);
  nl = strchr(text, '\n');
  want = gq_xstrndup(text + 8, (size_t)(nl - text - 8));
  free(text);
  return want;
}

static void test_invalid_rejected_exactly(void **state)
{
  size_t n;
  char **files = gq_test_list_dir("tests/fixtures/invalid", ".yaml", &n);

  (void)state;
  assert_true(n >= 20);
  for (size_t i = 0; i < n; i++) {
    json_t *obj = load_one(files[i]);
    char *want = want_line(files[i]);
    char err[1024] = "";
    int rc = gq_validate_object(obj, err, sizeof(err));

    if (rc != GQ_EINVAL)
      fail_msg("%s: accepted (rc %d), want '%s'", files[i], rc, want);
    if (strcmp(err, want) != 0)
      fail_msg("%s:\n got  '%s'\n want '%s'", files[i], err, want);
    free(want);
    json_decref(obj);
  }
  gq_test_free_list(files);
}

/* Valid objects of other kinds are skipped; gpuq kinds need our apiVersion. */
static void test_validate_dispatch(void **state)
{
  json_t *cm = json_loads("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\"}", 0,
                          NULL);
  json_t *old = json_loads("{\"apiVersion\":\"gpuq.dev/v1\",\"kind\":"
                           "\"GpuJob\"}",
                           0, NULL);
  char err[256];

  (void)state;
  assert_int_equal(gq_validate_object(cm, err, sizeof(err)), 0);
  assert_int_equal(gq_validate_object(old, err, sizeof(err)), GQ_EINVAL);
  assert_string_equal(err, "apiVersion: must be gpuq.dev/v1alpha1 for kind "
                           "GpuJob, got \"gpuq.dev/v1\"");
  json_decref(cm);
  json_decref(old);
}

/* Status fields written by gpuq are read back (restart rebuild). */
static void test_status_read_back(void **state)
{
  json_t *obj = load_one("examples/gpujob-eval-single.yaml");
  json_t *st = json_pack(
      "{s:s, s:s, s:s, s:i, s:i, s:{s:s, s:s}}", "phase", "Queued",
      "reason", "WaitingForQuota", "queuedAt", "2026-11-29T10:00:00Z",
      "attempts", 2, "preemptions", 1, "lastCheckpoint", "location",
      "s3://ckpt/step-100", "time", "2026-11-29T11:00:00Z");
  struct gq_gpujob j;
  char err[512];

  (void)state;
  json_object_set_new(obj, "status", st);
  assert_int_equal(gq_gpujob_decode(obj, &j, err, sizeof(err)), 0);
  assert_int_equal(j.status.phase, GQ_PHASE_QUEUED);
  assert_string_equal(gq_job_phase_name(j.status.phase), "Queued");
  assert_string_equal(j.status.reason, "WaitingForQuota");
  assert_int_equal(j.status.queued_ms, 1795946400000LL);
  assert_int_equal(j.status.attempts, 2);
  assert_int_equal(j.status.preemptions, 1);
  assert_string_equal(j.status.checkpoint, "s3://ckpt/step-100");
  assert_int_equal(j.status.checkpoint_ms, 1795950000000LL);
  gq_gpujob_release(&j);
  json_decref(obj);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_examples_valid),
      cmocka_unit_test(test_example_llama_fields),
      cmocka_unit_test(test_job_defaults),
      cmocka_unit_test(test_quota_semantics),
      cmocka_unit_test(test_invalid_rejected_exactly),
      cmocka_unit_test(test_validate_dispatch),
      cmocka_unit_test(test_status_read_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
