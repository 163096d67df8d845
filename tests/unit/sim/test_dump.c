/* sim/dump.c: gq_sim_dumps() writes what json_dumps(v, JSON_COMPACT |
 * JSON_ENCODE_ANY) writes, byte for byte; a shared fieldsV1 is copied in
 * from its kept text; too deep a value is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "sim/dump.h"
#include "sim/fields.h"

static void same_as_jansson(json_t *v)
{
  size_t n = 0;
  char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
  char *got = gq_sim_dumps(v, &n);

  assert_non_null(got);
  if (strcmp(got, want) != 0)
    fail_msg("got  %s\nwant %s", got, want);
  assert_int_equal(n, strlen(want));
  free(want);
  free(got);
  json_decref(v);
}

/* Strings with every escape jansson writes (quote, backslash, the short
 * forms, other control bytes as upper-case \u00XX), UTF-8 left as is, a
 * NUL inside a string and a key, integers at both ends, reals, literals,
 * empty containers, key order as inserted. */
static void test_same_bytes(void **state)
{
  json_t *o = json_object();

  (void)state;
  json_object_set_new(o, "z", json_string("q\"b\\s/\b\f\n\r\t\x01\x1f\x7f"));
  json_object_set_new(o, "a", json_string("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  json_object_set_new(o, "n", json_stringn("a\0b", 3));
  json_object_setn_new(o, "k\0ey", 4, json_integer(-9223372036854775807LL - 1));
  json_object_set_new(o, "max", json_integer(9223372036854775807LL));
  json_object_set_new(o, "zero", json_integer(0));
  json_object_set_new(o, "r", json_pack("[f,f,f,f]", 0.5, 1.0, -1e-300, 1e21));
  json_object_set_new(o, "l", json_pack("[b,b,n,{},[],\"\"]", 1, 0));
  json_object_set_new(o, "nest", json_pack("{s:{s:[{s:i}]}}", "x", "y", "w", 1));
  same_as_jansson(o);
  same_as_jansson(json_string("alone"));
  same_as_jansson(json_integer(42));
  same_as_jansson(json_null());
}

/* A shared part of a fieldsV1 (a create's f:spec) is copied from its kept text,
 * which is what walking it would write; framing adds prefix and suffix. */
static void test_shared_fields_and_frame(void **state)
{
  struct gq_fields_op op = {"m", 0, "v1", "", "2026-12-03T10:00:00Z"};
  json_t *obj = json_pack("{s:{s:s,s:{s:s}},s:{s:[{s:s,s:s}]}}", "metadata",
                          "name", "p", "labels", "a\"b", "1", "spec",
                          "containers", "name", "c", "image", "i");
  json_t *mf = gq_fields_record_create(obj, &op, 1, 1);
  const json_t *v1 = json_object_get(
      json_object_get(json_array_get(mf, 0), "fieldsV1"), "f:spec");
  json_t *x = json_string("x");
  size_t n;
  char *got;

  (void)state;
  assert_non_null(gq_fields_v1_text(v1, &n));
  json_object_set(json_object_get(obj, "metadata"), "managedFields", mf);
  same_as_jansson(json_incref(obj));
  got = gq_sim_dumps_framed("{\"type\":\"ADDED\",\"object\":", x, "}\n", &n);
  assert_string_equal(got, "{\"type\":\"ADDED\",\"object\":\"x\"}\n");
  assert_int_equal(n, strlen(got));
  free(got);
  json_decref(x);
  json_decref(mf);
  json_decref(obj);
}

/* Nesting past GQ_SIM_DUMP_MAX_DEPTH is refused (NULL), not a crash. */
static void test_too_deep(void **state)
{
  json_t *v = json_array(), *top = v;

  (void)state;
  for (int i = 0; i < GQ_SIM_DUMP_MAX_DEPTH + 1; i++) {
    json_t *c = json_array();

    json_array_append_new(v, c);
    v = c;
  }
  assert_null(gq_sim_dumps(top, NULL));
  assert_null(gq_sim_dumps(NULL, NULL));
  json_decref(top);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_bytes),
      cmocka_unit_test(test_shared_fields_and_frame),
      cmocka_unit_test(test_too_deep),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
