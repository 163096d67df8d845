/* controller/workload.c - pods, pod groups and batch/v1 Jobs that gpuq did
 * not create, queued like GpuJobs (docs/integrations.md).
 *
 * gpuq's admission webhook gates every GPU pod of a team namespace
 * (scheduling gate GQ_GATE_ADMISSION) and suspends every GPU Job there.
 * For each such workload the controller creates one GpuJob, its stand-in:
 * spec.workload names the workload, the spec's team, replicas, GPUs,
 * priority class and pod template are the workload's. The stand-in goes
 * through the queue, quota, placement, preemption and status like any
 * GpuJob; only the acts differ, and they are here:
 *   - admitted: instead of creating pods, each pod of a Pod or PodGroup is
 *     patched (gpuq's labels, the chosen node pinned by node affinity, the
 *     gate removed: the mutable scheduling directives of a gated pod,
 *     KEP-3838), and a Job gets the labels and the pin in its template and
 *     is unsuspended (mutable scheduling directives of a suspended Job,
 *     KEP-2926);
 *   - torn down: a pod is deleted as gpuq's own are; a Job is suspended
 *     again (its controller deletes its pods) and its status.startTime
 *     cleared so that its template may be pinned anew (as Kueue does);
 *   - a pod has no resume: a disrupted pod ends its stand-in Failed
 *     (spec one_shot); a Job is requeued and resumes as a new attempt;
 *   - a Job's own Complete or Failed condition ends its stand-in;
 *   - a stand-in whose workload is gone is deleted (by the garbage
 *     collector, its ownerReferences naming the workload, and by gpuq for
 *     a pod group that lost one pod while queued), unless it still holds
 *     an admission (then the lifecycle ends it first). A preempted pod's
 *     story stays in the events of its stand-in (reason Preempted).
 * The stand-in's name is derived from the workload's (gq_wl_shadow_name),
 * so a restarted controller, or two at once, never make two; its
 * ownerReferences name the workload, so a real cluster's garbage collector
 * deletes it with the workload as well.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/meta.h"
#include "api/pod.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "controller/ctl_int.h"
#include "controller/podspec.h"
#include "decide/admission.h"
#include "decide/names.h"

static const struct gq_lc lc = {"controller", "workload", NULL};

#define JOBS_API "/apis/batch/v1"

/* ---- reading workloads ------------------------------------------------ */

static int deleting(const json_t *obj)
{
  const json_t *d = json_object_get(json_object_get(obj, "metadata"),
                                    "deletionTimestamp");

  return d && !json_is_null(d);
}

/* 1 if gpuq's webhook marked obj as its to queue (GQ_ANN_MANAGED). */
static int managed(const json_t *obj)
{
  const char *m = gq_meta_obj_annotation(obj, GQ_ANN_MANAGED);

  return m && !strcmp(m, "true");
}

/* A pod the webhook gated, waiting for gpuq: managed, gated, not gpuq's. */
static int pod_waiting(const json_t *pod)
{
  return managed(pod) && gq_pod_has_gate(pod, GQ_GATE_ADMISSION) &&
         !deleting(pod) && !gq_meta_obj_label(pod, GQ_LBL_JOB_UID);
}

/* The GPU resource sched requests, and how many per pod: nvidia.com/gpu,
 * else the first other GPU resource (a MIG profile: the webhook's rule,
 * gq_adm_is_gpu_resource). 0 when none. */
static int64_t gpu_request(const struct gq_podsched *s, const char **res)
{
  int64_t n = gq_podsched_request(s, GQ_DEFAULT_GPU_RESOURCE);

  *res = GQ_DEFAULT_GPU_RESOURCE;
  for (size_t i = 0; !n && i < s->n_extended; i++)
    if (gq_adm_is_gpu_resource(s->extended[i].name) &&
        s->extended[i].value > 0) {
      *res = s->extended[i].name;
      n = s->extended[i].value;
    }
  return n;
}

struct quota_list {
  const struct gq_teamquota **v; /* borrowed from the informer */
  size_t n;
};

static void collect_quota(const json_t *obj, void *typed, void *arg)
{
  struct quota_list *q = arg;

  (void)obj;
  if (typed)
    q->v[q->n++] = typed;
}

/* The team of a workload, by the webhook's rule (gq_adm_team): its
 * GQ_LBL_TEAM label if that TeamQuota admits ns, else the one TeamQuota
 * that admits ns. NULL: none, several, or a label that does not fit. */
static const char *team_of(struct ctl *c, const json_t *obj, const char *ns)
{
  struct quota_list q = {0};
  const char *team = NULL;

  q.v = gq_xcalloc(gq_informer_size(c->inf_quotas) + 1, sizeof(*q.v));
  gq_informer_foreach(c->inf_quotas, collect_quota, &q);
  gq_adm_team(gq_meta_obj_label(obj, GQ_LBL_TEAM), ns, q.v, q.n, &team);
  free(q.v);
  return team;
}

/* ---- the stand-in GpuJob ---------------------------------------------- */

struct stand_in {
  enum gq_wl_kind kind;
  const char *ns, *name, *team, *res;
  int32_t replicas;
  int64_t gpus;          /* per replica */
  const json_t *tmpl;    /* the pod template: {metadata, spec} */
  json_t *pods;          /* Pod, PodGroup: names in replica order (owned) */
  json_t *owners;        /* ownerReferences (owned) */
};

static json_t *owner(const json_t *obj, const char *api, const char *kind)
{
  return json_pack("{s:s, s:s, s:s, s:s}", "apiVersion", api, "kind", kind,
                   "name", gq_meta_str(obj, "name"), "uid",
                   gq_meta_str(obj, "uid"));
}

/* The pod template of a pod: its labels and its spec, less what gpuq or
 * the scheduler set on it (gates, nodeName). */
static json_t *pod_template(const json_t *pod)
{
  json_t *spec = json_deep_copy(json_object_get(pod, "spec"));
  const json_t *labels =
      json_object_get(json_object_get(pod, "metadata"), "labels");

  json_object_del(spec, "schedulingGates");
  json_object_del(spec, "nodeName");
  return json_pack("{s:{s:O}, s:o}", "metadata", "labels",
                   labels ? labels : json_object(), "spec", spec);
}

/* Drops resource res from the requests and limits of every container of
 * the template's spec (a GpuJob's template must not ask for its GPUs:
 * gpuq sets them from gpusPerReplica). The template is changed in place. */
static void strip_gpus(json_t *tmpl, const char *res)
{
  json_t *spec = json_object_get(tmpl, "spec"), *c, *r;
  size_t i;

  for (int k = 0; k < 2; k++)
    json_array_foreach(json_object_get(spec, k ? "initContainers"
                                               : "containers"), i, c) {
      r = json_object_get(c, "resources");
      json_object_del(json_object_get(r, "limits"), res);
      json_object_del(json_object_get(r, "requests"), res);
    }
}

static json_t *stand_in_json(const struct stand_in *w)
{
  char name[GQ_WL_NAME_MAX + 1];
  const json_t *spec = json_object_get(w->tmpl, "spec");
  const char *pc = json_string_value(json_object_get(spec,
                                                     "priorityClassName"));
  json_t *wl = json_pack("{s:s, s:s}", "kind", gq_wl_kind_name(w->kind),
                         "name", w->name);
  json_t *s, *obj;

  json_t *tmpl = json_deep_copy(w->tmpl);

  gq_wl_shadow_name(w->kind, w->name, name, sizeof(name));
  if (w->pods)
    json_object_set(wl, "pods", w->pods);
  strip_gpus(tmpl, w->res);
  s = json_pack("{s:s, s:i, s:I, s:{s:s}, s:i, s:o, s:o}", "team", w->team,
                "replicas", (int)w->replicas, "gpusPerReplica",
                (json_int_t)w->gpus, "gpu", "resource", w->res,
                "backoffLimit", 0, "workload", wl, "template", tmpl);
  if (pc)
    json_object_set_new(s, "priorityClassName", json_string(pc));
  else if (json_is_integer(json_object_get(spec, "priority")))
    json_object_set(s, "priority", json_object_get(spec, "priority"));
  obj = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:O}, s:o}",
                  "apiVersion", GQ_API_VERSION, "kind", "GpuJob", "metadata",
                  "name", name, "namespace", w->ns, "labels",
                  GQ_LBL_TEAM, w->team, "ownerReferences", w->owners,
                  "spec", s);
  return obj;
}

struct create_ctx {
  struct ctl *c;
  char *key;
};

static void created(int rc, const struct gq_k8s_status *st, const json_t *obj,
                    void *arg)
{
  struct create_ctx *x = arg;
  struct cstr *p;

  (void)obj;
  ctl_write_end(x->c);
  if (rc != 0 && rc != GQ_EEXIST)
    ctl_api_error(x->c, "create", "gpujob (workload stand-in)", rc, st);
  HASH_FIND_STR(x->c->wl_creating, x->key, p);
  if (p) {
    HASH_DEL(x->c->wl_creating, p);
    free(p);
  }
  free(x->key);
  free(x);
}

/* 1 if the stand-in of workload (kind, ns, name) exists or its create is
 * in flight; its key ("ns/stand-in name") goes into key. Checked before
 * anything is read of the workload: most events are of workloads queued
 * already. */
static void stand_in_key(enum gq_wl_kind kind, const char *ns,
                         const char *name, char *key, size_t len)
{
  char sname[GQ_WL_NAME_MAX + 1];

  gq_wl_shadow_name(kind, name, sname, sizeof(sname));
  snprintf(key, len, "%s/%s", ns, sname);
}

static int stand_in_known(struct ctl *c, enum gq_wl_kind kind,
                          const char *ns, const char *name, char *key,
                          size_t len)
{
  struct cstr *p;

  stand_in_key(kind, ns, name, key, len);
  HASH_FIND_STR(c->wl_creating, key, p);
  return p || gq_informer_typed(c->inf_jobs, key);
}

/* Creates w's stand-in unless it exists or its create is in flight. */
static void stand_in_create(struct ctl *c, const struct stand_in *w)
{
  char name[GQ_WL_NAME_MAX + 1], key[400], coll[400];
  struct create_ctx *x;
  struct cstr *p;
  json_t *obj;

  if (stand_in_known(c, w->kind, w->ns, w->name, key, sizeof(key)))
    return;
  gq_wl_shadow_name(w->kind, w->name, name, sizeof(name));
  p = gq_xcalloc(1, sizeof(*p) + strlen(key) + 1);
  memcpy(p->s, key, strlen(key) + 1);
  HASH_ADD_STR(c->wl_creating, s, p);
  obj = stand_in_json(w);
  GQ_LOG(GQ_INFO, &lc, "%s %s/%s: queued as gpujob %s (%d x %lld %s, team "
         "%s)", gq_wl_kind_name(w->kind), w->ns, w->name, name,
         (int)w->replicas, (long long)w->gpus, w->res, w->team);
  snprintf(coll, sizeof(coll), "/apis/%s/namespaces/%s/gpujobs",
           GQ_API_VERSION, w->ns);
  x = gq_xcalloc(1, sizeof(*x));
  x->c = c;
  x->key = gq_xstrdup(key);
  ctl_write_begin(c);
  if (gq_kclient_create_how(c->kc, coll, obj, CTL_WORK, created, x) != 0)
    created(GQ_EIO, NULL, NULL, x);
  json_decref(obj);
}

/* ---- pods and pod groups ---------------------------------------------- */

struct group_scan {
  const char *ns, *group;
  json_t *pods;   /* the waiting pods of the group (references) */
};

static void scan_one(const json_t *obj, void *typed, void *arg)
{
  struct group_scan *g = arg;
  const char *grp = obj ? gq_meta_obj_label(obj, GQ_LBL_POD_GROUP) : NULL;

  (void)typed;
  if (grp && !strcmp(grp, g->group) &&
      !strcmp(gq_meta_str(obj, "namespace"), g->ns) && pod_waiting(obj))
    json_array_append(g->pods, (json_t *)obj);
}

static int by_name(const void *a, const void *b)
{
  return strcmp(gq_meta_str(*(json_t *const *)a, "name"),
                gq_meta_str(*(json_t *const *)b, "name"));
}

/* The waiting pods of pod's group, sorted by name, once all of them
 * (gpuq.dev/pod-group-total) exist; else NULL (logged when the label is
 * not a count). */
static json_t *group_pods(struct ctl *c, const json_t *pod, const char *grp)
{
  struct group_scan g = {gq_meta_str(pod, "namespace"), grp, json_array()};
  const char *tl = gq_meta_obj_label(pod, GQ_LBL_POD_GROUP_TOTAL);
  int64_t total;
  json_t **v, *out;
  size_t n;

  if (!tl || gq_parse_int64(tl, &total) != 0 || total < 1 ||
      total > GQ_MAX_REPLICAS) {
    GQ_LOG(GQ_WARN, &lc, "pod %s/%s: label %s=\"%s\" must be a count of "
           "pods, 1..%d; the group waits", g.ns, gq_meta_str(pod, "name"),
           GQ_LBL_POD_GROUP_TOTAL, tl ? tl : "", GQ_MAX_REPLICAS);
    json_decref(g.pods);
    return NULL;
  }
  gq_informer_foreach(c->inf_pods, scan_one, &g);
  n = json_array_size(g.pods);
  if ((int64_t)n != total) {
    json_decref(g.pods);
    return NULL;
  }
  v = gq_xcalloc(n, sizeof(*v));
  for (size_t i = 0; i < n; i++)
    v[i] = json_array_get(g.pods, i);
  qsort(v, n, sizeof(*v), by_name);
  out = json_array();
  for (size_t i = 0; i < n; i++)
    json_array_append(out, v[i]);
  free(v);
  json_decref(g.pods);
  return out;
}

/* Queues a waiting pod (or its group, once whole). */
static void pod_queue(struct ctl *c, const json_t *pod)
{
  const char *ns = gq_meta_str(pod, "namespace");
  const char *grp = gq_meta_obj_label(pod, GQ_LBL_POD_GROUP);
  struct stand_in w = {grp ? GQ_WL_POD_GROUP : GQ_WL_POD, ns,
                       grp ? grp : gq_meta_str(pod, "name"), NULL, NULL,
                       0, 0, NULL, NULL, NULL};
  const struct gq_pod *p;
  char key[600];
  size_t i;
  json_t *e, *pods;

  if (stand_in_known(c, w.kind, ns, w.name, key, sizeof(key)))
    return; /* before a group's scan of every pod */
  pods = grp ? group_pods(c, pod, grp) : json_pack("[O]", pod);
  w.pods = json_array();
  w.owners = json_array();
  if (!pods)
    goto out;
  snprintf(key, sizeof(key), "%s/%s", ns, gq_meta_str(pod, "name"));
  p = gq_informer_typed(c->inf_pods, key);
  w.team = team_of(c, pod, ns);
  w.gpus = p ? gpu_request(&p->sched, &w.res) : 0;
  if (!w.team || w.gpus <= 0) {
    GQ_LOG(GQ_WARN, &lc, "pod %s: gated by gpuq but %s; it waits", key,
           !w.team ? "no single team admits its namespace (label it "
                     GQ_LBL_TEAM ")"
                   : "it requests no GPUs");
    goto out;
  }
  w.replicas = (int32_t)json_array_size(pods);
  json_array_foreach(pods, i, e) {
    json_array_append_new(w.pods, json_string(gq_meta_str(e, "name")));
    json_array_append_new(w.owners, owner(e, "v1", "Pod"));
  }
  w.tmpl = pod_template(pod);
  stand_in_create(c, &w);
  json_decref((json_t *)w.tmpl);
out:
  json_decref(pods);
  json_decref(w.pods);
  json_decref(w.owners);
}

/* ---- batch/v1 Jobs ---------------------------------------------------- */

/* A Job's Complete or Failed condition (True): 1 complete, 2 failed, 0
 * neither; *msg its message (borrowed) or NULL. */
static int job_ended(const json_t *job, const char **msg)
{
  const json_t *conds = json_object_get(json_object_get(job, "status"),
                                        "conditions"), *e;
  size_t i;

  *msg = NULL;
  json_array_foreach((json_t *)conds, i, e) {
    const char *t = json_string_value(json_object_get(e, "type"));
    const char *s = json_string_value(json_object_get(e, "status"));

    if (!t || !s || strcmp(s, "True"))
      continue;
    *msg = json_string_value(json_object_get(e, "message"));
    if (!strcmp(t, "Complete"))
      return 1;
    if (!strcmp(t, "Failed"))
      return 2;
  }
  return 0;
}

static int64_t job_parallelism(const json_t *job)
{
  const json_t *spec = json_object_get(job, "spec");
  const json_t *p = json_object_get(spec, "parallelism");
  const json_t *k = json_object_get(spec, "completions");
  int64_t n = json_is_integer(p) ? json_integer_value(p) : 1;

  if (json_is_integer(k) && json_integer_value(k) < n)
    n = json_integer_value(k);
  return n;
}

/* Queues a Job the webhook suspended, unless it is done or started. */
static void job_queue(struct ctl *c, const json_t *job)
{
  const char *msg;
  const json_t *spec = json_object_get(job, "spec");
  const char *ns = gq_meta_str(job, "namespace");
  struct stand_in w = {GQ_WL_JOB, ns, gq_meta_str(job, "name"), NULL, NULL,
                       0, 0, NULL, NULL, NULL};
  const json_t *tmpl = json_object_get(spec, "template");
  char err[GQ_DEC_MSG_MAX], key[400];
  struct gq_pod tp;
  json_t *pod;
  int64_t n = job_parallelism(job);

  if (!managed(job) || stand_in_known(c, GQ_WL_JOB, ns, w.name, key,
                                      sizeof(key)) ||
      !json_is_true(json_object_get(spec, "suspend")) ||
      deleting(job) || job_ended(job, &msg) || n < 1 || n > GQ_MAX_REPLICAS ||
      !json_is_object(json_object_get(tmpl, "spec")))
    return;
  /* the template decoded as a pod, for its GPU request */
  pod = json_pack("{s:s, s:s, s:{s:s, s:s}, s:O}", "apiVersion", "v1", "kind",
                  "Pod", "metadata", "name", w.name, "namespace", ns, "spec",
                  json_object_get(tmpl, "spec"));
  if (gq_pod_decode(pod, &tp, err, sizeof(err)) != 0) {
    GQ_LOG(GQ_WARN, &lc, "job %s/%s: its pod template is not a valid pod: "
           "%s; it waits", ns, w.name, err);
    json_decref(pod);
    return;
  }
  w.gpus = gpu_request(&tp.sched, &w.res);
  gq_pod_release(&tp);
  json_decref(pod);
  w.team = team_of(c, job, ns);
  if (!w.team || w.gpus <= 0)
    return;
  w.replicas = (int32_t)n;
  w.tmpl = tmpl;
  w.owners = json_pack("[o]", owner(job, "batch/v1", "Job"));
  stand_in_create(c, &w);
  json_decref(w.owners);
}

/* ---- events ----------------------------------------------------------- */

/* Marks the stand-in of the workload (kind, ns, name), if it exists. */
static void mark_stand_in(struct ctl *c, enum gq_wl_kind kind,
                          const char *ns, const char *name)
{
  char key[400];
  const struct gq_gpujob *j;

  stand_in_key(kind, ns, name, key, sizeof(key));
  j = gq_informer_typed(c->inf_jobs, key);
  if (j)
    ctl_mark(c, ctl_job(c, j->meta.uid));
}

void workload_pod_event(struct ctl *c, const json_t *pod, int present)
{
  const char *grp;

  if (!managed(pod))
    return;
  grp = gq_meta_obj_label(pod, GQ_LBL_POD_GROUP);
  if (!present) { /* its stand-in may have to go */
    mark_stand_in(c, grp ? GQ_WL_POD_GROUP : GQ_WL_POD,
                  gq_meta_str(pod, "namespace"),
                  grp ? grp : gq_meta_str(pod, "name"));
    return;
  }
  if (ctl_acting(c) && pod_waiting(pod))
    pod_queue(c, pod);
}

void workload_job_event(struct ctl *c, const json_t *job, int present)
{
  if (!managed(job))
    return;
  mark_stand_in(c, GQ_WL_JOB, gq_meta_str(job, "namespace"),
                gq_meta_str(job, "name"));
  if (present && ctl_acting(c))
    job_queue(c, job);
}

static void sync_pod(const json_t *obj, void *typed, void *arg)
{
  (void)typed;
  if (obj && pod_waiting(obj))
    pod_queue(arg, obj);
}

static void sync_job(const json_t *obj, void *typed, void *arg)
{
  (void)typed;
  if (obj)
    job_queue(arg, obj);
}

void workload_sync(struct ctl *c)
{
  if (!ctl_acting(c))
    return;
  gq_informer_foreach(c->inf_pods, sync_pod, c);
  gq_informer_foreach(c->inf_batch, sync_job, c);
}

/* ---- acts on a stand-in ------------------------------------------------ */

/* The labels gpuq's pods carry (DESIGN §3); replica < 0: none (a Job's
 * template, shared by its pods). */
static json_t *gpuq_labels(const struct cjob *cj, const struct gq_gpujob *j,
                           int32_t replica)
{
  char a[32], r[32];
  json_t *l;

  snprintf(a, sizeof(a), "%lld", (long long)cj->attempt);
  l = json_pack("{s:s, s:s, s:s, s:s}", GQ_LBL_JOB, j->meta.name,
                GQ_LBL_JOB_UID, j->meta.uid, GQ_LBL_ATTEMPT, a, GQ_LBL_TEAM,
                cj->team);
  if (replica >= 0) {
    snprintf(r, sizeof(r), "%d", (int)replica);
    json_object_set_new(l, GQ_LBL_REPLICA, json_string(r));
  }
  return l;
}

/* spec's node affinity with the pin to nodes added (podspec.h). */
static json_t *pinned_affinity(const json_t *spec,
                               const struct gq_node *const *nodes, size_t n)
{
  json_t *s = json_object(), *a = json_object_get(spec, "affinity"), *out;

  if (json_is_object(a))
    json_object_set_new(s, "affinity", json_deep_copy(a));
  gq_podspec_pin_nodes(s, nodes, n);
  out = json_incref(json_object_get(s, "affinity"));
  json_decref(s);
  return out;
}

/* spec.schedulingGates without gpuq's. */
static json_t *other_gates(const json_t *spec)
{
  const json_t *g = json_object_get(spec, "schedulingGates"), *e;
  json_t *out = json_array();
  size_t i;

  json_array_foreach((json_t *)g, i, e) {
    const char *n = json_string_value(json_object_get(e, "name"));

    if (!n || strcmp(n, GQ_GATE_ADMISSION))
      json_array_append(out, (json_t *)e);
  }
  return out;
}

void workload_replica_done(struct ctl *c, const char *uid, const char *pod_key,
                       int64_t attempt, int ok)
{
  struct cjob *cj = ctl_job(c, uid);

  c->creating--;
  if (!ok)
    gq_capacity_unassume(&c->cap, pod_key);
  if (cj && cj->attempt == attempt && cj->creates_left > 0) {
    cj->creates_left--;
    /* the first failure of an active attempt: a placement miss (the
     * reconcile tears it down) */
    if (!ok && cj->state == CJ_ACTIVE && !cj->create_miss)
      cj->create_miss = GQ_LIFE_MISS_CREATE;
    if (cj->creates_left == 0 && cj->state == CJ_ACTIVE && !cj->create_miss) {
      const char *l[] = {cj->team};

      gq_metric_observe(c->m_adm_latency, l,
                        (double)(gq_clock_mono_ms() - cj->pass_ms) / 1000.0);
    }
    ctl_mark(c, cj);
  }
  ctl_write_end(c);
}

struct patch_ctx {
  struct ctl *c;
  char *uid, *pod_key;
  int64_t attempt;
};

static void pod_patched(int rc, const struct gq_k8s_status *st,
                        const json_t *obj, void *arg)
{
  struct patch_ctx *x = arg;

  (void)obj;
  if (rc != 0)
    ctl_api_error(x->c, "patch", "pod (admit)", rc, st);
  workload_replica_done(x->c, x->uid, x->pod_key, x->attempt, rc == 0);
  free(x->uid);
  free(x->pod_key);
  free(x);
}

/* Admits replica r of a Pod or PodGroup stand-in: its pod gets gpuq's
 * labels and annotations, the pin to its node and loses the gate. */
static void admit_pod(struct ctl *c, struct cjob *cj,
                      const struct gq_gpujob *j, int32_t r)
{
  char key[600], path[700];
  const json_t *pod, *spec;
  const struct gq_node *n;
  struct patch_ctx *x;
  json_t *patch;

  snprintf(key, sizeof(key), "%s/%s", cj->ns, j->wl_pods[r]);
  pod = gq_informer_get(c->inf_pods, key);
  n = gq_informer_typed(c->inf_nodes, cj->nodes[r]);
  x = gq_xcalloc(1, sizeof(*x));
  *x = (struct patch_ctx){c, gq_xstrdup(cj->uid), gq_xstrdup(key),
                          cj->attempt};
  c->creating++;
  ctl_write_begin(c);
  if (!pod || !n || !gq_pod_has_gate(pod, GQ_GATE_ADMISSION)) {
    GQ_LOG(GQ_WARN, &lc, "job %s: pod %s is %s; the attempt is a miss",
           cj->key, key, !pod ? "gone" : !n ? "on a node that is gone"
                                            : "no longer gated");
    pod_patched(GQ_ENOTFOUND, NULL, NULL, x);
    return;
  }
  spec = json_object_get(pod, "spec");
  patch = json_pack("{s:{s:o, s:{s:s, s:s}}, s:{s:o, s:o}}", "metadata",
                    "labels", gpuq_labels(cj, j, r), "annotations",
                    GQ_ANN_FLAVOR, cj->flavor, GQ_ANN_NODE, cj->nodes[r],
                    "spec", "schedulingGates", other_gates(spec), "affinity",
                    pinned_affinity(spec, &n, 1));
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", cj->ns,
           j->wl_pods[r]);
  if (gq_kclient_patch_how(c->kc, path, "merge", patch, CTL_WORK,
                           pod_patched, x) != 0)
    pod_patched(GQ_EIO, NULL, NULL, x);
  json_decref(patch);
}

static void job_patched(int rc, const struct gq_k8s_status *st,
                        const json_t *obj, void *arg)
{
  struct patch_ctx *x = arg;
  struct cjob *cj = ctl_job(x->c, x->uid);

  (void)obj;
  ctl_write_end(x->c);
  if (rc != 0) {
    ctl_api_error(x->c, "patch", "job (admit)", rc, st);
    if (cj && cj->attempt == x->attempt && cj->state == CJ_ACTIVE) {
      cj->creates_left = 0;
      cj->create_miss = GQ_LIFE_MISS_CREATE;
      ctl_mark(x->c, cj);
    }
  }
  free(x->uid);
  free(x);
}

/* Admits a Job stand-in: its template gets gpuq's labels, the flavor and
 * the pin to the attempt's nodes, and the Job is unsuspended. Its pods,
 * made by the Job controller, count as the attempt's creates as they
 * appear (workload_pod_of_attempt). */
static void admit_job(struct ctl *c, struct cjob *cj,
                      const struct gq_gpujob *j)
{
  char key[400], path[700];
  const json_t *job = NULL, *tspec;
  const struct gq_node **nodes = gq_xcalloc((size_t)cj->replicas,
                                            sizeof(*nodes));
  struct patch_ctx *x;
  size_t n = 0;
  json_t *patch;

  snprintf(key, sizeof(key), "%s/%s", cj->ns, j->wl_name);
  job = gq_informer_get(c->inf_batch, key);
  for (int32_t r = 0; r < cj->replicas; r++) {
    const struct gq_node *nd = gq_informer_typed(c->inf_nodes, cj->nodes[r]);
    size_t k;

    for (k = 0; nd && k < n && nodes[k] != nd; k++)
      ;
    if (nd && k == n)
      nodes[n++] = nd;
  }
  x = gq_xcalloc(1, sizeof(*x));
  *x = (struct patch_ctx){c, gq_xstrdup(cj->uid), NULL, cj->attempt};
  ctl_write_begin(c);
  if (!job || n == 0) {
    job_patched(GQ_ENOTFOUND, NULL, NULL, x);
    free(nodes);
    return;
  }
  tspec = json_object_get(json_object_get(json_object_get(job, "spec"),
                                          "template"), "spec");
  patch = json_pack("{s:{s:b, s:{s:{s:o, s:{s:s}}, s:{s:o}}}}", "spec",
                    "suspend", 0, "template", "metadata", "labels",
                    gpuq_labels(cj, j, -1), "annotations", GQ_ANN_FLAVOR,
                    cj->flavor, "spec", "affinity",
                    pinned_affinity(tspec, nodes, n));
  free(nodes);
  snprintf(path, sizeof(path), JOBS_API "/namespaces/%s/jobs/%s", cj->ns,
           j->wl_name);
  if (gq_kclient_patch_how(c->kc, path, "merge", patch, CTL_WORK,
                           job_patched, x) != 0)
    job_patched(GQ_EIO, NULL, NULL, x);
  json_decref(patch);
}

void workload_admit(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j)
{
  cj->creates_left = cj->replicas;
  cj->create_miss = GQ_LIFE_MISS_NONE;
  if (j->wl_kind == GQ_WL_JOB) {
    admit_job(c, cj, j);
    return;
  }
  for (int32_t r = 0; r < cj->replicas; r++)
    admit_pod(c, cj, j, r);
}

void workload_pod_of_attempt(struct ctl *c, struct cjob *cj,
                             const struct gq_gpujob *j)
{
  char key[600];
  int32_t r;

  if (j->wl_kind != GQ_WL_JOB || cj->state != CJ_ACTIVE ||
      cj->creates_left <= 0 || cj->create_miss)
    return;
  r = cj->replicas - cj->creates_left;
  jobs_replica_key(cj, j, cj->attempt, r, key, sizeof(key));
  gq_capacity_unassume(&c->cap, key);
  cj->creates_left--;
}

struct stop_ctx {
  struct ctl *c;
  char *path;
};

static void stop_done(int rc, const struct gq_k8s_status *st,
                      const json_t *obj, void *arg)
{
  struct stop_ctx *x = arg;

  (void)obj;
  ctl_write_end(x->c);
  if (rc != 0 && rc != GQ_ENOTFOUND) {
    ctl_api_error(x->c, "patch", "job (suspend)", rc, st);
  } else if (rc == 0 && !strstr(x->path, "/status")) {
    /* a Job that ran has a startTime, and its template may then not be
     * pinned again: cleared, as Kueue does when it stops a Job */
    json_t *p = json_pack("{s:{s:n}}", "status", "startTime");
    char *path = gq_xasprintf("%s/status", x->path);

    free(x->path);
    x->path = path;
    ctl_write_begin(x->c);
    if (gq_kclient_patch_how(x->c->kc, path, "merge", p, CTL_WORK,
                             stop_done, x) != 0)
      ctl_write_end(x->c);
    else
      x = NULL;
    json_decref(p);
  }
  if (x) {
    free(x->path);
    free(x);
  }
}

void workload_stop(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j)
{
  json_t *p = json_pack("{s:{s:b}}", "spec", "suspend", 1);
  struct stop_ctx *x = gq_xcalloc(1, sizeof(*x));

  x->c = c;
  x->path = gq_xasprintf(JOBS_API "/namespaces/%s/jobs/%s", cj->ns,
                         j->wl_name);
  ctl_write_begin(c);
  if (gq_kclient_patch_how(c->kc, x->path, "merge", p, CTL_WORK, stop_done,
                           x) != 0) {
    ctl_write_end(c);
    free(x->path);
    free(x);
  }
  json_decref(p);
}

/* ---- what the lifecycle reads ----------------------------------------- */

void workload_view(struct ctl *c, const struct gq_gpujob *j,
                   struct gq_life_spec *s)
{
  char key[400];
  const json_t *job;

  s->one_shot = j->wl_kind == GQ_WL_POD || j->wl_kind == GQ_WL_POD_GROUP;
  if (j->wl_kind != GQ_WL_JOB)
    return;
  snprintf(key, sizeof(key), "%s/%s", j->meta.ns, j->wl_name);
  job = gq_informer_get(c->inf_batch, key);
  if (job)
    s->ended = job_ended(job, &s->ended_msg);
}

int workload_pod_hidden(const struct gq_gpujob *j, const struct gq_pod *p)
{
  return j && j->wl_kind == GQ_WL_JOB &&
         (p->phase == GQ_POD_SUCCEEDED || p->phase == GQ_POD_FAILED);
}

/* 1 if a workload object of j is gone (a pod of a group is enough: the
 * group can no longer run whole). */
static int workload_gone(struct ctl *c, const struct gq_gpujob *j)
{
  char key[600];

  if (j->wl_kind == GQ_WL_JOB) {
    snprintf(key, sizeof(key), "%s/%s", j->meta.ns, j->wl_name);
    return gq_informer_get(c->inf_batch, key) == NULL;
  }
  for (size_t i = 0; i < j->n_wl_pods; i++) {
    snprintf(key, sizeof(key), "%s/%s", j->meta.ns, j->wl_pods[i]);
    if (!gq_informer_get(c->inf_pods, key))
      return 1;
  }
  return 0;
}

static void gc_done(int rc, const struct gq_k8s_status *st, const json_t *obj,
                    void *arg)
{
  (void)obj;
  ctl_write_end(arg);
  if (rc != 0 && rc != GQ_ENOTFOUND)
    ctl_api_error(arg, "delete", "gpujob (workload stand-in)", rc, st);
}

void workload_gc(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j)
{
  char path[700];

  if (!j || j->wl_kind == GQ_WL_NONE || j->meta.deletion_ms || cj->has_adm ||
      cj->state == CJ_ADMITTING || cj->state == CJ_ACTIVE ||
      cj->state == CJ_TEARDOWN || !ctl_acting(c) || !workload_gone(c, j))
    return;
  GQ_LOG(GQ_INFO, &lc, "job %s: its %s %s is gone; deleting it", cj->key,
         gq_wl_kind_name(j->wl_kind), j->wl_name);
  snprintf(path, sizeof(path), "/apis/%s/namespaces/%s/gpujobs/%s",
           GQ_API_VERSION, cj->ns, cj->name);
  ctl_write_begin(c);
  if (gq_kclient_delete_how(c->kc, path, -1, cj->uid, CTL_WORK, gc_done, c))
    ctl_write_end(c);
}
