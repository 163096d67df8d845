/* Label selectors (api/selector.h): the string form, matched against a
 * fixed label set, and the metav1.LabelSelector JSON form when the bytes
 * are JSON. */
#include "fuzz.h"

#include "api/selector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *s = fuzz_cstr(data, size);
  json_t *v = fuzz_json(data, size);
  json_t *labels = json_pack("{s:s, s:s, s:s}", "app", "x", "tier", "10",
                             "gpuq.dev/team", "research");
  struct gq_labelsel *sel;
  char err[256];

  if (gq_labelsel_parse(s, &sel, err, sizeof(err)) == 0) {
    gq_labelsel_match(sel, labels);
    gq_labelsel_match(sel, NULL);
    gq_labelsel_free(sel);
  }
  if (v) {
    if (gq_labelsel_from_json(v, &sel, err, sizeof(err)) == 0) {
      gq_labelsel_match(sel, labels);
      gq_labelsel_free(sel);
    }
    json_decref(v);
  }
  json_decref(labels);
  free(s);
  return 0;
}
