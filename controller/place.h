/* controller/place.h - gpuq's gang placement (DESIGN §3).
 *
 * For one GpuJob, gq_place_job() answers on which nodes of a snapshot
 * (controller/snapshot.h) its replicas go, or why they cannot go anywhere
 * yet.
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
#include "decide/match.h"
#include "api/node.h"
#include "api/pod.h"
#include "api/teamquota.h" /* GQ_FLAVOR_ANY */
#include "decide/snapshot.h"

/* The request of one replica of j: the template's effective requests with
 * j->gpu_resource set to j->gpus_per_replica (requests = limits, DESIGN
 * §3), whatever the template said about that resource. Fills *out, whose
 * extended array is owned (names borrowed from j); free it with
 * gq_place_replica_release(). Every other pointer in *out is borrowed from j. */
void gq_place_replica_request(const struct gq_gpujob *j, struct gq_podsched *out);

/* Frees the array gq_place_replica_request() allocated. */
void gq_place_replica_release(struct gq_podsched *s);

/* Checks gpuq's node rules for job j (with replica request r from
 * gq_place_replica_request()) on node n, before resources: GPU node for
 * j->gpu_resource, then gq_node_eligible() (Ready, cordon, taints,
 * nodeSelector and affinity), then spec.gpu.products, then the quota
 * flavor (a product label value; NULL or GQ_FLAVOR_ANY = any product),
 * then minMemoryMiB. Returns NULL if n qualifies, else a static short
 * reason ("NoGpu", "NotReady", "Unschedulable", "Taint", "NodeAffinity",
 * "GpuProduct", "Flavor", "GpuMemory"); why (whylen bytes, may be NULL
 * when 0) gets a message naming the value, e.g. "node(s) had GPU product
 * NVIDIA-T4 not in spec.gpu.products". */
const char *gq_place_node_check(const struct gq_node *n,
                              const struct gq_gpujob *j, const char *flavor,
                              const struct gq_podsched *r, char *why,
                              size_t whylen);

/* Places job j on snapshot c, on nodes of 'flavor' (a product label value
 * from a TeamQuota line; NULL or GQ_FLAVOR_ANY = any product). On success
 * returns 0 and fills out[0..j->replicas-1] with node indexes into
 * c->nodes (replica order); c is left as it was: the caller commits the
 * replicas it then creates (gq_snapshot_commit() with a
 * gq_place_replica_request()). Returns GQ_ECAPACITY when the gang does not fit
 * now, with why (whylen bytes) in kube-scheduler's style, reasons sorted
 * and counted over the nodes for the first replica, e.g.
 *   "0/5 nodes fit 1 replica of 8 nvidia.com/gpu: 2 Insufficient
 *    nvidia.com/gpu, 1 node(s) were unschedulable, 2 node(s) had GPU
 *    product NVIDIA-T4 not in spec.gpu.products"
 * or, when single replicas fit but the gang does not,
 *   "gang of 4 replicas x 8 nvidia.com/gpu does not fit: at most 3 fit".
 * out must have room for j->replicas entries. why may be NULL when
 * whylen is 0: the reasons are then not gathered, which is the cheap
 * case (a miss with reasons scans the nodes twice). Cost: one pass over
 * the nodes; a node's checks run only if its free GPUs of j's resource
 * could hold a replica (and, for one replica, fit tighter than the best
 * so far); a single replica's search ends at a node with exactly the
 * GPUs it asks. */
int gq_place_job(struct gq_snapshot *c, const struct gq_gpujob *j,
                 const char *flavor, size_t *out, char *why, size_t whylen);

#endif
