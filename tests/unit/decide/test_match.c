/* Kubernetes' matching rules (decide/match.h) on real decoded objects: the
 * node fixtures in tests/fixtures/nodes and small pods built inline.
 *
 * To keep the tables readable, the inline JSON is written with single
 * quotes, which gq_test_json_sq() turns into double quotes before
 * decoding (no label, key or value below contains a quote).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api/node.h"
#include "api/pod.h"
#include "base/err.h"
#include "decide/match.h"
#include "tests/support/fixture.h"

#define KI 1024LL
#define GI (1024LL * 1024 * 1024)

#define MIG_NODE "a100-80gb-8x-mig-mixed.json"
#define ZERO_NODE "a100-80gb-8x-ready-gpu-allocatable-zero.json"
#define A100_NODE "a100-80gb-8x-ready.json"
#define CORDONED "h100-80gb-8x-cordoned-draining.json"
#define H100_NODE "h100-80gb-8x-ready.json"
#define T4_NODE "t4-1x-inference-eks-spot.json"
#define T4_SHARED "t4-4x-time-sliced-eks.json"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

/* ---- helpers ------------------------------------------------------------ */

static void set_not_ready(json_t *obj)
{
  json_t *st = json_object_get(obj, "status");
  json_t *conds = json_object_get(st, "conditions");

  for (size_t i = 0; i < json_array_size(conds); i++) {
    json_t *c = json_array_get(conds, i);

    if (strcmp(json_string_value(json_object_get(c, "type")), "Ready") == 0)
      json_object_set_new(c, "status", json_string("False"));
  }
}

/* Loads a fixture node; taints (JSON array, single quotes) replaces its
 * spec.taints when not NULL, and not_ready flips condition Ready. */
static void node_load(struct gq_node *n, const char *file, const char *taints,
                      int not_ready)
{
  char path[256], err[512];
  json_error_t jerr;
  json_t *obj;

  snprintf(path, sizeof(path), "tests/fixtures/nodes/%s", file);
  obj = json_load_file(path, 0, &jerr);
  if (!obj)
    fail_msg("%s: %s", path, jerr.text);
  if (taints)
    json_object_set_new(json_object_get(obj, "spec"), "taints",
                        gq_test_json_sq(taints));
  if (not_ready)
    set_not_ready(obj);
  if (gq_node_decode(obj, NULL, n, err, sizeof(err)) != 0)
    fail_msg("%s: %s", file, err);
  json_decref(obj); /* the node keeps its own reference */
}

/* Decodes a pod with one container requesting 'requests' (the members of
 * a ResourceList, single quotes) and the extra spec members 'extra'. */
static void pod_load(struct gq_pod *p, const char *requests, const char *extra)
{
  char buf[8192], err[512];
  json_t *obj;

  snprintf(buf, sizeof(buf),
           "{'metadata':{'name':'p','namespace':'ns','uid':'u-1'},"
           "'spec':{'containers':[{'name':'c','resources':{'requests':{%s}}}]"
           "%s%s}}",
           requests ? requests : "", extra ? "," : "", extra ? extra : "");
  obj = gq_test_json_sq(buf);
  if (gq_pod_decode(obj, p, err, sizeof(err)) != 0)
    fail_msg("pod %s: %s", buf, err);
  json_decref(obj);
}

static void pod_with_tolerations(struct gq_pod *p, const char *tols)
{
  char extra[4096];

  snprintf(extra, sizeof(extra), "'tolerations':[%s]", tols ? tols : "");
  pod_load(p, NULL, extra);
}

static int str_eq(const char *a, const char *b)
{
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* ---- tolerations -------------------------------------------------------- */

static const struct gq_taint t_gpu = {"nvidia.com/gpu", "true", "NoSchedule"};
static const struct gq_taint t_cordon = {GQ_TAINT_UNSCHEDULABLE, "",
                                         "NoSchedule"};
static const struct gq_taint t_notready = {"node.kubernetes.io/not-ready", "",
                                           "NoExecute"};
static const struct gq_taint t_spot = {"example.com/spot", "yes",
                                       "PreferNoSchedule"};

static const struct {
  const char *name;
  const char *tol; /* one toleration, JSON with single quotes */
  const struct gq_taint *taint;
  int want;
} tol_cases[] = {
    {"Equal: key, value and effect match",
     "{'key':'nvidia.com/gpu','operator':'Equal','value':'true',"
     "'effect':'NoSchedule'}",
     &t_gpu, 1},
    {"Equal: value mismatch",
     "{'key':'nvidia.com/gpu','operator':'Equal','value':'false',"
     "'effect':'NoSchedule'}",
     &t_gpu, 0},
    {"no operator means Equal", "{'key':'nvidia.com/gpu','value':'true'}",
     &t_gpu, 1},
    {"no operator, value mismatch", "{'key':'nvidia.com/gpu','value':'1'}",
     &t_gpu, 0},
    {"Equal with empty value vs valueless taint",
     "{'key':'node.kubernetes.io/unschedulable','operator':'Equal',"
     "'effect':'NoSchedule'}",
     &t_cordon, 1},
    {"Equal with empty value vs value 'true'",
     "{'key':'nvidia.com/gpu','operator':'Equal'}", &t_gpu, 0},
    {"Exists ignores the value", "{'key':'nvidia.com/gpu','operator':'Exists'}",
     &t_gpu, 1},
    {"Exists: key mismatch", "{'key':'nvidia.com/gpu','operator':'Exists'}",
     &t_cordon, 0},
    {"keys are case-sensitive", "{'key':'NVIDIA.com/gpu','operator':'Exists'}",
     &t_gpu, 0},
    {"empty key + Exists tolerates a NoExecute taint", "{'operator':'Exists'}",
     &t_notready, 1},
    {"empty key + Exists tolerates a NoSchedule taint", "{'operator':'Exists'}",
     &t_gpu, 1},
    {"empty key + Exists, effect NoSchedule vs NoExecute",
     "{'operator':'Exists','effect':'NoSchedule'}", &t_notready, 0},
    {"empty key + Exists, effect NoSchedule vs the cordon",
     "{'operator':'Exists','effect':'NoSchedule'}", &t_cordon, 1},
    {"effect mismatch NoExecute vs NoSchedule",
     "{'key':'nvidia.com/gpu','operator':'Exists','effect':'NoExecute'}",
     &t_gpu, 0},
    {"effect NoExecute with tolerationSeconds still matches",
     "{'key':'node.kubernetes.io/not-ready','operator':'Exists',"
     "'effect':'NoExecute','tolerationSeconds':300}",
     &t_notready, 1},
    {"PreferNoSchedule matched by value",
     "{'key':'example.com/spot','operator':'Equal','value':'yes',"
     "'effect':'PreferNoSchedule'}",
     &t_spot, 1},
    {"effect mismatch NoSchedule vs PreferNoSchedule",
     "{'key':'example.com/spot','operator':'Exists','effect':'NoSchedule'}",
     &t_spot, 0},
};

static void test_toleration_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < NELEM(tol_cases); i++) {
    struct gq_pod p;
    int got;

    pod_with_tolerations(&p, tol_cases[i].tol);
    assert_int_equal(p.sched.n_tolerations, 1);
    got = gq_toleration_tolerates(&p.sched.tolerations[0], tol_cases[i].taint);
    if (got != tol_cases[i].want)
      fail_msg("%s: got %d want %d", tol_cases[i].name, got, tol_cases[i].want);
    gq_pod_release(&p);
  }
}

/* ToleratesTaint skips the key check for any empty key, not only with
 * Exists; the apiserver rejects such a toleration, so only a struct built
 * by hand shows it. */
static void test_toleration_empty_key_equal(void **state)
{
  struct gq_toleration t = {"", GQ_TOL_EQUAL, "true", "", -1};

  (void)state;
  assert_int_equal(gq_toleration_tolerates(&t, &t_gpu), 1);
  assert_int_equal(gq_toleration_tolerates(&t, &t_cordon), 0);
}

/* ---- untolerated taints per fixture ------------------------------------- */

#define TWO_TAINTS                                                             \
  "[{'key':'a.example.com/x','value':'1','effect':'NoSchedule'},"              \
  "{'key':'b.example.com/y','effect':'NoExecute'}]"

static const struct {
  const char *name;
  const char *file;
  const char *taints; /* replaces spec.taints when not NULL */
  const char *tols;   /* toleration list members */
  int noexecute_only;
  const char *want_key; /* NULL: no blocking taint */
} taint_cases[] = {
    {"T4 GPU taint blocks a plain pod", T4_NODE, NULL, NULL, 0,
     "nvidia.com/gpu"},
    {"T4 GPU taint tolerated by Exists", T4_NODE, NULL,
     "{'key':'nvidia.com/gpu','operator':'Exists','effect':'NoSchedule'}", 0,
     NULL},
    {"NoSchedule does not evict", T4_NODE, NULL, NULL, 1, NULL},
    {"shared T4, wrong value", T4_SHARED, NULL,
     "{'key':'nvidia.com/gpu','operator':'Equal','value':'false'}", 0,
     "nvidia.com/gpu"},
    {"shared T4, right value", T4_SHARED, NULL,
     "{'key':'nvidia.com/gpu','operator':'Equal','value':'true',"
     "'effect':'NoSchedule'}",
     0, NULL},
    {"cordoned H100 carries the unschedulable taint", CORDONED, NULL, NULL, 0,
     GQ_TAINT_UNSCHEDULABLE},
    {"cordon taint tolerated", CORDONED, NULL,
     "{'key':'node.kubernetes.io/unschedulable','operator':'Exists'}", 0, NULL},
    {"untainted H100", H100_NODE, NULL, NULL, 0, NULL},
    {"MIG node has no taints", MIG_NODE, NULL, NULL, 0, NULL},
    {"PreferNoSchedule never blocks", A100_NODE,
     "[{'key':'example.com/spot','value':'yes','effect':'PreferNoSchedule'}]",
     NULL, 0, NULL},
    {"NoExecute after PreferNoSchedule", A100_NODE,
     "[{'key':'example.com/spot','effect':'PreferNoSchedule'},"
     "{'key':'node.kubernetes.io/not-ready','effect':'NoExecute'}]",
     NULL, 0, "node.kubernetes.io/not-ready"},
    {"NoExecute counts for eviction", A100_NODE,
     "[{'key':'node.kubernetes.io/not-ready','effect':'NoExecute'}]", NULL, 1,
     "node.kubernetes.io/not-ready"},
    {"first untolerated in order", A100_NODE, TWO_TAINTS, NULL, 0,
     "a.example.com/x"},
    {"second when the first is tolerated", A100_NODE, TWO_TAINTS,
     "{'key':'a.example.com/x','operator':'Exists'}", 0, "b.example.com/y"},
    {"eviction view skips the NoSchedule one", A100_NODE, TWO_TAINTS,
     "{'key':'b.example.com/y','operator':'Exists'}", 1, NULL},
    {"blanket toleration", A100_NODE, TWO_TAINTS, "{'operator':'Exists'}", 0,
     NULL},
};

static void test_untolerated_taint(void **state)
{
  (void)state;
  for (size_t i = 0; i < NELEM(taint_cases); i++) {
    struct gq_node n;
    struct gq_pod p;
    const struct gq_taint *t;

    node_load(&n, taint_cases[i].file, taint_cases[i].taints, 0);
    pod_with_tolerations(&p, taint_cases[i].tols);
    t = gq_untolerated_taint(&p.sched, &n, taint_cases[i].noexecute_only);
    if (!str_eq(t ? t->key : NULL, taint_cases[i].want_key))
      fail_msg("%s: got %s want %s", taint_cases[i].name, t ? t->key : "(none)",
               taint_cases[i].want_key ? taint_cases[i].want_key : "(none)");
    gq_pod_release(&p);
    gq_node_release(&n);
  }
}

/* ---- node selector and required node affinity --------------------------- */

/* A term with one matchExpressions / matchFields requirement. */
#define EXPR(k, op, vals)                                                      \
  "{'matchExpressions':[{'key':'" k "','operator':'" op "'" vals "}]}"
#define FIELD(k, op, vals)                                                     \
  "{'matchFields':[{'key':'" k "','operator':'" op "'" vals "}]}"
#define V(...) ",'values':[" __VA_ARGS__ "]"
#define PRODUCT "nvidia.com/gpu.product"
#define MIG_NAME "gpu-a100-r07-n05"

static const struct {
  const char *name;
  const char *file;     /* NULL: the MIG node */
  const char *selector; /* spec.nodeSelector object, or NULL */
  const char *terms;    /* nodeSelectorTerms members, or NULL */
  int want;
} aff_cases[] = {
    {"no constraints", NULL, NULL, NULL, 1},
    {"nodeSelector equal", NULL, "{'" PRODUCT "':'NVIDIA-A100-SXM4-80GB'}",
     NULL, 1},
    {"nodeSelector other value", NULL,
     "{'" PRODUCT "':'NVIDIA-H100-80GB-HBM3'}", NULL, 0},
    {"nodeSelector absent key", NULL, "{'gpu-type':'a100'}", NULL, 0},
    {"nodeSelector empty value vs empty label", NULL,
     "{'node-role.kubernetes.io/worker':''}", NULL, 1},
    {"nodeSelector all keys ANDed", NULL,
     "{'" PRODUCT "':'NVIDIA-A100-SXM4-80GB','nvidia.com/mig.strategy':"
     "'single'}",
     NULL, 0},
    {"In listed", NULL, NULL,
     EXPR(PRODUCT, "In", V("'NVIDIA-H100-80GB-HBM3','NVIDIA-A100-SXM4-80GB'")),
     1},
    {"In not listed", NULL, NULL, EXPR(PRODUCT, "In", V("'Tesla-T4'")), 0},
    {"In on an absent label", NULL, NULL, EXPR("gpu-type", "In", V("'a100'")),
     0},
    {"NotIn on an absent label", NULL, NULL,
     EXPR("gpu-type", "NotIn", V("'a100'")), 1},
    {"NotIn listed", NULL, NULL,
     EXPR(PRODUCT, "NotIn", V("'NVIDIA-A100-SXM4-80GB'")), 0},
    {"NotIn not listed", NULL, NULL, EXPR(PRODUCT, "NotIn", V("'Tesla-T4'")),
     1},
    {"Exists on an empty-valued label", NULL, NULL,
     EXPR("node-role.kubernetes.io/worker", "Exists", ""), 1},
    {"Exists on an absent label", NULL, NULL, EXPR("gpu-type", "Exists", ""),
     0},
    {"DoesNotExist on an absent label", NULL, NULL,
     EXPR("gpu-type", "DoesNotExist", ""), 1},
    {"DoesNotExist on a present label", NULL, NULL,
     EXPR(PRODUCT, "DoesNotExist", ""), 0},
    {"Gt below", NULL, NULL, EXPR("nvidia.com/gpu.memory", "Gt", V("'40000'")),
     1},
    {"Gt equal is not greater", NULL, NULL,
     EXPR("nvidia.com/gpu.memory", "Gt", V("'81920'")), 0},
    {"Lt above", NULL, NULL, EXPR("nvidia.com/gpu.count", "Lt", V("'16'")), 1},
    {"Lt equal is not less", NULL, NULL,
     EXPR("nvidia.com/gpu.count", "Lt", V("'8'")), 0},
    {"Gt on an absent label", NULL, NULL, EXPR("gpu-gen", "Gt", V("'1'")), 0},
    {"Gt on a non-integer label", NULL, NULL,
     EXPR("feature.node.kubernetes.io/kernel-version.full", "Gt", V("'4'")), 0},
    {"Lt on a non-integer label", NULL, NULL,
     EXPR("feature.node.kubernetes.io/kernel-version.full", "Lt", V("'9'")), 0},
    {"Gt with a non-integer value", NULL, NULL,
     EXPR("nvidia.com/gpu.count", "Gt", V("'4x'")), 0},
    {"Gt with an out-of-range value", NULL, NULL,
     EXPR("nvidia.com/gpu.count", "Gt", V("'-9223372036854775809'")), 0},
    {"Gt on a label with a leading zero", NULL, NULL,
     EXPR("nvidia.com/cuda.driver-version.revision", "Gt", V("'4'")), 1},
    {"Gt -1 is not a valid label value", NULL, NULL,
     EXPR("nvidia.com/gpu.count", "Gt", V("'-1'")), 0},
    {"invalid value fails even NotIn", NULL, NULL,
     EXPR("gpu-type", "NotIn", V("'not valid'")), 0},
    {"invalid key fails even DoesNotExist", NULL, NULL,
     EXPR("-bad", "DoesNotExist", ""), 0},
    {"invalid requirement fails its whole term", NULL, NULL,
     "{'matchExpressions':[{'key':'gpu-type','operator':'DoesNotExist'},"
     "{'key':'nvidia.com/gpu.count','operator':'Gt','values':['x']}]}",
     0},
    {"matchFields metadata.name In self", NULL, NULL,
     FIELD("metadata.name", "In", V("'" MIG_NAME "'")), 1},
    {"matchFields metadata.name In other", NULL, NULL,
     FIELD("metadata.name", "In", V("'gpu-a100-r07-n03'")), 0},
    {"matchFields metadata.name NotIn other", NULL, NULL,
     FIELD("metadata.name", "NotIn", V("'gpu-a100-r07-n03'")), 1},
    {"matchFields metadata.name NotIn self", NULL, NULL,
     FIELD("metadata.name", "NotIn", V("'" MIG_NAME "'")), 0},
    {"matchFields other key never matches", NULL, NULL,
     FIELD("metadata.namespace", "NotIn", V("'x'")), 0},
    {"matchFields needs exactly one value", NULL, NULL,
     FIELD("metadata.name", "In", V("'" MIG_NAME "','x'")), 0},
    {"matchFields Exists is not valid", NULL, NULL,
     FIELD("metadata.name", "Exists", ""), 0},
    {"empty term matches nothing", NULL, NULL, "{}", 0},
    {"empty term ORed with a matching term", NULL, NULL,
     "{}," EXPR(PRODUCT, "Exists", ""), 1},
    {"terms ORed: neither matches", NULL, NULL,
     EXPR(PRODUCT, "In", V("'Tesla-T4'")) "," EXPR("gpu-type", "Exists", ""),
     0},
    {"terms ORed: the second matches", NULL, NULL,
     EXPR(PRODUCT, "In", V("'Tesla-T4'")) "," EXPR("nvidia.com/gpu.count", "Gt",
                                                   V("'4'")),
     1},
    {"within a term: expressions ANDed", NULL, NULL,
     "{'matchExpressions':[{'key':'" PRODUCT "','operator':'Exists'},"
     "{'key':'gpu-type','operator':'Exists'}]}",
     0},
    {"within a term: expression and field ANDed", NULL, NULL,
     "{'matchExpressions':[{'key':'" PRODUCT "','operator':'Exists'}],"
     "'matchFields':[{'key':'metadata.name','operator':'In',"
     "'values':['other']}]}",
     0},
    {"within a term: expression and field both hold", NULL, NULL,
     "{'matchExpressions':[{'key':'" PRODUCT "','operator':'Exists'}],"
     "'matchFields':[{'key':'metadata.name','operator':'In',"
     "'values':['" MIG_NAME "']}]}",
     1},
    {"nodeSelector holds, affinity fails", NULL,
     "{'" PRODUCT "':'NVIDIA-A100-SXM4-80GB'}", EXPR("gpu-type", "Exists", ""),
     0},
    {"affinity holds, nodeSelector fails", NULL, "{'gpu-type':'a100'}",
     EXPR(PRODUCT, "Exists", ""), 0},
    {"hostname pin on the chosen node", NULL, NULL,
     EXPR("kubernetes.io/hostname", "In", V("'" MIG_NAME "'")), 1},
    {"hostname pin elsewhere", H100_NODE, NULL,
     EXPR("kubernetes.io/hostname", "In", V("'" MIG_NAME "'")), 0},
};

static void affinity_pod(struct gq_pod *p, const char *selector,
                         const char *terms)
{
  char extra[4096];
  int len = 0;

  extra[0] = '\0';
  if (selector)
    len = snprintf(extra, sizeof(extra), "'nodeSelector':%s", selector);
  if (terms)
    snprintf(extra + len, sizeof(extra) - (size_t)len,
             "%s'affinity':{'nodeAffinity':{'requiredDuringScheduling"
             "IgnoredDuringExecution':{'nodeSelectorTerms':[%s]}}}",
             selector ? "," : "", terms);
  pod_load(p, NULL, extra[0] ? extra : NULL);
}

static void test_node_affinity_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < NELEM(aff_cases); i++) {
    struct gq_node n;
    struct gq_pod p;
    int got;

    node_load(&n, aff_cases[i].file ? aff_cases[i].file : MIG_NODE, NULL, 0);
    affinity_pod(&p, aff_cases[i].selector, aff_cases[i].terms);
    got = gq_node_selector_matches(&p.sched, &n);
    if (got != aff_cases[i].want)
      fail_msg("%s: got %d want %d", aff_cases[i].name, got, aff_cases[i].want);
    gq_pod_release(&p);
    gq_node_release(&n);
  }
}

/* ---- resource fit ------------------------------------------------------- */

static const struct {
  const char *name;
  const char *file;
  const char *used; /* requests of each pod already on the node */
  int used_n;       /* how many such pods */
  const char *req;  /* requests of the pod to place */
  const char *want; /* resource that does not fit, NULL if it fits */
  const char *want_why;
} fit_cases[] = {
    {"8 GPUs on an empty H100", H100_NODE, NULL, 0,
     "'nvidia.com/gpu':8,'cpu':'32','memory':'256Gi'", NULL, ""},
    {"4 GPUs into the 4 left", H100_NODE, "'nvidia.com/gpu':4", 1,
     "'nvidia.com/gpu':4", NULL, ""},
    {"8 GPUs with 4 used", H100_NODE, "'nvidia.com/gpu':4", 1,
     "'nvidia.com/gpu':8", "nvidia.com/gpu",
     "Insufficient nvidia.com/gpu (requested 8, free 4 of 8)"},
    {"GPUs exhausted", H100_NODE, "'nvidia.com/gpu':2", 4, "'nvidia.com/gpu':1",
     "nvidia.com/gpu",
     "Insufficient nvidia.com/gpu (requested 1, free 0 of 8)"},
    {"MIG slices all free", MIG_NODE, NULL, 0, "'nvidia.com/mig-1g.10gb':4",
     NULL, ""},
    {"MIG slice short", MIG_NODE, "'nvidia.com/mig-1g.10gb':1", 3,
     "'nvidia.com/mig-1g.10gb':2", "nvidia.com/mig-1g.10gb",
     "Insufficient nvidia.com/mig-1g.10gb (requested 2, free 1 of 4)"},
    {"MIG slices do not count as full GPUs", MIG_NODE,
     "'nvidia.com/mig-3g.40gb':2", 1, "'nvidia.com/gpu':6", NULL, ""},
    {"MIG profile absent on a non-MIG node", H100_NODE, NULL, 0,
     "'nvidia.com/mig-1g.10gb':1", "nvidia.com/mig-1g.10gb",
     "Insufficient nvidia.com/mig-1g.10gb (requested 1, free 0 of 0)"},
    {"allocatable 0 after the device plugin left", ZERO_NODE, NULL, 0,
     "'nvidia.com/gpu':1", "nvidia.com/gpu",
     "Insufficient nvidia.com/gpu (requested 1, free 0 of 0)"},
    {"allocatable 0 node still runs CPU pods", ZERO_NODE, NULL, 0, "'cpu':'1'",
     NULL, ""},
    {"cpu beyond allocatable", T4_NODE, NULL, 0, "'cpu':'4'", "cpu",
     "Insufficient cpu (requested 4000m, free 3920m of 3920m)"},
    {"cpu beyond what is left", T4_NODE, "'cpu':'3'", 1, "'cpu':'1'", "cpu",
     "Insufficient cpu (requested 1000m, free 920m of 3920m)"},
    {"cpu exactly what is left", T4_NODE, "'cpu':'3'", 1, "'cpu':'920m'", NULL,
     ""},
    {"memory beyond allocatable", T4_NODE, NULL, 0, "'memory':'16Gi'", "memory",
     "Insufficient memory (requested 17179869184, free 15598116864 of "
     "15598116864)"},
    {"pods limit reached", T4_NODE, "", 29, NULL, "pods",
     "Too many pods (requested 1, free 0 of 29)"},
    {"last pod slot", T4_NODE, "", 28, NULL, NULL, ""},
    {"pods checked before cpu", T4_NODE, "", 29, "'cpu':'100'", "pods",
     "Too many pods (requested 1, free 0 of 29)"},
    {"cpu checked before GPUs", T4_NODE, NULL, 0,
     "'nvidia.com/gpu':2,'cpu':'8'", "cpu",
     "Insufficient cpu (requested 8000m, free 3920m of 3920m)"},
    {"extended resource absent on the node", H100_NODE, NULL, 0,
     "'example.com/fpga':1", "example.com/fpga",
     "Insufficient example.com/fpga (requested 1, free 0 of 0)"},
    {"zero request of an absent resource", H100_NODE, NULL, 0,
     "'example.com/fpga':0", NULL, ""},
    {"ephemeral-storage is not modeled", H100_NODE, NULL, 0,
     "'ephemeral-storage':'10Pi'", NULL, ""},
};

static void usage_fill(struct gq_node_usage *u, const char *req, int n,
                       struct gq_pod *keep)
{
  gq_node_usage_init(u);
  if (!req)
    return;
  pod_load(keep, req, NULL);
  for (int i = 0; i < n; i++)
    gq_node_usage_add(u, &keep->sched, +1);
  gq_pod_release(keep);
}

static void test_fit_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < NELEM(fit_cases); i++) {
    struct gq_node n;
    struct gq_pod used_pod, p;
    struct gq_node_usage u;
    char why[256];
    const char *got;

    node_load(&n, fit_cases[i].file, NULL, 0);
    usage_fill(&u, fit_cases[i].used, fit_cases[i].used_n, &used_pod);
    pod_load(&p, fit_cases[i].req, NULL);
    got = gq_fit_check(&n, &u, &p.sched, why, sizeof(why));
    if (!str_eq(got, fit_cases[i].want) ||
        strcmp(why, fit_cases[i].want_why) != 0)
      fail_msg("%s: got %s \"%s\", want %s \"%s\"", fit_cases[i].name,
               got ? got : "(fits)", why,
               fit_cases[i].want ? fit_cases[i].want : "(fits)",
               fit_cases[i].want_why);
    gq_pod_release(&p);
    gq_node_usage_release(&u);
    gq_node_release(&n);
  }
}

/* NULL usage is an empty node; why may be omitted. */
static void test_fit_null_args(void **state)
{
  struct gq_node n;
  struct gq_pod p;

  (void)state;
  node_load(&n, MIG_NODE, NULL, 0);
  pod_load(&p, "'nvidia.com/mig-2g.20gb':3", NULL);
  assert_string_equal(gq_fit_check(&n, NULL, &p.sched, NULL, 0),
                      "nvidia.com/mig-2g.20gb");
  gq_pod_release(&p);
  pod_load(&p, "'nvidia.com/mig-2g.20gb':2", NULL);
  assert_null(gq_fit_check(&n, NULL, &p.sched, NULL, 0));
  gq_pod_release(&p);
  gq_node_release(&n);
}

static void test_fit_reason(void **state)
{
  static const char *const cases[][2] = {
      {"nvidia.com/gpu", "OutOfnvidia.com/gpu"},
      {"nvidia.com/mig-1g.10gb", "OutOfnvidia.com/mig-1g.10gb"},
      {"cpu", "OutOfcpu"},
      {"memory", "OutOfmemory"},
      {"pods", "OutOfpods"},
  };
  char buf[64];

  (void)state;
  for (size_t i = 0; i < NELEM(cases); i++) {
    gq_fit_reason(cases[i][0], buf, sizeof(buf));
    assert_string_equal(buf, cases[i][1]);
  }
  gq_fit_reason("nvidia.com/gpu", buf, 6);
  assert_string_equal(buf, "OutOf"); /* truncated, still terminated */
  buf[0] = 'x';
  gq_fit_reason("cpu", buf, 0);
  assert_int_equal(buf[0], 'x');
}

/* ---- eligibility -------------------------------------------------------- */

#define TOL_CORDON(extra) "{'key':'node.kubernetes.io/unschedulable'" extra "}"
#define NO_AFFINITY "node(s) didn't match Pod's node affinity/selector"

static const struct {
  const char *name;
  const char *file;
  int not_ready;
  const char *taints; /* replaces spec.taints when not NULL */
  const char *extra;  /* extra pod spec members */
  const char *want;   /* reason, NULL if eligible */
  const char *want_why;
} elig_cases[] = {
    {"ready H100", H100_NODE, 0, NULL, NULL, NULL, ""},
    {"cordoned", CORDONED, 0, NULL, NULL, "Unschedulable",
     "node(s) were unschedulable"},
    {"cordoned, toleration Exists NoSchedule", CORDONED, 0, NULL,
     "'tolerations':[" TOL_CORDON(",'operator':'Exists','effect':"
                                  "'NoSchedule'") "]",
     NULL, ""},
    {"cordoned, toleration Equal with empty value", CORDONED, 0, NULL,
     "'tolerations':[" TOL_CORDON(",'operator':'Equal','effect':"
                                  "'NoSchedule'") "]",
     NULL, ""},
    {"cordoned, toleration for NoExecute only", CORDONED, 0, NULL,
     "'tolerations':[" TOL_CORDON(",'operator':'Exists','effect':"
                                  "'NoExecute'") "]",
     "Unschedulable", "node(s) were unschedulable"},
    {"cordoned, blanket toleration", CORDONED, 0, NULL,
     "'tolerations':[{'operator':'Exists'}]", NULL, ""},
    {"cordoned flag without the taint", CORDONED, 0, "[]", NULL,
     "Unschedulable", "node(s) were unschedulable"},
    {"cordoned flag without the taint, tolerated", CORDONED, 0, "[]",
     "'tolerations':[" TOL_CORDON(",'operator':'Exists'") "]", NULL, ""},
    {"cordon tolerated, another taint is not", CORDONED, 0,
     "[{'key':'node.kubernetes.io/unschedulable','effect':'NoSchedule'},"
     "{'key':'nvidia.com/gpu','value':'true','effect':'NoSchedule'}]",
     "'tolerations':[" TOL_CORDON(",'operator':'Exists'") "]", "Taint",
     "node(s) had untolerated taint {nvidia.com/gpu: true}"},
    {"not ready", H100_NODE, 1, NULL, NULL, "NotReady",
     "node(s) were not ready"},
    {"not ready, blanket toleration", H100_NODE, 1, NULL,
     "'tolerations':[{'operator':'Exists'}]", "NotReady",
     "node(s) were not ready"},
    {"not ready before cordoned", CORDONED, 1, NULL, NULL, "NotReady",
     "node(s) were not ready"},
    {"T4 taint", T4_NODE, 0, NULL, NULL, "Taint",
     "node(s) had untolerated taint {nvidia.com/gpu: true}"},
    {"T4 taint tolerated", T4_NODE, 0, NULL,
     "'tolerations':[{'key':'nvidia.com/gpu','operator':'Exists'}]", NULL, ""},
    {"valueless taint message", A100_NODE, 0,
     "[{'key':'example.com/maintenance','effect':'NoExecute'}]", NULL, "Taint",
     "node(s) had untolerated taint {example.com/maintenance: }"},
    {"taint before selector", T4_NODE, 0, NULL,
     "'nodeSelector':{'gpu-type':'a100'}", "Taint",
     "node(s) had untolerated taint {nvidia.com/gpu: true}"},
    {"selector after the taint is tolerated", T4_NODE, 0, NULL,
     "'nodeSelector':{'gpu-type':'a100'},'tolerations':[{'key':"
     "'nvidia.com/gpu','operator':'Exists'}]",
     "NodeAffinity", NO_AFFINITY},
    {"pinned to this node", H100_NODE, 0, NULL,
     "'nodeSelector':{'kubernetes.io/hostname':'gpu-h100-r12-n02'}", NULL, ""},
    {"pinned elsewhere", H100_NODE, 0, NULL,
     "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuring"
     "Execution':{'nodeSelectorTerms':[" EXPR("kubernetes.io/hostname", "In",
                                              V("'gpu-h100-r12-n07'")) "]}}}",
     "NodeAffinity", NO_AFFINITY},
    {"GPU capacity is not checked here", ZERO_NODE, 0, NULL, NULL, NULL, ""},
};

static void test_eligible_table(void **state)
{
  (void)state;
  for (size_t i = 0; i < NELEM(elig_cases); i++) {
    struct gq_node n;
    struct gq_pod p;
    char why[256];
    const char *got;

    node_load(&n, elig_cases[i].file, elig_cases[i].taints,
              elig_cases[i].not_ready);
    pod_load(&p, "'nvidia.com/gpu':1", elig_cases[i].extra);
    got = gq_node_eligible(&n, &p.sched, why, sizeof(why));
    if (!str_eq(got, elig_cases[i].want) ||
        strcmp(why, elig_cases[i].want_why) != 0)
      fail_msg("%s: got %s \"%s\", want %s \"%s\"", elig_cases[i].name,
               got ? got : "(eligible)", why,
               elig_cases[i].want ? elig_cases[i].want : "(eligible)",
               elig_cases[i].want_why);
    gq_pod_release(&p);
    gq_node_release(&n);
  }
}

/* ---- usage -------------------------------------------------------------- */

static const char *const usage_pods[] = {
    "'nvidia.com/gpu':8,'cpu':'4','memory':'16Gi'",
    "'nvidia.com/mig-1g.10gb':2,'nvidia.com/mig-2g.20gb':1,'cpu':'500m'",
    "'example.com/r1':1,'example.com/r2':2,'example.com/r3':3,"
    "'example.com/r4':4,'example.com/r5':5,'example.com/r6':6",
    "",
    "'nvidia.com/gpu':2,'memory':'1Gi'",
};
#define NUSAGE NELEM(usage_pods)

static void check_usage_zero(const struct gq_node_usage *u)
{
  assert_int_equal(u->cpu_milli, 0);
  assert_int_equal(u->memory_bytes, 0);
  assert_int_equal(u->pods, 0);
  for (size_t i = 0; i < u->n_ext; i++)
    if (u->ext[i].value != 0)
      fail_msg("%s left at %lld", u->ext[i].name, (long long)u->ext[i].value);
}

/* Adding every pod and removing them in another order restores zero. */
static void test_usage_symmetry(void **state)
{
  static const size_t remove_order[NUSAGE] = {3, 1, 4, 0, 2};
  struct gq_pod p[NUSAGE];
  struct gq_node_usage u;

  (void)state;
  gq_node_usage_init(&u);
  for (size_t i = 0; i < NUSAGE; i++) {
    pod_load(&p[i], usage_pods[i], NULL);
    gq_node_usage_add(&u, &p[i].sched, +1);
  }
  assert_int_equal(gq_node_usage_get(&u, "pods"), 5);
  assert_int_equal(gq_node_usage_get(&u, "cpu"), 4500);
  assert_int_equal(gq_node_usage_get(&u, "memory"), 17 * GI);
  assert_int_equal(gq_node_usage_get(&u, "nvidia.com/gpu"), 10);
  assert_int_equal(gq_node_usage_get(&u, "nvidia.com/mig-1g.10gb"), 2);
  assert_int_equal(gq_node_usage_get(&u, "example.com/r6"), 6);
  assert_int_equal(gq_node_usage_get(&u, "example.com/none"), 0);
  assert_true(u.cap_ext >= u.n_ext && u.n_ext == 9); /* grew past 4 and 8 */
  for (size_t i = 0; i < NUSAGE; i++) {
    gq_node_usage_add(&u, &p[remove_order[i]].sched, -1);
    gq_pod_release(&p[remove_order[i]]);
  }
  check_usage_zero(&u);
  gq_node_usage_release(&u);
  assert_null(u.ext);
  assert_int_equal(u.n_ext, 0);
}

/* Names are copied: the usage outlives the pods (ASan would flag a
 * borrowed name), and a removed pod frees its slots for the fit check. */
static void test_usage_outlives_pods(void **state)
{
  struct gq_node n;
  struct gq_pod p;
  struct gq_node_usage u;

  (void)state;
  node_load(&n, H100_NODE, NULL, 0);
  gq_node_usage_init(&u);
  pod_load(&p, "'nvidia.com/gpu':8", NULL);
  gq_node_usage_add(&u, &p.sched, +1);
  gq_pod_release(&p);
  assert_int_equal(gq_node_usage_get(&u, "nvidia.com/gpu"), 8);
  pod_load(&p, "'nvidia.com/gpu':1", NULL);
  assert_string_equal(gq_fit_check(&n, &u, &p.sched, NULL, 0),
                      "nvidia.com/gpu");
  gq_node_usage_add(&u, &p.sched, +1);
  gq_node_usage_add(&u, &p.sched, -1);
  gq_pod_release(&p);
  pod_load(&p, "'nvidia.com/gpu':8", NULL);
  gq_node_usage_add(&u, &p.sched, -1);
  assert_null(gq_fit_check(&n, &u, &p.sched, NULL, 0));
  check_usage_zero(&u);
  gq_pod_release(&p);
  gq_node_usage_release(&u);
  gq_node_release(&n);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_toleration_table),
      cmocka_unit_test(test_toleration_empty_key_equal),
      cmocka_unit_test(test_untolerated_taint),
      cmocka_unit_test(test_node_affinity_table),
      cmocka_unit_test(test_fit_table),
      cmocka_unit_test(test_fit_null_args),
      cmocka_unit_test(test_fit_reason),
      cmocka_unit_test(test_eligible_table),
      cmocka_unit_test(test_usage_symmetry),
      cmocka_unit_test(test_usage_outlives_pods),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
