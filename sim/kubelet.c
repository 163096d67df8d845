/* sim/kubelet.c - the engine's core: observing the store, reconciling pods
 * as kube-scheduler and the kubelet do, and running timed work when it is
 * due (the heap itself is timers.c). */
#include "sim/engine.h"
#include "sim/replay.h"

#include "api/meta.h"
#include "api/pod.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "sim/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECONCILE_PER_TURN 256 /* bounded work per loop turn (STYLE) */

static const struct gq_lc lc = {"sim", "kubelet", NULL};

static struct gq_sim_kind *pods_kind(struct gq_sim *s)
{
  return gq_sim_kind_find(s, "", "v1", "pods");
}

static struct gq_sim_kind *nodes_kind(struct gq_sim *s)
{
  return gq_sim_kind_find(s, "", "v1", "nodes");
}

static int64_t ann_int(const json_t *obj, const char *key)
{
  const char *v = gq_meta_obj_annotation(obj, key);
  char *end;
  long long n;

  if (!v || !*v)
    return -1;
  n = strtoll(v, &end, 10);
  return *end || n < 0 ? -1 : n;
}

/* Splits "ns/name" into its parts (buffers of 256). */
static void split_key(const char *key, char *ns, char *name)
{
  const char *slash = strchr(key, '/');

  snprintf(ns, 256, "%.*s", slash ? (int)(slash - key) : 0, key);
  snprintf(name, 256, "%s", slash ? slash + 1 : key);
}

static const json_t *pod_by_key(struct gq_sim *s, const char *key)
{
  char ns[256], name[256];

  split_key(key, ns, name);
  return gq_sim_get(pods_kind(s), ns, name);
}

/* --- nodes: decoded cache and usage --- */

struct gq_sim_node *gq_sim_node_rec(struct gq_sim_engine *e, const char *name)
{
  struct gq_sim_node *n;

  HASH_FIND_STR(e->nodes, name, n);
  if (!n) {
    n = gq_xcalloc(1, sizeof(*n));
    n->name = gq_xstrdup(name);
    gq_node_usage_init(&n->used);
    HASH_ADD_KEYPTR(hh, e->nodes, n->name, strlen(n->name), n);
  }
  return n;
}

/* (engine.h) */
struct gq_sim_node *gq_sim_node_get(struct gq_sim_engine *e, const char *name)
{
  const json_t *obj = gq_sim_get(nodes_kind(e->s), NULL, name);
  struct gq_sim_node *n;
  char err[256];

  if (!obj)
    return NULL;
  n = gq_sim_node_rec(e, name);
  if (n->node.json != obj) {
    gq_node_release(&n->node);
    if (gq_node_decode(obj, NULL, &n->node, err, sizeof(err)) != 0)
      return NULL;
  }
  return n;
}

/* Adds (sign 1) or removes (-1) a stored pod's requests from its node's
 * usage if it is bound and still holds resources. */
static void account(struct gq_sim_engine *e, const json_t *pod, int sign)
{
  const char *node = json_string_value(
      json_object_get(json_object_get(pod, "spec"), "nodeName"));
  struct gq_pod p;
  char err[256];

  if (!pod || !node || !*node || gq_pod_decode(pod, &p, err, sizeof(err)))
    return;
  if (gq_pod_holds_resources(&p))
    gq_node_usage_add(&gq_sim_node_rec(e, node)->used, &p.sched, sign);
  gq_pod_release(&p);
}

/* --- observing the store --- */

/* 1 if an update from old to obj leaves what the accounting reads as it
 * was: the spec (node, requests), the phase (gq_pod_holds_resources) and
 * the labels (team, job, attempt). Most pod updates are the kubelet's
 * status writes, and each decode costs more than these compares. */
static int same_holding(const json_t *old, const json_t *obj)
{
  static const char *const parts[][2] = {
      {"status", "phase"}, {"spec", NULL}, {"metadata", "labels"}};

  if (!old || !obj)
    return 0;
  for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
    const json_t *a = json_object_get(old, parts[i][0]);
    const json_t *b = json_object_get(obj, parts[i][0]);

    if (parts[i][1]) {
      a = json_object_get(a, parts[i][1]);
      b = json_object_get(b, parts[i][1]);
    }
    if (a != b && json_equal(a, b) != 1)
      return 0;
  }
  return 1;
}

static void on_kick(uv_timer_t *t);

static void mark_dirty(struct gq_sim_engine *e, const char *key)
{
  if (e->closing)
    return;
  json_object_set_new(e->dirty, key, json_true());
  if (!uv_is_active((uv_handle_t *)&e->kick))
    uv_timer_start(&e->kick, on_kick, 0, 0);
}

/* Capacity changed: every parked Unschedulable pod gets another look. */
static void retry_unschedulable(struct gq_sim_engine *e)
{
  const char *key;
  json_t *v;

  json_object_foreach(e->unsched, key, v)
    mark_dirty(e, key);
  json_object_clear(e->unsched);
}

static void drop_pod(struct gq_sim_engine *e, const char *uid)
{
  struct gq_sim_pod *p;

  HASH_FIND_STR(e->pods, uid, p);
  if (!p)
    return;
  HASH_DEL(e->pods, p);
  gq_sim_report_pod_gone(e->s, p);
  gq_sim_gpus_free(e, p);
  free(p->container);
  free(p->uid);
  free(p->key);
  free(p->node);
  free(p->job_uid);
  free(p->job);
  free(p->ns);
  free(p->team);
  free(p);
}

void gq_sim_engine_observe(struct gq_sim *s, const struct gq_sim_event *ev,
                           void *arg)
{
  struct gq_sim_engine *e = s->engine;
  const struct gq_sim_kind *k = ev->kind;
  char key[600];

  (void)arg;
  if (!e || e->closing || *k->group)
    goto other;
  if (!strcmp(k->plural, "pods")) {
    if (ev->type == GQ_EV_DELETED || !same_holding(ev->old, ev->obj)) {
      account(e, ev->old, -1);
      gq_sim_check_account(s, ev->old, -1);
      if (ev->type != GQ_EV_DELETED) {
        account(e, ev->obj, +1);
        gq_sim_check_account(s, ev->obj, +1);
      }
    }
    gq_sim_check_pod(s, ev->old, ev->obj, ev->type == GQ_EV_DELETED);
    if (ev->type == GQ_EV_ADDED)
      gq_sim_replay_pod_created(s, ev->obj);
    snprintf(key, sizeof(key), "%s/%s", gq_meta_str(ev->obj, "namespace"),
             gq_meta_str(ev->obj, "name"));
    if (ev->type == GQ_EV_DELETED) {
      json_object_del(e->starting, gq_meta_str(ev->obj, "uid"));
      drop_pod(e, gq_meta_str(ev->obj, "uid"));
      json_object_del(e->unsched, key);
      retry_unschedulable(e);
    } else {
      mark_dirty(e, key);
      if (ev->old && json_object_get(json_object_get(ev->obj, "status"),
                                     "phase") !=
                         json_object_get(json_object_get(ev->old, "status"),
                                         "phase"))
        retry_unschedulable(e);
    }
    return;
  }
  if (!strcmp(k->plural, "nodes")) {
    retry_unschedulable(e);
    return;
  }
other:
  if (e && !e->closing && !strcmp(k->group, "gpuq.dev") &&
      !strcmp(k->kind, "GpuJob"))
    gq_sim_check_job(s, ev->old, ev->obj, ev->type == GQ_EV_DELETED);
}

/* --- pod status helpers --- */

static json_t *set_condition(json_t *conds, const char *type,
                             const char *status, const char *reason,
                             const char *message, const char *ts)
{
  json_t *c;
  size_t i;

  json_array_foreach(conds, i, c) {
    const char *t = json_string_value(json_object_get(c, "type"));

    if (t && !strcmp(t, type)) {
      json_array_remove(conds, i);
      break;
    }
  }
  c = json_pack("{s:s, s:s, s:s}", "type", type, "status", status,
                "lastTransitionTime", ts);
  if (reason)
    json_object_set_new(c, "reason", json_string(reason));
  if (message)
    json_object_set_new(c, "message", json_string(message));
  json_array_append_new(conds, c);
  return conds;
}

/* A copy of pod with status.conditions ready for editing. */
static json_t *edit_status(const json_t *pod, json_t **status,
                           json_t **conds)
{
  json_t *next = gq_sim_copy(pod);

  *status = json_object_get(next, "status");
  if (!*status) {
    *status = json_object();
    json_object_set_new(next, "status", *status);
  }
  *conds = json_object_get(*status, "conditions");
  if (!*conds) {
    *conds = json_array();
    json_object_set_new(*status, "conditions", *conds);
  }
  return next;
}

static void now_ts(char *ts, size_t len)
{
  gq_time_format(gq_clock_now_ms(), ts, len);
}

/* One container status per container, in the given state. */
/* A container's image as its status reports it ("" when absent); the
 * image id (a required field of ContainerStatus) is the same reference,
 * the sim pulls nothing. */
static const char *image_of(const json_t *c)
{
  const char *i = json_string_value(json_object_get(c, "image"));

  return i ? i : "";
}

static json_t *container_statuses(const json_t *pod, json_t *state, int ready)
{
  const json_t *cs = json_object_get(json_object_get(pod, "spec"),
                                     "containers"), *c;
  json_t *out = json_array();
  size_t i;

  json_array_foreach((json_t *)cs, i, c)
    json_array_append_new(
        out, json_pack("{s:O, s:s, s:s, s:b, s:b, s:i, s:O}", "name",
                       json_object_get(c, "name"), "image", image_of(c),
                       "imageID", image_of(c), "ready", ready, "started",
                       ready, "restartCount", 0, "state", state));
  json_decref(state);
  return out;
}

/* --- the scheduler --- */

/* The node a pod is pinned to by nodeSelector or by a required affinity of
 * one term, one In expression on kubernetes.io/hostname with one value
 * (how gpuq pins pods, DESIGN §3); NULL if unpinned. */
static const char *pinned_node(const struct gq_podsched *s)
{
  for (size_t i = 0; i < s->n_node_selector; i++)
    if (!strcmp(s->node_selector[i].key, GQ_LABEL_HOSTNAME))
      return s->node_selector[i].value;
  if (s->n_terms == 1 && s->terms[0].n_exprs >= 1) {
    for (size_t i = 0; i < s->terms[0].n_exprs; i++) {
      const struct gq_sel_req *r = &s->terms[0].exprs[i];

      if (!strcmp(r->key, GQ_LABEL_HOSTNAME) && r->op == GQ_SEL_IN &&
          r->n_values == 1)
        return r->values[0];
    }
  }
  return NULL;
}

/* Tries one node: returns NULL if the pod fits, else a short reason
 * (with the details in why). */
static const char *try_node(struct gq_sim_node *n, const struct gq_podsched *s,
                            char *why, size_t len)
{
  const char *r = gq_node_eligible(&n->node, s, why, len);

  if (r)
    return r;
  return gq_fit_check(&n->node, &n->used, s, why, len);
}

static void bind_pod(struct gq_sim *s, const json_t *pod, const char *node)
{
  json_t *st, *conds, *next = edit_status(pod, &st, &conds);
  char ts[40];

  now_ts(ts, sizeof(ts));
  set_condition(conds, "PodScheduled", "True", NULL, NULL, ts);
  json_object_set_new(json_object_get(next, "spec"), "nodeName",
                      json_string(node));
  gq_sim_put(s, pods_kind(s), next);
}

/* Writes PodScheduled=False with reason and msg unless the pod already
 * says so (then no write, no event). */
static void set_unscheduled(struct gq_sim_engine *e, const json_t *pod,
                            const char *reason, const char *msg)
{
  const json_t *conds = json_object_get(json_object_get(pod, "status"),
                                        "conditions"), *c;
  json_t *st, *cl, *next;
  char ts[40];
  size_t i;

  json_array_foreach((json_t *)conds, i, c) {
    const char *t = json_string_value(json_object_get(c, "type"));
    const char *m = json_string_value(json_object_get(c, "message"));
    const char *rs = json_string_value(json_object_get(c, "reason"));

    if (t && !strcmp(t, "PodScheduled") && m && !strcmp(m, msg) && rs &&
        !strcmp(rs, reason))
      return;
  }
  next = edit_status(pod, &st, &cl);
  now_ts(ts, sizeof(ts));
  set_condition(cl, "PodScheduled", "False", reason, msg, ts);
  gq_sim_put(e->s, pods_kind(e->s), next);
}

static void mark_unschedulable(struct gq_sim_engine *e, const json_t *pod,
                               const char *key, const char *msg, int pinned)
{
  json_object_set_new(e->unsched, key, json_true());
  if (pinned && gq_meta_obj_label(pod, GQ_LBL_JOB))
    gq_sim_placement_miss(e->s, pod, msg);
  set_unscheduled(e, pod, "Unschedulable", msg);
}

/* A pod with scheduling gates is not scheduled (KEP-3521): it waits with
 * the condition kube-scheduler writes, and is looked at again when an
 * update removes the last gate (the update marks it dirty). Returns 1 if
 * the pod is gated. */
static int gated(struct gq_sim_engine *e, const json_t *pod)
{
  const json_t *g = json_object_get(json_object_get(pod, "spec"),
                                    "schedulingGates");

  if (json_array_size(g) == 0)
    return 0;
  set_unscheduled(e, pod, "SchedulingGated",
                  "Scheduling is blocked due to non-empty scheduling gates");
  return 1;
}

/* Binds an unbound pod like kube-scheduler: the pinned node if it passes
 * the filters, else the first node (by name) that does; otherwise the pod
 * stays Pending with PodScheduled=False, Unschedulable and why. */
static void schedule(struct gq_sim_engine *e, const json_t *pod,
                     const char *key)
{
  struct gq_pod p;
  struct gq_sim_node *n;
  const char *pin, *reason = "no nodes";
  char err[512], why[512] = "", msg[700];
  size_t total = 0;

  if (gated(e, pod) || gq_pod_decode(pod, &p, err, sizeof(err)) != 0)
    return;
  pin = pinned_node(&p.sched);
  if (pin) {
    n = gq_sim_node_get(e, pin);
    total = 1;
    reason = n ? try_node(n, &p.sched, why, sizeof(why)) : "NotFound";
    if (!n)
      snprintf(why, sizeof(why), "node \"%s\" not found", pin);
    if (!reason)
      bind_pod(e->s, pod, pin);
  } else {
    json_t *nodes = gq_sim_list(nodes_kind(e->s), NULL), *it;
    size_t i;

    json_array_foreach(nodes, i, it) {
      n = gq_sim_node_get(e, gq_meta_str(it, "name"));
      total++;
      if (n && !(reason = try_node(n, &p.sched, why, sizeof(why)))) {
        bind_pod(e->s, pod, n->name);
        break;
      }
    }
    json_decref(nodes);
  }
  if (reason) {
    snprintf(msg, sizeof(msg), "0/%zu nodes are available: %s.", total,
             *why ? why : reason);
    mark_unschedulable(e, pod, key, msg, pin != NULL);
  }
  gq_pod_release(&p);
}

/* --- the kubelet --- */

/* Progress a resumed pod starts from: the number at the end of its
 * GPUQ_RESUME_FROM ("sim://ns/job/<seconds>"), or 0. */
static double resume_from(const json_t *pod)
{
  const json_t *cs = json_object_get(json_object_get(pod, "spec"),
                                     "containers"), *c, *env, *v;
  size_t i, j;

  json_array_foreach((json_t *)cs, i, c) {
    env = json_object_get(c, "env");
    json_array_foreach((json_t *)env, j, v) {
      const char *name = json_string_value(json_object_get(v, "name"));
      const char *val = json_string_value(json_object_get(v, "value"));
      const char *slash;

      if (!name || strcmp(name, GQ_ENV_RESUME_FROM) || !val || !*val)
        continue;
      slash = strrchr(val, '/');
      return slash ? strtod(slash + 1, NULL) : 0;
    }
  }
  return 0;
}

static struct gq_sim_pod *new_record(struct gq_sim_engine *e,
                                     const json_t *pod, const char *key,
                                     const struct gq_pod *p)
{
  struct gq_sim_pod *r = gq_xcalloc(1, sizeof(*r));
  const char *ju = gq_meta_obj_label(pod, GQ_LBL_JOB_UID), *att;

  r->uid = gq_xstrdup(gq_meta_str(pod, "uid"));
  r->key = gq_xstrdup(key);
  r->node = gq_xstrdup(p->sched.node_name);
  r->ns = gq_xstrdup(gq_meta_str(pod, "namespace"));
  r->job_uid = ju ? gq_xstrdup(ju) : NULL;
  att = gq_meta_obj_label(pod, GQ_LBL_JOB);
  r->job = gq_xstrdup(att ? att : "");
  att = gq_meta_obj_label(pod, GQ_LBL_TEAM);
  r->team = gq_xstrdup(att ? att : "");
  att = gq_meta_obj_label(pod, GQ_LBL_ATTEMPT);
  r->attempt = att ? strtoll(att, NULL, 10) : 0;
  for (size_t i = 0; i < p->sched.n_extended; i++) {
    if (!strncmp(p->sched.extended[i].name, "nvidia.com/", 11))
      r->gpus += p->sched.extended[i].value;
    if (!strcmp(p->sched.extended[i].name, "nvidia.com/gpu"))
      r->whole_gpus += p->sched.extended[i].value;
  }
  att = json_string_value(json_object_get(
      json_array_get(json_object_get(json_object_get(pod, "spec"),
                                     "containers"), 0), "name"));
  r->container = gq_xstrdup(att ? att : "");
  r->run_s = ann_int(pod, GQ_ANN_RUN);
  r->ckpt_s = ann_int(pod, GQ_ANN_CKPT);
  r->interval_s = ann_int(pod, GQ_ANN_INTERVAL);
  r->fail_s = ann_int(pod, GQ_ANN_FAIL_AFTER);
  r->exit_code = ann_int(pod, GQ_ANN_EXIT);
  r->base_s = resume_from(pod);
  r->start_vms = r->acct_vms = gq_clock_now_ms();
  r->running = 1;
  gq_sim_gpus_pod_util(e, pod, r);
  HASH_ADD_KEYPTR(hh, e->pods, r->uid, strlen(r->uid), r);
  return r;
}

/* Seconds of work done by now (capped at the run time). */
static double progress(const struct gq_sim_pod *r)
{
  double p = r->base_s + (double)(gq_clock_now_ms() - r->start_vms) / 1000.0;

  return r->run_s >= 0 && p > (double)r->run_s ? (double)r->run_s : p;
}

/* Rejects a pod that does not fit its node, as the kubelet's admission
 * does: phase Failed, reason OutOf<resource>. */
static void reject(struct gq_sim_engine *e, const json_t *pod,
                   const char *res, const char *why)
{
  json_t *st, *conds, *next = edit_status(pod, &st, &conds);
  char reason[300], msg[700];

  gq_fit_reason(res, reason, sizeof(reason));
  snprintf(msg, sizeof(msg), "Pod was rejected: %s", why);
  json_object_set_new(st, "phase", json_string("Failed"));
  json_object_set_new(st, "reason", json_string(reason));
  json_object_set_new(st, "message", json_string(msg));
  if (gq_meta_obj_label(pod, GQ_LBL_JOB))
    gq_sim_placement_miss(e->s, pod, reason);
  gq_sim_put(e->s, pods_kind(e->s), next);
}

static void start_pod(struct gq_sim_engine *e, const json_t *pod,
                      const char *key, const struct gq_pod *p)
{
  struct gq_sim_pod *r = new_record(e, pod, key, p);
  json_t *st, *conds, *next = edit_status(pod, &st, &conds);
  char ts[40];

  now_ts(ts, sizeof(ts));
  json_object_set_new(st, "phase", json_string("Running"));
  json_object_set_new(st, "startTime", json_string(ts));
  json_object_set_new(st, "podIP", json_string("10.244.0.1"));
  set_condition(conds, "Initialized", "True", NULL, NULL, ts);
  set_condition(conds, "ContainersReady", "True", NULL, NULL, ts);
  set_condition(conds, "Ready", "True", NULL, NULL, ts);
  json_object_set_new(st, "containerStatuses",
                      container_statuses(pod, json_pack("{s:{s:s}}", "running",
                                                        "startedAt", ts),
                                         1));
  gq_sim_put(e->s, pods_kind(e->s), next);
  gq_sim_gpus_assign(e, r);
  gq_sim_report_pod_started(e->s, r);
  if (r->run_s >= 0)
    gq_sim_tev_add(e, r->start_vms +
                          (int64_t)(((double)r->run_s - r->base_s) * 1000.0),
                   GQ_TEV_POD_DONE, key, r->uid, 0);
  if (r->fail_s >= 0)
    gq_sim_tev_add(e, r->start_vms + r->fail_s * 1000, GQ_TEV_POD_FAIL, key,
                   r->uid, 0);
}

/* Whether an admitted pod may start now. A start delay (the pod's
 * GQ_ANN_START_DELAY, else its node's, read when the kubelet first admits
 * the pod) keeps it Pending in ContainerCreating until it is due; a pod
 * deleted meanwhile goes at once (reconcile). */
static int start_due(struct gq_sim_engine *e, const json_t *pod,
                     const char *key, const struct gq_sim_node *n)
{
  const char *uid = gq_meta_str(pod, "uid");
  const json_t *due = json_object_get(e->starting, uid);
  int64_t now = gq_clock_now_ms(), delay;
  json_t *st, *conds, *next;

  if (due) {
    if (json_integer_value(due) > now)
      return 0;
    json_object_del(e->starting, uid);
    return 1;
  }
  delay = ann_int(pod, GQ_ANN_START_DELAY);
  if (delay < 0)
    delay = ann_int(n->node.json, GQ_ANN_START_DELAY);
  if (delay <= 0)
    return 1;
  json_object_set_new(e->starting, uid, json_integer(now + delay * 1000));
  gq_sim_tev_add(e, now + delay * 1000, GQ_TEV_POD_START, key, uid, 0);
  next = edit_status(pod, &st, &conds);
  json_object_set_new(st, "containerStatuses",
                      container_statuses(pod, json_pack("{s:{s:s}}",
                                                        "waiting", "reason",
                                                        "ContainerCreating"),
                                         0));
  gq_sim_put(e->s, pods_kind(e->s), next);
  return 0;
}

/* Admits a bound pod: OutOf<resource> if its node cannot hold it, else it
 * starts (after its start delay, if it has one). A pod on a missing or
 * NotReady node waits. */
static void admit(struct gq_sim_engine *e, const json_t *pod, const char *key)
{
  struct gq_pod p;
  struct gq_sim_node *n;
  const char *res;
  char err[512], why[512];

  if (gq_pod_decode(pod, &p, err, sizeof(err)) != 0)
    return;
  n = gq_sim_node_get(e, p.sched.node_name);
  if (n && n->node.ready) {
    /* The usage includes this pod already: take it out for the check. */
    gq_node_usage_add(&n->used, &p.sched, -1);
    res = gq_fit_check(&n->node, &n->used, &p.sched, why, sizeof(why));
    gq_node_usage_add(&n->used, &p.sched, +1);
    if (res)
      reject(e, pod, res, why);
    else if (start_due(e, pod, key, n))
      start_pod(e, pod, key, &p);
  }
  gq_pod_release(&p);
}

/* Stores the pod's end: containers terminated with exit_code (and the
 * termination message), phase Succeeded for 0 else Failed. */
static const json_t *finish(struct gq_sim_engine *e, const json_t *pod,
                            int64_t exit_code, const char *message)
{
  json_t *st, *conds, *next = edit_status(pod, &st, &conds), *term;
  char ts[40];

  now_ts(ts, sizeof(ts));
  term = json_pack("{s:I, s:s, s:s}", "exitCode", (json_int_t)exit_code,
                   "reason", exit_code == 0 ? "Completed" : "Error",
                   "finishedAt", ts);
  if (message)
    json_object_set_new(term, "message", json_string(message));
  json_object_set_new(st, "phase",
                      json_string(exit_code == 0 ? "Succeeded" : "Failed"));
  set_condition(conds, "Ready", "False", "PodCompleted", NULL, ts);
  set_condition(conds, "ContainersReady", "False", "PodCompleted", NULL, ts);
  json_object_set_new(st, "containerStatuses",
                      container_statuses(pod, json_pack("{s:o}", "terminated",
                                                        term),
                                         0));
  return gq_sim_put(e->s, pods_kind(e->s), next);
}

/* SIGTERM (the pod is being deleted): write a checkpoint if it can finish
 * within the grace period, else be killed at its end (DESIGN §5). */
static void sigterm(struct gq_sim_engine *e, struct gq_sim_pod *r,
                    const json_t *pod)
{
  const json_t *g = json_object_get(json_object_get(pod, "metadata"),
                                    "deletionGracePeriodSeconds");
  int64_t grace = json_is_integer(g) ? json_integer_value(g) : 30;
  int64_t now = gq_clock_now_ms();

  r->terminating = 1;
  r->exit_progress_s = progress(r);
  if (r->ckpt_s >= 0 && r->ckpt_s <= grace)
    gq_sim_tev_add(e, now + r->ckpt_s * 1000, GQ_TEV_POD_EXIT, r->key, r->uid,
                   0);
  else if (r->ckpt_s < 0)
    gq_sim_tev_add(e, now, GQ_TEV_POD_EXIT, r->key, r->uid, 143);
  else
    gq_sim_tev_add(e, now + grace * 1000, GQ_TEV_POD_EXIT, r->key, r->uid,
                   137);
}

/* A bound pod being deleted that never ran goes at once. */
static void remove_pod(struct gq_sim *s, const json_t *pod)
{
  gq_sim_remove(s, pods_kind(s), gq_meta_str(pod, "namespace"),
                gq_meta_str(pod, "name"), 0);
}

static void reconcile(struct gq_sim_engine *e, const char *key)
{
  const json_t *pod = pod_by_key(e->s, key);
  const json_t *spec, *st;
  const char *node, *phase;
  struct gq_sim_pod *r;

  if (!pod)
    return;
  spec = json_object_get(pod, "spec");
  st = json_object_get(pod, "status");
  node = json_string_value(json_object_get(spec, "nodeName"));
  phase = json_string_value(json_object_get(st, "phase"));
  HASH_FIND_STR(e->pods, gq_meta_str(pod, "uid"), r);
  if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp")) {
    struct gq_sim_node *n = r ? gq_sim_node_get(e, r->node) : NULL;

    if (r && r->running && !r->terminating && n && !n->node.ready) {
      /* the kubelet of a NotReady node is not there to stop it: the pod
       * stays terminating until the node is back (nodes changing retry
       * the parked pods) or it is force-deleted */
      json_object_set_new(e->unsched, key, json_true());
      return;
    }
    if (r && r->running && !r->terminating)
      sigterm(e, r, pod);
    else if (!r || !r->running)
      remove_pod(e->s, pod);
    return;
  }
  if (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")))
    return;
  if (!node || !*node)
    schedule(e, pod, key);
  else if (!r)
    admit(e, pod, key);
}

static void on_kick(uv_timer_t *t)
{
  struct gq_sim_engine *e = t->data;
  int done = 0;

  while (json_object_size(e->dirty) && done++ < RECONCILE_PER_TURN) {
    void *it = json_object_iter(e->dirty);
    char *key = gq_xstrdup(json_object_iter_key(it));

    json_object_del(e->dirty, key);
    reconcile(e, key);
    free(key);
  }
  if (json_object_size(e->dirty))
    uv_timer_start(&e->kick, on_kick, 0, 0);
}

int gq_sim_engine_busy(const struct gq_sim_engine *e)
{
  return json_object_size(e->dirty) > 0;
}

/* --- timed work --- */

/* The reason of the pod's DisruptionTarget condition, or NULL. */
static const char *disruption_reason(const json_t *pod)
{
  const json_t *conds = json_object_get(json_object_get(pod, "status"),
                                        "conditions"), *c;
  size_t i;

  json_array_foreach((json_t *)conds, i, c) {
    const char *t = json_string_value(json_object_get(c, "type"));

    if (t && !strcmp(t, "DisruptionTarget"))
      return json_string_value(json_object_get(c, "reason"));
  }
  return NULL;
}

static void pod_exit(struct gq_sim_engine *e, const struct gq_tev *t)
{
  const json_t *pod = pod_by_key(e->s, t->key);
  struct gq_sim_pod *r;
  char msg[600];

  HASH_FIND_STR(e->pods, t->uid, r);
  if (!pod || !r || strcmp(gq_meta_str(pod, "uid"), t->uid))
    return;
  if (!r->running || (t->type != GQ_TEV_POD_EXIT && r->terminating))
    return; /* already stopped, or SIGTERM decides how it ends */
  r->running = 0;
  gq_sim_gpus_free(e, r);
  if (t->type != GQ_TEV_POD_EXIT) {
    r->exit_progress_s = progress(r);
    gq_sim_report_pod_ended(e->s, r);
    finish(e, pod, t->type == GQ_TEV_POD_DONE ? 0
                   : r->exit_code > 0         ? r->exit_code
                                              : 1,
           NULL);
    return;
  }
  /* After SIGTERM: a checkpoint holding the progress at SIGTERM, or
   * nothing when killed. Then the kubelet confirms the deletion. */
  if (t->arg == 0)
    snprintf(msg, sizeof(msg), "checkpoint=sim://%s/%s/%.0f", r->ns,
             *r->job ? r->job : gq_meta_str(pod, "name"), r->exit_progress_s);
  gq_sim_report_pod_stopped(e->s, r, t->arg == 0, disruption_reason(pod));
  pod = finish(e, pod, t->arg, t->arg == 0 ? msg : NULL);
  remove_pod(e->s, pod);
}

void gq_sim_engine_run_tev(struct gq_sim_engine *e, const struct gq_tev *t)
{
  switch (t->type) {
  case GQ_TEV_POD_DONE:
  case GQ_TEV_POD_FAIL:
  case GQ_TEV_POD_EXIT:
    pod_exit(e, t);
    break;
  case GQ_TEV_POD_START:
    mark_dirty(e, t->key);
    break;
  case GQ_TEV_DRAIN:
    gq_sim_drain_retry(e->s, t->key);
    break;
  default:
    gq_sim_report_tev(e->s, t);
    break;
  }
}

int gq_sim_engine_start(struct gq_sim *s)
{
  struct gq_sim_engine *e = gq_xcalloc(1, sizeof(*e));

  e->s = s;
  e->dirty = json_object();
  e->unsched = json_object();
  e->seen_miss = json_object();
  e->team_used = json_object();
  e->attempts = json_object();
  e->starting = json_object();
  e->default_util = 0.9;
  e->idle_pct = 10;
  gq_sim_timers_init(e);
  uv_timer_init(s->loop, &e->kick);
  e->kick.data = e;
  s->engine = e;
  gq_sim_store_observe(s, gq_sim_engine_observe, NULL);
  gq_sim_report_init(s);
  GQ_LOG(GQ_DEBUG, &lc, "simulated kubelets and scheduler started");
  return 0;
}

void gq_sim_engine_stop(struct gq_sim *s)
{
  struct gq_sim_engine *e = s->engine;

  if (!e || e->closing)
    return;
  e->closing = 1;
  gq_sim_timers_close(e);
  uv_close((uv_handle_t *)&e->kick, NULL);
}

void gq_sim_engine_release(struct gq_sim *s)
{
  struct gq_sim_engine *e = s->engine;
  struct gq_sim_pod *p, *ptmp;
  struct gq_sim_node *n, *ntmp;

  if (!e)
    return;
  HASH_ITER(hh, e->pods, p, ptmp)
    drop_pod(e, p->uid);
  gq_sim_report_release(s);
  HASH_ITER(hh, e->nodes, n, ntmp) {
    HASH_DEL(e->nodes, n);
    gq_node_release(&n->node);
    gq_node_usage_release(&n->used);
    json_decref(n->saved_alloc);
    free(n->gpus);
    free(n->name);
    free(n);
  }
  gq_sim_timers_release(e);
  json_decref(e->dirty);
  json_decref(e->unsched);
  json_decref(e->seen_miss);
  json_decref(e->team_used);
  json_decref(e->attempts);
  json_decref(e->starting);
  free(e);
  s->engine = NULL;
}
