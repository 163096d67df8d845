/* sim/jobs.c - batch/v1 Jobs and pod scheduling gates, as kube-apiserver
 * and kube-controller-manager's Job controller treat them, for the
 * workloads gpuq queues without creating them (docs/integrations.md).
 *
 * The Job controller (pkg/controller/job, the Job API reference): while a
 * Job is neither suspended nor finished it keeps min(parallelism,
 * completions - succeeded) pods active, made from its template and owned
 * by it; a failed pod is replaced until more than spec.backoffLimit have
 * failed (condition Failed, reason BackoffLimitExceeded); once
 * spec.completions pods succeeded (any one, when completions is unset) the
 * Job gets SuccessCriteriaMet and Complete. spec.suspend deletes its active
 * pods (condition Suspended) and unsuspending makes them again. It runs on
 * the store's changes like the sim's kubelet, in the same loop.
 *
 * Scheduling gates (KEP-3521) and the mutable scheduling directives of a
 * gated pod (KEP-3838) and of a suspended Job that has not started
 * (KEP-2926) are update rules: gq_sim_pod_update_check and
 * gq_sim_job_update_check.
 */
#include "sim/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/meta.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"

static const struct gq_lc lc = {"sim", "jobs", NULL};

#define JOBS_PER_TURN 64 /* bounded work per loop turn (STYLE) */

static struct gq_sim_kind *jobs_kind(struct gq_sim *s)
{
  return gq_sim_kind_find(s, "batch", "v1", "jobs");
}

static struct gq_sim_kind *pods_kind(struct gq_sim *s)
{
  return gq_sim_kind_find(s, "", "v1", "pods");
}

/* ---- update rules ------------------------------------------------------ */

static int has_gate(const json_t *gates, const char *name)
{
  const json_t *g;
  size_t i;

  json_array_foreach((json_t *)gates, i, g) {
    const char *n = json_string_value(json_object_get(g, "name"));

    if (n && !strcmp(n, name))
      return 1;
  }
  return 0;
}

/* spec without the fields a gated pod may change. */
static json_t *fixed_spec(const json_t *spec)
{
  json_t *s = json_deep_copy(spec);

  json_object_del(s, "schedulingGates");
  json_object_del(s, "nodeSelector");
  json_object_del(s, "affinity");
  json_object_del(s, "tolerations");
  return s;
}

int gq_sim_pod_update_check(const json_t *cur, const json_t *next, char *err,
                            size_t len)
{
  const json_t *cs = json_object_get(cur, "spec");
  const json_t *ns = json_object_get(next, "spec");
  const json_t *cg = json_object_get(cs, "schedulingGates");
  const json_t *ng = json_object_get(ns, "schedulingGates"), *g;
  json_t *a, *b;
  size_t i;
  int same;

  json_array_foreach((json_t *)ng, i, g) {
    const char *n = json_string_value(json_object_get(g, "name"));

    if (n && !has_gate(cg, n)) {
      snprintf(err, len, "spec.schedulingGates: Forbidden: only deletion is "
               "allowed, but found new scheduling gate '%s'", n);
      return -1;
    }
  }
  if (json_array_size(cg) == 0) /* not gated: the directives are fixed */
    return 0;
  a = fixed_spec(cs);
  b = fixed_spec(ns);
  same = json_equal(a, b);
  json_decref(a);
  json_decref(b);
  if (!same)
    snprintf(err, len, "spec: Forbidden: a gated pod may change only its "
             "scheduling gates (removing them), nodeSelector, affinity and "
             "tolerations");
  return same ? 0 : -1;
}

int gq_sim_job_update_check(const json_t *cur, const json_t *next, char *err,
                            size_t len)
{
  const json_t *ct = json_object_get(json_object_get(cur, "spec"),
                                     "template");
  const json_t *nt = json_object_get(json_object_get(next, "spec"),
                                     "template");
  int suspended = json_is_true(json_object_get(json_object_get(cur, "spec"),
                                               "suspend"));
  int started = json_object_get(json_object_get(cur, "status"),
                                "startTime") != NULL;
  json_t *a, *b;
  int same;

  if (json_equal((json_t *)ct, (json_t *)nt))
    return 0;
  if (suspended && !started) { /* scheduling directives and metadata */
    a = fixed_spec(json_object_get(ct, "spec"));
    b = fixed_spec(json_object_get(nt, "spec"));
    same = json_equal(a, b);
    json_decref(a);
    json_decref(b);
    if (same)
      return 0;
  }
  snprintf(err, len, "spec.template: Invalid value: the pod template: field "
           "is immutable%s", suspended && !started ? " (a suspended Job "
           "that has not started may change only its labels, annotations, "
           "nodeSelector, affinity, tolerations and scheduling gates)" : "");
  return -1;
}

/* ---- the Job controller ------------------------------------------------ */

struct job_pods {
  int active, succeeded, failed;
  json_t *live; /* the active pods (references) */
};

static int owned_by(const json_t *pod, const char *uid)
{
  const json_t *refs = json_object_get(json_object_get(pod, "metadata"),
                                       "ownerReferences"), *r;
  size_t i;

  json_array_foreach((json_t *)refs, i, r) {
    const char *u = json_string_value(json_object_get(r, "uid"));

    if (u && !strcmp(u, uid))
      return 1;
  }
  return 0;
}

static void count_pods(struct gq_sim *s, const json_t *job,
                       struct job_pods *c)
{
  json_t *pods = gq_sim_list(pods_kind(s), gq_meta_str(job, "namespace"));
  const char *uid = gq_meta_str(job, "uid");
  const json_t *p;
  size_t i;

  memset(c, 0, sizeof(*c));
  c->live = json_array();
  json_array_foreach(pods, i, p) {
    const char *ph = json_string_value(json_object_get(
        json_object_get(p, "status"), "phase"));

    if (!owned_by(p, uid))
      continue;
    if (ph && !strcmp(ph, "Succeeded")) {
      c->succeeded++;
    } else if (ph && !strcmp(ph, "Failed")) {
      c->failed++;
    } else if (!json_object_get(json_object_get(p, "metadata"),
                                "deletionTimestamp")) {
      c->active++;
      json_array_append(c->live, (json_t *)p);
    }
  }
  json_decref(pods);
}

static int64_t spec_int(const json_t *job, const char *key, int64_t dflt)
{
  const json_t *v = json_object_get(json_object_get(job, "spec"), key);

  return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* The condition of type t (True) in st's conditions, or NULL. */
static const json_t *cond(const json_t *st, const char *t)
{
  const json_t *c;
  size_t i;

  json_array_foreach(json_object_get(st, "conditions"), i, c) {
    const char *ct = json_string_value(json_object_get(c, "type"));
    const char *cs = json_string_value(json_object_get(c, "status"));

    if (ct && cs && !strcmp(ct, t) && !strcmp(cs, "True"))
      return c;
  }
  return NULL;
}

/* Sets condition t to status/reason/message in st (replacing one of that
 * type), with lastTransitionTime now. */
static void set_cond(json_t *st, const char *t, const char *status,
                     const char *reason, const char *msg)
{
  json_t *conds = json_object_get(st, "conditions"), *c;
  char ts[40];
  size_t i;

  if (!json_is_array(conds)) {
    conds = json_array();
    json_object_set_new(st, "conditions", conds);
  }
  gq_time_format(gq_clock_now_ms(), ts, sizeof(ts));
  json_array_foreach(conds, i, c) {
    const char *ct = json_string_value(json_object_get(c, "type"));

    if (ct && !strcmp(ct, t)) {
      json_array_remove(conds, i);
      break;
    }
  }
  json_array_append_new(conds, json_pack(
      "{s:s, s:s, s:s, s:s, s:s, s:s}", "type", t, "status", status,
      "reason", reason, "message", msg, "lastProbeTime", ts,
      "lastTransitionTime", ts));
}

static void delete_live(struct gq_sim *s, const struct job_pods *c)
{
  const json_t *p;
  size_t i;

  json_array_foreach(c->live, i, p)
    json_decref(gq_sim_delete(s, pods_kind(s), gq_meta_str(p, "namespace"),
                              gq_meta_str(p, "name"), -1, 0));
}

/* Makes one pod of job from its template. */
static void make_pod(struct gq_sim *s, const json_t *job)
{
  static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
  const json_t *t = json_object_get(json_object_get(job, "spec"), "template");
  const json_t *tm = json_object_get(t, "metadata");
  const char *ns = gq_meta_str(job, "namespace");
  const char *jn = gq_meta_str(job, "name");
  char name[300], sfx[6], err[256];
  json_t *labels, *pod;

  for (int i = 0; i < 5; i++)
    sfx[i] = alnum[rand() % (int)(sizeof(alnum) - 1)];
  sfx[5] = '\0';
  snprintf(name, sizeof(name), "%.56s-%s", jn, sfx);
  labels = json_deep_copy(json_object_get(tm, "labels"));
  if (!json_is_object(labels)) {
    json_decref(labels);
    labels = json_object();
  }
  json_object_set_new(labels, "batch.kubernetes.io/job-name", json_string(jn));
  json_object_set_new(labels, "job-name", json_string(jn));
  json_object_set_new(labels, "batch.kubernetes.io/controller-uid",
                      json_string(gq_meta_str(job, "uid")));
  json_object_set_new(labels, "controller-uid",
                      json_string(gq_meta_str(job, "uid")));
  pod = json_pack("{s:s, s:s, s:{s:s, s:s, s:o, s:[{s:s, s:s, s:s, s:s, "
                  "s:b, s:b}]}, s:O, s:{s:s}}",
                  "apiVersion", "v1", "kind", "Pod", "metadata", "name", name,
                  "namespace", ns, "labels", labels, "ownerReferences",
                  "apiVersion", "batch/v1", "kind", "Job", "name", jn, "uid",
                  gq_meta_str(job, "uid"), "controller", 1,
                  "blockOwnerDeletion", 1, "spec",
                  json_object_get(t, "spec") ? json_object_get(t, "spec")
                                             : json_object(),
                  "status", "phase", "Pending");
  if (json_is_object(json_object_get(tm, "annotations")))
    json_object_set(json_object_get(pod, "metadata"), "annotations",
                    json_object_get(tm, "annotations"));
  if (!json_object_get(json_object_get(pod, "spec"),
                       "terminationGracePeriodSeconds"))
    json_object_set_new(json_object_get(pod, "spec"),
                        "terminationGracePeriodSeconds", json_integer(30));
  if (!gq_sim_seed(s, pods_kind(s), pod, err, sizeof(err)))
    GQ_LOG(GQ_WARN, &lc, "job %s/%s: pod create failed: %s", ns, jn, err);
}

/* Where job stands: status and conditions in st (a copy), pods acted on. */
static void job_step(struct gq_sim *s, const json_t *job, json_t *st)
{
  struct job_pods c;
  int64_t par = spec_int(job, "parallelism", 1);
  int64_t comp = spec_int(job, "completions", -1);
  int64_t limit = spec_int(job, "backoffLimit", 6);
  int suspend = json_is_true(json_object_get(json_object_get(job, "spec"),
                                             "suspend"));
  char ts[40];

  count_pods(s, job, &c);
  gq_time_format(gq_clock_now_ms(), ts, sizeof(ts));
  if (cond(st, "Complete") || cond(st, "Failed")) {
    delete_live(s, &c);
    c.active = 0;
  } else if (c.failed > limit) {
    delete_live(s, &c);
    c.active = 0;
    set_cond(st, "FailureTarget", "True", "BackoffLimitExceeded",
             "Job has reached the specified backoff limit");
    set_cond(st, "Failed", "True", "BackoffLimitExceeded",
             "Job has reached the specified backoff limit");
  } else if (c.succeeded >= (comp < 0 ? 1 : comp) &&
             (comp >= 0 || c.active == 0)) {
    set_cond(st, "SuccessCriteriaMet", "True", "CompletionsReached",
             "Reached expected number of succeeded pods");
    set_cond(st, "Complete", "True", "CompletionsReached",
             "Reached expected number of succeeded pods");
    json_object_set_new(st, "completionTime", json_string(ts));
  } else if (suspend) {
    delete_live(s, &c);
    c.active = 0;
    if (!cond(st, "Suspended"))
      set_cond(st, "Suspended", "True", "JobSuspended", "Job suspended");
  } else {
    int64_t want = comp < 0 ? par : comp - c.succeeded;

    if (want > par)
      want = par;
    if (cond(st, "Suspended"))
      set_cond(st, "Suspended", "False", "JobResumed", "Job resumed");
    if (!json_object_get(st, "startTime"))
      json_object_set_new(st, "startTime", json_string(ts));
    for (int64_t i = c.active; i < want; i++, c.active++)
      make_pod(s, job);
  }
  json_object_set_new(st, "active", json_integer(c.active));
  json_object_set_new(st, "succeeded", json_integer(c.succeeded));
  json_object_set_new(st, "failed", json_integer(c.failed));
  json_object_set_new(st, "ready", json_integer(0));
  json_decref(c.live);
}

/* The labels and selector the API server gives a new Job's template. */
static int job_defaults(json_t *job)
{
  json_t *spec = json_object_get(job, "spec");
  json_t *t = json_object_get(spec, "template"), *tm, *labels;
  const char *uid = gq_meta_str(job, "uid");

  if (!json_is_object(spec) || !json_is_object(t) ||
      json_object_get(spec, "selector"))
    return 0;
  tm = json_object_get(t, "metadata");
  if (!json_is_object(tm)) {
    tm = json_object();
    json_object_set_new(t, "metadata", tm);
  }
  labels = json_object_get(tm, "labels");
  if (!json_is_object(labels)) {
    labels = json_object();
    json_object_set_new(tm, "labels", labels);
  }
  json_object_set_new(labels, "batch.kubernetes.io/controller-uid",
                      json_string(uid));
  json_object_set_new(labels, "controller-uid", json_string(uid));
  json_object_set_new(spec, "selector", json_pack(
      "{s:{s:s}}", "matchLabels", "batch.kubernetes.io/controller-uid", uid));
  if (!json_object_get(spec, "backoffLimit"))
    json_object_set_new(spec, "backoffLimit", json_integer(6));
  if (!json_object_get(spec, "parallelism"))
    json_object_set_new(spec, "parallelism", json_integer(1));
  if (!json_object_get(spec, "suspend"))
    json_object_set_new(spec, "suspend", json_false());
  if (!json_object_get(spec, "completionMode"))
    json_object_set_new(spec, "completionMode", json_string("NonIndexed"));
  return 1;
}

static void reconcile_job(struct gq_sim *s, const char *key)
{
  const char *slash = strchr(key, '/');
  char ns[256];
  const json_t *job;
  json_t *next, *st;

  snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - key) : 0, key);
  job = gq_sim_get(jobs_kind(s), ns, slash ? slash + 1 : key);
  if (!job || json_object_get(json_object_get(job, "metadata"),
                              "deletionTimestamp"))
    return;
  next = json_deep_copy(job);
  if (!job_defaults(next)) {
    st = json_object_get(next, "status");
    if (!json_is_object(st)) {
      st = json_object();
      json_object_set_new(next, "status", st);
    }
    job_step(s, job, st);
  }
  if (json_equal(next, (json_t *)job))
    json_decref(next);
  else
    gq_sim_put(s, jobs_kind(s), next);
}

static void on_jobs_kick(uv_timer_t *t)
{
  struct gq_sim_engine *e = t->data;
  const char *key;
  json_t *v, *batch = json_object();
  void *it;
  int n = 0;

  for (it = json_object_iter(e->jobs_dirty); it && n < JOBS_PER_TURN;
       it = json_object_iter_next(e->jobs_dirty, it), n++)
    json_object_set_new(batch, json_object_iter_key(it), json_true());
  json_object_foreach(batch, key, v)
    json_object_del(e->jobs_dirty, key);
  json_object_foreach(batch, key, v)
    reconcile_job(e->s, key);
  json_decref(batch);
  if (json_object_size(e->jobs_dirty) && !e->closing)
    uv_timer_start(&e->jobs_kick, on_jobs_kick, 0, 0);
}

static void mark_job(struct gq_sim_engine *e, const char *ns,
                     const char *name)
{
  char key[600];

  if (e->closing)
    return;
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  json_object_set_new(e->jobs_dirty, key, json_true());
  if (!uv_is_active((uv_handle_t *)&e->jobs_kick))
    uv_timer_start(&e->jobs_kick, on_jobs_kick, 0, 0);
}

/* The Job that controls pod, or NULL (borrowed name). */
static const char *job_owner(const json_t *pod)
{
  const json_t *refs = json_object_get(json_object_get(pod, "metadata"),
                                       "ownerReferences"), *r;
  size_t i;

  json_array_foreach((json_t *)refs, i, r) {
    const char *k = json_string_value(json_object_get(r, "kind"));
    const char *a = json_string_value(json_object_get(r, "apiVersion"));

    if (k && a && !strcmp(k, "Job") && !strcmp(a, "batch/v1"))
      return json_string_value(json_object_get(r, "name"));
  }
  return NULL;
}

void gq_sim_jobs_observe(struct gq_sim *s, const struct gq_sim_event *ev,
                         void *arg)
{
  struct gq_sim_engine *e = s->engine;
  const struct gq_sim_kind *k = ev->kind;
  const char *owner;

  (void)arg;
  if (!e || e->closing)
    return;
  if (!strcmp(k->group, "batch") && !strcmp(k->plural, "jobs")) {
    if (ev->type != GQ_EV_DELETED)
      mark_job(e, gq_meta_str(ev->obj, "namespace"),
               gq_meta_str(ev->obj, "name"));
  } else if (!*k->group && !strcmp(k->plural, "pods") &&
             (owner = job_owner(ev->obj))) {
    mark_job(e, gq_meta_str(ev->obj, "namespace"), owner);
  }
}

void gq_sim_jobs_init(struct gq_sim_engine *e)
{
  e->jobs_dirty = json_object();
  uv_timer_init(e->s->loop, &e->jobs_kick);
  e->jobs_kick.data = e;
  gq_sim_store_observe(e->s, gq_sim_jobs_observe, NULL);
}

void gq_sim_jobs_close(struct gq_sim_engine *e)
{
  uv_close((uv_handle_t *)&e->jobs_kick, NULL);
}

void gq_sim_jobs_release(struct gq_sim_engine *e)
{
  json_decref(e->jobs_dirty);
  e->jobs_dirty = NULL;
}
