/* gpuq-sim against the real kubectl (issue 3's "done when"): get nodes,
 * apply (create, update, unchanged), get gpujobs -A with the queue columns,
 * get -w receiving a change, describe with events, delete, cordon and
 * uncordon, drain with eviction waiting on a PodDisruptionBudget, an
 * invalid GpuJob rejected naming the field, and strategic patches refused
 * on custom resources, server-side apply's field ownership (managedFields,
 * a conflict, --force-conflicts, a status write, the upgrade from
 * client-side apply). Every kubectl run uses
 * the sim's fresh --cache-dir. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "tests/support/proc.h"

static struct gq_test_sim sim;

static int group_setup(void **state)
{
  (void)state;
  return gq_test_sim_start(&sim, NULL);
}

static int group_teardown(void **state)
{
  (void)state;
  return gq_test_sim_stop(&sim) == 0 ? 0 : -1;
}

/* Runs kubectl and fails the test unless it exits with want_status;
 * returns the output (caller frees with gq_test_out_free). */
#define KUBECTL(o, want, stdin_text, ...)                                    \
  GQ_TEST_KUBECTL(&sim, (o), (want), (stdin_text), __VA_ARGS__)

static void assert_has(const char *text, const char *needle)
{
  if (!strstr(text, needle))
    fail_msg("missing '%s' in:\n%s", needle, text);
}

static void test_get_nodes(void **state)
{
  struct gq_test_out o;

  (void)state;
  KUBECTL(&o, 0, NULL, "get", "nodes");
  assert_has(o.err, "No resources found");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "create", "-f",
          "tests/fixtures/nodes/h100-80gb-8x-ready.json");
  assert_has(o.out, "node/gpu-h100-r12-n02 created");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "get", "nodes");
  assert_has(o.out, "NAME");
  assert_has(o.out, "STATUS");
  assert_has(o.out, "gpu-h100-r12-n02");
  assert_has(o.out, "Ready");
  gq_test_out_free(&o);
}

static void test_apply_examples(void **state)
{
  struct gq_test_out o;

  (void)state;
  KUBECTL(&o, 0, NULL, "create", "namespace", "research");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "create", "namespace", "vision");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "create", "namespace", "interns");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "apply", "-f", "examples/");
  assert_has(o.out, "gpujob.gpuq.dev/llama-finetune created");
  assert_has(o.out, "teamquota.gpuq.dev/research created");
  gq_test_out_free(&o);
  /* Unchanged manifests: no PATCH is sent. */
  KUBECTL(&o, 0, NULL, "apply", "-f", "examples/gpujob-eval-single.yaml");
  assert_has(o.out, "gpujob.gpuq.dev/eval-llama-mmlu unchanged");
  gq_test_out_free(&o);
}

static void test_apply_update(void **state)
{
  static const char job[] =
      "apiVersion: gpuq.dev/v1alpha1\n"
      "kind: GpuJob\n"
      "metadata: {name: edit-me, namespace: research}\n"
      "spec:\n"
      "  team: research\n"
      "  priority: %d\n"
      "  gpusPerReplica: 2\n"
      "  template: {spec: {containers: [{name: c, image: busybox}]}}\n";
  char text[512];
  struct gq_test_out o;

  (void)state;
  snprintf(text, sizeof(text), job, 5);
  KUBECTL(&o, 0, text, "apply", "-f", "-");
  assert_has(o.out, "gpujob.gpuq.dev/edit-me created");
  gq_test_out_free(&o);
  snprintf(text, sizeof(text), job, 50);
  KUBECTL(&o, 0, text, "apply", "-f", "-");
  assert_has(o.out, "gpujob.gpuq.dev/edit-me configured");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "get", "gpujob", "edit-me", "-n", "research", "-o",
          "jsonpath={.spec.priority} {.metadata.generation}");
  assert_string_equal(o.out, "50 2");
  gq_test_out_free(&o);
}

/* The line of `manager/subresource=fieldsV1` lines (ssa_owners()) for
 * manager/sub, or fails. */
static const char *owner_line(const char *text, const char *who, char *buf,
                              size_t len)
{
  const char *p = strstr(text, who), *nl;

  if (!p || (p != text && p[-1] != '\n'))
    fail_msg("no managedFields entry '%s' in:\n%s", who, text);
  nl = strchr(p, '\n');
  snprintf(buf, len, "%.*s", nl ? (int)(nl - p) : (int)strlen(p), p);
  return buf;
}

/* Every managedFields entry of GpuJob research/ssa, one a line. */
static void ssa_owners(struct gq_test_out *o)
{
  KUBECTL(o, 0, NULL, "get", "gpujob", "ssa", "-n", "research",
          "--show-managed-fields", "-o",
          "jsonpath={range .metadata.managedFields[*]}{.manager}/"
          "{.subresource}={.operation} {.fieldsV1}{\"\\n\"}{end}");
}

/* Server-side apply: managedFields recorded, another manager's change of
 * an owned field refused as kube-apiserver refuses it, --force-conflicts
 * moving the field, and a status write recorded with its subresource. */
static void test_server_side_apply(void **state)
{
  static const char job[] =
      "apiVersion: gpuq.dev/v1alpha1\n"
      "kind: GpuJob\n"
      "metadata: {name: ssa, namespace: research}\n"
      "spec: {team: research, priority: %d, gpusPerReplica: 1,\n"
      "       template: {spec: {containers: [{name: c, image: busybox}]}}}\n";
  static const char other[] =
      "apiVersion: gpuq.dev/v1alpha1\n"
      "kind: GpuJob\n"
      "metadata: {name: ssa, namespace: research}\n"
      "spec: {priority: 9}\n";
  char text[512], line[2048];
  struct gq_test_out o;

  (void)state;
  snprintf(text, sizeof(text), job, 5);
  KUBECTL(&o, 0, text, "apply", "--server-side", "-f", "-");
  assert_has(o.out, "gpujob.gpuq.dev/ssa serverside-applied");
  gq_test_out_free(&o);
  ssa_owners(&o);
  owner_line(o.out, "kubectl/=Apply", line, sizeof(line));
  assert_has(line, "\"f:priority\":{}");
  assert_has(line, "\"k:{\\\"name\\\":\\\"c\\\"}\"");
  gq_test_out_free(&o);
  KUBECTL(&o, 1, other, "apply", "--server-side", "--field-manager=ops",
          "-f", "-");
  assert_has(o.err, "Apply failed with 1 conflict: conflict with "
                    "\"kubectl\": .spec.priority");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, other, "apply", "--server-side", "--field-manager=ops",
          "--force-conflicts", "-f", "-");
  assert_has(o.out, "gpujob.gpuq.dev/ssa serverside-applied");
  gq_test_out_free(&o);
  ssa_owners(&o);
  assert_has(owner_line(o.out, "ops/=Apply", line, sizeof(line)),
             "\"f:priority\":{}");
  if (strstr(owner_line(o.out, "kubectl/=Apply", line, sizeof(line)),
             "f:priority"))
    fail_msg("kubectl still owns .spec.priority: %s", line);
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "patch", "gpujob", "ssa", "-n", "research",
          "--subresource=status", "--type=merge", "-p",
          "{\"status\":{\"phase\":\"Queued\"}}");
  gq_test_out_free(&o);
  ssa_owners(&o);
  assert_has(owner_line(o.out, "kubectl-patch/status=Update", line,
                        sizeof(line)),
             "\"f:phase\":{}");
  gq_test_out_free(&o);
}

/* From client-side to server-side apply, as on a real cluster: kubectl's
 * own fields move to its server-side manager without a conflict, unless
 * someone changed them since. */
static void test_server_side_upgrade(void **state)
{
  static const char job[] =
      "apiVersion: gpuq.dev/v1alpha1\n"
      "kind: GpuJob\n"
      "metadata: {name: csa, namespace: research}\n"
      "spec: {team: research, priority: %d, gpusPerReplica: %d,\n"
      "       template: {spec: {containers: [{name: c, image: busybox}]}}}\n";
  char text[512];
  struct gq_test_out o;

  (void)state;
  snprintf(text, sizeof(text), job, 5, 1);
  KUBECTL(&o, 0, text, "apply", "-f", "-");
  gq_test_out_free(&o);
  snprintf(text, sizeof(text), job, 6, 1);
  KUBECTL(&o, 0, text, "apply", "--server-side", "-f", "-");
  assert_has(o.out, "gpujob.gpuq.dev/csa serverside-applied");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "patch", "gpujob", "csa", "-n", "research",
          "--type=merge", "-p", "{\"spec\":{\"gpusPerReplica\":2}}");
  gq_test_out_free(&o);
  KUBECTL(&o, 1, text, "apply", "--server-side", "-f", "-");
  assert_has(o.err, "Apply failed with 1 conflict: conflict with "
                    "\"kubectl-patch\" using gpuq.dev/v1alpha1: "
                    ".spec.gpusPerReplica");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "get", "gpujob", "csa", "-n", "research", "-o",
          "jsonpath={.spec.priority} {.spec.gpusPerReplica}");
  assert_string_equal(o.out, "6 2");
  gq_test_out_free(&o);
}

static void test_get_queue_columns(void **state)
{
  struct gq_test_out o;

  (void)state;
  KUBECTL(&o, 0, NULL, "patch", "gpujob", "llama-finetune", "-n", "research",
          "--subresource=status", "--type=merge", "-p",
          "{\"status\":{\"phase\":\"Queued\",\"gpus\":16,\"queuePosition\":3,"
          "\"estimatedStartTime\":\"2099-01-01T00:00:00Z\"}}");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "get", "gpujobs", "-A");
  assert_has(o.out, "NAMESPACE");
  assert_has(o.out, "TEAM");
  assert_has(o.out, "PRIORITY");
  assert_has(o.out, "GPUS");
  assert_has(o.out, "PHASE");
  assert_has(o.out, "POSITION");
  assert_has(o.out, "ETA");
  assert_has(o.out, "AGE");
  assert_has(o.out, "llama-finetune");
  assert_has(o.out, "Queued");
  /* ETA is a string column: the future time prints as itself. */
  assert_has(o.out, "2099-01-01T00:00:00Z");
  assert_has(o.out, "mig-batch-inference");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "get", "tq");
  assert_has(o.out, "NOMINAL");
  assert_has(o.out, "research");
  gq_test_out_free(&o);
}

static void test_watch_receives_change(void **state)
{
  char path[400];
  struct gq_test_out o;
  pid_t pid;

  (void)state;
  snprintf(path, sizeof(path), "%s/watch.out", sim.dir);
  pid = gq_test_kubectl_bg(&sim, path, "get", "gpujobs", "-n", "research",
                           "-w", NULL);
  assert_true(gq_test_wait_file(path, "edit-me", 20000));
  KUBECTL(&o, 0, NULL, "patch", "gpujob", "edit-me", "-n", "research",
          "--type=merge", "-p", "{\"spec\":{\"priority\":777}}");
  gq_test_out_free(&o);
  assert_true(gq_test_wait_file(path, "777", 20000));
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
}

static void test_describe_with_events(void **state)
{
  struct gq_test_out o;
  char ev[1024], uid[128];

  (void)state;
  KUBECTL(&o, 0, NULL, "get", "gpujob", "llama-finetune", "-n", "research",
          "-o", "jsonpath={.metadata.uid}");
  snprintf(uid, sizeof(uid), "%s", o.out);
  gq_test_out_free(&o);
  snprintf(ev, sizeof(ev),
           "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":"
           "\"llama-finetune.1\",\"namespace\":\"research\"},"
           "\"involvedObject\":{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":"
           "\"GpuJob\",\"name\":\"llama-finetune\",\"namespace\":\"research\","
           "\"uid\":\"%s\"},\"reason\":\"Queued\",\"message\":\"waiting for 16 "
           "GPUs\",\"type\":\"Normal\",\"source\":{\"component\":\"gpuq\"},"
           "\"count\":1,\"firstTimestamp\":\"2026-01-01T00:00:00Z\","
           "\"lastTimestamp\":\"2026-01-01T00:00:00Z\"}",
           uid);
  KUBECTL(&o, 0, ev, "create", "-f", "-");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "describe", "gpujob", "llama-finetune", "-n",
          "research");
  assert_has(o.out, "Name:");
  assert_has(o.out, "llama-finetune");
  assert_has(o.out, "Gpus Per Replica:");
  assert_has(o.out, "Events:");
  assert_has(o.out, "waiting for 16 GPUs");
  gq_test_out_free(&o);
}

static void test_invalid_rejected(void **state)
{
  struct gq_test_out o;

  (void)state;
  KUBECTL(&o, 1, NULL, "apply", "-f",
          "tests/fixtures/invalid/gpujob-negative-gpus.yaml");
  assert_has(o.err, "spec.gpusPerReplica");
  assert_has(o.err, "is invalid");
  gq_test_out_free(&o);
  KUBECTL(&o, 1, NULL, "patch", "gpujob", "edit-me", "-n", "research", "-p",
          "{\"spec\":{\"priority\":1}}");
  assert_has(o.err, "not supported");
  gq_test_out_free(&o);
}

static void test_delete(void **state)
{
  struct gq_test_out o;

  (void)state;
  KUBECTL(&o, 0, NULL, "delete", "gpujob", "edit-me", "-n", "research");
  assert_has(o.out, "gpujob.gpuq.dev \"edit-me\" deleted");
  gq_test_out_free(&o);
  KUBECTL(&o, 1, NULL, "get", "gpujob", "edit-me", "-n", "research");
  assert_has(o.err, "NotFound");
  gq_test_out_free(&o);
}

static void test_cordon_uncordon(void **state)
{
  struct gq_test_out o;

  (void)state;
  KUBECTL(&o, 0, NULL, "cordon", "gpu-h100-r12-n02");
  assert_has(o.out, "cordoned");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "get", "node", "gpu-h100-r12-n02");
  assert_has(o.out, "Ready,SchedulingDisabled");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "uncordon", "gpu-h100-r12-n02");
  assert_has(o.out, "uncordoned");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "get", "node", "gpu-h100-r12-n02", "-o",
          "jsonpath={.spec.unschedulable}");
  assert_string_equal(o.out, "");
  gq_test_out_free(&o);
}

static void test_drain_waits_on_pdb(void **state)
{
  static const char pod[] =
      "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
      "\"trainer-0\",\"namespace\":\"research\",\"labels\":{\"app\":\"t\"},"
      "\"ownerReferences\":[{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":"
      "\"GpuJob\",\"name\":\"llama-finetune\",\"uid\":\"u-1\",\"controller\":"
      "true}]},\"spec\":{\"nodeName\":\"gpu-h100-r12-n02\","
      "\"terminationGracePeriodSeconds\":1,\"containers\":[{\"name\":\"c\","
      "\"image\":\"busybox\"}]}}";
  static const char pdb[] =
      "{\"apiVersion\":\"policy/v1\",\"kind\":\"PodDisruptionBudget\","
      "\"metadata\":{\"name\":\"keep\",\"namespace\":\"research\"},\"spec\":"
      "{\"minAvailable\":1,\"selector\":{\"matchLabels\":{\"app\":\"t\"}}}}";
  struct gq_test_out o;
  char path[400];
  pid_t pid;
  int status;

  (void)state;
  KUBECTL(&o, 0, pod, "create", "-f", "-");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "patch", "pod", "trainer-0", "-n", "research",
          "--subresource=status", "--type=merge", "-p",
          "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":"
          "\"Ready\",\"status\":\"True\"}]}}");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, pdb, "create", "-f", "-");
  gq_test_out_free(&o);
  snprintf(path, sizeof(path), "%s/drain.out", sim.dir);
  pid = gq_test_kubectl_bg(&sim, path, "drain", "gpu-h100-r12-n02",
                           "--ignore-daemonsets", "--timeout=120s", NULL);
  /* The budget refuses: kubectl reports it and retries. */
  assert_true(gq_test_wait_file(path, "disruption budget", 30000));
  KUBECTL(&o, 0, NULL, "delete", "pdb", "keep", "-n", "research");
  gq_test_out_free(&o);
  assert_true(gq_test_wait_file(path, "drained", 60000));
  waitpid(pid, &status, 0);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  KUBECTL(&o, 1, NULL, "get", "pod", "trainer-0", "-n", "research");
  gq_test_out_free(&o);
  KUBECTL(&o, 0, NULL, "get", "node", "gpu-h100-r12-n02");
  assert_has(o.out, "SchedulingDisabled");
  gq_test_out_free(&o);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_get_nodes),
      cmocka_unit_test(test_apply_examples),
      cmocka_unit_test(test_apply_update),
      cmocka_unit_test(test_server_side_apply),
      cmocka_unit_test(test_server_side_upgrade),
      cmocka_unit_test(test_get_queue_columns),
      cmocka_unit_test(test_watch_receives_change),
      cmocka_unit_test(test_describe_with_events),
      cmocka_unit_test(test_invalid_rejected),
      cmocka_unit_test(test_delete),
      cmocka_unit_test(test_cordon_uncordon),
      cmocka_unit_test(test_drain_waits_on_pdb),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
