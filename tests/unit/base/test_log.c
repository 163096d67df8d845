/* Tests for base/log: format, level filter, escaping, redaction, limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "base/log.h"

static char last[8192];
static int nlines;

static void capture(const char *line, void *arg)
{
  (void)arg;
  snprintf(last, sizeof(last), "%s", line);
  nlines++;
}

static int setup(void **state)
{
  (void)state;
  gq_log_set_sink(capture, NULL);
  gq_log_level = GQ_INFO;
  gq_log_clear_secrets();
  last[0] = '\0';
  nlines = 0;
  return 0;
}

static int evaluated;
static int side_effect(void)
{
  evaluated++;
  return 1;
}

static void test_line_shape(void **state)
{
  struct gq_lc lc = {"ctl", "patch", "research/llama"};

  (void)state;
  GQ_LOG(GQ_WARN, &lc, "cannot patch status of '%s': %s", "research/llama",
         gq_strerror(GQ_ECONFLICT));
  assert_int_equal(nlines, 1);
  assert_memory_equal(last, "ts=", 3);
  assert_non_null(strstr(last, " level=warn msg=\"cannot patch status of "
                               "'research/llama': conflict: object was "
                               "modified\" module=ctl action=patch "
                               "key=research/llama"));
  assert_null(strchr(last, '\n'));
}

static void test_level_checked_before_formatting(void **state)
{
  (void)state;
  evaluated = 0;
  GQ_LOG(GQ_DEBUG, NULL, "value %d", side_effect());
  assert_int_equal(evaluated, 0);
  assert_int_equal(nlines, 0);
  gq_log_level = GQ_DEBUG;
  GQ_LOG(GQ_DEBUG, NULL, "value %d", side_effect());
  assert_int_equal(evaluated, 1);
  assert_non_null(strstr(last, "level=debug msg=\"value 1\""));
}

static void test_escaping(void **state)
{
  struct gq_lc lc = {"api", NULL, "a b"};

  (void)state;
  GQ_LOG(GQ_ERROR, &lc, "bad \"json\"\nat \\ 3");
  assert_non_null(strstr(last, "msg=\"bad \\\"json\\\"\\nat \\\\ 3\""));
  assert_non_null(strstr(last, "key=\"a b\""));
  assert_null(strstr(last, "action="));
}

static void test_secrets_redacted(void **state)
{
  (void)state;
  assert_int_equal(gq_log_add_secret("s3cr3t-t0ken-value"), 0);
  assert_int_equal(gq_log_add_secret("ab"), 0); /* too short: ignored */
  GQ_LOG(GQ_INFO, NULL, "GET /api?token=%s failed (ab): %s",
         "s3cr3t-t0ken-value", "Bearer s3cr3t-t0ken-value");
  assert_null(strstr(last, "s3cr3t"));
  assert_non_null(strstr(last, "token=[redacted] failed (ab)"));
  assert_non_null(strstr(last, "Bearer [redacted]"));
}

static void test_parse_level(void **state)
{
  int lvl = -1;

  (void)state;
  assert_int_equal(gq_log_parse_level("warn", &lvl), 0);
  assert_int_equal(lvl, GQ_WARN);
  assert_int_equal(gq_log_parse_level("verbose", &lvl), GQ_EINVAL);
}

static void test_rate_limit(void **state)
{
  struct gq_log_limit lim = {.interval_ms = 3600 * 1000};

  (void)state;
  for (int i = 0; i < 5; i++)
    GQ_LOG_LIMITED(&lim, GQ_WARN, NULL, "redis unreachable");
  assert_int_equal(nlines, 1);
  assert_null(strstr(last, "suppressed"));
  lim._next_ms = 0; /* the interval has passed */
  GQ_LOG_LIMITED(&lim, GQ_WARN, NULL, "redis unreachable");
  assert_int_equal(nlines, 2);
  assert_non_null(strstr(last, "suppressed=4"));
}

static void test_long_message_truncated(void **state)
{
  char big[10000];

  (void)state;
  memset(big, 'x', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  GQ_LOG(GQ_INFO, NULL, "%s", big);
  assert_int_equal(nlines, 1);
  assert_true(strlen(last) < 8192);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_line_shape, setup),
      cmocka_unit_test_setup(test_level_checked_before_formatting, setup),
      cmocka_unit_test_setup(test_escaping, setup),
      cmocka_unit_test_setup(test_secrets_redacted, setup),
      cmocka_unit_test_setup(test_parse_level, setup),
      cmocka_unit_test_setup(test_rate_limit, setup),
      cmocka_unit_test_setup(test_long_message_truncated, setup),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);

  gq_log_clear_secrets();
  return rc;
}
