/* Tests for decide/quota: the Kueue quota model of DESIGN §2/§4, table by
 * table (check verdicts, status numbers, fair-share order, shares, reasons
 * and messages), then a seeded sweep that compares gq_quota_check() with
 * Kueue's available() formula and checks the invariants of every number. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "base/err.h"
#include "decide/quota.h"

#define NL (-1) /* no borrowing / lending limit */
#define MAX INT64_MAX
#define MAXT 4
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* clang-format off */
/* name, nominal, borrow_limit, lend_limit, used (weight 1) */
#define T(nm, nom, bl, ll, used) {nm, nom, bl, ll, used, 1.0, 0, 0, 0}
#define TW(nm, nom, bl, ll, used, w) {nm, nom, bl, ll, used, w, 0, 0, 0}
/* with a usage history of h mean GPUs (fair share over time) */
#define TH(nm, nom, used, h) {nm, nom, NL, NL, used, 1.0, 0, h, 0}
/* clang-format on */

/* ---- gq_quota_check ---------------------------------------------------- */

struct check_case {
  const char *name;
  int has_cohort;
  size_t n;
  struct gq_qteam teams[MAXT];
  size_t team;
  int64_t gpus;
  enum gq_qverdict want;
  int64_t want_borrowed_after;
};

/* clang-format off */
static const struct check_case check_cases[] = {
    /* a team on its own */
    {"within nominal", 0, 1, {T("a", 8, NL, NL, 4)}, 0, 2,
     GQ_Q_FITS_NOMINAL, 0},
    {"exact nominal boundary", 0, 1, {T("a", 8, NL, NL, 4)}, 0, 4,
     GQ_Q_FITS_NOMINAL, 0},
    {"one above nominal, no cohort", 0, 1, {T("a", 8, NL, NL, 4)}, 0, 5,
     GQ_Q_OVER_NOMINAL_NO_BORROW, 1},
    {"no cohort ignores a borrow limit", 0, 1, {T("a", 8, 16, NL, 8)}, 0, 1,
     GQ_Q_OVER_NOMINAL_NO_BORROW, 1},
    {"zero quota, no cohort", 0, 1, {T("a", 0, NL, NL, 0)}, 0, 1,
     GQ_Q_ZERO_QUOTA, 1},
    {"zero GPUs fit a full team", 0, 1, {T("a", 8, NL, NL, 8)}, 0, 0,
     GQ_Q_FITS_NOMINAL, 0},
    {"zero GPUs fit an over-quota team", 0, 1, {T("a", 4, NL, NL, 8)}, 0, 0,
     GQ_Q_FITS_NOMINAL, 4},
    {"negative GPUs take nothing", 0, 1, {T("a", 4, NL, NL, 8)}, 0, INT64_MIN,
     GQ_Q_FITS_NOMINAL, 4},
    {"team index out of range", 0, 1, {T("a", 8, NL, NL, 0)}, 1, 1,
     GQ_Q_UNKNOWN_TEAM, 0},
    {"empty cohort", 1, 0, {T("a", 8, NL, NL, 0)}, 0, 1, GQ_Q_UNKNOWN_TEAM,
     0},
    /* borrowing */
    {"borrow within limit", 1, 2,
     {T("a", 8, 4, NL, 8), T("b", 8, NL, NL, 0)}, 0, 4,
     GQ_Q_FITS_BORROWING, 4},
    {"borrow one over limit", 1, 2,
     {T("a", 8, 4, NL, 8), T("b", 8, NL, NL, 0)}, 0, 5,
     GQ_Q_OVER_BORROW_LIMIT, 5},
    {"from below nominal up to the limit", 1, 2,
     {T("a", 8, 4, NL, 2), T("b", 8, NL, NL, 0)}, 0, 10,
     GQ_Q_FITS_BORROWING, 4},
    {"from below nominal past the limit", 1, 2,
     {T("a", 8, 4, NL, 2), T("b", 8, NL, NL, 0)}, 0, 11,
     GQ_Q_OVER_BORROW_LIMIT, 5},
    {"absent borrow limit", 1, 2,
     {T("a", 8, NL, NL, 8), T("b", 24, NL, NL, 0)}, 0, 20,
     GQ_Q_FITS_BORROWING, 20},
    {"absent borrow limit, whole pool", 1, 2,
     {T("a", 8, NL, NL, 8), T("b", 24, NL, NL, 0)}, 0, 24,
     GQ_Q_FITS_BORROWING, 24},
    {"absent borrow limit, pool one short", 1, 2,
     {T("a", 8, NL, NL, 8), T("b", 24, NL, NL, 0)}, 0, 25,
     GQ_Q_COHORT_EXHAUSTED, 25},
    {"borrow limit 0 in a cohort", 1, 2,
     {T("a", 8, 0, NL, 8), T("b", 8, NL, NL, 0)}, 0, 1,
     GQ_Q_OVER_NOMINAL_NO_BORROW, 1},
    {"borrow limit 0, within nominal", 1, 2,
     {T("a", 8, 0, NL, 4), T("b", 8, NL, NL, 0)}, 0, 4, GQ_Q_FITS_NOMINAL,
     0},
    /* zero quota: the interns example of DESIGN §2 */
    {"zero quota, borrow limit 0", 1, 2,
     {T("interns", 0, 0, NL, 0), T("research", 16, NL, NL, 0)}, 0, 1,
     GQ_Q_ZERO_QUOTA, 1},
    {"interns: nominal 0, borrowing 8", 1, 2,
     {T("interns", 0, 8, NL, 0), T("research", 16, NL, NL, 4)}, 0, 8,
     GQ_Q_FITS_BORROWING, 8},
    {"interns: one past borrowing 8", 1, 2,
     {T("interns", 0, 8, NL, 0), T("research", 16, NL, NL, 4)}, 0, 9,
     GQ_Q_OVER_BORROW_LIMIT, 9},
    {"interns: research busy", 1, 2,
     {T("interns", 0, 8, NL, 0), T("research", 16, NL, NL, 12)}, 0, 8,
     GQ_Q_COHORT_EXHAUSTED, 8},
    {"interns without a cohort", 0, 1, {T("interns", 0, 8, NL, 0)}, 0, 1,
     GQ_Q_ZERO_QUOTA, 1},
    /* lending limits */
    {"lending limit: borrow the lendable part", 1, 2,
     {T("a", 16, NL, 8, 0), T("b", 0, NL, NL, 0)}, 1, 8,
     GQ_Q_FITS_BORROWING, 8},
    {"lending limit keeps the rest", 1, 2,
     {T("a", 16, NL, 8, 0), T("b", 0, NL, NL, 0)}, 1, 9,
     GQ_Q_COHORT_EXHAUSTED, 9},
    {"lender within its guaranteed part", 1, 2,
     {T("a", 16, NL, 8, 8), T("b", 0, NL, NL, 0)}, 1, 8,
     GQ_Q_FITS_BORROWING, 8},
    {"lender into its lendable part", 1, 2,
     {T("a", 16, NL, 8, 12), T("b", 0, NL, NL, 0)}, 1, 5,
     GQ_Q_COHORT_EXHAUSTED, 5},
    {"lender into its lendable part, rest", 1, 2,
     {T("a", 16, NL, 8, 12), T("b", 0, NL, NL, 0)}, 1, 4,
     GQ_Q_FITS_BORROWING, 4},
    {"lender reclaims what it lent", 1, 2,
     {T("a", 16, NL, 8, 8), T("b", 0, NL, NL, 8)}, 0, 1,
     GQ_Q_COHORT_EXHAUSTED, 0},
    {"guaranteed part needs no pool", 1, 2,
     {T("a", 16, NL, 8, 0), T("b", 0, NL, NL, 8)}, 0, 8, GQ_Q_FITS_NOMINAL,
     0},
    {"lending limit above nominal is capped", 1, 2,
     {T("a", 8, NL, 100, 0), T("b", 0, NL, NL, 0)}, 1, 8,
     GQ_Q_FITS_BORROWING, 8},
    {"lending limit above nominal, one more", 1, 2,
     {T("a", 8, NL, 100, 0), T("b", 0, NL, NL, 0)}, 1, 9,
     GQ_Q_COHORT_EXHAUSTED, 9},
    {"lending limit 0 lends nothing", 1, 2,
     {T("a", 8, NL, 0, 0), T("b", 0, NL, NL, 0)}, 1, 1,
     GQ_Q_COHORT_EXHAUSTED, 1},
    /* the pool used by someone else */
    {"pool exhausted by another borrower", 1, 3,
     {T("a", 8, NL, NL, 0), T("b", 8, NL, NL, 16), T("c", 8, NL, NL, 8)}, 2,
     1, GQ_Q_COHORT_EXHAUSTED, 1},
    {"lender within nominal, lent out", 1, 3,
     {T("a", 8, NL, NL, 0), T("b", 8, NL, NL, 16), T("c", 8, NL, NL, 8)}, 0,
     8, GQ_Q_COHORT_EXHAUSTED, 0},
    {"borrower takes the last idle GPU", 1, 3,
     {T("a", 8, NL, NL, 0), T("b", 8, NL, NL, 15), T("c", 8, NL, NL, 8)}, 2,
     1, GQ_Q_FITS_BORROWING, 1},
    /* a quota lowered below use (DESIGN §4) */
    {"lowered, no cohort", 0, 1, {T("a", 4, NL, NL, 10)}, 0, 1,
     GQ_Q_OVER_NOMINAL_NO_BORROW, 7},
    {"lowered, excess within borrow limit", 1, 2,
     {T("a", 4, 8, NL, 10), T("b", 16, NL, NL, 0)}, 0, 2,
     GQ_Q_FITS_BORROWING, 8},
    {"lowered, excess above borrow limit", 1, 2,
     {T("a", 4, 2, NL, 10), T("b", 16, NL, NL, 0)}, 0, 1,
     GQ_Q_OVER_BORROW_LIMIT, 7},
    {"lowered, borrow limit 0", 1, 2,
     {T("a", 4, 0, NL, 10), T("b", 16, NL, NL, 0)}, 0, 1,
     GQ_Q_OVER_NOMINAL_NO_BORROW, 7},
    {"lowered to 0, no borrowing", 1, 2,
     {T("a", 0, 0, NL, 6), T("b", 16, NL, NL, 0)}, 0, 1, GQ_Q_ZERO_QUOTA, 7},
    {"lowered elsewhere: guaranteed still fits", 1, 2,
     {T("a", 16, NL, 8, 0), T("b", 2, NL, NL, 20)}, 0, 8, GQ_Q_FITS_NOMINAL,
     0},
    {"lowered elsewhere: lendable part does not", 1, 2,
     {T("a", 16, NL, 8, 0), T("b", 2, NL, NL, 20)}, 0, 9,
     GQ_Q_COHORT_EXHAUSTED, 0},
    {"negative nominal and used read as 0", 0, 1, {T("a", -5, NL, NL, -3)},
     0, 1, GQ_Q_ZERO_QUOTA, 1},
    {"limits below -1 read as no limit", 1, 2,
     {T("a", 8, -7, NL, 8), T("b", 8, NL, -9, 0)}, 0, 8,
     GQ_Q_FITS_BORROWING, 8},
    /* int64 extremes: exact, no overflow */
    {"max: last GPU of nominal", 0, 1, {T("a", MAX, NL, NL, MAX - 1)}, 0, 1,
     GQ_Q_FITS_NOMINAL, 0},
    {"max: one past nominal", 0, 1, {T("a", MAX, NL, NL, MAX - 1)}, 0, 2,
     GQ_Q_OVER_NOMINAL_NO_BORROW, 1},
    {"max: used + gpus past int64", 0, 1, {T("a", MAX, NL, NL, MAX - 1)}, 0,
     MAX, GQ_Q_OVER_NOMINAL_NO_BORROW, MAX - 1},
    {"max: borrowed clamps, not wraps", 0, 1, {T("a", 5, NL, NL, MAX)}, 0,
     MAX, GQ_Q_OVER_NOMINAL_NO_BORROW, MAX},
    {"max: past a max borrow limit", 1, 1, {T("a", MAX, MAX, NL, MAX)}, 0,
     MAX, GQ_Q_COHORT_EXHAUSTED, MAX},
    {"max: borrow limit 1", 1, 1, {T("a", MAX, 1, NL, MAX)}, 0, 2,
     GQ_Q_OVER_BORROW_LIMIT, 2},
    {"max: borrow a whole max pool", 1, 2,
     {T("a", 0, NL, NL, 0), T("b", MAX, NL, NL, 0)}, 0, MAX,
     GQ_Q_FITS_BORROWING, MAX},
    {"max: pools beyond int64 still add up", 1, 3,
     {T("a", MAX, NL, NL, MAX), T("b", MAX, NL, NL, MAX),
      T("c", MAX, NL, NL, 0)},
     2, MAX, GQ_Q_FITS_NOMINAL, 0},
};
/* clang-format on */

static void test_check_table(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < N_OF(check_cases); i++) {
    const struct check_case *tc = &check_cases[i];
    struct gq_qteam teams[MAXT];
    struct gq_qcohort c = {teams, tc->n, tc->has_cohort};
    int64_t borrowed = -42;
    enum gq_qverdict got;

    memcpy(teams, tc->teams, sizeof(teams));
    got = gq_quota_check(&c, tc->team, tc->gpus, &borrowed);
    if (got != tc->want || borrowed != tc->want_borrowed_after)
      fail_msg("case %zu '%s': got %s borrowed %lld, want %s borrowed %lld", i,
               tc->name, gq_qverdict_reason(got), (long long)borrowed,
               gq_qverdict_reason(tc->want),
               (long long)tc->want_borrowed_after);
    /* borrowed_after is optional */
    assert_int_equal(gq_quota_check(&c, tc->team, tc->gpus, NULL), tc->want);
  }
}

static void test_check_null(void **state)
{
  int64_t borrowed = 7;
  struct gq_qcohort none = {NULL, 3, 1};

  (void)state;
  assert_int_equal(gq_quota_check(NULL, 0, 1, &borrowed), GQ_Q_UNKNOWN_TEAM);
  assert_int_equal(borrowed, 0);
  assert_int_equal(gq_quota_check(&none, 0, 1, NULL), GQ_Q_UNKNOWN_TEAM);
}

/* ---- status numbers: pool, idle, lendable, borrowed, lent, reclaimable -- */

struct numbers_case {
  const char *name;
  int has_cohort;
  size_t n;
  struct gq_qteam teams[MAXT];
  int64_t want_pool;
  int64_t want_idle;
  int64_t want_lendable[MAXT];
  int64_t want_borrowed[MAXT];
  int64_t want_lent[MAXT];
  int64_t want_reclaimable[MAXT];
};

/* clang-format off */
static const struct numbers_case numbers_cases[] = {
    {"idle cohort", 1, 2, {T("a", 8, NL, NL, 0), T("b", 8, NL, NL, 0)}, 16,
     16, {8, 8}, {0, 0}, {0, 0}, {0, 0}},
    {"one borrower, lent in proportion to idle GPUs", 1, 3,
     {T("a", 8, NL, NL, 0), T("b", 8, NL, NL, 4), T("c", 0, NL, NL, 6)}, 16,
     6, {8, 8, 0}, {0, 0, 6}, {4, 2, 0}, {6, 4, 0}},
    {"cumulative rounding sums exactly", 1, 4,
     {T("a", 1, NL, NL, 0), T("b", 1, NL, NL, 0), T("c", 1, NL, NL, 0),
      T("d", 0, NL, NL, 2)},
     3, 1, {1, 1, 1, 0}, {0, 0, 0, 2}, {0, 1, 1, 0}, {1, 1, 1, 0}},
    {"lending limit: only the lendable part is lent", 1, 2,
     {T("a", 16, NL, 8, 0), T("b", 0, NL, NL, 8)}, 8, 0, {8, 0}, {0, 8},
     {8, 0}, {8, 0}},
    {"lender using part of its lendable GPUs", 1, 2,
     {T("a", 16, NL, 8, 10), T("b", 0, NL, NL, 6)}, 8, 0, {8, 0}, {0, 6},
     {6, 0}, {6, 0}},
    {"lending limit above nominal lends only nominal", 1, 2,
     {T("a", 8, NL, 100, 2), T("b", 0, NL, NL, 0)}, 8, 6, {8, 0}, {0, 0},
     {0, 0}, {0, 0}},
    {"no cohort: nothing pooled, lent or reclaimable", 0, 2,
     {T("a", 8, NL, NL, 10), T("b", 8, NL, 4, 0)}, 0, 0, {0, 0}, {2, 0},
     {0, 0}, {0, 0}},
    {"quota lowered below use", 1, 2,
     {T("a", 4, NL, NL, 10), T("b", 8, NL, NL, 0)}, 12, 2, {4, 8}, {6, 0},
     {0, 6}, {0, 6}},
    {"quota lowered, pool overcommitted", 1, 2,
     {T("a", 4, NL, NL, 20), T("b", 8, NL, NL, 4)}, 12, 0, {4, 8}, {16, 0},
     {0, 4}, {0, 4}},
    {"quota lowered to 0", 1, 2,
     {T("a", 0, 0, NL, 5), T("b", 8, NL, NL, 0)}, 8, 3, {0, 8}, {5, 0},
     {0, 5}, {0, 5}},
    {"two lenders, reclaim capped by need", 1, 4,
     {T("a", 4, NL, NL, 2), T("b", 2, NL, NL, 6), T("c", 2, NL, NL, 2),
      T("d", 4, NL, NL, 0)},
     12, 2, {4, 2, 2, 4}, {0, 4, 0, 0}, {1, 0, 0, 3}, {2, 0, 0, 4}},
    {"negative inputs read as 0", 1, 2,
     {T("a", -4, NL, NL, -1), T("b", 4, NL, -3, -9)}, 4, 4, {0, 4}, {0, 0},
     {0, 0}, {0, 0}},
    {"max: nothing negative or wrapped", 1, 3,
     {T("a", MAX, NL, NL, MAX), T("b", MAX, NL, NL, 0),
      T("c", 0, NL, NL, MAX)},
     MAX, 0, {MAX, MAX, 0}, {0, 0, MAX}, {0, MAX, 0}, {0, MAX, 0}},
};
/* clang-format on */

static void check_numbers(size_t i, const struct numbers_case *tc,
                          const struct gq_qcohort *c)
{
  size_t t;

  if (gq_quota_pool(c) != tc->want_pool || gq_quota_idle(c) != tc->want_idle)
    fail_msg("case %zu '%s': pool %lld idle %lld, want %lld %lld", i, tc->name,
             (long long)gq_quota_pool(c), (long long)gq_quota_idle(c),
             (long long)tc->want_pool, (long long)tc->want_idle);
  for (t = 0; t < tc->n; t++) {
    int64_t got[4] = {gq_quota_lendable(c, t), gq_quota_borrowed(&c->teams[t]),
                      gq_quota_lent(c, t), gq_quota_reclaimable(c, t)};
    int64_t want[4] = {tc->want_lendable[t], tc->want_borrowed[t],
                       tc->want_lent[t], tc->want_reclaimable[t]};

    if (memcmp(got, want, sizeof(got)) != 0)
      fail_msg("case %zu '%s' team %zu: lendable/borrowed/lent/reclaimable "
               "%lld/%lld/%lld/%lld, want %lld/%lld/%lld/%lld",
               i, tc->name, t, (long long)got[0], (long long)got[1],
               (long long)got[2], (long long)got[3], (long long)want[0],
               (long long)want[1], (long long)want[2], (long long)want[3]);
  }
}

static void test_numbers_table(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < N_OF(numbers_cases); i++) {
    const struct numbers_case *tc = &numbers_cases[i];
    struct gq_qteam teams[MAXT];
    struct gq_qcohort c = {teams, tc->n, tc->has_cohort};

    memcpy(teams, tc->teams, sizeof(teams));
    check_numbers(i, tc, &c);
  }
}

static void test_numbers_null(void **state)
{
  struct gq_qteam t = T("a", 8, NL, NL, 10);
  struct gq_qcohort c = {&t, 1, 1};

  (void)state;
  assert_int_equal(gq_quota_pool(NULL), 0);
  assert_int_equal(gq_quota_idle(NULL), 0);
  assert_int_equal(gq_quota_borrowed(NULL), 0);
  assert_int_equal(gq_quota_lent(NULL, 0), 0);
  assert_int_equal(gq_quota_reclaimable(NULL, 0), 0);
  assert_int_equal(gq_quota_lendable(NULL, 0), 0);
  assert_int_equal(gq_quota_lent(&c, 1), 0);
  assert_int_equal(gq_quota_reclaimable(&c, 1), 0);
  assert_int_equal(gq_quota_lendable(&c, 1), 0);
}

/* Beyond int64 sums lent is approximate (quota.c scaled_part) but must stay
 * non-negative, within each lender's idle GPUs, and close to the total. */
static void test_lent_beyond_int64(void **state)
{
  struct gq_qteam teams[] = {T("a", MAX, NL, NL, 0), T("b", MAX, NL, NL, 0),
                             T("c", 0, NL, NL, MAX)};
  struct gq_qcohort c = {teams, 3, 1};
  int64_t a = gq_quota_lent(&c, 0), b = gq_quota_lent(&c, 1);

  (void)state;
  assert_int_equal(gq_quota_pool(&c), MAX);
  assert_int_equal(gq_quota_idle(&c), MAX); /* 2 MAX - MAX */
  assert_true(a >= MAX / 2 - 2 && a <= MAX / 2 + 1);
  assert_true(b >= MAX / 2 - 2 && b <= MAX / 2 + 1);
  assert_true(a + b >= MAX - 4);
  assert_int_equal(gq_quota_lent(&c, 2), 0);
}

/* ---- gq_quota_share ---------------------------------------------------- */

struct share_case {
  const char *name;
  struct gq_qteam team;
  int64_t pool;
  double want;
};

/* clang-format off */
static const struct share_case share_cases[] = {
    {"not borrowing", T("a", 8, NL, NL, 4), 16, 0.0},
    {"at nominal", T("a", 8, NL, NL, 8), 16, 0.0},
    {"borrowing 4 of 16", T("a", 8, NL, NL, 12), 16, 0.25},
    /* history: 12 GPUs on average lately, 4 of them above nominal */
    {"borrowed lately counts", TH("a", 8, 8, 12.0), 16, 0.25},
    {"and adds to borrowing now", TH("a", 8, 12, 12.0), 16, 0.5},
    {"history within nominal adds nothing", TH("a", 8, 12, 6.0), 16, 0.25},
    {"weight 2 halves it", TW("a", 8, NL, NL, 12, 2.0), 16, 0.125},
    {"weight 0.5 doubles it", TW("a", 8, NL, NL, 12, 0.5), 16, 0.5},
    {"weight 0 borrower sorts last", TW("a", 8, NL, NL, 12, 0.0), 16,
     INFINITY},
    {"negative weight", TW("a", 8, NL, NL, 12, -1.0), 16, INFINITY},
    {"weight NaN", TW("a", 8, NL, NL, 12, NAN), 16, INFINITY},
    {"weight 0, not borrowing", TW("a", 8, NL, NL, 8, 0.0), 16, 0.0},
    {"borrowing with an empty pool", T("a", 8, NL, NL, 12), 0, INFINITY},
    {"quota lowered: excess is the share", T("a", 4, NL, NL, 10), 12, 0.5},
    {"negative used", T("a", 8, NL, NL, -12), 16, 0.0},
    {"max: whole pool", T("a", 0, NL, NL, MAX), MAX, 1.0},
};
/* clang-format on */

static void test_share_table(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < N_OF(share_cases); i++) {
    const struct share_case *tc = &share_cases[i];
    double got = gq_quota_share(&tc->team, tc->pool);

    if (isnan(got) || got != tc->want)
      fail_msg("case %zu '%s': share %g, want %g", i, tc->name, got, tc->want);
  }
  assert_true(gq_quota_share(NULL, 16) == 0.0);
}

/* ---- gq_quota_order ---------------------------------------------------- */

struct order_case {
  const char *name;
  int has_cohort;
  size_t n;
  struct gq_qteam teams[MAXT];
  int64_t heads[MAXT]; /* GPUs of each team's head job; -1 none */
  size_t want_n;
  size_t want_order[MAXT];
};

/* clang-format off */
static const struct order_case order_cases[] = {
    {"nominal-fitting team first", 1, 2,
     {T("alpha", 8, NL, NL, 8), T("beta", 8, NL, NL, 0)}, {2, 4}, 2, {1, 0}},
    {"weight 2 before weight 1 at equal borrowing", 1, 3,
     {TW("a", 8, NL, NL, 8, 1.0), TW("b", 8, NL, NL, 8, 2.0),
      T("c", 16, NL, NL, 0)},
     {4, 4, -1}, 2, {1, 0}},
    {"borrowers tie by name", 1, 2,
     {T("zeta", 8, NL, NL, 8), T("alpha", 8, NL, NL, 8)}, {2, 2}, 2, {1, 0}},
    {"nominal-fitting teams tie by name", 1, 3,
     {T("m", 8, NL, NL, 0), T("b", 8, NL, NL, 0), T("x", 8, NL, NL, 0)},
     {1, 8, 2}, 3, {1, 0, 2}},
    {"lower share after admission first", 1, 3,
     {T("a", 8, NL, NL, 8), T("b", 8, NL, NL, 10), T("c", 16, NL, NL, 0)},
     {8, 1, -1}, 2, {1, 0}},
    {"weight beats raw borrowing", 1, 3,
     {TW("a", 8, NL, NL, 10, 4.0), T("b", 8, NL, NL, 8),
      T("c", 16, NL, NL, 0)},
     {6, 3, -1}, 2, {0, 1}},
    {"teams without a head are left out", 1, 3,
     {T("a", 8, NL, NL, 0), T("b", 8, NL, NL, 0), T("c", 8, NL, NL, 0)},
     {-1, 2, -5}, 1, {1}},
    {"no heads", 1, 2, {T("a", 8, NL, NL, 0), T("b", 8, NL, NL, 0)},
     {-1, -1}, 0, {0}},
    {"over-quota team sorts among borrowers", 1, 3,
     {T("a", 4, NL, NL, 10), T("b", 8, NL, NL, 8), T("c", 8, NL, NL, 0)},
     {1, 1, 8}, 3, {2, 1, 0}},
    {"identical names tie by index", 1, 2,
     {T("same", 8, NL, NL, 8), T("same", 8, NL, NL, 8)}, {1, 1}, 2, {0, 1}},
    {"NULL name sorts as empty", 1, 2,
     {T(NULL, 8, NL, NL, 0), T("a", 8, NL, NL, 0)}, {1, 1}, 2, {0, 1}},
    {"weight 0 borrower goes last", 1, 2,
     {TW("a", 8, NL, NL, 8, 0.0), T("b", 8, NL, NL, 8)}, {1, 7}, 2, {1, 0}},
    {"head of 0 GPUs fits nominal", 1, 2,
     {T("b", 8, NL, NL, 8), T("a", 8, NL, NL, 0)}, {0, 1}, 2, {1, 0}},
    {"no cohort: full teams after the others", 0, 3,
     {T("a", 8, NL, NL, 8), T("b", 8, NL, NL, 0), T("c", 8, NL, NL, 8)},
     {1, 8, 1}, 3, {1, 0, 2}},
    {"max: exact grouping at int64 extremes", 1, 3,
     {T("a", MAX, NL, NL, MAX - 1), T("b", 0, NL, NL, 0),
      T("c", MAX, NL, NL, MAX - 1)},
     {2, MAX, 1}, 3, {2, 0, 1}},
};
/* clang-format on */

static void test_order_table(void **state)
{
  size_t i, k;

  (void)state;
  for (i = 0; i < N_OF(order_cases); i++) {
    const struct order_case *tc = &order_cases[i];
    struct gq_qteam teams[MAXT];
    struct gq_qcohort c = {teams, tc->n, tc->has_cohort};
    size_t order[MAXT] = {99, 99, 99, 99}, n = 99;

    memcpy(teams, tc->teams, sizeof(teams));
    gq_quota_order(&c, tc->heads, order, &n);
    if (n != tc->want_n)
      fail_msg("case %zu '%s': %zu teams ordered, want %zu", i, tc->name, n,
               tc->want_n);
    for (k = 0; k < n; k++)
      if (order[k] != tc->want_order[k])
        fail_msg("case %zu '%s': position %zu is team %zu, want %zu", i,
                 tc->name, k, order[k], tc->want_order[k]);
  }
}

static void test_order_null(void **state)
{
  struct gq_qteam t = T("a", 8, NL, NL, 0);
  struct gq_qcohort c = {&t, 1, 1};
  int64_t heads[1] = {1};
  size_t order[1], n = 5;

  (void)state;
  gq_quota_order(NULL, heads, order, &n);
  assert_int_equal(n, 0);
  n = 5;
  gq_quota_order(&c, NULL, order, &n);
  assert_int_equal(n, 0);
  n = 5;
  gq_quota_order(&c, heads, NULL, &n);
  assert_int_equal(n, 0);
  gq_quota_order(&c, heads, order, NULL); /* must not crash */
}

/* ---- reasons and messages ---------------------------------------------- */

struct message_case {
  enum gq_qverdict v;
  struct gq_qteam team;
  int64_t gpus;
  const char *want_reason;
  const char *want_message;
};

/* clang-format off */
static const struct message_case message_cases[] = {
    {GQ_Q_FITS_NOMINAL, T("research", 16, 16, 8, 8), 4, "FitsNominalQuota",
     "team 'research' uses 8 of its 16 nominal GPUs; the job's 4 GPUs fit "
     "within its nominal quota"},
    {GQ_Q_FITS_BORROWING, T("research", 16, 16, 8, 14), 4,
     "FitsBorrowingQuota",
     "team 'research' uses 14 of its 16 nominal GPUs; the job's 4 GPUs fit "
     "by borrowing idle GPUs of its cohort (it would borrow 2, "
     "borrowingLimit 16)"},
    {GQ_Q_FITS_BORROWING, T("interns", 0, NL, NL, 0), 8,
     "FitsBorrowingQuota",
     "team 'interns' uses 0 of its 0 nominal GPUs; the job's 8 GPUs fit by "
     "borrowing idle GPUs of its cohort (it would borrow 8, no "
     "borrowingLimit)"},
    {GQ_Q_OVER_NOMINAL_NO_BORROW, T("research", 16, NL, NL, 14), 4,
     "WaitingForQuota",
     "team 'research' uses 14 of its 16 nominal GPUs and may not borrow (it "
     "has no cohort); the job needs 4"},
    {GQ_Q_OVER_NOMINAL_NO_BORROW, T("research", 16, 0, NL, 14), 4,
     "WaitingForQuota",
     "team 'research' uses 14 of its 16 nominal GPUs and may not borrow (its "
     "borrowingLimit is 0); the job needs 4"},
    {GQ_Q_OVER_NOMINAL_NO_BORROW, T("research", 8, 0, NL, 12), 2,
     "WaitingForQuota",
     "team 'research' uses 12 GPUs (4 above its nominal quota of 8) and may "
     "not borrow (its borrowingLimit is 0); the job needs 2"},
    {GQ_Q_OVER_BORROW_LIMIT, T("research", 16, 8, NL, 20), 8,
     "BorrowingLimitReached",
     "team 'research' uses 20 GPUs (4 above its nominal quota of 16); the "
     "job's 8 GPUs would make it borrow 12, above its borrowingLimit of 8"},
    {GQ_Q_COHORT_EXHAUSTED, T("research", 16, NL, 8, 8), 4,
     "WaitingForReclaim",
     "team 'research' uses 8 of its 16 nominal GPUs; the job's 4 GPUs are "
     "within its nominal quota, but other teams of its cohort are borrowing "
     "them: waiting for them to be reclaimed"},
    {GQ_Q_COHORT_EXHAUSTED, T("interns", 0, 8, NL, 0), 8,
     "WaitingForReclaim",
     "team 'interns' uses 0 of its 0 nominal GPUs; the job's 8 GPUs would "
     "make it borrow 8 (borrowingLimit 8), but its cohort has no idle GPUs "
     "to lend"},
    {GQ_Q_ZERO_QUOTA, T("interns", 0, 0, NL, 0), 2, "QuotaZeroNoBorrowing",
     "team 'interns' has a nominal quota of 0 GPUs and may not borrow; the "
     "job (2 GPUs) stays queued until its TeamQuota changes"},
    {GQ_Q_UNKNOWN_TEAM, T("ghost", 0, 0, 0, 0), 1, "UnknownTeam",
     "no TeamQuota for team 'ghost'; the job waits until one exists"},
    {(enum gq_qverdict)42, T("a", 0, 0, 0, 0), 3, "Unknown",
     "quota verdict 42 for a job of 3 GPUs"},
};
/* clang-format on */

static void test_message_table(void **state)
{
  size_t i;

  (void)state;
  for (i = 0; i < N_OF(message_cases); i++) {
    const struct message_case *tc = &message_cases[i];
    char buf[GQ_QVERDICT_MESSAGE_LEN];
    int rc = gq_qverdict_message(tc->v, &tc->team, tc->gpus, buf, sizeof(buf));

    assert_string_equal(gq_qverdict_reason(tc->v), tc->want_reason);
    if (rc < 0 || strcmp(buf, tc->want_message) != 0)
      fail_msg("case %zu: rc %d\n got '%s'\nwant '%s'", i, rc,
               rc < 0 ? "" : buf, tc->want_message);
    assert_int_equal(rc, (int)strlen(tc->want_message));
  }
}

static void test_message_edges(void **state)
{
  struct gq_qteam t = T("research", 16, NL, NL, 14);
  char buf[16], big[GQ_QVERDICT_MESSAGE_LEN];

  (void)state;
  assert_int_equal(gq_qverdict_message(GQ_Q_ZERO_QUOTA, &t, 1, NULL, 10),
                   GQ_EINVAL);
  assert_int_equal(gq_qverdict_message(GQ_Q_ZERO_QUOTA, &t, 1, buf, 0),
                   GQ_EINVAL);
  /* too small: truncated, still terminated */
  assert_int_equal(
      gq_qverdict_message(GQ_Q_ZERO_QUOTA, &t, 1, buf, sizeof(buf)),
      GQ_ETOOBIG);
  assert_string_equal(buf, "team 'research'");
  /* unknown team without a struct */
  assert_true(gq_qverdict_message(GQ_Q_UNKNOWN_TEAM, NULL, 1, buf,
                                  sizeof(buf)) == GQ_ETOOBIG);
  assert_string_equal(buf, "no TeamQuota fo");
  /* other verdicts without a team: a generic sentence */
  assert_int_equal(
      gq_qverdict_message(GQ_Q_FITS_NOMINAL, NULL, 1, big, sizeof(big)),
      (int)strlen("quota verdict 0 for a job of 1 GPUs"));
  assert_string_equal(big, "quota verdict 0 for a job of 1 GPUs");
  /* a negative request is shown as 0 GPUs, never as a negative number */
  assert_true(gq_qverdict_message(GQ_Q_ZERO_QUOTA, &t, -5, big, sizeof(big)) >
              0);
  assert_non_null(strstr(big, "the job (0 GPUs)"));
}

/* Every verdict's message fits GQ_QVERDICT_MESSAGE_LEN with a 253-character
 * team name and the widest numbers. */
static void test_message_len(void **state)
{
  char name[254], buf[GQ_QVERDICT_MESSAGE_LEN];
  struct gq_qteam worst[] = {T(name, 1, MAX, NL, MAX),
                             T(name, MAX, NL, NL, MAX), T(name, 0, 0, NL, MAX)};
  int v;
  size_t k;

  (void)state;
  memset(name, 'n', sizeof(name) - 1);
  name[sizeof(name) - 1] = '\0';
  for (v = GQ_Q_FITS_NOMINAL; v <= GQ_Q_UNKNOWN_TEAM + 1; v++)
    for (k = 0; k < N_OF(worst); k++) {
      int rc = gq_qverdict_message((enum gq_qverdict)v, &worst[k], MAX, buf,
                                   sizeof(buf));

      if (rc < 0)
        fail_msg("verdict %d team %zu: rc %d", v, k, rc);
    }
}

/* ---- seeded sweep against Kueue's formula ------------------------------ */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static int64_t rnd(int64_t lo, int64_t hi)
{
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return lo + (int64_t)(rng_state % (uint64_t)(hi - lo + 1));
}

static int64_t max64(int64_t a, int64_t b)
{
  return a > b ? a : b;
}

static int64_t lendable_of(const struct gq_qteam *t, int has_cohort)
{
  if (!has_cohort)
    return 0;
  return t->lend_limit < 0 || t->lend_limit > t->nominal ? t->nominal
                                                         : t->lend_limit;
}

/* Kueue's resource_node.go available() for a ClusterQueue under a flat
 * cohort, written out independently of quota.c; a team alone is a root. */
static int64_t kueue_available(const struct gq_qcohort *c, size_t k,
                               int64_t *overcommit)
{
  const struct gq_qteam *t = &c->teams[k];
  int64_t pool = 0, usage = 0, guaranteed, local, parent;
  size_t i;

  if (!c->has_cohort)
    return t->nominal - t->used;
  for (i = 0; i < c->n; i++) {
    int64_t l = lendable_of(&c->teams[i], 1);

    pool += l;
    usage += max64(0, c->teams[i].used - (c->teams[i].nominal - l));
  }
  *overcommit = usage > pool;
  guaranteed = t->nominal - lendable_of(t, 1);
  local = max64(0, guaranteed - t->used);
  parent = pool - usage;
  if (t->borrow_limit >= 0) {
    int64_t stored = t->nominal - guaranteed;
    int64_t in_parent = max64(0, t->used - guaranteed);
    int64_t with_max = stored - in_parent + t->borrow_limit;

    parent = with_max < parent ? with_max : parent;
  }
  return local + parent;
}

static void random_cohort(struct gq_qteam *teams, struct gq_qcohort *c)
{
  size_t i;

  c->teams = teams;
  c->n = (size_t)rnd(1, MAXT);
  c->has_cohort = rnd(0, 3) != 0;
  for (i = 0; i < c->n; i++) {
    teams[i].name = (const char *[]){"a", "b", "c", "d"}[rnd(0, 3)];
    teams[i].nominal = rnd(0, 10);
    teams[i].borrow_limit = rnd(-1, 6);
    teams[i].lend_limit = rnd(0, 2) == 0 ? NL : rnd(0, 12);
    teams[i].used = rnd(0, 14);
    teams[i].weight = (double)rnd(1, 4);
    teams[i].pending = 0;
    teams[i].hist_gpus = rnd(0, 2) == 0 ? (double)rnd(0, 14) : 0;
    teams[i].rank = rnd(0, 1);
  }
}

static void sweep_check(const struct gq_qcohort *c, size_t k)
{
  const struct gq_qteam *t = &c->teams[k];
  int64_t gpus, over = 0, avail = kueue_available(c, k, &over);
  int prev_fit = 1;

  for (gpus = 1; gpus <= 12; gpus++) {
    int64_t ba;
    enum gq_qverdict v = gq_quota_check(c, k, gpus, &ba);
    int fit = v == GQ_Q_FITS_NOMINAL || v == GQ_Q_FITS_BORROWING;

    assert_int_equal(ba, max64(0, t->used + gpus - t->nominal));
    if (!over && fit != (gpus <= avail))
      fail_msg("team %zu gpus %lld: %s but Kueue's available is %lld", k,
               (long long)gpus, gq_qverdict_reason(v), (long long)avail);
    if (fit && !prev_fit)
      fail_msg("team %zu: %lld GPUs fit but fewer did not", k, (long long)gpus);
    if (v == GQ_Q_FITS_NOMINAL)
      assert_true(t->used + gpus <= t->nominal);
    if (v == GQ_Q_FITS_BORROWING)
      assert_true(c->has_cohort &&
                  (t->borrow_limit < 0 || ba <= t->borrow_limit));
    prev_fit = fit;
  }
}

static void sweep_numbers(const struct gq_qcohort *c)
{
  int64_t borrowed = 0, idle = 0, lent = 0;
  size_t i;

  for (i = 0; i < c->n; i++) {
    const struct gq_qteam *t = &c->teams[i];
    int64_t l = lendable_of(t, c->has_cohort);
    int64_t own = max64(0, t->used - (t->nominal - l));
    int64_t my_idle = own >= l ? 0 : l - own;
    int64_t li = gq_quota_lent(c, i), r = gq_quota_reclaimable(c, i);

    assert_true(li >= 0 && li <= my_idle);
    assert_true(r >= 0 && r <= max64(0, t->nominal - t->used));
    borrowed += gq_quota_borrowed(t);
    idle += my_idle;
    lent += li;
  }
  if (c->has_cohort)
    assert_int_equal(lent, borrowed < idle ? borrowed : idle);
  else
    assert_int_equal(lent, 0);
  assert_true(gq_quota_idle(c) >= 0);
}

static void sweep_order(const struct gq_qcohort *c)
{
  int64_t heads[MAXT];
  size_t order[MAXT], n, i, with_head = 0;
  int64_t pool = gq_quota_pool(c);
  int seen_group1 = 0;

  for (i = 0; i < c->n; i++) {
    heads[i] = rnd(-1, 8);
    with_head += heads[i] >= 0;
  }
  gq_quota_order(c, heads, order, &n);
  assert_int_equal(n, with_head);
  for (i = 0; i < n; i++) {
    const struct gq_qteam *t = &c->teams[order[i]];
    int group1 = t->used + heads[order[i]] > t->nominal;

    assert_true(heads[order[i]] >= 0);
    assert_false(seen_group1 && !group1); /* nominal-fitting teams first */
    if (i > 0 && group1 && seen_group1) {
      struct gq_qteam a = c->teams[order[i - 1]], b = *t;

      a.used += heads[order[i - 1]];
      b.used += heads[order[i]];
      assert_true(a.rank <= b.rank); /* then the head's rank */
      if (a.rank == b.rank)
        assert_true(gq_quota_share(&a, pool) <= gq_quota_share(&b, pool));
    }
    seen_group1 |= group1;
  }
}

static void test_sweep(void **state)
{
  int round;

  (void)state;
  for (round = 0; round < 20000; round++) {
    struct gq_qteam teams[MAXT];
    struct gq_qcohort c;
    size_t k;

    random_cohort(teams, &c);
    for (k = 0; k < c.n; k++)
      sweep_check(&c, k);
    sweep_numbers(&c);
    sweep_order(&c);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_check_table),
      cmocka_unit_test(test_check_null),
      cmocka_unit_test(test_numbers_table),
      cmocka_unit_test(test_numbers_null),
      cmocka_unit_test(test_lent_beyond_int64),
      cmocka_unit_test(test_share_table),
      cmocka_unit_test(test_order_table),
      cmocka_unit_test(test_order_null),
      cmocka_unit_test(test_message_table),
      cmocka_unit_test(test_message_edges),
      cmocka_unit_test(test_message_len),
      cmocka_unit_test(test_sweep),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
