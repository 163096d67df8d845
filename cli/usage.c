/* cli/usage.c - usage arithmetic (see usage.h). */
#include "cli/usage.h"

#include "base/alloc.h"
#include "base/err.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HOUR_S 3600

void gq_usage_prices_init(struct gq_usage_prices *p)
{
  memset(p, 0, sizeof(*p));
}

void gq_usage_prices_release(struct gq_usage_prices *p)
{
  for (size_t i = 0; i < p->n; i++)
    free(p->v[i].product);
  free(p->v);
  gq_usage_prices_init(p);
}

void gq_usage_prices_set(struct gq_usage_prices *p, const char *product,
                         double usd)
{
  for (size_t i = 0; i < p->n; i++)
    if (!strcmp(p->v[i].product, product)) {
      p->v[i].usd = usd;
      return;
    }
  if (p->n == p->cap) {
    p->cap = p->cap ? 2 * p->cap : 8;
    p->v = gq_xrealloc(p->v, p->cap * sizeof(*p->v));
  }
  p->v[p->n].product = gq_xstrdup(product);
  p->v[p->n++].usd = usd;
}

int gq_usage_prices_get(const struct gq_usage_prices *p, const char *product,
                        double *usd)
{
  if (!p || !product)
    return 0;
  for (size_t i = 0; i < p->n; i++)
    if (!strcmp(p->v[i].product, product)) {
      *usd = p->v[i].usd;
      return 1;
    }
  return 0;
}

int gq_usage_parse_usd(const char *s, double *usd)
{
  char *end;
  double v;

  /* strtod alone would take " 2", "inf", "nan" and hex floats */
  if (!s || !((s[0] >= '0' && s[0] <= '9') || s[0] == '.') ||
      strpbrk(s, "xXnN"))
    return GQ_EINVAL;
  errno = 0;
  v = strtod(s, &end);
  if (errno || *end || !isfinite(v) || v < 0)
    return GQ_EINVAL;
  *usd = v;
  return 0;
}

int gq_usage_parse_price(const char *arg, char *product, size_t len,
                         double *usd)
{
  const char *eq = arg ? strchr(arg, '=') : NULL;

  if (!eq || eq == arg || (size_t)(eq - arg) >= len ||
      gq_usage_parse_usd(eq + 1, usd) != 0)
    return GQ_EINVAL;
  memcpy(product, arg, (size_t)(eq - arg));
  product[eq - arg] = '\0';
  return 0;
}

int gq_usage_parse_by(const char *s, enum gq_usage_by *by)
{
  if (s && !strcmp(s, "team"))
    *by = GQ_USAGE_BY_TEAM;
  else if (s && !strcmp(s, "namespace"))
    *by = GQ_USAGE_BY_NAMESPACE;
  else if (s && !strcmp(s, "job"))
    *by = GQ_USAGE_BY_JOB;
  else
    return GQ_EINVAL;
  return 0;
}

int gq_usage_counts(const struct gq_usage_job *j, int64_t now_ms,
                    int64_t since_ms)
{
  return since_ms <= 0 || j->completed_ms == 0 ||
         j->completed_ms >= now_ms - since_ms;
}

static int cmp_i64(const void *a, const void *b)
{
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

  return x < y ? -1 : x > y;
}

int64_t gq_usage_percentile(int64_t *v, size_t n, double p)
{
  size_t rank;

  if (n == 0)
    return -1;
  qsort(v, n, sizeof(*v), cmp_i64);
  /* nearest rank: ceil(p/100 * n), 1-based; the epsilon keeps 95% of 20
   * at rank 19 despite binary rounding */
  rank = (size_t)ceil(p / 100.0 * (double)n - 1e-9);
  if (rank < 1)
    rank = 1;
  if (rank > n)
    rank = n;
  return v[rank - 1];
}

double gq_usage_cost(int64_t gpu_s, double usd_per_hour)
{
  return (double)gpu_s / HOUR_S * usd_per_hour;
}

double gq_usage_hours(int64_t gpu_s)
{
  return (double)gpu_s / HOUR_S;
}

double gq_usage_efficiency(int64_t used_s, int64_t allocated_s)
{
  if (allocated_s <= 0)
    return -1;
  return 100.0 * (double)used_s / (double)allocated_s;
}

/* NULL sorts before every string. */
static int cmp_str(const char *a, const char *b)
{
  if (!a || !b)
    return (a != NULL) - (b != NULL);
  return strcmp(a, b);
}

/* qsort has no context argument: the grouping key travels with each
 * element instead of through a global. */
struct keyed {
  const struct gq_usage_job *j;
  enum gq_usage_by by;
};

static int cmp_key(const struct gq_usage_job *x, const struct gq_usage_job *y,
                   enum gq_usage_by by)
{
  int c;

  if (by == GQ_USAGE_BY_TEAM)
    return cmp_str(x->team, y->team);
  c = cmp_str(x->ns, y->ns);
  if (c || by == GQ_USAGE_BY_NAMESPACE)
    return c;
  return cmp_str(x->name, y->name);
}

static int cmp_keyed(const void *a, const void *b)
{
  const struct keyed *x = a, *y = b;

  return cmp_key(x->j, y->j, x->by);
}

/* Adds job j to row w (queue times collected into q, *nq of them). */
static void add_job(struct gq_usage_row *w, const struct gq_usage_job *j,
                    const struct gq_usage_prices *p, int64_t *q, size_t *nq,
                    const char **unpriced)
{
  double usd;

  w->jobs++;
  w->allocated_s += j->allocated_s;
  w->used_s += j->used_s;
  w->idle_s += j->idle_s;
  if (j->queue_s >= 0)
    q[(*nq)++] = j->queue_s;
  if (gq_usage_prices_get(p, j->flavor, &usd))
    w->cost += gq_usage_cost(j->allocated_s, usd);
  else if (j->allocated_s > 0) {
    w->unpriced_s += j->allocated_s;
    if (!*unpriced && j->flavor)
      *unpriced = j->flavor;
  }
}

void gq_usage_group(const struct gq_usage_job *jobs, size_t n,
                    enum gq_usage_by by, const struct gq_usage_prices *p,
                    struct gq_usage_report *r)
{
  struct keyed *k = gq_xcalloc(n + 1, sizeof(*k));
  int64_t *q = gq_xcalloc(n + 1, sizeof(*q));
  size_t i = 0;

  memset(r, 0, sizeof(*r));
  r->rows = gq_xcalloc(n + 1, sizeof(*r->rows));
  for (i = 0; i < n; i++)
    k[i] = (struct keyed){&jobs[i], by};
  qsort(k, n, sizeof(*k), cmp_keyed);
  for (i = 0; i < n;) {
    struct gq_usage_row *w = &r->rows[r->n++];
    const struct gq_usage_job *first = k[i].j;
    size_t nq = 0;

    w->team = first->team;
    w->ns = by == GQ_USAGE_BY_TEAM ? NULL : first->ns;
    w->name = by == GQ_USAGE_BY_JOB ? first->name : NULL;
    w->flavor = by == GQ_USAGE_BY_JOB ? first->flavor : NULL;
    if (by == GQ_USAGE_BY_NAMESPACE)
      w->team = NULL;
    for (; i < n && cmp_key(k[i].j, first, by) == 0; i++)
      add_job(w, k[i].j, p, q, &nq, &r->unpriced);
    w->queue_p50_s = gq_usage_percentile(q, nq, 50);
    w->queue_p95_s = gq_usage_percentile(q, nq, 95);
    r->unpriced_s += w->unpriced_s;
  }
  free(q);
  free(k);
}

void gq_usage_report_release(struct gq_usage_report *r)
{
  free(r->rows);
  memset(r, 0, sizeof(*r));
}
