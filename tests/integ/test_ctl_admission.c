/* gpuq-controller end to end, admission (DESIGN §2-§4): against gpuq-sim
 * (clusters/mixed.yaml) and a private redis-server, each test with its own
 * sim, Redis and controller on one virtual clock:
 *   - queue order within a team: priority (spec.priority or a
 *     PriorityClass), then queue time, even within one second;
 *   - fair share in a cohort: the team within its nominal quota before a
 *     borrower; among borrowers the lowest weighted share;
 *   - borrowing idle cohort GPUs (status reason while Admitted, event,
 *     TeamQuota status), borrowingLimit and lendingLimit;
 *   - quota lines per GPU product (flavors); unknown teams, foreign
 *     namespaces, zero quotas;
 *   - gangs: all or nothing, WaitingForCapacity while one node is free,
 *     the estimated start, and the wiring of multi-replica jobs (headless
 *     Service, hostname and subdomain, RANK, WORLD_SIZE, MASTER_ADDR,
 *     MASTER_PORT, GPUQ_REPLICA, GPUQ_REPLICAS);
 *   - MIG resources;
 *   - taints and tolerations, nodeSelector and required node affinity,
 *     cordoned, NotReady and device-plugin-less nodes, GPU memory;
 *   - CPU and memory fit, counting pods that are not gpuq's.
 * Every test checks where pods really landed (spec.nodeName, bound by the
 * sim's scheduler) and ends with the sim's report: no invariant violation,
 * no placement miss. Every wait is for a condition, with a deadline.
 * GQ_TEST_FILTER=<name> runs one test.
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

#include "base/clock.h"
#include "tests/support/fixture.h"
#include "tests/support/proc.h"
#include "tests/support/redis.h"

static struct gq_test_sim sim;
static struct gq_test_redis redis;
static struct gq_test_ctl ctl;

#define WAIT_MS 20000
#define TIME_SCALE "10"
#define TIME_EPOCH "1800000000"
#define JOBS "/apis/gpuq.dev/v1alpha1/namespaces/%s/gpujobs"
#define H100 "NVIDIA-H100-80GB-HBM3"
#define A100 "NVIDIA-A100-SXM4-80GB"

/* ---- harness ---------------------------------------------------------- */

static int setup(void **state)
{
  static const char *const args[] = {"--cluster", "clusters/mixed.yaml",
                                     "--time-scale", TIME_SCALE,
                                     "--time-epoch", TIME_EPOCH, NULL};
  static const char *const cargs[] = {"--time-scale", TIME_SCALE,
                                      "--time-epoch", TIME_EPOCH, NULL};

  (void)state;
  if (gq_test_redis_start(&redis, NULL) != 0)
    return -1;
  if (gq_test_sim_start(&sim, args) != 0) {
    gq_test_redis_stop(&redis);
    return -1;
  }
  return gq_test_ctl_start(&ctl, &sim, redis.url, 0, cargs);
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

/* Prints the end of the controller's log, then fails the test. */
static void fail_log(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void fail_log(const char *fmt, ...)
{
  char msg[1024];
  char *log = gq_test_read_file(ctl.log, NULL);
  size_t len = log ? strlen(log) : 0;
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  fprintf(stderr, "--- controller log (tail) ---\n%s\n---\n",
          log ? log + (len > 12000 ? len - 12000 : 0) : "");
  free(log);
  fail_msg("%s", msg);
}

/* POSTs (or anything else) a body written with single quotes. */
static json_t *call_sq(const char *method, const char *path, const char *sq,
                       int want)
{
  json_t *j = sq ? gq_test_json_sq(sq) : NULL;
  char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_t *r = gq_test_sim_call(&sim, method, path, body, want);

  free(body);
  json_decref(j);
  return r;
}

static void ns_create(const char *ns)
{
  char sq[256];

  snprintf(sq, sizeof(sq), "{'metadata':{'name':'%s'}}", ns);
  json_decref(call_sq("POST", "/api/v1/namespaces", sq, 201));
}

/* A TeamQuota named 'team' for namespace 'team'; rest is the JSON (single
 * quotes) that follows "namespaces" in its spec, e.g.
 * "'cohort':'ml','resources':[{'flavor':'*','nominal':8}]". */
static void quota_create(const char *team, const char *rest)
{
  char sq[2048];

  ns_create(team);
  snprintf(sq, sizeof(sq),
           "{'apiVersion':'gpuq.dev/v1alpha1','kind':'TeamQuota',"
           "'metadata':{'name':'%s'},'spec':{'namespaces':['%s'],%s}}",
           team, team, rest);
  json_decref(call_sq("POST", "/apis/gpuq.dev/v1alpha1/teamquotas", sq, 201));
}

/* A GpuJob in namespace ns of team ns, expected to run 3600 s; its pods
 * run until deleted (no sim.gpuq.dev/run-seconds). */
struct job {
  const char *ns, *name;
  int gpus;              /* per replica */
  int replicas;          /* 0 = 1 */
  int priority;
  const char *resource;  /* NULL = nvidia.com/gpu */
  const char *products;  /* single-quoted JSON array, or NULL */
  const char *spec;      /* single-quoted JSON merged into template.spec */
  const char *res;       /* single-quoted JSON: the container's resources */
  int min_mem;           /* spec.gpu.minMemoryMiB, 0 = none */
  const char *pclass;    /* spec.priorityClassName, or NULL */
};

static void job_create(const struct job *jb)
{
  json_t *j = gq_test_json_sq(
      "{'apiVersion':'gpuq.dev/v1alpha1','kind':'GpuJob','metadata':{},"
      "'spec':{'gpu':{},'expectedDurationSeconds':3600,'template':{'spec':"
      "{'containers':[{'name':'c','image':'x'}]}}}}");
  json_t *spec = json_object_get(j, "spec");
  json_t *tmpl = json_object_get(spec, "template");
  json_t *gpu = json_object_get(spec, "gpu");
  char path[256], *body;

  json_object_set_new(json_object_get(j, "metadata"), "name",
                      json_string(jb->name));
  json_object_set_new(json_object_get(j, "metadata"), "namespace",
                      json_string(jb->ns));
  json_object_set_new(spec, "team", json_string(jb->ns));
  json_object_set_new(spec, "gpusPerReplica", json_integer(jb->gpus));
  json_object_set_new(spec, "replicas",
                      json_integer(jb->replicas ? jb->replicas : 1));
  json_object_set_new(spec, "priority", json_integer(jb->priority));
  if (jb->resource)
    json_object_set_new(gpu, "resource", json_string(jb->resource));
  if (jb->products)
    json_object_set_new(gpu, "products", gq_test_json_sq(jb->products));
  if (jb->pclass)
    json_object_set_new(spec, "priorityClassName", json_string(jb->pclass));
  if (jb->min_mem)
    json_object_set_new(gpu, "minMemoryMiB", json_integer(jb->min_mem));
  if (jb->spec) {
    json_t *extra = gq_test_json_sq(jb->spec);

    json_object_update(json_object_get(tmpl, "spec"), extra);
    json_decref(extra);
  }
  if (jb->res)
    json_object_set_new(
        json_array_get(json_object_get(json_object_get(tmpl, "spec"),
                                       "containers"), 0),
        "resources", gq_test_json_sq(jb->res));
  body = json_dumps(j, JSON_COMPACT);
  snprintf(path, sizeof(path), JOBS, jb->ns);
  json_decref(gq_test_sim_call(&sim, "POST", path, body, 201));
  free(body);
  json_decref(j);
}

static json_t *job_get(const char *ns, const char *name)
{
  char path[256];

  snprintf(path, sizeof(path), JOBS "/%s", ns, name);
  return gq_test_sim_call(&sim, "GET", path, NULL, 200);
}

/* status.<field> of a job as a string ("" when absent or not a string). */
static void job_status(const char *ns, const char *name, const char *field,
                       char *buf, size_t len)
{
  json_t *j = job_get(ns, name);
  const char *v =
      json_string_value(json_object_get(json_object_get(j, "status"), field));

  snprintf(buf, len, "%s", v ? v : "");
  json_decref(j);
}

static void wait_status(const char *ns, const char *name, const char *field,
                        const char *want)
{
  char path[256], sfield[64], got[512], msg[1024], reason[128];

  snprintf(path, sizeof(path), JOBS "/%s", ns, name);
  snprintf(sfield, sizeof(sfield), "status.%s", field);
  if (gq_test_wait_field(&sim, path, sfield, want, WAIT_MS))
    return;
  job_status(ns, name, field, got, sizeof(got));
  job_status(ns, name, "message", msg, sizeof(msg));
  job_status(ns, name, "reason", reason, sizeof(reason));
  fail_log("%s/%s: status.%s is '%s', want '%s' (reason %s: %s)", ns, name,
           field, got, want, reason, msg);
}

static void wait_phase(const char *ns, const char *name, const char *phase)
{
  wait_status(ns, name, "phase", phase);
}

/* Asserts the job's current status field (no wait). */
static void expect_status(const char *ns, const char *name, const char *field,
                          const char *want)
{
  char got[512];

  job_status(ns, name, field, got, sizeof(got));
  if (strcmp(got, want) != 0)
    fail_log("%s/%s: status.%s is '%s', want '%s'", ns, name, field, got,
             want);
}

/* The message contains 'needle'. */
static void expect_message(const char *ns, const char *name,
                           const char *needle)
{
  char msg[1024];

  job_status(ns, name, "message", msg, sizeof(msg));
  if (!strstr(msg, needle))
    fail_log("%s/%s: status.message '%s' does not contain '%s'", ns, name,
             msg, needle);
}

/* The pods of a job (new reference: a list's items), sorted by the sim. */
static json_t *pods_of(const char *ns, const char *job)
{
  char path[300];
  json_t *l, *items;

  snprintf(path, sizeof(path),
           "/api/v1/namespaces/%s/pods?labelSelector=gpuq.dev/job%%3D%s", ns,
           job);
  l = gq_test_sim_call(&sim, "GET", path, NULL, 200);
  items = json_incref(json_object_get(l, "items"));
  json_decref(l);
  return items;
}

static size_t count_pods(const char *ns, const char *job)
{
  json_t *items = pods_of(ns, job);
  size_t n = json_array_size(items);

  json_decref(items);
  return n;
}

static const char *pod_node(const json_t *pod)
{
  const char *n =
      json_string_value(json_object_get(json_object_get(pod, "spec"),
                                        "nodeName"));
  return n ? n : "";
}

/* Waits for a one-replica job to run and asserts the node its pod is bound
 * to, and that the job's status.nodes says the same. */
static void expect_runs_on(const char *ns, const char *job, const char *node)
{
  json_t *items, *j, *nodes;

  wait_phase(ns, job, "Running");
  items = pods_of(ns, job);
  if (json_array_size(items) != 1)
    fail_log("%s/%s: %zu pods, want 1", ns, job, json_array_size(items));
  if (strcmp(pod_node(json_array_get(items, 0)), node) != 0)
    fail_log("%s/%s: pod bound to '%s', want '%s'", ns, job,
             pod_node(json_array_get(items, 0)), node);
  json_decref(items);
  j = job_get(ns, job);
  nodes = json_object_get(json_object_get(j, "status"), "nodes");
  assert_int_equal(json_array_size(nodes), 1);
  assert_string_equal(json_string_value(json_array_get(nodes, 0)), node);
  json_decref(j);
}

/* Waits for the job to be Queued with 'reason', and asserts it has no
 * pods (all or nothing). */
static void expect_waits(const char *ns, const char *job, const char *reason)
{
  wait_status(ns, job, "reason", reason);
  expect_status(ns, job, "phase", "Queued");
  if (count_pods(ns, job) != 0)
    fail_log("%s/%s: waits (%s) but has %zu pods", ns, job, reason,
             count_pods(ns, job));
}

/* Deletes a job and waits until it and its pods are gone. */
static void job_delete(const char *ns, const char *name)
{
  char path[256], url[512], *resp = NULL;
  int st = 0;

  snprintf(path, sizeof(path), JOBS "/%s", ns, name);
  json_decref(gq_test_sim_call(&sim, "DELETE", path, NULL, 200));
  snprintf(url, sizeof(url), "%s%s", sim.url, path);
  for (int t = 0; t < WAIT_MS; t += 50) {
    st = gq_test_http("GET", url, NULL, NULL, NULL, &resp);
    free(resp);
    resp = NULL;
    if (st == 404 && count_pods(ns, name) == 0)
      return;
    gq_test_sleep_ms(50);
  }
  fail_log("%s/%s: still there after delete (GET %d, %zu pods)", ns, name,
           st, count_pods(ns, name));
}

static void node_action(const char *node, const char *action)
{
  char path[256];

  snprintf(path, sizeof(path), "/sim/v1/nodes/%s/%s", node, action);
  json_decref(gq_test_sim_call(&sim, "POST", path, NULL, 200));
}

/* Applies a JSON merge patch (single quotes) to the object at path. */
static void merge_patch(const char *path, const char *sq)
{
  json_t *j = gq_test_json_sq(sq);
  char url[512], *body = json_dumps(j, JSON_COMPACT), *resp = NULL;
  int st;

  snprintf(url, sizeof(url), "%s%s", sim.url, path);
  st = gq_test_http("PATCH", url, body, "application/merge-patch+json", NULL,
                    &resp);
  if (st != 200)
    fail_msg("PATCH %s: status %d: %s", path, st, resp ? resp : "");
  free(resp);
  free(body);
  json_decref(j);
}

/* Waits until the TeamQuota's status.<field> is the integer want. */
static void wait_quota(const char *team, const char *field, long want)
{
  char path[256], sfield[64], w[32], *st;
  json_t *q;

  snprintf(path, sizeof(path), "/apis/gpuq.dev/v1alpha1/teamquotas/%s", team);
  snprintf(sfield, sizeof(sfield), "status.%s", field);
  snprintf(w, sizeof(w), "%ld", want);
  if (gq_test_wait_field(&sim, path, sfield, w, WAIT_MS))
    return;
  q = gq_test_sim_call(&sim, "GET", path, NULL, 200);
  st = json_dumps(json_object_get(q, "status"), JSON_COMPACT);
  json_decref(q);
  fprintf(stderr, "teamquota %s status: %s\n", team, st ? st : "null");
  free(st);
  fail_log("teamquota %s: status.%s is not %ld", team, field, want);
}

static void expect_clean_report(void)
{
  json_t *r = gq_test_sim_call(&sim, "GET", "/sim/v1/report", NULL, 200);
  long v = (long)json_integer_value(
      json_object_get(r, "invariant_violations"));
  long m =
      (long)json_integer_value(json_object_get(r, "placement_misses"));

  if (v != 0 || m != 0) {
    char *s = json_dumps(r, JSON_COMPACT);

    json_decref(r);
    fprintf(stderr, "sim report: %s\n", s ? s : "");
    free(s);
    fail_log("%ld invariant violations, %ld placement misses", v, m);
  }
  json_decref(r);
}

/* ---- 1. order and fair share ------------------------------------------ */

/* Within a team: the higher priority first (spec.priority, or the value
 * of spec.priorityClassName's PriorityClass), then the earlier queue time,
 * even within one second of creationTimestamp; positions say so while
 * they wait, and they run in that order. */
static void test_order_within_team(void **state)
{
  (void)state;
  quota_create("ord", "'resources':[{'flavor':'*','nominal':8}]");
  json_decref(call_sq("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                      "{'apiVersion':'scheduling.k8s.io/v1','kind':"
                      "'PriorityClass','metadata':{'name':'urgent'},"
                      "'value':100}", 201));
  job_create(&(struct job){.ns = "ord", .name = "blocker", .gpus = 8});
  wait_phase("ord", "blocker", "Running");
  job_create(&(struct job){.ns = "ord", .name = "low-early", .gpus = 8});
  wait_phase("ord", "low-early", "Queued");
  expect_waits("ord", "low-early", "WaitingForQuota");
  /* most likely within the same second of creationTimestamp */
  job_create(&(struct job){.ns = "ord", .name = "low-late", .gpus = 8});
  wait_phase("ord", "low-late", "Queued");
  job_create(&(struct job){.ns = "ord", .name = "high", .gpus = 8,
                           .priority = 10});
  job_create(&(struct job){.ns = "ord", .name = "urgent", .gpus = 8,
                           .pclass = "urgent"});
  wait_status("ord", "urgent", "queuePosition", "1");
  wait_status("ord", "high", "queuePosition", "2");
  wait_status("ord", "low-early", "queuePosition", "3");
  wait_status("ord", "low-late", "queuePosition", "4");

  job_delete("ord", "blocker");
  wait_phase("ord", "urgent", "Running");
  wait_status("ord", "high", "queuePosition", "1");
  wait_status("ord", "low-early", "queuePosition", "2");
  wait_status("ord", "low-late", "queuePosition", "3");
  expect_status("ord", "high", "phase", "Queued");

  job_delete("ord", "urgent");
  wait_phase("ord", "high", "Running");
  expect_status("ord", "low-early", "phase", "Queued");
  expect_status("ord", "low-late", "phase", "Queued");
  wait_status("ord", "low-early", "queuePosition", "1");
  wait_status("ord", "low-late", "queuePosition", "2");

  /* raising a queued job's priority moves it ahead */
  merge_patch("/apis/gpuq.dev/v1alpha1/namespaces/ord/gpujobs/low-late",
              "{'spec':{'priority':5}}");
  wait_status("ord", "low-late", "queuePosition", "1");
  wait_status("ord", "low-early", "queuePosition", "2");
  job_delete("ord", "high");
  wait_phase("ord", "low-late", "Running");
  expect_status("ord", "low-early", "phase", "Queued");
  wait_status("ord", "low-early", "queuePosition", "1");

  job_delete("ord", "low-late");
  wait_phase("ord", "low-early", "Running");
  expect_clean_report();
}

/* Two teams of one cohort (nominal 8 each) both have a head job that fits
 * the quota once GPUs free, but only one of them can have it: the team
 * within its nominal quota goes before the team that would borrow, even
 * though the borrower sorts first by name and queued first (it reclaims
 * the GPUs the borrower holds). */
static void test_fair_share_cohort(void **state)
{
  (void)state;
  quota_create("fs-a", "'cohort':'fs','resources':[{'flavor':'*',"
               "'nominal':8}]");
  quota_create("fs-z", "'cohort':'fs','resources':[{'flavor':'*',"
               "'nominal':8}]");
  job_create(&(struct job){.ns = "fs-a", .name = "own", .gpus = 8});
  wait_phase("fs-a", "own", "Running");
  job_create(&(struct job){.ns = "fs-a", .name = "borrow", .gpus = 8});
  wait_phase("fs-a", "borrow", "Running");
  wait_quota("fs-a", "borrowedGPUs", 8);
  wait_quota("fs-z", "lentGPUs", 8);
  /* the cohort's 16 GPUs are in use: both wait */
  job_create(&(struct job){.ns = "fs-a", .name = "a-next", .gpus = 8});
  expect_waits("fs-a", "a-next", "WaitingForReclaim");
  job_create(&(struct job){.ns = "fs-z", .name = "z-first", .gpus = 8});
  /* fs-z (within nominal) takes its 8 GPUs back: one of fs-a's jobs is
   * preempted (reclaimFromCohort Any, DESIGN §4) and waits again */
  wait_phase("fs-z", "z-first", "Running");
  expect_waits("fs-a", "a-next", "WaitingForReclaim");
  wait_quota("fs-a", "usedGPUs", 8);
  wait_quota("fs-z", "usedGPUs", 8);
  wait_quota("fs-a", "borrowedGPUs", 0);
  expect_clean_report();
}

/* Three teams of a cohort 'coh' (pool 16: two of nominal 4 with weights
 * w1 and w2, a lender of 8): team 1 runs 12 GPUs (8 borrowed, 4 of them
 * in job 'tmp'), team 2 runs 4; both then queue 4 more. When 'tmp' ends,
 * 4 GPUs of the pool are free for one of them; returns after checking
 * that 'winner' (a team name) got them and the other still waits. */
static void borrowers_race(const char *coh, const char *t1, int w1,
                           const char *t2, int w2, const char *winner)
{
  char rest[256], lender[64];
  const char *loser = strcmp(winner, t1) ? t1 : t2;

  snprintf(rest, sizeof(rest), "'cohort':'%s','weight':%d,'resources':"
           "[{'flavor':'*','nominal':4}]", coh, w1);
  quota_create(t1, rest);
  snprintf(rest, sizeof(rest), "'cohort':'%s','weight':%d,'resources':"
           "[{'flavor':'*','nominal':4}]", coh, w2);
  quota_create(t2, rest);
  snprintf(lender, sizeof(lender), "%s-lender", coh);
  snprintf(rest, sizeof(rest), "'cohort':'%s','resources':[{'flavor':'*',"
           "'nominal':8}]", coh);
  quota_create(lender, rest);
  job_create(&(struct job){.ns = t1, .name = "j1", .gpus = 4});
  wait_phase(t1, "j1", "Running");
  job_create(&(struct job){.ns = t1, .name = "j2", .gpus = 4});
  wait_phase(t1, "j2", "Running");
  job_create(&(struct job){.ns = t1, .name = "tmp", .gpus = 4});
  wait_phase(t1, "tmp", "Running");
  job_create(&(struct job){.ns = t2, .name = "k1", .gpus = 4});
  wait_phase(t2, "k1", "Running");
  job_create(&(struct job){.ns = t1, .name = "next", .gpus = 4});
  expect_waits(t1, "next", "WaitingForReclaim");
  job_create(&(struct job){.ns = t2, .name = "next", .gpus = 4});
  expect_waits(t2, "next", "WaitingForReclaim");
  job_delete(t1, "tmp");
  wait_phase(winner, "next", "Running");
  expect_waits(loser, "next", "WaitingForReclaim");
}

/* Among borrowers, the lowest weighted share (borrowed / pool / weight,
 * once admitted) goes first: with equal weights the team that borrows
 * less (even though it sorts second by name); with weight 4 against 1 the
 * team that would borrow more. */
static void test_fair_share_borrowers(void **state)
{
  (void)state;
  borrowers_race("w", "b1", 1, "b2", 1, "b2");
  borrowers_race("v", "v1", 4, "v2", 1, "v1");
  expect_clean_report();
}

/* ---- 2. borrowing ----------------------------------------------------- */

/* Team ml-a (nominal 8) runs a 16-GPU gang on ml-b's idle nominal: it is
 * admitted as borrowing (status reason while Admitted, the event, the
 * TeamQuotas' borrowed and lent GPUs); nothing more can be borrowed; a
 * borrowingLimit caps what a team may borrow, a lendingLimit what a team
 * lends. */
static void test_borrowing(void **state)
{
  char path[512];
  json_t *ev;
  size_t i;
  json_t *e;
  int found = 0;

  (void)state;
  quota_create("ml-a", "'cohort':'ml','resources':[{'flavor':'*',"
               "'nominal':8}]");
  quota_create("ml-b", "'cohort':'ml','resources':[{'flavor':'*',"
               "'nominal':8}]");
  /* the pods' creation is slowed down so that Admitted can be seen */
  json_decref(call_sq("POST", "/sim/v1/faults",
                      "{'verb':'create','resource':'pods','delayMs':1500,"
                      "'count':2}", 201));
  job_create(&(struct job){.ns = "ml-a", .name = "big", .gpus = 8,
                           .replicas = 2});
  wait_phase("ml-a", "big", "Admitted");
  expect_status("ml-a", "big", "reason", "AdmittedBorrowing");
  expect_message("ml-a", "big", "borrowing");
  wait_phase("ml-a", "big", "Running");
  snprintf(path, sizeof(path), "/api/v1/namespaces/ml-a/events?fieldSelector="
           "involvedObject.name%%3Dbig,reason%%3DAdmitted");
  ev = gq_test_sim_call(&sim, "GET", path, NULL, 200);
  json_array_foreach(json_object_get(ev, "items"), i, e) {
    const char *m = json_string_value(json_object_get(e, "message"));

    found |= m && strstr(m, "borrowing") != NULL;
  }
  json_decref(ev);
  if (!found)
    fail_log("no Admitted event of ml-a/big says borrowing");
  wait_quota("ml-a", "usedGPUs", 16);
  wait_quota("ml-a", "borrowedGPUs", 8);
  wait_quota("ml-a", "nominalGPUs", 8);
  wait_quota("ml-b", "lentGPUs", 8);
  wait_quota("ml-b", "usedGPUs", 0);
  wait_quota("ml-a", "runningJobs", 1);
  /* the pool is used up: not one more GPU */
  job_create(&(struct job){.ns = "ml-a", .name = "more", .gpus = 1});
  expect_waits("ml-a", "more", "WaitingForReclaim");
  wait_quota("ml-a", "pendingJobs", 1);
  job_delete("ml-a", "big");
  expect_runs_on("ml-a", "more", "gpu-a100-mig-00");
  expect_status("ml-a", "more", "reason", "Running");
  wait_quota("ml-a", "borrowedGPUs", 0);
  wait_quota("ml-b", "lentGPUs", 0);

  /* borrowingLimit 4: 12 GPUs fit (4 borrowed), 8 more do not */
  quota_create("lim", "'cohort':'lc','resources':[{'flavor':'*',"
               "'nominal':8,'borrowingLimit':4}]");
  quota_create("lender", "'cohort':'lc','resources':[{'flavor':'*',"
               "'nominal':16}]");
  job_create(&(struct job){.ns = "lim", .name = "fits", .gpus = 4,
                           .replicas = 3});
  wait_phase("lim", "fits", "Running");
  wait_quota("lim", "borrowedGPUs", 4);
  job_create(&(struct job){.ns = "lim", .name = "too-big", .gpus = 8});
  expect_waits("lim", "too-big", "BorrowingLimitReached");

  /* lendingLimit 4: a lender of 8 lends at most 4 */
  quota_create("lend4", "'cohort':'ll','resources':[{'flavor':'*',"
               "'nominal':8,'lendingLimit':4}]");
  quota_create("brw", "'cohort':'ll','resources':[{'flavor':'*',"
               "'nominal':4}]");
  job_create(&(struct job){.ns = "brw", .name = "x1", .gpus = 4});
  wait_phase("brw", "x1", "Running");
  job_create(&(struct job){.ns = "brw", .name = "x2", .gpus = 4});
  wait_phase("brw", "x2", "Running");
  wait_quota("brw", "borrowedGPUs", 4);
  wait_quota("lend4", "lentGPUs", 4);
  job_create(&(struct job){.ns = "brw", .name = "x3", .gpus = 1});
  expect_waits("brw", "x3", "WaitingForReclaim");
  /* the lender's guaranteed half is its own at once */
  job_create(&(struct job){.ns = "lend4", .name = "own", .gpus = 4});
  wait_phase("lend4", "own", "Running");
  expect_clean_report();
}

/* Quota lines per GPU product: a job without spec.gpu.products takes the
 * first line whose quota allows it and whose nodes hold it, and runs on
 * that line's product; a job whose products no line accepts can never
 * run there. */
static void test_flavors(void **state)
{
  (void)state;
  quota_create("fl", "'resources':[{'flavor':'" H100 "','nominal':8},"
               "{'flavor':'" A100 "','nominal':8}]");
  job_create(&(struct job){.ns = "fl", .name = "f1", .gpus = 8});
  expect_runs_on("fl", "f1", "gpu-h100-00");
  job_create(&(struct job){.ns = "fl", .name = "f2", .gpus = 8});
  expect_runs_on("fl", "f2", "gpu-a100-00");
  job_create(&(struct job){.ns = "fl", .name = "f3", .gpus = 8});
  expect_waits("fl", "f3", "WaitingForQuota");
  wait_quota("fl", "usedGPUs", 16);
  wait_quota("fl", "nominalGPUs", 16);
  job_delete("fl", "f1");
  expect_runs_on("fl", "f3", "gpu-h100-00");

  /* only A100 quota: H100 capacity does not help, T4 jobs never run */
  quota_create("fa", "'resources':[{'flavor':'" A100 "','nominal':16}]");
  job_create(&(struct job){.ns = "fa", .name = "t4", .gpus = 1,
                           .products = "['Tesla-T4']"});
  expect_waits("fa", "t4", "NoMatchingQuota");
  job_delete("fa", "t4");
  job_create(&(struct job){.ns = "fa", .name = "a1", .gpus = 8});
  expect_runs_on("fa", "a1", "gpu-a100-01");
  expect_clean_report();
}

/* Which team a job may use: an unknown team waits (UnknownTeam, naming
 * the teams that exist) until its TeamQuota appears; a namespace the
 * TeamQuota does not list fails the job; nominal 0 without borrowing
 * waits with a reason that says so; nominal 0 in a cohort runs on
 * borrowed GPUs only. */
/* A job no quota line could ever hold (more than nominal, no cohort) waits
 * with reason ExceedsQuota and does not hold back the smaller job behind it
 * (strict order within a team applies to jobs that can fit one day). */
static void test_exceeds_quota(void **state)
{
  (void)state;
  quota_create("ex", "'resources':[{'flavor':'*','nominal':2}]");
  job_create(&(struct job){.ns = "ex", .name = "huge", .gpus = 4});
  expect_waits("ex", "huge", "ExceedsQuota");
  expect_message("ex", "huge", "'ex'");
  job_create(&(struct job){.ns = "ex", .name = "small", .gpus = 1});
  wait_phase("ex", "small", "Running");
  expect_waits("ex", "huge", "ExceedsQuota");
  expect_clean_report();
}

static void test_team_rules(void **state)
{
  (void)state;
  quota_create("real", "'resources':[{'flavor':'*','nominal':8}]");
  ns_create("ghost");
  job_create(&(struct job){.ns = "ghost", .name = "lost", .gpus = 1});
  expect_waits("ghost", "lost", "UnknownTeam");
  expect_message("ghost", "lost", "'ghost'");
  expect_message("ghost", "lost", "'real'");
  json_decref(call_sq("POST", "/apis/gpuq.dev/v1alpha1/teamquotas",
                      "{'apiVersion':'gpuq.dev/v1alpha1','kind':'TeamQuota',"
                      "'metadata':{'name':'ghost'},'spec':{'namespaces':"
                      "['ghost'],'resources':[{'flavor':'*','nominal':1}]}}",
                      201));
  wait_phase("ghost", "lost", "Running");

  /* namespace 'ghost' may not use team 'real' */
  {
    json_t *j = gq_test_json_sq(
        "{'apiVersion':'gpuq.dev/v1alpha1','kind':'GpuJob','metadata':"
        "{'name':'stray','namespace':'ghost'},'spec':{'team':'real',"
        "'gpusPerReplica':1,'template':{'spec':{'containers':[{'name':'c',"
        "'image':'x'}]}}}}");
    char *body = json_dumps(j, JSON_COMPACT);

    json_decref(gq_test_sim_call(&sim, "POST",
        "/apis/gpuq.dev/v1alpha1/namespaces/ghost/gpujobs", body, 201));
    free(body);
    json_decref(j);
  }
  wait_phase("ghost", "stray", "Failed");
  expect_status("ghost", "stray", "reason", "Forbidden");
  assert_int_equal(count_pods("ghost", "stray"), 0);

  quota_create("zero", "'resources':[{'flavor':'*','nominal':0}]");
  job_create(&(struct job){.ns = "zero", .name = "never", .gpus = 1});
  expect_waits("zero", "never", "QuotaZeroNoBorrowing");
  /* raising the quota admits it */
  merge_patch("/apis/gpuq.dev/v1alpha1/teamquotas/zero",
              "{'spec':{'resources':[{'flavor':'*','nominal':1}]}}");
  wait_phase("zero", "never", "Running");
  job_create(&(struct job){.ns = "zero", .name = "more", .gpus = 2});
  expect_waits("zero", "more", "ExceedsQuota");

  quota_create("zb", "'cohort':'zc','resources':[{'flavor':'*',"
               "'nominal':0}]");
  quota_create("zl", "'cohort':'zc','resources':[{'flavor':'*',"
               "'nominal':8}]");
  job_create(&(struct job){.ns = "zb", .name = "guest", .gpus = 4});
  wait_phase("zb", "guest", "Running");
  wait_quota("zb", "borrowedGPUs", 4);
  wait_quota("zl", "lentGPUs", 4);
  /* team 'zero' joins the cohort: it may borrow now */
  merge_patch("/apis/gpuq.dev/v1alpha1/teamquotas/zero",
              "{'spec':{'cohort':'zc'}}");
  wait_phase("zero", "more", "Running");
  wait_quota("zero", "borrowedGPUs", 2);
  expect_clean_report();
}

/* Waits for an event of the job with the given reason. */
static void wait_event(const char *ns, const char *job, const char *reason)
{
  char path[512];

  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events?fieldSelector="
           "involvedObject.name%%3D%s,reason%%3D%s", ns, job, reason);
  for (int t = 0; t < WAIT_MS; t += 20) {
    json_t *ev = gq_test_sim_call(&sim, "GET", path, NULL, 200);
    size_t n = json_array_size(json_object_get(ev, "items"));

    json_decref(ev);
    if (n > 0)
      return;
    gq_test_sleep_ms(20);
  }
  fail_log("%s/%s: no %s event", ns, job, reason);
}

/* A job deleted while its admission is in flight in Redis (Redis paused):
 * what was assumed for it on its node is given back, so the next job
 * that needs that node runs there. */
static void test_delete_while_admitting(void **state)
{
  char *r;

  (void)state;
  quota_create("da", "'resources':[{'flavor':'*','nominal':16}]");
  job_create(&(struct job){.ns = "da", .name = "first", .gpus = 1});
  wait_phase("da", "first", "Running");
  r = gq_test_redis_cmd(&redis, "CLIENT PAUSE 3000");
  assert_non_null(r);
  assert_string_equal(r, "OK");
  free(r);
  job_create(&(struct job){.ns = "da", .name = "ghost", .gpus = 8,
                           .spec = "{'nodeSelector':{'kubernetes.io/"
                                   "hostname':'gpu-a100-03'}}"});
  wait_event("da", "ghost", "Admitted"); /* decided; Redis has not answered */
  job_delete("da", "ghost");
  for (int t = 0; t < WAIT_MS; t += 100) { /* until the pause ends */
    r = gq_test_redis_cmd(&redis, "PING");
    if (r && !strcmp(r, "PONG"))
      break;
    free(r);
    r = NULL;
    gq_test_sleep_ms(100);
  }
  assert_non_null(r);
  free(r);
  job_create(&(struct job){.ns = "da", .name = "after", .gpus = 8,
                           .spec = "{'nodeSelector':{'kubernetes.io/"
                                   "hostname':'gpu-a100-03'}}"});
  expect_runs_on("da", "after", "gpu-a100-03");
  wait_quota("da", "usedGPUs", 9);
  expect_clean_report();
}

/* ---- 3. gangs --------------------------------------------------------- */

static const char *env_of(const json_t *container, const char *name)
{
  size_t i;
  json_t *e;

  json_array_foreach(json_object_get(container, "env"), i, e) {
    if (!strcmp(json_string_value(json_object_get(e, "name")) ?: "", name))
      return json_string_value(json_object_get(e, "value"));
  }
  return NULL;
}

/* Checks the wiring of a running gang of 'n' replicas whose Service is
 * 'svc': the headless Service exists, every pod has hostname = its name
 * and subdomain = svc, and the distributed-training environment. Returns
 * the nodes of replicas 0 and 1 in node0/node1 (64 bytes each). */
static void expect_wiring(const char *ns, const char *job, const char *svc,
                          int n, char *node0, char *node1)
{
  json_t *items, *pod, *sv;
  size_t i;
  char path[300], name0[128] = "", master[400], want_n[16];

  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/services/%s", ns, svc);
  sv = gq_test_sim_call(&sim, "GET", path, NULL, 200);
  assert_string_equal(json_string_value(json_object_get(
                          json_object_get(sv, "spec"), "clusterIP")), "None");
  json_decref(sv);
  items = pods_of(ns, job);
  assert_int_equal(json_array_size(items), n);
  json_array_foreach(items, i, pod) {
    const json_t *md = json_object_get(pod, "metadata");
    const char *rep = json_string_value(json_object_get(
        json_object_get(md, "labels"), "gpuq.dev/replica"));

    assert_non_null(rep);
    if (!strcmp(rep, "0")) {
      snprintf(name0, sizeof(name0), "%s",
               json_string_value(json_object_get(md, "name")));
      snprintf(node0, 64, "%s", pod_node(pod));
    } else if (!strcmp(rep, "1")) {
      snprintf(node1, 64, "%s", pod_node(pod));
    }
  }
  assert_true(name0[0] != '\0');
  snprintf(master, sizeof(master), "%s.%s.%s.svc", name0, svc, ns);
  snprintf(want_n, sizeof(want_n), "%d", n);
  json_array_foreach(items, i, pod) {
    const json_t *md = json_object_get(pod, "metadata");
    const json_t *sp = json_object_get(pod, "spec");
    const json_t *c = json_array_get(json_object_get(sp, "containers"), 0);
    const char *rep = json_string_value(json_object_get(
        json_object_get(md, "labels"), "gpuq.dev/replica"));
    const char *const want[][2] = {
        {"RANK", rep},         {"GPUQ_REPLICA", rep},
        {"WORLD_SIZE", want_n}, {"GPUQ_REPLICAS", want_n},
        {"MASTER_ADDR", master}, {"MASTER_PORT", "29500"}};
    const json_t *own =
        json_array_get(json_object_get(md, "ownerReferences"), 0);
    const json_t *res = json_object_get(c, "resources");
    const json_t *gpu_req = json_object_get(json_object_get(res, "requests"),
                                            "nvidia.com/gpu");

    /* DESIGN §3: controller owner, labels, GPU requests = limits */
    assert_true(json_is_true(json_object_get(own, "controller")));
    assert_string_equal(json_string_value(json_object_get(own, "kind")),
                        "GpuJob");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(md, "labels"), "gpuq.dev/team")),
                        ns);
    assert_non_null(gpu_req);
    assert_true(json_equal(gpu_req,
                           json_object_get(json_object_get(res, "limits"),
                                           "nvidia.com/gpu")));
    assert_string_equal(json_string_value(json_object_get(sp, "hostname")),
                        json_string_value(json_object_get(md, "name")));
    assert_string_equal(json_string_value(json_object_get(sp, "subdomain")),
                        svc);
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
      const char *v = env_of(c, want[k][0]);

      if (!v || strcmp(v, want[k][1]) != 0)
        fail_log("%s/%s replica %s: env %s is '%s', want '%s'", ns, job, rep,
                 want[k][0], v ? v : "(unset)", want[k][1]);
    }
  }
  json_decref(items);
}

/* A 2 x 8 GPU gang on H100 nodes while only one of them is free: it waits
 * for capacity with no pod at all, with the time the first filler is
 * expected to end as its estimated start; when a second node frees it is
 * placed on both, wired for distributed training. */
static void test_gang(void **state)
{
  json_t *j;
  char node0[64] = "", node1[64] = "", eta[64], start[64], uid[64], svc[64];
  int64_t eta_ms, start_ms;

  (void)state;
  quota_create("g", "'resources':[{'flavor':'*','nominal':64}]");
  for (int k = 0; k < 3; k++) {
    char name[16], node[32];

    snprintf(name, sizeof(name), "fill-%d", k);
    snprintf(node, sizeof(node), "gpu-h100-%02d", k);
    job_create(&(struct job){.ns = "g", .name = name, .gpus = 8,
                             .products = "['" H100 "']"});
    expect_runs_on("g", name, node);
  }
  /* free for 8 H100 GPUs: gpu-h100-03 only (gpu-h100-r12-n04 has 7) */
  job_create(&(struct job){.ns = "g", .name = "gang", .gpus = 8,
                           .replicas = 2, .products = "['" H100 "']"});
  expect_waits("g", "gang", "WaitingForCapacity");
  expect_message("g", "gang", "gang of 2 replicas");
  j = job_get("g", "gang");
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(j, "status"), "gpus")), 16);
  json_decref(j);
  /* fill-0 started first and is expected to run 3600 s: then two nodes */
  job_status("g", "fill-0", "startTime", start, sizeof(start));
  for (int t = 0; t < WAIT_MS; t += 50) {
    job_status("g", "gang", "estimatedStartTime", eta, sizeof(eta));
    if (*eta)
      break;
    gq_test_sleep_ms(50);
  }
  assert_int_equal(gq_time_parse(start, &start_ms), 0);
  if (gq_time_parse(eta, &eta_ms) != 0 || eta_ms != start_ms + 3600 * 1000)
    fail_log("gang: estimatedStartTime '%s', want fill-0's startTime %s + "
             "3600 s", eta, start);
  assert_int_equal(count_pods("g", "gang"), 0);

  job_delete("g", "fill-1");
  wait_phase("g", "gang", "Running");
  expect_wiring("g", "gang", "gang", 2, node0, node1);
  /* the two free whole H100 nodes, one replica each */
  if (!((!strcmp(node0, "gpu-h100-01") && !strcmp(node1, "gpu-h100-03")) ||
        (!strcmp(node0, "gpu-h100-03") && !strcmp(node1, "gpu-h100-01"))))
    fail_log("gang on %s and %s, want gpu-h100-01 and gpu-h100-03", node0,
             node1);
  expect_status("g", "gang", "estimatedStartTime", "");

  /* a name that is no DNS label: the Service gets a derived name */
  job_create(&(struct job){.ns = "g", .name = "llama.ft", .gpus = 1,
                           .replicas = 3});
  wait_phase("g", "llama.ft", "Running");
  j = job_get("g", "llama.ft");
  snprintf(uid, sizeof(uid), "%s",
           json_string_value(json_object_get(json_object_get(j, "metadata"),
                                             "uid")));
  json_decref(j);
  snprintf(svc, sizeof(svc), "gj-llama-ft-%.8s", uid);
  expect_wiring("g", "llama.ft", svc, 3, node0, node1);
  expect_clean_report();
}

/* ---- 4. MIG ------------------------------------------------------------ */

/* Jobs asking for MIG slices land on the MIG node and request exactly
 * their slices (no whole GPU); one asking for more slices than any node
 * has waits for capacity; the slices' own quota line applies. */
static void test_mig(void **state)
{
  json_t *items, *res;

  (void)state;
  quota_create("mig", "'resources':["
               "{'flavor':'*','resource':'nvidia.com/mig-1g.10gb',"
               "'nominal':4},"
               "{'flavor':'*','resource':'nvidia.com/mig-3g.40gb',"
               "'nominal':2},{'flavor':'*','nominal':8}]");
  job_create(&(struct job){.ns = "mig", .name = "small", .gpus = 2,
                           .resource = "nvidia.com/mig-1g.10gb"});
  expect_runs_on("mig", "small", "gpu-a100-mig-00");
  items = pods_of("mig", "small");
  res = json_object_get(json_object_get(json_array_get(json_object_get(
            json_object_get(json_array_get(items, 0), "spec"), "containers"),
            0), "resources"), "requests");
  assert_string_equal(json_string_value(json_object_get(
                          res, "nvidia.com/mig-1g.10gb")), "2");
  assert_null(json_object_get(res, "nvidia.com/gpu"));
  json_decref(items);
  job_create(&(struct job){.ns = "mig", .name = "half", .gpus = 1,
                           .resource = "nvidia.com/mig-3g.40gb"});
  expect_runs_on("mig", "half", "gpu-a100-mig-00");
  /* a MIG job restricted to H100 products has no node */
  job_create(&(struct job){.ns = "mig", .name = "h100mig", .gpus = 1,
                           .resource = "nvidia.com/mig-1g.10gb",
                           .products = "['" H100 "']"});
  expect_waits("mig", "h100mig", "WaitingForCapacity");
  job_delete("mig", "h100mig");
  /* 2 of 4 mig-1g.10gb slices in use: 3 more exceed the quota; a job
   * behind it that would fit waits its turn (strict order in a team) */
  job_create(&(struct job){.ns = "mig", .name = "toomany", .gpus = 3,
                           .resource = "nvidia.com/mig-1g.10gb"});
  expect_waits("mig", "toomany", "WaitingForQuota");
  job_create(&(struct job){.ns = "mig", .name = "behind", .gpus = 2,
                           .resource = "nvidia.com/mig-1g.10gb"});
  wait_status("mig", "behind", "queuePosition", "2");
  expect_status("mig", "behind", "phase", "Queued");
  assert_int_equal(count_pods("mig", "behind"), 0);
  job_delete("mig", "small");
  /* quota now allows 3, and the node has 4 free slices */
  expect_runs_on("mig", "toomany", "gpu-a100-mig-00");
  expect_waits("mig", "behind", "WaitingForQuota");
  expect_clean_report();
}

/* ---- 5. taints, affinity, cordons, device plugin loss ------------------ */

/* Tolerates the taint of the T4 nodes. */
#define T4_TOLERATION                                                      \
  "{'tolerations':[{'key':'nvidia.com/gpu','operator':'Exists',"           \
  "'effect':'NoSchedule'}]}"

/* A template spec with one required node affinity term holding one
 * matchExpression (single-quoted JSON members). */
#define REQUIRED_TERM(expr)                                                \
  "{'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuring"   \
  "Execution':{'nodeSelectorTerms':[{'matchExpressions':[{" expr "}]}]}}}}"

static void test_node_rules(void **state)
{
  (void)state;
  quota_create("nr", "'resources':[{'flavor':'*','nominal':80}]");

  /* tainted T4 nodes: only with a toleration */
  job_create(&(struct job){.ns = "nr", .name = "t4-plain", .gpus = 1,
                           .products = "['Tesla-T4']"});
  expect_waits("nr", "t4-plain", "WaitingForCapacity");
  expect_message("nr", "t4-plain", "taint");
  job_create(&(struct job){.ns = "nr", .name = "t4-tol", .gpus = 1,
                           .products = "['Tesla-T4']",
                           .spec = T4_TOLERATION});
  expect_runs_on("nr", "t4-tol", "gpu-t4-00");
  expect_waits("nr", "t4-plain", "WaitingForCapacity");

  /* device plugin gone on gpu-h100-00, gpu-h100-01 cordoned */
  node_action("gpu-h100-00", "device-plugin-loss");
  node_action("gpu-h100-01", "cordon");
  job_create(&(struct job){.ns = "nr", .name = "h-1", .gpus = 8,
                           .products = "['" H100 "']"});
  expect_runs_on("nr", "h-1", "gpu-h100-02");
  job_create(&(struct job){.ns = "nr", .name = "h-2", .gpus = 8,
                           .products = "['" H100 "']"});
  expect_runs_on("nr", "h-2", "gpu-h100-03");
  job_create(&(struct job){.ns = "nr", .name = "h-3", .gpus = 8,
                           .products = "['" H100 "']"});
  expect_waits("nr", "h-3", "WaitingForCapacity");
  node_action("gpu-h100-00", "device-plugin-restore");
  expect_runs_on("nr", "h-3", "gpu-h100-00");
  job_create(&(struct job){.ns = "nr", .name = "h-4", .gpus = 8,
                           .products = "['" H100 "']"});
  expect_waits("nr", "h-4", "WaitingForCapacity");
  expect_message("nr", "h-4", "unschedulable");
  node_action("gpu-h100-01", "uncordon");
  expect_runs_on("nr", "h-4", "gpu-h100-01");

  /* a NotReady node gets nothing */
  node_action("gpu-a100-00", "notready");
  job_create(&(struct job){.ns = "nr", .name = "a-1", .gpus = 8,
                           .products = "['" A100 "']"});
  expect_runs_on("nr", "a-1", "gpu-a100-01");
  node_action("gpu-a100-00", "ready");
  /* nodeSelector (best fit alone would take gpu-a100-00) */
  job_create(&(struct job){.ns = "nr", .name = "sel", .gpus = 8,
                           .spec = "{'nodeSelector':{'kubernetes.io/"
                                   "hostname':'gpu-a100-02'}}"});
  expect_runs_on("nr", "sel", "gpu-a100-02");
  /* required node affinity: not gpu-a100-00 or -01, so gpu-a100-03 */
  job_create(&(struct job){.ns = "nr", .name = "aff", .gpus = 8,
                           .products = "['" A100 "']",
                           .spec = REQUIRED_TERM(
                               "'key':'kubernetes.io/hostname',"
                               "'operator':'NotIn','values':['gpu-a100-00',"
                               "'gpu-a100-01']")});
  expect_runs_on("nr", "aff", "gpu-a100-03");
  /* an affinity no node matches: waits */
  job_create(&(struct job){.ns = "nr", .name = "nowhere", .gpus = 1,
                           .spec = REQUIRED_TERM(
                               "'key':'rack','operator':'In',"
                               "'values':['r9']")});
  expect_waits("nr", "nowhere", "WaitingForCapacity");
  expect_message("nr", "nowhere", "affinity");
  /* GPU memory: 7 GPUs fit gpu-h100-r12-n04 best, but its 81559 MiB are
   * below 81600: gpu-a100-00 (81920 MiB) */
  job_create(&(struct job){.ns = "nr", .name = "mem", .gpus = 7,
                           .min_mem = 81600});
  expect_runs_on("nr", "mem", "gpu-a100-00");
  job_create(&(struct job){.ns = "nr", .name = "mem-none", .gpus = 1,
                           .min_mem = 90000});
  expect_waits("nr", "mem-none", "WaitingForCapacity");
  expect_message("nr", "mem-none", "GPU memory");
  expect_clean_report();
}

/* ---- 6. CPU and memory fit --------------------------------------------- */

/* Pods that are not gpuq's take 200 of gpu-a100-00's 255 CPUs and one
 * GPU of gpu-a100-01: a job asking for 8 GPUs and 150 CPUs goes to
 * gpu-a100-02; on H100 nodes (128 CPUs) it never fits, nor does a T4 job
 * asking for more memory than T4 nodes have. */
static void test_cpu_memory_fit(void **state)
{
  (void)state;
  quota_create("cpu", "'resources':[{'flavor':'*','nominal':64}]");
  json_decref(call_sq("POST", "/api/v1/namespaces/cpu/pods",
                      "{'apiVersion':'v1','kind':'Pod','metadata':{'name':"
                      "'hog'},'spec':{'nodeSelector':{'kubernetes.io/"
                      "hostname':'gpu-a100-00'},'containers':[{'name':'c',"
                      "'image':'x','resources':{'requests':{'cpu':'200'}}}]}}",
                      201));
  assert_true(gq_test_wait_field(&sim, "/api/v1/namespaces/cpu/pods/hog",
                                 "status.phase", "Running", WAIT_MS));
  /* and one that is not gpuq's takes a GPU of gpu-a100-01 */
  json_decref(call_sq("POST", "/api/v1/namespaces/cpu/pods",
                      "{'apiVersion':'v1','kind':'Pod','metadata':{'name':"
                      "'gpu-hog'},'spec':{'nodeSelector':{'kubernetes.io/"
                      "hostname':'gpu-a100-01'},'containers':[{'name':'c',"
                      "'image':'x','resources':{'limits':{'nvidia.com/gpu':"
                      "'1'}}}]}}", 201));
  assert_true(gq_test_wait_field(&sim, "/api/v1/namespaces/cpu/pods/gpu-hog",
                                 "status.phase", "Running", WAIT_MS));
  job_create(&(struct job){.ns = "cpu", .name = "wide", .gpus = 8,
                           .res = "{'requests':{'cpu':'150',"
                                  "'memory':'100Gi'}}"});
  expect_runs_on("cpu", "wide", "gpu-a100-02");
  job_create(&(struct job){.ns = "cpu", .name = "wide-h100", .gpus = 8,
                           .products = "['" H100 "']",
                           .res = "{'requests':{'cpu':'150'}}"});
  expect_waits("cpu", "wide-h100", "WaitingForCapacity");
  expect_message("cpu", "wide-h100", "Insufficient cpu");
  job_create(&(struct job){.ns = "cpu", .name = "t4-mem", .gpus = 1,
                           .products = "['Tesla-T4']",
                           .spec = "{'tolerations':[{'operator':'Exists'}]}",
                           .res = "{'requests':{'memory':'20Gi'}}"});
  expect_waits("cpu", "t4-mem", "WaitingForCapacity");
  expect_message("cpu", "t4-mem", "Insufficient memory");
  job_create(&(struct job){.ns = "cpu", .name = "t4-ok", .gpus = 1,
                           .products = "['Tesla-T4']",
                           .spec = "{'tolerations':[{'operator':'Exists'}]}",
                           .res = "{'requests':{'memory':'10Gi','cpu':'3'}}"});
  expect_runs_on("cpu", "t4-ok", "gpu-t4-00");
  expect_clean_report();
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_order_within_team, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fair_share_cohort, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fair_share_borrowers, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_borrowing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_flavors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_team_rules, setup, teardown),
      cmocka_unit_test_setup_teardown(test_exceeds_quota, setup, teardown),
      cmocka_unit_test_setup_teardown(test_delete_while_admitting, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_gang, setup, teardown),
      cmocka_unit_test_setup_teardown(test_mig, setup, teardown),
      cmocka_unit_test_setup_teardown(test_node_rules, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cpu_memory_fit, setup, teardown),
  };

  if (getenv("GQ_TEST_FILTER")) /* e.g. GQ_TEST_FILTER=test_gang */
    cmocka_set_test_filter(getenv("GQ_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
