/* api/httpd.c - libmicrohttpd on the libuv loop (see httpd.h). */
#include "api/httpd.h"

#include "base/alloc.h"
#include "base/err.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define STREAM_CAP (64u << 20) /* pending bytes before a watcher is dropped */

struct gq_httpd {
  uv_loop_t *loop;
  struct MHD_Daemon *mhd;
  uv_poll_t poll;
  uv_timer_t timer;  /* MHD's own timeout */
  uv_timer_t kick;   /* runs MHD soon after a resume */
  int port;
  size_t max_body;
  int closing;
  int pending_closes;
  gq_http_handler_cb cb;
  void *arg;
  struct gq_http_stream *streams; /* open streams, for close */
  gq_http_tap_cb tap;             /* gq_httpd_set_tap, or NULL */
  void *tap_arg;
};

struct delayed;

enum req_state { REQ_NEW, REQ_HANDLING, REQ_WAITING, REQ_READY, REQ_DONE };

struct gq_http_req {
  struct gq_httpd *h;
  struct MHD_Connection *conn;
  const char *method, *path;
  struct gq_buf body;
  enum req_state state;
  int too_big;
  struct MHD_Response *ready; /* a deferred answer, queued on resume */
  unsigned ready_status;
  struct delayed *delay;
};

struct delayed {
  uv_timer_t timer;
  struct gq_http_req *req; /* NULL once the request is gone */
};

struct gq_http_stream {
  struct gq_httpd *h;
  struct MHD_Connection *conn;
  struct gq_buf out;
  size_t out_off; /* bytes at the front of out already handed to MHD */
  int suspended, closing, gone;
  gq_http_stream_gone_cb gone_cb;
  void *arg;
  struct gq_http_stream *next, *prev;
  char *tap_method, *tap_path, *tap_ctype; /* copies, with a tap only */
};

static void run_mhd(struct gq_httpd *h);

static void on_kick(uv_timer_t *t)
{
  run_mhd(t->data);
}

static void kick(struct gq_httpd *h)
{
  if (!h->closing)
    uv_timer_start(&h->kick, on_kick, 0, 0);
}

static void on_mhd_timer(uv_timer_t *t)
{
  run_mhd(t->data);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
  (void)status;
  (void)events;
  run_mhd(p->data);
}

/* Runs MHD, then re-arms the timer to MHD's next deadline. */
static void run_mhd(struct gq_httpd *h)
{
  MHD_UNSIGNED_LONG_LONG ms;

  if (h->closing || !h->mhd)
    return;
  MHD_run(h->mhd);
  if (MHD_get_timeout(h->mhd, &ms) == MHD_YES)
    uv_timer_start(&h->timer, on_mhd_timer, (uint64_t)ms, 0);
  else
    uv_timer_stop(&h->timer);
}

static void queue(struct gq_http_req *r, unsigned status,
                  struct MHD_Response *resp)
{
  MHD_queue_response(r->conn, status, resp);
  MHD_destroy_response(resp);
  r->state = REQ_DONE;
}

static struct MHD_Response *make_response(const char *ctype, const char *body,
                                          size_t len,
                                          const char *const *extra)
{
  struct MHD_Response *resp = MHD_create_response_from_buffer(
      len, (void *)body, MHD_RESPMEM_MUST_COPY);

  MHD_add_response_header(resp, "Content-Type", ctype);
  MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
  for (; extra && extra[0] && extra[1]; extra += 2)
    MHD_add_response_header(resp, extra[0], extra[1]);
  return resp;
}

void gq_http_respond(struct gq_http_req *r, unsigned status,
                     const char *content_type, const char *body, size_t len,
                     const char *const *extra_headers)
{
  struct MHD_Response *resp =
      make_response(content_type, body, len, extra_headers);

  if (r->h->tap)
    r->h->tap(r->method, r->path, status, content_type, body, len, 0,
              r->h->tap_arg);
  if (r->state == REQ_HANDLING) {
    queue(r, status, resp);
    return;
  }
  /* Answered after the handler returned: park it and resume. */
  r->ready = resp;
  r->ready_status = status;
  r->state = REQ_READY;
  MHD_resume_connection(r->conn);
  kick(r->h);
}

static void on_delay_closed(uv_handle_t *t)
{
  free(t->data);
}

static void on_delay(uv_timer_t *t)
{
  struct delayed *d = t->data;

  if (d->req) {
    d->req->delay = NULL;
    d->req->state = REQ_READY;
    MHD_resume_connection(d->req->conn);
    kick(d->req->h);
  }
  uv_close((uv_handle_t *)&d->timer, on_delay_closed);
}

void gq_http_respond_later(struct gq_http_req *r, uint64_t delay_ms,
                           unsigned status, const char *content_type,
                           const char *body, size_t len)
{
  struct delayed *d = gq_xcalloc(1, sizeof(*d));

  if (r->h->tap)
    r->h->tap(r->method, r->path, status, content_type, body, len, 0,
              r->h->tap_arg);
  r->ready = make_response(content_type, body, len, NULL);
  r->ready_status = status;
  r->state = REQ_WAITING;
  MHD_suspend_connection(r->conn);
  d->req = r;
  r->delay = d;
  uv_timer_init(r->h->loop, &d->timer);
  d->timer.data = d;
  uv_timer_start(&d->timer, on_delay, delay_ms, 0);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
  struct gq_http_stream *s = cls;
  size_t n;

  (void)pos;
  if (s->out.len > s->out_off) {
    n = s->out.len - s->out_off;
    n = n < max ? n : max;
    memcpy(buf, s->out.data + s->out_off, n);
    /* sent bytes are dropped once they are half the buffer or more (all
     * of it included): a watch that falls behind holds megabytes, and
     * moving the rest after every 64 KiB read was quadratic */
    s->out_off += n;
    if (s->out_off * 2 >= s->out.len) {
      gq_buf_consume(&s->out, s->out_off);
      s->out_off = 0;
    }
    return (ssize_t)n;
  }
  if (s->closing || s->h->closing)
    return MHD_CONTENT_READER_END_OF_STREAM;
  /* Nothing to send: sleep until gq_http_stream_write() wakes us. */
  s->suspended = 1;
  MHD_suspend_connection(s->conn);
  return 0;
}

static void stream_free(void *cls)
{
  struct gq_http_stream *s = cls;
  struct gq_httpd *h = s->h;

  s->gone = 1;
  if (s->gone_cb)
    s->gone_cb(s, s->arg);
  if (s->prev)
    s->prev->next = s->next;
  else
    h->streams = s->next;
  if (s->next)
    s->next->prev = s->prev;
  gq_buf_release(&s->out);
  free(s->tap_method);
  free(s->tap_path);
  free(s->tap_ctype);
  free(s);
}

struct gq_http_stream *gq_http_stream_open(struct gq_http_req *r,
                                           const char *content_type,
                                           gq_http_stream_gone_cb gone_cb,
                                           void *arg)
{
  struct gq_http_stream *s = gq_xcalloc(1, sizeof(*s));
  struct MHD_Response *resp;

  s->h = r->h;
  s->conn = r->conn;
  s->gone_cb = gone_cb;
  s->arg = arg;
  if (r->h->tap) {
    s->tap_method = gq_xstrdup(r->method);
    s->tap_path = gq_xstrdup(r->path);
    s->tap_ctype = gq_xstrdup(content_type);
  }
  gq_buf_init(&s->out, STREAM_CAP);
  s->next = r->h->streams;
  if (s->next)
    s->next->prev = s;
  r->h->streams = s;
  resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024,
                                           stream_read, s, stream_free);
  MHD_add_response_header(resp, "Content-Type", content_type);
  MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
  if (r->state == REQ_HANDLING) {
    queue(r, 200, resp);
  } else {
    r->ready = resp;
    r->ready_status = 200;
    r->state = REQ_READY;
    MHD_resume_connection(r->conn);
    kick(r->h);
  }
  return s;
}

static void stream_wake(struct gq_http_stream *s)
{
  if (s->suspended) {
    s->suspended = 0;
    MHD_resume_connection(s->conn);
    kick(s->h);
  }
}

int gq_http_stream_write(struct gq_http_stream *s, const char *p, size_t n)
{
  if (s->closing)
    return GQ_ECLOSED;
  if (s->tap_path && s->h->tap)
    s->h->tap(s->tap_method, s->tap_path, 200, s->tap_ctype, p, n, 1,
              s->h->tap_arg);
  if (gq_buf_append(&s->out, p, n) != 0) {
    gq_http_stream_close(s);
    return GQ_ETOOBIG;
  }
  stream_wake(s);
  return 0;
}

void gq_http_stream_close(struct gq_http_stream *s)
{
  if (s->closing)
    return;
  s->closing = 1;
  stream_wake(s);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn,
                                 const char *url, const char *method,
                                 const char *version, const char *data,
                                 size_t *data_size, void **con_cls)
{
  struct gq_httpd *h = cls;
  struct gq_http_req *r = *con_cls;

  (void)version;
  if (!r) {
    r = gq_xcalloc(1, sizeof(*r));
    r->h = h;
    r->conn = conn;
    r->method = method;
    r->path = url;
    gq_buf_init(&r->body, h->max_body);
    *con_cls = r;
    return MHD_YES;
  }
  if (*data_size) {
    if (!r->too_big && gq_buf_append(&r->body, data, *data_size) != 0)
      r->too_big = 1;
    *data_size = 0;
    return MHD_YES;
  }
  if (r->state == REQ_READY) {
    queue(r, r->ready_status, r->ready);
    r->ready = NULL;
    return MHD_YES;
  }
  if (r->state != REQ_NEW)
    return MHD_YES;
  r->state = REQ_HANDLING;
  if (r->too_big) {
    char msg[256];
    int n = snprintf(msg, sizeof(msg),
                     "{\"kind\":\"Status\",\"apiVersion\":\"v1\","
                     "\"status\":\"Failure\",\"message\":\"request entity "
                     "too large: the body exceeds %zu bytes\",\"reason\":"
                     "\"RequestEntityTooLarge\",\"code\":413}",
                     h->max_body);

    gq_http_respond(r, 413, "application/json", msg, (size_t)n, NULL);
    return MHD_YES;
  }
  h->cb(r, h->arg);
  if (r->state == REQ_HANDLING) {
    /* The handler kept it (answer comes later): park the connection. */
    r->state = REQ_WAITING;
    MHD_suspend_connection(conn);
  }
  return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *conn,
                         void **con_cls, enum MHD_RequestTerminationCode toe)
{
  struct gq_http_req *r = *con_cls;

  (void)cls;
  (void)conn;
  (void)toe;
  if (!r)
    return;
  if (r->delay)
    r->delay->req = NULL;
  if (r->ready)
    MHD_destroy_response(r->ready);
  gq_buf_release(&r->body);
  free(r);
  *con_cls = NULL;
}

void gq_httpd_set_tap(struct gq_httpd *h, gq_http_tap_cb tap, void *arg)
{
  h->tap = tap;
  h->tap_arg = arg;
}

const char *gq_http_method(const struct gq_http_req *r)
{
  return r->method;
}

const char *gq_http_path(const struct gq_http_req *r)
{
  return r->path;
}

const char *gq_http_query(const struct gq_http_req *r, const char *key)
{
  const char *v = NULL;
  size_t len = 0;

  if (MHD_lookup_connection_value_n(r->conn, MHD_GET_ARGUMENT_KIND, key,
                                    strlen(key), &v, &len) != MHD_YES)
    return NULL;
  return v ? v : "";
}

const char *gq_http_header(const struct gq_http_req *r, const char *name)
{
  return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *gq_http_body(const struct gq_http_req *r, size_t *len)
{
  *len = r->body.len;
  return gq_buf_str(&r->body);
}

int gq_httpd_parse_addr(const char *addr, char *host, size_t hostlen,
                        int *port)
{
  const char *h = addr, *colon = strrchr(addr, ':');
  size_t hlen = colon ? (size_t)(colon - addr) : 0;
  unsigned char ip[sizeof(struct in6_addr)];
  char *end;
  long p;

  if (!colon || !isdigit((unsigned char)colon[1]))
    return GQ_EINVAL;
  errno = 0;
  p = strtol(colon + 1, &end, 10);
  if (*end || errno || p > 65535)
    return GQ_EINVAL;
  /* "[::1]:80": the brackets keep the port apart from the address. */
  if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
    h++;
    hlen -= 2;
  } else if (memchr(h, ':', hlen)) {
    return GQ_EINVAL; /* "::1:80" is ambiguous: brackets required */
  }
  if (hlen == 0 || hlen >= hostlen)
    return GQ_EINVAL;
  memcpy(host, h, hlen);
  host[hlen] = '\0';
  if (inet_pton(AF_INET, host, ip) != 1 && inet_pton(AF_INET6, host, ip) != 1)
    return GQ_EINVAL;
  *port = (int)p;
  return 0;
}

/* Fills a from an IPv4 or IPv6 literal and a port; returns its length, or
 * 0 if host is not an IP literal. */
static socklen_t make_sockaddr(const char *host, int port,
                               struct sockaddr_storage *a)
{
  struct sockaddr_in *a4 = (struct sockaddr_in *)a;
  struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)a;

  memset(a, 0, sizeof(*a));
  if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    return sizeof(*a4);
  }
  if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
    a6->sin6_family = AF_INET6;
    a6->sin6_port = htons((uint16_t)port);
    return sizeof(*a6);
  }
  return 0;
}

/* host:port for messages, with an IPv6 address in brackets. */
static const char *addr_str(const char *host, int port, char buf[80])
{
  int v6 = strchr(host, ':') != NULL;

  snprintf(buf, 80, "%s%s%s:%d", v6 ? "[" : "", host, v6 ? "]" : "", port);
  return buf;
}

/* Binds a non-blocking listening socket on host:port (IPv4 or IPv6). */
static int listen_on(const char *host, int port, int *port_out, char *err,
                     size_t errlen)
{
  struct sockaddr_storage a;
  socklen_t len = make_sockaddr(host, port, &a);
  int fd, one = 1;
  char buf[80];

  if (!len) {
    snprintf(err, errlen, "cannot listen on '%s': not an IP address", host);
    return GQ_EINVAL;
  }
  fd = socket(a.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(err, errlen, "cannot listen on %s: %s",
             addr_str(host, port, buf), strerror(errno));
    return GQ_EIO;
  }
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, (struct sockaddr *)&a, len) != 0 ||
      listen(fd, SOMAXCONN) != 0 ||
      getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
    snprintf(err, errlen, "cannot listen on %s: %s",
             addr_str(host, port, buf), strerror(errno));
    close(fd);
    return GQ_EIO;
  }
  *port_out = ntohs(a.ss_family == AF_INET
                        ? ((struct sockaddr_in *)&a)->sin_port
                        : ((struct sockaddr_in6 *)&a)->sin6_port);
  return fd;
}

int gq_httpd_start(uv_loop_t *loop, const struct gq_httpd_opts *o,
                   gq_http_handler_cb cb, void *arg, struct gq_httpd **out,
                   char *err, size_t errlen)
{
  struct gq_httpd *h = gq_xcalloc(1, sizeof(*h));
  unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
  const union MHD_DaemonInfo *info;
  char buf[80];
  int fd = listen_on(o->host, o->port, &h->port, err, errlen);

  if (fd < 0) {
    free(h);
    return fd;
  }
  if (o->tls_cert)
    flags |= MHD_USE_TLS;
  h->loop = loop;
  h->max_body = o->max_body ? o->max_body : GQ_HTTP_MAX_BODY;
  h->cb = cb;
  h->arg = arg;
  {
    struct MHD_OptionItem tls[] = {
        {MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)o->tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)o->tls_key},
        {MHD_OPTION_END, 0, NULL}};

    h->mhd = MHD_start_daemon(
        flags, 0, NULL, NULL, on_access, h, MHD_OPTION_LISTEN_SOCKET, fd,
        MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)0, MHD_OPTION_ARRAY,
        o->tls_cert ? tls : tls + 2, MHD_OPTION_END);
  }
  if (!h->mhd) {
    snprintf(err, errlen, "cannot start the HTTP server on %s%s",
             addr_str(o->host, h->port, buf),
             o->tls_cert ? " (check the TLS certificate and key)" : "");
    close(fd);
    free(h);
    return GQ_EIO;
  }
  info = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_EPOLL_FD);
  uv_poll_init(loop, &h->poll, info->epoll_fd);
  uv_timer_init(loop, &h->timer);
  uv_timer_init(loop, &h->kick);
  h->poll.data = h->timer.data = h->kick.data = h;
  uv_poll_start(&h->poll, UV_READABLE, on_poll);
  *out = h;
  run_mhd(h);
  return 0;
}

int gq_httpd_port(const struct gq_httpd *h)
{
  return h->port;
}

static void on_handle_closed(uv_handle_t *hd)
{
  struct gq_httpd *h = hd->data;

  if (--h->pending_closes == 0)
    free(h);
}

void gq_httpd_close(struct gq_httpd *h)
{
  if (!h || h->closing)
    return;
  /* Let streams end cleanly: resume them so MHD can finish them. */
  for (struct gq_http_stream *s = h->streams; s; s = s->next) {
    s->closing = 1;
    if (s->suspended) {
      s->suspended = 0;
      MHD_resume_connection(s->conn);
    }
  }
  h->closing = 1;
  MHD_stop_daemon(h->mhd);
  h->mhd = NULL;
  h->pending_closes = 3;
  uv_close((uv_handle_t *)&h->poll, on_handle_closed);
  uv_close((uv_handle_t *)&h->timer, on_handle_closed);
  uv_close((uv_handle_t *)&h->kick, on_handle_closed);
}
