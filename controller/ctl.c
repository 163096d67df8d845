/* controller/ctl.c - informers, the job cache, the Redis link, the pass
 * scheduler and the controller's lifecycle (see ctl.h). */
#include "controller/ctl_int.h"

#include "api/node.h"
#include "api/teamquota.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "queue/rebuild.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STOP_WAIT_MS 10000
#define TRIM_MS 10000            /* heap trims at most this often (real) */
#define TRIM_MIN (16u << 20)     /* and only with this many bytes free */
#define TICK_MS 500              /* deadline checks (real ms) */
#define TICK_MIN_MS 20           /* and at a deadline, at most this often:
                                    each check walks every admitted job */

static const struct gq_lc lc = {"controller", "ctl", NULL};

/* Every GpuJob gets a typed form (the informer keeps no JSON for them):
 * an invalid one carries the decoder's message (gq_gpujob_decode_invalid). */
static void *dec_job(const json_t *o, char *err, size_t len)
{
  struct gq_gpujob *j = gq_xcalloc(1, sizeof(*j));

  if (gq_gpujob_decode(o, j, err, len) != 0)
    gq_gpujob_decode_invalid(o, err, j);
  return j;
}
static void rel_job(void *p)
{
  gq_gpujob_release(p);
  free(p);
}
static void *dec_quota(const json_t *o, char *err, size_t len)
{
  struct gq_teamquota *q = gq_xcalloc(1, sizeof(*q));

  if (gq_teamquota_decode(o, q, err, len) == 0)
    return q;
  free(q);
  return NULL;
}
static void rel_quota(void *p)
{
  gq_teamquota_release(p);
  free(p);
}
static const char *g_product_label;
static void *dec_node(const json_t *o, char *err, size_t len)
{
  struct gq_node *n = gq_xcalloc(1, sizeof(*n));

  if (gq_node_decode(o, g_product_label, n, err, len) == 0)
    return n;
  free(n);
  return NULL;
}
static void rel_node(void *p)
{
  gq_node_release(p);
  free(p);
}
static void *dec_pod(const json_t *o, char *err, size_t len)
{
  struct gq_pod *p = gq_xcalloc(1, sizeof(*p));

  if (gq_pod_decode(o, p, err, len) == 0)
    return p;
  free(p);
  return NULL;
}
static void rel_pod(void *p)
{
  gq_pod_release(p);
  free(p);
}

/* ---- the cache ---------------------------------------------------------- */

const char *gq_meta_str(const json_t *o, const char *k)
{
  const char *v =
      json_string_value(json_object_get(json_object_get(o, "metadata"), k));
  return v ? v : "";
}

struct cjob *ctl_job(struct ctl *c, const char *uid)
{
  struct cjob *cj;

  HASH_FIND_STR(c->jobs, uid, cj);
  return cj;
}

static void mark(struct ctl *c, struct cjob *cj)
{
  if (!cj || cj->dirty)
    return;
  cj->dirty = 1;
  cj->dnext = c->dirty;
  c->dirty = cj;
  ctl_schedule_pass(c);
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

void ctl_mark(struct ctl *c, struct cjob *cj)
{
  mark(c, cj);
}

static struct cjob *job_for(struct ctl *c, const json_t *obj)
{
  const char *uid = gq_meta_str(obj, "uid");
  struct cjob *cj;

  if (!*uid)
    return NULL;
  cj = ctl_job(c, uid);
  if (!cj) {
    cj = ctl_job_new(c, uid, gq_meta_str(obj, "namespace"),
                     gq_meta_str(obj, "name"));
    /* arrival stamp, strictly increasing in watch (= creation) order:
     * adopt() orders jobs created within one second with it */
    cj->queued_ms = gq_clock_now_ms();
    if (cj->queued_ms <= c->last_arrival_ms)
      cj->queued_ms = c->last_arrival_ms + 1;
    c->last_arrival_ms = cj->queued_ms;
  }
  return cj;
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

/* ---- informer handlers ------------------------------------------------- */

static void job_add(const json_t *o, void *arg)
{
  mark(arg, job_for(arg, o));
}
static void job_update(const json_t *old, const json_t *o, void *arg)
{
  (void)old;
  mark(arg, job_for(arg, o));
}
static void job_del(const json_t *o, void *arg)
{
  struct ctl *c = arg;
  struct cjob *cj = ctl_job(c, gq_meta_str(o, "uid"));

  if (cj) {
    cj->gone = 1;
    mark(c, cj);
  }
}

static void mark_all(struct ctl *c, const char *team, const char *pclass)
{
  struct cjob *cj, *tmp;

  HASH_ITER(hh, c->jobs, cj, tmp) {
    const struct gq_gpujob *j;

    if (cj->state == CJ_DONE)
      continue;
    if (team && strcmp(cj->team, team) && *cj->team)
      continue;
    if (pclass) {
      j = ctl_job_spec(c, cj);
      if (!j || !j->priority_class || strcmp(j->priority_class, pclass))
        continue;
    }
    mark(c, cj);
  }
}

static void quota_changed(const json_t *o, void *arg)
{
  struct ctl *c = arg;
  const char *name = gq_meta_str(o, "name");
  struct cteam *t = ctl_team(c, name);
  const struct gq_teamquota *q = ctl_quota(c, name);
  const char *coh = q && q->cohort ? q->cohort : "";

  if (strcmp(t->cohort, coh)) { /* moved: both cohorts' keys change */
    ctl_cohort(c, t->cohort, name)->rebuilt = 0;
    ctl_cohort(c, coh, name)->rebuilt = 0;
    snprintf(t->cohort, sizeof(t->cohort), "%s", coh);
  }
  mark_all(c, name, NULL);
  ctl_schedule_pass(c);
}
static void quota_add(const json_t *o, void *arg)
{
  quota_changed(o, arg);
}
static void quota_update(const json_t *old, const json_t *o, void *arg)
{
  json_int_t g0 = json_integer_value(
                 json_object_get(json_object_get(old, "metadata"), "generation")),
             g1 = json_integer_value(
                 json_object_get(json_object_get(o, "metadata"), "generation"));

  /* a status-only update (gpuq's own TeamQuota status writes: the
   * generation is unchanged) changes nothing its jobs depend on: marking
   * every job of the team for each one made passes of thousands of
   * reconciles */
  if (g1 > 0 && g0 == g1)
    return;
  quota_changed(o, arg);
}

static void pc_changed(const json_t *o, void *arg)
{
  mark_all(arg, NULL, gq_meta_str(o, "name"));
}
static void pc_update(const json_t *old, const json_t *o, void *arg)
{
  (void)old;
  pc_changed(o, arg);
}

static void pod_mark(const json_t *o, void *arg)
{
  struct ctl *c = arg;
  const json_t *labels =
      json_object_get(json_object_get(o, "metadata"), "labels");
  const char *uid = json_string_value(json_object_get(labels, GQ_LBL_JOB_UID));

  if (uid)
    mark(c, ctl_job(c, uid));
  ctl_schedule_pass(c);
}
static void pod_key(const json_t *o, char *buf, size_t len)
{
  snprintf(buf, len, "%s/%s", gq_meta_str(o, "namespace"), gq_meta_str(o, "name"));
}

static void pod_add(const json_t *o, void *arg)
{
  struct ctl *c = arg;
  char key[600];

  pod_key(o, key, sizeof(key));
  jobs_pod_seen(c, o, 1);
  admit_pod(c, key, gq_informer_typed(c->inf_pods, key));
  pod_mark(o, arg);
}
static int pod_terminal(const json_t *o)
{
  const char *ph = json_string_value(
      json_object_get(json_object_get(o, "status"), "phase"));

  return ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"));
}
/* Capacity freed: a refill latency clock starts (the oldest unanswered
 * free is the one the next create answers; when the ring is full the
 * newest are not remembered). */
static void freed(struct ctl *c)
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

static void pod_update(const json_t *old, const json_t *o, void *arg)
{
  struct ctl *c = arg;

  if (!pod_terminal(old) && pod_terminal(o))
    freed(c);
  pod_add(o, arg);
}
static void pod_del(const json_t *o, void *arg)
{
  struct ctl *c = arg;
  char key[600];

  if (!pod_terminal(o))
    freed(c);
  pod_key(o, key, sizeof(key));
  jobs_pod_seen(arg, o, 0);
  admit_pod(c, key, NULL);
  pod_mark(o, arg);
}

static void node_changed(const json_t *o, void *arg)
{
  struct ctl *c = arg;
  const struct gq_node *n = gq_informer_typed(c->inf_nodes,
                                              gq_meta_str(o, "name"));

  if (n)
    disrupt_node(c, n);
  admit_nodes_changed(arg);
  ctl_schedule_pass(arg);
}
static void node_update(const json_t *old, const json_t *o, void *arg)
{
  (void)old;
  node_changed(o, arg);
}

static void synced(void *arg)
{
  struct ctl *c = arg;

  if (c->synced || !gq_informer_synced(c->inf_jobs) ||
      !gq_informer_synced(c->inf_quotas) || !gq_informer_synced(c->inf_nodes) ||
      !gq_informer_synced(c->inf_pods) || !gq_informer_synced(c->inf_pcs) ||
      !gq_informer_synced(c->inf_pdbs))
    return;
  c->synced = 1;
  GQ_LOG(GQ_INFO, &lc, "caches synced: %zu gpujobs, %zu teamquotas, "
         "%zu nodes, %zu pods", gq_informer_size(c->inf_jobs),
         gq_informer_size(c->inf_quotas), gq_informer_size(c->inf_nodes),
         gq_informer_size(c->inf_pods));
  mark_all(c, NULL, NULL);
  ctl_schedule_pass(c);
}

/* ---- Redis ------------------------------------------------------------- */

#define BACKEND_DOWN "QueueBackendUnavailable"

/* While Redis is down nothing is admitted (an admission is one atomic
 * script there); queued jobs say so instead of a stale reason, and get
 * their ordinary reason back once it is up (the next pass refines the
 * heads'). Running jobs are left alone (docs/scenarios.md, BC-27). */
static void queued_backend_state(struct ctl *c)
{
  struct cjob *cj, *tmp;

  if (c->redis_ready && !c->backend_down_shown)
    return; /* the usual case: nothing to do */
  c->backend_down_shown = !c->redis_ready;
  HASH_ITER(hh, c->jobs, cj, tmp) {
    int down = !strcmp(cj->reason, BACKEND_DOWN);

    if (cj->phase != GQ_PHASE_QUEUED || !cj->t || down == !c->redis_ready)
      continue;
    if (c->redis_ready)
      status_set(cj, "Queued", "waiting in team '%s''s queue", cj->team);
    else
      status_set(cj, BACKEND_DOWN, "the queue backend (Redis) is "
                 "unavailable: admission is paused until it is back; "
                 "running jobs are not affected");
    status_flush(c, cj);
  }
}

static void redis_state(struct gq_rq *r, int ready, const char *why,
                        void *arg)
{
  struct ctl *c = arg;
  struct ccohort *k, *tmp;

  (void)r;
  c->redis_ready = ready;
  gq_metric_set(c->m_redis_up, NULL, ready ? 1 : 0);
  if (ready) {
    GQ_LOG(GQ_INFO, &lc, "redis ready: rebuilding queues before admitting");
    HASH_ITER(hh, c->cohorts, k, tmp) k->rebuilt = 0;
    ctl_schedule_pass(c);
  } else {
    const char *labels[] = {"connection"};

    gq_metric_add(c->m_redis_errors, labels, 1);
    GQ_LOG(GQ_WARN, &lc, "redis down (%s): admission paused", why ? why : "");
  }
}

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
static int cohorts_ready(struct ctl *c)
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

/* ---- the pass ---------------------------------------------------------- */

/* 1 while an admit or release script is in flight in some cohort. */
static int admitting(const struct ctl *c)
{
  const struct ccohort *k, *tmp;

  HASH_ITER(hh, c->cohorts, k, tmp)
    if (k->inflight)
      return 1;
  return 0;
}

static void tick(uv_timer_t *tm);

static void run_pass(uv_timer_t *tm)
{
  struct ctl *c = tm->data;
  struct cjob *cj;
  int64_t next = -1;

  c->pass_scheduled = 0;
  if (!ctl_acting(c))
    return;
  while ((cj = c->dirty)) {
    c->dirty = cj->dnext;
    cj->dirty = 0;
    cj->dnext = NULL;
    jobs_reconcile(c, cj);
  }
  if (c->tick_due) {
    c->tick_due = 0;
    jobs_tick(c, gq_clock_now_ms(), &next);
    if (next >= 0) { /* the earliest limit is due before the next tick */
      int64_t d = gq_clock_to_real(gq_clock_get(), next) - gq_clock_real_ms();

      if (d < TICK_MS)
        uv_timer_start(&c->tick_timer, tick,
                       d > TICK_MIN_MS ? (uint64_t)d + 1 : TICK_MIN_MS,
                       TICK_MS);
    }
  }
  queued_backend_state(c);
  if (c->redis_ready && cohorts_ready(c))
    admit_pass(c);
  status_quotas(c);
  if (c->frees_n && !c->creating && !admitting(c))
    c->frees_n = 0; /* a pass saw them and nothing will be created for them */
}

void ctl_schedule_pass(struct ctl *c)
{
  if (c->pass_scheduled || c->stopping)
    return;
  c->pass_scheduled = 1;
  uv_timer_start(&c->pass_timer, run_pass, 0, 0);
}

/* Gives the free heap back to the OS. glibc keeps freed memory in its
 * arena, and the JSON the controller parses and drops (list pages, watch
 * events, responses: about 17 KB of heap per GpuJob object) is freed
 * between the long-lived records of the job cache, so those holes would
 * stay resident; malloc_trim(0) releases their whole pages
 * (madvise(MADV_DONTNEED)). At most every TRIM_MS, and only when at least
 * TRIM_MIN bytes and a quarter of the heap in use are free. */
static void trim_heap(struct ctl *c)
{
#ifdef __GLIBC__
  int64_t now = gq_clock_mono_ms(), t;
  struct mallinfo2 mi;

  if (now - c->trim_ms < TRIM_MS)
    return;
  c->trim_ms = now;
  mi = mallinfo2();
  if (mi.fordblks < TRIM_MIN || mi.fordblks < mi.uordblks / 4)
    return;
  malloc_trim(0);
  t = gq_clock_mono_ms() - now;
  GQ_LOG(t > 20 ? GQ_INFO : GQ_DEBUG, &lc, "heap: %zu bytes in use, %zu "
         "free returned to the OS in %lld ms", mi.uordblks, mi.fordblks,
         (long long)t);
#else
  (void)c;
#endif
}

/* Deadlines are checked every TICK_MS (real), not in every pass, and at
 * the earliest one's due time (run_pass re-arms the timer for it). */
static void tick(uv_timer_t *tm)
{
  struct ctl *c = tm->data;

  c->tick_due = 1;
  ctl_schedule_pass(c);
  trim_heap(c);
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

static void audit(uv_timer_t *tm)
{
  struct ctl *c = tm->data;
  struct ccohort *k, *tmp;

  if (!ctl_acting(c) || !c->redis_ready)
    return;
  HASH_ITER(hh, c->cohorts, k, tmp)
    if (k->rebuilt && !k->inflight && !k->rebuilding)
      audit_cohort(c, k);
}

static void sweep(uv_timer_t *tm)
{
  struct ctl *c = tm->data;

  if (ctl_acting(c)) {
    status_sweep(c);
    status_quotas(c); /* what the once-a-second limit held back */
  }
}

/* ---- leader election ---------------------------------------------------- */

static void lead_start(void *arg)
{
  struct ctl *c = arg;
  struct ccohort *k, *tmp;

  GQ_LOG(GQ_INFO, &lc, "became leader (%s)", c->o.identity);
  c->leading = 1;
  gq_metric_set(c->m_leader, NULL, 1);
  HASH_ITER(hh, c->cohorts, k, tmp) k->rebuilt = 0;
  mark_all(c, NULL, NULL);
  ctl_schedule_pass(c);
}

static void lead_stop(void *arg)
{
  struct ctl *c = arg;

  c->leading = 0;
  gq_metric_set(c->m_leader, NULL, 0);
  if (c->stopping)
    return;
  /* As client-go's controllers do: a process that lost its lease exits,
   * so that it restarts with a clean cache rather than act on a stale one. */
  GQ_LOG(GQ_ERROR, &lc, "lost leadership; exiting");
  _exit(1);
}

/* ---- lifecycle ---------------------------------------------------------- */

struct gq_ctl *gq_ctl_new(uv_loop_t *loop, struct gq_kclient *kc,
                          const struct gq_ctl_opts *o)
{
  struct ctl *c = gq_xcalloc(1, sizeof(*c));
  static const double wait_buckets[] = {1, 10, 60, 300, 900, 3600, 14400,
                                        43200, 86400, 259200};
  static const double lat_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                       0.025, 0.05, 0.1, 0.25, 1};
  const char *tf[] = {"team", "flavor"}, *tm[] = {"team"},
             *vb[] = {"verb"}, *op[] = {"op"}, *ch[] = {"cohort"};
  struct gq_metrics *m;

  c->loop = loop;
  c->kc = kc;
  c->o = *o;
  c->o.redis_url = gq_xstrdup(o->redis_url);
  c->o.redis_prefix = o->redis_prefix ? gq_xstrdup(o->redis_prefix) : NULL;
  c->o.product_label = gq_xstrdup(o->product_label ? o->product_label
                                                   : GQ_LABEL_GPU_PRODUCT);
  c->o.topology_key =
      gq_xstrdup(o->topology_key ? o->topology_key : GQ_TOPOLOGY_ZONE);
  c->o.drain_taints = gq_xstrdup(o->drain_taints ? o->drain_taints
                                                 : GQ_CTL_DRAIN_TAINTS);
  c->o.lease_ns = gq_xstrdup(o->lease_ns ? o->lease_ns : "gpuq-system");
  c->o.lease_name = gq_xstrdup(o->lease_name ? o->lease_name
                                             : "gpuq-controller");
  c->o.identity = gq_xstrdup(o->identity ? o->identity : "gpuq-controller");
  if (c->o.audit_s <= 0)
    c->o.audit_s = 60;
  if (c->o.sweep_ms <= 0)
    c->o.sweep_ms = 100;
  if (c->o.quota_status_ms <= 0)
    c->o.quota_status_ms = 1000;
  if (c->o.drain_wait_s <= 0)
    c->o.drain_wait_s = 3600;
  if (c->o.notready_timeout_s <= 0)
    c->o.notready_timeout_s = 300;
  g_product_label = c->o.product_label;
  uv_timer_init(loop, &c->pass_timer);
  uv_timer_init(loop, &c->tick_timer);
  uv_timer_init(loop, &c->sweep_timer);
  uv_timer_init(loop, &c->stop_timer);
  uv_timer_init(loop, &c->audit_timer);
  c->pass_timer.data = c->tick_timer.data = c->sweep_timer.data =
      c->stop_timer.data = c->audit_timer.data = c;

  m = c->metrics = o->metrics;
  c->m_pending = gq_metrics_gauge(m, "gpuq_pending_jobs",
      "Jobs waiting in the team's queue.", 1, tm);
  c->m_admitted_gpus = gq_metrics_gauge(m, "gpuq_admitted_gpus",
      "GPUs held by the team's admitted jobs, per quota flavor.", 2, tf);
  c->m_nominal = gq_metrics_gauge(m, "gpuq_nominal_gpus",
      "GPUs guaranteed to the team by its TeamQuota, per flavor.", 2, tf);
  c->m_borrowed = gq_metrics_gauge(m, "gpuq_borrowed_gpus",
      "GPUs the team uses above its nominal quota, per flavor.", 2, tf);
  c->m_wait = gq_metrics_histogram(m, "gpuq_queue_wait_seconds",
      "Time from queueing to admission (virtual seconds).", 1, tm,
      wait_buckets, sizeof(wait_buckets) / sizeof(wait_buckets[0]));
  c->m_adm_latency = gq_metrics_histogram(m, "gpuq_admission_latency_seconds",
      "Time from the pass that admitted a job to its last pod created (real "
      "seconds).", 1, tm, lat_buckets,
      sizeof(lat_buckets) / sizeof(lat_buckets[0]));
  c->m_gpu_seconds = gq_metrics_counter(m, "gpuq_allocated_gpu_seconds_total",
      "GPU-seconds held by the team's admitted jobs (virtual seconds), for "
      "cost reports.", 2, tf);
  c->m_admissions = gq_metrics_counter(m, "gpuq_admissions_total",
      "Jobs admitted.", 1, tm);
  c->m_api_errors = gq_metrics_counter(m, "gpuq_api_errors_total",
      "Kubernetes API requests that failed, by verb.", 1, vb);
  c->m_redis_errors = gq_metrics_counter(m, "gpuq_redis_errors_total",
      "Redis failures, by operation.", 1, op);
  c->m_drift = gq_metrics_gauge(m, "gpuq_ledger_drift_gpus",
      "GPUs by which the Redis ledger differed from the pods at the last "
      "audit (then repaired).", 1, ch);
  c->m_frag = gq_metrics_gauge(m, "gpuq_unusable_free_gpus",
      "Free GPUs that no queued job can use (fragmentation).", 0, NULL);
  c->m_lost_nodes = gq_metrics_gauge(m, "gpuq_nodes_gpus_below_capacity",
      "Ready nodes whose allocatable GPUs are below capacity.", 0, NULL);
  c->m_freed_to_create = gq_metrics_histogram(m,
      "gpuq_freed_to_create_seconds", "Time from the oldest pod freeing "
      "capacity (finished or gone) that no create has answered yet to the "
      "next pod create going on the wire to the API server, after the "
      "client's rate limit and window (real seconds; the server's own time "
      "is not in it).",
      0, NULL, lat_buckets, sizeof(lat_buckets) / sizeof(lat_buckets[0]));
  c->m_passes = gq_metrics_counter(m, "gpuq_admission_passes_total",
      "Admission passes run.", 0, NULL);
  c->m_leader = gq_metrics_gauge(m, "gpuq_leader", "1 while this replica "
      "acts (holds the lease, or runs without --leader-elect), else 0.",
      0, NULL);
  c->m_redis_up = gq_metrics_gauge(m, "gpuq_redis_up", "1 while the Redis "
      "connection is ready (connected, scripts loaded), else 0.", 0, NULL);
  gq_metric_set(c->m_leader, NULL, 0);
  gq_metric_set(c->m_redis_up, NULL, 0);
  disrupt_init(c);
  return (struct gq_ctl *)c;
}

void gq_ctl_start(struct gq_ctl *gc)
{
  struct ctl *c = (struct ctl *)gc;
  struct gq_rq_opts ro = {0};
  size_t ns;
  struct gq_informer_handlers hj = {job_add, job_update, job_del, synced,
                                    dec_job, rel_job};
  struct gq_informer_handlers hq = {quota_add, quota_update, quota_add, synced,
                                    dec_quota, rel_quota};
  struct gq_informer_handlers hn = {node_changed, node_update, node_changed,
                                    synced, dec_node, rel_node};
  struct gq_informer_handlers hp = {pod_add, pod_update, pod_del,
                                    synced, dec_pod, rel_pod};
  struct gq_informer_handlers hc = {pc_changed, pc_update, pc_changed, synced,
                                    NULL, NULL};
  struct gq_informer_handlers hd = {NULL, NULL, NULL, synced, NULL, NULL};
  struct gq_informer_opts io = {0};

  ro.url = c->o.redis_url;
  ro.scripts = gq_queue_scripts(&ns);
  ro.nscripts = ns;
  ro.on_state = redis_state;
  ro.arg = c;
  c->rq = gq_rq_new(c->loop, &ro);
  gq_queue_init(&c->q, c->rq, c->o.redis_prefix);

  io.path = "/apis/" GQ_GROUP "/" GQ_VERSION "/gpujobs";
  io.typed_only = 1; /* the compact job cache: no JSON tree per job */
  c->inf_jobs = gq_informer_start(c->kc, &io, &hj, c);
  io.typed_only = 0;
  io.path = "/apis/" GQ_GROUP "/" GQ_VERSION "/teamquotas";
  c->inf_quotas = gq_informer_start(c->kc, &io, &hq, c);
  io.path = "/api/v1/nodes";
  c->inf_nodes = gq_informer_start(c->kc, &io, &hn, c);
  io.path = "/api/v1/pods";
  c->inf_pods = gq_informer_start(c->kc, &io, &hp, c);
  io.path = "/apis/scheduling.k8s.io/v1/priorityclasses";
  c->inf_pcs = gq_informer_start(c->kc, &io, &hc, c);
  io.path = "/apis/policy/v1/poddisruptionbudgets";
  c->inf_pdbs = gq_informer_start(c->kc, &io, &hd, c);
  uv_timer_start(&c->tick_timer, tick, TICK_MS, TICK_MS);
  uv_timer_start(&c->audit_timer, audit, (uint64_t)c->o.audit_s * 1000,
                 (uint64_t)c->o.audit_s * 1000);
  uv_timer_start(&c->sweep_timer, sweep, (uint64_t)c->o.sweep_ms,
                 (uint64_t)c->o.sweep_ms);
  if (c->o.leader_elect) {
    struct gq_leader_opts lo = {0};

    lo.ns = c->o.lease_ns;
    lo.name = c->o.lease_name;
    lo.identity = c->o.identity;
    lo.on_start = lead_start;
    lo.on_stop = lead_stop;
    lo.arg = c;
    lo.release_on_cancel = 1;
    c->leader = gq_leader_start(c->kc, &lo);
  } else {
    gq_metric_set(c->m_leader, NULL, 1);
  }
}

int gq_ctl_ready(const struct gq_ctl *gc, char *msg, size_t len)
{
  const struct ctl *c = (const struct ctl *)gc;

  if (!c->synced)
    snprintf(msg, len, "informers not synced");
  else if (!c->redis_ready)
    snprintf(msg, len, "redis not ready: %s", gq_rq_last_error(c->rq));
  else
    return 1;
  return 0;
}

void gq_ctl_collect(struct gq_ctl *gc)
{
  status_metrics((struct ctl *)gc);
}

static void free_all(struct ctl *c)
{
  struct cjob *cj, *tj;
  struct cteam *t, *tt;
  struct ccohort *k, *tk;
  struct gq_cap_assumed *a, *ta;
  struct cstr *sx, *ts;

  c->sq_head[0] = c->sq_head[1] = c->sq_tail[0] = c->sq_tail[1] = NULL;
  HASH_ITER(hh, c->jobs, cj, tj) {
    HASH_DEL(c->jobs, cj);
    cj->sq = 0; /* the lanes are dropped whole */
    jobs_forget(c, cj);
  }
  HASH_ITER(hh, c->teams, t, tt) {
    HASH_DEL(c->teams, t);
    free(t->q);
    free(t->use);
    free(t->adm_prio);
    json_decref(t->qs_sent);
    free(t->name);
    free(t);
  }
  HASH_ITER(hh, c->cohorts, k, tk) {
    HASH_DEL(c->cohorts, k);
    free(k->name);
    free(k);
  }
  status_free(c);
  status_drop_events(c);
  admit_free(c);
  HASH_ITER(hh, c->cap.assumed, a, ta) {
    HASH_DEL(c->cap.assumed, a);
    free(a->key);
    free(a->node);
    gq_capacity_request_free(&a->req);
    free(a);
  }
  HASH_ITER(hh, c->strs, sx, ts) {
    HASH_DEL(c->strs, sx);
    free(sx);
  }
  free((char *)c->o.redis_url);
  free((char *)c->o.redis_prefix);
  free((char *)c->o.product_label);
  free((char *)c->o.topology_key);
  free((char *)c->o.drain_taints);
  free((char *)c->o.lease_ns);
  free((char *)c->o.lease_name);
  free((char *)c->o.identity);
  free(c);
}

/* Frees the controller once its last timer has closed (libuv runs close
 * callbacks in no order a caller may rely on). */
static void closed(uv_handle_t *h)
{
  struct ctl *c = h->data;

  if (--c->closing == 0) {
    void (*done)(void *) = c->on_stopped;
    void *arg = c->stopped_arg;

    free_all(c);
    if (done)
      done(arg);
  }
}

static void finish_stop(struct ctl *c)
{
  gq_informer_stop(c->inf_jobs);
  gq_informer_stop(c->inf_quotas);
  gq_informer_stop(c->inf_nodes);
  gq_informer_stop(c->inf_pods);
  gq_informer_stop(c->inf_pcs);
  gq_informer_stop(c->inf_pdbs);
  gq_rq_close(c->rq);
  c->closing = 5;
  uv_close((uv_handle_t *)&c->pass_timer, closed);
  uv_close((uv_handle_t *)&c->tick_timer, closed);
  uv_close((uv_handle_t *)&c->sweep_timer, closed);
  uv_close((uv_handle_t *)&c->audit_timer, closed);
  uv_close((uv_handle_t *)&c->stop_timer, closed);
}

static void stop_wait(uv_timer_t *tm)
{
  struct ctl *c = tm->data;
  int64_t waited = gq_clock_mono_ms() - c->stop_ms;

  if (c->inflight && waited < STOP_WAIT_MS)
    return;
  if (c->inflight)
    GQ_LOG(GQ_WARN, &lc, "stopping with %u writes still in flight",
           c->inflight);
  uv_timer_stop(tm);
  if (c->leader) {
    gq_leader_stop(c->leader);
    c->leader = NULL;
  }
  finish_stop(c);
}

void gq_ctl_stop(struct gq_ctl *gc, void (*done)(void *arg), void *arg)
{
  struct ctl *c = (struct ctl *)gc;

  if (c->stopping)
    return;
  GQ_LOG(GQ_INFO, &lc, "stopping: admission stopped, %u writes in flight",
         c->inflight);
  c->stopping = 1;
  c->on_stopped = done;
  c->stopped_arg = arg;
  uv_timer_stop(&c->pass_timer);
  uv_timer_stop(&c->tick_timer);
  uv_timer_stop(&c->sweep_timer);
  uv_timer_stop(&c->audit_timer);
  c->stop_ms = gq_clock_mono_ms();
  uv_timer_start(&c->stop_timer, stop_wait, 0, 20);
}
