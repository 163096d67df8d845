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
#define WQ_BATCH 4096            /* jobs reconciled per loop turn */
#define PASS_STARVE_MS 1000      /* a pass at least this often (real ms)
                                    while marks keep the work queue busy */

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

/* ---- informer handlers ------------------------------------------------- */

static void job_add(const json_t *o, void *arg)
{
  struct cjob *cj = job_for(arg, o);

  status_seen(arg, cj, o);
  ctl_mark(arg, cj);
}
static void job_update(const json_t *old, const json_t *o, void *arg)
{
  (void)old;
  job_add(o, arg);
}
static void job_del(const json_t *o, void *arg)
{
  struct ctl *c = arg;
  struct cjob *cj = ctl_job(c, gq_meta_str(o, "uid"));

  if (cj) {
    cj->gone = 1;
    ctl_mark(c, cj);
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
    ctl_mark(c, cj);
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
  las_relevel(c); /* its cohort's policy may have changed */
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
    ctl_mark(c, ctl_job(c, uid));
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

  const struct gq_pod *p;

  pod_key(o, key, sizeof(key));
  p = gq_informer_typed(c->inf_pods, key);
  if (p)
    jobs_pod_seen(c, p, 1);
  gq_capacity_pod(&c->cap, key, p);
  workload_pod_event(c, o, 1);
  pod_mark(o, arg);
}
static int pod_terminal(const json_t *o)
{
  const char *ph = json_string_value(
      json_object_get(json_object_get(o, "status"), "phase"));

  return ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"));
}
static void pod_update(const json_t *old, const json_t *o, void *arg)
{
  struct ctl *c = arg;

  if (!pod_terminal(old) && pod_terminal(o))
    store_freed(c);
  pod_add(o, arg);
}
static void pod_del(const json_t *o, void *arg)
{
  struct ctl *c = arg;
  char key[600], err[GQ_DEC_MSG_MAX];
  struct gq_pod last;

  if (!pod_terminal(o))
    store_freed(c);
  pod_key(o, key, sizeof(key));
  if (gq_pod_decode(o, &last, err, sizeof(err)) == 0) { /* its last state */
    jobs_pod_seen(c, &last, 0);
    gq_pod_release(&last);
  }
  gq_capacity_pod(&c->cap, key, NULL);
  workload_pod_event(c, o, 0);
  pod_mark(o, arg);
}

/* batch/v1 Jobs: only those gpuq's webhook manages matter (workload.c) */
static void batch_add(const json_t *o, void *arg)
{
  workload_job_event(arg, o, 1);
}
static void batch_update(const json_t *old, const json_t *o, void *arg)
{
  (void)old;
  workload_job_event(arg, o, 1);
}
static void batch_del(const json_t *o, void *arg)
{
  workload_job_event(arg, o, 0);
}

static void node_changed(const json_t *o, void *arg)
{
  struct ctl *c = arg;
  const struct gq_node *n = gq_informer_typed(c->inf_nodes,
                                              gq_meta_str(o, "name"));

  if (n)
    jobs_node_changed(c, n);
  gq_capacity_invalidate(&c->cap);
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
      !gq_informer_synced(c->inf_pdbs) || !gq_informer_synced(c->inf_batch))
    return;
  c->synced = 1;
  c->settled = 0;
  GQ_LOG(GQ_INFO, &lc, "caches synced: %zu gpujobs, %zu teamquotas, "
         "%zu nodes, %zu pods", gq_informer_size(c->inf_jobs),
         gq_informer_size(c->inf_quotas), gq_informer_size(c->inf_nodes),
         gq_informer_size(c->inf_pods));
  mark_all(c, NULL, NULL);
  workload_sync(c);
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

/* ---- the pass ---------------------------------------------------------- */

static void tick(uv_timer_t *tm);

/* The deadline tick, when due (tick()): active deadlines, startup
 * timeouts, drain waits; the timer is re-armed for the earliest limit. */
static void run_tick(struct ctl *c)
{
  int64_t next = -1;

  if (!c->tick_due)
    return;
  c->tick_due = 0;
  jobs_tick(c, gq_clock_now_ms(), &next);
  las_tick(c);
  if (next >= 0) { /* the earliest limit is due before the next tick */
    int64_t d = gq_clock_to_real(gq_clock_get(), next) - gq_clock_real_ms();

    if (d < TICK_MS)
      uv_timer_start(&c->tick_timer, tick,
                     d > TICK_MIN_MS ? (uint64_t)d + 1 : TICK_MIN_MS,
                     TICK_MS);
  }
}

/* Reconciles at most WQ_BATCH marked jobs (the loop serves the API client,
 * Redis and the endpoints between batches), then, once none is left, the
 * deadline tick and the admission pass. The pass waits for the work
 * queue: it decides over every job's reconciled state, as the first pass
 * after a start must (the rebuild writes the queues from it). Only when
 * marks keep coming for PASS_STARVE_MS is a pass run between batches. */
static void run_pass(uv_timer_t *tm)
{
  struct ctl *c = tm->data;
  struct cjob *cj;
  size_t n = 0;
  int64_t now;

  c->pass_scheduled = 0;
  if (!ctl_acting(c))
    return;
  while (n++ < WQ_BATCH && (cj = wq_pop(c))) {
    jobs_reconcile(c, cj);
    wq_done(c, cj);
  }
  now = gq_clock_mono_ms();
  if (wq_len(c)) {
    ctl_schedule_pass(c);
    if (!c->settled || now - c->pass_ms < PASS_STARVE_MS)
      return;
  } else {
    c->settled = 1;
  }
  c->pass_ms = now;
  run_tick(c);
  queued_backend_state(c);
  if (c->redis_ready && ledger_ready(c))
    admit_pass(c);
  status_quotas(c);
  if (c->frees_n && !c->creating && !ledger_admitting(c))
    c->frees_n = 0; /* a pass saw them and nothing will be created for them */
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

static void audit(uv_timer_t *tm)
{
  ledger_audit(tm->data);
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
  c->settled = 0;
  gq_metric_set(c->m_leader, NULL, 1);
  HASH_ITER(hh, c->cohorts, k, tmp) k->rebuilt = 0;
  mark_all(c, NULL, NULL);
  workload_sync(c);
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

/* Registers the controller's metrics on o->metrics (names and meanings:
 * docs/controller.md "Metrics"). */
static void register_metrics(struct ctl *c)
{
  static const double wait_buckets[] = {1, 10, 60, 300, 900, 3600, 14400,
                                        43200, 86400, 259200};
  static const double lat_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01,
                                       0.025, 0.05, 0.1, 0.25, 1};
  const char *tks[] = {"team", "kind", "state"};
  const char *tf[] = {"team", "flavor"}, *tm[] = {"team"},
             *vb[] = {"verb"}, *op[] = {"op"}, *ch[] = {"cohort"},
             *nr[] = {"node", "resource"};
  struct gq_metrics *m;

  m = c->metrics;
  c->m_pending = gq_metrics_gauge(m, "gpuq_pending_jobs",
      "Jobs waiting in the team's queue.", 1, tm);
  c->m_admitted_gpus = gq_metrics_gauge(m, "gpuq_admitted_gpus",
      "GPUs held by the team's admitted jobs, per quota flavor.", 2, tf);
  c->m_nominal = gq_metrics_gauge(m, "gpuq_nominal_gpus",
      "GPUs guaranteed to the team by its TeamQuota, per flavor.", 2, tf);
  c->m_borrowed = gq_metrics_gauge(m, "gpuq_borrowed_gpus",
      "GPUs the team uses above its nominal quota, per flavor.", 2, tf);
  c->m_hist = gq_metrics_gauge(m, "gpuq_usage_history_gpus",
      "Mean GPUs the team used over the recent past (decayed usage, "
      "--fair-share-half-life): its fair share over time.", 1, tm);
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
  c->m_workloads = gq_metrics_gauge(m, "gpuq_workloads",
      "Jobs queued or admitted, by team, kind (GpuJob, or the Pod, "
      "PodGroup or Job a stand-in queues) and state (queued, admitted).",
      3, tks);
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
  c->m_node_free = gq_metrics_gauge(m, "gpuq_node_free_gpus",
      "GPUs (and MIG slices) free on the node in the controller's capacity "
      "snapshot: allocatable minus what bound, pinned, terminating and "
      "assumed pods hold, per extended resource.", 2, nr);
  c->m_passes = gq_metrics_counter(m, "gpuq_admission_passes_total",
      "Admission passes run.", 0, NULL);
  c->m_leader = gq_metrics_gauge(m, "gpuq_leader", "1 while this replica "
      "acts (holds the lease, or runs without --leader-elect), else 0.",
      0, NULL);
  c->m_redis_up = gq_metrics_gauge(m, "gpuq_redis_up", "1 while the Redis "
      "connection is ready (connected, scripts loaded), else 0.", 0, NULL);
  gq_metric_set(c->m_leader, NULL, 0);
  gq_metric_set(c->m_redis_up, NULL, 0);
}

struct gq_ctl *gq_ctl_new(uv_loop_t *loop, struct gq_kclient *kc,
                          const struct gq_ctl_opts *o)
{
  struct ctl *c = gq_xcalloc(1, sizeof(*c));

  c->loop = loop;
  c->kc = kc;
  c->o = *o;
  c->metrics = o->metrics;
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
  c->o.prometheus_url =
      o->prometheus_url ? gq_xstrdup(o->prometheus_url) : NULL;
  gq_capacity_init(&c->cap, c->o.topology_key);
  if (c->o.las.n_thresholds == 0) { /* the default levels */
    struct gq_las d = GQ_LAS_DEFAULT;

    memcpy(c->o.las.thresholds, d.thresholds, sizeof(d.thresholds));
    c->o.las.n_thresholds = d.n_thresholds;
  }
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
  wq_init(c);
  c->pass_cb = run_pass;
  c->pass_timer.data = c->tick_timer.data = c->sweep_timer.data =
      c->stop_timer.data = c->audit_timer.data = c;

  register_metrics(c);
  disrupt_init(c);
  usage_init(c);
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
  struct gq_informer_handlers hb = {batch_add, batch_update, batch_del,
                                    synced, NULL, NULL};
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
  io.path = "/apis/batch/v1/jobs";
  c->inf_batch = gq_informer_start(c->kc, &io, &hb, c);
  uv_timer_start(&c->tick_timer, tick, TICK_MS, TICK_MS);
  uv_timer_start(&c->audit_timer, audit, (uint64_t)c->o.audit_s * 1000,
                 (uint64_t)c->o.audit_s * 1000);
  uv_timer_start(&c->sweep_timer, sweep, (uint64_t)c->o.sweep_ms,
                 (uint64_t)c->o.sweep_ms);
  usage_start(c);
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
  usage_metrics((struct ctl *)gc);
}

static void free_all(struct ctl *c)
{
  struct cjob *cj, *tj;
  struct cteam *t, *tt;
  struct ccohort *k, *tk;
  struct cstr *sx, *ts;

  memset(c->sq, 0, sizeof(c->sq));
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
  gq_capacity_release(&c->cap);
  wq_free(c);
  HASH_ITER(hh, c->strs, sx, ts) {
    HASH_DEL(c->strs, sx);
    free(sx);
  }
  HASH_ITER(hh, c->wl_creating, sx, ts) {
    HASH_DEL(c->wl_creating, sx);
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
  free((char *)c->o.prometheus_url);
  usage_free(c);
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
  gq_informer_stop(c->inf_batch);
  gq_rq_close(c->rq);
  c->closing = 7;
  usage_close(c, closed);
  uv_close((uv_handle_t *)&c->wq_timer, closed);
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
  uv_timer_stop(&c->wq_timer);
  usage_stop(c);
  c->stop_ms = gq_clock_mono_ms();
  uv_timer_start(&c->stop_timer, stop_wait, 0, 20);
}
