/* cli/commands_usage.c - usage and top (see commands.h; the arithmetic of
 * usage is cli/usage.c). */
#include "cli/commands.h"

#include "api/gpujob.h"
#include "base/alloc.h"
#include "base/duration.h"
#include "base/err.h"
#include "cli/jget.h"
#include "cli/kube.h"
#include "cli/table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRICES_NS "gpuq-system"
#define PRICES_CM "gpuq-prices"
#define PRICES_PATH "/api/v1/namespaces/" PRICES_NS "/configmaps/" PRICES_CM
#define ALL_JOBS_PATH "/apis/" GQ_API_VERSION "/gpujobs"
#define PRODUCT_MAX 256

/* --- usage: the JSON edge -------------------------------------------- */

static int64_t counter(const json_t *st, const char *k)
{
  int64_t v = gq_cli_jint(gq_cli_jget(st, k, NULL), 0);

  return v > 0 ? v : 0;
}

void gq_cli_usage_job(const json_t *job, struct gq_usage_job *j)
{
  const json_t *st = gq_cli_jget(job, "status", NULL);
  const json_t *meta = gq_cli_jget(job, "metadata", NULL);
  int64_t created = gq_cli_time_ms(gq_cli_jget(meta, "creationTimestamp",
                                               NULL));
  int64_t start = gq_cli_time_ms(gq_cli_jget(st, "startTime", NULL));

  if (!start)
    start = gq_cli_time_ms(gq_cli_jget(st, "admittedAt", NULL));
  memset(j, 0, sizeof(*j));
  j->ns = gq_cli_jstr(gq_cli_jget(meta, "namespace", NULL));
  j->name = gq_cli_jstr(gq_cli_jget(meta, "name", NULL));
  j->team = gq_cli_jstr(gq_cli_jget(job, "spec", "team", NULL));
  j->flavor = gq_cli_jstr(gq_cli_jget(st, "flavor", NULL));
  j->allocated_s = counter(st, "allocatedGPUSeconds");
  j->used_s = counter(st, "usedGPUSeconds");
  j->idle_s = counter(st, "idleGPUSeconds");
  j->queue_s = -1;
  if (start && created)
    j->queue_s = start > created ? (start - created) / 1000 : 0;
  j->completed_ms = gq_cli_time_ms(gq_cli_jget(st, "completionTime", NULL));
}

/* v rounded to 1/per (per 10: tenths). Dividing by the integer gives the
 * double nearest the decimal; multiplying by 0.1 would not (78.6 would
 * print as 78.60000000000001). */
static json_t *rounded(double v, double per)
{
  return json_real(round(v * per) / per);
}

/* A queue time or efficiency that may be unknown (negative): null. */
static json_t *opt_int(int64_t v)
{
  return v < 0 ? json_null() : json_integer((json_int_t)v);
}

static int row_priced(const struct gq_usage_row *w, int priced)
{
  return priced && !(w->unpriced_s > 0 && w->unpriced_s == w->allocated_s);
}

/* The key members of w for 'by', in the order -o json shows them. */
static json_t *row_key(const struct gq_usage_row *w, enum gq_usage_by by)
{
  if (by == GQ_USAGE_BY_TEAM)
    return json_pack("{s:s?}", "team", w->team);
  if (by == GQ_USAGE_BY_NAMESPACE)
    return json_pack("{s:s?}", "namespace", w->ns);
  return json_pack("{s:s?,s:s?,s:s?,s:s?}", "job", w->name, "namespace",
                   w->ns, "team", w->team, "flavor", w->flavor);
}

json_t *gq_cli_usage_rows(const struct gq_usage_report *r,
                          enum gq_usage_by by, int priced)
{
  json_t *rows = json_array();

  for (size_t i = 0; i < r->n; i++) {
    const struct gq_usage_row *w = &r->rows[i];
    double eff = gq_usage_efficiency(w->used_s, w->allocated_s);
    json_t *row = row_key(w, by), *sums;

    sums = json_pack(
        "{s:I,s:o,s:o,s:o,s:I,s:I,s:I,s:o,s:o,s:o,s:o}",
        "jobs", (json_int_t)w->jobs,
        "allocated_gpu_hours", rounded(gq_usage_hours(w->allocated_s), 1000),
        "used_gpu_hours", rounded(gq_usage_hours(w->used_s), 1000),
        "idle_gpu_hours", rounded(gq_usage_hours(w->idle_s), 1000),
        "allocated_gpu_seconds", (json_int_t)w->allocated_s,
        "used_gpu_seconds", (json_int_t)w->used_s,
        "idle_gpu_seconds", (json_int_t)w->idle_s,
        "efficiency_pct", eff < 0 ? json_null() : rounded(eff, 10),
        "queue_p50_s", opt_int(w->queue_p50_s),
        "queue_p95_s", opt_int(w->queue_p95_s),
        "cost", row_priced(w, priced) ? rounded(w->cost, 100)
                                      : json_null());
    json_object_update(row, sums);
    json_decref(sums);
    json_array_append_new(rows, row);
  }
  return rows;
}

/* --- usage: the table ------------------------------------------------ */

static json_t *hours_cell(const json_t *v)
{
  return json_sprintf("%.1f", json_number_value(v));
}

static json_t *duration_cell(const json_t *v)
{
  char buf[GQ_HUMAN_DURATION_LEN];

  if (!json_is_integer(v))
    return json_string("-");
  gq_human_duration((int64_t)json_integer_value(v) * 1000, buf, sizeof(buf));
  return json_string(buf);
}

/* The row as the table shows it: strings formatted for reading. */
static json_t *table_row(const json_t *row)
{
  const json_t *eff = json_object_get(row, "efficiency_pct");
  const json_t *cost = json_object_get(row, "cost");
  json_t *t = json_deep_copy(row);

  json_object_set_new(t, "allocated_gpu_hours",
                      hours_cell(json_object_get(row, "allocated_gpu_hours")));
  json_object_set_new(t, "used_gpu_hours",
                      hours_cell(json_object_get(row, "used_gpu_hours")));
  json_object_set_new(t, "idle_gpu_hours",
                      hours_cell(json_object_get(row, "idle_gpu_hours")));
  json_object_set_new(t, "efficiency_pct",
                      json_is_number(eff) ? json_sprintf(
                          "%.0f%%", json_number_value(eff))
                                          : json_string("-"));
  json_object_set_new(t, "queue_p50_s",
                      duration_cell(json_object_get(row, "queue_p50_s")));
  json_object_set_new(t, "queue_p95_s",
                      duration_cell(json_object_get(row, "queue_p95_s")));
  json_object_set_new(t, "cost", json_is_number(cost)
                                     ? json_sprintf("%.2f",
                                                    json_number_value(cost))
                                     : json_string("-"));
  return t;
}

static void print_usage(const json_t *rows, enum gq_usage_by by, int json)
{
  static const struct gq_cli_col job_cols[] = {
      {"NAMESPACE", "namespace"}, {"JOB", "job"}, {"TEAM", "team"},
      {"FLAVOR", "flavor"}};
  static const struct gq_cli_col sums[] = {
      {"JOBS", "jobs"},
      {"ALLOCATED(GPU-h)", "allocated_gpu_hours"},
      {"USED(GPU-h)", "used_gpu_hours"},
      {"IDLE(GPU-h)", "idle_gpu_hours"},
      {"EFFICIENCY", "efficiency_pct"},
      {"QUEUE-P50", "queue_p50_s"},
      {"QUEUE-P95", "queue_p95_s"},
      {"COST(USD)", "cost"}};
  struct gq_cli_col cols[16];
  size_t n = 0, i;
  json_t *t, *row;

  if (by == GQ_USAGE_BY_JOB)
    for (i = 0; i < 4; i++)
      cols[n++] = job_cols[i];
  else
    cols[n++] = by == GQ_USAGE_BY_TEAM ? (struct gq_cli_col){"TEAM", "team"}
                                       : job_cols[0];
  /* one job: no JOBS column, and its one queue time */
  for (i = by == GQ_USAGE_BY_JOB; i < 8; i++)
    if (!(by == GQ_USAGE_BY_JOB && i == 6))
      cols[n++] = sums[i];
  if (by == GQ_USAGE_BY_JOB)
    cols[n - 2].header = "QUEUE";
  if (json) {
    gq_cli_print(stdout, "Usage", rows, cols, n, 1);
    return;
  }
  t = json_array();
  json_array_foreach(rows, i, row)
    json_array_append_new(t, table_row(row));
  gq_cli_print(stdout, "Usage", t, cols, n, 0);
  json_decref(t);
}

/* --- usage: prices --------------------------------------------------- */

/* Adds ConfigMap gpuq-system/gpuq-prices' prices to p for products the
 * flags do not set (flags override). Returns 0, or 1 after printing an
 * error naming the bad entry. An absent ConfigMap is no prices; one that
 * cannot be read is a warning (COST then comes from the flags only). */
static int load_prices(struct gq_cli_conn *c, struct gq_usage_prices *p)
{
  char err[1024];
  const char *product;
  json_t *cm = NULL, *v;
  int rc = gq_cli_get(c, PRICES_PATH, 0, &cm, err, sizeof(err));
  double usd, have;

  if (rc == GQ_ENOTFOUND)
    return 0;
  if (rc != 0) {
    fprintf(stderr, "warning: cannot read ConfigMap %s/%s: %s; COST uses "
            "--price only\n", PRICES_NS, PRICES_CM, err);
    return 0;
  }
  json_object_foreach(json_object_get(cm, "data"), product, v) {
    if (gq_usage_prices_get(p, product, &have))
      continue;
    if (gq_usage_parse_usd(gq_cli_jstr(v), &usd) != 0) {
      fprintf(stderr, "error: ConfigMap %s/%s: data[\"%s\"]: must be USD "
              "per GPU-hour (a number >= 0), got \"%s\" (override it with "
              "--price %s=USD)\n", PRICES_NS, PRICES_CM, product,
              gq_cli_jstr(v) ? gq_cli_jstr(v) : "", product);
      json_decref(cm);
      return 1;
    }
    gq_usage_prices_set(p, product, usd);
  }
  json_decref(cm);
  return 0;
}

/* Checks --since, --by and --price; returns 0 or 2 after printing an
 * error naming the flag and its value. */
static int usage_flags(const struct gq_cli_opts *o, int64_t *since_ms,
                       enum gq_usage_by *by, struct gq_usage_prices *p)
{
  char product[PRODUCT_MAX];
  double usd;

  *since_ms = 0;
  *by = GQ_USAGE_BY_TEAM;
  /* base/duration.h: Go's ParseDuration units plus d (usage is read by
   * the week); a zero window would count nothing */
  if (o->since &&
      (gq_duration_parse(o->since, since_ms) != 0 || *since_ms <= 0)) {
    fprintf(stderr, "error: --since: must be a duration such as 7d, 36h or "
            "1h30m (units d, h, m, s, ms), got \"%s\"\n", o->since);
    return 2;
  }
  if (o->by && gq_usage_parse_by(o->by, by) != 0) {
    fprintf(stderr, "error: --by: must be team, namespace or job, got "
            "\"%s\"\n", o->by);
    return 2;
  }
  for (int i = 0; i < o->n_prices; i++) {
    if (gq_usage_parse_price(o->prices[i], product, sizeof(product),
                             &usd) != 0) {
      fprintf(stderr, "error: --price: must be PRODUCT=USD (USD per "
              "GPU-hour of a GPU product, a number >= 0), got \"%s\"\n",
              o->prices[i]);
      return 2;
    }
    gq_usage_prices_set(p, product, usd);
  }
  return 0;
}

/* The jobs of list that count in the window (since_ms 0: all). Returns
 * an owned array of *n jobs borrowing list's strings. */
static struct gq_usage_job *window_jobs(const json_t *list, int64_t now_ms,
                                        int64_t since_ms, size_t *n)
{
  const json_t *items = json_object_get(list, "items"), *it;
  struct gq_usage_job *v = gq_xcalloc(json_array_size(items) + 1,
                                      sizeof(*v));
  size_t i;

  *n = 0;
  json_array_foreach(items, i, it) {
    gq_cli_usage_job(it, &v[*n]);
    *n += gq_usage_counts(&v[*n], now_ms, since_ms);
  }
  return v;
}

static void warn_unpriced(const struct gq_usage_report *r)
{
  fprintf(stderr, "warning: %.1f allocated GPU-hours have no price and are "
          "not in COST (GPU product %s); set it in ConfigMap %s/%s or with "
          "--price %s=USD\n", gq_usage_hours(r->unpriced_s),
          r->unpriced ? r->unpriced : "unknown: no status.flavor", PRICES_NS,
          PRICES_CM, r->unpriced ? r->unpriced : "PRODUCT");
}

int gq_cli_usage(int argc, char **argv)
{
  struct gq_cli_opts o;
  struct gq_cli_conn c;
  struct gq_usage_prices prices;
  struct gq_usage_report rep;
  struct gq_usage_job *jobs;
  enum gq_usage_by by;
  json_t *list, *rows;
  int64_t since_ms, now = 0;
  size_t n;
  int rc;

  if (gq_cli_parse(argc, argv, "usage", GQ_CLI_USAGE, 0, &o))
    return 2;
  gq_usage_prices_init(&prices);
  if ((rc = usage_flags(&o, &since_ms, &by, &prices)) != 0 ||
      (rc = gq_cli_open(&c, &o)) != 0) {
    gq_usage_prices_release(&prices);
    return rc;
  }
  rc = 1;
  if (load_prices(&c, &prices) || gq_cli_fetch(&c, ALL_JOBS_PATH, 1, &list))
    goto out;
  if (since_ms)
    now = gq_cli_now_ms(&c);
  jobs = window_jobs(list, now, since_ms, &n);
  gq_usage_group(jobs, n, by, &prices, &rep);
  if (prices.n && rep.unpriced_s)
    warn_unpriced(&rep);
  rows = gq_cli_usage_rows(&rep, by, prices.n > 0);
  print_usage(rows, by, o.json);
  json_decref(rows);
  gq_usage_report_release(&rep);
  free(jobs);
  json_decref(list);
  rc = 0;
out:
  gq_usage_prices_release(&prices);
  gq_cli_close(&c);
  return rc;
}

/* --- top ------------------------------------------------------------- */

/* The Idle condition of status st (borrowed), or NULL. */
static const json_t *idle_condition(const json_t *st)
{
  const json_t *it;
  size_t i;

  json_array_foreach(gq_cli_jget(st, "conditions", NULL), i, it) {
    const char *t = gq_cli_jstr(gq_cli_jget(it, "type", NULL));

    if (t && !strcmp(t, "Idle"))
      return it;
  }
  return NULL;
}

json_t *gq_cli_top_row(const json_t *job, int64_t now_ms)
{
  const json_t *st = gq_cli_jget(job, "status", NULL);
  const json_t *meta = gq_cli_jget(job, "metadata", NULL);
  const json_t *util = gq_cli_jget(st, "gpuUtilization", NULL);
  const json_t *cond = idle_condition(st);
  const char *cs = gq_cli_jstr(gq_cli_jget(cond, "status", NULL));
  char age[32], since[32];
  json_t *idle, *nodes = json_array(), *n;
  size_t i;

  gq_cli_age(now_ms, gq_cli_time_ms(gq_cli_jget(meta, "creationTimestamp",
                                                NULL)), age, sizeof(age));
  gq_cli_age(now_ms, gq_cli_time_ms(gq_cli_jget(cond, "lastTransitionTime",
                                                NULL)), since, sizeof(since));
  if (!cs)
    idle = json_string("-");
  else if (!strcmp(since, "-"))
    idle = json_string(cs);
  else
    idle = json_sprintf("%s (%s)", cs, since);
  json_array_foreach(gq_cli_jget(st, "nodes", NULL), i, n)
    if (json_is_string(n))
      json_array_append(nodes, n);
  return json_pack("{s:s?,s:s?,s:s?,s:O?,s:O?,s:o,s:s?,s:o,s:s?,s:s?,"
                   "s:o,s:s?,s:s}",
                   "namespace", gq_cli_jstr(gq_cli_jget(meta, "namespace",
                                                        NULL)),
                   "name", gq_cli_jstr(gq_cli_jget(meta, "name", NULL)),
                   "team", gq_cli_jstr(gq_cli_jget(job, "spec", "team", NULL)),
                   "gpus", gq_cli_jget(st, "gpus", NULL),
                   "gpuUtilization", json_is_integer(util) ? util : NULL,
                   "util", json_is_integer(util)
                               ? json_sprintf("%lld%%", (long long)
                                              json_integer_value(util))
                               : json_string("<unknown>"),
                   "utilizationTime", gq_cli_jstr(gq_cli_jget(
                       st, "utilizationTime", NULL)),
                   "idle", idle,
                   "idleStatus", cs,
                   "idleReason", gq_cli_jstr(gq_cli_jget(cond, "reason",
                                                         NULL)),
                   "nodes", nodes,
                   "startTime", gq_cli_jstr(gq_cli_jget(st, "startTime",
                                                        NULL)),
                   "age", age);
}

/* status.nodes as one cell: the first three, then "+N". */
static json_t *nodes_cell(const json_t *nodes)
{
  char buf[512] = "";
  size_t i, off = 0, n = json_array_size(nodes);

  for (i = 0; i < n && i < 3 && off < sizeof(buf); i++)
    off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s",
                            i ? "," : "",
                            json_string_value(json_array_get(nodes, i)));
  if (n > 3 && off < sizeof(buf))
    snprintf(buf + off, sizeof(buf) - off, " +%zu", n - 3);
  return json_string(n ? buf : "-");
}

static int cmp_top(const void *a, const void *b)
{
  const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
  const char *nx = gq_cli_jstr(json_object_get(x, "namespace"));
  const char *ny = gq_cli_jstr(json_object_get(y, "namespace"));
  int c = strcmp(nx ? nx : "", ny ? ny : "");

  nx = gq_cli_jstr(json_object_get(x, "name"));
  ny = gq_cli_jstr(json_object_get(y, "name"));
  return c ? c : strcmp(nx ? nx : "", ny ? ny : "");
}

/* The running jobs of list (team t only, when set) as sorted top rows. */
static json_t *top_rows(const json_t *list, const char *t, int64_t now)
{
  const json_t *items = json_object_get(list, "items"), *it;
  json_t **v = gq_xcalloc(json_array_size(items) + 1, sizeof(*v));
  json_t *rows = json_array();
  size_t i, n = 0;

  json_array_foreach(items, i, it) {
    const char *phase = gq_cli_jstr(gq_cli_jget(it, "status", "phase", NULL));
    const char *team = gq_cli_jstr(gq_cli_jget(it, "spec", "team", NULL));

    if (phase && !strcmp(phase, "Running") &&
        (!t || (team && !strcmp(team, t))))
      v[n++] = gq_cli_top_row(it, now);
  }
  qsort(v, n, sizeof(*v), cmp_top);
  for (i = 0; i < n; i++)
    json_array_append_new(rows, v[i]);
  free(v);
  return rows;
}

static void print_top(const json_t *rows, int all_ns, int json)
{
  static const struct gq_cli_col cols[] = {
      {"NAMESPACE", "namespace"}, {"NAME", "name"}, {"TEAM", "team"},
      {"GPUS", "gpus"},           {"UTIL", "util"}, {"IDLE", "idle"},
      {"NODES", "nodes"},         {"AGE", "age"}};
  json_t *t, *row;
  size_t i;

  if (json) {
    gq_cli_print(stdout, "GpuJobTop", rows, cols, 8, 1);
    return;
  }
  t = json_array();
  json_array_foreach(rows, i, row) {
    json_t *r = json_copy((json_t *)row);

    json_object_set_new(r, "nodes", nodes_cell(json_object_get(row,
                                                               "nodes")));
    json_array_append_new(t, r);
  }
  /* kubectl shows NAMESPACE only with -A */
  gq_cli_print(stdout, "GpuJobTop", t, all_ns ? cols : cols + 1,
               all_ns ? 8 : 7, 0);
  json_decref(t);
}

int gq_cli_top(int argc, char **argv)
{
  struct gq_cli_opts o;
  struct gq_cli_conn c;
  json_t *list, *rows;
  char path[512];

  if (gq_cli_parse(argc, argv, "top", GQ_CLI_NS | GQ_CLI_TEAM, 0, &o))
    return 2;
  if (gq_cli_open(&c, &o))
    return 1;
  if (o.all_ns)
    snprintf(path, sizeof(path), ALL_JOBS_PATH);
  else
    snprintf(path, sizeof(path), "/apis/" GQ_API_VERSION
             "/namespaces/%s/gpujobs", c.ns);
  if (gq_cli_fetch(&c, path, 1, &list)) {
    gq_cli_close(&c);
    return 1;
  }
  rows = top_rows(list, o.team, gq_cli_now_ms(&c));
  print_top(rows, o.all_ns, o.json);
  json_decref(rows);
  json_decref(list);
  gq_cli_close(&c);
  return 0;
}
