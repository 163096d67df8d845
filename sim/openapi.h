/* sim/openapi.h - the OpenAPI definitions of gpuq-sim's built-in kinds.
 *
 * kube-apiserver publishes a schema for every kind it serves, in
 * /openapi/v2 (one Swagger 2.0 document, JSON or protobuf) and in
 * /openapi/v3/<group-version> (OpenAPI 3.0, one document per group
 * version); kubectl reads them for `explain`, for client-side validation
 * (`apply -f` of a `kind: List`) and to learn whether the server takes
 * the `fieldValidation` parameter (k8s.io/kube-openapi, and kubectl's
 * pkg/cmd/util QueryParamVerifier).
 *
 * The schemas of the built-in kinds are not written here: the build
 * generates them from an installed @kubernetes/client-node
 * (sim/openapi_gen.mjs) into one JSON file,
 *   {"source": "...", "kubernetes": "v1.32.0",
 *    "definitions": {"io.k8s.api.core.v1.Pod": SCHEMA, ...}}
 * with Swagger 2.0 references ("$ref": "#/definitions/NAME") and each
 * kind's "x-kubernetes-group-version-kind". This module loads that file
 * and derives what the sim serves from it. Pure: no I/O but the load, no
 * global state. Every json_t returned is a new reference unless said
 * otherwise; arguments are borrowed.
 */
#ifndef GQ_SIM_OPENAPI_H
#define GQ_SIM_OPENAPI_H
#include <stddef.h>

#include <jansson.h>

/* Largest generated file read (the 1.32 definitions of the sim's kinds
 * are about 0.3 MB). */
#define GQ_OPENAPI_MAX_FILE (64u << 20)

/* Reads the generator's file at 'path' into *out (a new reference: the
 * whole document; its "definitions" member is what the other functions
 * take). Returns 0; GQ_ENOTFOUND if the file does not exist; GQ_EINVAL
 * with the reason in err if it is not such a document (not JSON, no
 * "definitions" object, a definition that is not an object); GQ_ETOOBIG
 * over GQ_OPENAPI_MAX_FILE. *out is NULL on every error. */
int gq_openapi_load(const char *path, json_t **out, char *err, size_t errlen);

/* The name of the definition whose x-kubernetes-group-version-kind lists
 * group/version/kind ("" group for core), or NULL. Borrowed from defs. */
const char *gq_openapi_find(const json_t *defs, const char *group,
                            const char *version, const char *kind);

/* Adds definition 'name' and every definition it refers to, transitively,
 * to the object 'out' (as kube-apiserver's per-group-version v3 documents
 * carry the schemas they reach). Names already in out are not walked
 * again, so cycles (JSONSchemaProps) end. Unknown names are skipped. */
void gq_openapi_closure(const json_t *defs, const char *name, json_t *out);

/* The OpenAPI 3.0 form of a Swagger 2.0 schema (new reference): every
 * "$ref": "#/definitions/X" becomes "#/components/schemas/X", and a
 * reference with siblings (a description) becomes {"allOf": [{"$ref"}],
 * ...siblings}, as kube-apiserver's v3 documents write it (a v3 $ref
 * ignores its siblings). */
json_t *gq_openapi_to_v3(const json_t *schema);

/* A CRD version's openAPIV3Schema as kube-apiserver publishes it in
 * /openapi/v2 (apiextensions-apiserver's controller/openapi/v2, new
 * reference): the root gets apiVersion and kind (strings) and metadata
 * (a reference to ObjectMeta) when it does not declare them, and a node
 * with x-kubernetes-preserve-unknown-fields keeps only its description
 * (any value validates there, as Swagger 2.0 cannot say "these fields,
 * and others"). */
json_t *gq_openapi_crd_v2(const json_t *schema);

#endif
