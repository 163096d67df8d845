/* sim/report.h - what the simulated cluster measures: invariant
 * violations, placement misses, per-job times, GPU busy time, preemptions
 * and checkpoint resumes, and (in a replay) the report.json of DESIGN §7. */
#ifndef GQ_SIM_REPORT_H
#define GQ_SIM_REPORT_H
#include <jansson.h>
#include <stdint.h>

#include "sim/engine.h"

void gq_sim_report_init(struct gq_sim *s);
void gq_sim_report_release(struct gq_sim *s);

/* Counts a violation of invariant 'inv' ("INV-1" .. "INV-5") with a detail
 * sentence (kept, up to a cap, for report.json and the log). */
void gq_sim_report_violation(struct gq_sim *s, const char *inv,
                             const char *detail);
/* Counts a placement miss (a gpuq pod left Unschedulable or rejected). */
void gq_sim_report_miss(struct gq_sim *s, const char *detail);

/* Kubelet hooks: a pod started; stopped after SIGTERM (checkpointed says
 * whether it wrote a checkpoint; reason is the DisruptionTarget reason or
 * NULL); ended on its own; or vanished while running. */
void gq_sim_report_pod_started(struct gq_sim *s, const struct gq_sim_pod *r);
void gq_sim_report_pod_stopped(struct gq_sim *s, const struct gq_sim_pod *r,
                               int checkpointed, const char *reason);
void gq_sim_report_pod_ended(struct gq_sim *s, const struct gq_sim_pod *r);
void gq_sim_report_pod_gone(struct gq_sim *s, const struct gq_sim_pod *r);

/* Timed work owned by the replay (submissions, samples, timeline). */
void gq_sim_report_tev(struct gq_sim *s, const struct gq_tev *t);

/* Counters for /sim/v1/report and tests (new JSON object). */
json_t *gq_sim_report_json(struct gq_sim *s);

#endif
