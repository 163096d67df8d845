/* The scenario runner (gpuq-sim --scenario): a passing scenario exits 0
 * after running its timed node events and hook, and a scenario whose
 * expectation fails exits non-zero naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

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
  assert_non_null(strstr(out, "PASSED: 0 of 7 expectations failed"));
  assert_null(strstr(out, "FAIL "));
  free(out);
  assert_int_equal(stat(mark, &st), 0); /* the hook ran */
  unlink(mark);
}

static void test_failing_scenario(void **state)
{
  char *out;

  (void)state;
  assert_int_equal(run("tests/scenarios/sim-selftest-fail.yaml", NULL, &out),
                   1);
  assert_non_null(strstr(out, "FAIL GpuJob team-b/never status.phase: want "
                              "{\"equals\":\"Succeeded\"}, got nothing"));
  free(out);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_passing_scenario),
      cmocka_unit_test(test_failing_scenario),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
