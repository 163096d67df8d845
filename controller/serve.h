/* controller/serve.h - the controller's HTTP endpoints: /metrics, /healthz
 * and /readyz (DESIGN §8), served by api/httpd.h on the controller's libuv
 * loop.
 *
 * /healthz and /readyz ask the owner through a callback: 0 answers 200
 * "ok", anything else 503 with the callback's message (Kubernetes probes
 * look only at the status; the message is for a human with curl). /metrics
 * first calls collect, so the owner can refresh gauges that are recomputed
 * at each scrape (queue depth, quota use), then renders the registry as
 * Prometheus text 0.0.4. Every endpoint answers GET and HEAD; any other
 * method gets 405 with an Allow header, any other path 404.
 *
 * The callbacks run on the loop thread, inside the HTTP server's dispatch,
 * one request at a time, never from gq_serve_start(). Loop thread only.
 */
#ifndef GQ_CONTROLLER_SERVE_H
#define GQ_CONTROLLER_SERVE_H
#include <stddef.h>
#include <uv.h>

struct gq_metrics;
struct gq_serve;

/* A health check: returns 0 when healthy (ready), or non-zero with a
 * one-line reason written to msg (len bytes, NUL-terminated). */
typedef int (*gq_serve_check_cb)(void *arg, char *msg, size_t len);
/* Refreshes metrics (borrowed, valid during the call) before a render. */
typedef void (*gq_serve_collect_cb)(void *arg, struct gq_metrics *m);

#define GQ_SERVE_MAX_METRICS (8u << 20) /* rendered /metrics body, bytes */

struct gq_serve_opts {
  gq_serve_check_cb healthz;   /* NULL: always healthy */
  gq_serve_check_cb readyz;    /* NULL: always ready */
  gq_serve_collect_cb collect; /* NULL: render the registry as it is */
  void *arg;                   /* passed to each callback */
  struct gq_metrics *metrics;  /* borrowed, must outlive the server; NULL:
                                  /metrics answers an empty body */
};

/* Starts serving on loop at addr, "IPV4:PORT" or "[IPV6]:PORT" (an IP
 * literal; PORT 0 picks a free port, see gq_serve_port()). o is copied.
 * Returns 0 with the server in *out, or a negative error with a message in
 * err (errlen bytes): GQ_EINVAL for a malformed address (the message names
 * it), GQ_EIO when it cannot be bound (e.g. in use). */
int gq_serve_start(uv_loop_t *loop, const char *addr,
                   const struct gq_serve_opts *o, struct gq_serve **out,
                   char *err, size_t errlen);

/* The bound TCP port; valid until gq_serve_close(). */
int gq_serve_port(const struct gq_serve *s);

/* Stops serving; s and the server's uv handles are freed once they have
 * closed (run the loop before uv_loop_close()). Safe inside s's own
 * callbacks: the stop then waits for the next loop iteration, and requests
 * meanwhile get 503. Idempotent until the loop has run; NULL is ignored. */
void gq_serve_close(struct gq_serve *s);

#endif
