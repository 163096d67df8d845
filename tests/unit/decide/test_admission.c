/* Tests for decide/admission: the mutating webhook's patches and the
 * validating webhook's verdicts and messages (docs/integrations.md,
 * "Admission webhooks"), table by table, over three TeamQuotas: team-a
 * [team-a], team-b [team-b, shared], team-c [shared]. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "decide/admission.h"
#include "decide/gpujob.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define CTL GQ_CONTROLLER_USER

static const char *ns_a[] = {"team-a"}, *ns_b[] = {"team-b", "shared"},
                  *ns_c[] = {"shared"};
static struct gq_teamquota tqa = {
    .meta = {.name = "team-a"}, .namespaces = ns_a, .n_namespaces = 1};
static struct gq_teamquota tqb = {
    .meta = {.name = "team-b"}, .namespaces = ns_b, .n_namespaces = 2};
static struct gq_teamquota tqc = {
    .meta = {.name = "team-c"}, .namespaces = ns_c, .n_namespaces = 1};
static const struct gq_teamquota *const tqs[] = {&tqa, &tqb, &tqc};

static const struct gq_kv team_a[] = {{GQ_LBL_TEAM, "team-a"}};
static const struct gq_kv team_c[] = {{GQ_LBL_TEAM, "team-c"}};
static const struct gq_kv team_x[] = {{GQ_LBL_TEAM, "nope"}};
static const struct gq_kv app[] = {{"app", "x"}};
static const struct gq_kv own[] = {{GQ_LBL_JOB_UID, "u1"}};
static const char *const gated[] = {"other", GQ_GATE_ADMISSION};
static const char *const other[] = {"other"};

/* An object: labels, has annotations, managed, gpus, gates. */
#define OBJ(lbl, ann, man, gpu, gt)                                            \
  {                                                                            \
    lbl, sizeof(lbl) / sizeof(struct gq_kv), 1, man, ann, gpu, gt,             \
        sizeof(gt) / sizeof(char *), 1, 0                                      \
  }
#define OBJ0(lbl, ann, man, gpu)                                               \
  {                                                                            \
    lbl, sizeof(lbl) / sizeof(struct gq_kv), 1, man, ann, gpu, NULL, 0, 0, 0   \
  }
#define BARE(gpu)                                                              \
  {                                                                            \
    NULL, 0, 0, NULL, 0, gpu, NULL, 0, 0, 0                                    \
  }
#define POD(op, ns, o)                                                         \
  {                                                                            \
    op, GQ_ADM_POD, ns, "alice", o, BARE(0)                                    \
  }
#define JOB(op, ns, o)                                                         \
  {                                                                            \
    op, GQ_ADM_JOB, ns, "alice", o, BARE(0)                                    \
  }

/* ---- mutating ----------------------------------------------------------- */

struct mut_case {
  const char *name;
  struct gq_adm_req req;
  const char *want_team;
  const char *want[GQ_ADM_MAX_OPS]; /* "path value" per op */
};

#define GATE_NEW "/spec/schedulingGates [{\"name\":\"gpuq.dev/admission\"}]"
#define ANN_NEW "/metadata/annotations {\"gpuq.dev/managed\":\"true\"}"
#define LBL_NEW(t) "/metadata/labels {\"gpuq.dev/team\":\"" t "\"}"

/* clang-format off */
static const struct mut_case mut_cases[] = {
    {"gpu pod, bare: gate, annotation and label maps created",
     POD(GQ_ADM_CREATE, "team-a", BARE(1)), "team-a",
     {GATE_NEW, ANN_NEW, LBL_NEW("team-a")}},
    {"gpu pod with maps and other gates: appended",
     POD(GQ_ADM_CREATE, "team-b", OBJ(app, 1, NULL, 1, other)), "team-b",
     {"/spec/schedulingGates/- {\"name\":\"gpuq.dev/admission\"}",
      "/metadata/annotations/gpuq.dev~1managed \"true\"",
      "/metadata/labels/gpuq.dev~1team \"team-b\""}},
    {"already gated, managed and labelled: nothing",
     POD(GQ_ADM_CREATE, "team-a", OBJ(team_a, 1, "true", 1, gated)), "team-a",
     {NULL}},
    {"shared namespace, label names one of its teams",
     POD(GQ_ADM_CREATE, "shared", OBJ(team_c, 0, NULL, 1, other)), "team-c",
     {"/spec/schedulingGates/- {\"name\":\"gpuq.dev/admission\"}", ANN_NEW}},
    {"no gpus", POD(GQ_ADM_CREATE, "team-a", BARE(0)), NULL, {NULL}},
    {"gpuq's own pod", POD(GQ_ADM_CREATE, "team-a", OBJ0(own, 0, NULL, 1)),
     NULL, {NULL}},
    {"no TeamQuota admits the namespace", POD(GQ_ADM_CREATE, "ml-x", BARE(1)),
     NULL, {NULL}},
    {"shared namespace without a label: left to validation",
     POD(GQ_ADM_CREATE, "shared", BARE(1)), NULL, {NULL}},
    {"label names a team of another namespace: left to validation",
     POD(GQ_ADM_CREATE, "team-b", OBJ0(team_a, 0, NULL, 1)), NULL,
     {NULL}},
    {"update passes", POD(GQ_ADM_UPDATE, "team-a", BARE(1)), NULL, {NULL}},
    {"gpu job: suspended", JOB(GQ_ADM_CREATE, "team-a", BARE(1)), "team-a",
     {"/spec/suspend true", ANN_NEW, LBL_NEW("team-a")}},
    {"job with a team label and no gpus: suspended",
     JOB(GQ_ADM_CREATE, "team-a", OBJ0(team_a, 1, NULL, 0)), "team-a",
     {"/spec/suspend true", "/metadata/annotations/gpuq.dev~1managed \"true\""}},
    {"job without gpus or label", JOB(GQ_ADM_CREATE, "team-a", BARE(0)), NULL,
     {NULL}},
    {"other kinds pass",
     {GQ_ADM_CREATE, GQ_ADM_OTHER, "team-a", "alice", BARE(1), BARE(0)}, NULL,
     {NULL}},
};
/* clang-format on */

static void test_mutate(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(mut_cases); i++) {
    const struct mut_case *c = &mut_cases[i];
    struct gq_adm_result res;
    size_t n = gq_adm_mutate(&c->req, tqs, N_OF(tqs), &res), want = 0;

    while (want < GQ_ADM_MAX_OPS && c->want[want])
      want++;
    if (!res.allowed || n != want || n != res.n_ops)
      fail_msg("%s: allowed %d, %zu ops, want %zu", c->name, res.allowed, n,
               want);
    if ((res.team == NULL) != (c->want_team == NULL) ||
        (res.team && strcmp(res.team, c->want_team)))
      fail_msg("%s: team %s, want %s", c->name, res.team ? res.team : "-",
               c->want_team ? c->want_team : "-");
    for (size_t k = 0; k < n; k++) {
      char got[GQ_ADM_PATH_MAX + GQ_ADM_VALUE_MAX + 2];

      snprintf(got, sizeof(got), "%s %s", res.ops[k].path, res.ops[k].value);
      assert_string_equal(res.ops[k].op, "add");
      if (strcmp(got, c->want[k]))
        fail_msg("%s: op %zu is '%s', want '%s'", c->name, k, got, c->want[k]);
    }
  }
}

/* Job suspension already set: no suspend op. */
static void test_mutate_suspended_job(void **state)
{
  struct gq_adm_req r = JOB(GQ_ADM_CREATE, "team-a", BARE(1));
  struct gq_adm_result res;

  (void)state;
  r.obj.suspend = 1;
  assert_int_equal(gq_adm_mutate(&r, tqs, N_OF(tqs), &res), 2);
  assert_string_equal(res.ops[0].path, "/metadata/annotations");
}

/* ---- validating --------------------------------------------------------- */

struct val_case {
  const char *name;
  struct gq_adm_req req;
  const char *want; /* NULL: allowed */
};

#define UPD(o, old, user)                                                      \
  {                                                                            \
    GQ_ADM_UPDATE, GQ_ADM_POD, "team-a", user, o, old                          \
  }

/* clang-format off */
static const struct val_case val_cases[] = {
    {"gpu pod outside every team namespace",
     POD(GQ_ADM_CREATE, "ml-x", BARE(1)),
     "namespace \"ml-x\" is not admitted by any TeamQuota (TeamQuotas: "
     "team-a [team-a], team-b [team-b, shared], team-c [shared]); GPU pods "
     "must run in a team namespace"},
    {"gpu job outside every team namespace",
     JOB(GQ_ADM_CREATE, "ml-x", BARE(1)),
     "namespace \"ml-x\" is not admitted by any TeamQuota (TeamQuotas: "
     "team-a [team-a], team-b [team-b, shared], team-c [shared]); GPU Jobs "
     "must run in a team namespace"},
    {"pod without gpus anywhere", POD(GQ_ADM_CREATE, "ml-x", BARE(0)), NULL},
    {"gpu pod of a team namespace", POD(GQ_ADM_CREATE, "team-a", BARE(1)),
     NULL},
    {"label names a team that does not admit the namespace",
     POD(GQ_ADM_CREATE, "team-b", OBJ0(team_a, 0, NULL, 0)),
     "metadata.labels[\"gpuq.dev/team\"]: TeamQuota \"team-a\" does not "
     "admit namespace \"team-b\" (TeamQuotas admitting it: team-b), got "
     "\"team-a\""},
    {"label names a team of no namespace",
     POD(GQ_ADM_CREATE, "ml-x", OBJ0(team_a, 0, NULL, 1)),
     "metadata.labels[\"gpuq.dev/team\"]: TeamQuota \"team-a\" does not "
     "admit namespace \"ml-x\" (TeamQuotas admitting it: none), got "
     "\"team-a\""},
    {"label names no TeamQuota",
     JOB(GQ_ADM_CREATE, "team-a", OBJ0(team_x, 0, NULL, 1)),
     "metadata.labels[\"gpuq.dev/team\"]: no TeamQuota \"nope\" exists "
     "(TeamQuotas: team-a [team-a], team-b [team-b, shared], team-c "
     "[shared]), got \"nope\""},
    {"shared namespace, gpu pod without a label",
     POD(GQ_ADM_CREATE, "shared", BARE(1)),
     "metadata.labels[\"gpuq.dev/team\"]: required: namespace \"shared\" is "
     "admitted by several TeamQuotas (team-b, team-c); GPU pods there must "
     "name their team"},
    {"shared namespace, label names one", POD(GQ_ADM_CREATE, "shared",
     OBJ0(team_c, 0, NULL, 1)), NULL},
    {"shared namespace, pod without gpus", POD(GQ_ADM_CREATE, "shared",
     BARE(0)), NULL},
    {"gpuq's own pod anywhere",
     POD(GQ_ADM_CREATE, "ml-x", OBJ0(own, 0, NULL, 1)), NULL},
    {"gate removed by a user",
     UPD(OBJ(team_a, 1, "true", 1, other), OBJ(team_a, 1, "true", 1, gated),
         "alice"),
     "spec.schedulingGates: only \"" CTL "\" may remove gate "
     "\"gpuq.dev/admission\" (gpuq removes it when it admits the pod), got "
     "user \"alice\""},
    {"gate removed by the controller",
     UPD(OBJ(team_a, 1, "true", 1, other), OBJ(team_a, 1, "true", 1, gated),
         CTL), NULL},
    {"gate kept", UPD(OBJ(team_a, 1, "true", 1, gated),
                      OBJ(team_a, 1, "true", 1, gated), "alice"), NULL},
    {"other gate removed", UPD(OBJ0(team_a, 1, NULL, 1),
                               OBJ(team_a, 1, NULL, 1, other), "alice"), NULL},
    {"label changed to a team of another namespace",
     UPD(OBJ0(team_c, 1, NULL, 1), OBJ0(team_a, 1, NULL, 1),
         "alice"),
     "metadata.labels[\"gpuq.dev/team\"]: TeamQuota \"team-c\" does not "
     "admit namespace \"team-a\" (TeamQuotas admitting it: team-a), got "
     "\"team-c\""},
    {"label kept although its team no longer admits the namespace",
     UPD(OBJ0(team_c, 1, NULL, 1), OBJ0(team_c, 1, NULL, 1),
         "alice"), NULL},
    {"delete", POD(GQ_ADM_DELETE, "ml-x", BARE(1)), NULL},
    {"other kinds",
     {GQ_ADM_CREATE, GQ_ADM_OTHER, "ml-x", "alice", BARE(1), BARE(0)}, NULL},
};
/* clang-format on */

static void test_validate(void **state)
{
  (void)state;
  for (size_t i = 0; i < N_OF(val_cases); i++) {
    const struct val_case *c = &val_cases[i];
    struct gq_adm_result res;
    int ok = gq_adm_validate(&c->req, tqs, N_OF(tqs), CTL, &res);

    if (ok != res.allowed || ok != !c->want || res.n_ops)
      fail_msg("%s: allowed %d (%s), want %s", c->name, ok, res.msg,
               c->want ? c->want : "allowed");
    if (c->want && strcmp(res.msg, c->want))
      fail_msg("%s:\n got '%s'\nwant '%s'", c->name, res.msg, c->want);
    if (!c->want)
      assert_string_equal(res.msg, "");
  }
}

/* No TeamQuota at all: the list says so. */
static void test_validate_no_teams(void **state)
{
  struct gq_adm_req r = POD(GQ_ADM_CREATE, "ml-x", BARE(1));
  struct gq_adm_result res;

  (void)state;
  assert_int_equal(gq_adm_validate(&r, NULL, 0, CTL, &res), 0);
  assert_string_equal(res.msg,
                      "namespace \"ml-x\" is not admitted by any "
                      "TeamQuota (TeamQuotas: none); GPU pods must run in a "
                      "team namespace");
}

/* Hundreds of TeamQuotas: the list is cut with "..." and the message
 * still ends with what to do. */
static void test_validate_long_list(void **state)
{
  static struct gq_teamquota many[300];
  static const struct gq_teamquota *ptr[300];
  static char names[300][16];
  struct gq_adm_req r = POD(GQ_ADM_CREATE, "ml-x", BARE(1));
  struct gq_adm_result res;

  (void)state;
  for (size_t i = 0; i < 300; i++) {
    snprintf(names[i], sizeof(names[i]), "team-%03zu", i);
    many[i].meta.name = names[i];
    many[i].namespaces = ns_a;
    many[i].n_namespaces = 1;
    ptr[i] = &many[i];
  }
  assert_int_equal(gq_adm_validate(&r, ptr, 300, CTL, &res), 0);
  assert_non_null(strstr(res.msg, "team-000 [team-a], team-001"));
  assert_non_null(strstr(res.msg, "...); GPU pods must run in a team "
                                  "namespace"));
  assert_true(strlen(res.msg) < GQ_ADM_MSG_MAX);
}

/* JSON and JSON pointer escaping of a team name (TeamQuota names are
 * DNS labels, but the decision does not rely on it). */
static void test_escaping(void **state)
{
  static const char *ns[] = {"team-a"};
  struct gq_teamquota odd = {
      .meta = {.name = "a\"b\\c"}, .namespaces = ns, .n_namespaces = 1};
  const struct gq_teamquota *one[] = {&odd};
  struct gq_adm_req r = POD(GQ_ADM_CREATE, "team-a", BARE(1));
  struct gq_adm_result res;

  (void)state;
  assert_int_equal(gq_adm_mutate(&r, one, 1, &res), 3);
  assert_string_equal(res.ops[2].value, "{\"gpuq.dev/team\":\"a\\\"b\\\\c\"}");
}

static void test_gpu_resource(void **state)
{
  (void)state;
  assert_true(gq_adm_is_gpu_resource("nvidia.com/gpu"));
  assert_true(gq_adm_is_gpu_resource("nvidia.com/mig-1g.10gb"));
  assert_true(gq_adm_is_gpu_resource("nvidia.com/mig-3g.40gb"));
  assert_false(gq_adm_is_gpu_resource("nvidia.com/gpu.shared"));
  assert_false(gq_adm_is_gpu_resource("nvidia.com/mig"));
  assert_false(gq_adm_is_gpu_resource("amd.com/gpu"));
  assert_false(gq_adm_is_gpu_resource("cpu"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mutate),
      cmocka_unit_test(test_mutate_suspended_job),
      cmocka_unit_test(test_validate),
      cmocka_unit_test(test_validate_no_teams),
      cmocka_unit_test(test_validate_long_list),
      cmocka_unit_test(test_escaping),
      cmocka_unit_test(test_gpu_resource),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
