/* decide/capacity.c - held and assumed pods, and the snapshot built
 * from them (see capacity.h). */
#include "decide/capacity.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "decide/gpujob.h"

void gq_capacity_init(struct gq_capacity *cap, const char *topology_key)
{
  memset(cap, 0, sizeof(*cap));
  cap->topology_key = topology_key;
}

void gq_capacity_request_copy(const struct gq_podsched *r,
                              struct gq_podsched *out)
{
  memset(out, 0, sizeof(*out));
  out->node_name = "";
  out->cpu_milli = r->cpu_milli;
  out->memory_bytes = r->memory_bytes;
  out->grace_s = r->grace_s;
  out->n_extended = r->n_extended;
  out->extended = gq_xcalloc(r->n_extended + 1, sizeof(*out->extended));
  for (size_t i = 0; i < r->n_extended; i++) {
    out->extended[i].name = gq_xstrdup(r->extended[i].name);
    out->extended[i].value = r->extended[i].value;
  }
}

void gq_capacity_request_free(struct gq_podsched *req)
{
  for (size_t i = 0; i < req->n_extended; i++)
    free((char *)req->extended[i].name);
  free(req->extended);
  memset(req, 0, sizeof(*req));
}

static void commit_held(struct gq_capacity *cap, struct gq_cap_pod *r,
                        int sign)
{
  if (sign > 0)
    r->committed = cap->valid &&
                   gq_snapshot_commit(&cap->snap, r->node, &r->req, 1) == 0;
  else if (r->committed && cap->valid)
    gq_snapshot_commit(&cap->snap, r->node, &r->req, -1);
}

static void free_held(struct gq_cap_pod *r)
{
  free(r->key);
  free(r->node);
  free(r->job_uid);
  gq_capacity_request_free(&r->req);
  free(r);
}

static void free_assumed(struct gq_cap_assumed *a)
{
  free(a->key);
  free(a->node);
  gq_capacity_request_free(&a->req);
  free(a);
}

void gq_capacity_release(struct gq_capacity *cap)
{
  struct gq_cap_pod *r, *rt;
  struct gq_cap_assumed *a, *at;
  const char *topology_key = cap->topology_key;

  HASH_ITER(hh, cap->held, r, rt) {
    HASH_DEL(cap->held, r);
    free_held(r);
  }
  HASH_ITER(hh, cap->assumed, a, at) {
    HASH_DEL(cap->assumed, a);
    free_assumed(a);
  }
  gq_snapshot_release(&cap->snap);
  free(cap->nodes);
  gq_capacity_init(cap, topology_key);
}

void gq_capacity_set_nodes(struct gq_capacity *cap,
                           const struct gq_node *const *nodes, size_t n)
{
  struct gq_cap_pod *r, *rt;
  struct gq_cap_assumed *a, *at;

  gq_snapshot_release(&cap->snap);
  free(cap->nodes);
  cap->nodes = gq_xcalloc(n + 1, sizeof(*cap->nodes));
  memcpy(cap->nodes, nodes, n * sizeof(*nodes));
  gq_snapshot_init(&cap->snap, cap->nodes, n, cap->topology_key);
  cap->valid = 1;
  HASH_ITER(hh, cap->held, r, rt) commit_held(cap, r, 1);
  HASH_ITER(hh, cap->assumed, a, at)
    gq_snapshot_commit(&cap->snap, a->node, &a->req, 1);
}

void gq_capacity_invalidate(struct gq_capacity *cap)
{
  cap->valid = 0;
}

/* The node pod holds resources on, or NULL: its binding, or for gpuq's
 * own pod not bound yet the node gpuq pinned it to (annotation
 * gpuq.dev/node). */
static const char *held_node(const struct gq_pod *pod, const char *uid)
{
  const char *node = pod->sched.node_name;

  if (!gq_pod_holds_resources(pod))
    return NULL;
  if (!*node && uid)
    node = gq_pod_annotation(pod, GQ_ANN_NODE);
  return node && *node ? node : NULL;
}

const struct gq_cap_pod *gq_capacity_pod(struct gq_capacity *cap,
                                         const char *key,
                                         const struct gq_pod *pod)
{
  struct gq_cap_pod *r;
  const char *node, *uid;

  HASH_FIND_STR(cap->held, key, r);
  if (r) {
    commit_held(cap, r, -1);
    HASH_DEL(cap->held, r);
    free_held(r);
  }
  if (!pod)
    return NULL;
  uid = gq_meta_label(&pod->meta, GQ_LBL_JOB_UID);
  if (!(node = held_node(pod, uid)))
    return NULL;
  r = gq_xcalloc(1, sizeof(*r));
  r->key = gq_xstrdup(key);
  r->node = gq_xstrdup(node);
  r->job_uid = uid ? gq_xstrdup(uid) : NULL;
  gq_capacity_request_copy(&pod->sched, &r->req);
  r->deletion_ms = pod->meta.deletion_ms;
  r->grace_s = pod->meta.deletion_grace_s >= 0 ? pod->meta.deletion_grace_s
                                               : pod->sched.grace_s;
  r->leaving = pod->meta.deletion_ms != 0 || pod->disruption != NULL;
  HASH_ADD_KEYPTR(hh, cap->held, r->key, strlen(r->key), r);
  commit_held(cap, r, 1);
  return r;
}

void gq_capacity_assume(struct gq_capacity *cap, const char *key,
                        const char *node, const struct gq_podsched *req)
{
  struct gq_cap_assumed *a = gq_xcalloc(1, sizeof(*a));

  gq_capacity_unassume(cap, key);
  a->key = gq_xstrdup(key);
  a->node = gq_xstrdup(node);
  gq_capacity_request_copy(req, &a->req);
  HASH_ADD_KEYPTR(hh, cap->assumed, a->key, strlen(a->key), a);
  if (cap->valid)
    gq_snapshot_commit(&cap->snap, a->node, &a->req, 1);
}

int gq_capacity_unassume(struct gq_capacity *cap, const char *key)
{
  struct gq_cap_assumed *a;

  HASH_FIND_STR(cap->assumed, key, a);
  if (!a)
    return 0;
  HASH_DEL(cap->assumed, a);
  if (cap->valid)
    gq_snapshot_commit(&cap->snap, a->node, &a->req, -1);
  free_assumed(a);
  return 1;
}

int gq_capacity_is_assumed(const struct gq_capacity *cap, const char *key)
{
  struct gq_cap_assumed *a;

  HASH_FIND_STR(cap->assumed, key, a);
  return a != NULL;
}
