/* controller/status.c - what gpuq tells users: GpuJob status (the status
 * subresource), events, TeamQuota status, and the gauges of /metrics.
 *
 * Writes are coalesced: the status gpuq wants is compared field by field
 * with the one the informer last saw (read back into struct
 * gq_gpujob_status: the cache keeps no JSON), and only the fields that
 * differ are sent as a JSON merge patch (RFC 7386); one write per job is
 * in flight at a time, and a change made meanwhile is sent when it
 * returns. Queue positions of the first GQ_CTL_POSITIONS_NOW jobs of each
 * team are kept exact (written at most once a second); the rest are coarse
 * (decide/position.h), refreshed by a bounded background sweep.
 */
#include "controller/ctl_int.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SWEEP_MAX 500      /* positions written per second by the sweep */
#define SWEEP_SCAN 20000   /* queued jobs it looks at per second */
#define STATUS_INFLIGHT 16 /* status writes in flight at once */
#define EVENTS_INFLIGHT 8  /* event writes in flight at once */
#define EVENTS_QUEUED 10000 /* events waiting; more are dropped */

static const struct gq_lc lc = {"controller", "status", NULL};

void status_set(struct cjob *cj, const char *reason, const char *fmt, ...)
{
  va_list ap;
  char buf[1024];

  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  cj->reason = reason;
  if (!cj->message || strcmp(cj->message, buf)) {
    gq_intern_release(cj->message);
    cj->message = gq_intern(buf); /* queued jobs' messages repeat */
  }
}

static json_t *time_json(int64_t ms)
{
  char buf[64];

  if (ms <= 0 || gq_time_format(ms, buf, sizeof(buf)) < 0)
    return json_null();
  return json_string(buf);
}

/* A time as gpuq writes it, or NULL (absent) for ms <= 0. */
static json_t *opt_time(int64_t ms)
{
  return ms > 0 ? time_json(ms) : NULL;
}

/* Equal as metav1.Time writes them (whole seconds). */
static int time_same(int64_t a, int64_t b)
{
  return a > 0 && b > 0 ? a / 1000 == b / 1000 : a <= 0 && b <= 0;
}

/* Adds key to patch when the status read back (st) differs from want
 * (taken; NULL: the field should be absent). 'same' says whether the value
 * read back equals want, when the field is there in a readable form. */
static void field(json_t *patch, const struct gq_gpujob_status *st,
                  unsigned bit, const char *key, json_t *want, int same)
{
  int has = (st->has & bit) != 0;

  if (!want) {
    if (has)
      json_object_set_new(patch, key, json_null());
  } else if (!has || (st->bad & bit) || !same) {
    json_object_set_new(patch, key, want);
  } else {
    json_decref(want);
  }
}

static void time_field(json_t *patch, const struct gq_gpujob_status *st,
                       unsigned bit, const char *key, int64_t want,
                       int64_t cur)
{
  field(patch, st, bit, key, opt_time(want), time_same(want, cur));
}

static int str_same(const char *a, const char *b)
{
  return a && b && !strcmp(a, b);
}

/* One metav1.Condition gpuq wants. */
struct cond {
  const char *type, *status, *reason, *message;
  int64_t transition_ms;
};

/* Fills the condition 'type' with its lastTransitionTime kept when the
 * status read back has it with the same status (Kubernetes API
 * conventions: conditions). */
static void job_condition_s(struct cond *w,
                            const struct gq_gpujob_status *st,
                            const char *type, const char *status,
                            const char *reason, const char *msg)
{
  const struct gq_gpujob_cond *old = NULL;

  for (size_t i = 0; i < st->n_conds; i++)
    if (str_same(st->conds[i].type, type))
      old = &st->conds[i];
  w->type = type;
  w->status = status;
  w->reason = reason;
  w->message = msg;
  w->transition_ms = old && str_same(old->status, w->status)
                         ? old->transition_ms
                         : gq_clock_now_ms();
}

static void job_condition(struct cond *w, const struct gq_gpujob_status *st,
                          const char *type, int on, const char *reason,
                          const char *msg)
{
  job_condition_s(w, st, type, on ? "True" : "False", reason, msg);
}

static void conditions_field(json_t *patch, const struct gq_gpujob_status *st,
                             const struct cond *w, size_t n, int64_t gen)
{
  int same = st->n_conds == n;
  json_t *list;

  for (size_t i = 0; same && i < n; i++) {
    const struct gq_gpujob_cond *o = &st->conds[i];

    same = str_same(o->type, w[i].type) && str_same(o->status, w[i].status) &&
           str_same(o->reason, w[i].reason) &&
           str_same(o->message, w[i].message) &&
           time_same(o->transition_ms, w[i].transition_ms) &&
           o->observed_generation == gen;
  }
  if (same && (st->has & GQ_ST_CONDITIONS) && !(st->bad & GQ_ST_CONDITIONS))
    return;
  list = json_array();
  for (size_t i = 0; i < n; i++) {
    json_t *c = json_pack("{s:s,s:s,s:s,s:s,s:I}", "type", w[i].type,
                          "status", w[i].status, "reason", w[i].reason,
                          "message", w[i].message, "observedGeneration",
                          (json_int_t)gen);
    json_t *t = opt_time(w[i].transition_ms);

    if (t)
      json_object_set_new(c, "lastTransitionTime", t);
    json_array_append_new(list, c);
  }
  json_object_set_new(patch, "conditions", list);
}

/* status.nodes: the nodes of the admitted attempt (none when not
 * admitted; left alone while admitted without a node array). */
static void nodes_field(json_t *p, const struct gq_gpujob_status *st,
                        const struct cjob *cj, int admitted)
{
  json_t *nodes;

  if (admitted && cj->nodes) {
    int same = (int32_t)st->n_nodes == cj->replicas;

    nodes = json_array();
    for (int32_t i = 0; i < cj->replicas; i++) {
      json_array_append_new(nodes, json_string(cj->nodes[i]));
      same = same && !strcmp(st->nodes[i], cj->nodes[i]);
    }
    field(p, st, GQ_ST_NODES, "nodes", nodes, same);
  } else if (!admitted) {
    field(p, st, GQ_ST_NODES, "nodes", NULL, 1);
  }
}

/* status.conditions: Admitted, Running, Preempted, Checkpointed, Finished
 * (DESIGN §8). */
/* The condition type as the status read back has it (a condition gpuq no
 * longer computes, such as a finished job's Idle once its usage record is
 * freed, stays as it was). Returns 1 if there is one. */
static int kept_condition(struct cond *w, const struct gq_gpujob_status *st,
                          const char *type)
{
  for (size_t i = 0; i < st->n_conds; i++) {
    const struct gq_gpujob_cond *o = &st->conds[i];

    if (str_same(o->type, type) && o->status && o->reason && o->message) {
      *w = (struct cond){o->type, o->status, o->reason, o->message,
                         o->transition_ms};
      return 1;
    }
  }
  return 0;
}

static void conditions(json_t *p, const struct gq_gpujob_status *st,
                       const struct cjob *cj, int admitted, int final,
                       int64_t gen, const struct usage_view *u)
{
  struct cond w[6];

  job_condition(&w[0], st, "Admitted", admitted || cj->running,
                admitted ? "Admitted" : cj->reason[0] ? cj->reason : "Pending",
                admitted ? "the job holds its GPUs" : "the job holds no GPUs");
  job_condition(&w[1], st, "Running", cj->running,
                cj->running ? "Running" : "NotRunning",
                cj->running ? "every replica is running"
                            : "not every replica is running");
  job_condition(&w[2], st, "Preempted", cj->preempted,
                !cj->preempted ? "NotPreempted"
                : cj->cause    ? cj->cause
                               : "Disrupted",
                cj->preempted && cj->cause_msg ? cj->cause_msg : "");
  job_condition(&w[3], st, "Checkpointed", cj->ckpt != NULL,
                cj->ckpt ? "Checkpointed" : "NoCheckpoint",
                cj->ckpt ? cj->ckpt : "no checkpoint written yet");
  job_condition(&w[4], st, "Finished", final,
                final ? cj->reason : "NotFinished",
                final && cj->message ? cj->message : "");
  if (u->cond) /* allocated against used GPUs (usage.c) */
    job_condition_s(&w[5], st, "Idle", u->cond_status, u->cond_reason,
                    u->cond_msg);
  /* else a finished job keeps the Idle condition it has */
  conditions_field(p, st, w,
                   u->cond || kept_condition(&w[5], st, "Idle") ? 6 : 5, gen);
}

/* 1 if the allocatedGPUSeconds written (have) may stay for want: equal,
 * or, while the job runs (the figure grows every second), behind by less
 * than its GPUs over lag_s seconds. A running job's figure alone would
 * otherwise make every look at it a status write; it goes
 * out with any other change, when the job stops (exact then), or once it
 * lags by lag_s. */
static int alloc_same(int64_t have, int64_t want, int running, int64_t gpus,
                      int64_t lag_s)
{
  return have == want ||
         (running && have < want && want - have < gpus * lag_s);
}

/* The usage fields (issue 22): GPU-seconds once the job has run, the
 * utilization while it is read. allocatedGPUSeconds of a running job is
 * refreshed only with another change of the patch p, or once it lags by
 * the utilization window (alloc_same). */
static void usage_fields(json_t *p, const struct gq_gpujob_status *st,
                         const struct usage_view *u, const struct ctl *c,
                         const struct cjob *cj)
{
  static const struct gq_gpujob_usage none = {.util_pct = -1};
  const struct gq_gpujob_usage *su = st->usage ? st->usage : &none;

  if (!u->has)
    return;
  if (u->product)
    field(p, st, GQ_ST_FLAVOR, "flavor", json_string(u->product),
          str_same(su->flavor, u->product));
  field(p, st, GQ_ST_USED, "usedGPUSeconds", json_integer(u->used_s),
        su->used_s == u->used_s);
  field(p, st, GQ_ST_IDLE, "idleGPUSeconds", json_integer(u->idle_s),
        su->idle_s == u->idle_s);
  field(p, st, GQ_ST_UTIL, "gpuUtilization",
        u->pct >= 0 ? json_integer(u->pct) : NULL, su->util_pct == u->pct);
  if (u->pct_ms)
    time_field(p, st, GQ_ST_UTIL_TIME, "utilizationTime", u->pct_ms,
               su->util_ms);
  field(p, st, GQ_ST_ALLOC, "allocatedGPUSeconds", json_integer(u->alloc_s),
        json_object_size(p) == 0 &&
            alloc_same(su->alloc_s, u->alloc_s, cj->running, cj->gpus,
                       c->o.util_window_s));
}

/* The status merge patch (top-level fields) that turns the status read
 * back from j into the one gpuq wants for cj: field by field, only what
 * differs. */
static json_t *status_patch(const struct ctl *c, const struct cjob *cj,
                            const struct gq_gpujob *j)
{
  struct usage_view u;
  const struct gq_gpujob_status *st = &j->status;
  json_t *p = json_object();
  const char *ph = gq_job_phase_name(cj->phase);
  const char *msg = cj->message ? cj->message : "";
  int64_t gen = j->meta.generation, attempts;
  int admitted = cj->phase == GQ_PHASE_ADMITTED ||
                 cj->phase == GQ_PHASE_RUNNING ||
                 cj->phase == GQ_PHASE_PREEMPTING;
  int final = gq_job_phase_final(cj->phase);

  field(p, st, GQ_ST_PHASE, "phase", *ph ? json_string(ph) : NULL,
        st->phase == cj->phase);
  field(p, st, GQ_ST_REASON, "reason", json_string(cj->reason),
        str_same(st->reason, cj->reason));
  field(p, st, GQ_ST_MESSAGE, "message", json_string(msg),
        str_same(st->message, msg));
  field(p, st, GQ_ST_GPUS, "gpus", json_integer(cj->gpus),
        st->gpus == cj->gpus);
  field(p, st, GQ_ST_POSITION, "queuePosition",
        cj->position > 0 ? json_integer(cj->position) : NULL,
        st->position == cj->position);
  time_field(p, st, GQ_ST_ETA, "estimatedStartTime",
             cj->phase == GQ_PHASE_QUEUED ? cj->eta_ms : 0, st->eta_ms);
  time_field(p, st, GQ_ST_QUEUED, "queuedAt", cj->queued_ms, st->queued_ms);
  time_field(p, st, GQ_ST_ADMITTED, "admittedAt", cj->admitted_ms,
             st->admitted_ms);
  time_field(p, st, GQ_ST_START, "startTime", cj->first_start_ms,
             st->start_ms);
  time_field(p, st, GQ_ST_COMPLETION, "completionTime",
             final ? cj->completion_ms : 0, st->completion_ms);
  nodes_field(p, st, cj, admitted);
  /* an attempt is published once its pods exist: while its admission or
   * its pod creates are in flight, a controller restarted meanwhile must
   * admit that same attempt again (same pod names, so a create still in
   * flight gets 409) rather than start a second pod generation; but the
   * record of a teardown (jobs.c teardown()) names the attempt it ends */
  attempts = cj->attempt -
             ((cj->state == CJ_ADMITTING || cj->creates_left > 0) &&
              !(cj->state == CJ_TEARDOWN && gq_life_td_record(cj->td)));
  field(p, st, GQ_ST_ATTEMPTS, "attempts", json_integer(attempts),
        st->attempts == attempts);
  field(p, st, GQ_ST_FAILURES, "failedAttempts", json_integer(cj->failures),
        st->failures == cj->failures);
  field(p, st, GQ_ST_PREEMPTIONS, "preemptions",
        json_integer(cj->preemptions), st->preemptions == cj->preemptions);
  field(p, st, GQ_ST_SERVICE, "attainedGPUSeconds",
        cj->service_s > 0 ? json_integer(cj->service_s) : NULL,
        st->service_s == cj->service_s);
  field(p, st, GQ_ST_GENERATION, "observedGeneration", json_integer(gen),
        st->observed_generation == gen);
  if (cj->ckpt) {
    field(p, st, GQ_ST_CHECKPOINT, "lastCheckpoint",
          json_pack("{s:s,s:o}", "location", cj->ckpt, "time",
                    time_json(cj->ckpt_ms)),
          str_same(st->checkpoint, cj->ckpt) &&
              time_same(st->checkpoint_ms, cj->ckpt_ms));
  }
  usage_status(c, cj, &u);
  conditions(p, st, cj, admitted, final, gen, &u);
  usage_fields(p, st, &u, c, cj); /* last: it sees the rest of the patch */
  return p;
}

/* One metav1.Condition, keeping its lastTransitionTime when its status is
 * unchanged (Kubernetes API conventions: conditions). */
static void condition(json_t *list, const json_t *cur, const char *type,
                      int on, const char *reason, const char *msg,
                      int64_t gen)
{
  const json_t *old = NULL, *e;
  size_t i;
  json_t *cnd;
  const char *st = on ? "True" : "False";

  json_array_foreach(cur, i, e) {
    if (!strcmp(json_string_value(json_object_get(e, "type")) ?: "", type))
      old = e;
  }
  cnd = json_pack("{s:s,s:s,s:s,s:s,s:I}", "type", type, "status", st,
                  "reason", reason, "message", msg, "observedGeneration",
                  (json_int_t)gen);
  if (old &&
      !strcmp(json_string_value(json_object_get(old, "status")) ?: "", st))
    json_object_set(cnd, "lastTransitionTime",
                    json_object_get(old, "lastTransitionTime"));
  else
    json_object_set_new(cnd, "lastTransitionTime",
                        time_json(gq_clock_now_ms()));
  json_array_append_new(list, cnd);
}

/* The merge patch that turns cur into want (top-level fields). */
static json_t *diff(const json_t *cur, json_t *want)
{
  json_t *patch = json_object(), *v;
  const char *k;

  json_object_foreach(want, k, v) {
    const json_t *o = json_object_get(cur, k);

    if (json_is_null(v) ? o != NULL : !json_equal(o, v))
      json_object_set(patch, k, v);
  }
  return patch;
}

struct status_ctx {
  struct ctl *c;
  char *uid;
  int final; /* the job had ended when the write was sent */
};

/* Real ms a status write waits at most for the informer to show the
 * job's last write before it is computed from the cache as it is. */
#define OBSERVE_MS 1000

/* ---- writes wait for their predecessor's result ------------------------ *
 * A status patch (and the finalizer's) is the difference between what gpuq
 * wants and the cached object. Computed before the informer has shown the
 * job's previous write, it repeats that write's fields, and restamps the
 * lastTransitionTime of every condition whose cached status is stale: in
 * bursts, when watch events lag, that was one extra write in three. So
 * a job's next write waits for the version its last write returned (by
 * resourceVersion equality, the only comparison the API conventions
 * allow), for OBSERVE_MS at most (the tick lets it go then). Final
 * statuses never wait. */

/* Keeps the resourceVersion of a successful write's answer obj. */
static void status_wrote(struct cjob *cj, const json_t *obj)
{
  const char *rv = gq_meta_str(obj, "resourceVersion");

  free(cj->wrote_rv);
  cj->wrote_rv = rv && *rv ? gq_xstrdup(rv) : NULL;
  cj->wrote_ms = gq_clock_mono_ms();
}

/* 1 if cj's cached object j is older than what its last write returned,
 * and the wait for it is not over. */
static int behind(const struct cjob *cj, const struct gq_gpujob *j)
{
  return cj->wrote_rv && j &&
         strcmp(j->meta.resource_version ? j->meta.resource_version : "",
                cj->wrote_rv) != 0 &&
         gq_clock_mono_ms() - cj->wrote_ms < OBSERVE_MS;
}

/* cj's waiting status write goes now. */
static void release_wait(struct ctl *c, struct cjob *cj)
{
  if (!cj->status_wait)
    return;
  cj->status_wait = 0;
  c->status_waiting--;
  status_flush(c, cj);
}

void status_seen(struct ctl *c, struct cjob *cj, const json_t *o)
{
  if (!cj || !cj->wrote_rv ||
      strcmp(gq_meta_str(o, "resourceVersion"), cj->wrote_rv) != 0)
    return;
  free(cj->wrote_rv);
  cj->wrote_rv = NULL;
  release_wait(c, cj);
}

void status_tick(struct ctl *c)
{
  struct cjob *cj, *tmp;

  if (!c->status_waiting)
    return;
  HASH_ITER(hh, c->jobs, cj, tmp)
    if (cj->status_wait && !behind(cj, ctl_job_obj(c, cj)))
      release_wait(c, cj);
}

static void pump(struct ctl *c);
static void send_event(struct ctl *c);

static void status_done(int rc, const struct gq_k8s_status *st,
                        const json_t *obj, void *arg)
{
  struct status_ctx *x = arg;
  struct ctl *c = x->c;
  struct cjob *cj = ctl_job(x->c, x->uid);

  ctl_write_end(x->c);
  if (x->final)
    x->c->s_inflight_final--;
  else
    x->c->s_inflight--;
  if (rc != 0 && rc != GQ_ENOTFOUND)
    ctl_api_error(x->c, "patch", "gpujob status", rc, st);
  if (cj) {
    cj->status_inflight = 0;
    if (rc == 0 && obj)
      status_wrote(cj, obj);
    if (cj->status_again || (rc != 0 && rc != GQ_ENOTFOUND)) {
      cj->status_again = 0;
      status_flush(x->c, cj);
    } else if (rc == 0 && x->final) {
      usage_forget(cj); /* its final usage is written: the status keeps it */
    }
  }
  free(x->uid);
  free(x);
  pump(c);
}

/* 1 if cj's status is its last: it ended and holds nothing. */
static int final_status(const struct cjob *cj)
{
  return gq_job_phase_final(cj->phase) && !cj->running;
}

/* Sends cj's status difference now, if there is one. */
static void send_status(struct ctl *c, struct cjob *cj)
{
  const struct gq_gpujob *j = ctl_job_obj(c, cj);
  json_t *patch, *body;
  struct status_ctx *x;
  char path[700];

  if (!j)
    return;
  patch = status_patch(c, cj, j);
  if (json_object_size(patch) == 0) {
    json_decref(patch);
    return;
  }
  body = json_pack("{s:o}", "status", patch);
  snprintf(path, sizeof(path), "/apis/%s/%s/namespaces/%s/gpujobs/%s/status",
           GQ_GROUP, GQ_VERSION, cj->ns, cj->name);
  x = gq_xcalloc(1, sizeof(*x));
  x->c = c;
  x->uid = gq_xstrdup(cj->uid);
  x->final = final_status(cj);
  cj->status_inflight = 1;
  if (x->final)
    c->s_inflight_final++;
  else
    c->s_inflight++;
  ctl_write_begin(c);
  if (gq_kclient_patch_how(c->kc, path, "merge", body,
                           x->final ? CTL_FINAL : CTL_REPORT_JOB, status_done,
                           x) != 0) {
    ctl_write_end(c);
    if (x->final)
      c->s_inflight_final--;
    else
      c->s_inflight--;
    cj->status_inflight = 0;
    free(x->uid);
    free(x);
  }
  json_decref(body);
}

static struct cjob *lane_pop(struct ctl *c, int lane)
{
  struct cjob *cj = c->sq[lane];

  if (cj) {
    DL_DELETE2(c->sq[lane], cj, sprev, snext);
    cj->sprev = cj->snext = NULL;
    cj->sq = 0;
  }
  return cj;
}

/* Sends queued status writes, the lanes in order, while fewer than
 * STATUS_INFLIGHT of their kind (final or not) are in flight, and events
 * while fewer than EVENTS_INFLIGHT are. */
static void pump(struct ctl *c)
{
  struct cjob *cj;

  if (!c)
    return;
  while (ctl_acting(c)) {
    cj = c->s_inflight_final < STATUS_INFLIGHT
             ? lane_pop(c, CTL_LANE_FINAL)
             : NULL;
    for (int lane = CTL_LANE_FINAL + 1;
         !cj && lane < CTL_LANES && c->s_inflight < STATUS_INFLIGHT; lane++)
      cj = lane_pop(c, lane);
    if (!cj)
      break;
    send_status(c, cj);
  }
  while (c->ev_inflight < EVENTS_INFLIGHT && c->ev_head && ctl_acting(c))
    send_event(c);
}

/* Puts cj at the back of lane (it is in none). */
static void lane_push(struct ctl *c, struct cjob *cj, int lane)
{
  cj->sq = (unsigned char)(lane + 1);
  DL_APPEND2(c->sq[lane], cj, sprev, snext);
}

void status_flush(struct ctl *c, struct cjob *cj)
{
  int lane = final_status(cj)                                   ? CTL_LANE_FINAL
             : cj->state == CJ_QUEUED || cj->state == CJ_WAITING ? CTL_LANE_QUEUED
                                                                 : CTL_LANE_URGENT;

  if (!ctl_acting(c))
    return;
  if (cj->status_inflight) {
    cj->status_again = 1;
    return;
  }
  if (lane != CTL_LANE_FINAL && behind(cj, ctl_job_obj(c, cj))) {
    if (!cj->status_wait) { /* status_seen or status_tick sends it */
      cj->status_wait = 1;
      c->status_waiting++;
    }
    return;
  }
  if (cj->sq > lane + 1) /* waiting in a later lane: it moves up */
    status_forget(c, cj);
  if (!cj->sq)
    lane_push(c, cj, lane);
  pump(c);
}

void status_refresh(struct ctl *c, struct cjob *cj)
{
  if (!ctl_acting(c) || cj->status_inflight || cj->sq)
    return; /* what is in flight or queued carries the figures too */
  lane_push(c, cj, CTL_LANE_REFRESH);
  pump(c);
}

/* Takes cj out of the status lanes (it is being freed). */
void status_forget(struct ctl *c, struct cjob *cj)
{
  if (!cj->sq)
    return;
  DL_DELETE2(c->sq[cj->sq - 1], cj, sprev, snext);
  cj->sprev = cj->snext = NULL;
  cj->sq = 0;
}

static void event_done(int rc, const struct gq_k8s_status *st,
                       const json_t *obj, void *arg)
{
  struct ctl *c = arg;

  (void)obj;
  ctl_write_end(c);
  c->ev_inflight--;
  if (rc != 0)
    ctl_api_error(c, "create", "event", rc, st);
  pump(c);
}

static void free_event(struct cevent *e)
{
  free(e->uid);
  free(e->type);
  free(e->reason);
  free(e->msg);
  free(e);
}

static void post_event(struct ctl *c, const json_t *obj,
                       const struct cevent *e)
{
  c->ev_inflight++;
  ctl_write_begin(c);
  if (gq_kclient_event_how(c->kc, obj, e->type, e->reason, e->msg,
                           GQ_CTL_COMPONENT, CTL_REPORT, event_done,
                           c) != 0) {
    ctl_write_end(c);
    c->ev_inflight--;
  }
}

/* A stand-in's events go to its workload as well (its first pod, or its
 * Job), where `kubectl describe` shows them. */
static void workload_event(struct ctl *c, const struct gq_gpujob *j,
                           const struct cevent *e)
{
  int job = j->wl_kind == GQ_WL_JOB;
  json_t *obj;

  if (j->wl_kind == GQ_WL_NONE || (!job && j->n_wl_pods == 0))
    return;
  obj = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion",
                  job ? "batch/v1" : "v1", "kind", job ? "Job" : "Pod",
                  "metadata", "name", job ? j->wl_name : j->wl_pods[0],
                  "namespace", j->meta.ns);
  post_event(c, obj, e);
  json_decref(obj);
}

/* Sends the first queued event (its job may be gone by now: then it is
 * dropped). */
static void send_event(struct ctl *c)
{
  struct cevent *e = c->ev_head;
  struct cjob *cj = ctl_job(c, e->uid);
  const struct gq_gpujob *j = cj ? ctl_job_obj(c, cj) : NULL;

  c->ev_head = e->next;
  if (!c->ev_head)
    c->ev_tail = NULL;
  c->ev_n--;
  if (j) { /* involvedObject: the fields gq_kclient_event reads */
    json_t *obj = json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "apiVersion",
                            GQ_API_VERSION, "kind", "GpuJob", "metadata",
                            "name", j->meta.name, "namespace", j->meta.ns,
                            "uid", j->meta.uid);

    post_event(c, obj, e);
    json_decref(obj);
    workload_event(c, j, e);
  }
  free_event(e);
}

void status_event(struct ctl *c, struct cjob *cj, const char *type,
                  const char *reason, const char *fmt, ...)
{
  static struct gq_log_limit lim = {.interval_ms = 10000};
  struct cevent *e;
  char buf[1024];
  va_list ap;

  if (!ctl_acting(c))
    return;
  if (c->ev_n >= EVENTS_QUEUED) { /* as client-go's recorder: drop, say so */
    GQ_LOG_LIMITED(&lim, GQ_WARN, &lc, "event queue full (%u): dropping "
                   "event %s for %s", c->ev_n, reason, cj->key);
    return;
  }
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  e = gq_xcalloc(1, sizeof(*e));
  e->uid = gq_xstrdup(cj->uid);
  e->type = gq_xstrdup(type);
  e->reason = gq_xstrdup(reason);
  e->msg = gq_xstrdup(buf);
  if (c->ev_tail)
    c->ev_tail->next = e;
  else
    c->ev_head = e;
  c->ev_tail = e;
  c->ev_n++;
  pump(c);
}

/* Frees the events still queued (at stop). */
void status_drop_events(struct ctl *c)
{
  struct cevent *e, *n;

  for (e = c->ev_head; e; e = n) {
    n = e->next;
    free_event(e);
  }
  c->ev_head = c->ev_tail = NULL;
  c->ev_n = 0;
}

/* ---- finalizer (metadata; a JSON patch guarded by a test op) ---------- */

struct fin_ctx {
  struct ctl *c;
  char *uid;
};

static void fin_done(int rc, const struct gq_k8s_status *st, const json_t *obj,
                     void *arg)
{
  struct fin_ctx *x = arg;
  struct ctl *c = x->c;
  struct cjob *cj = ctl_job(c, x->uid);

  ctl_write_end(c);
  if (cj) {
    cj->fin_inflight = 0;
    if (rc == 0 && obj)
      status_wrote(cj, obj);
  }
  if (rc != 0 && rc != GQ_ENOTFOUND && rc != GQ_ECONFLICT &&
      rc != GQ_EINVAL) { /* not written: again after the job's backoff */
    ctl_api_error(c, "patch", "gpujob finalizers", rc, st);
    wq_retry(c, ctl_job(c, x->uid));
  }
  /* a conflict changes nothing we would see: reconcile again now (a
   * failed test op is followed by the watch event of the change) */
  if (rc == GQ_ECONFLICT)
    ctl_mark(c, ctl_job(c, x->uid));
  free(x->uid);
  free(x);
}

void status_finalizer(struct ctl *c, struct cjob *cj,
                      const struct gq_gpujob *j, int add)
{
  json_t *fin = j->finalizers ? json_array() : NULL, *list = json_array(),
         *patch;
  struct fin_ctx *x;
  int has = 0;
  char path[700];

  for (size_t i = 0; i < j->n_finalizers; i++) {
    json_array_append_new(fin, json_string(j->finalizers[i]));
    if (!strcmp(j->finalizers[i], GQ_FINALIZER))
      has = 1;
    else
      json_array_append_new(list, json_string(j->finalizers[i]));
  }
  /* one patch at a time, and no add from a cache that does not show the
   * last write yet (it would send the same change again; a removal, at
   * deletion, never waits) */
  if (has == add || !ctl_acting(c) || cj->fin_inflight ||
      (add && behind(cj, j))) {
    json_decref(list);
    json_decref(fin);
    return;
  }
  if (add)
    json_array_append_new(list, json_string(GQ_FINALIZER));
  /* test the list we read, so that a concurrent change is not lost (the
   * server answers 422/409 and the next reconcile tries again) */
  patch = json_pack("[{s:s,s:s,s:o},{s:s,s:s,s:o}]", "op", "test", "path",
                    "/metadata/finalizers", "value",
                    fin ? json_incref(fin) : json_null(), "op",
                    fin ? "replace" : "add", "path", "/metadata/finalizers",
                    "value", list);
  if (!fin) /* no list yet: a test of a missing member would fail */
    json_array_remove(patch, 0);
  snprintf(path, sizeof(path), "/apis/%s/%s/namespaces/%s/gpujobs/%s",
           GQ_GROUP, GQ_VERSION, cj->ns, cj->name);
  x = gq_xcalloc(1, sizeof(*x));
  x->c = c;
  x->uid = gq_xstrdup(cj->uid);
  ctl_write_begin(c);
  cj->fin_inflight = 1;
  if (gq_kclient_patch_how(c->kc, path, "json", patch, CTL_WORK_JOB, fin_done,
                           x) != 0) {
    ctl_write_end(c);
    cj->fin_inflight = 0;
    free(x->uid);
    free(x);
  }
  json_decref(patch);
  json_decref(fin);
}

/* ---- queue positions -------------------------------------------------- */

/* Writes queue[i]'s position if the policy says so; returns 1 if it did. */
static int position(struct ctl *c, struct cteam *t, size_t i)
{
  struct cjob *cj = t->q[i];

  if (!gq_position_due(cj->position, (int64_t)i + 1,
                           GQ_CTL_POSITIONS_NOW))
    return 0;
  cj->position = (int64_t)i + 1;
  status_flush(c, cj);
  return 1;
}

void status_positions(struct ctl *c, struct cteam *t, size_t upto)
{
  for (size_t i = 0; i < t->n && i < upto; i++)
    position(c, t, i);
}

/* One slice of the background sweep (every sweep_ms): the first positions
 * of each team if a second has passed since they were last refreshed (by
 * a pass or a slice), then the coarse ones beyond: it looks at up to
 * SWEEP_SCAN and writes up to SWEEP_MAX jobs a second, in slices of
 * sweep_ms (small slices: a freed slot is refilled on the next loop turn,
 * not after a long sweep), resuming where the last slice stopped (over all
 * teams, in the hash's iteration order). */
void status_sweep(struct ctl *c)
{
  struct cteam *t, *tt;
  size_t seen = 0, looked = 0, done = 0, start = c->sweep_cursor;
  size_t scan = (size_t)(SWEEP_SCAN * c->o.sweep_ms / 1000) + 1;
  size_t max = (size_t)(SWEEP_MAX * c->o.sweep_ms / 1000) + 1;

  if (gq_clock_mono_ms() - c->pos_ms >= 1000) {
    c->pos_ms = gq_clock_mono_ms();
    HASH_ITER(hh, c->teams, t, tt)
      status_positions(c, t, GQ_CTL_POSITIONS_NOW);
  }
  HASH_ITER(hh, c->teams, t, tt) {
    size_t beyond = t->n > GQ_CTL_POSITIONS_NOW ? t->n - GQ_CTL_POSITIONS_NOW
                                                : 0;

    if (seen + beyond <= start) { /* swept in an earlier slice */
      seen += beyond;
      continue;
    }
    for (size_t i = GQ_CTL_POSITIONS_NOW; i < t->n; i++, seen++) {
      if (seen < start)
        continue;
      if (looked++ >= scan || done >= max) {
        c->sweep_cursor = seen;
        return;
      }
      done += (size_t)position(c, t, i);
    }
  }
  c->sweep_cursor = 0;
}

/* ---- TeamQuota status (DESIGN §2) ------------------------------------- */

static int64_t team_use(const struct cteam *t, const char *key)
{
  for (size_t i = 0; i < t->n_use; i++)
    if (!strcmp(t->use[i].key, key))
      return t->use[i].gpus;
  return 0;
}

/* One line's cohort numbers: every team of the cohort with its use of that
 * (flavor, resource) and its limits (0 for teams without the line). */
static void line_cohort(struct ctl *c, const struct gq_teamquota *q,
                        const struct gq_quota_res *r, struct gq_qteam **qt,
                        size_t *n, size_t *self)
{
  struct cteam *t, *tt;
  char key[GQ_FLAVOR_KEY_MAX];

  gq_assign_flavor_key(r->resource, r->flavor, key, sizeof(key));
  *n = 0;
  *qt = NULL;
  HASH_ITER(hh, c->teams, t, tt) {
    const struct gq_teamquota *o = ctl_quota(c, t->name);
    const struct gq_quota_res *or;
    struct gq_qteam *e;

    if (!o || (o != q && (!q->cohort || !o->cohort ||
                          strcmp(q->cohort, o->cohort))))
      continue;
    *qt = gq_xrealloc(*qt, (*n + 1) * sizeof(**qt));
    e = &(*qt)[*n];
    memset(e, 0, sizeof(*e));
    e->name = t->name;
    e->weight = o->weight;
    or = NULL;
    for (size_t i = 0; i < o->n_res; i++)
      if (!strcmp(o->res[i].flavor, r->flavor) &&
          !strcmp(o->res[i].resource, r->resource))
        or = &o->res[i];
    e->nominal = or ? or->nominal : 0;
    e->borrow_limit = or ? or->borrow_limit : 0;
    e->lend_limit = or ? or->lend_limit : 0;
    e->used = team_use(t, key);
    if (o == q)
      *self = *n;
    (*n)++;
  }
}

struct quota_ctx {
  struct ctl *c;
  char *team;
};

/* One TeamQuota status patch at a time, at most one a second per quota,
 * and never the same status twice (the informer may not show the last one
 * yet when the next pass compares): the next pass compares again. */
static void quota_done(int rc, const struct gq_k8s_status *st,
                       const json_t *obj, void *arg)
{
  struct quota_ctx *x = arg;
  struct cteam *t = ctl_team(x->c, x->team);

  (void)obj;
  ctl_write_end(x->c);
  t->qs_inflight = 0;
  if (rc != 0) { /* not written: it may be sent again */
    json_decref(t->qs_sent);
    t->qs_sent = NULL;
  }
  if (rc != 0 && rc != GQ_ENOTFOUND)
    ctl_api_error(x->c, "patch", "teamquota status", rc, st);
  ctl_schedule_pass(x->c);
  free(x->team);
  free(x);
}

/* Real ms between two computations of a TeamQuota status that came out
 * unchanged: short enough that a change shows as soon as before (a
 * scenario at 100x sees it within 10 virtual seconds), long enough that
 * passes at hundreds a second do not each build and compare every one. */
#define QS_CHECK_MS 100

/* The usage part of TeamQuota q's status (team t's use, borrowing,
 * lending and pending GPUs, per line and in all) into want. */
static void quota_usage(struct ctl *c, const struct gq_teamquota *q,
                        const struct cteam *t, json_t *want)
{
  json_t *flavors = json_array();
  int64_t used = 0, borrowed = 0, lent = 0, nominal = 0;

  for (size_t i = 0; i < q->n_res; i++) {
    const struct gq_quota_res *r = &q->res[i];
    struct gq_qteam *qt;
    size_t n, self = 0;
    struct gq_qcohort qc;
    int64_t u, b, l, pend = 0;
    char key[GQ_FLAVOR_KEY_MAX];

    line_cohort(c, q, r, &qt, &n, &self);
    qc = (struct gq_qcohort){qt, n, q->cohort != NULL};
    u = qt[self].used;
    b = gq_quota_borrowed(&qt[self]);
    l = gq_quota_lent(&qc, self);
    gq_assign_flavor_key(r->resource, r->flavor, key, sizeof(key));
    if (i == 0)
      pend = t->pending_gpus;
    json_array_append_new(flavors, json_pack(
        "{s:s,s:s,s:I,s:I,s:I,s:I,s:I}", "flavor", r->flavor, "resource",
        r->resource, "nominal", (json_int_t)r->nominal, "used",
        (json_int_t)u, "borrowed", (json_int_t)b, "lent", (json_int_t)l,
        "pending", (json_int_t)pend));
    used += u;
    borrowed += b;
    lent += l;
    nominal += r->nominal;
    free(qt);
  }
  json_object_set_new(want, "usedGPUs", json_integer(used));
  json_object_set_new(want, "borrowedGPUs", json_integer(borrowed));
  json_object_set_new(want, "lentGPUs", json_integer(lent));
  json_object_set_new(want, "nominalGPUs", json_integer(nominal));
  json_object_set_new(want, "pendingJobs", json_integer((json_int_t)t->n));
  json_object_set_new(want, "runningJobs",
                      json_integer(t->admitted_jobs));
  json_object_set_new(want, "flavors", flavors);
}

/* Sends patch (taken) to TeamQuota name's status; want (taken) is what it
 * makes the status, remembered so that the same is not sent twice. */
static void quota_send(struct ctl *c, struct cteam *team, const char *name,
                       json_t *want, json_t *patch)
{
  struct quota_ctx *x;
  char path[400];
  json_t *body;

  json_decref(team->qs_sent);
  team->qs_sent = want;
  team->qs_ms = gq_clock_mono_ms();
  body = json_pack("{s:o}", "status", patch);
  snprintf(path, sizeof(path), "/apis/%s/%s/teamquotas/%s/status", GQ_GROUP,
           GQ_VERSION, name);
  x = gq_xcalloc(1, sizeof(*x));
  x->c = c;
  x->team = gq_xstrdup(name);
  team->qs_inflight = 1;
  ctl_write_begin(c);
  if (gq_kclient_patch_how(c->kc, path, "merge", body, CTL_REPORT,
                           quota_done, x) != 0) {
    ctl_write_end(c);
    team->qs_inflight = 0;
    json_decref(team->qs_sent);
    team->qs_sent = NULL;
    free(x->team);
    free(x);
  }
  json_decref(body);
}

static void quota_status(const json_t *obj, void *typed, void *arg)
{
  struct ctl *c = arg;
  const struct gq_teamquota *q = typed;
  const json_t *cur = json_object_get(obj, "status");
  const char *name =
      json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
  int64_t gen = json_integer_value(
      json_object_get(json_object_get(obj, "metadata"), "generation"));
  json_t *want = json_object(), *conds = json_array(), *patch;
  char err[GQ_DEC_MSG_MAX];
  struct cteam *team = name ? ctl_team(c, name) : NULL;

  if (!team || team->qs_inflight ||
      gq_clock_mono_ms() - team->qs_ms < c->o.quota_status_ms ||
      gq_clock_mono_ms() - team->qs_check_ms < QS_CHECK_MS) {
    json_decref(want);
    json_decref(conds);
    return;
  }
  if (!q) {
    struct gq_teamquota tmp;

    if (gq_teamquota_decode(obj, &tmp, err, sizeof(err)) == 0) {
      gq_teamquota_release(&tmp);
      snprintf(err, sizeof(err), "decoding");
    }
    condition(conds, json_object_get(cur, "conditions"), "Valid", 0,
              "InvalidSpec", err, gen);
  } else {
    quota_usage(c, q, ctl_team(c, name), want);
    condition(conds, json_object_get(cur, "conditions"), "Valid", 1, "Valid",
              "the TeamQuota is valid", gen);
  }
  json_object_set_new(want, "conditions", conds);
  json_object_set_new(want, "observedGeneration", json_integer(gen));
  patch = diff(cur, want);
  if (json_object_size(patch) == 0 ||
      (team->qs_sent && json_equal(team->qs_sent, want))) {
    /* unchanged: not computed again for QS_CHECK_MS (every pass comes
     * here, for every TeamQuota; the sweep catches up) */
    team->qs_check_ms = gq_clock_mono_ms();
    json_decref(patch);
    json_decref(want);
    return;
  }
  quota_send(c, team, name, want, patch);
}

void status_quotas(struct ctl *c)
{
  if (ctl_acting(c))
    gq_informer_foreach(c->inf_quotas, quota_status, c);
}

/* ---- nodes that lost GPUs (DESIGN §3: a Ready node whose allocatable
 * dropped gets nothing new; operators should hear of it) ----------------- */

static void node_event_done(int rc, const struct gq_k8s_status *st,
                            const json_t *obj, void *arg)
{
  struct ctl *c = arg;

  (void)obj;
  ctl_write_end(c);
  if (rc != 0)
    ctl_api_error(c, "create", "event", rc, st);
}

/* Records a Warning event on a Ready node whose allocatable GPUs are below
 * its capacity (device plugin gone, a GPU failed) when that starts, and a
 * Normal one when it ends. n NULL (undecodable node): nothing. */
void status_node(struct ctl *c, const json_t *obj, const struct gq_node *n)
{
  struct clost *l;
  int64_t cap, alloc;
  int lost;
  char msg[256];

  if (!n || !ctl_acting(c))
    return;
  cap = gq_node_capacity(n, GQ_DEFAULT_GPU_RESOURCE);
  alloc = gq_node_allocatable(n, GQ_DEFAULT_GPU_RESOURCE);
  lost = n->ready && cap > 0 && alloc < cap;
  HASH_FIND_STR(c->lost, n->meta.name, l);
  if (lost == (l != NULL))
    return;
  if (lost) {
    l = gq_xcalloc(1, sizeof(*l));
    l->name = gq_xstrdup(n->meta.name);
    HASH_ADD_KEYPTR(hh, c->lost, l->name, strlen(l->name), l);
    snprintf(msg, sizeof(msg), "node is Ready but allocatable %s is %lld of "
             "capacity %lld (device plugin or GPU failure); gpuq places only "
             "what fits the allocatable", GQ_DEFAULT_GPU_RESOURCE,
             (long long)alloc, (long long)cap);
  } else {
    HASH_DEL(c->lost, l);
    free(l->name);
    free(l);
    snprintf(msg, sizeof(msg), "allocatable %s is back to capacity (%lld)",
             GQ_DEFAULT_GPU_RESOURCE, (long long)cap);
  }
  GQ_LOG(lost ? GQ_WARN : GQ_INFO, &lc, "node %s: %s", n->meta.name, msg);
  ctl_write_begin(c);
  if (gq_kclient_event_how(c->kc, obj, lost ? "Warning" : "Normal",
                           lost ? "GPUCapacityLost" : "GPUCapacityRestored",
                           msg, GQ_CTL_COMPONENT, CTL_REPORT, node_event_done,
                           c) != 0)
    ctl_write_end(c);
}

void status_free(struct ctl *c)
{
  struct clost *l, *tmp;

  HASH_ITER(hh, c->lost, l, tmp) {
    HASH_DEL(c->lost, l);
    free(l->name);
    free(l);
  }
}

/* ---- gauges ------------------------------------------------------------ */

struct node_walk {
  struct ctl *c;
  int64_t lost;
};

static void node_gauge(const json_t *obj, void *typed, void *arg)
{
  struct node_walk *w = arg;
  const struct gq_node *n = typed;
  int64_t cap, alloc;

  (void)obj;
  if (!n || !n->ready)
    return;
  cap = gq_node_capacity(n, GQ_DEFAULT_GPU_RESOURCE);
  alloc = gq_node_allocatable(n, GQ_DEFAULT_GPU_RESOURCE);
  if (cap > 0 && alloc < cap)
    w->lost++;
}

/* Free GPUs (and MIG slices) per node as the controller's capacity
 * snapshot has them: what `kubectl gpuq nodes` shows as FREE, from the
 * same builder (decide/capacity.h). Left as it was while the snapshot
 * waits for its rebuild after a node change. */
static void node_free(struct ctl *c)
{
  const struct gq_snapshot *s = &c->cap.snap;

  if (!c->cap.valid)
    return;
  gq_metric_reset(c->m_node_free);
  for (size_t i = 0; i < s->n; i++) {
    const struct gq_node *n = s->nodes[i].node;

    for (size_t k = 0; k < n->n_capacity; k++) {
      const char *l[] = {n->meta.name, n->capacity[k].name};

      if (!strncmp(l[1], "nvidia.com/", 11))
        gq_metric_set(c->m_node_free, l,
                      (double)gq_snapshot_available(s, i, l[1]));
    }
  }
}

/* gpuq_workloads: one count per team, kind and state. */
static void workload_gauge(struct ctl *c, const char *team, unsigned wl,
                           const char *state)
{
  const char *kind = wl ? gq_wl_kind_name((enum gq_wl_kind)wl) : "GpuJob";
  const char *l[] = {team, kind, state};

  gq_metric_add(c->m_workloads, l, 1);
}

void status_metrics(struct ctl *c)
{
  struct cteam *t, *tt;
  struct cjob *cj;
  struct node_walk w = {c, 0};

  gq_metric_reset(c->m_workloads);
  DL_FOREACH2(c->active, cj, act_next)
    if (cj->state == CJ_ACTIVE)
      workload_gauge(c, cj->team, cj->wl, "admitted");

  gq_metric_reset(c->m_pending);
  gq_metric_reset(c->m_admitted_gpus);
  gq_metric_reset(c->m_nominal);
  gq_metric_reset(c->m_borrowed);
  gq_metric_reset(c->m_hist);
  HASH_ITER(hh, c->teams, t, tt) {
    const struct gq_teamquota *q = ctl_quota(c, t->name);
    const char *l1[] = {t->name};

    gq_metric_set(c->m_pending, l1, (double)t->n);
    if (q && c->o.fair_half_life_s > 0)
      gq_metric_set(c->m_hist, l1, las_team_mean_gpus(c, t));
    for (size_t i = 0; i < t->n; i++)
      workload_gauge(c, t->name, t->q[i]->wl, "queued");
    for (size_t i = 0; i < t->n_use; i++) {
      const char *l2[] = {t->name, t->use[i].key};

      gq_metric_set(c->m_admitted_gpus, l2, (double)t->use[i].gpus);
    }
    for (size_t i = 0; q && i < q->n_res; i++) {
      char key[GQ_FLAVOR_KEY_MAX];
      const char *l2[] = {t->name, key};
      int64_t u;

      gq_assign_flavor_key(q->res[i].resource, q->res[i].flavor, key,
                           sizeof(key));
      u = team_use(t, key);
      gq_metric_set(c->m_nominal, l2, (double)q->res[i].nominal);
      gq_metric_set(c->m_borrowed, l2,
                    (double)(u > q->res[i].nominal ? u - q->res[i].nominal
                                                   : 0));
    }
  }
  gq_metric_set(c->m_frag, NULL, (double)c->frag_gpus);
  gq_informer_foreach(c->inf_nodes, node_gauge, &w);
  gq_metric_set(c->m_lost_nodes, NULL, (double)w.lost);
  node_free(c);
}
