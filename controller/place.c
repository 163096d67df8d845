/* controller/place.c - gang placement (see place.h). */
#include "decide/place.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"

void gq_place_replica_request(const struct gq_gpujob *j, struct gq_podsched *out)
{
  const struct gq_podsched *t = j->sched;
  size_t k = 0;

  *out = *t;
  out->extended = gq_xcalloc(t->n_extended + 1, sizeof(*out->extended));
  for (size_t i = 0; i < t->n_extended; i++)
    if (strcmp(t->extended[i].name, j->gpu_resource) != 0)
      out->extended[k++] = t->extended[i];
  out->extended[k].name = j->gpu_resource;
  out->extended[k++].value = j->gpus_per_replica;
  out->n_extended = k;
}

void gq_place_replica_release(struct gq_podsched *s)
{
  free(s->extended);
  s->extended = NULL;
  s->n_extended = 0;
}

static int product_accepted(const struct gq_gpujob *j, const char *product)
{
  for (size_t i = 0; i < j->n_products; i++)
    if (strcmp(j->products[i], product) == 0)
      return 1;
  return 0;
}

const char *gq_place_node_check(const struct gq_node *n,
                              const struct gq_gpujob *j, const char *flavor,
                              const struct gq_podsched *r, char *why,
                              size_t whylen)
{
  const char *reason = NULL;
  char msg[192] = "";

  if (gq_node_allocatable(n, j->gpu_resource) <= 0) {
    snprintf(msg, sizeof(msg), "node(s) had no allocatable %s",
             j->gpu_resource);
    reason = "NoGpu";
  } else if ((reason = gq_node_eligible(n, r, msg, sizeof(msg)))) {
    /* Kubernetes' own reason and message */
  } else if (j->n_products > 0 && !n->gpu_product) {
    snprintf(msg, sizeof(msg), "node(s) had no GPU product label");
    reason = "GpuProduct";
  } else if (j->n_products > 0 && !product_accepted(j, n->gpu_product)) {
    snprintf(msg, sizeof(msg),
             "node(s) had GPU product %s not in spec.gpu.products",
             n->gpu_product);
    reason = "GpuProduct";
  } else if (flavor && strcmp(flavor, GQ_FLAVOR_ANY) != 0 &&
             (!n->gpu_product || strcmp(n->gpu_product, flavor) != 0)) {
    snprintf(msg, sizeof(msg), "node(s) had GPU product %s, not flavor %s",
             n->gpu_product ? n->gpu_product : "(none)", flavor);
    reason = "Flavor";
  } else if (j->min_memory_mib > 0 && n->gpu_memory_mib < 0) {
    snprintf(msg, sizeof(msg), "node(s) had no GPU memory label");
    reason = "GpuMemory";
  } else if (j->min_memory_mib > 0 && n->gpu_memory_mib < j->min_memory_mib) {
    snprintf(msg, sizeof(msg),
             "node(s) had GPU memory %lld MiB, below spec.gpu.minMemoryMiB "
             "%lld",
             (long long)n->gpu_memory_mib, (long long)j->min_memory_mib);
    reason = "GpuMemory";
  }
  if (whylen)
    snprintf(why, whylen, "%s", msg);
  return reason;
}

/* ---- placement ----------------------------------------------------------- */

/* need: the GPUs of res one replica asks (j->gpus_per_replica) when the
 * free count alone can rule a node out (a positive request of an extended
 * resource: api/match.c fit_extended), else 0. A node with exactly that
 * many free is the tightest fit there can be. */
static int64_t replica_need(const struct gq_gpujob *j)
{
  return j->gpus_per_replica > 0 && strchr(j->gpu_resource, '/')
             ? j->gpus_per_replica
             : 0;
}

/* Places 'replicas' copies of r (one replica of j) by best fit, writing
 * node indexes to out. The nodes are cand[0..m-1], already checked
 * against j (eligible()), or, with cand NULL, every node of c (m = c->n),
 * each given the node checks here (flavor is used only then), and only if it could fit tighter than
 * the best so far: no list of eligible nodes is built. Commits each
 * replica while it searches and uncommits them all before returning, so
 * c is unchanged. Returns how many replicas were placed (== replicas on
 * success). Greedy best fit is exact for feasibility here: the replicas
 * are identical, so the gang fits iff the numbers of replicas each node
 * can hold add up to 'replicas'. A replica's search ends at the first
 * node with exactly replica_need(j) free: nothing fits tighter, and ties
 * keep the first (the nodes are in name order). */
static int32_t place_in(struct gq_snapshot *c, const size_t *cand, size_t m,
                        const struct gq_gpujob *j, const char *flavor,
                        const struct gq_podsched *r, int32_t replicas,
                        size_t *out)
{
  int64_t need = replica_need(j);
  int32_t k;

  for (k = 0; k < replicas; k++) {
    size_t best = 0;
    int64_t best_free = 0;
    int found = 0;

    for (size_t x = 0; x < m; x++) {
      size_t i = cand ? cand[x] : x;
      int64_t f = gq_snapshot_available(c, i, j->gpu_resource);

      if ((need > 0 && f < need) || (found && f >= best_free))
        continue; /* cannot hold it (its fit check would fail), or no tighter */
      if ((!cand && gq_place_node_check(c->nodes[i].node, j, flavor, r,
                                        NULL, 0)) ||
          gq_fit_check(c->nodes[i].node, &c->nodes[i].used, r, NULL, 0))
        continue;
      best = i;
      best_free = f;
      found = 1;
      if (need > 0 && f == need)
        break;
    }
    if (!found)
      break;
    gq_node_usage_add(&c->nodes[best].used, r, +1);
    out[k] = best;
  }
  for (int32_t u = 0; u < k; u++)
    gq_node_usage_add(&c->nodes[out[u]].used, r, -1);
  return k;
}

struct reason {
  char msg[192];
  size_t count;
};

struct reasons {
  struct reason *v;
  size_t n, cap;
};

static void reason_add(struct reasons *rs, const char *msg)
{
  for (size_t i = 0; i < rs->n; i++)
    if (strcmp(rs->v[i].msg, msg) == 0) {
      rs->v[i].count++;
      return;
    }
  if (rs->n == rs->cap) {
    rs->cap = rs->cap ? 2 * rs->cap : 8;
    rs->v = gq_xrealloc(rs->v, rs->cap * sizeof(*rs->v));
  }
  snprintf(rs->v[rs->n].msg, sizeof(rs->v[rs->n].msg), "%s", msg);
  rs->v[rs->n++].count = 1;
}

static int reason_cmp(const void *a, const void *b)
{
  return strcmp(((const struct reason *)a)->msg,
                ((const struct reason *)b)->msg);
}

/* Writes "0/N nodes fit 1 replica of G res: <count> <reason>, ..." with the
 * reasons sorted, as kube-scheduler's FitError does. */
static void reasons_format(struct reasons *rs, const struct gq_snapshot *c,
                           const struct gq_gpujob *j, char *why, size_t whylen)
{
  size_t len;

  if (whylen == 0)
    return;
  qsort(rs->v, rs->n, sizeof(*rs->v), reason_cmp);
  snprintf(why, whylen, "0/%zu nodes fit 1 replica of %d %s", c->n,
           (int)j->gpus_per_replica, j->gpu_resource);
  for (size_t i = 0; i < rs->n; i++) {
    len = strlen(why);
    if (len + 1 >= whylen)
      break;
    snprintf(why + len, whylen - len, "%s%zu %s", i ? ", " : ": ",
             rs->v[i].count, rs->v[i].msg);
  }
}

/* Free GPUs of 'res' summed over cand, each node's count clamped at 0. */
static int64_t free_sum(const struct gq_snapshot *c, const size_t *cand,
                        size_t m, const char *res)
{
  int64_t sum = 0;

  for (size_t x = 0; x < m; x++) {
    int64_t f = gq_snapshot_available(c, cand[x], res);

    sum += f > 0 ? f : 0;
  }
  return sum;
}

static const char *domain_of(const struct gq_snapshot *c, size_t i)
{
  const char *v = gq_meta_label(&c->nodes[i].node->meta, c->topology_key);

  return v && v[0] ? v : NULL;
}

static int str_cmp(const void *a, const void *b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Gathers into cand the eligible nodes whose domain (dom[x] for elig[x])
 * is 'want'; returns how many. */
static size_t in_domain(const size_t *elig, const char *const *dom, size_t m,
                        const char *want, size_t *cand)
{
  size_t nc = 0;

  for (size_t x = 0; x < m; x++)
    if (dom[x] && strcmp(dom[x], want) == 0)
      cand[nc++] = elig[x];
  return nc;
}

/* For a multi-replica gang: tries each topology domain among the eligible
 * nodes and places the gang in the one that holds it with the fewest free
 * GPUs (ties by name). Returns 1 with out filled, or 0. */
static int place_one_domain(struct gq_snapshot *c, const size_t *elig,
                            size_t m, const struct gq_podsched *r,
                            const struct gq_gpujob *j, size_t *out)
{
  const char **dom = gq_xcalloc(m, sizeof(*dom));    /* per eligible node */
  const char **sorted = gq_xcalloc(m, sizeof(*sorted)); /* distinct, sorted */
  size_t *cand = gq_xcalloc(m, sizeof(*cand));
  size_t nd = 0, nc;
  const char *best = NULL;
  int64_t best_free = 0;

  for (size_t x = 0; x < m; x++)
    if ((dom[x] = domain_of(c, elig[x])))
      sorted[nd++] = dom[x];
  qsort(sorted, nd, sizeof(*sorted), str_cmp);
  for (size_t d = 0; d < nd; d++) {
    int64_t f;

    if (d > 0 && strcmp(sorted[d], sorted[d - 1]) == 0)
      continue;
    nc = in_domain(elig, dom, m, sorted[d], cand);
    if (place_in(c, cand, nc, j, NULL, r, j->replicas, out) !=
        j->replicas)
      continue;
    f = free_sum(c, cand, nc, j->gpu_resource);
    if (!best || f < best_free) {
      best = sorted[d];
      best_free = f;
    }
  }
  if (best) {
    nc = in_domain(elig, dom, m, best, cand);
    place_in(c, cand, nc, j, NULL, r, j->replicas, out);
  }
  free(cand);
  free(sorted);
  free(dom);
  return best != NULL;
}

/* Writes to elig the indexes of the nodes that hold one replica r of j
 * now (node checks and fit, in node order); returns how many. With rs,
 * every other node's first failing check is counted there, as
 * kube-scheduler's filters report it. Without rs, a node with fewer free
 * GPUs of j's resource than a replica asks is passed over first: its fit
 * check would fail (api/match.c fit_extended), and in a busy cluster that
 * is most nodes, so the costlier checks and their messages (about 1 us a
 * node) are left out of the common case. */
static size_t eligible(struct gq_snapshot *c, const struct gq_gpujob *j,
                       const char *flavor, const struct gq_podsched *r,
                       size_t *elig, struct reasons *rs)
{
  int64_t need = replica_need(j);
  size_t m = 0;
  char msg[192];

  for (size_t i = 0; i < c->n; i++) {
    const char *res;

    if (!rs && need > 0 &&
        gq_snapshot_available(c, i, j->gpu_resource) < need)
      continue;
    if (gq_place_node_check(c->nodes[i].node, j, flavor, r, msg,
                            rs ? sizeof(msg) : 0)) {
      if (rs)
        reason_add(rs, msg);
      continue;
    }
    res = gq_fit_check(c->nodes[i].node, &c->nodes[i].used, r, NULL, 0);
    if (res) {
      if (rs && strcmp(res, "pods") == 0)
        reason_add(rs, "Too many pods");
      else if (rs) {
        snprintf(msg, sizeof(msg), "Insufficient %s", res);
        reason_add(rs, msg);
      }
      continue;
    }
    elig[m++] = i; /* holds at least one replica now */
  }
  return m;
}

int gq_place_job(struct gq_snapshot *c, const struct gq_gpujob *j,
                 const char *flavor, size_t *out, char *why, size_t whylen)
{
  struct gq_podsched r;
  struct reasons rs = {0};
  size_t *elig = NULL; /* the eligible nodes, for a gang or the reasons */
  size_t m = 0;
  int32_t fit;
  int rc = 0;

  gq_place_replica_request(j, &r);
  if (j->replicas == 1) { /* best fit over every node, no list */
    m = (size_t)place_in(c, NULL, c->n, j, flavor, &r, 1, out);
  } else {
    elig = gq_xcalloc(c->n ? c->n : 1, sizeof(*elig));
    m = eligible(c, j, flavor, &r, elig, NULL);
  }
  if (m == 0) {
    if (whylen) { /* the scan again, for every node's reason */
      if (!elig)
        elig = gq_xcalloc(c->n ? c->n : 1, sizeof(*elig));
      eligible(c, j, flavor, &r, elig, &rs);
    }
    reasons_format(&rs, c, j, why, whylen);
    rc = GQ_ECAPACITY;
  } else if (j->replicas == 1) {
    rc = 0; /* placed above */
  } else if (c->topology_key && c->topology_key[0] &&
             place_one_domain(c, elig, m, &r, j, out)) {
    rc = 0;
  } else if ((fit = place_in(c, elig, m, j, flavor, &r, j->replicas,
                             out)) != j->replicas) {
    if (whylen)
      snprintf(why, whylen,
               "gang of %d replicas x %d %s does not fit: at most %d fit",
               (int)j->replicas, (int)j->gpus_per_replica, j->gpu_resource,
               (int)fit);
    rc = GQ_ECAPACITY;
  }
  if (rc == 0 && whylen)
    why[0] = '\0';
  free(rs.v);
  free(elig);
  gq_place_replica_release(&r);
  return rc;
}
