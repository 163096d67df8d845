/* sim/timers.c - the engine's timed work: one binary min-heap of struct
 * gq_tev on (due_vms, seq), served by one uv timer armed, in real time, for
 * the earliest entry (engine.h). Due entries run in order through
 * gq_sim_engine_run_tev(); equal times run in the order they were added. */
#include "sim/engine.h"

#include "base/alloc.h"
#include "base/clock.h"

#include <stdlib.h>

static int tev_less(const struct gq_tev *a, const struct gq_tev *b)
{
  return a->due_vms < b->due_vms ||
         (a->due_vms == b->due_vms && a->seq < b->seq);
}

static void heap_up(struct gq_sim_timers *t, size_t i)
{
  while (i > 0 && tev_less(&t->heap[i], &t->heap[(i - 1) / 2])) {
    struct gq_tev x = t->heap[i];

    t->heap[i] = t->heap[(i - 1) / 2];
    t->heap[(i - 1) / 2] = x;
    i = (i - 1) / 2;
  }
}

static void heap_down(struct gq_sim_timers *t, size_t i)
{
  for (;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    struct gq_tev x;

    if (l < t->n && tev_less(&t->heap[l], &t->heap[m]))
      m = l;
    if (r < t->n && tev_less(&t->heap[r], &t->heap[m]))
      m = r;
    if (m == i)
      return;
    x = t->heap[i];
    t->heap[i] = t->heap[m];
    t->heap[m] = x;
    i = m;
  }
}

static void on_timer(uv_timer_t *timer);

/* Re-arms the one timer to the earliest entry, converted to real time. */
static void arm(struct gq_sim_engine *e)
{
  int64_t real_due, now = gq_clock_real_ms();

  if (e->closing || e->tev.n == 0) {
    uv_timer_stop(&e->tev.timer);
    return;
  }
  real_due = gq_clock_to_real(gq_clock_get(), e->tev.heap[0].due_vms);
  uv_timer_start(&e->tev.timer, on_timer,
                 real_due > now ? (uint64_t)(real_due - now) : 0, 0);
}

void gq_sim_tev_add(struct gq_sim_engine *e, int64_t due_vms,
                    enum gq_tev_type type, const char *key, const char *uid,
                    int64_t arg)
{
  struct gq_sim_timers *t = &e->tev;
  struct gq_tev *x;

  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 256;
    t->heap = gq_xrealloc(t->heap, t->cap * sizeof(*t->heap));
  }
  x = &t->heap[t->n++];
  x->due_vms = due_vms;
  x->seq = t->seq++;
  x->type = type;
  x->key = key ? gq_xstrdup(key) : NULL;
  x->uid = uid ? gq_xstrdup(uid) : NULL;
  x->arg = arg;
  heap_up(t, t->n - 1);
  arm(e);
}

int64_t gq_sim_tev_next_due(const struct gq_sim_engine *e)
{
  return e->tev.n ? e->tev.heap[0].due_vms : INT64_MAX;
}

/* Runs every entry due by the virtual clock, earliest first (entries they
 * add that are due already run in this call too), then re-arms. */
static void on_timer(uv_timer_t *timer)
{
  struct gq_sim_engine *e = timer->data;
  struct gq_sim_timers *t = &e->tev;
  int64_t now = gq_clock_now_ms();

  while (!e->closing && t->n && t->heap[0].due_vms <= now) {
    struct gq_tev x = t->heap[0];

    t->heap[0] = t->heap[--t->n];
    heap_down(t, 0);
    gq_sim_engine_run_tev(e, &x);
    free(x.key);
    free(x.uid);
  }
  arm(e);
}

void gq_sim_timers_init(struct gq_sim_engine *e)
{
  uv_timer_init(e->s->loop, &e->tev.timer);
  e->tev.timer.data = e;
}

void gq_sim_timers_close(struct gq_sim_engine *e)
{
  uv_close((uv_handle_t *)&e->tev.timer, NULL);
}

void gq_sim_timers_release(struct gq_sim_engine *e)
{
  for (size_t i = 0; i < e->tev.n; i++) {
    free(e->tev.heap[i].key);
    free(e->tev.heap[i].uid);
  }
  free(e->tev.heap);
  e->tev.heap = NULL;
  e->tev.n = e->tev.cap = 0;
}
