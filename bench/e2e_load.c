/* bench_e2e: the API-side half of bench/e2e (issue 7). See bench/README.md,
 * "bench/e2e". The script starts the processes; this program only talks to
 * the API server (gpuq-sim) through gpuq's own client (api/client.h), on
 * one libuv loop, with a bounded number of operations in flight.
 *
 *   bench_e2e --kubeconfig K setup --teams T --raw-ns NS
 *       Namespaces team-00.. and NS, and one TeamQuota per team (cohort
 *       "e2e", flavor "*", nominal 0: closed until "quotas" opens it).
 *   bench_e2e --kubeconfig K quotas --teams T --gpus G
 *       Sets the nominal quotas to G split evenly (they sum to G).
 *   bench_e2e --kubeconfig K load --teams T --jobs N [--window W]
 *           [--gpus-per-job G] [--run-min S] [--run-max S] [--seed X]
 *       Creates N single-replica GpuJobs of G GPUs (default 1), round-robin
 *       over the teams, each with the sim.gpuq.dev/run-seconds annotation
 *       drawn uniformly from [run-min, run-max] virtual seconds
 *       (expectedDurationSeconds the same), W in flight (default 64).
 *       Prints "load: jobs=N seconds=S per_s=R window=W".
 *   bench_e2e --kubeconfig K raw --jobs K --raw-ns NS [--qps Q] [--burst B]
 *           [--window W] (and load's --teams, --gpus-per-job, --run-*)
 *       The baseline: first (untimed) K GpuJobs in NS, made as load makes
 *       them; then, timed, for each one the writes gpuq makes when it
 *       admits a job: the pod that controller/podspec.c builds for it,
 *       pinned to node i mod M, and a GpuJob status merge patch like the
 *       controller's "Admitted" one. No decisions, no reads. The client has
 *       the controller's options (--qps/--burst as given to
 *       gpuq-controller's --kube-qps and --kube-burst; 0 = unlimited) and
 *       at most W jobs in flight (0 = no bound: every write is handed to
 *       the client at once, as the controller hands over a pass's writes).
 *       Prints "raw: jobs=K seconds=S jobs_per_s=R writes_per_s=2R ...".
 *   bench_e2e --kubeconfig K count PATH
 *       Prints how many objects the collection PATH (with its query, e.g.
 *       a labelSelector) holds, and the server's resourceVersion (one
 *       counter that every write advances): one list call with limit=1.
 *   bench_e2e --kubeconfig K watch [--seconds S]
 *       Watches gpuq's pods (label gpuq.dev/job) from now on, for S seconds
 *       (default 3600) or until SIGTERM, and prints one line per event
 *       that matters, with the real time it arrived (Unix ms): "MS C NAME"
 *       a pod was created, "MS F NAME" a pod freed its capacity (ended, or
 *       went while running); first "MS R RV", the resourceVersion it
 *       watches from (nothing after it is missed).
 *   bench_e2e --kubeconfig K mem PATH
 *       For the GpuJobs of the collection PATH (e.g.
 *       ".../namespaces/team-00/gpujobs"): the average size of their
 *       compact JSON, the heap bytes (mallinfo2) of their JSON trees as
 *       jansson builds them (what an informer that keeps JSON stores), and
 *       of their decoded form (gq_gpujob_decode: what gpuq's job cache
 *       keeps; it holds no reference to the tree), with the templates and
 *       decoded pod-scheduling records they share and the average size
 *       of a template's deflated text. Prints "mem: jobs=n
 *       json_text_bytes=X json_tree_bytes=Y decoded_bytes=Z templates=T
 *       scheds=S deflated_template_bytes=B".
 *
 * Any failed request ends the run with exit status 1 and the server's
 * message; nothing is counted unless the server confirmed it.
 */
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uthash.h>
#include <uv.h>

#include "api/client.h"
#include "api/gpujob.h"
#include "api/kubeconfig.h"
#include "api/node.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "controller/podspec.h"

#define COHORT "e2e"
#define MAX_ERRORS_SHOWN 5

/* One run of operations 0..total-1 with at most 'window' in flight. An
 * operation may issue several requests; it is done when all have
 * answered. */
struct drive {
  struct gq_kclient *kc;
  long total, next, inflight, done, window, errors;
  int (*start)(struct drive *d, long i); /* requests issued, or < 0 */
  void *arg;
  double t0, t1;
};

/* Per-operation state of a multi-request operation. */
struct op {
  struct drive *d;
  long i;
  int left;
};

static struct gq_kubeconfig cfg;

static double now_s(void)
{
  return (double)gq_clock_mono_ms() / 1000.0;
}

static void die(const char *fmt, const char *arg)
{
  fprintf(stderr, "bench_e2e: ");
  fprintf(stderr, fmt, arg);
  fputc('\n', stderr);
  exit(1);
}

static void pump(struct drive *d);

static void op_end(struct drive *d, int rc, const struct gq_k8s_status *st,
                   const char *what)
{
  if (rc != 0) {
    if (d->errors++ < MAX_ERRORS_SHOWN)
      fprintf(stderr, "bench_e2e: %s: %s (%d %s: %s)\n", what,
              gq_strerror(rc), st ? st->code : 0, st ? st->reason : "",
              st ? st->message : "");
  }
}

static void op_finish(struct drive *d)
{
  d->inflight--;
  d->done++;
  pump(d);
}

static void pump(struct drive *d)
{
  while (d->next < d->total && (d->window <= 0 || d->inflight < d->window)) {
    long i = d->next++;

    d->inflight++;
    if (d->start(d, i) < 0) {
      d->errors++;
      d->inflight--;
      d->done++;
    }
  }
  if (d->done == d->total && d->inflight == 0 && d->t1 == 0)
    d->t1 = now_s();
}

/* Runs d to the end on the loop. Returns the number of failed operations. */
static long drive_run(struct drive *d, uv_loop_t *loop)
{
  d->next = d->inflight = d->done = d->errors = 0;
  d->t0 = now_s();
  d->t1 = 0;
  pump(d);
  while (d->t1 == 0 && uv_run(loop, UV_RUN_ONCE))
    ;
  if (d->t1 == 0)
    die("%s", "the loop ended with operations in flight");
  return d->errors;
}

/* The one-request operations: the callback ends the operation. */
static void single_done(int rc, const struct gq_k8s_status *st,
                        const json_t *obj, void *arg)
{
  struct drive *d = arg;

  (void)obj;
  op_end(d, rc, st, "request");
  op_finish(d);
}

/* ---- setup and quotas ---------------------------------------------------- */

struct setup_ctx {
  int teams;
  const char *raw_ns;
  long gpus;
};

static void team_name(int t, char *buf, size_t len)
{
  snprintf(buf, len, "team-%02d", t);
}

static int start_ns(struct drive *d, long i)
{
  struct setup_ctx *s = d->arg;
  char name[64];
  json_t *o;
  int rc;

  if (i < s->teams)
    team_name((int)i, name, sizeof(name));
  else
    snprintf(name, sizeof(name), "%s", s->raw_ns);
  o = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
                "metadata", "name", name);
  rc = gq_kclient_create(d->kc, "/api/v1/namespaces", o, single_done, d);
  json_decref(o);
  return rc ? -1 : 1;
}

static json_t *quota_resources(const struct setup_ctx *s, long t)
{
  long share = s->gpus / s->teams + (t < s->gpus % s->teams ? 1 : 0);

  return json_pack("[{s:s,s:s,s:I}]", "flavor", "*", "resource",
                   GQ_DEFAULT_GPU_RESOURCE, "nominal", (json_int_t)share);
}

static int start_quota(struct drive *d, long i)
{
  struct setup_ctx *s = d->arg;
  char name[64];
  json_t *o;
  int rc;

  team_name((int)i, name, sizeof(name));
  o = json_pack("{s:s,s:s,s:{s:s},s:{s:[s],s:s,s:o}}", "apiVersion",
                GQ_API_VERSION, "kind", "TeamQuota", "metadata", "name", name,
                "spec", "namespaces", name, "cohort", COHORT, "resources",
                quota_resources(s, i));
  rc = gq_kclient_create(d->kc, "/apis/" GQ_GROUP "/" GQ_VERSION "/teamquotas",
                         o, single_done, d);
  json_decref(o);
  return rc ? -1 : 1;
}

static int start_quota_patch(struct drive *d, long i)
{
  struct setup_ctx *s = d->arg;
  char name[64], path[256];
  json_t *p;
  int rc;

  team_name((int)i, name, sizeof(name));
  snprintf(path, sizeof(path), "/apis/%s/%s/teamquotas/%s", GQ_GROUP,
           GQ_VERSION, name);
  p = json_pack("{s:{s:o}}", "spec", "resources", quota_resources(s, i));
  rc = gq_kclient_patch(d->kc, path, "merge", p, single_done, d);
  json_decref(p);
  return rc ? -1 : 1;
}

/* ---- load: the GpuJobs ---------------------------------------------------- */

struct load_ctx {
  int teams;
  const char *ns;   /* NULL: the team's namespace */
  long run_min, run_max;
  int gpus;         /* gpusPerReplica */
  uint64_t rng;
  json_t **keep;    /* if set, the created objects (new references) */
};

static uint64_t rnd(uint64_t *s) /* xorshift64* */
{
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

/* A GpuJob as a user writes one: a training container with arguments,
 * environment, requests and limits, a toleration and labels (about 1 KB of
 * JSON, like examples/gpujob-eval-single.yaml). */
static json_t *job_body(const struct load_ctx *l, long i, const char *ns,
                        const char *team, long run_s)
{
  char name[64], run[32], ckpt[256];

  snprintf(name, sizeof(name), "train-%06ld", i);
  snprintf(run, sizeof(run), "%ld", run_s);
  snprintf(ckpt, sizeof(ckpt), "--checkpoint-dir=s3://ml-checkpoints/%s/%s",
           team, name);
  return json_pack(
      "{s:s,s:s,s:{s:s,s:s,s:{s:s}},"
      "s:{s:s,s:i,s:i,s:I,s:{s:{s:{s:s,s:s},s:{s:s}},"
      "s:{s:s,s:[{s:s,s:s,s:[s,s,s],s:[{s:s,s:s},{s:s,s:s}],"
      "s:{s:{s:s,s:s},s:{s:s}}}],"
      "s:[{s:s,s:s,s:s}]}}}}",
      "apiVersion", GQ_API_VERSION, "kind", "GpuJob",
      "metadata", "name", name, "namespace", ns, "labels", "app", "e2e-train",
      "spec", "team", team, "priority", 0, "gpusPerReplica", l->gpus,
      "expectedDurationSeconds", (json_int_t)run_s,
      "template", "metadata", "annotations", "sim.gpuq.dev/run-seconds", run,
      "example.com/owner", team, "labels", "app", "e2e-train",
      "spec", "restartPolicy", "Never", "containers", "name", "train",
      "image", "ghcr.io/example/llm-train:1.4", "args", "--config=configs/sft.yaml",
      ckpt, "--log-every=100", "env", "name", "NCCL_DEBUG", "value", "WARN",
      "name", "HF_HOME", "value", "/cache/hf", "resources", "requests", "cpu",
      "4", "memory", "32Gi", "limits", "memory", "32Gi", "tolerations", "key",
      GQ_DEFAULT_GPU_RESOURCE, "operator", "Exists", "effect", "NoSchedule");
}

struct load_op {
  struct drive *d;
  long i;
};

static void job_created(int rc, const struct gq_k8s_status *st,
                        const json_t *obj, void *arg)
{
  struct load_op *x = arg;
  struct load_ctx *l = x->d->arg;

  op_end(x->d, rc, st, "create gpujob");
  if (rc == 0 && l->keep)
    l->keep[x->i] = json_incref((json_t *)obj);
  op_finish(x->d);
  free(x);
}

static int start_job(struct drive *d, long i)
{
  struct load_ctx *l = d->arg;
  struct load_op *x;
  char team[64], coll[256];
  const char *ns;
  long run_s = l->run_min;
  json_t *o;
  int rc;

  team_name((int)(i % l->teams), team, sizeof(team));
  ns = l->ns ? l->ns : team;
  if (l->run_max > l->run_min)
    run_s += (long)(rnd(&l->rng) % (uint64_t)(l->run_max - l->run_min + 1));
  snprintf(coll, sizeof(coll), "/apis/%s/%s/namespaces/%s/gpujobs", GQ_GROUP,
           GQ_VERSION, ns);
  o = job_body(l, i, ns, team, run_s);
  x = gq_xcalloc(1, sizeof(*x));
  x->d = d;
  x->i = i;
  rc = gq_kclient_create(d->kc, coll, o, job_created, x);
  json_decref(o);
  if (rc) {
    free(x);
    return -1;
  }
  return 1;
}

/* ---- raw: pod create + status patch per job ------------------------------ */

struct raw_ctx {
  json_t **jobs;         /* created GpuJobs */
  struct gq_gpujob *dec; /* decoded */
  struct gq_node *nodes;
  size_t n_nodes;
};

static void raw_part_done(int rc, const struct gq_k8s_status *st,
                          const json_t *obj, void *arg)
{
  struct op *x = arg;

  (void)obj;
  op_end(x->d, rc, st, "raw write");
  if (--x->left == 0) {
    op_finish(x->d);
    free(x);
  }
}

/* The status patch the controller sends when it admits a job on one node
 * (controller/status.c's desired() for phase Admitted). */
static json_t *admitted_patch(const struct gq_gpujob *j, const char *node)
{
  char now[64], msg[256];
  json_t *conds;

  gq_time_format(gq_clock_now_ms(), now, sizeof(now));
  snprintf(msg, sizeof(msg), "admitted on %s (flavor *)", node);
  conds = json_pack("[{s:s,s:s,s:s,s:s,s:I,s:s},{s:s,s:s,s:s,s:s,s:I,s:s},"
                    "{s:s,s:s,s:s,s:s,s:I,s:s}]",
                    "type", "Admitted", "status", "True", "reason", "Admitted",
                    "message", "the job holds its GPUs", "observedGeneration",
                    (json_int_t)1, "lastTransitionTime", now,
                    "type", "Running", "status", "False", "reason",
                    "NotRunning", "message", "not every replica is running",
                    "observedGeneration", (json_int_t)1,
                    "lastTransitionTime", now,
                    "type", "Finished", "status", "False", "reason",
                    "NotFinished", "message", "", "observedGeneration",
                    (json_int_t)1, "lastTransitionTime", now);
  return json_pack("{s:{s:s,s:s,s:s,s:I,s:n,s:n,s:s,s:s,s:[s],s:i,s:i,s:i,"
                   "s:I,s:o}}",
                   "status", "phase", "Admitted", "reason", "Admitted",
                   "message", msg, "gpus", (json_int_t)j->gpus,
                   "queuePosition", "estimatedStartTime", "queuedAt", now,
                   "admittedAt", now, "nodes", node, "attempts", 1,
                   "failedAttempts", 0, "preemptions", 0,
                   "observedGeneration", (json_int_t)1, "conditions", conds);
}

static int start_raw(struct drive *d, long i)
{
  struct raw_ctx *r = d->arg;
  const struct gq_gpujob *j = &r->dec[i];
  const struct gq_node *n = &r->nodes[(size_t)i % r->n_nodes];
  struct op *x = gq_xcalloc(1, sizeof(*x));
  char coll[256], path[400];
  json_t *pod, *patch;
  int issued = 0;

  x->d = d;
  x->i = i;
  x->left = 2;
  snprintf(coll, sizeof(coll), "/api/v1/namespaces/%s/pods", j->meta.ns);
  snprintf(path, sizeof(path), "/apis/%s/%s/namespaces/%s/gpujobs/%s/status",
           GQ_GROUP, GQ_VERSION, j->meta.ns, j->meta.name);
  pod = gq_podspec_pod(j, 1, 0, n, NULL);
  patch = admitted_patch(j, n->meta.name);
  if (gq_kclient_create(d->kc, coll, pod, raw_part_done, x) == 0)
    issued++;
  else
    x->left--;
  if (gq_kclient_patch(d->kc, path, "merge", patch, raw_part_done, x) == 0)
    issued++;
  else
    x->left--;
  json_decref(pod);
  json_decref(patch);
  if (issued == 0) {
    free(x);
    return -1;
  }
  if (issued == 1)
    d->errors++;
  return issued;
}

struct list_res {
  json_t *obj;
  int rc, done;
};

static void listed(int rc, const struct gq_k8s_status *st, const json_t *obj,
                   void *arg)
{
  struct list_res *l = arg;

  l->rc = rc;
  l->done = 1;
  if (rc == 0)
    l->obj = json_incref((json_t *)obj);
  else
    fprintf(stderr, "bench_e2e: list: %s (%s)\n", gq_strerror(rc),
            st ? st->message : "");
}

static json_t *list_all(struct gq_kclient *kc, uv_loop_t *loop,
                        const char *path)
{
  struct list_res l = {0};

  if (gq_kclient_list(kc, path, NULL, NULL, 500, listed, &l) != 0)
    die("cannot list %s", path);
  while (!l.done && uv_run(loop, UV_RUN_ONCE))
    ;
  if (!l.done || l.rc != 0)
    die("cannot list %s", path);
  return l.obj;
}

/* ---- count ------------------------------------------------------------- */

static void counted(int rc, const struct gq_k8s_status *st, const json_t *obj,
                    void *arg)
{
  struct list_res *l = arg;
  const json_t *md = json_object_get(obj, "metadata");

  l->done = 1;
  l->rc = rc;
  if (rc != 0) {
    fprintf(stderr, "bench_e2e: count: %s (%s)\n", gq_strerror(rc),
            st ? st->message : "");
    return;
  }
  printf("%lld %s\n",
         (long long)json_array_size(json_object_get(obj, "items")) +
             (long long)json_integer_value(
                 json_object_get(md, "remainingItemCount")),
         json_string_value(json_object_get(md, "resourceVersion")) ?: "0");
}

/* ---- mem: what a cached GpuJob costs in this process's heap ------------ */

static size_t heap_used(void)
{
  return mallinfo2().uordblks;
}

/* Reads the GpuJobs of a collection, then measures the heap bytes of
 * their JSON trees (json_loads of each compact text, as an informer that
 * keeps JSON holds them) and of their decoded form (gq_gpujob_decode,
 * which keeps no reference to the trees). */
static void run_mem(struct gq_kclient *kc, uv_loop_t *loop, const char *path)
{
  json_t *l = list_all(kc, loop, path), *items = json_object_get(l, "items");
  size_t n = json_array_size(items), text = 0, h0, h1, h2, nt, ns, nz;
  json_t **trees = gq_xcalloc(n ? n : 1, sizeof(*trees));
  struct gq_gpujob *dec = gq_xcalloc(n ? n : 1, sizeof(*dec));
  char **texts = gq_xcalloc(n ? n : 1, sizeof(*texts));
  char err[512];

  if (!n)
    die("mem: no objects at %s", path);
  for (size_t i = 0; i < n; i++) {
    texts[i] = json_dumps(json_array_get(items, i), JSON_COMPACT);
    text += strlen(texts[i]);
  }
  json_decref(l);
  h0 = heap_used();
  for (size_t i = 0; i < n; i++)
    if (!(trees[i] = json_loads(texts[i], 0, NULL)))
      die("%s", "mem: cannot parse a job back");
  h1 = heap_used();
  for (size_t i = 0; i < n; i++)
    if (gq_gpujob_decode(trees[i], &dec[i], err, sizeof(err)) != 0)
      die("mem: %s", err);
  h2 = heap_used();
  gq_gpujob_template_counts(&nt, &ns, &nz);
  printf("mem: jobs=%zu json_text_bytes=%zu json_tree_bytes=%zu "
         "decoded_bytes=%zu templates=%zu scheds=%zu "
         "deflated_template_bytes=%zu\n", n, text / n, (h1 - h0) / n,
         (h2 - h1) / n, nt, ns, nt ? nz / nt : 0);
  for (size_t i = 0; i < n; i++) {
    gq_gpujob_release(&dec[i]);
    json_decref(trees[i]);
    free(texts[i]);
  }
  free(trees);
  free(dec);
  free(texts);
}

/* ---- watch: when gpuq pods appear and when they free capacity ------------ */

struct seen {
  char *name;
  UT_hash_handle hh;
};

struct watcher {
  struct gq_kclient *kc;
  struct gq_kwatch *w;
  struct seen *freed;
  char rv[64];
  uv_timer_t end;
  uv_signal_t sigterm, sigint;
  int stopping;
};

static int pod_terminal(const json_t *o)
{
  const char *ph = json_string_value(
      json_object_get(json_object_get(o, "status"), "phase"));

  return ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"));
}

/* A pod frees its capacity once: when it ends, or when it goes while
 * still running. */
static void mark_freed(struct watcher *w, const char *name)
{
  struct seen *e;

  HASH_FIND_STR(w->freed, name, e);
  if (e)
    return;
  e = gq_xcalloc(1, sizeof(*e));
  e->name = gq_xstrdup(name);
  HASH_ADD_KEYPTR(hh, w->freed, e->name, strlen(e->name), e);
  printf("%lld F %s\n", (long long)gq_clock_real_ms(), name);
}

static void watch_event(enum gq_watch_type type, const json_t *obj, void *arg)
{
  struct watcher *w = arg;
  const json_t *md = json_object_get(obj, "metadata");
  const char *name = json_string_value(json_object_get(md, "name"));
  const char *rv = json_string_value(json_object_get(md, "resourceVersion"));

  if (rv)
    snprintf(w->rv, sizeof(w->rv), "%s", rv);
  if (!name || type == GQ_WATCH_BOOKMARK)
    return;
  if (type == GQ_WATCH_ADDED)
    printf("%lld C %s\n", (long long)gq_clock_real_ms(), name);
  if ((type == GQ_WATCH_MODIFIED && pod_terminal(obj)) ||
      (type == GQ_WATCH_DELETED && !pod_terminal(obj)))
    mark_freed(w, name);
}

static void watch_begin(struct watcher *w);

static void watch_end(int rc, const char *last_rv, void *arg)
{
  struct watcher *w = arg;

  w->w = NULL;
  if (w->stopping)
    return;
  if (rc != 0)
    die("watch ended: %s", gq_strerror(rc));
  if (last_rv && *last_rv)
    snprintf(w->rv, sizeof(w->rv), "%s", last_rv);
  watch_begin(w);
}

static void watch_begin(struct watcher *w)
{
  struct gq_kwatch_opts o = {0};

  o.path = "/api/v1/pods";
  o.resource_version = w->rv;
  o.label_selector = GQ_LBL_JOB;
  o.bookmarks = 1;
  o.timeout_s = 3600;
  w->w = gq_kwatch_start(w->kc, &o, watch_event, watch_end, w);
  if (!w->w)
    die("%s", "cannot start the pod watch");
}

static void watch_stop(struct watcher *w)
{
  if (w->stopping)
    return;
  w->stopping = 1;
  if (w->w)
    gq_kwatch_stop(w->w);
  uv_close((uv_handle_t *)&w->end, NULL);
  uv_close((uv_handle_t *)&w->sigterm, NULL);
  uv_close((uv_handle_t *)&w->sigint, NULL);
  fflush(stdout);
}

static void watch_timeout(uv_timer_t *t)
{
  watch_stop(t->data);
}

static void watch_signal(uv_signal_t *s, int signum)
{
  (void)signum;
  watch_stop(s->data);
}

static void rv_read(int rc, const struct gq_k8s_status *st, const json_t *obj,
                    void *arg)
{
  struct watcher *w = arg;
  const char *rv = json_string_value(json_object_get(
      json_object_get(obj, "metadata"), "resourceVersion"));

  if (rc != 0 || !rv)
    die("cannot read the pods' resourceVersion: %s",
        st ? st->message : gq_strerror(rc));
  snprintf(w->rv, sizeof(w->rv), "%s", rv);
  printf("%lld R %s\n", (long long)gq_clock_real_ms(), rv);
  fflush(stdout);
  watch_begin(w);
}

/* Prints "MS C NAME" when a gpuq pod is created, "MS F NAME" when one
 * frees its capacity (MS: real Unix ms when the watch event arrived),
 * after a first "MS R RV" once the watch's starting point is fixed (no
 * event after it is missed). Runs for 'seconds' or until SIGTERM. */
static void run_watch(struct gq_kclient *kc, uv_loop_t *loop, long seconds)
{
  struct watcher w = {0};
  struct seen *e, *tmp;

  setvbuf(stdout, NULL, _IOLBF, 0); /* the script reads it as it grows */
  w.kc = kc;
  uv_timer_init(loop, &w.end);
  uv_signal_init(loop, &w.sigterm);
  uv_signal_init(loop, &w.sigint);
  w.end.data = w.sigterm.data = w.sigint.data = &w;
  uv_timer_start(&w.end, watch_timeout, (uint64_t)seconds * 1000, 0);
  uv_signal_start(&w.sigterm, watch_signal, SIGTERM);
  uv_signal_start(&w.sigint, watch_signal, SIGINT);
  if (gq_kclient_get(kc, "/api/v1/pods?labelSelector=" GQ_LBL_JOB "&limit=1",
                     rv_read, &w) != 0)
    die("%s", "cannot list pods");
  while (!w.stopping && uv_run(loop, UV_RUN_ONCE))
    ;
  fflush(stdout);
  HASH_ITER(hh, w.freed, e, tmp) {
    HASH_DEL(w.freed, e);
    free(e->name);
    free(e);
  }
}

/* ---- main -------------------------------------------------------------- */

struct args {
  const char *kubeconfig, *mode, *raw_ns, *path;
  long teams, jobs, window, run_min, run_max, gpus, qps, burst, seed;
  long gpus_per_job, seconds;
};

static long num(const char *flag, const char *v)
{
  char *end;
  long n = v ? strtol(v, &end, 10) : 0;

  if (!v || !*v || *end || n < 0)
    die("%s: want a non-negative integer", flag);
  return n;
}

static void parse(int argc, char **argv, struct args *a)
{
  a->teams = 10;
  a->gpus_per_job = 1;
  a->window = 64;
  a->run_min = a->run_max = 600;
  a->seed = 7;
  a->raw_ns = "e2e-raw";
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

    if (!strcmp(f, "--kubeconfig") && v && ++i)
      a->kubeconfig = v;
    else if (!strcmp(f, "--raw-ns") && v && ++i)
      a->raw_ns = v;
    else if (!strcmp(f, "--teams") && ++i)
      a->teams = num(f, v);
    else if (!strcmp(f, "--jobs") && ++i)
      a->jobs = num(f, v);
    else if (!strcmp(f, "--window") && ++i)
      a->window = num(f, v);
    else if (!strcmp(f, "--run-min") && ++i)
      a->run_min = num(f, v);
    else if (!strcmp(f, "--run-max") && ++i)
      a->run_max = num(f, v);
    else if (!strcmp(f, "--gpus-per-job") && ++i)
      a->gpus_per_job = num(f, v);
    else if (!strcmp(f, "--gpus") && ++i)
      a->gpus = num(f, v);
    else if (!strcmp(f, "--qps") && ++i)
      a->qps = num(f, v);
    else if (!strcmp(f, "--burst") && ++i)
      a->burst = num(f, v);
    else if (!strcmp(f, "--seconds") && ++i)
      a->seconds = num(f, v);
    else if (!strcmp(f, "--seed") && ++i)
      a->seed = num(f, v);
    else if (*f != '-' && !a->mode)
      a->mode = f;
    else if (*f != '-' && a->mode && !a->path)
      a->path = f;
    else
      die("unknown or incomplete argument '%s' (see bench/e2e_load.c)", f);
  }
  if (!a->kubeconfig || !a->mode)
    die("%s", "usage: bench_e2e --kubeconfig K setup|quotas|load|raw|count ...");
  if (a->teams < 1 || a->teams > 100)
    die("%s", "--teams: want 1..100");
  if (a->gpus_per_job < 1 || a->gpus_per_job > 8)
    die("%s", "--gpus-per-job: want 1..8 (one node's GPUs)");
  if (a->run_max < a->run_min)
    a->run_max = a->run_min;
}

static void report_drive(const char *what, const struct drive *d)
{
  if (d->errors)
    die("%s: requests failed (first messages above)", what);
}

/* Raw: K GpuJobs (untimed), the nodes, then the timed writes. */
static void run_raw(const struct args *a, struct gq_kclient *kc,
                    struct gq_kclient *rkc, uv_loop_t *loop)
{
  struct load_ctx l = {0};
  struct raw_ctx r = {0};
  struct drive d = {0};
  json_t *nodes, *it;
  char err[512];
  size_t i;
  double s;

  l.teams = (int)a->teams;
  l.gpus = (int)a->gpus_per_job;
  l.ns = a->raw_ns;
  l.run_min = a->run_min;
  l.run_max = a->run_max;
  l.rng = (uint64_t)a->seed * 2 + 1;
  l.keep = gq_xcalloc((size_t)a->jobs, sizeof(*l.keep));
  d = (struct drive){.kc = kc, .total = a->jobs, .window = 64,
                     .start = start_job, .arg = &l};
  drive_run(&d, loop);
  report_drive("raw: create gpujobs", &d);
  nodes = list_all(kc, loop, "/api/v1/nodes");
  r.n_nodes = json_array_size(json_object_get(nodes, "items"));
  if (!r.n_nodes)
    die("%s", "raw: the cluster has no nodes");
  r.nodes = gq_xcalloc(r.n_nodes, sizeof(*r.nodes));
  json_array_foreach(json_object_get(nodes, "items"), i, it)
    if (gq_node_decode(it, NULL, &r.nodes[i], err, sizeof(err)) != 0)
      die("raw: node: %s", err);
  json_decref(nodes);
  r.jobs = l.keep;
  r.dec = gq_xcalloc((size_t)a->jobs, sizeof(*r.dec));
  for (long k = 0; k < a->jobs; k++)
    if (gq_gpujob_decode(r.jobs[k], &r.dec[k], err, sizeof(err)) != 0)
      die("raw: gpujob: %s", err);
  d = (struct drive){.kc = rkc, .total = a->jobs, .window = a->window,
                     .start = start_raw, .arg = &r};
  drive_run(&d, loop);
  report_drive("raw: writes", &d);
  s = d.t1 - d.t0;
  printf("raw: jobs=%ld seconds=%.3f jobs_per_s=%.1f writes_per_s=%.1f "
         "qps=%ld burst=%ld window=%ld\n", a->jobs, s, (double)a->jobs / s,
         2.0 * (double)a->jobs / s, a->qps, a->burst, a->window);
  for (long k = 0; k < a->jobs; k++) {
    gq_gpujob_release(&r.dec[k]);
    json_decref(r.jobs[k]);
  }
  for (i = 0; i < r.n_nodes; i++)
    gq_node_release(&r.nodes[i]);
  free(r.dec);
  free(r.jobs);
  free(r.nodes);
}

static void run_mode(const struct args *a, struct gq_kclient *kc,
                     struct gq_kclient *rkc, uv_loop_t *loop)
{
  struct setup_ctx s = {(int)a->teams, a->raw_ns, a->gpus};
  struct load_ctx l = {0};
  struct drive d = {.kc = kc, .window = a->window};

  if (!strcmp(a->mode, "setup")) {
    d.total = a->teams + 1;
    d.start = start_ns;
    d.arg = &s;
    drive_run(&d, loop);
    report_drive("setup: namespaces", &d);
    s.gpus = 0;
    d.total = a->teams;
    d.start = start_quota;
    drive_run(&d, loop);
    report_drive("setup: teamquotas", &d);
  } else if (!strcmp(a->mode, "quotas")) {
    d.total = a->teams;
    d.start = start_quota_patch;
    d.arg = &s;
    drive_run(&d, loop);
    report_drive("quotas", &d);
  } else if (!strcmp(a->mode, "load")) {
    l.teams = (int)a->teams;
    l.gpus = (int)a->gpus_per_job;
    l.run_min = a->run_min;
    l.run_max = a->run_max;
    l.rng = (uint64_t)a->seed * 2 + 1;
    d.total = a->jobs;
    d.start = start_job;
    d.arg = &l;
    drive_run(&d, loop);
    report_drive("load", &d);
    printf("load: jobs=%ld seconds=%.3f per_s=%.1f window=%ld\n", a->jobs,
           d.t1 - d.t0, (double)a->jobs / (d.t1 - d.t0), a->window);
  } else if (!strcmp(a->mode, "raw")) {
    run_raw(a, kc, rkc, loop);
  } else if (!strcmp(a->mode, "watch")) {
    run_watch(kc, loop, a->seconds ? a->seconds : 3600);
  } else if (!strcmp(a->mode, "mem")) {
    if (!a->path)
      die("%s", "mem: want a collection path");
    run_mem(kc, loop, a->path);
  } else if (!strcmp(a->mode, "count")) {
    struct list_res c = {0};
    char path[1024];

    if (!a->path)
      die("%s", "count: want a collection path");
    snprintf(path, sizeof(path), "%s%slimit=1", a->path,
             strchr(a->path, '?') ? "&" : "?");
    if (gq_kclient_get(kc, path, counted, &c) != 0)
      die("cannot get %s", path);
    while (!c.done && uv_run(loop, UV_RUN_ONCE))
      ;
    if (c.rc != 0)
      exit(1);
  } else {
    die("unknown mode '%s'", a->mode);
  }
}

int main(int argc, char **argv)
{
  struct args a = {0};
  struct gq_kclient_opts o = {0}, ro = {0};
  struct gq_kclient *kc, *rkc;
  uv_loop_t loop;
  char err[1024];

  json_set_alloc_funcs(gq_xmalloc, free);
  parse(argc, argv, &a);
  if (gq_kubeconfig_load(a.kubeconfig, NULL, &cfg, err, sizeof(err)) != 0)
    die("%s", err);
  uv_loop_init(&loop);
  /* The setup client is unlimited (bounded by the window); the raw client
   * has the controller's limiter. */
  o.qps = -1;
  o.burst = 1;
  o.user_agent = "bench-e2e";
  ro.qps = a.qps > 0 ? (double)a.qps : -1;
  ro.burst = a.burst > 0 ? (int)a.burst : 1;
  ro.user_agent = "bench-e2e-raw";
  if (gq_kclient_new(&loop, &cfg, &o, &kc, err, sizeof(err)) != 0 ||
      gq_kclient_new(&loop, &cfg, &ro, &rkc, err, sizeof(err)) != 0)
    die("%s", err);
  run_mode(&a, kc, rkc, &loop);
  gq_kclient_close(kc);
  gq_kclient_close(rkc);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  gq_kubeconfig_release(&cfg);
  return 0;
}
