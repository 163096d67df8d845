/* gpuq-sim's API semantics over raw HTTP: list paging and selectors, watch
 * resume and 410 Gone after compaction, bookmarks and timeouts, 409 on a
 * stale update, finalizers, owner cascading, generateName and dryRun,
 * server-side apply, events under both groups, CRDs created through the
 * API, fault injection, and the discovery kubectl drain needs. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/support/fixture.h"
#include "tests/support/proc.h"

static struct gq_test_sim sim;

static int group_setup(void **state)
{
  static const char *const args[] = {"--watch-window", "5",
                                     "--bookmark-interval-ms", "200", NULL};
  (void)state;
  return gq_test_sim_start(&sim, args);
}

static int group_teardown(void **state)
{
  (void)state;
  return gq_test_sim_stop(&sim) == 0 ? 0 : -1;
}

/* One request; fails unless the status is want. Returns the parsed body
 * (NULL if not JSON); *raw gets the text if raw is not NULL. */
static json_t *call(const char *method, const char *path, const char *body,
                    const char *ctype, int want, char **raw)
{
  char url[512], *resp;
  int code;
  json_t *j;

  snprintf(url, sizeof(url), "%s%s", sim.url, path);
  code = gq_test_http(method, url, body, ctype, NULL, &resp);
  if (code != want)
    fail_msg("%s %s: status %d, want %d: %s", method, path, code, want, resp);
  j = json_loads(resp, JSON_DECODE_ANY, NULL);
  if (raw)
    *raw = resp;
  else
    free(resp);
  return j;
}

static const char *str_at(const json_t *j, const char *a, const char *b)
{
  const json_t *v = json_object_get(j, a);

  return json_string_value(b ? json_object_get(v, b) : v);
}

static void mkns(const char *name, const char *team)
{
  char body[256];

  snprintf(body, sizeof(body),
           "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"team\":\"%s\"}}}",
           name, team);
  json_decref(call("POST", "/api/v1/namespaces", body, NULL, 201, NULL));
}

static void test_list_paging_and_selectors(void **state)
{
  json_t *j;
  char path[256];

  (void)state;
  mkns("p-a", "x");
  mkns("p-b", "y");
  mkns("p-c", "x");
  j = call("GET", "/api/v1/namespaces?labelSelector=team%3Dx", NULL, NULL,
           200, NULL);
  assert_int_equal(json_array_size(json_object_get(j, "items")), 2);
  assert_non_null(str_at(j, "metadata", "resourceVersion"));
  json_decref(j);
  j = call("GET", "/api/v1/namespaces?labelSelector=team%20in%20(x,y)&limit=2",
           NULL, NULL, 200, NULL);
  assert_int_equal(json_array_size(json_object_get(j, "items")), 2);
  assert_non_null(str_at(j, "metadata", "continue"));
  snprintf(path, sizeof(path),
           "/api/v1/namespaces?labelSelector=team%%20in%%20(x,y)&limit=2&"
           "continue=%s",
           str_at(j, "metadata", "continue"));
  json_decref(j);
  j = call("GET", path, NULL, NULL, 200, NULL);
  assert_int_equal(json_array_size(json_object_get(j, "items")), 1);
  assert_null(str_at(j, "metadata", "continue"));
  json_decref(j);
  j = call("GET", "/api/v1/namespaces?fieldSelector=metadata.name%3Dp-b",
           NULL, NULL, 200, NULL);
  assert_int_equal(json_array_size(json_object_get(j, "items")), 1);
  json_decref(j);
  j = call("GET", "/api/v1/namespaces?fieldSelector=metadata.name!%3Dp-b",
           NULL, NULL, 200, NULL);
  assert_true(json_array_size(json_object_get(j, "items")) >= 6);
  json_decref(j);
  j = call("GET", "/api/v1/namespaces?fieldSelector=spec.bogus%3D1", NULL,
           NULL, 400, NULL);
  assert_string_equal(str_at(j, "reason", NULL), "BadRequest");
  json_decref(j);
}

static void test_watch_gone_after_compaction(void **state)
{
  char *raw;
  json_t *j;

  (void)state;
  /* The window holds 5 events and more than 5 changes happened. */
  json_decref(call("GET", "/api/v1/namespaces?watch=true&resourceVersion=1"
                          "&timeoutSeconds=5",
                   NULL, NULL, 200, &raw));
  assert_non_null(strstr(raw, "\"type\":\"ERROR\""));
  assert_non_null(strstr(raw, "\"code\":410"));
  assert_non_null(strstr(raw, "\"reason\":\"Expired\""));
  free(raw);
  /* A resume inside the window replays exactly the later changes. */
  j = call("GET", "/api/v1/namespaces", NULL, NULL, 200, NULL);
  mkns("p-d", "z");
  {
    char path[256];

    snprintf(path, sizeof(path),
             "/api/v1/namespaces?watch=1&resourceVersion=%s&timeoutSeconds=1",
             str_at(j, "metadata", "resourceVersion"));
    json_decref(call("GET", path, NULL, NULL, 200, &raw));
  }
  assert_non_null(strstr(raw, "\"type\":\"ADDED\""));
  assert_non_null(strstr(raw, "p-d"));
  assert_null(strstr(raw, "p-a"));
  free(raw);
  json_decref(j);
}

static void test_watch_bookmarks_and_initial_state(void **state)
{
  char *raw;

  (void)state;
  json_decref(call("GET", "/api/v1/namespaces?watch=1&allowWatchBookmarks=true"
                          "&timeoutSeconds=1&labelSelector=team%3Dx",
                   NULL, NULL, 200, &raw));
  /* No resourceVersion: the current state first, as ADDED events. */
  assert_non_null(strstr(raw, "p-a"));
  assert_non_null(strstr(raw, "p-c"));
  assert_null(strstr(raw, "p-b"));
  assert_non_null(strstr(raw, "\"type\":\"BOOKMARK\""));
  free(raw);
  json_decref(call("GET", "/api/v1/namespaces?watch=1&timeoutSeconds=1", NULL,
                   NULL, 200, &raw));
  assert_null(strstr(raw, "BOOKMARK")); /* only when asked for */
  free(raw);
}

static void test_stale_update_conflict(void **state)
{
  json_t *j, *k;
  char *body;

  (void)state;
  j = call("GET", "/api/v1/namespaces/p-a", NULL, NULL, 200, NULL);
  json_decref(call("PATCH", "/api/v1/namespaces/p-a",
                   "{\"metadata\":{\"labels\":{\"v\":\"2\"}}}",
                   "application/merge-patch+json", 200, NULL));
  body = json_dumps(j, JSON_COMPACT);
  k = call("PUT", "/api/v1/namespaces/p-a", body, NULL, 409, NULL);
  assert_string_equal(str_at(k, "reason", NULL), "Conflict");
  free(body);
  json_decref(k);
  json_decref(j);
}

static void test_patch_without_change_keeps_version(void **state)
{
  json_t *a, *b;

  (void)state;
  a = call("GET", "/api/v1/namespaces/p-a", NULL, NULL, 200, NULL);
  b = call("PATCH", "/api/v1/namespaces/p-a",
           "{\"metadata\":{\"labels\":{\"v\":\"2\"}}}",
           "application/merge-patch+json", 200, NULL);
  assert_string_equal(str_at(a, "metadata", "resourceVersion"),
                      str_at(b, "metadata", "resourceVersion"));
  json_decref(a);
  json_decref(b);
}

static const char job[] =
    "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\",\"metadata\":"
    "{\"name\":\"%s\",\"finalizers\":[%s]},\"spec\":{\"team\":\"t\","
    "\"gpusPerReplica\":1,\"template\":{\"spec\":{\"containers\":[{\"name\":"
    "\"c\",\"image\":\"i\"}]}}}}";

static void test_finalizers_and_cascade(void **state)
{
  char body[1024], pod[1024];
  json_t *j;

  (void)state;
  snprintf(body, sizeof(body), job, "held", "\"example.com/hold\"");
  json_decref(call("POST", "/apis/gpuq.dev/v1alpha1/namespaces/default/gpujobs",
                   body, NULL, 201, NULL));
  j = call("DELETE", "/apis/gpuq.dev/v1alpha1/namespaces/default/gpujobs/held",
           NULL, NULL, 200, NULL);
  assert_non_null(str_at(j, "metadata", "deletionTimestamp"));
  json_decref(j);
  json_decref(call("GET", "/apis/gpuq.dev/v1alpha1/namespaces/default/gpujobs/"
                          "held",
                   NULL, NULL, 200, NULL));
  json_decref(call("PATCH", "/apis/gpuq.dev/v1alpha1/namespaces/default/"
                            "gpujobs/held",
                   "{\"metadata\":{\"finalizers\":null}}",
                   "application/merge-patch+json", 200, NULL));
  json_decref(call("GET", "/apis/gpuq.dev/v1alpha1/namespaces/default/gpujobs/"
                          "held",
                   NULL, NULL, 404, NULL));
  /* Cascade: a pod owned by a job goes with it. */
  snprintf(body, sizeof(body), job, "owner", "");
  j = call("POST", "/apis/gpuq.dev/v1alpha1/namespaces/default/gpujobs", body,
           NULL, 201, NULL);
  snprintf(pod, sizeof(pod),
           "{\"metadata\":{\"name\":\"owned-0\",\"ownerReferences\":[{"
           "\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\",\"name\":"
           "\"owner\",\"uid\":\"%s\",\"controller\":true}]},\"spec\":{"
           "\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}",
           str_at(j, "metadata", "uid"));
  json_decref(j);
  json_decref(call("POST", "/api/v1/namespaces/default/pods", pod, NULL, 201,
                   NULL));
  json_decref(call("DELETE", "/apis/gpuq.dev/v1alpha1/namespaces/default/"
                             "gpujobs/owner",
                   "{\"propagationPolicy\":\"Background\"}", NULL, 200, NULL));
  json_decref(call("GET", "/api/v1/namespaces/default/pods/owned-0", NULL,
                   NULL, 404, NULL));

  /* The dependents index follows updates: a reference added by a patch
   * cascades, one removed by a patch no longer does. */
  snprintf(body, sizeof(body), job, "owner2", "");
  j = call("POST", "/apis/gpuq.dev/v1alpha1/namespaces/default/gpujobs", body,
           NULL, 201, NULL);
  snprintf(pod, sizeof(pod),
           "{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":"
           "\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\",\"name\":\"owner2\","
           "\"uid\":\"%s\",\"controller\":true}]}}",
           str_at(j, "metadata", "uid"));
  json_decref(j);
  for (int i = 1; i <= 2; i++) {
    char p[512], path[128];

    snprintf(p, sizeof(p),
             "{\"metadata\":{\"name\":\"later-%d\"},\"spec\":{\"containers\":"
             "[{\"name\":\"c\",\"image\":\"i\"}]}}", i);
    json_decref(call("POST", "/api/v1/namespaces/default/pods", p, NULL, 201,
                     NULL));
    snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/later-%d", i);
    json_decref(call("PATCH", path, pod, "application/merge-patch+json", 200,
                     NULL));
  }
  json_decref(call("PATCH", "/api/v1/namespaces/default/pods/later-2",
                   "{\"metadata\":{\"ownerReferences\":null}}",
                   "application/merge-patch+json", 200, NULL));
  json_decref(call("DELETE", "/apis/gpuq.dev/v1alpha1/namespaces/default/"
                             "gpujobs/owner2",
                   "{\"propagationPolicy\":\"Background\"}", NULL, 200, NULL));
  json_decref(call("GET", "/api/v1/namespaces/default/pods/later-1", NULL,
                   NULL, 404, NULL));
  json_decref(call("GET", "/api/v1/namespaces/default/pods/later-2", NULL,
                   NULL, 200, NULL));
  json_decref(call("DELETE", "/api/v1/namespaces/default/pods/later-2",
                   "{\"gracePeriodSeconds\":0}", NULL, 200, NULL));
}

static void test_generate_name_dry_run_preconditions(void **state)
{
  json_t *j;
  char body[512];

  (void)state;
  j = call("POST", "/api/v1/namespaces",
           "{\"metadata\":{\"generateName\":\"gen-\"}}", NULL, 201, NULL);
  assert_int_equal(strncmp(str_at(j, "metadata", "name"), "gen-", 4), 0);
  assert_int_equal(strlen(str_at(j, "metadata", "name")), 9);
  json_decref(j);
  json_decref(call("POST", "/api/v1/namespaces?dryRun=All",
                   "{\"metadata\":{\"name\":\"dry\"}}", NULL, 201, NULL));
  json_decref(call("GET", "/api/v1/namespaces/dry", NULL, NULL, 404, NULL));
  snprintf(body, sizeof(body), "{\"preconditions\":{\"uid\":\"nope\"}}");
  json_decref(call("DELETE", "/api/v1/namespaces/p-c", body, NULL, 409, NULL));
  /* A namespace that does not exist cannot hold objects. */
  j = call("POST", "/api/v1/namespaces/missing/pods",
           "{\"metadata\":{\"name\":\"x\"},\"spec\":{\"containers\":[{\"name\":"
           "\"c\"}]}}",
           NULL, 404, NULL);
  assert_string_equal(str_at(j, "message", NULL),
                      "namespaces \"missing\" not found");
  json_decref(j);
}

static void test_terminating_namespace(void **state)
{
  char body[1024];
  json_t *j;

  (void)state;
  mkns("term", "t");
  snprintf(body, sizeof(body), job, "held2", "\"example.com/hold\"");
  json_decref(call("POST", "/apis/gpuq.dev/v1alpha1/namespaces/term/gpujobs",
                   body, NULL, 201, NULL));
  json_decref(call("DELETE", "/api/v1/namespaces/term", NULL, NULL, 200,
                   NULL));
  /* Content cannot be added while it terminates (a real server's 403). */
  snprintf(body, sizeof(body), job, "late", "");
  j = call("POST", "/apis/gpuq.dev/v1alpha1/namespaces/term/gpujobs", body,
           NULL, 403, NULL);
  assert_non_null(strstr(json_string_value(json_object_get(j, "message")),
                         "because it is being terminated"));
  json_decref(j);
  /* Once the finalizer goes, the job goes, and then the namespace. */
  json_decref(call("PATCH", "/apis/gpuq.dev/v1alpha1/namespaces/term/gpujobs/"
                            "held2",
                   "{\"metadata\":{\"finalizers\":null}}",
                   "application/merge-patch+json", 200, NULL));
  for (int t = 0; t < 250; t++) {
    char url[300], *resp;
    int code;

    snprintf(url, sizeof(url), "%s/api/v1/namespaces/term", sim.url);
    code = gq_test_http("GET", url, NULL, NULL, NULL, &resp);
    free(resp);
    if (code == 404)
      return;
    gq_test_sleep_ms(20);
  }
  fail_msg("namespace 'term' was never removed");
}

/* The managedFields entry of manager (with subresource, "" for none), or
 * NULL. */
static const json_t *mf_entry(const json_t *obj, const char *manager,
                              const char *sub)
{
  const json_t *mf = json_object_get(json_object_get(obj, "metadata"),
                                     "managedFields"), *e;
  size_t i;

  json_array_foreach((json_t *)mf, i, e) {
    const char *s = str_at(e, "subresource", NULL);

    if (!strcmp(str_at(e, "manager", NULL), manager) &&
        !strcmp(s ? s : "", sub))
      return e;
  }
  return NULL;
}

/* 1 if manager's fieldsV1 holds the path of FieldsV1 keys (NULL-ended). */
static int owns(const json_t *obj, const char *manager, ...)
{
  const json_t *e = mf_entry(obj, manager, ""), *n;
  va_list ap;
  const char *k;

  if (!e)
    return 0;
  n = json_object_get(e, "fieldsV1");
  va_start(ap, manager);
  while (n && (k = va_arg(ap, const char *)))
    n = json_object_get(n, k);
  va_end(ap);
  return n != NULL;
}

/* Server-side apply of body to GpuJob default/name, query appended. */
static json_t *apply_job(const char *name, const char *query,
                         const char *body, int want)
{
  char path[300];

  snprintf(path, sizeof(path),
           "/apis/gpuq.dev/v1alpha1/namespaces/default/gpujobs/%s%s", name,
           query);
  return call("PATCH", path, body, "application/apply-patch+yaml", want,
              NULL);
}

static json_t *ssa(const char *query, const char *body, int want)
{
  return apply_job("ssa", query, body, want);
}

static void test_server_side_apply(void **state)
{
  char body[1024];
  const json_t *e;
  json_t *j;
  const char *rv;

  (void)state;
  snprintf(body, sizeof(body), job, "ssa", "");
  j = ssa("?fieldManager=kubectl", body, 201);
  e = mf_entry(j, "kubectl", "");
  assert_non_null(e);
  assert_string_equal(str_at(e, "operation", NULL), "Apply");
  assert_string_equal(str_at(e, "apiVersion", NULL), "gpuq.dev/v1alpha1");
  assert_string_equal(str_at(e, "fieldsType", NULL), "FieldsV1");
  assert_non_null(str_at(e, "time", NULL));
  assert_true(owns(j, "kubectl", "f:spec", "f:team", NULL));
  assert_true(owns(j, "kubectl", "f:spec", "f:template", "f:spec",
                   "f:containers", "k:{\"name\":\"c\"}", "f:image", NULL));
  /* Defaults are nobody's; the server's own metadata is never recorded. */
  assert_false(owns(j, "kubectl", "f:spec", "f:backoffLimit", NULL));
  assert_false(owns(j, "kubectl", "f:metadata", "f:name", NULL));
  json_decref(j);
  /* The same manager changes its own field: no conflict. */
  snprintf(body, sizeof(body), job, "ssa", "");
  memcpy(strstr(body, "\"gpusPerReplica\":1"), "\"gpusPerReplica\":2", 18);
  j = ssa("?fieldManager=kubectl", body, 200);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(j, "spec"), "gpusPerReplica")),
                   2);
  assert_int_equal(json_integer_value(json_object_get(
                       json_object_get(j, "spec"), "backoffLimit")),
                   3);
  rv = str_at(j, "metadata", "resourceVersion");
  {
    /* A no-op apply keeps the resourceVersion. */
    json_t *again = ssa("?fieldManager=kubectl", body, 200);

    assert_string_equal(str_at(again, "metadata", "resourceVersion"), rv);
    json_decref(again);
  }
  json_decref(j);
  /* A manager that stops applying a field it alone owns removes it. */
  j = ssa("?fieldManager=kubectl",
          "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
          "\"metadata\":{\"name\":\"ssa\"},\"spec\":{\"team\":\"t\","
          "\"gpusPerReplica\":2,\"template\":{\"spec\":{}}}}",
          200);
  assert_int_equal(json_array_size(json_object_get(
                       json_object_get(json_object_get(json_object_get(
                                           j, "spec"), "template"),
                                       "spec"),
                       "containers")),
                   0);
  json_decref(j);
  /* An apply needs a fieldManager (ValidatePatchOptions). */
  j = ssa("", body, 422);
  assert_string_equal(str_at(j, "message", NULL),
                      "PatchOptions.meta.k8s.io \"\" is invalid: "
                      "fieldManager: Required value: is required for apply "
                      "patch");
  json_decref(j);
  /* Every write's fieldManager is at most 128 bytes (ValidateFieldManager). */
  {
    char path[400];

    snprintf(path, sizeof(path),
             "/apis/gpuq.dev/v1alpha1/namespaces/default/gpujobs"
             "?fieldManager=%0129d", 0);
    j = call("POST", path, body, NULL, 422, NULL);
    assert_string_equal(str_at(j, "message", NULL),
                        "CreateOptions.meta.k8s.io \"\" is invalid: "
                        "fieldManager: Too long: may not be more than 128 "
                        "bytes");
    json_decref(j);
  }
}

static const char conflict_msg[] =
    "Apply failed with 1 conflict: conflict with \"kubectl\" using "
    "gpuq.dev/v1alpha1: .spec.priority";

/* Field ownership between managers: an Update owns what it sets, another
 * manager's Apply that changes it gets 409 unless forced, the same value
 * is shared, and a status write records its subresource. */
static void test_apply_conflicts(void **state)
{
  static const char prio9[] =
      "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
      "\"metadata\":{\"name\":\"own\"},\"spec\":{\"priority\":9}}";
  char body[1024];
  const json_t *c;
  json_t *j;

  (void)state;
  snprintf(body, sizeof(body), job, "own", "");
  json_decref(call("POST", "/apis/gpuq.dev/v1alpha1/namespaces/default/"
                           "gpujobs?fieldManager=kubectl",
                   body, NULL, 201, NULL));
  json_decref(call("PATCH", "/apis/gpuq.dev/v1alpha1/namespaces/default/"
                            "gpujobs/own?fieldManager=kubectl",
                   "{\"spec\":{\"priority\":5}}",
                   "application/merge-patch+json", 200, NULL));
  j = apply_job("own", "?fieldManager=ops", prio9, 409);
  assert_string_equal(str_at(j, "reason", NULL), "Conflict");
  assert_string_equal(str_at(j, "message", NULL), conflict_msg);
  c = json_array_get(json_object_get(json_object_get(j, "details"),
                                     "causes"),
                     0);
  assert_string_equal(str_at(c, "reason", NULL), "FieldManagerConflict");
  assert_string_equal(str_at(c, "message", NULL),
                      "conflict with \"kubectl\" using gpuq.dev/v1alpha1");
  assert_string_equal(str_at(c, "field", NULL), ".spec.priority");
  json_decref(j);
  /* force=true: ops takes .spec.priority over. */
  j = apply_job("own", "?fieldManager=ops&force=true", prio9, 200);
  assert_true(owns(j, "ops", "f:spec", "f:priority", NULL));
  assert_false(owns(j, "kubectl", "f:spec", "f:priority", NULL));
  assert_true(owns(j, "kubectl", "f:spec", "f:team", NULL));
  json_decref(j);
  /* The same value from a third manager: shared, no conflict. */
  j = apply_job("own", "?fieldManager=peer", prio9, 200);
  assert_true(owns(j, "peer", "f:spec", "f:priority", NULL));
  assert_true(owns(j, "ops", "f:spec", "f:priority", NULL));
  json_decref(j);
  /* A status write records subresource status. */
  j = call("PUT", "/apis/gpuq.dev/v1alpha1/namespaces/default/gpujobs/own/"
                  "status?fieldManager=gpuq-controller",
           "{\"metadata\":{\"name\":\"own\"},\"status\":{\"phase\":"
           "\"Queued\"}}",
           NULL, 200, NULL);
  c = mf_entry(j, "gpuq-controller", "status");
  assert_non_null(c);
  assert_string_equal(str_at(c, "operation", NULL), "Update");
  assert_non_null(json_object_get(json_object_get(json_object_get(c,
                                                                  "fieldsV1"),
                                                  "f:status"),
                                  "f:phase"));
  json_decref(j);
  /* A client may clear them: [{}] resets (decodeLiveOrNew). */
  j = call("PATCH", "/apis/gpuq.dev/v1alpha1/namespaces/default/gpujobs/own"
                    "?fieldManager=reset",
           "[{\"op\":\"replace\",\"path\":\"/metadata/managedFields\","
           "\"value\":[{}]}]",
           "application/json-patch+json", 200, NULL);
  assert_null(json_object_get(json_object_get(j, "metadata"),
                              "managedFields"));
  json_decref(j);
}

/* The fieldsV1 of obj's entry of manager and subresource sub, or NULL. */
static const json_t *v1_of(const json_t *obj, const char *manager,
                           const char *sub)
{
  return json_object_get(mf_entry(obj, manager, sub), "fieldsV1");
}

/* A built-in kind's managedFields as kube-apiserver records them: a
 * create's Update entry owns what it sent and the defaults the server
 * applied (containers by name), not spec itself (the Go type's zero value
 * has it) nor status (reset by the status subresource) nor the server's
 * metadata; a status patch gets its own entry with subresource status and
 * leaves the create's fieldsV1 as it was; an Update by another manager
 * takes the field it changes; a create of the same shape records the same
 * set. */
static void test_pod_managed_fields(void **state)
{
  static const char pod[] =
      "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
      "\"%s\",\"labels\":{\"app\":\"x\"}},\"spec\":{\"nodeName\":\"none\","
      "\"containers\":[{\"name\":\"a\",\"image\":\"repo/img\"}]}}";
  const json_t *v1, *c, *e;
  json_t *p, *q, *created;
  char body[512];

  (void)state;
  snprintf(body, sizeof(body), pod, "mf1");
  p = call("POST", "/api/v1/namespaces/default/pods?fieldManager=maker",
           body, NULL, 201, NULL);
  e = mf_entry(p, "maker", "");
  assert_non_null(e);
  assert_string_equal(str_at(e, "operation", NULL), "Update");
  assert_string_equal(str_at(e, "apiVersion", NULL), "v1");
  assert_string_equal(str_at(e, "fieldsType", NULL), "FieldsV1");
  assert_null(json_object_get(e, "subresource"));
  v1 = json_object_get(e, "fieldsV1");
  assert_null(json_object_get(json_object_get(v1, "f:spec"), "."));
  assert_null(json_object_get(v1, "f:status"));
  assert_null(json_object_get(json_object_get(v1, "f:metadata"), "f:name"));
  assert_non_null(json_object_get(json_object_get(json_object_get(
                                      v1, "f:metadata"), "f:labels"), "."));
  c = json_object_get(json_object_get(json_object_get(v1, "f:spec"),
                                      "f:containers"),
                      "k:{\"name\":\"a\"}");
  assert_non_null(json_object_get(c, "."));
  assert_non_null(json_object_get(c, "f:image"));
  assert_non_null(json_object_get(c, "f:imagePullPolicy")); /* a default */
  assert_non_null(json_object_get(json_object_get(v1, "f:spec"),
                                  "f:restartPolicy"));
  created = json_deep_copy(v1);
  json_decref(p);
  p = call("PATCH", "/api/v1/namespaces/default/pods/mf1/status"
                    "?fieldManager=watcher",
           "{\"status\":{\"message\":\"seen\"}}",
           "application/merge-patch+json", 200, NULL);
  v1 = v1_of(p, "watcher", "status");
  assert_non_null(json_object_get(json_object_get(v1, "f:status"),
                                  "f:message"));
  assert_null(json_object_get(v1, "f:spec"));
  assert_true(json_equal(v1_of(p, "maker", ""), created));
  json_decref(p);
  p = call("PATCH", "/api/v1/namespaces/default/pods/mf1?fieldManager=other",
           "{\"metadata\":{\"labels\":{\"app\":\"y\"}}}",
           "application/merge-patch+json", 200, NULL);
  assert_non_null(json_object_get(json_object_get(json_object_get(
                                      v1_of(p, "other", ""), "f:metadata"),
                                                  "f:labels"),
                                  "f:app"));
  assert_null(json_object_get(json_object_get(json_object_get(
                                  v1_of(p, "maker", ""), "f:metadata"),
                                              "f:labels"),
                              "f:app"));
  json_decref(p);
  snprintf(body, sizeof(body), pod, "mf2");
  q = call("POST", "/api/v1/namespaces/default/pods?fieldManager=maker",
           body, NULL, 201, NULL);
  assert_true(json_equal(v1_of(q, "maker", ""), created));
  json_decref(q);
  json_decref(created);
  json_decref(call("DELETE", "/api/v1/namespaces/default/pods/mf1", NULL,
                   NULL, 200, NULL));
  json_decref(call("DELETE", "/api/v1/namespaces/default/pods/mf2", NULL,
                   NULL, 200, NULL));
}

static void test_events_two_views(void **state)
{
  json_t *j;

  (void)state;
  json_decref(call("POST", "/api/v1/namespaces/default/events",
                   "{\"metadata\":{\"name\":\"e1\"},\"involvedObject\":{"
                   "\"kind\":\"GpuJob\",\"name\":\"ssa\",\"namespace\":"
                   "\"default\"},\"reason\":\"Queued\",\"message\":\"m1\","
                   "\"type\":\"Normal\"}",
                   NULL, 201, NULL));
  j = call("GET", "/apis/events.k8s.io/v1/namespaces/default/events/e1", NULL,
           NULL, 200, NULL);
  assert_string_equal(str_at(j, "note", NULL), "m1");
  assert_string_equal(str_at(j, "regarding", "name"), "ssa");
  assert_string_equal(str_at(j, "apiVersion", NULL), "events.k8s.io/v1");
  json_decref(j);
  json_decref(call("POST", "/apis/events.k8s.io/v1/namespaces/default/events",
                   "{\"metadata\":{\"name\":\"e2\"},\"regarding\":{\"kind\":"
                   "\"GpuJob\",\"name\":\"ssa\",\"namespace\":\"default\"},"
                   "\"reason\":\"Admitted\",\"note\":\"m2\",\"type\":"
                   "\"Normal\",\"reportingController\":\"gpuq\","
                   "\"reportingInstance\":\"gpuq-0\",\"action\":\"Admit\"}",
                   NULL, 201, NULL));
  j = call("GET", "/api/v1/namespaces/default/events?fieldSelector="
                  "involvedObject.name%3Dssa,reason%3DAdmitted",
           NULL, NULL, 200, NULL);
  assert_int_equal(json_array_size(json_object_get(j, "items")), 1);
  assert_string_equal(
      str_at(json_array_get(json_object_get(j, "items"), 0), "message", NULL),
      "m2");
  json_decref(j);
}

static void test_crd_created_through_api(void **state)
{
  static const char crd[] =
      "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":"
      "\"CustomResourceDefinition\",\"metadata\":{\"name\":"
      "\"widgets.example.com\"},\"spec\":{\"group\":\"example.com\",\"scope\":"
      "\"Namespaced\",\"names\":{\"plural\":\"widgets\",\"singular\":"
      "\"widget\",\"kind\":\"Widget\"},\"versions\":[{\"name\":\"v1\","
      "\"served\":true,\"storage\":true,\"schema\":{\"openAPIV3Schema\":{"
      "\"type\":\"object\",\"properties\":{\"spec\":{\"type\":\"object\","
      "\"properties\":{\"size\":{\"type\":\"integer\",\"minimum\":1}}}}}}}]}}";
  json_t *j;

  (void)state;
  json_decref(call("POST", "/apis/apiextensions.k8s.io/v1/"
                           "customresourcedefinitions",
                   crd, NULL, 201, NULL));
  json_decref(call("POST", "/apis/example.com/v1/namespaces/default/widgets",
                   "{\"metadata\":{\"name\":\"w\"},\"spec\":{\"size\":2}}",
                   NULL, 201, NULL));
  j = call("POST", "/apis/example.com/v1/namespaces/default/widgets",
           "{\"metadata\":{\"name\":\"w0\"},\"spec\":{\"size\":0}}", NULL, 422,
           NULL);
  assert_non_null(strstr(str_at(j, "message", NULL), "spec.size"));
  json_decref(j);
  json_decref(call("GET", "/apis/example.com/v1", NULL, NULL, 200, NULL));
  json_decref(call("DELETE", "/apis/apiextensions.k8s.io/v1/"
                             "customresourcedefinitions/widgets.example.com",
                   NULL, NULL, 200, NULL));
  json_decref(call("GET", "/apis/example.com/v1/namespaces/default/widgets",
                   NULL, NULL, 404, NULL));
}

static double now_s(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A new pod gets kube-apiserver's create-time defaults (sim/defaults.c);
 * what it sets stays as set. */
static void test_pod_defaults(void **state)
{
  json_t *p, *c0, *c1;

  (void)state;
  p = call("POST", "/api/v1/namespaces/default/pods",
           "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":"
           "\"dflt\"},\"spec\":{\"dnsPolicy\":\"None\",\"containers\":["
           "{\"name\":\"a\",\"image\":\"repo/img\",\"ports\":[{"
           "\"containerPort\":80}]},{\"name\":\"b\",\"image\":"
           "\"repo/img:1.2\"}]}}", NULL, 201, NULL);
  assert_string_equal(str_at(p, "spec", "dnsPolicy"), "None");
  assert_string_equal(str_at(p, "spec", "restartPolicy"), "Always");
  assert_string_equal(str_at(p, "spec", "schedulerName"),
                      "default-scheduler");
  assert_string_equal(str_at(p, "spec", "serviceAccountName"), "default");
  c0 = json_array_get(json_object_get(json_object_get(p, "spec"),
                                      "containers"), 0);
  c1 = json_array_get(json_object_get(json_object_get(p, "spec"),
                                      "containers"), 1);
  assert_string_equal(str_at(c0, "imagePullPolicy", NULL), "Always");
  assert_string_equal(str_at(c1, "imagePullPolicy", NULL), "IfNotPresent");
  assert_string_equal(str_at(c0, "terminationMessagePath", NULL),
                      "/dev/termination-log");
  assert_string_equal(json_string_value(json_object_get(json_array_get(
                          json_object_get(c0, "ports"), 0), "protocol")),
                      "TCP");
  json_decref(p);
  json_decref(call("DELETE", "/api/v1/namespaces/default/pods/dflt", NULL,
                   NULL, 200, NULL));
}

/* Boolean query parameters parse as Go's strconv.ParseBool, as
 * kube-apiserver's do: the official Python client's watch=True is a watch
 * (a stream of events, ended here by timeoutSeconds), not a list;
 * watch=maybe is a 400 naming the value. */
static void test_bool_query(void **state)
{
  char url[300], *resp = NULL;
  int code;

  (void)state;
  snprintf(url, sizeof(url), "%s/api/v1/namespaces?watch=True&"
           "timeoutSeconds=1", sim.url);
  code = gq_test_http("GET", url, NULL, NULL, NULL, &resp);
  assert_int_equal(code, 200);
  assert_non_null(strstr(resp, "\"type\":\"ADDED\""));
  assert_null(strstr(resp, "\"kind\":\"NamespaceList\""));
  free(resp);
  snprintf(url, sizeof(url), "%s/api/v1/namespaces?watch=0", sim.url);
  code = gq_test_http("GET", url, NULL, NULL, NULL, &resp);
  assert_int_equal(code, 200);
  assert_non_null(strstr(resp, "NamespaceList"));
  free(resp);
  snprintf(url, sizeof(url), "%s/api/v1/namespaces?watch=maybe", sim.url);
  code = gq_test_http("GET", url, NULL, NULL, NULL, &resp);
  assert_int_equal(code, 400);
  assert_non_null(strstr(resp, "strconv.ParseBool: parsing \\\"maybe\\\": "
                               "invalid syntax"));
  free(resp);
}

/* Input limits (issue 23): a body above kube-apiserver's 3 MiB is a 413
 * Status naming the limit, before anything reads it; an integer query
 * parameter that Go's strconv.ParseInt refuses is a 400 with its words. */
static void test_input_limits(void **state)
{
  size_t n = (3u << 20) + 1;
  char *body = malloc(n + 1);
  json_t *st;

  (void)state;
  memset(body, ' ', n);
  body[0] = '{';
  body[n - 1] = '}';
  body[n] = '\0';
  st = call("POST", "/api/v1/namespaces", body, "application/json", 413,
            NULL);
  free(body);
  assert_string_equal(str_at(st, "kind", NULL), "Status");
  assert_string_equal(str_at(st, "reason", NULL), "RequestEntityTooLarge");
  assert_string_equal(str_at(st, "message", NULL),
                      "request entity too large: the body exceeds 3145728 "
                      "bytes");
  json_decref(st);
  st = call("GET", "/api/v1/namespaces?limit=ten", NULL, NULL, 400, NULL);
  assert_string_equal(str_at(st, "message", NULL),
                      "strconv.ParseInt: parsing \"ten\": invalid syntax");
  json_decref(st);
  st = call("GET", "/api/v1/namespaces?watch=1&timeoutSeconds="
            "99999999999999999999", NULL, NULL, 400, NULL);
  assert_string_equal(str_at(st, "message", NULL),
                      "strconv.ParseInt: parsing \"99999999999999999999\": "
                      "value out of range");
  json_decref(st);
  /* a PriorityClass above the user range is refused as the apiserver does */
  st = call("POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
            "{\"metadata\":{\"name\":\"greedy\"},\"value\":1000000001}",
            "application/json", 422, NULL);
  assert_non_null(strstr(str_at(st, "message", NULL),
                         "value: must be no more than 1000000000 (the highest "
                         "user-definable priority)"));
  json_decref(st);
}

static void test_fault_injection(void **state)
{
  double t0;
  char path[400];
  struct gq_test_out o;
  pid_t pid;
  int status;

  (void)state;
  json_decref(call("POST", "/sim/v1/faults",
                   "{\"verb\":\"create\",\"resource\":\"namespaces\","
                   "\"status\":500,\"count\":2}",
                   NULL, 201, NULL));
  json_decref(call("POST", "/api/v1/namespaces",
                   "{\"metadata\":{\"name\":\"f1\"}}", NULL, 500, NULL));
  json_decref(call("POST", "/api/v1/namespaces",
                   "{\"metadata\":{\"name\":\"f1\"}}", NULL, 500, NULL));
  json_decref(call("POST", "/api/v1/namespaces",
                   "{\"metadata\":{\"name\":\"f1\"}}", NULL, 201, NULL));
  json_decref(call("POST", "/sim/v1/faults",
                   "{\"verb\":\"get\",\"resource\":\"namespaces\","
                   "\"delayMs\":300,\"count\":1}",
                   NULL, 201, NULL));
  t0 = now_s();
  json_decref(call("GET", "/api/v1/namespaces/f1", NULL, NULL, 200, NULL));
  assert_true(now_s() - t0 >= 0.3);
  /* Closing every watch ends kubectl get -w (it exits 0, never retries). */
  snprintf(path, sizeof(path), "%s/watch-ns.out", sim.dir);
  pid = gq_test_kubectl_bg(&sim, path, "get", "ns", "-w", NULL);
  assert_true(gq_test_wait_file(path, "f1", 20000));
  json_decref(call("POST", "/sim/v1/close-watches", "{}", NULL, 200, NULL));
  waitpid(pid, &status, 0);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  gq_test_kubectl(&sim, &o, NULL, "get", "--raw", "/api/v1", NULL);
  assert_non_null(strstr(o.out, "\"name\":\"pods/eviction\""));
  assert_non_null(strstr(o.out, "\"group\":\"policy\""));
  gq_test_out_free(&o);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_list_paging_and_selectors),
      cmocka_unit_test(test_watch_gone_after_compaction),
      cmocka_unit_test(test_watch_bookmarks_and_initial_state),
      cmocka_unit_test(test_stale_update_conflict),
      cmocka_unit_test(test_patch_without_change_keeps_version),
      cmocka_unit_test(test_finalizers_and_cascade),
      cmocka_unit_test(test_generate_name_dry_run_preconditions),
      cmocka_unit_test(test_terminating_namespace),
      cmocka_unit_test(test_server_side_apply),
      cmocka_unit_test(test_apply_conflicts),
      cmocka_unit_test(test_pod_managed_fields),
      cmocka_unit_test(test_events_two_views),
      cmocka_unit_test(test_crd_created_through_api),
      cmocka_unit_test(test_bool_query),
      cmocka_unit_test(test_pod_defaults),
      cmocka_unit_test(test_input_limits),
      cmocka_unit_test(test_fault_injection),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
