/* gpuq-sim's OpenAPI (issue 24): the definitions of the built-in kinds
 * that the build generates from @kubernetes/client-node
 * (gpuq-sim-openapi.json next to the binary) and the unknown-field
 * handling they allow.
 *
 * With the real kubectl: `explain` of pods, pods.spec.containers.resources,
 * nodes.status and gpujobs.spec; `apply -f` of a `kind: List` with kubectl's
 * default validation (client-side, from the /openapi/v2 protobuf), and
 * such a List refused for an unknown field; a single object with an unknown
 * field refused by the server (fieldValidation=Strict) and, with
 * --validate=warn, created without it and a warning printed.
 * Over HTTP: /openapi/v2 as JSON and protobuf, /openapi/v3/api/v1 and
 * /apis/batch/v1 with named, GVK-tagged schemas and the fieldValidation
 * parameter; unknown fields of a pod and of a GpuJob with no
 * fieldValidation (Warn: one Warning header per field), Strict (400),
 * Ignore (silent) and a bad value (400).
 * Without the file (a sim started with --openapi naming none), OpenAPI
 * for the CRDs only, as the log says: /openapi/v2 is 404, explain of
 * gpujobs still works and explain of pods does not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/support/fixture.h"
#include "tests/support/proc.h"

#include <unistd.h>

static struct gq_test_sim sim;
static int have_defs; /* the build generated gpuq-sim-openapi.json */

static int group_setup(void **state)
{
  (void)state;
  have_defs = access(GQ_BINARY_DIR "/gpuq-sim-openapi.json", R_OK) == 0;
  return gq_test_sim_start(&sim, NULL);
}

/* Skips a test that needs the generated definitions when the build had
 * no @kubernetes/client-node to make them from. */
static void need_defs(void)
{
  if (have_defs)
    return;
  fprintf(stderr, "skipped: no " GQ_BINARY_DIR "/gpuq-sim-openapi.json "
          "(make deps installs @kubernetes/client-node; then re-run cmake)\n");
  skip();
}

static int group_teardown(void **state)
{
  (void)state;
  return gq_test_sim_stop(&sim) == 0 ? 0 : -1;
}

#define KUBECTL(s, o, want, ...)                                             \
  GQ_TEST_KUBECTL((s), (o), (want), NULL, __VA_ARGS__)

static void assert_lacks(const char *text, const char *needle)
{
  if (strstr(text, needle))
    fail_msg("unexpected '%s' in:\n%s", needle, text);
}

/* A manifest in the sim's directory; path gets its name. */
static void manifest(char *path, size_t len, const char *name,
                     const char *text)
{
  snprintf(path, len, "%s/%s", sim.dir, name);
  assert_int_equal(gq_test_write_file(path, text, strlen(text)), 0);
}

static void test_explain(void **state)
{
  static const struct {
    const char *what;
    const char *want[3];
  } cases[] = {
      {"pods", {"KIND:       Pod", "spec\t<PodSpec>", "PodSpec is a"}},
      {"pods.spec.containers.resources",
       {"FIELD: resources <ResourceRequirements>", "limits\t<map[string]string>",
        "Limits describes the maximum amount"}},
      {"nodes.status", {"FIELD: status <NodeStatus>", "capacity\t<map[string]",
                        "nodeInfo\t<NodeSystemInfo>"}},
      {"gpujobs.spec", {"GROUP:      gpuq.dev", "KIND:       GpuJob",
                        "gpusPerReplica"}},
      {"jobs.spec.template.spec.containers",
       {"GROUP:      batch", "image\t<string>", "name\t<string> -required-"}},
  };
  struct gq_test_out o;

  (void)state;
  need_defs();
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    KUBECTL(&sim, &o, 0, "explain", cases[i].what);
    for (size_t j = 0; j < 3; j++)
      gq_test_assert_has(o.out, cases[i].want[j]);
    gq_test_out_free(&o);
  }
}

static void test_apply_list(void **state)
{
  char path[400];
  struct gq_test_out o;

  (void)state;
  need_defs();
  manifest(path, sizeof(path), "list.yaml",
           "apiVersion: v1\nkind: List\nitems:\n"
           "- apiVersion: v1\n  kind: ConfigMap\n"
           "  metadata: {name: l1, namespace: default}\n  data: {k: v}\n"
           "- apiVersion: scheduling.k8s.io/v1\n  kind: PriorityClass\n"
           "  metadata: {name: l-pc}\n  value: 7\n"
           "- apiVersion: gpuq.dev/v1alpha1\n  kind: TeamQuota\n"
           "  metadata: {name: l-team}\n"
           "  spec: {namespaces: [l-team], resources: [{flavor: '*', "
           "nominal: 8}]}\n");
  KUBECTL(&sim, &o, 0, "apply", "-f", path);
  gq_test_assert_has(o.out, "configmap/l1 created");
  gq_test_assert_has(o.out, "priorityclass.scheduling.k8s.io/l-pc created");
  gq_test_assert_has(o.out, "teamquota.gpuq.dev/l-team created");
  gq_test_out_free(&o);
  /* kubectl's own validation, from /openapi/v2, finds the unknown field */
  manifest(path, sizeof(path), "list-bad.yaml",
           "apiVersion: v1\nkind: List\nitems:\n"
           "- apiVersion: v1\n  kind: ConfigMap\n"
           "  metadata: {name: l2, namespace: default}\n  bogus: 1\n");
  KUBECTL(&sim, &o, 1, "apply", "-f", path);
  gq_test_assert_has(o.err, "unknown field \"bogus\" in io.k8s.api.core.v1.ConfigMap");
  gq_test_out_free(&o);
  KUBECTL(&sim, &o, 1, "get", "configmap", "l2", "-n", "default");
  gq_test_out_free(&o);
}

static void test_unknown_fields_kubectl(void **state)
{
  char path[400];
  struct gq_test_out o;

  (void)state;
  need_defs();
  manifest(path, sizeof(path), "cm-bad.yaml",
           "apiVersion: v1\nkind: ConfigMap\n"
           "metadata: {name: u1, namespace: default}\n"
           "data: {k: v}\nfoo: 1\n");
  KUBECTL(&sim, &o, 1, "apply", "-f", path);
  gq_test_assert_has(o.err, "ConfigMap in version \"v1\" cannot be handled as a "
                    "ConfigMap: strict decoding error: unknown field \"foo\"");
  gq_test_out_free(&o);
  KUBECTL(&sim, &o, 0, "create", "--validate=warn", "-f", path);
  gq_test_assert_has(o.err, "Warning: unknown field \"foo\"");
  gq_test_assert_has(o.out, "configmap/u1 created");
  gq_test_out_free(&o);
  KUBECTL(&sim, &o, 0, "get", "configmap", "u1", "-n", "default", "-o",
          "json");
  gq_test_assert_has(o.out, "\"k\": \"v\"");
  assert_lacks(o.out, "foo");
  gq_test_out_free(&o);
}

/* POSTs body to path (query included); returns the status, the answer
 * in *r. */
static int post(const char *path, const char *body,
                struct gq_test_http_resp *r)
{
  char url[600];

  snprintf(url, sizeof(url), "%s%s", sim.url, path);
  return gq_test_http_ex("POST", url, body, NULL, NULL, r);
}

static void test_unknown_fields_http(void **state)
{
  static const char pod[] =
      "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
      "\"%s\"},\"spec\":{\"foo\":1,\"containers\":[{\"name\":\"c\","
      "\"image\":\"x\",\"bad\":2}]}}";
  static const char job[] =
      "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
      "\"metadata\":{\"name\":\"uj\"},\"spec\":{\"team\":\"default\","
      "\"gpusPerReplica\":1,\"extra\":true,\"template\":{\"spec\":"
      "{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}}}";
  struct gq_test_http_resp r;
  char body[600];

  (void)state;
  need_defs();
  /* no fieldValidation: kube-apiserver's default, Warn */
  snprintf(body, sizeof(body), pod, "uw");
  assert_int_equal(post("/api/v1/namespaces/default/pods", body, &r), 201);
  gq_test_assert_has(r.headers,
             "Warning: 299 - \"unknown field \\\"spec.containers[0].bad\\\"\"");
  gq_test_assert_has(r.headers, "Warning: 299 - \"unknown field \\\"spec.foo\\\"\"");
  assert_lacks(r.body, "\"foo\"");
  assert_lacks(r.body, "\"bad\"");
  gq_test_http_resp_free(&r);
  snprintf(body, sizeof(body), pod, "us");
  assert_int_equal(post("/api/v1/namespaces/default/pods?fieldValidation="
                        "Strict", body, &r), 400);
  gq_test_assert_has(r.body, "Pod in version \\\"v1\\\" cannot be handled as a Pod: "
                     "strict decoding error: unknown field \\\"spec.containers"
                     "[0].bad\\\", unknown field \\\"spec.foo\\\"");
  gq_test_http_resp_free(&r);
  snprintf(body, sizeof(body), pod, "ui");
  assert_int_equal(post("/api/v1/namespaces/default/pods?fieldValidation="
                        "Ignore", body, &r), 201);
  assert_lacks(r.headers, "Warning");
  assert_lacks(r.body, "\"foo\"");
  gq_test_http_resp_free(&r);
  snprintf(body, sizeof(body), pod, "ub");
  assert_int_equal(post("/api/v1/namespaces/default/pods?fieldValidation="
                        "Loose", body, &r), 400);
  gq_test_assert_has(r.body, "fieldValidation: Unsupported value: \\\"Loose\\\"");
  gq_test_http_resp_free(&r);
  /* custom resources share the rule: Warn by default */
  assert_int_equal(post("/apis/gpuq.dev/v1alpha1/namespaces/default/gpujobs",
                        job, &r), 201);
  gq_test_assert_has(r.headers, "Warning: 299 - \"unknown field \\\"spec.extra\\\"\"");
  assert_lacks(r.body, "extra");
  gq_test_http_resp_free(&r);
}

static json_t *get_json(const char *path)
{
  char url[600];
  struct gq_test_http_resp r;
  json_t *v;

  snprintf(url, sizeof(url), "%s%s", sim.url, path);
  assert_int_equal(gq_test_http_ex("GET", url, NULL, NULL, NULL, &r), 200);
  v = json_loads(r.body, 0, NULL);
  gq_test_http_resp_free(&r);
  assert_non_null(v);
  return v;
}

/* The GVK list of schema 'name' in defs has group/version/kind. */
static void assert_gvk(const json_t *defs, const char *name, const char *g,
                       const char *v, const char *k)
{
  const json_t *e =
      json_array_get(json_object_get(json_object_get(defs, name),
                                     "x-kubernetes-group-version-kind"), 0);

  if (!e || strcmp(json_string_value(json_object_get(e, "group")), g) ||
      strcmp(json_string_value(json_object_get(e, "version")), v) ||
      strcmp(json_string_value(json_object_get(e, "kind")), k))
    fail_msg("%s: no x-kubernetes-group-version-kind %s/%s %s", name, g, v,
             k);
}

static void test_openapi_docs(void **state)
{
  static const char *const pb[] = {
      "Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
      NULL};
  char url[600];
  struct gq_test_http_resp r;
  json_t *doc = get_json("/openapi/v2"), *defs, *op;

  (void)state;
  need_defs();
  assert_string_equal(json_string_value(json_object_get(doc, "swagger")),
                      "2.0");
  defs = json_object_get(doc, "definitions");
  assert_gvk(defs, "io.k8s.api.core.v1.Pod", "", "v1", "Pod");
  assert_gvk(defs, "io.k8s.api.batch.v1.Job", "batch", "v1", "Job");
  assert_gvk(defs, "dev.gpuq.v1alpha1.GpuJob", "gpuq.dev", "v1alpha1",
             "GpuJob");
  assert_string_equal(
      json_string_value(json_object_get(
          json_object_get(json_object_get(json_object_get(
                              defs, "dev.gpuq.v1alpha1.GpuJob"),
                                          "properties"),
                          "metadata"),
          "$ref")),
      "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta");
  assert_non_null(json_object_get(
      json_object_get(json_object_get(defs, "io.k8s.api.core.v1.Container"),
                      "properties"),
      "resources"));
  json_decref(doc);
  snprintf(url, sizeof(url), "%s/openapi/v2", sim.url);
  assert_int_equal(gq_test_http_ex("GET", url, NULL, NULL, pb, &r), 200);
  gq_test_assert_has(r.headers, "Content-Type: application/com.github.proto-openapi."
                        "spec.v2.v1.0+protobuf");
  assert_true(r.len > 100000 && !memcmp(r.body, "\x0a\x03" "2.0", 5));
  gq_test_http_resp_free(&r);

  doc = get_json("/openapi/v3");
  assert_non_null(json_object_get(json_object_get(doc, "paths"), "api/v1"));
  assert_non_null(json_object_get(json_object_get(doc, "paths"),
                                  "apis/batch/v1"));
  json_decref(doc);
  doc = get_json("/openapi/v3/api/v1");
  defs = json_object_get(json_object_get(doc, "components"), "schemas");
  assert_gvk(defs, "io.k8s.api.core.v1.Pod", "", "v1", "Pod");
  assert_gvk(defs, "io.k8s.api.core.v1.NodeList", "", "v1", "NodeList");
  assert_non_null(json_object_get(
      defs, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
  assert_string_equal(
      json_string_value(json_object_get(
          json_array_get(json_object_get(
                             json_object_get(json_object_get(json_object_get(
                                                 defs,
                                                 "io.k8s.api.core.v1.Pod"),
                                                             "properties"),
                                             "spec"),
                             "allOf"),
                         0),
          "$ref")),
      "#/components/schemas/io.k8s.api.core.v1.PodSpec");
  op = json_object_get(
      json_object_get(json_object_get(doc, "paths"),
                      "/api/v1/namespaces/{namespace}/pods/{name}"),
      "patch");
  assert_string_equal(json_string_value(json_object_get(
                          json_array_get(json_object_get(op, "parameters"), 0),
                          "name")),
                      "fieldValidation");
  json_decref(doc);
  doc = get_json("/openapi/v3/apis/batch/v1");
  defs = json_object_get(json_object_get(doc, "components"), "schemas");
  assert_gvk(defs, "io.k8s.api.batch.v1.Job", "batch", "v1", "Job");
  assert_non_null(json_object_get(defs, "io.k8s.api.core.v1.PodTemplateSpec"));
  assert_null(json_object_get(defs, "io.k8s.api.core.v1.Node"));
  json_decref(doc);
}

static void test_without_definitions(void **state)
{
  static const char *const args[] = {"--openapi", "/nonexistent/defs.json",
                                     NULL};
  struct gq_test_sim bare;
  struct gq_test_out o;
  struct gq_test_http_resp r;
  char url[600], *log;
  json_t *doc;

  (void)state;
  assert_int_equal(gq_test_sim_start(&bare, args), 0);
  snprintf(url, sizeof(url), "%s/openapi/v2", bare.url);
  assert_int_equal(gq_test_http_ex("GET", url, NULL, NULL, NULL, &r), 404);
  gq_test_http_resp_free(&r);
  snprintf(url, sizeof(url), "%s/openapi/v3/api/v1", bare.url);
  assert_int_equal(gq_test_http_ex("GET", url, NULL, NULL, NULL, &r), 200);
  doc = json_loads(r.body, 0, NULL);
  assert_int_equal(json_object_size(json_object_get(
                       json_object_get(doc, "components"), "schemas")),
                   0);
  json_decref(doc);
  gq_test_http_resp_free(&r);
  KUBECTL(&bare, &o, 0, "explain", "gpujobs.spec");
  gq_test_assert_has(o.out, "gpusPerReplica");
  gq_test_out_free(&o);
  gq_test_kubectl(&bare, &o, NULL, "explain", "pods", NULL);
  assert_int_not_equal(o.status, 0);
  gq_test_out_free(&o);
  log = gq_test_read_file(bare.log, NULL);
  assert_non_null(log);
  gq_test_assert_has(log, "no OpenAPI schemas for the built-in kinds: cannot read "
                  "'/nonexistent/defs.json'");
  gq_test_assert_has(log, "serving OpenAPI for the CRDs only");
  free(log);
  assert_int_equal(gq_test_sim_stop(&bare), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_explain),
      cmocka_unit_test(test_apply_list),
      cmocka_unit_test(test_unknown_fields_kubectl),
      cmocka_unit_test(test_unknown_fields_http),
      cmocka_unit_test(test_openapi_docs),
      cmocka_unit_test(test_without_definitions),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
