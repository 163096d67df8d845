/* GpuJob decoding and validation (api/gpujob.h) of a JSON document, then
 * the report path for a rejected job and the template round trip. */
#include "fuzz.h"

#include "api/gpujob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  json_t *obj = fuzz_json(data, size);
  struct gq_gpujob j;
  char err[512];

  if (!obj)
    return 0;
  memset(&j, 0, sizeof(j));
  if (gq_gpujob_decode(obj, &j, err, sizeof(err)) == 0) {
    json_decref(gq_gpujob_template_json(&j));
    gq_gpujob_release(&j);
  } else {
    memset(&j, 0, sizeof(j));
    gq_gpujob_decode_invalid(obj, err, &j);
    gq_gpujob_release(&j);
  }
  json_decref(obj);
  return 0;
}
