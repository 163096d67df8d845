/* tests/support/redis.h - a private redis-server for one test.
 *
 * Starts redis-server on 127.0.0.1 on a free port with its own temporary
 * directory, persistence off, and waits until it answers PING. The server
 * gets SIGTERM if the test process dies (PR_SET_PDEATHSIG), so a crashed
 * test leaves nothing behind. Test code only: it blocks.
 */
#ifndef GQ_TEST_REDIS_H
#define GQ_TEST_REDIS_H
#include <sys/types.h>

struct gq_test_redis {
  int port;       /* loopback TCP port */
  pid_t pid;      /* the redis-server process; 0 when stopped */
  char dir[256];  /* its working directory (removed by stop) */
  char url[64];   /* "redis://127.0.0.1:PORT/0" */
  char log[300];  /* its log file, inside dir */
};

/* Starts a server; extra_args (NULL-terminated, may be NULL) are appended
 * to its command line (e.g. "--requirepass", "pw"). Retries with another
 * port if the chosen one was taken meanwhile. Returns 0, or a negative
 * GQ_E* / -errno with a message on stderr (redis-server missing, no ready
 * server within 10 s). */
int gq_test_redis_start(struct gq_test_redis *r, const char *const *extra_args);

/* Same, on the given port (a restart "on the same address": the test's
 * clients must find it again). No retry on another port. */
int gq_test_redis_start_port(struct gq_test_redis *r, int port,
                             const char *const *extra_args);

/* Asks the kernel for a free loopback TCP port (another process may take
 * it before it is used; callers retry). Returns it, or -1. */
int gq_test_free_port(void);

/* Stops the server (SIGTERM, then SIGKILL after 5 s), reaps it, and removes
 * its directory. Safe to call twice. */
void gq_test_redis_stop(struct gq_test_redis *r);

/* Sends one command through a short-lived blocking connection and returns
 * the reply as a heap string ("OK", "PONG", an integer in decimal, a bulk
 * string, "(nil)", or "ERR ..." for an error reply); NULL if the server
 * cannot be reached. The caller frees it. For test assertions only. */
char *gq_test_redis_cmd(const struct gq_test_redis *r, const char *fmt, ...);

#endif
