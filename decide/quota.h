/* decide/quota.h - team GPU quota arithmetic inside a cohort, one flavor and
 * resource at a time. All numbers are GPUs.
 *
 * The model is Kueue's (DESIGN §2 and §4; kueue pkg/cache/scheduler
 * resource_node.go and fair_sharing.go), for a flat cohort:
 *
 *   lendable(t)   = min(lend_limit, nominal) if lend_limit >= 0, else
 *                   nominal; 0 when there is no cohort
 *   guaranteed(t) = nominal - lendable(t)      never lent to anyone
 *   pool          = sum of lendable(t)         the cohort's shared GPUs
 *   borrowed(t)   = max(0, used - nominal)
 *
 * A team may use its whole nominal and, in a cohort, borrow beyond it up to
 * borrow_limit (any amount when borrow_limit < 0). Whatever a team uses
 * beyond its guaranteed part comes out of the pool, so quota holds while
 *
 *   sum over teams of max(0, used - guaranteed) <= pool.
 *
 * An admin may lower nominal below use (DESIGN §4): running jobs keep
 * running, everything above nominal counts as borrowed (so lenders can
 * reclaim it and it uses up the borrowing limit), and no number here is ever
 * negative or wrapped. Sums are taken in 128 bits and results clamped to
 * [0, INT64_MAX], so verdicts are exact even at the int64 extremes.
 * Out-of-range inputs are read defensively: a negative nominal or used
 * counts as 0, any negative borrow_limit or lend_limit as "no limit".
 *
 * Pure: no I/O, no clock, no allocation, no global state; libc only (plus
 * the compiler's __int128, GCC and Clang on 64-bit targets). Every
 * pointer argument is borrowed for the call; nothing is kept. Safe to call
 * from any thread on distinct data. queue/ (the Redis ledger) uses its
 * struct gq_ledger_use.
 */
#ifndef GQ_DECIDE_QUOTA_H
#define GQ_DECIDE_QUOTA_H
#include <stddef.h>
#include <stdint.h>

struct gq_qteam {
  const char *name;     /* TeamQuota name, for ties and messages; NULL = "" */
  int64_t nominal;      /* GPUs guaranteed to the team */
  int64_t borrow_limit; /* GPUs allowed above nominal; -1 = no limit */
  int64_t lend_limit;   /* GPUs of nominal others may use; -1 = all */
  int64_t used;         /* GPUs admitted (and assumed) */
  double weight;        /* fair-share weight > 0 */
  int64_t pending;      /* GPUs of queued jobs; status only, unused here */
  /* the mean GPUs it used over the recent past (decayed usage history,
   * gq_fair_mean_gpus() of decide/las.h); 0 = no history kept. What of it
   * is above nominal counts as borrowed in gq_quota_share() */
  double hist_gpus;
  int rank;             /* its head's rank within its group of
                           gq_quota_order(), lower first: the head's
                           attained-service level (0 without) */
};

struct gq_qcohort {
  struct gq_qteam *teams; /* n teams, borrowed */
  size_t n;
  int has_cohort; /* 0: every team stands alone (no borrowing, no lending) */
};

enum gq_qverdict {
  GQ_Q_FITS_NOMINAL,   /* fits within the team's nominal quota */
  GQ_Q_FITS_BORROWING, /* fits by borrowing idle cohort GPUs */
  /* nominal exhausted and the team may not borrow (no cohort or
   * borrow_limit 0) */
  GQ_Q_OVER_NOMINAL_NO_BORROW,
  GQ_Q_OVER_BORROW_LIMIT, /* would take the team above nominal + limit */
  /* quota allows it but the pool is in use: lenders would have to reclaim
   * (or, for a borrower, wait until GPUs of the pool are idle again) */
  GQ_Q_COHORT_EXHAUSTED,
  GQ_Q_ZERO_QUOTA,  /* nominal 0 and no borrowing: never fits */
  GQ_Q_UNKNOWN_TEAM /* no such team (index out of range, or c NULL) */
};

/* A buffer of this many bytes holds any gq_qverdict_message() for a team
 * name of up to 253 characters (a Kubernetes object name). */
#define GQ_QVERDICT_MESSAGE_LEN 640

/* Returns the GPUs of teams[team]'s nominal that may be lent to the cohort:
 * min(lend_limit, nominal), or nominal when lend_limit < 0; 0 without a
 * cohort or for a team index out of range. Source: DESIGN §2 lendingLimit,
 * Kueue's lendingLimit (guaranteed = nominal - lendingLimit). */
int64_t gq_quota_lendable(const struct gq_qcohort *c, size_t team);

/* Returns the cohort's pool: the sum of every team's lendable GPUs
 * (clamped to INT64_MAX); 0 without a cohort or when c is NULL. This is the
 * 'pool_total' gq_quota_share() expects. Source: Kueue's cohort
 * SubtreeQuota (calculateLendable). */
int64_t gq_quota_pool(const struct gq_qcohort *c);

/* Decides whether 'gpus' more GPUs fit teams[team]'s quota:
 *   1. team out of range (or c NULL)               GQ_Q_UNKNOWN_TEAM
 *   2. gpus <= 0 (takes no quota)                  GQ_Q_FITS_NOMINAL
 *   3. nominal 0, no cohort or borrow_limit 0      GQ_Q_ZERO_QUOTA
 *   4. used + gpus <= nominal                      GQ_Q_FITS_NOMINAL
 *   5. above nominal, no cohort or limit 0         GQ_Q_OVER_NOMINAL_NO_BORROW
 *   6. used + gpus - nominal > borrow_limit        GQ_Q_OVER_BORROW_LIMIT
 *   then, for 4 and above 6, the cohort check: if the team's use beyond its
 *   guaranteed part is > 0 and, added to everyone else's, would exceed the
 *   pool, the answer is GQ_Q_COHORT_EXHAUSTED; otherwise GQ_Q_FITS_NOMINAL
 *   (case 4) or GQ_Q_FITS_BORROWING. A use within the guaranteed part always
 *   passes, even when a lowered quota left the pool overcommitted (nominal
 *   is a guarantee; Kueue's available() would charge the overcommit to it).
 * A team over nominal because its quota was lowered is judged by the same
 * numbers: its excess already counts as borrowed (DESIGN §4).
 * If borrowed_after is not NULL it receives max(0, used + gpus - nominal),
 * the team's borrowed GPUs were the job admitted, whatever the verdict (0 for
 * GQ_Q_UNKNOWN_TEAM). Source: DESIGN §2/§4 and invariant 2; Kueue's
 * resource_node.go available() for the cohort check. */
enum gq_qverdict gq_quota_check(const struct gq_qcohort *c, size_t team,
                                int64_t gpus, int64_t *borrowed_after);

/* Returns the machine reason (CamelCase, for GpuJob status.reason and
 * events) of a verdict: "FitsNominalQuota", "FitsBorrowingQuota",
 * "WaitingForQuota", "BorrowingLimitReached", "WaitingForReclaim",
 * "QuotaZeroNoBorrowing", "UnknownTeam"; "Unknown" for a value outside the
 * enum. Never NULL; static string. */
const char *gq_qverdict_reason(enum gq_qverdict v);

/* Writes a human sentence for status.message about verdict v for a job of
 * 'gpus' GPUs of 'team' (borrowed; only name is read for
 * GQ_Q_UNKNOWN_TEAM, where team may also be NULL), naming the team and its
 * numbers, e.g. "team 'research' uses 14 of its 16 nominal GPUs and may not
 * borrow (it has no cohort); the job needs 4". For other verdicts a NULL
 * team gives a generic sentence, as does a value outside the enum. Returns the
 * length written (excluding the NUL), or GQ_EINVAL (buf NULL or len 0), or
 * GQ_ETOOBIG: buf then holds the sentence truncated to len - 1 bytes.
 * GQ_QVERDICT_MESSAGE_LEN bytes suffice. */
int gq_qverdict_message(enum gq_qverdict v, const struct gq_qteam *team,
                        int64_t gpus, char *buf, size_t len);

/* Returns the GPUs t uses above its nominal, max(0, used - nominal): what it
 * borrows, or its excess after the quota was lowered (DESIGN §4). 0 for
 * NULL. */
int64_t gq_quota_borrowed(const struct gq_qteam *t);

/* Returns how many of teams[team]'s idle lendable GPUs other teams are using,
 * for TeamQuota status. Rule: the cohort's borrowed total B (sum of
 * gq_quota_borrowed(), capped at the idle lendable total I) is attributed to
 * the lenders in proportion to their idle lendable GPUs, where a team's idle
 * lendable part is lendable - min(lendable, max(0, used - guaranteed)).
 * Rounding is cumulative in array order: team k gets
 *   floor(B * C(k) / I) - floor(B * C(k-1) / I),  C(k) = idle of teams 0..k,
 * so every team is within one GPU of its exact share and the lent numbers
 * sum to exactly min(B, I) (approximately once I exceeds INT64_MAX, never
 * below 0). A borrower lends nothing; 0 without a cohort or
 * for an index out of range. Source: gpuq's own rule (Kueue reports only
 * borrowing, not lending per ClusterQueue). */
int64_t gq_quota_lent(const struct gq_qcohort *c, size_t team);

/* Returns the pool's idle GPUs: pool - sum over teams of
 * max(0, used - guaranteed), never negative; 0 without a cohort. Source:
 * the capacity check above (Kueue's cohort available()). */
int64_t gq_quota_idle(const struct gq_qcohort *c);

/* Returns the GPUs teams[team] could get back by preemption across the
 * cohort: the sum of what OTHER teams use above their own nominal (only those
 * jobs may be preempted for another team, DESIGN §4), capped at what this
 * team lacks to reach its nominal, max(0, nominal - used). 0 without a
 * cohort or for an index out of range. */
int64_t gq_quota_reclaimable(const struct gq_qcohort *c, size_t team);

/* Returns t's weighted dominant share (DESIGN §4; Kueue fair sharing,
 * itself DRF, Ghodsi et al., NSDI 2011). With one resource the dominant
 * share is
 *   share = borrowed(t) / pool_total / weight
 * where pool_total is the cohort's lendable total (gq_quota_pool()).
 * Kueue computes the same ratio in integer thousandths
 * (borrowed * 1000 / lendable * 1000 / weight_milli). Edge cases: 0 when t
 * borrows nothing (or t is NULL); +INFINITY when it borrows but weight is not
 * > 0 (Kueue: weight 0 sorts last) or pool_total <= 0 (only possible after a
 * quota was lowered below use). Never NaN. */
double gq_quota_share(const struct gq_qteam *t, int64_t pool_total);

/* Orders the teams that have a head job for one admission pass.
 * want[i] is the GPUs of team i's head job, -1 (any negative) for none;
 * want has c->n entries. order (room for c->n entries) receives the indices
 * of the teams with a head job and *n their count:
 *   1. teams whose head fits within their nominal (used + want <= nominal),
 *      by lowest rank (gq_qteam.rank), then lowest current share;
 *   2. then every other team (borrowers, and heads that cannot fit at all:
 *      gq_quota_check() decides those), by lowest rank, then lowest share
 *      they would have after admitting their head (used + want);
 *   ties by name (strcmp, NULL as ""), then by index: fully deterministic.
 * Whether a head actually fits is gq_quota_check()'s job, not this one's.
 * Insertion sort: O(n^2) share computations, fine for the teams of one
 * cohort. *n is 0 if c, want or order is NULL. Source: DESIGN §4; Kueue's
 * scheduler entry ordering (non-borrowing first, then fair-sharing DRS
 * computed with the workload's request). */
void gq_quota_order(const struct gq_qcohort *c, const int64_t *want,
                    size_t *order, size_t *n);

/* One team's use of one flavor, as the cohort's ledger holds it
 * (gq_queue_ledger() reads it; the controller's flavor assignment takes
 * it). flavor is the ledger's flavor key (see decide/assign.h). */
struct gq_ledger_use {
  size_t team;        /* index into the teams asked for */
  const char *flavor; /* borrowed (valid during a ledger callback) */
  long long gpus;
};

#endif
