/* gpuq-controller --check-connection (issue 5): prints the server, its
 * version and how it authenticated; or exits 1 with one message naming
 * what failed: the server unreachable, its certificate not signed by the
 * configured CA, or the credentials refused. */
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

#define TOKEN "check-token-1234"

static struct gq_test_sim sim;
static char dir[] = "/tmp/gpuq-test-check-XXXXXX";
static char crt[300], key[300], other[300];

static void make_cert(const char *name, char *crt_out, char *key_out)
{
  assert_int_equal(gq_test_make_cert(dir, name, crt_out, key_out), 0);
}

static int setup(void **state)
{
  char okey[300];
  const char *args[] = {"--token", TOKEN, "--tls-cert", crt, "--tls-key",
                        key, NULL};

  (void)state;
  if (!mkdtemp(dir))
    return -1;
  make_cert("sim", crt, key);
  make_cert("other", other, okey);
  return gq_test_sim_start(&sim, args);
}

static int teardown(void **state)
{
  (void)state;
  gq_test_rmtree(dir);
  return gq_test_sim_stop(&sim) == 0 ? 0 : -1;
}

/* Runs the controller's check with a kubeconfig; returns exit status and
 * output (stdout and stderr together). */
static int check(const char *kubeconfig, char **out)
{
  char path[400], ctl[400];
  pid_t pid;
  int status;

  snprintf(path, sizeof(path), "%s/check.out", dir);
  snprintf(ctl, sizeof(ctl), "%s/gpuq-controller", GQ_BINARY_DIR);
  pid = fork();
  if (pid == 0) {
    freopen(path, "w", stdout);
    dup2(1, 2);
    execl(ctl, ctl, "--kubeconfig", kubeconfig, "--check-connection",
          (char *)NULL);
    _exit(127);
  }
  waitpid(pid, &status, 0);
  *out = gq_test_read_file(path, NULL);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The sim's kubeconfig with one change applied. */
static void variant(const char *path, const char *what, const char *value)
{
  json_t *kc = json_load_file(sim.kubeconfig, 0, NULL);
  json_t *cluster = json_object_get(json_array_get(json_object_get(kc,
                                                                   "clusters"),
                                                   0),
                                    "cluster");
  json_t *user = json_object_get(json_array_get(json_object_get(kc, "users"),
                                                0),
                                 "user");

  if (!strcmp(what, "token"))
    json_object_set_new(user, "token", json_string(value));
  else if (!strcmp(what, "server"))
    json_object_set_new(cluster, "server", json_string(value));
  else if (!strcmp(what, "ca")) {
    json_object_del(cluster, "certificate-authority-data");
    json_object_set_new(cluster, "certificate-authority", json_string(value));
  }
  json_dump_file(kc, path, 0);
  json_decref(kc);
}

static void test_ok(void **state)
{
  char *out;

  (void)state;
  assert_int_equal(check(sim.kubeconfig, &out), 0);
  assert_non_null(strstr(out, "connected to https://127.0.0.1:"));
  assert_non_null(strstr(out, "v1.32"));
  assert_non_null(strstr(out, "authenticated by bearer token"));
  assert_non_null(strstr(out, "0 GpuJobs"));
  free(out);
}

static void test_failures_named(void **state)
{
  static const struct {
    const char *what, *value, *want;
  } cases[] = {
      {"token", "wrong-token", "refused the credentials (bearer token)"},
      {"server", "https://127.0.0.1:1", "cannot reach the API server at "
                                        "https://127.0.0.1:1"},
      {"ca", NULL, "cannot verify the server"},
  };
  char path[400], *out;

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    snprintf(path, sizeof(path), "%s/variant-%zu", dir, i);
    variant(path, cases[i].what, cases[i].value ? cases[i].value : other);
    assert_int_equal(check(path, &out), 1);
    if (!strstr(out, cases[i].want))
      fail_msg("case %s: '%s' lacks '%s'", cases[i].what, out, cases[i].want);
    assert_null(strstr(out, TOKEN)); /* never print the token */
    free(out);
  }
  snprintf(path, sizeof(path), "%s/variant-ca", dir);
  variant(path, "ca", other);
  assert_int_equal(check(path, &out), 1);
  assert_non_null(strstr(out, other)); /* names the CA it used */
  free(out);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ok),
      cmocka_unit_test(test_failures_named),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
