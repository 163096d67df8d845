/* The controller's work queue (controller/wq.c), after client-go's
 * util/workqueue: fair (keys run in the order marked), stingy (a key
 * marked many times runs once; one marked while it is processed runs once
 * more afterwards, not concurrently), a key freed while queued is taken
 * out, and an error's backoff marks the key again after 5 ms, then 10 ms
 * (doubling), until it succeeds. Runs on a real libuv loop; the records
 * come from the store (controller/store.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/clock.h"
#include "controller/ctl_int.h"

static int passes;

static void count_pass(uv_timer_t *tm)
{
  struct ctl *c = tm->data;

  c->pass_scheduled = 0;
  passes++;
}

struct fixture {
  uv_loop_t loop;
  struct ctl c;
};

static int setup(void **state)
{
  struct fixture *f = calloc(1, sizeof(*f));

  uv_loop_init(&f->loop);
  f->c.loop = &f->loop;
  uv_timer_init(&f->loop, &f->c.pass_timer);
  f->c.pass_timer.data = &f->c;
  f->c.pass_cb = count_pass;
  wq_init(&f->c);
  passes = 0;
  *state = f;
  return 0;
}

static int teardown(void **state)
{
  struct fixture *f = *state;
  struct cjob *cj, *tmp;

  wq_free(&f->c);
  HASH_ITER(hh, f->c.jobs, cj, tmp) {
    HASH_DEL(f->c.jobs, cj);
    free(cj->key);
    free(cj);
  }
  uv_close((uv_handle_t *)&f->c.pass_timer, NULL);
  uv_close((uv_handle_t *)&f->c.wq_timer, NULL);
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  free(f);
  return 0;
}

static struct cjob *job(struct ctl *c, const char *uid)
{
  return ctl_job_new(c, uid, "ns", uid);
}

/* Fair and stingy; a mark asks for a pass. */
static void test_order_and_dedup(void **state)
{
  struct fixture *f = *state;
  struct ctl *c = &f->c;
  struct cjob *a = job(c, "a"), *b = job(c, "b"), *d = job(c, "d");

  ctl_mark(c, a);
  ctl_mark(c, b);
  ctl_mark(c, a); /* already queued: no second entry */
  ctl_mark(c, d);
  ctl_mark(c, NULL);
  assert_int_equal(wq_len(c), 3);
  uv_run(&f->loop, UV_RUN_NOWAIT);
  assert_int_equal(passes, 1);
  assert_ptr_equal(wq_pop(c), a);
  wq_done(c, a);
  assert_ptr_equal(wq_pop(c), b);
  wq_done(c, b);
  assert_ptr_equal(wq_pop(c), d);
  wq_done(c, d);
  assert_null(wq_pop(c));
}

/* Marked while processed: not queued meanwhile, once more afterwards. */
static void test_marked_while_processing(void **state)
{
  struct fixture *f = *state;
  struct ctl *c = &f->c;
  struct cjob *a = job(c, "a");

  ctl_mark(c, a);
  assert_ptr_equal(wq_pop(c), a);
  ctl_mark(c, a);
  ctl_mark(c, a);
  assert_int_equal(wq_len(c), 0); /* never twice at once */
  assert_null(wq_pop(c));
  wq_done(c, a);
  assert_int_equal(wq_len(c), 1);
  assert_ptr_equal(wq_pop(c), a);
  wq_done(c, a);
  assert_int_equal(wq_len(c), 0);
}

/* A record freed while queued or while processed leaves the queue. */
static void test_drop(void **state)
{
  struct fixture *f = *state;
  struct ctl *c = &f->c;
  struct cjob *a = job(c, "a"), *b = job(c, "b");

  ctl_mark(c, a);
  ctl_mark(c, b);
  wq_drop(c, a);
  assert_int_equal(wq_len(c), 1);
  assert_ptr_equal(wq_pop(c), b);
  ctl_mark(c, b);
  wq_drop(c, b); /* freed inside its own reconcile */
  wq_done(c, b); /* only the pointer is compared */
  assert_int_equal(wq_len(c), 0);
}

/* An error marks the key again after its backoff: 5 ms, then 10 ms; a
 * success (wq_forget) starts over; a job freed meanwhile is not found. */
static void test_backoff(void **state)
{
  struct fixture *f = *state;
  struct ctl *c = &f->c;
  struct cjob *a = job(c, "a");
  int64_t t0, t1;

  /* the delays are read from the schedule, not timed: 5 ms, then 10 */
  t0 = gq_clock_mono_ms();
  wq_retry(c, a);
  t1 = gq_clock_mono_ms();
  assert_int_equal(wq_len(c), 0); /* not before its time */
  assert_int_equal(c->n_later, 1);
  assert_true(c->later[0].due_ms >= t0 + 5 && c->later[0].due_ms <= t1 + 5);
  while (wq_len(c) == 0) /* the timer marks it */
    uv_run(&f->loop, UV_RUN_ONCE);
  assert_true(gq_clock_mono_ms() >= t0 + 5 - 1); /* ms rounding */
  assert_int_equal(c->n_later, 0);
  assert_ptr_equal(wq_pop(c), a);
  wq_done(c, a);
  t0 = gq_clock_mono_ms();
  wq_retry(c, a);
  t1 = gq_clock_mono_ms();
  assert_int_equal(a->wq_fails, 2);
  assert_true(c->later[0].due_ms >= t0 + 10 &&
              c->later[0].due_ms <= t1 + 10);
  while (wq_len(c) == 0)
    uv_run(&f->loop, UV_RUN_ONCE);
  assert_ptr_equal(wq_pop(c), a);
  wq_done(c, a);
  wq_forget(a);
  assert_int_equal(a->wq_fails, 0);
  /* two errors in a row before it is due: one mark, at the earlier time */
  wq_retry(c, a);
  wq_retry(c, a);
  assert_int_equal(c->n_later, 1);
  HASH_DEL(c->jobs, a);
  free(a->key);
  free(a);
  uv_run(&f->loop, UV_RUN_DEFAULT); /* the timer fires, finds nothing */
  assert_int_equal(c->n_later, 0);
  assert_int_equal(wq_len(c), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_order_and_dedup, setup, teardown),
      cmocka_unit_test_setup_teardown(test_marked_while_processing, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_drop, setup, teardown),
      cmocka_unit_test_setup_teardown(test_backoff, setup, teardown),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
