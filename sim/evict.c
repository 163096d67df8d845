/* sim/evict.c - pods/eviction with PodDisruptionBudgets, pods/binding,
 * and PDB status (k8s.io/kubernetes/pkg/registry/core/pod/storage/
 * eviction.go and the disruption controller, simplified: the expected pod
 * count is the number of pods the selector matches). */
#include "sim/server.h"

#include "sim/engine.h"

#include "api/meta.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *phase(const json_t *pod)
{
  const char *p = json_string_value(
      json_object_get(json_object_get(pod, "status"), "phase"));

  return p ? p : "Pending";
}

/* Running, Ready and not terminating: what a budget counts as healthy. */
static int healthy(const json_t *pod)
{
  const json_t *conds =
      json_object_get(json_object_get(pod, "status"), "conditions"), *c;
  size_t i;

  if (strcmp(phase(pod), "Running") != 0 ||
      json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
    return 0;
  json_array_foreach((json_t *)conds, i, c) {
    const char *t = json_string_value(json_object_get(c, "type"));
    const char *st = json_string_value(json_object_get(c, "status"));

    if (t && st && !strcmp(t, "Ready"))
      return !strcmp(st, "True");
  }
  return 0;
}

/* An IntOrString against a total: "50%" rounds up, as the disruption
 * controller's GetScaledValueFromIntOrPercent(..., true). */
static long scaled(const json_t *v, long total)
{
  if (json_is_integer(v))
    return (long)json_integer_value(v);
  if (json_is_string(v)) {
    double pct = strtod(json_string_value(v), NULL);

    return (long)ceil(pct * (double)total / 100.0);
  }
  return -1;
}

struct budget {
  long expected, healthy, desired, allowed;
};

static void count_budget(struct gq_sim *s, const json_t *pdb,
                         const struct gq_labelsel *sel, struct budget *b)
{
  struct gq_sim_kind *pods = gq_sim_kind_find(s, "", "v1", "pods");
  const json_t *spec = json_object_get(pdb, "spec");
  json_t *items = gq_sim_list(pods, gq_meta_str(pdb, "namespace")), *p;
  long min, max;
  size_t i;

  memset(b, 0, sizeof(*b));
  json_array_foreach(items, i, p) {
    if (!gq_labelsel_match(sel, json_object_get(json_object_get(p, "metadata"),
                                                "labels")))
      continue;
    if (strcmp(phase(p), "Succeeded") && strcmp(phase(p), "Failed"))
      b->expected++;
    b->healthy += healthy(p);
  }
  json_decref(items);
  min = scaled(json_object_get(spec, "minAvailable"), b->expected);
  max = scaled(json_object_get(spec, "maxUnavailable"), b->expected);
  b->desired = min >= 0 ? min : max >= 0 ? b->expected - max : b->expected;
  if (b->desired < 0)
    b->desired = 0;
  b->allowed = b->healthy - b->desired;
  if (b->allowed < 0)
    b->allowed = 0;
}

/* Writes a PDB's status if it changed. */
static void store_status(struct gq_sim *s, struct gq_sim_kind *k,
                         const json_t *pdb, const struct budget *b)
{
  json_t *st = json_pack("{s:i, s:i, s:i, s:i, s:I}", "disruptionsAllowed",
                         (int)b->allowed, "currentHealthy", (int)b->healthy,
                         "desiredHealthy", (int)b->desired, "expectedPods",
                         (int)b->expected, "observedGeneration",
                         json_integer_value(json_object_get(
                             json_object_get(pdb, "metadata"), "generation")));
  json_t *next;

  if (json_equal(st, json_object_get(pdb, "status"))) {
    json_decref(st);
    return;
  }
  next = json_deep_copy(pdb);
  json_object_set_new(next, "status", st);
  gq_sim_put(s, k, next);
}

/* Recomputes the status of the PodDisruptionBudgets in namespace ns. */
static void pdb_refresh(struct gq_sim *s, const char *ns)
{
  struct gq_sim_kind *k = gq_sim_kind_find(s, "policy", "v1",
                                           "poddisruptionbudgets");
  json_t *pdbs, *pdb;
  size_t i;

  if (!k || !k->objs)
    return;
  pdbs = gq_sim_list(k, ns);
  json_array_foreach(pdbs, i, pdb) {
    struct gq_labelsel *sel = NULL;
    struct budget b;
    char err[256];

    if (gq_labelsel_from_json(json_object_get(json_object_get(pdb, "spec"),
                                              "selector"),
                              &sel, err, sizeof(err)) != 0)
      continue;
    count_budget(s, pdb, sel, &b);
    gq_labelsel_free(sel);
    store_status(s, k, pdb, &b);
  }
  json_decref(pdbs);
}

void gq_sim_pdb_observe(struct gq_sim *s, const struct gq_sim_event *ev,
                        void *arg)
{
  char ns[256]; /* copied: a small window may drop obj during the refresh */

  (void)arg;
  if (*ev->kind->group || strcmp(ev->kind->plural, "pods") != 0)
    return; /* budgets count pods */
  snprintf(ns, sizeof(ns), "%s", gq_meta_str(ev->obj, "namespace"));
  pdb_refresh(s, ns);
}

/* Checks the budgets covering pod. Returns 0 if the eviction may go on;
 * else 429 (or 500 for several budgets) with the reason in msg. */
static int check_budgets(struct gq_sim *s, const char *ns, const json_t *pod,
                         char *msg, size_t msglen)
{
  struct gq_sim_kind *k = gq_sim_kind_find(s, "policy", "v1",
                                           "poddisruptionbudgets");
  json_t *pdbs = gq_sim_list(k, ns), *pdb, *match = NULL;
  size_t i, n = 0;
  struct budget b;
  int rc = 0;

  json_array_foreach(pdbs, i, pdb) {
    struct gq_labelsel *sel = NULL;
    char err[256];

    if (gq_labelsel_from_json(json_object_get(json_object_get(pdb, "spec"),
                                              "selector"),
                              &sel, err, sizeof(err)) != 0)
      continue;
    if (gq_labelsel_match(sel, json_object_get(json_object_get(pod,
                                                               "metadata"),
                                               "labels"))) {
      n++;
      if (!match) {
        match = pdb;
        count_budget(s, pdb, sel, &b);
      }
    }
    gq_labelsel_free(sel);
  }
  if (n > 1) {
    snprintf(msg, msglen, "This pod has more than one PodDisruptionBudget, "
             "which the eviction subresource does not support.");
    rc = 500;
  } else if (n == 1 && b.allowed <= 0) {
    snprintf(msg, msglen, "The disruption budget %s needs %ld healthy pods "
             "and has %ld currently", gq_meta_str(match, "name"), b.desired,
             b.healthy);
    rc = 429;
  }
  json_decref(pdbs);
  return rc;
}

/* Adds or replaces a pod condition; returns the new pod (new reference). */
static json_t *with_condition(const json_t *pod, const char *type,
                              const char *status, const char *reason,
                              const char *message)
{
  json_t *next = gq_sim_copy(pod), *st = json_object_get(next, "status");
  json_t *conds, *c;
  char ts[40];
  size_t i;

  if (!st) {
    st = json_object();
    json_object_set_new(next, "status", st);
  }
  conds = json_object_get(st, "conditions");
  if (!conds) {
    conds = json_array();
    json_object_set_new(st, "conditions", conds);
  }
  gq_time_format(gq_clock_now_ms(), ts, sizeof(ts));
  json_array_foreach(conds, i, c) {
    const char *ct = json_string_value(json_object_get(c, "type"));

    if (ct && !strcmp(ct, type)) {
      json_array_remove(conds, i);
      break;
    }
  }
  json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s, s:s}", "type",
                                         type, "status", status, "reason",
                                         reason, "message", message,
                                         "lastTransitionTime", ts));
  return next;
}

int gq_sim_evict(struct gq_sim *s, const char *ns, const char *name,
                 int64_t grace_s, int check_budget, const char *reason,
                 char *msg, size_t msglen)
{
  struct gq_sim_kind *k = gq_sim_kind_find(s, "", "v1", "pods");
  const json_t *pod = gq_sim_get(k, ns, name);
  int rc;

  if (!pod) {
    snprintf(msg, msglen, "pods \"%s\" not found", name);
    return 404;
  }
  if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
    return 0; /* already terminating: nothing more to do */
  /* A pod that is not running ignores the budget (eviction.go:
   * canIgnorePDB for Pending, Succeeded and Failed pods). */
  if (check_budget && !strcmp(phase(pod), "Running") &&
      (rc = check_budgets(s, ns, pod, msg, msglen)) != 0)
    return rc;
  gq_sim_put(s, k, with_condition(pod, "DisruptionTarget", "True", reason,
                                  "evicting"));
  json_decref(gq_sim_delete(s, k, ns, name, grace_s, 0));
  return 0;
}

void gq_sim_do_eviction(struct gq_sim_req *r)
{
  size_t len;
  const char *body = gq_http_body(r->http, &len);
  json_t *ev = len && body[0] == '{' ? json_loadb(body, len, 0, NULL) : NULL;
  const json_t *g = json_object_get(json_object_get(ev, "deleteOptions"),
                                    "gracePeriodSeconds");
  int64_t grace = json_is_integer(g) ? json_integer_value(g) : -1;
  char msg[512];
  int rc;

  json_decref(ev);
  rc = gq_sim_evict(r->s, r->ns, r->name, grace, 1, "EvictionByEvictionAPI",
                    msg, sizeof(msg));
  if (rc == 404)
    gq_sim_status(r->http, 404, "NotFound", msg,
                  json_pack("{s:s, s:s}", "name", r->name, "kind", "pods"));
  else if (rc == 429)
    gq_sim_status(r->http, 429, "TooManyRequests",
                  "Cannot evict pod as it would violate the pod's disruption "
                  "budget.",
                  json_pack("{s:[{s:s, s:s}]}", "causes", "reason",
                            "DisruptionBudget", "message", msg));
  else if (rc == 500)
    gq_sim_status(r->http, 500, "InternalError", msg, NULL);
  else
    gq_sim_reply_success(r->http, 201);
}

void gq_sim_do_binding(struct gq_sim_req *r)
{
  const json_t *pod = gq_sim_get(r->k, r->ns, r->name);
  size_t len;
  const char *body = gq_http_body(r->http, &len);
  json_t *b = json_loadb(body, len, 0, NULL), *next;
  const char *node = json_string_value(
      json_object_get(json_object_get(b, "target"), "name"));
  const char *cur;
  char msg[600];

  if (!pod || !node) {
    json_decref(b);
    if (!pod)
      snprintf(msg, sizeof(msg), "pods \"%s\" not found", r->name);
    gq_sim_status(r->http, pod ? 400 : 404, pod ? "BadRequest" : "NotFound",
                  pod ? "binding: target.name is required" : msg, NULL);
    return;
  }
  cur = json_string_value(json_object_get(json_object_get(pod, "spec"),
                                          "nodeName"));
  if (cur && *cur) {
    snprintf(msg, sizeof(msg), "Operation cannot be fulfilled on pods/binding "
             "\"%s\": pod %s is already assigned to node \"%s\"", r->name,
             r->name, cur);
    json_decref(b);
    gq_sim_status(r->http, 409, "Conflict", msg, NULL);
    return;
  }
  next = with_condition(pod, "PodScheduled", "True", "", "");
  json_object_set_new(json_object_get(next, "spec"), "nodeName",
                      json_string(node));
  json_decref(b);
  gq_sim_put(r->s, r->k, next);
  gq_sim_reply_success(r->http, 201);
}
