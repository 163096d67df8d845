/* gpuq-sim's admission webhooks against an HTTPS webhook server inside
 * the test (api/httpd on its own uv loop in a thread, a self-signed
 * certificate from gq_test_make_cert): a mutating webhook's JSONPatch, a
 * denial, a webhook that is down (failurePolicy Fail and Ignore), the
 * selectors, a wrong caBundle, timeoutSeconds, userInfo from
 * --token-auth-file, the configuration checks, and the sim answering
 * other requests while a webhook call is pending. The pending call is
 * held by the test's webhook until the test releases it: no timing luck. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <uv.h>

#include "api/httpd.h"
#include "tests/support/fixture.h"
#include "tests/support/proc.h"

static struct gq_test_sim sim;
static int sim_stopped;
static char dir[] = "/tmp/gpuq-test-adm-XXXXXX";
static char ca_b64[8192], other_b64[8192];

/* --- the webhook server (its own thread and loop) --- */

static struct {
  uv_loop_t loop;
  uv_async_t wake;
  struct gq_httpd *httpd;
  pthread_t thread;
  pthread_mutex_t mu;
  int port;
  int stop, release;          /* asked by the test */
  struct gq_http_req *held;   /* /hold request waiting for release */
  int held_seen;
  char held_uid[64];
  uv_timer_t slow_timer;
  struct gq_http_req *slow;   /* /slow request, answered after 3 s */
  int slow_done;
  char last_user[256];
} wh;

/* An AdmissionReview response for uid: allowed, with patch (base64) or a
 * denial status. */
static void answer(struct gq_http_req *req, const char *uid, int allowed,
                   const char *patch_b64, const char *deny_msg)
{
  json_t *resp = json_pack("{s:s, s:b}", "uid", uid, "allowed", allowed);
  json_t *out;
  char *body;

  if (patch_b64) {
    json_object_set_new(resp, "patchType", json_string("JSONPatch"));
    json_object_set_new(resp, "patch", json_string(patch_b64));
  }
  if (deny_msg)
    json_object_set_new(resp, "status", json_pack("{s:i, s:s}", "code", 403,
                                                  "message", deny_msg));
  out = json_pack("{s:s, s:s, s:o}", "apiVersion", "admission.k8s.io/v1",
                  "kind", "AdmissionReview", "response", resp);
  body = json_dumps(out, JSON_COMPACT);
  gq_http_respond(req, 200, "application/json", body, strlen(body), NULL);
  free(body);
  json_decref(out);
}

static void b64(const char *in, size_t n, char *out)
{
  EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)in, (int)n);
}

static void on_slow(uv_timer_t *t)
{
  (void)t;
  answer(wh.slow, "", 1, NULL, NULL);
  pthread_mutex_lock(&wh.mu);
  wh.slow_done = 1;
  pthread_mutex_unlock(&wh.mu);
}

static void on_hook(struct gq_http_req *req, void *arg)
{
  size_t len;
  const char *body = gq_http_body(req, &len), *path = gq_http_path(req);
  json_t *rv = json_loadb(body, len, 0, NULL);
  json_t *rq = json_object_get(rv, "request");
  const char *uid = json_string_value(json_object_get(rq, "uid"));
  static const char patch[] =
      "[{\"op\":\"add\",\"path\":\"/metadata/labels/mutated\","
      "\"value\":\"yes\"}]";
  static const char bad[] = /* a quantity that does not parse */
      "[{\"op\":\"add\",\"path\":\"/spec/containers/0/resources\","
      "\"value\":{\"requests\":{\"cpu\":\"lots\"}}}]";
  char p64[512];

  (void)arg;
  pthread_mutex_lock(&wh.mu);
  snprintf(wh.last_user, sizeof(wh.last_user), "%s",
           json_string_value(json_object_get(json_object_get(rq, "userInfo"),
                                             "username")));
  if (!strcmp(path, "/hold")) {
    wh.held = req;
    wh.held_seen = 1;
    snprintf(wh.held_uid, sizeof(wh.held_uid), "%s", uid ? uid : "");
    pthread_mutex_unlock(&wh.mu);
    json_decref(rv);
    return; /* answered on release */
  }
  pthread_mutex_unlock(&wh.mu);
  if (!strcmp(path, "/mutate")) {
    b64(patch, strlen(patch), p64);
    answer(req, uid, 1, p64, NULL);
  } else if (!strcmp(path, "/mutate-bad")) {
    b64(bad, strlen(bad), p64);
    answer(req, uid, 1, p64, NULL);
  } else if (!strcmp(path, "/deny")) {
    answer(req, uid, 0, NULL, "no pods here");
  } else if (!strcmp(path, "/slow")) {
    pthread_mutex_lock(&wh.mu);
    wh.slow = req; /* 3 s: well past the webhook's timeoutSeconds 1 */
    pthread_mutex_unlock(&wh.mu);
    uv_timer_start(&wh.slow_timer, on_slow, 3000, 0);
  } else {
    answer(req, uid, 1, NULL, NULL);
  }
  json_decref(rv);
}

static void on_wake(uv_async_t *a)
{
  pthread_mutex_lock(&wh.mu);
  if (wh.release && wh.held) {
    answer(wh.held, wh.held_uid, 1, NULL, NULL);
    wh.held = NULL;
  }
  if (wh.stop) {
    gq_httpd_close(wh.httpd);
    uv_close((uv_handle_t *)&wh.slow_timer, NULL);
    uv_close((uv_handle_t *)a, NULL);
  }
  pthread_mutex_unlock(&wh.mu);
}

static void *wh_main(void *arg)
{
  (void)arg;
  uv_run(&wh.loop, UV_RUN_DEFAULT);
  return NULL;
}

static int wh_start(const char *crt, const char *key)
{
  char *c = gq_test_read_file(crt, NULL), *k = gq_test_read_file(key, NULL);
  struct gq_httpd_opts o = {.host = "127.0.0.1", .tls_cert = c,
                           .tls_key = k};
  char err[256];
  int rc;

  pthread_mutex_init(&wh.mu, NULL);
  uv_loop_init(&wh.loop);
  uv_async_init(&wh.loop, &wh.wake, on_wake);
  uv_timer_init(&wh.loop, &wh.slow_timer);
  rc = gq_httpd_start(&wh.loop, &o, on_hook, NULL, &wh.httpd, err,
                      sizeof(err));
  free(c);
  free(k);
  if (rc != 0)
    return -1;
  wh.port = gq_httpd_port(wh.httpd);
  return pthread_create(&wh.thread, NULL, wh_main, NULL);
}

static void wh_poke(int *flag)
{
  pthread_mutex_lock(&wh.mu);
  *flag = 1;
  pthread_mutex_unlock(&wh.mu);
  uv_async_send(&wh.wake);
}

/* --- the sim --- */

static int group_setup(void **state)
{
  char crt[300], key[300], ocrt[300], okey[300], tok[400], *pem;
  FILE *f;
  const char *args[] = {"--token-auth-file", tok, NULL};

  (void)state;
  if (!mkdtemp(dir) || gq_test_make_cert(dir, "wh", crt, key) != 0 ||
      gq_test_make_cert(dir, "other", ocrt, okey) != 0)
    return -1;
  pem = gq_test_read_file(crt, NULL);
  b64(pem, strlen(pem), ca_b64);
  free(pem);
  pem = gq_test_read_file(ocrt, NULL);
  b64(pem, strlen(pem), other_b64);
  free(pem);
  snprintf(tok, sizeof(tok), "%s/tokens.csv", dir);
  if (!(f = fopen(tok, "w")))
    return -1;
  fputs("alice-tok,alice,u1,\"dev\"\n", f);
  fclose(f);
  if (wh_start(crt, key) != 0)
    return -1;
  return gq_test_sim_start(&sim, args);
}

static int group_teardown(void **state)
{
  int rc = sim_stopped ? 0 : gq_test_sim_stop(&sim);

  (void)state;
  /* MHD must not stop with the /slow connection still suspended */
  for (int i = 0, done = 0; i < 400 && !done; i++) {
    pthread_mutex_lock(&wh.mu);
    done = !wh.slow || wh.slow_done;
    pthread_mutex_unlock(&wh.mu);
    if (!done)
      gq_test_sleep_ms(25);
  }
  wh_poke(&wh.stop);
  pthread_join(wh.thread, NULL);
  uv_run(&wh.loop, UV_RUN_DEFAULT);
  uv_loop_close(&wh.loop);
  return rc == 0 ? 0 : -1;
}

/* method on the sim as alice; fails unless the status is want. Returns the
 * decoded body (new reference). */
static json_t *call(const char *method, const char *path, const char *body,
                    int want)
{
  char url[600], *resp = NULL;
  int st;
  json_t *j;

  snprintf(url, sizeof(url), "%s%s", sim.url, path);
  st = gq_test_http(method, url, body, NULL, "alice-tok", &resp);
  if (st != want)
    fail_msg("%s %s: got %d want %d: %s", method, path, st, want,
             resp ? resp : "");
  j = resp ? json_loads(resp, 0, NULL) : NULL;
  free(resp);
  return j;
}

/* Creates a webhook configuration: kind "mutating" or "validating", one
 * webhook named name on resource res calling url path (or full url when
 * it starts with https), extra JSON members of the webhook. */
static void hook(const char *kind, const char *name, const char *res,
                 const char *path, const char *ca, const char *extra,
                 int want)
{
  char body[12000], url[300];

  if (!strncmp(path, "https", 5))
    snprintf(url, sizeof(url), "%s", path);
  else
    snprintf(url, sizeof(url), "https://127.0.0.1:%d%s", wh.port, path);
  snprintf(body, sizeof(body),
           "{\"metadata\":{\"name\":\"%s\"},\"webhooks\":[{\"name\":\"%s\","
           "\"clientConfig\":{\"url\":\"%s\",\"caBundle\":\"%s\"},"
           "\"rules\":[{\"apiGroups\":[\"\"],\"apiVersions\":[\"v1\"],"
           "\"operations\":[\"CREATE\"],\"resources\":[\"%s\"]}],"
           "\"admissionReviewVersions\":[\"v1\"]%s}]}",
           name, name, url, ca, res, extra);
  snprintf(url, sizeof(url),
           "/apis/admissionregistration.k8s.io/v1/%swebhookconfigurations",
           kind);
  json_decref(call("POST", url, body, want));
}

static char *svc(const char *name, const char *hookval)
{
  static char b[600];

  snprintf(b, sizeof(b), "{\"metadata\":{\"name\":\"%s\",\"labels\":{"
           "\"hook\":\"%s\"}},\"spec\":{\"ports\":[{\"port\":80}]}}", name,
           hookval);
  return b;
}

static const char *msg_of(const json_t *st)
{
  const char *m = json_string_value(json_object_get(st, "message"));

  return m ? m : "";
}

#define SVCS "/api/v1/namespaces/default/services"
#define POD_BODY(name, labels)                                             \
  "{\"metadata\":{\"name\":\"" name "\",\"labels\":{" labels "}},"         \
  "\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}"

static void test_mutate_and_user(void **state)
{
  json_t *p;

  (void)state;
  hook("mutating", "label.test.dev", "pods", "/mutate", ca_b64,
       ",\"sideEffects\":\"None\",\"objectSelector\":{\"matchLabels\":"
       "{\"admit\":\"yes\"}}", 201);
  p = call("POST", "/api/v1/namespaces/default/pods",
           POD_BODY("m1", "\"admit\":\"yes\""), 201);
  assert_string_equal(json_string_value(json_object_get(json_object_get(
                          json_object_get(p, "metadata"), "labels"),
                                                        "mutated")),
                      "yes");
  json_decref(p);
  pthread_mutex_lock(&wh.mu);
  assert_string_equal(wh.last_user, "alice");
  pthread_mutex_unlock(&wh.mu);
  /* objectSelector excludes a pod without the label */
  p = call("POST", "/api/v1/namespaces/default/pods", POD_BODY("m2", ""),
           201);
  assert_null(json_object_get(json_object_get(json_object_get(p, "metadata"),
                                              "labels"),
                              "mutated"));
  json_decref(p);
}

/* What a mutating webhook's patch makes of an object is validated again
 * (the object the sim validated before the chain is only kept when no
 * webhook changed it): a patch that makes a pod invalid is refused. */
static void test_mutated_is_validated(void **state)
{
  json_t *p;

  (void)state;
  hook("mutating", "bad.test.dev", "pods", "/mutate-bad", ca_b64,
       ",\"sideEffects\":\"None\",\"objectSelector\":{\"matchLabels\":"
       "{\"admit\":\"bad\"}}", 201);
  json_decref(call("POST", "/api/v1/namespaces/default/pods",
                   POD_BODY("v1", "\"admit\":\"bad\""), 422));
  p = call("POST", "/api/v1/namespaces/default/pods", POD_BODY("v2", ""), 201);
  json_decref(p);
}

/* The sim's Job controller creates its pods through the same chain, as
 * its own user. */
static void test_job_controller_pods(void **state)
{
  json_t *l = NULL;

  (void)state;
  json_decref(call("POST", "/apis/batch/v1/namespaces/default/jobs",
                   "{\"metadata\":{\"name\":\"j1\"},\"spec\":{"
                   "\"template\":{\"metadata\":{\"labels\":{\"admit\":"
                   "\"yes\"}},\"spec\":{\"containers\":[{\"name\":\"c\","
                   "\"image\":\"i\"}]}}}}", 201));
  for (int i = 0; i < 400; i++) {
    json_decref(l);
    l = call("GET", "/api/v1/namespaces/default/pods?labelSelector="
             "job-name%3Dj1", NULL, 200);
    if (json_array_size(json_object_get(l, "items")) == 1)
      break;
    gq_test_sleep_ms(25);
  }
  assert_int_equal(json_array_size(json_object_get(l, "items")), 1);
  assert_string_equal(json_string_value(json_object_get(json_object_get(
                          json_object_get(json_array_get(json_object_get(
                                              l, "items"), 0),
                                          "metadata"), "labels"),
                                                        "mutated")),
                      "yes");
  json_decref(l);
  pthread_mutex_lock(&wh.mu);
  assert_string_equal(wh.last_user,
                      "system:serviceaccount:kube-system:job-controller");
  pthread_mutex_unlock(&wh.mu);
}

static void test_deny_and_namespace_selector(void **state)
{
  json_t *st;

  (void)state;
  json_decref(call("POST", "/api/v1/namespaces",
                   "{\"metadata\":{\"name\":\"denyns\",\"labels\":"
                   "{\"deny\":\"yes\"}}}", 201));
  hook("validating", "deny.test.dev", "pods", "/deny", ca_b64,
       ",\"sideEffects\":\"None\",\"namespaceSelector\":{\"matchLabels\":"
       "{\"deny\":\"yes\"}}", 201);
  st = call("POST", "/api/v1/namespaces/denyns/pods", POD_BODY("d1", ""),
            403);
  assert_string_equal(msg_of(st), "admission webhook \"deny.test.dev\" "
                                  "denied the request: no pods here");
  json_decref(st);
  json_decref(call("POST", "/api/v1/namespaces/default/pods",
                   POD_BODY("d2", ""), 201));
}

static void test_failure_policies(void **state)
{
  json_t *st;

  (void)state;
  hook("validating", "fail.test.dev", "services", "https://127.0.0.1:1/x",
       ca_b64, ",\"sideEffects\":\"None\",\"objectSelector\":{"
       "\"matchLabels\":{\"hook\":\"fail\"}}", 201);
  hook("validating", "ignore.test.dev", "services", "https://127.0.0.1:1/x",
       ca_b64, ",\"sideEffects\":\"None\",\"failurePolicy\":\"Ignore\","
       "\"objectSelector\":{\"matchLabels\":{\"hook\":\"ignore\"}}", 201);
  hook("validating", "badca.test.dev", "services", "/allow", other_b64,
       ",\"sideEffects\":\"None\",\"objectSelector\":{\"matchLabels\":"
       "{\"hook\":\"badca\"}}", 201);
  hook("validating", "slow.test.dev", "services", "/slow", ca_b64,
       ",\"sideEffects\":\"None\",\"timeoutSeconds\":1,\"objectSelector\":"
       "{\"matchLabels\":{\"hook\":\"slow\"}}", 201);
  st = call("POST", SVCS, svc("s-fail", "fail"), 500);
  assert_non_null(strstr(msg_of(st), "Internal error occurred: failed "
                                     "calling webhook \"fail.test.dev\": "
                                     "failed to call webhook: Post "
                                     "\"https://127.0.0.1:1/x\": "));
  json_decref(st);
  json_decref(call("POST", SVCS, svc("s-ignore", "ignore"), 201));
  st = call("POST", SVCS, svc("s-badca", "badca"), 500);
  assert_non_null(strstr(msg_of(st), "\"badca.test.dev\""));
  json_decref(st);
  st = call("POST", SVCS, svc("s-slow", "slow"), 500);
  assert_non_null(strstr(msg_of(st), "\"slow.test.dev\""));
  json_decref(st);
  json_decref(call("GET", SVCS "/s-ignore", NULL, 200));
  json_decref(call("GET", SVCS "/s-slow", NULL, 404));
}

static void test_config_checks(void **state)
{
  (void)state;
  hook("validating", "se.test.dev", "pods", "/allow", ca_b64,
       ",\"sideEffects\":\"Some\"", 422);
  hook("validating", "to.test.dev", "pods", "/allow", ca_b64,
       ",\"sideEffects\":\"None\",\"timeoutSeconds\":31", 422);
}

static int stop_status; /* what the request held at the sim's stop got */

static void *slow_create(void *arg)
{
  const char *name = arg;
  char url[300], *resp = NULL;

  if (strcmp(name, "s-stop")) {
    json_decref(call("POST", SVCS, svc(name, "hold"), 201));
    return NULL;
  }
  snprintf(url, sizeof(url), "%s%s", sim.url, SVCS);
  stop_status = gq_test_http("POST", url, svc(name, "hold"), NULL,
                             "alice-tok", &resp);
  free(resp);
  return NULL;
}

/* Waits (deadline 10 s) until the webhook holds a call. */
static void wait_held(void)
{
  int seen = 0;

  for (int i = 0; i < 400 && !seen; i++) {
    pthread_mutex_lock(&wh.mu);
    seen = wh.held_seen;
    pthread_mutex_unlock(&wh.mu);
    if (!seen)
      gq_test_sleep_ms(25);
  }
  assert_true(seen);
}

static void test_responsive_while_pending(void **state)
{
  pthread_t t;

  (void)state;
  hook("validating", "hold.test.dev", "services", "/hold", ca_b64,
       ",\"sideEffects\":\"None\",\"timeoutSeconds\":30,\"objectSelector\":"
       "{\"matchLabels\":{\"hook\":\"hold\"}}", 201);
  assert_int_equal(pthread_create(&t, NULL, slow_create, "s-held"), 0);
  wait_held();
  /* the webhook holds the call: the sim still answers others */
  json_decref(call("GET", "/api/v1/namespaces", NULL, 200));
  json_decref(call("GET", SVCS "/s-held", NULL, 404));
  wh_poke(&wh.release);
  pthread_join(t, NULL);
}

/* A sim stopped while a webhook call is out answers the request 503 (the
 * answer may be lost with the connection as the server closes) and exits
 * cleanly. */
static void test_stop_while_pending(void **state)
{
  pthread_t t;

  (void)state;
  pthread_mutex_lock(&wh.mu);
  wh.held_seen = 0;
  wh.release = 0;
  pthread_mutex_unlock(&wh.mu);
  assert_int_equal(pthread_create(&t, NULL, slow_create, "s-stop"), 0);
  wait_held();
  assert_int_equal(gq_test_sim_stop(&sim), 0);
  sim_stopped = 1;
  pthread_join(t, NULL);
  assert_true(stop_status == 503 || stop_status == -1);
  wh_poke(&wh.release); /* the webhook's own server must not stop parked */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mutate_and_user),
      cmocka_unit_test(test_mutated_is_validated),
      cmocka_unit_test(test_job_controller_pods),
      cmocka_unit_test(test_deny_and_namespace_selector),
      cmocka_unit_test(test_failure_policies),
      cmocka_unit_test(test_config_checks),
      cmocka_unit_test(test_responsive_while_pending),
      cmocka_unit_test(test_stop_while_pending),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
