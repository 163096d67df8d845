/* controller/las.c - attained-service scheduling and fair share over time
 * in the controller (decide/las.h holds the rules).
 *
 * - ctl_las(): a team's cohort policy's parameters, or NULL under
 *   fifo-backfill (and under --policy fifo). A cohort's policy is the
 *   spec.schedulingPolicy of the first of its TeamQuotas by name that sets
 *   one, else --scheduling; when it changes, the queued jobs' levels and
 *   the queue order follow (las_relevel).
 * - Fair share over time: each team's usage history (its admitted GPUs
 *   integrated with a half-life of --fair-share-half-life) is accrued on
 *   every tick, given to the pass as the mean GPUs it stands for, and
 *   saved in Redis (queue/queue.h P:{C}:fair) every FAIR_SAVE_MS, so a
 *   restarted controller (or a new leader) goes on from it: once a
 *   cohort's ledger is read after a connect, its teams' saved values are
 *   loaded, decayed to now and added to what was accrued meanwhile.
 * - Starvation protection: a queued job of a level above 0 that has
 *   waited starve_factor times its last run is promoted to level 0 (its
 *   counted service is reset), with an event.
 */
#include "controller/ctl_int.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"

#include <stdlib.h>
#include <string.h>

static const struct gq_lc lc = {"controller", "las", NULL};

#define FAIR_SAVE_MS 10000 /* real ms between two saves of the history */

/* The policy of q's cohort: the schedulingPolicy of the first team by
 * name of the cohort that sets one, else the controller's. */
static int cohort_sched(struct ctl *c, const struct gq_teamquota *q)
{
  const char *first = NULL;
  int sched = q->sched;
  struct cteam *t, *tt;

  if (!q->cohort)
    return sched >= 0 ? sched : (int)c->o.sched;
  if (sched >= 0)
    first = q->meta.name;
  HASH_ITER(hh, c->teams, t, tt) {
    const struct gq_teamquota *o = ctl_quota(c, t->name);

    if (o && o->sched >= 0 && o->cohort && !strcmp(o->cohort, q->cohort) &&
        (!first || strcmp(t->name, first) < 0)) {
      first = t->name;
      sched = o->sched;
    }
  }
  return sched >= 0 ? sched : (int)c->o.sched;
}

const struct gq_las *ctl_las(struct ctl *c, const char *team)
{
  const struct gq_teamquota *q = team ? ctl_quota(c, team) : NULL;
  int sched = q ? cohort_sched(c, q) : (int)c->o.sched;

  return sched == GQ_SCHED_ATTAINED && !c->o.fifo ? &c->o.las : NULL;
}

void las_relevel(struct ctl *c)
{
  struct cteam *t, *tt;

  HASH_ITER(hh, c->teams, t, tt) {
    const struct gq_las *las = ctl_las(c, t->name);
    int moved = 0;

    for (size_t i = 0; i < t->n; i++) {
      int level = gq_las_level(las, t->q[i]->service_s);

      moved |= level != t->q[i]->level;
      t->q[i]->level = level;
    }
    if (moved)
      store_queue_sort(t);
  }
}

static int64_t team_used(const struct cteam *t)
{
  int64_t g = 0;

  for (size_t i = 0; i < t->n_use; i++)
    g += t->use[i].gpus;
  return g;
}

/* Brings t's history to now_ms: its use since hist_ms accrued. */
static void accrue(struct ctl *c, struct cteam *t, int64_t now_ms)
{
  if (t->hist_ms && now_ms > t->hist_ms)
    t->hist_gpu_s = gq_fair_accrue(t->hist_gpu_s, team_used(t),
                                   now_ms - t->hist_ms, c->o.fair_half_life_s);
  if (!t->hist_ms || now_ms > t->hist_ms)
    t->hist_ms = now_ms;
}

double las_team_mean_gpus(struct ctl *c, struct cteam *t)
{
  if (c->o.fair_half_life_s <= 0)
    return 0;
  accrue(c, t, gq_clock_now_ms());
  return gq_fair_mean_gpus(t->hist_gpu_s, c->o.fair_half_life_s);
}

static void saved(int rc, const char *state, long long value, void *arg)
{
  struct ctl *c = arg;

  (void)state;
  (void)value;
  ctl_write_end(c);
  if (rc != 0)
    GQ_LOG(GQ_DEBUG, &lc, "fair-share history save failed: %s",
           gq_strerror(rc));
}

/* Saves every loaded team's history (HSET each). */
static void fair_save(struct ctl *c, int64_t now_ms)
{
  struct cteam *t, *tt;

  HASH_ITER(hh, c->teams, t, tt) {
    if (!t->hist_loaded || !ctl_quota(c, t->name))
      continue;
    accrue(c, t, now_ms);
    ctl_write_begin(c);
    if (gq_queue_fair_save(&c->q, t->cohort, t->name, t->hist_gpu_s,
                           t->hist_ms, saved, c) != 0)
      ctl_write_end(c);
  }
}

struct load_ctx {
  struct ctl *c;
  char *cohort; /* as the teams' TeamQuotas name it ("" none) */
  char *team;   /* the team, for a lone one */
};

static void loaded(int rc, const json_t *hash, void *arg)
{
  struct load_ctx *x = arg;
  struct ctl *c = x->c;
  int64_t now = gq_clock_now_ms();
  struct cteam *t, *tt;

  ctl_write_end(c);
  HASH_ITER(hh, c->teams, t, tt) {
    const char *v;
    double g;
    int64_t at;

    if (rc != 0 || t->hist_loaded || strcmp(t->cohort, x->cohort) ||
        (!*x->cohort && strcmp(t->name, x->team)))
      continue;
    t->hist_loaded = 1;
    v = json_string_value(json_object_get(hash, t->name));
    if (!v)
      continue;
    if (gq_queue_fair_parse(v, &g, &at) != 0) {
      GQ_LOG(GQ_WARN, &lc, "fair-share history of team '%s' is malformed "
             "('%s', want GPU_S@MS): starting from none", t->name, v);
      continue;
    }
    accrue(c, t, now);
    t->hist_gpu_s += gq_fair_decay(g, now - at, c->o.fair_half_life_s);
  }
  if (rc != 0)
    GQ_LOG(GQ_WARN, &lc, "fair-share history of cohort '%s' not read: %s "
           "(read again at the next connect)", x->cohort, gq_strerror(rc));
  free(x->cohort);
  free(x->team);
  free(x);
}

void las_load(struct ctl *c, const char *cohort, const char *team)
{
  struct load_ctx *x;

  if (c->o.fair_half_life_s <= 0)
    return;
  x = gq_xcalloc(1, sizeof(*x));
  x->c = c;
  x->cohort = gq_xstrdup(cohort ? cohort : "");
  x->team = gq_xstrdup(team ? team : "");
  ctl_write_begin(c);
  if (gq_queue_fair_load(&c->q, x->cohort, x->team, loaded, x) != 0) {
    ctl_write_end(c);
    free(x->cohort);
    free(x->team);
    free(x);
  }
}

/* Promotes t's starved queued jobs to level 0 (decide/las.h). */
static void promote(struct ctl *c, const struct gq_las *las, struct cteam *t,
                    int64_t now_ms)
{
  struct cjob **up = NULL;
  size_t n = 0;

  for (size_t i = 0; i < t->n; i++) {
    struct cjob *cj = t->q[i];

    if (!gq_las_starved(las, cj->level, cj->requeued_ms, cj->last_run_ms,
                        now_ms))
      continue;
    up = gq_xrealloc(up, (n + 1) * sizeof(*up));
    up[n++] = cj;
  }
  for (size_t i = 0; i < n; i++) {
    struct cjob *cj = up[i];
    int from = cj->level;

    jobs_queue_del(c, cj);
    cj->service_s = 0;
    cj->level = 0;
    store_queue_insert(c, cj); /* level 0 now: an earlier place */
    status_event(c, cj, "Normal", "Promoted", "waited %llds since it was "
                 "requeued (more than %g times its last run of %llds): "
                 "promoted from attained-service level %d to 0",
                 (long long)((now_ms - cj->requeued_ms) / 1000),
                 las->starve_factor, (long long)(cj->last_run_ms / 1000),
                 from);
    status_flush(c, cj);
  }
  free(up);
}

void las_tick(struct ctl *c)
{
  int64_t now = gq_clock_now_ms(), mono = gq_clock_mono_ms();
  struct cteam *t, *tt;

  if (c->o.fair_half_life_s > 0) {
    HASH_ITER(hh, c->teams, t, tt)
      accrue(c, t, now);
    if (c->redis_ready && mono - c->fair_save_ms >= FAIR_SAVE_MS) {
      c->fair_save_ms = mono;
      fair_save(c, now);
    }
  }
  HASH_ITER(hh, c->teams, t, tt) {
    const struct gq_las *las = t->n ? ctl_las(c, t->name) : NULL;

    if (las && las->starve_factor > 0)
      promote(c, las, t, now);
  }
}
