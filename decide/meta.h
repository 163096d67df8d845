/* decide/meta.h - the ObjectMeta fields gpuq uses, common to every kind.
 *
 * Typed model only: api/meta.h decodes it from JSON (gq_meta_decode()) and
 * frees what it allocated (gq_meta_release()). Strings are borrowed from
 * whatever the owning object keeps (the JSON document for pods, nodes and
 * TeamQuotas; the job's own string block for GpuJobs); the label array is
 * owned by the decoder's caller.
 *
 * Part of decide/ (links base/ only): no jansson, no I/O.
 */
#ifndef GQ_DECIDE_META_H
#define GQ_DECIDE_META_H
#include <stddef.h>
#include <stdint.h>

struct gq_kv {
  const char *key;
  const char *value;
};

struct gq_meta {
  const char *ns;               /* "" for cluster-scoped objects */
  const char *name;
  const char *uid;              /* "" if not yet assigned */
  const char *resource_version; /* "" if absent */
  int64_t generation;           /* 0 if absent */
  int64_t creation_ms;          /* Unix ms; 0 if absent */
  int64_t deletion_ms;          /* Unix ms; 0 = not being deleted */
  int64_t deletion_grace_s;     /* seconds; -1 if absent */
  struct gq_kv *labels;         /* owned array of borrowed strings */
  size_t n_labels;
  const char *owner_uid;        /* the controller ownerReference, or NULL */
  const char *owner_kind;
  const char *owner_name;
};

/* Returns the value of label 'key' of m (borrowed from m), or NULL when m
 * has no such label. Linear in the number of labels. */
const char *gq_meta_label(const struct gq_meta *m, const char *key);

/* Returns the value paired with 'key' in kv[0..n-1] (borrowed), or NULL:
 * the lookup behind gq_meta_label() and gq_pod_annotation(). */
const char *gq_kv_get(const struct gq_kv *kv, size_t n, const char *key);

#endif
