/* The strategic merge patch of api/patch.h, on fuzz_patch()'s input
 * (fuzz.h): a JSON array [target, patch], or a patch applied to {}. */
#include "fuzz.h"

#include "api/patch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  return fuzz_patch(data, size, gq_patch_strategic);
}
