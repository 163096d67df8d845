/* Reservations and backfill (decide/forecast.h): the start time of a
 * blocked job from the expected ends of running pods, the snapshot left
 * unchanged, unknown ends not counted on, and the backfill rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api/gpujob.h"
#include "api/node.h"
#include "base/err.h"
#include "decide/forecast.h"
#include "tests/support/fixture.h"

#define S 1000 /* ms per s */

static void node(struct gq_node *n, const char *name)
{
  char buf[1024];

  snprintf(buf, sizeof(buf),
           "{'metadata':{'name':'%s'},'spec':{},'status':{'allocatable':{"
           "'cpu':'64','memory':'512Gi','pods':'110','nvidia.com/gpu':'8'},"
           "'conditions':[{'type':'Ready','status':'True'}]}}",
           name);
  gq_test_node_sq(n, buf);
}

static void job(struct gq_gpujob *j, int replicas, int gpus)
{
  char buf[1024];

  snprintf(buf, sizeof(buf),
           "{'apiVersion':'gpuq.dev/v1alpha1','kind':'GpuJob',"
           "'metadata':{'name':'j','namespace':'ns','uid':'u-1'},"
           "'spec':{'team':'t','replicas':%d,'gpusPerReplica':%d,"
           "'template':{'spec':{'containers':[{'name':'c','image':'x'}]}}}}",
           replicas, gpus);
  gq_test_gpujob_sq(j, buf);
}

struct world {
  struct gq_node nodes[2];
  const struct gq_node *ptr[2];
  struct gq_snapshot cap;
  struct gq_gpujob four, eight;
  struct gq_podsched r4, r8;
  struct gq_forecast_release rel[3];
};

/* n-0 runs two 4-GPU pods ending at 100 s and 200 s; n-1 one 8-GPU pod
 * ending at 150 s (or at an unknown time when n1_unknown). */
static void world_start(struct world *w, int n1_unknown)
{
  node(&w->nodes[0], "n-0");
  node(&w->nodes[1], "n-1");
  w->ptr[0] = &w->nodes[0];
  w->ptr[1] = &w->nodes[1];
  gq_snapshot_init(&w->cap, w->ptr, 2, NULL);
  job(&w->four, 1, 4);
  job(&w->eight, 1, 8);
  gq_place_replica_request(&w->four, &w->r4);
  gq_place_replica_request(&w->eight, &w->r8);
  w->rel[0] = (struct gq_forecast_release){"n-0", &w->r4, 100 * S};
  w->rel[1] = (struct gq_forecast_release){"n-0", &w->r4, 200 * S};
  w->rel[2] = (struct gq_forecast_release){"n-1", &w->r8, n1_unknown ? -1 : 150 * S};
  for (size_t i = 0; i < 3; i++)
    assert_int_equal(
        gq_snapshot_commit(&w->cap, w->rel[i].node, w->rel[i].req, +1), 0);
}

static void world_end(struct world *w)
{
  gq_place_replica_release(&w->r4);
  gq_place_replica_release(&w->r8);
  gq_gpujob_release(&w->four);
  gq_gpujob_release(&w->eight);
  gq_snapshot_release(&w->cap);
  gq_node_release(&w->nodes[0]);
  gq_node_release(&w->nodes[1]);
}

static void assert_full(struct world *w)
{
  assert_int_equal(gq_snapshot_available(&w->cap, 0, "nvidia.com/gpu"), 0);
  assert_int_equal(gq_snapshot_available(&w->cap, 1, "nvidia.com/gpu"), 0);
}

static void test_start_from_expected_ends(void **state)
{
  struct world w;
  struct gq_gpujob big;
  int64_t start;
  size_t out[2];

  (void)state;
  world_start(&w, 0);

  /* 8 GPUs: n-0 has 4 free at 100 s, n-1 all 8 at 150 s. */
  assert_int_equal(gq_forecast_start(&w.cap, &w.eight, NULL, w.rel, 3, 10 * S,
                                     &start, out), 0);
  assert_int_equal(start, 150 * S);
  assert_string_equal(w.cap.nodes[out[0]].node->meta.name, "n-1");
  assert_full(&w);

  /* 4 GPUs: at 100 s, on n-0. */
  assert_int_equal(gq_forecast_start(&w.cap, &w.four, NULL, w.rel, 3, 10 * S,
                                     &start, out), 0);
  assert_int_equal(start, 100 * S);
  assert_string_equal(w.cap.nodes[out[0]].node->meta.name, "n-0");

  /* A gang of 2 x 8 waits for everything: 200 s. */
  job(&big, 2, 8);
  assert_int_equal(gq_forecast_start(&w.cap, &big, NULL, w.rel, 3, 10 * S,
                                     &start, out), 0);
  assert_int_equal(start, 200 * S);
  assert_full(&w);

  /* An end already past counts as now. */
  assert_int_equal(gq_forecast_start(&w.cap, &w.four, NULL, w.rel, 3,
                                     120 * S, &start, out), 0);
  assert_int_equal(start, 120 * S);
  gq_gpujob_release(&big);
  world_end(&w);
}

static void test_unknown_ends_not_counted(void **state)
{
  struct world w;
  struct gq_gpujob big;
  int64_t start;
  size_t out[2];

  (void)state;
  world_start(&w, 1);

  /* n-1's end is unknown: 8 GPUs only when n-0 is empty, at 200 s. */
  assert_int_equal(gq_forecast_start(&w.cap, &w.eight, NULL, w.rel, 3, 0,
                                     &start, out), 0);
  assert_int_equal(start, 200 * S);
  assert_string_equal(w.cap.nodes[out[0]].node->meta.name, "n-0");

  /* 2 x 8 needs n-1 too: no forecast. */
  job(&big, 2, 8);
  assert_int_equal(gq_forecast_start(&w.cap, &big, NULL, w.rel, 3, 0, &start,
                                     out), GQ_ECAPACITY);
  assert_int_equal(start, -1);
  assert_full(&w);
  gq_gpujob_release(&big);
  world_end(&w);
}

/* Ends already past all count as now, together: the reservation is where
 * the job goes once they are all freed (best fit on n-1), not after the
 * first of them. */
static void test_past_ends_together(void **state)
{
  struct world w;
  int64_t start;
  size_t out[1];
  struct gq_forecast_release rel[3];

  (void)state;
  world_start(&w, 0);
  /* Re-commit: n-0 one 8-GPU pod ended at 1 s; n-1 a 4-GPU pod ended at
   * 2 s and one of unknown end. */
  for (size_t i = 0; i < 3; i++)
    gq_snapshot_commit(&w.cap, w.rel[i].node, w.rel[i].req, -1);
  rel[0] = (struct gq_forecast_release){"n-0", &w.r8, 1 * S};
  rel[1] = (struct gq_forecast_release){"n-1", &w.r4, 2 * S};
  rel[2] = (struct gq_forecast_release){"n-1", &w.r4, -1};
  for (size_t i = 0; i < 3; i++)
    gq_snapshot_commit(&w.cap, rel[i].node, rel[i].req, +1);
  assert_int_equal(gq_forecast_start(&w.cap, &w.four, NULL, rel, 3, 10 * S,
                                     &start, out), 0);
  assert_int_equal(start, 10 * S);
  assert_string_equal(w.cap.nodes[out[0]].node->meta.name, "n-1");
  assert_full(&w);
  world_end(&w);
}

static void test_fits_now(void **state)
{
  struct world w;
  int64_t start;
  size_t out[1];

  (void)state;
  world_start(&w, 0);
  assert_int_equal(gq_snapshot_commit(&w.cap, "n-1", &w.r8, -1), 0);
  assert_int_equal(gq_forecast_start(&w.cap, &w.eight, NULL, w.rel, 2, 5 * S,
                                     &start, out), 0);
  assert_int_equal(start, 5 * S);
  world_end(&w);
}

static void test_backfill_rule(void **state)
{
  (void)state;
  assert_true(gq_forecast_backfill_allowed(0, 100, 150 * S));
  assert_true(gq_forecast_backfill_allowed(50 * S, 100, 150 * S)); /* ends exactly */
  assert_false(gq_forecast_backfill_allowed(51 * S, 100, 150 * S));
  assert_false(gq_forecast_backfill_allowed(0, -1, 150 * S)); /* unknown duration */
  assert_true(gq_forecast_backfill_allowed(0, -1, -1));       /* no reservation */
  /* No overflow for absurd durations. */
  assert_false(gq_forecast_backfill_allowed(1700000000000LL, 9300000000000000LL,
                                   1800000000000LL));
  assert_false(gq_forecast_backfill_allowed(INT64_MAX - 10, 1, INT64_MAX));
  assert_false(gq_forecast_backfill_allowed(100 * S, 1, 50 * S)); /* already due */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_start_from_expected_ends),
      cmocka_unit_test(test_unknown_ends_not_counted),
      cmocka_unit_test(test_past_ends_together),
      cmocka_unit_test(test_fits_now),
      cmocka_unit_test(test_backfill_rule),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
