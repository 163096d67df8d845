/* The pods and Service gpuq creates (controller/podspec.h): every pod is
 * decoded back with the API's own decoder and matched against nodes with
 * decide/match.h, so the pin, the GPU request and the labels are checked the
 * way kube-scheduler and gpuq's rebuild read them. Inline JSON is written
 * with single quotes (gq_test_json_sq()).
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
#include "api/pod.h"
#include "base/err.h"
#include "controller/podspec.h"
#include "decide/match.h"
#include "decide/names.h"
#include "tests/support/fixture.h"

#define UID "0f3c2a9e-5b7d-4e21-9a44-7c1d2e3f4a5b"

/* A GpuJob named 'name' with 'replicas' x 2 GPUs; pod: the template's pod
 * spec members (single quotes). */
static void job(struct gq_gpujob *j, const char *name, int replicas,
                const char *pod)
{
  char buf[4096];

  snprintf(buf, sizeof(buf),
           "{'apiVersion':'gpuq.dev/v1alpha1','kind':'GpuJob',"
           "'metadata':{'name':'%s','namespace':'research','uid':'" UID "'},"
           "'spec':{'team':'research','replicas':%d,'gpusPerReplica':2,"
           "'priorityClassName':'training',"
           "'template':{'metadata':{'labels':{'app':'llm'}},'spec':{%s}}}}",
           name, replicas, pod);
  gq_test_gpujob_sq(j, buf);
}

/* A Ready 8-GPU node; host is its kubernetes.io/hostname label (NULL =
 * none). */
static void node_h(struct gq_node *n, const char *name, const char *host,
                   const char *zone)
{
  char buf[2048], hl[128] = "";

  if (host)
    snprintf(hl, sizeof(hl), "'kubernetes.io/hostname':'%s',", host);
  snprintf(buf, sizeof(buf),
           "{'metadata':{'name':'%s','labels':{%s"
           "'topology.kubernetes.io/zone':'%s'}},'spec':{},"
           "'status':{'allocatable':{'cpu':'64','memory':'512Gi','pods':'110',"
           "'nvidia.com/gpu':'8'},"
           "'conditions':[{'type':'Ready','status':'True'}]}}",
           name, hl, zone);
  gq_test_node_sq(n, buf);
}

static void node(struct gq_node *n, const char *name, const char *zone)
{
  node_h(n, name, name, zone);
}

static void decode(json_t *pod, struct gq_pod *p)
{
  char err[256];

  if (gq_pod_decode(pod, p, err, sizeof(err)) != 0)
    fail_msg("built pod does not decode: %s", err);
}

/* Returns container i's env var 'name', or NULL. */
static const char *env(json_t *pod, size_t i, const char *name)
{
  json_t *c = json_array_get(
      json_object_get(json_object_get(pod, "spec"), "containers"), i);
  json_t *e;
  size_t k;
  const char *found = NULL;

  json_array_foreach(json_object_get(c, "env"), k, e) {
    const char *n = json_string_value(json_object_get(e, "name"));

    if (n && strcmp(n, name) == 0) {
      assert_null(found); /* each variable once */
      found = json_string_value(json_object_get(e, "value"));
    }
  }
  return found;
}

static const char *spec_str(json_t *pod, const char *key)
{
  return json_string_value(
      json_object_get(json_object_get(pod, "spec"), key));
}

/* Returns container i's resources.<kind>["nvidia.com/gpu"], or NULL. */
static const char *gpu_of(json_t *pod, size_t i, const char *kind)
{
  json_t *c = json_array_get(
      json_object_get(json_object_get(pod, "spec"), "containers"), i);
  json_t *res = json_object_get(json_object_get(c, "resources"), kind);

  return json_string_value(json_object_get(res, "nvidia.com/gpu"));
}

static void test_single_replica(void **state)
{
  struct gq_gpujob j;
  struct gq_node n1, n2;
  struct gq_pod p;
  json_t *pod;
  char why[256];

  (void)state;
  job(&j, "eval", 1,
      "'nodeSelector':{'topology.kubernetes.io/zone':'za'},"
      "'containers':[{'name':'c','image':'x',"
      "'env':[{'name':'GPUQ_ATTEMPT','value':'stale'},{'name':'K','value':'v'}],"
      "'resources':{'requests':{'cpu':'4'}}}]");
  node(&n1, "n-1", "za");
  node(&n2, "n-2", "za");
  pod = gq_podspec_pod(&j, 3, 0, &n1, "s3://ckpt/step-100");
  decode(pod, &p);

  assert_string_equal(p.meta.name, "eval-0f3c2a9e-3-0");
  assert_string_equal(p.meta.ns, "research");
  assert_string_equal(p.meta.owner_uid, UID);
  assert_string_equal(p.meta.owner_kind, "GpuJob");
  assert_string_equal(gq_meta_label(&p.meta, GQ_LBL_JOB), "eval");
  assert_string_equal(gq_meta_label(&p.meta, GQ_LBL_JOB_UID), UID);
  assert_string_equal(gq_meta_label(&p.meta, GQ_LBL_TEAM), "research");
  assert_string_equal(gq_meta_label(&p.meta, GQ_LBL_ATTEMPT), "3");
  assert_string_equal(gq_meta_label(&p.meta, GQ_LBL_REPLICA), "0");
  assert_string_equal(gq_meta_label(&p.meta, "app"), "llm");
  assert_string_equal(p.sched.node_name, "");
  assert_int_equal(gq_podsched_request(&p.sched, "nvidia.com/gpu"), 2);
  assert_int_equal(p.sched.cpu_milli, 4000);

  /* Pinned to n-1 on top of the template's own selector. */
  assert_null(gq_node_eligible(&n1, &p.sched, why, sizeof(why)));
  assert_string_equal(gq_node_eligible(&n2, &p.sched, why, sizeof(why)),
                      "NodeAffinity");

  assert_string_equal(env(pod, 0, "GPUQ_JOB"), "eval");
  assert_string_equal(env(pod, 0, "GPUQ_ATTEMPT"), "3");
  assert_string_equal(env(pod, 0, "GPUQ_RESUME_FROM"), "s3://ckpt/step-100");
  assert_string_equal(env(pod, 0, "K"), "v");
  assert_null(env(pod, 0, "RANK"));
  assert_null(spec_str(pod, "hostname"));
  assert_string_equal(spec_str(pod, "restartPolicy"), "Never");
  assert_string_equal(spec_str(pod, "priorityClassName"), "training");
  assert_string_equal(gpu_of(pod, 0, "requests"), "2");
  assert_string_equal(gpu_of(pod, 0, "limits"), "2");

  /* Deterministic: the same arguments give the same document. */
  {
    json_t *again = gq_podspec_pod(&j, 3, 0, &n1, "s3://ckpt/step-100");

    assert_true(json_equal(pod, again));
    json_decref(again);
  }
  gq_pod_release(&p);
  json_decref(pod);
  gq_node_release(&n1);
  gq_node_release(&n2);
  gq_gpujob_release(&j);
}

/* A checkpointing job (DESIGN §5): its pods get the checkpoint grace
 * period (over the template's) and terminationMessagePolicy File on every
 * container; a job without spec.checkpoint keeps the template's grace. */
static void test_checkpoint_grace(void **state)
{
  struct gq_gpujob j;
  struct gq_node n1;
  struct gq_pod p;
  json_t *pod, *cs, *c;
  size_t i;

  (void)state;
  gq_test_gpujob_sq(&j,
      "{'apiVersion':'gpuq.dev/v1alpha1','kind':'GpuJob',"
      "'metadata':{'name':'ck','namespace':'research','uid':'" UID "'},"
      "'spec':{'team':'research','replicas':2,'gpusPerReplica':2,"
      "'checkpoint':{'gracePeriodSeconds':300,'intervalSeconds':1800},"
      "'template':{'spec':{'terminationGracePeriodSeconds':5,"
      "'containers':[{'name':'a','image':'x'},{'name':'b','image':'y'}]}}}}");
  node(&n1, "n-1", "za");
  pod = gq_podspec_pod(&j, 2, 1, &n1, NULL);
  decode(pod, &p);
  assert_int_equal(p.sched.grace_s, 300);
  cs = json_object_get(json_object_get(pod, "spec"), "containers");
  assert_int_equal(json_array_size(cs), 2);
  json_array_foreach(cs, i, c)
    assert_string_equal(json_string_value(json_object_get(
        c, "terminationMessagePolicy")), "File");
  assert_null(env(pod, 0, "GPUQ_RESUME_FROM"));
  gq_pod_release(&p);
  json_decref(pod);
  gq_gpujob_release(&j);

  job(&j, "plain", 1, "'terminationGracePeriodSeconds':5,"
      "'containers':[{'name':'c','image':'x'}]");
  pod = gq_podspec_pod(&j, 1, 0, &n1, NULL);
  decode(pod, &p);
  assert_int_equal(p.sched.grace_s, 5);
  assert_null(json_object_get(json_array_get(json_object_get(
      json_object_get(pod, "spec"), "containers"), 0),
      "terminationMessagePolicy"));
  gq_pod_release(&p);
  json_decref(pod);
  gq_node_release(&n1);
  gq_gpujob_release(&j);
}

/* drainPolicy Wait's budget: maxUnavailable 0 over the job's pods (by
 * uid), named as its Service, owned by the job. */
static void test_pdb(void **state)
{
  struct gq_gpujob j;
  json_t *pdb, *sel;

  (void)state;
  job(&j, "9.x", 2, "'containers':[{'name':'c','image':'x'}]");
  pdb = gq_podspec_pdb(&j);
  assert_string_equal(json_string_value(json_object_get(pdb, "kind")),
                      "PodDisruptionBudget");
  assert_string_equal(json_string_value(json_object_get(
      json_object_get(pdb, "metadata"), "name")), "gj-9-x-0f3c2a9e");
  assert_int_equal(json_integer_value(json_object_get(
      json_object_get(pdb, "spec"), "maxUnavailable")), 0);
  sel = json_object_get(json_object_get(json_object_get(pdb, "spec"),
                                        "selector"), "matchLabels");
  assert_string_equal(json_string_value(json_object_get(sel, GQ_LBL_JOB_UID)),
                      UID);
  assert_string_equal(json_string_value(json_object_get(json_array_get(
      json_object_get(json_object_get(pdb, "metadata"), "ownerReferences"),
      0), "uid")), UID);
  json_decref(pdb);
  gq_gpujob_release(&j);
}

static void test_affinity_terms_and_gpu_container(void **state)
{
  struct gq_gpujob j;
  struct gq_node a1, c1, a2;
  struct gq_pod p;
  json_t *pod;
  char why[256];

  (void)state;
  job(&j, "ft", 1,
      "'restartPolicy':'OnFailure',"
      "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
      "{'nodeSelectorTerms':["
      "{'matchExpressions':[{'key':'topology.kubernetes.io/zone','operator':'In','values':['za']}]},"
      "{'matchExpressions':[{'key':'topology.kubernetes.io/zone','operator':'In','values':['zb']}]},"
      "{}]}}},"
      "'initContainers':[{'name':'fetch','image':'f'}],"
      "'containers':[{'name':'train','image':'t','resources':{'limits':{'cpu':'2'}},"
      "'env':[{'name':'GPUQ_ATTEMPT','value':'x'},{'name':'OUT','value':'/o/$(GPUQ_ATTEMPT)'},"
      "{'name':'GPUQ_ATTEMPT','value':'y'}]},"
      "{'name':'sidecar','image':'s'}]");
  node(&a1, "n-1", "za");
  node(&c1, "n-1", "zc"); /* same name, outside both terms */
  node(&a2, "n-2", "za");
  pod = gq_podspec_pod(&j, 1, 0, &a1, NULL);
  decode(pod, &p);

  /* Each non-empty ORed term got the pin: n-1 in za passes, n-1 in zc
   * and n-2 do not. The empty term still matches nothing (it would match
   * only the pinned node if the pin went into it). */
  assert_null(gq_node_eligible(&a1, &p.sched, why, sizeof(why)));
  assert_string_equal(gq_node_eligible(&c1, &p.sched, why, sizeof(why)),
                      "NodeAffinity");
  assert_string_equal(gq_node_eligible(&a2, &p.sched, why, sizeof(why)),
                      "NodeAffinity");

  /* The GPU goes to the first container, requests = limits = 2, next to
   * the template's own limits. */
  assert_int_equal(gq_podsched_request(&p.sched, "nvidia.com/gpu"), 2);
  assert_string_equal(gpu_of(pod, 0, "requests"), "2");
  assert_string_equal(gpu_of(pod, 0, "limits"), "2");
  assert_int_equal(p.sched.cpu_milli, 2000); /* request defaults to limit */
  assert_null(gpu_of(pod, 1, "requests"));
  assert_null(gpu_of(pod, 1, "limits"));
  assert_string_equal(spec_str(pod, "restartPolicy"), "OnFailure");
  assert_null(env(pod, 1, "GPUQ_RESUME_FROM"));
  assert_string_equal(env(pod, 1, "GPUQ_JOB"), "ft");

  /* The template's GPUQ_ATTEMPT is replaced in place, its duplicate
   * removed, so OUT (after it) still expands it. env() fails on
   * duplicates. */
  assert_string_equal(env(pod, 0, "GPUQ_ATTEMPT"), "1");
  {
    json_t *e = json_object_get(json_array_get(json_object_get(
                    json_object_get(pod, "spec"), "containers"), 0), "env");

    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(e, 0), "name")), "GPUQ_ATTEMPT");
    assert_string_equal(json_string_value(json_object_get(
                            json_array_get(e, 1), "name")), "OUT");
  }
  /* Init containers get the environment too. */
  {
    json_t *init = json_array_get(json_object_get(json_object_get(pod, "spec"),
                                                  "initContainers"), 0);
    json_t *e;
    size_t k;
    int seen = 0;

    json_array_foreach(json_object_get(init, "env"), k, e)
      seen += strcmp(json_string_value(json_object_get(e, "name")),
                     "GPUQ_JOB") == 0;
    assert_int_equal(seen, 1);
  }
  gq_pod_release(&p);
  json_decref(pod);
  gq_node_release(&a1);
  gq_node_release(&c1);
  gq_node_release(&a2);
  gq_gpujob_release(&j);
}

static void test_multi_replica(void **state)
{
  /* 63 characters, the longest GpuJob name. */
  const char *longname =
      "llama-70b-pretrain-run-with-a-very-long-name-for-testing-000001";
  struct gq_gpujob j;
  struct gq_node node1, node2;
  json_t *pod0, *pod2, *svc;
  char n0[64], n2[64], master[256];

  (void)state;
  assert_int_equal(strlen(longname), 63);
  job(&j, longname, 3,
      "'containers':[{'name':'c','image':'x'},{'name':'d','image':'y'}]");
  node(&node1, "n-1", "za");
  node(&node2, "n-2", "za");
  pod0 = gq_podspec_pod(&j, 12, 0, &node1, NULL);
  pod2 = gq_podspec_pod(&j, 12, 2, &node2, NULL);
  gq_podspec_pod_name(&j, 12, 0, n0, sizeof(n0));
  gq_podspec_pod_name(&j, 12, 2, n2, sizeof(n2));

  assert_string_equal(n0, "llama-70b-pretrain-run-with-a-ve-0f3c2a9e-12-0");
  assert_string_not_equal(n0, n2);
  assert_true(strlen(n2) <= GQ_POD_NAME_MAX);
  assert_true(gq_dns_label_ok(n2, strlen(n2)));
  assert_string_equal(spec_str(pod2, "hostname"), n2);
  assert_string_equal(spec_str(pod2, "subdomain"), longname);

  snprintf(master, sizeof(master), "%s.%s.research.svc", n0, longname);
  for (size_t c = 0; c < 2; c++) {
    assert_string_equal(env(pod2, c, "RANK"), "2");
    assert_string_equal(env(pod2, c, "WORLD_SIZE"), "3");
    assert_string_equal(env(pod2, c, "MASTER_ADDR"), master);
    assert_string_equal(env(pod2, c, "MASTER_PORT"), "29500");
    assert_string_equal(env(pod2, c, "GPUQ_REPLICA"), "2");
    assert_string_equal(env(pod2, c, "GPUQ_REPLICAS"), "3");
    assert_string_equal(env(pod0, c, "RANK"), "0");
    assert_string_equal(env(pod0, c, "MASTER_ADDR"), master);
  }

  svc = gq_podspec_service(&j);
  assert_string_equal(json_string_value(json_object_get(
                          json_object_get(svc, "metadata"), "name")),
                      longname);
  assert_string_equal(json_string_value(json_object_get(
                          json_object_get(svc, "spec"), "clusterIP")),
                      "None");
  assert_string_equal(
      json_string_value(json_object_get(
          json_object_get(json_object_get(svc, "spec"), "selector"),
          GQ_LBL_JOB_UID)),
      UID);
  assert_true(json_is_true(json_object_get(json_object_get(svc, "spec"),
                                           "publishNotReadyAddresses")));
  assert_string_equal(
      json_string_value(json_object_get(
          json_array_get(json_object_get(json_object_get(svc, "metadata"),
                                         "ownerReferences"), 0),
          "uid")),
      UID);
  json_decref(svc);
  json_decref(pod0);
  json_decref(pod2);
  gq_node_release(&node1);
  gq_node_release(&node2);
  gq_gpujob_release(&j);
}

static void test_names_from_unusual_job_names(void **state)
{
  struct gq_gpujob j;
  char svc[64], pod[64];

  (void)state;
  job(&j, "7b-sweep", 2, "'containers':[{'name':'c','image':'x'}]");
  gq_podspec_service_name(&j, svc, sizeof(svc));
  assert_string_equal(svc, "gj-7b-sweep-0f3c2a9e");
  gq_gpujob_release(&j);

  /* Dots are allowed in a GpuJob name but not in a hostname or Service. */
  job(&j, "train.v2", 2, "'containers':[{'name':'c','image':'x'}]");
  gq_podspec_service_name(&j, svc, sizeof(svc));
  gq_podspec_pod_name(&j, 1, 0, pod, sizeof(pod));
  assert_string_equal(svc, "gj-train-v2-0f3c2a9e");
  assert_string_equal(pod, "train-v2-0f3c2a9e-1-0");
  gq_gpujob_release(&j);

  /* Cut at 32 just after a dot: no trailing '-' or '.'. */
  job(&j, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.b", 1,
      "'containers':[{'name':'c','image':'x'}]");
  gq_podspec_pod_name(&j, 1, 0, pod, sizeof(pod));
  assert_string_equal(pod, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-0f3c2a9e-1-0");
  assert_true(gq_dns_label_ok(pod, strlen(pod)));
  gq_gpujob_release(&j);
}

static void test_pin_uses_hostname_label(void **state)
{
  struct gq_gpujob j;
  struct gq_node labelled, bare, other;
  struct gq_pod p;
  json_t *pod;
  char why[256];

  (void)state;
  job(&j, "eval", 1, "'containers':[{'name':'c','image':'x'}]");
  node_h(&labelled, "gpu-1", "gpu-1.example", "za");
  node_h(&bare, "gpu-2", NULL, "za");
  node_h(&other, "gpu-3", "gpu-3", "za");

  /* The hostname label can differ from the node's name. */
  pod = gq_podspec_pod(&j, 1, 0, &labelled, NULL);
  decode(pod, &p);
  assert_null(gq_node_eligible(&labelled, &p.sched, why, sizeof(why)));
  assert_non_null(gq_node_eligible(&other, &p.sched, why, sizeof(why)));
  gq_pod_release(&p);
  json_decref(pod);

  /* No hostname label: pinned by metadata.name. */
  pod = gq_podspec_pod(&j, 1, 0, &bare, NULL);
  decode(pod, &p);
  assert_null(gq_node_eligible(&bare, &p.sched, why, sizeof(why)));
  assert_non_null(gq_node_eligible(&other, &p.sched, why, sizeof(why)));
  gq_pod_release(&p);
  json_decref(pod);

  gq_gpujob_release(&j);

  /* A null term (the decoder reads it as empty) matches no node, before
   * and after the pin. */
  job(&j, "eval", 1,
      "'affinity':{'nodeAffinity':{'requiredDuringSchedulingIgnoredDuringExecution':"
      "{'nodeSelectorTerms':[null]}}},'containers':[{'name':'c','image':'x'}]");
  pod = gq_podspec_pod(&j, 1, 0, &labelled, NULL);
  decode(pod, &p);
  assert_string_equal(gq_node_eligible(&labelled, &p.sched, why, sizeof(why)),
                      "NodeAffinity");
  gq_pod_release(&p);
  json_decref(pod);

  gq_node_release(&labelled);
  gq_node_release(&bare);
  gq_node_release(&other);
  gq_gpujob_release(&j);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_single_replica),
      cmocka_unit_test(test_checkpoint_grace),
      cmocka_unit_test(test_pdb),
      cmocka_unit_test(test_affinity_terms_and_gpu_container),
      cmocka_unit_test(test_multi_replica),
      cmocka_unit_test(test_names_from_unusual_job_names),
      cmocka_unit_test(test_pin_uses_hostname_label),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
