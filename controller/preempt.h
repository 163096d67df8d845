/* controller/preempt.h - preemption decisions (DESIGN §4, §5), pure: no
 * I/O, no clock (times are parameters), no logging.
 *
 * Units: GPUs are counts; times are Unix milliseconds (virtual under
 * --time-scale); work is in GPU-seconds.
 */
#ifndef GQ_CONTROLLER_PREEMPT_H
#define GQ_CONTROLLER_PREEMPT_H
#include <stdint.h>

/* GPU-seconds a running attempt would lose if it stopped at now_ms without
 * writing a new checkpoint: gpus x the time since its last checkpoint.
 * The last checkpoint is the latest of: the attempt's start start_ms (it
 * resumed from there; 0 = not started: nothing at risk), lastCheckpoint's
 * time ckpt_ms (0 = none) when it is after the start, and the job's own
 * periodic checkpoints every interval_s seconds from the start
 * (checkpoint.intervalSeconds; <= 0 = none), DESIGN §4's estimate of
 * work at risk. Never negative. */
int64_t gq_preempt_at_risk(int64_t now_ms, int64_t start_ms, int64_t ckpt_ms,
                           int64_t interval_s, int64_t gpus);

#endif
