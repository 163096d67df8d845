/* Tests for api/admission: AdmissionReviews as kube-apiserver sends them
 * decoded into struct gq_adm_req (kind, operation, labels, the managed
 * annotation, GPU resources wherever a pod spec may carry them, gates,
 * suspend), malformed envelopes refused with the field named, and
 * decisions rendered as responses (base64 JSONPatch, 403 status). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "api/admission.h"
#include "base/err.h"
#include "decide/gpujob.h"
#include "tests/support/fixture.h"

/* An AdmissionReview (single-quoted JSON) with request members 'req'. */
static json_t *review(const char *req)
{
  char buf[4096];

  snprintf(buf, sizeof(buf),
           "{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
           "'request':{'uid':'705ab4f5-6393-11e8-b7cc-42010a800002',%s}}",
           req);
  return gq_test_json_sq(buf);
}

#define POD_KIND "'kind':{'group':'','version':'v1','kind':'Pod'}"
#define JOB_KIND "'kind':{'group':'batch','version':'v1','kind':'Job'}"

/* Decodes root, failing the test unless it decodes. */
static void decode_ok(json_t *root, struct gq_admission_review *rv)
{
  char err[512];

  if (gq_admission_review_decode(root, rv, err, sizeof(err)) != 0)
    fail_msg("decode: %s", err);
}

static void test_pod_create(void **state)
{
  json_t *root = review(
      POD_KIND
      ",'operation':'CREATE','namespace':'team-a',"
      "'userInfo':{'username':'alice','groups':['system:authenticated']},"
      "'object':{'apiVersion':'v1','kind':'Pod','metadata':{'generateName':"
      "'w-','labels':{'app':'x','bad':7},'annotations':{'gpuq.dev/managed':"
      "'true'}},'spec':{'schedulingGates':[{'name':'a'},{'name':'b'}],"
      "'initContainers':[{'name':'i','resources':{'limits':{"
      "'nvidia.com/mig-1g.10gb':'1'}}}],'containers':[{'name':'c'}]}},"
      "'dryRun':false");
  struct gq_admission_review rv;

  (void)state;
  decode_ok(root, &rv);
  assert_string_equal(rv.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
  assert_int_equal(rv.req.kind, GQ_ADM_POD);
  assert_int_equal(rv.req.op, GQ_ADM_CREATE);
  assert_string_equal(rv.req.ns, "team-a");
  assert_string_equal(rv.req.user, "alice");
  assert_true(rv.req.obj.has_labels);
  assert_int_equal(rv.req.obj.n_labels, 1); /* the number is skipped */
  assert_string_equal(rv.req.obj.labels[0].key, "app");
  assert_true(rv.req.obj.has_annotations);
  assert_string_equal(rv.req.obj.managed, "true");
  assert_true(rv.req.obj.gpus);
  assert_true(rv.req.obj.has_gates);
  assert_int_equal(rv.req.obj.n_gates, 2);
  assert_string_equal(rv.req.obj.gates[1], "b");
  gq_admission_review_release(&rv);
  json_decref(root);
}

/* GPU detection: requests or limits, containers or initContainers; other
 * resources (and AMD's) are not GPUs for gpuq. */
static void test_gpus(void **state)
{
  static const struct {
    const char *containers;
    int want;
  } cases[] = {
      {"'containers':[{'name':'c','resources':{'requests':{"
       "'nvidia.com/gpu':'2'}}}]",
       1},
      {"'containers':[{'name':'c'},{'name':'d','resources':{'limits':{"
       "'cpu':'1','nvidia.com/gpu':'1'}}}]",
       1},
      {"'containers':[{'name':'c','resources':{'limits':{'amd.com/gpu':"
       "'1','cpu':'2'}}}]",
       0},
      {"'containers':[{'name':'c','resources':7}]", 0},
      {"'containers':'x'", 0},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char req[1024];
    json_t *root;
    struct gq_admission_review rv;

    snprintf(req, sizeof(req),
             POD_KIND ",'operation':'CREATE','namespace':'n','object':{"
                      "'metadata':{},'spec':{%s}}",
             cases[i].containers);
    root = review(req);
    decode_ok(root, &rv);
    if (rv.req.obj.gpus != cases[i].want)
      fail_msg("case %zu: gpus %d, want %d", i, rv.req.obj.gpus, cases[i].want);
    assert_false(rv.req.obj.has_labels);
    assert_false(rv.req.obj.has_gates);
    gq_admission_review_release(&rv);
    json_decref(root);
  }
}

static void test_job_and_update(void **state)
{
  json_t *job = review(
      JOB_KIND
      ",'operation':'CREATE','namespace':'team-a','object':{"
      "'metadata':{'labels':{'gpuq.dev/team':'team-a'}},'spec':{'suspend':"
      "true,'template':{'spec':{'containers':[{'name':'c','resources':{"
      "'limits':{'nvidia.com/gpu':'8'}}}]}}}}");
  json_t *upd = review(
      POD_KIND ",'operation':'UPDATE','namespace':'team-a','userInfo':{"
               "'username':'bob'},'object':{'spec':{}},'oldObject':{'spec':{"
               "'schedulingGates':[{'name':'gpuq.dev/admission'}]}}");
  struct gq_admission_review rv;

  (void)state;
  decode_ok(job, &rv);
  assert_int_equal(rv.req.kind, GQ_ADM_JOB);
  assert_true(rv.req.obj.suspend);
  assert_true(rv.req.obj.gpus);
  assert_string_equal(rv.req.obj.labels[0].value, "team-a");
  gq_admission_review_release(&rv);
  decode_ok(upd, &rv);
  assert_int_equal(rv.req.op, GQ_ADM_UPDATE);
  assert_int_equal(rv.req.obj.n_gates, 0);
  assert_int_equal(rv.req.old.n_gates, 1);
  assert_string_equal(rv.req.old.gates[0], GQ_GATE_ADMISSION);
  gq_admission_review_release(&rv);
  json_decref(job);
  json_decref(upd);
}

/* Each malformed envelope names its field. */
static void test_malformed(void **state)
{
  static const struct {
    const char *json;
    const char *want;
  } cases[] = {
      {"[1]", "body: must be a JSON object"},
      {"{'kind':'AdmissionReview','request':{}}", "apiVersion: required "
                                                  "value"},
      {"{'apiVersion':'admission.k8s.io/v1beta1','kind':'AdmissionReview'}",
       "apiVersion: must be admission.k8s.io/v1, got "
       "\"admission.k8s.io/v1beta1\""},
      {"{'apiVersion':'admission.k8s.io/v1','kind':'Pod'}",
       "kind: must be AdmissionReview, got \"Pod\""},
      {"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview'}",
       "request: required value"},
      {"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
       "'request':{'operation':'CREATE'}}",
       "request.uid: required value"},
      {"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
       "'request':{'uid':'u','operation':'PATCH'}}",
       "request.operation: must be one of"},
      {"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
       "'request':{'uid':'u','operation':'CREATE','kind':{'kind':'Pod'}}}",
       "request.object: required value"},
      {"{'apiVersion':'admission.k8s.io/v1','kind':'AdmissionReview',"
       "'request':{'uid':'u','operation':'UPDATE','kind':{'kind':'Pod'},"
       "'object':{}}}",
       "request.oldObject: required value"},
  };
  (void)state;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    json_t *root = gq_test_json_sq(cases[i].json);
    struct gq_admission_review rv;
    char err[512] = "";

    assert_int_equal(gq_admission_review_decode(root, &rv, err, sizeof(err)),
                     GQ_EINVAL);
    if (strncmp(err, cases[i].want, strlen(cases[i].want)))
      fail_msg("case %zu: '%s', want '%s'", i, err, cases[i].want);
    json_decref(root);
  }
}

/* Other kinds and DELETE need no object. */
static void test_no_object_needed(void **state)
{
  json_t *del = review(POD_KIND ",'operation':'DELETE'");
  json_t *cm = review("'kind':{'group':'','version':'v1','kind':'ConfigMap'},"
                      "'operation':'CREATE'");
  struct gq_admission_review rv;

  (void)state;
  decode_ok(del, &rv);
  assert_int_equal(rv.req.op, GQ_ADM_DELETE);
  gq_admission_review_release(&rv);
  decode_ok(cm, &rv);
  assert_int_equal(rv.req.kind, GQ_ADM_OTHER);
  gq_admission_review_release(&rv);
  json_decref(del);
  json_decref(cm);
}

static void test_response(void **state)
{
  struct gq_adm_result res = {.allowed = 1, .n_ops = 1};
  unsigned char bin[512];
  json_t *out, *r;
  const char *b64;
  int n;

  (void)state;
  res.ops[0].op = "add";
  snprintf(res.ops[0].path, sizeof(res.ops[0].path), "/spec/suspend");
  snprintf(res.ops[0].value, sizeof(res.ops[0].value), "true");
  out = gq_admission_response("u1", &res);
  assert_string_equal(json_string_value(json_object_get(out, "apiVersion")),
                      "admission.k8s.io/v1");
  assert_string_equal(json_string_value(json_object_get(out, "kind")),
                      "AdmissionReview");
  r = json_object_get(out, "response");
  assert_string_equal(json_string_value(json_object_get(r, "uid")), "u1");
  assert_true(json_is_true(json_object_get(r, "allowed")));
  assert_string_equal(json_string_value(json_object_get(r, "patchType")),
                      "JSONPatch");
  b64 = json_string_value(json_object_get(r, "patch"));
  n = EVP_DecodeBlock(bin, (const unsigned char *)b64, (int)strlen(b64));
  assert_true(n > 0);
  bin[n] = '\0';
  assert_string_equal((char *)bin,
                      "[{\"op\":\"add\",\"path\":\"/spec/suspend\","
                      "\"value\":true}]");
  assert_null(json_object_get(r, "status"));
  json_decref(out);

  memset(&res, 0, sizeof(res));
  snprintf(res.msg, sizeof(res.msg), "namespace \"x\" is not admitted");
  out = gq_admission_response("u2", &res);
  r = json_object_get(out, "response");
  assert_true(json_is_false(json_object_get(r, "allowed")));
  assert_null(json_object_get(r, "patch"));
  assert_int_equal(
      json_integer_value(json_object_get(json_object_get(r, "status"), "code")),
      403);
  assert_string_equal(json_string_value(json_object_get(
                          json_object_get(r, "status"), "message")),
                      "namespace \"x\" is not admitted");
  json_decref(out);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pod_create),       cmocka_unit_test(test_gpus),
      cmocka_unit_test(test_job_and_update),   cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_no_object_needed), cmocka_unit_test(test_response),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
