/* controller/disrupt.c - the checkpoint protocol when a running job is
 * disrupted (DESIGN §5).
 *
 * A pod of a running gang is evicted (kubectl drain, the Eviction API),
 * deleted, or lost with its node: jobs.c tears the gang down (phase
 * Preempting) by deleting the other pods with their grace period, which
 * for a job with spec.checkpoint is checkpoint.gracePeriodSeconds
 * (podspec.h), so every replica gets SIGTERM and the time to checkpoint.
 * This file tells the story and keeps the checkpoint:
 *   - the cause (the pod's DisruptionTarget reason: EvictionByEvictionAPI,
 *     DeletionByTaintManager, DeletionByPodGC, ...; "Deleted" for a plain
 *     delete) goes into the Disrupted event, the Preempted condition and
 *     gpuq_preemptions_total;
 *   - the location a replica writes to its termination message
 *     ("checkpoint=<location>", one line) becomes status.lastCheckpoint.
 *     The gang's checkpoint is the one replica 0 writes: rank 0 saves
 *     checkpoints in PyTorch's convention, and a job whose ranks save
 *     shards writes the location from rank 0 once they are all saved.
 *     A replica that exits 0 after that SIGTERM has checkpointed; it has
 *     not succeeded (jobs.c counts it as disrupted);
 *   - once every pod is gone the job is requeued at its original place
 *     (jobs.c) and the next attempt gets GPUQ_RESUME_FROM = lastCheckpoint;
 *     if this attempt wrote no checkpoint in time, the previous one stands
 *     and the NoCheckpoint event says so.
 */
#include "controller/ctl_int.h"

#include "decide/match.h"
#include "decide/names.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "controller/podspec.h"
#include "decide/preempt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct gq_lc lc = {"controller", "disrupt", NULL};

#define CKPT_PREFIX "checkpoint="
#define CKPT_MAX 4096 /* a termination message is at most 4096 bytes */

void disrupt_init(struct ctl *c)
{
  static const char *const rs[] = {"reason"};
  static const char *const tm[] = {"team"};
  static const double ck_buckets[] = {1, 5, 10, 30, 60, 120, 300, 600, 1800,
                                      3600};

  c->m_preemptions = gq_metrics_counter(c->metrics, "gpuq_preemptions_total",
      "Disruptions of running jobs (drain, eviction, node removal, priority "
      "preemption, quota reclaim), by reason.", 1, rs);
  c->m_ckpt_duration = gq_metrics_histogram(c->metrics,
      "gpuq_checkpoint_duration_seconds", "Time from the start of a "
      "disruption to the checkpoint location read from replica 0's "
      "termination message (virtual seconds).", 0, NULL, ck_buckets,
      sizeof(ck_buckets) / sizeof(ck_buckets[0]));
  c->m_lost_gpu_s = gq_metrics_counter(c->metrics,
      "gpuq_preemption_lost_gpu_seconds_total", "GPU-seconds of work lost "
      "to disruptions: work after the checkpoint the next attempt resumes "
      "from (virtual seconds).", 1, tm);
  c->m_resumes = gq_metrics_counter(c->metrics,
      "gpuq_checkpoint_resumes_total", "Attempts started from a checkpoint "
      "(GPUQ_RESUME_FROM set).", 1, tm);
}

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

static const char *label(const json_t *md, const char *k)
{
  return json_string_value(json_object_get(json_object_get(md, "labels"), k));
}

/* Why the pod was told to stop: its DisruptionTarget reason (a kubelet's
 * eviction sets only the condition), "Deleted" for a deletionTimestamp
 * alone, or NULL when it was not. */
static const char *stop_reason(const json_t *pod)
{
  const json_t *conds = json_object_get(json_object_get(pod, "status"),
                                        "conditions"), *e;
  size_t i;

  json_array_foreach(conds, i, e) {
    if (!strcmp(json_string_value(json_object_get(e, "type")) ?: "",
                "DisruptionTarget") &&
        !strcmp(json_string_value(json_object_get(e, "status")) ?: "", "True")) {
      const char *r = json_string_value(json_object_get(e, "reason"));

      return r && *r ? r : "Disrupted";
    }
  }
  if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
    return "Deleted";
  return NULL;
}

/* The first stop seen of a pod of cj's running attempt is its cause (the
 * pod may be gone before the reconcile looks). */
static void note_cause(struct cjob *cj, const json_t *pod, const char *why)
{
  char msg[512];
  const char *name = json_string_value(json_object_get(
      json_object_get(pod, "metadata"), "name"));
  const json_t *g = json_object_get(json_object_get(pod, "metadata"),
                                    "deletionGracePeriodSeconds");

  /* an eviction's deletion (and its grace) follows its DisruptionTarget;
   * gpuq's own deletions of the peers carry no DisruptionTarget */
  if (cj->cause && cj->cause_grace_s < 0 && json_is_integer(g) &&
      strcmp(why, "Deleted"))
    cj->cause_grace_s = json_integer_value(g);
  if (cj->state != CJ_ACTIVE || cj->cause)
    return;
  if (!strcmp(why, "Deleted"))
    snprintf(msg, sizeof(msg), "pod %s was deleted", name ? name : "");
  else
    snprintf(msg, sizeof(msg), "pod %s is being stopped (DisruptionTarget: "
             "%s)", name ? name : "", why);
  disrupt_cause(cj, why, msg);
  cj->cause_grace_s = json_is_integer(g) ? json_integer_value(g) : -1;
}

void disrupt_pod_seen(struct ctl *c, struct cjob *cj, const json_t *pod)
{
  const json_t *md = json_object_get(pod, "metadata");
  const json_t *cs = json_object_get(json_object_get(pod, "status"),
                                     "containerStatuses"), *e;
  const char *a = label(md, GQ_LBL_ATTEMPT), *r = label(md, GQ_LBL_REPLICA);
  char loc[CKPT_MAX], attempt[32];
  int64_t at = 0, now = gq_clock_now_ms();
  size_t i;
  int found = 0;

  const char *why = stop_reason(pod);

  snprintf(attempt, sizeof(attempt), "%lld", (long long)cj->attempt);
  if (!a || !r || strcmp(a, attempt) || !why)
    return;
  note_cause(cj, pod, why);
  if (strcmp(r, "0"))
    return;
  json_array_foreach(cs, i, e) {
    const json_t *t = json_object_get(json_object_get(e, "state"),
                                      "terminated");
    const char *msg = json_string_value(json_object_get(t, "message"));

    if (msg && ckpt_line(msg, loc, sizeof(loc))) {
      const char *fin = json_string_value(json_object_get(t, "finishedAt"));

      if (!fin || gq_time_parse(fin, &at) != 0)
        at = now;
      found = 1;
      break;
    }
  }
  if (!found || (cj->ckpt_attempt == cj->attempt && cj->ckpt &&
                 !strcmp(cj->ckpt, loc)))
    return;
  free(cj->ckpt);
  cj->ckpt = gq_xstrdup(loc);
  cj->ckpt_ms = at;
  cj->ckpt_attempt = cj->attempt;
  if (cj->td_ms && at >= cj->td_ms)
    gq_metric_observe(c->m_ckpt_duration, NULL,
                      (double)(at - cj->td_ms) / 1000.0);
  GQ_LOG(GQ_INFO, &lc, "job %s attempt %lld: checkpoint %s", cj->key,
         (long long)cj->attempt, loc);
  status_event(c, cj, "Normal", "Checkpointed", "attempt %lld wrote "
               "checkpoint %s", (long long)cj->attempt, loc);
  status_flush(c, cj);
}

void disrupt_cause(struct cjob *cj, const char *cause, const char *msg)
{
  gq_intern_release(cj->cause);
  cj->cause = gq_intern(cause);
  free(cj->cause_msg);
  cj->cause_msg = gq_xstrdup(msg);
}

void disrupt_describe(struct ctl *c, struct cjob *cj, char *why, size_t len)
{
  if (cj->cause && cj->cause_msg) { /* seen on the pod's event */
    snprintf(why, len, "%s", cj->cause_msg);
    return;
  }
  for (size_t i = 0; i < cj->n_pods; i++) {
    const struct gq_pod *p = gq_informer_typed(c->inf_pods, cj->pods[i]);
    const char *a = p ? gq_meta_label(&p->meta, GQ_LBL_ATTEMPT) : NULL;
    char attempt[32];

    snprintf(attempt, sizeof(attempt), "%lld", (long long)cj->attempt);
    if (!a || strcmp(a, attempt))
      continue;
    cj->cause_grace_s = p->meta.deletion_grace_s;
    if (p->disruption) {
      snprintf(why, len, "pod %s is being stopped (DisruptionTarget: %s)",
               p->meta.name, *p->disruption ? p->disruption : "no reason");
      disrupt_cause(cj, *p->disruption ? p->disruption : "Disrupted", why);
      return;
    }
    if (p->meta.deletion_ms) {
      snprintf(why, len, "pod %s was deleted", p->meta.name);
      disrupt_cause(cj, "Deleted", why);
      return;
    }
  }
  cj->cause_grace_s = -1;
  snprintf(why, len, "a pod of the gang is missing");
  disrupt_cause(cj, "PodMissing", why);
}

void disrupt_unlist(struct ctl *c, struct cjob *cj)
{
  for (size_t i = 0; i < c->n_draining; i++)
    if (c->draining[i] == cj) {
      c->draining[i] = c->draining[--c->n_draining];
      return;
    }
}

void disrupt_begin(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j)
{
  /* listed: while its pods go, capacity that frees is held for it if it
   * is the best waiting job of its team (admit.c) */
  disrupt_unlist(c, cj);
  c->draining = gq_xrealloc(c->draining, (c->n_draining + 1) *
                                             sizeof(*c->draining));
  c->draining[c->n_draining++] = cj;
  cj->td_ms = gq_clock_now_ms();
  cj->preempted = 1;
  if (!cj->cause)
    disrupt_cause(cj, "Disrupted", "the job was disrupted");
  if (j && j->has_checkpoint)
    status_event(c, cj, "Normal", "Checkpointing", "attempt %lld: its running "
                 "replicas are deleted with their %llds grace period "
                 "(checkpoint.gracePeriodSeconds) to write their checkpoint; "
                 "its GPUs stay held until its pods are gone",
                 (long long)cj->attempt, (long long)j->grace_s);
}

void disrupt_done(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j)
{
  const char *cause = cj->cause ? cj->cause : "Disrupted";
  const char *l[] = {cause};
  const char *t[] = {cj->team};
  int wrote = cj->ckpt && cj->ckpt_attempt == cj->attempt;
  int64_t lost = 0;

  disrupt_unlist(c, cj);
  gq_metric_add(c->m_preemptions, l, 1);
  /* the next attempt resumes from the checkpoint: with one written at this
   * SIGTERM nothing is lost, else everything since this attempt started */
  if (!wrote && cj->td_ms)
    lost = gq_preempt_at_risk(cj->td_ms, cj->start_ms, 0, -1, cj->gpus);
  if (lost > 0)
    gq_metric_add(c->m_lost_gpu_s, t, (double)lost);
  cj->td_ms = 0;
  if (wrote)
    status_set(cj, "Requeued", "attempt %lld was disrupted (%s); requeued at "
               "its original place, resumes from checkpoint %s",
               (long long)cj->attempt, cause, cj->ckpt);
  else if (cj->ckpt)
    status_set(cj, "Requeued", "attempt %lld was disrupted (%s) and wrote no "
               "checkpoint; requeued at its original place, resumes from the "
               "previous checkpoint %s", (long long)cj->attempt, cause,
               cj->ckpt);
  else
    status_set(cj, "Requeued", "attempt %lld was disrupted (%s); requeued at "
               "its original place%s", (long long)cj->attempt, cause,
               j && j->has_checkpoint ? ", starts over (no checkpoint yet)"
                                      : "");
  if (j && j->has_checkpoint && !wrote) {
    char grace[96];

    if (cj->cause_grace_s >= 0 && cj->cause_grace_s != j->grace_s)
      snprintf(grace, sizeof(grace), "the %llds grace period it was given "
               "(checkpoint.gracePeriodSeconds: %llds)",
               (long long)cj->cause_grace_s, (long long)j->grace_s);
    else
      snprintf(grace, sizeof(grace), "its %llds grace period",
               (long long)j->grace_s);
    if (cj->ckpt)
      status_event(c, cj, "Warning", "NoCheckpoint", "attempt %lld wrote no "
                   "checkpoint within %s: the next attempt resumes from the "
                   "previous checkpoint %s", (long long)cj->attempt, grace,
                   cj->ckpt);
    else
      status_event(c, cj, "Warning", "NoCheckpoint", "attempt %lld wrote no "
                   "checkpoint within %s and there is no earlier one: the "
                   "next attempt starts over", (long long)cj->attempt, grace);
  }
}

void disrupt_resume(struct ctl *c, struct cjob *cj)
{
  const struct gq_gpujob *j = ctl_job_spec(c, cj);
  const char *t[] = {cj->team};

  cj->preempted = 0;
  gq_intern_release(cj->cause);
  cj->cause = NULL;
  /* a restarted controller creating the missing pods of a published
   * attempt again (jobs.c resume_creates) has said so already */
  if (!cj->ckpt || (j && j->status.attempts >= cj->attempt))
    return;
  gq_metric_add(c->m_resumes, t, 1);
  status_event(c, cj, "Normal", "Resuming", "attempt %lld starts from "
               "checkpoint %s (GPUQ_RESUME_FROM)", (long long)cj->attempt,
               cj->ckpt);
}

void disrupt_victim_done(struct ctl *c, struct cjob *cj)
{
  struct cjob *by = cj->preemptor ? ctl_job(c, cj->preemptor) : NULL;

  if (by && by->victims_left > 0) {
    by->victims_left--;
    ctl_schedule_pass(c);
  }
  free(cj->preemptor);
  cj->preemptor = NULL;
}

/* ---- node-removal taints ------------------------------------------- */

int gq_ctl_check_taints(const char *list, char *err, size_t len)
{
  const char *p = list;

  while (p && *p) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);

    char key[320];

    snprintf(key, sizeof(key), "%.*s", (int)(n < sizeof(key) ? n : 0), p);
    if (n == 0 || n >= sizeof(key) || !gq_qualified_name_ok(key)) {
      snprintf(err, len, "--drain-taints: '%.*s' is not a taint key (a "
               "qualified name such as ToBeDeletedByClusterAutoscaler or "
               "karpenter.sh/disrupted)", (int)n, p);
      return GQ_EINVAL;
    }
    p = comma ? comma + 1 : NULL;
  }
  return 0;
}

/* 1 if key is in the comma-separated list. */
static int listed(const char *list, const char *key)
{
  size_t k = strlen(key);

  for (const char *p = list; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);

    if (n == k && !strncmp(p, key, n))
      return 1;
    p = comma ? comma + 1 : NULL;
  }
  return 0;
}

void disrupt_node(struct ctl *c, const struct gq_node *n)
{
  const struct gq_taint *removal = NULL;
  struct gq_cap_pod *r, *rt;
  int noexec = 0;

  for (size_t i = 0; i < n->n_taints; i++) {
    if (!removal && listed(c->o.drain_taints, n->taints[i].key))
      removal = &n->taints[i];
    noexec |= !strcmp(n->taints[i].effect ?: "", "NoExecute");
  }
  if (!removal && !noexec)
    return; /* the common case: nothing to look at */
  HASH_ITER(hh, c->cap.held, r, rt) {
    struct cjob *cj = r->job_uid ? ctl_job(c, r->job_uid) : NULL;
    const struct gq_pod *p;
    const struct gq_taint *t = removal;
    char why[512];

    if (!cj || cj->state != CJ_ACTIVE || strcmp(r->node, n->meta.name))
      continue;
    if (!t && (p = gq_informer_typed(c->inf_pods, r->key)))
      t = gq_untolerated_taint(&p->sched, n, 1);
    if (!t)
      continue;
    snprintf(why, sizeof(why), "node %s is being removed (taint %s%s%s:%s)",
             n->meta.name, t->key, *t->value ? "=" : "", t->value,
             t->effect ? t->effect : "");
    jobs_preempt(c, cj, NULL, "NodeRemoval", why);
  }
}

/* ---- drainPolicy Wait ------------------------------------------------ */

static void pdb_done(int rc, const struct gq_k8s_status *st,
                     const json_t *obj, void *arg)
{
  struct ctl *c = arg;

  (void)obj;
  ctl_write_end(c);
  if (rc != 0 && rc != GQ_EEXIST && rc != GQ_ENOTFOUND)
    ctl_api_error(c, "write", "poddisruptionbudget", rc, st);
}

void disrupt_pdb(struct ctl *c, struct cjob *cj, int create)
{
  const struct gq_gpujob *j = ctl_job_spec(c, cj);
  char path[512], name[64];
  int rc;

  if (!j) /* gone: the owner reference takes the budget with it */
    return;
  gq_podspec_service_name(j, name, sizeof(name));
  ctl_write_begin(c);
  if (create) {
    json_t *pdb = gq_podspec_pdb(j);

    snprintf(path, sizeof(path), "/apis/policy/v1/namespaces/%s/"
             "poddisruptionbudgets", cj->ns);
    rc = gq_kclient_create(c->kc, path, pdb, pdb_done, c);
    json_decref(pdb);
  } else {
    snprintf(path, sizeof(path), "/apis/policy/v1/namespaces/%s/"
             "poddisruptionbudgets/%s", cj->ns, name);
    rc = gq_kclient_delete(c->kc, path, -1, NULL, pdb_done, c);
  }
  if (rc != 0)
    ctl_write_end(c);
  else
    cj->pdb = create;
}

int disrupt_wait_tick(struct ctl *c, struct cjob *cj,
                      const struct gq_gpujob *j, int64_t now_ms,
                      int64_t *next_ms)
{
  const char *cordoned = NULL;
  int64_t at;
  char why[512];

  if (j->drain == GQ_DRAIN_WAIT && !cj->pdb) /* after a restart, too */
    disrupt_pdb(c, cj, 1);
  if (j->drain != GQ_DRAIN_WAIT || !cj->running || !cj->nodes) {
    cj->cordon_ms = 0;
    return 0;
  }
  for (int32_t r = 0; r < cj->replicas && !cordoned; r++) {
    const struct gq_node *n = gq_informer_typed(c->inf_nodes, cj->nodes[r]);

    if (n && n->unschedulable)
      cordoned = cj->nodes[r];
  }
  if (!cordoned) {
    cj->cordon_ms = 0;
    return 0;
  }
  if (!cj->cordon_ms) {
    cj->cordon_ms = now_ms;
    status_event(c, cj, "Normal", "DrainWaiting", "node %s is cordoned: "
                 "drainPolicy Wait keeps the job running (its "
                 "PodDisruptionBudget refuses evictions) for at most %llds, "
                 "then checkpoints it", cordoned,
                 (long long)c->o.drain_wait_s);
  }
  at = cj->cordon_ms + c->o.drain_wait_s * 1000;
  if (at > now_ms) {
    if (*next_ms < 0 || at < *next_ms)
      *next_ms = at;
    return 0;
  }
  snprintf(why, sizeof(why), "node %s has been cordoned for %llds "
           "(drainPolicy Wait, at most --drain-wait)", cordoned,
           (long long)c->o.drain_wait_s);
  cj->cordon_ms = 0;
  jobs_preempt(c, cj, NULL, "DrainTimeout", why);
  return 1;
}

/* ---- dead nodes ------------------------------------------------------ */

static void force_done(int rc, const struct gq_k8s_status *st,
                       const json_t *obj, void *arg)
{
  struct ctl *c = arg;

  (void)obj;
  ctl_write_end(c);
  if (rc != 0 && rc != GQ_ENOTFOUND)
    ctl_api_error(c, "delete", "pod", rc, st);
}

/* When node n's Ready condition last changed, if it is not True (virtual
 * ms; 0 if unknown). */
static int64_t notready_since(const struct gq_node *n)
{
  const json_t *conds = json_object_get(json_object_get(n->json, "status"),
                                        "conditions"), *e;
  size_t i;
  int64_t at = 0;

  json_array_foreach(conds, i, e) {
    const char *ts = json_string_value(json_object_get(e,
                                                       "lastTransitionTime"));

    if (!strcmp(json_string_value(json_object_get(e, "type")) ?: "", "Ready")
        && ts && gq_time_parse(ts, &at) != 0)
      at = 0;
  }
  return at;
}

void disrupt_force_tick(struct ctl *c, int64_t now_ms, int64_t *next_ms)
{
  struct gq_cap_pod *r, *rt;

  HASH_ITER(hh, c->cap.held, r, rt) {
    const struct gq_node *n;
    struct cjob *cj;
    const char *slash;
    int64_t since, at;
    char path[700];

    if (!r->deletion_ms || !r->job_uid || r->forced ||
        !(n = gq_informer_typed(c->inf_nodes, r->node)) || n->ready)
      continue;
    since = notready_since(n);
    at = (since ? since : r->deletion_ms) + c->o.notready_timeout_s * 1000;
    if (at > now_ms) {
      if (*next_ms < 0 || at < *next_ms)
        *next_ms = at;
      continue;
    }
    slash = strchr(r->key, '/');
    if (!slash)
      continue;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%.*s/pods/%s",
             (int)(slash - r->key), r->key, slash + 1);
    ctl_write_begin(c);
    if (gq_kclient_delete(c->kc, path, 0, NULL, force_done, c) != 0) {
      ctl_write_end(c);
      continue;
    }
    r->forced = 1;
    GQ_LOG(GQ_WARN, &lc, "pod %s: node %s NotReady for more than %llds: "
           "force-deleting it", r->key, r->node,
           (long long)c->o.notready_timeout_s);
    if ((cj = ctl_job(c, r->job_uid)))
      status_event(c, cj, "Warning", "ForceDeleted", "pod %s was "
                   "terminating on node %s, NotReady for more than %llds "
                   "(--notready-timeout): force-deleted so that the job can "
                   "move on; if the node is only partitioned, that replica "
                   "may still be running", slash + 1, r->node,
                   (long long)c->o.notready_timeout_s);
  }
}

void disrupt_forget(struct cjob *cj)
{
  free(cj->ckpt);
  free(cj->cause_msg);
  free(cj->preemptor);
  gq_intern_release(cj->cause);
  cj->ckpt = cj->cause_msg = cj->preemptor = NULL;
  cj->cause = NULL;
}
