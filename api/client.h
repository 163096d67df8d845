/* api/client.h - a Kubernetes API client on the libuv loop: what
 * client-go's rest client does for a controller, in C.
 *
 * Built on api/hclient (curl multi on libuv) and configured from a
 * struct gq_kubeconfig (kubeconfig or in-cluster). It authenticates with a
 * bearer token (static, a token file re-read every minute as projected
 * service-account tokens rotate, or an exec credential plugin re-run when
 * its credential expires) or a client certificate; verifies TLS unless
 * the kubeconfig says otherwise; limits its request rate (token bucket,
 * QPS and burst) and the requests on the wire at once (a window, so that a
 * server is never flooded with connections), handing the next token to the
 * waiting request of the highest priority (writes that move work, such as
 * pod creates, ahead of status and event writes); retries 429, 5xx and
 * network errors with exponential backoff and jitter, honoring
 * Retry-After, for requests that are safe to repeat; decodes Kubernetes
 * Status bodies into code, reason and message; and caps every buffer.
 *
 * Every call takes a callback that runs exactly once and never
 * synchronously. The object passed to it is borrowed, valid only during
 * the call (jansson: incref to keep it). Loop thread only.
 */
#ifndef GQ_API_CLIENT_H
#define GQ_API_CLIENT_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "api/kubeconfig.h"
#include "api/wire.h"

struct gq_kclient;
struct gq_kwatch;

struct gq_kclient_opts {
  double qps;            /* requests per second; <= 0: unlimited (5) */
  int burst;             /* bucket size (10) */
  int max_retries;       /* per request (10, as client-go) */
  uint64_t backoff_ms;   /* first retry delay (200 ms) */
  uint64_t backoff_max_ms; /* cap (30 s) */
  long timeout_ms;       /* per request (30 s) */
  size_t max_body;       /* response cap (64 MiB) */
  size_t max_line;       /* watch event cap (16 MiB) */
  int max_inflight;      /* requests on the wire at once, watches not
                            counted (64); < 0: no bound */
  int max_inflight_low;  /* of those, GQ_KPRIO_LOW ones (4), so that a
                            single-threaded server never has more than a
                            few reports queued ahead of a pod create;
                            < 0: no bound of their own */
  const char *user_agent;
};

/* Priorities: a request waiting for a token of the bucket (or a place in
 * the window) is sent before every waiting request of a lower priority,
 * first come first served within one priority. Watches, lists and the
 * verbs without _how are NORMAL. */
enum gq_kclient_prio {
  GQ_KPRIO_HIGH,   /* writes that start or stop work: pods, finalizers */
  GQ_KPRIO_NORMAL, /* reads, leases, everything not said otherwise */
  GQ_KPRIO_LOW,    /* reports: status, events */
  GQ_KPRIO_N
};

/* How one request is treated (NULL = NORMAL, body parsed). */
struct gq_kclient_call {
  enum gq_kclient_prio prio;
  int no_body; /* the callback ignores the body of a success: it is not
                  parsed and obj is NULL (errors are still decoded) */
  /* NULL, or called once, with the request's arg, when the request first
   * goes on the wire (it has its token and its place in the window): the
   * end of the caller's own latency, before the server's. Never after the
   * request's callback. */
  void (*sent)(void *arg);
  int drop_managed_fields; /* a 2xx body is parsed without its
                              metadata.managedFields members, cut from the
                              text first (gq_json_drop_managed_fields()) */
};

/* The outcome of a call: rc 0, or a negative GQ_E* (GQ_ENOTFOUND,
 * GQ_ECONFLICT, GQ_EEXIST, GQ_EGONE, GQ_EUNAUTHORIZED, ... from the
 * server's Status; GQ_EUNAVAIL, GQ_ETIMEDOUT, GQ_EIO for transport
 * failures; GQ_ECANCELED on close). st holds the server's code, reason and
 * message (or the transport error in message). obj is the response body
 * (NULL if none or not JSON). All borrowed, valid during the call. */
typedef void (*gq_kclient_cb)(int rc, const struct gq_k8s_status *st,
                              const json_t *obj, void *arg);

/* Creates a client for cfg (copied). opts NULL = defaults. Returns 0, or
 * GQ_EINVAL with a message in err (e.g. no server). */
int gq_kclient_new(uv_loop_t *loop, const struct gq_kubeconfig *cfg,
                   const struct gq_kclient_opts *opts,
                   struct gq_kclient **out, char *err, size_t errlen);

/* Cancels everything (callbacks get GQ_ECANCELED) and frees the client
 * once its handles have closed (run the loop). */
void gq_kclient_close(struct gq_kclient *c);

/* Requests on the wire now (watches not counted; at most max_inflight). */
unsigned gq_kclient_inflight(const struct gq_kclient *c);

/* How the client authenticates, for messages: "bearer token", "token file
 * /path", "exec plugin cmd", "client certificate", or "anonymous". */
const char *gq_kclient_auth_mode(const struct gq_kclient *c);
/* The loop the client runs on. */
uv_loop_t *gq_kclient_loop(const struct gq_kclient *c);
/* The server URL. */
const char *gq_kclient_server(const struct gq_kclient *c);

/* A request: method, path with query ("/api/v1/nodes?limit=500"), body
 * (borrowed; NULL = none) with its content type (NULL =
 * application/json). Returns 0, or an error (then cb is never called). */
int gq_kclient_request(struct gq_kclient *c, const char *method,
                       const char *path, const json_t *body,
                       const char *content_type, gq_kclient_cb cb, void *arg);

/* gq_kclient_request() with a priority and body handling (how NULL = the
 * defaults); the same returns. */
int gq_kclient_request_how(struct gq_kclient *c, const char *method,
                           const char *path, const json_t *body,
                           const char *content_type,
                           const struct gq_kclient_call *how,
                           gq_kclient_cb cb, void *arg);

/* Verbs (paths as above; DELETE options per metav1.DeleteOptions). The
 * _how forms take a struct gq_kclient_call as gq_kclient_request_how()
 * does. */
int gq_kclient_get(struct gq_kclient *c, const char *path, gq_kclient_cb cb,
                   void *arg);
int gq_kclient_create(struct gq_kclient *c, const char *collection,
                      const json_t *obj, gq_kclient_cb cb, void *arg);
int gq_kclient_create_how(struct gq_kclient *c, const char *collection,
                          const json_t *obj, const struct gq_kclient_call *how,
                          gq_kclient_cb cb, void *arg);
int gq_kclient_update(struct gq_kclient *c, const char *path,
                      const json_t *obj, gq_kclient_cb cb, void *arg);
/* type: "merge" (RFC 7386) or "json" (RFC 6902). */
int gq_kclient_patch(struct gq_kclient *c, const char *path, const char *type,
                     const json_t *patch, gq_kclient_cb cb, void *arg);
int gq_kclient_patch_how(struct gq_kclient *c, const char *path,
                         const char *type, const json_t *patch,
                         const struct gq_kclient_call *how, gq_kclient_cb cb,
                         void *arg);
/* grace_s < 0: the object's default; uid NULL: no precondition. */
int gq_kclient_delete(struct gq_kclient *c, const char *path, int64_t grace_s,
                      const char *uid, gq_kclient_cb cb, void *arg);
int gq_kclient_delete_how(struct gq_kclient *c, const char *path,
                          int64_t grace_s, const char *uid,
                          const struct gq_kclient_call *how, gq_kclient_cb cb,
                          void *arg);
/* POST pods/NAME/eviction (policy/v1). 429 = a budget refused. */
int gq_kclient_evict(struct gq_kclient *c, const char *ns, const char *name,
                     int64_t grace_s, gq_kclient_cb cb, void *arg);

/* Records a core/v1 Event about obj (a stored object: its kind,
 * apiVersion, namespace, name and uid are referenced) with type "Normal"
 * or "Warning", a CamelCase reason and a message, from component
 * (source.component and reportingComponent). Timestamps follow the
 * virtual clock (base/clock.h). */
int gq_kclient_event(struct gq_kclient *c, const json_t *obj,
                     const char *type, const char *reason,
                     const char *message, const char *component,
                     gq_kclient_cb cb, void *arg);
int gq_kclient_event_how(struct gq_kclient *c, const json_t *obj,
                         const char *type, const char *reason,
                         const char *message, const char *component,
                         const struct gq_kclient_call *how, gq_kclient_cb cb,
                         void *arg);

/* List every page (limit per page; 0 = 500) of a collection path with
 * optional selectors (NULL = none). The callback gets a JSON object
 * {"items": [...], "resourceVersion": "..."} as obj. */
int gq_kclient_list(struct gq_kclient *c, const char *path,
                    const char *label_selector, const char *field_selector,
                    long limit, gq_kclient_cb cb, void *arg);

/* One page of a paged list: its items (borrowed, valid during the call);
 * last is 1 on the final call, which also carries the list's
 * resourceVersion (rv; NULL before) or, with rc != 0, the failure (st may
 * then be NULL when the next page could not be sent; items NULL). */
typedef void (*gq_kclient_page_cb)(int rc, const struct gq_k8s_status *st,
                                   const json_t *items, const char *rv,
                                   int last, void *arg);

/* Lists a collection page by page as gq_kclient_list() does, handing each
 * page to the callback as it arrives (so that only one page's JSON is held
 * at a time: an informer of 100k objects). drop_managed_fields: the pages
 * are parsed without the items' metadata.managedFields (informers never
 * read them; gq_kclient_call). Returns 0 or the error of the first request
 * (then the callback is never called). */
int gq_kclient_list_pages(struct gq_kclient *c, const char *path,
                          const char *label_selector,
                          const char *field_selector, long limit,
                          int drop_managed_fields, gq_kclient_page_cb page,
                          void *arg);

/* A watch event: type and object (borrowed, valid during the call). */
typedef void (*gq_kwatch_event_cb)(enum gq_watch_type type, const json_t *obj,
                                   void *arg);
/* The watch ended: rc 0 for a normal end (server timeout), GQ_EGONE for
 * 410 (relist needed), GQ_ECANCELED after gq_kwatch_stop(), or another
 * error. last_rv is the last resourceVersion seen (events or bookmarks). */
typedef void (*gq_kwatch_end_cb)(int rc, const char *last_rv, void *arg);

struct gq_kwatch_opts {
  const char *path;            /* collection path */
  const char *resource_version; /* resume point ("" = current state) */
  const char *label_selector, *field_selector; /* NULL = none */
  int bookmarks;               /* allowWatchBookmarks */
  int64_t timeout_s;           /* server timeout; 0 = 5..10 min jitter */
  int drop_managed_fields;     /* events come without metadata.managed-
                                  Fields, cut from the text before it is
                                  parsed (gq_json_drop_managed_fields();
                                  informers: they never read them) */
};

/* Starts a watch. Returns it, or NULL (end_cb never called). */
struct gq_kwatch *gq_kwatch_start(struct gq_kclient *c,
                                  const struct gq_kwatch_opts *o,
                                  gq_kwatch_event_cb ev, gq_kwatch_end_cb end,
                                  void *arg);
/* Stops a watch; its end callback runs later with GQ_ECANCELED. */
void gq_kwatch_stop(struct gq_kwatch *w);

#endif
