/* bench/queue_bench.c - one measurement of the Redis queue (issue 6).
 *
 * Against a Redis server given by URL (bench/queue starts a private one),
 * for one depth N:
 *   1. optionally FLUSHALL, then read used_memory (INFO memory);
 *   2. enqueue N jobs spread over the teams (round-robin), pipelined with at
 *      most --window enqueues in flight, and read used_memory again: the
 *      delta over N is the Redis memory per queued job;
 *   3. a timed round admits --admits jobs through the admit script with the
 *      controller's concurrency: the teams sit in --cohorts cohorts, and each
 *      cohort has up to --pipeline admissions in flight on the one
 *      connection, sent with successive versions (v, v + 1, ...), as the
 *      controller sends the admissions of one pass (controller/admit.c:
 *      k->ver++, up to ADMITS_MAX = 100 per pass). Redis runs them in order,
 *      so each finds the version the one before it left. Each admission
 *      takes the head of the next team of its cohort (round-robin), and
 *      every admitted job is replaced by a new one at the tail of the same
 *      team, so the depth stays N. Only admissions are counted; the clock
 *      runs until the last admission and the last refill are answered.
 *   4. verifies the outcome: every team's queue holds exactly what this
 *      program expects and every cohort's version equals its admissions.
 *
 * Every reply is checked: an error reply, an unexpected state word, a lost
 * connection or a failed check ends the run with a message on stderr and
 * exit status 1; nothing is counted that was not confirmed by Redis.
 *
 * stdout carries only "key=value" lines for bench/queue to parse:
 *   enqueue jobs=N seconds=S per_s=R
 *   memory used_before=B used_after=A bytes_per_job=E
 *   detail job_key_bytes=J zset_bytes_per_member=Z dbsize=K
 *   admit admits=M seconds=S per_s=R refills=F depth=N
 *   server evalsha_calls=K usec_per_call=U   (Redis's own time, the round)
 * Progress goes to stderr.
 *
 * Without --flush the database (or at least --prefix) must be fresh: the
 * cohort versions are assumed to start at 0.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "base/alloc.h"
#include "base/err.h"
#include "base/log.h"
#include "queue/queue.h"

#define BENCH_T0_MS 1718000000000LL /* queue time of job 0 (June 2024) */
#define BENCH_FLAVOR "A100"

struct bench;

#define PIPE_MAX 1000 /* --pipeline's bound */

/* A cohort: its teams are [first, first + nteams). Up to --pipeline
 * admissions in flight, each sent with the version the one before it will
 * leave (as the controller does: k->ver++ in controller/admit.c). One
 * connection keeps them in order, so replies come back in sending order. */
struct cohort {
  struct bench *b;
  char name[32];
  int first, nteams;
  int next;           /* round-robin cursor over its teams */
  long long ver;      /* the cohort ledger's version, as last confirmed */
  long long sent;     /* the version the next admission is sent with */
  long admits;        /* admissions confirmed in this cohort */
  int team[PIPE_MAX]; /* team of each admission in flight, by version */
};

struct bench {
  /* options */
  const char *url, *prefix;
  long long jobs;
  long admits;
  int teams, ncohorts, window, flush, pipeline;

  uv_loop_t loop;
  struct gq_rq *rq;
  struct gq_queue q;
  int ready;
  int failed;

  /* Team t's k-th job is job number g = k * teams + t; its queue holds the
   * jobs with k in [head[t], tail[t]). */
  long long *head, *tail;
  struct cohort *co;

  /* the phase in progress */
  long long issued, done, inflight; /* enqueue phase */
  long admits_issued, admits_done;  /* admit round */
  long long refills_issued, refills_done;
  uint64_t t0_ns;
};

static void fail(struct bench *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reports the first failure and stops the loop; main() exits 1. Later
 * failures (the commands still in flight) are consequences: not printed. */
static void fail(struct bench *b, const char *fmt, ...)
{
  va_list ap;

  if (b->failed)
    return;
  b->failed = 1;
  fputs("bench_queue: error: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  uv_stop(&b->loop);
}

static double since_s(uint64_t t0_ns)
{
  return (double)(uv_hrtime() - t0_ns) / 1e9;
}

static long long per_s(double n, double seconds)
{
  return seconds > 0 ? (long long)(n / seconds + 0.5) : 0;
}

/* ---- Jobs -------------------------------------------------------------- */

/* splitmix64: spreads a counter over 64 random-looking bits. */
static uint64_t mix(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/* The text of job g, as the controller would see a GpuJob. */
struct jobtext {
  char uid[40], team[24], ns[32], name[64];
};

/* A version-4 UUID for job g. Its last group is g times an odd constant
 * modulo 2^48, a bijection, so uids are unique without a lookup. */
static void job_uid(long long g, char *buf, size_t len)
{
  uint64_t a = mix((uint64_t)g);
  uint64_t tail = ((uint64_t)g * 0x5deece66dULL) & 0xffffffffffffULL;

  snprintf(buf, len, "%08x-%04x-4%03x-%04x-%012llx", (unsigned)(a >> 32),
           (unsigned)(a >> 16) & 0xffffu, (unsigned)a & 0xfffu,
           0x8000u | ((unsigned)(a >> 48) & 0x3fffu), (unsigned long long)tail);
}

static void job_make(const struct bench *b, long long g, struct jobtext *t,
                     struct gq_qjob *j)
{
  static const char *const models[] = {"llama-7b", "resnet50", "bert-large",
                                       "vit-huge"};
  int team = (int)(g % b->teams);

  job_uid(g, t->uid, sizeof(t->uid));
  snprintf(t->team, sizeof(t->team), "team-%02d", team);
  snprintf(t->ns, sizeof(t->ns), "ml-team-%02d", team);
  snprintf(t->name, sizeof(t->name), "train-%s-%06lld",
           models[(g / b->teams) % 4], g / b->teams);
  memset(j, 0, sizeof(*j));
  j->uid = t->uid;
  j->team = t->team;
  j->ns = t->ns;
  j->name = t->name;
  j->cohort = b->co[team / (b->teams / b->ncohorts)].name;
  j->priority = 0;
  j->queued_ms = BENCH_T0_MS + g; /* FIFO within a team: the head is k = 0 */
}

/* ---- Blocking helpers on the loop (setup and checks, not timed) -------- */

struct sync {
  int done;
  int orphan;        /* run_cmd() gave up on it: the callback frees it */
  int err;           /* 0, a GQ_E* status, or GQ_EIO for an error reply */
  int type;          /* enum gq_rq_reply_type */
  long long integer; /* GQ_RQ_INTEGER */
  char *str;         /* heap copy of a string, status or error reply */
};

static void on_sync(struct gq_rq *r, int status,
                    const struct gq_rq_reply *rep, void *arg)
{
  struct sync *s = arg;

  (void)r;
  if (s->orphan) {
    free(s);
    return;
  }
  s->done = 1;
  if (status != 0) {
    s->err = status;
    return;
  }
  s->type = rep->type;
  s->err = rep->type == GQ_RQ_ERROR ? GQ_EIO : 0;
  s->integer = rep->type == GQ_RQ_INTEGER ? rep->integer : 0;
  s->str = rep->str ? gq_xstrndup(rep->str, rep->len) : NULL;
}

/* Runs argv and waits for the answer. Returns 0 with *s filled (the caller
 * frees s->str), or -1 after fail(): an error reply, no answer, or (with
 * want_type) a reply of another type. The callback gets a heap copy, which
 * it frees itself if the wait is abandoned (the loop stopped on a failure
 * elsewhere), so nothing points into this frame afterwards. */
static int run_cmd(struct bench *b, struct sync *s, int argc,
                   const char **argv, int want_type)
{
  struct sync *h = gq_xcalloc(1, sizeof(*h));
  int rc;

  memset(s, 0, sizeof(*s));
  rc = gq_rq_cmd(b->rq, on_sync, h, argc, argv, NULL);
  if (rc != 0) {
    free(h);
    fail(b, "cannot send %s: %s", argv[0], gq_strerror(rc));
    return -1;
  }
  while (!h->done && !b->failed)
    uv_run(&b->loop, UV_RUN_ONCE);
  if (!h->done) {
    h->orphan = 1; /* the loop stopped: the failure is reported */
    return -1;
  }
  *s = *h;
  free(h);
  if (s->err != 0 || (want_type && s->type != want_type)) {
    fail(b, "%s failed: %s", argv[0],
         s->str ? s->str
                : s->err ? gq_strerror(s->err) : "unexpected reply type");
    free(s->str);
    return -1;
  }
  return 0;
}

/* Reads used_memory from INFO memory into *out. */
static int used_memory(struct bench *b, long long *out)
{
  const char *argv[] = {"INFO", "memory"};
  struct sync s;
  const char *p;
  char *end;

  if (run_cmd(b, &s, 2, argv, GQ_RQ_STRING) != 0)
    return -1;
  p = s.str ? strstr(s.str, "\nused_memory:") : NULL;
  if (!p) {
    free(s.str);
    fail(b, "INFO memory has no used_memory line");
    return -1;
  }
  *out = strtoll(p + strlen("\nused_memory:"), &end, 10);
  if (*end != '\r' && *end != '\n') {
    free(s.str);
    fail(b, "INFO memory: malformed used_memory");
    return -1;
  }
  free(s.str);
  return 0;
}

/* Runs a command answered by an integer into *out. */
static int int_cmd(struct bench *b, long long *out, int argc,
                   const char **argv)
{
  struct sync s;

  if (run_cmd(b, &s, argc, argv, GQ_RQ_INTEGER) != 0)
    return -1;
  *out = s.integer;
  return 0;
}

/* ---- Connection -------------------------------------------------------- */

static void on_state(struct gq_rq *r, int ready, const char *why, void *arg)
{
  struct bench *b = arg;

  (void)r;
  if (ready) {
    b->ready = 1;
    return;
  }
  /* A private server on loopback does not go away: any DOWN is a failure,
   * and nothing in flight can be trusted to have been counted. */
  fail(b, "redis is down: %s", why ? why : "unknown");
}

static int connect_redis(struct bench *b)
{
  struct gq_rq_opts o = {0};

  if (uv_loop_init(&b->loop) != 0) {
    fprintf(stderr, "bench_queue: error: cannot create the uv loop\n");
    return -1;
  }
  o.url = b->url;
  o.scripts = gq_queue_scripts(&o.nscripts);
  o.on_state = on_state;
  o.arg = b;
  o.connect_timeout_ms = 5000;
  o.command_timeout_ms = 120000; /* FLUSHALL of 2M keys, MEMORY USAGE */
  b->rq = gq_rq_new(&b->loop, &o);
  if (!b->rq) {
    fprintf(stderr, "bench_queue: error: bad redis URL '%s'\n", b->url);
    uv_loop_close(&b->loop);
    return -1;
  }
  gq_queue_init(&b->q, b->rq, b->prefix);
  while (!b->ready && !b->failed)
    uv_run(&b->loop, UV_RUN_ONCE);
  return b->ready && !b->failed ? 0 : -1;
}

/* ---- Enqueue phase ----------------------------------------------------- */

static void enqueue_more(struct bench *b);

static void on_enqueued(int rc, const char *state, long long value, void *arg)
{
  struct bench *b = arg;

  (void)value;
  b->inflight--;
  if (rc != 0) {
    fail(b, "enqueue failed: %s", gq_strerror(rc));
    return;
  }
  if (strcmp(state, "queued") != 0) {
    fail(b, "enqueue answered '%s', want 'queued': the job was known "
            "already (use --flush or a fresh --prefix)", state);
    return;
  }
  b->done++;
  if (b->done % 100000 == 0)
    fprintf(stderr, "bench_queue: enqueued %lld/%lld (%.1f s)\n", b->done,
            b->jobs, since_s(b->t0_ns));
  enqueue_more(b);
}

/* Keeps the window full: jobs are numbered g = 0..N-1, team g % teams. */
static void enqueue_more(struct bench *b)
{
  while (!b->failed && b->issued < b->jobs && b->inflight < b->window) {
    struct jobtext t;
    struct gq_qjob j;
    long long g = b->issued;
    int rc;

    job_make(b, g, &t, &j);
    rc = gq_queue_enqueue(&b->q, &j, on_enqueued, b);
    if (rc != 0) {
      fail(b, "cannot enqueue job %lld: %s", g, gq_strerror(rc));
      return;
    }
    b->tail[g % b->teams]++;
    b->issued++;
    b->inflight++;
  }
}

static int enqueue_all(struct bench *b)
{
  double s;

  b->issued = b->done = b->inflight = 0;
  b->t0_ns = uv_hrtime();
  enqueue_more(b);
  while (b->done < b->jobs && !b->failed)
    uv_run(&b->loop, UV_RUN_ONCE);
  if (b->failed)
    return -1;
  s = since_s(b->t0_ns);
  printf("enqueue jobs=%lld seconds=%.3f per_s=%lld\n", b->jobs, s,
         per_s((double)b->jobs, s));
  fflush(stdout);
  return 0;
}

/* ---- Admit round ------------------------------------------------------- */

static void admit_next(struct cohort *c);

static void on_refilled(int rc, const char *state, long long value,
                        void *arg)
{
  struct bench *b = arg;

  (void)value;
  if (rc != 0) {
    fail(b, "refill enqueue failed: %s", gq_strerror(rc));
    return;
  }
  if (strcmp(state, "queued") != 0) {
    fail(b, "refill enqueue answered '%s', want 'queued'", state);
    return;
  }
  b->refills_done++;
}

/* Queues a new job at the tail of team t, replacing an admitted one. */
static void refill(struct bench *b, int t)
{
  long long g = b->tail[t] * b->teams + t;
  struct jobtext text;
  struct gq_qjob j;
  int rc;

  job_make(b, g, &text, &j);
  rc = gq_queue_enqueue(&b->q, &j, on_refilled, b);
  if (rc != 0) {
    fail(b, "cannot enqueue refill job %lld: %s", g, gq_strerror(rc));
    return;
  }
  b->tail[t]++;
  b->refills_issued++;
}

static void on_admitted(int rc, const char *state, long long value, void *arg)
{
  struct cohort *c = arg;
  struct bench *b = c->b;

  if (rc != 0) {
    fail(b, "admit in cohort '%s' failed: %s", c->name, gq_strerror(rc));
    return;
  }
  /* Replies come in sending order: anything but "ok" with the next
   * version means the bench (or the script) is wrong. */
  if (strcmp(state, "ok") != 0 || value != c->ver + 1) {
    fail(b, "admit in cohort '%s' answered '%s' %lld, want 'ok' %lld",
         c->name, state, value, c->ver + 1);
    return;
  }
  refill(b, c->team[c->ver % b->pipeline]);
  c->ver = value;
  c->admits++;
  b->admits_done++;
  admit_next(c);
}

/* Admits the head of the cohort's next team, if the round wants more. */
static void admit_next(struct cohort *c)
{
  struct bench *b = c->b;
  struct jobtext text;
  struct gq_qjob j;
  int t, rc;

  if (b->failed || b->admits_issued >= b->admits)
    return;
  t = c->first + c->next;
  c->next = (c->next + 1) % c->nteams;
  if (b->head[t] >= b->tail[t]) {
    fail(b, "team %d has no queued job to admit", t);
    return;
  }
  job_make(b, b->head[t] * b->teams + t, &text, &j);
  rc = gq_queue_admit(&b->q, &j, 1, BENCH_FLAVOR, 1, c->sent, on_admitted, c);
  if (rc != 0) {
    fail(b, "cannot send admit: %s", gq_strerror(rc));
    return;
  }
  b->head[t]++;
  c->team[c->sent % b->pipeline] = t;
  c->sent++;
  b->admits_issued++;
}

static int admit_round(struct bench *b)
{
  double s;

  b->admits_issued = b->admits_done = 0;
  b->refills_issued = b->refills_done = 0;
  b->t0_ns = uv_hrtime();
  for (int k = 0; k < b->pipeline; k++)
    for (int i = 0; i < b->ncohorts; i++)
      admit_next(&b->co[i]);
  while (!b->failed && (b->admits_done < b->admits ||
                        b->refills_done < b->refills_issued))
    uv_run(&b->loop, UV_RUN_ONCE);
  if (b->failed)
    return -1;
  s = since_s(b->t0_ns);
  printf("admit admits=%ld seconds=%.3f per_s=%lld refills=%lld depth=%lld\n",
         b->admits, s, per_s((double)b->admits, s), b->refills_done, b->jobs);
  fflush(stdout);
  return 0;
}

/* ---- Checks and memory ------------------------------------------------- */

/* Every team's queue holds tail - head jobs; every cohort's version equals
 * its admissions (the versions started at 0 after the flush). */
static int verify(struct bench *b)
{
  char key[512];
  const char *zcard[] = {"ZCARD", key}, *get[] = {"GET", key};
  long long n, total = 0;

  for (int t = 0; t < b->teams; t++) {
    struct cohort *c = &b->co[t / (b->teams / b->ncohorts)];
    char team[24];

    snprintf(team, sizeof(team), "team-%02d", t);
    gq_queue_key(&b->q, c->name, team, "q", team, key, sizeof(key));
    if (int_cmd(b, &n, 2, zcard) != 0)
      return -1;
    if (n != b->tail[t] - b->head[t]) {
      fail(b, "queue '%s' holds %lld jobs, want %lld", key, n,
           b->tail[t] - b->head[t]);
      return -1;
    }
    total += n;
  }
  for (int i = 0; i < b->ncohorts; i++) {
    struct sync s;
    const char *team = "team-00"; /* ignored: the cohort names the key */

    gq_queue_key(&b->q, b->co[i].name, team, "ver", NULL, key, sizeof(key));
    if (run_cmd(b, &s, 2, get, 0) != 0)
      return -1;
    n = s.str ? strtoll(s.str, NULL, 10) : 0;
    free(s.str);
    if (n != b->co[i].ver || (b->flush && n != b->co[i].admits)) {
      fail(b, "'%s' is %lld, want %lld", key, n, b->co[i].ver);
      return -1;
    }
  }
  if (total != b->jobs) {
    fail(b, "the queues hold %lld jobs, want %lld", total, b->jobs);
    return -1;
  }
  return 0;
}

/* Where the memory goes: one job hash, and one zset member on average
 * (MEMORY USAGE ... SAMPLES 0 walks the whole set). Informational. */
static int memory_detail(struct bench *b)
{
  char key[512], team[24];
  const char *usage[] = {"MEMORY", "USAGE", key, "SAMPLES", "0"};
  const char *dbsize[] = {"DBSIZE"};
  long long job_bytes, zset_bytes, keys;
  struct jobtext t;
  struct gq_qjob j;

  job_make(b, b->head[0] * b->teams, &t, &j);
  gq_queue_key(&b->q, j.cohort, t.team, "job", t.uid, key, sizeof(key));
  if (int_cmd(b, &job_bytes, 3, usage) != 0)
    return -1;
  snprintf(team, sizeof(team), "team-%02d", 0);
  gq_queue_key(&b->q, b->co[0].name, team, "q", team, key, sizeof(key));
  if (int_cmd(b, &zset_bytes, 5, usage) != 0 ||
      int_cmd(b, &keys, 1, dbsize) != 0)
    return -1;
  printf("detail job_key_bytes=%lld zset_bytes_per_member=%lld dbsize=%lld\n",
         job_bytes, zset_bytes / (b->tail[0] - b->head[0]), keys);
  return 0;
}

/* Redis's own account of the round: EVALSHA calls (admissions and refills)
 * and the server time per call, from INFO commandstats after a CONFIG
 * RESETSTAT just before the round. Separates server cost from round trips. */
static int server_stats(struct bench *b)
{
  const char *argv[] = {"INFO", "commandstats"};
  const char *tag = "cmdstat_evalsha:calls=";
  long long calls;
  double usec;
  struct sync s;
  const char *p;

  if (run_cmd(b, &s, 2, argv, GQ_RQ_STRING) != 0)
    return -1;
  p = s.str ? strstr(s.str, tag) : NULL;
  if (!p || sscanf(p + strlen(tag), "%lld,usec=%*[0-9],usec_per_call=%lf",
                   &calls, &usec) != 2) {
    free(s.str);
    fail(b, "INFO commandstats has no evalsha line");
    return -1;
  }
  free(s.str);
  printf("server evalsha_calls=%lld usec_per_call=%.2f\n", calls, usec);
  fflush(stdout);
  return 0;
}

static int measure(struct bench *b)
{
  const char *flushall[] = {"FLUSHALL"};
  const char *resetstat[] = {"CONFIG", "RESETSTAT"};
  long long before, after;
  struct sync s;

  if (b->flush) {
    if (run_cmd(b, &s, 1, flushall, 0) != 0)
      return -1;
    free(s.str);
  }
  if (used_memory(b, &before) != 0 || enqueue_all(b) != 0 ||
      used_memory(b, &after) != 0)
    return -1;
  printf("memory used_before=%lld used_after=%lld bytes_per_job=%lld\n",
         before, after, (after - before + b->jobs / 2) / b->jobs);
  fflush(stdout);
  if (memory_detail(b) != 0)
    return -1;
  fprintf(stderr, "bench_queue: admitting %ld jobs at depth %lld\n",
          b->admits, b->jobs);
  if (run_cmd(b, &s, 2, resetstat, GQ_RQ_STATUS) != 0)
    return -1;
  free(s.str);
  if (admit_round(b) != 0 || server_stats(b) != 0 || verify(b) != 0)
    return -1;
  return 0;
}

/* ---- Options ----------------------------------------------------------- */

static void usage(FILE *f)
{
  fputs("usage: bench_queue --url redis://HOST:PORT[/DB] [--jobs N] "
        "[--admits M]\n"
        "       [--teams T] [--cohorts C] [--window W] [--pipeline K]\n"
        "       [--prefix P] [--flush]\n"
        "Queues N jobs (default 1000) over T teams (100) in C cohorts (10),\n"
        "then admits M (10000) with up to K admissions in flight per cohort\n"
        "(10), refilling as it goes. --flush runs FLUSHALL first (needed\n"
        "for the memory figure; without it use a fresh --prefix, as the\n"
        "versions must start at 0); W enqueues in flight (500).\n",
        f);
}

/* Parses a whole decimal number in [min, max] (no atoi: STYLE). */
static int parse_num(const char *flag, const char *s, long long min,
                     long long max, long long *out)
{
  char *end;

  *out = strtoll(s, &end, 10);
  if (end == s || *end || *out < min || *out > max) {
    fprintf(stderr, "bench_queue: error: %s wants a number in [%lld, %lld], "
                    "got '%s'\n", flag, min, max, s);
    return -1;
  }
  return 0;
}

static int parse_opt(struct bench *b, int c, const char *arg)
{
  long long v;

  switch (c) {
  case 'u': b->url = arg; return 0;
  case 'p': b->prefix = arg; return 0;
  case 'f': b->flush = 1; return 0;
  case 'n':
    if (parse_num("--jobs", arg, 1, 100000000, &v) != 0)
      return -1;
    b->jobs = v;
    return 0;
  case 'a':
    if (parse_num("--admits", arg, 1, 100000000, &v) != 0)
      return -1;
    b->admits = (long)v;
    return 0;
  case 't':
    if (parse_num("--teams", arg, 1, 10000, &v) != 0)
      return -1;
    b->teams = (int)v;
    return 0;
  case 'c':
    if (parse_num("--cohorts", arg, 1, 100, &v) != 0)
      return -1;
    b->ncohorts = (int)v;
    return 0;
  case 'w':
    if (parse_num("--window", arg, 1, 100000, &v) != 0)
      return -1;
    b->window = (int)v;
    return 0;
  case 'P':
    if (parse_num("--pipeline", arg, 1, PIPE_MAX, &v) != 0)
      return -1;
    b->pipeline = (int)v;
    return 0;
  default:
    usage(stderr);
    return -1;
  }
}

static int parse_args(struct bench *b, int argc, char **argv)
{
  static const struct option opts[] = {
      {"url", required_argument, NULL, 'u'},
      {"jobs", required_argument, NULL, 'n'},
      {"admits", required_argument, NULL, 'a'},
      {"teams", required_argument, NULL, 't'},
      {"cohorts", required_argument, NULL, 'c'},
      {"window", required_argument, NULL, 'w'},
      {"pipeline", required_argument, NULL, 'P'},
      {"prefix", required_argument, NULL, 'p'},
      {"flush", no_argument, NULL, 'f'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c, per, flight; /* teams per cohort; admissions in flight per team */

  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      exit(0);
    }
    if (parse_opt(b, c, optarg) != 0)
      return -1;
  }
  if (optind != argc || !b->url) {
    usage(stderr);
    return -1;
  }
  if (b->teams % b->ncohorts != 0 || b->jobs < b->teams) {
    fprintf(stderr, "bench_queue: error: --teams must be a multiple of "
                    "--cohorts and --jobs at least --teams\n");
    return -1;
  }
  /* a cohort's admissions in flight go round-robin over its teams, and a
   * team's refills follow its replies: each team must hold that many */
  per = b->teams / b->ncohorts;
  flight = (b->pipeline + per - 1) / per;
  if (flight > b->jobs / b->teams) {
    fprintf(stderr,
            "bench_queue: error: --pipeline %d puts %d admissions "
            "in flight per team, more than the %lld jobs each team "
            "holds (--jobs %lld over --teams %d)\n",
            b->pipeline, flight, b->jobs / b->teams, b->jobs, b->teams);
    return -1;
  }
  return 0;
}

/* ---- main -------------------------------------------------------------- */

static void setup_cohorts(struct bench *b)
{
  int per = b->teams / b->ncohorts;

  b->head = gq_xcalloc((size_t)b->teams, sizeof(*b->head));
  b->tail = gq_xcalloc((size_t)b->teams, sizeof(*b->tail));
  b->co = gq_xcalloc((size_t)b->ncohorts, sizeof(*b->co));
  for (int i = 0; i < b->ncohorts; i++) {
    b->co[i].b = b;
    snprintf(b->co[i].name, sizeof(b->co[i].name), "cohort-%d", i);
    b->co[i].first = i * per;
    b->co[i].nteams = per;
  }
}

/* Closes the client and requires a clean loop (STYLE: uv_loop_close == 0). */
static int shutdown_loop(struct bench *b)
{
  int rc;

  gq_rq_close(b->rq);
  /* A fail() outside a callback left uv_stop()'s flag set, which ends the
   * first uv_run() early: run until nothing is left. */
  while (uv_run(&b->loop, UV_RUN_DEFAULT) != 0)
    ;
  rc = uv_loop_close(&b->loop);
  if (rc != 0)
    fprintf(stderr, "bench_queue: error: loop not clean at exit: %s\n",
            uv_strerror(rc));
  return rc;
}

int main(int argc, char **argv)
{
  struct bench b = {0};
  int rc;

  b.jobs = 1000;
  b.admits = 10000;
  b.teams = 100;
  b.ncohorts = 10;
  b.window = 500;
  b.pipeline = 10;
  gq_log_level = GQ_WARN;
  if (parse_args(&b, argc, argv) != 0)
    return 2;
  setup_cohorts(&b);
  /* On a failure the loop is closed all the same: the callbacks still owed
   * get GQ_ECANCELED, and fail() has made them no-ops. */
  rc = connect_redis(&b) == 0 && measure(&b) == 0 ? 0 : -1;
  if (b.rq && shutdown_loop(&b) != 0)
    rc = -1;
  free(b.head);
  free(b.tail);
  free(b.co);
  return rc == 0 ? 0 : 1;
}
