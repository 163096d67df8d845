/* controller/usage.c - allocated against used GPUs, idle jobs and GPU
 * health (issue 22; docs/usage.md).
 *
 * With --prometheus-url, every --utilization-interval (virtual seconds)
 * the controller asks Prometheus (HTTP API, instant queries: api/prom.h)
 * for the GPU utilization dcgm-exporter reports per GPU, with the pod the
 * GPU is allocated to (DCGM_FI_DEV_GPU_UTIL{namespace, pod}), and for the
 * GPUs reporting an XID error (DCGM_FI_DEV_XID_ERRORS != 0).
 *
 * Per running job (decide/usage.h does the arithmetic): the mean over its
 * pods' GPUs is one reading; it adds used and idle GPU-seconds, gives the
 * window mean (status.gpuUtilization) and the Idle condition once the job
 * has stayed under its team's threshold for afterMinutes (TeamQuota
 * spec.idlePolicy, else --idle-threshold and 30 minutes). With action
 * Preempt an Idle job is checkpointed and requeued (at the back of its
 * queue) when a job of its cohort waits that its GPUs could serve; never
 * when none waits. Allocation is counted whether or not Prometheus answers.
 *
 * Prometheus unreachable or answering garbage: the query is retried with a
 * backoff, gpuq_prometheus_up is 0, and running jobs' Idle condition is
 * Unknown (reason UtilizationUnknown, the error in its message); nothing
 * else waits for it.
 *
 * XID errors: the node of such a GPU is tainted gpuq.dev/gpu-unhealthy:
 * NoSchedule (a Warning Event on the node), the jobs on the failing GPUs
 * are checkpointed and requeued (cause GpuUnhealthy); once the node has
 * reported no XID error for --gpu-healthy-seconds the taint is removed (a
 * Normal Event). Only a taint gpuq added is removed.
 */
#include "controller/ctl_int.h"

#include "api/prom.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct gq_lc lc = {"controller", "usage", NULL};

#define UTIL_QUERY "DCGM_FI_DEV_GPU_UTIL{pod!=\"\"}"
#define XID_QUERY "DCGM_FI_DEV_XID_ERRORS != 0"
#define STATUS_DELTA_PCT 5    /* a window mean this far off is written */
#define REFRESH_MIN_MS 5000 /* without Prometheus: a running job's usage
                               is refreshed at most this often, real ms */
#define REFRESH_STEPS 50 /* and refresh_tick runs this many times in that
                            period, so the refreshes due are spread */
#define STATUS_REFRESH_POLLS 10 /* usage fields refreshed at least every
                                   this many polls while running */

/* One node that reported an XID error. */
struct chealth {
  char *name;
  int64_t last_xid_ms; /* virtual ms it was last seen */
  int tainted;         /* gpuq's taint is on it (or on its way) */
  int patching;        /* a taint patch is in flight */
  UT_hash_handle hh;
};

/* The utilization of one pod's GPUs in one answer. */
struct podutil {
  UT_hash_handle hh;
  double sum;
  int n;
  char key[]; /* "ns/name" */
};

static const struct gq_idle_policy *idle_policy(struct ctl *c,
                                                const struct cjob *cj,
                                                struct gq_idle_policy *dflt)
{
  const struct gq_teamquota *q = ctl_quota(c, cj->team);

  if (q && q->idle.set)
    return &q->idle;
  *dflt = (struct gq_idle_policy){0, c->o.idle_threshold_pct,
                                  GQ_IDLE_AFTER_MIN_DEFAULT, GQ_IDLE_REPORT};
  return dflt;
}

/* cj's usage record, made on first use and seeded from its status (a
 * restarted controller goes on counting where the last one stopped). */
static struct cjob_use *use_of(struct ctl *c, struct cjob *cj)
{
  const struct gq_gpujob *j;

  if (cj->use)
    return cj->use;
  cj->use = gq_xcalloc(1, sizeof(*cj->use));
  cj->use->pct = -1;
  cj->use->u.last_pct = -1;
  j = ctl_job_obj(c, cj);
  if (j && j->status.usage) {
    const struct gq_gpujob_usage *st = j->status.usage;

    cj->use->u.alloc_s = (double)st->alloc_s;
    cj->use->u.used_s = cj->use->counted_s = (double)st->used_s;
    cj->use->u.idle_s = (double)st->idle_s;
    if (st->flavor)
      cj->use->product = ctl_intern(c, st->flavor);
  }
  return cj->use;
}

/* The GPU product of cj's first node (interned), or NULL. */
static const char *product_of(struct ctl *c, const struct cjob *cj)
{
  const struct gq_node *n =
      cj->nodes ? gq_informer_typed(c->inf_nodes, cj->nodes[0]) : NULL;

  return n && n->gpu_product ? ctl_intern(c, n->gpu_product) : NULL;
}

/* Adds what cj used since the last count to gpuq_used_gpu_seconds_total. */
static void count_used(struct ctl *c, struct cjob *cj)
{
  struct cjob_use *u = cj->use;
  const char *l[] = {cj->team, cj->flavor ? cj->flavor : "", cj->ns};

  if (u->u.used_s > u->counted_s)
    gq_metric_add(c->m_used_gpu_s, l, u->u.used_s - u->counted_s);
  u->counted_s = u->u.used_s;
}

/* Virtual ms between two looks at a running job without Prometheus: its
 * --utilization-window, and at least REFRESH_MIN_MS real ms. */
static int64_t refresh_period_ms(const struct ctl *c)
{
  const struct gq_clock *k = gq_clock_get();
  int64_t real = gq_clock_real_ms();
  int64_t floor_ms = gq_clock_to_virtual(k, real + REFRESH_MIN_MS) -
                     gq_clock_to_virtual(k, real);
  int64_t window_ms = c->o.util_window_s * 1000;

  return window_ms > floor_ms ? window_ms : floor_ms;
}

void usage_running(struct ctl *c, struct cjob *cj, int on)
{
  struct gq_idle_policy d;
  struct cjob_use *u = use_of(c, cj);
  int64_t now = gq_clock_now_ms();

  if (on) {
    const char *p = product_of(c, cj);

    if (p)
      u->product = p;
    gq_usage_start(&u->u, now);
    u->refresh_ms = now + refresh_period_ms(c);
  } else {
    gq_usage_stop(&u->u, now, cj->gpus,
                  idle_policy(c, cj, &d)->threshold_pct);
    u->pct = -1;
    u->idle = 0;
    count_used(c, cj);
  }
}

void usage_forget(struct cjob *cj)
{
  free(cj->use);
  cj->use = NULL;
}

/* ---- the Idle condition and idle preemption ---------------------------- */

/* A queued job of cj's cohort (or team, without one) that cj's GPUs could
 * serve: queued for at least one reading interval (not one the next pass
 * admits anyway), of cj's team or waiting for capacity (another team's
 * job waiting for its own quota gains nothing), one replica needs no more
 * GPUs than one of cj's has, and its products allow cj's. NULL if none. */
static struct cjob *waiting_for(struct ctl *c, const struct cjob *cj,
                                int64_t now)
{
  int64_t per = cj->replicas > 0 ? cj->gpus / cj->replicas : cj->gpus;
  struct cteam *t, *tt;

  HASH_ITER(hh, c->teams, t, tt) {
    int same = !strcmp(t->name, cj->team);

    if (*cj->cohort ? strcmp(t->cohort, cj->cohort) : !same)
      continue;
    for (size_t i = 0; i < t->n; i++) {
      struct cjob *q = t->q[i];
      const struct gq_gpujob *j = ctl_job_spec(c, q);
      int ok = j && !j->suspend && j->gpus_per_replica <= per &&
               !q->use_claimed &&
               now - q->queued_ms >= c->o.util_interval_s * 1000 &&
               (same || (q->reason && !strcmp(q->reason,
                                              "WaitingForCapacity")));

      for (size_t k = 0; ok && j->n_products && k < j->n_products; k++) {
        ok = cj->use->product && !strcmp(j->products[k], cj->use->product);
        if (ok)
          break;
      }
      if (ok)
        return q;
    }
  }
  return NULL;
}

/* After a reading: the Idle condition of cj, an Event when it turns, and
 * with action Preempt a checkpoint and requeue when a job waits. */
static void judge_idle(struct ctl *c, struct cjob *cj, int64_t now)
{
  struct gq_idle_policy d;
  const struct gq_idle_policy *ip = idle_policy(c, cj, &d);
  struct cjob_use *u = cj->use;
  int64_t idle_ms = gq_usage_idle_ms(&u->u, now);
  int idle = u->pct >= 0 && idle_ms >= ip->after_min * 60000;
  struct cjob *w;

  if (idle != u->idle) {
    u->idle = idle;
    u->dirty = 2; /* the Idle condition turns */
    if (idle)
      status_event(c, cj, "Warning", "Idle", "GPU utilization under %d%% for "
                   "%lld minutes (mean %d%%): %lld GPUs allocated and idle",
                   ip->threshold_pct, (long long)(idle_ms / 60000), u->pct,
                   (long long)cj->gpus);
  }
  if (!idle || ip->action != GQ_IDLE_PREEMPT || cj->preempted ||
      cj->state != CJ_ACTIVE)
    return;
  w = waiting_for(c, cj, now);
  if (!w)
    return;
  w->use_claimed = 1; /* one idle job per waiting job and poll */
  c->claimed = gq_xrealloc(c->claimed,
                           (c->n_claimed + 1) * sizeof(*c->claimed));
  c->claimed[c->n_claimed++] = w;
  status_event(c, cj, "Warning", "IdlePreempted", "GPUs idle for %lld "
               "minutes while %s waits: checkpointing and requeueing at the "
               "back of the queue", (long long)(idle_ms / 60000), w->key);
  {
    char why[256];

    snprintf(why, sizeof(why), "its %lld GPUs stayed under %d%% utilization "
             "for %lld minutes while %s waited (TeamQuota %s "
             "spec.idlePolicy.action Preempt)", (long long)cj->gpus,
             ip->threshold_pct, (long long)(idle_ms / 60000), w->key,
             cj->team);
    jobs_preempt(c, cj, NULL, GQ_LIFE_CAUSE_IDLE, why);
  }
}

/* ---- readings ---------------------------------------------------------- */

static void free_podutil(struct podutil **h)
{
  struct podutil *p, *t;

  HASH_ITER(hh, *h, p, t) {
    HASH_DEL(*h, p);
    free(p);
  }
}

/* The answer's GPU utilization by pod ("ns/name" -> sum and count). */
static struct podutil *by_pod(const struct gq_prom_vector *v)
{
  struct podutil *h = NULL, *p;

  for (size_t i = 0; i < v->n; i++) {
    const char *ns = gq_prom_label(&v->v[i], "namespace");
    const char *pod = gq_prom_label(&v->v[i], "pod");
    char key[512];
    int n = snprintf(key, sizeof(key), "%s/%s", ns, pod);

    if (!*ns || !*pod || n < 0 || (size_t)n >= sizeof(key))
      continue;
    HASH_FIND_STR(h, key, p);
    if (!p) {
      p = gq_xcalloc(1, sizeof(*p) + (size_t)n + 1);
      memcpy(p->key, key, (size_t)n + 1);
      HASH_ADD_STR(h, key, p);
    }
    /* a percent: what a broken exporter sends outside 0..100 is clamped */
    p->sum += v->v[i].value < 0 ? 0 : v->v[i].value > 100 ? 100 : v->v[i].value;
    p->n++;
  }
  return h;
}

/* cj's reading: the mean over its pods' GPUs (percent), -1 if none of its
 * pods was in the answer. */
static int job_pct(const struct cjob *cj, struct podutil *h)
{
  double sum = 0;
  int n = 0;

  for (size_t i = 0; i < cj->n_pods; i++) {
    struct podutil *p;

    HASH_FIND_STR(h, cj->pods[i], p);
    if (p) {
      sum += p->sum;
      n += p->n;
    }
  }
  return n ? (int)lround(sum / n) : -1;
}

/* Records reading pct (-1 unknown) of running job cj at now and decides
 * whether its status needs writing. */
static void read_job(struct ctl *c, struct cjob *cj, int pct, int64_t now)
{
  struct gq_idle_policy d;
  struct cjob_use *u = use_of(c, cj);
  int64_t every = c->o.util_interval_s * 1000;
  int old = u->pct, mean;

  gq_usage_reading(&u->u, now, cj->gpus, pct,
                   idle_policy(c, cj, &d)->threshold_pct, 3 * every);
  mean = gq_usage_mean(&u->u, now, c->o.util_window_s * 1000);
  u->pct = pct < 0 ? -1 : mean;
  if (pct >= 0)
    u->pct_ms = now;
  count_used(c, cj);
  if ((old < 0) != (u->pct < 0)) /* the Idle condition turns Unknown or back */
    u->dirty = 2;
  else if (abs(old - u->pct) >= STATUS_DELTA_PCT ||
           ++u->polls >= STATUS_REFRESH_POLLS)
    u->dirty = 1;
  if (pct >= 0)
    judge_idle(c, cj, now);
  if (u->dirty) {
    if (u->dirty > 1)
      status_flush(c, cj);
    else
      status_refresh(c, cj);
    u->dirty = 0;
    u->polls = 0;
  }
}

/* Every running job gets its reading from h (NULL: Prometheus did not
 * answer: every reading is unknown). */
static void read_all(struct ctl *c, struct podutil *h)
{
  int64_t now = gq_clock_now_ms();
  struct cjob *cj, *tmp;

  DL_FOREACH_SAFE2(c->active, cj, tmp, act_next) {
    if (cj->state != CJ_ACTIVE || !cj->running)
      continue;
    read_job(c, cj, h ? job_pct(cj, h) : -1, now);
  }
  /* the claims of idle preemption last one poll (no job is freed during
   * it: preemptions only begin teardowns) */
  for (size_t i = 0; i < c->n_claimed; i++)
    c->claimed[i]->use_claimed = 0;
  free(c->claimed);
  c->claimed = NULL;
  c->n_claimed = 0;
}

/* ---- GPU health from XID errors ---------------------------------------- */

/* Forgets node entry h. */
static void health_drop(struct ctl *c, struct chealth *h)
{
  HASH_DEL(c->health, h);
  free(h->name);
  free(h);
}

struct taint_ctx {
  struct ctl *c;
  char *node;
  int add;
};

static void taint_done(int rc, const struct gq_k8s_status *st,
                       const json_t *obj, void *arg)
{
  struct taint_ctx *x = arg;
  struct chealth *h;

  (void)obj;
  HASH_FIND_STR(x->c->health, x->node, h);
  if (h)
    h->patching = 0;
  if (rc) {
    ctl_api_error(x->c, "patch", "node taint", rc, st);
    if (h) /* try again at the next poll */
      h->tainted = !x->add;
  } else if (!x->add && h) {
    health_drop(x->c, h);
  }
  ctl_write_end(x->c);
  free(x->node);
  free(x);
}

static void event_done(int rc, const struct gq_k8s_status *st,
                       const json_t *obj, void *arg)
{
  struct ctl *c = arg;

  (void)obj;
  if (rc)
    ctl_api_error(c, "create", "node event", rc, st);
  ctl_write_end(c);
}

/* Adds (add 1) or removes gpuq's taint on node n (merge patch of
 * spec.taints, conditional on the resourceVersion read: a conflict is
 * retried at the next poll), with an Event saying why. */
static void set_taint(struct ctl *c, struct chealth *h,
                      const struct gq_node *n, int add, const char *why)
{
  const json_t *obj = gq_informer_get(c->inf_nodes, n->meta.name), *t;
  json_t *taints = json_array(), *patch;
  struct taint_ctx *x;
  char path[320], ts[40];
  size_t i;

  /* the others as they are (value, timeAdded and all) */
  json_array_foreach(json_object_get(json_object_get(obj, "spec"), "taints"),
                     i, t) {
    const char *key = json_string_value(json_object_get(t, "key"));

    if (!key || strcmp(key, GQ_TAINT_GPU_UNHEALTHY))
      json_array_append(taints, (json_t *)t);
  }
  gq_time_format(gq_clock_now_ms(), ts, sizeof(ts));
  if (add)
    json_array_append_new(taints, json_pack("{s:s,s:s,s:s}", "key",
                                            GQ_TAINT_GPU_UNHEALTHY, "effect",
                                            "NoSchedule", "timeAdded", ts));
  patch = json_pack("{s:{s:s},s:{s:o}}", "metadata", "resourceVersion",
                    n->meta.resource_version ? n->meta.resource_version : "",
                    "spec", "taints", taints);
  snprintf(path, sizeof(path), "/api/v1/nodes/%s", n->meta.name);
  x = gq_xcalloc(1, sizeof(*x));
  *x = (struct taint_ctx){c, gq_xstrdup(n->meta.name), add};
  h->patching = 1;
  h->tainted = add;
  GQ_LOG(add ? GQ_WARN : GQ_INFO, &lc, "node %s: %s", n->meta.name, why);
  ctl_write_begin(c);
  if (gq_kclient_patch_how(c->kc, path, "merge", patch, CTL_WORK, taint_done,
                           x) != 0)
    taint_done(GQ_EIO, NULL, NULL, x);
  json_decref(patch);
  ctl_write_begin(c);
  if (!obj || gq_kclient_event_how(c->kc, obj, add ? "Warning" : "Normal",
                           add ? "GpuUnhealthy" : "GpuHealthy", why,
                           GQ_CTL_COMPONENT, CTL_REPORT, event_done, c) != 0)
    ctl_write_end(c);
}

/* The job whose pod "ns/name" is, or NULL. */
static struct cjob *job_of_pod(struct ctl *c, const char *ns, const char *pod)
{
  char key[512];
  const struct gq_pod *p;
  const char *uid;

  snprintf(key, sizeof(key), "%s/%s", ns, pod);
  p = gq_informer_typed(c->inf_pods, key);
  uid = p ? gq_meta_label(&p->meta, GQ_LBL_JOB_UID) : NULL;
  return uid ? ctl_job(c, uid) : NULL;
}

/* One GPU reporting XID error xid: its node is marked (and tainted), the
 * job on it checkpointed and requeued. */
static void xid_seen(struct ctl *c, const struct gq_prom_sample *s,
                     int64_t now)
{
  const char *node = gq_prom_label(s, "Hostname");
  const struct gq_node *n = gq_informer_typed(c->inf_nodes, node);
  struct chealth *h;
  struct cjob *cj;
  char why[320];

  if (!n)
    return;
  snprintf(why, sizeof(why), "XID error %.0f on GPU %s (%s); tainted %s:"
           "NoSchedule until it reports none for %lld s", s->value,
           gq_prom_label(s, "gpu"), gq_prom_label(s, "UUID"),
           GQ_TAINT_GPU_UNHEALTHY, (long long)c->o.gpu_healthy_s);
  HASH_FIND_STR(c->health, node, h);
  if (!h) {
    h = gq_xcalloc(1, sizeof(*h));
    h->name = gq_xstrdup(node);
    HASH_ADD_KEYPTR(hh, c->health, h->name, strlen(h->name), h);
  }
  h->last_xid_ms = now;
  if (!h->tainted && !h->patching)
    set_taint(c, h, n, 1, why);
  cj = job_of_pod(c, gq_prom_label(s, "namespace"), gq_prom_label(s, "pod"));
  if (cj && cj->state == CJ_ACTIVE && !cj->preempted)
    jobs_preempt(c, cj, NULL, GQ_LIFE_CAUSE_GPU_UNHEALTHY, why);
}

/* Nodes quiet for --gpu-healthy-seconds lose gpuq's taint. */
static void heal(struct ctl *c, int64_t now)
{
  struct chealth *h, *t;

  HASH_ITER(hh, c->health, h, t) {
    const struct gq_node *n = gq_informer_typed(c->inf_nodes, h->name);
    char why[200];

    if (h->patching || now - h->last_xid_ms < c->o.gpu_healthy_s * 1000)
      continue;
    if (!n) { /* the node is gone */
      health_drop(c, h);
      continue;
    }
    snprintf(why, sizeof(why), "no XID error for %lld s: taint %s removed",
             (long long)c->o.gpu_healthy_s, GQ_TAINT_GPU_UNHEALTHY);
    set_taint(c, h, n, 0, why);
  }
}

/* A node carrying gpuq's taint that no entry tracks (it was added before a
 * restart): tracked from now, so that it is lifted after the quiet time. */
static void adopt_taint(const json_t *obj, void *typed, void *arg)
{
  struct ctl *c = arg;
  const struct gq_node *n = typed;
  struct chealth *h;

  (void)obj;
  if (!n)
    return;
  for (size_t i = 0; i < n->n_taints; i++) {
    if (strcmp(n->taints[i].key, GQ_TAINT_GPU_UNHEALTHY))
      continue;
    HASH_FIND_STR(c->health, n->meta.name, h);
    if (h)
      return;
    h = gq_xcalloc(1, sizeof(*h));
    h->name = gq_xstrdup(n->meta.name);
    h->last_xid_ms = gq_clock_now_ms();
    h->tainted = 1;
    HASH_ADD_KEYPTR(hh, c->health, h->name, strlen(h->name), h);
    return;
  }
}

/* ---- the poll ---------------------------------------------------------- */

static void poll_tick(uv_timer_t *tm);

/* Prometheus answered (up 1) or not (0, why): the gauge, the log (once per
 * change), the next poll's delay (a backoff while it fails). */
static void prom_state(struct ctl *c, int up, const char *why)
{
  if (up != c->prom_up || (!up && strcmp(c->prom_err, why))) {
    if (up)
      GQ_LOG(GQ_INFO, &lc, "prometheus %s answers: reading GPU utilization",
             gq_prom_url(c->prom));
    else
      GQ_LOG(GQ_WARN, &lc, "prometheus unusable (%s): GPU utilization "
             "unknown, retrying with backoff", why);
  }
  c->prom_up = up;
  gq_metric_set(c->m_prom_up, NULL, up);
  if (up) {
    c->prom_err[0] = '\0';
    gq_backoff_reset(&c->prom_bo);
  } else {
    snprintf(c->prom_err, sizeof(c->prom_err), "%s", why);
    uv_timer_start(&c->util_timer, poll_tick, gq_backoff_next(&c->prom_bo),
                   gq_clock_delay(gq_clock_get(),
                                  c->o.util_interval_s * 1000));
  }
}

static void xid_answer(int rc, const struct gq_prom_vector *v,
                       const char *err, void *arg)
{
  struct ctl *c = arg;
  int64_t now;

  if (rc == GQ_ECANCELED)
    return; /* closing: c may be gone */
  c->util_inflight = 0;
  if (rc) {
    prom_state(c, 0, err);
    return;
  }
  if (!ctl_acting(c))
    return;
  now = gq_clock_now_ms();
  if (!c->health_adopted) {
    gq_informer_foreach(c->inf_nodes, adopt_taint, c);
    c->health_adopted = 1;
  }
  GQ_LOG(GQ_DEBUG, &lc, "%zu GPUs report XID errors", v->n);
  for (size_t i = 0; i < v->n; i++)
    xid_seen(c, &v->v[i], now);
  heal(c, now);
}

static void util_answer(int rc, const struct gq_prom_vector *v,
                        const char *err, void *arg)
{
  struct ctl *c = arg;
  struct podutil *h;

  if (rc == GQ_ECANCELED)
    return; /* closing: c may be gone */
  if (!ctl_acting(c)) {
    c->util_inflight = 0;
    return;
  }
  if (rc) {
    c->util_inflight = 0;
    read_all(c, NULL);
    prom_state(c, 0, err);
    return;
  }
  prom_state(c, 1, NULL);
  h = by_pod(v);
  read_all(c, h);
  free_podutil(&h);
  if (gq_prom_query(c->prom, XID_QUERY, xid_answer, c) != 0)
    c->util_inflight = 0;
}

static void poll_tick(uv_timer_t *tm)
{
  struct ctl *c = tm->data;

  if (c->util_inflight || !ctl_acting(c))
    return;
  c->util_inflight = 1;
  if (gq_prom_query(c->prom, UTIL_QUERY, util_answer, c) != 0) {
    c->util_inflight = 0;
    prom_state(c, 0, "cannot start the query");
  }
}

void usage_init(struct ctl *c)
{
  static const char *const tfn[] = {"team", "flavor", "namespace"};
  static const char *const tm[] = {"team"};
  struct gq_metrics *m = c->metrics;

  if (c->o.util_interval_s <= 0)
    c->o.util_interval_s = 30;
  if (c->o.util_window_s <= 0)
    c->o.util_window_s = 300;
  if (c->o.gpu_healthy_s <= 0)
    c->o.gpu_healthy_s = 600;
  if (c->o.idle_threshold_pct <= 0 || c->o.idle_threshold_pct > 100)
    c->o.idle_threshold_pct = GQ_IDLE_THRESHOLD_DEFAULT;
  uv_timer_init(c->loop, &c->util_timer);
  c->util_timer.data = c;
  gq_backoff_init(&c->prom_bo, 1000, 60000, 2.0, 0.2, 0);
  c->m_used_gpu_s = gq_metrics_counter(m, "gpuq_used_gpu_seconds_total",
      "GPU-seconds the team's running jobs actually used: GPUs x GPU "
      "utilization read from DCGM through Prometheus (virtual seconds).",
      3, tfn);
  c->m_idle_gpus = gq_metrics_gauge(m, "gpuq_idle_allocated_gpus",
      "GPUs held by the team's jobs whose Idle condition is True.", 1, tm);
  c->m_prom_up = gq_metrics_gauge(m, "gpuq_prometheus_up", "1 while the "
      "last utilization query to --prometheus-url was answered, else 0 "
      "(absent without --prometheus-url).", 0, NULL);
  if (!c->o.prometheus_url)
    return;
  if (gq_prom_new(c->loop, c->o.prometheus_url, 10000, &c->prom) != 0)
    GQ_LOG(GQ_ERROR, &lc, "--prometheus-url %s: not usable: GPU "
           "utilization stays unknown", c->o.prometheus_url);
  gq_metric_set(c->m_prom_up, NULL, 0);
  snprintf(c->prom_err, sizeof(c->prom_err), "no answer from %s yet",
           c->o.prometheus_url);
}

/* Without Prometheus nothing else looks at a running job that nothing
 * happens to: each --utilization-interval, the running jobs that have run
 * a --utilization-window since their start or last look have their status
 * looked at, so that allocatedGPUSeconds (written only once it lags by
 * the job's GPUs over the window, status.c) is refreshed. A job is looked
 * at no more often than every REFRESH_MIN_MS real milliseconds
 * (refresh_period_ms), and the tick runs REFRESH_STEPS times in that
 * period (usage_start), so the looks stay spread over the jobs' start
 * times: with a tick as long as the period, every running job was due
 * at every tick, and at --time-scale 5000 each tick sent a status write
 * for every running job at once (bench/README.md "replay"). */
static void refresh_tick(uv_timer_t *tm)
{
  struct ctl *c = tm->data;
  int64_t now = gq_clock_now_ms(), period = refresh_period_ms(c);
  struct cjob *cj, *tmp;

  if (!ctl_acting(c))
    return;
  DL_FOREACH_SAFE2(c->active, cj, tmp, act_next) {
    if (cj->state != CJ_ACTIVE || !cj->running || !cj->use ||
        now < cj->use->refresh_ms)
      continue;
    cj->use->refresh_ms = now + period;
    status_refresh(c, cj);
  }
}

void usage_start(struct ctl *c)
{
  uint64_t every = gq_clock_delay(gq_clock_get(), c->o.util_interval_s * 1000);

  if (c->prom)
    uv_timer_start(&c->util_timer, poll_tick, every, every);
  else { /* a job at most every REFRESH_MIN_MS real ms (at --time-scale
            5000 a window is 60 real ms, and a look at every running job
            that often would be a flood of status writes), in steps */
    uint64_t step = REFRESH_MIN_MS / REFRESH_STEPS;

    if (every > step)
      step = every;
    uv_timer_start(&c->util_timer, refresh_tick, step, step);
  }
}

void usage_stop(struct ctl *c) { uv_timer_stop(&c->util_timer); }

void usage_close(struct ctl *c, uv_close_cb cb)
{
  gq_prom_close(c->prom);
  c->prom = NULL;
  uv_close((uv_handle_t *)&c->util_timer, cb);
}

void usage_free(struct ctl *c)
{
  struct chealth *h, *t;

  HASH_ITER(hh, c->health, h, t)
    health_drop(c, h);
  free(c->claimed);
}

void usage_metrics(struct ctl *c)
{
  struct cjob *cj, *tmp;
  struct cteam *t, *tt;

  if (!c->prom)
    return;
  HASH_ITER(hh, c->teams, t, tt) {
    const char *l[] = {t->name};

    gq_metric_set(c->m_idle_gpus, l, 0);
  }
  DL_FOREACH_SAFE2(c->active, cj, tmp, act_next) {
    const char *l[] = {cj->team};

    if (cj->use && cj->use->idle && cj->running)
      gq_metric_add(c->m_idle_gpus, l, (double)cj->gpus);
  }
}

/* ---- status ------------------------------------------------------------ */

void usage_status(const struct ctl *c, const struct cjob *cj,
                  struct usage_view *v)
{
  const struct cjob_use *u = cj->use;
  int64_t now = gq_clock_now_ms();

  memset(v, 0, sizeof(*v));
  v->pct = -1;
  if (!u)
    return;
  v->has = 1;
  v->product = u->product;
  v->alloc_s = (int64_t)gq_usage_alloc_at(&u->u, now, cj->gpus);
  v->used_s = (int64_t)u->u.used_s;
  v->idle_s = (int64_t)u->u.idle_s;
  if (!c->prom)
    return;
  v->cond = 1;
  v->pct = cj->running ? u->pct : -1;
  v->pct_ms = u->pct_ms;
  if (!cj->running) {
    v->cond_status = "False";
    v->cond_reason = "NotRunning";
    snprintf(v->cond_msg, sizeof(v->cond_msg), "the job is not running");
  } else if (u->pct < 0) {
    v->cond_status = "Unknown";
    v->cond_reason = "UtilizationUnknown";
    snprintf(v->cond_msg, sizeof(v->cond_msg), "no GPU utilization reading: "
             "%s", c->prom_err[0] ? c->prom_err
                                  : "its pods' GPUs are not in Prometheus yet");
  } else {
    v->cond_status = u->idle ? "True" : "False";
    v->cond_reason = u->idle ? "GpuIdle" : "GpuBusy";
    snprintf(v->cond_msg, sizeof(v->cond_msg), "mean GPU utilization %d%% "
             "over the last %lld s", u->pct, (long long)c->o.util_window_s);
  }
}
