/* Tests for decide/names: Go's strconv.ParseBool as kube-apiserver reads
 * boolean query parameters (issue 24: the official Python client sends
 * watch=True), and strconv.ParseInt. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "decide/names.h"

static void test_parse_bool(void **state)
{
  static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
  static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
  static const char *const bad[] = {"", "yes", "tRUE", "truee", " true",
                                    "2", "on"};
  int b;

  (void)state;
  for (size_t i = 0; i < 6; i++) {
    b = 0;
    assert_int_equal(gq_parse_bool(yes[i], &b), 0);
    assert_int_equal(b, 1);
    assert_int_equal(gq_parse_bool(no[i], &b), 0);
    assert_int_equal(b, 0);
  }
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    b = 7;
    assert_int_equal(gq_parse_bool(bad[i], &b), -1);
    assert_int_equal(b, 7);
  }
}

static void test_parse_int64(void **state)
{
  int64_t v;

  (void)state;
  assert_int_equal(gq_parse_int64("-9223372036854775808", &v), 0);
  assert_true(v == INT64_MIN);
  assert_int_equal(gq_parse_int64("9223372036854775808", &v), -1);
  assert_int_equal(gq_parse_int64("+12", &v), 0);
  assert_int_equal(v, 12);
  assert_int_equal(gq_parse_int64("1_0", &v), -1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_bool),
      cmocka_unit_test(test_parse_int64),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
