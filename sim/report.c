/* sim/report.c - measurements of the simulated cluster (see report.h). */
#include "sim/report.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "sim/replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DETAILS 1000 /* violations / misses kept with their text */

static const struct gq_lc lc = {"sim", "check", NULL};

struct gq_sim_report {
  int64_t violations, misses, preemptions, resumes;
  json_t *violation_list, *miss_list;
  json_t *by_reason;     /* preemption reason -> count */
  json_t *resumed;       /* set of "job-uid/attempt" that resumed */
  json_t *preempted;     /* set of "job-uid/attempt" preempted */
  json_t *max_progress;  /* job uid -> most work any attempt reached (s) */
  json_t *team_gpu_s;    /* team -> GPU-seconds its pods ran */
  json_t *job_pods;      /* "ns/job" -> gpuq pods of the job started */
  json_t *job_preempt;   /* "ns/job" -> attempts stopped by a disruption */
  double lost_gpu_s;     /* work redone after preemptions, GPU-seconds */
  int64_t busy_gpus;     /* GPUs held by running pods now */
  int64_t busy_since_vms;
  double busy_gpu_s;
  struct gq_sim_usage_ledger usage; /* allocated / used / idle per team */
};

void gq_sim_report_init(struct gq_sim *s)
{
  struct gq_sim_report *r = gq_xcalloc(1, sizeof(*r));

  r->violation_list = json_array();
  r->miss_list = json_array();
  r->by_reason = json_object();
  r->resumed = json_object();
  r->preempted = json_object();
  r->job_pods = json_object();
  r->job_preempt = json_object();
  r->max_progress = json_object();
  r->team_gpu_s = json_object();
  r->busy_since_vms = gq_clock_now_ms();
  gq_sim_usage_init(&r->usage);
  s->engine->report = r;
}

void gq_sim_report_release(struct gq_sim *s)
{
  struct gq_sim_report *r = s->engine->report;

  if (!r)
    return;
  json_decref(r->violation_list);
  json_decref(r->miss_list);
  json_decref(r->by_reason);
  json_decref(r->job_pods);
  json_decref(r->job_preempt);
  json_decref(r->resumed);
  json_decref(r->preempted);
  json_decref(r->max_progress);
  json_decref(r->team_gpu_s);
  gq_sim_usage_release(&r->usage);
  free(r);
  s->engine->report = NULL;
}

static void keep(json_t *list, const char *what, const char *detail)
{
  char ts[40];

  if (json_array_size(list) >= MAX_DETAILS)
    return;
  gq_time_format(gq_clock_now_ms(), ts, sizeof(ts));
  json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "time", ts, "what",
                                        what, "detail", detail));
}

void gq_sim_report_violation(struct gq_sim *s, const char *inv,
                             const char *detail)
{
  struct gq_sim_report *r = s->engine->report;

  r->violations++;
  keep(r->violation_list, inv, detail);
  GQ_LOG(GQ_WARN, &lc, "invariant %s violated: %s", inv, detail);
}

void gq_sim_report_miss(struct gq_sim *s, const char *detail)
{
  struct gq_sim_report *r = s->engine->report;

  r->misses++;
  keep(r->miss_list, "placement-miss", detail);
  GQ_LOG(GQ_WARN, &lc, "placement miss: %s", detail);
}

/* Integrates busy GPUs up to now, then changes them by delta. */
static void busy(struct gq_sim_report *r, int64_t delta)
{
  int64_t now = gq_clock_now_ms();

  r->busy_gpu_s += (double)r->busy_gpus * (double)(now - r->busy_since_vms) /
                   1000.0;
  r->busy_since_vms = now;
  r->busy_gpus += delta;
}

static void attempt_key(const struct gq_sim_pod *p, char *buf, size_t len)
{
  snprintf(buf, len, "%s/%lld", p->job_uid, (long long)p->attempt);
}

/* Adds one to obj's counter for the pod's job ("ns/job"). */
static void count_job(json_t *obj, const struct gq_sim_pod *p)
{
  char key[300];

  snprintf(key, sizeof(key), "%s/%s", p->ns ? p->ns : "",
           p->job ? p->job : "");
  json_object_set_new(obj, key,
                      json_integer(json_integer_value(json_object_get(obj,
                                                                      key)) +
                                   1));
}

void gq_sim_report_pod_started(struct gq_sim *s, const struct gq_sim_pod *p)
{
  struct gq_sim_report *r = s->engine->report;
  double best;
  char key[300];

  busy(r, p->gpus);
  if (!p->job_uid)
    return;
  count_job(r->job_pods, p);
  best = json_real_value(json_object_get(r->max_progress, p->job_uid));
  if (best > p->base_s) /* work since the checkpoint is done again */
    r->lost_gpu_s += (best - p->base_s) * (double)p->gpus;
  attempt_key(p, key, sizeof(key));
  if (p->base_s > 0 && !json_object_get(r->resumed, key)) {
    json_object_set_new(r->resumed, key, json_true());
    r->resumes++;
  }
  gq_sim_replay_job_started(s, p);
}

/* Adds p's GPU usage from p->acct_vms to now to the ledger (exact from
 * its utilization timeline) and moves p->acct_vms to now. */
static void account_usage(struct gq_sim *s, struct gq_sim_pod *p)
{
  int64_t now = gq_clock_now_ms();

  gq_sim_usage_add_run(&s->engine->report->usage, p->team, &p->util,
                       p->whole_gpus, p->acct_vms - p->start_vms,
                       now - p->start_vms, s->engine->idle_pct);
  p->acct_vms = now;
}

/* A pod stopped running: its work and GPU time are accounted. */
static void stopped(struct gq_sim *s, struct gq_sim_pod *p)
{
  struct gq_sim_report *r = s->engine->report;
  double ran = (double)(gq_clock_now_ms() - p->start_vms) / 1000.0;
  double best;

  busy(r, -p->gpus);
  account_usage(s, p);
  if (*p->team)
    json_object_set_new(r->team_gpu_s, p->team,
                        json_real(json_real_value(json_object_get(
                                      r->team_gpu_s, p->team)) +
                                  ran * (double)p->gpus));
  if (!p->job_uid)
    return;
  best = json_real_value(json_object_get(r->max_progress, p->job_uid));
  if (p->exit_progress_s > best)
    json_object_set_new(r->max_progress, p->job_uid,
                        json_real(p->exit_progress_s));
}

void gq_sim_report_pod_stopped(struct gq_sim *s, struct gq_sim_pod *p,
                               int checkpointed, const char *reason)
{
  struct gq_sim_report *r = s->engine->report;
  char key[300];
  const char *why = reason ? reason : "Deleted";

  (void)checkpointed;
  stopped(s, p);
  if (!p->job_uid)
    return;
  attempt_key(p, key, sizeof(key));
  if (json_object_get(r->preempted, key))
    return; /* one preemption per job attempt, however many replicas */
  json_object_set_new(r->preempted, key, json_true());
  r->preemptions++;
  count_job(r->job_preempt, p);
  json_object_set_new(r->by_reason, why,
                      json_integer(json_integer_value(json_object_get(
                                       r->by_reason, why)) + 1));
}

void gq_sim_report_pod_ended(struct gq_sim *s, struct gq_sim_pod *p)
{
  stopped(s, p);
  if (p->job_uid)
    gq_sim_replay_pod_done(s, p);
}

void gq_sim_report_pod_gone(struct gq_sim *s, struct gq_sim_pod *p)
{
  if (p->running)
    stopped(s, p);
}

void gq_sim_report_tev(struct gq_sim *s, const struct gq_tev *t)
{
  gq_sim_replay_tev(s, t);
}

json_t *gq_sim_report_usage_json(const struct gq_sim_usage *u)
{
  return json_pack("{s:f, s:f, s:f}", "allocated_gpu_hours",
                   u->alloc_s / 3600.0, "used_gpu_hours", u->used_s / 3600.0,
                   "idle_gpu_hours", u->idle_s / 3600.0);
}

/* The usage figures of gq_sim_report_json(), added to rep: every running
 * pod's usage is first counted up to now. */
static void usage_json(struct gq_sim *s, json_t *rep)
{
  struct gq_sim_report *r = s->engine->report;
  int64_t now = gq_clock_now_ms(), alloc = 0;
  struct gq_sim_usage_team *t, *tmp;
  struct gq_sim_pod *p, *ptmp;
  json_t *teams = json_object();
  double used = 0;

  HASH_ITER(hh, s->engine->pods, p, ptmp) {
    if (!p->running)
      continue;
    account_usage(s, p);
    alloc += p->whole_gpus;
    used += (double)p->whole_gpus *
            gq_sim_gpuutil_at(&p->util, now - p->start_vms);
  }
  HASH_ITER(hh, r->usage.teams, t, tmp)
    json_object_set_new(teams, t->team, gq_sim_report_usage_json(&t->u));
  json_object_set_new(rep, "teams", teams);
  json_object_update_missing_new(rep, gq_sim_report_usage_json(&r->usage.total));
  json_object_set_new(rep, "allocated_gpus", json_integer(alloc));
  json_object_set_new(rep, "used_gpus", json_real(used));
  json_object_set_new(rep, "idle_threshold_pct",
                      json_real(s->engine->idle_pct));
}

json_t *gq_sim_report_json(struct gq_sim *s)
{
  struct gq_sim_report *r = s->engine->report;
  json_t *rep;

  busy(r, 0);
  rep = json_pack("{s:I, s:I, s:I, s:I, s:O, s:O, s:O, s:f, s:f, s:I, s:O, "
                   "s:O, s:O}",
                   "invariant_violations", (json_int_t)r->violations,
                   "placement_misses", (json_int_t)r->misses, "preemptions",
                   (json_int_t)r->preemptions, "checkpoint_resumes",
                   (json_int_t)r->resumes, "violations", r->violation_list,
                   "misses", r->miss_list, "preemptions_by_reason",
                   r->by_reason, "gpu_seconds_lost", r->lost_gpu_s,
                   "busy_gpu_seconds", r->busy_gpu_s, "busy_gpus",
                   (json_int_t)r->busy_gpus, "team_gpu_seconds",
                   r->team_gpu_s, "pods_started_by_job", r->job_pods,
                   "preemptions_by_job", r->job_preempt);
  usage_json(s, rep);
  return rep;
}
