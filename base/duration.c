/* base/duration.c - HumanDuration (see duration.h for the rules). */
#include "base/duration.h"

#include "base/err.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define MS_PER_S INT64_C(1000)
#define S_PER_MIN INT64_C(60)
#define MIN_PER_H INT64_C(60)
#define H_PER_DAY INT64_C(24)
#define DAYS_PER_YEAR INT64_C(365)

/* Formats "<big><bu>" or, when small != 0, "<big><bu><small><su>" into buf.
 * This is the shape of every branch of HumanDuration: a major unit and an
 * optional minor one that is left out when it is zero ("5m", not "5m0s"). */
static int put_units(char *buf, size_t len, int64_t big, char bu,
                     int64_t small, char su)
{
  int n;

  if (small != 0)
    n = snprintf(buf, len, "%" PRId64 "%c%" PRId64 "%c", big, bu, small, su);
  else
    n = snprintf(buf, len, "%" PRId64 "%c", big, bu);
  if (n < 0 || (size_t)n >= len) {
    if (len > 0)
      buf[0] = '\0';
    return GQ_ETOOBIG;
  }
  return n;
}

static int put_text(char *buf, size_t len, const char *s)
{
  int n = snprintf(buf, len, "%s", s);

  if (n < 0 || (size_t)n >= len) {
    if (len > 0)
      buf[0] = '\0';
    return GQ_ETOOBIG;
  }
  return n;
}

/* The branches from two days on, where hours is the whole number of hours
 * (>= 48). Split out of gq_human_duration() only to keep both short. */
static int put_days_or_years(char *buf, size_t len, int64_t hours)
{
  int64_t days = hours / H_PER_DAY;

  if (hours < 8 * H_PER_DAY)
    return put_units(buf, len, days, 'd', hours % H_PER_DAY, 'h');
  if (hours < 2 * DAYS_PER_YEAR * H_PER_DAY)
    return put_units(buf, len, days, 'd', 0, 'd');
  if (hours < 8 * DAYS_PER_YEAR * H_PER_DAY)
    return put_units(buf, len, days / DAYS_PER_YEAR, 'y',
                     days % DAYS_PER_YEAR, 'd');
  return put_units(buf, len, days / DAYS_PER_YEAR, 'y', 0, 'y');
}

int gq_human_duration(int64_t ms, char *buf, size_t len)
{
  /* C division truncates toward zero, exactly as Go's int(d.Seconds())
   * does for the negative inputs that matter here (-1999 ms -> -1). */
  int64_t seconds = ms / MS_PER_S;
  int64_t minutes = seconds / S_PER_MIN;
  int64_t hours = minutes / MIN_PER_H;

  if (!buf)
    return GQ_EINVAL;
  if (seconds < -1)
    return put_text(buf, len, "<invalid>");
  if (seconds < 0)
    return put_text(buf, len, "0s");
  if (seconds < 2 * S_PER_MIN)
    return put_units(buf, len, seconds, 's', 0, 's');
  if (minutes < 10)
    return put_units(buf, len, minutes, 'm', seconds % S_PER_MIN, 's');
  if (minutes < 3 * MIN_PER_H)
    return put_units(buf, len, minutes, 'm', 0, 'm');
  if (hours < 8)
    return put_units(buf, len, hours, 'h', minutes % MIN_PER_H, 'm');
  if (hours < 2 * H_PER_DAY)
    return put_units(buf, len, hours, 'h', 0, 'h');
  return put_days_or_years(buf, len, hours);
}

/* The unit at s (longest match first: "ms" before "m") in ms, and its
 * length in *n; 0 if s starts with no unit. */
static double unit_ms(const char *s, size_t *n)
{
  static const struct {
    const char *name;
    double ms;
  } units[] = {{"ms", 1}, {"s", 1e3}, {"m", 6e4}, {"h", 3.6e6},
               {"d", 8.64e7}};

  for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
    size_t len = strlen(units[i].name);

    if (!strncmp(s, units[i].name, len)) {
      *n = len;
      return units[i].ms;
    }
  }
  return 0;
}

/* Reads a decimal NUMBER ("12", "1.5", ".5") at *p, advancing it; -1 if
 * there is none. Digits only: strtod would take signs, exponents, "inf". */
static double read_number(const char **p)
{
  const char *s = *p;
  double v = 0, scale = 1;
  int digits = 0;

  for (; *s >= '0' && *s <= '9'; s++, digits++)
    v = v * 10 + (*s - '0');
  if (*s == '.')
    for (s++; *s >= '0' && *s <= '9'; s++, digits++)
      v += (*s - '0') * (scale /= 10);
  *p = s;
  return digits ? v : -1;
}

int gq_duration_parse(const char *s, int64_t *ms)
{
  double total = 0;

  if (!s || !*s)
    return GQ_EPARSE;
  while (*s) {
    double v = read_number(&s), u;
    size_t n;

    if (v < 0 || (u = unit_ms(s, &n)) == 0)
      return GQ_EPARSE;
    s += n;
    total += v * u;
    if (total > (double)GQ_DURATION_MAX_MS)
      return GQ_EOVERFLOW;
  }
  *ms = (int64_t)(total + 0.5);
  return 0;
}
