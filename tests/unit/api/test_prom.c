/* tests/unit/api/test_prom.c - reading Prometheus' instant-query answers
 * (api/prom.h gq_prom_parse_vector): samples and labels, skipped non-finite
 * values, and an error naming the field for every malformed shape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/prom.h"
#include "base/err.h"

static int parse(const char *s, struct gq_prom_vector *v, char *err)
{
  return gq_prom_parse_vector(s, strlen(s), v, err, 256);
}

static void test_vector(void **state)
{
  struct gq_prom_vector v;
  char err[256] = "";
  const char *body =
      "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
      "{\"metric\":{\"__name__\":\"DCGM_FI_DEV_GPU_UTIL\",\"gpu\":\"0\","
      "\"namespace\":\"ml\",\"pod\":\"p-0\"},\"value\":[1700000000.5,\"87\"]},"
      "{\"metric\":{\"gpu\":\"1\"},\"value\":[1700000000.5,\"NaN\"]},"
      "{\"metric\":{\"gpu\":\"2\"},\"value\":[1700000000.5,\"0.25\"]}]}}";

  (void)state;
  assert_int_equal(parse(body, &v, err), 0);
  assert_int_equal(v.n, 2); /* NaN skipped */
  assert_string_equal(gq_prom_label(&v.v[0], "pod"), "p-0");
  assert_string_equal(gq_prom_label(&v.v[0], "container"), "");
  assert_true(v.v[0].value == 87.0);
  assert_true(v.v[1].value == 0.25);
  gq_prom_vector_free(&v);
  gq_prom_vector_free(&v); /* empty: safe */
}

static void test_errors(void **state)
{
  static const struct {
    const char *body, *want;
  } cases[] = {
      {"not json", "not JSON"},
      {"{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse "
       "error at char 3\"}",
       "status: \"error\" (bad_data: parse error at char 3)"},
      {"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
       "\"result\":[]}}",
       "data.resultType: want \"vector\", got \"matrix\""},
      {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\"}}",
       "data.result: must be an array"},
      {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
       "\"result\":[{\"metric\":1,\"value\":[1,\"2\"]}]}}",
       "data.result[0].metric: must be an object"},
      {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
       "\"result\":[{\"metric\":{},\"value\":[1,2]}]}}",
       "data.result[0].value: must be [time, \"value\"]"},
      {"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
       "\"result\":[{\"metric\":{},\"value\":[1,\"12x\"]}]}}",
       "data.result[0].value: not a number: \"12x\""},
  };

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gq_prom_vector v;
    char err[256] = "";

    assert_int_equal(parse(cases[i].body, &v, err), GQ_EPARSE);
    assert_non_null(strstr(err, cases[i].want));
    assert_int_equal(v.n, 0);
    assert_null(v.doc);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vector),
      cmocka_unit_test(test_errors),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
