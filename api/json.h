/* api/json.h - typed, validating reads of Kubernetes JSON (jansson).
 *
 * Decoders of API objects (GpuJob, TeamQuota, Node, Pod) read fields through
 * a struct gq_dec, which records the FIRST problem as one message in the
 * form Kubernetes' field errors use:
 *
 *   spec.gpusPerReplica: must be between 1 and 1024, got -2
 *   spec.drainPolicy: must be one of Checkpoint, Requeue, Wait, got "Later"
 *   spec.team: required value
 *
 * i.e. the full field path, what is wrong, and the offending value as JSON
 * (k8s.io/apimachinery/pkg/util/validation/field: path then detail). After
 * the first error every getter is a no-op returning its default, so a
 * decoder reads straight through and checks gq_dec_failed() once at the end.
 *
 * Paths: each getter takes the parent object and the full path of the
 * field; the JSON key is the path's last segment ("spec.gpu.resource" reads
 * key "resource" of the object at spec.gpu). Array elements are written
 * "spec.resources[2].nominal" by the caller (gq_dec_path()).
 *
 * Strings returned are borrowed from the JSON value and live as long as it
 * does; decoders keep a reference to the document for that reason, or copy
 * them (gq_strpack, gq_intern below: the GpuJob decoder does, so that a
 * job cache holds no JSON).
 */
#ifndef GQ_API_JSON_H
#define GQ_API_JSON_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define GQ_DEC_MSG_MAX 512
#define GQ_DEC_PATH_MAX 256

struct gq_dec {
  int rc;                    /* 0, or the first error's GQ_E* code */
  char msg[GQ_DEC_MSG_MAX];  /* the first error, "" while none */
};

/* Starts a decode with no error recorded. */
void gq_dec_init(struct gq_dec *d);

/* Returns nonzero once an error has been recorded. */
int gq_dec_failed(const struct gq_dec *d);

/* Records "path: <formatted detail>" as the error (if none yet) and returns
 * GQ_EINVAL. */
int gq_dec_fail(struct gq_dec *d, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Same, ending with ", got <value as compact JSON>" (truncated at 80
 * characters with "..."). */
int gq_dec_fail_got(struct gq_dec *d, const char *path, const json_t *got,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Formats a path into buf (GQ_DEC_PATH_MAX bytes) and returns buf, e.g.
 * gq_dec_path(buf, "%s[%zu].nominal", "spec.resources", i). */
char *gq_dec_path(char *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Returns the value at 'path' in parent (borrowed) or NULL if absent or JSON
 * null (Kubernetes treats an explicit null as unset). parent may be NULL. */
const json_t *gq_dec_get(const json_t *parent, const char *path);

/* Object / array fields. Return the borrowed value, or NULL if absent (an
 * error is recorded when 'required' or when the type is wrong). */
const json_t *gq_dec_object(struct gq_dec *d, const json_t *parent,
                            const char *path, int required);
const json_t *gq_dec_array(struct gq_dec *d, const json_t *parent,
                           const char *path, int required, size_t max_items);

/* String field of at most max_len bytes. Returns the borrowed string, or
 * dflt when absent (error recorded if 'required'). */
const char *gq_dec_string(struct gq_dec *d, const json_t *parent,
                          const char *path, int required, size_t max_len,
                          const char *dflt);

/* Integer field in [min, max]. Returns 1 and sets *out when present, 0 when
 * absent (*out = dflt), -1 on error (*out = dflt). A JSON real, even an
 * integral one, is rejected: Kubernetes integer fields take JSON integers. */
int gq_dec_int(struct gq_dec *d, const json_t *parent, const char *path,
               int64_t min, int64_t max, int64_t dflt, int64_t *out);

/* Number (integer or real) in [min, max]; same return as gq_dec_int(). */
int gq_dec_number(struct gq_dec *d, const json_t *parent, const char *path,
                  double min, double max, double dflt, double *out);

/* Boolean field; returns its value, or dflt when absent or on error. */
int gq_dec_bool(struct gq_dec *d, const json_t *parent, const char *path,
                int dflt);

/* String field that must be one of 'values' (NULL-terminated). Returns the
 * index, or dflt when absent or on error; required as for strings. */
int gq_dec_enum(struct gq_dec *d, const json_t *parent, const char *path,
                const char *const *values, int required, int dflt);

/* A check of one string value at a path (gq_dec_dns_label and the like):
 * 0, or an error recorded in d. */
typedef int (*gq_dec_check_fn)(struct gq_dec *d, const char *path,
                               const char *s);

/* Array of strings, each passed through check (may be NULL). Returns an
 * owned array of borrowed strings with the count in *n; NULL (and *n = 0)
 * when absent, empty, or on error (recorded in d; an absent 'required'
 * array is an error). The caller frees the array. */
const char **gq_dec_string_array(struct gq_dec *d, const json_t *parent,
                                 const char *path, int required,
                                 size_t max_items, gq_dec_check_fn check,
                                 size_t *n);

/* Checks that s is a DNS-1123 label (RFC 1123: lower-case alphanumerics and
 * '-', starting and ending alphanumeric, 1..63 bytes), as Kubernetes
 * requires of namespaces, label-safe names and our team names. Records
 * "path: must be a DNS-1123 label ..., got \"s\"" on failure. */
int gq_dec_dns_label(struct gq_dec *d, const char *path, const char *s);

/* Checks that s is a DNS-1123 subdomain (labels joined by '.', <= max_len
 * bytes, max_len <= 253), as Kubernetes requires of object names. */
int gq_dec_dns_subdomain(struct gq_dec *d, const char *path, const char *s,
                         size_t max_len);

/* Checks that s is a valid label value (Kubernetes: empty, or <= 63 bytes of
 * alphanumerics, '-', '_', '.', starting and ending alphanumeric). */
int gq_dec_label_value(struct gq_dec *d, const char *path, const char *s);

/* Checks a qualified name such as a label key or resource name:
 * [prefix '/'] name, prefix a DNS-1123 subdomain, name <= 63 bytes of
 * alphanumerics, '-', '_', '.' starting and ending alphanumeric. */
int gq_dec_qualified_name(struct gq_dec *d, const char *path, const char *s);

/* A resource quantity (api/quantity.h) at path, its value in base units
 * (milli: in thousandths, as cpu is counted) in *out. Records "path: must
 * be a quantity such as <example>, got ..." when it does not parse, and
 * "path: must be at most 9223372036854775807 (2^63-1), got ..." ("...807m
 * (2^63-1 millicores)" for milli) when its value does not fit in int64.
 * Returns 0 or the error recorded. */
int gq_dec_quantity(struct gq_dec *d, const char *path, const json_t *q,
                    int milli, const char *example, int64_t *out);

/* Kubernetes' TotalAnnotationSizeLimitB (apimachinery
 * ValidateAnnotationsSize): the keys and values of an object's
 * annotations together, in bytes. */
#define GQ_MAX_ANNOTATIONS_BYTES (256u << 10)

/* Checks the annotations object at path (parent's member; absent is
 * fine): an object of strings whose keys and values take at most
 * GQ_MAX_ANNOTATIONS_BYTES in all. Records "path: must have at most 262144
 * bytes of keys and values in total (Kubernetes' annotation size limit),
 * got N". Returns 0 or the error recorded. */
int gq_dec_annotations(struct gq_dec *d, const json_t *parent,
                       const char *path);

/* Overflow-checked int64 arithmetic: set *out and return 0, or return
 * GQ_EOVERFLOW and leave *out unchanged. */
int gq_mul_i64(int64_t a, int64_t b, int64_t *out);
int gq_add_i64(int64_t a, int64_t b, int64_t *out);

/* Moves borrowed strings into one owned block, so that a typed object can
 * outlive the JSON it was decoded from with one allocation for all its
 * strings: add each string field's address (a slot; a NULL string is left
 * alone), then gq_strpack_done() copies the strings into a new block and
 * points every slot into it. Slots must stay valid until then (add array
 * slots only after the array is final). Add each slot once; equal
 * strings are not merged. */
struct gq_strpack {
  const char ***slots;
  size_t n, cap, bytes;
};

/* Records *slot (skipped when NULL). */
void gq_strpack_add(struct gq_strpack *p, const char **slot);

/* Copies the strings, repoints the slots and returns the block (owned by
 * the caller, free() it; NULL when no slot was added). Frees the slot list:
 * p is then empty and reusable. */
char *gq_strpack_done(struct gq_strpack *p);

/* Shared immutable strings, reference counted (process-wide, locked): a
 * string that many objects hold (a team, a namespace, a status reason or
 * message) is stored once. gq_intern() returns a reference to the shared
 * copy of s (NULL for NULL); gq_intern_release() drops one (NULL is
 * ignored; s must come from gq_intern()); the copy is freed with its last
 * reference. gq_intern_count() is the number of distinct strings held. */
const char *gq_intern(const char *s);
void gq_intern_release(const char *s);
size_t gq_intern_count(void);

#endif
