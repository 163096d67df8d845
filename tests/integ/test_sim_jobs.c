/* gpuq-sim's batch/v1 Job controller: a Job runs its pods to completion
 * (conditions, counts), suspend and resume, the backoff limit, and the
 * template's immutability once the Job has started. Pods run for the time
 * their sim.gpuq.dev/run-seconds annotation gives, in virtual time; every
 * wait is a deadline on a condition. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/support/fixture.h"
#include "tests/support/proc.h"

static struct gq_test_sim sim;

#define JOBS "/apis/batch/v1/namespaces/default/jobs"

static int group_setup(void **state)
{
  static const char *const args[] = {"--cluster", "clusters/mixed.yaml",
                                     "--time-scale", "50", NULL};
  (void)state;
  return gq_test_sim_start(&sim, args);
}

static int group_teardown(void **state)
{
  (void)state;
  return gq_test_sim_stop(&sim) == 0 ? 0 : -1;
}

static void create_job(const char *name, const char *spec_extra,
                       const char *ann)
{
  char body[2000];

  snprintf(body, sizeof(body),
           "{\"metadata\":{\"name\":\"%s\"},\"spec\":{%s\"template\":{"
           "\"metadata\":{\"annotations\":{%s}},\"spec\":{\"containers\":"
           "[{\"name\":\"c\",\"image\":\"i\"}]}}}}",
           name, spec_extra, ann);
  json_decref(gq_test_sim_call(&sim, "POST", JOBS, body, 201));
}

/* Status of condition type of Job name ("" if absent). */
static const char *cond(const char *name, const char *type)
{
  static char out[16];
  char path[300];
  json_t *j, *c;
  size_t i;

  snprintf(path, sizeof(path), JOBS "/%s", name);
  j = gq_test_sim_call(&sim, "GET", path, NULL, 200);
  out[0] = '\0';
  json_array_foreach(json_object_get(json_object_get(j, "status"),
                                     "conditions"), i, c) {
    if (!strcmp(json_string_value(json_object_get(c, "type")), type))
      snprintf(out, sizeof(out), "%s",
               json_string_value(json_object_get(c, "status")));
  }
  json_decref(j);
  return out;
}

static void wait_cond(const char *name, const char *type, const char *want)
{
  for (int i = 0; i < 400; i++) {
    if (!strcmp(cond(name, type), want))
      return;
    gq_test_sleep_ms(50);
  }
  fail_msg("job %s: condition %s never became %s", name, type, want);
}

static void wait_status(const char *name, const char *field, const char *want)
{
  char path[300], f[100];

  snprintf(path, sizeof(path), JOBS "/%s", name);
  snprintf(f, sizeof(f), "status.%s", field);
  if (!gq_test_wait_field(&sim, path, f, want, 20000))
    fail_msg("job %s: %s never became %s", name, f, want);
}

/* Pods of Job name that still run or wait: not finished (Succeeded,
 * Failed) and not being deleted. */
static size_t live_pods(const char *name)
{
  char path[300];
  json_t *j, *p;
  size_t i, n = 0;

  snprintf(path, sizeof(path),
           "/api/v1/namespaces/default/pods?labelSelector=job-name%%3D%s",
           name);
  j = gq_test_sim_call(&sim, "GET", path, NULL, 200);
  json_array_foreach(json_object_get(j, "items"), i, p) {
    const char *ph = json_string_value(json_object_get(
        json_object_get(p, "status"), "phase"));

    n += !json_object_get(json_object_get(p, "metadata"),
                          "deletionTimestamp") &&
         strcmp(ph, "Succeeded") && strcmp(ph, "Failed");
  }
  json_decref(j);
  return n;
}

static void test_complete(void **state)
{
  char path[300];
  json_t *j;

  (void)state;
  create_job("done", "\"parallelism\":2,\"completions\":2,",
             "\"sim.gpuq.dev/run-seconds\":\"2\"");
  wait_cond("done", "Complete", "True");
  assert_string_equal(cond("done", "SuccessCriteriaMet"), "True");
  snprintf(path, sizeof(path), JOBS "/done");
  j = gq_test_sim_call(&sim, "GET", path, NULL, 200);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(j, "status"), "succeeded")),
                   2);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(j, "status"), "active")),
                   0);
  assert_non_null(json_object_get(json_object_get(j, "status"),
                                  "completionTime"));
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(j, "spec"), "backoffLimit")),
                   6);
  json_decref(j);
}

static void test_suspend(void **state)
{
  (void)state;
  create_job("sus", "\"parallelism\":2,\"completions\":4,\"suspend\":true,",
             "\"sim.gpuq.dev/run-seconds\":\"100000\"");
  wait_cond("sus", "Suspended", "True");
  gq_test_sim_wait_virtual(&sim, 1);
  assert_int_equal(live_pods("sus"), 0);
  /* never started: the template's scheduling directives may change */
  json_decref(gq_test_sim_call(&sim, "PATCH", JOBS "/sus",
                               "{\"spec\":{\"template\":{\"spec\":{"
                               "\"nodeSelector\":{\"kubernetes.io/os\":"
                               "\"linux\"}}}}}", 200));
  json_decref(gq_test_sim_call(&sim, "PATCH", JOBS "/sus",
                               "{\"spec\":{\"suspend\":false}}", 200));
  wait_cond("sus", "Suspended", "False");
  wait_status("sus", "active", "2");
  assert_int_equal(live_pods("sus"), 2);
  /* started: the template is immutable */
  {
    json_t *st = gq_test_sim_call(
        &sim, "PATCH", JOBS "/sus",
        "{\"spec\":{\"template\":{\"metadata\":{\"labels\":{\"x\":\"y\"}}}}}",
        422);

    assert_non_null(strstr(json_string_value(json_object_get(st, "message")),
                           "spec.template: Invalid value: "));
    assert_non_null(strstr(json_string_value(json_object_get(st, "message")),
                           "field is immutable"));
    json_decref(st);
  }
  json_decref(gq_test_sim_call(&sim, "PATCH", JOBS "/sus",
                               "{\"spec\":{\"suspend\":true}}", 200));
  wait_cond("sus", "Suspended", "True");
  wait_status("sus", "active", "0");
  assert_int_equal(live_pods("sus"), 0);
}

static void test_backoff(void **state)
{
  (void)state;
  create_job("bad", "\"backoffLimit\":1,",
             "\"sim.gpuq.dev/fail-after-seconds\":\"1\","
             "\"sim.gpuq.dev/exit-code\":\"1\"");
  wait_cond("bad", "Failed", "True");
  wait_status("bad", "failed", "2");
  assert_int_equal(live_pods("bad"), 0);
}

/* Pods outside GpuJobs (a Job's, with a gpuq team label and GPUs) do not
 * trip the checker's invariants meant for gpuq's own pods. */
static void test_checker_ignores_job_pods(void **state)
{
  char body[1200];

  (void)state;
  snprintf(body, sizeof(body),
           "{\"metadata\":{\"name\":\"gpus\"},\"spec\":{\"parallelism\":2,"
           "\"completions\":2,\"template\":{\"metadata\":{\"labels\":{"
           "\"gpuq.dev/team\":\"t\"},\"annotations\":{"
           "\"sim.gpuq.dev/run-seconds\":\"1\"}},\"spec\":{\"containers\":"
           "[{\"name\":\"c\",\"image\":\"i\",\"resources\":{\"limits\":"
           "{\"nvidia.com/gpu\":\"8\"}}}]}}}}");
  json_decref(gq_test_sim_call(&sim, "POST", JOBS, body, 201));
  wait_cond("gpus", "Complete", "True");
  gq_test_sim_expect_clean(&sim, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_complete),
      cmocka_unit_test(test_suspend),
      cmocka_unit_test(test_backoff),
      cmocka_unit_test(test_checker_ignores_job_pods),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
