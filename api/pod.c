/* api/pod.c - Pod and PodSpec decoding (see pod.h). */
#include "api/pod.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONTAINERS 256
#define MAX_RESOURCES 64 /* distinct resource names per pod */

/* A small set of (resource name -> amount), in first-seen order. */
struct resset {
  struct gq_res r[MAX_RESOURCES];
  size_t n;
};

static int64_t *res_slot(struct gq_dec *d, struct resset *s, const char *name,
                         const char *path)
{
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->r[i].name, name) == 0)
      return &s->r[i].value;
  if (s->n == MAX_RESOURCES) {
    gq_dec_fail(d, path, "must name at most %d distinct resources",
                MAX_RESOURCES);
    return NULL;
  }
  s->r[s->n].name = name;
  s->r[s->n].value = 0;
  return &s->r[s->n++].value;
}

/* dst += src (max_mode 0) or dst = max(dst, src) per resource. */
static void res_merge(struct gq_dec *d, struct resset *dst,
                      const struct resset *src, int max_mode, const char *path)
{
  for (size_t i = 0; i < src->n && !d->rc; i++) {
    int64_t *v = res_slot(d, dst, src->r[i].name, path);

    if (!v)
      return;
    if (max_mode)
      *v = src->r[i].value > *v ? src->r[i].value : *v;
    else if (gq_add_i64(*v, src->r[i].value, v) != 0)
      gq_dec_fail(d, path, "resource '%s' overflows", src->r[i].name);
  }
}

/* Reads one ResourceList (requests, limits or overhead) into s. CPU is kept
 * in millicores, everything else as an integer rounded up. */
static void decode_reslist(struct gq_dec *d, const json_t *parent,
                           const char *path, struct resset *s)
{
  const json_t *list = gq_dec_object(d, parent, path, 0);
  const char *name;
  json_t *q;
  char p[GQ_DEC_PATH_MAX];

  json_object_foreach((json_t *)list, name, q) {
    int64_t v, *slot;

    gq_dec_path(p, "%s[%s]", path, name);
    if (d->rc || gq_dec_qualified_name(d, p, name))
      return;
    if (gq_dec_quantity(d, p, q, strcmp(name, "cpu") == 0,
                        "500m, 8 or 16Gi", &v) != 0)
      return;
    if (v < 0) {
      gq_dec_fail_got(d, p, q, "must be non-negative");
      return;
    }
    slot = res_slot(d, s, name, p);
    if (slot)
      *slot = v;
  }
}

/* A container's requests, with limits filling requests that are absent. */
static void container_requests(struct gq_dec *d, const json_t *c,
                               const char *path, struct resset *out)
{
  char p[GQ_DEC_PATH_MAX];
  const json_t *res;
  struct resset limits = {.n = 0};

  out->n = 0;
  gq_dec_string(d, c, gq_dec_path(p, "%s.name", path), 1, 63, NULL);
  res = gq_dec_object(d, c, gq_dec_path(p, "%s.resources", path), 0);
  decode_reslist(d, res, gq_dec_path(p, "%s.resources.requests", path), out);
  decode_reslist(d, res, gq_dec_path(p, "%s.resources.limits", path), &limits);
  for (size_t i = 0; i < limits.n && !d->rc; i++) {
    size_t j;

    for (j = 0; j < out->n; j++)
      if (strcmp(out->r[j].name, limits.r[i].name) == 0)
        break;
    if (j == out->n) {
      int64_t *slot = res_slot(d, out, limits.r[i].name, path);

      if (slot)
        *slot = limits.r[i].value;
    }
  }
}

/* Effective requests (see pod.h for the rule and its source). */
static void pod_requests(struct gq_dec *d, const json_t *spec,
                         const char *path, struct resset *total)
{
  char p[GQ_DEC_PATH_MAX];
  const json_t *cs, *c;
  struct resset one, sidecars = {.n = 0}, init_max = {.n = 0}, tmp;
  size_t i;

  total->n = 0;
  cs = gq_dec_array(d, spec, gq_dec_path(p, "%s.containers", path), 1,
                    MAX_CONTAINERS);
  if (cs && json_array_size(cs) == 0)
    gq_dec_fail(d, p, "must have at least one container");
  json_array_foreach((json_t *)cs, i, c) {
    container_requests(d, c, gq_dec_path(p, "%s.containers[%zu]", path, i),
                       &one);
    res_merge(d, total, &one, 0, p);
  }
  cs = gq_dec_array(d, spec, gq_dec_path(p, "%s.initContainers", path), 0,
                    MAX_CONTAINERS);
  json_array_foreach((json_t *)cs, i, c) {
    const char *policy = json_string_value(json_object_get(c, "restartPolicy"));

    container_requests(d, c, gq_dec_path(p, "%s.initContainers[%zu]", path, i),
                       &one);
    if (policy && strcmp(policy, "Always") == 0) {
      res_merge(d, total, &one, 0, p);    /* a sidecar runs alongside */
      res_merge(d, &sidecars, &one, 0, p);
      tmp = sidecars;
    } else {
      tmp = one;
      res_merge(d, &tmp, &sidecars, 0, p);
    }
    res_merge(d, &init_max, &tmp, 1, p);
  }
  res_merge(d, total, &init_max, 1, p);
  one.n = 0;
  decode_reslist(d, spec, gq_dec_path(p, "%s.overhead", path), &one);
  res_merge(d, total, &one, 0, p);
}

static const char *const tol_ops[] = {"Equal", "Exists", NULL};
static const char *const effects[] = {"NoSchedule", "PreferNoSchedule",
                                      "NoExecute", NULL};

static void decode_tolerations(struct gq_dec *d, const json_t *spec,
                               const char *path, struct gq_podsched *out)
{
  char p[GQ_DEC_PATH_MAX], base[GQ_DEC_PATH_MAX];
  const json_t *arr, *t;
  size_t i;

  arr = gq_dec_array(d, spec, gq_dec_path(p, "%s.tolerations", path), 0, 256);
  if (!arr || d->rc || json_array_size(arr) == 0)
    return;
  out->tolerations = gq_xcalloc(json_array_size(arr), sizeof(*out->tolerations));
  json_array_foreach((json_t *)arr, i, t) {
    struct gq_toleration *tol = &out->tolerations[i];

    gq_dec_path(base, "%s.tolerations[%zu]", path, i);
    tol->key = gq_dec_string(d, t, gq_dec_path(p, "%s.key", base), 0, 316, "");
    tol->op = gq_dec_enum(d, t, gq_dec_path(p, "%s.operator", base), tol_ops,
                          0, GQ_TOL_EQUAL);
    tol->value = gq_dec_string(d, t, gq_dec_path(p, "%s.value", base), 0, 63,
                               "");
    if (gq_dec_enum(d, t, gq_dec_path(p, "%s.effect", base), effects, 0, -1) >= 0)
      tol->effect = json_string_value(json_object_get(t, "effect"));
    else
      tol->effect = "";
    gq_dec_int(d, t, gq_dec_path(p, "%s.tolerationSeconds", base), INT64_MIN,
               INT64_MAX, -1, &tol->seconds);
    if (!d->rc && !*tol->key && tol->op != GQ_TOL_EXISTS)
      gq_dec_fail(d, gq_dec_path(p, "%s.operator", base),
                  "must be Exists when key is empty");
    out->n_tolerations = i + 1;
  }
}

static const char *const sel_ops[] = {"In", "NotIn", "Exists", "DoesNotExist",
                                      "Gt", "Lt", NULL};

/* Decodes one matchExpressions / matchFields list, checking value counts as
 * the apiserver does (In/NotIn need values, Exists/DoesNotExist none, Gt/Lt
 * exactly one integer). */
static void decode_reqs(struct gq_dec *d, const json_t *term, const char *path,
                        struct gq_sel_req **out, size_t *n)
{
  const json_t *arr = gq_dec_array(d, term, path, 0, 256), *r, *vals;
  char p[GQ_DEC_PATH_MAX], base[GQ_DEC_PATH_MAX];
  size_t i, j;

  *out = NULL;
  *n = 0;
  if (!arr || d->rc || json_array_size(arr) == 0)
    return;
  *out = gq_xcalloc(json_array_size(arr), sizeof(**out));
  json_array_foreach((json_t *)arr, i, r) {
    struct gq_sel_req *q = &(*out)[i];
    const json_t *v;

    gq_dec_path(base, "%s[%zu]", path, i);
    q->key = gq_dec_string(d, r, gq_dec_path(p, "%s.key", base), 1, 316, "");
    q->op = gq_dec_enum(d, r, gq_dec_path(p, "%s.operator", base), sel_ops, 1,
                        GQ_SEL_IN);
    vals = gq_dec_array(d, r, gq_dec_path(p, "%s.values", base), 0, 1024);
    *n = i + 1;
    if (d->rc)
      return;
    q->n_values = vals ? json_array_size(vals) : 0;
    if ((q->op <= GQ_SEL_NOT_IN && q->n_values == 0) ||
        ((q->op == GQ_SEL_EXISTS || q->op == GQ_SEL_DOES_NOT_EXIST) &&
         q->n_values) ||
        (q->op >= GQ_SEL_GT && q->n_values != 1)) {
      gq_dec_fail(d, p, "wrong number of values for operator %s, got %zu",
                  sel_ops[q->op], q->n_values);
      return;
    }
    q->values = gq_xcalloc(q->n_values, sizeof(*q->values));
    json_array_foreach((json_t *)vals, j, v) {
      if (!json_is_string(v)) {
        gq_dec_fail_got(d, gq_dec_path(p, "%s.values[%zu]", base, j), v,
                        "must be a string");
        return;
      }
      q->values[j] = json_string_value(v);
    }
  }
}

static void decode_affinity(struct gq_dec *d, const json_t *spec,
                            const char *path, struct gq_podsched *out)
{
  char p[GQ_DEC_PATH_MAX], base[GQ_DEC_PATH_MAX], req_path[GQ_DEC_PATH_MAX];
  const json_t *aff, *req, *terms, *t;
  size_t i;

  gq_dec_path(req_path, "%s.affinity.nodeAffinity."
                        "requiredDuringSchedulingIgnoredDuringExecution",
              path);
  aff = gq_dec_object(d, spec, gq_dec_path(p, "%s.affinity", path), 0);
  aff = gq_dec_object(d, aff, gq_dec_path(p, "%s.affinity.nodeAffinity", path),
                      0);
  req = gq_dec_object(d, aff, req_path, 0);
  if (!req)
    return;
  terms = gq_dec_array(d, req, gq_dec_path(p, "%s.nodeSelectorTerms", req_path),
                       1, 256);
  if (!terms || d->rc)
    return;
  if (json_array_size(terms) == 0) {
    gq_dec_fail(d, p, "must have at least one term");
    return;
  }
  out->terms = gq_xcalloc(json_array_size(terms), sizeof(*out->terms));
  json_array_foreach((json_t *)terms, i, t) {
    struct gq_node_term *nt = &out->terms[i];

    out->n_terms = i + 1;
    gq_dec_path(base, "%s.nodeSelectorTerms[%zu]", req_path, i);
    decode_reqs(d, t, gq_dec_path(p, "%s.matchExpressions", base), &nt->exprs,
                &nt->n_exprs);
    decode_reqs(d, t, gq_dec_path(p, "%s.matchFields", base), &nt->fields,
                &nt->n_fields);
    if (d->rc)
      return;
  }
}

static void take_requests(const struct resset *total, struct gq_podsched *out)
{
  size_t n = 0;

  out->extended = gq_xcalloc(total->n, sizeof(*out->extended));
  for (size_t i = 0; i < total->n; i++) {
    if (strcmp(total->r[i].name, "cpu") == 0)
      out->cpu_milli = total->r[i].value;
    else if (strcmp(total->r[i].name, "memory") == 0)
      out->memory_bytes = total->r[i].value;
    else
      out->extended[n++] = total->r[i];
  }
  out->n_extended = n;
}

int gq_podsched_decode(struct gq_dec *d, const json_t *spec, const char *path,
                       struct gq_podsched *out)
{
  char p[GQ_DEC_PATH_MAX];
  struct resset total;

  memset(out, 0, sizeof(*out));
  if (!spec || !json_is_object(spec))
    return gq_dec_fail_got(d, path, spec, "must be an object");
  out->node_name = gq_dec_string(d, spec, gq_dec_path(p, "%s.nodeName", path),
                                 0, 253, "");
  gq_dec_int(d, spec,
             gq_dec_path(p, "%s.terminationGracePeriodSeconds", path), 0,
             INT64_MAX, 30, &out->grace_s);
  gq_dec_string_map(d, spec, gq_dec_path(p, "%s.nodeSelector", path), 0,
                    &out->node_selector, &out->n_node_selector);
  decode_tolerations(d, spec, path, out);
  decode_affinity(d, spec, path, out);
  pod_requests(d, spec, path, &total);
  if (!d->rc)
    take_requests(&total, out);
  if (d->rc)
    gq_podsched_release(out);
  return d->rc;
}

void gq_podsched_release(struct gq_podsched *s)
{
  for (size_t i = 0; i < s->n_terms; i++) {
    for (size_t j = 0; j < s->terms[i].n_exprs; j++)
      free(s->terms[i].exprs[j].values);
    for (size_t j = 0; j < s->terms[i].n_fields; j++)
      free(s->terms[i].fields[j].values);
    free(s->terms[i].exprs);
    free(s->terms[i].fields);
  }
  free(s->terms);
  free(s->node_selector);
  free(s->tolerations);
  free(s->extended);
  memset(s, 0, sizeof(*s));
}

static void req_strings(struct gq_sel_req *r, size_t n, struct gq_strpack *p)
{
  for (size_t i = 0; i < n; i++) {
    gq_strpack_add(p, &r[i].key);
    for (size_t k = 0; k < r[i].n_values; k++)
      gq_strpack_add(p, &r[i].values[k]);
  }
}

void gq_podsched_strings(struct gq_podsched *s, struct gq_strpack *p)
{
  gq_strpack_add(p, &s->node_name);
  for (size_t i = 0; i < s->n_node_selector; i++) {
    gq_strpack_add(p, &s->node_selector[i].key);
    gq_strpack_add(p, &s->node_selector[i].value);
  }
  for (size_t i = 0; i < s->n_terms; i++) {
    req_strings(s->terms[i].exprs, s->terms[i].n_exprs, p);
    req_strings(s->terms[i].fields, s->terms[i].n_fields, p);
  }
  for (size_t i = 0; i < s->n_tolerations; i++) {
    gq_strpack_add(p, &s->tolerations[i].key);
    gq_strpack_add(p, &s->tolerations[i].value);
    gq_strpack_add(p, &s->tolerations[i].effect);
  }
  for (size_t i = 0; i < s->n_extended; i++)
    gq_strpack_add(p, &s->extended[i].name);
}

/* The key under construction (gq_podsched_key). */
struct kbuf {
  char *s;
  size_t n, cap;
};

static void kb_printf(struct kbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void kb_printf(struct kbuf *b, const char *fmt, ...)
{
  va_list ap;
  int n;

  for (;;) {
    va_start(ap, fmt);
    n = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < b->cap - b->n)
      break;
    b->cap = 2 * b->cap + (n > 0 ? (size_t)n : 0) + 64;
    b->s = gq_xrealloc(b->s, b->cap);
  }
  b->n += (size_t)n;
}

/* Strings are written with their length first, so that no content can
 * make two different podscheds write the same key. */
static void key_str(struct kbuf *b, const char *s)
{
  kb_printf(b, "%zu:%s", s ? strlen(s) : 0, s ? s : "");
}

static void key_reqs(struct kbuf *b, const struct gq_sel_req *r, size_t n)
{
  kb_printf(b, "[%zu", n);
  for (size_t i = 0; i < n; i++) {
    key_str(b, r[i].key);
    kb_printf(b, "%d,%zu", (int)r[i].op, r[i].n_values);
    for (size_t k = 0; k < r[i].n_values; k++)
      key_str(b, r[i].values[k]);
  }
  kb_printf(b, "]");
}

char *gq_podsched_key(const struct gq_podsched *s)
{
  struct kbuf b = {gq_xmalloc(256), 0, 256};

  key_str(&b, s->node_name);
  kb_printf(&b, "|%zu", s->n_node_selector);
  for (size_t i = 0; i < s->n_node_selector; i++) {
    key_str(&b, s->node_selector[i].key);
    key_str(&b, s->node_selector[i].value);
  }
  kb_printf(&b, "|%zu", s->n_terms);
  for (size_t i = 0; i < s->n_terms; i++) {
    key_reqs(&b, s->terms[i].exprs, s->terms[i].n_exprs);
    key_reqs(&b, s->terms[i].fields, s->terms[i].n_fields);
  }
  kb_printf(&b, "|%zu", s->n_tolerations);
  for (size_t i = 0; i < s->n_tolerations; i++) {
    key_str(&b, s->tolerations[i].key);
    kb_printf(&b, "%d", (int)s->tolerations[i].op);
    key_str(&b, s->tolerations[i].value);
    key_str(&b, s->tolerations[i].effect);
    kb_printf(&b, "%" PRId64 ",", s->tolerations[i].seconds);
  }
  kb_printf(&b, "|%" PRId64 ",%" PRId64 ",%" PRId64 "|%zu", s->cpu_milli,
            s->memory_bytes, s->grace_s, s->n_extended);
  for (size_t i = 0; i < s->n_extended; i++) {
    key_str(&b, s->extended[i].name);
    kb_printf(&b, "%" PRId64 ",", s->extended[i].value);
  }
  return b.s;
}

static const char *const phases[] = {"Pending", "Running", "Succeeded",
                                     "Failed", "Unknown", NULL};

/* Reads status.conditions for the few gpuq acts on. */
static void decode_conditions(const json_t *status, struct gq_pod *out)
{
  const json_t *conds = json_object_get(status, "conditions"), *c;
  size_t i;

  json_array_foreach((json_t *)conds, i, c) {
    const char *type = json_string_value(json_object_get(c, "type"));
    const char *st = json_string_value(json_object_get(c, "status"));
    const char *reason = json_string_value(json_object_get(c, "reason"));

    if (!type || !st)
      continue;
    if (strcmp(type, "PodScheduled") == 0 && strcmp(st, "False") == 0)
      out->unschedulable = reason ? reason : "";
    else if (strcmp(type, "DisruptionTarget") == 0 && strcmp(st, "True") == 0)
      out->disruption = reason ? reason : "";
    else if (strcmp(type, "Ready") == 0)
      out->ready = strcmp(st, "True") == 0;
  }
}

/* The first container that terminated gives the termination message (the
 * checkpoint contract, DESIGN §5) and exit code. */
static void decode_termination(const json_t *status, struct gq_pod *out)
{
  const json_t *cs = json_object_get(status, "containerStatuses"), *c;
  size_t i;

  out->exit_code = -1;
  json_array_foreach((json_t *)cs, i, c) {
    const json_t *term =
        json_object_get(json_object_get(c, "state"), "terminated");

    if (!json_is_object(term))
      continue;
    out->termination_msg = json_string_value(json_object_get(term, "message"));
    out->exit_code = (int)json_integer_value(json_object_get(term, "exitCode"));
    return;
  }
}

/* 1 if annotation key 'key' is kept: its prefix (before the '/') is
 * GQ_ANN_DOMAIN or ends in "." GQ_ANN_DOMAIN. */
static int ann_kept(const char *key)
{
  const char *slash = strchr(key, '/');
  size_t n, d = strlen(GQ_ANN_DOMAIN);

  if (!slash)
    return 0;
  n = (size_t)(slash - key);
  if (n < d || memcmp(slash - d, GQ_ANN_DOMAIN, d) != 0)
    return 0;
  return n == d || key[n - d - 1] == '.';
}

/* gpuq's annotations (pod.h), their strings added to pack. */
static void decode_annotations(const json_t *obj, struct gq_pod *out,
                               struct gq_strpack *pack)
{
  const json_t *an = json_object_get(json_object_get(obj, "metadata"),
                                     "annotations");
  const char *key;
  json_t *v;
  size_t n = 0;

  json_object_foreach((json_t *)an, key, v)
    n += ann_kept(key) && json_is_string(v);
  if (!n)
    return;
  out->annotations = gq_xcalloc(n, sizeof(*out->annotations));
  json_object_foreach((json_t *)an, key, v) {
    struct gq_kv *kv;

    if (!ann_kept(key) || !json_is_string(v))
      continue;
    kv = &out->annotations[out->n_annotations++];
    kv->key = key;
    kv->value = json_string_value(v);
  }
  for (size_t i = 0; i < out->n_annotations; i++) {
    gq_strpack_add(pack, &out->annotations[i].key);
    gq_strpack_add(pack, &out->annotations[i].value);
  }
}

static const char *str_or_empty(const json_t *o, const char *key)
{
  const char *v = json_string_value(json_object_get(o, key));

  return v ? v : "";
}

/* One ContainerStateTerminated t of container c into *out. */
static void read_term(const json_t *c, const json_t *t, struct gq_pod_term *out)
{
  const char *fin = json_string_value(json_object_get(t, "finishedAt"));

  out->container = str_or_empty(c, "name");
  out->exit_code = (int)json_integer_value(json_object_get(t, "exitCode"));
  out->reason = str_or_empty(t, "reason");
  out->message = str_or_empty(t, "message");
  if (!fin || gq_time_parse(fin, &out->finished_ms) != 0)
    out->finished_ms = 0;
}

/* Every containerStatuses[].<state>.terminated into *arr / *n (owned),
 * their strings added to pack. */
static void decode_terms(const json_t *status, const char *state,
                         struct gq_pod_term **arr, size_t *n,
                         struct gq_strpack *pack)
{
  const json_t *cs = json_object_get(status, "containerStatuses"), *c;
  size_t i, count = 0;

  json_array_foreach((json_t *)cs, i, c)
    count += json_is_object(
        json_object_get(json_object_get(c, state), "terminated"));
  if (!count)
    return;
  *arr = gq_xcalloc(count, sizeof(**arr));
  json_array_foreach((json_t *)cs, i, c) {
    const json_t *t = json_object_get(json_object_get(c, state), "terminated");

    if (json_is_object(t))
      read_term(c, t, &(*arr)[(*n)++]);
  }
  for (i = 0; i < *n; i++) {
    gq_strpack_add(pack, &(*arr)[i].container);
    gq_strpack_add(pack, &(*arr)[i].reason);
    gq_strpack_add(pack, &(*arr)[i].message);
  }
}

int gq_pod_decode(const json_t *obj, struct gq_pod *out, char *err,
                  size_t errlen)
{
  struct gq_dec d;
  struct gq_strpack pack = {0};
  const json_t *status = NULL;

  memset(out, 0, sizeof(*out));
  gq_dec_init(&d);
  if (gq_meta_decode(&d, obj, GQ_META_NAMESPACED, &out->meta) == 0 &&
      gq_podsched_decode(&d, gq_dec_object(&d, obj, "spec", 1), "spec",
                         &out->sched) == 0) {
    status = gq_dec_object(&d, obj, "status", 0);
    out->phase = gq_dec_enum(&d, status, "status.phase", phases, 0,
                             GQ_POD_PENDING);
    out->status_reason = gq_dec_string(&d, status, "status.reason", 0, 1024,
                                       "");
    decode_conditions(status, out);
    decode_termination(status, out);
  }
  if (d.rc) {
    snprintf(err, errlen, "%s", d.msg);
    gq_podsched_release(&out->sched);
    gq_meta_release(&out->meta);
    memset(out, 0, sizeof(*out));
    return d.rc;
  }
  decode_annotations(obj, out, &pack);
  decode_terms(status, "state", &out->terminated, &out->n_terminated, &pack);
  decode_terms(status, "lastState", &out->last_terminated,
               &out->n_last_terminated, &pack);
  out->strings = gq_strpack_done(&pack);
  out->json = json_incref((json_t *)obj);
  return 0;
}

void gq_pod_release(struct gq_pod *p)
{
  gq_podsched_release(&p->sched);
  gq_meta_release(&p->meta);
  free(p->annotations);
  free(p->terminated);
  free(p->last_terminated);
  free(p->strings);
  json_decref(p->json);
  memset(p, 0, sizeof(*p));
}

int gq_pod_has_gate(const json_t *pod, const char *name)
{
  const json_t *gs = json_object_get(json_object_get(pod, "spec"),
                                     "schedulingGates"), *g;
  size_t i;

  json_array_foreach((json_t *)gs, i, g) {
    const char *n = json_string_value(json_object_get(g, "name"));

    if (n && !strcmp(n, name))
      return 1;
  }
  return 0;
}
