/* api/hclient.c - libcurl multi on libuv (see hclient.h). The socket and
 * timer callbacks follow curl's docs/examples/multi-uv.c and the cautions
 * in STYLE.md: a negative poll status goes to curl as CURL_CSELECT_ERR, a
 * CURL_POLL_REMOVE for a socket never announced is ignored, the timer is
 * only (re)armed from curl's callback, and curl is never called from
 * inside its own callbacks (completions are delivered from the loop). */
#include "api/hclient.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gq_hclient {
  uv_loop_t *loop;
  CURLM *multi;
  uv_timer_t timer;   /* curl's timeout */
  uv_timer_t later;   /* delivers queued completions */
  char *ua;
  struct gq_hcall *calls;  /* in flight */
  struct gq_hcall *done_q; /* finished, callbacks not yet run */
  int in_curl;        /* inside a curl callback: no curl calls now */
  int closing, pending_closes;
};

struct gq_hcall {
  struct gq_hclient *h;
  CURL *easy;
  struct curl_slist *hdrs;
  struct curl_slist *connect_to; /* curl keeps a pointer: freed with us */
  struct gq_buf body;
  gq_hclient_chunk_cb chunk;
  gq_hclient_done_cb done;
  void *arg;
  char err[CURL_ERROR_SIZE];
  char retry_after[64];
  int rc, canceled, aborted;
  long status;
  struct gq_hcall *next, *prev, *qnext;
};

struct sock {
  uv_poll_t poll;
  curl_socket_t fd;
  struct gq_hclient *h;
};

static void deliver(struct gq_hclient *h);

static void on_later(uv_timer_t *t)
{
  deliver(t->data);
}

/* Moves a call from the in-flight list to the completion queue. */
static void finish(struct gq_hcall *c, int rc)
{
  struct gq_hclient *h = c->h;

  if (c->prev)
    c->prev->next = c->next;
  else
    h->calls = c->next;
  if (c->next)
    c->next->prev = c->prev;
  c->rc = rc;
  c->qnext = h->done_q;
  h->done_q = c;
  uv_timer_start(&h->later, on_later, 0, 0);
}

static void free_call(struct gq_hcall *c)
{
  curl_easy_cleanup(c->easy);
  curl_slist_free_all(c->hdrs);
  curl_slist_free_all(c->connect_to);
  gq_buf_release(&c->body);
  free(c);
}

static void deliver(struct gq_hclient *h)
{
  while (h->done_q) {
    struct gq_hcall *c = h->done_q;

    h->done_q = c->qnext;
    c->done(c->rc, c->status, gq_buf_str(&c->body), c->body.len,
            c->retry_after[0] ? c->retry_after : NULL, c->err, c->arg);
    free_call(c);
  }
}

static int map_curl(CURLcode rc)
{
  switch (rc) {
  case CURLE_OK: return 0;
  case CURLE_OPERATION_TIMEDOUT: return GQ_ETIMEDOUT;
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_CONNECT: return GQ_EUNAVAIL;
  case CURLE_GOT_NOTHING:
  case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR:
  case CURLE_PARTIAL_FILE: return GQ_ECLOSED;
  default: return GQ_EIO;
  }
}

/* Drains curl's finished transfers into the completion queue. */
static void check_done(struct gq_hclient *h)
{
  CURLMsg *m;
  int left;

  while ((m = curl_multi_info_read(h->multi, &left))) {
    struct gq_hcall *c;
    int rc;

    if (m->msg != CURLMSG_DONE)
      continue;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&c);
    curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &c->status);
    curl_multi_remove_handle(h->multi, m->easy_handle);
    rc = c->canceled ? GQ_ECANCELED
         : c->aborted ? GQ_ETOOBIG
                      : map_curl(m->data.result);
    if (rc == GQ_ETOOBIG)
      snprintf(c->err, sizeof(c->err), "response body over the limit");
    finish(c, rc);
  }
}

static void action(struct gq_hclient *h, curl_socket_t fd, int flags)
{
  int running;

  h->in_curl = 1;
  curl_multi_socket_action(h->multi, fd, flags, &running);
  h->in_curl = 0;
  check_done(h);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
  struct sock *s = p->data;
  int flags = 0;

  if (status < 0)
    flags = CURL_CSELECT_ERR;
  else {
    if (events & UV_READABLE)
      flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
      flags |= CURL_CSELECT_OUT;
  }
  action(s->h, s->fd, flags);
}

static void on_sock_closed(uv_handle_t *hd)
{
  free(hd->data);
}

static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp,
                     void *socketp)
{
  struct gq_hclient *h = userp;
  struct sock *s = socketp;
  int events = 0;

  (void)e;
  if (what == CURL_POLL_REMOVE) {
    if (s) { /* may never have been announced (curl #17949) */
      uv_poll_stop(&s->poll);
      uv_close((uv_handle_t *)&s->poll, on_sock_closed);
      curl_multi_assign(h->multi, fd, NULL);
    }
    return 0;
  }
  if (!s) {
    s = gq_xcalloc(1, sizeof(*s));
    s->fd = fd;
    s->h = h;
    uv_poll_init_socket(h->loop, &s->poll, fd);
    s->poll.data = s;
    curl_multi_assign(h->multi, fd, s);
  }
  if (what & CURL_POLL_IN)
    events |= UV_READABLE;
  if (what & CURL_POLL_OUT)
    events |= UV_WRITABLE;
  uv_poll_start(&s->poll, events, on_poll);
  return 0;
}

static void on_timeout(uv_timer_t *t)
{
  action(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static int on_timer(CURLM *m, long ms, void *userp)
{
  struct gq_hclient *h = userp;

  (void)m;
  if (ms < 0)
    uv_timer_stop(&h->timer);
  else /* even 0: run from the loop, never inside this callback */
    uv_timer_start(&h->timer, on_timeout, (uint64_t)ms, 0);
  return 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
  struct gq_hcall *c = arg;
  size_t len = size * n;

  if (c->canceled)
    return 0;
  if (c->chunk && !c->status)
    curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &c->status);
  if (c->chunk && c->status >= 200 && c->status < 300) {
    if (c->chunk(p, len, c->arg) != 0) {
      c->canceled = 1;
      return 0;
    }
    return len;
  }
  if (gq_buf_append(&c->body, p, len) != 0) {
    c->aborted = 1;
    return 0;
  }
  return len;
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
  struct gq_hcall *c = arg;
  size_t len = size * n;

  if (len > 12 && !strncasecmp(p, "Retry-After:", 12)) {
    size_t v = 12;

    while (v < len && (p[v] == ' ' || p[v] == '\t'))
      v++;
    snprintf(c->retry_after, sizeof(c->retry_after), "%.*s",
             (int)(len - v), p + v);
    c->retry_after[strcspn(c->retry_after, "\r\n")] = '\0';
  }
  return len;
}

/* tls-server-name: connect to the URL's host but verify (and send SNI for)
 * server_name, by rewriting the URL's host and mapping it back with
 * CURLOPT_CONNECT_TO. */
static void server_name(struct gq_hcall *c, const char *url,
                        const char *name)
{
  CURL *e = c->easy;
  CURLU *u = curl_url();
  char *host = NULL, *port = NULL, *out = NULL, map[600];
  struct curl_slist *to;

  if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) ==
          CURLUE_OK &&
      curl_url_set(u, CURLUPART_HOST, name, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_URL, &out, 0) == CURLUE_OK) {
    snprintf(map, sizeof(map), "%s:%s:%s:%s", name, port, host, port);
    to = curl_slist_append(NULL, map);
    curl_easy_setopt(e, CURLOPT_URL, out);
    curl_easy_setopt(e, CURLOPT_CONNECT_TO, to);
    c->connect_to = to;
  }
  curl_free(host);
  curl_free(port);
  curl_free(out);
  curl_url_cleanup(u);
}

static void set_tls(struct gq_hcall *call, const struct gq_hclient_tls *t,
                    const char *url)
{
  CURL *e = call->easy;

  if (!t)
    return;
  if (t->ca) {
    struct curl_blob b = {(void *)t->ca, t->ca_len, CURL_BLOB_COPY};

    curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
  }
  if (t->cert && t->key) {
    struct curl_blob c = {(void *)t->cert, t->cert_len, CURL_BLOB_COPY};
    struct curl_blob k = {(void *)t->key, t->key_len, CURL_BLOB_COPY};

    curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &c);
    curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &k);
    curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
  }
  if (t->insecure) {
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (t->server_name && *t->server_name)
    server_name(call, url, t->server_name);
}

static struct curl_slist *headers(const struct gq_hclient_opts *o)
{
  struct curl_slist *l = NULL;
  char buf[8192];

  snprintf(buf, sizeof(buf), "Accept: %s",
           o->accept ? o->accept : "application/json");
  l = curl_slist_append(l, buf);
  if (o->content_type) {
    snprintf(buf, sizeof(buf), "Content-Type: %s", o->content_type);
    l = curl_slist_append(l, buf);
  }
  if (o->bearer) {
    snprintf(buf, sizeof(buf), "Authorization: Bearer %s", o->bearer);
    l = curl_slist_append(l, buf);
  }
  return curl_slist_append(l, "Expect:"); /* no 100-continue round trip */
}

struct gq_hcall *gq_hclient_do(struct gq_hclient *h,
                               const struct gq_hclient_opts *o,
                               gq_hclient_chunk_cb chunk,
                               gq_hclient_done_cb done, void *arg)
{
  struct gq_hcall *c;
  CURL *e;

  if (h->closing || !o->url || !o->method || !done)
    return NULL;
  e = curl_easy_init();
  c = gq_xcalloc(1, sizeof(*c));
  c->h = h;
  c->easy = e;
  c->chunk = chunk;
  c->done = done;
  c->arg = arg;
  gq_buf_init(&c->body, o->max_body ? o->max_body : (64u << 20));
  c->hdrs = headers(o);
  curl_easy_setopt(e, CURLOPT_URL, o->url);
  curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, o->method);
  if (!strcmp(o->method, "HEAD"))
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  if (o->body) {
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)o->body_len);
    curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, o->body);
  }
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->hdrs);
  curl_easy_setopt(e, CURLOPT_USERAGENT, h->ua);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->err);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  if (o->timeout_ms > 0)
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, o->timeout_ms);
  set_tls(c, o->tls, o->url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, c);
  c->next = h->calls;
  if (c->next)
    c->next->prev = c;
  h->calls = c;
  curl_multi_add_handle(h->multi, e);
  return c;
}

void gq_hclient_cancel(struct gq_hcall *c)
{
  struct gq_hclient *h = c->h;

  if (c->canceled)
    return;
  c->canceled = 1;
  if (h->in_curl)
    return; /* the write callback refuses the next bytes; curl finishes it */
  curl_multi_remove_handle(h->multi, c->easy);
  finish(c, GQ_ECANCELED);
}

int gq_hclient_new(uv_loop_t *loop, const char *user_agent,
                   struct gq_hclient **out)
{
  static int global_done;
  struct gq_hclient *h;

  if (!global_done) {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
      return GQ_EIO;
    global_done = 1;
  }
  h = gq_xcalloc(1, sizeof(*h));
  h->loop = loop;
  h->multi = curl_multi_init();
  h->ua = gq_xstrdup(user_agent ? user_agent : "gpuq");
  uv_timer_init(loop, &h->timer);
  uv_timer_init(loop, &h->later);
  h->timer.data = h->later.data = h;
  curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
  curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
  curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, on_timer);
  curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
  *out = h;
  return 0;
}

static void on_closed(uv_handle_t *hd)
{
  struct gq_hclient *h = hd->data;

  if (--h->pending_closes == 0) {
    curl_multi_cleanup(h->multi);
    free(h->ua);
    free(h);
  }
}

void gq_hclient_close(struct gq_hclient *h)
{
  if (!h || h->closing)
    return;
  h->closing = 1; /* callbacks run below cannot start new calls */
  while (h->calls) {
    struct gq_hcall *c = h->calls;

    c->canceled = 1;
    curl_multi_remove_handle(h->multi, c->easy);
    finish(c, GQ_ECANCELED);
  }
  deliver(h);
  h->pending_closes = 2;
  uv_close((uv_handle_t *)&h->timer, on_closed);
  uv_close((uv_handle_t *)&h->later, on_closed);
}
