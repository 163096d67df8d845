/* controller/forecast.c - reservations and backfill (see forecast.h). */
#include "controller/forecast.h"

#include <stdlib.h>

#include "base/alloc.h"
#include "base/err.h"

static int by_end(const void *a, const void *b)
{
  const struct gq_release *x = *(const struct gq_release *const *)a;
  const struct gq_release *y = *(const struct gq_release *const *)b;

  return (x->end_ms > y->end_ms) - (x->end_ms < y->end_ms);
}

int gq_forecast_start(struct gq_capacity *c, const struct gq_gpujob *j,
                      const char *flavor, const struct gq_release *rel,
                      size_t n_rel, int64_t now_ms, int64_t *start_ms,
                      size_t *out)
{
  const struct gq_release **order;
  size_t n = 0, done = 0;
  int rc = GQ_ECAPACITY;

  *start_ms = -1;
  if (gq_place_job(c, j, flavor, out, NULL, 0) == 0) {
    *start_ms = now_ms;
    return 0;
  }
  order = gq_xcalloc(n_rel ? n_rel : 1, sizeof(*order));
  for (size_t i = 0; i < n_rel; i++)
    if (rel[i].end_ms >= 0 && gq_capacity_find(c, rel[i].node) >= 0)
      order[n++] = &rel[i];
  qsort(order, n, sizeof(*order), by_end);
  while (done < n) {
    int64_t t = order[done]->end_ms;

    /* free everything that ends at t, then try */
    while (done < n && order[done]->end_ms == t) {
      gq_capacity_commit(c, order[done]->node, order[done]->req, -1);
      done++;
    }
    if (gq_place_job(c, j, flavor, out, NULL, 0) == 0) {
      *start_ms = t > now_ms ? t : now_ms;
      rc = 0;
      break;
    }
  }
  for (size_t i = 0; i < done; i++)
    gq_capacity_commit(c, order[i]->node, order[i]->req, +1);
  free(order);
  return rc;
}

int gq_backfill_allowed(int64_t now_ms, int64_t expected_duration_s,
                        int64_t reservation_ms)
{
  if (reservation_ms < 0)
    return 1;
  if (expected_duration_s < 0)
    return 0;
  return now_ms + expected_duration_s * 1000 <= reservation_ms;
}
