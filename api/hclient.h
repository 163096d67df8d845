/* api/hclient.h - HTTP requests with libcurl's multi interface on a libuv
 * loop (curl's docs/examples/multi-uv.c pattern, STYLE.md): many requests
 * and long-lived streams share one loop and nothing blocks it (curl's
 * threaded resolver keeps DNS off the loop).
 *
 * A request gets its answer through one callback, called exactly once and
 * never synchronously: with rc 0 and the HTTP status and body, or with a
 * negative GQ_E* for a transport failure (with curl's message), or
 * GQ_ECANCELED after gq_hclient_cancel(). Streams (watches) deliver their
 * body in chunks as they arrive; the done callback then ends them. Bodies
 * are capped (GQ_ETOOBIG). Loop thread only.
 */
#ifndef GQ_API_HCLIENT_H
#define GQ_API_HCLIENT_H
#include <stddef.h>
#include <uv.h>

struct gq_hclient;
struct gq_hcall;

/* TLS settings of one server (borrowed; must outlive the calls). */
struct gq_hclient_tls {
  const unsigned char *ca;   /* PEM bundle to trust, or NULL = system's */
  size_t ca_len;
  int insecure;              /* skip verification (kubeconfig says so) */
  const char *server_name;   /* verify against this name, or NULL */
  const unsigned char *cert, *key; /* client certificate and key (PEM) */
  size_t cert_len, key_len;
};

struct gq_hclient_opts {
  const char *method;        /* "GET", "POST", ... */
  const char *url;
  const char *body;          /* copied; NULL = none */
  size_t body_len;
  const char *content_type;  /* NULL = none */
  const char *accept;        /* NULL = application/json */
  const char *bearer;        /* token for Authorization, or NULL */
  const struct gq_hclient_tls *tls;
  long timeout_ms;           /* whole request; 0 = none (streams) */
  size_t max_body;           /* cap on a buffered body, bytes */
};

/* Chunk of a streamed body (valid only during the call); return non-zero
 * to abort the transfer (done then gets GQ_ECANCELED). Only 2xx bodies are
 * streamed; an error response's body is buffered for the done callback. */
typedef int (*gq_hclient_chunk_cb)(const char *p, size_t n, void *arg);
/* The end: rc 0 with status and the buffered body (empty for streams), or
 * a negative GQ_E* with curl's message in err. retry_after is the
 * Retry-After header or NULL. All pointers valid only during the call. */
typedef void (*gq_hclient_done_cb)(int rc, long status, const char *body,
                                   size_t len, const char *retry_after,
                                   const char *err, void *arg);

/* Creates the client on loop. Returns 0 or GQ_EIO. */
int gq_hclient_new(uv_loop_t *loop, const char *user_agent,
                   struct gq_hclient **out);

/* Starts a request. chunk NULL = buffer the body. Returns the call (valid
 * until done runs), or NULL with done never called (bad options). */
struct gq_hcall *gq_hclient_do(struct gq_hclient *h,
                               const struct gq_hclient_opts *o,
                               gq_hclient_chunk_cb chunk,
                               gq_hclient_done_cb done, void *arg);

/* Cancels a call: its done callback runs later with GQ_ECANCELED. */
void gq_hclient_cancel(struct gq_hcall *c);

/* Cancels every call and frees the client once its handles have closed
 * (run the loop). Done callbacks of pending calls get GQ_ECANCELED. */
void gq_hclient_close(struct gq_hclient *h);

#endif
