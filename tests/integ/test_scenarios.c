/* The field failure cases (issue 10, docs/scenarios.md): every
 * tests/scenarios/NAME.yaml with a top-level 'controller: true' runs as one
 * cmocka test against a private redis-server, gpuq-sim --scenario FILE
 * --hold and the real gpuq-controller on the same accelerated clock. The
 * scenario's time 0 is when the controller reports ready (/readyz), so its
 * times do not depend on how fast the processes start. The test passes
 * when the sim exits 0: every expectation held and no invariant was
 * violated. On a failure the sim's output, its log and the controller's
 * logs are printed.
 *
 * Scenario keys read here (the sim ignores them):
 *   controller: true          run this scenario here
 *   timeScale: 100            virtual seconds per real second (default 100)
 *   controllerArgs: [...]     extra gpuq-controller flags
 *   hooks: {NAME: COMMAND}    shell commands for 'run: NAME' events; they
 *                             run with $GQ_SCENARIO_DIR/env sourced:
 *                             KUBECTL (kubectl with the sim's kubeconfig),
 *                             SIM_URL, REDIS_PORT
 * Built-in hooks (handled by this process, which owns the children; the
 * sim runs "<this binary> --hook NAME", which asks and waits):
 *   kill-controller, start-controller, restart-controller (SIGTERM, then
 *   start), crash-controller (SIGKILL, then start), flush-redis,
 *   stop-redis, start-redis (same port, empty).
 *
 * Usage: test_scenarios [FILE...] (default: every controller scenario);
 * GQ_TEST_FILTER=<glob> selects by file name; GQ_TEST_LOGS=1 prints the
 * logs of passing scenarios too.
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "api/yaml.h"
#include "tests/support/fixture.h"
#include "tests/support/proc.h"
#include "tests/support/redis.h"

#define SCENARIO_DIR "tests/scenarios"
#define DEFAULT_SCALE 100
#define REAL_LIMIT_MS 120000 /* a scenario taking longer has failed */
#define MAX_CTL_ARGS 16

static const char *const builtin_hooks[] = {
    "kill-controller", "start-controller", "restart-controller",
    "crash-controller", "flush-redis", "stop-redis", "start-redis", NULL};

static char self_exe[512];

/* One scenario's world. */
struct world {
  char file[300];
  char dir[256]; /* GQ_SCENARIO_DIR: requests, acks, env */
  json_t *doc;
  char scale[32], epoch[32];
  const char *ctl_args[MAX_CTL_ARGS + 8];
  struct gq_test_redis redis;
  struct gq_test_sim sim;
  struct gq_test_ctl ctl;
  char ctl_logs[8][400]; /* every controller start's log */
  int n_ctl;
};

/* ---- hooks: the client side (run by the sim) ---------------------------- */

/* "--hook NAME": asks the harness in $GQ_SCENARIO_DIR to run NAME, waits
 * for its answer (60 s cap). Returns the process exit status. */
static int hook_client(const char *name)
{
  const char *dir = getenv("GQ_SCENARIO_DIR");
  char tmp[400], req[400], ack[400];
  FILE *f;

  if (!dir) {
    fprintf(stderr, "test_scenarios --hook: GQ_SCENARIO_DIR is not set\n");
    return 2;
  }
  snprintf(tmp, sizeof(tmp), "%s/tmp-%d", dir, (int)getpid());
  snprintf(req, sizeof(req), "%s/req-%d", dir, (int)getpid());
  snprintf(ack, sizeof(ack), "%s/ack-%d", dir, (int)getpid());
  if (!(f = fopen(tmp, "w")))
    return 2;
  fprintf(f, "%s", name);
  fclose(f);
  if (rename(tmp, req) != 0)
    return 2;
  if (!gq_test_wait_file(ack, "\n", 60000)) {
    fprintf(stderr, "test_scenarios --hook %s: no answer\n", name);
    return 1;
  }
  unlink(ack);
  return 0;
}

/* ---- the world ------------------------------------------------------------ */

static void ctl_up(struct world *w)
{
  int n = 0;
  const json_t *extra = json_object_get(w->doc, "controllerArgs"), *v;
  size_t i;

  w->ctl_args[n++] = "--time-scale";
  w->ctl_args[n++] = w->scale;
  w->ctl_args[n++] = "--time-epoch";
  w->ctl_args[n++] = w->epoch;
  /* TeamQuota status as soon as it changes: at the accelerated clock the
   * default second between writes is 100 virtual seconds, longer than the
   * scenarios' expectations leave */
  w->ctl_args[n++] = "--quota-status-interval-ms";
  w->ctl_args[n++] = "20";
  json_array_foreach((json_t *)extra, i, v)
    if (json_is_string(v) && n < MAX_CTL_ARGS + 6)
      w->ctl_args[n++] = json_string_value(v);
  w->ctl_args[n] = NULL;
  assert_int_equal(gq_test_ctl_start(&w->ctl, &w->sim, w->redis.url, 1,
                                     w->ctl_args),
                   0);
  if (w->n_ctl < 8)
    snprintf(w->ctl_logs[w->n_ctl++], sizeof(w->ctl_logs[0]), "%s",
             w->ctl.log);
}

/* Waits (up to 30 s) for the controller's /readyz to answer 200. */
static int ctl_ready(const struct world *w)
{
  char url[128], *resp = NULL;

  snprintf(url, sizeof(url), "http://127.0.0.1:%d/readyz",
           w->ctl.metrics_port);
  for (int t = 0; t < 30000; t += 20) {
    int code = gq_test_http("GET", url, NULL, NULL, NULL, &resp);

    free(resp);
    resp = NULL;
    if (code == 200)
      return 1;
    gq_test_sleep_ms(20);
  }
  return 0;
}

/* Runs one built-in hook; 0 or -1 if the name is unknown. */
static int hook_run(struct world *w, const char *name)
{
  char *reply;

  fprintf(stderr, "[scenario] hook %s\n", name);
  if (!strcmp(name, "kill-controller")) {
    gq_test_ctl_kill(&w->ctl);
  } else if (!strcmp(name, "start-controller")) {
    ctl_up(w);
  } else if (!strcmp(name, "restart-controller")) {
    gq_test_ctl_stop(&w->ctl);
    ctl_up(w);
  } else if (!strcmp(name, "crash-controller")) {
    gq_test_ctl_kill(&w->ctl);
    ctl_up(w);
  } else if (!strcmp(name, "flush-redis")) {
    reply = gq_test_redis_cmd(&w->redis, "FLUSHALL");
    free(reply);
  } else if (!strcmp(name, "stop-redis")) {
    int port = w->redis.port;

    gq_test_redis_stop(&w->redis);
    w->redis.port = port; /* start-redis comes back on it */
  } else if (!strcmp(name, "start-redis")) {
    assert_int_equal(gq_test_redis_start_port(&w->redis, w->redis.port, NULL),
                     0);
  } else {
    return -1;
  }
  return 0;
}

/* Answers the hook requests waiting in w->dir. */
static void hooks_serve(struct world *w)
{
  DIR *d = opendir(w->dir);
  struct dirent *e;

  if (!d)
    return;
  while ((e = readdir(d))) {
    char req[600], ack[600], *name;
    FILE *f;

    if (strncmp(e->d_name, "req-", 4) != 0)
      continue;
    snprintf(req, sizeof(req), "%s/%s", w->dir, e->d_name);
    snprintf(ack, sizeof(ack), "%s/ack-%s", w->dir, e->d_name + 4);
    name = gq_test_read_file(req, NULL);
    unlink(req);
    if (name && hook_run(w, name) != 0)
      fprintf(stderr, "[scenario] unknown hook '%s'\n", name);
    free(name);
    if ((f = fopen(ack, "w"))) {
      fputs("done\n", f);
      fclose(f);
    }
  }
  closedir(d);
}

/* Writes $GQ_SCENARIO_DIR/env for the scenario's own hooks. */
static void write_env(const struct world *w)
{
  char path[320];
  FILE *f;

  snprintf(path, sizeof(path), "%s/env", w->dir);
  f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "KUBECTL='kubectl --kubeconfig %s --cache-dir %s'\n"
          "SIM_URL='%s'\nREDIS_PORT=%d\n",
          w->sim.kubeconfig, w->sim.cache, w->sim.url, w->redis.port);
  fclose(f);
}

static void dump(const char *what, const char *path)
{
  char *text = gq_test_read_file(path, NULL);

  fprintf(stderr, "---- %s (%s) ----\n%s\n", what, path, text ? text : "");
  free(text);
}

/* Builds the sim's arguments: the scenario held for the start, the clock,
 * the built-in hooks and the scenario's own. Strings live in store. */
static void sim_args(struct world *w, const char **argv, char store[][600])
{
  const json_t *hooks = json_object_get(w->doc, "hooks"), *cmd;
  const char *name;
  int n = 0, k = 0;

  argv[n++] = "--scenario";
  argv[n++] = w->file;
  argv[n++] = "--hold";
  argv[n++] = "--time-scale";
  argv[n++] = w->scale;
  argv[n++] = "--time-epoch";
  argv[n++] = w->epoch;
  for (int i = 0; builtin_hooks[i]; i++) {
    snprintf(store[k], 600, "%s=%s --hook %s", builtin_hooks[i], self_exe,
             builtin_hooks[i]);
    argv[n++] = "--hook";
    argv[n++] = store[k++];
  }
  json_object_foreach((json_t *)hooks, name, cmd) {
    if (k == 16)
      break;
    snprintf(store[k], 600, "%s=. \"$GQ_SCENARIO_DIR/env\" && %s", name,
             json_string_value(cmd) ? json_string_value(cmd) : "false");
    argv[n++] = "--hook";
    argv[n++] = store[k++];
  }
  argv[n] = NULL;
}

static void run_scenario(void **state)
{
  struct world *w = *state;
  const char *argv[48];
  char store[16][600], out[400], err[512];
  const json_t *ts;
  int status = -1, rc = -1, done = 0;
  json_t *docs;

  assert_int_equal(gq_yaml_load_file(w->file, &docs, err, sizeof(err)), 0);
  w->doc = json_incref(json_array_get(docs, 0));
  json_decref(docs);
  ts = json_object_get(w->doc, "timeScale");
  snprintf(w->scale, sizeof(w->scale), "%lld",
           json_is_integer(ts) ? (long long)json_integer_value(ts)
                               : (long long)DEFAULT_SCALE);
  snprintf(w->epoch, sizeof(w->epoch), "%lld", (long long)time(NULL));
  snprintf(w->dir, sizeof(w->dir), "%s/gpuq-scenario-XXXXXX",
           getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  assert_non_null(mkdtemp(w->dir));
  setenv("GQ_SCENARIO_DIR", w->dir, 1);
  assert_int_equal(gq_test_redis_start(&w->redis, NULL), 0);
  sim_args(w, argv, store);
  assert_int_equal(gq_test_sim_start(&w->sim, argv), 0);
  write_env(w);
  ctl_up(w);
  assert_true(ctl_ready(w));
  json_decref(gq_test_sim_call(&w->sim, "POST", "/sim/v1/start", NULL, 200));
  for (int t = 0; t < REAL_LIMIT_MS && !done; t += 10) {
    hooks_serve(w);
    if (waitpid(w->sim.pid, &status, WNOHANG) == w->sim.pid) {
      rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      w->sim.pid = 0;
      done = 1;
    } else {
      gq_test_sleep_ms(10);
    }
  }
  snprintf(out, sizeof(out), "%s/sim.out", w->sim.dir);
  if (rc != 0 || getenv("GQ_TEST_LOGS")) {
    for (int i = 0; i < w->n_ctl; i++)
      dump("controller log", w->ctl_logs[i]);
    dump("sim log", w->sim.log);
    dump("sim output", out);
  }
  if (!done)
    fprintf(stderr, "[scenario] %s: the sim did not finish within %d s\n",
            w->file, REAL_LIMIT_MS / 1000);
  assert_int_equal(rc, 0);
  /* The controller must have survived the scenario (unless a hook stopped
   * it): a clean SIGTERM exit. */
  if (w->ctl.pid > 0)
    assert_int_equal(gq_test_ctl_stop(&w->ctl), 0);
}

static int world_down(void **state)
{
  struct world *w = *state;

  gq_test_ctl_stop(&w->ctl);
  gq_test_sim_stop(&w->sim);
  gq_test_redis_stop(&w->redis);
  if (w->dir[0])
    gq_test_rmtree(w->dir);
  json_decref(w->doc);
  w->doc = NULL;
  w->dir[0] = '\0';
  w->n_ctl = 0;
  return 0;
}

/* 1 if the scenario file has 'controller: true'. */
static int wants_controller(const char *file)
{
  char err[512];
  json_t *docs;
  int yes;

  if (gq_yaml_load_file(file, &docs, err, sizeof(err)) != 0) {
    fprintf(stderr, "%s\n", err);
    return 1; /* run it: the sim names the problem */
  }
  yes = json_is_true(json_object_get(json_array_get(docs, 0), "controller"));
  json_decref(docs);
  return yes;
}

static int by_name(const void *a, const void *b)
{
  return strcmp(((const struct world *)a)->file,
                ((const struct world *)b)->file);
}

int main(int argc, char **argv)
{
  static struct world worlds[64];
  static struct CMUnitTest tests[64];
  const char *filter = getenv("GQ_TEST_FILTER");
  size_t n = 0;

  if (argc == 3 && !strcmp(argv[1], "--hook"))
    return hook_client(argv[2]);
  if (!realpath(argv[0], self_exe))
    return 2;
  if (argc > 1) {
    for (int i = 1; i < argc && n < 64; i++)
      snprintf(worlds[n++].file, sizeof(worlds[0].file), "%s", argv[i]);
  } else {
    DIR *d = opendir(SCENARIO_DIR);
    struct dirent *e;

    if (!d) {
      fprintf(stderr, "test_scenarios: cannot open %s: %s\n", SCENARIO_DIR,
              strerror(errno));
      return 2;
    }
    while ((e = readdir(d)) && n < 64) {
      size_t len = strlen(e->d_name);

      if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") != 0 ||
          (filter && fnmatch(filter, e->d_name, 0) != 0))
        continue;
      snprintf(worlds[n].file, sizeof(worlds[0].file), "%s/%s", SCENARIO_DIR,
               e->d_name);
      if (wants_controller(worlds[n].file))
        n++;
    }
    closedir(d);
    qsort(worlds, n, sizeof(worlds[0]), by_name);
  }
  for (size_t i = 0; i < n; i++)
    tests[i] = (struct CMUnitTest){strrchr(worlds[i].file, '/')
                                       ? strrchr(worlds[i].file, '/') + 1
                                       : worlds[i].file,
                                   run_scenario, NULL, world_down,
                                   &worlds[i]};
  return _cmocka_run_group_tests("scenarios", tests, n, NULL, NULL);
}
