/* sim/replay.h - trace replay: GpuJobs from a job trace at their submit
 * times on the accelerated clock, TeamQuotas derived from the teams'
 * shares, a node event timeline, and report.json when every job has ended
 * (DESIGN §7). */
#ifndef GQ_SIM_REPLAY_H
#define GQ_SIM_REPLAY_H
#include <jansson.h>
#include <stddef.h>

#include "sim/engine.h"

struct gq_sim_replay_opts {
  const char *trace;      /* CSV job_id,submit_s,team,gpus,gpu_model,
                             duration_s,status; NULL = no replay */
  const char *quotas;     /* YAML TeamQuotas; NULL = derived */
  const char *checkpoint; /* "GRACE,INTERVAL,WRITE" or "none"; NULL =
                             "120,1800,30" */
  const char *events;     /* YAML node event timeline, or NULL */
  const char *report;     /* report.json path, or NULL */
  const char *series;     /* directory for time-series data files, or NULL */
};

/* Loads the trace, quotas and timeline and schedules the submissions
 * (virtual time 0 of the trace = now). Returns 0 or GQ_EINVAL / GQ_EIO
 * with a message naming the file, line and field. */
int gq_sim_replay_start(struct gq_sim *s, const struct gq_sim_replay_opts *o,
                        char *err, size_t errlen);
void gq_sim_replay_release(struct gq_sim *s);

/* Engine hooks. */
void gq_sim_replay_tev(struct gq_sim *s, const struct gq_tev *t);
void gq_sim_replay_job_started(struct gq_sim *s, const struct gq_sim_pod *p);
void gq_sim_replay_job_phase(struct gq_sim *s, const json_t *job,
                             int deleted);

#endif
