/* api/patch.c - JSON merge patch, JSON patch and strategic merge patch.
 *
 * The two merge flavours share one recursive merger (struct mrg): RFC 7386
 * is the strategic merge with every directive and list strategy switched
 * off. The merger never changes its inputs; it builds each result map key by
 * key, deep-copying what it keeps from the target, so the cost is one copy
 * of the target plus the patch, and the result shares nothing with either.
 *
 * JSON patch instead copies the target once and applies the operations to
 * that copy in place, which makes atomicity free: on any error the copy is
 * dropped. The whole operation list is validated before the first one runs.
 *
 * Recursion is bounded by GQ_PATCH_MAX_DEPTH: inputs are measured first, the
 * mergers recurse along the patch, and JSON patch refuses any insertion that
 * would make its working copy deeper than the cap.
 *
 * jansson allocation failures are not checked call by call (see patch.h).
 * jansson's iteration macros take non-const values although they only read;
 * ro() is the one place that casts const away for them.
 */
#include "api/patch.h"

#include "base/alloc.h"
#include "base/err.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPOS SIZE_MAX
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- shared helpers ---------------------------------------------------- */

struct ebuf {
  char *s; /* caller's message buffer, may be NULL */
  size_t n;
};

__attribute__((format(printf, 3, 4))) static int efail(struct ebuf *e, int rc,
                                                       const char *fmt, ...)
{
  va_list ap;

  if (e->s && e->n > 0) {
    va_start(ap, fmt);
    vsnprintf(e->s, e->n, fmt, ap);
    va_end(ap);
  }
  return rc;
}

/* For jansson's iterators only: they take json_t * but never write. */
static json_t *ro(const json_t *v)
{
  return (json_t *)v;
}

/* Returns 1 if v nests more than 'limit' containers deep (a scalar has depth
 * 0, a container one more than its deepest child). Recurses at most
 * limit + 1 levels, so it is safe on any input. */
static int too_deep(const json_t *v, int limit)
{
  const char *k;
  json_t *c;
  size_t i;

  if (limit < 0)
    return 1;
  if (!json_is_object(v) && !json_is_array(v))
    return 0;
  if (limit == 0)
    return 1;
  json_object_foreach(ro(v), k, c) {
    if (too_deep(c, limit - 1))
      return 1;
  }
  json_array_foreach(v, i, c) {
    if (too_deep(c, limit - 1))
      return 1;
  }
  return 0;
}

/* Counts the values in v (v itself included). */
static size_t count_values(const json_t *v)
{
  const char *k;
  json_t *c;
  size_t i, n = 1;

  json_object_foreach(ro(v), k, c) {
    n += count_values(c);
  }
  json_array_foreach(v, i, c) {
    n += count_values(c);
  }
  return n;
}

static int same(const json_t *a, const json_t *b);

static int same_object(const json_t *a, const json_t *b)
{
  const char *k;
  json_t *v;

  if (json_object_size(a) != json_object_size(b))
    return 0;
  json_object_foreach(ro(a), k, v) {
    const json_t *w = json_object_get(b, k);

    if (!w || !same(v, w))
      return 0;
  }
  return 1;
}

static int same_array(const json_t *a, const json_t *b)
{
  size_t i;
  json_t *v;

  if (json_array_size(a) != json_array_size(b))
    return 0;
  json_array_foreach(a, i, v) {
    if (!same(v, json_array_get(b, i)))
      return 0;
  }
  return 1;
}

/* JSON equality as RFC 6902 section 4.6 defines it for "test": numbers are
 * equal when numerically equal (jansson's json_equal() says 1 != 1.0),
 * objects ignore member order, arrays compare element by element. */
static int same(const json_t *a, const json_t *b)
{
  if (json_is_number(a) && json_is_number(b)) {
    if (json_is_integer(a) && json_is_integer(b))
      return json_integer_value(a) == json_integer_value(b);
    return json_number_value(a) == json_number_value(b);
  }
  if (json_typeof(a) != json_typeof(b))
    return 0;
  switch (json_typeof(a)) {
  case JSON_OBJECT:
    return same_object(a, b);
  case JSON_ARRAY:
    return same_array(a, b);
  case JSON_STRING:
    return json_equal(a, b);
  default:
    return 1; /* true, false, null: the type is the value */
  }
}

/* Resets the message and *out, then checks the arguments and the depth cap
 * common to all three patch kinds. */
static int begin(struct ebuf *e, const json_t *target, const json_t *patch,
                 json_t **out)
{
  if (e->s && e->n > 0)
    e->s[0] = '\0';
  if (out)
    *out = NULL;
  if (!target || !patch || !out)
    return efail(e, GQ_EINVAL, "missing argument");
  if (too_deep(target, GQ_PATCH_MAX_DEPTH))
    return efail(e, GQ_ETOOBIG, "target nests deeper than %d levels",
                 GQ_PATCH_MAX_DEPTH);
  if (too_deep(patch, GQ_PATCH_MAX_DEPTH))
    return efail(e, GQ_ETOOBIG, "patch nests deeper than %d levels",
                 GQ_PATCH_MAX_DEPTH);
  return 0;
}

/* ---- JSON Pointer (RFC 6901) ------------------------------------------- */

/* Returns 1 if p is "" or a sequence of '/'-prefixed tokens whose every '~'
 * is followed by '0' or '1' (RFC 6901 section 3). */
static int ptr_syntax_ok(const char *p)
{
  if (*p != '\0' && *p != '/')
    return 0;
  for (; *p; p++)
    if (*p == '~' && p[1] != '0' && p[1] != '1')
      return 0;
  return 1;
}

/* Returns the number of tokens in a well-formed pointer. */
static int ptr_depth(const char *p)
{
  int n = 0;

  for (; *p; p++)
    n += *p == '/';
  return n;
}

/* Decodes the token that *p (at a '/') starts, advancing *p to the next '/'
 * or the end. "~1" is decoded before "~0" as RFC 6901 section 4 requires,
 * which a single left-to-right pass achieves. Caller frees the result. */
static char *ptr_token(const char **p)
{
  const char *s = *p + 1, *end = strchr(s, '/');
  size_t n = end ? (size_t)(end - s) : strlen(s), j = 0;
  char *tok = gq_xmalloc(n + 1);

  for (size_t i = 0; i < n; i++, j++) {
    tok[j] = s[i];
    if (s[i] == '~')
      tok[j] = s[++i] == '1' ? '/' : '~';
  }
  tok[j] = '\0';
  *p = s + n;
  return tok;
}

/* Parses an array index token (RFC 6901 section 4: decimal, no leading
 * zeros; "-" is the slot after the last element). 'allow_end' admits "-"
 * and size itself, as "add" does. Returns 0, GQ_EINVAL for a token that is
 * no index at all, GQ_ENOTFOUND for one out of range. */
static int arr_index(const char *tok, size_t size, int allow_end, size_t *idx)
{
  size_t n = 0;

  if (strcmp(tok, "-") == 0) {
    *idx = size;
    return allow_end ? 0 : GQ_ENOTFOUND;
  }
  if (tok[0] == '\0' || (tok[0] == '0' && tok[1] != '\0'))
    return GQ_EINVAL;
  for (const char *p = tok; *p; p++) {
    if (*p < '0' || *p > '9')
      return GQ_EINVAL;
    if (n > (SIZE_MAX - 9) / 10)
      return GQ_ENOTFOUND; /* larger than any array */
    n = n * 10 + (size_t)(*p - '0');
  }
  if (n > size || (n == size && !allow_end))
    return GQ_ENOTFOUND;
  *idx = n;
  return 0;
}

/* Sets *out to the member 'tok' of container v (borrowed). */
static int ptr_child(json_t *v, const char *tok, json_t **out)
{
  size_t i;
  int rc;

  if (json_is_object(v)) {
    *out = json_object_get(v, tok);
    return *out ? 0 : GQ_ENOTFOUND;
  }
  if (!json_is_array(v))
    return GQ_ENOTFOUND;
  if ((rc = arr_index(tok, json_array_size(v), 0, &i)) != 0)
    return rc;
  *out = json_array_get(v, i);
  return 0;
}

/* Walks the non-empty, well-formed pointer 'ptr' up to its last token: sets
 * *parent (borrowed from doc) and *last (decoded, caller frees; NULL on
 * error). Returns 0, GQ_ENOTFOUND or GQ_EINVAL (bad index on the way). */
static int ptr_parent(json_t *doc, const char *ptr, json_t **parent,
                      char **last)
{
  json_t *cur = doc;
  char *tok = ptr_token(&ptr);
  int rc;

  *last = NULL;
  while (*ptr != '\0') {
    rc = ptr_child(cur, tok, &cur);
    free(tok);
    if (rc != 0)
      return rc;
    tok = ptr_token(&ptr);
  }
  *parent = cur;
  *last = tok;
  return 0;
}

/* Sets *out to the value at the well-formed pointer 'ptr' (borrowed). */
static int ptr_lookup(json_t *doc, const char *ptr, json_t **out)
{
  json_t *parent;
  char *last;
  int rc;

  if (*ptr == '\0') {
    *out = doc;
    return 0;
  }
  rc = ptr_parent(doc, ptr, &parent, &last);
  if (rc == 0)
    rc = ptr_child(parent, last, out);
  free(last);
  return rc;
}

const json_t *gq_json_pointer_get(const json_t *doc, const char *pointer)
{
  json_t *v;

  if (!doc || !pointer || !ptr_syntax_ok(pointer))
    return NULL;
  /* ptr_lookup() only reads; it is non-const for gq_patch_json's sake. */
  return ptr_lookup(ro(doc), pointer, &v) == 0 ? v : NULL;
}

/* ---- JSON patch (RFC 6902) --------------------------------------------- */

enum jp_kind { JP_ADD, JP_REMOVE, JP_REPLACE, JP_MOVE, JP_COPY, JP_TEST };

/* RFC 6902 section 4: which members each operation requires. */
static const struct {
  const char *name;
  int needs_value, needs_from;
} jp_kinds[] = {
    [JP_ADD] = {"add", 1, 0},         [JP_REMOVE] = {"remove", 0, 0},
    [JP_REPLACE] = {"replace", 1, 0}, [JP_MOVE] = {"move", 0, 1},
    [JP_COPY] = {"copy", 0, 1},       [JP_TEST] = {"test", 1, 0},
};

struct jp_op {
  enum jp_kind kind;
  const char *path, *from; /* borrowed from the patch document */
  const json_t *value;     /* borrowed; NULL when not needed */
};

struct jp {
  struct ebuf e;
  json_t *doc;   /* the private working copy */
  size_t copied; /* values duplicated by "copy" so far */
};

/* Reads the pointer member 'name' of operation i into *out. */
static int jp_pointer(struct jp *c, const json_t *o, const char *name, size_t i,
                      const char **out)
{
  const json_t *v = json_object_get(o, name);

  if (!v)
    return efail(&c->e, GQ_EINVAL, "operation %zu: missing '%s'", i, name);
  if (!json_is_string(v))
    return efail(&c->e, GQ_EINVAL, "operation %zu: '%s' must be a string", i,
                 name);
  *out = json_string_value(v);
  if (!ptr_syntax_ok(*out))
    return efail(&c->e, GQ_EINVAL,
                 "operation %zu: invalid JSON pointer '%.200s' in '%s'", i,
                 *out, name);
  return 0;
}

/* Finds the operation named by member "op" of operation i. */
static int jp_kind_of(struct jp *c, const json_t *o, size_t i,
                      enum jp_kind *kind)
{
  const json_t *v = json_object_get(o, "op");
  const char *s = json_string_value(v);

  if (!v)
    return efail(&c->e, GQ_EINVAL, "operation %zu: missing 'op'", i);
  if (!s)
    return efail(&c->e, GQ_EINVAL, "operation %zu: 'op' must be a string", i);
  for (size_t k = 0; k < ARRAY_LEN(jp_kinds); k++) {
    if (strcmp(s, jp_kinds[k].name) == 0) {
      *kind = (enum jp_kind)k;
      return 0;
    }
  }
  return efail(&c->e, GQ_EINVAL, "operation %zu: unknown op '%.200s'", i, s);
}

/* Returns 1 if pointer a is a proper prefix of pointer b, i.e. b names a
 * location inside a (RFC 6902 section 4.4). */
static int ptr_inside(const char *a, const char *b)
{
  size_t n = strlen(a);

  return strncmp(a, b, n) == 0 && b[n] == '/';
}

/* Validates operation i and fills *op; checks only what needs no document. */
static int jp_parse_op(struct jp *c, const json_t *o, size_t i,
                       struct jp_op *op)
{
  int rc;

  if (!json_is_object(o))
    return efail(&c->e, GQ_EINVAL, "operation %zu: not an object", i);
  if ((rc = jp_kind_of(c, o, i, &op->kind)) != 0 ||
      (rc = jp_pointer(c, o, "path", i, &op->path)) != 0)
    return rc;
  if (jp_kinds[op->kind].needs_from &&
      (rc = jp_pointer(c, o, "from", i, &op->from)) != 0)
    return rc;
  op->value = json_object_get(o, "value");
  if (jp_kinds[op->kind].needs_value && !op->value)
    return efail(&c->e, GQ_EINVAL, "operation %zu: missing 'value'", i);
  if (op->kind == JP_MOVE && ptr_inside(op->from, op->path))
    return efail(&c->e, GQ_EINVAL,
                 "operation %zu: cannot move '%.200s' into its own child "
                 "'%.200s'",
                 i, op->from, op->path);
  if (op->kind == JP_REMOVE && op->path[0] == '\0')
    return efail(&c->e, GQ_EINVAL,
                 "operation %zu: cannot remove the whole document", i);
  return 0;
}

/* Validates the whole patch document. On success *ops is a new array of n
 * operations (caller frees) borrowing from 'doc'. */
static int jp_parse(struct jp *c, const json_t *doc, struct jp_op **ops,
                    size_t *n)
{
  struct jp_op *list;
  int rc = 0;

  if (!json_is_array(doc))
    return efail(&c->e, GQ_EINVAL, "patch must be a JSON array of operations");
  *n = json_array_size(doc);
  if (*n > GQ_PATCH_MAX_OPS)
    return efail(&c->e, GQ_ETOOBIG, "patch has %zu operations, limit %d", *n,
                 GQ_PATCH_MAX_OPS);
  list = gq_xcalloc(*n ? *n : 1, sizeof(*list));
  for (size_t i = 0; i < *n && rc == 0; i++)
    rc = jp_parse_op(c, json_array_get(doc, i), i, &list[i]);
  if (rc != 0) {
    free(list);
    return rc;
  }
  *ops = list;
  return 0;
}

/* Adds v as member 'tok' of 'parent', or replaces that member when
 * 'replace' is set. Takes ownership of v whatever the outcome. */
static int put_child(json_t *parent, const char *tok, json_t *v, int replace)
{
  size_t i;
  int rc = GQ_ENOTFOUND;

  if (json_is_object(parent) && (!replace || json_object_get(parent, tok)))
    /* Fails only for a key that is not UTF-8; v is released either way. */
    return json_object_set_new(parent, tok, v) == 0 ? 0 : GQ_EINVAL;
  if (json_is_array(parent))
    rc = arr_index(tok, json_array_size(parent), !replace, &i);
  if (rc != 0 || !json_is_array(parent)) {
    json_decref(v);
    return rc;
  }
  if (replace)
    json_array_set_new(parent, i, v);
  else
    json_array_insert_new(parent, i, v);
  return 0;
}

/* Puts v (taken) at 'path': RFC 6902 "add" (4.1), or "replace" (4.3) when
 * 'replace' is set. Refuses to nest the document past the depth cap. */
static int jp_put(json_t **doc, const char *path, json_t *v, int replace)
{
  json_t *parent;
  char *last;
  int rc;

  if (too_deep(v, GQ_PATCH_MAX_DEPTH - ptr_depth(path))) {
    json_decref(v);
    return GQ_ETOOBIG;
  }
  if (*path == '\0') { /* the root always exists, for add and replace */
    json_decref(*doc);
    *doc = v;
    return 0;
  }
  rc = ptr_parent(*doc, path, &parent, &last);
  if (rc == 0)
    rc = put_child(parent, last, v, replace);
  else
    json_decref(v);
  free(last);
  return rc;
}

/* Removes the value at the non-empty 'path' (RFC 6902 section 4.2). When
 * 'taken' is not NULL it receives a new reference to the removed value. */
static int jp_remove(json_t *doc, const char *path, json_t **taken)
{
  json_t *parent, *v = NULL;
  char *last;
  size_t i;
  int rc;

  rc = ptr_parent(doc, path, &parent, &last);
  if (rc == 0)
    rc = ptr_child(parent, last, &v);
  if (rc == 0 && taken)
    *taken = json_incref(v);
  if (rc == 0 && json_is_object(parent))
    json_object_del(parent, last);
  else if (rc == 0 && arr_index(last, json_array_size(parent), 0, &i) == 0)
    json_array_remove(parent, i);
  free(last);
  return rc;
}

/* Words a run-time failure of operation i at pointer 'ptr', which is the
 * operation's member 'what' ("path" or "from"). */
static int jp_fail_at(struct jp *c, int rc, size_t i, const char *what,
                      const char *ptr)
{
  switch (rc) {
  case GQ_ENOTFOUND:
    return efail(&c->e, rc, "operation %zu: %s '%.200s' does not exist", i,
                 what, ptr);
  case GQ_ETOOBIG:
    return efail(&c->e, rc,
                 "operation %zu: result would nest deeper than %d levels "
                 "at '%.200s'",
                 i, GQ_PATCH_MAX_DEPTH, ptr);
  case GQ_ESTATE:
    return efail(&c->e, rc, "operation %zu: test failed at '%.200s'", i, ptr);
  default:
    return efail(&c->e, rc, "operation %zu: invalid array index in %s '%.200s'",
                 i, what, ptr);
  }
}

/* RFC 6902 section 4.4: remove, then add the same value elsewhere. Moving a
 * location onto itself is allowed and changes nothing. */
static int jp_move(struct jp *c, const struct jp_op *op, size_t i)
{
  json_t *v;
  int rc;

  if (strcmp(op->from, op->path) == 0) {
    rc = ptr_lookup(c->doc, op->from, &v);
    return rc ? jp_fail_at(c, rc, i, "from", op->from) : 0;
  }
  if ((rc = jp_remove(c->doc, op->from, &v)) != 0)
    return jp_fail_at(c, rc, i, "from", op->from);
  if ((rc = jp_put(&c->doc, op->path, v, 0)) != 0)
    return jp_fail_at(c, rc, i, "path", op->path);
  return 0;
}

/* RFC 6902 section 4.5: add a deep copy of the value at "from". */
static int jp_copy(struct jp *c, const struct jp_op *op, size_t i)
{
  json_t *v;
  int rc;

  if ((rc = ptr_lookup(c->doc, op->from, &v)) != 0)
    return jp_fail_at(c, rc, i, "from", op->from);
  c->copied += count_values(v);
  if (c->copied > GQ_PATCH_MAX_COPIED)
    return efail(&c->e, GQ_ETOOBIG,
                 "operation %zu: copies more than %d values in total", i,
                 GQ_PATCH_MAX_COPIED);
  if ((rc = jp_put(&c->doc, op->path, json_deep_copy(v), 0)) != 0)
    return jp_fail_at(c, rc, i, "path", op->path);
  return 0;
}

/* RFC 6902 section 4.6; a missing location fails the test too. */
static int jp_test(struct jp *c, const struct jp_op *op, size_t i)
{
  json_t *v;
  int rc = ptr_lookup(c->doc, op->path, &v);

  if (rc == GQ_EINVAL)
    return jp_fail_at(c, rc, i, "path", op->path);
  if (rc != 0 || !same(v, op->value))
    return jp_fail_at(c, GQ_ESTATE, i, "path", op->path);
  return 0;
}

static int jp_apply(struct jp *c, const struct jp_op *op, size_t i)
{
  int rc;

  switch (op->kind) {
  case JP_ADD:
  case JP_REPLACE:
    rc = jp_put(&c->doc, op->path, json_deep_copy(op->value),
                op->kind == JP_REPLACE);
    break;
  case JP_REMOVE:
    rc = jp_remove(c->doc, op->path, NULL);
    break;
  case JP_MOVE:
    return jp_move(c, op, i);
  case JP_COPY:
    return jp_copy(c, op, i);
  default:
    return jp_test(c, op, i);
  }
  return rc ? jp_fail_at(c, rc, i, "path", op->path) : 0;
}

int gq_patch_json(const json_t *target, const json_t *ops, json_t **out,
                  char *err, size_t errlen)
{
  struct jp c = {.e = {err, errlen}};
  struct jp_op *list = NULL;
  size_t n = 0;
  int rc;

  if ((rc = begin(&c.e, target, ops, out)) != 0 ||
      (rc = jp_parse(&c, ops, &list, &n)) != 0)
    return rc;
  c.doc = json_deep_copy(target);
  for (size_t i = 0; i < n && rc == 0; i++)
    rc = jp_apply(&c, &list[i], i);
  free(list);
  if (rc != 0) {
    json_decref(c.doc);
    return rc;
  }
  *out = c.doc;
  return 0;
}

/* ---- merge patch (RFC 7386) and strategic merge patch ------------------ */

#define DIRECTIVE "$patch"
#define RETAIN_KEYS "$retainKeys"
#define SET_ORDER "$setElementOrder/"
#define DELETE_FROM "$deleteFromPrimitiveList/"

struct mrg {
  struct ebuf e;
  int strategic; /* 0: plain RFC 7386, no directives or list strategies */
};

/* Merge keys of the list fields strategicpatch merges, from the
 * patchMergeKey tags of k8s.io/api/core/v1 and meta/v1 types. A field may
 * have several candidates; the first one every patch element carries wins
 * (ContainerPort merges on containerPort, ServicePort on port). */
static const struct {
  const char *field, *key;
} smp_keys[] = {
    {"containers", "name"},
    {"initContainers", "name"},
    {"ephemeralContainers", "name"},
    {"volumes", "name"},
    {"env", "name"},
    {"imagePullSecrets", "name"},
    {"volumeMounts", "mountPath"},
    {"volumeDevices", "devicePath"},
    {"ports", "containerPort"},
    {"ports", "port"},
    {"conditions", "type"},
    {"ownerReferences", "uid"},
    {"hostAliases", "ip"},
    {"topologySpreadConstraints", "topologyKey"},
};

static int mrg_map(struct mrg *m, const json_t *orig, const json_t *patch,
                   json_t **out);
static int smp_list(struct mrg *m, const char *field, const json_t *orig,
                    const json_t *patch, json_t **out);

static int has_prefix(const char *s, const char *prefix)
{
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Returns 1 if every element of 'list' is an object that carries 'mk' or is
 * a "$patch" element. */
static int all_keyed(const json_t *list, const char *mk)
{
  size_t i;
  json_t *e;

  json_array_foreach(list, i, e) {
    if (!json_object_get(e, mk) && !json_object_get(e, DIRECTIVE))
      return 0;
  }
  return 1;
}

/* Returns the merge key for list field 'field' given the patch list, or
 * NULL when the list is to be replaced. */
static const char *smp_merge_key(const char *field, const json_t *list)
{
  for (size_t i = 0; field && i < ARRAY_LEN(smp_keys); i++)
    if (strcmp(smp_keys[i].field, field) == 0 &&
        all_keyed(list, smp_keys[i].key))
      return smp_keys[i].key;
  return NULL;
}

const char *gq_patch_merge_key(const char *field, const json_t *list)
{
  return json_is_array(list) ? smp_merge_key(field, list) : NULL;
}

/* Returns 1 if a and b are the same list element: equal merge key values
 * when mk is set, equal values otherwise. */
static int same_elem(const json_t *a, const json_t *b, const char *mk)
{
  const json_t *ka = mk ? json_object_get(a, mk) : a;
  const json_t *kb = mk ? json_object_get(b, mk) : b;

  return ka && kb && same(ka, kb);
}

/* Returns 1 if e is a list directive element ({"$patch": ...}). */
static int is_directive_elem(const json_t *e)
{
  return json_object_get(e, DIRECTIVE) != NULL;
}

/* Returns the index of the first element of 'list' that is the same
 * element as v, or NPOS. Directive elements never match, so a patch list
 * can serve as an order list as it is. 'list' may be NULL. */
static size_t elem_index(const json_t *list, const json_t *v, const char *mk)
{
  size_t i;
  json_t *e;

  json_array_foreach(list, i, e) {
    if (!is_directive_elem(e) && same_elem(e, v, mk))
      return i;
  }
  return NPOS;
}

/* Merges patch value pv (not null) for field 'field' onto orig (NULL when
 * absent), setting *out to a new value. */
static int mrg_value(struct mrg *m, const char *field, const json_t *orig,
                     const json_t *pv, json_t **out)
{
  if (json_is_object(pv))
    return mrg_map(m, orig, pv, out);
  if (m->strategic && json_is_array(pv))
    return smp_list(m, field, orig, pv, out);
  *out = json_deep_copy(pv);
  return 0;
}

static int mrg_put(struct mrg *m, json_t *res, const char *k, const json_t *ov,
                   const json_t *pv)
{
  json_t *nv;
  int rc = mrg_value(m, k, ov, pv, &nv);

  if (rc == 0)
    json_object_set_new(res, k, nv);
  return rc;
}

/* Returns 1 if key k is a directive, i.e. not a field, in this mode. */
static int is_directive(const struct mrg *m, const char *k)
{
  return m->strategic && k[0] == '$';
}

/* Returns 1 if k survives "$retainKeys" (always, without the directive). */
static int retained(const json_t *retain, const char *k)
{
  size_t i;
  json_t *s;

  if (!retain)
    return 1;
  json_array_foreach(retain, i, s) {
    if (strcmp(json_string_value(s), k) == 0)
      return 1;
  }
  return 0;
}

/* Fills res with the fields of orig (may be NULL) merged with those of
 * patch. Target keys keep their order; new keys follow in patch order. */
static int mrg_fields(struct mrg *m, json_t *res, const json_t *orig,
                      const json_t *patch, const json_t *retain)
{
  const char *k;
  json_t *v;
  int rc;

  json_object_foreach(ro(orig), k, v) {
    const json_t *pv = is_directive(m, k) ? NULL : json_object_get(patch, k);
    const json_t *ov = retained(retain, k) ? v : NULL;

    if (!pv) {
      if (ov)
        json_object_set_new(res, k, json_deep_copy(ov));
      continue;
    }
    if (!json_is_null(pv) && (rc = mrg_put(m, res, k, ov, pv)) != 0)
      return rc;
  }
  json_object_foreach(ro(patch), k, v) {
    if (is_directive(m, k) || json_is_null(v) || json_object_get(orig, k))
      continue;
    if ((rc = mrg_put(m, res, k, NULL, v)) != 0)
      return rc;
  }
  return 0;
}

/* Reads the map-level directives "$patch" and "$retainKeys" of 'patch'.
 * Returns 1 for "$patch": "delete", 0 to merge (with *orig cleared for
 * "replace"), or GQ_EINVAL. */
static int smp_map_directives(struct mrg *m, const json_t *patch,
                              const json_t **orig, const json_t **retain)
{
  const json_t *d = json_object_get(patch, DIRECTIVE);
  const char *s = json_string_value(d);
  size_t i;
  json_t *k;

  if (d && s && strcmp(s, "delete") == 0)
    return 1;
  if (d && s && strcmp(s, "replace") == 0)
    *orig = NULL;
  else if (d)
    return efail(&m->e, GQ_EINVAL,
                 "'$patch' in a map must be \"delete\" or \"replace\"");
  *retain = json_object_get(patch, RETAIN_KEYS);
  if (*retain && !json_is_array(*retain))
    return efail(&m->e, GQ_EINVAL, "'$retainKeys' must be a list of strings");
  json_array_foreach(*retain, i, k) {
    if (!json_is_string(k))
      return efail(&m->e, GQ_EINVAL,
                   "'$retainKeys' must be a list of strings");
  }
  return 0;
}

/* "$deleteFromPrimitiveList/<field>": removes the listed values from the
 * list 'field' of res, if it has one. */
static int smp_delete_from(struct mrg *m, json_t *res, const char *field,
                           const json_t *values)
{
  json_t *list = json_object_get(res, field);
  size_t i;

  if (!json_is_array(values))
    return efail(&m->e, GQ_EINVAL, "'%s%.200s' must be a list", DELETE_FROM,
                 field);
  for (i = json_array_size(list); i-- > 0;)
    if (elem_index(values, json_array_get(list, i), NULL) != NPOS)
      json_array_remove(list, i);
  return 0;
}

struct ord {
  size_t key;  /* sort key: position in the order list */
  size_t seq;  /* position in the list being sorted, for stability */
  size_t live; /* position in the live list, or NPOS */
  json_t *v;
};

static int ord_cmp(const void *pa, const void *pb)
{
  const struct ord *a = pa, *b = pb;

  if (a->key != b->key)
    return a->key < b->key ? -1 : 1;
  return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Appends the two sorted runs to res as strategicpatch's mergeSortedSlice()
 * does: take the live-only element first only when both elements are in the
 * live list and it comes first there. */
static void ord_interleave(json_t *res, const struct ord *s, size_t ns,
                           const struct ord *p, size_t np)
{
  size_t i = 0, j = 0;

  while (i < ns || j < np) {
    int left = i < ns && (j >= np || (s[i].live != NPOS && p[j].live != NPOS &&
                                      s[i].live < p[j].live));

    json_array_append(res, left ? s[i++].v : p[j++].v);
  }
}

/* Returns a new list holding the elements of 'list' ordered as
 * strategicpatch's normalizeElementOrder(): the elements named in 'order'
 * sorted by it, the others in live order, the two runs interleaved by their
 * positions in 'live' (the target's list, may be NULL). */
static json_t *smp_order(const json_t *list, const json_t *order,
                         const json_t *live, const char *mk)
{
  size_t n = json_array_size(list), np = 0, ns = 0, i;
  struct ord *p = gq_xcalloc(n + 1, sizeof(*p));
  struct ord *s = gq_xcalloc(n + 1, sizeof(*s));
  json_t *res = json_array(), *v;

  json_array_foreach(list, i, v) {
    size_t at = elem_index(order, v, mk), lv = elem_index(live, v, mk);

    if (at != NPOS)
      p[np++] = (struct ord){at, i, lv, v};
    else
      s[ns++] = (struct ord){lv, i, lv, v};
  }
  qsort(p, np, sizeof(*p), ord_cmp);
  qsort(s, ns, sizeof(*s), ord_cmp);
  ord_interleave(res, s, ns, p, np);
  free(p);
  free(s);
  return res;
}

/* "$setElementOrder/<field>": reorders the list 'field' of res. Dropped
 * when res has no such list or the order's elements can be matched neither
 * by merge key nor as primitives. */
static int smp_set_order(struct mrg *m, json_t *res, const json_t *orig,
                         const char *field, const json_t *order)
{
  json_t *list = json_object_get(res, field), *e;
  const char *mk = NULL;
  int composite = 0;
  size_t i;

  if (!json_is_array(order))
    return efail(&m->e, GQ_EINVAL, "'%s%.200s' must be a list", SET_ORDER,
                 field);
  if (!json_is_array(list) || json_array_size(order) == 0)
    return 0;
  json_array_foreach(order, i, e) {
    composite |= json_is_object(e) || json_is_array(e);
  }
  if (composite && !(mk = smp_merge_key(field, order)))
    return 0; /* objects we have no merge key for: cannot match them */
  json_object_set_new(res, field,
                      smp_order(list, order, json_object_get(orig, field), mk));
  return 0;
}

/* Applies the parallel-list directives of 'patch' to the merged map res:
 * deletions first, then ordering, so the order sees the final contents. */
static int smp_parallel_lists(struct mrg *m, json_t *res, const json_t *orig,
                              const json_t *patch)
{
  const char *k;
  json_t *v;
  int rc;

  json_object_foreach(ro(patch), k, v) {
    if (has_prefix(k, DELETE_FROM) &&
        (rc = smp_delete_from(m, res, k + strlen(DELETE_FROM), v)) != 0)
      return rc;
  }
  json_object_foreach(ro(patch), k, v) {
    if (has_prefix(k, SET_ORDER) &&
        (rc = smp_set_order(m, res, orig, k + strlen(SET_ORDER), v)) != 0)
      return rc;
  }
  return 0;
}

/* Merges the object patch onto orig (NULL or not an object: merged onto
 * {}), setting *out to a new object. */
static int mrg_map(struct mrg *m, const json_t *orig, const json_t *patch,
                   json_t **out)
{
  const json_t *retain = NULL;
  json_t *res;
  int rc = 0;

  if (!json_is_object(orig))
    orig = NULL;
  if (m->strategic && (rc = smp_map_directives(m, patch, &orig, &retain)) < 0)
    return rc;
  res = json_object();
  if (rc == 0) /* rc == 1: "$patch": "delete" leaves the map empty */
    rc = mrg_fields(m, res, orig, patch, retain);
  if (rc == 0 && m->strategic)
    rc = smp_parallel_lists(m, res, orig, patch);
  if (rc < 0) {
    json_decref(res);
    return rc;
  }
  *out = res;
  return 0;
}

/* A list without merge semantics: the patch's elements, each merged onto
 * nothing (which drops directives and nulls inside objects); "$patch"
 * elements are list directives and are dropped. */
static int smp_plain_list(struct mrg *m, const json_t *patch, json_t **out)
{
  json_t *res = json_array(), *e, *nv;
  size_t i;
  int rc;

  json_array_foreach(patch, i, e) {
    if (is_directive_elem(e))
      continue;
    if ((rc = mrg_value(m, NULL, NULL, e, &nv)) != 0) {
      json_decref(res);
      return rc;
    }
    json_array_append_new(res, nv);
  }
  *out = res;
  return 0;
}

/* Checks the "$patch" elements of the merged list 'field': each must say
 * "replace", or "delete" and carry the merge key (strategicpatch's
 * mergeSliceWithSpecialElements()). Sets *replace if one says "replace". */
static int smp_list_scan(struct mrg *m, const char *field, const json_t *patch,
                         const char *mk, int *replace)
{
  json_t *e;
  size_t i;

  *replace = 0;
  json_array_foreach(patch, i, e) {
    const char *s = json_string_value(json_object_get(e, DIRECTIVE));

    if (!is_directive_elem(e))
      continue;
    if (s && strcmp(s, "replace") == 0)
      *replace = 1;
    else if (!s || strcmp(s, "delete") != 0 || !json_object_get(e, mk))
      return efail(&m->e, GQ_EINVAL,
                   "list '%.200s' element %zu: '$patch' must be \"replace\", "
                   "or \"delete\" with merge key '%s'",
                   field, i, mk);
  }
  return 0;
}

/* Removes from res every element matched by a "$patch": "delete" element
 * of the patch list (smp_list_scan() has vetted them). */
static void smp_list_delete(json_t *res, const json_t *patch, const char *mk)
{
  json_t *e;
  size_t i, j;

  json_array_foreach(patch, i, e) {
    if (!is_directive_elem(e) || !json_object_get(e, mk))
      continue;
    for (j = json_array_size(res); j-- > 0;)
      if (same_elem(json_array_get(res, j), e, mk))
        json_array_remove(res, j);
  }
}

/* Merges each plain patch element into the first element of res with the
 * same key, or appends it (strategicpatch's
 * mergeSliceWithoutSpecialElements()). */
static int smp_list_merge(struct mrg *m, json_t *res, const json_t *patch,
                          const char *mk)
{
  json_t *pe, *nv;
  size_t i;
  int rc;

  json_array_foreach(patch, i, pe) {
    size_t at;

    if (is_directive_elem(pe))
      continue;
    at = elem_index(res, pe, mk);
    rc = mrg_map(m, at == NPOS ? NULL : json_array_get(res, at), pe, &nv);
    if (rc != 0)
      return rc;
    if (at == NPOS)
      json_array_append_new(res, nv);
    else
      json_array_set_new(res, at, nv);
  }
  return 0;
}

/* Merges list field 'field': by merge key when smp_keys knows the field
 * and the patch fits, wholesale replacement otherwise. */
static int smp_list(struct mrg *m, const char *field, const json_t *orig,
                    const json_t *patch, json_t **out)
{
  const char *mk = smp_merge_key(field, patch);
  json_t *res;
  int replace, rc;

  if (!mk)
    return smp_plain_list(m, patch, out);
  if ((rc = smp_list_scan(m, field, patch, mk, &replace)) != 0)
    return rc;
  if (replace)
    return smp_plain_list(m, patch, out);
  if (!json_is_array(orig))
    orig = NULL;
  res = orig ? json_deep_copy(orig) : json_array();
  smp_list_delete(res, patch, mk);
  rc = smp_list_merge(m, res, patch, mk);
  if (rc == 0)
    *out = smp_order(res, patch, orig, mk);
  json_decref(res);
  return rc;
}

int gq_patch_merge(const json_t *target, const json_t *patch, json_t **out,
                   char *err, size_t errlen)
{
  struct mrg m = {.e = {err, errlen}, .strategic = 0};
  int rc = begin(&m.e, target, patch, out);

  if (rc != 0)
    return rc;
  if (!json_is_object(patch)) { /* RFC 7386: a non-object replaces */
    *out = json_deep_copy(patch);
    return 0;
  }
  return mrg_map(&m, target, patch, out);
}

int gq_patch_strategic(const json_t *target, const json_t *patch, json_t **out,
                       char *err, size_t errlen)
{
  struct mrg m = {.e = {err, errlen}, .strategic = 1};
  int rc = begin(&m.e, target, patch, out);

  if (rc != 0)
    return rc;
  if (!json_is_object(patch))
    return efail(&m.e, GQ_EINVAL, "patch must be a JSON object");
  if (!json_is_object(target))
    return efail(&m.e, GQ_EINVAL, "target must be a JSON object");
  return mrg_map(&m, target, patch, out);
}
