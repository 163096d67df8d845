/* api/meta.c - ObjectMeta decoding (see meta.h). */
#include "api/meta.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"

#include <stdlib.h>
#include <string.h>

const char *gq_meta_str(const json_t *obj, const char *key)
{
  const char *v = json_string_value(
      json_object_get(json_object_get(obj, "metadata"), key));

  return v ? v : "";
}

const char *gq_meta_obj_label(const json_t *obj, const char *key)
{
  return json_string_value(json_object_get(
      json_object_get(json_object_get(obj, "metadata"), "labels"), key));
}

const char *gq_meta_obj_annotation(const json_t *obj, const char *key)
{
  return json_string_value(json_object_get(
      json_object_get(json_object_get(obj, "metadata"), "annotations"), key));
}

int gq_dec_time(struct gq_dec *d, const json_t *parent, const char *path,
                int64_t *out_ms)
{
  const char *s = gq_dec_string(d, parent, path, 0, 64, NULL);

  *out_ms = 0;
  if (!s)
    return d->rc;
  if (gq_time_parse(s, out_ms) != 0) {
    *out_ms = 0;
    return gq_dec_fail_got(d, path, gq_dec_get(parent, path),
                           "must be an RFC 3339 timestamp");
  }
  return 0;
}

int gq_dec_string_map(struct gq_dec *d, const json_t *parent, const char *path,
                      int label_values, struct gq_kv **out, size_t *n)
{
  const json_t *m = gq_dec_object(d, parent, path, 0);
  const char *key;
  json_t *v;
  char p[GQ_DEC_PATH_MAX];
  size_t i = 0;

  *out = NULL;
  *n = 0;
  if (!m || json_object_size(m) == 0)
    return d->rc;
  *out = gq_xcalloc(json_object_size(m), sizeof(**out));
  json_object_foreach((json_t *)m, key, v) {
    gq_dec_path(p, "%s[%s]", path, key);
    gq_dec_qualified_name(d, p, key);
    if (!json_is_string(v))
      gq_dec_fail_got(d, p, v, "must be a string");
    else if (label_values)
      gq_dec_label_value(d, p, json_string_value(v));
    if (d->rc)
      break;
    (*out)[i].key = key;
    (*out)[i++].value = json_string_value(v);
  }
  if (d->rc) {
    free(*out);
    *out = NULL;
    return d->rc;
  }
  *n = i;
  return 0;
}

/* Finds the ownerReference with controller: true (there is at most one:
 * apimachinery validation, "Only one reference can have Controller set"). */
static void decode_owner(struct gq_dec *d, const json_t *meta,
                         struct gq_meta *m)
{
  const json_t *refs = gq_dec_array(d, meta, "metadata.ownerReferences", 0,
                                    1024);
  const json_t *ref;
  size_t i;

  if (!refs)
    return;
  json_array_foreach((json_t *)refs, i, ref) {
    if (json_is_object(ref) && json_is_true(json_object_get(ref, "controller"))) {
      m->owner_uid = json_string_value(json_object_get(ref, "uid"));
      m->owner_kind = json_string_value(json_object_get(ref, "kind"));
      m->owner_name = json_string_value(json_object_get(ref, "name"));
      return;
    }
  }
}

int gq_meta_decode(struct gq_dec *d, const json_t *obj, unsigned flags,
                   struct gq_meta *m)
{
  const json_t *meta = gq_dec_object(d, obj, "metadata", 1);

  memset(m, 0, sizeof(*m));
  m->deletion_grace_s = -1;
  m->name = gq_dec_string(d, meta, "metadata.name", 1, 253, "");
  if (!d->rc && (flags & GQ_META_NAME_LABEL) && strlen(m->name) > 63)
    gq_dec_fail(d, "metadata.name",
                "must be no more than 63 characters (it is used as a label "
                "value), got %zu",
                strlen(m->name));
  if (!d->rc)
    gq_dec_dns_subdomain(d, "metadata.name", m->name, 253);
  m->ns = gq_dec_string(d, meta, "metadata.namespace",
                        (flags & GQ_META_NAMESPACED) != 0, 63, "");
  if (!d->rc && *m->ns)
    gq_dec_dns_label(d, "metadata.namespace", m->ns);
  m->uid = gq_dec_string(d, meta, "metadata.uid", 0, 128, "");
  m->resource_version =
      gq_dec_string(d, meta, "metadata.resourceVersion", 0, 64, "");
  gq_dec_int(d, meta, "metadata.generation", 0, INT64_MAX, 0, &m->generation);
  gq_dec_time(d, meta, "metadata.creationTimestamp", &m->creation_ms);
  gq_dec_time(d, meta, "metadata.deletionTimestamp", &m->deletion_ms);
  gq_dec_int(d, meta, "metadata.deletionGracePeriodSeconds", 0, INT64_MAX, -1,
             &m->deletion_grace_s);
  decode_owner(d, meta, m);
  gq_dec_string_map(d, meta, "metadata.labels", 1, &m->labels, &m->n_labels);
  return d->rc;
}

void gq_meta_release(struct gq_meta *m)
{
  free(m->labels);
  m->labels = NULL;
  m->n_labels = 0;
}
