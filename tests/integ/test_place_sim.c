/* Placement and pod building against gpuq-sim (DESIGN §3, "gpuq chooses the
 * node; kube-scheduler binds"): read the cluster's Nodes over the API,
 * place a 2-replica gang with decide/place.h, create its Service and
 * pods with controller/podspec.h, and check that the sim's scheduler binds
 * each pod to the node gpuq chose and its kubelet admits and runs it. The
 * sim's invariant checker must report no violations and no placement
 * misses. Every wait is for a condition, with a deadline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "api/gpujob.h"
#include "api/node.h"
#include "base/err.h"
#include "controller/podspec.h"
#include "decide/place.h"
#include "tests/support/fixture.h"
#include "tests/support/proc.h"

static struct gq_test_sim sim;

static int group_setup(void **state)
{
  static const char *const args[] = {"--cluster", "clusters/mixed.yaml",
                                     "--time-scale", "20", NULL};
  (void)state;
  return gq_test_sim_start(&sim, args);
}

static int group_teardown(void **state)
{
  (void)state;
  return gq_test_sim_stop(&sim) == 0 ? 0 : -1;
}

static json_t *call(const char *method, const char *path, json_t *body,
                    int want)
{
  char *text = body ? json_dumps(body, 0) : NULL;
  json_t *j = gq_test_sim_call(&sim, method, path, text, want);

  free(text);
  return j;
}

/* Waits (up to 30 s real) until pod 'name' in default is Running; returns
 * its spec.nodeName (heap string) or NULL on timeout. */
static char *wait_running(const char *name)
{
  char path[256];

  snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", name);
  for (int t = 0; t < 30000; t += 20) {
    json_t *p = call("GET", path, NULL, 200);
    const char *ph = json_string_value(
        json_object_get(json_object_get(p, "status"), "phase"));
    char *node = NULL;

    if (ph && strcmp(ph, "Running") == 0)
      node = strdup(json_string_value(
          json_object_get(json_object_get(p, "spec"), "nodeName")));
    json_decref(p);
    if (node)
      return node;
    gq_test_sleep_ms(20);
  }
  return NULL;
}

static void test_gang_placed_bound_and_running(void **state)
{
  json_t *list = call("GET", "/api/v1/nodes", NULL, 200);
  json_t *items = json_object_get(list, "items"), *item, *obj, *svc;
  size_t n = json_array_size(items), i, out[2];
  struct gq_node *nodes = calloc(n, sizeof(*nodes));
  const struct gq_node **ptr = calloc(n, sizeof(*ptr));
  struct gq_snapshot cap;
  struct gq_gpujob j;
  char err[256], why[512], name[GQ_POD_NAME_MAX + 1];

  (void)state;
  assert_true(n > 0);
  json_array_foreach(items, i, item) {
    if (gq_node_decode(item, NULL, &nodes[i], err, sizeof(err)) != 0)
      fail_msg("node %zu: %s", i, err);
    ptr[i] = &nodes[i];
  }
  gq_snapshot_init(&cap, ptr, n, GQ_TOPOLOGY_ZONE);

  obj = gq_test_json_sq(
      "{'apiVersion':'gpuq.dev/v1alpha1','kind':'GpuJob',"
      "'metadata':{'name':'ft','namespace':'default',"
      "'uid':'7d1e0c4a-0000-4000-8000-000000000001'},"
      "'spec':{'team':'research','replicas':2,'gpusPerReplica':8,"
      "'gpu':{'products':['NVIDIA-H100-80GB-HBM3']},"
      "'template':{'metadata':{'annotations':"
      "{'sim.gpuq.dev/run-seconds':'3600'}},"
      "'spec':{'containers':[{'name':'train','image':'t',"
      "'resources':{'requests':{'cpu':'16','memory':'256Gi'}}}]}}}}");
  assert_int_equal(gq_gpujob_decode(obj, &j, err, sizeof(err)), 0);
  json_decref(obj);

  assert_int_equal(gq_place_job(&cap, &j, NULL, out, why, sizeof(why)), 0);
  for (int r = 0; r < 2; r++)
    assert_string_equal(cap.nodes[out[r]].node->gpu_product,
                        "NVIDIA-H100-80GB-HBM3");

  svc = gq_podspec_service(&j);
  json_decref(call("POST", "/api/v1/namespaces/default/services", svc, 201));
  json_decref(svc);
  for (int r = 0; r < 2; r++) {
    json_t *pod = gq_podspec_pod(&j, 1, r, cap.nodes[out[r]].node,
                               NULL);

    json_decref(call("POST", "/api/v1/namespaces/default/pods", pod, 201));
    /* A retried create of the same replica is refused: one pod, ever. */
    json_decref(call("POST", "/api/v1/namespaces/default/pods", pod, 409));
    json_decref(pod);
  }
  for (int r = 0; r < 2; r++) {
    char *bound;

    gq_podspec_pod_name(&j, 1, r, name, sizeof(name));
    bound = wait_running(name);
    assert_non_null(bound);
    assert_string_equal(bound, cap.nodes[out[r]].node->meta.name);
    free(bound);
  }

  {
    json_t *rep = call("GET", "/sim/v1/report", NULL, 200);

    assert_non_null(json_object_get(rep, "invariant_violations"));
    assert_int_equal(
        json_integer_value(json_object_get(rep, "invariant_violations")), 0);
    assert_non_null(json_object_get(rep, "placement_misses"));
    assert_int_equal(
        json_integer_value(json_object_get(rep, "placement_misses")), 0);
    json_decref(rep);
  }

  gq_gpujob_release(&j);
  gq_snapshot_release(&cap);
  for (i = 0; i < n; i++)
    gq_node_release(&nodes[i]);
  free(nodes);
  free(ptr);
  json_decref(list);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gang_placed_bound_and_running),
  };

  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
