/* Every GPU pod through the queue, the whole chain (issue 20,
 * docs/integrations.md): gpuq-sim calls gpuq-controller's admission
 * webhooks over HTTPS (caBundle: the test's certificate) as
 * kube-apiserver does, for a user alice (--token-auth-file) who creates
 * plain GPU pods and a batch/v1 Job with no gpuq labels at all. Checked:
 * a GPU pod in a team namespace comes back gated and labelled, waits while
 * the quota is full and runs when it frees; a Job comes back suspended,
 * is admitted, completes; a GPU pod in a namespace no TeamQuota admits is
 * refused with the namespace and the TeamQuotas named; alice cannot remove
 * the gate; an exempt namespace is not gated; with the controller down a
 * Fail webhook refuses with its name and an Ignore webhook admits. Every
 * wait is for a condition, with a deadline.
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
#include <openssl/evp.h>

#include "base/alloc.h"
#include "tests/support/fixture.h"
#include "tests/support/proc.h"
#include "tests/support/redis.h"

static struct gq_test_sim sim;
static struct gq_test_redis redis;
static struct gq_test_ctl ctl;
static char dir[] = "/tmp/gpuq-test-wh-XXXXXX";
static char crt[300], key[300], port_s[16], addr[64];

#define WAIT_MS 30000
#define ADMIN "admin-tok"
#define ALICE "alice-tok"
#define PODS "/api/v1/namespaces/team-a/pods"
#define JOBS "/apis/gpuq.dev/v1alpha1/namespaces/team-a/gpujobs"

/* A call as token's user; returns the status, the body in *out (JSON or
 * NULL, new reference). ctype NULL: application/json. */
static int call(const char *token, const char *method, const char *path,
                const char *body, const char *ctype, json_t **out)
{
  char url[600], *resp = NULL;
  int code;

  snprintf(url, sizeof(url), "%s%s", sim.url, path);
  code = gq_test_http(method, url, body, ctype, token, &resp);
  if (out)
    *out = resp ? json_loads(resp, JSON_DECODE_ANY, NULL) : NULL;
  free(resp);
  return code;
}

static void admin_call(const char *method, const char *path, const char *body,
                       int want)
{
  json_t *o;
  int code = call(ADMIN, method, path, body, NULL, &o);

  if (code != want) {
    char *t = o ? json_dumps(o, 0) : NULL;

    fail_msg("%s %s: %d, want %d: %s", method, path, code, want,
             t ? t : "");
  }
  json_decref(o);
}

static const char *msg_of(const json_t *status)
{
  const char *m = json_string_value(json_object_get(status, "message"));

  return m ? m : "";
}

/* The webhook configurations, pointing at the controller, failurePolicy
 * fp ("Fail" or "Ignore"): created, or replaced when exists. */
static void webhooks(const char *fp, int exists)
{
  char *ca = gq_test_read_file(crt, NULL), *b64, *mut, *val;
  size_t n = strlen(ca);
  static const char sel[] = "\"namespaceSelector\":{\"matchExpressions\":"
      "[{\"key\":\"gpuq.dev/exempt\",\"operator\":\"NotIn\",\"values\":"
      "[\"true\"]}]}";

  b64 = gq_xmalloc(4 * ((n + 2) / 3) + 1);
  EVP_EncodeBlock((unsigned char *)b64, (unsigned char *)ca, (int)n);
  mut = gq_xasprintf(
      "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":"
      "\"MutatingWebhookConfiguration\",\"metadata\":{\"name\":\"gpuq\"},"
      "\"webhooks\":[{\"name\":\"mutate.gpuq.dev\",\"clientConfig\":{\"url\":"
      "\"https://127.0.0.1:%s/mutate\",\"caBundle\":\"%s\"},\"rules\":["
      "{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"operations\":"
      "[\"CREATE\"],\"resources\":[\"pods\"]},{\"apiGroups\":[\"batch\"],"
      "\"apiVersions\":[\"v1\"],\"operations\":[\"CREATE\"],\"resources\":"
      "[\"jobs\"]}],%s,\"failurePolicy\":\"%s\",\"sideEffects\":\"None\","
      "\"timeoutSeconds\":5,\"admissionReviewVersions\":[\"v1\"]}]}",
      port_s, b64, sel, fp);
  val = gq_xasprintf(
      "{\"apiVersion\":\"admissionregistration.k8s.io/v1\",\"kind\":"
      "\"ValidatingWebhookConfiguration\",\"metadata\":{\"name\":\"gpuq\"},"
      "\"webhooks\":[{\"name\":\"validate.gpuq.dev\",\"clientConfig\":{\"url\":"
      "\"https://127.0.0.1:%s/validate\",\"caBundle\":\"%s\"},\"rules\":["
      "{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],\"operations\":"
      "[\"CREATE\",\"UPDATE\"],\"resources\":[\"pods\"]},{\"apiGroups\":"
      "[\"batch\"],\"apiVersions\":[\"v1\"],\"operations\":[\"CREATE\"],"
      "\"resources\":[\"jobs\"]}],%s,\"failurePolicy\":\"%s\","
      "\"sideEffects\":\"None\",\"timeoutSeconds\":5,"
      "\"admissionReviewVersions\":[\"v1\"]}]}",
      port_s, b64, sel, fp);
  if (exists) {
    admin_call("PUT", "/apis/admissionregistration.k8s.io/v1/"
               "mutatingwebhookconfigurations/gpuq", mut, 200);
    admin_call("PUT", "/apis/admissionregistration.k8s.io/v1/"
               "validatingwebhookconfigurations/gpuq", val, 200);
  } else {
    admin_call("POST", "/apis/admissionregistration.k8s.io/v1/"
               "mutatingwebhookconfigurations", mut, 201);
    admin_call("POST", "/apis/admissionregistration.k8s.io/v1/"
               "validatingwebhookconfigurations", val, 201);
  }
  free(mut);
  free(val);
  free(b64);
  free(ca);
}

static int start_ctl(void)
{
  const char *const args[] = {"--time-scale", "10", "--time-epoch",
                              "1800000000", "--webhook-addr", addr,
                              "--webhook-cert", crt, "--webhook-key", key,
                              "--controller-user", "system:admin", NULL};

  return gq_test_ctl_start(&ctl, &sim, redis.url, 1, args);
}

/* Waits until the controller's webhook answers (a pod create in team-a
 * is gated, not refused with 500). */
static int webhook_up(void)
{
  for (int t = 0; t < WAIT_MS; t += 100) {
    char url[128], *resp = NULL;
    int code;

    snprintf(url, sizeof(url), "https://127.0.0.1:%s/validate", port_s);
    setenv("GQ_TEST_CAINFO", crt, 1);
    code = gq_test_http("POST", url, "{}", NULL, NULL, &resp);
    unsetenv("GQ_TEST_CAINFO");
    free(resp);
    if (code == 400)
      return 1;
    gq_test_sleep_ms(100);
  }
  return 0;
}

static int setup(void **state)
{
  char users[400], path[400];
  FILE *f;
  const char *args[] = {"--cluster", "clusters/mixed.yaml", "--time-scale",
                        "10", "--time-epoch", "1800000000", "--token", ADMIN,
                        "--token-auth-file", path, NULL};

  (void)state;
  if (!mkdtemp(dir) || gq_test_make_cert(dir, "wh", crt, key) != 0)
    return -1;
  snprintf(path, sizeof(path), "%s/tokens.csv", dir);
  snprintf(users, sizeof(users), ALICE ",alice,1001,\"devs\"\n");
  if (!(f = fopen(path, "w")) || fputs(users, f) < 0 || fclose(f) != 0)
    return -1;
  snprintf(port_s, sizeof(port_s), "%d", gq_test_free_port());
  snprintf(addr, sizeof(addr), "127.0.0.1:%s", port_s);
  if (gq_test_redis_start(&redis, NULL) != 0 ||
      gq_test_sim_start(&sim, args) != 0)
    return -1;
  admin_call("POST", "/api/v1/namespaces",
             "{\"metadata\":{\"name\":\"team-a\"}}", 201);
  admin_call("POST", "/api/v1/namespaces",
             "{\"metadata\":{\"name\":\"other\"}}", 201);
  admin_call("POST", "/api/v1/namespaces", "{\"metadata\":{\"name\":"
             "\"infra\",\"labels\":{\"gpuq.dev/exempt\":\"true\"}}}", 201);
  admin_call("POST", "/apis/gpuq.dev/v1alpha1/teamquotas",
             "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"TeamQuota\","
             "\"metadata\":{\"name\":\"team-a\"},\"spec\":{\"namespaces\":"
             "[\"team-a\"],\"resources\":[{\"flavor\":\"*\",\"nominal\":8}]}}",
             201);
  webhooks("Fail", 0);
  return start_ctl() != 0 || !webhook_up() ? -1 : 0;
}

static int teardown(void **state)
{
  int rc = 0;

  (void)state;
  rc |= gq_test_ctl_stop(&ctl) != 0;
  rc |= gq_test_sim_stop(&sim) != 0;
  gq_test_redis_stop(&redis);
  gq_test_rmtree(dir);
  return rc ? -1 : 0;
}

/* alice's pod asking for gpus GPUs in ns, running run_s virtual seconds
 * (0: until deleted); the answer's status and body. */
static int alice_pod(const char *ns, const char *name, int gpus, int run_s,
                     json_t **out)
{
  char path[200], body[800], ann[120] = "";

  if (run_s > 0)
    snprintf(ann, sizeof(ann), ",\"annotations\":{\"sim.gpuq.dev/"
             "run-seconds\":\"%d\"}", run_s);
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
           "\"%s\"%s},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":"
           "\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"%d\"}}}]}}",
           name, ann, gpus);
  return call(ALICE, "POST", path, body, NULL, out);
}

/* The string at metadata.labels[k] / .annotations[k] / phase of obj. */
static const char *label(const json_t *o, const char *k)
{
  return json_string_value(json_object_get(json_object_get(
      json_object_get(o, "metadata"), "labels"), k));
}

static int n_gates(const json_t *pod)
{
  return (int)json_array_size(json_object_get(json_object_get(pod, "spec"),
                                              "schedulingGates"));
}

/* Waits until the string at dotted path of the object at api path is want
 * (as admin). */
static int wait_str(const char *path, const char *field, const char *want)
{
  for (int t = 0; t < WAIT_MS; t += 100) {
    json_t *o, *v;
    char buf[200], *save = NULL, *seg;
    int ok;

    call(ADMIN, "GET", path, NULL, NULL, &o);
    snprintf(buf, sizeof(buf), "%s", field);
    v = o;
    for (seg = strtok_r(buf, ".", &save); seg && v;
         seg = strtok_r(NULL, ".", &save))
      v = json_object_get(v, seg);
    ok = v && ((json_is_string(v) && !strcmp(json_string_value(v), want)) ||
               (json_is_integer(v) &&
                json_integer_value(v) == strtoll(want, NULL, 10)));
    json_decref(o);
    if (ok)
      return 1;
    gq_test_sleep_ms(100);
  }
  return 0;
}

/* A plain GPU pod is gated and labelled at create, waits while a GpuJob
 * holds the team's quota, and alice cannot remove the gate; it runs once
 * the quota frees. */
static void test_plain_pod_gated(void **state)
{
  json_t *p, *st;

  (void)state;
  admin_call("POST", JOBS,
             "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
             "\"metadata\":{\"name\":\"holder\"},\"spec\":{\"team\":"
             "\"team-a\",\"gpusPerReplica\":8,\"template\":{\"metadata\":"
             "{\"annotations\":{\"sim.gpuq.dev/run-seconds\":\"40\"}},"
             "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
             201);
  assert_true(wait_str(JOBS "/holder", "status.phase", "Running"));
  assert_int_equal(alice_pod("team-a", "nb", 8, 20, &p), 201);
  assert_int_equal(n_gates(p), 1);
  assert_string_equal(label(p, "gpuq.dev/team"), "team-a");
  json_decref(p);
  assert_true(wait_str(JOBS "/pod-nb", "status.phase", "Queued"));
  assert_int_equal(call(ALICE, "PATCH", PODS "/nb",
                        "{\"spec\":{\"schedulingGates\":null}}",
                        "application/merge-patch+json", &st), 403);
  assert_non_null(strstr(msg_of(st), "denied the request"));
  assert_non_null(strstr(msg_of(st), "gpuq.dev/admission"));
  assert_non_null(strstr(msg_of(st), "alice"));
  json_decref(st);
  assert_true(wait_str(PODS "/nb", "status.phase", "Running"));
  assert_true(wait_str(JOBS "/pod-nb", "status.phase", "Succeeded"));
}

/* A batch/v1 Job comes back suspended, runs when admitted, completes. */
static void test_job_suspended_then_run(void **state)
{
  json_t *j;

  (void)state;
  assert_int_equal(call(ALICE, "POST", "/apis/batch/v1/namespaces/team-a/jobs",
      "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":"
      "\"sweep\"},\"spec\":{\"parallelism\":2,\"completions\":2,\"template\":"
      "{\"metadata\":{\"annotations\":{\"sim.gpuq.dev/run-seconds\":\"20\"}},"
      "\"spec\":{\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"c\","
      "\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":"
      "\"2\"}}}]}}}}", NULL, &j), 201);
  assert_true(json_is_true(json_object_get(json_object_get(j, "spec"),
                                           "suspend")));
  json_decref(j);
  assert_true(wait_str(JOBS "/job-sweep", "status.phase", "Succeeded"));
  assert_true(wait_str("/apis/batch/v1/namespaces/team-a/jobs/sweep",
                       "status.succeeded", "2"));
}

/* No TeamQuota admits namespace "other": a GPU pod is refused, naming it
 * and the TeamQuotas; a pod without GPUs is let through. An exempt
 * namespace is not gated. */
static void test_refusals_and_exempt(void **state)
{
  json_t *st, *p;
  char body[400];

  (void)state;
  assert_int_equal(alice_pod("other", "stray", 1, 10, &st), 403);
  assert_non_null(strstr(msg_of(st), "admission webhook "
                                     "\"validate.gpuq.dev\" denied"));
  assert_non_null(strstr(msg_of(st), "namespace \"other\""));
  assert_non_null(strstr(msg_of(st), "team-a"));
  json_decref(st);
  snprintf(body, sizeof(body), "{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
           "\"metadata\":{\"name\":\"cpu\"},\"spec\":{\"containers\":"
           "[{\"name\":\"c\",\"image\":\"x\"}]}}");
  assert_int_equal(call(ALICE, "POST", "/api/v1/namespaces/other/pods", body,
                        NULL, NULL), 201);
  assert_int_equal(alice_pod("infra", "plugin", 1, 10, &p), 201);
  assert_int_equal(n_gates(p), 0);
  json_decref(p);
}

/* The controller down: the Fail webhook refuses with its name; set to
 * Ignore, pods are admitted (ungated). Back up, gating resumes. */
static void test_webhook_down(void **state)
{
  json_t *st, *p;

  (void)state;
  assert_int_equal(gq_test_ctl_stop(&ctl), 0);
  assert_int_equal(alice_pod("team-a", "down", 1, 10, &st), 500);
  assert_non_null(strstr(msg_of(st), "failed calling webhook "
                                     "\"mutate.gpuq.dev\""));
  json_decref(st);
  webhooks("Ignore", 1);
  assert_int_equal(alice_pod("team-a", "ignored", 1, 10, &p), 201);
  assert_int_equal(n_gates(p), 0);
  json_decref(p);
  webhooks("Fail", 1);
  assert_int_equal(start_ctl(), 0);
  assert_true(webhook_up());
  assert_int_equal(alice_pod("team-a", "back", 1, 10, &p), 201);
  assert_int_equal(n_gates(p), 1);
  json_decref(p);
  assert_true(wait_str(JOBS "/pod-back", "status.phase", "Succeeded"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_plain_pod_gated),
      cmocka_unit_test(test_job_suspended_then_run),
      cmocka_unit_test(test_refusals_and_exempt),
      cmocka_unit_test(test_webhook_down),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
