/* sim/protobuf.h - the little of Kubernetes' protobuf encoding gpuq-sim
 * must read. kubectl sends some built-in objects as protobuf whatever the
 * server prefers (`kubectl create namespace`), so the sim decodes the
 * envelope (magic "k8s\0" + runtime.Unknown, k8s.io/apimachinery/pkg/
 * runtime/serializer/protobuf) and the object's ObjectMeta (field 1 of
 * every top-level kind: name, generateName, namespace, labels,
 * annotations). The rest of the object is not decoded. */
#ifndef GQ_SIM_PROTOBUF_H
#define GQ_SIM_PROTOBUF_H
#include <jansson.h>
#include <stddef.h>

/* Returns 1 if body starts with the protobuf magic. */
int gq_pb_is_protobuf(const char *body, size_t len);

/* Decodes body into a new JSON object {"apiVersion", "kind", "metadata"}
 * or returns NULL if it is malformed. */
json_t *gq_pb_decode_meta(const char *body, size_t len);

/* The media type of /openapi/v2 as protobuf. kubectl asks for it as
 * "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" (client-go's
 * discovery client, OpenAPISchema(), which parses the answer as protobuf
 * only), but '@' is not allowed in a media type that Go's
 * mime.ParseMediaType reads back, so kube-openapi's handler answers with
 * this spelling, and so does the sim. */
#define GQ_PB_OPENAPI_V2_TYPE \
  "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

/* Encodes a Swagger 2.0 document (JSON: "swagger", "info" {"title",
 * "version"}, "definitions") as the protobuf message openapi.v2.Document
 * of github.com/google/gnostic (OpenAPIv2.proto), which is what
 * kube-apiserver sends for GQ_PB_OPENAPI_V2_TYPE. Of each schema it
 * encodes $ref, format, title, description, required, additionalProperties
 * (a schema or a boolean), type, items, allOf, properties and the vendor
 * extensions ("x-..." keys, as NamedAny with the value's JSON text in
 * Any.yaml: JSON is YAML); other keywords (enum, default, bounds) are
 * left out, as kubectl's validation and explain do not read them from v2.
 * "paths" is not encoded. Returns the bytes (caller frees) and their
 * count in *len; never NULL. doc is borrowed. */
char *gq_pb_openapi_v2(const json_t *doc, size_t *len);

#endif
