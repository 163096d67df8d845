/* decide/preempt.h - preemption decisions (DESIGN §4, §5), pure: no
 * I/O, no clock (times are parameters), no logging.
 *
 * Units: GPUs are counts; times are Unix milliseconds (virtual under
 * --time-scale); work is in GPU-seconds.
 */
#ifndef GQ_DECIDE_PREEMPT_H
#define GQ_DECIDE_PREEMPT_H
#include <stddef.h>
#include <stdint.h>

#include "decide/assign.h"
#include "decide/gpujob.h"
#include "decide/pod.h"
#include "decide/quota.h"
#include "decide/snapshot.h"
#include "decide/teamquota.h"

/* GPU-seconds a running attempt would lose if it stopped at now_ms without
 * writing a new checkpoint: gpus x the time since its last checkpoint.
 * The last checkpoint is the latest of: the attempt's start start_ms (it
 * resumed from there; 0 = not started: nothing at risk), lastCheckpoint's
 * time ckpt_ms (0 = none) when it is after the start, and the job's own
 * periodic checkpoints every interval_s seconds from the start
 * (checkpoint.intervalSeconds; <= 0 = none), DESIGN §4's estimate of
 * work at risk. Never negative. */
int64_t gq_preempt_at_risk(int64_t now_ms, int64_t start_ms, int64_t ckpt_ms,
                           int64_t interval_s, int64_t gpus);


/* One running job that might make room (a candidate victim). Everything
 * is borrowed for the call. */
struct gq_preempt_cand {
  size_t team;          /* index into the cohort's teams */
  int32_t priority;     /* effective priority */
  int64_t gpus;         /* GPUs its admission holds */
  const char *key;      /* ledger flavor key of its admission */
  int64_t at_risk;      /* GPU-seconds lost if preempted now
                           (gq_preempt_at_risk) */
  int preemptible;      /* spec.preemptible */
  int level;            /* attained-service level now (decide/las.h; 0
                           under fifo-backfill) */
  int demotable;        /* may be demoted now (gq_las_demotable) */
  size_t n_pods;        /* the pods that hold its resources: */
  const char *const *nodes;          /* node names */
  const struct gq_podsched *const *reqs; /* their requests */
};

/* The job that wants to preempt, and its cohort. */
struct gq_preempt_ask {
  struct gq_snapshot *s;                  /* changed during the call, left as
                                             it was */
  const struct gq_gpujob *j;              /* the preemptor */
  int32_t priority;                       /* its effective priority */
  const struct gq_teamquota *const *teams; /* the n_teams of its cohort */
  size_t n_teams;
  size_t team;                            /* the preemptor's */
  const struct gq_ledger_use *use;        /* the cohort's ledger use */
  size_t n_use;
  int las;                                /* the cohort schedules by
                                             attained service: demotion */
  int level;                              /* the preemptor's LAS level */
  int demote_only;                        /* its team's own quota is full:
                                             only demotion (DESIGN §4:
                                             priority preemption is for a
                                             job that fits its quota) */
};

/* 1 if the preemptor's team may reclaim from another team of the cohort
 * right now: its reclaimFromCohort is not Never and some other team uses
 * more than its nominal quota of some flavor key (ask->use against
 * ask->teams). A necessary condition for a cross-team victim of
 * gq_preempt_select(), cheap enough to test before collecting candidates
 * (O(n_use x quota lines)). */
int gq_preempt_may_reclaim(const struct gq_preempt_ask *ask);

/* Chooses victims among cand[0..n-1] so that the preemptor fits (DESIGN §4,
 * Kueue's preemption of pkg/scheduler/preemption). A candidate may be a
 * victim when it is preemptible and:
 *   - of the preemptor's team, with a lower priority, if the team's
 *     preemption.withinTeam is LowerPriority;
 *   - of the preemptor's team, with the same priority, a higher
 *     attained-service level than the preemptor's, no more GPUs than the
 *     preemptor (a gang never gives up its GPUs to a smaller job, then to
 *     wait for as many free together) and demotable, if ask->las and
 *     withinTeam is not Never (decide/las.h: demotion);
 *   - of another team, if the preemptor's team's reclaimFromCohort is Any
 *     (or LowerPriority and the candidate's priority is lower), the
 *     preemptor's admission stays within its nominal quota of the flavor
 *     it waits for (a lender taking its GPUs back, never a borrower), and
 *     the candidate's team uses more than its nominal quota of the
 *     candidate's flavor key (borrowed GPUs, or the excess after an admin
 *     lowered the quota) while it is chosen: a team back at its nominal
 *     keeps its other jobs.
 * Candidates are taken in order: lowest priority first, then the highest
 * level, then the fewest GPU-seconds at risk, then array order; each is removed from a copy of
 * the snapshot and the ledger until gq_assign_job() admits the preemptor
 * (quota and a placement with each replica on one node); then the chosen
 * victims with no pod on the nodes it would use are spared all together
 * if it still fits (else one by one, as quota may need them), and every
 * other victim whose return still lets it fit is spared, the last chosen
 * first, so that only as many as needed go. A placement is tried only
 * when the snapshot has room for the gang's replicas in whole-node GPU
 * counts (a cheap necessary condition). Returns the number of victims (> 0)
 * with their indexes in victims[] (room for n) and where the preemptor
 * would then go in *a and out[0..j->replicas-1] (node indexes of s); 0
 * when no victim is needed (it fits already) or GQ_ENOTFOUND when no set
 * of allowed victims makes room. The snapshot is left as it was. */
int gq_preempt_select(const struct gq_preempt_ask *ask,
                      const struct gq_preempt_cand *cand, size_t n,
                      size_t *victims, struct gq_assignment *a, size_t *out);

#endif
