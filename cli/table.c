/* cli/table.c - kubectl-style tables and -o json (see table.h). */
#include "cli/table.h"

#include "base/alloc.h"
#include "base/duration.h"

#include <stdlib.h>
#include <string.h>

/* The text of one cell: owned, free() it. */
static char *cell(const json_t *v)
{
  if (json_is_string(v))
    return gq_xstrdup(json_string_value(v));
  if (json_is_integer(v))
    return gq_xasprintf("%lld", (long long)json_integer_value(v));
  if (json_is_real(v))
    return gq_xasprintf("%g", json_real_value(v));
  if (json_is_boolean(v))
    return gq_xstrdup(json_is_true(v) ? "true" : "false");
  return gq_xstrdup("-");
}

void gq_cli_print(FILE *f, const char *kind, const json_t *rows,
                  const struct gq_cli_col *cols, size_t n, int json)
{
  size_t nr = json_array_size(rows), *w = gq_xcalloc(n, sizeof(*w));

  if (json) {
    json_t *doc = json_pack("{s:s,s:O}", "kind", kind, "items", rows);

    /* 15 digits: a rounded 1.235 prints as 1.235, not 1.2350000000000001 */
    json_dumpf(doc, f, JSON_INDENT(4) | JSON_PRESERVE_ORDER |
                           JSON_REAL_PRECISION(15));
    fputc('\n', f);
    json_decref(doc);
    free(w);
    return;
  }
  if (nr == 0) {
    fprintf(stderr, "No resources found\n");
    free(w);
    return;
  }
  for (size_t c = 0; c < n; c++)
    w[c] = strlen(cols[c].header);
  for (size_t r = 0; r < nr; r++)
    for (size_t c = 0; c < n; c++) {
      char *s = cell(json_object_get(json_array_get(rows, r), cols[c].key));

      if (strlen(s) > w[c])
        w[c] = strlen(s);
      free(s);
    }
  for (size_t r = 0; r <= nr; r++) {
    for (size_t c = 0; c < n; c++) {
      char *s = r == 0 ? gq_xstrdup(cols[c].header)
                       : cell(json_object_get(json_array_get(rows, r - 1),
                                              cols[c].key));

      if (c + 1 < n)
        fprintf(f, "%-*s   ", (int)w[c], s);
      else
        fprintf(f, "%s\n", s);
      free(s);
    }
  }
  free(w);
}

void gq_cli_age(int64_t now_ms, int64_t ms, char *buf, size_t len)
{
  if (ms == 0 || gq_human_duration(now_ms - ms, buf, len) < 0)
    snprintf(buf, len, "-");
}
