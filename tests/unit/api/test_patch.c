/* api/patch: JSON merge patch (RFC 7386), JSON patch (RFC 6902), JSON
 * Pointer (RFC 6901) and strategic merge patch, table-driven.
 *
 * Every case runs through run_case(), which also checks the contract that
 * holds for all of them: inputs are unmodified after the call (compared
 * with deep copies taken before), a failure leaves *out NULL, and a result
 * shares no node with an input (scribble() overwrites every value of the
 * result, then the inputs are compared again).
 *
 * JSON in the tables is written with ' for " to stay readable; parse()
 * swaps them back, so no case may need a literal '. The RFC 6901 examples
 * with quotes in keys are written out with real escapes instead.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/patch.h"
#include "base/alloc.h"
#include "base/err.h"

typedef int (*patch_fn)(const json_t *target, const json_t *patch, json_t **out,
                        char *err, size_t errlen);

struct patch_case {
  const char *name;
  const char *target;
  const char *patch;
  const char *want;     /* result as JSON; NULL when an error is wanted */
  int want_rc;          /* 0 or the GQ_E* code */
  const char *want_err; /* substring of the message, or NULL */
};

#define OK(name, target, patch, want)                                          \
  {                                                                            \
    name, target, patch, want, 0, NULL                                         \
  }
#define ERR(name, target, patch, rc, msg)                                      \
  {                                                                            \
    name, target, patch, NULL, rc, msg                                         \
  }

/* ---- harness ----------------------------------------------------------- */

static json_t *parse(const char *name, const char *text)
{
  char *s = gq_xstrdup(text);
  json_error_t je;
  json_t *v;

  for (char *p = s; *p; p++)
    if (*p == '\'')
      *p = '"';
  v = json_loads(s, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
  if (!v)
    fail_msg("%s: bad test JSON %s: %s", name, s, je.text);
  free(s);
  return v;
}

static char *dump(const json_t *v)
{
  return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
}

/* Changes every node of v, so a node shared with an input shows up as a
 * modified input. true/false/null are immutable singletons in jansson. */
static void scribble(json_t *v)
{
  const char *k;
  json_t *c;
  size_t i;

  json_object_foreach(v, k, c) {
    scribble(c);
  }
  json_array_foreach(v, i, c) {
    scribble(c);
  }
  if (json_is_object(v))
    json_object_set_new(v, "#scribbled", json_true());
  else if (json_is_array(v))
    json_array_append_new(v, json_string("#scribbled"));
  else if (json_is_string(v))
    json_string_set(v, "#scribbled");
  else if (json_is_integer(v))
    json_integer_set(v, -424242);
  else if (json_is_real(v))
    json_real_set(v, -4.5);
}

static void check_result(const struct patch_case *c, const json_t *out)
{
  json_t *want = parse(c->name, c->want);

  if (!json_equal(out, want)) {
    char *got = dump(out), *exp = dump(want);

    fail_msg("%s:\n  got  %s\n  want %s", c->name, got, exp);
  }
  json_decref(want);
}

static void check_error(const struct patch_case *c, const json_t *out,
                        const char *err)
{
  if (out)
    fail_msg("%s: failed but *out is not NULL", c->name);
  if (err[0] == '\0')
    fail_msg("%s: failed without a message", c->name);
  if (c->want_err && !strstr(err, c->want_err))
    fail_msg("%s: message '%s' lacks '%s'", c->name, err, c->want_err);
}

static void run_case(const struct patch_case *c, patch_fn fn)
{
  json_t *target = parse(c->name, c->target);
  json_t *patch = parse(c->name, c->patch);
  json_t *target0 = json_deep_copy(target), *patch0 = json_deep_copy(patch);
  json_t *out = json_object(); /* must be overwritten, even on failure */
  json_t *sentinel = out;
  char err[512] = "stale";
  int rc = fn(target, patch, &out, err, sizeof(err));

  if (rc != c->want_rc)
    fail_msg("%s: rc %s, want %s (%s)", c->name, gq_err_name(rc),
             gq_err_name(c->want_rc), err);
  if (rc == 0 && err[0] != '\0')
    fail_msg("%s: success left message '%s'", c->name, err);
  if (rc == 0)
    check_result(c, out);
  else
    check_error(c, out, err);
  if (!json_equal(target, target0) || !json_equal(patch, patch0))
    fail_msg("%s: an input was modified", c->name);
  if (out) {
    scribble(out);
    if (!json_equal(target, target0) || !json_equal(patch, patch0))
      fail_msg("%s: the result shares nodes with an input", c->name);
  }
  json_decref(sentinel);
  json_decref(out);
  json_decref(target);
  json_decref(patch);
  json_decref(target0);
  json_decref(patch0);
}

static void run_cases(const struct patch_case *cases, size_t n, patch_fn fn)
{
  for (size_t i = 0; i < n; i++)
    run_case(&cases[i], fn);
}

#define RUN(cases, fn) run_cases(cases, sizeof(cases) / sizeof(cases[0]), fn)

/* ---- RFC 7386 ---------------------------------------------------------- */

static const struct patch_case merge_cases[] = {
    /* Section 3. */
    OK("rfc7386 s3",
       "{'title':'Goodbye!','author':{'givenName':'John','familyName':'Doe'},"
       "'tags':['example','sample'],'content':'This will be unchanged'}",
       "{'title':'Hello!','phoneNumber':'+01-123-456-7890',"
       "'author':{'familyName':null},'tags':['example']}",
       "{'title':'Hello!','author':{'givenName':'John'},'tags':['example'],"
       "'content':'This will be unchanged',"
       "'phoneNumber':'+01-123-456-7890'}"),
    /* Appendix A, in order. */
    OK("A1", "{'a':'b'}", "{'a':'c'}", "{'a':'c'}"),
    OK("A2", "{'a':'b'}", "{'b':'c'}", "{'a':'b','b':'c'}"),
    OK("A3", "{'a':'b'}", "{'a':null}", "{}"),
    OK("A4", "{'a':'b','b':'c'}", "{'a':null}", "{'b':'c'}"),
    OK("A5", "{'a':['b']}", "{'a':'c'}", "{'a':'c'}"),
    OK("A6", "{'a':'c'}", "{'a':['b']}", "{'a':['b']}"),
    OK("A7", "{'a':{'b':'c'}}", "{'a':{'b':'d','c':null}}", "{'a':{'b':'d'}}"),
    OK("A8", "{'a':[{'b':'c'}]}", "{'a':[1]}", "{'a':[1]}"),
    OK("A9", "['a','b']", "['c','d']", "['c','d']"),
    OK("A10", "{'a':'b'}", "['c']", "['c']"),
    OK("A11", "{'a':'foo'}", "null", "null"),
    OK("A12", "{'a':'foo'}", "'bar'", "'bar'"),
    OK("A13", "{'e':null}", "{'a':1}", "{'e':null,'a':1}"),
    OK("A14", "[1,2]", "{'a':'b','c':null}", "{'a':'b'}"),
    OK("A15", "{}", "{'a':{'bb':{'ccc':null}}}", "{'a':{'bb':{}}}"),
    /* Beyond the appendix. */
    OK("empty patch is identity", "{'a':{'b':[1,{'c':2}]}}", "{}",
       "{'a':{'b':[1,{'c':2}]}}"),
    OK("null of a missing key", "{'a':1}", "{'zz':null}", "{'a':1}"),
    OK("object replaces scalar", "{'a':1}", "{'a':{'b':null,'c':2}}",
       "{'a':{'c':2}}"),
    OK("arrays are not merged", "{'a':[{'name':'x','v':1}]}",
       "{'a':[{'name':'x','v':2}]}", "{'a':[{'name':'x','v':2}]}"),
    OK("dollar keys are plain keys", "{'a':{'b':1}}",
       "{'a':{'$patch':'delete'},'$retainKeys':['x']}",
       "{'a':{'b':1,'$patch':'delete'},'$retainKeys':['x']}"),
    OK("nulls inside arrays are kept", "{}", "{'a':[null,{'b':null}]}",
       "{'a':[null,{'b':null}]}"),
};

static void test_merge_rfc7386(void **state)
{
  (void)state;
  RUN(merge_cases, gq_patch_merge);
}

/* ---- RFC 6902 ---------------------------------------------------------- */

static const struct patch_case json_rfc_cases[] = {
    OK("A.1 add object member", "{'foo':'bar'}",
       "[{'op':'add','path':'/baz','value':'qux'}]",
       "{'baz':'qux','foo':'bar'}"),
    OK("A.2 add array element", "{'foo':['bar','baz']}",
       "[{'op':'add','path':'/foo/1','value':'qux'}]",
       "{'foo':['bar','qux','baz']}"),
    OK("A.3 remove object member", "{'baz':'qux','foo':'bar'}",
       "[{'op':'remove','path':'/baz'}]", "{'foo':'bar'}"),
    OK("A.4 remove array element", "{'foo':['bar','qux','baz']}",
       "[{'op':'remove','path':'/foo/1'}]", "{'foo':['bar','baz']}"),
    OK("A.5 replace", "{'baz':'qux','foo':'bar'}",
       "[{'op':'replace','path':'/baz','value':'boo'}]",
       "{'baz':'boo','foo':'bar'}"),
    OK("A.6 move value",
       "{'foo':{'bar':'baz','waldo':'fred'},'qux':{'corge':'grault'}}",
       "[{'op':'move','from':'/foo/waldo','path':'/qux/thud'}]",
       "{'foo':{'bar':'baz'},'qux':{'corge':'grault','thud':'fred'}}"),
    OK("A.7 move array element", "{'foo':['all','grass','cows','eat']}",
       "[{'op':'move','from':'/foo/1','path':'/foo/3'}]",
       "{'foo':['all','cows','eat','grass']}"),
    OK("A.8 test success", "{'baz':'qux','foo':['a',2,'c']}",
       "[{'op':'test','path':'/baz','value':'qux'},"
       "{'op':'test','path':'/foo/1','value':2}]",
       "{'baz':'qux','foo':['a',2,'c']}"),
    ERR("A.9 test error", "{'baz':'qux'}",
        "[{'op':'test','path':'/baz','value':'bar'}]", GQ_ESTATE,
        "operation 0: test failed at '/baz'"),
    OK("A.10 add nested member object", "{'foo':'bar'}",
       "[{'op':'add','path':'/child','value':{'grandchild':{}}}]",
       "{'foo':'bar','child':{'grandchild':{}}}"),
    OK("A.11 ignore unrecognized elements", "{'foo':'bar'}",
       "[{'op':'add','path':'/baz','value':'qux','xyz':123}]",
       "{'foo':'bar','baz':'qux'}"),
    ERR("A.12 add to nonexistent target", "{'foo':'bar'}",
        "[{'op':'add','path':'/baz/bat','value':'qux'}]", GQ_ENOTFOUND,
        "operation 0: path '/baz/bat' does not exist"),
    /* A.13 (duplicate members) is test_json_rfc6902_a13 below. */
    OK("A.14 ~ escape ordering", "{'/':9,'~1':10}",
       "[{'op':'test','path':'/~01','value':10}]", "{'/':9,'~1':10}"),
    ERR("A.15 strings and numbers differ", "{'/':9,'~1':10}",
        "[{'op':'test','path':'/~01','value':'10'}]", GQ_ESTATE,
        "operation 0: test failed at '/~01'"),
    OK("A.16 add array value", "{'foo':['bar']}",
       "[{'op':'add','path':'/foo/-','value':['abc','def']}]",
       "{'foo':['bar',['abc','def']]}"),
};

static void test_json_rfc6902(void **state)
{
  (void)state;
  RUN(json_rfc_cases, gq_patch_json);
}

/* A.13: a member given twice makes the document invalid. A parsed json_t
 * cannot show it, so the rule is enforced at parse time; without the flag
 * jansson keeps the last "op", which here fails at run time instead. */
static void test_json_rfc6902_a13(void **state)
{
  const char *doc = "[{\"op\":\"add\",\"path\":\"/"
                    "baz\",\"value\":\"qux\",\"op\":\"remove\"}]";
  json_t *target = json_pack("{s:s}", "foo", "bar"), *ops, *out;
  json_error_t je;
  char err[256];

  (void)state;
  assert_null(json_loads(doc, JSON_REJECT_DUPLICATES, &je));
  ops = json_loads(doc, 0, &je);
  assert_non_null(ops);
  assert_int_equal(gq_patch_json(target, ops, &out, err, sizeof(err)),
                   GQ_ENOTFOUND);
  assert_null(out);
  assert_string_equal(err, "operation 0: path '/baz' does not exist");
  json_decref(ops);
  json_decref(target);
}

static const struct patch_case json_more_cases[] = {
    OK("empty patch", "{'a':1}", "[]", "{'a':1}"),
    OK("add replaces an existing member", "{'a':1}",
       "[{'op':'add','path':'/a','value':{'b':2}}]", "{'a':{'b':2}}"),
    OK("add at the root replaces the document", "{'a':1}",
       "[{'op':'add','path':'','value':[1]}]", "[1]"),
    OK("replace the root", "{'a':1}",
       "[{'op':'replace','path':'','value':'x'}]", "'x'"),
    OK("add at index == size appends", "{'a':[1,2]}",
       "[{'op':'add','path':'/a/2','value':3}]", "{'a':[1,2,3]}"),
    OK("add at index 0", "{'a':[1,2]}",
       "[{'op':'add','path':'/a/0','value':0}]", "{'a':[0,1,2]}"),
    OK("replace array element", "{'a':[1,2]}",
       "[{'op':'replace','path':'/a/1','value':{'x':null}}]",
       "{'a':[1,{'x':null}]}"),
    OK("add null value", "{}", "[{'op':'add','path':'/n','value':null}]",
       "{'n':null}"),
    OK("escaped keys", "{'a/b':{'m~n':1}}",
       "[{'op':'replace','path':'/a~1b/m~0n','value':2},"
       "{'op':'add','path':'/~0~1','value':3}]",
       "{'a/b':{'m~n':2},'~/':3}"),
    OK("the empty key", "{'':{'':1}}",
       "[{'op':'copy','from':'//','path':'/x'}]", "{'':{'':1},'x':1}"),
    OK("move onto itself", "{'a':{'b':1}}",
       "[{'op':'move','from':'/a','path':'/a'}]", "{'a':{'b':1}}"),
    OK("move to a sibling's child", "{'a':1,'b':{}}",
       "[{'op':'move','from':'/a','path':'/b/a'}]", "{'b':{'a':1}}"),
    OK("move with a common prefix only", "{'a':1,'ab':{}}",
       "[{'op':'move','from':'/a','path':'/ab/x'}]", "{'ab':{'x':1}}"),
    OK("move array element to the end", "{'a':[1,2,3]}",
       "[{'op':'move','from':'/a/0','path':'/a/-'}]", "{'a':[2,3,1]}"),
    OK("copy is deep", "{'a':{'b':[1]}}",
       "[{'op':'copy','from':'/a','path':'/c'},"
       "{'op':'add','path':'/c/b/-','value':2}]",
       "{'a':{'b':[1]},'c':{'b':[1,2]}}"),
    OK("test numbers by value", "{'a':1,'b':2.5}",
       "[{'op':'test','path':'/a','value':1.0},"
       "{'op':'test','path':'/b','value':2.5}]",
       "{'a':1,'b':2.5}"),
    OK("test objects ignore member order", "{'a':{'x':1,'y':[true,null]}}",
       "[{'op':'test','path':'/a','value':{'y':[true,null],'x':1}}]",
       "{'a':{'x':1,'y':[true,null]}}"),
    OK("test the whole document", "{'a':1}",
       "[{'op':'test','path':'','value':{'a':1}}]", "{'a':1}"),
    ERR("test arrays keep order", "{'a':[1,2]}",
        "[{'op':'test','path':'/a','value':[2,1]}]", GQ_ESTATE,
        "test failed at '/a'"),
    ERR("test of a missing location fails", "{'metadata':{}}",
        "[{'op':'test','path':'/metadata/resourceVersion','value':'7'}]",
        GQ_ESTATE, "operation 0: test failed at '/metadata/resourceVersion'"),
    ERR("test resourceVersion guard", "{'metadata':{'resourceVersion':'8'}}",
        "[{'op':'replace','path':'/metadata/resourceVersion','value':'8'},"
        "{'op':'test','path':'/metadata/resourceVersion','value':'7'}]",
        GQ_ESTATE, "operation 1: test failed at '/metadata/resourceVersion'"),
};

static void test_json_more(void **state)
{
  (void)state;
  RUN(json_more_cases, gq_patch_json);
}

static const struct patch_case json_error_cases[] = {
    ERR("not an array", "{}", "{'op':'add'}", GQ_EINVAL,
        "patch must be a JSON array"),
    ERR("operation not an object", "{}",
        "[{'op':'test','path':'','value':{}},1]", GQ_EINVAL,
        "operation 1: not an object"),
    ERR("op missing", "{}", "[{'path':'/a'}]", GQ_EINVAL,
        "operation 0: missing 'op'"),
    ERR("op not a string", "{}", "[{'op':1,'path':'/a'}]", GQ_EINVAL,
        "operation 0: 'op' must be a string"),
    ERR("unknown op", "{'a':1}",
        "[{'op':'test','path':'/a','value':1},{'op':'remove','path':'/a'},"
        "{'op':'rename','path':'/a'}]",
        GQ_EINVAL, "operation 2: unknown op 'rename'"),
    ERR("op names are case-sensitive", "{}", "[{'op':'Add','path':'/a'}]",
        GQ_EINVAL, "unknown op 'Add'"),
    ERR("path missing", "{}", "[{'op':'add','value':1}]", GQ_EINVAL,
        "operation 0: missing 'path'"),
    ERR("path not a string", "{}", "[{'op':'remove','path':3}]", GQ_EINVAL,
        "operation 0: 'path' must be a string"),
    ERR("value missing", "{}", "[{'op':'replace','path':'/a'}]", GQ_EINVAL,
        "operation 0: missing 'value'"),
    ERR("test value missing", "{}", "[{'op':'test','path':'/a'}]", GQ_EINVAL,
        "operation 0: missing 'value'"),
    ERR("from missing", "{'a':1}", "[{'op':'move','path':'/b'}]", GQ_EINVAL,
        "operation 0: missing 'from'"),
    ERR("copy from missing", "{'a':1}", "[{'op':'copy','path':'/b'}]",
        GQ_EINVAL, "operation 0: missing 'from'"),
    ERR("pointer without leading slash", "{'a':1}",
        "[{'op':'remove','path':'a'}]", GQ_EINVAL,
        "operation 0: invalid JSON pointer 'a' in 'path'"),
    ERR("bad escape", "{'a':1}", "[{'op':'remove','path':'/a~2'}]", GQ_EINVAL,
        "invalid JSON pointer '/a~2'"),
    ERR("lone tilde", "{'a':1}", "[{'op':'copy','from':'/a~','path':'/b'}]",
        GQ_EINVAL, "invalid JSON pointer '/a~' in 'from'"),
    ERR("syntax is checked before anything runs", "{'a':1}",
        "[{'op':'remove','path':'/missing'},{'op':'nope'}]", GQ_EINVAL,
        "operation 1: unknown op 'nope'"),
    ERR("move into own child", "{'a':{'b':1}}",
        "[{'op':'move','from':'/a','path':'/a/b/c'}]", GQ_EINVAL,
        "operation 0: cannot move '/a' into its own child '/a/b/c'"),
    ERR("move the root into a child", "{'a':1}",
        "[{'op':'move','from':'','path':'/x'}]", GQ_EINVAL,
        "cannot move '' into its own child '/x'"),
    ERR("remove the root", "{'a':1}", "[{'op':'remove','path':''}]", GQ_EINVAL,
        "operation 0: cannot remove the whole document"),
    ERR("remove missing key", "{'spec':{}}",
        "[{'op':'remove','path':'/spec/x'}]", GQ_ENOTFOUND,
        "operation 0: path '/spec/x' does not exist"),
    ERR("replace missing key", "{'a':1}",
        "[{'op':'replace','path':'/b','value':1}]", GQ_ENOTFOUND,
        "operation 0: path '/b' does not exist"),
    ERR("move from missing", "{'a':1}",
        "[{'op':'move','from':'/x','path':'/y'}]", GQ_ENOTFOUND,
        "operation 0: from '/x' does not exist"),
    ERR("copy from missing location", "{'a':1}",
        "[{'op':'copy','from':'/a/0','path':'/y'}]", GQ_ENOTFOUND,
        "operation 0: from '/a/0' does not exist"),
    ERR("move to a missing parent", "{'a':1}",
        "[{'op':'move','from':'/a','path':'/x/y'}]", GQ_ENOTFOUND,
        "operation 0: path '/x/y' does not exist"),
    ERR("add past the end", "{'a':[1,2]}",
        "[{'op':'add','path':'/a/3','value':9}]", GQ_ENOTFOUND,
        "path '/a/3' does not exist"),
    ERR("replace at index == size", "{'a':[1,2]}",
        "[{'op':'replace','path':'/a/2','value':9}]", GQ_ENOTFOUND,
        "path '/a/2' does not exist"),
    ERR("remove '-'", "{'a':[1,2]}", "[{'op':'remove','path':'/a/-'}]",
        GQ_ENOTFOUND, "path '/a/-' does not exist"),
    ERR("index with a leading zero", "{'a':[1,2]}",
        "[{'op':'add','path':'/a/01','value':9}]", GQ_EINVAL,
        "operation 0: invalid array index in path '/a/01'"),
    ERR("index with a sign", "{'a':[1,2]}", "[{'op':'remove','path':'/a/+1'}]",
        GQ_EINVAL, "invalid array index in path '/a/+1'"),
    ERR("index not a number", "{'a':[1,2]}", "[{'op':'remove','path':'/a/x'}]",
        GQ_EINVAL, "invalid array index in path '/a/x'"),
    ERR("huge index", "{'a':[1]}",
        "[{'op':'remove','path':'/a/99999999999999999999999999'}]",
        GQ_ENOTFOUND, "does not exist"),
    ERR("through a scalar", "{'a':1}", "[{'op':'add','path':'/a/b','value':1}]",
        GQ_ENOTFOUND, "path '/a/b' does not exist"),
    /* Atomicity: operation 0 succeeds on the private copy, operation 1
     * fails, and neither the target nor *out shows operation 0. */
    ERR("atomic: failure in the middle", "{'a':1,'list':[1,2]}",
        "[{'op':'add','path':'/b','value':2},"
        "{'op':'remove','path':'/list/0'},"
        "{'op':'remove','path':'/missing'},"
        "{'op':'add','path':'/c','value':3}]",
        GQ_ENOTFOUND, "operation 2: path '/missing' does not exist"),
};

static void test_json_errors(void **state)
{
  (void)state;
  RUN(json_error_cases, gq_patch_json);
}

/* Atomicity spelled out: after a failed patch the caller still holds the
 * untouched target and gets no result at all. */
static void test_json_atomic(void **state)
{
  json_t *target = parse("atomic", "{'spec':{'x':1},'l':[1,2,3]}");
  json_t *ops = parse("atomic", "[{'op':'remove','path':'/spec/x'},"
                                "{'op':'move','from':'/l/0','path':'/l/-'},"
                                "{'op':'test','path':'/spec','value':{}},"
                                "{'op':'add','path':'/nope/x','value':1}]");
  json_t *want = parse("atomic", "{'spec':{'x':1},'l':[1,2,3]}");
  json_t *out = json_object(), *prev = out;
  char err[256];

  (void)state;
  assert_int_equal(gq_patch_json(target, ops, &out, err, sizeof(err)),
                   GQ_ENOTFOUND);
  assert_null(out);
  assert_string_equal(err, "operation 3: path '/nope/x' does not exist");
  assert_true(json_equal(target, want));
  /* The same operations minus the last one do apply. */
  json_array_remove(ops, 3);
  assert_int_equal(gq_patch_json(target, ops, &out, err, sizeof(err)), 0);
  json_decref(want);
  want = parse("atomic", "{'spec':{},'l':[2,3,1]}");
  assert_true(json_equal(out, want));
  json_decref(out);
  json_decref(prev);
  json_decref(want);
  json_decref(ops);
  json_decref(target);
}

/* ---- limits ------------------------------------------------------------ */

/* Returns 'depth' nested arrays around 1: depth 2 is [[1]]. */
static json_t *nested(int depth)
{
  json_t *v = json_integer(1);

  for (int i = 0; i < depth; i++) {
    json_t *a = json_array();

    json_array_append_new(a, v);
    v = a;
  }
  return v;
}

/* Checks a call's rc and *out, then releases *out. 'out' is passed by
 * address: its value must be read after the call, not as an argument
 * evaluated in unspecified order with it. */
static void expect_rc(int rc, int want, json_t **out)
{
  assert_int_equal(rc, want);
  if (want == 0)
    assert_non_null(*out);
  else
    assert_null(*out);
  json_decref(*out);
  *out = NULL;
}

static void test_depth_limit(void **state)
{
  json_t *ok = nested(GQ_PATCH_MAX_DEPTH),
         *deep = nested(GQ_PATCH_MAX_DEPTH + 1);
  json_t *obj = json_object(), *ops = json_array(), *out;
  char err[256];

  (void)state;
  expect_rc(gq_patch_merge(ok, ok, &out, err, sizeof(err)), 0, &out);
  expect_rc(gq_patch_merge(deep, obj, &out, err, sizeof(err)), GQ_ETOOBIG,
            &out);
  assert_string_equal(err, "target nests deeper than 128 levels");
  expect_rc(gq_patch_merge(obj, deep, &out, err, sizeof(err)), GQ_ETOOBIG,
            &out);
  assert_string_equal(err, "patch nests deeper than 128 levels");
  expect_rc(gq_patch_json(deep, ops, &out, err, sizeof(err)), GQ_ETOOBIG, &out);
  expect_rc(gq_patch_json(ok, ops, &out, err, sizeof(err)), 0, &out);
  expect_rc(gq_patch_strategic(obj, deep, &out, err, sizeof(err)), GQ_ETOOBIG,
            &out);
  json_decref(ok);
  json_decref(ops);
  /* Nor may a JSON patch build a result past the cap: 100 levels of target
   * plus a 29-deep value is 129, a 28-deep one exactly 128. */
  ok = nested(100);
  for (int d = 29; d >= 28; d--) {
    char path[512];
    size_t n = 0;

    for (int i = 0; i < 99; i++)
      n += (size_t)snprintf(path + n, sizeof(path) - n, "/0");
    snprintf(path + n, sizeof(path) - n, "/-");
    ops = json_pack("[{s:s,s:s,s:o}]", "op", "add", "path", path, "value",
                    nested(d));
    expect_rc(gq_patch_json(ok, ops, &out, err, sizeof(err)),
              d == 29 ? GQ_ETOOBIG : 0, &out);
    if (d == 29)
      assert_non_null(strstr(err, "operation 0: result would nest deeper "
                                  "than 128 levels at '/0/0/"));
    json_decref(ops);
  }
  json_decref(ok);
  json_decref(deep);
  json_decref(obj);
}

static void test_ops_limit(void **state)
{
  json_t *target = json_object(), *ops = json_array(), *out;
  char err[256];

  (void)state;
  for (int i = 0; i < GQ_PATCH_MAX_OPS; i++)
    json_array_append_new(
        ops, json_pack("{s:s,s:s,s:i}", "op", "add", "path", "/n", "value", i));
  expect_rc(gq_patch_json(target, ops, &out, err, sizeof(err)), 0, &out);
  json_array_append_new(ops,
                        json_pack("{s:s,s:s}", "op", "remove", "path", "/n"));
  expect_rc(gq_patch_json(target, ops, &out, err, sizeof(err)), GQ_ETOOBIG,
            &out);
  assert_string_equal(err, "patch has 10001 operations, limit 10000");
  json_decref(ops);
  json_decref(target);
}

/* Copying the document into itself doubles it each time; 2^40 values would
 * take the process down, the copy budget stops it after ~13 rounds. */
static void test_copy_budget(void **state)
{
  json_t *target = parse("budget", "{'a':[1,2,3,4,5,6,7,8]}");
  json_t *ops = json_array(), *out;
  char err[256];

  (void)state;
  for (int i = 0; i < 40; i++)
    json_array_append_new(ops, json_pack("{s:s,s:s,s:s}", "op", "copy", "from",
                                         "/a", "path", "/a/-"));
  expect_rc(gq_patch_json(target, ops, &out, err, sizeof(err)), GQ_ETOOBIG,
            &out);
  assert_non_null(strstr(err, "copies more than"));
  json_decref(ops);
  json_decref(target);
}

static void test_null_arguments(void **state)
{
  json_t *o = json_object(), *a = json_array(), *out = o;

  (void)state;
  assert_int_equal(gq_patch_merge(NULL, o, &out, NULL, 0), GQ_EINVAL);
  assert_null(out);
  assert_int_equal(gq_patch_merge(o, NULL, &out, NULL, 0), GQ_EINVAL);
  assert_int_equal(gq_patch_merge(o, o, NULL, NULL, 0), GQ_EINVAL);
  assert_int_equal(gq_patch_json(o, NULL, &out, NULL, 0), GQ_EINVAL);
  assert_int_equal(gq_patch_json(NULL, a, &out, NULL, 0), GQ_EINVAL);
  assert_int_equal(gq_patch_strategic(o, NULL, &out, NULL, 0), GQ_EINVAL);
  assert_null(gq_json_pointer_get(NULL, ""));
  assert_null(gq_json_pointer_get(o, NULL));
  /* A NULL message buffer is fine on every path. */
  assert_int_equal(gq_patch_json(o, o, &out, NULL, 0), GQ_EINVAL);
  assert_int_equal(gq_patch_json(o, a, &out, NULL, 0), 0);
  json_decref(out);
  json_decref(o);
  json_decref(a);
}

/* ---- JSON Pointer (RFC 6901) ------------------------------------------- */

struct ptr_case {
  const char *pointer;
  const char *want; /* the value as compact JSON, NULL for not found */
};

static void test_pointer_get(void **state)
{
  /* RFC 6901 section 5. */
  static const char doc[] =
      "{\"foo\":[\"bar\",\"baz\"],\"\":0,\"a/b\":1,\"c%d\":2,\"e^f\":3,"
      "\"g|h\":4,\"i\\\\j\":5,\"k\\\"l\":6,\" \":7,\"m~n\":8}";
  static const struct ptr_case cases[] = {
      {"/foo", "[\"bar\",\"baz\"]"},
      {"/foo/0", "\"bar\""},
      {"/foo/1", "\"baz\""},
      {"/", "0"},
      {"/a~1b", "1"},
      {"/c%d", "2"},
      {"/e^f", "3"},
      {"/g|h", "4"},
      {"/i\\j", "5"},
      {"/k\"l", "6"},
      {"/ ", "7"},
      {"/m~0n", "8"},
      {"/foo/2", NULL},
      {"/foo/-", NULL},
      {"/foo/01", NULL},
      {"/foo/-1", NULL},
      {"/foo/ 1", NULL},
      {"/foo/0/x", NULL},
      {"/missing", NULL},
      {"foo", NULL},
      {"/m~2n", NULL},
      {"/m~", NULL},
      {"/a/b", NULL},
      {"//", NULL},
  };
  json_error_t je;
  json_t *d = json_loads(doc, 0, &je);

  (void)state;
  assert_non_null(d);
  assert_ptr_equal(gq_json_pointer_get(d, ""), d);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const json_t *v = gq_json_pointer_get(d, cases[i].pointer);
    char *got = v ? dump(v) : NULL;

    if (!cases[i].want != !got || (got && strcmp(got, cases[i].want) != 0))
      fail_msg("pointer '%s': got %s, want %s", cases[i].pointer,
               got ? got : "NULL", cases[i].want ? cases[i].want : "NULL");
    free(got);
  }
  json_decref(d);
}

/* ---- strategic merge patch --------------------------------------------- */

#define POD_AB                                                                 \
  "{'spec':{'containers':[{'name':'a','image':'a:1'},"                         \
  "{'name':'b','image':'b:1','args':['x']}]}}"
#define POD_ABC                                                                \
  "{'spec':{'containers':[{'name':'a','image':'a:1'},"                         \
  "{'name':'b','image':'b:1'},{'name':'c','image':'c:1'}]}}"

static const struct patch_case smp_cases[] = {
    OK("kubectl cordon",
       "{'kind':'Node','metadata':{'name':'n1'},'spec':{'podCIDR':'10.0.1.0/"
       "24'}}",
       "{'spec':{'unschedulable':true}}",
       "{'kind':'Node','metadata':{'name':'n1'},"
       "'spec':{'podCIDR':'10.0.1.0/24','unschedulable':true}}"),
    OK("kubectl uncordon",
       "{'kind':'Node','spec':{'podCIDR':'10.0.1.0/24','unschedulable':true}}",
       "{'spec':{'unschedulable':null}}",
       "{'kind':'Node','spec':{'podCIDR':'10.0.1.0/24'}}"),
    OK("labels: set and delete", "{'metadata':{'labels':{'a':'1','b':'2'}}}",
       "{'metadata':{'labels':{'a':null,'c':'3'}}}",
       "{'metadata':{'labels':{'b':'2','c':'3'}}}"),
    OK("container image by name keeps the others", POD_AB,
       "{'spec':{'containers':[{'name':'b','image':'b:2'}]}}",
       "{'spec':{'containers':[{'name':'a','image':'a:1'},"
       "{'name':'b','image':'b:2','args':['x']}]}}"),
    /* mergeSortedSlice() takes a patch element first unless both are in
     * the live list, so new elements lead (kustomize #3048 calls this the
     * "prepend" behaviour of strategic merge patch). */
    OK("new container goes first", POD_AB,
       "{'spec':{'containers':[{'name':'z','image':'z:1'}]}}",
       "{'spec':{'containers':[{'name':'z','image':'z:1'},"
       "{'name':'a','image':'a:1'},{'name':'b','image':'b:1','args':['x']}]}}"),
    OK("$patch delete of a container", POD_AB,
       "{'spec':{'containers':[{'name':'a','$patch':'delete'}]}}",
       "{'spec':{'containers':[{'name':'b','image':'b:1','args':['x']}]}}"),
    OK("$patch delete of a missing container", POD_AB,
       "{'spec':{'containers':[{'name':'q','$patch':'delete'}]}}", POD_AB),
    OK("$patch replace in a list", POD_AB,
       "{'spec':{'containers':[{'$patch':'replace'},"
       "{'name':'z','image':'z:1','$x':1}]}}",
       "{'spec':{'containers':[{'name':'z','image':'z:1'}]}}"),
    OK("empty merged list changes nothing", POD_AB,
       "{'spec':{'containers':[]}}", POD_AB),
    OK("merged list onto nothing drops directives", "{'spec':{}}",
       "{'spec':{'containers':[{'name':'a','$patch':'delete'},"
       "{'name':'b','env':null,'image':'b:1'}]}}",
       "{'spec':{'containers':[{'name':'b','image':'b:1'}]}}"),
    OK("primitive list is replaced", POD_AB,
       "{'spec':{'containers':[{'name':'b','args':['y','z']}]}}",
       "{'spec':{'containers':[{'name':'a','image':'a:1'},"
       "{'name':'b','image':'b:1','args':['y','z']}]}}"),
    OK("env by name inside a container, volumeMounts by mountPath",
       "{'spec':{'containers':[{'name':'a','env':[{'name':'X','value':'1'},"
       "{'name':'Y','value':'2'}],'volumeMounts':[{'name':'v',"
       "'mountPath':'/data'},{'name':'w','mountPath':'/w'}]}]}}",
       "{'spec':{'containers':[{'name':'a','env':[{'name':'Y','value':'3'}],"
       "'volumeMounts':[{'name':'v2','mountPath':'/data'}]}]}}",
       "{'spec':{'containers':[{'name':'a','env':[{'name':'X','value':'1'},"
       "{'name':'Y','value':'3'}],'volumeMounts':[{'name':'v2',"
       "'mountPath':'/data'},{'name':'w','mountPath':'/w'}]}]}}"),
    OK("container ports by containerPort",
       "{'ports':[{'containerPort':80,'name':'http'},{'containerPort':443}]}",
       "{'ports':[{'containerPort':80,'protocol':'TCP'}]}",
       "{'ports':[{'containerPort':80,'name':'http','protocol':'TCP'},"
       "{'containerPort':443}]}"),
    OK("service ports by port",
       "{'spec':{'ports':[{'port':80,'targetPort':8080},{'port':443}]}}",
       "{'spec':{'ports':[{'port':80,'targetPort':9090}]}}",
       "{'spec':{'ports':[{'port':80,'targetPort':9090},{'port':443}]}}"),
    OK("conditions by type",
       "{'status':{'conditions':[{'type':'Ready','status':'False'},"
       "{'type':'MemoryPressure','status':'False'}]}}",
       "{'status':{'conditions':[{'type':'Ready','status':'True',"
       "'reason':'KubeletReady'},{'type':'DiskPressure','status':'False'}]}}",
       "{'status':{'conditions':[{'type':'Ready','status':'True',"
       "'reason':'KubeletReady'},{'type':'DiskPressure','status':'False'},"
       "{'type':'MemoryPressure','status':'False'}]}}"),
    OK("ownerReferences by uid",
       "{'metadata':{'ownerReferences':[{'uid':'u1','name':'a'},"
       "{'uid':'u2','name':'b'}]}}",
       "{'metadata':{'ownerReferences':[{'uid':'u2','$patch':'delete'},"
       "{'uid':'u3','name':'c'}]}}",
       "{'metadata':{'ownerReferences':[{'uid':'u3','name':'c'},"
       "{'uid':'u1','name':'a'}]}}"),
    OK("tolerations are replaced",
       "{'spec':{'tolerations':[{'key':'a','operator':'Exists'}]}}",
       "{'spec':{'tolerations':[{'key':'b','operator':'Exists'}]}}",
       "{'spec':{'tolerations':[{'key':'b','operator':'Exists'}]}}"),
    OK("taints are replaced",
       "{'spec':{'taints':[{'key':'a','effect':'NoSchedule'}]}}",
       "{'spec':{'taints':[]}}", "{'spec':{'taints':[]}}"),
    OK("known name, foreign shape: replaced",
       "{'status':{'conditions':['a','b']}}", "{'status':{'conditions':['c']}}",
       "{'status':{'conditions':['c']}}"),
    /* strategicpatch's normalizeElementOrder(): patched elements in patch
     * order, untouched ones placed by their live position. */
    OK("merged list order", POD_ABC,
       "{'spec':{'containers':[{'name':'c','image':'c:2'},"
       "{'name':'a','image':'a:2'}]}}",
       "{'spec':{'containers':[{'name':'b','image':'b:1'},"
       "{'name':'c','image':'c:2'},{'name':'a','image':'a:2'}]}}"),
    OK("$setElementOrder reorders", POD_ABC,
       "{'spec':{'$setElementOrder/containers':[{'name':'c'},{'name':'a'},"
       "{'name':'b'}]}}",
       "{'spec':{'containers':[{'name':'c','image':'c:1'},"
       "{'name':'a','image':'a:1'},{'name':'b','image':'b:1'}]}}"),
    OK("kubectl apply: $setElementOrder with a change", POD_ABC,
       "{'spec':{'$setElementOrder/containers':[{'name':'a'},{'name':'b'},"
       "{'name':'c'}],'containers':[{'name':'c','image':'c:2'},"
       "{'name':'a','image':'a:2'}]}}",
       "{'spec':{'containers':[{'name':'a','image':'a:2'},"
       "{'name':'b','image':'b:1'},{'name':'c','image':'c:2'}]}}"),
    OK("$setElementOrder on primitives",
       "{'metadata':{'finalizers':['x','y','z']}}",
       "{'metadata':{'$setElementOrder/finalizers':['z','x']}}",
       "{'metadata':{'finalizers':['y','z','x']}}"),
    OK("$setElementOrder of a missing list is dropped", "{'spec':{}}",
       "{'spec':{'$setElementOrder/containers':[{'name':'a'}]}}",
       "{'spec':{}}"),
    OK("$setElementOrder without a merge key is dropped",
       "{'spec':{'tolerations':[{'key':'a'},{'key':'b'}]}}",
       "{'spec':{'$setElementOrder/tolerations':[{'key':'b'},{'key':'a'}]}}",
       "{'spec':{'tolerations':[{'key':'a'},{'key':'b'}]}}"),
    OK("$retainKeys",
       "{'spec':{'strategy':{'type':'RollingUpdate',"
       "'rollingUpdate':{'maxSurge':1}},'replicas':2}}",
       "{'spec':{'strategy':{'$retainKeys':['type'],'type':'Recreate'}}}",
       "{'spec':{'strategy':{'type':'Recreate'},'replicas':2}}"),
    OK("$retainKeys keeps listed keys and merges",
       "{'v':{'a':1,'b':{'x':1},'c':3}}",
       "{'v':{'$retainKeys':['b','c'],'b':{'y':2}}}",
       "{'v':{'b':{'x':1,'y':2},'c':3}}"),
    OK("$deleteFromPrimitiveList",
       "{'metadata':{'finalizers':['a','b','c','b']}}",
       "{'metadata':{'$deleteFromPrimitiveList/finalizers':['b','q']}}",
       "{'metadata':{'finalizers':['a','c']}}"),
    OK("$deleteFromPrimitiveList of a missing list", "{'metadata':{}}",
       "{'metadata':{'$deleteFromPrimitiveList/finalizers':['b']}}",
       "{'metadata':{}}"),
    OK("map $patch replace", "{'spec':{'selector':{'a':'1','b':'2'},'x':1}}",
       "{'spec':{'selector':{'$patch':'replace','c':'3','n':null}}}",
       "{'spec':{'selector':{'c':'3'},'x':1}}"),
    /* strategicpatch's handleDirectiveInMergeMap() returns an empty map. */
    OK("map $patch delete empties the map",
       "{'spec':{'securityContext':{'runAsUser':0},'x':1}}",
       "{'spec':{'securityContext':{'$patch':'delete'}}}",
       "{'spec':{'securityContext':{},'x':1}}"),
    OK("unknown $ keys are dropped", "{'metadata':{'labels':{'a':'b'}}}",
       "{'$foo':1,'metadata':{'$bar':{'x':1},'labels':{'$baz':'x','c':'d'}},"
       "'spec':{'$new':1,'containers':[{'name':'a','$q':2}]}}",
       "{'metadata':{'labels':{'a':'b','c':'d'}},"
       "'spec':{'containers':[{'name':'a'}]}}"),
    OK("type change: object replaces list", "{'a':[1]}", "{'a':{'b':1}}",
       "{'a':{'b':1}}"),
};

static void test_strategic(void **state)
{
  (void)state;
  RUN(smp_cases, gq_patch_strategic);
}

static const struct patch_case smp_error_cases[] = {
    ERR("patch not an object", "{}", "['a']", GQ_EINVAL,
        "patch must be a JSON object"),
    ERR("target not an object", "[]", "{}", GQ_EINVAL,
        "target must be a JSON object"),
    ERR("bad map $patch", "{'spec':{}}", "{'spec':{'$patch':'merge'}}",
        GQ_EINVAL, "'$patch' in a map must be"),
    ERR("map $patch not a string", "{}", "{'spec':{'$patch':1}}", GQ_EINVAL,
        "'$patch' in a map must be"),
    ERR("bad list $patch", POD_AB,
        "{'spec':{'containers':[{'name':'a','$patch':'merge'}]}}", GQ_EINVAL,
        "list 'containers' element 0: '$patch' must be"),
    ERR("delete without merge key", POD_AB,
        "{'spec':{'containers':[{'image':'a:1','$patch':'delete'}]}}",
        GQ_EINVAL, "with merge key 'name'"),
    ERR("$retainKeys not a list", "{}", "{'$retainKeys':'a'}", GQ_EINVAL,
        "'$retainKeys' must be a list of strings"),
    ERR("$retainKeys with a number", "{}", "{'s':{'$retainKeys':['a',1]}}",
        GQ_EINVAL, "'$retainKeys' must be a list of strings"),
    ERR("$setElementOrder not a list", POD_AB,
        "{'spec':{'$setElementOrder/containers':{'name':'a'}}}", GQ_EINVAL,
        "'$setElementOrder/containers' must be a list"),
    ERR("$deleteFromPrimitiveList not a list", "{}",
        "{'metadata':{'$deleteFromPrimitiveList/finalizers':'a'}}", GQ_EINVAL,
        "'$deleteFromPrimitiveList/finalizers' must be a list"),
    ERR("error deep inside a list element", POD_AB,
        "{'spec':{'containers':[{'name':'b','securityContext':"
        "{'$patch':'zap'}}]}}",
        GQ_EINVAL, "'$patch' in a map must be"),
};

static void test_strategic_errors(void **state)
{
  (void)state;
  RUN(smp_error_cases, gq_patch_strategic);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_merge_rfc7386),
      cmocka_unit_test(test_json_rfc6902),
      cmocka_unit_test(test_json_rfc6902_a13),
      cmocka_unit_test(test_json_more),
      cmocka_unit_test(test_json_errors),
      cmocka_unit_test(test_json_atomic),
      cmocka_unit_test(test_depth_limit),
      cmocka_unit_test(test_ops_limit),
      cmocka_unit_test(test_copy_budget),
      cmocka_unit_test(test_null_arguments),
      cmocka_unit_test(test_pointer_get),
      cmocka_unit_test(test_strategic),
      cmocka_unit_test(test_strategic_errors),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
