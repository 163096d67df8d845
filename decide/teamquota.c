/* decide/teamquota.c - lookups in a typed TeamQuota (see teamquota.h). */
#include "decide/teamquota.h"

#include <string.h>

int gq_teamquota_admits_namespace(const struct gq_teamquota *q, const char *ns)
{
  for (size_t i = 0; i < q->n_namespaces; i++)
    if (strcmp(q->namespaces[i], ns) == 0)
      return 1;
  return 0;
}

const struct gq_quota_res *gq_teamquota_find(const struct gq_teamquota *q,
                                             const char *product,
                                             const char *resource)
{
  const struct gq_quota_res *any = NULL;

  for (size_t i = 0; i < q->n_res; i++) {
    if (strcmp(q->res[i].resource, resource) != 0)
      continue;
    if (product && strcmp(q->res[i].flavor, product) == 0)
      return &q->res[i];
    if (strcmp(q->res[i].flavor, GQ_FLAVOR_ANY) == 0)
      any = &q->res[i];
  }
  return any;
}
