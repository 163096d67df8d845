/* base/duration.h - durations as the API server and kubectl print them,
 * and durations as users write them (gq_duration_parse(), at the end).
 *
 * The AGE column of `kubectl get` (and every other age or duration cell
 * the API server puts into a meta.k8s.io Table) is rendered by
 * k8s.io/apimachinery/pkg/util/duration.HumanDuration. gpuq-sim builds those
 * Table cells itself, so it needs the same function, rule for rule, or
 * `kubectl get` against the sim would print ages a real cluster never
 * shows. The rules, from duration.go (2-3 significant figures):
 *
 *   seconds = ms / 1000, truncated toward zero (Go's int(d.Seconds()))
 *   seconds < -1        "<invalid>"   (clock skew up to 2 s is tolerated)
 *   seconds < 0         "0s"          (-1999 .. -1000 ms)
 *   seconds < 120       "%ds"         "0s" .. "119s" (-999 ms is "0s" too)
 *   minutes < 10        "%dm%ds"      "2m" .. "9m59s"  (the "%ds" part only
 *                                     when the seconds are not 0)
 *   minutes < 180       "%dm"         "10m" .. "179m"
 *   hours   < 8         "%dh%dm"      "3h" .. "7h59m"  (minutes only if != 0)
 *   hours   < 48        "%dh"         "8h" .. "47h"
 *   hours   < 8*24      "%dd%dh"      "2d" .. "7d23h"  (hours only if != 0)
 *   hours   < 2*365*24  "%dd"         "8d" .. "729d"
 *   hours   < 8*365*24  "%dy%dd"      "2y" .. "7y364d" (days only if != 0)
 *   otherwise           "%dy"         "8y" ...
 *
 * Every unit is truncated (a duration is never rounded up), a year is 365
 * days, and "<invalid>" starts at -2 s exactly: -1999 ms is still "0s".
 * Go's Duration counts nanoseconds; gpuq times are milliseconds, which
 * changes nothing because every rule works on whole seconds or coarser.
 *
 * Pure: no clock, no allocation, no global state.
 */
#ifndef GQ_BASE_DURATION_H
#define GQ_BASE_DURATION_H
#include <stddef.h>
#include <stdint.h>

/* A buffer of this many bytes holds any gq_human_duration() result: the
 * longest is "292471208y" (INT64_MAX ms) plus the NUL. */
#define GQ_HUMAN_DURATION_LEN 24

/* Writes HumanDuration(ms milliseconds) into buf (len bytes), NUL-terminated,
 * following the rules above: 119999 -> "119s", 330000 -> "5m30s",
 * 63072000000 (730 days) -> "2y", -2000 -> "<invalid>".
 * Returns the number of characters written, not counting the NUL, or:
 *   GQ_EINVAL  buf is NULL
 *   GQ_ETOOBIG buf is too small; it then holds "" if len > 0.
 * GQ_HUMAN_DURATION_LEN bytes always suffice. buf is borrowed for the
 * call. Source of the rules: k8s.io/apimachinery/pkg/util/duration/
 * duration.go, HumanDuration (and its boundary tests in duration_test.go). */
int gq_human_duration(int64_t ms, char *buf, size_t len);

/* Largest duration gq_duration_parse() accepts: 100 years, in ms. */
#define GQ_DURATION_MAX_MS (INT64_C(100) * 365 * 24 * 3600 * 1000)

/* Parses a duration written as Go's time.ParseDuration writes it, plus
 * days: one or more NUMBER UNIT pairs with no spaces, NUMBER a decimal
 * ("90", "1.5"), UNIT one of ms, s, m, h, d (a day is 24 h): "90s", "30m",
 * "2h", "1h30m", "1.5h", "7d", "250ms". No sign (durations here are never
 * negative); the result is rounded to whole milliseconds. s is borrowed;
 * the result goes to *ms (untouched on error). Returns 0, or GQ_EPARSE for
 * anything else (empty, a number without unit, an unknown unit, spaces,
 * a sign) and GQ_EOVERFLOW above GQ_DURATION_MAX_MS. Pure. */
int gq_duration_parse(const char *s, int64_t *ms);

#endif
