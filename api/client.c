/* api/client.c - the Kubernetes API client (see client.h). */
#include "api/client.h"

#include "api/exec.h"
#include "api/hclient.h"
#include "base/alloc.h"
#include "base/backoff.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN_RELOAD_MS 60000 /* client-go re-reads token files each minute */
#define MAX_INFLIGHT 64       /* requests on the wire at once (default) */
#define MAX_INFLIGHT_LOW 4    /* of which low-priority ones (default) */

struct kreq;

struct gq_kclient {
  uv_loop_t *loop;
  struct gq_hclient *http;
  const struct gq_kubeconfig *cfg; /* borrowed: outlives the client */
  struct gq_kclient_opts o;
  struct gq_hclient_tls tls;
  struct gq_ratelimit rl;
  char *token;                /* current bearer token, or NULL */
  uv_timer_t token_timer;
  struct gq_exec_credential cred;
  int exec_running;
  struct kreq *waiting;       /* requests waiting for exec credentials */
  struct kreq *reqs;          /* every live request */
  /* requests waiting for a token of the bucket or a place in the window,
   * one FIFO per priority; the highest non-empty one goes first */
  struct kreq *qh[GQ_KPRIO_N], *qt[GQ_KPRIO_N];
  unsigned inflight;          /* requests on the wire (watches not counted) */
  unsigned inflight_low;      /* of which GQ_KPRIO_LOW */
  uv_timer_t rl_timer;        /* when the bucket has the next token */
  char auth[300];
  int closing, pending_closes;
};

struct kreq {
  struct gq_kclient *c;
  char *method, *url, *body, *ctype;
  size_t body_len;
  int idempotent, attempt, reauth;
  enum gq_kclient_prio prio;
  int no_body;               /* a 2xx body is not parsed (obj NULL) */
  int drop_mf;               /* parsed without metadata.managedFields */
  int queued;                /* in c->qh[prio] */
  int on_wire;               /* counted in c->inflight */
  void (*sent)(void *arg);   /* not yet called; NULL once it has been */
  gq_kclient_cb cb;
  void *arg;
  struct gq_backoff bo;
  uv_timer_t timer;
  struct gq_hcall *call;
  struct kreq *next, *prev, *wnext, *qnext;
  struct gq_kwatch *watch;   /* set for watch streams */
};

struct gq_kwatch {
  struct kreq *r;
  struct gq_ndjson framer;
  gq_kwatch_event_cb ev;
  gq_kwatch_end_cb end;
  void *arg;
  char rv[64];
  int err;                   /* first decode error */
  int drop_mf;               /* gq_kwatch_opts.drop_managed_fields */
  char *scratch;             /* a line without its managedFields */
  size_t scratch_len;
};

static const struct gq_lc lc = {"api", "request", NULL};

static void send_req(struct kreq *r);
static void fail_req(struct kreq *r, int rc, struct gq_k8s_status *st);
static void pump(struct gq_kclient *c);

/* --- credentials --- */

static void set_token(struct gq_kclient *c, const char *t)
{
  free(c->token);
  c->token = t ? gq_xstrdup(t) : NULL;
  if (t)
    gq_log_add_secret(t); /* never logged (STYLE) */
}

static void reload_token(struct gq_kclient *c)
{
  char err[512], *t = NULL;

  if (gq_kubeconfig_read_token_file(c->cfg->token_file, &t, err,
                                    sizeof(err)) == 0) {
    set_token(c, t);
    free(t);
  } else {
    GQ_LOG(GQ_WARN, &lc, "cannot re-read token file: %s", err);
  }
}

static void on_token_timer(uv_timer_t *t)
{
  reload_token(t->data);
}

static void dispatch_waiting(struct gq_kclient *c, int rc, const char *err)
{
  while (c->waiting) {
    struct kreq *r = c->waiting;

    c->waiting = r->wnext;
    r->wnext = NULL;
    if (rc == 0) {
      send_req(r);
    } else {
      struct gq_k8s_status st = {.code = 0};

      snprintf(st.message, sizeof(st.message), "%s", err);
      snprintf(st.reason, sizeof(st.reason), "Unauthorized");
      fail_req(r, GQ_EUNAUTHORIZED, &st);
    }
  }
}

static void on_exec(int status, const struct gq_exec_credential *cred,
                    const char *err, void *arg)
{
  struct gq_kclient *c = arg;

  c->exec_running = 0;
  if (status == 0) {
    gq_exec_credential_release(&c->cred);
    c->cred.token = cred->token ? gq_xstrdup(cred->token) : NULL;
    c->cred.cert_data = cred->cert_data ? gq_xstrdup(cred->cert_data) : NULL;
    c->cred.key_data = cred->key_data ? gq_xstrdup(cred->key_data) : NULL;
    c->cred.expires_ms = cred->expires_ms;
    set_token(c, c->cred.token);
    if (c->cred.cert_data && c->cred.key_data) {
      c->tls.cert = (const unsigned char *)c->cred.cert_data;
      c->tls.cert_len = strlen(c->cred.cert_data);
      c->tls.key = (const unsigned char *)c->cred.key_data;
      c->tls.key_len = strlen(c->cred.key_data);
    }
  } else {
    GQ_LOG(GQ_ERROR, &lc, "credential plugin failed: %s", err);
  }
  dispatch_waiting(c, status, err);
}

/* Sends r now, or after the exec plugin has produced a credential. */
static void with_credentials(struct kreq *r)
{
  struct gq_kclient *c = r->c;
  int rc;

  if (!c->cfg->exec ||
      gq_exec_credential_valid(&c->cred, gq_clock_real_ms())) {
    send_req(r);
    return;
  }
  r->wnext = c->waiting;
  c->waiting = r;
  if (c->exec_running)
    return;
  rc = gq_exec_run(c->loop, c->cfg->exec, c->cfg->server, on_exec, c);
  if (rc == 0)
    c->exec_running = 1;
  else
    dispatch_waiting(c, rc, "exec plugin could not be started");
}

/* --- requests --- */

static void req_free(uv_handle_t *h)
{
  struct kreq *r = h->data;

  free(r->method);
  free(r->url);
  free(r->body);
  free(r->ctype);
  free(r);
}

/* Ends a request: unlinks it and frees it once its timer has closed. */
static void req_end(struct kreq *r)
{
  struct gq_kclient *c = r->c;

  if (r->prev)
    r->prev->next = r->next;
  else
    c->reqs = r->next;
  if (r->next)
    r->next->prev = r->prev;
  uv_close((uv_handle_t *)&r->timer, req_free);
}

static void on_timer(uv_timer_t *t)
{
  with_credentials(t->data);
}

static void later(struct kreq *r, uint64_t ms)
{
  uv_timer_start(&r->timer, on_timer, ms, 0);
}

/* A transport failure, worded for operators: which server, and for TLS
 * which CA did not vouch for it. */
static void transport_message(const struct kreq *r, int rc, const char *err,
                              struct gq_k8s_status *st)
{
  const struct gq_kubeconfig *cfg = r->c->cfg;

  if (strstr(err, "certificate") || strstr(err, "SSL"))
    snprintf(st->message, sizeof(st->message),
             "cannot verify the server %s with the CA from %s: %s",
             cfg->server, cfg->ca_file ? cfg->ca_file
                          : cfg->ca_data ? "the kubeconfig's "
                                           "certificate-authority-data"
                                         : "the system's trust store",
             err);
  else
    snprintf(st->message, sizeof(st->message), "%s %s: %s (%s)", r->method,
             r->url, err && *err ? err : gq_strerror(rc), gq_strerror(rc));
}

static void finish_req(struct kreq *r, int rc, struct gq_k8s_status *st,
                       const json_t *obj)
{
  if (r->cb)
    r->cb(rc, st, obj, r->arg);
  req_end(r);
}

static void on_done(int rc, long status, const char *body, size_t len,
                    const char *retry_after, const char *err, void *arg)
{
  struct kreq *r = arg;
  struct gq_kclient *c = r->c;
  struct gq_k8s_status st;
  json_t *obj = NULL;
  int64_t delay = 0;

  r->call = NULL;
  if (r->on_wire) {
    r->on_wire = 0;
    c->inflight--;
    c->inflight_low -= r->prio == GQ_KPRIO_LOW;
  }
  memset(&st, 0, sizeof(st));
  if (rc == GQ_ECANCELED || c->closing) {
    snprintf(st.message, sizeof(st.message), "canceled");
    finish_req(r, GQ_ECANCELED, &st, NULL);
    return;
  }
  if (rc == 0) {
    /* parsed once, for the Status and the callback; not at all for a
     * success whose caller said it ignores the body */
    int ok = status >= 200 && status < 300;

    if (len && r->drop_mf && ok) {
      char *cut = gq_xmalloc(len);

      obj = json_loadb(cut, gq_json_drop_managed_fields(body, len, cut), 0,
                       NULL);
      free(cut);
    } else if (len && !(r->no_body && ok)) {
      obj = json_loadb(body, len, 0, NULL);
    }
    rc = gq_status_decode_doc(status, body, len, obj, &st);
  } else {
    transport_message(r, rc, err, &st);
  }
  if (rc == GQ_EUNAUTHORIZED && c->cfg->exec && !r->reauth++) {
    c->cred.expires_ms = 1; /* expired: run the plugin again */
    later(r, 0);
  } else if (rc != 0 && gq_should_retry(rc, r->idempotent) &&
             r->attempt++ < c->o.max_retries) {
    if (retry_after)
      gq_retry_after_parse(retry_after, gq_clock_real_ms(), &delay);
    later(r, gq_backoff_next_at_least(&r->bo, (uint64_t)delay));
  } else {
    finish_req(r, rc, &st, obj);
  }
  json_decref(obj);
  pump(c); /* its place in the window is free */
}

static int on_watch_chunk(const char *p, size_t n, void *arg);
static void on_watch_done(int rc, long status, const char *body, size_t len,
                          const char *retry_after, const char *err,
                          void *arg);

/* Puts r on the wire (it has its token and its place in the window). */
static void start_req(struct kreq *r)
{
  struct gq_kclient *c = r->c;
  struct gq_hclient_opts o = {
      .method = r->method, .url = r->url, .body = r->body,
      .body_len = r->body_len, .content_type = r->ctype, .bearer = c->token,
      .tls = &c->tls, .timeout_ms = r->watch ? 0 : c->o.timeout_ms,
      .max_body = c->o.max_body};

  r->call = gq_hclient_do(c->http, &o, r->watch ? on_watch_chunk : NULL,
                          r->watch ? on_watch_done : on_done, r);
  if (!r->call) {
    struct gq_k8s_status st = {.code = 0};

    snprintf(st.message, sizeof(st.message), "client is closing");
    fail_req(r, GQ_ECANCELED, &st);
    return;
  }
  if (!r->watch) {
    r->on_wire = 1;
    c->inflight++;
    c->inflight_low += r->prio == GQ_KPRIO_LOW;
  }
  if (r->sent) {
    void (*sent)(void *) = r->sent;

    r->sent = NULL; /* once, not again for a retry */
    sent(r->arg);
  }
}

/* Whether r may go on the wire now (watches always may). */
static int window_open(const struct gq_kclient *c, const struct kreq *r)
{
  if (r->watch)
    return 1;
  if (c->o.max_inflight > 0 && c->inflight >= (unsigned)c->o.max_inflight)
    return 0;
  return r->prio != GQ_KPRIO_LOW || c->o.max_inflight_low <= 0 ||
         c->inflight_low < (unsigned)c->o.max_inflight_low;
}

/* Takes r out of its priority's queue (p: where it was found). */
static void unqueue(struct gq_kclient *c, struct kreq *r)
{
  struct kreq **pp = &c->qh[r->prio], *prev = NULL;

  while (*pp && *pp != r) {
    prev = *pp;
    pp = &(*pp)->qnext;
  }
  if (!*pp)
    return;
  *pp = r->qnext;
  if (c->qt[r->prio] == r)
    c->qt[r->prio] = prev;
  r->qnext = NULL;
  r->queued = 0;
}

static void on_rl_timer(uv_timer_t *t)
{
  pump(t->data);
}

/* Sends waiting requests, highest priority first, while the bucket has
 * tokens and the window has room (watches are long-lived streams: they take
 * a token but no place in the window). */
static void pump(struct gq_kclient *c)
{
  while (!c->closing) {
    struct kreq *r = NULL;
    int64_t wait;

    for (int p = 0; p < GQ_KPRIO_N && !r; p++)
      if (c->qh[p] && window_open(c, c->qh[p]))
        r = c->qh[p];
    if (!r)
      return;
    /* reports leave a tenth of the burst to the others, so that a pod
     * create finds a token at once while status writes keep the bucket
     * drained */
    wait = gq_ratelimit_try_above(&c->rl, gq_clock_mono_ms(),
                                  r->prio == GQ_KPRIO_LOW ? c->o.burst / 10
                                                          : 0);
    if (wait > 0) {
      if (!uv_is_active((uv_handle_t *)&c->rl_timer))
        uv_timer_start(&c->rl_timer, on_rl_timer, (uint64_t)wait, 0);
      return;
    }
    unqueue(c, r);
    start_req(r);
  }
}

/* Queues r for its token and its place in the window. */
static void send_req(struct kreq *r)
{
  struct gq_kclient *c = r->c;

  r->queued = 1;
  r->qnext = NULL;
  if (c->qt[r->prio])
    c->qt[r->prio]->qnext = r;
  else
    c->qh[r->prio] = r;
  c->qt[r->prio] = r;
  pump(c);
}

/* Ends a request that never reached the server (credentials, closing). */
static void fail_req(struct kreq *r, int rc, struct gq_k8s_status *st)
{
  if (r->watch) {
    struct gq_kwatch *w = r->watch;

    w->end(rc, w->rv, w->arg);
    gq_ndjson_release(&w->framer);
    free(w->scratch);
    free(w);
    r->watch = NULL;
    req_end(r);
    return;
  }
  finish_req(r, rc, st, NULL);
}

static struct kreq *new_req(struct gq_kclient *c, const char *method,
                            const char *path, const json_t *body,
                            const char *ctype,
                            const struct gq_kclient_call *how,
                            gq_kclient_cb cb, void *arg)
{
  struct kreq *r = gq_xcalloc(1, sizeof(*r));

  r->c = c;
  r->prio = how && how->prio >= 0 && how->prio < GQ_KPRIO_N ? how->prio
                                                          : GQ_KPRIO_NORMAL;
  r->no_body = how && how->no_body;
  r->drop_mf = how && how->drop_managed_fields;
  r->sent = how ? how->sent : NULL;
  r->method = gq_xstrdup(method);
  r->url = gq_xasprintf("%s%s", c->cfg->server, path);
  if (body) {
    r->body = json_dumps(body, JSON_COMPACT);
    r->body_len = strlen(r->body);
    r->ctype = gq_xstrdup(ctype ? ctype : "application/json");
  }
  /* Safe to repeat: reads, and PUT/DELETE (the server applies them
   * idempotently); POST and PATCH retry only when the server says it did
   * not process them (429, Retry-After), as client-go does. */
  r->idempotent = !strcmp(method, "GET") || !strcmp(method, "PUT") ||
                  !strcmp(method, "DELETE");
  r->cb = cb;
  r->arg = arg;
  gq_backoff_init(&r->bo, c->o.backoff_ms, c->o.backoff_max_ms, 2.0, 1.0, 0);
  uv_timer_init(c->loop, &r->timer);
  r->timer.data = r;
  r->next = c->reqs;
  if (r->next)
    r->next->prev = r;
  c->reqs = r;
  return r;
}

int gq_kclient_request_how(struct gq_kclient *c, const char *method,
                           const char *path, const json_t *body,
                           const char *content_type,
                           const struct gq_kclient_call *how,
                           gq_kclient_cb cb, void *arg)
{
  if (c->closing || !cb || !path || path[0] != '/')
    return GQ_EINVAL;
  later(new_req(c, method, path, body, content_type, how, cb, arg), 0);
  return 0;
}

int gq_kclient_request(struct gq_kclient *c, const char *method,
                       const char *path, const json_t *body,
                       const char *content_type, gq_kclient_cb cb, void *arg)
{
  return gq_kclient_request_how(c, method, path, body, content_type, NULL,
                                cb, arg);
}

int gq_kclient_get(struct gq_kclient *c, const char *path, gq_kclient_cb cb,
                   void *arg)
{
  return gq_kclient_request(c, "GET", path, NULL, NULL, cb, arg);
}

int gq_kclient_create(struct gq_kclient *c, const char *collection,
                      const json_t *obj, gq_kclient_cb cb, void *arg)
{
  return gq_kclient_create_how(c, collection, obj, NULL, cb, arg);
}

int gq_kclient_create_how(struct gq_kclient *c, const char *collection,
                          const json_t *obj, const struct gq_kclient_call *how,
                          gq_kclient_cb cb, void *arg)
{
  return gq_kclient_request_how(c, "POST", collection, obj, NULL, how, cb,
                                arg);
}

int gq_kclient_update(struct gq_kclient *c, const char *path,
                      const json_t *obj, gq_kclient_cb cb, void *arg)
{
  return gq_kclient_request(c, "PUT", path, obj, NULL, cb, arg);
}

int gq_kclient_patch(struct gq_kclient *c, const char *path, const char *type,
                     const json_t *patch, gq_kclient_cb cb, void *arg)
{
  return gq_kclient_patch_how(c, path, type, patch, NULL, cb, arg);
}

int gq_kclient_patch_how(struct gq_kclient *c, const char *path,
                         const char *type, const json_t *patch,
                         const struct gq_kclient_call *how, gq_kclient_cb cb,
                         void *arg)
{
  const char *ct = !strcmp(type, "json") ? "application/json-patch+json"
                   : !strcmp(type, "merge") ? "application/merge-patch+json"
                                            : NULL;

  if (!ct)
    return GQ_EINVAL;
  return gq_kclient_request_how(c, "PATCH", path, patch, ct, how, cb, arg);
}

int gq_kclient_delete(struct gq_kclient *c, const char *path, int64_t grace_s,
                      const char *uid, gq_kclient_cb cb, void *arg)
{
  return gq_kclient_delete_how(c, path, grace_s, uid, NULL, cb, arg);
}

int gq_kclient_delete_how(struct gq_kclient *c, const char *path,
                          int64_t grace_s, const char *uid,
                          const struct gq_kclient_call *how, gq_kclient_cb cb,
                          void *arg)
{
  json_t *opts = json_pack("{s:s, s:s, s:s}", "kind", "DeleteOptions",
                           "apiVersion", "v1", "propagationPolicy",
                           "Background");
  int rc;

  if (grace_s >= 0)
    json_object_set_new(opts, "gracePeriodSeconds", json_integer(grace_s));
  if (uid)
    json_object_set_new(opts, "preconditions", json_pack("{s:s}", "uid", uid));
  rc = gq_kclient_request_how(c, "DELETE", path, opts, NULL, how, cb, arg);
  json_decref(opts);
  return rc;
}

int gq_kclient_evict(struct gq_kclient *c, const char *ns, const char *name,
                     int64_t grace_s, gq_kclient_cb cb, void *arg)
{
  json_t *ev = json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion", "policy/v1",
                         "kind", "Eviction", "metadata", "name", name,
                         "namespace", ns);
  char path[600];
  int rc;

  if (grace_s >= 0)
    json_object_set_new(ev, "deleteOptions",
                        json_pack("{s:I}", "gracePeriodSeconds",
                                  (json_int_t)grace_s));
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s/eviction", ns,
           name);
  rc = gq_kclient_request(c, "POST", path, ev, NULL, cb, arg);
  json_decref(ev);
  return rc;
}

int gq_kclient_event(struct gq_kclient *c, const json_t *obj,
                     const char *type, const char *reason,
                     const char *message, const char *component,
                     gq_kclient_cb cb, void *arg)
{
  return gq_kclient_event_how(c, obj, type, reason, message, component, NULL,
                              cb, arg);
}

int gq_kclient_event_how(struct gq_kclient *c, const json_t *obj,
                         const char *type, const char *reason,
                         const char *message, const char *component,
                         const struct gq_kclient_call *how, gq_kclient_cb cb,
                         void *arg)
{
  const json_t *m = json_object_get(obj, "metadata");
  const char *ns = json_string_value(json_object_get(m, "namespace"));
  const char *name = json_string_value(json_object_get(m, "name"));
  char ts[40], mts[40], ev_name[300], path[400];
  json_t *ev;
  int rc;

  if (!name)
    return GQ_EINVAL;
  if (!ns || !*ns)
    ns = "default"; /* events about cluster-scoped objects live there */
  gq_time_format(gq_clock_now_ms(), ts, sizeof(ts));
  gq_time_format_micro(gq_clock_now_ms(), mts, sizeof(mts));
  /* Unique per event, like client-go's "<name>.<unix nanos in hex>". */
  snprintf(ev_name, sizeof(ev_name), "%s.%llx", name,
           (unsigned long long)gq_clock_real_ms() * 1000000ULL +
               (unsigned long long)(rand() % 1000000));
  ev = json_pack(
      "{s:s, s:s, s:{s:s, s:s}, s:{s:O?, s:O?, s:s, s:s, s:O?}, s:s, s:s, "
      "s:s, s:{s:s}, s:s, s:s, s:s, s:i}",
      "apiVersion", "v1", "kind", "Event", "metadata", "name", ev_name,
      "namespace", ns, "involvedObject", "apiVersion",
      json_object_get(obj, "apiVersion"), "kind", json_object_get(obj, "kind"),
      "name", name, "namespace", ns, "uid", json_object_get(m, "uid"), "type",
      type, "reason", reason, "message", message, "source", "component",
      component, "reportingComponent", component, "firstTimestamp", ts,
      "lastTimestamp", ts, "count", 1);
  json_object_set_new(ev, "eventTime", json_string(mts));
  snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", ns);
  rc = gq_kclient_create_how(c, path, ev, how, cb, arg);
  json_decref(ev);
  return rc;
}

/* --- lists, page by page --- */

struct lister {
  struct gq_kclient *c;
  char *base;         /* path?selectors&limit=N */
  struct gq_kclient_call how; /* NORMAL, managedFields dropped or not */
  gq_kclient_page_cb page;
  void *arg;
};

/* Appends "&key=escaped(value)" (or "?") to a query being built. */
static void query_add(struct gq_buf *b, const char *key, const char *value)
{
  char *esc = curl_easy_escape(NULL, value, 0);

  gq_buf_printf(b, "%s%s=%s", strchr(gq_buf_str(b), '?') ? "&" : "?", key,
                esc ? esc : "");
  curl_free(esc);
}

static void on_page(int rc, const struct gq_k8s_status *st, const json_t *obj,
                    void *arg)
{
  struct lister *l = arg;
  const char *cont = json_string_value(
      json_object_get(json_object_get(obj, "metadata"), "continue"));
  const char *rv = json_string_value(
      json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));

  if (rc == 0 && cont && *cont) {
    struct gq_buf b;

    l->page(0, NULL, json_object_get(obj, "items"), NULL, 0, l->arg);
    gq_buf_init(&b, 1u << 20);
    gq_buf_puts(&b, l->base);
    query_add(&b, "continue", cont);
    rc = gq_kclient_request_how(l->c, "GET", gq_buf_str(&b), NULL, NULL,
                                &l->how, on_page, l);
    gq_buf_release(&b);
    if (rc == 0)
      return;
    st = NULL;
  }
  l->page(rc, st, rc == 0 ? json_object_get(obj, "items") : NULL,
          rv ? rv : "", 1, l->arg);
  free(l->base);
  free(l);
}

int gq_kclient_list_pages(struct gq_kclient *c, const char *path,
                          const char *label_selector,
                          const char *field_selector, long limit,
                          int drop_managed_fields, gq_kclient_page_cb page,
                          void *arg)
{
  struct lister *l = gq_xcalloc(1, sizeof(*l));
  struct gq_buf b;
  char lim[32];
  int rc;

  gq_buf_init(&b, 1u << 20);
  gq_buf_puts(&b, path);
  if (label_selector && *label_selector)
    query_add(&b, "labelSelector", label_selector);
  if (field_selector && *field_selector)
    query_add(&b, "fieldSelector", field_selector);
  snprintf(lim, sizeof(lim), "%ld", limit > 0 ? limit : 500);
  query_add(&b, "limit", lim);
  l->c = c;
  l->base = gq_buf_take(&b);
  l->page = page;
  l->arg = arg;
  l->how.prio = GQ_KPRIO_NORMAL;
  l->how.drop_managed_fields = drop_managed_fields;
  rc = gq_kclient_request_how(c, "GET", l->base, NULL, NULL, &l->how, on_page,
                              l);
  if (rc != 0) {
    free(l->base);
    free(l);
  }
  return rc;
}

/* gq_kclient_list: the pages gathered into one array. */
struct gather {
  json_t *items;
  gq_kclient_cb cb;
  void *arg;
};

static void gather_page(int rc, const struct gq_k8s_status *st,
                        const json_t *items, const char *rv, int last,
                        void *arg)
{
  struct gather *g = arg;
  json_t *out;

  if (rc == 0)
    json_array_extend(g->items, (json_t *)items);
  if (!last)
    return;
  out = json_pack("{s:O, s:s}", "items", g->items, "resourceVersion", rv);
  if (rc == 0) {
    g->cb(0, st, out, g->arg);
  } else {
    struct gq_k8s_status none = {0};

    g->cb(rc, st ? st : &none, NULL, g->arg);
  }
  json_decref(out);
  json_decref(g->items);
  free(g);
}

int gq_kclient_list(struct gq_kclient *c, const char *path,
                    const char *label_selector, const char *field_selector,
                    long limit, gq_kclient_cb cb, void *arg)
{
  struct gather *g = gq_xcalloc(1, sizeof(*g));
  int rc;

  g->items = json_array();
  g->cb = cb;
  g->arg = arg;
  rc = gq_kclient_list_pages(c, path, label_selector, field_selector, limit, 0,
                             gather_page, g);
  if (rc != 0) {
    json_decref(g->items);
    free(g);
  }
  return rc;
}

/* --- watches --- */

static int on_line(const char *line, size_t len, void *arg)
{
  struct gq_kwatch *w = arg;
  enum gq_watch_type type;
  json_t *obj = NULL;
  char rv[64], err[256];
  struct gq_k8s_status st;

  if (w->drop_mf) { /* one pass over the line: less than parsing it */
    if (w->scratch_len < len) {
      w->scratch = gq_xrealloc(w->scratch, len);
      w->scratch_len = len;
    }
    len = gq_json_drop_managed_fields(line, len, w->scratch);
    line = w->scratch;
  }
  if (gq_watch_event_decode(line, len, &type, &obj, rv, err, sizeof(err))) {
    GQ_LOG(GQ_WARN, &lc, "%s", err);
    w->err = GQ_EPARSE;
    return 1;
  }
  if (type == GQ_WATCH_ERROR) {
    w->err = gq_status_from_json(obj, &st);
    json_decref(obj);
    return 1; /* e.g. 410 Expired: the caller relists */
  }
  if (*rv)
    snprintf(w->rv, sizeof(w->rv), "%s", rv);
  if (type != GQ_WATCH_BOOKMARK)
    w->ev(type, obj, w->arg);
  json_decref(obj);
  return 0;
}

static int on_watch_chunk(const char *p, size_t n, void *arg)
{
  struct kreq *r = arg;
  int rc = gq_ndjson_feed(&r->watch->framer, p, n, on_line, r->watch);

  if (rc == GQ_ETOOBIG) {
    char msg[128];

    GQ_LOG(GQ_WARN, &lc, "%s; the watch %s restarts",
           gq_ndjson_limit_msg(&r->watch->framer, msg, sizeof(msg)), r->url);
  }
  if (rc < 0 && !r->watch->err)
    r->watch->err = rc; /* an over-long line: GQ_ETOOBIG */
  return rc != 0;
}

static void on_watch_done(int rc, long status, const char *body, size_t len,
                          const char *retry_after, const char *err, void *arg)
{
  struct kreq *r = arg;
  struct gq_kwatch *w = r->watch;
  struct gq_k8s_status st;

  (void)retry_after;
  (void)err;
  r->call = NULL;
  if (w->err)
    rc = w->err;
  else if (rc == GQ_ECANCELED || rc < 0)
    ; /* stopped, or the connection broke: the caller resumes */
  else if (status != 200)
    rc = gq_status_decode(status, body, len, &st);
  else
    gq_ndjson_finish(&w->framer, on_line, w);
  fail_req(r, rc == 0 && w->err ? w->err : rc, NULL);
}

struct gq_kwatch *gq_kwatch_start(struct gq_kclient *c,
                                  const struct gq_kwatch_opts *o,
                                  gq_kwatch_event_cb ev, gq_kwatch_end_cb end,
                                  void *arg)
{
  struct gq_kwatch *w;
  struct gq_buf b;
  char to[32];
  struct kreq *r;

  if (c->closing || !o->path || !ev || !end)
    return NULL;
  gq_buf_init(&b, 1u << 20);
  gq_buf_puts(&b, o->path);
  query_add(&b, "watch", "true");
  if (o->resource_version && *o->resource_version)
    query_add(&b, "resourceVersion", o->resource_version);
  if (o->label_selector && *o->label_selector)
    query_add(&b, "labelSelector", o->label_selector);
  if (o->field_selector && *o->field_selector)
    query_add(&b, "fieldSelector", o->field_selector);
  if (o->bookmarks)
    query_add(&b, "allowWatchBookmarks", "true");
  snprintf(to, sizeof(to), "%lld",
           (long long)(o->timeout_s > 0 ? o->timeout_s
                                        : gq_watch_timeout_s(
                                              (double)rand() / RAND_MAX)));
  query_add(&b, "timeoutSeconds", to);
  w = gq_xcalloc(1, sizeof(*w));
  w->ev = ev;
  w->end = end;
  w->arg = arg;
  w->drop_mf = o->drop_managed_fields;
  snprintf(w->rv, sizeof(w->rv), "%s",
           o->resource_version ? o->resource_version : "");
  gq_ndjson_init(&w->framer, c->o.max_line);
  r = new_req(c, "GET", gq_buf_str(&b), NULL, NULL, NULL, NULL, NULL);
  gq_buf_release(&b);
  r->watch = w;
  w->r = r;
  later(r, 0);
  return w;
}

void gq_kwatch_stop(struct gq_kwatch *w)
{
  struct kreq *r = w->r;

  if (r->call) {
    gq_hclient_cancel(r->call); /* on_watch_done ends it */
  } else if (r->queued) {
    unqueue(r->c, r);
    fail_req(r, GQ_ECANCELED, NULL);
  } else if (uv_is_active((uv_handle_t *)&r->timer)) {
    uv_timer_stop(&r->timer);
    fail_req(r, GQ_ECANCELED, NULL);
  }
}

/* --- the client --- */

static void defaults(struct gq_kclient_opts *o)
{
  if (o->qps == 0)
    o->qps = 5;
  if (o->burst <= 0)
    o->burst = 10;
  if (o->max_retries <= 0)
    o->max_retries = 10;
  if (!o->backoff_ms)
    o->backoff_ms = 200;
  if (!o->backoff_max_ms)
    o->backoff_max_ms = 30000;
  if (o->timeout_ms <= 0)
    o->timeout_ms = 30000;
  if (!o->max_body)
    o->max_body = 64u << 20;
  if (!o->max_line)
    o->max_line = 16u << 20;
  if (o->max_inflight == 0)
    o->max_inflight = MAX_INFLIGHT;
  if (o->max_inflight_low == 0)
    o->max_inflight_low = MAX_INFLIGHT_LOW;
}

static void describe_auth(struct gq_kclient *c)
{
  const struct gq_kubeconfig *k = c->cfg;

  if (k->exec)
    snprintf(c->auth, sizeof(c->auth), "exec plugin %s", k->exec->command);
  else if (k->token_file)
    snprintf(c->auth, sizeof(c->auth), "token file %s", k->token_file);
  else if (k->token)
    snprintf(c->auth, sizeof(c->auth), "bearer token");
  else if (k->cert_data)
    snprintf(c->auth, sizeof(c->auth), "client certificate");
  else
    snprintf(c->auth, sizeof(c->auth), "anonymous");
}

int gq_kclient_new(uv_loop_t *loop, const struct gq_kubeconfig *cfg,
                   const struct gq_kclient_opts *opts,
                   struct gq_kclient **out, char *err, size_t errlen)
{
  struct gq_kclient *c;

  if (!cfg->server || !*cfg->server) {
    snprintf(err, errlen, "%s: no server", cfg->source ? cfg->source : "config");
    return GQ_EINVAL;
  }
  c = gq_xcalloc(1, sizeof(*c));
  c->loop = loop;
  c->cfg = cfg;
  if (opts)
    c->o = *opts;
  defaults(&c->o);
  gq_ratelimit_init(&c->rl, c->o.qps, c->o.burst, gq_clock_mono_ms());
  c->tls = (struct gq_hclient_tls){cfg->ca_data, cfg->ca_len, cfg->insecure,
                                   cfg->tls_server_name, cfg->cert_data,
                                   cfg->key_data, cfg->cert_len, cfg->key_len};
  gq_hclient_new(loop, c->o.user_agent ? c->o.user_agent : "gpuq/0.1",
                 &c->http);
  uv_timer_init(loop, &c->token_timer);
  c->token_timer.data = c;
  uv_timer_init(loop, &c->rl_timer);
  c->rl_timer.data = c;
  set_token(c, cfg->token);
  if (cfg->token_file) {
    reload_token(c);
    uv_timer_start(&c->token_timer, on_token_timer, TOKEN_RELOAD_MS,
                   TOKEN_RELOAD_MS);
  }
  describe_auth(c);
  *out = c;
  return 0;
}

unsigned gq_kclient_inflight(const struct gq_kclient *c)
{
  return c->inflight;
}

const char *gq_kclient_auth_mode(const struct gq_kclient *c)
{
  return c->auth;
}

uv_loop_t *gq_kclient_loop(const struct gq_kclient *c)
{
  return c->loop;
}

const char *gq_kclient_server(const struct gq_kclient *c)
{
  return c->cfg->server;
}

static void on_client_closed(uv_handle_t *h)
{
  struct gq_kclient *c = h->data;

  if (--c->pending_closes > 0)
    return;
  free(c->token);
  gq_exec_credential_release(&c->cred);
  free(c);
}

void gq_kclient_close(struct gq_kclient *c)
{
  struct gq_k8s_status st;

  if (!c || c->closing)
    return;
  c->closing = 1;
  memset(&st, 0, sizeof(st));
  snprintf(st.message, sizeof(st.message), "client closed");
  while (c->waiting) { /* waiting on the exec plugin */
    struct kreq *r = c->waiting;

    c->waiting = r->wnext;
    fail_req(r, GQ_ECANCELED, &st);
  }
  for (int p = 0; p < GQ_KPRIO_N; p++) /* waiting for a token or the window */
    while (c->qh[p]) {
      struct kreq *r = c->qh[p];

      unqueue(c, r);
      fail_req(r, GQ_ECANCELED, &st);
    }
  for (struct kreq *r = c->reqs, *next; r; r = next) {
    next = r->next;
    if (!r->call && uv_is_active((uv_handle_t *)&r->timer)) {
      uv_timer_stop(&r->timer);
      fail_req(r, GQ_ECANCELED, &st);
    }
  }
  gq_hclient_close(c->http); /* in-flight calls end with GQ_ECANCELED */
  c->pending_closes = 2;
  uv_close((uv_handle_t *)&c->token_timer, on_client_closed);
  uv_close((uv_handle_t *)&c->rl_timer, on_client_closed);
}
