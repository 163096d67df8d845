/* gpuq-controller end to end, allocated against used GPUs (issue 22),
 * against gpuq-sim's dcgm-exporter endpoint (--dcgm-listen), a real
 * Prometheus scraping it and the controller's /metrics (every 500 real ms),
 * and a private redis-server, on one clock at 10x:
 *   - a running job's GPU utilization (its pods' sim.gpuq.dev/gpu-
 *     utilization) shows in status.gpuUtilization within two scrape
 *     intervals, with the Idle condition False (GpuBusy); once it ends, its
 *     allocated and used GPU-seconds equal what the sim's report computed
 *     from the same pods (within one scrape interval), and
 *     gpuq_used_gpu_seconds_total counts them;
 *   - an idle job (utilization under its team's idlePolicy.threshold for
 *     afterMinutes) gets the Idle condition, an Idle event and
 *     gpuq_idle_allocated_gpus; with action Preempt it keeps running while
 *     nothing waits, and once a job waits it is checkpointed and requeued
 *     at the back of the queue, and the waiting job runs;
 *   - Prometheus down: jobs keep being admitted and running, the Idle
 *     condition is Unknown (UtilizationUnknown, naming the URL), no used
 *     GPU-seconds are guessed, and gpuq_prometheus_up is 0; once a
 *     Prometheus answers at that URL utilization shows again;
 *   - an XID error on a GPU taints its node gpuq.dev/gpu-unhealthy:
 *     NoSchedule (an Event on the node), the job on that GPU is
 *     checkpointed and requeued elsewhere, and the taint is lifted after
 *     --gpu-healthy-seconds without errors.
 * Every wait is for a condition with a deadline (no sleeps that a loaded
 * machine could outrun). GQ_TEST_FILTER=<glob> runs only the matching
 * tests, GQ_TEST_LOGS=1 prints the logs of a passing test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/clock.h"
#include "tests/support/fixture.h"
#include "tests/support/proc.h"
#include "tests/support/prom.h"
#include "tests/support/redis.h"

#define WAIT_MS 60000
#define GJ "/apis/gpuq.dev/v1alpha1"
#define NS "team-a"
#define SCRAPE_MS 500
#define SCALE 10 /* virtual seconds per real second */

static const char *const clock_args[] = {"--time-scale", "10", "--time-epoch",
                                         "1800000000", NULL};

static struct {
  char dir[256];
  struct gq_test_sim sim;
  struct gq_test_redis redis;
  struct gq_test_prom prom;
  struct gq_test_ctl ctl;
  int dcgm_port, up, passed, prom_up;
  int prom_port; /* where a Prometheus may come later (prom 0) */
} w;

/* ---- the world ----------------------------------------------------------- */

/* Nodes "name:gpus" (H100s), Redis, the sim with its DCGM endpoint, a
 * Prometheus scraping it and the controller, namespace team-a, and the
 * controller reading Prometheus (prom 0: a URL where nothing listens;
 * prom < 0: no --prometheus-url at all). */
static void world_up(const char *const *nodes, int prom,
                     const char *const *extra)
{
  const char *tmp = getenv("TMPDIR");
  const char *args[32];
  char cluster[320], dcgm[64], target[64], purl[64];
  const char *targets[2];
  int n = 0;
  FILE *f;

  memset(&w, 0, sizeof(w));
  snprintf(w.dir, sizeof(w.dir), "%s/gpuq-usage-XXXXXX",
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
  w.dcgm_port = gq_test_free_port();
  snprintf(dcgm, sizeof(dcgm), "127.0.0.1:%d", w.dcgm_port);
  args[n++] = "--cluster";
  args[n++] = cluster;
  args[n++] = "--dcgm-listen";
  args[n++] = dcgm;
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
  args[n++] = "--utilization-interval";
  args[n++] = "5"; /* virtual s: every 500 real ms, one scrape */
  args[n++] = "--utilization-window";
  args[n++] = "10";
  if (prom >= 0)
    args[n++] = "--prometheus-url";
  if (prom > 0) {
    /* Prometheus first: the controller's metrics port is known once it
     * runs, so Prometheus scrapes the sim only; the controller's counters
     * are read from its /metrics directly */
    snprintf(target, sizeof(target), "127.0.0.1:%d", w.dcgm_port);
    targets[0] = target;
    targets[1] = NULL;
    assert_int_equal(gq_test_prom_start(&w.prom, targets, SCRAPE_MS), 0);
    w.prom_up = 1;
    args[n++] = w.prom.url;
  } else if (prom == 0) {
    w.prom_port = gq_test_free_port();
    snprintf(purl, sizeof(purl), "http://127.0.0.1:%d", w.prom_port);
    args[n++] = purl;
  }
  for (; extra && *extra && n < 31; extra++)
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
    json_t *l = gq_test_sim_call(&w.sim, "GET", "/api/v1/events", NULL, 200);
    json_t *e;
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
  gq_test_prom_stop(&w.prom, 0);
  gq_test_redis_stop(&w.redis);
  gq_test_rmtree(w.dir);
  w.up = 0;
  return 0;
}

/* ---- objects and reading them back --------------------------------------- */

static void post_sq(const char *path, const char *sq)
{
  json_t *o = gq_test_json_sq(sq);
  char *body = json_dumps(o, JSON_COMPACT);

  json_decref(gq_test_sim_call(&w.sim, "POST", path, body, 201));
  free(body);
  json_decref(o);
}

/* TeamQuota 'team' for namespace team-a with nominal GPUs; rest: more spec
 * members (single quotes, leading comma), or "". */
static void quota(const char *team, int nominal, const char *rest)
{
  char buf[1024];

  snprintf(buf, sizeof(buf), "{'apiVersion':'gpuq.dev/v1alpha1','kind':"
           "'TeamQuota','metadata':{'name':'%s'},'spec':{'namespaces':['"
           NS "'],'resources':[{'flavor':'*','nominal':%d}]%s}}", team,
           nominal, rest);
  post_sq(GJ "/teamquotas", buf);
}

/* A checkpointing job of team-a: gpus on one replica, run_s virtual
 * seconds, GPU utilization util (the annotation's grammar). */
static void job(const char *name, int gpus, int run_s, const char *util)
{
  char buf[2048];

  snprintf(buf, sizeof(buf), "{'apiVersion':'gpuq.dev/v1alpha1','kind':"
           "'GpuJob','metadata':{'name':'%s','namespace':'" NS "'},'spec':{"
           "'team':'" NS "','gpusPerReplica':%d,'checkpoint':{"
           "'gracePeriodSeconds':60,'intervalSeconds':600},"
           "'template':{'metadata':{'annotations':{"
           "'sim.gpuq.dev/run-seconds':'%d','sim.gpuq.dev/checkpoint-seconds':"
           "'5','sim.gpuq.dev/gpu-utilization':'%s'}},'spec':{'containers':[{"
           "'name':'c','image':'x'}]}}}}", name, gpus, run_s, util);
  post_sq(GJ "/namespaces/" NS "/gpujobs", buf);
}

static json_t *get(const char *path)
{
  return gq_test_sim_call(&w.sim, "GET", path, NULL, 200);
}

static json_t *status_of(const char *name)
{
  char path[256];
  json_t *j, *s;

  snprintf(path, sizeof(path), GJ "/namespaces/" NS "/gpujobs/%s", name);
  j = get(path);
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

/* The status of condition type of job name ("" if absent); reason and
 * message copied into the buffers when given. */
static void cond_of(const char *name, const char *type, char *st, size_t n,
                    char *reason, char *msg, size_t mn)
{
  json_t *s = status_of(name), *c;
  size_t i;

  snprintf(st, n, "%s", "");
  json_array_foreach(json_object_get(s, "conditions"), i, c) {
    if (strcmp(json_string_value(json_object_get(c, "type")) ?: "", type))
      continue;
    snprintf(st, n, "%s", json_string_value(json_object_get(c, "status")));
    if (reason)
      snprintf(reason, 64, "%s",
               json_string_value(json_object_get(c, "reason")) ?: "");
    if (msg)
      snprintf(msg, mn, "%s",
               json_string_value(json_object_get(c, "message")) ?: "");
  }
  json_decref(s);
}

static void wait_field(const char *name, const char *field, const char *want)
{
  char path[256];

  snprintf(path, sizeof(path), GJ "/namespaces/" NS "/gpujobs/%s", name);
  if (!gq_test_wait_field(&w.sim, path, field, want, WAIT_MS)) {
    json_t *s = status_of(name);
    char *d = json_dumps(s, JSON_INDENT(1));

    fail_msg("job %s: %s never became '%s'; status: %s", name, field, want,
             d);
  }
}

/* Waits until condition type of job name has status want; its reason and
 * message (of that same reading) go to reason (64 bytes) and msg (mn) when
 * given. */
static void wait_cond_msg(const char *name, const char *type,
                          const char *want, char *reason, char *msg,
                          size_t mn)
{
  char st[16];

  for (int waited = 0; waited < WAIT_MS; waited += 50) {
    cond_of(name, type, st, sizeof(st), reason, msg, mn);
    if (!strcmp(st, want))
      return;
    gq_test_sleep_ms(50);
  }
  {
    json_t *s = status_of(name);
    char *d = json_dumps(s, JSON_INDENT(1));

    fail_msg("job %s: condition %s never became %s (is '%s'); status: %s",
             name, type, want, st, d);
  }
}

static void wait_cond(const char *name, const char *type, const char *want)
{
  wait_cond_msg(name, type, want, NULL, NULL, 0);
}

/* The controller's /metrics text (heap). */
static char *metrics(void)
{
  char url[64], *resp = NULL;

  snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics",
           w.ctl.metrics_port);
  assert_int_equal(gq_test_http("GET", url, NULL, NULL, NULL, &resp), 200);
  return resp;
}

/* The value of the first sample line starting with prefix, or -1. */
static double metric(const char *prefix)
{
  char *m = metrics(), *p = m;
  double v;

  while (p && strncmp(p, prefix, strlen(prefix))) {
    p = strchr(p, '\n');
    p = p ? p + 1 : NULL;
  }
  if (p) { /* the value is the line's last word */
    char *nl = strchr(p, '\n'), *sp;

    if (nl)
      *nl = '\0';
    sp = strrchr(p, ' ');
    v = sp ? strtod(sp + 1, NULL) : -1;
  } else {
    v = -1;
  }

  free(m);
  return v;
}

/* The sim's report of team: allocated, used (and idle) GPU-hours. */
static void sim_team_hours(const char *team, double *alloc, double *used,
                           double *idle)
{
  json_t *r = get("/sim/v1/report");
  json_t *t = json_object_get(json_object_get(r, "teams"), team);

  assert_non_null(t);
  *alloc = json_number_value(json_object_get(t, "allocated_gpu_hours"));
  *used = json_number_value(json_object_get(t, "used_gpu_hours"));
  if (idle)
    *idle = json_number_value(json_object_get(t, "idle_gpu_hours"));
  json_decref(r);
}

/* 1 if node carries gpuq's taint gpuq.dev/gpu-unhealthy:NoSchedule. */
static int tainted(const char *node)
{
  char path[128];
  json_t *n, *t;
  size_t i;
  int on = 0;

  snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
  n = get(path);
  json_array_foreach(json_object_get(json_object_get(n, "spec"), "taints"),
                     i, t) {
    on |= !strcmp(json_string_value(json_object_get(t, "key")) ?: "",
                  "gpuq.dev/gpu-unhealthy") &&
          !strcmp(json_string_value(json_object_get(t, "effect")) ?: "",
                  "NoSchedule");
  }
  json_decref(n);
  return on;
}

/* Waits until tainted(node) is want. */
static void wait_taint(const char *node, int want)
{
  for (int waited = 0; waited < WAIT_MS; waited += 50) {
    if (tainted(node) == want)
      return;
    gq_test_sleep_ms(50);
  }
  fail_msg("node %s: taint gpuq.dev/gpu-unhealthy never %s", node,
           want ? "added" : "removed");
}

/* GPU gpu of node reports XID error xid for for_s virtual seconds. */
static void sim_xid(const char *node, int gpu, int xid, int for_s)
{
  char path[128], body[128];

  snprintf(path, sizeof(path), "/sim/v1/nodes/%s/xid", node);
  snprintf(body, sizeof(body), "{\"gpu\":%d,\"xid\":%d,\"for\":%d}", gpu,
           xid, for_s);
  json_decref(gq_test_sim_call(&w.sim, "POST", path, body, 200));
}

/* kubectl gpuq usage -o json (the plugin, as a user runs it) gives team
 * the GPU-hours the sim's report computed from the same pods, within one
 * scrape interval of each job's GPUs (5 virtual s x 8 GPUs at most). */
static void usage_matches_sim(const char *team)
{
  struct gq_test_out o;
  json_t *doc, *it, *mine = NULL;
  double alloc_h, used_h, idle_h, tol = 8 * 5 / 3600.0 + 0.002;
  size_t i;

  assert_int_equal(gq_test_kubectl_plugin(&w.sim, &o, "gpuq", "usage", "-o",
                                          "json", NULL), 0);
  doc = json_loads(o.out, 0, NULL);
  assert_non_null(doc);
  json_array_foreach(json_object_get(doc, "items"), i, it)
    if (!strcmp(json_string_value(json_object_get(it, "team")) ?: "", team))
      mine = it;
  assert_non_null(mine);
  sim_team_hours(team, &alloc_h, &used_h, &idle_h);
  if (fabs(json_number_value(json_object_get(mine, "allocated_gpu_hours")) -
           alloc_h) > tol ||
      fabs(json_number_value(json_object_get(mine, "used_gpu_hours")) -
           used_h) > tol ||
      fabs(json_number_value(json_object_get(mine, "idle_gpu_hours")) -
           idle_h) > tol)
    fail_msg("kubectl gpuq usage: %s; the sim: %.4f %.4f %.4f GPU-hours",
             o.out, alloc_h, used_h, idle_h);
  json_decref(doc);
  gq_test_out_free(&o);
}

/* ---- the tests ----------------------------------------------------------- */

/* A job at 80% for 600 virtual s: gpuUtilization 80 while it runs, Idle
 * False; at its end allocated and used GPU-seconds as the sim's report,
 * within one scrape interval (5 virtual s x 4 GPUs). */
static void test_utilization_in_status(void **state)
{
  static const char *const nodes[] = {"ua:8", NULL};
  char st[16], reason[64];
  double alloc_h, used_h, m;
  long long alloc, used;

  (void)state;
  world_up(nodes, 1, NULL);
  quota(NS, 8, "");
  job("busy", 4, 600, "0.8");
  wait_field("busy", "status.phase", "Running");
  /* the first reading after the pod runs: two scrape intervals (20
   * virtual s) after it is scraped; the deadline is only a bound */
  wait_field("busy", "status.gpuUtilization", "80");
  {
    /* how soon (printed, not asserted: a loaded machine delays the real
     * clock's scrapes and the test's own polling alike) */
    json_t *s = status_of("busy");
    int64_t t0 = 0, t1 = 0;

    gq_time_parse(json_string_value(json_object_get(s, "startTime")) ?: "",
                  &t0);
    gq_time_parse(
        json_string_value(json_object_get(s, "utilizationTime")) ?: "", &t1);
    print_message("utilization in status %lld virtual s after the start "
                  "(scrape interval %d virtual s)\n",
                  (long long)(t1 - t0) / 1000, SCRAPE_MS * SCALE / 1000);
    json_decref(s);
  }
  cond_of("busy", "Idle", st, sizeof(st), reason, NULL, 0);
  assert_string_equal(st, "False");
  assert_string_equal(reason, "GpuBusy");
  wait_field("busy", "status.phase", "Succeeded");
  alloc = status_int("busy", "allocatedGPUSeconds");
  used = status_int("busy", "usedGPUSeconds");
  sim_team_hours(NS, &alloc_h, &used_h, NULL);
  if (llabs(alloc - (long long)(alloc_h * 3600)) > 4 * 5 + 4 ||
      llabs(used - (long long)(used_h * 3600)) > 4 * 5 + 4)
    fail_msg("gpuq counted %lld GPU-s allocated, %lld used; the sim %.0f "
             "and %.0f", alloc, used, alloc_h * 3600, used_h * 3600);
  assert_true(alloc >= 4 * 600 - 4 * 5 && used >= alloc * 0.8 - 4 * 5 - 4);
  assert_int_equal(status_int("busy", "idleGPUSeconds"), 0);
  usage_matches_sim(NS);
  m = metric("gpuq_used_gpu_seconds_total{team=\"team-a\"");
  assert_true(m >= used - 1);
  gq_test_sim_expect_clean(&w.sim, 0);
  w.passed = 1;
}

/* Idle with action Preempt: Idle, but kept while nothing waits; preempted
 * (checkpointed, to the back of the queue) once a job waits, which runs. */
static void test_idle_preempted_only_when_waiting(void **state)
{
  static const char *const nodes[] = {"ub:8", NULL};
  char queued0[64];
  json_t *s;

  (void)state;
  world_up(nodes, 1, NULL);
  quota(NS, 8, ",'idlePolicy':{'threshold':10,'afterMinutes':1,'action':"
        "'Preempt'}");
  job("notebook", 8, 36000, "0.02");
  wait_field("notebook", "status.phase", "Running");
  wait_cond("notebook", "Idle", "True");
  assert_true(metric("gpuq_idle_allocated_gpus{team=\"team-a\"}") == 8);
  /* nothing waits: it keeps running through several more readings */
  gq_test_sim_wait_virtual(&w.sim, 60);
  s = status_of("notebook");
  assert_string_equal(json_string_value(json_object_get(s, "phase")),
                      "Running");
  assert_int_equal(json_integer_value(json_object_get(s, "preemptions")), 0);
  assert_true(json_integer_value(json_object_get(s, "idleGPUSeconds")) > 0);
  snprintf(queued0, sizeof(queued0), "%s",
           json_string_value(json_object_get(s, "queuedAt")) ?: "");
  json_decref(s);
  job("train", 8, 600, "0.9");
  wait_field("train", "status.phase", "Running");
  assert_true(status_int("notebook", "preemptions") >= 1);
  wait_field("notebook", "status.phase", "Queued");
  /* at the back of the queue: queued again, later than the first time */
  s = status_of("notebook");
  assert_true(strcmp(json_string_value(json_object_get(s, "queuedAt")) ?: "",
                     queued0) > 0);
  assert_string_equal(json_string_value(json_object_get(s, "reason")),
                      "WaitingForQuota");
  json_decref(s);
  gq_test_sim_expect_clean(&w.sim, 0);
  w.passed = 1;
}

/* Prometheus unreachable: admitted and running all the same, Idle Unknown
 * naming the URL, gpuq_prometheus_up 0. */
static void test_prometheus_down(void **state)
{
  static const char *const nodes[] = {"uc:8", NULL};
  char reason[64], msg[600];

  (void)state;
  world_up(nodes, 0, NULL);
  quota(NS, 8, "");
  job("a", 4, 120, "0.9");
  job("b", 4, 120, "0.9");
  job("c", 4, 3600, "0.9"); /* admitted once a or b is done */
  wait_field("a", "status.phase", "Running");
  wait_cond_msg("a", "Idle", "Unknown", reason, msg, sizeof(msg));
  assert_string_equal(reason, "UtilizationUnknown");
  assert_non_null(strstr(msg, "http://127.0.0.1:"));
  {
    double up = metric("gpuq_prometheus_up ");

    if (up != 0)
      fail_msg("gpuq_prometheus_up is %g", up);
  }
  wait_field("a", "status.phase", "Succeeded");
  wait_field("b", "status.phase", "Succeeded"); /* admitted and run too */
  assert_true(status_int("a", "allocatedGPUSeconds") >= 4 * 120 - 4 * 5);
  assert_int_equal(status_int("a", "usedGPUSeconds"), 0); /* never guessed */
  /* Prometheus comes (at the URL the controller has): readings again */
  {
    char target[64];
    const char *targets[] = {target, NULL};

    snprintf(target, sizeof(target), "127.0.0.1:%d", w.dcgm_port);
    assert_int_equal(gq_test_prom_start_port(&w.prom, w.prom_port, targets,
                                             SCRAPE_MS), 0);
  }
  wait_field("c", "status.gpuUtilization", "90");
  wait_cond("c", "Idle", "False");
  assert_true(metric("gpuq_prometheus_up ") == 1);
  gq_test_sim_expect_clean(&w.sim, 0);
  w.passed = 1;
}

/* Without Prometheus a running job that nothing happens to still has its
 * allocatedGPUSeconds refreshed (once it lags by its GPUs over the
 * utilization window, 10 virtual s here) and no usedGPUSeconds. */
static void test_allocated_without_prometheus(void **state)
{
  static const char *const nodes[] = {"uc:8", NULL};
  long long alloc = 0;

  (void)state;
  world_up(nodes, -1, NULL);
  quota(NS, 8, "");
  job("a", 4, 3600, "0.9");
  wait_field("a", "status.phase", "Running");
  /* 4 GPUs x 10 s of window: refreshed at least twice */
  for (int i = 0; i < WAIT_MS / 100 &&
                  (alloc = status_int("a", "allocatedGPUSeconds")) < 2 * 4 * 10;
       i++)
    gq_test_sleep_ms(100);
  if (alloc < 2 * 4 * 10)
    fail_msg("allocatedGPUSeconds of a running job is %lld", alloc);
  wait_field("a", "status.phase", "Running"); /* still running */
  assert_int_equal(status_int("a", "usedGPUSeconds"), 0);
  gq_test_sim_expect_clean(&w.sim, 0);
  w.passed = 1;
}

/* An XID error taints the node, requeues the job on it (it resumes on the
 * other node), and the taint goes after the quiet time. */
static void test_xid_taints_and_requeues(void **state)
{
  static const char *const nodes[] = {"ud:8", "ue:8", NULL};
  static const char *const extra[] = {"--gpu-healthy-seconds", "60", NULL};
  json_t *s;
  const char *first;
  char first_node[64];

  (void)state;
  world_up(nodes, 1, extra);
  quota(NS, 16, "");
  job("victim", 8, 3600, "0.9");
  wait_field("victim", "status.phase", "Running");
  s = status_of("victim");
  first = json_string_value(json_array_get(json_object_get(s, "nodes"), 0));
  assert_non_null(first);
  snprintf(first_node, sizeof(first_node), "%s", first);
  json_decref(s);
  sim_xid(first_node, 3, 79, 30);
  wait_taint(first_node, 1);
  wait_field("victim", "status.preemptions", "1");
  wait_field("victim", "status.phase", "Running");
  s = status_of("victim");
  assert_string_not_equal(
      json_string_value(json_array_get(json_object_get(s, "nodes"), 0)),
      first_node);
  assert_string_equal(json_string_value(json_object_get(json_object_get(
                          s, "lastCheckpoint"), "location")) ? "yes" : "no",
                      "yes");
  json_decref(s);
  /* quiet for 60 virtual s after the error ends: the taint is lifted */
  wait_taint(first_node, 0);
  gq_test_sim_expect_clean(&w.sim, 0);
  w.passed = 1;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_utilization_in_status, world_down),
      cmocka_unit_test_teardown(test_idle_preempted_only_when_waiting,
                                world_down),
      cmocka_unit_test_teardown(test_prometheus_down, world_down),
      cmocka_unit_test_teardown(test_allocated_without_prometheus,
                                world_down),
      cmocka_unit_test_teardown(test_xid_taints_and_requeues, world_down),
  };

  if (getenv("GQ_TEST_FILTER"))
    cmocka_set_test_filter(getenv("GQ_TEST_FILTER"));
  return cmocka_run_group_tests(tests, NULL, NULL);
}
