/* `kubectl gpuq usage` arithmetic (cli/usage.h): --since, --by and --price
 * parsing, the window rule, nearest-rank percentiles, cost, grouping by
 * team, namespace and job with unpriced GPU-seconds counted; and its JSON
 * edge (cli/commands.h): a GpuJob's status into struct gq_usage_job, the
 * -o json rows, and the `top` row.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/err.h"
#include "cli/commands.h"
#include "cli/kube.h"
#include "cli/usage.h"
#include "tests/support/fixture.h"

#define H100 "NVIDIA-H100-80GB-HBM3"
#define A100 "NVIDIA-A100-SXM4-80GB"
#define DAY_MS 86400000LL

static void test_parse_by_and_price(void **state)
{
  enum gq_usage_by by;
  char product[16];
  double usd = -1;

  (void)state;
  assert_int_equal(gq_usage_parse_by("team", &by), 0);
  assert_int_equal(by, GQ_USAGE_BY_TEAM);
  assert_int_equal(gq_usage_parse_by("namespace", &by), 0);
  assert_int_equal(by, GQ_USAGE_BY_NAMESPACE);
  assert_int_equal(gq_usage_parse_by("job", &by), 0);
  assert_int_equal(by, GQ_USAGE_BY_JOB);
  assert_int_equal(gq_usage_parse_by("Team", &by), GQ_EINVAL);
  assert_int_equal(gq_usage_parse_by(NULL, &by), GQ_EINVAL);

  assert_int_equal(gq_usage_parse_price("T4=0.35", product, sizeof(product),
                                        &usd), 0);
  assert_string_equal(product, "T4");
  assert_true(usd == 0.35);
  assert_int_equal(gq_usage_parse_price("X=0", product, sizeof(product),
                                        &usd), 0);
  assert_true(usd == 0);
  assert_int_equal(gq_usage_parse_price("X=.5", product, sizeof(product),
                                        &usd), 0);
  assert_true(usd == 0.5);
  for (const char *bad = "T4\0=1\0T4=\0T4=-1\0T4=abc\0T4=1x\0T4=inf\0T4=nan\0"
                         "T4=0x10\0T4= 1\0A-VERY-LONG-PRODUCT=1\0";
       *bad; bad += strlen(bad) + 1)
    if (gq_usage_parse_price(bad, product, sizeof(product), &usd) !=
        GQ_EINVAL)
      fail_msg("'%s' was accepted", bad);
}

static void test_prices(void **state)
{
  struct gq_usage_prices p;
  double usd = -1;

  (void)state;
  gq_usage_prices_init(&p);
  assert_false(gq_usage_prices_get(&p, H100, &usd));
  for (int i = 0; i < 20; i++) { /* grows past its first 8 */
    char name[16];

    snprintf(name, sizeof(name), "P%d", i);
    gq_usage_prices_set(&p, name, i);
  }
  gq_usage_prices_set(&p, H100, 2.0);  /* the ConfigMap's */
  gq_usage_prices_set(&p, H100, 2.5);  /* a flag's: wins */
  assert_true(gq_usage_prices_get(&p, H100, &usd));
  assert_true(usd == 2.5);
  assert_true(gq_usage_prices_get(&p, "P13", &usd));
  assert_true(usd == 13);
  assert_false(gq_usage_prices_get(&p, NULL, &usd));
  assert_false(gq_usage_prices_get(NULL, H100, &usd));
  assert_int_equal(p.n, 21);
  gq_usage_prices_release(&p);
  assert_int_equal(p.n, 0);
}

static void test_window(void **state)
{
  const int64_t now = 100 * DAY_MS, week = 7 * DAY_MS;
  struct gq_usage_job running = {.completed_ms = 0};
  struct gq_usage_job recent = {.completed_ms = now - DAY_MS};
  struct gq_usage_job edge = {.completed_ms = now - week};
  struct gq_usage_job old = {.completed_ms = now - week - 1};

  (void)state;
  assert_true(gq_usage_counts(&running, now, week));
  assert_true(gq_usage_counts(&recent, now, week));
  assert_true(gq_usage_counts(&edge, now, week));
  assert_false(gq_usage_counts(&old, now, week));
  assert_true(gq_usage_counts(&old, now, 0)); /* no --since: all */
}

static void test_percentile(void **state)
{
  int64_t v[20], one[1] = {42}, three[3] = {30, 10, 20};

  (void)state;
  for (int i = 0; i < 20; i++)
    v[i] = (20 - i) * 10; /* 200, 190, ..., 10: sorted in place */
  assert_int_equal(gq_usage_percentile(v, 20, 50), 100); /* rank 10 */
  assert_int_equal(gq_usage_percentile(v, 20, 95), 190); /* rank 19 */
  assert_int_equal(gq_usage_percentile(v, 20, 100), 200);
  assert_int_equal(gq_usage_percentile(v, 20, 1), 10);
  assert_int_equal(v[0], 10);
  assert_int_equal(gq_usage_percentile(one, 1, 50), 42);
  assert_int_equal(gq_usage_percentile(one, 1, 95), 42);
  assert_int_equal(gq_usage_percentile(three, 3, 50), 20); /* rank 2 */
  assert_int_equal(gq_usage_percentile(three, 3, 95), 30);
  assert_int_equal(gq_usage_percentile(NULL, 0, 50), -1);
}

static void test_units(void **state)
{
  (void)state;
  assert_true(gq_usage_hours(5400) == 1.5);
  assert_true(gq_usage_cost(7200, 2.5) == 5.0);  /* 2 GPU-h at 2.50 */
  assert_true(gq_usage_cost(0, 2.5) == 0);
  assert_true(gq_usage_efficiency(3, 4) == 75.0);
  assert_true(gq_usage_efficiency(0, 0) == -1);
}

/* Five jobs of two teams in three namespaces, two products (T4 unpriced). */
static const struct gq_usage_job jobs[] = {
    {"ns-b", "b1", "vision", H100, 14400, 7200, 3600, 600, 0},
    {"ns-a", "a2", "nlp", A100, 3600, 3600, 0, 60, 0},
    {"ns-a", "a1", "nlp", H100, 7200, 5400, 0, 0, 0},
    {"ns-c", "c1", "nlp", "T4", 1800, 900, 900, 120, 0},
    {"ns-a", "a3", "nlp", NULL, 0, 0, 0, -1, 0}, /* still queued */
};

static void test_group_by_team(void **state)
{
  struct gq_usage_prices p;
  struct gq_usage_report r;
  const struct gq_usage_row *w;

  (void)state;
  gq_usage_prices_init(&p);
  gq_usage_prices_set(&p, H100, 2.0);
  gq_usage_prices_set(&p, A100, 1.0);
  gq_usage_group(jobs, 5, GQ_USAGE_BY_TEAM, &p, &r);
  assert_int_equal(r.n, 2);
  w = &r.rows[0];
  assert_string_equal(w->team, "nlp");
  assert_null(w->ns);
  assert_int_equal(w->jobs, 4);
  assert_int_equal(w->allocated_s, 12600);
  assert_int_equal(w->used_s, 9900);
  assert_int_equal(w->idle_s, 900);
  /* started: 0, 60, 120 s; a3 has not */
  assert_int_equal(w->queue_p50_s, 60);
  assert_int_equal(w->queue_p95_s, 120);
  assert_true(w->cost == 2 * 2.0 + 1 * 1.0);
  assert_int_equal(w->unpriced_s, 1800); /* c1's T4 */
  w = &r.rows[1];
  assert_string_equal(w->team, "vision");
  assert_int_equal(w->jobs, 1);
  assert_true(w->cost == 8.0);
  assert_int_equal(w->queue_p50_s, 600);
  assert_int_equal(r.unpriced_s, 1800);
  assert_string_equal(r.unpriced, "T4");
  gq_usage_report_release(&r);
  gq_usage_prices_release(&p);
}

static void test_group_by_namespace_and_job(void **state)
{
  struct gq_usage_report r;

  (void)state;
  gq_usage_group(jobs, 5, GQ_USAGE_BY_NAMESPACE, NULL, &r);
  assert_int_equal(r.n, 3);
  assert_string_equal(r.rows[0].ns, "ns-a");
  assert_null(r.rows[0].team);
  assert_int_equal(r.rows[0].jobs, 3);
  assert_int_equal(r.rows[0].allocated_s, 10800);
  assert_int_equal(r.rows[0].queue_p50_s, 0);  /* of 0, 60 */
  assert_int_equal(r.rows[0].queue_p95_s, 60);
  assert_string_equal(r.rows[2].ns, "ns-c");
  assert_int_equal(r.unpriced_s, 14400 + 3600 + 7200 + 1800); /* no prices */
  gq_usage_report_release(&r);

  gq_usage_group(jobs, 5, GQ_USAGE_BY_JOB, NULL, &r);
  assert_int_equal(r.n, 5);
  assert_string_equal(r.rows[0].name, "a1"); /* ns-a/a1 first */
  assert_string_equal(r.rows[0].flavor, H100);
  assert_string_equal(r.rows[0].team, "nlp");
  assert_string_equal(r.rows[2].name, "a3");
  assert_int_equal(r.rows[2].queue_p50_s, -1);
  assert_string_equal(r.rows[4].ns, "ns-c");
  gq_usage_report_release(&r);

  gq_usage_group(NULL, 0, GQ_USAGE_BY_TEAM, NULL, &r);
  assert_int_equal(r.n, 0);
  gq_usage_report_release(&r);
}

/* A job without spec.team still counts, in a row of its own. */
static void test_group_no_team(void **state)
{
  const struct gq_usage_job two[] = {
      {"ns", "x", "t", H100, 10, 5, 0, 1, 0},
      {"ns", "y", NULL, H100, 20, 5, 0, 1, 0},
  };
  struct gq_usage_report r;

  (void)state;
  gq_usage_group(two, 2, GQ_USAGE_BY_TEAM, NULL, &r);
  assert_int_equal(r.n, 2);
  assert_null(r.rows[0].team);
  assert_int_equal(r.rows[0].allocated_s, 20);
  assert_string_equal(r.rows[1].team, "t");
  gq_usage_report_release(&r);
}

static void test_usage_job(void **state)
{
  json_t *doc = gq_test_json_sq(
      "{'metadata':{'name':'j','namespace':'ns',"
      "'creationTimestamp':'2027-01-01T00:00:00Z'},'spec':{'team':'t'},"
      "'status':{'flavor':'" H100 "','allocatedGPUSeconds':7200,"
      "'usedGPUSeconds':3600,'idleGPUSeconds':-5,"
      "'startTime':'2027-01-01T00:05:30Z','admittedAt':'2027-01-01T00:05:00Z',"
      "'completionTime':'2027-01-02T00:00:00Z'}}");
  struct gq_usage_job j;

  (void)state;
  gq_cli_usage_job(doc, &j);
  assert_string_equal(j.ns, "ns");
  assert_string_equal(j.name, "j");
  assert_string_equal(j.team, "t");
  assert_string_equal(j.flavor, H100);
  assert_int_equal(j.allocated_s, 7200);
  assert_int_equal(j.used_s, 3600);
  assert_int_equal(j.idle_s, 0); /* negative: 0 */
  assert_int_equal(j.queue_s, 330);
  assert_int_equal(j.completed_ms, 1798848000000LL);
  /* no startTime: admittedAt; neither: not started */
  json_object_del(json_object_get(doc, "status"), "startTime");
  gq_cli_usage_job(doc, &j);
  assert_int_equal(j.queue_s, 300);
  json_object_del(json_object_get(doc, "status"), "admittedAt");
  gq_cli_usage_job(doc, &j);
  assert_int_equal(j.queue_s, -1);
  json_decref(doc);

  doc = gq_test_json_sq("{'metadata':{'name':'q'},'status':'odd'}");
  gq_cli_usage_job(doc, &j);
  assert_string_equal(j.name, "q");
  assert_null(j.ns);
  assert_null(j.flavor);
  assert_int_equal(j.allocated_s, 0);
  assert_int_equal(j.completed_ms, 0);
  json_decref(doc);
}

static void test_usage_rows(void **state)
{
  struct gq_usage_prices p;
  struct gq_usage_report r;
  json_t *rows, *want;

  (void)state;
  gq_usage_prices_init(&p);
  gq_usage_prices_set(&p, H100, 2.0);
  gq_usage_group(jobs, 5, GQ_USAGE_BY_TEAM, &p, &r);
  rows = gq_cli_usage_rows(&r, GQ_USAGE_BY_TEAM, 1);
  want = gq_test_json_sq(
      "[{'team':'nlp','jobs':4,'allocated_gpu_hours':3.5,"
      "'used_gpu_hours':2.75,'idle_gpu_hours':0.25,"
      "'allocated_gpu_seconds':12600,'used_gpu_seconds':9900,"
      "'idle_gpu_seconds':900,'efficiency_pct':78.6,'queue_p50_s':60,"
      "'queue_p95_s':120,'cost':4.0},"
      "{'team':'vision','jobs':1,'allocated_gpu_hours':4.0,"
      "'used_gpu_hours':2.0,'idle_gpu_hours':1.0,"
      "'allocated_gpu_seconds':14400,'used_gpu_seconds':7200,"
      "'idle_gpu_seconds':3600,'efficiency_pct':50.0,'queue_p50_s':600,"
      "'queue_p95_s':600,'cost':8.0}]");
  if (!json_equal(rows, want)) {
    char *got = json_dumps(rows, JSON_REAL_PRECISION(15));

    fail_msg("got %s", got);
  }
  json_decref(want);
  json_decref(rows);
  gq_usage_report_release(&r);

  /* by job: the key members; the unpriced T4 job has no cost, nor has a
   * job with no allocation a queue time or efficiency */
  gq_usage_group(jobs, 5, GQ_USAGE_BY_JOB, &p, &r);
  rows = gq_cli_usage_rows(&r, GQ_USAGE_BY_JOB, 1);
  assert_string_equal(json_string_value(json_object_get(
      json_array_get(rows, 0), "job")), "a1");
  assert_string_equal(json_string_value(json_object_get(
      json_array_get(rows, 0), "flavor")), H100);
  assert_true(json_is_null(json_object_get(json_array_get(rows, 1), "cost")));
  assert_true(json_is_null(json_object_get(json_array_get(rows, 2),
                                           "efficiency_pct")));
  assert_true(json_is_null(json_object_get(json_array_get(rows, 2),
                                           "queue_p50_s")));
  assert_true(json_is_null(json_object_get(json_array_get(rows, 4), "cost")));
  json_decref(rows);
  /* no prices at all: no cost anywhere */
  rows = gq_cli_usage_rows(&r, GQ_USAGE_BY_JOB, 0);
  assert_true(json_is_null(json_object_get(json_array_get(rows, 0), "cost")));
  json_decref(rows);
  gq_usage_report_release(&r);
  gq_usage_prices_release(&p);
}

static void test_top_row(void **state)
{
  const int64_t now = 1798848000000LL + 3600000; /* 2027-01-02T01:00:00Z */
  json_t *doc = gq_test_json_sq(
      "{'metadata':{'name':'nb','namespace':'ns',"
      "'creationTimestamp':'2027-01-01T23:00:00Z'},'spec':{'team':'t'},"
      "'status':{'phase':'Running','gpus':8,'gpuUtilization':3,"
      "'nodes':['n1','n2'],'conditions':[{'type':'Ready','status':'True'},"
      "{'type':'Idle','status':'True','reason':'GpuIdle',"
      "'lastTransitionTime':'2027-01-02T00:15:00Z'}]}}");
  json_t *row;

  (void)state;
  row = gq_cli_top_row(doc, now);
  assert_string_equal(json_string_value(json_object_get(row, "util")), "3%");
  assert_int_equal(json_integer_value(json_object_get(row, "gpuUtilization")),
                   3);
  assert_string_equal(json_string_value(json_object_get(row, "idle")),
                      "True (45m)");
  assert_string_equal(json_string_value(json_object_get(row, "idleReason")),
                      "GpuIdle");
  assert_string_equal(json_string_value(json_object_get(row, "age")), "120m");
  assert_int_equal(json_array_size(json_object_get(row, "nodes")), 2);
  assert_int_equal(json_integer_value(json_object_get(row, "gpus")), 8);
  json_decref(row);
  /* nothing known yet */
  json_object_del(json_object_get(doc, "status"), "gpuUtilization");
  json_object_del(json_object_get(doc, "status"), "conditions");
  row = gq_cli_top_row(doc, now);
  assert_string_equal(json_string_value(json_object_get(row, "util")),
                      "<unknown>");
  assert_true(json_is_null(json_object_get(row, "gpuUtilization")));
  assert_string_equal(json_string_value(json_object_get(row, "idle")), "-");
  json_decref(row);
  json_decref(doc);
}

/* --since, --by and repeated --price are the usage command's flags only. */
static void test_parse_usage_flags(void **state)
{
  char *argv[] = {"--since", "7d", "--by=job", "--price", "A=1",
                  "--price=B=2", "-o", "json"};
  struct gq_cli_opts o;

  (void)state;
  assert_int_equal(gq_cli_parse(8, argv, "usage", GQ_CLI_USAGE, 0, &o), 0);
  assert_string_equal(o.since, "7d");
  assert_string_equal(o.by, "job");
  assert_int_equal(o.n_prices, 2);
  assert_string_equal(o.prices[0], "A=1");
  assert_string_equal(o.prices[1], "B=2");
  assert_true(o.json);
  assert_int_equal(gq_cli_parse(2, argv, "top", GQ_CLI_NS, 0, &o), 2);
  assert_int_equal(gq_cli_parse(1, argv + 3, "usage", GQ_CLI_USAGE, 0, &o),
                   2); /* --price with no value */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_by_and_price),
      cmocka_unit_test(test_prices),
      cmocka_unit_test(test_window),
      cmocka_unit_test(test_percentile),
      cmocka_unit_test(test_units),
      cmocka_unit_test(test_group_by_team),
      cmocka_unit_test(test_group_by_namespace_and_job),
      cmocka_unit_test(test_group_no_team),
      cmocka_unit_test(test_usage_job),
      cmocka_unit_test(test_usage_rows),
      cmocka_unit_test(test_top_row),
      cmocka_unit_test(test_parse_usage_flags),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
