/* decide/usage.h - allocated against used GPUs for one job (issue 22).
 *
 * A job's GPUs are allocated while it runs; how much of them it uses comes
 * from utilization readings (DCGM's DCGM_FI_DEV_GPU_UTIL, percent of the
 * time the GPU was busy over the sample period, read through Prometheus by
 * controller/usage.c). This file keeps the arithmetic, per job:
 *   allocated GPU-seconds = GPUs x seconds running, over all attempts;
 *   used GPU-seconds      = sum of GPUs x utilization x the interval each
 *                           reading covers (the interval since the
 *                           previous reading: the reading is the newest
 *                           scrape, taken during it);
 *   idle GPU-seconds      = GPUs x the intervals whose reading was under
 *                           the idle threshold;
 * the mean utilization over a window (time-weighted), and for how long the
 * job has been under the threshold without a break. An interval with no
 * reading (Prometheus unreachable, the pod not scraped yet) or longer than
 * the caller's max_gap counts as allocated only: used and idle are not
 * guessed. The run's tail (last reading to the stop) counts at the last
 * reading.
 *
 * Pure: no I/O, no clock (times are the caller's, virtual ms under
 * --time-scale). Units: GPUs, GPU-seconds (double), percent 0..100,
 * milliseconds.
 */
#ifndef GQ_DECIDE_USAGE_H
#define GQ_DECIDE_USAGE_H
#include <stdint.h>

/* Readings kept for the window mean (the oldest drop off). */
#define GQ_USAGE_RING 16

struct gq_usage_reading {
  int64_t from_ms, to_ms; /* the interval it covers */
  int pct;                /* 0..100 */
};

/* One job's usage. Zero-initialize; the caller owns it. */
struct gq_usage {
  double alloc_s, used_s, idle_s; /* GPU-seconds, all attempts */
  int64_t run_from_ms;  /* the current run's start, 0 = not running */
  int64_t last_ms;      /* end of the last interval counted (running) */
  int last_pct;         /* the last reading, -1 none in this run */
  int64_t idle_since_ms; /* start of the unbroken stretch under the
                            threshold, 0 = not under it */
  struct gq_usage_reading ring[GQ_USAGE_RING];
  unsigned ring_n, ring_head;
};

/* The job started running at now_ms: allocation counts from here. No-op
 * when it already runs. */
void gq_usage_start(struct gq_usage *u, int64_t now_ms);

/* The job stopped running at now_ms with gpus GPUs: the run's allocation
 * (gpus x (now - start)) is added to alloc_s, and the tail since the last
 * reading at that reading (used, idle under threshold_pct). The idle
 * stretch ends. No-op when it does not run. */
void gq_usage_stop(struct gq_usage *u, int64_t now_ms, int64_t gpus,
                   int threshold_pct);

/* A reading at now_ms: pct the job's mean utilization over its GPUs
 * (0..100; values outside are clamped), or -1 unknown (no reading). The
 * interval since the last reading (or the run's start) counts as used at
 * pct and as idle if pct < threshold_pct, unless it is longer than
 * max_gap_ms or pct is -1 (then it counts as allocated only, and an
 * unknown reading leaves the idle stretch as it was). No-op when the job
 * does not run. */
void gq_usage_reading(struct gq_usage *u, int64_t now_ms, int64_t gpus,
                      int pct, int threshold_pct, int64_t max_gap_ms);

/* Allocated GPU-seconds up to now_ms (ended runs and the current one). */
double gq_usage_alloc_at(const struct gq_usage *u, int64_t now_ms,
                         int64_t gpus);

/* The time-weighted mean utilization (percent, rounded) of the readings
 * whose interval ends within window_ms before now_ms, or -1 when there is
 * none. */
int gq_usage_mean(const struct gq_usage *u, int64_t now_ms, int64_t window_ms);

/* How long (ms) the job has been under the threshold without a break at
 * now_ms; 0 when it is not. */
int64_t gq_usage_idle_ms(const struct gq_usage *u, int64_t now_ms);

#endif
