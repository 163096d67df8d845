/* sim/schema.c - pruning, defaulting and validation of custom resources.
 *
 * Three walks over the object, each carrying the schema node of the value in
 * hand: prune_node(), default_node() and validate_node(), run in that order
 * because that is the apiserver's order (a pruned field is neither defaulted
 * nor validated, and a default is validated like a value the user wrote).
 * The walks share a struct walk holding the current field path and the
 * report being filled. Compiled patterns are kept for the process (one
 * regex per distinct pattern text, re_cache below): every write of a
 * GpuJob validates the same patterns, and compiling them for each walk
 * was a sixth of gpuq-sim's instructions in a trace replay.
 *
 * Object keys are visited in sorted order (bytewise, as Go sorts strings) so
 * that causes and unknown paths come out in the same order on every run;
 * jansson's iteration order is an implementation detail.
 *
 * jansson's allocation failures are not checked call by call: STYLE rule 7
 * makes running out of memory fatal, and the programs route jansson through
 * the aborting allocators (json_set_alloc_funcs), as api/yaml.c explains.
 */
#include "sim/schema.h"

#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"

#define K_PRESERVE "x-kubernetes-preserve-unknown-fields"
#define K_INT_OR_STRING "x-kubernetes-int-or-string"
#define K_EMBEDDED "x-kubernetes-embedded-resource"
#define K_LIST_TYPE "x-kubernetes-list-type"
#define K_LIST_KEYS "x-kubernetes-list-map-keys"

/* Longest field path built; longer ones are cut (the cause's field holds
 * 255 bytes anyway, unknown paths keep up to this). */
#define PATH_BYTES 1024
/* Longest rendering of a bad value inside a message. */
#define VALUE_BYTES 320
/* Distinct patterns kept compiled; more are compiled per use. */
#define RE_CACHE_MAX 4096
#define RE_FLAGS (REG_EXTENDED | REG_NOSUB)
/* Largest integer a float64 holds exactly: swag.IsFloat64AJSONInteger's
 * bound for "an integral real counts as an integer". */
#define MAX_JSON_INT 9007199254740991.0

/* Text built in a fixed buffer. Appends that do not fit are cut, never
 * failed: everything built here is a message or a path for people. */
struct sb {
  char *p;
  size_t cap; /* bytes at p, including the NUL */
  size_t len;
};

struct path {
  char buf[PATH_BYTES];
  size_t len;
};

/* A compiled pattern, keyed by its text (a copy: schemas come and go
 * with their CRDs, the text stays the same). */
struct re_slot {
  char *pattern;
  regex_t re; /* valid only when rc == 0 */
  int rc;     /* regcomp()'s result */
  UT_hash_handle hh;
};

struct walk {
  struct gq_schema_report *rep;
  size_t causes_alloc;
  size_t unknown_alloc;
  struct path path; /* of the value being visited; "" for the object */
  int rc;           /* sticky GQ_ETOOBIG once a walk went too deep */
  const json_t *defs; /* "$ref" targets (gq_schema_prune), or NULL */
};

static void validate_node(struct walk *w, const json_t *v, const json_t *s,
                          int depth);

/* --- text ------------------------------------------------------------- */

static void sb_init(struct sb *b, char *p, size_t cap)
{
  b->p = p;
  b->cap = cap;
  b->len = 0;
  if (cap)
    p[0] = '\0';
}

static int sb_full(const struct sb *b)
{
  return b->len + 1 >= b->cap;
}

static void sb_vprintf(struct sb *b, const char *fmt, va_list ap)
{
  int n;

  if (sb_full(b))
    return;
  n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
  if (n < 0)
    b->p[b->len] = '\0';
  else if ((size_t)n >= b->cap - b->len)
    b->len = b->cap - 1;
  else
    b->len += (size_t)n;
}

__attribute__((format(printf, 2, 3))) static void
sb_printf(struct sb *b, const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  sb_vprintf(b, fmt, ap);
  va_end(ap);
}

static void sb_putc(struct sb *b, char c)
{
  if (sb_full(b))
    return;
  b->p[b->len++] = c;
  b->p[b->len] = '\0';
}

static void sb_puts(struct sb *b, const char *s)
{
  sb_printf(b, "%s", s);
}

/* Copies src into dst[n], cut to fit; snprintf("%s") would do, but GCC's
 * -Wformat-truncation then warns about every cut it can foresee. */
static void copy_str(char *dst, size_t n, const char *src)
{
  size_t len = strlen(src);

  if (len >= n)
    len = n - 1;
  memcpy(dst, src, len);
  dst[len] = '\0';
}

/* Go's strconv.Quote, which %q uses: ASCII control characters escaped,
 * other bytes (UTF-8 included) as they are. Go also escapes non-printable
 * non-ASCII code points (U+00A0, U+2028); we do not. */
static void go_quote(struct sb *b, const char *s, size_t n)
{
  size_t i;

  sb_putc(b, '"');
  for (i = 0; i < n && !sb_full(b); i++) {
    unsigned char c = (unsigned char)s[i];

    switch (c) {
    case '"':
      sb_puts(b, "\\\"");
      break;
    case '\\':
      sb_puts(b, "\\\\");
      break;
    case '\a':
      sb_puts(b, "\\a");
      break;
    case '\b':
      sb_puts(b, "\\b");
      break;
    case '\f':
      sb_puts(b, "\\f");
      break;
    case '\n':
      sb_puts(b, "\\n");
      break;
    case '\r':
      sb_puts(b, "\\r");
      break;
    case '\t':
      sb_puts(b, "\\t");
      break;
    case '\v':
      sb_puts(b, "\\v");
      break;
    default:
      if (c < 0x20 || c == 0x7f)
        sb_printf(b, "\\x%02x", c);
      else
        sb_putc(b, (char)c);
    }
  }
  sb_putc(b, '"');
}

/* A float64 as Go's %v prints it (strconv.FormatFloat(d, 'g', -1, 64)):
 * the fewest digits that read back as d, in %e form when the exponent is
 * below -4 or at least 6 ("1e+06", "1.5e-07"), else plainly ("0.001",
 * "123456", "2"). kube-openapi prints real bounds and values this way. */
static void go_float(struct sb *b, double d)
{
  char tmp[48], dig[24];
  const char *p;
  int prec, nd = 0, e10, i;

  if (!isfinite(d)) {
    sb_puts(b, isnan(d) ? "NaN" : d > 0 ? "+Inf" : "-Inf");
    return;
  }
  if (d == 0) {
    sb_puts(b, signbit(d) ? "-0" : "0");
    return;
  }
  for (prec = 0; prec < 17; prec++) {
    snprintf(tmp, sizeof tmp, "%.*e", prec, d);
    if (strtod(tmp, NULL) == d)
      break;
  }
  p = tmp;
  if (*p == '-') {
    sb_putc(b, '-');
    p++;
  }
  for (; *p && *p != 'e' && nd < (int)sizeof dig; p++)
    if (*p != '.')
      dig[nd++] = *p;
  e10 = *p == 'e' ? (int)strtol(p + 1, NULL, 10) : 0;
  while (nd > 1 && dig[nd - 1] == '0')
    nd--;
  if (e10 < -4 || e10 >= 6) {
    sb_putc(b, dig[0]);
    if (nd > 1)
      sb_printf(b, ".%.*s", nd - 1, dig + 1);
    sb_printf(b, "e%c%02d", e10 < 0 ? '-' : '+', abs(e10));
  } else if (e10 >= 0) {
    for (i = 0; i <= e10; i++)
      sb_putc(b, i < nd ? dig[i] : '0');
    if (nd > e10 + 1)
      sb_printf(b, ".%.*s", nd - e10 - 1, dig + e10 + 1);
  } else {
    sb_puts(b, "0.");
    for (i = 0; i < -e10 - 1; i++)
      sb_putc(b, '0');
    sb_printf(b, "%.*s", nd, dig);
  }
}

/* Writes v as field.Error.ErrorBody() prints a bad value: strings with %q,
 * numbers and booleans with %v, nil as "null" (quoted: Go turns it into the
 * string "null" first), objects and lists as JSON with sorted keys. */
static void render_value(const json_t *v, char *buf, size_t len)
{
  struct sb b;
  char *s;

  sb_init(&b, buf, len);
  switch (json_typeof(v)) {
  case JSON_STRING:
    go_quote(&b, json_string_value(v), json_string_length(v));
    break;
  case JSON_INTEGER:
    sb_printf(&b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    break;
  case JSON_REAL:
    go_float(&b, json_real_value(v));
    break;
  case JSON_TRUE:
    sb_puts(&b, "true");
    break;
  case JSON_FALSE:
    sb_puts(&b, "false");
    break;
  case JSON_NULL:
    sb_puts(&b, "\"null\"");
    break;
  default:
    s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    sb_puts(&b, s ? s : "?");
    free(s);
  }
}

/* The JSON type of v as kube-openapi names it (schemaInfoForType): a JSON
 * real is a "number" even when integral. */
static const char *type_name(const json_t *v)
{
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return "object";
  case JSON_ARRAY:
    return "array";
  case JSON_STRING:
    return "string";
  case JSON_INTEGER:
    return "integer";
  case JSON_REAL:
    return "number";
  case JSON_TRUE:
  case JSON_FALSE:
    return "boolean";
  default:
    return "null";
  }
}

/* --- paths ------------------------------------------------------------ */

/* Appends n bytes of s to the path, cut to fit (every walk step pushes,
 * so this stays clear of printf); returns the old length for path_pop(). */
static size_t path_put(struct path *p, const char *s, size_t n)
{
  size_t old = p->len;

  if (n > sizeof p->buf - 1 - p->len)
    n = sizeof p->buf - 1 - p->len;
  memcpy(p->buf + p->len, s, n);
  p->len += n;
  p->buf[p->len] = '\0';
  return old;
}

/* "key" at the top, ".key" below: field.Path.Child() and kube-openapi's
 * o.Path + "." + name (with the leading dot trimmed) agree on this form. */
static size_t path_key(struct path *p, const char *key)
{
  size_t old = p->len;

  if (p->len)
    path_put(p, ".", 1);
  path_put(p, key, strlen(key));
  return old;
}

static size_t path_index(struct path *p, size_t i)
{
  char buf[24];
  int n = snprintf(buf, sizeof buf, "[%zu]", i);

  return path_put(p, buf, n > 0 ? (size_t)n : 0);
}

static void path_pop(struct path *p, size_t old)
{
  p->len = old;
  p->buf[old] = '\0';
}

/* --- schema access ---------------------------------------------------- */

static int flag(const json_t *s, const char *k)
{
  return json_is_true(json_object_get(s, k));
}

static const char *kw_str(const json_t *s, const char *k)
{
  return json_string_value(json_object_get(s, k));
}

static int is_integral(const json_t *v)
{
  double d;

  if (json_is_integer(v))
    return 1;
  if (!json_is_real(v))
    return 0;
  d = json_real_value(v);
  return fabs(d) <= MAX_JSON_INT && floor(d) == d;
}

/* An integer keyword (maxLength, minItems ...); 1 and *out if present. */
static int kw_int(const json_t *s, const char *k, json_int_t *out)
{
  const json_t *v = json_object_get(s, k);

  if (!is_integral(v))
    return 0;
  *out = json_is_integer(v) ? json_integer_value(v)
                            : (json_int_t)json_real_value(v);
  return 1;
}

static const json_t *prop_schema(const json_t *s, const char *key)
{
  const json_t *p = json_object_get(json_object_get(s, "properties"), key);

  return json_is_object(p) ? p : NULL;
}

static const json_t *items_schema(const json_t *s)
{
  const json_t *i = json_object_get(s, "items");

  return json_is_object(i) ? i : NULL;
}

/* Whether s takes undeclared keys as map entries (additionalProperties);
 * *sub is their schema, NULL for "additionalProperties: true". */
static int map_values(const json_t *s, const json_t **sub)
{
  const json_t *ap = json_object_get(s, "additionalProperties");

  *sub = json_is_object(ap) ? ap : NULL;
  return *sub || json_is_true(ap);
}

/* The object itself and embedded resources carry apiVersion, kind and
 * metadata, which the apiserver's decoder handles rather than the schema. */
static int is_resource(const json_t *s, int depth)
{
  return depth == 1 || flag(s, K_EMBEDDED);
}

/* The type a resource's own field must have, or NULL for other keys. */
static const char *meta_type(const char *key)
{
  if (!strcmp(key, "apiVersion") || !strcmp(key, "kind"))
    return "string";
  if (!strcmp(key, "metadata"))
    return "object";
  return NULL;
}

static int meta_ok(const char *want, const json_t *v)
{
  return want[0] == 's' ? json_is_string(v) : json_is_object(v);
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_size(const void *a, const void *b)
{
  size_t x = *(const size_t *)a, y = *(const size_t *)b;

  return x < y ? -1 : x > y;
}

/* The keys of obj in bytewise order: an owned array of keys borrowed from
 * obj, valid while those keys stay in it. */
static const char **sorted_keys(const json_t *obj, size_t *n)
{
  const char **keys = gq_xmalloc((json_object_size(obj) + 1) * sizeof *keys);
  const char *k;
  json_t *v;
  size_t i = 0;

  json_object_foreach((json_t *)obj, k, v) {
    (void)v;
    keys[i++] = k;
  }
  qsort(keys, i, sizeof *keys, cmp_str);
  *n = i;
  return keys;
}

/* --- the walk --------------------------------------------------------- */

/* Depth counts objects and arrays; scalars never make a value too deep. */
static int too_deep(struct walk *w, const json_t *v, int depth)
{
  if (depth <= GQ_SCHEMA_MAX_DEPTH || (!json_is_object(v) && !json_is_array(v)))
    return 0;
  w->rc = GQ_ETOOBIG;
  return 1;
}

static int nesting_over(const json_t *v, int depth)
{
  const char *k;
  json_t *e;
  size_t i;

  if (!json_is_object(v) && !json_is_array(v))
    return 0;
  if (depth > GQ_SCHEMA_MAX_DEPTH)
    return 1;
  if (json_is_object(v)) {
    json_object_foreach((json_t *)v, k, e) {
      if (nesting_over(e, depth + 1))
        return 1;
    }
  } else {
    json_array_foreach(v, i, e) {
      if (nesting_over(e, depth + 1))
        return 1;
    }
  }
  return 0;
}

static int causes_full(const struct walk *w)
{
  return w->rep->n_causes >= GQ_SCHEMA_MAX_CAUSES;
}

/* Records a cause for the current path; silently nothing past the cap. */
__attribute__((format(printf, 3, 4))) static void
add_cause(struct walk *w, const char *reason, const char *fmt, ...)
{
  struct gq_schema_report *r = w->rep;
  struct gq_schema_cause *c;
  struct sb b;
  va_list ap;

  if (causes_full(w))
    return;
  /* Most objects have no cause or one: grow from small, but never past
   * the cap, which bounds the memory a hostile object can make us use. */
  if (r->n_causes == w->causes_alloc) {
    w->causes_alloc = w->causes_alloc ? 2 * w->causes_alloc : 4;
    if (w->causes_alloc > GQ_SCHEMA_MAX_CAUSES)
      w->causes_alloc = GQ_SCHEMA_MAX_CAUSES;
    r->causes = gq_xrealloc(r->causes, w->causes_alloc * sizeof *r->causes);
  }
  c = &r->causes[r->n_causes++];
  copy_str(c->field, sizeof c->field, w->path.buf);
  copy_str(c->reason, sizeof c->reason, reason);
  sb_init(&b, c->message, sizeof c->message);
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
}

static void add_unknown(struct walk *w)
{
  struct gq_schema_report *r = w->rep;

  if (r->n_unknown >= GQ_SCHEMA_MAX_UNKNOWN)
    return;
  if (r->n_unknown == w->unknown_alloc) {
    w->unknown_alloc = w->unknown_alloc ? 2 * w->unknown_alloc : 4;
    r->unknown = gq_xrealloc(r->unknown, w->unknown_alloc * sizeof *r->unknown);
  }
  r->unknown[r->n_unknown++] = gq_xstrdup(w->path.buf);
}

/* --- pruning (pruning/algorithm.go) ----------------------------------- */

/* Most "$ref" hops followed from one node before it counts as no schema:
 * the generated definitions never chain references, so this only stops a
 * reference cycle in a hand-made file. */
#define MAX_REF_HOPS 8

/* s, or the definition its "$ref": "#/definitions/NAME" names (when the
 * walk has definitions); NULL for a reference to nothing. */
static const json_t *deref(const struct walk *w, const json_t *s)
{
  static const char pre[] = "#/definitions/";
  const char *ref;

  for (int hops = 0; s && w->defs && hops < MAX_REF_HOPS; hops++) {
    ref = json_string_value(json_object_get(s, "$ref"));
    if (!ref)
      return s;
    if (strncmp(ref, pre, sizeof pre - 1) != 0)
      return NULL;
    s = json_object_get(w->defs, ref + sizeof pre - 1);
  }
  return w->defs && s && json_object_get(s, "$ref") ? NULL : s;
}

static void prune_node(struct walk *w, json_t *x, const json_t *s, int depth);

/* A node with x-kubernetes-preserve-unknown-fields (skipPrune): its own
 * undeclared keys stay, as do those of the items of a preserving array,
 * but declared fields are still pruned by their own schemas. */
static void skip_prune(struct walk *w, json_t *x, const json_t *s, int depth)
{
  const json_t *sub;
  size_t i, n, old;

  s = deref(w, s);
  if (!s || too_deep(w, x, depth))
    return;
  if (json_is_object(x)) {
    const char **keys = sorted_keys(x, &n);
    int resource = is_resource(s, depth);

    for (i = 0; i < n; i++) {
      json_t *v = json_object_get(x, keys[i]);

      if (resource && meta_type(keys[i]))
        continue;
      old = path_key(&w->path, keys[i]);
      if ((sub = prop_schema(s, keys[i])) || map_values(s, &sub))
        prune_node(w, v, sub, depth + 1);
      path_pop(&w->path, old);
    }
    free(keys);
  } else if (json_is_array(x)) {
    json_t *v;

    sub = items_schema(s);
    json_array_foreach(x, i, v) {
      old = path_index(&w->path, i);
      skip_prune(w, v, sub, depth + 1);
      path_pop(&w->path, old);
    }
  }
}

/* Removes what s does not declare, recording each removed path. A NULL s
 * (no schema: items of a list without 'items', values of
 * "additionalProperties: true") declares nothing, as in the apiserver. */
static void prune_node(struct walk *w, json_t *x, const json_t *s, int depth)
{
  const json_t *sub;
  size_t i, n, old;

  s = deref(w, s);
  if (s && flag(s, K_PRESERVE)) {
    skip_prune(w, x, s, depth);
    return;
  }
  if (too_deep(w, x, depth))
    return;
  if (json_is_object(x)) {
    /* Keys are collected (and sorted) before any is deleted: jansson's
     * iterators do not survive deleting the pair they point at. */
    const char **keys = sorted_keys(x, &n);
    int resource = is_resource(s, depth);

    for (i = 0; i < n; i++) {
      json_t *v = json_object_get(x, keys[i]);
      const char *mt = resource ? meta_type(keys[i]) : NULL;

      /* Never pruned; of the wrong type, validation reports it. */
      if (mt)
        continue;
      old = path_key(&w->path, keys[i]);
      if (s && ((sub = prop_schema(s, keys[i])) || map_values(s, &sub))) {
        prune_node(w, v, sub, depth + 1);
      } else {
        /* The key dies with its pair: delete through a copy. */
        char *k = gq_xstrdup(keys[i]);

        add_unknown(w);
        json_object_del(x, k);
        free(k);
      }
      path_pop(&w->path, old);
    }
    free(keys);
  } else if (json_is_array(x)) {
    json_t *v;

    sub = s ? items_schema(s) : NULL;
    json_array_foreach(x, i, v) {
      old = path_index(&w->path, i);
      prune_node(w, v, sub, depth + 1);
      path_pop(&w->path, old);
    }
  }
}

/* --- defaulting (defaulting/algorithm.go) ----------------------------- */

/* Fills absent declared properties that have a default with a deep copy,
 * then descends into every value with a schema, so a default object gets
 * the defaults of its own properties too. */
static void default_node(struct walk *w, json_t *x, const json_t *s, int depth)
{
  const json_t *sub;
  const char *k;
  json_t *v;
  size_t i;

  if (!s || too_deep(w, x, depth))
    return;
  if (json_is_object(x)) {
    json_object_foreach(json_object_get(s, "properties"), k, v) {
      const json_t *d = json_object_get(v, "default");

      /* A deep copy: the schema is shared by every object of the kind
       * (and YAML anchors may share the default itself), so nothing below
       * may change it. */
      if (d && !json_object_get(x, k))
        json_object_set_new(x, k, json_deep_copy(d));
    }
    json_object_foreach(x, k, v) {
      if ((sub = prop_schema(s, k)) || map_values(s, &sub))
        default_node(w, v, sub, depth + 1);
    }
  } else if (json_is_array(x)) {
    sub = items_schema(s);
    json_array_foreach(x, i, v) {
      default_node(w, v, sub, depth + 1);
    }
  }
}

/* --- validation (kube-openapi validate + listtype) -------------------- */

/* The one place that words a type mismatch. kube-openapi's typeValidator
 * reports InvalidType(path, "body", want, <JSON type name>) and
 * kubeOpenAPIResultToFieldErrors() shows that type name as the bad value;
 * gpuq shows the value itself ("eight"), see schema.h. */
static void render_type_error(struct walk *w, const json_t *v, const char *want)
{
  char val[VALUE_BYTES];

  render_value(v, val, sizeof val);
  add_cause(w, "FieldValueInvalid",
            "Invalid value: %s: %s in body must be of type %s: \"%s\"", val,
            w->path.buf, want, type_name(v));
}

/* typeValidator: returns 1 if the value's other rules should be checked,
 * 0 after a mismatch (recorded) or for an accepted null. */
static int check_type(struct walk *w, const json_t *v, const json_t *s)
{
  const char *t = kw_str(s, "type"), *want = t;
  int ok;

  if (flag(s, K_INT_OR_STRING)) {
    want = "integer,string";
    ok = json_is_string(v) || is_integral(v);
  } else if (!t) {
    ok = 1;
  } else if (!strcmp(t, "object")) {
    ok = json_is_object(v);
  } else if (!strcmp(t, "array")) {
    ok = json_is_array(v);
  } else if (!strcmp(t, "string")) {
    ok = json_is_string(v);
  } else if (!strcmp(t, "boolean")) {
    ok = json_is_boolean(v);
  } else if (!strcmp(t, "integer")) {
    ok = is_integral(v);
  } else if (!strcmp(t, "number")) {
    ok = json_is_number(v);
  } else {
    ok = 1; /* unknown types: gq_schema_check_structural() refuses them */
  }
  /* typeValidator treats null as the type "null": accepted when the
   * schema is nullable or names no type, else a mismatch. Either way a null
   * has nothing more to check. */
  if (json_is_null(v)) {
    if (!want || flag(s, "nullable"))
      return 0;
    ok = 0;
  }
  if (!ok)
    render_type_error(w, v, want);
  return ok;
}

/* The process's compiled patterns (the sim is single-threaded; regexec()
 * on a compiled pattern does not change it). Kept until exit: at most
 * RE_CACHE_MAX, one per distinct pattern text of the loaded schemas. */
static struct re_slot *re_cache;

/* Compiles pat once per process; *re is the expression (valid when the
 * result is 0). With the cache full it is compiled into 'spare' and
 * *re == spare: the caller then regfree()s it after a 0 result. */
static int regex_get(const char *pat, regex_t **re, regex_t *spare)
{
  struct re_slot *slot;

  HASH_FIND_STR(re_cache, pat, slot);
  if (slot) {
    *re = &slot->re;
    return slot->rc;
  }
  if (HASH_COUNT(re_cache) >= RE_CACHE_MAX) {
    *re = spare;
    return regcomp(spare, pat, RE_FLAGS);
  }
  slot = gq_xcalloc(1, sizeof(*slot));
  slot->pattern = gq_xstrdup(pat);
  slot->rc = regcomp(&slot->re, pat, RE_FLAGS);
  HASH_ADD_KEYPTR(hh, re_cache, slot->pattern, strlen(slot->pattern), slot);
  *re = &slot->re;
  return slot->rc;
}

/* The value of v as messages quote it, into val (VALUE_BYTES). */
static const char *value_text(const json_t *v, char *val)
{
  render_value(v, val, VALUE_BYTES);
  return val;
}

static void check_pattern(struct walk *w, const json_t *v, const char *str,
                          const char *pat)
{
  regex_t spare, *re;
  char why[128], val[VALUE_BYTES];
  int rc = regex_get(pat, &re, &spare);

  if (rc != 0) {
    /* values.go Pattern(): the message carries the compile error. */
    value_text(v, val);
    regerror(rc, re, why, sizeof why);
    add_cause(w, "FieldValueInvalid",
              "Invalid value: %s: %s in body should match '%s, but pattern "
              "is invalid: %s'",
              val, w->path.buf, pat, why);
    return;
  }
  if (regexec(re, str, 0, NULL, 0) == REG_NOMATCH)
    add_cause(w, "FieldValueInvalid",
              "Invalid value: %s: %s in body should match '%s'",
              value_text(v, val), w->path.buf, pat);
  if (re == &spare)
    regfree(&spare);
}

/* Lengths count code points (utf8.RuneCount), though the TooLong message
 * says "bytes": that is the apiserver's wording. */
static void check_string(struct walk *w, const json_t *v, const json_t *s)
{
  const char *str = json_string_value(v), *pat, *fmt;
  size_t i, len = json_string_length(v);
  json_int_t runes = 0, lim;
  char val[VALUE_BYTES];
  int64_t ms;

  for (i = 0; i < len; i++)
    runes += ((unsigned char)str[i] & 0xC0) != 0x80;
  if (kw_int(s, "maxLength", &lim) && runes > lim)
    add_cause(w, "FieldValueTooLong",
              "Too long: may not be more than %" JSON_INTEGER_FORMAT " bytes",
              lim);
  if (kw_int(s, "minLength", &lim) && runes < lim)
    add_cause(w, "FieldValueInvalid",
              "Invalid value: %s: %s in body should be at least "
              "%" JSON_INTEGER_FORMAT " chars long",
              value_text(v, val), w->path.buf, lim);
  if ((pat = kw_str(s, "pattern")) != NULL)
    check_pattern(w, v, str, pat);
  fmt = kw_str(s, "format");
  if (fmt && !strcmp(fmt, "date-time") && gq_time_parse(str, &ms) != 0)
    add_cause(w, "FieldValueInvalid",
              "Invalid value: %s: %s in body must be of type date-time: %s",
              value_text(v, val), w->path.buf, val);
}

/* Go's int64(f): truncation toward zero; out-of-range bounds saturate
 * (where Go's result is machine-dependent). */
static json_int_t to_int(double d)
{
  if (d >= 9223372036854775807.0)
    return INT64_MAX;
  if (d <= -9223372036854775808.0)
    return INT64_MIN;
  return (json_int_t)d;
}

/* MaximumNativeType / MinimumNativeType: an integer value is compared with
 * the bound converted to int64, and the message prints that integer; a
 * real value is compared with the float64 bound, printed as Go prints it.
 * The conversion is kept although it is lossy: with "minimum: 0.001" the
 * integer 0 passes (int64(0.001) is 0) and the real 0.0 fails, on a real
 * cluster as here. The controller's own validator is what rejects the 0. */
static void check_bound(struct walk *w, const json_t *v, const char *val,
                        double bound, int exclusive, int is_max)
{
  char text[48];
  struct sb b;
  int bad;

  sb_init(&b, text, sizeof text);
  if (json_is_integer(v)) {
    json_int_t x = json_integer_value(v), lim = to_int(bound);

    bad = is_max ? (exclusive ? x >= lim : x > lim)
                 : (exclusive ? x <= lim : x < lim);
    sb_printf(&b, "%" JSON_INTEGER_FORMAT, lim);
  } else {
    double x = json_real_value(v);

    bad = is_max ? (exclusive ? x >= bound : x > bound)
                 : (exclusive ? x <= bound : x < bound);
    go_float(&b, bound);
  }
  if (bad)
    add_cause(w, "FieldValueInvalid",
              "Invalid value: %s: %s in body should be %s than %s%s", val,
              w->path.buf, is_max ? "less" : "greater",
              exclusive ? "" : "or equal to ", text);
}

/* MultipleOfNativeType. A factor that truncates to 0 or less for an
 * integer value would make Go divide by zero (or overflow); it is checked
 * as a real instead, and a factor <= 0 never matches (the apiserver refuses
 * such schemas). */
static void check_multiple(struct walk *w, const json_t *v, const char *val,
                           double factor)
{
  char text[48];
  struct sb b;
  int bad;

  sb_init(&b, text, sizeof text);
  if (json_is_integer(v) && to_int(factor) > 0) {
    json_int_t f = to_int(factor);

    bad = json_integer_value(v) % f != 0;
    sb_printf(&b, "%" JSON_INTEGER_FORMAT, f);
  } else {
    double x = json_number_value(v), m = 0;

    if (factor > 0)
      m = factor < 1 ? 1 / factor * x : x / factor;
    bad = factor <= 0 || !(fabs(m) <= MAX_JSON_INT && floor(m) == m);
    go_float(&b, factor);
  }
  if (bad)
    add_cause(w, "FieldValueInvalid",
              "Invalid value: %s: %s in body should be a multiple of %s", val,
              w->path.buf, text);
}

static void check_number(struct walk *w, const json_t *v, const json_t *s)
{
  const json_t *k;
  char val[VALUE_BYTES];

  render_value(v, val, sizeof val);
  if (json_is_number(k = json_object_get(s, "multipleOf")))
    check_multiple(w, v, val, json_number_value(k));
  if (json_is_number(k = json_object_get(s, "maximum")))
    check_bound(w, v, val, json_number_value(k), flag(s, "exclusiveMaximum"),
                1);
  if (json_is_number(k = json_object_get(s, "minimum")))
    check_bound(w, v, val, json_number_value(k), flag(s, "exclusiveMinimum"),
                0);
}

/* schemaSliceValidator: the items first, then the size. */
static void check_array(struct walk *w, const json_t *v, const json_t *s,
                        int depth)
{
  const json_t *items = items_schema(s);
  size_t i, old, n = json_array_size(v);
  json_int_t lim;
  json_t *e;

  if (items) {
    json_array_foreach(v, i, e) {
      /* A list of 100,000 bad items must not cost 100,000 visits once
       * nothing more can be recorded. */
      if (causes_full(w))
        return;
      old = path_index(&w->path, i);
      validate_node(w, e, items, depth + 1);
      path_pop(&w->path, old);
    }
  }
  if (kw_int(s, "minItems", &lim) && (json_int_t)n < lim)
    add_cause(w, "FieldValueInvalid",
              "Invalid value: %zu: %s in body should have at least "
              "%" JSON_INTEGER_FORMAT " items",
              n, w->path.buf, lim);
  if (kw_int(s, "maxItems", &lim) && (json_int_t)n > lim)
    add_cause(w, "FieldValueTooMany",
              "Too many: %zu: must have at most %" JSON_INTEGER_FORMAT " items",
              n, lim);
}

/* values.go Enum(): reflect.DeepEqual, or equal after converting the value
 * to the enum member's type; for numbers that means an integer member
 * matches a real value that truncates to it, as in Go. */
static int enum_match(const json_t *v, const json_t *member)
{
  if (json_is_number(v) && json_is_number(member)) {
    if (json_is_integer(member))
      return json_is_integer(v)
                 ? json_integer_value(v) == json_integer_value(member)
                 : to_int(json_real_value(v)) == json_integer_value(member);
    return json_number_value(v) == json_real_value(member);
  }
  return json_equal((json_t *)v, (json_t *)member);
}

/* field.NotSupported: members listed in schema order, each quoted with
 * %q; non-string members as their JSON text first. */
static void check_enum(struct walk *w, const json_t *v, const json_t *s)
{
  const json_t *e = json_object_get(s, "enum");
  char val[VALUE_BYTES], list[512];
  struct sb b;
  json_t *m;
  size_t i;

  if (!json_is_array(e) || json_array_size(e) == 0)
    return;
  json_array_foreach(e, i, m) {
    if (enum_match(v, m))
      return;
  }
  sb_init(&b, list, sizeof list);
  json_array_foreach(e, i, m) {
    if (i)
      sb_puts(&b, ", ");
    if (json_is_string(m)) {
      go_quote(&b, json_string_value(m), json_string_length(m));
    } else {
      char *t = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);

      go_quote(&b, t ? t : "", t ? strlen(t) : 0);
      free(t);
    }
  }
  render_value(v, val, sizeof val);
  add_cause(w, "FieldValueNotSupported",
            "Unsupported value: %s: supported values: %s", val, list);
}

/* objectValidator: declared properties and map values (sorted keys), then
 * the required fields in the schema's order. */
static void check_object(struct walk *w, const json_t *v, const json_t *s,
                         int depth)
{
  const char **keys;
  const json_t *sub;
  int resource = is_resource(s, depth);
  size_t i, n, old;
  json_t *r;

  keys = sorted_keys(v, &n);
  for (i = 0; i < n && !causes_full(w); i++) {
    const json_t *e = json_object_get(v, keys[i]);
    const char *mt = resource ? meta_type(keys[i]) : NULL;

    old = path_key(&w->path, keys[i]);
    /* The resource's apiVersion, kind and metadata belong to the decoder
     * and ObjectMeta validation, whatever the schema says of them; only
     * their JSON type is checked here. */
    if (mt) {
      if (!meta_ok(mt, e))
        render_type_error(w, e, mt);
    } else if ((sub = prop_schema(s, keys[i])) || map_values(s, &sub)) {
      validate_node(w, e, sub, depth + 1);
    }
    path_pop(&w->path, old);
  }
  free(keys);
  json_array_foreach(json_object_get(s, "required"), i, r) {
    const char *k = json_string_value(r);

    if (k && !json_object_get(v, k)) {
      old = path_key(&w->path, k);
      add_cause(w, "FieldValueRequired", "Required value");
      path_pop(&w->path, old);
    }
  }
}

/* The list-map key of one item: an object of the key fields it has. */
static json_t *map_key(const json_t *item, const json_t *keys)
{
  json_t *key = json_object(), *name, *x;
  size_t i;

  json_array_foreach(keys, i, name) {
    const char *f = json_string_value(name);

    if (f && (x = json_object_get(item, f)) != NULL)
      json_object_set(key, f, x);
  }
  return key;
}

struct keyed {
  const char *text; /* compact JSON with sorted keys */
  size_t index;
};

static int cmp_keyed(const void *a, const void *b)
{
  const struct keyed *x = a, *y = b;
  int c = strcmp(x->text, y->text);

  return c ? c : cmp_size(&x->index, &y->index);
}

/* validateListSet: for each value that occurs more than once, a Duplicate
 * cause at its second occurrence, in index order. Items (or, with 'keys',
 * their list-map keys) are compared by their JSON text, sorted rather than
 * compared pairwise so that long lists stay O(n log n). */
static void report_duplicates(struct walk *w, const json_t *list,
                              const json_t *keys)
{
  size_t i, nd = 0, n = json_array_size(list), old;
  struct keyed *by = gq_xcalloc(n, sizeof *by);
  char **text = gq_xcalloc(n, sizeof *text);
  size_t *dups = gq_xcalloc(n, sizeof *dups);
  char val[VALUE_BYTES];

  for (i = 0; i < n; i++) {
    json_t *e = json_array_get(list, i);
    json_t *k = keys ? map_key(e, keys) : json_incref(e);

    text[i] = json_dumps(k, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    if (!text[i])
      text[i] = gq_xstrdup("");
    json_decref(k);
    by[i].text = text[i];
    by[i].index = i;
  }
  qsort(by, n, sizeof *by, cmp_keyed);
  for (i = 1; i < n; i++)
    if (!strcmp(by[i].text, by[i - 1].text) &&
        (i < 2 || strcmp(by[i - 1].text, by[i - 2].text)))
      dups[nd++] = by[i].index;
  qsort(dups, nd, sizeof *dups, cmp_size);
  for (i = 0; i < nd; i++) {
    if (keys)
      copy_str(val, sizeof val, text[dups[i]]);
    else
      render_value(json_array_get(list, dups[i]), val, sizeof val);
    old = path_index(&w->path, dups[i]);
    add_cause(w, "FieldValueDuplicate", "Duplicate value: %s", val);
    path_pop(&w->path, old);
  }
  for (i = 0; i < n; i++)
    free(text[i]);
  free(text);
  free(by);
  free(dups);
}

/* listtype/validation.go. A list-map's items must be objects (or null);
 * the first that is not ends the check, as there. */
static void check_list_type(struct walk *w, const json_t *v, const json_t *s)
{
  const char *lt = kw_str(s, K_LIST_TYPE);
  char val[VALUE_BYTES];
  size_t i, old;
  json_t *e;

  if (!lt)
    return;
  if (!strcmp(lt, "set")) {
    report_duplicates(w, v, NULL);
    return;
  }
  if (strcmp(lt, "map"))
    return;
  json_array_foreach(v, i, e) {
    if (!json_is_object(e) && !json_is_null(e)) {
      render_value(e, val, sizeof val);
      old = path_index(&w->path, i);
      add_cause(w, "FieldValueInvalid",
                "Invalid value: %s: must be an object for an array of "
                "list-type map",
                val);
      path_pop(&w->path, old);
      return;
    }
  }
  report_duplicates(w, v, json_object_get(s, K_LIST_KEYS));
}

/* The checks of one value in kube-openapi's validator order (schema.go:
 * type, string, format, number, slice, common (enum), object). The
 * list-type check runs last: the apiserver runs it as a separate pass after
 * the schema validator, so its causes follow the others of the node. */
static void validate_node(struct walk *w, const json_t *v, const json_t *s,
                          int depth)
{
  if (!s || causes_full(w) || too_deep(w, v, depth))
    return;
  if (!check_type(w, v, s))
    return;
  if (json_is_string(v))
    check_string(w, v, s);
  else if (json_is_number(v))
    check_number(w, v, s);
  else if (json_is_array(v))
    check_array(w, v, s, depth);
  check_enum(w, v, s);
  if (json_is_object(v))
    check_object(w, v, s, depth);
  else if (json_is_array(v))
    check_list_type(w, v, s);
}

/* --- public ----------------------------------------------------------- */

void gq_schema_report_init(struct gq_schema_report *rep)
{
  memset(rep, 0, sizeof *rep);
}

void gq_schema_report_release(struct gq_schema_report *rep)
{
  size_t i;

  if (!rep)
    return;
  for (i = 0; i < rep->n_unknown; i++)
    free(rep->unknown[i]);
  free(rep->unknown);
  free(rep->causes);
  gq_schema_report_init(rep);
}

/* The checks both entry points make before a walk, and *w made ready:
 * 0, GQ_EINVAL (an argument missing) or GQ_ETOOBIG (checked up front so
 * that a too-deep object is refused untouched). */
static int walk_begin(struct walk *w, const json_t *schema, const json_t *obj,
                      struct gq_schema_report *rep)
{
  if (rep)
    gq_schema_report_init(rep);
  if (!schema || !obj || !rep)
    return GQ_EINVAL;
  if (nesting_over(obj, 1))
    return GQ_ETOOBIG;
  memset(w, 0, sizeof(*w));
  w->rep = rep;
  return 0;
}

int gq_schema_process(const json_t *schema, json_t *obj, int prune,
                      struct gq_schema_report *rep)
{
  struct walk w;
  int rc = walk_begin(&w, schema, obj, rep);

  if (rc != 0)
    return rc;
  /* Pruning first, so that an unknown field is neither defaulted into nor
   * validated; defaults before validation, so that a default is checked
   * like a value the user wrote (the apiserver validates defaults when the
   * CRD is created, but a bad one would still surface here). */
  if (prune)
    prune_node(&w, obj, schema, 1);
  if (w.rc == 0)
    default_node(&w, obj, schema, 1);
  if (w.rc == 0)
    validate_node(&w, obj, schema, 1);
  if (w.rc != 0)
    return w.rc;
  return rep->n_causes || rep->n_unknown ? GQ_EINVAL : 0;
}

int gq_schema_prune(const json_t *schema, const json_t *defs, json_t *obj,
                    struct gq_schema_report *rep)
{
  struct walk w;
  int rc = walk_begin(&w, schema, obj, rep);

  if (rc != 0)
    return rc;
  w.defs = defs;
  prune_node(&w, obj, schema, 1);
  if (w.rc != 0)
    return w.rc;
  return rep->n_unknown ? GQ_EINVAL : 0;
}

const json_t *gq_schema_for_version(const json_t *crd, const char *version)
{
  const json_t *versions, *s;
  json_t *v;
  size_t i;

  if (!crd || !version)
    return NULL;
  versions = json_object_get(json_object_get(crd, "spec"), "versions");
  json_array_foreach(versions, i, v) {
    const char *name = json_string_value(json_object_get(v, "name"));

    if (name && !strcmp(name, version)) {
      s = json_object_get(json_object_get(v, "schema"), "openAPIV3Schema");
      return json_is_object(s) ? s : NULL;
    }
  }
  return NULL;
}

/* --- structural check ------------------------------------------------- */

/* validateStructuralInvariants() words a missing type by where the node
 * sits. */
enum level { LEVEL_ROOT, LEVEL_ITEMS, LEVEL_FIELD };

struct scheck {
  struct path path; /* "properties[spec].items"; "" for the root */
  char *err;
  size_t errlen;
};

/* Writes "<path>.<child>: <message>" into the caller's buffer; returns
 * rc. */
__attribute__((format(printf, 4, 5))) static int
sfail(struct scheck *c, int rc, const char *child, const char *fmt, ...)
{
  struct sb b;
  va_list ap;

  if (!c->err || c->errlen == 0)
    return rc;
  sb_init(&b, c->err, c->errlen);
  sb_puts(&b, c->path.buf);
  if (child)
    sb_printf(&b, "%s%s", c->path.len ? "." : "", child);
  sb_puts(&b, ": ");
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  return rc;
}

static int known_type(const char *t)
{
  static const char *const types[] = {"array",  "boolean", "integer",
                                      "number", "object",  "string"};
  size_t i;

  for (i = 0; i < sizeof types / sizeof types[0]; i++)
    if (!strcmp(t, types[i]))
      return 1;
  return 0;
}

static int check_schema_node(struct scheck *c, const json_t *s, enum level lvl,
                             int depth);

/* Checks the child schema under 'fmt' (a path segment) at level lvl. */
__attribute__((format(printf, 5, 6))) static int
check_child(struct scheck *c, const json_t *s, enum level lvl, int depth,
            const char *fmt, ...)
{
  size_t old = c->path.len;
  struct sb b = {c->path.buf, sizeof c->path.buf, c->path.len};
  va_list ap;
  int rc;

  if (old)
    sb_putc(&b, '.');
  va_start(ap, fmt);
  sb_vprintf(&b, fmt, ap);
  va_end(ap);
  c->path.len = b.len;
  rc = check_schema_node(c, s, lvl, depth);
  path_pop(&c->path, old);
  return rc;
}

/* The rules of one node; see gq_schema_check_structural(). */
static int check_node_rules(struct scheck *c, const json_t *s, enum level lvl)
{
  const json_t *t = json_object_get(s, "type"), *props, *ap;
  const char *type = json_string_value(t), *pat, *lt;
  char val[VALUE_BYTES], why[128];
  regex_t re;
  int rc;

  if (t && (!type || !known_type(type))) {
    render_value(t, val, sizeof val);
    return sfail(c, GQ_EINVAL, "type",
                 "Unsupported value: %s: supported values: \"array\", "
                 "\"boolean\", \"integer\", \"number\", \"object\", \"string\"",
                 val);
  }
  if (lvl == LEVEL_ROOT && type && strcmp(type, "object"))
    return sfail(c, GQ_EINVAL, "type",
                 "Invalid value: \"%s\": must be object at the root", type);
  if (!type && !flag(s, K_INT_OR_STRING) && !flag(s, K_EMBEDDED)) {
    if (lvl == LEVEL_ROOT)
      return sfail(c, GQ_EINVAL, "type",
                   "Required value: must not be empty at the root");
    if (lvl == LEVEL_ITEMS)
      return sfail(c, GQ_EINVAL, "type",
                   "Required value: must not be empty for specified array "
                   "items");
    if (!flag(s, K_PRESERVE))
      return sfail(c, GQ_EINVAL, "type",
                   "Required value: must not be empty for specified object "
                   "fields");
  }
  if (type && !strcmp(type, "array") && !json_object_get(s, "items"))
    return sfail(c, GQ_EINVAL, "items", "Required value: must be specified");
  if (json_is_array(json_object_get(s, "items")))
    return sfail(c, GQ_EINVAL, "items",
                 "Forbidden: items must be a schema object and not an array");
  props = json_object_get(s, "properties");
  ap = json_object_get(s, "additionalProperties");
  if (props && !json_is_object(props))
    return sfail(c, GQ_EINVAL, "properties",
                 "Invalid value: must be an object");
  if (json_object_size(props) && ap)
    return sfail(c, GQ_EINVAL, "additionalProperties",
                 "Forbidden: additionalProperties and properties are mutual "
                 "exclusive");
  lt = kw_str(s, K_LIST_TYPE);
  if (lt && !strcmp(lt, "map") &&
      json_array_size(json_object_get(s, K_LIST_KEYS)) == 0)
    return sfail(c, GQ_EINVAL, K_LIST_KEYS,
                 "Required value: must not be empty if "
                 "x-kubernetes-list-type is map");
  if ((pat = kw_str(s, "pattern")) != NULL) {
    rc = regcomp(&re, pat, RE_FLAGS);
    if (rc != 0) {
      regerror(rc, &re, why, sizeof why);
      return sfail(c, GQ_EINVAL, "pattern",
                   "Invalid value: \"%s\": must be a valid regular "
                   "expression, but isn't: %s",
                   pat, why);
    }
    regfree(&re);
  }
  return 0;
}

static int check_schema_node(struct scheck *c, const json_t *s, enum level lvl,
                             int depth)
{
  const json_t *sub;
  const char **keys;
  size_t i, n;
  int rc = 0;

  if (depth > GQ_SCHEMA_MAX_DEPTH) {
    /* No path: it would be 128 segments long and hide the message. */
    if (c->err && c->errlen)
      snprintf(c->err, c->errlen, "schema nests deeper than %d levels",
               GQ_SCHEMA_MAX_DEPTH);
    return GQ_ETOOBIG;
  }
  if (!json_is_object(s))
    return sfail(c, GQ_EINVAL, NULL, "Invalid value: must be a schema object");
  if ((rc = check_node_rules(c, s, lvl)) != 0)
    return rc;
  sub = json_object_get(s, "properties");
  keys = sorted_keys(sub, &n);
  for (i = 0; i < n && rc == 0; i++)
    rc = check_child(c, json_object_get(sub, keys[i]), LEVEL_FIELD, depth + 1,
                     "properties[%s]", keys[i]);
  free(keys);
  if (rc == 0 && (sub = json_object_get(s, "items")) != NULL)
    rc = check_child(c, sub, LEVEL_ITEMS, depth + 1, "items");
  if (rc == 0 &&
      json_is_object(sub = json_object_get(s, "additionalProperties")))
    rc = check_child(c, sub, LEVEL_FIELD, depth + 1, "additionalProperties");
  return rc;
}

int gq_schema_check_structural(const json_t *schema, char *err, size_t errlen)
{
  struct scheck c;

  memset(&c, 0, sizeof c);
  c.err = err;
  c.errlen = errlen;
  if (err && errlen)
    err[0] = '\0';
  if (!json_is_object(schema)) {
    if (err && errlen)
      copy_str(err, errlen, "schema must be a JSON object");
    return GQ_EINVAL;
  }
  return check_schema_node(&c, schema, LEVEL_ROOT, 1);
}
