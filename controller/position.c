/* controller/position.c - which queue positions gpuq writes (see
 * position.h). */
#include "decide/position.h"

int gq_position_due(int64_t shown, int64_t exact, int64_t exact_k)
{
  int64_t off = shown > exact ? shown - exact : exact - shown;

  if (exact < 1)
    return 0;
  if (shown <= 0 || shown <= exact_k || exact <= exact_k)
    return shown != exact;
  return 4 * off > shown;
}
