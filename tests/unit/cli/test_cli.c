/* kubectl-gpuq's pure pieces: kubectl's flag forms (cli/kube.h), table
 * and -o json output (cli/table.h), the queue row's ETA, age and defaults
 * (cli/commands.h), node STATUS (cordoned, draining), and `why`'s first
 * failing constraint per node on a small cluster with one node for each
 * reason (cli/cluster.h).
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
#include "api/teamquota.h"
#include "base/clock.h"
#include "cli/cluster.h"
#include "cli/commands.h"
#include "cli/kube.h"
#include "cli/table.h"
#include "tests/support/fixture.h"

/* Parses a NULL-terminated argument list with gq_cli_parse(). */
static int parse(struct gq_cli_opts *o, unsigned allowed, int max_args, ...)
{
  char *argv[16];
  int argc = 0;
  va_list ap;

  va_start(ap, max_args);
  while (argc < 16 && (argv[argc] = va_arg(ap, char *)) != NULL)
    argc++;
  va_end(ap);
  return gq_cli_parse(argc, argv, "test", allowed, max_args, o);
}

static void test_parse(void **state)
{
  struct gq_cli_opts o;

  (void)state;
  assert_int_equal(parse(&o, GQ_CLI_NS | GQ_CLI_TEAM, 0, "--kubeconfig=/k",
                         "--context", "prod", "-n", "research", "--team",
                         "vision", "-o", "json", NULL), 0);
  assert_string_equal(o.kubeconfig, "/k");
  assert_string_equal(o.context, "prod");
  assert_string_equal(o.ns, "research");
  assert_string_equal(o.team, "vision");
  assert_true(o.json);
  assert_int_equal(parse(&o, GQ_CLI_NS, 1, "JOB", "-nresearch", "-ojson",
                         NULL), 0);
  assert_string_equal(o.args[0], "JOB");
  assert_string_equal(o.ns, "research");
  assert_true(o.json);
  assert_int_equal(parse(&o, GQ_CLI_NS, 0, "--namespace=x", "-A",
                         "--output=json", NULL), 0);
  assert_string_equal(o.ns, "x");
  assert_true(o.all_ns);
  assert_int_equal(parse(&o, GQ_CLI_NS, 0, "--all-namespaces", NULL), 0);
  assert_true(o.all_ns);
  /* usage errors: exit code 2 */
  assert_int_equal(parse(&o, GQ_CLI_NS, 0, "-o", "yaml", NULL), 2);
  assert_int_equal(parse(&o, 0, 0, "--team", "x", NULL), 2);  /* not here */
  assert_int_equal(parse(&o, 0, 0, "-A", NULL), 2);
  assert_int_equal(parse(&o, GQ_CLI_NS, 0, "-n", NULL), 2);   /* no value */
  assert_int_equal(parse(&o, GQ_CLI_NS, 0, "--context=", NULL), 2);
  assert_int_equal(parse(&o, GQ_CLI_NS, 1, "a", "b", NULL), 2);
  assert_int_equal(parse(&o, GQ_CLI_NS, 0, "--bogus", NULL), 2);
}

/* Prints rows with gq_cli_print() into a heap string. */
static char *print(const json_t *rows, const struct gq_cli_col *cols,
                   size_t n, int json)
{
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);

  assert_non_null(f);
  gq_cli_print(f, "Test", rows, cols, n, json);
  fclose(f);
  return text;
}

static void test_table(void **state)
{
  static const struct gq_cli_col cols[] = {{"NAME", "name"}, {"GPUS", "gpus"},
                                           {"READY", "ready"}};
  json_t *rows = gq_test_json_sq("[{'name':'a','gpus':16,'ready':true},"
                                 "{'name':'longer-name','gpus':null}]");
  json_t *doc;
  char *text;

  (void)state;
  text = print(rows, cols, 3, 0);
  assert_string_equal(text, "NAME          GPUS   READY\n"
                            "a             16     true\n"
                            "longer-name   -      -\n");
  free(text);
  text = print(rows, cols, 3, 1);
  doc = json_loads(text, 0, NULL);
  assert_non_null(doc);
  assert_string_equal(json_string_value(json_object_get(doc, "kind")), "Test");
  assert_true(json_equal(json_object_get(doc, "items"), rows));
  json_decref(doc);
  free(text);
  json_decref(rows);
}

/* A GpuJob document created at created_ms with status members status_sq
 * (single quotes) and, when eta_ms is not 0, status.estimatedStartTime. */
static json_t *job_doc(int64_t created_ms, int64_t eta_ms,
                       const char *status_sq)
{
  json_t *j = gq_test_json_sq("{'metadata':{'name':'j','namespace':'ns'},"
                              "'spec':{'team':'t','gpusPerReplica':8}}");
  json_t *st = gq_test_json_sq(status_sq);
  char ts[32];

  gq_time_format(created_ms, ts, sizeof(ts));
  json_object_set_new(json_object_get(j, "metadata"), "creationTimestamp",
                      json_string(ts));
  if (eta_ms) {
    gq_time_format(eta_ms, ts, sizeof(ts));
    json_object_set_new(st, "estimatedStartTime", json_string(ts));
  }
  json_object_set_new(j, "status", st);
  return j;
}

static void test_queue_row(void **state)
{
  const int64_t now = 1800000000000;
  json_t *job, *row;

  (void)state;
  job = job_doc(now - 330000, now + 600000,
                "{'phase':'Queued','queuePosition':3,'gpus':16,"
                "'reason':'WaitingForQuota','message':'m'}");
  row = gq_cli_queue_row(job, now);
  assert_string_equal(json_string_value(json_object_get(row, "age")), "5m30s");
  assert_string_equal(json_string_value(json_object_get(row, "eta")), "10m");
  assert_int_equal(json_integer_value(json_object_get(row, "position")), 3);
  assert_int_equal(json_integer_value(json_object_get(row, "priority")), 0);
  assert_int_equal(json_integer_value(json_object_get(row, "gpus")), 16);
  assert_string_equal(json_string_value(json_object_get(row, "reason")),
                      "WaitingForQuota");
  json_decref(row);
  json_decref(job);
  /* an ETA in the past is "now"; no status yet: Pending, no ETA */
  job = job_doc(now - 1000, now - 1000, "{'phase':'Queued'}");
  row = gq_cli_queue_row(job, now);
  assert_string_equal(json_string_value(json_object_get(row, "eta")), "now");
  json_decref(row);
  json_decref(job);
  job = job_doc(now - 1000, 0, "{}");
  row = gq_cli_queue_row(job, now);
  assert_string_equal(json_string_value(json_object_get(row, "kind")),
                      "GpuJob");
  json_decref(row);
  /* a stand-in shows the workload it queues (docs/integrations.md) */
  json_object_set_new(json_object_get(job, "spec"), "workload",
                      gq_test_json_sq("{'kind':'Pod','name':'notebook',"
                                      "'pods':['notebook']}"));
  row = gq_cli_queue_row(job, now);
  assert_string_equal(json_string_value(json_object_get(row, "kind")),
                      "Pod");
  assert_string_equal(json_string_value(json_object_get(row, "name")),
                      "notebook");
  assert_string_equal(json_string_value(json_object_get(row, "phase")),
                      "Pending");
  assert_string_equal(json_string_value(json_object_get(row, "eta")), "-");
  assert_true(json_is_null(json_object_get(row, "position")));
  json_decref(row);
  json_decref(job);
}

/* A Ready node: name, product ("" = no label), memory label MiB (0 =
 * none), nvidia.com/gpu count, extra spec members (single quotes). */
static json_t *node_doc(const char *name, const char *product, int mem,
                        int gpus, const char *spec, const char *ready)
{
  char labels[512] = "", buf[2048];

  if (product[0])
    snprintf(labels, sizeof(labels),
             ",'nvidia.com/gpu.product':'%s','nvidia.com/gpu.memory':'%d'",
             product, mem);
  snprintf(buf, sizeof(buf),
           "{'metadata':{'name':'%s','labels':{'kubernetes.io/hostname':"
           "'%s'%s}},'spec':{%s},'status':{'capacity':{'cpu':'64','memory':"
           "'512Gi','pods':'110','nvidia.com/gpu':'%d'},'allocatable':{'cpu':"
           "'64','memory':'512Gi','pods':'110','nvidia.com/gpu':'%d'},"
           "'conditions':[{'type':'Ready','status':'%s'}]}}",
           name, name, labels, spec, gpus, gpus, ready);
  return gq_test_json_sq(buf);
}

#define H100 "NVIDIA-H100-80GB-HBM3"

/* One node per reason; two pods on a-full (one terminating) and a
 * finished one on b-free that holds nothing. */
static void cluster(struct gq_cli_cluster *cl)
{
  json_t *nodes = json_array(), *list, *pods;

  json_array_append_new(nodes, node_doc("a-full", H100, 81559, 8, "", "True"));
  json_array_append_new(nodes, node_doc("b-free", H100, 81559, 8, "", "True"));
  json_array_append_new(nodes, node_doc("c-a100", "NVIDIA-A100-SXM4-80GB",
                                        81920, 8, "", "True"));
  json_array_append_new(nodes, node_doc("d-t4", "Tesla-T4", 15360, 8,
      "'taints':[{'key':'nvidia.com/gpu','value':'true','effect':"
      "'NoSchedule'}]", "True"));
  json_array_append_new(nodes, node_doc("e-cordon", H100, 81559, 8,
                                        "'unschedulable':true", "True"));
  json_array_append_new(nodes, node_doc("f-cpu", "", 0, 0, "", "True"));
  json_array_append_new(nodes, node_doc("g-40g", H100, 40960, 8, "", "True"));
  json_array_append_new(nodes, node_doc("h-v100", "Tesla-V100", 81559, 8, "",
                                        "True"));
  json_array_append_new(nodes, node_doc("i-down", H100, 81559, 8, "",
                                        "False"));
  json_array_append_new(nodes, gq_test_json_sq(
      "{'metadata':{'name':'z-bad'},'status':{'allocatable':"
      "{'nvidia.com/gpu':'lots'}}}"));
  list = json_pack("{s:o}", "items", nodes);
  pods = gq_test_json_sq(
      "{'items':["
      "{'metadata':{'name':'p1','namespace':'ns','labels':{'gpuq.dev/job':"
      "'x'}},'spec':{'nodeName':'a-full','containers':[{'name':'c',"
      "'resources':{'requests':{'nvidia.com/gpu':'4'},'limits':"
      "{'nvidia.com/gpu':'4'}}}]},'status':{'phase':'Running'}},"
      "{'metadata':{'name':'p2','namespace':'ns','deletionTimestamp':"
      "'2027-01-01T00:00:00Z','labels':{'gpuq.dev/job':'x'}},'spec':"
      "{'nodeName':'a-full','containers':[{'name':'c','resources':"
      "{'requests':{'nvidia.com/gpu':'4'},'limits':{'nvidia.com/gpu':'4'}}}]},"
      "'status':{'phase':'Running'}},"
      "{'metadata':{'name':'done','namespace':'ns'},'spec':{'nodeName':"
      "'b-free','containers':[{'name':'c','resources':{'requests':"
      "{'nvidia.com/gpu':'8'},'limits':{'nvidia.com/gpu':'8'}}}]},"
      "'status':{'phase':'Succeeded'}}]}");
  gq_cli_cluster_init(cl, list, pods);
  json_decref(list);
  json_decref(pods);
}

static const json_t *row_of(const json_t *rows, const char *node)
{
  const json_t *r;
  size_t i;

  json_array_foreach(rows, i, r)
    if (!strcmp(json_string_value(json_object_get(r, "node")), node))
      return r;
  fail_msg("no row for node %s", node);
  return NULL;
}

static void expect(const json_t *rows, const char *node, const char *reason,
                   const char *msg_part)
{
  const json_t *r = row_of(rows, node);
  const char *got = json_string_value(json_object_get(r, "reason"));
  const char *msg = json_string_value(json_object_get(r, "message"));

  if (strcmp(got, reason) || !strstr(msg, msg_part))
    fail_msg("node %s: got %s '%s', want %s '...%s...'", node, got, msg,
             reason, msg_part);
  assert_true(json_is_true(json_object_get(r, "fits")) == !reason[0]);
}

static void test_why_nodes(void **state)
{
  struct gq_cli_cluster cl;
  struct gq_gpujob j;
  struct gq_teamquota q;
  json_t *rows = json_array();

  (void)state;
  cluster(&cl);
  assert_int_equal(cl.n_nodes, 9);
  assert_int_equal(cl.skipped, 1); /* z-bad: the quantity does not decode */
  gq_test_gpujob_sq(&j,
      "{'apiVersion':'gpuq.dev/v1alpha1','kind':'GpuJob','metadata':"
      "{'name':'j','namespace':'ns','uid':'u'},'spec':{'team':'t',"
      "'gpusPerReplica':8,'gpu':{'products':['" H100 "',"
      "'NVIDIA-A100-SXM4-80GB','Tesla-T4'],'minMemoryMiB':80000},"
      "'template':{'spec':{'containers':[{'name':'c','image':'x'}]}}}}");
  gq_test_teamquota_sq(&q,
      "{'apiVersion':'gpuq.dev/v1alpha1','kind':'TeamQuota','metadata':"
      "{'name':'t'},'spec':{'namespaces':['ns'],'resources':[{'flavor':'"
      H100 "','nominal':16}]}}");
  assert_int_equal(gq_cli_why_nodes(&cl, &j, &q, rows), 1);
  assert_int_equal(json_array_size(rows), 9);
  expect(rows, "a-full", "GPUs",
         "Insufficient nvidia.com/gpu (requested 8, free 0 of 8)");
  expect(rows, "b-free", "", "1 replica of 8 nvidia.com/gpu fits now");
  expect(rows, "c-a100", "Quota", "team t has no quota for GPU product "
                                  "NVIDIA-A100-SXM4-80GB (nvidia.com/gpu)");
  expect(rows, "d-t4", "Taint", "untolerated taint {nvidia.com/gpu: true}");
  expect(rows, "e-cordon", "Unschedulable", "unschedulable");
  expect(rows, "f-cpu", "NoGpu", "");
  expect(rows, "g-40g", "GpuMemory", "");
  expect(rows, "h-v100", "GpuProduct", "Tesla-V100");
  expect(rows, "i-down", "NotReady", "not ready");
  json_decref(rows);
  /* without a usable TeamQuota there is no per-node quota check */
  rows = json_array();
  assert_int_equal(gq_cli_why_nodes(&cl, &j, NULL, rows), 2);
  expect(rows, "c-a100", "", "fits now");
  json_decref(rows);
  gq_teamquota_release(&q);
  gq_gpujob_release(&j);
  gq_cli_cluster_release(&cl);
}

static void test_node_status(void **state)
{
  struct gq_cli_cluster cl;
  char buf[96];
  long a, e;

  (void)state;
  cluster(&cl);
  a = gq_snapshot_find(&cl.cap.snap, "a-full");
  e = gq_snapshot_find(&cl.cap.snap, "e-cordon");
  assert_true(a >= 0 && e >= 0);
  /* a-full: 8 GPUs used (the terminating pod still holds its 4), two gpuq
   * pods, one of them leaving; the finished pod on b-free holds nothing */
  assert_int_equal(gq_snapshot_available(&cl.cap.snap, (size_t)a,
                                         "nvidia.com/gpu"), 0);
  assert_int_equal(cl.gpuq_pods[a], 2);
  assert_int_equal(cl.leaving[a], 1);
  assert_int_equal(gq_snapshot_available(&cl.cap.snap,
      (size_t)gq_snapshot_find(&cl.cap.snap, "b-free"), "nvidia.com/gpu"), 8);
  gq_cli_node_status(cl.cap.snap.nodes[a].node, cl.leaving[a], buf, sizeof(buf));
  assert_string_equal(buf, "Ready"); /* not cordoned: pods just end */
  gq_cli_node_status(cl.cap.snap.nodes[e].node, 0, buf, sizeof(buf));
  assert_string_equal(buf, "Ready,SchedulingDisabled");
  gq_cli_node_status(cl.cap.snap.nodes[e].node, 1, buf, sizeof(buf));
  assert_string_equal(buf, "Ready,SchedulingDisabled,Draining");
  gq_cli_node_status(cl.cap.snap.nodes[gq_snapshot_find(&cl.cap.snap, "i-down")].node,
                     0, buf, sizeof(buf));
  assert_string_equal(buf, "NotReady");
  gq_cli_cluster_release(&cl);
  {
    struct gq_node n;
    json_t *doc = node_doc("k", H100, 81559, 8,
        "'taints':[{'key':'karpenter.sh/disrupted','effect':'NoSchedule'}]",
        "True");

    assert_int_equal(gq_node_decode(doc, NULL, &n, buf, sizeof(buf)), 0);
    gq_cli_node_status(&n, 1, buf, sizeof(buf));
    assert_string_equal(buf, "Ready,Draining");
    gq_node_release(&n);
    json_decref(doc);
  }
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse),
      cmocka_unit_test(test_table),
      cmocka_unit_test(test_queue_row),
      cmocka_unit_test(test_why_nodes),
      cmocka_unit_test(test_node_status),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
