/* Integration tests for controller/serve: the real HTTP server on a
 * loopback port, asked by libcurl. The server runs on the test's uv loop;
 * each request is a blocking curl_easy_perform() on libuv's thread pool
 * (uv_queue_work), so the loop keeps serving while the request waits, and
 * its result comes back on the loop thread. Each case ends by asserting
 * that uv_loop_close() returns 0 (every handle closed, nothing leaked). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <uv.h>

#include "base/buf.h"
#include "base/err.h"
#include "controller/metrics.h"
#include "controller/serve.h"

#define METRICS_CTYPE "text/plain; version=0.0.4; charset=utf-8"
#define TEXT_CTYPE "text/plain; charset=utf-8"

/* What the owner's callbacks see and answer. */
struct owner {
  int healthy, ready;
  int collects;
  struct gq_metric *scrapes;
  struct gq_serve *close_me; /* readyz closes this server when set */
};

struct fetch {
  uv_work_t work;
  const char *method;
  char url[128];
  long status;     /* 0 on a transport error */
  char ctype[128]; /* Content-Type, "" if none */
  char allow[64];  /* Allow, "" if none */
  struct gq_buf body;
  int done;
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
  struct fetch *f = arg;

  return gq_buf_append(&f->body, p, size * n) == 0 ? size * n : 0;
}

/* Thread pool: the blocking request. Touches only f and its own handle. */
static void fetch_work(uv_work_t *w)
{
  struct fetch *f = w->data;
  CURL *c = curl_easy_init();
  struct curl_header *h;
  char *ct = NULL;

  curl_easy_setopt(c, CURLOPT_URL, f->url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, f->method);
  curl_easy_setopt(c, CURLOPT_NOBODY, (long)!strcmp(f->method, "HEAD"));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
  if (curl_easy_perform(c) == CURLE_OK) {
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &f->status);
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
    snprintf(f->ctype, sizeof(f->ctype), "%s", ct ? ct : "");
    if (curl_easy_header(c, "Allow", 0, CURLH_HEADER, -1, &h) == CURLHE_OK)
      snprintf(f->allow, sizeof(f->allow), "%s", h->value);
  }
  curl_easy_cleanup(c);
}

static void fetch_done(uv_work_t *w, int status)
{
  struct fetch *f = w->data;

  assert_int_equal(status, 0);
  f->done = 1;
}

/* Runs method on http://host:port/path to completion while the loop
 * serves. Release f->body afterwards with gq_buf_release(). */
static void fetch(uv_loop_t *loop, struct fetch *f, const char *method,
                  const char *host, int port, const char *path)
{
  memset(f, 0, sizeof(*f));
  f->method = method;
  snprintf(f->url, sizeof(f->url), "http://%s:%d%s", host, port, path);
  gq_buf_init(&f->body, 1u << 20);
  f->work.data = f;
  assert_int_equal(uv_queue_work(loop, &f->work, fetch_work, fetch_done), 0);
  while (!f->done)
    uv_run(loop, UV_RUN_ONCE);
}

/* Asserts status, content type and body of one request to host. */
static void expect_at(uv_loop_t *loop, const char *host, int port,
                      const char *method, const char *path, long status,
                      const char *ctype, const char *body)
{
  struct fetch f;

  fetch(loop, &f, method, host, port, path);
  if (f.status != status)
    fail_msg("%s %s: status %ld, want %ld", method, path, f.status, status);
  assert_string_equal(f.ctype, ctype);
  assert_string_equal(gq_buf_str(&f.body), body);
  gq_buf_release(&f.body);
}

/* Same on the server's IPv4 loopback port. */
static void expect(uv_loop_t *loop, struct gq_serve *s, const char *method,
                   const char *path, long status, const char *ctype,
                   const char *body)
{
  expect_at(loop, "127.0.0.1", gq_serve_port(s), method, path, status, ctype,
            body);
}

static int on_healthz(void *arg, char *msg, size_t len)
{
  struct owner *o = arg;

  if (o->healthy > 0)
    return 0;
  snprintf(msg, len, "%s", o->healthy < 0 ? "" : "redis unreachable");
  return -1;
}

static int on_readyz(void *arg, char *msg, size_t len)
{
  struct owner *o = arg;

  if (o->close_me)
    gq_serve_close(o->close_me); /* deferred: we are inside its dispatch */
  if (o->ready)
    return 0;
  snprintf(msg, len, "waiting for the initial list of gpujobs");
  return 1;
}

static void on_collect(void *arg, struct gq_metrics *m)
{
  struct owner *o = arg;

  (void)m;
  o->collects++;
  gq_metric_set(o->scrapes, NULL, o->collects);
}

/* One loop, one owner and at most one server per case. */
struct fx {
  uv_loop_t loop;
  struct owner o;
  struct gq_serve *s;
  struct gq_serve_opts so;
};

static int setup(void **state)
{
  struct fx *x = calloc(1, sizeof(*x));

  assert_non_null(x);
  assert_int_equal(uv_loop_init(&x->loop), 0);
  x->o.healthy = x->o.ready = 1;
  x->so =
      (struct gq_serve_opts){on_healthz, on_readyz, on_collect, &x->o, NULL};
  *state = x;
  return 0;
}

/* Closes the server (twice: idempotent until the loop runs), runs the loop
 * dry and requires a clean uv_loop_close(). */
static int teardown(void **state)
{
  struct fx *x = *state;

  gq_serve_close(x->s);
  gq_serve_close(x->s);
  uv_run(&x->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&x->loop), 0);
  free(x);
  return 0;
}

/* Starts x->s on addr with registry m; returns gq_serve_start()'s result
 * and leaves its message in err. */
static int serve(struct fx *x, const char *addr, struct gq_metrics *m,
                 char *err, size_t errlen)
{
  x->so.metrics = m;
  err[0] = '\0';
  return gq_serve_start(&x->loop, addr, &x->so, &x->s, err, errlen);
}

static void serve_ok(struct fx *x, const char *addr, struct gq_metrics *m)
{
  char err[256];

  if (serve(x, addr, m, err, sizeof(err)) != 0)
    fail_msg("gq_serve_start %s: %s", addr, err);
  assert_true(gq_serve_port(x->s) > 0);
}

static void test_health_and_ready(void **state)
{
  struct fx *x = *state;

  x->o.ready = 0;
  serve_ok(x, "127.0.0.1:0", NULL);
  expect(&x->loop, x->s, "GET", "/healthz", 200, TEXT_CTYPE, "ok");
  expect(&x->loop, x->s, "GET", "/readyz", 503, TEXT_CTYPE,
         "waiting for the initial list of gpujobs");
  x->o.ready = 1;
  expect(&x->loop, x->s, "GET", "/readyz", 200, TEXT_CTYPE, "ok");
  x->o.healthy = 0;
  expect(&x->loop, x->s, "GET", "/healthz", 503, TEXT_CTYPE,
         "redis unreachable");
  x->o.healthy = -1; /* fails without a reason */
  expect(&x->loop, x->s, "GET", "/healthz", 503, TEXT_CTYPE, "not healthy");
  expect(&x->loop, x->s, "HEAD", "/readyz", 200, TEXT_CTYPE, "");
}

/* collect runs before every render, so each scrape sees fresh values. */
static void test_metrics(void **state)
{
  struct fx *x = *state;
  struct gq_metrics *m = gq_metrics_new();

  x->o.scrapes = gq_metrics_gauge(m, "gpuq_scrapes", "Scrapes seen.", 0, NULL);
  serve_ok(x, "127.0.0.1:0", m);
  expect(&x->loop, x->s, "GET", "/metrics", 200, METRICS_CTYPE,
         "# HELP gpuq_scrapes Scrapes seen.\n"
         "# TYPE gpuq_scrapes gauge\n"
         "gpuq_scrapes 1\n");
  expect(&x->loop, x->s, "GET", "/metrics", 200, METRICS_CTYPE,
         "# HELP gpuq_scrapes Scrapes seen.\n"
         "# TYPE gpuq_scrapes gauge\n"
         "gpuq_scrapes 2\n");
  assert_int_equal(x->o.collects, 2);
  gq_serve_close(x->s); /* before the registry it borrows goes */
  x->s = NULL;
  gq_metrics_free(m);
}

/* Unknown paths are 404 whatever the method; known paths refuse methods
 * other than GET and HEAD with 405 and say which they allow. */
static void test_not_found_and_method(void **state)
{
  static const char *const paths[] = {"/metrics", "/healthz", "/readyz"};
  struct fx *x = *state;
  struct fetch f;

  serve_ok(x, "127.0.0.1:0", NULL);
  expect(&x->loop, x->s, "GET", "/", 404, TEXT_CTYPE, "404 page not found");
  expect(&x->loop, x->s, "GET", "/metrics/x", 404, TEXT_CTYPE,
         "404 page not found");
  expect(&x->loop, x->s, "POST", "/nope", 404, TEXT_CTYPE,
         "404 page not found");
  for (size_t i = 0; i < 3; i++) {
    fetch(&x->loop, &f, i == 1 ? "PUT" : "POST", "127.0.0.1",
          gq_serve_port(x->s), paths[i]);
    assert_int_equal(f.status, 405);
    assert_string_equal(f.allow, "GET, HEAD");
    assert_string_equal(gq_buf_str(&f.body), "method not allowed");
    gq_buf_release(&f.body);
  }
  /* No registry: an empty, valid exposition. */
  expect(&x->loop, x->s, "GET", "/metrics", 200, METRICS_CTYPE, "");
}

static void test_ipv6(void **state)
{
  struct fx *x = *state;
  char err[256];
  int rc = serve(x, "[::1]:0", NULL, err, sizeof(err));

  if (rc == GQ_EIO) { /* a machine without IPv6 loopback */
    fprintf(stderr, "skipping: %s\n", err);
    skip();
  }
  assert_int_equal(rc, 0);
  expect_at(&x->loop, "[::1]", gq_serve_port(x->s), "GET", "/readyz", 200,
            TEXT_CTYPE, "ok");
}

/* Malformed addresses are GQ_EINVAL with the value in the message; an
 * address in use is GQ_EIO. Neither leaves anything on the loop. */
static void test_bad_address(void **state)
{
  static const char *const bad[] = {
      "",           "127.0.0.1",    "localhost:80",  "127.0.0.1:",
      "1.2.3.4:-1", "1.2.3.4:+80",  "1.2.3.4:65536", "1.2.3.4:80x",
      "::1:80",     "[::1]",        "[::1:80",       "[]:80",
      ":8080",      "300.1.1.1:80", "[1.2.3.4]x:80",
  };
  struct fx *x = *state;
  struct gq_serve *first;
  char err[256], addr[64], quoted[80];

  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    if (serve(x, bad[i], NULL, err, sizeof(err)) != GQ_EINVAL)
      fail_msg("'%s' was accepted", bad[i]);
    snprintf(quoted, sizeof(quoted), "'%s'", bad[i]);
    if (!strstr(err, quoted))
      fail_msg("message for '%s' does not name it: %s", bad[i], err);
  }
  serve_ok(x, "127.0.0.1:0", NULL);
  first = x->s;
  snprintf(addr, sizeof(addr), "127.0.0.1:%d", gq_serve_port(first));
  assert_int_equal(serve(x, addr, NULL, err, sizeof(err)), GQ_EIO);
  assert_non_null(strstr(err, "cannot listen"));
  x->s = first;
}

/* Closing from inside a callback is deferred to the next loop iteration:
 * the request in hand is still answered, and everything is freed. */
static void test_close_in_callback(void **state)
{
  struct fx *x = *state;

  serve_ok(x, "127.0.0.1:0", NULL);
  x->o.close_me = x->s;
  expect(&x->loop, x->s, "GET", "/readyz", 200, TEXT_CTYPE, "ok");
  x->s = NULL; /* closed by the callback; freed by the loop */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_health_and_ready, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics, setup, teardown),
      cmocka_unit_test_setup_teardown(test_not_found_and_method, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_ipv6, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_address, setup, teardown),
      cmocka_unit_test_setup_teardown(test_close_in_callback, setup, teardown),
  };
  int rc;

  curl_global_init(CURL_GLOBAL_DEFAULT);
  rc = cmocka_run_group_tests(tests, NULL, NULL);
  curl_global_cleanup();
  return rc;
}
