/* api/node.c - Node decoding (see node.h). */
#include "api/node.h"

#include "base/alloc.h"
#include "base/err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decodes status.allocatable or status.capacity: cpu, memory and pods into
 * the scalar fields (when want_core), every name with a '/' into *list. */
static void decode_resources(struct gq_dec *d, const json_t *status,
                             const char *path, int want_core,
                             struct gq_node *n, struct gq_res **list,
                             size_t *count)
{
  const json_t *m = gq_dec_object(d, status, path, 0);
  const char *name;
  json_t *q;
  char p[GQ_DEC_PATH_MAX];

  *list = gq_xcalloc(m ? json_object_size(m) : 0, sizeof(**list));
  *count = 0;
  json_object_foreach((json_t *)m, name, q) {
    int is_cpu = strcmp(name, "cpu") == 0;
    int64_t v;

    gq_dec_path(p, "%s[%s]", path, name);
    if (d->rc)
      return;
    if (gq_dec_quantity(d, p, q, is_cpu, "8, 500m or 16Gi", &v) != 0)
      return;
    if (want_core && is_cpu)
      n->cpu_milli = v;
    else if (want_core && strcmp(name, "memory") == 0)
      n->memory_bytes = v;
    else if (want_core && strcmp(name, "pods") == 0)
      n->pods = v;
    else if (strchr(name, '/')) {
      (*list)[*count].name = name;
      (*list)[(*count)++].value = v;
    }
  }
}

static void decode_taints(struct gq_dec *d, const json_t *spec,
                          struct gq_node *n)
{
  static const char *const effects[] = {"NoSchedule", "PreferNoSchedule",
                                        "NoExecute", NULL};
  const json_t *arr = gq_dec_array(d, spec, "spec.taints", 0, 1024), *t;
  char p[GQ_DEC_PATH_MAX];
  size_t i;

  if (!arr || json_array_size(arr) == 0)
    return;
  n->taints = gq_xcalloc(json_array_size(arr), sizeof(*n->taints));
  json_array_foreach((json_t *)arr, i, t) {
    struct gq_taint *tt = &n->taints[i];
    int e;

    tt->key = gq_dec_string(d, t, gq_dec_path(p, "spec.taints[%zu].key", i), 1,
                            316, "");
    tt->value = gq_dec_string(d, t,
                              gq_dec_path(p, "spec.taints[%zu].value", i), 0,
                              63, "");
    e = gq_dec_enum(d, t, gq_dec_path(p, "spec.taints[%zu].effect", i),
                    effects, 1, 0);
    tt->effect = effects[e];
    if (d->rc)
      return;
    n->n_taints = i + 1;
  }
}

static int ready_condition(const json_t *status)
{
  const json_t *conds = json_object_get(status, "conditions"), *c;
  size_t i;

  json_array_foreach((json_t *)conds, i, c) {
    const char *type = json_string_value(json_object_get(c, "type"));
    const char *st = json_string_value(json_object_get(c, "status"));

    if (type && st && strcmp(type, "Ready") == 0)
      return strcmp(st, "True") == 0;
  }
  return 0;
}

/* A label holding a non-negative integer (GFD's memory and count labels);
 * -1 when absent or not a plain integer. */
static int64_t int_label(const struct gq_meta *m, const char *key)
{
  const char *s = gq_meta_label(m, key);
  char *end;
  long long v;

  if (!s || !*s)
    return -1;
  errno = 0;
  v = strtoll(s, &end, 10);
  return errno || *end || v < 0 ? -1 : v;
}

int gq_node_decode(const json_t *obj, const char *product_label,
                   struct gq_node *out, char *err, size_t errlen)
{
  struct gq_dec d;
  const json_t *spec, *status;

  memset(out, 0, sizeof(*out));
  gq_dec_init(&d);
  if (gq_meta_decode(&d, obj, 0, &out->meta) == 0) {
    spec = gq_dec_object(&d, obj, "spec", 0);
    status = gq_dec_object(&d, obj, "status", 0);
    out->unschedulable = gq_dec_bool(&d, spec, "spec.unschedulable", 0);
    decode_taints(&d, spec, out);
    decode_resources(&d, status, "status.allocatable", 1, out, &out->alloc,
                     &out->n_alloc);
    decode_resources(&d, status, "status.capacity", 0, out, &out->capacity,
                     &out->n_capacity);
    out->ready = ready_condition(status);
  }
  if (d.rc) {
    snprintf(err, errlen, "%s", d.msg);
    gq_node_release(out);
    return d.rc;
  }
  out->gpu_product = gq_meta_label(&out->meta, product_label
                                                   ? product_label
                                                   : GQ_LABEL_GPU_PRODUCT);
  out->gpu_memory_mib = int_label(&out->meta, GQ_LABEL_GPU_MEMORY);
  out->gpu_count = int_label(&out->meta, GQ_LABEL_GPU_COUNT);
  out->json = json_incref((json_t *)obj);
  return 0;
}

void gq_node_release(struct gq_node *n)
{
  gq_meta_release(&n->meta);
  free(n->alloc);
  free(n->capacity);
  free(n->taints);
  json_decref(n->json);
  memset(n, 0, sizeof(*n));
}
