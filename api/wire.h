/* api/wire.h - the pure pieces of a Kubernetes API client.
 *
 * Everything here works on bytes and numbers handed in by the caller: no
 * I/O, no clock reads (the current time is a parameter), no logging, no
 * global state. The transport (curl on the loop) and the reflector build on
 * these pieces, and tests drive them with recorded apiserver traffic:
 *
 *   gq_ndjson_*        frames a watch response body into lines
 *   gq_watch_event_*   decodes one line into {type, object, resourceVersion}
 *   gq_status_*        turns an error response (metav1.Status) into GQ_E*
 *   gq_retry_*         Retry-After and which failures are worth retrying
 *   gq_ratelimit_*     client-side token bucket (client-go's QPS / burst)
 *   gq_watch_timeout_s jittered watch timeout, as the reflector picks it
 *
 * Structs are caller-allocated; only the framer owns memory (its partial
 * line), released by gq_ndjson_release(). Loop thread only, like the rest
 * of gpuq: nothing here locks.
 */
#ifndef GQ_API_WIRE_H
#define GQ_API_WIRE_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* ---- NDJSON framing ------------------------------------------------------
 *
 * A watch response is a stream of JSON documents, one per line
 * ("application/json;stream=watch"; the apiserver writes each event
 * followed by '\n'). The body arrives in chunks of any size, so a line may
 * be split anywhere, even inside a UTF-8 sequence or between '\r' and
 * '\n'. The framer carries the incomplete tail between feeds in a buffer
 * capped at max_line (+1 for a '\r'), so a server that never sends a
 * newline costs at most max_line bytes (STYLE Part 3, pitfall 4).
 */

/* Called once per complete, non-empty line. 'line' is NOT NUL-terminated
 * (it may point into the caller's chunk) and is valid only during the
 * call; the trailing "\n" or "\r\n" is not included. Return 0 to go on, or
 * any non-zero value to stop: feed then returns that value. */
typedef int (*gq_ndjson_line_cb)(const char *line, size_t len, void *arg);

struct gq_ndjson {
  struct gq_buf line; /* private: the incomplete line carried over */
  size_t max_line;    /* read-only: longest line accepted, in bytes */
};

/* Sets up an empty framer accepting lines of up to max_line bytes (not
 * counting the "\r\n"; max_line >= 1, 0 is taken as 1). */
void gq_ndjson_init(struct gq_ndjson *f, size_t max_line);

/* Feeds n bytes of body (p may be NULL when n == 0) and calls cb for each
 * line they complete, in order. A trailing '\r' is dropped and empty lines
 * are skipped. Returns:
 *   0            all bytes consumed; any incomplete line is kept
 *   GQ_ETOOBIG   a line exceeds max_line; nothing of it was delivered
 *   cb's value   cb returned non-zero
 * After a non-zero return the rest of the chunk is discarded and the
 * framer is empty: the stream cannot be resynchronised reliably, so the
 * caller should end it (the framer may then serve a new stream). cb must
 * not feed or finish 'f' itself; it may release it if it returns non-zero.
 */
int gq_ndjson_feed(struct gq_ndjson *f, const char *p, size_t n,
                   gq_ndjson_line_cb cb, void *arg);

/* Ends the stream: delivers a last line that had no newline, if any
 * (kubectl accepts a missing final newline; the apiserver always sends
 * one). Returns 0, GQ_ETOOBIG or cb's non-zero value as feed does. The
 * framer is empty afterwards, ready for a new stream. */
int gq_ndjson_finish(struct gq_ndjson *f, gq_ndjson_line_cb cb, void *arg);

/* Returns the number of bytes of an incomplete line being held (non-zero
 * when a stream ended mid-event). */
size_t gq_ndjson_pending(const struct gq_ndjson *f);

/* Words the GQ_ETOOBIG of f into buf (len bytes) and returns buf: "watch
 * event line exceeds the limit of N bytes (max_line)"; the caller adds
 * which watch. */
const char *gq_ndjson_limit_msg(const struct gq_ndjson *f, char *buf,
                                size_t len);

/* Frees the buffered line; f is empty and may be reused (max_line kept). */
void gq_ndjson_release(struct gq_ndjson *f);

/* Copies the JSON text in (len bytes) to out (room for len bytes) without
 * the metadata.managedFields members it holds: every member named
 * "managedFields" of an object that is the value of a member named
 * "metadata", at any depth (one object, a watch event's object, each item
 * of a list), with the comma that separated it. What client-go's
 * TransformStripManagedFields drops after decoding, dropped before, so that
 * an informer does not parse what it throws away (kube-apiserver and
 * gpuq-sim send managedFields on every object). Returns the bytes written.
 * Text that is not valid JSON is copied as it is from where that shows (a
 * string without its end, nesting deeper than 256): the parser then
 * reports it. in and out must not overlap. */
size_t gq_json_drop_managed_fields(const char *in, size_t len, char *out);

/* ---- watch events --------------------------------------------------------
 *
 * One line is {"type": T, "object": {...}} (metav1.WatchEvent). BOOKMARK
 * objects carry only apiVersion, kind and metadata.resourceVersion; the
 * ERROR object is a metav1.Status (decode it with gq_status_from_json()).
 */

enum gq_watch_type {
  GQ_WATCH_ADDED,
  GQ_WATCH_MODIFIED,
  GQ_WATCH_DELETED,
  GQ_WATCH_BOOKMARK,
  GQ_WATCH_ERROR
};

/* Size of the rv buffer of gq_watch_event_decode(), NUL included. The
 * apiserver's resourceVersions are decimal uint64 (<= 20 digits); others
 * (aggregated APIs) are opaque strings, which we still bound. */
#define GQ_RV_MAX 64

/* Returns "ADDED", "MODIFIED", ... (static; "UNKNOWN" out of range). */
const char *gq_watch_type_name(enum gq_watch_type t);

/* Decodes one watch line of len bytes (need not be NUL-terminated).
 * On success returns 0 and sets *type, *object (a NEW reference the caller
 * must json_decref; always a JSON object) and rv (GQ_RV_MAX bytes:
 * object.metadata.resourceVersion, or "" when absent; ERROR Status objects
 * normally have none). On failure returns GQ_EPARSE, sets *object = NULL,
 * rv = "" and writes a message naming the problem into err (errlen bytes,
 * NUL-terminated; err may be NULL), e.g.
 *   watch event: unknown type "FOO"
 *   watch event: no object
 *   watch event: BOOKMARK without metadata.resourceVersion
 * A BOOKMARK without a resourceVersion is an error because resuming from
 * "" would restart the watch from "any" state (reflector.go would store
 * it as the last synced version). */
int gq_watch_event_decode(const char *line, size_t len,
                          enum gq_watch_type *type, json_t **object, char *rv,
                          char *err, size_t errlen);

/* ---- Status --------------------------------------------------------------
 *
 * The apiserver answers failed requests with a metav1.Status body:
 *   {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
 *    "message":"gpujobs.gpuq.dev \"x\" not found","reason":"NotFound",
 *    "details":{...},"code":404}
 * The mapping to GQ_E* codes (the only one in gpuq; STYLE "Errors"):
 *   2xx                         0
 *   401                         GQ_EUNAUTHORIZED
 *   403                         GQ_EFORBIDDEN
 *   404                         GQ_ENOTFOUND
 *   409 reason AlreadyExists    GQ_EEXIST
 *   409 otherwise               GQ_ECONFLICT
 *   410, or reason Expired/Gone GQ_EGONE (relist; apimachinery's
 *                               IsResourceExpired/IsGone test the reason)
 *   429                         GQ_ETOOMANY
 *   400, 422, other 4xx         GQ_EINVAL
 *   504                         GQ_ETIMEDOUT
 *   other 5xx                   GQ_EUNAVAIL
 *   anything else (1xx, 3xx)    GQ_EIO: not an answer we understand
 */

#define GQ_STATUS_REASON_MAX 64
#define GQ_STATUS_MESSAGE_MAX 512

struct gq_k8s_status {
  int code;                            /* HTTP status code */
  char reason[GQ_STATUS_REASON_MAX];   /* "NotFound", ...; "" if unknown */
  char message[GQ_STATUS_MESSAGE_MAX]; /* for logs; printable, UTF-8 */
  int retry_after_s; /* details.retryAfterSeconds (429, ServerTimeout), the
                        server's hint when the header is missing; 0 = none */
};

/* Fills st from a response: from its metav1.Status body when the body is
 * one (kind "Status"; but a Status claiming Success for a failed request is
 * ignored, as client-go's Result.Error() does), else from http_code, with
 * reason as client-go's NewGenericServerResponse gives it and message = the
 * first 200 bytes of the body (control characters and invalid UTF-8 replaced),
 * or a generic sentence when the body is empty. body may be NULL when len == 0.
 * Strings too long for st are cut at a UTF-8 boundary. Returns the GQ_E* code
 * of the table above (0 for 2xx). */
int gq_status_decode(long http_code, const char *body, size_t len,
                     struct gq_k8s_status *st);
/* The same for a body the caller has already parsed: doc is body as JSON
 * (borrowed; NULL when the body is empty, not JSON, or deliberately not
 * parsed, e.g. a 2xx whose caller ignores it), so a response is parsed
 * once. */
int gq_status_decode_doc(long http_code, const char *body, size_t len,
                         const json_t *doc,
                     struct gq_k8s_status *st);

/* Fills out from a Status object (a watch ERROR event's object; borrowed)
 * and returns its GQ_E* code by the same table; a Status without a code
 * takes the code its reason implies (Expired -> 410). Returns GQ_EPARSE
 * (out->code 0, message saying why) if st is not a Status object. */
int gq_status_from_json(const json_t *st, struct gq_k8s_status *out);

/* ---- retries ------------------------------------------------------------ */

/* Parses a Retry-After header value (RFC 9110 §10.2.3): delay-seconds
 * ("120") or an HTTP-date in any of the three forms §5.6.7 obliges a
 * recipient to accept ("Sun, 06 Nov 1994 08:49:37 GMT", the obsolete RFC
 * 850 and asctime forms). Surrounding whitespace is ignored. *delay_ms gets
 * the wait from now_ms (Unix ms): seconds * 1000, or date - now, 0 for a
 * date in the past. delay-seconds beyond 2^31 are taken as 2^31, as RFC
 * 9111 §1.2.2 says of delta-seconds. Returns 0 or GQ_EPARSE (*delay_ms
 * untouched). */
int gq_retry_after_parse(const char *header, int64_t now_ms, int64_t *delay_ms);

/* Returns 1 if a request that failed with gq_err may be sent again (after
 * a backoff, at least Retry-After), 0 if not. The rule, from client-go's
 * rest client (rest/with_retry.go IsNextRetry, rest/request.go
 * isErrRetryableFunc and checkWait):
 *   GQ_ETOOMANY                  always: API Priority and Fairness rejects
 *                                a 429 before any processing, so even a
 *                                POST is safe to repeat
 *   GQ_EUNAVAIL (5xx), GQ_ETIMEDOUT (504), GQ_EIO, GQ_ECLOSED and the
 *   negated errno of a failed connection (-ECONNRESET, -ECONNREFUSED,
 *   -ECONNABORTED, -EPIPE, -ETIMEDOUT, -ENETUNREACH, -ENETDOWN,
 *   -EHOSTUNREACH)
 *                                only if 'idempotent' (GET, or a write
 *                                whose repetition is harmless, such as a
 *                                PUT with a resourceVersion): the request
 *                                may have been applied before the failure
 *   anything else                never; 4xx are the client's fault,
 *                                GQ_EGONE needs a relist and GQ_ECONFLICT a
 *                                re-read, not the same request again
 * client-go also retries a 5xx POST when the server sends Retry-After; we
 * do not, because a 500 from a webhook or etcd timeout can follow a
 * successful write. Limit the attempts (client-go: 10) in the caller. */
int gq_should_retry(int gq_err, int idempotent);

/* ---- client-side rate limit ---------------------------------------------
 *
 * A token bucket as client-go's flowcontrol.NewTokenBucketRateLimiter(qps,
 * burst) builds it on golang.org/x/time/rate: the bucket starts full with
 * 'burst' tokens, refills at qps tokens per second up to burst, and a
 * request takes one token. Reserving may drive the count negative; the
 * deficit is the wait. So a burst of calls at one instant gets 0 ms for the
 * first 'burst' of them and then 1/qps apart (Limiter.Reserve).
 */

struct gq_ratelimit {
  double qps;      /* tokens per second; <= 0: unlimited */
  int burst;       /* bucket size, >= 1 */
  double tokens;   /* may be negative: reservations already handed out */
  int64_t last_ms; /* time of the last refill */
};

/* Sets up a full bucket at now_ms (any monotonic ms clock). burst < 1 is
 * taken as 1. */
void gq_ratelimit_init(struct gq_ratelimit *r, double qps, int burst,
                       int64_t now_ms);

/* Reserves a token at now_ms and returns the ms to wait before sending
 * (0 = now), rounded up so a request never leaves early. A clock that goes
 * backwards is treated as standing still. */
int64_t gq_ratelimit_reserve(struct gq_ratelimit *r, int64_t now_ms);

/* Takes a token at now_ms if one is there and returns 0; else takes
 * nothing and returns the ms until one will be (rounded up, >= 1). For a
 * caller that keeps its own queue of waiting requests and picks which one
 * gets the next token (priorities), instead of handing out reservations in
 * arrival order as gq_ratelimit_reserve() does. */
int64_t gq_ratelimit_try(struct gq_ratelimit *r, int64_t now_ms);

/* gq_ratelimit_try() that leaves at least keep tokens in the bucket (keep
 * >= 0; 0 is gq_ratelimit_try()): for requests of a low priority, so that a
 * request of a higher priority finds a token at once while the low ones
 * keep the bucket drained. Returns 0 (token taken) or the ms until the
 * bucket holds keep + 1 tokens. */
int64_t gq_ratelimit_try_above(struct gq_ratelimit *r, int64_t now_ms,
                               int keep);

/* ---- watch timeout ------------------------------------------------------ */

/* Returns the timeoutSeconds for the next watch request: the reflector's
 * minWatchTimeout (5 min) * (1 + rand01), i.e. in [300, 600), so that
 * watches of many clients do not all end together (reflector.go). rand01
 * must be in [0, 1) (e.g. gq_backoff_rand()); out-of-range values are
 * clamped. */
int64_t gq_watch_timeout_s(double rand01);

#endif
