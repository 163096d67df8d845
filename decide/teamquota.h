/* decide/teamquota.h - the TeamQuota custom resource (gpuq.dev/v1alpha1),
 * typed.
 *
 * A TeamQuota (cluster-scoped, named after the team) grants a team GPUs per
 * flavor (a GPU product label value, or "*" for any) and resource, lets it
 * borrow idle GPUs from the teams of its cohort, and says what preemption
 * it allows. DESIGN §2 fixes the semantics:
 *   - borrowingLimit absent: may borrow any idle GPU of its cohort;
 *   - lendingLimit absent: all its idle GPUs may be lent;
 *   - no cohort: neither borrows nor lends;
 *   - nominal 0 and no borrowing: its jobs stay queued (with a reason).
 * The arithmetic over these numbers is decide/quota.h; which line a job is
 * admitted under is decide/assign.h.
 *
 * api/teamquota.h decodes and validates it. Ownership: one reference to
 * the document ('json'), strings borrowed from it, arrays owned;
 * gq_teamquota_release() (api/teamquota.h) frees all. All counts are GPUs.
 *
 * Part of decide/ (links base/ only): no jansson. 'json' is an opaque
 * pointer for api/ and the I/O layers; nothing in decide/ reads it.
 */
#ifndef GQ_DECIDE_TEAMQUOTA_H
#define GQ_DECIDE_TEAMQUOTA_H
#include <stddef.h>
#include <stdint.h>

#include "decide/meta.h"

struct json_t; /* jansson's json_t (typedef struct json_t json_t) */

/* Bounds shared with the CRD schema (crds/teamquotas.gpuq.dev.yaml). */
#define GQ_MAX_QUOTA_GPUS 1048576
#define GQ_MAX_QUOTA_RESOURCES 64
#define GQ_MAX_TEAM_NAMESPACES 1024
#define GQ_FLAVOR_ANY "*"
#define GQ_NO_LIMIT (-1) /* an absent borrowingLimit / lendingLimit */

struct gq_quota_res {
  const char *flavor;     /* product label value, or "*" */
  const char *resource;   /* default nvidia.com/gpu */
  int64_t nominal;        /* GPUs guaranteed */
  int64_t borrow_limit;   /* GPUs above nominal; GQ_NO_LIMIT = unbounded */
  int64_t lend_limit;     /* GPUs lendable; GQ_NO_LIMIT = all idle */
};

enum gq_within_team { GQ_WITHIN_NEVER, GQ_WITHIN_LOWER_PRIORITY };
/* spec.idlePolicy.action (issue 22): report idle jobs, or also checkpoint
 * and requeue them when other jobs wait for their GPUs */
enum gq_idle_action { GQ_IDLE_REPORT, GQ_IDLE_PREEMPT };
#define GQ_IDLE_THRESHOLD_DEFAULT 10 /* percent GPU utilization */
#define GQ_IDLE_AFTER_MIN_DEFAULT 30 /* minutes */
#define GQ_IDLE_AFTER_MIN_MAX 10080  /* a week */

/* spec.idlePolicy: when a job's GPUs count as idle, and what then. */
struct gq_idle_policy {
  int set;              /* the TeamQuota has one (else the controller's
                           --idle-threshold, Report, 30 minutes) */
  int threshold_pct;    /* under this mean GPU utilization (0..100) */
  int64_t after_min;    /* for this long, minutes (1..GQ_IDLE_AFTER_MIN_MAX) */
  enum gq_idle_action action;
};
enum gq_reclaim { GQ_RECLAIM_NEVER, GQ_RECLAIM_LOWER_PRIORITY, GQ_RECLAIM_ANY };

struct gq_teamquota {
  struct json_t *json;        /* the document (one reference owned; api/
                                 only) */
  struct gq_meta meta;        /* meta.name is the team */
  const char **namespaces;    /* owned array of borrowed strings */
  size_t n_namespaces;
  const char *cohort;         /* NULL: no cohort (no borrowing, no lending) */
  double weight;              /* fair-share weight, default 1 */
  struct gq_quota_res *res;   /* owned */
  size_t n_res;
  enum gq_within_team within_team;  /* default LowerPriority */
  enum gq_reclaim reclaim;          /* default Any */
  /* spec.schedulingPolicy: enum gq_sched_policy (decide/las.h), or -1
   * when absent (the controller's --scheduling) */
  int sched;
  struct gq_idle_policy idle;
};

/* Returns 1 if GpuJobs of namespace ns may use this team's quota (ns is in
 * spec.namespaces), else 0. */
int gq_teamquota_admits_namespace(const struct gq_teamquota *q,
                                  const char *ns);

/* Returns the quota entry a GPU of (product, resource) is charged to: the
 * entry naming the product exactly, else the "*" entry for that resource;
 * NULL if none (borrowed pointer). product NULL matches only "*". */
const struct gq_quota_res *gq_teamquota_find(const struct gq_teamquota *q,
                                             const char *product,
                                             const char *resource);

#endif
