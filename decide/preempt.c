/* decide/preempt.c - preemption decisions (see preempt.h). */
#include "decide/preempt.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"

int64_t gq_preempt_at_risk(int64_t now_ms, int64_t start_ms, int64_t ckpt_ms,
                           int64_t interval_s, int64_t gpus)
{
  int64_t base = start_ms;

  if (start_ms <= 0 || now_ms <= start_ms)
    return 0;
  if (ckpt_ms > base && ckpt_ms <= now_ms)
    base = ckpt_ms;
  if (interval_s > 0) {
    int64_t step = interval_s * 1000;
    int64_t periodic = start_ms + (now_ms - start_ms) / step * step;

    if (periodic > base)
      base = periodic;
  }
  return (now_ms - base) / 1000 * gpus;
}

/* Team t's nominal GPUs of the line whose ledger key is key (0 if it has
 * no such line: all its use of that key is above nominal). */
static int64_t nominal_of(const struct gq_teamquota *q, const char *key)
{
  char k[GQ_FLAVOR_KEY_MAX];

  for (size_t i = 0; q && i < q->n_res; i++) {
    gq_assign_flavor_key(q->res[i].resource, q->res[i].flavor, k, sizeof(k));
    if (!strcmp(k, key))
      return q->res[i].nominal;
  }
  return 0;
}

static struct gq_ledger_use *use_of(struct gq_ledger_use *use, size_t n,
                                    size_t team, const char *key)
{
  for (size_t i = 0; i < n; i++)
    if (use[i].team == team && !strcmp(use[i].flavor, key))
      return &use[i];
  return NULL;
}

/* 1 if use u (may be NULL) is above its team's nominal quota of its
 * flavor key: borrowed GPUs, or the excess after a quota was lowered. */
static int over_nominal(const struct gq_preempt_ask *ask,
                        const struct gq_ledger_use *u)
{
  return u && u->gpus > nominal_of(ask->teams[u->team], u->flavor);
}

int gq_preempt_may_reclaim(const struct gq_preempt_ask *ask)
{
  const struct gq_teamquota *q = ask->teams[ask->team];

  if (q->reclaim == GQ_RECLAIM_NEVER)
    return 0;
  for (size_t i = 0; i < ask->n_use; i++) {
    const struct gq_ledger_use *u = &ask->use[i];

    if (u->team != ask->team && u->team < ask->n_teams &&
        over_nominal(ask, u))
      return 1;
  }
  return 0;
}

struct trial {
  const struct gq_preempt_ask *ask;
  struct gq_ledger_use *use;
  const struct gq_preempt_cand *cand;
  char *taken;     /* per candidate: removed now */
  int64_t *slots;  /* per node: whole replicas of the preemptor it holds */
  int64_t total;   /* their sum */
};

/* Node i's room for replicas of the preemptor, in its GPU resource. */
static int64_t node_slots(const struct trial *t, size_t i)
{
  const struct gq_gpujob *j = t->ask->j;
  int64_t f = gq_snapshot_available(t->ask->s, i, j->gpu_resource);

  return f > 0 ? f / j->gpus_per_replica : 0;
}

/* Takes candidate i out of (sign -1) or back into (+1) the snapshot and
 * the ledger copy. */
static void apply(struct trial *t, size_t i, int sign)
{
  const struct gq_preempt_cand *c = &t->cand[i];
  struct gq_ledger_use *u = use_of(t->use, t->ask->n_use, c->team, c->key);

  for (size_t p = 0; p < c->n_pods; p++) {
    long k = gq_snapshot_find(t->ask->s, c->nodes[p]);

    gq_snapshot_commit(t->ask->s, c->nodes[p], c->reqs[p], sign);
    if (k >= 0) {
      t->total -= t->slots[k];
      t->slots[k] = node_slots(t, (size_t)k);
      t->total += t->slots[k];
    }
  }
  if (u)
    u->gpus += sign * c->gpus;
  t->taken[i] = sign < 0;
}

/* 1 if candidate c may be a victim by the static rules (preemptible,
 * withinTeam, reclaimFromCohort and priority). */
static int allowed(const struct gq_preempt_ask *ask,
                   const struct gq_preempt_cand *c)
{
  const struct gq_teamquota *q = ask->teams[ask->team];

  if (!c->preemptible)
    return 0;
  if (ask->demote_only && c->team != ask->team)
    return 0;
  if (c->team == ask->team)
    return q->within_team == GQ_WITHIN_LOWER_PRIORITY &&
           ((c->priority < ask->priority && !ask->demote_only) ||
            (ask->las && c->priority == ask->priority && c->demotable &&
             c->level > ask->level && c->gpus <= ask->j->gpus));
  if (q->reclaim == GQ_RECLAIM_NEVER)
    return 0;
  return q->reclaim == GQ_RECLAIM_ANY || c->priority < ask->priority;
}

/* 1 if the preemptor fits now; a cross-team victim requires its admission
 * to be within nominal. */
static int fits(const struct trial *t, size_t n, struct gq_assignment *a,
                size_t *out)
{
  const struct gq_preempt_ask *ask = t->ask;
  int cross = 0;

  for (size_t i = 0; i < n; i++)
    cross |= t->taken[i] && t->cand[i].team != ask->team;
  if (gq_assign_job(ask->s, ask->j, ask->teams, ask->n_teams, ask->team,
                    t->use, ask->n_use, a, out, NULL, 0) != 0)
    return 0;
  return !cross || a->verdict == GQ_Q_FITS_NOMINAL;
}

/* Candidate order (lowest priority, then highest level, then least at
 * risk, then index). */
struct ord {
  int32_t priority;
  int level;
  int64_t at_risk;
  size_t i;
};

static int ord_cmp(const void *x, const void *y)
{
  const struct ord *a = x, *b = y;

  if (a->priority != b->priority)
    return a->priority < b->priority ? -1 : 1;
  if (a->level != b->level)
    return a->level > b->level ? -1 : 1;
  if (a->at_risk != b->at_risk)
    return a->at_risk < b->at_risk ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

/* A cheap necessary condition for the gang to fit: the snapshot has room
 * for j->replicas replicas of its GPU resource, counted node by node
 * (every other rule is gq_assign_job's). */
static int room(const struct trial *t)
{
  return t->total >= t->ask->j->replicas;
}

/* 1 if candidate c has a pod on one of the nodes out[0..k-1] of s. */
static int on_nodes(const struct gq_snapshot *s, const struct gq_preempt_cand *c,
                    const size_t *out, int32_t k)
{
  for (size_t p = 0; p < c->n_pods; p++)
    for (int32_t r = 0; r < k; r++)
      if (!strcmp(c->nodes[p], s->nodes[out[r]].node->meta.name))
        return 1;
  return 0;
}

/* Puts back the victims it can do without (see preempt.h), updating
 * victims[] and *n_v; a and out stay a valid answer. */
static void spare(struct trial *t, size_t n, size_t *victims, size_t *n_v,
                  struct gq_assignment *a, size_t *out)
{
  const struct gq_preempt_ask *ask = t->ask;
  int32_t k = ask->j->replicas;
  size_t m = 0;
  char *off = gq_xcalloc(*n_v + 1, 1);

  /* first those with no pod where it would go, all together */
  for (size_t v = 0; v < *n_v; v++)
    if (!on_nodes(ask->s, &t->cand[victims[v]], out, k)) {
      off[v] = 1;
      apply(t, victims[v], 1);
    }
  if (!fits(t, n, a, out)) /* quota needed some of them: one by one */
    for (size_t v = 0; v < *n_v; v++)
      if (off[v]) {
        apply(t, victims[v], -1);
        off[v] = 0;
      }
  for (size_t v = *n_v; v-- > 0;) { /* then each, the last chosen first */
    size_t i = victims[v];

    if (off[v])
      continue;
    apply(t, i, 1);
    if (room(t) && fits(t, n, a, out))
      off[v] = 1;
    else
      apply(t, i, -1);
  }
  for (size_t v = 0; v < *n_v; v++)
    if (!off[v])
      victims[m++] = victims[v];
  *n_v = m;
  free(off);
}

int gq_preempt_select(const struct gq_preempt_ask *ask,
                      const struct gq_preempt_cand *cand, size_t n,
                      size_t *victims, struct gq_assignment *a, size_t *out)
{
  struct gq_ledger_use *use = gq_xcalloc(ask->n_use + 1, sizeof(*use));
  char *taken = gq_xcalloc(n + 1, 1);
  struct ord *order = gq_xcalloc(n + 1, sizeof(*order));
  size_t n_order = 0, n_v = 0;
  struct trial t = {ask, use, cand, taken, NULL, 0};
  int ok = 0;

  if (ask->n_use) /* use may be NULL then */
    memcpy(use, ask->use, ask->n_use * sizeof(*use));
  if (fits(&t, n, a, out)) {
    free(use);
    free(taken);
    free(order);
    return 0;
  }
  t.slots = gq_xcalloc(ask->s->n + 1, sizeof(*t.slots));
  for (size_t i = 0; i < ask->s->n; i++)
    t.total += t.slots[i] = node_slots(&t, i);
  for (size_t i = 0; i < n; i++)
    if (allowed(ask, &cand[i]))
      order[n_order++] = (struct ord){cand[i].priority, cand[i].level,
                                      cand[i].at_risk, i};
  qsort(order, n_order, sizeof(*order), ord_cmp);
  for (size_t o = 0; o < n_order && !ok; o++) {
    const struct gq_preempt_cand *c = &cand[order[o].i];

    if (c->team != ask->team) { /* only while its team is above nominal */
      if (!over_nominal(ask, use_of(use, ask->n_use, c->team, c->key)))
        continue;
    }
    apply(&t, order[o].i, -1);
    victims[n_v++] = order[o].i;
    ok = room(&t) && fits(&t, n, a, out);
  }
  if (ok) {
    spare(&t, n, victims, &n_v, a, out);
    ok = fits(&t, n, a, out); /* the placement for the final set */
  }
  for (size_t i = 0; i < n; i++)
    if (taken[i])
      apply(&t, i, 1);
  free(use);
  free(taken);
  free(order);
  free(t.slots);
  return ok ? (int)n_v : GQ_ENOTFOUND;
}
