/* queue/reply.c - the walks over Redis replies (see reply.h). */
#include "queue/reply.h"

#include "base/alloc.h"
#include "base/err.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOWHERE ((size_t)-1)

const char *gq_reply_type_name(int type)
{
  switch (type) {
  case GQ_RQ_STRING:
    return "string";
  case GQ_RQ_ARRAY:
    return "array";
  case GQ_RQ_INTEGER:
    return "integer";
  case GQ_RQ_NIL:
    return "nil";
  case GQ_RQ_STATUS:
    return "status";
  case GQ_RQ_ERROR:
    return "error";
  default:
    return "unknown";
  }
}

/* Fills why and returns GQ_EIO, so a check reads "return bad(...)". */
static int bad(struct gq_reply_why *why, size_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(struct gq_reply_why *why, size_t at, const char *fmt, ...)
{
  va_list ap;

  why->at = at;
  va_start(ap, fmt);
  vsnprintf(why->what, sizeof(why->what), fmt, ap);
  va_end(ap);
  return GQ_EIO;
}

/* A string element: STRING (or STATUS when status_ok) with its bytes. A
 * NULL element (never produced by rq.c, possible in a hand-built tree) is
 * malformed too. */
static int is_str(const struct gq_rq_reply *e, int status_ok)
{
  return e && e->str &&
         (e->type == GQ_RQ_STRING || (status_ok && e->type == GQ_RQ_STATUS));
}

static const char *name_of(const struct gq_rq_reply *e)
{
  return e ? gq_reply_type_name(e->type) : "missing";
}

/* Parses a whole decimal long long; returns 0 or -1. */
static int parse_ll(const char *s, long long *out)
{
  char *end;

  if (!*s)
    return -1;
  errno = 0;
  *out = strtoll(s, &end, 10);
  return errno || *end ? -1 : 0;
}

int gq_reply_result(const struct gq_rq_reply *rep, const char **state,
                    long long *value, struct gq_reply_why *why)
{
  const struct gq_rq_reply *s, *v;

  *state = "";
  *value = 0;
  if (!rep)
    return bad(why, NOWHERE, "no reply");
  if (rep->type == GQ_RQ_ERROR)
    return bad(why, NOWHERE, "error reply: %s", rep->str ? rep->str : "");
  if (rep->type == GQ_RQ_INTEGER) {
    *value = rep->integer;
    return 0;
  }
  if (rep->type != GQ_RQ_ARRAY || rep->n != 2 || !rep->elem)
    return bad(why, NOWHERE, "reply is a %s of %zu elements, not a pair",
               gq_reply_type_name(rep->type), rep->n);
  s = rep->elem[0];
  v = rep->elem[1];
  if (!is_str(s, 1))
    return bad(why, 0, "state is a %s, not a string", name_of(s));
  if (v && v->type == GQ_RQ_INTEGER)
    *value = v->integer;
  else if (is_str(v, 0))
    *value = strtoll(v->str, NULL, 10); /* a member: its leading digits */
  else
    return bad(why, 1, "value is a %s, not an integer or string",
               name_of(v));
  *state = s->str;
  return 0;
}

/* Appends one team's usage hash h to *use; returns 0 or GQ_EIO. */
static int ledger_team(const struct gq_rq_reply *h, size_t t,
                       struct gq_ledger_use **use, size_t *n, size_t *cap,
                       struct gq_reply_why *why)
{
  long long gpus;

  if (!h || h->type != GQ_RQ_ARRAY || (h->n && !h->elem))
    return bad(why, t, "usage is a %s, not an array", name_of(h));
  if (h->n % 2)
    return bad(why, t, "usage has %zu elements, not field-value pairs",
               h->n);
  for (size_t i = 0; i < h->n; i += 2) {
    if (!is_str(h->elem[i], 0))
      return bad(why, t, "element %zu (flavor) is a %s, not a string", i,
                 name_of(h->elem[i]));
    if (!is_str(h->elem[i + 1], 0))
      return bad(why, t, "element %zu (gpus) is a %s, not a string", i + 1,
                 name_of(h->elem[i + 1]));
    if (parse_ll(h->elem[i + 1]->str, &gpus) != 0)
      return bad(why, t, "element %zu (gpus) '%.32s' is not a number",
                 i + 1, h->elem[i + 1]->str);
    if (*n == *cap) {
      *cap = *cap ? 2 * *cap : 16;
      *use = gq_xrealloc(*use, *cap * sizeof(**use));
    }
    (*use)[*n].team = t - 1;
    (*use)[*n].flavor = h->elem[i]->str;
    (*use)[(*n)++].gpus = gpus;
  }
  return 0;
}

int gq_reply_ledger(const struct gq_rq_reply *rep, size_t n_teams,
                    long long *ver, struct gq_ledger_use **use, size_t *n,
                    struct gq_reply_why *why)
{
  size_t cap = 0;
  int rc = 0;

  *ver = 0;
  *use = NULL;
  *n = 0;
  if (!rep || rep->type != GQ_RQ_ARRAY || rep->n != n_teams + 1 ||
      !rep->elem)
    return bad(why, NOWHERE, "reply is a %s of %zu elements, not %zu",
               rep ? gq_reply_type_name(rep->type) : "missing reply",
               rep ? rep->n : 0, n_teams + 1);
  if (!rep->elem[0] || rep->elem[0]->type != GQ_RQ_INTEGER)
    return bad(why, 0, "version is a %s, not an integer",
               name_of(rep->elem[0]));
  for (size_t t = 1; t < rep->n && rc == 0; t++)
    rc = ledger_team(rep->elem[t], t, use, n, &cap, why);
  if (rc != 0) {
    free(*use);
    *use = NULL;
    *n = 0;
    return rc;
  }
  *ver = rep->elem[0]->integer;
  return 0;
}

int gq_reply_scan(const struct gq_rq_reply *rep, const char **cursor,
                  const struct gq_rq_reply **keys, struct gq_reply_why *why)
{
  const struct gq_rq_reply *k;

  *cursor = NULL;
  *keys = NULL;
  if (!rep || rep->type != GQ_RQ_ARRAY || rep->n != 2 || !rep->elem)
    return bad(why, NOWHERE, "reply is a %s of %zu elements, not a pair",
               rep ? gq_reply_type_name(rep->type) : "missing reply",
               rep ? rep->n : 0);
  if (!is_str(rep->elem[0], 0))
    return bad(why, 0, "cursor is a %s, not a string", name_of(rep->elem[0]));
  k = rep->elem[1];
  if (!k || k->type != GQ_RQ_ARRAY || (k->n && !k->elem))
    return bad(why, 1, "keys are a %s, not an array", name_of(k));
  for (size_t i = 0; i < k->n; i++) {
    if (!is_str(k->elem[i], 0))
      return bad(why, 1, "key %zu is a %s, not a string", i,
                 name_of(k->elem[i]));
    if (strlen(k->elem[i]->str) != k->elem[i]->len)
      return bad(why, 1, "key %zu holds a NUL byte", i);
  }
  *cursor = rep->elem[0]->str;
  *keys = k;
  return 0;
}

int gq_reply_json(const struct gq_rq_reply *rep, int as_hash, json_t **out,
                  struct gq_reply_why *why)
{
  json_t *v;
  int rc = 0;

  *out = NULL;
  if (!rep || rep->type != GQ_RQ_ARRAY || (rep->n && !rep->elem))
    return bad(why, NOWHERE, "reply is a %s, not an array", name_of(rep));
  if (as_hash && rep->n % 2)
    return bad(why, NOWHERE, "hash has %zu elements, not field-value pairs",
               rep->n);
  v = as_hash ? json_object() : json_array();
  for (size_t i = 0; i < rep->n && rc == 0; i++) {
    const struct gq_rq_reply *e = rep->elem[i];
    json_t *s;

    if (!is_str(e, 0)) {
      rc = bad(why, i, "element %zu is a %s, not a string", i, name_of(e));
      break;
    }
    if (as_hash && i % 2 == 0 && strlen(e->str) != e->len) {
      rc = bad(why, i, "field %zu holds a NUL byte", i);
      break;
    }
    if (as_hash && i % 2 == 0)
      continue; /* the field: set with its value, next */
    s = json_stringn(e->str, e->len);
    if (!s)
      rc = bad(why, i, "element %zu is not UTF-8", i);
    else if (as_hash && json_object_set_new(v, rep->elem[i - 1]->str, s))
      rc = bad(why, i - 1, "field %zu is not UTF-8", i - 1);
    else if (!as_hash && json_array_append_new(v, s))
      rc = bad(why, i, "cannot append element %zu", i);
  }
  if (rc != 0) {
    json_decref(v);
    return rc;
  }
  *out = v;
  return 0;
}

/* The default object functions of the first reader capped, and the copy
 * with the checking array constructor (see gq_reply_reader_cap()). */
static redisReplyObjectFunctions capped_fn;
static void *(*orig_create_array)(const redisReadTask *, int);

static void *capped_create_array(const redisReadTask *task, int elements)
{
  if (elements > GQ_REPLY_MAX_ELEMENTS)
    return NULL; /* the reader fails: nothing is allocated */
  return orig_create_array(task, elements);
}

void gq_reply_reader_cap(struct redisReader *r)
{
  if (!r || !r->fn || r->fn == &capped_fn || !r->fn->createArray)
    return;
  if (!orig_create_array) {
    capped_fn = *r->fn;
    orig_create_array = r->fn->createArray;
    capped_fn.createArray = capped_create_array;
  }
  if (r->fn->createArray != orig_create_array)
    return; /* someone else's functions: leave them */
  r->fn = &capped_fn;
}

struct gq_rq_reply *gq_reply_from_hiredis(const struct redisReply *x)
{
  struct gq_rq_reply *y = gq_xcalloc(1, sizeof(*y));

  y->type = x->type;
  y->integer = x->integer;
  if ((x->type == REDIS_REPLY_STRING || x->type == REDIS_REPLY_STATUS ||
       x->type == REDIS_REPLY_ERROR) &&
      x->str) {
    y->str = x->str;
    y->len = x->len;
  }
  if (x->type == REDIS_REPLY_ARRAY && x->elements > 0) {
    y->elem = gq_xcalloc(x->elements, sizeof(*y->elem));
    y->n = x->elements;
    for (size_t i = 0; i < x->elements; i++)
      y->elem[i] = gq_reply_from_hiredis(x->element[i]);
  }
  return y;
}

void gq_reply_free(struct gq_rq_reply *y)
{
  if (!y)
    return;
  for (size_t i = 0; i < y->n; i++)
    gq_reply_free(y->elem[i]);
  free(y->elem);
  free(y);
}
