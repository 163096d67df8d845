/* controller/ledger.c - Redis from what the objects show (DESIGN §6): the
 * rebuild of each cohort's queues and ledger after Redis (re)connects or
 * drifts, and the periodic audit that compares the ledger with the
 * admitted use the controller counts. */
#include "controller/ctl_int.h"

#include "base/alloc.h"
#include "base/err.h"
#include "base/log.h"
#include "queue/rebuild.h"

#include <stdlib.h>
#include <string.h>

static const struct gq_lc lc = {"controller", "ledger", NULL};

/* ---- rebuild: Redis from what the objects show (DESIGN §6) -------------- */

struct rb_ctx {
  struct ctl *c;
  struct ccohort *k;
  char *team; /* one team of the cohort: the ledger read names one */
};

static void rb_ver(int rc, long long version, const struct gq_ledger_use *use,
                   size_t n, void *arg)
{
  struct rb_ctx *x = arg;

  (void)use;
  (void)n;
  ctl_write_end(x->c);
  x->k->rebuilding = 0;
  if (rc == 0) {
    x->k->ver = version;
    x->k->rebuilt = 1;
    las_load(x->c, x->k->redis_cohort, x->team);
  } else {
    GQ_LOG(GQ_WARN, &lc, "ledger read of cohort %s failed: %s", x->k->name,
           gq_strerror(rc));
  }
  ctl_schedule_pass(x->c);
  free(x->team);
  free(x);
}

static void rb_done(int rc, const struct gq_rb_drift *d, void *arg)
{
  struct rb_ctx *x = arg;
  struct ctl *c = x->c;
  const char *team = x->team;
  const char *labels[] = {x->k->name};

  ctl_write_end(c);
  if (rc != 0) {
    const char *l[] = {"rebuild"};

    gq_metric_add(c->m_redis_errors, l, 1);
    GQ_LOG(GQ_WARN, &lc, "rebuild of cohort %s failed: %s", x->k->name,
           gq_strerror(rc));
    x->k->rebuilding = 0;
    free(x->team);
    free(x);
    return;
  }
  gq_metric_set(c->m_drift, labels, (double)d->gpus_diff);
  /* only queued jobs missing: those gpuq has not enqueued yet (start-up,
   * reconnect: the rebuild writes them, not one enqueue per job) */
  if (d->jobs_extra || d->jobs_changed || d->adms_missing || d->adms_extra ||
      d->gpus_diff)
    GQ_LOG(GQ_WARN, &lc, "ledger drift repaired in cohort %s: jobs missing=%lld"
           " extra=%lld changed=%lld, admissions missing=%lld extra=%lld, "
           "gpus=%lld", x->k->name, d->jobs_missing, d->jobs_extra,
           d->jobs_changed, d->adms_missing, d->adms_extra, d->gpus_diff);
  else if (d->jobs_missing)
    GQ_LOG(GQ_INFO, &lc, "queue of cohort %s written from the objects: %lld "
           "jobs", x->k->name, d->jobs_missing);
  if (d->jobs_old_layout)
    GQ_LOG(GQ_INFO, &lc, "cohort %s: %lld job hashes of an older gpuq's "
           "layout rewritten", x->k->name, d->jobs_old_layout);
  ctl_write_begin(c);
  if (gq_queue_ledger(&c->q, x->k->redis_cohort, &team, 1, rb_ver, x) != 0) {
    ctl_write_end(c);
    x->k->rebuilding = 0;
    free(x->team);
    free(x);
  }
}

/* Starts rebuilding cohort k from the cache: the jobs queued or holding an
 * admission, and their admissions. */
static void rebuild(struct ctl *c, struct ccohort *k)
{
  struct cteam *t, *tt;
  struct cjob *cj, *tmp;
  const char **teams = NULL;
  struct gq_rb_job *jobs = NULL;
  struct gq_rb_adm *adms = NULL;
  size_t nt = 0, nj = 0, na = 0, cj_cap = 0;
  struct rb_ctx *x;
  int rc;

  HASH_ITER(hh, c->teams, t, tt) {
    if (ctl_cohort(c, t->cohort, t->name) != k || !ctl_quota(c, t->name))
      continue;
    teams = gq_xrealloc(teams, (nt + 1) * sizeof(*teams));
    teams[nt++] = t->name;
  }
  HASH_ITER(hh, c->jobs, cj, tmp) {
    int held = cj->has_adm;

    if (cj->state != CJ_QUEUED && !held)
      continue;
    if (ctl_cohort(c, cj->cohort, cj->team) != k)
      continue;
    if (nj == cj_cap) {
      cj_cap = cj_cap ? 2 * cj_cap : 64;
      jobs = gq_xrealloc(jobs, cj_cap * sizeof(*jobs));
      adms = gq_xrealloc(adms, cj_cap * sizeof(*adms));
    }
    jobs[nj++] = (struct gq_rb_job){cj->uid, cj->team, cj->ns, cj->name,
                                    cj->priority, cj->queued_ms, held};
    if (held)
      adms[na++] = (struct gq_rb_adm){cj->uid, cj->team, cj->flavor,
                                      (long)cj->attempt, cj->gpus};
  }
  if (nt == 0) { /* no TeamQuota left in it: nothing to keep */
    k->rebuilt = 1;
    free(jobs);
    free(adms);
    return;
  }
  x = gq_xcalloc(1, sizeof(*x));
  x->c = c;
  x->k = k;
  x->team = gq_xstrdup(teams[0]);
  k->rebuilding = 1;
  ctl_write_begin(c);
  rc = gq_queue_rebuild(&c->q, k->redis_cohort, teams, nt, jobs, nj, adms, na,
                        1, rb_done, x);
  if (rc != 0) {
    ctl_write_end(c);
    k->rebuilding = 0;
    free(x->team);
    free(x);
  }
  free(teams);
  free(jobs);
  free(adms);
}

/* Makes sure every cohort with a TeamQuota has been rebuilt since Redis
 * (re)connected. Returns 1 when all are. */
int ledger_ready(struct ctl *c)
{
  struct cteam *t, *tt;
  int all = 1;

  HASH_ITER(hh, c->teams, t, tt) {
    struct ccohort *k;

    if (!ctl_quota(c, t->name))
      continue;
    k = ctl_cohort(c, t->cohort, t->name);
    if (k->rebuilt)
      continue;
    all = 0;
    /* not while admits or releases are in flight: the objects' side is
     * read now and Redis's over several round trips, so one applied
     * meanwhile would count as drift and be "repaired" back (and admits
     * refused after a stale one roll back first) */
    if (!k->rebuilding && !k->inflight && c->redis_ready)
      rebuild(c, k);
  }
  return all;
}

/* 1 while an admit or release script is in flight in some cohort. */
int ledger_admitting(const struct ctl *c)
{
  const struct ccohort *k, *tmp;

  HASH_ITER(hh, c->cohorts, k, tmp)
    if (k->inflight)
      return 1;
  return 0;
}

/* ---- the periodic ledger audit (DESIGN §4) ------------------------------ */

/* One cohort's ledger as the cache had it when the read was sent. */
struct audit_ctx {
  struct ctl *c;
  char *cohort;        /* ccohort name */
  long long ver;       /* k->ver then */
  char **teams;        /* owned */
  size_t nt;
  struct gq_ledger_use *use; /* flavors owned */
  size_t nu;
};

static void audit_free(struct audit_ctx *x)
{
  for (size_t i = 0; i < x->nt; i++)
    free(x->teams[i]);
  for (size_t i = 0; i < x->nu; i++)
    free((char *)x->use[i].flavor);
  free(x->teams);
  free(x->use);
  free(x->cohort);
  free(x);
}

/* |a - b| summed over every (team, flavor) of either list. */
static long long use_diff(const struct gq_ledger_use *a, size_t na,
                          const struct gq_ledger_use *b, size_t nb)
{
  long long d = 0;

  for (size_t i = 0; i < na; i++) {
    long long o = 0;

    for (size_t j = 0; j < nb; j++)
      if (b[j].team == a[i].team && !strcmp(b[j].flavor, a[i].flavor))
        o = b[j].gpus;
    d += a[i].gpus > o ? a[i].gpus - o : o - a[i].gpus;
  }
  for (size_t j = 0; j < nb; j++) {
    int found = 0;

    for (size_t i = 0; i < na && !found; i++)
      found = a[i].team == b[j].team && !strcmp(a[i].flavor, b[j].flavor);
    if (!found)
      d += b[j].gpus > 0 ? b[j].gpus : -b[j].gpus;
  }
  return d;
}

static void audit_read(int rc, long long version,
                       const struct gq_ledger_use *use, size_t n, void *arg)
{
  struct audit_ctx *x = arg;
  struct ctl *c = x->c;
  struct ccohort *k;
  long long d;

  ctl_write_end(c);
  HASH_FIND_STR(c->cohorts, x->cohort, k);
  if (rc != 0 || !k || !k->rebuilt || k->rebuilding) {
    audit_free(x);
    return;
  }
  d = use_diff(x->use, x->nu, use, n);
  if (d) {
    GQ_LOG(GQ_WARN, &lc, "ledger audit of cohort %s: Redis differs from the "
           "pods by %lld GPUs: rebuilding", k->name, d);
    k->rebuilt = 0; /* the rebuild exports the drift and repairs it */
    ctl_schedule_pass(c);
  } else {
    const char *labels[] = {k->name};

    GQ_LOG(GQ_DEBUG, &lc, "ledger audit of cohort %s: no drift (version "
           "%lld)", k->name, version);
    gq_metric_set(c->m_drift, labels, 0);
    if (version != x->ver && k->ver == x->ver && !k->inflight)
      k->ver = version; /* nothing sent since the read: Redis's is right */
  }
  audit_free(x);
}

/* Compares cohort k's ledger in Redis (one read) with the cache's use, as
 * of now: called only when no admit or release of k is in flight, and
 * Redis answers in order, so whatever is sent after the read cannot count
 * as drift. Admission goes on meanwhile; only a difference rebuilds. */
static void audit_cohort(struct ctl *c, struct ccohort *k)
{
  struct audit_ctx *x = gq_xcalloc(1, sizeof(*x));
  struct cteam *t, *tt;

  x->c = c;
  x->cohort = gq_xstrdup(k->name);
  x->ver = k->ver;
  HASH_ITER(hh, c->teams, t, tt) {
    if (ctl_cohort(c, t->cohort, t->name) != k || !ctl_quota(c, t->name))
      continue;
    x->teams = gq_xrealloc(x->teams, (x->nt + 1) * sizeof(*x->teams));
    for (size_t i = 0; i < t->n_use; i++) {
      if (!t->use[i].gpus)
        continue;
      x->use = gq_xrealloc(x->use, (x->nu + 1) * sizeof(*x->use));
      x->use[x->nu++] = (struct gq_ledger_use){
          x->nt, gq_xstrdup(t->use[i].key), t->use[i].gpus};
    }
    x->teams[x->nt++] = gq_xstrdup(t->name);
  }
  ctl_write_begin(c);
  if (x->nt == 0 ||
      gq_queue_ledger(&c->q, k->redis_cohort, (const char *const *)x->teams,
                      x->nt, audit_read, x) != 0) {
    ctl_write_end(c);
    audit_free(x);
  }
}

void ledger_audit(struct ctl *c)
{
  struct ccohort *k, *tmp;

  if (!ctl_acting(c) || !c->redis_ready)
    return;
  HASH_ITER(hh, c->cohorts, k, tmp)
    if (k->rebuilt && !k->inflight && !k->rebuilding)
      audit_cohort(c, k);
}
