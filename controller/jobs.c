/* controller/jobs.c - one GpuJob's reconcile (DESIGN §2-§5): validation,
 * queueing, its pods' progress, teardown and requeue, finishing, deletion.
 *
 * The job's lifecycle: Queued -> Admitted (pods created) -> Running (every
 * replica running) -> Succeeded (every replica succeeded). A replica that
 * fails on its own tears the gang down and retries it as a new attempt,
 * up to spec.backoffLimit failed attempts, then Failed. A placement miss
 * (the pinned pod Unschedulable, or rejected by its kubelet) or a
 * disruption (pod evicted or deleted by someone else) tears the gang down
 * and requeues it without counting. The GPUs are released only once every
 * pod of the attempt is gone or finished (DESIGN §3: terminating pods still
 * hold them), and only then is a new attempt admitted (never two pod
 * generations at once, invariant 5).
 */
#include "controller/ctl_int.h"

#include "decide/names.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "controller/podspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct gq_lc lc = {"controller", "jobs", NULL};

#define REDELETE_MS 5000 /* resend pod deletions that did not take */

static void forget_assumed(struct ctl *c, const char *key);

/* ---- the team queues (in memory, in the same order as Redis's) --------- */

/* Queue order: priority (high first), queue time (early first), uid
 * (DESIGN §4; queue/queue.h's member order). */
static int before(const struct cjob *a, const struct cjob *b)
{
  if (a->priority != b->priority)
    return a->priority > b->priority;
  if (a->queued_ms != b->queued_ms)
    return a->queued_ms < b->queued_ms;
  return strcmp(a->uid, b->uid) < 0;
}

static void redis_done(int rc, const char *state, long long v, void *arg)
{
  struct ctl *c = arg;

  (void)state;
  (void)v;
  ctl_write_end(c);
  if (rc != 0) {
    const char *l[] = {"queue"};

    gq_metric_add(c->m_redis_errors, l, 1);
    GQ_LOG(GQ_WARN, &lc, "redis queue update failed: %s (the next rebuild "
           "repairs it)", gq_strerror(rc));
  }
}

static void redis_release_done(int rc, const char *state, long long v,
                               void *arg)
{
  struct ccohort *k = arg;

  (void)state;
  (void)v;
  if (k->inflight)
    k->inflight--;
  if (rc != 0) /* not applied: the ledger is compared and repaired */
    k->rebuilt = 0;
}

/* Inserts cj into its team's queue and Redis's (idempotent there). */
void jobs_queue_add(struct ctl *c, struct cjob *cj)
{
  struct cteam *t = ctl_team(c, cj->team);
  size_t lo = 0, hi = t->n;
  struct gq_qjob qj;
  struct ccohort *k;

  if (cj->t)
    return;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;

    if (before(t->q[mid], cj))
      lo = mid + 1;
    else
      hi = mid;
  }
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 16;
    t->q = gq_xrealloc(t->q, t->cap * sizeof(*t->q));
  }
  memmove(t->q + lo + 1, t->q + lo, (t->n - lo) * sizeof(*t->q));
  t->q[lo] = cj;
  t->n++;
  t->pending_gpus += cj->gpus;
  cj->t = t;
  cj->qprio = cj->priority;
  cj->state = CJ_QUEUED;
  cj->cohort = ctl_intern(c, t->cohort);
  k = ctl_cohort(c, cj->cohort, cj->team);
  if (!k->rebuilt && !k->rebuilding)
    return; /* the cohort's coming rebuild writes it (at start-up: all of
               them in one script, not one enqueue per job) */
  qj = (struct gq_qjob){cj->uid, cj->team, cj->ns, cj->name, cj->cohort,
                        cj->priority, cj->queued_ms};
  ctl_write_begin(c);
  if (gq_queue_enqueue(&c->q, &qj, redis_done, c) != 0)
    ctl_write_end(c);
}

/* Takes cj out of its team's in-memory queue (Redis is told separately:
 * admitted jobs leave it in the admit script, deleted ones by remove). */
void jobs_queue_del(struct ctl *c, struct cjob *cj)
{
  struct cteam *t = cj->t;
  size_t i;

  (void)c;
  if (!t)
    return;
  for (i = 0; i < t->n && t->q[i] != cj; i++)
    ;
  if (i < t->n) {
    memmove(t->q + i, t->q + i + 1, (t->n - i - 1) * sizeof(*t->q));
    t->n--;
    t->pending_gpus -= cj->gpus;
  }
  cj->t = NULL;
  cj->position = 0;
}

static void redis_remove(struct ctl *c, struct cjob *cj)
{
  ctl_write_begin(c);
  if (gq_queue_remove(&c->q, cj->cohort, cj->team, cj->uid, redis_done, c))
    ctl_write_end(c);
}

/* Counts one admitted job more (sign 1) or less (-1) at priority prio in
 * t->adm_prio; an entry that reaches 0 is dropped. */
static void prio_count(struct cteam *t, int32_t prio, int sign)
{
  size_t i;

  for (i = 0; i < t->n_adm_prio && t->adm_prio[i].prio != prio; i++)
    ;
  if (i == t->n_adm_prio) {
    if (sign < 0)
      return;
    t->adm_prio = gq_xrealloc(t->adm_prio,
                              (t->n_adm_prio + 1) * sizeof(*t->adm_prio));
    t->adm_prio[t->n_adm_prio++] = (struct cprio){prio, 0};
  }
  if ((t->adm_prio[i].n += sign) <= 0)
    t->adm_prio[i] = t->adm_prio[--t->n_adm_prio];
}

/* Adds (sign 1) or removes (-1) cj's admission from its team's use. */
void jobs_use(struct ctl *c, struct cjob *cj, int sign)
{
  struct cteam *t = ctl_team(c, cj->team);
  size_t i;

  if ((sign > 0) == (cj->has_adm != 0))
    return;
  cj->has_adm = sign > 0;
  if (sign > 0)
    cj->adm_prio = cj->priority;
  prio_count(t, cj->adm_prio, sign);
  for (i = 0; i < t->n_use && strcmp(t->use[i].key, cj->flavor); i++)
    ;
  if (i == t->n_use) {
    t->use = gq_xrealloc(t->use, (t->n_use + 1) * sizeof(*t->use));
    snprintf(t->use[i].key, sizeof(t->use[i].key), "%s", cj->flavor);
    t->use[i].gpus = 0;
    t->n_use++;
  }
  t->use[i].gpus += sign * cj->gpus;
  t->admitted_jobs += sign;
}

/* Releases cj's admission in Redis (idempotent) and in memory. */
static void release(struct ctl *c, struct cjob *cj)
{
  struct ccohort *k;

  if (!cj->has_adm)
    return;
  jobs_use(c, cj, -1);
  k = ctl_cohort(c, cj->cohort, cj->team);
  k->ver++; /* predicted: the release bumps the ledger's version */
  k->inflight++;
  if (gq_queue_release(&c->q, cj->cohort, cj->team, cj->uid, (long)cj->attempt,
                       redis_release_done, k) != 0) {
    k->inflight--;
    k->rebuilt = 0; /* Redis is down: the rebuild on reconnect repairs */
  }
  ctl_schedule_pass(c);
}

/* ---- pods ------------------------------------------------------------- */

static void free_nodes(struct cjob *cj)
{
  for (int32_t i = 0; cj->nodes && i < cj->replicas; i++)
    free(cj->nodes[i]);
  free(cj->nodes);
  cj->nodes = NULL;
}

/* Frees cj (already out of the jobs table). */
void jobs_forget(struct ctl *c, struct cjob *cj)
{
  ctl_active_del(c, cj);
  status_forget(c, cj);
  disrupt_victim_done(c, cj);
  disrupt_unlist(c, cj);
  admit_unreserve(c, cj);
  disrupt_forget(cj);
  free_nodes(cj);
  for (size_t i = 0; i < cj->n_pods; i++)
    free(cj->pods[i]);
  free(cj->pods);
  gq_intern_release(cj->message);
  free(cj->key);
  free(cj);
}

static int64_t pod_attempt(const struct gq_pod *p)
{
  const char *a = gq_meta_label(&p->meta, GQ_LBL_ATTEMPT);
  int64_t v;

  return a && gq_parse_int64(a, &v) == 0 ? v : -1;
}

static int pod_miss(const struct gq_pod *p)
{
  if (p->phase == GQ_POD_PENDING && p->unschedulable &&
      !strcmp(p->unschedulable, "Unschedulable"))
    return 1;
  return p->phase == GQ_POD_FAILED &&
         (!strncmp(p->status_reason, "OutOf", 5) ||
          !strcmp(p->status_reason, "UnexpectedAdmissionError") ||
          !strcmp(p->status_reason, "NodeAffinity"));
}

/* The pod index: keeps cj->pods equal to the pods labelled with its uid. */
void jobs_pod_seen(struct ctl *c, const json_t *pod, int present)
{
  const json_t *md = json_object_get(pod, "metadata");
  const json_t *lb = json_object_get(md, "labels");
  const char *uid = json_string_value(json_object_get(lb, GQ_LBL_JOB_UID));
  const char *ns = json_string_value(json_object_get(md, "namespace"));
  const char *name = json_string_value(json_object_get(md, "name"));
  const char *job = json_string_value(json_object_get(lb, GQ_LBL_JOB));
  struct cjob *cj;
  char key[600];
  size_t i;

  if (!uid || !ns || !name)
    return;
  cj = ctl_job(c, uid);
  if (!cj) {
    if (!present || !job)
      return;
    cj = ctl_job_new(c, uid, ns, job);
  }
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  disrupt_pod_seen(c, cj, pod);
  if (present)
    gq_capacity_unassume(&c->cap, key);
  for (i = 0; i < cj->n_pods && strcmp(cj->pods[i], key); i++)
    ;
  if (present && i == cj->n_pods) {
    cj->pods = gq_xrealloc(cj->pods, (cj->n_pods + 1) * sizeof(*cj->pods));
    cj->pods[cj->n_pods++] = gq_xstrdup(key);
    /* a pod first seen while its job tears down (its create was in flight
     * when the teardown began) has had no delete: the reconcile this
     * event brings must send one now, not after REDELETE_MS and some
     * later event (a Running pod may never send another) */
    if (cj->state == CJ_TEARDOWN)
      cj->td_sent_ms = 0;
  } else if (!present && i < cj->n_pods) {
    free(cj->pods[i]);
    cj->pods[i] = cj->pods[--cj->n_pods];
  }
}

struct podcount {
  int present, hold, running, succeeded, failed, miss, disrupted;
  int other_hold; /* pods of other attempts still holding resources */
  int64_t max_attempt;
  const char *flavor; /* annotation of a pod of the attempt */
  const char *checkpoint;
};

static void count_pods(struct ctl *c, struct cjob *cj, struct podcount *pc)
{
  memset(pc, 0, sizeof(*pc));
  for (size_t i = 0; i < cj->n_pods; i++) {
    const struct gq_pod *p = gq_informer_typed(c->inf_pods, cj->pods[i]);
    int64_t a;

    if (!p)
      continue;
    a = pod_attempt(p);
    if (a > pc->max_attempt)
      pc->max_attempt = a;
    if (a != cj->attempt) {
      pc->other_hold += gq_pod_holds_resources(p);
      continue;
    }
    pc->present++;
    if (!pc->flavor) {
      const json_t *an = json_object_get(
          json_object_get(p->json, "metadata"), "annotations");
      pc->flavor = json_string_value(json_object_get(an, GQ_ANN_FLAVOR));
    }
    pc->hold += gq_pod_holds_resources(p);
    if (pod_miss(p))
      pc->miss++;
    else if (p->disruption || (p->meta.deletion_ms && cj->td == TD_NONE))
      pc->disrupted++;
    else if (p->phase == GQ_POD_RUNNING)
      pc->running++;
    else if (p->phase == GQ_POD_SUCCEEDED)
      pc->succeeded++;
    else if (p->phase == GQ_POD_FAILED)
      pc->failed++;
  }
}

static void delete_done(int rc, const struct gq_k8s_status *st,
                        const json_t *obj, void *arg)
{
  struct ctl *c = arg;

  (void)obj;
  ctl_write_end(c);
  if (rc != 0 && rc != GQ_ENOTFOUND && rc != GQ_ECONFLICT)
    ctl_api_error(c, "delete", "pod", rc, st);
}

/* Deletes every pod of cj that still holds resources (with its grace
 * period: a checkpointing job gets SIGTERM and its grace, DESIGN §5). */
static void delete_pods(struct ctl *c, struct cjob *cj)
{
  int64_t now = gq_clock_mono_ms();

  if (cj->td_sent_ms && now - cj->td_sent_ms < REDELETE_MS)
    return;
  cj->td_sent_ms = now;
  for (size_t i = 0; i < cj->n_pods; i++) {
    const struct gq_pod *p = gq_informer_typed(c->inf_pods, cj->pods[i]);
    char path[700];

    if (!p || !gq_pod_holds_resources(p) || p->meta.deletion_ms)
      continue;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", p->meta.ns,
             p->meta.name);
    ctl_write_begin(c);
    if (gq_kclient_delete_how(c->kc, path, -1, p->meta.uid, CTL_WORK,
                              delete_done, c) != 0)
      ctl_write_end(c);
  }
}

static int holding(struct ctl *c, struct cjob *cj)
{
  int n = 0;

  for (size_t i = 0; i < cj->n_pods; i++) {
    const struct gq_pod *p = gq_informer_typed(c->inf_pods, cj->pods[i]);

    n += p && gq_pod_holds_resources(p);
  }
  return n;
}

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

const char *jobs_td_record(enum cj_td td)
{
  return td == TD_FAILED || td == TD_STARTUP || td == TD_DEADLINE
             ? td_reason(td)
             : NULL;
}

/* 1 when nothing of cj's teardown has to wait for its record: the kind
 * needs none, or the stored GpuJob (what a restarted controller reads)
 * shows it: reason, failedAttempts and attempts as cj has them. */
static int td_recorded(struct ctl *c, const struct cjob *cj)
{
  const char *r = jobs_td_record(cj->td);
  const struct gq_gpujob *j;

  if (!r || cj->state != CJ_TEARDOWN)
    return 1;
  j = ctl_job_obj(c, cj);
  return j && j->status.reason && !strcmp(j->status.reason, r) &&
         j->status.failures == cj->failures &&
         j->status.attempts == cj->attempt;
}

/* Starts tearing cj's attempt down (td: why; why: a sentence). A failure
 * or startup timeout is counted here (status.failedAttempts), and for
 * those and a deadline the outcome is written first: no pod is deleted
 * and nothing released before the stored status shows it (td_recorded),
 * so a controller that dies at any point of the teardown finds either the
 * failed attempt's pods or the record, never neither (adopt()). */
static void teardown(struct ctl *c, struct cjob *cj, enum cj_td td,
                     const char *why)
{
  const struct gq_gpujob *j = ctl_job_spec(c, cj);

  if (cj->state == CJ_TEARDOWN)
    return;
  cj->state = CJ_TEARDOWN;
  cj->td = td;
  cj->td_sent_ms = 0;
  cj->running = 0;
  if (td == TD_DISRUPTED) { /* evicted or deleted: its GPUs are still held */
    cj->phase = GQ_PHASE_PREEMPTING;
    status_set(cj, "Disrupted", "%s; requeued once its pods are gone", why);
    disrupt_begin(c, cj, j);
  } else if (td == TD_FAILED || td == TD_STARTUP) {
    cj->failures++;
    status_set(cj, td_reason(td), "attempt %lld: %s (failed attempts: "
               "%lld, spec.backoffLimit %d); its pods are deleted, then it %s",
               (long long)cj->attempt, why, (long long)cj->failures,
               j ? j->backoff_limit : 0,
               j && cj->failures > j->backoff_limit ? "fails"
                                                    : "is requeued");
  } else if (td == TD_DEADLINE) {
    status_set(cj, td_reason(td), "attempt %lld: %s; its pods are deleted, "
               "then it fails", (long long)cj->attempt, why);
  }
  GQ_LOG(GQ_INFO, &lc, "job %s attempt %lld: tearing down (%s): %s", cj->key,
         (long long)cj->attempt, td_reason(td), why);
  if (td != TD_DELETE)
    status_event(c, cj, td == TD_SUSPEND ? "Normal" : "Warning", td_reason(td),
                 "attempt %lld: %s", (long long)cj->attempt, why);
  if (td_recorded(c, cj))
    delete_pods(c, cj);
  status_flush(c, cj);
}

void jobs_preempt(struct ctl *c, struct cjob *cj, struct cjob *by,
                  const char *cause, const char *why)
{
  disrupt_cause(cj, cause, why);
  cj->cause_grace_s = -1;
  free(cj->preemptor);
  cj->preemptor = by ? gq_xstrdup(by->uid) : NULL;
  if (by)
    by->victims_left++;
  teardown(c, cj, TD_DISRUPTED, why);
  status_flush(c, cj);
}

/* ---- finishing ------------------------------------------------------- */

static void finish(struct ctl *c, struct cjob *cj, int failed,
                   const char *reason, const char *msg)
{
  release(c, cj);
  jobs_queue_del(c, cj);
  cj->state = CJ_DONE;
  cj->phase = failed ? GQ_PHASE_FAILED : GQ_PHASE_SUCCEEDED;
  cj->running = 0;
  cj->eta_ms = -1;
  if (!cj->completion_ms)
    cj->completion_ms = gq_clock_now_ms();
  status_set(cj, reason, "%s", msg);
  status_event(c, cj, failed ? "Warning" : "Normal", reason, "%s", msg);
  if (cj->pdb)
    disrupt_pdb(c, cj, 0);
  if (*cj->cohort || ctl_quota(c, cj->team))
    redis_remove(c, cj);
}

static void requeue(struct ctl *c, struct cjob *cj)
{
  const struct gq_gpujob *j = ctl_job_spec(c, cj);

  release(c, cj);
  free_nodes(cj);
  cj->state = CJ_NEW;
  cj->phase = GQ_PHASE_QUEUED;
  cj->td = TD_NONE;
  if (j && strcmp(j->team, cj->team)) {
    /* spec.team was edited during the attempt (SpecChangeDeferred): it
     * leaves the old team's queue, and the reconcile that follows queues
     * it in the new team's, with its original queue time */
    status_event(c, cj, "Normal", "Requeued", "attempt %lld: queued again "
                 "in team '%s' (spec.team was edited)",
                 (long long)cj->attempt, j->team);
    redis_remove(c, cj); /* it was admitted: its keys exist */
    return;
  }
  status_event(c, cj, "Normal", "Requeued", "attempt %lld: back in team "
               "'%s''s queue at its original place", (long long)cj->attempt,
               cj->team);
  /* Redis: back at the original place (requeue keeps the queue time) */
  ctl_write_begin(c);
  if (gq_queue_requeue(&c->q, cj->cohort, cj->team, cj->uid, redis_done, c))
    ctl_write_end(c);
}

/* The gang's pods are all gone or finished: decide what comes next. */
static void teardown_done(struct ctl *c, struct cjob *cj,
                          const struct gq_gpujob *j)
{
  char msg[256];
  enum cj_td td = cj->td;

  switch (td) {
  case TD_FAILED:
  case TD_STARTUP: /* counted by teardown() */
    if (j && cj->failures > j->backoff_limit) {
      snprintf(msg, sizeof(msg), "%lld failed attempts, more than "
               "spec.backoffLimit %d", (long long)cj->failures,
               j->backoff_limit);
      finish(c, cj, 1, "BackoffLimitExceeded", msg);
      return;
    }
    requeue(c, cj);
    status_set(cj, "Requeued", "attempt %lld %s; %lld of %d failed "
               "attempts allowed used", (long long)cj->attempt,
               td == TD_FAILED ? "failed"
                               : "was not all Running within "
                                 "spec.startupTimeoutSeconds",
               (long long)cj->failures, j ? j->backoff_limit : 0);
    break;
  case TD_MISS:
    requeue(c, cj);
    status_set(cj, "PlacementMiss", "attempt %lld could not run where gpuq "
               "placed it; placing it again (not counted toward "
               "backoffLimit)", (long long)cj->attempt);
    break;
  case TD_DISRUPTED:
    cj->preemptions++;
    requeue(c, cj);
    disrupt_done(c, cj, j);
    disrupt_victim_done(c, cj);
    break;
  case TD_DEADLINE:
    snprintf(msg, sizeof(msg), "ran longer than spec.activeDeadlineSeconds "
             "%lld", j ? (long long)j->active_deadline_s : 0LL);
    finish(c, cj, 1, "DeadlineExceeded", msg);
    return;
  case TD_SUSPEND:
    release(c, cj);
    free_nodes(cj);
    cj->td = TD_NONE;
    cj->state = CJ_NEW; /* the reconcile below parks it as Suspended */
    break;
  default:
    break;
  }
  jobs_reconcile(c, cj);
}

/* ---- creating the pods of an admitted attempt -------------------------- */

struct create_ctx {
  struct ctl *c;
  char *uid;
  char *pod_key;
  int64_t attempt;
};

static void forget_assumed(struct ctl *c, const char *key)
{
  struct gq_cap_assumed *a;

  HASH_FIND_STR(c->cap.assumed, key, a);
  if (!a)
    return;
  HASH_DEL(c->cap.assumed, a);
  admit_commit(c, a->node, &a->req, -1);
  free(a->key);
  free(a->node);
  gq_capacity_request_free(&a->req);
  free(a);
}

static void created_one(struct ctl *c, struct create_ctx *x, int ok)
{
  struct cjob *cj = ctl_job(c, x->uid);

  c->creating--;
  if (!ok)
    gq_capacity_unassume(&c->cap, x->pod_key);
  if (cj && cj->attempt == x->attempt && cj->creates_left > 0) {
    cj->creates_left--;
    if (!ok && cj->state == CJ_ACTIVE)
      teardown(c, cj, TD_MISS, "a pod could not be created");
    if (cj->creates_left == 0 && cj->state == CJ_ACTIVE) {
      const char *l[] = {cj->team};

      gq_metric_observe(c->m_adm_latency, l,
                        (double)(gq_clock_mono_ms() - cj->pass_ms) / 1000.0);
    }
    jobs_reconcile(c, cj);
  }
  ctl_write_end(c);
  free(x->uid);
  free(x->pod_key);
  free(x);
}

static void owner_checked(int rc, const struct gq_k8s_status *st,
                          const json_t *obj, void *arg)
{
  struct create_ctx *x = arg;
  const json_t *refs = json_object_get(json_object_get(obj, "metadata"),
                                       "ownerReferences");
  size_t i;
  const json_t *r;
  int ours = 0;

  (void)st;
  json_array_foreach(refs, i, r) {
    if (json_is_true(json_object_get(r, "controller")) &&
        !strcmp(json_string_value(json_object_get(r, "uid")) ?: "", x->uid))
      ours = 1;
  }
  if (rc == 0 && !ours)
    GQ_LOG(GQ_WARN, &lc, "pod %s exists and is not owned by job uid %s",
           x->pod_key, x->uid);
  created_one(x->c, x, rc == 0 && ours);
}

/* The create is on the wire: the refill is out of gpuq's hands. */
static void pod_sent(void *arg)
{
  struct create_ctx *x = arg;

  ctl_refilled(x->c);
}

static void pod_created(int rc, const struct gq_k8s_status *st,
                        const json_t *obj, void *arg)
{
  struct create_ctx *x = arg;
  char path[700];
  const char *slash;

  (void)obj;
  if (rc == GQ_EEXIST) {
    /* a retried create: done only if the pod is this job's (DESIGN §3) */
    slash = strchr(x->pod_key, '/');
    snprintf(path, sizeof(path), "/api/v1/namespaces/%.*s/pods/%s",
             (int)(slash - x->pod_key), x->pod_key, slash + 1);
    if (gq_kclient_get(x->c->kc, path, owner_checked, x) == 0)
      return;
  }
  if (rc != 0 && rc != GQ_EEXIST)
    ctl_api_error(x->c, "create", "pod", rc, st);
  created_one(x->c, x, rc == 0);
}

static void service_done(int rc, const struct gq_k8s_status *st,
                         const json_t *obj, void *arg)
{
  struct ctl *c = arg;

  (void)obj;
  ctl_write_end(c);
  if (rc != 0 && rc != GQ_EEXIST)
    ctl_api_error(c, "create", "service", rc, st);
}

/* The requests of one replica of j, with names owned (an assumption
 * outlives the job document it was made from: the informer replaces it on
 * every update). Only the requests are kept; the rest is empty. */
void gq_capacity_request_copy(const struct gq_podsched *r, struct gq_podsched *out)
{
  memset(out, 0, sizeof(*out));
  out->node_name = "";
  out->cpu_milli = r->cpu_milli;
  out->memory_bytes = r->memory_bytes;
  out->grace_s = r->grace_s;
  out->n_extended = r->n_extended;
  out->extended = gq_xcalloc(r->n_extended + 1, sizeof(*out->extended));
  for (size_t i = 0; i < r->n_extended; i++) {
    out->extended[i].name = gq_xstrdup(r->extended[i].name);
    out->extended[i].value = r->extended[i].value;
  }
}

static void own_request(const struct gq_gpujob *j, struct gq_podsched *out)
{
  struct gq_podsched r;

  gq_place_replica_request(j, &r);
  gq_capacity_request_copy(&r, out);
  gq_place_replica_release(&r);
}

void gq_capacity_request_free(struct gq_podsched *req)
{
  for (size_t i = 0; i < req->n_extended; i++)
    free((char *)req->extended[i].name);
  free(req->extended);
  memset(req, 0, sizeof(*req));
}

/* Assumes the pods of cj's current attempt on cj->nodes in the capacity
 * snapshot (client-go's scheduler "assume"), until the pod informer shows
 * them or their creation fails. */
void jobs_assume(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j)
{
  char name[GQ_POD_NAME_MAX + 1];

  for (int32_t r = 0; r < cj->replicas; r++) {
    struct gq_cap_assumed *a = gq_xcalloc(1, sizeof(*a));

    gq_podspec_pod_name(j, cj->attempt, r, name, sizeof(name));
    a->key = gq_xasprintf("%s/%s", cj->ns, name);
    a->node = gq_xstrdup(cj->nodes[r]);
    own_request(j, &a->req);
    gq_capacity_unassume(&c->cap, a->key);
    HASH_ADD_KEYPTR(hh, c->cap.assumed, a->key, strlen(a->key), a);
    admit_commit(c, a->node, &a->req, 1);
  }
}

/* Drops what jobs_assume() assumed (an admission that did not happen).
 * j is NULL when the GpuJob is gone: the pod names then come from cj's
 * name and uid, as jobs_assume() took them from j. */
void jobs_unassume(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j)
{
  char name[GQ_POD_NAME_MAX + 1], key[600];
  struct gq_gpujob gone;

  if (!j) {
    memset(&gone, 0, sizeof(gone));
    gone.meta.name = cj->name;
    gone.meta.uid = cj->uid;
    j = &gone;
  }
  for (int32_t r = 0; r < cj->replicas; r++) {
    gq_podspec_pod_name(j, cj->attempt, r, name, sizeof(name));
    snprintf(key, sizeof(key), "%s/%s", cj->ns, name);
    gq_capacity_unassume(&c->cap, key);
  }
}

/* Creates cj's Service (multi-replica) and pods on cj->nodes, assuming
 * each pod in the capacity snapshot until the pod informer shows it. */
void jobs_create_pods(struct ctl *c, struct cjob *cj)
{
  static const struct gq_kclient_call how = {GQ_KPRIO_HIGH, 1, pod_sent};
  const struct gq_gpujob *j = ctl_job_spec(c, cj);
  char coll[400], name[GQ_POD_NAME_MAX + 1];

  if (!j) {
    teardown(c, cj, TD_DELETE, "the job is gone");
    return;
  }
  snprintf(coll, sizeof(coll), "/api/v1/namespaces/%s/pods", cj->ns);
  if (cj->replicas > 1) {
    json_t *svc = gq_podspec_service(j);
    char scoll[400];

    snprintf(scoll, sizeof(scoll), "/api/v1/namespaces/%s/services", cj->ns);
    ctl_write_begin(c);
    if (gq_kclient_create_how(c->kc, scoll, svc, CTL_WORK, service_done, c))
      ctl_write_end(c);
    json_decref(svc);
  }
  cj->creates_left = cj->replicas;
  disrupt_resume(c, cj);
  if (j->drain == GQ_DRAIN_WAIT && !cj->pdb)
    disrupt_pdb(c, cj, 1);
  for (int32_t r = 0; r < cj->replicas; r++) {
    const struct gq_node *n = gq_informer_typed(c->inf_nodes, cj->nodes[r]);
    struct create_ctx *x;
    json_t *pod, *ann;

    if (!n) {
      cj->creates_left--;
      teardown(c, cj, TD_MISS, "its node is gone");
      continue;
    }
    pod = gq_podspec_pod(j, cj->attempt, r, n, cj->ckpt);
    ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
    if (!json_is_object(ann)) {
      ann = json_object();
      json_object_set_new(json_object_get(pod, "metadata"), "annotations",
                          ann);
    }
    json_object_set_new(ann, GQ_ANN_FLAVOR, json_string(cj->flavor));
    json_object_set_new(ann, GQ_ANN_NODE, json_string(cj->nodes[r]));
    gq_podspec_pod_name(j, cj->attempt, r, name, sizeof(name));
    x = gq_xcalloc(1, sizeof(*x));
    x->c = c;
    x->uid = gq_xstrdup(cj->uid);
    x->pod_key = gq_xasprintf("%s/%s", cj->ns, name);
    x->attempt = cj->attempt;
    ctl_write_begin(c);
    c->creating++;
    if (gq_kclient_create_how(c->kc, coll, pod, &how, pod_created, x))
      created_one(c, x, 0);
    json_decref(pod);
  }
}

/* ---- the reconcile ---------------------------------------------------- */

/* An adopted gang still in phase Admitted with replicas missing: the
 * previous process may have died with their creates in flight. Creates
 * them again on the nodes status.nodes lists, under the same names (a
 * create still in flight then gets 409, and a pod that exists counts as
 * done), rather than tearing the attempt down and starting another while a
 * pod of this one may still land (invariant 5). Returns 0, or -1 when
 * status.nodes does not say where the replicas go. */
static int resume_creates(struct ctl *c, struct cjob *cj,
                          const struct gq_gpujob *j)
{
  char name[GQ_POD_NAME_MAX + 1], key[600];

  if ((j->status.bad & GQ_ST_NODES) ||
      (int32_t)j->status.n_nodes != j->replicas)
    return -1;
  free_nodes(cj);
  cj->replicas = j->replicas;
  cj->nodes = gq_xcalloc((size_t)j->replicas, sizeof(*cj->nodes));
  for (int32_t r = 0; r < j->replicas; r++)
    cj->nodes[r] = gq_xstrdup(j->status.nodes[r]);
  cj->pass_ms = gq_clock_mono_ms();
  jobs_assume(c, cj, j);
  for (int32_t r = 0; r < j->replicas; r++) { /* those seen are counted */
    gq_podspec_pod_name(j, cj->attempt, r, name, sizeof(name));
    snprintf(key, sizeof(key), "%s/%s", cj->ns, name);
    if (gq_informer_get(c->inf_pods, key))
      gq_capacity_unassume(&c->cap, key);
  }
  GQ_LOG(GQ_INFO, &lc, "job %s attempt %lld: pods missing after a restart; "
         "creating them again", cj->key, (long long)cj->attempt);
  jobs_create_pods(c, cj);
  return 0;
}

static int phase_active(enum gq_job_phase ph)
{
  return ph == GQ_PHASE_ADMITTED || ph == GQ_PHASE_RUNNING ||
         ph == GQ_PHASE_PREEMPTING;
}

/* The teardown of attempt 'attempt' that j's status records, or TD_NONE
 * (also when the status is about an earlier attempt): phase Preempting is
 * a disruption's; reason ReplicaFailed, StartupTimeout or DeadlineExceeded
 * in phase Admitted or Running is teardown()'s record. */
static enum cj_td teardown_in_status(const struct gq_gpujob *j,
                                     int64_t attempt)
{
  static const enum cj_td kinds[] = {TD_FAILED, TD_STARTUP, TD_DEADLINE};

  if (j->status.attempts != attempt || !phase_active(j->status.phase))
    return TD_NONE;
  if (j->status.phase == GQ_PHASE_PREEMPTING)
    return TD_DISRUPTED;
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
    if (!strcmp(j->status.reason, jobs_td_record(kinds[i])))
      return kinds[i];
  return TD_NONE;
}

/* Takes up, after a restart, the teardown a previous process recorded:
 * nothing is counted again (a failure was counted in the record). */
static void resume_teardown(struct ctl *c, struct cjob *cj,
                            const struct gq_gpujob *j, enum cj_td td)
{
  char why[512];

  cj->state = CJ_TEARDOWN;
  cj->td = td;
  cj->td_sent_ms = 0;
  cj->running = 0;
  if (td == TD_DISRUPTED) {
    disrupt_describe(c, cj, why, sizeof(why));
    status_set(cj, "Disrupted", "%s; requeued once its pods are gone", why);
    disrupt_begin(c, cj, j);
  }
  GQ_LOG(GQ_INFO, &lc, "job %s attempt %lld: taking up its teardown (%s) "
         "after a restart", cj->key, (long long)cj->attempt, td_reason(td));
}

/* Fills cj from the job object after a (re)start: its status and pods say
 * where it stood (DESIGN §6: the objects are the truth). The status speaks
 * for attempt status.attempts; pods of a later attempt mean it is stale
 * (that attempt was admitted, its status not written yet). A teardown the
 * status records is taken up where it stood; a replica of the attempt
 * that failed while the status still shows it admitted is a failure not
 * yet counted (the reconcile tears the gang down and counts it). */
static void adopt(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j)
{
  struct podcount pc;
  int64_t seen = cj->queued_ms; /* arrival stamp (ctl.c job_for), or 0 */
  enum cj_td rec;

  cj->queued_ms = j->status.queued_ms ? j->status.queued_ms
                                      : j->meta.creation_ms;
  /* creationTimestamp has whole seconds: within its second, the order the
   * jobs arrived in (their creation order) decides, not their uids */
  if (!j->status.queued_ms && cj->queued_ms > 0 && seen > 0)
    cj->queued_ms = seen < cj->queued_ms         ? cj->queued_ms
                    : seen > cj->queued_ms + 999 ? cj->queued_ms + 999
                                                 : seen;
  if (!cj->queued_ms)
    cj->queued_ms = gq_clock_now_ms();
  cj->admitted_ms = j->status.admitted_ms;
  cj->start_ms = j->status.start_ms;
  cj->first_start_ms = j->status.start_ms;
  cj->completion_ms = j->status.completion_ms;
  /* a finished or admitted job's reason stays (a status write compares
   * with it); a queued one's is the reconcile's and the pass's again */
  if (gq_job_phase_final(j->status.phase) || phase_active(j->status.phase))
    status_set(cj, ctl_intern(c, j->status.reason), "%s",
               j->status.message ? j->status.message : "");
  cj->attempt = j->status.attempts;
  cj->failures = j->status.failures;
  cj->preemptions = j->status.preemptions;
  cj->phase = j->status.phase;
  if (j->status.checkpoint && !cj->ckpt) {
    cj->ckpt = gq_xstrdup(j->status.checkpoint);
    cj->ckpt_ms = j->status.checkpoint_ms;
  }
  cj->preempted = j->status.phase == GQ_PHASE_PREEMPTING;
  count_pods(c, cj, &pc);
  if (pc.max_attempt > cj->attempt) {
    cj->attempt = pc.max_attempt;
    count_pods(c, cj, &pc);
  }
  if (gq_job_phase_final(j->status.phase)) {
    cj->state = CJ_DONE;
    if (pc.hold) /* finished, but pods linger: clean them up */
      delete_pods(c, cj);
    return;
  }
  rec = teardown_in_status(j, cj->attempt);
  if (pc.present > 0 &&
      (pc.hold > 0 || pc.succeeded > 0 ||
       (pc.failed > 0 && (j->status.attempts != cj->attempt ||
                          phase_active(j->status.phase))))) {
    /* its pods hold GPUs, or ended unrecorded: it stays admitted (or is
     * torn down below) */
    const struct gq_teamquota *q = ctl_quota(c, j->team);

    ctl_active(c, cj);
    cj->flavor = ctl_intern(c, pc.flavor ? pc.flavor : "");
    cj->replicas = j->replicas;
    cj->running = pc.running > 0 && pc.running + pc.succeeded == cj->replicas;
    /* it holds an admission: count it in its team's use, so that quota
     * holds after a restart, the rebuild writes it to the ledger and its
     * end releases it (refresh() runs after this, too late for that) */
    cj->team = ctl_intern(c, j->team);
    cj->cohort = ctl_intern(c, q && q->cohort ? q->cohort : "");
    cj->gpus = j->gpus;
    jobs_use(c, cj, 1);
    if (rec != TD_NONE)
      resume_teardown(c, cj, j, rec);
    else if (j->status.phase == GQ_PHASE_ADMITTED &&
             pc.present < cj->replicas && !pc.failed && !pc.miss &&
             !pc.disrupted)
      resume_creates(c, cj, j);
    return;
  }
  if (rec != TD_NONE) { /* recorded, and its pods are gone: it ends now */
    resume_teardown(c, cj, j, rec);
    return;
  }
  if (pc.other_hold) { /* an older generation still terminating */
    cj->state = CJ_TEARDOWN;
    cj->td = TD_DISRUPTED;
  }
}

/* 1 while cj holds an admission (from the decision on: jobs_use) or the
 * node array of its last attempt. Its team's use, its ledger record (team,
 * GPUs), that array (cj->replicas entries) and its pods were made with
 * cj->team, cj->gpus and cj->replicas, so an edit of spec.team,
 * gpusPerReplica or replicas waits for the next attempt, as Kubernetes
 * keeps a running Job's pod template and Kueue an admitted Workload's pod
 * sets as they were. */
static int attempt_pinned(const struct cjob *cj)
{
  return cj->has_adm || cj->nodes;
}

/* Takes the spec's values into cj (on every reconcile); those an attempt
 * was admitted with stay while it runs (attempt_pinned), and the edit is
 * told once per attempt by a SpecChangeDeferred event. */
static void refresh(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j)
{
  const struct gq_teamquota *q;

  if (!attempt_pinned(cj)) {
    if (cj->t) /* queued: its team's pending GPUs follow the edit */
      cj->t->pending_gpus += j->gpus - cj->gpus;
    cj->team = ctl_intern(c, j->team);
    cj->gpus = j->gpus;
    cj->replicas = j->replicas;
    cj->edit_told = 0;
  } else if (!cj->edit_told && cj->state != CJ_DONE &&
             (strcmp(cj->team, j->team) || cj->gpus != j->gpus ||
              cj->replicas != j->replicas)) {
    cj->edit_told = 1;
    status_event(c, cj, "Warning", "SpecChangeDeferred",
                 "attempt %lld keeps what it was admitted with (team %s, "
                 "%d x %lld GPUs); the edited spec (team %s, %d x %lld GPUs) "
                 "applies when the job is queued again",
                 (long long)cj->attempt, cj->team, cj->replicas,
                 (long long)(cj->replicas ? cj->gpus / cj->replicas : 0),
                 j->team, j->replicas, (long long)j->gpus_per_replica);
  }
  cj->expected_s = j->expected_duration_s;
  cj->deadline_s = j->active_deadline_s;
  cj->startup_s = j->startup_timeout_s;
  cj->drain_wait = j->drain == GQ_DRAIN_WAIT;
  cj->priority = j->priority;
  if (j->priority_class) {
    const json_t *pc = gq_informer_get(c->inf_pcs, j->priority_class);
    json_int_t v = json_integer_value(json_object_get(pc, "value"));

    if (pc)
      cj->priority = v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN
                                                               : (int32_t)v;
  }
  if (cj->has_adm && cj->adm_prio != cj->priority) {
    /* counted at the priority it now has (jobs_use's count per priority) */
    struct cteam *t = ctl_team(c, cj->team);

    prio_count(t, cj->adm_prio, -1);
    prio_count(t, cj->adm_prio = cj->priority, +1);
  }
  q = ctl_quota(c, cj->team);
  if (q && cj->state != CJ_QUEUED && !cj->has_adm)
    cj->cohort = ctl_intern(c, q->cohort ? q->cohort : "");
  cj->shape = j->shape; /* what placement looks at (gq_gpujob_decode) */
}

static void list_teams(struct ctl *c, char *buf, size_t len)
{
  json_t *all = gq_informer_list(c->inf_quotas);
  size_t i, off = 0;
  json_t *o;

  buf[0] = '\0';
  json_array_foreach(all, i, o) {
    int n = snprintf(buf + off, len - off, "%s'%s'", i ? ", " : "",
                     gq_meta_str(o, "name"));
    if (n < 0 || (size_t)n >= len - off)
      break;
    off += (size_t)n;
  }
  if (!off)
    snprintf(buf, len, "none");
  json_decref(all);
}

/* Replicas of the current attempt that exist: in the pod informer, or
 * created and assumed but not shown by it yet. */
static int pods_seen(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j)
{
  char name[GQ_POD_NAME_MAX + 1], key[600];
  struct gq_cap_assumed *a;
  int n = 0;

  for (int32_t r = 0; r < cj->replicas; r++) {
    gq_podspec_pod_name(j, cj->attempt, r, name, sizeof(name));
    snprintf(key, sizeof(key), "%s/%s", cj->ns, name);
    HASH_FIND_STR(c->cap.assumed, key, a);
    n += a || gq_informer_get(c->inf_pods, key);
  }
  return n;
}

static void reconcile_active(struct ctl *c, struct cjob *cj,
                             const struct gq_gpujob *j)
{
  struct podcount pc;

  count_pods(c, cj, &pc);
  if (cj->state == CJ_TEARDOWN) {
    if (!td_recorded(c, cj))
      return; /* its status write (jobs_reconcile flushes it) comes first */
    if (holding(c, cj) == 0 && cj->creates_left == 0)
      teardown_done(c, cj, j);
    else
      delete_pods(c, cj);
    return;
  }
  if (j->suspend) {
    teardown(c, cj, TD_SUSPEND, "spec.suspend is true");
    return;
  }
  if (pc.miss) {
    teardown(c, cj, TD_MISS, "a pinned pod was not schedulable or was "
             "rejected by its kubelet");
    return;
  }
  if (pc.failed) {
    teardown(c, cj, TD_FAILED, "a replica failed");
    return;
  }
  if (pc.disrupted || (cj->creates_left == 0 &&
                       pods_seen(c, cj, j) < cj->replicas &&
                       pc.succeeded < cj->replicas)) {
    char why[512];

    disrupt_describe(c, cj, why, sizeof(why));
    teardown(c, cj, TD_DISRUPTED, why);
    return;
  }
  if (cj->creates_left > 0)
    return;
  if (pc.succeeded == cj->replicas) {
    char msg[128];

    snprintf(msg, sizeof(msg), "all %d replicas succeeded", cj->replicas);
    finish(c, cj, 0, "Succeeded", msg);
    return;
  }
  if (pc.running > 0 && pc.running + pc.succeeded == cj->replicas &&
      !cj->running) {
    cj->running = 1;
    cj->phase = GQ_PHASE_RUNNING;
    if (!cj->start_ms)
      cj->start_ms = gq_clock_now_ms();
    if (!cj->first_start_ms)
      cj->first_start_ms = cj->start_ms;
    status_set(cj, "Running", "all %d replicas running", cj->replicas);
    status_event(c, cj, "Normal", "Running", "all %d replicas running",
                 cj->replicas);
  }
}

void jobs_reconcile(struct ctl *c, struct cjob *cj)
{
  const struct gq_gpujob *obj = ctl_job_obj(c, cj);
  const struct gq_gpujob *j = obj && !obj->invalid ? obj : NULL;
  const struct gq_teamquota *q;
  char err[GQ_DEC_MSG_MAX], teams[512];

  if (!obj || obj->meta.deletion_ms) {
    /* being deleted, or gone: its pods go, then its GPUs and its keys */
    jobs_queue_del(c, cj);
    if (holding(c, cj) > 0 || cj->creates_left > 0) {
      if (cj->state != CJ_TEARDOWN || cj->td != TD_DELETE)
        cj->td_sent_ms = 0; /* not the last attempt's: send them now */
      cj->state = CJ_TEARDOWN;
      cj->td = TD_DELETE;
      delete_pods(c, cj);
      return;
    }
    if (cj->state == CJ_ADMITTING) {
      /* gone before Redis answered its admit: what was assumed for its
       * pods goes now, and the reply (admit.c) finds it done */
      jobs_unassume(c, cj, j);
      cj->state = CJ_DONE;
    }
    release(c, cj);
    if (*cj->team && ctl_quota(c, cj->team))
      redis_remove(c, cj);
    if (obj)
      status_finalizer(c, cj, obj, 0);
    else {
      HASH_DEL(c->jobs, cj);
      jobs_forget(c, cj);
    }
    return;
  }
  if (!cj->adopted && j) {
    cj->adopted = 1;
    adopt(c, cj, j);
  }
  if (!j) { /* invalid: Failed with the decoder's message (never dropped) */
    if (cj->state == CJ_DONE)
      return;
    cj->state = CJ_DONE;
    cj->phase = GQ_PHASE_FAILED;
    status_set(cj, "InvalidSpec", "%s", obj->invalid);
    status_event(c, cj, "Warning", "InvalidSpec", "%s", obj->invalid);
    status_flush(c, cj);
    return;
  }
  refresh(c, cj, j);
  if (cj->state == CJ_DONE) {
    status_flush(c, cj);
    return;
  }
  if (cj->state == CJ_ACTIVE || cj->state == CJ_TEARDOWN) {
    if (cj->state == CJ_ACTIVE) /* its add at admission may have failed */
      status_finalizer(c, cj, obj, 1);
    reconcile_active(c, cj, j);
    status_flush(c, cj);
    return;
  }
  if (cj->state == CJ_ADMITTING) /* the admit reply decides */
    return;
  if (j->priority_class && !gq_informer_get(c->inf_pcs, j->priority_class)) {
    snprintf(err, sizeof(err), "spec.priorityClassName: no PriorityClass "
             "named '%s'", j->priority_class);
    finish(c, cj, 1, "UnknownPriorityClass", err);
    status_flush(c, cj);
    return;
  }
  q = ctl_quota(c, cj->team);
  if (!q) {
    if (cj->t) {
      jobs_queue_del(c, cj);
      redis_remove(c, cj);
    }
    list_teams(c, teams, sizeof(teams));
    cj->state = CJ_WAITING;
    cj->phase = GQ_PHASE_QUEUED;
    status_set(cj, "UnknownTeam", "spec.team: no TeamQuota named '%s'; "
               "teams that exist: %s", cj->team, teams);
  } else if (!gq_teamquota_admits_namespace(q, cj->ns)) {
    snprintf(err, sizeof(err), "namespace '%s' may not use team '%s' "
             "(TeamQuota spec.namespaces does not list it)", cj->ns, cj->team);
    if (cj->t)
      jobs_queue_del(c, cj);
    finish(c, cj, 1, "Forbidden", err);
  } else if (j->suspend) {
    if (cj->t) {
      jobs_queue_del(c, cj);
      redis_remove(c, cj);
    }
    cj->state = CJ_WAITING;
    cj->phase = GQ_PHASE_SUSPENDED;
    status_set(cj, "Suspended", "spec.suspend is true");
  } else {
    if (cj->t && (cj->t != ctl_team(c, cj->team) || cj->priority != cj->qprio ||
                  strcmp(cj->cohort, q->cohort ? q->cohort : ""))) {
      /* its place changed (priority, team or cohort): queue it again */
      jobs_queue_del(c, cj);
      redis_remove(c, cj);
    }
    if (!cj->t) {
      int first = cj->phase != GQ_PHASE_QUEUED;

      jobs_queue_add(c, cj);
      cj->phase = GQ_PHASE_QUEUED;
      if (!*cj->reason || !strcmp(cj->reason, "UnknownTeam") ||
          !strcmp(cj->reason, "Suspended"))
        status_set(cj, "Queued", "waiting in team '%s''s queue", cj->team);
      /* a job requeued after running gets an event; a new one does not:
       * 100k submissions must not make 100k events (its status says it) */
      if (first && cj->attempt > 0)
        status_event(c, cj, "Normal", "Requeued", "back in team '%s''s "
                     "queue at its original place", cj->team);
    }
    /* a queued job's status is written by the pass (the first positions
     * of its team) or by the background sweep, not here: coalesced */
    if (cj->state == CJ_QUEUED)
      return;
  }
  status_flush(c, cj);
}

/* Active deadlines and startup timeouts (virtual time, DESIGN §5). */
void jobs_tick(struct ctl *c, int64_t now_ms, int64_t *next_ms)
{
  struct cjob *cj, *tmp;
  struct cteam *t, *tt;
  const struct gq_gpujob *j;
  int64_t dt = c->tick_ms && now_ms > c->tick_ms ? now_ms - c->tick_ms : 0;

  c->tick_ms = now_ms;
  disrupt_force_tick(c, now_ms, next_ms);
  /* GPU-seconds allocated, for cost reports: a team's use per flavor is
   * the sum of its admitted jobs' GPUs (one add per team and flavor, not
   * one per job) */
  HASH_ITER(hh, c->teams, t, tt)
    for (size_t i = 0; dt && i < t->n_use; i++) {
      const char *l[] = {t->name, t->use[i].key};

      if (t->use[i].gpus)
        gq_metric_add(c->m_gpu_seconds, l,
                      (double)(t->use[i].gpus * dt) / 1000.0);
    }
  /* the admitted jobs only (c->active); the limits come from the values
   * refresh() cached, not a lookup of every job's object */
  DL_FOREACH_SAFE2(c->active, cj, tmp, act_next) {
    int64_t at;

    if (cj->state != CJ_ACTIVE) {
      ctl_active_del(c, cj); /* left CJ_ACTIVE since it was added */
      continue;
    }
    if (cj->gone)
      continue;
    /* drainPolicy Wait's maximum wait needs the spec: looked up for
     * those jobs only */
    if (!cj->drain_wait)
      cj->cordon_ms = 0;
    else if (!(j = ctl_job_spec(c, cj)) ||
             disrupt_wait_tick(c, cj, j, now_ms, next_ms))
      continue;
    if (cj->deadline_s >= 0 && cj->first_start_ms) {
      at = cj->first_start_ms + cj->deadline_s * 1000;
      if (at <= now_ms) {
        teardown(c, cj, TD_DEADLINE, "spec.activeDeadlineSeconds passed");
        continue;
      }
      if (*next_ms < 0 || at < *next_ms)
        *next_ms = at;
    }
    if (cj->startup_s >= 0 && !cj->running && cj->admitted_ms) {
      at = cj->admitted_ms + cj->startup_s * 1000;
      if (at <= now_ms) {
        teardown(c, cj, TD_STARTUP, "replicas not all Running within "
                 "spec.startupTimeoutSeconds");
        continue;
      }
      if (*next_ms < 0 || at < *next_ms)
        *next_ms = at;
    }
  }
}
