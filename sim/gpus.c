/* sim/gpus.c - the GPUs of the simulated nodes (issue 22): which pod uses
 * which GPU index, their UUIDs, each pod's utilization timeline and the
 * XID errors of the node timeline. The DCGM exporter (dcgm.c) reads them.
 *
 * A real node's device plugin hands a container specific devices; the
 * sim gives a starting pod the lowest free indices of its node, one per
 * nvidia.com/gpu it holds, and takes them back when it stops running. */
#include "sim/engine.h"

#include "api/meta.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct gq_lc lc = {"sim", "gpus", NULL};

uint64_t gq_sim_hash(const char *s, uint64_t salt)
{
  uint64_t h = UINT64_C(0xcbf29ce484222325) ^ salt;

  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
  h = (h ^ (h >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  h = (h ^ (h >> 27)) * UINT64_C(0x94d049bb133111eb);
  return h ^ (h >> 31);
}

void gq_sim_gpu_uuid(const char *node, int64_t index, char *buf)
{
  char *key = gq_xasprintf("%s/%" PRId64, node, index);
  uint64_t a = gq_sim_hash(key, 0), b = gq_sim_hash(key, 1);

  free(key);
  snprintf(buf, GQ_SIM_GPU_UUID_LEN,
           "GPU-%08" PRIx32 "-%04" PRIx32 "-%04" PRIx32 "-%04" PRIx32
           "-%012" PRIx64,
           (uint32_t)(a >> 32), (uint32_t)(a >> 16) & 0xffff,
           (uint32_t)a & 0xffff, (uint32_t)(b >> 48),
           b & UINT64_C(0xffffffffffff));
}

/* --- utilization --- */

/* Tells the pod's namespace, as its kubelet would, that an annotation was
 * wrong: a Warning Event on the pod. */
static void pod_warning(struct gq_sim *s, const json_t *pod, const char *node,
                        const char *reason, const char *message)
{
  static uint64_t seq;
  struct gq_sim_kind *k = gq_sim_kind_find(s, "", "v1", "events");
  char name[320], ts[40], err[256];
  json_t *ev;

  gq_time_format(gq_clock_now_ms(), ts, sizeof(ts));
  snprintf(name, sizeof(name), "%.250s.%016" PRIx64,
           gq_meta_str(pod, "name"), (uint64_t)gq_clock_now_ms() * 1000 + ++seq);
  ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s}, "
                 "s:s, s:s, s:s, s:{s:s, s:s}, s:s, s:s, s:i, s:s, s:s}",
                 "apiVersion", "v1", "kind", "Event", "metadata", "name", name,
                 "namespace", gq_meta_str(pod, "namespace"), "involvedObject",
                 "apiVersion", "v1", "kind", "Pod", "namespace",
                 gq_meta_str(pod, "namespace"), "name",
                 gq_meta_str(pod, "name"), "uid", gq_meta_str(pod, "uid"),
                 "type", "Warning", "reason", reason, "message", message,
                 "source", "component", "kubelet", "host", node,
                 "firstTimestamp", ts, "lastTimestamp", ts, "count", 1,
                 "reportingComponent", "kubelet", "reportingInstance", node);
  if (!k || !gq_sim_seed(s, k, ev, err, sizeof(err)))
    GQ_LOG(GQ_WARN, &lc, "cannot record event %s: %s", reason,
           k ? err : "no events kind");
}

void gq_sim_gpus_pod_util(struct gq_sim_engine *e, const json_t *pod,
                          struct gq_sim_pod *r)
{
  const char *v = gq_meta_obj_annotation(pod, GQ_SIM_ANN_GPU_UTIL);
  char err[300], msg[700];

  if (!v) {
    gq_sim_gpuutil_constant(&r->util, e->default_util);
    return;
  }
  if (gq_sim_gpuutil_parse(v, &r->util, err, sizeof(err)) == 0)
    return;
  gq_sim_gpuutil_constant(&r->util, e->default_util);
  snprintf(msg, sizeof(msg), "annotation %s: invalid value '%.200s': %s; "
           "using %g", GQ_SIM_ANN_GPU_UTIL, v, err, e->default_util);
  GQ_LOG(GQ_WARN, &lc, "pod '%s': %s", r->key, msg);
  pod_warning(e->s, pod, r->node, "FailedUtilization", msg);
}

/* --- indices --- */

int64_t gq_sim_gpus_capacity(const struct gq_sim_node *n)
{
  return n->node.json ? gq_node_capacity(&n->node, "nvidia.com/gpu") : 0;
}

/* Grows the node's GPU table to want entries (new ones free, no XID). */
static void grow(struct gq_sim_node *n, size_t want)
{
  if (want <= n->n_gpus)
    return;
  n->gpus = gq_xrealloc(n->gpus, want * sizeof(*n->gpus));
  memset(n->gpus + n->n_gpus, 0, (want - n->n_gpus) * sizeof(*n->gpus));
  n->n_gpus = want;
}

void gq_sim_gpus_assign(struct gq_sim_engine *e, struct gq_sim_pod *r)
{
  struct gq_sim_node *n = gq_sim_node_get(e, r->node);
  int64_t cap = n ? gq_sim_gpus_capacity(n) : 0;

  gq_sim_gpus_free(e, r);
  if (!n || r->whole_gpus <= 0)
    return;
  grow(n, (size_t)(cap > 0 ? cap : 0));
  r->gpu_idx = gq_xcalloc((size_t)r->whole_gpus, sizeof(*r->gpu_idx));
  for (size_t i = 0; i < (size_t)cap && r->n_idx < (size_t)r->whole_gpus; i++)
    if (!n->gpus[i].pod) {
      n->gpus[i].pod = r;
      r->gpu_idx[r->n_idx++] = (int)i;
    }
  if (r->n_idx < (size_t)r->whole_gpus)
    GQ_LOG(GQ_WARN, &lc, "pod '%s' holds %lld GPUs of node '%s' but only %zu "
           "of its %lld are free: DCGM shows %zu", r->key,
           (long long)r->whole_gpus, r->node, r->n_idx, (long long)cap,
           r->n_idx);
}

void gq_sim_gpus_free(struct gq_sim_engine *e, struct gq_sim_pod *r)
{
  struct gq_sim_node *n;

  if (!r->gpu_idx)
    return;
  HASH_FIND_STR(e->nodes, r->node, n);
  for (size_t i = 0; n && i < r->n_idx; i++)
    if ((size_t)r->gpu_idx[i] < n->n_gpus && n->gpus[r->gpu_idx[i]].pod == r)
      n->gpus[r->gpu_idx[i]].pod = NULL;
  free(r->gpu_idx);
  r->gpu_idx = NULL;
  r->n_idx = 0;
}

/* --- XID errors --- */

int gq_sim_gpus_xid(struct gq_sim *s, const char *node, const json_t *arg,
                    char *msg, size_t msglen)
{
  struct gq_sim_node *n = gq_sim_node_get(s->engine, node);
  const json_t *gpu = json_object_get(arg, "gpu");
  const json_t *xid = json_object_get(arg, "xid");
  const json_t *dur = json_object_get(arg, "for");
  int64_t cap, i;

  if (!n) {
    snprintf(msg, msglen, "nodes \"%s\" not found", node);
    return GQ_ENOTFOUND;
  }
  cap = gq_sim_gpus_capacity(n);
  if (!json_is_integer(gpu) || !json_is_integer(xid) ||
      json_integer_value(xid) < 0 || (dur && (!json_is_integer(dur) ||
                                              json_integer_value(dur) < 1))) {
    snprintf(msg, msglen, "xid needs {\"gpu\": INDEX, \"xid\": CODE >= 0} "
             "and optionally \"for\": SECONDS >= 1");
    return GQ_EINVAL;
  }
  i = json_integer_value(gpu);
  if (i < 0 || i >= cap) {
    snprintf(msg, msglen, "xid: gpu %lld: node '%s' has GPUs 0..%lld",
             (long long)i, node, (long long)cap - 1);
    return GQ_EINVAL;
  }
  grow(n, (size_t)cap);
  n->gpus[i].xid = json_integer_value(xid);
  n->gpus[i].xid_until_vms =
      dur ? gq_clock_now_ms() + json_integer_value(dur) * 1000 : INT64_MAX;
  GQ_LOG(GQ_INFO, &lc, "XID %lld on GPU %lld of node '%s'%s",
         (long long)n->gpus[i].xid, (long long)i, node,
         dur ? " (timed)" : "");
  return 0;
}
