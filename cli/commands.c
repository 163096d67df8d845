/* cli/commands.c - queue, teams, nodes and why (see commands.h). */
#include "cli/commands.h"

#include "api/gpujob.h"
#include "api/teamquota.h"
#include "base/alloc.h"
#include "base/err.h"
#include "cli/cluster.h"
#include "cli/jget.h"
#include "cli/kube.h"
#include "cli/table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOBS_PATH "/apis/" GQ_API_VERSION
/* --- queue ------------------------------------------------------------ */

static int waiting(const char *phase)
{
  return !phase || (strcmp(phase, "Running") && strcmp(phase, "Succeeded") &&
                    strcmp(phase, "Failed"));
}

/* The string member k of row, or "" (rows come from the API server, but a
 * malformed object must not crash the plugin). */
static const char *member(const json_t *row, const char *k)
{
  const char *v = gq_cli_jstr(gq_cli_jget(row, k, NULL));

  return v ? v : "";
}

/* Team, then position (jobs without one last), then namespace and name. */
static int cmp_queue(const void *a, const void *b)
{
  const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
  int c = strcmp(member(x, "team"), member(y, "team"));
  json_int_t px, py;

  if (c)
    return c;
  px = json_integer_value(gq_cli_jget(x, "position", NULL));
  py = json_integer_value(gq_cli_jget(y, "position", NULL));
  if ((px > 0) != (py > 0))
    return px > 0 ? -1 : 1;
  if (px != py)
    return px < py ? -1 : 1;
  c = strcmp(member(x, "namespace"), member(y, "namespace"));
  return c ? c : strcmp(member(x, "name"), member(y, "name"));
}

json_t *gq_cli_queue_row(const json_t *job, int64_t now_ms)
{
  const json_t *st = gq_cli_jget(job, "status", NULL);
  const json_t *spec = gq_cli_jget(job, "spec", NULL);
  const json_t *meta = gq_cli_jget(job, "metadata", NULL);
  const char *phase = gq_cli_jstr(gq_cli_jget(st, "phase", NULL));
  const char *kind = gq_cli_jstr(gq_cli_jget(spec, "workload", "kind", NULL));
  const char *wname = gq_cli_jstr(gq_cli_jget(spec, "workload", "name", NULL));
  int64_t eta = gq_cli_time_ms(gq_cli_jget(st, "estimatedStartTime", NULL));
  char age[32], etab[32];
  json_t *row;

  gq_cli_age(now_ms,
             gq_cli_time_ms(gq_cli_jget(meta, "creationTimestamp", NULL)),
             age, sizeof(age));
  if (!eta)
    snprintf(etab, sizeof(etab), "-");
  else if (eta <= now_ms)
    snprintf(etab, sizeof(etab), "now");
  else
    gq_cli_age(eta, now_ms, etab, sizeof(etab)); /* eta - now */
  /* a stand-in shows the workload it queues (docs/integrations.md) */
  row = json_pack("{s:s?,s:s?,s:s,s:s?,s:s?,s:O?,s:O?,s:s,s:O?,s:s,s:s?,s:s,"
                  "s:s?,s:s?}",
                  "namespace",
                  gq_cli_jstr(gq_cli_jget(meta, "namespace", NULL)),
                  "name", kind && wname
                              ? wname
                              : gq_cli_jstr(gq_cli_jget(meta, "name", NULL)),
                  "kind", kind && wname ? kind : "GpuJob",
                  "gpujob", gq_cli_jstr(gq_cli_jget(meta, "name", NULL)),
                  "team", gq_cli_jstr(gq_cli_jget(spec, "team", NULL)),
                  "priority", gq_cli_jget(spec, "priority", NULL),
                  "gpus", gq_cli_jget(st, "gpus", NULL),
                  "phase", phase ? phase : "Pending",
                  "position", gq_cli_jget(st, "queuePosition", NULL),
                  "eta", etab,
                  "estimatedStartTime",
                  gq_cli_jstr(gq_cli_jget(st, "estimatedStartTime", NULL)),
                  "age", age,
                  "reason", gq_cli_jstr(gq_cli_jget(st, "reason", NULL)),
                  "message", gq_cli_jstr(gq_cli_jget(st, "message", NULL)));
  if (!gq_cli_jget(row, "priority", NULL)) /* spec.priority defaults to 0 */
    json_object_set_new(row, "priority", json_integer(0));
  return row;
}

int gq_cli_queue(int argc, char **argv)
{
  static const struct gq_cli_col cols[] = {
      {"NAMESPACE", "namespace"}, {"KIND", "kind"},   {"NAME", "name"},
      {"TEAM", "team"},           {"PRIORITY", "priority"},
      {"GPUS", "gpus"},           {"PHASE", "phase"},
      {"POSITION", "position"},   {"ETA", "eta"},     {"AGE", "age"},
      {"REASON", "reason"}};
  struct gq_cli_opts o;
  struct gq_cli_conn c;
  json_t *list, *rows, *it, **v;
  char path[512];
  size_t i, n = 0;
  int64_t now;

  if (gq_cli_parse(argc, argv, "queue", GQ_CLI_NS | GQ_CLI_TEAM, 0, &o))
    return 2;
  if (gq_cli_open(&c, &o))
    return 1;
  if (o.all_ns)
    snprintf(path, sizeof(path), JOBS_PATH "/gpujobs");
  else
    snprintf(path, sizeof(path), JOBS_PATH "/namespaces/%s/gpujobs", c.ns);
  if (gq_cli_fetch(&c, path, 1, &list)) {
    gq_cli_close(&c);
    return 1;
  }
  now = gq_cli_now_ms(&c); /* ETA and AGE on the timestamps' clock */
  v = gq_xcalloc(json_array_size(json_object_get(list, "items")) + 1,
                 sizeof(*v));
  json_array_foreach(json_object_get(list, "items"), i, it) {
    const char *team = gq_cli_jstr(gq_cli_jget(it, "spec", "team", NULL));

    if (!waiting(gq_cli_jstr(gq_cli_jget(it, "status", "phase", NULL))) ||
        (o.team && (!team || strcmp(team, o.team))))
      continue;
    v[n++] = gq_cli_queue_row(it, now);
  }
  qsort(v, n, sizeof(*v), cmp_queue);
  rows = json_array();
  for (i = 0; i < n; i++)
    json_array_append_new(rows, v[i]);
  /* kubectl shows NAMESPACE only with -A */
  gq_cli_print(stdout, "GpuJobQueue", rows, o.all_ns ? cols : cols + 1,
               o.all_ns ? 11 : 10, o.json);
  free(v);
  json_decref(rows);
  json_decref(list);
  gq_cli_close(&c);
  return 0;
}

/* --- teams ------------------------------------------------------------ */

/* The status.flavors entry for (flavor, resource), or NULL. */
static const json_t *flavor_status(const json_t *tq, const char *flavor,
                                   const char *resource)
{
  const json_t *it;
  size_t i;

  json_array_foreach(gq_cli_jget(tq, "status", "flavors", NULL), i, it) {
    const char *f = gq_cli_jstr(gq_cli_jget(it, "flavor", NULL));
    const char *r = gq_cli_jstr(gq_cli_jget(it, "resource", NULL));

    if (f && r && !strcmp(f, flavor) && !strcmp(r, resource))
      return it;
  }
  return NULL;
}

int gq_cli_teams(int argc, char **argv)
{
  static const struct gq_cli_col cols[] = {
      {"TEAM", "team"},         {"COHORT", "cohort"},   {"FLAVOR", "flavor"},
      {"RESOURCE", "resource"}, {"NOMINAL", "nominal"}, {"USED", "used"},
      {"BORROWED", "borrowed"}, {"LENT", "lent"},       {"PENDING", "pending"},
      {"PENDING-JOBS", "pendingJobs"}};
  struct gq_cli_opts o;
  struct gq_cli_conn c;
  json_t *list, *rows = json_array(), *it;
  char err[1024];
  size_t i;

  if (gq_cli_parse(argc, argv, "teams", GQ_CLI_TEAM, 0, &o)) {
    json_decref(rows);
    return 2;
  }
  if (gq_cli_open(&c, &o)) {
    json_decref(rows);
    return 1;
  }
  if (gq_cli_fetch(&c, JOBS_PATH "/teamquotas", 1, &list)) {
    gq_cli_close(&c);
    json_decref(rows);
    return 1;
  }
  json_array_foreach(json_object_get(list, "items"), i, it) {
    struct gq_teamquota q;

    if (o.team && strcmp(o.team, gq_cli_jstr(gq_cli_jget(it, "metadata",
                                                         "name", NULL))))
      continue;
    if (gq_teamquota_decode(it, &q, err, sizeof(err)) != 0) {
      fprintf(stderr, "warning: TeamQuota %s is invalid: %s\n",
              gq_cli_jstr(gq_cli_jget(it, "metadata", "name", NULL)), err);
      continue;
    }
    for (size_t k = 0; k < q.n_res; k++) {
      const struct gq_quota_res *r = &q.res[k];
      const json_t *fs = flavor_status(it, r->flavor, r->resource);

      json_array_append_new(rows, json_pack(
          "{s:s,s:s?,s:s,s:s,s:I,s:O?,s:O?,s:O?,s:O?,s:O?}",
          "team", q.meta.name, "cohort", q.cohort, "flavor", r->flavor,
          "resource", r->resource, "nominal", (json_int_t)r->nominal,
          "used", gq_cli_jget(fs, "used", NULL),
          "borrowed", gq_cli_jget(fs, "borrowed", NULL),
          "lent", gq_cli_jget(fs, "lent", NULL),
          "pending", gq_cli_jget(fs, "pending", NULL),
          "pendingJobs", gq_cli_jget(it, "status", "pendingJobs", NULL)));
    }
    gq_teamquota_release(&q);
  }
  gq_cli_print(stdout, "TeamUsage", rows, cols, 10, o.json);
  json_decref(rows);
  json_decref(list);
  gq_cli_close(&c);
  return 0;
}

/* --- nodes and why: the cluster view --------------------------------- */

/* Loads nodes and pods into cl; returns 0 or 1 (error printed). */
static int load_cluster(struct gq_cli_conn *c, struct gq_cli_cluster *cl)
{
  json_t *nodes, *pods;

  if (gq_cli_fetch(c, "/api/v1/nodes", 1, &nodes))
    return 1;
  if (gq_cli_fetch(c, "/api/v1/pods", 1, &pods)) {
    json_decref(nodes);
    return 1;
  }
  gq_cli_cluster_init(cl, nodes, pods);
  json_decref(nodes);
  json_decref(pods);
  if (cl->skipped)
    fprintf(stderr, "warning: %zu node(s) or pod(s) could not be decoded "
            "and are left out\n", cl->skipped);
  return 0;
}

int gq_cli_nodes(int argc, char **argv)
{
  static const struct gq_cli_col cols[] = {
      {"NAME", "name"},         {"PRODUCT", "product"},
      {"RESOURCE", "resource"}, {"CAPACITY", "capacity"},
      {"ALLOCATABLE", "allocatable"}, {"USED", "used"},
      {"FREE", "free"},         {"GPUQ-PODS", "gpuqPods"},
      {"STATUS", "status"}};
  struct gq_cli_opts o;
  struct gq_cli_conn c;
  struct gq_cli_cluster cl;
  json_t *rows;

  if (gq_cli_parse(argc, argv, "nodes", 0, 0, &o))
    return 2;
  if (gq_cli_open(&c, &o))
    return 1;
  if (load_cluster(&c, &cl)) {
    gq_cli_close(&c);
    return 1;
  }
  rows = json_array();
  for (size_t i = 0; i < cl.cap.snap.n; i++) {
    const struct gq_node *n = cl.cap.snap.nodes[i].node;
    char status[96];

    gq_cli_node_status(n, cl.leaving[i], status, sizeof(status));
    for (size_t k = 0; k < n->n_capacity; k++) {
      const char *res = n->capacity[k].name;
      int64_t alloc = gq_node_allocatable(n, res);

      json_array_append_new(rows, json_pack(
          "{s:s,s:s?,s:s,s:I,s:I,s:I,s:I,s:I,s:b,s:b,s:s}",
          "name", n->meta.name, "product", n->gpu_product, "resource", res,
          "capacity", (json_int_t)n->capacity[k].value,
          "allocatable", (json_int_t)alloc,
          "used", (json_int_t)gq_node_usage_get(&cl.cap.snap.nodes[i].used, res),
          "free", (json_int_t)gq_snapshot_available(&cl.cap.snap, i, res),
          "gpuqPods", (json_int_t)cl.gpuq_pods[i],
          "cordoned", n->unschedulable,
          "draining", strstr(status, "Draining") != NULL,
          "status", status));
    }
  }
  gq_cli_print(stdout, "GpuNodes", rows, cols, 9, o.json);
  json_decref(rows);
  gq_cli_cluster_release(&cl);
  gq_cli_close(&c);
  return 0;
}

/* Prints the why report of job (decoded j) as text. */
static void print_why(const json_t *job, const struct gq_gpujob *j,
                      const json_t *verdict)
{
  const json_t *st = gq_cli_jget(job, "status", NULL), *it;
  const char *phase = gq_cli_jstr(gq_cli_jget(st, "phase", NULL));
  size_t i;

  printf("GpuJob %s/%s: %s, %d x %d %s, team %s\n", j->meta.ns, j->meta.name,
         phase ? phase : "Pending (not yet seen by gpuq)", (int)j->replicas,
         (int)j->gpus_per_replica, j->gpu_resource, j->team);
  if (member(st, "reason")[0])
    printf("Reason:   %s: %s\n", member(st, "reason"), member(st, "message"));
  if (gq_cli_jget(st, "queuePosition", NULL))
    printf("Position: %lld in team %s\n",
           (long long)json_integer_value(gq_cli_jget(st, "queuePosition",
                                                     NULL)),
           j->team);
  if (member(st, "estimatedStartTime")[0])
    printf("ETA:      %s\n", member(st, "estimatedStartTime"));
  if (member(verdict, "quota")[0])
    printf("Quota:    %s\n", member(verdict, "quota"));
  printf("Nodes:    %lld of %zu fit one replica now\n",
         (long long)json_integer_value(gq_cli_jget(verdict, "fitNodes", NULL)),
         json_array_size(gq_cli_jget(verdict, "items", NULL)));
  json_array_foreach(gq_cli_jget(verdict, "items", NULL), i, it)
    printf("  %-28s %-13s %s\n", member(it, "node"),
           json_is_true(gq_cli_jget(it, "fits", NULL)) ? "fits"
                                                       : member(it, "reason"),
           member(it, "message"));
}

/* The GpuJob that arg names: a GpuJob's name, or pod/NAME, job/NAME
 * (batch/v1) or group/NAME for the stand-in gpuq queues such a workload
 * as (gq_wl_shadow_name; a pod of a group stands in its group's). Returns
 * 0 with the name in out, or 1 after saying why on stderr. */
static int stand_in_of(struct gq_cli_conn *c, const char *arg, char *out,
                       size_t len)
{
  const char *slash = strchr(arg, '/');
  char path[600];
  json_t *pod;
  const char *grp, *m;

  if (!slash) {
    snprintf(out, len, "%s", arg);
    return 0;
  }
  if (!strncmp(arg, "job/", 4) || !strncmp(arg, "jobs/", 5)) {
    gq_wl_shadow_name(GQ_WL_JOB, slash + 1, out, len);
    return 0;
  }
  if (!strncmp(arg, "group/", 6)) {
    gq_wl_shadow_name(GQ_WL_POD_GROUP, slash + 1, out, len);
    return 0;
  }
  if (strncmp(arg, "pod/", 4) && strncmp(arg, "pods/", 5)) {
    fprintf(stderr, "error: %s: expected a GpuJob name, pod/NAME, job/NAME "
            "or group/NAME\n", arg);
    return 1;
  }
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", c->ns,
           slash + 1);
  if (gq_cli_fetch(c, path, 0, &pod))
    return 1;
  grp = gq_cli_jstr(gq_cli_jget(pod, "metadata", "labels", GQ_LBL_POD_GROUP,
                                NULL));
  m = gq_cli_jstr(gq_cli_jget(pod, "metadata", "annotations", GQ_ANN_MANAGED,
                              NULL));
  if (!m || strcmp(m, "true")) {
    fprintf(stderr, "pod %s/%s is not queued by gpuq (no %s annotation: "
            "its namespace is not a team's, or it requests no GPUs)\n",
            c->ns, slash + 1, GQ_ANN_MANAGED);
    json_decref(pod);
    return 1;
  }
  gq_wl_shadow_name(grp ? GQ_WL_POD_GROUP : GQ_WL_POD, grp ? grp : slash + 1,
                    out, len);
  json_decref(pod);
  return 0;
}

int gq_cli_why(int argc, char **argv)
{
  struct gq_cli_opts o;
  struct gq_cli_conn c;
  struct gq_cli_cluster cl;
  struct gq_gpujob j;
  struct gq_teamquota q;
  json_t *job = NULL, *tq = NULL, *verdict, *nodes;
  char path[600], err[1024], name[GQ_WL_NAME_MAX + 300];
  int has_q = 0, rc = 1;

  if (gq_cli_parse(argc, argv, "why", GQ_CLI_NS, 1, &o))
    return 2;
  if (o.n_args != 1 || o.all_ns) {
    fprintf(stderr, "error: usage: kubectl gpuq why JOB|pod/NAME|job/NAME "
            "[-n NAMESPACE]\n");
    return 2;
  }
  if (gq_cli_open(&c, &o))
    return 1;
  if (stand_in_of(&c, o.args[0], name, sizeof(name)) != 0)
    goto out;
  snprintf(path, sizeof(path), JOBS_PATH "/namespaces/%s/gpujobs/%s", c.ns,
           name);
  if (gq_cli_fetch(&c, path, 0, &job))
    goto out;
  if (gq_gpujob_decode(job, &j, err, sizeof(err)) != 0) {
    printf("GpuJob %s/%s is invalid and will not run: %s\n", c.ns, o.args[0],
           err);
    rc = 0;
    goto out;
  }
  verdict = json_pack("{s:s}", "kind", "GpuJobWhy");
  snprintf(path, sizeof(path), JOBS_PATH "/teamquotas/%s", j.team);
  rc = gq_cli_get(&c, path, 0, &tq, err, sizeof(err));
  if (rc == GQ_ENOTFOUND)
    json_object_set_new(verdict, "quota", json_sprintf(
        "no TeamQuota %s: the job waits with UnknownTeam", j.team));
  else if (rc != 0)
    json_object_set_new(verdict, "quota", json_sprintf(
        "cannot read TeamQuota %s: %s", j.team, err));
  else if (gq_teamquota_decode(tq, &q, err, sizeof(err)) != 0)
    json_object_set_new(verdict, "quota", json_sprintf(
        "TeamQuota %s is invalid: %s", j.team, err));
  else if (!gq_teamquota_admits_namespace(&q, j.meta.ns)) {
    json_object_set_new(verdict, "quota", json_sprintf(
        "TeamQuota %s does not list namespace %s", j.team, j.meta.ns));
    gq_teamquota_release(&q);
  } else {
    has_q = 1;
  }
  rc = 1;
  if (load_cluster(&c, &cl) == 0) {
    nodes = json_array();
    json_object_set_new(verdict, "fitNodes", json_integer((json_int_t)
        gq_cli_why_nodes(&cl, &j, has_q ? &q : NULL, nodes)));
    json_object_set_new(verdict, "items", nodes);
    gq_cli_cluster_release(&cl);
    if (o.json) {
      json_object_set(verdict, "job", job);
      json_dumpf(verdict, stdout, JSON_INDENT(4) | JSON_PRESERVE_ORDER);
      fputc('\n', stdout);
    } else {
      print_why(job, &j, verdict);
    }
    rc = 0;
  }
  json_decref(verdict);
  if (has_q)
    gq_teamquota_release(&q);
  gq_gpujob_release(&j);
out:
  json_decref(tq);
  json_decref(job);
  gq_cli_close(&c);
  return rc;
}
