/* Tests for decide/position: the queue position policy (exact for the
 * first exact_k of a team, coarse beyond) and what it costs in writes as a
 * long queue drains. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "decide/position.h"

#define K GQ_POSITION_EXACT

static void test_exact_head(void **state)
{
  (void)state;
  assert_int_equal(gq_position_due(0, 1, K), 1);  /* first write */
  assert_int_equal(gq_position_due(0, 5000, K), 1);
  assert_int_equal(gq_position_due(3, 2, K), 1);  /* moved by one */
  assert_int_equal(gq_position_due(2, 2, K), 0);
  assert_int_equal(gq_position_due(K, K - 1, K), 1);
  assert_int_equal(gq_position_due(K + 1, K, K), 1); /* enters the head */
  assert_int_equal(gq_position_due(130, K, K), 1);
  assert_int_equal(gq_position_due(K, K + 1, K), 1); /* pushed out of it */
  assert_int_equal(gq_position_due(5, 0, K), 0); /* not queued */
}

static void test_coarse_tail(void **state)
{
  (void)state;
  assert_int_equal(gq_position_due(1000, 999, K), 0);
  assert_int_equal(gq_position_due(1000, 750, K), 0); /* exactly a quarter */
  assert_int_equal(gq_position_due(1000, 749, K), 1);
  assert_int_equal(gq_position_due(1000, 1250, K), 0);
  assert_int_equal(gq_position_due(1000, 1251, K), 1); /* jobs put ahead */
  assert_int_equal(gq_position_due(200, 151, K), 0);
  assert_int_equal(gq_position_due(200, 149, K), 1);
}

/* A queue of n jobs drains from the head one admission at a time, each
 * job's status rewritten whenever the policy says so: the head K cost
 * about K writes per admission, the tail a few (about 4 ln(n/K)), and every
 * job shows its exact place once it is in the head. */
static void test_drain_cost(void **state)
{
  enum { N = 5000 };
  int64_t *shown = calloc(N, sizeof(*shown));
  long long tail_writes = 0, head_writes = 0;
  int64_t admissions = 0;

  (void)state;
  assert_non_null(shown);
  for (int64_t a = 0; a < N - K; a++, admissions++) {
    /* after a admissions, job j (0-based arrival) is at place j - a + 1 */
    for (int64_t j = a; j < N; j++) {
      int64_t place = j - a + 1;

      if (gq_position_due(shown[j], place, K)) {
        shown[j] = place;
        if (place <= K)
          head_writes++;
        else
          tail_writes++;
      }
      if (place <= K)
        assert_int_equal(shown[j], place);
      else
        assert_true(4 * llabs(shown[j] - place) <= shown[j]);
    }
  }
  /* the first pass writes every job once (N); after that the tail costs
   * about 4 ln(50) = 16 per admission, far from the N - K a fully exact
   * queue would cost */
  assert_true((tail_writes - N) / admissions <= 20);
  assert_true((tail_writes - N) / admissions >= 5);
  assert_true(head_writes / admissions <= K);
  free(shown);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exact_head),
      cmocka_unit_test(test_coarse_tail),
      cmocka_unit_test(test_drain_cost),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
