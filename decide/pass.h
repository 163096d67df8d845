/* decide/pass.h - the admission pass as a pure function (DESIGN §4).
 *
 * One pass decides, cohort by cohort, which queued jobs are admitted on
 * which nodes, which running jobs are preempted and for whom, what
 * capacity is reserved, and what every job it looked at is told (reason,
 * message, ETA). It is written as kueue's scheduling cycle is
 * (pkg/scheduler/scheduler.go schedule()), in numbered steps:
 *   1. heads     the next job of every team that may still admit;
 *   2. snapshot  the cohort's quota numbers and the capacity snapshot with
 *                the pass's reservations (preemptors, jobs in Preempting);
 *   3. order     the team that goes first (gq_quota_order: heads within
 *                nominal first, then the lowest weighted dominant share);
 *   4. nominate  its head's quota line and nodes (gq_assign_job);
 *   5. admit     it, or preempt for it, or reserve the capacity it waits
 *                for (EASY backfilling), or say why it waits;
 *   6. requeue   the rest stay queued, each with its reason.
 * Every job that fits is admitted in the same pass (not one per team); a
 * head refused by quota stops its team; at most bf_max jobs behind a
 * blocked head are tried per team; a placement shape that failed is not
 * tried again in the pass. --policy fifo is gq_pass_fifo(): one queue per
 * cohort in queue-time order, no quota, no backfill, no preemption.
 *
 * The result is a plan (struct gq_plan): an ordered list of steps the
 * caller applies in that order, so that its effects (Redis admits,
 * preemptions, status writes) go out in the order they were decided.
 *
 * Input is plain views of the caller's records (no store, no JSON). The
 * pass asks for the input it needs instead of calling back: as zlib's
 * inflate() asks for more input, gq_pass_cohort() returns a need (the
 * next jobs of a team's queue, the forecast's releases, the preemption
 * candidates) and is called again once the caller has supplied it. A
 * pass thus costs what it looks at: a team's queue (which may hold
 * 100,000 jobs) is read only as far as the pass reaches, the releases are
 * built only when a head waits for capacity, the candidates only when a
 * victim search runs. A caller may also give everything at once (tests do).
 *
 * Capacity: the pass commits to the caller's snapshot while it runs (its
 * admissions, so that later jobs see them; its reservations) and leaves it
 * as it found it: a cohort's admissions are uncommitted when its plan is
 * done (the caller then assumes their pods), the reservations at
 * gq_pass_end(). Nothing is copied per pass.
 *
 * Pure: no I/O, no clock (both times are inputs), no logging, no global
 * state; allocates with gq_x* (aborts on OOM). One pass belongs to one
 * thread. Strings and pointers in the inputs are borrowed and must stay
 * valid and unchanged until the plan that refers to them is applied.
 */
#ifndef GQ_DECIDE_PASS_H
#define GQ_DECIDE_PASS_H
#include <stddef.h>
#include <stdint.h>

#include "decide/gpujob.h"
#include "decide/teamquota.h"
#include "decide/assign.h"
#include "decide/forecast.h"
#include "decide/snapshot.h"
#include "decide/quota.h"
#include "decide/las.h"

/* ---- limits ------------------------------------------------------------ */

/* What one pass may do; a pass that reaches tries_max or admits_max stops
 * and asks for another (gq_plan.again). */
struct gq_pass_limits {
  int bf_max;        /* jobs tried behind a blocked head per team */
  /* Forecasts (reservations) per pass, for the blocked heads of the teams
   * that go first: each costs a placement over every node and a sort of
   * every release (milliseconds at 2,000 nodes), and a pass must stay well
   * under the 10 ms gpuq allows from freed capacity to a pod create. Fair
   * share rotates the teams, so every blocked head gets its reservation
   * and ETA refreshed within a few passes. */
  int forecasts_max;
  int tries_max;     /* jobs looked at per pass */
  int preempt_max;   /* victim searches per pass (each tries several
                        placements) */
  /* Admissions per pass: then a new pass on the next loop turn, so that
   * the admit scripts and pod creates of the first ones go out (and the
   * API server works on them) while the rest are decided; filling 2,000
   * free slots at once took 1.1 s of deciding before the first write. */
  int admits_max;
  int64_t preempt_retry_ms; /* a fruitless victim search waits (real ms) */
};

/* gpuq's limits. */
#define GQ_PASS_LIMITS_DEFAULT                                                \
  ((struct gq_pass_limits){32, 4, 20000, 2, 100, 2000})

/* ---- input ------------------------------------------------------------- */

/* A queued job as the pass sees it. */
struct gq_pass_job {
  void *ref;                    /* the caller's record: opaque, handed back
                                   in the plan */
  const char *key;              /* "namespace/name", for messages */
  const char *uid;              /* fifo's tie-break */
  const struct gq_gpujob *spec; /* decoded, valid; NULL: skipped */
  int64_t gpus;                 /* GPUs as queued (team order, messages) */
  int32_t priority;             /* effective */
  int64_t queued_ms;            /* first queue time (Unix ms) */
  uint32_t shape;               /* placement shape hash (gq_gpujob.shape) */
  int has_resv;                 /* a preemptor with nodes reserved */
  int victims_left;             /* a preemptor: victims still tearing down */
  int64_t preempt_ms;           /* real ms of its last victim search; 0 none */
  int level;                    /* attained-service level (decide/las.h;
                                   0 under fifo-backfill): its place in its
                                   team's queue after priority */
};

/* How many of a team's admitted jobs hold their admission at a priority. */
struct gq_pass_prio {
  int32_t prio;
  int64_t n;
};

/* One team of the cohort. jobs[0..n_jobs-1] is the start of its queue, in
 * queue order (priority, then queue time); n_queued is the queue's length.
 * The caller may give fewer than n_queued jobs: the pass then asks for
 * more (GQ_PASS_NEED_JOBS) and the caller extends jobs (it may move it). */
struct gq_pass_team {
  const char *name;
  const struct gq_teamquota *quota;
  const struct gq_pass_prio *adm_prio; /* distinct priorities, any order */
  size_t n_adm_prio;
  size_t n_queued;
  const struct gq_pass_job *jobs;
  size_t n_jobs;
  double hist_gpus;  /* mean GPUs used over the recent past (fair share
                        over time, gq_qteam.hist_gpus); 0 none */
  int64_t n_resumable; /* admitted jobs that could resume from a
                          checkpoint: 0 = none could be demoted, so no
                          demotion search runs (each costs milliseconds) */
};

/* A job in Preempting of a team of the cohort: if it goes before its
 * team's head, the capacity where it would run now is reserved for it
 * (DESIGN §5: a lower job never slips into the gap). */
struct gq_pass_draining {
  void *ref;
  const struct gq_gpujob *spec; /* NULL or suspended: ignored */
  size_t team;                  /* index into the cohort's teams */
  int32_t priority;
  int level;                    /* attained-service level (0 without) */
  int64_t queued_ms;
  const char *flavor_key;       /* ledger key of its admission */
};

/* A running job that might make room, with the pods that hold its
 * resources (all committed to the snapshot). */
struct gq_pass_cand {
  void *ref;
  const char *key;
  size_t team;                  /* index into the cohort's teams */
  int32_t priority;
  int64_t gpus;
  const char *flavor_key;       /* ledger key of its admission */
  int64_t start_ms, ckpt_ms;    /* gq_preempt_at_risk()'s inputs */
  int64_t interval_s;
  int preemptible;              /* spec.preemptible (0 without a spec) */
  int level;                    /* attained-service level now (0 without) */
  int demotable;                /* gq_las_demotable() now (0 without) */
  size_t n_pods;
  const char *const *nodes;     /* n_pods node names */
  const struct gq_podsched *const *reqs; /* their requests */
};

/* A preemptor still waiting for its victims: the nodes reserved for its
 * replicas (NULL-terminated) stay reserved for the whole pass. */
struct gq_pass_preemptor {
  void *ref;
  const struct gq_gpujob *spec;
  const char *const *nodes;
};

/* What the pass needs once, at gq_pass_begin(). */
struct gq_pass_in {
  struct gq_snapshot *snap;     /* committed to, left as found */
  struct gq_pass_limits lim;
  int64_t now_ms;               /* Unix ms (virtual under --time-scale) */
  int64_t mono_ms;              /* real monotonic ms: victim-search retry */
  const struct gq_pass_preemptor *preemptors; /* copied by gq_pass_begin */
  size_t n_preemptors;
};

/* One cohort's input. The caller fills the fields under "on request" when
 * gq_pass_cohort() asks for them. */
struct gq_pass_cohort {
  const struct gq_pass_team *teams;
  size_t n_teams;
  int has_cohort;                    /* 0: a lone team (no borrowing) */
  const struct gq_ledger_use *use;   /* the cohort's ledger use (team
                                        indexes into teams) */
  size_t n_use;
  const struct gq_pass_draining *draining;
  size_t n_draining;
  /* attained-service scheduling (decide/las.h), or NULL: fifo-backfill.
   * With it, the jobs' levels order teams' heads after the nominal rule
   * (gq_qteam.rank) and a blocked head may demote its team's running jobs
   * of a higher level (gq_preempt_select) */
  const struct gq_las *las;
  /* on request (GQ_PASS_NEED_CANDS): the running jobs of the cohort's
   * teams that may be preempted, in a stable order (ties go to the
   * earlier), and cands_set = 1 (also when there are none) */
  const struct gq_pass_cand *cands;
  size_t n_cands;
  int cands_set;
};

/* What gq_pass_cohort() asks for (flags; GQ_PASS_DONE is none). */
enum gq_pass_need {
  GQ_PASS_DONE = 0,
  GQ_PASS_NEED_JOBS = 1 << 0,     /* more of team *need_team's queue */
  GQ_PASS_NEED_RELEASES = 1 << 1, /* gq_pass_releases() */
  GQ_PASS_NEED_CANDS = 1 << 2     /* the cohort's candidates */
};

/* ---- the plan ------------------------------------------------------- */

enum gq_plan_op {
  GQ_PLAN_ADMIT,     /* admits[i] */
  GQ_PLAN_UNRESERVE, /* job: drop its preemptor reservation (admitted, or
                        its victims are gone) */
  GQ_PLAN_SEARCHED,  /* job: a victim search ran at plan.mono_ms */
  GQ_PLAN_RESERVE,   /* resvs[i]: nodes reserved for a preemptor */
  GQ_PLAN_VICTIM,    /* victims[i] */
  GQ_PLAN_STATUS     /* status[i] */
};

struct gq_plan_step {
  enum gq_plan_op op;
  size_t i;          /* index into the op's array */
  void *job;         /* the ref of the job it concerns */
};

/* Admit job on nodes under assignment a: take it out of its queue, count
 * its use, assume its pods, set reason/message, send the admit. */
struct gq_plan_admit {
  void *job;
  const struct gq_gpujob *spec;
  size_t team;
  struct gq_assignment a;   /* line, flavor, ledger key, verdict */
  const char **nodes;       /* n_nodes (its replicas) names, borrowed
                               from the snapshot's nodes; the array is
                               the plan's */
  size_t n_nodes;
  char *nodes_str;          /* "n1,n2" as messages show it (512 bytes at
                               most, as gpuq always wrote it) */
  const char *reason;       /* Admitted or AdmittedBorrowing (static) */
  char *message;
};

/* Preempt job for by: cause PreemptedByPriority (same team, lower
 * priority), Demoted (same team and priority, higher attained-service
 * level) or QuotaReclaim; why is the sentence. */
struct gq_plan_victim {
  void *job, *by;
  const char *cause;
  char *why;
};

/* Reserve nodes[0..n-1] (borrowed from the snapshot) for preemptor job
 * until it is admitted or its victims are gone. */
struct gq_plan_resv {
  void *job;
  const char **nodes;
  size_t n;
};

/* Tell a job that stays queued why: set the ETA if set_eta (-1 unknown),
 * the reason (static) and message, send event_reason with event_message
 * as a Normal event if event_reason is set, then write the status. */
struct gq_plan_status {
  void *job;
  const char *reason;
  char *message;
  int set_eta;
  int64_t eta_ms;
  const char *event_reason;
  char *event_message;
};

/* One cohort's plan. Everything in it is owned by it except what is
 * marked borrowed. */
struct gq_plan {
  struct gq_plan_step *steps;
  size_t n_steps, cap_steps;
  struct gq_plan_admit *admits;
  size_t n_admits, cap_admits;
  struct gq_plan_victim *victims;
  size_t n_victims, cap_victims;
  struct gq_plan_resv *resvs;
  size_t n_resvs, cap_resvs;
  struct gq_plan_status *status;
  size_t n_status, cap_status;
  int64_t mono_ms;       /* the pass's real ms (GQ_PLAN_SEARCHED) */
  int blocked_capacity;  /* some job waits for capacity */
  int again;             /* a limit stopped the pass: run another */
};

/* Initializes an empty plan. */
void gq_plan_init(struct gq_plan *pl);

/* Frees what pl owns; pl is then empty (gq_plan_init()). */
void gq_plan_release(struct gq_plan *pl);

/* ---- the pass ---------------------------------------------------------- */

struct gq_pass; /* opaque */

/* Starts a pass over in->snap (borrowed until gq_pass_end()): commits the
 * waiting preemptors' reservations. Returns the pass (never NULL); free it
 * with gq_pass_end(). */
struct gq_pass *gq_pass_begin(const struct gq_pass_in *in);

/* Gives the pass the forecast's releases it asked for
 * (GQ_PASS_NEED_RELEASES): when each pod committed to the snapshot is
 * expected to free its requests (borrowed until gq_pass_end(); entries
 * with end_ms -1 may be left out, they are never counted on). */
void gq_pass_releases(struct gq_pass *p, const struct gq_forecast_release *rel,
                      size_t n);

/* Decides cohort k into pl (empty, gq_plan_init()). Returns GQ_PASS_DONE
 * when pl is complete; else the needs (flags) the caller must meet before
 * calling it again with the same k and pl: GQ_PASS_NEED_JOBS (extend
 * k->teams[*need_team].jobs by at least one), GQ_PASS_NEED_RELEASES
 * (gq_pass_releases()), GQ_PASS_NEED_CANDS (k->cands, cands_set). Cohorts
 * are decided one after the other: call it for the next cohort only once
 * this one is done. The plan's admissions are not committed to the
 * snapshot when it returns GQ_PASS_DONE. */
enum gq_pass_need gq_pass_cohort(struct gq_pass *p,
                                 const struct gq_pass_cohort *k,
                                 struct gq_plan *pl, size_t *need_team);

/* The FIFO baseline (--policy fifo) over cohort k, with the protocol of
 * gq_pass_cohort() (it only asks for jobs): the cohort's jobs form one
 * queue in queue-time order (then uid), whatever their team or priority;
 * the head is admitted if its gang fits (best fit) and otherwise blocks
 * every job behind it; a job no quota line of its team accepts is passed
 * over. No quota, no backfill, no reservations, no preemption. */
enum gq_pass_need gq_pass_fifo(struct gq_pass *p,
                               const struct gq_pass_cohort *k,
                               struct gq_plan *pl, size_t *need_team);

/* What the whole pass leaves. */
struct gq_pass_out {
  int blocked_capacity; /* some job waited for capacity */
  int again;            /* a limit stopped it: run another pass */
  int64_t free_gpus;    /* free GPUs (nvidia.com/gpu) while jobs waited for
                           capacity, with the reservations counted:
                           fragmentation; 0 when none waited */
};

/* Ends the pass: fills *out (may be NULL), uncommits the reservations
 * (the snapshot is then as gq_pass_begin() found it, plus whatever the
 * caller committed meanwhile) and frees p. */
void gq_pass_end(struct gq_pass *p, struct gq_pass_out *out);

#endif
