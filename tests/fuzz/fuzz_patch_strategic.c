/* The strategic merge patch of api/patch.h: the bytes are a JSON
 * array [target, patch]; anything else is applied as a patch to {}. */
#include "fuzz.h"

#include "api/patch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  json_t *doc = fuzz_json(data, size), *empty = json_object(), *out = NULL;
  const json_t *target = empty, *patch = doc;
  char err[256];

  if (!doc) {
    json_decref(empty);
    return 0;
  }
  if (json_is_array(doc) && json_array_size(doc) == 2) {
    target = json_array_get(doc, 0);
    patch = json_array_get(doc, 1);
  }
  if (gq_patch_strategic(target, patch, &out, err, sizeof(err)) == 0)
    json_decref(out);
  json_decref(doc);
  json_decref(empty);
  return 0;
}
