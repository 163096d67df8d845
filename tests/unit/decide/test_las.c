/* Attained-service scheduling and fair share over time (decide/las.h):
 * levels from GPU-seconds, thresholds' syntax, service across attempts,
 * the demotion guardrails (checkpoint, drainPolicy Wait, minRunSeconds
 * and the checkpoint interval), starvation promotion, the queue order
 * (priority, level, queue time, uid) and the decayed usage history.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "decide/las.h"

static void test_policy_names(void **state)
{
  enum gq_sched_policy p = GQ_SCHED_FIFO_BACKFILL;

  (void)state;
  assert_int_equal(gq_sched_policy_parse("attained-service", &p), 0);
  assert_int_equal(p, GQ_SCHED_ATTAINED);
  assert_string_equal(gq_sched_policy_name(p), "attained-service");
  assert_int_equal(gq_sched_policy_parse("fifo-backfill", &p), 0);
  assert_int_equal(p, GQ_SCHED_FIFO_BACKFILL);
  assert_string_equal(gq_sched_policy_name(p), "fifo-backfill");
  assert_int_equal(gq_sched_policy_parse("las", &p), GQ_EINVAL);
  assert_int_equal(gq_sched_policy_parse(NULL, &p), GQ_EINVAL);
}

static void test_thresholds(void **state)
{
  static const struct {
    const char *in;
    int rc;
    size_t n;
    int64_t t0, t1;
    const char *err; /* a part of the message */
  } t[] = {
      {"3600", 0, 1, 3600, 0, NULL},
      {"3600,36000", 0, 2, 3600, 36000, NULL},
      {"", GQ_EINVAL, 0, 0, 0, "at least one"},
      {"3600,3600", GQ_EINVAL, 0, 0, 0, "threshold 2"},
      {"0", GQ_EINVAL, 0, 0, 0, "'0'"},
      {"-5", GQ_EINVAL, 0, 0, 0, "'-5'"},
      {"1h", GQ_EINVAL, 0, 0, 0, "'1h'"},
      {"10,", GQ_EINVAL, 0, 0, 0, "empty"},
      {",10", GQ_EINVAL, 0, 0, 0, "threshold 1"},
      {"1,2,3,4,5,6,7,8", GQ_EINVAL, 0, 0, 0, "at most 7"},
  };

  (void)state;
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    struct gq_las l = GQ_LAS_DEFAULT;
    char err[256] = "";
    int rc = gq_las_parse_thresholds(t[i].in, &l, err, sizeof(err));

    if (rc != t[i].rc)
      fail_msg("'%s': rc %d, want %d (%s)", t[i].in, rc, t[i].rc, err);
    if (rc == 0) {
      assert_int_equal(l.n_thresholds, t[i].n);
      assert_int_equal(l.thresholds[0], t[i].t0);
      if (t[i].n > 1)
        assert_int_equal(l.thresholds[1], t[i].t1);
    } else {
      if (!strstr(err, t[i].err))
        fail_msg("'%s': message '%s' lacks '%s'", t[i].in, err, t[i].err);
      assert_int_equal(l.n_thresholds, GQ_LAS_DEFAULT.n_thresholds);
    }
  }
}

static void test_levels(void **state)
{
  struct gq_las l = GQ_LAS_DEFAULT;
  char err[128];

  (void)state;
  assert_int_equal(gq_las_parse_thresholds("3600,36000", &l, err,
                                           sizeof(err)), 0);
  assert_int_equal(gq_las_level(&l, -1), 0);
  assert_int_equal(gq_las_level(&l, 0), 0);
  assert_int_equal(gq_las_level(&l, 3599), 0);
  assert_int_equal(gq_las_level(&l, 3600), 1);
  assert_int_equal(gq_las_level(&l, 35999), 1);
  assert_int_equal(gq_las_level(&l, 36000), 2);
  assert_int_equal(gq_las_level(&l, INT64_MAX), 2);
  assert_int_equal(gq_las_level(NULL, 1000000), 0); /* fifo-backfill */
}

static void test_service(void **state)
{
  (void)state;
  /* 8 GPUs for 10 minutes on top of 100 GPU-s of earlier attempts */
  assert_int_equal(gq_las_service(100, 8, 1000000, 1600000), 100 + 4800);
  assert_int_equal(gq_las_service(100, 8, 0, 1600000), 100); /* not running */
  assert_int_equal(gq_las_service(100, 8, 2000000, 1600000), 100);
  assert_int_equal(gq_las_service(-7, 1, 0, 0), 0);
  /* whole seconds: 1.999 s of one GPU is 1 GPU-second */
  assert_int_equal(gq_las_service(0, 1, 1000, 2999), 1);
}

static void test_demotable(void **state)
{
  struct gq_las l = GQ_LAS_DEFAULT; /* minRunSeconds 600 */
  int64_t start = 1000000;

  (void)state;
  assert_true(gq_las_demotable(&l, 1, 0, -1, start, start + 600000));
  assert_false(gq_las_demotable(&l, 1, 0, -1, start, start + 599999));
  /* a checkpoint interval above minRunSeconds is the least run */
  assert_false(gq_las_demotable(&l, 1, 0, 1800, start, start + 1000000));
  assert_true(gq_las_demotable(&l, 1, 0, 1800, start, start + 1800000));
  assert_false(gq_las_demotable(&l, 0, 0, -1, start, start + 9000000));
  assert_false(gq_las_demotable(&l, 1, 1, -1, start, start + 9000000));
  assert_false(gq_las_demotable(&l, 1, 0, -1, 0, start + 9000000));
  assert_false(gq_las_demotable(NULL, 1, 0, -1, start, start + 9000000));
}

static void test_starved(void **state)
{
  struct gq_las l = GQ_LAS_DEFAULT; /* minRunSeconds 600 */
  int64_t rq = 5000000;

  (void)state;
  l.starve_factor = 10;
  /* ran 1,000 s: promoted after waiting 10,000 s */
  assert_false(gq_las_starved(&l, 1, rq, 1000000, rq + 9999999));
  assert_true(gq_las_starved(&l, 1, rq, 1000000, rq + 10000000));
  /* a short last run counts as minRunSeconds */
  assert_false(gq_las_starved(&l, 1, rq, 1000, rq + 5999999));
  assert_true(gq_las_starved(&l, 1, rq, 1000, rq + 6000000));
  assert_false(gq_las_starved(&l, 0, rq, 1000, rq + 99000000)); /* level 0 */
  assert_false(gq_las_starved(&l, 1, 0, 1000, rq + 99000000)); /* never ran */
  l.starve_factor = 0;
  assert_false(gq_las_starved(&l, 1, rq, 1000, rq + 99000000));
}

static void test_order(void **state)
{
  struct gq_qorder a = {5, 1, 100, "a"}, b = {5, 0, 200, "b"};

  (void)state;
  assert_true(gq_qorder_before(&b, &a)); /* lower level, later queued */
  b.level = 1;
  assert_true(gq_qorder_before(&a, &b)); /* same level: FIFO */
  b.priority = 6;
  assert_true(gq_qorder_before(&b, &a)); /* priority above all */
  b = a;
  b.uid = "b";
  assert_true(gq_qorder_before(&a, &b));
  assert_false(gq_qorder_before(&a, &a));
  b.uid = NULL;
  assert_true(gq_qorder_before(&b, &a));
}

static void test_fair_decay(void **state)
{
  (void)state;
  assert_true(fabs(gq_fair_decay(1000, 3600000, 3600) - 500) < 1e-9);
  assert_true(fabs(gq_fair_decay(1000, 0, 3600) - 1000) < 1e-9);
  assert_true(gq_fair_decay(1000, 3600000, 0) == 0); /* no history */
  assert_true(gq_fair_decay(-5, 1000, 3600) == 0);
  assert_true(gq_fair_decay(NAN, 1000, 3600) == 0);
  /* 10 GPUs for 100 half-lives: the mean is 10 GPUs */
  {
    double u = 0;

    for (int i = 0; i < 100; i++)
      u = gq_fair_accrue(u, 10, 3600000, 3600);
    assert_true(fabs(gq_fair_mean_gpus(u, 3600) - 10) < 1e-6);
  }
  /* accruing in one step or in many gives the same total */
  {
    double one = gq_fair_accrue(0, 4, 7200000, 3600), many = 0;

    for (int i = 0; i < 72; i++)
      many = gq_fair_accrue(many, 4, 100000, 3600);
    assert_true(fabs(one - many) < 1e-6 * one);
    /* half a half-life's use, decayed: 4 x H/ln2 x (1 - 2^-2) */
    assert_true(fabs(one - 4 * 3600 / M_LN2 * 0.75) < 1e-6);
  }
  assert_true(gq_fair_accrue(100, 4, 1000, 0) == 0);
  assert_true(gq_fair_mean_gpus(100, 0) == 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_policy_names), cmocka_unit_test(test_thresholds),
      cmocka_unit_test(test_levels),       cmocka_unit_test(test_service),
      cmocka_unit_test(test_demotable),    cmocka_unit_test(test_starved),
      cmocka_unit_test(test_order),        cmocka_unit_test(test_fair_decay),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
