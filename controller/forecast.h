/* controller/forecast.h - when a blocked job will fit: reservations and
 * backfill (DESIGN §4, "large jobs must not starve").
 *
 * When the head job of a team cannot be placed now, gpuq forecasts when it
 * can: running pods free their resources at their expected end (admission
 * or start time plus the job's spec.expectedDurationSeconds), and the first
 * moment at which the gang fits, on the nodes it would then get, is its
 * reservation and its status.estimatedStartTime. Smaller jobs may then be
 * backfilled only if they end before the reservation starts, so they never
 * delay it. This is EASY backfilling (Lifka, "The ANL/IBM SP scheduling
 * system", JSSPP 1995), the rule Slurm's backfill scheduler also applies.
 *
 * Pure; times are Unix milliseconds.
 */
#ifndef GQ_CONTROLLER_FORECAST_H
#define GQ_CONTROLLER_FORECAST_H
#include <stddef.h>
#include <stdint.h>

#include "api/gpujob.h"
#include "api/pod.h"
#include "decide/place.h"

/* One pod that will free its requests: on node 'node' (name, borrowed),
 * requests 'req' (borrowed; as committed to the snapshot), at end_ms
 * (Unix ms; -1 when unknown: its job has no expectedDurationSeconds). */
struct gq_forecast_release {
  const char *node;
  const struct gq_podsched *req;
  int64_t end_ms;
};

/* Forecasts when job j fits on nodes of 'flavor' (as gq_place_job()),
 * given that the pods in rel[0..n_rel-1] (all committed to c) free their
 * requests at their end_ms, earliest first; pods with end_ms -1 are never
 * counted on. An end already past counts as now. Returns 0 with *start_ms
 * (now_ms if j fits now) and out[0..j->replicas-1] (the nodes it would
 * get: the reservation), or GQ_ECAPACITY with *start_ms = -1 when the
 * known ends do not free enough. c is left as it was. Releases naming a
 * node not in c are ignored. */
int gq_forecast_start(struct gq_snapshot *c, const struct gq_gpujob *j,
                      const char *flavor, const struct gq_forecast_release *rel,
                      size_t n_rel, int64_t now_ms, int64_t *start_ms,
                      size_t *out);

/* Returns 1 if a job of expected_duration_s seconds (-1: unknown) admitted
 * at now_ms may be backfilled ahead of a reservation starting at
 * reservation_ms: it must be known to end by then (computed without
 * overflow for any duration). A reservation of -1 (none) allows
 * everything; one already due (before now_ms) allows only a zero-length
 * job. now_ms >= 0. */
int gq_forecast_backfill_allowed(int64_t now_ms, int64_t expected_duration_s,
                        int64_t reservation_ms);

#endif
