/* api/gpujob.c - GpuJob decoding and validation (see gpujob.h). */
#include "api/gpujob.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

static const char *const phase_names[] = {
    "",          "Pending", "Queued", "Admitted",  "Running",
    "Preempting", "Succeeded", "Failed", "Suspended", NULL};
static const char *const drain_names[] = {"Checkpoint", "Requeue", "Wait",
                                          NULL};

const char *gq_job_phase_name(enum gq_job_phase p)
{
  return p <= GQ_PHASE_SUSPENDED ? phase_names[p] : "";
}

const char *gq_drain_policy_name(enum gq_drain_policy p)
{
  return p <= GQ_DRAIN_WAIT ? drain_names[p] : "";
}

int gq_job_phase_final(enum gq_job_phase p)
{
  return p == GQ_PHASE_SUCCEEDED || p == GQ_PHASE_FAILED;
}

static int32_t get_i32(struct gq_dec *d, const json_t *o, const char *path,
                       int64_t min, int64_t max, int64_t dflt)
{
  int64_t v;

  gq_dec_int(d, o, path, min, max, dflt, &v);
  return (int32_t)v;
}

static void decode_gpu(struct gq_dec *d, const json_t *spec,
                       struct gq_gpujob *j)
{
  const json_t *gpu = gq_dec_object(d, spec, "spec.gpu", 0);

  j->gpu_resource = gq_dec_string(d, gpu, "spec.gpu.resource", 0, 253,
                                  GQ_DEFAULT_GPU_RESOURCE);
  if (!d->rc && !strchr(j->gpu_resource, '/'))
    gq_dec_fail_got(d, "spec.gpu.resource", gq_dec_get(gpu, "resource"),
                    "must be an extended resource name with a domain, such "
                    "as nvidia.com/gpu or nvidia.com/mig-1g.10gb");
  if (!d->rc)
    gq_dec_qualified_name(d, "spec.gpu.resource", j->gpu_resource);
  gq_dec_int(d, gpu, "spec.gpu.minMemoryMiB", 0, GQ_MAX_MIN_MEMORY_MIB, 0,
             &j->min_memory_mib);
  j->products = gq_dec_string_array(d, gpu, "spec.gpu.products", 0,
                                    GQ_MAX_PRODUCTS, gq_dec_label_value,
                                    &j->n_products);
}

static void decode_checkpoint(struct gq_dec *d, const json_t *spec,
                              struct gq_gpujob *j)
{
  const json_t *ck = gq_dec_object(d, spec, "spec.checkpoint", 0);

  j->has_checkpoint = ck != NULL;
  j->grace_s = j->checkpoint_interval_s = -1;
  if (!ck)
    return;
  if (!gq_dec_get(ck, "gracePeriodSeconds")) {
    gq_dec_fail(d, "spec.checkpoint.gracePeriodSeconds", "required value");
    return;
  }
  gq_dec_int(d, ck, "spec.checkpoint.gracePeriodSeconds", 1, GQ_MAX_GRACE_S,
             -1, &j->grace_s);
  gq_dec_int(d, ck, "spec.checkpoint.intervalSeconds", 1, GQ_MAX_DURATION_S,
             -1, &j->checkpoint_interval_s);
}

/* ---- shared templates ------------------------------------------------ */

/* Decoded pod-scheduling fields, shared by every template whose fields are
 * equal (keyed by gq_podsched_key()). */
struct sched_e {
  char *key;
  size_t refs;
  struct gq_podsched sched; /* its strings are in 'strings' */
  char *strings;
  unsigned hash;            /* of key: part of every job's shape */
  UT_hash_handle hh;
};

struct gq_gpujob_template {
  char *text;               /* canonical JSON (sorted keys, compact) */
  size_t refs;
  struct sched_e *sched;
  UT_hash_handle hh;
};

static pthread_mutex_t tmpl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct gq_gpujob_template *templates;
static struct sched_e *scheds;

/* Returns a reference to the shared record equal to s, taking s's arrays
 * (released at once when an equal record exists). tmpl_lock is held. */
static struct sched_e *sched_intern(struct gq_podsched *s)
{
  char *key = gq_podsched_key(s);
  struct gq_strpack p = {0};
  struct sched_e *e;

  HASH_FIND_STR(scheds, key, e);
  if (e) {
    free(key);
    gq_podsched_release(s);
    e->refs++;
    return e;
  }
  e = gq_xcalloc(1, sizeof(*e));
  e->key = key;
  e->refs = 1;
  e->sched = *s;
  memset(s, 0, sizeof(*s));
  gq_podsched_strings(&e->sched, &p);
  e->strings = gq_strpack_done(&p);
  HASH_VALUE(key, strlen(key), e->hash);
  HASH_ADD_KEYPTR(hh, scheds, e->key, strlen(e->key), e);
  return e;
}

/* Returns a reference to the template whose canonical text is text (taken)
 * and whose decoded pod spec is s (its arrays taken). */
static struct gq_gpujob_template *template_intern(char *text,
                                                 struct gq_podsched *s)
{
  struct gq_gpujob_template *t;

  pthread_mutex_lock(&tmpl_lock);
  HASH_FIND_STR(templates, text, t);
  if (t) {
    free(text);
    gq_podsched_release(s);
    t->refs++;
  } else {
    t = gq_xcalloc(1, sizeof(*t));
    t->text = text;
    t->refs = 1;
    t->sched = sched_intern(s);
    HASH_ADD_KEYPTR(hh, templates, t->text, strlen(t->text), t);
  }
  pthread_mutex_unlock(&tmpl_lock);
  return t;
}

static void template_unref(struct gq_gpujob_template *t)
{
  struct sched_e *e;

  if (!t)
    return;
  pthread_mutex_lock(&tmpl_lock);
  if (--t->refs == 0) {
    e = t->sched;
    HASH_DEL(templates, t);
    free(t->text);
    free(t);
    if (--e->refs == 0) {
      HASH_DEL(scheds, e);
      gq_podsched_release(&e->sched);
      free(e->strings);
      free(e->key);
      free(e);
    }
  }
  pthread_mutex_unlock(&tmpl_lock);
}

void gq_gpujob_template_counts(size_t *n_templates, size_t *n_scheds)
{
  pthread_mutex_lock(&tmpl_lock);
  *n_templates = HASH_COUNT(templates);
  *n_scheds = HASH_COUNT(scheds);
  pthread_mutex_unlock(&tmpl_lock);
}

json_t *gq_gpujob_template_json(const struct gq_gpujob *j)
{
  return j->template ? json_loads(j->template->text, 0, NULL) : NULL;
}

/* The pod template: a PodTemplateSpec whose spec gpuq completes. */
static void decode_template(struct gq_dec *d, const json_t *spec,
                            struct gq_gpujob *j)
{
  const json_t *tmpl = gq_dec_object(d, spec, "spec.template", 1);
  const json_t *pspec = gq_dec_object(d, tmpl, "spec.template.spec", 1);
  struct gq_podsched s;
  int64_t own;

  if (d->rc || gq_podsched_decode(d, pspec, "spec.template.spec", &s))
    return;
  if (*s.node_name) {
    gq_dec_fail_got(d, "spec.template.spec.nodeName",
                    gq_dec_get(pspec, "nodeName"),
                    "must be empty (gpuq chooses the node)");
    gq_podsched_release(&s);
    return;
  }
  own = gq_podsched_request(&s, j->gpu_resource);
  if (own != 0) {
    gq_dec_fail(d, "spec.template.spec.containers",
                "must not request %s (gpuq sets it from "
                "spec.gpusPerReplica), got %lld",
                j->gpu_resource, (long long)own);
    gq_podsched_release(&s);
    return;
  }
  j->template = template_intern(
      json_dumps(tmpl, JSON_COMPACT | JSON_SORT_KEYS), &s);
  j->sched = &j->template->sched->sched;
}

/* ---- status, read back ------------------------------------------------ */

/* Runs one strict read of a status field with a decoder of its own, so
 * that a bad field spoils only itself: it is flagged in st->bad and the
 * first such error goes to d (unless d has one). */
#define ST_READ(bit, expr)                                                   \
  do {                                                                       \
    struct gq_dec fd_;                                                       \
    gq_dec_init(&fd_);                                                       \
    {                                                                        \
      struct gq_dec *fd = &fd_;                                              \
      expr;                                                                  \
    }                                                                        \
    if (fd_.rc) {                                                            \
      st->bad |= (bit);                                                      \
      if (!d->rc)                                                            \
        *d = fd_;                                                            \
    }                                                                        \
  } while (0)

/* A timestamp read as it is: 0 when absent; flags 'bit' in *bad when it is
 * not one. */
static int64_t loose_time(const json_t *v, unsigned bit, unsigned *bad)
{
  int64_t ms = 0;

  if (v && !json_is_null(v) &&
      (!json_is_string(v) || gq_time_parse(json_string_value(v), &ms) != 0)) {
    *bad |= bit;
    ms = 0;
  }
  return ms;
}

static int64_t loose_int(const json_t *v, unsigned bit, unsigned *bad)
{
  if (v && !json_is_null(v) && !json_is_integer(v))
    *bad |= bit;
  return json_integer_value(v);
}

/* A condition gpuq can compare: an object of only the metav1.Condition
 * fields gpuq writes, each of its type. Returns 0, or -1. */
static int read_cond(const json_t *e, struct gq_gpujob_cond *c)
{
  static const char *const keys[] = {"type",    "status",
                                     "reason",  "message",
                                     "lastTransitionTime",
                                     "observedGeneration"};
  const char *k;
  const json_t *v;
  unsigned bad = 0;

  if (!json_is_object(e))
    return -1;
  json_object_foreach((json_t *)e, k, v) {
    size_t i = 0;

    while (i < 6 && strcmp(k, keys[i]))
      i++;
    if (i == 6 || (i < 5 && !json_is_string(v)) ||
        (i == 5 && !json_is_integer(v)))
      return -1;
  }
  c->type = json_string_value(json_object_get(e, "type"));
  c->status = json_string_value(json_object_get(e, "status"));
  c->reason = json_string_value(json_object_get(e, "reason"));
  c->message = json_string_value(json_object_get(e, "message"));
  c->transition_ms =
      loose_time(json_object_get(e, "lastTransitionTime"), 1, &bad);
  v = json_object_get(e, "observedGeneration");
  c->observed_generation = v ? json_integer_value(v) : -1;
  return bad ? -1 : 0;
}

/* The fields gpuq writes but does not validate, read as they are, and
 * which fields are there at all. */
static void read_status_loose(const json_t *s, struct gq_gpujob_status *st)
{
  static const struct {
    const char *key;
    unsigned bit;
  } fields[] = {{"phase", GQ_ST_PHASE},
                {"reason", GQ_ST_REASON},
                {"message", GQ_ST_MESSAGE},
                {"gpus", GQ_ST_GPUS},
                {"queuePosition", GQ_ST_POSITION},
                {"estimatedStartTime", GQ_ST_ETA},
                {"queuedAt", GQ_ST_QUEUED},
                {"admittedAt", GQ_ST_ADMITTED},
                {"startTime", GQ_ST_START},
                {"completionTime", GQ_ST_COMPLETION},
                {"nodes", GQ_ST_NODES},
                {"attempts", GQ_ST_ATTEMPTS},
                {"failedAttempts", GQ_ST_FAILURES},
                {"preemptions", GQ_ST_PREEMPTIONS},
                {"observedGeneration", GQ_ST_GENERATION},
                {"conditions", GQ_ST_CONDITIONS}};
  const json_t *v, *e;
  size_t i;

  if (!json_is_object(s))
    return;
  for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
    if (json_object_get(s, fields[i].key))
      st->has |= fields[i].bit;
  v = json_object_get(s, "message");
  st->message = json_string_value(v);
  if (v && !json_is_null(v) && !st->message)
    st->bad |= GQ_ST_MESSAGE;
  st->gpus = loose_int(json_object_get(s, "gpus"), GQ_ST_GPUS, &st->bad);
  st->position = loose_int(json_object_get(s, "queuePosition"),
                           GQ_ST_POSITION, &st->bad);
  st->eta_ms = loose_time(json_object_get(s, "estimatedStartTime"),
                          GQ_ST_ETA, &st->bad);
  v = json_object_get(s, "nodes");
  if (json_is_array(v) && json_array_size(v) > 0) {
    st->nodes = gq_xcalloc(json_array_size(v), sizeof(*st->nodes));
    json_array_foreach((json_t *)v, i, e) {
      if (json_is_string(e))
        st->nodes[st->n_nodes++] = json_string_value(e);
      else
        st->bad |= GQ_ST_NODES;
    }
  } else if (v && !json_is_null(v) && !json_is_array(v)) {
    st->bad |= GQ_ST_NODES;
  }
  v = json_object_get(s, "conditions");
  if (json_is_array(v) && json_array_size(v) > 0) {
    st->conds = gq_xcalloc(json_array_size(v), sizeof(*st->conds));
    json_array_foreach((json_t *)v, i, e) {
      if (read_cond(e, &st->conds[st->n_conds]) == 0)
        st->n_conds++;
      else
        st->bad |= GQ_ST_CONDITIONS;
    }
  } else if (v && !json_is_null(v) && !json_is_array(v)) {
    st->bad |= GQ_ST_CONDITIONS;
  }
}

/* Reads obj.status into st. The fields gpuq validates report the first
 * error in d, each field read on its own (a bad one spoils only itself). */
static void decode_status(struct gq_dec *d, const json_t *obj,
                          struct gq_gpujob_status *st)
{
  const json_t *s = NULL, *ck = NULL;
  int ph = -1;

  ST_READ(0, s = gq_dec_object(fd, obj, "status", 0));
  ST_READ(GQ_ST_PHASE,
          ph = gq_dec_enum(fd, s, "status.phase", phase_names + 1, 0, -1));
  st->phase = (enum gq_job_phase)(ph + 1);
  st->reason = "";
  ST_READ(GQ_ST_REASON,
          st->reason = gq_dec_string(fd, s, "status.reason", 0, 1024, ""));
  ST_READ(GQ_ST_QUEUED,
          gq_dec_time(fd, s, "status.queuedAt", &st->queued_ms));
  ST_READ(GQ_ST_ADMITTED,
          gq_dec_time(fd, s, "status.admittedAt", &st->admitted_ms));
  ST_READ(GQ_ST_START,
          gq_dec_time(fd, s, "status.startTime", &st->start_ms));
  ST_READ(GQ_ST_COMPLETION,
          gq_dec_time(fd, s, "status.completionTime", &st->completion_ms));
  ST_READ(GQ_ST_ATTEMPTS, gq_dec_int(fd, s, "status.attempts", 0, INT32_MAX,
                                     0, &st->attempts));
  ST_READ(GQ_ST_PREEMPTIONS, gq_dec_int(fd, s, "status.preemptions", 0,
                                        INT32_MAX, 0, &st->preemptions));
  ST_READ(GQ_ST_FAILURES, gq_dec_int(fd, s, "status.failedAttempts", 0,
                                     INT32_MAX, 0, &st->failures));
  ST_READ(GQ_ST_GENERATION,
          gq_dec_int(fd, s, "status.observedGeneration", 0, INT64_MAX, 0,
                     &st->observed_generation));
  ST_READ(0, ck = gq_dec_object(fd, s, "status.lastCheckpoint", 0));
  ST_READ(0, st->checkpoint = gq_dec_string(
                 fd, ck, "status.lastCheckpoint.location", 0, 4096, NULL));
  ST_READ(0, gq_dec_time(fd, ck, "status.lastCheckpoint.time",
                         &st->checkpoint_ms));
  read_status_loose(s, st);
}

/* ---- ownership -------------------------------------------------------- */

/* Moves every string j points to into j->strings. */
static void own_strings(struct gq_gpujob *j)
{
  struct gq_gpujob_status *st = &j->status;
  struct gq_strpack p = {0};
  size_t i;

  gq_strpack_add(&p, &j->meta.ns);
  gq_strpack_add(&p, &j->meta.name);
  gq_strpack_add(&p, &j->meta.uid);
  gq_strpack_add(&p, &j->meta.resource_version);
  gq_strpack_add(&p, &j->meta.owner_uid);
  gq_strpack_add(&p, &j->meta.owner_kind);
  gq_strpack_add(&p, &j->meta.owner_name);
  for (i = 0; i < j->meta.n_labels; i++) {
    gq_strpack_add(&p, &j->meta.labels[i].key);
    gq_strpack_add(&p, &j->meta.labels[i].value);
  }
  for (i = 0; i < j->n_finalizers; i++)
    gq_strpack_add(&p, &j->finalizers[i]);
  gq_strpack_add(&p, &j->invalid);
  gq_strpack_add(&p, &j->team);
  gq_strpack_add(&p, &j->priority_class);
  gq_strpack_add(&p, &j->gpu_resource);
  for (i = 0; i < j->n_products; i++)
    gq_strpack_add(&p, &j->products[i]);
  gq_strpack_add(&p, &st->reason);
  gq_strpack_add(&p, &st->message);
  gq_strpack_add(&p, &st->checkpoint);
  for (i = 0; i < st->n_nodes; i++)
    gq_strpack_add(&p, &st->nodes[i]);
  for (i = 0; i < st->n_conds; i++) {
    gq_strpack_add(&p, &st->conds[i].type);
    gq_strpack_add(&p, &st->conds[i].status);
    gq_strpack_add(&p, &st->conds[i].reason);
    gq_strpack_add(&p, &st->conds[i].message);
  }
  j->strings = gq_strpack_done(&p);
}

/* metadata.finalizers: its string entries (borrowed until own_strings). */
static void read_finalizers(const json_t *obj, struct gq_gpujob *j)
{
  const json_t *fin =
      json_object_get(json_object_get(obj, "metadata"), "finalizers"), *e;
  size_t i;

  if (!json_is_array(fin))
    return; /* absent: finalizers stays NULL (an empty list is not) */
  j->finalizers = gq_xcalloc(json_array_size(fin) + 1, sizeof(*j->finalizers));
  json_array_foreach((json_t *)fin, i, e) {
    if (json_is_string(e))
      j->finalizers[j->n_finalizers++] = json_string_value(e);
  }
}

/* What placement reads, hashed (see gq_gpujob_decode). */
static uint32_t shape_of(const struct gq_gpujob *j)
{
  char buf[512];
  unsigned h = 0, hp = 0, v;
  int n;

  for (size_t i = 0; i < j->n_products; i++) {
    HASH_VALUE(j->products[i], strlen(j->products[i]), v);
    hp = hp * 31u + v;
  }
  n = snprintf(buf, sizeof(buf), "%s|%d|%d|%lld|%zu:%u|%u", j->gpu_resource,
               (int)j->replicas, (int)j->gpus_per_replica,
               (long long)j->min_memory_mib, j->n_products, hp,
               j->template->sched->hash);
  HASH_VALUE(buf, n > 0 && (size_t)n < sizeof(buf) ? (size_t)n : 0, h);
  return h ? h : 1;
}

static void decode_spec(struct gq_dec *d, const json_t *spec,
                        struct gq_gpujob *j)
{
  int64_t v;

  j->team = gq_dec_string(d, spec, "spec.team", 1, 63, "");
  if (!d->rc)
    gq_dec_dns_label(d, "spec.team", j->team);
  j->priority = get_i32(d, spec, "spec.priority", INT32_MIN, INT32_MAX, 0);
  j->priority_class =
      gq_dec_string(d, spec, "spec.priorityClassName", 0, 253, NULL);
  j->replicas = get_i32(d, spec, "spec.replicas", 1, GQ_MAX_REPLICAS, 1);
  if (!d->rc && !gq_dec_get(spec, "gpusPerReplica"))
    gq_dec_fail(d, "spec.gpusPerReplica", "required value");
  j->gpus_per_replica = get_i32(d, spec, "spec.gpusPerReplica", 1,
                                GQ_MAX_GPUS_PER_REPLICA, 1);
  if (!d->rc && gq_mul_i64(j->replicas, j->gpus_per_replica, &j->gpus) != 0)
    gq_dec_fail(d, "spec.gpusPerReplica", "replicas x gpusPerReplica "
                "overflows");
  decode_gpu(d, spec, j);
  j->preemptible = gq_dec_bool(d, spec, "spec.preemptible", 1);
  decode_checkpoint(d, spec, j);
  j->drain = gq_dec_enum(d, spec, "spec.drainPolicy", drain_names, 0,
                         j->has_checkpoint ? GQ_DRAIN_CHECKPOINT
                                           : GQ_DRAIN_REQUEUE);
  if (!d->rc && j->drain == GQ_DRAIN_CHECKPOINT && !j->has_checkpoint)
    gq_dec_fail(d, "spec.drainPolicy",
                "Checkpoint requires spec.checkpoint (how long the job needs "
                "to write one)");
  gq_dec_int(d, spec, "spec.expectedDurationSeconds", 1, GQ_MAX_DURATION_S, -1,
             &j->expected_duration_s);
  gq_dec_int(d, spec, "spec.activeDeadlineSeconds", 1, GQ_MAX_DURATION_S, -1,
             &j->active_deadline_s);
  gq_dec_int(d, spec, "spec.startupTimeoutSeconds", 1, GQ_MAX_GRACE_S, -1,
             &j->startup_timeout_s);
  gq_dec_int(d, spec, "spec.backoffLimit", 0, GQ_MAX_BACKOFF_LIMIT,
             GQ_DEFAULT_BACKOFF_LIMIT, &v);
  j->backoff_limit = (int32_t)v;
  j->suspend = gq_dec_bool(d, spec, "spec.suspend", 0);
  decode_template(d, spec, j);
}

int gq_gpujob_decode(const json_t *obj, struct gq_gpujob *out, char *err,
                     size_t errlen)
{
  struct gq_dec d;

  memset(out, 0, sizeof(*out));
  gq_dec_init(&d);
  if (!json_is_object(obj))
    gq_dec_fail_got(&d, "(root)", obj, "must be an object");
  if (gq_meta_decode(&d, obj,
                     GQ_META_NAMESPACED | GQ_META_NAME_LABEL, &out->meta) == 0)
    decode_spec(&d, gq_dec_object(&d, obj, "spec", 1), out);
  if (!d.rc)
    decode_status(&d, obj, &out->status);
  if (d.rc) {
    snprintf(err, errlen, "%s", d.msg);
    gq_gpujob_release(out);
    return d.rc;
  }
  read_finalizers(obj, out);
  own_strings(out);
  out->shape = shape_of(out);
  return 0;
}

/* A string member of metadata, "" when absent or not a string. */
static const char *meta_str(const json_t *m, const char *k)
{
  const char *s = json_string_value(json_object_get(m, k));

  return s ? s : "";
}

void gq_gpujob_decode_invalid(const json_t *obj, const char *msg,
                              struct gq_gpujob *out)
{
  const json_t *m = json_object_get(obj, "metadata"), *v;
  struct gq_dec d;

  memset(out, 0, sizeof(*out));
  out->meta.ns = meta_str(m, "namespace");
  out->meta.name = meta_str(m, "name");
  out->meta.uid = meta_str(m, "uid");
  out->meta.resource_version = meta_str(m, "resourceVersion");
  out->meta.generation = json_integer_value(json_object_get(m, "generation"));
  out->meta.deletion_grace_s = -1;
  v = json_object_get(m, "deletionTimestamp");
  if (v && !json_is_null(v) &&
      (!json_is_string(v) ||
       gq_time_parse(json_string_value(v), &out->meta.deletion_ms) != 0 ||
       out->meta.deletion_ms <= 0))
    out->meta.deletion_ms = 1;
  out->invalid = msg;
  out->team = "";
  out->backoff_limit = GQ_DEFAULT_BACKOFF_LIMIT;
  out->expected_duration_s = out->active_deadline_s = -1;
  out->startup_timeout_s = out->grace_s = out->checkpoint_interval_s = -1;
  gq_dec_init(&d);
  decode_status(&d, obj, &out->status);
  read_finalizers(obj, out);
  own_strings(out);
}

void gq_gpujob_release(struct gq_gpujob *j)
{
  gq_meta_release(&j->meta);
  template_unref(j->template);
  free(j->products);
  free(j->finalizers);
  free(j->status.nodes);
  free(j->status.conds);
  free(j->strings);
  memset(j, 0, sizeof(*j));
}
