/* decide/position.h - which queue positions gpuq writes (issue 7: 100k
 * queued jobs must not flood the API server with status writes).
 *
 * status.queuePosition is exact for the first GQ_POSITION_EXACT jobs of
 * each team's queue and coarse beyond: a job deep in a long queue is
 * rewritten only when the position it shows is off by more than a quarter,
 * so on its way to the head it is written a few times, not at every
 * admission ahead of it (docs/controller.md "Queue positions").
 *
 * Pure: no I/O, no clock, no global state.
 */
#ifndef GQ_DECIDE_POSITION_H
#define GQ_DECIDE_POSITION_H
#include <stdint.h>

#define GQ_POSITION_EXACT 100 /* positions kept exact in each team's queue */

/* Given the position a queued job's status shows (0 = none written yet)
 * and its exact 1-based place in its team's queue, returns 1 when the
 * status should be rewritten: when they differ and either is within the
 * first exact_k (those are kept exact, including a job entering or leaving
 * them), or when the shown value is off by more than a quarter of itself.
 * So a job stays within 25% of its place (as far as the sweep has come),
 * and an admission costs about 4 ln(n / exact_k) writes beyond the first
 * exact_k in a queue of n (12 for n = 20 x exact_k) instead of n. Returns 0
 * otherwise (also for exact < 1: not queued, nothing to show). */
int gq_position_due(int64_t shown, int64_t exact, int64_t exact_k);

#endif
