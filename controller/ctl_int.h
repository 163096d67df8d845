/* controller/ctl_int.h - the controller's state, shared by its files:
 *   ctl.c     informers, the job cache, the Redis link, lifecycle;
 *   jobs.c    each job's reconcile: pods, teardown, finishing, deletion;
 *   admit.c   the admission pass (decide over a snapshot, then act);
 *   status.c  status and events: coalesced writes, positions, TeamQuotas.
 * Not a public interface: controller/ctl.h is.
 */
#ifndef GQ_CONTROLLER_CTL_INT_H
#define GQ_CONTROLLER_CTL_INT_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <uthash.h>
#include <utlist.h>
#include <uv.h>

#include "api/client.h"
#include "api/gpujob.h"
#include "api/informer.h"
#include "api/leader.h"
#include "api/pod.h"
#include "api/teamquota.h"
#include "decide/assign.h"
#include "controller/ctl.h"
#include "controller/metrics.h"
#include "decide/snapshot.h"
#include "queue/queue.h"

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

struct ctl;

/* One GpuJob, by uid. Holds no pointer into informer stores (they change
 * under it); the decoded job is looked up by key when needed. Kept small
 * (one per queued job: bench/README.md, e2e): its names share one block,
 * team, cohort and flavor point at interned strings (ctl_intern), the
 * reason at a static string. */
struct cjob {
  char *key;   /* "namespace/name"; the block ns, name and uid are in */
  const char *ns, *name, *uid;
  const char *team;   /* interned; "" until known */
  const char *cohort; /* of its team when queued/admitted ("" = none) */
  enum cj_state state;
  enum cj_td td;
  /* on c->active (a utlist list) since it last became CJ_ACTIVE; the
   * tick drops it once it is in another state (ctl_active) */
  struct cjob *act_prev, *act_next;
  int32_t priority;  /* effective (PriorityClass value when named) */
  int32_t replicas;
  int64_t gpus;
  int64_t expected_s; /* expectedDurationSeconds or -1 */
  int64_t deadline_s, startup_s; /* activeDeadlineSeconds and
                                    startupTimeoutSeconds, or -1 (none) */
  uint32_t shape;     /* hash of what placement looks at */
  int32_t qprio;      /* priority it was queued with */
  int64_t queued_ms, admitted_ms, start_ms, completion_ms, first_start_ms;
  int64_t attempt;   /* the current (or last) pod generation */
  int64_t failures;
  int64_t preemptions;
  int64_t eta_ms;    /* -1 unknown */
  int64_t position;  /* 1-based in its team, 0 when not queued */
  int32_t adm_prio;  /* the priority it is counted at in t->adm_prio */
  int creates_left;  /* pod creates in flight */
  const char *flavor; /* ledger key of the admission (interned) */
  char **nodes;      /* replicas entries while admitted (owned) */
  enum gq_job_phase phase; /* the phase gpuq shows */
  int victims_left;  /* a preemptor: victims still tearing down */
  char **pods;       /* keys of the pods labelled with its uid (owned) */
  size_t n_pods;
  int64_t td_sent_ms; /* when pod deletions were last sent (real ms) */
  int64_t pass_ms;   /* real ms of the pass that admitted it */
  const char *reason; /* static storage (status_set) */
  const char *message; /* a reference to a shared string (gq_intern) */
  struct cjob *snext; /* next in its status write lane (sq) */
  struct cteam *t;   /* its team's queue while CJ_QUEUED */
  struct cjob *dnext; /* next on the dirty list */
  /* checkpoints and disruptions (DESIGN §5, disrupt.c) */
  char *ckpt;           /* status.lastCheckpoint.location (owned), or NULL */
  int64_t ckpt_ms;      /* its time (virtual ms) */
  int64_t ckpt_attempt; /* the attempt that wrote it; 0 = read from status */
  int64_t td_ms;        /* virtual ms the current teardown began */
  const char *cause;    /* why: DisruptionTarget reason, or gpuq's own
                           (gq_intern: one reference), or NULL */
  char *cause_msg;      /* the sentence saying so (owned) */
  int64_t cause_grace_s; /* grace period the disrupting pod got; -1 unknown */
  /* priority preemption and reclaim (DESIGN §4, admit.c) */
  char *preemptor;      /* a victim: the uid of the job it makes room for */
  char **resv_nodes;    /* a preemptor: the nodes reserved for its
                           replicas (owned, NULL-terminated), or NULL */
  int64_t preempt_ms;   /* real ms of its last victim search */
  int64_t cordon_ms;    /* drainPolicy Wait: virtual ms its node was first
                           seen cordoned, 0 = not cordoned */
  /* flags (0 or 1), one byte each: one record per queued job */
  unsigned char gone;       /* the GpuJob object was deleted */
  unsigned char drain_wait; /* spec.drainPolicy is Wait (the tick then needs
                               the spec; for every other job it uses the
                               values above) */
  unsigned char has_adm;    /* counted in its team's use */
  unsigned char running;    /* every replica Running */
  unsigned char adopted;    /* state read back from status and pods */
  unsigned char status_inflight, status_again;
  unsigned char sq;         /* in a status write lane: 1 urgent, 2 background */
  unsigned char dirty;      /* on the dirty list */
  unsigned char preempted;  /* disrupted and not running again yet */
  unsigned char pdb;        /* its PodDisruptionBudget was created */
  unsigned char edit_told;  /* a SpecChangeDeferred event was sent for this
                               attempt (jobs.c refresh) */
  UT_hash_handle hh;
};

/* One team's use of one flavor key. */
struct cuse {
  char key[GQ_FLAVOR_KEY_MAX];
  int64_t gpus;
};

/* A count of a team's admitted jobs at one priority. */
struct cprio {
  int32_t prio;
  int64_t n;
};

/* One team: its queue (sorted) and its admitted use, by team name. A team
 * exists as soon as a job names it, TeamQuota or not. */
struct cteam {
  char *name;
  char cohort[254];     /* from its TeamQuota ("" = none) */
  struct cjob **q;      /* queued jobs, in queue order */
  size_t n, cap;
  struct cuse *use;
  size_t n_use;
  int64_t pending_gpus;
  int64_t admitted_jobs; /* jobs holding an admission */
  /* how many of them hold it at each priority (distinct values, any
   * order): lets admit.c tell in O(priorities) whether a lower-priority
   * job of the team could be a victim (jobs_use keeps it) */
  struct cprio *adm_prio;
  size_t n_adm_prio;
  int qs_inflight;       /* a TeamQuota status patch is in flight */
  json_t *qs_sent;       /* the status last sent (until the informer shows
                            it, the same is not sent again); owned */
  int64_t qs_ms;         /* real ms it was sent */
  int64_t qs_check_ms;   /* real ms it was last computed and found unchanged */
  UT_hash_handle hh;
};

/* One cohort's Redis link state (a team without a cohort is its own). */
struct ccohort {
  char *name;         /* the cohort, or "~team" for a team without one */
  char redis_cohort[254]; /* what queue/ functions take ("" = lone team) */
  long long ver;      /* predicted ledger version after what was sent */
  int inflight;       /* admits and releases in flight */
  int rebuilt;        /* ledger rebuilt since Redis (re)connected */
  int rebuilding;
  UT_hash_handle hh;
};

/* A pod gpuq created (or is creating) that the pod informer has not
 * shown yet: it is committed to the snapshot as if bound. */
struct gq_cap_assumed {
  char *key; /* "ns/name" of the pod */
  char *node;
  struct gq_podsched req;
  UT_hash_handle hh;
};

/* A pod that holds resources on a node, as the capacity snapshot counts
 * it (owned copies: the informer replaces its pods on every update). */
struct gq_cap_pod {
  char *key;      /* "ns/name" */
  char *node;
  char *job_uid;  /* gpuq's pods: the GpuJob's uid; NULL otherwise */
  struct gq_podsched req; /* owned requests (jobs_copy_request) */
  int64_t deletion_ms, grace_s;
  int committed;  /* counted in ctl.snap */
  int forced;     /* force-deleted (disrupt.c) */
  UT_hash_handle hh;
};

/* A node reported as having lost GPUs (Ready, allocatable < capacity). */
struct clost {
  char *name;
  UT_hash_handle hh;
};

/* An event waiting for its write (bounded queue, status.c). */
struct cevent {
  char *uid, *type, *reason, *msg;
  struct cevent *next;
};

/* An interned string (ctl_intern). */
struct cstr {
  UT_hash_handle hh;
  char s[];
};
#define CTL_FREES_MAX 4096 /* frees remembered for the refill latency */

struct ctl {
  uv_loop_t *loop;
  struct cstr *strs;         /* interned team, cohort and flavor names */
  struct gq_ctl_opts o;
  struct gq_kclient *kc;
  struct gq_rq *rq;
  struct gq_queue q;
  struct gq_informer *inf_jobs, *inf_quotas, *inf_nodes, *inf_pods,
      *inf_pcs, *inf_pdbs;
  struct gq_leader *leader;
  struct gq_metrics *metrics;
  struct cjob *jobs;         /* by uid */
  struct cjob *active;       /* admitted jobs for the tick (ctl_active) */
  struct cteam *teams;       /* by name */
  struct ccohort *cohorts;   /* by name */
  struct gq_cap_assumed *assumed;  /* by pod key */
  struct cjob *dirty;        /* jobs to reconcile in the next pass */
  struct clost *lost;        /* nodes reported with lost GPUs */
  /* the capacity snapshot, kept up to date by pod events and assumptions,
   * rebuilt from the nodes when a node changes (admit.c) */
  struct gq_snapshot snap;
  const struct gq_node **snap_nodes;
  int snap_valid;
  struct gq_cap_pod *held;         /* pods holding resources, by key */
  struct cjob **preemptors;  /* jobs with resv_nodes (admit.c) */
  size_t n_preemptors;
  struct cjob **draining;    /* jobs in Preempting (disrupt.c) */
  size_t n_draining;
  /* status writes: two FIFO lanes (urgent: jobs that hold or finish;
   * background: queued jobs' positions), at most a few in flight so that
   * pod creates never wait behind them and changes coalesce meanwhile */
  struct cjob *sq_head[2], *sq_tail[2];
  unsigned s_inflight;
  struct cevent *ev_head, *ev_tail;
  unsigned ev_n, ev_inflight;
  int64_t pos_ms;            /* real ms of the last top-positions refresh */
  int leading, stopping, redis_ready, synced;
  int backend_down_shown; /* queued jobs show QueueBackendUnavailable */
  int pass_scheduled;
  int64_t stop_ms;          /* real ms when the graceful stop began */
  int64_t last_arrival_ms;   /* last GpuJob arrival stamp (job_for) */
  unsigned inflight;         /* API and Redis writes in flight */
  uv_timer_t pass_timer, tick_timer, sweep_timer, stop_timer, audit_timer;
  size_t sweep_cursor;
  void (*on_stopped)(void *arg);
  void *stopped_arg;
  /* metrics */
  struct gq_metric *m_pending, *m_admitted_gpus, *m_nominal, *m_borrowed,
      *m_wait, *m_adm_latency, *m_gpu_seconds, *m_api_errors, *m_redis_errors,
      *m_drift, *m_frag, *m_lost_nodes, *m_admissions, *m_passes;
  struct gq_metric *m_preemptions, *m_ckpt_duration, *m_lost_gpu_s,
      *m_resumes; /* disrupt.c */
  struct gq_metric *m_leader, *m_redis_up; /* 0/1 gauges for alerts */
  int64_t frag_gpus;
  /* frees (real ms when a pod ended) not yet answered by a pod create,
   * oldest first (a ring): gpuq_freed_to_create_seconds */
  int64_t frees[CTL_FREES_MAX];
  size_t frees_head, frees_n;
  unsigned creating;         /* pod creates in flight */
  int closing;               /* timers still closing at stop */
  int64_t tick_ms;           /* virtual ms of the last deadline tick */
  struct gq_metric *m_freed_to_create;
  int64_t trim_ms;           /* mono ms of the last heap trim (ctl.c) */
  int tick_due;
};

/* How the controller's writes queue in its API client (api/client.h):
 * writes that start or stop work (pods, Services, finalizers) go first,
 * reports (status, events, TeamQuota status) last; none of these callers
 * reads the body of a success. */
#define CTL_WORK (&(const struct gq_kclient_call){GQ_KPRIO_HIGH, 1, NULL})
#define CTL_REPORT (&(const struct gq_kclient_call){GQ_KPRIO_LOW, 1, NULL})

/* ctl.c */
/* metadata.<k> of an object as a string, "" when absent (borrowed). */
const char *gq_meta_str(const json_t *o, const char *k);
void ctl_schedule_pass(struct ctl *c);
struct cjob *ctl_job(struct ctl *c, const char *uid);
/* Sets cj->state to CJ_ACTIVE and puts cj on c->active if it is not
 * there, so that the deadline tick walks the admitted jobs, not every job
 * the controller knows (most of them done at 100k jobs). */
void ctl_active(struct ctl *c, struct cjob *cj);
/* Takes cj off c->active (no-op if it is not on it). */
void ctl_active_del(struct ctl *c, struct cjob *cj);
/* A new job record for (uid, ns, name), added to c->jobs. */
struct cjob *ctl_job_new(struct ctl *c, const char *uid, const char *ns,
                         const char *name);
/* The stored GpuJob of cj (borrowed, valid until the informer's next
 * change), or NULL when it is gone: ctl_job_obj() also returns an invalid
 * one (j->invalid set), ctl_job_spec() only a valid one. */
const struct gq_gpujob *ctl_job_obj(struct ctl *c, const struct cjob *cj);
/* Puts cj (may be NULL: no-op) on the dirty list for the next pass. */
void ctl_mark(struct ctl *c, struct cjob *cj);
const struct gq_gpujob *ctl_job_spec(struct ctl *c, const struct cjob *cj);
/* Returns a copy of s that lives as long as c (equal strings share one). */
const char *ctl_intern(struct ctl *c, const char *s);
const struct gq_teamquota *ctl_quota(struct ctl *c, const char *team);
struct cteam *ctl_team(struct ctl *c, const char *name);
struct ccohort *ctl_cohort(struct ctl *c, const char *team_cohort,
                           const char *team);
int ctl_acting(const struct ctl *c);
void ctl_write_begin(struct ctl *c);
void ctl_write_end(struct ctl *c);
void ctl_api_error(struct ctl *c, const char *verb, const char *what, int rc,
                   const struct gq_k8s_status *st);
/* A pod create went on the wire (api/client.h's sent hook): observes the
 * time since the oldest unanswered free in gpuq_freed_to_create_seconds and
 * drops it (nothing if no free waits). */
void ctl_refilled(struct ctl *c);

/* jobs.c */
void jobs_reconcile(struct ctl *c, struct cjob *cj);
void jobs_queue_add(struct ctl *c, struct cjob *cj);
void jobs_queue_del(struct ctl *c, struct cjob *cj);
void jobs_use(struct ctl *c, struct cjob *cj, int sign);
void jobs_create_pods(struct ctl *c, struct cjob *cj);
void jobs_tick(struct ctl *c, int64_t now_ms, int64_t *next_ms);
void jobs_forget(struct ctl *c, struct cjob *cj);
/* The status reason that records a teardown of kind td before any of its
 * pods is deleted (ReplicaFailed, StartupTimeout, DeadlineExceeded: the
 * kinds a restarted controller could not tell from a disruption once the
 * pods are gone), or NULL for the kinds that need no record (a disruption
 * and a placement miss are what a restart assumes; suspend and delete are
 * in the spec and metadata). Static string. */
const char *jobs_td_record(enum cj_td td);
/* Disrupts running job cj on gpuq's own initiative: the checkpoint
 * protocol of a disruption (DESIGN §5), with cause (PreemptedByPriority,
 * QuotaReclaim, NodeRemoval) and why (a sentence). by: the job it makes
 * room for (DESIGN §4), or NULL. */
void jobs_preempt(struct ctl *c, struct cjob *cj, struct cjob *by,
                  const char *cause, const char *why);
/* Copies the requests of r into out with names owned; free with
 * gq_capacity_request_free(). */
void gq_capacity_request_copy(const struct gq_podsched *r, struct gq_podsched *out);
/* Frees the owned requests of an assumed pod. */
void gq_capacity_request_free(struct gq_podsched *req);
void jobs_pod_seen(struct ctl *c, const json_t *pod, int present);
void jobs_assume(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j);
void jobs_unassume(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j);

/* disrupt.c: the checkpoint protocol on disruptions (DESIGN §5) */
/* Registers the preemption metrics on c->metrics (gq_ctl_new). */
void disrupt_init(struct ctl *c);
/* A node changed: the gpuq jobs with pods on it are checkpointed and
 * requeued at once if it carries a node-removal taint (c->o.drain_taints)
 * or a NoExecute taint their pods do not tolerate (DESIGN §5). */
void disrupt_node(struct ctl *c, const struct gq_node *n);
/* Reads a checkpoint location from the termination message of a pod of
 * cj (pod: its JSON, borrowed; also its last state when it is deleted). */
void disrupt_pod_seen(struct ctl *c, struct cjob *cj, const json_t *pod);
/* Fills cj->cause and cause_msg from the pods that disrupted cj; writes
 * the sentence for the teardown into why (len bytes). */
void disrupt_describe(struct ctl *c, struct cjob *cj, char *why, size_t len);
/* A disruption's teardown begins: events, conditions, timing. */
void disrupt_begin(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j);
/* Every pod of a disrupted attempt is gone: counts it, says which
 * checkpoint the next attempt resumes from. */
void disrupt_done(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j);
/* The pods of a new attempt are being created: a resume, if cj has a
 * checkpoint (event and metric). */
void disrupt_resume(struct ctl *c, struct cjob *cj);
/* Sets why cj is being disrupted (cause: a CamelCase reason; msg: the
 * sentence), before the teardown that follows. */
void disrupt_cause(struct cjob *cj, const char *cause, const char *msg);
/* A victim's teardown is over (or it is forgotten): its preemptor has one
 * victim less to wait for. */
void disrupt_victim_done(struct ctl *c, struct cjob *cj);
/* drainPolicy Wait (DESIGN §5): creates (create 1) the job's
 * PodDisruptionBudget, or deletes it (0) once the job is finished. */
void disrupt_pdb(struct ctl *c, struct cjob *cj, int create);
/* drainPolicy Wait: a running job whose node has been cordoned for
 * --drain-wait is checkpointed (returns 1); else *next_ms gets the
 * deadline (virtual ms) if earlier. */
int disrupt_wait_tick(struct ctl *c, struct cjob *cj,
                      const struct gq_gpujob *j, int64_t now_ms,
                      int64_t *next_ms);
/* Force-deletes gpuq's terminating pods on nodes NotReady for longer
 * than --notready-timeout (DESIGN §5); *next_ms gets the next deadline
 * (virtual ms) if earlier. */
void disrupt_force_tick(struct ctl *c, int64_t now_ms, int64_t *next_ms);
/* Takes cj off c->draining (its pods are gone, or it is freed). */
void disrupt_unlist(struct ctl *c, struct cjob *cj);
/* Frees what disrupt.c keeps in cj. */
void disrupt_forget(struct cjob *cj);

/* admit.c */
void admit_pass(struct ctl *c);
void admit_pod(struct ctl *c, const char *key, const struct gq_pod *pod);
void admit_nodes_changed(struct ctl *c);
void admit_commit(struct ctl *c, const char *node,
                  const struct gq_podsched *req, int sign);
void admit_free(struct ctl *c);
/* Drops the GPUs reserved for preemptor cj (admitted, gone, or its victims
 * are gone); no-op without a reservation. */
void admit_unreserve(struct ctl *c, struct cjob *cj);

/* status.c */
/* Sets the reason (a string of static storage duration: cj keeps the
 * pointer) and the formatted message gpuq shows for cj. */
void status_set(struct cjob *cj, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void status_flush(struct ctl *c, struct cjob *cj);
void status_event(struct ctl *c, struct cjob *cj, const char *type,
                  const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void status_positions(struct ctl *c, struct cteam *t, size_t upto);
void status_sweep(struct ctl *c);
void status_quotas(struct ctl *c);
void status_metrics(struct ctl *c);
void status_node(struct ctl *c, const json_t *obj, const struct gq_node *n);
void status_free(struct ctl *c);
void status_forget(struct ctl *c, struct cjob *cj);
void status_drop_events(struct ctl *c);
void status_finalizer(struct ctl *c, struct cjob *cj,
                      const struct gq_gpujob *j, int add);

#endif
