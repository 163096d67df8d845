/* The admission pass as a pure function (decide/pass.h), table-driven:
 * each case is a small cluster (nodes of 8 H100 GPUs), teams with their
 * TeamQuotas, running jobs (their pods committed, their use in the
 * ledger, their expected ends, whether they may be preempted) and queued
 * jobs in queue order; the want is the plan, one line per step in the
 * order the caller applies them:
 *   admit <job> <nodes> <ledger key> <reason>
 *   <job> <reason>[ eta=+<s>s | eta=-1][ event=<reason>]   (a status)
 *   search <job> / reserve <job> <nodes> / unreserve <job>
 *   victim <job> for <preemptor> <cause>
 * Every case runs twice, once with all input given at once and once with
 * the input given only when the pass asks (one queued job at a time,
 * releases and candidates on request): both must give the same plan, the
 * pass must ask for releases and candidates only when the case needs them,
 * and the snapshot must be as it was after gq_pass_end().
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
#include "base/alloc.h"
#include "base/err.h"
#include "decide/place.h"
#include "decide/pass.h"
#include "tests/support/fixture.h"

#define MAXN 4 /* nodes */
#define MAXT 3 /* teams */
#define MAXQ 6 /* queued jobs */
#define MAXR 4 /* running jobs */
#define NOW_MS 1800000000000LL
#define MONO_MS 5000000LL

struct qjob {             /* a queued job, in its team's queue order */
  int team, replicas, gpr, prio;
  const char *spec;       /* more spec members, or NULL */
  int resv_node;          /* a preemptor: the node reserved for it, +1 */
  int victims_left;
  int searched_s;         /* its last victim search, seconds ago (0 none) */
};

struct rjob {             /* a running job: one pod */
  int team;               /* -1: not gpuq's (its pod only) */
  int prio, gpus, node;
  int end_s;              /* expected end from now, -1 unknown */
  int cand;               /* 1: may be preempted (admitted, not draining) */
};

struct djob {             /* a job in Preempting */
  int team, prio, replicas, gpr;
};

struct tcase {
  const char *name;
  int nodes;
  const char *quota[MAXT]; /* TeamQuota spec members of teams a, b, c */
  int cohort;              /* 1: the teams form one cohort */
  struct qjob q[MAXQ];
  size_t n_q;
  struct rjob run[MAXR];
  size_t n_run;
  struct djob drain;
  int n_drain;
  int fifo, admits_max;    /* admits_max 0: gpuq's */
  const char *want;        /* the plan */
  int asks;                /* GQ_PASS_NEED_RELEASES | _CANDS it asks for */
  int want_again;
  const char *msg_of, *want_msg; /* a job's last message starts so */
  const char *want_why;    /* the first victim's sentence */
};

#define ALONE(n) "'resources':[{'flavor':'*','nominal':" #n "}]"
#define COHORT(n) "'cohort':'c','resources':[{'flavor':'*','nominal':" #n "}]"
#define H100 "NVIDIA-H100-80GB-HBM3"
#define REL GQ_PASS_NEED_RELEASES
#define CANDS GQ_PASS_NEED_CANDS

static const struct tcase cases[] = {
    {"quota: jobs within nominal are all admitted in one pass", 2,
     {ALONE(16)}, 0, {{0, 1, 8, 0, NULL, 0, 0, 0}, {0, 1, 8, 0, NULL, 0, 0, 0}}, 2,
     {{0}}, 0, {0}, 0, 0, 0,
     "admit q0 n0 * Admitted\n"
     "admit q1 n1 * Admitted\n", 0, 0, "q1", "admitted on n1 (flavor *)",
     NULL},
    {"quota: a head refused by quota stops its team", 2, {ALONE(8)}, 0,
     {{0, 1, 4, 0, NULL, 0, 0, 0}, {0, 1, 2, 0, NULL, 0, 0, 0}}, 2,
     {{0, 0, 6, 0, -1, 1}}, 1, {0}, 0, 0, 0,
     "q0 WaitingForQuota eta=-1\n", 0, 0, NULL, NULL, NULL},
    {"quota: ExceedsQuota does not block the jobs behind", 2, {ALONE(8)}, 0,
     {{0, 2, 8, 0, NULL, 0, 0, 0}, {0, 1, 4, 0, NULL, 0, 0, 0}}, 2, {{0}}, 0, {0},
     0, 0, 0,
     "q0 ExceedsQuota eta=-1\n"
     "admit q1 n0 * Admitted\n", 0, 0, "q0",
     "the job needs 16 GPUs, more than team 'a' may ever hold of any flavor "
     "it accepts (nominal + borrowingLimit): ", NULL},
    {"quota: no line for the job's products", 1,
     {"'resources':[{'flavor':'NVIDIA-A100-SXM4-80GB','nominal':8}]"}, 0,
     {{0, 1, 8, 0, "'gpu':{'products':['" H100 "']},", 0, 0, 0}}, 1, {{0}}, 0,
     {0}, 0, 0, 0, "q0 NoMatchingQuota eta=-1\n", 0, 0, "q0",
     "team 'a' has no quota line for this job: ", NULL},
    {"borrowing: idle cohort GPUs", 2, {COHORT(8), COHORT(8)}, 1,
     {{0, 1, 8, 0, NULL, 0, 0, 0}, {0, 1, 8, 0, NULL, 0, 0, 0}}, 2, {{0}}, 0, {0},
     0, 0, 0,
     "admit q0 n0 * Admitted\n"
     "admit q1 n1 * AdmittedBorrowing\n", 0, 0, "q1",
     "admitted on n1 (flavor *, borrowing)", NULL},
    {"borrowing: borrowingLimit", 3,
     {"'cohort':'c','resources':[{'flavor':'*','nominal':8,"
      "'borrowingLimit':4}]", COHORT(8)}, 1,
     {{0, 1, 8, 0, NULL, 0, 0, 0}, {0, 1, 8, 0, NULL, 0, 0, 0},
      {0, 1, 4, 0, NULL, 0, 0, 0}}, 3, {{0}}, 0, {0}, 0, 0, 0,
     "admit q0 n0 * Admitted\n"
     "q1 BorrowingLimitReached eta=-1\n", 0, 0, NULL, NULL, NULL},
    {"lending: lendingLimit caps what others borrow", 3,
     {COHORT(8), "'cohort':'c','resources':[{'flavor':'*','nominal':8,"
                 "'lendingLimit':2}]"}, 1,
     {{0, 1, 8, 0, NULL, 0, 0, 0}, {0, 1, 4, 0, NULL, 0, 0, 0},
      {0, 1, 2, 0, NULL, 0, 0, 0}}, 3, {{0}}, 0, {0}, 0, 0, 0,
     "admit q0 n0 * Admitted\n"
     "q1 WaitingForReclaim eta=-1\n", 0, 0, NULL, NULL, NULL},
    /* a borrows 2, b none: b's head goes first and takes the last free
     * node; a's would need b's borrowed GPUs, and a borrower never
     * reclaims (the search finds nothing) */
    {"fair share: the team that borrows less goes first", 3,
     {COHORT(8), COHORT(8), COHORT(8)}, 1,
     {{0, 1, 8, 0, NULL, 0, 0, 0}, {1, 1, 8, 0, NULL, 0, 0, 0}}, 2,
     {{0, 0, 8, 0, -1, 1}, {0, 0, 2, 1, -1, 1}, {1, 0, 6, 1, -1, 1}}, 3,
     {0}, 0, 0, 0,
     "admit q1 n2 * AdmittedBorrowing\n"
     "search q0\n"
     "q0 WaitingForReclaim eta=-1\n", CANDS, 0, NULL, NULL, NULL},
    {"gangs: all replicas or none", 2, {ALONE(32)}, 0,
     {{0, 2, 8, 0, NULL, 0, 0, 0}, {0, 2, 4, 0, NULL, 0, 0, 0}}, 2,
     {{0, 0, 4, 0, -1, 1}}, 1, {0}, 0, 0, 0,
     "q0 WaitingForCapacity eta=-1\n"
     "admit q1 n0,n1 * Admitted\n", REL, 0, "q1",
     "admitted on n0,n1 (flavor *)", NULL},
    /* the head waits for n0 (free in 100 s): a 50 s job backfills the 4
     * GPUs free there now, a 500 s one does not */
    {"backfill: a short job goes ahead of the reservation, a long one not",
     2, {ALONE(32)}, 0,
     {{0, 1, 8, 0, NULL, 0, 0, 0},
      {0, 1, 4, 0, "'expectedDurationSeconds':50,", 0, 0, 0},
      {0, 1, 4, 0, "'expectedDurationSeconds':500,", 0, 0, 0}}, 3,
     {{0, 0, 4, 0, 100, 1}, {0, 0, 8, 1, -1, 1}}, 2, {0}, 0, 0, 0,
     "q0 WaitingForCapacity eta=+100s\n"
     "admit q1 n0 * Admitted\n"
     "q2 WaitingForCapacity\n", REL, 0, NULL, NULL, NULL},
    {"preemption: a lower priority job of the same team", 1, {ALONE(16)}, 0,
     {{0, 1, 8, 10, NULL, 0, 0, 0}}, 1, {{0, 1, 8, 0, -1, 1}}, 1, {0}, 0, 0, 0,
     "search q0\n"
     "reserve q0 n0\n"
     "victim r0 for q0 PreemptedByPriority\n"
     "q0 WaitingForPreemption event=Preempting\n", REL | CANDS, 0, "q0",
     "preempting 1 job(s) for its 8 GPUs (ns/r0); their GPUs are reserved "
     "for it while they checkpoint",
     "preempted for job ns/q0 (priority 10 > 1) of the same team, which "
     "needs its GPUs"},
    {"preemption: a lender reclaims borrowed GPUs", 2,
     {COHORT(8), COHORT(8)}, 1, {{0, 1, 8, 0, NULL, 0, 0, 0}}, 1,
     {{1, 5, 8, 0, -1, 1}, {1, 5, 8, 1, -1, 1}}, 2, {0}, 0, 0, 0,
     "search q0\n"
     "reserve q0 n0\n"
     "victim r0 for q0 QuotaReclaim\n"
     "q0 WaitingForPreemption event=Preempting\n", CANDS, 0, NULL, NULL,
     "team 'b' runs it on GPUs above its nominal quota; team 'a' takes them "
     "back for job ns/q0"},
    {"preemption: a fruitless search waits before the next", 1, {ALONE(16)},
     0, {{0, 1, 8, 10, NULL, 0, 0, 1}}, 1, {{0, 1, 8, 0, -1, 1}}, 1, {0}, 0,
     0, 0, "q0 WaitingForCapacity eta=-1\n", REL, 0, NULL, NULL, NULL},
    /* its victim still holds n0: it waits, and the job behind it does not
     * take the GPUs reserved for it */
    {"preemption: a preemptor waits for its victims", 1, {ALONE(16)}, 0,
     {{0, 1, 8, 10, NULL, 1, 1, 0}, {0, 1, 8, 0, NULL, 0, 0, 0}}, 2,
     {{0, 1, 8, 0, -1, 0}}, 1, {0}, 0, 0, 0,
     "q0 WaitingForPreemption\n"
     "q1 WaitingForCapacity\n", 0, 0, "q0",
     "waiting for 1 preempted job(s) to checkpoint and release their GPUs",
     NULL},
    {"preemption: victims gone, the preemptor is admitted where reserved", 1,
     {ALONE(16)}, 0,
     {{0, 1, 8, 10, NULL, 1, 0, 0}, {0, 1, 8, 0, NULL, 0, 0, 0}}, 2, {{0}}, 0,
     {0}, 0, 0, 0,
     "unreserve q0\n"
     "admit q0 n0 * Admitted\n"
     "q1 WaitingForCapacity eta=-1\n", REL, 0, NULL, NULL, NULL},
    /* a's job in Preempting goes before any other job: n1 is reserved for
     * it while its old pod on n0 checkpoints */
    {"preempting: a draining job keeps its capacity", 2,
     {COHORT(8), COHORT(8)}, 1, {{1, 1, 8, 0, NULL, 0, 0, 0}}, 1,
     {{0, 5, 8, 0, -1, 0}}, 1, {0, 5, 1, 8}, 1, 0, 0,
     "q0 WaitingForCapacity eta=-1\n", REL, 0, NULL, NULL, NULL},
    {"fifo: the oldest job blocks everything behind it", 1,
     {COHORT(8), COHORT(8)}, 1,
     {{1, 1, 8, 0, NULL, 0, 0, 0}, {0, 1, 2, 0, NULL, 0, 0, 0}}, 2,
     {{0, 0, 4, 0, -1, 1}}, 1, {0}, 0, 1, 0,
     "q0 WaitingForCapacity eta=-1\n", 0, 0, "q0",
     "first in the FIFO queue: ", NULL},
    {"fifo: queue-time order across teams, no quota, a job no line accepts "
     "passed over", 2,
     {COHORT(4), "'cohort':'c','resources':[{'flavor':"
                 "'NVIDIA-A100-SXM4-80GB','nominal':8}]"}, 1,
     {{1, 1, 8, 0, "'gpu':{'products':['" H100 "']},", 0, 0, 0},
      {0, 1, 8, 0, NULL, 0, 0, 0}, {0, 1, 4, 0, NULL, 0, 0, 0},
      {1, 1, 4, 0, NULL, 0, 0, 0}}, 4, {{0}}, 0, {0}, 0, 1, 0,
     "q0 NoMatchingQuota eta=-1\n"
     "admit q1 n0 * Admitted\n"
     "admit q2 n1 * Admitted\n"
     "q3 WaitingForCapacity eta=-1\n", 0, 0, "q0",
     "team 'b' has no quota line for resource nvidia.com/gpu and this job's "
     "products", NULL},
    {"limits: ADMITS_MAX stops the pass and asks for another", 3,
     {ALONE(24)}, 0,
     {{0, 1, 8, 0, NULL, 0, 0, 0}, {0, 1, 8, 0, NULL, 0, 0, 0},
      {0, 1, 8, 0, NULL, 0, 0, 0}}, 3, {{0}}, 0, {0}, 0, 0, 2,
     "admit q0 n0 * Admitted\n"
     "admit q1 n1 * Admitted\n", 0, 1, NULL, NULL, NULL},
};

/* ---- the world of one case ------------------------------------------- */

static const char *const node_names[MAXN] = {"n0", "n1", "n2", "n3"};
static const char *const team_names[MAXT] = {"a", "b", "c"};

/* An attained-service case (decide/las.h): a case with the levels of its
 * queued and running jobs, decided with GQ_LAS_DEFAULT. */
struct las_case {
  struct tcase tc;
  int qlevel[MAXQ];
  int rlevel[MAXR], rdemotable[MAXR];
  int none_resumable; /* 1: no admitted job of the teams could resume */
};

static const struct las_case las_cases[] = {
    {{"attained-service: a level-0 head demotes its team's level-1 job", 1,
      {ALONE(16)}, 0, {{0, 1, 8, 0, NULL, 0, 0, 0}}, 1,
      {{0, 0, 8, 0, -1, 1}}, 1, {0}, 0, 0, 0,
      "search q0\n"
      "reserve q0 n0\n"
      "victim r0 for q0 Demoted\n"
      "q0 WaitingForPreemption event=Preempting\n", REL | CANDS, 0, NULL, NULL,
      "demoted for job ns/q0 of the same team: it has had more GPU-service "
      "(attained-service level 1 > 0); it resumes from its checkpoint when "
      "GPUs free"},
     {0}, {1}, {1}, 0},
    {{"attained-service: a job not demotable keeps running", 1, {ALONE(16)},
      0, {{0, 1, 8, 0, NULL, 0, 0, 0}}, 1, {{0, 0, 8, 0, -1, 1}}, 1, {0}, 0,
      0, 0,
      "search q0\n"
      "q0 WaitingForCapacity eta=-1\n", REL | CANDS, 0, NULL, NULL, NULL},
     {0}, {1}, {0}, 0},
    {{"attained-service: a head at the top level demotes no one", 1,
      {ALONE(16)}, 0, {{0, 1, 8, 0, NULL, 0, 0, 0}}, 1,
      {{0, 0, 8, 0, -1, 1}}, 1, {0}, 0, 0, 0,
      "q0 WaitingForCapacity eta=-1\n", REL, 0, NULL, NULL, NULL},
     {2}, {2}, {1}, 0},
    /* the team's own quota (8) is full: demotion frees it, priority
     * preemption does not apply (DESIGN §4: for a job that fits it) */
    {{"attained-service: at its own quota a job demotes its level-1 peer", 1,
      {ALONE(8)}, 0, {{0, 1, 8, 0, NULL, 0, 0, 0}}, 1,
      {{0, 0, 8, 0, -1, 1}}, 1, {0}, 0, 0, 0,
      "search q0\n"
      "reserve q0 n0\n"
      "victim r0 for q0 Demoted\n"
      "q0 WaitingForPreemption event=Preempting\n", CANDS, 0, NULL, NULL, NULL},
     {0}, {1}, {1}, 0},
    {{"attained-service: at its own quota no priority preemption", 1,
      {ALONE(8)}, 0, {{0, 1, 8, 10, NULL, 0, 0, 0}}, 1,
      {{0, 0, 8, 0, -1, 1}}, 1, {0}, 0, 0, 0,
      "q0 WaitingForQuota eta=-1\n", 0, 0, NULL, NULL, NULL},
     {0}, {1}, {1}, 0},
    /* nothing admitted could resume from a checkpoint: no demotion, so
     * no victim search (each costs milliseconds at 2,000 nodes) */
    {{"attained-service: no resumable job, no search", 1, {ALONE(16)}, 0,
      {{0, 1, 8, 0, NULL, 0, 0, 0}}, 1, {{0, 0, 8, 0, -1, 1}}, 1, {0}, 0, 0,
      0, "q0 WaitingForCapacity eta=-1\n", REL, 0, NULL, NULL, NULL},
     {0}, {1}, {1}, 1},
    /* both would borrow; b's head has had less service: it goes first */
    {{"attained-service: the lower level's team goes first", 1,
      {COHORT(4), COHORT(4)}, 1,
      {{0, 1, 8, 0, NULL, 0, 0, 0}, {1, 1, 8, 0, NULL, 0, 0, 0}}, 2, {{0}}, 0,
      {0}, 0, 0, 0,
      "admit q1 n0 * AdmittedBorrowing\n"
      "search q0\n"
      "q0 WaitingForReclaim eta=-1\n", CANDS, 0, NULL, NULL, NULL},
     {1, 0}, {0}, {0}, 0},
};

/* The attained-service case being run, or NULL (fifo-backfill). */
static const struct las_case *cur_las;
static const struct gq_las las_default = GQ_LAS_DEFAULT;

struct world {
  const struct tcase *tc;
  int lazy, asked;
  struct gq_node nodes[MAXN];
  const struct gq_node *np[MAXN];
  struct gq_snapshot s;
  struct gq_teamquota tq[MAXT];
  size_t n_teams;
  struct gq_gpujob qs[MAXQ], rs[MAXR], ds;
  char qname[MAXQ][24], qkey[MAXQ][32], rname[MAXR][24], rkey[MAXR][32];
  char dname[8];
  struct gq_pass_job views[MAXQ];
  struct gq_podsched rreq[MAXR];
  const struct gq_podsched *rreqp[MAXR];
  const char *rnode[MAXR];
  struct gq_forecast_release rel[MAXR];
  size_t n_rel;
  struct gq_pass_preemptor pre[MAXQ];
  const char *pre_nodes[MAXQ][2];
  size_t n_pre;
};

static void node(struct gq_node *n, const char *name)
{
  char buf[1024];

  snprintf(buf, sizeof(buf),
           "{'metadata':{'name':'%s','labels':{'nvidia.com/gpu.product':"
           "'" H100 "'}},'spec':{},'status':{'allocatable':{"
           "'cpu':'64','memory':'512Gi','pods':'110','nvidia.com/gpu':'8'},"
           "'conditions':[{'type':'Ready','status':'True'}]}}", name);
  gq_test_node_sq(n, buf);
}

static void job(struct gq_gpujob *j, const char *name, int team, int replicas,
                int gpr, int prio, const char *more)
{
  char buf[2048];

  snprintf(buf, sizeof(buf), "{'apiVersion':'gpuq.dev/v1alpha1','kind':"
           "'GpuJob','metadata':{'name':'%s','namespace':'ns','uid':'u-%s'},"
           "'spec':{'team':'%s','priority':%d,'replicas':%d,'gpusPerReplica':"
           "%d,%s'template':{'spec':{'containers':[{'name':'c','image':'x'"
           "}]}}}}", name, name, team_names[team], prio, replicas, gpr,
           more ? more : "");
  gq_test_gpujob_sq(j, buf);
}

static void world_init(struct world *w, const struct tcase *tc, int lazy)
{
  char buf[1024];

  memset(w, 0, sizeof(*w));
  w->tc = tc;
  w->lazy = lazy;
  for (int i = 0; i < tc->nodes; i++) {
    node(&w->nodes[i], node_names[i]);
    w->np[i] = &w->nodes[i];
  }
  gq_snapshot_init(&w->s, w->np, (size_t)tc->nodes, NULL);
  for (; w->n_teams < MAXT && tc->quota[w->n_teams]; w->n_teams++) {
    snprintf(buf, sizeof(buf), "{'apiVersion':'gpuq.dev/v1alpha1','kind':"
             "'TeamQuota','metadata':{'name':'%s'},'spec':{'namespaces':"
             "['ns'],%s}}", team_names[w->n_teams], tc->quota[w->n_teams]);
    gq_test_teamquota_sq(&w->tq[w->n_teams], buf);
  }
  for (size_t i = 0; i < tc->n_run; i++) {
    const struct rjob *r = &tc->run[i];

    snprintf(w->rname[i], sizeof(w->rname[i]), "r%zu", i);
    snprintf(w->rkey[i], sizeof(w->rkey[i]), "ns/r%zu", i);
    job(&w->rs[i], w->rname[i], r->team < 0 ? 0 : r->team, 1, r->gpus,
        r->prio, NULL);
    gq_place_replica_request(&w->rs[i], &w->rreq[i]);
    w->rreqp[i] = &w->rreq[i];
    w->rnode[i] = node_names[r->node];
    assert_int_equal(gq_snapshot_commit(&w->s, w->rnode[i], &w->rreq[i], 1),
                     0);
    if (r->end_s >= 0)
      w->rel[w->n_rel++] = (struct gq_forecast_release){
          w->rnode[i], &w->rreq[i], NOW_MS + r->end_s * 1000LL};
  }
}

static void world_views(struct world *w)
{
  const struct tcase *tc = w->tc;

  for (size_t i = 0; i < tc->n_q; i++) {
    const struct qjob *q = &tc->q[i];

    snprintf(w->qname[i], sizeof(w->qname[i]), "q%zu", i);
    snprintf(w->qkey[i], sizeof(w->qkey[i]), "ns/q%zu", i);
    job(&w->qs[i], w->qname[i], q->team, q->replicas, q->gpr, q->prio,
        q->spec);
    w->views[i] = (struct gq_pass_job){
        w->qname[i], w->qkey[i], w->qs[i].meta.uid, &w->qs[i], w->qs[i].gpus,
        q->prio, NOW_MS - (int64_t)(100 - i) * 1000, w->qs[i].shape,
        q->resv_node > 0, q->victims_left,
        q->searched_s ? MONO_MS - q->searched_s * 1000LL : 0,
        cur_las ? cur_las->qlevel[i] : 0};
    if (q->resv_node > 0) {
      w->pre_nodes[w->n_pre][0] = node_names[q->resv_node - 1];
      w->pre[w->n_pre] = (struct gq_pass_preemptor){w->qname[i], &w->qs[i],
                                                    w->pre_nodes[w->n_pre]};
      w->n_pre++;
    }
  }
  if (tc->n_drain) {
    snprintf(w->dname, sizeof(w->dname), "d0");
    job(&w->ds, w->dname, tc->drain.team, tc->drain.replicas, tc->drain.gpr,
        tc->drain.prio, NULL);
  }
}

static void world_release(struct world *w)
{
  for (size_t i = 0; i < w->tc->n_q; i++)
    gq_gpujob_release(&w->qs[i]);
  for (size_t i = 0; i < w->tc->n_run; i++) {
    gq_place_replica_release(&w->rreq[i]);
    gq_gpujob_release(&w->rs[i]);
  }
  if (w->tc->n_drain)
    gq_gpujob_release(&w->ds);
  for (size_t i = 0; i < w->n_teams; i++)
    gq_teamquota_release(&w->tq[i]);
  gq_snapshot_release(&w->s);
  for (int i = 0; i < w->tc->nodes; i++)
    gq_node_release(&w->nodes[i]);
}

/* ---- one cohort's input ---------------------------------------------- */

struct cin {
  struct gq_pass_cohort in;
  struct gq_pass_team teams[MAXT];
  int team[MAXT];                 /* the world's team of each */
  struct gq_pass_job jobs[MAXT][MAXQ];
  size_t n_jobs[MAXT];            /* of each team's queue */
  struct gq_pass_prio prio[MAXT][MAXR];
  struct gq_ledger_use use[MAXT];
  struct gq_pass_cand cands[MAXR];
  struct gq_pass_draining drain;
};

static int cohort_team(const struct cin *ci, int team)
{
  for (size_t i = 0; i < ci->in.n_teams; i++)
    if (ci->team[i] == team)
      return (int)i;
  return -1;
}

/* The running jobs' use, priorities and candidacy for cohort ci. */
static void cin_running(struct world *w, struct cin *ci)
{
  size_t nc = 0;

  for (size_t i = 0; i < w->tc->n_run; i++) {
    const struct rjob *r = &w->tc->run[i];
    int t = r->team < 0 ? -1 : cohort_team(ci, r->team);
    struct gq_pass_team *pt;

    if (t < 0)
      continue;
    pt = &ci->teams[t];
    ci->use[t].gpus += r->gpus;
    ci->prio[t][pt->n_adm_prio++] = (struct gq_pass_prio){r->prio, 1};
    if (cur_las && !cur_las->none_resumable)
      pt->n_resumable++;
    if (r->cand)
      ci->cands[nc++] = (struct gq_pass_cand){
          w->rname[i], w->rkey[i], (size_t)t, r->prio, r->gpus, "*",
          NOW_MS - 1000, 0, -1, 1, cur_las ? cur_las->rlevel[i] : 0,
          cur_las ? cur_las->rdemotable[i] : 0, 1, &w->rnode[i],
          &w->rreqp[i]};
  }
  ci->in.n_cands = nc;
  ci->in.cands_set = !w->lazy;
}

/* Cohort of the world's teams first..last. */
static void cin_init(struct world *w, struct cin *ci, int first, int last)
{
  memset(ci, 0, sizeof(*ci));
  for (int t = first; t <= last; t++) {
    size_t i = ci->in.n_teams++;

    ci->team[i] = t;
    ci->teams[i].name = team_names[t];
    ci->teams[i].quota = &w->tq[t];
    ci->teams[i].adm_prio = ci->prio[i];
    ci->use[i] = (struct gq_ledger_use){i, "*", 0};
    for (size_t q = 0; q < w->tc->n_q; q++)
      if (w->tc->q[q].team == t)
        ci->jobs[i][ci->n_jobs[i]++] = w->views[q];
    ci->teams[i].n_queued = ci->n_jobs[i];
    ci->teams[i].jobs = ci->jobs[i];
    ci->teams[i].n_jobs = w->lazy ? 0 : ci->n_jobs[i];
  }
  ci->in.teams = ci->teams;
  ci->in.has_cohort = w->tc->cohort;
  ci->in.las = cur_las ? &las_default : NULL;
  ci->in.use = ci->use;
  ci->in.n_use = ci->in.n_teams;
  ci->in.cands = ci->cands;
  cin_running(w, ci);
  if (w->tc->n_drain && cohort_team(ci, w->tc->drain.team) >= 0) {
    ci->drain = (struct gq_pass_draining){
        w->dname, &w->ds, (size_t)cohort_team(ci, w->tc->drain.team),
        w->tc->drain.prio, 0, NOW_MS - 200000, "*"};
    ci->in.draining = &ci->drain;
    ci->in.n_draining = 1;
  }
}

/* ---- running the pass ------------------------------------------------ */

static void render(const struct gq_plan *pl, char *out, size_t len)
{
  size_t off = strlen(out);

  for (size_t i = 0; i < pl->n_steps && off < len; i++) {
    const struct gq_plan_step *st = &pl->steps[i];
    const char *job = st->job;
    const struct gq_plan_admit *ad = &pl->admits[st->i];
    const struct gq_plan_status *u = &pl->status[st->i];
    const struct gq_plan_resv *r = &pl->resvs[st->i];
    char eta[32] = "";

    switch (st->op) {
    case GQ_PLAN_ADMIT:
      off += (size_t)snprintf(out + off, len - off, "admit %s %s %s %s\n", job,
                              ad->nodes_str, ad->a.key, ad->reason);
      break;
    case GQ_PLAN_UNRESERVE:
      off += (size_t)snprintf(out + off, len - off, "unreserve %s\n", job);
      break;
    case GQ_PLAN_SEARCHED:
      off += (size_t)snprintf(out + off, len - off, "search %s\n", job);
      break;
    case GQ_PLAN_RESERVE:
      assert_int_equal(r->n, 1);
      off += (size_t)snprintf(out + off, len - off, "reserve %s %s\n", job,
                              r->nodes[0]);
      break;
    case GQ_PLAN_VICTIM:
      off += (size_t)snprintf(out + off, len - off, "victim %s for %s %s\n",
                              job, (const char *)pl->victims[st->i].by,
                              pl->victims[st->i].cause);
      break;
    case GQ_PLAN_STATUS:
      if (u->set_eta && u->eta_ms < 0)
        snprintf(eta, sizeof(eta), " eta=-1");
      else if (u->set_eta)
        snprintf(eta, sizeof(eta), " eta=+%llds",
                 (long long)(u->eta_ms - NOW_MS) / 1000);
      off += (size_t)snprintf(out + off, len - off, "%s %s%s%s%s\n", job,
                              u->reason, eta, u->event_reason ? " event=" : "",
                              u->event_reason ? u->event_reason : "");
      break;
    }
  }
}

/* The last message and first victim sentence the plan gives. */
static void plan_messages(const struct gq_plan *pl, const char *of,
                          const char **m, const char **why)
{
  for (size_t i = 0; of && i < pl->n_admits; i++)
    if (!strcmp(pl->admits[i].job, of))
      *m = pl->admits[i].message;
  for (size_t i = 0; of && i < pl->n_status; i++)
    if (!strcmp(pl->status[i].job, of))
      *m = pl->status[i].message;
  if (pl->n_victims && !*why)
    *why = pl->victims[0].why;
}

/* Decides cohort ci, answering what the pass asks for. */
static void decide(struct world *w, struct gq_pass *p, struct cin *ci,
                   struct gq_plan *pl)
{
  enum gq_pass_need need;
  size_t ti = 0;
  int rounds = 0;

  while ((need = w->tc->fifo ? gq_pass_fifo(p, &ci->in, pl, &ti)
                             : gq_pass_cohort(p, &ci->in, pl, &ti)) !=
         GQ_PASS_DONE) {
    assert_true(w->lazy);
    assert_true(++rounds < 100);
    if (need & GQ_PASS_NEED_JOBS) {
      assert_true(ti < ci->in.n_teams);
      assert_true(ci->teams[ti].n_jobs < ci->teams[ti].n_queued);
      ci->teams[ti].n_jobs++;
    }
    if (need & GQ_PASS_NEED_RELEASES)
      gq_pass_releases(p, w->rel, w->n_rel);
    if (need & GQ_PASS_NEED_CANDS)
      ci->in.cands_set = 1;
    w->asked |= (int)need & (REL | CANDS);
  }
}

struct result {
  char plan[4096];
  const char *msg, *why; /* valid until the plans are released */
  int again;
};

static void run_case(const struct tcase *tc, int lazy, struct result *res)
{
  struct gq_pass_limits lim = GQ_PASS_LIMITS_DEFAULT;
  struct world w;
  struct gq_plan pl[MAXT];
  struct cin ci[MAXT];
  int64_t cpu[MAXN], pods[MAXN], gpus[MAXN];
  struct gq_pass_out out;
  struct gq_pass *p;
  size_t n_k = 0;

  world_init(&w, tc, lazy);
  world_views(&w);
  for (int i = 0; i < tc->nodes; i++) {
    cpu[i] = w.s.nodes[i].used.cpu_milli;
    pods[i] = w.s.nodes[i].used.pods;
    gpus[i] = gq_snapshot_available(&w.s, (size_t)i, "nvidia.com/gpu");
  }
  if (tc->admits_max)
    lim.admits_max = tc->admits_max;
  p = gq_pass_begin(&(struct gq_pass_in){&w.s, lim, NOW_MS, MONO_MS, w.pre,
                                         w.n_pre});
  if (!lazy)
    gq_pass_releases(p, w.rel, w.n_rel);
  memset(res, 0, sizeof(*res));
  for (size_t t = 0; t < w.n_teams; n_k++) {
    size_t last = tc->cohort ? w.n_teams - 1 : t;

    cin_init(&w, &ci[n_k], (int)t, (int)last);
    gq_plan_init(&pl[n_k]);
    decide(&w, p, &ci[n_k], &pl[n_k]);
    render(&pl[n_k], res->plan, sizeof(res->plan));
    plan_messages(&pl[n_k], tc->msg_of, &res->msg, &res->why);
    res->again |= pl[n_k].again;
    t = last + 1;
  }
  gq_pass_end(p, &out);
  if (!lazy) /* everything was given: the pass asked for nothing */
    assert_int_equal(w.asked, 0);
  else if (w.asked != tc->asks)
    fail_msg("%s: asked for %d, want %d", tc->name, w.asked, tc->asks);
  assert_int_equal(out.again, res->again);
  for (int i = 0; i < tc->nodes; i++) { /* the snapshot is as it was */
    assert_int_equal(w.s.nodes[i].used.cpu_milli, cpu[i]);
    assert_int_equal(w.s.nodes[i].used.pods, pods[i]);
    assert_int_equal(gq_snapshot_available(&w.s, (size_t)i, "nvidia.com/gpu"),
                     gpus[i]);
  }
  /* copy what is checked out of the plans before they go */
  if (res->msg)
    res->msg = gq_xstrdup(res->msg);
  if (res->why)
    res->why = gq_xstrdup(res->why);
  for (size_t k = 0; k < n_k; k++)
    gq_plan_release(&pl[k]);
  world_release(&w);
}

static void check_case(const struct tcase *tc)
{
  struct result eager, lazy;

  run_case(tc, 0, &eager);
  run_case(tc, 1, &lazy);
  if (strcmp(eager.plan, tc->want))
    fail_msg("%s: plan\n%s\nwant\n%s", tc->name, eager.plan, tc->want);
  if (strcmp(lazy.plan, eager.plan))
    fail_msg("%s: plan with input on request\n%s\nwant\n%s", tc->name,
             lazy.plan, eager.plan);
  if (eager.again != tc->want_again)
    fail_msg("%s: again %d, want %d", tc->name, eager.again, tc->want_again);
  if (tc->want_msg &&
      (!eager.msg || strncmp(eager.msg, tc->want_msg, strlen(tc->want_msg))))
    fail_msg("%s: message of %s is '%s', want '%s...'", tc->name, tc->msg_of,
             eager.msg ? eager.msg : "(none)", tc->want_msg);
  if (tc->want_why && (!eager.why || strcmp(eager.why, tc->want_why)))
    fail_msg("%s: victim's why '%s', want '%s'", tc->name,
             eager.why ? eager.why : "(none)", tc->want_why);
  free((char *)eager.msg);
  free((char *)eager.why);
  free((char *)lazy.msg);
  free((char *)lazy.why);
}

static void test_case(void **state)
{
  check_case(*state);
}

static void test_las_case(void **state)
{
  const struct las_case *lc = *state;

  cur_las = lc;
  check_case(&lc->tc);
  cur_las = NULL;
}

int main(void)
{
  enum { N = sizeof(cases) / sizeof(cases[0]),
         L = sizeof(las_cases) / sizeof(las_cases[0]) };
  struct CMUnitTest tests[N + L];

  for (size_t i = 0; i < N; i++)
    tests[i] = (struct CMUnitTest){cases[i].name, test_case, NULL, NULL,
                                   (void *)&cases[i]};
  for (size_t i = 0; i < L; i++)
    tests[N + i] = (struct CMUnitTest){las_cases[i].tc.name, test_las_case,
                                       NULL, NULL, (void *)&las_cases[i]};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
