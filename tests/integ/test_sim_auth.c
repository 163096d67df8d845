/* gpuq-sim's bearer-token authentication and TLS, through the real kubectl:
 * the written kubeconfig carries the token and the CA, a wrong token gets
 * 401, and a client that does not trust the CA is refused. kubectl sends a
 * bearer token only over https, so the token test runs under TLS. */
#include <setjmp.h>
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

static void assert_has(const char *text, const char *needle)
{
  if (!strstr(text, needle))
    fail_msg("missing '%s' in:\n%s", needle, text);
}

static void make_cert(const char *dir, const char *name);

static void test_token(void **state)
{
  char dir[] = "/tmp/gpuq-test-tok-XXXXXX", crt[400], key[400];
  struct gq_test_sim sim;
  struct gq_test_out o;
  char *kc, url[256], *resp;

  (void)state;
  assert_non_null(mkdtemp(dir));
  make_cert(dir, "sim");
  snprintf(crt, sizeof(crt), "%s/sim.crt", dir);
  snprintf(key, sizeof(key), "%s/sim.key", dir);
  {
    const char *args[] = {"--token", "s3cret-sim-token", "--tls-cert", crt,
                          "--tls-key", key, NULL};

    assert_int_equal(gq_test_sim_start(&sim, args), 0);
  }
  kc = gq_test_read_file(sim.kubeconfig, NULL);
  assert_has(kc, "s3cret-sim-token");
  free(kc);
  assert_int_equal(gq_test_kubectl(&sim, &o, NULL, "get", "ns", NULL), 0);
  assert_has(o.out, "default");
  gq_test_out_free(&o);
  assert_int_equal(gq_test_kubectl(&sim, &o, NULL, "--token", "wrong", "get",
                                   "ns", NULL),
                   1);
  assert_has(o.err, "Unauthorized");
  gq_test_out_free(&o);
  /* Raw requests (curl trusts the sim's certificate here). */
  snprintf(url, sizeof(url), "%s/api/v1/namespaces", sim.url);
  setenv("GQ_TEST_CAINFO", crt, 1);
  assert_int_equal(gq_test_http("GET", url, NULL, NULL, NULL, &resp), 401);
  assert_has(resp, "\"code\":401");
  free(resp);
  assert_int_equal(gq_test_http("GET", url, NULL, NULL, "s3cret-sim-token",
                                &resp),
                   200);
  free(resp);
  unsetenv("GQ_TEST_CAINFO");
  assert_int_equal(gq_test_sim_stop(&sim), 0);
  unlink(crt);
  unlink(key);
  rmdir(dir);
}

/* A self-signed certificate for 127.0.0.1 made with the openssl tool. */
static void make_cert(const char *dir, const char *name)
{
  char crt[300], key[300];

  assert_int_equal(gq_test_make_cert(dir, name, crt, key), 0);
}

static void test_tls(void **state)
{
  char dir[] = "/tmp/gpuq-test-tls-XXXXXX", crt[400], key[400], other[400];
  char url[256], *resp, *kc;
  struct gq_test_sim sim;
  struct gq_test_out o;

  (void)state;
  assert_non_null(mkdtemp(dir));
  make_cert(dir, "sim");
  make_cert(dir, "other");
  snprintf(crt, sizeof(crt), "%s/sim.crt", dir);
  snprintf(key, sizeof(key), "%s/sim.key", dir);
  snprintf(other, sizeof(other), "%s/other.crt", dir);
  {
    const char *args[] = {"--tls-cert", crt, "--tls-key", key, "--tls-ca",
                          crt, NULL};

    assert_int_equal(gq_test_sim_start(&sim, args), 0);
  }
  assert_int_equal(strncmp(sim.url, "https://127.0.0.1:", 18), 0);
  kc = gq_test_read_file(sim.kubeconfig, NULL);
  assert_has(kc, "certificate-authority-data");
  free(kc);
  assert_int_equal(gq_test_kubectl(&sim, &o, NULL, "get", "ns", NULL), 0);
  assert_has(o.out, "kube-system");
  gq_test_out_free(&o);
  /* A client that trusts another CA is refused by its own verification. */
  assert_int_equal(gq_test_kubectl(&sim, &o, NULL, "--certificate-authority",
                                   other, "get", "ns", NULL),
                   1);
  assert_has(o.err, "certificate");
  gq_test_out_free(&o);
  snprintf(url, sizeof(url), "%s/version", sim.url);
  assert_int_equal(gq_test_http("GET", url, NULL, NULL, NULL, &resp), -1);
  free(resp);
  assert_int_equal(gq_test_sim_stop(&sim), 0);
  unlink(crt);
  unlink(key);
  unlink(other);
  snprintf(other, sizeof(other), "%s/other.key", dir);
  unlink(other);
  rmdir(dir);
}

/* --token-auth-file: each token is its user (username, uid, groups plus
 * system:authenticated), the --token is system:admin, anything else 401.
 * SelfSubjectReview (kubectl auth whoami) shows who a token is. */
static void test_token_file(void **state)
{
  char dir[] = "/tmp/gpuq-test-tokf-XXXXXX", path[400], url[256], *resp;
  struct gq_test_sim sim;
  FILE *f;
  json_t *j, *ui;

  (void)state;
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof(path), "%s/tokens.csv", dir);
  assert_non_null(f = fopen(path, "w"));
  fputs("# token,user,uid,groups\n"
        "alice-tok,alice,uid-1,\"dev,ops\"\n"
        "bob-tok,bob,uid-2\n", f);
  fclose(f);
  {
    const char *args[] = {"--token", "adm-tok", "--token-auth-file", path,
                          NULL};

    assert_int_equal(gq_test_sim_start(&sim, args), 0);
  }
  snprintf(url, sizeof(url),
           "%s/apis/authentication.k8s.io/v1/selfsubjectreviews", sim.url);
  assert_int_equal(gq_test_http("POST", url, "{}", NULL, "alice-tok", &resp),
                   201);
  j = json_loads(resp, 0, NULL);
  free(resp);
  ui = json_object_get(json_object_get(j, "status"), "userInfo");
  assert_string_equal(json_string_value(json_object_get(ui, "username")),
                      "alice");
  assert_string_equal(json_string_value(json_object_get(ui, "uid")), "uid-1");
  assert_int_equal(json_array_size(json_object_get(ui, "groups")), 3);
  assert_string_equal(json_string_value(json_array_get(
                          json_object_get(ui, "groups"), 1)),
                      "ops");
  json_decref(j);
  assert_int_equal(gq_test_http("POST", url, "{}", NULL, "adm-tok", &resp),
                   201);
  assert_has(resp, "\"username\":\"system:admin\"");
  assert_has(resp, "system:masters");
  free(resp);
  assert_int_equal(gq_test_http("POST", url, "{}", NULL, "bob-tok", &resp),
                   201);
  assert_has(resp, "\"username\":\"bob\"");
  free(resp);
  assert_int_equal(gq_test_http("POST", url, "{}", NULL, "eve-tok", &resp),
                   401);
  free(resp);
  assert_int_equal(gq_test_sim_stop(&sim), 0);
  unlink(path);
  rmdir(dir);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_token),
      cmocka_unit_test(test_tls),
      cmocka_unit_test(test_token_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
