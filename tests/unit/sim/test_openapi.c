/* Tests for sim/openapi (the generated definitions: load, lookup by GVK,
 * reference closure, the v3 and CRD-in-v2 forms), the protobuf encoding
 * of /openapi/v2 (sim/protobuf.c) and pruning by referenced definitions
 * (gq_schema_prune, sim/schema.c), on small hand-made documents. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/err.h"
#include "sim/openapi.h"
#include "sim/protobuf.h"
#include "sim/schema.h"

static json_t *parse(const char *text)
{
  json_error_t e;
  json_t *v = json_loads(text, 0, &e);

  if (!v)
    fail_msg("bad test JSON at %d: %s: %s", e.position, e.text, text);
  return v;
}

/* Asserts that v, dumped with sorted keys, is 'want'. */
static void assert_json(const json_t *v, const char *want)
{
  char *got = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);

  if (strcmp(got, want))
    fail_msg("got  %s\nwant %s", got, want);
  free(got);
}

/* A file in a fresh temporary directory with 'text' (NULL: no file);
 * path gets its name. */
static void temp_file(char *path, size_t len, const char *text)
{
  char dir[] = "/tmp/gq-openapi-XXXXXX";
  FILE *f;

  assert_non_null(mkdtemp(dir));
  snprintf(path, len, "%s/defs.json", dir);
  if (!text)
    return;
  assert_non_null(f = fopen(path, "w"));
  fputs(text, f);
  fclose(f);
}

static void remove_temp(const char *path)
{
  char dir[256];

  unlink(path);
  snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(path, '/') - path), path);
  rmdir(dir);
}

static void test_load(void **state)
{
  static const struct {
    const char *text; /* NULL: no file */
    int want;
    const char *want_err; /* a substring */
  } cases[] = {
      {NULL, GQ_ENOTFOUND, "cannot read"},
      {"{\"definitions\": ", GQ_EINVAL, "line 1"},
      {"[1]", GQ_EINVAL, "want an object with \"definitions\""},
      {"{\"definitions\": []}", GQ_EINVAL, "\"definitions\", an object"},
      {"{\"definitions\": {\"a.B\": 3}}", GQ_EINVAL,
       "definition 'a.B' is not an object"},
      {"{\"source\": \"s\", \"definitions\": {\"a.B\": {}}}", 0, ""},
  };

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char path[256], err[512] = "";
    json_t *doc = (json_t *)1;
    int rc;

    temp_file(path, sizeof(path), cases[i].text);
    rc = gq_openapi_load(path, &doc, err, sizeof(err));
    if (rc != cases[i].want || !strstr(err, cases[i].want_err))
      fail_msg("case %zu: got %d '%s', want %d '%s'", i, rc, err,
               cases[i].want, cases[i].want_err);
    if (rc == 0)
      assert_non_null(json_object_get(json_object_get(doc, "definitions"),
                                      "a.B"));
    else
      assert_null(doc);
    json_decref(doc);
    remove_temp(path);
  }
}

static const char defs_text[] =
    "{\"io.k8s.api.core.v1.Pod\": {\"type\": \"object\","
    "  \"properties\": {\"spec\": {\"$ref\": \"#/definitions/P.Spec\","
    "    \"description\": \"the spec\"}, \"metadata\": {\"$ref\":"
    "    \"#/definitions/M.Meta\"}},"
    "  \"x-kubernetes-group-version-kind\": [{\"group\": \"\", \"version\":"
    "    \"v1\", \"kind\": \"Pod\"}]},"
    " \"io.k8s.api.events.v1.Event\": {\"x-kubernetes-group-version-kind\":"
    "  [{\"group\": \"events.k8s.io\", \"version\": \"v1\", \"kind\":"
    "  \"Event\"}]},"
    " \"P.Spec\": {\"type\": \"object\", \"properties\": {"
    "  \"c\": {\"type\": \"array\", \"items\": {\"$ref\":"
    "   \"#/definitions/P.Container\"}},"
    "  \"e\": {\"type\": \"string\", \"enum\": [{\"$ref\": "
    "   \"#/definitions/Never.Walked\"}]},"
    "  \"gone\": {\"$ref\": \"#/definitions/No.Such\"}}},"
    " \"P.Container\": {\"type\": \"object\", \"properties\": {"
    "  \"self\": {\"$ref\": \"#/definitions/P.Container\"},"
    "  \"x\": {\"x-kubernetes-preserve-unknown-fields\": true},"
    "  \"m\": {\"type\": \"object\", \"additionalProperties\":"
    "   {\"type\": \"string\"}}}},"
    " \"M.Meta\": {\"type\": \"object\", \"properties\": {\"name\":"
    "  {\"type\": \"string\"}}},"
    " \"Never.Walked\": {},"
    " \"Unrelated\": {}}";

static void test_find(void **state)
{
  json_t *defs = parse(defs_text);

  (void)state;
  assert_string_equal(gq_openapi_find(defs, "", "v1", "Pod"),
                      "io.k8s.api.core.v1.Pod");
  assert_string_equal(gq_openapi_find(defs, "events.k8s.io", "v1", "Event"),
                      "io.k8s.api.events.v1.Event");
  assert_null(gq_openapi_find(defs, "", "v1", "Event"));
  assert_null(gq_openapi_find(defs, "", "v2", "Pod"));
  json_decref(defs);
}

static void test_closure(void **state)
{
  json_t *defs = parse(defs_text), *out = json_object();
  const char *name;
  json_t *v;
  char names[512] = "";
  size_t off = 0;

  (void)state;
  /* a self-reference ends; a missing target and enum values are skipped */
  gq_openapi_closure(defs, "io.k8s.api.core.v1.Pod", out);
  gq_openapi_closure(defs, "No.Such", out);
  json_object_foreach(out, name, v) {
    off += (size_t)snprintf(names + off, sizeof(names) - off, "%s ", name);
    assert_ptr_equal(v, json_object_get(defs, name)); /* shared, not copied */
  }
  assert_int_equal(json_object_size(out), 4);
  assert_non_null(strstr(names, "io.k8s.api.core.v1.Pod "));
  assert_non_null(strstr(names, "P.Spec "));
  assert_non_null(strstr(names, "P.Container "));
  assert_non_null(strstr(names, "M.Meta "));
  json_decref(out);
  json_decref(defs);
}

static void test_to_v3(void **state)
{
  json_t *in = parse(
      "{\"type\": \"object\", \"properties\": {"
      " \"a\": {\"$ref\": \"#/definitions/X.A\"},"
      " \"b\": {\"$ref\": \"#/definitions/X.B\", \"description\": \"d\"},"
      " \"c\": {\"type\": \"array\", \"items\": {\"$ref\": "
      "  \"#/definitions/X.C\"}},"
      " \"e\": {\"type\": \"string\", \"enum\": [\"$ref\"]},"
      " \"o\": {\"$ref\": \"other.json#/X\"}}}");
  json_t *out = gq_openapi_to_v3(in);

  (void)state;
  assert_json(out,
              "{\"properties\":{"
              "\"a\":{\"$ref\":\"#/components/schemas/X.A\"},"
              "\"b\":{\"allOf\":[{\"$ref\":\"#/components/schemas/X.B\"}],"
              "\"description\":\"d\"},"
              "\"c\":{\"items\":{\"$ref\":\"#/components/schemas/X.C\"},"
              "\"type\":\"array\"},"
              "\"e\":{\"enum\":[\"$ref\"],\"type\":\"string\"},"
              "\"o\":{\"$ref\":\"other.json#/X\"}},\"type\":\"object\"}");
  json_decref(out);
  json_decref(in);
}

static void test_crd_v2(void **state)
{
  json_t *in = parse(
      "{\"type\": \"object\", \"properties\": {"
      " \"apiVersion\": {\"type\": \"string\", \"description\": \"mine\"},"
      " \"metadata\": {\"type\": \"object\"},"
      " \"spec\": {\"type\": \"object\", \"properties\": {"
      "  \"free\": {\"type\": \"object\", \"description\": \"any\","
      "   \"x-kubernetes-preserve-unknown-fields\": true,"
      "   \"properties\": {\"k\": {\"type\": \"string\"}}},"
      "  \"n\": {\"type\": \"integer\", \"default\": 3}}}}}");
  json_t *bare = parse("{\"type\": \"object\"}");
  json_t *out = gq_openapi_crd_v2(in), *out2 = gq_openapi_crd_v2(bare);

  (void)state;
  assert_json(out,
              "{\"properties\":{"
              "\"apiVersion\":{\"description\":\"mine\",\"type\":\"string\"},"
              "\"kind\":{\"type\":\"string\"},"
              "\"metadata\":{\"$ref\":\"#/definitions/io.k8s.apimachinery."
              "pkg.apis.meta.v1.ObjectMeta\"},"
              "\"spec\":{\"properties\":{\"free\":{\"description\":\"any\"},"
              "\"n\":{\"default\":3,\"type\":\"integer\"}},"
              "\"type\":\"object\"}},\"type\":\"object\"}");
  assert_json(out2,
              "{\"properties\":{\"apiVersion\":{\"type\":\"string\"},"
              "\"kind\":{\"type\":\"string\"},"
              "\"metadata\":{\"$ref\":\"#/definitions/io.k8s.apimachinery."
              "pkg.apis.meta.v1.ObjectMeta\"}},\"type\":\"object\"}");
  json_decref(out);
  json_decref(out2);
  json_decref(in);
  json_decref(bare);
}

/* The bytes of openapi.v2.Document for a tiny document, worked out by
 * hand from OpenAPIv2.proto's field numbers (the comments name them). */
static void test_protobuf_v2(void **state)
{
  json_t *doc = parse(
      "{\"swagger\": \"2.0\", \"info\": {\"title\": \"T\", \"version\": "
      "\"v\"}, \"paths\": {}, \"definitions\": {\"A\": {\"type\": "
      "\"object\", \"required\": [\"r\"], \"properties\": {\"p\": {\"$ref\":"
      " \"#/definitions/A\"}}, \"additionalProperties\": false, "
      "\"x-k\": 1}}}");
  static const unsigned char want[] = {
      0x0a, 0x03, '2', '.', '0',                    /* 1 swagger */
      0x12, 0x06, 0x0a, 0x01, 'T', 0x12, 0x01, 'v', /* 2 info: title, version */
      0x4a, 0x43,                                   /* 9 definitions */
      0x0a, 0x41,                                   /*  1 NamedSchema */
      0x0a, 0x01, 'A',                              /*   1 name */
      0x12, 0x3c,                                   /*   2 Schema */
      0x9a, 0x01, 0x01, 'r',                        /*    19 required */
      0xaa, 0x01, 0x02, 0x10, 0x00, /* 21 additionalProperties: 2 boolean */
      0xb2, 0x01, 0x08, 0x0a, 0x06, 'o', 'b', 'j', 'e', 'c', 't', /* 22 */
      0xca, 0x01, 0x18,             /*    25 properties */
      0x0a, 0x16, 0x0a, 0x01, 'p',  /*     1 NamedSchema, 1 name */
      0x12, 0x11, 0x0a, 0x0f,       /*     2 Schema, 1 $ref */
      '#', '/', 'd', 'e', 'f', 'i', 'n', 'i', 't', 'i', 'o', 'n', 's', '/',
      'A',
      0xfa, 0x01, 0x0a,             /*    31 vendor_extension (NamedAny) */
      0x0a, 0x03, 'x', '-', 'k',    /*     1 name */
      0x12, 0x03, 0x12, 0x01, '1',  /*     2 Any, 2 yaml */
  };
  size_t len;
  char *got;

  (void)state;
  got = gq_pb_openapi_v2(doc, &len);
  if (len != sizeof(want) || memcmp(got, want, len)) {
    for (size_t i = 0; i < len; i++)
      fprintf(stderr, "%02x%s", (unsigned char)got[i], i + 1 < len ? " " : "\n");
    fail_msg("protobuf differs: %zu bytes, want %zu", len, sizeof(want));
  }
  free(got);
  json_decref(doc);
}

static void test_prune_refs(void **state)
{
  json_t *defs = parse(defs_text);
  const json_t *pod = json_object_get(defs, "io.k8s.api.core.v1.Pod");
  json_t *obj = parse(
      "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\":"
      " \"p\", \"extra\": 1}, \"bogus\": true, \"spec\": {\"c\": [{\"x\":"
      " {\"any\": {\"thing\": 1}}, \"m\": {\"k\": \"v\"}, \"self\": {\"m\":"
      " {}, \"no\": 1}, \"bad\": 2}], \"gone\": {\"a\": 1}, \"e\": \"s\"}}");
  struct gq_schema_report rep;
  static const char *const want_unknown[] = {
      "bogus", "spec.c[0].bad", "spec.c[0].self.no", "spec.gone.a"};

  (void)state;
  assert_int_equal(gq_schema_prune(pod, defs, obj, &rep), GQ_EINVAL);
  assert_int_equal(rep.n_unknown, 4);
  for (size_t i = 0; i < rep.n_unknown; i++)
    assert_string_equal(rep.unknown[i], want_unknown[i]);
  assert_int_equal(rep.n_causes, 0); /* nothing validated */
  /* the object's metadata is the apiserver's business, not pruned here */
  assert_json(obj,
              "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{"
              "\"extra\":1,\"name\":\"p\"},\"spec\":{\"c\":[{\"m\":{\"k\":"
              "\"v\"},\"self\":{\"m\":{}},\"x\":{\"any\":{\"thing\":1}}}],"
              "\"e\":\"s\",\"gone\":{}}}");
  gq_schema_report_release(&rep);
  /* a second pass finds nothing */
  assert_int_equal(gq_schema_prune(pod, defs, obj, &rep), 0);
  gq_schema_report_release(&rep);
  assert_int_equal(gq_schema_prune(NULL, defs, obj, &rep), GQ_EINVAL);
  json_decref(obj);
  json_decref(defs);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_load),      cmocka_unit_test(test_find),
      cmocka_unit_test(test_closure),   cmocka_unit_test(test_to_v3),
      cmocka_unit_test(test_crd_v2),    cmocka_unit_test(test_protobuf_v2),
      cmocka_unit_test(test_prune_refs),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
