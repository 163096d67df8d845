/* Tests for api/selector: label selector strings (every operator, blank
 * handling, every parser error and validation message), metav1
 * LabelSelector JSON as PodDisruptionBudgets use it (including the
 * absent-versus-empty distinction), and field selectors with their escapes.
 * Expected messages are apimachinery's (labels/selector.go,
 * fields/selector.go, util/validation), see api/selector.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api/selector.h"
#include "base/err.h"

#define ERRLEN 2048

/* Labels given as JSON text; NULL means "no labels object at all". */
static json_t *labels_from(const char *text)
{
  json_t *v;

  if (!text)
    return NULL;
  v = json_loads(text, 0, NULL);
  if (!v)
    fail_msg("bad labels fixture %s", text);
  return v;
}

/* ---- label selector strings: matching ----------------------------------- */

struct lmatch_case {
  const char *sel;
  const char *labels;
  int want_match;
};

static const struct lmatch_case lmatch_cases[] = {
    /* empty selectors match everything, even objects without labels */
    {"", "{}", 1},
    {"", NULL, 1},
    {" \t\r\n ", "{\"a\": \"b\"}", 1},
    /* = and == */
    {"app=llm", "{\"app\": \"llm\"}", 1},
    {"app=llm", "{\"app\": \"web\"}", 0},
    {"app=llm", "{}", 0},
    {"app=llm", NULL, 0},
    {"app==llm", "{\"app\": \"llm\"}", 1},
    {"app==llm", "{\"app\": \"llmx\"}", 0},
    {"app=", "{\"app\": \"\"}", 1},
    {"app=", "{}", 0},
    /* != matches when absent */
    {"app!=llm", "{\"app\": \"llm\"}", 0},
    {"app!=llm", "{\"app\": \"web\"}", 1},
    {"app!=llm", "{}", 1},
    {"app!=llm", NULL, 1},
    /* in / notin */
    {"app in (llm,web)", "{\"app\": \"web\"}", 1},
    {"app in (llm,web)", "{\"app\": \"db\"}", 0},
    {"app in (llm,web)", "{}", 0},
    {"app notin (llm,web)", "{\"app\": \"db\"}", 1},
    {"app notin (llm,web)", "{\"app\": \"llm\"}", 0},
    {"app notin (llm,web)", "{}", 1},
    {"app in ()", "{\"app\": \"\"}", 1},
    {"app in ()", "{\"app\": \"x\"}", 0},
    {"app in (,x)", "{\"app\": \"\"}", 1},
    {"app in (x,)", "{\"app\": \"\"}", 1},
    {"app in (x,,y)", "{\"app\": \"\"}", 1},
    {"app in (x,,y)", "{\"app\": \"y\"}", 1},
    {"app in (x)", "{\"app\": \"\"}", 0},
    /* exists / does not exist */
    {"app", "{\"app\": \"\"}", 1},
    {"app", "{\"other\": \"x\"}", 0},
    {"app", NULL, 0},
    {"!app", "{}", 1},
    {"!app", NULL, 1},
    {"!app", "{\"app\": \"x\"}", 0},
    {"! app", "{\"app\": \"x\"}", 0},
    /* gt / lt compare as int64; unparsable label values never match */
    {"gpus>3", "{\"gpus\": \"4\"}", 1},
    {"gpus>3", "{\"gpus\": \"3\"}", 0},
    {"gpus>3", "{\"gpus\": \"four\"}", 0},
    {"gpus>3", "{}", 0},
    {"gpus>007", "{\"gpus\": \"8\"}", 1},
    {"gpus<3", "{\"gpus\": \"2\"}", 1},
    {"gpus<3", "{\"gpus\": \"3\"}", 0},
    {"gpus<3", "{\"gpus\": \"-5\"}", 1},
    {"gpus<3", "{\"gpus\": \"+2\"}", 1},
    {"gpus<3", "{\"gpus\": \"\"}", 0},
    {"gpus>0", "{\"gpus\": \"9223372036854775807\"}", 1},
    {"gpus>0", "{\"gpus\": \"9223372036854775808\"}", 0},
    {"gpus<0", "{\"gpus\": \"-9223372036854775808\"}", 1},
    {"gpus>9223372036854775806", "{\"gpus\": \"9223372036854775807\"}", 1},
    /* "in" and "notin" are plain words outside the operator position */
    {"in=in", "{\"in\": \"in\"}", 1},
    {"notin", "{\"notin\": \"x\"}", 1},
    {"x in (in,notin)", "{\"x\": \"notin\"}", 1},
    {"x notin (in)", "{\"x\": \"in\"}", 0},
    /* several requirements, all must hold; blanks anywhere */
    {"a=1,b!=2,c in (3),!d", "{\"a\": \"1\", \"b\": \"9\", \"c\": \"3\"}", 1},
    {"a=1,b!=2,c in (3),!d", "{\"a\": \"1\", \"c\": \"3\", \"d\": \"\"}", 0},
    {" a = 1 ,\tb\n!=\r2 , c  in  ( 3 , 4 ) ", "{\"a\": \"1\", \"c\": \"4\"}",
     1},
    {"a=1,a=2", "{\"a\": \"1\"}", 0},
    /* prefixed keys and odd but valid names */
    {"example.com/app=x", "{\"example.com/app\": \"x\"}", 1},
    {"example.com/app=x", "{\"app\": \"x\"}", 0},
    {"A_b.c-D=V_1.x-Y", "{\"A_b.c-D\": \"V_1.x-Y\"}", 1},
    /* non-string label values count as absent */
    {"app", "{\"app\": 5}", 0},
    {"!app", "{\"app\": null}", 1},
    {"app", "[\"app\"]", 0},
};

static void test_labelsel_match_table(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < sizeof(lmatch_cases) / sizeof(lmatch_cases[0]); i++) {
    const struct lmatch_case *c = &lmatch_cases[i];
    struct gq_labelsel *s = NULL;
    char err[ERRLEN];
    json_t *labels = labels_from(c->labels);
    int rc = gq_labelsel_parse(c->sel, &s, err, sizeof(err));

    if (rc != 0)
      fail_msg("case %zu '%s': parse failed: %s", i, c->sel, err);
    if (gq_labelsel_match(s, labels) != c->want_match)
      fail_msg("case %zu '%s' on %s: want match %d", i, c->sel,
               c->labels ? c->labels : "NULL", c->want_match);
    gq_labelsel_free(s);
    json_decref(labels);
  }
}

/* ---- label selector strings: errors ------------------------------------- */

#define QNAME_REGEX_MSG                                                       \
  "must consist of alphanumeric characters, '-', '_' or '.', and must "      \
  "start and end with an alphanumeric character (e.g. 'MyName',  or "        \
  "'my.name',  or '123-abc', regex used for validation is "                  \
  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
#define VALUE_REGEX_MSG                                                       \
  "a valid label must be an empty string or consist of alphanumeric "        \
  "characters, '-', '_' or '.', and must start and end with an "             \
  "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "    \
  "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?"             \
  "[A-Za-z0-9])?')"
#define GT_MSG "for 'Gt', 'Lt' operators, the value must be an integer"
#define URP "unable to parse requirement: "

struct lerr_case {
  const char *sel;
  const char *want_err; /* the whole message */
};

static const struct lerr_case lerr_cases[] = {
    /* top-level structure */
    {"=x", "found '=', expected: !, identifier, or 'end of string'"},
    {"!=x", "found '!=', expected: !, identifier, or 'end of string'"},
    {"(a)", "found '(', expected: !, identifier, or 'end of string'"},
    {"a=b,", "found '', expected: identifier after ','"},
    {"a=b,,c", "found ',', expected: identifier after ','"},
    {"a=b c", "found 'c', expected: ',' or 'end of string'"},
    {"a=b)", "found ')', expected: ',' or 'end of string'"},
    {"!a=b", "found '=', expected: ',' or 'end of string'"},
    {"a in (b)c", "found 'c', expected: ',' or 'end of string'"},
    /* inside a requirement */
    {"!", URP "found '', expected: identifier"},
    {"!!a", URP "found '!', expected: identifier"},
    {"a b", URP "found 'b', expected: in, notin, =, ==, !=, gt, lt"},
    {"a (b)", URP "found '(', expected: in, notin, =, ==, !=, gt, lt"},
    {"a in b", URP "found 'b' expected: '('"},
    {"a in", URP "found '' expected: '('"},
    {"a in (b", URP "found '', expected: ',' or ')'"},
    {"a in (b c)", URP "found 'c', expected: ',' or ')'"},
    {"a in (=)", URP "found '=', expected: ',', ')' or identifier"},
    {"a in (", URP "found '', expected: ',', ')' or identifier"},
    {"a in (b,=)", URP "found '=', expected: ',', or identifier"},
    {"a in (b,", URP "found '', expected: ',', or identifier"},
    {"a=(b)", URP "found '(', expected: identifier"},
    {"a==!b", URP "found '!', expected: identifier"},
    /* keys: the "<nil>" path is what the apiserver really prints */
    {"-a", URP "<nil>: Invalid value: \"-a\": name part " QNAME_REGEX_MSG},
    {"a-=b", URP "<nil>: Invalid value: \"a-\": name part " QNAME_REGEX_MSG},
    {"a/b/c", URP "<nil>: Invalid value: \"a/b/c\": a qualified name "
              QNAME_REGEX_MSG " with an optional DNS subdomain prefix and "
              "'/' (e.g. 'example.com/MyName')"},
    {"/a", URP "<nil>: Invalid value: \"/a\": prefix part must be non-empty"},
    {"a/", URP "<nil>: Invalid value: \"a/\": name part must be non-empty; "
           "name part " QNAME_REGEX_MSG},
    {"Example.com/a",
     URP "<nil>: Invalid value: \"Example.com/a\": prefix part a lowercase "
         "RFC 1123 subdomain must consist of lower case alphanumeric "
         "characters, '-' or '.', and must start and end with an "
         "alphanumeric character (e.g. 'example.com', regex used for "
         "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]"
         "([-a-z0-9]*[a-z0-9])?)*')"},
    {"a\"b", URP "<nil>: Invalid value: \"a\\\"b\": name part "
             QNAME_REGEX_MSG},
    /* values */
    {"a=-b", URP "values[0][a]: Invalid value: \"-b\": " VALUE_REGEX_MSG},
    {"a!=b.", URP "values[0][a]: Invalid value: \"b.\": " VALUE_REGEX_MSG},
    {"a in (b,-c)", URP "values[0][a]: Invalid value: \"-c\": "
                    VALUE_REGEX_MSG},
    /* several errors in one requirement are bracketed; values sorted */
    {"a in (b,-y,-x)", URP "[values[0][a]: Invalid value: \"-x\": "
                       VALUE_REGEX_MSG ", values[1][a]: Invalid value: "
                       "\"-y\": " VALUE_REGEX_MSG "]"},
    /* gt / lt need an int64 */
    {"a>b", URP "values[0]: Invalid value: \"b\": " GT_MSG},
    {"a<", URP "values[0]: Invalid value: \"\": " GT_MSG},
    {"a>1.5", URP "values[0]: Invalid value: \"1.5\": " GT_MSG},
    {"a>9223372036854775808",
     URP "values[0]: Invalid value: \"9223372036854775808\": " GT_MSG},
    {"a>-1", URP "values[0][a]: Invalid value: \"-1\": " VALUE_REGEX_MSG},
    {"a>x_", URP "[values[0]: Invalid value: \"x_\": " GT_MSG
             ", values[0][a]: Invalid value: \"x_\": " VALUE_REGEX_MSG "]"},
};

static void test_labelsel_parse_errors(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < sizeof(lerr_cases) / sizeof(lerr_cases[0]); i++) {
    const struct lerr_case *c = &lerr_cases[i];
    struct gq_labelsel *s = (struct gq_labelsel *)&s; /* poison */
    char err[ERRLEN];
    int rc = gq_labelsel_parse(c->sel, &s, err, sizeof(err));

    if (rc != GQ_EINVAL)
      fail_msg("case %zu '%s': rc %d, want GQ_EINVAL", i, c->sel, rc);
    assert_null(s);
    if (strcmp(err, c->want_err) != 0)
      fail_msg("case %zu '%s':\n got '%s'\nwant '%s'", i, c->sel, err,
               c->want_err);
  }
}

/* Length limits: 63 for names and values, 253 for prefixes. */
static void test_labelsel_lengths(void **state)
{
  char name[80], prefix[300], sel[512], err[ERRLEN];
  struct gq_labelsel *s = NULL;

  (void)state;
  memset(name, 'n', 63);
  name[63] = '\0';
  snprintf(sel, sizeof(sel), "%s=%s", name, name);
  assert_int_equal(gq_labelsel_parse(sel, &s, err, sizeof(err)), 0);
  gq_labelsel_free(s);

  snprintf(sel, sizeof(sel), "%sn", name);
  assert_int_equal(gq_labelsel_parse(sel, &s, err, sizeof(err)), GQ_EINVAL);
  assert_non_null(strstr(err, "name part must be no more than 63 "
                              "characters"));

  snprintf(sel, sizeof(sel), "a=%sn", name);
  assert_int_equal(gq_labelsel_parse(sel, &s, err, sizeof(err)), GQ_EINVAL);
  assert_non_null(strstr(err, "values[0][a]: Invalid value: \"nnn"));
  assert_non_null(strstr(err, "\": must be no more than 63 characters"));

  memset(prefix, 'p', 253);
  prefix[253] = '\0';
  snprintf(sel, sizeof(sel), "%s/k", prefix);
  assert_int_equal(gq_labelsel_parse(sel, &s, err, sizeof(err)), 0);
  gq_labelsel_free(s);
  snprintf(sel, sizeof(sel), "p%s/k", prefix);
  assert_int_equal(gq_labelsel_parse(sel, &s, err, sizeof(err)), GQ_EINVAL);
  assert_non_null(strstr(err, "prefix part must be no more than 253 "
                              "characters"));
}

static void test_labelsel_bad_args(void **state)
{
  struct gq_labelsel *s = NULL;
  char err[64];

  (void)state;
  assert_int_equal(gq_labelsel_parse(NULL, &s, err, sizeof(err)), GQ_EINVAL);
  assert_null(s);
  assert_int_equal(gq_labelsel_parse("a", NULL, err, sizeof(err)), GQ_EINVAL);
  /* err may be NULL with errlen 0; a short err is truncated, not overrun. */
  assert_int_equal(gq_labelsel_parse("=", &s, NULL, 0), GQ_EINVAL);
  assert_int_equal(gq_labelsel_parse("=", &s, err, 6), GQ_EINVAL);
  assert_string_equal(err, "found");
  assert_int_equal(gq_labelsel_parse("-a", &s, err, 10), GQ_EINVAL);
  assert_string_equal(err, "unable to");
  gq_labelsel_free(NULL);
}

/* ---- metav1.LabelSelector JSON ------------------------------------------ */

struct ljson_case {
  const char *sel;    /* JSON text; NULL passes a NULL pointer */
  const char *labels; /* JSON text; NULL passes no labels */
  int want_match;
};

static const struct ljson_case ljson_cases[] = {
    /* PDB semantics: no selector matches nothing, an empty one everything */
    {NULL, "{\"app\": \"x\"}", 0},
    {NULL, NULL, 0},
    {"null", "{\"app\": \"x\"}", 0},
    {"{}", "{\"app\": \"x\"}", 1},
    {"{}", NULL, 1},
    {"{\"matchLabels\": {}}", "{}", 1},
    {"{\"matchLabels\": null, \"matchExpressions\": []}", "{}", 1},
    {"{\"unknownField\": 1}", "{}", 1},
    /* matchLabels */
    {"{\"matchLabels\": {\"app\": \"llm\"}}", "{\"app\": \"llm\"}", 1},
    {"{\"matchLabels\": {\"app\": \"llm\"}}", "{\"app\": \"web\"}", 0},
    {"{\"matchLabels\": {\"app\": \"llm\"}}", NULL, 0},
    {"{\"matchLabels\": {\"app\": \"llm\", \"tier\": \"gpu\"}}",
     "{\"app\": \"llm\"}", 0},
    {"{\"matchLabels\": {\"app\": \"llm\", \"tier\": \"gpu\"}}",
     "{\"app\": \"llm\", \"tier\": \"gpu\", \"x\": \"y\"}", 1},
    {"{\"matchLabels\": {\"app\": \"\"}}", "{\"app\": \"\"}", 1},
    /* matchExpressions, each operator */
    {"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\","
     " \"values\": [\"llm\", \"web\"]}]}",
     "{\"app\": \"web\"}", 1},
    {"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"In\","
     " \"values\": [\"llm\", \"web\"]}]}",
     "{}", 0},
    {"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"NotIn\","
     " \"values\": [\"llm\"]}]}",
     "{\"app\": \"web\"}", 1},
    {"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"NotIn\","
     " \"values\": [\"llm\"]}]}",
     "{}", 1},
    {"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"NotIn\","
     " \"values\": [\"llm\"]}]}",
     "{\"app\": \"llm\"}", 0},
    {"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Exists\"}]}",
     "{\"app\": \"\"}", 1},
    {"{\"matchExpressions\": [{\"key\": \"app\", \"operator\": \"Exists\","
     " \"values\": []}]}",
     "{}", 0},
    {"{\"matchExpressions\": [{\"key\": \"app\","
     " \"operator\": \"DoesNotExist\"}]}",
     "{}", 1},
    {"{\"matchExpressions\": [{\"key\": \"app\","
     " \"operator\": \"DoesNotExist\"}]}",
     "{\"app\": \"x\"}", 0},
    /* both parts together */
    {"{\"matchLabels\": {\"team\": \"nlp\"}, \"matchExpressions\": ["
     "{\"key\": \"gpu\", \"operator\": \"Exists\"},"
     "{\"key\": \"tier\", \"operator\": \"NotIn\", \"values\": [\"dev\"]}]}",
     "{\"team\": \"nlp\", \"gpu\": \"a100\", \"tier\": \"prod\"}", 1},
    {"{\"matchLabels\": {\"team\": \"nlp\"}, \"matchExpressions\": ["
     "{\"key\": \"gpu\", \"operator\": \"Exists\"},"
     "{\"key\": \"tier\", \"operator\": \"NotIn\", \"values\": [\"dev\"]}]}",
     "{\"team\": \"nlp\", \"gpu\": \"a100\", \"tier\": \"dev\"}", 0},
    {"{\"matchLabels\": {\"team\": \"nlp\"}, \"matchExpressions\": ["
     "{\"key\": \"gpu\", \"operator\": \"Exists\"}]}",
     "{\"team\": \"nlp\"}", 0},
};

static void test_labelsel_json_match(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < sizeof(ljson_cases) / sizeof(ljson_cases[0]); i++) {
    const struct ljson_case *c = &ljson_cases[i];
    json_t *sel = c->sel ? json_loads(c->sel, JSON_DECODE_ANY, NULL) : NULL;
    json_t *labels = labels_from(c->labels);
    struct gq_labelsel *s = NULL;
    char err[ERRLEN];

    if (c->sel && !sel)
      fail_msg("case %zu: bad fixture %s", i, c->sel);
    if (gq_labelsel_from_json(sel, &s, err, sizeof(err)) != 0)
      fail_msg("case %zu: from_json failed: %s", i, err);
    if (gq_labelsel_match(s, labels) != c->want_match)
      fail_msg("case %zu %s on %s: want match %d", i,
               c->sel ? c->sel : "NULL", c->labels ? c->labels : "NULL",
               c->want_match);
    gq_labelsel_free(s);
    json_decref(sel);
    json_decref(labels);
  }
}

struct ljson_err_case {
  const char *sel;
  const char *want_err; /* the whole message */
};

static const struct ljson_err_case ljson_err_cases[] = {
    {"[]", "selector: must be an object"},
    {"\"app=x\"", "selector: must be an object"},
    {"{\"matchLabels\": []}", "matchLabels: must be an object"},
    {"{\"matchLabels\": {\"a\": 1}}", "matchLabels[a]: must be a string"},
    {"{\"matchExpressions\": {}}", "matchExpressions: must be an array"},
    {"{\"matchExpressions\": [1]}", "matchExpressions[0]: must be an object"},
    {"{\"matchExpressions\": [{\"key\": 5, \"operator\": \"Exists\"}]}",
     "matchExpressions[0].key: must be a string"},
    {"{\"matchExpressions\": [{\"key\": \"a\", \"operator\": true}]}",
     "matchExpressions[0].operator: must be a string"},
    {"{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\","
     " \"values\": \"x\"}]}",
     "matchExpressions[0].values: must be an array of strings"},
    {"{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\","
     " \"values\": [\"x\", 2]}]}",
     "matchExpressions[0].values[1]: must be a string"},
    /* operators are case-sensitive; a missing one is "" as in Go */
    {"{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Foo\"}]}",
     "\"Foo\" is not a valid label selector operator"},
    {"{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"in\","
     " \"values\": [\"x\"]}]}",
     "\"in\" is not a valid label selector operator"},
    {"{\"matchExpressions\": [{\"key\": \"a\"}]}",
     "\"\" is not a valid label selector operator"},
    /* NewRequirement's checks */
    {"{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"In\"}]}",
     "values: Invalid value: []string(nil): for 'in', 'notin' operators, "
     "values set can't be empty"},
    {"{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"NotIn\","
     " \"values\": []}]}",
     "values: Invalid value: []string(nil): for 'in', 'notin' operators, "
     "values set can't be empty"},
    {"{\"matchExpressions\": [{\"key\": \"a\", \"operator\": \"Exists\","
     " \"values\": [\"x\", \"y\"]}]}",
     "values: Invalid value: []string{\"x\", \"y\"}: values set must be "
     "empty for exists and does not exist"},
    {"{\"matchExpressions\": [{\"key\": \"a\","
     " \"operator\": \"DoesNotExist\", \"values\": [\"\"]}]}",
     "values: Invalid value: []string{\"\"}: values set must be empty for "
     "exists and does not exist"},
    {"{\"matchExpressions\": [{\"operator\": \"Exists\"}]}",
     "key: Invalid value: \"\": name part must be non-empty; name part "
     QNAME_REGEX_MSG},
    {"{\"matchLabels\": {\"-a\": \"x\"}}",
     "key: Invalid value: \"-a\": name part " QNAME_REGEX_MSG},
    {"{\"matchLabels\": {\"a\": \"x y\"}}",
     "values[0][a]: Invalid value: \"x y\": " VALUE_REGEX_MSG},
    {"{\"matchLabels\": {\"-a\": \"-x\"}}",
     "[key: Invalid value: \"-a\": name part " QNAME_REGEX_MSG
     ", values[0][-a]: Invalid value: \"-x\": " VALUE_REGEX_MSG "]"},
    /* a later bad expression fails the whole selector */
    {"{\"matchLabels\": {\"a\": \"x\"}, \"matchExpressions\": ["
     "{\"key\": \"b\", \"operator\": \"Exists\"},"
     "{\"key\": \"c\", \"operator\": \"Gt\", \"values\": [\"1\"]}]}",
     "\"Gt\" is not a valid label selector operator"},
};

static void test_labelsel_json_errors(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < sizeof(ljson_err_cases) / sizeof(ljson_err_cases[0]);
       i++) {
    const struct ljson_err_case *c = &ljson_err_cases[i];
    json_t *sel = json_loads(c->sel, JSON_DECODE_ANY, NULL);
    struct gq_labelsel *s = (struct gq_labelsel *)&s; /* poison */
    char err[ERRLEN];
    int rc;

    if (!sel)
      fail_msg("case %zu: bad fixture %s", i, c->sel);
    rc = gq_labelsel_from_json(sel, &s, err, sizeof(err));
    if (rc != GQ_EINVAL)
      fail_msg("case %zu: rc %d, want GQ_EINVAL", i, rc);
    assert_null(s);
    if (strcmp(err, c->want_err) != 0)
      fail_msg("case %zu %s:\n got '%s'\nwant '%s'", i, c->sel, err,
               c->want_err);
    json_decref(sel);
  }
  assert_int_equal(gq_labelsel_from_json(NULL, NULL, NULL, 0), GQ_EINVAL);
}

/* ---- field selectors ---------------------------------------------------- */

/* The getter: fields of a flat JSON object of strings; absent is "", and
 * the field "nullfield" answers NULL to check that NULL reads as "". */
static const char *get_field(const char *field, void *arg)
{
  const json_t *v = json_object_get((const json_t *)arg, field);

  if (strcmp(field, "nullfield") == 0)
    return NULL;
  return json_is_string(v) ? json_string_value(v) : "";
}

struct fmatch_case {
  const char *sel;
  const char *want_fields; /* field names joined by '|' */
  const char *object;      /* flat JSON object of strings */
  int want_match;
};

static const struct fmatch_case fmatch_cases[] = {
    {"", "", "{}", 1},
    {",", "", "{}", 1},
    {"metadata.name=foo", "metadata.name", "{\"metadata.name\": \"foo\"}", 1},
    {"metadata.name=foo", "metadata.name", "{\"metadata.name\": \"bar\"}", 0},
    {"metadata.name=foo", "metadata.name", "{}", 0},
    {"metadata.name==foo", "metadata.name", "{\"metadata.name\": \"foo\"}",
     1},
    {"metadata.name!=foo", "metadata.name", "{\"metadata.name\": \"foo\"}",
     0},
    {"metadata.name!=foo", "metadata.name", "{\"metadata.name\": \"bar\"}",
     1},
    {"metadata.name!=foo", "metadata.name", "{}", 1},
    /* empty values: unscheduled pods are spec.nodeName= */
    {"spec.nodeName=", "spec.nodeName", "{}", 1},
    {"spec.nodeName=", "spec.nodeName", "{\"spec.nodeName\": \"n1\"}", 0},
    {"spec.nodeName!=", "spec.nodeName", "{\"spec.nodeName\": \"n1\"}", 1},
    {"spec.nodeName!=", "spec.nodeName", "{}", 0},
    {"nullfield=", "nullfield", "{}", 1},
    /* several terms, all must hold; empty terms are skipped */
    {"a=1,b!=2", "a|b", "{\"a\": \"1\", \"b\": \"3\"}", 1},
    {"a=1,b!=2", "a|b", "{\"a\": \"1\", \"b\": \"2\"}", 0},
    {",a=1,,b=2,", "a|b", "{\"a\": \"1\", \"b\": \"2\"}", 1},
    /* escapes in values */
    {"a=x\\,y", "a", "{\"a\": \"x,y\"}", 1},
    {"a=x\\=y", "a", "{\"a\": \"x=y\"}", 1},
    {"a=x\\\\y", "a", "{\"a\": \"x\\\\y\"}", 1},
    {"a=x\\\\,b=2", "a|b", "{\"a\": \"x\\\\\", \"b\": \"2\"}", 1},
    /* the first operator splits; "!" and leading "=" are value bytes */
    {"a==b", "a", "{\"a\": \"b\"}", 1},
    {"a=!b", "a", "{\"a\": \"!b\"}", 1},
    {"=x", "", "{\"\": \"x\"}", 1},
    /* blanks are not trimmed */
    {"a = b", "a ", "{\"a \": \" b\"}", 1},
    {"a = b", "a ", "{\"a\": \"b\"}", 0},
};

static void check_fields(size_t i, const struct gq_fieldsel *s,
                         const char *want)
{
  char got[256] = "";
  size_t k, len = 0;

  for (k = 0; k < gq_fieldsel_count(s); k++)
    len += (size_t)snprintf(got + len, sizeof(got) - len, "%s%s",
                            k > 0 ? "|" : "", gq_fieldsel_field(s, k));
  if (strcmp(got, want) != 0)
    fail_msg("case %zu: fields '%s', want '%s'", i, got, want);
  assert_null(gq_fieldsel_field(s, gq_fieldsel_count(s)));
}

static void test_fieldsel_match_table(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < sizeof(fmatch_cases) / sizeof(fmatch_cases[0]); i++) {
    const struct fmatch_case *c = &fmatch_cases[i];
    json_t *obj = labels_from(c->object);
    struct gq_fieldsel *s = NULL;
    char err[ERRLEN];

    if (gq_fieldsel_parse(c->sel, &s, err, sizeof(err)) != 0)
      fail_msg("case %zu '%s': parse failed: %s", i, c->sel, err);
    check_fields(i, s, c->want_fields);
    if (gq_fieldsel_match(s, get_field, obj) != c->want_match)
      fail_msg("case %zu '%s' on %s: want match %d", i, c->sel, c->object,
               c->want_match);
    gq_fieldsel_free(s);
    json_decref(obj);
  }
}

struct ferr_case {
  const char *sel;
  const char *want_err;
};

static const struct ferr_case ferr_cases[] = {
    {"a", "invalid selector: 'a'; can't understand 'a'"},
    {"a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"},
    {"a=b,!c", "invalid selector: 'a=b,!c'; can't understand '!c'"},
    {"a!b", "invalid selector: 'a!b'; can't understand 'a!b'"},
    {"a=b=c", "invalid field selector: unescaped character in value: '='"},
    {"a!==b", "invalid field selector: unescaped character in value: '='"},
    {"a=x\\y", "invalid field selector: invalid escape sequence: \\y"},
    {"a=x\\", "invalid field selector: invalid escape sequence: \\"},
    {"a=x\\n", "invalid field selector: invalid escape sequence: \\n"},
};

static void test_fieldsel_errors(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < sizeof(ferr_cases) / sizeof(ferr_cases[0]); i++) {
    const struct ferr_case *c = &ferr_cases[i];
    struct gq_fieldsel *s = (struct gq_fieldsel *)&s; /* poison */
    char err[ERRLEN];
    int rc = gq_fieldsel_parse(c->sel, &s, err, sizeof(err));

    if (rc != GQ_EINVAL)
      fail_msg("case %zu '%s': rc %d, want GQ_EINVAL", i, c->sel, rc);
    assert_null(s);
    if (strcmp(err, c->want_err) != 0)
      fail_msg("case %zu '%s':\n got '%s'\nwant '%s'", i, c->sel, err,
               c->want_err);
  }
}

static void test_fieldsel_bad_args(void **state)
{
  struct gq_fieldsel *s = NULL;
  char err[64];

  (void)state;
  assert_int_equal(gq_fieldsel_parse(NULL, &s, err, sizeof(err)), GQ_EINVAL);
  assert_null(s);
  assert_int_equal(gq_fieldsel_parse("a=b", NULL, err, sizeof(err)),
                   GQ_EINVAL);
  assert_int_equal(gq_fieldsel_parse("a", &s, NULL, 0), GQ_EINVAL);
  assert_int_equal(gq_fieldsel_count(NULL), 0);
  assert_null(gq_fieldsel_field(NULL, 0));
  gq_fieldsel_free(NULL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_labelsel_match_table),
      cmocka_unit_test(test_labelsel_parse_errors),
      cmocka_unit_test(test_labelsel_lengths),
      cmocka_unit_test(test_labelsel_bad_args),
      cmocka_unit_test(test_labelsel_json_match),
      cmocka_unit_test(test_labelsel_json_errors),
      cmocka_unit_test(test_fieldsel_match_table),
      cmocka_unit_test(test_fieldsel_errors),
      cmocka_unit_test(test_fieldsel_bad_args),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
