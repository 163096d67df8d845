/* sim/schema.h - a custom resource checked against its CRD's schema, as
 * kube-apiserver does it.
 *
 * gpuq-sim serves GpuJob and TeamQuota to the real kubectl, so a manifest
 * must fare there as it would on a cluster: unknown fields dropped, defaults
 * filled in, and bad values refused with the same 422 causes. The apiserver
 * does this in k8s.io/apiextensions-apiserver in three steps, always in this
 * order, and gq_schema_process() does the same three:
 *
 *   1. pruning    pkg/apiserver/schema/pruning/algorithm.go (Prune)
 *   2. defaulting pkg/apiserver/schema/defaulting/algorithm.go (Default)
 *   3. validation pkg/apiserver/validation/validation.go, which runs
 *                 k8s.io/kube-openapi/pkg/validation/validate and converts
 *                 its errors into field errors
 *                 (kubeOpenAPIResultToFieldErrors), then
 *                 pkg/apiserver/schema/listtype/validation.go
 *
 * Causes use the apiserver's wording (k8s.io/apimachinery/pkg/util/
 * validation/field/errors.go, ErrorBody()): 'field' is the path
 * ("spec.resources[0].nominal"), 'reason' the metav1.CauseType and 'message'
 * the text without the leading "<field>: ". Values in messages are printed as
 * Go prints them: strings quoted with Go's %q, integers in decimal, reals in
 * Go's %v form (0.001, 1e+06), null as "null", objects and lists as compact
 * JSON with sorted keys.
 *
 * Supported keywords: type, nullable, properties, required, items,
 * additionalProperties (schema or boolean), default, enum, minimum, maximum,
 * exclusiveMinimum, exclusiveMaximum (OpenAPI 3.0 booleans), multipleOf,
 * minLength, maxLength, pattern, format (date-time only; other formats are
 * not checked), minItems, maxItems, x-kubernetes-preserve-unknown-fields,
 * x-kubernetes-int-or-string, x-kubernetes-embedded-resource,
 * x-kubernetes-list-type (map, set) and x-kubernetes-list-map-keys.
 *
 * NOT evaluated: x-kubernetes-validations (CEL rules) are ignored entirely,
 * as are allOf/anyOf/oneOf/not, minProperties/maxProperties and uniqueItems
 * (the last is forbidden in structural schemas anyway). gpuq's CRDs carry no
 * CEL for this reason, and the controller re-validates every object.
 *
 * Known differences from the apiserver, chosen on purpose:
 *   - A wrong type is reported as reason FieldValueInvalid with the offending
 *     value, 'Invalid value: "eight": spec.x in body must be of type integer:
 *     "string"'. kube-openapi puts the JSON type name where "eight" is, and
 *     Kubernetes 1.28+ uses reason FieldValueTypeInvalid (same message
 *     prefix). render_type_error() in schema.c is the one place to change.
 *   - Defaults fill absent fields only. The apiserver also replaces a null in
 *     a non-nullable field that has a default, and while pruning it drops
 *     nulls of non-nullable fields without one; here such a null fails the
 *     type check ("must be of type integer: \"null\"").
 *   - Paths longer than the cause's field (255 bytes) are cut; messages are
 *     cut at 511 bytes.
 *   - Patterns are POSIX extended regular expressions (regcomp with
 *     REG_EXTENDED), not Go's RE2; the two agree on the patterns in crds/.
 *   - After a type error at a node nothing else at or below it is checked
 *     (kube-openapi runs the other validators as well).
 *
 * Order of causes: at each node the type, then the string rules (maxLength,
 * minLength, pattern, format), the number rules (multipleOf, maximum,
 * minimum), array items then minItems and maxItems, enum, object properties
 * in sorted key order then the required fields in schema order, and last the
 * list-type uniqueness of an array. The order is deterministic.
 *
 * Threading: no global state; concurrent calls on different objects are
 * safe. The schema is only read.
 */
#ifndef GQ_SIM_SCHEMA_H
#define GQ_SIM_SCHEMA_H
#include <stddef.h>

#include <jansson.h>

/* Most causes one call records; validation stops at the 100th. The
 * apiserver has no such cap, but a 422 with thousands of causes helps no
 * one and every input here is capped (STYLE, rule 7). */
#define GQ_SCHEMA_MAX_CAUSES 100
/* Most pruned field paths one call records. Pruning itself goes on, so
 * every unknown field is removed even when not all are listed. */
#define GQ_SCHEMA_MAX_UNKNOWN 100
/* Deepest nesting of objects and arrays accepted; the object itself is
 * depth 1. Deeper objects give GQ_ETOOBIG. */
#define GQ_SCHEMA_MAX_DEPTH 128

/* One problem, as a metav1.StatusCause of a 422 Invalid response. */
struct gq_schema_cause {
  char field[256];   /* "spec.resources[0].nominal"; "" for the object */
  char reason[32];   /* "FieldValueInvalid", "FieldValueRequired", ... */
  char message[512]; /* "Required value", without the field prefix */
};

/* What gq_schema_process() found. Owned by the caller's struct; release with
 * gq_schema_report_release(). */
struct gq_schema_report {
  struct gq_schema_cause *causes; /* n_causes entries, in the order above */
  size_t n_causes;
  char **unknown; /* paths of pruned fields, "spec.bogus" and
                     "spec.resources[0].extra", as the apiserver's strict
                     field validation names them ('unknown field "..."') */
  size_t n_unknown;
};

/* Makes rep empty (no allocation). */
void gq_schema_report_init(struct gq_schema_report *rep);

/* Frees the causes and unknown paths; rep is then empty and reusable.
 * Safe to call on an empty report and twice in a row. */
void gq_schema_report_release(struct gq_schema_report *rep);

/* Prunes, defaults and validates the custom resource 'obj' in place against
 * 'schema' (the version's openAPIV3Schema, see gq_schema_for_version()), in
 * the apiserver's order.
 *
 * Pruning (prune != 0; the apiserver prunes every v1 CRD unless the schema
 * preserves unknown fields): a field not declared in 'properties' is removed
 * and its path recorded in rep->unknown, unless the schema node has
 * x-kubernetes-preserve-unknown-fields: true (this keeps the node's own
 * undeclared fields, and those of the items of a preserving array; declared
 * fields below are still pruned by their own schema). additionalProperties
 * keeps every key and prunes the values by its schema (with
 * "additionalProperties: true" there is none, so objects among the values
 * lose all their fields, as in the apiserver); a list without 'items'
 * likewise. apiVersion and kind (if strings) and metadata (if an
 * object) of the object itself, and of x-kubernetes-embedded-resource nodes,
 * are never pruned or validated; of the wrong type they get a type error.
 * With prune == 0 nothing is removed and undeclared fields are ignored.
 *
 * Defaulting: each declared property that is absent and has a 'default'
 * gets a deep copy of it, at every level: in array items, map values and
 * inside freshly defaulted objects (gpu: {default: {}} then gpu.resource's
 * own default).
 *
 * Validation: see the header comment for the rules, wording and order.
 *
 * rep is overwritten, not released first: pass an empty or released report.
 * On return it holds what was found (possibly something even on error
 * returns, for the caller to release). schema is borrowed and only read;
 * obj is borrowed and modified.
 *
 * Returns 0 when there are no causes and no unknown fields, else GQ_EINVAL
 * (422 Invalid, or with unknown fields only, the 400 of strict field
 * validation: the caller chooses). Also:
 *   GQ_EINVAL   schema, obj or rep is NULL (rep, if given, stays empty)
 *   GQ_ETOOBIG  obj nests deeper than GQ_SCHEMA_MAX_DEPTH (obj untouched),
 *               or defaults made it so (obj then partly processed) */
int gq_schema_process(const json_t *schema, json_t *obj, int prune,
                      struct gq_schema_report *rep);

/* Only the pruning step of gq_schema_process(), for a built-in kind: obj
 * loses what 'schema' does not declare, as kube-apiserver's decoding of
 * the body into the kind's Go struct drops unknown fields (and its strict
 * decoding names them: k8s.io/apimachinery/pkg/runtime/serializer/json,
 * 'unknown field "spec.foo"'). A schema node may be a reference,
 * {"$ref": "#/definitions/NAME"}, to a definition of 'defs' (the
 * generated OpenAPI definitions, sim/openapi.h; NULL for none): it is
 * followed, and a reference to a missing definition declares nothing.
 * Nothing is defaulted or validated. The pruning rules, the fields never
 * pruned (the object's apiVersion, kind and metadata) and rep are as for
 * gq_schema_process(). Returns 0 when nothing was pruned, GQ_EINVAL when
 * something was (rep->unknown lists it) or an argument but defs is NULL,
 * GQ_ETOOBIG when obj nests deeper than GQ_SCHEMA_MAX_DEPTH (untouched).
 * schema and defs are borrowed; obj is modified. */
int gq_schema_prune(const json_t *schema, const json_t *defs, json_t *obj,
                    struct gq_schema_report *rep);

/* Returns the openAPIV3Schema of version 'version' of the
 * CustomResourceDefinition 'crd' (apiextensions.k8s.io/v1:
 * spec.versions[].schema.openAPIV3Schema), borrowed from crd and valid as
 * long as it is; NULL if crd or version is NULL, the version is not listed
 * or it has no schema object. */
const json_t *gq_schema_for_version(const json_t *crd, const char *version);

/* Checks the rules of a structural schema that gq_schema_process() relies
 * on, as the apiserver does when a CRD is created
 * (pkg/apiserver/schema/validation.go, validateStructuralInvariants, and
 * pkg/apis/apiextensions/validation): every node has a known 'type' except
 * nodes with x-kubernetes-int-or-string or x-kubernetes-embedded-resource,
 * and object fields (not array items or the root) with
 * x-kubernetes-preserve-unknown-fields; the root is of type object; an array
 * has 'items'; properties and additionalProperties are not both given;
 * list-type map has list-map-keys; patterns compile.
 *
 * Returns 0, or on the first problem GQ_EINVAL with a message in err (if err
 * is not NULL and errlen > 0), its path relative to the schema root in the
 * apiserver's form:
 *   "properties[spec].properties[x].type: Required value: must not be empty
 *    for specified object fields"
 * (the caller prefixes "spec.versions[0].schema.openAPIV3Schema."). Also
 * GQ_EINVAL if schema is NULL or not an object, and GQ_ETOOBIG if it nests
 * more than GQ_SCHEMA_MAX_DEPTH schema levels. On success err is "". schema
 * is borrowed. */
int gq_schema_check_structural(const json_t *schema, char *err, size_t errlen);

#endif
