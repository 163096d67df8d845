/* api/prom.h - a client of Prometheus' HTTP API: instant queries
 * (GET /api/v1/query?query=..., https://prometheus.io/docs/prometheus/
 * latest/querying/api/#instant-queries) on the controller's libuv loop,
 * through api/hclient.h (libcurl). The answer is read by a pure function
 * (gq_prom_parse_vector) that the fuzzers and unit tests call directly.
 *
 * Only vector results are read (resultType "vector": the shape of an
 * instant query of a metric selector or an aggregation); a scalar, matrix
 * or string result is an error. Values are floats as Prometheus prints
 * them ("42", "0.5", "NaN", "+Inf"); a sample whose value is not finite is
 * skipped. Loop thread only.
 */
#ifndef GQ_API_PROM_H
#define GQ_API_PROM_H
#include <jansson.h>
#include <stddef.h>
#include <uv.h>

/* One sample of an instant vector: its labels (a JSON object of strings,
 * borrowed from the vector) and its value. */
struct gq_prom_sample {
  const json_t *metric;
  double value;
};

/* An instant vector: n samples; owns the parsed document they point into. */
struct gq_prom_vector {
  struct gq_prom_sample *v;
  size_t n;
  json_t *doc;
};

/* Caps on what a query answer may hold: a body of 64 MiB, 1,000,000
 * samples (dcgm-exporter sends 6 series per GPU: 8 GPUs x 20,000 nodes
 * is 960,000). */
#define GQ_PROM_MAX_BODY (64u << 20)
#define GQ_PROM_MAX_SAMPLES 1000000u

/* Reads the body of a /api/v1/query answer (len bytes, need not be
 * NUL-terminated) into *out. Returns 0, or GQ_EPARSE with a sentence in
 * err (errlen bytes, NUL-terminated, naming the field) for: invalid JSON,
 * "status" other than "success" (the answer's errorType and error are
 * quoted), a resultType other than "vector", a sample without an object
 * "metric" or a [time, "value"] "value", a value that is not a number,
 * more than GQ_PROM_MAX_SAMPLES samples. On error *out is empty. The
 * caller frees *out with gq_prom_vector_free(). */
int gq_prom_parse_vector(const char *body, size_t len,
                         struct gq_prom_vector *out, char *err,
                         size_t errlen);

/* Frees what *v holds and empties it (safe on an empty vector). */
void gq_prom_vector_free(struct gq_prom_vector *v);

/* The value of label name of s, or "" when it has none (Prometheus drops
 * empty labels, so the two are the same). Borrowed from the vector. */
const char *gq_prom_label(const struct gq_prom_sample *s, const char *name);

struct gq_prom;

/* The answer to one query: rc 0 with the vector (borrowed: valid during
 * the call), or a negative GQ_E* (GQ_EIO transport failure or a status
 * other than 200; GQ_ETIMEDOUT; GQ_EPARSE an answer that does not parse;
 * GQ_ECANCELED at close) with a sentence in err naming the URL. */
typedef void (*gq_prom_cb)(int rc, const struct gq_prom_vector *v,
                           const char *err, void *arg);

/* A client of the Prometheus at base_url ("http://127.0.0.1:9090", no
 * trailing path; copied) on loop, each query bounded by timeout_ms.
 * Returns 0, GQ_EINVAL (base_url not http:// or https://) or GQ_EIO. */
int gq_prom_new(uv_loop_t *loop, const char *base_url, long timeout_ms,
                struct gq_prom **out);

/* Sends the instant query promql (copied, URL-encoded here); cb runs
 * exactly once, never synchronously. Returns 0 or GQ_ENOMEM / GQ_EIO
 * (cb not called). */
int gq_prom_query(struct gq_prom *p, const char *promql, gq_prom_cb cb,
                  void *arg);

/* The base URL it queries (borrowed). */
const char *gq_prom_url(const struct gq_prom *p);

/* Cancels pending queries (their callbacks get GQ_ECANCELED, later) and
 * frees the client once its handles have closed (run the loop). */
void gq_prom_close(struct gq_prom *p);

#endif
