/* Resource quantities (api/quantity.h): the string parsers, a parsed
 * value's formatting (which must parse back to the same value), and the
 * JSON form when the bytes are a JSON value. */
#include "fuzz.h"

#include "api/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *s = fuzz_cstr(data, size);
  json_t *v = fuzz_json(data, size);
  int64_t x, y;
  char buf[64];

  if (gq_quantity_parse(s, &x) == 0 &&
      gq_quantity_format(x, buf, sizeof(buf)) >= 0 &&
      (gq_quantity_parse(buf, &y) != 0 || x != y))
    abort(); /* format must read back as the same value */
  gq_quantity_parse_milli(s, &x);
  if (v) {
    gq_quantity_from_json(v, 0, &x);
    gq_quantity_from_json(v, 1, &x);
    json_decref(v);
  }
  free(s);
  return 0;
}
