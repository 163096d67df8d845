/* sim/gpuutil.c - GPU utilization timelines (see gpuutil.h). */
#include "sim/gpuutil.h"

#include "base/duration.h"
#include "base/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_space(char c)
{
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int is_alpha(char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_word(char c)
{
  return is_alpha(c) || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.';
}

/* A fraction in [0, 1]: a plain decimal, nothing else (strtod would also
 * take "nan", "inf", hex and exponents). Returns 0 or -1. */
static int parse_frac(const char *tok, double *out)
{
  const char *p = tok;
  char *end;
  double v;

  for (; *p; p++)
    if (!((*p >= '0' && *p <= '9') || *p == '.'))
      return -1;
  if (!*tok || !strcmp(tok, "."))
    return -1;
  v = strtod(tok, &end);
  if (*end || v < 0 || v > 1)
    return -1;
  *out = v;
  return 0;
}

/* Splits s (changed in place) into at most max whitespace-separated
 * tokens; returns their count, or max + 1 if there are more. */
static size_t tokens(char *s, char **tok, size_t max)
{
  size_t n = 0;

  for (;;) {
    while (is_space(*s))
      s++;
    if (!*s)
      return n;
    if (n == max)
      return max + 1;
    tok[n++] = s;
    while (*s && !is_space(*s))
      s++;
    if (*s)
      *s++ = '\0';
  }
}

/* One phase "[LABEL] FRACTION for DURATION" (text changed in place). */
static int parse_phase(char *text, struct gq_sim_gpuutil_phase *ph)
{
  char *tok[4];
  size_t n = tokens(text, tok, 4), i = 0;
  int64_t ms;

  memset(ph, 0, sizeof(*ph));
  if (n == 4) {
    const char *l = tok[i++];

    if (!is_alpha(*l) || strlen(l) >= sizeof(ph->label))
      return -1;
    for (const char *c = l; *c; c++)
      if (!is_word(*c))
        return -1;
    memcpy(ph->label, l, strlen(l) + 1);
  } else if (n != 3) {
    return -1;
  }
  if (parse_frac(tok[i], &ph->frac) != 0 || strcmp(tok[i + 1], "for") != 0 ||
      gq_duration_parse(tok[i + 2], &ms) != 0 || ms <= 0)
    return -1;
  ph->dur_ms = ms;
  return 0;
}

void gq_sim_gpuutil_constant(struct gq_sim_gpuutil *u, double frac)
{
  memset(u, 0, sizeof(*u));
  u->n = 1;
  u->phases[0].frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
}

/* The timeline form: comma-separated phases. */
static int parse_timeline(char *text, struct gq_sim_gpuutil *u, char *err,
                          size_t errlen)
{
  char *p = text;

  memset(u, 0, sizeof(*u));
  for (;;) {
    char *comma = strchr(p, ','), shown[72];
    struct gq_sim_gpuutil_phase *ph = &u->phases[u->n];

    if (u->n == GQ_SIM_GPUUTIL_MAX_PHASES) {
      snprintf(err, errlen, "more than %d phases", GQ_SIM_GPUUTIL_MAX_PHASES);
      return GQ_ETOOBIG;
    }
    if (comma)
      *comma = '\0';
    snprintf(shown, sizeof(shown), "%.64s", p); /* parse_phase cuts p up */
    if (parse_phase(p, ph) != 0) {
      snprintf(err, errlen, "phase %zu: want [LABEL] FRACTION for DURATION "
               "(FRACTION 0..1, DURATION as 90s, 30m, 1h30m), got '%s'",
               u->n + 1, shown);
      return GQ_EINVAL;
    }
    if (ph->dur_ms > GQ_DURATION_MAX_MS - u->cycle_ms) {
      snprintf(err, errlen, "phases longer than 100 years in all");
      return GQ_EINVAL;
    }
    u->cycle_ms += ph->dur_ms;
    u->cycle_busy += ph->frac * (double)ph->dur_ms / 1000.0;
    u->n++;
    if (!comma)
      return 0;
    p = comma + 1;
  }
}

int gq_sim_gpuutil_parse(const char *text, struct gq_sim_gpuutil *u,
                         char *err, size_t errlen)
{
  char buf[GQ_SIM_GPUUTIL_MAX_TEXT + 1], *tok[2];
  double frac;
  size_t len;
  int rc;

  if (errlen)
    *err = '\0';
  if (!text) {
    snprintf(err, errlen, "no value");
    return GQ_EINVAL;
  }
  if ((len = strlen(text)) > GQ_SIM_GPUUTIL_MAX_TEXT) {
    snprintf(err, errlen, "longer than %d bytes", GQ_SIM_GPUUTIL_MAX_TEXT);
    return GQ_ETOOBIG;
  }
  memcpy(buf, text, len + 1);
  if (!strchr(buf, ',') && tokens(buf, tok, 1) == 1) { /* one word */
    if (parse_frac(tok[0], &frac) != 0) {
      snprintf(err, errlen, "want a fraction 0..1 or phases "
               "'[LABEL] FRACTION for DURATION, ...'");
      return GQ_EINVAL;
    }
    gq_sim_gpuutil_constant(u, frac);
    return 0;
  }
  memcpy(buf, text, len + 1);
  rc = parse_timeline(buf, u, err, errlen);
  if (rc != 0)
    memset(u, 0, sizeof(*u));
  return rc;
}

/* Elapsed time folded into one cycle (u must be a timeline). */
static int64_t in_cycle(const struct gq_sim_gpuutil *u, int64_t elapsed_ms)
{
  return elapsed_ms < 0 ? 0 : elapsed_ms % u->cycle_ms;
}

size_t gq_sim_gpuutil_phase_at(const struct gq_sim_gpuutil *u,
                               int64_t elapsed_ms)
{
  int64_t t;
  size_t i;

  if (u->cycle_ms <= 0)
    return 0;
  t = in_cycle(u, elapsed_ms);
  for (i = 0; i + 1 < u->n && t >= u->phases[i].dur_ms; i++)
    t -= u->phases[i].dur_ms;
  return i;
}

double gq_sim_gpuutil_at(const struct gq_sim_gpuutil *u, int64_t elapsed_ms)
{
  return u->phases[gq_sim_gpuutil_phase_at(u, elapsed_ms)].frac;
}

/* Per-GPU busy and idle seconds over [0, t) elapsed. */
static void cumulative(const struct gq_sim_gpuutil *u, int64_t t,
                       double idle_below, double *busy, double *idle)
{
  double cycles, cycle_idle = 0;
  int64_t rest;

  *busy = *idle = 0;
  if (t <= 0)
    return;
  if (u->cycle_ms <= 0) {
    *busy = u->phases[0].frac * (double)t / 1000.0;
    *idle = u->phases[0].frac < idle_below ? (double)t / 1000.0 : 0;
    return;
  }
  cycles = (double)(t / u->cycle_ms);
  rest = t % u->cycle_ms;
  for (size_t i = 0; i < u->n; i++) {
    const struct gq_sim_gpuutil_phase *ph = &u->phases[i];
    int64_t part = rest < ph->dur_ms ? rest : ph->dur_ms;
    int is_idle = ph->frac < idle_below;

    cycle_idle += is_idle ? (double)ph->dur_ms / 1000.0 : 0;
    *busy += ph->frac * (double)part / 1000.0;
    *idle += is_idle ? (double)part / 1000.0 : 0;
    rest -= part;
  }
  *busy += cycles * u->cycle_busy;
  *idle += cycles * cycle_idle;
}

void gq_sim_gpuutil_integrate(const struct gq_sim_gpuutil *u, int64_t from_ms,
                              int64_t to_ms, double gpus, double idle_below,
                              struct gq_sim_usage *acc)
{
  double b0, i0, b1, i1;

  if (from_ms < 0)
    from_ms = 0;
  if (to_ms <= from_ms)
    return;
  cumulative(u, from_ms, idle_below, &b0, &i0);
  cumulative(u, to_ms, idle_below, &b1, &i1);
  acc->alloc_s += gpus * (double)(to_ms - from_ms) / 1000.0;
  acc->used_s += gpus * (b1 - b0);
  acc->idle_s += gpus * (i1 - i0);
}
