/* api/jsonpath.c - simple JSONPath for printer columns (see jsonpath.h).
 *
 * One pass does both jobs: the path is parsed step by step and each step is
 * applied to the current value at once. Once a value is absent the walk
 * goes on with NULL, only checking syntax, so gq_jsonpath_get() and
 * gq_jsonpath_valid() agree on what is valid whatever the object holds.
 */
#include "api/jsonpath.h"

#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Indexes beyond this are out of range for any array we could hold; the
 * cap keeps the digit loop free of overflow. */
#define INDEX_CAP 1000000000u

#define MULTI "(selects more than one value)"

struct jp {
  const char *p;     /* next unread character */
  const char *end;   /* end of the path proper (inside any braces) */
  const json_t *cur; /* value so far; NULL once absent */
  char *err;
  size_t errlen;
};

__attribute__((format(printf, 2, 3))) static int
jp_fail(struct jp *j, const char *fmt, ...)
{
  va_list ap;

  if (j->err && j->errlen > 0) {
    va_start(ap, fmt);
    vsnprintf(j->err, j->errlen, fmt, ap);
    va_end(ap);
  }
  return GQ_EINVAL;
}

/* Characters that end a field name, as kubectl's isTerminator (plus '\',
 * which escapes, and '\0'). */
static int is_name_char(char c)
{
  return c != '\0' && strchr(".[]{},$@ \t\r\n\\", c) == NULL;
}

static int is_blank(char c)
{
  return c == ' ' || c == '\t';
}

static void apply_key(struct jp *j, const char *key)
{
  j->cur = json_is_object(j->cur) ? json_object_get(j->cur, key) : NULL;
}

/* Applies [i] or, if neg, [-i] (counted from the end; -0 is 0). */
static void apply_index(struct jp *j, size_t i, int neg)
{
  size_t n = json_array_size(j->cur);

  if (!json_is_array(j->cur) || i >= n + (neg && i > 0)) {
    j->cur = NULL;
    return;
  }
  j->cur = json_array_get(j->cur, neg && i > 0 ? n - i : i);
}

/* Reads the name after a '.', unescaping it into key. */
static int read_name(struct jp *j, char *key)
{
  const char *start = j->p;
  size_t n = 0;

  while (j->p < j->end && (is_name_char(*j->p) || *j->p == '\\')) {
    if (*j->p == '\\' && j->p + 1 >= j->end)
      return jp_fail(j, "dangling backslash at the end of the path");
    if (*j->p == '\\')
      j->p++;
    if (n >= GQ_JSONPATH_KEY_MAX)
      return jp_fail(j, "field name too long (more than %d bytes)",
                     GQ_JSONPATH_KEY_MAX);
    key[n++] = *j->p++;
  }
  key[n] = '\0';
  if (j->p - start == 1 && *start == '*')
    return jp_fail(j, "unsupported wildcard '.*' " MULTI);
  if (n == 0 && j->p < j->end && *j->p == '.')
    return jp_fail(j, "unsupported recursive descent '..' " MULTI);
  if (n == 0)
    return jp_fail(j, "empty field name");
  return 0;
}

/* Reads ['key'] from the opening quote on, unescaping into key. */
static int read_quoted(struct jp *j, char *key)
{
  size_t n = 0;

  for (j->p++; j->p < j->end && *j->p != '\''; j->p++) {
    if (*j->p == '\\' && j->p + 1 < j->end)
      j->p++;
    if (n >= GQ_JSONPATH_KEY_MAX)
      return jp_fail(j, "field name too long (more than %d bytes)",
                     GQ_JSONPATH_KEY_MAX);
    key[n++] = *j->p;
  }
  key[n] = '\0';
  if (j->p >= j->end)
    return jp_fail(j, "unterminated quoted key");
  j->p++;
  if (j->p < j->end && *j->p == ',')
    return jp_fail(j, "unsupported union " MULTI);
  if (j->p >= j->end || *j->p != ']')
    return jp_fail(j, "expected ']' after quoted key");
  j->p++;
  return 0;
}

/* Reads [n] or [-n] from after the '[' and applies it. */
static int read_index(struct jp *j)
{
  const char *s = j->p;
  const char *close = NULL;
  size_t len, i, v = 0;
  int neg;

  if (s < j->end && *s == '?')
    return jp_fail(j, "unsupported filter '[?(...)]' " MULTI);
  if (s < j->end)
    close = memchr(s, ']', (size_t)(j->end - s));
  if (!close)
    return jp_fail(j, "unterminated array");
  len = (size_t)(close - s);
  j->p = close + 1;
  if (memchr(s, ':', len) || memchr(s, ',', len) || (len == 1 && *s == '*'))
    return jp_fail(j, "unsupported slice, union or wildcard '[%.*s]' " MULTI,
                   (int)len, s);
  neg = len > 0 && *s == '-';
  for (i = (size_t)neg; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      break;
    v = v < INDEX_CAP ? v * 10 + (size_t)(s[i] - '0') : INDEX_CAP;
  }
  if (len == (size_t)neg || i < len)
    return jp_fail(j, "invalid array index \"%.*s\"", (int)len, s);
  apply_index(j, v, neg);
  return 0;
}

/* Parses and applies one step: .name, ['key'] or [index]. */
static int read_step(struct jp *j)
{
  char key[GQ_JSONPATH_KEY_MAX + 1];
  char c = *j->p++;
  int rc;

  if (c == '[' && j->p < j->end && *j->p == '\'')
    rc = read_quoted(j, key);
  else if (c == '[')
    return read_index(j);
  else if (c == '.')
    rc = read_name(j, key);
  else
    return jp_fail(j, "unrecognized character '%c' in the path", c);
  if (rc == 0)
    apply_key(j, key);
  return rc;
}

/* Strips "{ ... }" (when allowed) and checks the leading '.'. */
static int read_frame(struct jp *j, const char *path, int braces_ok)
{
  if (!path || !*path)
    return jp_fail(j, "must be non-empty");
  j->p = path;
  j->end = path + strlen(path);
  if (*path == '{' && braces_ok) {
    if (j->end[-1] != '}' || j->end - path < 2)
      return jp_fail(j, "unclosed action: missing '}'");
    j->p++;
    j->end--;
    while (j->p < j->end && is_blank(*j->p))
      j->p++;
  }
  /* kubectl skips blanks inside the action the apiserver wraps the path
   * in, so ".a " works there; a leading blank fails the '.' check below,
   * as it does in the apiserver. */
  while (j->end > j->p && is_blank(j->end[-1]))
    j->end--;
  if (j->p >= j->end)
    return jp_fail(j, "must be non-empty");
  if (*j->p != '.')
    return jp_fail(j, "must be a simple json path starting with .");
  return 0;
}

/* Walks obj along path; *out is the value or NULL if absent. */
static int jp_eval(const json_t *obj, const char *path, int braces_ok,
                   const json_t **out, char *err, size_t errlen)
{
  struct jp j;
  int rc;

  memset(&j, 0, sizeof(j));
  j.err = err;
  j.errlen = errlen;
  j.cur = obj;
  rc = read_frame(&j, path, braces_ok);
  if (rc == 0 && j.end - j.p == 1) /* "." is the object itself */
    j.p++;
  while (rc == 0 && j.p < j.end)
    rc = read_step(&j);
  *out = rc == 0 ? j.cur : NULL;
  return rc;
}

const json_t *gq_jsonpath_get(const json_t *obj, const char *path)
{
  const json_t *v = NULL;

  if (!obj)
    return NULL;
  jp_eval(obj, path, 1, &v, NULL, 0);
  return v;
}

int gq_jsonpath_valid(const char *path, char *err, size_t errlen)
{
  const json_t *v;

  if (err && errlen > 0)
    err[0] = '\0';
  return jp_eval(NULL, path, 0, &v, err, errlen);
}
