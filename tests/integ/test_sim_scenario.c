/* The scenario runner (gpuq-sim --scenario): a passing scenario exits 0
 * after running its timed node events and hook, and a scenario whose
 * expectation fails exits non-zero naming it; with --hold its clock starts
 * at POST /sim/v1/start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/support/fixture.h"
#include "tests/support/proc.h"

/* Runs a scenario to its end; returns the exit status and the stdout. */
static int run(const char *file, const char *hook, char **out)
{
  const char *args[] = {"--scenario", file, "--time-scale", "200",
                        hook ? "--hook" : NULL, hook, NULL};
  struct gq_test_sim sim;
  char path[400];
  int rc;

  assert_int_equal(gq_test_sim_start(&sim, args), 0);
  rc = gq_test_sim_wait(&sim, 60000);
  snprintf(path, sizeof(path), "%s/sim.out", sim.dir);
  *out = gq_test_read_file(path, NULL);
  gq_test_sim_stop(&sim);
  return rc;
}

static void test_passing_scenario(void **state)
{
  char mark[128], hook[256], *out;
  struct stat st;

  (void)state;
  snprintf(mark, sizeof(mark), "/tmp/gpuq-scenario-hook-%d", (int)getpid());
  snprintf(hook, sizeof(hook), "mark=touch %s", mark);
  unlink(mark);
  assert_int_equal(run("tests/scenarios/sim-selftest.yaml", hook, &out), 0);
  assert_non_null(strstr(out, "PASSED: 0 of 13 expectations failed"));
  assert_non_null(strstr(out, "ok   at t=40s nodes gpu-a-00 spec.unschedulable"));
  assert_null(strstr(out, "FAIL "));
  free(out);
  assert_int_equal(stat(mark, &st), 0); /* the hook ran */
  unlink(mark);
}

static void test_failing_scenario(void **state)
{
  char *out;

  (void)state;
  assert_int_equal(run("tests/scenarios/sim-selftest-fail.yaml", "bad=exit 3",
                       &out),
                   1);
  assert_non_null(strstr(out, "FAIL 1 scenario hook(s) exited non-zero"));
  assert_non_null(strstr(out, "FAIL GpuJob team-b/never status.phase: want "
                              "{\"equals\":\"Succeeded\"}, got nothing"));
  assert_non_null(strstr(out, "FAIL at t=100s: not reached"));
  free(out);
}

static void test_held_scenario(void **state)
{
  const char *args[] = {"--scenario", "tests/scenarios/sim-selftest-fail.yaml",
                        "--hold", "--time-scale", "200", NULL};
  struct gq_test_sim sim;
  json_t *rep;

  (void)state;
  assert_int_equal(gq_test_sim_start(&sim, args), 0);
  rep = gq_test_sim_call(&sim, "GET", "/sim/v1/report", NULL, 200);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(rep, "replay"), "submitted")),
                   0);
  json_decref(rep);
  json_decref(gq_test_sim_call(&sim, "POST", "/sim/v1/start", NULL, 200));
  json_decref(gq_test_sim_call(&sim, "POST", "/sim/v1/start", NULL, 409));
  assert_int_equal(gq_test_sim_wait(&sim, 60000), 1); /* ran and failed */
  gq_test_sim_stop(&sim);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_passing_scenario),
      cmocka_unit_test(test_failing_scenario),
      cmocka_unit_test(test_held_scenario),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
