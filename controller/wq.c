/* controller/wq.c - the work queue of job keys (client-go's
 * util/workqueue, see ctl_int.h "wq"). */
#include "controller/ctl_int.h"

#include "base/alloc.h"
#include "base/clock.h"

#include <stdlib.h>
#include <string.h>

#define WQ_BASE_MS 5        /* first retry after an error (real ms) */
#define WQ_MAX_EXP 16       /* 5 ms x 2^16 = 328 s, the longest wait */

static void queue_push(struct ctl *c, struct cjob *cj)
{
  DL_APPEND2(c->wq_head, cj, wq_prev, wq_next);
  c->wq_len++;
}

void ctl_mark(struct ctl *c, struct cjob *cj)
{
  if (!cj || cj->dirty)
    return;
  cj->dirty = 1;
  if (!cj->processing) /* else wq_done() queues it once it is done */
    queue_push(c, cj);
  ctl_schedule_pass(c);
}

void ctl_schedule_pass(struct ctl *c)
{
  if (c->pass_scheduled || c->stopping)
    return;
  c->pass_scheduled = 1;
  uv_timer_start(&c->pass_timer, c->pass_cb, 0, 0);
}

struct cjob *wq_pop(struct ctl *c)
{
  struct cjob *cj = c->wq_head;

  if (!cj)
    return NULL;
  DL_DELETE2(c->wq_head, cj, wq_prev, wq_next);
  cj->wq_prev = cj->wq_next = NULL;
  c->wq_len--;
  cj->dirty = 0;
  cj->processing = 1;
  c->wq_cur = cj;
  return cj;
}

void wq_done(struct ctl *c, struct cjob *cj)
{
  if (!cj || c->wq_cur != cj)
    return; /* freed while it was processed (wq_drop) */
  c->wq_cur = NULL;
  cj->processing = 0;
  if (cj->dirty) { /* marked again while it was processed: once more */
    queue_push(c, cj);
    ctl_schedule_pass(c);
  }
}

size_t wq_len(const struct ctl *c)
{
  return c->wq_len;
}

void wq_drop(struct ctl *c, struct cjob *cj)
{
  if (c->wq_cur == cj)
    c->wq_cur = NULL;
  if (cj->dirty && !cj->processing) {
    DL_DELETE2(c->wq_head, cj, wq_prev, wq_next);
    c->wq_len--;
  }
  cj->wq_prev = cj->wq_next = NULL;
  cj->dirty = cj->processing = 0;
}

static void later_fire(uv_timer_t *tm);

/* Arms the backoff timer for the earliest due key. */
static void later_arm(struct ctl *c)
{
  int64_t first = -1, now = gq_clock_mono_ms();

  for (size_t i = 0; i < c->n_later; i++)
    if (first < 0 || c->later[i].due_ms < first)
      first = c->later[i].due_ms;
  if (first < 0) {
    uv_timer_stop(&c->wq_timer);
    return;
  }
  uv_update_time(c->loop); /* the timer counts from the loop's time */
  uv_timer_start(&c->wq_timer, later_fire,
                 first > now ? (uint64_t)(first - now) : 0, 0);
}

static void later_fire(uv_timer_t *tm)
{
  struct ctl *c = tm->data;
  int64_t now = gq_clock_mono_ms();

  for (size_t i = 0; i < c->n_later;) {
    struct wq_later *l = &c->later[i];

    if (l->due_ms > now) {
      i++;
      continue;
    }
    ctl_mark(c, ctl_job(c, l->uid));
    free(l->uid);
    *l = c->later[--c->n_later];
  }
  later_arm(c);
}

void wq_retry(struct ctl *c, struct cjob *cj)
{
  int64_t due;

  if (!cj)
    return;
  due = gq_clock_mono_ms() + ((int64_t)WQ_BASE_MS << cj->wq_fails);
  if (cj->wq_fails < WQ_MAX_EXP)
    cj->wq_fails++;
  for (size_t i = 0; i < c->n_later; i++)
    if (!strcmp(c->later[i].uid, cj->uid)) {
      if (due < c->later[i].due_ms)
        c->later[i].due_ms = due;
      later_arm(c);
      return;
    }
  c->later = gq_xrealloc(c->later, (c->n_later + 1) * sizeof(*c->later));
  c->later[c->n_later++] = (struct wq_later){gq_xstrdup(cj->uid), due};
  later_arm(c);
}

void wq_forget(struct cjob *cj)
{
  cj->wq_fails = 0;
}

void wq_init(struct ctl *c)
{
  uv_timer_init(c->loop, &c->wq_timer);
  c->wq_timer.data = c;
}

void wq_free(struct ctl *c)
{
  for (size_t i = 0; i < c->n_later; i++)
    free(c->later[i].uid);
  free(c->later);
  c->later = NULL;
  c->n_later = 0;
  c->wq_head = c->wq_cur = NULL;
  c->wq_len = 0;
}
