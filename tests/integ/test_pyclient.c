/* The official Kubernetes Python client against gpuq-sim (issue 24):
 * Debian's python3-kubernetes (/usr/bin/python3; make deps installs it),
 * its typed models with client-side validation on.
 *
 * The world: a private redis-server, gpuq-sim with --record (every JSON
 * answer to a file), two 8-GPU nodes and a watch window of 50 changes
 * (so that a watch from resourceVersion 1 expires), gpuq-controller with
 * --leader-elect. Then:
 *   1. tests/integ/clients/k8s_typed.py drives it through the typed API
 *      classes: list, watch.Watch().stream (events arrive; streams end
 *      at timeout_seconds), create, patch, delete of GpuJobs, pods, nodes
 *      and events, and a workload that makes the sim answer with every
 *      kind it serves (docs in the script). Every call must succeed.
 *   2. once the controller and the sim have stopped, schema_check.py
 *      deserializes every recorded body (watch frames too) into the typed
 *      models, checks each value's type (and the API's enums), and fails
 *      if a kind the sim's discovery lists was never checked; with the
 *      recorded /openapi/v2 (k8s_typed.py asks for it), every object of
 *      a built-in kind is also checked against its 1.32 definition there
 *      (declared fields, required fields, JSON types).
 *   3. the checker itself fails on a record with a missing required
 *      field, a wrong type, a value outside an enum, a bad timestamp, an
 *      error that is not a Status, a served kind with no check, a group
 *      whose resources were never listed, and objects against a small
 *      /openapi/v2 (an undeclared field, a wrong type, a missing required
 *      field, a served kind with no definition)
 *      (tests/fixtures/schema_check/bad-record.jsonl).
 * The scripts wait for conditions with deadlines, never for time.
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
#include "tests/support/world.h"

#define PY "/usr/bin/python3"
#define CLIENTS "tests/integ/clients"
#define SCRIPT_MS 300000 /* the scripts' own waits end sooner */

static struct gq_test_world w;

static int world_up(void **state)
{
  static const char *const sargs[] = {"--watch-window", "50", NULL};

  (void)state;
  return gq_test_world_up(&w, "pyclient", 1, sargs);
}

static int world_down(void **state)
{
  (void)state;
  return gq_test_world_down(&w);
}

/* Runs a script of tests/integ/clients with /usr/bin/python3; fails the
 * test (with its output and, if the world is up, the logs) unless it
 * exits with want. */
static void run_py(const char *script, const char *arg, int want)
{
  char path[200];
  const char *argv[] = {PY, path, arg, NULL};

  snprintf(path, sizeof(path), CLIENTS "/%s", script);
  assert_int_equal(gq_test_world_run(&w, argv, SCRIPT_MS, want), want);
}

static void test_typed_client(void **state)
{
  (void)state;
  run_py("k8s_typed.py", w.sim.kubeconfig, 0);
}

static void test_schema_check(void **state)
{
  (void)state;
  assert_int_equal(gq_test_world_stop(&w), 0);
  run_py("schema_check.py", w.record, 0);
}

static void test_checker_fails(void **state)
{
  char path[200];
  const char *argv[] = {PY, path, "tests/fixtures/schema_check/"
                        "bad-record.jsonl", NULL};
  struct gq_test_out o = {0};
  int i;
  static const char *const want[] = {
      "Invalid value for `containers`, must not be `None`",
      "status.capacity[cpu]: want str, got 8",
      "Failed to parse `yesterday` as datetime object",
      "an error answer that is not a Status",
      "v1 Widget has no typed model",
      "served kind never checked: v1 WidgetList",
      "served kind never checked: v1 Node (nodes)",
      "no APIResourceList recorded for example.dev/v1",
      "status.phase: 'Runing' is not one of",
      "spec.nodeName: 1.32 definition: want string, got 7",
      "spec.containers[0].surplus: not in the 1.32 definition",
      "spec.containers[1].name: required by the 1.32 definition, missing",
      "/openapi/v2: no definition tagged v1 PodList",
      NULL};

  (void)state;
  snprintf(path, sizeof(path), CLIENTS "/schema_check.py");
  gq_test_run_for(w.dir, argv, &o, SCRIPT_MS);
  for (i = 0; o.status == 1 && want[i]; i++)
    if (!strstr(o.err, want[i]))
      o.status = -2;
  if (o.status != 1)
    fprintf(stderr, "schema_check.py on the bad record: exit %d\n%s\n",
            o.status, o.err);
  i = o.status;
  gq_test_out_free(&o);
  assert_int_equal(i, 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_typed_client),
      cmocka_unit_test(test_schema_check),
      cmocka_unit_test(test_checker_fails),
  };

  return cmocka_run_group_tests(tests, world_up, world_down);
}
