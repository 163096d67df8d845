/* controller/main.c - gpuq-controller.
 *
 *   gpuq-controller [--kubeconfig PATH] [--context C] --redis URL
 *                   [--redis-prefix P] [--metrics-addr 127.0.0.1:PORT]
 *                   [--health-addr ADDR] [--leader-elect]
 *                   [--lease-namespace NS] [--lease-name N] [--identity ID]
 *                   [--gpu-product-label KEY] [--topology-key KEY]
 *                   [--policy gpuq|fifo]
 *                   [--drain-taints KEY,...] [--drain-wait SECONDS]
 *                   [--notready-timeout SECONDS]
 *                   [--kube-qps Q] [--kube-burst B]
 *                   [--ledger-audit-seconds N] [--quota-status-interval-ms MS]
 *                   [--time-scale S --time-epoch E] [--log-level L]
 *   gpuq-controller [--kubeconfig PATH] [--context C] --check-connection
 *
 * Configuration: --kubeconfig (a KUBECONFIG-style list), else in-cluster
 * when KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG or ~/.kube/config.
 * SIGTERM or SIGINT stops admission, waits for writes in flight, releases
 * the Lease and exits 0.
 */
#include "api/client.h"
#include "api/gpujob.h"
#include "api/kubeconfig.h"
#include "decide/names.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "controller/check.h"
#include "controller/ctl.h"
#include "controller/metrics.h"
#include "controller/serve.h"

#include <jansson.h>
#include <signal.h>
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
      "         [--drain-taints KEY,...] [--drain-wait SECONDS]\n"
      "         [--notready-timeout SECONDS]\n"
      "         [--kube-qps Q] [--kube-burst B] [--ledger-audit-seconds N]\n"
      "         [--quota-status-interval-ms MS]\n"
      "         [--time-scale S --time-epoch E] [--log-level L]\n"
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

static int run(const struct gq_kubeconfig *cfg, struct gq_ctl_opts *co,
               const char *metrics_addr, const char *health_addr,
               const struct gq_kclient_opts *ko)
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
      (health_addr && serve(&a, health_addr, &a.health_srv, "health"))) {
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

int main(int argc, char **argv)
{
  const char *kubeconfig = NULL, *context = NULL, *scale = NULL, *epoch = NULL;
  const char *metrics_addr = NULL, *health_addr = NULL;
  struct gq_ctl_opts co = {0};
  struct gq_kclient_opts ko = {0};
  struct gq_kubeconfig cfg;
  char host[256], ident[300];
  int check = 0, rc, lvl;
  int64_t n;

  json_set_alloc_funcs(gq_xmalloc, free);
  signal(SIGPIPE, SIG_IGN);
  ko.qps = 200;
  ko.burst = 400;
  ko.user_agent = "gpuq-controller";
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

    if (!strcmp(f, "--check-connection"))
      check = 1;
    else if (!strcmp(f, "--leader-elect"))
      co.leader_elect = 1;
    else if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
      usage(stdout);
      return 0;
    } else if (v && !strcmp(f, "--kubeconfig") && ++i)
      kubeconfig = v;
    else if (v && !strcmp(f, "--context") && ++i)
      context = v;
    else if (v && !strcmp(f, "--redis") && ++i)
      co.redis_url = v;
    else if (v && !strcmp(f, "--redis-prefix") && ++i)
      co.redis_prefix = v;
    else if (v && !strcmp(f, "--metrics-addr") && ++i)
      metrics_addr = v;
    else if (v && !strcmp(f, "--health-addr") && ++i)
      health_addr = v;
    else if (v && !strcmp(f, "--lease-namespace") && ++i)
      co.lease_ns = v;
    else if (v && !strcmp(f, "--lease-name") && ++i)
      co.lease_name = v;
    else if (v && !strcmp(f, "--identity") && ++i)
      co.identity = v;
    else if (v && !strcmp(f, "--gpu-product-label") && ++i)
      co.product_label = v;
    else if (v && !strcmp(f, "--topology-key") && ++i)
      co.topology_key = v;
    else if (v && !strcmp(f, "--policy") && ++i) {
      if (strcmp(v, "gpuq") && strcmp(v, "fifo")) {
        fprintf(stderr, "gpuq-controller: --policy: want gpuq or fifo, got "
                "'%s'\n", v);
        return 2;
      }
      co.fifo = !strcmp(v, "fifo");
    } else if (v && !strcmp(f, "--drain-taints") && ++i) {
      char err[512];

      if (gq_ctl_check_taints(v, err, sizeof(err)) != 0) {
        fprintf(stderr, "gpuq-controller: %s\n", err);
        return 2;
      }
      co.drain_taints = v;
    } else if (v && !strcmp(f, "--drain-wait") && ++i) {
      if (parse_num(f, v, 1, GQ_MAX_DURATION_S, &n) != 0)
        return 2;
      co.drain_wait_s = n;
    } else if (v && !strcmp(f, "--notready-timeout") && ++i) {
      if (parse_num(f, v, 1, GQ_MAX_DURATION_S, &n) != 0)
        return 2;
      co.notready_timeout_s = n;
    }
    else if (v && !strcmp(f, "--time-scale") && ++i)
      scale = v;
    else if (v && !strcmp(f, "--time-epoch") && ++i)
      epoch = v;
    else if (v && !strcmp(f, "--kube-qps") && ++i) {
      if (parse_num(f, v, -1, 1000000, &n) != 0)
        return 2;
      ko.qps = n == 0 ? -1 : (double)n;
    } else if (v && !strcmp(f, "--kube-burst") && ++i) {
      if (parse_num(f, v, 1, 1000000, &n) != 0)
        return 2;
      ko.burst = (int)n;
    } else if (v && !strcmp(f, "--quota-status-interval-ms") && ++i) {
      if (parse_num(f, v, 1, 3600000, &n) != 0)
        return 2;
      co.quota_status_ms = n;
    } else if (v && !strcmp(f, "--ledger-audit-seconds") && ++i) {
      if (parse_num(f, v, 1, 86400, &n) != 0)
        return 2;
      co.audit_s = n;
    } else if (v && !strcmp(f, "--log-level") && ++i) {
      if (gq_log_parse_level(v, &lvl) != 0) {
        fprintf(stderr, "gpuq-controller: --log-level: want debug, info, "
                "warn or error, got '%s'\n", v);
        return 2;
      }
      gq_log_level = lvl;
    } else {
      fprintf(stderr, "gpuq-controller: unknown or incomplete flag '%s'\n", f);
      usage(stderr);
      return 2;
    }
  }
  if (scale || epoch) {
    struct gq_clock clk;
    char err[256];

    if (gq_clock_parse(&clk, scale, epoch, err, sizeof(err)) != 0) {
      fprintf(stderr, "gpuq-controller: %s\n", err);
      return 2;
    }
    gq_clock_set(&clk);
  }
  if (!check && !co.redis_url) {
    fprintf(stderr, "gpuq-controller: --redis URL is required "
            "(e.g. redis://127.0.0.1:6379/0)\n");
    usage(stderr);
    return 2;
  }
  if (!co.identity && gethostname(host, sizeof(host)) == 0) {
    host[sizeof(host) - 1] = '\0';
    snprintf(ident, sizeof(ident), "%s-%d", host, (int)getpid());
    co.identity = ident;
  }
  if (load_config(kubeconfig, context, &cfg) != 0)
    return 1;
  if (check)
    rc = gq_check_connection(&cfg, stdout, stderr);
  else
    rc = run(&cfg, &co, metrics_addr, health_addr, &ko);
  gq_kubeconfig_release(&cfg);
  return rc;
}
