/* The Redis queue and ledger scripts against a real redis-server: order
 * and ties, idempotent enqueue, admission with the ledger version (two
 * clients racing for the last GPUs never both succeed), release exactly
 * once (a double release leaves usage unchanged), requeue at the original
 * place, positions, survival of SCRIPT FLUSH, an admission that leaves the
 * job hash alone, and the conversion of an older gpuq's keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <uv.h>

#include "base/clock.h"
#include "base/err.h"
#include "decide/quota.h"
#include "queue/queue.h"
#include "queue/rebuild.h"
#include "tests/support/redis.h"

static struct gq_test_redis redis;
static uv_loop_t loop;
static struct gq_rq *rq;
static struct gq_queue q;

static int ready_flag;

static void on_state(struct gq_rq *r, int ready, const char *why, void *arg)
{
  (void)r;
  (void)why;
  (void)arg;
  ready_flag = ready;
}

static void run_until(const int *flag)
{
  int64_t end = gq_clock_mono_ms() + 20000;

  while (!*flag && gq_clock_mono_ms() < end)
    uv_run(&loop, UV_RUN_ONCE);
  assert_true(*flag);
}

static int setup(void **state)
{
  struct gq_rq_opts o = {0};

  (void)state;
  o.backoff_max_ms = 2000; /* reconnect promptly after the outage test */
  if (gq_test_redis_start(&redis, NULL) != 0)
    return -1;
  uv_loop_init(&loop);
  o.url = redis.url;
  o.scripts = gq_queue_scripts(&o.nscripts);
  o.on_state = on_state;
  rq = gq_rq_new(&loop, &o);
  gq_queue_init(&q, rq, "t");
  run_until(&ready_flag);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  gq_rq_close(rq);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  gq_test_redis_stop(&redis);
  return 0;
}

struct out {
  int done, rc;
  char state[32];
  long long value;
};

static void on_done(int rc, const char *state, long long value, void *arg)
{
  struct out *o = arg;

  o->done = 1;
  o->rc = rc;
  snprintf(o->state, sizeof(o->state), "%s", state);
  o->value = value;
}

#define WAIT(call, o)                                                        \
  do {                                                                       \
    memset(&(o), 0, sizeof(o));                                              \
    assert_int_equal((call), 0);                                             \
    run_until(&(o).done);                                                    \
    assert_int_equal((o).rc, 0);                                             \
  } while (0)

/* The jobs of team-a in cohort ml, as test_order_and_ties queues them
 * (an admission names a job by these: its member). */
static const struct gq_qjob ml_jobs[] = {
    {"j-late-low", "team-a", "ns", "j-late-low", "ml", 0, 3000},
    {"j-early-low", "team-a", "ns", "j-early-low", "ml", 0, 1000},
    {"j-high", "team-a", "ns", "j-high", "ml", 100, 9000},
    {"j-tie-b", "team-a", "ns", "j-tie-b", "ml", 0, 2000},
    {"j-tie-a", "team-a", "ns", "j-tie-a", "ml", 0, 2000},
    {"j-neg", "team-a", "ns", "j-neg", "ml", -5, 0},
};

static const struct gq_qjob *ml(const char *uid)
{
  for (size_t i = 0; i < sizeof(ml_jobs) / sizeof(ml_jobs[0]); i++)
    if (!strcmp(ml_jobs[i].uid, uid))
      return &ml_jobs[i];
  fail_msg("no test job '%s'", uid);
  return NULL;
}

static void enqueue(const struct gq_qjob *j)
{
  struct out o;

  WAIT(gq_queue_enqueue(&q, j, on_done, &o), o);
  assert_string_equal(o.state, "queued");
}

static long long position(const char *uid)
{
  struct out o;

  WAIT(gq_queue_position(&q, "ml", "team-a", uid, on_done, &o), o);
  return o.value;
}

static void test_member_encoding(void **state)
{
  char a[128], b[128];

  (void)state;
  /* Higher priority sorts first; then earlier queue time; then uid. */
  gq_queue_member(10, 5000, "u", a, sizeof(a));
  gq_queue_member(9, 1000, "u", b, sizeof(b));
  assert_true(strcmp(a, b) < 0);
  gq_queue_member(INT32_MIN, 0, "u", a, sizeof(a));
  gq_queue_member(INT32_MAX, (1LL << 52) - 1, "u", b, sizeof(b));
  assert_true(strcmp(b, a) < 0);
  assert_string_equal(a, "ffffffff0000000000000u");
  assert_string_equal(gq_queue_member_uid(a), "u");
  /* Times that collide as doubles (beyond 2^53 us) stay distinct here. */
  gq_queue_member(0, 4503599627370494LL, "x", a, sizeof(a));
  gq_queue_member(0, 4503599627370495LL, "x", b, sizeof(b));
  assert_true(strcmp(a, b) < 0);
  assert_int_equal(gq_queue_member(0, -1, "x", a, sizeof(a)), GQ_EINVAL);
  assert_int_equal(gq_queue_member(0, 1, "x", a, 10), GQ_ETOOBIG);
}

static void test_order_and_ties(void **state)
{
  struct gq_qjob j;

  (void)state;
  for (size_t i = 0; i < sizeof(ml_jobs) / sizeof(ml_jobs[0]); i++)
    enqueue(&ml_jobs[i]);
  assert_int_equal(position("j-high"), 1);
  assert_int_equal(position("j-early-low"), 2);
  assert_int_equal(position("j-tie-a"), 3); /* equal: by uid */
  assert_int_equal(position("j-tie-b"), 4);
  assert_int_equal(position("j-late-low"), 5);
  assert_int_equal(position("j-neg"), 6);
  /* Enqueue again (a restart, a repeated event): nothing moves. */
  j = *ml("j-neg");
  j.priority = 1000;
  j.queued_ms = 1;
  enqueue(&j);
  assert_int_equal(position("j-neg"), 6);
  assert_int_equal(position("nobody"), 0);
}

static long long usage(void)
{
  char key[256], *v;
  long long n;

  gq_queue_key(&q, "ml", "team-a", "use", "team-a", key, sizeof(key));
  v = gq_test_redis_cmd(&redis, "HGET %s %s", key, "A100");
  n = strcmp(v, "(nil)") ? atoll(v) : 0;
  free(v);
  return n;
}

static void test_admit_release_exactly_once(void **state)
{
  struct out o, p;
  long long ver;

  (void)state;
  WAIT(gq_queue_admit(&q, ml("j-high"), 1, "A100", 8, 0, on_done,
                      &o),
       o);
  assert_string_equal(o.state, "ok");
  ver = o.value;
  assert_int_equal(usage(), 8);
  assert_int_equal(position("j-high"), 0);   /* left the queue */
  assert_int_equal(position("j-early-low"), 1);
  WAIT(gq_queue_admit(&q, ml("j-high"), 1, "A100", 8, ver,
                      on_done, &o),
       o);
  assert_string_equal(o.state, "dup");      /* same attempt: once */
  WAIT(gq_queue_release(&q, "ml", "team-a", "j-high", 1, on_done, &o), o);
  assert_string_equal(o.state, "released");
  assert_int_equal(usage(), 0);
  WAIT(gq_queue_release(&q, "ml", "team-a", "j-high", 1, on_done, &p), p);
  assert_string_equal(p.state, "absent");   /* double release: no change */
  assert_int_equal(usage(), 0);
  /* A decision on an old ledger is refused. */
  WAIT(gq_queue_admit(&q, ml("j-early-low"), 1, "A100", 1, ver,
                      on_done, &o),
       o);
  assert_string_equal(o.state, "stale");
  assert_int_equal(o.value, p.value); /* the current version, to re-read */
}

static void test_racing_admissions(void **state)
{
  struct out a, b, v;
  long long ver;

  (void)state;
  /* Learn the current version with a refused admission. */
  WAIT(gq_queue_admit(&q, ml("j-tie-a"), 1, "A100", 8, -1,
                      on_done, &v),
       v);
  ver = v.value;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  /* Two deciders saw the same ledger and both want the last 8 GPUs. */
  assert_int_equal(gq_queue_admit(&q, ml("j-tie-a"), 1, "A100", 8,
                                  ver, on_done, &a),
                   0);
  assert_int_equal(gq_queue_admit(&q, ml("j-tie-b"), 1, "A100", 8,
                                  ver, on_done, &b),
                   0);
  run_until(&a.done);
  run_until(&b.done);
  assert_true((!strcmp(a.state, "ok")) + (!strcmp(b.state, "ok")) == 1);
  assert_int_equal(usage(), 8);
}

static void test_requeue_keeps_place(void **state)
{
  struct out o;

  (void)state;
  /* j-tie-a is admitted (previous test); preempted, it goes back ahead of
   * the jobs queued after it. */
  WAIT(gq_queue_requeue(&q, "ml", "team-a", "j-tie-a", on_done, &o), o);
  assert_string_equal(o.state, "queued");
  assert_int_equal(position("j-tie-a"), 2);
  WAIT(gq_queue_release(&q, "ml", "team-a", "j-tie-a", 1, on_done, &o), o);
  assert_int_equal(usage(), 0);
}

static void test_scripts_survive_flush(void **state)
{
  char *r = gq_test_redis_cmd(&redis, "SCRIPT FLUSH");
  struct out o;

  (void)state;
  free(r);
  assert_int_equal(position("j-tie-a"), 2); /* NOSCRIPT: reloaded, retried */
  WAIT(gq_queue_remove(&q, "ml", "team-a", "j-tie-a", on_done, &o), o);
  assert_int_equal(o.value, 1);
  assert_int_equal(position("j-tie-a"), 0);
  WAIT(gq_queue_remove(&q, "ml", "team-a", "j-tie-a", on_done, &o), o);
  assert_int_equal(o.value, 0);
}

static void test_keys_carry_cohort_tag(void **state)
{
  char k[256];

  (void)state;
  assert_string_equal(gq_queue_key(&q, "ml", "team-a", "q", "team-a", k,
                                   sizeof(k)),
                      "t:{ml}:q:team-a");
  assert_string_equal(gq_queue_key(&q, NULL, "solo", "use", "solo", k,
                                   sizeof(k)),
                      "t:{~solo}:use:solo");
  assert_string_equal(gq_queue_key(&q, "ml", "x", "ver", NULL, k, sizeof(k)),
                      "t:{ml}:ver");
}

/* Fair share over time (issue 21): the decayed usage history of a
 * cohort's teams is saved and read back from the cohort's fair hash; a
 * lone team has its own; a malformed value is refused by the parser. */
struct fairout {
  int done, rc;
  json_t *h;
};

static void on_fair(int rc, const json_t *h, void *arg)
{
  struct fairout *o = arg;

  o->done = 1;
  o->rc = rc;
  o->h = h ? json_deep_copy(h) : NULL;
}

static json_t *fair_load(const char *cohort, const char *team)
{
  struct fairout o = {0};

  assert_int_equal(gq_queue_fair_load(&q, cohort, team, on_fair, &o), 0);
  run_until(&o.done);
  assert_int_equal(o.rc, 0);
  return o.h;
}

static void test_fair_history(void **state)
{
  struct out o;
  double g;
  int64_t at;
  json_t *h;
  char k[256];

  (void)state;
  WAIT(gq_queue_fair_save(&q, "ml", "team-a", 12345.5, 1700000000000LL,
                          on_done, &o), o);
  WAIT(gq_queue_fair_save(&q, "ml", "team-b", 0, 1700000000001LL, on_done,
                          &o), o);
  WAIT(gq_queue_fair_save(&q, NULL, "solo", 7, 5, on_done, &o), o);
  assert_int_equal(gq_queue_fair_save(&q, "ml", "team-a", -1, 0, on_done, &o),
                   GQ_EINVAL);
  assert_string_equal(gq_queue_key(&q, "ml", "x", "fair", NULL, k, sizeof(k)),
                      "t:{ml}:fair");
  h = fair_load("ml", "team-a");
  assert_int_equal(json_object_size(h), 2);
  assert_int_equal(gq_queue_fair_parse(json_string_value(json_object_get(
                                           h, "team-a")), &g, &at), 0);
  assert_true(g == 12345.5);
  assert_int_equal(at, 1700000000000LL);
  json_decref(h);
  h = fair_load(NULL, "solo");
  assert_string_equal(json_string_value(json_object_get(h, "solo")),
                      "7.000@5");
  json_decref(h);
  h = fair_load("nobody", "x"); /* nothing saved: an empty hash */
  assert_int_equal(json_object_size(h), 0);
  json_decref(h);
  assert_int_equal(gq_queue_fair_parse("12@", &g, &at), GQ_EINVAL);
  assert_int_equal(gq_queue_fair_parse("@12", &g, &at), GQ_EINVAL);
  assert_int_equal(gq_queue_fair_parse("-1@12", &g, &at), GQ_EINVAL);
  assert_int_equal(gq_queue_fair_parse("nan@12", &g, &at), GQ_EINVAL);
  assert_int_equal(gq_queue_fair_parse("1@-12", &g, &at), GQ_EINVAL);
  assert_int_equal(gq_queue_fair_parse("1@12x", &g, &at), GQ_EINVAL);
  assert_int_equal(gq_queue_fair_parse(NULL, &g, &at), GQ_EINVAL);
}

struct rbout {
  int done, rc;
  struct gq_rb_drift d;
};

static void on_rb(int rc, const struct gq_rb_drift *d, void *arg)
{
  struct rbout *o = arg;

  o->done = 1;
  o->rc = rc;
  o->d = *d;
}

static const char *const rb_teams[] = {"team-x", "team-y"};
static const struct gq_rb_job rb_jobs[] = {
    {"r1", "team-x", "ns", "r1", 5, 100, 1},
    {"r2", "team-x", "ns", "r2", 1, 200, 0},
    {"r3", "team-x", "ns", "r3", 1, 150, 0},
    {"r4", "team-y", "ns", "r4", 0, 300, 0},
};
static const struct gq_rb_adm rb_adms[] = {{"r1", "team-x", "A100", 1, 4}};

/* rb_jobs[i] as the queue functions take it (cohort "rb"). */
static struct gq_qjob rb_qjob(size_t i)
{
  return (struct gq_qjob){rb_jobs[i].uid,      rb_jobs[i].team, "ns",
                          rb_jobs[i].name,     "rb",
                          rb_jobs[i].priority, rb_jobs[i].queued_ms};
}

static struct gq_rb_drift rebuild(int repair)
{
  struct rbout o;

  memset(&o, 0, sizeof(o));
  assert_int_equal(gq_queue_rebuild(&q, "rb", rb_teams, 2, rb_jobs, 4,
                                    rb_adms, 1, repair, on_rb, &o),
                   0);
  run_until(&o.done);
  assert_int_equal(o.rc, 0);
  return o.d;
}

static long long pos_in(const char *team, const char *uid)
{
  struct out o;

  WAIT(gq_queue_position(&q, "rb", team, uid, on_done, &o), o);
  return o.value;
}

static long long use_of(const char *team)
{
  char key[256], *v;
  long long n;

  gq_queue_key(&q, "rb", team, "use", team, key, sizeof(key));
  v = gq_test_redis_cmd(&redis, "HGET %s %s", key, "A100");
  n = strcmp(v, "(nil)") ? atoll(v) : 0;
  free(v);
  return n;
}

static void test_rebuild_and_drift(void **state)
{
  struct gq_qjob j;
  struct gq_rb_drift d;
  struct out o;
  char key[256], *r;
  long long ver;

  (void)state;
  /* The state the scripts build as jobs come and one is admitted. */
  for (size_t i = 0; i < 4; i++) {
    j = rb_qjob(i);
    WAIT(gq_queue_enqueue(&q, &j, on_done, &o), o);
  }
  j = rb_qjob(0); /* r1 */
  WAIT(gq_queue_admit(&q, &j, 1, "A100", 4, -1, on_done, &o),
       o); /* learn the version */
  ver = o.value;
  WAIT(gq_queue_admit(&q, &j, 1, "A100", 4, ver, on_done, &o), o);
  assert_string_equal(o.state, "ok");
  assert_int_equal(pos_in("team-x", "r3"), 1);
  assert_int_equal(pos_in("team-x", "r2"), 2);
  /* The objects agree with it: no drift. */
  d = rebuild(0);
  assert_int_equal(d.jobs_missing + d.jobs_extra + d.jobs_changed, 0);
  assert_int_equal(d.adms_missing + d.adms_extra + d.gpus_diff, 0);
  assert_true(d.keys_read >= 6);
  /* Drift: usage bumped, a stray admission, a lost job. */
  r = gq_test_redis_cmd(&redis, "HINCRBY %s %s %d",
                        gq_queue_key(&q, "rb", "team-x", "use", "team-x", key,
                                     sizeof(key)),
                        "A100", 3);
  free(r);
  r = gq_test_redis_cmd(&redis, "HSET %s flavor A100 gpus 2 team team-y",
                        gq_queue_key(&q, "rb", "team-y", "adm", "ghost:1", key,
                                     sizeof(key)));
  free(r);
  r = gq_test_redis_cmd(&redis, "DEL %s",
                        gq_queue_key(&q, "rb", "team-y", "job", "r4", key,
                                     sizeof(key)));
  free(r);
  /* the fair-share history is no object's: a repair leaves it */
  WAIT(gq_queue_fair_save(&q, "rb", "team-x", 42, 7, on_done, &o), o);
  d = rebuild(0);
  assert_int_equal(d.gpus_diff, 3);
  assert_int_equal(d.adms_extra, 1);
  assert_int_equal(d.jobs_missing, 1);
  d = rebuild(1);
  r = gq_test_redis_cmd(&redis, "HGET %s team-x",
                        gq_queue_key(&q, "rb", "x", "fair", NULL, key,
                                     sizeof(key)));
  assert_non_null(r);
  assert_string_equal(r, "42.000@7");
  free(r);
  /* Redis loses everything; the rebuild from the objects restores it. */
  r = gq_test_redis_cmd(&redis, "FLUSHALL");
  free(r);
  d = rebuild(1);
  assert_int_equal(d.jobs_missing, 4);
  assert_int_equal(pos_in("team-x", "r3"), 1);
  assert_int_equal(pos_in("team-x", "r2"), 2);
  assert_int_equal(pos_in("team-y", "r4"), 1);
  assert_int_equal(pos_in("team-x", "r1"), 0); /* admitted, not queued */
  assert_int_equal(use_of("team-x"), 4);
  d = rebuild(0);
  assert_int_equal(d.jobs_missing + d.jobs_extra + d.jobs_changed, 0);
  assert_int_equal(d.adms_missing + d.adms_extra + d.gpus_diff, 0);
  /* And the scripts go on from there: the release finds its record. */
  WAIT(gq_queue_release(&q, "rb", "team-x", "r1", 1, on_done, &o), o);
  assert_string_equal(o.state, "released");
  assert_int_equal(use_of("team-x"), 0);
}

/* A reply of gq_test_redis_cmd() compared and freed. */
static void assert_redis(const char *want, char *got)
{
  assert_non_null(got);
  assert_string_equal(got, want);
  free(got);
}

/* The job hash holds what enqueue, requeue, remove, position and the
 * rebuild need (team, ns, name, sort) and nothing the admit script would
 * have to touch: an admission leaves it as it is, and an admit whose
 * member is not in the queue (another priority) is "missing" and changes
 * nothing. */
static void test_job_hash_not_touched_by_admit(void **state)
{
  struct gq_qjob j = {"h1", "team-h", "ns-h", "name-h", "hl", 7, 4242}, w;
  char key[256], sort[32];
  struct out o;
  long long ver;

  (void)state;
  WAIT(gq_queue_enqueue(&q, &j, on_done, &o), o);
  gq_queue_key(&q, "hl", "team-h", "job", "h1", key, sizeof(key));
  gq_queue_member(7, 4242, "", sort, sizeof(sort));
  assert_redis("4", gq_test_redis_cmd(&redis, "HLEN %s", key));
  assert_redis(sort, gq_test_redis_cmd(&redis, "HGET %s sort", key));
  assert_redis("name-h", gq_test_redis_cmd(&redis, "HGET %s name", key));
  WAIT(gq_queue_admit(&q, &j, 1, "A100", 2, -1, on_done, &o), o);
  ver = o.value;
  w = j;
  w.priority = 8; /* not the member it was queued with */
  WAIT(gq_queue_admit(&q, &w, 1, "A100", 2, ver, on_done, &o), o);
  assert_string_equal(o.state, "missing");
  assert_int_equal(o.value, ver);
  WAIT(gq_queue_admit(&q, &j, 1, "A100", 2, ver, on_done, &o), o);
  assert_string_equal(o.state, "ok");
  assert_int_equal(o.value, ver + 1);
  assert_redis("4", gq_test_redis_cmd(&redis, "HLEN %s", key));
  assert_redis(sort, gq_test_redis_cmd(&redis, "HGET %s sort", key));
  gq_queue_key(&q, "hl", "team-h", "adm", "h1:1", key, sizeof(key));
  assert_redis("team-h", gq_test_redis_cmd(&redis, "HGET %s team", key));
  /* Known and not queued: admitted. Enqueue leaves it so. */
  WAIT(gq_queue_enqueue(&q, &j, on_done, &o), o);
  assert_string_equal(o.state, "admitted");
  WAIT(gq_queue_position(&q, "hl", "team-h", "h1", on_done, &o), o);
  assert_int_equal(o.value, 0);
  WAIT(gq_queue_requeue(&q, "hl", "team-h", "h1", on_done, &o), o);
  assert_string_equal(o.state, "queued");
  WAIT(gq_queue_position(&q, "hl", "team-h", "h1", on_done, &o), o);
  assert_int_equal(o.value, 1);
}

/* A Redis written by an older gpuq (job hashes with member, qt, state and
 * attempt, which its admit script rewrote) is converted by the rebuild:
 * counted as old layout, not as drift, and the scripts work on the
 * result. */
static void test_rebuild_converts_old_layout(void **state)
{
  static const char *const teams[] = {"team-o"};
  static const struct gq_rb_job jobs[] = {
      {"o1", "team-o", "ns", "o1", 0, 100, 0},
      {"o2", "team-o", "ns", "o2", 0, 50, 1},
  };
  static const struct gq_rb_adm adms[] = {{"o2", "team-o", "A100", 1, 2}};
  char kjob[256], k[256], m1[64], m2[64];
  struct rbout o;
  struct out p;

  (void)state;
  gq_queue_member(0, 100, "o1", m1, sizeof(m1));
  gq_queue_member(0, 50, "o2", m2, sizeof(m2));
  gq_queue_key(&q, "old", "team-o", "job", "o1", kjob, sizeof(kjob));
  free(gq_test_redis_cmd(&redis, "HSET %s team team-o ns ns name o1 member %s"
                         " qt 100 state queued", kjob, m1));
  free(gq_test_redis_cmd(&redis, "ZADD %s 0 %s",
                         gq_queue_key(&q, "old", "team-o", "q", "team-o", k,
                                      sizeof(k)),
                         m1));
  free(gq_test_redis_cmd(&redis, "HSET %s team team-o ns ns name o2 member %s"
                         " qt 50 state admitted attempt 1",
                         gq_queue_key(&q, "old", "team-o", "job", "o2", k,
                                      sizeof(k)),
                         m2));
  free(gq_test_redis_cmd(&redis, "HSET %s flavor A100 gpus 2 team team-o",
                         gq_queue_key(&q, "old", "team-o", "adm", "o2:1", k,
                                      sizeof(k))));
  free(gq_test_redis_cmd(&redis, "HSET %s A100 2",
                         gq_queue_key(&q, "old", "team-o", "use", "team-o", k,
                                      sizeof(k))));
  memset(&o, 0, sizeof(o));
  assert_int_equal(gq_queue_rebuild(&q, "old", teams, 1, jobs, 2, adms, 1, 1,
                                    on_rb, &o),
                   0);
  run_until(&o.done);
  assert_int_equal(o.rc, 0);
  assert_int_equal(o.d.jobs_old_layout, 2);
  assert_int_equal(o.d.jobs_missing + o.d.jobs_extra + o.d.jobs_changed, 0);
  assert_int_equal(o.d.adms_missing + o.d.adms_extra + o.d.gpus_diff, 0);
  assert_redis("(nil)", gq_test_redis_cmd(&redis, "HGET %s state", kjob));
  assert_redis("4", gq_test_redis_cmd(&redis, "HLEN %s", kjob));
  WAIT(gq_queue_position(&q, "old", "team-o", "o1", on_done, &p), p);
  assert_int_equal(p.value, 1);
  memset(&o, 0, sizeof(o));
  assert_int_equal(gq_queue_rebuild(&q, "old", teams, 1, jobs, 2, adms, 1, 0,
                                    on_rb, &o),
                   0);
  run_until(&o.done);
  assert_int_equal(o.d.jobs_old_layout + o.d.jobs_changed + o.d.jobs_missing +
                       o.d.jobs_extra + o.d.adms_missing + o.d.adms_extra +
                       o.d.gpus_diff,
                   0);
  WAIT(gq_queue_release(&q, "old", "team-o", "o2", 1, on_done, &p), p);
  assert_string_equal(p.state, "released");
}

struct ledger_out {
  int done, rc;
  long long ver, used;
};

static void on_ledger(int rc, long long version,
                      const struct gq_ledger_use *use, size_t n, void *arg)
{
  struct ledger_out *o = arg;

  o->done = 1;
  o->rc = rc;
  o->ver = version;
  o->used = 0;
  for (size_t i = 0; i < n; i++)
    o->used += use[i].gpus;
}

/* The admission protocol end to end: read the ledger, decide in C, admit
 * on that version. Two deciders race for a team's last 8 GPUs: one wins;
 * the other's admit is stale, and on the re-read ledger its decision is
 * "no quota left". Never both. */
static void test_race_with_quota(void **state)
{
  static const char *const team[] = {"solo"};
  struct gq_qjob a = {"qa", "solo", "ns", "qa", NULL, 0, 1};
  struct gq_qjob b = {"qb", "solo", "ns", "qb", NULL, 0, 2};
  struct gq_qteam t = {"solo", 8, -1, -1, 0, 1.0, 0, 0, 0};
  struct gq_qcohort c = {&t, 1, 0};
  struct ledger_out l;
  struct out x, y, o;
  int ok;

  (void)state;
  WAIT(gq_queue_enqueue(&q, &a, on_done, &o), o);
  WAIT(gq_queue_enqueue(&q, &b, on_done, &o), o);
  memset(&l, 0, sizeof(l));
  assert_int_equal(gq_queue_ledger(&q, NULL, team, 1, on_ledger, &l), 0);
  run_until(&l.done);
  t.used = l.used;
  assert_int_equal(gq_quota_check(&c, 0, 8, NULL), GQ_Q_FITS_NOMINAL);
  memset(&x, 0, sizeof(x));
  memset(&y, 0, sizeof(y));
  assert_int_equal(gq_queue_admit(&q, &a, 1, "T4", 8, l.ver,
                                  on_done, &x),
                   0);
  assert_int_equal(gq_queue_admit(&q, &b, 1, "T4", 8, l.ver,
                                  on_done, &y),
                   0);
  run_until(&x.done);
  run_until(&y.done);
  ok = !strcmp(x.state, "ok") + !strcmp(y.state, "ok");
  assert_int_equal(ok, 1);
  memset(&l, 0, sizeof(l));
  assert_int_equal(gq_queue_ledger(&q, NULL, team, 1, on_ledger, &l), 0);
  run_until(&l.done);
  assert_int_equal(l.used, 8);
  t.used = l.used;
  assert_int_equal(gq_quota_check(&c, 0, 8, NULL),
                   GQ_Q_OVER_NOMINAL_NO_BORROW);
}

static void on_tick(uv_timer_t *t)
{
  (void)t;
}

/* Runs the loop for ms of real time (the outage's length). */
static void run_for(int ms)
{
  uv_timer_t t;
  int64_t end = gq_clock_mono_ms() + ms;

  uv_timer_init(&loop, &t);
  uv_timer_start(&t, on_tick, 50, 50);
  while (gq_clock_mono_ms() < end)
    uv_run(&loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(&loop, UV_RUN_NOWAIT);
}

/* A 30-second outage: while Redis is gone every operation says so at once
 * (GQ_EUNAVAIL: admission pauses, nothing is queued up), the client comes
 * back by itself when a server listens again, the rebuild restores the
 * state from the objects, and admission resumes. */
static void test_outage_30s(void **state)
{
  struct gq_qjob j = rb_qjob(1), r3;
  struct out o;
  int port = redis.port, down;
  long long ver;

  (void)state;
  gq_test_redis_stop(&redis);
  while (ready_flag)
    uv_run(&loop, UV_RUN_ONCE);
  down = gq_queue_enqueue(&q, &j, on_done, &o);
  assert_int_equal(down, GQ_EUNAVAIL);
  run_for(30000);
  assert_int_equal(gq_queue_enqueue(&q, &j, on_done, &o), GQ_EUNAVAIL);
  assert_int_equal(gq_test_redis_start_port(&redis, port, NULL), 0);
  run_until(&ready_flag); /* reconnected on its own */
  assert_int_equal(rebuild(1).jobs_missing, 4); /* a fresh, empty server */
  assert_int_equal(pos_in("team-x", "r3"), 1);
  r3 = rb_qjob(2);
  WAIT(gq_queue_admit(&q, &r3, 1, "A100", 2, -1, on_done, &o), o);
  ver = o.value; /* the rebuilt ledger's version */
  WAIT(gq_queue_admit(&q, &r3, 1, "A100", 2, ver, on_done, &o), o);
  assert_string_equal(o.state, "ok");
  assert_int_equal(use_of("team-x"), 6); /* r1's 4 (rebuilt) + r3's 2 */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_member_encoding),
      cmocka_unit_test(test_order_and_ties),
      cmocka_unit_test(test_admit_release_exactly_once),
      cmocka_unit_test(test_racing_admissions),
      cmocka_unit_test(test_requeue_keeps_place),
      cmocka_unit_test(test_scripts_survive_flush),
      cmocka_unit_test(test_keys_carry_cohort_tag),
      cmocka_unit_test(test_fair_history),
      cmocka_unit_test(test_rebuild_and_drift),
      cmocka_unit_test(test_job_hash_not_touched_by_admit),
      cmocka_unit_test(test_rebuild_converts_old_layout),
      cmocka_unit_test(test_race_with_quota),
      cmocka_unit_test(test_outage_30s),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
