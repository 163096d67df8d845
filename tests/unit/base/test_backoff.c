/* Tests for base/backoff: growth, cap, jitter bounds, reset, Retry-After. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "base/backoff.h"

static void test_no_jitter_doubles_to_cap(void **state)
{
  static const uint64_t want[] = {800, 1600, 3200, 6400, 12800,
                                  25600, 30000, 30000, 30000};
  struct gq_backoff b;

  (void)state;
  gq_backoff_init(&b, 800, 30000, 2.0, 0.0, 1);
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    assert_int_equal(gq_backoff_next(&b), want[i]);
  gq_backoff_reset(&b);
  assert_int_equal(gq_backoff_next(&b), 800);
}

static void test_jitter_stays_in_bounds(void **state)
{
  struct gq_backoff b;
  uint64_t lo = UINT64_MAX, hi = 0;

  (void)state;
  /* client-go reflector parameters: step in [step, 2*step). */
  for (uint64_t seed = 1; seed <= 2000; seed++) {
    uint64_t d;

    gq_backoff_init(&b, 800, 30000, 2.0, 1.0, seed);
    d = gq_backoff_next(&b);
    assert_true(d >= 800 && d < 1600);
    lo = d < lo ? d : lo;
    hi = d > hi ? d : hi;
  }
  /* 2000 draws spread over most of the interval. */
  assert_true(lo < 900);
  assert_true(hi > 1500);
}

static void test_many_attempts_saturate(void **state)
{
  struct gq_backoff b;

  (void)state;
  gq_backoff_init(&b, 5, 1000000, 10.0, 0.5, 7);
  for (int i = 0; i < 1000; i++) {
    uint64_t d = gq_backoff_next(&b);

    assert_true(d >= 5 && d <= 1500000);
  }
}

static void test_retry_after_floor(void **state)
{
  struct gq_backoff b;

  (void)state;
  gq_backoff_init(&b, 100, 1000, 2.0, 0.0, 1);
  assert_int_equal(gq_backoff_next_at_least(&b, 5000), 5000);
  assert_int_equal(gq_backoff_next_at_least(&b, 10), 200);
}

static void test_bad_parameters_clamped(void **state)
{
  struct gq_backoff b;

  (void)state;
  gq_backoff_init(&b, 0, 0, 0.5, -1.0, 3);
  assert_int_equal(gq_backoff_next(&b), 1);
  assert_int_equal(gq_backoff_next(&b), 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_jitter_doubles_to_cap),
      cmocka_unit_test(test_jitter_stays_in_bounds),
      cmocka_unit_test(test_many_attempts_saturate),
      cmocka_unit_test(test_retry_after_floor),
      cmocka_unit_test(test_bad_parameters_clamped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
