/* controller/serve.c - /metrics, /healthz and /readyz (see serve.h). */
#include "controller/serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/httpd.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"
#include "controller/metrics.h"

/* Prometheus' text format, version 0.0.4 (exposition formats spec). */
#define METRICS_CTYPE "text/plain; version=0.0.4; charset=utf-8"
#define TEXT_CTYPE "text/plain; charset=utf-8"

struct gq_serve {
  struct gq_httpd *httpd;
  struct gq_serve_opts o;
  uv_timer_t defer; /* finishes a close asked for inside a callback */
  int in_cb, closing;
};

static void respond_text(struct gq_http_req *r, unsigned status,
                         const char *text)
{
  gq_http_respond(r, status, TEXT_CTYPE, text, strlen(text), NULL);
}

/* healthz and readyz: 200 "ok", or 503 with the callback's reason. */
static void answer_check(struct gq_serve *s, struct gq_http_req *r,
                         gq_serve_check_cb check, const char *what)
{
  char msg[256] = "";
  int rc = 0;

  if (check) {
    s->in_cb = 1;
    rc = check(s->o.arg, msg, sizeof(msg));
    s->in_cb = 0;
  }
  if (rc == 0) {
    respond_text(r, 200, "ok");
    return;
  }
  if (!msg[0])
    snprintf(msg, sizeof(msg), "not %s", what);
  respond_text(r, 503, msg);
}

static void answer_metrics(struct gq_serve *s, struct gq_http_req *r)
{
  struct gq_buf b;
  char msg[64];

  gq_buf_init(&b, GQ_SERVE_MAX_METRICS);
  if (s->o.metrics && s->o.collect) {
    s->in_cb = 1;
    s->o.collect(s->o.arg, s->o.metrics);
    s->in_cb = 0;
  }
  if (s->o.metrics && gq_metrics_render(s->o.metrics, &b) != 0) {
    snprintf(msg, sizeof(msg), "metrics exceed %u bytes", GQ_SERVE_MAX_METRICS);
    respond_text(r, 500, msg);
  } else {
    gq_http_respond(r, 200, METRICS_CTYPE, gq_buf_str(&b), b.len, NULL);
  }
  gq_buf_release(&b);
}

static void on_request(struct gq_http_req *r, void *arg)
{
  static const char *const allow[] = {"Allow", "GET, HEAD", NULL};
  struct gq_serve *s = arg;
  const char *path = gq_http_path(r), *method = gq_http_method(r);
  int metrics = !strcmp(path, "/metrics"), healthz = !strcmp(path, "/healthz"),
      readyz = !strcmp(path, "/readyz");

  if (!metrics && !healthz && !readyz) {
    respond_text(r, 404, "404 page not found");
    return;
  }
  /* RFC 9110 §9.1: a server that answers GET answers HEAD too (MHD then
   * sends the headers only). */
  if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
    static const char msg[] = "method not allowed";

    gq_http_respond(r, 405, TEXT_CTYPE, msg, sizeof(msg) - 1, allow);
    return;
  }
  if (s->closing)
    respond_text(r, 503, "shutting down");
  else if (metrics)
    answer_metrics(s, r);
  else
    answer_check(s, r, healthz ? s->o.healthz : s->o.readyz,
                 healthz ? "healthy" : "ready");
}

int gq_serve_start(uv_loop_t *loop, const char *addr,
                   const struct gq_serve_opts *o, struct gq_serve **out,
                   char *err, size_t errlen)
{
  char host[64];
  struct gq_httpd_opts ho = {host, 0, NULL, NULL, 0};
  struct gq_serve *s;
  int rc;

  if (gq_httpd_parse_addr(addr, host, sizeof(host), &ho.port) != 0) {
    snprintf(err, errlen,
             "invalid listen address '%s': want IPV4:PORT or [IPV6]:PORT",
             addr);
    return GQ_EINVAL;
  }
  s = gq_xcalloc(1, sizeof(*s));
  s->o = *o;
  if ((rc = gq_httpd_start(loop, &ho, on_request, s, &s->httpd, err, errlen)) !=
      0) {
    free(s);
    return rc;
  }
  uv_timer_init(loop, &s->defer);
  s->defer.data = s;
  *out = s;
  return 0;
}

int gq_serve_port(const struct gq_serve *s)
{
  return gq_httpd_port(s->httpd);
}

static void on_defer_closed(uv_handle_t *h)
{
  free(h->data);
}

/* Stops the HTTP server (never from inside its dispatch), then frees s
 * once the timer handle has closed. */
static void finish_close(struct gq_serve *s)
{
  gq_httpd_close(s->httpd);
  s->httpd = NULL;
  uv_close((uv_handle_t *)&s->defer, on_defer_closed);
}

static void on_defer(uv_timer_t *t)
{
  finish_close(t->data);
}

void gq_serve_close(struct gq_serve *s)
{
  if (!s || s->closing)
    return;
  s->closing = 1;
  if (s->in_cb)
    uv_timer_start(&s->defer, on_defer, 0, 0); /* after MHD_run returns */
  else
    finish_close(s);
}
