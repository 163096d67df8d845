/* gpuq's capacity model and gang placement (decide/place.h) on small
 * clusters built inline (single-quoted JSON, gq_test_json_sq()), plus the
 * MIG fixture node.
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
#include "base/err.h"
#include "decide/place.h"
#include "tests/support/fixture.h"

#define MAXN 16

/* A Ready node with 'gpus' nvidia.com/gpu, 64 CPUs, 512Gi and 110 pods.
 * labels: extra label members (single quotes) or "". spec: spec members or
 * "". */
static void node(struct gq_node *n, const char *name, int gpus,
                 const char *labels, const char *spec)
{
  char buf[4096];

  snprintf(buf, sizeof(buf),
           "{'metadata':{'name':'%s','labels':{'kubernetes.io/hostname':'%s'%s%s}},"
           "'spec':{%s},'status':{'allocatable':{'cpu':'64','memory':'512Gi',"
           "'pods':'110','nvidia.com/gpu':'%d'},"
           "'conditions':[{'type':'Ready','status':'True'}]}}",
           name, name, labels[0] ? "," : "", labels, spec, gpus);
  gq_test_node_sq(n, buf);
}

/* A GpuJob with 'replicas' x 'gpus' GPUs. gpu: members of spec.gpu or "";
 * pod: extra members of the template's pod spec or "". */
static void job(struct gq_gpujob *j, int replicas, int gpus, const char *gpu,
                const char *pod)
{
  char buf[4096];

  snprintf(buf, sizeof(buf),
           "{'apiVersion':'gpuq.dev/v1alpha1','kind':'GpuJob',"
           "'metadata':{'name':'j','namespace':'ns','uid':'u-1'},"
           "'spec':{'team':'t','replicas':%d,'gpusPerReplica':%d,"
           "'gpu':{%s},'template':{'spec':{'containers':[{'name':'c',"
           "'image':'x','resources':{'requests':{'cpu':'4','memory':'16Gi'}}}]"
           "%s%s}}}}",
           replicas, gpus, gpu, pod[0] ? "," : "", pod);
  gq_test_gpujob_sq(j, buf);
}

struct cluster {
  struct gq_node nodes[MAXN];
  const struct gq_node *ptr[MAXN];
  size_t n;
  struct gq_snapshot cap;
};

static void cluster_start(struct cluster *cl, const char *topology)
{
  for (size_t i = 0; i < cl->n; i++)
    cl->ptr[i] = &cl->nodes[i];
  gq_snapshot_init(&cl->cap, cl->ptr, cl->n, topology);
}

static void cluster_end(struct cluster *cl)
{
  gq_snapshot_release(&cl->cap);
  for (size_t i = 0; i < cl->n; i++)
    gq_node_release(&cl->nodes[i]);
}

static const char *name_at(struct cluster *cl, size_t i)
{
  return cl->cap.nodes[i].node->meta.name;
}

/* Commits g GPUs of plain use on node 'name' (someone else's pod). */
static void use(struct cluster *cl, const char *name, int g)
{
  struct gq_gpujob j;
  struct gq_podsched r;

  job(&j, 1, g, "", "");
  gq_place_replica_request(&j, &r);
  assert_int_equal(gq_snapshot_commit(&cl->cap, name, &r, +1), 0);
  gq_place_replica_release(&r);
  gq_gpujob_release(&j);
}

/* ---- tests --------------------------------------------------------------- */

static void test_best_fit(void **state)
{
  struct cluster cl = {.n = 3};
  struct gq_gpujob j;
  size_t out[1];
  char why[512];

  (void)state;
  node(&cl.nodes[0], "n-c", 8, "", "");
  node(&cl.nodes[1], "n-a", 8, "", "");
  node(&cl.nodes[2], "n-b", 8, "", "");
  cluster_start(&cl, GQ_TOPOLOGY_ZONE);
  use(&cl, "n-b", 6); /* n-b has 2 free: the tightest fit for 2 GPUs */
  use(&cl, "n-c", 4);
  assert_int_equal(gq_snapshot_available(&cl.cap, (size_t)gq_snapshot_find(&cl.cap, "n-b"),
                                    "nvidia.com/gpu"), 2);
  job(&j, 1, 2, "", "");
  assert_int_equal(gq_place_job(&cl.cap, &j, NULL, out, why, sizeof(why)), 0);
  assert_string_equal(name_at(&cl, out[0]), "n-b");
  assert_string_equal(why, "");
  gq_gpujob_release(&j);

  /* 3 GPUs: n-c (4 free) beats the empty n-a; the snapshot is unchanged. */
  job(&j, 1, 3, "", "");
  assert_int_equal(gq_place_job(&cl.cap, &j, NULL, out, why, sizeof(why)), 0);
  assert_string_equal(name_at(&cl, out[0]), "n-c");
  assert_int_equal(gq_snapshot_available(&cl.cap, out[0], "nvidia.com/gpu"), 4);
  gq_gpujob_release(&j);

  cluster_end(&cl);
}

static void test_gang_all_or_nothing(void **state)
{
  struct cluster cl = {.n = 3};
  struct gq_gpujob j;
  size_t out[4];
  char why[512];

  (void)state;
  node(&cl.nodes[0], "n-1", 8, "", "");
  node(&cl.nodes[1], "n-2", 8, "", "");
  node(&cl.nodes[2], "n-3", 8, "", "");
  cluster_start(&cl, NULL);
  use(&cl, "n-3", 4);

  /* 4 x 4 GPUs: n-3 takes one (best fit), n-1 two, n-2 one. */
  job(&j, 4, 4, "", "");
  assert_int_equal(gq_place_job(&cl.cap, &j, NULL, out, why, sizeof(why)), 0);
  assert_string_equal(name_at(&cl, out[0]), "n-3");
  assert_string_equal(name_at(&cl, out[1]), "n-1");
  assert_string_equal(name_at(&cl, out[2]), "n-1");
  assert_string_equal(name_at(&cl, out[3]), "n-2");
  gq_gpujob_release(&j);

  /* 3 x 8: only two nodes are whole; nothing is placed. */
  job(&j, 3, 8, "", "");
  assert_int_equal(gq_place_job(&cl.cap, &j, NULL, out, why, sizeof(why)),
                   GQ_ECAPACITY);
  assert_string_equal(why, "gang of 3 replicas x 8 nvidia.com/gpu does not "
                           "fit: at most 2 fit");
  for (size_t i = 0; i < cl.cap.n; i++)
    assert_int_equal(gq_snapshot_available(&cl.cap, i, "nvidia.com/gpu"),
                     strcmp(name_at(&cl, i), "n-3") == 0 ? 4 : 8);
  gq_gpujob_release(&j);
  cluster_end(&cl);
}

static void test_eligibility_reasons(void **state)
{
  struct cluster cl = {.n = 6};
  struct gq_gpujob j;
  size_t out[1];
  char why[1024];

  (void)state;
  node(&cl.nodes[0], "a100", 8,
       "'nvidia.com/gpu.product':'NVIDIA-A100-SXM4-80GB','nvidia.com/gpu.memory':'81920'", "");
  node(&cl.nodes[1], "t4", 8,
       "'nvidia.com/gpu.product':'Tesla-T4','nvidia.com/gpu.memory':'15360'", "");
  node(&cl.nodes[2], "cordoned", 8,
       "'nvidia.com/gpu.product':'NVIDIA-A100-SXM4-80GB'", "'unschedulable':true");
  node(&cl.nodes[3], "tainted", 8,
       "'nvidia.com/gpu.product':'NVIDIA-A100-SXM4-80GB'",
       "'taints':[{'key':'dedicated','value':'infer','effect':'NoSchedule'}]");
  node(&cl.nodes[4], "cpu-only", 0, "", "");
  node(&cl.nodes[5], "a100-40", 8,
       "'nvidia.com/gpu.product':'NVIDIA-A100-SXM4-80GB','nvidia.com/gpu.memory':'40960'", "");
  cluster_start(&cl, NULL);

  job(&j, 1, 4, "'products':['NVIDIA-A100-SXM4-80GB'],'minMemoryMiB':80000", "");
  assert_int_equal(gq_place_job(&cl.cap, &j, NULL, out, why, sizeof(why)), 0);
  assert_string_equal(name_at(&cl, out[0]), "a100");

  use(&cl, "a100", 6);
  assert_int_equal(gq_place_job(&cl.cap, &j, NULL, out, why, sizeof(why)),
                   GQ_ECAPACITY);
  assert_string_equal(
      why, "0/6 nodes fit 1 replica of 4 nvidia.com/gpu: "
           "1 Insufficient nvidia.com/gpu, "
           "1 node(s) had GPU memory 40960 MiB, below spec.gpu.minMemoryMiB 80000, "
           "1 node(s) had GPU product Tesla-T4 not in spec.gpu.products, "
           "1 node(s) had no allocatable nvidia.com/gpu, "
           "1 node(s) had untolerated taint {dedicated: infer}, "
           "1 node(s) were unschedulable");
  gq_gpujob_release(&j);

  /* A toleration opens the tainted node; a nodeSelector picks it. */
  job(&j, 1, 4, "",
      "'tolerations':[{'key':'dedicated','operator':'Exists'}],"
      "'nodeSelector':{'kubernetes.io/hostname':'tainted'}");
  assert_int_equal(gq_place_job(&cl.cap, &j, NULL, out, why, sizeof(why)), 0);
  assert_string_equal(name_at(&cl, out[0]), "tainted");
  gq_gpujob_release(&j);
  cluster_end(&cl);
}

/* Without a reason buffer, gq_place_job passes over nodes by their free
 * GPU count before the other checks (place.c eligible): the choice is the
 * one made with reasons, and a miss is still GQ_ECAPACITY. The tainted
 * node has the most room, and only the tolerating job may use it. */
static void test_choice_without_reasons(void **state)
{
  struct cluster cl = {.n = 5};
  struct gq_gpujob plain, tolerant;
  size_t a[2], b[2];
  char why[512];

  (void)state;
  node(&cl.nodes[0], "full-1", 8, "", "");
  node(&cl.nodes[1], "full-2", 8, "", "");
  node(&cl.nodes[2], "part-6", 8, "", "");
  node(&cl.nodes[3], "part-2", 8, "", "");
  node(&cl.nodes[4], "tainted", 8, "",
       "'taints':[{'key':'dedicated','value':'infer','effect':'NoSchedule'}]");
  cluster_start(&cl, NULL);
  use(&cl, "full-1", 8);
  use(&cl, "full-2", 8);
  use(&cl, "part-6", 2);
  use(&cl, "part-2", 6);
  job(&plain, 2, 2, "", "");
  job(&tolerant, 1, 7, "",
      "'tolerations':[{'key':'dedicated','operator':'Exists'}]");
  assert_int_equal(gq_place_job(&cl.cap, &plain, NULL, a, why, sizeof(why)), 0);
  assert_int_equal(gq_place_job(&cl.cap, &plain, NULL, b, NULL, 0), 0);
  assert_string_equal(name_at(&cl, a[0]), "part-2"); /* the tightest fit */
  assert_string_equal(name_at(&cl, a[1]), "part-6");
  assert_memory_equal(a, b, sizeof(a));
  assert_int_equal(gq_place_job(&cl.cap, &tolerant, NULL, b, NULL, 0), 0);
  assert_string_equal(name_at(&cl, b[0]), "tainted");
  gq_gpujob_release(&tolerant);

  /* 7 GPUs without the toleration: no node, with or without reasons */
  job(&tolerant, 1, 7, "", "");
  assert_int_equal(gq_place_job(&cl.cap, &tolerant, NULL, b, NULL, 0),
                   GQ_ECAPACITY);
  assert_int_equal(gq_place_job(&cl.cap, &tolerant, NULL, b, why,
                                sizeof(why)), GQ_ECAPACITY);
  assert_string_equal(why, "0/5 nodes fit 1 replica of 7 nvidia.com/gpu: "
                           "4 Insufficient nvidia.com/gpu, "
                           "1 node(s) had untolerated taint "
                           "{dedicated: infer}");
  gq_gpujob_release(&tolerant);
  gq_gpujob_release(&plain);
  cluster_end(&cl);
}

static void test_allocatable_zero_and_cpu(void **state)
{
  struct cluster cl = {.n = 2};
  struct gq_gpujob j;
  struct gq_podsched s = {0};
  size_t out[1];
  char why[512];

  (void)state;
  node(&cl.nodes[0], "dead", 0, "", ""); /* device plugin gone */
  node(&cl.nodes[1], "busy", 8, "", "");
  cluster_start(&cl, NULL);

  /* busy has 8 free GPUs, but another workload holds 62 of its 64 CPUs. */
  s.node_name = "";
  s.cpu_milli = 62000;
  assert_int_equal(gq_snapshot_commit(&cl.cap, "busy", &s, +1), 0);
  assert_int_equal(gq_snapshot_commit(&cl.cap, "nowhere", &s, +1),
                   GQ_ENOTFOUND);
  job(&j, 1, 1, "", "");
  assert_int_equal(gq_place_job(&cl.cap, &j, NULL, out, why, sizeof(why)),
                   GQ_ECAPACITY);
  assert_string_equal(why, "0/2 nodes fit 1 replica of 1 nvidia.com/gpu: "
                           "1 Insufficient cpu, "
                           "1 node(s) had no allocatable nvidia.com/gpu");
  assert_int_equal(gq_snapshot_commit(&cl.cap, "busy", &s, -1), 0);
  assert_int_equal(gq_place_job(&cl.cap, &j, NULL, out, why, sizeof(why)), 0);
  assert_string_equal(name_at(&cl, out[0]), "busy");
  gq_gpujob_release(&j);
  cluster_end(&cl);
}

static void test_topology(void **state)
{
  struct cluster cl = {.n = 4};
  struct gq_gpujob j;
  size_t out[3];
  char why[512];

  (void)state;
  node(&cl.nodes[0], "a-1", 8, "'topology.kubernetes.io/zone':'za'", "");
  node(&cl.nodes[1], "b-1", 8, "'topology.kubernetes.io/zone':'zb'", "");
  node(&cl.nodes[2], "b-2", 8, "'topology.kubernetes.io/zone':'zb'", "");
  node(&cl.nodes[3], "a-2", 8, "'topology.kubernetes.io/zone':'za'", "");
  cluster_start(&cl, GQ_TOPOLOGY_ZONE);
  use(&cl, "a-1", 2);
  use(&cl, "b-1", 1);

  /* 2 x 6: best fit over all nodes would pick a-1 then b-1 (different
   * zones). Zone za holds the gang with 2 free GPUs left against 3 in zb. */
  job(&j, 2, 6, "", "");
  assert_int_equal(gq_place_job(&cl.cap, &j, NULL, out, why, sizeof(why)), 0);
  assert_string_equal(name_at(&cl, out[0]), "a-1");
  assert_string_equal(name_at(&cl, out[1]), "a-2");

  /* Without the preference, plain best fit mixes the zones. */
  cl.cap.topology_key = NULL;
  assert_int_equal(gq_place_job(&cl.cap, &j, NULL, out, why, sizeof(why)), 0);
  assert_string_equal(name_at(&cl, out[0]), "a-1");
  assert_string_equal(name_at(&cl, out[1]), "b-1");

  /* No single zone holds 3 x 7 (a-1 has 6 free): the gang spans zones,
   * by best fit with ties in name order. */
  cl.cap.topology_key = GQ_TOPOLOGY_ZONE;
  gq_gpujob_release(&j);
  job(&j, 3, 7, "", "");
  assert_int_equal(gq_place_job(&cl.cap, &j, NULL, out, why, sizeof(why)), 0);
  assert_string_equal(name_at(&cl, out[0]), "b-1");
  assert_string_equal(name_at(&cl, out[1]), "a-2");
  assert_string_equal(name_at(&cl, out[2]), "b-2");
  gq_gpujob_release(&j);
  cluster_end(&cl);
}

static void test_mig_fixture(void **state)
{
  struct gq_node n;
  const struct gq_node *p = &n;
  struct gq_snapshot cap;
  struct gq_gpujob j;
  size_t out[1];
  char why[512], err[256];
  json_error_t jerr;
  json_t *obj =
      json_load_file("tests/fixtures/nodes/a100-80gb-8x-mig-mixed.json", 0, &jerr);
  int64_t slices;

  (void)state;
  if (!obj)
    fail_msg("fixture: %s", jerr.text);
  assert_int_equal(gq_node_decode(obj, NULL, &n, err, sizeof(err)), 0);
  json_decref(obj);
  gq_snapshot_init(&cap, &p, 1, NULL);
  slices = gq_snapshot_available(&cap, 0, "nvidia.com/mig-1g.10gb");
  assert_true(slices > 0);

  job(&j, 1, 1, "'resource':'nvidia.com/mig-1g.10gb'",
      "'tolerations':[{'operator':'Exists'}]");
  assert_int_equal(gq_place_job(&cap, &j, NULL, out, why, sizeof(why)), 0);
  /* Fill every slice; the next one has no room. */
  {
    struct gq_podsched r;

    gq_place_replica_request(&j, &r);
    for (int64_t i = 0; i < slices; i++)
      assert_int_equal(gq_snapshot_commit(&cap, n.meta.name, &r, +1), 0);
    assert_int_equal(gq_place_job(&cap, &j, NULL, out, why, sizeof(why)),
                     GQ_ECAPACITY);
    assert_non_null(strstr(why, "1 Insufficient nvidia.com/mig-1g.10gb"));
    assert_int_equal(gq_snapshot_commit(&cap, n.meta.name, &r, -1), 0);
    assert_int_equal(gq_place_job(&cap, &j, NULL, out, why, sizeof(why)), 0);
    gq_place_replica_release(&r);
  }
  gq_gpujob_release(&j);
  gq_snapshot_release(&cap);
  gq_node_release(&n);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_best_fit),
      cmocka_unit_test(test_gang_all_or_nothing),
      cmocka_unit_test(test_eligibility_reasons),
      cmocka_unit_test(test_allocatable_zero_and_cpu),
      cmocka_unit_test(test_choice_without_reasons),
      cmocka_unit_test(test_topology),
      cmocka_unit_test(test_mig_fixture),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
