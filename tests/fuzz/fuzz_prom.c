/* Prometheus' instant-query answers (api/prom.h gq_prom_parse_vector): the
 * controller reads them from --prometheus-url, an outside server. A parse
 * either gives finite samples with object labels, or an error sentence
 * and an empty vector. */
#include "fuzz.h"

#include "api/prom.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  struct gq_prom_vector v;
  char err[256];

  err[0] = '\0';
  if (gq_prom_parse_vector((const char *)data, size, &v, err,
                           sizeof(err)) == 0) {
    for (size_t i = 0; i < v.n; i++) {
      if (!isfinite(v.v[i].value) || !json_is_object(v.v[i].metric))
        abort();
      (void)gq_prom_label(&v.v[i], "pod");
    }
  } else if (v.n || v.doc || !*err || !memchr(err, '\0', sizeof(err))) {
    abort();
  }
  gq_prom_vector_free(&v);
  return 0;
}
