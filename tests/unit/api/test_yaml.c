/* Tests for api/yaml: the core-schema scalar rules, documents, anchors,
 * aliases and merge keys, every error with its position, and the limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/yaml.h"
#include "base/alloc.h"
#include "base/err.h"

/* A YAML stream and the JSON array of documents it must load as. */
struct load_case {
  const char *name;
  const char *yaml;
  const char *want_json;
};

/* A stream that must fail: the code and the message. want_msg is compared
 * exactly when set; want_sub must appear in the message when set. */
struct error_case {
  const char *name;
  const char *yaml;
  int want_rc;
  const char *want_msg;
  const char *want_sub;
};

static const struct load_case scalar_cases[] = {
    {"null forms", "a: null\nb: Null\nc: NULL\nd: ~\ne:\n",
     "[{\"a\":null,\"b\":null,\"c\":null,\"d\":null,\"e\":null}]"},
    {"bool forms", "[true, True, TRUE, false, False, FALSE]",
     "[[true,true,true,false,false,false]]"},
    {"yaml 1.1 booleans stay strings", "[yes, no, on, off, y, n, tRuE, nULL]",
     "[[\"yes\",\"no\",\"on\",\"off\",\"y\",\"n\",\"tRuE\",\"nULL\"]]"},
    {"decimal, octal, hex ints", "[0, 42, -17, +5, 007, 0o17, 0x1F, 0xff, -0]",
     "[[0,42,-17,5,7,15,31,255,0]]"},
    {"int64 extremes",
     "[9223372036854775807, -9223372036854775808, "
     "0x7FFFFFFFFFFFFFFF]",
     "[[9223372036854775807,-9223372036854775808,9223372036854775807]]"},
    {"int overflow becomes real",
     "[9223372036854775808, -9223372036854775809, 0x10000000000000000, "
     "0o1000000000000000000000]",
     "[[9223372036854775808.0,-9223372036854775809.0,"
     "18446744073709551616.0,9223372036854775808.0]]"},
    {"not ints", "[0o8, 0x, 0xg, -0x1F, +0o7, 1_000, 0b101, 12e, 0X1F]",
     "[[\"0o8\",\"0x\",\"0xg\",\"-0x1F\",\"+0o7\",\"1_000\",\"0b101\","
     "\"12e\",\"0X1F\"]]"},
    {"floats", "[1.5, -2.25, .5, 5., 1e3, 1E-2, +1.0e+2, 0.0, -.5e1]",
     "[[1.5,-2.25,0.5,5.0,1000.0,0.01,100.0,0.0,-5.0]]"},
    {"float underflow is zero", "x: 1e-400", "[{\"x\":0.0}]"},
    {"not floats", "[1.2.3, ., 1e, e5, 1.5x, -.inf., .infinity, -.nan]",
     "[[\"1.2.3\",\".\",\"1e\",\"e5\",\"1.5x\",\"-.inf.\",\".infinity\","
     "\"-.nan\"]]"},
    {"quoted scalars are strings",
     "[hello, 'null', \"42\", \"true\", '1.5', ~x, '', \"~\"]",
     "[[\"hello\",\"null\",\"42\",\"true\",\"1.5\",\"~x\",\"\",\"~\"]]"},
    {"block scalars are strings", "a: |\n  42\nb: >\n  true\nc: |-\n  null\n",
     "[{\"a\":\"42\\n\",\"b\":\"true\\n\",\"c\":\"null\"}]"},
    {"escapes and unicode", "a: \"caf\\u00e9\\t\"\nb: 'it''s'\nc: ☃\n",
     "[{\"a\":\"caf\\u00e9\\t\",\"b\":\"it's\",\"c\":\"\\u2603\"}]"},
    {"explicit scalar tags",
     "[!!str 42, !!str true, !!int \"42\", !!float 1, !!float \"2.5\", "
     "!!bool \"true\", !!null '', !!str , ! 12, !!int 0x10, !!null ~]",
     "[[\"42\",\"true\",42,1.0,2.5,true,null,\"\",\"12\",16,null]]"},
    {"!!int overflow becomes real", "x: !!int 18446744073709551616",
     "[{\"x\":18446744073709551616.0}]"},
    {"collection tags", "!!map {a: !!seq [1], b: ! {c: 2}}",
     "[{\"a\":[1],\"b\":{\"c\":2}}]"},
    {"keys are their text", "1: a\ntrue: b\nnull: c\n0x10: d\n\"q\": e\n",
     "[{\"1\":\"a\",\"true\":\"b\",\"null\":\"c\","
     "\"0x10\":\"d\",\"q\":\"e\"}]"},
    {"empty key", "? \n: v\n", "[{\"\":\"v\"}]"},
};

static const struct load_case doc_cases[] = {
    {"empty input", "", "[]"},
    {"only comments", "# nothing here\n# still nothing\n", "[]"},
    {"three documents", "a: 1\n---\nb: 2\n---\n- x\n",
     "[{\"a\":1},{\"b\":2},[\"x\"]]"},
    {"empty documents are skipped", "---\n# comment\n---\na: 1\n---\n",
     "[{\"a\":1}]"},
    {"explicit null document is kept", "--- null\n", "[null]"},
    {"tilde document then empty", "--- ~\n---\n", "[null]"},
    {"document end markers", "a: 1\n...\n---\nb: 2\n...\n",
     "[{\"a\":1},{\"b\":2}]"},
    {"scalar documents", "--- 42\n--- text\n--- '7'\n", "[42,\"text\",\"7\"]"},
    {"directives", "%YAML 1.2\n---\na: 1\n", "[{\"a\":1}]"},
    {"empty collections", "a: {}\nb: []\n", "[{\"a\":{},\"b\":[]}]"},
};

static const struct load_case alias_cases[] = {
    {"anchor and alias",
     "base: &b {cpu: 1, mem: 2Gi}\nuse: *b\nlist: [&x 5, *x]\n",
     "[{\"base\":{\"cpu\":1,\"mem\":\"2Gi\"},\"use\":{\"cpu\":1,\"mem\":"
     "\"2Gi\"},\"list\":[5,5]}]"},
    {"anchor redefined", "- &a 1\n- *a\n- &a 2\n- *a\n", "[[1,1,2,2]]"},
    {"alias to a sequence", "a: &s [1, 2]\nb: [*s, *s]\n",
     "[{\"a\":[1,2],\"b\":[[1,2],[1,2]]}]"},
    {"anchored key", "&k team: a\nother: *k\n",
     "[{\"team\":\"a\",\"other\":\"team\"}]"},
    {"alias as key", "k: &k name\n*k : 2\n", "[{\"k\":\"name\",\"name\":2}]"},
    {"merge one mapping",
     "base: &b {cpu: 1, mem: 2}\njob:\n  <<: *b\n  mem: 4\n",
     "[{\"base\":{\"cpu\":1,\"mem\":2},\"job\":{\"cpu\":1,\"mem\":4}}]"},
    {"merge written after the keys",
     "a: &a {x: 1, y: 1}\nc:\n  x: 2\n  <<: *a\n",
     "[{\"a\":{\"x\":1,\"y\":1},\"c\":{\"x\":2,\"y\":1}}]"},
    {"merge list, earlier wins",
     "a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc:\n  <<: [*a, *b]\n  z: 3\n",
     "[{\"a\":{\"x\":1,\"y\":1},\"b\":{\"y\":2,\"z\":2},"
     "\"c\":{\"x\":1,\"y\":1,\"z\":3}}]"},
    {"merge inline mapping", "c:\n  <<: {x: 1}\n  y: 2\n",
     "[{\"c\":{\"x\":1,\"y\":2}}]"},
    {"merge empty list", "c:\n  <<: []\n  y: 2\n", "[{\"c\":{\"y\":2}}]"},
    {"quoted << is a plain key", "'<<': 1\nx: 2\n", "[{\"<<\":1,\"x\":2}]"},
    {"tagged << is a plain key", "!!str <<: 1\n", "[{\"<<\":1}]"},
    {"anchors per document, redefined", "a: &x 1\n---\nb: &x 2\nc: *x\n",
     "[{\"a\":1},{\"b\":2,\"c\":2}]"},
};

static const struct error_case error_cases[] = {
    {"duplicate key", "a: 1\nteam: x\nteam: y\n", GQ_EPARSE,
     "3:1: duplicate mapping key 'team'", NULL},
    {"duplicate nested key", "spec:\n  x: 1\n  team: a\n  team: b\n", GQ_EPARSE,
     "4:3: duplicate mapping key 'team'", NULL},
    {"duplicate flow key", "{a: 1, a: 2}", GQ_EPARSE,
     "1:8: duplicate mapping key 'a'", NULL},
    {"duplicate quoted <<", "'<<': 1\n\"<<\": 2\n", GQ_EPARSE,
     "2:1: duplicate mapping key '<<'", NULL},
    {"duplicate merge", "a: &a {x: 1}\nb:\n  <<: *a\n  <<: *a\n", GQ_EPARSE,
     "4:3: duplicate mapping key '<<'", NULL},
    {"complex key", "? [a, b]\n: 1\n", GQ_EPARSE,
     "1:3: mapping key must be a scalar", NULL},
    {"flow mapping key", "x:\n  {[a]: 1}", GQ_EPARSE,
     "2:4: mapping key must be a scalar", NULL},
    {"alias key to a mapping", "a: &m {x: 1}\n*m : 2\n", GQ_EPARSE,
     "2:1: alias 'm' used as a mapping key must refer to a string", NULL},
    {"alias key to an integer", "a: &n 5\n*n : 2\n", GQ_EPARSE,
     "2:1: alias 'n' used as a mapping key must refer to a string", NULL},
    {"NUL in key", "\"a\\0b\": 1\n", GQ_EPARSE,
     "1:1: mapping key contains a NUL character", NULL},
    {"undefined alias", "a: *nope\n", GQ_EPARSE, "1:4: undefined alias 'nope'",
     NULL},
    {"alias across documents", "a: &x 1\n---\nb: *x\n", GQ_EPARSE,
     "3:4: undefined alias 'x'", NULL},
    {"recursive alias", "a: &x [1, *x]\n", GQ_EPARSE,
     "1:11: undefined alias 'x'", NULL},
    {".inf", "a: .inf\n", GQ_EPARSE, "1:4: cannot represent '.inf' in JSON",
     NULL},
    {"-.Inf", "[1, -.Inf]", GQ_EPARSE, "1:5: cannot represent '-.Inf' in JSON",
     NULL},
    {".NaN", "x:\n  y: .NaN\n", GQ_EPARSE,
     "2:6: cannot represent '.NaN' in JSON", NULL},
    {"float beyond double", "x: 1e999\n", GQ_EPARSE,
     "1:4: cannot represent '1e999' in JSON", NULL},
    {"!!float .inf", "x: !!float .inf\n", GQ_EPARSE,
     "1:4: cannot represent '.inf' in JSON", NULL},
    {"!!int not an int", "x: !!int abc\n", GQ_EPARSE,
     "1:4: invalid !!int value 'abc'", NULL},
    {"!!int with a fraction", "x: !!int 1.5\n", GQ_EPARSE,
     "1:4: invalid !!int value '1.5'", NULL},
    {"!!bool yes", "x: !!bool yes\n", GQ_EPARSE,
     "1:4: invalid !!bool value 'yes'", NULL},
    {"!!null 0", "x: !!null 0\n", GQ_EPARSE, "1:4: invalid !!null value '0'",
     NULL},
    {"!!null with NUL", "x: !!null \"null\\0\"\n", GQ_EPARSE,
     "1:4: invalid !!null value 'null'", NULL},
    {"!!float not a float", "x: !!float abc\n", GQ_EPARSE,
     "1:4: invalid !!float value 'abc'", NULL},
    {"!!map on a scalar", "x: !!map abc\n", GQ_EPARSE,
     "1:4: tag '!!map' cannot apply to a scalar", NULL},
    {"!!seq on a mapping", "x: !!seq {a: 1}\n", GQ_EPARSE,
     "1:4: tag '!!seq' cannot apply to a mapping", NULL},
    {"!!str on a sequence", "x: !!str [1]\n", GQ_EPARSE,
     "1:4: tag '!!str' cannot apply to a sequence", NULL},
    {"local tag", "x: !Ref foo\n", GQ_EPARSE, "1:4: unsupported tag '!Ref'",
     NULL},
    {"!!binary", "x: !!binary aGVsbG8=\n", GQ_EPARSE,
     "1:4: unsupported tag '!!binary'", NULL},
    {"global tag on a mapping", "x: !<tag:example.com,2000:t> {a: 1}\n",
     GQ_EPARSE, "1:4: unsupported tag 'tag:example.com,2000:t'", NULL},
    {"merge of a scalar", "a: 1\nb:\n  <<: 5\n", GQ_EPARSE,
     "3:7: merge value must be a mapping or a sequence of mappings", NULL},
    {"merge list with a scalar", "a: &a {x: 1}\nb:\n  <<: [*a, 3]\n", GQ_EPARSE,
     "3:7: merge sequence item 1 is not a mapping", NULL},
    {"unclosed flow sequence", "a: [1, 2\n", GQ_EPARSE,
     "2:1: did not find expected ',' or ']' while parsing a flow sequence "
     "at 1:4",
     NULL},
    {"nested mapping value", "a: b: c\n", GQ_EPARSE,
     "1:5: mapping values are not allowed in this context", NULL},
    {"tab indentation", "a:\n\tb: 1\n", GQ_EPARSE, NULL,
     "2:1: found character that cannot start any token"},
    {"unterminated quote", "'abc\n", GQ_EPARSE, NULL,
     "found unexpected end of stream while scanning a quoted scalar"},
    {"invalid UTF-8", "a: \xff\n", GQ_EPARSE,
     "1:4: invalid leading UTF-8 octet (#xFF)", NULL},
    {"control character", "a: b\nc: \x01\n", GQ_EPARSE,
     "2:4: control characters are not allowed (#x1)", NULL},
    {"error in a later document", "a: 1\n---\nb: [\n", GQ_EPARSE, NULL,
     "4:1: "},
};

static char *dump(const json_t *v)
{
  char *s = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_SORT_KEYS) : NULL;

  return s ? s : gq_xstrdup("(null)");
}

static void check_json(const char *name, const json_t *got, const char *want)
{
  json_error_t jerr;
  json_t *w = json_loads(want, JSON_DECODE_ANY, &jerr);
  int same;

  if (!w)
    fail_msg("case '%s': bad want_json: %s", name, jerr.text);
  same = json_equal(got, w);
  if (!same) {
    char *g = dump(got), *ws = dump(w);

    print_error("case '%s':\n  got  %s\n  want %s\n", name, g, ws);
    free(g);
    free(ws);
  }
  json_decref(w);
  assert_true(same);
}

static void run_load_cases(const struct load_case *cases, size_t n)
{
  for (size_t i = 0; i < n; i++) {
    char err[256] = "unset";
    json_t *docs = NULL;
    int rc;

    rc = gq_yaml_parse(cases[i].yaml, strlen(cases[i].yaml), &docs, err,
                       sizeof err);
    if (rc != 0)
      print_error("case '%s': rc %d: %s\n", cases[i].name, rc, err);
    assert_int_equal(rc, 0);
    assert_string_equal(err, "");
    check_json(cases[i].name, docs, cases[i].want_json);
    json_decref(docs);
  }
}

static void check_error(const char *name, int rc, const char *err,
                        const json_t *docs, const struct error_case *c)
{
  if (rc != c->want_rc || (c->want_msg && strcmp(err, c->want_msg) != 0) ||
      (c->want_sub && !strstr(err, c->want_sub)))
    print_error("case '%s': rc %d, message '%s'\n", name, rc, err);
  assert_int_equal(rc, c->want_rc);
  assert_null(docs);
  if (c->want_msg)
    assert_string_equal(err, c->want_msg);
  if (c->want_sub)
    assert_non_null(strstr(err, c->want_sub));
}

static void test_scalars(void **state)
{
  (void)state;
  run_load_cases(scalar_cases, sizeof scalar_cases / sizeof scalar_cases[0]);
}

static void test_documents(void **state)
{
  (void)state;
  run_load_cases(doc_cases, sizeof doc_cases / sizeof doc_cases[0]);
}

static void test_aliases_and_merges(void **state)
{
  (void)state;
  run_load_cases(alias_cases, sizeof alias_cases / sizeof alias_cases[0]);
}

static void test_errors(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof error_cases / sizeof error_cases[0]; i++) {
    const struct error_case *c = &error_cases[i];
    json_t *docs = json_array(); /* must be replaced by NULL */
    json_t *before = docs;
    char err[256] = "";
    int rc = gq_yaml_parse(c->yaml, strlen(c->yaml), &docs, err, sizeof err);

    check_error(c->name, rc, err, docs, c);
    json_decref(before);
  }
}

/* The value behind an alias is the anchored json_t itself (header: shared
 * reference), and stays valid after the documents array is released. */
static void test_alias_shares_value(void **state)
{
  const char *y = "base: &b {cpu: 1}\nuse: *b\n";
  json_t *docs, *doc, *kept;

  (void)state;
  assert_int_equal(gq_yaml_parse(y, strlen(y), &docs, NULL, 0), 0);
  doc = json_array_get(docs, 0);
  assert_ptr_equal(json_object_get(doc, "base"), json_object_get(doc, "use"));
  kept = json_incref(json_object_get(doc, "use"));
  json_decref(docs);
  assert_int_equal(json_integer_value(json_object_get(kept, "cpu")), 1);
  json_decref(kept);
}

/* "[[[...]]]" nested 'depth' levels. */
static char *flow_nest(int depth)
{
  char *s = gq_xmalloc((size_t)depth * 2 + 1);

  memset(s, '[', (size_t)depth);
  memset(s + depth, ']', (size_t)depth);
  s[depth * 2] = '\0';
  return s;
}

static void test_depth_limit(void **state)
{
  char err[256];
  json_t *docs = NULL;
  char *ok = flow_nest(GQ_YAML_MAX_DEPTH);
  char *deep = flow_nest(GQ_YAML_MAX_DEPTH + 1);
  char *huge = flow_nest(100000);

  (void)state;
  assert_int_equal(gq_yaml_parse(ok, strlen(ok), &docs, err, sizeof err), 0);
  json_decref(docs);
  assert_int_equal(gq_yaml_parse(deep, strlen(deep), &docs, err, sizeof err),
                   GQ_ETOOBIG);
  assert_null(docs);
  assert_string_equal(err, "1:257: nesting deeper than 256 levels");
  assert_int_equal(gq_yaml_parse(huge, strlen(huge), &docs, err, sizeof err),
                   GQ_ETOOBIG);
  free(ok);
  free(deep);
  free(huge);
}

/* "a: &a [[...]]" 'height' deep, then "b: [[...*a...]]" 'around' deep: the
 * alias brings its whole height to where it is used. */
static char *alias_nest(int height, int around)
{
  char *a = flow_nest(height), *b = gq_xmalloc((size_t)around * 2 + 3);
  char *s;

  memset(b, '[', (size_t)around);
  memcpy(b + around, "*a", 2);
  memset(b + around + 2, ']', (size_t)around);
  b[around * 2 + 2] = '\0';
  s = gq_xasprintf("a: &a %s\nb: %s\n", a, b);
  free(a);
  free(b);
  return s;
}

static void test_depth_limit_through_alias(void **state)
{
  char err[256];
  json_t *docs = NULL;
  char *ok = alias_nest(200, 55), *deep = alias_nest(200, 56);

  (void)state;
  /* mapping (1) + 55 levels + the alias's 200 = 256 */
  assert_int_equal(gq_yaml_parse(ok, strlen(ok), &docs, err, sizeof err), 0);
  json_decref(docs);
  assert_int_equal(gq_yaml_parse(deep, strlen(deep), &docs, err, sizeof err),
                   GQ_ETOOBIG);
  assert_null(docs);
  assert_string_equal(err, "2:60: alias 'a' nests deeper than 256 levels");
  free(ok);
  free(deep);
}

/* Block mappings nest through indentation: "a:\n  a:\n    a: ..." */
static void test_depth_limit_block(void **state)
{
  size_t cap = 300 * 310, off = 0;
  char *s = gq_xmalloc(cap), err[256];
  json_t *docs = NULL;

  (void)state;
  for (int i = 0; i < 300; i++)
    off += (size_t)snprintf(s + off, cap - off, "%*sa:\n", i * 2, "");
  assert_int_equal(gq_yaml_parse(s, off, &docs, err, sizeof err), GQ_ETOOBIG);
  assert_string_equal(err, "257:513: nesting deeper than 256 levels");
  free(s);
}

/* The classic "billion laughs": 9 levels, each nine aliases of the last. */
static void test_alias_bomb(void **state)
{
  char buf[2048], err[256];
  size_t off = 0;
  json_t *docs = NULL;

  (void)state;
  off += (size_t)snprintf(buf, sizeof buf,
                          "a: &a [lol,lol,lol,lol,lol,lol,"
                          "lol,lol,lol]\n");
  for (char c = 'b'; c <= 'i'; c++)
    off += (size_t)snprintf(buf + off, sizeof buf - off,
                            "%c: &%c [*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c,*%c]\n",
                            c, c, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1,
                            c - 1, c - 1, c - 1);
  assert_int_equal(gq_yaml_parse(buf, off, &docs, err, sizeof err), GQ_ETOOBIG);
  assert_null(docs);
  assert_non_null(strstr(err, "aliases expand to more than 100000 nodes"));
}

/* "a: &x 1\nb: [*x, *x, ...]" with n aliases of a scalar. */
static char *many_aliases(size_t n, size_t *len)
{
  size_t cap = 32 + n * 4, off;
  char *s = gq_xmalloc(cap);

  off = (size_t)snprintf(s, cap, "a: &x 1\nb: [");
  for (size_t i = 0; i < n; i++)
    off += (size_t)snprintf(s + off, cap - off, "*x,");
  off += (size_t)snprintf(s + off, cap - off, "]\n");
  *len = off;
  return s;
}

static void test_alias_count_limit(void **state)
{
  char err[256];
  size_t len;
  json_t *docs = NULL;
  char *at = many_aliases(GQ_YAML_MAX_ALIAS_NODES, &len);
  char *over;

  (void)state;
  assert_int_equal(gq_yaml_parse(at, len, &docs, err, sizeof err), 0);
  assert_int_equal(
      json_array_size(json_object_get(json_array_get(docs, 0), "b")),
      GQ_YAML_MAX_ALIAS_NODES);
  json_decref(docs);
  over = many_aliases(GQ_YAML_MAX_ALIAS_NODES + 1, &len);
  assert_int_equal(gq_yaml_parse(over, len, &docs, err, sizeof err),
                   GQ_ETOOBIG);
  assert_string_equal(err, "2:300005: aliases expand to more than 100000 "
                           "nodes");
  free(at);
  free(over);
}

static void test_size_limit(void **state)
{
  size_t len = GQ_YAML_MAX_BYTES + 1;
  char *big = gq_xmalloc(len), err[256];
  json_t *docs = NULL;

  (void)state;
  memset(big, '#', len);
  assert_int_equal(gq_yaml_parse(big, len, &docs, err, sizeof err), GQ_ETOOBIG);
  assert_null(docs);
  assert_string_equal(err, "input of 67108865 bytes exceeds the limit of "
                           "67108864 bytes");
  free(big);
}

static void test_arguments(void **state)
{
  char err[8];
  json_t *docs = NULL;

  (void)state;
  assert_int_equal(gq_yaml_parse("a: 1", 4, NULL, NULL, 0), GQ_EINVAL);
  assert_int_equal(gq_yaml_parse(NULL, 3, &docs, NULL, 0), GQ_EINVAL);
  assert_int_equal(gq_yaml_parse(NULL, 0, &docs, NULL, 0), 0);
  assert_int_equal(json_array_size(docs), 0);
  json_decref(docs);
  /* Not NUL-terminated: only len bytes are read. */
  assert_int_equal(gq_yaml_parse("a: 1b: 2", 4, &docs, NULL, 0), 0);
  check_json("length bounds the input", docs, "[{\"a\":1}]");
  json_decref(docs);
  /* A short buffer gets a truncated, terminated message. */
  assert_int_equal(gq_yaml_parse("a: *x", 5, &docs, err, sizeof err),
                   GQ_EPARSE);
  assert_string_equal(err, "1:4: un");
  assert_int_equal(gq_yaml_load_file(NULL, &docs, err, sizeof err), GQ_EINVAL);
}

/* Writes 'text' to a new temporary file; returns its malloc'd path. */
static char *write_temp(const char *text)
{
  char *path = gq_xstrdup("/tmp/gq_test_yaml_XXXXXX");
  int fd = mkstemp(path);
  size_t n = strlen(text);

  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, n), (ssize_t)n);
  close(fd);
  return path;
}

static void test_load_file(void **state)
{
  char err[512], want[512];
  json_t *docs = NULL;
  char *good = write_temp("kind: Pod\nspec:\n  gpus: 8\n---\n");
  char *bad = write_temp("kind: Pod\nmetadata:\n  name: a\n  name: b\n");

  (void)state;
  assert_int_equal(gq_yaml_load_file(good, &docs, err, sizeof err), 0);
  check_json("file", docs, "[{\"kind\":\"Pod\",\"spec\":{\"gpus\":8}}]");
  json_decref(docs);
  assert_int_equal(gq_yaml_load_file(bad, &docs, err, sizeof err), GQ_EPARSE);
  assert_null(docs);
  snprintf(want, sizeof want, "%s:4:3: duplicate mapping key 'name'", bad);
  assert_string_equal(err, want);
  unlink(good);
  unlink(bad);
  free(good);
  free(bad);
}

static void test_load_file_io_errors(void **state)
{
  char err[512];
  json_t *docs = NULL;

  (void)state;
  assert_int_equal(
      gq_yaml_load_file("/nonexistent/gq/x.yaml", &docs, err, sizeof err),
      GQ_EIO);
  assert_null(docs);
  assert_string_equal(err, "cannot open '/nonexistent/gq/x.yaml': "
                           "No such file or directory");
  assert_int_equal(gq_yaml_load_file("/tmp", &docs, err, sizeof err), GQ_EIO);
  assert_string_equal(err, "cannot read '/tmp': Is a directory");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scalars),
      cmocka_unit_test(test_documents),
      cmocka_unit_test(test_aliases_and_merges),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_alias_shares_value),
      cmocka_unit_test(test_depth_limit),
      cmocka_unit_test(test_depth_limit_block),
      cmocka_unit_test(test_depth_limit_through_alias),
      cmocka_unit_test(test_alias_bomb),
      cmocka_unit_test(test_alias_count_limit),
      cmocka_unit_test(test_size_limit),
      cmocka_unit_test(test_arguments),
      cmocka_unit_test(test_load_file),
      cmocka_unit_test(test_load_file_io_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
