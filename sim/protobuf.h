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

#endif
