/* Tests for sim/schema: the CRDs in crds/ applied to the manifests in
 * examples/ (valid, and only defaults added), a table of invalid objects
 * with the exact first cause the apiserver would give, pruning, keyword
 * coverage on a small hand-written schema, the limits, and the structural
 * check run when a CRD is created. Run from the repository root. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/yaml.h"
#include "base/err.h"
#include "sim/schema.h"

static json_t *jobs_crd, *quotas_crd;
static const json_t *job_schema, *quota_schema;

/* A GpuJob and a TeamQuota that pass; cases change one field of them. */
static const char base_job[] =
    "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
    "\"metadata\":{\"name\":\"j\",\"namespace\":\"research\"},"
    "\"spec\":{\"team\":\"research\",\"gpusPerReplica\":1,"
    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","
    "\"image\":\"i\"}]}}}}";
static const char base_quota[] =
    "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"TeamQuota\","
    "\"metadata\":{\"name\":\"research\"},"
    "\"spec\":{\"namespaces\":[\"research\"],"
    "\"resources\":[{\"flavor\":\"*\",\"nominal\":8}]}}";

/* A condition with every required field, for status lists. */
#define COND(type, status)                                                     \
  "{\"type\":\"" type "\",\"status\":\"" status "\","                          \
  "\"lastTransitionTime\":\"2024-06-01T12:00:00Z\",\"reason\":\"R\","          \
  "\"message\":\"m\"}"

/* --- helpers ---------------------------------------------------------- */

static json_t *parse(const char *text)
{
  json_error_t e;
  json_t *v = json_loads(text, JSON_DECODE_ANY, &e);

  if (!v)
    fail_msg("bad test JSON at %d: %s: %s", e.position, e.text, text);
  return v;
}

static json_t *load_crd(const char *path)
{
  char err[512];
  json_t *docs, *crd;

  if (gq_yaml_load_file(path, &docs, err, sizeof err) != 0)
    fail_msg("%s", err);
  assert_int_equal(json_array_size(docs), 1);
  crd = json_incref(json_array_get(docs, 0));
  json_decref(docs);
  return crd;
}

/* The value at a dotted path of object keys, or NULL. */
static json_t *at(json_t *v, const char *dotted)
{
  char buf[256], *save = NULL, *k;

  snprintf(buf, sizeof buf, "%s", dotted);
  for (k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
    v = json_object_get(v, k);
  return v;
}

/* Sets (takes val) or, with val NULL, deletes the field at a dotted path,
 * creating missing objects on the way. */
static void set_at(json_t *obj, const char *dotted, json_t *val)
{
  char buf[256], *dot;
  json_t *parent = obj, *next;
  char *k = buf;

  snprintf(buf, sizeof buf, "%s", dotted);
  while ((dot = strchr(k, '.')) != NULL) {
    *dot = '\0';
    next = json_object_get(parent, k);
    if (!next) {
      next = json_object();
      json_object_set_new(parent, k, next);
    }
    parent = next;
    k = dot + 1;
  }
  if (val)
    json_object_set_new(parent, k, val);
  else
    json_object_del(parent, k);
}

static void dump_report(const struct gq_schema_report *rep)
{
  size_t i;

  for (i = 0; i < rep->n_causes; i++)
    print_message("  cause %zu: %s [%s] %s\n", i, rep->causes[i].field,
                  rep->causes[i].reason, rep->causes[i].message);
  for (i = 0; i < rep->n_unknown; i++)
    print_message("  unknown %zu: %s\n", i, rep->unknown[i]);
}

/* Processed must equal orig except for fields orig lacks, and each of
 * those must be a declared property with a default. */
static void assert_only_defaults_added(const json_t *orig,
                                       const json_t *processed, const json_t *s,
                                       const char *path)
{
  const char *k;
  json_t *v;
  size_t i;

  if (json_is_object(orig) && json_is_object(processed)) {
    json_object_foreach((json_t *)orig, k, v) {
      json_t *p = json_object_get(processed, k);
      const json_t *sub = json_object_get(json_object_get(s, "properties"), k);

      if (!p)
        fail_msg("%s.%s was removed", path, k);
      assert_only_defaults_added(v, p, sub, k);
    }
    json_object_foreach((json_t *)processed, k, v) {
      const json_t *sub = json_object_get(json_object_get(s, "properties"), k);

      if (!json_object_get(orig, k) && !json_object_get(sub, "default"))
        fail_msg("%s.%s was added but has no default", path, k);
    }
    return;
  }
  if (json_is_array(orig) && json_is_array(processed)) {
    assert_int_equal(json_array_size(orig), json_array_size(processed));
    json_array_foreach(orig, i, v) {
      assert_only_defaults_added(v, json_array_get(processed, i),
                                 json_object_get(s, "items"), path);
    }
    return;
  }
  if (!json_equal((json_t *)orig, (json_t *)processed))
    fail_msg("%s changed", path);
}

/* --- setup ------------------------------------------------------------ */

static int load_crds(void **state)
{
  (void)state;
  jobs_crd = load_crd("crds/gpujobs.gpuq.dev.yaml");
  quotas_crd = load_crd("crds/teamquotas.gpuq.dev.yaml");
  job_schema = gq_schema_for_version(jobs_crd, "v1alpha1");
  quota_schema = gq_schema_for_version(quotas_crd, "v1alpha1");
  return job_schema && quota_schema ? 0 : -1;
}

static int free_crds(void **state)
{
  (void)state;
  json_decref(jobs_crd);
  json_decref(quotas_crd);
  return 0;
}

/* --- examples --------------------------------------------------------- */

/* A default the examples must get, or a value they must keep. */
struct default_case {
  const char *file;
  const char *path;
  const char *want_json;
};

static const struct default_case default_cases[] = {
    {"gpujob-eval-single.yaml", "spec.replicas", "1"},
    {"gpujob-eval-single.yaml", "spec.backoffLimit", "3"},
    {"gpujob-eval-single.yaml", "spec.gpu.resource", "\"nvidia.com/gpu\""},
    {"gpujob-eval-single.yaml", "spec.preemptible", "true"},
    {"gpujob-eval-single.yaml", "spec.suspend", "false"},
    {"gpujob-eval-single.yaml", "spec.priority", "10"},
    {"gpujob-wait-drain.yaml", "spec.priority", "0"},
    {"gpujob-mig-inference.yaml", "spec.gpu.resource",
     "\"nvidia.com/mig-1g.10gb\""},
    {"gpujob-llama-finetune.yaml", "spec.replicas", "2"},
    {"teamquota-interns.yaml", "spec.preemption.reclaimFromCohort", "\"Any\""},
    {"teamquota-interns.yaml", "spec.preemption.withinTeam",
     "\"LowerPriority\""},
    {"teamquota-interns.yaml", "spec.weight", "1"},
    {"teamquota-research.yaml", "spec.weight", "2"},
};

static int cmp_name(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_defaults(const char *file, json_t *processed)
{
  size_t i;

  for (i = 0; i < sizeof default_cases / sizeof default_cases[0]; i++) {
    const struct default_case *c = &default_cases[i];
    json_t *want;

    if (strcmp(c->file, file))
      continue;
    want = parse(c->want_json);
    if (!json_equal(at(processed, c->path), want))
      fail_msg("%s: %s is not %s", file, c->path, c->want_json);
    json_decref(want);
  }
}

static void process_example(const char *file)
{
  char path[512], err[512];
  json_t *docs, *doc;
  size_t i;

  snprintf(path, sizeof path, "examples/%s", file);
  if (gq_yaml_load_file(path, &docs, err, sizeof err) != 0)
    fail_msg("%s", err);
  json_array_foreach(docs, i, doc) {
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const json_t *s = !strcmp(kind, "GpuJob") ? job_schema : quota_schema;
    json_t *copy = json_deep_copy(doc);
    struct gq_schema_report rep;
    int rc = gq_schema_process(s, copy, 1, &rep);

    if (rc != 0) {
      dump_report(&rep);
      fail_msg("%s: gq_schema_process() = %d", file, rc);
    }
    assert_only_defaults_added(doc, copy, s, "");
    check_defaults(file, copy);
    gq_schema_report_release(&rep);
    json_decref(copy);
  }
  json_decref(docs);
}

static void test_examples_pass_with_defaults(void **state)
{
  char *names[64];
  size_t n = 0, i;
  struct dirent *de;
  DIR *d = opendir("examples");

  (void)state;
  assert_non_null(d);
  while ((de = readdir(d)) != NULL && n < 64) {
    size_t len = strlen(de->d_name);

    if (len > 5 && !strcmp(de->d_name + len - 5, ".yaml"))
      names[n++] = strdup(de->d_name);
  }
  closedir(d);
  assert_true(n >= 7);
  qsort(names, n, sizeof names[0], cmp_name);
  for (i = 0; i < n; i++) {
    process_example(names[i]);
    free(names[i]);
  }
}

/* --- invalid objects -------------------------------------------------- */

struct object_case {
  const char *name;
  int quota;         /* 1: a TeamQuota, 0: a GpuJob */
  const char *path;  /* dotted field of the base object to change */
  const char *value; /* its JSON; NULL deletes it (unless make is set) */
  json_t *(*make)(void);
  const char *want_field; /* NULL: the object must pass */
  const char *want_reason;
  const char *want_message;
  size_t want_causes; /* 0: not checked */
};

static json_t *long_team(void)
{
  char s[65];

  memset(s, 'a', 64);
  s[64] = '\0';
  return json_string(s);
}

static json_t *list_of(size_t n, int strings)
{
  json_t *a = json_array();
  size_t i;

  for (i = 0; i < n; i++)
    json_array_append_new(a, strings ? json_sprintf("gpu-%zu", i)
                                     : json_integer((json_int_t)i));
  return a;
}

static json_t *seventy_products(void)
{
  return list_of(70, 1);
}

static const struct object_case object_cases[] = {
    {"negative gpusPerReplica", 0, "spec.gpusPerReplica", "-2", NULL,
     "spec.gpusPerReplica", "FieldValueInvalid",
     "Invalid value: -2: spec.gpusPerReplica in body should be greater than "
     "or equal to 1",
     1},
    {"gpusPerReplica above maximum", 0, "spec.gpusPerReplica", "2000", NULL,
     "spec.gpusPerReplica", "FieldValueInvalid",
     "Invalid value: 2000: spec.gpusPerReplica in body should be less than or "
     "equal to 1024",
     1},
    {"string gpusPerReplica", 0, "spec.gpusPerReplica", "\"eight\"", NULL,
     "spec.gpusPerReplica", "FieldValueInvalid",
     "Invalid value: \"eight\": spec.gpusPerReplica in body must be of type "
     "integer: \"string\"",
     1},
    {"fractional gpusPerReplica", 0, "spec.gpusPerReplica", "2.5", NULL,
     "spec.gpusPerReplica", "FieldValueInvalid",
     "Invalid value: 2.5: spec.gpusPerReplica in body must be of type "
     "integer: \"number\"",
     1},
    {"integral real is an integer", 0, "spec.gpusPerReplica", "2.0", NULL, NULL,
     NULL, NULL, 0},
    {"bad enum", 0, "spec.drainPolicy", "\"Sometimes\"", NULL,
     "spec.drainPolicy", "FieldValueNotSupported",
     "Unsupported value: \"Sometimes\": supported values: \"Checkpoint\", "
     "\"Requeue\", \"Wait\"",
     1},
    {"missing team", 0, "spec.team", NULL, NULL, "spec.team",
     "FieldValueRequired", "Required value", 1},
    {"missing spec", 0, "spec", NULL, NULL, "spec", "FieldValueRequired",
     "Required value", 1},
    {"too-long team", 0, "spec.team", NULL, long_team, "spec.team",
     "FieldValueTooLong", "Too long: may not be more than 63 bytes", 1},
    {"empty team", 0, "spec.team", "\"\"", NULL, "spec.team",
     "FieldValueInvalid",
     "Invalid value: \"\": spec.team in body should be at least 1 chars long",
     2},
    {"bad pattern", 0, "spec.team", "\"Bad_Name\"", NULL, "spec.team",
     "FieldValueInvalid",
     "Invalid value: \"Bad_Name\": spec.team in body should match "
     "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'",
     1},
    {"causes in sorted key order", 0, "spec",
     "{\"team\":\"Bad_Name\",\"gpusPerReplica\":0,\"template\":{}}", NULL,
     "spec.gpusPerReplica", "FieldValueInvalid",
     "Invalid value: 0: spec.gpusPerReplica in body should be greater than "
     "or equal to 1",
     2},
    {"duplicate resources list-map key after defaulting", 1, "spec.resources",
     "[{\"flavor\":\"*\",\"nominal\":1},"
     "{\"flavor\":\"*\",\"resource\":\"nvidia.com/gpu\",\"nominal\":2}]",
     NULL, "spec.resources[1]", "FieldValueDuplicate",
     "Duplicate value: {\"flavor\":\"*\",\"resource\":\"nvidia.com/gpu\"}", 1},
    {"distinct resources keys", 1, "spec.resources",
     "[{\"flavor\":\"*\",\"nominal\":1},"
     "{\"flavor\":\"*\",\"resource\":\"nvidia.com/mig-1g.10gb\","
     "\"nominal\":2}]",
     NULL, NULL, NULL, NULL, 0},
    {"bad flavor pattern", 1, "spec.resources",
     "[{\"flavor\":\"bad flavor\",\"nominal\":1}]", NULL,
     "spec.resources[0].flavor", "FieldValueInvalid",
     "Invalid value: \"bad flavor\": spec.resources[0].flavor in body should "
     "match '^(\\*|[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$'",
     1},
    {"resource line without nominal", 1, "spec.resources",
     "[{\"flavor\":\"*\"}]", NULL, "spec.resources[0].nominal",
     "FieldValueRequired", "Required value", 1},
    {"too many products", 0, "spec.gpu.products", NULL, seventy_products,
     "spec.gpu.products", "FieldValueTooMany",
     "Too many: 70: must have at most 64 items", 1},
    {"no namespaces", 1, "spec.namespaces", "[]", NULL, "spec.namespaces",
     "FieldValueInvalid",
     "Invalid value: 0: spec.namespaces in body should have at least 1 items",
     1},
    {"bad date-time", 0, "status.queuedAt", "\"soon\"", NULL, "status.queuedAt",
     "FieldValueInvalid",
     "Invalid value: \"soon\": status.queuedAt in body must be of type "
     "date-time: \"soon\"",
     1},
    {"good date-time", 0, "status.queuedAt", "\"2024-06-01T12:00:00.5+02:00\"",
     NULL, NULL, NULL, NULL, 0},
    {"null list item", 0, "spec.gpu.products", "[null]", NULL,
     "spec.gpu.products[0]", "FieldValueInvalid",
     "Invalid value: \"null\": spec.gpu.products[0] in body must be of type "
     "string: \"null\"",
     1},
    {"null field", 0, "spec.expectedDurationSeconds", "null", NULL,
     "spec.expectedDurationSeconds", "FieldValueInvalid",
     "Invalid value: \"null\": spec.expectedDurationSeconds in body must be "
     "of type integer: \"null\"",
     1},
    {"real below a real minimum", 1, "spec.weight", "0.0001", NULL,
     "spec.weight", "FieldValueInvalid",
     "Invalid value: 0.0001: spec.weight in body should be greater than or "
     "equal to 0.001",
     1},
    {"tiny real in %e form", 1, "spec.weight", "0.00001", NULL, "spec.weight",
     "FieldValueInvalid",
     "Invalid value: 1e-05: spec.weight in body should be greater than or "
     "equal to 0.001",
     1},
    {"integer against a real bound", 1, "spec.weight", "2000000", NULL,
     "spec.weight", "FieldValueInvalid",
     "Invalid value: 2000000: spec.weight in body should be less than or "
     "equal to 1000000",
     1},
    {"real against a real bound", 1, "spec.weight", "10000000.0", NULL,
     "spec.weight", "FieldValueInvalid",
     "Invalid value: 1e+07: spec.weight in body should be less than or equal "
     "to 1e+06",
     1},
    /* kube-openapi compares an integer with int64(bound): 0 >= 0 passes. */
    {"integer 0 passes minimum 0.001", 1, "spec.weight", "0", NULL, NULL, NULL,
     NULL, 0},
    {"real 0.0 fails minimum 0.001", 1, "spec.weight", "0.0", NULL,
     "spec.weight", "FieldValueInvalid",
     "Invalid value: 0: spec.weight in body should be greater than or equal "
     "to 0.001",
     1},
    {"spec of the wrong type", 0, "spec", "\"x\"", NULL, "spec",
     "FieldValueInvalid",
     "Invalid value: \"x\": spec in body must be of type object: \"string\"",
     1},
    {"boolean as a string", 0, "spec.preemptible", "\"yes\"", NULL,
     "spec.preemptible", "FieldValueInvalid",
     "Invalid value: \"yes\": spec.preemptible in body must be of type "
     "boolean: \"string\"",
     1},
    {"metadata of the wrong type", 0, "metadata", "[1]", NULL, "metadata",
     "FieldValueInvalid",
     "Invalid value: [1]: metadata in body must be of type object: \"array\"",
     1},
    {"kind of the wrong type", 0, "kind", "5", NULL, "kind",
     "FieldValueInvalid",
     "Invalid value: 5: kind in body must be of type string: \"integer\"", 1},
    {"checkpoint without grace period", 0, "spec.checkpoint", "{}", NULL,
     "spec.checkpoint.gracePeriodSeconds", "FieldValueRequired",
     "Required value", 1},
    {"duplicate condition types", 0, "status.conditions",
     "[" COND("Ready", "True") "," COND("Ready", "False") "]", NULL,
     "status.conditions[1]", "FieldValueDuplicate",
     "Duplicate value: {\"type\":\"Ready\"}", 1},
    {"bad condition status", 0, "status.conditions",
     "[" COND("Ready", "Maybe") "]", NULL, "status.conditions[0].status",
     "FieldValueNotSupported",
     "Unsupported value: \"Maybe\": supported values: \"True\", \"False\", "
     "\"Unknown\"",
     1},
    {"escaped string value", 0, "spec.team", "\"a\\\"b\\n\"", NULL, "spec.team",
     "FieldValueInvalid",
     "Invalid value: \"a\\\"b\\n\": spec.team in body should match "
     "'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'",
     1},
};

static void run_object_case(const struct object_case *c)
{
  json_t *obj = parse(c->quota ? base_quota : base_job);
  struct gq_schema_report rep;
  int rc;

  if (c->make)
    set_at(obj, c->path, c->make());
  else
    set_at(obj, c->path, c->value ? parse(c->value) : NULL);
  rc = gq_schema_process(c->quota ? quota_schema : job_schema, obj, 1, &rep);
  if (!c->want_field) {
    if (rc != 0 || rep.n_causes != 0) {
      dump_report(&rep);
      fail_msg("%s: want no causes, rc %d", c->name, rc);
    }
  } else {
    if (rc != GQ_EINVAL || rep.n_causes == 0) {
      dump_report(&rep);
      fail_msg("%s: want causes, rc %d", c->name, rc);
    }
    if (strcmp(rep.causes[0].field, c->want_field) ||
        strcmp(rep.causes[0].reason, c->want_reason) ||
        strcmp(rep.causes[0].message, c->want_message) ||
        (c->want_causes && rep.n_causes != c->want_causes)) {
      dump_report(&rep);
      fail_msg("%s: want %zu cause(s), first %s [%s] %s", c->name,
               c->want_causes, c->want_field, c->want_reason, c->want_message);
    }
  }
  assert_int_equal(rep.n_unknown, 0);
  gq_schema_report_release(&rep);
  json_decref(obj);
}

static void test_object_cases(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < sizeof object_cases / sizeof object_cases[0]; i++)
    run_object_case(&object_cases[i]);
}

/* --- keywords on a small schema --------------------------------------- */

static const char small_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"ex\":{\"type\":\"integer\",\"minimum\":0,\"exclusiveMinimum\":true,"
    "\"maximum\":10,\"exclusiveMaximum\":true},"
    "\"tags\":{\"type\":\"array\",\"x-kubernetes-list-type\":\"set\","
    "\"items\":{\"type\":\"string\"}},"
    "\"port\":{\"x-kubernetes-int-or-string\":true},"
    "\"maybe\":{\"type\":\"string\",\"nullable\":true},"
    "\"limits\":{\"type\":\"object\",\"additionalProperties\":"
    "{\"type\":\"integer\",\"minimum\":0}},"
    "\"step\":{\"type\":\"integer\",\"multipleOf\":5},"
    "\"ratio\":{\"type\":\"number\",\"multipleOf\":0.5},"
    "\"name\":{\"type\":\"string\",\"maxLength\":3},"
    "\"free\":{\"type\":\"object\",\"x-kubernetes-preserve-unknown-fields\":"
    "true,\"properties\":{\"known\":{\"type\":\"object\",\"properties\":"
    "{\"a\":{\"type\":\"string\"}}}}},"
    "\"anything\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"x-kubernetes-preserve-unknown-fields\":true}},"
    "\"nested\":{\"type\":\"object\",\"default\":{},\"properties\":"
    "{\"inner\":{\"type\":\"object\",\"default\":{},\"properties\":"
    "{\"n\":{\"type\":\"integer\",\"default\":7}}}}},"
    "\"rows\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"properties\":{\"k\":{\"type\":\"string\",\"default\":\"d\"}}}}"
    "}}";

struct small_case {
  const char *name;
  const char *obj;
  const char *want_field; /* NULL: must pass */
  const char *want_reason;
  const char *want_message;
  size_t want_causes;
};

static const struct small_case small_cases[] = {
    {"exclusive minimum", "{\"ex\":0}", "ex", "FieldValueInvalid",
     "Invalid value: 0: ex in body should be greater than 0", 1},
    {"exclusive maximum", "{\"ex\":10}", "ex", "FieldValueInvalid",
     "Invalid value: 10: ex in body should be less than 10", 1},
    {"inside exclusive bounds", "{\"ex\":5}", NULL, NULL, NULL, 0},
    {"set duplicates, second occurrence each",
     "{\"tags\":[\"a\",\"b\",\"a\",\"a\",\"b\"]}", "tags[2]",
     "FieldValueDuplicate", "Duplicate value: \"a\"", 2},
    {"int-or-string int", "{\"port\":8080}", NULL, NULL, NULL, 0},
    {"int-or-string string", "{\"port\":\"http\"}", NULL, NULL, NULL, 0},
    {"int-or-string boolean", "{\"port\":true}", "port", "FieldValueInvalid",
     "Invalid value: true: port in body must be of type integer,string: "
     "\"boolean\"",
     1},
    {"nullable null", "{\"maybe\":null}", NULL, NULL, NULL, 0},
    {"map values validated", "{\"limits\":{\"a\":1,\"b\":-1}}", "limits.b",
     "FieldValueInvalid",
     "Invalid value: -1: limits.b in body should be greater than or equal to "
     "0",
     1},
    {"integer multipleOf", "{\"step\":7}", "step", "FieldValueInvalid",
     "Invalid value: 7: step in body should be a multiple of 5", 1},
    {"integer multipleOf ok", "{\"step\":15}", NULL, NULL, NULL, 0},
    {"real multipleOf", "{\"ratio\":0.75}", "ratio", "FieldValueInvalid",
     "Invalid value: 0.75: ratio in body should be a multiple of 0.5", 1},
    {"real multipleOf ok", "{\"ratio\":1.5}", NULL, NULL, NULL, 0},
    {"length counts code points", "{\"name\":\"\\u00e9\\u00e9\\u00e9\"}", NULL,
     NULL, NULL, 0},
    {"too many code points", "{\"name\":\"\\u00e9\\u00e9\\u00e9\\u00e9\"}",
     "name", "FieldValueTooLong", "Too long: may not be more than 3 bytes", 1},
    {"preserved object still validates declared fields",
     "{\"free\":{\"x\":1,\"known\":{\"a\":5}}}", "free.known.a",
     "FieldValueInvalid",
     "Invalid value: 5: free.known.a in body must be of type string: "
     "\"integer\"",
     1},
};

static void test_small_schema(void **state)
{
  json_t *schema = parse(small_schema);
  size_t i;

  (void)state;
  assert_int_equal(gq_schema_check_structural(schema, NULL, 0), 0);
  for (i = 0; i < sizeof small_cases / sizeof small_cases[0]; i++) {
    const struct small_case *c = &small_cases[i];
    json_t *obj = parse(c->obj);
    struct gq_schema_report rep;
    int rc = gq_schema_process(schema, obj, 1, &rep);

    if (!c->want_field ? rc != 0
                       : rc != GQ_EINVAL || rep.n_causes != c->want_causes ||
                             strcmp(rep.causes[0].field, c->want_field) ||
                             strcmp(rep.causes[0].reason, c->want_reason) ||
                             strcmp(rep.causes[0].message, c->want_message)) {
      dump_report(&rep);
      fail_msg("%s: rc %d", c->name, rc);
    }
    gq_schema_report_release(&rep);
    json_decref(obj);
  }
  json_decref(schema);
}

static void test_defaults_nest(void **state)
{
  json_t *schema = parse(small_schema);
  json_t *obj = parse("{\"nested\":{\"x\":1},\"rows\":[{},{\"k\":\"set\"}]}");
  json_t *want = parse("{\"nested\":{\"x\":1,\"inner\":{\"n\":7}},"
                       "\"rows\":[{\"k\":\"d\"},{\"k\":\"set\"}]}");
  json_t *empty = parse("{}");
  json_t *want_empty = parse("{\"nested\":{\"inner\":{\"n\":7}}}");
  struct gq_schema_report rep;

  (void)state;
  /* Pruning off: nested.x (undeclared) stays and is not reported. */
  assert_int_equal(gq_schema_process(schema, obj, 0, &rep), 0);
  assert_true(json_equal(obj, want));
  gq_schema_report_release(&rep);
  /* A default object gets its own properties' defaults, recursively; the
   * copy is deep, so the schema's default stays {}. */
  assert_int_equal(gq_schema_process(schema, empty, 1, &rep), 0);
  assert_true(json_equal(empty, want_empty));
  assert_int_equal(
      json_object_size(at((json_t *)schema, "properties.nested.default")), 0);
  gq_schema_report_release(&rep);
  json_decref(schema);
  json_decref(obj);
  json_decref(want);
  json_decref(empty);
  json_decref(want_empty);
}

/* --- pruning ---------------------------------------------------------- */

static void assert_unknown(const struct gq_schema_report *rep,
                           const char *const *want, size_t n)
{
  size_t i;

  if (rep->n_unknown != n)
    dump_report(rep);
  assert_int_equal(rep->n_unknown, n);
  for (i = 0; i < n; i++)
    assert_string_equal(rep->unknown[i], want[i]);
}

static void test_prune_gpujob(void **state)
{
  static const char *const want[] = {"extraTop", "spec.bogus", "spec.gpu.extra",
                                     "status.bogus2"};
  json_t *obj = parse(base_job), *kept;
  struct gq_schema_report rep;

  (void)state;
  set_at(obj, "extraTop", json_integer(1));
  set_at(obj, "metadata.labels", parse("{\"a\":\"b\"}"));
  set_at(obj, "spec.bogus", json_true());
  set_at(obj, "spec.gpu.extra", json_true());
  set_at(obj, "spec.template.whatever", parse("{\"deep\":[{\"x\":1}]}"));
  set_at(obj, "status", parse("{\"phase\":\"Queued\",\"bogus2\":1}"));
  kept = json_deep_copy(obj);

  /* Without pruning nothing is removed or reported. */
  assert_int_equal(gq_schema_process(job_schema, kept, 0, &rep), 0);
  assert_int_equal(rep.n_unknown, 0);
  assert_non_null(at(kept, "spec.bogus"));
  gq_schema_report_release(&rep);

  assert_int_equal(gq_schema_process(job_schema, obj, 1, &rep), GQ_EINVAL);
  assert_int_equal(rep.n_causes, 0);
  assert_unknown(&rep, want, 4);
  assert_null(at(obj, "extraTop"));
  assert_null(at(obj, "spec.bogus"));
  assert_null(at(obj, "spec.gpu.extra"));
  assert_null(at(obj, "status.bogus2"));
  assert_string_equal(json_string_value(at(obj, "status.phase")), "Queued");
  assert_string_equal(json_string_value(at(obj, "spec.gpu.resource")),
                      "nvidia.com/gpu");
  /* spec.template preserves unknown fields; metadata is never pruned. */
  assert_true(json_equal(at(obj, "spec.template.whatever"),
                         at(kept, "spec.template.whatever")));
  assert_non_null(at(obj, "spec.template.spec"));
  assert_non_null(at(obj, "metadata.labels"));
  gq_schema_report_release(&rep);
  /* Released twice is harmless. */
  gq_schema_report_release(&rep);
  json_decref(obj);
  json_decref(kept);
}

static void test_prune_list_items_and_maps(void **state)
{
  static const char *const want_q[] = {"spec.resources[0].extra"};
  static const char *const want_s[] = {"free.known.b", "gone"};
  json_t *q = parse(base_quota);
  json_t *schema = parse(small_schema);
  json_t *obj = parse("{\"limits\":{\"x\":1},\"free\":{\"other\":1,"
                      "\"known\":{\"a\":\"s\",\"b\":2}},"
                      "\"anything\":[{\"z\":1}],\"gone\":1}");
  struct gq_schema_report rep;

  (void)state;
  set_at(q, "spec.resources",
         parse("[{\"flavor\":\"*\",\"nominal\":1,\"extra\":1}]"));
  assert_int_equal(gq_schema_process(quota_schema, q, 1, &rep), GQ_EINVAL);
  assert_int_equal(rep.n_causes, 0);
  assert_unknown(&rep, want_q, 1);
  gq_schema_report_release(&rep);

  assert_int_equal(gq_schema_process(schema, obj, 1, &rep), GQ_EINVAL);
  assert_unknown(&rep, want_s, 2);
  assert_non_null(at(obj, "limits.x"));   /* map keys stay */
  assert_non_null(at(obj, "free.other")); /* preserved */
  assert_non_null(json_object_get(json_array_get(at(obj, "anything"), 0), "z"));
  gq_schema_report_release(&rep);
  json_decref(q);
  json_decref(schema);
  json_decref(obj);
}

/* --- limits and arguments --------------------------------------------- */

static void test_cause_cap(void **state)
{
  json_t *obj = parse(base_job);
  struct gq_schema_report rep;

  (void)state;
  set_at(obj, "spec.gpu.products", list_of(150, 0));
  assert_int_equal(gq_schema_process(job_schema, obj, 1, &rep), GQ_EINVAL);
  assert_int_equal(rep.n_causes, GQ_SCHEMA_MAX_CAUSES);
  assert_string_equal(rep.causes[0].field, "spec.gpu.products[0]");
  assert_string_equal(rep.causes[99].field, "spec.gpu.products[99]");
  gq_schema_report_release(&rep);
  json_decref(obj);
}

static void test_too_deep(void **state)
{
  json_t *obj = parse(base_job), *copy, *inner = json_object();
  struct gq_schema_report rep;
  int i;

  (void)state;
  for (i = 0; i < 200; i++) {
    json_t *outer = json_object();

    json_object_set_new(outer, "x", inner);
    inner = outer;
  }
  set_at(obj, "spec.template.deep", inner);
  copy = json_deep_copy(obj);
  assert_int_equal(gq_schema_process(job_schema, obj, 1, &rep), GQ_ETOOBIG);
  assert_int_equal(rep.n_causes + rep.n_unknown, 0);
  assert_true(json_equal(obj, copy));
  gq_schema_report_release(&rep);
  json_decref(obj);
  json_decref(copy);
}

static void test_arguments(void **state)
{
  json_t *obj = parse(base_job);
  struct gq_schema_report rep;

  (void)state;
  assert_int_equal(gq_schema_process(NULL, obj, 1, &rep), GQ_EINVAL);
  assert_int_equal(rep.n_causes + rep.n_unknown, 0);
  assert_int_equal(gq_schema_process(job_schema, NULL, 1, &rep), GQ_EINVAL);
  assert_int_equal(gq_schema_process(job_schema, obj, 1, NULL), GQ_EINVAL);
  assert_null(gq_schema_for_version(jobs_crd, "v1"));
  assert_null(gq_schema_for_version(NULL, "v1alpha1"));
  assert_null(gq_schema_for_version(jobs_crd, NULL));
  assert_string_equal(json_string_value(json_object_get(job_schema, "type")),
                      "object");
  json_decref(obj);
}

/* --- structural check ------------------------------------------------- */

struct structural_case {
  const char *name;
  const char *schema;
  int want_rc;
  const char *want_err; /* a prefix of the message */
};

static const struct structural_case structural_cases[] = {
    {"missing type in a field",
     "{\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
     "\"properties\":{\"x\":{\"description\":\"d\"}}}}}",
     GQ_EINVAL,
     "properties[spec].properties[x].type: Required value: must not be empty "
     "for specified object fields"},
    {"missing type at the root", "{\"properties\":{}}", GQ_EINVAL,
     "type: Required value: must not be empty at the root"},
    {"missing type in items",
     "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\","
     "\"items\":{\"x-kubernetes-preserve-unknown-fields\":true}}}}",
     GQ_EINVAL,
     "properties[a].items.type: Required value: must not be empty for "
     "specified array items"},
    {"missing type in map values",
     "{\"type\":\"object\",\"properties\":{\"m\":{\"type\":\"object\","
     "\"additionalProperties\":{}}}}",
     GQ_EINVAL,
     "properties[m].additionalProperties.type: Required value: must not be "
     "empty for specified object fields"},
    {"preserving field without type",
     "{\"type\":\"object\",\"properties\":{\"a\":"
     "{\"x-kubernetes-preserve-unknown-fields\":true}}}",
     0, ""},
    {"int-or-string without type",
     "{\"type\":\"object\",\"properties\":{\"a\":"
     "{\"x-kubernetes-int-or-string\":true}}}",
     0, ""},
    {"array without items",
     "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\"}}}",
     GQ_EINVAL, "properties[a].items: Required value: must be specified"},
    {"root not an object", "{\"type\":\"string\"}", GQ_EINVAL,
     "type: Invalid value: \"string\": must be object at the root"},
    {"unknown type",
     "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"int\"}}}",
     GQ_EINVAL,
     "properties[a].type: Unsupported value: \"int\": supported values: "
     "\"array\", \"boolean\", \"integer\", \"number\", \"object\", "
     "\"string\""},
    {"bad pattern",
     "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\","
     "\"pattern\":\"(\"}}}",
     GQ_EINVAL,
     "properties[a].pattern: Invalid value: \"(\": must be a valid regular "
     "expression, but isn't: "},
    {"list-type map without keys",
     "{\"type\":\"object\",\"properties\":{\"l\":{\"type\":\"array\","
     "\"x-kubernetes-list-type\":\"map\",\"items\":{\"type\":\"object\"}}}}",
     GQ_EINVAL,
     "properties[l].x-kubernetes-list-map-keys: Required value: must not be "
     "empty if x-kubernetes-list-type is map"},
    {"properties and additionalProperties",
     "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},"
     "\"additionalProperties\":{\"type\":\"string\"}}",
     GQ_EINVAL,
     "additionalProperties: Forbidden: additionalProperties and properties "
     "are mutual exclusive"},
    {"not an object", "[]", GQ_EINVAL, "schema must be a JSON object"},
};

static void test_structural(void **state)
{
  char err[512];
  size_t i;

  (void)state;
  assert_int_equal(gq_schema_check_structural(job_schema, err, sizeof err), 0);
  assert_string_equal(err, "");
  assert_int_equal(gq_schema_check_structural(quota_schema, err, sizeof err),
                   0);
  for (i = 0; i < sizeof structural_cases / sizeof structural_cases[0]; i++) {
    const struct structural_case *c = &structural_cases[i];
    json_t *s = parse(c->schema);
    int rc = gq_schema_check_structural(s, err, sizeof err);

    if (rc != c->want_rc || strncmp(err, c->want_err, strlen(c->want_err)) ||
        (c->want_rc == 0 && err[0]))
      fail_msg("%s: rc %d, err '%s'", c->name, rc, err);
    json_decref(s);
  }
}

static void test_structural_too_deep(void **state)
{
  json_t *s = json_pack("{s:s}", "type", "string");
  char err[256];
  int i;

  (void)state;
  for (i = 0; i < 200; i++)
    s = json_pack("{s:s, s:{s:o}}", "type", "object", "properties", "a", s);
  assert_int_equal(gq_schema_check_structural(s, err, sizeof err), GQ_ETOOBIG);
  assert_non_null(strstr(err, "deeper than 128"));
  json_decref(s);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_examples_pass_with_defaults),
      cmocka_unit_test(test_object_cases),
      cmocka_unit_test(test_small_schema),
      cmocka_unit_test(test_defaults_nest),
      cmocka_unit_test(test_prune_gpujob),
      cmocka_unit_test(test_prune_list_items_and_maps),
      cmocka_unit_test(test_cause_cap),
      cmocka_unit_test(test_too_deep),
      cmocka_unit_test(test_arguments),
      cmocka_unit_test(test_structural),
      cmocka_unit_test(test_structural_too_deep),
  };

  return cmocka_run_group_tests(tests, load_crds, free_crds);
}
