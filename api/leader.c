/* api/leader.c - Lease-based leader election (see leader.h). */
#include "api/leader.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gq_leader {
  struct gq_kclient *c;
  struct gq_leader_opts o;
  char path[1024], coll[512];
  uv_timer_t timer;
  int leading, busy, stopping, timer_closed;
  int64_t last_renew_ms;  /* mono time of our last successful renew */
  char observed[256];     /* holder + renewTime last seen */
  int64_t observed_ms;    /* mono time it last changed */
};

static const struct gq_lc lc = {"api", "leader", NULL};

static void try_acquire(struct gq_leader *l);

static void maybe_free(struct gq_leader *l)
{
  if (l->timer_closed && !l->busy) {
    free((char *)l->o.ns);
    free((char *)l->o.name);
    free((char *)l->o.identity);
    free(l);
  }
}

static void lose(struct gq_leader *l, const char *why)
{
  if (!l->leading)
    return;
  l->leading = 0;
  GQ_LOG(GQ_WARN, &lc, "stopped leading: %s", why);
  if (l->o.on_stop)
    l->o.on_stop(l->o.arg);
}

static void on_timer(uv_timer_t *t)
{
  try_acquire(t->data);
}

static void next_round(struct gq_leader *l)
{
  if (!l->stopping)
    uv_timer_start(&l->timer, on_timer, (uint64_t)l->o.retry_ms, 0);
}

static void on_written(int rc, const struct gq_k8s_status *st,
                       const json_t *obj, void *arg)
{
  struct gq_leader *l = arg;

  (void)obj;
  l->busy = 0;
  if (l->stopping) {
    maybe_free(l);
    return;
  }
  if (rc == 0) {
    l->last_renew_ms = gq_clock_mono_ms();
    if (!l->leading) {
      l->leading = 1;
      GQ_LOG(GQ_INFO, &lc, "became leader of lease %s/%s as %s", l->o.ns,
             l->o.name, l->o.identity);
      if (l->o.on_start)
        l->o.on_start(l->o.arg);
    }
  } else if (l->leading &&
             gq_clock_mono_ms() - l->last_renew_ms >= l->o.renew_deadline_ms) {
    lose(l, st->message);
  }
  next_round(l);
}

/* The lease document claiming (or renewing) it for us. */
static json_t *claim(struct gq_leader *l, const json_t *cur)
{
  const json_t *spec = json_object_get(cur, "spec");
  const char *holder = json_string_value(json_object_get(spec,
                                                         "holderIdentity"));
  json_t *next = cur ? json_deep_copy(cur)
                     : json_pack("{s:s, s:s, s:{s:s, s:s}}", "apiVersion",
                                 "coordination.k8s.io/v1", "kind", "Lease",
                                 "metadata", "name", l->o.name, "namespace",
                                 l->o.ns);
  json_t *ns = json_object_get(next, "spec");
  char now[40];

  if (!ns) {
    ns = json_object();
    json_object_set_new(next, "spec", ns);
  }
  gq_time_format_micro(gq_clock_real_ms(), now, sizeof(now));
  if (!holder || strcmp(holder, l->o.identity)) {
    json_object_set_new(ns, "acquireTime", json_string(now));
    json_object_set_new(ns, "leaseTransitions",
                        json_integer(json_integer_value(json_object_get(
                                         spec, "leaseTransitions")) +
                                     (holder && *holder ? 1 : 0)));
  }
  json_object_set_new(ns, "holderIdentity", json_string(l->o.identity));
  json_object_set_new(ns, "leaseDurationSeconds",
                      json_integer((l->o.lease_ms + 999) / 1000));
  json_object_set_new(ns, "renewTime", json_string(now));
  return next;
}

/* Someone else holds it and renewed it within a lease duration, by our
 * own clock since we saw its record change. */
static int held_by_other(struct gq_leader *l, const json_t *cur)
{
  const json_t *spec = json_object_get(cur, "spec");
  const char *holder = json_string_value(json_object_get(spec,
                                                         "holderIdentity"));
  const char *renew = json_string_value(json_object_get(spec, "renewTime"));
  char rec[256];

  if (!holder || !*holder || !strcmp(holder, l->o.identity))
    return 0;
  snprintf(rec, sizeof(rec), "%s|%s", holder, renew ? renew : "");
  if (strcmp(rec, l->observed)) {
    snprintf(l->observed, sizeof(l->observed), "%s", rec);
    l->observed_ms = gq_clock_mono_ms();
  }
  return gq_clock_mono_ms() - l->observed_ms < l->o.lease_ms;
}

static void on_get(int rc, const struct gq_k8s_status *st, const json_t *obj,
                   void *arg)
{
  struct gq_leader *l = arg;
  json_t *next;

  l->busy = 0;
  if (l->stopping) {
    maybe_free(l);
    return;
  }
  if (rc != 0 && rc != GQ_ENOTFOUND) {
    if (l->leading &&
        gq_clock_mono_ms() - l->last_renew_ms >= l->o.renew_deadline_ms)
      lose(l, st->message);
    next_round(l);
    return;
  }
  if (rc == 0 && held_by_other(l, obj)) {
    lose(l, "another candidate holds the lease");
    next_round(l);
    return;
  }
  next = claim(l, rc == 0 ? obj : NULL);
  l->busy = 1;
  /* PUT carries our resourceVersion: a racing candidate gets 409. */
  if ((rc == 0 ? gq_kclient_update(l->c, l->path, next, on_written, l)
               : gq_kclient_create(l->c, l->coll, next, on_written, l)) != 0) {
    l->busy = 0;
    next_round(l);
  }
  json_decref(next);
}

static void try_acquire(struct gq_leader *l)
{
  if (l->stopping || l->busy)
    return;
  if (l->leading &&
      gq_clock_mono_ms() - l->last_renew_ms >= l->o.renew_deadline_ms)
    lose(l, "could not renew the lease within the renew deadline");
  l->busy = 1;
  if (gq_kclient_get(l->c, l->path, on_get, l) != 0) {
    l->busy = 0;
    next_round(l);
  }
}

struct gq_leader *gq_leader_start(struct gq_kclient *c,
                                  const struct gq_leader_opts *o)
{
  struct gq_leader *l = gq_xcalloc(1, sizeof(*l));

  l->c = c;
  l->o = *o;
  l->o.ns = gq_xstrdup(o->ns);
  l->o.name = gq_xstrdup(o->name);
  l->o.identity = gq_xstrdup(o->identity);
  if (l->o.lease_ms <= 0)
    l->o.lease_ms = 15000;
  if (l->o.renew_deadline_ms <= 0)
    l->o.renew_deadline_ms = 10000;
  if (l->o.retry_ms <= 0)
    l->o.retry_ms = 2000;
  snprintf(l->coll, sizeof(l->coll),
           "/apis/coordination.k8s.io/v1/namespaces/%s/leases", l->o.ns);
  snprintf(l->path, sizeof(l->path), "%s/%s", l->coll, l->o.name);
  uv_timer_init(gq_kclient_loop(c), &l->timer);
  l->timer.data = l;
  uv_timer_start(&l->timer, on_timer, 0, 0);
  return l;
}

int gq_leader_is_leader(const struct gq_leader *l)
{
  return l->leading;
}

static void on_closed(uv_handle_t *h)
{
  struct gq_leader *l = h->data;

  l->timer_closed = 1;
  maybe_free(l);
}

static void on_released(int rc, const struct gq_k8s_status *st,
                        const json_t *obj, void *arg)
{
  struct gq_leader *l = arg;

  (void)obj;
  if (rc != 0)
    GQ_LOG(GQ_WARN, &lc, "cannot release lease: %s", st->message);
  l->busy = 0;
  maybe_free(l);
}

void gq_leader_stop(struct gq_leader *l)
{
  int was = l->leading;

  if (l->stopping)
    return;
  l->stopping = 1;
  lose(l, "stopping");
  uv_close((uv_handle_t *)&l->timer, on_closed);
  if (was && !l->busy && l->o.release_on_cancel) {
    /* ReleaseOnCancel: clear the holder so a successor starts at once. */
    json_t *patch = json_pack("{s:{s:n, s:i}}", "spec", "holderIdentity",
                              "leaseDurationSeconds", 1);

    l->busy = gq_kclient_patch(l->c, l->path, "merge", patch, on_released,
                               l) == 0;
    json_decref(patch);
  }
}
