/* cli/usage.h - the arithmetic of `kubectl gpuq usage`: per-job GPU-seconds
 * and queue times in, per-group sums, queue-time percentiles and cost out.
 *
 * Pure: no I/O, no clock (the caller passes "now"), no JSON; the only
 * allocations are the report's rows and scratch arrays (gq_xmalloc, which
 * aborts on OOM, so nothing here fails for memory). The JSON edge that fills
 * struct gq_usage_job from a GpuJob is gq_cli_usage_job() (cli/commands.h).
 *
 * Units, everywhere in this header: GPU time in GPU-seconds (int64, as the
 * GpuJob status counts it: allocatedGPUSeconds, usedGPUSeconds,
 * idleGPUSeconds), prices in USD per GPU-hour, cost in USD, queue times in
 * whole seconds, instants in Unix milliseconds. Conversion to GPU-hours is
 * the printer's business (gq_usage_hours()).
 */
#ifndef GQ_CLI_USAGE_H
#define GQ_CLI_USAGE_H
#include <stddef.h>
#include <stdint.h>

/* What one report row stands for (--by). */
enum gq_usage_by { GQ_USAGE_BY_TEAM, GQ_USAGE_BY_NAMESPACE, GQ_USAGE_BY_JOB };

/* One GpuJob's figures. Strings are borrowed (from the JSON document the
 * job came from) and must outlive every report built from the job. */
struct gq_usage_job {
  const char *ns, *name, *team; /* team NULL: spec.team missing */
  const char *flavor;       /* status.flavor (GPU product), NULL if never
                               admitted */
  int64_t allocated_s;      /* GPU-seconds over all attempts, >= 0 */
  int64_t used_s;           /* utilization x GPUs, integrated */
  int64_t idle_s;           /* allocated while under the idle threshold */
  int64_t queue_s;          /* first start - creation, s; -1 not started */
  int64_t completed_ms;     /* status.completionTime; 0 while not done */
};

/* Prices per GPU product, USD per GPU-hour. Initialize with
 * gq_usage_prices_init(), release with gq_usage_prices_release(). */
struct gq_usage_price {
  char *product; /* owned */
  double usd;    /* per GPU-hour, finite, >= 0 */
};

struct gq_usage_prices {
  struct gq_usage_price *v; /* owned */
  size_t n, cap;
};

/* One row of the report: the sums over the jobs of its group. */
struct gq_usage_row {
  /* The group's key, borrowed from its first job (in key order): team
   * (--by team), ns (--by namespace) or ns, name (--by job); with --by job
   * team and flavor are the job's too. */
  const char *team, *ns, *name, *flavor;
  size_t jobs;
  int64_t allocated_s, used_s, idle_s;  /* GPU-seconds */
  int64_t queue_p50_s, queue_p95_s;     /* -1: no job of the row started */
  double cost;          /* USD for the priced allocated GPU-seconds */
  int64_t unpriced_s;   /* allocated GPU-seconds without a price */
};

struct gq_usage_report {
  struct gq_usage_row *rows; /* owned; sorted by key */
  size_t n;
  int64_t unpriced_s;        /* sum of the rows' unpriced_s */
  const char *unpriced;      /* one product without a price (borrowed from
                                a job), for the warning; NULL if none */
};

/* Makes *p an empty price list (caller-owned struct, nothing allocated). */
void gq_usage_prices_init(struct gq_usage_prices *p);
/* Frees p's entries and leaves it empty, as after gq_usage_prices_init(). */
void gq_usage_prices_release(struct gq_usage_prices *p);

/* Sets product's price to usd (replacing an earlier one: set the
 * ConfigMap's prices first, then the flags', and the flags win). product is
 * copied. */
void gq_usage_prices_set(struct gq_usage_prices *p, const char *product,
                         double usd);

/* Returns 1 and *usd when product has a price, else 0 (product NULL: 0). */
int gq_usage_prices_get(const struct gq_usage_prices *p, const char *product,
                        double *usd);

/* Parses a price in USD per GPU-hour: a decimal number, finite, >= 0, with
 * nothing after it ("2.5", "0", "12"). Returns 0 and *usd, or GQ_EINVAL. */
int gq_usage_parse_usd(const char *s, double *usd);

/* Parses a --price argument "PRODUCT=USD". Returns 0 with *usd and the
 * product copied into product (len bytes), or GQ_EINVAL (empty product,
 * missing '=', bad number, product longer than len - 1). */
int gq_usage_parse_price(const char *arg, char *product, size_t len,
                         double *usd);


/* Parses --by: "team", "namespace" or "job". Returns 0 or GQ_EINVAL. */
int gq_usage_parse_by(const char *s, enum gq_usage_by *by);

/* Whether job j counts in a --since window of since_ms ending at now_ms:
 * 1 when it has not completed (it holds or waits for GPUs now) or
 * completed at or after now_ms - since_ms; since_ms 0 means no window (every
 * job counts). A job counts with all its GPU-seconds: the status holds
 * lifetime totals, not a time series. */
int gq_usage_counts(const struct gq_usage_job *j, int64_t now_ms,
                    int64_t since_ms);

/* The p-th percentile (0 < p <= 100) of v[0..n-1] by the nearest-rank
 * method: the smallest value with at least p% of the values at or below it
 * (an observed value, never interpolated). Sorts v in place. Returns -1
 * when n is 0. */
int64_t gq_usage_percentile(int64_t *v, size_t n, double p);

/* USD for gpu_s GPU-seconds at usd_per_hour per GPU-hour. */
double gq_usage_cost(int64_t gpu_s, double usd_per_hour);

/* GPU-seconds as GPU-hours. */
double gq_usage_hours(int64_t gpu_s);

/* used_s as a percentage of allocated_s; -1 when allocated_s <= 0 (no
 * efficiency without allocation). May exceed 100 if the inputs do. */
double gq_usage_efficiency(int64_t used_s, int64_t allocated_s);

/* Groups jobs[0..n-1] (borrowed) by 'by' into *r: one row per team,
 * namespace or job in key order (byte order of the names; a job without a
 * team sorts first, its team NULL), with the sums, queue-time p50 and p95
 * of the jobs that started, and the cost of each job's allocated
 * GPU-seconds at its flavor's price in p (NULL: no prices). Counts the
 * allocated GPU-seconds of jobs whose flavor has no price (jobs with no
 * allocation are not unpriced). Release *r with
 * gq_usage_report_release(); it borrows the jobs' strings. */
void gq_usage_group(const struct gq_usage_job *jobs, size_t n,
                    enum gq_usage_by by, const struct gq_usage_prices *p,
                    struct gq_usage_report *r);

/* Frees r's rows (not the jobs' strings, which r only borrowed) and leaves
 * it empty. */
void gq_usage_report_release(struct gq_usage_report *r);

#endif
