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
#include "decide/capacity.h"
#include "decide/lifecycle.h"
#include "base/backoff.h"
#include "decide/snapshot.h"
#include "decide/usage.h"
#include "queue/queue.h"

/* enum cj_state (where a job stands) and enum cj_td (why a gang is torn
 * down) are the lifecycle's: decide/lifecycle.h. */

struct ctl;

/* A key waiting out its backoff: held by uid, not by record, so that a
 * job freed meanwhile is simply not found when it is due. */
struct wq_later {
  char *uid;
  int64_t due_ms; /* real (monotonic) ms */
};

/* Allocated against used GPUs of one job that has run (usage.c; NULL in
 * cjob until then: most queued jobs never need it). */
struct cjob_use {
  struct gq_usage u;     /* GPU-seconds, readings (decide/usage.h) */
  const char *product;   /* GPU product of its nodes (interned), or NULL */
  double counted_s;      /* used_s already in gpuq_used_gpu_seconds_total */
  int pct;               /* window mean (percent), -1 unknown */
  int64_t pct_ms;        /* virtual ms of the last reading, 0 none */
  int idle;              /* the Idle condition is True */
  int dirty;             /* its status needs writing: 1 its usage figures
                            (status_refresh), 2 a condition (status_flush) */
  int polls;             /* polls since its usage was last written */
  int64_t refresh_ms;    /* without Prometheus: when its status is looked
                            at again (virtual ms; usage.c refresh_tick) */
};

/* What status.c writes of a job's usage (usage_status). */
struct usage_view {
  int has;               /* the job has run: the GPU-seconds fields */
  const char *product;
  int64_t alloc_s, used_s, idle_s;
  int pct;               /* -1: absent */
  int64_t pct_ms;
  int cond;              /* the Idle condition is written */
  const char *cond_status, *cond_reason;
  char cond_msg[600];
};

/* The taint gpuq puts on a node whose GPU reported an XID error. */
#define GQ_TAINT_GPU_UNHEALTHY "gpuq.dev/gpu-unhealthy"

struct chealth;

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
  struct cjob *sprev, *snext; /* in its status write lane (sq; utlist) */
  struct cteam *t;   /* its team's queue while CJ_QUEUED */
  struct cjob *wq_prev, *wq_next; /* in the work queue (wq.c) */
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
  /* attained service (decide/las.h; the lifecycle keeps the first three):
   * GPU-seconds of its ended attempts, its last attempt's run and when it
   * was requeued (virtual ms), and its level while queued */
  int64_t service_s, last_run_ms, requeued_ms;
  int level;
  struct cjob_use *use; /* allocated against used GPUs (usage.c) */
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
  unsigned char sq;         /* in status write lane sq - 1 (0: none) */
  unsigned char wl;         /* enum gq_wl_kind of its GpuJob: what a
                               stand-in queues (workload.c) */
  unsigned char dirty;      /* marked: in the work queue, or to be queued
                               again once processed (wq.c) */
  unsigned char processing; /* being reconciled now (wq.c) */
  unsigned char wq_fails;   /* errors in a row: the backoff's exponent */
  unsigned char preempted;  /* disrupted and not running again yet */
  unsigned char pdb;        /* its PodDisruptionBudget was created */
  unsigned char use_claimed; /* a waiting job an idle one is preempted
                               for in this poll (usage.c) */
  unsigned char adm_ckpt;   /* counted in its team's adm_ckpt (it could
                               resume from a checkpoint when admitted) */
  unsigned char edit_told;  /* a SpecChangeDeferred event was sent for this
                               attempt (decide/lifecycle.c spec_edit) */
  unsigned char create_pending; /* Redis admitted the attempt (admit.c
                               admitted), its pods are not created yet: the
                               next reconcile creates them (state stays
                               CJ_ADMITTING until then, so the attempt is
                               not published, DESIGN §3) */
  unsigned char create_miss; /* enum gq_life_miss: a pod create of the
                               attempt failed, or its node was gone
                               (jobs.c); the reconcile tears it down */
  char *adm_event;          /* while create_pending: the Admitted event's
                               message (owned) */
  /* Writes computed from the cached object wait until the informer shows
   * the result of the job's last one (status.c status_wrote): the
   * resourceVersion its answer carried (owned) and when it came (real
   * ms), NULL once the informer has shown it. */
  char *wrote_rv;
  int64_t wrote_ms;
  unsigned char status_wait; /* a status write waits for wrote_rv */
  unsigned char fin_inflight; /* a finalizer patch is in flight */
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
  /* admitted jobs that can resume from a checkpoint (spec.checkpoint,
   * drainPolicy not Wait): without one, no demotion search (admit.c) */
  int64_t adm_ckpt;
  /* fair share over time (las.c): its decayed usage (GPU-seconds) as of
   * hist_ms (virtual), loaded from Redis once (hist_loaded) */
  double hist_gpu_s;
  int64_t hist_ms;
  int hist_loaded;
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

/* The status write lanes (status.c), taken in this order. */
enum ctl_lane {
  CTL_LANE_FINAL,   /* jobs that ended: Succeeded or Failed, what users
                       and pipelines wait on; their own in-flight budget
                       and NORMAL priority on the API client (CTL_FINAL) */
  CTL_LANE_URGENT,  /* jobs that hold GPUs: phase changes */
  CTL_LANE_QUEUED,  /* queued jobs: reasons and queue positions */
  CTL_LANE_REFRESH, /* usage figures alone (status_refresh) */
  CTL_LANES
};

struct ctl {
  uv_loop_t *loop;
  struct cstr *strs;         /* interned team, cohort and flavor names */
  struct gq_ctl_opts o;
  struct gq_kclient *kc;
  struct gq_rq *rq;
  struct gq_queue q;
  struct gq_informer *inf_jobs, *inf_quotas, *inf_nodes, *inf_pods,
      *inf_pcs, *inf_pdbs;
  struct gq_informer *inf_batch; /* batch/v1 Jobs (workload.c) */
  struct cstr *wl_creating;  /* keys of workload stand-ins being created
                                (workload.c) */
  struct gq_leader *leader;
  struct gq_metrics *metrics;
  struct cjob *jobs;         /* by uid */
  struct cjob *active;       /* admitted jobs for the tick (ctl_active) */
  struct cteam *teams;       /* by name */
  struct ccohort *cohorts;   /* by name */
  /* the work queue (wq.c): marked jobs in order, the one being
   * processed, and keys waiting out an error's backoff */
  struct cjob *wq_head, *wq_cur;
  size_t wq_len;
  struct wq_later *later;
  size_t n_later;
  uv_timer_t wq_timer;
  uv_timer_cb pass_cb;       /* what a scheduled pass runs (ctl.c) */
  struct clost *lost;        /* nodes reported with lost GPUs */
  /* held and assumed pods and the capacity snapshot, kept up to date by
   * pod events and assumptions, rebuilt from the nodes when a node
   * changes (decide/capacity.h) */
  struct gq_capacity cap;
  struct cjob **preemptors;  /* jobs with resv_nodes (admit.c) */
  size_t n_preemptors;
  struct cjob **draining;    /* jobs in Preempting (disrupt.c) */
  size_t n_draining;
  /* status writes: FIFO lanes taken in order (enum ctl_lane), at most a
   * few in flight so that pod creates never wait behind them and changes
   * coalesce meanwhile */
  struct cjob *sq[CTL_LANES];
  size_t status_waiting; /* jobs whose status write waits (status_seen) */
  unsigned s_inflight, s_inflight_final; /* status writes in flight: of
                                            jobs that ended, of the rest */
  struct cevent *ev_head, *ev_tail;
  unsigned ev_n, ev_inflight;
  int64_t pos_ms;            /* real ms of the last top-positions refresh */
  int64_t pass_ms;           /* mono ms of the last admission pass (ctl.c) */
  int64_t fair_save_ms;      /* mono ms the fair-share history was saved */
  int settled;               /* the work queue has been empty once since
                                acting began: passes may then run between
                                batches (ctl.c run_pass) */
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
  struct gq_metric *m_workloads; /* by team, kind and state (status.c) */
  struct gq_metric *m_hist;      /* usage history by team (las.c) */
  int64_t frag_gpus;
  /* frees (real ms when a pod ended) not yet answered by a pod create,
   * oldest first (a ring): gpuq_freed_to_create_seconds */
  int64_t frees[CTL_FREES_MAX];
  size_t frees_head, frees_n;
  unsigned creating;         /* pod creates in flight */
  int closing;               /* timers still closing at stop */
  int64_t tick_ms;           /* virtual ms of the last deadline tick */
  struct gq_metric *m_freed_to_create;
  struct gq_metric *m_node_free; /* gpuq_node_free_gpus (status.c) */
  int64_t trim_ms;           /* mono ms of the last heap trim (ctl.c) */
  int tick_due;
  /* allocated against used GPUs, GPU health (usage.c) */
  struct gq_prom *prom;      /* NULL without --prometheus-url */
  uv_timer_t util_timer;
  int util_inflight, prom_up, health_adopted;
  char prom_err[400];        /* why the last query failed ("" if it did not) */
  struct gq_backoff prom_bo;
  struct chealth *health;    /* nodes that reported XID errors */
  struct cjob **claimed;     /* waiting jobs claimed in this poll */
  size_t n_claimed;
  struct gq_metric *m_used_gpu_s, *m_idle_gpus, *m_prom_up;
};

/* How the controller's writes queue in its API client (api/client.h):
 * writes that start or stop work (pods, Services, finalizers) go first,
 * reports (status, events, TeamQuota status) last; none of these callers
 * reads the body of a success, but a GpuJob's own writes (the _JOB forms)
 * read its resourceVersion (status.c status_wrote; managedFields are cut
 * before parsing). */
#define CTL_WORK (&(const struct gq_kclient_call){GQ_KPRIO_HIGH, 1, NULL, 0})
#define CTL_REPORT (&(const struct gq_kclient_call){GQ_KPRIO_LOW, 1, NULL, 0})
#define CTL_WORK_JOB \
  (&(const struct gq_kclient_call){GQ_KPRIO_HIGH, 0, NULL, 1})
#define CTL_REPORT_JOB \
  (&(const struct gq_kclient_call){GQ_KPRIO_LOW, 0, NULL, 1})
/* A job's final status (Succeeded, Failed): ahead of the other reports,
 * which wait for the API client's token bucket to hold a tenth of its
 * burst while pod writes drain it (api/client.h), behind pod writes. */
#define CTL_FINAL (&(const struct gq_kclient_call){GQ_KPRIO_NORMAL, 1, NULL, 0})

/* store.c: the records and their lookups (no I/O) */
/* The job record of uid, or NULL (borrowed: freed by jobs_forget). */
struct cjob *ctl_job(struct ctl *c, const char *uid);
/* A new job record for (uid, ns, name) (copied), added to c->jobs; the
 * controller owns it (jobs_forget frees it). */
struct cjob *ctl_job_new(struct ctl *c, const char *uid, const char *ns,
                         const char *name);
/* Sets cj->state to CJ_ACTIVE and puts cj on c->active if it is not
 * there, so that the deadline tick walks the admitted jobs, not every job
 * the controller knows (most of them done at 100k jobs). */
void ctl_active(struct ctl *c, struct cjob *cj);
/* Takes cj off c->active (no-op if it is not on it). */
void ctl_active_del(struct ctl *c, struct cjob *cj);
/* The stored GpuJob of cj (borrowed, valid until the informer's next
 * change), or NULL when it is gone: ctl_job_obj() also returns an invalid
 * one (j->invalid set), ctl_job_spec() only a valid one. */
const struct gq_gpujob *ctl_job_obj(struct ctl *c, const struct cjob *cj);
const struct gq_gpujob *ctl_job_spec(struct ctl *c, const struct cjob *cj);
/* Returns a copy of s that lives as long as c (equal strings share one). */
const char *ctl_intern(struct ctl *c, const char *s);
/* The decoded TeamQuota named team (borrowed from the informer, valid
 * until its next change), or NULL. */
const struct gq_teamquota *ctl_quota(struct ctl *c, const char *team);
/* The team record of name, created empty if there is none (a team exists
 * as soon as a job names it). Borrowed: lives as long as c. */
struct cteam *ctl_team(struct ctl *c, const char *name);
/* The cohort record of a team: its cohort (team_cohort, may be NULL or
 * ""), or "~team" for a team without one; created if new. Borrowed. */
struct ccohort *ctl_cohort(struct ctl *c, const char *team_cohort,
                           const char *team);
/* 1 while this controller acts: caches synced, not stopping, and leading
 * (or without leader election). */
int ctl_acting(const struct ctl *c);
/* Counts an API or Redis write in flight (the graceful stop waits for
 * them): begin before sending, end in its callback. */
void ctl_write_begin(struct ctl *c);
void ctl_write_end(struct ctl *c);
/* Counts and logs (rate-limited) a failed API request: verb ("create"),
 * what ("pod"), rc (GQ_E*), st (the server's Status, may be NULL). */
void ctl_api_error(struct ctl *c, const char *verb, const char *what, int rc,
                   const struct gq_k8s_status *st);
/* The capacity key ("ns/name", at most len bytes) of replica r of
 * attempt 'attempt' of cj, whose GpuJob is j: the pod gpuq creates for it
 * (gq_podspec_pod_name), the user's pod of a Pod or PodGroup stand-in
 * (spec.workload.pods[r]), or for a Job stand-in a name no pod has (its
 * pods' names are its Job controller's: the assumption is dropped as
 * they appear, workload_pod_of_attempt). */
void jobs_replica_key(const struct cjob *cj, const struct gq_gpujob *j,
                      int64_t attempt, int32_t r, char *key, size_t len);
/* Inserts cj into its team's in-memory queue at its place (priority,
 * cj->level as the caller set it, queue time, uid: decide/las.h
 * gq_qorder_before; without levels queue/queue.h's member order) and sets
 * it CJ_QUEUED with its team's cohort; no-op when it is queued. Redis is
 * the caller's. */
void store_queue_insert(struct ctl *c, struct cjob *cj);
/* Sorts t's queue again (after its jobs' levels changed). */
void store_queue_sort(struct cteam *t);
/* Takes cj out of its team's in-memory queue (Redis is told separately:
 * admitted jobs leave it in the admit script, deleted ones by remove). */
void jobs_queue_del(struct ctl *c, struct cjob *cj);
/* Counts one admitted job more (sign 1) or less (-1) at priority prio in
 * t->adm_prio; an entry that reaches 0 is dropped. */
void store_prio_count(struct cteam *t, int32_t prio, int sign);
/* Adds (sign 1) or removes (-1) cj's admission (cj->gpus under
 * cj->flavor) from its team's use; no-op if it already is (not) counted. */
void jobs_use(struct ctl *c, struct cjob *cj, int sign);
/* Assumes the pods of cj's current attempt on cj->nodes in the capacity
 * snapshot (client-go's scheduler "assume", decide/capacity.h), until
 * the pod informer shows them or their creation fails. */
void jobs_assume(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j);
/* Drops what jobs_assume() assumed (an admission that did not happen).
 * j is NULL when the GpuJob is gone: the pod names then come from cj. */
void jobs_unassume(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j);

/* A preemptor's reservation is over (it was admitted, is gone, or its
 * victims are gone): drops the GPUs reserved for cj (cj->resv_nodes) and
 * takes it off c->preemptors; no-op without a reservation. */
void store_unreserve(struct ctl *c, struct cjob *cj);
/* Capacity was freed (a pod of any workload finished or went): the
 * refill latency clock of gpuq_freed_to_create_seconds starts (the
 * oldest unanswered free is the one the next create answers; when the
 * ring of CTL_FREES_MAX is full the newest are not remembered). */
void store_freed(struct ctl *c);
/* A pod create went on the wire (api/client.h's sent hook): observes the
 * time since the oldest unanswered free in gpuq_freed_to_create_seconds and
 * drops it (nothing if no free waits). */
void ctl_refilled(struct ctl *c);

/* wq.c: the work queue of job keys, after client-go's util/workqueue:
 * fair (processed in the order marked) and stingy (a key marked several
 * times runs once; one marked while it is processed runs once more
 * afterwards), with a per-key exponential backoff for errors (5 ms
 * doubling, up to 328 s). The key is the job record; a record freed while
 * queued is taken out (wq_drop). */
/* Marks cj (may be NULL: no-op) for a reconcile and asks for a pass. */
void ctl_mark(struct ctl *c, struct cjob *cj);
/* Asks for a pass on the next loop turn (run_pass in ctl.c: the work
 * queue, the tick, the admission pass); no-op while stopping. */
void ctl_schedule_pass(struct ctl *c);
/* The next marked job, now being processed (NULL when none). Call
 * wq_done() after processing it. */
struct cjob *wq_pop(struct ctl *c);
/* cj's processing is over; if it was marked meanwhile it is queued
 * again. cj may have been freed meanwhile (only the pointer is compared). */
void wq_done(struct ctl *c, struct cjob *cj);
/* Marked jobs waiting to be processed. */
size_t wq_len(const struct ctl *c);
/* Marks cj again after its backoff (an error): 5 ms, then doubling for
 * each error in a row until wq_forget(). */
void wq_retry(struct ctl *c, struct cjob *cj);
/* cj succeeded: its next error starts the backoff from the beginning. */
void wq_forget(struct cjob *cj);
/* Takes cj out of the work queue (it is about to be freed). */
void wq_drop(struct ctl *c, struct cjob *cj);
/* Sets up the backoff timer on c->loop (gq_ctl_new) / frees what the
 * queue holds (at the end; the timer is closed by the caller). */
void wq_init(struct ctl *c);
void wq_free(struct ctl *c);

/* ledger.c: Redis's queues and ledger rebuilt from the objects, audited */
/* Makes sure every cohort with a TeamQuota has been rebuilt since Redis
 * (re)connected, starting the rebuilds that are due (not while a cohort
 * has admits or releases in flight). Returns 1 when all are rebuilt. */
int ledger_ready(struct ctl *c);
/* 1 while an admit or release script is in flight in some cohort. */
int ledger_admitting(const struct ctl *c);
/* Compares each idle cohort's ledger in Redis (one read) with the use the
 * controller counts; a difference marks the cohort for a rebuild (the
 * audit timer, every --audit-interval). */
void ledger_audit(struct ctl *c);

/* jobs.c */
/* Reconciles cj: builds its view, runs decide/lifecycle's transition and
 * applies its effects (until it asks for no further step). May free cj
 * (the GpuJob is gone and so are its pods). Called by the pass (ctl.c
 * run_pass) for marked jobs; callbacks mark (ctl_mark), never call it. */
void jobs_reconcile(struct ctl *c, struct cjob *cj);
/* Queues cj in its team's in-memory queue (store_queue_insert) and in
 * Redis (enqueue.lua, idempotent), unless its cohort's rebuild is still
 * to come (the rebuild writes it); no-op when it is queued. */
void jobs_queue_add(struct ctl *c, struct cjob *cj);
/* Sends the Service (replicas > 1) and pod creates of cj's admitted
 * attempt on cj->nodes, each pod assumed in the capacity snapshot until
 * the informer shows it; sets cj->creates_left. The lifecycle decides
 * when (GQ_LIFE_CREATE_PODS). A node that is gone sets cj->create_miss and
 * marks cj. */
void jobs_create_pods(struct ctl *c, struct cjob *cj);
/* The deadline tick over the admitted jobs (c->active): active
 * deadlines, startup timeouts, drainPolicy Wait's cordon wait and the
 * force-deletes of --notready-timeout (DESIGN §5), at now_ms (virtual);
 * *next_ms gets the earliest next deadline (virtual ms) if earlier than
 * its value (-1: none). Also counts gpuq_allocated_gpu_seconds_total. */
void jobs_tick(struct ctl *c, int64_t now_ms, int64_t *next_ms);
/* Frees cj (already out of c->jobs) and takes it out of every list that
 * names it (work queue, admitted list, status lanes, draining and
 * preemptor lists, its preemptor's victim count). */
void jobs_forget(struct ctl *c, struct cjob *cj);
/* gq_life_td_record(td) (decide/lifecycle.h): the status reason that
 * records a teardown of kind td before any of its pods is deleted
 * (ReplicaFailed, StartupTimeout, DeadlineExceeded: the kinds a restarted
 * controller could not tell from a disruption once the pods are gone), or
 * NULL for the kinds that need no record (a disruption and a placement
 * miss are what a restart assumes; suspend and delete are in the spec and
 * metadata). Static string. */
const char *jobs_td_record(enum cj_td td);
/* Disrupts running job cj on gpuq's own initiative: the checkpoint
 * protocol of a disruption (DESIGN §5), with cause (PreemptedByPriority,
 * QuotaReclaim, NodeRemoval) and why (a sentence). by: the job it makes
 * room for (DESIGN §4), or NULL. */
void jobs_preempt(struct ctl *c, struct cjob *cj, struct cjob *by,
                  const char *cause, const char *why);
/* The pod index: keeps the record of the job pod p names (label
 * gpuq.dev/job-uid) listing its pods, creating the record for a pod of a
 * job not seen yet, and passes the event to the lifecycle (the cause of a
 * disruption, the checkpoint). present 0: p is the pod's last state, it
 * is gone. p is borrowed. */
void jobs_pod_seen(struct ctl *c, const struct gq_pod *p, int present);
/* A node changed: the gpuq jobs with pods on it are checkpointed and
 * requeued at once if it carries a node-removal taint (c->o.drain_taints)
 * or a NoExecute taint their pods do not tolerate (DESIGN §5). */
void jobs_node_changed(struct ctl *c, const struct gq_node *n);
/* workload.c: pods, pod groups and batch/v1 Jobs gpuq did not create,
 * queued through GpuJob stand-ins (docs/integrations.md) */
/* A pod event (present 0: deleted; pod borrowed): a gated, managed pod is
 * queued (its group once whole) by creating its stand-in; a managed pod's
 * deletion marks its stand-in (workload_gc). */
void workload_pod_event(struct ctl *c, const json_t *pod, int present);
/* The same for a batch/v1 Job the webhook suspended. */
void workload_job_event(struct ctl *c, const json_t *job, int present);
/* Queues every waiting pod and Job (after the caches sync and when this
 * controller starts leading: what arrived while none acted). */
void workload_sync(struct ctl *c);
/* A replica's pod create (jobs.c) or its pod's admitting patch (here) of
 * pod_key, attempt 'attempt' of the job uid, was answered, ok 1 if it
 * took: counted off the attempt's creates in flight (a failure makes the
 * attempt a miss, which its reconcile tears down). Ends one
 * ctl_write_begin() and one c->creating. Strings borrowed. */
void workload_replica_done(struct ctl *c, const char *uid,
                           const char *pod_key, int64_t attempt, int ok);
/* GQ_LIFE_CREATE_PODS of a stand-in j: patches its pods (gates off, pins
 * on) or pins and unsuspends its Job. Sets cj->creates_left. */
void workload_admit(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j);
/* GQ_LIFE_DELETE_PODS of a Job stand-in j: the Job is suspended (its
 * controller deletes its pods) and its status.startTime cleared. */
void workload_stop(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j);
/* A new pod of cj's current attempt appeared: for a Job stand-in, one of
 * the attempt's creates is done and its assumption dropped. */
void workload_pod_of_attempt(struct ctl *c, struct cjob *cj,
                             const struct gq_gpujob *j);
/* The lifecycle's view of stand-in j: one_shot for pods, a Job's end. */
void workload_view(struct ctl *c, const struct gq_gpujob *j,
                   struct gq_life_spec *s);
/* 1 if pod p of stand-in j is left out of its lifecycle view: a Job's
 * finished pods (its Job controller replaces failed ones and counts
 * completions; the Job's own conditions end it). j may be NULL. */
int workload_pod_hidden(const struct gq_gpujob *j, const struct gq_pod *p);
/* Deletes stand-in j (cj its record) once its workload is gone and it
 * holds no admission. */
void workload_gc(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j);

/* disrupt.c: the checkpoint protocol on disruptions (DESIGN §5) */
/* Registers the preemption metrics on c->metrics (gq_ctl_new). */
void disrupt_init(struct ctl *c);
/* Reads pod event p (the decoded pod, borrowed; its last state when it is
 * deleted) into ev for gq_life_pod_seen(): labels, stop, grace, and the
 * terminated states of its containers, in buf (n entries) or, for a pod
 * with more containers, in an array the caller frees (ev->terms != buf).
 * ev's strings are borrowed from p. */
void disrupt_podev(const struct gq_pod *p, struct gq_life_podev *ev,
                   struct gq_life_term *buf, size_t n);
/* Sets why cj is being disrupted (cause: a CamelCase reason, interned;
 * msg: the sentence, copied), before the teardown that follows; cause
 * NULL clears the cause (msg unused; the sentence stays). */
void disrupt_cause(struct cjob *cj, const char *cause, const char *msg);
/* Sets cj's checkpoint: location loc (copied), its time at_ms (virtual
 * ms) and the attempt that wrote it (0 = read from the status). */
void disrupt_ckpt(struct cjob *cj, const char *loc, int64_t at_ms,
                  int64_t attempt);
/* Puts cj on c->draining (jobs in Preempting: capacity that frees is held
 * for the best waiting one of its team, admit.c). */
void disrupt_list(struct ctl *c, struct cjob *cj);
/* The preemption metrics of effect e (GQ_LIFE_M_*); other kinds: nothing. */
void disrupt_count(struct ctl *c, struct cjob *cj,
                   const struct gq_life_eff *e);
/* A victim's teardown is over (or it is forgotten): its preemptor has one
 * victim less to wait for. */
void disrupt_victim_done(struct ctl *c, struct cjob *cj);
/* drainPolicy Wait (DESIGN §5): creates (create 1) the job's
 * PodDisruptionBudget, or deletes it (0) once the job is finished. */
void disrupt_pdb(struct ctl *c, struct cjob *cj, int create);
/* Force-deletes gpuq's terminating pods on nodes NotReady for longer
 * than --notready-timeout (DESIGN §5); *next_ms gets the next deadline
 * (virtual ms) if earlier. */
void disrupt_force_tick(struct ctl *c, int64_t now_ms, int64_t *next_ms);
/* Takes cj off c->draining (its pods are gone, or it is freed). */
void disrupt_unlist(struct ctl *c, struct cjob *cj);
/* Frees what disrupt.c keeps in cj. */
void disrupt_forget(struct cjob *cj);

/* admit.c */
/* One admission pass over every rebuilt cohort: builds the pass's input
 * from the store and the capacity snapshot (rebuilt first if a node
 * changed), runs decide/'s pass and applies its plan (admit scripts,
 * preemptions, reservations, reasons); refreshes the first queue
 * positions at most once a second and gpuq_unusable_free_gpus. */
void admit_pass(struct ctl *c);
/* Frees what admit.c keeps in c (at the end). */
void admit_free(struct ctl *c);

/* las.c: attained-service scheduling and fair share over time */
/* The attained-service parameters when team's cohort schedules by
 * attained service (its TeamQuotas' spec.schedulingPolicy, else
 * --scheduling; never under --policy fifo), else NULL. team NULL or
 * without a TeamQuota: --scheduling's. */
const struct gq_las *ctl_las(struct ctl *c, const char *team);
/* After a TeamQuota change: every queued job's level under its cohort's
 * policy now, and each team's queue sorted again if one changed. */
void las_relevel(struct ctl *c);
/* Team t's decayed usage history as the mean GPUs it used (brought to
 * now); 0 without --fair-share-half-life. */
double las_team_mean_gpus(struct ctl *c, struct cteam *t);
/* Reads the saved history of a cohort's teams (cohort "" : of the lone
 * team) from Redis, once per connect (after its ledger read). */
void las_load(struct ctl *c, const char *cohort, const char *team);
/* Every tick: accrues the teams' history, saves it now and then, and
 * promotes starved queued jobs to level 0. */
void las_tick(struct ctl *c);

/* usage.c: allocated against used GPUs, idle jobs, GPU health (issue 22) */
/* Registers the metrics and sets up the poll timer and the Prometheus
 * client (gq_ctl_new); the poll starts with usage_start (gq_ctl_start) and
 * stops with usage_stop (gq_ctl_stop); usage_close closes the client and
 * the timer (cb: the controller's close callback); usage_free frees the
 * rest (at the end). */
void usage_init(struct ctl *c);
void usage_start(struct ctl *c);
void usage_stop(struct ctl *c);
void usage_close(struct ctl *c, uv_close_cb cb);
void usage_free(struct ctl *c);
/* cj started (on 1) or stopped (0) running every replica: its allocation
 * starts or ends now (virtual clock). */
void usage_running(struct ctl *c, struct cjob *cj, int on);
/* Frees cj's usage record. */
void usage_forget(struct cjob *cj);
/* gpuq_idle_allocated_gpus at scrape time. */
void usage_metrics(struct ctl *c);
/* What cj's status shows of its usage, into *v (status.c). */
void usage_status(const struct ctl *c, const struct cjob *cj,
                  struct usage_view *v);

/* status.c */
/* Sets the reason (a string of static storage duration: cj keeps the
 * pointer) and the formatted message gpuq shows for cj. */
void status_set(struct cjob *cj, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Queues cj's status write (coalesced: one in flight per job, the latest
 * state sent when it returns), in the lane of its state (enum ctl_lane:
 * ended, holding GPUs, queued); a job waiting in a later lane moves up. */
void status_flush(struct ctl *c, struct cjob *cj);
/* Queues a write of cj's usage figures alone (allocatedGPUSeconds,
 * gpuUtilization of a running job: nothing a user waits on) in the
 * refresh lane, sent only when the other lanes are empty, so that a
 * phase change (Succeeded, Running, ...) never waits behind a cluster's
 * worth of usage refreshes. A job already queued stays where it is. */
void status_refresh(struct ctl *c, struct cjob *cj);
/* Queues an Event (type "Normal" or "Warning", reason CamelCase, message
 * formatted, cut at 1023 bytes) on cj's GpuJob; nothing while not acting.
 * The queue is bounded (EVENTS_QUEUED): a full queue drops the new event
 * with a rate-limited warning, as client-go's recorder does. */
void status_event(struct ctl *c, struct cjob *cj, const char *type,
                  const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* Writes the queue positions of t's first upto jobs whose position
 * changed enough to be written (decide/position.h). */
void status_positions(struct ctl *c, struct cteam *t, size_t upto);
/* The background sweep (every --sweep-interval): a bounded slice of the
 * queued jobs' positions and ETAs, resuming where the last one stopped. */
void status_sweep(struct ctl *c);
/* Recomputes every TeamQuota's status (usage, borrowing, lending,
 * pending; Valid condition) and patches those that changed, at most once
 * per --quota-status-interval-ms each. */
void status_quotas(struct ctl *c);
/* Sets the gauges at scrape time (gq_ctl_collect): pending jobs,
 * admitted, nominal and borrowed GPUs per team and flavor,
 * fragmentation, nodes below capacity, free GPUs per node. */
void status_metrics(struct ctl *c);
/* Records a Warning event on a Ready node whose allocatable GPUs are
 * below its capacity when that starts, a Normal one when it ends (obj:
 * the node's JSON, n: decoded, NULL if undecodable: nothing). */
void status_node(struct ctl *c, const json_t *obj, const struct gq_node *n);
/* Frees what status.c keeps in c (at the end). */
void status_free(struct ctl *c);
/* Takes cj out of the status lanes (it is being freed). */
void status_forget(struct ctl *c, struct cjob *cj);
/* Frees the events still queued (at stop). */
void status_drop_events(struct ctl *c);
/* Adds (add 1) or removes (0) the finalizer gpuq.dev/pods on cj's GpuJob
 * j with a JSON patch guarded by a test of the current list; a conflict
 * marks cj to try again, a failed test waits for the watch event of the
 * change (a reconcile follows it). */
void status_finalizer(struct ctl *c, struct cjob *cj,
                      const struct gq_gpujob *j, int add);
/* The informer has a new version o (borrowed JSON) of cj's GpuJob: once it
 * is the one cj's last write returned, a status write that waited for it
 * goes (status_flush). */
void status_seen(struct ctl *c, struct cjob *cj, const json_t *o);
/* The tick's part: status writes that have waited longer than they may
 * for the informer (a relist may skip the version) go now. */
void status_tick(struct ctl *c);

#endif
