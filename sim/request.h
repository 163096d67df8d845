/* sim/request.h - the pure part of reading an API request: the path routed
 * to a kind, the query parameters checked and parsed, the body decoded.
 *
 * server.c and verbs.c answer with what these return; they touch no
 * connection, so tests/fuzz's sim_request harness drives them without a
 * server (a struct gq_sim with its kinds registered is all they read). The
 * query comes through a lookup callback: gq_http_query() in the server, a
 * parsed string in the harness.
 *
 * Errors are the apiserver's: 404 for a path that names no resource, 400
 * with strconv's wording for a malformed boolean or integer parameter and
 * for a bad selector, 400/415 for a body that does not decode.
 * Loop thread only, like the rest of the sim.
 */
#ifndef GQ_SIM_REQUEST_H
#define GQ_SIM_REQUEST_H
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sim/server.h"

/* Request bodies above this are answered 413 with a Status naming the
 * limit: kube-apiserver's MaxRequestBodyBytes default (3 MiB). */
#define GQ_SIM_MAX_BODY (3u << 20)

/* Query parameter key of arg's request: its value ("" for a key without a
 * value), or NULL when absent. Borrowed, valid during the request. */
typedef const char *(*gq_sim_query_fn)(void *arg, const char *key);

/* The gq_sim_query_fn of a served request (arg: its struct gq_http_req). */
const char *gq_sim_http_query(void *arg, const char *key);

/* Resolves the n path segments seg (gq_sim_split_path()) of /api/v1/... or
 * /apis/G/V/... into r->k, r->view, r->ns, r->name and r->sub; r->s must
 * be set, the rest of r zeroed. Returns 0, or -1 when the path names no
 * resource (404). */
int gq_sim_route(struct gq_sim_req *r, char seg[GQ_SIM_MAX_SEGS][256], int n);

/* Checks the boolean query parameters every request may carry (watch,
 * allowWatchBookmarks, sendInitialEvents, pretty) as Go's
 * strconv.ParseBool. Returns 0, or -1 with the apiserver's message
 * ("strconv.ParseBool: parsing \"maybe\": invalid syntax") in err (400). */
int gq_sim_query_check(gq_sim_query_fn q, void *arg, char *err, size_t len);

/* The parameters of list, watch and deletecollection. */
struct gq_sim_params {
  struct gq_labelsel *labels; /* owned; NULL = every object */
  struct gq_fieldsel *fields; /* owned; NULL = every object */
  int64_t limit;              /* > 0: page size; 0 (absent, <= 0) = all */
  const char *cont;           /* continue token (borrowed), or NULL */
  uint64_t from_rv;           /* resourceVersion; 0 when absent or "" */
  int64_t timeout_s;          /* timeoutSeconds; 0 when absent */
};

/* Parses labelSelector, fieldSelector (only the fields kind k can be
 * selected by, as the apiserver allows), limit, continue, resourceVersion
 * and timeoutSeconds into p. limit and timeoutSeconds are int64 as Go's
 * strconv.ParseInt reads them; resourceVersion is read as a decimal
 * number as far as it goes (gpuq-sim's versions are counters). Returns 0
 * (release p after), or -1 with the 400 message in err ("field label not
 * supported: spec.x", "strconv.ParseInt: parsing \"ten\": invalid
 * syntax"); p then holds nothing to release. */
int gq_sim_params_parse(const struct gq_sim_kind *k, gq_sim_query_fn q,
                        void *arg, struct gq_sim_params *p, char *err,
                        size_t len);

/* Frees the selectors of p. */
void gq_sim_params_release(struct gq_sim_params *p);

/* Decodes a write's body (len bytes; ctype the Content-Type or NULL) for
 * kind k: JSON, YAML when ctype says so (one document), or protobuf, which
 * the sim reads only for namespaces. Returns the value (new reference; not
 * necessarily an object), or NULL with the status code in *code (400,
 * 415) and the message in err. */
json_t *gq_sim_body_decode(const struct gq_sim_kind *k, const char *body,
                           size_t len, const char *ctype, int *code,
                           char *err, size_t errlen);

/* Checks a new object's metadata.name as kube-apiserver's ValidateObjectMeta
 * does with the kind's name rule (k8s.io/apimachinery
 * pkg/api/validation/path and pkg/apis/core/validation): a DNS-1123 label
 * for namespaces, a DNS-1035 label (first a letter) for services, a
 * DNS-1123 subdomain for every other kind, custom resources included.
 * Returns 0, or -1 with "metadata.name: Invalid value: \"NAME\": why"
 * (the real server's words) in err. */
int gq_sim_name_check(const struct gq_sim_kind *k, const char *name,
                      char *err, size_t len);

/* Validates obj (borrowed) as kind k's built-in validation does: pods and
 * nodes through their decoders (api/pod.h, api/node.h), PriorityClasses
 * (api/priorityclass.h), webhook configurations
 * (gq_sim_webhook_config_check); other kinds pass. CRD kinds are checked
 * by their schema instead (sim/schema.h). Returns 0, or -1 with "field:
 * problem" in err (a 422). */
int gq_sim_builtin_check(const struct gq_sim_kind *k, const json_t *obj,
                         char *err, size_t len);

#endif
