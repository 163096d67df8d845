/* TeamQuota decoding and validation (api/teamquota.h). */
#include "fuzz.h"

#include "api/teamquota.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  json_t *obj = fuzz_json(data, size);
  struct gq_teamquota q;
  char err[512];

  if (!obj)
    return 0;
  memset(&q, 0, sizeof(q));
  if (gq_teamquota_decode(obj, &q, err, sizeof(err)) == 0)
    gq_teamquota_release(&q);
  json_decref(obj);
  return 0;
}
