/* api/quantity.h - Kubernetes resource quantities ("500m", "2Ki", "1e3").
 *
 * Node capacity, pod requests and GpuJob specs carry amounts as
 * resource.Quantity strings. gpuq only needs their integer value, so this
 * module parses a quantity and returns Value() or MilliValue() as int64,
 * with exact arithmetic on the decimal digits (no doubles), so that "0.1"
 * CPU is exactly 100 millicores.
 *
 * Source of the rules: k8s.io/apimachinery/pkg/api/resource/quantity.go and
 * suffix.go. The grammar is
 *   quantity  ::= [+-]? number suffix
 *   number    ::= digits | digits "." digits | digits "." | "." digits
 *   suffix    ::= binarySI | decimalSI | ("e" | "E") [+-]? digits
 *   binarySI  ::= Ki | Mi | Gi | Ti | Pi | Ei           (1024^1 .. 1024^6)
 *   decimalSI ::= n | u | m | "" | k | M | G | T | P | E (10^-9 .. 10^18)
 * with no spaces anywhere. "E" alone is exa; "E" followed by digits is an
 * exponent. Where gpuq deliberately differs from Go:
 *   - a number needs at least one digit, as the grammar above (quantity.go's
 *     comment) says; Go's parser also lets "." and "-Ki" through as zero;
 *   - a value beyond int64 is GQ_EOVERFLOW, where Go silently caps it at
 *     2^63-1;
 *   - rounding is always toward +infinity (ceiling), also for negative
 *     values, where Go's Value() rounds away from zero ("-1500m" is -1
 *     here, -2 in Go). Requests and capacities are never negative, so only
 *     the direction that matters for them, up, is what Go does.
 *
 * Pure: no I/O, no global state, no allocation that outlives a call.
 * Pointers are borrowed for the call.
 */
#ifndef GQ_API_QUANTITY_H
#define GQ_API_QUANTITY_H
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Parses the quantity string 's' (NUL-terminated) and stores its value,
 * rounded up to an integer, in *out: "8" -> 8, "1500m" -> 2, "1.5" -> 2,
 * "2Ki" -> 2048, "-1500m" -> -1. This is Go's Quantity.Value(), rounding
 * aside (see above).
 * Returns 0, or:
 *   GQ_EINVAL    s or out is NULL
 *   GQ_EPARSE    s does not follow the grammar ("", "1.2.3", "5X", "Ki",
 *                " 5", "1e", an exponent that does not fit int64)
 *   GQ_EOVERFLOW the value does not fit int64 ("100Ei")
 * *out is written only on success. */
int gq_quantity_parse(const char *s, int64_t *out);

/* As gq_quantity_parse(), but stores the value times 1000, rounded up
 * (Go's Quantity.MilliValue()): "500m" -> 500, "2" -> 2000, "0.1" -> 100,
 * "1n" -> 1. Same errors; GQ_EOVERFLOW comes 1000 times sooner. */
int gq_quantity_parse_milli(const char *s, int64_t *out);

/* Reads a quantity from a JSON value (borrowed): a string is parsed as
 * above; an integer is taken as is (times 1000 if 'milli'); a real, which
 * YAML gives for "cpu: 0.5", is converted through its shortest decimal form
 * that reads back as the same double ("0.1", not 0.1000000000000000055...)
 * and then parsed like a string, so it is rounded up exactly as the digits
 * the author wrote. 'milli' nonzero selects MilliValue, zero Value.
 * Returns 0 with *out set, or GQ_EINVAL (v or out NULL, or v is not a
 * string, integer or real), GQ_EPARSE, GQ_EOVERFLOW as above. */
int gq_quantity_from_json(const json_t *v, int milli, int64_t *out);

/* Writes 'value' as a plain decimal integer ("-42", no suffix, no
 * exponent) into buf, NUL-terminated. Returns the number of characters
 * written, not counting the NUL, or GQ_ETOOBIG if buf (len bytes) is too
 * small, in which case buf holds "" if len > 0. 21 bytes always suffice. */
int gq_quantity_format(int64_t value, char *buf, size_t len);

#endif
