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
#include <zlib.h>

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

/* Templates are grouped by their decoded pod-scheduling fields (one
 * struct sched_e per distinct gq_podsched_key()). Jobs of one group
 * usually differ in a few strings (arguments, annotations), so each
 * template's canonical text is kept deflated (RFC 1951, zlib) with the
 * group's first template as the preset dictionary: the text of a template
 * like one seen before costs tens of bytes instead of hundreds. Equal
 * texts deflate to equal bytes (same dictionary, same settings), so a
 * template is found again by its deflated bytes. */
#define Z_WBITS 12 /* 4 KB window: holds a dictionary of that size */
#define Z_DICT_MAX (1u << Z_WBITS)

struct sched_e {
  char *key;
  size_t refs;              /* templates that use it */
  struct gq_podsched sched; /* its strings are in 'strings' */
  char *strings;
  unsigned hash;            /* of key: part of every job's shape */
  unsigned char *dict;      /* the first template's text (at most
                               Z_DICT_MAX bytes of it) */
  size_t dict_len;
  struct gq_gpujob_template *templates; /* by deflated text */
  UT_hash_handle hh;
};

struct gq_gpujob_template {
  unsigned char *z;         /* the canonical JSON text, deflated */
  size_t z_len, len;        /* deflated and text lengths */
  size_t refs;              /* jobs that hold it */
  struct sched_e *sched;
  UT_hash_handle hh;
};

static pthread_mutex_t tmpl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sched_e *scheds;
static size_t n_templates;
static z_stream zdef;       /* reused under tmpl_lock */
static int zdef_ready;

/* Deflates text with e's dictionary into a new buffer. tmpl_lock held. */
static unsigned char *deflate_text(struct sched_e *e, const char *text,
                                   size_t len, size_t *z_len)
{
  unsigned char *out;
  uLong cap;

  if (!zdef_ready) {
    if (deflateInit2(&zdef, Z_BEST_COMPRESSION, Z_DEFLATED, -Z_WBITS, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK)
      abort(); /* only out of memory */
    zdef_ready = 1;
  } else {
    deflateReset(&zdef);
  }
  deflateSetDictionary(&zdef, e->dict, (uInt)e->dict_len);
  cap = deflateBound(&zdef, (uLong)len);
  out = gq_xmalloc(cap);
  zdef.next_in = (Bytef *)(uintptr_t)text;
  zdef.avail_in = (uInt)len;
  zdef.next_out = out;
  zdef.avail_out = (uInt)cap;
  if (deflate(&zdef, Z_FINISH) != Z_STREAM_END)
    abort(); /* deflateBound() is enough by definition */
  *z_len = cap - zdef.avail_out;
  return gq_xrealloc(out, *z_len);
}

/* Returns the shared record for s (taking s's arrays; released at once
 * when an equal record exists), with text as its dictionary if new.
 * tmpl_lock held. */
static struct sched_e *sched_intern(struct gq_podsched *s, const char *text,
                                    size_t len)
{
  char *key = gq_podsched_key(s);
  struct gq_strpack p = {0};
  struct sched_e *e;

  HASH_FIND_STR(scheds, key, e);
  if (e) {
    free(key);
    gq_podsched_release(s);
    return e;
  }
  e = gq_xcalloc(1, sizeof(*e));
  e->key = key;
  e->sched = *s;
  memset(s, 0, sizeof(*s));
  gq_podsched_strings(&e->sched, &p);
  e->strings = gq_strpack_done(&p);
  HASH_VALUE(key, strlen(key), e->hash);
  e->dict_len = len < Z_DICT_MAX ? len : Z_DICT_MAX;
  e->dict = gq_xmalloc(e->dict_len ? e->dict_len : 1);
  memcpy(e->dict, text + (len - e->dict_len), e->dict_len);
  HASH_ADD_KEYPTR(hh, scheds, e->key, strlen(e->key), e);
  return e;
}

/* Returns a reference to the template whose canonical text is text
 * (taken) and whose decoded pod spec is s (its arrays taken). */
static struct gq_gpujob_template *template_intern(char *text,
                                                 struct gq_podsched *s)
{
  size_t len = strlen(text), z_len;
  struct gq_gpujob_template *t;
  struct sched_e *e;
  unsigned char *z;

  pthread_mutex_lock(&tmpl_lock);
  e = sched_intern(s, text, len);
  z = deflate_text(e, text, len, &z_len);
  free(text);
  HASH_FIND(hh, e->templates, z, z_len, t);
  if (t) {
    free(z);
    t->refs++;
  } else {
    t = gq_xcalloc(1, sizeof(*t));
    t->z = z;
    t->z_len = z_len;
    t->len = len;
    t->refs = 1;
    t->sched = e;
    e->refs++;
    n_templates++;
    HASH_ADD_KEYPTR(hh, e->templates, t->z, t->z_len, t);
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
    HASH_DEL(e->templates, t);
    n_templates--;
    free(t->z);
    free(t);
    if (--e->refs == 0) {
      HASH_DEL(scheds, e);
      gq_podsched_release(&e->sched);
      free(e->strings);
      free(e->dict);
      free(e->key);
      free(e);
    }
  }
  if (!scheds && zdef_ready) { /* nothing shared: no state kept either */
    deflateEnd(&zdef);
    zdef_ready = 0;
  }
  pthread_mutex_unlock(&tmpl_lock);
}

void gq_gpujob_template_counts(size_t *templates, size_t *n_scheds,
                               size_t *deflated_bytes)
{
  struct sched_e *e, *te;
  struct gq_gpujob_template *t, *tt;
  size_t z = 0;

  pthread_mutex_lock(&tmpl_lock);
  *templates = n_templates;
  *n_scheds = HASH_COUNT(scheds);
  HASH_ITER(hh, scheds, e, te) {
    HASH_ITER(hh, e->templates, t, tt)
      z += t->z_len;
  }
  if (deflated_bytes)
    *deflated_bytes = z;
  pthread_mutex_unlock(&tmpl_lock);
}

json_t *gq_gpujob_template_json(const struct gq_gpujob *j)
{
  const struct gq_gpujob_template *t = j->template;
  z_stream zs = {0};
  char *text;
  json_t *out = NULL;
  int ok;

  if (!t)
    return NULL;
  text = gq_xmalloc(t->len + 1);
  if (inflateInit2(&zs, -Z_WBITS) != Z_OK)
    abort(); /* only out of memory */
  /* the dictionary and the deflated bytes never change once shared */
  inflateSetDictionary(&zs, t->sched->dict, (uInt)t->sched->dict_len);
  zs.next_in = t->z;
  zs.avail_in = (uInt)t->z_len;
  zs.next_out = (Bytef *)text;
  zs.avail_out = (uInt)t->len;
  ok = inflate(&zs, Z_FINISH) == Z_STREAM_END && zs.avail_out == 0;
  inflateEnd(&zs);
  text[t->len] = '\0';
  if (ok)
    out = json_loadb(text, t->len, 0, NULL);
  free(text);
  return out;
}

/* The pod template: a PodTemplateSpec whose spec gpuq completes. */
static void decode_template(struct gq_dec *d, const json_t *spec,
                            struct gq_gpujob *j)
{
  const json_t *tmpl = gq_dec_object(d, spec, "spec.template", 1);
  const json_t *pspec = gq_dec_object(d, tmpl, "spec.template.spec", 1);
  struct gq_podsched s;
  int64_t own;
  char *text;

  gq_dec_annotations(d, gq_dec_object(d, tmpl, "spec.template.metadata", 0),
                     "spec.template.metadata.annotations");
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
  text = json_dumps(tmpl, JSON_COMPACT | JSON_SORT_KEYS);
  if (strlen(text) > GQ_MAX_TEMPLATE_BYTES) {
    gq_dec_fail(d, "spec.template", "must be no more than %u bytes as "
                "compact JSON (every pod gpuq creates carries it), got %zu",
                GQ_MAX_TEMPLATE_BYTES, strlen(text));
    free(text);
    gq_podsched_release(&s);
    return;
  }
  j->template = template_intern(text, &s);
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
                {"attainedGPUSeconds", GQ_ST_SERVICE},
                {"flavor", GQ_ST_FLAVOR},
                {"allocatedGPUSeconds", GQ_ST_ALLOC},
                {"usedGPUSeconds", GQ_ST_USED},
                {"idleGPUSeconds", GQ_ST_IDLE},
                {"gpuUtilization", GQ_ST_UTIL},
                {"utilizationTime", GQ_ST_UTIL_TIME},
                {"observedGeneration", GQ_ST_GENERATION},
                {"conditions", GQ_ST_CONDITIONS},
                {"lastCheckpoint", GQ_ST_CHECKPOINT}};
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

/* The usage fields of status s (issue 22) into st->usage, as
 * decode_status; st->usage is made only when one of them is there (a
 * queued job's cached status stays small). */
static void read_usage(struct gq_dec *d, const json_t *s,
                       struct gq_gpujob_status *st)
{
  static const char *const keys[] = {
      "flavor", "allocatedGPUSeconds", "usedGPUSeconds", "idleGPUSeconds",
      "gpuUtilization", "utilizationTime", NULL};
  struct gq_gpujob_usage *u;
  int any = 0;

  for (size_t i = 0; keys[i] && !any; i++)
    any = json_object_get(s, keys[i]) != NULL;
  if (!any)
    return;
  u = st->usage = gq_xcalloc(1, sizeof(*u));
  ST_READ(GQ_ST_FLAVOR,
          u->flavor = gq_dec_string(fd, s, "status.flavor", 0, 253, NULL));
  ST_READ(GQ_ST_ALLOC, gq_dec_int(fd, s, "status.allocatedGPUSeconds", 0,
                                  INT64_MAX, 0, &u->alloc_s));
  ST_READ(GQ_ST_USED, gq_dec_int(fd, s, "status.usedGPUSeconds", 0,
                                 INT64_MAX, 0, &u->used_s));
  ST_READ(GQ_ST_IDLE, gq_dec_int(fd, s, "status.idleGPUSeconds", 0,
                                 INT64_MAX, 0, &u->idle_s));
  ST_READ(GQ_ST_UTIL, gq_dec_int(fd, s, "status.gpuUtilization", 0, 100, -1,
                                 &u->util_pct));
  ST_READ(GQ_ST_UTIL_TIME,
          gq_dec_time(fd, s, "status.utilizationTime", &u->util_ms));
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
  ST_READ(GQ_ST_SERVICE, gq_dec_int(fd, s, "status.attainedGPUSeconds", 0,
                                    INT64_MAX, 0, &st->service_s));
  read_usage(d, s, st);
  ST_READ(GQ_ST_GENERATION,
          gq_dec_int(fd, s, "status.observedGeneration", 0, INT64_MAX, 0,
                     &st->observed_generation));
  ST_READ(GQ_ST_CHECKPOINT,
          ck = gq_dec_object(fd, s, "status.lastCheckpoint", 0));
  ST_READ(GQ_ST_CHECKPOINT, st->checkpoint = gq_dec_string(
                 fd, ck, "status.lastCheckpoint.location", 0, 4096, NULL));
  ST_READ(GQ_ST_CHECKPOINT,
          gq_dec_time(fd, ck, "status.lastCheckpoint.time",
                      &st->checkpoint_ms));
  read_status_loose(s, st);
}

/* ---- ownership -------------------------------------------------------- */

/* The strings of j that repeat across jobs (namespace, team, labels,
 * status reasons and messages, ...): shared through gq_intern(). */
static void shared_strings(struct gq_gpujob *j, struct gq_strpack *p)
{
  struct gq_gpujob_status *st = &j->status;
  size_t i;

  gq_strpack_add(p, &j->meta.ns);
  gq_strpack_add(p, &j->meta.owner_kind);
  for (i = 0; i < j->meta.n_labels; i++) {
    gq_strpack_add(p, &j->meta.labels[i].key);
    gq_strpack_add(p, &j->meta.labels[i].value);
  }
  for (i = 0; i < j->n_finalizers; i++)
    gq_strpack_add(p, &j->finalizers[i]);
  gq_strpack_add(p, &j->team);
  gq_strpack_add(p, &j->priority_class);
  gq_strpack_add(p, &j->gpu_resource);
  for (i = 0; i < j->n_products; i++)
    gq_strpack_add(p, &j->products[i]);
  gq_strpack_add(p, &st->reason);
  gq_strpack_add(p, &st->message);
  if (st->usage)
    gq_strpack_add(p, &st->usage->flavor);
  for (i = 0; i < st->n_nodes; i++)
    gq_strpack_add(p, &st->nodes[i]);
  for (i = 0; i < st->n_conds; i++) {
    gq_strpack_add(p, &st->conds[i].type);
    gq_strpack_add(p, &st->conds[i].status);
    gq_strpack_add(p, &st->conds[i].reason);
    gq_strpack_add(p, &st->conds[i].message);
  }
}

/* Makes j own its strings: those of this job alone (name, uid,
 * resourceVersion, ...) move into j->strings, the others are shared. */
static void own_strings(struct gq_gpujob *j)
{
  struct gq_strpack p = {0};

  shared_strings(j, &p);
  for (size_t i = 0; i < p.n; i++)
    *p.slots[i] = gq_intern(*p.slots[i]);
  free(p.slots);
  memset(&p, 0, sizeof(p));
  gq_strpack_add(&p, &j->meta.name);
  gq_strpack_add(&p, &j->meta.uid);
  gq_strpack_add(&p, &j->meta.resource_version);
  gq_strpack_add(&p, &j->meta.owner_uid);
  gq_strpack_add(&p, &j->meta.owner_name);
  gq_strpack_add(&p, &j->invalid);
  gq_strpack_add(&p, &j->status.checkpoint);
  gq_strpack_add(&p, &j->wl_name);
  for (size_t i = 0; i < j->n_wl_pods; i++)
    gq_strpack_add(&p, &j->wl_pods[i]);
  j->strings = gq_strpack_done(&p);
  j->owned = 1;
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

static const char *const wl_names[] = {"Pod", "PodGroup", "Job", NULL};

const char *gq_wl_kind_name(enum gq_wl_kind k)
{
  return k > GQ_WL_NONE && k <= GQ_WL_JOB ? wl_names[k - 1] : "";
}

/* spec.workload (docs/integrations.md): a Pod names its one pod, a
 * PodGroup lists one pod per replica, a Job lists none. */
static void decode_workload(struct gq_dec *d, const json_t *spec,
                            struct gq_gpujob *j)
{
  const json_t *w = gq_dec_object(d, spec, "spec.workload", 0);
  int k;

  if (!w)
    return;
  k = gq_dec_enum(d, w, "spec.workload.kind", wl_names, 1, 0);
  j->wl_name = gq_dec_string(d, w, "spec.workload.name", 1, 253, "");
  if (!d->rc)
    gq_dec_dns_subdomain(d, "spec.workload.name", j->wl_name, 253);
  j->wl_pods = gq_dec_string_array(d, w, "spec.workload.pods", 0,
                                   GQ_MAX_WORKLOAD_PODS, NULL, &j->n_wl_pods);
  for (size_t i = 0; !d->rc && i < j->n_wl_pods; i++)
    gq_dec_dns_subdomain(d, "spec.workload.pods", j->wl_pods[i], 253);
  if (d->rc)
    return;
  j->wl_kind = (enum gq_wl_kind)(k + 1);
  if (j->wl_kind == GQ_WL_JOB ? j->n_wl_pods != 0
                              : j->n_wl_pods != (size_t)j->replicas)
    gq_dec_fail(d, "spec.workload.pods", "a %s lists %s, got %zu entries for "
                "%d replicas", wl_names[k],
                j->wl_kind == GQ_WL_JOB ? "no pods" : "one pod per replica",
                j->n_wl_pods, (int)j->replicas);
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
  decode_workload(d, spec, j);
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
                     GQ_META_NAMESPACED | GQ_META_NAME_LABEL, &out->meta) == 0 &&
      gq_dec_annotations(&d, gq_dec_get(obj, "metadata"),
                         "metadata.annotations") == 0)
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

void gq_gpujob_decode_invalid(const json_t *obj, const char *msg,
                              struct gq_gpujob *out)
{
  const json_t *m = json_object_get(obj, "metadata"), *v;
  struct gq_dec d;

  memset(out, 0, sizeof(*out));
  out->meta.ns = gq_meta_str(obj, "namespace");
  out->meta.name = gq_meta_str(obj, "name");
  out->meta.uid = gq_meta_str(obj, "uid");
  out->meta.resource_version = gq_meta_str(obj, "resourceVersion");
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
  if (j->owned) { /* else its strings are still the JSON's (decode error) */
    struct gq_strpack p = {0};

    shared_strings(j, &p);
    for (size_t i = 0; i < p.n; i++)
      gq_intern_release(*p.slots[i]);
    free(p.slots);
  }
  gq_meta_release(&j->meta);
  template_unref(j->template);
  free(j->products);
  free(j->wl_pods);
  free(j->finalizers);
  free(j->status.nodes);
  free(j->status.conds);
  free(j->status.usage);
  free(j->strings);
  memset(j, 0, sizeof(*j));
}
