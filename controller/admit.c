/* controller/admit.c - the admission pass driver (DESIGN §4).
 *
 * Decide, then act. The decision is decide/pass.c's, a pure function
 * over plain views of the store: per cohort, the team that goes first
 * (fair share) has its head job tried (quota line, then nodes for the
 * whole gang); every job that fits is admitted in the same pass; a head
 * that fits its quota but not the free capacity may preempt, or gets a
 * forecast (its ETA) and, the first in the cohort, a reservation that only
 * jobs known to end before it may backfill (EASY). decide/pass.h says
 * what it decides and in which steps.
 *
 * This file drives it and acts on what it decides:
 *   - the capacity snapshot, kept between passes from pod events and
 *     assumptions (below; the pass decides over it without copying it);
 *   - the pass's input: for each cohort its teams, their TeamQuotas,
 *     ledger use and admitted priorities, and, when the pass asks for them
 *     (it reads only as far as it gets), the views of the queued jobs, the
 *     expected ends of the held pods (forecasts) and the running jobs that
 *     could be preempted;
 *   - the plan, applied in the order it was decided: each admission is
 *     one admit script in Redis, conditional on the cohort's ledger
 *     version, and its pods are created when Redis says ok; victims are
 *     preempted (jobs_preempt), preemptors' reservations kept, and every
 *     job the pass looked at gets its reason, message and ETA written.
 *
 * --policy fifo replaces the decision with the plain baseline that
 * bench/replay compares gpuq with (gq_pass_fifo).
 */
#include "controller/ctl_int.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "decide/snapshot.h"
#include "decide/pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct gq_lc lc = {"controller", "admit", NULL};

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
    if (cj->running)
      usage_running(c, cj, 0);
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

static void act_admit(struct ctl *c, struct ccohort *k,
                      const struct gq_plan_admit *ad)
{
  struct cjob *cj = ad->job;
  const struct gq_gpujob *j = ad->spec;
  const struct gq_assignment *a = &ad->a;
  struct admit_ctx *x;
  struct gq_qjob qj;
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
  for (int32_t i = 0; i < j->replicas; i++)
    cj->nodes[i] = gq_xstrdup(ad->nodes[i]);
  cj->flavor = ctl_intern(c, a->key);
  cj->pass_ms = gq_clock_mono_ms();
  jobs_use(c, cj, 1);
  jobs_assume(c, cj, j);
  status_set(cj, ad->reason, "%s", ad->message);
  x = gq_xcalloc(1, sizeof(*x));
  /* the event waits for Redis's yes: a refused admit is no admission */
  x->event = gq_xasprintf("attempt %lld admitted on %s (flavor %s%s)",
                          (long long)cj->attempt, ad->nodes_str, a->flavor,
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

/* Preemptor r->job keeps r's nodes reserved from pass to pass until it is
 * admitted, leaves the queue, or finds its victims gone and still does
 * not fit (c->preemptors, preemptor_views()). */
static void act_reserve(struct ctl *c, const struct gq_plan_resv *r)
{
  struct cjob *cj = r->job;

  store_unreserve(c, cj); /* none: the pass dropped it before */
  cj->resv_nodes = gq_xcalloc(r->n + 1, sizeof(*cj->resv_nodes));
  for (size_t i = 0; i < r->n; i++)
    cj->resv_nodes[i] = gq_xstrdup(r->nodes[i]);
  c->preemptors = gq_xrealloc(c->preemptors, (c->n_preemptors + 1) *
                                                 sizeof(*c->preemptors));
  c->preemptors[c->n_preemptors++] = cj;
}

static void act_status(struct ctl *c, const struct gq_plan_status *u)
{
  struct cjob *cj = u->job;

  if (u->set_eta)
    cj->eta_ms = u->eta_ms;
  status_set(cj, u->reason, "%s", u->message);
  if (u->event_reason)
    status_event(c, cj, "Normal", u->event_reason, "%s", u->event_message);
  status_flush(c, cj);
}

/* Applies cohort k's plan, step by step in the order it was decided. */
static void plan_apply(struct ctl *c, struct ccohort *k,
                       const struct gq_plan *pl)
{
  for (size_t i = 0; i < pl->n_steps; i++) {
    const struct gq_plan_step *st = &pl->steps[i];
    const struct gq_plan_victim *v;
    struct cjob *cj = st->job;

    switch (st->op) {
    case GQ_PLAN_ADMIT:
      act_admit(c, k, &pl->admits[st->i]);
      break;
    case GQ_PLAN_UNRESERVE: /* admitted, or its victims are gone */
      store_unreserve(c, cj);
      break;
    case GQ_PLAN_SEARCHED: /* the next search waits (real ms) */
      cj->preempt_ms = pl->mono_ms;
      break;
    case GQ_PLAN_RESERVE:
      act_reserve(c, &pl->resvs[st->i]);
      break;
    case GQ_PLAN_VICTIM:
      v = &pl->victims[st->i];
      jobs_preempt(c, v->job, v->by, v->cause, v->why);
      break;
    case GQ_PLAN_STATUS:
      act_status(c, &pl->status[st->i]);
      break;
    }
  }
}

/* ---- the pass's input ----------------------------------------------- */

/* Queued jobs first given to the pass per team; then twice as many each
 * time it asks: a pass reads a few jobs of most teams. */
#define VIEWS_FIRST 4

struct pcand { /* a candidate victim and the pods that hold for it */
  struct cjob *cj;
  size_t team;
  const char **nodes;
  const struct gq_podsched **reqs;
  size_t n, cap;
  UT_hash_handle hh;
};

/* One cohort's input (decide/pass.h), and what its views point to. */
struct cohort_in {
  struct gq_pass_cohort in;
  struct gq_pass_team *teams;
  struct cteam **ct;
  struct gq_pass_job **jobs;      /* per team (owned) */
  struct gq_pass_prio *prio;      /* every team's, one after the other */
  size_t n_prio;
  struct gq_ledger_use *use;      /* flavor keys borrowed from the teams */
  size_t n_use;
  struct gq_pass_draining *draining;
  struct gq_pass_cand *cands;
  struct pcand *byuid, **list;
};

/* The whole pass: the decision's state and the releases it asked for. */
struct drive {
  struct ctl *c;
  struct gq_pass *p;
  struct gq_forecast_release *rel;
  size_t n_rel;
};

/* Extends team i's views to the next jobs of its queue. */
static void team_views(struct ctl *c, struct cohort_in *ci, size_t i)
{
  struct gq_pass_team *t = &ci->teams[i];
  struct cteam *ct = ci->ct[i];
  size_t n = t->n_jobs ? 2 * t->n_jobs : VIEWS_FIRST;

  if (n > ct->n)
    n = ct->n;
  ci->jobs[i] = gq_xrealloc(ci->jobs[i], (n ? n : 1) * sizeof(**ci->jobs));
  for (size_t x = t->n_jobs; x < n; x++) {
    struct cjob *cj = ct->q[x];

    ci->jobs[i][x] = (struct gq_pass_job){
        cj, cj->key, cj->uid, ctl_job_spec(c, cj), cj->gpus, cj->priority,
        cj->queued_ms, cj->shape, cj->resv_nodes != NULL, cj->victims_left,
        cj->preempt_ms, cj->level};
  }
  t->jobs = ci->jobs[i];
  t->n_jobs = n;
}

/* The forecast's releases, built the first time a pass asks: when each
 * held pod is expected to free its requests. Pods never counted on (no
 * expected end; assumed pods) are left out. */
static void releases(struct drive *d)
{
  size_t cap = 0;
  struct gq_cap_pod *r, *rt;

  HASH_ITER(hh, d->c->cap.held, r, rt) {
    struct cjob *cj = r->job_uid ? ctl_job(d->c, r->job_uid) : NULL;
    int64_t end = -1;

    if (!r->committed)
      continue;
    if (r->deletion_ms) { /* terminating: gone within its grace */
      end = r->deletion_ms + r->grace_s * 1000;
    } else if (cj && cj->expected_s >= 0) {
      int64_t from = cj->start_ms ? cj->start_ms : cj->admitted_ms;

      end = from ? from + cj->expected_s * 1000 : -1;
    }
    if (end < 0)
      continue;
    if (d->n_rel == cap) {
      cap = cap ? 2 * cap : 256;
      d->rel = gq_xrealloc(d->rel, cap * sizeof(*d->rel));
    }
    d->rel[d->n_rel++] = (struct gq_forecast_release){r->node, &r->req, end};
  }
  gq_pass_releases(d->p, d->rel, d->n_rel);
}

static size_t team_index(const struct cohort_in *ci, const char *team)
{
  size_t k;

  for (k = 0; k < ci->in.n_teams && strcmp(ci->ct[k]->name, team); k++)
    ;
  return k;
}

/* The pods of the admitted jobs of ci's teams, grouped by job in the
 * order the held pods are met: found from the held pods (hundreds), not by
 * walking every job the controller knows (tens of thousands, most of them
 * done). */
static size_t cand_pods(struct ctl *c, struct cohort_in *ci)
{
  struct pcand *pc;
  struct gq_cap_pod *r, *rt;
  size_t n = 0;

  HASH_ITER(hh, c->cap.held, r, rt) {
    if (!r->committed || !r->job_uid)
      continue;
    HASH_FIND_STR(ci->byuid, r->job_uid, pc);
    if (!pc) {
      struct cjob *x = ctl_job(c, r->job_uid);
      size_t k;

      if (!x || x->state != CJ_ACTIVE || !x->has_adm || x->creates_left ||
          (k = team_index(ci, x->team)) == ci->in.n_teams)
        continue;
      pc = gq_xcalloc(1, sizeof(*pc));
      pc->cj = x;
      pc->team = k;
      HASH_ADD_KEYPTR(hh, ci->byuid, x->uid, strlen(x->uid), pc);
      ci->list = gq_xrealloc(ci->list, (n + 1) * sizeof(*ci->list));
      ci->list[n++] = pc;
    }
    if (pc->n == pc->cap) {
      pc->cap = pc->cap ? 2 * pc->cap : 4;
      pc->nodes = gq_xrealloc(pc->nodes, pc->cap * sizeof(*pc->nodes));
      pc->reqs = gq_xrealloc(pc->reqs, pc->cap * sizeof(*pc->reqs));
    }
    pc->nodes[pc->n] = r->node;
    pc->reqs[pc->n++] = &r->req;
  }
  return n;
}

/* The cohort's preemption candidates, when the pass asks for them (a
 * victim search is due). */
static void cands(struct ctl *c, struct cohort_in *ci)
{
  size_t n = cand_pods(c, ci);
  const struct gq_las *las = ci->in.las;
  int64_t now = gq_clock_now_ms();

  ci->cands = gq_xcalloc(n + 1, sizeof(*ci->cands));
  for (size_t i = 0; i < n; i++) {
    struct cjob *x = ci->list[i]->cj;
    const struct gq_gpujob *xj = ctl_job_spec(c, x);
    int64_t interval = xj ? xj->checkpoint_interval_s : -1;

    ci->cands[i] = (struct gq_pass_cand){
        x, x->key, ci->list[i]->team, x->priority, x->gpus, x->flavor,
        x->start_ms, x->ckpt_ms, interval, xj && xj->preemptible,
        gq_las_level(las, gq_las_service(x->service_s, x->gpus, x->start_ms,
                                         now)),
        gq_las_demotable(las, xj && xj->has_checkpoint, x->drain_wait,
                         interval, x->start_ms, now),
        ci->list[i]->n, ci->list[i]->nodes, ci->list[i]->reqs};
  }
  ci->in.cands = ci->cands;
  ci->in.n_cands = n;
  ci->in.cands_set = 1;
}

/* The jobs in Preempting of ci's teams (c->draining, disrupt.c). */
static void draining_views(struct ctl *c, struct cohort_in *ci)
{
  size_t n = 0;

  ci->draining = gq_xcalloc(c->n_draining + 1, sizeof(*ci->draining));
  for (size_t i = 0; i < c->n_draining; i++) {
    struct cjob *cj = c->draining[i];
    const struct gq_gpujob *j = ctl_job_spec(c, cj);
    size_t ti = team_index(ci, cj->team);

    if (!j || ti == ci->in.n_teams || j->suspend)
      continue;
    ci->draining[n++] = (struct gq_pass_draining){
        cj, j, ti, cj->priority,
        gq_las_level(ci->in.las, gq_las_service(cj->service_s, cj->gpus,
                                                cj->start_ms, cj->td_ms)),
        cj->queued_ms, cj->flavor};
  }
  ci->in.draining = ci->draining;
  ci->in.n_draining = n;
}

/* Team t (TeamQuota q) as the pass's team n of ci (its adm_prio is set
 * once every team is in: ci->prio moves meanwhile). */
static void team_add(struct ctl *c, struct cohort_in *ci, size_t n,
                     struct cteam *t, const struct gq_teamquota *q)
{
  ci->teams = gq_xrealloc(ci->teams, (n + 1) * sizeof(*ci->teams));
  ci->ct = gq_xrealloc(ci->ct, (n + 1) * sizeof(*ci->ct));
  ci->jobs = gq_xrealloc(ci->jobs, (n + 1) * sizeof(*ci->jobs));
  ci->prio = gq_xrealloc(ci->prio, (ci->n_prio + t->n_adm_prio + 1) *
                                       sizeof(*ci->prio));
  for (size_t i = 0; i < t->n_adm_prio; i++)
    ci->prio[ci->n_prio++] = (struct gq_pass_prio){t->adm_prio[i].prio,
                                                   t->adm_prio[i].n};
  ci->ct[n] = t;
  ci->jobs[n] = NULL;
  ci->teams[n] = (struct gq_pass_team){
      t->name, q,   NULL, t->n_adm_prio, t->n, NULL, 0,
      las_team_mean_gpus(c, t), t->adm_ckpt};
  ci->use = gq_xrealloc(ci->use, (ci->n_use + t->n_use + 1) *
                                     sizeof(*ci->use));
  for (size_t i = 0; i < t->n_use; i++)
    ci->use[ci->n_use++] = (struct gq_ledger_use){n, t->use[i].key,
                                                  t->use[i].gpus};
}

/* Cohort k's input: its teams (those whose TeamQuota names it) and their
 * ledger use; the jobs in Preempting for gpuq's policy. */
static void cohort_input(struct ctl *c, struct ccohort *k,
                         struct cohort_in *ci)
{
  struct cteam *t, *tt;
  size_t n = 0;

  memset(ci, 0, sizeof(*ci));
  HASH_ITER(hh, c->teams, t, tt) {
    const struct gq_teamquota *q = ctl_quota(c, t->name);

    if (!q || ctl_cohort(c, q->cohort, t->name) != k)
      continue;
    team_add(c, ci, n++, t, q);
  }
  for (size_t i = 0, off = 0; i < n; off += ci->teams[i++].n_adm_prio)
    ci->teams[i].adm_prio = ci->prio + off;
  ci->in.teams = ci->teams;
  ci->in.n_teams = n;
  ci->in.has_cohort = *k->redis_cohort != '\0';
  ci->in.use = ci->use;
  ci->in.n_use = ci->n_use;
  ci->in.las = n ? ctl_las(c, ci->ct[0]->name) : NULL;
  if (n && !c->o.fifo)
    draining_views(c, ci);
}

static void cohort_input_free(struct cohort_in *ci)
{
  struct pcand *pc, *pt;

  HASH_ITER(hh, ci->byuid, pc, pt) {
    HASH_DEL(ci->byuid, pc);
    free(pc->nodes);
    free(pc->reqs);
    free(pc);
  }
  for (size_t i = 0; i < ci->in.n_teams; i++)
    free(ci->jobs[i]);
  free(ci->list);
  free(ci->cands);
  free(ci->draining);
  free(ci->use);
  free(ci->teams);
  free(ci->ct);
  free(ci->jobs);
  free(ci->prio);
}

/* The preemptors still waiting (c->preemptors): their reserved GPUs are
 * committed for the whole pass, so that nobody else (their victims
 * included) takes the hole the victims leave. A preemptor no longer
 * queued (admitted, gone) loses its reservation here. */
static struct gq_pass_preemptor *preemptor_views(struct ctl *c, size_t *n)
{
  struct gq_pass_preemptor *v = gq_xcalloc(c->n_preemptors + 1, sizeof(*v));

  *n = 0;
  for (size_t i = 0; i < c->n_preemptors;) {
    struct cjob *cj = c->preemptors[i];
    const struct gq_gpujob *j = ctl_job_spec(c, cj);

    if (cj->state != CJ_QUEUED || !j) {
      store_unreserve(c, cj); /* moves the last one to i */
      continue;
    }
    v[(*n)++] = (struct gq_pass_preemptor){
        cj, j, (const char *const *)cj->resv_nodes};
    i++;
  }
  return v;
}

/* ---- the pass -------------------------------------------------------- */

/* Decides cohort k (input ci), answering what the pass asks for, then
 * applies its plan. */
static void decide_cohort(struct drive *d, struct ccohort *k,
                          struct cohort_in *ci)
{
  struct ctl *c = d->c;
  struct gq_plan pl;
  enum gq_pass_need need;
  size_t ti = 0;

  gq_plan_init(&pl);
  for (;;) {
    need = c->o.fifo ? gq_pass_fifo(d->p, &ci->in, &pl, &ti)
                     : gq_pass_cohort(d->p, &ci->in, &pl, &ti);
    if (need == GQ_PASS_DONE)
      break;
    if (need & GQ_PASS_NEED_JOBS)
      team_views(c, ci, ti);
    if (need & GQ_PASS_NEED_RELEASES)
      releases(d);
    if (need & GQ_PASS_NEED_CANDS)
      cands(c, ci);
  }
  plan_apply(c, k, &pl);
  if (pl.again) /* a limit stopped it: the rest in a new pass */
    ctl_schedule_pass(c);
  gq_plan_release(&pl);
}

void admit_pass(struct ctl *c)
{
  struct drive d = {c, NULL, NULL, 0};
  struct gq_pass_preemptor *pre;
  struct gq_pass_in in = {0};
  struct gq_pass_out out;
  struct ccohort *k, *tk;
  struct cteam *t, *tt;

  in.now_ms = gq_clock_now_ms();
  in.mono_ms = gq_clock_mono_ms();
  in.lim = GQ_PASS_LIMITS_DEFAULT;
  if (!c->cap.valid)
    snapshot_rebuild(c);
  in.snap = &c->cap.snap;
  pre = preemptor_views(c, &in.n_preemptors);
  in.preemptors = pre;
  d.p = gq_pass_begin(&in);
  free(pre);
  gq_metric_add(c->m_passes, NULL, 1);
  HASH_ITER(hh, c->cohorts, k, tk) {
    struct cohort_in ci;

    if (!k->rebuilt || k->rebuilding)
      continue;
    cohort_input(c, k, &ci);
    if (ci.in.n_teams)
      decide_cohort(&d, k, &ci);
    cohort_input_free(&ci);
  }
  /* the first positions of each team, at most once a second: each
   * admission shifts them all, and writes must not pile up behind it */
  if (gq_clock_mono_ms() - c->pos_ms >= 1000) {
    c->pos_ms = gq_clock_mono_ms();
    HASH_ITER(hh, c->teams, t, tt)
      status_positions(c, t, GQ_CTL_POSITIONS_NOW);
  }
  /* free GPUs while jobs wait for capacity: fragmentation; the pass's
   * reservations are uncommitted (committed again by the next pass) */
  gq_pass_end(d.p, &out);
  c->frag_gpus = out.free_gpus;
  free(d.rel);
}
