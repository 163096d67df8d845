/* controller/snapshot.h - the capacity snapshot gpuq decides over
 * (DESIGN §3).
 *
 * A struct gq_snapshot is a snapshot of the cluster's nodes with what each
 * one has committed: the requests of every pod bound to it that still holds
 * its resources (gpuq's and everyone else's; a terminating pod still holds
 * them, gq_pod_holds_resources()) plus gpuq's own in-flight reservations.
 * controller/place.h places jobs on it; controller/forecast.h asks when
 * they will fit.
 *
 * Pure: no I/O, no clock, no global state. One snapshot belongs to one
 * thread.
 */
#ifndef GQ_CONTROLLER_SNAPSHOT_H
#define GQ_CONTROLLER_SNAPSHOT_H
#include <stddef.h>
#include <stdint.h>

#include "decide/match.h"
#include "api/node.h"
#include "api/pod.h"

/* Default topology label for multi-replica jobs (well-known Kubernetes
 * label, k8s.io/api/core/v1 LabelTopologyZone). */
#define GQ_TOPOLOGY_ZONE "topology.kubernetes.io/zone"

struct gq_snapshot_node {
  const struct gq_node *node; /* borrowed from the caller's cache */
  struct gq_node_usage used;  /* owned: committed requests on this node */
};

struct gq_snapshot {
  struct gq_snapshot_node *nodes; /* owned array, sorted by node name */
  size_t n;
  const char *topology_key;  /* borrowed; NULL or "" = no preference */
};

/* Builds a snapshot of n nodes (nodes[i] borrowed: they must outlive c and
 * not change while c is used) with nothing committed. Nodes are kept sorted
 * by name, so placement does not depend on the order given. topology_key
 * (borrowed, may be NULL) is the label that names a node's topology domain,
 * usually GQ_TOPOLOGY_ZONE. Allocates with gq_x* (aborts on OOM). Release
 * with gq_snapshot_release(). */
void gq_snapshot_init(struct gq_snapshot *c, const struct gq_node *const *nodes,
                      size_t n, const char *topology_key);

/* Frees what c owns; c is then empty. */
void gq_snapshot_release(struct gq_snapshot *c);

/* Returns the index in c->nodes of the node named 'name', or -1. O(log n). */
long gq_snapshot_find(const struct gq_snapshot *c, const char *name);

/* Commits (sign +1) or uncommits (sign -1) the requests of one pod s on the
 * node named 'node_name': a bound pod that holds its resources, or an
 * in-flight reservation. Uncommitting exactly what was committed restores
 * the node's sums. Returns 0, or GQ_ENOTFOUND when the node is not in the
 * snapshot (a pod bound to a node gpuq has not seen: nothing changes). */
int gq_snapshot_commit(struct gq_snapshot *c, const char *node_name,
                       const struct gq_podsched *s, int sign);

/* Returns the free amount of extended resource 'resource' (e.g.
 * "nvidia.com/gpu", "nvidia.com/mig-1g.10gb") on node i: allocatable minus
 * committed, in units of the resource (GPUs, MIG slices). Negative when a
 * node's allocatable dropped below what is in use (a GPU failed). */
int64_t gq_snapshot_available(const struct gq_snapshot *c, size_t i,
                         const char *resource);

#endif
