/* base/clock.h - real and virtual (accelerated) time.
 *
 * gpuq-sim and gpuq-controller replay days of a cluster in minutes. Both
 * read time through this module so that they agree:
 *
 *   virtual = epoch + scale * (real - epoch)
 *
 * 'epoch' is an instant in Unix time where the two clocks coincide and
 * 'scale' how many virtual seconds pass per real second. The process-wide
 * clock is configured once at start-up from --time-scale S --time-epoch E
 * (E in Unix seconds); the default is scale 1, i.e. virtual == real.
 *
 * What follows the virtual clock (DESIGN §5): timestamps gpuq writes into
 * objects and durations that come from objects (grace periods, expected
 * durations, deadlines, maximum waits). What stays real: lease renewals,
 * HTTP and Redis timeouts, backoffs and rate limits. gq_clock_real_delay_ms()
 * converts an object-given duration into the real delay for a uv timer.
 *
 * All times are int64 milliseconds since the Unix epoch unless named _s.
 * The pure functions take a struct gq_clock; the gq_clock_now_*() functions
 * read the process-wide one. Not thread-safe to reconfigure; configure before
 * starting the loop.
 */
#ifndef GQ_BASE_CLOCK_H
#define GQ_BASE_CLOCK_H
#include <stddef.h>
#include <stdint.h>

struct gq_clock {
  double scale;     /* virtual seconds per real second, > 0 */
  int64_t epoch_ms; /* Unix ms where virtual == real */
};

/* Largest accepted scale: a day per 86 ms is far past any replay we run. */
#define GQ_CLOCK_MAX_SCALE 1000000.0

/* Pure: virtual time at real time real_ms under c. */
int64_t gq_clock_to_virtual(const struct gq_clock *c, int64_t real_ms);
/* Pure: real time at which c's virtual clock shows virtual_ms. */
int64_t gq_clock_to_real(const struct gq_clock *c, int64_t virtual_ms);
/* Pure: the real delay in ms (rounded up, >= 0) that spans a virtual
 * duration of dur_ms under c; negative durations give 0. */
uint64_t gq_clock_delay(const struct gq_clock *c, int64_t dur_ms);

/* Parses the command-line pair into c. scale_str (NULL = "1") must be a
 * number in (0, GQ_CLOCK_MAX_SCALE]; epoch_str (NULL = now) an integer of
 * Unix seconds. Returns 0 or GQ_EINVAL with a message naming the flag and
 * the value in err (errlen bytes, always NUL-terminated). */
int gq_clock_parse(struct gq_clock *c, const char *scale_str,
                   const char *epoch_str, char *err, size_t errlen);

/* Installs c as the process-wide clock (copied). */
void gq_clock_set(const struct gq_clock *c);
/* Returns the process-wide clock (borrowed, static). */
const struct gq_clock *gq_clock_get(void);

/* Real wall-clock time, Unix ms (CLOCK_REALTIME). */
int64_t gq_clock_real_ms(void);
/* Monotonic real time in ms, for timeouts and intervals (CLOCK_MONOTONIC). */
int64_t gq_clock_mono_ms(void);
/* Virtual wall-clock time, Unix ms, under the process-wide clock. */
int64_t gq_clock_now_ms(void);
/* Real delay for a virtual duration under the process-wide clock. */
uint64_t gq_clock_real_delay_ms(int64_t dur_ms);

/* Formats ms as an RFC 3339 UTC timestamp in Kubernetes metav1.Time form
 * ("2006-01-02T15:04:05Z", whole seconds, truncated). Returns the length
 * written, or GQ_ETOOBIG if len < 21. */
int gq_time_format(int64_t ms, char *buf, size_t len);
/* Same, in metav1.MicroTime form ("2006-01-02T15:04:05.000000Z", used by
 * leases and events.k8s.io). Needs len >= 28. */
int gq_time_format_micro(int64_t ms, char *buf, size_t len);
/* Parses an RFC 3339 timestamp ("2006-01-02T15:04:05Z", optional fraction,
 * 'Z' or a +hh:mm / -hh:mm offset) into Unix ms (fraction truncated to ms).
 * Returns 0 or GQ_EPARSE. */
int gq_time_parse(const char *s, int64_t *ms_out);

#endif
