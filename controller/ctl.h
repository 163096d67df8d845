/* controller/ctl.h - gpuq-controller's main loop (DESIGN §1-§4, §8):
 * watch -> cache -> decide -> act.
 *
 * It runs informers on GpuJobs, TeamQuotas, Nodes, Pods (all of them: other
 * workloads use GPUs too), PriorityClasses and PodDisruptionBudgets; once
 * all have synced it rebuilds each cohort's Redis queue and ledger from
 * what exists (queue/rebuild.h), and only then decides. Every change marks
 * the jobs it touches; a pass then reconciles them (controller/jobs.c) and
 * admits every head job that fits (controller/admit.c, over a capacity
 * snapshot with controller/assign.h, place.h and forecast.h). Writes are
 * status patches (coalesced: only changed fields), pods and Services
 * (controller/podspec.h), events and finalizers.
 *
 * Loop thread only. With leader election only the leader acts; the others
 * keep their caches warm.
 */
#ifndef GQ_CONTROLLER_CTL_H
#define GQ_CONTROLLER_CTL_H
#include <stdint.h>
#include <uv.h>

#include "api/client.h"
#include "controller/metrics.h"
#include "controller/position.h"

#define GQ_CTL_COMPONENT "gpuq-controller"
#define GQ_CTL_POSITIONS_NOW GQ_POSITION_EXACT /* kept exact */

struct gq_ctl;

struct gq_ctl_opts {
  const char *redis_url;       /* required */
  const char *redis_prefix;    /* NULL = "gpuq" */
  const char *product_label;   /* NULL = nvidia.com/gpu.product */
  const char *topology_key;    /* NULL = topology.kubernetes.io/zone */
  int leader_elect;            /* campaign for the Lease below first */
  const char *lease_ns, *lease_name, *identity;
  int64_t audit_s;             /* ledger audit period (real s); 0 = 60 */
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
