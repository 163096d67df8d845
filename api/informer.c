/* api/informer.c - reflector + store (see informer.h). */
#include "api/informer.h"

#include "base/alloc.h"
#include "base/backoff.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#define SHORT_WATCH_MS 1000 /* a watch ending sooner, empty, backs off */

struct entry {
  char *key;      /* the block the uid and resourceVersion follow in */
  const char *uid, *rv;
  json_t *obj;    /* NULL for a typed_only object */
  unsigned listed; /* the list that last showed it (relists) */
  void *typed;
  UT_hash_handle hh;
};

struct gq_informer {
  struct gq_kclient *c;
  struct gq_informer_opts o;
  struct gq_informer_handlers h;
  void *arg;
  struct entry *store;
  struct gq_kwatch *watch;
  char rv[64];
  int synced, stopping, listing, timer_closed;
  unsigned lists, watches, events_in_watch;
  unsigned list_gen;     /* the list in progress, or the last one */
  int64_t watch_started_ms;
  struct gq_backoff bo;
  uv_timer_t timer;
};

static const struct gq_lc lc = {"api", "informer", NULL};

static void relist(struct gq_informer *inf);
static void rewatch(struct gq_informer *inf);
static void maybe_free(struct gq_informer *inf);
static void *decode(struct gq_informer *inf, const json_t *obj);

static void key_of(const json_t *obj, char *buf, size_t len)
{
  const json_t *m = json_object_get(obj, "metadata");
  const char *ns = json_string_value(json_object_get(m, "namespace"));
  const char *name = json_string_value(json_object_get(m, "name"));

  snprintf(buf, len, "%s%s%s", ns && *ns ? ns : "", ns && *ns ? "/" : "",
           name ? name : "");
}

static const char *rv_of(const json_t *obj)
{
  const char *rv = json_string_value(
      json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));

  return rv ? rv : "";
}

static const char *uid_of(const json_t *obj)
{
  const char *uid = json_string_value(
      json_object_get(json_object_get(obj, "metadata"), "uid"));

  return uid ? uid : "";
}

/* Sets e's key block (key, uid, resourceVersion of obj). */
static void set_ids(struct entry *e, const char *key, const json_t *obj)
{
  size_t lk = strlen(key), lu = strlen(uid_of(obj)), lr = strlen(rv_of(obj));
  char *b = gq_xmalloc(lk + lu + lr + 3);

  memcpy(b, key, lk + 1);
  memcpy(b + lk + 1, uid_of(obj), lu + 1);
  memcpy(b + lk + lu + 2, rv_of(obj), lr + 1);
  free(e->key);
  e->key = b;
  e->uid = b + lk + 1;
  e->rv = b + lk + lu + 2;
}

/* Stores the state obj in e: its JSON (unless typed_only and decoded) and
 * its typed form. */
static void set_obj(struct gq_informer *inf, struct entry *e,
                    const json_t *obj)
{
  e->typed = decode(inf, obj);
  e->obj = inf->o.typed_only && e->typed ? NULL : json_incref((json_t *)obj);
}

/* The last state of a typed_only object, for a delete handler: its
 * metadata namespace, name and uid (a new reference). */
static json_t *meta_only(const struct entry *e)
{
  const char *slash = strchr(e->key, '/');
  json_t *m = json_pack("{s:s,s:s}", "uid", e->uid, "resourceVersion", e->rv);

  if (slash) {
    json_object_set_new(m, "namespace",
                        json_stringn(e->key, (size_t)(slash - e->key)));
    json_object_set_new(m, "name", json_string(slash + 1));
  } else {
    json_object_set_new(m, "name", json_string(e->key));
  }
  return json_pack("{s:o}", "metadata", m);
}

static void *decode(struct gq_informer *inf, const json_t *obj)
{
  char err[512];
  void *t;

  if (!inf->h.decode)
    return NULL;
  t = inf->h.decode(obj, err, sizeof(err));
  if (!t) {
    char key[600];

    key_of(obj, key, sizeof(key));
    GQ_LOG(GQ_DEBUG, &lc, "cannot decode '%s': %s", key, err);
  }
  return t;
}

static void free_entry(struct gq_informer *inf, struct entry *e)
{
  if (e->typed && inf->h.release)
    inf->h.release(e->typed);
  json_decref(e->obj);
  free(e->key);
  free(e);
}

/* Stores obj as the new state of its key and tells the handlers. Its
 * metadata.managedFields goes first (informer.h): obj is the decoded
 * watch event or list item, which the informer alone reads. */
static void upsert(struct gq_informer *inf, const json_t *obj)
{
  struct entry *e;
  char key[600];
  json_t *old;
  void *old_typed;

  json_object_del(json_object_get(obj, "metadata"), "managedFields");
  key_of(obj, key, sizeof(key));
  HASH_FIND_STR(inf->store, key, e);
  if (e)
    e->listed = inf->list_gen;
  if (!e) {
    e = gq_xcalloc(1, sizeof(*e));
    e->listed = inf->list_gen;
    set_ids(e, key, obj);
    set_obj(inf, e, obj);
    HASH_ADD_KEYPTR(hh, inf->store, e->key, strlen(e->key), e);
    if (inf->h.add)
      inf->h.add(obj, inf->arg);
    return;
  }
  if (!strcmp(e->rv, rv_of(obj)))
    return; /* same version: nothing changed */
  old = e->obj ? e->obj : meta_only(e);
  old_typed = e->typed;
  HASH_DEL(inf->store, e); /* its key moves with the new block */
  set_ids(e, key, obj);
  HASH_ADD_KEYPTR(hh, inf->store, e->key, strlen(e->key), e);
  set_obj(inf, e, obj);
  if (inf->h.update)
    inf->h.update(old, obj, inf->arg);
  json_decref(old);
  if (old_typed && inf->h.release)
    inf->h.release(old_typed);
}

static void remove_key(struct gq_informer *inf, const char *key,
                       const json_t *last)
{
  struct entry *e;

  HASH_FIND_STR(inf->store, key, e);
  if (!e)
    return;
  HASH_DEL(inf->store, e);
  if (inf->h.del) {
    json_t *bare = last || e->obj ? NULL : meta_only(e);

    inf->h.del(last ? last : e->obj ? e->obj : bare, inf->arg);
    json_decref(bare);
  }
  free_entry(inf, e);
}

static void on_event(enum gq_watch_type type, const json_t *obj, void *arg)
{
  struct gq_informer *inf = arg;
  char key[600];

  inf->events_in_watch++;
  snprintf(inf->rv, sizeof(inf->rv), "%s", rv_of(obj));
  if (type == GQ_WATCH_DELETED) {
    key_of(obj, key, sizeof(key));
    remove_key(inf, key, obj);
  } else {
    upsert(inf, obj);
  }
}

static void on_timer(uv_timer_t *t)
{
  struct gq_informer *inf = t->data;

  if (inf->synced && inf->rv[0])
    rewatch(inf);
  else
    relist(inf);
}

static void retry_later(struct gq_informer *inf, int relist_next)
{
  if (relist_next)
    inf->rv[0] = '\0';
  uv_timer_start(&inf->timer, on_timer, gq_backoff_next(&inf->bo), 0);
}

static void on_watch_end(int rc, const char *last_rv, void *arg)
{
  struct gq_informer *inf = arg;
  int64_t lasted = gq_clock_mono_ms() - inf->watch_started_ms;

  inf->watch = NULL;
  if (inf->stopping) {
    maybe_free(inf);
    return;
  }
  if (last_rv && *last_rv)
    snprintf(inf->rv, sizeof(inf->rv), "%s", last_rv);
  if (rc == GQ_EGONE) { /* too old: list again, then watch from there */
    GQ_LOG(GQ_INFO, &lc, "watch of %s expired; relisting", inf->o.path);
    inf->rv[0] = '\0';
    relist(inf);
    return;
  }
  if (rc == 0 && (lasted >= SHORT_WATCH_MS || inf->events_in_watch)) {
    gq_backoff_reset(&inf->bo);
    rewatch(inf); /* a normal server timeout: resume at once */
    return;
  }
  /* A broken or very short watch (client-go's VeryShortWatchError). */
  retry_later(inf, 0);
}

static void rewatch(struct gq_informer *inf)
{
  struct gq_kwatch_opts w = {inf->o.path, inf->rv, inf->o.label_selector,
                             inf->o.field_selector, 1,
                             inf->o.watch_timeout_s, 1};

  inf->events_in_watch = 0;
  inf->watch_started_ms = gq_clock_mono_ms();
  inf->watches++;
  inf->watch = gq_kwatch_start(inf->c, &w, on_event, on_watch_end, inf);
  if (!inf->watch)
    retry_later(inf, 0);
}

/* One page of a list: adds and updates what changed as it arrives (only
 * one page's JSON is held at a time); the last page then deletes what the
 * list did not show (client-go's Replace with tombstones). */
static void on_page(int rc, const struct gq_k8s_status *st,
                    const json_t *items, const char *rv, int last, void *arg)
{
  struct gq_informer *inf = arg;
  struct entry *e, *tmp;
  const json_t *it;
  char key[600];
  size_t i;

  if (!inf->stopping && rc == 0)
    json_array_foreach((json_t *)items, i, it)
      upsert(inf, it);
  if (!last)
    return;
  inf->listing = 0;
  if (inf->stopping) {
    maybe_free(inf);
    return;
  }
  if (rc != 0) {
    GQ_LOG(GQ_WARN, &lc, "cannot list %s: %s", inf->o.path,
           st ? st->message : gq_strerror(rc));
    retry_later(inf, 1);
    return;
  }
  inf->lists++;
  HASH_ITER(hh, inf->store, e, tmp) {
    if (e->listed != inf->list_gen) {
      snprintf(key, sizeof(key), "%s", e->key);
      remove_key(inf, key, NULL);
    }
  }
  snprintf(inf->rv, sizeof(inf->rv), "%s", rv ? rv : "");
  gq_backoff_reset(&inf->bo);
  if (!inf->synced) {
    inf->synced = 1;
    if (inf->h.synced)
      inf->h.synced(inf->arg);
  }
  if (!inf->stopping)
    rewatch(inf);
}

static void relist(struct gq_informer *inf)
{
  inf->listing = 1;
  inf->list_gen++;
  if (gq_kclient_list_pages(inf->c, inf->o.path, inf->o.label_selector,
                            inf->o.field_selector, 500, 1, on_page,
                            inf) != 0) {
    inf->listing = 0;
    retry_later(inf, 1);
  }
}

struct gq_informer *gq_informer_start(struct gq_kclient *c,
                                      const struct gq_informer_opts *o,
                                      const struct gq_informer_handlers *h,
                                      void *arg)
{
  struct gq_informer *inf = gq_xcalloc(1, sizeof(*inf));
  uv_loop_t *loop = gq_kclient_loop(c);

  inf->c = c;
  inf->o = *o;
  inf->o.path = gq_xstrdup(o->path);
  inf->o.label_selector = o->label_selector ? gq_xstrdup(o->label_selector)
                                            : NULL;
  inf->o.field_selector = o->field_selector ? gq_xstrdup(o->field_selector)
                                            : NULL;
  if (h)
    inf->h = *h;
  inf->arg = arg;
  gq_backoff_init(&inf->bo, 800, 30000, 2.0, 1.0, 0);
  uv_timer_init(loop, &inf->timer);
  inf->timer.data = inf;
  uv_timer_start(&inf->timer, on_timer, 0, 0); /* list from the loop */
  return inf;
}

/* Frees the informer once its timer has closed and no list or watch is
 * still in flight (their callbacks come back to it). */
static void maybe_free(struct gq_informer *inf)
{
  struct entry *e, *tmp;

  if (!inf->timer_closed || inf->listing || inf->watch)
    return;
  HASH_ITER(hh, inf->store, e, tmp) {
    HASH_DEL(inf->store, e);
    free_entry(inf, e);
  }
  free((char *)inf->o.path);
  free((char *)inf->o.label_selector);
  free((char *)inf->o.field_selector);
  free(inf);
}

static void on_closed(uv_handle_t *h)
{
  struct gq_informer *inf = h->data;

  inf->timer_closed = 1;
  maybe_free(inf);
}

void gq_informer_stop(struct gq_informer *inf)
{
  if (!inf || inf->stopping)
    return;
  inf->stopping = 1;
  if (inf->watch)
    gq_kwatch_stop(inf->watch);
  uv_close((uv_handle_t *)&inf->timer, on_closed);
}

int gq_informer_synced(const struct gq_informer *inf)
{
  return inf->synced;
}

const json_t *gq_informer_get(const struct gq_informer *inf, const char *key)
{
  struct entry *e;

  HASH_FIND_STR(inf->store, key, e);
  return e ? e->obj : NULL;
}

void *gq_informer_typed(const struct gq_informer *inf, const char *key)
{
  struct entry *e;

  HASH_FIND_STR(inf->store, key, e);
  return e ? e->typed : NULL;
}

size_t gq_informer_size(const struct gq_informer *inf)
{
  return HASH_COUNT(inf->store);
}

json_t *gq_informer_list(const struct gq_informer *inf)
{
  json_t *arr = json_array();
  struct entry *e, *tmp;

  HASH_ITER(hh, inf->store, e, tmp)
    if (e->obj)
      json_array_append(arr, e->obj);
  return arr;
}

unsigned gq_informer_lists(const struct gq_informer *inf)
{
  return inf->lists;
}

unsigned gq_informer_watches(const struct gq_informer *inf)
{
  return inf->watches;
}

void gq_informer_foreach(const struct gq_informer *inf,
                         void (*fn)(const json_t *obj, void *typed, void *arg),
                         void *arg)
{
  const struct entry *e, *tmp;

  HASH_ITER(hh, inf->store, e, tmp)
    fn(e->obj, e->typed, arg);
}
