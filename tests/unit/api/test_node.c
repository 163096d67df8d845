/* Node decoding against every fixture in tests/fixtures/nodes (copied from
 * the shared GPU node fixtures; see tests/fixtures/nodes/README.md), plus
 * malformed nodes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/node.h"
#include "base/err.h"
#include "tests/support/fixture.h"

#define KI 1024LL

static const struct {
  const char *file;
  const char *want_name;
  int64_t want_gpus;     /* allocatable nvidia.com/gpu */
  int64_t want_gpu_cap;  /* capacity nvidia.com/gpu */
  const char *want_product;
  int64_t want_mem_mib;
  int64_t want_count;    /* nvidia.com/gpu.count label */
  int64_t want_mig[3];   /* allocatable mig-1g.10gb, 2g.20gb, 3g.40gb */
  size_t want_taints;
  const char *want_taint_key, *want_taint_effect;
  int want_unschedulable, want_ready;
  int64_t want_cpu_milli, want_mem_bytes, want_pods;
} cases[] = {
    {"a100-80gb-8x-mig-mixed.json", "gpu-a100-r07-n05", 6, 6,
     "NVIDIA-A100-SXM4-80GB", 81920, 8, {4, 2, 2}, 0, NULL, NULL, 0, 1,
     255000, 2111182164 * KI, 110},
    {"a100-80gb-8x-ready-gpu-allocatable-zero.json", "gpu-a100-r08-n01", 0, 8,
     "NVIDIA-A100-SXM4-80GB", 81920, 8, {0, 0, 0}, 0, NULL, NULL, 0, 1,
     255000, 2111182164 * KI, 110},
    {"a100-80gb-8x-ready.json", "gpu-a100-r07-n03", 8, 8,
     "NVIDIA-A100-SXM4-80GB", 81920, 8, {0, 0, 0}, 0, NULL, NULL, 0, 1,
     255000, 2111182164 * KI, 110},
    {"h100-80gb-8x-cordoned-draining.json", "gpu-h100-r12-n07", 8, 8,
     "NVIDIA-H100-80GB-HBM3", 81559, 8, {0, 0, 0}, 1,
     "node.kubernetes.io/unschedulable", "NoSchedule", 1, 1, 128000,
     2062682496 * KI, 110},
    {"h100-80gb-8x-one-gpu-unhealthy.json", "gpu-h100-r12-n04", 7, 8,
     "NVIDIA-H100-80GB-HBM3", 81559, 8, {0, 0, 0}, 0, NULL, NULL, 0, 1, 128000,
     2062682496 * KI, 110},
    {"h100-80gb-8x-ready.json", "gpu-h100-r12-n02", 8, 8,
     "NVIDIA-H100-80GB-HBM3", 81559, 8, {0, 0, 0}, 0, NULL, NULL, 0, 1, 128000,
     2062682496 * KI, 110},
    {"t4-1x-inference-eks-spot.json",
     "ip-10-60-142-87.us-west-2.compute.internal", 1, 1, "Tesla-T4", 15360, 1,
     {0, 0, 0}, 1, "nvidia.com/gpu", "NoSchedule", 0, 1, 3920,
     15232536 * KI, 29},
    {"t4-4x-time-sliced-eks.json", "ip-10-60-37-201.us-west-2.compute.internal",
     16, 16, "Tesla-T4-SHARED", 15360, 4, {0, 0, 0}, 1, "nvidia.com/gpu",
     "NoSchedule", 0, 1, 47810, 188016380 * KI, 234},
};
#define NCASES (sizeof(cases) / sizeof(cases[0]))

static const char *const mig[] = {"nvidia.com/mig-1g.10gb",
                                  "nvidia.com/mig-2g.20gb",
                                  "nvidia.com/mig-3g.40gb"};

static void check_node(size_t i, const struct gq_node *n)
{
  assert_string_equal(n->meta.name, cases[i].want_name);
  assert_int_equal(gq_node_allocatable(n, "nvidia.com/gpu"),
                   cases[i].want_gpus);
  assert_int_equal(gq_node_capacity(n, "nvidia.com/gpu"),
                   cases[i].want_gpu_cap);
  assert_string_equal(n->gpu_product, cases[i].want_product);
  assert_int_equal(n->gpu_memory_mib, cases[i].want_mem_mib);
  assert_int_equal(n->gpu_count, cases[i].want_count);
  for (int m = 0; m < 3; m++)
    assert_int_equal(gq_node_allocatable(n, mig[m]), cases[i].want_mig[m]);
  assert_int_equal(n->n_taints, cases[i].want_taints);
  if (cases[i].want_taints) {
    assert_string_equal(n->taints[0].key, cases[i].want_taint_key);
    assert_string_equal(n->taints[0].effect, cases[i].want_taint_effect);
  }
  assert_int_equal(n->unschedulable, cases[i].want_unschedulable);
  assert_int_equal(n->ready, cases[i].want_ready);
  assert_int_equal(n->cpu_milli, cases[i].want_cpu_milli);
  assert_int_equal(n->memory_bytes, cases[i].want_mem_bytes);
  assert_int_equal(n->pods, cases[i].want_pods);
  assert_non_null(gq_meta_label(&n->meta, GQ_LABEL_HOSTNAME));
}

/* Every fixture file has a row, and every row's file decodes as expected. */
static void test_every_fixture(void **state)
{
  size_t nfiles, seen = 0;
  char **files = gq_test_list_dir("tests/fixtures/nodes", ".json", &nfiles);

  (void)state;
  assert_non_null(files);
  assert_true(nfiles >= NCASES);
  for (size_t f = 0; f < nfiles; f++) {
    const char *base = strrchr(files[f], '/') + 1;
    json_error_t jerr;
    json_t *obj = json_load_file(files[f], 0, &jerr);
    struct gq_node n;
    char err[512];
    size_t i;

    assert_non_null(obj);
    for (i = 0; i < NCASES && strcmp(cases[i].file, base) != 0; i++)
      ;
    if (i == NCASES)
      fail_msg("fixture %s has no expectations in test_node.c", base);
    if (gq_node_decode(obj, NULL, &n, err, sizeof(err)) != 0)
      fail_msg("%s: %s", base, err);
    json_decref(obj); /* the node keeps its own reference */
    check_node(i, &n);
    gq_node_release(&n);
    seen++;
  }
  assert_int_equal(seen, NCASES);
  gq_test_free_list(files);
}

/* The product label key is configurable (--gpu-product-label). */
static void test_custom_product_label(void **state)
{
  json_t *obj = json_load_file("tests/fixtures/nodes/h100-80gb-8x-ready.json",
                               0, NULL);
  struct gq_node n;
  char err[256];

  (void)state;
  json_object_set_new(json_object_get(obj, "metadata") ? json_object_get(
                          json_object_get(obj, "metadata"), "labels")
                                                      : NULL,
                      "example.com/accelerator", json_string("h100"));
  assert_int_equal(gq_node_decode(obj, "example.com/accelerator", &n, err,
                                  sizeof(err)),
                   0);
  assert_string_equal(n.gpu_product, "h100");
  gq_node_release(&n);
  assert_int_equal(gq_node_decode(obj, "example.com/none", &n, err,
                                  sizeof(err)),
                   0);
  assert_null(n.gpu_product);
  gq_node_release(&n);
  json_decref(obj);
}

static void test_malformed_nodes(void **state)
{
  static const struct {
    const char *json, *want_err;
  } bad[] = {
      {"{\"metadata\":{\"name\":\"n1\"},\"status\":{\"allocatable\":"
       "{\"nvidia.com/gpu\":\"eight\"}}}",
       "status.allocatable[nvidia.com/gpu]: must be a quantity such as 8, "
       "500m or 16Gi, got \"eight\""},
      {"{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"taints\":[{\"key\":\"a\","
       "\"effect\":\"Sometimes\"}]}}",
       "spec.taints[0].effect: must be one of NoSchedule, PreferNoSchedule, "
       "NoExecute, got \"Sometimes\""},
      {"{\"metadata\":{\"name\":\"n1\"},\"spec\":{\"unschedulable\":\"yes\"}}",
       "spec.unschedulable: must be a boolean, got \"yes\""},
      {"{\"metadata\":{}}", "metadata.name: required value"},
      {"{\"metadata\":{\"name\":\"Bad_Name\"}}",
       "metadata.name: must be a DNS-1123 subdomain"},
      {"[]", "metadata: required value"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    json_t *obj = json_loads(bad[i].json, 0, NULL);
    struct gq_node n;
    char err[512];

    assert_non_null(obj);
    assert_int_equal(gq_node_decode(obj, NULL, &n, err, sizeof(err)),
                     GQ_EINVAL);
    if (strncmp(err, bad[i].want_err, strlen(bad[i].want_err)) != 0)
      fail_msg("case %zu: got '%s' want '%s'", i, err, bad[i].want_err);
    assert_null(n.json);
    json_decref(obj);
  }
}

/* A minimal node: no status means nothing allocatable and not Ready. */
static void test_minimal_node(void **state)
{
  json_t *obj = json_loads("{\"metadata\":{\"name\":\"bare\"}}", 0, NULL);
  struct gq_node n;
  char err[256];

  (void)state;
  assert_int_equal(gq_node_decode(obj, NULL, &n, err, sizeof(err)), 0);
  assert_int_equal(n.ready, 0);
  assert_int_equal(n.pods, 0);
  assert_int_equal(gq_node_allocatable(&n, "nvidia.com/gpu"), 0);
  assert_int_equal(n.gpu_memory_mib, -1);
  assert_null(n.gpu_product);
  gq_node_release(&n);
  json_decref(obj);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_fixture),
      cmocka_unit_test(test_custom_product_label),
      cmocka_unit_test(test_malformed_nodes),
      cmocka_unit_test(test_minimal_node),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
