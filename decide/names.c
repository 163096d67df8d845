/* decide/names.c - Kubernetes name syntax and integer parsing (see names.h). */
#include "decide/names.h"

#include <string.h>

static int is_alnum(int c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}

int gq_name_part_ok(const char *p, size_t n, int allow_empty)
{
  if (n == 0)
    return allow_empty;
  if (n > 63 || !is_alnum((unsigned char)p[0]) ||
      !is_alnum((unsigned char)p[n - 1]))
    return 0;
  for (size_t i = 0; i < n; i++) {
    int c = (unsigned char)p[i];

    if (!is_alnum(c) && c != '-' && c != '_' && c != '.')
      return 0;
  }
  return 1;
}

int gq_dns_label_ok(const char *p, size_t n)
{
  if (n == 0 || n > 63)
    return 0;
  for (size_t i = 0; i < n; i++) {
    int c = (unsigned char)p[i];

    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
          (c == '-' && i > 0 && i < n - 1)))
      return 0;
  }
  return 1;
}

int gq_dns_subdomain_ok(const char *p, size_t n)
{
  size_t start = 0;

  if (n == 0 || n > 253)
    return 0;
  for (size_t i = 0; i <= n; i++) {
    int c = i < n ? (unsigned char)p[i] : '.';

    if (c == '.') {
      if (i == start || p[start] == '-' || p[i - 1] == '-')
        return 0;
      start = i + 1;
    } else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 c == '-')) {
      return 0;
    }
  }
  return 1;
}

int gq_qualified_name_ok(const char *s)
{
  const char *slash = strchr(s, '/');

  if (!slash)
    return gq_name_part_ok(s, strlen(s), 0);
  return gq_dns_subdomain_ok(s, (size_t)(slash - s)) &&
         gq_name_part_ok(slash + 1, strlen(slash + 1), 0);
}

int gq_parse_int64(const char *s, int64_t *out)
{
  uint64_t v = 0, lim = INT64_MAX;
  int neg = 0;

  if (*s == '+' || *s == '-')
    neg = *s++ == '-';
  if (neg)
    lim++;
  if (*s == '\0')
    return -1;
  for (; *s; s++) {
    uint64_t d = (uint64_t)(*s - '0');

    if (*s < '0' || *s > '9' || v > (lim - d) / 10)
      return -1;
    v = v * 10 + d;
  }
  /* -(v - 1) - 1 reaches INT64_MIN without overflowing. */
  *out = !neg ? (int64_t)v : v == 0 ? 0 : -(int64_t)(v - 1) - 1;
  return 0;
}

int gq_parse_bool(const char *s, int *out)
{
  static const char *const t[] = {"1", "t", "T", "TRUE", "true", "True"};
  static const char *const f[] = {"0", "f", "F", "FALSE", "false", "False"};

  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    if (!strcmp(s, t[i])) {
      *out = 1;
      return 0;
    }
    if (!strcmp(s, f[i])) {
      *out = 0;
      return 0;
    }
  }
  return -1;
}
