/* kubectl-gpuq through the real plugin mechanism (issue 11): `kubectl gpuq
 * ...` with the build directory on PATH and KUBECONFIG pointing at
 * gpuq-sim (clusters/mixed.yaml), with the real gpuq-controller and a
 * private redis-server writing the positions and TeamQuota status the
 * plugin shows. kubectl's flags after the plugin name (--kubeconfig,
 * --context, -n, -A, -o json), queue positions and order, team usage per
 * flavor, node capacity and cordon, and `why` naming the first failing
 * constraint per node. Every wait is for a condition, with a deadline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/support/fixture.h"
#include "tests/support/proc.h"
#include "tests/support/redis.h"

static struct gq_test_sim sim;
static struct gq_test_redis redis;
static struct gq_test_ctl ctl;

#define WAIT_MS 30000
#define GQ "/apis/gpuq.dev/v1alpha1"
#define H100 "NVIDIA-H100-80GB-HBM3"

#define PLUGIN(o, want, ...) GQ_TEST_PLUGIN(&sim, (o), (want), __VA_ARGS__)

static void post(const char *path, const char *body)
{
  json_decref(gq_test_sim_call(&sim, "POST", path, body, 201));
}

static void quota(const char *team, const char *lines)
{
  char body[1024];

  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"TeamQuota\","
           "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaces\":[\"%s\"],"
           "\"resources\":[%s]}}", team, team, lines);
  post(GQ "/teamquotas", body);
}

static int setup(void **state)
{
  static const char *const args[] = {"--cluster", "clusters/mixed.yaml",
                                     NULL};
  (void)state;
  if (gq_test_redis_start(&redis, NULL) != 0 ||
      gq_test_sim_start(&sim, args) != 0)
    return -1;
  post("/api/v1/namespaces", "{\"metadata\":{\"name\":\"team-a\"}}");
  post("/api/v1/namespaces", "{\"metadata\":{\"name\":\"team-b\"}}");
  quota("team-a", "{\"flavor\":\"" H100 "\",\"nominal\":8}");
  quota("team-b", "{\"flavor\":\"" H100 "\",\"nominal\":8}");
  return gq_test_ctl_start(&ctl, &sim, redis.url, 1, NULL);
}

static int teardown(void **state)
{
  int rc = 0;

  (void)state;
  rc |= gq_test_ctl_stop(&ctl) != 0;
  rc |= gq_test_sim_stop(&sim) != 0;
  gq_test_redis_stop(&redis);
  return rc ? -1 : 0;
}

/* A GpuJob of one replica with 'gpus' GPUs; gpu: members of spec.gpu. It
 * runs until deleted. */
static void job(const char *ns, const char *name, int gpus, const char *gpu)
{
  char path[256], body[1024];

  snprintf(path, sizeof(path), GQ "/namespaces/%s/gpujobs", ns);
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
           "\"spec\":{\"team\":\"%s\",\"gpusPerReplica\":%d,\"gpu\":{%s},"
           "\"expectedDurationSeconds\":3600,\"template\":{\"spec\":"
           "{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
           name, ns, ns, gpus, gpu);
  post(path, body);
}

static int wait_job(const char *ns, const char *name, const char *field,
                    const char *want)
{
  char path[256];

  snprintf(path, sizeof(path), GQ "/namespaces/%s/gpujobs/%s", ns, name);
  return gq_test_wait_field(&sim, path, field, want, WAIT_MS);
}

/* The -o json document's items[] member whose 'key' is 'value' (borrowed
 * from doc), or NULL. */
static const json_t *item(const json_t *doc, const char *key,
                          const char *value, const char *key2,
                          const char *value2)
{
  const json_t *it;
  size_t i;

  json_array_foreach(json_object_get(doc, "items"), i, it) {
    const char *v = json_string_value(json_object_get(it, key));
    const char *v2 = key2 ? json_string_value(json_object_get(it, key2)) : NULL;

    if (v && !strcmp(v, value) && (!key2 || (v2 && !strcmp(v2, value2))))
      return it;
  }
  return NULL;
}

/* r's string member 'key' equals want (a missing row or member fails). */
static void assert_member(const json_t *r, const char *key, const char *want)
{
  const char *v = json_string_value(json_object_get(r, key));

  if (!v || strcmp(v, want))
    fail_msg("want %s '%s', got '%s'", key, want, v ? v : "(none)");
}

/* Help, kubectl's flags given after the plugin name, and usage errors. */
static void test_flags(void **state)
{
  struct gq_test_out o;
  char kc[400];

  (void)state;
  PLUGIN(&o, 0, "gpuq", "--help");
  gq_test_assert_has(o.out, "queue [-n NS | -A] [--team T]");
  gq_test_assert_has(o.out, "why JOB");
  gq_test_out_free(&o);
  PLUGIN(&o, 2, "gpuq", "queue", "--bogus");
  gq_test_assert_has(o.err, "unknown flag: --bogus");
  gq_test_out_free(&o);
  PLUGIN(&o, 2, "gpuq", "nodes", "-o", "yaml");
  gq_test_assert_has(o.err, "\"yaml\"");
  gq_test_out_free(&o);
  PLUGIN(&o, 2, "gpuq", "queue", "-n");
  gq_test_assert_has(o.err, "flag needs an argument: '-n'");
  gq_test_out_free(&o);
  PLUGIN(&o, 1, "gpuq", "nodes", "--context", "prod");
  gq_test_assert_has(o.err, "context \"prod\" not found (contexts: gpuq-sim)");
  gq_test_out_free(&o);
  PLUGIN(&o, 0, "gpuq", "nodes", "--context=gpuq-sim");
  gq_test_assert_has(o.out, "gpu-h100-00");
  gq_test_out_free(&o);
  /* --kubeconfig wins over KUBECONFIG: a missing file fails... */
  PLUGIN(&o, 1, "gpuq", "nodes", "--kubeconfig", "/nonexistent/kc");
  gq_test_assert_has(o.err, "/nonexistent/kc");
  gq_test_out_free(&o);
  /* ...and the right one, as --kubeconfig=PATH, works */
  snprintf(kc, sizeof(kc), "--kubeconfig=%s", sim.kubeconfig);
  PLUGIN(&o, 0, "gpuq", "teams", kc);
  gq_test_assert_has(o.out, "team-a");
  gq_test_out_free(&o);
  PLUGIN(&o, 1, "gpuq", "why", "nosuch", "-n", "team-a");
  gq_test_assert_has(o.err, "\"nosuch\" not found");
  gq_test_out_free(&o);
}

/* Capacity per node and resource, MIG resources as their own rows, and a
 * cordoned node shown as SchedulingDisabled. */
static void test_nodes(void **state)
{
  struct gq_test_out o;
  const json_t *r;
  json_t *doc;

  (void)state;
  PLUGIN(&o, 0, "gpuq", "nodes");
  gq_test_assert_has(o.out, "NAME");
  gq_test_assert_has(o.out, "FREE");
  gq_test_assert_has(o.out, "nvidia.com/mig-3g.40gb");
  gq_test_out_free(&o);
  gq_test_kubectl(&sim, &o, NULL, "cordon", "gpu-t4-01", NULL);
  assert_int_equal(o.status, 0);
  gq_test_out_free(&o);
  PLUGIN(&o, 0, "gpuq", "nodes", "-o", "json");
  doc = gq_test_parse_json(o.out);
  r = item(doc, "name", "gpu-t4-01", NULL, NULL);
  assert_non_null(r);
  assert_member(r, "status", "Ready,SchedulingDisabled");
  assert_true(json_is_true(json_object_get(r, "cordoned")));
  r = item(doc, "name", "gpu-a100-mig-00", "resource",
           "nvidia.com/mig-1g.10gb");
  assert_non_null(r);
  assert_int_equal(json_integer_value(json_object_get(r, "capacity")), 4);
  /* the fixture node with one unhealthy GPU: capacity 8, allocatable 7 */
  r = item(doc, "name", "gpu-h100-r12-n04", "resource", "nvidia.com/gpu");
  assert_non_null(r);
  assert_int_equal(json_integer_value(json_object_get(r, "capacity")), 8);
  assert_int_equal(json_integer_value(json_object_get(r, "allocatable")), 7);
  assert_int_equal(json_integer_value(json_object_get(r, "free")), 7);
  json_decref(doc);
  gq_test_out_free(&o);
  gq_test_kubectl(&sim, &o, NULL, "uncordon", "gpu-t4-01", NULL);
  gq_test_out_free(&o);
}

/* One H100 job runs on team-a's 8 GPUs; two more wait: the queue lists
 * them in position order with the quota reason, teams shows used and
 * pending GPUs from the TeamQuota status, nodes shows the used GPUs. */
static void test_queue_and_teams(void **state)
{
  struct gq_test_out o;
  const json_t *r;
  json_t *doc;
  const char *q1, *q2;

  (void)state;
  job("team-a", "run1", 8, "\"products\":[\"" H100 "\"]");
  assert_true(wait_job("team-a", "run1", "status.phase", "Running"));
  job("team-a", "q1", 8, "\"products\":[\"" H100 "\"]");
  assert_true(wait_job("team-a", "q1", "status.queuePosition", "1"));
  job("team-a", "q2", 4, "\"products\":[\"" H100 "\"]");
  assert_true(wait_job("team-a", "q2", "status.queuePosition", "2"));
  /* the head carries the quota verdict; the job behind it just waits */
  assert_true(wait_job("team-a", "q1", "status.reason", "WaitingForQuota"));

  PLUGIN(&o, 0, "gpuq", "queue", "-n", "team-a");
  gq_test_assert_has(o.out, "POSITION");
  gq_test_assert_has(o.out, "WaitingForQuota");
  assert_null(strstr(o.out, "NAMESPACE")); /* only with -A, as kubectl */
  assert_null(strstr(o.out, "run1"));      /* running: not in the queue */
  q1 = strstr(o.out, "q1 ");
  q2 = strstr(o.out, "q2 ");
  assert_non_null(q1);
  assert_non_null(q2);
  assert_true(q1 < q2);
  gq_test_out_free(&o);

  PLUGIN(&o, 0, "gpuq", "queue", "-A", "--team", "team-a", "-o", "json");
  doc = gq_test_parse_json(o.out);
  assert_string_equal(json_string_value(json_object_get(doc, "kind")),
                      "GpuJobQueue");
  assert_int_equal(json_array_size(json_object_get(doc, "items")), 2);
  r = item(doc, "name", "q2", NULL, NULL);
  assert_int_equal(json_integer_value(json_object_get(r, "position")), 2);
  assert_int_equal(json_integer_value(json_object_get(r, "gpus")), 4);
  assert_member(r, "namespace", "team-a");
  json_decref(doc);
  gq_test_out_free(&o);
  PLUGIN(&o, 0, "gpuq", "queue", "-A", "--team", "team-b");
  gq_test_assert_has(o.err, "No resources found");
  gq_test_out_free(&o);

  assert_true(gq_test_wait_field(&sim, GQ "/teamquotas/team-a",
                                 "status.usedGPUs", "8", WAIT_MS));
  assert_true(gq_test_wait_field(&sim, GQ "/teamquotas/team-a",
                                 "status.pendingJobs", "2", WAIT_MS));
  PLUGIN(&o, 0, "gpuq", "teams");
  gq_test_assert_has(o.out, "BORROWED");
  gq_test_assert_has(o.out, H100);
  gq_test_out_free(&o);
  PLUGIN(&o, 0, "gpuq", "teams", "--team", "team-a", "-o", "json");
  doc = gq_test_parse_json(o.out);
  assert_int_equal(json_array_size(json_object_get(doc, "items")), 1);
  r = item(doc, "team", "team-a", "flavor", H100);
  assert_non_null(r);
  assert_int_equal(json_integer_value(json_object_get(r, "nominal")), 8);
  assert_int_equal(json_integer_value(json_object_get(r, "used")), 8);
  assert_int_equal(json_integer_value(json_object_get(r, "borrowed")), 0);
  assert_int_equal(json_integer_value(json_object_get(r, "pending")), 12);
  assert_int_equal(json_integer_value(json_object_get(r, "pendingJobs")), 2);
  json_decref(doc);
  gq_test_out_free(&o);
}

/* Per node, the first constraint that fails: q1 (8 H100 GPUs, team-a at
 * its quota) sees its GPUs taken on run1's node, the wrong product on the
 * A100s and the taint on the T4s; a team-b job asking for more GPU memory
 * than an H100 has sees GpuMemory there, no quota line on the A100s,
 * and the cordon first on a cordoned node. */
static void test_why(void **state)
{
  struct gq_test_out o;
  const json_t *r;
  json_t *doc;

  (void)state;
  PLUGIN(&o, 0, "gpuq", "why", "q1", "-n", "team-a");
  gq_test_assert_has(o.out, "GpuJob team-a/q1: Queued, 1 x 8 nvidia.com/gpu");
  gq_test_assert_has(o.out, "Reason:   WaitingForQuota");
  gq_test_assert_has(o.out, "Position: 1 in team team-a");
  gq_test_assert_has(o.out,
                     "GPUs          Insufficient nvidia.com/gpu (requested 8, "
                     "free 0 of 8)");
  gq_test_assert_has(o.out,
                     "gpu-a100-00                  GpuProduct    node(s) had "
                     "GPU product NVIDIA-A100-SXM4-80GB not in "
                     "spec.gpu.products");
  gq_test_assert_has(o.out, "gpu-t4-00                    Taint");
  gq_test_out_free(&o);

  gq_test_kubectl(&sim, &o, NULL, "cordon", "gpu-a100-03", NULL);
  gq_test_out_free(&o);
  job("team-b", "wide", 4, "\"minMemoryMiB\":81600");
  assert_true(wait_job("team-b", "wide", "status.phase", "Queued"));
  PLUGIN(&o, 0, "gpuq", "why", "wide", "--namespace=team-b", "-o", "json");
  doc = gq_test_parse_json(o.out);
  assert_int_equal(json_integer_value(json_object_get(doc, "fitNodes")), 0);
  r = item(doc, "node", "gpu-h100-02", NULL, NULL);
  assert_member(r, "reason", "GpuMemory");
  r = item(doc, "node", "gpu-a100-00", NULL, NULL);
  assert_member(r, "reason", "Quota");
  assert_member(r, "message", "team team-b has no quota for GPU product "
                      "NVIDIA-A100-SXM4-80GB (nvidia.com/gpu)");
  r = item(doc, "node", "gpu-a100-03", NULL, NULL);
  assert_member(r, "reason", "Unschedulable");
  r = item(doc, "node", "gpu-t4-01", NULL, NULL);
  assert_member(r, "reason", "Taint");
  json_decref(doc);
  gq_test_out_free(&o);
  gq_test_kubectl(&sim, &o, NULL, "uncordon", "gpu-a100-03", NULL);
  gq_test_out_free(&o);

  /* a team without a TeamQuota, and one that does not admit the
   * namespace: said once, and no node is held against a quota line */
  post(GQ "/namespaces/team-b/gpujobs",
       "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
       "\"metadata\":{\"name\":\"ghost\",\"namespace\":\"team-b\"},"
       "\"spec\":{\"team\":\"ghosts\",\"gpusPerReplica\":1,\"template\":"
       "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}");
  post(GQ "/namespaces/team-b/gpujobs",
       "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
       "\"metadata\":{\"name\":\"stray\",\"namespace\":\"team-b\"},"
       "\"spec\":{\"team\":\"team-a\",\"gpusPerReplica\":1,\"template\":"
       "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}");
  PLUGIN(&o, 0, "gpuq", "why", "ghost", "-n", "team-b");
  gq_test_assert_has(o.out, "Quota:    no TeamQuota ghosts: the job waits with "
                            "UnknownTeam");
  gq_test_out_free(&o);
  PLUGIN(&o, 0, "gpuq", "why", "stray", "-n", "team-b");
  gq_test_assert_has(o.out,
                     "Quota:    TeamQuota team-a does not list namespace "
                     "team-b");
  gq_test_out_free(&o);
}

/* A pod in team-b (not gpuq's unless labels say so) on node (NULL: not
 * bound), requesting 'res': resource requests JSON members; extra: more
 * metadata and spec members (may be ""). */
static void pod(const char *name, const char *node, const char *res,
                const char *meta, const char *spec)
{
  char body[2048], bind[128] = "";

  if (node)
    snprintf(bind, sizeof(bind), "\"nodeName\":\"%s\",", node);
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
           "\"%s\",\"namespace\":\"team-b\"%s},\"spec\":{%s%s"
           "\"tolerations\":[{\"operator\":\"Exists\"}],\"containers\":[{"
           "\"name\":\"c\",\"image\":\"x\",\"resources\":{\"requests\":{%s},"
           "\"limits\":{%s}}}]}}", name, meta, bind, spec, res, res);
  post("/api/v1/namespaces/team-b/pods", body);
}

/* The controller's free GPUs per node and resource, from its
 * gpuq_node_free_gpus gauge: a JSON object "node resource" -> value. */
static json_t *controller_free(void)
{
  char url[128], *resp = NULL, *line, *save = NULL;
  json_t *m = json_object();

  snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", ctl.metrics_port);
  if (gq_test_http("GET", url, NULL, NULL, NULL, &resp) != 200)
    fail_msg("GET %s failed", url);
  for (line = strtok_r(resp, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save)) {
    char node[256], res[256];
    long long v;

    if (sscanf(line, "gpuq_node_free_gpus{node=\"%255[^\"]\",resource=\""
               "%255[^\"]\"} %lld", node, res, &v) == 3) {
      char key[520];

      snprintf(key, sizeof(key), "%s %s", node, res);
      json_object_set_new(m, key, json_integer(v));
    }
  }
  free(resp);
  return m;
}

/* 1 when `kubectl gpuq nodes` and the controller give every (node, GPU
 * resource) the same free amount; *doc gets the plugin's -o json. */
static int free_agree(json_t **doc, char *diff, size_t len)
{
  struct gq_test_out o;
  json_t *m = controller_free();
  const json_t *r;
  size_t i, n = 0;
  int same = 1;

  PLUGIN(&o, 0, "gpuq", "nodes", "-o", "json");
  *doc = gq_test_parse_json(o.out);
  gq_test_out_free(&o);
  json_array_foreach(json_object_get(*doc, "items"), i, r) {
    const char *res = json_string_value(json_object_get(r, "resource"));
    char key[520];
    const json_t *v;

    if (strncmp(res, "nvidia.com/", 11))
      continue;
    snprintf(key, sizeof(key), "%s %s",
             json_string_value(json_object_get(r, "name")), res);
    v = json_object_get(m, key);
    n++;
    if (!v || json_integer_value(v) !=
                  json_integer_value(json_object_get(r, "free"))) {
      size_t off = strlen(diff);

      snprintf(diff + off, len - off, "%s: plugin %lld, controller %s%lld; ",
               key, (long long)json_integer_value(json_object_get(r, "free")),
               v ? "" : "none ", (long long)json_integer_value(v));
      same = 0;
    }
  }
  if (n != json_object_size(m)) {
    size_t off = strlen(diff);

    snprintf(diff + off, len - off, "plugin %zu rows, controller %zu",
             n, json_object_size(m));
  }
  same &= n > 0 && n == json_object_size(m);
  json_decref(m);
  return same;
}

/* The plugin and the controller count the same pods on every node: bound
 * ones, a MIG slice, a terminating pod (still checkpointing within its
 * grace), and a gpuq pod pinned to a node (annotation gpuq.dev/node) that the
 * scheduler has not bound (the plugin once skipped such pods and showed
 * their GPUs as free). The pinned pod carries only the job-uid label, so
 * the controller holds its node without adopting it as a job's. */
static void test_free_agrees(void **state)
{
  /* it takes its time to checkpoint after SIGTERM, within its grace */
  static const char slow[] = ",\"annotations\":{\"sim.gpuq.dev/"
                             "checkpoint-seconds\":\"100000\"}";
  json_t *doc = NULL;
  const json_t *r;
  int64_t deadline = 0;
  struct gq_test_out o;

  (void)state;
  pod("bound", "gpu-a100-01", "\"nvidia.com/gpu\":\"2\"", "", "");
  pod("mig", "gpu-a100-mig-00", "\"nvidia.com/mig-1g.10gb\":\"1\"", "", "");
  pod("leaving", "gpu-a100-03", "\"nvidia.com/gpu\":\"2\"", slow,
      "\"terminationGracePeriodSeconds\":1000000,");
  pod("pinned", NULL, "\"nvidia.com/gpu\":\"4\"",
      ",\"labels\":{\"gpuq.dev/job-uid\":"
      "\"00000000-0000-4000-8000-0000000000aa\"},\"annotations\":{"
      "\"gpuq.dev/node\":\"gpu-a100-02\"}",
      "\"nodeSelector\":{\"gpuq.dev/test-never\":\"true\"},");
  /* running first: a pod deleted before it started goes at once */
  assert_true(gq_test_wait_field(&sim, "/api/v1/namespaces/team-b/pods/"
                                 "leaving", "status.phase", "Running",
                                 WAIT_MS));
  gq_test_kubectl(&sim, &o, NULL, "delete", "pod", "leaving", "-n", "team-b",
                  "--wait=false", NULL);
  assert_int_equal(o.status, 0);
  gq_test_out_free(&o);
  for (;;) {
    char diff[4096] = "";
    int same = free_agree(&doc, diff, sizeof(diff));
    const json_t *a2 = item(doc, "name", "gpu-a100-02", "resource",
                            "nvidia.com/gpu");

    if (same && a2 && json_integer_value(json_object_get(a2, "free")) == 4)
      break;
    if (++deadline > WAIT_MS / 100)
      fail_msg("the plugin and gpuq_node_free_gpus disagree: %s (a100-02 "
               "free %lld)", diff,
               a2 ? (long long)json_integer_value(json_object_get(a2, "free"))
                  : -1LL);
    json_decref(doc);
    gq_test_sleep_ms(100);
  }
  r = item(doc, "name", "gpu-a100-01", "resource", "nvidia.com/gpu");
  assert_int_equal(json_integer_value(json_object_get(r, "free")), 6);
  r = item(doc, "name", "gpu-a100-03", "resource", "nvidia.com/gpu");
  assert_int_equal(json_integer_value(json_object_get(r, "free")), 6);
  r = item(doc, "name", "gpu-a100-mig-00", "resource",
           "nvidia.com/mig-1g.10gb");
  assert_int_equal(json_integer_value(json_object_get(r, "free")), 3);
  json_decref(doc);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flags),
      cmocka_unit_test(test_nodes),
      cmocka_unit_test(test_queue_and_teams),
      cmocka_unit_test(test_why),
      cmocka_unit_test(test_free_agrees),
  };

  return cmocka_run_group_tests(tests, setup, teardown);
}
