/* sim/jobs.c - batch/v1 Jobs: the API server's defaults and template
 * rules, and a Job controller (kube-controller-manager's, reduced to
 * NonIndexed jobs; "Job" in the Kubernetes API reference, KEP-2232 for
 * suspend, KEP-2926 for the mutable scheduling directives). The
 * controller observes the store, marks Jobs dirty and reconciles them on
 * the next loop turn from the stored state (level-based, like the
 * engine), so pods run in the sim's virtual time through the kubelet. Its
 * pod creates go through the admission webhooks as
 * system:serviceaccount:kube-system:job-controller; its status writes
 * do not. */
#include "sim/server.h"

#include "api/meta.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LBL_UID "batch.kubernetes.io/controller-uid"
#define LBL_NAME "batch.kubernetes.io/job-name"

static const struct gq_lc lc = {"sim", "jobs", NULL};

static struct gq_sim_kind *jobs_kind(struct gq_sim *s)
{
  return gq_sim_kind_find(s, "batch", "v1", "jobs");
}

static struct gq_sim_kind *pods_kind(struct gq_sim *s)
{
  return gq_sim_kind_find(s, "", "v1", "pods");
}

/* String member key of o, or "" (never NULL). */
static const char *sv(const json_t *o, const char *key)
{
  const char *v = json_string_value(json_object_get(o, key));

  return v ? v : "";
}

int gq_sim_is_job(const struct gq_sim_kind *k)
{
  return !strcmp(k->group, "batch") && !strcmp(k->plural, "jobs");
}

void gq_sim_job_defaults(json_t *job)
{
  json_t *spec = json_object_get(job, "spec");
  json_t *tmpl = json_object_get(spec, "template"), *tm, *labels, *sel;
  const char *uid = gq_meta_str(job, "uid"), *name = gq_meta_str(job, "name");

  if (!json_is_object(spec))
    return;
  /* a non-parallel Job: both unset means both 1 */
  if (!json_object_get(spec, "completions") &&
      !json_object_get(spec, "parallelism"))
    json_object_set_new(spec, "completions", json_integer(1));
  gq_sim_default(spec, "parallelism", json_integer(1));
  if (!json_object_get(spec, "podFailurePolicy"))
    gq_sim_default(spec, "podReplacementPolicy",
                   json_string("TerminatingOrFailed"));
  gq_sim_default(spec, "backoffLimit", json_integer(6));
  gq_sim_default(spec, "suspend", json_false());
  gq_sim_default(spec, "completionMode", json_string("NonIndexed"));
  if (!json_is_object(tmpl))
    json_object_set_new(spec, "template", tmpl = json_object());
  if (!json_is_object(tm = json_object_get(tmpl, "metadata")))
    json_object_set_new(tmpl, "metadata", tm = json_object());
  if (!json_is_object(labels = json_object_get(tm, "labels")))
    json_object_set_new(tm, "labels", labels = json_object());
  if (json_object_size(labels) &&
      !json_object_size(json_object_get(json_object_get(job, "metadata"),
                                        "labels")))
    json_object_set_new(json_object_get(job, "metadata"), "labels",
                        json_deep_copy(labels)); /* the template's, as given */
  json_object_set_new(labels, LBL_UID, json_string(uid));
  json_object_set_new(labels, LBL_NAME, json_string(name));
  json_object_set_new(labels, "controller-uid", json_string(uid));
  json_object_set_new(labels, "job-name", json_string(name));
  sel = json_pack("{s:{s:s}}", "matchLabels", LBL_UID, uid);
  gq_sim_default(spec, "selector", sel);
  gq_sim_default(json_object_get(tmpl, "spec") ? json_object_get(tmpl, "spec")
                                             : tmpl,
              "restartPolicy", json_string("Never"));
  gq_sim_podspec_defaults(json_object_get(tmpl, "spec"));
}

int gq_sim_job_check_update(const json_t *cur, const json_t *next,
                            char *err, size_t len)
{
  const json_t *cs = json_object_get(cur, "spec");
  const json_t *ns = json_object_get(next, "spec");
  const json_t *ct = json_object_get(cs, "template");
  const json_t *nt = json_object_get(ns, "template");
  int never_started = !json_object_get(json_object_get(cur, "status"),
                                       "startTime");
  char *shown;

  if (json_equal((json_t *)ct, (json_t *)nt))
    return 0;
  /* JobMutableNodeSchedulingDirectives: a suspended Job that never started
   * may change its pods' scheduling directives (the sim lets the whole
   * template change then) */
  if (json_is_true(json_object_get(cs, "suspend")) && never_started)
    return 0;
  shown = json_dumps(nt, JSON_COMPACT);
  snprintf(err, len, "spec.template: Invalid value: %.300s: field is "
           "immutable", shown ? shown : "null");
  free(shown);
  return -1;
}

/* --- the controller --- */

struct job_counts {
  int64_t active, ready, succeeded, failed;
};

static int is_ready(const json_t *pod)
{
  const json_t *cs = json_object_get(json_object_get(pod, "status"),
                                     "conditions"), *c;
  size_t i;

  json_array_foreach((json_t *)cs, i, c)
    if (!strcmp(sv(c, "type"),
                "Ready") &&
        !strcmp(sv(c, "status"), "True"))
      return 1;
  return 0;
}

/* Counts the Job's pods; with del, deletes the active ones. */
static void count_pods(struct gq_sim *s, const json_t *job, int del,
                       struct job_counts *n)
{
  json_t *pods = gq_sim_list(pods_kind(s), gq_meta_str(job, "namespace"));
  const char *uid = gq_meta_str(job, "uid");
  json_t *p;
  size_t i;

  memset(n, 0, sizeof(*n));
  json_array_foreach(pods, i, p) {
    const char *ph = sv(json_object_get(p, "status"), "phase");

    if (!gq_sim_owned_by(p, uid))
      continue;
    if (!strcmp(ph, "Succeeded"))
      n->succeeded++;
    else if (!strcmp(ph, "Failed"))
      n->failed++;
    else if (!json_object_get(json_object_get(p, "metadata"),
                              "deletionTimestamp")) {
      n->active++;
      n->ready += is_ready(p);
      if (del)
        json_decref(gq_sim_delete(s, pods_kind(s),
                                  gq_meta_str(p, "namespace"),
                                  gq_meta_str(p, "name"), -1, 0));
    }
  }
  json_decref(pods);
}

/* Pods of a Job that admission has not answered yet (they count as
 * active, like kube-controller-manager's expectations). */
static void inflight_add(struct gq_sim *s, const char *job_uid, int d)
{
  json_int_t n = json_integer_value(json_object_get(s->jobs_inflight,
                                                    job_uid)) + d;

  if (n > 0)
    json_object_set_new(s->jobs_inflight, job_uid, json_integer(n));
  else
    json_object_del(s->jobs_inflight, job_uid);
}

/* Admission let the pod (taken) through: it is stored. arg: the Job's uid
 * (owned). */
static void pod_admitted(struct gq_sim_req *r, json_t *pod, void *arg)
{
  char err[256];

  inflight_add(r->s, arg, -1);
  free(arg);
  if (!gq_sim_seed(r->s, r->k, pod, err, sizeof(err)))
    GQ_LOG(GQ_WARN, &lc, "cannot create pod %s/%s: %s", r->ns, r->name, err);
}

/* Admission refused the pod. The Job is not reconciled again until it or
 * one of its pods changes: the controller has no retry backoff, and an
 * immediate retry would call a denying webhook in a loop. */
static void pod_refused(struct gq_sim_req *r, int code, const char *msg,
                        void *arg)
{
  inflight_add(r->s, arg, -1);
  free(arg);
  GQ_LOG(GQ_WARN, &lc, "cannot create pod %s/%s: %d %s", r->ns, r->name,
         code, msg);
}

/* Creates pod (taken) for job through the admission chain, as the Job
 * controller's user. */
static void admit_pod(struct gq_sim *s, const json_t *job, json_t *pod)
{
  struct gq_sim_req r = {.s = s, .method = "POST", .k = pods_kind(s),
                         .user = &gq_sim_user_job_controller,
                         .refused = pod_refused};

  snprintf(r.ns, sizeof(r.ns), "%s", gq_meta_str(job, "namespace"));
  snprintf(r.name, sizeof(r.name), "%s", gq_meta_str(pod, "name"));
  inflight_add(s, gq_meta_str(job, "uid"), 1);
  gq_sim_admit(&r, "CREATE", NULL, pod, pod_admitted,
               gq_xstrdup(gq_meta_str(job, "uid")));
}

/* Creates one pod from the Job's template, owned by the Job. */
static void create_pod(struct gq_sim *s, const json_t *job)
{
  static const char alpha[] = "abcdefghijklmnopqrstuvwxyz";
  const json_t *tmpl = json_object_get(json_object_get(job, "spec"),
                                       "template");
  json_t *pod = json_pack("{s:s, s:s, s:{}, s:O, s:{s:s}}", "apiVersion",
                          "v1", "kind", "Pod", "metadata", "spec",
                          json_object_get(tmpl, "spec"), "status", "phase",
                          "Pending");
  json_t *meta = json_object_get(pod, "metadata");
  const json_t *tm = json_object_get(tmpl, "metadata");
  char name[300], uid[40];
  size_t n;

  gq_sim_uuid(uid);
  n = (size_t)snprintf(name, sizeof(name), "%.240s-",
                       gq_meta_str(job, "name"));
  for (int i = 0; i < 5; i++)
    name[n + i] = alpha[(unsigned char)uid[i * 2 + 1] % 26];
  name[n + 5] = '\0';
  json_object_set_new(meta, "name", json_string(name));
  json_object_set_new(meta, "namespace",
                      json_string(gq_meta_str(job, "namespace")));
  json_object_set(meta, "labels", json_object_get(tm, "labels"));
  if (json_object_get(tm, "annotations"))
    json_object_set(meta, "annotations", json_object_get(tm, "annotations"));
  json_object_set_new(meta, "ownerReferences",
                      json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]",
                                "apiVersion", "batch/v1", "kind", "Job",
                                "name", gq_meta_str(job, "name"), "uid",
                                gq_meta_str(job, "uid"), "controller", 1,
                                "blockOwnerDeletion", 1));
  if (!json_object_get(json_object_get(pod, "spec"),
                       "terminationGracePeriodSeconds"))
    json_object_set_new(json_object_get(pod, "spec"),
                        "terminationGracePeriodSeconds", json_integer(30));
  admit_pod(s, job, pod);
}

/* Sets condition type to status (reason, message) in st's conditions,
 * keeping lastTransitionTime when the status does not change. Returns 1
 * if the condition is (now) set to status. */
static void set_cond(json_t *st, const char *type, const char *status,
                     const char *reason, const char *msg, const char *ts)
{
  json_t *cs = json_object_get(st, "conditions"), *c;
  size_t i;

  if (!json_is_array(cs))
    json_object_set_new(st, "conditions", cs = json_array());
  json_array_foreach(cs, i, c) {
    if (strcmp(sv(c, "type"), type))
      continue;
    if (strcmp(sv(c, "status"),
               status))
      json_object_set_new(c, "lastTransitionTime", json_string(ts));
    json_object_set_new(c, "status", json_string(status));
    json_object_set_new(c, "reason", json_string(reason));
    json_object_set_new(c, "message", json_string(msg));
    return;
  }
  json_array_append_new(cs, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}",
                                      "type", type, "status", status,
                                      "reason", reason, "message", msg,
                                      "lastProbeTime", ts,
                                      "lastTransitionTime", ts));
}

static int cond_true(const json_t *st, const char *type)
{
  const json_t *c;
  size_t i;

  json_array_foreach(json_object_get(st, "conditions"), i, c)
    if (!strcmp(sv(c, "type"), type))
      return !strcmp(sv(c, "status"),
                     "True");
  return 0;
}

static int64_t spec_int(const json_t *job, const char *key, int64_t dflt)
{
  const json_t *v = json_object_get(json_object_get(job, "spec"), key);

  return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* The Job's terminal conditions, when its counts reach one. Returns 1 if
 * the Job is (now) finished. */
static int finish(json_t *st, const json_t *job, const struct job_counts *n,
                  const char *ts)
{
  int64_t comp = spec_int(job, "completions", -1);

  if (n->failed > spec_int(job, "backoffLimit", 6)) {
    set_cond(st, "FailureTarget", "True", "BackoffLimitExceeded",
             "Job has reached the specified backoff limit", ts);
    set_cond(st, "Failed", "True", "BackoffLimitExceeded",
             "Job has reached the specified backoff limit", ts);
    return 1;
  }
  if ((comp >= 0 && n->succeeded >= comp) ||
      (comp < 0 && n->succeeded > 0 && n->active == 0)) {
    set_cond(st, "SuccessCriteriaMet", "True", "CompletionsReached",
             "Reached expected number of succeeded pods", ts);
    set_cond(st, "Complete", "True", "CompletionsReached",
             "Reached expected number of succeeded pods", ts);
    json_object_set_new(st, "completionTime", json_string(ts));
    return 1;
  }
  return 0;
}

/* One Job: the pods it should have, then its status. */
static void reconcile(struct gq_sim *s, const json_t *job)
{
  json_t *next = gq_sim_copy(job), *st = json_object_get(next, "status");
  int suspend = json_is_true(json_object_get(json_object_get(job, "spec"),
                                             "suspend"));
  int64_t par = spec_int(job, "parallelism", 1);
  int64_t comp = spec_int(job, "completions", -1), want;
  struct job_counts n;
  char ts[40];

  if (!json_is_object(st))
    json_object_set_new(next, "status", st = json_object());
  gq_time_format(gq_clock_now_ms(), ts, sizeof(ts));
  if (cond_true(st, "Complete") || cond_true(st, "Failed")) {
    json_decref(next);
    return;
  }
  count_pods(s, job, suspend, &n);
  n.active += json_integer_value(json_object_get(s->jobs_inflight,
                                                 gq_meta_str(job, "uid")));
  if (suspend) {
    n.active = n.ready = 0;
    set_cond(st, "Suspended", "True", "JobSuspended", "Job suspended", ts);
  } else {
    if (cond_true(st, "Suspended"))
      set_cond(st, "Suspended", "False", "JobResumed", "Job resumed", ts);
    if (!json_object_get(st, "startTime"))
      json_object_set_new(st, "startTime", json_string(ts));
    if (finish(st, job, &n, ts)) {
      struct job_counts gone;

      count_pods(s, job, 1, &gone);
      n.active = n.ready = 0;
    } else {
      want = comp >= 0 ? (par < comp - n.succeeded ? par
                                                    : comp - n.succeeded)
                       : (n.succeeded ? 0 : par);
      for (; n.active < want; n.active++)
        create_pod(s, job);
    }
  }
  json_object_set_new(st, "active", json_integer(n.active));
  json_object_set_new(st, "ready", json_integer(n.ready));
  json_object_set_new(st, "succeeded", json_integer(n.succeeded));
  json_object_set_new(st, "failed", json_integer(n.failed));
  if (json_equal(next, (json_t *)job)) {
    json_decref(next);
    return;
  }
  gq_sim_put(s, jobs_kind(s), next);
}

static void on_kick(uv_timer_t *t)
{
  struct gq_sim *s = t->data;
  json_t *dirty = s->jobs_dirty, *v;
  const char *key;

  s->jobs_dirty = json_object();
  json_object_foreach(dirty, key, v) {
    const char *slash = strchr(key, '/');
    char ns[256];
    const json_t *job;

    snprintf(ns, sizeof(ns), "%.*s", (int)(slash - key), key);
    if ((job = gq_sim_get(jobs_kind(s), ns, slash + 1)))
      reconcile(s, job);
  }
  json_decref(dirty);
}

static void mark(struct gq_sim *s, const char *ns, const char *name)
{
  char key[600];

  snprintf(key, sizeof(key), "%s/%s", ns, name);
  json_object_set_new(s->jobs_dirty, key, json_true());
  if (!s->jobs_closing)
    uv_timer_start(&s->jobs_timer, on_kick, 0, 0);
}

/* The store observer: a Job's change or a change of a pod it owns marks
 * the Job for reconciling. */
static void observe(struct gq_sim *s, const struct gq_sim_event *ev,
                    void *arg)
{
  const json_t *refs, *r;
  size_t i;

  (void)arg;
  if (gq_sim_is_job(ev->kind) && ev->type != GQ_EV_DELETED) {
    mark(s, gq_meta_str(ev->obj, "namespace"), gq_meta_str(ev->obj, "name"));
    return;
  }
  if (*ev->kind->group || strcmp(ev->kind->plural, "pods"))
    return;
  refs = json_object_get(json_object_get(ev->obj, "metadata"),
                         "ownerReferences");
  json_array_foreach((json_t *)refs, i, r)
    if (!strcmp(sv(r, "kind"), "Job"))
      mark(s, gq_meta_str(ev->obj, "namespace"),
           sv(r, "name"));
}

void gq_sim_jobs_start(struct gq_sim *s)
{
  s->jobs_dirty = json_object();
  s->jobs_inflight = json_object();
  uv_timer_init(s->loop, &s->jobs_timer);
  s->jobs_timer.data = s;
  gq_sim_store_observe(s, observe, NULL);
}

void gq_sim_jobs_stop(struct gq_sim *s)
{
  s->jobs_closing = 1;
  uv_close((uv_handle_t *)&s->jobs_timer, NULL);
}

void gq_sim_jobs_release(struct gq_sim *s)
{
  json_decref(s->jobs_dirty);
  json_decref(s->jobs_inflight);
  s->jobs_dirty = s->jobs_inflight = NULL;
}
