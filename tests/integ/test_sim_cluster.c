/* gpuq-sim part 2: the simulated scheduler, kubelets and node events on a
 * cluster file, and the invariant checker (issue 4's "done when"): kubelet
 * admission, graceful deletion with and without a finished checkpoint,
 * resume from a checkpoint, start delays (a slow pod, a stuck kubelet),
 * drains against a PDB, device-plugin loss, a cordoned node skipped by the
 * scheduler, a deliberate placement miss counted, and /sim/v1/clock. The
 * sim runs at 20x so virtual minutes pass in seconds; every wait is for a
 * condition, with a deadline, or (before a check that something did not
 * happen) for a virtual time the sim has settled (gq_test_sim_wait_*). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/clock.h"
#include "tests/support/fixture.h"
#include "tests/support/proc.h"

static struct gq_test_sim sim;

static int group_setup(void **state)
{
  static const char *const args[] = {"--cluster", "clusters/mixed.yaml",
                                     "--time-scale", "20", NULL};
  (void)state;
  return gq_test_sim_start(&sim, args);
}

static int group_teardown(void **state)
{
  (void)state;
  return gq_test_sim_stop(&sim) == 0 ? 0 : -1;
}

static json_t *call(const char *method, const char *path, const char *body,
                    int want)
{
  return gq_test_sim_call(&sim, method, path, body, want);
}

/* A pod JSON: name, node to pin by nodeName ("" = none), GPUs, and
 * annotations/extra spec as JSON fragments. */
static void create_pod(const char *name, const char *node, int gpus,
                       const char *annotations, const char *extra_spec)
{
  char body[2048];

  snprintf(body, sizeof(body),
           "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"app\":\"%s\"},"
           "\"annotations\":{%s}},\"spec\":{%s%s%s"
           "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{"
           "\"limits\":{\"nvidia.com/gpu\":\"%d\"}}}]}}",
           name, name, annotations, *node ? "\"nodeName\":\"" : "", node,
           *node ? "\"," : "", gpus);
  if (extra_spec && *extra_spec) {
    /* extra spec fields go first: splice them in after "spec":{ */
    char *p = strstr(body, "\"spec\":{") + 8, tail[2048];

    snprintf(tail, sizeof(tail), "%s", p);
    snprintf(p, sizeof(body) - (size_t)(p - body), "%s,%s", extra_spec, tail);
  }
  json_decref(call("POST", "/api/v1/namespaces/default/pods", body, 201));
}

static json_t *get_pod(const char *name)
{
  char path[256];

  snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", name);
  return call("GET", path, NULL, 200);
}

static const char *phase(const json_t *pod)
{
  return json_string_value(
      json_object_get(json_object_get(pod, "status"), "phase"));
}

/* Waits (up to 30 s real) until the pod's field at status.<key> (a phase or
 * reason) equals want, or the pod is gone when want is NULL. */
static int wait_pod(const char *name, const char *key, const char *want)
{
  char url[512], *resp;

  snprintf(url, sizeof(url), "%s/api/v1/namespaces/default/pods/%s", sim.url,
           name);
  for (int t = 0; t < 30000; t += 20) {
    int code = gq_test_http("GET", url, NULL, NULL, NULL, &resp);
    json_t *j = json_loads(resp, 0, NULL);
    const char *v = json_string_value(
        json_object_get(json_object_get(j, "status"), key));
    int done = want ? (code == 200 && v && !strcmp(v, want)) : code == 404;

    free(resp);
    json_decref(j);
    if (done)
      return 1;
    gq_test_sleep_ms(20);
  }
  return 0;
}

static void test_kubelet_admission(void **state)
{
  json_t *p;

  (void)state;
  create_pod("fits", "gpu-h100-00", 8, "\"sim.gpuq.dev/run-seconds\":\"3600\"",
             NULL);
  assert_true(wait_pod("fits", "phase", "Running"));
  p = get_pod("fits");
  assert_non_null(json_object_get(json_object_get(p, "status"), "startTime"));
  assert_true(json_is_true(json_object_get(
      json_array_get(json_object_get(json_object_get(p, "status"),
                                     "containerStatuses"),
                     0),
      "ready")));
  json_decref(p);
  /* A second pod bound to the full node is rejected by the kubelet. */
  create_pod("toomuch", "gpu-h100-00", 1, "", NULL);
  assert_true(wait_pod("toomuch", "reason", "OutOfnvidia.com/gpu"));
  p = get_pod("toomuch");
  assert_string_equal(phase(p), "Failed");
  json_decref(p);
}

static void test_run_to_completion(void **state)
{
  (void)state;
  create_pod("short", "", 1, "\"sim.gpuq.dev/run-seconds\":\"20\"",
             "\"tolerations\":[{\"operator\":\"Exists\"}]");
  assert_true(wait_pod("short", "phase", "Running"));
  assert_true(wait_pod("short", "phase", "Succeeded"));
}

/* The pod's status.startTime as Unix ms (whole seconds). */
static int64_t start_time(const char *name)
{
  json_t *p = get_pod(name);
  int64_t ms = 0;

  assert_int_equal(gq_time_parse(json_string_value(json_object_get(
                                     json_object_get(p, "status"),
                                     "startTime")),
                                 &ms),
                   0);
  json_decref(p);
  return ms;
}

/* /sim/v1/clock: GET reads the virtual clock (20x); POST answers once a
 * virtual time is settled, so a pod's end, due 30 virtual seconds after
 * its start, is not there 20 seconds after it and is there at 31 with no
 * polling; bad waits get 400 at once. */
static void test_clock(void **state)
{
  json_t *c = call("GET", "/sim/v1/clock", NULL, 200), *p;
  int64_t now, real, epoch, start;

  (void)state;
  now = json_integer_value(json_object_get(c, "nowMs"));
  real = json_integer_value(json_object_get(c, "realMs"));
  epoch = json_integer_value(json_object_get(c, "epochMs"));
  assert_true(json_real_value(json_object_get(c, "scale")) == 20.0);
  if (llabs((long long)(now - (epoch + 20 * (real - epoch)))) > 100)
    fail_msg("nowMs %lld is not the virtual time of realMs %lld",
             (long long)now, (long long)real);
  assert_non_null(json_string_value(json_object_get(c, "now")));
  json_decref(c);
  assert_true(gq_test_sim_wait_virtual(&sim, 2) >= now + 2000);

  create_pod("tick", "", 0, "\"sim.gpuq.dev/run-seconds\":\"30\"",
             "\"tolerations\":[{\"operator\":\"Exists\"}]");
  assert_true(wait_pod("tick", "phase", "Running"));
  start = start_time("tick"); /* truncated: the real start is < +1 s */
  gq_test_sim_wait_until(&sim, start + 20000);
  p = get_pod("tick");
  assert_string_equal(phase(p), "Running");
  json_decref(p);
  gq_test_sim_wait_until(&sim, start + 31000);
  p = get_pod("tick");
  assert_string_equal(phase(p), "Succeeded");
  json_decref(p);

  json_decref(call("POST", "/sim/v1/clock", "{}", 400));
  json_decref(call("POST", "/sim/v1/clock", "{\"seconds\":1,\"untilMs\":1}",
                   400));
  json_decref(call("POST", "/sim/v1/clock", "{\"seconds\":-1}", 400));
  json_decref(call("POST", "/sim/v1/clock",
                   "{\"seconds\":1,\"timeoutMs\":0}", 400));
  /* 10^6 virtual seconds are 50000 real ones at 20x: past the timeout */
  json_decref(call("POST", "/sim/v1/clock", "{\"seconds\":1000000}", 400));
  json_decref(call("PUT", "/sim/v1/clock", "{}", 405));
}

/* Waits (up to 30 s real) until pod name is Pending with its first
 * container waiting for reason; 1 then, 0 at the deadline. */
static int waiting_for(const char *name, const char *reason)
{
  for (int t = 0; t < 30000; t += 20) {
    json_t *p = get_pod(name);
    const char *r = json_string_value(json_object_get(
        json_object_get(
            json_object_get(
                json_array_get(json_object_get(json_object_get(p, "status"),
                                               "containerStatuses"),
                               0),
                "state"),
            "waiting"),
        "reason"));
    const char *ph = phase(p);
    int ok = r && !strcmp(r, reason) && ph && !strcmp(ph, "Pending");

    json_decref(p);
    if (ok)
      return 1;
    gq_test_sleep_ms(20);
  }
  return 0;
}

static void node_annotate(const char *node, const char *value_json)
{
  char url[512], body[256], *resp = NULL;

  snprintf(url, sizeof(url), "%s/api/v1/nodes/%s", sim.url, node);
  snprintf(body, sizeof(body), "{\"metadata\":{\"annotations\":{"
           "\"sim.gpuq.dev/start-delay-seconds\":%s}}}", value_json);
  assert_int_equal(gq_test_http("PATCH", url, body,
                                "application/merge-patch+json", NULL, &resp),
                   200);
  free(resp);
}

/* sim.gpuq.dev/start-delay-seconds: a bound pod stays Pending in
 * ContainerCreating for that long (its own annotation, else its node's),
 * then runs; one deleted while it waits goes at once. */
static void test_start_delay(void **state)
{
  json_t *p;
  int64_t created, started;

  (void)state;
  create_pod("delayed", "gpu-h100-03", 1,
             "\"sim.gpuq.dev/run-seconds\":\"3600\","
             "\"sim.gpuq.dev/start-delay-seconds\":\"60\"", NULL);
  assert_true(waiting_for("delayed", "ContainerCreating"));
  assert_true(wait_pod("delayed", "phase", "Running"));
  p = get_pod("delayed");
  assert_int_equal(gq_time_parse(json_string_value(json_object_get(
                                     json_object_get(p, "metadata"),
                                     "creationTimestamp")),
                                 &created),
                   0);
  assert_int_equal(gq_time_parse(json_string_value(json_object_get(
                                     json_object_get(p, "status"),
                                     "startTime")),
                                 &started),
                   0);
  json_decref(p);
  assert_true(started - created >= 59000); /* whole seconds */
  /* the node's kubelet is stuck: its pods wait, and go at once when
   * deleted; once the annotation is gone, new pods start again */
  node_annotate("gpu-h100-03", "\"100000\"");
  create_pod("stuck", "gpu-h100-03", 1, "", NULL);
  assert_true(waiting_for("stuck", "ContainerCreating"));
  json_decref(call("DELETE", "/api/v1/namespaces/default/pods/stuck", NULL,
                   200));
  assert_true(wait_pod("stuck", NULL, NULL));
  node_annotate("gpu-h100-03", "null");
  create_pod("unstuck", "gpu-h100-03", 1,
             "\"sim.gpuq.dev/run-seconds\":\"3600\"", NULL);
  assert_true(wait_pod("unstuck", "phase", "Running"));
}

/* Watches one pod with kubectl get -w -o json into a file, so the last
 * states before it is gone can be read. */
static pid_t watch_pod(const char *name, char *path, size_t len)
{
  snprintf(path, len, "%s/watch-%s.json", sim.dir, name);
  return gq_test_kubectl_bg(&sim, path, "get", "pod", name, "-w", "-o",
                            "json", NULL);
}

static void stop_watch(pid_t pid)
{
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
}

static void test_sigterm_with_checkpoint(void **state)
{
  char path[400];
  pid_t w;

  (void)state;
  create_pod("ckpt", "gpu-h100-01", 8,
             "\"sim.gpuq.dev/run-seconds\":\"100000\","
             "\"sim.gpuq.dev/checkpoint-seconds\":\"30\"",
             "\"terminationGracePeriodSeconds\":120");
  assert_true(wait_pod("ckpt", "phase", "Running"));
  w = watch_pod("ckpt", path, sizeof(path));
  assert_true(gq_test_wait_file(path, "\"ckpt\"", 20000));
  json_decref(call("DELETE", "/api/v1/namespaces/default/pods/ckpt", NULL,
                   200));
  /* It writes its checkpoint within the grace period and exits 0. */
  assert_true(gq_test_wait_file(path, "checkpoint=sim://default/ckpt/", 30000));
  assert_true(gq_test_wait_file(path, "\"exitCode\": 0", 5000));
  assert_true(wait_pod("ckpt", NULL, NULL));
  stop_watch(w);
}

static void test_sigterm_killed_without_checkpoint(void **state)
{
  char path[400], *text;
  pid_t w;

  (void)state;
  create_pod("slow", "gpu-h100-02", 8,
             "\"sim.gpuq.dev/run-seconds\":\"100000\","
             "\"sim.gpuq.dev/checkpoint-seconds\":\"300\"",
             "\"terminationGracePeriodSeconds\":20");
  assert_true(wait_pod("slow", "phase", "Running"));
  w = watch_pod("slow", path, sizeof(path));
  assert_true(gq_test_wait_file(path, "\"slow\"", 20000));
  json_decref(call("DELETE", "/api/v1/namespaces/default/pods/slow", NULL,
                   200));
  /* Terminating pods keep their GPUs: a pod pinned there cannot run yet. */
  create_pod("waiter", "gpu-h100-02", 8, "", NULL);
  assert_true(wait_pod("waiter", "reason", "OutOfnvidia.com/gpu"));
  /* Killed at the end of the grace period: exit 137, no message. */
  assert_true(gq_test_wait_file(path, "\"exitCode\": 137", 30000));
  assert_true(wait_pod("slow", NULL, NULL));
  stop_watch(w);
  text = gq_test_read_file(path, NULL);
  assert_null(strstr(text, "checkpoint="));
  free(text);
}

/* The seconds between a pod's startTime and its container's finishedAt
 * (virtual time, whole seconds). */
static long run_time(const json_t *pod)
{
  const json_t *st = json_object_get(pod, "status");
  const char *start = json_string_value(json_object_get(st, "startTime"));
  const char *end = json_string_value(json_object_get(
      json_object_get(json_object_get(
                          json_array_get(json_object_get(st,
                                                         "containerStatuses"),
                                         0),
                          "state"),
                      "terminated"),
      "finishedAt"));
  int64_t a, b;

  if (!start || !end || gq_time_parse(start, &a) || gq_time_parse(end, &b))
    return -1;
  return (long)((b - a) / 1000);
}

static void test_resume_from_checkpoint(void **state)
{
  json_t *p;
  long t;

  (void)state;
  /* 200 s of work, resuming from 150 s: 50 s left. */
  create_pod("resumed", "gpu-a100-00", 8, "\"sim.gpuq.dev/run-seconds\":\"200\"",
             NULL);
  json_decref(call("DELETE", "/api/v1/namespaces/default/pods/resumed",
                   "{\"gracePeriodSeconds\":0}", 200));
  assert_true(wait_pod("resumed", NULL, NULL));
  {
    char body[1024];

    snprintf(body, sizeof(body),
             "{\"metadata\":{\"name\":\"resumed\",\"annotations\":{"
             "\"sim.gpuq.dev/run-seconds\":\"200\"}},\"spec\":{\"nodeName\":"
             "\"gpu-a100-00\",\"containers\":[{\"name\":\"c\",\"image\":\"i\","
             "\"env\":[{\"name\":\"GPUQ_RESUME_FROM\",\"value\":"
             "\"sim://default/resumed/150\"}],\"resources\":{\"limits\":{"
             "\"nvidia.com/gpu\":\"8\"}}}]}}");
    json_decref(call("POST", "/api/v1/namespaces/default/pods", body, 201));
  }
  assert_true(wait_pod("resumed", "phase", "Succeeded"));
  p = get_pod("resumed");
  t = run_time(p);
  json_decref(p);
  if (t < 49 || t > 52)
    fail_msg("resumed pod ran %ld virtual seconds, want about 50", t);
}

static void test_cordoned_node_skipped(void **state)
{
  json_t *p;
  const char *node;

  (void)state;
  json_decref(call("POST", "/sim/v1/nodes/gpu-a100-01/cordon", NULL, 200));
  json_decref(call("POST", "/sim/v1/nodes/gpu-a100-02/cordon", NULL, 200));
  json_decref(call("POST", "/sim/v1/nodes/gpu-a100-03/cordon", NULL, 200));
  create_pod("placed", "", 8, "\"sim.gpuq.dev/run-seconds\":\"100000\"",
             "\"nodeSelector\":{\"nvidia.com/gpu.product\":"
             "\"NVIDIA-A100-SXM4-80GB\"}");
  /* Settled, the scheduler has placed the pod or left it Unschedulable:
   * either way not on a cordoned A100 (a100-00, free again once the
   * resumed pod ended, is the only one it may take). */
  gq_test_sim_wait_virtual(&sim, 5);
  p = get_pod("placed");
  node = json_string_value(json_object_get(json_object_get(p, "spec"),
                                           "nodeName"));
  if (node) {
    assert_string_not_equal(node, "gpu-a100-01");
    assert_string_not_equal(node, "gpu-a100-02");
    assert_string_not_equal(node, "gpu-a100-03");
  } else {
    assert_string_equal(phase(p), "Pending");
    assert_string_equal(json_string_value(json_object_get(json_array_get(
                            json_object_get(json_object_get(p, "status"),
                                            "conditions"), 0), "reason")),
                        "Unschedulable");
  }
  json_decref(p);
  json_decref(call("POST", "/sim/v1/nodes/gpu-a100-01/uncordon", NULL, 200));
  json_decref(call("POST", "/sim/v1/nodes/gpu-a100-02/uncordon", NULL, 200));
  json_decref(call("POST", "/sim/v1/nodes/gpu-a100-03/uncordon", NULL, 200));
  assert_true(wait_pod("placed", "phase", "Running"));
}

static void test_pinned_to_cordoned_node_waits(void **state)
{
  char body[1024];
  json_t *p;
  const char *msg;

  (void)state;
  json_decref(call("POST", "/sim/v1/nodes/gpu-h100-03/cordon", NULL, 200));
  snprintf(body, sizeof(body),
           "{\"metadata\":{\"name\":\"pinned\"},\"spec\":{\"affinity\":{"
           "\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution"
           "\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
           "\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":["
           "\"gpu-h100-03\"]}]}]}}},\"containers\":[{\"name\":\"c\",\"image\":"
           "\"i\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}");
  json_decref(call("POST", "/api/v1/namespaces/default/pods", body, 201));
  for (int t = 0; t < 200; t++) {
    p = get_pod("pinned");
    msg = json_string_value(json_object_get(
        json_array_get(json_object_get(json_object_get(p, "status"),
                                       "conditions"),
                       0),
        "reason"));
    if (msg && !strcmp(msg, "Unschedulable"))
      break;
    json_decref(p);
    p = NULL;
    gq_test_sleep_ms(50);
  }
  assert_non_null(p);
  assert_string_equal(phase(p), "Pending");
  json_decref(p);
  json_decref(call("POST", "/sim/v1/nodes/gpu-h100-03/uncordon", NULL, 200));
  assert_true(wait_pod("pinned", "phase", "Running"));
}

static void test_device_plugin_loss(void **state)
{
  json_t *n, *p;

  (void)state;
  json_decref(call("POST", "/sim/v1/nodes/gpu-t4-00/device-plugin-loss", NULL,
                   200));
  n = call("GET", "/api/v1/nodes/gpu-t4-00", NULL, 200);
  assert_string_equal(
      json_string_value(json_object_get(
          json_object_get(json_object_get(n, "status"), "allocatable"),
          "nvidia.com/gpu")),
      "0");
  json_decref(n);
  create_pod("t4job", "", 1, "\"sim.gpuq.dev/run-seconds\":\"100000\"",
             "\"nodeSelector\":{\"kubernetes.io/hostname\":\"gpu-t4-00\"},"
             "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":"
             "\"Exists\"}]");
  /* settled: the scheduler has looked at the pod, and left it */
  gq_test_sim_wait_virtual(&sim, 10);
  p = get_pod("t4job");
  assert_string_equal(phase(p), "Pending");
  json_decref(p);
  json_decref(call("POST", "/sim/v1/nodes/gpu-t4-00/device-plugin-restore",
                   NULL, 200));
  assert_true(wait_pod("t4job", "phase", "Running"));
}

static void test_drain_against_pdb(void **state)
{
  json_t *p;

  (void)state;
  create_pod("guarded", "gpu-a100-mig-00", 1,
             "\"sim.gpuq.dev/run-seconds\":\"100000\"",
             "\"terminationGracePeriodSeconds\":5");
  assert_true(wait_pod("guarded", "phase", "Running"));
  json_decref(call("POST", "/apis/policy/v1/namespaces/default/"
                           "poddisruptionbudgets",
                   "{\"metadata\":{\"name\":\"guard\"},\"spec\":{"
                   "\"maxUnavailable\":0,\"selector\":{\"matchLabels\":{"
                   "\"app\":\"guarded\"}}}}",
                   201));
  json_decref(call("POST", "/sim/v1/nodes/gpu-a100-mig-00/drain", NULL, 200));
  /* 10 virtual seconds settled: the drain's retries due by then (every 5
   * virtual seconds, so at least one) have run, and the budget refused */
  gq_test_sim_wait_virtual(&sim, 10);
  p = get_pod("guarded");
  assert_null(json_object_get(json_object_get(p, "metadata"),
                              "deletionTimestamp"));
  json_decref(p);
  json_decref(call("DELETE", "/apis/policy/v1/namespaces/default/"
                             "poddisruptionbudgets/guard",
                   NULL, 200));
  assert_true(wait_pod("guarded", NULL, NULL));
  p = call("GET", "/api/v1/nodes/gpu-a100-mig-00", NULL, 200);
  assert_true(json_is_true(json_object_get(json_object_get(p, "spec"),
                                           "unschedulable")));
  json_decref(p);
}

static void test_placement_miss_counted(void **state)
{
  json_t *r;
  char body[1024];

  (void)state;
  r = call("GET", "/sim/v1/report", NULL, 200);
  assert_int_equal(json_integer_value(json_object_get(r, "placement_misses")),
                   0);
  json_decref(r);
  /* A gpuq pod pinned (by affinity) to a full node: the scheduler leaves
   * it Unschedulable, and the checker counts a placement miss. */
  snprintf(body, sizeof(body),
           "{\"metadata\":{\"name\":\"miss\",\"labels\":{\"gpuq.dev/job\":"
           "\"j\",\"gpuq.dev/job-uid\":\"u\",\"gpuq.dev/team\":\"t\","
           "\"gpuq.dev/attempt\":\"1\"}},\"spec\":{\"affinity\":{"
           "\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution"
           "\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
           "\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":["
           "\"gpu-h100-00\"]}]}]}}},\"containers\":[{\"name\":\"c\",\"image\":"
           "\"i\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"4\"}}}]}}");
  json_decref(call("POST", "/api/v1/namespaces/default/pods", body, 201));
  for (int t = 0; t < 500; t++) {
    r = call("GET", "/sim/v1/report", NULL, 200);
    if (json_integer_value(json_object_get(r, "placement_misses")) == 1)
      break;
    json_decref(r);
    r = NULL;
    gq_test_sleep_ms(20);
  }
  assert_non_null(r);
  assert_int_equal(json_integer_value(json_object_get(r,
                                                      "invariant_violations")),
                   0);
  json_decref(r);
}

static void test_overcommit_violation_counted(void **state)
{
  json_t *r;
  char body[1024];

  (void)state;
  /* Bypassing the scheduler with nodeName onto a full node over-commits
   * it: INV-1 counts that (the kubelet then rejects the pod too). */
  snprintf(body, sizeof(body),
           "{\"metadata\":{\"name\":\"over\",\"labels\":{\"gpuq.dev/job\":"
           "\"k\",\"gpuq.dev/job-uid\":\"v\",\"gpuq.dev/team\":\"t\","
           "\"gpuq.dev/attempt\":\"1\"}},\"spec\":{\"nodeName\":\"gpu-h100-00\","
           "\"containers\":[{\"name\":\"c\",\"image\":\"i\",\"resources\":{"
           "\"limits\":{\"nvidia.com/gpu\":\"2\"}}}]}}");
  json_decref(call("POST", "/api/v1/namespaces/default/pods", body, 201));
  assert_true(wait_pod("over", "reason", "OutOfnvidia.com/gpu"));
  r = call("GET", "/sim/v1/report", NULL, 200);
  assert_int_equal(json_integer_value(json_object_get(r,
                                                      "invariant_violations")),
                   1);
  assert_int_equal(json_integer_value(json_object_get(r, "placement_misses")),
                   2);
  json_decref(r);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kubelet_admission),
      cmocka_unit_test(test_run_to_completion),
      cmocka_unit_test(test_clock),
      cmocka_unit_test(test_start_delay),
      cmocka_unit_test(test_sigterm_with_checkpoint),
      cmocka_unit_test(test_sigterm_killed_without_checkpoint),
      cmocka_unit_test(test_resume_from_checkpoint),
      cmocka_unit_test(test_cordoned_node_skipped),
      cmocka_unit_test(test_pinned_to_cordoned_node_waits),
      cmocka_unit_test(test_device_plugin_loss),
      cmocka_unit_test(test_drain_against_pdb),
      cmocka_unit_test(test_placement_miss_counted),
      cmocka_unit_test(test_overcommit_violation_counted),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
