/* queue/rebuild.c - rebuild and drift (see rebuild.h). */
#include "queue/rebuild.h"

#include "base/alloc.h"
#include "base/err.h"
#include "base/log.h"
#include "queue/reply.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 512

struct rb {
  struct gq_queue *q;
  char cohort[256], team0[256], pattern[600], ver[KEY_MAX];
  json_t *want;    /* key -> desired value (object = hash, array = zset) */
  json_t *have;    /* key -> value read from Redis */
  int pending, failed, repair;
  struct gq_rb_drift d;
  gq_rb_cb cb;
  void *arg;
};

static void done(struct rb *b, int rc)
{
  b->cb(rc, &b->d, b->arg);
  json_decref(b->want);
  json_decref(b->have);
  free(b);
}

/* --- what the objects say --- */

static void want_hash(struct rb *b, const char *key, json_t *fields)
{
  json_object_set_new(b->want, key, fields);
}

static char *key(struct rb *b, const char *team, const char *what,
                 const char *id, char *buf)
{
  return gq_queue_key(b->q, b->cohort, team ? team : b->team0, what, id, buf,
                      KEY_MAX);
}

/* A job's hash (team, ns, name, sort: queue.h) and, if it waits, its
 * member in its team's queue. An admitted job is known but not queued:
 * its admission record says it is admitted. */
static void want_job(struct rb *b, const struct gq_rb_job *j)
{
  char k[KEY_MAX], member[400];
  json_t *h;

  if (gq_queue_member(j->priority, j->queued_ms, j->uid, member,
                      sizeof(member)) < 0)
    return;
  h = json_pack("{s:s, s:s, s:s, s:s#}", "team", j->team, "ns",
                j->ns ? j->ns : "", "name", j->name ? j->name : "", "sort",
                member, (int)GQ_QUEUE_MEMBER_HEX);
  if (!j->admitted) {
    json_t *z = json_object_get(b->want, key(b, j->team, "q", j->team, k));

    if (!z) {
      z = json_array();
      json_object_set_new(b->want, k, z);
    }
    json_array_append_new(z, json_string(member));
  }
  want_hash(b, key(b, j->team, "job", j->uid, k), h);
}

static void want_adm(struct rb *b, const struct gq_rb_adm *a)
{
  char k[KEY_MAX], id[400], g[32];
  json_t *use;
  long long sum;

  snprintf(id, sizeof(id), "%s:%ld", a->uid, a->attempt);
  snprintf(g, sizeof(g), "%lld", (long long)a->gpus);
  want_hash(b, key(b, a->team, "adm", id, k),
            json_pack("{s:s, s:s, s:s}", "flavor", a->flavor, "gpus", g,
                      "team", a->team));
  key(b, a->team, "use", a->team, k);
  use = json_object_get(b->want, k);
  if (!use) {
    use = json_object();
    json_object_set_new(b->want, k, use);
  }
  sum = strtoll(json_string_value(json_object_get(use, a->flavor))
                    ? json_string_value(json_object_get(use, a->flavor))
                    : "0",
                NULL, 10) +
        a->gpus;
  snprintf(g, sizeof(g), "%lld", sum);
  json_object_set_new(use, a->flavor, json_string(g));
}

/* --- reading Redis --- */

static void compare_and_repair(struct rb *b);

struct read_ctx {
  struct rb *b;
  char key[KEY_MAX];
  int zset;
};

/* A malformed value (an element that is not a string) is logged with its
 * key and fails the pass (GQ_EIO): nothing is repaired from it. */
static void on_value(struct gq_rq *r, int status,
                     const struct gq_rq_reply *rep, void *arg)
{
  struct read_ctx *c = arg;
  struct rb *b = c->b;
  struct gq_lc lc = {"queue", "rebuild", c->key};
  struct gq_reply_why why;
  json_t *v;

  (void)r;
  if (status != 0 || rep->type == GQ_RQ_ERROR) {
    b->failed = status ? status : GQ_EIO;
  } else if (gq_reply_json(rep, !c->zset, &v, &why) != 0) {
    GQ_LOG(GQ_WARN, &lc, "malformed reply for '%s': %s", c->key, why.what);
    b->failed = GQ_EIO;
  } else {
    json_object_set_new(b->have, c->key, v);
  }
  free(c);
  if (--b->pending == 0)
    compare_and_repair(b);
}

/* Reads one key of the cohort: a queue (ZRANGE) or a hash (HGETALL). The
 * version key and the fair-share history (P:{C}:fair, which no object
 * holds) are not part of the state: the rebuild leaves them. */
static void read_key(struct rb *b, const char *k)
{
  struct read_ctx *c;
  const char *argv[4];
  int zset = strstr(k, "}:q:") != NULL, rc;
  size_t n = strlen(k);

  if (!strcmp(k, b->ver) || (n >= 6 && !strcmp(k + n - 6, "}:fair")))
    return;
  c = gq_xcalloc(1, sizeof(*c));
  c->b = b;
  c->zset = zset;
  snprintf(c->key, sizeof(c->key), "%s", k);
  argv[0] = zset ? "ZRANGE" : "HGETALL";
  argv[1] = k;
  argv[2] = "0";
  argv[3] = "-1";
  b->pending++;
  b->d.keys_read++;
  rc = gq_rq_cmd(b->q->rq, on_value, c, zset ? 4 : 2, argv, NULL);
  if (rc != 0) {
    b->failed = rc;
    b->pending--;
    free(c);
  }
}

static void scan_from(struct rb *b, const char *cursor);

static void on_scan(struct gq_rq *r, int status,
                    const struct gq_rq_reply *rep, void *arg)
{
  struct rb *b = arg;
  struct gq_lc lc = {"queue", "rebuild", b->pattern};
  struct gq_reply_why why;
  const struct gq_rq_reply *keys;
  const char *cur;
  char cursor[64];

  (void)r;
  if (status == 0 && rep->type != GQ_RQ_ERROR &&
      gq_reply_scan(rep, &cur, &keys, &why) != 0) {
    GQ_LOG(GQ_WARN, &lc, "malformed SCAN reply for '%s': %s", b->pattern,
           why.what);
    status = GQ_EIO;
  }
  if (status != 0 || rep->type == GQ_RQ_ERROR) {
    b->failed = status ? status : GQ_EIO;
    if (--b->pending == 0)
      compare_and_repair(b);
    return;
  }
  snprintf(cursor, sizeof(cursor), "%s", cur);
  for (size_t i = 0; i < keys->n; i++)
    read_key(b, keys->elem[i]->str);
  if (strcmp(cursor, "0"))
    scan_from(b, cursor);
  if (--b->pending == 0)
    compare_and_repair(b);
}

static void scan_from(struct rb *b, const char *cursor)
{
  const char *argv[6] = {"SCAN", cursor, "MATCH", b->pattern, "COUNT", "1000"};
  int rc;

  b->pending++;
  rc = gq_rq_cmd(b->q->rq, on_scan, b, 6, argv, NULL);
  if (rc != 0) {
    b->failed = rc;
    b->pending--;
  }
}

/* --- comparing and repairing --- */

static int is(const char *k, const char *what)
{
  char pat[16];

  snprintf(pat, sizeof(pat), "}:%s:", what);
  return strstr(k, pat) != NULL;
}

static long long num(const json_t *h, const char *f)
{
  const char *v = json_string_value(json_object_get(h, f));

  return v ? strtoll(v, NULL, 10) : 0;
}

/* Adds the differences of one key to the drift; returns 1 if it differs. */
static int diff_key(struct rb *b, const char *k, const json_t *want,
                    const json_t *have)
{
  const char *f;
  json_t *v;
  long long d;

  if (want && have && json_equal((json_t *)want, (json_t *)have))
    return 0;
  if (is(k, "job")) {
    if (!have)
      b->d.jobs_missing++;
    else if (!want)
      b->d.jobs_extra++;
    else if (json_object_get(have, "state"))
      b->d.jobs_old_layout++; /* an older gpuq's hash: not drift */
    else
      b->d.jobs_changed++;
  } else if (is(k, "adm")) {
    if (want)
      b->d.adms_missing++;
    if (have)
      b->d.adms_extra++;
  } else if (is(k, "use")) {
    json_object_foreach((json_t *)want, f, v) {
      d = num(want, f) - num(have, f);
      b->d.gpus_diff += d < 0 ? -d : d;
    }
    json_object_foreach((json_t *)have, f, v) {
      if (!json_object_get(want, f))
        b->d.gpus_diff += num(have, f) < 0 ? -num(have, f) : num(have, f);
    }
  }
  return 1;
}

static void on_rebuilt(struct gq_rq *r, int status,
                       const struct gq_rq_reply *rep, void *arg)
{
  struct rb *b = arg;

  (void)r;
  done(b, status ? status : rep->type == GQ_RQ_ERROR ? GQ_EIO : 0);
}

/* Writes the desired state in one script: every key named in KEYS. */
static void repair(struct rb *b)
{
  json_t *spec = json_pack("{s:[], s:[], s:[]}", "del", "hash", "zset");
  size_t n = json_object_size(b->have) + json_object_size(b->want) + 1, i = 0;
  const char **keys = gq_xcalloc(n, sizeof(*keys));
  const char *k;
  json_t *v;
  char *arg;
  int rc;

  json_object_foreach(b->have, k, v) {
    keys[i++] = k;
    if (!json_object_get(b->want, k))
      json_array_append_new(json_object_get(spec, "del"), json_integer(i));
  }
  json_object_foreach(b->want, k, v) {
    json_t *entry;
    const char *f;
    json_t *fv;

    keys[i++] = k;
    entry = json_pack("[I]", (json_int_t)i);
    if (json_is_array(v)) {
      json_array_extend(entry, v);
      json_array_append_new(json_object_get(spec, "zset"), entry);
      continue;
    }
    json_object_foreach(v, f, fv) {
      json_array_append_new(entry, json_string(f));
      json_array_append(entry, fv);
    }
    json_array_append_new(json_object_get(spec, "hash"), entry);
  }
  keys[i++] = b->ver;
  json_object_set_new(spec, "ver", json_integer((json_int_t)i));
  arg = json_dumps(spec, JSON_COMPACT);
  rc = gq_rq_eval(b->q->rq, "rebuild", (int)i, keys, 1, (const char **)&arg,
                  on_rebuilt, b);
  free(arg);
  free(keys);
  json_decref(spec);
  if (rc != 0)
    done(b, rc);
}

static void compare_and_repair(struct rb *b)
{
  const char *k;
  json_t *v;
  int differs = 0;

  if (b->failed) {
    done(b, b->failed);
    return;
  }
  json_object_foreach(b->want, k, v)
    differs |= diff_key(b, k, v, json_object_get(b->have, k));
  json_object_foreach(b->have, k, v)
    if (!json_object_get(b->want, k))
      differs |= diff_key(b, k, NULL, v);
  if (b->repair && differs)
    repair(b);
  else
    done(b, 0);
}

int gq_queue_rebuild(struct gq_queue *q, const char *cohort,
                     const char *const *teams, size_t n_teams,
                     const struct gq_rb_job *jobs, size_t n_jobs,
                     const struct gq_rb_adm *adms, size_t n_adms, int repair,
                     gq_rb_cb cb, void *arg)
{
  struct rb *b;
  char tmp[KEY_MAX];

  if (!gq_rq_ready(q->rq))
    return GQ_EUNAVAIL;
  if (n_teams == 0 || !cb)
    return GQ_EINVAL;
  b = gq_xcalloc(1, sizeof(*b));
  b->q = q;
  snprintf(b->cohort, sizeof(b->cohort), "%s", cohort ? cohort : "");
  snprintf(b->team0, sizeof(b->team0), "%s", teams[0]);
  b->want = json_object();
  b->have = json_object();
  b->repair = repair;
  b->cb = cb;
  b->arg = arg;
  for (size_t i = 0; i < n_jobs; i++)
    want_job(b, &jobs[i]);
  for (size_t i = 0; i < n_adms; i++)
    want_adm(b, &adms[i]);
  key(b, NULL, "ver", NULL, b->ver);
  /* Every key of the cohort: "<prefix>:{<tag>}:*" (the tag has no glob
   * characters: DNS labels, or "~" and one). */
  key(b, NULL, "", NULL, tmp);
  snprintf(b->pattern, sizeof(b->pattern), "%s*", tmp);
  scan_from(b, "0");
  if (b->pending == 0) {
    int rc = b->failed ? b->failed : GQ_EUNAVAIL;

    json_decref(b->want);
    json_decref(b->have);
    free(b);
    return rc;
  }
  return 0;
}
