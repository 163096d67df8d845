/* decide/node.c - lookups in a typed node (see node.h). */
#include "decide/node.h"

#include <string.h>

static int64_t find(const struct gq_res *r, size_t n, const char *name)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(r[i].name, name) == 0)
      return r[i].value;
  return 0;
}

int64_t gq_node_allocatable(const struct gq_node *n, const char *name)
{
  return find(n->alloc, n->n_alloc, name);
}

int64_t gq_node_capacity(const struct gq_node *n, const char *name)
{
  return find(n->capacity, n->n_capacity, name);
}
