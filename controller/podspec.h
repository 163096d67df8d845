/* controller/podspec.h - the pods and Service gpuq creates for a GpuJob
 * (DESIGN §3).
 *
 * Pure: builds JSON documents from a decoded GpuJob and a placement; no I/O.
 * Every builder returns a new jansson reference the caller owns
 * (json_decref), and never fails except by aborting on OOM (jansson
 * allocation failures are treated like gq_x* ones).
 */
#ifndef GQ_CONTROLLER_PODSPEC_H
#define GQ_CONTROLLER_PODSPEC_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "api/gpujob.h"
#include "api/node.h"

/* PyTorch's default rendezvous port (torch.distributed, init_method env://),
 * given as MASTER_PORT. */
#define GQ_MASTER_PORT 29500

/* Longest pod name gpuq makes: a DNS-1123 label, because a replica's pod
 * name is also its hostname (RFC 1123 §2.1 as Kubernetes applies it,
 * IsDNS1123Label). */
#define GQ_POD_NAME_MAX 63

/* Writes the pod name of (job uid, attempt, replica) into buf (len bytes,
 * at least GQ_POD_NAME_MAX + 1): "<name>-<uid8>-<attempt>-<replica>",
 * where <name> is the job's name cut to 32 characters with '.' turned into
 * '-' and trailing '-' dropped, and <uid8> the first 8 characters of
 * metadata.uid. The result is a DNS-1123 label of at most 57 characters
 * (attempt <= INT32_MAX). The same arguments always give the same name, so
 * a retried create cannot make a second pod; a job recreated under the
 * same name has another uid and so other pod names. Requires a job read
 * from the API server: metadata.uid is a non-empty lower-case UUID.
 * attempt >= 1, 0 <= replica < j->replicas. */
void gq_podspec_pod_name(const struct gq_gpujob *j, int64_t attempt, int32_t replica,
                 char *buf, size_t len);

/* Writes the name of the job's headless Service into buf (len bytes, at
 * least 64), a DNS-1035 label (Service names must start with a letter):
 * the job's name when it already is one, else "gj-<name>-<uid8>" with the
 * name cut to 50, '.' turned into '-' and trailing '-' dropped. The uid
 * keeps two jobs whose names map to the same form (9x and 9.x) apart. */
void gq_podspec_service_name(const struct gq_gpujob *j, char *buf, size_t len);

/* Builds replica 'replica' of attempt 'attempt' of job j, pinned to node
 * 'node' (borrowed, read only during the call). From j's template
 * (gq_gpujob_template_json(), parsed anew for each pod) it keeps
 * metadata labels and annotations and the whole pod spec, then sets
 * (DESIGN §3):
 *   - metadata name (gq_podspec_pod_name), namespace, labels GQ_LBL_JOB, _JOB_UID,
 *     _TEAM, _ATTEMPT, _REPLICA, and one controller owner reference to the
 *     GpuJob (controller and blockOwnerDeletion true; kubectl drain
 *     refuses pods without a controller);
 *   - the GPU: requests = limits = gpusPerReplica of spec.gpu.resource on
 *     the first container (the GpuJob decoder rejects templates that
 *     request the resource themselves, or set nodeName);
 *   - a required node affinity kubernetes.io/hostname In [the node's
 *     hostname label], or matchFields metadata.name In [node name] when
 *     the node has no such label (as the DaemonSet controller pins). Terms
 *     are ORed, so the pin is ANDed into every non-empty term the template
 *     has; an empty term matches no node in Kubernetes and is left empty;
 *     with no terms the pin is the only one;
 *   - env on every container and init container: GPUQ_JOB (the job's
 *     name), GPUQ_ATTEMPT, and GPUQ_RESUME_FROM when resume_from is not
 *     NULL; for j->replicas > 1 also RANK, WORLD_SIZE, MASTER_ADDR (replica
 *     0's "<pod>.<service>.<namespace>.svc"), MASTER_PORT, GPUQ_REPLICA and
 *     GPUQ_REPLICAS, hostname = the pod name and subdomain = the Service
 *     name. A variable gpuq sets replaces the template's first one of the
 *     same name in place (later duplicates are removed), so $(NAME)
 *     references keep working;
 *   - restartPolicy Never when the template has none (a failed replica is
 *     retried by gpuq, as a new attempt of the gang);
 *   - priorityClassName from spec.priorityClassName when set;
 *   - for a job with spec.checkpoint (DESIGN §5): terminationGracePeriodSeconds
 *     = checkpoint.gracePeriodSeconds (replacing the template's), and
 *     terminationMessagePolicy File on every container, so that the
 *     "checkpoint=<location>" line written to /dev/termination-log after
 *     SIGTERM reaches the pod's status.
 * Returns the new pod (the caller decrefs it), or NULL for a job without a
 * template (gq_gpujob_decode_invalid()). */
json_t *gq_podspec_pod(const struct gq_gpujob *j, int64_t attempt,
                     int32_t replica, const struct gq_node *node,
                     const char *resume_from);

/* Builds the headless Service of a multi-replica job: clusterIP None,
 * selector GQ_LBL_JOB_UID = the job's uid, publishNotReadyAddresses true
 * (replicas resolve each other before they are Ready), one port
 * GQ_MASTER_PORT named "rendezvous", and the same controller owner
 * reference as the pods. */
json_t *gq_podspec_service(const struct gq_gpujob *j);

/* Pins pod spec 'spec' (a pod's, or a pod template's; changed in place) to
 * nodes[0..n) (n >= 1, borrowed): the requirement kubernetes.io/hostname
 * In [their hostname labels] (metadata.name In [their names] by
 * matchFields when one has no hostname label) is added to every non-empty
 * term of its required node affinity, or becomes its only term (DESIGN
 * §3; the pods gpuq creates and the workloads it admits, workload.c). */
void gq_podspec_pin_nodes(json_t *spec, const struct gq_node *const *nodes,
                          size_t n);

/* Builds the PodDisruptionBudget gpuq keeps for a job with drainPolicy
 * Wait (DESIGN §5): policy/v1, named as the job's Service
 * (gq_podspec_service_name), maxUnavailable 0 over the pods labelled
 * GQ_LBL_JOB_UID = the job's uid, so that evictions (kubectl drain) are
 * refused while it runs; the same controller owner reference as the pods,
 * so it goes with the job. */
json_t *gq_podspec_pdb(const struct gq_gpujob *j);

#endif
