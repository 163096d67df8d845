/* queue/rq.c - hiredis async on the uv loop, with explicit states,
 * timeouts, reconnects and script preloading (see rq.h).
 *
 * Lifetimes, in the order they nest:
 *  - struct gq_rq lives until both of its timers have closed after
 *    gq_rq_close(); that is always after its hiredis context is gone, because
 *    the context is freed (by us, or by hiredis right after the callback it is
 *    running) before the timers' close callbacks can run.
 *  - The hiredis context is freed by hiredis itself after on_connect() with an
 *    error and after on_disconnect(); everywhere else we free it, and we set
 *    r->ac = NULL first, so a callback can tell our own teardown from
 *    hiredis's (on_disconnect() compares the pointer). We never free it
 *    inside on_connect(): hiredis 0.14 runs that callback without its
 *    IN_CALLBACK guard, so a free there would be a use after free.
 *  - A command (struct rq_op) is owned by hiredis while it is in flight (it
 *    is the privdata) and hiredis answers every privdata exactly once, with a
 *    NULL reply when the context goes away; the op is freed only after that.
 */
#include "queue/rq.h"

#include "base/alloc.h"
#include "base/backoff.h"
#include "base/err.h"
#include "base/log.h"
#include "queue/reply.h"

#include <assert.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>
#include <limits.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define RQ_DEFAULT_PORT 6379
#define RQ_CONNECT_TIMEOUT_MS 2000
#define RQ_COMMAND_TIMEOUT_MS 5000
#define RQ_BACKOFF_BASE_MS 200
#define RQ_BACKOFF_MAX_MS 10000
#define RQ_BACKOFF_JITTER 0.5
#define RQ_LOG_INTERVAL_MS 30000 /* repeated failures while DOWN */

/* gq_rq_reply's type values are hiredis's, so no mapping is needed. */
_Static_assert(GQ_RQ_STRING == REDIS_REPLY_STRING &&
                   GQ_RQ_ARRAY == REDIS_REPLY_ARRAY &&
                   GQ_RQ_INTEGER == REDIS_REPLY_INTEGER &&
                   GQ_RQ_NIL == REDIS_REPLY_NIL &&
                   GQ_RQ_STATUS == REDIS_REPLY_STATUS &&
                   GQ_RQ_ERROR == REDIS_REPLY_ERROR,
               "reply types must match hiredis");

/* A preloaded script. */
struct rq_script {
  char *name;
  char *source;
  char sha[41]; /* from SCRIPT LOAD at the last connect */
};

/* A command in flight. Ops sit in r's list in the order they were issued,
 * which is also the order of their deadlines. */
struct rq_op {
  struct rq_op *prev, *next;
  struct gq_rq *r;
  gq_rq_reply_cb cb;
  void *arg;
  uint64_t deadline; /* uv_now() value at which it times out */
  int err;           /* status for a NULL reply; 0 means GQ_ECLOSED */
  int in_flight;     /* hiredis holds the op as privdata */
  int script;        /* gq_rq_eval(): index into r->scripts; else -1 */
  int retried;       /* the NOSCRIPT retry has been made */
  char *cmd;         /* gq_rq_eval(): the formatted EVALSHA, for the retry */
  size_t cmdlen;
  char name[24]; /* command name, for the timeout message */
};

/* A uv_getaddrinfo() request. It is heap-allocated so that an attempt can be
 * abandoned (timeout, close) while the lookup still runs on the thread pool:
 * the request then frees itself when it completes. */
struct rq_gai {
  uv_getaddrinfo_t req;
  struct gq_rq *r; /* NULL once abandoned */
};

struct gq_rq {
  uv_loop_t *loop;
  struct gq_rq_url url;
  char where[300]; /* "host:port" or "unix:/path", for messages */
  char ip[64];     /* the address of the current attempt, when resolved */
  uint32_t connect_timeout_ms, command_timeout_ms;
  struct rq_script *scripts;
  size_t nscripts;
  gq_rq_state_cb on_state;
  void *arg;

  enum gq_rq_state state;
  int up;           /* last reported: -1 nothing yet, 0 DOWN, 1 READY */
  int closing;      /* gq_rq_close() was called */
  int fail_now;     /* on_deadline() must end the attempt with r->err */
  int closes;       /* timer close callbacks still to come */
  unsigned pick;    /* which resolved address to try; moves on failure */
  size_t hs_total;  /* handshake commands sent on connect */
  size_t hs_done;   /* ... and answered */
  redisAsyncContext *ac; /* NULL when we have no (live) context */
  struct rq_gai *gai;    /* lookup in flight */
  uv_timer_t retry;      /* backoff before the next attempt */
  uv_timer_t deadline;   /* connect timeout, then the oldest command's */
  struct gq_backoff bo;
  struct rq_op *head, *tail;
  char err[384]; /* the last failure */
  struct gq_log_limit limit;
  struct gq_lc lc;
};

static void on_deadline(uv_timer_t *t);
static void on_retry(uv_timer_t *t);

/* ------------------------------------------------------------------------
 * URL parsing
 * ------------------------------------------------------------------------ */

static int url_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int url_err(char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;

  if (err && errlen > 0) {
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return GQ_EINVAL;
}

/* Parses exactly len decimal digits into *out; fails on anything else or a
 * value above max. */
static int parse_uint(const char *s, size_t len, unsigned long max,
                      unsigned long *out)
{
  unsigned long v = 0;

  if (len == 0 || len > 10)
    return -1;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (unsigned long)(s[i] - '0');
  }
  if (v > max)
    return -1;
  *out = v;
  return 0;
}

static int hex_digit(int c)
{
  if (c >= '0' && c <= '9')
    return c - '0';
  c |= 0x20; /* lower case */
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

/* Decodes RFC 3986 percent-encoding of s[0..len) into dst (cap bytes with
 * the NUL). Fails on a malformed escape, an encoded NUL or overflow. */
static int pct_decode(const char *s, size_t len, char *dst, size_t cap)
{
  size_t o = 0;

  for (size_t i = 0; i < len; i++) {
    int c = (unsigned char)s[i];

    if (c == '%') {
      int hi = i + 2 < len ? hex_digit(s[i + 1]) : -1;
      int lo = i + 2 < len ? hex_digit(s[i + 2]) : -1;

      if (i + 2 >= len || hi < 0 || lo < 0 || (hi | lo) == 0)
        return -1;
      c = hi * 16 + lo;
      i += 2;
    }
    if (o + 1 >= cap)
      return -1;
    dst[o++] = (char)c;
  }
  dst[o] = '\0';
  return 0;
}

/* "user:password" or ":password". The password itself never appears in a
 * message. */
static int parse_userinfo(const char *s, size_t len, struct gq_rq_url *out,
                          char *err, size_t errlen)
{
  const char *colon = memchr(s, ':', len);
  size_t ulen = colon ? (size_t)(colon - s) : len;

  if (!colon)
    return url_err(err, errlen, "redis URL names user '%.*s' but no "
                   "password (write ':password@' for a password alone)",
                   (int)ulen, s);
  if (pct_decode(s, ulen, out->user, sizeof(out->user)) != 0)
    return url_err(err, errlen, "invalid user name in redis URL");
  if (pct_decode(colon + 1, len - ulen - 1, out->password,
                 sizeof(out->password)) != 0)
    return url_err(err, errlen, "invalid or too long password in redis URL");
  if (out->user[0] && !out->password[0])
    return url_err(err, errlen, "redis URL names user '%s' but an empty "
                   "password", out->user);
  return 0;
}

static int parse_port(const char *s, size_t len, struct gq_rq_url *out,
                      char *err, size_t errlen)
{
  unsigned long v;

  if (parse_uint(s, len, 65535, &v) != 0 || v == 0)
    return url_err(err, errlen, "invalid port '%.*s' in redis URL", (int)len,
                   s);
  out->port = (int)v;
  return 0;
}

/* "host", "host:port", "[v6]" or "[v6]:port". */
static int parse_hostport(const char *s, size_t len, struct gq_rq_url *out,
                          char *err, size_t errlen)
{
  const char *host = s, *rest;
  size_t hlen;

  if (len > 0 && s[0] == '[') {
    const char *close = memchr(s, ']', len);

    if (!close)
      return url_err(err, errlen, "unterminated '[' in redis URL host");
    host = s + 1;
    hlen = (size_t)(close - host);
    rest = close + 1;
  } else {
    const char *colon = memchr(s, ':', len);

    hlen = colon ? (size_t)(colon - s) : len;
    rest = s + hlen;
  }
  if (hlen == 0)
    return url_err(err, errlen, "missing host in redis URL");
  if (hlen >= sizeof(out->host))
    return url_err(err, errlen, "host name too long in redis URL");
  memcpy(out->host, host, hlen);
  out->host[hlen] = '\0';
  if (rest == s + len)
    return 0;
  if (*rest != ':')
    return url_err(err, errlen, "unexpected '%.*s' after host in redis URL",
                   (int)(s + len - rest), rest);
  return parse_port(rest + 1, (size_t)(s + len - rest - 1), out, err,
                    errlen);
}

static int parse_db(const char *s, size_t len, struct gq_rq_url *out,
                    int *have_db, char *err, size_t errlen)
{
  unsigned long v;

  if (*have_db)
    return url_err(err, errlen, "redis URL gives the database twice");
  if (parse_uint(s, len, INT_MAX, &v) != 0)
    return url_err(err, errlen, "invalid database '%.*s' in redis URL",
                   (int)len, s);
  out->db = (int)v;
  *have_db = 1;
  return 0;
}

/* "?db=N": the only parameter. Names, not values, go into messages (a
 * value might be a secret). */
static int parse_query(const char *q, struct gq_rq_url *out, int *have_db,
                       char *err, size_t errlen)
{
  while (*q) {
    size_t len = strcspn(q, "&");
    const char *eq = memchr(q, '=', len);
    size_t klen = eq ? (size_t)(eq - q) : len;

    if (!eq || klen != 2 || strncmp(q, "db", 2) != 0)
      return url_err(err, errlen, "unknown parameter '%.*s' in redis URL",
                     (int)klen, q);
    if (parse_db(eq + 1, len - 3, out, have_db, err, errlen) != 0)
      return GQ_EINVAL;
    q += len;
    if (*q == '&')
      q++;
  }
  return 0;
}

/* What follows the authority of a TCP URL: "", "/", "/N", then "?query". */
static int parse_tcp_tail(const char *s, struct gq_rq_url *out, char *err,
                          size_t errlen)
{
  int have_db = 0;

  if (strchr(s, '#'))
    return url_err(err, errlen, "redis URL must not have a '#' fragment");
  if (*s == '/') {
    size_t n = strcspn(s + 1, "?");

    if (n > 0 && parse_db(s + 1, n, out, &have_db, err, errlen) != 0)
      return GQ_EINVAL;
    s += 1 + n;
  }
  if (*s == '?')
    return parse_query(s + 1, out, &have_db, err, errlen);
  return 0;
}

static int parse_tcp(const char *s, struct gq_rq_url *out, char *err,
                     size_t errlen)
{
  size_t alen = strcspn(s, "/?#");
  const char *at = NULL;
  int rc;

  for (size_t i = 0; i < alen; i++)
    if (s[i] == '@')
      at = s + i; /* the last '@': a raw one in a password is common */
  if (at) {
    rc = parse_userinfo(s, (size_t)(at - s), out, err, errlen);
    if (rc != 0)
      return rc;
  }
  rc = parse_hostport(at ? at + 1 : s, (size_t)(s + alen - (at ? at + 1 : s)),
                      out, err, errlen);
  if (rc != 0)
    return rc;
  return parse_tcp_tail(s + alen, out, err, errlen);
}

/* "[userinfo@]/path[?db=N]": no host, the path is absolute. */
static int parse_unix(const char *s, struct gq_rq_url *out, char *err,
                      size_t errlen)
{
  size_t alen = strcspn(s, "/"), plen;
  int have_db = 0, rc;

  out->is_unix = 1;
  out->port = 0;
  if (alen > 0 && s[alen - 1] != '@')
    return url_err(err, errlen, "unix socket URL must not name a host "
                   "(write 'unix:///path/to/socket')");
  if (alen > 0) {
    rc = parse_userinfo(s, alen - 1, out, err, errlen);
    if (rc != 0)
      return rc;
  }
  s += alen;
  if (strchr(s, '#'))
    return url_err(err, errlen, "redis URL must not have a '#' fragment");
  plen = strcspn(s, "?");
  if (plen < 2)
    return url_err(err, errlen, "missing socket path in redis URL");
  if (plen >= sizeof(out->path))
    return url_err(err, errlen, "socket path too long in redis URL (at most "
                   "%zu bytes)", sizeof(out->path) - 1);
  memcpy(out->path, s, plen);
  out->path[plen] = '\0';
  if (s[plen] == '?')
    return parse_query(s + plen + 1, out, &have_db, err, errlen);
  return 0;
}

/* Splits off the scheme; sets *rest to what follows "://". */
static int parse_scheme(const char *url, struct gq_rq_url *out,
                        const char **rest, char *err, size_t errlen)
{
  static const struct {
    const char *prefix;
    int is_unix;
  } schemes[] = {{"redis://", 0}, {"unix://", 1}, {"redis+unix://", 1}};
  const char *sep = strstr(url, "://");

  for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
    size_t n = strlen(schemes[i].prefix);

    if (strncasecmp(url, schemes[i].prefix, n) == 0) {
      out->is_unix = schemes[i].is_unix;
      *rest = url + n;
      return 0;
    }
  }
  if (strncasecmp(url, "rediss://", 9) == 0)
    return url_err(err, errlen, "cannot use 'rediss://': hiredis 0.14 has "
                   "no TLS support (use a TLS sidecar or a unix socket)");
  if (!sep || strcspn(url, ":/@") != (size_t)(sep - url))
    return url_err(err, errlen, "redis URL must start with 'redis://' or "
                   "'unix://'");
  return url_err(err, errlen, "unsupported scheme '%.*s' in redis URL",
                 (int)(sep - url), url);
}

int gq_rq_parse_url(const char *url, struct gq_rq_url *out, char *err,
                    size_t errlen)
{
  const char *rest = NULL;
  int rc;

  memset(out, 0, sizeof(*out));
  out->port = RQ_DEFAULT_PORT;
  if (err && errlen > 0)
    err[0] = '\0';
  if (!url)
    return url_err(err, errlen, "missing redis URL");
  rc = parse_scheme(url, out, &rest, err, errlen);
  if (rc == 0)
    rc = out->is_unix ? parse_unix(rest, out, err, errlen)
                      : parse_tcp(rest, out, err, errlen);
  if (rc != 0)
    memset(out, 0, sizeof(*out)); /* leave no half-parsed password */
  return rc;
}

/* ------------------------------------------------------------------------
 * hiredis event hooks on libuv
 *
 * hiredis 0.14's own adapters/libuv.h ignores a negative poll status. libuv
 * stops a poll handle on POLLERR and reports the error that way, so with
 * that adapter a refused or reset connection would go unnoticed until a
 * timer fired. Here an error is handed to hiredis as the events it waits
 * for, so its read or write fails and it disconnects (hiredis 1.x's adapter
 * does the same). The uv_poll_t lives in a small heap struct that outlives
 * the context until its close callback, as in the stock adapter.
 * ------------------------------------------------------------------------ */

struct rq_ev {
  redisAsyncContext *ac; /* NULL once hiredis has cleaned up */
  uv_poll_t poll;
  int events;  /* UV_READABLE | UV_WRITABLE, as hiredis wants them */
  int closing; /* uv_close() called */
};

static void ev_on_poll(uv_poll_t *h, int status, int events)
{
  struct rq_ev *e = h->data;

  if (status < 0)
    events = e->events;
  if (e->ac && (events & UV_READABLE))
    redisAsyncHandleRead(e->ac);
  if (e->ac && (events & UV_WRITABLE))
    redisAsyncHandleWrite(e->ac);
}

static void ev_update(struct rq_ev *e)
{
  if (e->closing)
    return;
  if (e->events)
    uv_poll_start(&e->poll, e->events, ev_on_poll);
  else
    uv_poll_stop(&e->poll);
}

static void ev_add_read(void *p)
{
  struct rq_ev *e = p;

  e->events |= UV_READABLE;
  ev_update(e);
}

static void ev_del_read(void *p)
{
  struct rq_ev *e = p;

  e->events &= ~UV_READABLE;
  ev_update(e);
}

static void ev_add_write(void *p)
{
  struct rq_ev *e = p;

  e->events |= UV_WRITABLE;
  ev_update(e);
}

static void ev_del_write(void *p)
{
  struct rq_ev *e = p;

  e->events &= ~UV_WRITABLE;
  ev_update(e);
}

static void ev_on_close(uv_handle_t *h)
{
  free(h->data);
}

/* hiredis calls this right before it closes the socket; uv_close() stops
 * polling at once, so the fd is never closed while it is polled. */
static void ev_cleanup(void *p)
{
  struct rq_ev *e = p;

  e->ac = NULL;
  if (e->closing)
    return;
  e->closing = 1;
  uv_close((uv_handle_t *)&e->poll, ev_on_close);
}

static int ev_attach(redisAsyncContext *ac, uv_loop_t *loop)
{
  struct rq_ev *e;
  int rc;

  if (ac->ev.data)
    return GQ_EINVAL;
  e = gq_xcalloc(1, sizeof(*e));
  rc = uv_poll_init(loop, &e->poll, ac->c.fd);
  if (rc < 0) {
    free(e);
    return rc;
  }
  e->poll.data = e;
  e->ac = ac;
  ac->ev.data = e;
  ac->ev.addRead = ev_add_read;
  ac->ev.delRead = ev_del_read;
  ac->ev.addWrite = ev_add_write;
  ac->ev.delWrite = ev_del_write;
  ac->ev.cleanup = ev_cleanup;
  return 0;
}

/* ------------------------------------------------------------------------
 * Replies
 * ------------------------------------------------------------------------ */

static int is_noscript(const redisReply *rep)
{
  return rep->type == REDIS_REPLY_ERROR && rep->len >= 8 &&
         strncmp(rep->str, "NOSCRIPT", 8) == 0;
}

/* ------------------------------------------------------------------------
 * State, reporting, logging
 * ------------------------------------------------------------------------ */

const char *gq_rq_state_name(enum gq_rq_state s)
{
  static const char *const names[] = {"CLOSED",         "RESOLVING",
                                      "CONNECTING",     "AUTHENTICATING",
                                      "LOADING_SCRIPTS", "READY"};

  if ((unsigned)s >= sizeof(names) / sizeof(names[0]))
    return "?";
  return names[s];
}

static void set_state(struct gq_rq *r, enum gq_rq_state s)
{
  if (r->state == s)
    return;
  GQ_LOG(GQ_DEBUG, &r->lc, "redis '%s': %s -> %s", r->where,
         gq_rq_state_name(r->state), gq_rq_state_name(s));
  r->state = s;
}

/* Tells the owner about a READY/DOWN transition. Last thing its callers do:
 * the callback may close the client. */
static void report(struct gq_rq *r, int up)
{
  if (r->up == up || r->closing)
    return;
  r->up = up;
  if (r->on_state)
    r->on_state(r, up, up ? NULL : r->err, r->arg);
}

/* The first failure after READY (or at start) is logged; repeats while DOWN
 * are rate-limited, so a Redis that stays away costs a line per interval. */
static void log_failure(struct gq_rq *r, uint64_t delay_ms)
{
  unsigned skipped;

  if (r->up != 0) {
    GQ_LOG(GQ_WARN, &r->lc, "%s (retry in %llu ms)", r->err,
           (unsigned long long)delay_ms);
    gq__log_pass(&r->limit, &skipped); /* repeats wait a full interval */
  } else {
    GQ_LOG_LIMITED(&r->limit, GQ_WARN, &r->lc, "%s (retry in %llu ms)",
                   r->err, (unsigned long long)delay_ms);
  }
}

/* " (address ::1)" when the host was resolved to an address, else "". */
static const char *addr_note(const struct gq_rq *r, char *buf, size_t len)
{
  if (!r->ip[0] || strcmp(r->ip, r->url.host) == 0)
    return "";
  snprintf(buf, len, " (address %s)", r->ip);
  return buf;
}

/* ------------------------------------------------------------------------
 * Commands in flight
 * ------------------------------------------------------------------------ */

/* A new op, not yet sent; 'name' (not NUL-terminated) is kept truncated
 * for messages. */
static struct rq_op *op_new(struct gq_rq *r, gq_rq_reply_cb cb, void *arg,
                            const char *name, size_t namelen)
{
  struct rq_op *op = gq_xcalloc(1, sizeof(*op));

  op->r = r;
  op->cb = cb;
  op->arg = arg;
  op->script = -1;
  if (namelen >= sizeof(op->name))
    namelen = sizeof(op->name) - 1;
  memcpy(op->name, name, namelen);
  return op;
}

static void op_free(struct rq_op *op)
{
  if (op->cmd)
    redisFreeCommand(op->cmd);
  free(op);
}

/* Appends a command hiredis has accepted and makes sure the deadline timer
 * runs. The timer serves the oldest command only; on_deadline() moves it on
 * lazily, so a reply costs no timer call. */
static void op_start(struct gq_rq *r, struct rq_op *op)
{
  op->in_flight = 1;
  op->deadline = uv_now(r->loop) + r->command_timeout_ms;
  op->prev = r->tail;
  if (r->tail)
    r->tail->next = op;
  else
    r->head = op;
  r->tail = op;
  if (!uv_is_active((uv_handle_t *)&r->deadline))
    uv_timer_start(&r->deadline, on_deadline, r->command_timeout_ms, 0);
}

static void op_unlink(struct gq_rq *r, struct rq_op *op)
{
  if (op->prev)
    op->prev->next = op->next;
  else
    r->head = op->next;
  if (op->next)
    op->next->prev = op->prev;
  else
    r->tail = op->prev;
  op->prev = op->next = NULL;
}

/* Runs the op's callback (its one and only run) and frees it. */
static void op_finish(struct rq_op *op, int status, const redisReply *reply)
{
  struct gq_rq *r = op->r;
  struct gq_rq_reply *copy = reply ? gq_reply_from_hiredis(reply) : NULL;

  op_unlink(r, op);
  op->cb(r, status, copy, op->arg);
  gq_reply_free(copy);
  op_free(op);
}

/* Commands go out only on a connection that finished its handshake: a
 * command pipelined behind a failing AUTH would get NOAUTH, and one sent
 * while DOWN would have to be queued, which the caller must decide. */
static int cmd_allowed(const struct gq_rq *r)
{
  return !r->closing && r->state == GQ_RQ_READY && r->ac;
}

/* The SCRIPT LOAD of a NOSCRIPT retry. Its SHA1 is the one we have (it
 * depends on the source only), so only a failure is of interest. */
static void on_reload_reply(redisAsyncContext *ac, void *reply, void *priv)
{
  struct gq_rq *r = priv;
  redisReply *rep = reply;

  (void)ac;
  if (rep && rep->type == REDIS_REPLY_ERROR)
    GQ_LOG(GQ_DEBUG, &r->lc, "cannot reload script on redis '%s': %s",
           r->where, rep->str);
}

static void on_op_reply(redisAsyncContext *ac, void *reply, void *priv);

/* NOSCRIPT: the server lost its scripts (restart, SCRIPT FLUSH). Pipelines
 * SCRIPT LOAD and the same EVALSHA; the load is answered first, so the
 * retry finds the script. If the load fails, the retry's NOSCRIPT is the
 * caller's answer. */
static int eval_retry(struct gq_rq *r, struct rq_op *op)
{
  const char *argv[3] = {"SCRIPT", "LOAD", r->scripts[op->script].source};

  if (!cmd_allowed(r))
    return -1;
  if (redisAsyncCommandArgv(r->ac, on_reload_reply, r, 3, argv, NULL) !=
      REDIS_OK)
    return -1;
  if (redisAsyncFormattedCommand(r->ac, on_op_reply, op, op->cmd,
                                 op->cmdlen) != REDIS_OK)
    return -1;
  GQ_LOG(GQ_DEBUG, &r->lc, "script '%s' missing on redis '%s', loading it "
         "again", r->scripts[op->script].name, r->where);
  op->retried = 1;
  op->in_flight = 1;
  return 0;
}

/* hiredis's answer for a command. A NULL reply means the context is going
 * away; while closing, the op stays listed and close_finish() answers it
 * with GQ_ECANCELED from the loop. */
static void on_op_reply(redisAsyncContext *ac, void *reply, void *priv)
{
  struct rq_op *op = priv;
  struct gq_rq *r = op->r;

  op->in_flight = 0;
  if (!reply) {
    /* hiredis is freeing the context. If it decided so itself (the server
     * went away), on_disconnect() comes only after these NULL replies: stop
     * accepting commands now, so callbacks see a consistent state. */
    if (ac == r->ac)
      set_state(r, GQ_RQ_CLOSED);
    if (!r->closing)
      op_finish(op, op->err ? op->err : GQ_ECLOSED, NULL);
    return;
  }
  if (op->script >= 0 && !op->retried && is_noscript(reply) &&
      eval_retry(r, op) == 0)
    return;
  op_finish(op, 0, reply);
}

/* ------------------------------------------------------------------------
 * Connection attempts
 * ------------------------------------------------------------------------ */

/* Forgets a lookup in flight. uv_cancel() fails once a pool thread has
 * picked the request up; either way on_resolved() runs later, sees g->r ==
 * NULL and only frees. */
static void gai_abandon(struct gq_rq *r)
{
  if (!r->gai)
    return;
  r->gai->r = NULL;
  uv_cancel((uv_req_t *)&r->gai->req);
  r->gai = NULL;
}

/* Frees our context, if any. hiredis answers the commands in flight with
 * NULL replies before this returns, or, inside one of its callbacks, right
 * after that callback. */
static void drop_context(struct gq_rq *r)
{
  redisAsyncContext *ac = r->ac;

  if (!ac)
    return;
  r->ac = NULL;
  redisAsyncFree(ac);
}

static void link_fail(struct gq_rq *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Ends the current attempt: drops the connection (commands in flight get
 * their op->err or GQ_ECLOSED), schedules the next attempt, and reports
 * DOWN. Callers that run inside on_connect() or on_disconnect() have set
 * r->ac = NULL already: hiredis frees that context itself. */
static void link_fail(struct gq_rq *r, const char *fmt, ...)
{
  uint64_t delay;
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(r->err, sizeof(r->err), fmt, ap);
  va_end(ap);
  if (r->state == GQ_RQ_CONNECTING)
    r->pick++; /* try the host's next address next time */
  set_state(r, GQ_RQ_CLOSED);
  uv_timer_stop(&r->deadline);
  r->fail_now = 0;
  gai_abandon(r);
  delay = gq_backoff_next(&r->bo);
  log_failure(r, delay);
  drop_context(r);
  if (r->closing)
    return; /* a command callback closed the client */
  uv_timer_start(&r->retry, on_retry, delay, 0);
  report(r, 0);
}

static void become_ready(struct gq_rq *r)
{
  set_state(r, GQ_RQ_READY);
  uv_timer_stop(&r->deadline);
  gq_backoff_reset(&r->bo);
  GQ_LOG(GQ_INFO, &r->lc, "connected to redis '%s' (db %d, %zu scripts)",
         r->where, r->url.db, r->nscripts);
  report(r, 1);
}

/* Handshake: [AUTH] [SELECT] [SCRIPT LOAD]... or a lone PING, pipelined at
 * connect and answered in order, so step k of the reply stream is step k
 * of this list. */
enum hs_kind { HS_AUTH, HS_SELECT, HS_SCRIPT, HS_PING };

static enum hs_kind hs_kind(const struct gq_rq *r, size_t step, size_t *script)
{
  if (r->url.password[0]) {
    if (step == 0)
      return HS_AUTH;
    step--;
  }
  if (r->url.db != 0) {
    if (step == 0)
      return HS_SELECT;
    step--;
  }
  *script = step;
  return step < r->nscripts ? HS_SCRIPT : HS_PING;
}

static void on_hs_reply(redisAsyncContext *ac, void *reply, void *priv);

static int hs_send(struct gq_rq *r, size_t step)
{
  const char *argv[4];
  char db[16];
  size_t i;
  int argc = 0;

  switch (hs_kind(r, step, &i)) {
  case HS_AUTH:
    argv[argc++] = "AUTH";
    if (r->url.user[0])
      argv[argc++] = r->url.user;
    argv[argc++] = r->url.password;
    break;
  case HS_SELECT:
    snprintf(db, sizeof(db), "%d", r->url.db);
    argv[argc++] = "SELECT";
    argv[argc++] = db;
    break;
  case HS_SCRIPT:
    argv[argc++] = "SCRIPT";
    argv[argc++] = "LOAD";
    argv[argc++] = r->scripts[i].source;
    break;
  case HS_PING:
    argv[argc++] = "PING";
    break;
  }
  return redisAsyncCommandArgv(r->ac, on_hs_reply, r, argc, argv, NULL);
}

/* Ends the attempt from the next loop turn; for on_connect(), where the
 * context must not be freed. */
static void fail_soon(struct gq_rq *r, const char *why)
{
  snprintf(r->err, sizeof(r->err), "%s", why);
  r->fail_now = 1;
  uv_timer_start(&r->deadline, on_deadline, 0, 0);
}

static void hs_start(struct gq_rq *r)
{
  size_t i, n = (r->url.password[0] != 0) + (r->url.db != 0) + r->nscripts;
  char why[sizeof(r->err)];

  r->hs_total = n ? n : 1;
  r->hs_done = 0;
  set_state(r, hs_kind(r, 0, &i) == HS_SCRIPT ? GQ_RQ_LOADING_SCRIPTS
                                               : GQ_RQ_AUTHENTICATING);
  for (size_t step = 0; step < r->hs_total; step++) {
    if (hs_send(r, step) != REDIS_OK) {
      snprintf(why, sizeof(why), "cannot send handshake to redis '%s'",
               r->where);
      fail_soon(r, why);
      return;
    }
  }
}

static void hs_error(struct gq_rq *r, enum hs_kind kind, size_t i,
                     const char *msg)
{
  switch (kind) {
  case HS_AUTH:
    link_fail(r, "cannot authenticate to redis '%s' as '%s': %s", r->where,
              r->url.user[0] ? r->url.user : "default", msg);
    break;
  case HS_SELECT:
    link_fail(r, "cannot select database %d on redis '%s': %s", r->url.db,
              r->where, msg);
    break;
  case HS_SCRIPT:
    link_fail(r, "cannot load script '%s' into redis '%s': %s",
              r->scripts[i].name, r->where, msg);
    break;
  case HS_PING:
    link_fail(r, "redis '%s' refused PING: %s", r->where, msg);
    break;
  }
}

/* One handshake answer. Any error reply ends the attempt (the rest of the
 * pipeline then gets NULL replies, ignored here); the last success makes
 * the client READY. */
static void on_hs_reply(redisAsyncContext *ac, void *reply, void *priv)
{
  struct gq_rq *r = priv;
  redisReply *rep = reply;
  enum hs_kind kind;
  size_t i;

  if (!rep || ac != r->ac)
    return; /* the attempt is being torn down */
  kind = hs_kind(r, r->hs_done++, &i);
  if (rep->type == REDIS_REPLY_ERROR) {
    hs_error(r, kind, i, rep->str);
    return;
  }
  if (kind == HS_SCRIPT) {
    if (rep->type != REDIS_REPLY_STRING || rep->len != 40) {
      hs_error(r, kind, i, "unexpected reply to SCRIPT LOAD");
      return;
    }
    memcpy(r->scripts[i].sha, rep->str, 41);
  }
  if (r->hs_done == r->hs_total)
    become_ready(r);
  else if (hs_kind(r, r->hs_done, &i) == HS_SCRIPT)
    set_state(r, GQ_RQ_LOADING_SCRIPTS);
}

/* hiredis 0.14 reports a non-blocking connect on the first write event.
 * The error text is read from cac->c.errstr: hiredis 0.14 may not have
 * copied it to ac->errstr yet when it calls this. */
static void on_connect(const redisAsyncContext *cac, int status)
{
  struct gq_rq *r = cac->data;
  char note[96];

  if (status != REDIS_OK) {
    r->ac = NULL; /* hiredis frees the context when we return */
    link_fail(r, "cannot connect to redis '%s'%s: %s", r->where,
              addr_note(r, note, sizeof(note)), cac->c.errstr);
    return;
  }
  hs_start(r);
}

static void on_disconnect(const redisAsyncContext *cac, int status)
{
  struct gq_rq *r = cac->data;

  (void)status;
  if (r->ac != cac)
    return; /* our own drop_context() */
  r->ac = NULL; /* hiredis frees the context when we return */
  link_fail(r, "lost connection to redis '%s': %s", r->where,
            cac->c.errstr[0] ? cac->c.errstr : "closed by the server");
}

/* hiredis reports a failed connect(2) through the context it returns. */
static void connect_error(struct gq_rq *r, redisAsyncContext *ac)
{
  char msg[sizeof(ac->c.errstr)], note[96];

  snprintf(msg, sizeof(msg), "%s", ac->c.errstr);
  redisAsyncFree(ac);
  link_fail(r, "cannot connect to redis '%s'%s: %s", r->where,
            addr_note(r, note, sizeof(note)), msg);
}

/* Connects to 'ip' (TCP; an address, never a name) or to the unix socket. */
static void connect_to(struct gq_rq *r, const char *ip)
{
  redisAsyncContext *ac;
  int rc;

  set_state(r, GQ_RQ_CONNECTING);
  ac = r->url.is_unix ? redisAsyncConnectUnix(r->url.path)
                      : redisAsyncConnect(ip, r->url.port);
  if (!ac) {
    link_fail(r, "cannot connect to redis '%s': out of memory", r->where);
    return;
  }
  if (ac->c.err || (!r->url.is_unix && redisEnableKeepAlive(&ac->c) != 0)) {
    connect_error(r, ac);
    return;
  }
  gq_reply_reader_cap(ac->c.reader); /* no gigabyte array headers */
  rc = ev_attach(ac, r->loop);
  if (rc < 0) {
    redisAsyncFree(ac);
    link_fail(r, "cannot poll redis socket for '%s': %s", r->where,
              uv_strerror(rc));
    return;
  }
  ac->data = r;
  r->ac = ac;
  /* The adapter must be attached first: setting the connect callback
   * subscribes to the first write event, which marks the connect done. */
  redisAsyncSetConnectCallback(ac, on_connect);
  redisAsyncSetDisconnectCallback(ac, on_disconnect);
}

/* Formats the 'pick'-th usable address of res (modulo their count) into
 * ip. Moving 'pick' on after a failed connect walks through all the
 * addresses of a name, as a client with one connection can. */
static int pick_addr(const struct addrinfo *res, unsigned pick, char *ip,
                     size_t len)
{
  const struct addrinfo *ai;
  unsigned n = 0;

  for (ai = res; ai; ai = ai->ai_next)
    n += ai->ai_family == AF_INET || ai->ai_family == AF_INET6;
  if (n == 0)
    return UV_EAI_NODATA;
  pick %= n;
  for (ai = res; ai; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
      continue;
    if (pick-- > 0)
      continue;
    if (ai->ai_family == AF_INET)
      return uv_ip4_name((const struct sockaddr_in *)ai->ai_addr, ip, len);
    return uv_ip6_name((const struct sockaddr_in6 *)ai->ai_addr, ip, len);
  }
  return UV_EAI_NODATA;
}

static void on_resolved(uv_getaddrinfo_t *req, int status,
                        struct addrinfo *res)
{
  struct rq_gai *g = req->data;
  struct gq_rq *r = g->r;

  free(g);
  if (!r) { /* abandoned */
    uv_freeaddrinfo(res);
    return;
  }
  r->gai = NULL;
  if (status == 0)
    status = pick_addr(res, r->pick, r->ip, sizeof(r->ip));
  uv_freeaddrinfo(res);
  if (status < 0) {
    link_fail(r, "cannot resolve redis host '%s': %s", r->url.host,
              uv_strerror(status));
    return;
  }
  connect_to(r, r->ip);
}

/* IP literals need no lookup (hiredis's own getaddrinfo() call on a
 * numeric host does not block). */
static int is_ip_literal(const char *host)
{
  unsigned char buf[16];

  return uv_inet_pton(AF_INET, host, buf) == 0 ||
         uv_inet_pton(AF_INET6, host, buf) == 0;
}

/* One attempt: RESOLVING (names only), CONNECTING, then the handshake.
 * The deadline timer bounds all of it: a resolver that hangs, a SYN that is
 * never answered, or a server that accepts but never replies (busy in a
 * long script, or not Redis at all) all end in link_fail(). */
static void start_attempt(struct gq_rq *r)
{
  struct addrinfo hints;
  struct rq_gai *g;
  int rc;

  uv_timer_start(&r->deadline, on_deadline, r->connect_timeout_ms, 0);
  r->ip[0] = '\0';
  if (r->url.is_unix || is_ip_literal(r->url.host)) {
    connect_to(r, r->url.host);
    return;
  }
  set_state(r, GQ_RQ_RESOLVING);
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  g = gq_xcalloc(1, sizeof(*g));
  g->r = r;
  g->req.data = g;
  rc = uv_getaddrinfo(r->loop, &g->req, on_resolved, r->url.host, NULL,
                      &hints);
  if (rc < 0) {
    free(g);
    link_fail(r, "cannot resolve redis host '%s': %s", r->url.host,
              uv_strerror(rc));
    return;
  }
  r->gai = g;
}

/* The backoff has passed (or, the first time, gq_rq_new() returned). */
static void on_retry(uv_timer_t *t)
{
  start_attempt(t->data);
}

/* READY: fails the connection if the oldest command is overdue, else
 * re-arms for it. Every overdue command gets GQ_ETIMEDOUT; the others in
 * flight lose their connection (GQ_ECLOSED). */
static void check_commands(struct gq_rq *r)
{
  uint64_t now = uv_now(r->loop);
  struct rq_op *op = r->head;
  char name[sizeof(op->name)];

  if (!op)
    return;
  if (op->deadline > now) {
    uv_timer_start(&r->deadline, on_deadline, op->deadline - now, 0);
    return;
  }
  memcpy(name, op->name, sizeof(name));
  for (; op && op->deadline <= now; op = op->next)
    op->err = GQ_ETIMEDOUT;
  link_fail(r, "redis '%s' did not answer '%s' within %u ms", r->where, name,
            (unsigned)r->command_timeout_ms);
}

static void on_deadline(uv_timer_t *t)
{
  struct gq_rq *r = t->data;
  char why[sizeof(r->err)];

  if (r->fail_now) {
    memcpy(why, r->err, sizeof(why));
    link_fail(r, "%s", why);
  } else if (r->state == GQ_RQ_READY) {
    check_commands(r);
  } else {
    link_fail(r, "cannot connect to redis '%s': no %s within %u ms",
              r->where, r->state == GQ_RQ_RESOLVING ? "address" : "answer",
              (unsigned)r->connect_timeout_ms);
  }
}

/* ------------------------------------------------------------------------
 * Public API
 * ------------------------------------------------------------------------ */

static void scripts_free(struct gq_rq *r)
{
  for (size_t i = 0; i < r->nscripts; i++) {
    free(r->scripts[i].name);
    free(r->scripts[i].source);
  }
  free(r->scripts);
  r->scripts = NULL;
  r->nscripts = 0;
}

static int script_find(const struct gq_rq *r, const char *name)
{
  for (size_t i = 0; i < r->nscripts; i++)
    if (strcmp(r->scripts[i].name, name) == 0)
      return (int)i;
  return -1;
}

/* Copies the scripts to preload; the caller's array may be temporary.
 * Names must be unique: gq_rq_eval() looks them up by name. */
static int scripts_copy(struct gq_rq *r, const struct gq_rq_opts *o)
{
  if (o->nscripts > 0 && !o->scripts)
    return GQ_EINVAL;
  if (o->nscripts > INT_MAX)
    return GQ_ETOOBIG;
  r->scripts = gq_xcalloc(o->nscripts ? o->nscripts : 1, sizeof(*r->scripts));
  for (size_t i = 0; i < o->nscripts; i++) {
    const struct gq_rq_script *s = &o->scripts[i];

    if (!s->name || !s->name[0] || !s->source || script_find(r, s->name) >= 0)
      return GQ_EINVAL;
    r->scripts[i].name = gq_xstrdup(s->name);
    r->scripts[i].source = gq_xstrdup(s->source);
    r->nscripts = i + 1;
  }
  return 0;
}

static void set_options(struct gq_rq *r, const struct gq_rq_opts *o)
{
  uint32_t base = o->backoff_base_ms ? o->backoff_base_ms : RQ_BACKOFF_BASE_MS;
  uint32_t max = o->backoff_max_ms ? o->backoff_max_ms : RQ_BACKOFF_MAX_MS;

  r->connect_timeout_ms =
      o->connect_timeout_ms ? o->connect_timeout_ms : RQ_CONNECT_TIMEOUT_MS;
  r->command_timeout_ms =
      o->command_timeout_ms ? o->command_timeout_ms : RQ_COMMAND_TIMEOUT_MS;
  gq_backoff_init(&r->bo, base, max < base ? base : max, 2.0,
                  RQ_BACKOFF_JITTER, 0);
  r->on_state = o->on_state;
  r->arg = o->arg;
  if (r->url.is_unix)
    snprintf(r->where, sizeof(r->where), "unix:%s", r->url.path);
  else if (strchr(r->url.host, ':'))
    snprintf(r->where, sizeof(r->where), "[%s]:%d", r->url.host, r->url.port);
  else
    snprintf(r->where, sizeof(r->where), "%s:%d", r->url.host, r->url.port);
}

struct gq_rq *gq_rq_new(uv_loop_t *loop, const struct gq_rq_opts *o)
{
  struct gq_rq *r;

  if (!loop || !o || !o->url)
    return NULL;
  r = gq_xcalloc(1, sizeof(*r));
  if (gq_rq_parse_url(o->url, &r->url, NULL, 0) != 0 ||
      scripts_copy(r, o) != 0) {
    scripts_free(r);
    free(r);
    return NULL;
  }
  set_options(r, o);
  if (r->url.password[0])
    gq_log_add_secret(r->url.password);
  r->loop = loop;
  r->up = -1;
  r->state = GQ_RQ_CLOSED;
  r->lc.module = "queue";
  r->lc.action = "redis";
  r->limit.interval_ms = RQ_LOG_INTERVAL_MS;
  uv_timer_init(loop, &r->retry);
  uv_timer_init(loop, &r->deadline);
  r->retry.data = r;
  r->deadline.data = r;
  uv_timer_start(&r->retry, on_retry, 0, 0);
  return r;
}

/* Commands that change the connection's state behind our back: a
 * reconnect would silently undo them (SELECT, AUTH), or they break the
 * one-reply-per-command model (pub/sub, MONITOR). The URL sets the former. */
static int cmd_refused(const char *name, size_t len)
{
  static const char *const refused[] = {
      "AUTH",        "HELLO",        "MONITOR",      "PSUBSCRIBE",
      "PUNSUBSCRIBE", "QUIT",        "RESET",        "SELECT",
      "SSUBSCRIBE",  "SUBSCRIBE",    "SUNSUBSCRIBE", "UNSUBSCRIBE"};

  for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
    if (strlen(refused[i]) == len && strncasecmp(name, refused[i], len) == 0)
      return 1;
  return 0;
}

int gq_rq_cmd(struct gq_rq *r, gq_rq_reply_cb cb, void *arg, int argc,
              const char **argv, const size_t *argvlen)
{
  struct rq_op *op;
  size_t len;

  if (!r || !cb || argc < 1 || !argv || !argv[0])
    return GQ_EINVAL;
  len = argvlen ? argvlen[0] : strlen(argv[0]);
  if (cmd_refused(argv[0], len))
    return GQ_EINVAL;
  if (!cmd_allowed(r))
    return GQ_EUNAVAIL;
  op = op_new(r, cb, arg, argv[0], len);
  if (redisAsyncCommandArgv(r->ac, on_op_reply, op, argc, argv, argvlen) !=
      REDIS_OK) {
    op_free(op);
    return GQ_EUNAVAIL;
  }
  op_start(r, op);
  return 0;
}

/* Formats EVALSHA sha nkeys keys... args... once; the NOSCRIPT retry sends
 * the same bytes again. */
static int eval_format(struct gq_rq *r, struct rq_op *op, int nkeys,
                       const char **keys, int nargs, const char **args)
{
  int argc = 3 + nkeys + nargs, len;
  const char **argv = gq_xcalloc((size_t)argc, sizeof(*argv));
  char nk[16];

  snprintf(nk, sizeof(nk), "%d", nkeys);
  argv[0] = "EVALSHA";
  argv[1] = r->scripts[op->script].sha;
  argv[2] = nk;
  for (int i = 0; i < nkeys; i++)
    argv[3 + i] = keys[i];
  for (int i = 0; i < nargs; i++)
    argv[3 + nkeys + i] = args[i];
  len = redisFormatCommandArgv(&op->cmd, argc, argv, NULL);
  free(argv);
  if (len < 0)
    return GQ_ENOMEM;
  op->cmdlen = (size_t)len;
  return 0;
}

int gq_rq_eval(struct gq_rq *r, const char *script_name, int nkeys,
               const char **keys, int nargs, const char **args,
               gq_rq_reply_cb cb, void *arg)
{
  struct rq_op *op;
  int script, rc;

  if (!r || !script_name || !cb || nkeys < 0 || nargs < 0 ||
      nkeys > INT_MAX / 2 - 3 || nargs > INT_MAX / 2 ||
      (nkeys > 0 && !keys) || (nargs > 0 && !args))
    return GQ_EINVAL;
  script = script_find(r, script_name);
  if (script < 0)
    return GQ_ENOTFOUND;
  if (!cmd_allowed(r))
    return GQ_EUNAVAIL;
  op = op_new(r, cb, arg, "EVALSHA", 7);
  op->script = script;
  rc = eval_format(r, op, nkeys, keys, nargs, args);
  if (rc == 0 && redisAsyncFormattedCommand(r->ac, on_op_reply, op, op->cmd,
                                            op->cmdlen) != REDIS_OK)
    rc = GQ_EUNAVAIL;
  if (rc != 0) {
    op_free(op);
    return rc;
  }
  op_start(r, op);
  return 0;
}

int gq_rq_ready(const struct gq_rq *r)
{
  return r && cmd_allowed(r);
}

enum gq_rq_state gq_rq_state(const struct gq_rq *r)
{
  return r->state;
}

const char *gq_rq_last_error(const struct gq_rq *r)
{
  return r->err;
}

/* Both timers have closed, so the context is gone too: answers what is
 * left with GQ_ECANCELED and frees. */
static void close_finish(struct gq_rq *r)
{
  struct rq_op *op;

  while ((op = r->head) != NULL) {
    assert(!op->in_flight); /* hiredis answered every op when freed */
    op_finish(op, GQ_ECANCELED, NULL);
  }
  scripts_free(r);
  explicit_bzero(r->url.password, sizeof(r->url.password));
  free(r);
}

static void on_timer_closed(uv_handle_t *h)
{
  struct gq_rq *r = h->data;

  if (--r->closes == 0)
    close_finish(r);
}

void gq_rq_close(struct gq_rq *r)
{
  if (!r || r->closing)
    return;
  r->closing = 1;
  set_state(r, GQ_RQ_CLOSED);
  r->closes = 2;
  uv_close((uv_handle_t *)&r->retry, on_timer_closed);
  uv_close((uv_handle_t *)&r->deadline, on_timer_closed);
  gai_abandon(r);
  drop_context(r); /* NULL replies park the ops for close_finish() */
}
