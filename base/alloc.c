/* base/alloc.c - aborting allocators (see alloc.h for why). */
#include "base/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static void oom(size_t n)
{
  /* No logging module here: base/log may itself be what needs memory. */
  fprintf(stderr, "gpuq: out of memory allocating %zu bytes\n", n);
  abort();
}

void *gq_xmalloc(size_t n)
{
  void *p = malloc(n ? n : 1);

  if (!p)
    oom(n);
  return p;
}

void *gq_xcalloc(size_t count, size_t size)
{
  void *p = calloc(count ? count : 1, size ? size : 1);

  if (!p)
    oom(count * size);
  return p;
}

void *gq_xrealloc(void *p, size_t n)
{
  void *q = realloc(p, n ? n : 1);

  if (!q)
    oom(n);
  return q;
}

char *gq_xstrdup(const char *s)
{
  return gq_xstrndup(s, strlen(s));
}

char *gq_xstrndup(const char *s, size_t n)
{
  size_t len = strnlen(s, n);
  char *p = gq_xmalloc(len + 1);

  memcpy(p, s, len);
  p[len] = '\0';
  return p;
}

char *gq_xasprintf(const char *fmt, ...)
{
  va_list ap, ap2;
  char *s;
  int n;

  va_start(ap, fmt);
  va_copy(ap2, ap);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) {
    fprintf(stderr, "gpuq: bad format string '%s'\n", fmt);
    abort();
  }
  s = gq_xmalloc((size_t)n + 1);
  vsnprintf(s, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

void gq_alloc_tune(void)
{
#ifdef __GLIBC__
  mallopt(M_MXFAST, 0);
#endif
}
