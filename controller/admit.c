/* controller/admit.c - the admission pass (DESIGN §4).
 *
 * Decide, then act. The pass builds a capacity snapshot from the cache
 * (nodes; every pod that holds resources, bound or pinned; pods gpuq has
 * assumed but not seen yet), then, per cohort, repeatedly takes the team
 * that goes first (queue/quota.c's gq_quota_order: within-nominal heads
 * first, then lowest weighted dominant share) and tries its head job with
 * controller/assign.c (quota line, then nodes for the whole gang). A head
 * that fits is admitted in this same pass, and the next head of its team
 * is tried: every job that fits is admitted in one pass, not one per team.
 *
 * A head that fits its quota but not the free capacity gets a forecast
 * (controller/forecast.c: where and when it will fit, from the expected
 * ends of running jobs), its status.estimatedStartTime. The first such
 * head of the cohort in the pass also gets a reservation: the capacity it
 * waits for is committed to the snapshot, so later jobs can only use it if
 * they are known to end before the reservation starts (EASY backfilling:
 * one reservation, see reserve()). A head refused by quota stops its team for
 * the pass (strict order within a team: a smaller job behind it does not
 * take the quota it waits for). At most BF_MAX jobs behind a blocked head
 * are tried per team and pass (Slurm's bf_max_job_test plays this role),
 * and a job whose placement shape already failed in this pass is not
 * placed again (capacity only shrinks within a pass).
 *
 * Acting: each admission is one admit script in Redis, conditional on the
 * cohort's ledger version; its pods are created when Redis says ok.
 *
 * --policy fifo replaces the decision with the plain baseline that
 * bench/replay compares gpuq with (decide_cohort_fifo).
 */
#include "controller/ctl_int.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "decide/forecast.h"
#include "decide/place.h"
#include "decide/preempt.h"
#include "decide/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BF_MAX 32           /* jobs tried behind a blocked head per team */
/* Reservations (forecasts) computed per pass, for the blocked heads of the
 * teams that go first: each costs a placement over every node and a sort
 * of every release (milliseconds at 2,000 nodes), and a pass must stay
 * well under the 10 ms gpuq allows from freed capacity to a pod create.
 * Fair-share order rotates the teams, so every blocked head gets its
 * reservation and ETA refreshed within a few passes. */
#define FORECASTS_MAX 4
#define TRIES_MAX 20000     /* placements tried per pass; then a new pass */
#define PREEMPT_MAX 2       /* victim searches per pass (each tries several
                               placements) */
/* Admissions per pass; then a new pass on the next loop turn, so that the
 * admit scripts and pod creates of the first ones go out (and the API
 * server works on them) while the rest are decided: filling 2,000 free
 * slots at once took 1.1 s of deciding before the first write left. */
#define ADMITS_MAX 100

static const struct gq_lc lc = {"controller", "admit", NULL};

struct resv { /* one replica of a reservation, committed to the snapshot */
  const char *node;
  struct gq_podsched req;
  const struct cjob *owner; /* a preemptor's (kept across passes), or NULL:
                               a forecast's (this pass only) */
  int committed;
};

struct pass {
  struct ctl *c;
  struct gq_snapshot *s; /* the controller's, kept up to date */
  struct gq_forecast_release *rel;
  size_t n_rel, cap_rel;
  int rel_built;
  struct resv *resv;
  size_t n_resv, cap_resv;
  int64_t resv_min; /* earliest reservation start, -1 none */
  int forecasts, tries, preempts, admits;
  int cohort_resv; /* the cohort being decided has its one reservation */
  uint64_t *failed; /* shapes that found no capacity (hash, team, bf) */
  size_t n_failed, cap_failed;
  int64_t now_ms;
  int blocked_capacity; /* some job waits for capacity */
};

static void add_rel(struct pass *p, const char *node,
                    const struct gq_podsched *req, int64_t end_ms)
{
  if (p->n_rel == p->cap_rel) {
    p->cap_rel = p->cap_rel ? 2 * p->cap_rel : 256;
    p->rel = gq_xrealloc(p->rel, p->cap_rel * sizeof(*p->rel));
  }
  p->rel[p->n_rel++] = (struct gq_forecast_release){node, req, end_ms};
}

/* ---- the capacity snapshot, kept between passes -------------------- */

struct collect {
  struct ctl *c;
  const struct gq_node **nodes;
  size_t n;
};

static void collect_node(const json_t *obj, void *typed, void *arg)
{
  struct collect *x = arg;

  if (typed)
    x->nodes[x->n++] = typed;
  status_node(x->c, obj, typed);
}

/* Rebuilds the snapshot from the nodes (after a node changed): every held
 * pod and assumption is counted on it again (decide/capacity.h). */
static void snapshot_rebuild(struct ctl *c)
{
  struct collect x = {c, NULL, 0};

  x.nodes = gq_xcalloc(gq_informer_size(c->inf_nodes) + 1, sizeof(*x.nodes));
  gq_informer_foreach(c->inf_nodes, collect_node, &x);
  gq_capacity_set_nodes(&c->cap, x.nodes, x.n);
  free(x.nodes);
}

void admit_free(struct ctl *c)
{
  free(c->preemptors); /* the jobs themselves free their reservations */
  c->preemptors = NULL;
  c->n_preemptors = 0;
  free(c->draining);
  c->draining = NULL;
  c->n_draining = 0;
}

/* The forecast's releases, built the first time a pass needs them: when
 * each holder is expected to free its requests. */
static void build_rel(struct pass *p)
{
  struct gq_cap_pod *r, *rt;
  struct gq_cap_assumed *a, *at;

  HASH_ITER(hh, p->c->cap.held, r, rt) {
    struct cjob *cj = r->job_uid ? ctl_job(p->c, r->job_uid) : NULL;

    if (!r->committed)
      continue;
    if (r->deletion_ms) { /* terminating: gone within its grace */
      add_rel(p, r->node, &r->req, r->deletion_ms + r->grace_s * 1000);
    } else if (cj && cj->expected_s >= 0) {
      int64_t from = cj->start_ms ? cj->start_ms : cj->admitted_ms;

      add_rel(p, r->node, &r->req, from ? from + cj->expected_s * 1000 : -1);
    } else {
      add_rel(p, r->node, &r->req, -1);
    }
  }
  HASH_ITER(hh, p->c->cap.assumed, a, at) add_rel(p, a->node, &a->req, -1);
  p->rel_built = 1;
}

/* Commits (sign 1) or uncommits (-1) the reservations of owner (NULL:
 * the forecasts'). */
static void toggle_owned(struct pass *p, const struct cjob *owner, int sign)
{
  for (size_t i = 0; i < p->n_resv; i++) {
    struct resv *rv = &p->resv[i];

    if (rv->owner != owner || rv->committed == (sign > 0))
      continue;
    gq_snapshot_commit(p->s, rv->node, &rv->req, sign);
    rv->committed = sign > 0;
  }
}

/* The forecasts' reservations: backfill may use them, never a
 * preemptor's. */
static void toggle_resv(struct pass *p, int sign)
{
  toggle_owned(p, NULL, sign);
}

static void resv_add(struct pass *p, const char *node,
                     const struct gq_gpujob *j, const struct cjob *owner)
{
  struct resv *rv;

  if (p->n_resv == p->cap_resv) {
    p->cap_resv = p->cap_resv ? 2 * p->cap_resv : 16;
    p->resv = gq_xrealloc(p->resv, p->cap_resv * sizeof(*p->resv));
  }
  rv = &p->resv[p->n_resv++];
  rv->node = node;
  rv->owner = owner;
  gq_place_replica_request(j, &rv->req);
  rv->committed = gq_snapshot_commit(p->s, node, &rv->req, 1) == 0;
}

/* Uncommits every reservation (at the end of a pass). */
static void resv_clear(struct pass *p)
{
  for (size_t i = 0; i < p->n_resv; i++) {
    if (p->resv[i].committed)
      gq_snapshot_commit(p->s, p->resv[i].node, &p->resv[i].req, -1);
    gq_place_replica_release(&p->resv[i].req);
  }
  p->n_resv = 0;
}

static int shape_failed(struct pass *p, uint64_t key)
{
  for (size_t i = 0; i < p->n_failed; i++)
    if (p->failed[i] == key)
      return 1;
  return 0;
}

static void shape_fail(struct pass *p, uint64_t key)
{
  if (p->n_failed == p->cap_failed) {
    p->cap_failed = p->cap_failed ? 2 * p->cap_failed : 64;
    p->failed = gq_xrealloc(p->failed, p->cap_failed * sizeof(*p->failed));
  }
  p->failed[p->n_failed++] = key;
}

/* ---- acting on a decision ------------------------------------------- */

struct admit_ctx {
  struct ctl *c;
  char *uid;
  char *event; /* the Admitted event's message */
  struct ccohort *k;
  int64_t attempt;
};

static void rollback(struct ctl *c, struct cjob *cj)
{
  const struct gq_gpujob *j = ctl_job_spec(c, cj);

  jobs_use(c, cj, -1);
  jobs_unassume(c, cj, j); /* j NULL: the job is gone, names from cj */
  for (int32_t i = 0; cj->nodes && i < cj->replicas; i++)
    free(cj->nodes[i]);
  free(cj->nodes);
  cj->nodes = NULL;
  cj->attempt--;
  cj->state = CJ_NEW;
  ctl_mark(c, cj); /* the next pass queues it again (jobs.c) */
}

static void admitted(int rc, const char *state, long long value, void *arg)
{
  struct admit_ctx *x = arg;
  struct ctl *c = x->c;
  struct cjob *cj = ctl_job(c, x->uid);
  int ok = rc == 0 && (!strcmp(state, "ok") || !strcmp(state, "dup"));

  ctl_write_end(c);
  if (x->k->inflight)
    x->k->inflight--;
  if (!x->k->inflight && !x->k->rebuilt)
    ctl_schedule_pass(c); /* the rebuild waited for this */
  if (rc == 0 && !strcmp(state, "ok"))
    x->k->ver = value;
  if (!ok) {
    const char *l[] = {"admit"};

    if (rc != 0)
      gq_metric_add(c->m_redis_errors, l, 1);
    else /* stale or missing: re-read the ledger (rebuild) and decide again */
      x->k->rebuilt = 0;
    GQ_LOG(GQ_DEBUG, &lc, "admit of %s refused: %s", x->uid,
           rc ? gq_strerror(rc) : state);
  }
  if (!cj || cj->state != CJ_ADMITTING || cj->attempt != x->attempt) {
    free(x->event);
    free(x->uid);
    free(x);
    return;
  }
  if (!ok) {
    rollback(c, cj);
    ctl_schedule_pass(c);
  } else {
    const char *l[] = {cj->team};

    /* the outcome: the reconcile it is marked for makes it active, tells
     * the Admitted event, adds the finalizer and creates its pods (decide/
     * lifecycle.c); until then it stays CJ_ADMITTING, its attempt not
     * published (status.c) */
    cj->create_pending = 1;
    cj->create_miss = 0;
    free(cj->adm_event);
    cj->adm_event = x->event;
    x->event = NULL;
    cj->phase = GQ_PHASE_ADMITTED;
    cj->admitted_ms = gq_clock_now_ms();
    cj->start_ms = 0;
    cj->eta_ms = -1;
    cj->running = 0;
    gq_metric_add(c->m_admissions, l, 1);
    gq_metric_observe(c->m_wait, l,
                      (double)(cj->admitted_ms - cj->queued_ms) / 1000.0);
    ctl_mark(c, cj);
  }
  free(x->event);
  free(x->uid);
  free(x);
}

/* Records the decision to admit cj on nodes out[] under assignment a, and
 * sends the admit script. */
static void decide_admit(struct pass *p, struct ccohort *k, struct cjob *cj,
                         const struct gq_gpujob *j,
                         const struct gq_assignment *a, const size_t *out)
{
  struct ctl *c = p->c;
  struct admit_ctx *x;
  struct gq_qjob qj;
  char nodes[512];
  size_t off = 0;
  int rc;

  /* what it takes is committed by jobs_assume() below */
  jobs_queue_del(c, cj);
  /* the attempt's shape is the spec it was decided on (an edit the
   * informer brought since the last reconcile included); it stays so
   * until the attempt ends (jobs.c, attempt_pinned) */
  cj->gpus = j->gpus;
  cj->replicas = j->replicas;
  cj->state = CJ_ADMITTING;
  cj->attempt++;
  cj->nodes = gq_xcalloc((size_t)j->replicas, sizeof(*cj->nodes));
  for (int32_t i = 0; i < j->replicas; i++) {
    int n;

    cj->nodes[i] = gq_xstrdup(p->s->nodes[out[i]].node->meta.name);
    n = snprintf(nodes + off, sizeof(nodes) - off, "%s%s", i ? "," : "",
                 cj->nodes[i]);
    if (n > 0 && (size_t)n < sizeof(nodes) - off)
      off += (size_t)n;
  }
  cj->flavor = ctl_intern(c, a->key);
  cj->pass_ms = gq_clock_mono_ms();
  jobs_use(c, cj, 1);
  jobs_assume(c, cj, j);
  status_set(cj, a->verdict == GQ_Q_FITS_BORROWING ? "AdmittedBorrowing"
                                                   : "Admitted",
             "admitted on %s (flavor %s%s)", nodes, a->flavor,
             a->verdict == GQ_Q_FITS_BORROWING ? ", borrowing" : "");
  x = gq_xcalloc(1, sizeof(*x));
  /* the event waits for Redis's yes: a refused admit is no admission */
  x->event = gq_xasprintf("attempt %lld admitted on %s (flavor %s%s)",
                          (long long)cj->attempt, nodes, a->flavor,
                          a->verdict == GQ_Q_FITS_BORROWING
                              ? ", borrowing idle cohort GPUs"
                              : "");
  x->c = c;
  x->uid = gq_xstrdup(cj->uid);
  x->k = k;
  x->attempt = cj->attempt;
  k->inflight++;
  ctl_write_begin(c);
  /* its member in Redis: the priority and first queue time it was queued
   * with (the script does not read the job hash) */
  qj = (struct gq_qjob){cj->uid, cj->team, cj->ns, cj->name, k->redis_cohort,
                        cj->qprio, cj->queued_ms};
  rc = gq_queue_admit(&c->q, &qj, (long)cj->attempt, cj->flavor, cj->gpus,
                      k->ver++, admitted, x);
  if (rc != 0)
    admitted(rc, "", 0, x);
}

/* ---- deciding, per cohort ------------------------------------------- */

struct cohort_pass {
  struct cteam **teams;
  const struct gq_teamquota **tq;
  struct gq_qteam *qt;
  size_t n;
  struct gq_ledger_use *use;
  size_t n_use, cap_use;
};

static void use_add(struct cohort_pass *cp, size_t team, const char *key,
                    int64_t gpus)
{
  for (size_t i = 0; i < cp->n_use; i++)
    if (cp->use[i].team == team && !strcmp(cp->use[i].flavor, key)) {
      cp->use[i].gpus += gpus;
      return;
    }
  if (cp->n_use == cp->cap_use) {
    cp->cap_use = cp->cap_use ? 2 * cp->cap_use : 16;
    cp->use = gq_xrealloc(cp->use, cp->cap_use * sizeof(*cp->use));
  }
  /* a copy: key may point into a team's use array, which jobs_use()
   * reallocates when an admission of this pass adds a flavor to it */
  cp->use[cp->n_use++] = (struct gq_ledger_use){team, gq_xstrdup(key), gpus};
}

/* ---- preemption (DESIGN §4, decide/preempt.h) ------------------ */

#define PREEMPT_RETRY_MS 2000 /* a fruitless victim search waits (real ms) */

/* At the start of a pass: the GPUs reserved for each preemptor still
 * waiting are committed, so that nobody else (its victims included) takes
 * the hole its victims leave (no thrashing); they stay reserved until it
 * is admitted, leaves the queue, or finds its victims gone and still does
 * not fit. */
static void preemptor_resv(struct pass *p)
{
  struct ctl *c = p->c;

  for (size_t i = 0; i < c->n_preemptors;) {
    struct cjob *cj = c->preemptors[i];
    const struct gq_gpujob *j = ctl_job_spec(c, cj);

    if (cj->state != CJ_QUEUED || !j) {
      store_unreserve(c, cj); /* moves the last one to i */
      continue;
    }
    for (char **n = cj->resv_nodes; *n; n++)
      resv_add(p, *n, j, cj);
    i++;
  }
}

struct pcand { /* a candidate victim and the pods that hold for it */
  struct cjob *cj;
  size_t team;
  const char **nodes;
  const struct gq_podsched **reqs;
  size_t n, cap;
  UT_hash_handle hh;
};

static void victim_why(struct cjob *v, struct cjob *by, int same, char *buf,
                       size_t len)
{
  if (same)
    snprintf(buf, len, "preempted for job %s (priority %d > %d) of the same "
             "team, which needs its GPUs", by->key, (int)by->priority,
             (int)v->priority);
  else
    snprintf(buf, len, "team '%s' runs it on GPUs above its nominal quota; "
             "team '%s' takes them back for job %s", v->team, by->team,
             by->key);
}

/* 1 if team quota q lets cj preempt within its team (withinTeam
 * LowerPriority) and an admitted job of its team has a lower priority:
 * from the team's count of admitted jobs per priority (jobs_use), not a
 * walk over the admitted jobs (this runs for every blocked head in every
 * pass). */
static int within_victim(struct ctl *c, const struct gq_teamquota *q,
                         const struct cjob *cj)
{
  const struct cteam *t;

  if (q->within_team != GQ_WITHIN_LOWER_PRIORITY)
    return 0;
  t = ctl_team(c, cj->team);
  for (size_t i = 0; i < t->n_adm_prio; i++)
    if (t->adm_prio[i].prio < cj->priority)
      return 1;
  return 0;
}

/* Looks for victims whose GPUs let cj (the blocked head of team ti) run
 * (gq_preempt_select over the running jobs of the cohort), preempts them
 * and reserves their GPUs for cj. Returns 1 if it did. */
static int try_preempt(struct pass *p, struct cohort_pass *cp, size_t ti,
                       struct cjob *cj, const struct gq_gpujob *j)
{
  struct ctl *c = p->c;
  struct pcand *byuid = NULL, *pc, *pt, **list = NULL;
  struct gq_preempt_cand *cand;
  struct cjob *x;
  struct gq_cap_pod *r, *rt;
  size_t n = 0, *victims, *out;
  struct gq_assignment a;
  struct gq_preempt_ask ask;
  char names[512], why[1024];
  size_t off = 0;
  int rc;

  if (p->preempts >= PREEMPT_MAX || (cj->preempt_ms &&
      gq_clock_mono_ms() - cj->preempt_ms < PREEMPT_RETRY_MS))
    return 0;
  ask = (struct gq_preempt_ask){p->s, j, cj->priority, cp->tq, cp->n, ti,
                                cp->use, cp->n_use};
  if (!gq_preempt_may_reclaim(&ask) && !within_victim(c, cp->tq[ti], cj))
    return 0; /* no candidate could be a victim: no search (each costs
                 milliseconds at 2,000 nodes, and blocked heads retry) */
  p->preempts++;
  cj->preempt_ms = gq_clock_mono_ms();
  /* the candidates are the admitted jobs that hold pods: found from the
   * held pods (hundreds), not by walking every job the controller knows
   * (tens of thousands, most of them done) */
  HASH_ITER(hh, c->cap.held, r, rt) {
    if (!r->committed || !r->job_uid)
      continue;
    HASH_FIND_STR(byuid, r->job_uid, pc);
    if (!pc) {
      size_t k;

      x = ctl_job(c, r->job_uid);
      if (!x || x == cj || x->state != CJ_ACTIVE || !x->has_adm ||
          x->creates_left)
        continue;
      for (k = 0; k < cp->n && strcmp(cp->teams[k]->name, x->team); k++)
        ;
      if (k == cp->n)
        continue;
      pc = gq_xcalloc(1, sizeof(*pc));
      pc->cj = x;
      pc->team = k;
      HASH_ADD_KEYPTR(hh, byuid, x->uid, strlen(x->uid), pc);
      list = gq_xrealloc(list, (n + 1) * sizeof(*list));
      list[n++] = pc;
    }
    if (pc->n == pc->cap) {
      pc->cap = pc->cap ? 2 * pc->cap : 4;
      pc->nodes = gq_xrealloc(pc->nodes, pc->cap * sizeof(*pc->nodes));
      pc->reqs = gq_xrealloc(pc->reqs, pc->cap * sizeof(*pc->reqs));
    }
    pc->nodes[pc->n] = r->node;
    pc->reqs[pc->n++] = &r->req;
  }
  cand = gq_xcalloc(n + 1, sizeof(*cand));
  for (size_t i = 0; i < n; i++) {
    const struct gq_gpujob *xj = ctl_job_spec(c, list[i]->cj);

    x = list[i]->cj;
    cand[i] = (struct gq_preempt_cand){
        list[i]->team, x->priority, x->gpus, x->flavor,
        gq_preempt_at_risk(p->now_ms, x->start_ms, x->ckpt_ms,
                           xj ? xj->checkpoint_interval_s : -1, x->gpus),
        xj && xj->preemptible && list[i]->n > 0, list[i]->n,
        list[i]->nodes, list[i]->reqs};
  }
  victims = gq_xcalloc(n + 1, sizeof(*victims));
  out = gq_xcalloc((size_t)j->replicas, sizeof(*out));
  rc = gq_preempt_select(&ask, cand, n, victims, &a, out);
  if (rc > 0) {
    cj->resv_nodes = gq_xcalloc((size_t)j->replicas + 1,
                                sizeof(*cj->resv_nodes));
    for (int32_t i = 0; i < j->replicas; i++)
      cj->resv_nodes[i] = gq_xstrdup(p->s->nodes[out[i]].node->meta.name);
    for (int v = 0; v < rc; v++) {
      struct pcand *vc = list[victims[v]];
      int same = vc->team == ti;
      int w;

      victim_why(vc->cj, cj, same, why, sizeof(why));
      w = snprintf(names + off, sizeof(names) - off, "%s%s", v ? ", " : "",
                   vc->cj->key);
      if (w > 0 && (size_t)w < sizeof(names) - off)
        off += (size_t)w;
      jobs_preempt(c, vc->cj, cj, same ? "PreemptedByPriority"
                                       : "QuotaReclaim", why);
    }
    c->preemptors = gq_xrealloc(c->preemptors, (c->n_preemptors + 1) *
                                                   sizeof(*c->preemptors));
    c->preemptors[c->n_preemptors++] = cj;
    for (char **nd = cj->resv_nodes; *nd; nd++)
      resv_add(p, *nd, j, cj);
    status_set(cj, "WaitingForPreemption", "preempting %d job(s) for its "
               "%lld GPUs (%s); their GPUs are reserved for it while they "
               "checkpoint", rc, (long long)cj->gpus, names);
    status_event(c, cj, "Normal", "Preempting", "preempting %d job(s) to "
                 "make room: %s", rc, names);
  }
  HASH_ITER(hh, byuid, pc, pt) {
    HASH_DEL(byuid, pc);
    free(pc->nodes);
    free(pc->reqs);
    free(pc);
  }
  free(list);
  free(cand);
  free(victims);
  free(out);
  return rc > 0;
}

/* A job in Preempting keeps its place in its team's queue (DESIGN §5): if
 * it goes before its team's head, the capacity where it would run now is
 * reserved for it for this pass, so that no lower job (of any team) takes
 * what frees while its old pods checkpoint; once they are gone it is
 * queued again at that place and admitted there. */
static void draining_resv(struct pass *p, struct cohort_pass *cp)
{
  struct ctl *c = p->c;

  for (size_t i = 0; i < c->n_draining; i++) {
    struct cjob *cj = c->draining[i];
    const struct gq_gpujob *j = ctl_job_spec(c, cj);
    const char *flavor = strrchr(cj->flavor, ':');
    struct cjob *head;
    size_t ti, *out;

    for (ti = 0; ti < cp->n && strcmp(cp->teams[ti]->name, cj->team); ti++)
      ;
    if (!j || ti == cp->n || j->suspend)
      continue;
    head = cp->teams[ti]->n ? cp->teams[ti]->q[0] : NULL;
    if (head && (head->priority > cj->priority ||
                 (head->priority == cj->priority &&
                  head->queued_ms < cj->queued_ms)))
      continue; /* not the best waiting job of its team */
    flavor = flavor ? flavor + 1 : cj->flavor;
    out = gq_xcalloc((size_t)j->replicas, sizeof(*out));
    if (gq_place_job(p->s, j, flavor, out, NULL, 0) == 0)
      for (int32_t r = 0; r < j->replicas; r++)
        resv_add(p, p->s->nodes[out[r]].node->meta.name, j, cj);
    free(out);
  }
}

/* Forecasts when blocked head cj fits (its ETA) and, for the first blocked
 * head of the cohort in this pass only (p->cohort_resv unset), commits the
 * capacity it waits for to the snapshot as a reservation. One reservation
 * per cohort and pass is EASY backfilling's rule (Lifka, "The ANL/IBM SP
 * scheduling system", JSSPP 1995): reserving for every team's blocked head
 * at once would hold more GPUs idle than the backfill can fill (measured
 * with bench/replay on the Philly trace). */
static void reserve(struct pass *p, struct cjob *cj, const struct gq_gpujob *j,
                    const char *flavor)
{
  size_t *out;
  int64_t start = -1;

  if (p->forecasts >= FORECASTS_MAX)
    return; /* its last forecast (ETA) stands until a later pass */
  out = gq_xcalloc((size_t)j->replicas, sizeof(*out));
  if (!p->rel_built)
    build_rel(p);
  p->forecasts++;
  if (gq_forecast_start(p->s, j, flavor, p->rel, p->n_rel, p->now_ms, &start,
                        out) == 0 &&
      start >= 0 && !p->cohort_resv) {
    for (int32_t i = 0; i < j->replicas; i++)
      resv_add(p, p->s->nodes[out[i]].node->meta.name, j, NULL);
    if (p->resv_min < 0 || start < p->resv_min)
      p->resv_min = start;
    p->cohort_resv = 1;
  }
  cj->eta_ms = start;
  free(out);
}

/* 1 if some line of q for j's resource and products could hold j when the
 * team uses nothing else: gpus <= nominal + borrowingLimit (no limit in a
 * cohort: any amount; no cohort: nominal only). DESIGN §2's limits. */
static int quota_ever(const struct gq_teamquota *q, const struct gq_gpujob *j,
                      int has_cohort)
{
  for (size_t i = 0; i < q->n_res; i++) {
    const struct gq_quota_res *r = &q->res[i];
    int ok = !strcmp(r->resource, j->gpu_resource);

    if (ok && j->n_products && strcmp(r->flavor, GQ_FLAVOR_ANY)) {
      ok = 0;
      for (size_t k = 0; k < j->n_products; k++)
        ok |= !strcmp(j->products[k], r->flavor);
    }
    if (!ok)
      continue;
    if (has_cohort && r->borrow_limit < 0)
      return 1;
    if (j->gpus <= r->nominal + (has_cohort ? r->borrow_limit : 0))
      return 1;
  }
  return 0;
}

static void decide_cohort(struct pass *p, struct ccohort *k,
                          struct cohort_pass *cp)
{
  struct ctl *c = p->c;
  size_t n = cp->n;
  size_t *heads = gq_xcalloc(n, sizeof(*heads));
  size_t *order = gq_xcalloc(n, sizeof(*order));
  int64_t *want = gq_xcalloc(n, sizeof(*want));
  int *stop = gq_xcalloc(n, sizeof(*stop)), *blocked = gq_xcalloc(n, sizeof(*blocked));
  int *scanned = gq_xcalloc(n, sizeof(*scanned));
  struct gq_qcohort qc = {cp->qt, n, *k->redis_cohort != '\0'};
  char why[1024];

  draining_resv(p, cp);
  p->cohort_resv = 0;
  for (;;) {
    size_t ti, cnt = 0;
    struct cjob *cj;
    const struct gq_gpujob *j;
    struct gq_assignment a;
    size_t *out;
    int bf, rc;
    uint64_t key;

    for (size_t i = 0; i < n; i++)
      want[i] = !stop[i] && heads[i] < cp->teams[i]->n
                    ? cp->teams[i]->q[heads[i]]->gpus
                    : -1;
    gq_quota_order(&qc, want, order, &cnt);
    if (cnt == 0)
      break;
    if (p->tries++ >= TRIES_MAX || p->admits >= ADMITS_MAX) {
      ctl_schedule_pass(c);
      break;
    }
    ti = order[0];
    cj = cp->teams[ti]->q[heads[ti]];
    j = ctl_job_spec(c, cj);
    heads[ti]++;
    if (!j)
      continue;
    bf = p->resv_min >= 0 &&
         gq_forecast_backfill_allowed(p->now_ms, j->expected_duration_s,
                                      p->resv_min);
    key = ((uint64_t)cj->shape << 32) ^ ((uint64_t)ti << 1) ^ (uint64_t)bf;
    if (shape_failed(p, key)) {
      if (blocked[ti] && ++scanned[ti] >= BF_MAX)
        stop[ti] = 1;
      continue;
    }
    out = gq_xcalloc((size_t)j->replicas, sizeof(*out));
    if (bf)
      toggle_resv(p, -1);
    if (cj->resv_nodes) /* what is reserved for it as a preemptor */
      toggle_owned(p, cj, -1);
    rc = gq_assign_job(p->s, j, cp->tq, n, ti, cp->use, cp->n_use, &a, out,
                       why, sizeof(why));
    if (rc != 0 && cj->resv_nodes)
      toggle_owned(p, cj, 1);
    if (bf)
      toggle_resv(p, 1);
    if (rc != 0 && cj->resv_nodes && cj->victims_left > 0) {
      /* its victims are still checkpointing: it waits for them */
      blocked[ti] = 1;
      if (rc == GQ_EQUOTA)
        stop[ti] = 1;
      status_set(cj, "WaitingForPreemption", "waiting for %d preempted "
                 "job(s) to checkpoint and release their GPUs",
                 cj->victims_left);
      status_flush(c, cj);
      free(out);
      continue;
    }
    if (cj->resv_nodes) /* admitted, or its victims are gone */
      store_unreserve(c, cj);
    if (rc != 0 && !blocked[ti] &&
        (rc == GQ_ECAPACITY || (rc == GQ_EQUOTA &&
                                a.verdict == GQ_Q_COHORT_EXHAUSTED)) &&
        try_preempt(p, cp, ti, cj, j)) {
      blocked[ti] = 1;
      if (rc == GQ_EQUOTA)
        stop[ti] = 1;
      p->blocked_capacity = 1;
      status_flush(c, cj);
      free(out);
      continue;
    }
    if (rc == 0) {
      p->admits++;
      decide_admit(p, k, cj, j, &a, out);
      use_add(cp, ti, cj->flavor, cj->gpus);
      cp->qt[ti].used += cj->gpus;
      heads[ti]--; /* it left the queue: the next job took its index */
    } else if (rc == GQ_ECAPACITY) {
      p->blocked_capacity = 1;
      shape_fail(p, key);
      if (!blocked[ti]) {
        blocked[ti] = 1;
        reserve(p, cj, j, a.flavor);
      } else if (++scanned[ti] >= BF_MAX) {
        stop[ti] = 1;
      }
      status_set(cj, "WaitingForCapacity", "%s", why);
    } else if (rc == GQ_EQUOTA && !quota_ever(cp->tq[ti], j, qc.has_cohort)) {
      /* no line could ever hold it: it must not block the jobs behind it */
      cj->eta_ms = -1;
      if (a.verdict == GQ_Q_ZERO_QUOTA)
        status_set(cj, gq_qverdict_reason(a.verdict), "%s", why);
      else
        status_set(cj, "ExceedsQuota", "the job needs %lld GPUs, more than "
                   "team '%s' may ever hold of any flavor it accepts "
                   "(nominal + borrowingLimit): %s", (long long)j->gpus,
                   cj->team, why);
    } else if (rc == GQ_EQUOTA) {
      stop[ti] = 1;
      cj->eta_ms = -1;
      status_set(cj, gq_qverdict_reason(a.verdict), "%s", why);
    } else {
      cj->eta_ms = -1;
      status_set(cj, "NoMatchingQuota", "team '%s' has no quota line for "
                 "this job: %s", cj->team, why);
    }
    free(out);
    if (rc != 0)
      status_flush(c, cj);
  }
  free(heads);
  free(order);
  free(want);
  free(stop);
  free(blocked);
  free(scanned);
}

/* The first line of q that j's resource and products accept (as
 * gq_assign_job tries them), or NULL. */
static const struct gq_quota_res *fifo_line(const struct gq_teamquota *q,
                                            const struct gq_gpujob *j)
{
  for (size_t i = 0; i < q->n_res; i++) {
    const struct gq_quota_res *r = &q->res[i];

    if (strcmp(r->resource, j->gpu_resource))
      continue;
    if (!j->n_products || !strcmp(r->flavor, GQ_FLAVOR_ANY))
      return r;
    for (size_t k = 0; k < j->n_products; k++)
      if (!strcmp(j->products[k], r->flavor))
        return r;
  }
  return NULL;
}

/* The plain FIFO baseline (--policy fifo), what a simple batch scheduler
 * does and what bench/replay compares gpuq with: the cohort's jobs form
 * one queue in queue-time order (then uid), whatever their team or
 * priority; the head is admitted if its gang fits the free capacity (best
 * fit, as gpuq places) and otherwise blocks every job behind it: no
 * backfill, no reservations, no fair share, no team quota (so no
 * borrowing), and no preemption. Only a job no quota line of its team
 * accepts is passed over, as it could never run. Admission itself (Redis,
 * pods, status) is gpuq's. */
static void decide_cohort_fifo(struct pass *p, struct ccohort *k,
                               struct cohort_pass *cp)
{
  size_t *heads = gq_xcalloc(cp->n, sizeof(*heads));
  char why[1024];

  for (;;) {
    struct cjob *cj = NULL;
    const struct gq_gpujob *j;
    const struct gq_quota_res *line;
    struct gq_assignment a = {0};
    size_t ti = 0, *out;
    int rc;

    for (size_t i = 0; i < cp->n; i++) {
      struct cjob *h = heads[i] < cp->teams[i]->n
                           ? cp->teams[i]->q[heads[i]]
                           : NULL;

      if (h && (!cj || h->queued_ms < cj->queued_ms ||
                (h->queued_ms == cj->queued_ms && strcmp(h->uid, cj->uid) < 0))) {
        cj = h;
        ti = i;
      }
    }
    if (!cj)
      break;
    if (!(j = ctl_job_spec(p->c, cj))) {
      heads[ti]++;
      continue;
    }
    if (!(line = fifo_line(cp->tq[ti], j))) {
      heads[ti]++;
      cj->eta_ms = -1;
      status_set(cj, "NoMatchingQuota", "team '%s' has no quota line for "
                 "resource %s and this job's products", cj->team,
                 j->gpu_resource);
      status_flush(p->c, cj);
      continue;
    }
    out = gq_xcalloc((size_t)j->replicas, sizeof(*out));
    rc = gq_place_job(p->s, j, line->flavor, out, why, sizeof(why));
    if (rc == 0) {
      a.line = (size_t)(line - cp->tq[ti]->res);
      a.flavor = line->flavor;
      a.verdict = GQ_Q_FITS_NOMINAL;
      gq_assign_flavor_key(j->gpu_resource, line->flavor, a.key,
                           sizeof(a.key));
      decide_admit(p, k, cj, j, &a, out); /* it left the queue */
    } else {
      p->blocked_capacity = 1;
      cj->eta_ms = -1;
      status_set(cj, "WaitingForCapacity", "first in the FIFO queue: %s",
                 why);
      status_flush(p->c, cj);
    }
    free(out);
    if (rc != 0)
      break; /* the head blocks everything behind it */
  }
  free(heads);
}

/* The team's quota summed over its lines, for ordering teams (shares are
 * judged on totals; the per-line check is gq_assign_job's). */
static void team_totals(const struct gq_teamquota *q, const struct cteam *t,
                        struct gq_qteam *out)
{
  memset(out, 0, sizeof(*out));
  out->name = t->name;
  out->weight = q->weight;
  for (size_t i = 0; i < q->n_res; i++) {
    const struct gq_quota_res *r = &q->res[i];

    out->nominal += r->nominal;
    if (out->borrow_limit >= 0)
      out->borrow_limit = r->borrow_limit < 0 ? -1
                                              : out->borrow_limit + r->borrow_limit;
    if (out->lend_limit >= 0)
      out->lend_limit = r->lend_limit < 0 ? -1 : out->lend_limit + r->lend_limit;
  }
  for (size_t i = 0; i < t->n_use; i++)
    out->used += t->use[i].gpus;
}

void admit_pass(struct ctl *c)
{
  struct pass p = {0};
  struct ccohort *k, *tk;
  struct cteam *t, *tt;
  struct cohort_pass cp;

  p.c = c;
  p.now_ms = gq_clock_now_ms();
  p.resv_min = -1;
  if (!c->cap.valid)
    snapshot_rebuild(c);
  p.s = &c->cap.snap;
  preemptor_resv(&p);
  gq_metric_add(c->m_passes, NULL, 1);
  HASH_ITER(hh, c->cohorts, k, tk) {
    if (!k->rebuilt || k->rebuilding)
      continue;
    memset(&cp, 0, sizeof(cp));
    HASH_ITER(hh, c->teams, t, tt) {
      const struct gq_teamquota *q = ctl_quota(c, t->name);

      if (!q || ctl_cohort(c, q->cohort, t->name) != k)
        continue;
      cp.teams = gq_xrealloc(cp.teams, (cp.n + 1) * sizeof(*cp.teams));
      cp.tq = gq_xrealloc(cp.tq, (cp.n + 1) * sizeof(*cp.tq));
      cp.qt = gq_xrealloc(cp.qt, (cp.n + 1) * sizeof(*cp.qt));
      cp.teams[cp.n] = t;
      cp.tq[cp.n] = q;
      team_totals(q, t, &cp.qt[cp.n]);
      for (size_t i = 0; i < t->n_use; i++)
        use_add(&cp, cp.n, t->use[i].key, t->use[i].gpus);
      cp.n++;
    }
    if (cp.n && c->o.fifo)
      decide_cohort_fifo(&p, k, &cp);
    else if (cp.n)
      decide_cohort(&p, k, &cp);
    free(cp.teams);
    free(cp.tq);
    free(cp.qt);
    for (size_t i = 0; i < cp.n_use; i++)
      free((char *)cp.use[i].flavor);
    free(cp.use);
  }
  /* the first positions of each team, at most once a second: each
   * admission shifts them all, and writes must not pile up behind it */
  if (gq_clock_mono_ms() - c->pos_ms >= 1000) {
    c->pos_ms = gq_clock_mono_ms();
    HASH_ITER(hh, c->teams, t, tt)
      status_positions(c, t, GQ_CTL_POSITIONS_NOW);
  }
  /* free GPUs while jobs wait for capacity: fragmentation */
  c->frag_gpus = 0;
  if (p.blocked_capacity)
    for (size_t i = 0; i < p.s->n; i++) {
      int64_t f = gq_snapshot_available(p.s, i, GQ_DEFAULT_GPU_RESOURCE);

      c->frag_gpus += f > 0 ? f : 0;
    }
  resv_clear(&p); /* committed again by the next pass */
  free(p.resv);
  free(p.rel);
  free(p.failed);
}
