/* HTTP responses (api/wire.h): the first two bytes give the status code
 * (100..599), the rest is the body, decoded as a metav1.Status; the body
 * is also read as a Retry-After header. */
#include "fuzz.h"

#include "api/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct gq_k8s_status st;
  long code;
  char *hdr;
  int64_t delay;

  if (size < 2)
    return 0;
  code = 100 + (long)(((unsigned)data[0] << 8 | data[1]) % 500);
  gq_status_decode(code, (const char *)data + 2, size - 2, &st);
  if (!memchr(st.message, '\0', sizeof(st.message)) ||
      !memchr(st.reason, '\0', sizeof(st.reason)))
    abort(); /* both must be NUL-terminated */
  hdr = fuzz_cstr(data + 2, size - 2);
  gq_retry_after_parse(hdr, 1700000000000LL, &delay);
  free(hdr);
  return 0;
}
