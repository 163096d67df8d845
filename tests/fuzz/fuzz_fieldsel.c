/* Field selectors (api/selector.h): parse, list the fields, match. */
#include "fuzz.h"

#include "api/selector.h"

static const char *get(const char *field, void *arg)
{
  (void)arg;
  return strcmp(field, "metadata.name") == 0 ? "x" : "";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *s = fuzz_cstr(data, size);
  struct gq_fieldsel *sel;
  char err[256];

  if (gq_fieldsel_parse(s, &sel, err, sizeof(err)) == 0) {
    for (size_t i = 0; i < gq_fieldsel_count(sel); i++)
      if (!gq_fieldsel_field(sel, i))
        abort();
    gq_fieldsel_match(sel, get, NULL);
    gq_fieldsel_free(sel);
  }
  free(s);
  return 0;
}
