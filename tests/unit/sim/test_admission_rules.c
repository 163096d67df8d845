/* gpuq-sim's update rules for pods and Jobs (sim/jobs.c) and its check of
 * webhook configurations (sim/admission.c), as kube-apiserver validates
 * them: scheduling gates may only be removed (KEP-3521), a gated pod may
 * change its scheduling directives (KEP-3838), a Job's template only while
 * it is suspended and has not started (KEP-2926); a webhook needs a dotted
 * name, sideEffects None or NoneOnDryRun, admissionReviewVersions with v1
 * and, in the sim, a clientConfig.url. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim/admission.h"
#include "sim/sim.h"
#include "tests/support/fixture.h"

static void pod_check(const char *cur, const char *next, int want,
                      const char *msg)
{
  json_t *a = gq_test_json_sq(cur), *b = gq_test_json_sq(next);
  char err[512] = "";

  assert_int_equal(gq_sim_pod_update_check(a, b, err, sizeof(err)), want);
  if (msg)
    assert_string_equal(err, msg);
  json_decref(a);
  json_decref(b);
}

static void test_gates(void **state)
{
  (void)state;
  /* removal: allowed, with a node pin added while gated */
  pod_check("{'spec':{'schedulingGates':[{'name':'g'}],'containers':[]}}",
            "{'spec':{'schedulingGates':[],'containers':[],'affinity':{}}}",
            0, NULL);
  /* a new gate: refused, as the API server words it */
  pod_check("{'spec':{'containers':[]}}",
            "{'spec':{'schedulingGates':[{'name':'x'}],'containers':[]}}",
            -1, "spec.schedulingGates: Forbidden: only deletion is allowed, "
                "but found new scheduling gate 'x'");
  /* gated: its containers stay as they are */
  pod_check("{'spec':{'schedulingGates':[{'name':'g'}],'containers':[]}}",
            "{'spec':{'schedulingGates':[{'name':'g'}],'containers':"
            "[{'name':'c'}]}}", -1, NULL);
}

static void job_check(const char *cur, const char *next, int want)
{
  json_t *a = gq_test_json_sq(cur), *b = gq_test_json_sq(next);
  char err[512] = "";

  assert_int_equal(gq_sim_job_update_check(a, b, err, sizeof(err)), want);
  if (want)
    assert_non_null(strstr(err, "spec.template"));
  json_decref(a);
  json_decref(b);
}

static void test_job_template(void **state)
{
  (void)state;
  /* suspended, never started: labels and affinity may change */
  job_check("{'spec':{'suspend':true,'template':{'spec':{'containers':[]}}}}",
            "{'spec':{'suspend':true,'template':{'metadata':{'labels':"
            "{'a':'b'}},'spec':{'containers':[],'affinity':{}}}}}", 0);
  /* started: nothing of the template */
  job_check("{'spec':{'suspend':true,'template':{'spec':{'containers':[]}}},"
            "'status':{'startTime':'2026-01-01T00:00:00Z'}}",
            "{'spec':{'suspend':true,'template':{'spec':{'containers':[],"
            "'affinity':{}}}}}", -1);
  /* never started, but the containers: refused */
  job_check("{'spec':{'suspend':true,'template':{'spec':{'containers':[]}}}}",
            "{'spec':{'suspend':true,'template':{'spec':{'containers':"
            "[{'name':'c'}]}}}}", -1);
}

static void config_check(const char *hook, const char *field)
{
  json_t *c = gq_test_json_sq(hook);
  char err[512] = "";

  assert_int_equal(gq_sim_webhook_config_check(c, err, sizeof(err)),
                   field ? -1 : 0);
  if (field)
    assert_non_null(strstr(err, field));
  json_decref(c);
}

static void test_configs(void **state)
{
  (void)state;
  config_check("{'webhooks':[{'name':'m.gpuq.dev','sideEffects':'None',"
               "'admissionReviewVersions':['v1'],'clientConfig':{'url':"
               "'https://127.0.0.1:1/mutate'}}]}", NULL);
  config_check("{'webhooks':[{'name':'m','sideEffects':'None',"
               "'admissionReviewVersions':['v1'],'clientConfig':{'url':"
               "'https://x'}}]}", "webhooks[0].name");
  config_check("{'webhooks':[{'name':'m.gpuq.dev','sideEffects':'Some',"
               "'admissionReviewVersions':['v1'],'clientConfig':{'url':"
               "'https://x'}}]}", "webhooks[0].sideEffects");
  config_check("{'webhooks':[{'name':'m.gpuq.dev','sideEffects':'None',"
               "'admissionReviewVersions':['v1beta1'],'clientConfig':"
               "{'url':'https://x'}}]}", "admissionReviewVersions");
  config_check("{'webhooks':[{'name':'m.gpuq.dev','sideEffects':'None',"
               "'admissionReviewVersions':['v1'],'clientConfig':{'service':"
               "{'name':'s','namespace':'n'}}}]}", "clientConfig.url");
}

static void test_users(void **state)
{
  struct gq_sim s;
  char err[256];

  (void)state;
  memset(&s, 0, sizeof(s));
  s.opts.token = "admin";
  assert_int_equal(gq_sim_users_load(&s, "# users\nt1,alice,1001,\"a,b\"\n"
                                         "t2,bob,1002\n", err, sizeof(err)),
                   0);
  assert_string_equal(gq_sim_user_of(&s, "t1")->name, "alice");
  assert_string_equal(gq_sim_user_of(&s, "t1")->groups, "a,b");
  assert_string_equal(gq_sim_user_of(&s, "t2")->name, "bob");
  assert_string_equal(gq_sim_user_of(&s, "admin")->name, "system:admin");
  assert_null(gq_sim_user_of(&s, "nope"));
  assert_null(gq_sim_user_of(&s, NULL));
  assert_int_not_equal(gq_sim_users_load(&s, ",nobody\n", err, sizeof(err)),
                       0);
  assert_non_null(strstr(err, "line 1"));
  gq_sim_users_release(&s);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gates),
      cmocka_unit_test(test_job_template),
      cmocka_unit_test(test_configs),
      cmocka_unit_test(test_users),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
