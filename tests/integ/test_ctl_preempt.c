/* gpuq-controller end to end, preemption and drains (issue 8, DESIGN §4,
 * §5): against gpuq-sim (kubelets that checkpoint on SIGTERM and write
 * checkpoint=sim://... termination messages) and a private redis-server,
 * with the real kubectl for cordon and drain, each test on a fresh cluster:
 *   - a cordon alone changes nothing for a running job; kubectl drain of
 *     the node of a checkpointing 2-replica job completes on its own and
 *     the job resumes elsewhere from the checkpoint written at the drain,
 *     losing (almost) no work; a drain whose grace period is too short for
 *     the checkpoint resumes it from the previous one, and says so;
 *   - priority preemption when capacity (not quota) is short takes the
 *     lower-priority job with the least work at risk, and only it; its GPUs
 *     are reserved for the preemptor while it checkpoints, and it is not
 *     admitted again before the preemptor is done with them;
 *   - a lender takes its borrowed GPUs back (reclaimFromCohort Any), from
 *     the borrower's job with the least work at risk; a team at its nominal
 *     quota keeps its other jobs;
 *   - a node-removal taint (ToBeDeletedByClusterAutoscaler) checkpoints
 *     and requeues the jobs there at once;
 *   - drainPolicy Wait: gpuq's PodDisruptionBudget makes kubectl drain
 *     wait while the job runs; --drain-wait after the cordon gpuq
 *     checkpoints it, and the drain completes;
 *   - a terminating pod on a NotReady node is force-deleted after
 *     --notready-timeout, and its job runs again elsewhere;
 *   - a drained high-priority job keeps its place: GPUs that free while it
 *     checkpoints go to it, not to a waiting lower-priority job;
 *   - 5 preemptions of a job with backoffLimit 0: each replica exits 0
 *     after SIGTERM (a checkpoint, not a success), none counts as a
 *     failure, and /metrics counts them;
 *   - the excess of a team whose quota an admin lowered is reclaimed by a
 *     lender;
 *   - a device-plugin loss leaves running pods alone, and nothing new goes
 *     to that node;
 *   - staggered victim exits: the victim that is gone first does not get
 *     its GPUs back while the other still checkpoints (no thrashing);
 *   - drainPolicy Requeue without a checkpoint: a drain requeues the job,
 *     which starts over, and its lost work is counted.
 * The clock runs 10x (virtual seconds in the job specs) in the sim and the
 * controller alike (both get clock_args: virtual time is the same function
 * of the real clock in both). Every wait is for a condition, with a
 * deadline, or for virtual time to pass: gq_test_sim_wait_virtual()
 * answers once the sim has done its work up to then (never a real sleep,
 * which a loaded machine can outrun). Each test ends with the sim's report
 * (invariant violations, placement misses) and a clean controller exit.
 *
 * Debugging: GQ_TEST_FILTER=<glob> runs only the matching tests,
 * GQ_TEST_LOGS=1 prints the events and logs even when a test passes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/support/fixture.h"
#include "tests/support/proc.h"
#include "tests/support/redis.h"

#define WAIT_MS 30000
#define GJ "/apis/gpuq.dev/v1alpha1"
#define NS "team-a"

static const char *const clock_args[] = {"--time-scale", "10", "--time-epoch",
                                         "1800000000", NULL};

static struct {
  char dir[256];
  struct gq_test_sim sim;
  struct gq_test_redis redis;
  struct gq_test_ctl ctl;
  int up, passed;
} w;

/* ---- the world ----------------------------------------------------------- */

/* Nodes "name:gpus" (H100s), Redis, the sim, namespace team-a, the
 * controller (with extra arguments, may be NULL). */
static void world_up(const char *const *nodes, const char *const *extra)
{
  const char *tmp = getenv("TMPDIR");
  const char *args[24];
  char cluster[320];
  int n = 0;
  FILE *f;

  memset(&w, 0, sizeof(w));
  snprintf(w.dir, sizeof(w.dir), "%s/gpuq-preempt-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  assert_non_null(mkdtemp(w.dir));
  snprintf(cluster, sizeof(cluster), "%s/cluster.yaml", w.dir);
  f = fopen(cluster, "w");
  assert_non_null(f);
  fprintf(f, "nodes: []\ngroups:\n");
  for (; *nodes; nodes++) {
    const char *colon = strchr(*nodes, ':');

    fprintf(f, "- {count: 1, prefix: '%.*s', cpu: '128', memory: 2000Gi, "
            "pods: 110, gpu: {product: NVIDIA-H100-80GB-HBM3, memoryMiB: "
            "81559, count: %s}}\n", (int)(colon - *nodes), *nodes, colon + 1);
  }
  fclose(f);
  args[n++] = "--cluster";
  args[n++] = cluster;
  for (int i = 0; clock_args[i]; i++)
    args[n++] = clock_args[i];
  args[n] = NULL;
  w.up = 1;
  assert_int_equal(gq_test_redis_start(&w.redis, NULL), 0);
  assert_int_equal(gq_test_sim_start(&w.sim, args), 0);
  json_decref(gq_test_sim_call(&w.sim, "POST", "/api/v1/namespaces",
                               "{\"metadata\":{\"name\":\"" NS "\"}}", 201));
  n = 0;
  for (int i = 0; clock_args[i]; i++)
    args[n++] = clock_args[i];
  for (; extra && *extra && n < 23; extra++)
    args[n++] = *extra;
  args[n] = NULL;
  assert_int_equal(gq_test_ctl_start(&w.ctl, &w.sim, w.redis.url, 1, args),
                   0);
}

static void print_file(const char *what, const char *path)
{
  char *text = gq_test_read_file(path, NULL);

  fprintf(stderr, "---- %s ----\n%s\n", what, text ? text : "");
  free(text);
}

static int world_down(void **state)
{
  (void)state;
  if (!w.up)
    return 0;
  if (!w.passed || getenv("GQ_TEST_LOGS")) {
    json_t *l = gq_test_sim_call(&w.sim, "GET", "/api/v1/namespaces/" NS
                                 "/events", NULL, 200), *e;
    size_t i;

    json_array_foreach(json_object_get(l, "items"), i, e)
      fprintf(stderr, "event %s %s: %s\n",
              json_string_value(json_object_get(json_object_get(e,
                  "involvedObject"), "name")) ?: "",
              json_string_value(json_object_get(e, "reason")) ?: "",
              json_string_value(json_object_get(e, "message")) ?: "");
    json_decref(l);
    print_file("controller log", w.ctl.log);
    print_file("sim log", w.sim.log);
  }
  gq_test_ctl_stop(&w.ctl);
  gq_test_sim_stop(&w.sim);
  gq_test_redis_stop(&w.redis);
  gq_test_rmtree(w.dir);
  w.up = 0;
  return 0;
}

/* ---- objects and reading them back --------------------------------------- */

/* POSTs single-quoted JSON to path. */
static void post_sq(const char *path, const char *sq)
{
  json_t *o = gq_test_json_sq(sq);
  char *body = json_dumps(o, JSON_COMPACT);

  json_decref(gq_test_sim_call(&w.sim, "POST", path, body, 201));
  free(body);
  json_decref(o);
}

/* TeamQuota 'team' for namespace team-a: nominal GPUs of any flavor; rest:
 * more spec members (single quotes, leading comma), or "". */
static void quota(const char *team, int nominal, const char *rest)
{
  char buf[1024];

  snprintf(buf, sizeof(buf), "{'apiVersion':'gpuq.dev/v1alpha1','kind':"
           "'TeamQuota','metadata':{'name':'%s'},'spec':{'namespaces':['"
           NS "'],'resources':[{'flavor':'*','nominal':%d}]%s}}", team,
           nominal, rest);
  post_sq(GJ "/teamquotas", buf);
}

struct job {
  const char *name, *team; /* team NULL = team-a */
  int replicas, gpus, run_s, priority;
  int ckpt_s;  /* sim: seconds to write a checkpoint after SIGTERM; 0 none */
  int grace_s; /* spec.checkpoint.gracePeriodSeconds; 0 = no checkpoint */
  const char *spec; /* more spec members (leading comma), or NULL */
};

static void job(const struct job *j)
{
  char buf[2048], ck[128] = "", ann[160] = "";

  if (j->grace_s)
    snprintf(ck, sizeof(ck), ",'checkpoint':{'gracePeriodSeconds':%d,"
             "'intervalSeconds':1800}", j->grace_s);
  if (j->ckpt_s)
    snprintf(ann, sizeof(ann), ",'sim.gpuq.dev/checkpoint-seconds':'%d'",
             j->ckpt_s);
  snprintf(buf, sizeof(buf), "{'apiVersion':'gpuq.dev/v1alpha1','kind':"
           "'GpuJob','metadata':{'name':'%s','namespace':'" NS "'},'spec':{"
           "'team':'%s','replicas':%d,'gpusPerReplica':%d,'priority':%d,"
           "'expectedDurationSeconds':%d%s%s,'template':{'metadata':{"
           "'annotations':{'sim.gpuq.dev/run-seconds':'%d'%s}},'spec':{"
           "'containers':[{'name':'c','image':'x'}]}}}}", j->name,
           j->team ? j->team : NS, j->replicas ? j->replicas : 1, j->gpus,
           j->priority, j->run_s, ck, j->spec ? j->spec : "", j->run_s, ann);
  post_sq(GJ "/namespaces/" NS "/gpujobs", buf);
}

static void job_path(const char *name, char *buf, size_t len)
{
  snprintf(buf, len, GJ "/namespaces/" NS "/gpujobs/%s", name);
}

/* The job's status (new reference). */
static json_t *status_of(const char *name)
{
  char path[256];
  json_t *j, *s;

  job_path(name, path, sizeof(path));
  j = gq_test_sim_call(&w.sim, "GET", path, NULL, 200);
  s = json_incref(json_object_get(j, "status"));
  json_decref(j);
  return s ? s : json_object();
}

static long long status_int(const char *name, const char *k)
{
  json_t *s = status_of(name);
  long long v = json_integer_value(json_object_get(s, k));

  json_decref(s);
  return v;
}

/* Waits for status field (dotted path) of the job to be want. */
static void wait_field(const char *name, const char *field, const char *want)
{
  char path[256];

  job_path(name, path, sizeof(path));
  if (!gq_test_wait_field(&w.sim, path, field, want, WAIT_MS)) {
    json_t *s = status_of(name);
    char *d = json_dumps(s, JSON_INDENT(1));

    fail_msg("job %s: %s never became '%s'; status: %s", name, field, want,
             d);
  }
}

/* status.lastCheckpoint.location, copied into buf ("" when none). */
static void last_checkpoint(const char *name, char *buf, size_t len)
{
  json_t *s = status_of(name);
  const char *v = json_string_value(json_object_get(
      json_object_get(s, "lastCheckpoint"), "location"));

  snprintf(buf, len, "%s", v ? v : "");
  json_decref(s);
}

/* The condition of the given type: its status, or with reason 1 its
 * reason ("" when absent). */
static const char *cond_field(const json_t *st, const char *type, int reason)
{
  const json_t *e;
  size_t i;

  json_array_foreach(json_object_get(st, "conditions"), i, e) {
    if (!strcmp(json_string_value(json_object_get(e, "type")) ?: "", type))
      return json_string_value(json_object_get(e, reason ? "reason"
                                                         : "status")) ?: "";
  }
  return "";
}

static const char *condition(const json_t *st, const char *type)
{
  return cond_field(st, type, 0);
}

/* The job's status string field k, copied into buf. */
static void status_str(const char *name, const char *k, char *buf, size_t len)
{
  json_t *s = status_of(name);
  const char *v = json_string_value(json_object_get(s, k));

  snprintf(buf, len, "%s", v ? v : "");
  json_decref(s);
}

/* status.nodes[0] of the job, copied into buf. */
static void first_node(const char *name, char *buf, size_t len)
{
  json_t *st = status_of(name);

  snprintf(buf, len, "%s", json_string_value(json_array_get(
               json_object_get(st, "nodes"), 0)) ?: "");
  json_decref(st);
}

/* Job 'name' still runs its first attempt, never disrupted. */
static void expect_untouched(const char *name)
{
  json_t *st = status_of(name);

  if (strcmp(json_string_value(json_object_get(st, "phase")) ?: "",
             "Running") ||
      json_integer_value(json_object_get(st, "attempts")) != 1 ||
      json_integer_value(json_object_get(st, "preemptions")) != 0) {
    char *d = json_dumps(st, JSON_INDENT(1));

    fail_msg("job %s was disturbed: %s", name, d);
  }
  json_decref(st);
}

/* The job's pods of attempt 'attempt' (new reference: an array). */
static json_t *pods_of(const char *name, int attempt)
{
  char path[320];
  json_t *l, *items;

  snprintf(path, sizeof(path), "/api/v1/namespaces/" NS "/pods?labelSelector="
           "gpuq.dev/job%%3D%s,gpuq.dev/attempt%%3D%d", name, attempt);
  l = gq_test_sim_call(&w.sim, "GET", path, NULL, 200);
  items = json_incref(json_object_get(l, "items"));
  json_decref(l);
  return items ? items : json_array();
}

/* The API path of the (only) pod of the job's attempt, into buf. */
static void pod_path(const char *name, int attempt, char *buf, size_t len)
{
  json_t *items = pods_of(name, attempt);

  assert_int_equal(json_array_size(items), 1);
  snprintf(buf, len, "/api/v1/namespaces/" NS "/pods/%s",
           json_string_value(json_object_get(json_object_get(
               json_array_get(items, 0), "metadata"), "name")));
  json_decref(items);
}

/* Every pod of the attempt runs on 'node' with GPUQ_RESUME_FROM = resume
 * (NULL: not set), and there are n of them. */
static void expect_pods(const char *name, int attempt, int n,
                        const char *node, const char *resume)
{
  json_t *items = pods_of(name, attempt), *p;
  size_t i;

  if ((int)json_array_size(items) != n)
    fail_msg("job %s attempt %d: %zu pods, want %d", name, attempt,
             json_array_size(items), n);
  json_array_foreach(items, i, p) {
    const json_t *c = json_array_get(json_object_get(json_object_get(p,
                                                     "spec"), "containers"), 0);
    const json_t *e;
    const char *got = NULL, *on = json_string_value(json_object_get(
        json_object_get(p, "spec"), "nodeName"));
    size_t k;

    json_array_foreach(json_object_get(c, "env"), k, e) {
      if (!strcmp(json_string_value(json_object_get(e, "name")) ?: "",
                  "GPUQ_RESUME_FROM"))
        got = json_string_value(json_object_get(e, "value"));
    }
    if (node && (!on || strcmp(on, node)))
      fail_msg("job %s attempt %d: a pod on '%s', want '%s'", name, attempt,
               on ? on : "", node);
    if (resume ? !got || strcmp(got, resume) : got != NULL)
      fail_msg("job %s attempt %d: GPUQ_RESUME_FROM '%s', want '%s'", name,
               attempt, got ? got : "(unset)", resume ? resume : "(unset)");
  }
  json_decref(items);
}

/* Events about job 'name' with this reason. */
static int events(const char *name, const char *reason)
{
  char path[400];
  json_t *l, *e;
  size_t i;
  int n = 0;

  snprintf(path, sizeof(path), "/api/v1/namespaces/" NS "/events?"
           "fieldSelector=involvedObject.name%%3D%s,reason%%3D%s", name,
           reason);
  l = gq_test_sim_call(&w.sim, "GET", path, NULL, 200);
  json_array_foreach(json_object_get(l, "items"), i, e)
    n++;
  json_decref(l);
  return n;
}

/* Runs kubectl; fails the test unless it exits with 0. */
#define KUBECTL(...)                                                         \
  do {                                                                       \
    struct gq_test_out o_;                                                   \
    gq_test_kubectl(&w.sim, &o_, NULL, __VA_ARGS__, NULL);                   \
    if (o_.status != 0)                                                      \
      fail_msg("kubectl exit %d\nstdout: %s\nstderr: %s", o_.status,        \
               o_.out, o_.err);                                              \
    gq_test_out_free(&o_);                                                   \
  } while (0)

/* The sim's report (new reference). */
static json_t *report(void)
{
  return gq_test_sim_call(&w.sim, "GET", "/sim/v1/report", NULL, 200);
}

/* The end of every test: no invariant violated, no placement miss, a clean
 * controller exit. */
static void done(void)
{
  json_t *r = report();

  if (json_integer_value(json_object_get(r, "invariant_violations")) ||
      json_integer_value(json_object_get(r, "placement_misses"))) {
    char *s = json_dumps(r, JSON_INDENT(1));

    fail_msg("sim report: %s", s);
  }
  json_decref(r);
  assert_int_equal(gq_test_ctl_stop(&w.ctl), 0);
  w.passed = 1;
}

/* ---- 1. kubectl drain of a checkpointing gang ---------------------------- */

/* The name of replica 0 of ck's attempt, into buf. */
static void replica0(int attempt, char *buf, size_t len)
{
  json_t *items = pods_of("ck", attempt), *p;
  size_t i;

  buf[0] = '\0';
  json_array_foreach(items, i, p) {
    const json_t *md = json_object_get(p, "metadata");

    if (!strcmp(json_string_value(json_object_get(json_object_get(md,
                    "labels"), "gpuq.dev/replica")) ?: "", "0"))
      snprintf(buf, len, "%s", json_string_value(json_object_get(md,
                                                   "name")));
  }
  json_decref(items);
  assert_true(buf[0] != '\0');
}

/* 'ck' (2 x 4 GPUs, checkpoints in 20 s, grace 60 s) runs on pa-00, the
 * best fit (12 GPUs) of pa-00 and pb-00 (16). A cordon of pa-00 changes
 * nothing for it (a 4-GPU probe, whose best fit would be pa-00's last 4,
 * goes to pb-00 instead, which shows gpuq saw the cordon). kubectl drain
 * pa-00 (with a pod that is not gpuq's) then completes on its own: both
 * replicas checkpoint, and the
 * gang resumes on pb-00 from that checkpoint, with nearly no work lost.
 * Then replica 0 (the one whose termination message holds the gang's
 * checkpoint) is deleted with a 1 s grace period, too short for the
 * checkpoint: the job resumes from the previous checkpoint, and the
 * NoCheckpoint event says so. No disruption counts toward backoffLimit. */
static void test_drain_checkpoint(void **state)
{
  static const char *const nodes[] = {"pa-:12", "pb-:16", NULL};
  struct job ck = {.name = "ck", .replicas = 2, .gpus = 4, .run_s = 36000,
                   .ckpt_s = 20, .grace_s = 60};
  struct job probe = {.name = "probe", .gpus = 4, .run_s = 5};
  char loc[512], loc2[512], pod[128];
  json_t *st, *r;
  double lost;

  (void)state;
  world_up(nodes, NULL);
  quota(NS, 40, "");
  job(&ck);
  wait_field("ck", "status.phase", "Running");
  expect_pods("ck", 1, 2, "pa-00", NULL);
  KUBECTL("cordon", "pa-00");
  job(&probe);
  wait_field("probe", "status.phase", "Succeeded");
  expect_pods("probe", 1, 1, "pb-00", NULL);
  /* the cordon changed nothing for ck */
  st = status_of("ck");
  assert_string_equal(json_string_value(json_object_get(st, "phase")),
                      "Running");
  assert_int_equal(json_integer_value(json_object_get(st, "attempts")), 1);
  assert_int_equal(json_integer_value(json_object_get(st, "preemptions")), 0);
  json_decref(st);
  expect_pods("ck", 1, 2, "pa-00", NULL);
  assert_int_equal(events("ck", "Disrupted"), 0);

  /* a pod that is not gpuq's shares the node: the drain (--force, as it
   * has no controller) takes it too */
  post_sq("/api/v1/namespaces/" NS "/pods", "{'apiVersion':'v1','kind':"
          "'Pod','metadata':{'name':'other'},'spec':{'nodeName':'pa-00',"
          "'containers':[{'name':'c','image':'x'}]}}");
  /* some work done (10 virtual seconds, settled in the sim: its kubelet
   * counts ck's progress in virtual time), then the drain */
  gq_test_sim_wait_virtual(&w.sim, 10);
  KUBECTL("drain", "pa-00", "--ignore-daemonsets", "--force",
          "--timeout=120s");
  json_decref(gq_test_sim_call(&w.sim, "GET", "/api/v1/namespaces/" NS
                               "/pods/other", NULL, 404));
  wait_field("ck", "status.attempts", "2");
  wait_field("ck", "status.phase", "Running");
  last_checkpoint("ck", loc, sizeof(loc));
  if (strncmp(loc, "sim://" NS "/ck/", strlen("sim://" NS "/ck/")) ||
      strtol(loc + strlen("sim://" NS "/ck/"), NULL, 10) < 10)
    fail_msg("lastCheckpoint '%s': not the checkpoint of the drain", loc);
  expect_pods("ck", 2, 2, "pb-00", loc);
  wait_field("ck", "status.preemptions", "1");
  st = status_of("ck");
  assert_int_equal(json_integer_value(json_object_get(st, "preemptions")), 1);
  assert_int_equal(json_integer_value(json_object_get(st, "failedAttempts")),
                   0);
  assert_string_equal(condition(st, "Checkpointed"), "True");
  assert_string_equal(condition(st, "Preempted"), "False");
  json_decref(st);
  assert_int_equal(events("ck", "Disrupted"), 1);
  assert_int_equal(events("ck", "Checkpointing"), 1);
  assert_true(events("ck", "Checkpointed") >= 1);
  assert_int_equal(events("ck", "Requeued"), 1);
  assert_int_equal(events("ck", "Resuming"), 1);
  assert_int_equal(events("ck", "NoCheckpoint"), 0);
  /* it resumed from the drain's checkpoint: at most the time between the
   * two replicas' SIGTERMs is done again (starting over: >= 80 GPU-s) */
  r = report();
  assert_int_equal(json_integer_value(json_object_get(r,
                       "checkpoint_resumes")), 1);
  lost = json_real_value(json_object_get(r, "gpu_seconds_lost"));
  fprintf(stderr, "drain: checkpoint %s, %.1f GPU-seconds lost\n", loc,
          lost);
  if (lost > 40)
    fail_msg("%.1f GPU-seconds lost, want <= 40", lost);
  json_decref(r);

  /* replica 0 (which writes the gang's checkpoint) stopped with a grace
   * period too short for the 20 s checkpoint: the previous one stands */
  KUBECTL("uncordon", "pa-00");
  /* a few virtual seconds of the second attempt's work. The controller
   * need not have seen the uncordon (nothing shows it has): pb-00 holds
   * the third attempt as well, and expect_pods below takes any node */
  gq_test_sim_wait_virtual(&w.sim, 5);
  replica0(2, pod, sizeof(pod));
  KUBECTL("delete", "pod", pod, "-n", NS, "--grace-period=1");
  wait_field("ck", "status.attempts", "3");
  wait_field("ck", "status.phase", "Running");
  last_checkpoint("ck", loc2, sizeof(loc2));
  assert_string_equal(loc2, loc);
  expect_pods("ck", 3, 2, NULL, loc);
  assert_int_equal(events("ck", "NoCheckpoint"), 1);
  assert_int_equal(events("ck", "Resuming"), 2);
  assert_int_equal(status_int("ck", "preemptions"), 2);
  assert_int_equal(status_int("ck", "failedAttempts"), 0);
  done();
}

/* ---- 2. priority preemption --------------------------------------------- */

/* Two 8-GPU nodes run 'old' and then 'young' (priority 0, checkpointing);
 * 'urgent' (priority 10, 8 GPUs) fits its quota, not the capacity: gpuq
 * preempts 'young', whose work at risk is the smaller (it started later),
 * and only it. 'urgent' runs where 'young' was; 'young' checkpoints, is
 * requeued, and is admitted again only once 'urgent' has finished (its
 * GPUs were reserved: no thrashing); it resumes from its checkpoint. */
static void test_priority_preemption(void **state)
{
  static const char *const nodes[] = {"pa-:8", "pb-:8", NULL};
  struct job old = {.name = "old", .gpus = 8, .run_s = 36000, .ckpt_s = 5,
                    .grace_s = 30};
  struct job young = old, urgent = {.name = "urgent", .gpus = 8, .run_s = 20,
                                    .priority = 10};
  char node[64], done_at[64], back_at[64], loc[512];
  json_t *st;

  (void)state;
  young.name = "young";
  world_up(nodes, NULL);
  quota(NS, 32, "");
  job(&old);
  wait_field("old", "status.phase", "Running");
  /* 10 virtual seconds of work more than young: settled in the sim, and
   * as long by the controller's clock (the same --time-scale and
   * --time-epoch over the same real clock) */
  gq_test_sim_wait_virtual(&w.sim, 10);
  job(&young);
  wait_field("young", "status.phase", "Running");
  first_node("young", node, sizeof(node));
  job(&urgent);
  wait_field("urgent", "status.phase", "Running");
  expect_pods("urgent", 1, 1, node, NULL);
  expect_untouched("old");
  assert_int_equal(events("urgent", "Preempting"), 1);
  wait_field("young", "status.preemptions", "1");
  st = status_of("young");
  assert_int_equal(json_integer_value(json_object_get(st, "preemptions")), 1);
  assert_int_equal(json_integer_value(json_object_get(st, "failedAttempts")),
                   0);
  json_decref(st);
  wait_field("urgent", "status.phase", "Succeeded");
  wait_field("young", "status.phase", "Running");
  /* young's second attempt came after urgent was done with its GPUs */
  status_str("urgent", "completionTime", done_at, sizeof(done_at));
  status_str("young", "admittedAt", back_at, sizeof(back_at));
  if (!*done_at || strcmp(back_at, done_at) < 0)
    fail_msg("young admitted again at %s, before urgent ended at %s",
             back_at, done_at);
  assert_int_equal(status_int("young", "attempts"), 2);
  last_checkpoint("young", loc, sizeof(loc));
  assert_true(strncmp(loc, "sim://" NS "/young/", 16) == 0);
  expect_pods("young", 2, 1, NULL, loc);
  expect_untouched("old");
  done();
}

/* ---- 3. quota reclaim ---------------------------------------------------- */

/* Teams a and b (both for namespace team-a) share cohort c, 8 nominal GPUs
 * each, on two 8-GPU nodes. b runs b1 and then b2 (priority 5), borrowing
 * a's idle 8. a's job a1 (priority 0, within a's nominal) takes them back:
 * b2 (least work at risk) is preempted with reason QuotaReclaim, b1 is
 * not. Then a2 of a would have to borrow: b, back at its nominal, keeps b1
 * and a2 waits. */
static void test_reclaim_borrowed(void **state)
{
  static const char *const nodes[] = {"pa-:8", "pb-:8", NULL};
  struct job b1 = {.name = "b1", .team = "b", .gpus = 8, .run_s = 36000,
                   .priority = 5, .ckpt_s = 5, .grace_s = 30};
  struct job b2 = b1, a1 = {.name = "a1", .team = "a", .gpus = 8,
                            .run_s = 36000};
  struct job a2 = a1;
  json_t *st;

  (void)state;
  b2.name = "b2";
  a2.name = "a2";
  world_up(nodes, NULL);
  quota("a", 8, ",'cohort':'c'");
  quota("b", 8, ",'cohort':'c'");
  job(&b1);
  wait_field("b1", "status.phase", "Running");
  gq_test_sim_wait_virtual(&w.sim, 10); /* b1 has more work at risk */
  job(&b2);
  wait_field("b2", "status.phase", "Running");
  job(&a1);
  wait_field("a1", "status.phase", "Running");
  expect_untouched("b1");
  wait_field("b2", "status.preemptions", "1");
  st = status_of("b2");
  assert_int_equal(json_integer_value(json_object_get(st, "preemptions")), 1);
  assert_string_equal(cond_field(st, "Preempted", 1), "QuotaReclaim");
  json_decref(st);
  wait_field("b2", "status.phase", "Queued");
  job(&a2);
  wait_field("a2", "status.reason", "WaitingForReclaim");
  expect_untouched("b1");
  expect_untouched("a1");
  assert_int_equal(events("a2", "Preempting"), 0);
  done();
}

/* ---- 4. node-removal taint ---------------------------------------------- */

/* cluster-autoscaler marks the node of checkpointing job 'ck' for removal
 * (taint ToBeDeletedByClusterAutoscaler, NoSchedule: nothing evicts the
 * pod yet): gpuq checkpoints and requeues it at once, and it resumes on
 * the other node from that checkpoint. */
static void test_node_removal_taint(void **state)
{
  static const char *const nodes[] = {"pa-:8", "pb-:8", NULL};
  struct job ck = {.name = "ck", .gpus = 8, .run_s = 36000, .ckpt_s = 5,
                   .grace_s = 30};
  char node[64], path[128], loc[512];

  (void)state;
  world_up(nodes, NULL);
  quota(NS, 16, "");
  job(&ck);
  wait_field("ck", "status.phase", "Running");
  first_node("ck", node, sizeof(node));
  gq_test_sim_wait_virtual(&w.sim, 5); /* some work to checkpoint */
  snprintf(path, sizeof(path), "/sim/v1/nodes/%s/taint", node);
  json_decref(gq_test_sim_call(&w.sim, "POST", path,
      "{\"key\":\"ToBeDeletedByClusterAutoscaler\",\"value\":"
      "\"1800000000\",\"effect\":\"NoSchedule\"}", 200));
  wait_field("ck", "status.attempts", "2");
  wait_field("ck", "status.phase", "Running");
  last_checkpoint("ck", loc, sizeof(loc));
  assert_true(strncmp(loc, "sim://" NS "/ck/", 13) == 0);
  expect_pods("ck", 2, 1, !strcmp(node, "pa-00") ? "pb-00" : "pa-00", loc);
  assert_int_equal(events("ck", "Disrupted"), 1);
  assert_int_equal(status_int("ck", "failedAttempts"), 0);
  wait_field("ck", "status.preemptions", "1");
  done();
}

/* ---- 5. drainPolicy Wait -------------------------------------------------- */

/* 'w' (drainPolicy Wait, checkpointing) runs on pa-00; gpuq keeps a
 * PodDisruptionBudget (maxUnavailable 0) for it. kubectl drain pa-00 is
 * refused by the budget and keeps retrying while w runs; --drain-wait 30
 * (virtual seconds) after the cordon, gpuq checkpoints w, which resumes
 * on pb-00 from that checkpoint, and the drain completes on its own. */
static void test_drain_wait(void **state)
{
  static const char *const nodes[] = {"pa-:8", "pb-:8", NULL};
  static const char *const extra[] = {"--drain-wait", "30", NULL};
  struct job wj = {.name = "w", .gpus = 8, .run_s = 36000, .ckpt_s = 5,
                   .grace_s = 30, .spec = ",'drainPolicy':'Wait'"};
  char out[400], loc[512];
  pid_t pid;
  int status;

  (void)state;
  world_up(nodes, extra);
  quota(NS, 16, "");
  job(&wj);
  wait_field("w", "status.phase", "Running");
  expect_pods("w", 1, 1, "pa-00", NULL);
  assert_true(gq_test_wait_field(&w.sim, "/apis/policy/v1/namespaces/" NS
                                 "/poddisruptionbudgets/w",
                                 "spec.maxUnavailable", "0", WAIT_MS));
  snprintf(out, sizeof(out), "%s/drain.out", w.dir);
  pid = gq_test_kubectl_bg(&w.sim, out, "drain", "pa-00",
                           "--ignore-daemonsets", "--timeout=120s", NULL);
  assert_true(gq_test_wait_file(out, "disruption budget", WAIT_MS));
  assert_int_equal(status_int("w", "attempts"), 1);
  wait_field("w", "status.attempts", "2");
  wait_field("w", "status.phase", "Running");
  assert_true(gq_test_wait_file(out, "drained", WAIT_MS));
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  last_checkpoint("w", loc, sizeof(loc));
  assert_true(strncmp(loc, "sim://" NS "/w/", 12) == 0);
  expect_pods("w", 2, 1, "pb-00", loc);
  assert_int_equal(events("w", "DrainWaiting"), 1);
  assert_int_equal(events("w", "Disrupted"), 1);
  done();
}

/* ---- 6. a dead node ------------------------------------------------------- */

/* 'ck' runs on pa-00, which goes NotReady: its running pod is left alone.
 * Its pod is then deleted; the node's kubelet is gone, so the pod stays
 * terminating, and the job stays Preempting, holding its GPUs, until gpuq
 * force-deletes it --notready-timeout (20 virtual seconds) after the node
 * went NotReady; the job then runs on pb-00. */
static void test_dead_node(void **state)
{
  static const char *const nodes[] = {"pa-:8", "pb-:8", NULL};
  static const char *const extra[] = {"--notready-timeout", "20", NULL};
  struct job ck = {.name = "ck", .gpus = 8, .run_s = 36000, .ckpt_s = 5,
                   .grace_s = 30};
  char path[400];

  (void)state;
  world_up(nodes, extra);
  quota(NS, 16, "");
  job(&ck);
  wait_field("ck", "status.phase", "Running");
  expect_pods("ck", 1, 1, "pa-00", NULL);
  json_decref(gq_test_sim_call(&w.sim, "POST", "/sim/v1/nodes/pa-00/notready",
                               NULL, 200));
  pod_path("ck", 1, path, sizeof(path));
  json_decref(gq_test_sim_call(&w.sim, "DELETE", path, NULL, 200));
  wait_field("ck", "status.phase", "Preempting");
  wait_field("ck", "status.attempts", "2");
  wait_field("ck", "status.phase", "Running");
  expect_pods("ck", 2, 1, "pb-00", NULL);
  json_decref(gq_test_sim_call(&w.sim, "GET", path, NULL, 404));
  assert_int_equal(events("ck", "ForceDeleted"), 1);
  assert_int_equal(events("ck", "NoCheckpoint"), 1);
  done();
}

/* ---- 7. a Preempting job keeps its place ---------------------------------- */

/* 'hi' (priority 10, a 90 s checkpoint) runs on pa-00, 'filler' (40 s) on
 * pb-00, 'lo' (priority 0) waits. pa-00 is drained: while hi checkpoints,
 * filler ends and pb-00 frees. It is held for hi (the best waiting job of
 * the team), not given to lo: hi resumes there, lo still waits. */
static void test_preempting_keeps_place(void **state)
{
  static const char *const nodes[] = {"pa-:8", "pb-:8", NULL};
  struct job hi = {.name = "hi", .gpus = 8, .run_s = 36000, .priority = 10,
                   .ckpt_s = 90, .grace_s = 120};
  struct job filler = {.name = "filler", .gpus = 8, .run_s = 40,
                       .priority = 5};
  struct job lo = {.name = "lo", .gpus = 8, .run_s = 36000};
  char loc[512];

  (void)state;
  world_up(nodes, NULL);
  quota(NS, 16, "");
  job(&hi);
  wait_field("hi", "status.phase", "Running");
  expect_pods("hi", 1, 1, "pa-00", NULL);
  job(&filler);
  wait_field("filler", "status.phase", "Running");
  job(&lo);
  wait_field("lo", "status.phase", "Queued");
  KUBECTL("cordon", "pa-00");
  json_decref(gq_test_sim_call(&w.sim, "POST", "/sim/v1/nodes/pa-00/drain",
                               NULL, 200));
  wait_field("hi", "status.phase", "Preempting");
  wait_field("filler", "status.phase", "Succeeded");
  wait_field("hi", "status.attempts", "2");
  wait_field("hi", "status.phase", "Running");
  last_checkpoint("hi", loc, sizeof(loc));
  expect_pods("hi", 2, 1, "pb-00", loc);
  assert_int_equal(status_int("lo", "attempts"), 0);
  assert_int_equal(events("lo", "Admitted"), 0);
  done();
}

/* ---- 8. preemptions are not failures ------------------------------------- */

/* The /metrics text of the controller (heap), or NULL when it does not
 * answer 200 (*code says what it answered). */
static char *metrics_get(int *code)
{
  char url[128], *resp = NULL;

  snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics",
           w.ctl.metrics_port);
  *code = gq_test_http("GET", url, NULL, NULL, NULL, &resp);
  if (*code != 200) {
    free(resp);
    return NULL;
  }
  return resp;
}

/* The /metrics text of the controller (heap). */
static char *metrics(void)
{
  int code;
  char *m = metrics_get(&code);

  assert_int_equal(code, 200);
  return m;
}

static void expect_metric(const char *text, const char *line)
{
  if (!strstr(text, line))
    fail_msg("/metrics has no line '%s':\n%s", line, text);
}

/* 'p' (backoffLimit 0, checkpointing) loses its pod to a plain delete five
 * times: each time the replica checkpoints and exits 0, which is neither
 * a success nor a failure; the job resumes from the new checkpoint. */
static void test_five_preemptions(void **state)
{
  static const char *const nodes[] = {"pa-:8", NULL};
  struct job pj = {.name = "p", .gpus = 8, .run_s = 36000, .ckpt_s = 2,
                   .grace_s = 30, .spec = ",'backoffLimit':0"};
  char path[400], want[16], *m;
  json_t *st;

  (void)state;
  world_up(nodes, NULL);
  quota(NS, 8, "");
  job(&pj);
  for (int a = 1; a <= 5; a++) {
    snprintf(want, sizeof(want), "%d", a);
    wait_field("p", "status.attempts", want);
    wait_field("p", "status.phase", "Running");
    pod_path("p", a, path, sizeof(path));
    json_decref(gq_test_sim_call(&w.sim, "DELETE", path, NULL, 200));
  }
  wait_field("p", "status.attempts", "6");
  wait_field("p", "status.phase", "Running");
  wait_field("p", "status.preemptions", "5");
  st = status_of("p");
  assert_int_equal(json_integer_value(json_object_get(st, "failedAttempts")),
                   0);
  json_decref(st);
  assert_int_equal(events("p", "Checkpointed"), 5);
  assert_int_equal(events("p", "Resuming"), 5);
  assert_int_equal(events("p", "Succeeded"), 0);
  m = metrics();
  expect_metric(m, "gpuq_preemptions_total{reason=\"Deleted\"} 5");
  expect_metric(m, "gpuq_checkpoint_resumes_total{team=\"team-a\"} 5");
  expect_metric(m, "gpuq_checkpoint_duration_seconds_count 5");
  free(m);
  done();
}

/* ---- attained-service: demotion and fair share over time (issue 21) ----- */

static const char *const las_args[] = {"--scheduling", "attained-service",
                                       "--min-run-seconds", "60",
                                       "--las-thresholds", "400", NULL};

/* 'long' has run 8 GPUs for 70 virtual s (560 GPU-s, level 1 above 400)
 * when 'short' of the same team and priority comes: short demotes it
 * (checkpoint, requeue with its service counted), runs and ends; long
 * resumes from its checkpoint. */
static void test_demotion(void **state)
{
  static const char *const nodes[] = {"pd-:8", NULL};
  struct job lj = {.name = "long", .gpus = 8, .run_s = 36000, .ckpt_s = 2,
                   .spec = ",'checkpoint':{'gracePeriodSeconds':30}"};
  struct job sj = {.name = "short", .gpus = 8, .run_s = 30};
  char loc[512], *m, *conds;
  json_t *st;

  (void)state;
  world_up(nodes, las_args);
  quota(NS, 8, "");
  job(&lj);
  wait_field("long", "status.phase", "Running");
  gq_test_sim_wait_virtual(&w.sim, 70);
  job(&sj);
  wait_field("long", "status.preemptions", "1");
  wait_field("short", "status.phase", "Running");
  st = status_of("long");
  conds = json_dumps(json_object_get(st, "conditions"), JSON_COMPACT);
  if (!conds || !strstr(conds, "\"reason\":\"Demoted\""))
    fail_msg("long's Preempted condition does not say Demoted: %s", conds);
  free(conds);
  assert_true(json_integer_value(json_object_get(st, "attainedGPUSeconds")) >=
              400);
  json_decref(st);
  wait_field("short", "status.phase", "Succeeded");
  wait_field("long", "status.phase", "Running");
  last_checkpoint("long", loc, sizeof(loc));
  assert_true(strncmp(loc, "sim://" NS "/long/", 15) == 0);
  expect_pods("long", 2, 1, NULL, loc);
  m = metrics();
  expect_metric(m, "gpuq_preemptions_total{reason=\"Demoted\"} 1");
  free(m);
  done();
}

/* The value of the gauge line that starts with prefix in the controller's
 * /metrics, or -1 when there is none. */
static double gauge(const char *prefix)
{
  int code;
  char *m = metrics_get(&code), *at = m ? strstr(m, prefix) : NULL;
  double v = at ? strtod(at + strlen(prefix), NULL) : -1;

  free(m);
  return v;
}

/* A job holds 8 GPUs for 200 virtual s and ends: the team's usage history
 * (half-life 600 s) is in Redis, and a new controller reads it back, so
 * its gauge is not 0 although nothing runs any more. */
static void test_fair_history_survives_restart(void **state)
{
  static const char *const nodes[] = {"pf-:8", NULL};
  static const char *const args[] = {"--fair-share-half-life", "600", NULL};
  /* a restarted controller gets what world_up() gave the first one */
  static const char *const again[] = {"--time-scale", "10", "--time-epoch",
                                      "1800000000", "--fair-share-half-life",
                                      "600", NULL};
  struct job fj = {.name = "f", .gpus = 8, .run_s = 200};
  const char *g = "gpuq_usage_history_gpus{team=\"team-a\"} ";
  char *saved;
  double before, after;

  (void)state;
  world_up(nodes, args);
  quota(NS, 8, "");
  job(&fj);
  wait_field("f", "status.phase", "Succeeded");
  /* the history is saved every 10 real s */
  for (int i = 0; i < 300; i++) {
    saved = gq_test_redis_cmd(&w.redis, "HGET gpuq:{~team-a}:fair team-a");
    if (saved && strchr(saved, '@'))
      break;
    free(saved);
    saved = NULL;
    usleep(100000);
  }
  if (!saved)
    fail_msg("no fair-share history of team-a in Redis");
  free(saved);
  before = gauge(g);
  assert_true(before > 0);
  assert_int_equal(gq_test_ctl_stop(&w.ctl), 0);
  assert_int_equal(gq_test_ctl_start(&w.ctl, &w.sim, w.redis.url, 1, again),
                   0);
  for (int i = 0; i < 300 && (after = gauge(g)) <= 0; i++)
    usleep(100000);
  if (!(after > 0))
    fail_msg("the new controller's history of team-a is %g (was %g)", after,
             before);
  done();
}

/* ---- 9. the excess after a quota was lowered ------------------------------ */

/* b (nominal 16) runs b1 and b2 within its quota; an admin lowers it to 8:
 * they keep running, and the 8 above it count as borrowed. Lender a's job
 * a1 takes them back from one of b's jobs (QuotaReclaim). */
static void test_reclaim_lowered(void **state)
{
  static const char *const nodes[] = {"pa-:8", "pb-:8", NULL};
  struct job b1 = {.name = "b1", .team = "b", .gpus = 8, .run_s = 36000,
                   .ckpt_s = 2, .grace_s = 30};
  struct job b2 = b1, a1 = {.name = "a1", .team = "a", .gpus = 8,
                            .run_s = 36000};
  long long p1, p2;

  (void)state;
  b2.name = "b2";
  world_up(nodes, NULL);
  quota("a", 8, ",'cohort':'c'");
  quota("b", 16, ",'cohort':'c'");
  job(&b1);
  job(&b2);
  wait_field("b1", "status.phase", "Running");
  wait_field("b2", "status.phase", "Running");
  json_decref(gq_test_sim_call(&w.sim, "PATCH", GJ "/teamquotas/b",
      "{\"spec\":{\"resources\":[{\"flavor\":\"*\",\"nominal\":8}]}}",
      200));
  assert_true(gq_test_wait_field(&w.sim, GJ "/teamquotas/b",
                                 "status.borrowedGPUs", "8", WAIT_MS));
  job(&a1);
  wait_field("a1", "status.phase", "Running");
  p1 = status_int("b1", "preemptions");
  p2 = status_int("b2", "preemptions");
  if (p1 + p2 != 1)
    fail_msg("b1 and b2 preempted %lld and %lld times, want 1 in all", p1,
             p2);
  wait_field(p1 ? "b1" : "b2", "status.phase", "Queued");
  expect_untouched(p1 ? "b2" : "b1");
  done();
}

/* ---- 10. device-plugin loss ----------------------------------------------- */

/* x runs on pa-00, whose device plugin goes: x keeps running, and y
 * (4 GPUs, whose best fit would be pa-00's other 4) goes to pb-00. */
static void test_device_plugin_loss(void **state)
{
  static const char *const nodes[] = {"pa-:8", "pb-:8", NULL};
  struct job x = {.name = "x", .gpus = 4, .run_s = 36000};
  struct job y = {.name = "y", .gpus = 4, .run_s = 36000};

  (void)state;
  world_up(nodes, NULL);
  quota(NS, 16, "");
  job(&x);
  wait_field("x", "status.phase", "Running");
  expect_pods("x", 1, 1, "pa-00", NULL);
  json_decref(gq_test_sim_call(&w.sim, "POST",
                               "/sim/v1/nodes/pa-00/device-plugin-loss", NULL,
                               200));
  /* the controller has seen it once it says so on the node */
  for (int t = 0;; t += 50) {
    json_t *l = gq_test_sim_call(&w.sim, "GET", "/api/v1/events?"
                                 "fieldSelector=reason%3DGPUCapacityLost",
                                 NULL, 200);
    size_t n = json_array_size(json_object_get(l, "items"));

    json_decref(l);
    if (n > 0)
      break;
    if (t > WAIT_MS)
      fail_msg("no GPUCapacityLost event for pa-00");
    gq_test_sleep_ms(50);
  }
  job(&y);
  wait_field("y", "status.phase", "Running");
  expect_pods("y", 1, 1, "pb-00", NULL);
  expect_untouched("x");
  done();
}

/* ---- 11. staggered victims ----------------------------------------------- */

/* 'urgent' (16 GPUs, priority 10) needs both 8-GPU jobs of the only node:
 * 'quick' checkpoints in 5 s, 'slow' in 50 s. quick is gone and queued
 * again long before slow: the GPUs it left stay reserved for urgent, so
 * quick is not admitted again; urgent runs once slow is gone, after one
 * preemption round only. */
static void test_staggered_victims(void **state)
{
  static const char *const nodes[] = {"pa-:16", NULL};
  struct job quick = {.name = "quick", .gpus = 8, .run_s = 36000,
                      .ckpt_s = 5, .grace_s = 100};
  struct job slow = quick, urgent = {.name = "urgent", .gpus = 16,
                                     .run_s = 36000, .priority = 10};

  (void)state;
  slow.name = "slow";
  slow.ckpt_s = 50;
  world_up(nodes, NULL);
  quota(NS, 32, "");
  job(&quick);
  job(&slow);
  wait_field("quick", "status.phase", "Running");
  wait_field("slow", "status.phase", "Running");
  job(&urgent);
  wait_field("urgent", "status.reason", "WaitingForPreemption");
  wait_field("quick", "status.phase", "Queued");
  wait_field("slow", "status.phase", "Preempting");
  wait_field("urgent", "status.phase", "Running");
  expect_pods("urgent", 1, 1, "pa-00", NULL);
  assert_int_equal(events("quick", "Admitted"), 1);
  assert_int_equal(events("slow", "Admitted"), 1);
  assert_int_equal(events("urgent", "Preempting"), 1);
  assert_int_equal(status_int("quick", "attempts"), 1);
  done();
}

/* ---- 12. drainPolicy Requeue ---------------------------------------------- */

/* 'rq' (2 replicas, no spec.checkpoint, so drainPolicy Requeue) is drained
 * after 10 virtual seconds: requeued at once and started over on the other
 * node (no GPUQ_RESUME_FROM, no checkpoint events), its lost work in
 * gpuq_preemption_lost_gpu_seconds_total. */
static void test_drain_requeue(void **state)
{
  static const char *const nodes[] = {"pa-:8", "pb-:8", NULL};
  struct job rq = {.name = "rq", .replicas = 2, .gpus = 4, .run_s = 36000};
  char *m, *line;

  (void)state;
  world_up(nodes, NULL);
  quota(NS, 16, "");
  job(&rq);
  wait_field("rq", "status.phase", "Running");
  expect_pods("rq", 1, 2, "pa-00", NULL);
  /* 10 virtual seconds of work to lose (the controller counts them by the
   * same virtual clock) */
  gq_test_sim_wait_virtual(&w.sim, 10);
  KUBECTL("drain", "pa-00", "--ignore-daemonsets", "--timeout=120s");
  wait_field("rq", "status.attempts", "2");
  wait_field("rq", "status.phase", "Running");
  expect_pods("rq", 2, 2, "pb-00", NULL);
  assert_int_equal(events("rq", "Checkpointing"), 0);
  assert_int_equal(events("rq", "NoCheckpoint"), 0);
  assert_int_equal(events("rq", "Resuming"), 0);
  assert_int_equal(status_int("rq", "preemptions"), 1);
  m = metrics();
  expect_metric(m, "gpuq_preemptions_total{reason=\"EvictionByEvictionAPI\"} 1");
  line = strstr(m, "gpuq_preemption_lost_gpu_seconds_total{team=\"team-a\"} ");
  if (!line || strtod(line + strlen("gpuq_preemption_lost_gpu_seconds_total"
                                    "{team=\"team-a\"} "), NULL) < 80)
    fail_msg("lost GPU-seconds (8 GPUs x >= 10 s) missing:\n%s", m);
  free(m);
  done();
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_drain_checkpoint, world_down),
      cmocka_unit_test_teardown(test_priority_preemption, world_down),
      cmocka_unit_test_teardown(test_reclaim_borrowed, world_down),
      cmocka_unit_test_teardown(test_node_removal_taint, world_down),
      cmocka_unit_test_teardown(test_drain_wait, world_down),
      cmocka_unit_test_teardown(test_dead_node, world_down),
      cmocka_unit_test_teardown(test_preempting_keeps_place, world_down),
      cmocka_unit_test_teardown(test_five_preemptions, world_down),
      cmocka_unit_test_teardown(test_reclaim_lowered, world_down),
      cmocka_unit_test_teardown(test_device_plugin_loss, world_down),
      cmocka_unit_test_teardown(test_staggered_victims, world_down),
      cmocka_unit_test_teardown(test_drain_requeue, world_down),
      cmocka_unit_test_teardown(test_demotion, world_down),
      cmocka_unit_test_teardown(test_fair_history_survives_restart,
                                world_down),
  };

  if (getenv("GQ_TEST_FILTER"))
    cmocka_set_test_filter(getenv("GQ_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
