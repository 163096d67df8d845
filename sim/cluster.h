/* sim/cluster.h - cluster files: the simulated GPU nodes to start with.
 *
 * A cluster file (YAML) lists node groups and/or Node JSON files:
 *
 *   groups:
 *   - count: 40                 # nodes in the group
 *     prefix: philly-gpu-       # names prefix-00 .. prefix-39
 *     gpu: {product: Tesla-P40, memoryMiB: 24576, count: 8}
 *     resources: {nvidia.com/mig-1g.10gb: 4}   # more allocatable resources
 *     cpu: "48"                 # quantities, as in a Node's status
 *     memory: 256Gi
 *     pods: 110
 *     labels: {topology.kubernetes.io/zone: rack-a}
 *     taints: [{key: k, value: v, effect: NoSchedule}]
 *   nodes:
 *   - ../tests/fixtures/nodes/a100-80gb-8x-ready.json   # relative to the file
 *
 * Group nodes get the labels GPU feature discovery sets
 * (nvidia.com/gpu.product, nvidia.com/gpu.memory, nvidia.com/gpu.count),
 * kubernetes.io/hostname, capacity = allocatable, a Ready condition and
 * nodeInfo, as a kubelet registers them. */
#ifndef GQ_SIM_CLUSTER_H
#define GQ_SIM_CLUSTER_H
#include <jansson.h>
#include <stddef.h>

/* Reads the cluster file at path. *nodes gets a new JSON array of Node
 * objects (no uid or resourceVersion yet). Returns 0, or GQ_EINVAL /
 * GQ_EIO with "file: field: problem" in err. */
int gq_sim_cluster_load(const char *path, json_t **nodes, char *err,
                        size_t errlen);

/* Same, from an already parsed cluster document; Node file paths are
 * relative to the folder of the file named rel_to. */
int gq_sim_cluster_from_json(const json_t *doc, const char *rel_to,
                             json_t **nodes, char *err, size_t errlen);

/* Builds one group's Node (index i of the group): a new reference. The
 * group must have passed validation in gq_sim_cluster_load(). */
json_t *gq_sim_cluster_node(const json_t *group, size_t i);

#endif
