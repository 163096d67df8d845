/* cli/kube.c - kubectl's flags and a blocking connection (see kube.h). */
#include "cli/kube.h"

#include "base/clock.h"
#include "base/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Matches "--long value", "--long=value", "-s value" and "-svalue";
 * returns 1 and sets *v (or 0 when arg is another flag). On a flag with
 * no value, *v is NULL. */
static int flag_value(int argc, char **argv, int *i, const char *shrt,
                      const char *lng, const char **v)
{
  const char *a = argv[*i];
  size_t ll = strlen(lng);

  if (!strcmp(a, lng) || (shrt && !strcmp(a, shrt))) {
    *v = *i + 1 < argc ? argv[++*i] : NULL;
    return 1;
  }
  if (!strncmp(a, lng, ll) && a[ll] == '=') {
    *v = a + ll + 1;
    return 1;
  }
  if (shrt && !strncmp(a, shrt, 2) && a[2]) {
    *v = a + 2 + (a[2] == '=');
    return 1;
  }
  return 0;
}

int gq_cli_parse(int argc, char **argv, const char *cmd, unsigned allowed,
                 int max_args, struct gq_cli_opts *o)
{
  memset(o, 0, sizeof(*o));
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v = NULL, *out = NULL;

    if (flag_value(argc, argv, &i, NULL, "--kubeconfig", &o->kubeconfig))
      v = o->kubeconfig;
    else if (flag_value(argc, argv, &i, NULL, "--context", &o->context))
      v = o->context;
    else if ((allowed & GQ_CLI_NS) &&
             flag_value(argc, argv, &i, "-n", "--namespace", &o->ns))
      v = o->ns;
    else if ((allowed & GQ_CLI_TEAM) &&
             flag_value(argc, argv, &i, NULL, "--team", &o->team))
      v = o->team;
    else if ((allowed & GQ_CLI_USAGE) &&
             flag_value(argc, argv, &i, NULL, "--since", &o->since))
      v = o->since;
    else if ((allowed & GQ_CLI_USAGE) &&
             flag_value(argc, argv, &i, NULL, "--by", &o->by))
      v = o->by;
    else if ((allowed & GQ_CLI_USAGE) &&
             flag_value(argc, argv, &i, NULL, "--price", &v)) {
      if (v && o->n_prices == GQ_CLI_MAX_PRICES) {
        fprintf(stderr, "error: --price: at most %d prices, got \"%s\" "
                "after them\n", GQ_CLI_MAX_PRICES, v);
        return 2;
      }
      if (v)
        o->prices[o->n_prices++] = v;
    }
    else if (flag_value(argc, argv, &i, "-o", "--output", &out)) {
      if (!out || strcmp(out, "json") != 0) {
        fprintf(stderr, "error: unable to match a printer suitable for the "
                "output format \"%s\", allowed formats are: json\n",
                out ? out : "");
        return 2;
      }
      o->json = 1;
      continue;
    } else if ((allowed & GQ_CLI_NS) &&
               (!strcmp(a, "-A") || !strcmp(a, "--all-namespaces"))) {
      o->all_ns = 1;
      continue;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "error: unknown flag: %s for 'gpuq %s'\n", a, cmd);
      return 2;
    } else if (o->n_args < max_args && o->n_args < GQ_CLI_MAX_ARGS) {
      o->args[o->n_args++] = a;
      continue;
    } else {
      fprintf(stderr, "error: unexpected argument '%s' for 'gpuq %s'\n", a,
              cmd);
      return 2;
    }
    if (!v || !v[0]) {
      fprintf(stderr, "error: flag needs an argument: '%s' in 'gpuq %s'\n",
              a, cmd);
      return 2;
    }
  }
  return 0;
}

/* 1 when kubectl would use the pod's service account: no --kubeconfig,
 * --context or $KUBECONFIG, no ~/.kube/config, and inside a pod
 * (client-go clientcmd's in-cluster fallback). */
static int in_cluster(const struct gq_cli_opts *o)
{
  const char *home = getenv("HOME");
  char path[1024];

  if (o->kubeconfig || o->context || getenv("KUBECONFIG") ||
      !getenv("KUBERNETES_SERVICE_HOST"))
    return 0;
  snprintf(path, sizeof(path), "%s/.kube/config", home ? home : "");
  return !home || access(path, F_OK) != 0;
}

int gq_cli_connect(struct gq_cli_conn *c, const struct gq_cli_opts *o,
                   char *err, size_t errlen)
{
  struct gq_kclient_opts ko = {0};
  int rc;

  memset(c, 0, sizeof(*c));
  if (in_cluster(o))
    rc = gq_kubeconfig_in_cluster(NULL, &c->cfg, err, errlen);
  else
    rc = gq_kubeconfig_load(o->kubeconfig, o->context, &c->cfg, err, errlen);
  if (rc != 0)
    return rc;
  c->ns = o->ns ? o->ns : c->cfg.namespace_;
  ko.qps = 50;
  ko.burst = 100;
  ko.max_retries = 3;
  ko.user_agent = "kubectl-gpuq";
  uv_loop_init(&c->loop);
  rc = gq_kclient_new(&c->loop, &c->cfg, &ko, &c->kc, err, errlen);
  if (rc != 0) {
    uv_loop_close(&c->loop);
    gq_kubeconfig_release(&c->cfg);
  }
  return rc;
}

struct answer {
  int done, rc;
  json_t *obj;
  char *err;
  size_t errlen;
};

static void on_answer(int rc, const struct gq_k8s_status *st,
                      const json_t *obj, void *arg)
{
  struct answer *a = arg;

  a->done = 1;
  a->rc = rc;
  if (rc == 0)
    a->obj = json_incref((json_t *)obj);
  else
    snprintf(a->err, a->errlen, "%s", st && st->message[0] ? st->message
                                                           : gq_strerror(rc));
}

int gq_cli_get(struct gq_cli_conn *c, const char *path, int list,
               json_t **out, char *err, size_t errlen)
{
  struct answer a = {0, 0, NULL, err, errlen};
  int rc;

  *out = NULL;
  rc = list ? gq_kclient_list(c->kc, path, NULL, NULL, 0, on_answer, &a)
            : gq_kclient_get(c->kc, path, on_answer, &a);
  if (rc != 0) {
    snprintf(err, errlen, "%s", gq_strerror(rc));
    return rc;
  }
  while (!a.done)
    uv_run(&c->loop, UV_RUN_ONCE);
  if (a.rc == 0 && !a.obj) {
    snprintf(err, errlen, "GET %s: the server sent no JSON object", path);
    return GQ_EPARSE;
  }
  *out = a.obj;
  return a.rc;
}

void gq_cli_close(struct gq_cli_conn *c)
{
  gq_kclient_close(c->kc);
  uv_run(&c->loop, UV_RUN_DEFAULT);
  uv_loop_close(&c->loop);
  gq_kubeconfig_release(&c->cfg);
}

int gq_cli_open(struct gq_cli_conn *c, const struct gq_cli_opts *o)
{
  char err[1024];

  if (gq_cli_connect(c, o, err, sizeof(err)) == 0)
    return 0;
  fprintf(stderr, "error: %s\n", err);
  return 1;
}

int gq_cli_fetch(struct gq_cli_conn *c, const char *path, int list,
                 json_t **out)
{
  char err[1024];
  int rc = gq_cli_get(c, path, list, out, err, sizeof(err));

  if (rc != 0)
    fprintf(stderr, "error: %s (GET %s: %s)\n", err, path, gq_strerror(rc));
  return rc;
}

int64_t gq_cli_now_ms(struct gq_cli_conn *c)
{
  char err[256];
  json_t *clk = NULL;
  int64_t now = gq_clock_real_ms();

  if (gq_cli_get(c, "/sim/v1/clock", 0, &clk, err, sizeof(err)) == 0 &&
      json_is_integer(json_object_get(clk, "nowMs")))
    now = (int64_t)json_integer_value(json_object_get(clk, "nowMs"));
  json_decref(clk);
  return now;
}
