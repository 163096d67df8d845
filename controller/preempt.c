/* controller/preempt.c - preemption decisions (see preempt.h). */
#include "controller/preempt.h"

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

/* Takes candidate c out of (sign -1) or back into (+1) the snapshot and
 * the ledger copy. */
static void apply(struct gq_snapshot *s, struct gq_ledger_use *use,
                  size_t n_use, const struct gq_preempt_cand *c, int sign)
{
  struct gq_ledger_use *u = use_of(use, n_use, c->team, c->key);

  for (size_t i = 0; i < c->n_pods; i++)
    gq_snapshot_commit(s, c->nodes[i], c->reqs[i], sign);
  if (u)
    u->gpus += sign * c->gpus;
}

/* 1 if candidate c may be a victim by the static rules (preemptible,
 * withinTeam, reclaimFromCohort and priority). */
static int allowed(const struct gq_preempt_ask *ask,
                   const struct gq_preempt_cand *c)
{
  const struct gq_teamquota *q = ask->teams[ask->team];

  if (!c->preemptible)
    return 0;
  if (c->team == ask->team)
    return q->within_team == GQ_WITHIN_LOWER_PRIORITY &&
           c->priority < ask->priority;
  if (q->reclaim == GQ_RECLAIM_NEVER)
    return 0;
  return q->reclaim == GQ_RECLAIM_ANY || c->priority < ask->priority;
}

/* Victim order: lowest priority, then fewest GPU-seconds at risk. */
static int goes_first(const struct gq_preempt_cand *a,
                      const struct gq_preempt_cand *b)
{
  if (a->priority != b->priority)
    return a->priority < b->priority;
  return a->at_risk < b->at_risk;
}

struct trial {
  const struct gq_preempt_ask *ask;
  struct gq_ledger_use *use;
  const struct gq_preempt_cand *cand;
  const char *taken; /* per candidate: removed now */
};

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

int gq_preempt_select(const struct gq_preempt_ask *ask,
                      const struct gq_preempt_cand *cand, size_t n,
                      size_t *victims, struct gq_assignment *a, size_t *out)
{
  struct gq_ledger_use *use = gq_xcalloc(ask->n_use + 1, sizeof(*use));
  char *taken = gq_xcalloc(n + 1, 1);
  size_t *order = gq_xcalloc(n + 1, sizeof(*order));
  size_t n_order = 0, n_v = 0;
  struct trial t = {ask, use, cand, taken};
  int ok;

  if (ask->n_use) /* use may be NULL then */
    memcpy(use, ask->use, ask->n_use * sizeof(*use));
  if (fits(&t, n, a, out)) {
    free(use);
    free(taken);
    free(order);
    return 0;
  }
  for (size_t i = 0; i < n; i++) { /* insertion sort: stable */
    size_t k = n_order;

    if (!allowed(ask, &cand[i]))
      continue;
    while (k > 0 && goes_first(&cand[i], &cand[order[k - 1]])) {
      order[k] = order[k - 1];
      k--;
    }
    order[k] = i;
    n_order++;
  }
  ok = 0;
  for (size_t o = 0; o < n_order && !ok; o++) {
    const struct gq_preempt_cand *c = &cand[order[o]];

    if (c->team != ask->team) { /* only while its team is above nominal */
      struct gq_ledger_use *u = use_of(use, ask->n_use, c->team, c->key);

      if (!u || u->gpus <= nominal_of(ask->teams[c->team], c->key))
        continue;
    }
    apply(ask->s, use, ask->n_use, c, -1);
    taken[order[o]] = 1;
    victims[n_v++] = order[o];
    ok = fits(&t, n, a, out);
  }
  if (ok) /* spare every victim it can do without, the last chosen first */
    for (size_t v = n_v; v-- > 0;) {
      size_t i = victims[v];

      apply(ask->s, use, ask->n_use, &cand[i], 1);
      taken[i] = 0;
      if (fits(&t, n, a, out)) {
        memmove(victims + v, victims + v + 1, (n_v - v - 1) * sizeof(*victims));
        n_v--;
      } else {
        apply(ask->s, use, ask->n_use, &cand[i], -1);
        taken[i] = 1;
      }
    }
  if (ok) /* the placement and line for the final set of victims */
    ok = fits(&t, n, a, out);
  for (size_t i = 0; i < n; i++)
    if (taken[i])
      apply(ask->s, use, ask->n_use, &cand[i], 1);
  free(use);
  free(taken);
  free(order);
  return ok ? (int)n_v : GQ_ENOTFOUND;
}
