/* Tests for sim/gpuutil (the sim.gpuq.dev/gpu-utilization grammar, the
 * utilization at a time, its exact integral) and sim/usage (allocated, used
 * and idle GPU-seconds per team and in total, issue 22). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "sim/gpuutil.h"
#include "sim/usage.h"

#define S INT64_C(1000)
#define MIN (60 * S)
#define H (60 * MIN)

static const struct {
  const char *in;
  int want_rc;
  size_t want_n;
  int64_t want_cycle_ms;
  double want_first; /* first phase's fraction */
  const char *want_label;
} parse_cases[] = {
    {"0.9", 0, 1, 0, 0.9, ""},
    {" 0.25 ", 0, 1, 0, 0.25, ""},
    {"1", 0, 1, 0, 1, ""},
    {"0", 0, 1, 0, 0, ""},
    {".5", 0, 1, 0, 0.5, ""},
    {"busy 0.9 for 2h, idle 0.02 for 1h", 0, 2, 3 * H, 0.9, "busy"},
    {"0.9 for 90s,0.1 for 30m", 0, 2, 90 * S + 30 * MIN, 0.9, ""},
    {"warm-up_1.x 0.5 for 1h30m", 0, 1, 90 * MIN, 0.5, "warm-up_1.x"},
    {"  busy\t0.85  for 1h ,idle 0.02 for 2h  ", 0, 2, 3 * H, 0.85, "busy"},
    {"for 0.5 for 1h", 0, 1, H, 0.5, "for"},
    {"", GQ_EINVAL, 0, 0, 0, NULL},
    {"   ", GQ_EINVAL, 0, 0, 0, NULL},
    {"1.5", GQ_EINVAL, 0, 0, 0, NULL},
    {"-0.1", GQ_EINVAL, 0, 0, 0, NULL},
    {"nan", GQ_EINVAL, 0, 0, 0, NULL},
    {"inf", GQ_EINVAL, 0, 0, 0, NULL},
    {"1e-1", GQ_EINVAL, 0, 0, 0, NULL},
    {"0x1", GQ_EINVAL, 0, 0, 0, NULL},
    {".", GQ_EINVAL, 0, 0, 0, NULL},
    {"90%", GQ_EINVAL, 0, 0, 0, NULL},
    {"busy", GQ_EINVAL, 0, 0, 0, NULL},
    {"0.9 2h", GQ_EINVAL, 0, 0, 0, NULL},
    {"0.9 for", GQ_EINVAL, 0, 0, 0, NULL},
    {"0.9 for 0s", GQ_EINVAL, 0, 0, 0, NULL},
    {"0.9 for 2", GQ_EINVAL, 0, 0, 0, NULL},
    {"0.9 FOR 2h", GQ_EINVAL, 0, 0, 0, NULL},
    {"1.1 for 2h", GQ_EINVAL, 0, 0, 0, NULL},
    {"busy 0.9 for 1h,", GQ_EINVAL, 0, 0, 0, NULL},
    {",busy 0.9 for 1h", GQ_EINVAL, 0, 0, 0, NULL},
    {"9busy 0.9 for 1h", GQ_EINVAL, 0, 0, 0, NULL},
    {"bu$y 0.9 for 1h", GQ_EINVAL, 0, 0, 0, NULL},
    {"a b 0.9 for 1h", GQ_EINVAL, 0, 0, 0, NULL},
    {"abcdefghijklmnopqrstuvwxyz012345 0.9 for 1h", GQ_EINVAL, 0, 0, 0, NULL},
    {"abcdefghijklmnopqrstuvwxyz01234 0.9 for 1h", 0, 1, H, 0.9,
     "abcdefghijklmnopqrstuvwxyz01234"},
    {"0.5 for 36500d", 0, 1, INT64_C(36500) * 24 * H, 0.5, ""},
    {"0.5 for 36500d, 0.5 for 1s", GQ_EINVAL, 0, 0, 0, NULL},
};

static void test_parse_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
    struct gq_sim_gpuutil u;
    char err[256];
    int rc = gq_sim_gpuutil_parse(parse_cases[i].in, &u, err, sizeof(err));

    if (rc != parse_cases[i].want_rc)
      fail_msg("'%s': rc %d (%s), want %d", parse_cases[i].in, rc, err,
               parse_cases[i].want_rc);
    if (rc != 0) {
      if (!*err)
        fail_msg("'%s': no message", parse_cases[i].in);
      continue;
    }
    assert_int_equal(u.n, parse_cases[i].want_n);
    assert_int_equal(u.cycle_ms, parse_cases[i].want_cycle_ms);
    assert_float_equal(u.phases[0].frac, parse_cases[i].want_first, 1e-12);
    assert_string_equal(u.phases[0].label, parse_cases[i].want_label);
  }
}

static void test_parse_limits(void **state)
{
  char text[GQ_SIM_GPUUTIL_MAX_TEXT + 2], err[256];
  struct gq_sim_gpuutil u;
  size_t off = 0;

  (void)state;
  assert_int_equal(gq_sim_gpuutil_parse(NULL, &u, err, sizeof(err)),
                   GQ_EINVAL);
  /* 32 phases fit, 33 do not */
  for (int i = 0; i < 33; i++)
    off += (size_t)snprintf(text + off, sizeof(text) - off, "%s0.5 for 1s",
                            i ? "," : "");
  assert_int_equal(gq_sim_gpuutil_parse(text, &u, err, sizeof(err)),
                   GQ_ETOOBIG);
  text[strlen(text) - strlen(",0.5 for 1s")] = '\0';
  assert_int_equal(gq_sim_gpuutil_parse(text, &u, err, sizeof(err)), 0);
  assert_int_equal(u.n, 32);
  memset(text, ' ', sizeof(text) - 1);
  text[sizeof(text) - 1] = '\0';
  assert_int_equal(gq_sim_gpuutil_parse(text, &u, err, sizeof(err)),
                   GQ_ETOOBIG);
  /* the message names the phase and the text */
  assert_int_equal(gq_sim_gpuutil_parse("busy 0.9 for 1h, idle x for 2h", &u,
                                        err, sizeof(err)),
                   GQ_EINVAL);
  assert_non_null(strstr(err, "phase 2"));
  assert_non_null(strstr(err, "idle x for 2h"));
}

static void test_at(void **state)
{
  struct gq_sim_gpuutil u;
  char err[256];

  (void)state;
  assert_int_equal(gq_sim_gpuutil_parse("busy 0.9 for 2h, idle 0.02 for 1h",
                                        &u, err, sizeof(err)),
                   0);
  assert_float_equal(gq_sim_gpuutil_at(&u, -5), 0.9, 1e-12);
  assert_float_equal(gq_sim_gpuutil_at(&u, 0), 0.9, 1e-12);
  assert_float_equal(gq_sim_gpuutil_at(&u, 2 * H - 1), 0.9, 1e-12);
  assert_float_equal(gq_sim_gpuutil_at(&u, 2 * H), 0.02, 1e-12);
  assert_float_equal(gq_sim_gpuutil_at(&u, 3 * H - 1), 0.02, 1e-12);
  assert_float_equal(gq_sim_gpuutil_at(&u, 3 * H), 0.9, 1e-12); /* repeats */
  assert_float_equal(gq_sim_gpuutil_at(&u, 302 * H + 5), 0.02, 1e-12);
  assert_int_equal(gq_sim_gpuutil_phase_at(&u, 2 * H), 1);
  gq_sim_gpuutil_constant(&u, 0.4);
  assert_float_equal(gq_sim_gpuutil_at(&u, 99 * H), 0.4, 1e-12);
  gq_sim_gpuutil_constant(&u, 7);
  assert_float_equal(gq_sim_gpuutil_at(&u, 0), 1, 1e-12);
}

/* The integral over any span equals the sum of its pieces, and whole
 * cycles are counted exactly. */
static void test_integrate(void **state)
{
  struct gq_sim_gpuutil u;
  struct gq_sim_usage a = {0, 0, 0}, b = {0, 0, 0};
  char err[256];

  (void)state;
  assert_int_equal(gq_sim_gpuutil_parse("busy 0.9 for 2h, idle 0.02 for 1h",
                                        &u, err, sizeof(err)),
                   0);
  /* 10 cycles on 4 GPUs: 30 h allocated x 4, used 4 x 10 x (1.8 + 0.02) h,
   * idle 4 x 10 h (the 0.02 phases, under 10 %) */
  gq_sim_gpuutil_integrate(&u, 0, 30 * H, 4, 0.10, &a);
  assert_float_equal(a.alloc_s, 4.0 * 30 * 3600, 1e-6);
  assert_float_equal(a.used_s, 4.0 * 10 * (1.8 + 0.02) * 3600, 1e-6);
  assert_float_equal(a.idle_s, 4.0 * 10 * 3600, 1e-6);
  /* the same span cut at odd places */
  gq_sim_gpuutil_integrate(&u, 0, 5 * H + 17, 4, 0.10, &b);
  gq_sim_gpuutil_integrate(&u, 5 * H + 17, 29 * H + 999, 4, 0.10, &b);
  gq_sim_gpuutil_integrate(&u, 29 * H + 999, 30 * H, 4, 0.10, &b);
  assert_float_equal(b.alloc_s, a.alloc_s, 1e-6);
  assert_float_equal(b.used_s, a.used_s, 1e-6);
  assert_float_equal(b.idle_s, a.idle_s, 1e-6);
  /* a threshold under every phase: nothing idle; empty spans add nothing */
  memset(&a, 0, sizeof(a));
  gq_sim_gpuutil_integrate(&u, H, 4 * H, 1, 0.01, &a);
  gq_sim_gpuutil_integrate(&u, 4 * H, 4 * H, 1, 0.5, &a);
  gq_sim_gpuutil_integrate(&u, 4 * H, H, 1, 0.5, &a);
  assert_float_equal(a.alloc_s, 3.0 * 3600, 1e-6);
  assert_float_equal(a.used_s, (0.9 + 0.02 + 0.9) * 3600, 1e-6);
  assert_float_equal(a.idle_s, 0, 1e-9);
  /* strictly under: a phase at the threshold is not idle */
  gq_sim_gpuutil_constant(&u, 0.1);
  memset(&a, 0, sizeof(a));
  gq_sim_gpuutil_integrate(&u, 0, H, 2, 10 / 100.0, &a);
  assert_float_equal(a.idle_s, 0, 1e-9);
  assert_float_equal(a.used_s, 0.2 * 3600, 1e-6);
}

/* Per team: pods of two teams and one without a team, running over
 * different spans; the total covers all of them. */
static void test_usage_per_team(void **state)
{
  struct gq_sim_usage_ledger l;
  struct gq_sim_gpuutil notebook, busy;
  const struct gq_sim_usage *a, *b;
  char err[256];

  (void)state;
  gq_sim_usage_init(&l);
  assert_int_equal(gq_sim_gpuutil_parse("busy 0.85 for 1h, idle 0.02 for 2h",
                                        &notebook, err, sizeof(err)),
                   0);
  gq_sim_gpuutil_constant(&busy, 0.75);
  /* team-a: a notebook on 2 GPUs for 3 h, accounted in two steps (as the
   * report does on each reading), and a busy pod on 8 GPUs for 1 h */
  gq_sim_usage_add_run(&l, "team-a", &notebook, 2, 0, 90 * MIN, 10);
  gq_sim_usage_add_run(&l, "team-a", &notebook, 2, 90 * MIN, 3 * H, 10);
  gq_sim_usage_add_run(&l, "team-a", &busy, 8, 0, H, 10);
  /* team-b: the notebook's second half only (it started 30 min in) */
  gq_sim_usage_add_run(&l, "team-b", &notebook, 1, 30 * MIN, 2 * H, 10);
  /* no team, and a pod without GPUs: the total only, and nothing */
  gq_sim_usage_add_run(&l, "", &busy, 4, 0, H, 10);
  gq_sim_usage_add_run(&l, "team-c", &busy, 0, 0, H, 10);
  a = gq_sim_usage_team(&l, "team-a");
  b = gq_sim_usage_team(&l, "team-b");
  assert_non_null(a);
  assert_non_null(b);
  assert_null(gq_sim_usage_team(&l, "team-c"));
  assert_float_equal(a->alloc_s, (2 * 3 + 8) * 3600.0, 1e-6);
  assert_float_equal(a->used_s, (2 * (0.85 + 2 * 0.02) + 8 * 0.75) * 3600,
                     1e-6);
  assert_float_equal(a->idle_s, 2 * 2 * 3600.0, 1e-6);
  assert_float_equal(b->alloc_s, 1.5 * 3600, 1e-6);
  assert_float_equal(b->used_s, (0.5 * 0.85 + 1 * 0.02) * 3600, 1e-6);
  assert_float_equal(b->idle_s, 3600, 1e-6);
  assert_float_equal(l.total.alloc_s, a->alloc_s + b->alloc_s + 4 * 3600.0,
                     1e-6);
  assert_float_equal(l.total.used_s, a->used_s + b->used_s + 3 * 3600.0, 1e-6);
  assert_float_equal(l.total.idle_s, a->idle_s + b->idle_s, 1e-6);
  gq_sim_usage_release(&l);
  assert_null(l.teams);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_table),
      cmocka_unit_test(test_parse_limits),
      cmocka_unit_test(test_at),
      cmocka_unit_test(test_integrate),
      cmocka_unit_test(test_usage_per_team),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
