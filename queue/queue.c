/* queue/queue.c - the Redis data model and its scripts (see queue.h). */
#include "queue/queue.h"

#include "base/alloc.h"
#include "base/err.h"
#include "base/log.h"
#include "queue/reply.h"
#include "gq_scripts.h" /* generated from the .lua files in queue/scripts */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 512

static const struct gq_rq_script scripts[] = {
    {"enqueue", GQ_LUA_ENQUEUE}, {"admit", GQ_LUA_ADMIT},
    {"release", GQ_LUA_RELEASE}, {"requeue", GQ_LUA_REQUEUE},
    {"remove", GQ_LUA_REMOVE},   {"position", GQ_LUA_POSITION},
    {"rebuild", GQ_LUA_REBUILD}, {"ledger", GQ_LUA_LEDGER},
};

const struct gq_rq_script *gq_queue_scripts(size_t *n)
{
  *n = sizeof(scripts) / sizeof(scripts[0]);
  return scripts;
}

int gq_queue_member(int32_t priority, int64_t queued_ms, const char *uid,
                    char *buf, size_t len)
{
  uint32_t inv = (uint32_t)((int64_t)INT32_MAX - (int64_t)priority);
  int n;

  if (queued_ms < 0 || queued_ms >= (1LL << 52))
    return GQ_EINVAL;
  n = snprintf(buf, len, "%08x%013llx%s", inv, (unsigned long long)queued_ms,
               uid);
  return n < 0 || (size_t)n >= len ? GQ_ETOOBIG : n;
}

const char *gq_queue_member_uid(const char *member)
{
  return strlen(member) > GQ_QUEUE_MEMBER_HEX ? member + GQ_QUEUE_MEMBER_HEX
                                              : NULL;
}

void gq_queue_init(struct gq_queue *q, struct gq_rq *rq, const char *prefix)
{
  q->rq = rq;
  snprintf(q->prefix, sizeof(q->prefix), "%s", prefix ? prefix : "gpuq");
}

char *gq_queue_key(const struct gq_queue *q, const char *cohort,
                   const char *team, const char *what, const char *id,
                   char *buf, size_t len)
{
  int own = !cohort || !*cohort; /* no cohort: the team is its own tag */

  snprintf(buf, len, "%s:{%s%s}:%s%s%s", q->prefix, own ? "~" : "",
           own ? team : cohort, what, id ? ":" : "", id ? id : "");
  return buf;
}

struct call {
  const char *script; /* static: the name given to eval() */
  gq_queue_cb cb;
  void *arg;
};

/* Decodes the scripts' {state, value} (or a bare integer) replies. A
 * malformed one is logged and answered GQ_EIO (the caller retries). */
static void on_reply(struct gq_rq *r, int status,
                     const struct gq_rq_reply *rep, void *arg)
{
  struct call *c = arg;
  struct gq_lc lc = {"queue", c->script, NULL};
  struct gq_reply_why why;
  const char *state = "";
  long long value = 0;

  (void)r;
  if (status == 0 && rep->type == GQ_RQ_ERROR)
    status = GQ_EIO;
  if (status == 0 && gq_reply_result(rep, &state, &value, &why) != 0) {
    GQ_LOG(GQ_WARN, &lc, "malformed reply to script '%s': %s", c->script,
           why.what);
    status = GQ_EIO;
  }
  c->cb(status, state, value, c->arg);
  free(c);
}

static int eval(struct gq_queue *q, const char *script, int nkeys,
                const char **keys, int nargs, const char **args,
                gq_queue_cb cb, void *arg)
{
  struct call *c = gq_xcalloc(1, sizeof(*c));
  int rc;

  c->script = script;
  c->cb = cb;
  c->arg = arg;
  rc = gq_rq_eval(q->rq, script, nkeys, keys, nargs, args, on_reply, c);
  if (rc != 0)
    free(c);
  return rc;
}

int gq_queue_enqueue(struct gq_queue *q, const struct gq_qjob *j,
                     gq_queue_cb cb, void *arg)
{
  char kjob[KEY_MAX], kq[KEY_MAX], sort[GQ_QUEUE_MEMBER_HEX + 1];
  const char *keys[2] = {kjob, kq};
  const char *args[5];
  int rc = gq_queue_member(j->priority, j->queued_ms, "", sort, sizeof(sort));

  if (rc < 0)
    return rc;
  gq_queue_key(q, j->cohort, j->team, "job", j->uid, kjob, sizeof(kjob));
  gq_queue_key(q, j->cohort, j->team, "q", j->team, kq, sizeof(kq));
  args[0] = j->uid;
  args[1] = j->team;
  args[2] = j->ns ? j->ns : "";
  args[3] = j->name ? j->name : "";
  args[4] = sort;
  return eval(q, "enqueue", 2, keys, 5, args, cb, arg);
}

int gq_queue_admit(struct gq_queue *q, const struct gq_qjob *j, long attempt,
                   const char *flavor, long long gpus, long long expected_ver,
                   gq_queue_cb cb, void *arg)
{
  char k[4][KEY_MAX], id[320], member[320], ver[32], g[32];
  const char *keys[4] = {k[0], k[1], k[2], k[3]};
  const char *args[5] = {ver, member, flavor, g, j->team};
  int rc = gq_queue_member(j->priority, j->queued_ms, j->uid, member,
                           sizeof(member));

  if (rc < 0)
    return rc;
  snprintf(id, sizeof(id), "%s:%ld", j->uid, attempt);
  snprintf(ver, sizeof(ver), "%lld", expected_ver);
  snprintf(g, sizeof(g), "%lld", gpus);
  gq_queue_key(q, j->cohort, j->team, "ver", NULL, k[0], KEY_MAX);
  gq_queue_key(q, j->cohort, j->team, "q", j->team, k[1], KEY_MAX);
  gq_queue_key(q, j->cohort, j->team, "adm", id, k[2], KEY_MAX);
  gq_queue_key(q, j->cohort, j->team, "use", j->team, k[3], KEY_MAX);
  return eval(q, "admit", 4, keys, 5, args, cb, arg);
}

int gq_queue_release(struct gq_queue *q, const char *cohort, const char *team,
                     const char *uid, long attempt, gq_queue_cb cb, void *arg)
{
  char k[3][KEY_MAX], id[320];
  const char *keys[3] = {k[0], k[1], k[2]};

  snprintf(id, sizeof(id), "%s:%ld", uid, attempt);
  gq_queue_key(q, cohort, team, "ver", NULL, k[0], KEY_MAX);
  gq_queue_key(q, cohort, team, "adm", id, k[1], KEY_MAX);
  gq_queue_key(q, cohort, team, "use", team, k[2], KEY_MAX);
  return eval(q, "release", 3, keys, 0, NULL, cb, arg);
}

/* The job-and-queue scripts share their keys and their argument (the uid:
 * the member is the job hash's sort prefix followed by it). */
static int job_script(struct gq_queue *q, const char *script,
                      const char *cohort, const char *team, const char *uid,
                      gq_queue_cb cb, void *arg)
{
  char kjob[KEY_MAX], kq[KEY_MAX];
  const char *keys[2] = {kjob, kq};

  gq_queue_key(q, cohort, team, "job", uid, kjob, sizeof(kjob));
  gq_queue_key(q, cohort, team, "q", team, kq, sizeof(kq));
  return eval(q, script, 2, keys, 1, &uid, cb, arg);
}

int gq_queue_requeue(struct gq_queue *q, const char *cohort, const char *team,
                     const char *uid, gq_queue_cb cb, void *arg)
{
  return job_script(q, "requeue", cohort, team, uid, cb, arg);
}

int gq_queue_remove(struct gq_queue *q, const char *cohort, const char *team,
                    const char *uid, gq_queue_cb cb, void *arg)
{
  return job_script(q, "remove", cohort, team, uid, cb, arg);
}

int gq_queue_position(struct gq_queue *q, const char *cohort,
                      const char *team, const char *uid, gq_queue_cb cb,
                      void *arg)
{
  return job_script(q, "position", cohort, team, uid, cb, arg);
}

struct ledger_call {
  size_t n_teams;
  char (*keys)[KEY_MAX]; /* n_teams + 1: the version key, the usage keys */
  gq_queue_ledger_cb cb;
  void *arg;
};

/* A malformed ledger (an element that is not what ledger.lua returns) is
 * logged with the key it came from and answered GQ_EIO: the caller reads
 * it again later, as after any failed read. */
static void on_ledger(struct gq_rq *r, int status,
                      const struct gq_rq_reply *rep, void *arg)
{
  struct ledger_call *c = arg;
  struct gq_ledger_use *use = NULL;
  struct gq_reply_why why;
  size_t n = 0;
  long long ver = 0;

  (void)r;
  if (status == 0 && rep->type == GQ_RQ_ERROR)
    status = GQ_EIO;
  if (status == 0 &&
      gq_reply_ledger(rep, c->n_teams, &ver, &use, &n, &why) != 0) {
    struct gq_lc lc = {"queue", "ledger",
                       why.at <= c->n_teams ? c->keys[why.at] : c->keys[0]};

    GQ_LOG(GQ_WARN, &lc, "malformed ledger reply for '%s': %s", lc.key,
           why.what);
    status = GQ_EIO;
  }
  c->cb(status, ver, use, n, c->arg);
  free(use);
  free(c->keys);
  free(c);
}

int gq_queue_ledger(struct gq_queue *q, const char *cohort,
                    const char *const *teams, size_t n_teams,
                    gq_queue_ledger_cb cb, void *arg)
{
  char(*k)[KEY_MAX] = gq_xcalloc(n_teams + 1, KEY_MAX);
  const char **keys = gq_xcalloc(n_teams + 1, sizeof(*keys));
  struct ledger_call *c = gq_xcalloc(1, sizeof(*c));
  int rc;

  gq_queue_key(q, cohort, teams[0], "ver", NULL, k[0], KEY_MAX);
  keys[0] = k[0];
  for (size_t i = 0; i < n_teams; i++) {
    gq_queue_key(q, cohort, teams[i], "use", teams[i], k[i + 1], KEY_MAX);
    keys[i + 1] = k[i + 1];
  }
  c->n_teams = n_teams;
  c->keys = k; /* kept for the log line of a malformed reply */
  c->cb = cb;
  c->arg = arg;
  rc = gq_rq_eval(q->rq, "ledger", (int)n_teams + 1, keys, 0, NULL, on_ledger,
                  c);
  if (rc != 0) {
    free(c);
    free(k);
  }
  free(keys);
  return rc;
}

int gq_queue_fair_save(struct gq_queue *q, const char *cohort,
                       const char *team, double gpu_s, int64_t at_ms,
                       gq_queue_cb cb, void *arg)
{
  char key[KEY_MAX], val[64];
  const char *argv[4] = {"HSET", key, team, val};
  struct call *c;
  int rc;

  if (!(gpu_s >= 0) || at_ms < 0)
    return GQ_EINVAL;
  gq_queue_key(q, cohort, team, "fair", NULL, key, sizeof(key));
  snprintf(val, sizeof(val), "%.3f@%lld", gpu_s, (long long)at_ms);
  c = gq_xcalloc(1, sizeof(*c));
  c->script = "fair-save";
  c->cb = cb;
  c->arg = arg;
  rc = gq_rq_cmd(q->rq, on_reply, c, 4, argv, NULL);
  if (rc != 0)
    free(c);
  return rc;
}

struct fair_call {
  gq_queue_fair_cb cb;
  void *arg;
  char key[KEY_MAX];
};

static void on_fair(struct gq_rq *r, int status, const struct gq_rq_reply *rep,
                    void *arg)
{
  static const struct gq_lc lc = {"queue", "fair", NULL};
  struct fair_call *c = arg;
  struct gq_reply_why why;
  json_t *h = NULL;

  (void)r;
  if (status == 0 && rep->type == GQ_RQ_ERROR) {
    GQ_LOG(GQ_WARN, &lc, "HGETALL '%s': %.*s", c->key, (int)rep->len,
           rep->str ? rep->str : "");
    status = GQ_EIO;
  }
  if (status == 0 && gq_reply_json(rep, 1, &h, &why) != 0) {
    GQ_LOG(GQ_WARN, &lc, "malformed fair-share reply for '%s': %s", c->key,
           why.what);
    status = GQ_EIO;
  }
  c->cb(status, status == 0 ? h : NULL, c->arg);
  json_decref(h);
  free(c);
}

int gq_queue_fair_load(struct gq_queue *q, const char *cohort,
                       const char *team, gq_queue_fair_cb cb, void *arg)
{
  struct fair_call *c = gq_xcalloc(1, sizeof(*c));
  const char *argv[2] = {"HGETALL", c->key};
  int rc;

  gq_queue_key(q, cohort, team, "fair", NULL, c->key, sizeof(c->key));
  c->cb = cb;
  c->arg = arg;
  rc = gq_rq_cmd(q->rq, on_fair, c, 2, argv, NULL);
  if (rc != 0)
    free(c);
  return rc;
}

int gq_queue_fair_parse(const char *s, double *gpu_s, int64_t *at_ms)
{
  const char *at = s ? strchr(s, '@') : NULL;
  char *end;
  double g;
  long long ms;

  if (!at || at == s)
    return GQ_EINVAL;
  g = strtod(s, &end);
  if (end != at || !isfinite(g) || g < 0)
    return GQ_EINVAL;
  if (!at[1] || at[1] == '-' || at[1] == '+' || at[1] == ' ')
    return GQ_EINVAL;
  ms = strtoll(at + 1, &end, 10);
  if (*end || ms < 0)
    return GQ_EINVAL;
  *gpu_s = g;
  *at_ms = ms;
  return 0;
}
