/* The CRDs in crds/ parse, carry the names, scope, subresource and printer
 * columns DESIGN §2 requires, and agree with the controller's validator on
 * every bound (the schema and api/gpujob.c, api/teamquota.c must not drift
 * apart). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/gpujob.h"
#include "api/teamquota.h"
#include "api/yaml.h"

static json_t *load_crd(const char *path)
{
  char err[512];
  json_t *docs, *crd;

  if (gq_yaml_load_file(path, &docs, err, sizeof(err)) != 0)
    fail_msg("%s", err);
  assert_int_equal(json_array_size(docs), 1);
  crd = json_incref(json_array_get(docs, 0));
  json_decref(docs);
  assert_string_equal(json_string_value(json_object_get(crd, "kind")),
                      "CustomResourceDefinition");
  return crd;
}

static json_t *version0(json_t *crd)
{
  return json_array_get(json_object_get(json_object_get(crd, "spec"),
                                        "versions"),
                        0);
}

/* Walks a dotted list of property names under the openAPIV3Schema. */
static json_t *prop(json_t *crd, const char *dotted)
{
  json_t *s = json_object_get(json_object_get(version0(crd), "schema"),
                              "openAPIV3Schema");
  char buf[256], *save = NULL;

  snprintf(buf, sizeof(buf), "%s", dotted);
  for (char *k = strtok_r(buf, ".", &save); k; k = strtok_r(NULL, ".", &save)) {
    json_t *props = json_object_get(s, "properties");

    if (!props)
      props = json_object_get(json_object_get(s, "items"), "properties");
    s = json_object_get(props, k);
    if (!s)
      fail_msg("schema has no property '%s' (in %s)", k, dotted);
  }
  return s;
}

static void assert_bounds(json_t *crd, const char *dotted, int64_t min,
                          int64_t max)
{
  json_t *s = prop(crd, dotted);

  if (json_integer_value(json_object_get(s, "minimum")) != min ||
      json_integer_value(json_object_get(s, "maximum")) != max)
    fail_msg("%s: schema bounds differ from the validator's [%lld, %lld]",
             dotted, (long long)min, (long long)max);
}

static void assert_columns(json_t *crd, const char *const *names,
                           const char *const *types)
{
  json_t *cols = json_object_get(version0(crd), "additionalPrinterColumns");
  size_t i;

  for (i = 0; names[i]; i++) {
    json_t *c = json_array_get(cols, i);

    assert_non_null(c);
    assert_string_equal(json_string_value(json_object_get(c, "name")),
                        names[i]);
    assert_string_equal(json_string_value(json_object_get(c, "type")),
                        types[i]);
  }
}

static void assert_names(json_t *crd, const char *plural, const char *kind,
                         const char *shortname, const char *scope)
{
  json_t *spec = json_object_get(crd, "spec");
  json_t *names = json_object_get(spec, "names");
  json_t *v0 = version0(crd);
  char want_name[128];

  snprintf(want_name, sizeof(want_name), "%s.%s", plural, GQ_GROUP);
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(crd, "metadata"),
                                        "name")),
      want_name);
  assert_string_equal(json_string_value(json_object_get(spec, "group")),
                      GQ_GROUP);
  assert_string_equal(json_string_value(json_object_get(spec, "scope")), scope);
  assert_string_equal(json_string_value(json_object_get(names, "kind")), kind);
  assert_string_equal(
      json_string_value(json_array_get(json_object_get(names, "shortNames"), 0)),
      shortname);
  assert_string_equal(
      json_string_value(json_array_get(json_object_get(names, "categories"), 0)),
      "gpuq");
  assert_string_equal(json_string_value(json_object_get(v0, "name")),
                      GQ_VERSION);
  assert_true(json_is_object(
      json_object_get(json_object_get(v0, "subresources"), "status")));
}

static void test_gpujob_crd(void **state)
{
  static const char *const cols[] = {"TEAM", "PRIORITY", "GPUS", "PHASE",
                                     "POSITION", "ETA", "AGE", NULL};
  /* ETA is a string column: a future `date` prints as <invalid>. */
  static const char *const types[] = {"string", "integer", "integer", "string",
                                      "integer", "string", "date", NULL};
  json_t *crd = load_crd("crds/gpujobs.gpuq.dev.yaml");

  (void)state;
  assert_names(crd, "gpujobs", "GpuJob", "gj", "Namespaced");
  assert_columns(crd, cols, types);
  assert_bounds(crd, "spec.replicas", 1, GQ_MAX_REPLICAS);
  assert_bounds(crd, "spec.gpusPerReplica", 1, GQ_MAX_GPUS_PER_REPLICA);
  assert_bounds(crd, "spec.gpu.minMemoryMiB", 0, GQ_MAX_MIN_MEMORY_MIB);
  assert_bounds(crd, "spec.checkpoint.gracePeriodSeconds", 1, GQ_MAX_GRACE_S);
  assert_bounds(crd, "spec.checkpoint.intervalSeconds", 1, GQ_MAX_DURATION_S);
  assert_bounds(crd, "spec.expectedDurationSeconds", 1, GQ_MAX_DURATION_S);
  assert_bounds(crd, "spec.activeDeadlineSeconds", 1, GQ_MAX_DURATION_S);
  assert_bounds(crd, "spec.startupTimeoutSeconds", 1, GQ_MAX_GRACE_S);
  assert_bounds(crd, "spec.backoffLimit", 0, GQ_MAX_BACKOFF_LIMIT);
  assert_int_equal(json_integer_value(json_object_get(
                       prop(crd, "spec.backoffLimit"), "default")),
                   GQ_DEFAULT_BACKOFF_LIMIT);
  assert_string_equal(json_string_value(json_object_get(
                          prop(crd, "spec.gpu.resource"), "default")),
                      GQ_DEFAULT_GPU_RESOURCE);
  assert_true(json_is_true(json_object_get(
      prop(crd, "spec.template"), "x-kubernetes-preserve-unknown-fields")));
  assert_int_equal(json_array_size(json_object_get(
                       prop(crd, "spec.drainPolicy"), "enum")),
                   3);
  assert_int_equal(json_array_size(json_object_get(
                       prop(crd, "status.phase"), "enum")),
                   GQ_PHASE_SUSPENDED);
  json_decref(crd);
}

static void test_teamquota_crd(void **state)
{
  static const char *const cols[] = {"COHORT", "NOMINAL", "USED", "BORROWED",
                                     "PENDING", "AGE", NULL};
  static const char *const types[] = {"string", "integer", "integer",
                                      "integer", "integer", "date", NULL};
  json_t *crd = load_crd("crds/teamquotas.gpuq.dev.yaml");

  (void)state;
  assert_names(crd, "teamquotas", "TeamQuota", "tq", "Cluster");
  assert_columns(crd, cols, types);
  assert_bounds(crd, "spec.resources.nominal", 0, GQ_MAX_QUOTA_GPUS);
  assert_bounds(crd, "spec.resources.borrowingLimit", 0, GQ_MAX_QUOTA_GPUS);
  assert_bounds(crd, "spec.resources.lendingLimit", 0, GQ_MAX_QUOTA_GPUS);
  assert_int_equal(json_integer_value(json_object_get(
                       prop(crd, "spec.resources"), "maxItems")),
                   GQ_MAX_QUOTA_RESOURCES);
  assert_string_equal(json_string_value(json_object_get(
                          prop(crd, "spec.preemption.reclaimFromCohort"),
                          "default")),
                      "Any");
  assert_bounds(crd, "spec.idlePolicy.threshold", 0, 100);
  assert_bounds(crd, "spec.idlePolicy.afterMinutes", 1, GQ_IDLE_AFTER_MIN_MAX);
  assert_int_equal(json_integer_value(json_object_get(
                       prop(crd, "spec.idlePolicy.threshold"), "default")),
                   GQ_IDLE_THRESHOLD_DEFAULT);
  assert_int_equal(json_integer_value(json_object_get(
                       prop(crd, "spec.idlePolicy.afterMinutes"), "default")),
                   GQ_IDLE_AFTER_MIN_DEFAULT);
  json_decref(crd);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpujob_crd),
      cmocka_unit_test(test_teamquota_crd),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
