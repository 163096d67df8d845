/* sim/usage.h - GPU-hours per team: allocated, used and idle (issue 22).
 *
 * The ledger sums struct gq_sim_usage (sim/gpuutil.h: GPU-seconds) per
 * team and in total. The report (report.c) adds each pod's running time to
 * it as the pod runs, so the figures are exact from the pods' utilization
 * timelines. Pods without a team ("") count in the total only.
 *
 * Pure: no I/O, no clock. The ledger owns its entries (uthash, by team);
 * gq_sim_usage_release() frees them. */
#ifndef GQ_SIM_USAGE_H
#define GQ_SIM_USAGE_H
#include <uthash.h>

#include "sim/gpuutil.h"

struct gq_sim_usage_team {
  char *team;              /* owned */
  struct gq_sim_usage u;   /* GPU-seconds */
  UT_hash_handle hh;
};

struct gq_sim_usage_ledger {
  struct gq_sim_usage_team *teams; /* uthash by team */
  struct gq_sim_usage total;       /* every pod's, with or without a team */
};

/* An empty ledger. */
void gq_sim_usage_init(struct gq_sim_usage_ledger *l);
/* Frees the entries; l is then empty. */
void gq_sim_usage_release(struct gq_sim_usage_ledger *l);

/* Adds u (GPU-seconds, borrowed) to team (borrowed; copied when new; NULL
 * or "" = no team: the total only) and to the total. */
void gq_sim_usage_add(struct gq_sim_usage_ledger *l, const char *team,
                      const struct gq_sim_usage *u);

/* Adds the usage of gpus GPUs running util (borrowed) between from_ms and
 * to_ms after their container started (gq_sim_gpuutil_integrate(); idle
 * below idle_pct percent) to team and the total. */
void gq_sim_usage_add_run(struct gq_sim_usage_ledger *l, const char *team,
                          const struct gq_sim_gpuutil *util, int64_t gpus,
                          int64_t from_ms, int64_t to_ms, double idle_pct);

/* The entry of team, or NULL (borrowed; valid until the ledger changes). */
const struct gq_sim_usage *gq_sim_usage_team(
    const struct gq_sim_usage_ledger *l, const char *team);

#endif
