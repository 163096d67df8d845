/* Watch-stream framing and event decoding (api/wire.h): the bytes are a
 * response body fed to the NDJSON framer in chunks whose sizes come from
 * the first byte, with a line cap, and each line decoded as a watch
 * event. */
#include "fuzz.h"

#include "api/wire.h"

static int on_line(const char *line, size_t len, void *arg)
{
  enum gq_watch_type type;
  json_t *obj = NULL;
  char rv[GQ_RV_MAX], err[256];

  (void)arg;
  if (gq_watch_event_decode(line, len, &type, &obj, rv, err, sizeof(err)) ==
      0)
    json_decref(obj);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct gq_ndjson f;
  size_t chunk, off = 1;

  if (size == 0)
    return 0;
  chunk = (size_t)(data[0] % 64) + 1;
  gq_ndjson_init(&f, 4096);
  while (off < size) {
    size_t n = size - off < chunk ? size - off : chunk;

    if (gq_ndjson_feed(&f, (const char *)data + off, n, on_line, NULL) != 0)
      break;
    off += n;
  }
  gq_ndjson_finish(&f, on_line, NULL);
  gq_ndjson_release(&f);
  return 0;
}
