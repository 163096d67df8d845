/* controller/store.c - the controller's records and their lookups: jobs by
 * uid, teams and their queues (in memory, in Redis's order), cohorts,
 * interned names, admitted use per team, the admitted-jobs list, and the
 * pods an admission assumes (decide/capacity.h). No I/O: Redis and
 * the API are told by the files above (jobs.c, admit.c). */
#include "controller/ctl_int.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "decide/place.h"
#include "controller/podspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct gq_lc lc = {"controller", "store", NULL};

struct cjob *ctl_job(struct ctl *c, const char *uid)
{
  struct cjob *cj;

  HASH_FIND_STR(c->jobs, uid, cj);
  return cj;
}


void ctl_active(struct ctl *c, struct cjob *cj)
{
  cj->state = CJ_ACTIVE;
  if (!cj->act_prev)
    DL_APPEND2(c->active, cj, act_prev, act_next);
}

void ctl_active_del(struct ctl *c, struct cjob *cj)
{
  if (!cj->act_prev)
    return;
  DL_DELETE2(c->active, cj, act_prev, act_next);
  cj->act_prev = cj->act_next = NULL;
}


struct cjob *ctl_job_new(struct ctl *c, const char *uid, const char *ns,
                         const char *name)
{
  size_t lns = strlen(ns), lname = strlen(name), luid = strlen(uid);
  struct cjob *cj = gq_xcalloc(1, sizeof(*cj));
  char *b = gq_xmalloc(2 * (lns + lname + 2) + luid + 1);

  /* "ns/name\0ns\0name\0uid\0" */
  cj->key = b;
  memcpy(b, ns, lns);
  b[lns] = '/';
  memcpy(b + lns + 1, name, lname + 1);
  b += lns + lname + 2;
  cj->ns = memcpy(b, ns, lns + 1);
  b += lns + 1;
  cj->name = memcpy(b, name, lname + 1);
  b += lname + 1;
  cj->uid = memcpy(b, uid, luid + 1);
  cj->team = cj->cohort = cj->flavor = cj->reason = "";
  cj->eta_ms = -1;
  cj->expected_s = cj->deadline_s = cj->startup_s = -1;
  HASH_ADD_KEYPTR(hh, c->jobs, cj->uid, luid, cj);
  return cj;
}

const struct gq_gpujob *ctl_job_obj(struct ctl *c, const struct cjob *cj)
{
  const struct gq_gpujob *j = gq_informer_typed(c->inf_jobs, cj->key);

  return j && !strcmp(j->meta.uid, cj->uid) ? j : NULL;
}

const struct gq_gpujob *ctl_job_spec(struct ctl *c, const struct cjob *cj)
{
  const struct gq_gpujob *j = ctl_job_obj(c, cj);

  return j && !j->invalid ? j : NULL;
}

const char *ctl_intern(struct ctl *c, const char *s)
{
  struct cstr *e;
  size_t n;

  if (!*s)
    return "";
  HASH_FIND_STR(c->strs, s, e);
  if (!e) {
    n = strlen(s);
    e = gq_xmalloc(sizeof(*e) + n + 1);
    memset(e, 0, sizeof(*e));
    memcpy(e->s, s, n + 1);
    HASH_ADD_KEYPTR(hh, c->strs, e->s, n, e);
  }
  return e->s;
}

const struct gq_teamquota *ctl_quota(struct ctl *c, const char *team)
{
  return gq_informer_typed(c->inf_quotas, team);
}

struct cteam *ctl_team(struct ctl *c, const char *name)
{
  struct cteam *t;

  HASH_FIND_STR(c->teams, name, t);
  if (!t) {
    t = gq_xcalloc(1, sizeof(*t));
    t->name = gq_xstrdup(name);
    HASH_ADD_KEYPTR(hh, c->teams, t->name, strlen(t->name), t);
  }
  return t;
}

/* The cohort record of a team: its cohort, or "~team" when it has none
 * (the tag queue/queue.h uses). */
struct ccohort *ctl_cohort(struct ctl *c, const char *team_cohort,
                           const char *team)
{
  char name[300];
  struct ccohort *k;

  if (team_cohort && *team_cohort)
    snprintf(name, sizeof(name), "%s", team_cohort);
  else
    snprintf(name, sizeof(name), "~%s", team);
  HASH_FIND_STR(c->cohorts, name, k);
  if (!k) {
    k = gq_xcalloc(1, sizeof(*k));
    k->name = gq_xstrdup(name);
    snprintf(k->redis_cohort, sizeof(k->redis_cohort), "%s",
             team_cohort ? team_cohort : "");
    HASH_ADD_KEYPTR(hh, c->cohorts, k->name, strlen(k->name), k);
  }
  return k;
}

int ctl_acting(const struct ctl *c)
{
  return c->synced && !c->stopping && (c->leading || !c->o.leader_elect);
}

void ctl_write_begin(struct ctl *c)
{
  c->inflight++;
}

void ctl_write_end(struct ctl *c)
{
  if (c->inflight)
    c->inflight--;
}

void ctl_api_error(struct ctl *c, const char *verb, const char *what, int rc,
                   const struct gq_k8s_status *st)
{
  static struct gq_log_limit lim = {.interval_ms = 1000};
  const char *labels[] = {verb};

  gq_metric_add(c->m_api_errors, labels, 1);
  GQ_LOG_LIMITED(&lim, GQ_WARN, &lc, "%s %s: %s (%d %s)", verb, what,
                 gq_strerror(rc), st ? st->code : 0,
                 st && *st->message ? st->message : "");
}


/* Queue order: priority (high first), attained-service level (low
 * first; 0 under fifo-backfill), queue time (early first), uid (DESIGN
 * §4, decide/las.h; without levels, queue/queue.h's member order). */
static int before(const struct cjob *a, const struct cjob *b)
{
  return gq_qorder_before(
      &(struct gq_qorder){a->priority, a->level, a->queued_ms, a->uid},
      &(struct gq_qorder){b->priority, b->level, b->queued_ms, b->uid});
}


/* Inserts cj into its team's in-memory queue at its place (no-op when it
 * is queued already); Redis is told by the caller (jobs_queue_add). */
void store_queue_insert(struct ctl *c, struct cjob *cj)
{
  struct cteam *t = ctl_team(c, cj->team);
  size_t lo = 0, hi = t->n;

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
}

static int before_cmp(const void *x, const void *y)
{
  const struct cjob *a = *(struct cjob *const *)x, *b = *(struct cjob *const *)y;

  return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

void store_queue_sort(struct cteam *t)
{
  if (t->n > 1)
    qsort(t->q, t->n, sizeof(*t->q), before_cmp);
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


/* Counts one admitted job more (sign 1) or less (-1) at priority prio in
 * t->adm_prio; an entry that reaches 0 is dropped. */
void store_prio_count(struct cteam *t, int32_t prio, int sign)
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
  if (sign > 0) {
    const struct gq_gpujob *j = ctl_job_spec(c, cj);

    cj->adm_prio = cj->priority;
    cj->adm_ckpt = j && j->has_checkpoint && !cj->drain_wait;
  }
  store_prio_count(t, cj->adm_prio, sign);
  if (cj->adm_ckpt)
    t->adm_ckpt += sign;
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


/* Assumes the pods of cj's current attempt on cj->nodes in the capacity
 * snapshot (client-go's scheduler "assume"), until the pod informer shows
 * them or their creation fails. */
void jobs_replica_key(const struct cjob *cj, const struct gq_gpujob *j,
                      int64_t attempt, int32_t r, char *key, size_t len)
{
  char name[GQ_POD_NAME_MAX + 1];

  if ((j->wl_kind == GQ_WL_POD || j->wl_kind == GQ_WL_POD_GROUP) &&
      (size_t)r < j->n_wl_pods) {
    snprintf(key, len, "%s/%s", cj->ns, j->wl_pods[r]);
  } else if (j->wl_kind == GQ_WL_JOB) {
    snprintf(key, len, "%s/~%s-%lld-%d", cj->ns, j->meta.name,
             (long long)attempt, (int)r);
  } else {
    gq_podspec_pod_name(j, attempt, r, name, sizeof(name));
    snprintf(key, len, "%s/%s", cj->ns, name);
  }
}

void jobs_assume(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j)
{
  char key[600];
  struct gq_podsched req;

  gq_place_replica_request(j, &req);
  for (int32_t r = 0; r < cj->replicas; r++) {
    jobs_replica_key(cj, j, cj->attempt, r, key, sizeof(key));
    gq_capacity_assume(&c->cap, key, cj->nodes[r], &req);
  }
  gq_place_replica_release(&req);
}

/* Drops what jobs_assume() assumed (an admission that did not happen).
 * j is NULL when the GpuJob is gone: the pod names then come from cj's
 * name and uid, as jobs_assume() took them from j (a stand-in's
 * assumptions then stay until its pods' next events). */
void jobs_unassume(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j)
{
  char key[600];
  struct gq_gpujob gone;

  if (!j) {
    memset(&gone, 0, sizeof(gone));
    gone.meta.name = cj->name;
    gone.meta.uid = cj->uid;
    j = &gone;
  }
  for (int32_t r = 0; r < cj->replicas; r++) {
    jobs_replica_key(cj, j, cj->attempt, r, key, sizeof(key));
    gq_capacity_unassume(&c->cap, key);
  }
}

void store_unreserve(struct ctl *c, struct cjob *cj)
{
  size_t i;

  if (!cj->resv_nodes)
    return;
  for (char **n = cj->resv_nodes; *n; n++)
    free(*n);
  free(cj->resv_nodes);
  cj->resv_nodes = NULL;
  for (i = 0; i < c->n_preemptors && c->preemptors[i] != cj; i++)
    ;
  if (i < c->n_preemptors)
    c->preemptors[i] = c->preemptors[--c->n_preemptors];
}

/* Capacity freed: a refill latency clock starts (the oldest unanswered
 * free is the one the next create answers; when the ring is full the
 * newest are not remembered). */
void store_freed(struct ctl *c)
{
  if (c->frees_n < CTL_FREES_MAX)
    c->frees[(c->frees_head + c->frees_n++) % CTL_FREES_MAX] =
        gq_clock_mono_ms();
}

void ctl_refilled(struct ctl *c)
{
  if (!c->frees_n)
    return;
  gq_metric_observe(c->m_freed_to_create, NULL,
                    (double)(gq_clock_mono_ms() - c->frees[c->frees_head]) /
                        1000.0);
  c->frees_head = (c->frees_head + 1) % CTL_FREES_MAX;
  c->frees_n--;
}
