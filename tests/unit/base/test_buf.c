/* Tests for base/buf: capped growth, failure frees, framing helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "base/err.h"

static void test_append_and_str(void **state)
{
  struct gq_buf b;

  (void)state;
  gq_buf_init(&b, 16);
  assert_string_equal(gq_buf_str(&b), "");
  assert_int_equal(gq_buf_puts(&b, "abc"), 0);
  assert_int_equal(gq_buf_printf(&b, "-%d-", 42), 0);
  assert_string_equal(gq_buf_str(&b), "abc-42-");
  assert_int_equal(b.len, 7);
  gq_buf_release(&b);
}

static void test_cap_exact_fits(void **state)
{
  struct gq_buf b;

  (void)state;
  gq_buf_init(&b, 8);
  assert_int_equal(gq_buf_append(&b, "12345678", 8), 0);
  assert_int_equal(b.len, 8);
  assert_string_equal(gq_buf_str(&b), "12345678");
  gq_buf_release(&b);
}

static void test_over_cap_fails_and_frees(void **state)
{
  struct gq_buf b;

  (void)state;
  gq_buf_init(&b, 8);
  assert_int_equal(gq_buf_puts(&b, "12345"), 0);
  assert_int_equal(gq_buf_puts(&b, "6789"), GQ_ETOOBIG);
  assert_null(b.data);
  assert_int_equal(b.len, 0);
  /* The cap is kept: the buffer is usable again. */
  assert_int_equal(gq_buf_printf(&b, "%s", "123456789"), GQ_ETOOBIG);
  assert_int_equal(gq_buf_puts(&b, "ok"), 0);
  assert_string_equal(gq_buf_str(&b), "ok");
  gq_buf_release(&b);
}

static void test_huge_length_does_not_wrap(void **state)
{
  struct gq_buf b;

  (void)state;
  gq_buf_init(&b, 64);
  assert_int_equal(gq_buf_puts(&b, "x"), 0);
  assert_int_equal(gq_buf_append(&b, "y", (size_t)-1), GQ_ETOOBIG);
  assert_null(b.data);
}

static void test_consume_and_take(void **state)
{
  struct gq_buf b;
  char *s;

  (void)state;
  gq_buf_init(&b, 1024);
  assert_int_equal(gq_buf_puts(&b, "line1\nline2"), 0);
  gq_buf_consume(&b, 6);
  assert_string_equal(gq_buf_str(&b), "line2");
  gq_buf_consume(&b, 100);
  assert_int_equal(b.len, 0);
  assert_int_equal(gq_buf_puts(&b, "kept"), 0);
  s = gq_buf_take(&b);
  assert_string_equal(s, "kept");
  assert_null(b.data);
  free(s);
  s = gq_buf_take(&b);
  assert_string_equal(s, "");
  free(s);
}

static void test_growth_many_appends(void **state)
{
  struct gq_buf b;

  (void)state;
  gq_buf_init(&b, 100000);
  for (int i = 0; i < 10000; i++)
    assert_int_equal(gq_buf_puts(&b, "0123456789"), 0);
  assert_int_equal(b.len, 100000);
  assert_int_equal(gq_buf_puts(&b, "!"), GQ_ETOOBIG);
  gq_buf_release(&b);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_append_and_str),
      cmocka_unit_test(test_cap_exact_fits),
      cmocka_unit_test(test_over_cap_fails_and_frees),
      cmocka_unit_test(test_huge_length_does_not_wrap),
      cmocka_unit_test(test_consume_and_take),
      cmocka_unit_test(test_growth_many_appends),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
