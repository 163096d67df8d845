/* cli/cluster.c - nodes, pods, snapshot and per-node verdicts (see
 * cluster.h). */
#include "cli/cluster.h"

#include "base/alloc.h"
#include "decide/match.h"
#include "decide/place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Counts pod p (its capacity record r) in its node's gpuq-pod counts. */
static void count_gpuq(struct gq_cli_cluster *cl, const struct gq_pod *p,
                       const struct gq_cap_pod *r)
{
  long at;

  if (!r || !r->committed || !gq_meta_label(&p->meta, GQ_LBL_JOB))
    return;
  at = gq_snapshot_find(&cl->cap.snap, r->node);
  if (at < 0)
    return;
  cl->gpuq_pods[at]++;
  cl->leaving[at] += r->leaving;
}

void gq_cli_cluster_init(struct gq_cli_cluster *cl, const json_t *nodes,
                         const json_t *pods)
{
  const json_t *items = json_object_get(nodes, "items"), *it;
  const struct gq_node **ptr;
  char err[512], key[600];
  size_t i;

  memset(cl, 0, sizeof(*cl));
  cl->nodes = gq_xcalloc(json_array_size(items) + 1, sizeof(*cl->nodes));
  json_array_foreach(items, i, it) {
    if (gq_node_decode(it, NULL, &cl->nodes[cl->n_nodes], err,
                       sizeof(err)) == 0)
      cl->n_nodes++;
    else
      cl->skipped++;
  }
  ptr = gq_xcalloc(cl->n_nodes + 1, sizeof(*ptr));
  for (i = 0; i < cl->n_nodes; i++)
    ptr[i] = &cl->nodes[i];
  gq_capacity_init(&cl->cap, NULL);
  gq_capacity_set_nodes(&cl->cap, ptr, cl->n_nodes);
  free(ptr);
  cl->gpuq_pods = gq_xcalloc(cl->n_nodes + 1, sizeof(*cl->gpuq_pods));
  cl->leaving = gq_xcalloc(cl->n_nodes + 1, sizeof(*cl->leaving));
  items = json_object_get(pods, "items");
  json_array_foreach(items, i, it) {
    struct gq_pod p;

    if (gq_pod_decode(it, &p, err, sizeof(err)) != 0) {
      cl->skipped++;
      continue;
    }
    /* the controller's rules, the controller's code: bound pods and
     * gpuq's pinned ones, terminating pods included (capacity.h) */
    snprintf(key, sizeof(key), "%s/%s", p.meta.ns, p.meta.name);
    count_gpuq(cl, &p, gq_capacity_pod(&cl->cap, key, &p));
    gq_pod_release(&p);
  }
}

void gq_cli_cluster_release(struct gq_cli_cluster *cl)
{
  gq_capacity_release(&cl->cap);
  for (size_t i = 0; i < cl->n_nodes; i++)
    gq_node_release(&cl->nodes[i]);
  free(cl->nodes);
  free(cl->gpuq_pods);
  free(cl->leaving);
  memset(cl, 0, sizeof(*cl));
}

void gq_cli_node_status(const struct gq_node *n, size_t leaving, char *buf,
                        size_t len)
{
  static const char *const removal[] = {"ToBeDeletedByClusterAutoscaler",
                                        "karpenter.sh/disrupted", NULL};
  int removing = 0;

  for (size_t t = 0; t < n->n_taints; t++)
    for (size_t k = 0; removal[k]; k++)
      removing |= !strcmp(n->taints[t].key, removal[k]);
  snprintf(buf, len, "%s%s%s", n->ready ? "Ready" : "NotReady",
           n->unschedulable ? ",SchedulingDisabled" : "",
           (n->unschedulable || removing) && leaving ? ",Draining" : "");
}

size_t gq_cli_why_nodes(const struct gq_cli_cluster *cl,
                        const struct gq_gpujob *j,
                        const struct gq_teamquota *q, json_t *rows)
{
  struct gq_podsched r;
  size_t fits = 0;

  gq_place_replica_request(j, &r);
  for (size_t i = 0; i < cl->cap.snap.n; i++) {
    const struct gq_node *n = cl->cap.snap.nodes[i].node;
    char why[512] = "";
    const char *reason = gq_place_node_check(n, j, NULL, &r, why,
                                             sizeof(why));

    if (!reason && q &&
        !gq_teamquota_find(q, n->gpu_product, j->gpu_resource)) {
      reason = "Quota";
      snprintf(why, sizeof(why),
               "team %s has no quota for GPU product %s (%s)", q->meta.name,
               n->gpu_product ? n->gpu_product : "(none)", j->gpu_resource);
    }
    if (!reason) {
      const char *res = gq_fit_check(n, &cl->cap.snap.nodes[i].used, &r, why,
                                     sizeof(why));

      if (res)
        reason = !strcmp(res, j->gpu_resource) ? "GPUs" : "Resources";
    }
    if (!reason) {
      fits++;
      snprintf(why, sizeof(why), "1 replica of %d %s fits now",
               (int)j->gpus_per_replica, j->gpu_resource);
    }
    json_array_append_new(rows, json_pack("{s:s,s:b,s:s,s:s}", "node",
                                          n->meta.name, "fits", !reason,
                                          "reason", reason ? reason : "",
                                          "message", why));
  }
  gq_place_replica_release(&r);
  return fits;
}
