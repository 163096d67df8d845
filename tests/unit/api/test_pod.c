/* Pod and PodSpec decoding: effective requests (Kubernetes' PodRequests
 * rule), tolerations, required node affinity, status conditions and the
 * termination message, gpuq's annotations and every container's
 * termination (owned copies: they must survive changes to the document),
 * and rejections with field paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/pod.h"
#include "base/err.h"
#include "tests/support/fixture.h"

static json_t *pod_with_spec(const char *spec_json)
{
  json_error_t jerr;
  json_t *spec = json_loads(spec_json, 0, &jerr);

  if (!spec)
    fail_msg("bad test JSON: %s", jerr.text);
  return json_pack("{s:{s:s, s:s, s:s}, s:o}", "metadata", "name", "p",
                   "namespace", "ns", "uid", "u-1", "spec", spec);
}

static const struct {
  const char *name;
  const char *spec;
  int64_t want_cpu_milli, want_mem, want_gpu;
} req_cases[] = {
    {"sum of containers",
     "{\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":"
     "\"500m\",\"memory\":\"1Gi\"}}},{\"name\":\"b\",\"resources\":{"
     "\"requests\":{\"cpu\":\"1.5\",\"memory\":\"512Mi\"}}}]}",
     2000, 1536LL << 20, 0},
    {"limits fill absent requests",
     "{\"containers\":[{\"name\":\"a\",\"resources\":{\"limits\":{"
     "\"nvidia.com/gpu\":\"8\",\"cpu\":\"4\"},\"requests\":{\"cpu\":\"2\"}}}]}",
     2000, 0, 8},
    {"init container larger than the app wins",
     "{\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":{"
     "\"cpu\":\"3\"}}}],\"containers\":[{\"name\":\"a\",\"resources\":{"
     "\"requests\":{\"cpu\":\"1\"}}}]}",
     3000, 0, 0},
    {"sidecar adds to containers and to later inits",
     "{\"initContainers\":[{\"name\":\"s\",\"restartPolicy\":\"Always\","
     "\"resources\":{\"requests\":{\"cpu\":\"1\"}}},{\"name\":\"i\","
     "\"resources\":{\"requests\":{\"cpu\":\"4\"}}}],\"containers\":[{"
     "\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":\"2\"}}}]}",
     5000, 0, 0},
    {"overhead is added",
     "{\"overhead\":{\"cpu\":\"250m\"},\"containers\":[{\"name\":\"a\","
     "\"resources\":{\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":2}}}]}",
     1250, 0, 2},
    {"no resources", "{\"containers\":[{\"name\":\"a\"}]}", 0, 0, 0},
};

static void test_effective_requests(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(req_cases) / sizeof(req_cases[0]); i++) {
    json_t *obj = pod_with_spec(req_cases[i].spec);
    struct gq_pod p;
    char err[512];

    if (gq_pod_decode(obj, &p, err, sizeof(err)) != 0)
      fail_msg("%s: %s", req_cases[i].name, err);
    if (p.sched.cpu_milli != req_cases[i].want_cpu_milli ||
        p.sched.memory_bytes != req_cases[i].want_mem ||
        gq_podsched_request(&p.sched, "nvidia.com/gpu") !=
            req_cases[i].want_gpu)
      fail_msg("%s: cpu %lld mem %lld gpu %lld", req_cases[i].name,
               (long long)p.sched.cpu_milli, (long long)p.sched.memory_bytes,
               (long long)gq_podsched_request(&p.sched, "nvidia.com/gpu"));
    gq_pod_release(&p);
    json_decref(obj);
  }
}

static void test_scheduling_constraints(void **state)
{
  json_t *obj = pod_with_spec(
      "{\"nodeName\":\"gpu-1\",\"terminationGracePeriodSeconds\":300,"
      "\"nodeSelector\":{\"pool\":\"train\"},"
      "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
      "\"effect\":\"NoSchedule\"},{\"operator\":\"Exists\"},{\"key\":\"k\","
      "\"value\":\"v\",\"effect\":\"NoExecute\",\"tolerationSeconds\":60}],"
      "\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuring"
      "Execution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
      "\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":[\"gpu-1\"]},"
      "{\"key\":\"gen\",\"operator\":\"Gt\",\"values\":[\"3\"]}]},"
      "{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\","
      "\"values\":[\"a\",\"b\"]}]}]}}},"
      "\"containers\":[{\"name\":\"a\"}]}");
  struct gq_pod p;
  char err[512];

  (void)state;
  assert_int_equal(gq_pod_decode(obj, &p, err, sizeof(err)), 0);
  assert_string_equal(p.sched.node_name, "gpu-1");
  assert_int_equal(p.sched.grace_s, 300);
  assert_int_equal(p.sched.n_node_selector, 1);
  assert_string_equal(p.sched.node_selector[0].key, "pool");
  assert_int_equal(p.sched.n_tolerations, 3);
  assert_int_equal(p.sched.tolerations[0].op, GQ_TOL_EXISTS);
  assert_string_equal(p.sched.tolerations[0].effect, "NoSchedule");
  assert_string_equal(p.sched.tolerations[1].key, "");
  assert_string_equal(p.sched.tolerations[1].effect, "");
  assert_int_equal(p.sched.tolerations[2].op, GQ_TOL_EQUAL);
  assert_int_equal(p.sched.tolerations[2].seconds, 60);
  assert_int_equal(p.sched.n_terms, 2);
  assert_int_equal(p.sched.terms[0].n_exprs, 2);
  assert_int_equal(p.sched.terms[0].exprs[0].op, GQ_SEL_IN);
  assert_string_equal(p.sched.terms[0].exprs[0].values[0], "gpu-1");
  assert_int_equal(p.sched.terms[0].exprs[1].op, GQ_SEL_GT);
  assert_int_equal(p.sched.terms[1].n_fields, 1);
  assert_int_equal(p.sched.terms[1].fields[0].n_values, 2);
  assert_int_equal(p.phase, GQ_POD_PENDING);
  assert_true(gq_pod_holds_resources(&p));
  gq_pod_release(&p);
  json_decref(obj);
}

static void test_status(void **state)
{
  json_t *obj = pod_with_spec("{\"containers\":[{\"name\":\"a\"}]}");
  json_t *status = json_loads(
      "{\"phase\":\"Failed\",\"reason\":\"OutOfnvidia.com/gpu\","
      "\"conditions\":[{\"type\":\"PodScheduled\",\"status\":\"False\","
      "\"reason\":\"Unschedulable\"},{\"type\":\"DisruptionTarget\","
      "\"status\":\"True\",\"reason\":\"EvictionByEvictionAPI\"},"
      "{\"type\":\"Ready\",\"status\":\"False\"}],"
      "\"containerStatuses\":[{\"name\":\"a\",\"state\":{\"terminated\":{"
      "\"exitCode\":0,\"message\":\"checkpoint=s3://b/step-7\"}}}]}",
      0, NULL);
  struct gq_pod p;
  char err[512];

  (void)state;
  json_object_set_new(obj, "status", status);
  json_object_set_new(json_object_get(obj, "metadata"), "deletionTimestamp",
                      json_string("2026-11-29T12:00:00Z"));
  assert_int_equal(gq_pod_decode(obj, &p, err, sizeof(err)), 0);
  assert_int_equal(p.phase, GQ_POD_FAILED);
  assert_string_equal(p.status_reason, "OutOfnvidia.com/gpu");
  assert_string_equal(p.unschedulable, "Unschedulable");
  assert_string_equal(p.disruption, "EvictionByEvictionAPI");
  assert_false(p.ready);
  assert_string_equal(p.termination_msg, "checkpoint=s3://b/step-7");
  assert_int_equal(p.exit_code, 0);
  assert_true(p.meta.deletion_ms > 0);
  assert_false(gq_pod_holds_resources(&p));
  gq_pod_release(&p);
  json_decref(obj);
}

/* Decodes a minimal pod with status and metadata.annotations set from
 * single-quoted JSON (either may be NULL) into *p; returns the document,
 * whose status and annotations the caller may then change. */
static json_t *decode_sq(const char *status_sq, const char *ann_sq,
                         struct gq_pod *p)
{
  json_t *obj = pod_with_spec("{\"containers\":[{\"name\":\"a\"}]}");
  char err[512] = "";

  if (status_sq)
    json_object_set_new(obj, "status", gq_test_json_sq(status_sq));
  if (ann_sq)
    json_object_set_new(json_object_get(obj, "metadata"), "annotations",
                        gq_test_json_sq(ann_sq));
  if (gq_pod_decode(obj, p, err, sizeof(err)) != 0)
    fail_msg("decode: %s", err);
  return obj;
}

/* Which annotations are kept: keys in gpuq.dev or a subdomain of it, with
 * string values. */
static const struct {
  const char *key;
  const char *want; /* NULL: not kept */
} ann_cases[] = {
    {"gpuq.dev/flavor", "NVIDIA-H100-80GB-HBM3"},
    {"gpuq.dev/node", "gpu-h100-00"},
    {"sim.gpuq.dev/run-seconds", "3600"},
    {"a.b.gpuq.dev/x", "deep"},
    {"kubectl.kubernetes.io/last-applied-configuration", NULL},
    {"notgpuq.dev/x", NULL},      /* another domain that ends the same */
    {"gpuq.dev.example.com/x", NULL},
    {"gpuq.dev", NULL},           /* no prefix at all */
    {"gpuq.dev/number", NULL},    /* not a string value */
};

static void test_annotations(void **state)
{
  struct gq_pod p;
  json_t *obj = decode_sq(
      NULL,
      "{'gpuq.dev/flavor':'NVIDIA-H100-80GB-HBM3','gpuq.dev/node':"
      "'gpu-h100-00','sim.gpuq.dev/run-seconds':'3600','a.b.gpuq.dev/x':"
      "'deep','kubectl.kubernetes.io/last-applied-configuration':'{}',"
      "'notgpuq.dev/x':'y','gpuq.dev.example.com/x':'y','gpuq.dev':'y',"
      "'gpuq.dev/number':5}",
      &p);
  size_t kept = 0;

  (void)state;
  /* the values are the pod's own: changing the document changes nothing
   * (and a borrowed pointer would be a use after free under ASan) */
  json_object_clear(json_object_get(json_object_get(obj, "metadata"),
                                    "annotations"));
  for (size_t i = 0; i < sizeof(ann_cases) / sizeof(ann_cases[0]); i++) {
    const char *got = gq_pod_annotation(&p, ann_cases[i].key);

    if (!ann_cases[i].want) {
      if (got)
        fail_msg("%s: kept as '%s'", ann_cases[i].key, got);
      continue;
    }
    kept++;
    if (!got || strcmp(got, ann_cases[i].want) != 0)
      fail_msg("%s: got '%s', want '%s'", ann_cases[i].key,
               got ? got : "(null)", ann_cases[i].want);
  }
  assert_int_equal(p.n_annotations, kept);
  gq_pod_release(&p);
  assert_null(p.annotations);
  assert_null(p.strings);
  json_decref(obj);
}

static void test_terminations(void **state)
{
  struct gq_pod p;
  json_t *obj = decode_sq(
      "{'phase':'Running','containerStatuses':["
      "{'name':'a','state':{'terminated':{'exitCode':0,'reason':'Completed',"
      "'message':'checkpoint=s3://b/step-7','finishedAt':"
      "'2026-11-29T12:00:05Z'}}},"
      "{'name':'b','state':{'running':{}},'lastState':{'terminated':{"
      "'exitCode':137,'reason':'OOMKilled','finishedAt':'yesterday'}}},"
      "{'name':'c','state':{'terminated':{'exitCode':2}}},"
      "{'name':'d','state':{'waiting':{'reason':'ContainerCreating'}}},"
      "'not a container status']}",
      NULL, &p);
  const struct gq_pod_term *t;

  (void)state;
  /* owned copies survive the document's change */
  json_object_del(json_object_get(obj, "status"), "containerStatuses");

  assert_int_equal(p.n_terminated, 2);
  t = &p.terminated[0];
  assert_string_equal(t->container, "a");
  assert_int_equal(t->exit_code, 0);
  assert_string_equal(t->reason, "Completed");
  assert_string_equal(t->message, "checkpoint=s3://b/step-7");
  assert_int_equal(t->finished_ms, 1795953605000LL);
  t = &p.terminated[1];
  assert_string_equal(t->container, "c");
  assert_int_equal(t->exit_code, 2);
  assert_string_equal(t->reason, "");
  assert_string_equal(t->message, "");
  assert_int_equal(t->finished_ms, 0);

  assert_int_equal(p.n_last_terminated, 1);
  t = &p.last_terminated[0];
  assert_string_equal(t->container, "b");
  assert_int_equal(t->exit_code, 137);
  assert_string_equal(t->reason, "OOMKilled");
  assert_int_equal(t->finished_ms, 0); /* not an RFC 3339 time */
  gq_pod_release(&p);
  assert_null(p.terminated);
  assert_null(p.last_terminated);
  json_decref(obj);
}

/* A pod without annotations or container statuses owns nothing extra. */
static void test_no_owned_fields(void **state)
{
  struct gq_pod p;
  json_t *obj = decode_sq(NULL, NULL, &p);

  (void)state;
  assert_null(p.strings);
  assert_null(p.annotations);
  assert_int_equal(p.n_annotations, 0);
  assert_null(p.terminated);
  assert_int_equal(p.n_terminated, 0);
  assert_null(p.last_terminated);
  assert_int_equal(p.n_last_terminated, 0);
  assert_null(gq_pod_annotation(&p, "gpuq.dev/flavor"));
  assert_int_equal(p.exit_code, -1);
  gq_pod_release(&p);
  json_decref(obj);
}

static const struct {
  const char *spec, *want;
} bad_cases[] = {
    {"{}", "spec.containers: required value"},
    {"{\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":{\"cpu\":"
     "\"-1\"}}}]}",
     "spec.containers[0].resources.requests[cpu]: must be non-negative, got "
     "\"-1\""},
    {"{\"containers\":[{\"image\":\"x\"}]}",
     "spec.containers[0].name: required value"},
    {"{\"containers\":[{\"name\":\"a\"}],\"tolerations\":[{\"value\":\"v\"}]}",
     "spec.tolerations[0].operator: must be Exists when key is empty"},
    {"{\"containers\":[{\"name\":\"a\"}],\"affinity\":{\"nodeAffinity\":{"
     "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\""
     ":[{\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"In\"}]}]}}}}",
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
     ".nodeSelectorTerms[0].matchExpressions[0].values: wrong number of values "
     "for operator In, got 0"},
    {"{\"containers\":[{\"name\":\"a\"}],\"affinity\":\"near\"}",
     "spec.affinity: must be an object, got \"near\""},
    {"{\"containers\":[{\"name\":\"a\"}],\"nodeSelector\":{\"k\":1}}",
     "spec.nodeSelector[k]: must be a string, got 1"},
};

static void test_rejections(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
    json_t *obj = pod_with_spec(bad_cases[i].spec);
    struct gq_pod p;
    char err[512] = "";

    assert_int_equal(gq_pod_decode(obj, &p, err, sizeof(err)), GQ_EINVAL);
    if (strcmp(err, bad_cases[i].want) != 0)
      fail_msg("case %zu:\n got  '%s'\n want '%s'", i, err, bad_cases[i].want);
    assert_null(p.json);
    json_decref(obj);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_effective_requests),
      cmocka_unit_test(test_scheduling_constraints),
      cmocka_unit_test(test_status),
      cmocka_unit_test(test_annotations),
      cmocka_unit_test(test_terminations),
      cmocka_unit_test(test_no_owned_fields),
      cmocka_unit_test(test_rejections),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
