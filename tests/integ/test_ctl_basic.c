/* gpuq-controller end to end, the basics (issue 7): against gpuq-sim and a
 * private redis-server, a job is queued, admitted, run and finished; quota
 * holds the second job back until the first ends; deleting a queued job
 * removes it at once and deleting a running one removes its pods first
 * (finalizer); jobs submitted together get one finalizer patch each and
 * no status write that only restamps a condition (the sim's --record).
 * Every wait is for a condition, with a deadline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/support/fixture.h"
#include "tests/support/proc.h"
#include "tests/support/redis.h"

static struct gq_test_sim sim;
static struct gq_test_redis redis;
static struct gq_test_ctl ctl;
static char rec_dir[256], rec_path[320]; /* the sim's --record file */

#define WAIT_MS 30000
#define NS "/apis/gpuq.dev/v1alpha1/namespaces/team-a/gpujobs"

static int setup(void **state)
{
  const char *args[] = {"--cluster", "clusters/mixed.yaml", "--time-scale",
                        "10", "--time-epoch", "1800000000", "--record",
                        rec_path, NULL};
  static const char *const cargs[] = {"--time-scale", "10", "--time-epoch",
                                      "1800000000", NULL};
  const char *tmp = getenv("TMPDIR");

  (void)state;
  snprintf(rec_dir, sizeof(rec_dir), "%s/gpuq-test-basic-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(rec_dir))
    return -1;
  snprintf(rec_path, sizeof(rec_path), "%s/record.jsonl", rec_dir);
  if (gq_test_redis_start(&redis, NULL) != 0 ||
      gq_test_sim_start(&sim, args) != 0)
    return -1;
  json_decref(gq_test_sim_call(&sim, "POST", "/api/v1/namespaces",
      "{\"metadata\":{\"name\":\"team-a\"}}", 201));
  json_decref(gq_test_sim_call(&sim, "POST",
      "/apis/gpuq.dev/v1alpha1/teamquotas",
      "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"TeamQuota\","
      "\"metadata\":{\"name\":\"team-a\"},\"spec\":{\"namespaces\":"
      "[\"team-a\"],\"resources\":[{\"flavor\":\"*\",\"nominal\":8}]}}", 201));
  return gq_test_ctl_start(&ctl, &sim, redis.url, 1, cargs);
}

static int teardown(void **state)
{
  int rc = 0;

  (void)state;
  rc |= gq_test_ctl_stop(&ctl) != 0;
  rc |= gq_test_sim_stop(&sim) != 0;
  gq_test_redis_stop(&redis);
  unlink(rec_path);
  rmdir(rec_dir);
  return rc ? -1 : 0;
}

/* Creates job 'name' in team-a with 'gpus' GPUs running run_s virtual
 * seconds (0: until deleted). */
static void create_job(const char *name, int gpus, int run_s)
{
  char body[1024], ann[128] = "";

  if (run_s > 0)
    snprintf(ann, sizeof(ann), "\"metadata\":{\"annotations\":"
             "{\"sim.gpuq.dev/run-seconds\":\"%d\"}},", run_s);
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"team-a\"},"
           "\"spec\":{\"team\":\"team-a\",\"gpusPerReplica\":%d,"
           "\"expectedDurationSeconds\":%d,\"template\":{%s\"spec\":"
           "{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
           name, gpus, run_s > 0 ? run_s : 3600, ann);
  json_decref(gq_test_sim_call(&sim, "POST", NS, body, 201));
}

static int wait_phase(const char *name, const char *phase)
{
  char path[256];

  snprintf(path, sizeof(path), NS "/%s", name);
  return gq_test_wait_field(&sim, path, "status.phase", phase, WAIT_MS);
}

static long count_pods(const char *job)
{
  char path[256];
  json_t *l;
  long n;

  snprintf(path, sizeof(path),
           "/api/v1/namespaces/team-a/pods?labelSelector=gpuq.dev/job%%3D%s",
           job);
  l = gq_test_sim_call(&sim, "GET", path, NULL, 200);
  n = (long)json_array_size(json_object_get(l, "items"));
  json_decref(l);
  return n;
}

/* A job runs to Succeeded; a second one that does not fit the quota next
 * to it waits, with the quota reason, and runs after it. */
static void test_admit_run_finish(void **state)
{
  json_t *j;

  (void)state;
  create_job("first", 8, 30);
  assert_true(wait_phase("first", "Running"));
  create_job("second", 4, 20);
  assert_true(wait_phase("second", "Queued"));
  /* reason and position may come in separate (coalesced) writes */
  assert_true(gq_test_wait_field(&sim, NS "/second", "status.reason",
                                 "WaitingForQuota", WAIT_MS));
  assert_true(gq_test_wait_field(&sim, NS "/second", "status.queuePosition",
                                 "1", WAIT_MS));
  assert_true(wait_phase("first", "Succeeded"));
  assert_true(wait_phase("second", "Succeeded"));
  j = gq_test_sim_call(&sim, "GET", NS "/first", NULL, 200);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(j, "status"), "attempts")), 1);
  json_decref(j);
}

/* Deleting a queued job: gone at once. Deleting a running one: its pods
 * go first, then the job (finalizer), and its GPUs are free again. */
static void test_delete(void **state)
{
  char url[512], *resp = NULL;
  int st = 0;

  (void)state;
  create_job("runner", 8, 0);
  assert_true(wait_phase("runner", "Running"));
  create_job("waiter", 8, 0);
  assert_true(wait_phase("waiter", "Queued"));
  json_decref(gq_test_sim_call(&sim, "DELETE", NS "/waiter", NULL, 200));
  json_decref(gq_test_sim_call(&sim, "DELETE", NS "/runner", NULL, 200));
  snprintf(url, sizeof(url), "%s" NS "/runner", sim.url);
  for (int t = 0; t < WAIT_MS; t += 50) {
    st = gq_test_http("GET", url, NULL, NULL, NULL, &resp);
    free(resp);
    resp = NULL;
    if (st == 404)
      break;
    gq_test_sleep_ms(50);
  }
  assert_int_equal(st, 404);
  for (int t = 0; t < WAIT_MS && count_pods("runner") > 0; t += 50)
    gq_test_sleep_ms(50);
  assert_int_equal(count_pods("runner"), 0);
  assert_int_equal(count_pods("waiter"), 0);
  create_job("after", 8, 10);
  assert_true(wait_phase("after", "Succeeded"));
}

/* The status of a recorded answer without what a restamp changes: each
 * condition's lastTransitionTime (new reference). */
static json_t *unstamped(const json_t *status)
{
  json_t *s = json_deep_copy(status), *c;
  size_t i;

  json_array_foreach(json_object_get(s, "conditions"), i, c)
    json_object_del(c, "lastTransitionTime");
  return s;
}

/* Twelve jobs at once (more than the quota holds): each gets one
 * finalizer patch (the add), and each status write of theirs changes more
 * than conditions' lastTransitionTime. A write computed from a cache that
 * does not show the job's last write yet repeats it and restamps the
 * conditions (docs/controller.md "Status and events"). */
static void test_one_write_per_change(void **state)
{
  json_t *last = json_object(), *fin = json_object(), *line, *obj;
  char name[32], *buf = NULL;
  size_t cap = 0;
  FILE *f;

  (void)state;
  for (int i = 0; i < 12; i++) {
    snprintf(name, sizeof(name), "w-%02d", i);
    create_job(name, 1, 20);
  }
  for (int i = 0; i < 12; i++) {
    snprintf(name, sizeof(name), "w-%02d", i);
    assert_true(wait_phase(name, "Succeeded"));
  }
  f = fopen(rec_path, "r");
  assert_non_null(f);
  while (getline(&buf, &cap, f) > 0) {
    const char *path, *method;
    char job[64];
    int status_write;

    line = json_loads(buf, 0, NULL);
    method = json_string_value(json_object_get(line, "method"));
    path = json_string_value(json_object_get(line, "path"));
    if (!method || strcmp(method, "PATCH") || !path ||
        strncmp(path, NS "/w-", strlen(NS "/w-"))) {
      json_decref(line);
      continue;
    }
    snprintf(job, sizeof(job), "%.4s", path + strlen(NS "/"));
    status_write = strstr(path, "/status") != NULL;
    obj = json_loads(json_string_value(json_object_get(line, "body")), 0,
                     NULL);
    assert_non_null(obj);
    if (!status_write) {
      json_object_set_new(fin, job, json_integer(json_integer_value(
                                        json_object_get(fin, job)) + 1));
    } else {
      const json_t *st = json_object_get(obj, "status");
      json_t *now = unstamped(st), *was = json_object_get(last, job);

      if (was && json_equal(was, now))
        fail_msg("job %s: a status write changed only lastTransitionTime: "
                 "%s", job, json_dumps(st, JSON_COMPACT));
      json_object_set_new(last, job, now);
    }
    json_decref(obj);
    json_decref(line);
  }
  free(buf);
  fclose(f);
  for (int i = 0; i < 12; i++) {
    snprintf(name, sizeof(name), "w-%02d", i);
    assert_int_equal(json_integer_value(json_object_get(fin, name)), 1);
    assert_non_null(json_object_get(last, name));
  }
  json_decref(last);
  json_decref(fin);
}

static void test_no_violations(void **state)
{
  (void)state;
  gq_test_sim_expect_clean(&sim, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_admit_run_finish),
      cmocka_unit_test(test_delete),
      cmocka_unit_test(test_one_write_per_change),
      cmocka_unit_test(test_no_violations),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
