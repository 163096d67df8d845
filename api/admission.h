/* api/admission.h - the admission.k8s.io/v1 AdmissionReview: decoding a
 * request into the typed struct gq_adm_req of decide/admission.h, and
 * rendering a decision as the response (docs/integrations.md, "Admission
 * webhooks"). controller/webhook.c serves them.
 *
 * Decoding is strict about the envelope (apiVersion, kind, request.uid,
 * request.operation, an object where the operation needs one) and lenient
 * about the object: the mutating webhook runs before the API server
 * validates it, so a label of the wrong type is skipped rather than
 * refused (the API server's own message is the better one). What the
 * decisions need is read from the object: labels, the GQ_ANN_MANAGED
 * annotation, whether the annotation and label maps exist, GPU resources
 * in requests or limits of containers and initContainers (a Job: of
 * spec.template.spec), spec.schedulingGates (Pod), spec.suspend (Job).
 * request.kind decides the kind: Pod in the core group, Job in batch;
 * anything else is GQ_ADM_OTHER (allowed by both webhooks).
 *
 * Ownership: the decoded review borrows every string from the document,
 * which must outlive it; its arrays are owned (gq_admission_review_release
 * frees them).
 */
#ifndef GQ_API_ADMISSION_H
#define GQ_API_ADMISSION_H
#include <jansson.h>
#include <stddef.h>

#include "decide/admission.h"

#define GQ_ADMISSION_VERSION "admission.k8s.io/v1"

struct gq_admission_review {
  const char *uid;       /* request.uid (borrowed) */
  struct gq_adm_req req; /* what the decisions read */
  /* private: the owned label and gate arrays of object, oldObject */
  struct gq_kv *_labels[2];
  const char **_gates[2];
};

/* Decodes the AdmissionReview root into out. Returns 0, or GQ_EINVAL with
 * "field: problem" in err (errlen bytes), e.g. "request.uid: required
 * value" or "apiVersion: must be admission.k8s.io/v1, got \"v1beta1\"";
 * nothing to release on error. */
int gq_admission_review_decode(const json_t *root,
                               struct gq_admission_review *out, char *err,
                               size_t errlen);

/* Frees what a decode allocated; rv is then empty. */
void gq_admission_review_release(struct gq_admission_review *rv);

/* Returns a new AdmissionReview (new reference) answering uid with res:
 * response.allowed; on refusal status {code 403, reason Forbidden,
 * message}; with operations patchType JSONPatch and patch, the base64
 * (RFC 4648, padded) of the RFC 6902 array. */
json_t *gq_admission_response(const char *uid, const struct gq_adm_result *res);

#endif
