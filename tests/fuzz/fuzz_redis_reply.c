/* The Redis reply walks (queue/reply.h): the bytes are RESP, read by
 * hiredis's redisReader (what the client reads off the socket) into
 * replies; each is mirrored as rq.c does and walked by every function, as
 * the ledger of 1 to 3 teams too. Issue 23's seed is a ledger whose GPUs
 * element is an integer; oom-array-header is the 60-second run's finding
 * (a 411-million-element array header; see GQ_REPLY_MAX_ELEMENTS). */
#include "fuzz.h"

#include "queue/reply.h"

#include <hiredis/hiredis.h>

static void walk(const struct gq_rq_reply *y)
{
  struct gq_reply_why why;
  struct gq_ledger_use *use;
  const struct gq_rq_reply *keys;
  const char *s;
  long long v;
  size_t n;
  json_t *j;

  gq_reply_result(y, &s, &v, &why);
  for (size_t t = 1; t <= 3; t++) {
    if (gq_reply_ledger(y, t, &v, &use, &n, &why) == 0)
      free(use);
  }
  if (gq_reply_scan(y, &s, &keys, &why) == 0) {
    for (size_t i = 0; i < keys->n; i++)
      if (strlen(keys->elem[i]->str) != keys->elem[i]->len)
        abort();
  }
  if (gq_reply_json(y, 1, &j, &why) == 0)
    json_decref(j);
  if (gq_reply_json(y, 0, &j, &why) == 0)
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  redisReader *rd = redisReaderCreate();
  void *x;

  if (!rd)
    abort();
  gq_reply_reader_cap(rd); /* as rq.c does for every connection */
  if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK) {
    for (int i = 0; i < 64; i++) {
      struct gq_rq_reply *y;

      x = NULL;
      if (redisReaderGetReply(rd, &x) != REDIS_OK || !x)
        break;
      y = gq_reply_from_hiredis(x);
      walk(y);
      gq_reply_free(y);
      freeReplyObject(x);
    }
  }
  redisReaderFree(rd);
  return 0;
}
