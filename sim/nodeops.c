/* sim/nodeops.c - node events as a real cluster has them (DESIGN §5):
 * cordon (spec.unschedulable and its taint, as kubectl cordon), drain
 * (cordon, then evict every pod through the Eviction API, retrying while a
 * budget refuses, as kubectl drain), device-plugin loss (allocatable GPUs to
 * 0 while the node stays Ready), NotReady, node deletion (its pods go, as
 * the pod garbage collector deletes them), and taints, where NoExecute
 * evicts the pods that do not tolerate it (the taint manager). */
#include "sim/engine.h"

#include "api/meta.h"
#include "api/pod.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"

#include <stdio.h>
#include <string.h>

#define DRAIN_RETRY_VMS 5000 /* kubectl drain retries refused evictions */

static struct gq_sim_kind *kind(struct gq_sim *s, const char *plural)
{
  return gq_sim_kind_find(s, "", "v1", plural);
}

/* Pods bound to node that have not finished (a new array). */
static json_t *pods_on(struct gq_sim *s, const char *node)
{
  json_t *all = gq_sim_list(kind(s, "pods"), NULL), *out = json_array(), *p;
  size_t i;

  json_array_foreach(all, i, p) {
    const char *n = json_string_value(
        json_object_get(json_object_get(p, "spec"), "nodeName"));
    const char *ph = json_string_value(
        json_object_get(json_object_get(p, "status"), "phase"));

    if (n && !strcmp(n, node) &&
        (!ph || (strcmp(ph, "Succeeded") && strcmp(ph, "Failed"))))
      json_array_append(out, p);
  }
  json_decref(all);
  return out;
}

static json_t *taint(const char *key, const char *value, const char *effect)
{
  json_t *t = json_pack("{s:s, s:s}", "key", key, "effect", effect);

  if (value && *value)
    json_object_set_new(t, "value", json_string(value));
  return t;
}

/* Removes every taint with this key from a node copy's spec. */
static void drop_taint(json_t *node, const char *key)
{
  json_t *taints = json_object_get(json_object_get(node, "spec"), "taints"), *t;
  size_t i;

  for (i = json_array_size(taints); i-- > 0;) {
    t = json_array_get(taints, i);
    if (!strcmp(json_string_value(json_object_get(t, "key")) ?
                    json_string_value(json_object_get(t, "key")) : "",
                key))
      json_array_remove(taints, i);
  }
}

static void add_taint(json_t *node, json_t *t)
{
  json_t *spec = json_object_get(node, "spec"), *taints;

  if (!spec) {
    spec = json_object();
    json_object_set_new(node, "spec", spec);
  }
  taints = json_object_get(spec, "taints");
  if (!taints) {
    taints = json_array();
    json_object_set_new(spec, "taints", taints);
  }
  drop_taint(node, json_string_value(json_object_get(t, "key")));
  json_array_append_new(taints, t);
}

static void set_cordon(json_t *node, int on)
{
  json_t *spec = json_object_get(node, "spec");

  if (on) {
    json_object_set_new(spec, "unschedulable", json_true());
    add_taint(node, taint("node.kubernetes.io/unschedulable", NULL,
                          "NoSchedule"));
  } else {
    json_object_del(spec, "unschedulable");
    drop_taint(node, "node.kubernetes.io/unschedulable");
  }
}

static void set_ready(json_t *node, int ready)
{
  json_t *conds = json_object_get(json_object_get(node, "status"),
                                  "conditions"), *c;
  char ts[40];
  size_t i;

  gq_time_format(gq_clock_now_ms(), ts, sizeof(ts));
  json_array_foreach(conds, i, c) {
    const char *t = json_string_value(json_object_get(c, "type"));

    if (t && !strcmp(t, "Ready")) {
      json_object_set_new(c, "status", json_string(ready ? "True" : "Unknown"));
      json_object_set_new(c, "reason", json_string(ready ? "KubeletReady"
                                                         : "NodeStatusUnknown"));
      json_object_set_new(c, "lastTransitionTime", json_string(ts));
    }
  }
  if (ready)
    drop_taint(node, "node.kubernetes.io/unreachable");
  else
    add_taint(node, taint("node.kubernetes.io/unreachable", NULL,
                          "NoSchedule"));
}

/* Device-plugin loss sets every nvidia.com/ allocatable to 0 and keeps the
 * old values for the restore. */
static void set_gpus(struct gq_sim_engine *e, json_t *node, int lost)
{
  json_t *alloc = json_object_get(json_object_get(node, "status"),
                                  "allocatable");
  struct gq_sim_node *n;
  const char *key;
  json_t *v;

  n = gq_sim_node_rec(e, gq_meta_str(node, "name"));
  if (!alloc)
    return;
  if (lost) {
    if (!n->saved_alloc)
      n->saved_alloc = json_deep_copy(alloc);
    json_object_foreach(alloc, key, v)
      if (!strncmp(key, "nvidia.com/", 11))
        json_object_set_new(alloc, key, json_string("0"));
  } else if (n->saved_alloc) {
    json_object_foreach(n->saved_alloc, key, v)
      if (!strncmp(key, "nvidia.com/", 11))
        json_object_set(alloc, key, v);
    json_decref(n->saved_alloc);
    n->saved_alloc = NULL;
  }
}

static int tolerates_noexecute(const json_t *pod, const json_t *node)
{
  struct gq_pod p;
  struct gq_node n;
  char err[256];
  int ok = 1;

  if (gq_pod_decode(pod, &p, err, sizeof(err)) != 0)
    return 1;
  if (gq_node_decode(node, NULL, &n, err, sizeof(err)) == 0) {
    ok = gq_untolerated_taint(&p.sched, &n, 1) == NULL;
    gq_node_release(&n);
  }
  gq_pod_release(&p);
  return ok;
}

/* The taint manager: pods that do not tolerate a NoExecute taint go. */
static void taint_evict(struct gq_sim *s, const json_t *node)
{
  json_t *pods = pods_on(s, gq_meta_str(node, "name")), *p;
  char msg[256];
  size_t i;

  json_array_foreach(pods, i, p)
    if (!tolerates_noexecute(p, node))
      gq_sim_evict(s, gq_meta_str(p, "namespace"), gq_meta_str(p, "name"), -1, 0,
                   "DeletionByTaintManager", msg, sizeof(msg));
  json_decref(pods);
}

void gq_sim_drain_retry(struct gq_sim *s, const char *node)
{
  struct gq_sim_node *n;
  json_t *pods = pods_on(s, node), *p;
  char msg[512];
  size_t i;
  int refused = 0;

  HASH_FIND_STR(s->engine->nodes, node, n);
  if (!n || !n->draining) {
    json_decref(pods);
    return;
  }
  json_array_foreach(pods, i, p)
    refused |= gq_sim_evict(s, gq_meta_str(p, "namespace"), gq_meta_str(p, "name"),
                            -1, 1, "EvictionByEvictionAPI", msg,
                            sizeof(msg)) == 429;
  json_decref(pods);
  if (refused)
    gq_sim_tev_add(s->engine, gq_clock_now_ms() + DRAIN_RETRY_VMS,
                   GQ_TEV_DRAIN, node, NULL, 0);
  else
    n->draining = 0;
}

/* Pods of a deleted node are deleted at once (pod GC). */
static void delete_node(struct gq_sim *s, const char *name)
{
  json_t *pods = pods_on(s, name), *p;
  char msg[256];
  size_t i;

  gq_sim_remove(s, kind(s, "nodes"), NULL, name, 1);
  json_array_foreach(pods, i, p)
    gq_sim_evict(s, gq_meta_str(p, "namespace"), gq_meta_str(p, "name"), 0, 0,
                 "DeletionByPodGC", msg, sizeof(msg));
  json_decref(pods);
}

int gq_sim_node_event(struct gq_sim *s, const char *name, const char *action,
                      const json_t *arg, char *msg, size_t msglen)
{
  struct gq_sim_kind *k = kind(s, "nodes");
  const json_t *cur = gq_sim_get(k, NULL, name);
  json_t *next;
  int noexec = 0;

  if (!cur) {
    snprintf(msg, msglen, "nodes \"%s\" not found", name);
    return GQ_ENOTFOUND;
  }
  if (!strcmp(action, "delete")) {
    delete_node(s, name);
    return 0;
  }
  if (!strcmp(action, "xid")) /* a GPU's error, not the Node object's */
    return gq_sim_gpus_xid(s, name, arg, msg, msglen);
  next = gq_sim_copy(cur);
  if (!json_object_get(next, "spec"))
    json_object_set_new(next, "spec", json_object());
  if (!strcmp(action, "cordon") || !strcmp(action, "drain"))
    set_cordon(next, 1);
  else if (!strcmp(action, "uncordon"))
    set_cordon(next, 0);
  else if (!strcmp(action, "device-plugin-loss"))
    set_gpus(s->engine, next, 1);
  else if (!strcmp(action, "device-plugin-restore"))
    set_gpus(s->engine, next, 0);
  else if (!strcmp(action, "notready"))
    set_ready(next, 0);
  else if (!strcmp(action, "ready"))
    set_ready(next, 1);
  else if ((!strcmp(action, "taint") || !strcmp(action, "untaint")) &&
           json_is_string(json_object_get(arg, "key"))) {
    const char *key = json_string_value(json_object_get(arg, "key"));
    const char *eff = json_string_value(json_object_get(arg, "effect"));

    if (!strcmp(action, "untaint"))
      drop_taint(next, key);
    else
      add_taint(next, taint(key, json_string_value(json_object_get(arg,
                                                                   "value")),
                            eff ? eff : "NoSchedule"));
    noexec = eff && !strcmp(eff, "NoExecute") && !strcmp(action, "taint");
  } else {
    json_decref(next);
    snprintf(msg, msglen, "unknown node action '%s' (cordon, uncordon, drain, "
             "device-plugin-loss, device-plugin-restore, notready, ready, "
             "delete, taint, untaint, xid; taints need {\"key\", "
             "\"effect\"}, xid {\"gpu\", \"xid\", \"for\"})",
             action);
    return GQ_EINVAL;
  }
  cur = gq_sim_put(s, k, next);
  if (noexec)
    taint_evict(s, cur);
  if (!strcmp(action, "drain")) {
    gq_sim_node_rec(s->engine, name)->draining = 1;
    gq_sim_drain_retry(s, name);
  }
  return 0;
}
