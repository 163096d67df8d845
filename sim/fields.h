/* sim/fields.h - field ownership for server-side apply: metadata.managedFields
 * as kube-apiserver keeps it (sigs.k8s.io/structured-merge-diff, the
 * apiserver's fieldmanager), in our own code.
 *
 * A field set is a JSON object tree whose keys are path elements:
 *   "f:<name>"           a field of a map ("f:spec", "f:priority")
 *   "k:<json>"           an element of a keyed list, by its merge key
 *                        ("k:{\"name\":\"main\"}" for a container)
 *   "v:<json>"           an element of a set list (metadata.finalizers)
 * and "." marks the node itself as a member. Inside this module and in the
 * sets these functions take and return, every member node carries "."
 * (an empty node is no member: it is tidied away). gq_fields_to_v1() and
 * gq_fields_from_v1() convert to and from the FieldsV1 wire form, where a
 * member without children is written {} and "." appears only beside
 * children.
 *
 * Lists are keyed exactly where gq_patch_strategic() merges them by key
 * (gq_patch_merge_key(): containers by name, conditions by type, ...), so
 * that what an apply merges by key is owned by key; every other list is
 * atomic (one member, the list), as are scalars and empty maps.
 *
 * No I/O, no clock, no logging. One process-wide table holds the shared
 * (interned) FieldsV1 trees and their texts: at most 3,072, never freed
 * (they live as long as the sets they stand for may), loop thread only.
 * Values are borrowed unless a function says it returns a new reference.
 * Nesting deeper than GQ_PATCH_MAX_DEPTH counts as one atomic value there.
 */
#ifndef GQ_SIM_FIELDS_H
#define GQ_SIM_FIELDS_H
#include <jansson.h>
#include <stddef.h>

/* The set an applied configuration owns (structured-merge-diff's
 * ToFieldSet): every leaf (scalar, atomic list, empty map) and every
 * element of a keyed or set list, not the maps above them. New
 * reference. */
json_t *gq_fields_of_config(const json_t *config);

/* Compares old with new (old NULL: a create against an empty object) as
 * structured-merge-diff's Compare does: *changed receives what was added or
 * modified (an added map or list element is a member itself, then its
 * contents), *removed what new no longer has. New references. */
void gq_fields_diff(const json_t *old, const json_t *new, json_t **changed,
                    json_t **removed);

/* Drops what the API server never records: the root, apiVersion, kind,
 * metadata itself and its server-owned fields (name, namespace, uid,
 * creationTimestamp, selfLink, generation, managedFields,
 * resourceVersion), and the part a subresource resets: with status_sub
 * everything but status, else status when reset_status (kinds with a
 * status subresource). Changes set in place. */
void gq_fields_strip(json_t *set, int status_sub, int reset_status);

/* a ∪= b, a −= b (in place); a new set a ∩ b; 1 if s has no member. */
void gq_fields_union(json_t *a, const json_t *b);
void gq_fields_subtract(json_t *a, const json_t *b);
json_t *gq_fields_intersect(const json_t *a, const json_t *b);
int gq_fields_empty(const json_t *s);

/* Removes the members of set from obj (in place): map fields, keyed list
 * elements by key, set list elements by value; a member that keep (NULL =
 * nothing) still owns something at or below stays, only its members below
 * are removed (structured-merge-diff's prune adds owned items back). */
void gq_fields_remove(json_t *obj, const json_t *set, const json_t *keep);

/* The FieldsV1 form of set (new reference), and back (new reference). */
json_t *gq_fields_to_v1(const json_t *set);
json_t *gq_fields_from_v1(const json_t *v1);

/* The manager kube-apiserver names a request without fieldManager after:
 * the User-Agent up to its first '/' ("kubectl/v1.32.4 (linux/amd64)" ->
 * "kubectl"), non-printable bytes dropped, at most 128 bytes
 * (prefixFromUserAgent). ua may be NULL (""). Returns buf. */
const char *gq_fields_manager_from_ua(const char *ua, char *buf, size_t len);
/* The manager of a request: field_manager (the fieldManager parameter)
 * when not empty, else gq_fields_manager_from_ua(ua). Either way at most
 * 128 bytes of valid UTF-8 without control characters (bytes that would
 * break that are dropped). Returns buf. */
const char *gq_fields_manager(const char *field_manager, const char *ua,
                              char *buf, size_t len);

/* One write, as its managedFields entry names it. */
struct gq_fields_op {
  const char *manager;
  int apply;               /* operation Apply, else Update */
  const char *api_version; /* "gpuq.dev/v1alpha1" */
  const char *subresource; /* "" or "status" */
  const char *time;        /* RFC 3339, the entry's time */
};

/* The conflicts of an Apply: for each entry of managed (a managedFields
 * array; NULL = none) other than op's own, the members of changed it owns.
 * Returns NULL when there are none, else a new array of
 * {"manager": "\"kubectl\" using gpuq.dev/v1alpha1", "field": ".spec.x"},
 * managers in sorted order, each one's fields in set order. */
json_t *gq_fields_conflicts(const json_t *managed,
                            const struct gq_fields_op *op,
                            const json_t *changed);

/* kube-apiserver's 409 for conflicts (from gq_fields_conflicts()): the
 * message "Apply failed with 1 conflict: conflict with \"m\": .spec.x" (or
 * "Apply failed with N conflicts: conflicts with \"m\":\n- .a\n- .b ...")
 * into msg, and a new array of details.causes {reason
 * FieldManagerConflict, message "conflict with ...", field}. */
json_t *gq_fields_conflict_causes(const json_t *conflicts, char *msg,
                                  size_t len);

/* The managedFields after a write (new array): op's entry gets the applied
 * set (Apply; applied not NULL) or its own set plus changed (Update), and
 * the time; every other entry loses what op took (changed, within applied
 * for an Apply: a forced apply takes the conflicting fields over, an
 * Update any field it changes); every entry loses removed; empty entries
 * go. Sorted as the apiserver sorts them: Apply before Update, then by
 * time, manager, apiVersion, subresource. An entry that loses nothing is
 * the same entry (a new reference), and an Update entry that already owns
 * all of changed and none of removed keeps its fieldsV1 tree (new time);
 * rebuilt sets are shared trees (gq_fields_v1_text()). The array and its
 * entries are shared with later versions: never change them in place. */
json_t *gq_fields_record(const json_t *managed, const struct gq_fields_op *op,
                         const json_t *changed, const json_t *removed,
                         const json_t *applied);

/* The managedFields of a create by op (an Update; an Apply takes the
 * general path): what gq_fields_record(NULL, op, changed, {}, NULL) returns
 * for changed = gq_fields_diff() of obj against its kind's empty object
 * (builtin: the Go type's zero value, whose metadata, spec and status
 * exist, so they are never "added"; a custom resource starts from {}),
 * stripped as gq_fields_strip(changed, 0, reset_status) does. Written in
 * one pass over obj as FieldsV1 text, part by part (each top-level member,
 * each child of metadata), and each part's tree shared with every earlier
 * create that had the same part (interned, at most 3,072 texts per
 * process; metadata.ownerReferences, keyed by uid, is not shared): never
 * change a fieldsV1 in place. New array, empty when nothing is owned. */
json_t *gq_fields_record_create(const json_t *obj,
                                const struct gq_fields_op *op, int builtin,
                                int reset_status);
/* The same by the general path: gq_fields_diff() against the empty object,
 * gq_fields_strip(), gq_fields_record(); what gq_fields_record_create()
 * takes when its one pass cannot say (two list elements of one name, a
 * name longer than the sets hold whole) or for an Apply, and what tests
 * check its one pass against. New array. */
json_t *gq_fields_record_create_by_diff(const json_t *obj,
                                        const struct gq_fields_op *op,
                                        int builtin, int reset_status);

/* The compact JSON text of fieldsV1 tree v1 when it is one of the shared
 * (interned) trees, with its length in *len, else NULL: what
 * gq_sim_dumps() would write for v1, kept since it was interned (borrowed,
 * valid for the process's life). Every fieldsV1 the sim records is made
 * shared when the table has room (3,072 distinct sets). */
const char *gq_fields_v1_text(const json_t *v1, size_t *len);

/* The set an entry of managed names for op's own manager, operation and
 * subresource (apiVersion too for Update), as a new set; NULL if none. */
json_t *gq_fields_owned(const json_t *managed, const struct gq_fields_op *op);
/* Every other entry's set, united (new set). */
json_t *gq_fields_others(const json_t *managed, const struct gq_fields_op *op);

/* 1 if managed fields a and b are equal but for their entries' times
 * (kube-apiserver keeps the old times then: a no-op write changes
 * nothing). */
int gq_fields_same_but_time(const json_t *a, const json_t *b);

#endif
