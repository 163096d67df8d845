/* decide/pass.c - the admission pass as a pure function (see pass.h).
 *
 * The pass keeps, across the cohorts of one pass, what limits it and what
 * it committed: the counters of the limits, the shapes that found no
 * capacity, and the reservations (a preemptor's, a draining job's, a
 * blocked head's forecast) with the earliest forecast start, which later
 * jobs may only backfill ahead of. Per cohort it keeps the teams' heads
 * and flags, its own copy of the ledger use and team totals (updated by
 * each admission, so that later jobs of the pass see it), and the
 * admissions it committed to the snapshot.
 *
 * A call that needs input returns before it changes anything for the job
 * it is looking at, so the next call takes the same step again with the
 * input supplied (the placement it redoes is the only cost).
 */
#include "decide/pass.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"
#include "decide/place.h"
#include "decide/preempt.h"

#define WHY_LEN 1024  /* a status message: status_set()'s buffer */
#define NAMES_LEN 512 /* node or job names joined in a message */

enum { STEP = -1 }; /* a step was taken: take the next one */

struct resv { /* one replica of a reservation, committed to the snapshot */
  const char *node;      /* the snapshot's name for it; NULL: not in it */
  struct gq_podsched req;
  const void *owner;     /* a preemptor's or draining job's ref (kept
                            across passes), or NULL: a forecast's */
  int committed;
};

struct commit { /* one admission of the cohort, committed to the snapshot */
  struct gq_podsched req;
  const char **nodes;
  size_t n;
};

struct cohort { /* the cohort being decided */
  int active, drained;
  const struct gq_las *las; /* attained-service, or NULL */
  int resv;              /* it has its one forecast reservation */
  size_t n;              /* teams */
  size_t *heads;         /* index of each team's next job */
  size_t *order;
  int64_t *want;
  int *stop, *blocked, *scanned;
  int32_t *low;          /* lowest priority admitted in the pass, per team
                            (INT32_MAX: none) */
  const struct gq_teamquota **tq;
  struct gq_qteam *qt;
  struct gq_qcohort qc;
  struct gq_ledger_use *use;
  size_t n_use, cap_use;
  char **keys;           /* flavor keys the pass added to use (owned) */
  size_t n_keys, cap_keys;
  struct commit *commits;
  size_t n_commits, cap_commits;
  unsigned char *victim; /* per candidate: preempted in this pass */
  size_t *out;           /* node indexes of the job being decided */
  size_t cap_out;
  char why[WHY_LEN];
};

struct gq_pass {
  struct gq_snapshot *s;
  struct gq_pass_limits lim;
  int64_t now_ms, mono_ms;
  const struct gq_forecast_release *rel;
  size_t n_rel;
  int rel_set;
  struct resv *resv;
  size_t n_resv, cap_resv;
  int64_t resv_min;      /* earliest forecast reservation start, -1 none */
  int forecasts, tries, preempts, admits;
  uint64_t *failed;      /* shapes that found no capacity (hash, team, bf) */
  size_t n_failed, cap_failed;
  int blocked_capacity, again;
  struct cohort k;
};

/* ---- memory --------------------------------------------------------- */

/* Returns a with room for one more element after the first n. */
static void *grow(void *a, size_t *cap, size_t n, size_t size)
{
  if (n < *cap)
    return a;
  *cap = *cap ? 2 * *cap : 8;
  return gq_xrealloc(a, *cap * size);
}

#define GROW(a, n, cap) ((a) = grow((a), &(cap), (n), sizeof(*(a))))

static void out_room(struct cohort *cs, int32_t replicas)
{
  if ((size_t)replicas <= cs->cap_out)
    return;
  cs->cap_out = (size_t)replicas;
  cs->out = gq_xrealloc(cs->out, cs->cap_out * sizeof(*cs->out));
}

static const char *node_name(const struct gq_pass *p, size_t i)
{
  return p->s->nodes[i].node->meta.name;
}

/* ---- the plan ------------------------------------------------------- */

void gq_plan_init(struct gq_plan *pl)
{
  memset(pl, 0, sizeof(*pl));
}

void gq_plan_release(struct gq_plan *pl)
{
  for (size_t i = 0; i < pl->n_admits; i++) {
    free(pl->admits[i].nodes);
    free(pl->admits[i].nodes_str);
    free(pl->admits[i].message);
  }
  for (size_t i = 0; i < pl->n_victims; i++)
    free(pl->victims[i].why);
  for (size_t i = 0; i < pl->n_resvs; i++)
    free(pl->resvs[i].nodes);
  for (size_t i = 0; i < pl->n_status; i++) {
    free(pl->status[i].message);
    free(pl->status[i].event_message);
  }
  free(pl->steps);
  free(pl->admits);
  free(pl->victims);
  free(pl->resvs);
  free(pl->status);
  gq_plan_init(pl);
}

static void plan_step(struct gq_plan *pl, enum gq_plan_op op, size_t i,
                      void *job)
{
  GROW(pl->steps, pl->n_steps, pl->cap_steps);
  pl->steps[pl->n_steps++] = (struct gq_plan_step){op, i, job};
}

/* Formats a message as status_set() and status_event() would (truncated
 * to WHY_LEN - 1 bytes), as a heap string. */
static char *vmsg(const char *fmt, va_list ap)
{
  char buf[WHY_LEN];

  vsnprintf(buf, sizeof(buf), fmt, ap);
  return gq_xstrdup(buf);
}

static char *msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *msg(const char *fmt, ...)
{
  va_list ap;
  char *s;

  va_start(ap, fmt);
  s = vmsg(fmt, ap);
  va_end(ap);
  return s;
}

/* Adds a status step for job (reason: static) and returns it, valid until
 * the next one is added. */
static struct gq_plan_status *plan_status(struct gq_plan *pl, void *job,
                                          const char *reason, int set_eta,
                                          int64_t eta_ms, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static struct gq_plan_status *plan_status(struct gq_plan *pl, void *job,
                                          const char *reason, int set_eta,
                                          int64_t eta_ms, const char *fmt, ...)
{
  struct gq_plan_status *st;
  va_list ap;

  GROW(pl->status, pl->n_status, pl->cap_status);
  st = &pl->status[pl->n_status];
  memset(st, 0, sizeof(*st));
  st->job = job;
  st->reason = reason;
  st->set_eta = set_eta;
  st->eta_ms = eta_ms;
  va_start(ap, fmt);
  st->message = vmsg(fmt, ap);
  va_end(ap);
  plan_step(pl, GQ_PLAN_STATUS, pl->n_status++, job);
  return st;
}

/* ---- reservations --------------------------------------------------- */

static void resv_add(struct gq_pass *p, const char *node,
                     const struct gq_gpujob *j, const void *owner)
{
  long i = gq_snapshot_find(p->s, node);
  struct resv *rv;

  GROW(p->resv, p->n_resv, p->cap_resv);
  rv = &p->resv[p->n_resv++];
  /* the snapshot's own name: the caller's copy (a preemptor's reserved
   * nodes) may be freed while the pass still holds the reservation */
  rv->node = i >= 0 ? node_name(p, (size_t)i) : NULL;
  rv->owner = owner;
  gq_place_replica_request(j, &rv->req);
  rv->committed = rv->node && gq_snapshot_commit(p->s, rv->node, &rv->req,
                                                 1) == 0;
}

/* Commits (sign 1) or uncommits (-1) the reservations of owner (NULL:
 * the forecasts', which backfill may use; never a preemptor's). */
static void toggle_owned(struct gq_pass *p, const void *owner, int sign)
{
  for (size_t i = 0; i < p->n_resv; i++) {
    struct resv *rv = &p->resv[i];

    if (rv->owner != owner || rv->committed == (sign > 0))
      continue;
    if (rv->node)
      gq_snapshot_commit(p->s, rv->node, &rv->req, sign);
    rv->committed = sign > 0;
  }
}

/* Uncommits every reservation (at the end of a pass). */
static void resv_clear(struct gq_pass *p)
{
  for (size_t i = 0; i < p->n_resv; i++) {
    if (p->resv[i].committed && p->resv[i].node)
      gq_snapshot_commit(p->s, p->resv[i].node, &p->resv[i].req, -1);
    gq_place_replica_release(&p->resv[i].req);
  }
  p->n_resv = 0;
}

static int shape_failed(const struct gq_pass *p, uint64_t key)
{
  for (size_t i = 0; i < p->n_failed; i++)
    if (p->failed[i] == key)
      return 1;
  return 0;
}

static void shape_fail(struct gq_pass *p, uint64_t key)
{
  GROW(p->failed, p->n_failed, p->cap_failed);
  p->failed[p->n_failed++] = key;
}

/* ---- the pass ------------------------------------------------------- */

struct gq_pass *gq_pass_begin(const struct gq_pass_in *in)
{
  struct gq_pass *p = gq_xcalloc(1, sizeof(*p));

  p->s = in->snap;
  p->lim = in->lim;
  p->now_ms = in->now_ms;
  p->mono_ms = in->mono_ms;
  p->resv_min = -1;
  /* 2. snapshot: the GPUs reserved for each preemptor still waiting, so
   * that nobody else (its victims included) takes the hole its victims
   * leave (no thrashing) */
  for (size_t i = 0; i < in->n_preemptors; i++) {
    const struct gq_pass_preemptor *x = &in->preemptors[i];

    for (const char *const *n = x->nodes; n && *n; n++)
      resv_add(p, *n, x->spec, x->ref);
  }
  return p;
}

void gq_pass_releases(struct gq_pass *p, const struct gq_forecast_release *rel,
                      size_t n)
{
  p->rel = rel;
  p->n_rel = n;
  p->rel_set = 1;
}

static void cohort_end(struct gq_pass *p);

void gq_pass_end(struct gq_pass *p, struct gq_pass_out *out)
{
  if (p->k.active)
    cohort_end(p);
  if (out) {
    out->blocked_capacity = p->blocked_capacity;
    out->again = p->again;
    out->free_gpus = 0;
    /* free GPUs while jobs wait for capacity: fragmentation */
    for (size_t i = 0; p->blocked_capacity && i < p->s->n; i++) {
      int64_t f = gq_snapshot_available(p->s, i, GQ_DEFAULT_GPU_RESOURCE);

      out->free_gpus += f > 0 ? f : 0;
    }
  }
  resv_clear(p); /* committed again by the next pass */
  free(p->resv);
  free(p->failed);
  free(p);
}

/* ---- a cohort's state ----------------------------------------------- */

/* Adds gpus of flavor key to team's use in the cohort's copy (key is
 * copied when it is new: it may be the caller's scratch). */
static void use_add(struct cohort *cs, size_t team, const char *key,
                    long long gpus)
{
  char *own;

  for (size_t i = 0; i < cs->n_use; i++)
    if (cs->use[i].team == team && !strcmp(cs->use[i].flavor, key)) {
      cs->use[i].gpus += gpus;
      return;
    }
  own = gq_xstrdup(key);
  GROW(cs->keys, cs->n_keys, cs->cap_keys);
  cs->keys[cs->n_keys++] = own;
  GROW(cs->use, cs->n_use, cs->cap_use);
  cs->use[cs->n_use++] = (struct gq_ledger_use){team, own, gpus};
}

/* The team's quota summed over its lines, for ordering teams (shares are
 * judged on totals; the per-line check is gq_assign_job's). */
static void team_totals(const struct gq_pass_cohort *k, size_t team,
                        struct gq_qteam *out)
{
  const struct gq_teamquota *q = k->teams[team].quota;

  memset(out, 0, sizeof(*out));
  out->name = k->teams[team].name;
  out->weight = q->weight;
  out->hist_gpus = k->teams[team].hist_gpus;
  for (size_t i = 0; i < q->n_res; i++) {
    const struct gq_quota_res *r = &q->res[i];

    out->nominal += r->nominal;
    if (out->borrow_limit >= 0)
      out->borrow_limit = r->borrow_limit < 0 ? -1
                                              : out->borrow_limit + r->borrow_limit;
    if (out->lend_limit >= 0)
      out->lend_limit = r->lend_limit < 0 ? -1 : out->lend_limit + r->lend_limit;
  }
  for (size_t i = 0; i < k->n_use; i++)
    if (k->use[i].team == team)
      out->used += k->use[i].gpus;
}

static void cohort_begin(struct gq_pass *p, const struct gq_pass_cohort *k,
                         struct gq_plan *pl)
{
  struct cohort *cs = &p->k;
  size_t n = k->n_teams ? k->n_teams : 1;

  memset(cs, 0, sizeof(*cs));
  cs->active = 1;
  cs->las = k->las;
  cs->n = k->n_teams;
  cs->heads = gq_xcalloc(n, sizeof(*cs->heads));
  cs->order = gq_xcalloc(n, sizeof(*cs->order));
  cs->want = gq_xcalloc(n, sizeof(*cs->want));
  cs->stop = gq_xcalloc(n, sizeof(*cs->stop));
  cs->blocked = gq_xcalloc(n, sizeof(*cs->blocked));
  cs->scanned = gq_xcalloc(n, sizeof(*cs->scanned));
  cs->low = gq_xcalloc(n, sizeof(*cs->low));
  cs->tq = gq_xcalloc(n, sizeof(*cs->tq));
  cs->qt = gq_xcalloc(n, sizeof(*cs->qt));
  for (size_t i = 0; i < k->n_teams; i++) {
    cs->low[i] = INT32_MAX;
    cs->tq[i] = k->teams[i].quota;
    team_totals(k, i, &cs->qt[i]);
  }
  cs->qc = (struct gq_qcohort){cs->qt, k->n_teams, k->has_cohort};
  for (size_t i = 0; i < k->n_use; i++) {
    GROW(cs->use, cs->n_use, cs->cap_use);
    cs->use[cs->n_use++] = k->use[i]; /* flavor borrowed from the caller */
  }
  pl->mono_ms = p->mono_ms;
}

/* 6. the rest stay queued: the cohort's admissions are uncommitted (the
 * caller assumes their pods when it applies the plan) and its state is
 * dropped; the reservations stay until the end of the pass. */
static void cohort_end(struct gq_pass *p)
{
  struct cohort *cs = &p->k;

  for (size_t i = 0; i < cs->n_commits; i++) {
    for (size_t r = 0; r < cs->commits[i].n; r++)
      gq_snapshot_commit(p->s, cs->commits[i].nodes[r], &cs->commits[i].req,
                         -1);
    gq_place_replica_release(&cs->commits[i].req);
    free(cs->commits[i].nodes);
  }
  for (size_t i = 0; i < cs->n_keys; i++)
    free(cs->keys[i]);
  free(cs->commits);
  free(cs->keys);
  free(cs->use);
  free(cs->heads);
  free(cs->order);
  free(cs->want);
  free(cs->stop);
  free(cs->blocked);
  free(cs->scanned);
  free(cs->low);
  free(cs->tq);
  free(cs->qt);
  free(cs->victim);
  free(cs->out);
  memset(cs, 0, sizeof(*cs));
}

/* 1. heads: want[i] gets the GPUs of team i's next job, -1 when the team
 * is stopped or its queue is done. Returns GQ_PASS_NEED_JOBS (with
 * *need_team) if that job's view is not there yet, else 0. */
static int heads_want(struct gq_pass *p, const struct gq_pass_cohort *k,
                      size_t *need_team)
{
  struct cohort *cs = &p->k;

  for (size_t i = 0; i < cs->n; i++) {
    const struct gq_pass_team *t = &k->teams[i];

    cs->want[i] = -1;
    if (cs->stop[i] || cs->heads[i] >= t->n_queued)
      continue;
    if (cs->heads[i] >= t->n_jobs) {
      *need_team = i;
      return GQ_PASS_NEED_JOBS;
    }
    cs->want[i] = t->jobs[cs->heads[i]].gpus;
    cs->qt[i].rank = cs->las ? t->jobs[cs->heads[i]].level : 0;
  }
  return 0;
}

/* ---- admitting -------------------------------------------------------- */

/* Adds the admission of v (team ti) on cs->out under a to the plan and
 * commits its replicas to the snapshot for the rest of the cohort. */
static void plan_admission(struct gq_pass *p, struct gq_plan *pl,
                           const struct gq_pass_job *v, size_t ti,
                           const struct gq_assignment *a)
{
  struct cohort *cs = &p->k;
  const struct gq_gpujob *j = v->spec;
  size_t n = (size_t)j->replicas, off = 0;
  int borrowing = a->verdict == GQ_Q_FITS_BORROWING;
  char nodes[NAMES_LEN] = "";
  struct gq_plan_admit *ad;
  struct commit *cm;

  GROW(pl->admits, pl->n_admits, pl->cap_admits);
  ad = &pl->admits[pl->n_admits];
  *ad = (struct gq_plan_admit){.job = v->ref, .spec = j, .team = ti, .a = *a};
  ad->nodes = gq_xcalloc(n, sizeof(*ad->nodes));
  ad->n_nodes = n;
  GROW(cs->commits, cs->n_commits, cs->cap_commits);
  cm = &cs->commits[cs->n_commits++];
  gq_place_replica_request(j, &cm->req);
  cm->nodes = gq_xcalloc(n, sizeof(*cm->nodes));
  cm->n = n;
  for (size_t i = 0; i < n; i++) {
    int w;

    ad->nodes[i] = cm->nodes[i] = node_name(p, cs->out[i]);
    gq_snapshot_commit(p->s, ad->nodes[i], &cm->req, 1);
    w = snprintf(nodes + off, sizeof(nodes) - off, "%s%s", i ? "," : "",
                 ad->nodes[i]);
    if (w > 0 && (size_t)w < sizeof(nodes) - off)
      off += (size_t)w;
  }
  ad->nodes_str = gq_xstrdup(nodes);
  ad->reason = borrowing ? "AdmittedBorrowing" : "Admitted";
  ad->message = msg("admitted on %s (flavor %s%s)", nodes, a->flavor,
                    borrowing ? ", borrowing" : "");
  plan_step(pl, GQ_PLAN_ADMIT, pl->n_admits++, v->ref);
}

/* 5. admit v, the head of team ti, under a: its quota use counts for the
 * rest of the cohort. */
static void admit_job(struct gq_pass *p, size_t ti, const struct gq_pass_job *v,
                      const struct gq_assignment *a, struct gq_plan *pl)
{
  struct cohort *cs = &p->k;

  if (v->has_resv) /* admitted: what was reserved for it goes */
    plan_step(pl, GQ_PLAN_UNRESERVE, 0, v->ref);
  p->admits++;
  plan_admission(p, pl, v, ti, a);
  use_add(cs, ti, a->key, v->spec->gpus);
  cs->qt[ti].used += v->spec->gpus;
  if (v->priority < cs->low[ti])
    cs->low[ti] = v->priority;
}

/* ---- preemption (DESIGN §4, controller/preempt.h) ------------------ */

/* 1 if a job refused with rc and verdict is refused by its own team's
 * quota (not the cohort's pool): only its team's jobs can make room, and
 * only by demotion (DESIGN §4 keeps priority preemption for a job that
 * fits its quota). */
static int own_quota_full(int rc, enum gq_qverdict verdict)
{
  return rc == GQ_EQUOTA && (verdict == GQ_Q_OVER_NOMINAL_NO_BORROW ||
                             verdict == GQ_Q_OVER_BORROW_LIMIT);
}

/* The ask of v (team ti), refused with rc and verdict (0 when it fits
 * its quota). */
static struct gq_preempt_ask make_ask(struct gq_pass *p, size_t ti,
                                      const struct gq_pass_job *v, int rc,
                                      enum gq_qverdict verdict)
{
  struct cohort *cs = &p->k;
  int own = own_quota_full(rc, verdict);

  return (struct gq_preempt_ask){p->s,      v->spec, v->priority,
                                 cs->tq,    cs->n,   ti,
                                 cs->use,   cs->n_use, cs->las != NULL,
                                 v->level,  own};
}

/* 1 if team t's quota lets v preempt within its team (withinTeam
 * LowerPriority) and an admitted job of the team has a lower priority, or,
 * under attained-service, the same priority while v is below the top
 * level (one of them may have a higher level): from the team's count of
 * admitted jobs per priority, not a walk over the admitted jobs (this runs
 * for every blocked head in every pass). */
static int within_victim(const struct gq_pass *p, const struct gq_pass_team *t,
                         size_t ti, const struct gq_pass_job *v,
                         int demote_only)
{
  int demote = p->k.las && (size_t)v->level < p->k.las->n_thresholds &&
               t->n_resumable > 0;
  int lower = !demote_only;

  if (t->quota->within_team != GQ_WITHIN_LOWER_PRIORITY)
    return 0;
  if ((lower && p->k.low[ti] < v->priority) ||
      (demote && p->k.low[ti] == v->priority))
    return 1;
  for (size_t i = 0; i < t->n_adm_prio; i++)
    if ((lower && t->adm_prio[i].prio < v->priority) ||
        (demote && t->adm_prio[i].prio == v->priority))
      return 1;
  return 0;
}

static int quota_ever(const struct gq_teamquota *q, const struct gq_gpujob *j,
                      int has_cohort);

/* 1 if a victim search for v (refused with rc and a) is to run now. */
static int searchable(struct gq_pass *p, const struct gq_pass_cohort *k,
                      size_t ti, const struct gq_pass_job *v, int rc,
                      const struct gq_assignment *a)
{
  struct gq_preempt_ask ask;
  /* no room (capacity, or the cohort's pool in use): any victim may help;
   * its own team's quota full: only its own team's jobs can */
  int room = rc == GQ_ECAPACITY ||
             (rc == GQ_EQUOTA && a->verdict == GQ_Q_COHORT_EXHAUSTED);
  int own = own_quota_full(rc, a->verdict) &&
            quota_ever(k->teams[ti].quota, v->spec, k->has_cohort);

  if (v->has_resv && v->victims_left > 0)
    return 0; /* it waits for the victims it has */
  if (p->k.blocked[ti] || !(room || own))
    return 0;
  if (p->preempts >= p->lim.preempt_max ||
      (v->preempt_ms && p->mono_ms - v->preempt_ms < p->lim.preempt_retry_ms))
    return 0;
  ask = make_ask(p, ti, v, rc, a->verdict);
  /* no candidate could be a victim: no search (each costs milliseconds
   * at 2,000 nodes, and blocked heads retry) */
  return (room && gq_preempt_may_reclaim(&ask)) ||
         within_victim(p, &k->teams[ti], ti, v, own);
}

/* Why victim x goes for by (team ti): the sentence into buf; returns
 * the cause (static). */
static const char *victim_why(const struct gq_pass_cohort *k,
                              const struct gq_pass_cand *x,
                              const struct gq_pass_job *by, size_t ti,
                              char *buf, size_t len)
{
  if (x->team == ti && x->priority == by->priority) {
    snprintf(buf, len, "demoted for job %s of the same team: it has had "
             "more GPU-service (attained-service level %d > %d); it resumes "
             "from its checkpoint when GPUs free", by->key, x->level,
             by->level);
    return "Demoted";
  }
  if (x->team == ti) {
    snprintf(buf, len, "preempted for job %s (priority %d > %d) of the same "
             "team, which needs its GPUs", by->key, (int)by->priority,
             (int)x->priority);
    return "PreemptedByPriority";
  }
  snprintf(buf, len, "team '%s' runs it on GPUs above its nominal quota; "
           "team '%s' takes them back for job %s", k->teams[x->team].name,
           k->teams[ti].name, by->key);
  return "QuotaReclaim";
}

/* The candidates v may preempt: not already preempted in this pass, not
 * v itself. cand[] and map[] (its index in k->cands) have room for all. */
static size_t cands_collect(struct gq_pass *p, const struct gq_pass_cohort *k,
                            const struct gq_pass_job *v,
                            struct gq_preempt_cand *cand, size_t *map)
{
  size_t n = 0;

  for (size_t i = 0; i < k->n_cands; i++) {
    const struct gq_pass_cand *x = &k->cands[i];

    if (p->k.victim[i] || x->ref == v->ref || x->team >= p->k.n)
      continue;
    map[n] = i;
    cand[n++] = (struct gq_preempt_cand){
        x->team, x->priority, x->gpus, x->flavor_key,
        gq_preempt_at_risk(p->now_ms, x->start_ms, x->ckpt_ms, x->interval_s,
                           x->gpus),
        x->preemptible && x->n_pods > 0, x->level, x->demotable, x->n_pods,
        x->nodes, x->reqs};
  }
  return n;
}

/* The search found rc victims for v (team ti), and p->k.out where v then
 * goes: reserve those nodes for it, preempt the victims, tell it. */
static void preempt_plan(struct gq_pass *p, const struct gq_pass_cohort *k,
                         size_t ti, const struct gq_pass_job *v,
                         const size_t *victims, const size_t *map, int rc,
                         struct gq_plan *pl)
{
  const struct gq_gpujob *j = v->spec;
  char names[NAMES_LEN] = "", why[WHY_LEN];
  struct gq_plan_resv *r;
  struct gq_plan_status *st;
  size_t off = 0;

  GROW(pl->resvs, pl->n_resvs, pl->cap_resvs);
  r = &pl->resvs[pl->n_resvs];
  r->job = v->ref;
  r->n = (size_t)j->replicas;
  r->nodes = gq_xcalloc(r->n, sizeof(*r->nodes));
  for (size_t i = 0; i < r->n; i++)
    r->nodes[i] = node_name(p, p->k.out[i]);
  plan_step(pl, GQ_PLAN_RESERVE, pl->n_resvs++, v->ref);
  for (int i = 0; i < rc; i++) {
    const struct gq_pass_cand *x = &k->cands[map[victims[i]]];
    const char *cause = victim_why(k, x, v, ti, why, sizeof(why));
    int w;

    w = snprintf(names + off, sizeof(names) - off, "%s%s", i ? ", " : "",
                 x->key);
    if (w > 0 && (size_t)w < sizeof(names) - off)
      off += (size_t)w;
    p->k.victim[map[victims[i]]] = 1;
    GROW(pl->victims, pl->n_victims, pl->cap_victims);
    pl->victims[pl->n_victims] =
        (struct gq_plan_victim){x->ref, v->ref, cause, gq_xstrdup(why)};
    plan_step(pl, GQ_PLAN_VICTIM, pl->n_victims++, x->ref);
  }
  for (size_t i = 0; i < (size_t)j->replicas; i++)
    resv_add(p, node_name(p, p->k.out[i]), j, v->ref);
  st = plan_status(pl, v->ref, "WaitingForPreemption", 0, 0,
                   "preempting %d job(s) for its %lld GPUs (%s); their GPUs "
                   "are reserved for it while they checkpoint", rc,
                   (long long)v->gpus, names);
  st->event_reason = "Preempting";
  st->event_message = msg("preempting %d job(s) to make room: %s", rc, names);
}

/* Looks for victims whose GPUs let v (the blocked head of team ti,
 * refused with rc0 and a0) run (gq_preempt_select over the cohort's
 * candidates), and plans them. Returns 1 if it found them. */
static int try_preempt(struct gq_pass *p, const struct gq_pass_cohort *k,
                       size_t ti, const struct gq_pass_job *v, int rc0,
                       const struct gq_assignment *a0, struct gq_plan *pl)
{
  struct gq_preempt_ask ask = make_ask(p, ti, v, rc0, a0->verdict);
  struct gq_preempt_cand *cand;
  struct gq_assignment a;
  size_t n, *victims, *map;
  int rc;

  p->preempts++;
  plan_step(pl, GQ_PLAN_SEARCHED, 0, v->ref);
  if (!p->k.victim)
    p->k.victim = gq_xcalloc(k->n_cands + 1, 1);
  cand = gq_xcalloc(k->n_cands + 1, sizeof(*cand));
  map = gq_xcalloc(k->n_cands + 1, sizeof(*map));
  victims = gq_xcalloc(k->n_cands + 1, sizeof(*victims));
  n = cands_collect(p, k, v, cand, map);
  rc = gq_preempt_select(&ask, cand, n, victims, &a, p->k.out);
  if (rc > 0)
    preempt_plan(p, k, ti, v, victims, map, rc, pl);
  free(cand);
  free(map);
  free(victims);
  return rc > 0;
}

/* ---- waiting -------------------------------------------------------- */

/* Forecasts when blocked head v fits on nodes of flavor (its ETA) and, for
 * the first blocked head of the cohort in this pass only, commits the
 * capacity it waits for as a reservation. One reservation per cohort and
 * pass is EASY backfilling's rule (Lifka, "The ANL/IBM SP scheduling
 * system", JSSPP 1995): reserving for every team's blocked head at once
 * would hold more GPUs idle than the backfill can fill (measured with
 * bench/replay on the Philly trace). Returns 1 with *eta_ms when it
 * forecast, 0 when the pass has done its forecasts (the last ETA stands
 * until a later pass). */
static int reserve(struct gq_pass *p, const struct gq_pass_job *v,
                   const char *flavor, int64_t *eta_ms)
{
  const struct gq_gpujob *j = v->spec;
  int64_t start = -1;

  if (p->forecasts >= p->lim.forecasts_max)
    return 0;
  p->forecasts++;
  if (gq_forecast_start(p->s, j, flavor, p->rel, p->n_rel, p->now_ms, &start,
                        p->k.out) == 0 &&
      start >= 0 && !p->k.resv) {
    for (int32_t i = 0; i < j->replicas; i++)
      resv_add(p, node_name(p, p->k.out[i]), j, NULL);
    if (p->resv_min < 0 || start < p->resv_min)
      p->resv_min = start;
    p->k.resv = 1;
  }
  *eta_ms = start;
  return 1;
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

/* v's quota refusal (rc GQ_EQUOTA or GQ_ENOTFOUND under a): its reason. */
static void quota_refused(struct gq_pass *p, const struct gq_pass_cohort *k,
                          size_t ti, const struct gq_pass_job *v, int rc,
                          const struct gq_assignment *a, struct gq_plan *pl)
{
  struct cohort *cs = &p->k;
  const char *team = k->teams[ti].name;

  if (rc == GQ_EQUOTA && !quota_ever(cs->tq[ti], v->spec, cs->qc.has_cohort)) {
    /* no line could ever hold it: it must not block the jobs behind it */
    if (a->verdict == GQ_Q_ZERO_QUOTA)
      plan_status(pl, v->ref, gq_qverdict_reason(a->verdict), 1, -1, "%s",
                  cs->why);
    else
      plan_status(pl, v->ref, "ExceedsQuota", 1, -1, "the job needs %lld "
                  "GPUs, more than team '%s' may ever hold of any flavor it "
                  "accepts (nominal + borrowingLimit): %s",
                  (long long)v->spec->gpus, team, cs->why);
  } else if (rc == GQ_EQUOTA) {
    cs->stop[ti] = 1; /* strict order within a team */
    plan_status(pl, v->ref, gq_qverdict_reason(a->verdict), 1, -1, "%s",
                cs->why);
  } else {
    plan_status(pl, v->ref, "NoMatchingQuota", 1, -1, "team '%s' has no "
                "quota line for this job: %s", team, cs->why);
  }
}

/* 5. v, the head of team ti, was refused (rc under a; search: a victim
 * search is due): it waits for its victims, preempts, reserves, or is
 * told why it waits. */
static void refused(struct gq_pass *p, const struct gq_pass_cohort *k,
                    size_t ti, const struct gq_pass_job *v, int rc,
                    const struct gq_assignment *a, uint64_t key, int search,
                    struct gq_plan *pl)
{
  struct cohort *cs = &p->k;
  int64_t eta = -1;
  int set_eta = 0;

  if (v->has_resv && v->victims_left > 0) {
    /* its victims are still checkpointing: it waits for them */
    cs->blocked[ti] = 1;
    if (rc == GQ_EQUOTA)
      cs->stop[ti] = 1;
    plan_status(pl, v->ref, "WaitingForPreemption", 0, 0, "waiting for %d "
                "preempted job(s) to checkpoint and release their GPUs",
                v->victims_left);
    return;
  }
  if (v->has_resv) /* its victims are gone and it still does not fit */
    plan_step(pl, GQ_PLAN_UNRESERVE, 0, v->ref);
  if (search && try_preempt(p, k, ti, v, rc, a, pl)) {
    cs->blocked[ti] = 1;
    if (rc == GQ_EQUOTA)
      cs->stop[ti] = 1;
    p->blocked_capacity = pl->blocked_capacity = 1;
  } else if (rc == GQ_ECAPACITY) {
    p->blocked_capacity = pl->blocked_capacity = 1;
    shape_fail(p, key);
    if (!cs->blocked[ti]) {
      cs->blocked[ti] = 1;
      set_eta = reserve(p, v, a->flavor, &eta);
    } else if (++cs->scanned[ti] >= p->lim.bf_max) {
      cs->stop[ti] = 1;
    }
    plan_status(pl, v->ref, "WaitingForCapacity", set_eta, eta, "%s", cs->why);
  } else {
    quota_refused(p, k, ti, v, rc, a, pl);
  }
}

/* ---- the cohort loop ---------------------------------------------- */

/* 4. nominate: v's quota line and nodes (into p->k.out). A job that may
 * backfill (bf) may use the forecasts' reservations, a preemptor what is
 * reserved for it; both are committed again unless it was admitted into
 * its own. */
static int nominate(struct gq_pass *p, size_t ti, const struct gq_pass_job *v,
                    int bf, struct gq_assignment *a)
{
  struct cohort *cs = &p->k;
  int rc;

  out_room(cs, v->spec->replicas);
  if (bf)
    toggle_owned(p, NULL, -1);
  if (v->has_resv)
    toggle_owned(p, v->ref, -1);
  rc = gq_assign_job(p->s, v->spec, cs->tq, cs->n, ti, cs->use, cs->n_use, a,
                     cs->out, cs->why, sizeof(cs->why));
  if (rc != 0 && v->has_resv)
    toggle_owned(p, v->ref, 1);
  if (bf)
    toggle_owned(p, NULL, 1);
  return rc;
}

/* What refused() will need for v that the caller has not given yet. */
static int wants(const struct gq_pass *p, const struct gq_pass_cohort *k,
                 size_t ti, const struct gq_pass_job *v, int rc, int search)
{
  int need = 0;

  if (search && !k->cands_set)
    need |= GQ_PASS_NEED_CANDS;
  /* a failed search leads to the forecast: asked for with the candidates */
  if (rc == GQ_ECAPACITY && !(v->has_resv && v->victims_left > 0) &&
      !p->k.blocked[ti] && p->forecasts < p->lim.forecasts_max &&
      !p->rel_set)
    need |= GQ_PASS_NEED_RELEASES;
  return need;
}

static void advance(struct gq_pass *p, size_t ti)
{
  p->tries++;
  p->k.heads[ti]++;
}

/* A job in Preempting keeps its place in its team's queue (DESIGN §5): if
 * it goes before its team's head, the capacity where it would run now is
 * reserved for it for this pass, so that no lower job (of any team) takes
 * what frees while its old pods checkpoint; once they are gone it is
 * queued again at that place and admitted there. */
static void draining_resv(struct gq_pass *p, const struct gq_pass_cohort *k)
{
  struct cohort *cs = &p->k;

  for (size_t i = 0; i < k->n_draining; i++) {
    const struct gq_pass_draining *d = &k->draining[i];
    const struct gq_gpujob *j = d->spec;
    const struct gq_pass_job *head;
    const char *flavor;

    if (!j || d->team >= k->n_teams || j->suspend)
      continue;
    head = k->teams[d->team].n_queued ? &k->teams[d->team].jobs[0] : NULL;
    if (head && gq_qorder_before(
                    &(struct gq_qorder){head->priority, head->level,
                                        head->queued_ms, NULL},
                    &(struct gq_qorder){d->priority, d->level, d->queued_ms,
                                        NULL}))
      continue; /* not the best waiting job of its team */
    flavor = d->flavor_key ? strrchr(d->flavor_key, ':') : NULL;
    flavor = flavor ? flavor + 1 : d->flavor_key;
    out_room(cs, j->replicas);
    if (gq_place_job(p->s, j, flavor, cs->out, NULL, 0) == 0)
      for (int32_t r = 0; r < j->replicas; r++)
        resv_add(p, node_name(p, cs->out[r]), j, d->ref);
  }
}

/* One job of the cohort: returns STEP, GQ_PASS_DONE (the cohort is done)
 * or what it needs (nothing changed then). */
static int cohort_step(struct gq_pass *p, const struct gq_pass_cohort *k,
                       struct gq_plan *pl, size_t *need_team)
{
  struct cohort *cs = &p->k;
  const struct gq_pass_job *v;
  struct gq_assignment a;
  size_t ti, cnt = 0;
  int bf, rc, need, search = 0;
  uint64_t key;

  if ((need = heads_want(p, k, need_team)) != 0) /* 1. heads */
    return need;
  if (!cs->drained) { /* 2. snapshot: jobs in Preempting keep capacity */
    draining_resv(p, k);
    cs->drained = 1;
    cs->resv = 0;
  }
  gq_quota_order(&cs->qc, cs->want, cs->order, &cnt); /* 3. order */
  if (cnt == 0)
    return GQ_PASS_DONE;
  if (p->tries >= p->lim.tries_max || p->admits >= p->lim.admits_max) {
    p->tries++;
    p->again = pl->again = 1;
    return GQ_PASS_DONE;
  }
  ti = cs->order[0];
  v = &k->teams[ti].jobs[cs->heads[ti]];
  if (!v->spec) {
    advance(p, ti);
    return STEP;
  }
  bf = p->resv_min >= 0 &&
       gq_forecast_backfill_allowed(p->now_ms, v->spec->expected_duration_s,
                                    p->resv_min);
  key = ((uint64_t)v->shape << 32) ^ ((uint64_t)ti << 1) ^ (uint64_t)bf;
  if (shape_failed(p, key)) { /* capacity only shrinks within a pass */
    advance(p, ti);
    if (cs->blocked[ti] && ++cs->scanned[ti] >= p->lim.bf_max)
      cs->stop[ti] = 1;
    return STEP;
  }
  rc = nominate(p, ti, v, bf, &a); /* 4. nominate */
  if (rc != 0) {
    search = searchable(p, k, ti, v, rc, &a);
    if ((need = wants(p, k, ti, v, rc, search)) != 0)
      return need;
  }
  advance(p, ti);
  if (rc == 0) /* 5. admit, or preempt, reserve, say why */
    admit_job(p, ti, v, &a, pl);
  else
    refused(p, k, ti, v, rc, &a, key, search, pl);
  return STEP;
}

/* One step of a cohort's decision: STEP, GQ_PASS_DONE or a need. */
typedef int (*step_fn)(struct gq_pass *p, const struct gq_pass_cohort *k,
                       struct gq_plan *pl, size_t *need_team);

/* Takes steps until cohort k is decided or needs input. */
static enum gq_pass_need cohort_run(struct gq_pass *p,
                                    const struct gq_pass_cohort *k,
                                    struct gq_plan *pl, size_t *need_team,
                                    step_fn step)
{
  int rc;

  if (!p->k.active)
    cohort_begin(p, k, pl);
  while ((rc = step(p, k, pl, need_team)) == STEP)
    ;
  if (rc != GQ_PASS_DONE)
    return (enum gq_pass_need)rc;
  cohort_end(p); /* 6. requeue the rest: they stay queued */
  return GQ_PASS_DONE;
}

enum gq_pass_need gq_pass_cohort(struct gq_pass *p,
                                 const struct gq_pass_cohort *k,
                                 struct gq_plan *pl, size_t *need_team)
{
  return cohort_run(p, k, pl, need_team, cohort_step);
}

/* ---- the FIFO baseline ---------------------------------------------- */

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

/* 1. heads: the cohort's first job in queue-time order (then uid) into
 * *ti, NULL when every queue is done; GQ_PASS_NEED_JOBS via *need. */
static const struct gq_pass_job *fifo_head(struct gq_pass *p,
                                           const struct gq_pass_cohort *k,
                                           size_t *ti, size_t *need_team,
                                           int *need)
{
  const struct gq_pass_job *best = NULL;

  for (size_t i = 0; i < k->n_teams; i++) {
    const struct gq_pass_team *t = &k->teams[i];
    const struct gq_pass_job *h;

    if (p->k.heads[i] >= t->n_queued)
      continue;
    if (p->k.heads[i] >= t->n_jobs) {
      *need_team = i;
      *need = GQ_PASS_NEED_JOBS;
      return NULL;
    }
    h = &t->jobs[p->k.heads[i]];
    if (!best || h->queued_ms < best->queued_ms ||
        (h->queued_ms == best->queued_ms && strcmp(h->uid, best->uid) < 0)) {
      best = h;
      *ti = i;
    }
  }
  return best;
}

static int fifo_step(struct gq_pass *p, const struct gq_pass_cohort *k,
                     struct gq_plan *pl, size_t *need_team)
{
  struct cohort *cs = &p->k;
  const struct gq_quota_res *line;
  const struct gq_pass_job *v;
  struct gq_assignment a = {0};
  size_t ti = 0;
  int need = 0;

  if (!(v = fifo_head(p, k, &ti, need_team, &need)))
    return need ? need : GQ_PASS_DONE;
  cs->heads[ti]++;
  if (!v->spec)
    return STEP;
  if (!(line = fifo_line(k->teams[ti].quota, v->spec))) {
    plan_status(pl, v->ref, "NoMatchingQuota", 1, -1, "team '%s' has no "
                "quota line for resource %s and this job's products",
                k->teams[ti].name, v->spec->gpu_resource);
    return STEP;
  }
  out_room(cs, v->spec->replicas);
  if (gq_place_job(p->s, v->spec, line->flavor, cs->out, cs->why,
                   sizeof(cs->why)) == 0) {
    a.line = (size_t)(line - k->teams[ti].quota->res);
    a.flavor = line->flavor;
    a.verdict = GQ_Q_FITS_NOMINAL;
    gq_assign_flavor_key(v->spec->gpu_resource, line->flavor, a.key,
                         sizeof(a.key));
    plan_admission(p, pl, v, ti, &a);
    return STEP;
  }
  p->blocked_capacity = pl->blocked_capacity = 1;
  plan_status(pl, v->ref, "WaitingForCapacity", 1, -1, "first in the FIFO "
              "queue: %s", cs->why);
  return GQ_PASS_DONE; /* the head blocks everything behind it */
}

enum gq_pass_need gq_pass_fifo(struct gq_pass *p,
                               const struct gq_pass_cohort *k,
                               struct gq_plan *pl, size_t *need_team)
{
  return cohort_run(p, k, pl, need_team, fifo_step);
}
