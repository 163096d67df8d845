/* cli/cluster.h - the cluster as `kubectl gpuq nodes` and `kubectl gpuq
 * why` see it: every Node, and the capacity the controller's own builder
 * (decide/capacity.h) makes of the nodes and pods: every bound pod
 * that still holds its resources, gpuq's pods pinned to a node and not
 * bound yet, terminating pods, so that the plugin and the controller agree
 * on what is free on every node; plus the per-node verdict for a pending
 * job.
 *
 * Objects that do not decode are skipped and counted (a plugin reports
 * what it can; the count is printed as a warning).
 */
#ifndef GQ_CLI_CLUSTER_H
#define GQ_CLI_CLUSTER_H
#include <jansson.h>
#include <stddef.h>

#include "api/gpujob.h"
#include "api/node.h"
#include "api/pod.h"
#include "api/teamquota.h"
#include "decide/capacity.h"

struct gq_cli_cluster {
  struct gq_node *nodes;   /* owned, decoded */
  size_t n_nodes;
  size_t *gpuq_pods;       /* per snapshot node: gpuq pods holding it */
  size_t *leaving;         /* per snapshot node: of those, pods being
                              deleted or evicted (deletionTimestamp or a
                              DisruptionTarget condition) */
  struct gq_capacity cap;  /* cap.snap: nodes sorted by name, every pod
                              that holds resources committed */
  size_t skipped;          /* objects that did not decode */
};

/* Builds cl from a node list and a pod list ({"items": [...]}, borrowed;
 * decoded objects take their own references). Always succeeds (objects
 * that fail to decode are counted in cl->skipped). Release with
 * gq_cli_cluster_release(). */
void gq_cli_cluster_init(struct gq_cli_cluster *cl, const json_t *nodes,
                         const json_t *pods);

void gq_cli_cluster_release(struct gq_cli_cluster *cl);

/* Writes node n's STATUS for `kubectl gpuq nodes` into buf (len bytes):
 * "Ready" or "NotReady", then ",SchedulingDisabled" when cordoned (as
 * kubectl get nodes), then ",Draining" when the node is cordoned or carries
 * a node-removal taint (ToBeDeletedByClusterAutoscaler,
 * karpenter.sh/disrupted: the controller's --drain-taints default) while
 * 'leaving' > 0 of its gpuq pods are being deleted or evicted (a cordon
 * alone, or a drainPolicy Wait job still running, is not draining yet). */
void gq_cli_node_status(const struct gq_node *n, size_t leaving, char *buf,
                        size_t len);

/* Why job j (team quota q, NULL when the team has none) cannot start one
 * replica on each node: appends to rows, per node in name order,
 *   {"node": N, "fits": bool, "reason": R, "message": M}
 * where R is the first constraint that fails, in the controller's order:
 * gq_place_node_check()'s reasons (NoGpu, NotReady, Unschedulable, Taint,
 * NodeAffinity, GpuProduct, GpuMemory) with its message; then "Quota"
 * when q has no line for the node's product and j's resource
 * (gq_teamquota_find(), as the controller charges GPUs); then the free
 * resources, gq_fit_check() on the committed usage: "GPUs" when j's GPU
 * resource is short, "Resources" for cpu, memory or pods, with the
 * scheduler's message ("Insufficient nvidia.com/gpu (requested 8, free 4
 * of 8)"); R is "" and fits true when one replica fits now. Returns the
 * number of nodes where one replica fits. */
size_t gq_cli_why_nodes(const struct gq_cli_cluster *cl,
                        const struct gq_gpujob *j,
                        const struct gq_teamquota *q, json_t *rows);

#endif
