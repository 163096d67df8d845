/* The official Kubernetes JavaScript client against gpuq-sim (issue 24):
 * @kubernetes/client-node, installed in tests/integ/clients by `make
 * deps` (npm ci), run by node.
 *
 * The world is test_pyclient's (tests/support/world.h: Redis, gpuq-sim
 * with two 8-GPU nodes, gpuq-controller), with a watch window of 50
 * changes so that a watch from an old resourceVersion gets 410 Gone.
 * tests/integ/clients/informer.mjs runs makeInformer on GpuJobs and on
 * pods across a server-side watch close and a 410 (its header says how)
 * and fails unless the informers saw every add, update and delete, listed
 * again after the 410 and end in sync with the server.
 *
 * Skipped, with a message, when node is not on PATH; the package missing
 * is a failure that says to run `make deps`.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/support/world.h"

#define CLIENTS "tests/integ/clients"
#define SCRIPT_MS 300000 /* the script's own waits end sooner */

static struct gq_test_world w;
static char node[4096];

/* node's path from PATH into 'node'; 0 if it is there. */
static int find_node(void)
{
  const char *path = getenv("PATH");

  while (path && *path) {
    const char *colon = strchr(path, ':');
    size_t n = colon ? (size_t)(colon - path) : strlen(path);

    snprintf(node, sizeof(node), "%.*s/node", (int)n, path);
    if (n && access(node, X_OK) == 0)
      return 0;
    path += n + (colon ? 1 : 0);
  }
  node[0] = '\0';
  return -1;
}

static int world_up(void **state)
{
  static const char *const sargs[] = {"--watch-window", "50", NULL};

  (void)state;
  if (find_node() != 0)
    return 0; /* the test skips */
  return gq_test_world_up(&w, "jsclient", 0, sargs);
}

static int world_down(void **state)
{
  (void)state;
  return node[0] ? gq_test_world_down(&w) : 0;
}

static void test_informers(void **state)
{
  const char *argv[] = {node, CLIENTS "/informer.mjs", w.sim.kubeconfig, NULL};

  (void)state;
  if (!node[0]) {
    fprintf(stderr, "test_jsclient: skipped: node is not on PATH (make "
            "deps installs nodejs and npm)\n");
    skip();
  }
  if (access(CLIENTS "/node_modules/@kubernetes/client-node/package.json",
             R_OK) != 0)
    fail_msg("@kubernetes/client-node is not installed in " CLIENTS
             ": run 'make deps' (npm ci there)");
  assert_int_equal(gq_test_world_run(&w, argv, SCRIPT_MS, 0), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_informers),
  };

  return cmocka_run_group_tests(tests, world_up, world_down);
}
