/* decide/lifecycle.c - one GpuJob's lifecycle as pure transitions
 * (decide/lifecycle.h; DESIGN §2-§5).
 *
 * Each gq_life_* entry point copies the job view into out->job, walks the
 * same steps the controller's reconcile always took, and instead of acting
 * appends effects. Where an effect changes something the later steps of
 * the same call read (the team's queue, the admission, the node array),
 * out->job is updated the way the effect will change the record, so the
 * steps after it decide on what the record will hold.
 */
#include "decide/lifecycle.h"
#include "decide/las.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CKPT_PREFIX "checkpoint="
#define CKPT_MAX 4096 /* a termination message is at most 4096 bytes */
#define WHY_MAX 512   /* the sentences the controller built in 512 bytes */
#define ERR_MAX 512   /* GQ_DEC_MSG_MAX: its validation messages */

#define FMT(a, b) __attribute__((format(printf, a, b)))

/* ---- the out: effects and their strings ---------------------------- */

static void begin(const struct gq_life_in *in, struct gq_life_out *o)
{
  o->job = in->job;
  o->n = 0;
  o->again = o->flush = 0;
  o->due = TD_NONE;
  o->due_cause = o->due_why = NULL;
  o->used = 0;
}

static struct gq_life_eff *add(struct gq_life_out *o, enum gq_life_kind k)
{
  struct gq_life_eff *e;

  if (o->n == GQ_LIFE_EFF_MAX)
    abort(); /* a transition makes a few dozen at most: a bug */
  e = &o->eff[o->n++];
  memset(e, 0, sizeof(*e));
  e->kind = k;
  return e;
}

static void add_a(struct gq_life_out *o, enum gq_life_kind k, int64_t a)
{
  add(o, k)->a = a;
}

/* Formats into the out's text, at most cap bytes with the NUL (as the
 * fixed buffers the controller formatted into). */
static const char *vtextn(struct gq_life_out *o, size_t cap, const char *fmt,
                          va_list ap)
{
  char *p = o->text + o->used;
  int n;

  if (sizeof(o->text) - o->used < cap)
    abort(); /* see add() */
  n = vsnprintf(p, cap, fmt, ap);
  if (n < 0) {
    p[0] = '\0';
    n = 0;
  }
  o->used += ((size_t)n < cap ? (size_t)n : cap - 1) + 1;
  return p;
}

static const char *textn(struct gq_life_out *o, size_t cap, const char *fmt,
                         ...) FMT(3, 4);
static const char *textn(struct gq_life_out *o, size_t cap, const char *fmt,
                         ...)
{
  va_list ap;
  const char *s;

  va_start(ap, fmt);
  s = vtextn(o, cap, fmt, ap);
  va_end(ap);
  return s;
}

static void event(struct gq_life_out *o, const char *type, const char *reason,
                  const char *fmt, ...) FMT(4, 5);
static void event(struct gq_life_out *o, const char *type, const char *reason,
                  const char *fmt, ...)
{
  struct gq_life_eff *e = add(o, GQ_LIFE_EVENT);
  va_list ap;

  e->type = type;
  e->reason = reason;
  va_start(ap, fmt);
  e->msg = vtextn(o, GQ_LIFE_MSG_MAX, fmt, ap);
  va_end(ap);
}

/* The reason (static storage) and message the job shows. */
static void status(struct gq_life_out *o, const char *reason,
                   const char *fmt, ...) FMT(3, 4);
static void status(struct gq_life_out *o, const char *reason,
                   const char *fmt, ...)
{
  struct gq_life_eff *e = add(o, GQ_LIFE_STATUS);
  va_list ap;

  e->reason = reason;
  o->job.reason = reason;
  va_start(ap, fmt);
  e->msg = vtextn(o, GQ_LIFE_MSG_MAX, fmt, ap);
  va_end(ap);
}

static void logline(struct gq_life_out *o, const char *fmt, ...) FMT(2, 3);
static void logline(struct gq_life_out *o, const char *fmt, ...)
{
  struct gq_life_eff *e = add(o, GQ_LIFE_LOG);
  va_list ap;

  va_start(ap, fmt);
  e->msg = vtextn(o, GQ_LIFE_MSG_MAX, fmt, ap);
  va_end(ap);
}

/* Why the job is disrupted: cause (a CamelCase reason) and the sentence. */
static void set_cause(struct gq_life_out *o, const char *cause,
                      const char *msg)
{
  struct gq_life_eff *e = add(o, GQ_LIFE_CAUSE);

  e->str = o->job.cause = cause;
  e->msg = o->job.cause_msg = msg;
}

static int valid(const struct gq_life_in *in)
{
  return in->spec->exists && !in->spec->invalid;
}

static int phase_final(enum gq_job_phase ph)
{
  return ph == GQ_PHASE_SUCCEEDED || ph == GQ_PHASE_FAILED;
}

static int phase_active(enum gq_job_phase ph)
{
  return ph == GQ_PHASE_ADMITTED || ph == GQ_PHASE_RUNNING ||
         ph == GQ_PHASE_PREEMPTING;
}

/* ---- the pods ------------------------------------------------------ */

int gq_life_pod_miss(const struct gq_life_pod *p)
{
  if (p->phase == GQ_POD_PENDING && p->unschedulable &&
      !strcmp(p->unschedulable, "Unschedulable"))
    return 1;
  return p->phase == GQ_POD_FAILED &&
         (!strncmp(p->status_reason, "OutOf", 5) ||
          !strcmp(p->status_reason, "UnexpectedAdmissionError") ||
          !strcmp(p->status_reason, "NodeAffinity"));
}

int gq_life_pod_deletable(const struct gq_life_pod *p)
{
  return p->holds && !p->deletion_ms;
}

struct podcount {
  int present, hold, running, succeeded, failed, miss, disrupted;
  int other_hold; /* pods of other attempts still holding resources */
  int64_t max_attempt;
  const char *flavor; /* annotation of a pod of the attempt */
};

/* Counts the pods of attempt 'attempt' by what they say, for a job whose
 * teardown is td (a deletion gpuq did not make is a disruption). */
static void count_pods(const struct gq_life_in *in, int64_t attempt,
                       enum cj_td td, struct podcount *pc)
{
  memset(pc, 0, sizeof(*pc));
  for (size_t i = 0; i < in->n_pods; i++) {
    const struct gq_life_pod *p = &in->pods[i];

    if (p->attempt > pc->max_attempt)
      pc->max_attempt = p->attempt;
    if (p->attempt != attempt) {
      pc->other_hold += p->holds;
      continue;
    }
    pc->present++;
    if (!pc->flavor)
      pc->flavor = p->flavor;
    pc->hold += p->holds;
    if (gq_life_pod_miss(p))
      pc->miss++;
    else if (p->disruption || (p->deletion_ms && td == TD_NONE))
      pc->disrupted++;
    else if (p->phase == GQ_POD_RUNNING)
      pc->running++;
    else if (p->phase == GQ_POD_SUCCEEDED)
      pc->succeeded++;
    else if (p->phase == GQ_POD_FAILED)
      pc->failed++;
  }
}

/* Sends the deletions of the pods that hold resources, unless they were
 * sent less than GQ_LIFE_REDELETE_MS ago. */
static void delete_pods(const struct gq_life_in *in, struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;

  if (j->td_sent_ms && in->mono_ms - j->td_sent_ms < GQ_LIFE_REDELETE_MS)
    return;
  j->td_sent_ms = in->mono_ms;
  add(o, GQ_LIFE_DELETE_PODS);
}

/* ---- the admission and the queue ------------------------------------ */

static void release(struct gq_life_out *o)
{
  if (!o->job.has_adm)
    return;
  o->job.has_adm = 0;
  add(o, GQ_LIFE_RELEASE);
}

static void queue_del(struct gq_life_out *o)
{
  if (!o->job.queued_team)
    return;
  o->job.queued_team = NULL;
  add(o, GQ_LIFE_QUEUE_DEL);
}

static void free_nodes(struct gq_life_out *o)
{
  if (!o->job.has_nodes)
    return;
  o->job.has_nodes = 0;
  add(o, GQ_LIFE_FREE_NODES);
}

/* ---- teardown reasons and their record -------------------------------- */

static const char *td_reason(enum cj_td td)
{
  switch (td) {
  case TD_FAILED: return "ReplicaFailed";
  case TD_MISS: return "PlacementMiss";
  case TD_DISRUPTED: return "Disrupted";
  case TD_STARTUP: return "StartupTimeout";
  case TD_DEADLINE: return "DeadlineExceeded";
  case TD_SUSPEND: return "Suspended";
  case TD_DELETE: return "Deleting";
  default: return "";
  }
}

const char *gq_life_td_record(enum cj_td td)
{
  return td == TD_FAILED || td == TD_STARTUP || td == TD_DEADLINE
             ? td_reason(td)
             : NULL;
}

/* 1 when nothing of the teardown has to wait for its record: the kind
 * needs none, or the stored GpuJob (what a restarted controller reads)
 * shows it: reason, failedAttempts and attempts as the job has them. */
static int td_recorded(const struct gq_life_in *in,
                       const struct gq_life_job *j)
{
  const char *r = gq_life_td_record(j->td);
  const struct gq_life_spec *s = in->spec;

  if (!r || j->state != CJ_TEARDOWN)
    return 1;
  return s->exists && s->st_reason && !strcmp(s->st_reason, r) &&
         s->st_failures == j->failures && s->st_attempts == j->attempt;
}

/* The teardown of attempt 'attempt' that the stored status records, or
 * TD_NONE (also when the status is about an earlier attempt): phase
 * Preempting is a disruption's; reason ReplicaFailed, StartupTimeout or
 * DeadlineExceeded in phase Admitted or Running is teardown()'s record. */
static enum cj_td teardown_in_status(const struct gq_life_spec *s,
                                     int64_t attempt)
{
  static const enum cj_td kinds[] = {TD_FAILED, TD_STARTUP, TD_DEADLINE};

  if (s->st_attempts != attempt || !phase_active(s->st_phase))
    return TD_NONE;
  if (s->st_phase == GQ_PHASE_PREEMPTING)
    return TD_DISRUPTED;
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
    if (!strcmp(s->st_reason, gq_life_td_record(kinds[i])))
      return kinds[i];
  return TD_NONE;
}

/* ---- finishing and requeueing ---------------------------------------- */

static void finish(const struct gq_life_in *in, struct gq_life_out *o,
                   int failed, const char *reason, const char *msg)
{
  struct gq_life_job *j = &o->job;

  release(o);
  queue_del(o);
  j->state = CJ_DONE;
  j->phase = failed ? GQ_PHASE_FAILED : GQ_PHASE_SUCCEEDED;
  j->running = 0;
  j->eta_ms = -1;
  if (!j->completion_ms)
    j->completion_ms = in->now_ms;
  status(o, reason, "%s", msg);
  event(o, failed ? "Warning" : "Normal", reason, "%s", msg);
  if (j->pdb)
    add_a(o, GQ_LIFE_PDB, 0);
  if (*j->cohort || j->q.exists)
    add(o, GQ_LIFE_REDIS_REMOVE);
}

/* Counts the service the ending attempt received (decide/las.h): gpus x
 * the time from its start to its disruption (or now). */
static void count_service(const struct gq_life_in *in, struct gq_life_job *j)
{
  int64_t end = j->td_ms > j->start_ms ? j->td_ms : in->now_ms;

  j->requeued_ms = in->now_ms;
  if (j->start_ms <= 0 || end <= j->start_ms)
    return;
  j->last_run_ms = end - j->start_ms;
  j->service_s = gq_las_service(j->service_s, j->gpus, j->start_ms, end);
}

static void requeue(const struct gq_life_in *in, struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;

  count_service(in, j);
  release(o);
  free_nodes(o);
  j->state = CJ_NEW;
  j->phase = GQ_PHASE_QUEUED;
  j->td = TD_NONE;
  if (valid(in) && strcmp(in->spec->team, j->team)) {
    /* spec.team was edited during the attempt (SpecChangeDeferred): it
     * leaves the old team's queue, and the reconcile that follows queues
     * it in the new team's, with its original queue time */
    event(o, "Normal", "Requeued", "attempt %lld: queued again in team "
          "'%s' (spec.team was edited)", (long long)j->attempt,
          in->spec->team);
    add(o, GQ_LIFE_REDIS_REMOVE); /* it was admitted: its keys exist */
    return;
  }
  if (j->cause && !strcmp(j->cause, GQ_LIFE_CAUSE_IDLE)) {
    /* preempted for holding idle GPUs while others waited (issue 22): it
     * goes to the back of its queue, or it would take them back at once;
     * the reconcile that follows queues it with the new queue time */
    j->queued_ms = in->now_ms;
    event(o, "Normal", "Requeued", "attempt %lld: queued again at the back "
          "of team '%s''s queue (its GPUs were idle while jobs waited)",
          (long long)j->attempt, j->team);
    add(o, GQ_LIFE_REDIS_REMOVE);
    return;
  }
  event(o, "Normal", "Requeued", "attempt %lld: back in team '%s''s queue "
        "at its original place", (long long)j->attempt, j->team);
  /* Redis: back at the original place (requeue keeps the queue time) */
  add(o, GQ_LIFE_REDIS_REQUEUE);
}

/* ---- disruptions: the checkpoint protocol (DESIGN §5) ----------------- */

/* Says why the attempt is disrupted, from the cause seen on a pod event or
 * from the pods of the attempt; sets the cause. The sentence is returned. */
static const char *describe(const struct gq_life_in *in,
                            struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;
  const char *why;

  if (j->cause && j->cause_msg) /* seen on the pod's event */
    return textn(o, WHY_MAX, "%s", j->cause_msg);
  for (size_t i = 0; i < in->n_pods; i++) {
    const struct gq_life_pod *p = &in->pods[i];

    if (p->attempt != j->attempt)
      continue;
    j->cause_grace_s = p->deletion_grace_s;
    if (p->disruption) {
      why = textn(o, WHY_MAX, "pod %s is being stopped (DisruptionTarget: "
                  "%s)", p->name, *p->disruption ? p->disruption
                                                 : "no reason");
      set_cause(o, *p->disruption ? p->disruption : "Disrupted", why);
      return why;
    }
    if (p->deletion_ms) {
      why = textn(o, WHY_MAX, "pod %s was deleted", p->name);
      set_cause(o, "Deleted", why);
      return why;
    }
  }
  j->cause_grace_s = -1;
  why = textn(o, WHY_MAX, "a pod of the gang is missing");
  set_cause(o, "PodMissing", why);
  return why;
}

/* A disruption's teardown begins: listed as Preempting (capacity that
 * frees is held for it if it is the best waiting job of its team), timed,
 * and with a checkpoint the Checkpointing event. */
static void disrupt_begin(const struct gq_life_in *in, struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;

  add_a(o, GQ_LIFE_DRAIN_LIST, 1);
  j->td_ms = in->now_ms;
  j->preempted = 1;
  if (!j->cause)
    set_cause(o, "Disrupted", "the job was disrupted");
  if (valid(in) && in->spec->has_checkpoint)
    event(o, "Normal", "Checkpointing", "attempt %lld: its running replicas "
          "are deleted with their %llds grace period "
          "(checkpoint.gracePeriodSeconds) to write their checkpoint; its "
          "GPUs stay held until its pods are gone", (long long)j->attempt,
          (long long)in->spec->grace_s);
}

/* The NoCheckpoint event of a checkpointing job whose attempt wrote none. */
static void no_checkpoint(const struct gq_life_in *in, struct gq_life_out *o)
{
  const struct gq_life_job *j = &o->job;
  int64_t g = in->spec->grace_s;
  const char *grace;

  if (j->cause_grace_s >= 0 && j->cause_grace_s != g)
    grace = textn(o, 96, "the %llds grace period it was given "
                  "(checkpoint.gracePeriodSeconds: %llds)",
                  (long long)j->cause_grace_s, (long long)g);
  else
    grace = textn(o, 96, "its %llds grace period", (long long)g);
  if (j->ckpt)
    event(o, "Warning", "NoCheckpoint", "attempt %lld wrote no checkpoint "
          "within %s: the next attempt resumes from the previous checkpoint "
          "%s", (long long)j->attempt, grace, j->ckpt);
  else
    event(o, "Warning", "NoCheckpoint", "attempt %lld wrote no checkpoint "
          "within %s and there is no earlier one: the next attempt starts "
          "over", (long long)j->attempt, grace);
}

/* Every pod of a disrupted attempt is gone: counts it, says which
 * checkpoint the next attempt resumes from. */
static void disrupt_done(const struct gq_life_in *in, struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;
  const char *cause = j->cause ? j->cause : "Disrupted";
  int wrote = j->ckpt && j->ckpt_attempt == j->attempt;
  int ckpt = valid(in) && in->spec->has_checkpoint;
  struct gq_life_eff *e;

  add_a(o, GQ_LIFE_DRAIN_LIST, 0);
  add(o, GQ_LIFE_M_PREEMPTION)->str = cause;
  /* the next attempt resumes from the checkpoint: with one written at this
   * SIGTERM nothing is lost, else everything since this attempt started */
  if (!wrote && j->td_ms) {
    e = add(o, GQ_LIFE_M_LOST);
    e->a = j->td_ms;
    e->b = j->start_ms;
    e->c = j->gpus;
  }
  j->td_ms = 0;
  if (wrote)
    status(o, "Requeued", "attempt %lld was disrupted (%s); requeued at its "
           "original place, resumes from checkpoint %s",
           (long long)j->attempt, cause, j->ckpt);
  else if (j->ckpt)
    status(o, "Requeued", "attempt %lld was disrupted (%s) and wrote no "
           "checkpoint; requeued at its original place, resumes from the "
           "previous checkpoint %s", (long long)j->attempt, cause, j->ckpt);
  else
    status(o, "Requeued", "attempt %lld was disrupted (%s); requeued at its "
           "original place%s", (long long)j->attempt, cause,
           ckpt ? ", starts over (no checkpoint yet)" : "");
  if (ckpt && !wrote)
    no_checkpoint(in, o);
}

/* ---- teardown ---------------------------------------------------------- */

/* Starts tearing the attempt down (td: why; why: a sentence). A failure or
 * startup timeout is counted here (status.failedAttempts), and for those
 * and a deadline the outcome is written first: no pod is deleted and
 * nothing released before the stored status shows it (td_recorded), so a
 * controller that dies at any point of the teardown finds either the
 * failed attempt's pods or the record, never neither (adopt()). */
static void teardown(const struct gq_life_in *in, struct gq_life_out *o,
                     enum cj_td td, const char *why)
{
  struct gq_life_job *j = &o->job;
  int v = valid(in);

  if (j->state == CJ_TEARDOWN)
    return;
  j->state = CJ_TEARDOWN;
  j->td = td;
  j->td_sent_ms = 0;
  j->running = 0;
  if (td == TD_DISRUPTED) { /* evicted or deleted: its GPUs are still held */
    j->phase = GQ_PHASE_PREEMPTING;
    status(o, "Disrupted", "%s; requeued once its pods are gone", why);
    disrupt_begin(in, o);
  } else if (td == TD_FAILED || td == TD_STARTUP) {
    j->failures++;
    status(o, td_reason(td), "attempt %lld: %s (failed attempts: %lld, "
           "spec.backoffLimit %d); its pods are deleted, then it %s",
           (long long)j->attempt, why, (long long)j->failures,
           v ? in->spec->backoff_limit : 0,
           v && j->failures > in->spec->backoff_limit ? "fails"
                                                      : "is requeued");
  } else if (td == TD_DEADLINE) {
    status(o, td_reason(td), "attempt %lld: %s; its pods are deleted, then "
           "it fails", (long long)j->attempt, why);
  }
  logline(o, "job %s attempt %lld: tearing down (%s): %s", j->key,
          (long long)j->attempt, td_reason(td), why);
  if (td != TD_DELETE)
    event(o, td == TD_SUSPEND ? "Normal" : "Warning", td_reason(td),
          "attempt %lld: %s", (long long)j->attempt, why);
  if (td_recorded(in, j))
    delete_pods(in, o);
  o->flush = 1;
}

/* The failed attempt's end: Failed past spec.backoffLimit, else requeued.
 * Returns 0 when it finished. */
static int failed_done(const struct gq_life_in *in, struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;
  int v = valid(in);
  enum cj_td td = j->td;

  if (v && j->failures > in->spec->backoff_limit) {
    finish(in, o, 1, "BackoffLimitExceeded",
           textn(o, 256, "%lld failed attempts, more than "
                 "spec.backoffLimit %d", (long long)j->failures,
                 in->spec->backoff_limit));
    return 0;
  }
  requeue(in, o);
  status(o, "Requeued", "attempt %lld %s; %lld of %d failed attempts allowed "
         "used", (long long)j->attempt,
         td == TD_FAILED ? "failed"
                         : "was not all Running within "
                           "spec.startupTimeoutSeconds",
         (long long)j->failures, v ? in->spec->backoff_limit : 0);
  return 1;
}

/* The end of a disrupted or missed attempt of a job whose pods cannot be
 * made again (spec->one_shot): it fails, saying why. */
static void one_shot_done(const struct gq_life_in *in, struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;
  int disrupted = j->td == TD_DISRUPTED;

  if (disrupted) {
    j->preemptions++;
    add_a(o, GQ_LIFE_DRAIN_LIST, 0);
    add(o, GQ_LIFE_M_PREEMPTION)->str = j->cause ? j->cause : "Disrupted";
    if (j->td_ms) { /* no resume: all it did since it started is lost */
      struct gq_life_eff *e = add(o, GQ_LIFE_M_LOST);

      e->a = j->td_ms;
      e->b = j->start_ms;
      e->c = j->gpus;
      j->td_ms = 0;
    }
    add(o, GQ_LIFE_VICTIM_DONE);
  }
  free_nodes(o);
  finish(in, o, 1, disrupted ? "Preempted" : "PlacementMiss",
         textn(o, 512, "attempt %lld %s; gpuq did not create its pods, so "
               "it cannot run them again: create the pod again to queue it "
               "anew", (long long)j->attempt,
               disrupted ? textn(o, 300, "was disrupted (%s)",
                                 j->cause ? j->cause : "Disrupted")
                         : "could not run where gpuq placed it"));
}

/* The gang's pods are all gone or finished: what comes next. A requeue
 * asks for another reconcile (out->again), which queues it. */
static void teardown_done(const struct gq_life_in *in, struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;

  if ((j->td == TD_MISS || j->td == TD_DISRUPTED) && valid(in) &&
      in->spec->one_shot) {
    one_shot_done(in, o);
    return;
  }
  switch (j->td) {
  case TD_FAILED:
  case TD_STARTUP: /* counted by teardown() */
    o->again = failed_done(in, o);
    return;
  case TD_MISS:
    requeue(in, o);
    status(o, "PlacementMiss", "attempt %lld could not run where gpuq "
           "placed it; placing it again (not counted toward backoffLimit)",
           (long long)j->attempt);
    break;
  case TD_DISRUPTED:
    j->preemptions++;
    requeue(in, o);
    disrupt_done(in, o);
    add(o, GQ_LIFE_VICTIM_DONE);
    break;
  case TD_DEADLINE:
    finish(in, o, 1, "DeadlineExceeded",
           textn(o, 256, "ran longer than spec.activeDeadlineSeconds %lld",
                 valid(in) ? (long long)in->spec->deadline_s : 0LL));
    return;
  case TD_SUSPEND:
    release(o);
    free_nodes(o);
    j->td = TD_NONE;
    j->state = CJ_NEW; /* the reconcile that follows parks it Suspended */
    break;
  default:
    return;
  }
  o->again = 1;
}

/* ---- creating the pods of an admitted attempt -------------------------- */

/* The pods of the attempt are created (its Service first): a resume from
 * its checkpoint says so, drainPolicy Wait gets its budget. */
static void create_pods(const struct gq_life_in *in, struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;

  add(o, GQ_LIFE_CAUSE); /* str NULL: cleared */
  j->preempted = 0;
  j->cause = NULL;
  /* a restarted controller creating the missing pods of a published
   * attempt again (resume_creates) has said so already */
  if (j->ckpt && in->spec->st_attempts < j->attempt) {
    add(o, GQ_LIFE_M_RESUME);
    event(o, "Normal", "Resuming", "attempt %lld starts from checkpoint %s "
          "(GPUQ_RESUME_FROM)", (long long)j->attempt, j->ckpt);
  }
  if (in->spec->drain == GQ_DRAIN_WAIT && !j->pdb)
    add_a(o, GQ_LIFE_PDB, 1);
  add(o, GQ_LIFE_CREATE_PODS);
  j->creates_left = j->replicas;
  j->create_pending = 0;
  j->create_miss = GQ_LIFE_MISS_NONE;
}

/* Redis said yes to the admission (admit.c): the attempt becomes active
 * and its pods are created. */
static void admitted_create(const struct gq_life_in *in,
                            struct gq_life_out *o)
{
  o->job.state = CJ_ACTIVE;
  add(o, GQ_LIFE_ACTIVE);
  event(o, "Normal", "Admitted", "%s",
        o->job.adm_event ? o->job.adm_event : "");
  add_a(o, GQ_LIFE_FINALIZER, 1);
  create_pods(in, o);
  o->job.adm_event = NULL;
  o->flush = 1;
}

/* ---- an admitted attempt's progress ------------------------------------ */

static void reconcile_teardown(const struct gq_life_in *in,
                               struct gq_life_out *o,
                               const struct podcount *pc)
{
  if (!td_recorded(in, &o->job))
    return; /* its status write (the flush) comes first */
  if (pc->hold + pc->other_hold == 0 && o->job.creates_left == 0)
    teardown_done(in, o);
  else
    delete_pods(in, o);
}

/* Every replica running: the job is Running. */
static void now_running(const struct gq_life_in *in, struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;

  j->running = 1;
  j->phase = GQ_PHASE_RUNNING;
  if (!j->start_ms)
    j->start_ms = in->now_ms;
  if (!j->first_start_ms)
    j->first_start_ms = j->start_ms;
  status(o, "Running", "all %d replicas running", j->replicas);
  event(o, "Normal", "Running", "all %d replicas running", j->replicas);
}

static void reconcile_active(const struct gq_life_in *in,
                             struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;
  struct podcount pc;

  count_pods(in, j->attempt, j->td, &pc);
  if (j->state == CJ_TEARDOWN) {
    reconcile_teardown(in, o, &pc);
    return;
  }
  if (j->create_miss) { /* a create failed, or its node was gone */
    teardown(in, o, TD_MISS, j->create_miss == GQ_LIFE_MISS_NODE
                                 ? "its node is gone"
                                 : "a pod could not be created");
    o->again = 1; /* then as a teardown: it may be over already */
    return;
  }
  if (in->spec->suspend) {
    teardown(in, o, TD_SUSPEND, "spec.suspend is true");
    return;
  }
  if (in->spec->ended) { /* its Job ended: done once its pods are */
    if (pc.hold + pc.other_hold == 0)
      finish(in, o, in->spec->ended == 2,
             in->spec->ended == 2 ? "JobFailed" : "Succeeded",
             in->spec->ended_msg ? in->spec->ended_msg
             : in->spec->ended == 2 ? "its Job failed" : "its Job completed");
    return;
  }
  if (pc.miss) {
    teardown(in, o, TD_MISS, "a pinned pod was not schedulable or was "
             "rejected by its kubelet");
    return;
  }
  if (pc.failed) {
    teardown(in, o, TD_FAILED, "a replica failed");
    return;
  }
  if (pc.disrupted || (j->creates_left == 0 && in->seen < j->replicas &&
                       pc.succeeded < j->replicas)) {
    teardown(in, o, TD_DISRUPTED, describe(in, o));
    return;
  }
  if (j->creates_left > 0)
    return;
  if (pc.succeeded == j->replicas)
    finish(in, o, 0, "Succeeded", textn(o, 128, "all %d replicas succeeded",
                                        j->replicas));
  else if (pc.running > 0 && pc.running + pc.succeeded == j->replicas &&
           !j->running)
    now_running(in, o);
}

/* ---- adoption after a restart (docs/controller.md "Restarts") ----------- */

/* Takes up, after a restart, the teardown a previous process recorded:
 * nothing is counted again (a failure was counted in the record). */
static void resume_teardown(const struct gq_life_in *in,
                            struct gq_life_out *o, enum cj_td td)
{
  struct gq_life_job *j = &o->job;

  j->state = CJ_TEARDOWN;
  j->td = td;
  j->td_sent_ms = 0;
  j->running = 0;
  if (td == TD_DISRUPTED) {
    status(o, "Disrupted", "%s; requeued once its pods are gone",
           describe(in, o));
    disrupt_begin(in, o);
  }
  logline(o, "job %s attempt %lld: taking up its teardown (%s) after a "
          "restart", j->key, (long long)j->attempt, td_reason(td));
}

/* An adopted gang still in phase Admitted with replicas missing: the
 * previous process may have died with their creates in flight. Creates
 * them again on the nodes status.nodes lists, under the same names (a
 * create still in flight then gets 409, and a pod that exists counts as
 * done), rather than tearing the attempt down and starting another while a
 * pod of this one may still land (invariant 5). Nothing when status.nodes
 * does not say where the replicas go. */
static void resume_creates(const struct gq_life_in *in, struct gq_life_out *o)
{
  const struct gq_life_spec *s = in->spec;

  if (s->st_nodes_bad || (int32_t)s->st_n_nodes != s->replicas)
    return;
  add(o, GQ_LIFE_RESUME_NODES);
  o->job.has_nodes = 1;
  o->job.replicas = s->replicas;
  logline(o, "job %s attempt %lld: pods missing after a restart; creating "
          "them again", o->job.key, (long long)o->job.attempt);
  create_pods(in, o);
}

/* Its pods hold GPUs, or ended unrecorded: it stays admitted (counted in
 * its team's use, so that quota holds after a restart, the ledger rebuild
 * writes it and its end releases it), or the recorded teardown goes on. */
static void adopt_active(const struct gq_life_in *in, struct gq_life_out *o,
                         const struct podcount *pc, enum cj_td rec)
{
  const struct gq_life_spec *s = in->spec;
  struct gq_life_job *j = &o->job;

  j->state = CJ_ACTIVE;
  add(o, GQ_LIFE_ACTIVE);
  add(o, GQ_LIFE_ADOPT_USE)->str = pc->flavor ? pc->flavor : "";
  j->replicas = s->replicas;
  j->running = pc->running > 0 && pc->running + pc->succeeded == j->replicas;
  j->team = s->team;
  j->q = s->q_spec;
  j->cohort = s->q_spec.exists ? s->q_spec.cohort : "";
  j->gpus = s->gpus;
  j->has_adm = 1;
  if (rec != TD_NONE)
    resume_teardown(in, o, rec);
  else if (s->st_phase == GQ_PHASE_ADMITTED && pc->present < j->replicas &&
           !pc->failed && !pc->miss && !pc->disrupted)
    resume_creates(in, o);
}

/* What the stored status says: times, counts, phase, reason, checkpoint. */
static void adopt_status(const struct gq_life_in *in, struct gq_life_out *o)
{
  const struct gq_life_spec *s = in->spec;
  struct gq_life_job *j = &o->job;
  int64_t seen = j->queued_ms; /* arrival stamp (ctl.c job_for), or 0 */

  j->queued_ms = s->st_queued_ms ? s->st_queued_ms : s->creation_ms;
  /* creationTimestamp has whole seconds: within its second, the order the
   * jobs arrived in (their creation order) decides, not their uids */
  if (!s->st_queued_ms && j->queued_ms > 0 && seen > 0)
    j->queued_ms = seen < j->queued_ms         ? j->queued_ms
                   : seen > j->queued_ms + 999 ? j->queued_ms + 999
                                               : seen;
  if (!j->queued_ms)
    j->queued_ms = in->now_ms;
  j->admitted_ms = s->st_admitted_ms;
  j->start_ms = j->first_start_ms = s->st_start_ms;
  j->completion_ms = s->st_completion_ms;
  /* a finished or admitted job's reason stays (a status write compares
   * with it); a queued one's is the reconcile's and the pass's again */
  if (phase_final(s->st_phase) || phase_active(s->st_phase)) {
    struct gq_life_eff *e = add(o, GQ_LIFE_STATUS);

    e->str = j->reason = s->st_reason;
    e->msg = textn(o, GQ_LIFE_MSG_MAX, "%s",
                   s->st_message ? s->st_message : "");
  }
  j->attempt = s->st_attempts;
  j->failures = s->st_failures;
  j->preemptions = s->st_preemptions;
  j->service_s = s->st_service_s;
  j->phase = s->st_phase;
  if (s->st_checkpoint && !j->ckpt) {
    struct gq_life_eff *e = add(o, GQ_LIFE_CKPT);

    e->str = j->ckpt = s->st_checkpoint;
    e->a = j->ckpt_ms = s->st_checkpoint_ms;
    e->b = j->ckpt_attempt;
  }
  j->preempted = s->st_phase == GQ_PHASE_PREEMPTING;
}

/* Fills the job from the object after a (re)start: its status and pods
 * say where it stood (DESIGN §6: the objects are the truth). The status
 * speaks for attempt status.attempts; pods of a later attempt mean it is
 * stale (that attempt was admitted, its status not written yet). A
 * teardown the status records is taken up where it stood; a replica of
 * the attempt that failed while the status still shows it admitted is a
 * failure not yet counted (the reconcile tears the gang down, counts it). */
static void adopt(const struct gq_life_in *in, struct gq_life_out *o)
{
  const struct gq_life_spec *s = in->spec;
  struct gq_life_job *j = &o->job;
  struct podcount pc;
  enum cj_td rec;

  j->adopted = 1;
  adopt_status(in, o);
  count_pods(in, j->attempt, j->td, &pc);
  if (pc.max_attempt > j->attempt) {
    j->attempt = pc.max_attempt;
    count_pods(in, j->attempt, j->td, &pc);
  }
  if (phase_final(s->st_phase)) {
    j->state = CJ_DONE;
    if (pc.hold) /* finished, but pods linger: clean them up */
      delete_pods(in, o);
    return;
  }
  rec = teardown_in_status(s, j->attempt);
  if (pc.present > 0 &&
      (pc.hold > 0 || pc.succeeded > 0 ||
       (pc.failed > 0 &&
        (s->st_attempts != j->attempt || phase_active(s->st_phase))))) {
    adopt_active(in, o, &pc, rec);
    return;
  }
  if (rec != TD_NONE) { /* recorded, and its pods are gone: it ends now */
    resume_teardown(in, o, rec);
    return;
  }
  if (pc.other_hold) { /* an older generation still terminating */
    j->state = CJ_TEARDOWN;
    j->td = TD_DISRUPTED;
  }
}

/* ---- the reconcile ------------------------------------------------------ */

/* Being deleted, or gone: its pods go, then its GPUs and its keys. */
static void deletion(const struct gq_life_in *in, struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;
  struct podcount pc;

  count_pods(in, j->attempt, j->td, &pc);
  queue_del(o);
  if (pc.hold + pc.other_hold > 0 || j->creates_left > 0) {
    if (j->state != CJ_TEARDOWN || j->td != TD_DELETE)
      j->td_sent_ms = 0; /* not the last attempt's: send them now */
    j->state = CJ_TEARDOWN;
    j->td = TD_DELETE;
    delete_pods(in, o);
    return;
  }
  if (j->state == CJ_ADMITTING) {
    /* gone before Redis answered its admit (or before its pods were
     * created): what was assumed for its pods goes now, and the reply
     * (admit.c) finds it done */
    add(o, GQ_LIFE_UNASSUME);
    j->state = CJ_DONE;
    j->create_pending = 0;
    j->adm_event = NULL;
  }
  release(o);
  if (*j->team && j->q.exists)
    add(o, GQ_LIFE_REDIS_REMOVE);
  if (in->spec->exists)
    add_a(o, GQ_LIFE_FINALIZER, 0);
  else
    add(o, GQ_LIFE_FORGET);
}

/* An invalid spec: Failed with the decoder's message (never dropped). */
static void invalid(const struct gq_life_in *in, struct gq_life_out *o)
{
  if (o->job.state == CJ_DONE)
    return;
  o->job.state = CJ_DONE;
  o->job.phase = GQ_PHASE_FAILED;
  status(o, "InvalidSpec", "%s", in->spec->invalid);
  event(o, "Warning", "InvalidSpec", "%s", in->spec->invalid);
  o->flush = 1;
}

int gq_life_pinned(const struct gq_life_job *j)
{
  return j->has_adm || j->has_nodes;
}

/* The spec's values, taken on every reconcile. Those an attempt was
 * admitted with (team, GPUs, replicas: its team's use, its ledger record,
 * its node array and its pods were made with them) stay while it holds
 * an admission or its node array, as Kubernetes keeps a running Job's pod
 * template and Kueue an admitted Workload's pod sets; the edit is told
 * once per attempt by a SpecChangeDeferred event. */
static void spec_edit(const struct gq_life_in *in, struct gq_life_out *o)
{
  const struct gq_life_spec *s = in->spec;
  struct gq_life_job *j = &o->job;
  struct gq_life_eff *e;

  if (!gq_life_pinned(j)) {
    add(o, GQ_LIFE_TAKE_SPEC);
    j->team = s->team;
    j->q = s->q_spec;
    j->gpus = s->gpus;
    j->replicas = s->replicas;
    j->edit_told = 0;
  } else if (!j->edit_told && j->state != CJ_DONE &&
             (strcmp(j->team, s->team) || j->gpus != s->gpus ||
              j->replicas != s->replicas)) {
    j->edit_told = 1;
    event(o, "Warning", "SpecChangeDeferred", "attempt %lld keeps what it "
          "was admitted with (team %s, %d x %lld GPUs); the edited spec "
          "(team %s, %d x %lld GPUs) applies when the job is queued again",
          (long long)j->attempt, j->team, j->replicas,
          (long long)(j->replicas ? j->gpus / j->replicas : 0), s->team,
          s->replicas, (long long)s->gpus_per_replica);
  }
  j->priority = s->priority;
  j->deadline_s = s->deadline_s;
  j->startup_s = s->startup_s;
  j->drain_wait = s->drain == GQ_DRAIN_WAIT;
  e = add(o, GQ_LIFE_REFRESH);
  if (j->q.exists && j->state != CJ_QUEUED && !j->has_adm)
    e->str = j->cohort = j->q.cohort;
}

/* Takes it out of its team's queue, in memory and (redis) in Redis. */
static void unqueue(struct gq_life_out *o, int redis)
{
  if (!o->job.queued_team)
    return;
  queue_del(o);
  if (redis)
    add(o, GQ_LIFE_REDIS_REMOVE);
}

/* A valid job that may queue: into its team's queue (again if its place
 * changed: priority, team or cohort). */
static void enqueue(struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;
  int first = j->phase != GQ_PHASE_QUEUED;

  if (j->queued_team && (strcmp(j->queued_team, j->team) ||
                         j->priority != j->qprio ||
                         strcmp(j->cohort, j->q.cohort)))
    unqueue(o, 1);
  if (j->queued_team)
    return;
  add(o, GQ_LIFE_QUEUE_ADD);
  j->queued_team = j->team;
  j->qprio = j->priority;
  j->cohort = j->q.cohort;
  j->state = CJ_QUEUED;
  j->phase = GQ_PHASE_QUEUED;
  if (!*j->reason || !strcmp(j->reason, "UnknownTeam") ||
      !strcmp(j->reason, "Suspended"))
    status(o, "Queued", "waiting in team '%s''s queue", j->team);
  /* a job requeued after running gets an event; a new one does not:
   * 100k submissions must not make 100k events (its status says it) */
  if (first && j->attempt > 0)
    event(o, "Normal", "Requeued", "back in team '%s''s queue at its "
          "original place", j->team);
}

/* A job that holds nothing: waiting (unknown team, suspended), refused
 * (namespace), or queued. A queued job's status is written by the pass
 * (the first positions of its team) or by the background sweep, not
 * here: coalesced. */
static void place(const struct gq_life_in *in, struct gq_life_out *o)
{
  const struct gq_life_spec *s = in->spec;
  struct gq_life_job *j = &o->job;

  if (!j->q.exists) {
    unqueue(o, 1);
    j->state = CJ_WAITING;
    j->phase = GQ_PHASE_QUEUED;
    status(o, "UnknownTeam", "spec.team: no TeamQuota named '%s'; teams "
           "that exist: %s", j->team, s->teams ? s->teams : "none");
  } else if (!j->q.admits_ns) {
    const char *err = textn(o, ERR_MAX, "namespace '%s' may not use team "
                            "'%s' (TeamQuota spec.namespaces does not list "
                            "it)", j->ns, j->team);

    unqueue(o, 0);
    finish(in, o, 1, "Forbidden", err);
  } else if (s->suspend) {
    unqueue(o, 1);
    j->state = CJ_WAITING;
    j->phase = GQ_PHASE_SUSPENDED;
    status(o, "Suspended", "spec.suspend is true");
  } else {
    enqueue(o);
    return;
  }
  o->flush = 1;
}

void gq_life_reconcile(const struct gq_life_in *in, struct gq_life_out *o)
{
  const struct gq_life_spec *s = in->spec;
  struct gq_life_job *j = &o->job;

  begin(in, o);
  if (!s->exists || s->deletion_ms) {
    deletion(in, o);
    return;
  }
  if (!j->adopted && !s->invalid) { /* then the reconcile, on what it says */
    adopt(in, o);
    o->again = 1;
    return;
  }
  if (s->invalid) {
    invalid(in, o);
    return;
  }
  spec_edit(in, o);
  switch (j->state) {
  case CJ_DONE:
    o->flush = 1;
    return;
  case CJ_ACTIVE: /* its finalizer's add at admission may have failed */
    add_a(o, GQ_LIFE_FINALIZER, 1);
    /* fall through */
  case CJ_TEARDOWN:
    reconcile_active(in, o);
    o->flush = 1;
    return;
  case CJ_ADMITTING: /* the admit reply decides */
    if (j->create_pending) /* it said yes: the pods are created */
      admitted_create(in, o);
    return;
  default:
    break;
  }
  if (s->priority_class && !s->pc_found) {
    finish(in, o, 1, "UnknownPriorityClass",
           textn(o, ERR_MAX, "spec.priorityClassName: no PriorityClass "
                 "named '%s'", s->priority_class));
    o->flush = 1;
    return;
  }
  place(in, o);
}

/* ---- gpuq's own disruptions, the tick ------------------------------------ */

void gq_life_teardown(const struct gq_life_in *in, enum cj_td td,
                      const char *why, struct gq_life_out *o)
{
  begin(in, o);
  teardown(in, o, td, why);
}

void gq_life_preempt(const struct gq_life_in *in, const char *cause,
                     const char *why, struct gq_life_out *o)
{
  begin(in, o);
  set_cause(o, cause, why);
  o->job.cause_grace_s = -1;
  teardown(in, o, TD_DISRUPTED, why);
  o->flush = 1;
}

static void next_at(int64_t at, int64_t *next_ms)
{
  if (*next_ms < 0 || at < *next_ms)
    *next_ms = at;
}

/* drainPolicy Wait (DESIGN §5): a running job whose node has been
 * cordoned for --drain-wait is checkpointed (returns 1, out->due set). */
static int wait_tick(const struct gq_life_in *in, struct gq_life_out *o,
                     int64_t *next_ms)
{
  struct gq_life_job *j = &o->job;
  int wait = in->spec->drain == GQ_DRAIN_WAIT;
  int64_t at;

  if (wait && !j->pdb) /* after a restart, too */
    add_a(o, GQ_LIFE_PDB, 1);
  if (!wait || !j->running || !j->has_nodes || !in->cordoned) {
    j->cordon_ms = 0;
    return 0;
  }
  if (!j->cordon_ms) {
    j->cordon_ms = in->now_ms;
    event(o, "Normal", "DrainWaiting", "node %s is cordoned: drainPolicy "
          "Wait keeps the job running (its PodDisruptionBudget refuses "
          "evictions) for at most %llds, then checkpoints it", in->cordoned,
          (long long)in->drain_wait_s);
  }
  at = j->cordon_ms + in->drain_wait_s * 1000;
  if (at > in->now_ms) {
    next_at(at, next_ms);
    return 0;
  }
  o->due_why = textn(o, WHY_MAX, "node %s has been cordoned for %llds "
                     "(drainPolicy Wait, at most --drain-wait)",
                     in->cordoned, (long long)in->drain_wait_s);
  j->cordon_ms = 0;
  o->due = TD_DISRUPTED;
  o->due_cause = "DrainTimeout";
  return 1;
}

void gq_life_tick(const struct gq_life_in *in, struct gq_life_out *o,
                  int64_t *next_ms)
{
  struct gq_life_job *j = &o->job;
  int64_t at;

  begin(in, o);
  if (j->gone)
    return;
  /* drainPolicy Wait's maximum wait needs the spec: the driver looks it
   * up for those jobs only */
  if (!j->drain_wait)
    j->cordon_ms = 0;
  else if (!valid(in) || wait_tick(in, o, next_ms))
    return;
  if (j->deadline_s >= 0 && j->first_start_ms) {
    at = j->first_start_ms + j->deadline_s * 1000;
    if (at <= in->now_ms) {
      o->due = TD_DEADLINE;
      o->due_why = "spec.activeDeadlineSeconds passed";
      return;
    }
    next_at(at, next_ms);
  }
  if (j->startup_s >= 0 && !j->running && j->admitted_ms) {
    at = j->admitted_ms + j->startup_s * 1000;
    if (at <= in->now_ms) {
      o->due = TD_STARTUP;
      o->due_why = "replicas not all Running within "
                   "spec.startupTimeoutSeconds";
      return;
    }
    next_at(at, next_ms);
  }
}

/* ---- pod events: cause and checkpoint ------------------------------------ */

/* The value of the first "checkpoint=" line of msg, copied into out (len
 * bytes) without trailing blanks; returns 1 if there is a non-empty one. */
static int ckpt_line(const char *msg, char *out, size_t len)
{
  const char *p = msg;

  while (p && *p) {
    const char *eol = strchr(p, '\n');
    size_t n = eol ? (size_t)(eol - p) : strlen(p);

    if (!strncmp(p, CKPT_PREFIX, strlen(CKPT_PREFIX))) {
      p += strlen(CKPT_PREFIX);
      n -= strlen(CKPT_PREFIX);
      while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
      if (n == 0 || n >= len)
        return 0;
      memcpy(out, p, n);
      out[n] = '\0';
      return 1;
    }
    p = eol ? eol + 1 : NULL;
  }
  return 0;
}

/* The first stop seen of a pod of the running attempt is its cause (the
 * pod may be gone before the reconcile looks). */
static void note_cause(const struct gq_life_podev *ev, const char *why,
                       struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;
  const char *name = ev->name ? ev->name : "";
  const char *msg;

  /* an eviction's deletion (and its grace) follows its DisruptionTarget;
   * gpuq's own deletions of the peers carry no DisruptionTarget */
  if (j->cause && j->cause_grace_s < 0 && ev->has_grace &&
      strcmp(why, "Deleted"))
    j->cause_grace_s = ev->grace_s;
  if (j->state != CJ_ACTIVE || j->cause)
    return;
  if (!strcmp(why, "Deleted"))
    msg = textn(o, WHY_MAX, "pod %s was deleted", name);
  else
    msg = textn(o, WHY_MAX, "pod %s is being stopped (DisruptionTarget: %s)",
                name, why);
  set_cause(o, why, msg);
  j->cause_grace_s = ev->has_grace ? ev->grace_s : -1;
}

/* Replica 0's termination message names the gang's checkpoint. */
static void note_ckpt(const struct gq_life_in *in,
                      const struct gq_life_podev *ev, struct gq_life_out *o)
{
  struct gq_life_job *j = &o->job;
  struct gq_life_eff *e;
  char loc[CKPT_MAX];
  int64_t at = 0;
  size_t i;

  for (i = 0; i < ev->n_terms; i++)
    if (ev->terms[i].msg && ckpt_line(ev->terms[i].msg, loc, sizeof(loc))) {
      at = ev->terms[i].finished_ms >= 0 ? ev->terms[i].finished_ms
                                         : in->now_ms;
      break;
    }
  if (i == ev->n_terms || (j->ckpt_attempt == j->attempt && j->ckpt &&
                           !strcmp(j->ckpt, loc)))
    return;
  e = add(o, GQ_LIFE_CKPT);
  e->str = j->ckpt = textn(o, CKPT_MAX, "%s", loc);
  e->a = j->ckpt_ms = at;
  e->b = j->ckpt_attempt = j->attempt;
  if (j->td_ms && at >= j->td_ms)
    add_a(o, GQ_LIFE_M_CKPT, at - j->td_ms);
  logline(o, "job %s attempt %lld: checkpoint %s", j->key,
          (long long)j->attempt, j->ckpt);
  event(o, "Normal", "Checkpointed", "attempt %lld wrote checkpoint %s",
        (long long)j->attempt, j->ckpt);
  o->flush = 1;
}

void gq_life_pod_seen(const struct gq_life_in *in,
                      const struct gq_life_podev *ev, struct gq_life_out *o)
{
  const char *why = ev->disruption ? (*ev->disruption ? ev->disruption
                                                      : "Disrupted")
                    : ev->deleting ? "Deleted"
                                   : NULL;
  char attempt[32];

  begin(in, o);
  snprintf(attempt, sizeof(attempt), "%lld", (long long)o->job.attempt);
  if (!ev->attempt || !ev->replica || strcmp(ev->attempt, attempt) || !why)
    return;
  note_cause(ev, why, o);
  if (!strcmp(ev->replica, "0"))
    note_ckpt(in, ev, o);
}

int64_t gq_life_force_at(int64_t since_ms, int64_t deletion_ms,
                         int64_t notready_timeout_s)
{
  return (since_ms ? since_ms : deletion_ms) + notready_timeout_s * 1000;
}
