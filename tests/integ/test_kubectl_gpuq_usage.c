/* `kubectl gpuq usage` and `kubectl gpuq top` (issue 22) through the real
 * kubectl plugin mechanism against gpuq-sim, with no controller: the test
 * creates GpuJobs and writes their status (GPU-seconds, flavor, start and
 * completion times, utilization, the Idle condition) through the status
 * subresource with known numbers, then checks the table and -o json sums
 * per team, namespace and job, --since, prices from ConfigMap
 * gpuq-system/gpuq-prices and from --price, the errors that name a flag
 * and its value, the running jobs `top` shows, and `queue`'s ages on the
 * sim's clock.
 *
 * The sim runs at 100x with its epoch 3000 s in the past, so its timestamps
 * are about 3.4 days ahead of the real clock: a --since window measured on
 * the real clock would count the job that completed 3 virtual days ago.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/clock.h"
#include "tests/support/proc.h"

static struct gq_test_sim sim;

#define GQ "/apis/gpuq.dev/v1alpha1"
#define H100 "NVIDIA-H100-80GB-HBM3"
#define A100 "NVIDIA-A100-SXM4-80GB"
#define HOUR_MS 3600000LL
#define DAY_MS (24 * HOUR_MS)
#define PRICES "/api/v1/namespaces/gpuq-system/configmaps"

#define PLUGIN(o, want, ...) GQ_TEST_PLUGIN(&sim, (o), (want), __VA_ARGS__)

static void post(const char *path, const char *body)
{
  json_decref(gq_test_sim_call(&sim, "POST", path, body, 201));
}

static void merge_patch(const char *path, json_t *body)
{
  char url[512], *text = json_dumps(body, JSON_COMPACT), *resp = NULL;
  int code;

  snprintf(url, sizeof(url), "%s%s", sim.url, path);
  code = gq_test_http("PATCH", url, text, "application/merge-patch+json",
                      NULL, &resp);
  if (code != 200)
    fail_msg("PATCH %s: %d %s", path, code, resp);
  free(resp);
  free(text);
  json_decref(body);
}

static void stamp(int64_t ms, char *buf, size_t len)
{
  gq_time_format(ms, buf, len);
}

/* Creates GpuJob ns/name of team; its status then gets phase, flavor (may
 * be NULL), the three counters, startTime queue_s after its creation
 * (queue_s < 0: none), completionTime done_ms (0: none) and extra status
 * members (may be NULL; taken). */
static void job(const char *ns, const char *name, const char *team,
                const char *phase, const char *flavor, long long alloc,
                long long used, long long idle, int queue_s, int64_t done_ms,
                json_t *extra)
{
  char path[300], body[1024], ts[32];
  json_t *created, *st;
  int64_t c = 0;

  snprintf(path, sizeof(path), GQ "/namespaces/%s/gpujobs", ns);
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
           "\"spec\":{\"team\":\"%s\",\"gpusPerReplica\":4,\"template\":"
           "{\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
           name, ns, team);
  created = gq_test_sim_call(&sim, "POST", path, body, 201);
  assert_int_equal(gq_time_parse(json_string_value(json_object_get(
                       json_object_get(created, "metadata"),
                       "creationTimestamp")), &c), 0);
  json_decref(created);
  st = json_pack("{s:s,s:i}", "phase", phase, "gpus", 4);
  if (flavor)
    json_object_set_new(st, "flavor", json_string(flavor));
  if (alloc) {
    json_object_set_new(st, "allocatedGPUSeconds", json_integer(alloc));
    json_object_set_new(st, "usedGPUSeconds", json_integer(used));
    json_object_set_new(st, "idleGPUSeconds", json_integer(idle));
  }
  if (queue_s >= 0) {
    stamp(c + queue_s * 1000LL, ts, sizeof(ts));
    json_object_set_new(st, "startTime", json_string(ts));
  }
  if (done_ms) {
    stamp(done_ms, ts, sizeof(ts));
    json_object_set_new(st, "completionTime", json_string(ts));
  }
  if (extra)
    json_object_update(st, extra);
  json_decref(extra);
  snprintf(path, sizeof(path), GQ "/namespaces/%s/gpujobs/%s/status", ns,
           name);
  merge_patch(path, json_pack("{s:o}", "status", st));
}

static int setup(void **state)
{
  char epoch[32];
  const char *args[] = {"--cluster", "clusters/mixed.yaml", "--time-scale",
                        "100", "--time-epoch", epoch, NULL};
  int64_t now;
  char ts[32];

  (void)state;
  snprintf(epoch, sizeof(epoch), "%lld", (long long)time(NULL) - 3000);
  if (gq_test_sim_start(&sim, args) != 0)
    return -1;
  post("/api/v1/namespaces", "{\"metadata\":{\"name\":\"team-a\"}}");
  post("/api/v1/namespaces", "{\"metadata\":{\"name\":\"team-b\"}}");
  now = gq_test_sim_now_ms(&sim);
  /* team-a: a1 and a2 done (a2 three virtual days ago), a3 running in
   * team-b's namespace; team-b: b1 running idle, q1 waiting */
  job("team-a", "a1", "team-a", "Succeeded", H100, 28800, 21600, 3600, 60,
      now - HOUR_MS, NULL);
  job("team-a", "a2", "team-a", "Succeeded", H100, 7200, 3600, 0, 600,
      now - 3 * DAY_MS, NULL);
  job("team-b", "a3", "team-a", "Running", A100, 3600, 1800, 1800, 120, 0,
      json_pack("{s:[s]}", "nodes", "gpu-a100-00"));
  stamp(now - HOUR_MS, ts, sizeof(ts));
  job("team-b", "b1", "team-b", "Running", H100, 14400, 1440, 10800, 30, 0,
      json_pack("{s:i,s:s,s:[s,s],s:[{s:s,s:s,s:s,s:s,s:s}]}",
                "gpuUtilization", 2, "utilizationTime", ts,
                "nodes", "gpu-h100-00", "gpu-h100-01",
                "conditions", "type", "Idle", "status", "True", "reason",
                "GpuIdle", "message", "under 10% for 30m",
                "lastTransitionTime", ts));
  job("team-b", "q1", "team-b", "Queued", NULL, 0, 0, 0, -1, 0, NULL);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  return gq_test_sim_stop(&sim) != 0 ? -1 : 0;
}

/* Runs `kubectl gpuq usage -o json <args>` and returns the document. */
static json_t *usage_json(const char *a1, const char *a2, const char *a3,
                          const char *a4)
{
  struct gq_test_out o;
  json_t *doc;

  /* the first NULL ends kubectl's argument list */
  PLUGIN(&o, 0, "gpuq", "usage", "-o", "json", a1, a2, a3, a4);
  doc = gq_test_parse_json(o.out);
  assert_string_equal(json_string_value(json_object_get(doc, "kind")),
                      "Usage");
  gq_test_out_free(&o);
  return doc;
}

/* The item whose member key is value. */
static const json_t *item(const json_t *doc, const char *key,
                          const char *value)
{
  const json_t *it;
  size_t i;

  json_array_foreach(json_object_get(doc, "items"), i, it) {
    const char *v = json_string_value(json_object_get(it, key));

    if (v && !strcmp(v, value))
      return it;
  }
  fail_msg("no item with %s '%s'", key, value);
  return NULL;
}

static void want_num(const json_t *it, const char *key, double want)
{
  const json_t *v = json_object_get(it, key);

  if (!json_is_number(v) || json_number_value(v) != want)
    fail_msg("%s: want %g, got %s", key, want,
             v ? json_dumps(v, JSON_ENCODE_ANY) : "(none)");
}

static void want_null(const json_t *it, const char *key)
{
  if (!json_is_null(json_object_get(it, key)))
    fail_msg("%s: want null", key);
}

/* Per team, no prices yet: sums, efficiency, queue percentiles, no cost. */
static void test_by_team(void **state)
{
  struct gq_test_out o;
  const json_t *a, *b;
  json_t *doc;

  (void)state;
  doc = usage_json(NULL, NULL, NULL, NULL);
  assert_int_equal(json_array_size(json_object_get(doc, "items")), 2);
  a = item(doc, "team", "team-a");
  want_num(a, "jobs", 3);
  want_num(a, "allocated_gpu_hours", 11.0);
  want_num(a, "used_gpu_hours", 7.5);
  want_num(a, "idle_gpu_hours", 1.5);
  want_num(a, "allocated_gpu_seconds", 39600);
  want_num(a, "efficiency_pct", 68.2);
  want_num(a, "queue_p50_s", 120); /* of 60, 120, 600 */
  want_num(a, "queue_p95_s", 600);
  want_null(a, "cost");
  b = item(doc, "team", "team-b");
  want_num(b, "jobs", 2);
  want_num(b, "allocated_gpu_hours", 4.0);
  want_num(b, "used_gpu_hours", 0.4);
  want_num(b, "idle_gpu_hours", 3.0);
  want_num(b, "efficiency_pct", 10.0);
  want_num(b, "queue_p50_s", 30); /* q1 has not started */
  want_num(b, "queue_p95_s", 30);
  json_decref(doc);

  PLUGIN(&o, 0, "gpuq", "usage");
  gq_test_assert_has(o.out,
                     "TEAM     JOBS   ALLOCATED(GPU-h)   USED(GPU-h)   "
                     "IDLE(GPU-h)   EFFICIENCY   QUEUE-P50   QUEUE-P95   "
                     "COST(USD)\n");
  gq_test_assert_has(o.out,
                     "team-a   3      11.0               7.5           1.5"
                     "           68%          2m          10m         -\n");
  gq_test_assert_has(o.out,
                     "team-b   2      4.0                0.4           3.0"
                     "           10%          30s         30s         -\n");
  assert_string_equal(o.err, "");
  gq_test_out_free(&o);
}

static void test_by_namespace_and_job(void **state)
{
  struct gq_test_out o;
  const json_t *it;
  json_t *doc;

  (void)state;
  doc = usage_json("--by", "namespace", NULL, NULL);
  assert_int_equal(json_array_size(json_object_get(doc, "items")), 2);
  it = item(doc, "namespace", "team-a");
  want_num(it, "jobs", 2);
  want_num(it, "allocated_gpu_hours", 10.0);
  it = item(doc, "namespace", "team-b");
  want_num(it, "jobs", 3);
  want_num(it, "allocated_gpu_hours", 5.0);
  want_num(it, "queue_p95_s", 120);
  assert_null(json_object_get(it, "team"));
  json_decref(doc);

  doc = usage_json("--by=job", NULL, NULL, NULL);
  assert_int_equal(json_array_size(json_object_get(doc, "items")), 5);
  it = item(doc, "job", "a3");
  assert_string_equal(json_string_value(json_object_get(it, "namespace")),
                      "team-b");
  assert_string_equal(json_string_value(json_object_get(it, "team")),
                      "team-a");
  assert_string_equal(json_string_value(json_object_get(it, "flavor")), A100);
  want_num(it, "jobs", 1);
  want_num(it, "queue_p50_s", 120);
  want_num(it, "efficiency_pct", 50.0);
  it = item(doc, "job", "q1");
  want_null(it, "queue_p50_s");
  want_null(it, "efficiency_pct");
  want_num(it, "allocated_gpu_hours", 0);
  json_decref(doc);

  PLUGIN(&o, 0, "gpuq", "usage", "--by", "job");
  gq_test_assert_has(o.out,
                     "NAMESPACE   JOB   TEAM     FLAVOR                  "
                     "ALLOCATED(GPU-h)");
  gq_test_assert_has(o.out, "team-b      a3    team-a   " A100 "   1.0");
  gq_test_assert_has(o.out,
                     "team-b      q1    team-b   -                       0.0");
  assert_null(strstr(o.out, "JOBS"));
  gq_test_out_free(&o);
}

/* --since counts jobs completed in the window (on the sim's clock) and
 * jobs not completed, each with all its GPU-seconds. */
static void test_since(void **state)
{
  const json_t *a;
  json_t *doc;

  (void)state;
  doc = usage_json("--since", "2d", NULL, NULL);
  a = item(doc, "team", "team-a");
  want_num(a, "jobs", 2); /* a2 completed 3 days ago */
  want_num(a, "allocated_gpu_hours", 9.0);
  want_num(a, "queue_p50_s", 60);
  want_num(a, "queue_p95_s", 120);
  want_num(item(doc, "team", "team-b"), "jobs", 2);
  json_decref(doc);
  doc = usage_json("--since=7d", NULL, NULL, NULL);
  want_num(item(doc, "team", "team-a"), "jobs", 3);
  json_decref(doc);
  /* 30 minutes: a1 (an hour ago) drops out too; the running a3 stays */
  doc = usage_json("--since", "30m", "--by", "job");
  assert_int_equal(json_array_size(json_object_get(doc, "items")), 3);
  json_decref(doc);
}

/* Prices from the ConfigMap, the flags overriding them, a warning for a
 * product without a price, and a bad ConfigMap value named with a way
 * around it. */
static void test_prices(void **state)
{
  struct gq_test_out o;
  json_t *doc;

  (void)state;
  post("/api/v1/namespaces", "{\"metadata\":{\"name\":\"gpuq-system\"}}");
  post(PRICES, "{\"metadata\":{\"name\":\"gpuq-prices\"},\"data\":{\""
               H100 "\":\"2.50\"}}");
  PLUGIN(&o, 0, "gpuq", "usage", "-o", "json");
  gq_test_assert_has(o.err,
                     "warning: 1.0 allocated GPU-hours have no price and are "
                     "not in COST (GPU product " A100 "); set it in ConfigMap "
                     "gpuq-system/gpuq-prices or with --price " A100 "=USD");
  doc = gq_test_parse_json(o.out);
  want_num(item(doc, "team", "team-a"), "cost", 25.0); /* 10 H100-h */
  want_num(item(doc, "team", "team-b"), "cost", 10.0);
  json_decref(doc);
  gq_test_out_free(&o);

  PLUGIN(&o, 0, "gpuq", "usage", "--price", A100 "=1.2", "-o", "json");
  assert_string_equal(o.err, "");
  doc = gq_test_parse_json(o.out);
  want_num(item(doc, "team", "team-a"), "cost", 26.2);
  json_decref(doc);
  gq_test_out_free(&o);

  doc = usage_json("--price", A100 "=1.2", "--price=" H100 "=3", NULL);
  want_num(item(doc, "team", "team-a"), "cost", 31.2);
  want_num(item(doc, "team", "team-b"), "cost", 12.0);
  json_decref(doc);

  PLUGIN(&o, 0, "gpuq", "usage", "--by", "job", "--price", A100 "=1.2");
  gq_test_assert_has(o.out, "team-b      a3    team-a   " A100 "   1.0");
  gq_test_assert_has(o.out, "1.20\n");
  gq_test_assert_has(o.out, "team-b      b1    team-b   " H100 "   4.0");
  gq_test_assert_has(o.out, "10.00\n");
  gq_test_out_free(&o);

  merge_patch(PRICES "/gpuq-prices",
              json_pack("{s:{s:s}}", "data", A100, "cheap"));
  PLUGIN(&o, 1, "gpuq", "usage");
  gq_test_assert_has(o.err,
                     "error: ConfigMap gpuq-system/gpuq-prices: data[\"" A100
                     "\"]: must be USD per GPU-hour (a number >= 0), got "
                     "\"cheap\" (override it with --price " A100 "=USD)");
  gq_test_out_free(&o);
  doc = usage_json("--price", A100 "=1", NULL, NULL);
  want_num(item(doc, "team", "team-a"), "cost", 26.0);
  json_decref(doc);
}

static void test_errors(void **state)
{
  struct gq_test_out o;

  (void)state;
  PLUGIN(&o, 2, "gpuq", "usage", "--by", "x");
  gq_test_assert_has(o.err,
                     "error: --by: must be team, namespace or job, got \"x\"");
  gq_test_out_free(&o);
  PLUGIN(&o, 2, "gpuq", "usage", "--since=3w");
  gq_test_assert_has(o.err,
                     "error: --since: must be a duration such as 7d, 36h or "
                     "1h30m (units d, h, m, s, ms), got \"3w\"");
  gq_test_out_free(&o);
  PLUGIN(&o, 2, "gpuq", "usage", "--price", "H100");
  gq_test_assert_has(o.err,
                     "error: --price: must be PRODUCT=USD (USD per GPU-hour "
                     "of a GPU product, a number >= 0), got \"H100\"");
  gq_test_out_free(&o);
  PLUGIN(&o, 2, "gpuq", "usage", "--price", H100 "=-1");
  gq_test_assert_has(o.err, "got \"" H100 "=-1\"");
  gq_test_out_free(&o);
  PLUGIN(&o, 2, "gpuq", "usage", "--since");
  gq_test_assert_has(o.err, "flag needs an argument: '--since'");
  gq_test_out_free(&o);
  PLUGIN(&o, 2, "gpuq", "top", "--by", "team");
  gq_test_assert_has(o.err, "unknown flag: --by for 'gpuq top'");
  gq_test_out_free(&o);
  PLUGIN(&o, 0, "gpuq", "--help");
  gq_test_assert_has(o.out, "usage [--since D] [--by team|namespace|job]");
  gq_test_assert_has(o.out, "top [-n NS | -A]");
  gq_test_out_free(&o);
}

/* Running jobs only: utilization or <unknown>, the Idle condition with
 * how long it has held (on the sim's clock), nodes. */
static void test_top(void **state)
{
  struct gq_test_out o;
  const json_t *it;
  json_t *doc;

  (void)state;
  PLUGIN(&o, 0, "gpuq", "top", "-A");
  gq_test_assert_has(o.out,
                     "NAMESPACE   NAME   TEAM     GPUS   UTIL        IDLE");
  gq_test_assert_has(o.out, "team-b      a3     team-a   4      <unknown>   -");
  gq_test_assert_has(o.out,
                     "team-b      b1     team-b   4      2%          True (");
  gq_test_assert_has(o.out, "gpu-h100-00,gpu-h100-01");
  assert_null(strstr(o.out, "q1"));
  assert_null(strstr(o.out, " a1 ")); /* done */
  gq_test_out_free(&o);
  PLUGIN(&o, 0, "gpuq", "top", "-n", "team-a");
  gq_test_assert_has(o.err, "No resources found");
  gq_test_out_free(&o);
  PLUGIN(&o, 0, "gpuq", "top", "-n", "team-b", "--team", "team-b", "-o",
         "json");
  doc = gq_test_parse_json(o.out);
  assert_string_equal(json_string_value(json_object_get(doc, "kind")),
                      "GpuJobTop");
  assert_int_equal(json_array_size(json_object_get(doc, "items")), 1);
  it = item(doc, "name", "b1");
  want_num(it, "gpuUtilization", 2);
  assert_string_equal(json_string_value(json_object_get(it, "idleStatus")),
                      "True");
  assert_string_equal(json_string_value(json_object_get(it, "idleReason")),
                      "GpuIdle");
  /* an hour and more on the sim's clock, not "<invalid>" from the real
   * clock that runs days behind it */
  gq_test_assert_has(json_string_value(json_object_get(it, "idle")), "True (");
  assert_null(strstr(json_string_value(json_object_get(it, "idle")),
                     "invalid"));
  assert_null(strstr(json_string_value(json_object_get(it, "age")),
                     "invalid"));
  assert_int_equal(json_array_size(json_object_get(it, "nodes")), 2);
  json_decref(doc);
  gq_test_out_free(&o);
}

/* `queue` ages on the sim's clock too: q1 was created seconds ago in
 * virtual time, days ahead of the real clock ("<invalid>" on that). */
static void test_queue_age(void **state)
{
  struct gq_test_out o;
  json_t *doc;
  const char *age;

  (void)state;
  PLUGIN(&o, 0, "gpuq", "queue", "-n", "team-b", "-o", "json");
  doc = gq_test_parse_json(o.out);
  age = json_string_value(json_object_get(item(doc, "name", "q1"), "age"));
  if (!age || strstr(age, "invalid") || strchr(age, 'd'))
    fail_msg("q1's age: %s", age ? age : "(none)");
  json_decref(doc);
  gq_test_out_free(&o);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_by_team),
      cmocka_unit_test(test_by_namespace_and_job),
      cmocka_unit_test(test_since),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_top),
      cmocka_unit_test(test_queue_age),
      cmocka_unit_test(test_prices), /* last: it creates the ConfigMap */
  };

  return cmocka_run_group_tests(tests, setup, teardown);
}
