/* A trace replay end to end without gpuq's controller: gpuq-sim replays
 * traces/philly_small.csv (500 real jobs) on clusters/philly-small.yaml at
 * 10000x, and a trivial client in this test plays the controller's part in
 * the simplest correct way: it places each waiting job's replicas first-fit
 * on nodes with free GPUs, creates pinned pods, and marks the job Succeeded
 * when its pods have. The sim must finish on its own and write a report
 * with every job completed, no invariant violation and no placement miss
 * (issue 4's "done when"); while it runs, GET /sim/v1/report carries the
 * replay's progress, and at the end --series writes the plot data files
 * the demo draws (issue 9). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/support/fixture.h"
#include "tests/support/proc.h"

static struct gq_test_sim sim;
static char report_path[400];
static int live_seen; /* a live report with the replay's progress was seen */

static json_t *get(const char *path)
{
  char url[512], *resp;
  json_t *j;

  snprintf(url, sizeof(url), "%s%s", sim.url, path);
  if (gq_test_http("GET", url, NULL, NULL, NULL, &resp) != 200) {
    free(resp);
    return NULL;
  }
  j = json_loads(resp, 0, NULL);
  free(resp);
  return j;
}

static int send_json(const char *method, const char *path, json_t *body,
                     const char *ctype)
{
  char url[512], *resp, *text = json_dumps(body, JSON_COMPACT);
  int code;

  snprintf(url, sizeof(url), "%s%s", sim.url, path);
  code = gq_test_http(method, url, text, ctype, NULL, &resp);
  free(resp);
  free(text);
  json_decref(body);
  return code;
}

static const char *str(const json_t *o, const char *a, const char *b)
{
  return json_string_value(json_object_get(json_object_get(o, a), b));
}

static long long gpus_of(const json_t *pod)
{
  const json_t *cs = json_object_get(json_object_get(pod, "spec"),
                                     "containers");
  const char *v = json_string_value(json_object_get(
      json_object_get(json_object_get(json_array_get(cs, 0), "resources"),
                      "limits"),
      "nvidia.com/gpu"));

  return v ? atoll(v) : 0;
}

/* Free GPUs per node: allocatable minus what unfinished pods hold. */
static json_t *free_gpus(const json_t *nodes, const json_t *pods)
{
  json_t *free_by = json_object(), *it;
  size_t i;

  json_array_foreach(json_object_get(nodes, "items"), i, it)
    json_object_set_new(free_by, str(it, "metadata", "name"),
                        json_integer(atoll(str(json_object_get(it, "status"),
                                               "allocatable",
                                               "nvidia.com/gpu"))));
  json_array_foreach(json_object_get(pods, "items"), i, it) {
    const char *node = str(it, "spec", "nodeName");
    const char *ph = str(it, "status", "phase");
    const json_t *aff = json_object_get(json_object_get(it, "spec"),
                                        "affinity");

    if (!node) /* pinned but not yet bound: count on the pinned node */
      node = json_string_value(json_array_get(
          json_object_get(json_array_get(
                              json_object_get(json_array_get(
                                                  json_object_get(
                                                      json_object_get(
                                                          json_object_get(
                                                              aff,
                                                              "nodeAffinity"),
                                                          "requiredDuring"
                                                          "SchedulingIgnored"
                                                          "DuringExecution"),
                                                      "nodeSelectorTerms"),
                                                  0),
                                              "matchExpressions"),
                              0),
                          "values"),
          0));
    if (!node || (ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"))))
      continue;
    json_object_set_new(free_by, node,
                        json_integer(json_integer_value(json_object_get(
                                         free_by, node)) - gpus_of(it)));
  }
  return free_by;
}

static json_t *pod_for(const json_t *job, long long replica, const char *node,
                       long long gpus)
{
  const char *ns = str(job, "metadata", "namespace");
  const char *name = str(job, "metadata", "name");
  char pname[200], r[16], g[16];

  snprintf(pname, sizeof(pname), "%s-1-%lld", name, replica);
  snprintf(r, sizeof(r), "%lld", replica);
  snprintf(g, sizeof(g), "%lld", gpus);
  return json_pack(
      "{s:{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}, s:O, s:[{s:s, s:s, s:s, "
      "s:s, s:b}]}, s:{s:s, s:{s:{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}, "
      "s:[{s:s, s:s, s:{s:{s:s}}}]}}",
      "metadata", "name", pname, "namespace", ns, "labels", "gpuq.dev/job",
      name, "gpuq.dev/job-uid", str(job, "metadata", "uid"), "gpuq.dev/team",
      str(job, "spec", "team"), "gpuq.dev/attempt", "1", "gpuq.dev/replica",
      r, "annotations",
      json_object_get(json_object_get(json_object_get(json_object_get(job,
                                                                      "spec"),
                                                      "template"),
                                      "metadata"),
                      "annotations"),
      "ownerReferences", "apiVersion", "gpuq.dev/v1alpha1", "kind", "GpuJob",
      "name", name, "uid", str(job, "metadata", "uid"), "controller", 1,
      "spec", "restartPolicy", "Never", "affinity", "nodeAffinity",
      "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
      "matchExpressions", "key", "kubernetes.io/hostname", "operator", "In",
      "values", node, "containers", "name", "trainer", "image",
      "gpuq-sim/trainer", "resources", "limits", "nvidia.com/gpu", g);
}

static void set_phase(const json_t *job, const char *phase)
{
  char path[400];

  snprintf(path, sizeof(path),
           "/apis/gpuq.dev/v1alpha1/namespaces/%s/gpujobs/%s/status",
           str(job, "metadata", "namespace"), str(job, "metadata", "name"));
  send_json("PATCH", path,
            json_pack("{s:{s:s}}", "status", "phase", phase),
            "application/merge-patch+json");
}

/* First-fit: every replica on a node with room, or nothing. */
static void try_place(const json_t *job, json_t *free_by)
{
  long long reps = json_integer_value(json_object_get(json_object_get(job,
                                                                      "spec"),
                                                      "replicas"));
  long long per = json_integer_value(json_object_get(
      json_object_get(job, "spec"), "gpusPerReplica"));
  json_t *plan = json_array(), *snapshot = json_deep_copy(free_by), *p;
  const char *node;
  json_t *v;
  size_t i;

  for (long long r = 0; r < reps; r++) {
    const char *chosen = NULL;

    json_object_foreach(snapshot, node, v)
      if (json_integer_value(v) >= per) {
        chosen = node;
        break;
      }
    if (!chosen)
      break;
    json_array_append_new(plan, json_string(chosen));
    json_object_set_new(snapshot, chosen,
                        json_integer(json_integer_value(json_object_get(
                                         snapshot, chosen)) - per));
  }
  if ((long long)json_array_size(plan) == reps) {
    char path[300];

    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods",
             str(job, "metadata", "namespace"));
    json_array_foreach(plan, i, p)
      assert_int_equal(send_json("POST", path,
                                 pod_for(job, (long long)i,
                                         json_string_value(p), per),
                                 NULL),
                       201);
    json_object_update(free_by, snapshot);
    set_phase(job, "Running");
  }
  json_decref(plan);
  json_decref(snapshot);
}

/* A running job whose pods all succeeded is done: its pods go. */
static void try_finish(const json_t *job, const json_t *pods)
{
  const char *uid = str(job, "metadata", "uid");
  long long reps = json_integer_value(json_object_get(json_object_get(job,
                                                                      "spec"),
                                                      "replicas"));
  long long done = 0;
  const json_t *p;
  size_t i;

  json_array_foreach(json_object_get(pods, "items"), i, p) {
    const char *ju = json_string_value(json_object_get(
        json_object_get(json_object_get(p, "metadata"), "labels"),
        "gpuq.dev/job-uid"));
    const char *ph = str(p, "status", "phase");

    if (ju && !strcmp(ju, uid) && ph && !strcmp(ph, "Succeeded"))
      done++;
  }
  if (done < reps)
    return;
  set_phase(job, "Succeeded");
  json_array_foreach(json_object_get(pods, "items"), i, p) {
    const char *ju = json_string_value(json_object_get(
        json_object_get(json_object_get(p, "metadata"), "labels"),
        "gpuq.dev/job-uid"));
    char path[400];

    if (!ju || strcmp(ju, uid))
      continue;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s",
             str(p, "metadata", "namespace"), str(p, "metadata", "name"));
    send_json("DELETE", path, json_object(), NULL);
  }
}

/* The live progress in /sim/v1/report: consistent counts of the trace. */
static void check_live(void)
{
  json_t *rep = get("/sim/v1/report");
  const json_t *live = json_object_get(rep, "replay");
  long long sub, q, run, end;

  if (!rep)
    return; /* the sim has just ended */
  assert_non_null(live);
  assert_int_equal(json_integer_value(json_object_get(live, "jobs")), 500);
  sub = json_integer_value(json_object_get(live, "submitted"));
  q = json_integer_value(json_object_get(live, "queued"));
  run = json_integer_value(json_object_get(live, "running"));
  end = json_integer_value(json_object_get(live, "ended"));
  assert_true(sub >= 0 && sub <= 500 && q >= 0 && run >= 0 && end >= 0);
  assert_int_equal(q + run + end, sub);
  assert_true(json_integer_value(json_object_get(live, "virtual_s")) >= 0);
  live_seen += sub > 0;
  json_decref(rep);
}

/* Counts the lines of path that start with prefix ("" = every line). */
static int count_lines(const char *path, const char *prefix)
{
  FILE *f = fopen(path, "r");
  char line[4096];
  int n = 0;

  assert_non_null(f);
  while (fgets(line, sizeof(line), f))
    n += !strncmp(line, prefix, strlen(prefix));
  fclose(f);
  return n;
}

/* jobs.csv (--series): a header and one row per trace job, each of which
 * ran to its end here: submitted, then its first pod created, started,
 * its pod ended, its status said so, in that order (this test's client
 * creates the pods after seeing the job; the status follows the pod's
 * end). */
static void check_jobs_csv(const char *dir)
{
  char path[600], line[512], name[64], team[64];
  long long gpus, submit, dur;
  double pod, start, done, end;
  int rows = 0;
  FILE *f;

  snprintf(path, sizeof(path), "%s/jobs.csv", dir);
  assert_int_equal(count_lines(path, "job,team,gpus,submit_s,duration_s,"
                                     "pod_s,start_s,done_s,end_s"),
                   1);
  f = fopen(path, "r");
  assert_non_null(f);
  assert_non_null(fgets(line, sizeof(line), f)); /* the header */
  while (fgets(line, sizeof(line), f)) {
    assert_int_equal(sscanf(line, "%63[^,],%63[^,],%lld,%lld,%lld,%lf,%lf,"
                                  "%lf,%lf",
                            name, team, &gpus, &submit, &dur, &pod, &start,
                            &done, &end),
                     9);
    assert_true(gpus >= 1 && dur >= 0);
    assert_true(pod >= (double)submit && start >= pod && done >= start &&
                end >= done);
    rows++;
  }
  fclose(f);
  assert_int_equal(rows, 500);
}

/* The plot data files (--series): one row per sample after a header row
 * naming the teams, and each team's queue-time CDF (one block per team,
 * one row per started job, the last fraction 1). */
static void check_series(const char *dir, size_t samples)
{
  char path[600], line[4096];
  FILE *f;
  int rows = 0, last_one = 0;

  snprintf(path, sizeof(path), "%s/utilization.dat", dir);
  assert_int_equal(count_lines(path, ""), (int)samples + 1);
  assert_int_equal(count_lines(path, "hours busy_gpus utilization_pct"), 1);
  snprintf(path, sizeof(path), "%s/queued.dat", dir);
  assert_int_equal(count_lines(path, ""), (int)samples + 1);
  assert_int_equal(count_lines(path, "hours team-"), 1);
  snprintf(path, sizeof(path), "%s/queue_times.dat", dir);
  assert_int_equal(count_lines(path, "# team-"), 10);
  f = fopen(path, "r");
  assert_non_null(f);
  while (fgets(line, sizeof(line), f)) {
    double q, frac;

    if (sscanf(line, "%lf %lf", &q, &frac) != 2)
      continue;
    assert_true(q >= 1 && frac > 0 && frac <= 1);
    rows++;
    last_one += frac == 1.0;
  }
  fclose(f);
  assert_int_equal(rows, 500);
  assert_int_equal(last_one, 10);
  check_jobs_csv(dir);
}

/* The GPU-hours (issue 22, --idle-share 0.3): allocated hours are the busy
 * GPU-seconds (no MIG in the trace), used between the constant jobs' 0.60
 * and everyone's 0.98, idle hours from the notebook-like jobs, the teams'
 * figures add up to the totals, and usage.dat's curves have the same
 * areas. */
static void check_usage(const json_t *rep, const char *dir)
{
  double alloc = json_real_value(json_object_get(rep, "allocated_gpu_hours"));
  double used = json_real_value(json_object_get(rep, "used_gpu_hours"));
  double idle = json_real_value(json_object_get(rep, "idle_gpu_hours"));
  double sum[3] = {0, 0, 0}, area[2] = {0, 0}, h0 = 0, h, a, u;
  const char *name;
  const json_t *t;
  char path[600], line[256];
  FILE *f;

  assert_float_equal(alloc, json_real_value(json_object_get(
                                rep, "busy_gpu_seconds")) / 3600,
                     alloc * 0.001 + 0.01);
  assert_true(used > 0.02 * alloc && used < 0.98 * alloc);
  assert_true(idle > 0 && idle < alloc);
  json_object_foreach((json_t *)json_object_get(rep, "teams"), name, t) {
    sum[0] += json_real_value(json_object_get(t, "allocated_gpu_hours"));
    sum[1] += json_real_value(json_object_get(t, "used_gpu_hours"));
    sum[2] += json_real_value(json_object_get(t, "idle_gpu_hours"));
  }
  assert_float_equal(sum[0], alloc, 1e-6 * alloc);
  assert_float_equal(sum[1], used, 1e-6 * alloc);
  assert_float_equal(sum[2], idle, 1e-6 * alloc);
  snprintf(path, sizeof(path), "%s/usage.dat", dir);
  assert_int_equal(count_lines(path, "hours allocated_gpus used_gpus"), 1);
  f = fopen(path, "r");
  assert_non_null(f);
  while (fgets(line, sizeof(line), f))
    if (sscanf(line, "%lf %lf %lf", &h, &a, &u) == 3) {
      area[0] += (h - h0) * a;
      area[1] += (h - h0) * u;
      h0 = h;
    }
  fclose(f);
  assert_float_equal(area[0], alloc, alloc * 0.001 + 0.1);
  assert_float_equal(area[1], used, alloc * 0.001 + 0.1);
}

/* One pass of the trivial client. Returns 0 once the sim has gone. */
static int client_pass(void)
{
  json_t *jobs = get("/apis/gpuq.dev/v1alpha1/gpujobs");
  json_t *pods = jobs ? get("/api/v1/pods") : NULL;
  json_t *nodes = pods ? get("/api/v1/nodes") : NULL, *free_by, *j;
  size_t i;

  if (!nodes) {
    json_decref(jobs);
    json_decref(pods);
    return 0;
  }
  check_live();
  free_by = free_gpus(nodes, pods);
  json_array_foreach(json_object_get(jobs, "items"), i, j) {
    const char *ph = str(j, "status", "phase");

    if (!ph)
      try_place(j, free_by);
    else if (!strcmp(ph, "Running"))
      try_finish(j, pods);
  }
  json_decref(free_by);
  json_decref(jobs);
  json_decref(pods);
  json_decref(nodes);
  return 1;
}

static void test_replay_philly_small(void **state)
{
  char dir[] = "/tmp/gpuq-replay-series-XXXXXX";
  const char *args[] = {"--cluster", "clusters/philly-small.yaml", "--trace",
                        "traces/philly_small.csv", "--time-scale", "10000",
                        "--report", report_path, "--series", dir,
                        "--idle-share", "0.3", NULL};
  json_t *rep;

  (void)state;
  assert_non_null(mkdtemp(dir));
  snprintf(report_path, sizeof(report_path), "/tmp/gpuq-replay-report-%d.json",
           (int)getpid());
  assert_int_equal(gq_test_sim_start(&sim, args), 0);
  /* The sim exits by itself once every job has ended (bounded: 5 min). */
  for (int t = 0; t < 300000 && client_pass(); t += 20)
    gq_test_sleep_ms(20);
  assert_int_equal(gq_test_sim_wait(&sim, 10000), 0);
  rep = json_load_file(report_path, 0, NULL);
  assert_non_null(rep);
  assert_int_equal(json_integer_value(json_object_get(rep, "jobs_submitted")),
                   500);
  assert_int_equal(json_integer_value(json_object_get(rep, "jobs_completed")),
                   500);
  assert_int_equal(json_integer_value(json_object_get(
                       rep, "invariant_violations")),
                   0);
  assert_int_equal(json_integer_value(json_object_get(rep,
                                                      "placement_misses")),
                   0);
  assert_int_equal(json_integer_value(json_object_get(rep, "preemptions")), 0);
  assert_int_equal(json_integer_value(json_object_get(rep,
                                                      "checkpoint_resumes")),
                   0);
  assert_int_equal(json_integer_value(json_object_get(rep, "gpus")), 320);
  assert_true(json_real_value(json_object_get(rep, "gpu_utilization")) > 0.1);
  assert_true(json_real_value(json_object_get(rep, "gpu_utilization")) <= 1.0);
  assert_int_equal(json_object_size(json_object_get(rep, "teams")), 10);
  assert_true(json_array_size(json_object_get(
                  json_object_get(rep, "timeseries"), "t")) > 10);
  assert_true(live_seen > 0);
  {
    const json_t *all = json_object_get(rep, "all_jobs");
    double qm = json_real_value(json_object_get(all, "queue_mean_s"));

    assert_int_equal(json_integer_value(json_object_get(all, "jobs")), 500);
    assert_true(qm >= 0);
    assert_true(json_real_value(json_object_get(all, "jct_mean_s")) > qm);
    /* every job ran to its end and its status said so after its pods
     * ended, by this test's client polling every 20 real ms: a lag > 0 (0
     * would mean no pod end was recorded) and below the JCT */
    assert_true(json_is_real(json_object_get(all, "end_lag_mean_s")));
    assert_true(json_real_value(json_object_get(all, "end_lag_mean_s")) > 0);
    assert_true(json_real_value(json_object_get(all, "end_lag_mean_s")) <
                json_real_value(json_object_get(all, "jct_mean_s")));
    assert_true(json_real_value(json_object_get(all, "end_lag_p99_s")) >= 0);
    assert_true(json_real_value(json_object_get(all, "queue_p99_s")) >=
                json_real_value(json_object_get(all, "queue_p50_s")));
  }
  check_series(dir, json_array_size(json_object_get(
                        json_object_get(rep, "timeseries"), "t")));
  check_usage(rep, dir);
  gq_test_rmtree(dir);
  /* For the record (issue notes): how fast the sim replayed. */
  fprintf(stderr, "replay: %.0f virtual s in a run at %.0fx, utilization "
          "%.3f, Jain %.3f\n",
          json_real_value(json_object_get(rep, "virtual_seconds")),
          json_real_value(json_object_get(rep, "replay_speed")),
          json_real_value(json_object_get(rep, "gpu_utilization")),
          json_real_value(json_object_get(rep, "jain_fairness")));
  json_decref(rep);
  remove(report_path);
  assert_int_equal(gq_test_sim_stop(&sim), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_replay_philly_small),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
