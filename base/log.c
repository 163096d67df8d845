/* base/log.c - logfmt lines with secret redaction (see log.h). */
#include "base/log.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SECRETS 32
#define LINE_MAX_BYTES 8192 /* a longer message is truncated, never split */

int gq_log_level = GQ_INFO;

static char *secrets[MAX_SECRETS];
static size_t nsecrets;
static gq_log_sink_cb sink;
static void *sink_arg;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int gq_log_parse_level(const char *s, int *out)
{
  for (int i = 0; i < 4; i++) {
    if (strcmp(s, level_names[i]) == 0) {
      *out = i;
      return 0;
    }
  }
  return GQ_EINVAL;
}

int gq_log_add_secret(const char *secret)
{
  if (strlen(secret) < 4)
    return 0;
  for (size_t i = 0; i < nsecrets; i++)
    if (strcmp(secrets[i], secret) == 0)
      return 0;
  if (nsecrets == MAX_SECRETS)
    return GQ_ETOOBIG;
  secrets[nsecrets++] = gq_xstrdup(secret);
  return 0;
}

void gq_log_clear_secrets(void)
{
  for (size_t i = 0; i < nsecrets; i++)
    free(secrets[i]);
  nsecrets = 0;
}

void gq_log_set_sink(gq_log_sink_cb cb, void *arg)
{
  sink = cb;
  sink_arg = arg;
}

int gq__log_pass(struct gq_log_limit *lim, unsigned *suppressed)
{
  int64_t now = gq_clock_mono_ms();

  if (now < lim->_next_ms) {
    lim->_suppressed++;
    return 0;
  }
  lim->_next_ms = now + lim->interval_ms;
  *suppressed = lim->_suppressed;
  lim->_suppressed = 0;
  return 1;
}

/* Appends s to the line at *pos, bounded by the line size. */
static void put(char *line, size_t *pos, const char *s, size_t n)
{
  size_t room = LINE_MAX_BYTES - 1 - *pos;

  if (n > room)
    n = room;
  memcpy(line + *pos, s, n);
  *pos += n;
}

/* Appends v as a logfmt value: bare if it has no space, quote, '=' or
 * control character; otherwise double-quoted with \" \\ \n \t escapes. */
static void put_value(char *line, size_t *pos, const char *v)
{
  int quote = *v == '\0' || strpbrk(v, " \"=\\") != NULL;

  for (const char *p = v; *p && !quote; p++)
    quote = (unsigned char)*p < 0x20;
  if (!quote) {
    put(line, pos, v, strlen(v));
    return;
  }
  put(line, pos, "\"", 1);
  for (const char *p = v; *p; p++) {
    char esc[8];
    int n = 1;

    esc[0] = *p;
    if (*p == '"' || *p == '\\') {
      esc[0] = '\\';
      esc[1] = *p;
      n = 2;
    } else if ((unsigned char)*p < 0x20) {
      n = snprintf(esc, sizeof(esc), *p == '\n' ? "\\n" : "\\x%02x",
                   (unsigned char)*p);
    }
    put(line, pos, esc, (size_t)n);
  }
  put(line, pos, "\"", 1);
}

static void put_kv(char *line, size_t *pos, const char *k, const char *v)
{
  if (!v)
    return;
  put(line, pos, " ", 1);
  put(line, pos, k, strlen(k));
  put(line, pos, "=", 1);
  put_value(line, pos, v);
}

/* Overwrites every registered secret in 'line' with "[redacted]". Works in
 * place when the secret is at least as long as the marker; otherwise the
 * tail is shifted (bounded by the line size). */
static void redact(char *line, size_t cap)
{
  static const char mark[] = "[redacted]";
  const size_t mlen = sizeof(mark) - 1;

  for (size_t i = 0; i < nsecrets; i++) {
    size_t slen = strlen(secrets[i]);
    char *hit = line;

    while ((hit = strstr(hit, secrets[i])) != NULL) {
      size_t tail = strlen(hit + slen);

      if (hit - line + mlen + tail + 1 > cap)
        tail = cap - (size_t)(hit - line) - mlen - 1;
      memmove(hit + mlen, hit + slen, tail);
      hit[mlen + tail] = '\0';
      memcpy(hit, mark, mlen);
      hit += mlen;
    }
  }
}

void gq__log(int lvl, const struct gq_lc *lc, unsigned suppressed,
             const char *fmt, ...)
{
  char line[LINE_MAX_BYTES], msg[LINE_MAX_BYTES / 2], ts[32], num[24];
  size_t pos = 0;
  va_list ap;
  const struct gq_clock *c = gq_clock_get();

  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  redact(msg, sizeof(msg)); /* before escaping can change a secret's bytes */
  if (lvl < GQ_DEBUG || lvl > GQ_ERROR)
    lvl = GQ_ERROR;
  gq_time_format_micro(gq_clock_real_ms(), ts, sizeof(ts));
  put(line, &pos, "ts=", 3);
  put(line, &pos, ts, strlen(ts));
  put_kv(line, &pos, "level", level_names[lvl]);
  put_kv(line, &pos, "msg", msg);
  if (lc) {
    put_kv(line, &pos, "module", lc->module);
    put_kv(line, &pos, "action", lc->action);
    put_kv(line, &pos, "key", lc->key);
  }
  if (c->scale != 1.0) {
    gq_time_format(gq_clock_now_ms(), ts, sizeof(ts));
    put_kv(line, &pos, "vt", ts);
  }
  if (suppressed) {
    snprintf(num, sizeof(num), "%u", suppressed);
    put_kv(line, &pos, "suppressed", num);
  }
  line[pos] = '\0';
  redact(line, sizeof(line));
  if (sink)
    sink(line, sink_arg);
  else
    fprintf(stderr, "%s\n", line);
}
