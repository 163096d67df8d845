/* cli/jget.c - lenient reads (see jget.h). */
#include "cli/jget.h"

#include "base/clock.h"

#include <stdarg.h>

const json_t *gq_cli_jget(const json_t *obj, ...)
{
  va_list ap;
  const char *k;

  va_start(ap, obj);
  while (obj && (k = va_arg(ap, const char *)) != NULL)
    obj = json_object_get(obj, k);
  va_end(ap);
  return obj && !json_is_null(obj) ? obj : NULL;
}

const char *gq_cli_jstr(const json_t *v)
{
  return json_is_string(v) ? json_string_value(v) : NULL;
}

int64_t gq_cli_jint(const json_t *v, int64_t dflt)
{
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

int64_t gq_cli_time_ms(const json_t *v)
{
  int64_t ms = 0;

  if (!gq_cli_jstr(v) || gq_time_parse(gq_cli_jstr(v), &ms) != 0)
    return 0;
  return ms;
}
