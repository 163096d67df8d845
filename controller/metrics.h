/* controller/metrics.h - a small Prometheus metrics registry.
 *
 * Debian packages no C Prometheus client, so this is gpuq's own: counters,
 * gauges and histograms, each a *family* (a name, help text and up to
 * GQ_METRICS_MAX_LABELS label names) whose *children* are keyed by label
 * values, and one renderer for the text exposition format 0.0.4 that
 * /metrics serves (controller/serve.h). Source: the Prometheus documentation,
 * "Exposition formats" (text format 0.0.4) and "Data model" (name syntax).
 *
 * Invariants: families render in registration order and their children
 * sorted by label values (byte order, first label first), so the output is
 * deterministic. A family without labels always has its single child, at 0
 * until updated; a family with labels renders nothing until it has a child
 * (as the Go client does for an empty vector). Values are doubles in the
 * unit the family's name carries (_seconds, _bytes, a bare count).
 *
 * Errors: registering an invalid or duplicate name, more than
 * GQ_METRICS_MAX_LABELS labels, or histogram bounds that are not strictly
 * increasing is a programmer error and aborts with a "BUG" line on stderr,
 * as allocation failure does (base/alloc.h). So is updating a family with
 * the wrong verb (observe on a counter). Bad *values* are ordinary errors:
 * the update functions return GQ_EINVAL or GQ_ETOOBIG and change nothing.
 *
 * Ownership: the registry owns its families and their children; a struct
 * gq_metric pointer stays valid until gq_metrics_free(). Names, help text
 * and label values are copied. Not thread-safe: loop thread only.
 */
#ifndef GQ_CONTROLLER_METRICS_H
#define GQ_CONTROLLER_METRICS_H
#include <stddef.h>

struct gq_buf;
struct gq_metrics;
struct gq_metric;

#define GQ_METRICS_MAX_LABELS 4       /* label names per family */
#define GQ_METRICS_MAX_CHILDREN 10000 /* label value sets per family */
#define GQ_METRICS_MAX_VALUE 1024     /* bytes per label value */

/* Returns a new, empty registry (never NULL). Free with gq_metrics_free(). */
struct gq_metrics *gq_metrics_new(void);

/* Frees the registry with every family and child. NULL is ignored. */
void gq_metrics_free(struct gq_metrics *m);

/* Registers a family and returns it (never NULL; owned by m). name must
 * match [a-zA-Z_:][a-zA-Z0-9_:]* and be new in m; help is any text;
 * labelnames holds nlabels (0..GQ_METRICS_MAX_LABELS) distinct names
 * matching [a-zA-Z_][a-zA-Z0-9_]* without a leading "__" (labelnames may be
 * NULL when nlabels is 0). Counter names should end in _total. Aborts on
 * any violation (see above). */
struct gq_metric *gq_metrics_counter(struct gq_metrics *m, const char *name,
                                     const char *help, size_t nlabels,
                                     const char *const *labelnames);
struct gq_metric *gq_metrics_gauge(struct gq_metrics *m, const char *name,
                                   const char *help, size_t nlabels,
                                   const char *const *labelnames);

/* Same for a histogram with nb upper bucket bounds (copied), finite and
 * strictly increasing; a trailing +Inf is allowed and dropped, since the
 * +Inf bucket is always rendered. "le" is not allowed as a label name. */
struct gq_metric *gq_metrics_histogram(struct gq_metrics *m, const char *name,
                                       const char *help, size_t nlabels,
                                       const char *const *labelnames,
                                       const double *bounds, size_t nb);

/* The update functions take the child's label values: an array of the
 * family's nlabels strings (borrowed; copied when a child is created;
 * UTF-8, which is not checked), or NULL for a family without labels. A
 * child is created at 0 on first use. Each returns 0, GQ_EINVAL for a bad
 * value (nothing changes), or GQ_ETOOBIG when a value is longer than
 * GQ_METRICS_MAX_VALUE bytes or a new child would exceed
 * GQ_METRICS_MAX_CHILDREN. */

/* Adds v to a counter (v >= 0, else GQ_EINVAL) or a gauge (any v). */
int gq_metric_add(struct gq_metric *g, const char *const *labelvalues,
                  double v);

/* Sets a gauge to v. Also sets a counter (v >= 0, else GQ_EINVAL), for
 * mirroring at collect time a count kept elsewhere; such a count must only
 * grow, except when its owner restarts. */
int gq_metric_set(struct gq_metric *g, const char *const *labelvalues,
                  double v);

/* Records one observation v (not NaN, else GQ_EINVAL) in a histogram: the
 * first bucket whose bound is >= v, the sum and the count. */
int gq_metric_observe(struct gq_metric *g, const char *const *labelvalues,
                      double v);

/* Drops every child of the family, as for a gauge recomputed at each
 * scrape whose label values may disappear (a deleted team). A family
 * without labels gets its single child back at 0. */
void gq_metric_reset(struct gq_metric *g);

/* Appends the exposition text (format 0.0.4) of every family to out: for
 * each family with children "# HELP" (backslash and newline escaped),
 * "# TYPE", then one line per sample with label values escaped (backslash,
 * double quote, newline); a histogram gives cumulative _bucket{le="..."}
 * lines ending with le="+Inf", then _sum and _count. Returns 0, or
 * GQ_ETOOBIG if out's cap was reached (out is then released, as
 * gq_buf_append() does). */
int gq_metrics_render(const struct gq_metrics *m, struct gq_buf *out);

#endif
