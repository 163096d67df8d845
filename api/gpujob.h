/* api/gpujob.h - the GpuJob custom resource (gpuq.dev/v1alpha1), typed.
 *
 * DESIGN §2 defines the API; crds/gpujobs.gpuq.dev.yaml holds the same
 * bounds as an OpenAPI schema. A real API server enforces the schema at
 * create time, but the controller cannot rely on it (CEL and schemas can be
 * bypassed, gpuq-sim does not run CEL, objects may predate a schema change),
 * so gq_gpujob_decode() re-validates every field and every rule, and the
 * controller marks a rejected job Failed with the message it returns.
 *
 * Units: GPUs are counts of spec.gpu.resource; memory in MiB; durations in
 * seconds; timestamps in Unix milliseconds. Optional numbers that are absent
 * are -1 (durations, deadlines) unless noted.
 *
 * Ownership: struct gq_gpujob keeps one reference to the decoded document;
 * its strings are borrowed from it; arrays are owned. gq_gpujob_release()
 * frees everything.
 */
#ifndef GQ_API_GPUJOB_H
#define GQ_API_GPUJOB_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "api/meta.h"
#include "api/pod.h"

#define GQ_GROUP "gpuq.dev"
#define GQ_VERSION "v1alpha1"
#define GQ_API_VERSION "gpuq.dev/v1alpha1"
#define GQ_DEFAULT_GPU_RESOURCE "nvidia.com/gpu"

/* Labels gpuq puts on its pods (DESIGN §3); the sim's checker and the
 * queue rebuild read them back. */
#define GQ_LBL_JOB "gpuq.dev/job"
#define GQ_LBL_JOB_UID "gpuq.dev/job-uid"
#define GQ_LBL_TEAM "gpuq.dev/team"
#define GQ_LBL_ATTEMPT "gpuq.dev/attempt"
#define GQ_LBL_REPLICA "gpuq.dev/replica"

/* Annotations gpuq puts on its pods: the quota flavor key the attempt was
 * admitted under (controller/assign.h) and the node it was pinned to, so
 * that a restarted controller rebuilds its ledger and capacity from the
 * pods alone (DESIGN §6). */
#define GQ_ANN_FLAVOR "gpuq.dev/flavor"
#define GQ_ANN_NODE "gpuq.dev/node"
/* The finalizer that keeps a GpuJob with pods until they are gone. */
#define GQ_FINALIZER "gpuq.dev/pods"

/* Environment gpuq gives each pod (DESIGN §3); the resume location is read
 * by the job, and by gpuq-sim's kubelet. */
#define GQ_ENV_JOB "GPUQ_JOB"
#define GQ_ENV_ATTEMPT "GPUQ_ATTEMPT"
#define GQ_ENV_RESUME_FROM "GPUQ_RESUME_FROM"
#define GQ_ENV_REPLICA "GPUQ_REPLICA"
#define GQ_ENV_REPLICAS "GPUQ_REPLICAS"

/* Bounds shared with the CRD schema (crds/gpujobs.gpuq.dev.yaml). */
#define GQ_MAX_REPLICAS 4096
#define GQ_MAX_GPUS_PER_REPLICA 1024
#define GQ_MAX_PRODUCTS 64
#define GQ_MAX_MIN_MEMORY_MIB 16777216 /* 16 TiB */
#define GQ_MAX_GRACE_S 86400
#define GQ_MAX_DURATION_S 31536000 /* one year */
#define GQ_MAX_BACKOFF_LIMIT 100
#define GQ_DEFAULT_BACKOFF_LIMIT 3

enum gq_drain_policy { GQ_DRAIN_CHECKPOINT, GQ_DRAIN_REQUEUE, GQ_DRAIN_WAIT };

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

/* The status fields gpuq reads back after a restart (it rebuilds its state
 * from them, DESIGN §6). */
struct gq_gpujob_status {
  enum gq_job_phase phase;
  const char *reason;             /* "" when absent */
  int64_t queued_ms;              /* status.queuedAt; 0 if absent */
  int64_t admitted_ms;            /* status.admittedAt */
  int64_t start_ms;               /* status.startTime */
  int64_t completion_ms;          /* status.completionTime */
  int64_t attempts;               /* pod generations created */
  int64_t preemptions;
  int64_t failures;               /* status.failedAttempts */
  const char *checkpoint;         /* lastCheckpoint.location, or NULL */
  int64_t checkpoint_ms;          /* lastCheckpoint.time; 0 if absent */
  int64_t observed_generation;
};

struct gq_gpujob {
  json_t *json;                 /* the document (one reference owned) */
  struct gq_meta meta;
  const char *team;
  int32_t priority;             /* spec.priority (default 0) */
  const char *priority_class;   /* spec.priorityClassName, or NULL */
  int32_t replicas;             /* 1..4096 */
  int32_t gpus_per_replica;     /* 1..1024 */
  int64_t gpus;                 /* replicas * gpus_per_replica */
  const char *gpu_resource;     /* default nvidia.com/gpu */
  const char **products;        /* accepted product label values; owned */
  size_t n_products;            /* 0 = any product */
  int64_t min_memory_mib;       /* 0 = no minimum */
  const json_t *template;       /* spec.template (borrowed from json) */
  struct gq_podsched sched;     /* its pod spec, decoded */
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
  struct gq_gpujob_status status;
};

/* Decodes and validates a GpuJob. Takes a new reference to obj (the caller
 * keeps its own). Returns 0; or GQ_EINVAL with one message in err (errlen
 * bytes, at least GQ_DEC_MSG_MAX recommended) naming the field path and the
 * value, e.g. "spec.gpusPerReplica: must be between 1 and 1024, got -2";
 * nothing is left to release on error. The checks are the CRD schema's plus
 * the rules a schema cannot express: the name is at most 63 characters (it
 * becomes a label value); drainPolicy Checkpoint requires spec.checkpoint;
 * the template's containers do not request the GPU resource themselves
 * (gpuq sets it); replicas * gpusPerReplica is overflow-checked. */
int gq_gpujob_decode(const json_t *obj, struct gq_gpujob *out, char *err,
                     size_t errlen);

/* Releases what gq_gpujob_decode() took; j is then empty. */
void gq_gpujob_release(struct gq_gpujob *j);

/* Returns the phase's API name ("Queued"); "" for GQ_PHASE_NONE. */
const char *gq_job_phase_name(enum gq_job_phase p);

/* Returns the drain policy's API name ("Checkpoint"). */
const char *gq_drain_policy_name(enum gq_drain_policy p);

/* Returns 1 if the phase is final (Succeeded or Failed). */
int gq_job_phase_final(enum gq_job_phase p);

#endif
