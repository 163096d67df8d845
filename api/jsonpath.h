/* api/jsonpath.h - the JSONPath subset of CRD additionalPrinterColumns.
 *
 * A CRD's printer columns name the value of each column with a JSONPath
 * such as ".status.gpus". The apiserver checks the syntax when the CRD is
 * created (apiextensions validation: non-empty and starting with '.') and
 * evaluates it with kubectl's JSONPath engine (k8s.io/client-go/util/
 * jsonpath) wrapped as "{<path>}" when it builds Table rows, taking the
 * first result only, "as we only support simple JSON path"
 * (apiextensions-apiserver pkg/registry/customresource/tableconvertor).
 * gpuq-sim does the same with this module. The grammar accepted is
 *
 *   path    ::= simple blank* | "{" blank* simple blank* "}"
 *   simple  ::= "." | "." name step*
 *   step    ::= "." name | "[" index "]" | "['" key "']"
 *   name    ::= ( "\" any-char | char )+   char: anything but . [ ] { } , $ @
 *                                          blank, CR, LF and '\'
 *   index   ::= "-"? digit+                a negative index counts from the
 *                                          end, as in kubectl ("[-1]")
 *   key     ::= ( "\" any-char | any char but "'" )*
 *
 * so ".status.gpus", "{.status.gpus}", ".spec.containers[0].image",
 * ".metadata.labels.kubernetes\.io/hostname" and
 * ".metadata.labels['kubernetes.io/hostname']" all work, and "." is the
 * object itself. A backslash makes the next character literal (kubectl
 * drops every backslash of a field name).
 *
 * Deliberate differences from kubectl:
 *   - a quoted key is one literal key. kubectl re-parses ['a.b'] as the
 *     fields a and b (kubernetes/kubernetes#23386), so on a real cluster
 *     only the escaped-dot form finds "kubernetes.io/hostname";
 *   - the forms that can select several values are rejected as
 *     unsupported: wildcards (.* [*]), slices ([1:2]), unions ([0,1]),
 *     filters ([?(...)]) and recursive descent (..); so are "$", "@",
 *     text outside the braces and several {} actions. kubectl would
 *     accept them and the table convertor would print the first value.
 *
 * Pure: no allocation, no global state; strings are borrowed for the call.
 */
#ifndef GQ_API_JSONPATH_H
#define GQ_API_JSONPATH_H
#include <stddef.h>

#include <jansson.h>

/* Longest field name or key gq_jsonpath accepts, in bytes after
 * unescaping; longer ones are invalid. Label keys, the longest names in
 * practice, have at most 253 + 1 + 63. */
#define GQ_JSONPATH_KEY_MAX 512

/* Returns the value at 'path' (syntax above, braces optional) inside obj,
 * or NULL when path is NULL or invalid, obj is NULL, or the value is
 * absent: a missing member, an index out of range, a member of a
 * non-object or an index into a non-array. A JSON null that is present is
 * returned as such. The result is borrowed from obj: valid while obj
 * holds it. Source: kubectl JSONPath as used by the CRD table convertor,
 * with the differences listed above. */
const json_t *gq_jsonpath_get(const json_t *obj, const char *path);

/* Checks a CRD printer column's jsonPath as the apiserver does at CRD
 * creation, and also that gq_jsonpath_get() can evaluate it, so that a
 * column the sim could not print is rejected up front rather than shown
 * empty. Unlike gq_jsonpath_get() it requires the path to start with '.'
 * (apiextensions' validateSimpleJSONPath); "{.a}" is invalid here.
 * Returns 0, or GQ_EINVAL with the reason in err (errlen bytes,
 * NUL-terminated, truncated if needed; err may be NULL if errlen is 0):
 *   "must be non-empty"                           ("" or NULL)
 *   "must be a simple json path starting with ."  ("status.x", "{.a}")
 *   "unterminated array", "invalid array index "x"", "empty field name",
 *   "unsupported ... (selects more than one value)", ... for the rest.
 * The message names the problem only; the caller adds the field path
 * ("spec.versions[0].additionalPrinterColumns[0].jsonPath: ..."). */
int gq_jsonpath_valid(const char *path, char *err, size_t errlen);

#endif
