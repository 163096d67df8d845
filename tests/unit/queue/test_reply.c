/* tests/unit/queue/test_reply.c - the Redis reply walks (queue/reply.h) on
 * hand-built reply trees: well-formed answers decode, and every malformed
 * one (an integer or nil where a string belongs, wrong arity, odd hashes)
 * gives GQ_EIO with the bad element named, never a crash. Issue 23: the
 * ledger read passed a nil element's NULL string to strtoll. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "base/err.h"
#include "queue/reply.h"

/* A small pool of nodes: a test builds a tree from them, nothing to free. */
static struct gq_rq_reply pool[256];
static struct gq_rq_reply *arrs[256][8];
static size_t used;

static struct gq_rq_reply *node(int type)
{
  struct gq_rq_reply *r = &pool[used++];

  memset(r, 0, sizeof(*r));
  r->type = type;
  return r;
}

static struct gq_rq_reply *str(const char *s)
{
  struct gq_rq_reply *r = node(GQ_RQ_STRING);

  r->str = (char *)s;
  r->len = strlen(s);
  return r;
}

static struct gq_rq_reply *integer(long long v)
{
  struct gq_rq_reply *r = node(GQ_RQ_INTEGER);

  r->integer = v;
  return r;
}

static struct gq_rq_reply *nil(void)
{
  return node(GQ_RQ_NIL);
}

/* arr(n, e0, e1, ...) */
static struct gq_rq_reply *arr(size_t n, ...)
{
  struct gq_rq_reply *r = node(GQ_RQ_ARRAY);
  va_list ap;

  r->elem = arrs[used - 1];
  r->n = n;
  va_start(ap, n);
  for (size_t i = 0; i < n; i++)
    r->elem[i] = va_arg(ap, struct gq_rq_reply *);
  va_end(ap);
  return r;
}

static int setup(void **state)
{
  (void)state;
  used = 0;
  return 0;
}

static void test_ledger_ok(void **state)
{
  struct gq_rq_reply *rep = arr(3, integer(7), arr(2, str("a100"), str("4")),
                                arr(4, str("a100"), str("2"), str("h100"),
                                    str("-1")));
  struct gq_ledger_use *use;
  struct gq_reply_why why;
  long long ver;
  size_t n;

  (void)state;
  assert_int_equal(gq_reply_ledger(rep, 2, &ver, &use, &n, &why), 0);
  assert_int_equal(ver, 7);
  assert_int_equal(n, 3);
  assert_int_equal(use[0].team, 0);
  assert_string_equal(use[0].flavor, "a100");
  assert_int_equal(use[0].gpus, 4);
  assert_int_equal(use[2].team, 1);
  assert_string_equal(use[2].flavor, "h100");
  assert_int_equal(use[2].gpus, -1);
  free(use);
}

/* Each malformed ledger, with the top-level element the error must name. */
static void test_ledger_malformed(void **state)
{
  struct {
    const char *name;
    struct gq_rq_reply *rep;
    size_t want_at;
  } cases[] = {
      {"gpus is an integer (the issue 23 crash)",
       arr(2, integer(1), arr(2, str("a100"), integer(4))), 1},
      {"gpus is nil", arr(2, integer(1), arr(2, str("a100"), nil())), 1},
      {"flavor is nil", arr(2, integer(1), arr(2, nil(), str("4"))), 1},
      {"gpus is not a number",
       arr(2, integer(1), arr(2, str("a100"), str("4x"))), 1},
      {"gpus overflows",
       arr(2, integer(1), arr(2, str("a100"), str("99999999999999999999"))),
       1},
      {"odd hash", arr(2, integer(1), arr(1, str("a100"))), 1},
      {"usage is nil", arr(2, integer(1), nil()), 1},
      {"usage is a string", arr(2, integer(1), str("x")), 1},
      {"version is a string", arr(2, str("1"), arr(0)), 0},
      {"version is nil", arr(2, nil(), arr(0)), 0},
      {"too few elements", arr(1, integer(1)), (size_t)-1},
      {"not an array", integer(3), (size_t)-1},
      {"nil reply", nil(), (size_t)-1},
      {"missing element", arr(2, integer(1), NULL), 1},
  };

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gq_ledger_use *use = (void *)1;
    struct gq_reply_why why = {0, ""};
    long long ver = 5;
    size_t n = 5;
    int rc = gq_reply_ledger(cases[i].rep, 1, &ver, &use, &n, &why);

    if (rc != GQ_EIO || use || n || ver || why.at != cases[i].want_at ||
        !why.what[0])
      fail_msg("%s: rc %d at %zu what '%s'", cases[i].name, rc, why.at,
               why.what);
  }
}

static void test_result(void **state)
{
  struct {
    const char *name;
    struct gq_rq_reply *rep;
    int want_rc;
    const char *want_state;
    long long want_value;
  } cases[] = {
      {"pair", arr(2, str("ok"), integer(3)), 0, "ok", 3},
      {"member value", arr(2, str("queued"), str("12abc")), 0, "queued", 12},
      {"empty value", arr(2, str("missing"), str("")), 0, "missing", 0},
      {"bare integer", integer(9), 0, "", 9},
      {"state is an integer", arr(2, integer(1), integer(3)), GQ_EIO, "", 0},
      {"state is nil", arr(2, nil(), integer(3)), GQ_EIO, "", 0},
      {"value is nil", arr(2, str("ok"), nil()), GQ_EIO, "", 0},
      {"value is an array", arr(2, str("ok"), arr(0)), GQ_EIO, "", 0},
      {"one element", arr(1, str("ok")), GQ_EIO, "", 0},
      {"nil", nil(), GQ_EIO, "", 0},
      {"missing element", arr(2, NULL, NULL), GQ_EIO, "", 0},
  };

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gq_reply_why why = {0, ""};
    const char *st = NULL;
    long long v = -1;
    int rc = gq_reply_result(cases[i].rep, &st, &v, &why);

    if (rc != cases[i].want_rc || !st || strcmp(st, cases[i].want_state) ||
        v != cases[i].want_value || (rc && !why.what[0]))
      fail_msg("%s: rc %d state '%s' value %lld", cases[i].name, rc,
               st ? st : "(null)", v);
  }
}

static void test_scan(void **state)
{
  struct gq_reply_why why;
  const struct gq_rq_reply *keys;
  const char *cur;
  struct gq_rq_reply *nul = str("a");

  (void)state;
  assert_int_equal(gq_reply_scan(arr(2, str("17"), arr(2, str("k1"),
                                                          str("k2"))),
                                 &cur, &keys, &why),
                   0);
  assert_string_equal(cur, "17");
  assert_int_equal(keys->n, 2);
  assert_int_equal(gq_reply_scan(arr(2, nil(), arr(0)), &cur, &keys, &why),
                   GQ_EIO);
  assert_null(cur);
  assert_int_equal(gq_reply_scan(arr(2, integer(0), arr(0)), &cur, &keys,
                                 &why),
                   GQ_EIO);
  assert_int_equal(gq_reply_scan(arr(2, str("0"), arr(1, integer(1))), &cur,
                                 &keys, &why),
                   GQ_EIO);
  assert_int_equal(why.at, 1);
  assert_int_equal(gq_reply_scan(arr(2, str("0"), nil()), &cur, &keys, &why),
                   GQ_EIO);
  nul->len = 2; /* "a\0": a key with a NUL byte */
  assert_int_equal(gq_reply_scan(arr(2, str("0"), arr(1, nul)), &cur, &keys,
                                 &why),
                   GQ_EIO);
  assert_int_equal(gq_reply_scan(arr(1, str("0")), &cur, &keys, &why),
                   GQ_EIO);
}

static void test_json(void **state)
{
  struct gq_reply_why why;
  json_t *v;

  (void)state;
  assert_int_equal(gq_reply_json(arr(4, str("a"), str("1"), str("b"),
                                     str("2")),
                                 1, &v, &why),
                   0);
  assert_string_equal(json_string_value(json_object_get(v, "b")), "2");
  json_decref(v);
  assert_int_equal(gq_reply_json(arr(2, str("m1"), str("m2")), 0, &v, &why),
                   0);
  assert_int_equal(json_array_size(v), 2);
  json_decref(v);
  assert_int_equal(gq_reply_json(arr(2, str("a"), integer(1)), 1, &v, &why),
                   GQ_EIO);
  assert_null(v);
  assert_int_equal(why.at, 1);
  assert_int_equal(gq_reply_json(arr(2, nil(), str("1")), 1, &v, &why),
                   GQ_EIO);
  assert_int_equal(gq_reply_json(arr(1, str("a")), 1, &v, &why), GQ_EIO);
  assert_int_equal(gq_reply_json(arr(1, nil()), 0, &v, &why), GQ_EIO);
  assert_int_equal(gq_reply_json(arr(1, str("\xff")), 0, &v, &why), GQ_EIO);
  assert_int_equal(gq_reply_json(arr(2, str("\xff"), str("1")), 1, &v, &why),
                   GQ_EIO);
  assert_int_equal(gq_reply_json(nil(), 1, &v, &why), GQ_EIO);
}

/* The regression seed's bytes, through hiredis's reader and the mirror. */
static void test_from_hiredis(void **state)
{
  static const char wire[] = "*2\r\n:1\r\n*2\r\n$4\r\na100\r\n:4\r\n";
  redisReader *rd = redisReaderCreate();
  struct gq_reply_why why;
  struct gq_ledger_use *use;
  struct gq_rq_reply *y;
  long long ver;
  void *x = NULL;
  size_t n;

  (void)state;
  assert_int_equal(redisReaderFeed(rd, wire, sizeof(wire) - 1), REDIS_OK);
  assert_int_equal(redisReaderGetReply(rd, &x), REDIS_OK);
  assert_non_null(x);
  y = gq_reply_from_hiredis(x);
  assert_int_equal(y->type, GQ_RQ_ARRAY);
  assert_int_equal(gq_reply_ledger(y, 1, &ver, &use, &n, &why), GQ_EIO);
  assert_int_equal(why.at, 1);
  gq_reply_free(y);
  freeReplyObject(x);
  redisReaderFree(rd);
}

/* fuzz_redis_reply's finding: an array header announcing 411 million
 * elements made hiredis allocate 3.3 GB before any element arrived. */
static void test_reader_cap(void **state)
{
  static const char huge[] = "*411111111\r\n";
  static const char ok[] = "*2\r\n:1\r\n:2\r\n";
  redisReader *rd = redisReaderCreate();
  void *x = NULL;

  (void)state;
  gq_reply_reader_cap(rd);
  gq_reply_reader_cap(rd); /* idempotent */
  assert_int_equal(redisReaderFeed(rd, ok, sizeof(ok) - 1), REDIS_OK);
  assert_int_equal(redisReaderGetReply(rd, &x), REDIS_OK);
  assert_non_null(x);
  assert_int_equal(((redisReply *)x)->elements, 2);
  freeReplyObject(x);
  x = NULL;
  assert_int_equal(redisReaderFeed(rd, huge, sizeof(huge) - 1), REDIS_OK);
  assert_int_equal(redisReaderGetReply(rd, &x), REDIS_ERR);
  assert_null(x);
  redisReaderFree(rd);
  gq_reply_reader_cap(NULL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_ledger_ok, setup),
      cmocka_unit_test_setup(test_ledger_malformed, setup),
      cmocka_unit_test_setup(test_result, setup),
      cmocka_unit_test_setup(test_scan, setup),
      cmocka_unit_test_setup(test_json, setup),
      cmocka_unit_test_setup(test_from_hiredis, setup),
      cmocka_unit_test(test_reader_cap),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
