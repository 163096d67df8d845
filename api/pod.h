/* api/pod.h - the Pod fields gpuq uses, and the scheduling-relevant part of
 * a pod spec (shared with GpuJob's pod template).
 *
 * struct gq_podsched is what placement needs to know about a pod: its
 * effective resource requests, nodeSelector, required node affinity,
 * tolerations and node name. It is decoded from a core/v1 PodSpec, so the
 * same code serves Pods the controller watches, GpuJob templates and the
 * pods gpuq-sim schedules.
 *
 * Strings are borrowed from the decoded JSON document, which struct gq_pod
 * keeps a reference to (a GpuJob's template moves them into a block of its
 * own: gq_podsched_strings()); arrays are owned and freed by the
 * _release() functions.
 */
#ifndef GQ_API_POD_H
#define GQ_API_POD_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "api/json.h"
#include "api/meta.h"

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
  int64_t cpu_milli;           /* effective requests (see below) */
  int64_t memory_bytes;
  struct gq_res *extended;     /* every other requested resource */
  size_t n_extended;
  int64_t grace_s;             /* terminationGracePeriodSeconds, default 30 */
};

/* Decodes a PodSpec at 'spec' (path prefix 'path', e.g. "spec" or
 * "spec.template.spec") into out. Effective requests follow Kubernetes'
 * PodRequests (k8s.io/component-helpers/resource/helpers.go): per
 * resource, max(sum over containers + restartable (sidecar) init
 * containers, max over init containers i of (init i + sidecars started
 * before it)), plus spec.overhead; a container's request defaults to its
 * limit when only the limit is given (the apiserver's defaulting).
 * Requires at least one container with a name. Returns 0 or GQ_EINVAL with
 * the field path in d; nothing to release on error. */
int gq_podsched_decode(struct gq_dec *d, const json_t *spec, const char *path,
                       struct gq_podsched *out);

/* Frees the arrays of out (strings are borrowed). */
void gq_podsched_release(struct gq_podsched *out);

/* Adds the address of every string of s to p (api/json.h), so that
 * gq_strpack_done() makes s own its strings in one block. */
void gq_podsched_strings(struct gq_podsched *s, struct gq_strpack *p);

/* Returns a new string (caller frees) that two podscheds have equal
 * exactly when every field placement reads is equal: the key under which
 * decoded templates are shared (api/gpujob.c). */
char *gq_podsched_key(const struct gq_podsched *s);

/* Returns the effective request of extended resource 'name', 0 if none. */
int64_t gq_podsched_request(const struct gq_podsched *s, const char *name);

enum gq_pod_phase {
  GQ_POD_PENDING,
  GQ_POD_RUNNING,
  GQ_POD_SUCCEEDED,
  GQ_POD_FAILED,
  GQ_POD_UNKNOWN
};

struct gq_pod {
  json_t *json;                /* the document (one reference owned) */
  struct gq_meta meta;
  struct gq_podsched sched;
  enum gq_pod_phase phase;     /* Pending when status is absent */
  const char *status_reason;   /* status.reason ("Evicted", "OutOfcpu",
                                  "UnexpectedAdmissionError"), or "" */
  const char *unschedulable;   /* reason of PodScheduled=False, or NULL */
  const char *disruption;      /* reason of DisruptionTarget=True, or NULL */
  int ready;                   /* condition Ready=True */
  const char *termination_msg; /* first terminated container's message */
  int exit_code;               /* its exit code; -1 if none terminated */
};

/* Decodes a core/v1 Pod. Takes a new reference to obj (the caller keeps
 * its own). Returns 0, or GQ_EINVAL with "field: problem, got value" in err
 * (errlen bytes); on error there is nothing to release. */
int gq_pod_decode(const json_t *obj, struct gq_pod *out, char *err,
                  size_t errlen);

/* Releases what gq_pod_decode() took; out is then empty. */
void gq_pod_release(struct gq_pod *out);

/* Returns 1 if the pod still holds its resources: not Succeeded or Failed.
 * A terminating pod (deletionTimestamp set) still holds them until it is
 * gone (DESIGN §3). */
int gq_pod_holds_resources(const struct gq_pod *p);

#endif
