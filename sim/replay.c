/* sim/replay.c - trace replay and its report (see replay.h). */
#include "sim/replay_int.h"

#include "api/yaml.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "sim/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_TRACE_JOBS 1000000
#define SAMPLES 400 /* time-series points over a replay */

static const struct gq_lc lc = {"sim", "replay", NULL};

static struct gq_sim_replay *R(struct gq_sim *s)
{
  return s->engine ? s->engine->replay : NULL;
}

/* --- loading --- */

static int parse_checkpoint(struct gq_sim_replay *r, const char *spec,
                            char *err, size_t errlen)
{
  long long g, i, w;
  char extra;

  r->grace_s = 120;
  r->interval_s = 1800;
  r->write_s = 30;
  if (!spec)
    return 0;
  if (!strcmp(spec, "none")) {
    r->grace_s = -1;
    return 0;
  }
  if (sscanf(spec, "%lld,%lld,%lld%c", &g, &i, &w, &extra) != 3 || g < 1 ||
      i < 1 || w < 0) {
    snprintf(err, errlen, "--checkpoint: want GRACE,INTERVAL,WRITE seconds "
             "(e.g. 120,1800,30) or none, got '%s'", spec);
    return GQ_EINVAL;
  }
  r->grace_s = g;
  r->interval_s = i;
  r->write_s = w;
  return 0;
}

/* Reads one CSV row of the shared/traces schema into j. */
static int parse_row(char *line, struct job *j, const char *path, size_t ln,
                     char *err, size_t errlen)
{
  char *f[8], *p;
  int n = 0;

  for (p = line; n < 8; n++) { /* keeps empty fields, unlike strtok */
    f[n] = p;
    p = strchr(p, ',');
    if (!p) {
      n++;
      break;
    }
    *p++ = '\0';
  }
  if (n < 6) {
    snprintf(err, errlen, "%s:%zu: want job_id,submit_s,team,gpus,gpu_model,"
             "duration_s[,status], got %d fields", path, ln, n);
    return GQ_EINVAL;
  }
  snprintf(j->name, sizeof(j->name), "%s", f[0]);
  for (char *c = j->name; *c; c++)
    *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c == '_' ? '-' : *c);
  snprintf(j->team, sizeof(j->team), "%s", *f[2] ? f[2] : "default-team");
  snprintf(j->ns, sizeof(j->ns), "%s", j->team);
  j->submit_s = strtoll(f[1], NULL, 10);
  j->gpus = strtoll(f[3], NULL, 10);
  j->duration_s = strtoll(f[5], NULL, 10);
  if (j->gpus < 1 || j->gpus > 4096 || j->submit_s < 0 || j->duration_s < 0) {
    snprintf(err, errlen, "%s:%zu: gpus must be 1..4096, submit_s and "
             "duration_s non-negative, got gpus=%lld submit_s=%lld "
             "duration_s=%lld", path, ln, (long long)j->gpus,
             (long long)j->submit_s, (long long)j->duration_s);
    return GQ_EINVAL;
  }
  return 0;
}

static int load_trace(struct gq_sim_replay *r, const char *path, char *err,
                      size_t errlen)
{
  FILE *f = fopen(path, "r");
  char line[1024];
  size_t ln = 0, cap = 0;
  int rc = 0;

  if (!f) {
    snprintf(err, errlen, "--trace: cannot open '%s': %s", path,
             strerror(errno));
    return GQ_EIO;
  }
  while (rc == 0 && fgets(line, sizeof(line), f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (ln++ == 0 && !strncmp(line, "job_id", 6))
      continue; /* header */
    if (!*line)
      continue;
    if (r->n_jobs == cap) {
      cap = cap ? 2 * cap : 1024;
      if (cap > MAX_TRACE_JOBS) {
        snprintf(err, errlen, "%s: more than %d jobs", path, MAX_TRACE_JOBS);
        rc = GQ_ETOOBIG;
        break;
      }
      r->jobs = gq_xrealloc(r->jobs, cap * sizeof(*r->jobs));
    }
    memset(&r->jobs[r->n_jobs], 0, sizeof(r->jobs[0]));
    rc = parse_row(line, &r->jobs[r->n_jobs], path, ln, err, errlen);
    r->n_jobs += rc == 0;
  }
  fclose(f);
  return rc;
}

/* Nominal GPUs per team from its share of the trace's GPU-hours, largest
 * remainders first so the nominals add up to the cluster's GPUs. */
static void derive_quotas(struct gq_sim_replay *r)
{
  json_t *hours = json_object();
  double total = 0;
  const char *team;
  json_t *v;
  int64_t given = 0;

  for (size_t i = 0; i < r->n_jobs; i++) {
    double h = (double)r->jobs[i].gpus * (double)(r->jobs[i].duration_s + 1);

    total += h;
    json_object_set_new(hours, r->jobs[i].team,
                        json_real(json_real_value(json_object_get(
                                      hours, r->jobs[i].team)) + h));
  }
  json_object_foreach(hours, team, v) {
    int64_t n = (int64_t)floor(json_real_value(v) / total *
                               (double)r->total_gpus);

    json_object_set_new(r->teams, team, json_integer(n));
    given += n;
  }
  while (given < r->total_gpus) { /* hand out the remainder */
    const char *best = NULL;
    double frac = -1;

    json_object_foreach(hours, team, v) {
      double exact = json_real_value(v) / total * (double)r->total_gpus;
      double f = exact - (double)json_integer_value(json_object_get(r->teams,
                                                                    team));

      if (f > frac) {
        frac = f;
        best = team;
      }
    }
    json_object_set_new(r->teams, best,
                        json_integer(json_integer_value(json_object_get(
                                         r->teams, best)) + 1));
    given++;
  }
  json_decref(hours);
}

static int64_t cluster_gpus(struct gq_sim *s)
{
  json_t *nodes = gq_sim_list(gq_sim_kind_find(s, "", "v1", "nodes"), NULL);
  const json_t *n;
  int64_t total = 0;
  size_t i;

  json_array_foreach(nodes, i, n) {
    const char *g = json_string_value(json_object_get(
        json_object_get(json_object_get(n, "status"), "allocatable"),
        "nvidia.com/gpu"));

    total += g ? strtoll(g, NULL, 10) : 0;
  }
  json_decref(nodes);
  return total;
}

int gq__replay_create(struct gq_sim *s, const char *group, const char *version,
                  const char *plural, json_t *obj, char *err, size_t errlen)
{
  struct gq_sim_kind *k = gq_sim_kind_find(s, group, version, plural);

  return gq_sim_seed(s, k, obj, err, errlen) ? 0 : GQ_EINVAL;
}

void gq__replay_namespace(struct gq_sim *s, const char *name)
{
  struct gq_sim_kind *k = gq_sim_kind_find(s, "", "v1", "namespaces");
  char err[256];

  if (!gq_sim_get(k, NULL, name))
    gq_sim_seed(s, k, json_pack("{s:{s:s}}", "metadata", "name", name), err,
                sizeof(err));
}

static int create_quotas(struct gq_sim *s, struct gq_sim_replay *r, char *err,
                         size_t errlen)
{
  json_t *docs, *d;
  const char *team;
  json_t *v;
  size_t i;
  int rc;

  json_object_foreach(r->teams, team, v)
    gq__replay_namespace(s, team);
  if (r->o.quotas) {
    if ((rc = gq_yaml_load_file(r->o.quotas, &docs, err, errlen)) != 0)
      return rc;
    json_array_foreach(docs, i, d) {
      if ((rc = gq__replay_create(s, "gpuq.dev", "v1alpha1", "teamquotas",
                       json_deep_copy(d), err, errlen)) != 0)
        break;
    }
    json_decref(docs);
    return rc;
  }
  json_object_foreach(r->teams, team, v) {
    rc = gq__replay_create(s, "gpuq.dev", "v1alpha1", "teamquotas",
                json_pack("{s:s, s:s, s:{s:s}, s:{s:[s], s:s, s:[{s:s, "
                          "s:I}]}}",
                          "apiVersion", "gpuq.dev/v1alpha1", "kind",
                          "TeamQuota", "metadata", "name", team, "spec",
                          "namespaces", team, "cohort", "trace", "resources",
                          "flavor", "*", "nominal", json_integer_value(v)),
                err, errlen);
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* --- submitting --- */

static int64_t largest_divisor_le(int64_t n, int64_t max)
{
  for (int64_t d = max; d > 1; d--)
    if (n % d == 0)
      return d;
  return 1;
}

/* A number in [0, 1) from a job's name and a salt (gq_sim_hash()): the
 * same for the same name on every run. */
static double job_hash01(const char *name, uint64_t salt)
{
  return (double)(gq_sim_hash(name, salt) >> 11) / 9007199254740992.0;
}

/* A trace job's GPU utilization (issue 22): notebook-like for the share
 * --idle-share of the jobs, chosen by name; else a constant in
 * [0.60, 0.98], also by name. Into buf. */
static void job_util(const struct gq_sim_replay *r, const struct job *j,
                     char *buf, size_t len)
{
  if (job_hash01(j->name, 1) < r->o.idle_share)
    snprintf(buf, len, "%s", GQ_SIM_REPLAY_NOTEBOOK);
  else
    snprintf(buf, len, "%.2f", 0.60 + 0.38 * job_hash01(j->name, 2));
}

static json_t *job_object(const struct gq_sim_replay *r, const struct job *j)
{
  int64_t per = j->gpus <= 8 ? j->gpus : largest_divisor_le(j->gpus, 8);
  int64_t run = j->duration_s > 0 ? j->duration_s : 1;
  char buf[3][32], util[64];
  json_t *ann, *spec;

  snprintf(buf[0], sizeof(buf[0]), "%lld", (long long)run);
  job_util(r, j, util, sizeof(util));
  ann = json_pack("{s:s, s:s}", "sim.gpuq.dev/run-seconds", buf[0],
                  GQ_SIM_ANN_GPU_UTIL, util);
  spec = json_pack(
      "{s:s, s:I, s:I, s:I, s:{s:o, s:{s:s, s:[{s:s, s:s, s:{s:{s:s, "
      "s:s}}}]}}}",
      "team", j->team, "replicas", (json_int_t)(j->gpus / per),
      "gpusPerReplica", (json_int_t)per, "expectedDurationSeconds",
      (json_int_t)run, "template", "metadata", json_pack("{s:o}", "annotations",
                                                         ann),
      "spec", "restartPolicy", "Never", "containers", "name", "trainer",
      "image", "gpuq-sim/trainer", "resources", "requests", "cpu", "1",
      "memory", "4Gi");
  if (r->grace_s > 0) {
    snprintf(buf[1], sizeof(buf[1]), "%lld", (long long)r->write_s);
    snprintf(buf[2], sizeof(buf[2]), "%lld", (long long)r->interval_s);
    json_object_set_new(ann, "sim.gpuq.dev/checkpoint-seconds",
                        json_string(buf[1]));
    json_object_set_new(ann, "sim.gpuq.dev/checkpoint-interval-seconds",
                        json_string(buf[2]));
    json_object_set_new(spec, "checkpoint",
                        json_pack("{s:I, s:I}", "gracePeriodSeconds",
                                  (json_int_t)r->grace_s, "intervalSeconds",
                                  (json_int_t)r->interval_s));
  }
  return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion",
                   "gpuq.dev/v1alpha1", "kind", "GpuJob", "metadata", "name",
                   j->name, "namespace", j->team, "spec", spec);
}

void gq__replay_submit_due(struct gq_sim *s, struct gq_sim_replay *r)
{
  int64_t now = gq_clock_now_ms();
  char err[1024], key[200];

  while (r->next < r->n_jobs &&
         r->t0_vms + r->jobs[r->next].submit_s * 1000 <= now) {
    struct job *j = &r->jobs[r->next];

    snprintf(key, sizeof(key), "%s/%s", j->ns, j->name);
    json_object_set_new(r->index, key, json_integer((json_int_t)r->next));
    if (gq__replay_create(s, "gpuq.dev", "v1alpha1", "gpujobs",
               j->obj ? json_deep_copy(j->obj) : job_object(r, j), err,
               sizeof(err)) != 0) {
      GQ_LOG(GQ_ERROR, &lc, "cannot submit job '%s': %s", key, err);
      free(j->rejected);
      j->rejected = gq_xstrdup(err);
      j->ended = j->failed = 1;
      r->ended++;
    }
    r->next++;
    r->submitted++;
  }
  if (r->next < r->n_jobs)
    gq_sim_tev_add(s->engine, r->t0_vms + r->jobs[r->next].submit_s * 1000,
                   GQ_TEV_SUBMIT, NULL, NULL, 0);
}

/* --- the timeline of node events --- */

/* Schedules a list of timeline events (path names them in messages). */
int gq__replay_schedule_events(struct gq_sim *s, struct gq_sim_replay *r,
                           const json_t *events, const char *path,
                           int check_only, char *err, size_t errlen)
{
  const json_t *ev;
  const char *act;
  size_t i;

  if (!json_is_array(events)) {
    snprintf(err, errlen, "%s: events: must be a list of {at, node, action}",
             path);
    return GQ_EINVAL;
  }
  json_decref(r->timeline);
  r->timeline = json_incref((json_t *)events);
  json_array_foreach((json_t *)events, i, ev) {
    if (!json_is_integer(json_object_get(ev, "at")) ||
        (!json_is_string(json_object_get(ev, "run")) &&
         (!json_is_string(json_object_get(ev, "node")) ||
          !json_is_string(json_object_get(ev, "action"))))) {
      snprintf(err, errlen, "%s: events[%zu]: needs at (virtual seconds) "
               "and node and action, or run", path, i);
      return GQ_EINVAL;
    }
    act = json_string_value(json_object_get(ev, "action"));
    if (act && !strcmp(act, "xid") &&
        (!json_is_integer(json_object_get(ev, "gpu")) ||
         !json_is_integer(json_object_get(ev, "xid")))) {
      snprintf(err, errlen, "%s: events[%zu]: action xid needs gpu (an "
               "index) and xid (the error code), and may have for (seconds)",
               path, i);
      return GQ_EINVAL;
    }
    if (!check_only)
      gq_sim_tev_add(s->engine,
                     r->t0_vms +
                         json_integer_value(json_object_get(ev, "at")) * 1000,
                     GQ_TEV_TIMELINE, NULL, NULL, (int64_t)i);
  }
  return 0;
}

static int load_timeline(struct gq_sim *s, struct gq_sim_replay *r,
                         const char *path, char *err, size_t errlen)
{
  json_t *docs;
  int rc;

  if ((rc = gq_yaml_load_file(path, &docs, err, errlen)) != 0)
    return rc;
  rc = gq__replay_schedule_events(s, r, json_object_get(json_array_get(docs, 0),
                                             "events"),
                       path, 0, err, errlen);
  json_decref(docs);
  return rc;
}

static void on_hook_exit(uv_process_t *p, int64_t status, int sig)
{
  struct gq_sim_replay *r = R((struct gq_sim *)p->data);

  GQ_LOG(status || sig ? GQ_WARN : GQ_INFO, &lc,
         "hook exited with status %lld (signal %d)", (long long)status, sig);
  if (r && (status || sig)) /* a hook may check something: it failed */
    r->hook_failures++;
  uv_close((uv_handle_t *)p, (uv_close_cb)free);
}

/* Runs a scenario hook: the --hook NAME=COMMAND given for name, through
 * /bin/sh -c, without waiting (uv_spawn keeps the loop free). */
static void run_hook(struct gq_sim *s, const char *name)
{
  struct gq_sim_replay *r = R(s);
  size_t len = strlen(name);

  for (size_t i = 0; i < r->o.n_hooks; i++) {
    const char *h = r->o.hooks[i];

    if (!strncmp(h, name, len) && h[len] == '=') {
      char *args[] = {"/bin/sh", "-c", (char *)h + len + 1, NULL};
      uv_process_options_t po = {.exit_cb = on_hook_exit, .file = args[0],
                                 .args = args};
      uv_process_t *p = gq_xcalloc(1, sizeof(*p));
      int rc;

      p->data = s;
      rc = uv_spawn(s->loop, p, &po);

      GQ_LOG(GQ_INFO, &lc, "running hook '%s'", name);
      if (rc != 0) {
        GQ_LOG(GQ_ERROR, &lc, "cannot run hook '%s': %s", name,
               uv_strerror(rc));
        free(p);
      }
      return;
    }
  }
  GQ_LOG(GQ_ERROR, &lc, "no --hook %s=COMMAND given; event skipped", name);
}

static void run_timeline(struct gq_sim *s, const struct gq_tev *t)
{
  const json_t *ev = json_array_get(R(s)->timeline, (size_t)t->arg);
  const char *hook = json_string_value(json_object_get(ev, "run"));

  if (hook) {
    run_hook(s, hook);
    return;
  }
  const char *node = json_string_value(json_object_get(ev, "node"));
  const char *action = json_string_value(json_object_get(ev, "action"));
  const json_t *dur = json_object_get(ev, "for");
  int xid = !strcmp(action, "xid"); /* its 'for' is the error's own */
  char msg[512];

  if (xid) {
    GQ_LOG(GQ_INFO, &lc, "node event: xid on %s", node);
    if (gq_sim_node_event(s, node, action, ev, msg, sizeof(msg)) != 0)
      GQ_LOG(GQ_WARN, &lc, "node event failed: %s", msg);
    return;
  }
  if (t->type == GQ_TEV_RESTORE) {
    action = !strcmp(action, "device-plugin-loss") ? "device-plugin-restore"
             : !strcmp(action, "notready")         ? "ready"
                                                   : "uncordon";
  } else if (json_is_integer(dur)) {
    gq_sim_tev_add(s->engine, gq_clock_now_ms() + json_integer_value(dur) * 1000,
                   GQ_TEV_RESTORE, NULL, NULL, t->arg);
  }
  GQ_LOG(GQ_INFO, &lc, "node event: %s on %s", action, node);
  if (gq_sim_node_event(s, node, action, json_object_get(ev, "taint"), msg,
                        sizeof(msg)) != 0)
    GQ_LOG(GQ_WARN, &lc, "node event failed: %s", msg);
}

/* --- time series --- */

static void push(json_t *obj, const char *key, json_t *v)
{
  json_t *arr = json_object_get(obj, key);

  if (!arr) {
    arr = json_array();
    json_object_set_new(obj, key, arr);
  }
  json_array_append_new(arr, v);
}

/* Counts the submitted jobs that have not ended: running (started at
 * least once) and waiting, the latter per team in queued (when not NULL;
 * an object team -> integer, every team present). */
static void count_jobs(const struct gq_sim_replay *r, json_t *queued,
                       int64_t *running, int64_t *waiting)
{
  const char *team;
  json_t *v;

  *running = *waiting = 0;
  if (queued)
    json_object_foreach(r->teams, team, v)
      json_object_set_new(queued, team, json_integer(0));
  for (size_t i = 0; i < r->next; i++) {
    const struct job *j = &r->jobs[i];

    if (j->ended)
      continue;
    if (j->start_vms) {
      (*running)++;
      continue;
    }
    (*waiting)++;
    if (queued)
      json_object_set_new(queued, j->team,
                          json_integer(json_integer_value(json_object_get(
                                           queued, j->team)) + 1));
  }
}

/* The mean allocated and used GPUs since the previous sample, from the
 * report's exact GPU-hours (so the area under each curve is the report's
 * figure): pushed onto the series. */
static void sample_usage(struct gq_sim_replay *r, const json_t *rep)
{
  int64_t now = gq_clock_now_ms();
  double alloc = json_real_value(json_object_get(rep, "allocated_gpu_hours"));
  double used = json_real_value(json_object_get(rep, "used_gpu_hours"));
  double dt_h = (double)(now - r->last_sample_vms) / 3.6e6;

  push(r->series, "allocated_gpus",
       json_real(dt_h > 0 ? (alloc - r->last_alloc_h) / dt_h : 0));
  push(r->series, "used_gpus",
       json_real(dt_h > 0 ? (used - r->last_used_h) / dt_h : 0));
  r->last_alloc_h = alloc;
  r->last_used_h = used;
  r->last_sample_vms = now;
}

static void sample(struct gq_sim *s, struct gq_sim_replay *r)
{
  json_t *rep = gq_sim_report_json(s), *queued = json_object();
  json_t *qs = json_object_get(r->series, "queued");
  int64_t running, waiting;
  const char *team;
  json_t *v;

  count_jobs(r, queued, &running, &waiting);
  push(r->series, "t", json_integer((gq_clock_now_ms() - r->t0_vms) / 1000));
  push(r->series, "busy_gpus",
       json_integer(json_integer_value(json_object_get(rep, "busy_gpus"))));
  push(r->series, "running", json_integer(running));
  json_object_foreach(queued, team, v)
    push(qs, team, json_incref(v));
  sample_usage(r, rep);
  json_decref(queued);
  json_decref(rep);
  if (!r->finished)
    gq_sim_tev_add(s->engine, gq_clock_now_ms() + r->sample_vms,
                   GQ_TEV_SAMPLE, NULL, NULL, 0);
}

json_t *gq_sim_replay_live(struct gq_sim *s)
{
  struct gq_sim_replay *r = R(s);
  int64_t running, waiting;

  if (!r || !r->n_jobs)
    return NULL;
  count_jobs(r, NULL, &running, &waiting);
  return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:b}", "virtual_s",
                   (json_int_t)((gq_clock_now_ms() - r->t0_vms) / 1000),
                   "jobs", (json_int_t)r->n_jobs, "submitted",
                   (json_int_t)r->submitted, "queued", (json_int_t)waiting,
                   "running", (json_int_t)running, "ended",
                   (json_int_t)r->ended, "finished", r->finished);
}

/* --- the report --- */

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;

  return x < y ? -1 : x > y;
}

/* p in [0, 100] of a sorted array (nearest rank). */
static double pct(const double *v, size_t n, double p)
{
  size_t i;

  if (n == 0)
    return 0;
  i = (size_t)ceil(p / 100.0 * (double)n);
  return v[i ? i - 1 : 0];
}

static double mean(const double *v, size_t n)
{
  double sum = 0;

  for (size_t i = 0; i < n; i++)
    sum += v[i];
  return n ? sum / (double)n : 0;
}

/* Queue time (submit to first start), JCT (submit to end: the GpuJob's
 * status saying Succeeded or Failed) and end lag (its last pod's own end
 * to that status; only jobs whose pods ended by themselves) figures of the
 * jobs of team, or of every job when team is NULL, in seconds. */
static json_t *team_stats(struct gq_sim_replay *r, const char *team,
                          const json_t *gpu_s)
{
  double *q = gq_xcalloc(r->n_jobs + 1, sizeof(double));
  double *c = gq_xcalloc(r->n_jobs + 1, sizeof(double));
  double *lag = gq_xcalloc(r->n_jobs + 1, sizeof(double));
  size_t n = 0, jobs = 0, done = 0, n_lag = 0;
  json_t *out;

  for (size_t i = 0; i < r->n_jobs; i++) {
    struct job *j = &r->jobs[i];

    if (team && strcmp(j->team, team))
      continue;
    jobs++;
    done += j->ended && !j->failed;
    if (!j->start_vms || !j->end_vms)
      continue;
    if (j->done_vms && j->done_vms <= j->end_vms)
      lag[n_lag++] = (double)(j->end_vms - j->done_vms) / 1000.0;
    q[n] = (double)(j->start_vms - r->t0_vms) / 1000.0 - (double)j->submit_s;
    c[n++] = (double)(j->end_vms - r->t0_vms) / 1000.0 - (double)j->submit_s;
  }
  qsort(q, n, sizeof(double), cmp_double);
  qsort(c, n, sizeof(double), cmp_double);
  qsort(lag, n_lag, sizeof(double), cmp_double);
  out = json_pack("{s:I, s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "jobs",
                  (json_int_t)jobs, "completed", (json_int_t)done,
                  "queue_mean_s", mean(q, n), "queue_p50_s", pct(q, n, 50),
                  "queue_p95_s", pct(q, n, 95), "queue_p99_s", pct(q, n, 99),
                  "jct_mean_s", mean(c, n), "jct_p50_s", pct(c, n, 50),
                  "jct_p95_s", pct(c, n, 95), "jct_p99_s", pct(c, n, 99));
  json_object_set_new(out, "end_lag_mean_s", json_real(mean(lag, n_lag)));
  json_object_set_new(out, "end_lag_p99_s", json_real(pct(lag, n_lag, 99)));
  if (team) {
    json_object_set_new(out, "nominal",
                        json_integer(json_integer_value(
                            json_object_get(r->teams, team))));
    json_object_set_new(out, "gpu_seconds",
                        json_real(json_real_value(json_object_get(gpu_s, team))));
  }
  free(q);
  free(c);
  free(lag);
  return out;
}

/* Jain's fairness index over the teams' normalized shares: x = (share of
 * GPU-seconds received) / (share of nominal quota), J = (sum x)^2 /
 * (n sum x^2) (Jain, Chiu, Hawe, DEC-TR-301, 1984). 1 is perfectly fair. */
static double jain(const struct gq_sim_replay *r, const json_t *gpu_s)
{
  double total_used = 0, total_nom = 0, sx = 0, sxx = 0;
  const char *team;
  json_t *v;
  int n = 0;

  json_object_foreach((json_t *)r->teams, team, v) {
    total_nom += (double)json_integer_value(v);
    total_used += json_real_value(json_object_get(gpu_s, team));
  }
  json_object_foreach((json_t *)r->teams, team, v) {
    double nom = (double)json_integer_value(v), x;

    if (nom <= 0 || total_used <= 0)
      continue;
    x = (json_real_value(json_object_get(gpu_s, team)) / total_used) /
        (nom / total_nom);
    sx += x;
    sxx += x * x;
    n++;
  }
  return n && sxx > 0 ? sx * sx / ((double)n * sxx) : 1.0;
}

/* Each team's queue and JCT figures (team_stats()) merged into its GPU
 * usage figures of the report's "teams" (zeros for a team whose pods never
 * ran); teams with usage but no quota in the replay are kept. */
static json_t *teams_json(struct gq_sim_replay *r, const json_t *rep,
                          const json_t *gpu_s)
{
  json_t *teams = json_deep_copy(json_object_get(rep, "teams")), *v, *t;
  const struct gq_sim_usage zero = {0, 0, 0};
  const char *team;

  json_object_foreach(r->teams, team, v) {
    if (!(t = json_object_get(teams, team))) {
      t = gq_sim_report_usage_json(&zero);
      json_object_set_new(teams, team, t);
    }
    v = team_stats(r, team, gpu_s);
    json_object_update(t, v);
    json_decref(v);
  }
  return teams;
}

static json_t *build_report(struct gq_sim *s, struct gq_sim_replay *r,
                            double real_s)
{
  json_t *rep = gq_sim_report_json(s), *teams;
  const json_t *gpu_s = json_object_get(rep, "team_gpu_seconds");
  double span = (double)(gq_clock_now_ms() - r->t0_vms) / 1000.0;
  size_t completed = 0;

  for (size_t i = 0; i < r->n_jobs; i++)
    completed += r->jobs[i].ended && !r->jobs[i].failed;
  teams = teams_json(r, rep, gpu_s);
  json_object_set_new(rep, "jobs_submitted", json_integer((json_int_t)r->submitted));
  json_object_set_new(rep, "jobs_completed", json_integer((json_int_t)completed));
  json_object_set_new(rep, "jobs_failed",
                      json_integer((json_int_t)(r->ended - completed)));
  json_object_set_new(rep, "teams", teams);
  json_object_set_new(rep, "all_jobs", team_stats(r, NULL, gpu_s));
  json_object_set_new(rep, "gpus", json_integer(r->total_gpus));
  json_object_set_new(rep, "virtual_seconds", json_real(span));
  json_object_set_new(rep, "gpu_utilization",
                      json_real(span > 0 && r->total_gpus
                                    ? json_real_value(json_object_get(
                                          rep, "busy_gpu_seconds")) /
                                          (span * (double)r->total_gpus)
                                    : 0));
  json_object_set_new(rep, "jain_fairness", json_real(jain(r, gpu_s)));
  json_object_set_new(rep, "replay_speed",
                      json_real(real_s > 0 ? span / real_s : 0));
  json_object_set(rep, "timeseries", r->series);
  return rep;
}

static void print_summary(const json_t *rep)
{
  const json_t *teams = json_object_get(rep, "teams"), *t;
  const char *name;

  printf("\n== replay summary\n");
  printf("jobs submitted %lld, completed %lld, failed %lld\n",
         json_integer_value(json_object_get(rep, "jobs_submitted")),
         json_integer_value(json_object_get(rep, "jobs_completed")),
         json_integer_value(json_object_get(rep, "jobs_failed")));
  printf("%-10s %6s %9s %9s %9s %9s %9s\n", "team", "jobs", "queue p50",
         "p95", "p99", "JCT p50", "p95");
  json_object_foreach((json_t *)teams, name, t)
    printf("%-10s %6lld %8.0fs %8.0fs %8.0fs %8.0fs %8.0fs\n", name,
           json_integer_value(json_object_get(t, "jobs")),
           json_real_value(json_object_get(t, "queue_p50_s")),
           json_real_value(json_object_get(t, "queue_p95_s")),
           json_real_value(json_object_get(t, "queue_p99_s")),
           json_real_value(json_object_get(t, "jct_p50_s")),
           json_real_value(json_object_get(t, "jct_p95_s")));
  printf("GPU utilization %.1f%%, GPU-seconds lost to preemption %.0f\n",
         100 * json_real_value(json_object_get(rep, "gpu_utilization")),
         json_real_value(json_object_get(rep, "gpu_seconds_lost")));
  printf("GPU-hours allocated %.1f, used %.1f, idle %.1f (under %g%%)\n",
         json_real_value(json_object_get(rep, "allocated_gpu_hours")),
         json_real_value(json_object_get(rep, "used_gpu_hours")),
         json_real_value(json_object_get(rep, "idle_gpu_hours")),
         json_real_value(json_object_get(rep, "idle_threshold_pct")));
  printf("preemptions %lld, checkpoint resumes %lld, Jain's fairness %.3f\n",
         json_integer_value(json_object_get(rep, "preemptions")),
         json_integer_value(json_object_get(rep, "checkpoint_resumes")),
         json_real_value(json_object_get(rep, "jain_fairness")));
  printf("invariant violations %lld, placement misses %lld, replay speed "
         "%.0fx\n",
         json_integer_value(json_object_get(rep, "invariant_violations")),
         json_integer_value(json_object_get(rep, "placement_misses")),
         json_real_value(json_object_get(rep, "replay_speed")));
  fflush(stdout);
}

/* --- data files for plots (--series DIR) --- */

static int cmp_name(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The teams' names, sorted (borrowed from r->teams); *n gets the count.
 * Free the array. */
static const char **team_names(const struct gq_sim_replay *r, size_t *n)
{
  const char **names = gq_xcalloc(json_object_size(r->teams) + 1,
                                  sizeof(*names));
  const char *team;
  json_t *v;

  *n = 0;
  json_object_foreach((json_t *)r->teams, team, v)
    names[(*n)++] = team;
  qsort(names, *n, sizeof(*names), cmp_name);
  return names;
}

static FILE *series_file(const char *dir, const char *name, char *path,
                         size_t len)
{
  FILE *f;

  snprintf(path, len, "%s/%s", dir, name);
  if (!(f = fopen(path, "w")))
    GQ_LOG(GQ_ERROR, &lc, "cannot write '%s': %s", path, strerror(errno));
  return f;
}

static void close_series(FILE *f, const char *path)
{
  if (fclose(f) != 0)
    GQ_LOG(GQ_ERROR, &lc, "cannot write '%s': %s", path, strerror(errno));
}

/* utilization.dat and queued.dat: one row per sample (virtual hours; busy
 * GPUs, utilization %, running jobs; waiting jobs per team), with a header
 * row gnuplot reads as column titles. */
static void write_timeseries(const struct gq_sim_replay *r, const char *dir,
                             const char **names, size_t n_teams)
{
  const json_t *t = json_object_get(r->series, "t");
  const json_t *busy = json_object_get(r->series, "busy_gpus");
  const json_t *run = json_object_get(r->series, "running");
  const json_t *qs = json_object_get(r->series, "queued");
  char pu[1024], pq[1024];
  FILE *fu = series_file(dir, "utilization.dat", pu, sizeof(pu));
  FILE *fq = series_file(dir, "queued.dat", pq, sizeof(pq));

  if (fu && fq) {
    fprintf(fu, "hours busy_gpus utilization_pct running\n");
    fprintf(fq, "hours");
    for (size_t k = 0; k < n_teams; k++)
      fprintf(fq, " %s", names[k]);
    fprintf(fq, "\n");
    for (size_t i = 0; i < json_array_size(t); i++) {
      double h = (double)json_integer_value(json_array_get(t, i)) / 3600.0;
      json_int_t b = json_integer_value(json_array_get(busy, i));

      fprintf(fu, "%.4f %lld %.2f %lld\n", h, (long long)b,
              r->total_gpus ? 100.0 * (double)b / (double)r->total_gpus : 0,
              (long long)json_integer_value(json_array_get(run, i)));
      fprintf(fq, "%.4f", h);
      for (size_t k = 0; k < n_teams; k++)
        fprintf(fq, " %lld", (long long)json_integer_value(json_array_get(
                                 json_object_get(qs, names[k]), i)));
      fprintf(fq, "\n");
    }
  }
  if (fu)
    close_series(fu, pu);
  if (fq)
    close_series(fq, pq);
}

/* queue_times.dat: for each team (one gnuplot data block each, separated
 * by two blank lines, after a comment naming the team, in the sorted
 * order of the first row of queued.dat), its jobs' queue times in
 * seconds (submit to first start; at least 1 for a log axis), sorted, with
 * the fraction of the team's started jobs at or below each: a CDF. */
static void write_queue_times(const struct gq_sim_replay *r, const char *dir,
                              const char **names, size_t n_teams)
{
  double *q = gq_xcalloc(r->n_jobs + 1, sizeof(double));
  char path[1024];
  FILE *f = series_file(dir, "queue_times.dat", path, sizeof(path));

  for (size_t k = 0; f && k < n_teams; k++) {
    size_t n = 0;

    for (size_t i = 0; i < r->n_jobs; i++) {
      const struct job *j = &r->jobs[i];
      double w;

      if (strcmp(j->team, names[k]) || !j->start_vms)
        continue;
      w = (double)(j->start_vms - r->t0_vms) / 1000.0 - (double)j->submit_s;
      q[n++] = w < 1 ? 1 : w;
    }
    qsort(q, n, sizeof(double), cmp_double);
    fprintf(f, "%s# %s: queue_s fraction\n", k ? "\n\n" : "", names[k]);
    for (size_t i = 0; i < n; i++)
      fprintf(f, "%.0f %.4f\n", q[i], (double)(i + 1) / (double)n);
  }
  if (f)
    close_series(f, path);
  free(q);
}

/* usage.dat: one row per sample: virtual hours, then the mean GPUs
 * allocated to running pods and the mean GPUs they used (utilization x
 * GPUs) since the previous sample (sample_usage()). */
static void write_usage(const struct gq_sim_replay *r, const char *dir)
{
  const json_t *t = json_object_get(r->series, "t");
  const json_t *alloc = json_object_get(r->series, "allocated_gpus");
  const json_t *used = json_object_get(r->series, "used_gpus");
  char path[1024];
  FILE *f = series_file(dir, "usage.dat", path, sizeof(path));

  if (!f)
    return;
  fprintf(f, "hours allocated_gpus used_gpus\n");
  for (size_t i = 0; i < json_array_size(t); i++)
    fprintf(f, "%.4f %.3f %.3f\n",
            (double)json_integer_value(json_array_get(t, i)) / 3600.0,
            json_real_value(json_array_get(alloc, i)),
            json_real_value(json_array_get(used, i)));
  close_series(f, path);
}

/* Seconds since the trace's time 0 of virtual time vms, or "" for 0 (it
 * did not happen), into buf. */
static const char *csv_time(const struct gq_sim_replay *r, int64_t vms,
                            char *buf, size_t len)
{
  if (vms)
    snprintf(buf, len, "%.3f", (double)(vms - r->t0_vms) / 1000.0);
  else
    *buf = '\0';
  return buf;
}

/* jobs.csv: one row per trace job, in trace order: its name, team, GPUs,
 * submit time and duration (the trace's), then when its first pod was
 * created, it first started, its last pod ended by itself and its GpuJob
 * said Succeeded or Failed (seconds since the trace's time 0, empty if it
 * did not happen). pod_s - submit_s is gpuq's decision, queueing
 * included; start_s - pod_s the sim's binding and start; end_s - done_s
 * the end lag. */
static void write_jobs(const struct gq_sim_replay *r, const char *dir)
{
  char path[1024], t[4][32];
  FILE *f = series_file(dir, "jobs.csv", path, sizeof(path));

  if (!f)
    return;
  fprintf(f, "job,team,gpus,submit_s,duration_s,pod_s,start_s,done_s,"
             "end_s\n");
  for (size_t i = 0; i < r->n_jobs; i++) {
    const struct job *j = &r->jobs[i];

    fprintf(f, "%s,%s,%lld,%lld,%lld,%s,%s,%s,%s\n", j->name, j->team,
            (long long)j->gpus, (long long)j->submit_s,
            (long long)j->duration_s,
            csv_time(r, j->pod_vms, t[0], sizeof(t[0])),
            csv_time(r, j->start_vms, t[1], sizeof(t[1])),
            csv_time(r, j->done_vms, t[2], sizeof(t[2])),
            csv_time(r, j->end_vms, t[3], sizeof(t[3])));
  }
  close_series(f, path);
}

/* Writes the replay's plot data into dir (created if missing). */
static void write_series(const struct gq_sim_replay *r, const char *dir)
{
  size_t n_teams;
  const char **names;

  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    GQ_LOG(GQ_ERROR, &lc, "cannot create '%s': %s", dir, strerror(errno));
    return;
  }
  names = team_names(r, &n_teams);
  write_timeseries(r, dir, names, n_teams);
  write_queue_times(r, dir, names, n_teams);
  write_usage(r, dir);
  write_jobs(r, dir);
  free(names);
}

static int64_t replay_start_real_ms;

void gq__replay_finish(struct gq_sim *s, struct gq_sim_replay *r,
                       const char *why)
{
  json_t *rep;
  int failed = 0;

  if (r->finished)
    return;
  r->finished = 1;
  if (why)
    GQ_LOG(GQ_INFO, &lc, "run ends: %s", why);
  sample(s, r);
  rep = build_report(s, r,
                     (double)(gq_clock_mono_ms() - replay_start_real_ms) /
                         1000.0);
  if (r->o.n_hooks)
    json_object_set_new(rep, "hook_failures",
                        json_integer((json_int_t)r->hook_failures));
  if (r->o.report && json_dump_file(rep, r->o.report, JSON_INDENT(1)) != 0)
    GQ_LOG(GQ_ERROR, &lc, "cannot write report '%s': %s", r->o.report,
           strerror(errno));
  if (r->o.series)
    write_series(r, r->o.series);
  print_summary(rep);
  if (r->scenario)
    failed = gq__scenario_check(s, r, rep);
  s->exit_code = failed ? 1
                 : json_integer_value(json_object_get(rep,
                                                      "invariant_violations"))
                     ? 2
                     : 0;
  json_decref(rep);
  if (s->finish_cb)
    s->finish_cb(s);
}

/* --- hooks --- */

static struct job *job_of(struct gq_sim_replay *r, const char *ns,
                          const char *name)
{
  char key[300];
  const json_t *v;

  snprintf(key, sizeof(key), "%s/%s", ns, name);
  v = json_object_get(r->index, key);
  return v ? &r->jobs[json_integer_value(v)] : NULL;
}

void gq_sim_replay_pod_created(struct gq_sim *s, const json_t *pod)
{
  struct gq_sim_replay *r = R(s);
  const char *job = gq_meta_obj_label(pod, GQ_LBL_JOB);
  struct job *j = r && job ? job_of(r, gq_meta_str(pod, "namespace"), job)
                           : NULL;

  if (j && !j->pod_vms)
    j->pod_vms = gq_clock_now_ms();
}

void gq_sim_replay_job_started(struct gq_sim *s, const struct gq_sim_pod *p)
{
  struct gq_sim_replay *r = R(s);
  struct job *j = r ? job_of(r, p->ns, p->job) : NULL;

  if (j && !j->start_vms)
    j->start_vms = gq_clock_now_ms();
}

void gq_sim_replay_pod_done(struct gq_sim *s, const struct gq_sim_pod *p)
{
  struct gq_sim_replay *r = R(s);
  struct job *j = r ? job_of(r, p->ns, p->job) : NULL;

  if (j && !j->ended)
    j->done_vms = gq_clock_now_ms();
}

void gq_sim_replay_job_phase(struct gq_sim *s, const json_t *job, int deleted)
{
  struct gq_sim_replay *r = R(s);
  const json_t *meta = json_object_get(job, "metadata");
  const char *phase = json_string_value(
      json_object_get(json_object_get(job, "status"), "phase"));
  const char *end_when;
  struct job *j;
  char msg[400];

  if (!r || r->finished)
    return;
  j = job_of(r, json_string_value(json_object_get(meta, "namespace")),
             json_string_value(json_object_get(meta, "name")));
  if (!j || j->ended)
    return;
  if (deleted && !r->scenario) { /* a scenario's deletes are its users' */
    snprintf(msg, sizeof(msg), "GpuJob %s/%s vanished before it ended",
             j->team, j->name);
    gq_sim_report_violation(s, "INV-4", msg);
  }
  if (!deleted && (!phase || (strcmp(phase, "Succeeded") &&
                              strcmp(phase, "Failed"))))
    return;
  j->ended = 1;
  j->failed = deleted || !strcmp(phase, "Failed");
  j->end_vms = gq_clock_now_ms();
  end_when = json_string_value(json_object_get(r->scenario, "endWhen"));
  if (++r->ended == r->n_jobs && r->next == r->n_jobs &&
      (!end_when || strcmp(end_when, "timeout") != 0))
    gq__replay_finish(s, r, "every job has ended");
}

void gq_sim_replay_tev(struct gq_sim *s, const struct gq_tev *t)
{
  struct gq_sim_replay *r = R(s);

  if (r && (t->type == GQ_TEV_TIMELINE || t->type == GQ_TEV_RESTORE))
    run_timeline(s, t);
  else if (r && t->type == GQ_TEV_SUBMIT)
    gq__replay_submit_due(s, r);
  else if (r && t->type == GQ_TEV_SAMPLE && !r->finished)
    sample(s, r);
  else if (r && t->type == GQ_TEV_EXPECT && !r->finished)
    gq__scenario_expect_tev(s, r, t->arg);
  else if (r && t->type == GQ_TEV_DEADLINE)
    gq__replay_finish(s, r, "the scenario's timeout");
}

int gq_sim_replay_start(struct gq_sim *s, const struct gq_sim_replay_opts *o,
                        char *err, size_t errlen)
{
  struct gq_sim_replay *r = gq_xcalloc(1, sizeof(*r));
  int rc;

  r->o = *o;
  r->index = json_object();
  r->teams = json_object();
  r->rejected = json_object();
  r->series = json_pack("{s:[], s:[], s:[], s:{}, s:[], s:[]}", "t",
                        "busy_gpus", "running", "queued", "allocated_gpus",
                        "used_gpus");
  r->t0_vms = r->last_sample_vms = gq_clock_now_ms();
  s->engine->replay = r;
  replay_start_real_ms = gq_clock_mono_ms();
  if ((rc = parse_checkpoint(r, o->checkpoint, err, errlen)) != 0)
    return rc;
  if (o->events && (rc = load_timeline(s, r, o->events, err, errlen)) != 0)
    return rc;
  if (o->scenario)
    return gq__scenario_load(s, r, o->scenario, err, errlen);
  if (!o->trace)
    return 0;
  if ((rc = load_trace(r, o->trace, err, errlen)) != 0)
    return rc;
  r->total_gpus = cluster_gpus(s);
  derive_quotas(r);
  if ((rc = create_quotas(s, r, err, errlen)) != 0)
    return rc;
  if (r->n_jobs) {
    int64_t span = r->jobs[r->n_jobs - 1].submit_s + 1;

    r->sample_vms = span * 1000 / SAMPLES > 60000 ? span * 1000 / SAMPLES
                                                  : 60000;
    sample(s, r);
    gq__replay_submit_due(s, r);
  }
  GQ_LOG(GQ_INFO, &lc, "replaying %zu jobs of '%s' on %lld GPUs", r->n_jobs,
         o->trace, (long long)r->total_gpus);
  return 0;
}

int gq_sim_replay_begin(struct gq_sim *s)
{
  struct gq_sim_replay *r = R(s);

  if (!r || !r->held)
    return -1;
  GQ_LOG(GQ_INFO, &lc, "scenario started");
  gq__scenario_begin(s, r);
  return 0;
}

void gq_sim_replay_release(struct gq_sim *s)
{
  struct gq_sim_replay *r = R(s);

  if (!r)
    return;
  json_decref(r->timeline);
  json_decref(r->scenario);
  json_decref(r->found);
  json_decref(r->timed);
  json_decref(r->rejected);
  for (size_t i = 0; i < r->n_jobs; i++) {
    json_decref(r->jobs[i].obj);
    free(r->jobs[i].rejected);
  }
  free(r->jobs);
  json_decref(r->index);
  json_decref(r->teams);
  json_decref(r->series);
  free(r);
  s->engine->replay = NULL;
}
