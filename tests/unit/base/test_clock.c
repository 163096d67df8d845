/* Tests for base/clock: virtual time, delays, flag parsing, RFC 3339. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/err.h"

static void test_virtual_time(void **state)
{
  struct gq_clock c = {60.0, 1700000000000LL};

  (void)state;
  assert_int_equal(gq_clock_to_virtual(&c, c.epoch_ms), c.epoch_ms);
  /* One real second is a virtual minute. */
  assert_int_equal(gq_clock_to_virtual(&c, c.epoch_ms + 1000),
                   c.epoch_ms + 60000);
  assert_int_equal(gq_clock_to_real(&c, c.epoch_ms + 60000),
                   c.epoch_ms + 1000);
  /* Before the epoch it runs backwards just as fast. */
  assert_int_equal(gq_clock_to_virtual(&c, c.epoch_ms - 10),
                   c.epoch_ms - 600);
}

static void test_delay_rounds_up(void **state)
{
  struct gq_clock c = {1000.0, 0};
  struct gq_clock one = {1.0, 0};

  (void)state;
  /* A 300 s grace period at 1000x is 300 ms of real time. */
  assert_int_equal(gq_clock_delay(&c, 300000), 300);
  assert_int_equal(gq_clock_delay(&c, 1), 1);
  assert_int_equal(gq_clock_delay(&c, 0), 0);
  assert_int_equal(gq_clock_delay(&c, -5), 0);
  assert_int_equal(gq_clock_delay(&one, 1234), 1234);
}

static void test_parse_flags(void **state)
{
  static const struct {
    const char *scale, *epoch;
    int want_rc;
    double want_scale;
    int64_t want_epoch_ms;
    const char *want_err;
  } cases[] = {
      {"100", "1700000000", 0, 100.0, 1700000000000LL, NULL},
      {"0.5", "0", 0, 0.5, 0, NULL},
      {NULL, "12", 0, 1.0, 12000, NULL},
      {"0", "1", GQ_EINVAL, 0, 0, "--time-scale: must be a number in"},
      {"-3", "1", GQ_EINVAL, 0, 0, "got '-3'"},
      {"fast", "1", GQ_EINVAL, 0, 0, "got 'fast'"},
      {"2e9", "1", GQ_EINVAL, 0, 0, "--time-scale"},
      {"2", "soon", GQ_EINVAL, 0, 0, "--time-epoch: must be Unix seconds"},
      {"2", "-1", GQ_EINVAL, 0, 0, "got '-1'"},
      {"2", "99999999999999999999", GQ_EINVAL, 0, 0, "--time-epoch"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gq_clock c = {0};
    char err[128] = "";
    int rc = gq_clock_parse(&c, cases[i].scale, cases[i].epoch, err,
                            sizeof(err));

    assert_int_equal(rc, cases[i].want_rc);
    if (rc == 0) {
      assert_true(c.scale == cases[i].want_scale);
      assert_int_equal(c.epoch_ms, cases[i].want_epoch_ms);
    } else if (!strstr(err, cases[i].want_err)) {
      fail_msg("case %zu: error '%s' lacks '%s'", i, err, cases[i].want_err);
    }
  }
}

static void test_default_epoch_is_now(void **state)
{
  struct gq_clock c;
  char err[64];
  int64_t before = gq_clock_real_ms();

  (void)state;
  assert_int_equal(gq_clock_parse(&c, "10", NULL, err, sizeof(err)), 0);
  assert_true(c.epoch_ms >= before && c.epoch_ms <= gq_clock_real_ms());
}

static void test_process_clock(void **state)
{
  struct gq_clock c = {1000.0, gq_clock_real_ms() - 1000};
  struct gq_clock one = {1.0, 0};
  int64_t now;

  (void)state;
  gq_clock_set(&c);
  now = gq_clock_now_ms();
  /* One real second since the epoch is about 1000 virtual seconds. */
  assert_true(now - c.epoch_ms >= 1000000 && now - c.epoch_ms < 1100000);
  assert_int_equal(gq_clock_real_delay_ms(60000), 60);
  gq_clock_set(&one);
  assert_true(gq_clock_get()->scale == 1.0);
}

static void test_format(void **state)
{
  char buf[40];

  (void)state;
  assert_int_equal(gq_time_format(1700000000123LL, buf, sizeof(buf)), 20);
  assert_string_equal(buf, "2023-11-14T22:13:20Z");
  assert_int_equal(gq_time_format_micro(1700000000123LL, buf, sizeof(buf)), 27);
  assert_string_equal(buf, "2023-11-14T22:13:20.123000Z");
  assert_int_equal(gq_time_format(-1, buf, sizeof(buf)), 20);
  assert_string_equal(buf, "1969-12-31T23:59:59Z");
  assert_int_equal(gq_time_format(0, buf, 20), GQ_ETOOBIG);
}

static void test_parse(void **state)
{
  static const struct {
    const char *in;
    int want_rc;
    int64_t want_ms;
  } cases[] = {
      {"2023-11-14T22:13:20Z", 0, 1700000000000LL},
      {"2023-11-14T22:13:20.123Z", 0, 1700000000123LL},
      {"2023-11-14T22:13:20.123456789Z", 0, 1700000000123LL},
      {"2023-11-14T22:13:20.5Z", 0, 1700000000500LL},
      {"2023-11-15T00:13:20+02:00", 0, 1700000000000LL},
      {"2023-11-14T20:13:20-02:00", 0, 1700000000000LL},
      {"1970-01-01T00:00:00Z", 0, 0},
      {"2023-11-14 22:13:20Z", GQ_EPARSE, 0},
      {"2023-11-14T22:13:20", GQ_EPARSE, 0},
      {"2023-13-14T22:13:20Z", GQ_EPARSE, 0},
      {"2023-11-14T22:13:20.Z", GQ_EPARSE, 0},
      {"2023-11-14T22:13:20Zjunk", GQ_EPARSE, 0},
      {"2023-11-14T22:13:20+2:00", GQ_EPARSE, 0},
      {"", GQ_EPARSE, 0},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    int64_t ms = -1;
    int rc = gq_time_parse(cases[i].in, &ms);

    if (rc != cases[i].want_rc)
      fail_msg("'%s': rc %d want %d", cases[i].in, rc, cases[i].want_rc);
    if (rc == 0 && ms != cases[i].want_ms)
      fail_msg("'%s': got %lld want %lld", cases[i].in, (long long)ms,
               (long long)cases[i].want_ms);
  }
}

static void test_round_trip(void **state)
{
  char buf[40];
  int64_t ms;

  (void)state;
  for (int64_t t = 0; t < 4000000000000LL; t += 123456789123LL) {
    assert_true(gq_time_format_micro(t, buf, sizeof(buf)) > 0);
    assert_int_equal(gq_time_parse(buf, &ms), 0);
    assert_int_equal(ms, t);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_virtual_time),
      cmocka_unit_test(test_delay_rounds_up),
      cmocka_unit_test(test_parse_flags),
      cmocka_unit_test(test_default_epoch_is_now),
      cmocka_unit_test(test_process_clock),
      cmocka_unit_test(test_format),
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
