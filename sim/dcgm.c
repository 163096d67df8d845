/* sim/dcgm.c - a dcgm-exporter for the simulated cluster (issue 22).
 *
 * NVIDIA's dcgm-exporter runs on every GPU node and serves /metrics in
 * Prometheus text format 0.0.4: for each field of its counters file a HELP
 * and a TYPE line, then one sample per GPU, labelled gpu, UUID,
 * pci_bus_id, device, modelName, Hostname and, for a GPU a container
 * uses, container, namespace and pod (its Kubernetes pod mapper; in that
 * order, the sorted order its template prints them in). Integer fields
 * print as integers, floating ones with six decimals (Go's "%f"). gpuq-sim
 * serves all its nodes' GPUs on one listener, at the virtual time of the
 * request, from each pod's utilization timeline (gpus.c).
 *
 * The values (docs/sim.md): utilization u of the pod's timeline (0 when
 * free); GPU_UTIL round(100 u); GR_ENGINE_ACTIVE u; FB_USED round(M (0.3 +
 * 0.6 u)) MiB of the GPU's memory M when used, else 0; POWER_USAGE
 * P (0.15 + 0.85 u) W of the product's board power P; GPU_TEMP round(30 +
 * 45 u) C; XID_ERRORS the last XID of the node timeline while it lasts. */
#include "sim/engine.h"

#include "api/meta.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DCGM_MAX_BODY (256u << 20)

static const struct gq_lc lc = {"sim", "dcgm", NULL};

/* GPU Feature Discovery's product label (the model name with '-' for ' ')
 * back to DCGM's model name, and the board power in W. */
static const struct product {
  const char *label, *model;
  double watts;
} products[] = {
    {"NVIDIA-A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB", 400},
    {"NVIDIA-A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB", 400},
    {"NVIDIA-A100-PCIE-40GB", "NVIDIA A100-PCIE-40GB", 250},
    {"NVIDIA-A100-80GB-PCIe", "NVIDIA A100 80GB PCIe", 300},
    {"NVIDIA-H100-80GB-HBM3", "NVIDIA H100 80GB HBM3", 700},
    {"NVIDIA-H100-PCIe", "NVIDIA H100 PCIe", 350},
    {"NVIDIA-H200", "NVIDIA H200", 700},
    {"NVIDIA-L4", "NVIDIA L4", 72},
    {"NVIDIA-L40S", "NVIDIA L40S", 350},
    {"NVIDIA-A10G", "NVIDIA A10G", 300},
    {"Tesla-T4", "Tesla T4", 70},
    {"Tesla-P40", "Tesla P40", 250},
    {"Tesla-P100-PCIE-16GB", "Tesla P100-PCIE-16GB", 250},
    {"Tesla-V100-SXM2-16GB", "Tesla V100-SXM2-16GB", 300},
    {"Tesla-V100-SXM2-32GB", "Tesla V100-SXM2-32GB", 300},
};

/* The model name for a product label into buf, and the board power: the
 * table's, else the label with every '-' read as ' ' and 300 W. A
 * time-slicing "-SHARED" suffix (GFD) is not part of the model. */
static double model_of(const char *label, char *buf, size_t len)
{
  size_t n = label ? strlen(label) : 0;

  if (n > 7 && !strcmp(label + n - 7, "-SHARED"))
    n -= 7;
  for (size_t i = 0; i < sizeof(products) / sizeof(products[0]); i++)
    if (strlen(products[i].label) == n &&
        !strncmp(products[i].label, label, n)) {
      snprintf(buf, len, "%s", products[i].model);
      return products[i].watts;
    }
  snprintf(buf, len, "%.*s", (int)n, label ? label : "");
  for (char *c = buf; *c; c++)
    if (*c == '-')
      *c = ' ';
  return 300;
}

/* One GPU's sample values and its rendered labels. */
struct row {
  char labels[900];
  double util, power;
  long long mem, fb, temp, xid; /* mem: the GPU's memory, MiB */
};

/* Appends src to dst as a Prometheus label value (\\, \" and \n escaped). */
static void esc(char *dst, size_t len, const char *src)
{
  size_t o = 0;

  for (; *src && o + 3 < len; src++) {
    if (*src == '\\' || *src == '"' || *src == '\n') {
      dst[o++] = '\\';
      dst[o++] = *src == '\n' ? 'n' : *src;
    } else {
      dst[o++] = *src;
    }
  }
  dst[o] = '\0';
}

static void row_labels(struct row *w, const char *node, size_t i,
                       const char *model, const struct gq_sim_pod *p)
{
  char uuid[GQ_SIM_GPU_UUID_LEN], host[300], mod[200], ns[300], pod[300],
      ctr[300];
  const char *slash = p ? strchr(p->key, '/') : NULL;

  gq_sim_gpu_uuid(node, (int64_t)i, uuid);
  esc(host, sizeof(host), node);
  esc(mod, sizeof(mod), model);
  snprintf(w->labels, sizeof(w->labels),
           "gpu=\"%zu\",UUID=\"%s\",pci_bus_id=\"00000000:%02zX:00.0\","
           "device=\"nvidia%zu\",modelName=\"%s\",Hostname=\"%s\"",
           i, uuid, i + 1, i, mod, host);
  if (!p)
    return;
  esc(ns, sizeof(ns), p->ns);
  esc(pod, sizeof(pod), slash ? slash + 1 : p->key);
  esc(ctr, sizeof(ctr), p->container);
  snprintf(w->labels + strlen(w->labels),
           sizeof(w->labels) - strlen(w->labels),
           ",container=\"%s\",namespace=\"%s\",pod=\"%s\"", ctr, ns, pod);
}

/* The rows of every GPU, grown by doubling (a realloc per node would copy
 * the whole table 2,000 times on a large cluster). */
struct rows {
  struct row *v;
  size_t n, cap;
};

/* Appends the rows of one node's GPUs (capacity nvidia.com/gpu). */
static void node_rows(struct gq_sim_node *n, int64_t now, struct rows *rs)
{
  int64_t cap = gq_sim_gpus_capacity(n);
  double mem = n->node.gpu_memory_mib > 0 ? (double)n->node.gpu_memory_mib : 0;
  char model[200];
  double watts = model_of(n->node.gpu_product, model, sizeof(model));

  if (cap <= 0)
    return;
  if (rs->n + (size_t)cap > rs->cap) {
    rs->cap = 2 * (rs->n + (size_t)cap);
    rs->v = gq_xrealloc(rs->v, rs->cap * sizeof(*rs->v));
  }
  for (size_t i = 0; i < (size_t)cap; i++) {
    const struct gq_sim_gpu *g = i < n->n_gpus ? &n->gpus[i] : NULL;
    const struct gq_sim_pod *p = g ? g->pod : NULL;
    struct row *w = &rs->v[rs->n++];
    double u = p ? gq_sim_gpuutil_at(&p->util, now - p->start_vms) : 0;

    row_labels(w, n->name, i, model, p);
    w->util = u;
    w->mem = (long long)mem;
    w->fb = p ? llround(mem * (0.3 + 0.6 * u)) : 0;
    w->power = watts * (0.15 + 0.85 * u);
    w->temp = llround(30 + 45 * u);
    w->xid = g && g->xid_until_vms > now ? g->xid : 0;
  }
}

enum field { F_UTIL, F_ACTIVE, F_FB_FREE, F_FB_USED, F_POWER, F_TEMP, F_XID };

static const struct family {
  enum field f;
  const char *name, *help;
} families[] = {
    {F_TEMP, "DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C)."},
    {F_POWER, "DCGM_FI_DEV_POWER_USAGE", "Power draw (in W)."},
    {F_UTIL, "DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %)."},
    {F_XID, "DCGM_FI_DEV_XID_ERRORS",
     "Value of the last XID error encountered."},
    {F_FB_FREE, "DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."},
    {F_FB_USED, "DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."},
    {F_ACTIVE, "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
     "Ratio of time the graphics engine is active."},
};

/* One sample line of family f for row w. */
static int sample(struct gq_buf *out, const struct family *f,
                  const struct row *w)
{
  const char *name = f->name;

  switch (f->f) {
  case F_UTIL:
    return gq_buf_printf(out, "%s{%s} %lld\n", name, w->labels,
                         llround(100 * w->util));
  case F_ACTIVE:
    return gq_buf_printf(out, "%s{%s} %f\n", name, w->labels, w->util);
  case F_FB_FREE:
    return gq_buf_printf(out, "%s{%s} %lld\n", name, w->labels,
                         w->mem > w->fb ? w->mem - w->fb : 0);
  case F_FB_USED:
    return gq_buf_printf(out, "%s{%s} %lld\n", name, w->labels, w->fb);
  case F_POWER:
    return gq_buf_printf(out, "%s{%s} %f\n", name, w->labels, w->power);
  case F_TEMP:
    return gq_buf_printf(out, "%s{%s} %lld\n", name, w->labels, w->temp);
  case F_XID:
    return gq_buf_printf(out, "%s{%s} %lld\n", name, w->labels, w->xid);
  }
  return 0;
}

int gq_sim_dcgm_render(struct gq_sim *s, int64_t now_vms, struct gq_buf *out)
{
  json_t *nodes = gq_sim_list(gq_sim_kind_find(s, "", "v1", "nodes"), NULL);
  struct rows rs = {NULL, 0, 0};
  size_t i;
  const json_t *it;
  int rc = 0;

  json_array_foreach(nodes, i, it) {
    struct gq_sim_node *n = gq_sim_node_get(s->engine, gq_meta_str(it, "name"));

    if (n)
      node_rows(n, now_vms, &rs);
  }
  json_decref(nodes);
  for (size_t f = 0; rc == 0 && f < sizeof(families) / sizeof(families[0]);
       f++) {
    rc = gq_buf_printf(out, "# HELP %s %s\n# TYPE %s gauge\n",
                       families[f].name, families[f].help, families[f].name);
    for (size_t r = 0; rc == 0 && r < rs.n; r++)
      rc = sample(out, &families[f], &rs.v[r]);
  }
  free(rs.v);
  return rc;
}

static void on_request(struct gq_http_req *req, void *arg)
{
  struct gq_sim *s = arg;
  const char *path = gq_http_path(req);
  struct gq_buf b;

  if (strcmp(path, "/metrics") != 0) {
    gq_http_respond(req, 404, "text/plain; charset=utf-8", "404 page not found\n",
                    19, NULL);
    return;
  }
  if (strcmp(gq_http_method(req), "GET") && strcmp(gq_http_method(req), "HEAD")) {
    gq_http_respond(req, 405, "text/plain; charset=utf-8",
                    "method not allowed\n", 19, NULL);
    return;
  }
  gq_buf_init(&b, DCGM_MAX_BODY);
  if (!s->engine || gq_sim_dcgm_render(s, gq_clock_now_ms(), &b) != 0) {
    GQ_LOG(GQ_ERROR, &lc, "cannot render /metrics: more than %u bytes",
           DCGM_MAX_BODY);
    gq_http_respond(req, 500, "text/plain; charset=utf-8", "too many GPUs\n",
                    14, NULL);
  } else {
    gq_http_respond(req, 200, "text/plain; version=0.0.4; charset=utf-8",
                    gq_buf_str(&b), b.len, NULL);
  }
  gq_buf_release(&b);
}

/* 1 if host (an IP literal) is an IPv4 loopback address (127.0.0.0/8):
 * the exporter is for tests and demos on this machine. */
static int loopback(const char *host)
{
  return !strncmp(host, "127.", 4);
}

int gq_sim_dcgm_start(struct gq_sim *s, const char *addr, char *err,
                      size_t errlen)
{
  char host[64];
  int port, rc;
  struct gq_httpd_opts o = {host, 0, NULL, NULL, 4096};

  if (gq_httpd_parse_addr(addr, host, sizeof(host), &port) != 0 ||
      !loopback(host)) {
    snprintf(err, errlen, "--dcgm-listen: want a loopback HOST:PORT "
             "(127.0.0.1:PORT, port 0 picks one), got '%s'", addr);
    return GQ_EINVAL;
  }
  o.port = port;
  rc = gq_httpd_start(s->loop, &o, on_request, s, &s->dcgm, err, errlen);
  if (rc == 0)
    GQ_LOG(GQ_INFO, &lc, "dcgm-exporter on port %d", gq_httpd_port(s->dcgm));
  return rc;
}

int gq_sim_dcgm_port(const struct gq_sim *s)
{
  return s->dcgm ? gq_httpd_port(s->dcgm) : 0;
}

void gq_sim_dcgm_stop(struct gq_sim *s)
{
  if (s->dcgm)
    gq_httpd_close(s->dcgm);
  s->dcgm = NULL;
}
