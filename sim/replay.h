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
  const char *series;     /* directory for the plot data files written at
                             the end (utilization.dat, queued.dat,
                             queue_times.dat; gnuplot format), or NULL */
  const char *scenario;   /* scenario YAML (tests/scenarios), or NULL */
  const char *const *hooks; /* "NAME=COMMAND" for scenario 'run' events */
  size_t n_hooks;
  int hold; /* --hold: the scenario's time 0 is POST /sim/v1/start, not the
               sim's start (its cluster and quotas exist from the start) */
  double idle_share; /* --idle-share: the share (0..1) of trace jobs that
                        are notebook-like (GQ_SIM_REPLAY_NOTEBOOK) */
};

/* The utilization timeline of a replay's notebook-like job (issue 22):
 * busy for an hour, then idle for two, over and over. */
#define GQ_SIM_REPLAY_NOTEBOOK "busy 0.85 for 1h, idle 0.02 for 2h"

/* A scenario (--scenario FILE) is a small replay written out in full:
 *
 *   cluster: {groups: [...], nodes: [...]}   # or a cluster file's path
 *   quotas: [<TeamQuota>, ...]
 *   jobs: [{at: 0, job: <GpuJob>}, ...]      # at: virtual seconds
 *   events:                                  # node events and hooks
 *   - {at: 600, node: gpu-a-00, action: drain}
 *   - {at: 900, node: gpu-a-01, action: device-plugin-loss, for: 300}
 *   - {at: 1200, run: restart-controller}    # a --hook NAME=COMMAND
 *   endWhen: allJobsEnded                    # or: timeout
 *   timeout: 7200                            # virtual seconds
 *   expect:
 *   - {job: team-a/j1, path: status.phase, equals: Succeeded}
 *   - {job: team-a/j1, path: status.preemptions, atLeast: 1}
 *   - {report: invariant_violations, equals: 0}
 *   - {object: {resource: teamquotas, name: team-a},
 *      path: status.usedGPUs, equals: 0}
 *   - {job: team-a/j2, path: status.message, contains: "quota 8"}
 *   - {submission: team-a/bad, contains: "spec.gpusPerReplica"}
 *
 * An expectation names its subject (job, object, report, pods: the number
 * of the job's pods holding resources, everyPod: each of those pods (the
 * test must hold at path of every one, and there must be one), or
 * submission: the API server's
 * answer to the sim's create of that job, or of "teamquotas/NAME", its
 * error message or "accepted"; a rejected TeamQuota does not stop the
 * scenario) and tests it with any of equals (JSON equality), in (equal to
 * one of a list), atLeast / atMost (numbers), exists (true / false) and
 * contains (a substring of a string, or of the JSON text of another
 * value); default: V is what an absent subject is tested as (a report
 * count without an entry: default: 0). With at: SECONDS it is evaluated at
 * that virtual time, otherwise at the end. A hook that exits non-zero
 * (or by a signal) fails the scenario too: hooks can check things. A GpuJob deleted by a scenario
 * hook has ended (its user deleted it). Two keys the sim ignores are read by
 * tests/integ/test_scenarios.c: controller: true (run it against the real
 * controller) and hooks: {NAME: shell command} (see docs/scenarios.md).
 *
 * At the end every expectation is checked and printed; the sim exits 0 if
 * all hold and no invariant was violated, 1 otherwise, with one line per
 * failed expectation naming it, the value found and the value wanted. */

/* Loads the trace, quotas and timeline and schedules the submissions
 * (virtual time 0 of the trace = now). Returns 0 or GQ_EINVAL / GQ_EIO
 * with a message naming the file, line and field. */
int gq_sim_replay_start(struct gq_sim *s, const struct gq_sim_replay_opts *o,
                        char *err, size_t errlen);
void gq_sim_replay_release(struct gq_sim *s);

/* Starts a scenario loaded with hold set: its time 0 is now (POST
 * /sim/v1/start). Returns 0, or -1 when no scenario is waiting. */
int gq_sim_replay_begin(struct gq_sim *s);

/* The replay's progress now, for GET /sim/v1/report while it runs: a new
 * object {virtual_s (seconds since the trace's time 0), jobs (in the
 * trace), submitted, queued (submitted, never started, not ended), running
 * (started at least once, not ended), ended, finished (bool)}; NULL when
 * no trace or scenario with jobs is replayed. */
json_t *gq_sim_replay_live(struct gq_sim *s);

/* Engine hooks. */
void gq_sim_replay_tev(struct gq_sim *s, const struct gq_tev *t);
/* A pod was created (pod: the stored object, borrowed): the first pod of
 * a replayed job (label gpuq.dev/job) marks when gpuq decided to start it
 * (jobs.csv, --series). */
void gq_sim_replay_pod_created(struct gq_sim *s, const json_t *pod);
void gq_sim_replay_job_started(struct gq_sim *s, const struct gq_sim_pod *p);
/* p ended by itself (its run finished or failed, not a deletion). */
void gq_sim_replay_pod_done(struct gq_sim *s, const struct gq_sim_pod *p);
void gq_sim_replay_job_phase(struct gq_sim *s, const json_t *job,
                             int deleted);

#endif
