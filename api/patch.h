/* api/patch.h - the three PATCH bodies of the Kubernetes API, applied to
 * jansson documents: JSON merge patch (RFC 7386), JSON patch (RFC 6902, with
 * JSON Pointer, RFC 6901) and Kubernetes strategic merge patch
 * (k8s.io/apimachinery/pkg/util/strategicpatch).
 *
 * Pure: no I/O, no clock, no logging; safe from any thread as long as the
 * documents passed in are not being changed by another thread.
 *
 * Ownership, the same for every function here: 'target' and 'patch' are
 * borrowed and never modified. On success *out receives a NEW reference to a
 * result that shares no node with either input (changing it never changes
 * them); the caller json_decref()s it. On failure *out is NULL, nothing was
 * changed, and nothing needs releasing: every patch is applied atomically.
 *
 * Errors are GQ_E* codes (base/err.h). When 'err' is not NULL and errlen > 0
 * it receives a one-line message worded by the house rules (lower case, no
 * full stop, subjects in single quotes), e.g.
 *
 *   operation 2: unknown op 'rename'
 *   operation 0: path '/spec/x' does not exist
 *   operation 1: test failed at '/metadata/resourceVersion'
 *
 * and "" on success. Messages quote at most 200 bytes of any user string.
 *
 * Limits (STYLE: every input is capped): a target or patch nesting deeper
 * than GQ_PATCH_MAX_DEPTH containers, or a JSON patch with more than
 * GQ_PATCH_MAX_OPS operations, is refused with GQ_ETOOBIG before any work is
 * done. A JSON patch may not build a result deeper than GQ_PATCH_MAX_DEPTH
 * nor copy more than GQ_PATCH_MAX_COPIED values in total ("copy" is the one
 * operation that can double a document per step); both give GQ_ETOOBIG. The
 * depth cap also bounds the recursion of every function here.
 *
 * jansson's own allocation failures are not checked call by call: STYLE
 * (ownership rule 7) makes out-of-memory fatal through the aborting
 * allocators installed at startup.
 */
#ifndef GQ_API_PATCH_H
#define GQ_API_PATCH_H
#include <jansson.h>
#include <stddef.h>

#define GQ_PATCH_MAX_DEPTH 128        /* nested objects/arrays */
#define GQ_PATCH_MAX_OPS 10000        /* operations in one JSON patch */
#define GQ_PATCH_MAX_COPIED (1 << 16) /* values duplicated by "copy" ops */

/* Applies the JSON merge patch 'patch' to 'target' (RFC 7386 section 2,
 * MergePatch()). An object patch is merged key by key: a null member deletes
 * the key, any other member is merged recursively into the target's value
 * (a non-object target counts as {}). A patch that is not an object,
 * including an array or null, replaces the target wholesale. Arrays are
 * always replaced, and "$"-prefixed keys are ordinary keys here.
 *
 * Returns 0 and sets *out (new reference); GQ_EINVAL if an argument is
 * NULL; GQ_ETOOBIG if an input nests deeper than GQ_PATCH_MAX_DEPTH. */
int gq_patch_merge(const json_t *target, const json_t *patch, json_t **out,
                   char *err, size_t errlen);

/* Applies the JSON patch 'ops' (RFC 6902) to 'target'. 'ops' must be an
 * array of operation objects, each with "op" one of add, remove, replace,
 * move, copy, test, a "path" JSON Pointer, plus "value" (add, replace, test)
 * or "from" (move, copy). Unknown members are ignored (RFC 6902 section 4).
 * The operations apply in order to a private copy of the target, which
 * becomes *out only if every one succeeds.
 *
 * Pointers follow RFC 6901: "" is the whole document, "~1" is '/' and "~0"
 * is '~'. Array indexes are decimal without leading zeros; "-" (the slot
 * after the last element) is accepted by add only, as is an index equal to
 * the array's size. Numbers compare by value in "test" (1 equals 1.0).
 * Duplicate member names (RFC 6902 A.13) cannot be seen in a parsed value:
 * parse the body with JSON_REJECT_DUPLICATES to refuse them.
 *
 * Returns 0 and sets *out (new reference), or:
 *  - GQ_EINVAL for a malformed patch document: not an array, an operation
 *    that is not an object, "op" missing or unknown, "path"/"from"/"value"
 *    missing, a pointer with bad syntax ("foo", "/a~2"), a move into the
 *    moved value's own child, a remove of the whole document. Also for an
 *    array index that is not a valid index ("01", "x") at run time. The
 *    message names the operation's index.
 *  - GQ_ENOTFOUND when a path or from location does not exist (missing key,
 *    index out of range, parent missing or not a container):
 *    "operation 0: path '/spec/x' does not exist".
 *  - GQ_ESTATE when a test operation fails, including a test of a missing
 *    location: "operation 1: test failed at '/metadata/resourceVersion'".
 *  - GQ_ETOOBIG for the limits above.
 * The malformed-document checks run over all operations before any is
 * applied, so a syntax error anywhere wins over a failure at run time. */
int gq_patch_json(const json_t *target, const json_t *ops, json_t **out,
                  char *err, size_t errlen);

/* Applies a Kubernetes strategic merge patch, enough for what kubectl and
 * controllers send to built-in kinds. Maps merge as in gq_patch_merge()
 * (null deletes). Lists are replaced, except lists of objects under these
 * field names, which are merged element by element on a merge key:
 *   containers, initContainers, ephemeralContainers, volumes, env,
 *   imagePullSecrets: "name";  volumeMounts: "mountPath";
 *   volumeDevices: "devicePath";  ports: "containerPort", else "port"
 *   (Service ports);  conditions: "type";  ownerReferences: "uid";
 *   hostAliases: "ip";  topologySpreadConstraints: "topologyKey".
 * The field name stands in for the Go struct tags k8s reads; so that a CRD
 * field that merely shares a name still behaves, a list merges only when
 * every element of the patch list is an object carrying the key (or a
 * "$patch" element), and is replaced otherwise. tolerations, taints and
 * every other list are replaced, primitive lists included. Merged lists are
 * ordered as strategicpatch's normalizeElementOrder() does: patch order for
 * the patched elements, interleaved with the untouched ones by live order.
 * An empty patch list leaves a merged list unchanged.
 *
 * Directives:
 *  - "$patch": "delete" in a merged list element removes the elements with
 *    that key; "$patch": "replace" anywhere in a list replaces the list with
 *    the patch's other elements.
 *  - "$patch" in a map: "replace" makes the map exactly the patch's other
 *    keys; "delete" empties it ({}), as strategicpatch's
 *    handleDirectiveInMergeMap() does (the key stays).
 *  - "$retainKeys": [...] drops the target keys not listed before merging.
 *  - "$deleteFromPrimitiveList/<f>": [...] removes those values from the
 *    list <f> (after <f>'s own patch, if any).
 *  - "$setElementOrder/<f>": [...] reorders the list <f> to that order
 *    (elements it does not name keep their place relative to the live
 *    list); dropped when <f> is not a list or the order cannot be matched.
 *  - Any other "$"-prefixed key is dropped. No directive reaches *out.
 *
 * 'target' and 'patch' must both be objects. Returns 0 and sets *out (new
 * reference); GQ_EINVAL for a NULL argument, a non-object target or patch,
 * or a bad directive value (a "$patch" other than "delete"/"replace", a
 * delete element without its merge key, a "$retainKeys" that is not a list
 * of strings, a "$setElementOrder/" or "$deleteFromPrimitiveList/" value
 * that is not a list); GQ_ETOOBIG if an input nests deeper than
 * GQ_PATCH_MAX_DEPTH. */
int gq_patch_strategic(const json_t *target, const json_t *patch, json_t **out,
                       char *err, size_t errlen);

/* The merge key gq_patch_strategic() merges the list 'list' under field
 * name 'field' on ("name" for containers), or NULL when that list is
 * replaced (atomic). The same rule serves server-side apply's field
 * ownership (sim/fields.h), so that what a patch merges by key is what is
 * owned by key. */
const char *gq_patch_merge_key(const char *field, const json_t *list);

/* Looks up the RFC 6901 JSON Pointer 'pointer' in 'doc'. Returns the value,
 * borrowed from doc and valid while doc is, or NULL if doc or pointer is
 * NULL, the pointer's syntax is bad, or the location does not exist ("-",
 * an index with leading zeros and an out-of-range index do not exist). */
const json_t *gq_json_pointer_get(const json_t *doc, const char *pointer);

#endif
