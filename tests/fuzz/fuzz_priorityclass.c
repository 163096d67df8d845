/* PriorityClass decoding and validation (api/priorityclass.h), the value
 * the controller reads for spec.priorityClassName and gpuq-sim's check of
 * a created class. A class that decodes must keep Kubernetes' bounds. */
#include "fuzz.h"

#include "api/priorityclass.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  json_t *obj = fuzz_json(data, size);
  struct gq_priorityclass pc;
  char err[512];
  int valid;
  int32_t v;

  if (!obj)
    return 0;
  v = gq_priorityclass_value(obj, -7, &valid);
  if (gq_priorityclass_decode(obj, &pc, err, sizeof(err)) == 0) {
    if (!valid || v != pc.value || !*pc.name ||
        (pc.value > GQ_PC_HIGHEST_USER && strncmp(pc.name, "system-", 7)))
      abort();
    gq_priorityclass_release(&pc);
  } else if (valid || v != -7 || !memchr(err, '\0', sizeof(err)) || !*err) {
    abort(); /* a refusal says why, and the value falls back */
  }
  json_decref(obj);
  return 0;
}
