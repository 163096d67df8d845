/* YAML loading (api/yaml.h): the bytes as a multi-document stream. */
#include "fuzz.h"

#include "api/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  json_t *docs = NULL;
  char err[256];

  if (gq_yaml_parse((const char *)data, size, &docs, err, sizeof(err)) == 0)
    json_decref(docs);
  return 0;
}
