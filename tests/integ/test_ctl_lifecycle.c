/* gpuq-controller end to end, the lifecycle: against gpuq-sim and a
 * private redis-server, each test on a fresh cluster, Redis and
 * controller:
 *   - a pinned pod left Unschedulable is a placement miss: re-placed on
 *     another node, not counted as a failure;
 *   - a replica failing on its own is retried up to spec.backoffLimit, then
 *     the job is Failed (BackoffLimitExceeded);
 *   - a running job past spec.activeDeadlineSeconds is Failed
 *     (DeadlineExceeded), not retried, and its GPUs are freed;
 *   - a terminating pod holds its GPUs until it is gone;
 *   - invalid specs, forbidden namespaces and unknown teams;
 *   - a running job's spec edited: the attempt keeps its admitted shape,
 *     the next one takes the new spec;
 *   - a controller SIGKILLed right after admitting, or while the pods of
 *     an admitted gang are being created, then restarted;
 *   - Redis flushed, and Redis restarted, mid-run;
 *   - the periodic ledger audit: no drift while a job runs, a changed
 *     ledger found and rebuilt;
 *   - two controllers with leader election: one acts, the other takes over.
 * Every wait is for a condition, with a deadline; every test ends with the
 * sim's report (invariant violations, placement misses) and a clean
 * SIGTERM exit of the controller.
 *
 * Debugging: GQ_TEST_FILTER=<glob> runs only the matching tests,
 * GQ_TEST_LOGS=1 prints the events and logs even when a test passes (they
 * are printed when it fails), GQ_TEST_SIMDEBUG=1 runs the sim at debug log
 * level (every request).
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

#include "base/clock.h"
#include "tests/support/fixture.h"
#include "tests/support/proc.h"
#include "tests/support/redis.h"

#define WAIT_MS 30000
#define GJ "/apis/gpuq.dev/v1alpha1"
#define TQ GJ "/teamquotas"

static const char *const clock_args[] = {"--time-scale", "10", "--time-epoch",
                                         "1800000000", NULL};

/* One test's world: its cluster file, sim, Redis and controller(s). */
static struct {
  char dir[256];     /* holds the cluster file */
  struct gq_test_sim sim;
  struct gq_test_redis redis;
  struct gq_test_ctl ctl, ctl2;
  int up, passed;
} env;

/* ---- the world ----------------------------------------------------------- */

/* Writes a cluster file with one group per "prefix:gpus" entry (one node
 * each, H100s), starts Redis and the sim on it, and creates namespace
 * team-a. */
static void env_up(const char *const *nodes)
{
  const char *tmp = getenv("TMPDIR");
  char path[320];
  const char *sim_args[9];
  int n = 0;
  FILE *f;

  memset(&env, 0, sizeof(env));
  snprintf(env.dir, sizeof(env.dir), "%s/gpuq-lifecycle-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  assert_non_null(mkdtemp(env.dir));
  snprintf(path, sizeof(path), "%s/cluster.yaml", env.dir);
  f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "groups:\n");
  for (; *nodes; nodes++) {
    const char *colon = strchr(*nodes, ':');

    fprintf(f, "- count: 1\n  prefix: %.*s\n"
            "  gpu: {product: NVIDIA-H100-80GB-HBM3, memoryMiB: 81559, "
            "count: %s}\n  cpu: \"128\"\n  memory: 2000Gi\n  pods: 110\n",
            (int)(colon - *nodes), *nodes, colon + 1);
  }
  fclose(f);
  sim_args[n++] = "--cluster";
  sim_args[n++] = path;
  for (int i = 0; clock_args[i]; i++)
    sim_args[n++] = clock_args[i];
  if (getenv("GQ_TEST_SIMDEBUG")) {
    sim_args[n++] = "--log-level";
    sim_args[n++] = "debug";
  }
  sim_args[n] = NULL;
  env.up = 1;
  assert_int_equal(gq_test_redis_start(&env.redis, NULL), 0);
  assert_int_equal(gq_test_sim_start(&env.sim, sim_args), 0);
  json_decref(gq_test_sim_call(&env.sim, "POST", "/api/v1/namespaces",
      "{\"metadata\":{\"name\":\"team-a\"}}", 201));
}

static void ctl_up(struct gq_test_ctl *c, const char *const *extra)
{
  const char *args[16];
  int n = 0;

  for (int i = 0; clock_args[i]; i++)
    args[n++] = clock_args[i];
  for (; extra && *extra && n < 15; extra++)
    args[n++] = *extra;
  args[n] = NULL;
  assert_int_equal(gq_test_ctl_start(c, &env.sim, env.redis.url, 0, args), 0);
}

static void dump(const char *what, const char *path)
{
  char *text = gq_test_read_file(path, NULL);

  fprintf(stderr, "---- %s (%s) ----\n%s\n", what, path, text ? text : "");
  free(text);
}

/* Prints the events of namespace team-a (the story of every job). */
static void dump_events(void)
{
  char url[512], *resp = NULL;
  json_t *l, *e;
  size_t i;

  snprintf(url, sizeof(url), "%s/api/v1/namespaces/team-a/events",
           env.sim.url);
  if (gq_test_http("GET", url, NULL, NULL, NULL, &resp) != 200) {
    free(resp);
    return;
  }
  l = json_loads(resp, 0, NULL);
  free(resp);
  fprintf(stderr, "---- events ----\n");
  json_array_foreach(json_object_get(l, "items"), i, e) {
    fprintf(stderr, "%s %s %s: %s\n",
            json_string_value(json_object_get(e, "firstTimestamp")) ?: "",
            json_string_value(json_object_get(json_object_get(e,
                "involvedObject"), "name")) ?: "",
            json_string_value(json_object_get(e, "reason")) ?: "",
            json_string_value(json_object_get(e, "message")) ?: "");
  }
  json_decref(l);
}

/* Teardown: stops what is left; after a failed test, prints the logs. */
static int env_down(void **state)
{
  char l1[400], l2[400], sl[320];

  (void)state;
  if (!env.up)
    return 0;
  snprintf(l1, sizeof(l1), "%s", env.ctl.log);
  snprintf(l2, sizeof(l2), "%s", env.ctl2.log);
  snprintf(sl, sizeof(sl), "%s", env.sim.log);
  if (!env.passed || getenv("GQ_TEST_LOGS")) {
    dump_events();
    if (*l1)
      dump("controller log", l1);
    if (*l2)
      dump("second controller log", l2);
    if (*sl)
      dump("sim log", sl);
  }
  gq_test_ctl_stop(&env.ctl);
  gq_test_ctl_stop(&env.ctl2);
  gq_test_sim_stop(&env.sim);
  gq_test_redis_stop(&env.redis);
  gq_test_rmtree(env.dir);
  env.up = 0;
  return 0;
}

/* ---- objects ------------------------------------------------------------- */

static void create_ns(const char *ns)
{
  char body[256];

  snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\"}}", ns);
  json_decref(gq_test_sim_call(&env.sim, "POST", "/api/v1/namespaces", body,
                               201));
}

static void create_quota(const char *team, const char *ns, int nominal)
{
  char body[512];

  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"TeamQuota\","
           "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaces\":[\"%s\"],"
           "\"resources\":[{\"flavor\":\"*\",\"nominal\":%d}]}}",
           team, ns, nominal);
  json_decref(gq_test_sim_call(&env.sim, "POST", TQ, body, 201));
}

struct jobopt {
  const char *ns, *team;  /* "team-a" when NULL */
  int replicas;           /* 0 = 1 */
  int gpus;               /* per replica */
  int run_s;              /* virtual seconds; 0 = until deleted */
  int fail_s;             /* > 0: fails on its own after that long */
  int backoff;            /* spec.backoffLimit, -1 = absent */
  int priority;
  int ckpt_s;             /* > 0: checkpoint-seconds annotation */
  int fixed;              /* spec.preemptible false */
  const char *template_res; /* extra container resources JSON, or NULL */
  int deadline_s;         /* > 0: spec.activeDeadlineSeconds */
};

static void create_job(const char *name, const struct jobopt *o)
{
  const char *ns = o->ns ? o->ns : "team-a";
  json_t *ann = json_object(), *c, *job, *spec;
  char path[256], *body;

  if (o->run_s > 0)
    json_object_set_new(ann, "sim.gpuq.dev/run-seconds",
                        json_sprintf("%d", o->run_s));
  if (o->fail_s > 0)
    json_object_set_new(ann, "sim.gpuq.dev/fail-after-seconds",
                        json_sprintf("%d", o->fail_s));
  if (o->ckpt_s > 0)
    json_object_set_new(ann, "sim.gpuq.dev/checkpoint-seconds",
                        json_sprintf("%d", o->ckpt_s));
  c = json_pack("{s:s,s:s}", "name", "c", "image", "x");
  if (o->template_res)
    json_object_set_new(c, "resources", json_loads(o->template_res, 0, NULL));
  spec = json_pack("{s:s,s:i,s:i,s:i,s:i,s:{s:{s:o},s:{s:[o]}}}", "team",
                   o->team ? o->team : "team-a", "replicas",
                   o->replicas ? o->replicas : 1, "gpusPerReplica", o->gpus,
                   "priority", o->priority, "expectedDurationSeconds",
                   o->run_s > 0 ? o->run_s : 3600, "template", "metadata",
                   "annotations", ann, "spec", "containers", c);
  if (o->backoff >= 0)
    json_object_set_new(spec, "backoffLimit", json_integer(o->backoff));
  if (o->fixed)
    json_object_set_new(spec, "preemptible", json_false());
  if (o->deadline_s > 0)
    json_object_set_new(spec, "activeDeadlineSeconds",
                        json_integer(o->deadline_s));
  job = json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion",
                  "gpuq.dev/v1alpha1", "kind", "GpuJob", "metadata", "name",
                  name, "namespace", ns, "spec", spec);
  body = json_dumps(job, JSON_COMPACT);
  snprintf(path, sizeof(path), GJ "/namespaces/%s/gpujobs", ns);
  json_decref(gq_test_sim_call(&env.sim, "POST", path, body, 201));
  free(body);
  json_decref(job);
}

static const struct jobopt JOB = {.backoff = -1};

static void job_path(const char *ns, const char *name, char *buf, size_t len)
{
  snprintf(buf, len, GJ "/namespaces/%s/gpujobs/%s", ns, name);
}

static int wait_phase_ns(const char *ns, const char *name, const char *phase)
{
  char path[256];

  job_path(ns, name, path, sizeof(path));
  return gq_test_wait_field(&env.sim, path, "status.phase", phase, WAIT_MS);
}

static int wait_phase(const char *name, const char *phase)
{
  return wait_phase_ns("team-a", name, phase);
}

/* The job's status (new reference). */
static json_t *job_status(const char *ns, const char *name)
{
  char path[256];
  json_t *j, *s;

  job_path(ns, name, path, sizeof(path));
  j = gq_test_sim_call(&env.sim, "GET", path, NULL, 200);
  s = json_incref(json_object_get(j, "status"));
  json_decref(j);
  return s ? s : json_object();
}

static long long status_int(const char *ns, const char *name, const char *k)
{
  json_t *s = job_status(ns, name);
  long long v = json_integer_value(json_object_get(s, k));

  json_decref(s);
  return v;
}

static char *status_str(const char *ns, const char *name, const char *k)
{
  json_t *s = job_status(ns, name);
  const char *v = json_string_value(json_object_get(s, k));
  char *out = strdup(v ? v : "");

  json_decref(s);
  return out;
}

static void assert_status_str(const char *ns, const char *name, const char *k,
                              const char *want)
{
  char *v = status_str(ns, name, k);

  if (strcmp(v, want))
    fail_msg("%s/%s status.%s: got '%s', want '%s'", ns, name, k, v, want);
  free(v);
}

static void assert_status_has(const char *ns, const char *name, const char *k,
                              const char *needle)
{
  char *v = status_str(ns, name, k);

  if (!strstr(v, needle))
    fail_msg("%s/%s status.%s: '%s' does not mention '%s'", ns, name, k, v,
             needle);
  free(v);
}

/* The job's pods (new reference: the items array). */
static json_t *job_pods(const char *ns, const char *name)
{
  char path[320];
  json_t *l, *items;

  snprintf(path, sizeof(path),
           "/api/v1/namespaces/%s/pods?labelSelector=gpuq.dev/job%%3D%s", ns,
           name);
  l = gq_test_sim_call(&env.sim, "GET", path, NULL, 200);
  items = json_incref(json_object_get(l, "items"));
  json_decref(l);
  return items ? items : json_array();
}

static const char *pod_label(const json_t *pod, const char *k)
{
  const char *v = json_string_value(json_object_get(
      json_object_get(json_object_get(pod, "metadata"), "labels"), k));
  return v ? v : "";
}

/* Every pod of the job belongs to attempt 'attempt', and there are exactly
 * 'n' of them with distinct replica indexes (no duplicate pod). */
static void assert_pods_once(const char *name, int n, const char *attempt)
{
  json_t *items = job_pods("team-a", name), *p;
  size_t i;
  unsigned seen = 0;

  if ((int)json_array_size(items) != n)
    fail_msg("job %s: %zu pods, want %d", name, json_array_size(items), n);
  json_array_foreach(items, i, p) {
    long r = strtol(pod_label(p, "gpuq.dev/replica"), NULL, 10);

    if (strcmp(pod_label(p, "gpuq.dev/attempt"), attempt))
      fail_msg("job %s: pod of attempt '%s', want '%s'", name,
               pod_label(p, "gpuq.dev/attempt"), attempt);
    if (r < 0 || r >= 32 || (seen & (1u << r)))
      fail_msg("job %s: replica %ld twice or out of range", name, r);
    seen |= 1u << r;
  }
  json_decref(items);
}

/* Events about object 'name' with this reason. */
static int count_events(const char *name, const char *reason)
{
  char path[400];
  json_t *l, *e;
  size_t i;
  int n = 0;

  snprintf(path, sizeof(path), "/api/v1/namespaces/team-a/events?"
           "fieldSelector=involvedObject.name%%3D%s", name);
  l = gq_test_sim_call(&env.sim, "GET", path, NULL, 200);
  json_array_foreach(json_object_get(l, "items"), i, e) {
    n += !strcmp(json_string_value(json_object_get(e, "reason")) ?: "",
                 reason);
  }
  json_decref(l);
  return n;
}

/* GETs path: returns the status code (200, 404, ...) and, for 200, the
 * object in *obj (new reference; NULL otherwise). */
static int http_get(const char *path, json_t **obj)
{
  char url[512], *resp = NULL;
  int st;

  snprintf(url, sizeof(url), "%s%s", env.sim.url, path);
  st = gq_test_http("GET", url, NULL, NULL, NULL, &resp);
  *obj = st == 200 && resp ? json_loads(resp, 0, NULL) : NULL;
  free(resp);
  return st;
}

/* Waits until the controller acts: the TeamQuota's status shows its
 * nominal GPUs (status is written only by an acting controller with
 * synced caches). */
static void wait_acting(const char *team, int nominal)
{
  char path[256], want[32];

  snprintf(path, sizeof(path), TQ "/%s", team);
  snprintf(want, sizeof(want), "%d", nominal);
  assert_true(gq_test_wait_field(&env.sim, path, "status.nominalGPUs", want,
                                 WAIT_MS));
}

/* A Lua one-liner's integer result over the ledger. */
static long long redis_eval(const char *script)
{
  char *r = gq_test_redis_cmd(&env.redis, "EVAL %s 0", script);
  long long v;

  assert_non_null(r);
  if (!strncmp(r, "ERR", 3))
    fail_msg("redis: %s", r);
  v = strtoll(r, NULL, 10);
  free(r);
  return v;
}

/* GPUs the Redis ledger counts as used, over every team and flavor. */
static long long ledger_used(void)
{
  return redis_eval(
      "local s=0 for _,k in ipairs(redis.call('KEYS','gpuq:*:use:*')) do "
      "for _,v in ipairs(redis.call('HVALS',k)) do s=s+tonumber(v) end end "
      "return s");
}

/* Invariant 3: after every job has ended, no admission is left and every
 * team's usage is 0 (and the ledger was used at all). */
static void assert_ledger_empty(void)
{
  assert_true(redis_eval("return #redis.call('KEYS','gpuq:*:ver')") >= 1);
  assert_int_equal(redis_eval("return #redis.call('KEYS','gpuq:*:adm:*')"), 0);
  assert_int_equal(ledger_used(), 0);
}

static void assert_report(long long misses)
{
  json_t *r = gq_test_sim_call(&env.sim, "GET", "/sim/v1/report", NULL, 200);
  long long v = json_integer_value(json_object_get(r, "invariant_violations"));
  long long m = json_integer_value(json_object_get(r, "placement_misses"));

  if (v != 0 || m != misses) {
    char *s = json_dumps(r, JSON_INDENT(1));

    fail_msg("sim report: %lld violations, %lld misses (want %lld): %s", v,
             m, misses, s);
  }
  json_decref(r);
}

/* The end of every test: the report, then a clean SIGTERM exit. */
static void finish(long long misses)
{
  assert_report(misses);
  assert_int_equal(gq_test_ctl_stop(&env.ctl), 0);
  assert_int_equal(gq_test_ctl_stop(&env.ctl2), 0);
  env.passed = 1;
}

/* ---- 1. placement miss --------------------------------------------------- */

/* Node lc-a-00 (8 GPUs) is the best fit for an 8-GPU job, but while the
 * controller's pod watch is held back, a foreign pod takes all 8 of its
 * GPUs: gpuq's pinned pod is left Unschedulable (a placement miss). The
 * gang is rolled back and placed again on lc-b-00, without counting as a
 * failed attempt. */
static void test_placement_miss(void **state)
{
  static const char *const nodes[] = {"lc-a-:8", "lc-b-:16", NULL};
  struct jobopt o = JOB;
  json_t *s, *items;

  (void)state;
  env_up(nodes);
  create_quota("team-a", "team-a", 32);
  ctl_up(&env.ctl, NULL);
  wait_acting("team-a", 32);
  /* the controller's next pod list or watch is served 3 s late, against
   * the state of that moment: it misses the foreign pod until then */
  json_decref(gq_test_sim_call(&env.sim, "POST", "/sim/v1/faults",
      "{\"verb\":\"watch\",\"resource\":\"pods\",\"delayMs\":3000,"
      "\"count\":1}", 201));
  json_decref(gq_test_sim_call(&env.sim, "POST", "/sim/v1/faults",
      "{\"verb\":\"list\",\"resource\":\"pods\",\"delayMs\":3000,"
      "\"count\":1}", 201));
  json_decref(gq_test_sim_call(&env.sim, "POST", "/sim/v1/close-watches",
                               NULL, 200));
  json_decref(gq_test_sim_call(&env.sim, "POST",
      "/api/v1/namespaces/team-a/pods",
      "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
      "\"squatter\",\"namespace\":\"team-a\"},\"spec\":{\"nodeName\":"
      "\"lc-a-00\",\"containers\":[{\"name\":\"c\",\"image\":\"x\","
      "\"resources\":{\"requests\":{\"nvidia.com/gpu\":\"8\"},\"limits\":"
      "{\"nvidia.com/gpu\":\"8\"}}}]}}", 201));
  o.gpus = 8;
  o.run_s = 30;
  create_job("miss", &o);
  assert_true(wait_phase("miss", "Running"));
  json_decref(gq_test_sim_call(&env.sim, "DELETE", "/sim/v1/faults", NULL,
                               200));
  s = job_status("team-a", "miss");
  assert_string_equal(json_string_value(json_array_get(
                          json_object_get(s, "nodes"), 0)), "lc-b-00");
  assert_int_equal(json_integer_value(json_object_get(s, "failedAttempts")),
                   0);
  assert_int_equal(json_integer_value(json_object_get(s, "attempts")), 2);
  json_decref(s);
  /* the missed pod is gone; only the second attempt's pod is left */
  items = job_pods("team-a", "miss");
  assert_int_equal(json_array_size(items), 1);
  assert_string_equal(pod_label(json_array_get(items, 0), "gpuq.dev/attempt"),
                      "2");
  json_decref(items);
  assert_true(wait_phase("miss", "Succeeded"));
  assert_int_equal(status_int("team-a", "miss", "failedAttempts"), 0);
  assert_int_equal(count_events("miss", "PlacementMiss"), 1);
  json_decref(gq_test_sim_call(&env.sim, "DELETE",
      "/api/v1/namespaces/team-a/pods/squatter?gracePeriodSeconds=0", NULL,
      200));
  assert_ledger_empty();
  finish(1);
}

/* ---- 2. backoffLimit ----------------------------------------------------- */

/* The only node's 8 GPUs are free again: an 8-GPU job 'after' runs to
 * its end. */
static void run_after(void)
{
  struct jobopt o = JOB;

  o.gpus = 8;
  o.run_s = 10;
  create_job("after", &o);
  assert_true(wait_phase("after", "Succeeded"));
}

/* Both replicas of every attempt fail on their own after 5 virtual
 * seconds: each attempt counts once, backoffLimit 2 allows 2 failed
 * attempts, the third fails the job. */
static void test_backoff_limit(void **state)
{
  static const char *const nodes[] = {"lc-a-:8", NULL};
  struct jobopt o = JOB;
  json_t *items, *p;
  size_t i;
  unsigned attempts = 0;

  (void)state;
  env_up(nodes);
  create_quota("team-a", "team-a", 8);
  ctl_up(&env.ctl, NULL);
  o.replicas = 2;
  o.gpus = 4;
  o.fail_s = 5;
  o.backoff = 2;
  create_job("flaky", &o);
  assert_true(wait_phase("flaky", "Failed"));
  assert_status_str("team-a", "flaky", "reason", "BackoffLimitExceeded");
  assert_int_equal(status_int("team-a", "flaky", "failedAttempts"), 3);
  assert_int_equal(status_int("team-a", "flaky", "attempts"), 3);
  assert_int_equal(count_events("flaky", "ReplicaFailed"), 3);
  assert_int_equal(count_events("flaky", "BackoffLimitExceeded"), 1);
  /* pods of attempts 1..3 and none after the last (a replica still
   * running when its peer failed was deleted with the gang) */
  items = job_pods("team-a", "flaky");
  json_array_foreach(items, i, p) {
    long a = strtol(pod_label(p, "gpuq.dev/attempt"), NULL, 10);

    if (a < 1 || a > 3)
      fail_msg("pod of attempt %ld", a);
    attempts |= 1u << a;
  }
  assert_in_range(json_array_size(items), 3, 6);
  assert_int_equal(attempts, 0xe);
  json_decref(items);
  run_after();
  assert_ledger_empty();
  finish(0);
}

/* A running gang past spec.activeDeadlineSeconds is Failed with reason
 * DeadlineExceeded, not retried (backoffLimit 3 left), and its GPUs are
 * free again for the next job once its pods are gone. */
static void test_active_deadline(void **state)
{
  static const char *const nodes[] = {"lc-a-:8", NULL};
  struct jobopt o = JOB;
  json_t *items;

  (void)state;
  env_up(nodes);
  create_quota("team-a", "team-a", 8);
  ctl_up(&env.ctl, NULL);
  o.replicas = 2;
  o.gpus = 4;
  o.backoff = 3;
  o.deadline_s = 30; /* it runs until deleted */
  create_job("endless", &o);
  assert_true(wait_phase("endless", "Running"));
  assert_true(wait_phase("endless", "Failed"));
  assert_status_str("team-a", "endless", "reason", "DeadlineExceeded");
  assert_int_equal(status_int("team-a", "endless", "attempts"), 1);
  assert_true(count_events("endless", "DeadlineExceeded") >= 1);
  run_after();
  items = job_pods("team-a", "endless");
  assert_int_equal(json_array_size(items), 0);
  json_decref(items);
  assert_ledger_empty();
  finish(0);
}

/* ---- 3. terminating pods hold GPUs --------------------------------------- */

/* The only node's 8 GPUs are held by 'holder'. Its pod is deleted with a
 * 40 s grace period it cannot use to checkpoint (it needs 1000): it stays
 * terminating for 40 virtual seconds, and the higher-priority 'waiter'
 * that needs those GPUs is not admitted until the pod is gone. */
static void test_terminating_holds(void **state)
{
  static const char *const nodes[] = {"lc-a-:8", NULL};
  struct jobopt o = JOB;
  json_t *items, *p;
  char pod[300], *msg;
  const char *pname;
  int st, saw_terminating = 0;

  (void)state;
  env_up(nodes);
  create_quota("team-a", "team-a", 16);
  ctl_up(&env.ctl, NULL);
  o.gpus = 8;
  o.run_s = 20;
  o.ckpt_s = 1000;
  o.fixed = 1; /* waiter must not preempt it */
  create_job("holder", &o);
  assert_true(wait_phase("holder", "Running"));
  o = JOB;
  o.gpus = 8;
  o.run_s = 10;
  o.priority = 10;
  create_job("waiter", &o);
  assert_true(wait_phase("waiter", "Queued"));
  assert_true(gq_test_wait_field(&env.sim, GJ "/namespaces/team-a/gpujobs/"
                                 "waiter", "status.reason",
                                 "WaitingForCapacity", WAIT_MS));
  items = job_pods("team-a", "holder");
  assert_int_equal(json_array_size(items), 1);
  pname = json_string_value(json_object_get(json_object_get(
      json_array_get(items, 0), "metadata"), "name"));
  snprintf(pod, sizeof(pod), "/api/v1/namespaces/team-a/pods/%s", pname);
  json_decref(items);
  /* the TeamQuota shows the holder's GPUs (its status is written at most
   * once a second) before the pod goes */
  assert_true(gq_test_wait_field(&env.sim, TQ "/team-a", "status.usedGPUs",
                                 "8", WAIT_MS));
  json_decref(gq_test_sim_call(&env.sim, "DELETE", pod,
                               "{\"gracePeriodSeconds\":40}", 200));
  /* while the pod exists (terminating), waiter stays queued, podless */
  for (int t = 0; (st = http_get(pod, &p)) == 200 && t < WAIT_MS; t += 50) {
    if (json_object_get(json_object_get(p, "metadata"), "deletionTimestamp"))
      saw_terminating = 1;
    json_decref(p);
    msg = status_str("team-a", "waiter", "phase");
    if (strcmp(msg, "Queued"))
      fail_msg("waiter is %s while the holder's pod is terminating", msg);
    free(msg);
    items = job_pods("team-a", "waiter");
    assert_int_equal(json_array_size(items), 0);
    json_decref(items);
    /* and the holder's GPUs are still counted as its team's */
    assert_true(gq_test_wait_field(&env.sim, TQ "/team-a",
                                   "status.usedGPUs", "8", 0));
    gq_test_sleep_ms(50);
  }
  assert_int_equal(st, 404);
  assert_true(saw_terminating);
  assert_true(wait_phase("waiter", "Running"));
  assert_true(wait_phase("waiter", "Succeeded"));
  /* the disruption did not count as a failure; holder runs again */
  assert_true(wait_phase("holder", "Succeeded"));
  assert_int_equal(status_int("team-a", "holder", "failedAttempts"), 0);
  assert_int_equal(status_int("team-a", "holder", "preemptions"), 1);
  assert_int_equal(status_int("team-a", "holder", "attempts"), 2);
  assert_ledger_empty();
  finish(0);
}

/* ---- 4. rejected and waiting jobs ---------------------------------------- */

/* A container asking for nvidia.com/gpu itself (the CRD schema lets the
 * template through): Failed, InvalidSpec, naming the field. A namespace
 * the team does not admit: Failed, Forbidden. An unknown team: Queued,
 * UnknownTeam, naming it and the teams that exist, until its TeamQuota
 * is created. */
static void test_validation(void **state)
{
  static const char *const nodes[] = {"lc-a-:8", NULL};
  struct jobopt o = JOB;
  json_t *items;

  (void)state;
  env_up(nodes);
  create_ns("team-x");
  create_quota("team-a", "team-a", 8);
  ctl_up(&env.ctl, NULL);
  o.gpus = 2;
  o.run_s = 10;
  o.template_res = "{\"limits\":{\"nvidia.com/gpu\":\"1\"},"
                   "\"requests\":{\"nvidia.com/gpu\":\"1\"}}";
  create_job("bad-gpu", &o);
  assert_true(wait_phase("bad-gpu", "Failed"));
  assert_status_str("team-a", "bad-gpu", "reason", "InvalidSpec");
  assert_status_has("team-a", "bad-gpu", "message",
                    "spec.template.spec.containers");
  items = job_pods("team-a", "bad-gpu");
  assert_int_equal(json_array_size(items), 0);
  json_decref(items);

  o = JOB;
  o.gpus = 2;
  o.run_s = 10;
  o.ns = "team-x";
  create_job("intruder", &o);
  assert_true(wait_phase_ns("team-x", "intruder", "Failed"));
  assert_status_str("team-x", "intruder", "reason", "Forbidden");
  assert_status_has("team-x", "intruder", "message", "team-x");

  o = JOB;
  o.gpus = 2;
  o.run_s = 10;
  o.team = "ghost";
  create_job("orphan", &o);
  assert_true(gq_test_wait_field(&env.sim, GJ "/namespaces/team-a/gpujobs/"
                                 "orphan", "status.reason", "UnknownTeam",
                                 WAIT_MS));
  assert_status_str("team-a", "orphan", "phase", "Queued");
  assert_status_has("team-a", "orphan", "message", "'ghost'");
  assert_status_has("team-a", "orphan", "message", "'team-a'");
  create_quota("ghost", "team-a", 4);
  assert_true(wait_phase("orphan", "Succeeded"));
  assert_int_equal(status_int("team-a", "orphan", "attempts"), 1);
  /* the rejected ones stayed rejected, and were never admitted */
  assert_status_str("team-a", "bad-gpu", "phase", "Failed");
  assert_int_equal(status_int("team-a", "bad-gpu", "attempts"), 0);
  assert_int_equal(status_int("team-x", "intruder", "attempts"), 0);
  assert_ledger_empty();
  finish(0);
}

/* ---- 4b. a spec edited while admitted ----------------------------------- */

/* Waits up to WAIT_MS for count_events(name, reason) to reach n. */
static int wait_events(const char *name, const char *reason, int n)
{
  for (int t = 0; t < WAIT_MS; t += 50) {
    if (count_events(name, reason) >= n)
      return 1;
    gq_test_sleep_ms(50);
  }
  return 0;
}

/* 'edited' (1 replica x 2 GPUs of team-a) runs; then its spec.replicas,
 * gpusPerReplica and team are changed, as kubectl edit would. The running
 * attempt keeps the shape it was admitted with: its pod keeps running,
 * team-a keeps counting its 2 GPUs and team-b none, a SpecChangeDeferred
 * event says why, and nothing crashes (the controller once sized its
 * admission by the edited spec: a larger replica count freed pointers
 * past the end of its node array). Its pod deleted, it is queued again and
 * its next attempt has the new shape: 3 pods of 1 GPU on team-b. Deleted,
 * it leaves the ledger empty. */
static void test_spec_edit_while_admitted(void **state)
{
  static const char *const nodes[] = {"lc-a-:8", NULL};
  struct jobopt o = JOB;
  json_t *items, *patch;
  char url[512], pod[300], *body, *resp = NULL;
  int st;

  (void)state;
  env_up(nodes);
  create_quota("team-a", "team-a", 8);
  create_quota("team-b", "team-a", 8);
  ctl_up(&env.ctl, NULL);
  o.gpus = 2;
  create_job("edited", &o);
  assert_true(wait_phase("edited", "Running"));
  assert_true(gq_test_wait_field(&env.sim, TQ "/team-a", "status.usedGPUs",
                                 "2", WAIT_MS));
  patch = gq_test_json_sq("{'spec':{'replicas':3,'gpusPerReplica':1,"
                          "'team':'team-b'}}");
  body = json_dumps(patch, JSON_COMPACT);
  snprintf(url, sizeof(url), "%s" GJ "/namespaces/team-a/gpujobs/edited",
           env.sim.url);
  st = gq_test_http("PATCH", url, body, "application/merge-patch+json", NULL,
                    &resp);
  if (st != 200)
    fail_msg("PATCH edited: status %d: %s", st, resp ? resp : "");
  free(resp);
  free(body);
  json_decref(patch);
  assert_true(wait_events("edited", "SpecChangeDeferred", 1));
  assert_status_str("team-a", "edited", "phase", "Running");
  assert_pods_once("edited", 1, "1");
  assert_true(gq_test_wait_field(&env.sim, TQ "/team-a", "status.usedGPUs",
                                 "2", 0));
  assert_int_equal(ledger_used(), 2);
  /* its pod goes: the next attempt is admitted with the edited spec */
  items = job_pods("team-a", "edited");
  snprintf(pod, sizeof(pod), "/api/v1/namespaces/team-a/pods/%s",
           json_string_value(json_object_get(json_object_get(
               json_array_get(items, 0), "metadata"), "name")));
  json_decref(items);
  json_decref(gq_test_sim_call(&env.sim, "DELETE", pod, NULL, 200));
  assert_true(gq_test_wait_field(&env.sim, GJ "/namespaces/team-a/gpujobs/"
                                 "edited", "status.attempts", "2", WAIT_MS));
  assert_true(wait_phase("edited", "Running"));
  assert_pods_once("edited", 3, "2");
  assert_true(gq_test_wait_field(&env.sim, TQ "/team-b", "status.usedGPUs",
                                 "3", WAIT_MS));
  assert_true(gq_test_wait_field(&env.sim, TQ "/team-a", "status.usedGPUs",
                                 "0", WAIT_MS));
  assert_int_equal(ledger_used(), 3);
  json_decref(gq_test_sim_call(&env.sim, "DELETE", GJ "/namespaces/team-a/"
                               "gpujobs/edited", NULL, 200));
  for (int t = 0; t < WAIT_MS && (st = http_get(GJ "/namespaces/team-a/"
                                                "gpujobs/edited", &patch)) ==
                                     200; t += 50) {
    json_decref(patch);
    gq_test_sleep_ms(50);
  }
  assert_int_equal(st, 404);
  items = job_pods("team-a", "edited");
  assert_int_equal(json_array_size(items), 0);
  json_decref(items);
  assert_true(gq_test_wait_field(&env.sim, TQ "/team-b", "status.usedGPUs",
                                 "0", WAIT_MS));
  assert_ledger_empty();
  finish(0);
}

/* ---- 5. SIGKILL and restart ---------------------------------------------- */

/* Quota 12 on 16 GPUs: k1 (4) and k2 (2x2) are admitted, k3 (8) waits
 * for quota, k4 (4) behind it. The controller is SIGKILLed as soon as k1
 * and k2 show their admission, and restarted: it must adopt their
 * admissions (k3 waits until k1 has ended, invariant 2), create no second
 * pod for them, and finish everything with an empty ledger. */
static void test_kill_restart(void **state)
{
  static const char *const nodes[] = {"lc-a-:8", "lc-b-:8", NULL};
  static const struct {
    const char *name;
    int replicas, gpus, run_s;
  } jobs[] = {{"k1", 1, 4, 30}, {"k2", 2, 2, 60}, {"k3", 1, 8, 10},
              {"k4", 1, 4, 10}};
  struct jobopt o;
  char path[256], *adm, *done;

  (void)state;
  env_up(nodes);
  create_quota("team-a", "team-a", 12);
  ctl_up(&env.ctl, NULL);
  wait_acting("team-a", 12);
  for (size_t i = 0; i < 4; i++) {
    o = JOB;
    o.replicas = jobs[i].replicas;
    o.gpus = jobs[i].gpus;
    o.run_s = jobs[i].run_s;
    create_job(jobs[i].name, &o);
  }
  for (size_t i = 0; i < 2; i++) {
    job_path("team-a", jobs[i].name, path, sizeof(path));
    assert_true(gq_test_wait_field(&env.sim, path, "status.attempts", "1",
                                   WAIT_MS));
  }
  gq_test_ctl_kill(&env.ctl);
  ctl_up(&env.ctl, NULL);
  for (size_t i = 0; i < 4; i++)
    assert_true(wait_phase(jobs[i].name, "Succeeded"));
  for (size_t i = 0; i < 4; i++) {
    assert_pods_once(jobs[i].name, jobs[i].replicas, "1");
    assert_int_equal(status_int("team-a", jobs[i].name, "attempts"), 1);
    assert_int_equal(status_int("team-a", jobs[i].name, "failedAttempts"), 0);
  }
  /* the restarted controller adopted k1 and k2: no second admission */
  assert_int_equal(count_events("k1", "Admitted"), 1);
  assert_int_equal(count_events("k2", "Admitted"), 1);
  /* k3 fits the quota only once k1 has released its 4 GPUs */
  adm = status_str("team-a", "k3", "admittedAt");
  done = status_str("team-a", "k1", "completionTime");
  if (!*adm || !*done || strcmp(adm, done) < 0)
    fail_msg("k3 admitted at '%s', before k1 ended at '%s'", adm, done);
  free(adm);
  free(done);
  assert_ledger_empty();
  finish(0);
}

/* Kills the controller while gang 'name' (2 x 4 GPUs) is being created:
 * every pod create is held back 1.5 s by the sim (all of them, or only
 * the first with 'partial'), and the kill comes once the job shows phase
 * Admitted (and, with 'partial', one pod exists). The creates still land
 * after the restart; the restarted controller must finish that same
 * attempt, not start a second generation next to it. */
static void kill_mid_create(const char *name, int partial)
{
  struct jobopt o = JOB;
  char path[256];
  size_t n = 0;

  json_decref(gq_test_sim_call(&env.sim, "POST", "/sim/v1/faults", partial
      ? "{\"verb\":\"create\",\"resource\":\"pods\",\"delayMs\":1500,"
        "\"count\":1}"
      : "{\"verb\":\"create\",\"resource\":\"pods\",\"delayMs\":1500,"
        "\"count\":-1}", 201));
  o.replicas = 2;
  o.gpus = 4;
  o.run_s = 30;
  create_job(name, &o);
  job_path("team-a", name, path, sizeof(path));
  assert_true(gq_test_wait_field(&env.sim, path, "status.phase", "Admitted",
                                 WAIT_MS));
  for (int t = 0; t < WAIT_MS; t += 20) {
    json_t *items = job_pods("team-a", name);

    n = json_array_size(items);
    json_decref(items);
    if (!partial || n > 0)
      break;
    gq_test_sleep_ms(20);
  }
  assert_int_equal(n, partial ? 1 : 0);
  gq_test_ctl_kill(&env.ctl);
  json_decref(gq_test_sim_call(&env.sim, "DELETE", "/sim/v1/faults", NULL,
                               200));
  ctl_up(&env.ctl, NULL);
  assert_true(wait_phase(name, "Succeeded"));
  assert_pods_once(name, 2, "1");
  assert_int_equal(status_int("team-a", name, "attempts"), 1);
}

/* SIGKILL with pod creates in flight: none had landed, then one of two. */
static void test_kill_mid_create(void **state)
{
  static const char *const nodes[] = {"lc-a-:8", "lc-b-:8", NULL};

  (void)state;
  env_up(nodes);
  create_quota("team-a", "team-a", 16);
  ctl_up(&env.ctl, NULL);
  wait_acting("team-a", 16);
  kill_mid_create("m1", 0);
  kill_mid_create("m2", 1);
  assert_ledger_empty();
  finish(0);
}

/* ---- 6. Redis flushed, Redis restarted ----------------------------------- */

/* FLUSHALL with one job running and two queued: the controller rebuilds
 * the queues and the ledger from the objects and every job completes.
 * Then Redis is stopped with one job running and one queued, and started
 * again (empty) on the same port: the running job still finishes, the
 * queued one is not admitted while Redis is away, and is once it is back. */
static void test_redis_loss(void **state)
{
  static const char *const nodes[] = {"lc-a-:8", NULL};
  struct jobopt o = JOB;
  int port;

  (void)state;
  env_up(nodes);
  create_quota("team-a", "team-a", 8);
  ctl_up(&env.ctl, NULL);
  o.gpus = 8;
  o.run_s = 20;
  create_job("r1", &o);
  assert_true(wait_phase("r1", "Running"));
  o.gpus = 4;
  o.run_s = 10;
  create_job("r2", &o);
  create_job("r3", &o);
  assert_true(wait_phase("r2", "Queued"));
  assert_true(wait_phase("r3", "Queued"));
  {
    char *r = gq_test_redis_cmd(&env.redis, "FLUSHALL");

    assert_non_null(r);
    assert_string_equal(r, "OK");
    free(r);
  }
  assert_true(wait_phase("r1", "Succeeded"));
  assert_true(wait_phase("r2", "Succeeded"));
  assert_true(wait_phase("r3", "Succeeded"));
  assert_ledger_empty();

  /* Redis restarted (empty) on the same port while a job runs and another
   * waits: nothing is admitted while it is down; both complete after */
  o.gpus = 8;
  o.run_s = 20;
  create_job("r4", &o);
  assert_true(wait_phase("r4", "Running"));
  o.run_s = 10;
  create_job("r5", &o);
  assert_true(wait_phase("r5", "Queued"));
  port = env.redis.port;
  gq_test_redis_stop(&env.redis);
  assert_true(wait_phase("r4", "Succeeded"));
  assert_status_str("team-a", "r5", "phase", "Queued");
  assert_int_equal(status_int("team-a", "r5", "attempts"), 0);
  assert_int_equal(gq_test_redis_start_port(&env.redis, port, NULL), 0);
  assert_true(wait_phase("r5", "Succeeded"));
  assert_int_equal(status_int("team-a", "r5", "attempts"), 1);
  assert_pods_once("r5", 1, "1");
  assert_ledger_empty();
  finish(0);
}

/* ---- 7. leader election -------------------------------------------------- */

/* Whether the file at path contains needle now. */
static int log_has(const char *path, const char *needle)
{
  char *text = gq_test_read_file(path, NULL);
  int hit = text && strstr(text, needle);

  free(text);
  return hit;
}

/* The periodic ledger audit (--ledger-audit-seconds 1): while a job runs,
 * it finds no drift (its admission is in the ledger); a ledger changed
 * behind gpuq's back (a team's use set to 3 GPUs) is found by the next
 * audit and rebuilt from the pods (8 again); the job still completes and
 * the ledger ends empty. */
static void test_ledger_audit(void **state)
{
  static const char *const nodes[] = {"lc-a-:8", NULL};
  static const char *const audit[] = {"--ledger-audit-seconds", "1", NULL};
  struct jobopt o = JOB;
  int64_t end;

  (void)state;
  env_up(nodes);
  create_quota("team-a", "team-a", 8);
  ctl_up(&env.ctl, audit);
  o.gpus = 8;
  o.run_s = 150;
  create_job("au1", &o);
  assert_true(wait_phase("au1", "Running"));
  assert_int_equal(ledger_used(), 8);
  assert_true(gq_test_wait_file(env.ctl.log, ": no drift (version",
                                WAIT_MS));
  assert_false(log_has(env.ctl.log, "Redis differs"));
  assert_int_equal(redis_eval(
      "local n=0 for _,k in ipairs(redis.call('KEYS','gpuq:*:use:*')) do "
      "for _,f in ipairs(redis.call('HKEYS',k)) do "
      "redis.call('HSET',k,f,'3') n=n+1 end end return n"), 1);
  assert_true(gq_test_wait_file(env.ctl.log, "Redis differs from the pods "
                                "by 5 GPUs", WAIT_MS));
  end = gq_clock_mono_ms() + WAIT_MS;
  while (ledger_used() != 8 && gq_clock_mono_ms() < end)
    gq_test_sleep_ms(50);
  assert_int_equal(ledger_used(), 8);
  assert_true(wait_phase("au1", "Succeeded"));
  assert_int_equal(status_int("team-a", "au1", "attempts"), 1);
  assert_ledger_empty();
  finish(0);
}

static int wait_holder(const char *identity)
{
  return gq_test_wait_field(&env.sim, "/apis/coordination.k8s.io/v1/"
                            "namespaces/lc-system/leases/gpuq-controller",
                            "spec.holderIdentity", identity, WAIT_MS);
}

/* Two controllers with --leader-elect: ctl-one holds the Lease and alone
 * admits (one Admitted event, one attempt, one pod per job; ctl-two never
 * leads). SIGTERM to ctl-one releases the Lease (clean exit); ctl-two takes
 * it over and admits the next job. */
static void test_leader_election(void **state)
{
  static const char *const nodes[] = {"lc-a-:8", NULL};
  static const char *const one[] = {"--leader-elect", "--lease-namespace",
                                    "lc-system", "--identity", "ctl-one",
                                    NULL};
  static const char *const two[] = {"--leader-elect", "--lease-namespace",
                                    "lc-system", "--identity", "ctl-two",
                                    NULL};
  struct jobopt o = JOB;
  const char *names[] = {"l1", "l2"};

  (void)state;
  env_up(nodes);
  create_ns("lc-system");
  create_quota("team-a", "team-a", 8);
  ctl_up(&env.ctl, one);
  assert_true(wait_holder("ctl-one"));
  ctl_up(&env.ctl2, two);
  o.gpus = 4;
  o.run_s = 10;
  for (int i = 0; i < 2; i++)
    create_job(names[i], &o);
  for (int i = 0; i < 2; i++) {
    assert_true(wait_phase(names[i], "Succeeded"));
    assert_int_equal(status_int("team-a", names[i], "attempts"), 1);
    assert_int_equal(count_events(names[i], "Admitted"), 1);
    assert_pods_once(names[i], 1, "1");
  }
  assert_true(wait_holder("ctl-one"));
  assert_false(log_has(env.ctl2.log, "became leader"));
  /* the leader stops cleanly (releasing the lease); the other takes over */
  assert_int_equal(gq_test_ctl_stop(&env.ctl), 0);
  assert_true(wait_holder("ctl-two"));
  assert_true(gq_test_wait_file(env.ctl2.log, "became leader", WAIT_MS));
  o.run_s = 10;
  create_job("l3", &o);
  assert_true(wait_phase("l3", "Succeeded"));
  assert_int_equal(status_int("team-a", "l3", "attempts"), 1);
  assert_int_equal(count_events("l3", "Admitted"), 1);
  assert_pods_once("l3", 1, "1");
  assert_ledger_empty();
  finish(0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_placement_miss, env_down),
      cmocka_unit_test_teardown(test_backoff_limit, env_down),
      cmocka_unit_test_teardown(test_active_deadline, env_down),
      cmocka_unit_test_teardown(test_terminating_holds, env_down),
      cmocka_unit_test_teardown(test_validation, env_down),
      cmocka_unit_test_teardown(test_spec_edit_while_admitted, env_down),
      cmocka_unit_test_teardown(test_kill_restart, env_down),
      cmocka_unit_test_teardown(test_kill_mid_create, env_down),
      cmocka_unit_test_teardown(test_redis_loss, env_down),
      cmocka_unit_test_teardown(test_ledger_audit, env_down),
      cmocka_unit_test_teardown(test_leader_election, env_down),
  };
  /* GQ_TEST_FILTER=test_name runs one test (a glob) */
  if (getenv("GQ_TEST_FILTER"))
    cmocka_set_test_filter(getenv("GQ_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
