/* api/gpujob.h - decoding and validating the GpuJob custom resource
 * (gpuq.dev/v1alpha1) into the typed struct gq_gpujob of decide/gpujob.h.
 *
 * DESIGN §2 defines the API; crds/gpujobs.gpuq.dev.yaml holds the same
 * bounds as an OpenAPI schema. A real API server enforces the schema at
 * create time, but the controller cannot rely on it (CEL and schemas can be
 * bypassed, gpuq-sim does not run CEL, objects may predate a schema change),
 * so gq_gpujob_decode() re-validates every field and every rule, and the
 * controller marks a rejected job Failed with the message it returns.
 *
 * Units and ownership are decide/gpujob.h's: the decoded job keeps no
 * reference to the JSON it was decoded from; its own strings live in one
 * block, the strings that repeat across jobs are shared (gq_intern(),
 * api/json.h), its pod template is shared with every job that has the same
 * one, and gq_gpujob_release() frees everything.
 */
#ifndef GQ_API_GPUJOB_H
#define GQ_API_GPUJOB_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "api/meta.h"
#include "api/pod.h"
#include "decide/gpujob.h"

#define GQ_GROUP "gpuq.dev"
#define GQ_VERSION "v1alpha1"
#define GQ_API_VERSION "gpuq.dev/v1alpha1"

/* Environment gpuq gives each pod (DESIGN §3); the resume location is read
 * by the job, and by gpuq-sim's kubelet. */
#define GQ_ENV_JOB "GPUQ_JOB"
#define GQ_ENV_ATTEMPT "GPUQ_ATTEMPT"
#define GQ_ENV_RESUME_FROM "GPUQ_RESUME_FROM"
#define GQ_ENV_REPLICA "GPUQ_REPLICA"
#define GQ_ENV_REPLICAS "GPUQ_REPLICAS"

/* Decodes and validates a GpuJob. obj is only read: the result keeps no
 * reference to it (its strings are copied, its template shared; see
 * Ownership in decide/gpujob.h). Returns 0; or GQ_EINVAL with one message in err (errlen
 * bytes, at least GQ_DEC_MSG_MAX recommended) naming the field path and
 * the value, e.g. "spec.gpusPerReplica: must be between 1 and 1024, got
 * -2"; nothing is left to release on error. The checks are the CRD
 * schema's plus the rules a schema cannot express: the name is at most 63
 * characters (it becomes a label value); drainPolicy Checkpoint requires
 * spec.checkpoint; the template's containers do not request the GPU
 * resource themselves (gpuq sets it); replicas * gpusPerReplica is
 * overflow-checked. status.message, gpus, queuePosition,
 * estimatedStartTime, nodes and conditions are read back without being
 * validated (a field in another form is flagged in status.bad).
 *
 * j->shape is a 32-bit hash, equal for jobs that placement cannot tell
 * apart (GPU resource, replicas, GPUs per replica, products, minimum
 * memory and the template's pod-scheduling fields), so a shape that did
 * not fit need not be tried again in the same pass.
 *
 * Templates are shared between jobs (and threads: the table is locked):
 * every job whose spec.template has the same canonical JSON text (sorted
 * keys, compact) holds the same template, and templates whose decoded
 * pod-scheduling fields are equal share one struct gq_podsched. A
 * template's text is kept deflated (zlib), with the first template of
 * the same pod-scheduling fields as the dictionary, so that templates that
 * differ in a few arguments or annotations cost tens of bytes each. */
int gq_gpujob_decode(const json_t *obj, struct gq_gpujob *out, char *err,
                     size_t errlen);

/* Fills out with what a controller needs to report a GpuJob that
 * gq_gpujob_decode() rejected with message msg: out->invalid = msg,
 * metadata name, namespace, uid, resourceVersion, generation,
 * deletionTimestamp (1 when present but unreadable) and finalizers read
 * without validation, and the status read back field by field (a field
 * that does not decode is flagged in status.bad). The spec is left empty
 * (no template, sched NULL). Release with gq_gpujob_release(). */
void gq_gpujob_decode_invalid(const json_t *obj, const char *msg,
                              struct gq_gpujob *out);

/* Returns the job's spec.template as a new JSON object (the caller
 * decrefs it), parsed from the shared canonical text: what pods are built
 * from (controller/podspec.c). NULL for an invalid job. */
json_t *gq_gpujob_template_json(const struct gq_gpujob *j);

/* Releases what gq_gpujob_decode() or _decode_invalid() took (the
 * template reference included); j is then empty. */
void gq_gpujob_release(struct gq_gpujob *j);

/* Sets the number of distinct templates and of distinct decoded
 * pod-scheduling records currently shared, and (if deflated_bytes is not
 * NULL) the bytes of the templates' deflated texts: for tests and
 * benchmarks. */
void gq_gpujob_template_counts(size_t *templates, size_t *scheds,
                               size_t *deflated_bytes);

/* Returns the phase's API name ("Queued"); "" for GQ_PHASE_NONE. */
const char *gq_job_phase_name(enum gq_job_phase p);

/* Returns the drain policy's API name ("Checkpoint"). */
const char *gq_drain_policy_name(enum gq_drain_policy p);

#endif
