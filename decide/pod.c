/* decide/pod.c - lookups in a typed pod (see pod.h). */
#include "decide/pod.h"

#include <string.h>

int64_t gq_podsched_request(const struct gq_podsched *s, const char *name)
{
  for (size_t i = 0; i < s->n_extended; i++)
    if (strcmp(s->extended[i].name, name) == 0)
      return s->extended[i].value;
  return 0;
}

const char *gq_pod_annotation(const struct gq_pod *p, const char *key)
{
  return gq_kv_get(p->annotations, p->n_annotations, key);
}

int gq_pod_holds_resources(const struct gq_pod *p)
{
  return p->phase != GQ_POD_SUCCEEDED && p->phase != GQ_POD_FAILED;
}
