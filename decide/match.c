/* decide/match.c - Kubernetes' pod-to-node matching rules (see match.h).
 *
 * Every rule cites the Kubernetes function it reproduces; where gpuq
 * differs, the comment says so and why.
 */
#include "decide/match.h"

#include "decide/names.h"

#include "base/alloc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *nz(const char *s)
{
  return s ? s : "";
}

static void say(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* snprintf into an optional caller buffer. */
static void say(char *why, size_t whylen, const char *fmt, ...)
{
  va_list ap;

  if (!why || whylen == 0)
    return;
  va_start(ap, fmt);
  vsnprintf(why, whylen, fmt, ap);
  va_end(ap);
}

/* ---- taints and tolerations --------------------------------------------- */

/* Toleration.ToleratesTaint (k8s.io/api/core/v1/toleration.go). The key
 * check is skipped for an empty key whatever the operator, as in Go; the
 * apiserver only lets an empty key through with Exists. */
int gq_toleration_tolerates(const struct gq_toleration *t,
                            const struct gq_taint *taint)
{
  if (*nz(t->effect) && strcmp(t->effect, nz(taint->effect)) != 0)
    return 0;
  if (*nz(t->key) && strcmp(t->key, nz(taint->key)) != 0)
    return 0;
  switch (t->op) {
  case GQ_TOL_EXISTS:
    return 1;
  case GQ_TOL_EQUAL: /* "" is Equal too: the decoder maps it here */
    return strcmp(nz(t->value), nz(taint->value)) == 0;
  }
  return 0;
}

/* TolerationsTolerateTaint (pkg/apis/core/v1/helper/helpers.go): any one
 * toleration suffices. */
static int tolerated(const struct gq_podsched *s, const struct gq_taint *taint)
{
  for (size_t i = 0; i < s->n_tolerations; i++)
    if (gq_toleration_tolerates(&s->tolerations[i], taint))
      return 1;
  return 0;
}

const struct gq_taint *gq_untolerated_taint(const struct gq_podsched *s,
                                            const struct gq_node *n,
                                            int noexecute_only)
{
  for (size_t i = 0; i < n->n_taints; i++) {
    const struct gq_taint *t = &n->taints[i];
    const char *e = nz(t->effect);
    int blocks = strcmp(e, "NoExecute") == 0 ||
                 (!noexecute_only && strcmp(e, "NoSchedule") == 0);

    /* DoNotScheduleTaintsFilterFunc: PreferNoSchedule only scores. */
    if (blocks && !tolerated(s, t))
      return t;
  }
  return NULL;
}

/* ---- node affinity ------------------------------------------------------ */

/* Would labels.NewRequirement accept r (selector.go)? It checks the key,
 * the value count per operator, Gt/Lt values as integers, and every value
 * as a label value. A rejected requirement is a parse error, and
 * nodeSelectorTerm.match never matches a term with parse errors. */
static int expr_valid(const struct gq_sel_req *r)
{
  int64_t v;

  if (!gq_qualified_name_ok(nz(r->key)))
    return 0;
  for (size_t i = 0; i < r->n_values; i++)
    if (!gq_name_part_ok(r->values[i], strlen(r->values[i]), 1))
      return 0;
  switch (r->op) {
  case GQ_SEL_IN:
  case GQ_SEL_NOT_IN:
    return r->n_values > 0;
  case GQ_SEL_EXISTS:
  case GQ_SEL_DOES_NOT_EXIST:
    return r->n_values == 0;
  case GQ_SEL_GT:
  case GQ_SEL_LT:
    return r->n_values == 1 && gq_parse_int64(r->values[0], &v) == 0;
  }
  return 0;
}

static int has_value(const struct gq_sel_req *r, const char *v)
{
  for (size_t i = 0; i < r->n_values; i++)
    if (strcmp(r->values[i], v) == 0)
      return 1;
  return 0;
}

/* Requirement.Matches (selector.go) for a requirement expr_valid()
 * accepted. */
static int expr_matches(const struct gq_sel_req *r, const struct gq_meta *m)
{
  const char *v = gq_meta_label(m, r->key);
  int64_t have, want;

  switch (r->op) {
  case GQ_SEL_IN:
    return v && has_value(r, v);
  case GQ_SEL_NOT_IN:
    return !v || !has_value(r, v);
  case GQ_SEL_EXISTS:
    return v != NULL;
  case GQ_SEL_DOES_NOT_EXIST:
    return v == NULL;
  case GQ_SEL_GT:
  case GQ_SEL_LT:
    if (!v || gq_parse_int64(v, &have) != 0 ||
        gq_parse_int64(r->values[0], &want) != 0)
      return 0;
    return r->op == GQ_SEL_GT ? have > want : have < want;
  }
  return 0;
}

/* One matchFields requirement. nodeSelectorRequirementsAsFieldSelector
 * accepts In and NotIn with exactly one value; the apiserver
 * (ValidateNodeFieldSelectorRequirement) accepts only the key
 * metadata.name, the one field extractNodeFields provides. Returns 1 if r
 * holds, 0 if not, -1 if r is invalid (the term never matches). */
static int field_matches(const struct gq_sel_req *r, const char *node_name)
{
  if (strcmp(nz(r->key), "metadata.name") != 0 || r->n_values != 1 ||
      (r->op != GQ_SEL_IN && r->op != GQ_SEL_NOT_IN))
    return -1;
  /* nodeSelectorTerm.match skips fields when the node has none (no
   * name), after the parse errors have already failed the term. */
  if (!*node_name)
    return 1;
  return (strcmp(node_name, r->values[0]) == 0) == (r->op == GQ_SEL_IN);
}

/* nodeSelectorTerm (newNodeSelectorTerm + match): all requirements ANDed;
 * an invalid one anywhere fails the term regardless of order, as parse
 * errors are collected before anything is matched. */
static int term_matches(const struct gq_node_term *t, const struct gq_node *n)
{
  int ok = 1;

  if (t->n_exprs == 0 && t->n_fields == 0)
    return 0; /* isEmptyNodeSelectorTerm: matches no objects */
  for (size_t i = 0; i < t->n_exprs; i++) {
    if (!expr_valid(&t->exprs[i]))
      return 0;
    ok = ok && expr_matches(&t->exprs[i], &n->meta);
  }
  for (size_t i = 0; i < t->n_fields; i++) {
    int r = field_matches(&t->fields[i], nz(n->meta.name));

    if (r < 0)
      return 0;
    ok = ok && r;
  }
  return ok;
}

/* spec.nodeSelector: labels.SelectorFromSet, i.e. key=value for each. */
static int node_selector_ok(const struct gq_podsched *s,
                            const struct gq_node *n)
{
  for (size_t i = 0; i < s->n_node_selector; i++) {
    const char *v = gq_meta_label(&n->meta, s->node_selector[i].key);

    if (!v || strcmp(v, nz(s->node_selector[i].value)) != 0)
      return 0;
  }
  return 1;
}

/* RequiredNodeAffinity.Match: the nodeSelector, then the terms ORed. */
int gq_node_selector_matches(const struct gq_podsched *s,
                             const struct gq_node *n)
{
  if (!node_selector_ok(s, n))
    return 0;
  if (s->n_terms == 0)
    return 1;
  for (size_t i = 0; i < s->n_terms; i++)
    if (term_matches(&s->terms[i], n))
      return 1;
  return 0;
}

/* ---- node usage --------------------------------------------------------- */

void gq_node_usage_init(struct gq_node_usage *u)
{
  memset(u, 0, sizeof(*u));
}

static struct gq_res *usage_slot(struct gq_node_usage *u, const char *name)
{
  for (size_t i = 0; i < u->n_ext; i++)
    if (strcmp(u->ext[i].name, name) == 0)
      return &u->ext[i];
  if (u->n_ext == u->cap_ext) {
    u->cap_ext = u->cap_ext ? u->cap_ext * 2 : 4;
    u->ext = gq_xrealloc(u->ext, u->cap_ext * sizeof(*u->ext));
  }
  /* A copy, so the usage may outlive the pods it was built from. */
  u->ext[u->n_ext].name = gq_xstrdup(name);
  u->ext[u->n_ext].value = 0;
  return &u->ext[u->n_ext++];
}

void gq_node_usage_add(struct gq_node_usage *u, const struct gq_podsched *s,
                       int sign)
{
  u->cpu_milli += sign * s->cpu_milli;
  u->memory_bytes += sign * s->memory_bytes;
  u->pods += sign;
  for (size_t i = 0; i < s->n_extended; i++)
    usage_slot(u, s->extended[i].name)->value += sign * s->extended[i].value;
}

void gq_node_usage_release(struct gq_node_usage *u)
{
  for (size_t i = 0; i < u->n_ext; i++)
    free((char *)u->ext[i].name); /* our gq_xstrdup copy */
  free(u->ext);
  gq_node_usage_init(u);
}

int64_t gq_node_usage_get(const struct gq_node_usage *u, const char *resource)
{
  if (strcmp(resource, "cpu") == 0)
    return u->cpu_milli;
  if (strcmp(resource, "memory") == 0)
    return u->memory_bytes;
  if (strcmp(resource, "pods") == 0)
    return u->pods;
  for (size_t i = 0; i < u->n_ext; i++)
    if (strcmp(u->ext[i].name, resource) == 0)
      return u->ext[i].value;
  return 0;
}

/* ---- resource fit ------------------------------------------------------- */

/* used + req <= alloc, without overflow: a sum beyond int64 cannot fit. */
static int fits(int64_t req, int64_t used, int64_t alloc)
{
  int64_t sum;

  return !__builtin_add_overflow(used, req, &sum) && sum <= alloc;
}

/* Writes "<what><name> (requested R, free F of A)", amounts with the unit
 * suffix u, e.g. "Insufficient cpu (requested 4000m, free 3920m of 3920m)".
 * Kubernetes' Reason is the part before the parenthesis. */
static void say_short(char *why, size_t whylen, const char *what,
                      const char *name, const char *u, int64_t req,
                      int64_t used, int64_t alloc)
{
  int64_t free_ = alloc - used < 0 ? 0 : alloc - used;

  say(why, whylen,
      "%s%s (requested %" PRId64 "%s, free %" PRId64 "%s of %" PRId64 "%s)",
      what, name, req, u, free_, u, alloc, u);
}

/* fitsRequest's scalar-resource loop, restricted to names with a '/': the
 * only non-core resources struct gq_node keeps. */
static const char *fit_extended(const struct gq_node *n,
                                const struct gq_node_usage *used,
                                const struct gq_podsched *s, char *why,
                                size_t whylen)
{
  for (size_t i = 0; i < s->n_extended; i++) {
    const struct gq_res *r = &s->extended[i];
    int64_t alloc, have;

    if (r->value <= 0 || !strchr(r->name, '/'))
      continue; /* "Skip in case request quantity is zero" */
    alloc = gq_node_allocatable(n, r->name);
    have = used ? gq_node_usage_get(used, r->name) : 0;
    if (fits(r->value, have, alloc))
      continue;
    say_short(why, whylen, "Insufficient ", r->name, "", r->value, have, alloc);
    return r->name;
  }
  return NULL;
}

/* fitsRequest (noderesources/fit.go): pods, cpu, memory, then scalars. Go
 * collects every shortage; the first one is enough here, and it is also
 * the one the kubelet reports (predicate.go uses reasons[0]). */
const char *gq_fit_check(const struct gq_node *n,
                         const struct gq_node_usage *used,
                         const struct gq_podsched *s, char *why, size_t whylen)
{
  struct gq_node_usage none;

  gq_node_usage_init(&none);
  if (!used)
    used = &none;
  say(why, whylen, "%s", "");
  if (!fits(1, used->pods, n->pods)) {
    say_short(why, whylen, "Too many ", "pods", "", 1, used->pods, n->pods);
    return "pods";
  }
  if (s->cpu_milli > 0 && !fits(s->cpu_milli, used->cpu_milli, n->cpu_milli)) {
    say_short(why, whylen, "Insufficient ", "cpu", "m", s->cpu_milli,
              used->cpu_milli, n->cpu_milli);
    return "cpu";
  }
  if (s->memory_bytes > 0 &&
      !fits(s->memory_bytes, used->memory_bytes, n->memory_bytes)) {
    say_short(why, whylen, "Insufficient ", "memory", "", s->memory_bytes,
              used->memory_bytes, n->memory_bytes);
    return "memory";
  }
  return fit_extended(n, used, s, why, whylen);
}

void gq_fit_reason(const char *resource, char *buf, size_t len)
{
  say(buf, len, "OutOf%s", nz(resource));
}

/* ---- the scheduler's filters -------------------------------------------- */

/* NodeUnschedulable.Filter: a cordoned node takes only pods that tolerate
 * {Key: node.kubernetes.io/unschedulable, Effect: NoSchedule}. */
static int unschedulable_ok(const struct gq_node *n,
                            const struct gq_podsched *s)
{
  static const struct gq_taint cordon = {GQ_TAINT_UNSCHEDULABLE, "",
                                         "NoSchedule"};

  return !n->unschedulable || tolerated(s, &cordon);
}

const char *gq_node_eligible(const struct gq_node *n,
                             const struct gq_podsched *s, char *why,
                             size_t whylen)
{
  const struct gq_taint *t;

  say(why, whylen, "%s", "");
  if (!n->ready) {
    say(why, whylen, "node(s) were not ready");
    return "NotReady";
  }
  if (!unschedulable_ok(n, s)) {
    say(why, whylen, "node(s) were unschedulable");
    return "Unschedulable";
  }
  t = gq_untolerated_taint(s, n, 0);
  if (t) {
    /* tainttoleration.go: fmt.Sprintf("... {%s: %s}", Key, Value) */
    say(why, whylen, "node(s) had untolerated taint {%s: %s}", nz(t->key),
        nz(t->value));
    return "Taint";
  }
  if (!gq_node_selector_matches(s, n)) {
    say(why, whylen, "node(s) didn't match Pod's node affinity/selector");
    return "NodeAffinity";
  }
  return NULL;
}
