/* Flavor assignment (decide/assign.h): lines tried in TeamQuota order,
 * products filtering lines, quota refusals, capacity misses, borrowing in a
 * cohort from ledger use, and the ledger keys. Inline JSON is written with
 * single quotes (gq_test_json_sq()).
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
#include "tests/support/fixture.h"

#define H100 "NVIDIA-H100-80GB-HBM3"
#define A100 "NVIDIA-A100-SXM4-80GB"

static void node(struct gq_node *n, const char *name, const char *product)
{
  char buf[2048];

  snprintf(buf, sizeof(buf),
           "{'metadata':{'name':'%s','labels':{'nvidia.com/gpu.product':'%s'}},"
           "'spec':{},'status':{'allocatable':{'cpu':'64','memory':'512Gi',"
           "'pods':'110','nvidia.com/gpu':'8'},"
           "'conditions':[{'type':'Ready','status':'True'}]}}",
           name, product);
  gq_test_node_sq(n, buf);
}

/* cohort: "" for none; res: the members of spec.resources. */
static void team(struct gq_teamquota *t, const char *name, const char *cohort,
                 const char *res)
{
  char buf[2048], co[128] = "";

  if (cohort[0])
    snprintf(co, sizeof(co), "'cohort':'%s',", cohort);
  snprintf(buf, sizeof(buf),
           "{'apiVersion':'gpuq.dev/v1alpha1','kind':'TeamQuota',"
           "'metadata':{'name':'%s'},'spec':{'namespaces':['%s'],%s"
           "'resources':[%s]}}",
           name, name, co, res);
  gq_test_teamquota_sq(t, buf);
}

static void job(struct gq_gpujob *j, int gpus, const char *gpu)
{
  char buf[2048];

  snprintf(buf, sizeof(buf),
           "{'apiVersion':'gpuq.dev/v1alpha1','kind':'GpuJob',"
           "'metadata':{'name':'j','namespace':'ns','uid':'u-1'},"
           "'spec':{'team':'a','gpusPerReplica':%d,'gpu':{%s},"
           "'template':{'spec':{'containers':[{'name':'c','image':'x'}]}}}}",
           gpus, gpu);
  gq_test_gpujob_sq(j, buf);
}

struct fixture {
  struct gq_node nodes[2];
  const struct gq_node *ptr[2];
  struct gq_snapshot cap;
};

/* One H100 and one A100 node, or two A100 nodes when no_h100. */
static void start(struct fixture *f, int no_h100)
{
  node(&f->nodes[0], "gpu-0", no_h100 ? A100 : H100);
  node(&f->nodes[1], "gpu-1", A100);
  f->ptr[0] = &f->nodes[0];
  f->ptr[1] = &f->nodes[1];
  gq_snapshot_init(&f->cap, f->ptr, 2, NULL);
}

static void end(struct fixture *f)
{
  gq_snapshot_release(&f->cap);
  gq_node_release(&f->nodes[0]);
  gq_node_release(&f->nodes[1]);
}

static void test_lines_in_order(void **state)
{
  struct fixture f;
  struct gq_teamquota a;
  const struct gq_teamquota *teams[1] = {&a};
  struct gq_gpujob j;
  struct gq_assignment as;
  size_t out[1];
  char why[1024];
  struct gq_ledger_use use[1] = {{0, H100, 8}};

  (void)state;
  start(&f, 0);
  team(&a, "a", "",
       "{'flavor':'" H100 "','nominal':8},{'flavor':'*','nominal':8}");
  job(&j, 4, "");

  /* Nothing used: the first line, on the H100 node. */
  assert_int_equal(gq_assign_job(&f.cap, &j, teams, 1, 0, NULL, 0, &as, out, why,
                             sizeof(why)), 0);
  assert_int_equal(as.line, 0);
  assert_string_equal(as.key, H100);
  assert_int_equal(as.verdict, GQ_Q_FITS_NOMINAL);
  assert_string_equal(f.cap.nodes[out[0]].node->meta.name, "gpu-0");

  /* H100 quota used up (no cohort, no borrowing): the "*" line, any node. */
  assert_int_equal(gq_assign_job(&f.cap, &j, teams, 1, 0, use, 1, &as, out, why,
                             sizeof(why)), 0);
  assert_int_equal(as.line, 1);
  assert_string_equal(as.flavor, "*");
  assert_string_equal(as.key, "*");
  assert_string_equal(why, "");
  gq_gpujob_release(&j);

  /* A job that wants A100 only skips the H100 line. */
  job(&j, 4, "'products':['" A100 "']");
  assert_int_equal(gq_assign_job(&f.cap, &j, teams, 1, 0, NULL, 0, &as, out, why,
                             sizeof(why)), 0);
  assert_int_equal(as.line, 1);
  assert_string_equal(f.cap.nodes[out[0]].node->meta.name, "gpu-1");
  gq_gpujob_release(&j);

  gq_teamquota_release(&a);
  end(&f);
}

static void test_no_line_and_no_capacity(void **state)
{
  struct fixture f;
  struct gq_teamquota a;
  const struct gq_teamquota *teams[1] = {&a};
  struct gq_gpujob j;
  struct gq_assignment as;
  size_t out[1];
  char why[1024], key[GQ_FLAVOR_KEY_MAX];

  (void)state;
  start(&f, 1); /* only A100 nodes */
  team(&a, "a", "", "{'flavor':'" H100 "','nominal':8}");

  job(&j, 1, "'resource':'nvidia.com/mig-1g.10gb'");
  assert_int_equal(gq_assign_job(&f.cap, &j, teams, 1, 0, NULL, 0, &as, out, why,
                             sizeof(why)), GQ_ENOTFOUND);
  assert_string_equal(why, "team 'a' has no quota line for "
                           "nvidia.com/mig-1g.10gb");
  gq_gpujob_release(&j);

  /* Quota allows it, but no node is of the H100 flavor. */
  job(&j, 4, "");
  assert_int_equal(gq_assign_job(&f.cap, &j, teams, 1, 0, NULL, 0, &as, out, why,
                             sizeof(why)), GQ_ECAPACITY);
  assert_string_equal(as.flavor, H100);
  assert_string_equal(
      why, "flavor " H100 ": 0/2 nodes fit 1 replica of 4 nvidia.com/gpu: "
           "2 node(s) had GPU product " A100 ", not flavor " H100);
  gq_gpujob_release(&j);

  gq_assign_flavor_key("nvidia.com/mig-1g.10gb", "*", key, sizeof(key));
  assert_string_equal(key, "nvidia.com/mig-1g.10gb:*");
  gq_teamquota_release(&a);
  end(&f);
}

static void test_borrowing_in_cohort(void **state)
{
  struct fixture f;
  struct gq_teamquota a, b;
  const struct gq_teamquota *teams[2] = {&a, &b};
  struct gq_gpujob j;
  struct gq_assignment as;
  size_t out[1];
  char why[1024];
  struct gq_ledger_use busy[1] = {{1, "*", 8}};

  (void)state;
  start(&f, 0);
  team(&a, "a", "ml", "{'flavor':'*','nominal':0}");
  team(&b, "b", "ml", "{'flavor':'*','nominal':8}");
  job(&j, 4, "");

  /* b's 8 GPUs are idle: a borrows 4. */
  assert_int_equal(gq_assign_job(&f.cap, &j, teams, 2, 0, NULL, 0, &as, out, why,
                             sizeof(why)), 0);
  assert_int_equal(as.verdict, GQ_Q_FITS_BORROWING);
  assert_int_equal(as.borrowed_after, 4);

  /* b uses all of them: a waits, and says why. */
  assert_int_equal(gq_assign_job(&f.cap, &j, teams, 2, 0, busy, 1, &as, out, why,
                             sizeof(why)), GQ_EQUOTA);
  assert_int_equal(as.verdict, GQ_Q_COHORT_EXHAUSTED);
  assert_non_null(strstr(why, "flavor *: "));

  /* Without the cohort, a's nominal 0 never fits. */
  gq_teamquota_release(&a);
  team(&a, "a", "", "{'flavor':'*','nominal':0}");
  assert_int_equal(gq_assign_job(&f.cap, &j, teams, 1, 0, NULL, 0, &as, out, why,
                             sizeof(why)), GQ_EQUOTA);
  assert_int_equal(as.verdict, GQ_Q_ZERO_QUOTA);

  /* No buffer for the message: same answer. */
  assert_int_equal(gq_assign_job(&f.cap, &j, teams, 1, 0, NULL, 0, &as, out,
                             NULL, 0), GQ_EQUOTA);
  gq_teamquota_release(&a);

  /* A zero line never clears; the '*' line's refusal can: that is the
   * reason reported. */
  {
    struct gq_ledger_use full[1] = {{0, "*", 8}};

    team(&a, "a", "",
         "{'flavor':'" H100 "','nominal':0},{'flavor':'*','nominal':8}");
    assert_int_equal(gq_assign_job(&f.cap, &j, teams, 1, 0, full, 1, &as, out,
                               why, sizeof(why)), GQ_EQUOTA);
    assert_int_equal(as.line, 1);
    assert_int_equal(as.verdict, GQ_Q_OVER_NOMINAL_NO_BORROW);
  }

  gq_gpujob_release(&j);
  gq_teamquota_release(&a);
  gq_teamquota_release(&b);
  end(&f);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lines_in_order),
      cmocka_unit_test(test_no_line_and_no_capacity),
      cmocka_unit_test(test_borrowing_in_cohort),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
