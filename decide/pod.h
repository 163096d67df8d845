/* decide/pod.h - the Pod fields gpuq uses, and the scheduling-relevant part
 * of a pod spec (shared with GpuJob's pod template), as typed C structs.
 *
 * struct gq_podsched is what placement needs to know about a pod: its
 * effective resource requests, nodeSelector, required node affinity,
 * tolerations and node name. api/pod.h decodes it from a core/v1 PodSpec,
 * so the same struct serves Pods the controller watches, GpuJob templates
 * and the pods gpuq-sim schedules.
 *
 * Ownership (the decoders in api/pod.h set it up, gq_pod_release() and
 * gq_podsched_release() undo it):
 *   - struct gq_podsched: strings borrowed from the decoded JSON document
 *     (a GpuJob's template moves them into a block of its own:
 *     gq_podsched_strings()); arrays owned;
 *   - struct gq_pod: the fields up to 'exit_code' borrow their strings from
 *     the document, of which 'json' holds one reference; 'annotations',
 *     'terminated' and 'last_terminated' own theirs (one block, 'strings'),
 *     so they stay valid without the document.
 *
 * Part of decide/ (links base/ only): no jansson. 'json' is an opaque
 * pointer for api/ and the I/O layers; nothing in decide/ reads it.
 */
#ifndef GQ_DECIDE_POD_H
#define GQ_DECIDE_POD_H
#include <stddef.h>
#include <stdint.h>

#include "decide/meta.h"

struct json_t; /* jansson's json_t (typedef struct json_t json_t) */

/* A resource amount: CPU in millicores, memory in bytes, everything else
 * (pods, nvidia.com/gpu, nvidia.com/mig-1g.10gb) as a count. */
struct gq_res {
  const char *name;
  int64_t value;
};

enum gq_toleration_op { GQ_TOL_EQUAL, GQ_TOL_EXISTS };

struct gq_toleration {
  const char *key;    /* "" with Exists: tolerates every taint */
  enum gq_toleration_op op;
  const char *value;  /* "" when absent */
  const char *effect; /* "" = any effect */
  int64_t seconds;    /* tolerationSeconds; -1 = forever */
};

enum gq_sel_op {
  GQ_SEL_IN,
  GQ_SEL_NOT_IN,
  GQ_SEL_EXISTS,
  GQ_SEL_DOES_NOT_EXIST,
  GQ_SEL_GT,
  GQ_SEL_LT
};

/* One NodeSelectorRequirement (matchExpressions or matchFields). */
struct gq_sel_req {
  const char *key;
  enum gq_sel_op op;
  const char **values; /* owned array of borrowed strings */
  size_t n_values;
};

/* One NodeSelectorTerm: its requirements are ANDed. */
struct gq_node_term {
  struct gq_sel_req *exprs;  /* on node labels */
  size_t n_exprs;
  struct gq_sel_req *fields; /* on node fields (metadata.name only) */
  size_t n_fields;
};

struct gq_podsched {
  const char *node_name;       /* spec.nodeName, "" if unbound */
  struct gq_kv *node_selector; /* spec.nodeSelector (ANDed) */
  size_t n_node_selector;
  struct gq_node_term *terms;  /* required node affinity terms (ORed); */
  size_t n_terms;              /* n_terms == 0: no affinity constraint */
  struct gq_toleration *tolerations;
  size_t n_tolerations;
  int64_t cpu_milli;           /* effective requests (api/pod.h says how */
  int64_t memory_bytes;        /* they are summed) */
  struct gq_res *extended;     /* every other requested resource */
  size_t n_extended;
  int64_t grace_s;             /* terminationGracePeriodSeconds, default 30 */
};

/* Returns the effective request of extended resource 'name' in s (a count
 * in the resource's units: GPUs, MIG slices), 0 if s requests none. */
int64_t gq_podsched_request(const struct gq_podsched *s, const char *name);

enum gq_pod_phase {
  GQ_POD_PENDING,
  GQ_POD_RUNNING,
  GQ_POD_SUCCEEDED,
  GQ_POD_FAILED,
  GQ_POD_UNKNOWN
};

/* Annotations whose key is in this DNS domain or one of its subdomains
 * (gpuq.dev/flavor, sim.gpuq.dev/run-seconds) are kept in struct gq_pod;
 * others (kubectl's last-applied-configuration, ...) are not. */
#define GQ_ANN_DOMAIN "gpuq.dev"

/* How one run of a container ended (core/v1 ContainerStateTerminated).
 * Strings are owned by the pod (its 'strings' block). */
struct gq_pod_term {
  const char *container;  /* containerStatuses[].name; "" if absent */
  int exit_code;          /* exitCode; 0 if absent */
  const char *reason;     /* reason ("Completed", "Error", "OOMKilled"),
                             "" if absent */
  const char *message;    /* the termination message (what the container
                             wrote to its terminationMessagePath: the
                             checkpoint contract, DESIGN §5), "" if absent */
  int64_t finished_ms;    /* finishedAt, Unix ms; 0 if absent or not an
                             RFC 3339 time */
};

struct gq_pod {
  struct json_t *json;         /* the document (one reference owned; api/
                                  only, see above) */
  struct gq_meta meta;
  struct gq_podsched sched;
  enum gq_pod_phase phase;     /* Pending when status is absent */
  const char *status_reason;   /* status.reason ("Evicted", "OutOfcpu",
                                  "UnexpectedAdmissionError"), or "" */
  const char *unschedulable;   /* reason of PodScheduled=False, or NULL */
  const char *disruption;      /* reason of DisruptionTarget=True ("" when
                                  it has none), or NULL */
  int ready;                   /* condition Ready=True */
  const char *termination_msg; /* first terminated container's message,
                                  NULL if none terminated or no message */
  int exit_code;               /* its exit code; -1 if none terminated */
  /* Owned (in 'strings'): */
  char *strings;               /* one block with every string below */
  struct gq_kv *annotations;   /* metadata.annotations in GQ_ANN_DOMAIN
                                  with string values (owned array) */
  size_t n_annotations;
  struct gq_pod_term *terminated; /* status.containerStatuses[].state.
                                     terminated, for each container that
                                     has one, in containerStatuses order
                                     (owned array) */
  size_t n_terminated;
  struct gq_pod_term *last_terminated; /* ...[].lastState.terminated: the
                                          previous run of a container that
                                          restarted (owned array) */
  size_t n_last_terminated;
};

/* Returns the value of annotation 'key' of p (borrowed from p), or NULL.
 * Only keys in GQ_ANN_DOMAIN are kept, so any other key gives NULL. */
const char *gq_pod_annotation(const struct gq_pod *p, const char *key);

/* Returns 1 if the pod still holds its resources: not Succeeded or Failed.
 * A terminating pod (deletionTimestamp set) still holds them until it is
 * gone (DESIGN §3). */
int gq_pod_holds_resources(const struct gq_pod *p);

#endif
