/* base/backoff.h - exponential backoff with jitter.
 *
 * The delay before retry n (n = 0 for the first retry) is
 *   step(n)  = min(base_ms * factor^n, max_ms)
 *   delay(n) = step(n) + U[0, jitter * step(n))
 * which is client-go's wait.Backoff with Cap and wait.Jitter
 * (k8s.io/apimachinery/pkg/util/wait/backoff.go): jitter spreads retries of
 * many clients apart, the cap bounds the wait. The reflector uses base 800 ms,
 * max 30 s, factor 2, jitter 1.0 for watch errors.
 *
 * All durations are real milliseconds: backoffs never follow the virtual
 * clock (DESIGN §5). The random source is a per-object splitmix64 so that
 * tests can seed it and so that callers need no global state.
 */
#ifndef GQ_BASE_BACKOFF_H
#define GQ_BASE_BACKOFF_H
#include <stdint.h>

struct gq_backoff {
  uint64_t base_ms; /* first step */
  uint64_t max_ms;  /* cap on a step (the jitter is added on top) */
  double factor;    /* growth per retry, >= 1 */
  double jitter;    /* 0 = none; 1.0 = up to twice the step */
  unsigned attempt; /* retries handed out since the last reset */
  uint64_t _rng;
};

/* Sets up 'b'. base_ms >= 1, max_ms >= base_ms, factor >= 1, jitter >= 0
 * (out-of-range values are clamped into range). seed 0 picks a seed from the
 * clock and the object's address. */
void gq_backoff_init(struct gq_backoff *b, uint64_t base_ms, uint64_t max_ms,
                     double factor, double jitter, uint64_t seed);

/* Returns the delay in real milliseconds before the next retry and advances
 * the attempt counter. Never returns 0 and never overflows. */
uint64_t gq_backoff_next(struct gq_backoff *b);

/* Returns next's delay, but at least 'floor_ms' (e.g. a server's Retry-After
 * in milliseconds; RFC 9110 §10.2.3). Advances like gq_backoff_next(). */
uint64_t gq_backoff_next_at_least(struct gq_backoff *b, uint64_t floor_ms);

/* Starts over at base_ms (after a success, or a period of health). */
void gq_backoff_reset(struct gq_backoff *b);

/* Returns a uniformly distributed double in [0, 1) from b's generator. */
double gq_backoff_rand(struct gq_backoff *b);

#endif
