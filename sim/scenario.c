/* sim/scenario.c - scenarios (replay.h): a cluster, quotas, jobs at given
 * times, node events and hooks, and expectations checked at the end. */
#include "sim/replay_int.h"

#include "api/jsonpath.h"
#include "api/yaml.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "sim/cluster.h"

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
      return GQ_EINVAL;
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
  const json_t *doc, *to, *ev;
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
  if (ev && (rc = gq__replay_schedule_events(s, r, ev, path, err, errlen)))
    return rc;
  to = json_object_get(doc, "timeout");
  gq_sim_tev_add(s->engine,
                 r->t0_vms + (json_is_integer(to) ? json_integer_value(to)
                                                  : DEFAULT_TIMEOUT_S) *
                                 1000,
                 GQ_TEV_DEADLINE, NULL, NULL, 0);
  gq__replay_submit_due(s, r);
  return 0;
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

/* Finds what an expectation looks at; *what names it for messages. */
static const json_t *subject(struct gq_sim *s, const json_t *e,
                             const json_t *report, char *what, size_t len)
{
  const char *job = json_string_value(json_object_get(e, "job"));
  const char *rep = json_string_value(json_object_get(e, "report"));
  const json_t *o = json_object_get(e, "object");
  const char *path = json_string_value(json_object_get(e, "path"));

  if (rep) {
    snprintf(what, len, "report %s", rep);
    return json_object_get(report, rep);
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
  snprintf(msg, len, "got %s", g ? g : "nothing");
  free(g);
  return ok;
}

int gq__scenario_check(struct gq_sim *s, struct gq_sim_replay *r,
                       const json_t *report)
{
  const json_t *exp = json_object_get(r->scenario, "expect"), *e;
  const char *name = json_string_value(json_object_get(r->scenario, "name"));
  char what[512], msg[512], *want;
  size_t i;
  int failed = 0;

  printf("\n== scenario %s\n", name ? name : "");
  json_array_foreach((json_t *)exp, i, e) {
    const json_t *got = subject(s, e, report, what, sizeof(what));
    int ok = holds(got, e, msg, sizeof(msg));
    json_t *w = json_deep_copy(e);

    json_object_del(w, "job");
    json_object_del(w, "report");
    json_object_del(w, "object");
    json_object_del(w, "path");
    want = json_dumps(w, JSON_COMPACT);
    printf("%s %s: want %s, %s\n", ok ? "ok  " : "FAIL", what, want, msg);
    free(want);
    json_decref(w);
    failed += !ok;
  }
  printf("%s: %d of %zu expectations failed\n", failed ? "FAILED" : "PASSED",
         failed, json_array_size(exp));
  fflush(stdout);
  return failed;
}
