/* Integration tests for queue/rq: the Redis client against a real
 * redis-server on loopback (tests/support/redis.h). Each case runs its own
 * uv loop until a condition holds or a deadline passes (never a sleep as
 * the condition), checks that every command callback ran exactly once and
 * never inside the call that issued the command, and ends with
 * uv_loop_close() == 0. The URL parser gets a table of its own. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "queue/rq.h"
#include "tests/support/fixture.h"
#include "tests/support/redis.h"

/* ---- log capture ------------------------------------------------------ */

static char logbuf[1 << 16];
static size_t loglen;

static void on_log_line(const char *line, void *arg)
{
  size_t n = strlen(line);

  (void)arg;
  if (getenv("GQ_TEST_LOG")) /* GQ_TEST_LOG=1 shows the lines */
    fprintf(stderr, "%s\n", line);
  if (loglen + n + 2 > sizeof(logbuf))
    return; /* full: tests look at the first lines only */
  memcpy(logbuf + loglen, line, n);
  loglen += n;
  logbuf[loglen++] = '\n';
  logbuf[loglen] = '\0';
}

static void log_reset(void)
{
  loglen = 0;
  logbuf[0] = '\0';
}

static size_t log_count(const char *needle)
{
  size_t n = 0;

  for (const char *p = logbuf; (p = strstr(p, needle)) != NULL; p++)
    n++;
  return n;
}

/* ---- fixture: a loop, a ticker, a server ------------------------------ */

/* What on_state reported. */
struct watch {
  int ready, down, last;
  char why[512];
  struct gq_rq **close_on_down;  /* close (and clear) this client on DOWN */
  struct gq_rq **close_on_ready; /* ... on READY */
};

struct fx {
  uv_loop_t loop;
  uv_timer_t tick; /* keeps UV_RUN_ONCE from blocking past a deadline */
  struct gq_test_redis srv;
  struct watch w;
};

static int in_api; /* set while the test is inside a gq_rq_* call */

static void on_tick(uv_timer_t *t)
{
  (void)t;
}

static void fx_init(struct fx *f, const char *const *extra)
{
  memset(f, 0, sizeof(*f));
  assert_int_equal(gq_test_redis_start(&f->srv, extra), 0);
  assert_int_equal(uv_loop_init(&f->loop), 0);
  assert_int_equal(uv_timer_init(&f->loop, &f->tick), 0);
  log_reset();
}

static void fx_done(struct fx *f)
{
  uv_close((uv_handle_t *)&f->tick, NULL);
  assert_int_equal(uv_run(&f->loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  gq_test_redis_stop(&f->srv);
}

/* Runs the loop until 'cond' holds; fails the test after 'ms'. 'cond' is
 * evaluated once per loop turn (it may have side effects). */
#define RUN_UNTIL(f, cond, ms)                                               \
  do {                                                                       \
    int64_t end_ = gq_clock_mono_ms() + (ms);                                \
    int ok_;                                                                 \
    uv_timer_start(&(f)->tick, on_tick, 20, 20);                             \
    while (!(ok_ = !!(cond)) && gq_clock_mono_ms() < end_)                   \
      uv_run(&(f)->loop, UV_RUN_ONCE);                                       \
    uv_timer_stop(&(f)->tick);                                               \
    if (!ok_)                                                                \
      fail_msg("timed out after %d ms waiting for: %s", (int)(ms), #cond);   \
  } while (0)

static void on_state(struct gq_rq *r, int ready, const char *why, void *arg)
{
  struct watch *w = arg;

  assert_false(in_api);
  if (w->ready + w->down > 0)
    assert_int_not_equal(ready, w->last); /* reports alternate */
  w->last = ready;
  if (ready) {
    assert_null(why);
    w->ready++;
    if (w->close_on_ready && *w->close_on_ready == r) {
      gq_rq_close(r);
      *w->close_on_ready = NULL;
    }
    return;
  }
  assert_non_null(why);
  w->down++;
  snprintf(w->why, sizeof(w->why), "%s", why);
  if (w->close_on_down && *w->close_on_down == r) {
    gq_rq_close(r);
    *w->close_on_down = NULL;
  }
}

static struct gq_rq *fx_client(struct fx *f, const char *url,
                               struct gq_rq_opts *o)
{
  struct gq_rq_opts def = {0};
  struct gq_rq *r;

  if (!o)
    o = &def;
  o->url = url;
  o->on_state = on_state;
  if (!o->arg)
    o->arg = &f->w;
  if (!o->backoff_max_ms)
    o->backoff_max_ms = 400; /* keep reconnect tests short */
  in_api = 1;
  r = gq_rq_new(&f->loop, o);
  in_api = 0;
  assert_non_null(r);
  return r;
}

/* ---- commands --------------------------------------------------------- */

/* What a command callback saw, copied (the reply dies with the call). */
struct res {
  int calls;
  int status;
  int type;
  long long integer;
  char str[512];
  size_t n;
  char elem[4][64];
  int64_t at_ms;
  struct gq_rq **close_me; /* close this client from the callback */
};

static void on_res(struct gq_rq *r, int status, const struct gq_rq_reply *rep,
                   void *arg)
{
  struct res *o = arg;

  assert_false(in_api);
  o->calls++;
  o->status = status;
  o->at_ms = gq_clock_mono_ms();
  assert_true((status == 0) == (rep != NULL));
  if (rep) {
    o->type = rep->type;
    o->integer = rep->integer;
    if (rep->str)
      snprintf(o->str, sizeof(o->str), "%.*s", (int)rep->len, rep->str);
    o->n = rep->n;
    for (size_t i = 0; i < rep->n && i < 4; i++)
      snprintf(o->elem[i], sizeof(o->elem[i]), "%s",
               rep->elem[i]->str ? rep->elem[i]->str : "(nil)");
  }
  if (o->close_me && *o->close_me == r) {
    gq_rq_close(r);
    *o->close_me = NULL;
  }
}

/* Sends a space-separated command (test strings have no quoting). */
static int cmd(struct gq_rq *r, struct res *out, const char *line)
{
  char buf[512], *save = NULL;
  const char *argv[16];
  int argc = 0, rc;

  snprintf(buf, sizeof(buf), "%s", line);
  for (char *t = strtok_r(buf, " ", &save); t && argc < 16;
       t = strtok_r(NULL, " ", &save))
    argv[argc++] = t;
  memset(out, 0, sizeof(*out));
  in_api = 1;
  rc = gq_rq_cmd(r, on_res, out, argc, argv, NULL);
  in_api = 0;
  return rc;
}

/* Sends 'line', runs until its answer, and checks the reply text. */
static void cmd_expect(struct fx *f, struct gq_rq *r, const char *line,
                       int want_type, const char *want_str)
{
  struct res res;

  assert_int_equal(cmd(r, &res, line), 0);
  assert_int_equal(res.calls, 0); /* never inside gq_rq_cmd() */
  RUN_UNTIL(f, res.calls > 0, 5000);
  assert_int_equal(res.calls, 1);
  assert_int_equal(res.status, 0);
  if (res.type != want_type)
    fail_msg("'%s': type %d (%s), want %d", line, res.type, res.str,
             want_type);
  if (want_str)
    assert_string_equal(res.str, want_str);
}

static int eval(struct gq_rq *r, struct res *out, const char *script,
                const char *key, const char *arg1, const char *arg2)
{
  const char *keys[1] = {key}, *args[2] = {arg1, arg2};
  int rc;

  memset(out, 0, sizeof(*out));
  in_api = 1;
  rc = gq_rq_eval(r, script, 1, keys, arg2 ? 2 : 1, args, on_res, out);
  in_api = 0;
  return rc;
}

static void close_client(struct fx *f, struct gq_rq *r)
{
  in_api = 1;
  gq_rq_close(r);
  in_api = 0;
  (void)f;
}

/* ---- URL parsing ------------------------------------------------------ */

static const struct url_case {
  const char *url;
  int want_rc;
  int is_unix;
  const char *host; /* or the socket path when is_unix */
  int port;
  const char *user, *password;
  int db;
  const char *want_err; /* substring of the message */
} url_cases[] = {
    {"redis://127.0.0.1", 0, 0, "127.0.0.1", 6379, "", "", 0, NULL},
    {"redis://cache.svc:6380/3", 0, 0, "cache.svc", 6380, "", "", 3, NULL},
    {"redis://h/", 0, 0, "h", 6379, "", "", 0, NULL},
    {"REDIS://h:1", 0, 0, "h", 1, "", "", 0, NULL},
    {"redis://:s3cret@h", 0, 0, "h", 6379, "", "s3cret", 0, NULL},
    {"redis://:s3cret@h:7000/1", 0, 0, "h", 7000, "", "s3cret", 1, NULL},
    {"redis://gpuq:p%40ss%3a@h:1/0", 0, 0, "h", 1, "gpuq", "p@ss:", 0, NULL},
    {"redis://:a@b@h", 0, 0, "h", 6379, "", "a@b", 0, NULL},
    {"redis://[::1]:7000/2", 0, 0, "::1", 7000, "", "", 2, NULL},
    {"redis://[::1]", 0, 0, "::1", 6379, "", "", 0, NULL},
    {"redis://h?db=5", 0, 0, "h", 6379, "", "", 5, NULL},
    {"unix:///run/redis.sock", 0, 1, "/run/redis.sock", 0, "", "", 0, NULL},
    {"unix:///run/redis.sock?db=4", 0, 1, "/run/redis.sock", 0, "", "", 4,
     NULL},
    {"redis+unix:///tmp/r.sock?db=1", 0, 1, "/tmp/r.sock", 0, "", "", 1,
     NULL},
    {"unix://:pw@/tmp/r.sock", 0, 1, "/tmp/r.sock", 0, "", "pw", 0, NULL},
    {"unix://u:pw@/tmp/r.sock", 0, 1, "/tmp/r.sock", 0, "u", "pw", 0, NULL},
    {"rediss://h:6380", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "no TLS"},
    {"http://h", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "unsupported scheme 'http'"},
    {"h:6379", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "must start with"},
    {"", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "must start with"},
    {"redis://", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "missing host"},
    {"redis://:pw@", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "missing host"},
    {"redis://h:0", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "invalid port '0'"},
    {"redis://h:65536", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "invalid port"},
    {"redis://h:", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "invalid port ''"},
    {"redis://h:12x", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "invalid port '12x'"},
    {"redis://::1:6379", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "missing host"},
    {"redis://[::1", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "unterminated"},
    {"redis://[::1]x", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "after host"},
    {"redis://h/abc", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "invalid database 'abc'"},
    {"redis://h/-1", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "invalid database"},
    {"redis://h/1/2", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "invalid database '1/2'"},
    {"redis://h/99999999999", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "invalid database"},
    {"redis://h/1?db=2", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "database twice"},
    {"redis://h?password=x", GQ_EINVAL, 0, 0, 0, 0, 0, 0,
     "unknown parameter 'password'"},
    {"redis://h#frag", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "fragment"},
    {"redis://gpuq@h", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "no password"},
    {"redis://gpuq:@h", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "empty password"},
    {"redis://:bad%zzpw@h", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "invalid or too long"},
    {"redis://:pw%00@h", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "invalid or too long"},
    {"unix://", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "missing socket path"},
    {"unix:///", GQ_EINVAL, 0, 0, 0, 0, 0, 0, "missing socket path"},
    {"unix://host/tmp/r.sock", GQ_EINVAL, 0, 0, 0, 0, 0, 0,
     "must not name a host"},
    {"unix:///tmp/r.sock?db=x", GQ_EINVAL, 0, 0, 0, 0, 0, 0,
     "invalid database 'x'"},
    {"unix:///tmp/r.sock?foo=1", GQ_EINVAL, 0, 0, 0, 0, 0, 0,
     "unknown parameter 'foo'"},
    {"redis://u:topsecret@h:bad", GQ_EINVAL, 0, 0, 0, 0, 0, 0,
     "invalid port 'bad'"},
};

static void check_url_case(const struct url_case *c)
{
  struct gq_rq_url u;
  char err[256];
  int rc = gq_rq_parse_url(c->url, &u, err, sizeof(err));

  if (rc != c->want_rc)
    fail_msg("'%s': rc %d (%s), want %d", c->url, rc, err, c->want_rc);
  if (rc != 0) {
    if (!strstr(err, c->want_err))
      fail_msg("'%s': message '%s' lacks '%s'", c->url, err, c->want_err);
    assert_null(strstr(err, "topsecret"));
    assert_string_equal(u.password, ""); /* nothing half-parsed is kept */
    return;
  }
  assert_int_equal(u.is_unix, c->is_unix);
  assert_string_equal(c->is_unix ? u.path : u.host, c->host);
  assert_int_equal(u.port, c->port);
  assert_string_equal(u.user, c->user);
  assert_string_equal(u.password, c->password);
  assert_int_equal(u.db, c->db);
}

static void test_parse_url_table(void **state)
{
  char err[8];
  struct gq_rq_url u;

  (void)state;
  for (size_t i = 0; i < sizeof(url_cases) / sizeof(url_cases[0]); i++)
    check_url_case(&url_cases[i]);
  /* A short error buffer is truncated, never overrun. */
  assert_int_equal(gq_rq_parse_url("rediss://h", &u, err, sizeof(err)),
                   GQ_EINVAL);
  assert_int_equal(strlen(err), sizeof(err) - 1);
  assert_int_equal(gq_rq_parse_url(NULL, &u, NULL, 0), GQ_EINVAL);
}

static void test_new_rejects_bad_options(void **state)
{
  uv_loop_t loop;
  struct gq_rq_script dup[2] = {{"a", "return 1"}, {"a", "return 2"}};
  struct gq_rq_script noname[1] = {{"", "return 1"}};
  struct gq_rq_opts o = {.url = "rediss://h"};

  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_null(gq_rq_new(&loop, &o));
  o.url = "redis://127.0.0.1:1";
  o.scripts = dup;
  o.nscripts = 2;
  assert_null(gq_rq_new(&loop, &o));
  o.scripts = noname;
  o.nscripts = 1;
  assert_null(gq_rq_new(&loop, &o));
  assert_null(gq_rq_new(&loop, NULL));
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- connecting and commands ------------------------------------------ */

static void test_connect_set_get(void **state)
{
  struct fx f;
  struct gq_rq *r;
  struct res res;
  const char *sel[2] = {"SELECT", "1"};

  (void)state;
  fx_init(&f, NULL);
  r = fx_client(&f, f.srv.url, NULL);
  assert_false(gq_rq_ready(r));
  assert_int_equal(cmd(r, &res, "PING"), GQ_EUNAVAIL);
  RUN_UNTIL(&f, f.w.ready == 1, 5000);
  assert_true(gq_rq_ready(r));
  assert_int_equal(gq_rq_state(r), GQ_RQ_READY);
  assert_string_equal(gq_rq_state_name(GQ_RQ_READY), "READY");

  cmd_expect(&f, r, "SET k v1", GQ_RQ_STATUS, "OK");
  cmd_expect(&f, r, "GET k", GQ_RQ_STRING, "v1");
  cmd_expect(&f, r, "GET missing", GQ_RQ_NIL, NULL);
  cmd_expect(&f, r, "INCRBY n 41", GQ_RQ_INTEGER, NULL);
  cmd_expect(&f, r, "INCR k", GQ_RQ_ERROR, NULL);

  assert_int_equal(cmd(r, &res, "RPUSH l a b c"), 0);
  RUN_UNTIL(&f, res.calls == 1, 5000);
  assert_int_equal(res.integer, 3);
  assert_int_equal(cmd(r, &res, "LRANGE l 0 -1"), 0);
  RUN_UNTIL(&f, res.calls == 1, 5000);
  assert_int_equal(res.type, GQ_RQ_ARRAY);
  assert_int_equal(res.n, 3);
  assert_string_equal(res.elem[0], "a");
  assert_string_equal(res.elem[2], "c");

  /* Binary-safe arguments with explicit lengths. */
  {
    const char *argv[3] = {"SET", "bin", "a\0b"};
    size_t lens[3] = {3, 3, 3};

    memset(&res, 0, sizeof(res));
    assert_int_equal(gq_rq_cmd(r, on_res, &res, 3, argv, lens), 0);
    RUN_UNTIL(&f, res.calls == 1, 5000);
    cmd_expect(&f, r, "STRLEN bin", GQ_RQ_INTEGER, NULL);
  }

  /* Connection-state commands would be undone by a reconnect. */
  assert_int_equal(gq_rq_cmd(r, on_res, &res, 2, sel, NULL), GQ_EINVAL);
  assert_int_equal(cmd(r, &res, "subscribe ch"), GQ_EINVAL);
  assert_int_equal(gq_rq_cmd(r, on_res, &res, 0, sel, NULL), GQ_EINVAL);
  assert_int_equal(res.calls, 0);

  close_client(&f, r);
  assert_int_equal(f.w.down, 0); /* close does not report */
  fx_done(&f);
  assert_int_equal(f.w.ready, 1);
}

static void test_resolve_localhost(void **state)
{
  struct fx f;
  struct gq_rq *r, *early;
  char url[64];

  (void)state;
  fx_init(&f, NULL);
  snprintf(url, sizeof(url), "redis://localhost:%d", f.srv.port);
  r = fx_client(&f, url, NULL);
  /* localhost may resolve to ::1 first, which the server does not listen
   * on: the client moves on to the next address. */
  RUN_UNTIL(&f, f.w.ready == 1, 10000);
  cmd_expect(&f, r, "PING", GQ_RQ_STATUS, "PONG");
  close_client(&f, r);

  /* Closing while the lookup may still run on the thread pool. */
  early = fx_client(&f, url, NULL);
  RUN_UNTIL(&f, gq_rq_state(early) != GQ_RQ_CLOSED, 5000);
  close_client(&f, early);
  fx_done(&f);
}

static void test_no_server_reports_down_once(void **state)
{
  struct fx f;
  struct gq_rq *r;
  struct res res;
  char url[64];
  int old_level = gq_log_level;

  (void)state;
  fx_init(&f, NULL);
  snprintf(url, sizeof(url), "redis://127.0.0.1:%d", f.srv.port);
  gq_test_redis_stop(&f.srv); /* nothing listens on the port now */
  gq_log_level = GQ_DEBUG;
  r = fx_client(&f, url, NULL);
  RUN_UNTIL(&f, log_count("-> CONNECTING") >= 3, 10000);
  gq_log_level = old_level;
  assert_int_equal(f.w.down, 1); /* transitions, not attempts */
  assert_int_equal(f.w.ready, 0);
  assert_non_null(strstr(f.w.why, "cannot connect to redis '127.0.0.1:"));
  assert_non_null(strstr(f.w.why, "refused"));
  assert_string_equal(gq_rq_last_error(r), f.w.why);
  assert_int_equal(cmd(r, &res, "PING"), GQ_EUNAVAIL);
  /* The first failure is logged; repeats are rate-limited. */
  assert_int_equal(log_count("level=warn"), 1);
  close_client(&f, r);
  fx_done(&f);
}

/* A listener that never accepts: the kernel completes the TCP handshake,
 * nobody answers the client's PING, and the connect timeout ends it. */
static void test_connect_timeout(void **state)
{
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t alen = sizeof(a);
  struct gq_rq_opts o = {.connect_timeout_ms = 300};
  struct fx f;
  struct gq_rq *r;
  char url[64];
  int fd;
  int64_t t0;

  (void)state;
  fx_init(&f, NULL);
  fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(listen(fd, 16), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
  snprintf(url, sizeof(url), "redis://127.0.0.1:%d", ntohs(a.sin_port));
  t0 = gq_clock_mono_ms();
  r = fx_client(&f, url, &o);
  RUN_UNTIL(&f, f.w.down == 1, 5000);
  assert_true(gq_clock_mono_ms() - t0 >= 250);
  assert_non_null(strstr(f.w.why, "no answer within 300 ms"));
  close_client(&f, r);
  fx_done(&f);
  close(fd);
}

/* A peer that resets the connection (RST, not FIN): libuv reports POLLERR
 * as a negative poll status, which the client must pass on to hiredis
 * instead of waiting for a timeout (10 s here). */
static void test_reset_is_noticed(void **state)
{
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t alen = sizeof(a);
  struct gq_rq_opts o = {.connect_timeout_ms = 10000};
  struct linger lin = {.l_onoff = 1, .l_linger = 0};
  struct fx f;
  struct gq_rq *r;
  char url[64];
  int fd, cfd = -1;

  (void)state;
  fx_init(&f, NULL);
  fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  assert_true(fd >= 0);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(listen(fd, 16), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
  snprintf(url, sizeof(url), "redis://127.0.0.1:%d", ntohs(a.sin_port));
  r = fx_client(&f, url, &o);
  RUN_UNTIL(&f, gq_rq_state(r) == GQ_RQ_AUTHENTICATING &&
                    (cfd = accept(fd, NULL, NULL)) >= 0, 5000);
  assert_int_equal(
      setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lin, sizeof(lin)), 0);
  close(cfd);
  RUN_UNTIL(&f, f.w.down == 1, 3000);
  assert_non_null(strstr(f.w.why, "lost connection"));
  assert_non_null(strstr(f.w.why, "reset"));
  close_client(&f, r);
  fx_done(&f);
  close(fd);
}

/* ---- authentication --------------------------------------------------- */

static void test_password(void **state)
{
  static const char *const extra[] = {"--requirepass", "rq-pass-1234", NULL};
  struct fx f;
  struct gq_rq *r;
  char url[128];
  int old_level = gq_log_level;

  (void)state;
  fx_init(&f, extra);
  gq_log_level = GQ_DEBUG;
  snprintf(url, sizeof(url), "redis://:rq-pass-1234@127.0.0.1:%d/2",
           f.srv.port);
  r = fx_client(&f, url, NULL);
  RUN_UNTIL(&f, f.w.ready == 1, 5000);
  cmd_expect(&f, r, "SET k in-db-2", GQ_RQ_STATUS, "OK");
  cmd_expect(&f, r, "CLIENT INFO", GQ_RQ_STRING, NULL);
  cmd_expect(&f, r, "GET k", GQ_RQ_STRING, "in-db-2");
  close_client(&f, r);
  fx_done(&f);
  gq_log_level = old_level;
  assert_true(loglen > 0);
  assert_non_null(strstr(logbuf, "AUTHENTICATING"));
  assert_null(strstr(logbuf, "rq-pass-1234"));
}

static void test_acl_user(void **state)
{
  struct fx f;
  struct gq_rq *r;
  char url[128], *rep;

  (void)state;
  fx_init(&f, NULL);
  rep = gq_test_redis_cmd(&f.srv, "ACL SETUSER gpuq on >acl-pw-5678 ~* +@all");
  assert_non_null(rep);
  assert_string_equal(rep, "OK");
  free(rep);
  snprintf(url, sizeof(url), "redis://gpuq:acl-pw-5678@127.0.0.1:%d",
           f.srv.port);
  r = fx_client(&f, url, NULL);
  RUN_UNTIL(&f, f.w.ready == 1, 5000);
  cmd_expect(&f, r, "ACL WHOAMI", GQ_RQ_STRING, "gpuq");
  close_client(&f, r);
  fx_done(&f);
}

static void test_wrong_password(void **state)
{
  static const char *const extra[] = {"--requirepass", "right-pw", NULL};
  struct fx f;
  struct gq_rq *r, *anon;
  struct res res;
  char url[128];

  (void)state;
  fx_init(&f, extra);
  snprintf(url, sizeof(url), "redis://:wrong-pw@127.0.0.1:%d", f.srv.port);
  r = fx_client(&f, url, NULL);
  RUN_UNTIL(&f, f.w.down == 1, 5000);
  assert_non_null(strstr(f.w.why, "cannot authenticate to redis"));
  assert_non_null(strstr(f.w.why, "as 'default'"));
  assert_non_null(strstr(f.w.why, "WRONGPASS"));
  assert_null(strstr(f.w.why, "wrong-pw"));
  assert_false(gq_rq_ready(r));
  assert_int_equal(cmd(r, &res, "PING"), GQ_EUNAVAIL);
  close_client(&f, r);

  /* No password at all: the handshake PING says NOAUTH. The client is
   * closed from inside its own DOWN callback. */
  memset(&f.w, 0, sizeof(f.w));
  anon = fx_client(&f, f.srv.url, NULL);
  f.w.close_on_down = &anon;
  RUN_UNTIL(&f, f.w.down == 1, 5000);
  assert_null(anon);
  assert_non_null(strstr(f.w.why, "NOAUTH"));
  fx_done(&f);
}

/* ---- scripts ---------------------------------------------------------- */

static const struct gq_rq_script scripts[] = {
    {"incrby", "return redis.call('INCRBY', KEYS[1], ARGV[1])"},
    {"echo", "return {KEYS[1], ARGV[1], ARGV[2]}"},
    {"broken", "return redis.call('NO-SUCH-COMMAND')"},
};

static struct gq_rq *script_client(struct fx *f, const char *url)
{
  struct gq_rq_opts o = {.scripts = scripts, .nscripts = 3};

  return fx_client(f, url, &o);
}

static void test_eval_preloaded(void **state)
{
  struct fx f;
  struct gq_rq *r;
  struct res res;

  (void)state;
  fx_init(&f, NULL);
  r = script_client(&f, f.srv.url);
  RUN_UNTIL(&f, f.w.ready == 1, 5000);
  assert_int_equal(eval(r, &res, "incrby", "ctr", "5", NULL), 0);
  assert_int_equal(res.calls, 0);
  RUN_UNTIL(&f, res.calls == 1, 5000);
  assert_int_equal(res.type, GQ_RQ_INTEGER);
  assert_int_equal(res.integer, 5);

  assert_int_equal(eval(r, &res, "echo", "k1", "a1", "a2"), 0);
  RUN_UNTIL(&f, res.calls == 1, 5000);
  assert_int_equal(res.type, GQ_RQ_ARRAY);
  assert_int_equal(res.n, 3);
  assert_string_equal(res.elem[0], "k1");
  assert_string_equal(res.elem[2], "a2");

  /* A script error is a reply, passed through as is. */
  assert_int_equal(eval(r, &res, "broken", "k", "x", NULL), 0);
  RUN_UNTIL(&f, res.calls == 1, 5000);
  assert_int_equal(res.status, 0);
  assert_int_equal(res.type, GQ_RQ_ERROR);

  assert_int_equal(eval(r, &res, "nope", "k", "x", NULL), GQ_ENOTFOUND);
  close_client(&f, r);
  fx_done(&f);
}

static void test_noscript_recovery(void **state)
{
  struct fx f;
  struct gq_rq *r;
  struct res a, b;
  char *rep;

  (void)state;
  fx_init(&f, NULL);
  r = script_client(&f, f.srv.url);
  RUN_UNTIL(&f, f.w.ready == 1, 5000);
  assert_int_equal(eval(r, &a, "incrby", "ctr", "2", NULL), 0);
  RUN_UNTIL(&f, a.calls == 1, 5000);

  rep = gq_test_redis_cmd(&f.srv, "SCRIPT FLUSH");
  assert_string_equal(rep, "OK");
  free(rep);
  /* Two evals in flight both hit NOSCRIPT; each reloads and retries. */
  assert_int_equal(eval(r, &a, "incrby", "ctr", "3", NULL), 0);
  assert_int_equal(eval(r, &b, "incrby", "ctr", "4", NULL), 0);
  RUN_UNTIL(&f, a.calls == 1 && b.calls == 1, 5000);
  assert_int_equal(a.type, GQ_RQ_INTEGER);
  assert_int_equal(a.integer, 5);
  assert_int_equal(b.type, GQ_RQ_INTEGER);
  assert_int_equal(b.integer, 9);
  assert_int_equal(f.w.down, 0); /* no reconnect was needed */
  close_client(&f, r);
  fx_done(&f);
}

/* ---- losing the server ------------------------------------------------ */

static void test_client_kill_reconnects(void **state)
{
  struct fx f;
  struct gq_rq *r;
  char *rep;

  (void)state;
  fx_init(&f, NULL);
  r = script_client(&f, f.srv.url);
  RUN_UNTIL(&f, f.w.ready == 1, 5000);
  rep = gq_test_redis_cmd(&f.srv, "CLIENT KILL TYPE normal");
  assert_non_null(rep);
  assert_string_equal(rep, "1");
  free(rep);
  RUN_UNTIL(&f, f.w.down == 1, 5000);
  assert_non_null(strstr(f.w.why, "lost connection to redis"));
  RUN_UNTIL(&f, f.w.ready == 2, 10000);
  cmd_expect(&f, r, "SET after kill", GQ_RQ_STATUS, "OK");
  close_client(&f, r);
  fx_done(&f);
}

/* Starts a redis-server of our own on 'port' (the harness always picks a
 * fresh port) with its files in dir. */
static pid_t spawn_redis(int port, const char *dir)
{
  char portbuf[16], logfile[300];
  pid_t pid;

  snprintf(portbuf, sizeof(portbuf), "%d", port);
  snprintf(logfile, sizeof(logfile), "%s/redis.log", dir);
  pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    execlp("redis-server", "redis-server", "--bind", "127.0.0.1", "--port",
           portbuf, "--dir", dir, "--logfile", logfile, "--save", "",
           "--appendonly", "no", (char *)NULL);
    _exit(127);
  }
  return pid;
}

static void test_restart_same_port(void **state)
{
  struct fx f;
  struct gq_rq *r;
  struct res pending, res;
  char dir[] = "/tmp/gq-rq-restart-XXXXXX", *rep;
  pid_t pid;
  int status;

  (void)state;
  fx_init(&f, NULL);
  r = script_client(&f, f.srv.url);
  RUN_UNTIL(&f, f.w.ready == 1, 5000);
  assert_int_equal(cmd(r, &pending, "BLPOP never 0"), 0);

  rep = gq_test_redis_cmd(&f.srv, "SHUTDOWN NOSAVE");
  free(rep); /* NULL: the server closes the connection */
  gq_test_redis_stop(&f.srv); /* reaps it, keeps the port number */
  RUN_UNTIL(&f, f.w.down == 1 && pending.calls == 1, 5000);
  assert_int_equal(pending.status, GQ_ECLOSED);
  assert_int_equal(cmd(r, &res, "PING"), GQ_EUNAVAIL);

  assert_non_null(mkdtemp(dir));
  pid = spawn_redis(f.srv.port, dir);
  assert_true(pid > 0);
  RUN_UNTIL(&f, f.w.ready == 2, 20000);
  cmd_expect(&f, r, "SET back again", GQ_RQ_STATUS, "OK");
  /* The new server's scripts were loaded at connect. */
  assert_int_equal(eval(r, &res, "incrby", "ctr", "7", NULL), 0);
  RUN_UNTIL(&f, res.calls == 1, 5000);
  assert_int_equal(res.integer, 7);
  assert_int_equal(pending.calls, 1);
  close_client(&f, r);
  fx_done(&f);
  kill(pid, SIGTERM);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  gq_test_rmtree(dir);
}

/* Issues a PING from the loop, some time after the slow command. */
struct late_ping {
  struct gq_rq *r;
  struct res res;
  int rc;
};

static void on_late_ping(uv_timer_t *t)
{
  struct late_ping *p = t->data;

  p->rc = cmd(p->r, &p->res, "PING");
  uv_close((uv_handle_t *)t, NULL);
}

static void test_command_timeout(void **state)
{
  static const char *const extra[] = {"--enable-debug-command", "local",
                                      NULL};
  struct fx f;
  struct gq_rq *r;
  struct gq_rq_opts o = {.command_timeout_ms = 300,
                         .connect_timeout_ms = 4000};
  struct res slow, same_tick;
  struct late_ping late = {0};
  uv_timer_t t;
  int64_t t0;

  (void)state;
  fx_init(&f, extra);
  r = fx_client(&f, f.srv.url, &o);
  RUN_UNTIL(&f, f.w.ready == 1, 5000);
  t0 = gq_clock_mono_ms();
  assert_int_equal(cmd(r, &slow, "DEBUG SLEEP 2"), 0);
  assert_int_equal(cmd(r, &same_tick, "PING"), 0);
  /* A PING sent 150 ms later is not overdue when the first two are: it
   * loses its connection instead. */
  late.r = r;
  late.rc = 1;
  uv_timer_init(&f.loop, &t);
  t.data = &late;
  uv_timer_start(&t, on_late_ping, 150, 0);
  RUN_UNTIL(&f, slow.calls == 1 && same_tick.calls == 1, 5000);
  assert_int_equal(late.rc, 0);
  assert_int_equal(late.res.calls, 1);
  assert_int_equal(slow.status, GQ_ETIMEDOUT);
  assert_int_equal(same_tick.status, GQ_ETIMEDOUT);
  assert_int_equal(late.res.status, GQ_ECLOSED);
  assert_true(slow.at_ms - t0 >= 250);
  assert_true(slow.at_ms - t0 < 1500); /* well before the sleep ends */
  assert_int_equal(f.w.down, 1);
  assert_non_null(strstr(f.w.why, "did not answer 'DEBUG' within 300 ms"));
  RUN_UNTIL(&f, f.w.ready == 2, 15000);
  cmd_expect(&f, r, "PING", GQ_RQ_STATUS, "PONG");
  assert_int_equal(slow.calls, 1);
  assert_int_equal(same_tick.calls, 1);
  assert_int_equal(late.res.calls, 1);
  close_client(&f, r);
  fx_done(&f);
}

/* ---- unix sockets ----------------------------------------------------- */

static void test_unix_socket(void **state)
{
  char dir[] = "/tmp/gq-rq-sock-XXXXXX", sock[128], url[192], url2[192];
  const char *extra[] = {"--unixsocket", sock, "--unixsocketperm", "700",
                         NULL};
  struct fx f;
  struct gq_rq *r, *r2;
  struct watch w2 = {0};
  struct gq_rq_opts o2 = {.arg = &w2};
  struct res res;

  (void)state;
  assert_non_null(mkdtemp(dir));
  snprintf(sock, sizeof(sock), "%s/redis.sock", dir);
  fx_init(&f, extra);
  snprintf(url, sizeof(url), "unix://%s?db=3", sock);
  snprintf(url2, sizeof(url2), "redis+unix://%s", sock);
  r = fx_client(&f, url, NULL);
  r2 = fx_client(&f, url2, &o2);
  RUN_UNTIL(&f, f.w.ready == 1 && w2.ready == 1, 5000);
  assert_int_equal(cmd(r, &res, "CLIENT INFO"), 0);
  RUN_UNTIL(&f, res.calls == 1, 5000);
  assert_non_null(strstr(res.str, " db=3 "));
  assert_non_null(strstr(res.str, "laddr=/")); /* over the socket */
  cmd_expect(&f, r, "SET where db3", GQ_RQ_STATUS, "OK");
  cmd_expect(&f, r2, "GET where", GQ_RQ_NIL, NULL); /* r2 is on db 0 */
  close_client(&f, r);
  close_client(&f, r2);
  fx_done(&f);
  gq_test_rmtree(dir);
}

/* ---- closing ---------------------------------------------------------- */

static void test_close_with_pending(void **state)
{
  struct fx f;
  struct gq_rq *r;
  struct res blocked, queued;

  (void)state;
  fx_init(&f, NULL);
  r = script_client(&f, f.srv.url);
  RUN_UNTIL(&f, f.w.ready == 1, 5000);
  assert_int_equal(cmd(r, &blocked, "BLPOP never 0"), 0);
  assert_int_equal(eval(r, &queued, "incrby", "c", "1", NULL), 0);
  close_client(&f, r);
  assert_int_equal(blocked.calls, 0); /* not inside gq_rq_close() */
  assert_int_equal(queued.calls, 0);
  fx_done(&f);
  assert_int_equal(blocked.calls, 1);
  assert_int_equal(blocked.status, GQ_ECANCELED);
  assert_int_equal(queued.calls, 1);
  assert_int_equal(queued.status, GQ_ECANCELED);
}

static void test_close_inside_callback(void **state)
{
  struct fx f;
  struct gq_rq *r, *target;
  struct res first, blocked;

  (void)state;
  fx_init(&f, NULL);
  r = fx_client(&f, f.srv.url, NULL);
  target = r;
  RUN_UNTIL(&f, f.w.ready == 1, 5000);
  assert_int_equal(cmd(r, &first, "PING"), 0);
  first.close_me = &target;
  assert_int_equal(cmd(r, &blocked, "BLPOP never 0"), 0);
  RUN_UNTIL(&f, first.calls == 1, 5000);
  assert_null(target);
  assert_int_equal(first.status, 0);
  assert_string_equal(first.str, "PONG");
  fx_done(&f);
  assert_int_equal(blocked.calls, 1);
  assert_int_equal(blocked.status, GQ_ECANCELED);
}

static void test_close_inside_ready_callback(void **state)
{
  struct fx f;
  struct gq_rq *r;

  (void)state;
  fx_init(&f, NULL);
  r = script_client(&f, f.srv.url);
  f.w.close_on_ready = &r;
  RUN_UNTIL(&f, f.w.ready == 1, 5000);
  assert_null(r);
  fx_done(&f);
  assert_int_equal(f.w.down, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_url_table),
      cmocka_unit_test(test_new_rejects_bad_options),
      cmocka_unit_test(test_connect_set_get),
      cmocka_unit_test(test_resolve_localhost),
      cmocka_unit_test(test_no_server_reports_down_once),
      cmocka_unit_test(test_connect_timeout),
      cmocka_unit_test(test_reset_is_noticed),
      cmocka_unit_test(test_password),
      cmocka_unit_test(test_acl_user),
      cmocka_unit_test(test_wrong_password),
      cmocka_unit_test(test_eval_preloaded),
      cmocka_unit_test(test_noscript_recovery),
      cmocka_unit_test(test_client_kill_reconnects),
      cmocka_unit_test(test_restart_same_port),
      cmocka_unit_test(test_command_timeout),
      cmocka_unit_test(test_unix_socket),
      cmocka_unit_test(test_close_with_pending),
      cmocka_unit_test(test_close_inside_callback),
      cmocka_unit_test(test_close_inside_ready_callback),
  };

  signal(SIGPIPE, SIG_IGN);
  gq_log_set_sink(on_log_line, NULL);
  return cmocka_run_group_tests(tests, NULL, NULL);
}
