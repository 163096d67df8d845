/* tests/support/prom.c - a private Prometheus for one test (prom.h). */
#include "tests/support/prom.h"

#include "tests/support/proc.h"
#include "tests/support/redis.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms)
{
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

  nanosleep(&ts, NULL);
}

static int write_config(const struct gq_test_prom *p,
                        const char *const *targets, int scrape_ms)
{
  char path[320];
  FILE *f;

  snprintf(path, sizeof(path), "%s/prometheus.yml", p->dir);
  f = fopen(path, "w");
  if (!f)
    return -1;
  fprintf(f, "global:\n  scrape_interval: %dms\n  scrape_timeout: %dms\n"
          "scrape_configs:\n- job_name: gpuq-test\n  static_configs:\n"
          "  - targets: [", scrape_ms, scrape_ms);
  for (size_t i = 0; targets && targets[i]; i++)
    fprintf(f, "%s\"%s\"", i ? ", " : "", targets[i]);
  fprintf(f, "]\n");
  return fclose(f);
}

static pid_t spawn(const struct gq_test_prom *p)
{
  char cfg[320], tsdb[320], addr[64];
  pid_t pid;

  snprintf(cfg, sizeof(cfg), "--config.file=%s/prometheus.yml", p->dir);
  snprintf(tsdb, sizeof(tsdb), "--storage.tsdb.path=%s/data", p->dir);
  snprintf(addr, sizeof(addr), "--web.listen-address=127.0.0.1:%d", p->port);
  pid = fork();
  if (pid == 0) {
    const char *argv[] = {"prometheus", cfg, tsdb, addr,
                          "--storage.tsdb.retention.time=1d", NULL};
    FILE *log = fopen(p->log, "a");

    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (log) {
      dup2(fileno(log), 1);
      dup2(fileno(log), 2);
    }
    execvp(argv[0], (char *const *)argv);
    fprintf(stderr, "cannot exec prometheus: %s\n", strerror(errno));
    _exit(127);
  }
  return pid;
}

static int ready(const struct gq_test_prom *p)
{
  char url[128], *resp = NULL;
  int st;

  snprintf(url, sizeof(url), "%s/-/ready", p->url);
  st = gq_test_http("GET", url, NULL, NULL, NULL, &resp);
  free(resp);
  return st == 200;
}

static int scraped_all(const struct gq_test_prom *p,
                       const char *const *targets)
{
  char q[64];
  size_t n = 0;

  while (targets && targets[n])
    n++;
  if (!n)
    return 1;
  snprintf(q, sizeof(q), "count(up == 1) == %zu", n);
  /* Prometheus discovers static targets a few seconds after it is ready */
  return gq_test_prom_wait(p, q, 30000);
}

int gq_test_prom_start_port(struct gq_test_prom *p, int port,
                            const char *const *targets, int scrape_ms)
{
  const char *tmp = getenv("TMPDIR");

  if (!p->dir[0]) {
    snprintf(p->dir, sizeof(p->dir), "%s/gpuq-test-prom-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(p->dir)) {
      fprintf(stderr, "cannot create '%s': %s\n", p->dir, strerror(errno));
      p->dir[0] = '\0';
      return -1;
    }
  }
  snprintf(p->log, sizeof(p->log), "%s/prometheus.log", p->dir);
  if (write_config(p, targets, scrape_ms) != 0)
    return -1;
  p->port = port ? port : gq_test_free_port();
  snprintf(p->url, sizeof(p->url), "http://127.0.0.1:%d", p->port);
  p->pid = spawn(p);
  for (int i = 0; p->pid > 0 && i < 600; i++) {
    int status;

    if (ready(p) && scraped_all(p, targets))
      return 0;
    if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
      p->pid = 0;
      break;
    }
    sleep_ms(50);
  }
  fprintf(stderr, "prometheus not ready on %s (is it installed? run 'make "
          "deps'); its log: %s\n", p->url, p->log);
  gq_test_prom_stop(p, 1);
  return -1;
}

int gq_test_prom_start(struct gq_test_prom *p, const char *const *targets,
                       int scrape_ms)
{
  memset(p, 0, sizeof(*p));
  return gq_test_prom_start_port(p, 0, targets, scrape_ms);
}

void gq_test_prom_stop(struct gq_test_prom *p, int keep_dir)
{
  if (p->pid > 0) {
    int status;

    kill(p->pid, SIGTERM);
    for (int i = 0; i < 1000; i++) {
      if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
        p->pid = 0;
        break;
      }
      sleep_ms(10);
    }
    if (p->pid > 0) {
      kill(p->pid, SIGKILL);
      waitpid(p->pid, &status, 0);
      p->pid = 0;
    }
  }
  if (!keep_dir && p->dir[0]) {
    char cmd[300];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", p->dir);
    if (system(cmd) != 0)
      fprintf(stderr, "cannot remove %s\n", p->dir);
    p->dir[0] = '\0';
  }
}

int gq_test_prom_wait(const struct gq_test_prom *p, const char *promql,
                      int timeout_ms)
{
  char *enc = curl_easy_escape(NULL, promql, 0), url[1024];
  int ok = 0;

  snprintf(url, sizeof(url), "%s/api/v1/query?query=%s", p->url, enc);
  curl_free(enc);
  for (int waited = 0; !ok && waited <= timeout_ms; waited += 100) {
    char *resp = NULL;
    json_t *doc;

    if (gq_test_http("GET", url, NULL, NULL, NULL, &resp) == 200 &&
        (doc = json_loads(resp, 0, NULL))) {
      ok = json_array_size(json_object_get(json_object_get(doc, "data"),
                                           "result")) > 0;
      json_decref(doc);
    }
    free(resp);
    if (!ok)
      sleep_ms(100);
  }
  return ok;
}
