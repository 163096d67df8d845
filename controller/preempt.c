/* controller/preempt.c - preemption decisions (see preempt.h). */
#include "controller/preempt.h"

int64_t gq_preempt_at_risk(int64_t now_ms, int64_t start_ms, int64_t ckpt_ms,
                           int64_t interval_s, int64_t gpus)
{
  int64_t base = start_ms;

  if (start_ms <= 0 || now_ms <= start_ms)
    return 0;
  if (ckpt_ms > base && ckpt_ms <= now_ms)
    base = ckpt_ms;
  if (interval_s > 0) {
    int64_t step = interval_s * 1000;
    int64_t periodic = start_ms + (now_ms - start_ms) / step * step;

    if (periodic > base)
      base = periodic;
  }
  return (now_ms - base) / 1000 * gpus;
}
