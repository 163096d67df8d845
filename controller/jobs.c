/* controller/jobs.c - one GpuJob's reconcile (DESIGN §2-§5): the driver of
 * its lifecycle, and the acts the lifecycle asks for.
 *
 * What happens to a job is decided by decide/lifecycle.c, a pure
 * transition: this file builds its view (the cjob, the stored GpuJob, its
 * pods from the pod informer), calls the transition, writes the view it
 * returns back into the cjob and applies its effects in order: the team
 * queues and Redis (queue, requeue, release, remove), pod creates and
 * deletes, the status and events, the finalizer. Callbacks (a pod create
 * answered, an admission answered in admit.c) record their outcome in the
 * cjob and mark it (ctl_mark): the next pass reconciles it; none calls
 * the reconcile itself.
 */
#include "controller/ctl_int.h"

#include "api/priorityclass.h"

#include "decide/names.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "controller/podspec.h"
#include "decide/match.h"
#include "decide/lifecycle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct gq_lc lc = {"controller", "jobs", NULL};

#define RECONCILE_STEPS 8 /* transitions of one reconcile: adoption, a
                             teardown's end, the queueing that follows */

/* ---- the team queues (in memory, in the same order as Redis's) --------- */

static void redis_done(int rc, const char *state, long long v, void *arg)
{
  struct ctl *c = arg;

  (void)state;
  (void)v;
  ctl_write_end(c);
  if (rc != 0) {
    const char *l[] = {"queue"};

    gq_metric_add(c->m_redis_errors, l, 1);
    GQ_LOG(GQ_WARN, &lc, "redis queue update failed: %s (the next rebuild "
           "repairs it)", gq_strerror(rc));
  }
}

static void redis_release_done(int rc, const char *state, long long v,
                               void *arg)
{
  struct ccohort *k = arg;

  (void)state;
  (void)v;
  if (k->inflight)
    k->inflight--;
  if (rc != 0) /* not applied: the ledger is compared and repaired */
    k->rebuilt = 0;
}

/* Inserts cj into its team's queue and Redis's (idempotent there). */
void jobs_queue_add(struct ctl *c, struct cjob *cj)
{
  struct gq_qjob qj;
  struct ccohort *k;

  if (cj->t)
    return;
  cj->level = gq_las_level(ctl_las(c, cj->team), cj->service_s);
  store_queue_insert(c, cj);
  k = ctl_cohort(c, cj->cohort, cj->team);
  if (!k->rebuilt && !k->rebuilding)
    return; /* the cohort's coming rebuild writes it (at start-up: all of
               them in one script, not one enqueue per job) */
  qj = (struct gq_qjob){cj->uid, cj->team, cj->ns, cj->name, cj->cohort,
                        cj->priority, cj->queued_ms};
  ctl_write_begin(c);
  if (gq_queue_enqueue(&c->q, &qj, redis_done, c) != 0)
    ctl_write_end(c);
}

static void redis_remove(struct ctl *c, struct cjob *cj)
{
  ctl_write_begin(c);
  if (gq_queue_remove(&c->q, cj->cohort, cj->team, cj->uid, redis_done, c))
    ctl_write_end(c);
}

/* Releases cj's admission in Redis (idempotent) and in memory. */
static void release(struct ctl *c, struct cjob *cj)
{
  struct ccohort *k;

  if (!cj->has_adm)
    return;
  jobs_use(c, cj, -1);
  k = ctl_cohort(c, cj->cohort, cj->team);
  k->ver++; /* predicted: the release bumps the ledger's version */
  k->inflight++;
  if (gq_queue_release(&c->q, cj->cohort, cj->team, cj->uid, (long)cj->attempt,
                       redis_release_done, k) != 0) {
    k->inflight--;
    k->rebuilt = 0; /* Redis is down: the rebuild on reconnect repairs */
  }
  ctl_schedule_pass(c);
}

/* ---- pods ------------------------------------------------------------- */

static void free_nodes(struct cjob *cj)
{
  for (int32_t i = 0; cj->nodes && i < cj->replicas; i++)
    free(cj->nodes[i]);
  free(cj->nodes);
  cj->nodes = NULL;
}

/* Frees cj (already out of the jobs table). */
void jobs_forget(struct ctl *c, struct cjob *cj)
{
  wq_drop(c, cj);
  ctl_active_del(c, cj);
  status_forget(c, cj);
  disrupt_victim_done(c, cj);
  disrupt_unlist(c, cj);
  store_unreserve(c, cj);
  disrupt_forget(cj);
  usage_forget(cj);
  free_nodes(cj);
  for (size_t i = 0; i < cj->n_pods; i++)
    free(cj->pods[i]);
  free(cj->pods);
  free(cj->adm_event);
  free(cj->wrote_rv);
  if (cj->status_wait)
    c->status_waiting--;
  gq_intern_release(cj->message);
  free(cj->key);
  free(cj);
}

static int64_t pod_attempt(const struct gq_pod *p)
{
  const char *a = gq_meta_label(&p->meta, GQ_LBL_ATTEMPT);
  int64_t v;

  return a && gq_parse_int64(a, &v) == 0 ? v : -1;
}

static void view_job(const struct cjob *cj, struct gq_life_job *v);
static void apply_flush(struct ctl *c, struct cjob *cj,
                        const struct gq_life_out *o);

/* A pod event of cj: the lifecycle reads the cause of a disruption and the
 * checkpoint from it (the pod may be gone before the reconcile looks). */
static void pod_event(struct ctl *c, struct cjob *cj, const struct gq_pod *pod)
{
  struct gq_life_term buf[16];
  struct gq_life_podev ev;
  struct gq_life_spec spec = {0};
  struct gq_life_in in = {0};
  struct gq_life_out o;

  disrupt_podev(pod, &ev, buf, sizeof(buf) / sizeof(buf[0]));
  view_job(cj, &in.job);
  in.spec = &spec;
  in.now_ms = gq_clock_now_ms();
  in.mono_ms = gq_clock_mono_ms();
  gq_life_pod_seen(&in, &ev, &o);
  apply_flush(c, cj, &o);
  if (ev.terms != buf)
    free((void *)ev.terms);
}

/* The pod index: keeps cj->pods equal to the pods labelled with its uid. */
void jobs_pod_seen(struct ctl *c, const struct gq_pod *pod, int present)
{
  const char *uid = gq_meta_label(&pod->meta, GQ_LBL_JOB_UID);
  const char *ns = pod->meta.ns, *name = pod->meta.name;
  const char *job = gq_meta_label(&pod->meta, GQ_LBL_JOB);
  struct cjob *cj;
  char key[600];
  size_t i;

  if (!uid || !*ns || !*name)
    return;
  cj = ctl_job(c, uid);
  if (!cj) {
    if (!present || !job)
      return;
    cj = ctl_job_new(c, uid, ns, job);
  }
  snprintf(key, sizeof(key), "%s/%s", ns, name);
  pod_event(c, cj, pod);
  if (present)
    gq_capacity_unassume(&c->cap, key);
  for (i = 0; i < cj->n_pods && strcmp(cj->pods[i], key); i++)
    ;
  if (present && i == cj->n_pods) {
    const struct gq_gpujob *j = ctl_job_spec(c, cj);

    cj->pods = gq_xrealloc(cj->pods, (cj->n_pods + 1) * sizeof(*cj->pods));
    cj->pods[cj->n_pods++] = gq_xstrdup(key);
    if (j && pod_attempt(pod) == cj->attempt)
      workload_pod_of_attempt(c, cj, j);
    /* a pod first seen while its job tears down (its create was in flight
     * when the teardown began) has had no delete: the reconcile this
     * event brings must send one now, not after GQ_LIFE_REDELETE_MS and
     * some later event (a Running pod may never send another) */
    if (cj->state == CJ_TEARDOWN)
      cj->td_sent_ms = 0;
  } else if (!present && i < cj->n_pods) {
    free(cj->pods[i]);
    cj->pods[i] = cj->pods[--cj->n_pods];
  }
}

/* The lifecycle's view of pod p. The flavor annotation is read only for
 * an adoption (the one reader). */
static void pod_view(const struct gq_pod *p, int flavor, struct gq_life_pod *v)
{
  v->name = p->meta.name;
  v->attempt = pod_attempt(p);
  v->phase = p->phase;
  v->status_reason = p->status_reason ? p->status_reason : "";
  v->unschedulable = p->unschedulable;
  v->disruption = p->disruption;
  v->deletion_ms = p->meta.deletion_ms;
  v->deletion_grace_s = p->meta.deletion_grace_s;
  v->holds = gq_pod_holds_resources(p);
  v->flavor = flavor ? gq_pod_annotation(p, GQ_ANN_FLAVOR) : NULL;
}

struct delete_ctx {
  struct ctl *c;
  char *uid; /* the job's */
};

/* A pod delete was answered. A failure (other than the pod being gone or
 * changed) has the job reconciled again after its backoff (wq_retry), and
 * that reconcile sends the delete again at once (td_sent_ms cleared). */
static void delete_done(int rc, const struct gq_k8s_status *st,
                        const json_t *obj, void *arg)
{
  struct delete_ctx *x = arg;
  struct ctl *c = x->c;
  struct cjob *cj = ctl_job(c, x->uid);

  (void)obj;
  ctl_write_end(c);
  if (rc != 0 && rc != GQ_ENOTFOUND && rc != GQ_ECONFLICT) {
    ctl_api_error(c, "delete", "pod", rc, st);
    if (cj) {
      cj->td_sent_ms = 0;
      wq_retry(c, cj);
    }
  } else if (cj) {
    wq_forget(cj);
  }
  free(x->uid);
  free(x);
}

/* Deletes every pod of cj that still holds resources and is not being
 * deleted (with its grace period: a checkpointing job gets SIGTERM and its
 * grace, DESIGN §5). The lifecycle decides when (and when to resend). */
static void delete_pods(struct ctl *c, struct cjob *cj)
{
  const struct gq_gpujob *j = ctl_job_spec(c, cj);

  if (j && j->wl_kind == GQ_WL_JOB) { /* its Job controller deletes them */
    workload_stop(c, cj, j);
    return;
  }
  for (size_t i = 0; i < cj->n_pods; i++) {
    const struct gq_pod *p = gq_informer_typed(c->inf_pods, cj->pods[i]);
    struct gq_life_pod v;
    struct delete_ctx *x;
    char path[700];

    if (!p)
      continue;
    pod_view(p, 0, &v);
    if (!gq_life_pod_deletable(&v))
      continue;
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", p->meta.ns,
             p->meta.name);
    x = gq_xcalloc(1, sizeof(*x));
    x->c = c;
    x->uid = gq_xstrdup(cj->uid);
    ctl_write_begin(c);
    if (gq_kclient_delete_how(c->kc, path, -1, p->meta.uid, CTL_WORK,
                              delete_done, x) != 0) {
      ctl_write_end(c);
      free(x->uid);
      free(x);
    }
  }
}

const char *jobs_td_record(enum cj_td td)
{
  return gq_life_td_record(td);
}

/* ---- finishing and requeueing: Redis --------------------------------- */

static void redis_requeue(struct ctl *c, struct cjob *cj)
{
  /* back at the original place (requeue keeps the queue time) */
  ctl_write_begin(c);
  if (gq_queue_requeue(&c->q, cj->cohort, cj->team, cj->uid, redis_done, c))
    ctl_write_end(c);
}

/* ---- creating the pods of an admitted attempt -------------------------- */

struct create_ctx {
  struct ctl *c;
  char *uid;
  char *pod_key;
  int64_t attempt;
};

/* A pod create was answered (ok: the pod exists and is this job's). */
static void created_one(struct ctl *c, struct create_ctx *x, int ok)
{
  workload_replica_done(c, x->uid, x->pod_key, x->attempt, ok);
  free(x->uid);
  free(x->pod_key);
  free(x);
}

static void owner_checked(int rc, const struct gq_k8s_status *st,
                          const json_t *obj, void *arg)
{
  struct create_ctx *x = arg;
  char err[GQ_DEC_MSG_MAX];
  struct gq_pod p;
  int ours = 0;

  (void)st;
  if (rc == 0 && gq_pod_decode(obj, &p, err, sizeof(err)) == 0) {
    /* the controller ownerReference (api/meta.c), as DESIGN §3 asks */
    ours = p.meta.owner_uid && !strcmp(p.meta.owner_uid, x->uid);
    gq_pod_release(&p);
  }
  if (rc == 0 && !ours)
    GQ_LOG(GQ_WARN, &lc, "pod %s exists and is not owned by job uid %s",
           x->pod_key, x->uid);
  created_one(x->c, x, rc == 0 && ours);
}

/* The create is on the wire: the refill is out of gpuq's hands. */
static void pod_sent(void *arg)
{
  struct create_ctx *x = arg;

  ctl_refilled(x->c);
}

static void pod_created(int rc, const struct gq_k8s_status *st,
                        const json_t *obj, void *arg)
{
  struct create_ctx *x = arg;
  char path[700];
  const char *slash;

  (void)obj;
  if (rc == GQ_EEXIST) {
    /* a retried create: done only if the pod is this job's (DESIGN §3) */
    slash = strchr(x->pod_key, '/');
    snprintf(path, sizeof(path), "/api/v1/namespaces/%.*s/pods/%s",
             (int)(slash - x->pod_key), x->pod_key, slash + 1);
    if (gq_kclient_get(x->c->kc, path, owner_checked, x) == 0)
      return;
  }
  if (rc != 0 && rc != GQ_EEXIST)
    ctl_api_error(x->c, "create", "pod", rc, st);
  created_one(x->c, x, rc == 0);
}

static void service_done(int rc, const struct gq_k8s_status *st,
                         const json_t *obj, void *arg)
{
  struct ctl *c = arg;

  (void)obj;
  ctl_write_end(c);
  if (rc != 0 && rc != GQ_EEXIST)
    ctl_api_error(c, "create", "service", rc, st);
}

/* Creates cj's Service (multi-replica) and pods on cj->nodes, assuming
 * each pod in the capacity snapshot until the pod informer shows it. The
 * lifecycle decides when (GQ_LIFE_CREATE_PODS) and says first what goes
 * with it (a resume's event, drainPolicy Wait's budget). A replica whose
 * node is gone is not created: cj->create_miss says so, and the reconcile
 * its mark brings tears the attempt down. */
void jobs_create_pods(struct ctl *c, struct cjob *cj)
{
  static const struct gq_kclient_call how = {GQ_KPRIO_HIGH, 1, pod_sent, 0};
  const struct gq_gpujob *j = ctl_job_spec(c, cj);
  char coll[400], name[GQ_POD_NAME_MAX + 1];

  if (!j) /* gone or invalid: the reconcile that follows deals with it */
    return;
  if (j->wl_kind != GQ_WL_NONE) { /* its workload's pods exist already */
    workload_admit(c, cj, j);
    return;
  }
  snprintf(coll, sizeof(coll), "/api/v1/namespaces/%s/pods", cj->ns);
  if (cj->replicas > 1) {
    json_t *svc = gq_podspec_service(j);
    char scoll[400];

    snprintf(scoll, sizeof(scoll), "/api/v1/namespaces/%s/services", cj->ns);
    ctl_write_begin(c);
    if (gq_kclient_create_how(c->kc, scoll, svc, CTL_WORK, service_done, c))
      ctl_write_end(c);
    json_decref(svc);
  }
  cj->creates_left = cj->replicas;
  cj->create_miss = GQ_LIFE_MISS_NONE;
  for (int32_t r = 0; r < cj->replicas; r++) {
    const struct gq_node *n = gq_informer_typed(c->inf_nodes, cj->nodes[r]);
    struct create_ctx *x;
    json_t *pod, *ann;

    if (!n) {
      cj->creates_left--;
      if (!cj->create_miss)
        cj->create_miss = GQ_LIFE_MISS_NODE;
      continue;
    }
    pod = gq_podspec_pod(j, cj->attempt, r, n, cj->ckpt);
    ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
    if (!json_is_object(ann)) {
      ann = json_object();
      json_object_set_new(json_object_get(pod, "metadata"), "annotations",
                          ann);
    }
    json_object_set_new(ann, GQ_ANN_FLAVOR, json_string(cj->flavor));
    json_object_set_new(ann, GQ_ANN_NODE, json_string(cj->nodes[r]));
    gq_podspec_pod_name(j, cj->attempt, r, name, sizeof(name));
    x = gq_xcalloc(1, sizeof(*x));
    x->c = c;
    x->uid = gq_xstrdup(cj->uid);
    x->pod_key = gq_xasprintf("%s/%s", cj->ns, name);
    x->attempt = cj->attempt;
    ctl_write_begin(c);
    c->creating++;
    if (gq_kclient_create_how(c->kc, coll, pod, &how, pod_created, x))
      created_one(c, x, 0);
    json_decref(pod);
  }
  if (cj->create_miss)
    ctl_mark(c, cj);
}

/* ---- the lifecycle's views (decide/lifecycle.h) ------------------------ */

/* The fields of cj the lifecycle owns (decide/lifecycle.h marks them W):
 * read into its view and written back from the view it returns. */
#define LIFE_OWNED(X)                                                      \
  X(state) X(td) X(phase) X(attempt) X(failures) X(preemptions)            \
  X(create_pending) X(running) X(adopted) X(preempted) X(edit_told)        \
  X(queued_ms) X(admitted_ms) X(start_ms) X(first_start_ms)                \
  X(completion_ms) X(eta_ms) X(td_sent_ms) X(td_ms) X(cordon_ms)           \
  X(cause_grace_s) X(service_s) X(last_run_ms) X(requeued_ms)
#define LIFE_IN(f) v->f = cj->f;
#define LIFE_OUT(f) cj->f = v->f;

/* The view of cj's record: what the lifecycle reads of it. */
static void view_job(const struct cjob *cj, struct gq_life_job *v)
{
  memset(v, 0, sizeof(*v));
  LIFE_OWNED(LIFE_IN)
  v->key = cj->key;
  v->ns = cj->ns;
  v->replicas = cj->replicas;
  v->gpus = cj->gpus;
  v->team = cj->team;
  v->cohort = cj->cohort;
  v->priority = cj->priority;
  v->qprio = cj->qprio;
  v->queued_team = cj->t ? cj->t->name : NULL;
  v->has_adm = cj->has_adm;
  v->has_nodes = cj->nodes != NULL;
  v->creates_left = cj->creates_left;
  v->create_miss = (enum gq_life_miss)cj->create_miss;
  v->adm_event = cj->adm_event;
  v->pdb = cj->pdb;
  v->gone = cj->gone;
  v->drain_wait = cj->drain_wait;
  v->deadline_s = cj->deadline_s;
  v->startup_s = cj->startup_s;
  v->reason = cj->reason ? cj->reason : "";
  v->ckpt = cj->ckpt;
  v->ckpt_ms = cj->ckpt_ms;
  v->ckpt_attempt = cj->ckpt_attempt;
  v->cause = cj->cause;
  v->cause_msg = cj->cause_msg;
}

/* Writes back the fields of the view the lifecycle owns; the others change
 * only through effects. */
static void put_job(struct cjob *cj, const struct gq_life_job *v)
{
  LIFE_OWNED(LIFE_OUT)
}

static void view_quota(struct ctl *c, const char *team, const char *ns,
                       struct gq_life_quota *v)
{
  const struct gq_teamquota *q = ctl_quota(c, team);

  v->exists = q != NULL;
  v->cohort = q && q->cohort ? q->cohort : "";
  v->admits_ns = q && gq_teamquota_admits_namespace(q, ns);
}

/* j's priority: its PriorityClass's value when it names one that exists
 * and is valid (api/priorityclass.h; *found says whether it does). */
static int32_t spec_priority(struct ctl *c, const struct gq_gpujob *j,
                             int *found)
{
  *found = 0;
  if (!j->priority_class)
    return j->priority;
  return gq_priorityclass_value(gq_informer_get(c->inf_pcs, j->priority_class),
                                j->priority, found);
}

static void view_status(const struct gq_gpujob_status *st,
                        struct gq_life_spec *s)
{
  s->st_phase = st->phase;
  s->st_reason = st->reason;
  s->st_message = st->message;
  s->st_attempts = st->attempts;
  s->st_failures = st->failures;
  s->st_preemptions = st->preemptions;
  s->st_service_s = st->service_s;
  s->st_queued_ms = st->queued_ms;
  s->st_admitted_ms = st->admitted_ms;
  s->st_start_ms = st->start_ms;
  s->st_completion_ms = st->completion_ms;
  s->st_checkpoint = st->checkpoint;
  s->st_checkpoint_ms = st->checkpoint_ms;
  s->st_n_nodes = st->n_nodes;
  s->st_nodes_bad = (st->bad & GQ_ST_NODES) != 0;
}

/* The view of the stored GpuJob obj of cj (NULL: gone). */
static void view_spec(struct ctl *c, const struct cjob *cj,
                      const struct gq_gpujob *obj, struct gq_life_spec *s)
{
  memset(s, 0, sizeof(*s));
  if (!obj)
    return;
  s->exists = 1;
  s->deletion_ms = obj->meta.deletion_ms;
  s->invalid = obj->invalid;
  s->creation_ms = obj->meta.creation_ms;
  view_status(&obj->status, s);
  if (obj->invalid)
    return;
  s->team = obj->team;
  s->replicas = obj->replicas;
  s->gpus = obj->gpus;
  s->gpus_per_replica = obj->gpus_per_replica;
  s->priority = spec_priority(c, obj, &s->pc_found);
  s->priority_class = obj->priority_class;
  s->suspend = obj->suspend;
  s->backoff_limit = obj->backoff_limit;
  s->deadline_s = obj->active_deadline_s;
  s->startup_s = obj->startup_timeout_s;
  s->drain = obj->drain;
  s->has_checkpoint = obj->has_checkpoint;
  s->grace_s = obj->grace_s;
  view_quota(c, obj->team, cj->ns, &s->q_spec);
  if (obj->wl_kind != GQ_WL_NONE)
    workload_view(c, obj, s);
}

static void list_teams(struct ctl *c, char *buf, size_t len)
{
  json_t *all = gq_informer_list(c->inf_quotas);
  size_t i, off = 0;
  json_t *o;

  buf[0] = '\0';
  json_array_foreach(all, i, o) {
    int n = snprintf(buf + off, len - off, "%s'%s'", i ? ", " : "",
                     gq_meta_str(o, "name"));
    if (n < 0 || (size_t)n >= len - off)
      break;
    off += (size_t)n;
  }
  if (!off)
    snprintf(buf, len, "none");
  json_decref(all);
}

/* Replicas of the current attempt that exist: in the pod informer, or
 * created and assumed but not shown by it yet. */
static int pods_seen(struct ctl *c, struct cjob *cj, const struct gq_gpujob *j)
{
  char key[600];
  int n = 0;

  if (j->wl_kind == GQ_WL_JOB) /* its Job controller replaces lost pods */
    return cj->replicas;
  for (int32_t r = 0; r < cj->replicas; r++) {
    jobs_replica_key(cj, j, cj->attempt, r, key, sizeof(key));
    n += gq_capacity_is_assumed(&c->cap, key) ||
         gq_informer_get(c->inf_pods, key) != NULL;
  }
  return n;
}

/* Everything a transition of cj reads; borrowed from the store and the
 * informers until view_release(). */
struct view {
  struct gq_life_in in;
  struct gq_life_spec spec;
  struct gq_life_pod *pods; /* owned */
  char teams[512];
};

/* The lifecycle's pods of cj (j: its valid GpuJob, or NULL). */
static void view_pods(struct ctl *c, const struct cjob *cj,
                      const struct gq_gpujob *j, struct view *v)
{
  size_t n = 0;

  v->pods = cj->n_pods ? gq_xcalloc(cj->n_pods, sizeof(*v->pods)) : NULL;
  for (size_t i = 0; i < cj->n_pods; i++) {
    const struct gq_pod *p = gq_informer_typed(c->inf_pods, cj->pods[i]);

    if (p && !workload_pod_hidden(j, p))
      pod_view(p, !cj->adopted, &v->pods[n++]);
  }
  v->in.pods = v->pods;
  v->in.n_pods = n;
}

static void view_build(struct ctl *c, struct cjob *cj, struct view *v)
{
  const struct gq_gpujob *obj = ctl_job_obj(c, cj);
  const struct gq_gpujob *j = obj && !obj->invalid ? obj : NULL;
  struct gq_life_job *vj = &v->in.job;

  memset(&v->in, 0, sizeof(v->in));
  if (j)
    cj->wl = (unsigned char)j->wl_kind;
  view_job(cj, vj);
  view_quota(c, cj->team, cj->ns, &vj->q);
  view_spec(c, cj, obj, &v->spec);
  v->in.spec = &v->spec;
  /* the teams there are, for an UnknownTeam message: only when the team
   * the job is to queue in has no TeamQuota */
  if (j && !(gq_life_pinned(vj) ? vj->q.exists : v->spec.q_spec.exists)) {
    list_teams(c, v->teams, sizeof(v->teams));
    v->spec.teams = v->teams;
  }
  view_pods(c, cj, j, v);
  if (j && cj->state == CJ_ACTIVE && cj->creates_left == 0)
    v->in.seen = pods_seen(c, cj, j);
  v->in.drain_wait_s = c->o.drain_wait_s;
  v->in.now_ms = gq_clock_now_ms();
  v->in.mono_ms = gq_clock_mono_ms();
}

static void view_release(struct view *v)
{
  free(v->pods);
  v->pods = NULL;
}

/* ---- applying the lifecycle's effects ---------------------------------- */

/* The spec's team, GPUs and replicas (no attempt is pinned to cj's). */
static void take_spec(struct ctl *c, struct cjob *cj)
{
  const struct gq_gpujob *j = ctl_job_spec(c, cj);

  if (!j)
    return;
  if (cj->t) /* queued: its team's pending GPUs follow the edit */
    cj->t->pending_gpus += j->gpus - cj->gpus;
  cj->team = ctl_intern(c, j->team);
  cj->gpus = j->gpus;
  cj->replicas = j->replicas;
}

/* The other values cj caches from its spec (the tick and the pass read
 * them, not the object); cohort: the one of its team's TeamQuota, when
 * the lifecycle says it follows it now (NULL: it stays). */
static void refresh(struct ctl *c, struct cjob *cj, const char *cohort)
{
  const struct gq_gpujob *j = ctl_job_spec(c, cj);
  int found;

  if (!j)
    return;
  cj->expected_s = j->expected_duration_s;
  cj->deadline_s = j->active_deadline_s;
  cj->startup_s = j->startup_timeout_s;
  cj->drain_wait = j->drain == GQ_DRAIN_WAIT;
  cj->priority = spec_priority(c, j, &found);
  if (cj->has_adm && cj->adm_prio != cj->priority) {
    /* counted at the priority it now has (jobs_use's count per priority) */
    struct cteam *t = ctl_team(c, cj->team);

    store_prio_count(t, cj->adm_prio, -1);
    store_prio_count(t, cj->adm_prio = cj->priority, +1);
  }
  if (cohort)
    cj->cohort = ctl_intern(c, cohort);
  cj->shape = j->shape; /* what placement looks at (gq_gpujob_decode) */
}

/* An adopted attempt holds an admission of flavor (ledger key): counted in
 * its team's use, so that quota holds after a restart, the rebuild writes
 * it to the ledger and its end releases it. */
static void adopt_use(struct ctl *c, struct cjob *cj, const char *flavor)
{
  const struct gq_gpujob *j = ctl_job_spec(c, cj);
  const struct gq_teamquota *q;

  if (!j)
    return;
  q = ctl_quota(c, j->team);
  cj->flavor = ctl_intern(c, flavor);
  cj->replicas = j->replicas;
  cj->team = ctl_intern(c, j->team);
  cj->cohort = ctl_intern(c, q && q->cohort ? q->cohort : "");
  cj->gpus = j->gpus;
  jobs_use(c, cj, 1);
}

/* An adopted attempt's pods go where status.nodes says (the lifecycle
 * checked it names every replica's node): its node array, and its pods
 * not seen yet assumed there until they are created again. */
static void resume_nodes(struct ctl *c, struct cjob *cj)
{
  const struct gq_gpujob *j = ctl_job_spec(c, cj);
  char key[600];

  if (!j)
    return;
  free_nodes(cj);
  cj->replicas = j->replicas;
  cj->nodes = gq_xcalloc((size_t)j->replicas, sizeof(*cj->nodes));
  for (int32_t r = 0; r < j->replicas; r++)
    cj->nodes[r] = gq_xstrdup(j->status.nodes[r]);
  cj->pass_ms = gq_clock_mono_ms();
  if (j->wl_kind == GQ_WL_JOB) /* its pods' names are not gpuq's */
    return;
  jobs_assume(c, cj, j);
  for (int32_t r = 0; r < j->replicas; r++) { /* those seen are counted */
    jobs_replica_key(cj, j, cj->attempt, r, key, sizeof(key));
    if (gq_informer_get(c->inf_pods, key))
      gq_capacity_unassume(&c->cap, key);
  }
}

/* The effects on the store, the queues and Redis. */
static int act_store(struct ctl *c, struct cjob *cj,
                     const struct gq_life_eff *e)
{
  switch (e->kind) {
  case GQ_LIFE_RELEASE: release(c, cj); break;
  case GQ_LIFE_QUEUE_ADD: jobs_queue_add(c, cj); break;
  case GQ_LIFE_QUEUE_DEL: jobs_queue_del(c, cj); break;
  case GQ_LIFE_REDIS_REMOVE: redis_remove(c, cj); break;
  case GQ_LIFE_REDIS_REQUEUE: redis_requeue(c, cj); break;
  case GQ_LIFE_FREE_NODES: free_nodes(cj); break;
  case GQ_LIFE_UNASSUME: jobs_unassume(c, cj, ctl_job_spec(c, cj)); break;
  case GQ_LIFE_ACTIVE: ctl_active(c, cj); break;
  case GQ_LIFE_ADOPT_USE: adopt_use(c, cj, e->str); break;
  case GQ_LIFE_RESUME_NODES: resume_nodes(c, cj); break;
  case GQ_LIFE_TAKE_SPEC: take_spec(c, cj); break;
  case GQ_LIFE_REFRESH: refresh(c, cj, e->str); break;
  case GQ_LIFE_DRAIN_LIST:
    if (e->a)
      disrupt_list(c, cj);
    else
      disrupt_unlist(c, cj);
    break;
  case GQ_LIFE_VICTIM_DONE: disrupt_victim_done(c, cj); break;
  default: return 0;
  }
  return 1;
}

/* The effects on the API server (pods, finalizer, budget), the status,
 * events, logs and metrics. */
static void act_api(struct ctl *c, struct cjob *cj,
                    const struct gq_life_eff *e)
{
  const struct gq_gpujob *obj;

  switch (e->kind) {
  case GQ_LIFE_LOG: GQ_LOG(GQ_INFO, &lc, "%s", e->msg); break;
  case GQ_LIFE_EVENT:
    status_event(c, cj, e->type, e->reason, "%s", e->msg);
    break;
  case GQ_LIFE_STATUS:
    status_set(cj, e->reason ? e->reason : ctl_intern(c, e->str), "%s",
               e->msg);
    break;
  case GQ_LIFE_DELETE_PODS: delete_pods(c, cj); break;
  case GQ_LIFE_FINALIZER:
    if ((obj = ctl_job_obj(c, cj)))
      status_finalizer(c, cj, obj, (int)e->a);
    break;
  case GQ_LIFE_PDB: disrupt_pdb(c, cj, (int)e->a); break;
  case GQ_LIFE_CREATE_PODS: jobs_create_pods(c, cj); break;
  case GQ_LIFE_CAUSE: disrupt_cause(cj, e->str, e->msg); break;
  case GQ_LIFE_CKPT: disrupt_ckpt(cj, e->str, e->a, e->b); break;
  default: disrupt_count(c, cj, e); break; /* the metrics */
  }
}

/* Applies what the lifecycle decided for cj: its view back into cj (before
 * the acts, which read it, and after them: ctl_active() and
 * jobs_queue_add() set the state too, the view's is the one), then the
 * effects in order. The caller sends the status write (o->flush) once the
 * whole change is applied. Returns 1 if cj was freed. */
static int apply(struct ctl *c, struct cjob *cj, const struct gq_life_out *o)
{
  int was_running = cj->running;

  put_job(cj, &o->job);
  for (size_t i = 0; i < o->n; i++) {
    if (o->eff[i].kind == GQ_LIFE_FORGET) { /* the object is gone */
      HASH_DEL(c->jobs, cj);
      jobs_forget(c, cj);
      return 1;
    }
    if (!act_store(c, cj, &o->eff[i]))
      act_api(c, cj, &o->eff[i]);
  }
  put_job(cj, &o->job);
  if (cj->running != was_running) /* its allocation starts or ends */
    usage_running(c, cj, cj->running);
  if (!cj->create_pending && cj->adm_event) { /* told, or never will be */
    free(cj->adm_event);
    cj->adm_event = NULL;
  }
  return 0;
}

/* Applies o (apply()) and sends cj's status difference if o asks for it. */
static void apply_flush(struct ctl *c, struct cjob *cj,
                        const struct gq_life_out *o)
{
  if (!apply(c, cj, o) && o->flush)
    status_flush(c, cj);
}

/* ---- the reconcile ---------------------------------------------------- */

void jobs_reconcile(struct ctl *c, struct cjob *cj)
{
  struct gq_life_out o;
  struct view v;
  int gone, flush = 0;

  workload_gc(c, cj, ctl_job_spec(c, cj));
  for (int step = 0; step < RECONCILE_STEPS; step++) {
    view_build(c, cj, &v);
    gq_life_reconcile(&v.in, &o);
    gone = apply(c, cj, &o);
    view_release(&v);
    if (gone)
      return;
    flush |= o.flush;
    if (!o.again) {
      if (flush) /* one write, of where the steps took it */
        status_flush(c, cj);
      return;
    }
  }
  GQ_LOG(GQ_WARN, &lc, "job %s: still changing after %d reconcile steps",
         cj->key, RECONCILE_STEPS);
  if (flush)
    status_flush(c, cj);
}

/* Begins the teardown td of cj (why: a sentence), with its pods in view. */
static void jobs_teardown(struct ctl *c, struct cjob *cj, enum cj_td td,
                          const char *why)
{
  struct gq_life_out o;
  struct view v;

  view_build(c, cj, &v);
  gq_life_teardown(&v.in, td, why, &o);
  apply_flush(c, cj, &o);
  view_release(&v);
}

void jobs_preempt(struct ctl *c, struct cjob *cj, struct cjob *by,
                  const char *cause, const char *why)
{
  struct gq_life_out o;
  struct view v;

  free(cj->preemptor);
  cj->preemptor = by ? gq_xstrdup(by->uid) : NULL;
  if (by)
    by->victims_left++;
  view_build(c, cj, &v);
  gq_life_preempt(&v.in, cause, why, &o);
  apply_flush(c, cj, &o);
  view_release(&v);
}

/* The first node of cj's attempt that is cordoned, or NULL (borrowed). */
static const char *cordoned(struct ctl *c, const struct cjob *cj)
{
  for (int32_t r = 0; cj->nodes && r < cj->replicas; r++) {
    const struct gq_node *n = gq_informer_typed(c->inf_nodes, cj->nodes[r]);

    if (n && n->unschedulable)
      return cj->nodes[r];
  }
  return NULL;
}

/* One admitted job's deadlines. The spec is looked up only for a job with
 * drainPolicy Wait (its maximum wait needs it); for every other job the
 * tick uses the values refresh() cached. */
static void tick_one(struct ctl *c, struct cjob *cj, int64_t now_ms,
                     int64_t *next_ms)
{
  const struct gq_gpujob *j = cj->drain_wait ? ctl_job_spec(c, cj) : NULL;
  struct gq_life_spec spec;
  struct gq_life_in in = {0};
  struct gq_life_out o;

  view_job(cj, &in.job);
  view_spec(c, cj, j, &spec);
  in.spec = &spec;
  in.cordoned = j && cj->running ? cordoned(c, cj) : NULL;
  in.drain_wait_s = c->o.drain_wait_s;
  in.now_ms = now_ms;
  in.mono_ms = gq_clock_mono_ms();
  gq_life_tick(&in, &o, next_ms);
  apply_flush(c, cj, &o);
  if (o.due == TD_DISRUPTED)
    jobs_preempt(c, cj, NULL, o.due_cause, o.due_why);
  else if (o.due != TD_NONE)
    jobs_teardown(c, cj, o.due, o.due_why);
}

/* Active deadlines and startup timeouts (virtual time, DESIGN §5). */
void jobs_tick(struct ctl *c, int64_t now_ms, int64_t *next_ms)
{
  struct cjob *cj, *tmp;
  struct cteam *t, *tt;
  int64_t dt = c->tick_ms && now_ms > c->tick_ms ? now_ms - c->tick_ms : 0;

  c->tick_ms = now_ms;
  status_tick(c);
  disrupt_force_tick(c, now_ms, next_ms);
  /* GPU-seconds allocated, for cost reports: a team's use per flavor is
   * the sum of its admitted jobs' GPUs (one add per team and flavor, not
   * one per job) */
  HASH_ITER(hh, c->teams, t, tt)
    for (size_t i = 0; dt && i < t->n_use; i++) {
      const char *l[] = {t->name, t->use[i].key};

      if (t->use[i].gpus)
        gq_metric_add(c->m_gpu_seconds, l,
                      (double)(t->use[i].gpus * dt) / 1000.0);
    }
  /* the admitted jobs only (c->active), not every job the controller knows */
  DL_FOREACH_SAFE2(c->active, cj, tmp, act_next) {
    if (cj->state != CJ_ACTIVE) {
      ctl_active_del(c, cj); /* left CJ_ACTIVE since it was added */
      continue;
    }
    tick_one(c, cj, now_ms, next_ms);
  }
}

/* ---- node-removal taints (DESIGN §5) ------------------------------- */

/* 1 if key is in the comma-separated list. */
static int listed(const char *list, const char *key)
{
  size_t k = strlen(key);

  for (const char *p = list; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t n = comma ? (size_t)(comma - p) : strlen(p);

    if (n == k && !strncmp(p, key, n))
      return 1;
    p = comma ? comma + 1 : NULL;
  }
  return 0;
}

void jobs_node_changed(struct ctl *c, const struct gq_node *n)
{
  const struct gq_taint *removal = NULL;
  struct gq_cap_pod *r, *rt;
  int noexec = 0;

  for (size_t i = 0; i < n->n_taints; i++) {
    if (!removal && listed(c->o.drain_taints, n->taints[i].key))
      removal = &n->taints[i];
    noexec |= !strcmp(n->taints[i].effect ?: "", "NoExecute");
  }
  if (!removal && !noexec)
    return; /* the common case: nothing to look at */
  HASH_ITER(hh, c->cap.held, r, rt) {
    struct cjob *cj = r->job_uid ? ctl_job(c, r->job_uid) : NULL;
    const struct gq_pod *p;
    const struct gq_taint *t = removal;
    char why[512];

    if (!cj || cj->state != CJ_ACTIVE || strcmp(r->node, n->meta.name))
      continue;
    if (!t && (p = gq_informer_typed(c->inf_pods, r->key)))
      t = gq_untolerated_taint(&p->sched, n, 1);
    if (!t)
      continue;
    snprintf(why, sizeof(why), "node %s is being removed (taint %s%s%s:%s)",
             n->meta.name, t->key, *t->value ? "=" : "", t->value,
             t->effect ? t->effect : "");
    jobs_preempt(c, cj, NULL, "NodeRemoval", why);
  }
}
