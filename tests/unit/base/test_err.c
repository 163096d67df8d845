/* Tests for base/err: the table is complete and distinct. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"

static void test_every_code_has_text(void **state)
{
  (void)state;
  for (int e = GQ__EBASE + 1; e < GQ__EMAX; e++) {
    assert_true(e < -4096);
    assert_string_not_equal(gq_strerror(e), "unknown error");
    assert_string_not_equal(gq_err_name(e), "EUNKNOWN");
    for (int f = e + 1; f < GQ__EMAX; f++)
      assert_string_not_equal(gq_strerror(e), gq_strerror(f));
  }
}

static void test_named_codes(void **state)
{
  (void)state;
  assert_string_equal(gq_strerror(GQ_EGONE), "resource version expired");
  assert_string_equal(gq_err_name(GQ_ETOOBIG), "ETOOBIG");
  assert_string_equal(gq_strerror(0), "success");
  assert_string_equal(gq_err_name(0), "OK");
}

static void test_errno_passthrough(void **state)
{
  (void)state;
  assert_string_equal(gq_strerror(-ENOENT), strerror(ENOENT));
  assert_string_equal(gq_err_name(-ECONNREFUSED), "ECONNREFUSED");
  assert_string_equal(gq_strerror(5), "unknown error");
  assert_string_equal(gq_strerror(GQ__EMAX), "unknown error");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_code_has_text),
      cmocka_unit_test(test_named_codes),
      cmocka_unit_test(test_errno_passthrough),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
