/* decide/node.h - the Node fields gpuq's capacity model uses, typed.
 *
 * A GPU node (DESIGN §3) is one with allocatable GPUs of some resource:
 * nvidia.com/gpu and, under the MIG mixed strategy, nvidia.com/mig-<profile>
 * resources. Its flavor is the value of the GPU product label
 * (nvidia.com/gpu.product by default, as GPU Feature Discovery sets it), and
 * its per-GPU memory the nvidia.com/gpu.memory label in MiB.
 *
 * api/node.h decodes it. struct gq_node keeps one reference to the decoded
 * document ('json'); its strings are borrowed from it. Arrays are owned;
 * gq_node_release() (api/node.h) frees all.
 *
 * Part of decide/ (links base/ only): no jansson. 'json' is an opaque
 * pointer for api/ and the I/O layers; nothing in decide/ reads it.
 */
#ifndef GQ_DECIDE_NODE_H
#define GQ_DECIDE_NODE_H
#include <stddef.h>
#include <stdint.h>

#include "decide/meta.h"
#include "decide/pod.h" /* struct gq_res */

struct json_t; /* jansson's json_t (typedef struct json_t json_t) */

#define GQ_LABEL_GPU_PRODUCT "nvidia.com/gpu.product"
#define GQ_LABEL_GPU_MEMORY "nvidia.com/gpu.memory"
#define GQ_LABEL_GPU_COUNT "nvidia.com/gpu.count"
#define GQ_LABEL_HOSTNAME "kubernetes.io/hostname"

struct gq_taint {
  const char *key;
  const char *value;  /* "" when absent */
  const char *effect; /* NoSchedule, PreferNoSchedule or NoExecute */
};

struct gq_node {
  struct json_t *json;   /* the document (one reference owned; api/ only) */
  struct gq_meta meta;
  int64_t cpu_milli;     /* allocatable CPU, millicores */
  int64_t memory_bytes;  /* allocatable memory, bytes */
  int64_t pods;          /* allocatable pod slots */
  struct gq_res *alloc;  /* allocatable extended resources (names with a
                            '/': nvidia.com/gpu, nvidia.com/mig-1g.10gb) */
  size_t n_alloc;
  struct gq_res *capacity; /* capacity of the same kind of resources */
  size_t n_capacity;
  const char *gpu_product; /* product label value, NULL if absent */
  int64_t gpu_memory_mib;  /* memory label in MiB; -1 if absent or bad */
  int64_t gpu_count;       /* nvidia.com/gpu.count label; -1 if absent */
  struct gq_taint *taints;
  size_t n_taints;
  int unschedulable;     /* spec.unschedulable (cordoned) */
  int ready;             /* condition Ready is True */
};

/* Returns the allocatable amount of extended resource 'name' on n, in the
 * resource's units (GPUs, MIG slices); 0 if n has none. */
int64_t gq_node_allocatable(const struct gq_node *n, const char *name);

/* Returns the capacity of extended resource 'name' on n (same units); 0 if
 * none. */
int64_t gq_node_capacity(const struct gq_node *n, const char *name);

#endif
