/* decide/usage.c - allocated against used GPUs for one job (see usage.h). */
#include "decide/usage.h"

void gq_usage_start(struct gq_usage *u, int64_t now_ms)
{
  if (u->run_from_ms)
    return;
  u->run_from_ms = now_ms > 0 ? now_ms : 1;
  u->last_ms = u->run_from_ms;
  u->last_pct = -1;
  u->idle_since_ms = 0;
}

/* Counts [u->last_ms, to_ms] at pct as used (and idle under threshold). */
static void count(struct gq_usage *u, int64_t to_ms, int64_t gpus, int pct,
                  int threshold_pct)
{
  double gpu_s = (double)gpus * (double)(to_ms - u->last_ms) / 1000.0;

  if (to_ms <= u->last_ms || pct < 0)
    return;
  u->used_s += gpu_s * pct / 100.0;
  if (pct < threshold_pct)
    u->idle_s += gpu_s;
}

void gq_usage_stop(struct gq_usage *u, int64_t now_ms, int64_t gpus,
                   int threshold_pct)
{
  if (!u->run_from_ms)
    return;
  count(u, now_ms, gpus, u->last_pct, threshold_pct);
  if (now_ms > u->run_from_ms)
    u->alloc_s += (double)gpus * (double)(now_ms - u->run_from_ms) / 1000.0;
  u->run_from_ms = u->last_ms = 0;
  u->last_pct = -1;
  u->idle_since_ms = 0;
}

void gq_usage_reading(struct gq_usage *u, int64_t now_ms, int64_t gpus,
                      int pct, int threshold_pct, int64_t max_gap_ms)
{
  struct gq_usage_reading *r;

  if (!u->run_from_ms || now_ms < u->last_ms)
    return;
  if (pct < 0) {
    u->last_ms = now_ms; /* the interval stays allocated only */
    u->last_pct = -1;
    return;
  }
  pct = pct > 100 ? 100 : pct;
  if (now_ms - u->last_ms <= max_gap_ms)
    count(u, now_ms, gpus, pct, threshold_pct);
  if (pct >= threshold_pct)
    u->idle_since_ms = 0;
  else if (!u->idle_since_ms)
    u->idle_since_ms = u->last_ms;
  r = &u->ring[u->ring_head];
  *r = (struct gq_usage_reading){u->last_ms, now_ms, pct};
  u->ring_head = (u->ring_head + 1) % GQ_USAGE_RING;
  u->ring_n += u->ring_n < GQ_USAGE_RING;
  u->last_ms = now_ms;
  u->last_pct = pct;
}

double gq_usage_alloc_at(const struct gq_usage *u, int64_t now_ms,
                         int64_t gpus)
{
  double s = u->alloc_s;

  if (u->run_from_ms && now_ms > u->run_from_ms)
    s += (double)gpus * (double)(now_ms - u->run_from_ms) / 1000.0;
  return s;
}

int gq_usage_mean(const struct gq_usage *u, int64_t now_ms, int64_t window_ms)
{
  double sum = 0, w = 0;

  for (unsigned i = 0; i < u->ring_n; i++) {
    const struct gq_usage_reading *r = &u->ring[i];
    int64_t from = r->from_ms, len;

    if (r->to_ms < now_ms - window_ms || r->to_ms > now_ms)
      continue;
    if (from < now_ms - window_ms)
      from = now_ms - window_ms;
    len = r->to_ms - from;
    if (len <= 0)
      len = 1; /* a reading at the window's edge still counts */
    sum += (double)r->pct * (double)len;
    w += (double)len;
  }
  return w > 0 ? (int)(sum / w + 0.5) : -1;
}

int64_t gq_usage_idle_ms(const struct gq_usage *u, int64_t now_ms)
{
  return u->idle_since_ms && now_ms > u->idle_since_ms
             ? now_ms - u->idle_since_ms
             : 0;
}
