/* base/backoff.c - exponential backoff with jitter (see backoff.h). */
#include "base/backoff.h"

#include <time.h>

/* splitmix64 (Steele, Lea, Flood: "Fast splittable pseudorandom number
 * generators", OOPSLA 2014): tiny, good enough to spread retries. */
static uint64_t splitmix64(uint64_t *s)
{
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void gq_backoff_init(struct gq_backoff *b, uint64_t base_ms, uint64_t max_ms,
                     double factor, double jitter, uint64_t seed)
{
  struct timespec ts;

  b->base_ms = base_ms ? base_ms : 1;
  b->max_ms = max_ms < b->base_ms ? b->base_ms : max_ms;
  b->factor = factor < 1.0 ? 1.0 : factor;
  b->jitter = jitter < 0.0 ? 0.0 : jitter;
  b->attempt = 0;
  if (seed == 0) {
    clock_gettime(CLOCK_MONOTONIC, &ts);
    seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^
           (uint64_t)(uintptr_t)b;
  }
  b->_rng = seed;
}

double gq_backoff_rand(struct gq_backoff *b)
{
  return (double)(splitmix64(&b->_rng) >> 11) * (1.0 / 9007199254740992.0);
}

/* step(n) = min(base * factor^n, max), computed in double so that a large n
 * saturates at max instead of overflowing. */
static uint64_t step_ms(const struct gq_backoff *b)
{
  double d = (double)b->base_ms;
  unsigned i;

  for (i = 0; i < b->attempt && d < (double)b->max_ms; i++)
    d *= b->factor;
  return d >= (double)b->max_ms ? b->max_ms : (uint64_t)d;
}

uint64_t gq_backoff_next(struct gq_backoff *b)
{
  uint64_t step = step_ms(b);
  double extra = b->jitter * (double)step * gq_backoff_rand(b);

  if (b->attempt < 64)
    b->attempt++;
  if (extra >= (double)(UINT64_MAX - step))
    return UINT64_MAX;
  return step + (uint64_t)extra;
}

uint64_t gq_backoff_next_at_least(struct gq_backoff *b, uint64_t floor_ms)
{
  uint64_t d = gq_backoff_next(b);

  return d < floor_ms ? floor_ms : d;
}

void gq_backoff_reset(struct gq_backoff *b)
{
  b->attempt = 0;
}
