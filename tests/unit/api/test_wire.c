/* api/wire: NDJSON framing, watch event and Status decoding, Retry-After,
 * retry policy, token bucket and watch timeout.
 *
 * The watch transcripts in tests/fixtures/watch/ are compact JSON as the
 * apiserver writes it (Go's encoder: "<" as \u003c, one event per line).
 * Each is first decoded line by line, independently of the framer, into a
 * reference list checked against the table; then it is fed to the framer
 * cut into two chunks at every byte offset, one byte at a time, with
 * "\r\n" line ends and without its final newline, and every run must
 * yield exactly the reference list.
 *
 * Each delivered line is compared byte for byte with the reference line,
 * which is stricter than comparing decoded objects (JSON would forgive a
 * stray '\r' the framer failed to strip), and since decoding is a pure
 * function of those bytes the decoded event is then the reference event.
 * Re-parsing every line of every one of the ~70k runs would take jansson
 * most of a minute under ASan, so the full decode-and-compare runs on the
 * byte-by-byte pass and on any line whose bytes differ.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/wire.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "tests/support/fixture.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define FIXTURE_DIR GQ_SOURCE_DIR "/tests/fixtures/watch/"
#define MAX_LINE (256 * 1024)

/* ---- reference decoding of a transcript --------------------------------- */

struct event {
  enum gq_watch_type type;
  char rv[GQ_RV_MAX];
  json_t *obj;
  const char *line; /* the raw line, borrowed from the transcript */
  size_t len;
};

struct stream {
  struct event *ev;
  size_t n;
};

static void decode_or_fail(const char *name, const char *line, size_t len,
                           struct event *out)
{
  char err[256];
  int rc = gq_watch_event_decode(line, len, &out->type, &out->obj, out->rv, err,
                                 sizeof(err));

  if (rc != 0)
    fail_msg("%s: decode: %s", name, err);
}

/* Splits data at '\n' by hand (not with the framer under test). */
static void reference(const char *name, const char *data, size_t len,
                      struct stream *s)
{
  const char *p = data, *end = data + len;

  s->ev = NULL;
  s->n = 0;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

    s->ev = gq_xrealloc(s->ev, (s->n + 1) * sizeof(*s->ev));
    decode_or_fail(name, p, n, &s->ev[s->n]);
    s->ev[s->n].line = p;
    s->ev[s->n++].len = n;
    p += n + 1;
  }
}

static void stream_release(struct stream *s)
{
  for (size_t i = 0; i < s->n; i++)
    json_decref(s->ev[i].obj);
  free(s->ev);
}

/* ---- the framer against the reference ----------------------------------- */

struct check {
  const char *name;
  const struct stream *want;
  size_t got;   /* events delivered so far */
  size_t split; /* where the input was cut, for messages */
  int decode;   /* decode and compare even lines equal to the reference */
};

static int check_line(const char *line, size_t len, void *arg)
{
  struct check *c = arg;
  const struct event *w;
  struct event e;

  if (c->got >= c->want->n)
    fail_msg("%s split %zu: extra event %zu", c->name, c->split, c->got);
  w = &c->want->ev[c->got];
  if (!c->decode && len == w->len && memcmp(line, w->line, len) == 0) {
    c->got++;
    return 0;
  }
  decode_or_fail(c->name, line, len, &e);
  if (e.type != w->type || strcmp(e.rv, w->rv) != 0 ||
      !json_equal(e.obj, w->obj))
    fail_msg("%s split %zu: event %zu is %s rv %s, want %s rv %s", c->name,
             c->split, c->got, gq_watch_type_name(e.type), e.rv,
             gq_watch_type_name(w->type), w->rv);
  if (len != w->len || memcmp(line, w->line, len) != 0)
    fail_msg("%s split %zu: event %zu decodes alike but its %zu bytes differ "
             "from the reference's %zu",
             c->name, c->split, c->got, len, w->len);
  json_decref(e.obj);
  c->got++;
  return 0;
}

/* Feeds data cut at every offset into two chunks, then one byte at a time,
 * and checks each run decodes to want. With 'finish' the stream is ended
 * with gq_ndjson_finish(); 'want_before_finish' events must have arrived
 * before it. */
static void every_split(const char *name, const char *data, size_t len,
                        const struct stream *want, size_t want_before_finish)
{
  struct gq_ndjson f;
  struct check c = {name, want, 0, 0, 0};

  gq_ndjson_init(&f, MAX_LINE);
  for (size_t k = 0; k <= len + 1; k++) {
    c.got = 0;
    c.split = k;
    c.decode = k > len;
    if (k <= len) {
      assert_int_equal(gq_ndjson_feed(&f, data, k, check_line, &c), 0);
      assert_int_equal(gq_ndjson_feed(&f, data + k, len - k, check_line, &c),
                       0);
    } else { /* k == len + 1 stands for "byte by byte" */
      for (size_t i = 0; i < len; i++)
        assert_int_equal(gq_ndjson_feed(&f, data + i, 1, check_line, &c), 0);
    }
    if (c.got != want_before_finish)
      fail_msg("%s split %zu: %zu events before finish, want %zu", name, k,
               c.got, want_before_finish);
    assert_int_equal(gq_ndjson_finish(&f, check_line, &c), 0);
    if (c.got != want->n)
      fail_msg("%s split %zu: %zu events, want %zu", name, k, c.got, want->n);
    assert_int_equal(gq_ndjson_pending(&f), 0);
  }
  gq_ndjson_release(&f);
}

/* ---- fixtures ----------------------------------------------------------- */

static const struct fixture_case {
  const char *file;
  const char *want_types;   /* A M D B E per event */
  const char *want_rvs;     /* resourceVersions, comma-separated */
  const char *want_newline; /* an event whose object holds a decoded "\n"
                               at this JSON path (dot-separated), or NULL */
  int want_last_status;     /* GQ_E* of a final ERROR's Status, or 0 */
} fixtures[] = {
    {"gpujobs.ndjson", "AMMBMD", "48213,48220,48301,48950,49017,49102",
     "metadata.annotations.kubectl\\.kubernetes\\.io/"
     "last-applied-configuration",
     0},
    {"pods.ndjson", "AMMMD", "51230,51236,51302,53977,54012", NULL, 0},
    {"expired.ndjson", "MME", "60114,60180,", NULL, GQ_EGONE},
};

static char type_letter(enum gq_watch_type t)
{
  return "AMDBE"[t];
}

/* Follows a dot path ("\." is a literal dot) from obj; borrowed or NULL. */
static const json_t *at_path(const json_t *obj, const char *path)
{
  char key[256];
  size_t n = 0;

  for (const char *p = path;; p++) {
    if (*p == '\\' && p[1] == '.') {
      key[n++] = *++p;
      continue;
    }
    if (*p != '.' && *p != '\0') {
      key[n++] = *p;
      continue;
    }
    key[n] = '\0';
    obj = json_object_get(obj, key);
    n = 0;
    if (*p == '\0' || !obj)
      return obj;
  }
}

static char *load(const char *file, size_t *len)
{
  char *path = gq_xasprintf(FIXTURE_DIR "%s", file);
  char *data = gq_test_read_file(path, len);

  if (!data)
    fail_msg("cannot read '%s'", path);
  free(path);
  return data;
}

/* The reference decode matches the table. */
static void check_reference(const struct fixture_case *fc,
                            const struct stream *s)
{
  char types[16] = "", rvs[256] = "";
  size_t tl = 0, rl = 0;

  for (size_t i = 0; i < s->n; i++) {
    types[tl++] = type_letter(s->ev[i].type);
    rl += (size_t)snprintf(rvs + rl, sizeof(rvs) - rl, "%s%s", i ? "," : "",
                           s->ev[i].rv);
  }
  types[tl] = '\0';
  assert_string_equal(types, fc->want_types);
  assert_string_equal(rvs, fc->want_rvs);
}

static void check_newline(const struct fixture_case *fc, const struct stream *s)
{
  const char *v = json_string_value(at_path(s->ev[0].obj, fc->want_newline));

  if (!v || !strchr(v, '\n'))
    fail_msg("%s: no decoded newline at %s", fc->file, fc->want_newline);
}

static void check_last_status(const struct fixture_case *fc,
                              const struct stream *s)
{
  const struct event *last = &s->ev[s->n - 1];
  struct gq_k8s_status st;

  assert_int_equal(last->type, GQ_WATCH_ERROR);
  assert_int_equal(gq_status_from_json(last->obj, &st), fc->want_last_status);
  assert_int_equal(st.code, 410);
  assert_string_equal(st.reason, "Expired");
  assert_string_equal(st.message, "too old resource version: 48213 (59876)");
}

static void test_fixture_reference(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(fixtures); i++) {
    const struct fixture_case *fc = &fixtures[i];
    size_t len;
    char *data = load(fc->file, &len);
    struct stream s;

    reference(fc->file, data, len, &s);
    check_reference(fc, &s);
    if (fc->want_newline)
      check_newline(fc, &s);
    if (fc->want_last_status)
      check_last_status(fc, &s);
    stream_release(&s);
    free(data);
  }
}

static void test_fixture_every_split(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(fixtures); i++) {
    size_t len;
    char *data = load(fixtures[i].file, &len);
    struct stream s;

    reference(fixtures[i].file, data, len, &s);
    every_split(fixtures[i].file, data, len, &s, s.n);
    stream_release(&s);
    free(data);
  }
}

/* The same transcripts with "\r\n" line ends: a cut between '\r' and '\n'
 * must not leave a '\r' in the line or count against the limit. */
static void test_fixture_crlf(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(fixtures); i++) {
    size_t len, n = 0;
    char *data = load(fixtures[i].file, &len);
    char *crlf = gq_xmalloc(2 * len + 1);
    struct stream s;

    reference(fixtures[i].file, data, len, &s);
    for (size_t j = 0; j < len; j++) {
      if (data[j] == '\n')
        crlf[n++] = '\r';
      crlf[n++] = data[j];
    }
    every_split(fixtures[i].file, crlf, n, &s, s.n);
    stream_release(&s);
    free(crlf);
    free(data);
  }
}

/* Without the final newline the last event arrives only from finish. */
static void test_fixture_no_final_newline(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(fixtures); i++) {
    size_t len;
    char *data = load(fixtures[i].file, &len);
    struct stream s;

    assert_true(len > 0 && data[len - 1] == '\n');
    reference(fixtures[i].file, data, len, &s);
    every_split(fixtures[i].file, data, len - 1, &s, s.n - 1);
    stream_release(&s);
    free(data);
  }
}

/* ---- framer edge cases -------------------------------------------------- */

static const struct frame_case {
  const char *name;
  size_t max_line;
  const char *input;
  int finish;             /* end with gq_ndjson_finish() */
  const char *want_lines; /* delivered lines joined with '|' */
  int want_rc;            /* first non-zero return, or 0 */
} frame_cases[] = {
    {"one line", 64, "abc\n", 0, "abc", 0},
    {"two lines", 64, "a\nbc\n", 0, "a|bc", 0},
    {"crlf", 64, "a\r\nbc\r\n", 0, "a|bc", 0},
    {"blank lines skipped", 64, "\n\r\n\na\n\r\n\n", 0, "a", 0},
    {"inner cr kept", 64, "a\rb\n", 0, "a\rb", 0},
    {"only the last cr dropped", 64, "a\r\r\n", 0, "a\r", 0},
    {"lone cr line skipped", 64, "\r\nx\n", 0, "x", 0},
    {"no final newline, no finish", 64, "a\nb", 0, "a", 0},
    {"no final newline, finish", 64, "a\nb", 1, "a|b", 0},
    {"finish drops a cr", 64, "a\nb\r", 1, "a|b", 0},
    {"finish with nothing held", 64, "a\n", 1, "a", 0},
    {"empty input, finish", 64, "", 1, "", 0},
    {"exactly max", 8, "12345678\n", 0, "12345678", 0},
    {"exactly max, crlf", 8, "12345678\r\n", 0, "12345678", 0},
    {"exactly max, finish", 8, "12345678", 1, "12345678", 0},
    {"exactly max plus cr, finish", 8, "12345678\r", 1, "12345678", 0},
    {"one over", 8, "123456789\n", 0, "", GQ_ETOOBIG},
    {"one over, crlf", 8, "123456789\r\n", 0, "", GQ_ETOOBIG},
    {"one over, finish", 8, "123456789", 1, "", GQ_ETOOBIG},
    {"one over, held for a possible cr", 8, "123456789", 0, "", 0},
    {"far over, no newline", 8, "123456789abcdef", 0, "", GQ_ETOOBIG},
    {"lines before the long one", 4, "ab\ncd\n0123456789\nef\n", 0, "ab|cd",
     GQ_ETOOBIG},
    {"zero max means one", 0, "a\nbc\n", 0, "a", GQ_ETOOBIG},
};

struct collect {
  struct gq_buf out;
  int stop_at; /* return 7 on this line (1-based); 0 = never */
  int n;
  struct gq_ndjson *release; /* release this framer when stopping */
};

static int collect_line(const char *line, size_t len, void *arg)
{
  struct collect *c = arg;

  if (c->n++ > 0)
    assert_int_equal(gq_buf_append(&c->out, "|", 1), 0);
  assert_int_equal(gq_buf_append(&c->out, line, len), 0);
  if (c->n != c->stop_at)
    return 0;
  if (c->release)
    gq_ndjson_release(c->release);
  return 7;
}

/* Feeds chunks [0,k) and [k,len), or bytes one by one (k > len); returns
 * the first non-zero result, finishing if asked and nothing failed. */
static int run_frame(const struct frame_case *fc, size_t k, struct collect *c)
{
  const char *in = fc->input;
  size_t len = strlen(in);
  struct gq_ndjson f;
  int rc = 0;

  gq_ndjson_init(&f, fc->max_line);
  if (k <= len) {
    rc = gq_ndjson_feed(&f, in, k, collect_line, c);
    if (rc == 0)
      rc = gq_ndjson_feed(&f, in + k, len - k, collect_line, c);
  } else {
    for (size_t i = 0; i < len && rc == 0; i++)
      rc = gq_ndjson_feed(&f, in + i, 1, collect_line, c);
  }
  if (rc == 0 && fc->finish)
    rc = gq_ndjson_finish(&f, collect_line, c);
  if (rc != 0)
    assert_int_equal(gq_ndjson_pending(&f), 0); /* reset after an error */
  gq_ndjson_release(&f);
  return rc;
}

static void test_frame_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(frame_cases); i++) {
    const struct frame_case *fc = &frame_cases[i];

    for (size_t k = 0; k <= strlen(fc->input) + 1; k++) {
      struct collect c = {.stop_at = 0};
      int rc;

      gq_buf_init(&c.out, 4096);
      rc = run_frame(fc, k, &c);
      if (rc != fc->want_rc || strcmp(gq_buf_str(&c.out), fc->want_lines))
        fail_msg("%s split %zu: got rc %d lines \"%s\", want rc %d \"%s\"",
                 fc->name, k, rc, gq_buf_str(&c.out), fc->want_rc,
                 fc->want_lines);
      gq_buf_release(&c.out);
    }
  }
}

/* A callback's non-zero return stops the feed, drops the rest of the chunk
 * and leaves the framer empty and usable. */
static void test_frame_cb_stops(void **state)
{
  static const char in[] = "a\nstop\nb\nc";
  struct collect c = {.stop_at = 2};
  struct gq_ndjson f;

  (void)state;
  gq_buf_init(&c.out, 4096);
  gq_ndjson_init(&f, 64);
  assert_int_equal(gq_ndjson_feed(&f, in, strlen(in), collect_line, &c), 7);
  assert_string_equal(gq_buf_str(&c.out), "a|stop");
  assert_int_equal(gq_ndjson_pending(&f), 0);
  assert_int_equal(gq_ndjson_feed(&f, "x\n", 2, collect_line, &c), 0);
  assert_string_equal(gq_buf_str(&c.out), "a|stop|x");
  gq_ndjson_release(&f);
  gq_buf_release(&c.out);
}

/* The callback may release the framer while it holds the buffered line
 * being delivered (ASan checks nothing touches it afterwards). */
static void test_frame_release_in_cb(void **state)
{
  struct collect c = {.stop_at = 1};
  struct gq_ndjson f;

  (void)state;
  c.release = &f;
  gq_buf_init(&c.out, 4096);
  gq_ndjson_init(&f, 64);
  assert_int_equal(gq_ndjson_feed(&f, "hel", 3, collect_line, &c), 0);
  assert_int_equal(gq_ndjson_pending(&f), 3);
  assert_int_equal(gq_ndjson_feed(&f, "lo\nmore\n", 8, collect_line, &c), 7);
  assert_string_equal(gq_buf_str(&c.out), "hello");
  assert_null(f.line.data);
  gq_ndjson_release(&f);
  gq_buf_release(&c.out);
}

/* A server that never sends a newline costs at most max_line + 1 bytes;
 * after the error the framer starts over. */
static void test_frame_bounded(void **state)
{
  struct collect c = {.stop_at = 0};
  struct gq_ndjson f;
  char chunk[1000];
  int rc = 0, fed = 0;

  (void)state;
  memset(chunk, 'x', sizeof(chunk));
  gq_buf_init(&c.out, 4096);
  gq_ndjson_init(&f, 4096);
  while (rc == 0 && fed < 1000) {
    rc = gq_ndjson_feed(&f, chunk, sizeof(chunk), collect_line, &c);
    fed++;
    assert_true(f.line._alloc <= 4096 + 2);
  }
  assert_int_equal(rc, GQ_ETOOBIG);
  assert_int_equal(fed, 5); /* 5000 bytes > 4097 */
  assert_null(f.line.data);
  assert_int_equal(gq_ndjson_feed(&f, "ok\n", 3, collect_line, &c), 0);
  assert_string_equal(gq_buf_str(&c.out), "ok");
  gq_ndjson_release(&f);
  gq_buf_release(&c.out);
}

/* ---- watch event decoding ----------------------------------------------- */

#define RV63 "123456789012345678901234567890123456789012345678901234567890123"

static const struct decode_case {
  const char *name;
  const char *line;
  int want_rc;
  enum gq_watch_type want_type;
  const char *want_rv;
  const char *want_err; /* substring of the message when want_rc != 0 */
} decode_cases[] = {
    {"added",
     "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":"
     "{\"name\":\"p\",\"resourceVersion\":\"17\"}}}",
     0, GQ_WATCH_ADDED, "17", NULL},
    {"modified, no metadata", "{\"type\":\"MODIFIED\",\"object\":{}}", 0,
     GQ_WATCH_MODIFIED, "", NULL},
    {"deleted, null rv",
     "{\"object\":{\"metadata\":{\"resourceVersion\":"
     "null}},\"type\":\"DELETED\"}",
     0, GQ_WATCH_DELETED, "", NULL},
    {"bookmark",
     "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"GpuJob\","
     "\"apiVersion\":\"gpuq.dev/v1alpha1\",\"metadata\":{"
     "\"resourceVersion\":\"48950\"}}}",
     0, GQ_WATCH_BOOKMARK, "48950", NULL},
    {"error status",
     "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\","
     "\"apiVersion\":\"v1\",\"metadata\":{},\"status\":"
     "\"Failure\",\"message\":\"too old resource version: 1 "
     "(2)\",\"reason\":\"Expired\",\"code\":410}}",
     0, GQ_WATCH_ERROR, "", NULL},
    {"63-byte rv",
     "{\"type\":\"ADDED\",\"object\":{\"metadata\":{"
     "\"resourceVersion\":\"" RV63 "\"}}}",
     0, GQ_WATCH_ADDED, RV63, NULL},
    {"not json", "{\"type\":", GQ_EPARSE, 0, "", "watch event: invalid JSON"},
    {"trailing garbage", "{\"type\":\"ADDED\",\"object\":{}} x", GQ_EPARSE, 0,
     "", "watch event: invalid JSON"},
    {"empty", "", GQ_EPARSE, 0, "", "watch event: invalid JSON"},
    {"array", "[]", GQ_EPARSE, 0, "", "watch event: not a JSON object"},
    {"no type", "{\"object\":{}}", GQ_EPARSE, 0, "", "watch event: no type"},
    {"type not a string", "{\"type\":5,\"object\":{}}", GQ_EPARSE, 0, "",
     "watch event: no type"},
    {"unknown type", "{\"type\":\"FOO\",\"object\":{}}", GQ_EPARSE, 0, "",
     "watch event: unknown type \"FOO\""},
    {"types are case-sensitive", "{\"type\":\"added\",\"object\":{}}",
     GQ_EPARSE, 0, "", "watch event: unknown type \"added\""},
    {"control characters in type", "{\"type\":\"A\\nB\",\"object\":{}}",
     GQ_EPARSE, 0, "", "watch event: unknown type \"A B\""},
    {"no object", "{\"type\":\"ADDED\"}", GQ_EPARSE, 0, "",
     "watch event: no object"},
    {"null object", "{\"type\":\"ADDED\",\"object\":null}", GQ_EPARSE, 0, "",
     "watch event: no object"},
    {"object is an array", "{\"type\":\"ADDED\",\"object\":[]}", GQ_EPARSE, 0,
     "", "watch event: object is not a JSON object"},
    {"rv not a string",
     "{\"type\":\"ADDED\",\"object\":{\"metadata\":{"
     "\"resourceVersion\":17}}}",
     GQ_EPARSE, 0, "", "watch event: metadata.resourceVersion is not a string"},
    {"rv too long",
     "{\"type\":\"ADDED\",\"object\":{\"metadata\":{"
     "\"resourceVersion\":\"" RV63 "4\"}}}",
     GQ_EPARSE, 0, "", "watch event: metadata.resourceVersion too long (64"},
    {"bookmark without rv",
     "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":"
     "\"Pod\",\"metadata\":{}}}",
     GQ_EPARSE, 0, "",
     "watch event: BOOKMARK without metadata.resourceVersion"},
};

static void test_decode_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(decode_cases); i++) {
    const struct decode_case *dc = &decode_cases[i];
    enum gq_watch_type type = (enum gq_watch_type)99;
    json_t *obj = (json_t *)&obj; /* must be overwritten */
    char rv[GQ_RV_MAX] = "junk", err[256] = "junk";
    int rc = gq_watch_event_decode(dc->line, strlen(dc->line), &type, &obj, rv,
                                   err, sizeof(err));

    if (rc != dc->want_rc)
      fail_msg("%s: rc %d want %d (%s)", dc->name, rc, dc->want_rc, err);
    assert_string_equal(rv, dc->want_rv);
    if (rc == 0) {
      assert_int_equal(type, dc->want_type);
      assert_true(json_is_object(obj));
      assert_string_equal(err, "");
      json_decref(obj);
      continue;
    }
    assert_null(obj);
    if (!strstr(err, dc->want_err))
      fail_msg("%s: message \"%s\" lacks \"%s\"", dc->name, err, dc->want_err);
  }
}

/* The line need not be NUL-terminated, and err may be NULL. */
static void test_decode_unterminated(void **state)
{
  static const char buf[] = "{\"type\":\"DELETED\",\"object\":{}}GARBAGE";
  enum gq_watch_type type;
  json_t *obj;
  char rv[GQ_RV_MAX];

  (void)state;
  assert_int_equal(gq_watch_event_decode(buf, 30, &type, &obj, rv, NULL, 0), 0);
  assert_int_equal(type, GQ_WATCH_DELETED);
  json_decref(obj);
  assert_int_equal(gq_watch_event_decode(buf, 10, &type, &obj, rv, NULL, 0),
                   GQ_EPARSE);
  assert_null(obj);
}

/* gq_json_drop_managed_fields() on (input, expected output) pairs: a watch
 * event, a list, managedFields first, last, alone, with whitespace, a
 * managedFields that is not metadata's (kept), strings holding braces,
 * quotes and the key's text, and text that is not JSON (copied). */
static void test_drop_managed_fields(void **state)
{
  static const char *const cases[][2] = {
      {"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{"
       "\"name\":\"p\",\"managedFields\":[{\"manager\":\"m\",\"fieldsV1\":"
       "{\"f:spec\":{\".\":{}}}}],\"uid\":\"u\"},\"spec\":{}}}",
       "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{"
       "\"name\":\"p\",\"uid\":\"u\"},\"spec\":{}}}"},
      {"{\"items\":[{\"metadata\":{\"managedFields\":[],\"name\":\"a\"}},"
       "{\"metadata\":{\"name\":\"b\",\"managedFields\":[{}]}},"
       "{\"metadata\":{\"managedFields\":null}}]}",
       "{\"items\":[{\"metadata\":{\"name\":\"a\"}},{\"metadata\":{\"name\":"
       "\"b\"}},{\"metadata\":{}}]}"},
      {"{ \"metadata\" : { \"a\" : 1 , \"managedFields\" : [ 1, \"]}\" ] } }",
       "{ \"metadata\" : { \"a\" : 1  } }"}, /* whitespace stays */
      {"{\"spec\":{\"managedFields\":1},\"metadata\":{\"x\":"
       "\"\\\"managedFields\\\":{\",\"labels\":{\"managedFields\":\"v\"}}}",
       "{\"spec\":{\"managedFields\":1},\"metadata\":{\"x\":"
       "\"\\\"managedFields\\\":{\",\"labels\":{\"managedFields\":\"v\"}}}"},
      {"{\"metadata\":{\"managedFields\":[{\"a\":\"}\"}],\"b\":2}}",
       "{\"metadata\":{\"b\":2}}"},
      {"not json {\"metadata\":{\"managedFields", "not json {\"metadata\":{\"managedFields"},
      {"", ""},
  };

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    size_t len = strlen(cases[i][0]), n;
    char *out = malloc(len + 1);

    n = gq_json_drop_managed_fields(cases[i][0], len, out);
    out[n] = '\0';
    if (strcmp(out, cases[i][1]) != 0)
      fail_msg("case %zu:\n got  %s\n want %s", i, out, cases[i][1]);
    free(out);
  }
}

static void test_watch_type_name(void **state)
{
  (void)state;
  assert_string_equal(gq_watch_type_name(GQ_WATCH_ADDED), "ADDED");
  assert_string_equal(gq_watch_type_name(GQ_WATCH_MODIFIED), "MODIFIED");
  assert_string_equal(gq_watch_type_name(GQ_WATCH_DELETED), "DELETED");
  assert_string_equal(gq_watch_type_name(GQ_WATCH_BOOKMARK), "BOOKMARK");
  assert_string_equal(gq_watch_type_name(GQ_WATCH_ERROR), "ERROR");
  assert_string_equal(gq_watch_type_name((enum gq_watch_type)42), "UNKNOWN");
}

/* ---- Status ------------------------------------------------------------- */

/* Bodies as kube-apiserver (and the proxies in front of it) send them. */
#define ST(rest)                                                               \
  "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{}," rest "}"

#define MSG_CONFLICT                                                           \
  "Operation cannot be fulfilled on gpujobs.gpuq.dev \\\"llama-finetune\\\": " \
  "the object has been modified; please apply your changes to the latest "     \
  "version and try again"
#define MSG_CONTINUE                                                           \
  "The provided continue parameter is too old to display a consistent list "   \
  "result. You can start a new list without the continue parameter, or use "   \
  "the continue token in this response to retrieve the remainder of the "      \
  "results. Continuing with the provided token results in an inconsistent "    \
  "list - objects that were created, modified, or deleted between the time "   \
  "the first chunk was returned and now may show up in the list."
#define MSG_INVALID                                                            \
  "GpuJob.gpuq.dev \\\"llama-finetune\\\" is invalid: "                        \
  "[spec.gpusPerReplica: Invalid value: 0: spec.gpusPerReplica in body "       \
  "should be greater than or equal to 1, spec.team: Required value]"
#define MSG_WEBHOOK                                                            \
  "Internal error occurred: failed calling webhook \\\"vgpujob.gpuq.dev\\\": " \
  "failed to call webhook: Post \\\"https://gpuq-webhook.gpuq-system.svc:443"  \
  "/validate?timeout=10s\\\": context deadline exceeded"

#define NGINX_502                                                              \
  "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"        \
  "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>"    \
  "\r\n</body>\r\n</html>\r\n"
#define D70                                                                    \
  "0123456789012345678901234567890123456789012345678901234567890123456789"
#define D59 "01234567890123456789012345678901234567890123456789012345678"
#define LONG_TEXT                                                              \
  "0123456789012345678901234567890123456789012345678901234567890123456789"     \
  "0123456789012345678901234567890123456789012345678901234567890123456789"     \
  "012345678901234567890123456789012345678901234567890123456789"

static const struct status_case {
  const char *name;
  long http;
  const char *body;
  int want_rc;
  int want_code;
  const char *want_reason;
  const char *want_msg; /* JSON-escaped \" are compared unescaped */
  int want_retry_after_s;
} status_cases[] = {
    {"404 Status", 404,
     ST("\"status\":\"Failure\",\"message\":\"gpujobs.gpuq.dev "
        "\\\"llama-finetune\\\" not found\",\"reason\":\"NotFound\","
        "\"details\":{\"name\":\"llama-finetune\",\"group\":\"gpuq.dev\","
        "\"kind\":\"gpujobs\"},\"code\":404"),
     GQ_ENOTFOUND, 404, "NotFound",
     "gpujobs.gpuq.dev \\\"llama-finetune\\\" not found", 0},
    {"409 Conflict", 409,
     ST("\"status\":\"Failure\",\"message\":\"" MSG_CONFLICT "\",\"reason\":"
        "\"Conflict\",\"details\":{\"name\":\"llama-finetune\",\"group\":"
        "\"gpuq.dev\",\"kind\":\"gpujobs\"},\"code\":409"),
     GQ_ECONFLICT, 409, "Conflict", MSG_CONFLICT, 0},
    {"409 AlreadyExists", 409,
     ST("\"status\":\"Failure\",\"message\":\"pods \\\"llama-finetune-a1-0\\\" "
        "already exists\",\"reason\":\"AlreadyExists\",\"details\":{\"name\":"
        "\"llama-finetune-a1-0\",\"kind\":\"pods\"},\"code\":409"),
     GQ_EEXIST, 409, "AlreadyExists",
     "pods \\\"llama-finetune-a1-0\\\" already exists", 0},
    {"410 expired continue", 410,
     ST("\"status\":\"Failure\",\"message\":\"" MSG_CONTINUE "\",\"reason\":"
        "\"Expired\",\"code\":410"),
     GQ_EGONE, 410, "Expired", MSG_CONTINUE, 0},
    {"422 with causes", 422,
     ST("\"status\":\"Failure\",\"message\":\"" MSG_INVALID "\",\"reason\":"
        "\"Invalid\",\"details\":{\"name\":\"llama-finetune\",\"group\":"
        "\"gpuq.dev\",\"kind\":\"GpuJob\",\"causes\":[{\"reason\":"
        "\"FieldValueInvalid\",\"message\":\"Invalid value: 0: "
        "spec.gpusPerReplica in body should be greater than or equal to 1\","
        "\"field\":\"spec.gpusPerReplica\"},{\"reason\":\"FieldValueRequired\","
        "\"message\":\"Required value\",\"field\":\"spec.team\"}]},"
        "\"code\":422"),
     GQ_EINVAL, 422, "Invalid", MSG_INVALID, 0},
    {"429 priority and fairness", 429,
     ST("\"status\":\"Failure\",\"message\":\"Too many requests, please try "
        "again later.\",\"reason\":\"TooManyRequests\",\"details\":{"
        "\"retryAfterSeconds\":1},\"code\":429"),
     GQ_ETOOMANY, 429, "TooManyRequests",
     "Too many requests, please try again later.", 1},
    {"500 webhook", 500,
     ST("\"status\":\"Failure\",\"message\":\"" MSG_WEBHOOK "\",\"reason\":"
        "\"InternalError\",\"details\":{\"causes\":[{\"message\":\"failed "
        "calling webhook\"}]},\"code\":500"),
     GQ_EUNAVAIL, 500, "InternalError", MSG_WEBHOOK, 0},
    {"401", 401,
     ST("\"status\":\"Failure\",\"message\":\"Unauthorized\",\"reason\":"
        "\"Unauthorized\",\"code\":401"),
     GQ_EUNAUTHORIZED, 401, "Unauthorized", "Unauthorized", 0},
    {"403", 403,
     ST("\"status\":\"Failure\",\"message\":\"gpujobs.gpuq.dev is forbidden: "
        "User \\\"system:serviceaccount:gpuq-system:gpuq\\\" cannot list "
        "resource \\\"gpujobs\\\" in API group \\\"gpuq.dev\\\" at the cluster "
        "scope\",\"reason\":\"Forbidden\",\"details\":{\"group\":\"gpuq.dev\","
        "\"kind\":\"gpujobs\"},\"code\":403"),
     GQ_EFORBIDDEN, 403, "Forbidden",
     "gpujobs.gpuq.dev is forbidden: User "
     "\\\"system:serviceaccount:gpuq-system:gpuq\\\" cannot list resource "
     "\\\"gpujobs\\\" in API group \\\"gpuq.dev\\\" at the cluster scope",
     0},
    {"504 Timeout", 504,
     ST("\"status\":\"Failure\",\"message\":\"Timeout: request did not "
        "complete within requested timeout - context deadline exceeded\","
        "\"reason\":\"Timeout\",\"details\":{},\"code\":504"),
     GQ_ETIMEDOUT, 504, "Timeout",
     "Timeout: request did not complete within requested timeout - context "
     "deadline exceeded",
     0},
    {"400 BadRequest", 400,
     ST("\"status\":\"Failure\",\"message\":\"json: cannot unmarshal string "
        "into Go struct field ObjectMeta.metadata.labels of type "
        "map[string]string\",\"reason\":\"BadRequest\",\"code\":400"),
     GQ_EINVAL, 400, "BadRequest",
     "json: cannot unmarshal string into Go struct field "
     "ObjectMeta.metadata.labels of type map[string]string",
     0},
    {"Status without code takes the HTTP code", 404,
     ST("\"status\":\"Failure\",\"message\":\"gone fishing\",\"reason\":"
        "\"NotFound\""),
     GQ_ENOTFOUND, 404, "NotFound", "gone fishing", 0},
    {"Status code wins over HTTP code", 500,
     ST("\"status\":\"Failure\",\"message\":\"m\",\"reason\":\"Conflict\","
        "\"code\":409"),
     GQ_ECONFLICT, 409, "Conflict", "m", 0},
    {"reason Expired with another code", 500,
     ST("\"status\":\"Failure\",\"message\":\"m\",\"reason\":\"Expired\","
        "\"code\":500"),
     GQ_EGONE, 500, "Expired", "m", 0},
    {"200 DELETE Status", 200,
     ST("\"status\":\"Success\",\"details\":{\"name\":\"x\",\"group\":"
        "\"gpuq.dev\",\"kind\":\"gpujobs\",\"uid\":\"6f1c2a9e\"}"),
     0, 200, "", "", 0},
    {"2xx keeps the HTTP code", 202, ST("\"status\":\"Success\",\"code\":200"),
     0, 202, "", "", 0},
    {"201 object", 201, "{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}", 0, 201, "",
     "", 0},
    {"Success Status on a failed request", 503, ST("\"status\":\"Success\""),
     GQ_EUNAVAIL, 503, "ServiceUnavailable", ST("\"status\":\"Success\""), 0},
    {"Go mux 404 text", 404, "404 page not found\n", GQ_ENOTFOUND, 404,
     "NotFound", "404 page not found", 0},
    {"JSON that is not a Status", 404, "{\"error\":\"not found\"}",
     GQ_ENOTFOUND, 404, "NotFound", "{\"error\":\"not found\"}", 0},
    {"nginx 502 page", 502, NGINX_502, GQ_EUNAVAIL, 502, "InternalError",
     "<html> <head><title>502 Bad Gateway</title></head> <body> <center><h1>"
     "502 Bad Gateway</h1></center> <hr><center>nginx</center> </body> "
     "</html>",
     0},
    {"envoy 503 text", 503,
     "upstream connect error or disconnect/reset before headers. reset "
     "reason: connection failure",
     GQ_EUNAVAIL, 503, "ServiceUnavailable",
     "upstream connect error or disconnect/reset before headers. reset "
     "reason: connection failure",
     0},
    {"empty 503", 503, "", GQ_EUNAVAIL, 503, "ServiceUnavailable",
     "the server is currently unable to handle the request", 0},
    {"empty 429", 429, "", GQ_ETOOMANY, 429, "TooManyRequests",
     "the server has received too many requests and has asked us to try "
     "again later",
     0},
    {"empty 409", 409, "", GQ_ECONFLICT, 409, "Conflict",
     "the server reported a conflict", 0},
    {"empty 410", 410, "", GQ_EGONE, 410, "Gone",
     "the requested resource is no longer available", 0},
    {"blank 502", 502, " \r\n", GQ_EUNAVAIL, 502, "InternalError",
     "an error on the server has prevented the request from succeeding", 0},
    {"empty 418", 418, "", GQ_EINVAL, 418, "",
     "the server responded with the status code 418 but did not return more "
     "information",
     0},
    {"302 redirect", 302, "", GQ_EIO, 302, "",
     "the server responded with the status code 302 but did not return more "
     "information",
     0},
    {"long text cut at 200 bytes", 500, LONG_TEXT "tail", GQ_EUNAVAIL, 500,
     "InternalError", LONG_TEXT, 0},
    {"cut backs up to a character boundary", 500,
     D70 D70 D59 "\xc3\xa9 and more", GQ_EUNAVAIL, 500, "InternalError",
     D70 D70 D59, 0},
    {"invalid UTF-8 and controls", 500, "bad \xff\xfe byte\x01\x1b[31m red",
     GQ_EUNAVAIL, 500, "InternalError", "bad ?? byte [31m red", 0},
    {"overlong and surrogate UTF-8", 500, "a\xe0\x80\xaf b\xed\xa0\x80 c",
     GQ_EUNAVAIL, 500, "InternalError", "a??? b??? c", 0},
    {"valid UTF-8 kept", 503,
     "Dienst nicht verf\xc3\xbc"
     "gbar",
     GQ_EUNAVAIL, 503, "ServiceUnavailable",
     "Dienst nicht verf\xc3\xbc"
     "gbar",
     0},
};

/* Undoes the \" escapes of the table's JSON-quoted messages. */
static void unq(const char *in, char *out, size_t cap)
{
  size_t n = 0;

  for (; *in && n + 1 < cap; in++) {
    if (in[0] == '\\' && in[1] == '"')
      in++;
    out[n++] = *in;
  }
  out[n] = '\0';
}

static void test_status_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(status_cases); i++) {
    const struct status_case *sc = &status_cases[i];
    struct gq_k8s_status st;
    char want_msg[GQ_STATUS_MESSAGE_MAX * 2];
    const char *body = sc->body;
    int rc = gq_status_decode(sc->http, body, strlen(body), &st);

    if (strncmp(body, "{\"kind\":\"Status\"", 16) == 0)
      unq(sc->want_msg, want_msg, sizeof(want_msg));
    else
      snprintf(want_msg, sizeof(want_msg), "%s", sc->want_msg);
    if (rc != sc->want_rc || st.code != sc->want_code ||
        strcmp(st.reason, sc->want_reason) != 0 ||
        strcmp(st.message, want_msg) != 0 ||
        st.retry_after_s != sc->want_retry_after_s)
      fail_msg("%s: got rc %s code %d reason \"%s\" message \"%s\" retry %d;"
               " want %s %d \"%s\" \"%s\" %d",
               sc->name, gq_err_name(rc), st.code, st.reason, st.message,
               st.retry_after_s, gq_err_name(sc->want_rc), sc->want_code,
               sc->want_reason, want_msg, sc->want_retry_after_s);
  }
}

/* gq_status_decode_doc() with the body parsed by the caller gives what
 * gq_status_decode() gives, for every case of the table; with the body of
 * a success left unparsed (doc NULL), rc 0 and the code. */
static void test_status_decode_doc(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(status_cases); i++) {
    const struct status_case *sc = &status_cases[i];
    struct gq_k8s_status a, b;
    json_t *doc = json_loadb(sc->body, strlen(sc->body), 0, NULL);
    int ra = gq_status_decode(sc->http, sc->body, strlen(sc->body), &a);
    int rb = gq_status_decode_doc(sc->http, sc->body, strlen(sc->body), doc,
                                  &b);

    json_decref(doc);
    if (ra != rb || a.code != b.code || strcmp(a.reason, b.reason) ||
        strcmp(a.message, b.message) || a.retry_after_s != b.retry_after_s)
      fail_msg("%s: decode_doc differs from decode", sc->name);
  }
  {
    struct gq_k8s_status st;
    const char *body = "{\"kind\":\"Pod\"}";

    assert_int_equal(gq_status_decode_doc(201, body, strlen(body), NULL, &st),
                     0);
    assert_int_equal(st.code, 201);
    assert_string_equal(st.message, "");
  }
}

/* A Status message longer than the struct's field is cut on a character
 * boundary, and a NULL body with length 0 is fine. */
static void test_status_long_message(void **state)
{
  struct gq_buf b;
  struct gq_k8s_status st;
  size_t n;

  (void)state;
  gq_buf_init(&b, 8192);
  assert_int_equal(gq_buf_puts(&b, "{\"kind\":\"Status\",\"message\":\"x"), 0);
  for (int i = 0; i < 600; i++)
    assert_int_equal(gq_buf_puts(&b, "\xe2\x82\xac"), 0); /* euro sign */
  assert_int_equal(gq_buf_puts(&b, "\",\"code\":500}"), 0);
  assert_int_equal(gq_status_decode(500, b.data, b.len, &st), GQ_EUNAVAIL);
  n = strlen(st.message);
  assert_true(n <= GQ_STATUS_MESSAGE_MAX - 1);
  assert_int_equal((n - 1) % 3, 0); /* "x" then whole euro signs */
  assert_int_equal(n, 1 + 3 * ((GQ_STATUS_MESSAGE_MAX - 2) / 3));
  gq_buf_release(&b);
  assert_int_equal(gq_status_decode(404, NULL, 0, &st), GQ_ENOTFOUND);
  assert_string_equal(st.message,
                      "the server could not find the requested resource");
}

static const struct status_json_case {
  const char *name;
  const char *json;
  int want_rc;
  int want_code;
  const char *want_reason;
} status_json_cases[] = {
    {"watch 410 Expired",
     ST("\"status\":\"Failure\",\"message\":\"too old resource version: 1 "
        "(2)\",\"reason\":\"Expired\",\"code\":410"),
     GQ_EGONE, 410, "Expired"},
    {"watch 410 Gone",
     ST("\"status\":\"Failure\",\"reason\":\"Gone\",\"code\":410"), GQ_EGONE,
     410, "Gone"},
    {"watch 500",
     ST("\"status\":\"Failure\",\"message\":\"etcdserver: request timed out\","
        "\"reason\":\"InternalError\",\"code\":500"),
     GQ_EUNAVAIL, 500, "InternalError"},
    {"watch 429",
     ST("\"status\":\"Failure\",\"reason\":\"TooManyRequests\","
        "\"code\":429"),
     GQ_ETOOMANY, 429, "TooManyRequests"},
    {"code from reason Expired",
     ST("\"status\":\"Failure\",\"reason\":\"Expired\""), GQ_EGONE, 410,
     "Expired"},
    {"code from reason AlreadyExists",
     ST("\"status\":\"Failure\",\"reason\":\"AlreadyExists\""), GQ_EEXIST, 409,
     "AlreadyExists"},
    {"no code, no reason", ST("\"status\":\"Failure\""), GQ_EUNAVAIL, 500, ""},
    {"code out of range", ST("\"reason\":\"NotFound\",\"code\":70000"),
     GQ_ENOTFOUND, 404, "NotFound"},
    {"not a Status", "{\"kind\":\"Pod\",\"code\":404}", GQ_EPARSE, 0, ""},
    {"no kind", "{\"code\":410,\"reason\":\"Expired\"}", GQ_EPARSE, 0, ""},
    {"not an object", "[410]", GQ_EPARSE, 0, ""},
};

static void test_status_from_json(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(status_json_cases); i++) {
    const struct status_json_case *sc = &status_json_cases[i];
    json_t *v = json_loads(sc->json, 0, NULL);
    struct gq_k8s_status st;
    int rc;

    assert_non_null(v);
    rc = gq_status_from_json(v, &st);
    if (rc != sc->want_rc || st.code != sc->want_code ||
        strcmp(st.reason, sc->want_reason) != 0)
      fail_msg("%s: got %s %d \"%s\", want %s %d \"%s\"", sc->name,
               gq_err_name(rc), st.code, st.reason, gq_err_name(sc->want_rc),
               sc->want_code, sc->want_reason);
    if (rc == GQ_EPARSE)
      assert_string_equal(st.message, "object is not a metav1.Status");
    json_decref(v);
  }
  assert_int_equal(gq_status_from_json(NULL, &(struct gq_k8s_status){0}),
                   GQ_EPARSE);
}

/* ---- Retry-After -------------------------------------------------------- */

#define T1994 INT64_C(784111777000)  /* Sun, 06 Nov 1994 08:49:37 GMT */
#define T2025 INT64_C(1735689600000) /* Wed, 01 Jan 2025 00:00:00 GMT */
#define T1998 INT64_C(915148799000)  /* Thu, 31 Dec 1998 23:59:59 GMT */
#define DAY_MS INT64_C(86400000)

static const struct retry_after_case {
  const char *name;
  const char *header;
  int64_t now_ms;
  int want_rc;
  int64_t want_delay_ms;
} retry_after_cases[] = {
    {"apiserver's 1", "1", T1994, 0, 1000},
    {"seconds", "120", T1994, 0, 120000},
    {"blanks around", " \t120 \r\n", T1994, 0, 120000},
    {"zero", "0", T1994, 0, 0},
    {"leading zeros", "007", T1994, 0, 7000},
    {"saturates at 2^31 s", "99999999999999999999999", T1994, 0,
     INT64_C(2147483648000)},
    {"2^31 s exactly", "2147483648", T1994, 0, INT64_C(2147483648000)},
    {"NULL", NULL, T1994, GQ_EPARSE, 0},
    {"empty", "", T1994, GQ_EPARSE, 0},
    {"blank", "  ", T1994, GQ_EPARSE, 0},
    {"negative", "-5", T1994, GQ_EPARSE, 0},
    {"plus sign", "+5", T1994, GQ_EPARSE, 0},
    {"fraction", "1.5", T1994, GQ_EPARSE, 0},
    {"unit", "5s", T1994, GQ_EPARSE, 0},
    {"inner blank", "1 2", T1994, GQ_EPARSE, 0},
    {"IMF-fixdate", "Sun, 06 Nov 1994 08:51:37 GMT", T1994, 0, 120000},
    {"rfc850-date", "Sunday, 06-Nov-94 08:51:37 GMT", T1994, 0, 120000},
    {"asctime-date", "Sun Nov  6 08:51:37 1994", T1994, 0, 120000},
    {"asctime two-digit day", "Wed Nov 16 08:49:37 1994", T1994, 0,
     10 * DAY_MS},
    {"date now", "Sun, 06 Nov 1994 08:49:37 GMT", T1994, 0, 0},
    {"date in the past", "Sun, 06 Nov 1994 08:49:36 GMT", T1994, 0, 0},
    {"date long ago", "Thu, 01 Jan 1970 00:00:00 GMT", T1994, 0, 0},
    {"leap day", "Thu, 29 Feb 1996 08:49:37 GMT", T1994, 0, 480 * DAY_MS},
    {"leap second", "Thu, 31 Dec 1998 23:59:60 GMT", T1998, 0, 1000},
    {"rfc850 within 50 years", "Friday, 01-Jan-75 00:00:00 GMT", T2025, 0,
     INT64_C(1577836800000)},
    {"rfc850 beyond 50 years is the past", "Thursday, 01-Jan-76 00:00:00 GMT",
     T2025, 0, 0},
    {"rfc850 next century", "Monday, 01-Jan-01 00:00:00 GMT",
     INT64_C(4070908800000) /* 2099-01-01 */, 0, 2 * 365 * DAY_MS},
    {"not GMT", "Sun, 06 Nov 1994 08:51:37 UTC", T1994, GQ_EPARSE, 0},
    {"lower-case day", "sun, 06 Nov 1994 08:51:37 GMT", T1994, GQ_EPARSE, 0},
    {"lower-case month", "Sun, 06 nov 1994 08:51:37 GMT", T1994, GQ_EPARSE, 0},
    {"one-digit day in IMF", "Sun, 6 Nov 1994 08:51:37 GMT", T1994, GQ_EPARSE,
     0},
    {"two-digit year in IMF", "Sun, 06 Nov 94 08:51:37 GMT", T1994, GQ_EPARSE,
     0},
    {"long day name in IMF", "Sunday, 06 Nov 1994 08:51:37 GMT", T1994,
     GQ_EPARSE, 0},
    {"31 November", "Wed, 31 Nov 1994 08:51:37 GMT", T1994, GQ_EPARSE, 0},
    {"29 February 1995", "Wed, 29 Feb 1995 08:51:37 GMT", T1994, GQ_EPARSE, 0},
    {"day zero", "Wed, 00 Nov 1994 08:51:37 GMT", T1994, GQ_EPARSE, 0},
    {"hour 24", "Sun, 06 Nov 1994 24:00:00 GMT", T1994, GQ_EPARSE, 0},
    {"minute 60", "Sun, 06 Nov 1994 08:60:00 GMT", T1994, GQ_EPARSE, 0},
    {"trailing text", "Sun, 06 Nov 1994 08:51:37 GMT x", T1994, GQ_EPARSE, 0},
    {"truncated", "Sun, 06 Nov 1994 08:51", T1994, GQ_EPARSE, 0},
};

static void test_retry_after(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(retry_after_cases); i++) {
    const struct retry_after_case *rc = &retry_after_cases[i];
    int64_t delay = -42;
    int got = gq_retry_after_parse(rc->header, rc->now_ms, &delay);

    if (got != rc->want_rc)
      fail_msg("%s: rc %d want %d", rc->name, got, rc->want_rc);
    if (got == 0 && delay != rc->want_delay_ms)
      fail_msg("%s: delay %lld want %lld", rc->name, (long long)delay,
               (long long)rc->want_delay_ms);
    if (got != 0 && delay != -42)
      fail_msg("%s: delay changed on error", rc->name);
  }
}

/* ---- retry policy ------------------------------------------------------- */

/* clang-format off */
static const struct should_retry_case {
  int err;
  int idempotent;
  int want;
} should_retry_cases[] = {
    {GQ_ETOOMANY, 1, 1},      {GQ_ETOOMANY, 0, 1},
    {GQ_EUNAVAIL, 1, 1},      {GQ_EUNAVAIL, 0, 0},
    {GQ_ETIMEDOUT, 1, 1},     {GQ_ETIMEDOUT, 0, 0},
    {GQ_EIO, 1, 1},           {GQ_EIO, 0, 0},
    {GQ_ECLOSED, 1, 1},       {GQ_ECLOSED, 0, 0},
    {-ECONNRESET, 1, 1},      {-ECONNRESET, 0, 0},
    {-ECONNREFUSED, 1, 1},    {-EPIPE, 1, 1},
    {-EHOSTUNREACH, 1, 1},    {-ENOENT, 1, 0},
    {0, 1, 0},                {GQ_ENOTFOUND, 1, 0},
    {GQ_ECONFLICT, 1, 0},     {GQ_EEXIST, 1, 0},
    {GQ_EGONE, 1, 0},         {GQ_EUNAUTHORIZED, 1, 0},
    {GQ_EFORBIDDEN, 1, 0},    {GQ_EINVAL, 1, 0},
    {GQ_ETOOBIG, 1, 0},       {GQ_EPARSE, 1, 0},
    {GQ_ECANCELED, 1, 0},     {GQ_ENOMEM, 1, 0},
};
/* clang-format on */

static void test_should_retry(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(should_retry_cases); i++) {
    const struct should_retry_case *c = &should_retry_cases[i];
    int got = gq_should_retry(c->err, c->idempotent);

    if (got != c->want)
      fail_msg("%s idempotent=%d: got %d want %d", gq_err_name(c->err),
               c->idempotent, got, c->want);
  }
}

/* The 429 path end to end: decode, retry decision, wait. */
static void test_429_retry_after(void **state)
{
  static const char body[] =
      ST("\"status\":\"Failure\",\"message\":\"Too many requests, please try "
         "again later.\",\"reason\":\"TooManyRequests\",\"details\":{"
         "\"retryAfterSeconds\":1},\"code\":429");
  struct gq_k8s_status st;
  int64_t delay;
  int rc;

  (void)state;
  rc = gq_status_decode(429, body, strlen(body), &st);
  assert_int_equal(rc, GQ_ETOOMANY);
  assert_int_equal(gq_should_retry(rc, 0), 1); /* even for a POST */
  assert_int_equal(gq_retry_after_parse("1", T2025, &delay), 0);
  assert_int_equal(delay, 1000);
  assert_int_equal(st.retry_after_s * 1000, delay);
}

/* ---- token bucket ------------------------------------------------------- */

#define MAX_CALLS 12

/* clang-format off */
static const struct ratelimit_case {
  const char *name;
  double qps;
  int burst;
  int64_t start_ms;
  int n;
  int64_t at_ms[MAX_CALLS];
  int64_t want_wait_ms[MAX_CALLS];
} ratelimit_cases[] = {
    {"burst then 1/qps apart", 10, 3, 0, 6, {0, 0, 0, 0, 0, 0},
     {0, 0, 0, 100, 200, 300}},
    {"client-go default 5 qps burst 10", 5, 10, 1000, 12,
     {1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000},
     {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200, 400}},
    {"refill is capped at burst", 2, 1, 0, 5, {0, 0, 0, 5000, 5000},
     {0, 500, 1000, 0, 500}},
    {"partial refill", 10, 2, 0, 4, {0, 0, 50, 50}, {0, 0, 50, 150}},
    {"steady at the rate", 5, 1, 0, 4, {0, 200, 400, 600}, {0, 0, 0, 0}},
    {"a debt is paid before new tokens", 1, 1, 0, 3, {0, 0, 500},
     {0, 1000, 1500}},
    {"fractional interval rounds up", 3, 1, 0, 4, {0, 0, 0, 334},
     {0, 334, 667, 666}},
    {"binary fractions do not add a ms", 10, 1, 0, 3, {0, 0, 9},
     {0, 100, 191}}, /* 191.00000000000003 in doubles */
    {"unlimited: qps 0", 0, 1, 0, 3, {0, 0, 0}, {0, 0, 0}},
    {"unlimited: negative qps", -1, 1, 0, 3, {0, 0, 0}, {0, 0, 0}},
    {"burst 0 is 1", 10, 0, 0, 3, {0, 0, 0}, {0, 100, 200}},
    {"clock going back stands still", 1, 1, 1000, 3, {1000, 500, 1500},
     {0, 1000, 1500}},
    {"start time is not zero", 4, 2, INT64_C(1735689600000), 4,
     {INT64_C(1735689600000), INT64_C(1735689600000),
      INT64_C(1735689600000), INT64_C(1735689600100)},
     {0, 0, 250, 400}},
};
/* clang-format on */

static void test_ratelimit(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(ratelimit_cases); i++) {
    const struct ratelimit_case *c = &ratelimit_cases[i];
    struct gq_ratelimit r;

    gq_ratelimit_init(&r, c->qps, c->burst, c->start_ms);
    for (int j = 0; j < c->n; j++) {
      int64_t got = gq_ratelimit_reserve(&r, c->at_ms[j]);

      if (got != c->want_wait_ms[j])
        fail_msg("%s: call %d at %lld waits %lld, want %lld", c->name, j,
                 (long long)c->at_ms[j], (long long)got,
                 (long long)c->want_wait_ms[j]);
    }
  }
}

/* Over a long run the bucket admits qps per second on average. */
static void test_ratelimit_long_run(void **state)
{
  struct gq_ratelimit r;
  int64_t t = 0;

  (void)state;
  gq_ratelimit_init(&r, 7, 5, 0);
  for (int i = 0; i < 7005; i++)
    t += gq_ratelimit_reserve(&r, t); /* each call goes when allowed */
  /* 5 free, then 7000 at 7 per second: 1000 s, give or take rounding. */
  assert_true(t >= 999000 && t <= 1000000 + 7000);
}

/* gq_ratelimit_try() takes a token only when there is one, so the caller
 * can give the next one to whichever request it likes: a refused try
 * leaves no debt, and the wait it returns is when the next token is in. */
static void test_ratelimit_try(void **state)
{
  struct gq_ratelimit r;

  (void)state;
  gq_ratelimit_init(&r, 10, 2, 0);
  assert_int_equal(gq_ratelimit_try(&r, 0), 0);
  assert_int_equal(gq_ratelimit_try(&r, 0), 0);
  assert_int_equal(gq_ratelimit_try(&r, 0), 100); /* empty: 100 ms */
  assert_int_equal(gq_ratelimit_try(&r, 0), 100); /* still: no debt */
  assert_int_equal(gq_ratelimit_try(&r, 40), 60);
  assert_int_equal(gq_ratelimit_try(&r, 100), 0);
  assert_int_equal(gq_ratelimit_try(&r, 100), 100);
  assert_int_equal(gq_ratelimit_try(&r, 99999), 0); /* refilled to burst */
  assert_int_equal(gq_ratelimit_try(&r, 99999), 0);
  assert_int_equal(gq_ratelimit_try(&r, 99999), 100);
  /* a fraction of a ms still waits 1 ms (never "now" without a token) */
  gq_ratelimit_init(&r, 3, 1, 0);
  assert_int_equal(gq_ratelimit_try(&r, 0), 0);
  assert_int_equal(gq_ratelimit_try(&r, 333), 1);
  assert_int_equal(gq_ratelimit_try(&r, 334), 0);
  /* unlimited */
  gq_ratelimit_init(&r, 0, 1, 0);
  for (int i = 0; i < 5; i++)
    assert_int_equal(gq_ratelimit_try(&r, 0), 0);
  /* a reservation's debt is paid before try gets a token */
  gq_ratelimit_init(&r, 10, 1, 0);
  assert_int_equal(gq_ratelimit_reserve(&r, 0), 0);
  assert_int_equal(gq_ratelimit_reserve(&r, 0), 100);
  assert_int_equal(gq_ratelimit_try(&r, 0), 200);
  assert_int_equal(gq_ratelimit_try(&r, 200), 0);
  /* keeping 2 of a burst of 4: the low ones take 2, the others the rest */
  gq_ratelimit_init(&r, 10, 4, 0);
  assert_int_equal(gq_ratelimit_try_above(&r, 0, 2), 0);
  assert_int_equal(gq_ratelimit_try_above(&r, 0, 2), 0);
  assert_int_equal(gq_ratelimit_try_above(&r, 0, 2), 100); /* 3 needed */
  assert_int_equal(gq_ratelimit_try(&r, 0), 0);
  assert_int_equal(gq_ratelimit_try(&r, 0), 0);
  assert_int_equal(gq_ratelimit_try(&r, 0), 100);
  assert_int_equal(gq_ratelimit_try_above(&r, 0, 2), 300);
  assert_int_equal(gq_ratelimit_try_above(&r, 300, 2), 0);
  /* keep beyond the burst is the burst: still one at a time when full */
  gq_ratelimit_init(&r, 10, 2, 0);
  assert_int_equal(gq_ratelimit_try_above(&r, 0, 5), 0);
  assert_int_equal(gq_ratelimit_try_above(&r, 0, 5), 100);
}

/* ---- watch timeout ------------------------------------------------------ */

static void test_watch_timeout(void **state)
{
  static const struct {
    double rand01;
    int64_t want_s;
  } cases[] = {
      {0.0, 300}, {0.5, 450},  {0.25, 375},   {0.999999, 599}, {1.0, 599},
      {2.0, 599}, {-0.5, 300}, {0.0033, 300}, {0.0034, 301},
  };

  (void)state;
  for (size_t i = 0; i < N_OF(cases); i++)
    if (gq_watch_timeout_s(cases[i].rand01) != cases[i].want_s)
      fail_msg("rand %g: got %lld want %lld", cases[i].rand01,
               (long long)gq_watch_timeout_s(cases[i].rand01),
               (long long)cases[i].want_s);
  assert_int_equal(gq_watch_timeout_s(nextafter(1.0, 0.0)), 599);
  assert_int_equal(gq_watch_timeout_s(NAN), 300);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_drop_managed_fields),
      cmocka_unit_test(test_fixture_reference),
      cmocka_unit_test(test_fixture_every_split),
      cmocka_unit_test(test_fixture_crlf),
      cmocka_unit_test(test_fixture_no_final_newline),
      cmocka_unit_test(test_frame_table),
      cmocka_unit_test(test_frame_cb_stops),
      cmocka_unit_test(test_frame_release_in_cb),
      cmocka_unit_test(test_frame_bounded),
      cmocka_unit_test(test_decode_table),
      cmocka_unit_test(test_decode_unterminated),
      cmocka_unit_test(test_watch_type_name),
      cmocka_unit_test(test_status_table),
      cmocka_unit_test(test_status_decode_doc),
      cmocka_unit_test(test_status_long_message),
      cmocka_unit_test(test_status_from_json),
      cmocka_unit_test(test_retry_after),
      cmocka_unit_test(test_should_retry),
      cmocka_unit_test(test_429_retry_after),
      cmocka_unit_test(test_ratelimit),
      cmocka_unit_test(test_ratelimit_long_run),
      cmocka_unit_test(test_ratelimit_try),
      cmocka_unit_test(test_watch_timeout),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
