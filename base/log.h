/* base/log.h - one line per event, logfmt, level checked before formatting.
 *
 * A line reads
 *   ts=2026-11-29T16:02:03.123Z level=warn msg="cannot patch status of
 *   'research/llama': conflict" module=ctl action=patch key=research/llama
 * (one line; wrapped here). The message is worded by git's rules: lower case,
 * no trailing full stop, what failed first, subjects in single quotes. The
 * context (struct gq_lc) says where it happened, as nginx's log->action does.
 * When the process runs on an accelerated clock, vt= gives virtual time.
 *
 * GQ_LOG() checks the level before evaluating its arguments (Redis's
 * serverLog), so a disabled debug line costs one comparison.
 *
 * Secrets: strings registered with gq_log_add_secret() (bearer tokens,
 * passwords) are replaced by "[redacted]" wherever they appear in a line, so
 * a token that leaks into an error message or URL is still never logged.
 *
 * Output goes to stderr unless a sink is installed (tests capture lines).
 * Libraries never log (STYLE): the layer that decides what to do logs once.
 * Loop thread only.
 */
#ifndef GQ_BASE_LOG_H
#define GQ_BASE_LOG_H
#include <stddef.h>
#include <stdint.h>

enum gq_log_level { GQ_DEBUG = 0, GQ_INFO = 1, GQ_WARN = 2, GQ_ERROR = 3 };

/* Where a line comes from. Any field may be NULL (then it is left out). */
struct gq_lc {
  const char *module; /* "api", "queue", "ctl", "sim" */
  const char *action; /* what was being done: "watch", "admit" */
  const char *key;    /* the object: "namespace/name" or a Redis key */
};

/* Current threshold; lines below it are skipped. Default GQ_INFO. */
extern int gq_log_level;

#define GQ_LOG(lvl, lc, ...)                                                 \
  do {                                                                       \
    if ((lvl) >= gq_log_level)                                               \
      gq__log((lvl), (lc), 0, __VA_ARGS__);                                  \
  } while (0)

/* Rate limit for errors that can flap (a dead Redis, a failing watch): at
 * most one line per interval_ms of real time; the next line that passes
 * carries suppressed=N for the lines skipped meanwhile. Zero-initialize,
 * then set interval_ms. */
struct gq_log_limit {
  int64_t interval_ms;
  int64_t _next_ms;
  unsigned _suppressed;
};

#define GQ_LOG_LIMITED(lim, lvl, lc, ...)                                    \
  do {                                                                       \
    unsigned gq__sup_;                                                       \
    if ((lvl) >= gq_log_level && gq__log_pass((lim), &gq__sup_))             \
      gq__log((lvl), (lc), gq__sup_, __VA_ARGS__);                           \
  } while (0)

/* Writes one line (use GQ_LOG). 'suppressed' > 0 adds suppressed=N. */
void gq__log(int lvl, const struct gq_lc *lc, unsigned suppressed,
             const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Returns 1 if a limited line may be written now, with the count of lines
 * skipped since the last one in *suppressed (then reset). */
int gq__log_pass(struct gq_log_limit *lim, unsigned *suppressed);

/* Parses "debug", "info", "warn" or "error" into *out. Returns 0 or
 * GQ_EINVAL. */
int gq_log_parse_level(const char *s, int *out);

/* Registers a secret to redact from every line (copied; strings shorter than
 * 4 bytes are ignored as they would redact ordinary text). At most 32
 * secrets; returns 0 or GQ_ETOOBIG. */
int gq_log_add_secret(const char *secret);
/* Forgets all secrets (tests, or when a rotated token replaces the old). */
void gq_log_clear_secrets(void);

/* Line sink: receives each complete line without the trailing newline;
 * 'line' is valid only during the call. NULL restores stderr. */
typedef void (*gq_log_sink_cb)(const char *line, void *arg);
void gq_log_set_sink(gq_log_sink_cb cb, void *arg);

#endif
