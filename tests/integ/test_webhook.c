/* gpuq-controller's admission webhooks end to end (docs/integrations.md,
 * "Admission webhooks"): the controller runs against gpuq-sim (TeamQuotas
 * team-a [team-a], team-b [team-b, shared], team-c [shared]) and a private
 * redis-server with --webhook-addr; the test POSTs AdmissionReviews over
 * HTTPS, trusting only the certificate it gave the controller, and checks
 * the decoded patches, the refusals and their messages, malformed input
 * (400, 404, 405, 413), a TeamQuota added while it runs, and a certificate
 * reload: a new pair renamed over the files is served (a client trusting
 * only the new certificate gets through, one trusting only the old does
 * not), and a mismatched pair keeps the one serving. It does not need
 * gpuq-sim to call webhooks. Every wait is for a condition, with a
 * deadline.
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
#include <openssl/evp.h>

#include "base/alloc.h"
#include "tests/support/fixture.h"
#include "tests/support/proc.h"
#include "tests/support/redis.h"

static struct gq_test_sim sim;
static struct gq_test_redis redis;
static struct gq_test_ctl ctl;
static char crt[300], key[300];   /* the files the controller serves */
static char crt1[300], key1[300]; /* the first pair */
static char trust[300];           /* what the client trusts */
static char base[128];            /* https://127.0.0.1:PORT */

#define WAIT_MS 20000
#define TQ "/apis/gpuq.dev/v1alpha1/teamquotas"
#define CTL_USER "system:serviceaccount:gpuq-system:gpuq-controller"

static uint64_t now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Occurrences of needle in the controller's log. */
static int log_count(const char *needle)
{
  char *log = gq_test_read_file(ctl.log, NULL);
  int n = 0;

  for (const char *p = log; p && (p = strstr(p, needle)); p++)
    n++;
  free(log);
  return n;
}

/* Creates TeamQuota name admitting namespaces (JSON strings, comma
 * separated) with 8 GPUs of any flavor. */
static void add_tq(const char *name, const char *namespaces)
{
  char *body = gq_xasprintf(
      "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"TeamQuota\","
      "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaces\":[%s],"
      "\"resources\":[{\"flavor\":\"*\",\"nominal\":8}]}}",
      name, namespaces);

  json_decref(gq_test_sim_call(&sim, "POST", TQ, body, 201));
  free(body);
}

/* Copies file from to file to (0 or -1). */
static int copy(const char *from, const char *to)
{
  size_t n;
  char *text = gq_test_read_file(from, &n);
  int rc = text ? gq_test_write_file(to, text, n) : -1;

  free(text);
  return rc;
}

/* Reads the port the controller logged. */
static int webhook_port(void)
{
  const char *needle = "admission webhooks on port ";
  char *log, *p;
  int port = -1;

  if (!gq_test_wait_file(ctl.log, needle, WAIT_MS))
    return -1;
  log = gq_test_read_file(ctl.log, NULL);
  if (log && (p = strstr(log, needle)))
    port = (int)strtol(p + strlen(needle), NULL, 10);
  free(log);
  return port;
}

/* POST body to base+path trusting ca; status, response in *resp. */
static int post(const char *ca, const char *path, const char *body, char **resp)
{
  char url[256];

  setenv("GQ_TEST_CAINFO", ca, 1);
  snprintf(url, sizeof(url), "%s%s", base, path);
  return gq_test_http("POST", url, body, "application/json", NULL, resp);
}

/* A review of 'kind' ("Pod" or "Job") with operation op in ns by user,
 * with object obj (JSON text) and oldObject old (NULL: none). */
static char *review(const char *kind, const char *op, const char *ns,
                    const char *user, const char *obj, const char *old)
{
  return gq_xasprintf(
      "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
      "\"request\":{\"uid\":\"uid-1\",\"kind\":{\"group\":\"%s\","
      "\"version\":\"v1\",\"kind\":\"%s\"},\"operation\":\"%s\","
      "\"namespace\":\"%s\",\"userInfo\":{\"username\":\"%s\"},"
      "\"object\":%s%s%s}}",
      !strcmp(kind, "Job") ? "batch" : "", kind, op, ns, user, obj,
      old ? ",\"oldObject\":" : "", old ? old : "");
}

/* Posts a review and returns the decoded response's "response" (a new
 * reference), failing unless the answer is 200 with uid-1. */
static json_t *call(const char *path, char *body)
{
  char *resp;
  int code = post(trust, path, body, &resp);
  json_t *j = json_loads(resp, 0, NULL), *r;

  free(body);
  if (code != 200 || !j)
    fail_msg("POST %s: status %d: %s", path, code, resp);
  free(resp);
  r = json_incref(json_object_get(j, "response"));
  json_decref(j);
  assert_string_equal(json_string_value(json_object_get(r, "uid")), "uid-1");
  return r;
}

/* The response's patch, base64-decoded and parsed (new reference). */
static json_t *patch_of(const json_t *r)
{
  const char *b64 = json_string_value(json_object_get(r, "patch"));
  unsigned char bin[4096];
  int n;
  json_t *p;

  assert_non_null(b64);
  assert_string_equal(json_string_value(json_object_get(r, "patchType")),
                      "JSONPatch");
  n = EVP_DecodeBlock(bin, (const unsigned char *)b64, (int)strlen(b64));
  assert_true(n > 0);
  while (n > 0 && bin[n - 1] == '\0')
    n--; /* EVP_DecodeBlock counts the padding */
  p = json_loadb((const char *)bin, (size_t)n, 0, NULL);
  assert_non_null(p);
  return p;
}

#define GPU_POD                                                                \
  "{\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":"        \
  "\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}"

static int setup(void **state)
{
  int port;
  uint64_t deadline;
  (void)state;

  if (gq_test_redis_start(&redis, NULL) != 0 ||
      gq_test_sim_start(&sim, NULL) != 0 ||
      gq_test_make_cert(sim.dir, "wh1", crt1, key1) != 0)
    return -1;
  snprintf(crt, sizeof(crt), "%s/tls.crt", sim.dir);
  snprintf(key, sizeof(key), "%s/tls.key", sim.dir);
  snprintf(trust, sizeof(trust), "%s", crt1);
  if (copy(crt1, crt) != 0 || copy(key1, key) != 0)
    return -1;
  add_tq("team-a", "\"team-a\"");
  add_tq("team-b", "\"team-b\",\"shared\"");
  add_tq("team-c", "\"shared\"");
  {
    const char *const args[] = {"--webhook-addr",
                                "127.0.0.1:0",
                                "--webhook-cert",
                                crt,
                                "--webhook-key",
                                key,
                                NULL};

    if (gq_test_ctl_start(&ctl, &sim, redis.url, 1, args) != 0 ||
        (port = webhook_port()) <= 0)
      return -1;
  }
  snprintf(base, sizeof(base), "https://127.0.0.1:%d", port);
  /* 503 until the TeamQuotas are listed */
  for (deadline = now_ms() + WAIT_MS; now_ms() < deadline;
       gq_test_sleep_ms(50)) {
    char *resp;
    int code = post(crt1, "/validate",
                    "{\"apiVersion\":\"admission.k8s.io/v1\"}", &resp);

    free(resp);
    if (code == 400)
      return 0;
  }
  return -1;
}

static int teardown(void **state)
{
  int rc;

  (void)state;
  rc = gq_test_ctl_sim_stop(&ctl, &sim);
  gq_test_redis_stop(&redis);
  return rc;
}

static void test_mutate_pod(void **state)
{
  json_t *r = call("/mutate",
                   review("Pod", "CREATE", "team-a", "alice", GPU_POD, NULL));
  json_t *p = patch_of(r),
         *want = json_loads(
             "[{\"op\":\"add\",\"path\":\"/spec/schedulingGates\",\"value\":"
             "[{\"name\":\"gpuq.dev/admission\"}]},"
             "{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":"
             "{\"gpuq.dev/managed\":\"true\"}},"
             "{\"op\":\"add\",\"path\":\"/metadata/labels\",\"value\":"
             "{\"gpuq.dev/team\":\"team-a\"}}]",
             0, NULL);

  (void)state;
  assert_true(json_is_true(json_object_get(r, "allowed")));
  if (!json_equal(p, want))
    fail_msg("patch %s", json_dumps(p, JSON_COMPACT));
  json_decref(want);
  json_decref(p);
  json_decref(r);
  /* without GPUs: unchanged, no patch */
  r = call("/mutate",
           review("Pod", "CREATE", "team-a", "alice",
                  "{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}", NULL));
  assert_true(json_is_true(json_object_get(r, "allowed")));
  assert_null(json_object_get(r, "patch"));
  json_decref(r);
}

static void test_mutate_job(void **state)
{
  json_t *r = call(
      "/mutate",
      review(
          "Job", "CREATE", "shared", "alice",
          "{\"metadata\":{\"labels\":{\"gpuq.dev/team\":\"team-c\"}},"
          "\"spec\":{\"template\":{\"spec\":{\"initContainers\":[{\"name\":"
          "\"i\","
          "\"resources\":{\"requests\":{\"nvidia.com/mig-1g.10gb\":\"1\"}}}],"
          "\"containers\":[{\"name\":\"c\"}]}}}}",
          NULL));
  json_t *p = patch_of(r),
         *want = json_loads(
             "[{\"op\":\"add\",\"path\":\"/spec/suspend\",\"value\":true},"
             "{\"op\":\"add\",\"path\":\"/metadata/annotations\",\"value\":"
             "{\"gpuq.dev/managed\":\"true\"}}]",
             0, NULL);

  (void)state;
  if (!json_equal(p, want))
    fail_msg("patch %s", json_dumps(p, JSON_COMPACT));
  json_decref(want);
  json_decref(p);
  json_decref(r);
}

/* Fails unless the validating webhook refuses body with message want. */
static void expect_refused(char *body, const char *want)
{
  json_t *r = call("/validate", body), *st = json_object_get(r, "status");

  assert_true(json_is_false(json_object_get(r, "allowed")));
  assert_int_equal(json_integer_value(json_object_get(st, "code")), 403);
  assert_string_equal(json_string_value(json_object_get(st, "message")), want);
  json_decref(r);
}

static void test_validate(void **state)
{
  json_t *r;

  (void)state;
  expect_refused(
      review("Pod", "CREATE", "ml-x", "alice", GPU_POD, NULL),
      "namespace \"ml-x\" is not admitted by any TeamQuota (TeamQuotas: "
      "team-a [team-a], team-b [team-b, shared], team-c [shared]); GPU pods "
      "must run in a team namespace");
  expect_refused(
      review("Pod", "CREATE", "shared", "alice", GPU_POD, NULL),
      "metadata.labels[\"gpuq.dev/team\"]: required: namespace \"shared\" is "
      "admitted by several TeamQuotas (team-b, team-c); GPU pods there must "
      "name their team");
  expect_refused(
      review("Pod", "UPDATE", "team-a", "alice",
             "{\"spec\":{\"schedulingGates\":[]}}",
             "{\"spec\":{\"schedulingGates\":[{\"name\":\"gpuq.dev/"
             "admission\"}]}}"),
      "spec.schedulingGates: only \"" CTL_USER "\" may remove gate "
      "\"gpuq.dev/admission\" (gpuq removes it when it admits the pod), got "
      "user \"alice\"");
  r = call("/validate",
           review("Pod", "UPDATE", "team-a", CTL_USER, "{\"spec\":{}}",
                  "{\"spec\":{\"schedulingGates\":[{\"name\":\"gpuq.dev/"
                  "admission\"}]}}"));
  assert_true(json_is_true(json_object_get(r, "allowed")));
  assert_null(json_object_get(r, "status"));
  json_decref(r);
}

/* Answered reviews are counted by webhook and verdict on /metrics. */
static void test_metrics(void **state)
{
  char url[128], *text;

  (void)state;
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", ctl.metrics_port);
  assert_int_equal(gq_test_http("GET", url, NULL, NULL, NULL, &text), 200);
  if (!strstr(text, "gpuq_webhook_requests_total{webhook=\"mutate\","
                    "allowed=\"true\"}") ||
      !strstr(text, "gpuq_webhook_requests_total{webhook=\"validate\","
                    "allowed=\"false\"} 3"))
    fail_msg("/metrics lacks the webhook counters:\n%s", text);
  free(text);
}

/* A TeamQuota created while the controller runs admits its namespace as
 * soon as the webhook's informer has it. */
static void test_new_teamquota(void **state)
{
  uint64_t deadline = now_ms() + WAIT_MS;
  int allowed = 0;

  (void)state;
  add_tq("ml-x", "\"ml-x\"");
  while (!allowed && now_ms() < deadline) {
    json_t *r = call("/validate",
                     review("Pod", "CREATE", "ml-x", "alice", GPU_POD, NULL));

    allowed = json_is_true(json_object_get(r, "allowed"));
    json_decref(r);
    if (!allowed)
      gq_test_sleep_ms(50);
  }
  assert_true(allowed);
}

/* Fails unless POST path body answers status with text containing want. */
static void expect_status(const char *method, const char *path,
                          const char *body, int status, const char *want)
{
  char url[256], *resp;
  int code;

  setenv("GQ_TEST_CAINFO", trust, 1);
  snprintf(url, sizeof(url), "%s%s", base, path);
  code = gq_test_http(method, url, body, "application/json", NULL, &resp);
  if (code != status || !strstr(resp, want))
    fail_msg("%s %s: %d '%s', want %d with '%s'", method, path, code, resp,
             status, want);
  free(resp);
}

static void test_malformed(void **state)
{
  char *big = malloc((4u << 20) + 1);

  (void)state;
  expect_status("POST", "/mutate", "{not json", 400,
                "malformed AdmissionReview: body: not JSON");
  expect_status("POST", "/validate", "[]", 400, "body: must be a JSON object");
  expect_status("POST", "/validate",
                "{\"apiVersion\":\"admission.k8s.io/v1\","
                "\"kind\":\"AdmissionReview\",\"request\":{}}",
                400, "request.uid: required value");
  expect_status("POST", "/validate",
                "{\"apiVersion\":\"v1beta1\","
                "\"kind\":\"AdmissionReview\"}",
                400,
                "apiVersion: must be admission.k8s.io/v1, got \"v1beta1\"");
  expect_status("POST", "/mutate",
                "{\"apiVersion\":\"admission.k8s.io/v1\","
                "\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\","
                "\"operation\":\"CREATE\",\"kind\":{\"kind\":\"Pod\"},"
                "\"object\":7}}",
                400, "request.object");
  expect_status("POST", "/other", "{}", 404, "/mutate and /validate");
  expect_status("GET", "/mutate", NULL, 405, "POST");
  memset(big, ' ', 4u << 20);
  big[4u << 20] = '\0';
  expect_status("POST", "/mutate", big, 413, "exceeds 3145728 bytes");
  free(big);
  /* still serving */
  json_decref(call("/mutate",
                   review("Pod", "CREATE", "team-a", "alice", GPU_POD, NULL)));
}

/* Waits until a client trusting only ca gets an answer (1) or the
 * deadline passes (0). */
static int served_with(const char *ca)
{
  uint64_t deadline = now_ms() + WAIT_MS;

  while (now_ms() < deadline) {
    char *resp;
    int code = post(ca, "/validate", "{}", &resp);

    free(resp);
    if (code == 400)
      return 1;
    gq_test_sleep_ms(100);
  }
  return 0;
}

/* Moves a pair over the served files: written aside, then renamed, as a
 * Secret volume swaps its files. */
static int install(const char *c, const char *k)
{
  char tc[320], tk[320];

  snprintf(tc, sizeof(tc), "%s.new", crt);
  snprintf(tk, sizeof(tk), "%s.new", key);
  return copy(c, tc) || copy(k, tk) || rename(tk, key) || rename(tc, crt);
}

static void test_cert_reload(void **state)
{
  const char *mismatch = "does not match the certificate";
  char crt2[300], key2[300], crt3[300], key3[300], *resp;
  int before;
  uint64_t deadline;

  (void)state;
  assert_int_equal(gq_test_make_cert(sim.dir, "wh2", crt2, key2), 0);
  assert_int_equal(gq_test_make_cert(sim.dir, "wh3", crt3, key3), 0);
  assert_int_equal(install(crt2, key2), 0);
  assert_true(served_with(crt2));
  /* the old certificate is gone */
  assert_int_equal(post(crt1, "/validate", "{}", &resp), -1);
  free(resp);
  /* a mismatched pair is refused and the served one stays */
  before = log_count(mismatch);
  assert_int_equal(install(crt3, key2), 0);
  for (deadline = now_ms() + WAIT_MS;
       log_count(mismatch) == before && now_ms() < deadline;)
    gq_test_sleep_ms(100);
  assert_true(log_count(mismatch) > before);
  assert_true(served_with(crt2));
  assert_int_equal(post(crt3, "/validate", "{}", &resp), -1);
  free(resp);
  /* and the next good pair is served again */
  assert_int_equal(install(crt3, key3), 0);
  assert_true(served_with(crt3));
  snprintf(trust, sizeof(trust), "%s", crt3); /* for any later test */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mutate_pod),  cmocka_unit_test(test_mutate_job),
      cmocka_unit_test(test_validate),    cmocka_unit_test(test_metrics),
      cmocka_unit_test(test_malformed),   cmocka_unit_test(test_new_teamquota),
      cmocka_unit_test(test_cert_reload),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
