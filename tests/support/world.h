/* tests/support/world.h - the world the official-client tests run in
 * (test_pyclient, test_jsclient): a private redis-server, gpuq-sim with
 * two 8-GPU nodes (p-a-0, p-b-0), the namespaces team-a and gpuq-system,
 * and gpuq-controller with --leader-elect, all at --time-scale 10. Then
 * scripts of tests/integ/clients run against it with their output (and
 * the logs, when they fail) on stderr. Test code only: everything here
 * blocks. */
#ifndef GQ_TEST_WORLD_H
#define GQ_TEST_WORLD_H
#include "tests/support/proc.h"
#include "tests/support/redis.h"

struct gq_test_world {
  char dir[256];    /* temporary directory, removed by down */
  char record[320]; /* the sim's --record file, when asked for */
  struct gq_test_sim sim;
  struct gq_test_redis redis;
  struct gq_test_ctl ctl;
  int up; /* the controller and the sim run */
};

/* Starts everything; 'name' names the temporary directory, record != 0
 * passes --record w->record to the sim, sim_args (NULL-terminated, may
 * be NULL) go to the sim after the common ones. Returns 0 or -1 (what
 * started is stopped by gq_test_world_down, which must still be
 * called). */
int gq_test_world_up(struct gq_test_world *w, const char *name, int record,
                     const char *const *sim_args);

/* Stops the controller and the sim (a --record file is complete then);
 * idempotent. Returns 0 if both stopped cleanly. */
int gq_test_world_stop(struct gq_test_world *w);

/* Stops everything and removes the directory. Returns what
 * gq_test_world_stop returned. */
int gq_test_world_down(struct gq_test_world *w);

/* Runs argv (a script and its arguments) in w->dir for at most
 * timeout_ms. Prints its exit status and output to stderr when the
 * status is not 'want' (or GQ_TEST_LOGS is set), and then, while the
 * world is up, the controller's and the sim's logs. Returns the exit
 * status. */
int gq_test_world_run(struct gq_test_world *w, const char *const *argv,
                      int timeout_ms, int want);

#endif
