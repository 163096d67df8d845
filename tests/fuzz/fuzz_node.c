/* core/v1 Node decoding (api/node.h), with the default product label. */
#include "fuzz.h"

#include "api/node.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  json_t *obj = fuzz_json(data, size);
  struct gq_node n;
  char err[512];

  if (!obj)
    return 0;
  memset(&n, 0, sizeof(n));
  if (gq_node_decode(obj, NULL, &n, err, sizeof(err)) == 0)
    gq_node_release(&n);
  json_decref(obj);
  return 0;
}
