/* sim/replay_int.h - internals shared by the trace replay (replay.c) and
 * the scenario runner (scenario.c); not part of the sim's interface. */
#ifndef GQ_SIM_REPLAY_INT_H
#define GQ_SIM_REPLAY_INT_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "sim/replay.h"

struct job {
  char name[64], team[64], ns[64];
  json_t *obj; /* a scenario's GpuJob, or NULL for a trace row */
  int64_t gpus, submit_s, duration_s;
  int64_t pod_vms;            /* its first pod created, 0 until then */
  int64_t start_vms, end_vms; /* 0 until it happens */
  int64_t done_vms; /* its last pod's own end (run done or failed), 0 none:
                       end_vms - done_vms is how long the GpuJob's status
                       took to say so */
  int ended, failed;
  char *rejected; /* the API server's message when its create failed */
};

struct gq_sim_replay {
  struct gq_sim_replay_opts o;
  struct job *jobs;
  size_t n_jobs, next, submitted, ended;
  json_t *index;   /* "ns/name" -> job index */
  json_t *teams;   /* team -> nominal GPUs */
  int64_t t0_vms, sample_vms;
  int64_t grace_s, interval_s, write_s; /* -1 grace: cannot checkpoint */
  int64_t total_gpus;
  json_t *series;  /* {t: [], busy: [], running: [], queued: {team: []},
                      allocated_gpus: [], used_gpus: []} */
  double last_alloc_h, last_used_h; /* the report's totals at the last */
  int64_t last_sample_vms;          /* sample, and its time */
  json_t *timeline; /* the --events file's events, by index */
  json_t *scenario; /* the scenario document, or NULL */
  int finished;
  json_t *found;    /* the value a computed subject (submission, pods) had */
  json_t *rejected; /* TeamQuota name -> the API server's create error */
  json_t *timed;    /* per expectation: null, or {ok, what, msg} at its 'at' */
  int64_t hook_failures; /* hooks that exited non-zero or by a signal */
  int held; /* --hold: loaded, waiting for POST /sim/v1/start */
};

/* Creates obj (taken) in the kind group/version/plural; 0 or GQ_EINVAL. */
int gq__replay_create(struct gq_sim *s, const char *group, const char *version,
                      const char *plural, json_t *obj, char *err,
                      size_t errlen);
/* Creates the namespace unless it exists. */
void gq__replay_namespace(struct gq_sim *s, const char *name);
/* Submits every job due by now and schedules the next submission. */
void gq__replay_submit_due(struct gq_sim *s, struct gq_sim_replay *r);
/* Checks timeline events and, unless check_only, schedules them relative
 * to r->t0_vms (path names them in messages). */
int gq__replay_schedule_events(struct gq_sim *s, struct gq_sim_replay *r,
                               const json_t *events, const char *path,
                               int check_only, char *err, size_t errlen);
/* Ends the run: report, summary, expectations, exit code, stop. */
void gq__replay_finish(struct gq_sim *s, struct gq_sim_replay *r,
                       const char *why);

/* --- scenario.c --- */
/* Loads a scenario file into r (cluster and quotas are created at once)
 * and, unless r->o.hold, starts its clock (see replay.h). */
int gq__scenario_load(struct gq_sim *s, struct gq_sim_replay *r,
                      const char *path, char *err, size_t errlen);
/* Starts a loaded scenario's clock now: schedules its events, deadline and
 * submissions relative to this instant. */
void gq__scenario_begin(struct gq_sim *s, struct gq_sim_replay *r);
/* Evaluates expectation i (one with 'at') now and keeps the result. */
void gq__scenario_expect_tev(struct gq_sim *s, struct gq_sim_replay *r,
                             int64_t i);
/* Checks the scenario's expectations against the store and the report;
 * prints one line per expectation. Returns the number that failed. */
int gq__scenario_check(struct gq_sim *s, struct gq_sim_replay *r,
                       const json_t *report);

#endif
