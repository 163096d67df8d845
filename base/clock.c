/* base/clock.c - real and virtual time (see clock.h). */
#include "base/clock.h"

#include "base/err.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct gq_clock process_clock = {1.0, 0};

int64_t gq_clock_to_virtual(const struct gq_clock *c, int64_t real_ms)
{
  double v = (double)c->epoch_ms + c->scale * (double)(real_ms - c->epoch_ms);

  return (int64_t)llround(v);
}

int64_t gq_clock_to_real(const struct gq_clock *c, int64_t virtual_ms)
{
  double r =
      (double)c->epoch_ms + (double)(virtual_ms - c->epoch_ms) / c->scale;

  return (int64_t)llround(r);
}

uint64_t gq_clock_delay(const struct gq_clock *c, int64_t dur_ms)
{
  if (dur_ms <= 0)
    return 0;
  return (uint64_t)ceil((double)dur_ms / c->scale);
}

int gq_clock_parse(struct gq_clock *c, const char *scale_str,
                   const char *epoch_str, char *err, size_t errlen)
{
  char *end;
  double scale = 1.0;
  long long epoch;

  if (scale_str) {
    errno = 0;
    scale = strtod(scale_str, &end);
    if (errno || end == scale_str || *end || !(scale > 0.0) ||
        scale > GQ_CLOCK_MAX_SCALE) {
      snprintf(err, errlen,
               "--time-scale: must be a number in (0, %g], got '%s'",
               GQ_CLOCK_MAX_SCALE, scale_str);
      return GQ_EINVAL;
    }
  }
  c->scale = scale;
  if (!epoch_str) {
    c->epoch_ms = gq_clock_real_ms();
    return 0;
  }
  errno = 0;
  epoch = strtoll(epoch_str, &end, 10);
  if (errno || end == epoch_str || *end || epoch < 0 ||
      epoch > INT64_MAX / 1000) {
    snprintf(err, errlen,
             "--time-epoch: must be Unix seconds (an integer >= 0), got '%s'",
             epoch_str);
    return GQ_EINVAL;
  }
  c->epoch_ms = (int64_t)epoch * 1000;
  return 0;
}

void gq_clock_set(const struct gq_clock *c)
{
  process_clock = *c;
}

const struct gq_clock *gq_clock_get(void)
{
  return &process_clock;
}

static int64_t read_clock(clockid_t id)
{
  struct timespec ts;

  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t gq_clock_real_ms(void)
{
  return read_clock(CLOCK_REALTIME);
}

int64_t gq_clock_mono_ms(void)
{
  return read_clock(CLOCK_MONOTONIC);
}

int64_t gq_clock_now_ms(void)
{
  return gq_clock_to_virtual(&process_clock, gq_clock_real_ms());
}

uint64_t gq_clock_real_delay_ms(int64_t dur_ms)
{
  return gq_clock_delay(&process_clock, dur_ms);
}

/* Splits ms into a UTC broken-down time and the ms remainder, flooring so
 * that times before 1970 still format correctly. */
static int to_tm(int64_t ms, struct tm *tm, int *frac_ms)
{
  int64_t s = ms / 1000, r = ms % 1000;
  time_t t;

  if (r < 0) {
    r += 1000;
    s -= 1;
  }
  t = (time_t)s;
  if (!gmtime_r(&t, tm))
    return GQ_EINVAL;
  *frac_ms = (int)r;
  return 0;
}

int gq_time_format(int64_t ms, char *buf, size_t len)
{
  struct tm tm;
  int frac, n;

  if (len < 21)
    return GQ_ETOOBIG;
  if (to_tm(ms, &tm, &frac) != 0)
    return GQ_EINVAL;
  n = (int)strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return n > 0 ? n : GQ_ETOOBIG;
}

int gq_time_format_micro(int64_t ms, char *buf, size_t len)
{
  struct tm tm;
  char day[32];
  int frac, n;

  if (len < 28)
    return GQ_ETOOBIG;
  if (to_tm(ms, &tm, &frac) != 0)
    return GQ_EINVAL;
  if (!strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm))
    return GQ_ETOOBIG;
  n = snprintf(buf, len, "%s.%03d000Z", day, frac);
  return n > 0 && (size_t)n < len ? n : GQ_ETOOBIG;
}

/* Reads exactly n digits at *p into *out, advancing *p. */
static int digits(const char **p, int n, int *out)
{
  int v = 0;

  for (int i = 0; i < n; i++) {
    if (!isdigit((unsigned char)(*p)[i]))
      return -1;
    v = v * 10 + ((*p)[i] - '0');
  }
  *p += n;
  *out = v;
  return 0;
}

/* Expects character c at *p and skips it. */
static int expect(const char **p, char c)
{
  if (**p != c)
    return -1;
  (*p)++;
  return 0;
}

/* Parses a 'Z' or +hh:mm / -hh:mm suffix into seconds east of UTC. */
static int parse_offset(const char *p, int64_t *off_s)
{
  int hh, mm, sign;

  if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
    *off_s = 0;
    return 0;
  }
  if (*p != '+' && *p != '-')
    return -1;
  sign = *p++ == '-' ? -1 : 1;
  if (digits(&p, 2, &hh) || expect(&p, ':') || digits(&p, 2, &mm) || *p ||
      hh > 23 || mm > 59)
    return -1;
  *off_s = sign * (int64_t)(hh * 3600 + mm * 60);
  return 0;
}

int gq_time_parse(const char *s, int64_t *ms_out)
{
  const char *p = s;
  struct tm tm;
  int Y, M, D, h, m, sec, ms = 0, scale = 100;
  int64_t off_s;
  time_t t;

  memset(&tm, 0, sizeof(tm));
  if (digits(&p, 4, &Y) || expect(&p, '-') || digits(&p, 2, &M) ||
      expect(&p, '-') || digits(&p, 2, &D) || (*p != 'T' && *p != 't'))
    return GQ_EPARSE;
  p++;
  if (digits(&p, 2, &h) || expect(&p, ':') || digits(&p, 2, &m) ||
      expect(&p, ':') || digits(&p, 2, &sec))
    return GQ_EPARSE;
  if (*p == '.') {
    if (!isdigit((unsigned char)*++p))
      return GQ_EPARSE;
    for (; isdigit((unsigned char)*p); p++, scale /= 10)
      ms += scale * (*p - '0');
  }
  if (parse_offset(p, &off_s) != 0 || M < 1 || M > 12 || D < 1 || D > 31 ||
      h > 23 || m > 59 || sec > 60)
    return GQ_EPARSE;
  tm.tm_year = Y - 1900;
  tm.tm_mon = M - 1;
  tm.tm_mday = D;
  tm.tm_hour = h;
  tm.tm_min = m;
  tm.tm_sec = sec;
  t = timegm(&tm);
  *ms_out = ((int64_t)t - off_s) * 1000 + ms;
  return 0;
}
