/* Input limits of the decoders (issue 23), each checked just inside and
 * just past the limit, with the exact message a user gets: namespaces per
 * TeamQuota, annotation bytes and template size of a GpuJob, quantity
 * magnitude, the watch-line cap of the NDJSON framer, and PriorityClass
 * values (api/priorityclass.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/gpujob.h"
#include "api/json.h"
#include "api/node.h"
#include "api/priorityclass.h"
#include "api/teamquota.h"
#include "api/wire.h"
#include "base/err.h"
#include "tests/support/fixture.h"

static json_t *job_json(void)
{
  return gq_test_json_sq(
      "{'apiVersion':'gpuq.dev/v1alpha1','kind':'GpuJob',"
      "'metadata':{'name':'j','namespace':'ml'},"
      "'spec':{'team':'vision','gpusPerReplica':1,"
      "'template':{'metadata':{},'spec':{'containers':[{'name':'c',"
      "'image':'i','resources':{'requests':{}}}]}}}}");
}

/* A string of n 'x'. */
static json_t *filler(size_t n)
{
  char *s = malloc(n + 1);
  json_t *v;

  memset(s, 'x', n);
  s[n] = '\0';
  v = json_string(s);
  free(s);
  return v;
}

/* Decodes obj (taken) as a GpuJob: NULL when valid, else the message
 * (static storage). */
static const char *job_err(json_t *obj)
{
  static char err[GQ_DEC_MSG_MAX];
  struct gq_gpujob j;
  int rc = gq_gpujob_decode(obj, &j, err, sizeof(err));

  json_decref(obj);
  if (rc == 0) {
    gq_gpujob_release(&j);
    return NULL;
  }
  return err;
}

static json_t *path_obj(json_t *obj, const char *a, const char *b)
{
  json_t *o = json_object_get(obj, a);

  return b ? json_object_get(o, b) : o;
}

static void test_namespaces(void **state)
{
  json_t *ns = json_array();
  char err[GQ_DEC_MSG_MAX], name[32];
  struct gq_teamquota q;
  json_t *obj;

  (void)state;
  for (int i = 0; i < GQ_MAX_TEAM_NAMESPACES; i++) {
    snprintf(name, sizeof(name), "ns-%d", i);
    json_array_append_new(ns, json_string(name));
  }
  obj = gq_test_json_sq("{'apiVersion':'gpuq.dev/v1alpha1','kind':"
                        "'TeamQuota','metadata':{'name':'t'},'spec':{"
                        "'resources':[{'flavor':'*','nominal':8}]}}");
  json_object_set(json_object_get(obj, "spec"), "namespaces", ns);
  assert_int_equal(gq_teamquota_decode(obj, &q, err, sizeof(err)), 0);
  gq_teamquota_release(&q);
  json_array_append_new(ns, json_string("one-more"));
  assert_int_equal(gq_teamquota_decode(obj, &q, err, sizeof(err)), GQ_EINVAL);
  assert_string_equal(err, "spec.namespaces: must have at most 1024 items, "
                           "got 1025");
  json_decref(ns);
  json_decref(obj);
}

/* 256 KiB of keys and values in all, on the job and on its template. */
static void test_annotations(void **state)
{
  static const char *const where[][2] = {{"metadata", NULL},
                                         {"spec", "template"}};
  char want[256];

  (void)state;
  for (size_t i = 0; i < 2; i++) {
    json_t *obj = job_json(), *meta = path_obj(obj, where[i][0], where[i][1]);
    json_t *ann = json_object();

    if (i == 1)
      meta = json_object_get(meta, "metadata");
    json_object_set_new(ann, "a", filler(GQ_MAX_ANNOTATIONS_BYTES - 2));
    json_object_set_new(ann, "b", json_string(""));
    json_object_set_new(meta, "annotations", ann);
    assert_null(job_err(json_deep_copy(obj)));
    json_object_set_new(ann, "c", json_string(""));
    snprintf(want, sizeof(want), "%s.annotations: must have at most 262144 "
             "bytes of keys and values in total (Kubernetes' annotation size "
             "limit), got 262145",
             i ? "spec.template.metadata" : "metadata");
    assert_string_equal(job_err(obj), want);
  }
}

static void test_template_size(void **state)
{
  json_t *obj = job_json(), *labels = json_object(), *big;
  const char *err;

  (void)state;
  json_object_set_new(path_obj(path_obj(obj, "spec", "template"), "metadata",
                               NULL),
                      "labels", labels);
  big = json_deep_copy(obj);
  json_object_set_new(json_object_get(json_object_get(json_object_get(
                          json_object_get(big, "spec"), "template"),
                                                      "metadata"),
                                      "labels"),
                      "x", filler(GQ_MAX_TEMPLATE_BYTES));
  err = job_err(big);
  assert_non_null(err);
  assert_non_null(strstr(err, "spec.template: must be no more than 1048576 "
                              "bytes as compact JSON (every pod gpuq creates "
                              "carries it), got 10486"));
  assert_null(job_err(obj));
}

static void test_quantity_magnitude(void **state)
{
  static const struct {
    const char *res, *value, *want; /* want NULL: valid */
  } cases[] = {
      {"memory", "8Ei", "must be at most 9223372036854775807 (2^63-1), got "
                        "\"8Ei\""}, /* 2^63, one past int64 */
      {"memory", "7Ei", NULL},
      {"memory", "9223372036854775807", NULL},
      {"cpu", "9223372036854775", NULL},
      {"cpu", "9223372036854776", "must be at most 9223372036854775807m "
                                  "(2^63-1 millicores), got "
                                  "\"9223372036854776\""},
      {"memory", "1e30", "must be at most 9223372036854775807 (2^63-1), got "
                         "\"1e30\""},
      {"memory", "lots", "must be a quantity such as 500m, 8 or 16Gi, got "
                         "\"lots\""},
  };
  char want[512];

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    json_t *obj = job_json(), *req;
    const char *err, *wmsg = cases[i].want;

    req = json_object_get(json_object_get(json_array_get(
              json_object_get(path_obj(path_obj(obj, "spec", "template"),
                                       "spec", NULL),
                              "containers"),
              0), "resources"), "requests");
    json_object_set_new(req, cases[i].res, json_string(cases[i].value));
    err = job_err(obj);
    if (!wmsg) {
      if (err)
        fail_msg("%s=%s: %s", cases[i].res, cases[i].value, err);
      continue;
    }
    snprintf(want, sizeof(want), "spec.template.spec.containers[0]."
             "resources.requests[%s]: %s", cases[i].res, wmsg);
    if (!err || strcmp(err, want))
      fail_msg("%s=%s: got %s, want %s", cases[i].res, cases[i].value,
               err ? err : "(valid)", want);
  }
}

/* Node capacities go through the same check. */
static void test_node_quantity(void **state)
{
  json_t *obj = gq_test_json_sq("{'apiVersion':'v1','kind':'Node',"
                                "'metadata':{'name':'n'},'status':{"
                                "'allocatable':{'memory':'100Ei'}}}");
  char err[GQ_DEC_MSG_MAX];
  struct gq_node n;

  (void)state;
  assert_int_equal(gq_node_decode(obj, NULL, &n, err, sizeof(err)), GQ_EINVAL);
  assert_non_null(strstr(err, "[memory]: must be at most 9223372036854775807 "
                              "(2^63-1), got \"100Ei\""));
  json_decref(obj);
}

static int count_line(const char *line, size_t len, void *arg)
{
  (void)line;
  (void)len;
  (*(int *)arg)++;
  return 0;
}

static void test_watch_line(void **state)
{
  struct gq_ndjson f;
  char msg[128];
  int n = 0;

  (void)state;
  gq_ndjson_init(&f, 8);
  assert_int_equal(gq_ndjson_feed(&f, "12345678\n", 9, count_line, &n), 0);
  assert_int_equal(n, 1);
  assert_int_equal(gq_ndjson_feed(&f, "123456789\n", 10, count_line, &n),
                   GQ_ETOOBIG);
  assert_string_equal(gq_ndjson_limit_msg(&f, msg, sizeof(msg)),
                      "watch event line exceeds the limit of 8 bytes "
                      "(max_line)");
  gq_ndjson_release(&f);
}

static void test_priorityclass(void **state)
{
  static const struct {
    const char *json, *want; /* want NULL: valid */
    int32_t value;
  } cases[] = {
      {"{'metadata':{'name':'urgent'},'value':1000000000,"
       "'preemptionPolicy':'Never','globalDefault':true}", NULL, 1000000000},
      {"{'metadata':{'name':'urgent'},'value':1000000001}",
       "value: must be no more than 1000000000 (the highest user-definable "
       "priority) unless the name starts with \"system-\", got 1000000001", 0},
      {"{'metadata':{'name':'system-node-critical'},'value':2000001000}", NULL,
       2000001000},
      {"{'metadata':{'name':'system-x'},'value':2000001001}",
       "value: must be no more than 2000001000 for a system class, got "
       "2000001001", 0},
      {"{'metadata':{'name':'low'},'value':-2147483648}", NULL, INT32_MIN},
      {"{'metadata':{'name':'low'},'value':-2147483649}",
       "value: must be between -2147483648 and 2147483647, got "
       "-2147483649", 0},
      {"{'metadata':{'name':'low'},'value':1.5}",
       "value: must be an integer, got 1.5", 0},
      {"{'metadata':{'name':'low'}}", "value: required value", 0},
      {"{'metadata':{'name':'Low'},'value':1}", NULL, 0},
      {"{'metadata':{'name':'low'},'value':1,'preemptionPolicy':'Always'}",
       NULL, 0},
  };

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    json_t *obj = gq_test_json_sq(cases[i].json);
    struct gq_priorityclass pc;
    char err[GQ_DEC_MSG_MAX];
    int rc = gq_priorityclass_decode(obj, &pc, err, sizeof(err)), valid;
    int32_t v = gq_priorityclass_value(obj, 7, &valid);

    if (i >= 8) {
      /* the message comes from the shared name and enum checks */
      assert_int_equal(rc, GQ_EINVAL);
      assert_false(valid);
      assert_int_equal(v, 7);
    } else if (!cases[i].want) {
      if (rc != 0)
        fail_msg("case %zu: %s", i, err);
      assert_int_equal(pc.value, cases[i].value);
      assert_true(valid);
      assert_int_equal(v, cases[i].value);
      gq_priorityclass_release(&pc);
    } else {
      assert_int_equal(rc, GQ_EINVAL);
      assert_string_equal(err, cases[i].want);
      assert_int_equal(v, 7);
    }
    json_decref(obj);
  }
  assert_int_equal(gq_priorityclass_value(NULL, 3, NULL), 3);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_namespaces),
      cmocka_unit_test(test_annotations),
      cmocka_unit_test(test_template_size),
      cmocka_unit_test(test_quantity_magnitude),
      cmocka_unit_test(test_node_quantity),
      cmocka_unit_test(test_watch_line),
      cmocka_unit_test(test_priorityclass),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
