/* controller/metrics.c - Prometheus registry and text format 0.0.4 (see
 * metrics.h). */
#include "controller/metrics.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"

enum kind { COUNTER, GAUGE, HISTOGRAM };

static const char *const kind_names[] = {"counter", "gauge", "histogram"};

/* One set of label values. key holds the values back to back, each with
 * its NUL, so that ("a", "bc") and ("ab", "c") are different keys. */
struct child {
  UT_hash_handle hh;
  char *key;
  size_t keylen;
  const char *values[GQ_METRICS_MAX_LABELS]; /* into key */
  double value;    /* counter, gauge: the value; histogram: the sum */
  uint64_t count;  /* histogram: observations */
  uint64_t hits[]; /* histogram: per bucket, not cumulative; nb + 1 */
};

struct gq_metric {
  struct gq_metric *next; /* registration order */
  enum kind kind;
  char *name, *help;
  size_t nlabels;
  char *labels[GQ_METRICS_MAX_LABELS];
  double *bounds; /* histogram: nb finite upper bounds */
  size_t nb;
  struct child *children; /* uthash, kept sorted by label values */
};

struct gq_metrics {
  struct gq_metric *head, *tail;
};

/* Registration mistakes and wrong verbs are bugs in gpuq, not conditions
 * to handle: say what and stop, as the allocators do. */
static void bug(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));

static void bug(const char *fmt, ...)
{
  va_list ap;

  fputs("gpuq: BUG: metrics: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}

/* Data model: metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label names the same
 * without ':'. */
static int name_ok(const char *s, int colon)
{
  for (const char *p = s; *p; p++) {
    int c = (unsigned char)*p;

    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
          (colon && c == ':') || (p > s && c >= '0' && c <= '9')))
      return 0;
  }
  return *s != '\0';
}

static void check_labels(const struct gq_metrics *m, const char *name,
                         enum kind kind, size_t nlabels,
                         const char *const *labelnames)
{
  if (!name_ok(name, 1))
    bug("invalid metric name '%s'", name);
  for (const struct gq_metric *f = m->head; f; f = f->next)
    if (!strcmp(f->name, name))
      bug("metric '%s' registered twice", name);
  if (nlabels > GQ_METRICS_MAX_LABELS)
    bug("metric '%s' has %zu labels, at most %d", name, nlabels,
        GQ_METRICS_MAX_LABELS);
  for (size_t i = 0; i < nlabels; i++) {
    const char *l = labelnames[i];

    if (!name_ok(l, 0) || !strncmp(l, "__", 2) ||
        (kind == HISTOGRAM && !strcmp(l, "le")))
      bug("metric '%s': invalid label name '%s'", name, l);
    for (size_t j = 0; j < i; j++)
      if (!strcmp(labelnames[j], l))
        bug("metric '%s': label '%s' given twice", name, l);
  }
}

/* Orders children by their label values, first label first; the uthash
 * in-order insert keeps the table's iteration order sorted, so rendering
 * needs no sort. Comparing the joined keys bytewise is the same as
 * comparing value by value, since the NUL ending each value sorts before
 * any other byte. */
static int child_order(const void *a, const void *b)
{
  const struct child *x = a, *y = b;
  size_t n = x->keylen < y->keylen ? x->keylen : y->keylen;
  int c = memcmp(x->key, y->key, n);

  if (c)
    return c;
  return x->keylen < y->keylen ? -1 : x->keylen > y->keylen;
}

/* Joins the label values into key (NUL after each). Returns the key's
 * length, or 0 with *rc set when a value is too long. */
static size_t make_key(const struct gq_metric *f, const char *const *values,
                       char *key, int *rc)
{
  size_t len = 0;

  for (size_t i = 0; i < f->nlabels; i++) {
    size_t n;

    if (!values[i])
      bug("'%s': label value %zu is NULL", f->name, i);
    n = strlen(values[i]);
    if (n > GQ_METRICS_MAX_VALUE) {
      *rc = GQ_ETOOBIG;
      return 0;
    }
    memcpy(key + len, values[i], n + 1);
    len += n + 1;
  }
  return len;
}

/* Finds or creates the child for values. Returns it, or NULL with *rc set
 * (GQ_ETOOBIG). */
static struct child *child_get(struct gq_metric *f, const char *const *values,
                               int *rc)
{
  char key[GQ_METRICS_MAX_LABELS * (GQ_METRICS_MAX_VALUE + 1) + 1];
  size_t len = make_key(f, values, key, rc), nh;
  struct child *c;

  if (*rc)
    return NULL;
  HASH_FIND(hh, f->children, key, len, c);
  if (c)
    return c;
  if (HASH_COUNT(f->children) >= GQ_METRICS_MAX_CHILDREN) {
    *rc = GQ_ETOOBIG;
    return NULL;
  }
  nh = f->kind == HISTOGRAM ? f->nb + 1 : 0;
  c = gq_xcalloc(1, sizeof(*c) + nh * sizeof(c->hits[0]));
  c->key = gq_xmalloc(len + 1);
  c->keylen = len;
  memcpy(c->key, key, len);
  for (size_t i = 0, off = 0; i < f->nlabels; i++) {
    c->values[i] = c->key + off;
    off += strlen(c->key + off) + 1;
  }
  HASH_ADD_KEYPTR_INORDER(hh, f->children, c->key, len, c, child_order);
  return c;
}

static void children_free(struct gq_metric *f)
{
  struct child *c, *tmp;

  HASH_ITER(hh, f->children, c, tmp) {
    HASH_DEL(f->children, c);
    free(c->key);
    free(c);
  }
}

/* A family without labels has its one child from the start. */
static void add_lone_child(struct gq_metric *f)
{
  int rc = 0;

  if (f->nlabels == 0)
    child_get(f, NULL, &rc);
}

/* Registers a family of any kind; bounds (nb of them) for histograms. */
static struct gq_metric *family_new(struct gq_metrics *m, enum kind kind,
                                    const char *name, const char *help,
                                    size_t nlabels,
                                    const char *const *labelnames,
                                    const double *bounds, size_t nb)
{
  struct gq_metric *f;

  check_labels(m, name, kind, nlabels, labelnames);
  f = gq_xcalloc(1, sizeof(*f));
  f->kind = kind;
  f->name = gq_xstrdup(name);
  f->help = gq_xstrdup(help);
  f->nlabels = nlabels;
  for (size_t i = 0; i < nlabels; i++)
    f->labels[i] = gq_xstrdup(labelnames[i]);
  f->nb = nb;
  f->bounds = gq_xmalloc(nb * sizeof(*f->bounds));
  if (nb)
    memcpy(f->bounds, bounds, nb * sizeof(*f->bounds));
  add_lone_child(f);
  if (m->tail)
    m->tail->next = f;
  else
    m->head = f;
  m->tail = f;
  return f;
}

struct gq_metrics *gq_metrics_new(void)
{
  return gq_xcalloc(1, sizeof(struct gq_metrics));
}

void gq_metrics_free(struct gq_metrics *m)
{
  struct gq_metric *f, *next;

  if (!m)
    return;
  for (f = m->head; f; f = next) {
    next = f->next;
    children_free(f);
    for (size_t i = 0; i < f->nlabels; i++)
      free(f->labels[i]);
    free(f->name);
    free(f->help);
    free(f->bounds);
    free(f);
  }
  free(m);
}

struct gq_metric *gq_metrics_counter(struct gq_metrics *m, const char *name,
                                     const char *help, size_t nlabels,
                                     const char *const *labelnames)
{
  return family_new(m, COUNTER, name, help, nlabels, labelnames, NULL, 0);
}

struct gq_metric *gq_metrics_gauge(struct gq_metrics *m, const char *name,
                                   const char *help, size_t nlabels,
                                   const char *const *labelnames)
{
  return family_new(m, GAUGE, name, help, nlabels, labelnames, NULL, 0);
}

struct gq_metric *gq_metrics_histogram(struct gq_metrics *m, const char *name,
                                       const char *help, size_t nlabels,
                                       const char *const *labelnames,
                                       const double *bounds, size_t nb)
{
  if (nb && isinf(bounds[nb - 1]) && bounds[nb - 1] > 0)
    nb--; /* the +Inf bucket is implicit */
  for (size_t i = 0; i < nb; i++)
    if (!isfinite(bounds[i]) || (i && !(bounds[i] > bounds[i - 1])))
      bug("histogram '%s': bound %zu (%g) is not finite and increasing", name,
          i, bounds[i]);
  return family_new(m, HISTOGRAM, name, help, nlabels, labelnames, bounds, nb);
}

/* Finds the child to update after checking the verb against the kind. */
static struct child *update_target(struct gq_metric *g, int histogram,
                                   const char *verb,
                                   const char *const *labelvalues, int *rc)
{
  if ((g->kind == HISTOGRAM) != histogram)
    bug("%s on %s '%s'", verb, kind_names[g->kind], g->name);
  if (g->nlabels && !labelvalues)
    bug("%s on '%s' without its %zu label values", verb, g->name, g->nlabels);
  return child_get(g, labelvalues, rc);
}

int gq_metric_add(struct gq_metric *g, const char *const *labelvalues, double v)
{
  int rc = 0;
  struct child *c;

  if (g->kind == COUNTER && !(v >= 0))
    return GQ_EINVAL; /* also NaN: counters only go up */
  if (!(c = update_target(g, 0, "add", labelvalues, &rc)))
    return rc;
  c->value += v;
  return 0;
}

int gq_metric_set(struct gq_metric *g, const char *const *labelvalues, double v)
{
  int rc = 0;
  struct child *c;

  if (g->kind == COUNTER && !(v >= 0))
    return GQ_EINVAL;
  if (!(c = update_target(g, 0, "set", labelvalues, &rc)))
    return rc;
  c->value = v;
  return 0;
}

int gq_metric_observe(struct gq_metric *g, const char *const *labelvalues,
                      double v)
{
  int rc = 0;
  struct child *c;
  size_t i = 0;

  if (isnan(v))
    return GQ_EINVAL;
  if (!(c = update_target(g, 1, "observe", labelvalues, &rc)))
    return rc;
  while (i < g->nb && v > g->bounds[i])
    i++;
  c->hits[i]++; /* i == nb: only the +Inf bucket */
  c->count++;
  c->value += v;
  return 0;
}

void gq_metric_reset(struct gq_metric *g)
{
  children_free(g);
  add_lone_child(g);
}

/* --- rendering ------------------------------------------------------- */

/* The output with a sticky error: after the first failed append (the
 * buffer is then released), everything else is skipped. */
struct out {
  struct gq_buf *b;
  int rc;
};

static void put_n(struct out *o, const char *s, size_t n)
{
  if (!o->rc)
    o->rc = gq_buf_append(o->b, s, n);
}

static void put_str(struct out *o, const char *s)
{
  put_n(o, s, strlen(s));
}

/* Writes s with backslash and newline escaped, and the double quote too
 * when quote is set (label values; help text leaves it alone). */
static void put_escaped(struct out *o, const char *s, int quote)
{
  const char *run = s;

  for (; *s; s++) {
    const char *esc = *s == '\\'           ? "\\\\"
                      : *s == '\n'         ? "\\n"
                      : quote && *s == '"' ? "\\\""
                                           : NULL;

    if (!esc)
      continue;
    put_n(o, run, (size_t)(s - run));
    put_str(o, esc);
    run = s + 1;
  }
  put_n(o, run, (size_t)(s - run));
}

/* A sample value: integers (counts, GPUs) in plain digits; other values
 * as the shortest %g that reads back as the same double; Inf and NaN as
 * the format spells them. Go's parser, which Prometheus uses, reads all of
 * these. */
static const char *fmt_double(double v, char buf[32])
{
  if (isnan(v))
    return "NaN";
  if (isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  if (v == floor(v) && fabs(v) < 1e15) {
    snprintf(buf, 32, "%.0f", v);
    return buf;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, 32, "%.*g", prec, v);
    if (strtod(buf, NULL) == v)
      break;
  }
  return buf;
}

/* name[suffix]{l1="v1",...[,le="bound"]} value\n */
static void put_sample(struct out *o, const struct gq_metric *f,
                       const char *suffix, const struct child *c,
                       const char *le, const char *value)
{
  char sep = '{';

  put_str(o, f->name);
  put_str(o, suffix);
  for (size_t i = 0; i < f->nlabels; i++, sep = ',') {
    put_n(o, &sep, 1);
    put_str(o, f->labels[i]);
    put_str(o, "=\"");
    put_escaped(o, c->values[i], 1);
    put_str(o, "\"");
  }
  if (le) {
    put_n(o, &sep, 1);
    put_str(o, "le=\"");
    put_str(o, le);
    put_str(o, "\"");
    sep = ',';
  }
  if (sep == ',')
    put_str(o, "}");
  put_str(o, " ");
  put_str(o, value);
  put_str(o, "\n");
}

static void put_histogram(struct out *o, const struct gq_metric *f,
                          const struct child *c)
{
  char le[32], num[32];
  uint64_t cum = 0;

  for (size_t i = 0; i <= f->nb; i++) {
    cum += c->hits[i];
    snprintf(num, sizeof(num), "%" PRIu64, cum);
    put_sample(o, f, "_bucket", c,
               i < f->nb ? fmt_double(f->bounds[i], le) : "+Inf", num);
  }
  put_sample(o, f, "_sum", c, NULL, fmt_double(c->value, num));
  snprintf(num, sizeof(num), "%" PRIu64, c->count);
  put_sample(o, f, "_count", c, NULL, num);
}

static void put_family(struct out *o, const struct gq_metric *f)
{
  char num[32];

  if (!f->children)
    return;
  put_str(o, "# HELP ");
  put_str(o, f->name);
  put_str(o, " ");
  put_escaped(o, f->help, 0);
  put_str(o, "\n# TYPE ");
  put_str(o, f->name);
  put_str(o, " ");
  put_str(o, kind_names[f->kind]);
  put_str(o, "\n");
  for (const struct child *c = f->children; c; c = c->hh.next) {
    if (f->kind == HISTOGRAM)
      put_histogram(o, f, c);
    else
      put_sample(o, f, "", c, NULL, fmt_double(c->value, num));
  }
}

int gq_metrics_render(const struct gq_metrics *m, struct gq_buf *out)
{
  struct out o = {out, 0};

  for (const struct gq_metric *f = m->head; f && !o.rc; f = f->next)
    put_family(&o, f);
  return o.rc;
}
