/* api/wire.c - framing, decoding and retry policy of the Kubernetes API
 * (see wire.h). Pure: every input is a parameter; nothing here does I/O,
 * reads a clock or logs.
 */
#include "api/wire.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/err.h"

/* ---- text helpers ------------------------------------------------------- */

/* Returns the length of the valid UTF-8 sequence at s (n >= 1 bytes
 * available), or 0 if the bytes there are not one. Strict as RFC 3629
 * table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
  unsigned char c = s[0], lo = 0x80, hi = 0xBF;
  size_t k, i;

  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF)
    k = 2;
  else if (c >= 0xE0 && c <= 0xEF)
    k = 3;
  else if (c >= 0xF0 && c <= 0xF4)
    k = 4;
  else
    return 0;
  if (c == 0xE0)
    lo = 0xA0;
  else if (c == 0xED)
    hi = 0x9F;
  else if (c == 0xF0)
    lo = 0x90;
  else if (c == 0xF4)
    hi = 0x8F;
  if (n < k || s[1] < lo || s[1] > hi)
    return 0;
  for (i = 2; i < k; i++)
    if (s[i] < 0x80 || s[i] > 0xBF)
      return 0;
  return k;
}

static int is_ctl(unsigned char c)
{
  return c < 0x20 || c == 0x7f;
}

/* Copies n bytes of src into dst (cap bytes, always NUL-terminated) as one
 * printable line for a log: runs of blanks and control characters become
 * one space, bytes that are not UTF-8 become '?', the ends are trimmed and
 * a multi-byte character is never cut in half. Server text (an HTML error
 * page, a proxy's message) must not be able to forge log lines. */
static void copy_text(char *dst, size_t cap, const char *src, size_t n)
{
  const unsigned char *s = (const unsigned char *)src;
  size_t i = 0, out = 0;
  int space = 1; /* drops leading blanks */

  if (cap == 0)
    return;
  while (i < n) {
    size_t k = utf8_len(s + i, n - i);

    if (k == 1 && (is_ctl(s[i]) || s[i] == ' ')) {
      if (!space && out + 1 < cap)
        dst[out++] = ' ';
      space = 1;
      i++;
      continue;
    }
    if (out + (k ? k : 1) >= cap)
      break;
    if (k == 0) {
      dst[out++] = '?';
      i++;
    } else {
      memcpy(dst + out, s + i, k);
      out += k;
      i += k;
    }
    space = 0;
  }
  while (out > 0 && dst[out - 1] == ' ')
    out--;
  dst[out] = '\0';
}

/* ---- NDJSON framing ----------------------------------------------------- */

void gq_ndjson_init(struct gq_ndjson *f, size_t max_line)
{
  /* The buffer holds one byte more than a line so that a '\r' whose '\n'
   * comes in the next chunk does not count against the line. Clamped so
   * that the buffer's cap + 1 cannot wrap. */
  if (max_line == 0)
    max_line = 1;
  if (max_line > SIZE_MAX / 2)
    max_line = SIZE_MAX / 2;
  f->max_line = max_line;
  gq_buf_init(&f->line, max_line + 1);
}

size_t gq_ndjson_pending(const struct gq_ndjson *f)
{
  return f->line.len;
}

const char *gq_ndjson_limit_msg(const struct gq_ndjson *f, char *buf,
                                size_t len)
{
  snprintf(buf, len, "watch event line exceeds the limit of %zu bytes "
           "(max_line)", f->max_line);
  return buf;
}

void gq_ndjson_release(struct gq_ndjson *f)
{
  gq_buf_release(&f->line);
}

/* Hands one complete line (its '\n' removed) to cb. The limit is checked
 * here on the line itself, so a line that arrives whole in one chunk (and
 * never touches the buffer) is held to it too, and the outcome does not
 * depend on where the chunks were cut. */
static int deliver(const struct gq_ndjson *f, const char *line, size_t len,
                   gq_ndjson_line_cb cb, void *arg)
{
  if (len > 0 && line[len - 1] == '\r')
    len--;
  if (len > f->max_line)
    return GQ_ETOOBIG;
  if (len == 0)
    return 0; /* blank lines carry nothing */
  return cb(line, len, arg);
}

/* Delivers the line made of the buffered prefix (if any) and p[0..n). The
 * common case, a whole line inside one chunk, goes straight from the chunk
 * without a copy. */
static int complete_line(struct gq_ndjson *f, const char *p, size_t n,
                         gq_ndjson_line_cb cb, void *arg)
{
  int rc;

  if (f->line.len == 0)
    return deliver(f, p, n, cb, arg);
  rc = gq_buf_append(&f->line, p, n); /* GQ_ETOOBIG frees the buffer */
  if (rc != 0)
    return rc;
  rc = deliver(f, f->line.data, f->line.len, cb, arg);
  /* cb may have released the framer; a reset copes with that. */
  gq_buf_reset(&f->line);
  return rc;
}

int gq_ndjson_feed(struct gq_ndjson *f, const char *p, size_t n,
                   gq_ndjson_line_cb cb, void *arg)
{
  while (n > 0) {
    const char *nl = memchr(p, '\n', n);
    size_t take;
    int rc;

    if (!nl)
      return gq_buf_append(&f->line, p, n); /* GQ_ETOOBIG empties it */
    take = (size_t)(nl - p);
    rc = complete_line(f, p, take, cb, arg);
    if (rc != 0) {
      gq_buf_reset(&f->line);
      return rc;
    }
    p += take + 1;
    n -= take + 1;
  }
  return 0;
}

int gq_ndjson_finish(struct gq_ndjson *f, gq_ndjson_line_cb cb, void *arg)
{
  int rc = 0;

  if (f->line.len > 0)
    rc = deliver(f, f->line.data, f->line.len, cb, arg);
  gq_buf_reset(&f->line);
  return rc;
}

/* ---- watch events ------------------------------------------------------- */

static const char *const watch_types[] = {"ADDED", "MODIFIED", "DELETED",
                                          "BOOKMARK", "ERROR"};
#define N_WATCH_TYPES (sizeof(watch_types) / sizeof(watch_types[0]))

const char *gq_watch_type_name(enum gq_watch_type t)
{
  return (size_t)t < N_WATCH_TYPES ? watch_types[t] : "UNKNOWN";
}

/* Writes "watch event: <detail>" into err (which may be NULL) and returns
 * GQ_EPARSE. The detail may quote the input, so it is sanitised. */
__attribute__((format(printf, 3, 4))) static int
event_fail(char *err, size_t errlen, const char *fmt, ...)
{
  char detail[256];
  va_list ap;
  int n;

  if (!err || errlen == 0)
    return GQ_EPARSE;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof(detail), fmt, ap);
  va_end(ap);
  n = snprintf(err, errlen, "watch event: ");
  if (n >= 0 && (size_t)n < errlen)
    copy_text(err + n, errlen - (size_t)n, detail, strlen(detail));
  return GQ_EPARSE;
}

static int event_type(const json_t *ev, enum gq_watch_type *type, char *err,
                      size_t errlen)
{
  const char *s = json_string_value(json_object_get(ev, "type"));
  size_t i;

  if (!s)
    return event_fail(err, errlen, "no type");
  for (i = 0; i < N_WATCH_TYPES; i++) {
    if (strcmp(s, watch_types[i]) == 0) {
      *type = (enum gq_watch_type)i;
      return 0;
    }
  }
  return event_fail(err, errlen, "unknown type \"%.40s\"", s);
}

/* Copies obj.metadata.resourceVersion into rv ("" when absent). */
static int event_rv(const json_t *obj, char *rv, char *err, size_t errlen)
{
  const json_t *md = json_object_get(obj, "metadata");
  const json_t *v = json_object_get(md, "resourceVersion");
  size_t n;

  if (!v || json_is_null(v))
    return 0;
  if (!json_is_string(v))
    return event_fail(err, errlen, "metadata.resourceVersion is not a string");
  n = json_string_length(v);
  if (n >= GQ_RV_MAX)
    return event_fail(err, errlen,
                      "metadata.resourceVersion too long (%zu bytes)", n);
  memcpy(rv, json_string_value(v), n + 1);
  return 0;
}

/* Checks the event's shape; *obj is borrowed from ev. */
static int event_parts(const json_t *ev, enum gq_watch_type *type, json_t **obj,
                       char *rv, char *err, size_t errlen)
{
  int rc;

  if (!json_is_object(ev))
    return event_fail(err, errlen, "not a JSON object");
  rc = event_type(ev, type, err, errlen);
  if (rc != 0)
    return rc;
  *obj = json_object_get(ev, "object");
  if (!*obj || json_is_null(*obj))
    return event_fail(err, errlen, "no object");
  if (!json_is_object(*obj))
    return event_fail(err, errlen, "object is not a JSON object");
  rc = event_rv(*obj, rv, err, errlen);
  if (rc != 0)
    return rc;
  if (*type == GQ_WATCH_BOOKMARK && rv[0] == '\0')
    return event_fail(err, errlen, "BOOKMARK without metadata.resourceVersion");
  return 0;
}

int gq_watch_event_decode(const char *line, size_t len,
                          enum gq_watch_type *type, json_t **object, char *rv,
                          char *err, size_t errlen)
{
  enum gq_watch_type t = GQ_WATCH_ERROR;
  json_t *ev, *obj = NULL;
  json_error_t je;
  int rc;

  *object = NULL;
  rv[0] = '\0';
  if (err && errlen)
    err[0] = '\0';
  ev = json_loadb(line, len, 0, &je);
  if (!ev)
    return event_fail(err, errlen, "invalid JSON at byte %d: %s", je.position,
                      je.text);
  rc = event_parts(ev, &t, &obj, rv, err, errlen);
  if (rc == 0) {
    *type = t;
    *object = json_incref(obj); /* outlives ev, which we drop */
  } else {
    rv[0] = '\0';
  }
  json_decref(ev);
  return rc;
}

/* ---- managedFields, dropped before parsing ------------------------------- */

/* The end of the string starting at in[i] (its opening quote), past the
 * closing quote; len when it has none. */
static size_t str_end(const char *in, size_t i, size_t len)
{
  for (i++; i < len; i++) {
    if (in[i] == '\\')
      i++;
    else if (in[i] == '"')
      return i + 1;
  }
  return len;
}

static size_t skip_ws(const char *in, size_t i, size_t len)
{
  while (i < len && (in[i] == ' ' || in[i] == '\t' || in[i] == '\n' ||
                     in[i] == '\r'))
    i++;
  return i;
}

/* The end of the JSON value starting at in[i]. */
static size_t value_end(const char *in, size_t i, size_t len)
{
  int depth = 0;

  if (i < len && in[i] == '"')
    return str_end(in, i, len);
  for (; i < len; i++) {
    if (in[i] == '"') {
      i = str_end(in, i, len) - 1;
    } else if (in[i] == '{' || in[i] == '[') {
      depth++;
    } else if (in[i] == '}' || in[i] == ']') {
      if (depth == 0)
        return i; /* a scalar's end, or a bad close */
      if (--depth == 0)
        return i + 1;
    } else if (depth == 0 && (in[i] == ',' || in[i] == ' ' ||
                              in[i] == '\n' || in[i] == '\t' ||
                              in[i] == '\r')) {
      return i;
    }
  }
  return len;
}

#define DROP_MAX_DEPTH 256

/* One open container of gq_json_drop_managed_fields(). */
struct drop_level {
  unsigned char object, meta, want_key, members, key_meta;
  size_t comma_w; /* where the last comma of this object went in out */
};

size_t gq_json_drop_managed_fields(const char *in, size_t len, char *out)
{
  static const char mf[] = "\"managedFields\"", md[] = "\"metadata\"";
  struct drop_level st[DROP_MAX_DEPTH];
  int top = -1;
  size_t r = 0, w = 0, e;

  while (r < len) {
    char c = in[r];
    struct drop_level *t = top >= 0 ? &st[top] : NULL;

    if (c == '"') {
      e = str_end(in, r, len);
      if (t && t->object && t->want_key && t->meta &&
          e - r == sizeof(mf) - 1 && memcmp(in + r, mf, e - r) == 0) {
        size_t v = skip_ws(in, e, len);

        if (v < len && in[v] == ':') { /* drop the member */
          r = value_end(in, skip_ws(in, v + 1, len), len);
          if (t->members) {
            w = t->comma_w; /* with the comma before it */
            t->want_key = 0;
          } else if ((v = skip_ws(in, r, len)) < len && in[v] == ',') {
            r = v + 1; /* the first member: with the comma after it */
          }
          continue;
        }
      }
      if (t && t->object && t->want_key) {
        t->key_meta = e - r == sizeof(md) - 1 && memcmp(in + r, md, e - r) == 0;
        t->want_key = 0;
      }
      memcpy(out + w, in + r, e - r);
      w += e - r;
      r = e;
      continue;
    }
    if (c == '{' || c == '[') {
      if (top + 1 == DROP_MAX_DEPTH)
        break;
      st[++top] = (struct drop_level){c == '{', t && t->object && t->key_meta,
                                      c == '{', 0, 0, 0};
    } else if (c == '}' || c == ']') {
      if (top >= 0)
        top--;
    } else if (c == ',' && t && t->object) {
      t->comma_w = w;
      t->members = 1;
      t->want_key = 1;
    }
    out[w++] = c;
    r++;
  }
  memcpy(out + w, in + r, len - r);
  return w + len - r;
}

/* ---- Status ------------------------------------------------------------- */

/* Reasons and the sentences client-go's NewGenericServerResponse uses when
 * a response has no Status body (k8s.io/apimachinery/pkg/api/errors). The
 * first entry for a code is the one used for it; later ones serve only the
 * reason -> code lookup of Status objects without a code. */
static const struct generic {
  int code;
  const char *reason;
  const char *message;
} generics[] = {
    {400, "BadRequest",
     "the server rejected our request for an unknown reason"},
    {401, "Unauthorized",
     "the server has asked for the client to provide credentials"},
    {403, "Forbidden",
     "the server does not allow access to the requested resource"},
    {404, "NotFound", "the server could not find the requested resource"},
    {405, "MethodNotAllowed",
     "the server does not allow this method on the requested resource"},
    {406, "NotAcceptable",
     "the server was unable to respond with a content type that the client "
     "supports"},
    {409, "Conflict", "the server reported a conflict"},
    {410, "Gone", "the requested resource is no longer available"},
    {413, "RequestEntityTooLarge",
     "the server rejected our request because it is too large"},
    {415, "UnsupportedMediaType",
     "the body of the request was in an unknown format"},
    {422, "Invalid",
     "the server rejected our request due to an error in our request"},
    {429, "TooManyRequests",
     "the server has received too many requests and has asked us to try "
     "again later"},
    {500, "InternalError",
     "an error on the server has prevented the request from succeeding"},
    {503, "ServiceUnavailable",
     "the server is currently unable to handle the request"},
    {504, "Timeout",
     "the server was unable to return a response in the time allotted, but "
     "may still be processing the request"},
    {409, "AlreadyExists", NULL},
    {410, "Expired", NULL},
    {500, "ServerTimeout", NULL},
};
#define N_GENERICS (sizeof(generics) / sizeof(generics[0]))

/* How much of a non-Status body becomes the message. */
#define BODY_MESSAGE_MAX 200

static const struct generic *generic_by_code(int code)
{
  size_t i;

  for (i = 0; i < N_GENERICS; i++)
    if (generics[i].code == code)
      return &generics[i];
  return code >= 500 && code < 600 ? generic_by_code(500) : NULL;
}

static int code_by_reason(const char *reason)
{
  size_t i;

  for (i = 0; i < N_GENERICS; i++)
    if (strcmp(generics[i].reason, reason) == 0)
      return generics[i].code;
  return 500; /* a failure the server did not classify */
}

static int status_err(int code, const char *reason)
{
  if (code >= 200 && code < 300)
    return 0;
  if (strcmp(reason, "Expired") == 0 || strcmp(reason, "Gone") == 0)
    return GQ_EGONE;
  switch (code) {
  case 401:
    return GQ_EUNAUTHORIZED;
  case 403:
    return GQ_EFORBIDDEN;
  case 404:
    return GQ_ENOTFOUND;
  case 409:
    return strcmp(reason, "AlreadyExists") == 0 ? GQ_EEXIST : GQ_ECONFLICT;
  case 410:
    return GQ_EGONE;
  case 429:
    return GQ_ETOOMANY;
  case 504:
    return GQ_ETIMEDOUT;
  default:
    break;
  }
  if (code >= 400 && code < 500)
    return GQ_EINVAL;
  if (code >= 500 && code < 600)
    return GQ_EUNAVAIL;
  return GQ_EIO;
}

static void status_clear(struct gq_k8s_status *st)
{
  st->code = 0;
  st->reason[0] = '\0';
  st->message[0] = '\0';
  st->retry_after_s = 0;
}

static int is_status(const json_t *v)
{
  const char *kind = json_string_value(json_object_get(v, "kind"));

  return kind && strcmp(kind, "Status") == 0;
}

static void text_field(const json_t *o, const char *key, char *dst, size_t cap)
{
  const json_t *v = json_object_get(o, key);

  if (json_is_string(v))
    copy_text(dst, cap, json_string_value(v), json_string_length(v));
}

static int small_int(const json_t *v, int min, int max)
{
  json_int_t i = json_integer_value(v); /* 0 unless an integer */

  return i >= min && i <= max ? (int)i : 0;
}

/* Fills st from a Status object; code 0 when it has none. */
static void fill_from_status(const json_t *s, struct gq_k8s_status *st)
{
  const json_t *details = json_object_get(s, "details");

  st->code = small_int(json_object_get(s, "code"), 100, 999);
  text_field(s, "reason", st->reason, sizeof(st->reason));
  text_field(s, "message", st->message, sizeof(st->message));
  st->retry_after_s =
      small_int(json_object_get(details, "retryAfterSeconds"), 1, INT_MAX);
}

/* Fills st for a response without a Status body: reason from the code,
 * message from the start of the body, or client-go's sentence. */
static void fill_generic(int code, const char *body, size_t len,
                         struct gq_k8s_status *st)
{
  const struct generic *g = generic_by_code(code);
  size_t cut = len < BODY_MESSAGE_MAX ? len : BODY_MESSAGE_MAX;

  st->code = code;
  if (code >= 200 && code < 300)
    return; /* a success carries no error text */
  if (g)
    snprintf(st->reason, sizeof(st->reason), "%s", g->reason);
  /* Back up to a character boundary so the cut does not leave a '?'. */
  while (cut > 0 && cut < len && ((unsigned char)body[cut] & 0xC0) == 0x80)
    cut--;
  copy_text(st->message, sizeof(st->message), body, cut);
  if (st->message[0] == '\0' && g)
    snprintf(st->message, sizeof(st->message), "%s", g->message);
  else if (st->message[0] == '\0')
    snprintf(st->message, sizeof(st->message),
             "the server responded with the status code %d but did not "
             "return more information",
             code);
}

int gq_status_decode(long http_code, const char *body, size_t len,
                     struct gq_k8s_status *st)
{
  json_t *doc = len > 0 ? json_loadb(body, len, 0, NULL) : NULL;
  int rc = gq_status_decode_doc(http_code, body, len, doc, st);

  json_decref(doc);
  return rc;
}

int gq_status_decode_doc(long http_code, const char *body, size_t len,
                         const json_t *doc, struct gq_k8s_status *st)
{
  int code = http_code > 0 && http_code < 1000 ? (int)http_code : 0;
  int ok = code >= 200 && code < 300;
  const char *status = json_string_value(json_object_get(doc, "status"));

  status_clear(st);
  /* As client-go's Result.Error(): a Status body is believed unless it
   * claims success for a failed request. */
  if (is_status(doc) && (ok || !status || strcmp(status, "Success") != 0)) {
    fill_from_status(doc, st);
    if (ok || st->code == 0)
      st->code = code;
  } else {
    fill_generic(code, body, len, st);
  }
  return ok ? 0 : status_err(st->code, st->reason);
}

int gq_status_from_json(const json_t *s, struct gq_k8s_status *out)
{
  status_clear(out);
  if (!is_status(s)) {
    snprintf(out->message, sizeof(out->message),
             "object is not a metav1.Status");
    return GQ_EPARSE;
  }
  fill_from_status(s, out);
  if (out->code == 0)
    out->code = code_by_reason(out->reason);
  return status_err(out->code, out->reason);
}

/* ---- Retry-After -------------------------------------------------------- */

#define DELAY_SECONDS_MAX ((int64_t)1 << 31) /* RFC 9111 §1.2.2 */
#define MS_PER_DAY INT64_C(86400000)

/* A cursor over the header value; HTTP-date is case-sensitive (RFC 9110
 * §5.6.7), so every literal is compared exactly. */
struct cur {
  const char *p, *end;
};

struct http_date {
  int year, mon, day; /* mon 1..12 */
  int sod;            /* second of the day, 0..86400 (leap second) */
};

static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
static const char *const wdays[] = {"Mon", "Tue", "Wed", "Thu",
                                    "Fri", "Sat", "Sun"};
static const char *const wdays_long[] = {"Monday",   "Tuesday", "Wednesday",
                                         "Thursday", "Friday",  "Saturday",
                                         "Sunday"};

static int eat(struct cur *c, const char *lit)
{
  size_t n = strlen(lit);

  if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
    return 0;
  c->p += n;
  return 1;
}

/* Reads exactly 'digits' decimal digits. */
static int num(struct cur *c, int digits, int *out)
{
  int v = 0, i;

  if (c->end - c->p < digits)
    return 0;
  for (i = 0; i < digits; i++) {
    if (c->p[i] < '0' || c->p[i] > '9')
      return 0;
    v = v * 10 + (c->p[i] - '0');
  }
  c->p += digits;
  *out = v;
  return 1;
}

/* Matches one of n names; returns its index + 1, or 0. */
static int name(struct cur *c, const char *const *names, int n)
{
  int i;

  for (i = 0; i < n; i++)
    if (eat(c, names[i]))
      return i + 1;
  return 0;
}

/* time-of-day = hour ":" minute ":" second (second 60 is a leap second). */
static int hms(struct cur *c, int *sod)
{
  int h, m, s;

  if (!num(c, 2, &h) || !eat(c, ":") || !num(c, 2, &m) || !eat(c, ":") ||
      !num(c, 2, &s) || h > 23 || m > 59 || s > 60)
    return 0;
  *sod = (h * 60 + m) * 60 + s;
  return 1;
}

/* IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT". */
static int imf_fixdate(struct cur c, struct http_date *d)
{
  return name(&c, wdays, 7) && eat(&c, ", ") && num(&c, 2, &d->day) &&
         eat(&c, " ") && (d->mon = name(&c, months, 12)) && eat(&c, " ") &&
         num(&c, 4, &d->year) && eat(&c, " ") && hms(&c, &d->sod) &&
         eat(&c, " GMT") && c.p == c.end;
}

/* rfc850-date: "Sunday, 06-Nov-94 08:49:37 GMT"; year two digits. */
static int rfc850_date(struct cur c, struct http_date *d)
{
  return name(&c, wdays_long, 7) && eat(&c, ", ") && num(&c, 2, &d->day) &&
         eat(&c, "-") && (d->mon = name(&c, months, 12)) && eat(&c, "-") &&
         num(&c, 2, &d->year) && eat(&c, " ") && hms(&c, &d->sod) &&
         eat(&c, " GMT") && c.p == c.end;
}

/* asctime-date: "Sun Nov  6 08:49:37 1994" (day padded with a space). */
static int asctime_date(struct cur c, struct http_date *d)
{
  if (!name(&c, wdays, 7) || !eat(&c, " ") ||
      !(d->mon = name(&c, months, 12)) || !eat(&c, " "))
    return 0;
  if (!(eat(&c, " ") ? num(&c, 1, &d->day) : num(&c, 2, &d->day)))
    return 0;
  return eat(&c, " ") && hms(&c, &d->sod) && eat(&c, " ") &&
         num(&c, 4, &d->year) && c.p == c.end;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil; exact for every year, no libc time zone involved). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
  int64_t era, yoe, doy, doe;

  y -= m <= 2;
  era = (y >= 0 ? y : y - 399) / 400;
  yoe = y - era * 400;
  doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/* The Gregorian year containing Unix ms t (civil_from_days, year only). */
static int64_t year_of(int64_t t)
{
  int64_t z = (t >= 0 ? t / MS_PER_DAY : (t + 1) / MS_PER_DAY - 1) + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;

  return yoe + era * 400 + (mp >= 10); /* Jan and Feb close the year */
}

static int days_in_month(int y, int m)
{
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

  return m == 2 && leap ? 29 : mdays[m - 1];
}

/* RFC 9110 §5.6.7: a two-digit year more than 50 years in the future
 * means the most recent past year with those digits. Taken per year: the
 * candidate is the year ending in yy that is at most now + 50. */
static int full_year(int yy, int64_t now_ms)
{
  int64_t now_y = year_of(now_ms);
  int64_t y = now_y - now_y % 100 + yy;

  if (y > now_y + 50)
    y -= 100;
  else if (y + 100 <= now_y + 50)
    y += 100;
  return (int)y;
}

static int parse_http_date(struct cur c, int64_t now_ms, int64_t *ms)
{
  struct http_date d = {0, 0, 0, 0};

  if (rfc850_date(c, &d))
    d.year = full_year(d.year, now_ms);
  else if (!imf_fixdate(c, &d) && !asctime_date(c, &d))
    return 0;
  if (d.day < 1 || d.day > days_in_month(d.year, d.mon))
    return 0;
  *ms = days_from_civil(d.year, d.mon, d.day) * MS_PER_DAY +
        (int64_t)d.sod * 1000;
  return 1;
}

/* delay-seconds = 1*DIGIT, saturating at DELAY_SECONDS_MAX. */
static int parse_delay_seconds(struct cur c, int64_t *ms)
{
  int64_t v = 0;

  if (c.p == c.end)
    return 0;
  for (; c.p < c.end; c.p++) {
    if (*c.p < '0' || *c.p > '9')
      return 0;
    v = v * 10 + (*c.p - '0');
    if (v > DELAY_SECONDS_MAX)
      v = DELAY_SECONDS_MAX;
  }
  *ms = v * 1000;
  return 1;
}

static int is_ows(char ch)
{
  return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

int gq_retry_after_parse(const char *header, int64_t now_ms, int64_t *delay_ms)
{
  struct cur c;
  int64_t v;

  if (!header)
    return GQ_EPARSE;
  c.p = header;
  c.end = header + strlen(header);
  while (c.p < c.end && is_ows(*c.p))
    c.p++;
  while (c.end > c.p && is_ows(c.end[-1]))
    c.end--;
  if (parse_delay_seconds(c, &v)) {
    *delay_ms = v;
    return 0;
  }
  if (!parse_http_date(c, now_ms, &v))
    return GQ_EPARSE;
  *delay_ms = v > now_ms ? v - now_ms : 0;
  return 0;
}

/* ---- retry policy ------------------------------------------------------- */

/* Failures of the connection itself, as libuv and libc report them. A
 * request cut off by one of these may or may not have reached the server,
 * which is why client-go retries them only for GET. */
static int is_network_err(int err)
{
  switch (err) {
  case GQ_EIO:
  case GQ_ECLOSED:
  case -ECONNRESET:
  case -ECONNREFUSED:
  case -ECONNABORTED:
  case -EPIPE:
  case -ETIMEDOUT:
  case -ENETUNREACH:
  case -ENETDOWN:
  case -EHOSTUNREACH:
    return 1;
  default:
    return 0;
  }
}

int gq_should_retry(int gq_err, int idempotent)
{
  if (gq_err == GQ_ETOOMANY)
    return 1; /* rejected before processing: safe for any verb */
  if (!idempotent)
    return 0;
  return gq_err == GQ_EUNAVAIL || gq_err == GQ_ETIMEDOUT ||
         is_network_err(gq_err);
}

/* ---- token bucket ------------------------------------------------------- */

void gq_ratelimit_init(struct gq_ratelimit *r, double qps, int burst,
                       int64_t now_ms)
{
  r->qps = qps > 0 ? qps : 0; /* NaN and negatives: unlimited */
  r->burst = burst >= 1 ? burst : 1;
  r->tokens = r->burst;
  r->last_ms = now_ms;
}

/* Adds the tokens earned since last_ms, up to burst (rate.Limiter's
 * advance(); like it, a clock that went back earns nothing). */
static void refill(struct gq_ratelimit *r, int64_t now_ms)
{
  double earned;

  if (now_ms <= r->last_ms)
    return;
  earned = ((double)now_ms - (double)r->last_ms) * r->qps / 1000.0;
  r->tokens += earned;
  if (r->tokens > r->burst)
    r->tokens = r->burst;
  r->last_ms = now_ms;
}

int64_t gq_ratelimit_reserve(struct gq_ratelimit *r, int64_t now_ms)
{
  double wait;

  if (r->qps <= 0)
    return 0;
  refill(r, now_ms);
  r->tokens -= 1.0;
  if (r->tokens >= 0)
    return 0;
  /* The deficit in ms, rounded up; the slack absorbs binary fractions
   * such as 3 qps (333.33... ms) turning 1000 ms into 1000.0000001. */
  wait = ceil(-r->tokens * 1000.0 / r->qps - 1e-6);
  return wait < 9e18 ? (int64_t)wait : INT64_MAX;
}

int64_t gq_ratelimit_try(struct gq_ratelimit *r, int64_t now_ms)
{
  return gq_ratelimit_try_above(r, now_ms, 0);
}

int64_t gq_ratelimit_try_above(struct gq_ratelimit *r, int64_t now_ms,
                               int keep)
{
  double need = 1.0 + (keep > 0 ? keep : 0), wait;

  if (r->qps <= 0)
    return 0;
  if (need > r->burst) /* the bucket never holds that many */
    need = r->burst;
  refill(r, now_ms);
  if (r->tokens >= need) {
    r->tokens -= 1.0;
    return 0;
  }
  wait = ceil((need - r->tokens) * 1000.0 / r->qps - 1e-6);
  if (wait < 1)
    wait = 1;
  return wait < 9e18 ? (int64_t)wait : INT64_MAX;
}

/* ---- watch timeout ------------------------------------------------------ */

#define MIN_WATCH_TIMEOUT_S 300 /* reflector.go: minWatchTimeout = 5 min */

int64_t gq_watch_timeout_s(double rand01)
{
  int64_t s;

  if (!(rand01 > 0)) /* also NaN */
    rand01 = 0;
  if (rand01 > 1)
    rand01 = 1;
  /* 300 * rand01 can round up to 300 for rand01 just below 1; the
   * interval is half-open, so clamp. */
  s = MIN_WATCH_TIMEOUT_S + (int64_t)(MIN_WATCH_TIMEOUT_S * rand01);
  return s < 2 * MIN_WATCH_TIMEOUT_S ? s : 2 * MIN_WATCH_TIMEOUT_S - 1;
}
