/* sim/dump.c - compact JSON text without jansson's loop check (dump.h). */
#include "sim/dump.h"

#include "base/alloc.h"
#include "sim/fields.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static void reserve(struct gq_sim_text *o, size_t n)
{
  size_t want = o->len + n + 1;

  if (want <= o->cap)
    return;
  o->cap = o->cap * 2 > want ? o->cap * 2 : want + 256;
  o->p = gq_xrealloc(o->p, o->cap);
}

/* After put and put_c, o->p is NUL-terminated: reserve() keeps a byte. */

static void put(struct gq_sim_text *o, const char *s, size_t n)
{
  reserve(o, n);
  memcpy(o->p + o->len, s, n);
  o->len += n;
  o->p[o->len] = '\0';
}

static void put_c(struct gq_sim_text *o, char c)
{
  reserve(o, 1);
  o->p[o->len++] = c;
  o->p[o->len] = '\0';
}

/* The n bytes of s (valid UTF-8, as every jansson string is), escaped. */
static void put_escaped(struct gq_sim_text *o, const char *s, size_t n)
{
  size_t run = 0;

  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    const char *esc;
    char seq[8];

    if (c >= 0x20 && c != '"' && c != '\\')
      continue;
    put(o, s + run, i - run);
    run = i + 1;
    switch (c) {
    case '"': esc = "\\\""; break;
    case '\\': esc = "\\\\"; break;
    case '\b': esc = "\\b"; break;
    case '\f': esc = "\\f"; break;
    case '\n': esc = "\\n"; break;
    case '\r': esc = "\\r"; break;
    case '\t': esc = "\\t"; break;
    default:
      snprintf(seq, sizeof(seq), "\\u%04X", (unsigned)c);
      esc = seq;
    }
    put(o, esc, strlen(esc));
  }
  put(o, s + run, n - run);
}

/* A JSON string of n bytes. */
static void put_str(struct gq_sim_text *o, const char *s, size_t n)
{
  put_c(o, '"');
  put_escaped(o, s, n);
  put_c(o, '"');
}

void gq_sim_text_put(struct gq_sim_text *t, const char *s, size_t n)
{
  put(t, s, n);
}

void gq_sim_text_escaped(struct gq_sim_text *t, const char *s, size_t n)
{
  put_escaped(t, s, n);
}

static void put_int(struct gq_sim_text *o, json_int_t v)
{
  char buf[24], *e = buf + sizeof(buf), *p = e;
  unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v
                               : (unsigned long long)v;

  do
    *--p = (char)('0' + u % 10);
  while ((u /= 10));
  if (v < 0)
    *--p = '-';
  put(o, p, (size_t)(e - p));
}

static int dump(struct gq_sim_text *o, const json_t *v, int depth)
{
  const char *k;
  json_t *c;
  size_t i, kl, n;
  const char *text;
  char *s;

  if (depth > GQ_SIM_DUMP_MAX_DEPTH)
    return -1;
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    put_c(o, '{');
    i = 0;
    json_object_keylen_foreach((json_t *)v, k, kl, c) {
      if (i++)
        put_c(o, ',');
      put_str(o, k, kl);
      put_c(o, ':');
      if (((kl == 8 && !memcmp(k, "fieldsV1", 8)) ||
           (kl > 2 && k[0] == 'f' && k[1] == ':')) &&
          (text = gq_fields_v1_text(c, &n))) { /* a shared (part of a) set */
        put(o, text, n);
        continue;
      }
      if (dump(o, c, depth + 1) != 0)
        return -1;
    }
    put_c(o, '}');
    return 0;
  case JSON_ARRAY:
    put_c(o, '[');
    json_array_foreach(v, i, c) {
      if (i)
        put_c(o, ',');
      if (dump(o, c, depth + 1) != 0)
        return -1;
    }
    put_c(o, ']');
    return 0;
  case JSON_STRING:
    put_str(o, json_string_value(v), json_string_length(v));
    return 0;
  case JSON_INTEGER:
    put_int(o, json_integer_value(v));
    return 0;
  case JSON_REAL: /* rare; jansson's own formatting (precision, ".0") */
    if (!(s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)))
      return -1;
    put(o, s, strlen(s));
    free(s);
    return 0;
  case JSON_TRUE:
    put(o, "true", 4);
    return 0;
  case JSON_FALSE:
    put(o, "false", 5);
    return 0;
  default:
    put(o, "null", 4);
    return 0;
  }
}

char *gq_sim_dumps_framed(const char *prefix, const json_t *v,
                          const char *suffix, size_t *len)
{
  struct gq_sim_text o = {0};

  if (!v)
    return NULL;
  reserve(&o, 1024);
  put(&o, prefix, strlen(prefix));
  if (dump(&o, v, 0) != 0) {
    free(o.p);
    return NULL;
  }
  put(&o, suffix, strlen(suffix));
  if (len)
    *len = o.len;
  return o.p;
}

char *gq_sim_dumps(const json_t *v, size_t *len)
{
  return gq_sim_dumps_framed("", v, "", len);
}
