/* cli/cluster.c - nodes, pods, snapshot and per-node verdicts (see
 * cluster.h). */
#include "cli/cluster.h"

#include "base/alloc.h"
#include "decide/match.h"
#include "decide/place.h"

#include <stdlib.h>
#include <string.h>

void gq_cli_cluster_init(struct gq_cli_cluster *cl, const json_t *nodes,
                         const json_t *pods)
{
  const json_t *items = json_object_get(nodes, "items"), *it;
  const struct gq_node **ptr;
  char err[512];
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
  gq_snapshot_init(&cl->snap, ptr, cl->n_nodes, NULL);
  free(ptr);
  cl->gpuq_pods = gq_xcalloc(cl->n_nodes + 1, sizeof(*cl->gpuq_pods));
  cl->leaving = gq_xcalloc(cl->n_nodes + 1, sizeof(*cl->leaving));
  items = json_object_get(pods, "items");
  cl->pods = gq_xcalloc(json_array_size(items) + 1, sizeof(*cl->pods));
  json_array_foreach(items, i, it) {
    struct gq_pod *p = &cl->pods[cl->n_pods];
    long at;

    if (gq_pod_decode(it, p, err, sizeof(err)) != 0) {
      cl->skipped++;
      continue;
    }
    at = p->sched.node_name[0] ? gq_snapshot_find(&cl->snap,
                                                  p->sched.node_name) : -1;
    if (at < 0 || !gq_pod_holds_resources(p)) {
      gq_pod_release(p);
      continue;
    }
    gq_snapshot_commit(&cl->snap, p->sched.node_name, &p->sched, +1);
    if (gq_meta_label(&p->meta, GQ_LBL_JOB)) {
      cl->gpuq_pods[at]++;
      cl->leaving[at] += p->meta.deletion_ms != 0 || p->disruption != NULL;
    }
    cl->n_pods++;
  }
}

void gq_cli_cluster_release(struct gq_cli_cluster *cl)
{
  gq_snapshot_release(&cl->snap);
  for (size_t i = 0; i < cl->n_pods; i++)
    gq_pod_release(&cl->pods[i]);
  for (size_t i = 0; i < cl->n_nodes; i++)
    gq_node_release(&cl->nodes[i]);
  free(cl->pods);
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
  for (size_t i = 0; i < cl->snap.n; i++) {
    const struct gq_node *n = cl->snap.nodes[i].node;
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
      const char *res = gq_fit_check(n, &cl->snap.nodes[i].used, &r, why,
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
