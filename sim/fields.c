/* sim/fields.c - field sets and managedFields for server-side apply
 * (fields.h). The sets are JSON trees in FieldsV1's own vocabulary, so
 * that recording them is a conversion and not a translation; "." marks a
 * member everywhere inside, and only the wire form drops it from leaves. */
#include "sim/fields.h"

#include "api/patch.h"
#include "base/alloc.h"
#include "sim/dump.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEMBER "."

/* Longest field name and list element name the sets hold whole: longer
 * ones are cut at these lengths by field_child() and elem_name(), and a
 * create with such a name takes the general path (v1_of_create). */
#define MAX_FIELD 590
#define MAX_ELEM 1000

/* --- path elements --- */

enum list_kind { LIST_ATOMIC, LIST_KEYED, LIST_SET };

/* How the list under field is owned; *mk gets the merge key of a keyed
 * one. metadata.finalizers is the one set list (listType=set) we know. */
static enum list_kind kind_of(const char *field, const json_t *list,
                              const char **mk)
{
  size_t i;
  json_t *e;

  *mk = NULL;
  if (!json_is_array(list) || json_array_size(list) == 0)
    return LIST_ATOMIC;
  if (field && strcmp(field, "finalizers") == 0) {
    json_array_foreach(list, i, e)
      if (!json_is_string(e))
        return LIST_ATOMIC;
    return LIST_SET;
  }
  if (!(*mk = gq_patch_merge_key(field, list)))
    return LIST_ATOMIC;
  json_array_foreach(list, i, e)
    if (!json_is_object(e) || !json_object_get(e, *mk)) { /* "$patch" */
      *mk = NULL;
      return LIST_ATOMIC;
    }
  return LIST_KEYED;
}

/* The path element of list element e: "k:{...}" or "v:...". */
static void elem_name(const json_t *e, const char *mk, char *buf, size_t len)
{
  json_t *key = mk ? json_pack("{s:O}", mk, json_object_get(e, mk)) : NULL;
  char *s = json_dumps(mk ? key : e,
                       JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);

  snprintf(buf, len, "%s%s", mk ? "k:" : "v:", s ? s : "null");
  free(s);
  json_decref(key);
}

/* The node for path element pe below node, made when absent. */
static json_t *child(json_t *node, const char *pe)
{
  json_t *c = json_object_get(node, pe);

  if (!c) {
    c = json_object();
    json_object_set_new(node, pe, c);
  }
  return c;
}

static json_t *field_child(json_t *node, const char *name)
{
  char pe[600];

  snprintf(pe, sizeof(pe), "f:%s", name);
  return child(node, pe);
}

static void member(json_t *node)
{
  json_object_set_new(node, MEMBER, json_object());
}

/* Drops the children that hold no member, deepest first. */
static void tidy(json_t *node)
{
  const char *k;
  json_t *c;
  void *tmp;

  json_object_foreach_safe(node, tmp, k, c) {
    if (strcmp(k, MEMBER) == 0)
      continue;
    tidy(c);
    if (json_object_size(c) == 0)
      json_object_del(node, k);
  }
}

/* --- sets of values --- */

/* Adds the fields of v (the value at node) to node. With all, every node
 * below is a member (an added or removed subtree, as Compare sees it);
 * else only the leaves and list elements are (an applied configuration,
 * as ToFieldSet sees it). */
static void walk(const json_t *v, const char *field, json_t *node, int depth,
                 int all)
{
  int deep = depth < GQ_PATCH_MAX_DEPTH;
  const char *k, *mk;
  json_t *c;
  size_t i;
  enum list_kind lk;
  char pe[1024];

  if (all)
    member(node);
  if (deep && json_is_object(v) && (all || json_object_size(v))) {
    json_object_foreach((json_t *)v, k, c)
      walk(c, k, field_child(node, k), depth + 1, all);
    return;
  }
  if (!deep || (lk = kind_of(field, v, &mk)) == LIST_ATOMIC) {
    member(node);
    return;
  }
  json_array_foreach(v, i, c) {
    json_t *e;

    elem_name(c, mk, pe, sizeof(pe));
    member(e = child(node, pe));
    if (lk == LIST_KEYED)
      walk(c, NULL, e, depth + 1, all);
  }
}

static void walk_all(const json_t *v, const char *field, json_t *node,
                     int depth)
{
  walk(v, field, node, depth, 1);
}

json_t *gq_fields_of_config(const json_t *config)
{
  json_t *set = json_object();

  walk(config, NULL, set, 0, 0);
  json_object_del(set, MEMBER);
  tidy(set);
  return set;
}

static void diff(const json_t *a, const json_t *b, const char *field,
                 json_t *add, json_t *rem, int depth);

/* Compares two keyed or set lists element by element. */
static void diff_list(const json_t *a, const json_t *b, const char *mk,
                      json_t *add, json_t *rem, int depth)
{
  json_t *e, *f;
  size_t i, j;
  char pe[1024], pf[1024];

  json_array_foreach(b, i, e) {
    json_t *old = NULL;

    elem_name(e, mk, pe, sizeof(pe));
    json_array_foreach(a, j, f) {
      elem_name(f, mk, pf, sizeof(pf));
      if (strcmp(pe, pf) == 0) {
        old = f;
        break;
      }
    }
    if (!old)
      walk_all(mk ? e : NULL, NULL, child(add, pe), depth + 1);
    else if (mk && old != e && !json_equal(old, e))
      diff(old, e, NULL, child(add, pe), child(rem, pe), depth + 1);
  }
  json_array_foreach(a, i, f) {
    int kept = 0;

    elem_name(f, mk, pf, sizeof(pf));
    json_array_foreach(b, j, e) {
      elem_name(e, mk, pe, sizeof(pe));
      kept |= strcmp(pe, pf) == 0;
    }
    if (!kept)
      walk_all(mk ? f : NULL, NULL, child(rem, pf), depth + 1);
  }
}

static void diff(const json_t *a, const json_t *b, const char *field,
                 json_t *add, json_t *rem, int depth)
{
  const char *k, *mka, *mkb;
  json_t *c;
  enum list_kind la, lb;

  if (depth < GQ_PATCH_MAX_DEPTH && json_is_object(a) && json_is_object(b)) {
    json_object_foreach((json_t *)b, k, c) {
      const json_t *o = json_object_get(a, k);

      if (!o)
        walk_all(c, k, field_child(add, k), depth + 1);
      else if (o != c && !json_equal((json_t *)o, c)) /* equal: nothing */
        diff(o, c, k, field_child(add, k), field_child(rem, k), depth + 1);
    }
    json_object_foreach((json_t *)a, k, c)
      if (!json_object_get(b, k))
        walk_all(c, k, field_child(rem, k), depth + 1);
    return;
  }
  la = kind_of(field, a, &mka);
  lb = kind_of(field, b, &mkb);
  if (depth < GQ_PATCH_MAX_DEPTH && json_is_array(a) && json_is_array(b) &&
      (la != LIST_ATOMIC || lb != LIST_ATOMIC) &&
      (la == lb || !json_array_size(a) || !json_array_size(b)) &&
      (!mka || !mkb || strcmp(mka, mkb) == 0)) {
    diff_list(a, b, mkb ? mkb : mka, add, rem, depth);
    return;
  }
  if (json_equal((json_t *)a, (json_t *)b))
    return;
  if (json_typeof(a) != json_typeof(b))
    walk_all(b, field, add, depth);
  else
    member(add);
}

void gq_fields_diff(const json_t *old, const json_t *new, json_t **changed,
                    json_t **removed)
{
  json_t *empty = json_object();

  *changed = json_object();
  *removed = json_object();
  diff(old ? old : empty, new, NULL, *changed, *removed, 0);
  json_decref(empty);
  tidy(*changed);
  tidy(*removed);
}

void gq_fields_strip(json_t *set, int status_sub, int reset_status)
{
  static const char *const meta[] = {
      "f:name",       "f:namespace",     "f:uid",
      "f:creationTimestamp", "f:selfLink", "f:generation",
      "f:managedFields", "f:resourceVersion", "f:clusterName", NULL};
  json_t *m = json_object_get(set, "f:metadata");
  const char *k;
  json_t *c;
  void *tmp;

  json_object_del(set, MEMBER);
  json_object_del(set, "f:apiVersion");
  json_object_del(set, "f:kind");
  json_object_del(m, MEMBER);
  for (int i = 0; m && meta[i]; i++)
    json_object_del(m, meta[i]);
  if (status_sub) {
    json_object_foreach_safe(set, tmp, k, c)
      if (strcmp(k, "f:status") != 0)
        json_object_del(set, k);
  } else if (reset_status) {
    json_object_del(set, "f:status");
  }
  tidy(set);
}

/* --- set algebra --- */

void gq_fields_union(json_t *a, const json_t *b)
{
  const char *k;
  json_t *c;

  json_object_foreach((json_t *)b, k, c) {
    if (strcmp(k, MEMBER) == 0)
      member(a);
    else
      gq_fields_union(child(a, k), c);
  }
}

static void subtract(json_t *a, const json_t *b)
{
  const char *k;
  json_t *c, *x;

  json_object_foreach((json_t *)b, k, c) {
    if (strcmp(k, MEMBER) == 0)
      json_object_del(a, MEMBER);
    else if ((x = json_object_get(a, k)))
      subtract(x, c);
  }
}

void gq_fields_subtract(json_t *a, const json_t *b)
{
  subtract(a, b);
  tidy(a);
}

static void intersect(const json_t *a, const json_t *b, json_t *out)
{
  const char *k;
  json_t *c, *x;

  json_object_foreach((json_t *)a, k, c) {
    if (!(x = json_object_get(b, k)))
      continue;
    if (strcmp(k, MEMBER) == 0)
      member(out);
    else
      intersect(c, x, child(out, k));
  }
}

json_t *gq_fields_intersect(const json_t *a, const json_t *b)
{
  json_t *out = json_object();

  intersect(a, b, out);
  tidy(out);
  return out;
}

int gq_fields_empty(const json_t *s)
{
  const char *k;
  json_t *c;

  json_object_foreach((json_t *)s, k, c)
    if (strcmp(k, MEMBER) == 0 || !gq_fields_empty(c))
      return 0;
  return 1;
}

/* --- objects --- */

/* The index of obj's list element named pe, or -1. */
static long find_elem(const json_t *list, const char *pe)
{
  json_t *e;
  size_t i;
  char name[1024];

  json_array_foreach(list, i, e) {
    const char *mk = NULL;

    if (pe[0] == 'k') { /* the key's field name is the JSON's first key */
      json_t *key = json_loads(pe + 2, 0, NULL);
      const char *kn = json_object_iter_key(json_object_iter(key));

      mk = kn && json_object_get(e, kn) ? kn : NULL;
      if (mk)
        elem_name(e, mk, name, sizeof(name));
      json_decref(key);
      if (!mk)
        continue;
    } else {
      elem_name(e, NULL, name, sizeof(name));
    }
    if (strcmp(name, pe) == 0)
      return (long)i;
  }
  return -1;
}

void gq_fields_remove(json_t *obj, const json_t *set, const json_t *keep)
{
  const char *k;
  json_t *c, *v;

  json_object_foreach((json_t *)set, k, c) {
    const json_t *kc = json_object_get(keep, k);
    int whole = json_object_get(c, MEMBER) && (!kc || gq_fields_empty(kc));
    long i;

    if (strncmp(k, "f:", 2) == 0 && json_is_object(obj) &&
        (v = json_object_get(obj, k + 2))) {
      if (whole)
        json_object_del(obj, k + 2);
      else
        gq_fields_remove(v, c, kc);
    } else if ((k[0] == 'k' || k[0] == 'v') && k[1] == ':' &&
               json_is_array(obj) && (i = find_elem(obj, k)) >= 0) {
      if (whole)
        json_array_remove(obj, (size_t)i);
      else
        gq_fields_remove(json_array_get(obj, (size_t)i), c, kc);
    }
  }
}

static int cmp_str(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* node's keys, sorted as FieldsV1 sorts them ("." first); free() it. */
static const char **sorted_keys(const json_t *node, size_t *n)
{
  const char **keys = malloc((json_object_size(node) + 1) * sizeof(*keys));
  const char *k;
  json_t *c;

  *n = 0;
  json_object_foreach((json_t *)node, k, c)
    keys[(*n)++] = k;
  qsort(keys, *n, sizeof(*keys), cmp_str);
  return keys;
}

/* The wire form of node: keys sorted, "." only beside children. */
static json_t *to_v1(const json_t *node)
{
  size_t n;
  const char **keys = sorted_keys(node, &n);
  json_t *out = json_object();

  for (size_t i = 0; i < n; i++) {
    if (strcmp(keys[i], MEMBER) != 0)
      json_object_set_new(out, keys[i],
                          to_v1(json_object_get(node, keys[i])));
    else if (n > 1)
      json_object_set_new(out, MEMBER, json_object());
  }
  free(keys);
  return out;
}

json_t *gq_fields_to_v1(const json_t *set)
{
  return to_v1(set);
}

static void from_v1(json_t *node)
{
  const char *k;
  json_t *c;

  json_object_foreach(node, k, c) {
    if (strcmp(k, MEMBER) == 0 || !json_is_object(c))
      continue;
    if (json_object_size(c) == 0)
      member(c);
    else
      from_v1(c);
  }
}

json_t *gq_fields_from_v1(const json_t *v1)
{
  json_t *out = json_is_object(v1) ? json_deep_copy(v1) : json_object();

  from_v1(out);
  json_object_del(out, MEMBER);
  return out;
}

/* Copies in up to stop (or its end), without non-printable bytes, at most
 * 128 bytes; bytes >= 0x80 go too unless the copy is valid UTF-8 (a
 * manager is a JSON string). */
static const char *clean(const char *in, int stop, char *buf, size_t len)
{
  size_t n = 0;
  json_t *t;

  for (; in && *in && *in != stop && n < 128 && n + 1 < len; in++)
    if ((unsigned char)*in >= 0x20 && *in != 0x7f)
      buf[n++] = *in;
  if (!len)
    return buf;
  buf[n] = '\0';
  if ((t = json_string(buf))) {
    json_decref(t);
    return buf;
  }
  for (size_t i = n = 0; buf[i]; i++)
    if ((unsigned char)buf[i] < 0x80)
      buf[n++] = buf[i];
  buf[n] = '\0';
  return buf;
}

const char *gq_fields_manager_from_ua(const char *ua, char *buf, size_t len)
{
  return clean(ua, '/', buf, len);
}

const char *gq_fields_manager(const char *field_manager, const char *ua,
                              char *buf, size_t len)
{
  if (field_manager && *field_manager)
    return clean(field_manager, '\0', buf, len);
  return clean(ua, '/', buf, len);
}

/* --- managedFields entries --- */

static const char *str(const json_t *e, const char *key)
{
  const char *v = json_string_value(json_object_get(e, key));

  return v ? v : "";
}

/* 1 if entry e is op's own: the same manager, operation and subresource,
 * and for an Update the same apiVersion (BuildManagerIdentifier leaves
 * the apiVersion out of an applier's identity). */
static int is_own(const json_t *e, const struct gq_fields_op *op)
{
  return strcmp(str(e, "manager"), op->manager) == 0 &&
         strcmp(str(e, "operation"), op->apply ? "Apply" : "Update") == 0 &&
         strcmp(str(e, "subresource"), op->subresource) == 0 &&
         (op->apply || strcmp(str(e, "apiVersion"), op->api_version) == 0);
}

json_t *gq_fields_owned(const json_t *managed, const struct gq_fields_op *op)
{
  json_t *e;
  size_t i;

  json_array_foreach(managed, i, e)
    if (is_own(e, op))
      return gq_fields_from_v1(json_object_get(e, "fieldsV1"));
  return NULL;
}

json_t *gq_fields_others(const json_t *managed, const struct gq_fields_op *op)
{
  json_t *all = json_object(), *e, *set;
  size_t i;

  json_array_foreach(managed, i, e) {
    if (is_own(e, op))
      continue;
    set = gq_fields_from_v1(json_object_get(e, "fieldsV1"));
    gq_fields_union(all, set);
    json_decref(set);
  }
  return all;
}

/* How a conflict names a manager (the apiserver's printManager). */
static void display(const json_t *e, char *buf, size_t len)
{
  json_t *name = json_string(str(e, "manager"));
  char *m = json_dumps(name, JSON_ENCODE_ANY); /* Go's %q, near enough */
  size_t off = (size_t)snprintf(buf, len, "%s", m ? m : "\"\"");

  free(m);
  json_decref(name);
  if (*str(e, "subresource") && off < len)
    off += (size_t)snprintf(buf + off, len - off,
                            " with subresource \"%s\"", str(e, "subresource"));
  if (strcmp(str(e, "operation"), "Update") == 0 && off < len)
    snprintf(buf + off, len - off, " using %s", str(e, "apiVersion"));
}

/* A value inside a path, as structured-merge-diff's value.ToString. */
static void value_str(const json_t *v, char *buf, size_t len)
{
  char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);

  snprintf(buf, len, "%s", s ? s : "null");
  free(s);
}

/* A path element as fieldpath.PathElement.String(). */
static void elem_str(const char *pe, char *buf, size_t len)
{
  json_t *v = json_loads(pe + 2, JSON_DECODE_ANY, NULL);
  char val[512];

  if (pe[0] == 'f') {
    snprintf(buf, len, ".%s", pe + 2);
  } else if (pe[0] == 'k' && json_is_object(v)) {
    const char *k;
    json_t *c;
    size_t off = (size_t)snprintf(buf, len, "[");
    int first = 1;

    json_object_foreach(v, k, c) {
      value_str(c, val, sizeof(val));
      if (off < len)
        off += (size_t)snprintf(buf + off, len - off, "%s%s=%s",
                                first ? "" : ",", k, val);
      first = 0;
    }
    if (off < len)
      snprintf(buf + off, len - off, "]");
  } else {
    value_str(v, val, sizeof(val));
    snprintf(buf, len, "[=%s]", val);
  }
  json_decref(v);
}

/* Appends {"manager": who, "field": path} for every member below node, in
 * sorted order (FieldsV1's: "." first, then the elements). */
static void members(const json_t *node, char *path, size_t off, size_t len,
                    const char *who, json_t *out)
{
  size_t n, i;
  const char **keys = sorted_keys(node, &n);

  for (i = 0; i < n; i++) {
    char pe[1024];

    if (strcmp(keys[i], MEMBER) == 0) {
      json_array_append_new(out, json_pack("{s:s, s:s}", "manager", who,
                                           "field", path));
      continue;
    }
    elem_str(keys[i], pe, sizeof(pe));
    snprintf(path + off, len - off, "%s", pe);
    members(json_object_get(node, keys[i]), path,
            off + strlen(path + off), len, who, out);
    path[off] = '\0';
  }
  free(keys);
}

static int cmp_manager(const void *a, const void *b)
{
  return strcmp(str(*(json_t *const *)a, "manager"),
                str(*(json_t *const *)b, "manager"));
}

json_t *gq_fields_conflicts(const json_t *managed,
                            const struct gq_fields_op *op,
                            const json_t *changed)
{
  json_t *out = json_array(), *e;
  size_t n = json_array_size(managed), i;
  json_t **sorted = malloc((n ? n : 1) * sizeof(*sorted));

  for (i = 0; i < n; i++)
    sorted[i] = json_array_get(managed, i);
  qsort(sorted, n, sizeof(*sorted), cmp_manager);
  for (i = 0; i < n; i++) {
    json_t *set, *both;
    char who[512], path[4096] = "";

    e = sorted[i];
    if (is_own(e, op))
      continue;
    set = gq_fields_from_v1(json_object_get(e, "fieldsV1"));
    both = gq_fields_intersect(set, changed);
    display(e, who, sizeof(who));
    members(both, path, 0, sizeof(path), who, out);
    json_decref(both);
    json_decref(set);
  }
  free(sorted);
  if (json_array_size(out))
    return out;
  json_decref(out);
  return NULL;
}

json_t *gq_fields_conflict_causes(const json_t *conflicts, char *msg,
                                  size_t len)
{
  json_t *causes = json_array(), *c;
  size_t n = json_array_size(conflicts), i, off;
  const char *last = "";

  json_array_foreach(conflicts, i, c) {
    char m[600];

    snprintf(m, sizeof(m), "conflict with %s", str(c, "manager"));
    json_array_append_new(causes,
                          json_pack("{s:s, s:s, s:s}", "reason",
                                    "FieldManagerConflict", "message", m,
                                    "field", str(c, "field")));
  }
  if (n == 1) {
    snprintf(msg, len, "Apply failed with 1 conflict: conflict with %s: %s",
             str(json_array_get(conflicts, 0), "manager"),
             str(json_array_get(conflicts, 0), "field"));
    return causes;
  }
  off = (size_t)snprintf(msg, len, "Apply failed with %zu conflicts: ", n);
  json_array_foreach(conflicts, i, c) {
    if (off < len && strcmp(last, str(c, "manager")) != 0)
      off += (size_t)snprintf(msg + off, len - off, "%sconflicts with %s:",
                              i ? "\n" : "", str(c, "manager"));
    last = str(c, "manager");
    if (off < len)
      off += (size_t)snprintf(msg + off, len - off, "\n- %s",
                              str(c, "field"));
  }
  return causes;
}

static json_t *v1_shared(const json_t *set);

static json_t *entry(const json_t *from, const char *time, const json_t *set)
{
  json_t *e = json_pack("{s:s, s:s, s:s}", "manager", str(from, "manager"),
                        "operation", str(from, "operation"), "apiVersion",
                        str(from, "apiVersion"));

  json_object_set_new(e, "time", json_string(time));
  json_object_set_new(e, "fieldsType", json_string("FieldsV1"));
  json_object_set_new(e, "fieldsV1", v1_shared(set));
  if (*str(from, "subresource"))
    json_object_set_new(e, "subresource",
                        json_string(str(from, "subresource")));
  return e;
}

static int cmp_entry(const void *pa, const void *pb)
{
  static const char *const keys[] = {"operation", "time", "manager",
                                     "apiVersion", "subresource"};
  const json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;

  for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
    int c = strcmp(str(a, keys[i]), str(b, keys[i]));

    if (c)
      return c;
  }
  return 0;
}

/* Sorts the entries of arr in place. */
static void sort_entries(json_t *arr)
{
  size_t n = json_array_size(arr), i;
  json_t **v = malloc((n ? n : 1) * sizeof(*v));

  for (i = 0; i < n; i++)
    v[i] = json_incref(json_array_get(arr, i));
  qsort(v, n, sizeof(*v), cmp_entry);
  json_array_clear(arr);
  for (i = 0; i < n; i++)
    json_array_append_new(arr, v[i]);
  free(v);
}

/* 1 if the wire-form (FieldsV1) node n is a member itself: a leaf {} or a
 * node with "." beside its children. */
static int v1_member(const json_t *n)
{
  return json_object_size(n) == 0 || json_object_get(n, MEMBER);
}

/* 1 if some member of set is a member of the FieldsV1 tree v1: the
 * entry that v1 is would lose something to set. No copy, no allocation. */
static int v1_meets(const json_t *v1, const json_t *set)
{
  const char *k;
  json_t *c, *x;

  json_object_foreach((json_t *)set, k, c) {
    if (strcmp(k, MEMBER) == 0) {
      if (v1_member(v1))
        return 1;
    } else if ((x = json_object_get(v1, k)) && v1_meets(x, c)) {
      return 1;
    }
  }
  return 0;
}

/* 1 if every member of set is a member of the FieldsV1 tree v1 (v1 ⊇
 * set): an Update entry that already owns what its write changed keeps its
 * fieldsV1 as it is. */
static int v1_covers(const json_t *v1, const json_t *set)
{
  const char *k;
  json_t *c, *x;

  json_object_foreach((json_t *)set, k, c) {
    if (strcmp(k, MEMBER) == 0) {
      if (!v1_member(v1))
        return 0;
    } else if (!(x = json_object_get(v1, k)) || !v1_covers(x, c)) {
      return 0;
    }
  }
  return 1;
}

/* op's entry with fieldsV1 v1 (a new reference is taken) and op's time. */
static json_t *own_entry(const struct gq_fields_op *op, json_t *v1)
{
  json_t *e = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "manager",
                        op->manager, "operation",
                        op->apply ? "Apply" : "Update", "apiVersion",
                        op->api_version, "time", op->time, "fieldsType",
                        "FieldsV1", "fieldsV1", v1);

  if (*op->subresource)
    json_object_set_new(e, "subresource", json_string(op->subresource));
  return e;
}

/* op's new entry, or NULL when it owns nothing: an Apply owns applied; an
 * Update its own old set (own: its entry, NULL if none) plus changed; both
 * less removed. An Update that changed only what it owned and removed
 * nothing it owned keeps own's fieldsV1 (shared, not rebuilt). */
static json_t *next_own(const json_t *own, const struct gq_fields_op *op,
                        const json_t *changed, const json_t *removed,
                        const json_t *applied)
{
  const json_t *v1 = json_object_get(own, "fieldsV1");
  json_t *mine, *e = NULL;

  if (!applied && v1 && v1_covers(v1, changed) && !v1_meets(v1, removed))
    return json_object_size(v1) ? own_entry(op, json_incref((json_t *)v1))
                                : NULL;
  if (applied)
    mine = json_deep_copy(applied);
  else if (v1)
    mine = gq_fields_from_v1(v1);
  else
    mine = json_object();
  if (!applied)
    gq_fields_union(mine, changed);
  gq_fields_subtract(mine, removed);
  if (!gq_fields_empty(mine))
    e = own_entry(op, v1_shared(mine));
  json_decref(mine);
  return e;
}

json_t *gq_fields_record(const json_t *managed, const struct gq_fields_op *op,
                         const json_t *changed, const json_t *removed,
                         const json_t *applied)
{
  json_t *out = json_array(), *e, *mine;
  const json_t *own = NULL;
  json_t *taken = applied ? gq_fields_intersect(changed, applied)
                          : json_incref((json_t *)changed);
  size_t i;

  json_array_foreach(managed, i, e) {
    const json_t *v1 = json_object_get(e, "fieldsV1");
    json_t *set;

    if (is_own(e, op)) {
      own = e;
      continue;
    }
    if (!v1_meets(v1, taken) && !v1_meets(v1, removed)) {
      /* nothing taken from it: kept as it is (shared) */
      if (json_object_size(v1))
        json_array_append(out, e);
      continue;
    }
    set = gq_fields_from_v1(v1);
    gq_fields_subtract(set, taken);
    gq_fields_subtract(set, removed);
    if (!gq_fields_empty(set))
      json_array_append_new(out, entry(e, str(e, "time"), set));
    json_decref(set);
  }
  if ((mine = next_own(own, op, changed, removed, applied)))
    json_array_append_new(out, mine);
  json_decref(taken);
  sort_entries(out);
  return out;
}

/* --- a create's fieldsV1 in one pass, interned --- */

/* The FieldsV1 texts of creates seen so far and their trees, shared by
 * every object whose field set is the same (GpuJobs and pods of one shape
 * mostly are). A fixed open-addressing table that stops taking new texts
 * when three quarters full; its trees are never changed nor freed. */
#define INTERN_SLOTS 4096
static struct {
  char *text;
  size_t len;
  uint64_t hash;
  json_t *v1;
} interned[INTERN_SLOTS];
static size_t n_interned;
/* The same entries by the address of their tree (index + 1; 0 = free),
 * for gq_fields_v1_text(). */
static size_t by_tree[INTERN_SLOTS];

static size_t tree_slot(const json_t *v1)
{
  return (size_t)(((uintptr_t)v1 >> 4) * 11400714819323198485ULL %
                  INTERN_SLOTS);
}

const char *gq_fields_v1_text(const json_t *v1, size_t *len)
{
  for (size_t i = tree_slot(v1); by_tree[i]; i = (i + 1) % INTERN_SLOTS)
    if (interned[by_tree[i] - 1].v1 == v1) {
      *len = interned[by_tree[i] - 1].len;
      return interned[by_tree[i] - 1].text;
    }
  return NULL;
}

static uint64_t fnv1a(const char *s, size_t n)
{
  uint64_t h = 1469598103934665603ULL;

  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
  return h;
}

/* The tree of FieldsV1 text t (a new reference; shared when interned). */
static json_t *intern(const char *t, size_t n)
{
  uint64_t h = fnv1a(t, n);
  size_t i = (size_t)(h % INTERN_SLOTS), j;
  json_t *v1;

  for (; interned[i].text; i = (i + 1) % INTERN_SLOTS)
    if (interned[i].hash == h && interned[i].len == n &&
        memcmp(interned[i].text, t, n) == 0)
      return json_incref(interned[i].v1);
  if (!(v1 = json_loadb(t, n, 0, NULL)))
    return NULL;
  if (n_interned < INTERN_SLOTS / 4 * 3) {
    interned[i].text = gq_xmalloc(n);
    memcpy(interned[i].text, t, n);
    interned[i].len = n;
    interned[i].hash = h;
    interned[i].v1 = json_incref(v1);
    n_interned++;
    for (j = tree_slot(v1); by_tree[j]; j = (j + 1) % INTERN_SLOTS)
      ;
    by_tree[j] = i + 1;
  }
  return v1;
}

/* The FieldsV1 form of set as a shared tree: the interned one when a tree
 * of the same text exists (or is taken in now), else a new one. New
 * reference either way; never change it. */
static json_t *v1_shared(const json_t *set)
{
  json_t *v1 = gq_fields_to_v1(set), *in;
  size_t n;
  char *t = gq_sim_dumps(v1, &n);

  in = t ? intern(t, n) : NULL;
  free(t);
  if (!in)
    return v1;
  json_decref(v1);
  return in;
}

/* Writes the JSON string "pre" + name (escaped). */
static void put_key(struct gq_sim_text *t, const char *pre, const char *name)
{
  gq_sim_text_put(t, "\"", 1);
  gq_sim_text_put(t, pre, strlen(pre));
  gq_sim_text_escaped(t, name, strlen(name));
  gq_sim_text_put(t, "\"", 1);
}

static int cmp_pair(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int v1_member_text(struct gq_sim_text *t, const json_t *v,
                          const char *field, int depth);

/* Writes ",\"f:k\":{...}" for each key of map (sorted), each a member
 * node (v1_member_text), skipping the names in skip (NULL-terminated, may
 * be NULL); *any tells whether one was written. -1 when the fast path
 * cannot say. */
static int v1_fields_text(struct gq_sim_text *t, const json_t *map,
                          const char *const *skip, int depth, int *any)
{
  size_t n;
  const char **keys = sorted_keys(map, &n);
  int rc = 0;

  for (size_t i = 0; i < n && rc == 0; i++) {
    int skipped = 0;

    for (int j = 0; skip && skip[j]; j++)
      skipped |= strcmp(keys[i], skip[j]) == 0;
    if (skipped)
      continue;
    if (strlen(keys[i]) > MAX_FIELD) {
      rc = -1;
      break;
    }
    gq_sim_text_put(t, ",", *any ? 1 : 0);
    *any = 1;
    put_key(t, "f:", keys[i]);
    gq_sim_text_put(t, ":", 1);
    rc = v1_member_text(t, json_object_get(map, keys[i]), keys[i], depth);
  }
  free(keys);
  return rc;
}

/* Writes the list elements of a keyed or set list, sorted by name. */
static int v1_elems_text(struct gq_sim_text *t, const json_t *list,
                         const char *mk, int depth)
{
  size_t n = json_array_size(list), i;
  struct { char *name; const json_t *e; } *el = gq_xcalloc(n, sizeof(*el));
  char pe[MAX_ELEM + 24];
  int rc = 0;

  for (i = 0; i < n; i++) {
    el[i].e = json_array_get(list, i);
    elem_name(el[i].e, mk, pe, sizeof(pe));
    el[i].name = gq_xstrdup(pe);
    if (strlen(pe) > MAX_ELEM)
      rc = -1;
  }
  qsort(el, n, sizeof(*el), cmp_pair);
  for (i = 0; i < n && rc == 0; i++) {
    if (i && strcmp(el[i].name, el[i - 1].name) == 0) {
      rc = -1; /* two elements, one member: the general path unites them */
      break;
    }
    gq_sim_text_put(t, ",", 1);
    put_key(t, "", el[i].name);
    gq_sim_text_put(t, ":", 1);
    if (mk)
      rc = v1_member_text(t, el[i].e, NULL, depth + 1);
    else
      gq_sim_text_put(t, "{}", 2);
  }
  for (i = 0; i < n; i++)
    free(el[i].name);
  free(el);
  return rc;
}

/* Writes the FieldsV1 of a member node holding v, as walk_all() makes it
 * and to_v1() writes it: {} for a leaf, else "." and the children. */
static int v1_member_text(struct gq_sim_text *t, const json_t *v,
                          const char *field, int depth)
{
  const char *mk;
  enum list_kind lk;
  int any = 1, rc;

  if (depth < GQ_PATCH_MAX_DEPTH && json_is_object(v) && json_object_size(v)) {
    gq_sim_text_put(t, "{\".\":{}", 7);
    rc = v1_fields_text(t, v, NULL, depth + 1, &any);
    gq_sim_text_put(t, "}", 1);
    return rc;
  }
  if (depth >= GQ_PATCH_MAX_DEPTH || json_is_object(v) ||
      (lk = kind_of(field, v, &mk)) == LIST_ATOMIC) {
    gq_sim_text_put(t, "{}", 2);
    return 0;
  }
  gq_sim_text_put(t, "{\".\":{}", 7);
  rc = v1_elems_text(t, v, lk == LIST_KEYED ? mk : NULL, depth);
  gq_sim_text_put(t, "}", 1);
  return rc;
}

/* The server-owned metadata fields no entry records (gq_fields_strip()). */
static const char *const server_meta[] = {
    "name", "namespace", "uid", "creationTimestamp", "selfLink",
    "generation", "managedFields", "resourceVersion", "clusterName", NULL};

/* The tree of one part of a create's FieldsV1 from its text in t (then
 * emptied): shared (interned) unless share is 0; NULL if it does not
 * parse. */
static json_t *part_tree(struct gq_sim_text *t, int share)
{
  json_t *v = share ? intern(t->p, t->len) : json_loadb(t->p, t->len, 0, NULL);

  t->len = 0;
  return v;
}

/* Sets node's "f:<k>" to part v (taken); -1 when v is NULL. */
static int set_part(json_t *node, const char *k, json_t *v)
{
  char pe[MAX_FIELD + 8];

  if (!v)
    return -1;
  snprintf(pe, sizeof(pe), "f:%s", k);
  json_object_set_new(node, pe, v);
  return 0;
}

/* The children of metadata, each its own part: what most objects of a
 * kind share (labels, annotations, finalizers of one shape) is shared;
 * ownerReferences is not (its elements are keyed by the owner's uid, new
 * for nearly every object: it would only fill the table). Server-owned
 * fields are skipped. */
static int v1_meta_parts(json_t *node, const json_t *meta,
                         struct gq_sim_text *t)
{
  size_t n;
  const char **keys = sorted_keys(meta, &n);
  int rc = 0;

  for (size_t i = 0; i < n && rc == 0; i++) {
    int skipped = 0;

    for (int j = 0; server_meta[j]; j++)
      skipped |= strcmp(keys[i], server_meta[j]) == 0;
    if (skipped)
      continue;
    if (strlen(keys[i]) > MAX_FIELD ||
        v1_member_text(t, json_object_get(meta, keys[i]), keys[i], 2) != 0)
      rc = -1;
    else
      rc = set_part(node, keys[i],
                    part_tree(t, strcmp(keys[i], "ownerReferences") != 0));
  }
  free(keys);
  return rc;
}

/* One top-level member k (value v) of a create's FieldsV1 into root: a
 * built-in's spec or status and any metadata are no members themselves
 * (the Go type's zero value has them), everything else is. */
static int v1_top_part(json_t *root, const char *k, const json_t *v,
                       int builtin, struct gq_sim_text *t)
{
  json_t *m;
  int any = 0;

  if (strlen(k) > MAX_FIELD)
    return -1;
  if (!strcmp(k, "metadata")) {
    if (!json_is_object(v))
      return -1;
    m = json_object();
    if (v1_meta_parts(m, v, t) != 0) {
      json_decref(m);
      return -1;
    }
    if (json_object_size(m))
      return set_part(root, k, m);
    json_decref(m);
    return 0;
  }
  if (builtin && (!strcmp(k, "spec") || !strcmp(k, "status")) &&
      json_is_object(v)) {
    gq_sim_text_put(t, "{", 1);
    if (v1_fields_text(t, v, NULL, 2, &any) != 0)
      return -1;
    gq_sim_text_put(t, "}", 1);
    if (!any) {
      t->len = 0;
      return 0;
    }
    return set_part(root, k, part_tree(t, 1));
  }
  if (v1_member_text(t, v, k, 1) != 0)
    return -1;
  return set_part(root, k, part_tree(t, 1));
}

/* A create's FieldsV1 in one pass over obj, built of shared parts (each
 * top-level member, and each child of metadata, is written as FieldsV1
 * text and interned), or NULL when a name is too long or two list elements
 * share one (the general path then). */
static json_t *v1_of_create(const json_t *obj, int builtin, int reset_status)
{
  struct gq_sim_text t = {0};
  size_t n;
  const char **keys = sorted_keys(obj, &n);
  json_t *root = json_object();
  int rc = 0;

  for (size_t i = 0; i < n && rc == 0; i++) {
    const char *k = keys[i];

    if (strcmp(k, "apiVersion") && strcmp(k, "kind") &&
        !(reset_status && !strcmp(k, "status")))
      rc = v1_top_part(root, k, json_object_get(obj, k), builtin, &t);
  }
  free(keys);
  free(t.p);
  if (rc == 0)
    return root;
  json_decref(root);
  return NULL;
}

json_t *gq_fields_record_create_by_diff(const json_t *obj,
                                        const struct gq_fields_op *op,
                                        int builtin, int reset_status)
{
  json_t *zero = builtin ? json_pack("{s:{}, s:{}, s:{}}", "metadata",
                                     "spec", "status")
                         : json_object();
  json_t *changed, *removed, *empty = json_object(), *mf;

  gq_fields_diff(zero, obj, &changed, &removed);
  gq_fields_strip(changed, 0, reset_status);
  mf = gq_fields_record(NULL, op, changed, empty, NULL);
  json_decref(zero);
  json_decref(changed);
  json_decref(removed);
  json_decref(empty);
  return mf;
}

json_t *gq_fields_record_create(const json_t *obj,
                                const struct gq_fields_op *op, int builtin,
                                int reset_status)
{
  json_t *v1 = op->apply ? NULL : v1_of_create(obj, builtin, reset_status);
  json_t *mf;

  if (!v1)
    return gq_fields_record_create_by_diff(obj, op, builtin, reset_status);
  mf = json_array();
  if (json_object_size(v1))
    json_array_append_new(mf, own_entry(op, json_incref(v1)));
  json_decref(v1);
  return mf;
}

int gq_fields_same_but_time(const json_t *a, const json_t *b)
{
  size_t n = json_array_size(a), i;

  if (!json_is_array(a) || !json_is_array(b) || n != json_array_size(b))
    return json_equal((json_t *)a, (json_t *)b);
  for (i = 0; i < n; i++) {
    json_t *x = json_copy(json_array_get(a, i));
    json_t *y = json_copy(json_array_get(b, i));
    int eq;

    json_object_del(x, "time");
    json_object_del(y, "time");
    eq = json_equal(x, y);
    json_decref(x);
    json_decref(y);
    if (!eq)
      return 0;
  }
  return 1;
}
