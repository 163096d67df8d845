/* base/alloc.h - allocation that cannot fail.
 *
 * gpuq caps every input (GQ_ETOOBIG), so running out of memory means a bug
 * or a machine in trouble; like Redis's zmalloc and h2o's allocators these
 * wrappers abort with a message instead of returning NULL. The process is
 * then restarted and rebuilds its state from the API server and Redis.
 * Memory they return is owned by the caller and released with free().
 */
#ifndef GQ_BASE_ALLOC_H
#define GQ_BASE_ALLOC_H
#include <stddef.h>

/* malloc(n); aborts on failure. n == 0 returns a unique non-NULL pointer. */
void *gq_xmalloc(size_t n);
/* calloc(count, size); aborts on failure or if count * size overflows. */
void *gq_xcalloc(size_t count, size_t size);
/* realloc(p, n); aborts on failure. */
void *gq_xrealloc(void *p, size_t n);
/* strdup(s); s must not be NULL; aborts on failure. */
char *gq_xstrdup(const char *s);
/* Copies at most n bytes of s into a new NUL-terminated string. */
char *gq_xstrndup(const char *s, size_t n);
/* Returns a newly allocated printf-formatted string; aborts on failure. */
char *gq_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Tunes glibc's malloc for a long-lived event loop that parses and drops
 * many small JSON trees: fastbins off (mallopt(M_MXFAST, 0)). With them,
 * every request of 1 KiB or more first merges all freed small chunks
 * (malloc_consolidate), and between two such requests a watch event leaves
 * thousands; that merging was a sixth of gpuq-sim's and gpuq-controller's
 * CPU on the Philly replay (bench/README.md "replay"). Small blocks are
 * still served from glibc's per-thread cache (tcache). Takes nothing,
 * returns nothing; a no-op on other C libraries. Call once, first thing
 * in main(). */
void gq_alloc_tune(void);

#endif
