/* Tests for api/jsonpath: every accepted form against one object, absent
 * values, syntax errors (which make get return NULL and valid fail), and
 * the apiserver's CRD-creation rules for gq_jsonpath_valid(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "api/jsonpath.h"
#include "base/err.h"

static const char *const object_text =
    "{\"kind\": \"GpuJob\","
    " \"metadata\": {\"name\": \"train-1\","
    "   \"labels\": {\"app\": \"llm\", \"kubernetes.io/hostname\": \"n1\","
    "              \"a\": \"short\", \"a.b\": \"dotted\", \"x'y\": \"quote\","
    "              \"\": \"empty-key\", \"sp ace\": \"spaced\"}},"
    " \"spec\": {\"containers\": [{\"image\": \"img:1\"},"
    "                            {\"image\": \"img:2\"}]},"
    " \"status\": {\"gpus\": 8, \"phase\": null, \"ready\": true}}";

struct get_case {
  const char *path;
  const char *want; /* JSON text of the value; NULL: want NULL */
};

static const struct get_case get_cases[] = {
    /* plain and braced */
    {".status.gpus", "8"},
    {"{.status.gpus}", "8"},
    {"{ .status.gpus }", "8"},
    {".status.gpus  ", "8"},
    {".kind", "\"GpuJob\""},
    {".status.ready", "true"},
    {".status.phase", "null"}, /* present null is returned as null */
    {".metadata.labels.app", "\"llm\""},
    /* the whole object and whole subtrees */
    {".spec.containers[1]", "{\"image\": \"img:2\"}"},
    /* array indexes, negative from the end */
    {".spec.containers[0].image", "\"img:1\""},
    {".spec.containers[1].image", "\"img:2\""},
    {".spec.containers[-1].image", "\"img:2\""},
    {".spec.containers[-2].image", "\"img:1\""},
    {".spec.containers[-0].image", "\"img:1\""},
    {".spec.containers[01].image", "\"img:2\""},
    /* keys with dots and odd characters */
    {".metadata.labels.kubernetes\\.io/hostname", "\"n1\""},
    {".metadata.labels['kubernetes.io/hostname']", "\"n1\""},
    {"{.metadata.labels['kubernetes.io/hostname']}", "\"n1\""},
    {".metadata.labels['kubernetes\\.io/hostname']", "\"n1\""},
    {".metadata.labels.a\\.b", "\"dotted\""},
    {".metadata.labels.a.b", NULL}, /* .a is a string: no member b */
    {".metadata.labels['a.b']", "\"dotted\""},
    {".metadata.labels.x'y", "\"quote\""},
    {".metadata.labels['x\\'y']", "\"quote\""},
    {".metadata.labels['']", "\"empty-key\""},
    {".metadata.labels.sp\\ ace", "\"spaced\""},
    {".metadata['labels'].app", "\"llm\""},
    /* absent values */
    {".status.nope", NULL},
    {".nope.deeper.still", NULL},
    {".spec.containers[2].image", NULL},
    {".spec.containers[-3].image", NULL},
    {".spec.containers[99999999999999999999]", NULL},
    {".spec.containers.image", NULL}, /* member of an array */
    {".metadata[0]", NULL},           /* index into an object */
    {".status.gpus.x", NULL},
    /* invalid: get returns NULL whatever the object holds */
    {"", NULL},
    {"{}", NULL},
    {"status.gpus", NULL},
    {"{.status.gpus", NULL},
    {".status..gpus", NULL},
    {".status.*", NULL},
    {".spec.containers[*].image", NULL},
    {".spec.containers[0:1]", NULL},
    {".spec.containers[0,1]", NULL},
    {".spec.containers[?(@.image)]", NULL},
    {".spec.containers[x]", NULL},
    {".status.gpus}", NULL},
    {"{.kind}{.status.gpus}", NULL},
};

static json_t *load_object(void)
{
  json_error_t jerr;
  json_t *obj = json_loads(object_text, 0, &jerr);

  if (!obj)
    fail_msg("fixture: %s", jerr.text);
  return obj;
}

static void test_get_table(void **state)
{
  json_t *obj = load_object();
  size_t i;

  (void)state;
  for (i = 0; i < sizeof(get_cases) / sizeof(get_cases[0]); i++) {
    const struct get_case *c = &get_cases[i];
    const json_t *got = gq_jsonpath_get(obj, c->path);
    json_t *want = c->want ? json_loads(c->want, JSON_DECODE_ANY, NULL) : NULL;

    if (c->want && !want)
      fail_msg("case %zu: bad want %s", i, c->want);
    if (!c->want && got)
      fail_msg("case %zu (%s): want NULL, got a value", i, c->path);
    if (c->want && (!got || !json_equal((json_t *)got, want)))
      fail_msg("case %zu (%s): want %s, got %s", i, c->path, c->want,
               got ? "another value" : "NULL");
    json_decref(want);
  }
  json_decref(obj);
}

static void test_get_root_and_borrowed(void **state)
{
  json_t *obj = load_object();

  (void)state;
  /* "." is the object itself, and results point into obj. */
  assert_ptr_equal(gq_jsonpath_get(obj, "."), obj);
  assert_ptr_equal(gq_jsonpath_get(obj, "{.}"), obj);
  assert_ptr_equal(gq_jsonpath_get(obj, ".status"),
                   json_object_get(obj, "status"));
  assert_null(gq_jsonpath_get(NULL, ".status"));
  assert_null(gq_jsonpath_get(obj, NULL));
  json_decref(obj);
}

struct valid_case {
  const char *path;
  int want_rc;
  const char *want_err; /* substring of the message; NULL if valid */
};

static const struct valid_case valid_cases[] = {
    {".", 0, NULL},
    {".status.gpus", 0, NULL},
    {".spec.containers[0].image", 0, NULL},
    {".spec.containers[-1].image", 0, NULL},
    {".metadata.labels.kubernetes\\.io/hostname", 0, NULL},
    {".metadata.labels['kubernetes.io/hostname']", 0, NULL},
    {".status.gpus ", 0, NULL},
    /* the apiserver's own two checks */
    {"", GQ_EINVAL, "must be non-empty"},
    {NULL, GQ_EINVAL, "must be non-empty"},
    {"status.gpus", GQ_EINVAL, "must be a simple json path starting with ."},
    {" .status.gpus", GQ_EINVAL, "starting with ."},
    {"{.status.gpus}", GQ_EINVAL, "starting with ."},
    {"$.status", GQ_EINVAL, "starting with ."},
    /* what the sim could not evaluate */
    {".status.", GQ_EINVAL, "empty field name"},
    {".a.[0]", GQ_EINVAL, "empty field name"},
    {".status..gpus", GQ_EINVAL, "recursive descent"},
    {"..gpus", GQ_EINVAL, "recursive descent"},
    {".status.*", GQ_EINVAL, "wildcard"},
    {".items[*]", GQ_EINVAL, "wildcard"},
    {".items[1:2]", GQ_EINVAL, "slice"},
    {".items[0,1]", GQ_EINVAL, "union"},
    {".m['a','b']", GQ_EINVAL, "union"},
    {".items[?(@.x==1)]", GQ_EINVAL, "filter"},
    {".items[0", GQ_EINVAL, "unterminated array"},
    {".items[]", GQ_EINVAL, "invalid array index \"\""},
    {".items[-]", GQ_EINVAL, "invalid array index \"-\""},
    {".items[1a]", GQ_EINVAL, "invalid array index \"1a\""},
    {".items[ 1]", GQ_EINVAL, "invalid array index \" 1\""},
    {".m['abc", GQ_EINVAL, "unterminated quoted key"},
    {".m['abc'x", GQ_EINVAL, "expected ']'"},
    {".m[\"abc\"]", GQ_EINVAL, "invalid array index"},
    {".a,b", GQ_EINVAL, "unrecognized character ','"},
    {".a}", GQ_EINVAL, "unrecognized character '}'"},
    {".a@b", GQ_EINVAL, "unrecognized character '@'"},
    {".a b", GQ_EINVAL, "unrecognized character ' '"},
    {".a\\", GQ_EINVAL, "dangling backslash"},
};

static void test_valid_table(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < sizeof(valid_cases) / sizeof(valid_cases[0]); i++) {
    const struct valid_case *c = &valid_cases[i];
    char err[256] = "untouched";
    int rc = gq_jsonpath_valid(c->path, err, sizeof(err));

    if (rc != c->want_rc)
      fail_msg("case %zu (%s): rc %d, want %d (err '%s')", i,
               c->path ? c->path : "NULL", rc, c->want_rc, err);
    if (!c->want_err && err[0] != '\0')
      fail_msg("case %zu: err '%s' on success", i, err);
    if (c->want_err && !strstr(err, c->want_err))
      fail_msg("case %zu (%s): err '%s' lacks '%s'", i, c->path, err,
               c->want_err);
  }
}

static void test_valid_long_names(void **state)
{
  char path[GQ_JSONPATH_KEY_MAX + 8];
  char err[128];

  (void)state;
  /* A name of exactly the maximum is fine, one byte more is not. */
  path[0] = '.';
  memset(path + 1, 'k', GQ_JSONPATH_KEY_MAX);
  path[GQ_JSONPATH_KEY_MAX + 1] = '\0';
  assert_int_equal(gq_jsonpath_valid(path, err, sizeof(err)), 0);
  path[GQ_JSONPATH_KEY_MAX + 1] = 'k';
  path[GQ_JSONPATH_KEY_MAX + 2] = '\0';
  assert_int_equal(gq_jsonpath_valid(path, err, sizeof(err)), GQ_EINVAL);
  assert_non_null(strstr(err, "too long"));
  /* err may be NULL with errlen 0, and a tiny buffer is truncated. */
  assert_int_equal(gq_jsonpath_valid("x", NULL, 0), GQ_EINVAL);
  assert_int_equal(gq_jsonpath_valid("x", err, 5), GQ_EINVAL);
  assert_string_equal(err, "must");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_get_table),
      cmocka_unit_test(test_get_root_and_borrowed),
      cmocka_unit_test(test_valid_table),
      cmocka_unit_test(test_valid_long_names),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
