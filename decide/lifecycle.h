/* decide/lifecycle.h - one GpuJob's lifecycle as pure transitions
 * (DESIGN §2-§5): a job view, its pods and the time in; the effects to
 * apply and the job view after them out.
 *
 * The lifecycle: Queued -> Admitted (pods created) -> Running (every
 * replica running) -> Succeeded (every replica succeeded). A replica that
 * fails on its own tears the gang down and retries it as a new attempt, up
 * to spec.backoffLimit failed attempts, then Failed. A placement miss or a
 * disruption (a pod evicted, deleted, or lost with its node) tears the gang
 * down and requeues it without counting; a disruption is checkpointed
 * first (phase Preempting). The GPUs are released only once every pod of
 * the attempt is gone or finished (DESIGN §3), and only then is a new
 * attempt admitted (never two pod generations at once, invariant 5).
 *
 * Pure: no I/O, no clock (now_ms and mono_ms are inputs), no logging (log
 * lines are effects), no allocation (the effects' strings live in
 * struct gq_life_out). Every reason, message and event text is the one the
 * controller has always written (tests and scenarios match them).
 *
 * Ownership: every pointer in the inputs is borrowed for the call; the
 * out's strings point into the out itself or into the inputs, so they are
 * valid while both are. Loop thread only, like everything in controller/.
 *
 * The driver (controller/jobs.c, disrupt.c) builds the views from its
 * store and informers, calls one of the gq_life_* functions, writes
 * out->job back into its record (the fields marked "written back") and
 * applies out->eff[] in order.
 */
#ifndef GQ_DECIDE_LIFECYCLE_H
#define GQ_DECIDE_LIFECYCLE_H
#include <stddef.h>
#include <stdint.h>

/* the typed model's enums (they move to decide/gpujob.h and decide/pod.h
 * with the decide-move branch) */
#include "decide/gpujob.h"
#include "decide/pod.h"

/* Where a job stands in gpuq's hands (the API phase is derived from it). */
enum cj_state {
  CJ_NEW,       /* seen, not yet reconciled */
  CJ_WAITING,   /* valid but not queueable: unknown team, suspended */
  CJ_QUEUED,    /* in its team's queue */
  CJ_ADMITTING, /* admit script in flight */
  CJ_ACTIVE,    /* admitted: pods being created, running */
  CJ_TEARDOWN,  /* its pods are being deleted; then requeue or finish */
  CJ_DONE       /* Succeeded or Failed (or invalid): nothing more to do */
};

/* Why a gang is torn down. */
enum cj_td {
  TD_NONE,
  TD_FAILED,    /* a replica failed on its own: counts toward backoffLimit */
  TD_MISS,      /* placement miss: does not count */
  TD_DISRUPTED, /* evicted, deleted, node gone: does not count */
  TD_STARTUP,   /* startupTimeoutSeconds passed: counts */
  TD_DEADLINE,  /* activeDeadlineSeconds passed: the job fails */
  TD_SUSPEND,   /* spec.suspend set */
  TD_DELETE     /* the GpuJob is being deleted */
};

/* Why the pods of an admitted attempt could not all be created (struct
 * gq_life_job.create_miss). */
enum gq_life_miss {
  GQ_LIFE_MISS_NONE,
  GQ_LIFE_MISS_CREATE, /* a pod create failed */
  GQ_LIFE_MISS_NODE    /* its node is gone */
};

#define GQ_LIFE_REDELETE_MS 5000 /* resend pod deletions that did not take
                                    (mono ms) */
#define GQ_LIFE_MSG_MAX 1024     /* a message, as status.c keeps them */

/* One pod labelled with the job's uid, as the pod informer has it. */
struct gq_life_pod {
  const char *name;          /* metadata.name */
  int64_t attempt;           /* gpuq.dev/attempt label; -1 absent */
  enum gq_pod_phase phase;
  const char *status_reason; /* status.reason, "" if none */
  const char *unschedulable; /* reason of PodScheduled=False, or NULL */
  const char *disruption;    /* reason of DisruptionTarget=True, or NULL */
  int64_t deletion_ms;       /* deletionTimestamp; 0 = not being deleted */
  int64_t deletion_grace_s;  /* deletionGracePeriodSeconds; -1 absent */
  int holds;                 /* still holds its resources (not finished) */
  const char *flavor;        /* gpuq.dev/flavor annotation, or NULL */
};

/* One terminated container of a pod event (its termination message). */
struct gq_life_term {
  const char *msg;     /* the message, or NULL */
  int64_t finished_ms; /* finishedAt; -1 absent or unreadable */
};

/* A pod event (added, updated or deleted: its last state). */
struct gq_life_podev {
  const char *name;       /* metadata.name, or NULL */
  const char *attempt;    /* gpuq.dev/attempt label, or NULL */
  const char *replica;    /* gpuq.dev/replica label, or NULL */
  const char *disruption; /* reason of DisruptionTarget=True ("" if it
                             has none), or NULL without that condition */
  int deleting;           /* metadata.deletionTimestamp present */
  int has_grace;          /* deletionGracePeriodSeconds is an integer */
  int64_t grace_s;
  const struct gq_life_term *terms; /* its containerStatuses' terminated
                                       states, in order */
  size_t n_terms;
};

/* A TeamQuota as the lifecycle needs it. */
struct gq_life_quota {
  int exists;
  const char *cohort;   /* "" = none */
  int admits_ns;        /* spec.namespaces lets the job's namespace in */
};

/* The GpuJob object as stored: its spec (when valid) and the status read
 * back (what a restarted controller finds). */
struct gq_life_spec {
  int exists;             /* in the informer */
  int64_t deletion_ms;    /* deletionTimestamp; 0 = not being deleted */
  const char *invalid;    /* the decoder's message, or NULL (valid) */
  int64_t creation_ms;
  /* valid jobs only */
  const char *team;
  int32_t replicas;
  int64_t gpus, gpus_per_replica;
  int32_t priority;       /* effective: its PriorityClass's value if found */
  const char *priority_class; /* or NULL */
  int pc_found;           /* that PriorityClass exists */
  int suspend;
  int32_t backoff_limit;
  int64_t deadline_s, startup_s; /* -1 = none */
  enum gq_drain_policy drain;
  int has_checkpoint;
  int64_t grace_s;        /* checkpoint.gracePeriodSeconds */
  struct gq_life_quota q_spec; /* the TeamQuota of spec.team */
  int one_shot;           /* its pods cannot be made again (it stands for
                             a pod or a pod group gpuq did not create,
                             docs/integrations.md): an attempt torn down
                             by a disruption or a miss ends it Failed
                             instead of requeueing it */
  int ended;              /* the workload it stands for ended on its own
                             (a batch/v1 Job's Complete or Failed
                             condition): 1 succeeded, 2 failed, 0 not */
  const char *ended_msg;  /* that condition's message, or NULL */
  const char *teams;      /* "'a', 'b'" or "none": filled when a quota the
                             job may need is missing, else NULL */
  /* status, as stored (valid or not) */
  enum gq_job_phase st_phase;
  const char *st_reason;  /* "" when absent */
  const char *st_message; /* NULL when absent */
  int64_t st_attempts, st_failures, st_preemptions;
  int64_t st_service_s;   /* status.attainedGPUSeconds */
  int64_t st_queued_ms, st_admitted_ms, st_start_ms, st_completion_ms;
  const char *st_checkpoint; /* NULL */
  int64_t st_checkpoint_ms;
  size_t st_n_nodes;
  int st_nodes_bad;       /* status.nodes in a form gpuq does not read */
};

/* The job as the controller's record has it. W: written back from
 * out->job by the driver; the others change only through effects. */
struct gq_life_job {
  const char *key;          /* "ns/name", for log lines */
  const char *ns;
  enum cj_state state;      /* W */
  enum cj_td td;            /* W */
  enum gq_job_phase phase;  /* W */
  int64_t attempt, failures, preemptions; /* W */
  int32_t replicas;         /* what the attempt was admitted with */
  int64_t gpus;
  const char *team, *cohort;
  struct gq_life_quota q;   /* the TeamQuota of team */
  int32_t priority, qprio;  /* effective; the one it was queued with */
  const char *queued_team;  /* the team whose queue it is in, or NULL */
  int has_adm;              /* counted in its team's use */
  int has_nodes;            /* holds the node array of its attempt */
  int creates_left;         /* pod creates in flight */
  int create_pending;       /* W: admitted, its pods not created yet */
  enum gq_life_miss create_miss; /* a create of the attempt failed (set
                               by the acts, cleared by the next create) */
  const char *adm_event;    /* the Admitted event's message while
                               create_pending, or NULL */
  int running, adopted, preempted, edit_told; /* W */
  int pdb;                  /* its PodDisruptionBudget was created */
  int gone;                 /* the GpuJob object was deleted */
  int drain_wait;           /* spec.drainPolicy Wait (cached) */
  int64_t deadline_s, startup_s; /* cached from the spec; -1 none */
  int64_t queued_ms, admitted_ms, start_ms, first_start_ms,
      completion_ms, eta_ms;     /* W (virtual ms) */
  int64_t td_sent_ms;       /* W: mono ms pod deletions were last sent */
  int64_t td_ms;            /* W: virtual ms its disruption began */
  int64_t cordon_ms;        /* W: virtual ms its node was seen cordoned */
  const char *reason;       /* status reason it shows ("" none) */
  const char *ckpt;         /* last checkpoint location, or NULL */
  int64_t ckpt_ms, ckpt_attempt;
  const char *cause, *cause_msg; /* why it is disrupted, or NULL */
  int64_t cause_grace_s;    /* W: grace the disrupting pod got; -1 */
  /* attained service (decide/las.h): W. GPU-seconds of its ended
   * attempts (since it was queued or last promoted), how long its last
   * attempt ran (virtual ms) and when it was last requeued (virtual ms,
   * 0 never) */
  int64_t service_s, last_run_ms, requeued_ms;
};

/* Everything one transition reads. */
struct gq_life_in {
  struct gq_life_job job;
  const struct gq_life_spec *spec;
  const struct gq_life_pod *pods; /* the pods labelled with its uid */
  size_t n_pods;
  int seen;          /* replicas of its attempt that exist (in the pod
                        informer, or created and assumed); counted while
                        it is CJ_ACTIVE with no create in flight */
  const char *cordoned; /* gq_life_tick: the first node of its attempt
                           that is cordoned, or NULL */
  int64_t drain_wait_s; /* --drain-wait */
  int64_t now_ms;    /* virtual ms (base/clock.h) */
  int64_t mono_ms;   /* monotonic real ms */
};

/* What the driver does, in order. */
enum gq_life_kind {
  GQ_LIFE_LOG,          /* an INFO log line: msg */
  GQ_LIFE_EVENT,        /* an Event: type, reason, msg */
  GQ_LIFE_STATUS,       /* the reason and message it shows: reason (static
                           storage) or, when NULL, str (a reason read back
                           from the status: intern it); msg */
  GQ_LIFE_DELETE_PODS,  /* delete every pod gq_life_pod_deletable() */
  GQ_LIFE_RELEASE,      /* release its admission (Redis and team use) */
  GQ_LIFE_QUEUE_ADD,    /* into its team's queue (state becomes QUEUED) */
  GQ_LIFE_QUEUE_DEL,    /* out of its team's in-memory queue */
  GQ_LIFE_REDIS_REMOVE, /* its Redis keys go */
  GQ_LIFE_REDIS_REQUEUE,/* back at its original place in Redis */
  GQ_LIFE_FREE_NODES,   /* drop the node array of its attempt */
  GQ_LIFE_UNASSUME,     /* drop the pods assumed for its attempt */
  GQ_LIFE_FINALIZER,    /* a: 1 add gpuq's finalizer, 0 remove it */
  GQ_LIFE_FORGET,       /* the object is gone: drop the record (last) */
  GQ_LIFE_PDB,          /* a: 1 create its PodDisruptionBudget, 0 delete */
  GQ_LIFE_SERVICE,      /* create its Service (replicas > 1) */
  GQ_LIFE_CREATE_PODS,  /* create the pods of its attempt on its nodes */
  GQ_LIFE_RESUME_NODES, /* adoption: status.nodes become its attempt's
                           nodes, its missing pods are assumed there */
  GQ_LIFE_ADOPT_USE,    /* adoption: its attempt holds an admission of
                           flavor str: count it in its team's use (team,
                           cohort, GPUs and replicas from the spec) */
  GQ_LIFE_ACTIVE,       /* onto the admitted list the tick walks */
  GQ_LIFE_DRAIN_LIST,   /* a: 1 onto the list of jobs in Preempting, 0 off */
  GQ_LIFE_VICTIM_DONE,  /* its preemptor has one victim less to wait for */
  GQ_LIFE_TAKE_SPEC,    /* team, GPUs and replicas from the spec (no
                           attempt is pinned to the old ones) */
  GQ_LIFE_REFRESH,      /* the other values cached from the spec */
  GQ_LIFE_CAUSE,        /* why it is disrupted: str (cause), msg; both
                           NULL: cleared */
  GQ_LIFE_CKPT,         /* its checkpoint: str, a (virtual ms), b attempt */
  GQ_LIFE_M_PREEMPTION, /* gpuq_preemptions_total{reason=str} += 1 */
  GQ_LIFE_M_LOST,       /* lost GPU-seconds: a disruption start, b start,
                           c GPUs (gq_preempt_at_risk) */
  GQ_LIFE_M_RESUME,     /* gpuq_checkpoint_resumes_total += 1 */
  GQ_LIFE_M_CKPT        /* gpuq_checkpoint_duration_seconds: a ms */
};

struct gq_life_eff {
  enum gq_life_kind kind;
  const char *type;   /* EVENT: "Normal" or "Warning" */
  const char *reason; /* EVENT, STATUS: static storage */
  const char *str;
  const char *msg;
  int64_t a, b, c;
};

#define GQ_LIFE_EFF_MAX 48
#define GQ_LIFE_TEXT_MAX 32768

struct gq_life_out {
  struct gq_life_job job;  /* the view after the effects */
  struct gq_life_eff eff[GQ_LIFE_EFF_MAX];
  size_t n;
  int again;   /* call gq_life_reconcile() again once these are applied */
  int flush;   /* send its status difference after the effects */
  /* gq_life_tick(): a teardown that is due (TD_NONE: none). TD_DISRUPTED
   * comes with due_cause: the driver preempts the job (jobs_preempt) */
  enum cj_td due;
  const char *due_cause;
  const char *due_why;
  char text[GQ_LIFE_TEXT_MAX]; /* the effects' strings */
  size_t used;
};

/* One reconcile of the job: deletion, adoption after a restart, an invalid
 * spec, spec edits, its pods' progress, teardown and its end, queueing.
 * Sets out->again when the driver must call it again at once (after an
 * adoption, or a teardown's end that requeued it). */
void gq_life_reconcile(const struct gq_life_in *in, struct gq_life_out *out);

/* Causes of a disruption that gpuq starts from GPU readings (issue 22,
 * controller/usage.c): a job idle while others wait (requeued at the back
 * of its queue, with a new queue time, so that it does not take its GPUs
 * straight back), and a job on a GPU that reported an XID error (requeued
 * at its place). */
#define GQ_LIFE_CAUSE_IDLE "Idle"
#define GQ_LIFE_CAUSE_GPU_UNHEALTHY "GpuUnhealthy"

/* The job is disrupted on gpuq's own initiative (priority preemption,
 * quota reclaim, node removal, a drain wait's end): cause (a CamelCase
 * reason, static storage) and why (the sentence) are recorded and its
 * teardown begins, checkpoint protocol included (DESIGN §5). */
void gq_life_preempt(const struct gq_life_in *in, const char *cause,
                     const char *why, struct gq_life_out *out);

/* Begins the teardown td (why: the sentence) of an admitted job; nothing
 * if it is tearing down already. */
void gq_life_teardown(const struct gq_life_in *in, enum cj_td td,
                      const char *why, struct gq_life_out *out);

/* The deadline tick of an admitted job (in->job.state CJ_ACTIVE): the
 * drainPolicy Wait bookkeeping (needs in->spec when job.drain_wait, and
 * in->cordoned), then activeDeadlineSeconds and startupTimeoutSeconds
 * (virtual time). A teardown that is due is returned in out->due (the
 * driver begins it with the pods in view); *next_ms gets the next
 * deadline (virtual ms) if earlier. */
void gq_life_tick(const struct gq_life_in *in, struct gq_life_out *out,
                  int64_t *next_ms);

/* A pod event of the job: the first stop of a pod of its running attempt
 * is the cause of its disruption, and the checkpoint location replica 0
 * writes to its termination message ("checkpoint=<location>") becomes
 * its checkpoint (DESIGN §5). */
void gq_life_pod_seen(const struct gq_life_in *in,
                      const struct gq_life_podev *ev,
                      struct gq_life_out *out);

/* 1 while the job's attempt is pinned to the team, GPUs and replicas it
 * was admitted with: it holds an admission or the node array of its
 * attempt (an edit of the spec waits for the next attempt). */
int gq_life_pinned(const struct gq_life_job *j);

/* 1 if GQ_LIFE_DELETE_PODS deletes pod p: it holds resources and is not
 * being deleted already. */
int gq_life_pod_deletable(const struct gq_life_pod *p);

/* 1 if pod p of a running attempt could not run where gpuq placed it: the
 * pinned pod Unschedulable, or rejected by its kubelet. */
int gq_life_pod_miss(const struct gq_life_pod *p);

/* The status reason that records a teardown of kind td before any of its
 * pods is deleted (ReplicaFailed, StartupTimeout, DeadlineExceeded: the
 * kinds a restarted controller could not tell from a disruption once the
 * pods are gone), or NULL for the kinds that need no record. Static. */
const char *gq_life_td_record(enum cj_td td);

/* The virtual ms at which a terminating pod on a NotReady node is
 * force-deleted: notready_timeout_s after its node's Ready condition
 * changed (since_ms; 0 unknown: after its deletion began). */
int64_t gq_life_force_at(int64_t since_ms, int64_t deletion_ms,
                         int64_t notready_timeout_s);

#endif
