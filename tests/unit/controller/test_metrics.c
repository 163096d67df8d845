/* Tests for controller/metrics: the exact exposition text (format 0.0.4)
 * for counters, gauges, escaped labels and histograms, child order, reset,
 * value errors and the caps.
 *
 * Run as `test_metrics --sample`, it prints the sample that
 * test_sample_text asserts, for the promtool check registered next to this
 * test (tests/CMakeLists.txt). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"
#include "controller/metrics.h"

/* Renders m and compares with want; the buffer is released. */
static void assert_render(const struct gq_metrics *m, const char *want)
{
  struct gq_buf b;

  gq_buf_init(&b, 1u << 20);
  assert_int_equal(gq_metrics_render(m, &b), 0);
  assert_string_equal(gq_buf_str(&b), want);
  gq_buf_release(&b);
}

static void test_counter(void **state)
{
  struct gq_metrics *m = gq_metrics_new();
  struct gq_metric *c = gq_metrics_counter(m, "gpuq_cycles_total",
                                           "Reconcile cycles run.", 0, NULL);

  (void)state;
  assert_render(m, "# HELP gpuq_cycles_total Reconcile cycles run.\n"
                   "# TYPE gpuq_cycles_total counter\n"
                   "gpuq_cycles_total 0\n");
  assert_int_equal(gq_metric_add(c, NULL, 1), 0);
  assert_int_equal(gq_metric_add(c, NULL, 2.5), 0);
  assert_int_equal(gq_metric_add(c, NULL, -1), GQ_EINVAL);
  assert_int_equal(gq_metric_add(c, NULL, NAN), GQ_EINVAL);
  assert_render(m, "# HELP gpuq_cycles_total Reconcile cycles run.\n"
                   "# TYPE gpuq_cycles_total counter\n"
                   "gpuq_cycles_total 3.5\n");
  /* Mirroring a count kept elsewhere. */
  assert_int_equal(gq_metric_set(c, NULL, 1e6), 0);
  assert_int_equal(gq_metric_set(c, NULL, -2), GQ_EINVAL);
  assert_render(m, "# HELP gpuq_cycles_total Reconcile cycles run.\n"
                   "# TYPE gpuq_cycles_total counter\n"
                   "gpuq_cycles_total 1000000\n");
  gq_metrics_free(m);
}

static void test_gauge_values(void **state)
{
  static const char *const labels[] = {"case"};
  static const struct {
    const char *label;
    double v;
  } cases[] = {
      {"a_int", 42},         {"b_neg", -3},   {"c_frac", 0.1},
      {"d_small", 1.5e-7},   {"e_big", 1e21}, {"f_pinf", INFINITY},
      {"g_ninf", -INFINITY}, {"h_nan", NAN},  {"i_2p53", 9007199254740993.0},
      {"j_third", 1.0 / 3},
  };
  struct gq_metrics *m = gq_metrics_new();
  struct gq_metric *g = gq_metrics_gauge(m, "v", "Values.", 1, labels);

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *lv[] = {cases[i].label};

    assert_int_equal(gq_metric_set(g, lv, cases[i].v), 0);
  }
  assert_render(m, "# HELP v Values.\n"
                   "# TYPE v gauge\n"
                   "v{case=\"a_int\"} 42\n"
                   "v{case=\"b_neg\"} -3\n"
                   "v{case=\"c_frac\"} 0.1\n"
                   "v{case=\"d_small\"} 1.5e-07\n"
                   "v{case=\"e_big\"} 1e+21\n"
                   "v{case=\"f_pinf\"} +Inf\n"
                   "v{case=\"g_ninf\"} -Inf\n"
                   "v{case=\"h_nan\"} NaN\n"
                   "v{case=\"i_2p53\"} 9007199254740992\n"
                   "v{case=\"j_third\"} 0.3333333333333333\n");
  gq_metrics_free(m);
}

/* Children come out sorted by label values, first label first, whatever
 * the order they were created in; ("a", "bc") and ("ab", "c") differ. */
static void test_labels_sorted(void **state)
{
  static const char *const labels[] = {"team", "flavor"};
  static const char *const order[][2] = {
      {"vision", "h100"}, {"nlp", "h100"}, {"nlp", "a100"},
      {"ab", "c"},        {"a", "bc"},     {"nlp", ""},
  };
  struct gq_metrics *m = gq_metrics_new();
  struct gq_metric *g =
      gq_metrics_gauge(m, "gpuq_gpus_admitted", "Admitted GPUs.", 2, labels);

  (void)state;
  for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++)
    assert_int_equal(gq_metric_add(g, order[i], (double)i + 1), 0);
  assert_int_equal(gq_metric_add(g, order[0], 10), 0); /* same child */
  assert_render(m, "# HELP gpuq_gpus_admitted Admitted GPUs.\n"
                   "# TYPE gpuq_gpus_admitted gauge\n"
                   "gpuq_gpus_admitted{team=\"a\",flavor=\"bc\"} 5\n"
                   "gpuq_gpus_admitted{team=\"ab\",flavor=\"c\"} 4\n"
                   "gpuq_gpus_admitted{team=\"nlp\",flavor=\"\"} 6\n"
                   "gpuq_gpus_admitted{team=\"nlp\",flavor=\"a100\"} 3\n"
                   "gpuq_gpus_admitted{team=\"nlp\",flavor=\"h100\"} 2\n"
                   "gpuq_gpus_admitted{team=\"vision\",flavor=\"h100\"} 11\n");
  gq_metrics_free(m);
}

/* Label values escape backslash, double quote and newline; help text
 * escapes backslash and newline only. */
static void test_escaping(void **state)
{
  static const char *const labels[] = {"path"};
  static const char *const lv[] = {"C:\\dir \"x\"\nend"};
  struct gq_metrics *m = gq_metrics_new();
  struct gq_metric *g =
      gq_metrics_gauge(m, "esc", "A \\ \"help\"\nline two.", 1, labels);

  (void)state;
  assert_int_equal(gq_metric_set(g, lv, 1), 0);
  assert_render(m, "# HELP esc A \\\\ \"help\"\\nline two.\n"
                   "# TYPE esc gauge\n"
                   "esc{path=\"C:\\\\dir \\\"x\\\"\\nend\"} 1\n");
  gq_metrics_free(m);
}

static void test_histogram(void **state)
{
  static const char *const labels[] = {"team"};
  static const char *const nlp[] = {"nlp"}, *const cv[] = {"cv"};
  static const double bounds[] = {0.1, 1, 10, INFINITY}; /* +Inf dropped */
  static const double obs[] = {0.05, 0.1, 0.5, 5, 50, -1};
  struct gq_metrics *m = gq_metrics_new();
  struct gq_metric *h = gq_metrics_histogram(
      m, "gpuq_queue_wait_seconds", "Time queued.", 1, labels, bounds, 4);

  (void)state;
  for (size_t i = 0; i < sizeof(obs) / sizeof(obs[0]); i++)
    assert_int_equal(gq_metric_observe(h, nlp, obs[i]), 0);
  assert_int_equal(gq_metric_observe(h, cv, 2), 0);
  assert_int_equal(gq_metric_observe(h, cv, NAN), GQ_EINVAL);
  assert_render(m, "# HELP gpuq_queue_wait_seconds Time queued.\n"
                   "# TYPE gpuq_queue_wait_seconds histogram\n"
                   "gpuq_queue_wait_seconds_bucket{team=\"cv\",le=\"0.1\"} 0\n"
                   "gpuq_queue_wait_seconds_bucket{team=\"cv\",le=\"1\"} 0\n"
                   "gpuq_queue_wait_seconds_bucket{team=\"cv\",le=\"10\"} 1\n"
                   "gpuq_queue_wait_seconds_bucket{team=\"cv\",le=\"+Inf\"} 1\n"
                   "gpuq_queue_wait_seconds_sum{team=\"cv\"} 2\n"
                   "gpuq_queue_wait_seconds_count{team=\"cv\"} 1\n"
                   "gpuq_queue_wait_seconds_bucket{team=\"nlp\",le=\"0.1\"} 3\n"
                   "gpuq_queue_wait_seconds_bucket{team=\"nlp\",le=\"1\"} 4\n"
                   "gpuq_queue_wait_seconds_bucket{team=\"nlp\",le=\"10\"} 5\n"
                   "gpuq_queue_wait_seconds_bucket{team=\"nlp\",le=\"+Inf\"} "
                   "6\n"
                   "gpuq_queue_wait_seconds_sum{team=\"nlp\"} 54.65\n"
                   "gpuq_queue_wait_seconds_count{team=\"nlp\"} 6\n");
  gq_metrics_free(m);
}

/* Without labels a histogram renders its empty buckets from the start,
 * and again after a reset; with no bounds at all it still has the +Inf
 * bucket. */
static void test_histogram_no_labels(void **state)
{
  static const double bounds[] = {0.5};
  static const char zero[] = "# HELP lat_seconds Latency.\n"
                             "# TYPE lat_seconds histogram\n"
                             "lat_seconds_bucket{le=\"0.5\"} 0\n"
                             "lat_seconds_bucket{le=\"+Inf\"} 0\n"
                             "lat_seconds_sum 0\n"
                             "lat_seconds_count 0\n"
                             "# HELP inf_only Only +Inf.\n"
                             "# TYPE inf_only histogram\n"
                             "inf_only_bucket{le=\"+Inf\"} 0\n"
                             "inf_only_sum 0\n"
                             "inf_only_count 0\n";
  struct gq_metrics *m = gq_metrics_new();
  struct gq_metric *h =
      gq_metrics_histogram(m, "lat_seconds", "Latency.", 0, NULL, bounds, 1);

  (void)state;
  gq_metrics_histogram(m, "inf_only", "Only +Inf.", 0, NULL, NULL, 0);
  assert_render(m, zero);
  assert_int_equal(gq_metric_observe(h, NULL, 0.25), 0);
  gq_metric_reset(h);
  assert_render(m, zero);
  gq_metrics_free(m);
}

/* Families keep registration order; a labelled family without children
 * renders nothing, and reset takes it back there (a deleted team's values
 * disappear). A family without labels goes back to 0. */
static void test_order_and_reset(void **state)
{
  static const char *const labels[] = {"team"};
  static const char *const a[] = {"a"}, *const b[] = {"b"};
  struct gq_metrics *m = gq_metrics_new();
  struct gq_metric *z = gq_metrics_gauge(m, "z_first", "First.", 1, labels);
  struct gq_metric *e = gq_metrics_gauge(m, "empty", "Empty.", 1, labels);
  struct gq_metric *y = gq_metrics_gauge(m, "a_last", "Last.", 0, NULL);

  (void)state;
  (void)e;
  assert_int_equal(gq_metric_set(z, a, 1), 0);
  assert_int_equal(gq_metric_set(z, b, 2), 0);
  assert_int_equal(gq_metric_set(y, NULL, 7), 0);
  assert_render(m, "# HELP z_first First.\n"
                   "# TYPE z_first gauge\n"
                   "z_first{team=\"a\"} 1\n"
                   "z_first{team=\"b\"} 2\n"
                   "# HELP a_last Last.\n"
                   "# TYPE a_last gauge\n"
                   "a_last 7\n");
  gq_metric_reset(z);
  gq_metric_reset(y);
  assert_int_equal(gq_metric_set(z, b, 3), 0);
  assert_render(m, "# HELP z_first First.\n"
                   "# TYPE z_first gauge\n"
                   "z_first{team=\"b\"} 3\n"
                   "# HELP a_last Last.\n"
                   "# TYPE a_last gauge\n"
                   "a_last 0\n");
  gq_metrics_free(m);
}

/* A value over GQ_METRICS_MAX_VALUE bytes and a child past
 * GQ_METRICS_MAX_CHILDREN are refused; existing children still update. */
static void test_caps(void **state)
{
  static const char *const labels[] = {"k"};
  struct gq_metrics *m = gq_metrics_new();
  struct gq_metric *g = gq_metrics_gauge(m, "caps", "Caps.", 1, labels);
  char big[GQ_METRICS_MAX_VALUE + 2], name[16];
  const char *lv[] = {big};

  (void)state;
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  assert_int_equal(gq_metric_set(g, lv, 1), GQ_ETOOBIG);
  big[GQ_METRICS_MAX_VALUE] = '\0'; /* exactly at the cap */
  assert_int_equal(gq_metric_set(g, lv, 1), 0);
  lv[0] = name;
  for (int i = 1; i < GQ_METRICS_MAX_CHILDREN; i++) {
    snprintf(name, sizeof(name), "%05d", i);
    assert_int_equal(gq_metric_set(g, lv, i), 0);
  }
  snprintf(name, sizeof(name), "one-more");
  assert_int_equal(gq_metric_set(g, lv, 1), GQ_ETOOBIG);
  snprintf(name, sizeof(name), "00001");
  assert_int_equal(gq_metric_add(g, lv, 1), 0);
  gq_metrics_free(m);
}

/* A render that does not fit fails with GQ_ETOOBIG and leaves the buffer
 * released, never a truncated page. */
static void test_render_cap(void **state)
{
  struct gq_metrics *m = gq_metrics_new();
  struct gq_buf b;

  (void)state;
  gq_metrics_counter(m, "c_total", "A counter with a long help text.", 0, NULL);
  gq_buf_init(&b, 40);
  assert_int_equal(gq_metrics_render(m, &b), GQ_ETOOBIG);
  assert_int_equal(b.len, 0);
  gq_buf_release(&b);
  gq_metrics_free(m);
}

/* The sample promtool checks: the families a controller exports, in the
 * names and units Prometheus' conventions ask for. */
static struct gq_metrics *sample(void)
{
  static const char *const tf[] = {"team", "flavor"}, *const team[] = {"team"};
  static const char *const reason[] = {"reason"};
  static const double wait[] = {1, 60, 3600};
  static const char *const nlp_h100[] = {"nlp", "h100"};
  static const char *const odd[] = {"a \"quoted\\\" team\nname", "a100"};
  static const char *const quota[] = {"quota"}, *const drain[] = {"drain"};
  static const char *const nlp[] = {"nlp"};
  struct gq_metrics *m = gq_metrics_new();
  struct gq_metric *pending, *pre, *w;

  pending = gq_metrics_gauge(m, "gpuq_jobs_pending",
                             "GpuJobs queued, per team and flavor.", 2, tf);
  pre = gq_metrics_counter(m, "gpuq_preemptions_total",
                           "Jobs preempted, by reason.", 1, reason);
  w = gq_metrics_histogram(m, "gpuq_queue_wait_seconds",
                           "Time from submission to admission.", 1, team, wait,
                           3);
  gq_metrics_counter(m, "gpuq_api_errors_total", "Failed API calls.", 0, NULL);
  gq_metric_set(pending, nlp_h100, 3);
  gq_metric_set(pending, odd, 1);
  gq_metric_add(pre, quota, 2);
  gq_metric_add(pre, drain, 1);
  gq_metric_observe(w, nlp, 12.5);
  return m;
}

static const char sample_text[] =
    "# HELP gpuq_jobs_pending GpuJobs queued, per team and flavor.\n"
    "# TYPE gpuq_jobs_pending gauge\n"
    "gpuq_jobs_pending{team=\"a \\\"quoted\\\\\\\" team\\nname\","
    "flavor=\"a100\"} 1\n"
    "gpuq_jobs_pending{team=\"nlp\",flavor=\"h100\"} 3\n"
    "# HELP gpuq_preemptions_total Jobs preempted, by reason.\n"
    "# TYPE gpuq_preemptions_total counter\n"
    "gpuq_preemptions_total{reason=\"drain\"} 1\n"
    "gpuq_preemptions_total{reason=\"quota\"} 2\n"
    "# HELP gpuq_queue_wait_seconds Time from submission to admission.\n"
    "# TYPE gpuq_queue_wait_seconds histogram\n"
    "gpuq_queue_wait_seconds_bucket{team=\"nlp\",le=\"1\"} 0\n"
    "gpuq_queue_wait_seconds_bucket{team=\"nlp\",le=\"60\"} 1\n"
    "gpuq_queue_wait_seconds_bucket{team=\"nlp\",le=\"3600\"} 1\n"
    "gpuq_queue_wait_seconds_bucket{team=\"nlp\",le=\"+Inf\"} 1\n"
    "gpuq_queue_wait_seconds_sum{team=\"nlp\"} 12.5\n"
    "gpuq_queue_wait_seconds_count{team=\"nlp\"} 1\n"
    "# HELP gpuq_api_errors_total Failed API calls.\n"
    "# TYPE gpuq_api_errors_total counter\n"
    "gpuq_api_errors_total 0\n";

static void test_sample_text(void **state)
{
  struct gq_metrics *m = sample();

  (void)state;
  assert_render(m, sample_text);
  gq_metrics_free(m);
}

int main(int argc, char **argv)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_counter),
      cmocka_unit_test(test_gauge_values),
      cmocka_unit_test(test_labels_sorted),
      cmocka_unit_test(test_escaping),
      cmocka_unit_test(test_histogram),
      cmocka_unit_test(test_histogram_no_labels),
      cmocka_unit_test(test_order_and_reset),
      cmocka_unit_test(test_caps),
      cmocka_unit_test(test_render_cap),
      cmocka_unit_test(test_sample_text),
  };

  if (argc == 2 && !strcmp(argv[1], "--sample")) {
    struct gq_metrics *m = sample();
    struct gq_buf b;
    int rc;

    gq_buf_init(&b, 1u << 20);
    rc = gq_metrics_render(m, &b);
    fputs(gq_buf_str(&b), stdout);
    gq_buf_release(&b);
    gq_metrics_free(m);
    return rc ? 1 : 0;
  }
  return cmocka_run_group_tests(tests, NULL, NULL);
}
