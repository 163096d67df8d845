/* decide/quota.c - team GPU quota arithmetic (see quota.h for the model). */
#include "decide/quota.h"

#include "base/err.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Sums and intermediate results are computed in 128 bits, where the int64
 * numbers of any realistic number of teams cannot overflow, and clamped to
 * [0, INT64_MAX] only when returned, so verdicts stay exact even at the int64
 * extremes. __int128 is a GCC/Clang builtin type, not a library. */
__extension__ typedef __int128 wide;

/* One team's numbers, cleaned up once so that every rule below can assume
 * non-negative values and nominal = guaranteed + lendable. */
struct view {
  int64_t nominal;
  int64_t used;
  int64_t lendable;     /* part of nominal in the pool; 0 without cohort */
  int64_t guaranteed;   /* nominal - lendable */
  int64_t borrow_limit; /* -1 = no limit; 0 without cohort */
};

static int64_t nonneg(int64_t v)
{
  return v < 0 ? 0 : v;
}

static int64_t min64(int64_t a, int64_t b)
{
  return a < b ? a : b;
}

/* What callers see of a wide result: never negative, never wrapped;
 * INT64_MAX stands for "INT64_MAX or more". */
static int64_t clamp64(wide v)
{
  if (v < 0)
    return 0;
  return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static int valid_team(const struct gq_qcohort *c, size_t team)
{
  return c && c->teams && team < c->n;
}

/* Reads a team as DESIGN §2 defines it: an absent (negative) lendingLimit
 * lends all of nominal, a lendingLimit above nominal lends only nominal, and
 * without a cohort nothing is lent or borrowed. */
static struct view view_of(const struct gq_qteam *t, int has_cohort)
{
  struct view v;

  v.nominal = nonneg(t->nominal);
  v.used = nonneg(t->used);
  v.lendable = 0;
  v.borrow_limit = 0;
  if (has_cohort) {
    v.lendable =
        t->lend_limit < 0 ? v.nominal : min64(t->lend_limit, v.nominal);
    v.borrow_limit = t->borrow_limit < 0 ? -1 : t->borrow_limit;
  }
  v.guaranteed = v.nominal - v.lendable;
  return v;
}

/* GPUs the team takes from the pool when it uses 'used': everything beyond
 * its guaranteed part (its own lendable GPUs first, then borrowed ones). */
static wide pool_use(const struct view *v, wide used)
{
  return used > v->guaranteed ? used - v->guaranteed : 0;
}

/* Sum of pool_use() over all teams except 'skip' (pass c->n to skip none). */
static wide pool_use_total(const struct gq_qcohort *c, size_t skip)
{
  wide sum = 0;
  size_t i;

  for (i = 0; i < c->n; i++) {
    struct view v;

    if (i == skip)
      continue;
    v = view_of(&c->teams[i], c->has_cohort);
    sum += pool_use(&v, v.used);
  }
  return sum;
}

int64_t gq_quota_lendable(const struct gq_qcohort *c, size_t team)
{
  if (!valid_team(c, team))
    return 0;
  return view_of(&c->teams[team], c->has_cohort).lendable;
}

static wide pool_total(const struct gq_qcohort *c)
{
  wide pool = 0;
  size_t i;

  if (!c || !c->teams || !c->has_cohort)
    return 0;
  for (i = 0; i < c->n; i++)
    pool += gq_quota_lendable(c, i);
  return pool;
}

int64_t gq_quota_pool(const struct gq_qcohort *c)
{
  return clamp64(pool_total(c));
}

/* The quota part of gq_quota_check() (steps 3-6): the team's own limits,
 * before looking at what the rest of the cohort uses. 'after' is the team's
 * use with the job admitted. */
static enum gq_qverdict quota_verdict(const struct view *v, wide after)
{
  if (v->nominal == 0 && v->borrow_limit == 0)
    return GQ_Q_ZERO_QUOTA;
  if (after <= v->nominal)
    return GQ_Q_FITS_NOMINAL;
  if (v->borrow_limit == 0)
    return GQ_Q_OVER_NOMINAL_NO_BORROW;
  if (v->borrow_limit > 0 && after - v->nominal > v->borrow_limit)
    return GQ_Q_OVER_BORROW_LIMIT;
  return GQ_Q_FITS_BORROWING;
}

/* The cohort part: does the pool still cover everyone's use beyond their
 * guaranteed parts once the team uses 'after'? A use within the team's
 * guaranteed part never touches the pool, so it fits even when a lowered
 * quota left others using more than the pool (nominal is a guarantee,
 * DESIGN §2; Kueue would subtract that overcommit from it). */
static int pool_covers(const struct gq_qcohort *c, size_t team,
                       const struct view *v, wide after)
{
  wide mine = pool_use(v, after);

  return mine == 0 || mine + pool_use_total(c, team) <= pool_total(c);
}

enum gq_qverdict gq_quota_check(const struct gq_qcohort *c, size_t team,
                                int64_t gpus, int64_t *borrowed_after)
{
  enum gq_qverdict verdict;
  struct view v;
  wide after;

  if (borrowed_after)
    *borrowed_after = 0;
  if (!valid_team(c, team))
    return GQ_Q_UNKNOWN_TEAM;
  v = view_of(&c->teams[team], c->has_cohort);
  after = (wide)v.used + nonneg(gpus);
  if (borrowed_after)
    *borrowed_after = clamp64(after - v.nominal);
  if (gpus <= 0)
    return GQ_Q_FITS_NOMINAL; /* takes nothing, even from a team over quota */
  verdict = quota_verdict(&v, after);
  if (verdict != GQ_Q_FITS_NOMINAL && verdict != GQ_Q_FITS_BORROWING)
    return verdict;
  if (c->has_cohort && !pool_covers(c, team, &v, after))
    return GQ_Q_COHORT_EXHAUSTED;
  return verdict;
}

const char *gq_qverdict_reason(enum gq_qverdict v)
{
  static const char *const reasons[] = {
      [GQ_Q_FITS_NOMINAL] = "FitsNominalQuota",
      [GQ_Q_FITS_BORROWING] = "FitsBorrowingQuota",
      [GQ_Q_OVER_NOMINAL_NO_BORROW] = "WaitingForQuota",
      [GQ_Q_OVER_BORROW_LIMIT] = "BorrowingLimitReached",
      [GQ_Q_COHORT_EXHAUSTED] = "WaitingForReclaim",
      [GQ_Q_ZERO_QUOTA] = "QuotaZeroNoBorrowing",
      [GQ_Q_UNKNOWN_TEAM] = "UnknownTeam",
  };

  if ((unsigned)v >= sizeof(reasons) / sizeof(reasons[0]))
    return "Unknown";
  return reasons[v];
}

/* snprintf into buf with gq's return convention: the length, or GQ_ETOOBIG
 * with the text truncated (a cut status message beats an empty one). */
static int put_msg(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int put_msg(char *buf, size_t len, const char *fmt, ...)
{
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(buf, len, fmt, ap);
  va_end(ap);
  if (n < 0) {
    buf[0] = '\0';
    return GQ_ETOOBIG;
  }
  return (size_t)n >= len ? GQ_ETOOBIG : n;
}

/* "uses 6 of its 8 nominal GPUs", or, over quota, "uses 12 GPUs (4 above
 * its nominal quota of 8)" (DESIGN §4: usage above quota shown plainly). */
static void usage_clause(const struct gq_qteam *t, char *buf, size_t len)
{
  int64_t nominal = nonneg(t->nominal), used = nonneg(t->used);

  if (used <= nominal)
    snprintf(buf, len, "uses %" PRId64 " of its %" PRId64 " nominal GPUs", used,
             nominal);
  else
    snprintf(buf, len,
             "uses %" PRId64 " GPUs (%" PRId64
             " above its nominal quota of %" PRId64 ")",
             used, used - nominal, nominal);
}

/* "borrowingLimit 8" or "no borrowingLimit", for messages. */
static void limit_clause(const struct gq_qteam *t, char *buf, size_t len)
{
  if (t->borrow_limit < 0)
    snprintf(buf, len, "no borrowingLimit");
  else
    snprintf(buf, len, "borrowingLimit %" PRId64, t->borrow_limit);
}

/* Messages for the verdicts where quota allows the job. */
static int message_fits(enum gq_qverdict v, const struct gq_qteam *t,
                        int64_t gpus, char *buf, size_t len)
{
  const char *name = t->name ? t->name : "";
  int64_t borrow = clamp64((wide)nonneg(t->used) + gpus - nonneg(t->nominal));
  char use[128], lim[48];

  usage_clause(t, use, sizeof(use));
  limit_clause(t, lim, sizeof(lim));
  if (v == GQ_Q_FITS_NOMINAL)
    return put_msg(buf, len,
                   "team '%s' %s; the job's %" PRId64
                   " GPUs fit within its nominal quota",
                   name, use, gpus);
  if (v == GQ_Q_FITS_BORROWING)
    return put_msg(buf, len,
                   "team '%s' %s; the job's %" PRId64 " GPUs fit by borrowing "
                   "idle GPUs of its cohort (it would borrow %" PRId64 ", %s)",
                   name, use, gpus, borrow, lim);
  if (borrow == 0)
    return put_msg(buf, len,
                   "team '%s' %s; the job's %" PRId64 " GPUs are within its "
                   "nominal quota, but other teams of its cohort are "
                   "borrowing them: waiting for them to be reclaimed",
                   name, use, gpus);
  return put_msg(buf, len,
                 "team '%s' %s; the job's %" PRId64 " GPUs would make it "
                 "borrow %" PRId64 " (%s), but its cohort has no idle GPUs "
                 "to lend",
                 name, use, gpus, borrow, lim);
}

/* Messages for the verdicts where the team's own quota says no. */
static int message_waits(enum gq_qverdict v, const struct gq_qteam *t,
                         int64_t gpus, char *buf, size_t len)
{
  const char *name = t->name ? t->name : "";
  int64_t borrow = clamp64((wide)nonneg(t->used) + gpus - nonneg(t->nominal));
  char use[128];

  usage_clause(t, use, sizeof(use));
  if (v == GQ_Q_OVER_NOMINAL_NO_BORROW)
    return put_msg(buf, len,
                   "team '%s' %s and may not borrow (%s); the job needs "
                   "%" PRId64,
                   name, use,
                   t->borrow_limit == 0 ? "its borrowingLimit is 0"
                                        : "it has no cohort",
                   gpus);
  if (v == GQ_Q_OVER_BORROW_LIMIT)
    return put_msg(buf, len,
                   "team '%s' %s; the job's %" PRId64 " GPUs would make it "
                   "borrow %" PRId64 ", above its borrowingLimit of %" PRId64,
                   name, use, gpus, borrow, t->borrow_limit);
  return put_msg(buf, len,
                 "team '%s' has a nominal quota of 0 GPUs and may not "
                 "borrow; the job (%" PRId64 " GPUs) stays queued until its "
                 "TeamQuota changes",
                 name, gpus);
}

int gq_qverdict_message(enum gq_qverdict v, const struct gq_qteam *team,
                        int64_t gpus, char *buf, size_t len)
{
  if (!buf || len == 0)
    return GQ_EINVAL;
  gpus = nonneg(gpus);
  switch (v) {
  case GQ_Q_UNKNOWN_TEAM:
    return put_msg(buf, len,
                   "no TeamQuota for team '%s'; the job waits until one "
                   "exists",
                   team && team->name ? team->name : "");
  case GQ_Q_FITS_NOMINAL:
  case GQ_Q_FITS_BORROWING:
  case GQ_Q_COHORT_EXHAUSTED:
    if (team)
      return message_fits(v, team, gpus, buf, len);
    break;
  case GQ_Q_OVER_NOMINAL_NO_BORROW:
  case GQ_Q_OVER_BORROW_LIMIT:
  case GQ_Q_ZERO_QUOTA:
    if (team)
      return message_waits(v, team, gpus, buf, len);
    break;
  }
  return put_msg(buf, len, "quota verdict %d for a job of %" PRId64 " GPUs",
                 (int)v, gpus);
}

int64_t gq_quota_borrowed(const struct gq_qteam *t)
{
  int64_t nominal, used;

  if (!t)
    return 0;
  nominal = nonneg(t->nominal);
  used = nonneg(t->used);
  return used > nominal ? used - nominal : 0; /* both >= 0: cannot wrap */
}

/* The part of a team's lendable GPUs it is not using itself. A team uses
 * its guaranteed part first, then its own lendable part, then borrows. */
static wide idle_lendable(const struct view *v)
{
  wide own = pool_use(v, v->used);

  return own >= v->lendable ? 0 : v->lendable - own;
}

/* floor(x * part / whole) for 0 <= x <= whole, 0 <= part <= whole, whole > 0.
 * Exact while whole fits in 63 bits (the product then fits in 126). Beyond
 * that, only with absurd quotas, all three are halved until it fits and the
 * result doubled back: approximate, but the halving depends on whole alone,
 * so it is the same for every team, the result is monotone in part and the
 * floors still telescope (lent numbers stay >= 0 and sum to about x). */
static wide scaled_part(wide x, wide part, wide whole)
{
  int shift = 0;

  while (whole > INT64_MAX) {
    x >>= 1;
    part >>= 1;
    whole >>= 1;
    shift++;
  }
  return (x * part / whole) << shift;
}

int64_t gq_quota_lent(const struct gq_qcohort *c, size_t team)
{
  wide borrowed = 0, idle = 0, before = 0, mine = 0, x;
  size_t i;

  if (!valid_team(c, team) || !c->has_cohort)
    return 0;
  for (i = 0; i < c->n; i++) {
    struct view v = view_of(&c->teams[i], 1);
    wide id = idle_lendable(&v);

    borrowed += gq_quota_borrowed(&c->teams[i]);
    if (i < team)
      before += id;
    if (i == team)
      mine = id;
    idle += id;
  }
  if (mine == 0)
    return 0; /* a borrower, or a lender using all it could lend */
  /* Cumulative rounding: the floors telescope, so the lent numbers of all
   * teams sum to exactly x, and each is within one GPU of x * mine / idle. */
  x = borrowed < idle ? borrowed : idle;
  return clamp64(scaled_part(x, before + mine, idle) -
                 scaled_part(x, before, idle));
}

int64_t gq_quota_idle(const struct gq_qcohort *c)
{
  if (!c || !c->teams || !c->has_cohort)
    return 0;
  return clamp64(pool_total(c) - pool_use_total(c, c->n));
}

int64_t gq_quota_reclaimable(const struct gq_qcohort *c, size_t team)
{
  wide others = 0, need;
  struct view v;
  size_t i;

  if (!valid_team(c, team) || !c->has_cohort)
    return 0;
  for (i = 0; i < c->n; i++)
    if (i != team)
      others += gq_quota_borrowed(&c->teams[i]);
  v = view_of(&c->teams[team], 1);
  need = (wide)v.nominal - v.used;
  return clamp64(others < need ? others : need);
}

double gq_quota_share(const struct gq_qteam *t, int64_t pool_total)
{
  double borrowed;

  if (!t)
    return 0.0;
  borrowed = (double)gq_quota_borrowed(t);
  if (t->hist_gpus > (double)t->nominal)
    borrowed += t->hist_gpus - (double)t->nominal;
  if (!(borrowed > 0))
    return 0.0;
  /* !(w > 0) also catches NaN, so the result is never NaN. */
  if (!(t->weight > 0) || pool_total <= 0)
    return INFINITY;
  return borrowed / (double)pool_total / t->weight;
}

/* Sort key of one team in gq_quota_order(). */
struct order_key {
  int group; /* 0: head fits within nominal; 1: everyone else */
  int rank;
  double share;
  const char *name;
  size_t index;
};

static struct order_key order_key(const struct gq_qcohort *c,
                                  const int64_t *want, size_t i, int64_t pool)
{
  struct gq_qteam t = c->teams[i];
  struct view v = view_of(&t, c->has_cohort);
  wide after = (wide)v.used + nonneg(want[i]);
  struct order_key k;

  k.group = after <= v.nominal ? 0 : 1;
  k.rank = t.rank;
  k.name = t.name ? t.name : "";
  k.index = i;
  if (k.group == 1)
    t.used = clamp64(after); /* borrowers: the share they would have */
  k.share = gq_quota_share(&t, pool);
  return k;
}

static int key_less(const struct order_key *a, const struct order_key *b)
{
  int cmp;

  if (a->group != b->group)
    return a->group < b->group;
  if (a->rank != b->rank)
    return a->rank < b->rank;
  if (a->share != b->share)
    return a->share < b->share;
  cmp = strcmp(a->name, b->name);
  if (cmp != 0)
    return cmp < 0;
  return a->index < b->index;
}

void gq_quota_order(const struct gq_qcohort *c, const int64_t *want,
                    size_t *order, size_t *n)
{
  int64_t pool;
  size_t i, j, count = 0;

  if (n)
    *n = 0;
  if (!c || !c->teams || !want || !order || !n)
    return;
  pool = gq_quota_pool(c);
  for (i = 0; i < c->n; i++) {
    struct order_key k;

    if (want[i] < 0)
      continue;
    k = order_key(c, want, i, pool);
    for (j = count; j > 0; j--) {
      struct order_key prev = order_key(c, want, order[j - 1], pool);

      if (!key_less(&k, &prev))
        break;
      order[j] = order[j - 1];
    }
    order[j] = i;
    count++;
  }
  *n = count;
}
