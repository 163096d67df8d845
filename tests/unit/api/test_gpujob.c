/* The compact GpuJob (api/gpujob.h): a decoded job owns its strings and
 * outlives its JSON, templates and their pod-scheduling fields are shared,
 * the status is read back field by field (has / bad), an invalid job keeps
 * what a controller needs to report it; and the string packer
 * (api/json.h) it is built on. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "api/gpujob.h"
#include "api/json.h"
#include "base/alloc.h"
#include "tests/support/fixture.h"

/* A valid job: name, args (not read by placement) and cpu (read by it)
 * vary; the rest of the template is fixed. */
static json_t *job_json(const char *name, const char *arg, const char *cpu)
{
  char buf[1024];

  snprintf(buf, sizeof(buf),
           "{'apiVersion':'gpuq.dev/v1alpha1','kind':'GpuJob',"
           "'metadata':{'name':'%s','namespace':'ml','uid':'uid-%s',"
           "'resourceVersion':'7','generation':2,'labels':{'app':'x'},"
           "'finalizers':['gpuq.dev/pods','other.io/keep']},"
           "'spec':{'team':'vision','gpusPerReplica':2,"
           "'template':{'metadata':{'labels':{'app':'x'}},"
           "'spec':{'containers':[{'name':'c','image':'i','args':['%s'],"
           "'resources':{'requests':{'cpu':'%s'}}}],"
           "'tolerations':[{'key':'k','operator':'Exists'}]}}}}",
           name, name, arg, cpu);
  return gq_test_json_sq(buf);
}

static void decode_ok(json_t *obj, struct gq_gpujob *j)
{
  char err[GQ_DEC_MSG_MAX];

  if (gq_gpujob_decode(obj, j, err, sizeof(err)) != 0)
    fail_msg("decode: %s", err);
}

/* The decoded job keeps no reference to the JSON: free it, then read. */
static void test_owns_strings(void **state)
{
  json_t *obj = job_json("a", "--x", "4");
  struct gq_gpujob j;
  json_t *tmpl;

  (void)state;
  decode_ok(obj, &j);
  assert_int_equal(obj->refcount, 1);
  json_decref(obj);
  assert_string_equal(j.meta.name, "a");
  assert_string_equal(j.meta.ns, "ml");
  assert_string_equal(j.meta.uid, "uid-a");
  assert_string_equal(j.meta.resource_version, "7");
  assert_string_equal(gq_meta_label(&j.meta, "app"), "x");
  assert_string_equal(j.team, "vision");
  assert_string_equal(j.gpu_resource, GQ_DEFAULT_GPU_RESOURCE);
  assert_int_equal(j.n_finalizers, 2);
  assert_string_equal(j.finalizers[0], "gpuq.dev/pods");
  assert_string_equal(j.finalizers[1], "other.io/keep");
  assert_null(j.invalid);
  assert_int_equal(j.sched->cpu_milli, 4000);
  assert_int_equal(j.sched->n_tolerations, 1);
  assert_string_equal(j.sched->tolerations[0].key, "k");
  tmpl = gq_gpujob_template_json(&j);
  assert_non_null(tmpl);
  assert_string_equal(json_string_value(json_array_get(json_object_get(
                          json_array_get(json_object_get(
                                             json_object_get(tmpl, "spec"),
                                             "containers"),
                                         0),
                          "args"),
                                                      0)),
                      "--x");
  json_decref(tmpl);
  gq_gpujob_release(&j);
}

/* Equal templates are one; templates that differ only where placement
 * does not look share their decoded pod-scheduling fields and shape. */
static void test_templates_shared(void **state)
{
  json_t *o1 = job_json("a", "--x", "4"), *o2 = job_json("b", "--x", "4");
  json_t *o3 = job_json("c", "--y", "4"), *o4 = job_json("d", "--x", "8");
  struct gq_gpujob a, b, cc, d;
  size_t nt, ns, nz;
  json_t *tmpl;

  (void)state;
  decode_ok(o1, &a);
  decode_ok(o2, &b);
  decode_ok(o3, &cc);
  decode_ok(o4, &d);
  gq_gpujob_template_counts(&nt, &ns, &nz);
  assert_int_equal(nt, 3); /* --x/4 (twice), --y/4, --x/8 */
  assert_int_equal(ns, 2); /* cpu 4, cpu 8 */
  /* each text (about 230 bytes) is deflated against the first of its
   * group: the three together take less than one */
  assert_true(nz < 200);
  tmpl = gq_gpujob_template_json(&cc);
  assert_string_equal(json_string_value(json_array_get(json_object_get(
                          json_array_get(json_object_get(
                                             json_object_get(tmpl, "spec"),
                                             "containers"),
                                         0),
                          "args"),
                                                      0)),
                      "--y");
  json_decref(tmpl);
  assert_ptr_equal(a.template, b.template);
  assert_ptr_not_equal(a.template, cc.template);
  assert_ptr_equal(a.sched, cc.sched);
  assert_ptr_not_equal(a.sched, d.sched);
  assert_int_equal(a.shape, cc.shape);
  assert_int_not_equal(a.shape, d.shape);
  gq_gpujob_release(&a);
  gq_gpujob_template_counts(&nt, &ns, NULL);
  assert_int_equal(nt, 3); /* b still holds it */
  gq_gpujob_release(&b);
  gq_gpujob_release(&cc);
  gq_gpujob_release(&d);
  gq_gpujob_template_counts(&nt, &ns, NULL);
  assert_int_equal(nt, 0);
  assert_int_equal(ns, 0);
  json_decref(o1);
  json_decref(o2);
  json_decref(o3);
  json_decref(o4);
}

/* The status fields gpuq writes, read back with which are there and
 * which are in a form gpuq does not read. */
static void test_status_read_back(void **state)
{
  json_t *obj = job_json("s", "--x", "4");
  struct gq_gpujob j;

  (void)state;
  json_object_set_new(
      obj, "status",
      gq_test_json_sq(
          "{'phase':'Admitted','reason':'Admitted','message':'m',"
          "'gpus':2,'queuePosition':null,'estimatedStartTime':'soon',"
          "'queuedAt':'2026-01-02T03:04:05Z','attempts':1,"
          "'nodes':['n1',7],'observedGeneration':2,"
          "'conditions':[{'type':'Admitted','status':'True',"
          "'reason':'Admitted','message':'the job holds its GPUs',"
          "'lastTransitionTime':'2026-01-02T03:04:06Z',"
          "'observedGeneration':2},{'type':'X','extra':1}]}"));
  decode_ok(obj, &j);
  json_decref(obj);
  assert_int_equal(j.status.phase, GQ_PHASE_ADMITTED);
  assert_string_equal(j.status.reason, "Admitted");
  assert_string_equal(j.status.message, "m");
  assert_int_equal(j.status.gpus, 2);
  assert_int_equal(j.status.attempts, 1);
  assert_int_equal(j.status.queued_ms, 1767323045000LL);
  assert_true(j.status.has & GQ_ST_POSITION); /* null: there, as null */
  assert_false(j.status.bad & GQ_ST_POSITION);
  assert_true(j.status.bad & GQ_ST_ETA);
  assert_true(j.status.bad & GQ_ST_NODES);
  assert_int_equal(j.status.n_nodes, 1);
  assert_string_equal(j.status.nodes[0], "n1");
  assert_false(j.status.has & GQ_ST_START);
  assert_true(j.status.bad & GQ_ST_CONDITIONS); /* the foreign one */
  assert_int_equal(j.status.n_conds, 1);
  assert_string_equal(j.status.conds[0].message, "the job holds its GPUs");
  assert_int_equal(j.status.conds[0].transition_ms, 1767323046000LL);
  assert_int_equal(j.status.conds[0].observed_generation, 2);
  gq_gpujob_release(&j);
}

/* A rejected job: the decoder's message is kept, and what a controller
 * needs to report it is read without validation. */
static void test_invalid(void **state)
{
  json_t *obj = job_json("bad", "--x", "4");
  struct gq_gpujob j;
  char err[GQ_DEC_MSG_MAX];

  (void)state;
  json_object_set_new(json_object_get(obj, "spec"), "gpusPerReplica",
                      json_integer(-2));
  json_object_set_new(json_object_get(obj, "metadata"), "deletionTimestamp",
                      json_string("later"));
  json_object_set_new(obj, "status",
                      gq_test_json_sq("{'reason':'InvalidSpec',"
                                      "'attempts':'many','gpus':2}"));
  assert_int_not_equal(gq_gpujob_decode(obj, &j, err, sizeof(err)), 0);
  assert_string_equal(err, "metadata.deletionTimestamp: must be an RFC "
                           "3339 timestamp, got \"later\"");
  gq_gpujob_decode_invalid(obj, err, &j);
  json_decref(obj);
  assert_string_equal(j.invalid, err);
  assert_string_equal(j.meta.name, "bad");
  assert_string_equal(j.meta.uid, "uid-bad");
  assert_int_equal(j.meta.generation, 2);
  assert_int_equal(j.meta.deletion_ms, 1); /* there, unreadable */
  assert_int_equal(j.n_finalizers, 2);
  assert_null(j.template);
  assert_null(j.sched);
  assert_null(gq_gpujob_template_json(&j));
  assert_string_equal(j.status.reason, "InvalidSpec");
  assert_true(j.status.bad & GQ_ST_ATTEMPTS);
  assert_false(j.status.bad & GQ_ST_GPUS);
  assert_int_equal(j.status.gpus, 2);
  gq_gpujob_release(&j);
}

/* spec.workload: a stand-in's workload, owned by the decoded job; a
 * PodGroup must list one pod per replica; stand-in names are labels. */
static void test_workload(void **state)
{
  json_t *obj = job_json("group-trio", "--x", "1");
  struct gq_gpujob j;
  char err[GQ_DEC_MSG_MAX], name[GQ_WL_NAME_MAX + 1], longname[300];

  (void)state;
  json_object_set_new(json_object_get(obj, "spec"), "replicas",
                      json_integer(2));
  json_object_set_new(json_object_get(obj, "spec"), "workload",
                      gq_test_json_sq("{'kind':'PodGroup','name':'trio',"
                                      "'pods':['g-0','g-1']}"));
  decode_ok(obj, &j);
  json_decref(obj);
  assert_int_equal(j.wl_kind, GQ_WL_POD_GROUP);
  assert_string_equal(j.wl_name, "trio");
  assert_int_equal(j.n_wl_pods, 2);
  assert_string_equal(j.wl_pods[1], "g-1");
  assert_string_equal(gq_wl_kind_name(j.wl_kind), "PodGroup");
  gq_gpujob_release(&j);

  obj = job_json("group-trio", "--x", "1");
  json_object_set_new(json_object_get(obj, "spec"), "workload",
                      gq_test_json_sq("{'kind':'PodGroup','name':'trio',"
                                      "'pods':['g-0','g-1']}"));
  assert_int_not_equal(gq_gpujob_decode(obj, &j, err, sizeof(err)), 0);
  assert_string_equal(err, "spec.workload.pods: a PodGroup lists one pod "
                           "per replica, got 2 entries for 1 replicas");
  json_object_set_new(json_object_get(obj, "spec"), "workload",
                      gq_test_json_sq("{'kind':'Deployment','name':'x'}"));
  assert_int_not_equal(gq_gpujob_decode(obj, &j, err, sizeof(err)), 0);
  assert_non_null(strstr(err, "spec.workload.kind"));
  json_decref(obj);

  gq_wl_shadow_name(GQ_WL_POD, "nb.v2", name, sizeof(name));
  assert_string_equal(name, "pod-nb-v2");
  gq_wl_shadow_name(GQ_WL_JOB, "train", name, sizeof(name));
  assert_string_equal(name, "job-train");
  memset(longname, 'a', 200);
  longname[200] = '\0';
  gq_wl_shadow_name(GQ_WL_POD_GROUP, longname, name, sizeof(name));
  assert_int_equal(strlen(name), GQ_WL_NAME_MAX);
  assert_memory_equal(name, "group-aaaa", 10);
  longname[199] = 'b'; /* a different name: a different stand-in */
  {
    char other[GQ_WL_NAME_MAX + 1];

    gq_wl_shadow_name(GQ_WL_POD_GROUP, longname, other, sizeof(other));
    assert_string_not_equal(name, other);
  }
}

/* A status field that fails validation still names itself (the messages
 * of tests/fixtures/invalid stay as they were). */
static void test_status_error_message(void **state)
{
  json_t *obj = job_json("e", "--x", "4");
  struct gq_gpujob j;
  char err[GQ_DEC_MSG_MAX];

  (void)state;
  json_object_set_new(obj, "status",
                      gq_test_json_sq("{'attempts':-1,'phase':'Later'}"));
  assert_int_not_equal(gq_gpujob_decode(obj, &j, err, sizeof(err)), 0);
  assert_string_equal(err, "status.phase: must be one of Pending, Queued, "
                           "Admitted, Running, Preempting, Succeeded, "
                           "Failed, Suspended, got \"Later\"");
  json_decref(obj);
}

static void test_strpack(void **state)
{
  char a[] = "alpha", b[] = "be";
  const char *s1 = a, *s2 = NULL, *s3 = b;
  struct gq_strpack p = {0};
  char *block;

  (void)state;
  gq_strpack_add(&p, &s1);
  gq_strpack_add(&p, &s2);
  gq_strpack_add(&p, &s3);
  block = gq_strpack_done(&p);
  a[0] = b[0] = '?';
  assert_ptr_equal(s1, block);
  assert_string_equal(s1, "alpha");
  assert_null(s2);
  assert_string_equal(s3, "be");
  assert_int_equal(p.n, 0);
  free(block);
  assert_null(gq_strpack_done(&p));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_owns_strings),
      cmocka_unit_test(test_templates_shared),
      cmocka_unit_test(test_status_read_back),
      cmocka_unit_test(test_invalid),
      cmocka_unit_test(test_workload),
      cmocka_unit_test(test_status_error_message),
      cmocka_unit_test(test_strpack),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
