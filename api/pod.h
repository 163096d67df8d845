/* api/pod.h - decoding Pods and pod specs (core/v1) into the typed
 * struct gq_pod and struct gq_podsched of decide/pod.h.
 *
 * One decoder serves the Pods the controller watches, GpuJob templates
 * (api/gpujob.c) and the pods gpuq-sim schedules. Ownership is as
 * decide/pod.h states: most strings are borrowed from the JSON document,
 * which struct gq_pod keeps one reference to (a GpuJob's template moves
 * them into a block of its own: gq_podsched_strings()); the pod's
 * annotations and container terminations are copied into a block the pod
 * owns; arrays are owned; the _release() functions free everything.
 */
#ifndef GQ_API_POD_H
#define GQ_API_POD_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "api/json.h"
#include "api/meta.h"
#include "decide/pod.h"

/* Decodes a PodSpec at 'spec' (path prefix 'path', e.g. "spec" or
 * "spec.template.spec") into out. Effective requests follow Kubernetes'
 * PodRequests (k8s.io/component-helpers/resource/helpers.go): per
 * resource, max(sum over containers + restartable (sidecar) init
 * containers, max over init containers i of (init i + sidecars started
 * before it)), plus spec.overhead; a container's request defaults to its
 * limit when only the limit is given (the apiserver's defaulting).
 * Requires at least one container with a name. Returns 0 or GQ_EINVAL with
 * the field path in d; nothing to release on error. */
int gq_podsched_decode(struct gq_dec *d, const json_t *spec, const char *path,
                       struct gq_podsched *out);

/* Frees the arrays of out (strings are borrowed). */
void gq_podsched_release(struct gq_podsched *out);

/* Adds the address of every string of s to p (api/json.h), so that
 * gq_strpack_done() makes s own its strings in one block. */
void gq_podsched_strings(struct gq_podsched *s, struct gq_strpack *p);

/* Returns a new string (caller frees) that two podscheds have equal
 * exactly when every field placement reads is equal: the key under which
 * decoded templates are shared (api/gpujob.c). */
char *gq_podsched_key(const struct gq_podsched *s);

/* Decodes a core/v1 Pod. Takes a new reference to obj (the caller keeps
 * its own). Metadata and spec are validated (gq_meta_decode(),
 * gq_podsched_decode()); status is read leniently, as the kubelet and the
 * scheduler write it: an unknown phase is an error, but a condition, a
 * container status or an annotation of an unexpected form is skipped
 * (never the whole pod). Besides the borrowed fields it fills the owned
 * ones of decide/pod.h:
 *   - annotations: every metadata.annotations entry whose key's prefix is
 *     GQ_ANN_DOMAIN or a subdomain of it (gpuq.dev/flavor,
 *     sim.gpuq.dev/run-seconds) and whose value is a string;
 *   - terminated / last_terminated: state.terminated and
 *     lastState.terminated of each status.containerStatuses entry that has
 *     one (container name, exitCode, reason, message, finishedAt).
 * Returns 0, or GQ_EINVAL with "field: problem, got value" in err (errlen
 * bytes); on error there is nothing to release. */
int gq_pod_decode(const json_t *obj, struct gq_pod *out, char *err,
                  size_t errlen);

/* Releases what gq_pod_decode() took (the document reference, the arrays
 * and the owned string block); out is then empty. */
void gq_pod_release(struct gq_pod *out);

/* 1 if pod (a Pod's JSON, borrowed; may be NULL) lists scheduling gate
 * 'name' in spec.schedulingGates (KEP-3521), else 0. */
int gq_pod_has_gate(const json_t *pod, const char *name);

#endif
