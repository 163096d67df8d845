/* sim/fields.c: field sets in FieldsV1 form, the changes a write makes,
 * conflicts and their messages, managedFields recording, and the manager a
 * User-Agent names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "sim/fields.h"

static json_t *j(const char *text)
{
  json_t *v = json_loads(text, 0, NULL);

  assert_non_null(v);
  return v;
}

/* The set FieldsV1 text names. */
static json_t *set_of(const char *v1_text)
{
  json_t *v1 = j(v1_text), *s = gq_fields_from_v1(v1);

  json_decref(v1);
  return s;
}

/* Fails unless set's FieldsV1 form dumps (sorted, compact) as want. */
static void assert_v1(const json_t *set, const char *want)
{
  json_t *v1 = gq_fields_to_v1(set);
  char *s = json_dumps(v1, JSON_COMPACT | JSON_SORT_KEYS);

  if (strcmp(s, want) != 0)
    fail_msg("got  %s\nwant %s", s, want);
  free(s);
  json_decref(v1);
}

static void test_config_set(void **state)
{
  json_t *c = j("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":"
                "{\"name\":\"p\",\"labels\":{\"a\":\"1\"},\"finalizers\":"
                "[\"x/y\"]},\"spec\":{\"containers\":[{\"name\":\"c\","
                "\"image\":\"i\",\"args\":[\"1\"]}],\"tolerations\":[{}],"
                "\"securityContext\":{}}}");
  json_t *set = gq_fields_of_config(c);

  (void)state;
  gq_fields_strip(set, 0, 1);
  assert_v1(set,
            "{\"f:metadata\":{\"f:finalizers\":{\"v:\\\"x/y\\\"\":{}},"
            "\"f:labels\":{\"f:a\":{}}},\"f:spec\":{\"f:containers\":"
            "{\"k:{\\\"name\\\":\\\"c\\\"}\":{\".\":{},\"f:args\":{},"
            "\"f:image\":{},\"f:name\":{}}},\"f:securityContext\":{},"
            "\"f:tolerations\":{}}}");
  json_decref(set);
  json_decref(c);
}

static void test_diff(void **state)
{
  json_t *a = j("{\"spec\":{\"x\":1,\"containers\":[{\"name\":\"c\","
                "\"image\":\"i\"}]}}");
  json_t *b = j("{\"spec\":{\"x\":2,\"m\":{\"k\":\"v\"},\"containers\":"
                "[{\"name\":\"c\",\"image\":\"i2\"},{\"name\":\"d\"}]}}");
  json_t *changed, *removed;

  (void)state;
  gq_fields_diff(a, b, &changed, &removed);
  assert_v1(changed,
            "{\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"c\\\"}\":"
            "{\"f:image\":{}},\"k:{\\\"name\\\":\\\"d\\\"}\":{\".\":{},"
            "\"f:name\":{}}},\"f:m\":{\".\":{},\"f:k\":{}},\"f:x\":{}}}");
  assert_true(gq_fields_empty(removed));
  json_decref(changed);
  json_decref(removed);
  gq_fields_diff(b, a, &changed, &removed);
  assert_v1(removed,
            "{\"f:spec\":{\"f:containers\":{\"k:{\\\"name\\\":\\\"d\\\"}\":"
            "{\".\":{},\"f:name\":{}}},\"f:m\":{\".\":{},\"f:k\":{}}}}");
  /* Removing what a set names from the object. */
  gq_fields_remove(b, removed, NULL);
  assert_int_equal(json_array_size(json_object_get(json_object_get(b, "spec"),
                                                   "containers")),
                   1);
  assert_null(json_object_get(json_object_get(b, "spec"), "m"));
  json_decref(changed);
  json_decref(removed);
  json_decref(a);
  json_decref(b);
}

/* A map its manager owned as a whole ("." beside children, as after
 * kubectl migrates client-side apply's fields) stays while anyone owns
 * something inside it. */
static void test_remove_keeps_owned_parents(void **state)
{
  json_t *obj = j("{\"spec\":{\"a\":1,\"b\":2},\"x\":{\"y\":1}}");
  json_t *gone = set_of("{\"f:spec\":{\".\":{},\"f:b\":{}},"
                        "\"f:x\":{\".\":{},\"f:y\":{}}}");
  json_t *keep = set_of("{\"f:spec\":{\"f:a\":{}}}");
  char *s;

  (void)state;
  gq_fields_remove(obj, gone, keep);
  s = json_dumps(obj, JSON_COMPACT | JSON_SORT_KEYS);
  assert_string_equal(s, "{\"spec\":{\"a\":1}}");
  free(s);
  json_decref(keep);
  json_decref(gone);
  json_decref(obj);
}

static void test_v1_round_trip_and_algebra(void **state)
{
  json_t *s = set_of("{\"f:spec\":{\".\":{},\"f:a\":{},\"f:b\":{}}}");
  json_t *t = set_of("{\"f:spec\":{\"f:a\":{}}}");
  json_t *both = gq_fields_intersect(s, t);

  (void)state;
  assert_v1(s, "{\"f:spec\":{\".\":{},\"f:a\":{},\"f:b\":{}}}");
  assert_v1(both, "{\"f:spec\":{\"f:a\":{}}}");
  gq_fields_subtract(s, t);
  assert_v1(s, "{\"f:spec\":{\".\":{},\"f:b\":{}}}");
  gq_fields_union(s, t);
  assert_v1(s, "{\"f:spec\":{\".\":{},\"f:a\":{},\"f:b\":{}}}");
  json_decref(both);
  json_decref(t);
  json_decref(s);
}

static const struct gq_fields_op ops_apply = {"ops", 1, "gpuq.dev/v1alpha1",
                                              "", "2026-01-01T00:00:00Z"};

static void test_conflicts_and_record(void **state)
{
  json_t *managed = j(
      "[{\"manager\":\"kubectl\",\"operation\":\"Update\",\"apiVersion\":"
      "\"gpuq.dev/v1alpha1\",\"time\":\"2025-01-01T00:00:00Z\","
      "\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:spec\":{\"f:a\":{},"
      "\"f:b\":{}}}},{\"manager\":\"ctl\",\"operation\":\"Update\","
      "\"apiVersion\":\"gpuq.dev/v1alpha1\",\"fieldsType\":\"FieldsV1\","
      "\"fieldsV1\":{\"f:status\":{\"f:p\":{}}},\"subresource\":\"status\"}]");
  json_t *changed = set_of("{\"f:spec\":{\"f:a\":{},\"f:b\":{}},"
                           "\"f:status\":{\"f:p\":{}}}");
  json_t *removed = json_object(), *c, *causes, *mf;
  char msg[1024];

  (void)state;
  c = gq_fields_conflicts(managed, &ops_apply, changed);
  assert_int_equal(json_array_size(c), 3);
  causes = gq_fields_conflict_causes(c, msg, sizeof(msg));
  assert_string_equal(msg,
                      "Apply failed with 3 conflicts: conflicts with \"ctl\" "
                      "with subresource \"status\" using gpuq.dev/v1alpha1:\n"
                      "- .status.p\nconflicts with \"kubectl\" using "
                      "gpuq.dev/v1alpha1:\n- .spec.a\n- .spec.b");
  assert_string_equal(json_string_value(json_object_get(
                          json_array_get(causes, 0), "reason")),
                      "FieldManagerConflict");
  json_decref(causes);
  json_decref(c);
  /* Forced: ops owns what it applied; kubectl keeps the rest. */
  {
    json_t *applied = set_of("{\"f:spec\":{\"f:a\":{}}}");

    mf = gq_fields_record(managed, &ops_apply, changed, removed, applied);
    assert_int_equal(json_array_size(mf), 3);
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(mf, 0), "manager")),
                        "ops"); /* Apply sorts first */
    json_decref(applied);
    json_decref(mf);
  }
  json_decref(removed);
  json_decref(changed);
  json_decref(managed);
}

/* Fails unless every top-level part of fieldsV1 a is the same tree as b's,
 * and every child of f:metadata but f:ownerReferences (keyed by uid: not
 * shared). */
static void assert_shared(const json_t *a, const json_t *b, const char *what)
{
  const char *k, *mk;
  json_t *v, *mv;

  json_object_foreach((json_t *)a, k, v) {
    if (strcmp(k, "f:metadata") != 0) {
      if (v != json_object_get(b, k))
        fail_msg("%s: %s not shared", what, k);
      continue;
    }
    json_object_foreach(v, mk, mv)
      if (strcmp(mk, "f:ownerReferences") != 0 &&
          mv != json_object_get(json_object_get(b, k), mk))
        fail_msg("%s: metadata's %s not shared", what, mk);
  }
}

/* Fails unless the create of obj_text records what the general path
 * records; shared: the one-pass path applies (two creates of the object
 * share one fieldsV1 tree). */
static void check_create(const char *obj_text, int builtin, int reset,
                         int shared)
{
  struct gq_fields_op op = {"bench", 0, "v1", "", "2026-12-03T10:00:00Z"};
  json_t *obj = j(obj_text);
  json_t *fast = gq_fields_record_create(obj, &op, builtin, reset);
  json_t *again = gq_fields_record_create(obj, &op, builtin, reset);
  json_t *slow = gq_fields_record_create_by_diff(obj, &op, builtin, reset);
  char *f = json_dumps(fast, JSON_COMPACT), *w = json_dumps(slow, JSON_COMPACT);

  if (strcmp(f, w) != 0) /* the same text: the same key order too */
    fail_msg("%s\nfast %s\nslow %s", obj_text, f, w);
  /* the same shape twice: its parts are shared trees */
  if (json_array_size(fast) && shared)
    assert_shared(json_object_get(json_array_get(fast, 0), "fieldsV1"),
                  json_object_get(json_array_get(again, 0), "fieldsV1"),
                  obj_text);
  free(f);
  free(w);
  json_decref(obj);
  json_decref(fast);
  json_decref(again);
  json_decref(slow);
}

/* gq_fields_record_create()'s one pass equals Compare + strip + record on
 * built-in and custom objects: keyed lists (containers by name, nested
 * ports), set lists (finalizers), atomic lists, empty maps and lists,
 * server-owned metadata, status kept or reset, keys that need escaping,
 * and the cases it leaves to the general path (two elements of one
 * name, an over-long field name). */
static void test_create_one_pass(void **state)
{
  char *longname = malloc(700), *text = malloc(900);

  (void)state;
  check_create("{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{"
               "\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\","
               "\"resourceVersion\":\"3\",\"creationTimestamp\":\"t\","
               "\"labels\":{\"b\":\"1\",\"a\":\"2\"},\"annotations\":{},"
               "\"finalizers\":[\"z\",\"a/b\"],\"ownerReferences\":[{\"uid\":"
               "\"x\",\"kind\":\"GpuJob\",\"name\":\"j\"}]},\"spec\":{"
               "\"containers\":[{\"name\":\"main\",\"image\":\"i\",\"ports\":"
               "[{\"containerPort\":80,\"protocol\":\"TCP\"}],\"args\":[\"a\"],"
               "\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}},{\"name\":"
               "\"side\",\"env\":[{\"name\":\"E\",\"value\":\"q\\\"\"}]}],"
               "\"tolerations\":[],\"nodeSelector\":{},\"affinity\":{\"nodeAffinity\""
               ":{\"x\":[[1]]}}},\"status\":{\"phase\":\"Pending\"}}",
               1, 1, 1);
  check_create("{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
               "\"metadata\":{\"name\":\"j\",\"labels\":{\"k\\u0001\":\"v\"}},"
               "\"spec\":{\"team\":\"t\",\"gpus\":1,\"template\":{}},"
               "\"status\":{\"phase\":\"Queued\"}}", 0, 1, 1);
  check_create("{\"metadata\":{\"name\":\"c\"},\"data\":{\"a\":\"1\"},"
               "\"status\":{\"x\":[]}}", 0, 0, 1);
  check_create("{\"metadata\":{\"name\":\"e\"},\"spec\":{}}", 1, 1, 1);
  check_create("{\"metadata\":{\"name\":\"e\"},\"spec\":null}", 1, 1, 1);
  check_create("{\"metadata\":{\"name\":\"d\"},\"spec\":{\"containers\":["
               "{\"name\":\"a\",\"image\":\"1\"},{\"name\":\"a\",\"args\":[]}]}}",
               1, 1, 0);
  memset(longname, 'x', 699);
  longname[699] = '\0';
  snprintf(text, 900, "{\"metadata\":{\"name\":\"l\"},\"spec\":{\"%s\":1}}",
           longname);
  check_create(text, 0, 1, 0);
  free(longname);
  free(text);
}

static void test_manager_from_ua(void **state)
{
  char buf[200];

  (void)state;
  assert_string_equal(gq_fields_manager_from_ua(
                          "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07",
                          buf, sizeof(buf)),
                      "kubectl");
  assert_string_equal(gq_fields_manager_from_ua("Go-http-client/1.1", buf,
                                                sizeof(buf)),
                      "Go-http-client");
  assert_string_equal(gq_fields_manager_from_ua(NULL, buf, sizeof(buf)), "");
  assert_string_equal(gq_fields_manager_from_ua("a\tb/1", buf, sizeof(buf)),
                      "ab");
  /* fieldManager wins, slashes and all; broken UTF-8 loses its high bytes. */
  assert_string_equal(gq_fields_manager("ops/x", "kubectl/v1", buf,
                                        sizeof(buf)),
                      "ops/x");
  assert_string_equal(gq_fields_manager("", "kubectl/v1", buf, sizeof(buf)),
                      "kubectl");
  assert_string_equal(gq_fields_manager("a\xff" "b", NULL, buf, sizeof(buf)),
                      "ab");
  assert_string_equal(gq_fields_manager("gr\xc3\xbc" "n", NULL, buf,
                                        sizeof(buf)),
                      "gr\xc3\xbc" "n");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_set),
      cmocka_unit_test(test_diff),
      cmocka_unit_test(test_remove_keeps_owned_parents),
      cmocka_unit_test(test_v1_round_trip_and_algebra),
      cmocka_unit_test(test_conflicts_and_record),
      cmocka_unit_test(test_create_one_pass),
      cmocka_unit_test(test_manager_from_ua),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
