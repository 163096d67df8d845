/* queue/reply.h - the walks over Redis replies, as pure functions.
 *
 * A Redis reply is input like any other: a server, a proxy or another
 * program writing the same keys can answer with any shape. Every function
 * here checks the type of every element it reads and returns GQ_EIO for a
 * reply of the wrong shape, with a description of the first bad element in
 * a struct gq_reply_why, so the caller can log it with its key and retry.
 * None of them log, allocate beyond what is documented, or keep a pointer.
 *
 * The replies are struct gq_rq_reply trees (queue/rq.h), as the rq
 * callbacks see them; gq_reply_from_hiredis() builds one from a hiredis
 * redisReply (rq.c uses it for every answer; the fuzz harness feeds it the
 * output of hiredis's redisReader). Pure: no I/O, no clock. Any thread, on
 * distinct data.
 */
#ifndef GQ_QUEUE_REPLY_H
#define GQ_QUEUE_REPLY_H
#include <jansson.h>
#include <stddef.h>

#include "decide/quota.h"
#include "queue/rq.h"

struct redisReply;
struct redisReader;

/* The most elements an array reply may announce. hiredis allocates the
 * element vector when it reads the header ("*411111111"), before any
 * element arrives, and hiredis 0.14 has no limit of its own, so a broken
 * server or proxy could make the controller allocate gigabytes with a few
 * bytes (found by fuzz_redis_reply). gpuq's largest replies are a team's
 * queue (ZRANGE) and a SCAN page; 2^20 members is far above both. */
#define GQ_REPLY_MAX_ELEMENTS (1 << 20)

/* What was wrong with a malformed reply. 'at' is the index of the top-level
 * element that holds the bad element (for the ledger: 0 is the version,
 * t >= 1 the usage hash of team t - 1), or (size_t)-1 when the reply as a
 * whole has the wrong shape. 'what' is a message by git's rules
 * ("element 3 is an integer, not a string"), always NUL-terminated. */
struct gq_reply_why {
  size_t at;
  char what[160];
};

/* Returns a static name for a reply type ("string", "nil", ...; "unknown"
 * for a type queue/rq.h does not define). Never NULL. */
const char *gq_reply_type_name(int type);

/* Decodes a queue script's result: an integer (state "", value), or a
 * {state, value} pair whose state is a string or status and whose value is
 * an integer or a decimal string (a string is read as far as it is a
 * number; "" and non-numbers give 0, as the scripts' members do).
 * *state points into rep (valid as long as rep) or to a static "".
 * Returns 0; GQ_EIO for an error reply (why->what = its message) or any
 * other shape (why says which element). On error *state = "", *value = 0. */
int gq_reply_result(const struct gq_rq_reply *rep, const char **state,
                    long long *value, struct gq_reply_why *why);

/* Decodes ledger.lua's answer for n_teams teams: {version (integer),
 * hash_1, ..., hash_n}, each hash an even array of flavor (string) and
 * GPUs (a decimal string that fits a long long). On success returns 0 with
 * *ver, a new array *use of *n entries (the caller free()s it; NULL when
 * *n is 0) whose flavors point into rep (valid as long as rep). Returns
 * GQ_EIO for any other shape, with *use = NULL, *n = 0, *ver = 0 and the
 * first bad element in why (why->at: 0 = the version, t = team t - 1). */
int gq_reply_ledger(const struct gq_rq_reply *rep, size_t n_teams,
                    long long *ver, struct gq_ledger_use **use, size_t *n,
                    struct gq_reply_why *why);

/* Decodes a SCAN answer {cursor (string), {key (string), ...}}. On
 * success returns 0 with *cursor and *keys pointing into rep (valid as
 * long as rep; every element of *keys is a string without NUL bytes).
 * Returns GQ_EIO for any other shape, with *cursor = NULL, *keys = NULL. */
int gq_reply_scan(const struct gq_rq_reply *rep, const char **cursor,
                  const struct gq_rq_reply **keys, struct gq_reply_why *why);

/* Converts an HGETALL answer (as_hash = 1: an even array of field, value)
 * or a ZRANGE answer (as_hash = 0: an array of members) into a new JSON
 * object of strings or array of strings in *out (a new reference). Every
 * element must be a string, valid UTF-8, and a field must hold no NUL.
 * Returns 0, or GQ_EIO with *out = NULL and the bad element in why. */
int gq_reply_json(const struct gq_rq_reply *rep, int as_hash, json_t **out,
                  struct gq_reply_why *why);

/* Makes reader r refuse array headers above GQ_REPLY_MAX_ELEMENTS: its
 * reply-object functions are replaced by a copy whose array constructor
 * checks the count first and otherwise calls the original. A refused
 * header is a reader error (hiredis reports it as out of memory; rq then
 * drops the connection and reconnects). Idempotent; r may be NULL or have
 * no object functions (then nothing changes). Loop thread only: the
 * replacement table is one static copy shared by every reader. */
void gq_reply_reader_cap(struct redisReader *r);

/* Returns a new gq_rq_reply tree mirroring the hiredis reply x (which must
 * not be NULL). Strings are borrowed from x: the tree is valid as long as x
 * is. Only the types of queue/rq.h are mirrored; other (RESP3) types keep
 * their type number and no payload. Recursion is bounded by hiredis's
 * reader depth. Free it with gq_reply_free(). Aborts on OOM. */
struct gq_rq_reply *gq_reply_from_hiredis(const struct redisReply *x);

/* Frees a tree from gq_reply_from_hiredis(); NULL is a no-op. */
void gq_reply_free(struct gq_rq_reply *y);

#endif
