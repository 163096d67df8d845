/* Durations (base/duration.h): the first 8 bytes (little-endian, zero
 * padded) as milliseconds, into buffers of every size up to the bound the
 * header promises suffices. */
#include "fuzz.h"

#include "base/duration.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  uint64_t u = 0;
  char buf[GQ_HUMAN_DURATION_LEN];

  for (size_t i = 0; i < size && i < 8; i++)
    u |= (uint64_t)data[i] << (8 * i);
  if (gq_human_duration((int64_t)u, buf, sizeof(buf)) < 0)
    abort(); /* GQ_HUMAN_DURATION_LEN always suffices */
  for (size_t len = 0; len < sizeof(buf); len++)
    gq_human_duration((int64_t)u, buf, len);
  return 0;
}
