/* tests/unit/decide/test_usage.c - allocated, used and idle GPU-seconds,
 * the window mean and the idle stretch (decide/usage.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "decide/usage.h"

#define S 1000 /* ms per second */

/* 4 GPUs for 100 s at 50%, readings every 10 s: 400 GPU-s allocated, 200
 * used, none idle. */
static void test_constant(void **state)
{
  struct gq_usage u = {0};

  (void)state;
  gq_usage_start(&u, 1000 * S);
  for (int i = 1; i <= 10; i++)
    gq_usage_reading(&u, (1000 + 10 * i) * S, 4, 50, 10, 60 * S);
  gq_usage_stop(&u, 1100 * S, 4, 10);
  assert_true(u.alloc_s > 399.99 && u.alloc_s < 400.01);
  assert_true(u.used_s > 199.99 && u.used_s < 200.01);
  assert_true(u.idle_s < 0.001);
  assert_int_equal(u.run_from_ms, 0);
}

/* Busy 90% for 30 s, idle 2% for 60 s: idle GPU-seconds are the idle
 * intervals; the stretch runs from the first idle interval's start. */
static void test_idle_stretch(void **state)
{
  struct gq_usage u = {0};

  (void)state;
  gq_usage_start(&u, 10 * S);
  gq_usage_reading(&u, 40 * S, 2, 90, 10, 60 * S);
  assert_int_equal(gq_usage_idle_ms(&u, 40 * S), 0);
  gq_usage_reading(&u, 70 * S, 2, 2, 10, 60 * S);
  gq_usage_reading(&u, 100 * S, 2, 2, 10, 60 * S);
  assert_int_equal(gq_usage_idle_ms(&u, 100 * S), 60 * S);
  assert_true(u.idle_s > 119.99 && u.idle_s < 120.01);
  /* used: 2 x 30 x 0.9 + 2 x 60 x 0.02 = 54 + 2.4 */
  assert_true(u.used_s > 56.39 && u.used_s < 56.41);
  /* a busy reading ends the stretch */
  gq_usage_reading(&u, 110 * S, 2, 80, 10, 60 * S);
  assert_int_equal(gq_usage_idle_ms(&u, 110 * S), 0);
}

/* An unknown reading or a gap longer than max_gap counts as allocated
 * only; the tail after the last reading counts at it. */
static void test_unknown_and_gap(void **state)
{
  struct gq_usage u = {0};

  (void)state;
  gq_usage_start(&u, 0);
  gq_usage_reading(&u, 10 * S, 1, -1, 10, 60 * S); /* unknown */
  gq_usage_reading(&u, 20 * S, 1, 100, 10, 60 * S); /* counts 10 s */
  gq_usage_reading(&u, 200 * S, 1, 100, 10, 60 * S); /* gap 180 s: no */
  gq_usage_stop(&u, 210 * S, 1, 10);                 /* tail 10 s at 100 */
  assert_true(u.used_s > 19.99 && u.used_s < 20.01);
  /* start(0) counts from 1 ms: 210 s less 1 ms */
  assert_true(u.alloc_s > 209.99 && u.alloc_s < 210.01);
  assert_true(gq_usage_alloc_at(&u, 999 * S, 1) == u.alloc_s);
}

/* The window mean is time-weighted and forgets readings older than the
 * window; none in the window is unknown. */
static void test_window_mean(void **state)
{
  struct gq_usage u = {0};

  (void)state;
  assert_int_equal(gq_usage_mean(&u, 100 * S, 300 * S), -1);
  gq_usage_start(&u, 100 * S);
  gq_usage_reading(&u, 130 * S, 1, 100, 10, 60 * S); /* 30 s at 100 */
  gq_usage_reading(&u, 140 * S, 1, 0, 10, 60 * S);   /* 10 s at 0 */
  assert_int_equal(gq_usage_mean(&u, 140 * S, 300 * S), 75);
  /* a 20 s window sees 10 s of the first and 10 s of the second */
  assert_int_equal(gq_usage_mean(&u, 140 * S, 20 * S), 50);
  assert_int_equal(gq_usage_mean(&u, 1000 * S, 300 * S), -1);
  /* more readings than the ring holds: still bounded and right */
  for (int i = 1; i <= 3 * GQ_USAGE_RING; i++)
    gq_usage_reading(&u, (140 + i) * S, 1, 40, 10, 60 * S);
  assert_int_equal(gq_usage_mean(&u, (140 + 3 * GQ_USAGE_RING) * S, 10 * S),
                   40);
  assert_true(gq_usage_alloc_at(&u, 200 * S, 1) > 99.99);
}

/* Two runs: allocation adds up, the second run starts with no reading. */
static void test_two_runs(void **state)
{
  struct gq_usage u = {0};

  (void)state;
  gq_usage_start(&u, 10 * S);
  gq_usage_reading(&u, 20 * S, 8, 5, 10, 60 * S);
  gq_usage_stop(&u, 30 * S, 8, 10); /* 20 s x 8, tail idle too */
  assert_true(u.idle_s > 159.99 && u.idle_s < 160.01);
  gq_usage_start(&u, 100 * S);
  gq_usage_start(&u, 150 * S); /* already running: no-op */
  assert_int_equal(u.last_pct, -1);
  gq_usage_stop(&u, 110 * S, 8, 10); /* no reading: allocation only */
  assert_true(u.alloc_s > 239.99 && u.alloc_s < 240.01);
  assert_true(u.idle_s > 159.99 && u.idle_s < 160.01);
  gq_usage_stop(&u, 120 * S, 8, 10); /* not running: no-op */
  assert_true(u.alloc_s < 240.01);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_constant),
      cmocka_unit_test(test_idle_stretch),
      cmocka_unit_test(test_unknown_and_gap),
      cmocka_unit_test(test_window_mean),
      cmocka_unit_test(test_two_runs),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
