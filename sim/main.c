/* sim/main.c - gpuq-sim: a Kubernetes-API-compatible simulated cluster.
 *
 *   gpuq-sim --listen 127.0.0.1:PORT --kubeconfig-out PATH [--token T]
 *            [--token-auth-file FILE]
 *            [--tls-cert C --tls-key K [--tls-ca CA]] [--crds DIR]
 *            [--watch-window N] [--bookmark-interval-ms MS]
 *            [--cluster FILE] [--trace FILE [--quotas FILE]
 *             [--checkpoint GRACE,INTERVAL,WRITE|none] [--report PATH]
 *             [--series DIR] [--serve-after-replay]]
 *            [--events FILE] [--scenario FILE [--hold]
 *             [--hook NAME=COMMAND]...]
 *            [--dcgm-listen 127.0.0.1:PORT] [--gpu-utilization F]
 *            [--idle-threshold PCT] [--idle-share F]
 *            [--time-scale S --time-epoch E]
 *            [--log-level L] [--record FILE] [--openapi FILE|none]
 *   gpuq-sim --print-kinds
 *
 * The first line on stdout is "listening on http://127.0.0.1:PORT" (https
 * under TLS), then, with --dcgm-listen, "dcgm-exporter on
 * http://127.0.0.1:PORT/metrics"; the kubeconfig is written last, atomically, once the server
 * listens and the CRDs are served, so a client that sees it can use it.
 */
#include "sim/cluster.h"
#include "sim/engine.h"
#include "sim/replay.h"
#include "sim/sim.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"

#include <errno.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct gq_lc lc_main = {"sim", "main", NULL};

struct args {
  char host[64];
  int port;
  const char *token_auth_file;
  const char *kubeconfig, *token, *tls_cert, *tls_key, *tls_ca, *crds;
  const char *cluster;
  struct gq_sim_replay_opts replay;
  const char *hooks[16];
  const char *scale, *epoch, *log_level;
  const char *dcgm_listen;
  const char *record; /* --record FILE, or NULL */
  const char *openapi; /* --openapi FILE or "none"; NULL: next to the binary */
  double gpu_util, idle_pct;
  long window;
  long bookmark_ms;
  int serve_after; /* --serve-after-replay */
};

static void usage(FILE *f)
{
  fprintf(f,
          "usage: gpuq-sim --listen 127.0.0.1:PORT --kubeconfig-out PATH\n"
          "                [--token T] [--token-auth-file FILE]\n"
          "                [--tls-cert C --tls-key K [--tls-ca CA]]\n"
          "                [--crds DIR] [--watch-window N]\n"
          "                [--bookmark-interval-ms MS]\n"
          "                [--cluster FILE] [--trace FILE [--quotas FILE]\n"
          "                 [--checkpoint GRACE,INTERVAL,WRITE|none]\n"
          "                 [--report PATH] [--series DIR] [--serve-after-replay]]\n"
          "                [--events FILE]\n"
          "                [--scenario FILE [--hold] [--hook NAME=COMMAND]...]\n"
          "                [--dcgm-listen 127.0.0.1:PORT] [--gpu-utilization F]\n"
          "                [--idle-threshold PCT] [--idle-share F]\n"
          "                [--time-scale S --time-epoch E] [--log-level L]\n"
          "                [--record FILE] [--openapi FILE|none]\n"
          "       gpuq-sim --print-kinds\n");
}

/* Parses "HOST:PORT" (IPv4 literal). */
static int parse_listen(const char *v, struct args *a)
{
  const char *colon = strrchr(v, ':');
  char *end;
  long port;

  if (!colon || colon == v || (size_t)(colon - v) >= sizeof(a->host))
    return -1;
  port = strtol(colon + 1, &end, 10);
  if (*end || end == colon + 1 || port < 0 || port > 65535)
    return -1;
  snprintf(a->host, sizeof(a->host), "%.*s", (int)(colon - v), v);
  a->port = (int)port;
  return 0;
}

/* A number flag's value in [lo, hi] into *out; -1 (with a message) if it
 * is not one. */
static int parse_num(const char *flag, const char *v, double lo, double hi,
                     double *out)
{
  char *end;
  double d = strtod(v, &end);

  if (!*v || *end || !(d >= lo && d <= hi)) {
    fprintf(stderr, "gpuq-sim: %s: want a number from %g to %g, got '%s'\n",
            flag, lo, hi, v);
    return -1;
  }
  *out = d;
  return 0;
}

/* The flags of issue 22 (GPU utilization); 1 if f is not one of them. */
static int parse_gpu_flag(const char *f, const char *v, struct args *a)
{
  if (!strcmp(f, "--dcgm-listen")) {
    a->dcgm_listen = v;
    return 0;
  }
  if (!strcmp(f, "--gpu-utilization"))
    return parse_num(f, v, 0, 1, &a->gpu_util);
  if (!strcmp(f, "--idle-threshold"))
    return parse_num(f, v, 0, 100, &a->idle_pct);
  if (!strcmp(f, "--idle-share"))
    return parse_num(f, v, 0, 1, &a->replay.idle_share);
  return 1;
}

/* One flag f with its value v into a. Returns 0, or -1 after saying
 * what is wrong. */
static int parse_value_flag(const char *f, const char *v, struct args *a)
{
  char *end;
  int rc;

  if ((rc = parse_gpu_flag(f, v, a)) <= 0)
    return rc;
  if (!strcmp(f, "--listen")) {
    if (parse_listen(v, a) != 0) {
      fprintf(stderr, "gpuq-sim: --listen: want HOST:PORT, got '%s'\n", v);
      return -1;
    }
  } else if (!strcmp(f, "--kubeconfig-out"))
    a->kubeconfig = v;
  else if (!strcmp(f, "--token"))
    a->token = v;
  else if (!strcmp(f, "--token-auth-file"))
    a->token_auth_file = v;
  else if (!strcmp(f, "--tls-cert"))
    a->tls_cert = v;
  else if (!strcmp(f, "--tls-key"))
    a->tls_key = v;
  else if (!strcmp(f, "--tls-ca"))
    a->tls_ca = v;
  else if (!strcmp(f, "--crds"))
    a->crds = v;
  else if (!strcmp(f, "--cluster"))
    a->cluster = v;
  else if (!strcmp(f, "--trace"))
    a->replay.trace = v;
  else if (!strcmp(f, "--quotas"))
    a->replay.quotas = v;
  else if (!strcmp(f, "--checkpoint"))
    a->replay.checkpoint = v;
  else if (!strcmp(f, "--events"))
    a->replay.events = v;
  else if (!strcmp(f, "--report"))
    a->replay.report = v;
  else if (!strcmp(f, "--series"))
    a->replay.series = v;
  else if (!strcmp(f, "--scenario"))
    a->replay.scenario = v;
  else if (!strcmp(f, "--hook")) {
    if (a->replay.n_hooks == 16 || !strchr(v, '=')) {
      fprintf(stderr, "gpuq-sim: --hook: want NAME=COMMAND (at most 16), "
              "got '%s'\n", v);
      return -1;
    }
    a->hooks[a->replay.n_hooks++] = v;
    a->replay.hooks = a->hooks;
  }
  else if (!strcmp(f, "--time-scale"))
    a->scale = v;
  else if (!strcmp(f, "--time-epoch"))
    a->epoch = v;
  else if (!strcmp(f, "--log-level"))
    a->log_level = v;
  else if (!strcmp(f, "--openapi"))
    a->openapi = v;
  else if (!strcmp(f, "--record"))
    a->record = v;
  else if (!strcmp(f, "--bookmark-interval-ms")) {
    a->bookmark_ms = strtol(v, &end, 10);
    if (*end || a->bookmark_ms < 1) {
      fprintf(stderr, "gpuq-sim: --bookmark-interval-ms: want a positive "
              "integer, got '%s'\n", v);
      return -1;
    }
  } else if (!strcmp(f, "--watch-window")) {
    a->window = strtol(v, &end, 10);
    if (*end || a->window < 1 || a->window > 10000000) {
      fprintf(stderr, "gpuq-sim: --watch-window: want 1..10000000, got "
              "'%s'\n", v);
      return -1;
    }
  } else {
    fprintf(stderr, "gpuq-sim: unknown flag '%s'\n", f);
    usage(stderr);
    return -1;
  }
  return 0;
}

static int parse_args(int argc, char **argv, struct args *a)
{
  snprintf(a->host, sizeof(a->host), "127.0.0.1");
  a->gpu_util = 0.9;
  a->idle_pct = 10;
  a->crds = "crds";
  a->window = 100000;
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

    if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
      usage(stdout);
      exit(0);
    }
    if (strncmp(f, "--", 2) != 0) {
      fprintf(stderr, "gpuq-sim: unexpected argument '%s'\n", f);
      usage(stderr);
      return -1;
    }
    if (!strcmp(f, "--hold")) { /* the flags without a value */
      a->replay.hold = 1;
      continue;
    }
    if (!strcmp(f, "--print-kinds")) /* the build's OpenAPI generator */
      exit(gq_sim_kinds_print(stdout) == 0 ? 0 : 1);
    if (!strcmp(f, "--serve-after-replay")) {
      a->serve_after = 1;
      continue;
    }
    if (!v) {
      fprintf(stderr, "gpuq-sim: %s needs a value (or is unknown)\n", f);
      usage(stderr);
      return -1;
    }
    i++;
    if (parse_value_flag(f, v, a) != 0)
      return -1;
  }
  if (!!a->tls_cert != !!a->tls_key) {
    fprintf(stderr, "gpuq-sim: --tls-cert and --tls-key go together\n");
    return -1;
  }
  return 0;
}

static char *read_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  char *buf;
  long n;

  if (!f)
    return NULL;
  if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
    fclose(f);
    return NULL;
  }
  buf = gq_xmalloc((size_t)n + 1);
  if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* base64 of a PEM (kubeconfig *-data fields), via OpenSSL. */
static char *b64(const char *s)
{
  size_t n = strlen(s);
  char *out = gq_xmalloc(4 * ((n + 2) / 3) + 1);

  EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
  return out;
}

/* Writes the kubeconfig (JSON, which every YAML reader accepts) to a
 * temporary file beside path, then renames it into place. */
static int write_kubeconfig(const char *path, const char *url,
                            const char *token, const char *ca_pem)
{
  json_t *cluster = json_pack("{s:s}", "server", url);
  json_t *user = token ? json_pack("{s:s}", "token", token) : json_object();
  json_t *cfg;
  char *tmp = gq_xasprintf("%s.tmp.%d", path, (int)getpid());
  int rc = 0;

  if (ca_pem) {
    char *data = b64(ca_pem);

    json_object_set_new(cluster, "certificate-authority-data",
                        json_string(data));
    free(data);
  }
  cfg = json_pack("{s:s, s:s, s:s, s:[{s:s, s:o}], s:[{s:s, s:o}],"
                  " s:[{s:s, s:{s:s, s:s, s:s}}], s:{}}",
                  "apiVersion", "v1", "kind", "Config", "current-context",
                  "gpuq-sim", "clusters", "name", "gpuq-sim", "cluster",
                  cluster, "users", "name", "gpuq-sim", "user", user,
                  "contexts", "name", "gpuq-sim", "context", "cluster",
                  "gpuq-sim", "user", "gpuq-sim", "namespace", "default",
                  "preferences");
  if (json_dump_file(cfg, tmp, JSON_INDENT(2)) != 0 || rename(tmp, path)) {
    fprintf(stderr, "gpuq-sim: cannot write kubeconfig '%s': %s\n", path,
            strerror(errno));
    unlink(tmp);
    rc = -1;
  }
  json_decref(cfg);
  free(tmp);
  return rc;
}

static int stopping;
static struct gq_sim sim;
static uv_signal_t sig_int, sig_term;

static void stop_all(void)
{
  gq_sim_stop(&sim);
  uv_close((uv_handle_t *)&sig_int, NULL);
  uv_close((uv_handle_t *)&sig_term, NULL);
}

static void on_signal(uv_signal_t *h, int signum)
{
  (void)h;
  if (stopping++) {
    fprintf(stderr, "gpuq-sim: second signal %d, exiting now\n", signum);
    _exit(1);
  }
  GQ_LOG(GQ_INFO, &lc_main, "stopping on signal %d", signum);
  stop_all();
}

static uv_timer_t finish_timer;

static void on_finish_timer(uv_timer_t *t)
{
  uv_close((uv_handle_t *)t, NULL);
  stop_all();
}

static int serve_after; /* --serve-after-replay */

/* A replay ended: its report is written; stop serving (unless
 * --serve-after-replay: then the API stays up, for the demo's kubectl gpuq
 * usage, until SIGTERM). This runs inside a request's handling (the write
 * that ended the last job), so the stop is deferred to the next loop turn,
 * when no request is in flight. */
static void on_finish(struct gq_sim *s)
{
  if (serve_after) {
    GQ_LOG(GQ_INFO, &lc_main, "replay over: serving on until SIGTERM "
           "(--serve-after-replay)");
    return;
  }
  if (stopping++)
    return;
  uv_timer_init(s->loop, &finish_timer);
  uv_timer_start(&finish_timer, on_finish_timer, 0, 0);
}

/* Registers the cluster file's nodes, as their kubelets would. */
static int load_cluster(const char *path)
{
  struct gq_sim_kind *k = gq_sim_kind_find(&sim, "", "v1", "nodes");
  char err[1024];
  json_t *nodes, *n;
  size_t i;

  if (gq_sim_cluster_load(path, &nodes, err, sizeof(err)) != 0) {
    fprintf(stderr, "gpuq-sim: --cluster: %s\n", err);
    return -1;
  }
  json_array_foreach(nodes, i, n) {
    if (!gq_sim_seed(&sim, k, json_incref(n), err, sizeof(err))) {
      fprintf(stderr, "gpuq-sim: --cluster: %s\n", err);
      json_decref(nodes);
      return -1;
    }
  }
  json_decref(nodes);
  return 0;
}

static int setup(struct args *a, char **cert, char **key, char **ca)
{
  struct gq_clock c;
  char err[256];
  int lvl;

  if (gq_clock_parse(&c, a->scale, a->epoch, err, sizeof(err)) != 0) {
    fprintf(stderr, "gpuq-sim: %s\n", err);
    return -1;
  }
  gq_clock_set(&c);
  if (a->log_level) {
    if (gq_log_parse_level(a->log_level, &lvl) != 0) {
      fprintf(stderr, "gpuq-sim: --log-level: want debug, info, warn or "
              "error, got '%s'\n", a->log_level);
      return -1;
    }
    gq_log_level = lvl;
  }
  if (a->token)
    gq_log_add_secret(a->token);
  *cert = a->tls_cert ? read_file(a->tls_cert) : NULL;
  *key = a->tls_key ? read_file(a->tls_key) : NULL;
  *ca = a->tls_ca ? read_file(a->tls_ca) : NULL;
  if ((a->tls_cert && !*cert) || (a->tls_key && !*key) ||
      (a->tls_ca && !*ca)) {
    fprintf(stderr, "gpuq-sim: cannot read a TLS file: %s\n", strerror(errno));
    return -1;
  }
  return 0;
}

/* The generated OpenAPI definitions: --openapi's file, none for
 * "none", else gpuq-sim-openapi.json in the binary's own directory (where
 * the build writes it). path is the buffer for the last case. */
static const char *openapi_file(const char *flag, char *path, size_t len)
{
  ssize_t n;
  char *slash;

  if (flag)
    return strcmp(flag, "none") ? flag : NULL;
  n = readlink("/proc/self/exe", path, len - 1);
  if (n <= 0)
    return NULL;
  path[n] = '\0';
  slash = strrchr(path, '/');
  if (!slash || (size_t)(slash - path) + sizeof("/gpuq-sim-openapi.json") > len)
    return NULL;
  snprintf(slash, len - (size_t)(slash - path), "/gpuq-sim-openapi.json");
  return path;
}

int main(int argc, char **argv)
{
  struct args a = {0};
  struct gq_sim_opts o;
  char err[1024], url[128], *cert = NULL, *key = NULL, *ca = NULL;
  char oa_path[4096];
  uv_loop_t *loop = uv_default_loop();
  int rc;

  gq_alloc_tune();
  json_set_alloc_funcs(gq_xmalloc, free);
  signal(SIGPIPE, SIG_IGN);
  if (parse_args(argc, argv, &a) != 0 || setup(&a, &cert, &key, &ca) != 0)
    return 2;
  serve_after = a.serve_after;
  o = (struct gq_sim_opts){a.host,  a.port,           a.token,
                           cert,    key,              a.crds,
                           (size_t)a.window, (uint64_t)a.bookmark_ms,
                           a.token_auth_file,
                           openapi_file(a.openapi, oa_path, sizeof(oa_path))};
  if ((rc = gq_sim_start(&sim, loop, &o, err, sizeof(err))) != 0) {
    fprintf(stderr, "gpuq-sim: %s\n", err);
    return 1;
  }
  if (a.record && gq_sim_record_start(&sim, a.record, err, sizeof(err))) {
    fprintf(stderr, "gpuq-sim: %s\n", err);
    return 1;
  }
  sim.finish_cb = on_finish;
  sim.engine->default_util = a.gpu_util;
  sim.engine->idle_pct = a.idle_pct;
  if (a.dcgm_listen &&
      gq_sim_dcgm_start(&sim, a.dcgm_listen, err, sizeof(err)) != 0) {
    fprintf(stderr, "gpuq-sim: %s\n", err);
    return 1;
  }
  if (a.cluster && load_cluster(a.cluster) != 0)
    return 1;
  if ((a.replay.trace || a.replay.events || a.replay.scenario) &&
      gq_sim_replay_start(&sim, &a.replay, err, sizeof(err)) != 0) {
    fprintf(stderr, "gpuq-sim: %s\n", err);
    return 1;
  }
  snprintf(url, sizeof(url), "%s://%s:%d", cert ? "https" : "http", a.host,
           gq_httpd_port(sim.httpd));
  printf("listening on %s\n", url);
  if (a.dcgm_listen) {
    char host[64];
    int port;

    gq_httpd_parse_addr(a.dcgm_listen, host, sizeof(host), &port);
    printf("dcgm-exporter on http://%s:%d/metrics\n", host,
           gq_sim_dcgm_port(&sim));
  }
  fflush(stdout);
  /* Over https with no user credentials kubectl prompts for a password,
   * so without --token the kubeconfig still carries a token, one this sim
   * does not check. (Over http kubectl sends no token at all: use --token
   * together with TLS.) */
  if (a.kubeconfig &&
      write_kubeconfig(a.kubeconfig, url,
                       a.token ? a.token : cert ? "gpuq-sim-no-auth" : NULL,
                       ca ? ca : cert) != 0)
    return 1;
  uv_signal_init(loop, &sig_int);
  uv_signal_init(loop, &sig_term);
  uv_signal_start(&sig_int, on_signal, SIGINT);
  uv_signal_start(&sig_term, on_signal, SIGTERM);
  uv_run(loop, UV_RUN_DEFAULT);
  gq_sim_release(&sim);
  free(cert);
  free(key);
  free(ca);
  rc = uv_loop_close(loop);
  if (rc == UV_EBUSY)
    uv_print_all_handles(loop, stderr);
  return rc != 0 ? 1 : sim.exit_code;
}
