/* decide/gpujob.h - the GpuJob custom resource (gpuq.dev/v1alpha1), typed:
 * the spec gpuq schedules by and the status it writes back, plus the names
 * (labels, annotations, finalizer) gpuq puts on the objects it owns.
 *
 * DESIGN §2 defines the API. api/gpujob.h decodes and validates it
 * (gq_gpujob_decode()) and releases it (gq_gpujob_release()).
 *
 * Units: GPUs are counts of spec.gpu.resource; memory in MiB; durations in
 * seconds; timestamps in Unix milliseconds. Optional numbers that are absent
 * are -1 (durations, deadlines) unless noted.
 *
 * Ownership: struct gq_gpujob owns everything it points to and keeps no
 * reference to the JSON it was decoded from (a controller caches tens of
 * thousands of them: bench/README.md, e2e): the strings of the job alone
 * live in one block, the strings that repeat across jobs (namespace, team,
 * labels, status reasons and messages) are shared (gq_intern(),
 * api/json.h), its arrays are owned, and its pod template is shared with
 * every job that has the same one.
 *
 * Part of decide/ (links base/ only): no jansson, no I/O.
 */
#ifndef GQ_DECIDE_GPUJOB_H
#define GQ_DECIDE_GPUJOB_H
#include <stddef.h>
#include <stdint.h>

#include "decide/meta.h"
#include "decide/pod.h"

#define GQ_DEFAULT_GPU_RESOURCE "nvidia.com/gpu"

/* Labels gpuq puts on its pods (DESIGN §3); the sim's checker and the
 * queue rebuild read them back. */
#define GQ_LBL_JOB "gpuq.dev/job"
#define GQ_LBL_JOB_UID "gpuq.dev/job-uid"
#define GQ_LBL_TEAM "gpuq.dev/team"
#define GQ_LBL_ATTEMPT "gpuq.dev/attempt"
#define GQ_LBL_REPLICA "gpuq.dev/replica"

/* Annotations gpuq puts on its pods: the quota flavor key the attempt was
 * admitted under (decide/assign.h) and the node it was pinned to, so
 * that a restarted controller rebuilds its ledger and capacity from the
 * pods alone (DESIGN §6). */
#define GQ_ANN_FLAVOR "gpuq.dev/flavor"
#define GQ_ANN_NODE "gpuq.dev/node"
/* Workloads that are not GpuJobs (docs/integrations.md): gpuq's admission
 * webhook puts the scheduling gate GQ_GATE_ADMISSION on every GPU pod of a
 * team namespace that gpuq did not create (and GQ_ANN_MANAGED on it, and
 * on the batch/v1 Jobs it suspends); the controller queues each as a
 * GpuJob whose spec.workload names it, and removes the gate (or unsuspends
 * the Job) when it is admitted. Pods labelled GQ_LBL_POD_GROUP (a name)
 * and GQ_LBL_POD_GROUP_TOTAL (a count, 1..GQ_MAX_REPLICAS) are one gang.
 * Namespaces labelled GQ_LBL_EXEMPT "true" are never gated. */
#define GQ_GATE_ADMISSION "gpuq.dev/admission"
#define GQ_ANN_MANAGED "gpuq.dev/managed"
#define GQ_LBL_POD_GROUP "gpuq.dev/pod-group"
#define GQ_LBL_POD_GROUP_TOTAL "gpuq.dev/pod-group-total"
#define GQ_LBL_EXEMPT "gpuq.dev/exempt"
/* The user the controller authenticates as, by default: the only one the
 * validating webhook lets remove GQ_GATE_ADMISSION (--controller-user). */
#define GQ_CONTROLLER_USER "system:serviceaccount:gpuq-system:gpuq-controller"

/* The finalizer that keeps a GpuJob with pods until they are gone. */
#define GQ_FINALIZER "gpuq.dev/pods"

/* Bounds shared with the CRD schema (crds/gpujobs.gpuq.dev.yaml). */
#define GQ_MAX_REPLICAS 4096
#define GQ_MAX_GPUS_PER_REPLICA 1024
#define GQ_MAX_PRODUCTS 64
#define GQ_MAX_MIN_MEMORY_MIB 16777216 /* 16 TiB */
#define GQ_MAX_GRACE_S 86400
#define GQ_MAX_DURATION_S 31536000 /* one year */
#define GQ_MAX_BACKOFF_LIMIT 100
#define GQ_DEFAULT_BACKOFF_LIMIT 3
/* spec.template as compact JSON: every pod gpuq creates carries it, and a
 * pod must stay well inside etcd's 1.5 MiB object limit. */
#define GQ_MAX_TEMPLATE_BYTES (1u << 20)

enum gq_drain_policy { GQ_DRAIN_CHECKPOINT, GQ_DRAIN_REQUEUE, GQ_DRAIN_WAIT };

/* spec.workload.kind: what a GpuJob that gpuq created for a workload it did
 * not create stands for (docs/integrations.md). GQ_WL_NONE: a GpuJob of
 * its own (gpuq creates its pods). */
enum gq_wl_kind { GQ_WL_NONE, GQ_WL_POD, GQ_WL_POD_GROUP, GQ_WL_JOB };
#define GQ_MAX_WORKLOAD_PODS GQ_MAX_REPLICAS

enum gq_job_phase {
  GQ_PHASE_NONE, /* status.phase absent: not yet seen by gpuq */
  GQ_PHASE_PENDING,
  GQ_PHASE_QUEUED,
  GQ_PHASE_ADMITTED,
  GQ_PHASE_RUNNING,
  GQ_PHASE_PREEMPTING,
  GQ_PHASE_SUCCEEDED,
  GQ_PHASE_FAILED,
  GQ_PHASE_SUSPENDED
};

/* Bits of struct gq_gpujob_status.has / .bad: one per status field gpuq
 * writes (controller/status.c compares what it wants with them). */
enum gq_job_status_field {
  GQ_ST_PHASE = 1u << 0,
  GQ_ST_REASON = 1u << 1,
  GQ_ST_MESSAGE = 1u << 2,
  GQ_ST_GPUS = 1u << 3,
  GQ_ST_POSITION = 1u << 4,    /* queuePosition */
  GQ_ST_ETA = 1u << 5,         /* estimatedStartTime */
  GQ_ST_QUEUED = 1u << 6,      /* queuedAt */
  GQ_ST_ADMITTED = 1u << 7,    /* admittedAt */
  GQ_ST_START = 1u << 8,       /* startTime */
  GQ_ST_COMPLETION = 1u << 9,  /* completionTime */
  GQ_ST_NODES = 1u << 10,
  GQ_ST_ATTEMPTS = 1u << 11,
  GQ_ST_FAILURES = 1u << 12,   /* failedAttempts */
  GQ_ST_PREEMPTIONS = 1u << 13,
  GQ_ST_GENERATION = 1u << 14, /* observedGeneration */
  GQ_ST_CONDITIONS = 1u << 15,
  GQ_ST_CHECKPOINT = 1u << 16, /* lastCheckpoint */
  GQ_ST_SERVICE = 1u << 17,    /* attainedGPUSeconds */
  /* allocated against used GPUs (issue 22, controller/usage.c) */
  GQ_ST_FLAVOR = 1u << 18,     /* flavor: the GPU product admitted */
  GQ_ST_ALLOC = 1u << 19,      /* allocatedGPUSeconds */
  GQ_ST_USED = 1u << 20,       /* usedGPUSeconds */
  GQ_ST_IDLE = 1u << 21,       /* idleGPUSeconds */
  GQ_ST_UTIL = 1u << 22,       /* gpuUtilization */
  GQ_ST_UTIL_TIME = 1u << 23   /* utilizationTime */
};

/* One entry of status.conditions (metav1.Condition) as read back. */
struct gq_gpujob_cond {
  const char *type, *status, *reason, *message; /* NULL when absent */
  int64_t transition_ms;       /* lastTransitionTime; 0 if absent */
  int64_t observed_generation; /* -1 if absent */
};

/* The usage fields of a status (issue 22), as read back. */
struct gq_gpujob_usage {
  const char *flavor;              /* status.flavor, or NULL */
  int64_t alloc_s, used_s, idle_s; /* status.allocatedGPUSeconds,
                                      usedGPUSeconds, idleGPUSeconds; 0 */
  int64_t util_pct;                /* status.gpuUtilization; -1 if absent */
  int64_t util_ms;                 /* status.utilizationTime; 0 if absent */
};

/* The status as read back: gpuq rebuilds its state from it after a restart
 * (DESIGN §6) and writes only the fields that differ from it. A field is
 * in 'has' when the object has it (even as null), and also in 'bad' when
 * it has a form gpuq does not read (then it never equals what gpuq
 * wants). Absent values read as noted. */
struct gq_gpujob_status {
  unsigned has, bad;              /* GQ_ST_* bits */
  enum gq_job_phase phase;
  const char *reason;             /* "" when absent */
  const char *message;            /* NULL when absent */
  int64_t gpus;                   /* 0 if absent */
  int64_t position;               /* queuePosition; 0 if absent */
  int64_t eta_ms;                 /* estimatedStartTime; 0 if absent */
  int64_t queued_ms;              /* status.queuedAt; 0 if absent */
  int64_t admitted_ms;            /* status.admittedAt */
  int64_t start_ms;               /* status.startTime */
  int64_t completion_ms;          /* status.completionTime */
  const char **nodes;             /* status.nodes (owned array) */
  size_t n_nodes;
  int64_t attempts;               /* pod generations created */
  int64_t preemptions;
  int64_t failures;               /* status.failedAttempts */
  int64_t service_s;              /* status.attainedGPUSeconds; 0 if absent */
  struct gq_gpujob_usage *usage;  /* the usage fields, NULL when the status
                                     has none (most jobs: queued); owned */
  const char *checkpoint;         /* lastCheckpoint.location, or NULL */
  int64_t checkpoint_ms;          /* lastCheckpoint.time; 0 if absent */
  int64_t observed_generation;
  struct gq_gpujob_cond *conds;   /* status.conditions (owned array) */
  size_t n_conds;
};

/* A pod template shared by every job with the same one (interned by its
 * canonical JSON text, reference counted); opaque. */
struct gq_gpujob_template;

struct gq_gpujob {
  char *strings;                /* the strings of this job alone (name, uid,
                                   resourceVersion, ...) in one owned block;
                                   the others are shared (gq_intern()) */
  int owned;                    /* set once decoded: the strings are j's */
  struct gq_meta meta;
  const char **finalizers;      /* metadata.finalizers (owned array; NULL
                                   when absent, not when empty) */
  size_t n_finalizers;
  const char *invalid;          /* gq_gpujob_decode_invalid(): the message;
                                   NULL for a valid job */
  const char *team;
  int32_t priority;             /* spec.priority (default 0) */
  const char *priority_class;   /* spec.priorityClassName, or NULL */
  int32_t replicas;             /* 1..4096 */
  int32_t gpus_per_replica;     /* 1..1024 */
  int64_t gpus;                 /* replicas * gpusPerReplica */
  const char *gpu_resource;     /* default nvidia.com/gpu */
  const char **products;        /* accepted product label values; owned */
  size_t n_products;            /* 0 = any product */
  int64_t min_memory_mib;       /* 0 = no minimum */
  struct gq_gpujob_template *template; /* spec.template (one reference) */
  const struct gq_podsched *sched; /* its pod spec, decoded (shared) */
  uint32_t shape;               /* gq_gpujob_decode() (api/gpujob.h)
                                   says what it is */
  int preemptible;              /* default 1 */
  int has_checkpoint;           /* spec.checkpoint present */
  int64_t grace_s;              /* checkpoint.gracePeriodSeconds, or -1 */
  int64_t checkpoint_interval_s;/* checkpoint.intervalSeconds, or -1 */
  enum gq_drain_policy drain;   /* defaulted as DESIGN §2 says */
  int64_t expected_duration_s;  /* -1 if absent */
  int64_t active_deadline_s;    /* -1 if absent */
  int64_t startup_timeout_s;    /* -1 if absent */
  int32_t backoff_limit;        /* default 3 */
  int suspend;
  /* spec.workload: GQ_WL_NONE, or the pod, pod group or batch/v1 Job it
   * stands for: its name (the pod's, the group's, the Job's) and, for a
   * pod or a pod group, its pods' names, one per replica in replica order
   * (owned array; the strings are j's) */
  enum gq_wl_kind wl_kind;
  const char *wl_name;
  const char **wl_pods;
  size_t n_wl_pods;
  struct gq_gpujob_status status;
};

/* The name of the GpuJob that stands for workload (kind, name): "pod-",
 * "group-" or "job-" and the name, '.' turned into '-'; one longer than a
 * GpuJob name may be (GQ_WL_NAME_MAX, a DNS-1123 label: DESIGN §2) is cut
 * and ends in '-' and 8 hex digits of a hash of the whole (uthash's
 * Jenkins hash), so that different names stay different. Writes at most
 * len bytes (len >= GQ_WL_NAME_MAX + 1) into out. */
#define GQ_WL_NAME_MAX 63
void gq_wl_shadow_name(enum gq_wl_kind kind, const char *name, char *out,
                       size_t len);

/* The spec.workload.kind value of k ("Pod", "PodGroup", "Job"; "" for
 * GQ_WL_NONE). Static storage. */
const char *gq_wl_kind_name(enum gq_wl_kind k);

/* Returns 1 if the phase is final (Succeeded or Failed). */
int gq_job_phase_final(enum gq_job_phase p);

#endif
