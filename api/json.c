/* api/json.c - validating field reads with Kubernetes-style errors. */
#include "api/json.h"

#include "base/alloc.h"
#include "api/quantity.h"
#include "base/err.h"
#include "decide/names.h"

#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

void gq_dec_init(struct gq_dec *d)
{
  d->rc = 0;
  d->msg[0] = '\0';
}

int gq_dec_failed(const struct gq_dec *d)
{
  return d->rc != 0;
}

static int vfail(struct gq_dec *d, const char *path, const json_t *got,
                 const char *fmt, va_list ap)
{
  char detail[GQ_DEC_MSG_MAX], val[96] = "";
  char *dump;

  if (d->rc != 0)
    return GQ_EINVAL;
  vsnprintf(detail, sizeof(detail), fmt, ap);
  if (got) {
    dump = json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT);
    if (dump && strlen(dump) > 80)
      snprintf(val, sizeof(val), ", got %.77s...", dump);
    else
      snprintf(val, sizeof(val), ", got %s", dump ? dump : "?");
    free(dump);
  }
  snprintf(d->msg, sizeof(d->msg), "%.200s: %.200s%s", path, detail, val);
  d->rc = GQ_EINVAL;
  return GQ_EINVAL;
}

int gq_dec_fail(struct gq_dec *d, const char *path, const char *fmt, ...)
{
  va_list ap;
  int rc;

  va_start(ap, fmt);
  rc = vfail(d, path, NULL, fmt, ap);
  va_end(ap);
  return rc;
}

int gq_dec_fail_got(struct gq_dec *d, const char *path, const json_t *got,
                    const char *fmt, ...)
{
  va_list ap;
  int rc;

  va_start(ap, fmt);
  rc = vfail(d, path, got, fmt, ap);
  va_end(ap);
  return rc;
}

/* gq_dec_path's formats hold only %s and %zu (every decoder builds a path
 * for each field it reads, so the common case skips vsnprintf, which cost
 * more than the lookup the path is for); any other directive goes to
 * vsnprintf. Output is cut at GQ_DEC_PATH_MAX - 1 bytes, as vsnprintf's. */
char *gq_dec_path(char *buf, const char *fmt, ...)
{
  size_t n = 0, cap = GQ_DEC_PATH_MAX - 1;
  const char *f;
  va_list ap;

  for (f = fmt; *f; f++)
    if (*f == '%' && f[1] != 's' && !(f[1] == 'z' && f[2] == 'u'))
      break;
  va_start(ap, fmt);
  if (*f) {
    vsnprintf(buf, GQ_DEC_PATH_MAX, fmt, ap);
    va_end(ap);
    return buf;
  }
  for (f = fmt; *f && n < cap; f++) {
    char num[24];
    const char *s = NULL;
    size_t len;

    if (*f != '%') {
      buf[n++] = *f;
      continue;
    }
    if (f[1] == 's') {
      s = va_arg(ap, const char *);
      f++;
    } else {
      size_t v = va_arg(ap, size_t), i = sizeof num - 1;

      num[i] = '\0';
      do
        num[--i] = (char)('0' + v % 10);
      while ((v /= 10) && i > 0);
      s = num + i;
      f += 2;
    }
    len = strlen(s);
    if (len > cap - n)
      len = cap - n;
    memcpy(buf + n, s, len);
    n += len;
  }
  va_end(ap);
  buf[n] = '\0';
  return buf;
}

/* The JSON key of a path is its last segment: after the last '.' that is
 * not inside [...] (so "status.allocatable[nvidia.com/gpu]" is not split). */
static const char *last_key(const char *path)
{
  const char *key = path;
  int depth = 0;

  for (const char *p = path; *p; p++) {
    if (*p == '[')
      depth++;
    else if (*p == ']')
      depth--;
    else if (*p == '.' && depth == 0)
      key = p + 1;
  }
  return key;
}

const json_t *gq_dec_get(const json_t *parent, const char *path)
{
  const json_t *v;

  if (!parent || !json_is_object(parent))
    return NULL;
  v = json_object_get(parent, last_key(path));
  return v && !json_is_null(v) ? v : NULL;
}

/* Common prologue: fetch, handle absence. Returns the value or NULL. */
static const json_t *fetch(struct gq_dec *d, const json_t *parent,
                           const char *path, int required)
{
  const json_t *v;

  if (d->rc != 0)
    return NULL;
  v = gq_dec_get(parent, path);
  if (!v && required)
    gq_dec_fail(d, path, "required value");
  return v;
}

const json_t *gq_dec_object(struct gq_dec *d, const json_t *parent,
                            const char *path, int required)
{
  const json_t *v = fetch(d, parent, path, required);

  if (v && !json_is_object(v)) {
    gq_dec_fail_got(d, path, v, "must be an object");
    return NULL;
  }
  return v;
}

const json_t *gq_dec_array(struct gq_dec *d, const json_t *parent,
                           const char *path, int required, size_t max_items)
{
  const json_t *v = fetch(d, parent, path, required);

  if (!v)
    return NULL;
  if (!json_is_array(v)) {
    gq_dec_fail_got(d, path, v, "must be an array");
    return NULL;
  }
  if (json_array_size(v) > max_items) {
    gq_dec_fail(d, path, "must have at most %zu items, got %zu", max_items,
                json_array_size(v));
    return NULL;
  }
  return v;
}

const char **gq_dec_string_array(struct gq_dec *d, const json_t *parent,
                                 const char *path, int required,
                                 size_t max_items, gq_dec_check_fn check,
                                 size_t *n)
{
  const json_t *arr = gq_dec_array(d, parent, path, required, max_items), *v;
  char p[GQ_DEC_PATH_MAX];
  const char **out;
  size_t i;

  *n = 0;
  if (!arr || d->rc || json_array_size(arr) == 0)
    return NULL;
  out = gq_xcalloc(json_array_size(arr), sizeof(*out));
  json_array_foreach((json_t *)arr, i, v) {
    gq_dec_path(p, "%s[%zu]", path, i);
    if (!json_is_string(v))
      gq_dec_fail_got(d, p, v, "must be a string");
    else if (check)
      check(d, p, json_string_value(v));
    if (d->rc) {
      free(out);
      *n = 0;
      return NULL;
    }
    out[(*n)++] = json_string_value(v);
  }
  return out;
}

const char *gq_dec_string(struct gq_dec *d, const json_t *parent,
                          const char *path, int required, size_t max_len,
                          const char *dflt)
{
  const json_t *v = fetch(d, parent, path, required);

  if (!v)
    return dflt;
  if (!json_is_string(v)) {
    gq_dec_fail_got(d, path, v, "must be a string");
    return dflt;
  }
  if (json_string_length(v) > max_len) {
    gq_dec_fail(d, path, "must be no more than %zu bytes, got %zu", max_len,
                json_string_length(v));
    return dflt;
  }
  if (required && json_string_length(v) == 0) {
    gq_dec_fail(d, path, "required value");
    return dflt;
  }
  return json_string_value(v);
}

int gq_dec_int(struct gq_dec *d, const json_t *parent, const char *path,
               int64_t min, int64_t max, int64_t dflt, int64_t *out)
{
  const json_t *v = fetch(d, parent, path, 0);
  int64_t n;

  *out = dflt;
  if (!v)
    return d->rc ? -1 : 0;
  if (!json_is_integer(v)) {
    gq_dec_fail_got(d, path, v, "must be an integer");
    return -1;
  }
  n = json_integer_value(v);
  if (n < min || n > max) {
    gq_dec_fail_got(d, path, v, "must be between %lld and %lld",
                    (long long)min, (long long)max);
    return -1;
  }
  *out = n;
  return 1;
}

int gq_dec_number(struct gq_dec *d, const json_t *parent, const char *path,
                  double min, double max, double dflt, double *out)
{
  const json_t *v = fetch(d, parent, path, 0);
  double n;

  *out = dflt;
  if (!v)
    return d->rc ? -1 : 0;
  if (!json_is_number(v)) {
    gq_dec_fail_got(d, path, v, "must be a number");
    return -1;
  }
  n = json_number_value(v);
  if (!(n >= min && n <= max)) {
    gq_dec_fail_got(d, path, v, "must be between %g and %g", min, max);
    return -1;
  }
  *out = n;
  return 1;
}

int gq_dec_bool(struct gq_dec *d, const json_t *parent, const char *path,
                int dflt)
{
  const json_t *v = fetch(d, parent, path, 0);

  if (!v)
    return dflt;
  if (!json_is_boolean(v)) {
    gq_dec_fail_got(d, path, v, "must be a boolean");
    return dflt;
  }
  return json_is_true(v);
}

int gq_dec_enum(struct gq_dec *d, const json_t *parent, const char *path,
                const char *const *values, int required, int dflt)
{
  const char *s = gq_dec_string(d, parent, path, required, 256, NULL);
  char list[256] = "";
  size_t len = 0;

  if (!s)
    return dflt;
  for (int i = 0; values[i]; i++) {
    if (strcmp(s, values[i]) == 0)
      return i;
    len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
                            i ? ", " : "", values[i]);
    if (len >= sizeof(list))
      len = sizeof(list) - 1;
  }
  gq_dec_fail_got(d, path, gq_dec_get(parent, path), "must be one of %s",
                  list);
  return dflt;
}



static int fail_str(struct gq_dec *d, const char *path, const char *s,
                    const char *detail)
{
  json_t *got = json_string(s);
  int rc = gq_dec_fail_got(d, path, got, "%s", detail);

  json_decref(got);
  return rc;
}

int gq_dec_dns_label(struct gq_dec *d, const char *path, const char *s)
{
  if (gq_dns_label_ok(s, strlen(s)))
    return 0;
  return fail_str(d, path, s,
                  "must be a DNS-1123 label (at most 63 lower-case letters, "
                  "digits or '-', starting and ending with a letter or digit)");
}


int gq_dec_dns_subdomain(struct gq_dec *d, const char *path, const char *s,
                         size_t max_len)
{
  char detail[200];

  if (strlen(s) <= max_len && gq_dns_subdomain_ok(s, strlen(s)))
    return 0;
  snprintf(detail, sizeof(detail),
           "must be a DNS-1123 subdomain (at most %zu lower-case letters, "
           "digits, '-' or '.', starting and ending with a letter or digit)",
           max_len);
  return fail_str(d, path, s, detail);
}


int gq_dec_label_value(struct gq_dec *d, const char *path, const char *s)
{
  if (gq_name_part_ok(s, strlen(s), 1))
    return 0;
  return fail_str(d, path, s,
                  "must be a valid label value (at most 63 letters, digits, "
                  "'-', '_' or '.', starting and ending with a letter or "
                  "digit)");
}

int gq_dec_qualified_name(struct gq_dec *d, const char *path, const char *s)
{
  if (gq_qualified_name_ok(s))
    return 0;
  return fail_str(d, path, s,
                  "must be a qualified name ([DNS-1123 subdomain '/'] and a "
                  "name of at most 63 letters, digits, '-', '_' or '.')");
}

int gq_mul_i64(int64_t a, int64_t b, int64_t *out)
{
  int64_t r;

  if (__builtin_mul_overflow(a, b, &r))
    return GQ_EOVERFLOW;
  *out = r;
  return 0;
}

int gq_add_i64(int64_t a, int64_t b, int64_t *out)
{
  int64_t r;

  if (__builtin_add_overflow(a, b, &r))
    return GQ_EOVERFLOW;
  *out = r;
  return 0;
}

void gq_strpack_add(struct gq_strpack *p, const char **slot)
{
  if (!*slot)
    return;
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 32;
    p->slots = gq_xrealloc(p->slots, p->cap * sizeof(*p->slots));
  }
  p->slots[p->n++] = slot;
  p->bytes += strlen(*slot) + 1;
}

char *gq_strpack_done(struct gq_strpack *p)
{
  char *block = p->bytes ? gq_xmalloc(p->bytes) : NULL, *at = block;

  for (size_t i = 0; i < p->n; i++) {
    size_t len = strlen(*p->slots[i]) + 1;

    memcpy(at, *p->slots[i], len);
    *p->slots[i] = at;
    at += len;
  }
  free(p->slots);
  memset(p, 0, sizeof(*p));
  return block;
}

struct istr {
  UT_hash_handle hh;
  size_t refs;
  char s[];
};

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static struct istr *interned;

const char *gq_intern(const char *s)
{
  struct istr *e;
  size_t n;

  if (!s)
    return NULL;
  pthread_mutex_lock(&intern_lock);
  HASH_FIND_STR(interned, s, e);
  if (e) {
    e->refs++;
  } else {
    n = strlen(s);
    e = gq_xmalloc(sizeof(*e) + n + 1);
    memset(e, 0, sizeof(*e));
    memcpy(e->s, s, n + 1);
    e->refs = 1;
    HASH_ADD_KEYPTR(hh, interned, e->s, n, e);
  }
  pthread_mutex_unlock(&intern_lock);
  return e->s;
}

void gq_intern_release(const char *s)
{
  struct istr *e;

  if (!s)
    return;
  e = (struct istr *)(void *)((char *)(uintptr_t)s - offsetof(struct istr, s));
  pthread_mutex_lock(&intern_lock);
  if (--e->refs == 0) {
    HASH_DEL(interned, e);
    free(e);
  }
  pthread_mutex_unlock(&intern_lock);
}

size_t gq_intern_count(void)
{
  size_t n;

  pthread_mutex_lock(&intern_lock);
  n = HASH_COUNT(interned);
  pthread_mutex_unlock(&intern_lock);
  return n;
}

int gq_dec_quantity(struct gq_dec *d, const char *path, const json_t *q,
                    int milli, const char *example, int64_t *out)
{
  int rc = gq_quantity_from_json(q, milli, out);

  if (rc == GQ_EOVERFLOW)
    return gq_dec_fail_got(d, path, q, "must be at most %" PRId64 "%s",
                           INT64_MAX, milli
                               ? "m (2^63-1 millicores)" : " (2^63-1)");
  if (rc != 0)
    return gq_dec_fail_got(d, path, q, "must be a quantity such as %s",
                           example);
  return 0;
}

int gq_dec_annotations(struct gq_dec *d, const json_t *parent,
                       const char *path)
{
  const json_t *m = gq_dec_object(d, parent, path, 0), *v;
  const char *key;
  size_t total = 0;
  char p[GQ_DEC_PATH_MAX];

  json_object_foreach((json_t *)m, key, v) {
    if (d->rc)
      return d->rc;
    if (!json_is_string(v))
      return gq_dec_fail_got(d, gq_dec_path(p, "%s[%s]", path, key), v,
                             "must be a string");
    total += strlen(key) + json_string_length(v);
  }
  if (!d->rc && total > GQ_MAX_ANNOTATIONS_BYTES)
    gq_dec_fail(d, path, "must have at most %u bytes of keys and values in "
                "total (Kubernetes' annotation size limit), got %zu",
                GQ_MAX_ANNOTATIONS_BYTES, total);
  return d->rc;
}
