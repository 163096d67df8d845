/* sim/watch.c - watch streams: resume by resourceVersion, synthetic
 * ADDED events, selectors, bookmarks, timeouts (kubectl-api-contract §5). */
#include "sim/sim.h"

#include "base/alloc.h"
#include "base/err.h"
#include "sim/dump.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BOOKMARK_MS 10000 /* default real ms between requested bookmarks */
/* An idle watch writes a bare newline this often (real ms). A suspended
 * connection is not polled, so without a write a client that went away
 * would hold its socket until the next event; the newline makes the
 * server notice. Watch readers skip whitespace between events (kubectl's
 * streaming JSON decoder; gpuq's NDJSON framer skips empty lines). */
#define HEARTBEAT_MS 5000

struct gq_sim_watch {
  struct gq_sim *s;
  struct gq_http_stream *stream;
  struct gq_sim_watch_opts o;
  char *ns;
  int sent_coldefs;
  int closed;
  uv_timer_t timer; /* timeoutSeconds and bookmarks */
  uint64_t deadline_ms;
  struct gq_sim_watch *next, *prev;
};

const char *gq_sim_field_value(const json_t *obj, const char *field,
                               char *buf, size_t len)
{
  const json_t *v = obj;
  const char *p = field;

  while (v && *p) {
    const char *dot = strchr(p, '.');
    size_t n = dot ? (size_t)(dot - p) : strlen(p);

    snprintf(buf, len, "%.*s", (int)n, p);
    v = json_object_get(v, buf);
    p = dot ? dot + 1 : p + n;
  }
  if (json_is_string(v))
    return json_string_value(v);
  if (json_is_integer(v)) {
    snprintf(buf, len, "%lld", (long long)json_integer_value(v));
    return buf;
  }
  if (json_is_boolean(v))
    return json_is_true(v) ? "true" : "false";
  return "";
}

struct field_arg {
  const json_t *obj;
  char buf[256];
};

static const char *get_field(const char *field, void *arg)
{
  struct field_arg *a = arg;

  return gq_sim_field_value(a->obj, field, a->buf, sizeof(a->buf));
}

/* Does obj pass the watch's namespace, label and field filters? */
static int passes(const struct gq_sim_watch *w, const json_t *obj)
{
  const json_t *meta = json_object_get(obj, "metadata");
  struct field_arg fa = {.obj = obj};

  if (!obj)
    return 0;
  if (w->ns) {
    const char *ns = json_string_value(json_object_get(meta, "namespace"));

    if (!ns || strcmp(ns, w->ns) != 0)
      return 0;
  }
  if (w->o.labels &&
      !gq_labelsel_match(w->o.labels, json_object_get(meta, "labels")))
    return 0;
  return !w->o.fields || gq_fieldsel_match(w->o.fields, get_field, &fa);
}


static void send_event(struct gq_sim_watch *w, const char *type, json_t *obj)
{
  json_t *payload, *presented = NULL;
  char *line, prefix[64];
  size_t n;

  if (w->closed)
    return;
  if (w->o.view && strcmp(type, "BOOKMARK") != 0)
    obj = presented = w->o.view->present(obj);
  if (w->o.table && strcmp(type, "BOOKMARK") != 0 &&
      strcmp(type, "ERROR") != 0) {
    json_t *one = json_pack("[O]", obj);

    payload = gq_sim_table(w->o.kind, one, w->o.include_object,
                           !w->sent_coldefs);
    json_decref(one);
    w->sent_coldefs = 1;
  } else {
    payload = json_incref(obj);
  }
  snprintf(prefix, sizeof(prefix), "{\"type\":\"%s\",\"object\":", type);
  line = gq_sim_dumps_framed(prefix, payload, "}\n", &n);
  json_decref(payload);
  if (!line || gq_http_stream_write(w->stream, line, n) != 0)
    w->closed = 1;
  free(line);
  json_decref(presented);
}

/* Sends what one stored event means to this watch: a change that moves an
 * object into or out of the filters is an ADDED or DELETED for it. */
static void deliver(struct gq_sim_watch *w, const struct gq_sim_event *ev)
{
  int now = passes(w, ev->obj), before = ev->old && passes(w, ev->old);

  if (ev->kind != w->o.kind || ev->rv <= w->o.from_rv)
    return;
  if (ev->type == GQ_EV_DELETED) {
    if (before || now)
      send_event(w, "DELETED", ev->obj);
  } else if (now && before) {
    send_event(w, "MODIFIED", ev->obj);
  } else if (now) {
    send_event(w, "ADDED", ev->obj);
  } else if (before) {
    send_event(w, "DELETED", ev->obj);
  }
}

void gq_sim_watch_notify(struct gq_sim *s, const struct gq_sim_event *ev,
                         void *arg)
{
  (void)arg;
  for (struct gq_sim_watch *w = s->watches; w; w = w->next)
    deliver(w, ev);
}

static void bookmark(struct gq_sim_watch *w)
{
  char api[128], rv[32];
  json_t *obj;

  snprintf(rv, sizeof(rv), "%llu", (unsigned long long)w->s->rv);
  obj = json_pack("{s:s, s:s, s:{s:s}}", "kind", w->o.kind->kind,
                  "apiVersion",
                  gq_sim_kind_api_version(w->o.kind, api, sizeof(api)),
                  "metadata", "resourceVersion", rv);
  send_event(w, "BOOKMARK", obj);
  json_decref(obj);
}

/* The timer's next period: bookmarks when asked for, else heartbeats. */
static uint64_t period(const struct gq_sim_watch *w)
{
  return w->o.bookmarks ? w->s->opts.bookmark_ms : HEARTBEAT_MS;
}

static void on_timer(uv_timer_t *t)
{
  struct gq_sim_watch *w = t->data;
  uint64_t now = uv_now(w->s->loop), next = period(w);

  if (w->deadline_ms && now >= w->deadline_ms) {
    gq_http_stream_close(w->stream); /* timeoutSeconds: a normal end */
    return;
  }
  if (w->o.bookmarks)
    bookmark(w);
  else if (!w->closed && gq_http_stream_write(w->stream, "\n", 1) != 0)
    w->closed = 1;
  if (w->deadline_ms && w->deadline_ms - now < next)
    next = w->deadline_ms - now;
  uv_timer_start(&w->timer, on_timer, next, 0);
}

static void on_timer_closed(uv_handle_t *h)
{
  struct gq_sim_watch *w = h->data;

  gq_labelsel_free(w->o.labels);
  gq_fieldsel_free(w->o.fields);
  free(w->ns);
  free(w);
}

static void on_gone(struct gq_http_stream *st, void *arg)
{
  struct gq_sim_watch *w = arg;
  struct gq_sim *s = w->s;

  (void)st;
  w->closed = 1;
  if (w->prev)
    w->prev->next = w->next;
  else
    s->watches = w->next;
  if (w->next)
    w->next->prev = w->prev;
  uv_close((uv_handle_t *)&w->timer, on_timer_closed);
}

/* Replays the window after from_rv, or the current state as ADDED. */
static void catch_up(struct gq_sim_watch *w)
{
  struct gq_sim *s = w->s;

  if (w->o.from_rv == 0) {
    json_t *items = gq_sim_list(w->o.kind, w->ns);
    json_t *it;
    size_t i;

    json_array_foreach(items, i, it)
      if (passes(w, it))
        send_event(w, "ADDED", it);
    json_decref(items);
    w->o.from_rv = s->rv;
    return;
  }
  for (size_t i = 0; i < s->ev_count; i++)
    deliver(w, &s->events[(s->ev_head + i) % s->opts.watch_window]);
}

int gq_sim_watch_open(struct gq_sim *s, struct gq_http_req *req,
                      struct gq_sim_watch_opts *o)
{
  struct gq_sim_watch *w;
  uint64_t first;

  if (o->from_rv && o->from_rv < s->compacted_rv)
    return GQ_EGONE;
  if (!s->opts.bookmark_ms)
    s->opts.bookmark_ms = BOOKMARK_MS;
  w = gq_xcalloc(1, sizeof(*w));
  w->s = s;
  w->o = *o;
  w->ns = o->ns ? gq_xstrdup(o->ns) : NULL;
  w->o.ns = NULL;
  uv_timer_init(s->loop, &w->timer);
  w->timer.data = w;
  first = period(w);
  if (o->timeout_s > 0) {
    w->deadline_ms = uv_now(s->loop) + (uint64_t)o->timeout_s * 1000;
    if ((uint64_t)o->timeout_s * 1000 < first)
      first = (uint64_t)o->timeout_s * 1000;
  }
  uv_timer_start(&w->timer, on_timer, first, 0);
  w->stream = gq_http_stream_open(req, "application/json", on_gone, w);
  w->next = s->watches;
  if (w->next)
    w->next->prev = w;
  s->watches = w;
  catch_up(w);
  return 0;
}

void gq_sim_watch_close_all(struct gq_sim *s)
{
  for (struct gq_sim_watch *w = s->watches; w; w = w->next)
    gq_http_stream_close(w->stream);
}
