/* queue/rq.h - the Redis client of gpuq: hiredis async on the uv loop.
 *
 * One connection, driven through explicit states:
 *
 *   CLOSED -> RESOLVING -> CONNECTING -> AUTHENTICATING -> LOADING_SCRIPTS
 *          -> READY
 *
 * RESOLVING runs uv_getaddrinfo() on libuv's thread pool and the connect goes
 * to the resulting IP (hiredis 0.14 would call a blocking getaddrinfo() on
 * the loop thread, hiredis issue #966); IP literals and unix sockets skip it.
 * AUTHENTICATING sends AUTH (password, or user and password for an ACL user)
 * and SELECT, or a PING when the URL needs neither; LOADING_SCRIPTS sends a
 * SCRIPT LOAD for every preloaded script and keeps the SHA1s. Any failure
 * (refused, reset, a handshake error reply, a connect or command timeout)
 * ends the attempt: the connection is dropped, the state returns to CLOSED
 * and a new attempt starts after an exponential backoff with jitter; reaching
 * READY resets the backoff. The caller sees this as transitions between READY
 * and DOWN through opts.on_state, meant for pausing admission while Redis is
 * away. Nothing is queued while DOWN: commands fail at once with GQ_EUNAVAIL.
 *
 * Timeouts: hiredis 0.14 has none for async contexts and cannot cancel a
 * command, so a uv timer bounds each attempt from its start until READY
 * (connect_timeout_ms) and, once READY, the oldest command in flight
 * (command_timeout_ms). An expired command tears the connection down: it gets
 * GQ_ETIMEDOUT, everything else in flight gets GQ_ECLOSED.
 *
 * Callbacks: a command callback runs exactly once, never inside the call
 * that issued the command, and never inside gq_rq_close(). The reply it gets
 * is valid only during the callback; copy what you keep. Callbacks may issue
 * commands and may call gq_rq_close().
 *
 * Logging: the client logs each state change at debug level, the first
 * failure after READY (or at start) and each return to READY once, and
 * repeated failures while DOWN rate-limited. The password is registered with
 * gq_log_add_secret() and never logged; messages name "host:port" only.
 *
 * Loop thread only. Not supported: TLS (hiredis 0.14 has none), RESP3,
 * pub/sub, MULTI across callbacks (use Lua scripts, DESIGN §6).
 */
#ifndef GQ_QUEUE_RQ_H
#define GQ_QUEUE_RQ_H
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct gq_rq;

/* ---- URLs ------------------------------------------------------------- */

/* A parsed Redis URL. Accepted forms:
 *   redis://[user:password@]host[:port][/db]      (port 6379, db 0)
 *   redis://:password@host ...                    (password only)
 *   unix://[user:password@]/path/to.sock[?db=N]   (also redis+unix://)
 * Hosts may be names, IPv4 or bracketed IPv6 literals ("[::1]"). User and
 * password may be percent-encoded (RFC 3986: "p%40ss" is "p@ss"); a TCP URL
 * may give the database as "?db=N" instead of "/N". rediss:// is refused:
 * hiredis 0.14 has no TLS. */
struct gq_rq_url {
  int is_unix;        /* 1: 'path' names a unix socket; host/port unused */
  char host[256];     /* name or IP literal, IPv6 without brackets */
  int port;           /* 1..65535 */
  char path[108];     /* unix socket path (sun_path size) */
  char user[128];     /* ACL user; "" = the default user */
  char password[256]; /* "" = no AUTH */
  int db;             /* database index for SELECT, >= 0 */
};

/* Parses 'url' into *out. Returns 0, or GQ_EINVAL with a message in err
 * (errlen bytes, always NUL-terminated when errlen > 0). Messages never
 * contain the password. */
int gq_rq_parse_url(const char *url, struct gq_rq_url *out, char *err,
                    size_t errlen);

/* ---- Replies ---------------------------------------------------------- */

/* Reply types; the values are hiredis's REDIS_REPLY_*. */
enum gq_rq_reply_type {
  GQ_RQ_STRING = 1,
  GQ_RQ_ARRAY = 2,
  GQ_RQ_INTEGER = 3,
  GQ_RQ_NIL = 4,
  GQ_RQ_STATUS = 5, /* "OK", "PONG" */
  GQ_RQ_ERROR = 6   /* an error reply; str is the message ("ERR ...") */
};

/* A reply as the callback sees it. Everything, including the bytes 'str'
 * points to (NUL-terminated, 'len' bytes before the NUL), is valid only
 * during the callback. */
struct gq_rq_reply {
  int type;                   /* enum gq_rq_reply_type */
  long long integer;          /* GQ_RQ_INTEGER */
  char *str;                  /* STRING, STATUS, ERROR; NULL otherwise */
  size_t len;                 /* length of str */
  struct gq_rq_reply **elem;  /* GQ_RQ_ARRAY: n elements */
  size_t n;
};

/* Result of a command. status 0: 'reply' is the server's answer (which may
 * be an error reply, type GQ_RQ_ERROR). status < 0: no reply (NULL) and one
 * of GQ_ECLOSED (the connection was lost before the answer), GQ_ETIMEDOUT
 * (no answer within command_timeout_ms; the connection was torn down) or
 * GQ_ECANCELED (gq_rq_close()). Runs exactly once per accepted command. */
typedef void (*gq_rq_reply_cb)(struct gq_rq *r, int status,
                               const struct gq_rq_reply *reply, void *arg);

/* ---- Client ----------------------------------------------------------- */

enum gq_rq_state {
  GQ_RQ_CLOSED,          /* no connection: between attempts, or closed */
  GQ_RQ_RESOLVING,       /* uv_getaddrinfo in flight */
  GQ_RQ_CONNECTING,      /* TCP or unix connect in flight */
  GQ_RQ_AUTHENTICATING,  /* AUTH / SELECT (or a PING) in flight */
  GQ_RQ_LOADING_SCRIPTS, /* SCRIPT LOAD in flight */
  GQ_RQ_READY            /* commands accepted */
};

/* A Lua script loaded at every connect, for gq_rq_eval(). */
struct gq_rq_script {
  const char *name;   /* key for gq_rq_eval(), unique */
  const char *source; /* Lua source */
};

/* Called on each transition between READY (ready = 1, why = NULL) and DOWN
 * (ready = 0, why = what failed, e.g. "cannot authenticate to redis
 * '10.0.0.7:6379' as 'gpuq': WRONGPASS ..."; valid during the call). The
 * first report is READY or DOWN, whichever comes first; after that the two
 * alternate. gq_rq_close() does not report. May call gq_rq_close(). */
typedef void (*gq_rq_state_cb)(struct gq_rq *r, int ready, const char *why,
                               void *arg);

/* Options; zero values pick the defaults. All pointers are borrowed for the
 * duration of gq_rq_new() only (everything is copied). */
struct gq_rq_opts {
  const char *url;             /* required; see struct gq_rq_url */
  uint32_t connect_timeout_ms; /* attempt start to READY; default 2000 */
  uint32_t command_timeout_ms; /* per command; default 5000 */
  uint32_t backoff_base_ms;    /* first retry delay; default 200 */
  uint32_t backoff_max_ms;     /* cap (plus up to 50% jitter); default 10000 */
  const struct gq_rq_script *scripts; /* preloaded at connect; may be NULL */
  size_t nscripts;
  gq_rq_state_cb on_state;     /* may be NULL */
  void *arg;                   /* for on_state */
};

/* Creates a client and schedules its first connection attempt on the next
 * loop iteration (so even an immediate failure is reported from the loop,
 * never from here). Returns NULL if o->url does not parse (call
 * gq_rq_parse_url() for the reason) or a script has no name or source or a
 * duplicate name. Release with gq_rq_close(). */
struct gq_rq *gq_rq_new(uv_loop_t *loop, const struct gq_rq_opts *o);

/* Sends one command (argv[0] is its name; argvlen may be NULL for
 * NUL-terminated arguments, which are copied before returning). Returns 0
 * and later calls cb exactly once; or, without calling cb: GQ_EUNAVAIL when
 * the client is not READY (the caller pauses; nothing is queued),
 * GQ_EINVAL for bad arguments or a command that changes the connection's
 * state (AUTH, SELECT, HELLO, RESET, QUIT: a reconnect would silently undo
 * it, the URL sets it) or breaks one reply per command (MONITOR and the
 * (un)subscribe family). */
int gq_rq_cmd(struct gq_rq *r, gq_rq_reply_cb cb, void *arg, int argc,
              const char **argv, const size_t *argvlen);

/* EVALSHA of the preloaded script 'script_name' with nkeys keys and nargs
 * arguments (NUL-terminated strings, copied). If the server answers NOSCRIPT
 * (it restarted, or SCRIPT FLUSH ran) the script is loaded again and the
 * call retried once, within the same command timeout: cb sees only the
 * final outcome. Returns like gq_rq_cmd(), plus GQ_ENOTFOUND for an unknown
 * script name. */
int gq_rq_eval(struct gq_rq *r, const char *script_name, int nkeys,
               const char **keys, int nargs, const char **args,
               gq_rq_reply_cb cb, void *arg);

/* Returns 1 if commands are accepted now, 0 otherwise. */
int gq_rq_ready(const struct gq_rq *r);

/* Current state and its name ("READY"); for logs and tests. */
enum gq_rq_state gq_rq_state(const struct gq_rq *r);
const char *gq_rq_state_name(enum gq_rq_state s);

/* Returns the last failure ("" if none yet); valid until the next loop
 * callback of this client. */
const char *gq_rq_last_error(const struct gq_rq *r);

/* Closes the client: stops retrying, drops the connection, and answers
 * every command in flight with GQ_ECANCELED from the loop (not from inside
 * this call). The memory is freed once the loop has run the close
 * callbacks; after this call 'r' may only be passed to gq_rq_* calls from
 * the callbacks still to come (they refuse with GQ_EUNAVAIL; a second close
 * is a no-op). Safe inside any callback of this client. NULL is ignored. */
void gq_rq_close(struct gq_rq *r);

#endif
