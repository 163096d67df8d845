/* queue/queue.h - gpuq's queues and quota ledger in Redis (DESIGN §4, §6).
 *
 * Keys, all under one prefix and tagged with the cohort so that every key a
 * script touches hashes to one Redis Cluster slot ("{cohort}"; a team
 * without a cohort is its own tag "~team", which no DNS name can be):
 *   P:{C}:q:<team>        sorted set: the team's queued jobs
 *   P:{C}:job:<uid>       hash: team, ns, name, sort (the member's prefix)
 *   P:{C}:adm:<uid>:<n>   hash: an admission (flavor, gpus, team) of attempt n
 *   P:{C}:use:<team>      hash: flavor -> GPUs admitted (from admissions)
 *   P:{C}:ver             integer: the cohort ledger's version
 *   P:{C}:fair            hash: team -> "GPU_S@MS", its decayed usage
 *                         history as of MS (fair share over time, issue 21)
 * Jobs are keyed by uid: a deleted and recreated job is a different job.
 *
 * Order within a team: priority (high first), then queue time (early
 * first), then uid. All members score 0 and sort by their bytes (Redis
 * orders equal scores lexicographically), and the member spells the three
 * out in fixed-width hex, so the order is exact where double scores would
 * collide past 2^53 (STYLE pitfall 13). The member is the job hash's sort
 * field followed by the uid.
 *
 * A job's state is derived, not stored: queued while its member is in its
 * team's queue, admitted once an admission record of it exists (the admit
 * script takes it out of the queue). So an admission touches neither the
 * job hash nor anything else of the job but its queue entry: the caller
 * passes the member's parts (bench/README.md "bench/queue": 2-3 us less
 * Redis time per admission, and a job hash of 200 bytes instead of 296).
 * Keys written by an older gpuq (job hashes with member, qt, state and
 * attempt) are found and rewritten by the rebuild at start-up (rebuild.h).
 *
 * Every state change is one Lua script (the .lua files in queue/scripts, loaded at
 * connect and reloaded on NOSCRIPT by queue/rq.c). Quota arithmetic is
 * not in Lua: the controller decides in C (decide/quota.c) on its copy of
 * the ledger, and the admit script applies the decision only if the
 * cohort's version is still the one decided on.
 *
 * Loop thread only; callbacks run exactly once, never synchronously.
 */
#ifndef GQ_QUEUE_QUEUE_H
#define GQ_QUEUE_QUEUE_H
#include <stddef.h>
#include <stdint.h>

#include "decide/quota.h" /* struct gq_ledger_use */
#include "queue/rq.h"

#define GQ_QUEUE_MEMBER_HEX 21 /* 8 priority + 13 queue-time hex digits */

struct gq_queue {
  struct gq_rq *rq;  /* borrowed */
  char prefix[64];
};

/* A job to queue (strings borrowed for the call). */
struct gq_qjob {
  const char *uid, *team, *ns, *name;
  const char *cohort;  /* NULL or "": the team has none */
  int32_t priority;
  int64_t queued_ms;   /* Unix ms of its first queueing (kept on requeue) */
};

/* The scripts gq_rq_new() must preload (static array of *n). */
const struct gq_rq_script *gq_queue_scripts(size_t *n);

/* Writes the sort member of a job into buf: 8 hex digits of
 * (INT32_MAX - priority) as uint32, 13 of the queue time in ms, then the
 * uid (uid "" gives the 21-character sort prefix the job hash keeps).
 * Returns its length, or GQ_EINVAL (negative time, or over 2^52 ms),
 * GQ_ETOOBIG (buf too small). */
int gq_queue_member(int32_t priority, int64_t queued_ms, const char *uid,
                    char *buf, size_t len);

/* The uid part of a member (borrowed), or NULL if it is malformed. */
const char *gq_queue_member_uid(const char *member);

/* Sets up q on rq with a key prefix (NULL = "gpuq"). */
void gq_queue_init(struct gq_queue *q, struct gq_rq *rq, const char *prefix);

/* Outcome of a queue operation: rc 0 with the script's state word and
 * number (see each function), or a negative GQ_E* (GQ_EUNAVAIL while
 * Redis is down, GQ_ECLOSED, GQ_ETIMEDOUT, GQ_EIO for an error reply). */
typedef void (*gq_queue_cb)(int rc, const char *state, long long value,
                            void *arg);

/* Queues j if it is unknown (idempotent: a known job keeps its place and
 * state). state "queued" or "admitted" (known, and not in its queue). */
int gq_queue_enqueue(struct gq_queue *q, const struct gq_qjob *j,
                     gq_queue_cb cb, void *arg);

/* Admits attempt of the queued job j (its uid, team, cohort, and the
 * priority and first queue time it was queued with: they make its member;
 * ns and name are not used) for gpus of flavor if the cohort's ledger
 * version is still expected_ver. state "ok" (value = the new version),
 * "stale" (value = the current version: re-read and decide again), "dup"
 * (this attempt was admitted already), "missing" (that member is not in
 * the team's queue: not queued, or queued with another priority or queue
 * time; rebuild and decide again). Returns 0, or GQ_EINVAL (a queue time
 * gq_queue_member() refuses) and the errors of gq_rq_eval(). */
int gq_queue_admit(struct gq_queue *q, const struct gq_qjob *j, long attempt,
                   const char *flavor, long long gpus, long long expected_ver,
                   gq_queue_cb cb, void *arg);

/* Releases an admission, exactly once: state "released" (value = new
 * version) or "absent" (already released; nothing changed). */
int gq_queue_release(struct gq_queue *q, const char *cohort, const char *team,
                     const char *uid, long attempt, gq_queue_cb cb, void *arg);

/* Puts an admitted job back at its original place: state "queued" or
 * "missing". */
int gq_queue_requeue(struct gq_queue *q, const char *cohort, const char *team,
                     const char *uid, gq_queue_cb cb, void *arg);

/* Forgets a job: value 1 if it was known. */
int gq_queue_remove(struct gq_queue *q, const char *cohort, const char *team,
                    const char *uid, gq_queue_cb cb, void *arg);

/* A queued job's 1-based position in its team's queue (O(log n)); value
 * 0 if it is not queued. */
int gq_queue_position(struct gq_queue *q, const char *cohort,
                      const char *team, const char *uid, gq_queue_cb cb,
                      void *arg);


/* The cohort's ledger at one instant: rc, its version, and every
 * (team, flavor) usage (arrays valid during the callback). */
typedef void (*gq_queue_ledger_cb)(int rc, long long version,
                                   const struct gq_ledger_use *use, size_t n,
                                   void *arg);

/* Reads the version and the usage of n_teams teams (n_teams >= 1; all of
 * one cohort, or one team without a cohort) in one round trip. */
int gq_queue_ledger(struct gq_queue *q, const char *cohort,
                    const char *const *teams, size_t n_teams,
                    gq_queue_ledger_cb cb, void *arg);

/* Writes a key of the model into buf ("what" is "q", "use" with id =
 * team, "job" with id = uid, "ver" without id). Returns buf. */
char *gq_queue_key(const struct gq_queue *q, const char *cohort,
                   const char *team, const char *what, const char *id,
                   char *buf, size_t len);

/* Fair share over time (decide/las.h): saves team's decayed usage
 * gpu_s (GPU-seconds, >= 0) as of at_ms (Unix ms, virtual) in the cohort's
 * fair hash (HSET; cb's value is HSET's answer). Returns 0 or the errors
 * of gq_rq_cmd(). */
int gq_queue_fair_save(struct gq_queue *q, const char *cohort,
                       const char *team, double gpu_s, int64_t at_ms,
                       gq_queue_cb cb, void *arg);

/* The fair hash as read: rc, and a JSON object team -> "GPU_S@MS" string
 * (borrowed during the callback; NULL unless rc is 0). */
struct json_t;
typedef void (*gq_queue_fair_cb)(int rc, const struct json_t *hash,
                                 void *arg);

/* Reads the fair hash of a cohort (or of team, when cohort is NULL or "",
 * the team's own). A malformed reply is logged and answered GQ_EIO. */
int gq_queue_fair_load(struct gq_queue *q, const char *cohort,
                       const char *team, gq_queue_fair_cb cb, void *arg);

/* Parses a fair hash value "GPU_S@MS". Returns 0 with *gpu_s (finite,
 * >= 0) and *at_ms (>= 0), or GQ_EINVAL. */
int gq_queue_fair_parse(const char *s, double *gpu_s, int64_t *at_ms);

#endif
