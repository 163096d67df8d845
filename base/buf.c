/* base/buf.c - capped growable buffers (see buf.h). */
#include "base/buf.h"

#include "base/alloc.h"
#include "base/err.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gq_buf_init(struct gq_buf *b, size_t cap)
{
  b->data = NULL;
  b->len = 0;
  b->_alloc = 0;
  b->_cap = cap;
}

/* Makes room for 'extra' more bytes plus the NUL, growing geometrically but
 * never allocating past cap + 1. */
static int reserve(struct gq_buf *b, size_t extra)
{
  size_t need, want;

  if (extra > b->_cap || b->len > b->_cap - extra) {
    gq_buf_release(b);
    return GQ_ETOOBIG;
  }
  need = b->len + extra + 1;
  if (need <= b->_alloc)
    return 0;
  want = b->_alloc ? b->_alloc : 64;
  while (want < need)
    want = want > SIZE_MAX / 2 ? need : want * 2;
  if (want > b->_cap + 1)
    want = b->_cap + 1;
  b->data = gq_xrealloc(b->data, want);
  b->_alloc = want;
  return 0;
}

int gq_buf_append(struct gq_buf *b, const void *p, size_t n)
{
  int rc = reserve(b, n);

  if (rc != 0)
    return rc;
  if (n)
    memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
  return 0;
}

int gq_buf_puts(struct gq_buf *b, const char *s)
{
  return gq_buf_append(b, s, strlen(s));
}

int gq_buf_vprintf(struct gq_buf *b, const char *fmt, va_list ap)
{
  va_list ap2;
  int n, rc;

  va_copy(ap2, ap);
  n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0)
    return GQ_EINVAL;
  rc = reserve(b, (size_t)n);
  if (rc != 0)
    return rc;
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  b->len += (size_t)n;
  return 0;
}

int gq_buf_printf(struct gq_buf *b, const char *fmt, ...)
{
  va_list ap;
  int rc;

  va_start(ap, fmt);
  rc = gq_buf_vprintf(b, fmt, ap);
  va_end(ap);
  return rc;
}

void gq_buf_reset(struct gq_buf *b)
{
  b->len = 0;
  if (b->data)
    b->data[0] = '\0';
}

void gq_buf_consume(struct gq_buf *b, size_t n)
{
  if (n >= b->len) {
    gq_buf_reset(b);
    return;
  }
  memmove(b->data, b->data + n, b->len - n);
  b->len -= n;
  b->data[b->len] = '\0';
}

char *gq_buf_take(struct gq_buf *b)
{
  char *s = b->data ? b->data : gq_xstrdup("");

  b->data = NULL;
  b->len = 0;
  b->_alloc = 0;
  return s;
}

const char *gq_buf_str(const struct gq_buf *b)
{
  return b->data ? b->data : "";
}

void gq_buf_release(struct gq_buf *b)
{
  free(b->data);
  b->data = NULL;
  b->len = 0;
  b->_alloc = 0;
}
