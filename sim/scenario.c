/* sim/scenario.c - scenarios (replay.h): a cluster, quotas, jobs at given
 * times, node events and hooks, and expectations checked at the end. */
#include "sim/replay_int.h"

#include "api/jsonpath.h"
#include "api/meta.h"
#include "api/yaml.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "sim/cluster.h"
#include "sim/report.h"

#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_S 86400

static int nodes_from(struct gq_sim *s, const json_t *cluster,
                      const char *path, char *err, size_t errlen)
{
  struct gq_sim_kind *k = gq_sim_kind_find(s, "", "v1", "nodes");
  char dir[1024], file[2048];
  json_t *nodes, *n;
  size_t i;
  int rc;

  if (!cluster)
    return 0;
  if (json_is_string(cluster)) {
    snprintf(dir, sizeof(dir), "%s", path);
    snprintf(file, sizeof(file), "%s/%s", dirname(dir),
             json_string_value(cluster));
    rc = gq_sim_cluster_load(file, &nodes, err, errlen);
  } else {
    rc = gq_sim_cluster_from_json(cluster, path, &nodes, err, errlen);
  }
  if (rc != 0)
    return rc;
  json_array_foreach(nodes, i, n)
    if (!gq_sim_seed(s, k, json_incref(n), err, errlen)) {
      json_decref(nodes);
      return GQ_EINVAL;
    }
  json_decref(nodes);
  return 0;
}

static int quotas_from(struct gq_sim *s, struct gq_sim_replay *r,
                       const json_t *quotas, char *err, size_t errlen)
{
  const json_t *q, *ns, *res;
  size_t i, j;

  json_array_foreach((json_t *)quotas, i, q) {
    const char *team = json_string_value(
        json_object_get(json_object_get(q, "metadata"), "name"));
    json_int_t nominal = 0;

    json_array_foreach(json_object_get(json_object_get(q, "spec"),
                                       "resources"),
                       j, res)
      nominal += json_integer_value(json_object_get(res, "nominal"));
    if (team) /* the summary's per-team rows and fairness use these */
      json_object_set_new(r->teams, team, json_integer(nominal));
    json_array_foreach(json_object_get(json_object_get(q, "spec"),
                                       "namespaces"),
                       j, ns)
      if (json_is_string(ns))
        gq__replay_namespace(s, json_string_value(ns));
    if (gq__replay_create(s, "gpuq.dev", "v1alpha1", "teamquotas",
                          json_deep_copy(q), err, errlen) != 0)
      json_object_set_new(r->rejected, team ? team : "", json_string(err));
  }
  return 0;
}

static int by_submit(const void *a, const void *b)
{
  const struct job *x = a, *y = b;

  return x->submit_s < y->submit_s ? -1 : x->submit_s > y->submit_s;
}

static int jobs_from(struct gq_sim *s, struct gq_sim_replay *r,
                     const json_t *jobs, const char *path, char *err,
                     size_t errlen)
{
  const json_t *e;
  size_t i;

  r->jobs = gq_xcalloc(json_array_size(jobs) + 1, sizeof(*r->jobs));
  json_array_foreach((json_t *)jobs, i, e) {
    const json_t *job = json_object_get(e, "job");
    const json_t *meta = json_object_get(job, "metadata");
    const json_t *spec = json_object_get(job, "spec");
    struct job *j = &r->jobs[r->n_jobs];
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *ns = json_string_value(json_object_get(meta, "namespace"));

    if (!name || !ns || !json_is_integer(json_object_get(e, "at"))) {
      snprintf(err, errlen, "%s: jobs[%zu]: needs at (virtual seconds) and a "
               "job with metadata.name and metadata.namespace", path, i);
      return GQ_EINVAL;
    }
    snprintf(j->name, sizeof(j->name), "%s", name);
    snprintf(j->ns, sizeof(j->ns), "%s", ns);
    snprintf(j->team, sizeof(j->team), "%s",
             json_string_value(json_object_get(spec, "team"))
                 ? json_string_value(json_object_get(spec, "team"))
                 : "");
    j->submit_s = json_integer_value(json_object_get(e, "at"));
    j->gpus = json_integer_value(json_object_get(spec, "gpusPerReplica")) *
              (json_object_get(spec, "replicas")
                   ? json_integer_value(json_object_get(spec, "replicas"))
                   : 1);
    j->obj = json_deep_copy(job);
    json_object_set_new(j->obj, "apiVersion",
                        json_string("gpuq.dev/v1alpha1"));
    json_object_set_new(j->obj, "kind", json_string("GpuJob"));
    gq__replay_namespace(s, ns);
    r->n_jobs++;
  }
  qsort(r->jobs, r->n_jobs, sizeof(*r->jobs), by_submit);
  return 0;
}

int gq__scenario_load(struct gq_sim *s, struct gq_sim_replay *r,
                      const char *path, char *err, size_t errlen)
{
  json_t *docs;
  const json_t *doc, *ev;
  int rc;

  if ((rc = gq_yaml_load_file(path, &docs, err, errlen)) != 0)
    return rc;
  r->scenario = json_incref(json_array_get(docs, 0));
  json_decref(docs);
  doc = r->scenario;
  if (!json_is_object(doc)) {
    snprintf(err, errlen, "%s: a scenario is a mapping (cluster, quotas, "
             "jobs, events, expect)", path);
    return GQ_EINVAL;
  }
  if ((rc = nodes_from(s, json_object_get(doc, "cluster"), path, err,
                       errlen)) ||
      (rc = quotas_from(s, r, json_object_get(doc, "quotas"), err, errlen)) ||
      (rc = jobs_from(s, r, json_object_get(doc, "jobs"), path, err, errlen)))
    return rc;
  ev = json_object_get(doc, "events");
  if (ev && (rc = gq__replay_schedule_events(s, r, ev, path, 1, err, errlen)))
    return rc;
  if (r->o.hold) {
    r->held = 1;
    return 0;
  }
  gq__scenario_begin(s, r);
  return 0;
}

void gq__scenario_begin(struct gq_sim *s, struct gq_sim_replay *r)
{
  const json_t *to = json_object_get(r->scenario, "timeout");
  const json_t *ev = json_object_get(r->scenario, "events"), *e;
  char err[256];
  size_t i;

  r->held = 0;
  r->t0_vms = gq_clock_now_ms();
  if (ev) /* checked at load */
    gq__replay_schedule_events(s, r, ev, "scenario", 0, err, sizeof(err));
  gq_sim_tev_add(s->engine,
                 r->t0_vms + (json_is_integer(to) ? json_integer_value(to)
                                                  : DEFAULT_TIMEOUT_S) *
                                 1000,
                 GQ_TEV_DEADLINE, NULL, NULL, 0);
  json_decref(r->timed);
  r->timed = json_array();
  json_array_foreach(json_object_get(r->scenario, "expect"), i, e) {
    json_array_append_new(r->timed, json_null());
    if (json_is_integer(json_object_get(e, "at")))
      gq_sim_tev_add(s->engine,
                     r->t0_vms +
                         json_integer_value(json_object_get(e, "at")) * 1000,
                     GQ_TEV_EXPECT, NULL, NULL, (int64_t)i);
  }
  gq__replay_submit_due(s, r);
}

/* --- expectations --- */

/* The value at a dotted path of obj (borrowed), NULL if absent; dots in
 * keys are escaped as in kubectl's JSONPath ("labels.a\\.b/c"). */
static const json_t *at_path(const json_t *obj, const char *path)
{
  char buf[512];

  snprintf(buf, sizeof(buf), ".%s", path);
  return gq_jsonpath_get(obj, buf);
}

static struct gq_sim_kind *kind_by_plural(struct gq_sim *s, const char *plural)
{
  for (struct gq_sim_kind *k = s->kinds; k; k = k->next)
    if (!k->dropped && !k->view_of && !strcmp(k->plural, plural))
      return k;
  return NULL;
}

/* The pods of GpuJob "ns/name" that hold resources now (not Succeeded or
 * Failed; terminating ones count). */
static json_int_t live_pods(struct gq_sim *s, const char *job)
{
  struct gq_sim_kind *k = kind_by_plural(s, "pods");
  const char *slash = strchr(job, '/');
  char ns[256];
  json_t *l, *p;
  json_int_t n = 0;
  size_t i;

  if (!k || !slash)
    return 0;
  snprintf(ns, sizeof(ns), "%.*s", (int)(slash - job), job);
  l = gq_sim_list(k, ns);
  json_array_foreach(l, i, p) {
    const char *j = gq_meta_obj_label(p, "gpuq.dev/job");
    const char *ph = json_string_value(
        json_object_get(json_object_get(p, "status"), "phase"));

    n += j && !strcmp(j, slash + 1) &&
         (!ph || (strcmp(ph, "Succeeded") && strcmp(ph, "Failed")));
  }
  json_decref(l);
  return n;
}

/* Finds what an expectation looks at; *what names it for messages. */
static const json_t *subject(struct gq_sim *s, const json_t *e,
                             const json_t *report, char *what, size_t len)
{
  const char *job = json_string_value(json_object_get(e, "job"));
  const char *rep = json_string_value(json_object_get(e, "report"));
  const char *sub = json_string_value(json_object_get(e, "submission"));
  const char *pods = json_string_value(json_object_get(e, "pods"));
  const json_t *o = json_object_get(e, "object");
  const char *path = json_string_value(json_object_get(e, "path"));
  struct gq_sim_replay *r = s->engine->replay;

  if (sub && !strncmp(sub, "teamquotas/", 11)) {
    const json_t *rej = json_object_get(r->rejected, sub + 11);

    snprintf(what, len, "submission of %s", sub);
    json_decref(r->found);
    r->found = rej ? json_incref((json_t *)rej) : json_string("accepted");
    return r->found;
  }
  if (sub) {
    const json_t *v = json_object_get(r->index, sub);
    struct job *j = v ? &r->jobs[json_integer_value(v)] : NULL;

    snprintf(what, len, "submission of %s", sub);
    json_decref(r->found);
    r->found = !j ? NULL
               : j->rejected ? json_string(j->rejected)
                             : json_string("accepted");
    return r->found;
  }
  if (rep) {
    snprintf(what, len, "report %s%s%s", rep, path ? " " : "",
             path ? path : "");
    return path ? json_object_get(json_object_get(report, rep), path)
                : json_object_get(report, rep);
  }
  if (pods) {
    snprintf(what, len, "pods of GpuJob %s", pods);
    json_decref(r->found);
    r->found = json_integer(live_pods(s, pods));
    return r->found;
  }
  if (job) {
    char ns[256];
    const char *slash = strchr(job, '/');
    struct gq_sim_kind *k = kind_by_plural(s, "gpujobs");

    snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - job) : 0, job);
    snprintf(what, len, "GpuJob %s %s", job, path ? path : "status.phase");
    o = k ? gq_sim_get(k, ns, slash ? slash + 1 : job) : NULL;
    return o ? at_path(o, path ? path : "status.phase") : NULL;
  }
  if (o) {
    const char *res = json_string_value(json_object_get(o, "resource"));
    const char *name = json_string_value(json_object_get(o, "name"));
    const char *ns = json_string_value(json_object_get(o, "namespace"));
    struct gq_sim_kind *k = res ? kind_by_plural(s, res) : NULL;
    const json_t *obj = k && name ? gq_sim_get(k, ns, name) : NULL;

    snprintf(what, len, "%s %s%s%s %s", res ? res : "?", ns ? ns : "",
             ns ? "/" : "", name ? name : "?", path ? path : "");
    return obj && path ? at_path(obj, path) : obj;
  }
  snprintf(what, len, "expectation without job, report or object");
  return NULL;
}

/* Checks one expectation; 1 if it holds. msg says what was found. */
static int holds(const json_t *got, const json_t *e, char *msg, size_t len)
{
  const json_t *eq = json_object_get(e, "equals");
  const json_t *lo = json_object_get(e, "atLeast");
  const json_t *hi = json_object_get(e, "atMost");
  const json_t *ex = json_object_get(e, "exists");
  const char *sub = json_string_value(json_object_get(e, "contains"));
  const json_t *in = json_object_get(e, "in"), *v;
  size_t i;
  char *g = got ? json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
  int ok = 1;

  if (eq)
    ok = got && json_equal((json_t *)got, (json_t *)eq);
  if (ok && lo)
    ok = json_is_number(got) && json_number_value(got) >= json_number_value(lo);
  if (ok && hi)
    ok = json_is_number(got) && json_number_value(got) <= json_number_value(hi);
  if (ok && ex)
    ok = (got != NULL) == json_is_true(ex);
  if (ok && sub) /* a string, or the JSON text of any other value */
    ok = got && strstr(json_is_string(got) ? json_string_value(got) : g, sub);
  if (ok && in) {
    ok = 0;
    json_array_foreach((json_t *)in, i, v)
      ok |= got && json_equal((json_t *)got, v);
  }
  snprintf(msg, len, "got %s", g ? g : "nothing");
  free(g);
  return ok;
}

/* everyPod: ns/job: the expectation must hold at path of each of the
 * job's pods holding resources now (and there must be one). */
static json_t *every_pod(struct gq_sim *s, const json_t *e, const char *job)
{
  struct gq_sim_kind *k = kind_by_plural(s, "pods");
  const char *path = json_string_value(json_object_get(e, "path"));
  const char *slash = strchr(job, '/');
  char ns[256], what[512], msg[512] = "no pods";
  json_t *l, *p;
  size_t i;
  int ok = 1, n = 0;

  snprintf(ns, sizeof(ns), "%.*s", slash ? (int)(slash - job) : 0, job);
  snprintf(what, sizeof(what), "every pod of GpuJob %s %s", job,
           path ? path : "");
  l = k && slash ? gq_sim_list(k, ns) : json_array();
  json_array_foreach(l, i, p) {
    const char *j = gq_meta_obj_label(p, "gpuq.dev/job");
    const char *ph = json_string_value(
        json_object_get(json_object_get(p, "status"), "phase"));

    if (!j || strcmp(j, slash + 1) ||
        (ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"))))
      continue;
    n++;
    if (ok && !holds(path ? at_path(p, path) : p, e, msg, sizeof(msg))) {
      ok = 0;
      snprintf(what, sizeof(what), "every pod of GpuJob %s %s (%s)", job,
               path ? path : "",
               gq_meta_str(p, "name"));
    }
  }
  json_decref(l);
  if (n && ok)
    snprintf(msg, sizeof(msg), "%d pods, each as wanted", n);
  return json_pack("{s:b, s:s, s:s}", "ok", n && ok, "what", what, "msg",
                   msg);
}

/* Evaluates expectation e now into a new {ok, what, msg} object. */
static json_t *evaluate(struct gq_sim *s, const json_t *e,
                        const json_t *report)
{
  const char *every = json_string_value(json_object_get(e, "everyPod"));
  char what[512], msg[512];
  const json_t *got;
  int ok;

  if (every)
    return every_pod(s, e, every);
  got = subject(s, e, report, what, sizeof(what));
  if (!got) /* "default": what an absent value counts as (a count: 0) */
    got = json_object_get(e, "default");
  ok = holds(got, e, msg, sizeof(msg));
  return json_pack("{s:b, s:s, s:s}", "ok", ok, "what", what, "msg", msg);
}

void gq__scenario_expect_tev(struct gq_sim *s, struct gq_sim_replay *r,
                             int64_t i)
{
  const json_t *e = json_array_get(json_object_get(r->scenario, "expect"),
                                   (size_t)i);
  json_t *rep = gq_sim_report_json(s);

  json_array_set_new(r->timed, (size_t)i, evaluate(s, e, rep));
  json_decref(rep);
}

int gq__scenario_check(struct gq_sim *s, struct gq_sim_replay *r,
                       const json_t *report)
{
  const json_t *exp = json_object_get(r->scenario, "expect"), *e;
  const char *name = json_string_value(json_object_get(r->scenario, "name"));
  char *want;
  size_t i;
  int failed = 0;

  printf("\n== scenario %s\n", name ? name : "");
  json_array_foreach((json_t *)exp, i, e) {
    const json_t *at = json_object_get(e, "at");
    json_t *res = at ? json_incref(json_array_get(r->timed, i))
                     : evaluate(s, e, report);
    json_t *w = json_deep_copy(e);
    int ok = json_is_true(json_object_get(res, "ok"));
    const char *what = json_string_value(json_object_get(res, "what"));
    const char *msg = json_string_value(json_object_get(res, "msg"));

    json_object_del(w, "job");
    json_object_del(w, "report");
    json_object_del(w, "submission");
    json_object_del(w, "pods");
    json_object_del(w, "everyPod");
    json_object_del(w, "object");
    json_object_del(w, "path");
    json_object_del(w, "at");
    want = json_dumps(w, JSON_COMPACT);
    if (at && !json_is_object(res))
      printf("FAIL at t=%llds: not reached (the scenario ended first)\n",
             (long long)json_integer_value(at));
    else if (at)
      printf("%s at t=%llds %s: want %s, %s\n", ok ? "ok  " : "FAIL",
             (long long)json_integer_value(at), what, want, msg);
    else
      printf("%s %s: want %s, %s\n", ok ? "ok  " : "FAIL", what, want, msg);
    free(want);
    json_decref(w);
    json_decref(res);
    failed += !ok;
  }
  if (r->hook_failures) { /* a hook is also a check */
    printf("FAIL %lld scenario hook(s) exited non-zero (see the sim log)\n",
           (long long)r->hook_failures);
    failed++;
  }
  printf("%s: %d of %zu expectations failed\n", failed ? "FAILED" : "PASSED",
         failed, json_array_size(exp) + (r->hook_failures ? 1 : 0));
  fflush(stdout);
  return failed;
}
