/* controller/check.c - the connection check (see check.h). */
#include "controller/check.h"

#include "api/client.h"
#include "base/err.h"

#include <stdio.h>
#include <string.h>
#include <uv.h>

struct check {
  struct gq_kclient *c;
  int step, failed;
  char version[128], msg[1024], auth[300];
  size_t nodes, jobs;
};

static void next_step(struct check *k);

/* One sentence for what failed, naming the cause an operator can act on. */
static void explain(struct check *k, const char *what, int rc,
                    const struct gq_k8s_status *st)
{
  const char *server = gq_kclient_server(k->c);

  k->failed = 1;
  if (rc == GQ_EUNAVAIL || rc == GQ_ETIMEDOUT || rc == GQ_ECLOSED)
    snprintf(k->msg, sizeof(k->msg), "cannot reach the API server at %s: %s",
             server, st->message);
  else if (rc == GQ_EUNAUTHORIZED)
    snprintf(k->msg, sizeof(k->msg), "the API server at %s refused the "
             "credentials (%s): %s", server, gq_kclient_auth_mode(k->c),
             st->message);
  else if (rc == GQ_EFORBIDDEN)
    snprintf(k->msg, sizeof(k->msg), "not allowed to %s (check the RBAC "
             "rules in deploy/): %s", what, st->message);
  else
    snprintf(k->msg, sizeof(k->msg), "cannot %s: %s", what, st->message);
}

static void on_version(int rc, const struct gq_k8s_status *st,
                       const json_t *obj, void *arg)
{
  struct check *k = arg;
  const char *v = json_string_value(json_object_get(obj, "gitVersion"));

  if (rc != 0) {
    explain(k, "read the server version", rc, st);
    return;
  }
  snprintf(k->version, sizeof(k->version), "%s", v ? v : "unknown");
  next_step(k);
}

static void on_nodes(int rc, const struct gq_k8s_status *st,
                     const json_t *obj, void *arg)
{
  struct check *k = arg;

  if (rc != 0) {
    explain(k, "list nodes", rc, st);
    return;
  }
  k->nodes = json_array_size(json_object_get(obj, "items"));
  next_step(k);
}

static void on_jobs(int rc, const struct gq_k8s_status *st, const json_t *obj,
                    void *arg)
{
  struct check *k = arg;

  if (rc == GQ_ENOTFOUND) {
    k->failed = 1;
    snprintf(k->msg, sizeof(k->msg), "the API server does not serve GpuJobs: "
             "install the CRDs (kubectl apply -f crds/)");
    return;
  }
  if (rc != 0) {
    explain(k, "list GpuJobs", rc, st);
    return;
  }
  k->jobs = json_array_size(json_object_get(obj, "items"));
  next_step(k);
}

static void next_step(struct check *k)
{
  int rc = 0;

  switch (k->step++) {
  case 0:
    rc = gq_kclient_get(k->c, "/version", on_version, k);
    break;
  case 1:
    rc = gq_kclient_list(k->c, "/api/v1/nodes", NULL, NULL, 500, on_nodes, k);
    break;
  case 2:
    rc = gq_kclient_list(k->c, "/apis/gpuq.dev/v1alpha1/gpujobs", NULL, NULL,
                         500, on_jobs, k);
    break;
  default:
    return;
  }
  if (rc != 0) {
    k->failed = 1;
    snprintf(k->msg, sizeof(k->msg), "cannot start a request: %s",
             gq_strerror(rc));
  }
}

int gq_check_connection(const struct gq_kubeconfig *cfg, FILE *out, FILE *err)
{
  struct gq_kclient_opts o = {.max_retries = 2, .timeout_ms = 10000};
  struct check k;
  uv_loop_t loop;
  char msg[512];

  memset(&k, 0, sizeof(k));
  uv_loop_init(&loop);
  if (gq_kclient_new(&loop, cfg, &o, &k.c, msg, sizeof(msg)) != 0) {
    fprintf(err, "gpuq-controller: %s\n", msg);
    uv_loop_close(&loop);
    return 1;
  }
  next_step(&k);
  while (!k.failed && k.step <= 3 && uv_run(&loop, UV_RUN_ONCE))
    ;
  snprintf(k.auth, sizeof(k.auth), "%s", gq_kclient_auth_mode(k.c));
  gq_kclient_close(k.c);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  if (k.failed) {
    fprintf(err, "gpuq-controller: %s\n", k.msg);
    return 1;
  }
  fprintf(out,
          "connected to %s (Kubernetes %s) from %s, authenticated by %s; "
          "%zu nodes, %zu GpuJobs\n",
          cfg->server, k.version, cfg->source ? cfg->source : "config",
          k.auth, k.nodes, k.jobs);
  return 0;
}
