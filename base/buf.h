/* base/buf.h - capped growable byte buffers.
 *
 * Every buffer that holds input (an HTTP body, a watch line, a Redis reply
 * being assembled) has a cap set at init, as curl's dynbuf does
 * (docs/internals/DYNBUF.md): an append that would exceed the cap fails with
 * GQ_ETOOBIG *and frees the buffer*, so a caller that forgets to check cannot
 * keep growing it. Contents are always NUL-terminated (the NUL is not counted
 * in len and not part of the cap), so text can be used as a C string.
 *
 * struct gq_buf is caller-allocated (embed it); gq_buf_release() frees the
 * contents. Not thread-safe; loop thread only, like everything else.
 */
#ifndef GQ_BASE_BUF_H
#define GQ_BASE_BUF_H
#include <stdarg.h>
#include <stddef.h>

struct gq_buf {
  char *data;  /* NULL until the first append; then NUL-terminated */
  size_t len;  /* bytes used, excluding the NUL */
  size_t _alloc;
  size_t _cap; /* maximum len, in bytes */
};

/* Sets up an empty buffer that may hold at most 'cap' bytes (cap > 0). */
void gq_buf_init(struct gq_buf *b, size_t cap);

/* Appends n bytes of p. Returns 0, or GQ_ETOOBIG if len + n would exceed the
 * cap: the buffer is then released (empty, cap kept) before returning. */
int gq_buf_append(struct gq_buf *b, const void *p, size_t n);

/* Appends a NUL-terminated string; same errors as gq_buf_append(). */
int gq_buf_puts(struct gq_buf *b, const char *s);

/* Appends printf-formatted text; same errors as gq_buf_append(). */
int gq_buf_printf(struct gq_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int gq_buf_vprintf(struct gq_buf *b, const char *fmt, va_list ap);

/* Empties the buffer but keeps its memory for reuse. */
void gq_buf_reset(struct gq_buf *b);

/* Removes the first n bytes (n <= len), shifting the rest down; used by
 * framers that consume a line and keep the remainder. */
void gq_buf_consume(struct gq_buf *b, size_t n);

/* Returns the contents as a heap string owned by the caller (never NULL; ""
 * when empty) and leaves the buffer empty with its cap kept. */
char *gq_buf_take(struct gq_buf *b);

/* Returns the contents as a C string, "" when empty; borrowed, valid until
 * the next call that changes the buffer. */
const char *gq_buf_str(const struct gq_buf *b);

/* Frees the contents; the buffer is empty and may be reused (cap kept). */
void gq_buf_release(struct gq_buf *b);

#endif
