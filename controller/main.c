/* controller/main.c - gpuq-controller.
 *
 *   gpuq-controller [--kubeconfig PATH] [--context C] --redis URL
 *                   [--redis-prefix P] [--metrics-addr 127.0.0.1:PORT]
 *                   [--health-addr ADDR] [--leader-elect]
 *                   [--lease-namespace NS] [--lease-name N] [--identity ID]
 *                   [--gpu-product-label KEY] [--topology-key KEY]
 *                   [--policy gpuq|fifo]
 *                   [--scheduling attained-service|fifo-backfill]
 *                   [--las-thresholds GPU_S,...] [--min-run-seconds S]
 *                   [--starve-factor F] [--fair-share-half-life S]
 *                   [--drain-taints KEY,...] [--drain-wait SECONDS]
 *                   [--notready-timeout SECONDS]
 *                   [--prometheus-url URL] [--utilization-interval S]
 *                   [--utilization-window S] [--idle-threshold PCT]
 *                   [--gpu-healthy-seconds S]
 *                   [--kube-qps Q] [--kube-burst B]
 *                   [--ledger-audit-seconds N] [--quota-status-interval-ms MS]
 *                   [--time-scale S --time-epoch E] [--log-level L]
 *                   [--webhook-addr ADDR --webhook-cert FILE
 *                    --webhook-key FILE] [--controller-user USER]
 *   gpuq-controller [--kubeconfig PATH] [--context C] --check-connection
 *
 * Configuration: --kubeconfig (a KUBECONFIG-style list), else in-cluster
 * when KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG or ~/.kube/config.
 * SIGTERM or SIGINT stops admission, waits for writes in flight, releases
 * the Lease and exits 0.
 *
 * --webhook-addr serves the admission webhooks (controller/webhook.h,
 * docs/integrations.md) over HTTPS with the PEM pair --webhook-cert and
 * --webhook-key, reloaded when the files change; every replica serves
 * them, leader or not. --controller-user is the user the validating
 * webhook lets remove the admission gate (default GQ_CONTROLLER_USER).
 */
#include "api/client.h"
#include "api/gpujob.h"
#include "api/kubeconfig.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "controller/check.h"
#include "controller/ctl.h"
#include "controller/metrics.h"
#include "controller/serve.h"
#include "controller/webhook.h"
#include "decide/names.h"

#include <jansson.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

static const struct gq_lc lc = {"controller", "main", NULL};

static void usage(FILE *f)
{
  fprintf(f,
      "usage: gpuq-controller [--kubeconfig PATH] [--context NAME] --redis URL\n"
      "         [--redis-prefix P] [--metrics-addr HOST:PORT] [--health-addr HOST:PORT]\n"
      "         [--leader-elect] [--lease-namespace NS] [--lease-name NAME]\n"
      "         [--identity ID] [--gpu-product-label KEY] [--topology-key KEY]\n"
      "         [--policy gpuq|fifo]\n"
      "         [--scheduling attained-service|fifo-backfill]\n"
      "         [--las-thresholds GPU_S,...] [--min-run-seconds S]\n"
      "         [--starve-factor F] [--fair-share-half-life S]\n"
      "         [--drain-taints KEY,...] [--drain-wait SECONDS]\n"
      "         [--notready-timeout SECONDS]\n"
      "         [--prometheus-url URL] [--utilization-interval S]\n"
      "         [--utilization-window S] [--idle-threshold PCT]\n"
      "         [--gpu-healthy-seconds S]\n"
      "         [--kube-qps Q] [--kube-burst B] [--ledger-audit-seconds N]\n"
      "         [--quota-status-interval-ms MS]\n"
      "         [--time-scale S --time-epoch E] [--log-level L]\n"
      "         [--webhook-addr HOST:PORT --webhook-cert FILE --webhook-key FILE]\n"
      "         [--controller-user USER]\n"
      "       gpuq-controller [--kubeconfig PATH] [--context NAME] --check-connection\n");
}

/* Loads the configuration the way kubectl would find it. */
static int load_config(const char *kubeconfig, const char *context,
                       struct gq_kubeconfig *cfg)
{
  char err[1024];
  int rc;

  if (!kubeconfig && getenv("KUBERNETES_SERVICE_HOST"))
    rc = gq_kubeconfig_in_cluster(NULL, cfg, err, sizeof(err));
  else
    rc = gq_kubeconfig_load(kubeconfig, context, cfg, err, sizeof(err));
  if (rc != 0)
    fprintf(stderr, "gpuq-controller: %s\n", err);
  return rc;
}

struct app {
  uv_loop_t *loop;
  struct gq_kclient *kc;
  struct gq_ctl *ctl;
  struct gq_metrics *metrics;
  struct gq_serve *metrics_srv, *health_srv;
  struct gq_webhook *webhook;
  uv_signal_t sigterm, sigint;
  int stopping;
};

static int healthz(void *arg, char *msg, size_t len)
{
  (void)arg;
  (void)msg;
  (void)len;
  return 0; /* the loop answered: alive */
}

static int readyz(void *arg, char *msg, size_t len)
{
  struct app *a = arg;

  return gq_ctl_ready(a->ctl, msg, len) ? 0 : -1;
}

static void collect(void *arg, struct gq_metrics *m)
{
  struct app *a = arg;

  (void)m;
  gq_ctl_collect(a->ctl);
}

static void close_handle(uv_handle_t *h, void *arg)
{
  (void)arg;
  if (!uv_is_closing(h))
    uv_close(h, NULL);
}

static void stopped(void *arg)
{
  struct app *a = arg;

  a->ctl = NULL;
  gq_serve_close(a->metrics_srv);
  gq_serve_close(a->health_srv);
  a->metrics_srv = a->health_srv = NULL;
  gq_webhook_close(a->webhook);
  a->webhook = NULL;
  gq_kclient_close(a->kc);
  uv_close((uv_handle_t *)&a->sigterm, NULL);
  uv_close((uv_handle_t *)&a->sigint, NULL);
}

static void on_signal(uv_signal_t *s, int signum)
{
  struct app *a = s->data;

  if (a->stopping)
    return;
  a->stopping = 1;
  GQ_LOG(GQ_INFO, &lc, "signal %d: stopping", signum);
  gq_ctl_stop(a->ctl, stopped, a);
}

static int serve(struct app *a, const char *addr, struct gq_serve **out,
                 const char *what)
{
  struct gq_serve_opts so = {healthz, readyz, collect, a, a->metrics};
  char err[512];

  if (gq_serve_start(a->loop, addr, &so, out, err, sizeof(err)) != 0) {
    fprintf(stderr, "gpuq-controller: %s: %s\n", what, err);
    return -1;
  }
  GQ_LOG(GQ_INFO, &lc, "serving %s on port %d", what, gq_serve_port(*out));
  return 0;
}

/* The admission webhooks (--webhook-addr), on every replica. */
static int webhook(struct app *a, struct gq_webhook_opts *wo)
{
  char err[1024];

  wo->metrics = a->metrics;
  if (gq_webhook_start(a->loop, a->kc, wo, &a->webhook, err, sizeof(err))) {
    fprintf(stderr, "gpuq-controller: webhooks: %s\n", err);
    return -1;
  }
  GQ_LOG(GQ_INFO, &lc, "serving the admission webhooks on port %d",
         gq_webhook_port(a->webhook));
  return 0;
}

static int run(const struct gq_kubeconfig *cfg, struct gq_ctl_opts *co,
               const char *metrics_addr, const char *health_addr,
               const struct gq_kclient_opts *ko, struct gq_webhook_opts *wo)
{
  struct app a = {0};
  char err[1024];
  int rc = 0;

  a.loop = gq_xmalloc(sizeof(*a.loop));
  uv_loop_init(a.loop);
  if (gq_kclient_new(a.loop, cfg, ko, &a.kc, err, sizeof(err)) != 0) {
    fprintf(stderr, "gpuq-controller: %s\n", err);
    uv_loop_close(a.loop);
    free(a.loop);
    return 1;
  }
  a.metrics = gq_metrics_new();
  co->metrics = a.metrics;
  a.ctl = gq_ctl_new(a.loop, a.kc, co);
  if ((metrics_addr && serve(&a, metrics_addr, &a.metrics_srv, "metrics")) ||
      (health_addr && serve(&a, health_addr, &a.health_srv, "health")) ||
      (wo->addr && webhook(&a, wo))) {
    rc = 1;
    a.stopping = 1;
    gq_ctl_stop(a.ctl, stopped, &a);
  } else {
    gq_ctl_start(a.ctl);
  }
  uv_signal_init(a.loop, &a.sigterm);
  uv_signal_init(a.loop, &a.sigint);
  a.sigterm.data = a.sigint.data = &a;
  if (!rc) {
    uv_signal_start(&a.sigterm, on_signal, SIGTERM);
    uv_signal_start(&a.sigint, on_signal, SIGINT);
  }
  GQ_LOG(GQ_INFO, &lc, "gpuq-controller started: server=%s auth=%s",
         gq_kclient_server(a.kc), gq_kclient_auth_mode(a.kc));
  uv_run(a.loop, UV_RUN_DEFAULT);
  uv_walk(a.loop, close_handle, NULL);
  uv_run(a.loop, UV_RUN_DEFAULT);
  uv_loop_close(a.loop);
  free(a.loop);
  gq_metrics_free(a.metrics);
  GQ_LOG(GQ_INFO, &lc, "gpuq-controller stopped");
  return rc;
}

static int parse_num(const char *flag, const char *v, int64_t lo, int64_t hi,
                     int64_t *out)
{
  if (gq_parse_int64(v, out) != 0 || *out < lo || *out > hi) {
    fprintf(stderr, "gpuq-controller: %s: want an integer in [%lld, %lld], "
            "got '%s'\n", flag, (long long)lo, (long long)hi, v);
    return -1;
  }
  return 0;
}

/* Everything the command line sets. */
struct args {
  const char *kubeconfig, *context, *scale, *epoch;
  const char *metrics_addr, *health_addr;
  struct gq_ctl_opts co;
  struct gq_kclient_opts ko;
  struct gq_webhook_opts wo;
  int check;
};

/* Flags that take a string, stored as given (borrowed from argv). */
static const struct {
  const char *name;
  size_t off;
} str_flags[] = {
    {"--kubeconfig", offsetof(struct args, kubeconfig)},
    {"--context", offsetof(struct args, context)},
    {"--redis", offsetof(struct args, co.redis_url)},
    {"--redis-prefix", offsetof(struct args, co.redis_prefix)},
    {"--metrics-addr", offsetof(struct args, metrics_addr)},
    {"--health-addr", offsetof(struct args, health_addr)},
    {"--lease-namespace", offsetof(struct args, co.lease_ns)},
    {"--lease-name", offsetof(struct args, co.lease_name)},
    {"--identity", offsetof(struct args, co.identity)},
    {"--gpu-product-label", offsetof(struct args, co.product_label)},
    {"--topology-key", offsetof(struct args, co.topology_key)},
    {"--time-scale", offsetof(struct args, scale)},
    {"--time-epoch", offsetof(struct args, epoch)},
    {"--webhook-addr", offsetof(struct args, wo.addr)},
    {"--webhook-cert", offsetof(struct args, wo.cert_file)},
    {"--webhook-key", offsetof(struct args, wo.key_file)},
    {"--controller-user", offsetof(struct args, wo.controller_user)},
    {"--prometheus-url", offsetof(struct args, co.prometheus_url)},
};

/* Flags that take an integer in [lo, hi] (int64_t fields). */
static const struct {
  const char *name;
  int64_t lo, hi;
  size_t off;
} int_flags[] = {
    {"--drain-wait", 1, GQ_MAX_DURATION_S,
     offsetof(struct args, co.drain_wait_s)},
    {"--notready-timeout", 1, GQ_MAX_DURATION_S,
     offsetof(struct args, co.notready_timeout_s)},
    {"--quota-status-interval-ms", 1, 3600000,
     offsetof(struct args, co.quota_status_ms)},
    {"--ledger-audit-seconds", 1, 86400, offsetof(struct args, co.audit_s)},
    {"--min-run-seconds", 0, GQ_MAX_DURATION_S,
     offsetof(struct args, co.las.min_run_s)},
    {"--fair-share-half-life", 0, GQ_MAX_DURATION_S,
     offsetof(struct args, co.fair_half_life_s)},
    {"--utilization-interval", 1, 86400,
     offsetof(struct args, co.util_interval_s)},
    {"--utilization-window", 1, GQ_MAX_DURATION_S,
     offsetof(struct args, co.util_window_s)},
    {"--gpu-healthy-seconds", 1, GQ_MAX_DURATION_S,
     offsetof(struct args, co.gpu_healthy_s)},
};

/* The flags with their own checks: flag f with value v. Returns 0, 2 on a
 * bad value (said on stderr), or -1 when f is none of them. */
static int parse_special(struct args *a, const char *f, const char *v)
{
  char err[512];
  int64_t n;
  int lvl;

  if (!strcmp(f, "--policy")) {
    if (strcmp(v, "gpuq") && strcmp(v, "fifo")) {
      fprintf(stderr, "gpuq-controller: --policy: want gpuq or fifo, got "
              "'%s'\n", v);
      return 2;
    }
    a->co.fifo = !strcmp(v, "fifo");
  } else if (!strcmp(f, "--scheduling")) {
    if (gq_sched_policy_parse(v, &a->co.sched) != 0) {
      fprintf(stderr, "gpuq-controller: --scheduling: want attained-service "
              "or fifo-backfill, got '%s'\n", v);
      return 2;
    }
  } else if (!strcmp(f, "--idle-threshold")) {
    if (gq_parse_int64(v, &n) != 0 || n < 1 || n > 100) {
      fprintf(stderr, "gpuq-controller: --idle-threshold: want a GPU "
              "utilization percent 1-100, got '%s'\n", v);
      return 2;
    }
    a->co.idle_threshold_pct = (int)n;
  } else if (!strcmp(f, "--las-thresholds")) {
    if (gq_las_parse_thresholds(v, &a->co.las, err, sizeof(err)) != 0) {
      fprintf(stderr, "gpuq-controller: --las-thresholds: %s\n", err);
      return 2;
    }
  } else if (!strcmp(f, "--starve-factor")) {
    char *end;
    double x = strtod(v, &end);

    if (end == v || *end || !(x >= 0 && x <= 1e6)) {
      fprintf(stderr, "gpuq-controller: --starve-factor: want a number in "
              "[0, 1e6] (0 = no promotion), got '%s'\n", v);
      return 2;
    }
    a->co.las.starve_factor = x;
  } else if (!strcmp(f, "--drain-taints")) {
    if (gq_ctl_check_taints(v, err, sizeof(err)) != 0) {
      fprintf(stderr, "gpuq-controller: %s\n", err);
      return 2;
    }
    a->co.drain_taints = v;
  } else if (!strcmp(f, "--kube-qps")) {
    if (parse_num(f, v, -1, 1000000, &n) != 0)
      return 2;
    a->ko.qps = n == 0 ? -1 : (double)n;
  } else if (!strcmp(f, "--kube-burst")) {
    if (parse_num(f, v, 1, 1000000, &n) != 0)
      return 2;
    a->ko.burst = (int)n;
  } else if (!strcmp(f, "--log-level")) {
    if (gq_log_parse_level(v, &lvl) != 0) {
      fprintf(stderr, "gpuq-controller: --log-level: want debug, info, "
              "warn or error, got '%s'\n", v);
      return 2;
    }
    gq_log_level = lvl;
  } else {
    return -1;
  }
  return 0;
}

/* Flag f with value v (NULL when it is the last word). Returns 1 when it
 * took v, 0 when it takes none, 2 on a usage error (said on stderr), 3 for
 * --help. */
static int parse_flag(struct args *a, const char *f, const char *v)
{
  int rc;

  if (!strcmp(f, "--check-connection"))
    return a->check = 1, 0;
  if (!strcmp(f, "--leader-elect"))
    return a->co.leader_elect = 1, 0;
  if (!strcmp(f, "-h") || !strcmp(f, "--help"))
    return 3;
  for (size_t i = 0; v && i < sizeof(str_flags) / sizeof(str_flags[0]); i++)
    if (!strcmp(f, str_flags[i].name)) {
      *(const char **)((char *)a + str_flags[i].off) = v;
      return 1;
    }
  for (size_t i = 0; v && i < sizeof(int_flags) / sizeof(int_flags[0]); i++)
    if (!strcmp(f, int_flags[i].name))
      return parse_num(f, v, int_flags[i].lo, int_flags[i].hi,
                       (int64_t *)((char *)a + int_flags[i].off)) == 0
                 ? 1
                 : 2;
  if (v && (rc = parse_special(a, f, v)) >= 0)
    return rc == 0 ? 1 : rc;
  fprintf(stderr, "gpuq-controller: unknown or incomplete flag '%s'\n", f);
  usage(stderr);
  return 2;
}

/* Applies --time-scale/--time-epoch and the defaults that depend on the
 * other flags; returns 0 or 2 (said on stderr). */
static int settle_args(struct args *a, char *ident, size_t len)
{
  char host[256];

  if (a->scale || a->epoch) {
    struct gq_clock clk;
    char err[256];

    if (gq_clock_parse(&clk, a->scale, a->epoch, err, sizeof(err)) != 0) {
      fprintf(stderr, "gpuq-controller: %s\n", err);
      return 2;
    }
    gq_clock_set(&clk);
  }
  if (!a->check && !a->co.redis_url) {
    fprintf(stderr, "gpuq-controller: --redis URL is required "
            "(e.g. redis://127.0.0.1:6379/0)\n");
    usage(stderr);
    return 2;
  }
  if (!a->wo.addr && (a->wo.cert_file || a->wo.key_file)) {
    fprintf(stderr, "gpuq-controller: --webhook-cert and --webhook-key "
            "need --webhook-addr\n");
    return 2;
  }
  if (a->wo.addr && (!a->wo.cert_file || !a->wo.key_file)) {
    fprintf(stderr, "gpuq-controller: --webhook-addr needs --webhook-cert "
            "and --webhook-key (PEM files)\n");
    return 2;
  }
  if (!a->co.identity && gethostname(host, sizeof(host)) == 0) {
    host[sizeof(host) - 1] = '\0';
    snprintf(ident, len, "%s-%d", host, (int)getpid());
    a->co.identity = ident;
  }
  return 0;
}

int main(int argc, char **argv)
{
  struct args a = {0};

  a.co.sched = GQ_SCHED_DEFAULT;
  a.co.las = GQ_LAS_DEFAULT;
  a.co.fair_half_life_s = GQ_FAIR_HALF_LIFE_DEFAULT_S;
  struct gq_kubeconfig cfg;
  char ident[300];
  int rc;

  gq_alloc_tune();
  json_set_alloc_funcs(gq_xmalloc, free);
  signal(SIGPIPE, SIG_IGN);
  a.ko.qps = 200;
  a.ko.burst = 400;
  a.ko.user_agent = "gpuq-controller";
  for (int i = 1; i < argc; i++) {
    rc = parse_flag(&a, argv[i], i + 1 < argc ? argv[i + 1] : NULL);
    if (rc == 3) {
      usage(stdout);
      return 0;
    }
    if (rc == 2)
      return 2;
    i += rc;
  }
  if ((rc = settle_args(&a, ident, sizeof(ident))) != 0)
    return rc;
  if (load_config(a.kubeconfig, a.context, &cfg) != 0)
    return 1;
  if (a.check)
    rc = gq_check_connection(&cfg, stdout, stderr);
  else
    rc = run(&cfg, &a.co, a.metrics_addr, a.health_addr, &a.ko, &a.wo);
  gq_kubeconfig_release(&cfg);
  return rc;
}
