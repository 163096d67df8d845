/* decide/las.h - attained-service scheduling and fair share over time
 * (issue 21, DESIGN §4).
 *
 * attained-service orders and preempts by the GPU-service a job has
 * received: least attained service first, discretized into a few levels
 * as Tiresias' 2D-LAS (Gu et al., "Tiresias: A GPU Cluster Manager for
 * Distributed Deep Learning", NSDI 2019, §3.2): a job's attained service
 * is GPUs x seconds it has run, over all its attempts; level 0 holds jobs
 * under the first threshold, level k jobs at or above the k-th. It needs
 * no duration estimate. Within a team, queue order is priority, then level,
 * then queue time (FIFO within a level, as 2D-LAS); a queued job of a
 * lower level may demote (preempt through the checkpoint protocol) a
 * running job of its team with the same priority and a higher level. Team
 * quotas, cohort borrowing, reclaim and fair share are unchanged: LAS only
 * orders and preempts inside what they allow.
 *
 * Guardrails: a job is demoted only if it can resume (spec.checkpoint set
 * and drainPolicy not Wait) and its attempt has run at least
 * max(minRunSeconds, checkpoint.intervalSeconds), so no job is preempted
 * more than once per that time. Starvation: a job of level > 0 that has
 * waited starve_factor times its last attempt's run time since it was
 * requeued is promoted to level 0 (its counted service is reset), as
 * Tiresias' STARVE_LIMIT.
 *
 * Fair share over time: a team's usage history is its GPUs in use
 * integrated over time with exponential decay (half-life H seconds), as
 * Slurm's PriorityDecayHalfLife and Kueue's admission fair sharing
 * (usageHalfLifeTime) keep it. A decayed total U of GPU-seconds is a mean
 * of U x ln 2 / H GPUs over the recent past.
 *
 * Pure: no I/O, no clock. Units: GPUs, GPU-seconds, Unix milliseconds
 * (virtual under --time-scale), seconds where named _s.
 */
#ifndef GQ_DECIDE_LAS_H
#define GQ_DECIDE_LAS_H
#include <stddef.h>
#include <stdint.h>

/* Scheduling policies a cohort may use. */
enum gq_sched_policy {
  GQ_SCHED_FIFO_BACKFILL = 0, /* "fifo-backfill": priority, queue time,
                                 EASY backfill (gpuq before issue 21) */
  GQ_SCHED_ATTAINED = 1       /* "attained-service": as above, with LAS
                                 levels and demotion */
};

#define GQ_LAS_LEVELS_MAX 8

/* The attained-service policy's parameters. */
struct gq_las {
  /* GPU-seconds, strictly ascending and > 0: level k holds jobs whose
   * counted service is >= thresholds[k-1]; n_thresholds + 1 levels */
  int64_t thresholds[GQ_LAS_LEVELS_MAX - 1];
  size_t n_thresholds;
  int64_t min_run_s;    /* least run of an attempt before demotion (s) */
  double starve_factor; /* promotion after waiting this many times the
                           last attempt's run; 0 = never */
};

/* gpuq's defaults: three levels split at 3,600 and 36,000 GPU-seconds
 * (one and ten GPU-hours), minRunSeconds 600 (issue 21), promotion after
 * twice the last run (bench/README.md, "replay": what was tried). */
#define GQ_LAS_DEFAULT ((struct gq_las){{3600, 36000}, 2, 600, 2.0})

/* gpuq-controller's default policy (the better of the two on
 * bench/replay, bench/README.md) and fair-share half-life (s). */
#define GQ_SCHED_DEFAULT GQ_SCHED_ATTAINED
#define GQ_FAIR_HALF_LIFE_DEFAULT_S 3600

/* Parses a policy name: "fifo-backfill" or "attained-service". Returns 0
 * with *out, or GQ_EINVAL for anything else (NULL included). */
int gq_sched_policy_parse(const char *s, enum gq_sched_policy *out);

/* The policy's name (static storage). */
const char *gq_sched_policy_name(enum gq_sched_policy p);

/* Parses thresholds "3600,36000" (GPU-seconds, strictly ascending, > 0, at
 * most GQ_LAS_LEVELS_MAX - 1 of them) into l->thresholds and
 * l->n_thresholds (other fields untouched). Returns 0, or GQ_EINVAL with a
 * sentence naming the bad value in err (len bytes). */
int gq_las_parse_thresholds(const char *s, struct gq_las *l, char *err,
                            size_t len);

/* The level (0 .. n_thresholds) of a job with service_gpu_s GPU-seconds of
 * counted service (negative counts as 0). l NULL: 0. */
int gq_las_level(const struct gq_las *l, int64_t service_gpu_s);

/* Counted service of a job: base_gpu_s from its ended attempts plus, when
 * its current attempt started at start_ms (> 0) before now_ms, gpus x the
 * seconds since. GPU-seconds, never negative. */
int64_t gq_las_service(int64_t base_gpu_s, int64_t gpus, int64_t start_ms,
                       int64_t now_ms);

/* 1 if a running job may be demoted now: it can resume from a checkpoint
 * (checkpoint != 0, drain_wait == 0) and its attempt, started at start_ms
 * (> 0), has run at least max(l->min_run_s, interval_s) by now_ms. */
int gq_las_demotable(const struct gq_las *l, int checkpoint, int drain_wait,
                     int64_t interval_s, int64_t start_ms, int64_t now_ms);

/* 1 if a queued job of level > 0, requeued at requeued_ms after an attempt
 * that ran last_run_ms, has waited long enough by now_ms to be promoted to
 * level 0 (waited >= starve_factor x max(last run, min_run_s)). */
int gq_las_starved(const struct gq_las *l, int level, int64_t requeued_ms,
                   int64_t last_run_ms, int64_t now_ms);

/* A queued job's place in its team's queue. */
struct gq_qorder {
  int32_t priority; /* effective, higher first */
  int level;        /* LAS level, lower first (0 under fifo-backfill) */
  int64_t queued_ms;/* first queue time, earlier first */
  const char *uid;  /* tie-break (NULL as "") */
};

/* 1 if a goes before b in a team's queue: priority (high first), level
 * (low first), queue time (early first), uid (DESIGN §4). */
int gq_qorder_before(const struct gq_qorder *a, const struct gq_qorder *b);

/* Decays a usage total of gpu_s GPU-seconds over dt_ms (>= 0) with a
 * half-life of half_life_s seconds: gpu_s x 2^(-dt/H). half_life_s <= 0:
 * no history (0). Never negative or NaN. */
double gq_fair_decay(double gpu_s, int64_t dt_ms, int64_t half_life_s);

/* Adds gpus in use over dt_ms to a decayed total: the integral of a
 * constant use decayed to the end of the interval,
 *   gpu_s x 2^(-dt/H) + gpus x (H / ln 2) x (1 - 2^(-dt/H)).
 * half_life_s <= 0: 0. */
double gq_fair_accrue(double gpu_s, int64_t gpus, int64_t dt_ms,
                      int64_t half_life_s);

/* The mean GPUs a decayed total stands for: gpu_s x ln 2 / H (0 when
 * half_life_s <= 0). A team that used g GPUs for much longer than H has
 * a mean of g. */
double gq_fair_mean_gpus(double gpu_s, int64_t half_life_s);

#endif
