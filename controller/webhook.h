/* controller/webhook.h - gpuq-controller's admission webhooks: an HTTPS
 * server (api/httpd.h, libmicrohttpd with TLS) that answers
 * admission.k8s.io/v1 AdmissionReviews with the decisions of
 * decide/admission.h (docs/integrations.md, "Admission webhooks").
 *
 * Endpoints (POST, Content-Type application/json, body an AdmissionReview
 * of at most GQ_WEBHOOK_MAX_BODY bytes):
 *   /mutate    the mutating webhook: Pods CREATE (gate, managed
 *              annotation, team label) and batch/v1 Jobs CREATE (suspend);
 *              always allowed, with patchType JSONPatch and a base64
 *              RFC 6902 patch when it changes something;
 *   /validate  the validating webhook: Pods CREATE/UPDATE and Jobs CREATE;
 *              a refusal is allowed false with status.code 403 and
 *              status.message naming the field and value.
 * The response echoes request.uid. A body that is not an AdmissionReview
 * with a request.uid (and an object where the operation needs one) gets
 * 400 with a message naming the field; a body above the cap 413; another
 * method 405; another path 404; a request before the TeamQuotas are listed
 * 503 (the API server then applies the webhook's failurePolicy).
 *
 * TeamQuotas come from an informer of the webhook's own (TeamQuotas are
 * few), so every replica answers, leader or not. The certificate and key
 * (PEM files) are checked every reload_ms: when either file changes (inode,
 * size or mtime: a Secret volume swaps a symlink), the pair is loaded and
 * checked with OpenSSL and the server restarts on the same port with it;
 * requests in flight at that moment are dropped (the API server retries
 * them). A pair that does not load or does not match keeps the old one
 * serving and is logged once per change.
 *
 * Metrics (when given a registry): gpuq_webhook_requests_total{webhook=
 * "mutate"|"validate", allowed="true"|"false"}, one per AdmissionReview
 * answered (not for 4xx/5xx answers).
 *
 * Loop thread only. Callbacks never run from gq_webhook_start().
 */
#ifndef GQ_CONTROLLER_WEBHOOK_H
#define GQ_CONTROLLER_WEBHOOK_H
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct gq_kclient;
struct gq_metrics;
struct gq_webhook;

/* kube-apiserver's own request body limit (3 MiB). */
#define GQ_WEBHOOK_MAX_BODY (3u << 20)
#define GQ_WEBHOOK_RELOAD_MS 2000     /* certificate check period */
#define GQ_WEBHOOK_MAX_PEM (1u << 20) /* bytes of a certificate or key file */

struct gq_webhook_opts {
  const char *addr;            /* "IPV4:PORT" or "[IPV6]:PORT" (port 0:
                                  any free port, see gq_webhook_port()) */
  const char *cert_file;       /* PEM certificate (chain) path */
  const char *key_file;        /* PEM private key path */
  const char *controller_user; /* may remove the gate; NULL =
                                  GQ_CONTROLLER_USER */
  uint64_t reload_ms;          /* 0 = GQ_WEBHOOK_RELOAD_MS */
  struct gq_metrics *metrics;  /* borrowed, outlives the webhook; may be
                                  NULL */
};

/* Loads the certificate pair, starts serving on loop and starts the
 * TeamQuota informer on kc (borrowed, must outlive the webhook). o is
 * copied (its strings are borrowed: keep them, e.g. argv). Returns 0 with
 * the webhook in *out, or a negative error with a message in err (errlen
 * bytes): GQ_EINVAL for a malformed address or a pair that does not load
 * (the message names the file), GQ_EIO when the address cannot be bound. */
int gq_webhook_start(uv_loop_t *loop, struct gq_kclient *kc,
                     const struct gq_webhook_opts *o, struct gq_webhook **out,
                     char *err, size_t errlen);

/* The bound TCP port (the same across certificate reloads). */
int gq_webhook_port(const struct gq_webhook *w);

/* Stops serving and the informer; w is freed once its uv handles have
 * closed (run the loop). NULL is ignored. Not from inside a request (the
 * webhook answers each one synchronously, so no caller needs that). */
void gq_webhook_close(struct gq_webhook *w);

#endif
