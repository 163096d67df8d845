/* controller/snapshot.c - the capacity snapshot (see snapshot.h). */
#include "decide/snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"

static int node_cmp(const void *a, const void *b)
{
  const struct gq_snapshot_node *x = a, *y = b;

  return strcmp(x->node->meta.name, y->node->meta.name);
}

void gq_snapshot_init(struct gq_snapshot *c, const struct gq_node *const *nodes,
                      size_t n, const char *topology_key)
{
  c->nodes = n ? gq_xcalloc(n, sizeof(*c->nodes)) : NULL;
  c->n = n;
  c->topology_key = topology_key;
  for (size_t i = 0; i < n; i++) {
    c->nodes[i].node = nodes[i];
    gq_node_usage_init(&c->nodes[i].used);
  }
  if (n > 1)
    qsort(c->nodes, n, sizeof(*c->nodes), node_cmp);
}

void gq_snapshot_release(struct gq_snapshot *c)
{
  for (size_t i = 0; i < c->n; i++)
    gq_node_usage_release(&c->nodes[i].used);
  free(c->nodes);
  c->nodes = NULL;
  c->n = 0;
}

long gq_snapshot_find(const struct gq_snapshot *c, const char *name)
{
  size_t lo = 0, hi = c->n;

  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int cmp = strcmp(name, c->nodes[mid].node->meta.name);

    if (cmp == 0)
      return (long)mid;
    if (cmp < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return -1;
}

int gq_snapshot_commit(struct gq_snapshot *c, const char *node_name,
                       const struct gq_podsched *s, int sign)
{
  long i = gq_snapshot_find(c, node_name);

  if (i < 0)
    return GQ_ENOTFOUND;
  gq_node_usage_add(&c->nodes[i].used, s, sign);
  return 0;
}

int64_t gq_snapshot_available(const struct gq_snapshot *c, size_t i,
                         const char *resource)
{
  const struct gq_snapshot_node *cn = &c->nodes[i];

  return gq_node_allocatable(cn->node, resource) -
         gq_node_usage_get(&cn->used, resource);
}

