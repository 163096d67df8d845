/* api/yaml.c - YAML to jansson with libyaml's event parser.
 *
 * The loader pulls events one at a time and builds values by recursive
 * descent: load_node() dispatches on the event, collections recurse into
 * load_node() for their children. Every function that can fail returns a
 * GQ_E* code after releasing what it owns, and the only message is written
 * by fail() at the point of failure, so callers just pass the code up.
 *
 * jansson reports allocation failure by returning NULL or -1, which is not
 * checked call by call here: STYLE ("Ownership" rule 7) makes running out of
 * memory fatal, so the program is expected to route jansson through the
 * aborting allocators (json_set_alloc_funcs(gq_xmalloc, free)) at startup.
 *
 * libyaml's document API (yaml_parser_load) was the other option; it was
 * rejected because it resolves aliases into a node graph we would walk a
 * second time, and it gives no place to enforce the depth and alias limits
 * while parsing.
 */
#include "api/yaml.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "base/alloc.h"
#include "base/err.h"

/* libyaml expands "!!x" to this prefix (YAML 1.2.2, section 6.8.2.2). */
#define CORE_TAG_PREFIX "tag:yaml.org,2002:"
/* Longest piece of a scalar or key quoted in an error message. */
#define MSG_CLIP 64

struct loader {
  yaml_parser_t parser;
  const char *name; /* file name for messages, or NULL */
  const char *text; /* the input, to place reader errors */
  size_t len;
  json_t *anchors;   /* anchor name -> value, current document */
  json_t *meta;      /* anchor name -> [nodes it stands for, height] */
  uint64_t nodes;    /* nodes built so far, aliases at full size */
  uint64_t expanded; /* nodes reached through aliases, whole call */
  int depth;         /* collections currently open */
  int high;          /* deepest depth reached in the current node */
  char *err;
  size_t errlen;
};

static int load_node(struct loader *ld, yaml_event_t *ev, json_t **out);

static int clip(size_t n)
{
  return n > MSG_CLIP ? MSG_CLIP : (int)n;
}

/* Writes "name:line:col: msg" (the parts that are known) into ld->err and
 * returns 'code'. 'm' may be NULL when there is no position. */
__attribute__((format(printf, 4, 5))) static int
fail(struct loader *ld, int code, const yaml_mark_t *m, const char *fmt, ...)
{
  char msg[512], pos[64] = "";
  va_list ap;

  if (!ld->err || ld->errlen == 0)
    return code;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (m)
    snprintf(pos, sizeof pos, "%zu:%zu: ", (size_t)m->line + 1,
             (size_t)m->column + 1);
  if (ld->name)
    snprintf(ld->err, ld->errlen, "%s:%s%s", ld->name, m ? pos : " ", msg);
  else
    snprintf(ld->err, ld->errlen, "%s%s", pos, msg);
  return code;
}

/* Turns a byte offset into a mark. libyaml's reader errors carry only an
 * offset; lines break at \n, \r\n or \r as in the scanner, and columns count
 * characters (UTF-8 lead bytes), matching libyaml's other marks. */
static yaml_mark_t mark_at(const struct loader *ld, size_t off)
{
  yaml_mark_t m = {off, 0, 0};
  size_t i;

  for (i = 0; i < off && i < ld->len; i++) {
    unsigned char c = (unsigned char)ld->text[i];

    if (c == '\n' ||
        (c == '\r' && (i + 1 >= ld->len || ld->text[i + 1] != '\n'))) {
      m.line++;
      m.column = 0;
    } else if ((c & 0xC0) != 0x80 && c != '\r') {
      m.column++;
    }
  }
  return m;
}

/* Converts libyaml's error state into a GQ_E* code and message. */
static int parser_error(struct loader *ld)
{
  const yaml_parser_t *p = &ld->parser;
  const char *problem = p->problem ? p->problem : "invalid yaml";
  yaml_mark_t m = p->problem_mark;

  if (p->error == YAML_MEMORY_ERROR)
    return fail(ld, GQ_ENOMEM, NULL, "out of memory while parsing yaml");
  if (p->error == YAML_READER_ERROR) {
    m = mark_at(ld, p->problem_offset);
    if (p->problem_value != -1)
      return fail(ld, GQ_EPARSE, &m, "%s (#x%X)", problem,
                  (unsigned)p->problem_value);
    return fail(ld, GQ_EPARSE, &m, "%s", problem);
  }
  if (p->context)
    return fail(ld, GQ_EPARSE, &m, "%s %s at %zu:%zu", problem, p->context,
                (size_t)p->context_mark.line + 1,
                (size_t)p->context_mark.column + 1);
  return fail(ld, GQ_EPARSE, &m, "%s", problem);
}

/* Pulls the next event into *ev; on failure *ev needs no delete. */
static int next_event(struct loader *ld, yaml_event_t *ev)
{
  if (yaml_parser_parse(&ld->parser, ev))
    return 0;
  return parser_error(ld);
}

/* --- Scalars: the YAML 1.2 core schema (spec 1.2.2, section 10.3.2) ---
 * The matchers return 1 and set *out on a match, 0 if the text does not
 * have the form, and -1 if it has the form but JSON cannot hold the value
 * (NaN, infinity, a float beyond a double). Their input is libyaml's scalar
 * value, which is NUL-terminated at n, so strtod() may read it; strtod()
 * only sees text already matched against the schema's pattern, and gpuq
 * never calls setlocale(), so the decimal point is always '.'. */

static int is_null(const char *s, size_t n)
{
  return n == 0 || !strcmp(s, "null") || !strcmp(s, "Null") ||
         !strcmp(s, "NULL") || !strcmp(s, "~");
}

static int match_null(const char *s, size_t n, json_t **out)
{
  if (!is_null(s, n))
    return 0;
  *out = json_null();
  return 1;
}

static int match_bool(const char *s, json_t **out)
{
  if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) {
    *out = json_true();
    return 1;
  }
  if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) {
    *out = json_false();
    return 1;
  }
  return 0;
}

static int set_real(double d, json_t **out)
{
  if (!isfinite(d))
    return -1;
  *out = json_real(d);
  return 1;
}

static int digit_value(char c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return 99;
}

/* "0o17" / "0x1F" without the prefix. Values above INT64_MAX become reals,
 * accumulated in a double alongside the exact value. */
static int match_radix(const char *s, size_t n, unsigned base, json_t **out)
{
  uint64_t u = 0;
  double d = 0;
  int over = 0;
  size_t i;

  for (i = 0; i < n; i++) {
    unsigned v = (unsigned)digit_value(s[i]);

    if (v >= base)
      return 0;
    d = d * base + v;
    over |= __builtin_mul_overflow(u, (uint64_t)base, &u);
    over |= __builtin_add_overflow(u, (uint64_t)v, &u);
  }
  if (!over && u <= INT64_MAX) {
    *out = json_integer((json_int_t)u);
    return 1;
  }
  return set_real(d, out);
}

/* [-+]?[0-9]+; out of int64 range it becomes a real, as in a JSON parser. */
static int match_decimal(const char *s, size_t n, json_t **out)
{
  size_t i = (n > 0 && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  int neg = s[0] == '-', over = 0;
  uint64_t u = 0;

  if (i == n)
    return 0;
  for (; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return 0;
    over |= __builtin_mul_overflow(u, (uint64_t)10, &u);
    over |= __builtin_add_overflow(u, (uint64_t)(s[i] - '0'), &u);
  }
  if (!over && !neg && u <= INT64_MAX)
    *out = json_integer((json_int_t)u);
  else if (!over && neg && u <= (uint64_t)INT64_MAX + 1)
    *out =
        json_integer(u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(json_int_t)u);
  else
    return set_real(strtod(s, NULL), out);
  return 1;
}

static int match_int(const char *s, size_t n, json_t **out)
{
  if (n > 2 && s[0] == '0' && s[1] == 'x')
    return match_radix(s + 2, n - 2, 16, out);
  if (n > 2 && s[0] == '0' && s[1] == 'o')
    return match_radix(s + 2, n - 2, 8, out);
  return match_decimal(s, n, out);
}

static size_t span_digits(const char *s, size_t n)
{
  size_t i = 0;

  while (i < n && s[i] >= '0' && s[i] <= '9')
    i++;
  return i;
}

/* [-+]?(\.inf|\.Inf|\.INF) and \.nan|\.NaN|\.NAN: valid YAML floats that
 * JSON cannot hold. */
static int is_inf_or_nan(const char *s)
{
  const char *t = (*s == '-' || *s == '+') ? s + 1 : s;

  return !strcmp(t, ".inf") || !strcmp(t, ".Inf") || !strcmp(t, ".INF") ||
         !strcmp(s, ".nan") || !strcmp(s, ".NaN") || !strcmp(s, ".NAN");
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static int match_float(const char *s, size_t n, json_t **out)
{
  size_t i = (n > 0 && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  size_t whole, frac = 0;
  int point = 0;

  if (is_inf_or_nan(s))
    return -1;
  whole = span_digits(s + i, n - i);
  i += whole;
  if (i < n && s[i] == '.') {
    point = 1;
    frac = span_digits(s + i + 1, n - i - 1);
    i += 1 + frac;
  }
  if (whole == 0 && (!point || frac == 0))
    return 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1 + (i + 1 < n && (s[i + 1] == '-' || s[i + 1] == '+'));
    size_t exp = span_digits(s + j, n - j);

    if (exp == 0)
      return 0;
    i = j + exp;
  }
  return i == n ? set_real(strtod(s, NULL), out) : 0;
}

static int make_string(struct loader *ld, const char *s, size_t n,
                       const yaml_mark_t *m, json_t **out)
{
  *out = json_stringn(s, n);
  if (!*out)
    return fail(ld, GQ_ENOMEM, m, "cannot allocate a string of %zu bytes", n);
  return 0;
}

static int unrepresentable(struct loader *ld, const char *s, size_t n,
                           const yaml_mark_t *m)
{
  return fail(ld, GQ_EPARSE, m, "cannot represent '%.*s' in JSON", clip(n), s);
}

static int resolve_plain(struct loader *ld, const char *s, size_t n,
                         const yaml_mark_t *m, json_t **out)
{
  int r;

  if ((r = match_null(s, n, out)) == 0 && (r = match_bool(s, out)) == 0 &&
      (r = match_int(s, n, out)) == 0)
    r = match_float(s, n, out);
  if (r < 0)
    return unrepresentable(ld, s, n, m);
  return r > 0 ? 0 : make_string(ld, s, n, m, out);
}

/* Returns the part after "tag:yaml.org,2002:" or NULL for other tags. */
static const char *core_tag(const char *tag)
{
  size_t k = sizeof CORE_TAG_PREFIX - 1;

  return strncmp(tag, CORE_TAG_PREFIX, k) == 0 ? tag + k : NULL;
}

/* A scalar with an explicit tag: the text must parse as the tag's type. */
static int resolve_tagged(struct loader *ld, const char *tag, const char *s,
                          size_t n, const yaml_mark_t *m, json_t **out)
{
  const char *t = core_tag(tag);
  int r;

  if (!t)
    return fail(ld, GQ_EPARSE, m, "unsupported tag '%s'", tag);
  if (!strcmp(t, "str"))
    return make_string(ld, s, n, m, out);
  if (memchr(s, '\0', n)) /* a quoted "\0"; the matchers use strcmp */
    r = 0;
  else if (!strcmp(t, "null"))
    r = match_null(s, n, out);
  else if (!strcmp(t, "bool"))
    r = match_bool(s, out);
  else if (!strcmp(t, "int"))
    r = match_int(s, n, out);
  else if (!strcmp(t, "float"))
    r = match_float(s, n, out);
  else if (!strcmp(t, "map") || !strcmp(t, "seq"))
    return fail(ld, GQ_EPARSE, m, "tag '!!%s' cannot apply to a scalar", t);
  else
    return fail(ld, GQ_EPARSE, m, "unsupported tag '!!%s'", t);
  if (r < 0)
    return unrepresentable(ld, s, n, m);
  if (r == 0)
    return fail(ld, GQ_EPARSE, m, "invalid !!%s value '%.*s'", t, clip(n), s);
  return 0;
}

static int load_scalar(struct loader *ld, yaml_event_t *ev, json_t **out)
{
  const char *s = (const char *)ev->data.scalar.value;
  const char *tag = (const char *)ev->data.scalar.tag;
  size_t n = ev->data.scalar.length;

  if (!tag && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
    return resolve_plain(ld, s, n, &ev->start_mark, out);
  if (!tag || !strcmp(tag, "!"))
    return make_string(ld, s, n, &ev->start_mark, out);
  return resolve_tagged(ld, tag, s, n, &ev->start_mark, out);
}

/* --- Anchors and aliases --- */

/* Records 'v' (borrowed) under 'name' with the number of nodes it stands
 * for and its height (levels of collections inside it); a later anchor of
 * the same name replaces it, as YAML 1.2.2 section 3.2.2.2 allows. */
static void remember(struct loader *ld, const char *name, json_t *v,
                     uint64_t weight, int height)
{
  json_object_set(ld->anchors, name, v);
  json_object_set_new(ld->meta, name,
                      json_pack("[Ii]", (json_int_t)weight, height));
}

/* An alias costs the nodes its anchor stands for, so nested aliases (each
 * level of a "billion laughs" multiplying the last) add up to the full
 * expansion even though the values are shared, not copied. Its height
 * counts toward the depth limit too: an alias to a deep value, placed deep,
 * must not build a tree deeper than the input could. */
static int load_alias(struct loader *ld, yaml_event_t *ev, json_t **out)
{
  const char *name = (const char *)ev->data.alias.anchor;
  json_t *v = json_object_get(ld->anchors, name);
  json_t *meta = json_object_get(ld->meta, name);
  int reach;

  if (!v)
    return fail(ld, GQ_EPARSE, &ev->start_mark, "undefined alias '%s'", name);
  ld->nodes += (uint64_t)json_integer_value(json_array_get(meta, 0));
  ld->expanded += (uint64_t)json_integer_value(json_array_get(meta, 0));
  if (ld->expanded > GQ_YAML_MAX_ALIAS_NODES)
    return fail(ld, GQ_ETOOBIG, &ev->start_mark,
                "aliases expand to more than %d nodes",
                GQ_YAML_MAX_ALIAS_NODES);
  reach = ld->depth + (int)json_integer_value(json_array_get(meta, 1));
  if (reach > GQ_YAML_MAX_DEPTH)
    return fail(ld, GQ_ETOOBIG, &ev->start_mark,
                "alias '%s' nests deeper than %d levels", name,
                GQ_YAML_MAX_DEPTH);
  if (reach > ld->high)
    ld->high = reach;
  *out = json_incref(v);
  return 0;
}

/* --- Collections --- */

/* Checks a collection's tag: none, "!" or the matching core tag. */
static int check_collection_tag(struct loader *ld, const yaml_char_t *ytag,
                                const char *want, const yaml_mark_t *m)
{
  const char *tag = (const char *)ytag, *t;

  if (!tag || !strcmp(tag, "!"))
    return 0;
  if (!(t = core_tag(tag)))
    return fail(ld, GQ_EPARSE, m, "unsupported tag '%s'", tag);
  if (strcmp(t, want) != 0)
    return fail(ld, GQ_EPARSE, m, "tag '!!%s' cannot apply to a %s", t,
                !strcmp(want, "map") ? "mapping" : "sequence");
  return 0;
}

static int enter(struct loader *ld, const yaml_mark_t *m)
{
  if (ld->depth >= GQ_YAML_MAX_DEPTH)
    return fail(ld, GQ_ETOOBIG, m, "nesting deeper than %d levels",
                GQ_YAML_MAX_DEPTH);
  ld->depth++;
  if (ld->depth > ld->high)
    ld->high = ld->depth;
  return 0;
}

static int load_sequence(struct loader *ld, yaml_event_t *start, json_t **out)
{
  json_t *arr, *v;
  yaml_event_t ev;
  int rc;

  rc = check_collection_tag(ld, start->data.sequence_start.tag, "seq",
                            &start->start_mark);
  if (rc != 0 || (rc = enter(ld, &start->start_mark)) != 0)
    return rc;
  arr = json_array();
  while ((rc = next_event(ld, &ev)) == 0) {
    if (ev.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&ev);
      break;
    }
    if ((rc = load_node(ld, &ev, &v)) != 0)
      break;
    json_array_append_new(arr, v);
  }
  ld->depth--;
  if (rc != 0)
    json_decref(arr);
  else
    *out = arr;
  return rc;
}

/* A scalar key is taken as its text, unresolved: JSON keys are strings
 * anyway. The plain, untagged key "<<" sets *merge instead. */
static int scalar_key(struct loader *ld, const yaml_event_t *ev, char **key,
                      int *merge)
{
  const char *s = (const char *)ev->data.scalar.value;
  size_t n = ev->data.scalar.length;
  json_t *v;

  if (memchr(s, '\0', n))
    return fail(ld, GQ_EPARSE, &ev->start_mark,
                "mapping key contains a NUL character");
  if (!ev->data.scalar.tag && !strcmp(s, "<<") &&
      ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
    *merge = 1;
  else
    *key = gq_xstrndup(s, n);
  if (ev->data.scalar.anchor) {
    v = json_stringn(s, n); /* an alias to a key is its text */
    remember(ld, (const char *)ev->data.scalar.anchor, v, 1, 0);
    json_decref(v);
  }
  ld->nodes++;
  return 0;
}

/* An alias used as a key must stand for a string (without NULs). */
static int alias_key(struct loader *ld, yaml_event_t *ev, char **key)
{
  json_t *v;
  int rc;

  if ((rc = load_alias(ld, ev, &v)) != 0)
    return rc;
  if (json_is_string(v) &&
      strlen(json_string_value(v)) == json_string_length(v))
    *key = gq_xstrdup(json_string_value(v));
  else
    rc = fail(ld, GQ_EPARSE, &ev->start_mark,
              "alias '%s' used as a mapping key must refer to a string",
              (const char *)ev->data.alias.anchor);
  json_decref(v);
  return rc;
}

/* Reads a mapping key from *ev (consumed). Sets *key to a malloc'd string,
 * or sets *merge for the merge key "<<". */
static int load_key(struct loader *ld, yaml_event_t *ev, char **key, int *merge)
{
  int rc;

  *key = NULL;
  *merge = 0;
  if (ev->type == YAML_SCALAR_EVENT)
    rc = scalar_key(ld, ev, key, merge);
  else if (ev->type == YAML_ALIAS_EVENT)
    rc = alias_key(ld, ev, key);
  else
    rc = fail(ld, GQ_EPARSE, &ev->start_mark, "mapping key must be a scalar");
  yaml_event_delete(ev);
  return rc;
}

/* Adds the merge value 'v' (borrowed) into 'merged'. Keys already present
 * win, so earlier mappings in a merge sequence take precedence. */
static int add_merge(struct loader *ld, json_t *merged, json_t *v,
                     const yaml_mark_t *m)
{
  size_t i;

  if (json_is_object(v)) {
    json_object_update_missing(merged, v);
    return 0;
  }
  if (!json_is_array(v))
    return fail(ld, GQ_EPARSE, m,
                "merge value must be a mapping or a sequence of mappings");
  for (i = 0; i < json_array_size(v); i++) {
    json_t *item = json_array_get(v, i);

    if (!json_is_object(item))
      return fail(ld, GQ_EPARSE, m, "merge sequence item %zu is not a mapping",
                  i);
    json_object_update_missing(merged, item);
  }
  return 0;
}

/* Reads one key/value pair, starting at the key event *kev (consumed), into
 * 'obj' or, for "<<", into *merged. */
static int load_pair(struct loader *ld, yaml_event_t *kev, json_t *obj,
                     json_t **merged)
{
  yaml_mark_t km = kev->start_mark, vm = km;
  yaml_event_t vev;
  json_t *v = NULL;
  char *key;
  int merge, rc;

  if ((rc = load_key(ld, kev, &key, &merge)) != 0)
    return rc;
  if ((merge && *merged) || (key && json_object_get(obj, key)))
    rc = fail(ld, GQ_EPARSE, &km, "duplicate mapping key '%.*s'",
              clip(key ? strlen(key) : 2), key ? key : "<<");
  if (rc == 0 && (rc = next_event(ld, &vev)) == 0) {
    vm = vev.start_mark;
    rc = load_node(ld, &vev, &v);
  }
  if (rc == 0 && merge) {
    *merged = json_object();
    rc = add_merge(ld, *merged, v, &vm);
    json_decref(v);
  } else if (rc == 0) {
    json_object_set_new(obj, key, v);
  }
  free(key);
  return rc;
}

static int load_mapping(struct loader *ld, yaml_event_t *start, json_t **out)
{
  json_t *obj, *merged = NULL;
  yaml_event_t ev;
  int rc;

  rc = check_collection_tag(ld, start->data.mapping_start.tag, "map",
                            &start->start_mark);
  if (rc != 0 || (rc = enter(ld, &start->start_mark)) != 0)
    return rc;
  obj = json_object();
  while ((rc = next_event(ld, &ev)) == 0) {
    if (ev.type == YAML_MAPPING_END_EVENT) {
      yaml_event_delete(&ev);
      break;
    }
    if ((rc = load_pair(ld, &ev, obj, &merged)) != 0)
      break;
  }
  ld->depth--;
  if (rc == 0 && merged)
    json_object_update_missing(obj, merged); /* written keys win */
  json_decref(merged);
  if (rc != 0)
    json_decref(obj);
  else
    *out = obj;
  return rc;
}

/* Dispatches on the event type; sets *anchor to the node's anchor. */
static int build_node(struct loader *ld, yaml_event_t *ev, json_t **out,
                      const yaml_char_t **anchor)
{
  switch (ev->type) {
  case YAML_ALIAS_EVENT:
    return load_alias(ld, ev, out);
  case YAML_SCALAR_EVENT:
    *anchor = ev->data.scalar.anchor;
    return load_scalar(ld, ev, out);
  case YAML_SEQUENCE_START_EVENT:
    *anchor = ev->data.sequence_start.anchor;
    return load_sequence(ld, ev, out);
  case YAML_MAPPING_START_EVENT:
    *anchor = ev->data.mapping_start.anchor;
    return load_mapping(ld, ev, out);
  default: /* the parser's grammar allows no other event here */
    return fail(ld, GQ_EPARSE, &ev->start_mark, "unexpected yaml event %d",
                (int)ev->type);
  }
}

/* Builds the value that starts with *ev (consumed: deleted on return) and
 * stores a new reference in *out; on failure *out is NULL. An anchored node
 * is recorded with the nodes it stands for and its height, measured by
 * resetting ld->high for the node and merging it back afterwards. */
static int load_node(struct loader *ld, yaml_event_t *ev, json_t **out)
{
  uint64_t before = ld->nodes;
  int outer_high = ld->high;
  const yaml_char_t *anchor = NULL;
  int rc;

  *out = NULL;
  ld->high = ld->depth;
  rc = build_node(ld, ev, out, &anchor);
  if (rc == 0 && ev->type != YAML_ALIAS_EVENT) {
    ld->nodes++;
    if (anchor)
      remember(ld, (const char *)anchor, *out, ld->nodes - before,
               ld->high - ld->depth);
  }
  if (outer_high > ld->high)
    ld->high = outer_high;
  yaml_event_delete(ev);
  return rc;
}

/* --- Documents and the stream --- */

/* A document with nothing in it ("---" alone, or comments) arrives as one
 * empty, plain, untagged scalar; such documents are skipped. */
static int is_empty_root(const yaml_event_t *ev)
{
  return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.length == 0 &&
         ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
         !ev->data.scalar.tag && !ev->data.scalar.anchor;
}

/* Loads one document after its DOCUMENT-START event and appends its value
 * to 'docs'. Anchors do not cross documents (YAML 1.2.2, section 3.2.2.2). */
static int load_document(struct loader *ld, json_t *docs)
{
  yaml_event_t ev;
  json_t *root;
  int rc, empty;

  json_object_clear(ld->anchors);
  json_object_clear(ld->meta);
  if ((rc = next_event(ld, &ev)) != 0)
    return rc;
  empty = is_empty_root(&ev);
  if ((rc = load_node(ld, &ev, &root)) != 0)
    return rc;
  if (empty)
    json_decref(root);
  else
    json_array_append_new(docs, root);
  if ((rc = next_event(ld, &ev)) != 0) /* DOCUMENT-END, by the grammar */
    return rc;
  yaml_event_delete(&ev);
  return 0;
}

static int load_stream(struct loader *ld, json_t *docs)
{
  yaml_event_t ev;
  yaml_event_type_t type;
  int rc;

  for (;;) {
    if ((rc = next_event(ld, &ev)) != 0)
      return rc;
    type = ev.type;
    yaml_event_delete(&ev);
    if (type == YAML_STREAM_END_EVENT)
      return 0;
    if (type == YAML_DOCUMENT_START_EVENT && (rc = load_document(ld, docs)))
      return rc;
  }
}

/* The shared body of both entry points; 'name' labels messages. */
static int parse_named(const char *name, const char *text, size_t len,
                       json_t **docs_out, char *err, size_t errlen)
{
  struct loader ld = {
      .name = name, .text = text, .len = len, .err = err, .errlen = errlen};
  json_t *docs;
  int rc;

  if (!yaml_parser_initialize(&ld.parser))
    return fail(&ld, GQ_ENOMEM, NULL, "cannot initialize the yaml parser");
  yaml_parser_set_input_string(&ld.parser, (const unsigned char *)text, len);
  ld.anchors = json_object();
  ld.meta = json_object();
  docs = json_array();
  rc = load_stream(&ld, docs);
  json_decref(ld.anchors);
  json_decref(ld.meta);
  yaml_parser_delete(&ld.parser);
  if (rc != 0) {
    json_decref(docs);
    return rc;
  }
  *docs_out = docs;
  return 0;
}

/* Checks the arguments both entry points share and clears the outputs. */
static int check_args(struct loader *ld, json_t **docs_out)
{
  if (ld->err && ld->errlen > 0)
    ld->err[0] = '\0';
  if (!docs_out)
    return fail(ld, GQ_EINVAL, NULL, "no place to store the documents");
  *docs_out = NULL;
  return 0;
}

int gq_yaml_parse(const char *text, size_t len, json_t **docs_out, char *err,
                  size_t errlen)
{
  struct loader ld = {.err = err, .errlen = errlen};
  int rc;

  if ((rc = check_args(&ld, docs_out)) != 0)
    return rc;
  if (!text && len > 0)
    return fail(&ld, GQ_EINVAL, NULL, "no input text");
  if (len > GQ_YAML_MAX_BYTES)
    return fail(&ld, GQ_ETOOBIG, NULL,
                "input of %zu bytes exceeds the limit of %zu bytes", len,
                GQ_YAML_MAX_BYTES);
  return parse_named(NULL, text ? text : "", len, docs_out, err, errlen);
}

/* Reads all of 'f' into a malloc'd buffer, stopping one byte past the limit
 * so that an oversized file costs at most GQ_YAML_MAX_BYTES + 1 bytes.
 * Returns 0, GQ_ETOOBIG, or -errno from fread. */
static int read_capped(FILE *f, char **buf, size_t *len)
{
  size_t cap = 64 * 1024, n = 0, got;
  char *b = gq_xmalloc(cap);

  while ((got = fread(b + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n > GQ_YAML_MAX_BYTES)
      break;
    if (n == cap) {
      cap = cap * 2 > GQ_YAML_MAX_BYTES + 1 ? GQ_YAML_MAX_BYTES + 1 : cap * 2;
      b = gq_xrealloc(b, cap);
    }
  }
  if (ferror(f) || n > GQ_YAML_MAX_BYTES) {
    int rc = n > GQ_YAML_MAX_BYTES ? GQ_ETOOBIG : -(errno ? errno : EIO);

    free(b);
    return rc;
  }
  *buf = b;
  *len = n;
  return 0;
}

/* "cannot open 'path': No such file or directory"; the message names the
 * path itself, so the "path:" prefix is dropped. */
static int io_error(struct loader *ld, const char *verb, int errnum)
{
  const char *path = ld->name;

  ld->name = NULL;
  return fail(ld, GQ_EIO, NULL, "cannot %s '%s': %s", verb, path,
              strerror(errnum));
}

int gq_yaml_load_file(const char *path, json_t **docs_out, char *err,
                      size_t errlen)
{
  struct loader ld = {.name = path, .err = err, .errlen = errlen};
  char *text;
  size_t len;
  FILE *f;
  int rc;

  if ((rc = check_args(&ld, docs_out)) != 0)
    return rc;
  if (!path)
    return fail(&ld, GQ_EINVAL, NULL, "no path given");
  if (!(f = fopen(path, "rb")))
    return io_error(&ld, "open", errno);
  errno = 0;
  rc = read_capped(f, &text, &len);
  fclose(f);
  if (rc == GQ_ETOOBIG)
    return fail(&ld, rc, NULL, "file exceeds the limit of %zu bytes",
                GQ_YAML_MAX_BYTES);
  if (rc != 0)
    return io_error(&ld, "read", -rc);
  rc = parse_named(path, text, len, docs_out, err, errlen);
  free(text);
  return rc;
}
