/* api/httpd.h - libmicrohttpd served from a libuv loop.
 *
 * One MHD daemon in external-select mode with epoll (MHD_USE_EPOLL |
 * MHD_ALLOW_SUSPEND_RESUME): its epoll fd is watched by a uv_poll, MHD_run
 * runs on readiness and on the MHD_get_timeout timer (DESIGN §1), so the
 * server shares the loop with timers and everything else; nothing blocks.
 * gpuq-sim serves the Kubernetes API with it, and gpuq-controller its
 * /metrics, /healthz and /readyz (controller/serve.h).
 *
 * A request reaches the handler once, complete (body capped), as a struct
 * gq_http_req. The handler answers either now, later (after it returns,
 * or gq_http_respond_later() for an injected delay), or with a stream
 * (gq_http_stream_*, for watches): the stream's connection is suspended
 * whenever it has nothing to send and resumed when the owner appends data.
 *
 * Loop thread only. The listening socket is bound by the caller-visible
 * gq_httpd_start() on the given address only (tests use 127.0.0.1).
 */
#ifndef GQ_API_HTTPD_H
#define GQ_API_HTTPD_H
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "base/buf.h"

#define GQ_HTTP_MAX_BODY (16u << 20) /* request bodies above 16 MiB: 413 */

struct gq_httpd;
struct gq_http_req;
struct gq_http_stream;

/* Called once per complete request. The request is valid until it is
 * answered (gq_http_respond) or turned into a stream. */
typedef void (*gq_http_handler_cb)(struct gq_http_req *req, void *arg);
/* Called when a stream's client goes away or the stream is closed; the
 * stream is freed right after it returns. */
typedef void (*gq_http_stream_gone_cb)(struct gq_http_stream *s, void *arg);

struct gq_httpd_opts {
  const char *host;      /* bind address: an IPv4 or IPv6 literal, e.g.
                            "127.0.0.1" or "::1" (no brackets, no names) */
  int port;              /* 0 = pick a free port */
  const char *tls_cert;  /* PEM text (not a path), or NULL for plain HTTP */
  const char *tls_key;   /* PEM text */
  size_t max_body;       /* request body cap in bytes (413 above it);
                            0 = GQ_HTTP_MAX_BODY */
};

/* Splits a listen address "IPV4:PORT" or "[IPV6]:PORT" (PORT 0..65535 in
 * decimal, 0 = pick a free port) into the IP literal, copied to host
 * (hostlen bytes; 46 = INET6_ADDRSTRLEN holds any), and *port. Names are
 * not resolved: the loop must not block on DNS. Returns 0, or GQ_EINVAL
 * (host and *port then unspecified); the caller words the message, naming
 * the value. */
int gq_httpd_parse_addr(const char *addr, char *host, size_t hostlen,
                        int *port);

/* Starts serving on loop. *out is the new server; its port is
 * gq_httpd_port(). Returns 0 or a negative error with a message in err:
 * GQ_EINVAL if o->host is not an IP literal, GQ_EIO if the address cannot
 * be bound (e.g. in use) or MHD does not start. */
int gq_httpd_start(uv_loop_t *loop, const struct gq_httpd_opts *o,
                   gq_http_handler_cb cb, void *arg, struct gq_httpd **out,
                   char *err, size_t errlen);

/* The bound TCP port. */
int gq_httpd_port(const struct gq_httpd *h);

/* Stops accepting, ends every stream, closes the uv handles; the server is
 * freed once they have closed (run the loop). Idempotent. */
void gq_httpd_close(struct gq_httpd *h);

/* Request accessors (borrowed strings, valid until answered). */
const char *gq_http_method(const struct gq_http_req *r);
const char *gq_http_path(const struct gq_http_req *r);
/* Query argument value, "" for a key without value, NULL if absent. */
const char *gq_http_query(const struct gq_http_req *r, const char *key);
/* Request header (case-insensitive), NULL if absent. */
const char *gq_http_header(const struct gq_http_req *r, const char *name);
/* The body (NUL-terminated; len in *len). */
const char *gq_http_body(const struct gq_http_req *r, size_t *len);

/* Answers with status, content type and body (copied). extra_headers is
 * NULL or a NULL-terminated list of "Name", "value" pairs. */
void gq_http_respond(struct gq_http_req *r, unsigned status,
                     const char *content_type, const char *body, size_t len,
                     const char *const *extra_headers);

/* Holds the answer back for delay_ms of real time, then sends it. Same
 * arguments as gq_http_respond(). */
void gq_http_respond_later(struct gq_http_req *r, uint64_t delay_ms,
                           unsigned status, const char *content_type,
                           const char *body, size_t len);

/* Turns the request into an open-ended 200 stream (chunked) with the given
 * content type. Returns the stream; gone_cb fires once when the client
 * disconnects or gq_http_stream_close() ends it. */
struct gq_http_stream *gq_http_stream_open(struct gq_http_req *r,
                                           const char *content_type,
                                           gq_http_stream_gone_cb gone_cb,
                                           void *arg);

/* Queues bytes on the stream (copied). Returns 0, or GQ_ETOOBIG if more
 * than cap bytes are pending (a client that does not read): the stream is
 * then closed, as an API server drops a slow watcher. */
int gq_http_stream_write(struct gq_http_stream *s, const char *p, size_t n);

/* Ends the stream after the pending bytes are sent. Idempotent. */
void gq_http_stream_close(struct gq_http_stream *s);

/* A tap sees every answer the server sends: method and path (no query) of
 * the request, status, content type and body bytes (borrowed, valid during
 * the call only; not NUL-terminated). An answer is seen once, when it is
 * made (gq_http_respond, gq_http_respond_later); a stream is seen once per
 * gq_http_stream_write with stream 1 and status 200. */
typedef void (*gq_http_tap_cb)(const char *method, const char *path,
                               unsigned status, const char *content_type,
                               const char *body, size_t len, int stream,
                               void *arg);

/* Installs tap (NULL removes it) for the answers made from now on; streams
 * opened before keep none. Costs one pointer test per answer without a tap.
 * gpuq-sim's --record uses it (docs/sim.md). */
void gq_httpd_set_tap(struct gq_httpd *h, gq_http_tap_cb tap, void *arg);

#endif
