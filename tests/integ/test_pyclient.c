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
 *      if a kind the sim's discovery lists was never checked.
 *   3. the checker itself fails on a record with a missing required
 *      field, a wrong type, a value outside an enum, a bad timestamp, an
 *      error that is not a Status, a served kind with no check and a group
 *      whose resources were never listed
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
#include "tests/support/redis.h"

#define PY "/usr/bin/python3"
#define CLIENTS "tests/integ/clients"
#define SCRIPT_MS 300000 /* the scripts' own waits end sooner */

static struct {
  char dir[256], record[320];
  struct gq_test_sim sim;
  struct gq_test_redis redis;
  struct gq_test_ctl ctl;
  int up;
} w;

static int world_up(void **state)
{
  const char *tmp = getenv("TMPDIR");
  char cluster[320];
  FILE *f;

  (void)state;
  snprintf(w.dir, sizeof(w.dir), "%s/gpuq-pyclient-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(w.dir))
    return -1;
  snprintf(cluster, sizeof(cluster), "%s/cluster.yaml", w.dir);
  snprintf(w.record, sizeof(w.record), "%s/record.jsonl", w.dir);
  if (!(f = fopen(cluster, "w")))
    return -1;
  fprintf(f, "nodes: []\ngroups:\n");
  for (int i = 0; i < 2; i++)
    fprintf(f, "- {count: 1, prefix: 'p%c-', cpu: '128', memory: 2000Gi, "
            "pods: 110, gpu: {product: NVIDIA-H100-80GB-HBM3, memoryMiB: "
            "81559, count: 8}}\n", "ab"[i]);
  fclose(f);
  {
    const char *sargs[] = {"--cluster", cluster, "--time-scale", "10",
                           "--time-epoch", "1800000000", "--record",
                           w.record, "--watch-window", "50", NULL};
    static const char *const cargs[] = {"--time-scale", "10", "--time-epoch",
                                        "1800000000", "--leader-elect", NULL};

    if (gq_test_redis_start(&w.redis, NULL) != 0 ||
        gq_test_sim_start(&w.sim, sargs) != 0)
      return -1;
    w.up = 1;
    json_decref(gq_test_sim_call(&w.sim, "POST", "/api/v1/namespaces",
                                 "{\"metadata\":{\"name\":\"team-a\"}}",
                                 201));
    json_decref(gq_test_sim_call(&w.sim, "POST", "/api/v1/namespaces",
                                 "{\"metadata\":{\"name\":\"gpuq-system\"}}",
                                 201));
    return gq_test_ctl_start(&w.ctl, &w.sim, w.redis.url, 0, cargs);
  }
}

static void print_file(const char *what, const char *path)
{
  char *text = gq_test_read_file(path, NULL);

  fprintf(stderr, "---- %s ----\n%s\n", what, text ? text : "");
  free(text);
}

/* Stops the controller and the sim (the record is complete then);
 * idempotent. Returns 0 if both stopped cleanly. */
static int world_stop(void)
{
  int rc;

  if (!w.up)
    return 0;
  rc = gq_test_ctl_sim_stop(&w.ctl, &w.sim);
  w.up = 0;
  return rc;
}

static int world_down(void **state)
{
  int rc = world_stop();

  (void)state;
  gq_test_redis_stop(&w.redis);
  gq_test_rmtree(w.dir);
  return rc;
}

/* Runs a script of tests/integ/clients with /usr/bin/python3; fails the
 * test (with its output and, if the world is up, the logs) unless it
 * exits with want. */
static void run_py(const char *script, const char *arg, int want)
{
  char path[200];
  const char *argv[] = {PY, path, arg, NULL};
  struct gq_test_out o = {0};

  snprintf(path, sizeof(path), CLIENTS "/%s", script);
  int status;

  gq_test_run_for(w.dir, argv, &o, SCRIPT_MS);
  if (o.status != want || getenv("GQ_TEST_LOGS"))
    fprintf(stderr, "---- %s: exit %d ----\n%s\n%s\n", script, o.status,
            o.out, o.err);
  if (o.status != want && w.up) {
    print_file("controller log", w.ctl.log);
    print_file("sim log", w.sim.log);
  }
  status = o.status;
  gq_test_out_free(&o);
  assert_int_equal(status, want);
}

static void test_typed_client(void **state)
{
  (void)state;
  run_py("k8s_typed.py", w.sim.kubeconfig, 0);
}

static void test_schema_check(void **state)
{
  (void)state;
  assert_int_equal(world_stop(), 0);
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
