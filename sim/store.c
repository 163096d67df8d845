/* sim/store.c - objects, resourceVersions, the event window, deletion,
 * and the observers every change is passed to (sim.h). */
#include "sim/sim.h"

#include "api/meta.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NS_RETRY_MS 100 /* a terminating namespace re-checks this often */

const char *gq_sim_key(const struct gq_sim_kind *k, const char *ns,
                       const char *name, char *buf, size_t len)
{
  if (k->namespaced)
    snprintf(buf, len, "%s/%s", ns ? ns : "", name);
  else
    snprintf(buf, len, "%s", name);
  return buf;
}

void gq_sim_uuid(char *buf)
{
  unsigned char b[16];
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

  if (fd < 0 || read(fd, b, sizeof(b)) != (ssize_t)sizeof(b)) {
    /* /dev/urandom is always there on Linux; fall back to the clock. */
    uint64_t t = (uint64_t)gq_clock_mono_ms() ^ (uint64_t)(uintptr_t)buf;

    for (int i = 0; i < 16; i++, t = t * 6364136223846793005ULL + 1)
      b[i] = (unsigned char)(t >> 56);
  }
  if (fd >= 0)
    close(fd);
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4, RFC 4122 */
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  snprintf(buf, 37,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x"
           "%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
           b[11], b[12], b[13], b[14], b[15]);
}

const json_t *gq_sim_get(struct gq_sim_kind *k, const char *ns,
                         const char *name)
{
  struct gq_sim_obj *o;
  char key[600];

  gq_sim_key(k, ns, name, key, sizeof(key));
  HASH_FIND_STR(k->objs, key, o);
  return o ? o->obj : NULL;
}

/* Appends an event to the window (dropping the oldest when full) and
 * tells the observers, in registration order. Takes the references in obj
 * and old. */
static void emit(struct gq_sim *s, struct gq_sim_kind *k,
                 enum gq_sim_ev_type type, json_t *obj, json_t *old)
{
  size_t cap = s->opts.watch_window, slot;
  struct gq_sim_event *ev, copy;

  if (s->ev_count == cap) {
    ev = &s->events[s->ev_head];
    s->compacted_rv = ev->rv;
    json_decref(ev->obj);
    json_decref(ev->old);
    s->ev_head = (s->ev_head + 1) % cap;
    s->ev_count--;
  }
  slot = (s->ev_head + s->ev_count++) % cap;
  ev = &s->events[slot];
  ev->rv = s->rv;
  ev->type = type;
  ev->kind = k;
  ev->obj = obj;
  ev->old = old;
  /* Observers may store more changes, and a small window can drop this
   * slot meanwhile: they get a copy holding its own references. */
  copy = *ev;
  json_incref(copy.obj);
  json_incref(copy.old);
  for (size_t i = 0; i < s->n_observers; i++)
    s->observers[i].fn(s, &copy, s->observers[i].arg);
  json_decref(copy.obj);
  json_decref(copy.old);
}

int gq_sim_store_observe(struct gq_sim *s, gq_sim_observer_fn fn, void *arg)
{
  if (s->n_observers == GQ_SIM_MAX_OBSERVERS)
    return GQ_ETOOBIG;
  s->observers[s->n_observers].fn = fn;
  s->observers[s->n_observers++].arg = arg;
  return 0;
}

static void set_rv(json_t *obj, uint64_t rv)
{
  char buf[32];

  snprintf(buf, sizeof(buf), "%llu", (unsigned long long)rv);
  json_object_set_new(json_object_get(obj, "metadata"), "resourceVersion",
                      json_string(buf));
}

/* The uid of obj's i-th ownerReference ("" when that one has none;
 * borrowed from obj), or NULL past the last. */
static const char *owner_uid(const json_t *obj, size_t i)
{
  const json_t *refs =
      json_object_get(json_object_get(obj, "metadata"), "ownerReferences");
  const char *u;

  if (i >= json_array_size(refs))
    return NULL;
  u = json_string_value(json_object_get(json_array_get(refs, i), "uid"));
  return u ? u : "";
}

/* Adds sign (+1 or -1) to the dependents count of every uid obj names in
 * its ownerReferences. A count that reaches 0 is dropped. */
static void owners_count(struct gq_sim *s, const json_t *obj, int sign)
{
  const char *u;

  for (size_t i = 0; (u = owner_uid(obj, i)); i++) {
    struct gq_sim_owner *w;

    if (!*u)
      continue;
    HASH_FIND_STR(s->owners, u, w);
    if (!w && sign > 0) {
      w = gq_xcalloc(1, sizeof(*w));
      w->uid = gq_xstrdup(u);
      HASH_ADD_KEYPTR(hh, s->owners, w->uid, strlen(w->uid), w);
    }
    if (!w)
      continue;
    if (sign > 0) {
      w->dependents++;
    } else if (--w->dependents == 0) {
      HASH_DEL(s->owners, w);
      free(w->uid);
      free(w);
    }
  }
}

static void owners_release(struct gq_sim *s)
{
  struct gq_sim_owner *w, *tmp;

  HASH_ITER(hh, s->owners, w, tmp) {
    HASH_DEL(s->owners, w);
    free(w->uid);
    free(w);
  }
}

const json_t *gq_sim_put(struct gq_sim *s, struct gq_sim_kind *k, json_t *obj)
{
  struct gq_sim_obj *o;
  char key[600];
  json_t *old;

  gq_sim_key(k, gq_meta_str(obj, "namespace"), gq_meta_str(obj, "name"), key,
             sizeof(key));
  set_rv(obj, ++s->rv);
  HASH_FIND_STR(k->objs, key, o);
  if (!o) {
    o = gq_xcalloc(1, sizeof(*o));
    o->key = gq_xstrdup(key);
    o->obj = obj;
    HASH_ADD_KEYPTR(hh, k->objs, o->key, strlen(o->key), o);
    k->unsorted = 1;
    owners_count(s, obj, 1);
    emit(s, k, GQ_EV_ADDED, json_incref(obj), NULL);
    return obj;
  }
  old = o->obj;
  o->obj = obj;
  owners_count(s, obj, 1);
  owners_count(s, old, -1);
  emit(s, k, GQ_EV_MODIFIED, json_incref(obj), old);
  return obj;
}

int gq_sim_owned_by(const json_t *obj, const char *uid)
{
  const char *u;

  for (size_t i = 0; (u = owner_uid(obj, i)); i++)
    if (*u && strcmp(u, uid) == 0)
      return 1;
  return 0;
}

/* Background cascading deletion (garbage collector semantics): every
 * object owned by uid in namespace ns (or cluster-scoped) is deleted.
 * Nothing to scan when no object names uid as its owner (a pod's removal:
 * without this check every removal walked every kind, O(objects)). */
static void cascade(struct gq_sim *s, const char *ns, const char *uid)
{
  struct gq_sim_owner *w;

  HASH_FIND_STR(s->owners, uid, w);
  if (!w)
    return;
  for (struct gq_sim_kind *k = s->kinds; k; k = k->next) {
    json_t *items;
    const json_t *it;
    size_t i;

    if (k->dropped || !k->objs)
      continue;
    items = gq_sim_list(k, k->namespaced ? ns : NULL);
    json_array_foreach(items, i, it) {
      if (gq_sim_owned_by(it, uid))
        json_decref(gq_sim_delete(s, k, gq_meta_str(it, "namespace"),
                                  gq_meta_str(it, "name"), -1, 0));
    }
    json_decref(items);
  }
}

void gq_sim_remove(struct gq_sim *s, struct gq_sim_kind *k, const char *ns,
                   const char *name, int orphan)
{
  struct gq_sim_obj *o;
  char key[600], *uid, *nsc;
  json_t *last;

  gq_sim_key(k, ns, name, key, sizeof(key));
  HASH_FIND_STR(k->objs, key, o);
  if (!o)
    return;
  HASH_DEL(k->objs, o);
  owners_count(s, o->obj, -1);
  last = gq_sim_copy(o->obj);
  set_rv(last, ++s->rv);
  uid = gq_xstrdup(gq_meta_str(last, "uid"));
  nsc = gq_xstrdup(ns ? ns : "");
  emit(s, k, GQ_EV_DELETED, last, o->obj);
  free(o->key);
  free(o);
  if (!orphan && *uid)
    cascade(s, nsc, uid);
  free(uid);
  free(nsc);
}

static int by_key(struct gq_sim_obj *a, struct gq_sim_obj *b)
{
  return strcmp(a->key, b->key);
}

json_t *gq_sim_list(struct gq_sim_kind *k, const char *ns)
{
  json_t *arr = json_array();
  struct gq_sim_obj *o, *tmp;
  size_t nlen = ns ? strlen(ns) : 0;

  if (k->unsorted) { /* lists come in key order, as from etcd */
    HASH_SORT(k->objs, by_key);
    k->unsorted = 0;
  }
  HASH_ITER(hh, k->objs, o, tmp) {
    if (ns && (strncmp(o->key, ns, nlen) != 0 || o->key[nlen] != '/'))
      continue;
    json_array_append(arr, o->obj);
  }
  return arr;
}

static void pending_arm(struct gq_sim *s);

static void on_pending(uv_timer_t *t)
{
  gq_sim_pending_run(t->data);
}

/* Queues a removal of k/key (if its uid still matches) at real due_ms. */
static void pending_add(struct gq_sim *s, struct gq_sim_kind *k,
                        const char *key, const char *uid, uint64_t due_ms)
{
  size_t i;

  if (s->n_pending == s->cap_pending) {
    s->cap_pending = s->cap_pending ? 2 * s->cap_pending : 64;
    s->pending = gq_xrealloc(s->pending,
                             s->cap_pending * sizeof(*s->pending));
  }
  for (i = s->n_pending; i > 0 && s->pending[i - 1].due_ms > due_ms; i--)
    s->pending[i] = s->pending[i - 1];
  s->pending[i].due_ms = due_ms;
  s->pending[i].kind = k;
  s->pending[i].key = gq_xstrdup(key);
  s->pending[i].uid = gq_xstrdup(uid ? uid : "");
  s->n_pending++;
  pending_arm(s);
}

static void pending_arm(struct gq_sim *s)
{
  uint64_t now = (uint64_t)gq_clock_mono_ms();

  if (s->n_pending == 0) {
    uv_timer_stop(&s->pending_timer);
    return;
  }
  uv_timer_start(&s->pending_timer, on_pending,
                 s->pending[0].due_ms > now ? s->pending[0].due_ms - now : 0,
                 0);
}

/* Objects left in namespace ns, over every kind. */
static size_t ns_population(struct gq_sim *s, const char *ns)
{
  size_t n = 0, len = strlen(ns);

  for (struct gq_sim_kind *k = s->kinds; k; k = k->next) {
    struct gq_sim_obj *o, *tmp;

    if (!k->namespaced)
      continue;
    HASH_ITER(hh, k->objs, o, tmp)
      n += strncmp(o->key, ns, len) == 0 && o->key[len] == '/';
  }
  return n;
}

/* Finishes one due deletion: the grace period of a pod is over, or a
 * terminating namespace may now be empty. */
static void pending_finish(struct gq_sim *s, struct gq_sim_pending *p)
{
  struct gq_sim_obj *o;
  const char *uid;

  HASH_FIND_STR(p->kind->objs, p->key, o);
  if (!o)
    return;
  uid = gq_meta_str(o->obj, "uid");
  if (uid && *p->uid && strcmp(uid, p->uid) != 0)
    return; /* a new object under the same name */
  if (strcmp(p->kind->plural, "namespaces") == 0 && !*p->kind->group &&
      ns_population(s, p->key) > 0) {
    pending_add(s, p->kind, p->key, p->uid,
                (uint64_t)gq_clock_mono_ms() + NS_RETRY_MS);
    return;
  }
  gq_sim_remove(s, p->kind, gq_meta_str(o->obj, "namespace"),
                gq_meta_str(o->obj, "name"), 0);
}

void gq_sim_pending_run(struct gq_sim *s)
{
  uint64_t now = (uint64_t)gq_clock_mono_ms();

  while (s->n_pending && s->pending[0].due_ms <= now) {
    struct gq_sim_pending p = s->pending[0];

    memmove(s->pending, s->pending + 1,
            --s->n_pending * sizeof(*s->pending));
    pending_finish(s, &p);
    free(p.key);
    free(p.uid);
  }
  pending_arm(s);
}

json_t *gq_sim_copy(const json_t *obj)
{
  const json_t *meta = json_object_get(obj, "metadata");
  const json_t *mf = json_object_get(meta, "managedFields");
  json_t *c, *m, *v, *w;
  const char *k, *mk;
  size_t kl, mkl;

  if (!json_is_object(meta) || !mf)
    return json_deep_copy(obj);
  c = json_object();
  json_object_keylen_foreach((json_t *)obj, k, kl, v) {
    if (v != meta) {
      json_object_setn_new_nocheck(c, k, kl, json_deep_copy(v));
      continue;
    }
    m = json_object();
    json_object_keylen_foreach(v, mk, mkl, w)
      json_object_setn_new_nocheck(m, mk, mkl, w == mf ? json_incref(w)
                                                       : json_deep_copy(w));
    json_object_setn_new_nocheck(c, k, kl, m);
  }
  return c;
}

/* A copy of obj with deletionTimestamp (virtual now + grace_s) and
 * deletionGracePeriodSeconds set. */
static json_t *mark_deleting(const json_t *obj, int64_t grace_s)
{
  json_t *c = gq_sim_copy(obj), *meta = json_object_get(c, "metadata");
  char ts[40];

  gq_time_format(gq_clock_now_ms() + grace_s * 1000, ts, sizeof(ts));
  json_object_set_new(meta, "deletionTimestamp", json_string(ts));
  json_object_set_new(meta, "deletionGracePeriodSeconds",
                      json_integer(grace_s));
  return c;
}

/* A pod that a kubelet runs must be stopped within its grace period; one
 * that never ran (unbound) or has finished goes at once, as on a real
 * cluster. Returns the grace to wait, or 0 for immediate removal. */
static int64_t pod_grace(const json_t *pod, int64_t grace_s)
{
  const json_t *spec = json_object_get(pod, "spec");
  const char *node = json_string_value(json_object_get(spec, "nodeName"));
  const char *phase = json_string_value(
      json_object_get(json_object_get(pod, "status"), "phase"));

  if (!node || !*node)
    return 0;
  if (phase && (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0))
    return 0;
  if (grace_s < 0) {
    const json_t *g = json_object_get(spec, "terminationGracePeriodSeconds");

    grace_s = json_is_integer(g) ? json_integer_value(g) : 30;
  }
  return grace_s < 0 ? 0 : grace_s;
}

static int is_core(const struct gq_sim_kind *k, const char *plural)
{
  return !*k->group && strcmp(k->plural, plural) == 0;
}

/* Namespace deletion: mark it Terminating, delete what it holds, and
 * remove it once empty. */
static json_t *delete_namespace(struct gq_sim *s, struct gq_sim_kind *k,
                                const json_t *ns_obj)
{
  const char *name = gq_meta_str(ns_obj, "name");
  json_t *c = mark_deleting(ns_obj, 0);
  const json_t *stored;

  json_object_set_new(c, "status", json_pack("{s:s}", "phase", "Terminating"));
  stored = gq_sim_put(s, k, c);
  for (struct gq_sim_kind *kk = s->kinds; kk; kk = kk->next) {
    json_t *items;
    const json_t *it;
    size_t i;

    if (!kk->namespaced || kk->dropped)
      continue;
    items = gq_sim_list(kk, name);
    json_array_foreach(items, i, it)
      json_decref(gq_sim_delete(s, kk, name, gq_meta_str(it, "name"), -1, 0));
    json_decref(items);
  }
  pending_add(s, k, name, gq_meta_str(stored, "uid"), (uint64_t)gq_clock_mono_ms());
  return json_incref((json_t *)stored);
}

json_t *gq_sim_delete(struct gq_sim *s, struct gq_sim_kind *k, const char *ns,
                      const char *name, int64_t grace_s, int orphan)
{
  const json_t *obj = gq_sim_get(k, ns, name), *fin;
  const json_t *meta;
  json_t *last;
  char key[600];

  if (!obj)
    return NULL;
  meta = json_object_get(obj, "metadata");
  fin = json_object_get(meta, "finalizers");
  if (json_object_get(meta, "deletionTimestamp") && !is_core(k, "pods"))
    return json_incref((json_t *)obj); /* already being deleted */
  if (is_core(k, "namespaces"))
    return delete_namespace(s, k, obj);
  if (json_array_size(fin) > 0)
    return json_incref((json_t *)gq_sim_put(s, k, mark_deleting(obj, 0)));
  if (is_core(k, "pods") && (grace_s = pod_grace(obj, grace_s)) > 0) {
    const json_t *dts = json_object_get(meta, "deletionGracePeriodSeconds");

    if (json_is_integer(dts) && json_integer_value(dts) <= grace_s)
      return json_incref((json_t *)obj); /* a shorter grace is running */
    obj = gq_sim_put(s, k, mark_deleting(obj, grace_s));
    if (s->engine) /* the simulated kubelet stops it and confirms */
      return json_incref((json_t *)obj);
    pending_add(s, k, gq_sim_key(k, ns, name, key, sizeof(key)),
                gq_meta_str(obj, "uid"),
                (uint64_t)gq_clock_mono_ms() +
                    gq_clock_real_delay_ms(grace_s * 1000));
    return json_incref((json_t *)obj);
  }
  last = json_incref((json_t *)obj);
  gq_sim_remove(s, k, ns, name, orphan);
  return last;
}

void gq_sim_store_init(struct gq_sim *s)
{
  if (s->opts.watch_window == 0)
    s->opts.watch_window = 100000;
  s->events = gq_xcalloc(s->opts.watch_window, sizeof(*s->events));
  uv_timer_init(s->loop, &s->pending_timer);
  s->pending_timer.data = s;
}

void gq_sim_store_release(struct gq_sim *s)
{
  owners_release(s);
  for (size_t i = 0; i < s->ev_count; i++) {
    struct gq_sim_event *ev =
        &s->events[(s->ev_head + i) % s->opts.watch_window];

    json_decref(ev->obj);
    json_decref(ev->old);
  }
  free(s->events);
  s->events = NULL;
  s->ev_count = 0;
  for (size_t i = 0; i < s->n_pending; i++) {
    free(s->pending[i].key);
    free(s->pending[i].uid);
  }
  free(s->pending);
  s->pending = NULL;
  s->n_pending = 0;
}
