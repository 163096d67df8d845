/* core/v1 Pod decoding (api/pod.h). */
#include "fuzz.h"

#include "api/pod.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  json_t *obj = fuzz_json(data, size);
  struct gq_pod p;
  char err[512];

  if (!obj)
    return 0;
  memset(&p, 0, sizeof(p));
  if (gq_pod_decode(obj, &p, err, sizeof(err)) == 0)
    gq_pod_release(&p);
  json_decref(obj);
  return 0;
}
