/* Tests for decide/lifecycle: one GpuJob's lifecycle as a pure transition.
 * Each case is a job view, its pods and the time; the transition's effects
 * (in order, with their reasons and messages, which the controller writes
 * byte for byte) and the job view after them are compared with the
 * case's. No Redis, no sim, no clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decide/lifecycle.h"

#define NOW 1000000000000LL /* virtual ms */
#define MONO 5000000LL      /* monotonic ms */
#define MAX_PODS 8
#define MAX_TERMS 4

/* ---- fixtures ------------------------------------------------------- */

struct fx {
  struct gq_life_in in;
  struct gq_life_spec spec;
  struct gq_life_pod pods[MAX_PODS];
  struct gq_life_podev ev;
  struct gq_life_term terms[MAX_TERMS];
};

/* A valid job "ml/train" of team research (a TeamQuota that admits ml),
 * 2 replicas x 8 GPUs, backoffLimit 3, drainPolicy Requeue, not seen yet
 * (state CJ_NEW, adopted: no restart). */
static void base(struct fx *f)
{
  memset(f, 0, sizeof(*f));
  f->in.job = (struct gq_life_job){
      .key = "ml/train", .ns = "ml", .state = CJ_NEW, .phase = GQ_PHASE_NONE,
      .replicas = 2, .gpus = 16, .team = "research", .cohort = "",
      .q = {1, "", 1}, .reason = "", .adopted = 1, .cause_grace_s = -1,
      .deadline_s = -1, .startup_s = -1, .eta_ms = -1, .queued_ms = 1000};
  f->spec = (struct gq_life_spec){
      .exists = 1, .creation_ms = 1000, .team = "research", .replicas = 2,
      .gpus = 16, .gpus_per_replica = 8, .backoff_limit = 3,
      .deadline_s = -1, .startup_s = -1, .drain = GQ_DRAIN_REQUEUE,
      .grace_s = -1, .q_spec = {1, "", 1}, .st_reason = ""};
  f->in.spec = &f->spec;
  f->in.pods = f->pods;
  f->in.drain_wait_s = 600;
  f->in.now_ms = NOW;
  f->in.mono_ms = MONO;
}

/* The job with a checkpoint (300 s grace), drainPolicy Checkpoint. */
static void ckpt_job(struct fx *f)
{
  f->spec.has_checkpoint = 1;
  f->spec.grace_s = 300;
  f->spec.drain = GQ_DRAIN_CHECKPOINT;
}

static struct gq_life_pod *pod(struct fx *f, const char *name,
                               int64_t attempt, enum gq_pod_phase ph)
{
  struct gq_life_pod *p = &f->pods[f->in.n_pods++];

  *p = (struct gq_life_pod){name, attempt, ph, "", NULL, NULL, 0, -1,
                            ph != GQ_POD_SUCCEEDED && ph != GQ_POD_FAILED,
                            NULL};
  return p;
}

/* Attempt 1 admitted (its pods created: both seen), status published. */
static void admitted1(struct fx *f)
{
  struct gq_life_job *j = &f->in.job;

  j->state = CJ_ACTIVE;
  j->phase = GQ_PHASE_ADMITTED;
  j->attempt = 1;
  j->has_adm = j->has_nodes = 1;
  j->admitted_ms = NOW - 60000;
  j->reason = "Admitted";
  f->spec.st_phase = GQ_PHASE_ADMITTED;
  f->spec.st_attempts = 1;
  f->spec.st_reason = "Admitted";
  f->in.seen = 2;
}

/* Attempt 1 running on two pods. */
static void running1(struct fx *f)
{
  admitted1(f);
  f->in.job.running = 1;
  f->in.job.phase = GQ_PHASE_RUNNING;
  f->in.job.start_ms = f->in.job.first_start_ms = NOW - 30000;
  f->in.job.reason = "Running";
  pod(f, "train-1-0", 1, GQ_POD_RUNNING);
  pod(f, "train-1-1", 1, GQ_POD_RUNNING);
}

/* ---- the cases -------------------------------------------------------- */

enum entry { RECONCILE, PREEMPT, TEARDOWN, TICK, POD_SEEN };

struct want {
  enum gq_life_kind kind;
  const char *type, *reason, *str, *msg; /* NULL: not compared */
  int has_a; /* 1: a is compared; 2 (CAUSE): the cause is cleared */
  int64_t a;
};

#define E(k) {GQ_LIFE_##k, NULL, NULL, NULL, NULL, 0, 0}
#define EA(k, v) {GQ_LIFE_##k, NULL, NULL, NULL, NULL, 1, v}
#define EV(t, r, m) {GQ_LIFE_EVENT, t, r, NULL, m, 0, 0}
#define ST(r, m) {GQ_LIFE_STATUS, NULL, r, NULL, m, 0, 0}
#define CA(s, m) {GQ_LIFE_CAUSE, NULL, NULL, s, m, 0, 0}
#define LOGM(m) {GQ_LIFE_LOG, NULL, NULL, NULL, m, 0, 0}
#define CLR {GQ_LIFE_CAUSE, NULL, NULL, NULL, NULL, 2, 0} /* cleared */
#define END {-1, NULL, NULL, NULL, NULL, 0, 0}
#define REFRESH E(REFRESH)

struct tcase {
  const char *name;
  void (*setup)(struct fx *f);
  enum entry entry;
  struct want want[24];        /* terminated by END */
  enum cj_state state;
  enum cj_td td;
  enum gq_job_phase phase;
  int again, flush;
  void (*check)(const struct gq_life_out *o); /* more, or NULL */
};

/* ---- queued -> admitted -> running -> succeeded ---- */

static void s_new(struct fx *f)
{
  base(f);
}

static void s_admit_reply(struct fx *f)
{
  base(f);
  f->in.job.state = CJ_ADMITTING;
  f->in.job.phase = GQ_PHASE_ADMITTED;
  f->in.job.attempt = 1;
  f->in.job.has_adm = f->in.job.has_nodes = 1;
  f->in.job.create_pending = 1;
  f->in.job.adm_event = "attempt 1 admitted on n1,n2 (flavor h100)";
}

static void c_admit_created(const struct gq_life_out *o)
{
  assert_int_equal(o->job.create_pending, 0);
  assert_int_equal(o->job.creates_left, 2);
  assert_int_equal(o->job.preempted, 0);
}

static void s_admit_waiting(struct fx *f)
{
  s_admit_reply(f);
  f->in.job.create_pending = 0; /* Redis has not answered */
}

static void s_all_running(struct fx *f)
{
  base(f);
  admitted1(f);
  pod(f, "train-1-0", 1, GQ_POD_RUNNING);
  pod(f, "train-1-1", 1, GQ_POD_RUNNING);
}

static void c_running(const struct gq_life_out *o)
{
  assert_int_equal(o->job.running, 1);
  assert_int_equal(o->job.start_ms, NOW);
  assert_int_equal(o->job.first_start_ms, NOW);
}

static void s_one_running(struct fx *f)
{
  base(f);
  admitted1(f);
  pod(f, "train-1-0", 1, GQ_POD_RUNNING);
  pod(f, "train-1-1", 1, GQ_POD_PENDING);
}

static void s_succeeded(struct fx *f)
{
  base(f);
  running1(f);
  f->pods[0].phase = f->pods[1].phase = GQ_POD_SUCCEEDED;
  f->pods[0].holds = f->pods[1].holds = 0;
}

static void c_done(const struct gq_life_out *o)
{
  assert_int_equal(o->job.running, 0);
  assert_int_equal(o->job.completion_ms, NOW);
  assert_int_equal(o->job.has_adm, 0);
}

/* ---- failed replicas, backoffLimit ---- */

static void s_replica_failed(struct fx *f)
{
  base(f);
  running1(f);
  f->pods[1].phase = GQ_POD_FAILED;
  f->pods[1].holds = 0;
}

static void c_failed_counted(const struct gq_life_out *o)
{
  assert_int_equal(o->job.failures, 1);
  assert_int_equal(o->job.td_sent_ms, 0); /* no pod deleted before */
}

/* The record is stored (reason, failedAttempts, attempts): the teardown
 * deletes what holds. */
static void s_failed_recorded(struct fx *f)
{
  s_replica_failed(f);
  f->in.job.state = CJ_TEARDOWN;
  f->in.job.td = TD_FAILED;
  f->in.job.failures = 1;
  f->spec.st_reason = "ReplicaFailed";
  f->spec.st_failures = 1;
}

static void c_sent(const struct gq_life_out *o)
{
  assert_int_equal(o->job.td_sent_ms, MONO);
}

static void s_failed_unrecorded(struct fx *f)
{
  s_failed_recorded(f);
  f->spec.st_reason = "Running"; /* the write has not landed */
}

static void s_failed_gone(struct fx *f)
{
  s_failed_recorded(f);
  f->in.n_pods = 0;
}

static void s_requeued(struct fx *f)
{
  base(f);
  f->in.job.attempt = 1;
  f->in.job.failures = 1;
  f->in.job.phase = GQ_PHASE_QUEUED;
  f->in.job.reason = "Requeued";
}

static void s_backoff_exceeded(struct fx *f)
{
  s_failed_gone(f);
  f->in.job.failures = 4;
  f->spec.st_failures = 4;
}

/* ---- placement miss ---- */

static void s_miss(struct fx *f)
{
  base(f);
  admitted1(f);
  pod(f, "train-1-0", 1, GQ_POD_RUNNING);
  pod(f, "train-1-1", 1, GQ_POD_PENDING)->unschedulable = "Unschedulable";
}

static void c_not_counted(const struct gq_life_out *o)
{
  assert_int_equal(o->job.failures, 0);
}

static void s_miss_done(struct fx *f)
{
  base(f);
  admitted1(f);
  f->in.job.state = CJ_TEARDOWN;
  f->in.job.td = TD_MISS;
}

static void s_kubelet_rejected(struct fx *f)
{
  base(f);
  admitted1(f);
  pod(f, "train-1-0", 1, GQ_POD_FAILED)->status_reason = "OutOfnvidia.com/gpu";
  f->pods[0].holds = 0;
  pod(f, "train-1-1", 1, GQ_POD_RUNNING);
}

static void s_create_failed(struct fx *f)
{
  base(f);
  admitted1(f);
  f->in.job.create_miss = GQ_LIFE_MISS_NODE;
  f->in.seen = 1;
  pod(f, "train-1-0", 1, GQ_POD_PENDING);
}

/* ---- disruption and preemption: the checkpoint protocol ---- */

static void s_evicted(struct fx *f)
{
  base(f);
  ckpt_job(f);
  running1(f);
  f->pods[0].disruption = "EvictionByEvictionAPI";
  f->pods[0].deletion_ms = NOW - 1000;
  f->pods[0].deletion_grace_s = 300;
}

static void c_preempting(const struct gq_life_out *o)
{
  assert_int_equal(o->job.preempted, 1);
  assert_int_equal(o->job.td_ms, NOW);
  assert_int_equal(o->job.running, 0);
  assert_int_equal(o->job.cause_grace_s, 300);
}

static void s_pod_missing(struct fx *f)
{
  base(f);
  running1(f);
  f->in.n_pods = 1;
  f->in.seen = 1;
}

/* A pod event of replica 0 of the attempt in Preempting: its termination
 * message names the checkpoint. */
static void s_ckpt_event(struct fx *f)
{
  base(f);
  ckpt_job(f);
  running1(f);
  f->in.job.state = CJ_TEARDOWN;
  f->in.job.td = TD_DISRUPTED;
  f->in.job.td_ms = NOW - 20000;
  f->in.job.cause = "EvictionByEvictionAPI";
  f->in.job.cause_msg = "pod train-1-0 is being stopped";
  f->terms[0] = (struct gq_life_term){"step 5000\ncheckpoint=s3://b/ck-5 \n",
                                      NOW - 5000};
  f->ev = (struct gq_life_podev){"train-1-0", "1", "0", NULL, 1, 1, 300,
                                 f->terms, 1};
}

static void c_ckpt(const struct gq_life_out *o)
{
  assert_string_equal(o->job.ckpt, "s3://b/ck-5");
  assert_int_equal(o->job.ckpt_ms, NOW - 5000);
  assert_int_equal(o->job.ckpt_attempt, 1);
  assert_int_equal(o->eff[1].a, 15000); /* checkpoint duration */
}

/* The first stop seen of a pod of the running attempt is the cause. */
static void s_stop_event(struct fx *f)
{
  base(f);
  running1(f);
  f->ev = (struct gq_life_podev){"train-1-1", "1", "1", "", 1, 1, 30, NULL,
                                 0};
}

static void c_stop_grace(const struct gq_life_out *o)
{
  assert_int_equal(o->job.cause_grace_s, 30);
}

static void s_old_attempt_event(struct fx *f)
{
  s_stop_event(f);
  f->ev.attempt = "0";
}

static void s_disrupted_done(struct fx *f)
{
  base(f);
  ckpt_job(f);
  admitted1(f);
  f->in.job.state = CJ_TEARDOWN;
  f->in.job.td = TD_DISRUPTED;
  f->in.job.phase = GQ_PHASE_PREEMPTING;
  f->in.job.preempted = 1;
  f->in.job.start_ms = NOW - 3600000;
  f->in.job.td_ms = NOW - 60000;
  f->in.job.cause = "EvictionByEvictionAPI";
  f->in.job.ckpt = "s3://b/ck-5";
  f->in.job.ckpt_attempt = 1;
}

static void c_preemption_counted(const struct gq_life_out *o)
{
  assert_int_equal(o->job.preemptions, 1);
  assert_int_equal(o->job.td_ms, 0);
}

static void s_disrupted_no_ckpt(struct fx *f)
{
  s_disrupted_done(f);
  f->in.job.ckpt = NULL;
  f->in.job.ckpt_attempt = 0;
}

static void s_disrupted_prev_ckpt(struct fx *f)
{
  s_disrupted_done(f);
  f->in.job.ckpt = "s3://b/ck-1";
  f->in.job.ckpt_attempt = 0; /* read from the status: an earlier one */
  f->in.job.cause_grace_s = 30;
}

static void s_resume(struct fx *f)
{
  s_admit_reply(f);
  ckpt_job(f);
  f->in.job.attempt = 2;
  f->in.job.preempted = 1;
  f->in.job.cause = "EvictionByEvictionAPI";
  f->in.job.ckpt = "s3://b/ck-5";
  f->spec.st_attempts = 1;
  f->in.job.adm_event = "attempt 2 admitted on n1,n2 (flavor h100)";
}

static void s_preempt(struct fx *f)
{
  base(f);
  running1(f);
}

/* ---- drains ---- */

static void s_drain_requeue(struct fx *f)
{
  base(f);
  running1(f);
  f->pods[1].disruption = "EvictionByEvictionAPI";
}

static void s_drain_requeue_done(struct fx *f)
{
  s_disrupted_no_ckpt(f);
  f->spec.has_checkpoint = 0;
  f->spec.drain = GQ_DRAIN_REQUEUE;
}

static void s_wait_cordoned(struct fx *f)
{
  base(f);
  running1(f);
  f->spec.drain = GQ_DRAIN_WAIT;
  f->in.job.drain_wait = 1;
  f->in.job.pdb = 1;
  f->in.cordoned = "n1";
}

static void c_cordon_seen(const struct gq_life_out *o)
{
  assert_int_equal(o->job.cordon_ms, NOW);
  assert_int_equal(o->due, TD_NONE);
}

static void s_wait_expired(struct fx *f)
{
  s_wait_cordoned(f);
  f->in.job.cordon_ms = NOW - 600000;
}

static void c_drain_due(const struct gq_life_out *o)
{
  assert_int_equal(o->due, TD_DISRUPTED);
  assert_string_equal(o->due_cause, "DrainTimeout");
  assert_string_equal(o->due_why, "node n1 has been cordoned for 600s "
                                  "(drainPolicy Wait, at most --drain-wait)");
  assert_int_equal(o->job.cordon_ms, 0);
}

static void s_wait_no_pdb(struct fx *f)
{
  s_wait_cordoned(f);
  f->in.job.pdb = 0;
  f->in.cordoned = NULL;
}

static void s_wait_admit(struct fx *f)
{
  s_admit_reply(f);
  f->spec.drain = GQ_DRAIN_WAIT;
}

/* ---- startup timeout, active deadline ---- */

static void s_startup_due(struct fx *f)
{
  base(f);
  admitted1(f);
  f->in.job.startup_s = 30;
}

static void c_startup_due(const struct gq_life_out *o)
{
  assert_int_equal(o->due, TD_STARTUP);
  assert_string_equal(o->due_why, "replicas not all Running within "
                                  "spec.startupTimeoutSeconds");
}

static void s_startup_later(struct fx *f)
{
  s_startup_due(f);
  f->in.job.startup_s = 600;
}

static void c_startup_later(const struct gq_life_out *o)
{
  assert_int_equal(o->due, TD_NONE);
}

static void s_startup_teardown(struct fx *f)
{
  base(f);
  admitted1(f);
  pod(f, "train-1-0", 1, GQ_POD_PENDING);
}

static void s_deadline_due(struct fx *f)
{
  base(f);
  running1(f);
  f->in.job.deadline_s = 10;
}

static void c_deadline_due(const struct gq_life_out *o)
{
  assert_int_equal(o->due, TD_DEADLINE);
}

static void s_deadline_teardown(struct fx *f)
{
  base(f);
  running1(f);
  f->spec.deadline_s = 3600;
}

static void s_deadline_done(struct fx *f)
{
  s_deadline_teardown(f);
  f->in.job.state = CJ_TEARDOWN;
  f->in.job.td = TD_DEADLINE;
  f->in.n_pods = 0;
  f->spec.st_reason = "DeadlineExceeded";
}

/* ---- deletion ---- */

static void s_queued(struct fx *f)
{
  base(f);
  f->in.job.state = CJ_QUEUED;
  f->in.job.phase = GQ_PHASE_QUEUED;
  f->in.job.queued_team = "research";
  f->in.job.reason = "Queued";
}

static void s_delete_queued(struct fx *f)
{
  s_queued(f);
  f->spec.deletion_ms = NOW;
}

static void s_gone_queued(struct fx *f)
{
  s_queued(f);
  f->spec.exists = 0;
}

static void s_delete_admitting(struct fx *f)
{
  s_admit_reply(f);
  f->spec.deletion_ms = NOW;
}

static void s_delete_running(struct fx *f)
{
  base(f);
  running1(f);
  f->spec.deletion_ms = NOW;
}

static void s_delete_resend_guard(struct fx *f)
{
  s_delete_running(f);
  f->in.job.state = CJ_TEARDOWN;
  f->in.job.td = TD_DELETE;
  f->in.job.td_sent_ms = MONO - 1000;
}

static void s_delete_after_failure(struct fx *f)
{
  s_delete_resend_guard(f);
  f->in.job.td = TD_FAILED; /* not the deletion's: sent at once */
}

static void s_delete_pods_gone(struct fx *f)
{
  s_delete_resend_guard(f);
  f->in.n_pods = 0;
}

/* ---- suspend ---- */

static void s_suspend_queued(struct fx *f)
{
  s_queued(f);
  f->spec.suspend = 1;
}

static void s_suspend_running(struct fx *f)
{
  base(f);
  running1(f);
  f->spec.suspend = 1;
}

static void s_suspend_done(struct fx *f)
{
  s_suspend_running(f);
  f->in.job.state = CJ_TEARDOWN;
  f->in.job.td = TD_SUSPEND;
  f->in.n_pods = 0;
}

static void s_suspended(struct fx *f)
{
  base(f);
  f->spec.suspend = 1;
  f->in.job.attempt = 1;
}

/* ---- spec edits while admitted ---- */

static void s_edit_admitted(struct fx *f)
{
  base(f);
  running1(f);
  f->spec.gpus = 32;
  f->spec.gpus_per_replica = 16;
}

static void c_edit_told(const struct gq_life_out *o)
{
  assert_int_equal(o->job.edit_told, 1);
  assert_int_equal(o->job.gpus, 16); /* the attempt keeps its GPUs */
}

static void s_edit_told(struct fx *f)
{
  s_edit_admitted(f);
  f->in.job.edit_told = 1;
}

static void s_edit_queued(struct fx *f)
{
  s_queued(f);
  f->spec.gpus = 32;
  f->spec.gpus_per_replica = 16;
}

static void c_edit_taken(const struct gq_life_out *o)
{
  assert_int_equal(o->job.gpus, 32);
  assert_int_equal(o->job.edit_told, 0);
}

static void s_team_edit_requeue(struct fx *f)
{
  s_miss_done(f);
  f->spec.team = "infra";
  f->in.job.edit_told = 1; /* SpecChangeDeferred was told */
}

static void s_priority_edit(struct fx *f)
{
  s_queued(f);
  f->spec.priority = 50;
}

/* ---- restarts: adoption ---- */

static void restarted(struct fx *f)
{
  base(f);
  f->in.job.adopted = 0;
  f->in.job.queued_ms = 0;
  f->spec.st_queued_ms = 500;
  f->spec.st_admitted_ms = 900;
  f->spec.st_attempts = 1;
}

static void s_adopt_failed_record(struct fx *f)
{
  restarted(f);
  f->spec.st_phase = GQ_PHASE_RUNNING;
  f->spec.st_reason = "ReplicaFailed";
  f->spec.st_message = "attempt 1: a replica failed";
  f->spec.st_failures = 1;
  pod(f, "train-1-0", 1, GQ_POD_RUNNING)->flavor = "research:h100";
  pod(f, "train-1-1", 1, GQ_POD_FAILED)->holds = 0;
}

static void c_adopt_record(const struct gq_life_out *o)
{
  assert_int_equal(o->job.failures, 1); /* not counted again */
  assert_int_equal(o->job.attempt, 1);
  assert_int_equal(o->job.queued_ms, 500);
  assert_int_equal(o->job.adopted, 1);
  assert_string_equal(o->eff[2].str, "research:h100");
}

static void s_adopt_failed_unrecorded(struct fx *f)
{
  s_adopt_failed_record(f);
  f->spec.st_reason = "Running";
  f->spec.st_failures = 0;
}

static void s_adopt_missing_pods(struct fx *f)
{
  restarted(f);
  f->spec.st_phase = GQ_PHASE_ADMITTED;
  f->spec.st_reason = "Admitted";
  f->spec.st_n_nodes = 2;
  pod(f, "train-1-0", 1, GQ_POD_PENDING)->flavor = "research:h100";
}

static void s_adopt_missing_bad_nodes(struct fx *f)
{
  s_adopt_missing_pods(f);
  f->spec.st_nodes_bad = 1;
}

static void s_adopt_preempting(struct fx *f)
{
  restarted(f);
  ckpt_job(f);
  f->spec.st_phase = GQ_PHASE_PREEMPTING;
  f->spec.st_reason = "Disrupted";
  f->spec.st_checkpoint = "s3://b/ck-5";
  f->spec.st_checkpoint_ms = 800;
}

static void c_adopt_preempting(const struct gq_life_out *o)
{
  assert_string_equal(o->job.ckpt, "s3://b/ck-5");
  assert_int_equal(o->job.ckpt_attempt, 0);
  assert_int_equal(o->job.preempted, 1);
}

static void s_adopt_finished(struct fx *f)
{
  restarted(f);
  f->spec.st_phase = GQ_PHASE_SUCCEEDED;
  f->spec.st_reason = "Succeeded";
  pod(f, "train-1-0", 1, GQ_POD_RUNNING); /* lingering */
}

static void s_adopt_later_attempt(struct fx *f)
{
  restarted(f);
  f->spec.st_phase = GQ_PHASE_QUEUED;
  f->spec.st_reason = "Requeued";
  pod(f, "train-2-0", 2, GQ_POD_RUNNING)->flavor = "research:h100";
  pod(f, "train-2-1", 2, GQ_POD_RUNNING);
}

static void c_adopt_later(const struct gq_life_out *o)
{
  assert_int_equal(o->job.attempt, 2);
  assert_int_equal(o->job.running, 1);
}

static void s_adopt_old_generation(struct fx *f)
{
  restarted(f);
  f->spec.st_phase = GQ_PHASE_QUEUED;
  f->spec.st_attempts = 2;
  pod(f, "train-1-0", 1, GQ_POD_RUNNING);
}

static void s_adopt_arrival(struct fx *f)
{
  restarted(f);
  f->spec.st_queued_ms = 0;
  f->spec.creation_ms = 7000;
  f->in.job.queued_ms = 7400; /* arrived within creationTimestamp's second */
}

static void c_arrival(const struct gq_life_out *o)
{
  assert_int_equal(o->job.queued_ms, 7400);
}

/* ---- validation ---- */

static void s_invalid(struct fx *f)
{
  base(f);
  f->spec.invalid = "spec.gpusPerReplica: must be between 1 and 1024, got -2";
}

static void s_unknown_team(struct fx *f)
{
  base(f);
  f->spec.q_spec.exists = 0;
  f->spec.teams = "'infra', 'vision'";
}

static void s_forbidden(struct fx *f)
{
  s_queued(f);
  f->spec.q_spec.admits_ns = 0;
  f->in.job.q.admits_ns = 0;
}

static void s_unknown_pc(struct fx *f)
{
  base(f);
  f->spec.priority_class = "urgent";
}

#define RQ_EVENT                                                         \
  EV("Normal", "Requeued", "attempt 1: back in team 'research''s queue " \
     "at its original place")

static const struct tcase cases[] = {
    {"new job is queued", s_new, RECONCILE,
     {E(TAKE_SPEC), REFRESH, E(QUEUE_ADD),
      ST("Queued", "waiting in team 'research''s queue"), END},
     CJ_QUEUED, TD_NONE, GQ_PHASE_QUEUED, 0, 0, NULL},
    {"admit reply: active, pods created", s_admit_reply, RECONCILE,
     {REFRESH, E(ACTIVE),
      EV("Normal", "Admitted", "attempt 1 admitted on n1,n2 (flavor h100)"),
      EA(FINALIZER, 1), CLR, E(CREATE_PODS), END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_ADMITTED, 0, 1, c_admit_created},
    {"admit in flight: nothing", s_admit_waiting, RECONCILE,
     {REFRESH, END}, CJ_ADMITTING, TD_NONE, GQ_PHASE_ADMITTED, 0, 0, NULL},
    {"every replica running", s_all_running, RECONCILE,
     {REFRESH, EA(FINALIZER, 1), ST("Running", "all 2 replicas running"),
      EV("Normal", "Running", "all 2 replicas running"), END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_RUNNING, 0, 1, c_running},
    {"one replica pending: admitted", s_one_running, RECONCILE,
     {REFRESH, EA(FINALIZER, 1), END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_ADMITTED, 0, 1, NULL},
    {"every replica succeeded", s_succeeded, RECONCILE,
     {REFRESH, EA(FINALIZER, 1), E(RELEASE),
      ST("Succeeded", "all 2 replicas succeeded"),
      EV("Normal", "Succeeded", "all 2 replicas succeeded"),
      E(REDIS_REMOVE), END},
     CJ_DONE, TD_NONE, GQ_PHASE_SUCCEEDED, 0, 1, c_done},

    {"replica failed: counted, recorded first", s_replica_failed, RECONCILE,
     {REFRESH, EA(FINALIZER, 1),
      ST("ReplicaFailed", "attempt 1: a replica failed (failed attempts: 1, "
                          "spec.backoffLimit 3); its pods are deleted, then "
                          "it is requeued"),
      LOGM("job ml/train attempt 1: tearing down (ReplicaFailed): a replica "
           "failed"),
      EV("Warning", "ReplicaFailed", "attempt 1: a replica failed"), END},
     CJ_TEARDOWN, TD_FAILED, GQ_PHASE_RUNNING, 0, 1, c_failed_counted},
    {"failure not stored yet: nothing deleted", s_failed_unrecorded,
     RECONCILE, {REFRESH, END},
     CJ_TEARDOWN, TD_FAILED, GQ_PHASE_RUNNING, 0, 1, NULL},
    {"failure stored: pods deleted", s_failed_recorded, RECONCILE,
     {REFRESH, E(DELETE_PODS), END},
     CJ_TEARDOWN, TD_FAILED, GQ_PHASE_RUNNING, 0, 1, c_sent},
    {"failed attempt's pods gone: requeued", s_failed_gone, RECONCILE,
     {REFRESH, E(RELEASE), E(FREE_NODES), RQ_EVENT, E(REDIS_REQUEUE),
      ST("Requeued", "attempt 1 failed; 1 of 3 failed attempts allowed "
                     "used"), END},
     CJ_NEW, TD_NONE, GQ_PHASE_QUEUED, 1, 1, NULL},
    {"requeued after a failure: queued, no event", s_requeued, RECONCILE,
     {E(TAKE_SPEC), REFRESH, E(QUEUE_ADD), END},
     CJ_QUEUED, TD_NONE, GQ_PHASE_QUEUED, 0, 0, NULL},
    {"backoffLimit exceeded: Failed", s_backoff_exceeded, RECONCILE,
     {REFRESH, E(RELEASE),
      ST("BackoffLimitExceeded", "4 failed attempts, more than "
                                 "spec.backoffLimit 3"),
      EV("Warning", "BackoffLimitExceeded", "4 failed attempts, more than "
                                            "spec.backoffLimit 3"),
      E(REDIS_REMOVE), END},
     CJ_DONE, TD_FAILED, GQ_PHASE_FAILED, 0, 1, NULL},

    {"placement miss: not counted, pods deleted", s_miss, RECONCILE,
     {REFRESH, EA(FINALIZER, 1),
      LOGM("job ml/train attempt 1: tearing down (PlacementMiss): a pinned "
           "pod was not schedulable or was rejected by its kubelet"),
      EV("Warning", "PlacementMiss", "attempt 1: a pinned pod was not "
         "schedulable or was rejected by its kubelet"),
      E(DELETE_PODS), END},
     CJ_TEARDOWN, TD_MISS, GQ_PHASE_ADMITTED, 0, 1, c_not_counted},
    {"kubelet rejection is a miss", s_kubelet_rejected, RECONCILE,
     {REFRESH, EA(FINALIZER, 1), E(LOG),
      EV("Warning", "PlacementMiss", NULL), E(DELETE_PODS), END},
     CJ_TEARDOWN, TD_MISS, GQ_PHASE_ADMITTED, 0, 1, c_not_counted},
    {"placement miss done: placed again", s_miss_done, RECONCILE,
     {REFRESH, E(RELEASE), E(FREE_NODES), RQ_EVENT, E(REDIS_REQUEUE),
      ST("PlacementMiss", "attempt 1 could not run where gpuq placed it; "
                          "placing it again (not counted toward "
                          "backoffLimit)"), END},
     CJ_NEW, TD_NONE, GQ_PHASE_QUEUED, 1, 1, c_not_counted},
    {"its node gone at create: a miss", s_create_failed, RECONCILE,
     {REFRESH, EA(FINALIZER, 1),
      LOGM("job ml/train attempt 1: tearing down (PlacementMiss): its node "
           "is gone"),
      EV("Warning", "PlacementMiss", "attempt 1: its node is gone"),
      E(DELETE_PODS), END},
     CJ_TEARDOWN, TD_MISS, GQ_PHASE_ADMITTED, 1, 1, NULL},

    {"evicted: Preempting, checkpointing", s_evicted, RECONCILE,
     {REFRESH, EA(FINALIZER, 1),
      CA("EvictionByEvictionAPI", "pod train-1-0 is being stopped "
                                  "(DisruptionTarget: EvictionByEvictionAPI)"),
      ST("Disrupted", "pod train-1-0 is being stopped (DisruptionTarget: "
                      "EvictionByEvictionAPI); requeued once its pods are "
                      "gone"),
      EA(DRAIN_LIST, 1),
      EV("Normal", "Checkpointing", "attempt 1: its running replicas are "
         "deleted with their 300s grace period "
         "(checkpoint.gracePeriodSeconds) to write their checkpoint; its "
         "GPUs stay held until its pods are gone"),
      E(LOG),
      EV("Warning", "Disrupted", "attempt 1: pod train-1-0 is being stopped "
         "(DisruptionTarget: EvictionByEvictionAPI)"),
      E(DELETE_PODS), END},
     CJ_TEARDOWN, TD_DISRUPTED, GQ_PHASE_PREEMPTING, 0, 1, c_preempting},
    {"a pod of the gang missing: disrupted", s_pod_missing, RECONCILE,
     {REFRESH, EA(FINALIZER, 1),
      CA("PodMissing", "a pod of the gang is missing"),
      ST("Disrupted", "a pod of the gang is missing; requeued once its pods "
                      "are gone"),
      EA(DRAIN_LIST, 1), E(LOG),
      EV("Warning", "Disrupted", "attempt 1: a pod of the gang is missing"),
      E(DELETE_PODS), END},
     CJ_TEARDOWN, TD_DISRUPTED, GQ_PHASE_PREEMPTING, 0, 1, NULL},
    {"checkpoint read from the termination message", s_ckpt_event, POD_SEEN,
     {{GQ_LIFE_CKPT, NULL, NULL, "s3://b/ck-5", NULL, 1, NOW - 5000},
      E(M_CKPT),
      LOGM("job ml/train attempt 1: checkpoint s3://b/ck-5"),
      EV("Normal", "Checkpointed", "attempt 1 wrote checkpoint s3://b/ck-5"),
      END},
     CJ_TEARDOWN, TD_DISRUPTED, GQ_PHASE_RUNNING, 0, 1, c_ckpt},
    {"first stop seen is the cause", s_stop_event, POD_SEEN,
     {CA("Disrupted", "pod train-1-1 is being stopped (DisruptionTarget: "
                      "Disrupted)"), END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_RUNNING, 0, 0, c_stop_grace},
    {"an older attempt's pod event: nothing", s_old_attempt_event, POD_SEEN,
     {END}, CJ_ACTIVE, TD_NONE, GQ_PHASE_RUNNING, 0, 0, NULL},
    {"disrupted, checkpointed: requeued to resume", s_disrupted_done,
     RECONCILE,
     {REFRESH, E(RELEASE), E(FREE_NODES), RQ_EVENT, E(REDIS_REQUEUE),
      EA(DRAIN_LIST, 0),
      {GQ_LIFE_M_PREEMPTION, NULL, NULL, "EvictionByEvictionAPI", NULL, 0, 0},
      ST("Requeued", "attempt 1 was disrupted (EvictionByEvictionAPI); "
                     "requeued at its original place, resumes from "
                     "checkpoint s3://b/ck-5"),
      E(VICTIM_DONE), END},
     CJ_NEW, TD_NONE, GQ_PHASE_QUEUED, 1, 1, c_preemption_counted},
    {"disrupted, no checkpoint: NoCheckpoint", s_disrupted_no_ckpt,
     RECONCILE,
     {REFRESH, E(RELEASE), E(FREE_NODES), RQ_EVENT, E(REDIS_REQUEUE),
      EA(DRAIN_LIST, 0), E(M_PREEMPTION), E(M_LOST),
      ST("Requeued", "attempt 1 was disrupted (EvictionByEvictionAPI); "
                     "requeued at its original place, starts over (no "
                     "checkpoint yet)"),
      EV("Warning", "NoCheckpoint", "attempt 1 wrote no checkpoint within "
         "its 300s grace period and there is no earlier one: the next "
         "attempt starts over"),
      E(VICTIM_DONE), END},
     CJ_NEW, TD_NONE, GQ_PHASE_QUEUED, 1, 1, c_preemption_counted},
    {"disrupted, earlier checkpoint stands", s_disrupted_prev_ckpt,
     RECONCILE,
     {REFRESH, E(RELEASE), E(FREE_NODES), RQ_EVENT, E(REDIS_REQUEUE),
      EA(DRAIN_LIST, 0), E(M_PREEMPTION), E(M_LOST),
      ST("Requeued", "attempt 1 was disrupted (EvictionByEvictionAPI) and "
                     "wrote no checkpoint; requeued at its original place, "
                     "resumes from the previous checkpoint s3://b/ck-1"),
      EV("Warning", "NoCheckpoint", "attempt 1 wrote no checkpoint within "
         "the 30s grace period it was given (checkpoint.gracePeriodSeconds: "
         "300s): the next attempt resumes from the previous checkpoint "
         "s3://b/ck-1"),
      E(VICTIM_DONE), END},
     CJ_NEW, TD_NONE, GQ_PHASE_QUEUED, 1, 1, NULL},
    {"next attempt resumes from the checkpoint", s_resume, RECONCILE,
     {REFRESH, E(ACTIVE), EV("Normal", "Admitted", NULL), EA(FINALIZER, 1),
      CLR, E(M_RESUME),
      EV("Normal", "Resuming", "attempt 2 starts from checkpoint s3://b/ck-5 "
         "(GPUQ_RESUME_FROM)"),
      E(CREATE_PODS), END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_ADMITTED, 0, 1, c_admit_created},
    {"preempted by priority", s_preempt, PREEMPT,
     {CA("PreemptedByPriority", "preempted for job ml/big"),
      ST("Disrupted", "preempted for job ml/big; requeued once its pods are "
                      "gone"),
      EA(DRAIN_LIST, 1),
      LOGM("job ml/train attempt 1: tearing down (Disrupted): preempted for "
           "job ml/big"),
      EV("Warning", "Disrupted", "attempt 1: preempted for job ml/big"),
      E(DELETE_PODS), END},
     CJ_TEARDOWN, TD_DISRUPTED, GQ_PHASE_PREEMPTING, 0, 1, NULL},

    {"drainPolicy Requeue: evicted, no checkpointing", s_drain_requeue,
     RECONCILE,
     {REFRESH, EA(FINALIZER, 1), E(CAUSE), E(STATUS), EA(DRAIN_LIST, 1),
      E(LOG), EV("Warning", "Disrupted", NULL), E(DELETE_PODS), END},
     CJ_TEARDOWN, TD_DISRUPTED, GQ_PHASE_PREEMPTING, 0, 1, NULL},
    {"drainPolicy Requeue: requeued, no NoCheckpoint", s_drain_requeue_done,
     RECONCILE,
     {REFRESH, E(RELEASE), E(FREE_NODES), RQ_EVENT, E(REDIS_REQUEUE),
      EA(DRAIN_LIST, 0), E(M_PREEMPTION), E(M_LOST),
      ST("Requeued", "attempt 1 was disrupted (EvictionByEvictionAPI); "
                     "requeued at its original place"),
      E(VICTIM_DONE), END},
     CJ_NEW, TD_NONE, GQ_PHASE_QUEUED, 1, 1, NULL},
    {"drainPolicy Wait: cordon seen, waiting", s_wait_cordoned, TICK,
     {EV("Normal", "DrainWaiting", "node n1 is cordoned: drainPolicy Wait "
         "keeps the job running (its PodDisruptionBudget refuses evictions) "
         "for at most 600s, then checkpoints it"), END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_RUNNING, 0, 0, c_cordon_seen},
    {"drainPolicy Wait: wait over, checkpointed", s_wait_expired, TICK,
     {END}, CJ_ACTIVE, TD_NONE, GQ_PHASE_RUNNING, 0, 0, c_drain_due},
    {"drainPolicy Wait: budget made", s_wait_no_pdb, TICK,
     {EA(PDB, 1), END}, CJ_ACTIVE, TD_NONE, GQ_PHASE_RUNNING, 0, 0, NULL},
    {"drainPolicy Wait: budget with the pods", s_wait_admit, RECONCILE,
     {REFRESH, E(ACTIVE), E(EVENT), EA(FINALIZER, 1), E(CAUSE), EA(PDB, 1),
      E(CREATE_PODS), END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_ADMITTED, 0, 1, NULL},

    {"startup timeout due", s_startup_due, TICK, {END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_ADMITTED, 0, 0, c_startup_due},
    {"startup timeout later", s_startup_later, TICK, {END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_ADMITTED, 0, 0, c_startup_later},
    {"startup timeout: counted", s_startup_teardown, TEARDOWN,
     {ST("StartupTimeout", "attempt 1: replicas not all Running within "
                           "spec.startupTimeoutSeconds (failed attempts: 1, "
                           "spec.backoffLimit 3); its pods are deleted, then "
                           "it is requeued"),
      E(LOG), EV("Warning", "StartupTimeout", "attempt 1: replicas not all "
                 "Running within spec.startupTimeoutSeconds"), END},
     CJ_TEARDOWN, TD_STARTUP, GQ_PHASE_ADMITTED, 0, 1, c_failed_counted},
    {"active deadline due", s_deadline_due, TICK, {END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_RUNNING, 0, 0, c_deadline_due},
    {"active deadline: recorded first", s_deadline_teardown, TEARDOWN,
     {ST("DeadlineExceeded", "attempt 1: spec.activeDeadlineSeconds passed; "
                             "its pods are deleted, then it fails"),
      E(LOG), EV("Warning", "DeadlineExceeded", NULL), END},
     CJ_TEARDOWN, TD_DEADLINE, GQ_PHASE_RUNNING, 0, 1, NULL},
    {"active deadline: Failed", s_deadline_done, RECONCILE,
     {REFRESH, E(RELEASE),
      ST("DeadlineExceeded", "ran longer than spec.activeDeadlineSeconds "
                             "3600"),
      EV("Warning", "DeadlineExceeded", "ran longer than "
         "spec.activeDeadlineSeconds 3600"), E(REDIS_REMOVE), END},
     CJ_DONE, TD_DEADLINE, GQ_PHASE_FAILED, 0, 1, NULL},

    {"deleted while queued", s_delete_queued, RECONCILE,
     {E(QUEUE_DEL), E(REDIS_REMOVE), EA(FINALIZER, 0), END},
     CJ_QUEUED, TD_NONE, GQ_PHASE_QUEUED, 0, 0, NULL},
    {"gone while queued: forgotten", s_gone_queued, RECONCILE,
     {E(QUEUE_DEL), E(REDIS_REMOVE), E(FORGET), END},
     CJ_QUEUED, TD_NONE, GQ_PHASE_QUEUED, 0, 0, NULL},
    {"deleted while admitted: unassumed", s_delete_admitting, RECONCILE,
     {E(UNASSUME), E(RELEASE), E(REDIS_REMOVE), EA(FINALIZER, 0), END},
     CJ_DONE, TD_NONE, GQ_PHASE_ADMITTED, 0, 0, NULL},
    {"deleted while running: pods first", s_delete_running, RECONCILE,
     {E(DELETE_PODS), END},
     CJ_TEARDOWN, TD_DELETE, GQ_PHASE_RUNNING, 0, 0, c_sent},
    {"deletion resends after a while only", s_delete_resend_guard, RECONCILE,
     {END}, CJ_TEARDOWN, TD_DELETE, GQ_PHASE_RUNNING, 0, 0, NULL},
    {"deletion during another teardown: at once", s_delete_after_failure,
     RECONCILE, {E(DELETE_PODS), END},
     CJ_TEARDOWN, TD_DELETE, GQ_PHASE_RUNNING, 0, 0, c_sent},
    {"deleted, pods gone: released, removed", s_delete_pods_gone, RECONCILE,
     {E(RELEASE), E(REDIS_REMOVE), EA(FINALIZER, 0), END},
     CJ_TEARDOWN, TD_DELETE, GQ_PHASE_RUNNING, 0, 0, NULL},

    {"suspended while queued", s_suspend_queued, RECONCILE,
     {E(TAKE_SPEC), REFRESH, E(QUEUE_DEL), E(REDIS_REMOVE),
      ST("Suspended", "spec.suspend is true"), END},
     CJ_WAITING, TD_NONE, GQ_PHASE_SUSPENDED, 0, 1, NULL},
    {"suspended while running: torn down", s_suspend_running, RECONCILE,
     {REFRESH, EA(FINALIZER, 1),
      LOGM("job ml/train attempt 1: tearing down (Suspended): spec.suspend "
           "is true"),
      EV("Normal", "Suspended", "attempt 1: spec.suspend is true"),
      E(DELETE_PODS), END},
     CJ_TEARDOWN, TD_SUSPEND, GQ_PHASE_RUNNING, 0, 1, NULL},
    {"suspend teardown over: released", s_suspend_done, RECONCILE,
     {REFRESH, E(RELEASE), E(FREE_NODES), END},
     CJ_NEW, TD_NONE, GQ_PHASE_RUNNING, 1, 1, NULL},
    {"suspend teardown over: parked", s_suspended, RECONCILE,
     {E(TAKE_SPEC), REFRESH, ST("Suspended", "spec.suspend is true"), END},
     CJ_WAITING, TD_NONE, GQ_PHASE_SUSPENDED, 0, 1, NULL},

    {"spec edit while admitted: deferred, told", s_edit_admitted, RECONCILE,
     {EV("Warning", "SpecChangeDeferred", "attempt 1 keeps what it was "
         "admitted with (team research, 2 x 8 GPUs); the edited spec (team "
         "research, 2 x 16 GPUs) applies when the job is queued again"),
      REFRESH, EA(FINALIZER, 1), END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_RUNNING, 0, 1, c_edit_told},
    {"spec edit told once per attempt", s_edit_told, RECONCILE,
     {REFRESH, EA(FINALIZER, 1), END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_RUNNING, 0, 1, c_edit_told},
    {"spec edit while queued: taken", s_edit_queued, RECONCILE,
     {E(TAKE_SPEC), REFRESH, END},
     CJ_QUEUED, TD_NONE, GQ_PHASE_QUEUED, 0, 0, c_edit_taken},
    {"team edited: requeued in the new team", s_team_edit_requeue, RECONCILE,
     {REFRESH, E(RELEASE), E(FREE_NODES),
      EV("Normal", "Requeued", "attempt 1: queued again in team 'infra' "
         "(spec.team was edited)"),
      E(REDIS_REMOVE), E(STATUS), END},
     CJ_NEW, TD_NONE, GQ_PHASE_QUEUED, 1, 1, NULL},
    {"priority edit: queued again", s_priority_edit, RECONCILE,
     {E(TAKE_SPEC), REFRESH, E(QUEUE_DEL), E(REDIS_REMOVE), E(QUEUE_ADD),
      END},
     CJ_QUEUED, TD_NONE, GQ_PHASE_QUEUED, 0, 0, NULL},

    {"restart: recorded failure taken up", s_adopt_failed_record, RECONCILE,
     {{GQ_LIFE_STATUS, NULL, NULL, "ReplicaFailed",
       "attempt 1: a replica failed", 0, 0},
      E(ACTIVE), E(ADOPT_USE),
      LOGM("job ml/train attempt 1: taking up its teardown (ReplicaFailed) "
           "after a restart"), END},
     CJ_TEARDOWN, TD_FAILED, GQ_PHASE_RUNNING, 1, 0, c_adopt_record},
    {"restart: unrecorded failure stays admitted", s_adopt_failed_unrecorded,
     RECONCILE, {E(STATUS), E(ACTIVE), E(ADOPT_USE), END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_RUNNING, 1, 0, NULL},
    {"restart: missing pods created again", s_adopt_missing_pods, RECONCILE,
     {E(STATUS), E(ACTIVE), E(ADOPT_USE), E(RESUME_NODES),
      LOGM("job ml/train attempt 1: pods missing after a restart; creating "
           "them again"), CLR, E(CREATE_PODS), END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_ADMITTED, 1, 0, NULL},
    {"restart: missing pods, nodes unknown", s_adopt_missing_bad_nodes,
     RECONCILE, {E(STATUS), E(ACTIVE), E(ADOPT_USE), END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_ADMITTED, 1, 0, NULL},
    {"restart: Preempting, pods gone", s_adopt_preempting, RECONCILE,
     {E(STATUS), {GQ_LIFE_CKPT, NULL, NULL, "s3://b/ck-5", NULL, 1, 800},
      CA("PodMissing", "a pod of the gang is missing"),
      ST("Disrupted", "a pod of the gang is missing; requeued once its pods "
                      "are gone"),
      EA(DRAIN_LIST, 1), E(EVENT),
      LOGM("job ml/train attempt 1: taking up its teardown (Disrupted) after "
           "a restart"), END},
     CJ_TEARDOWN, TD_DISRUPTED, GQ_PHASE_PREEMPTING, 1, 0,
     c_adopt_preempting},
    {"restart: finished, lingering pod deleted", s_adopt_finished, RECONCILE,
     {E(STATUS), E(DELETE_PODS), END},
     CJ_DONE, TD_NONE, GQ_PHASE_SUCCEEDED, 1, 0, NULL},
    {"restart: a later attempt's pods", s_adopt_later_attempt, RECONCILE,
     {E(ACTIVE), E(ADOPT_USE), END},
     CJ_ACTIVE, TD_NONE, GQ_PHASE_QUEUED, 1, 0, c_adopt_later},
    {"restart: an older generation terminating", s_adopt_old_generation,
     RECONCILE, {END}, CJ_TEARDOWN, TD_DISRUPTED, GQ_PHASE_QUEUED, 1, 0,
     NULL},
    {"restart: arrival order within a second", s_adopt_arrival, RECONCILE,
     {END}, CJ_NEW, TD_NONE, GQ_PHASE_NONE, 1, 0, c_arrival},

    {"invalid spec: Failed", s_invalid, RECONCILE,
     {ST("InvalidSpec", "spec.gpusPerReplica: must be between 1 and 1024, "
                        "got -2"),
      EV("Warning", "InvalidSpec", "spec.gpusPerReplica: must be between 1 "
         "and 1024, got -2"), END},
     CJ_DONE, TD_NONE, GQ_PHASE_FAILED, 0, 1, NULL},
    {"unknown team: waits, named", s_unknown_team, RECONCILE,
     {E(TAKE_SPEC), REFRESH,
      ST("UnknownTeam", "spec.team: no TeamQuota named 'research'; teams "
                        "that exist: 'infra', 'vision'"), END},
     CJ_WAITING, TD_NONE, GQ_PHASE_QUEUED, 0, 1, NULL},
    {"namespace not admitted: Forbidden", s_forbidden, RECONCILE,
     {E(TAKE_SPEC), REFRESH, E(QUEUE_DEL),
      ST("Forbidden", "namespace 'ml' may not use team 'research' (TeamQuota "
                      "spec.namespaces does not list it)"),
      EV("Warning", "Forbidden", NULL), E(REDIS_REMOVE), END},
     CJ_DONE, TD_NONE, GQ_PHASE_FAILED, 0, 1, NULL},
    {"unknown PriorityClass: Failed", s_unknown_pc, RECONCILE,
     {E(TAKE_SPEC), REFRESH,
      ST("UnknownPriorityClass", "spec.priorityClassName: no PriorityClass "
                                 "named 'urgent'"),
      EV("Warning", "UnknownPriorityClass", NULL), E(REDIS_REMOVE), END},
     CJ_DONE, TD_NONE, GQ_PHASE_FAILED, 0, 1, NULL},
};

/* ---- the runner ------------------------------------------------------- */

static const char *kind_name(int k)
{
  static char buf[16];

  snprintf(buf, sizeof(buf), "kind %d", k);
  return buf;
}

static void run(const struct tcase *t, struct fx *f, struct gq_life_out *o,
                int64_t *next_ms)
{
  t->setup(f);
  switch (t->entry) {
  case RECONCILE: gq_life_reconcile(&f->in, o); break;
  case PREEMPT:
    gq_life_preempt(&f->in, "PreemptedByPriority", "preempted for job ml/big",
                    o);
    break;
  case TEARDOWN:
    gq_life_teardown(&f->in, t->setup == s_startup_teardown ? TD_STARTUP
                                                            : TD_DEADLINE,
                     t->setup == s_startup_teardown
                         ? "replicas not all Running within "
                           "spec.startupTimeoutSeconds"
                         : "spec.activeDeadlineSeconds passed",
                     o);
    break;
  case TICK: gq_life_tick(&f->in, o, next_ms); break;
  case POD_SEEN: gq_life_pod_seen(&f->in, &f->ev, o); break;
  }
}

static void same_str(const char *name, size_t i, const char *what,
                     const char *want, const char *got)
{
  if (!want)
    return;
  if (!got || strcmp(want, got))
    fail_msg("%s: effect %zu: %s\n  want \"%s\"\n  got  \"%s\"", name, i,
             what, want, got ? got : "(null)");
}

static void check_effects(const struct tcase *t, const struct gq_life_out *o)
{
  size_t n = 0;

  while (t->want[n].kind != (enum gq_life_kind)-1)
    n++;
  for (size_t i = 0; i < o->n || i < n; i++) {
    const struct want *w = i < n ? &t->want[i] : NULL;
    const struct gq_life_eff *e = i < o->n ? &o->eff[i] : NULL;

    if (!w || !e || w->kind != e->kind)
      fail_msg("%s: effect %zu: want %s, got %s", t->name, i,
               w ? kind_name(w->kind) : "none",
               e ? kind_name(e->kind) : "none");
    same_str(t->name, i, "type", w->type, e->type);
    same_str(t->name, i, "reason", w->reason, e->reason);
    same_str(t->name, i, "str", w->str, e->str);
    same_str(t->name, i, "msg", w->msg, e->msg);
    if (w->has_a == 2 && (e->str || e->msg))
      fail_msg("%s: effect %zu: want the cause cleared", t->name, i);
    if (w->has_a == 1 && w->a != e->a)
      fail_msg("%s: effect %zu: a: want %lld, got %lld", t->name, i,
               (long long)w->a, (long long)e->a);
  }
}

static void test_cases(void **state)
{
  static struct fx f;
  static struct gq_life_out o;

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const struct tcase *t = &cases[i];
    int64_t next = -1;

    run(t, &f, &o, &next);
    check_effects(t, &o);
    if (o.job.state != t->state || o.job.td != t->td ||
        o.job.phase != t->phase)
      fail_msg("%s: state %d td %d phase %d, want %d %d %d", t->name,
               o.job.state, o.job.td, o.job.phase, t->state, t->td, t->phase);
    if (o.again != t->again || o.flush != t->flush)
      fail_msg("%s: again %d flush %d, want %d %d", t->name, o.again, o.flush,
               t->again, t->flush);
    if (t->check)
      t->check(&o);
  }
}

/* The view a driver writes back (the W fields) and what the effects do to
 * the record, fed to the next transition: a failed attempt with
 * backoffLimit 0 goes from Running to Failed, its pods deleted only once
 * its record is stored, released and removed only once they are gone. */
static int has_kind(const struct gq_life_out *o, enum gq_life_kind k)
{
  for (size_t i = 0; i < o->n; i++)
    if (o->eff[i].kind == k)
      return 1;
  return 0;
}

static void test_chain_failure(void **state)
{
  static struct fx f;
  static struct gq_life_out o;

  (void)state;
  base(&f);
  running1(&f);
  f.spec.backoff_limit = 0;
  f.pods[1].phase = GQ_POD_FAILED;
  f.pods[1].holds = 0;
  gq_life_reconcile(&f.in, &o); /* counted, recorded first */
  assert_int_equal(o.job.state, CJ_TEARDOWN);
  assert_false(has_kind(&o, GQ_LIFE_DELETE_PODS));
  assert_string_equal(o.eff[2].msg, "attempt 1: a replica failed (failed "
                      "attempts: 1, spec.backoffLimit 0); its pods are "
                      "deleted, then it fails");
  f.in.job = o.job;
  gq_life_reconcile(&f.in, &o); /* the write has not landed: waits */
  assert_false(has_kind(&o, GQ_LIFE_DELETE_PODS));
  f.spec.st_reason = "ReplicaFailed"; /* it has */
  f.spec.st_failures = 1;
  f.in.job = o.job;
  gq_life_reconcile(&f.in, &o);
  assert_true(has_kind(&o, GQ_LIFE_DELETE_PODS));
  assert_false(has_kind(&o, GQ_LIFE_RELEASE));
  f.in.job = o.job;
  f.in.mono_ms += 1000; /* the pod is terminating: no resend yet */
  f.pods[0].deletion_ms = NOW;
  gq_life_reconcile(&f.in, &o);
  assert_false(has_kind(&o, GQ_LIFE_DELETE_PODS));
  f.in.job = o.job;
  f.in.mono_ms += GQ_LIFE_REDELETE_MS; /* still there: resent */
  gq_life_reconcile(&f.in, &o);
  assert_true(has_kind(&o, GQ_LIFE_DELETE_PODS));
  f.in.job = o.job;
  f.in.n_pods = 0; /* gone */
  gq_life_reconcile(&f.in, &o);
  assert_true(has_kind(&o, GQ_LIFE_RELEASE));
  assert_true(has_kind(&o, GQ_LIFE_REDIS_REMOVE));
  assert_int_equal(o.job.state, CJ_DONE);
  assert_int_equal(o.job.phase, GQ_PHASE_FAILED);
  assert_string_equal(o.job.reason, "BackoffLimitExceeded");
  f.in.job = o.job;
  f.in.job.has_adm = 0; /* released */
  gq_life_reconcile(&f.in, &o); /* finished: stays so */
  assert_int_equal(o.job.state, CJ_DONE);
  assert_int_equal(o.n, 1); /* REFRESH only */
}

/* A stand-in of pods gpuq did not create (spec one_shot): a disrupted
 * attempt ends it Failed, reason Preempted, instead of a requeue. */
static void test_one_shot_disrupted(void **state)
{
  static struct fx f;
  static struct gq_life_out o;

  (void)state;
  base(&f);
  running1(&f);
  f.spec.one_shot = 1;
  gq_life_preempt(&f.in, "PreemptedByPriority", "a job of priority 1000 "
                  "needs its GPUs", &o);
  assert_int_equal(o.job.state, CJ_TEARDOWN);
  assert_true(has_kind(&o, GQ_LIFE_DELETE_PODS));
  f.in.job = o.job;
  f.in.job.cause = "PreemptedByPriority";
  f.in.n_pods = 0; /* its pods are gone */
  gq_life_reconcile(&f.in, &o);
  assert_true(has_kind(&o, GQ_LIFE_M_LOST)); /* no resume: counted lost */
  assert_int_equal(o.job.state, CJ_DONE);
  assert_int_equal(o.job.phase, GQ_PHASE_FAILED);
  assert_string_equal(o.job.reason, "Preempted");
  assert_int_equal(o.job.preemptions, 1);
  assert_true(has_kind(&o, GQ_LIFE_RELEASE));
  assert_true(has_kind(&o, GQ_LIFE_VICTIM_DONE));
  assert_false(has_kind(&o, GQ_LIFE_REDIS_REQUEUE));
}

/* A job preempted for idle GPUs (issue 22) goes to the back of its queue:
 * a new queue time, removed from Redis (the next reconcile queues it
 * again), not requeued at its original place. */
static void test_idle_requeued_at_back(void **state)
{
  static struct fx f;
  static struct gq_life_out o;
  int64_t queued;

  (void)state;
  base(&f);
  running1(&f);
  queued = f.in.job.queued_ms;
  gq_life_preempt(&f.in, GQ_LIFE_CAUSE_IDLE, "its GPUs stayed idle", &o);
  assert_int_equal(o.job.state, CJ_TEARDOWN);
  f.in.job = o.job;
  f.in.job.cause = GQ_LIFE_CAUSE_IDLE;
  f.in.n_pods = 0;
  f.in.now_ms = queued + 7200000;
  gq_life_reconcile(&f.in, &o);
  assert_int_equal(o.job.state, CJ_NEW);
  assert_int_equal(o.job.phase, GQ_PHASE_QUEUED);
  assert_true(o.job.queued_ms == f.in.now_ms);
  assert_true(has_kind(&o, GQ_LIFE_REDIS_REMOVE));
  assert_false(has_kind(&o, GQ_LIFE_REDIS_REQUEUE));
}

/* A Job stand-in ends with its Job (spec ended): once its pods are gone,
 * Succeeded (or Failed, JobFailed) with the condition's message; while a
 * pod holds resources it waits. */
static void test_job_ended(void **state)
{
  static struct fx f;
  static struct gq_life_out o;

  (void)state;
  base(&f);
  running1(&f);
  f.spec.ended = 2;
  f.spec.ended_msg = "Job has reached the specified backoff limit";
  gq_life_reconcile(&f.in, &o);
  assert_int_equal(o.job.state, CJ_ACTIVE);
  f.in.n_pods = 0;
  gq_life_reconcile(&f.in, &o);
  assert_int_equal(o.job.state, CJ_DONE);
  assert_int_equal(o.job.phase, GQ_PHASE_FAILED);
  assert_string_equal(o.job.reason, "JobFailed");
  f.spec.ended = 1;
  f.spec.ended_msg = NULL;
  gq_life_reconcile(&f.in, &o);
  assert_int_equal(o.job.phase, GQ_PHASE_SUCCEEDED);
}

/* The tick gives the next deadline: the startup timeout's here. */
static void test_tick_next(void **state)
{
  static struct fx f;
  static struct gq_life_out o;
  int64_t next = -1;

  (void)state;
  s_startup_later(&f);
  gq_life_tick(&f.in, &o, &next);
  assert_int_equal(next, f.in.job.admitted_ms + 600 * 1000);
  next = NOW + 1; /* an earlier one stands */
  gq_life_tick(&f.in, &o, &next);
  assert_int_equal(next, NOW + 1);
}

/* A message is cut as the controller's 1024-byte buffers cut it. */
static void test_long_message(void **state)
{
  static struct fx f;
  static struct gq_life_out o;
  char why[2000];

  (void)state;
  memset(why, 'x', sizeof(why) - 1);
  why[sizeof(why) - 1] = '\0';
  s_preempt(&f);
  gq_life_preempt(&f.in, "QuotaReclaim", why, &o);
  assert_int_equal(o.eff[0].kind, GQ_LIFE_CAUSE);
  assert_int_equal(strlen(o.eff[1].msg), GQ_LIFE_MSG_MAX - 1);
}

static void test_helpers(void **state)
{
  (void)state;
  assert_string_equal(gq_life_td_record(TD_FAILED), "ReplicaFailed");
  assert_string_equal(gq_life_td_record(TD_STARTUP), "StartupTimeout");
  assert_string_equal(gq_life_td_record(TD_DEADLINE), "DeadlineExceeded");
  assert_null(gq_life_td_record(TD_DISRUPTED));
  assert_null(gq_life_td_record(TD_MISS));
  assert_null(gq_life_td_record(TD_DELETE));
  assert_int_equal(gq_life_force_at(5000, 1000, 300), 305000);
  assert_int_equal(gq_life_force_at(0, 1000, 300), 301000);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cases),
      cmocka_unit_test(test_chain_failure),
      cmocka_unit_test(test_one_shot_disrupted),
      cmocka_unit_test(test_idle_requeued_at_back),
      cmocka_unit_test(test_job_ended),
      cmocka_unit_test(test_tick_next),
      cmocka_unit_test(test_long_message),
      cmocka_unit_test(test_helpers),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
