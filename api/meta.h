/* api/meta.h - decoding the object metadata common to every Kubernetes
 * kind.
 *
 * struct gq_meta (decide/meta.h) holds the ObjectMeta fields gpuq uses.
 * Strings are borrowed from the JSON document the object was decoded from
 * (the owning object keeps a reference to it); the label array is owned and
 * released by gq_meta_release().
 */
#ifndef GQ_API_META_H
#define GQ_API_META_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "api/json.h"
#include "decide/meta.h"

enum gq_meta_flags {
  GQ_META_NAMESPACED = 1 << 0, /* metadata.namespace is required */
  GQ_META_NAME_LABEL = 1 << 1, /* the name must also be a DNS-1123 label
                                  (<= 63): it becomes a label value */
};

/* Decodes obj.metadata into m. Validates metadata.name (a DNS-1123
 * subdomain, or label with GQ_META_NAME_LABEL), metadata.namespace (a
 * DNS-1123 label, required with GQ_META_NAMESPACED), label keys and values,
 * and timestamps (RFC 3339). Returns 0 or GQ_EINVAL with the error in d;
 * on error m holds nothing to release. */
int gq_meta_decode(struct gq_dec *d, const json_t *obj, unsigned flags,
                   struct gq_meta *m);

/* Frees what gq_meta_decode() allocated; m is then empty. */
void gq_meta_release(struct gq_meta *m);

/* --- raw JSON metadata ---
 * For objects held as JSON rather than decoded into struct gq_meta (the
 * sim's stored objects, a GpuJob that failed to decode). Each reads
 * obj.metadata; obj may be NULL or have no metadata. Returned strings are
 * borrowed from obj: valid while the caller's reference to obj lives. */

/* obj.metadata.<key> as a string ("namespace", "name", "uid", ...): "" when
 * obj, its metadata or the member is absent or not a string; never NULL. */
const char *gq_meta_str(const json_t *obj, const char *key);

/* The value of label 'key' (obj.metadata.labels), or NULL when absent or
 * not a string. */
const char *gq_meta_obj_label(const json_t *obj, const char *key);

/* The value of annotation 'key' (obj.metadata.annotations), or NULL when
 * absent or not a string. */
const char *gq_meta_obj_annotation(const json_t *obj, const char *key);

/* Decodes a JSON object of string values (labels, nodeSelector) into an
 * owned array of borrowed pairs at *out / *n (NULL / 0 when absent). Checks
 * keys as qualified names and, if 'label_values', values as label values.
 * Returns 0 or GQ_EINVAL (nothing allocated on error). */
int gq_dec_string_map(struct gq_dec *d, const json_t *parent, const char *path,
                      int label_values, struct gq_kv **out, size_t *n);

/* Reads an optional RFC 3339 timestamp field into Unix ms (0 if absent).
 * Returns 0 or GQ_EINVAL. */
int gq_dec_time(struct gq_dec *d, const json_t *parent, const char *path,
                int64_t *out_ms);

#endif
