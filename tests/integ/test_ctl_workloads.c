/* gpuq-controller queues workloads it did not create (issue 20,
 * docs/integrations.md), against gpuq-sim and a private redis-server: a
 * plain GPU pod, a pod group and a batch/v1 Job, each as gpuq's webhook
 * leaves them (gated, or suspended, and annotated gpuq.dev/managed),
 * wait under quota and run when it frees; a group is admitted whole or
 * not at all; a higher-priority GpuJob preempts a plain pod; a restarted
 * controller adopts gated pods without making a second stand-in. The
 * webhook's own part (gating at create) is tested in test_webhook.c and
 * test_ctl_webhooks.c. Every wait is for a condition, with a deadline.
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
#define JOBS "/apis/gpuq.dev/v1alpha1/namespaces/team-a/gpujobs"
#define PODS "/api/v1/namespaces/team-a/pods"
#define BATCH "/apis/batch/v1/namespaces/team-a/jobs"

static const char *const cargs[] = {"--time-scale", "10", "--time-epoch",
                                    "1800000000", NULL};

static int setup(void **state)
{
  static const char *const args[] = {"--cluster", "clusters/mixed.yaml",
                                     "--time-scale", "10", "--time-epoch",
                                     "1800000000", NULL};

  (void)state;
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
  json_decref(gq_test_sim_call(&sim, "POST",
      "/apis/scheduling.k8s.io/v1/priorityclasses",
      "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\","
      "\"metadata\":{\"name\":\"low\"},\"value\":10}", 201));
  json_decref(gq_test_sim_call(&sim, "POST",
      "/apis/scheduling.k8s.io/v1/priorityclasses",
      "{\"apiVersion\":\"scheduling.k8s.io/v1\",\"kind\":\"PriorityClass\","
      "\"metadata\":{\"name\":\"high\"},\"value\":1000}", 201));
  return gq_test_ctl_start(&ctl, &sim, redis.url, 1, cargs);
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

/* A GpuJob of team-a: gpus GPUs for run_s virtual seconds (0: until
 * deleted), at PriorityClass pc (NULL: none). */
static void create_job(const char *name, int gpus, int run_s, const char *pc)
{
  char body[1200], ann[128] = "", prio[64] = "";

  if (run_s > 0)
    snprintf(ann, sizeof(ann), "\"metadata\":{\"annotations\":"
             "{\"sim.gpuq.dev/run-seconds\":\"%d\"}},", run_s);
  if (pc)
    snprintf(prio, sizeof(prio), "\"priorityClassName\":\"%s\",", pc);
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"team-a\"},"
           "\"spec\":{\"team\":\"team-a\",%s\"gpusPerReplica\":%d,"
           "\"template\":{%s\"spec\":"
           "{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
           name, prio, gpus, ann);
  json_decref(gq_test_sim_call(&sim, "POST", JOBS, body, 201));
}

/* The containers of a pod (or pod template) asking for gpus GPUs. */
static void containers(char *buf, size_t len, int gpus)
{
  snprintf(buf, len, "\"containers\":[{\"name\":\"c\",\"image\":\"x\","
           "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"%d\"}}}]", gpus);
}

/* A pod as gpuq's webhook leaves it: gated, managed, its team labelled;
 * group: its pod group of 'total' pods (NULL: none); node: the node it
 * must run on (nodeSelector; NULL: any). */
static void create_pod_on(const char *name, int gpus, int run_s,
                          const char *pc, const char *group, int total,
                          const char *node)
{
  char body[2000], c[300], lbl[200] = "", prio[160] = "", run[80] = "";

  containers(c, sizeof(c), gpus);
  if (run_s > 0) /* else it runs until deleted */
    snprintf(run, sizeof(run), ",\"sim.gpuq.dev/run-seconds\":\"%d\"",
             run_s);
  if (group)
    snprintf(lbl, sizeof(lbl), ",\"gpuq.dev/pod-group\":\"%s\","
             "\"gpuq.dev/pod-group-total\":\"%d\"", group, total);
  if (pc || node)
    snprintf(prio, sizeof(prio), "\"priorityClassName\":\"%s\","
             "\"nodeSelector\":{\"kubernetes.io/hostname\":\"%s\"},",
             pc ? pc : "", node ? node : "");
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
           "\"%s\",\"namespace\":\"team-a\",\"labels\":{\"gpuq.dev/team\":"
           "\"team-a\"%s},\"annotations\":{\"gpuq.dev/managed\":\"true\""
           "%s}},\"spec\":{%s"
           "\"schedulingGates\":[{\"name\":\"gpuq.dev/admission\"}],%s}}",
           name, lbl, run, prio, c);
  json_decref(gq_test_sim_call(&sim, "POST", PODS, body, 201));
}

/* A pod as gpuq's webhook leaves it: gated, managed, its team labelled.
 * group: its pod group of 'total' pods (NULL: none). */
static void create_pod(const char *name, int gpus, int run_s, const char *pc,
                       const char *group, int total)
{
  create_pod_on(name, gpus, run_s, pc, group, total, NULL);
}

static int wait_phase(const char *job, const char *phase)
{
  char path[256];

  snprintf(path, sizeof(path), JOBS "/%s", job);
  return gq_test_wait_field(&sim, path, "status.phase", phase, WAIT_MS);
}

static int wait_pod(const char *pod, const char *phase)
{
  char path[256];

  snprintf(path, sizeof(path), PODS "/%s", pod);
  return gq_test_wait_field(&sim, path, "status.phase", phase, WAIT_MS);
}

/* 1 if the pod still carries gpuq's scheduling gate. */
static int gated(const char *pod)
{
  char path[256];
  json_t *p, *g;
  int n;

  snprintf(path, sizeof(path), PODS "/%s", pod);
  p = gq_test_sim_call(&sim, "GET", path, NULL, 200);
  g = json_object_get(json_object_get(p, "spec"), "schedulingGates");
  n = (int)json_array_size(g);
  json_decref(p);
  return n > 0;
}

/* How many GpuJobs stand for workload 'name'. */
static long stand_ins(const char *name)
{
  json_t *l = gq_test_sim_call(&sim, "GET", JOBS, NULL, 200), *it;
  size_t i;
  long n = 0;

  json_array_foreach(json_object_get(l, "items"), i, it) {
    const char *w = json_string_value(json_object_get(
        json_object_get(json_object_get(it, "spec"), "workload"), "name"));

    n += w && !strcmp(w, name);
  }
  json_decref(l);
  return n;
}

static int wait_gone(const char *path)
{
  char url[512], *resp = NULL;
  int st = 0;

  snprintf(url, sizeof(url), "%s%s", sim.url, path);
  for (int t = 0; t < WAIT_MS; t += 50) {
    st = gq_test_http("GET", url, NULL, NULL, NULL, &resp);
    free(resp);
    resp = NULL;
    if (st == 404)
      return 1;
    gq_test_sleep_ms(50);
  }
  return 0;
}

/* A plain 8-GPU pod waits gated while the team's quota is full, and runs
 * (on a node gpuq chose) once it frees; its stand-in ends Succeeded. */
static void test_plain_pod_waits_for_quota(void **state)
{
  json_t *p;
  const char *node, *pin;

  (void)state;
  create_job("holder", 8, 30, NULL);
  assert_true(wait_phase("holder", "Running"));
  create_pod("notebook", 8, 20, NULL, NULL, 0);
  assert_true(wait_phase("pod-notebook", "Queued"));
  assert_true(gq_test_wait_field(&sim, JOBS "/pod-notebook", "status.reason",
                                 "WaitingForQuota", WAIT_MS));
  assert_true(gated("notebook"));
  assert_true(wait_phase("holder", "Succeeded"));
  assert_true(wait_pod("notebook", "Running"));
  p = gq_test_sim_call(&sim, "GET", PODS "/notebook", NULL, 200);
  node = json_string_value(json_object_get(json_object_get(p, "spec"),
                                           "nodeName"));
  pin = json_string_value(json_object_get(json_object_get(
      json_object_get(p, "metadata"), "annotations"), "gpuq.dev/node"));
  assert_non_null(node);
  assert_non_null(pin);
  assert_string_equal(node, pin);
  json_decref(p);
  assert_true(wait_phase("pod-notebook", "Succeeded"));
  assert_int_equal(stand_ins("notebook"), 1);
  /* the pod deleted, its stand-in goes too */
  json_decref(gq_test_sim_call(&sim, "DELETE", PODS "/notebook", NULL, 200));
  assert_true(wait_gone(JOBS "/pod-notebook"));
}

/* A pod group of 3 is not queued while 2 of its pods exist, and runs whole
 * once the third arrives. */
static void test_pod_group_whole(void **state)
{
  int64_t now;

  (void)state;
  create_pod("g-0", 2, 20, NULL, "trio", 3);
  create_pod("g-1", 2, 20, NULL, "trio", 3);
  now = gq_test_sim_now_ms(&sim);
  gq_test_sim_wait_until(&sim, now + 20000);
  assert_int_equal(stand_ins("trio"), 0);
  assert_true(gated("g-0") && gated("g-1"));
  create_pod("g-2", 2, 20, NULL, "trio", 3);
  assert_true(wait_phase("group-trio", "Running"));
  assert_true(wait_pod("g-0", "Running"));
  assert_true(wait_pod("g-1", "Running"));
  assert_true(wait_pod("g-2", "Running"));
  assert_true(wait_phase("group-trio", "Succeeded"));
  for (int i = 0; i < 3; i++) {
    char path[128];

    snprintf(path, sizeof(path), PODS "/g-%d", i);
    json_decref(gq_test_sim_call(&sim, "DELETE", path, NULL, 200));
  }
  assert_true(wait_gone(JOBS "/group-trio"));
}

/* A batch/v1 Job of parallelism 2, suspended by the webhook, is admitted,
 * unsuspended with its template pinned, completes, and its GPUs return
 * (a job of the whole quota runs after it). */
static void test_batch_job(void **state)
{
  char body[2000], c[300];
  json_t *j, *aff;

  (void)state;
  containers(c, sizeof(c), 4);
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":"
           "{\"name\":\"train\",\"namespace\":\"team-a\",\"labels\":"
           "{\"gpuq.dev/team\":\"team-a\"},\"annotations\":"
           "{\"gpuq.dev/managed\":\"true\"}},\"spec\":{\"suspend\":true,"
           "\"parallelism\":2,\"completions\":2,\"template\":{\"metadata\":"
           "{\"annotations\":{\"sim.gpuq.dev/run-seconds\":\"20\"}},"
           "\"spec\":{\"restartPolicy\":\"Never\",%s}}}}", c);
  json_decref(gq_test_sim_call(&sim, "POST", BATCH, body, 201));
  assert_true(wait_phase("job-train", "Running"));
  j = gq_test_sim_call(&sim, "GET", BATCH "/train", NULL, 200);
  assert_false(json_is_true(json_object_get(json_object_get(j, "spec"),
                                            "suspend")));
  aff = json_object_get(json_object_get(json_object_get(json_object_get(
      json_object_get(j, "spec"), "template"), "spec"), "affinity"),
      "nodeAffinity");
  assert_non_null(aff);
  json_decref(j);
  assert_true(wait_phase("job-train", "Succeeded"));
  assert_true(gq_test_wait_field(&sim, BATCH "/train", "status.succeeded",
                                 "2", WAIT_MS));
  create_job("after-train", 8, 10, NULL);
  assert_true(wait_phase("after-train", "Succeeded"));
}

/* 1 once an Event of reason 'reason' about object 'name' exists. */
static int event_of(const char *name, const char *reason)
{
  for (int t = 0; t < WAIT_MS; t += 100) {
    json_t *l = gq_test_sim_call(&sim, "GET",
                                 "/api/v1/namespaces/team-a/events", NULL,
                                 200), *e;
    size_t i;
    int found = 0;

    json_array_foreach(json_object_get(l, "items"), i, e) {
      const char *n = json_string_value(json_object_get(
          json_object_get(e, "involvedObject"), "name"));
      const char *r = json_string_value(json_object_get(e, "reason"));

      found |= n && r && !strcmp(n, name) && !strcmp(r, reason);
    }
    json_decref(l);
    if (found)
      return 1;
    gq_test_sleep_ms(100);
  }
  return 0;
}

/* Sets team-a's nominal quota (a merge patch, as kubectl patch sends). */
static void set_nominal(int gpus)
{
  char url[512], body[200], *resp = NULL;

  snprintf(url, sizeof(url), "%s/apis/gpuq.dev/v1alpha1/teamquotas/team-a",
           sim.url);
  snprintf(body, sizeof(body), "{\"spec\":{\"resources\":[{\"flavor\":"
           "\"*\",\"nominal\":%d}]}}", gpus);
  assert_int_equal(gq_test_http("PATCH", url, body,
                                "application/merge-patch+json", NULL, &resp),
                   200);
  free(resp);
}

/* A higher-priority GpuJob preempts a running plain pod: both need node
 * gpu-a100-00 and the quota has room for both (priority preemption is for
 * a job that fits its quota but not the free capacity, docs/preemption.md).
 * The pod is deleted (it has no checkpoint to resume from), its stand-in
 * says why in its Disrupted event (on the pod as well) and goes with it
 * (its ownerReference). */
static void test_gpujob_preempts_plain_pod(void **state)
{
  static const char urgent[] =
      "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
      "\"metadata\":{\"name\":\"urgent\",\"namespace\":\"team-a\"},"
      "\"spec\":{\"team\":\"team-a\",\"priorityClassName\":\"high\","
      "\"gpusPerReplica\":8,\"template\":{\"metadata\":{\"annotations\":"
      "{\"sim.gpuq.dev/run-seconds\":\"10\"}},\"spec\":{\"nodeSelector\":"
      "{\"kubernetes.io/hostname\":\"gpu-a100-00\"},\"containers\":"
      "[{\"name\":\"c\",\"image\":\"x\"}]}}}}";

  (void)state;
  set_nominal(16);
  create_pod_on("lowpod", 8, 0, "low", NULL, 0, "gpu-a100-00");
  assert_true(wait_pod("lowpod", "Running"));
  json_decref(gq_test_sim_call(&sim, "POST", JOBS, urgent, 201));
  assert_true(wait_phase("urgent", "Succeeded"));
  assert_true(wait_gone(PODS "/lowpod"));
  assert_true(wait_gone(JOBS "/pod-lowpod"));
  assert_true(event_of("pod-lowpod", "Disrupted")); /* says for whom */
  assert_true(event_of("lowpod", "Disrupted"));    /* on the pod too */
  set_nominal(8);
}

/* Gated pods created while no controller runs are queued by the next one,
 * once each, and a restart does not make a second stand-in. */
static void test_restart_adopts(void **state)
{
  (void)state;
  assert_int_equal(gq_test_ctl_stop(&ctl), 0);
  create_pod("offline", 4, 10, NULL, NULL, 0);
  assert_int_equal(gq_test_ctl_start(&ctl, &sim, redis.url, 1, cargs), 0);
  assert_true(wait_phase("pod-offline", "Running"));
  assert_int_equal(gq_test_ctl_stop(&ctl), 0);
  assert_int_equal(gq_test_ctl_start(&ctl, &sim, redis.url, 1, cargs), 0);
  assert_true(wait_phase("pod-offline", "Succeeded"));
  assert_int_equal(stand_ins("offline"), 1);
}

static void test_no_violations(void **state)
{
  (void)state;
  gq_test_sim_expect_clean(&sim, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plain_pod_waits_for_quota),
      cmocka_unit_test(test_pod_group_whole),
      cmocka_unit_test(test_batch_job),
      cmocka_unit_test(test_gpujob_preempts_plain_pod),
      cmocka_unit_test(test_restart_adopts),
      cmocka_unit_test(test_no_violations),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
