/* decide/las.c - attained-service scheduling and fair share over time
 * (see las.h). */
#include "decide/las.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "decide/names.h"

int gq_sched_policy_parse(const char *s, enum gq_sched_policy *out)
{
  if (s && !strcmp(s, "fifo-backfill"))
    *out = GQ_SCHED_FIFO_BACKFILL;
  else if (s && !strcmp(s, "attained-service"))
    *out = GQ_SCHED_ATTAINED;
  else
    return GQ_EINVAL;
  return 0;
}

const char *gq_sched_policy_name(enum gq_sched_policy p)
{
  return p == GQ_SCHED_ATTAINED ? "attained-service" : "fifo-backfill";
}

int gq_las_parse_thresholds(const char *s, struct gq_las *l, char *err,
                            size_t len)
{
  int64_t t[GQ_LAS_LEVELS_MAX - 1];
  size_t n = 0;
  char part[32];

  while (s && *s) {
    const char *comma = strchr(s, ',');
    size_t k = comma ? (size_t)(comma - s) : strlen(s);

    if (n == GQ_LAS_LEVELS_MAX - 1) {
      snprintf(err, len, "at most %d thresholds, got more",
               GQ_LAS_LEVELS_MAX - 1);
      return GQ_EINVAL;
    }
    if (k == 0 || k >= sizeof(part)) {
      snprintf(err, len, "threshold %zu: want GPU-seconds, got '%.*s'",
               n + 1, (int)(k < 31 ? k : 31), s);
      return GQ_EINVAL;
    }
    memcpy(part, s, k);
    part[k] = '\0';
    if (gq_parse_int64(part, &t[n]) != 0 || t[n] <= 0 ||
        (n && t[n] <= t[n - 1])) {
      snprintf(err, len, "threshold %zu: want GPU-seconds > 0 and above "
               "the one before, got '%s'", n + 1, part);
      return GQ_EINVAL;
    }
    n++;
    s = comma ? comma + 1 : s + k;
    if (comma && !*s) {
      snprintf(err, len, "threshold %zu: empty", n + 1);
      return GQ_EINVAL;
    }
  }
  if (n == 0) {
    snprintf(err, len, "want at least one threshold (GPU-seconds)");
    return GQ_EINVAL;
  }
  memcpy(l->thresholds, t, n * sizeof(*t));
  l->n_thresholds = n;
  return 0;
}

int gq_las_level(const struct gq_las *l, int64_t service_gpu_s)
{
  int k = 0;

  if (!l)
    return 0;
  while ((size_t)k < l->n_thresholds && service_gpu_s >= l->thresholds[k])
    k++;
  return k;
}

int64_t gq_las_service(int64_t base_gpu_s, int64_t gpus, int64_t start_ms,
                       int64_t now_ms)
{
  int64_t s = base_gpu_s > 0 ? base_gpu_s : 0;

  if (start_ms > 0 && now_ms > start_ms && gpus > 0)
    s += (now_ms - start_ms) / 1000 * gpus;
  return s;
}

int gq_las_demotable(const struct gq_las *l, int checkpoint, int drain_wait,
                     int64_t interval_s, int64_t start_ms, int64_t now_ms)
{
  int64_t least = l ? l->min_run_s : 0;

  if (!l || !checkpoint || drain_wait || start_ms <= 0)
    return 0;
  if (interval_s > least)
    least = interval_s;
  return now_ms - start_ms >= least * 1000;
}

int gq_las_starved(const struct gq_las *l, int level, int64_t requeued_ms,
                   int64_t last_run_ms, int64_t now_ms)
{
  int64_t run = last_run_ms;

  if (!l || level <= 0 || !(l->starve_factor > 0) || requeued_ms <= 0)
    return 0;
  if (run < l->min_run_s * 1000)
    run = l->min_run_s * 1000;
  return (double)(now_ms - requeued_ms) >= l->starve_factor * (double)run;
}

int gq_qorder_before(const struct gq_qorder *a, const struct gq_qorder *b)
{
  if (a->priority != b->priority)
    return a->priority > b->priority;
  if (a->level != b->level)
    return a->level < b->level;
  if (a->queued_ms != b->queued_ms)
    return a->queued_ms < b->queued_ms;
  return strcmp(a->uid ? a->uid : "", b->uid ? b->uid : "") < 0;
}

double gq_fair_decay(double gpu_s, int64_t dt_ms, int64_t half_life_s)
{
  if (half_life_s <= 0 || !(gpu_s > 0))
    return 0;
  if (dt_ms <= 0)
    return gpu_s;
  return gpu_s * exp2(-(double)dt_ms / 1000.0 / (double)half_life_s);
}

double gq_fair_accrue(double gpu_s, int64_t gpus, int64_t dt_ms,
                      int64_t half_life_s)
{
  double f, add = 0;

  if (half_life_s <= 0)
    return 0;
  if (dt_ms <= 0)
    return gpu_s > 0 ? gpu_s : 0;
  f = exp2(-(double)dt_ms / 1000.0 / (double)half_life_s);
  if (gpus > 0)
    add = (double)gpus * ((double)half_life_s / M_LN2) * (1.0 - f);
  return (gpu_s > 0 ? gpu_s * f : 0) + add;
}

double gq_fair_mean_gpus(double gpu_s, int64_t half_life_s)
{
  if (half_life_s <= 0 || !(gpu_s > 0))
    return 0;
  return gpu_s * M_LN2 / (double)half_life_s;
}
