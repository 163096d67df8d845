/* Preemption decisions (decide/preempt.h): victim order (lowest
 * priority, then least work at risk), only as many victims as the
 * preemptor needs with each replica on one node, preemptible: false,
 * withinTeam and reclaimFromCohort, reclaim only from teams above their
 * nominal quota and only by a lender within its own; and the estimate of
 * work at risk. Table-driven; inline JSON in single quotes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api/gpujob.h"
#include "api/node.h"
#include "api/teamquota.h"
#include "base/err.h"
#include "decide/assign.h"
#include "decide/place.h"
#include "decide/preempt.h"
#include "tests/support/fixture.h"

#define MAX_RUN 6

struct run { /* a job running on one node, one pod */
  int team, prio, gpus, risk, node;
  int fixed;   /* 1: preemptible false */
  int foreign; /* 1: not a gpuq job (committed, never a candidate) */
};

struct row {
  const char *name;
  const char *qa, *qb; /* spec members of TeamQuotas a and b */
  int prio, replicas, gpus; /* the preemptor, of team a */
  struct run run[MAX_RUN];
  size_t n_run;
  int want;           /* victims, or GQ_ENOTFOUND */
  int want_v[MAX_RUN]; /* their run indexes, in the order chosen */
};

#define ALONE(n) "'resources':[{'flavor':'*','nominal':" #n "}]"
#define COHORT(n) "'cohort':'c','resources':[{'flavor':'*','nominal':" #n "}]"

static const struct row rows[] = {
    {"lowest priority first", ALONE(16), ALONE(0), 10, 1, 8,
     {{0, 5, 8, 0, 0, 0, 0}, {0, 1, 8, 900, 1, 0, 0}}, 2, 1, {1}},
    {"then the least work at risk", ALONE(16), ALONE(0), 10, 1, 8,
     {{0, 1, 8, 500, 0, 0, 0}, {0, 1, 8, 100, 1, 0, 0}}, 2, 1, {1}},
    /* 4+4 free on two nodes does not hold one 8-GPU replica: the third
     * victim frees n0, and the second (on n1) is then spared */
    {"only as many as needed, each replica on one node", ALONE(16),
     ALONE(0), 10, 1, 8,
     {{0, 1, 4, 10, 0, 0, 0}, {0, 1, 4, 20, 1, 0, 0}, {0, 1, 4, 30, 0, 0, 0},
      {0, 5, 4, 0, 1, 0, 0}},
     4, 2, {0, 2}},
    {"a gang of two replicas", ALONE(16), ALONE(0), 10, 2, 8,
     {{0, 1, 8, 10, 0, 0, 0}, {0, 2, 8, 0, 1, 0, 0}}, 2, 2, {0, 1}},
    /* the team's quota (12) is what is short: the victim on n1 must go
     * although the job goes to n0, so sparing it all at once fails */
    {"quota needs a victim off the chosen nodes", ALONE(12), ALONE(0), 10,
     1, 4,
     {{0, 1, 4, 0, 1, 0, 0}, {0, 5, 4, 0, 1, 0, 0}, {0, 5, 4, 0, 0, 0, 0}},
     3, 1, {0}},
    {"preemptible false is never a victim", ALONE(16), ALONE(0), 10, 1, 8,
     {{0, 1, 8, 0, 0, 1, 0}, {0, 3, 8, 50, 1, 0, 0}}, 2, 1, {1}},
    {"equal priority is never a victim", ALONE(16), ALONE(0), 10, 1, 8,
     {{0, 10, 8, 0, 0, 0, 0}, {0, 10, 8, 0, 1, 0, 0}}, 2, GQ_ENOTFOUND, {0}},
    {"withinTeam Never", "'preemption':{'withinTeam':'Never'}," ALONE(16),
     ALONE(0), 10, 1, 8,
     {{0, 1, 8, 0, 0, 0, 0}, {0, 1, 8, 0, 1, 0, 0}}, 2, GQ_ENOTFOUND, {0}},
    {"fits already: no victim", ALONE(16), ALONE(0), 10, 1, 8,
     {{0, 1, 8, 0, 0, 0, 0}}, 1, 0, {0}},
    /* b borrows a's 8: a (within nominal) takes them back from the job
     * with the least work at risk, whatever its priority (Any) */
    {"reclaim borrowed GPUs", COHORT(8), COHORT(8), 0, 1, 8,
     {{1, 5, 8, 100, 0, 0, 0}, {1, 5, 8, 50, 1, 0, 0}}, 2, 1, {1}},
    {"a team at its nominal keeps its jobs", COHORT(8), COHORT(8), 0, 1, 8,
     {{1, 5, 8, 100, 0, 0, 0}, {0, 0, 8, 0, 1, 0, 1}}, 2, GQ_ENOTFOUND, {0}},
    {"reclaimFromCohort LowerPriority spares higher priority",
     "'preemption':{'reclaimFromCohort':'LowerPriority'}," COHORT(8),
     COHORT(8), 0, 1, 8,
     {{1, 5, 8, 0, 0, 0, 0}, {1, 5, 8, 0, 1, 0, 0}}, 2, GQ_ENOTFOUND, {0}},
    {"reclaimFromCohort LowerPriority takes lower priority",
     "'preemption':{'reclaimFromCohort':'LowerPriority'}," COHORT(8),
     COHORT(8), 9, 1, 8,
     {{1, 5, 8, 0, 0, 0, 0}, {1, 5, 8, 0, 1, 0, 0}}, 2, 1, {0}},
    {"reclaimFromCohort Never",
     "'preemption':{'reclaimFromCohort':'Never'}," COHORT(8), COHORT(8), 9,
     1, 8, {{1, 5, 8, 0, 0, 0, 0}, {1, 5, 8, 0, 1, 0, 0}}, 2, GQ_ENOTFOUND,
     {0}},
    /* a would borrow 4 for its 8: a borrower never preempts another team */
    {"a borrower does not reclaim", COHORT(4), COHORT(4), 9, 1, 8,
     {{1, 5, 8, 0, 0, 0, 0}, {1, 5, 4, 0, 1, 0, 0}}, 2, GQ_ENOTFOUND, {0}},
    /* an admin lowered b's quota to 4 while it runs 8: the excess is
     * reclaimable by a lender */
    {"reclaim the excess after a quota was lowered", COHORT(12), COHORT(4),
     0, 1, 8,
     {{1, 5, 8, 0, 0, 0, 0}, {0, 5, 4, 0, 1, 0, 0}, {0, 0, 4, 0, 1, 0, 1}},
     3, 1, {0}},
};

static void node(struct gq_node *n, const char *name)
{
  char buf[1024];

  snprintf(buf, sizeof(buf),
           "{'metadata':{'name':'%s','labels':{'nvidia.com/gpu.product':"
           "'NVIDIA-H100-80GB-HBM3'}},'spec':{},'status':{'allocatable':{"
           "'cpu':'64','memory':'512Gi','pods':'110','nvidia.com/gpu':'8'},"
           "'conditions':[{'type':'Ready','status':'True'}]}}", name);
  gq_test_node_sq(n, buf);
}

static void team(struct gq_teamquota *t, const char *name, const char *spec)
{
  char buf[1024];

  snprintf(buf, sizeof(buf), "{'apiVersion':'gpuq.dev/v1alpha1','kind':"
           "'TeamQuota','metadata':{'name':'%s'},'spec':{'namespaces':"
           "['%s'],%s}}", name, name, spec);
  gq_test_teamquota_sq(t, buf);
}

static void job(struct gq_gpujob *j, int replicas, int gpus)
{
  char buf[1024];

  snprintf(buf, sizeof(buf), "{'apiVersion':'gpuq.dev/v1alpha1','kind':"
           "'GpuJob','metadata':{'name':'p','namespace':'a','uid':'u-p'},"
           "'spec':{'team':'a','replicas':%d,'gpusPerReplica':%d,'template':"
           "{'spec':{'containers':[{'name':'c','image':'x'}]}}}}", replicas,
           gpus);
  gq_test_gpujob_sq(j, buf);
}

/* Attained-service demotion (decide/las.h): the same search with levels. */
struct las_row {
  struct row r;
  int las, level;       /* ask->las and the preemptor's level */
  int lv[MAX_RUN];      /* each run's level */
  int dm[MAX_RUN];      /* each run demotable */
};

static const struct las_row las_rows[] = {
    {{"a higher level of the same priority is demoted", ALONE(16), ALONE(0),
      5, 1, 8, {{0, 5, 8, 0, 0, 0, 0}, {0, 5, 8, 0, 1, 0, 0}}, 2, 1, {1}},
     1, 0, {0, 1}, {1, 1}},
    {{"the same level is not", ALONE(16), ALONE(0), 5, 1, 8,
      {{0, 5, 8, 0, 0, 0, 0}, {0, 5, 8, 0, 1, 0, 0}}, 2, GQ_ENOTFOUND, {0}},
     1, 1, {1, 1}, {1, 1}},
    {{"not demotable (no checkpoint, minRunSeconds) is not", ALONE(16),
      ALONE(0), 5, 1, 8,
      {{0, 5, 8, 0, 0, 0, 0}, {0, 5, 8, 0, 1, 0, 0}}, 2, GQ_ENOTFOUND, {0}},
     1, 0, {1, 1}, {0, 0}},
    {{"without attained-service no demotion", ALONE(16), ALONE(0), 5, 1, 8,
      {{0, 5, 8, 0, 0, 0, 0}, {0, 5, 8, 0, 1, 0, 0}}, 2, GQ_ENOTFOUND, {0}},
     0, 0, {1, 1}, {1, 1}},
    {{"lower priority before a higher level", ALONE(16), ALONE(0), 5, 1, 8,
      {{0, 5, 8, 0, 0, 0, 0}, {0, 1, 8, 900, 1, 0, 0}}, 2, 1, {1}},
     1, 0, {2, 0}, {1, 1}},
    {{"the highest level first", ALONE(16), ALONE(0), 5, 1, 8,
      {{0, 5, 8, 0, 0, 0, 0}, {0, 5, 8, 900, 1, 0, 0}}, 2, 1, {1}},
     1, 0, {1, 2}, {1, 1}},
    {{"withinTeam Never: no demotion either",
      "'preemption':{'withinTeam':'Never'}," ALONE(16), ALONE(0), 5, 1, 8,
      {{0, 5, 8, 0, 0, 0, 0}, {0, 5, 8, 0, 1, 0, 0}}, 2, GQ_ENOTFOUND, {0}},
     1, 0, {1, 1}, {1, 1}},
    {{"a larger job is not demoted for a smaller one", ALONE(16), ALONE(0),
      5, 1, 4, {{0, 5, 8, 0, 0, 0, 0}, {0, 5, 8, 0, 1, 0, 0}}, 2,
      GQ_ENOTFOUND, {0}},
     1, 0, {1, 1}, {1, 1}},
    {{"a smaller one is", ALONE(16), ALONE(0), 5, 1, 8,
      {{0, 5, 4, 0, 0, 0, 0}, {0, 5, 4, 0, 0, 0, 0}, {0, 5, 8, 0, 1, 0, 1}},
      3, 2, {0, 1}},
     1, 0, {1, 1, 0}, {1, 1, 0}},
    /* b borrows: a's demotion rule is within its team only */
    {{"another team's higher level is not demoted", COHORT(8), COHORT(8), 5,
      1, 8, {{1, 5, 8, 0, 0, 0, 0}, {0, 5, 8, 0, 1, 0, 1}}, 2, GQ_ENOTFOUND,
      {0}},
     1, 0, {1, 1}, {1, 1}},
};

static void check_row(const struct row *r, const struct las_row *l)
{
  static const char *const names[] = {"n0", "n1"};
  struct gq_node nodes[2];
  const struct gq_node *np[2] = {&nodes[0], &nodes[1]};
  struct gq_teamquota qa, qb;
  const struct gq_teamquota *teams[2] = {&qa, &qb};
  struct gq_gpujob p, runj[MAX_RUN];
  struct gq_podsched req[MAX_RUN];
  const struct gq_podsched *reqp[MAX_RUN];
  struct gq_preempt_cand cand[MAX_RUN];
  struct gq_ledger_use use[2] = {{0, "*", 0}, {1, "*", 0}};
  struct gq_snapshot s;
  struct gq_assignment a;
  size_t victims[MAX_RUN], out[4], n = 0, map[MAX_RUN];
  struct gq_preempt_ask ask;
  int64_t free0, free1;
  int rc;

  node(&nodes[0], "n0");
  node(&nodes[1], "n1");
  gq_snapshot_init(&s, np, 2, NULL);
  team(&qa, "a", r->qa);
  team(&qb, "b", r->qb);
  job(&p, r->replicas, r->gpus);
  for (size_t i = 0; i < r->n_run; i++) {
    const struct run *x = &r->run[i];

    job(&runj[i], 1, x->gpus);
    gq_place_replica_request(&runj[i], &req[i]);
    reqp[i] = &req[i];
    assert_int_equal(gq_snapshot_commit(&s, names[x->node], &req[i], 1), 0);
    if (x->foreign)
      continue;
    use[x->team].gpus += x->gpus;
    map[n] = i;
    cand[n++] = (struct gq_preempt_cand){(size_t)x->team, x->prio, x->gpus,
                                         "*", x->risk, !x->fixed,
                                         l ? l->lv[i] : 0, l ? l->dm[i] : 0,
                                         1, &names[x->node], &reqp[i]};
  }
  ask = (struct gq_preempt_ask){&s,   &p, r->prio, teams, 2, 0, use, 2,
                                l && l->las, l ? l->level : 0, 0};
  free0 = gq_snapshot_available(&s, 0, "nvidia.com/gpu");
  free1 = gq_snapshot_available(&s, 1, "nvidia.com/gpu");
  rc = gq_preempt_select(&ask, cand, n, victims, &a, out);
  /* the snapshot is left as it was, whatever the answer */
  assert_int_equal(gq_snapshot_available(&s, 0, "nvidia.com/gpu"), free0);
  assert_int_equal(gq_snapshot_available(&s, 1, "nvidia.com/gpu"), free1);
  if (rc != r->want)
    fail_msg("%s: %d victims, want %d", r->name, rc, r->want);
  /* the cheap pre-check never rules out a victim the search takes */
  for (int v = 0; v < rc; v++)
    if (cand[victims[v]].team != 0 && !gq_preempt_may_reclaim(&ask))
      fail_msg("%s: a victim of team b, but gq_preempt_may_reclaim says no",
               r->name);
  for (int v = 0; v < rc; v++)
    if ((int)map[victims[v]] != r->want_v[v])
      fail_msg("%s: victim %d is run %zu, want %d", r->name, v,
               map[victims[v]], r->want_v[v]);
  if (rc >= 0) { /* it would fit there once the victims are gone */
    for (int v = 0; v < rc; v++)
      gq_snapshot_commit(&s, cand[victims[v]].nodes[0], cand[victims[v]].reqs[0],
                         -1);
    for (int k = 0; k < r->replicas; k++) {
      struct gq_podsched pr;

      gq_place_replica_request(&p, &pr);
      assert_int_equal(gq_snapshot_commit(&s, s.nodes[out[k]].node->meta.name,
                                          &pr, 1), 0);
      assert_true(gq_snapshot_available(&s, out[k], "nvidia.com/gpu") >= 0);
      gq_place_replica_release(&pr);
    }
  }
  for (size_t i = 0; i < r->n_run; i++) {
    gq_place_replica_release(&req[i]);
    gq_gpujob_release(&runj[i]);
  }
  gq_gpujob_release(&p);
  gq_teamquota_release(&qa);
  gq_teamquota_release(&qb);
  gq_snapshot_release(&s);
  gq_node_release(&nodes[0]);
  gq_node_release(&nodes[1]);
}

static void test_select(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
    check_row(&rows[i], NULL);
}

static void test_demotion(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(las_rows) / sizeof(las_rows[0]); i++)
    check_row(&las_rows[i].r, &las_rows[i]);
}

/* gq_preempt_may_reclaim: another team above its nominal of a flavor
 * key, and a reclaimFromCohort other than Never. */
static void test_may_reclaim(void **state)
{
  static const struct {
    const char *qa;
    int64_t use_b;
    int want;
  } cases[] = {
      {COHORT(8), 12, 1},
      {COHORT(8), 8, 0}, /* b at its nominal keeps what it has */
      {COHORT(8), 0, 0},
      {"'cohort':'c','preemption':{'reclaimFromCohort':'Never'},"
       "'resources':[{'flavor':'*','nominal':8}]", 12, 0},
  };

  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct gq_teamquota qa, qb;
    const struct gq_teamquota *teams[2] = {&qa, &qb};
    struct gq_ledger_use use[2] = {{0, "*", 20}, {1, "*", cases[i].use_b}};
    struct gq_preempt_ask ask = {NULL, NULL, 0,   teams, 2,
                                 0,    use,  2, 0, 0,     0};

    team(&qa, "a", cases[i].qa);
    team(&qb, "b", COHORT(8));
    if (gq_preempt_may_reclaim(&ask) != cases[i].want)
      fail_msg("case %zu: want %d", i, cases[i].want);
    gq_teamquota_release(&qa);
    gq_teamquota_release(&qb);
  }
}

static void test_at_risk(void **state)
{
  static const struct {
    int64_t now, start, ckpt, interval, gpus, want;
  } t[] = {
      {100000, 0, 0, -1, 8, 0},              /* not started */
      {100000, 40000, 0, -1, 8, 480},        /* 60 s since the start */
      {100000, 40000, 70000, -1, 8, 240},    /* 30 s since lastCheckpoint */
      {100000, 40000, 10000, -1, 2, 120},    /* an older attempt's: start */
      {100000, 40000, 0, 25, 4, 40},         /* periodic at 90 s: 10 s */
      {100000, 40000, 95000, 25, 4, 20},     /* lastCheckpoint later: 5 s */
      {30000, 40000, 0, -1, 8, 0},           /* clock before start */
  };

  (void)state;
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
    assert_int_equal(gq_preempt_at_risk(t[i].now, t[i].start, t[i].ckpt,
                                        t[i].interval, t[i].gpus),
                     t[i].want);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_select),
      cmocka_unit_test(test_demotion),
      cmocka_unit_test(test_may_reclaim),
      cmocka_unit_test(test_at_risk),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
