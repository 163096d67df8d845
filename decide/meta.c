/* decide/meta.c - lookups in object metadata (see meta.h). */
#include "decide/meta.h"

#include <string.h>

const char *gq_kv_get(const struct gq_kv *kv, size_t n, const char *key)
{
  for (size_t i = 0; i < n; i++)
    if (strcmp(kv[i].key, key) == 0)
      return kv[i].value;
  return NULL;
}

const char *gq_meta_label(const struct gq_meta *m, const char *key)
{
  return gq_kv_get(m->labels, m->n_labels, key);
}
