/* controller/ctl.h - gpuq-controller's main loop (DESIGN §1-§4, §8):
 * watch -> cache -> decide -> act.
 *
 * It runs informers on GpuJobs, TeamQuotas, Nodes, Pods (all of them: other
 * workloads use GPUs too), PriorityClasses and PodDisruptionBudgets; once
 * all have synced it rebuilds each cohort's Redis queue and ledger from
 * what exists (queue/rebuild.h), and only then decides. Every change marks
 * the jobs it touches; a pass then reconciles them (controller/jobs.c) and
 * admits every head job that fits (controller/admit.c, over a capacity
 * snapshot with decide/assign.h, place.h and forecast.h). Writes are
 * status patches (coalesced: only changed fields), pods and Services
 * (controller/podspec.h), events and finalizers.
 *
 * Loop thread only. With leader election only the leader acts; the others
 * keep their caches warm.
 */
#ifndef GQ_CONTROLLER_CTL_H
#define GQ_CONTROLLER_CTL_H
#include "decide/las.h"
#include <stdint.h>
#include <uv.h>

#include "api/client.h"
#include "controller/metrics.h"
#include "decide/position.h"

#define GQ_CTL_COMPONENT "gpuq-controller"
#define GQ_CTL_POSITIONS_NOW GQ_POSITION_EXACT /* kept exact */
/* The taints cluster-autoscaler and Karpenter put on a node they are about
 * to remove (DESIGN §5). */
#define GQ_CTL_DRAIN_TAINTS "ToBeDeletedByClusterAutoscaler,karpenter.sh/disrupted"

/* Checks a --drain-taints list: comma-separated taint keys, each a
 * qualified name (Kubernetes label key syntax); "" is allowed. Returns 0, or
 * GQ_EINVAL with a message naming the bad key in err (len bytes). */
int gq_ctl_check_taints(const char *list, char *err, size_t len);

struct gq_ctl;

struct gq_ctl_opts {
  const char *redis_url;       /* required */
  const char *redis_prefix;    /* NULL = "gpuq" */
  const char *product_label;   /* NULL = nvidia.com/gpu.product */
  const char *topology_key;    /* NULL = topology.kubernetes.io/zone */
  /* node-removal taint keys, comma-separated (DESIGN §5); NULL = the
   * default GQ_CTL_DRAIN_TAINTS, "" = none (untolerated NoExecute taints
   * count in every case) */
  const char *drain_taints;
  /* drainPolicy Wait: how long a job may keep running after its node was
   * cordoned before gpuq checkpoints it (virtual seconds); 0 = 3600 */
  int64_t drain_wait_s;
  /* a terminating gpuq pod whose node has been NotReady this long is
   * force-deleted (virtual seconds); 0 = 300 */
  int64_t notready_timeout_s;
  int leader_elect;            /* campaign for the Lease below first */
  int fifo;                    /* --policy fifo: the plain FIFO baseline
                                  (admit.c; for comparisons, bench/replay) */
  /* --scheduling: the policy of every cohort (decide/las.h), and the
   * attained-service parameters (las.n_thresholds 0 = GQ_LAS_DEFAULT) */
  enum gq_sched_policy sched;
  struct gq_las las;
  /* --fair-share-half-life: half-life of the teams' decayed usage history
   * (virtual seconds, kept in Redis); 0 = none: shares from current use */
  int64_t fair_half_life_s;
  /* allocated against used GPUs (issue 22, controller/usage.c):
   * --prometheus-url (NULL: no utilization readings), the poll period and
   * the window of status.gpuUtilization (virtual seconds; 0 = 30 and
   * 300), the idle threshold of teams without spec.idlePolicy (percent;
   * 0 = 10) and the quiet time after which a node's XID taint is lifted
   * (virtual seconds; 0 = 600) */
  const char *prometheus_url;
  int64_t util_interval_s, util_window_s, gpu_healthy_s;
  int idle_threshold_pct;
  const char *lease_ns, *lease_name, *identity;
  int64_t audit_s;             /* ledger audit period (real s); 0 = 60 */
  int64_t quota_status_ms;     /* least time between two status writes of
                                  one TeamQuota (real ms); 0 = 1000 */
  int64_t sweep_ms;            /* background position sweep period; 0 = 100 */
  struct gq_metrics *metrics;  /* borrowed; metrics are registered on it */
};

/* Creates the controller on loop with the API client kc (borrowed, must
 * outlive it). Strings in o are copied. Starts nothing. */
struct gq_ctl *gq_ctl_new(uv_loop_t *loop, struct gq_kclient *kc,
                          const struct gq_ctl_opts *o);

/* Starts Redis, the informers and (with leader_elect) the campaign. */
void gq_ctl_start(struct gq_ctl *c);

/* 1 once every informer has synced and Redis is usable (for /readyz);
 * msg gets why not. */
int gq_ctl_ready(const struct gq_ctl *c, char *msg, size_t len);

/* Refreshes the gauges computed from the cache (pending jobs, use,
 * nominal, borrowed, fragmentation) on the registry before a scrape. */
void gq_ctl_collect(struct gq_ctl *c);

/* Graceful stop (SIGTERM): stops admitting, waits (up to 10 s real) for
 * writes in flight, releases the Lease, closes everything, then calls
 * done(arg). The controller is freed after done returns. */
void gq_ctl_stop(struct gq_ctl *c, void (*done)(void *arg), void *arg);

#endif
