/* decide/admission.h - what gpuq's admission webhooks decide about a Pod
 * or a batch/v1 Job (docs/integrations.md, "Admission webhooks").
 *
 * The mutating webhook gates: a GPU pod of a team namespace that gpuq did
 * not create gets the scheduling gate GQ_GATE_ADMISSION, the annotation
 * GQ_ANN_MANAGED "true" and the label GQ_LBL_TEAM; a Job of a team (its
 * label GQ_LBL_TEAM, or a GPU template in a team namespace) is suspended
 * (spec.suspend true) and gets the same annotation and label. The
 * controller queues both and lifts the gate (or the suspension) when it
 * admits them (decide/gpujob.h). The validating webhook refuses what the
 * mutating one cannot fix: GPU workloads outside every team namespace, a
 * team label naming a team that does not admit the namespace, a namespace
 * several teams admit without a team label, and removing the gate as
 * anyone but the controller.
 *
 * The team of a workload is the name of the TeamQuota that admits its
 * namespace (gq_teamquota_admits_namespace(): the namespace is listed in
 * spec.namespaces); when several do, the workload's own GQ_LBL_TEAM label
 * must name one of them. Objects labelled GQ_LBL_JOB_UID are gpuq's own
 * (pods it created, pods of Jobs it admitted) and pass both webhooks
 * unchanged, except for the gate rule.
 *
 * The caller (controller/webhook.c) decodes the AdmissionReview into a
 * struct gq_adm_req and renders struct gq_adm_result as the response; the
 * patch is a list of RFC 6902 "add" operations with RFC 6901 paths and
 * values as JSON text.
 *
 * Pure (decide/, links base/ only): no I/O, no allocation, no clock. Every
 * pointer is borrowed for the duration of the call; the result holds no
 * pointer into the input except 'team'.
 */
#ifndef GQ_DECIDE_ADMISSION_H
#define GQ_DECIDE_ADMISSION_H
#include <stddef.h>

#include "decide/meta.h"
#include "decide/teamquota.h"

enum gq_adm_op { GQ_ADM_CREATE, GQ_ADM_UPDATE, GQ_ADM_DELETE, GQ_ADM_CONNECT };
enum gq_adm_kind { GQ_ADM_OTHER, GQ_ADM_POD, GQ_ADM_JOB };

/* One state of the object (request.object or request.oldObject). */
struct gq_adm_obj {
  const struct gq_kv *labels; /* metadata.labels */
  size_t n_labels;
  int has_labels;           /* metadata.labels is present (else a patch
                               must create the map) */
  const char *managed;      /* annotation GQ_ANN_MANAGED, or NULL */
  int has_annotations;      /* metadata.annotations is present */
  int gpus;                 /* 1 if a container or init container (a
                               Job: of its pod template) requests or
                               limits a GPU resource
                               (gq_adm_is_gpu_resource()) */
  const char *const *gates; /* Pod: spec.schedulingGates[].name */
  size_t n_gates;
  int has_gates; /* spec.schedulingGates is present */
  int suspend;   /* Job: spec.suspend */
};

struct gq_adm_req {
  enum gq_adm_op op;
  enum gq_adm_kind kind;
  const char *ns;        /* request.namespace */
  const char *user;      /* request.userInfo.username */
  struct gq_adm_obj obj; /* CREATE, UPDATE: the new object */
  struct gq_adm_obj old; /* UPDATE: the object before */
};

#define GQ_ADM_MAX_OPS 4     /* gate, annotation, label, suspend */
#define GQ_ADM_PATH_MAX 128  /* bytes of a JSON pointer */
#define GQ_ADM_VALUE_MAX 160 /* bytes of a value's JSON text */
#define GQ_ADM_MSG_MAX 2048  /* bytes of a denial message */

/* One RFC 6902 operation: always "add" (which also replaces an existing
 * object member, RFC 6902 §4.1). */
struct gq_adm_patch {
  const char *op;               /* "add" (static) */
  char path[GQ_ADM_PATH_MAX];   /* JSON pointer, RFC 6901 escaped */
  char value[GQ_ADM_VALUE_MAX]; /* JSON text */
};

struct gq_adm_result {
  int allowed;              /* 1 allowed, 0 refused */
  char msg[GQ_ADM_MSG_MAX]; /* refused: the reason, naming the field
                               and value; "" when allowed */
  const char *team;         /* the workload's team (borrowed from a
                               TeamQuota), NULL if none or unresolved */
  struct gq_adm_patch ops[GQ_ADM_MAX_OPS]; /* mutating only */
  size_t n_ops;
};

/* Returns 1 if resource name 'name' is a GPU: "nvidia.com/gpu" or any
 * "nvidia.com/mig-<profile>" (NVIDIA device plugin, MIG strategy mixed),
 * else 0. */
int gq_adm_is_gpu_resource(const char *name);

/* How a workload's team is found, the one rule for the webhooks and the
 * controller's stand-ins (controller/workload.c): with a gpuq.dev/team
 * label (label non-NULL), the TeamQuota of that name if it admits
 * namespace ns (else BAD_LABEL); without one, the TeamQuota that admits
 * ns when exactly one of the n TeamQuotas tq does (else NONE or
 * AMBIGUOUS). *team gets the team (borrowed from tq) or NULL. */
enum gq_adm_team_rc {
  GQ_ADM_TEAM_OK,
  GQ_ADM_TEAM_NONE,      /* no TeamQuota admits the namespace, no label */
  GQ_ADM_TEAM_AMBIGUOUS, /* several admit it, no label */
  GQ_ADM_TEAM_BAD_LABEL  /* the label names no TeamQuota admitting it */
};
enum gq_adm_team_rc gq_adm_team(const char *label, const char *ns,
                                const struct gq_teamquota *const *tq,
                                size_t n, const char **team);

/* The mutating webhook's decision on r, given the n TeamQuotas tq (in the
 * order messages list them: the webhook sorts them by name). Always
 * allowed; fills out->ops with what to add (none when the object passes
 * unchanged: not a Pod or Job CREATE, no GPUs, gpuq's own, no team
 * namespace, or a team that cannot be resolved, which the validating
 * webhook refuses). Returns out->n_ops. */
size_t gq_adm_mutate(const struct gq_adm_req *r,
                     const struct gq_teamquota *const *tq, size_t n,
                     struct gq_adm_result *out);

/* The validating webhook's decision on r, with the TeamQuotas as above and
 * controller_user the only user allowed to remove GQ_GATE_ADMISSION
 * (--controller-user, default GQ_CONTROLLER_USER). Never patches. Returns
 * out->allowed (1, or 0 with out->msg set). */
int gq_adm_validate(const struct gq_adm_req *r,
                    const struct gq_teamquota *const *tq, size_t n,
                    const char *controller_user, struct gq_adm_result *out);

#endif
