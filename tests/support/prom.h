/* tests/support/prom.h - a private Prometheus (Debian's prometheus) for one
 * test: on 127.0.0.1 at a free port, its TSDB in a temporary directory,
 * scraping the given targets every scrape_ms (real ms). The server gets
 * SIGTERM if the test process dies (PR_SET_PDEATHSIG). Test code only:
 * it blocks. */
#ifndef GQ_TEST_PROM_H
#define GQ_TEST_PROM_H
#include <sys/types.h>

struct gq_test_prom {
  pid_t pid;      /* 0 when stopped */
  int port;
  char dir[256];  /* config, TSDB and log (removed by stop) */
  char url[64];   /* "http://127.0.0.1:PORT" */
  char log[300];
};

/* Starts prometheus scraping targets (NULL-terminated "host:port" list,
 * path /metrics, one job "gpuq-test") every scrape_ms, and waits (up to
 * 30 s) for /-/ready, then (up to 30 s more) until every target has been
 * scraped (discovery takes Prometheus a few seconds). Returns 0, or -1 with a message on stderr (the
 * binary missing: run 'make deps'; not ready in time: its log). */
int gq_test_prom_start(struct gq_test_prom *p, const char *const *targets,
                       int scrape_ms);

/* Same, on port (a restart at the same address), or a free one if 0. */
int gq_test_prom_start_port(struct gq_test_prom *p, int port,
                            const char *const *targets, int scrape_ms);

/* Stops it (SIGTERM; SIGKILL after 10 s), keeping the directory when
 * keep_dir (for a restart), else removing it. Safe to call twice. */
void gq_test_prom_stop(struct gq_test_prom *p, int keep_dir);

/* Waits up to timeout_ms until the instant query promql returns at least
 * one sample. Returns 1 if it did. */
int gq_test_prom_wait(const struct gq_test_prom *p, const char *promql,
                      int timeout_ms);

#endif
