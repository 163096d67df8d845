/* gpuq-sim's pod scheduling gates (KEP-3521, KEP-3838): a gated pod stays
 * Pending with PodScheduled=False/SchedulingGated, an update may only
 * remove gates (422 with the apiserver's message otherwise), and removing
 * the last gate while adding node affinity schedules the pod on that
 * node. Waits are deadlines on conditions, never sleeps. */
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

#define POD "/api/v1/namespaces/default/pods/gated"

static int group_setup(void **state)
{
  static const char *const args[] = {"--cluster", "clusters/mixed.yaml",
                                     NULL};
  (void)state;
  return gq_test_sim_start(&sim, args);
}

static int group_teardown(void **state)
{
  (void)state;
  return gq_test_sim_stop(&sim) == 0 ? 0 : -1;
}

/* Waits up to 10 s for the pod's PodScheduled condition to have reason
 * 'reason'; returns the condition's message (static) or fails. */
static const char *wait_scheduled_reason(const char *reason)
{
  static char msg[300];

  for (int t = 0; t < 200; t++) {
    json_t *p = gq_test_sim_call(&sim, "GET", POD, NULL, 200), *c;
    json_t *cs = json_object_get(json_object_get(p, "status"), "conditions");
    size_t i;

    json_array_foreach(cs, i, c) {
      const char *ty = json_string_value(json_object_get(c, "type"));
      const char *rs = json_string_value(json_object_get(c, "reason"));

      if (ty && !strcmp(ty, "PodScheduled") && rs && !strcmp(rs, reason)) {
        snprintf(msg, sizeof(msg), "%s",
                 json_string_value(json_object_get(c, "message")));
        json_decref(p);
        return msg;
      }
    }
    json_decref(p);
    gq_test_sleep_ms(50);
  }
  fail_msg("pod never got PodScheduled reason %s", reason);
  return NULL;
}

static void test_gates(void **state)
{
  json_t *r;
  const char *msg;

  (void)state;
  json_decref(gq_test_sim_call(
      &sim, "POST", "/api/v1/namespaces/default/pods",
      "{\"metadata\":{\"name\":\"gated\"},\"spec\":{\"schedulingGates\":"
      "[{\"name\":\"example.com/a\"}],\"containers\":[{\"name\":\"c\","
      "\"image\":\"i\"}]}}",
      201));
  msg = wait_scheduled_reason("SchedulingGated");
  assert_string_equal(msg,
                      "Scheduling is blocked due to non-empty scheduling "
                      "gates");
  /* settled: the scheduler has looked at it and left it unbound */
  gq_test_sim_wait_virtual(&sim, 1);
  r = gq_test_sim_call(&sim, "GET", POD, NULL, 200);
  assert_null(json_object_get(json_object_get(r, "spec"), "nodeName"));
  assert_string_equal(json_string_value(json_object_get(
                          json_object_get(r, "status"), "phase")),
                      "Pending");
  json_decref(r);
  /* adding a gate is refused */
  r = gq_test_sim_call(&sim, "PATCH", POD,
                       "{\"spec\":{\"schedulingGates\":[{\"name\":"
                       "\"example.com/a\"},{\"name\":\"example.com/b\"}]}}",
                       422);
  assert_non_null(strstr(json_string_value(json_object_get(r, "message")),
                         "spec.schedulingGates: Forbidden: only deletion is "
                         "allowed, but found new scheduling gate "
                         "'example.com/b'"));
  json_decref(r);
  /* removing the last gate while adding node affinity schedules it there */
  json_decref(gq_test_sim_call(
      &sim, "PATCH", POD,
      "{\"spec\":{\"schedulingGates\":null,\"affinity\":{\"nodeAffinity\":"
      "{\"requiredDuringSchedulingIgnoredDuringExecution\":"
      "{\"nodeSelectorTerms\":[{\"matchExpressions\":[{\"key\":"
      "\"kubernetes.io/hostname\",\"operator\":\"In\",\"values\":"
      "[\"gpu-a100-01\"]}]}]}}}}}",
      200));
  assert_true(gq_test_wait_field(&sim, POD, "spec.nodeName", "gpu-a100-01",
                                 10000));
  json_decref(gq_test_sim_call(&sim, "DELETE", POD "?gracePeriodSeconds=0",
                               NULL, 200));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gates),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
