/* The raw-JSON metadata getters of api/meta.h (gq_meta_str,
 * gq_meta_obj_label, gq_meta_obj_annotation): present values are borrowed
 * from the object, and every kind of absence (no object, no metadata, no
 * member, a member that is not a string) gives "" or NULL as documented. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/meta.h"
#include "tests/support/fixture.h"

static void test_meta_str(void **state)
{
  json_t *obj = gq_test_json_sq("{'metadata':{'name':'p','namespace':'ns',"
                                "'generation':3}}");
  json_t *bare = gq_test_json_sq("{'kind':'Pod','metadata':7}");

  (void)state;
  assert_string_equal(gq_meta_str(obj, "name"), "p");
  assert_string_equal(gq_meta_str(obj, "namespace"), "ns");
  /* borrowed: the very string inside obj */
  assert_ptr_equal(gq_meta_str(obj, "name"),
                   json_string_value(json_object_get(
                       json_object_get(obj, "metadata"), "name")));
  assert_string_equal(gq_meta_str(obj, "uid"), "");        /* absent */
  assert_string_equal(gq_meta_str(obj, "generation"), ""); /* not a string */
  assert_string_equal(gq_meta_str(bare, "name"), "");      /* no object */
  assert_string_equal(gq_meta_str(NULL, "name"), "");
  json_decref(obj);
  json_decref(bare);
}

static void test_labels_annotations(void **state)
{
  json_t *obj = gq_test_json_sq("{'metadata':{'labels':{'app':'x','n':1},"
                                "'annotations':{'sim.gpuq.dev/run-seconds':"
                                "'20'}}}");
  json_t *none = gq_test_json_sq("{'metadata':{'name':'p'}}");

  (void)state;
  assert_string_equal(gq_meta_obj_label(obj, "app"), "x");
  assert_null(gq_meta_obj_label(obj, "n"));     /* not a string */
  assert_null(gq_meta_obj_label(obj, "other")); /* absent */
  assert_null(gq_meta_obj_label(none, "app"));  /* no labels */
  assert_null(gq_meta_obj_label(NULL, "app"));
  assert_string_equal(
      gq_meta_obj_annotation(obj, "sim.gpuq.dev/run-seconds"), "20");
  assert_null(gq_meta_obj_annotation(obj, "app")); /* a label, not this */
  assert_null(gq_meta_obj_annotation(none, "x"));
  assert_null(gq_meta_obj_annotation(NULL, "x"));
  json_decref(obj);
  json_decref(none);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_meta_str),
      cmocka_unit_test(test_labels_annotations),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
