/* sim/gpuutil.h - a simulated pod's GPU utilization over its running time:
 * the annotation sim.gpuq.dev/gpu-utilization, parsed, and its exact
 * integral (issue 22).
 *
 * The annotation is either a constant fraction of the GPUs' capacity in use,
 *
 *   0.9
 *
 * or a timeline of phases, comma-separated, each "[LABEL] FRACTION for
 * DURATION":
 *
 *   busy 0.9 for 2h, idle 0.02 for 1h
 *
 * FRACTION is a decimal in [0, 1]; LABEL an optional word (a letter, then
 * letters, digits, '_', '-' or '.'; at most GQ_SIM_GPUUTIL_LABEL_LEN - 1
 * bytes) that only names the phase; DURATION what gq_duration_parse()
 * reads (90s, 30m, 2h, 1h30m), more than 0. Spaces around tokens are free.
 * The timeline starts when the pod's container starts and repeats when it
 * ends; every attempt (a new pod) starts again at its first phase.
 *
 * Pure: no I/O, no clock, no allocation. Times are milliseconds since the
 * container started ("elapsed"), utilization a fraction in [0, 1]. */
#ifndef GQ_SIM_GPUUTIL_H
#define GQ_SIM_GPUUTIL_H
#include <stddef.h>
#include <stdint.h>

#define GQ_SIM_ANN_GPU_UTIL "sim.gpuq.dev/gpu-utilization"
#define GQ_SIM_GPUUTIL_MAX_PHASES 32
#define GQ_SIM_GPUUTIL_LABEL_LEN 32
#define GQ_SIM_GPUUTIL_MAX_TEXT 4096 /* longer annotation values: refused */

struct gq_sim_gpuutil_phase {
  char label[GQ_SIM_GPUUTIL_LABEL_LEN]; /* "" when the phase has none */
  double frac;                          /* utilization, 0..1 */
  int64_t dur_ms;                       /* > 0 */
};

struct gq_sim_gpuutil {
  struct gq_sim_gpuutil_phase phases[GQ_SIM_GPUUTIL_MAX_PHASES];
  size_t n;          /* >= 1 */
  int64_t cycle_ms;  /* sum of the phases' durations; 0 = a constant */
  double cycle_busy; /* integral of one cycle, fraction x seconds */
};

/* GPU-seconds over some running time: allocated (GPUs x seconds), used
 * (the integral of utilization x GPUs) and idle (GPUs x seconds while the
 * utilization was under the idle threshold). */
struct gq_sim_usage {
  double alloc_s, used_s, idle_s;
};

/* Sets *u to the constant utilization frac (clamped to [0, 1]). */
void gq_sim_gpuutil_constant(struct gq_sim_gpuutil *u, double frac);

/* Parses an annotation value (grammar above; text borrowed) into *u.
 * Returns 0, or GQ_EINVAL with what is wrong in err (errlen bytes, always
 * NUL-terminated; "phase 2: want [LABEL] FRACTION for DURATION, got 'x'")
 * and *u set to nothing usable: the caller falls back to its default.
 * GQ_ETOOBIG for more than GQ_SIM_GPUUTIL_MAX_PHASES phases or a text
 * longer than GQ_SIM_GPUUTIL_MAX_TEXT. A NULL text is GQ_EINVAL. */
int gq_sim_gpuutil_parse(const char *text, struct gq_sim_gpuutil *u,
                         char *err, size_t errlen);

/* The utilization at elapsed_ms after the start (negative counts as 0). */
double gq_sim_gpuutil_at(const struct gq_sim_gpuutil *u, int64_t elapsed_ms);

/* The phase in force at elapsed_ms (index into u->phases). */
size_t gq_sim_gpuutil_phase_at(const struct gq_sim_gpuutil *u,
                               int64_t elapsed_ms);

/* Adds to *acc the usage of gpus GPUs running u between from_ms and to_ms
 * elapsed (from_ms <= to_ms; nothing when not), exactly: whole cycles are
 * counted at once, so the cost does not grow with the span. idle_below is
 * the idle threshold as a fraction (a phase with frac < idle_below is
 * idle). */
void gq_sim_gpuutil_integrate(const struct gq_sim_gpuutil *u, int64_t from_ms,
                              int64_t to_ms, double gpus, double idle_below,
                              struct gq_sim_usage *acc);

#endif
