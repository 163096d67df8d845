/* sim/report.h - what the simulated cluster measures: invariant
 * violations, placement misses, per-job times, GPU busy time, preemptions
 * and checkpoint resumes, and (in a replay) the report.json of DESIGN §7. */
#ifndef GQ_SIM_REPORT_H
#define GQ_SIM_REPORT_H
#include <jansson.h>
#include <stdint.h>

#include "sim/engine.h"
#include "sim/usage.h"

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
 * NULL); ended on its own; or vanished while running. The stop hooks add
 * the pod's GPU usage since r->acct_vms to the ledger and advance it. */
void gq_sim_report_pod_started(struct gq_sim *s, const struct gq_sim_pod *r);
void gq_sim_report_pod_stopped(struct gq_sim *s, struct gq_sim_pod *r,
                               int checkpointed, const char *reason);
void gq_sim_report_pod_ended(struct gq_sim *s, struct gq_sim_pod *r);
void gq_sim_report_pod_gone(struct gq_sim *s, struct gq_sim_pod *r);

/* Timed work owned by the replay (submissions, samples, timeline). */
void gq_sim_report_tev(struct gq_sim *s, const struct gq_tev *t);

/* Counters for /sim/v1/report and tests (new JSON object). It first adds
 * every running pod's GPU usage up to now to the ledger, so the GPU-hours
 * are exact at the time of the call: "teams" {TEAM: the usage below} and
 * the totals "allocated_gpu_hours", "used_gpu_hours", "idle_gpu_hours"
 * (also pods without a team), "allocated_gpus" and "used_gpus" (GPUs held
 * by running pods now, and their utilization summed) and
 * "idle_threshold_pct". */
json_t *gq_sim_report_json(struct gq_sim *s);

/* A team's usage as report JSON (new object): allocated_gpu_hours,
 * used_gpu_hours, idle_gpu_hours (reals, hours); u borrowed. */
json_t *gq_sim_report_usage_json(const struct gq_sim_usage *u);

#endif
