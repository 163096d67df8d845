/* Tests for base/duration: HumanDuration at every boundary. The expected
 * strings are those of k8s.io/apimachinery/pkg/util/duration's
 * TestHumanDuration and TestHumanDurationBoundaries, converted from Go
 * Durations to milliseconds, plus the buffer-size edge cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/duration.h"
#include "base/err.h"

#define S INT64_C(1000)
#define MIN (60 * S)
#define H (60 * MIN)
#define D (24 * H)
#define Y (365 * D)

struct duration_case {
  int64_t ms;
  const char *want;
};

static const struct duration_case cases[] = {
    /* negative: up to 2 s of clock skew reads as "now" */
    {INT64_MIN, "<invalid>"},
    {-3 * S, "<invalid>"},
    {-2 * S, "<invalid>"},
    {-2 * S + 1, "0s"},
    {-1 * S, "0s"},
    {-1, "0s"},
    /* seconds, up to 119 */
    {0, "0s"},
    {S - 1, "0s"},
    {S, "1s"},
    {70 * S, "70s"},
    {119 * S, "119s"},
    {2 * MIN - 1, "119s"},
    /* minutes with seconds, below 10 minutes */
    {2 * MIN, "2m"},
    {2 * MIN + S, "2m1s"},
    {190 * S, "3m10s"},
    {5 * MIN + 30 * S, "5m30s"},
    {9 * MIN + 59 * S, "9m59s"},
    {10 * MIN - 1, "9m59s"},
    /* minutes only, below 3 hours */
    {10 * MIN, "10m"},
    {10 * MIN + S, "10m"},
    {70 * MIN, "70m"},
    {2 * H + 59 * MIN, "179m"},
    {3 * H - 1, "179m"},
    /* hours with minutes, below 8 hours */
    {3 * H, "3h"},
    {3 * H + MIN, "3h1m"},
    {7 * H + 59 * MIN, "7h59m"},
    {8 * H - 1, "7h59m"},
    /* hours only, below 2 days */
    {8 * H, "8h"},
    {8 * H + 59 * MIN, "8h"},
    {47 * H, "47h"},
    {2 * D - 1, "47h"},
    /* days with hours, below 8 days */
    {48 * H, "2d"},
    {49 * H, "2d1h"},
    {7 * D + 23 * H, "7d23h"},
    {8 * D - 1, "7d23h"},
    /* days only, below 2 years */
    {8 * D, "8d"},
    {8 * D + 2 * H, "8d"},
    {8 * D + 23 * H, "8d"},
    {367 * D, "367d"},
    {729 * D, "729d"},
    {2 * Y - 1, "729d"},
    /* years with days, below 8 years */
    {730 * D, "2y"},
    {2 * Y + 23 * H + 59 * MIN, "2y"},
    {2 * Y + D - 1, "2y"},
    {2 * Y + D, "2y1d"},
    {2 * Y + 25 * H, "2y1d"},
    {3 * Y, "3y"},
    {7 * Y, "7y"},
    {8 * Y - 1, "7y364d"},
    /* years only */
    {8 * Y, "8y"},
    {8 * Y + 2 * H, "8y"},
    {8 * Y + 364 * D, "8y"},
    {9 * Y, "9y"},
    {INT64_MAX, "292471208y"},
};

static void test_human_duration_table(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char buf[GQ_HUMAN_DURATION_LEN];
    int rc = gq_human_duration(cases[i].ms, buf, sizeof(buf));

    if (rc < 0 || strcmp(buf, cases[i].want) != 0)
      fail_msg("case %zu (%lld ms): got rc %d '%s', want '%s'", i,
               (long long)cases[i].ms, rc, rc < 0 ? "" : buf, cases[i].want);
    assert_int_equal(rc, (int)strlen(cases[i].want));
  }
}

struct bufsize_case {
  int64_t ms;
  size_t len;
  int want_rc;
  const char *want;
};

static const struct bufsize_case bufsize_cases[] = {
    {5 * MIN + 30 * S, 6, 5, "5m30s"}, /* exact fit: 5 chars + NUL */
    {5 * MIN + 30 * S, 5, GQ_ETOOBIG, ""},
    {-5 * S, 10, 9, "<invalid>"},
    {-5 * S, 9, GQ_ETOOBIG, ""},
    {0, 1, GQ_ETOOBIG, ""},
};

static void test_human_duration_buffer_size(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < sizeof(bufsize_cases) / sizeof(bufsize_cases[0]); i++) {
    const struct bufsize_case *c = &bufsize_cases[i];
    char buf[GQ_HUMAN_DURATION_LEN];

    memset(buf, 'x', sizeof(buf));
    assert_int_equal(gq_human_duration(c->ms, buf, c->len), c->want_rc);
    assert_string_equal(buf, c->want);
  }
}

static void test_human_duration_bad_args(void **state)
{
  char buf[1] = {'x'};

  (void)state;
  assert_int_equal(gq_human_duration(0, NULL, 10), GQ_EINVAL);
  /* len 0 writes nothing at all. */
  assert_int_equal(gq_human_duration(0, buf, 0), GQ_ETOOBIG);
  assert_int_equal(buf[0], 'x');
}

static const struct {
  const char *in;
  int want_rc;
  int64_t want_ms;
} parse_cases[] = {
    {"90s", 0, 90 * S},
    {"30m", 0, 30 * MIN},
    {"2h", 0, 2 * H},
    {"1h30m", 0, 90 * MIN},
    {"1.5h", 0, 90 * MIN},
    {".5s", 0, 500},
    {"250ms", 0, 250},
    {"1m1ms", 0, MIN + 1},
    {"7d", 0, 7 * D},
    {"0s", 0, 0},
    {"1.15s", 0, 1150},
    {"36500d", 0, 100 * Y},
    {"36501d", GQ_EOVERFLOW, 0},
    {"99999999999999999999999h", GQ_EOVERFLOW, 0},
    {"", GQ_EPARSE, 0},
    {"90", GQ_EPARSE, 0},
    {"s", GQ_EPARSE, 0},
    {"1h 30m", GQ_EPARSE, 0},
    {" 1h", GQ_EPARSE, 0},
    {"-1h", GQ_EPARSE, 0},
    {"+1h", GQ_EPARSE, 0},
    {"1e3s", GQ_EPARSE, 0},
    {"1w", GQ_EPARSE, 0},
    {"1.h", 0, H},
    {".h", GQ_EPARSE, 0},
    {"infs", GQ_EPARSE, 0},
    {"1hx", GQ_EPARSE, 0},
};

static void test_duration_parse(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
    int64_t ms = -7;
    int rc = gq_duration_parse(parse_cases[i].in, &ms);

    if (rc != parse_cases[i].want_rc)
      fail_msg("'%s': rc %d, want %d", parse_cases[i].in, rc,
               parse_cases[i].want_rc);
    if (rc == 0 && ms != parse_cases[i].want_ms)
      fail_msg("'%s': %lld ms, want %lld", parse_cases[i].in, (long long)ms,
               (long long)parse_cases[i].want_ms);
    if (rc != 0 && ms != -7)
      fail_msg("'%s': *ms changed on error", parse_cases[i].in);
  }
  assert_int_equal(gq_duration_parse(NULL, NULL), GQ_EPARSE);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_human_duration_table),
      cmocka_unit_test(test_human_duration_buffer_size),
      cmocka_unit_test(test_human_duration_bad_args),
      cmocka_unit_test(test_duration_parse),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
