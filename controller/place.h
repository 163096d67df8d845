/* controller/place.h - gpuq's capacity model and gang placement (DESIGN §3).
 *
 * A struct gq_capacity is a snapshot of the cluster's nodes with what each
 * one has committed: the requests of every pod bound to it that still holds
 * its resources (gpuq's and everyone else's; a terminating pod still holds
 * them, gq_pod_holds_resources()) plus gpuq's own in-flight reservations.
 * gq_place_job() then answers, for one GpuJob, on which nodes its replicas
 * go, or why they cannot go anywhere yet.
 *
 * Kubernetes' rules (taints and tolerations, node selectors and required
 * affinity, resource fit) come from api/match.h; what is gpuq's policy is
 * here and only here (DESIGN §3: the sim never uses it):
 *   - a node is a GPU node for a job when its allocatable of the job's
 *     spec.gpu.resource is > 0 (a Ready node whose allocatable dropped to 0
 *     gets nothing);
 *   - spec.gpu.products lists the accepted values of the node's product
 *     label, and spec.gpu.minMemoryMiB is compared with its memory label in
 *     MiB; a node without the label does not qualify when the job asks;
 *   - a gang is all or nothing: each replica wholly on one node, replicas
 *     may share a node;
 *   - best fit: each replica goes to the node that leaves the fewest free
 *     GPUs of the job's resource, ties broken by node name, so that whole
 *     nodes stay free for large jobs;
 *   - a multi-replica job prefers one topology domain (the value of the
 *     node label topology_key): among the domains that hold the whole gang
 *     it takes the one that leaves the fewest free GPUs, ties by domain
 *     name; only when no single domain holds it are domains mixed.
 *
 * Pure: no I/O, no clock, no global state. Not thread-safe for one
 * snapshot: callers own it on one thread (STYLE: decide over a snapshot).
 */
#ifndef GQ_CONTROLLER_PLACE_H
#define GQ_CONTROLLER_PLACE_H
#include <stddef.h>
#include <stdint.h>

#include "api/gpujob.h"
#include "api/match.h"
#include "api/node.h"
#include "api/pod.h"
#include "api/teamquota.h" /* GQ_FLAVOR_ANY */

/* Default topology label for multi-replica jobs (well-known Kubernetes
 * label, k8s.io/api/core/v1 LabelTopologyZone). */
#define GQ_TOPOLOGY_ZONE "topology.kubernetes.io/zone"

struct gq_cap_node {
  const struct gq_node *node; /* borrowed from the caller's cache */
  struct gq_node_usage used;  /* owned: committed requests on this node */
};

struct gq_capacity {
  struct gq_cap_node *nodes; /* owned array, sorted by node name */
  size_t n;
  const char *topology_key;  /* borrowed; NULL or "" = no preference */
};

/* Builds a snapshot of n nodes (nodes[i] borrowed: they must outlive c and
 * not change while c is used) with nothing committed. Nodes are kept sorted
 * by name, so placement does not depend on the order given. topology_key
 * (borrowed, may be NULL) is the label that names a node's topology domain,
 * usually GQ_TOPOLOGY_ZONE. Allocates with gq_x* (aborts on OOM). Release
 * with gq_capacity_release(). */
void gq_capacity_init(struct gq_capacity *c, const struct gq_node *const *nodes,
                      size_t n, const char *topology_key);

/* Frees what c owns; c is then empty. */
void gq_capacity_release(struct gq_capacity *c);

/* Returns the index in c->nodes of the node named 'name', or -1. O(log n). */
long gq_capacity_find(const struct gq_capacity *c, const char *name);

/* Commits (sign +1) or uncommits (sign -1) the requests of one pod s on the
 * node named 'node_name': a bound pod that holds its resources, or an
 * in-flight reservation. Uncommitting exactly what was committed restores
 * the node's sums. Returns 0, or GQ_ENOTFOUND when the node is not in the
 * snapshot (a pod bound to a node gpuq has not seen: nothing changes). */
int gq_capacity_commit(struct gq_capacity *c, const char *node_name,
                       const struct gq_podsched *s, int sign);

/* Returns the free amount of extended resource 'resource' (e.g.
 * "nvidia.com/gpu", "nvidia.com/mig-1g.10gb") on node i: allocatable minus
 * committed, in units of the resource (GPUs, MIG slices). Negative when a
 * node's allocatable dropped below what is in use (a GPU failed). */
int64_t gq_capacity_free(const struct gq_capacity *c, size_t i,
                         const char *resource);

/* The request of one replica of j: the template's effective requests with
 * j->gpu_resource set to j->gpus_per_replica (requests = limits, DESIGN
 * §3), whatever the template said about that resource. Fills *out, whose
 * extended array is owned (names borrowed from j); free it with
 * gq_replica_release(). Every other pointer in *out is borrowed from j. */
void gq_replica_request(const struct gq_gpujob *j, struct gq_podsched *out);

/* Frees the array gq_replica_request() allocated. */
void gq_replica_release(struct gq_podsched *s);

/* Checks gpuq's node rules for job j (with replica request r from
 * gq_replica_request()) on node n, before resources: GPU node for
 * j->gpu_resource, then gq_node_eligible() (Ready, cordon, taints,
 * nodeSelector and affinity), then spec.gpu.products, then the quota
 * flavor (a product label value; NULL or GQ_FLAVOR_ANY = any product),
 * then minMemoryMiB. Returns NULL if n qualifies, else a static short
 * reason ("NoGpu", "NotReady", "Unschedulable", "Taint", "NodeAffinity",
 * "GpuProduct", "Flavor", "GpuMemory"); why (whylen bytes, may be NULL
 * when 0) gets a message naming the value, e.g. "node(s) had GPU product
 * NVIDIA-T4 not in spec.gpu.products". */
const char *gq_job_node_check(const struct gq_node *n,
                              const struct gq_gpujob *j, const char *flavor,
                              const struct gq_podsched *r, char *why,
                              size_t whylen);

/* Places job j on snapshot c, on nodes of 'flavor' (a product label value
 * from a TeamQuota line; NULL or GQ_FLAVOR_ANY = any product). On success
 * returns 0 and fills out[0..j->replicas-1] with node indexes into
 * c->nodes (replica order); c is left as it was: the caller commits the
 * replicas it then creates (gq_capacity_commit() with a
 * gq_replica_request()). Returns GQ_ECAPACITY when the gang does not fit
 * now, with why (whylen bytes) in kube-scheduler's style, reasons sorted
 * and counted over the nodes for the first replica, e.g.
 *   "0/5 nodes fit 1 replica of 8 nvidia.com/gpu: 2 Insufficient
 *    nvidia.com/gpu, 1 node(s) were unschedulable, 2 node(s) had GPU
 *    product NVIDIA-T4 not in spec.gpu.products"
 * or, when single replicas fit but the gang does not,
 *   "gang of 4 replicas x 8 nvidia.com/gpu does not fit: at most 3 fit".
 * out must have room for j->replicas entries. */
int gq_place_job(struct gq_capacity *c, const struct gq_gpujob *j,
                 const char *flavor, size_t *out, char *why, size_t whylen);

#endif
