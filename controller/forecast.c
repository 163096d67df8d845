/* controller/forecast.c - reservations and backfill (see forecast.h). */
#include "decide/forecast.h"

#include <stdlib.h>

#include "base/alloc.h"
#include "base/err.h"

struct step {
  const struct gq_forecast_release *rel;
  size_t node; /* index of rel->node in the snapshot */
  int64_t at;  /* end_ms, or now_ms when already past */
};

static int by_end(const void *a, const void *b)
{
  const struct step *x = a, *y = b;

  return (x->at > y->at) - (x->at < y->at);
}

/* Replicas of j node i could hold by GPUs alone (0 if not eligible). */
static int64_t slots(const struct gq_snapshot *c, const unsigned char *elig,
                     size_t i, const struct gq_gpujob *j)
{
  int64_t f;

  if (!elig[i])
    return 0;
  f = gq_snapshot_available(c, i, j->gpu_resource);
  return f > 0 ? f / j->gpus_per_replica : 0;
}

int gq_forecast_start(struct gq_snapshot *c, const struct gq_gpujob *j,
                      const char *flavor, const struct gq_forecast_release *rel,
                      size_t n_rel, int64_t now_ms, int64_t *start_ms,
                      size_t *out)
{
  struct step *order;
  unsigned char *elig;
  struct gq_podsched r;
  size_t n = 0, done = 0;
  int64_t total = 0;
  int rc = GQ_ECAPACITY;

  *start_ms = -1;
  if (gq_place_job(c, j, flavor, out, NULL, 0) == 0) {
    *start_ms = now_ms;
    return 0;
  }
  /* Which nodes could ever take a replica, and how many replicas their
   * free GPUs hold: a full placement is tried only when that count
   * reaches the gang, so a forecast costs one pass over the releases plus
   * a few placements, not one placement per distinct end time. */
  gq_place_replica_request(j, &r);
  elig = gq_xcalloc(c->n ? c->n : 1, 1);
  for (size_t i = 0; i < c->n; i++) {
    elig[i] = gq_place_node_check(c->nodes[i].node, j, flavor, &r, NULL, 0) ==
              NULL;
    total += slots(c, elig, i, j);
  }
  gq_place_replica_release(&r);
  order = gq_xcalloc(n_rel ? n_rel : 1, sizeof(*order));
  for (size_t i = 0; i < n_rel; i++) {
    long k = rel[i].end_ms >= 0 ? gq_snapshot_find(c, rel[i].node) : -1;

    if (k >= 0) {
      order[n].rel = &rel[i];
      order[n].node = (size_t)k;
      order[n++].at = rel[i].end_ms > now_ms ? rel[i].end_ms : now_ms;
    }
  }
  qsort(order, n, sizeof(*order), by_end);
  while (done < n) {
    int64_t t = order[done].at;

    /* free everything that ends at t (all past ends count as now) */
    while (done < n && order[done].at == t) {
      size_t k = order[done].node;

      total -= slots(c, elig, k, j);
      gq_node_usage_add(&c->nodes[k].used, order[done].rel->req, -1);
      total += slots(c, elig, k, j);
      done++;
    }
    if (total >= j->replicas && gq_place_job(c, j, flavor, out, NULL, 0) == 0) {
      *start_ms = t;
      rc = 0;
      break;
    }
  }
  for (size_t i = 0; i < done; i++)
    gq_node_usage_add(&c->nodes[order[i].node].used, order[i].rel->req, +1);
  free(order);
  free(elig);
  return rc;
}

int gq_forecast_backfill_allowed(int64_t now_ms, int64_t expected_duration_s,
                        int64_t reservation_ms)
{
  if (reservation_ms < 0)
    return 1;
  if (expected_duration_s < 0 || reservation_ms < now_ms)
    return expected_duration_s == 0;
  /* now + d * 1000 <= reservation, without overflow */
  return expected_duration_s <= (reservation_ms - now_ms) / 1000;
}
