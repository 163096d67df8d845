/* api/quantity.c - resource.Quantity parsing with exact decimal arithmetic.
 *
 * A quantity is split into sign, integer digits, fraction digits, a binary
 * multiplier 1024^k and a decimal exponent. The digits are copied into a
 * buffer of digit values; the binary multiplier is applied by long
 * multiplication on that buffer (it only grows to the left, so the decimal
 * point stays put), and the decimal exponent just moves the point. The
 * integer part is then accumulated with overflow checks and any nonzero
 * fraction digit rounds the result up. This is exact for every input,
 * including "1.5Ei" (whose 15 * 2^60 does not fit int64 although the result
 * does) and exponents far beyond any digit count, without a bignum library.
 */
#include "api/quantity.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"

/* Digits a 1024 multiplication can add on the left (1024 < 10^4). */
#define GROWTH_PER_KI 4
/* A positive integer of this many digits or more exceeds INT64_MAX. */
#define INT64_DIGITS 19

struct qnum {
  int neg;
  const char *ip; /* integer digits */
  size_t in;
  const char *fp; /* fraction digits */
  size_t fn;
  int bin;       /* multiplier 1024^bin, 0..6 */
  int64_t exp10; /* decimal exponent from the suffix */
};

/* Suffix tables from suffix.go (newSuffixer). */
static const struct {
  const char *s;
  int exp10;
} dec_suffixes[] = {
    {"n", -9}, {"u", -6}, {"m", -3}, {"", 0},   {"k", 3},
    {"M", 6},  {"G", 9},  {"T", 12}, {"P", 15}, {"E", 18},
};

static const char *const bin_suffixes[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

static int is_digit(char c)
{
  return c >= '0' && c <= '9';
}

/* Reads [+-]? number; returns the first byte after it, or NULL if the
 * number has no digit at all. */
static const char *parse_number(const char *s, struct qnum *q)
{
  const char *p = s;

  q->neg = *p == '-';
  if (*p == '+' || *p == '-')
    p++;
  q->ip = p;
  while (is_digit(*p))
    p++;
  q->in = (size_t)(p - q->ip);
  q->fp = p;
  q->fn = 0;
  if (*p == '.') {
    q->fp = ++p;
    while (is_digit(*p))
      p++;
    q->fn = (size_t)(p - q->fp);
  }
  return q->in + q->fn > 0 ? p : NULL;
}

/* "e" / "E" then [+-]? digits to the end, as an int64 (Go: ParseInt, whose
 * failure makes the suffix invalid). */
static int parse_exponent(const char *s, int64_t *out)
{
  int neg = *s == '-';
  int64_t v = 0;

  if (*s == '+' || *s == '-')
    s++;
  if (!*s)
    return GQ_EPARSE;
  for (; *s; s++) {
    if (!is_digit(*s))
      return GQ_EPARSE;
    if (__builtin_mul_overflow(v, 10, &v) ||
        __builtin_add_overflow(v, neg ? -(*s - '0') : *s - '0', &v))
      return GQ_EPARSE;
  }
  *out = v;
  return 0;
}

/* The tables are tried before the exponent form, as in suffixHandler's
 * interpret(), so "E" alone is exa and "E3" an exponent. */
static int parse_suffix(const char *s, struct qnum *q)
{
  size_t i;

  q->bin = 0;
  q->exp10 = 0;
  for (i = 0; i < sizeof dec_suffixes / sizeof dec_suffixes[0]; i++) {
    if (!strcmp(s, dec_suffixes[i].s)) {
      q->exp10 = dec_suffixes[i].exp10;
      return 0;
    }
  }
  for (i = 0; i < sizeof bin_suffixes / sizeof bin_suffixes[0]; i++) {
    if (!strcmp(s, bin_suffixes[i])) {
      q->bin = (int)i + 1;
      return 0;
    }
  }
  if (s[0] == 'e' || s[0] == 'E')
    return parse_exponent(s + 1, &q->exp10);
  return GQ_EPARSE;
}

/* Multiplies the decimal number b[*start..end) by 1024 in place; new high
 * digits are written below *start. */
static void mul1024(unsigned char *b, size_t *start, size_t end)
{
  unsigned carry = 0;
  size_t i;

  for (i = end; i > *start; i--) {
    unsigned x = b[i - 1] * 1024u + carry;

    b[i - 1] = (unsigned char)(x % 10);
    carry = x / 10;
  }
  while (carry) {
    b[--*start] = (unsigned char)(carry % 10);
    carry /= 10;
  }
}

static int64_t add_sat(int64_t a, int64_t b)
{
  int64_t r;

  if (__builtin_add_overflow(a, b, &r))
    return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

/* Converts the digits b[start..end), whose integer part ends before index
 * 'point' (which may lie outside the digits: zeros are implied), into the
 * ceiling of the signed value. */
static int digits_to_int(const unsigned char *b, size_t start, size_t end,
                         int64_t point, int neg, int64_t *out)
{
  const uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  uint64_t mag = 0;
  int64_t f = (int64_t)start, i;
  int frac = 0;

  while (f < (int64_t)end && b[f] == 0)
    f++;
  if (f == (int64_t)end) {
    *out = 0;
    return 0;
  }
  if (point > f && point - f > INT64_DIGITS)
    return GQ_EOVERFLOW;
  for (i = f; i < point; i++) {
    uint64_t d = i < (int64_t)end ? b[i] : 0;

    if (__builtin_mul_overflow(mag, (uint64_t)10, &mag) ||
        __builtin_add_overflow(mag, d, &mag))
      return GQ_EOVERFLOW;
  }
  for (i = point > f ? point : f; i < (int64_t)end; i++)
    frac |= b[i] != 0;
  if (frac && !neg && __builtin_add_overflow(mag, (uint64_t)1, &mag))
    return GQ_EOVERFLOW;
  if (mag > lim)
    return GQ_EOVERFLOW;
  *out = !neg ? (int64_t)mag : mag == lim ? INT64_MIN : -(int64_t)mag;
  return 0;
}

/* Computes ceil(q * 10^extra10) into *out. */
static int scale(const struct qnum *q, int extra10, int64_t *out)
{
  size_t head = (size_t)q->bin * GROWTH_PER_KI, start = head;
  size_t end = head + q->in + q->fn;
  unsigned char *b = gq_xmalloc(end);
  int64_t point;
  size_t i;
  int rc;

  for (i = 0; i < q->in; i++)
    b[head + i] = (unsigned char)(q->ip[i] - '0');
  for (i = 0; i < q->fn; i++)
    b[head + q->in + i] = (unsigned char)(q->fp[i] - '0');
  for (i = 0; i < (size_t)q->bin; i++)
    mul1024(b, &start, end);
  point = add_sat((int64_t)(head + q->in), add_sat(q->exp10, extra10));
  rc = digits_to_int(b, start, end, point, q->neg, out);
  free(b);
  return rc;
}

static int parse_scaled(const char *s, int extra10, int64_t *out)
{
  struct qnum q;
  const char *rest;
  int rc;

  if (!s || !out)
    return GQ_EINVAL;
  if (!(rest = parse_number(s, &q)))
    return GQ_EPARSE;
  if ((rc = parse_suffix(rest, &q)) != 0)
    return rc;
  return scale(&q, extra10, out);
}

int gq_quantity_parse(const char *s, int64_t *out)
{
  return parse_scaled(s, 0, out);
}

int gq_quantity_parse_milli(const char *s, int64_t *out)
{
  return parse_scaled(s, 3, out);
}

/* Writes the shortest "%.*g" form of d that reads back as d (at most 17
 * significant digits are ever needed for a double). The C locale is
 * assumed, as gpuq never calls setlocale(). */
static void shortest_repr(double d, char *buf, size_t len)
{
  int prec;

  for (prec = 1; prec < 17; prec++) {
    snprintf(buf, len, "%.*g", prec, d);
    if (strtod(buf, NULL) == d)
      return;
  }
  snprintf(buf, len, "%.17g", d);
}

int gq_quantity_from_json(const json_t *v, int milli, int64_t *out)
{
  char buf[40];
  int64_t n;

  if (!v || !out)
    return GQ_EINVAL;
  if (json_is_string(v)) {
    if (strlen(json_string_value(v)) != json_string_length(v))
      return GQ_EPARSE; /* an embedded NUL would cut the string short */
    return parse_scaled(json_string_value(v), milli ? 3 : 0, out);
  }
  if (json_is_integer(v)) {
    n = json_integer_value(v);
    if (milli && __builtin_mul_overflow(n, (int64_t)1000, &n))
      return GQ_EOVERFLOW;
    *out = n;
    return 0;
  }
  if (!json_is_real(v) || !isfinite(json_real_value(v)))
    return GQ_EINVAL;
  shortest_repr(json_real_value(v), buf, sizeof buf);
  return parse_scaled(buf, milli ? 3 : 0, out);
}

int gq_quantity_format(int64_t value, char *buf, size_t len)
{
  int n;

  if (!buf || len == 0)
    return GQ_ETOOBIG;
  n = snprintf(buf, len, "%" PRId64, value);
  if (n < 0 || (size_t)n >= len) {
    buf[0] = '\0';
    return GQ_ETOOBIG;
  }
  return n;
}
