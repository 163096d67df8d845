/* queue/rebuild.h - rebuilding a cohort's Redis state from the Kubernetes
 * objects, and measuring how far Redis had drifted from them (DESIGN §4
 * "accounting is audited", §6 "rebuilt when it is empty or disagrees").
 *
 * The caller (the controller, after its informers have synced) says what
 * the objects show: the jobs waiting or admitted, and the admissions its
 * pods hold. gq_queue_rebuild() reads every key of the cohort (SCAN, then
 * one read per key), compares, reports the drift, and, when asked, makes
 * Redis equal to the objects in one script (queue/scripts/rebuild.lua).
 * Loop thread only; the callback runs exactly once, never synchronously.
 */
#ifndef GQ_QUEUE_REBUILD_H
#define GQ_QUEUE_REBUILD_H
#include <stddef.h>
#include <stdint.h>

#include "queue/queue.h"

/* A job the objects show (strings borrowed for the call). */
struct gq_rb_job {
  const char *uid, *team, *ns, *name;
  int32_t priority;
  int64_t queued_ms;
  int admitted;     /* 1: its pods hold (or are being given) GPUs (its
                       admission is a struct gq_rb_adm) */
};

/* An admission the objects show: GPUs of one attempt of a job. */
struct gq_rb_adm {
  const char *uid, *team, *flavor;
  long attempt;
  int64_t gpus;
};

/* How Redis differed from the objects (all counts; GPUs summed as
 * absolute differences per team and flavor). jobs_old_layout counts job
 * hashes an older gpuq wrote (fields member, qt, state, attempt; before
 * the admit script stopped touching job hashes): the repair rewrites them
 * in the current layout, and they are not drift. */
struct gq_rb_drift {
  long long jobs_missing, jobs_extra, jobs_changed, jobs_old_layout;
  long long adms_missing, adms_extra;
  long long gpus_diff;
  long long keys_read;
};

typedef void (*gq_rb_cb)(int rc, const struct gq_rb_drift *d, void *arg);

/* Compares (and with repair, rebuilds) the cohort's keys against the
 * objects. cohort NULL or "": a team without a cohort (teams then names
 * exactly that team). Every array is borrowed for the call only. rc 0, or
 * a negative GQ_E* (Redis down or failing: nothing was written). */
int gq_queue_rebuild(struct gq_queue *q, const char *cohort,
                     const char *const *teams, size_t n_teams,
                     const struct gq_rb_job *jobs, size_t n_jobs,
                     const struct gq_rb_adm *adms, size_t n_adms, int repair,
                     gq_rb_cb cb, void *arg);

#endif
