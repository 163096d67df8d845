/* controller/disrupt.c - the acts of the checkpoint protocol when a
 * running job is disrupted (DESIGN §5); decide/lifecycle.c decides.
 *
 * A pod of a running gang is evicted (kubectl drain, the Eviction API),
 * deleted, or lost with its node: the lifecycle tears the gang down (phase
 * Preempting) by deleting the other pods with their grace period, which
 * for a job with spec.checkpoint is checkpoint.gracePeriodSeconds
 * (podspec.h), so every replica gets SIGTERM and the time to checkpoint.
 * The story it tells:
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
 *     not succeeded (the lifecycle counts it as disrupted);
 *   - once every pod is gone the job is requeued at its original place
 *     and the next attempt gets GPUQ_RESUME_FROM = lastCheckpoint; if this
 *     attempt wrote no checkpoint in time, the previous one stands and the
 *     NoCheckpoint event says so.
 * This file reads pod events for it (disrupt_podev), keeps the cause, the
 * checkpoint and the list of jobs in Preempting, counts the metrics, and
 * acts on its own: node-removal taints (disrupt_node, through
 * jobs_preempt), PodDisruptionBudgets, force-deletes on dead nodes.
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

void disrupt_podev(const struct gq_pod *p, struct gq_life_podev *ev,
                   struct gq_life_term *buf, size_t n)
{
  struct gq_life_term *terms = buf;

  memset(ev, 0, sizeof(*ev));
  ev->name = p->meta.name;
  ev->attempt = gq_meta_label(&p->meta, GQ_LBL_ATTEMPT);
  ev->replica = gq_meta_label(&p->meta, GQ_LBL_REPLICA);
  ev->disruption = p->disruption;
  ev->deleting = p->meta.deletion_ms != 0;
  ev->has_grace = p->meta.deletion_grace_s >= 0;
  ev->grace_s = p->meta.deletion_grace_s;
  if (p->n_terminated > n)
    terms = gq_xcalloc(p->n_terminated, sizeof(*terms));
  for (size_t i = 0; i < p->n_terminated; i++) {
    terms[i].msg = p->terminated[i].message;
    terms[i].finished_ms = p->terminated[i].finished_ms
                               ? p->terminated[i].finished_ms
                               : -1; /* absent or unparseable */
  }
  ev->terms = terms;
  ev->n_terms = p->n_terminated;
}

void disrupt_cause(struct cjob *cj, const char *cause, const char *msg)
{
  gq_intern_release(cj->cause);
  cj->cause = NULL;
  if (!cause)
    return;
  cj->cause = gq_intern(cause);
  free(cj->cause_msg);
  cj->cause_msg = gq_xstrdup(msg);
}

void disrupt_ckpt(struct cjob *cj, const char *loc, int64_t at_ms,
                  int64_t attempt)
{
  char *copy = gq_xstrdup(loc); /* loc may be cj->ckpt's own text */

  free(cj->ckpt);
  cj->ckpt = copy;
  cj->ckpt_ms = at_ms;
  cj->ckpt_attempt = attempt;
}

void disrupt_unlist(struct ctl *c, struct cjob *cj)
{
  for (size_t i = 0; i < c->n_draining; i++)
    if (c->draining[i] == cj) {
      c->draining[i] = c->draining[--c->n_draining];
      return;
    }
}

void disrupt_list(struct ctl *c, struct cjob *cj)
{
  disrupt_unlist(c, cj);
  c->draining = gq_xrealloc(c->draining, (c->n_draining + 1) *
                                             sizeof(*c->draining));
  c->draining[c->n_draining++] = cj;
}

void disrupt_count(struct ctl *c, struct cjob *cj,
                   const struct gq_life_eff *e)
{
  const char *t[] = {cj->team};
  const char *l[] = {e->str};
  int64_t lost;

  switch (e->kind) {
  case GQ_LIFE_M_PREEMPTION:
    gq_metric_add(c->m_preemptions, l, 1);
    break;
  case GQ_LIFE_M_LOST: /* the work since the attempt started */
    lost = gq_preempt_at_risk(e->a, e->b, 0, -1, e->c);
    if (lost > 0)
      gq_metric_add(c->m_lost_gpu_s, t, (double)lost);
    break;
  case GQ_LIFE_M_RESUME:
    gq_metric_add(c->m_resumes, t, 1);
    break;
  case GQ_LIFE_M_CKPT:
    gq_metric_observe(c->m_ckpt_duration, NULL, (double)e->a / 1000.0);
    break;
  default:
    break;
  }
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
    at = gq_life_force_at(since, r->deletion_ms, c->o.notready_timeout_s);
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
