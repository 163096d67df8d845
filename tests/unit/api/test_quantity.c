/* Tests for api/quantity: every suffix, rounding up, negatives, overflow,
 * malformed strings, JSON values and formatting. Expected values follow
 * k8s.io/apimachinery resource.Quantity Value()/MilliValue(), except where
 * api/quantity.h documents a deliberate difference (negatives round toward
 * +inf, overflow is an error). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/quantity.h"
#include "base/err.h"

#define SENTINEL INT64_C(-777)

struct quantity_case {
  const char *in;
  int want_rc; /* gq_quantity_parse */
  int64_t want;
  int want_milli_rc; /* gq_quantity_parse_milli */
  int64_t want_milli;
};

#define OVF GQ_EOVERFLOW
#define BAD GQ_EPARSE

static const struct quantity_case cases[] = {
    /* plain numbers and rounding up */
    {"0", 0, 0, 0, 0},
    {"8", 0, 8, 0, 8000},
    {"1.5", 0, 2, 0, 1500},
    {"0.1", 0, 1, 0, 100},
    {".5", 0, 1, 0, 500},
    {"5.", 0, 5, 0, 5000},
    {"+5", 0, 5, 0, 5000},
    {"007", 0, 7, 0, 7000},
    {"00000000000000000000000001", 0, 1, 0, 1000},
    {"1.0000000000000000000000001", 0, 2, 0, 1001},
    {"0.000000001", 0, 1, 0, 1},
    /* decimal SI suffixes */
    {"1n", 0, 1, 0, 1},
    {"1000000n", 0, 1, 0, 1},
    {"1000001n", 0, 1, 0, 2},
    {"1u", 0, 1, 0, 1},
    {"1500000u", 0, 2, 0, 1500},
    {"500m", 0, 1, 0, 500},
    {"1000m", 0, 1, 0, 1000},
    {"1001m", 0, 2, 0, 1001},
    {"1500m", 0, 2, 0, 1500},
    {"2k", 0, 2000, 0, 2000000},
    {"1M", 0, 1000000, 0, 1000000000},
    {"3G", 0, INT64_C(3000000000), 0, INT64_C(3000000000000)},
    {"1T", 0, INT64_C(1000000000000), 0, INT64_C(1000000000000000)},
    {"1P", 0, INT64_C(1000000000000000), 0, INT64_C(1000000000000000000)},
    {"1E", 0, INT64_C(1000000000000000000), OVF, 0},
    {"9E", 0, INT64_C(9000000000000000000), OVF, 0},
    {"10E", OVF, 0, OVF, 0},
    /* binary SI suffixes */
    {"2Ki", 0, 2048, 0, 2048000},
    {"0.5Ki", 0, 512, 0, 512000},
    {"0.001Ki", 0, 2, 0, 1024},
    {"0.0001Ki", 0, 1, 0, 103},
    {"1Mi", 0, 1048576, 0, 1048576000},
    {"1.5Gi", 0, 1610612736, 0, INT64_C(1610612736000)},
    {"16Gi", 0, INT64_C(17179869184), 0, INT64_C(17179869184000)},
    {"1Ti", 0, INT64_C(1099511627776), 0, INT64_C(1099511627776000)},
    {"1Pi", 0, INT64_C(1125899906842624), 0, INT64_C(1125899906842624000)},
    {"1Ei", 0, INT64_C(1152921504606846976), OVF, 0},
    {"1.5Ei", 0, INT64_C(1729382256910270464), OVF, 0},
    {"7Ei", 0, INT64_C(8070450532247928832), OVF, 0},
    {"8Ei", OVF, 0, OVF, 0},
    {"100Ei", OVF, 0, OVF, 0},
    {"0Ki", 0, 0, 0, 0},
    /* decimal exponents */
    {"1e3", 0, 1000, 0, 1000000},
    {"1E3", 0, 1000, 0, 1000000},
    {"1.5e1", 0, 15, 0, 15000},
    {"2e+2", 0, 200, 0, 200000},
    {"1e-3", 0, 1, 0, 1},
    {"5e-10", 0, 1, 0, 1},
    {"-5e-10", 0, 0, 0, 0},
    {"1e18", 0, INT64_C(1000000000000000000), OVF, 0},
    {"1e19", OVF, 0, OVF, 0},
    {"0e99999999999", 0, 0, 0, 0},
    {"1e99999999999", OVF, 0, OVF, 0},
    {"1e-99999999999", 0, 1, 0, 1},
    {"1e9223372036854775807", OVF, 0, OVF, 0},
    {"1e-9223372036854775808", 0, 1, 0, 1},
    {"1e99999999999999999999", BAD, 0, BAD, 0},
    /* negatives: rounding up is toward +inf */
    {"-0", 0, 0, 0, 0},
    {"-1", 0, -1, 0, -1000},
    {"-1500m", 0, -1, 0, -1500},
    {"-1.5", 0, -1, 0, -1500},
    {"-0.1", 0, 0, 0, -100},
    {"-1n", 0, 0, 0, 0},
    {"-1000001n", 0, 0, 0, -1},
    {"-2Ki", 0, -2048, 0, -2048000},
    /* int64 edges */
    {"9223372036854775807", 0, INT64_MAX, OVF, 0},
    {"9223372036854775808", OVF, 0, OVF, 0},
    {"9999999999999999999", OVF, 0, OVF, 0},
    {"99999999999999999999999", OVF, 0, OVF, 0},
    {"-9223372036854775808", 0, INT64_MIN, OVF, 0},
    {"-9223372036854775809", OVF, 0, OVF, 0},
    {"9223372036854775807m", 0, INT64_C(9223372036854776), 0, INT64_MAX},
    {"-9223372036854775808m", 0, INT64_C(-9223372036854775), 0, INT64_MIN},
    {"9223372036854775806001m", 0, INT64_MAX, OVF, 0},
    {"9223372036854775807001m", OVF, 0, OVF, 0},
    {"9223372036854775807.5", OVF, 0, OVF, 0},
    {"-9223372036854775808.5", 0, INT64_MIN, OVF, 0},
    /* malformed */
    {"", BAD, 0, BAD, 0},
    {"1.2.3", BAD, 0, BAD, 0},
    {"5X", BAD, 0, BAD, 0},
    {"Ki", BAD, 0, BAD, 0},
    {"-Ki", BAD, 0, BAD, 0},
    {" 5", BAD, 0, BAD, 0},
    {"5 ", BAD, 0, BAD, 0},
    {"1e", BAD, 0, BAD, 0},
    {"1e+", BAD, 0, BAD, 0},
    {"1e3.5", BAD, 0, BAD, 0},
    {"1e 3", BAD, 0, BAD, 0},
    {"1K", BAD, 0, BAD, 0},
    {"1ki", BAD, 0, BAD, 0},
    {"1kk", BAD, 0, BAD, 0},
    {"1Kii", BAD, 0, BAD, 0},
    {"1Ki5", BAD, 0, BAD, 0},
    {"1mi", BAD, 0, BAD, 0},
    {"--1", BAD, 0, BAD, 0},
    {"+", BAD, 0, BAD, 0},
    {"-", BAD, 0, BAD, 0},
    {".", BAD, 0, BAD, 0},
    {"0x10", BAD, 0, BAD, 0},
    {"1_000", BAD, 0, BAD, 0},
    {"1,5", BAD, 0, BAD, 0},
    {"e3", BAD, 0, BAD, 0},
    {"1..5", BAD, 0, BAD, 0},
};

static void check_one(const char *what, const char *in, int rc, int64_t got,
                      int want_rc, int64_t want)
{
  if (rc != want_rc || (rc == 0 && got != want) || (rc != 0 && got != SENTINEL))
    print_error("%s(\"%s\"): rc %d value %lld, want rc %d value %lld\n", what,
                in, rc, (long long)got, want_rc, (long long)want);
  assert_int_equal(rc, want_rc);
  if (rc == 0)
    assert_int_equal(got, want);
  else
    assert_int_equal(got, SENTINEL); /* untouched on error */
}

static void test_parse_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct quantity_case *c = &cases[i];
    int64_t v = SENTINEL, m = SENTINEL;
    int rc = gq_quantity_parse(c->in, &v);
    int mrc = gq_quantity_parse_milli(c->in, &m);

    check_one("parse", c->in, rc, v, c->want_rc, c->want);
    check_one("parse_milli", c->in, mrc, m, c->want_milli_rc, c->want_milli);
  }
}

static void test_parse_arguments(void **state)
{
  int64_t v;

  (void)state;
  assert_int_equal(gq_quantity_parse(NULL, &v), GQ_EINVAL);
  assert_int_equal(gq_quantity_parse("1", NULL), GQ_EINVAL);
  assert_int_equal(gq_quantity_parse_milli(NULL, &v), GQ_EINVAL);
}

/* A long digit string is handled exactly, without a length limit. */
static void test_long_digit_string(void **state)
{
  char s[4100];
  int64_t v;

  (void)state;
  s[0] = '0';
  s[1] = '.';
  memset(s + 2, '0', 4000);
  memcpy(s + 4002, "1Ei", 4);
  assert_int_equal(gq_quantity_parse(s, &v), 0);
  assert_int_equal(v, 1);
  assert_int_equal(gq_quantity_parse_milli(s, &v), 0);
  assert_int_equal(v, 1);
}

struct json_case {
  const char *json;
  int milli;
  int want_rc;
  int64_t want;
};

static const struct json_case json_cases[] = {
    {"\"1500m\"", 0, 0, 2},
    {"\"1500m\"", 1, 0, 1500},
    {"\"16Gi\"", 0, 0, INT64_C(17179869184)},
    {"4", 0, 0, 4},
    {"4", 1, 0, 4000},
    {"-3", 1, 0, -3000},
    {"9223372036854775807", 0, 0, INT64_MAX},
    {"9223372036854775807", 1, GQ_EOVERFLOW, 0},
    {"0.5", 0, 0, 1},
    {"0.5", 1, 0, 500},
    {"0.1", 1, 0, 100},
    {"0.3", 1, 0, 300},
    {"2.675", 1, 0, 2675},
    {"1000.0", 0, 0, 1000},
    {"-1.5", 0, 0, -1},
    {"1e-10", 0, 0, 1},
    {"1.5e3", 1, 0, 1500000},
    {"1e300", 0, GQ_EOVERFLOW, 0},
    {"\"5X\"", 0, GQ_EPARSE, 0},
    {"\"\"", 1, GQ_EPARSE, 0},
    {"true", 0, GQ_EINVAL, 0},
    {"null", 0, GQ_EINVAL, 0},
    {"[]", 0, GQ_EINVAL, 0},
    {"{}", 1, GQ_EINVAL, 0},
};

static void test_from_json_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof json_cases / sizeof json_cases[0]; i++) {
    const struct json_case *c = &json_cases[i];
    json_t *v = json_loads(c->json, JSON_DECODE_ANY, NULL);
    int64_t got = SENTINEL;
    int rc;

    assert_non_null(v);
    rc = gq_quantity_from_json(v, c->milli, &got);
    check_one(c->milli ? "from_json(milli)" : "from_json", c->json, rc, got,
              c->want_rc, c->want);
    json_decref(v);
  }
}

static void test_from_json_edges(void **state)
{
  json_t *nul = json_stringn("5\0Ki", 4);
  int64_t v;

  (void)state;
  assert_int_equal(gq_quantity_from_json(nul, 0, &v), GQ_EPARSE);
  assert_int_equal(gq_quantity_from_json(NULL, 0, &v), GQ_EINVAL);
  assert_int_equal(gq_quantity_from_json(nul, 0, NULL), GQ_EINVAL);
  json_decref(nul);
}

struct format_case {
  int64_t value;
  size_t len;
  int want_rc;
  const char *want;
};

static const struct format_case format_cases[] = {
    {0, 2, 1, "0"},
    {42, 16, 2, "42"},
    {-42, 4, 3, "-42"},
    {-42, 3, GQ_ETOOBIG, ""},
    {INT64_MAX, 21, 19, "9223372036854775807"},
    {INT64_MIN, 21, 20, "-9223372036854775808"},
    {INT64_MIN, 20, GQ_ETOOBIG, ""},
    {7, 1, GQ_ETOOBIG, ""},
};

static void test_format(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof format_cases / sizeof format_cases[0]; i++) {
    const struct format_case *c = &format_cases[i];
    char buf[32];

    memset(buf, 'x', sizeof buf);
    assert_int_equal(gq_quantity_format(c->value, buf, c->len), c->want_rc);
    assert_string_equal(buf, c->want);
  }
  assert_int_equal(gq_quantity_format(1, NULL, 0), GQ_ETOOBIG);
}

/* format then parse gives the value back. */
static void test_format_round_trip(void **state)
{
  const int64_t values[] = {0, 1, -1, 1000, INT64_MAX, INT64_MIN};
  char buf[32];
  int64_t v;

  (void)state;
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    assert_true(gq_quantity_format(values[i], buf, sizeof buf) > 0);
    assert_int_equal(gq_quantity_parse(buf, &v), 0);
    assert_int_equal(v, values[i]);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_table),
      cmocka_unit_test(test_parse_arguments),
      cmocka_unit_test(test_long_digit_string),
      cmocka_unit_test(test_from_json_table),
      cmocka_unit_test(test_from_json_edges),
      cmocka_unit_test(test_format),
      cmocka_unit_test(test_format_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
