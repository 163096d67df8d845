/* api/node.h - decoding core/v1 Nodes into the typed struct gq_node of
 * decide/node.h (what a GPU node is, and which labels say its flavor and
 * GPU memory, is documented there).
 *
 * struct gq_node keeps one reference to the decoded document; its strings
 * are borrowed from it. Arrays are owned; gq_node_release() frees all.
 */
#ifndef GQ_API_NODE_H
#define GQ_API_NODE_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "api/meta.h"
#include "api/pod.h"
#include "decide/node.h"

/* Decodes a core/v1 Node. product_label is the label key holding the GPU
 * product (NULL = GQ_LABEL_GPU_PRODUCT). Takes a new reference to obj.
 * Returns 0, or GQ_EINVAL with "field: problem, got value" in err (errlen
 * bytes), e.g. a malformed allocatable quantity; nothing to release then. */
int gq_node_decode(const json_t *obj, const char *product_label,
                   struct gq_node *out, char *err, size_t errlen);

/* Releases what gq_node_decode() took; n is then empty. */
void gq_node_release(struct gq_node *n);

#endif
