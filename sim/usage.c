/* sim/usage.c - GPU-hours per team (see usage.h). */
#include "sim/usage.h"

#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>

void gq_sim_usage_init(struct gq_sim_usage_ledger *l)
{
  memset(l, 0, sizeof(*l));
}

void gq_sim_usage_release(struct gq_sim_usage_ledger *l)
{
  struct gq_sim_usage_team *t, *tmp;

  HASH_ITER(hh, l->teams, t, tmp) {
    HASH_DEL(l->teams, t);
    free(t->team);
    free(t);
  }
  gq_sim_usage_init(l);
}

static void sum(struct gq_sim_usage *to, const struct gq_sim_usage *u)
{
  to->alloc_s += u->alloc_s;
  to->used_s += u->used_s;
  to->idle_s += u->idle_s;
}

void gq_sim_usage_add(struct gq_sim_usage_ledger *l, const char *team,
                      const struct gq_sim_usage *u)
{
  struct gq_sim_usage_team *t;

  sum(&l->total, u);
  if (!team || !*team)
    return;
  HASH_FIND_STR(l->teams, team, t);
  if (!t) {
    t = gq_xcalloc(1, sizeof(*t));
    t->team = gq_xstrdup(team);
    HASH_ADD_KEYPTR(hh, l->teams, t->team, strlen(t->team), t);
  }
  sum(&t->u, u);
}

void gq_sim_usage_add_run(struct gq_sim_usage_ledger *l, const char *team,
                          const struct gq_sim_gpuutil *util, int64_t gpus,
                          int64_t from_ms, int64_t to_ms, double idle_pct)
{
  struct gq_sim_usage u = {0, 0, 0};

  if (gpus <= 0 || to_ms <= from_ms)
    return;
  gq_sim_gpuutil_integrate(util, from_ms, to_ms, (double)gpus,
                           idle_pct / 100.0, &u);
  gq_sim_usage_add(l, team, &u);
}

const struct gq_sim_usage *gq_sim_usage_team(
    const struct gq_sim_usage_ledger *l, const char *team)
{
  struct gq_sim_usage_team *t;

  HASH_FIND_STR(l->teams, team, t);
  return t ? &t->u : NULL;
}
