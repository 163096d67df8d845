/* jsonpath (api/jsonpath.h): the first line is the path, the rest a JSON
 * document to evaluate it on (an empty object when it is not JSON). */
#include "fuzz.h"

#include "api/jsonpath.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const uint8_t *nl = memchr(data, '\n', size);
  size_t plen = nl ? (size_t)(nl - data) : size;
  char *path = fuzz_cstr(data, plen);
  json_t *doc = nl ? fuzz_json(nl + 1, size - plen - 1) : NULL;
  char err[256];

  if (!doc)
    doc = json_object();
  gq_jsonpath_valid(path, err, sizeof(err));
  gq_jsonpath_get(doc, path);
  json_decref(doc);
  free(path);
  return 0;
}
