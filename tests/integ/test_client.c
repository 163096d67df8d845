/* The Kubernetes API client against gpuq-sim (issue 5's "done when"):
 * token, token file and exec-plugin authentication over TLS with a CA made
 * here by the openssl tool; list with pagination; watches with bookmarks;
 * an informer resuming after the sim closes its watches and relisting on
 * 410 with the deletes it missed; 409 on a stale update; retries on
 * injected 500 and 429; the rate limiter; priorities and the window of
 * requests on the wire; two clients electing exactly
 * one leader and failing over when the leader stops renewing. Every wait
 * is for a condition, with a deadline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "api/client.h"
#include "api/informer.h"
#include "base/alloc.h"
#include "api/leader.h"
#include "base/clock.h"
#include "base/err.h"
#include "tests/support/fixture.h"
#include "tests/support/proc.h"

#define TOKEN "s3cret-client-token"

static struct gq_test_sim sim;
static char dir[] = "/tmp/gpuq-test-client-XXXXXX";
static char crt[300], key[300];
static uv_loop_t loop;

static void make_cert(void)
{
  assert_int_equal(gq_test_make_cert(dir, "sim", crt, key), 0);
}

static int group_setup(void **state)
{
  const char *args[] = {"--token", TOKEN, "--tls-cert", crt, "--tls-key",
                        key, "--tls-ca", crt, "--watch-window", "4",
                        "--bookmark-interval-ms", "100", NULL};

  (void)state;
  if (!mkdtemp(dir))
    return -1;
  make_cert();
  uv_loop_init(&loop);
  return gq_test_sim_start(&sim, args);
}

static int group_teardown(void **state)
{
  (void)state;
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  gq_test_rmtree(dir);
  return gq_test_sim_stop(&sim) == 0 ? 0 : -1;
}

static void on_tick(uv_timer_t *t)
{
  (void)t; /* only wakes uv_run(UV_RUN_ONCE) up to check the flag */
}

/* Runs the loop until *flag is set or ms pass; returns *flag. */
static int run_until(const int *flag, int ms)
{
  int64_t end = gq_clock_mono_ms() + ms;
  uv_timer_t tick;

  uv_timer_init(&loop, &tick);
  uv_timer_start(&tick, on_tick, 20, 20);
  while (!*flag && gq_clock_mono_ms() < end)
    uv_run(&loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&tick, NULL);
  uv_run(&loop, UV_RUN_NOWAIT);
  return *flag;
}

struct result {
  int done, rc;
  char reason[64];
  json_t *obj;
};

static void on_result(int rc, const struct gq_k8s_status *st,
                      const json_t *obj, void *arg)
{
  struct result *r = arg;

  r->done = 1;
  r->rc = rc;
  snprintf(r->reason, sizeof(r->reason), "%s", st ? st->reason : "");
  r->obj = obj ? json_incref((json_t *)obj) : NULL;
}

static struct gq_kclient *client_for(const char *kubeconfig,
                                     struct gq_kubeconfig *cfg,
                                     const struct gq_kclient_opts *o)
{
  struct gq_kclient *c;
  char err[1024];

  if (gq_kubeconfig_load(kubeconfig, NULL, cfg, err, sizeof(err)) != 0)
    fail_msg("%s", err);
  if (gq_kclient_new(&loop, cfg, o, &c, err, sizeof(err)) != 0)
    fail_msg("%s", err);
  return c;
}

static void done_with(struct gq_kclient *c, struct gq_kubeconfig *cfg)
{
  gq_kclient_close(c);
  uv_run(&loop, UV_RUN_DEFAULT);
  gq_kubeconfig_release(cfg);
}

/* A request that must end with want_rc. Returns the body (caller frees). */
static json_t *call(struct gq_kclient *c, const char *method, const char *path,
                    json_t *body, int want_rc)
{
  struct result r = {0};

  assert_int_equal(gq_kclient_request(c, method, path, body, NULL, on_result,
                                      &r),
                   0);
  json_decref(body);
  assert_true(run_until(&r.done, 30000));
  if (r.rc != want_rc)
    fail_msg("%s %s: rc %s, want %s (%s)", method, path, gq_err_name(r.rc),
             gq_err_name(want_rc), r.reason);
  return r.obj;
}

static void sim_post(const char *path, const char *body)
{
  char url[300], *resp;

  setenv("GQ_TEST_CAINFO", crt, 1);
  snprintf(url, sizeof(url), "%s%s", sim.url, path);
  gq_test_http(path[0] && !strcmp(body, "DELETE") ? "DELETE" : "POST", url,
               !strcmp(body, "DELETE") ? NULL : body, NULL, TOKEN, &resp);
  free(resp);
}

static void test_token_over_tls(void **state)
{
  struct gq_kubeconfig cfg;
  struct gq_kclient *c = client_for(sim.kubeconfig, &cfg, NULL);
  json_t *v;

  (void)state;
  assert_string_equal(gq_kclient_auth_mode(c), "bearer token");
  v = call(c, "GET", "/version", NULL, 0);
  assert_string_equal(json_string_value(json_object_get(v, "minor")), "32");
  json_decref(v);
  done_with(c, &cfg);
}

/* Writes a kubeconfig for the sim with the given user block (JSON). */
static void kubeconfig_with(const char *path, const char *user)
{
  char *b64 = NULL;
  json_t *kc = json_load_file(sim.kubeconfig, 0, NULL), *u;

  (void)b64;
  u = json_loads(user, 0, NULL);
  json_object_set_new(json_array_get(json_object_get(kc, "users"), 0), "user",
                      u);
  json_dump_file(kc, path, 0);
  json_decref(kc);
}

static void test_wrong_token_and_token_file(void **state)
{
  char path[300], tok[300], user[600];
  struct gq_kubeconfig cfg;
  struct gq_kclient *c;
  FILE *f;

  (void)state;
  snprintf(path, sizeof(path), "%s/wrong.kubeconfig", dir);
  kubeconfig_with(path, "{\"token\":\"nope\"}");
  c = client_for(path, &cfg, NULL);
  json_decref(call(c, "GET", "/api/v1/namespaces", NULL, GQ_EUNAUTHORIZED));
  done_with(c, &cfg);
  snprintf(tok, sizeof(tok), "%s/token", dir);
  f = fopen(tok, "w");
  fprintf(f, "%s\n", TOKEN);
  fclose(f);
  snprintf(user, sizeof(user), "{\"tokenFile\":\"%s\"}", tok);
  snprintf(path, sizeof(path), "%s/file.kubeconfig", dir);
  kubeconfig_with(path, user);
  c = client_for(path, &cfg, NULL);
  assert_non_null(strstr(gq_kclient_auth_mode(c), "token file"));
  json_decref(call(c, "GET", "/api/v1/namespaces", NULL, 0));
  done_with(c, &cfg);
}

static void test_exec_plugin(void **state)
{
  char script[300], path[300], user[800];
  struct gq_kubeconfig cfg;
  struct gq_kclient *c;
  FILE *f;

  (void)state;
  snprintf(script, sizeof(script), "%s/cred.sh", dir);
  f = fopen(script, "w");
  fprintf(f, "#!/bin/sh\ncat <<EOF\n{\"apiVersion\":\"client.authentication."
             "k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":"
             "\"%s\",\"expirationTimestamp\":\"2099-01-01T00:00:00Z\"}}\n"
             "EOF\n", TOKEN);
  fclose(f);
  chmod(script, 0700);
  snprintf(user, sizeof(user),
           "{\"exec\":{\"apiVersion\":\"client.authentication.k8s.io/v1\","
           "\"command\":\"%s\",\"interactiveMode\":\"Never\"}}", script);
  snprintf(path, sizeof(path), "%s/exec.kubeconfig", dir);
  kubeconfig_with(path, user);
  c = client_for(path, &cfg, NULL);
  assert_non_null(strstr(gq_kclient_auth_mode(c), "exec plugin"));
  json_decref(call(c, "GET", "/api/v1/namespaces", NULL, 0));
  json_decref(call(c, "GET", "/api/v1/nodes", NULL, 0));
  done_with(c, &cfg);
}

static void test_list_pagination(void **state)
{
  struct gq_kubeconfig cfg;
  struct gq_kclient *c = client_for(sim.kubeconfig, &cfg, NULL);
  struct result r = {0};
  char body[200];

  (void)state;
  for (int i = 0; i < 7; i++) {
    snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"page-%d\","
             "\"labels\":{\"kind\":\"page\"}}}", i);
    json_decref(call(c, "POST", "/api/v1/namespaces", json_loads(body, 0, NULL),
                     0));
  }
  assert_int_equal(gq_kclient_list(c, "/api/v1/namespaces", "kind=page", NULL,
                                   2, on_result, &r),
                   0);
  assert_true(run_until(&r.done, 30000));
  assert_int_equal(r.rc, 0);
  assert_int_equal(json_array_size(json_object_get(r.obj, "items")), 7);
  assert_true(*json_string_value(json_object_get(r.obj, "resourceVersion")));
  json_decref(r.obj);
  done_with(c, &cfg);
}

struct watched {
  int events, ended, rc;
  char rv[64];
};

static void on_ev(enum gq_watch_type t, const json_t *obj, void *arg)
{
  (void)t;
  (void)obj;
  ((struct watched *)arg)->events++;
}

static void on_end(int rc, const char *rv, void *arg)
{
  struct watched *w = arg;

  w->ended = 1;
  w->rc = rc;
  snprintf(w->rv, sizeof(w->rv), "%s", rv);
}

static void test_watch_bookmarks(void **state)
{
  struct gq_kubeconfig cfg;
  struct gq_kclient *c = client_for(sim.kubeconfig, &cfg, NULL);
  json_t *list = call(c, "GET", "/api/v1/namespaces", NULL, 0);
  struct gq_kwatch_opts o = {"/api/v1/namespaces",
                             json_string_value(json_object_get(
                                 json_object_get(list, "metadata"),
                                 "resourceVersion")),
                             NULL, NULL, 1, 1, 0};
  struct watched w = {0};
  char start_rv[64];

  (void)state;
  snprintf(start_rv, sizeof(start_rv), "%s", o.resource_version);
  json_decref(call(c, "POST", "/api/v1/namespaces",
                   json_loads("{\"metadata\":{\"name\":\"bm\"}}", 0, NULL), 0));
  assert_non_null(gq_kwatch_start(c, &o, on_ev, on_end, &w));
  assert_true(run_until(&w.ended, 30000));
  assert_int_equal(w.rc, 0); /* the server's timeout: a normal end */
  assert_int_equal(w.events, 1);
  assert_string_not_equal(w.rv, start_rv); /* moved on, by events/bookmarks */
  json_decref(list);
  done_with(c, &cfg);
}

struct seen {
  int synced, adds, dels;
  char last_del[64];
};

static void inf_add(const json_t *obj, void *arg)
{
  (void)obj;
  ((struct seen *)arg)->adds++;
}

static void inf_del(const json_t *obj, void *arg)
{
  struct seen *s = arg;

  s->dels++;
  snprintf(s->last_del, sizeof(s->last_del), "%s",
           json_string_value(json_object_get(json_object_get(obj, "metadata"),
                                             "name")));
}

static void inf_synced(void *arg)
{
  ((struct seen *)arg)->synced = 1;
}

/* The typed form of the typed_only run: the name, except for names
 * starting with "json-", which the hook rejects (their JSON is kept). */
static void *inf_decode(const json_t *obj, char *err, size_t len)
{
  const char *n = json_string_value(
      json_object_get(json_object_get(obj, "metadata"), "name"));

  if (!n || !strncmp(n, "json-", 5)) {
    snprintf(err, len, "rejected");
    return NULL;
  }
  return gq_xstrdup(n);
}

/* Creates namespace <p><name>. */
static void make_ns(struct gq_kclient *c, const char *p, const char *name)
{
  char body[128];

  snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s%s\"}}", p, name);
  json_decref(call(c, "POST", "/api/v1/namespaces", json_loads(body, 0, NULL),
                   0));
}

/* Waits until s->last_del is want (or 30 s). */
static void wait_del(struct seen *s, const char *want)
{
  int got = 0;

  for (int t = 0; t < 1500 && !got; t++) {
    got = !strcmp(s->last_del, want);
    if (!got)
      run_until(&got, 20);
  }
  assert_string_equal(s->last_del, want);
}

/* An informer over namespaces named p*: resumes after the sim closes its
 * watches, relists after a 410 and reports the delete it missed. With
 * typed_only it stores the typed form alone (the JSON only for an object
 * the hook rejects) and a missed delete reaches the handler as a metadata-only object
 * naming the object. */
static void informer_resume_and_relist(const char *p, int typed_only)
{
  struct gq_kubeconfig cfg;
  struct gq_kclient *c = client_for(sim.kubeconfig, &cfg, NULL);
  struct gq_informer_handlers h = {inf_add, NULL, inf_del, inf_synced,
                                   typed_only ? inf_decode : NULL,
                                   typed_only ? free : NULL};
  struct gq_informer_opts o = {"/api/v1/namespaces", NULL, NULL, 300,
                               typed_only};
  struct seen s = {0};
  struct gq_informer *inf = gq_informer_start(c, &o, &h, &s);
  char name[64];
  int added;

  make_ns(c, p, "gone-1");
  assert_true(run_until(&s.synced, 30000));
  added = s.adds;
  /* The sim closes every watch: the informer resumes without a relist. */
  sim_post("/sim/v1/close-watches", "{}");
  make_ns(c, p, "after-close");
  {
    int want = added + 1, got = 0;

    /* the add may come on the closing watch before the informer sees it
     * close: wait for both, the add and the resumed watch */
    for (int t = 0; t < 1500 && !got; t++) {
      got = s.adds >= want && gq_informer_watches(inf) >= 2;
      if (!got)
        run_until(&got, 20);
    }
    assert_true(s.adds >= want);
  }
  assert_int_equal(gq_informer_lists(inf), 1);
  assert_true(gq_informer_watches(inf) >= 2);
  /* Watches fail while more changes than the window (4) happen, including
   * a delete: the resumed watch gets 410, and the relist reports the
   * delete it missed. */
  sim_post("/sim/v1/faults", "{\"verb\":\"watch\",\"resource\":\"namespaces\","
                             "\"status\":500,\"count\":-1}");
  sim_post("/sim/v1/close-watches", "{}");
  snprintf(name, sizeof(name), "/api/v1/namespaces/%sgone-1", p);
  json_decref(call(c, "DELETE", name, NULL, 0));
  for (int i = 0; i < 6; i++) {
    snprintf(name, sizeof(name), "churn-%d", i);
    make_ns(c, p, name);
  }
  sim_post("/sim/v1/faults", "DELETE");
  snprintf(name, sizeof(name), "%sgone-1", p);
  wait_del(&s, name);
  assert_int_equal(gq_informer_lists(inf), 2);
  assert_null(gq_informer_get(inf, name));
  assert_null(gq_informer_typed(inf, name));
  snprintf(name, sizeof(name), "%schurn-5", p);
  if (typed_only) {
    assert_null(gq_informer_get(inf, name));
    assert_string_equal(gq_informer_typed(inf, name), name);
  } else {
    const json_t *got = gq_informer_get(inf, name);

    assert_non_null(got);
    /* the sim records field ownership; the store drops it */
    assert_null(json_object_get(json_object_get(got, "metadata"),
                                "managedFields"));
  }
  assert_true(gq_informer_synced(inf));
  {
    json_t *all = gq_informer_list(inf), *item;
    size_t i;
    int churn = 0;

    if (!typed_only)
      assert_int_equal(json_array_size(all), gq_informer_size(inf));
    json_array_foreach(all, i, item) {
      const char *n = json_string_value(
          json_object_get(json_object_get(item, "metadata"), "name"));

      assert_false(typed_only && strncmp(n, "json-", 5));
      churn += strncmp(n, p, strlen(p)) == 0 &&
               strncmp(n + strlen(p), "churn-", 6) == 0;
    }
    assert_int_equal(churn, typed_only ? 0 : 6);
    json_decref(all);
  }
  if (typed_only) { /* a rejected object keeps its JSON, and goes */
    /* "json-t-x": a valid name (DNS-1123 label; "json-t-" is not) */
    snprintf(name, sizeof(name), "%sx", p);
    make_ns(c, "json-", name);
    snprintf(name, sizeof(name), "json-%sx", p);
    for (int t = 0; t < 1500 && !gq_informer_get(inf, name); t++) {
      int never = 0;

      run_until(&never, 20);
    }
    assert_non_null(gq_informer_get(inf, name));
    assert_null(gq_informer_typed(inf, name));
    snprintf(name, sizeof(name), "/api/v1/namespaces/json-%sx", p);
    json_decref(call(c, "DELETE", name, NULL, 0));
    wait_del(&s, name + strlen("/api/v1/namespaces/"));
  }
  gq_informer_stop(inf);
  done_with(c, &cfg);
}

static void test_informer_resume_and_relist(void **state)
{
  (void)state;
  informer_resume_and_relist("", 0);
}

static void test_informer_typed_only(void **state)
{
  (void)state;
  informer_resume_and_relist("t-", 1);
}

/* DELETE with a uid precondition and grace period, and the eviction
 * subresource, through the client's own verbs. */
static void test_delete_and_evict(void **state)
{
  struct gq_kubeconfig cfg;
  struct gq_kclient *c = client_for(sim.kubeconfig, &cfg, NULL);
  const char *pod = "{\"metadata\":{\"name\":\"%s\"},\"spec\":{"
                    "\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}";
  char body[256], uid[128];
  struct result r = {0};
  json_t *obj;

  (void)state;
  snprintf(body, sizeof(body), pod, "del-1");
  obj = call(c, "POST", "/api/v1/namespaces/default/pods",
             json_loads(body, 0, NULL), 0);
  snprintf(uid, sizeof(uid), "%s",
           json_string_value(json_object_get(json_object_get(obj, "metadata"),
                                             "uid")));
  json_decref(obj);

  /* A stale uid precondition is a conflict and deletes nothing. */
  assert_int_equal(gq_kclient_delete(c, "/api/v1/namespaces/default/pods/del-1",
                                     0, "not-the-uid", on_result, &r), 0);
  assert_true(run_until(&r.done, 30000));
  assert_int_equal(r.rc, GQ_ECONFLICT);
  json_decref(r.obj);
  json_decref(call(c, "GET", "/api/v1/namespaces/default/pods/del-1", NULL, 0));

  /* The right uid with grace 0 removes it. */
  memset(&r, 0, sizeof(r));
  assert_int_equal(gq_kclient_delete(c, "/api/v1/namespaces/default/pods/del-1",
                                     0, uid, on_result, &r), 0);
  assert_true(run_until(&r.done, 30000));
  assert_int_equal(r.rc, 0);
  json_decref(r.obj);
  json_decref(call(c, "GET", "/api/v1/namespaces/default/pods/del-1", NULL,
                   GQ_ENOTFOUND));

  /* Eviction of a pod no budget covers goes through; of a missing pod is
   * not found. */
  snprintf(body, sizeof(body), pod, "ev-1");
  json_decref(call(c, "POST", "/api/v1/namespaces/default/pods",
                   json_loads(body, 0, NULL), 0));
  memset(&r, 0, sizeof(r));
  assert_int_equal(gq_kclient_evict(c, "default", "ev-1", 0, on_result, &r), 0);
  assert_true(run_until(&r.done, 30000));
  assert_int_equal(r.rc, 0);
  json_decref(r.obj);
  /* evicted: gone, or terminating (it has a deletionTimestamp) */
  memset(&r, 0, sizeof(r));
  assert_int_equal(gq_kclient_request(c, "GET",
                                      "/api/v1/namespaces/default/pods/ev-1",
                                      NULL, NULL, on_result, &r), 0);
  assert_true(run_until(&r.done, 30000));
  assert_true(r.rc == GQ_ENOTFOUND ||
              (r.rc == 0 && json_object_get(json_object_get(r.obj, "metadata"),
                                            "deletionTimestamp")));
  json_decref(r.obj);
  memset(&r, 0, sizeof(r));
  assert_int_equal(gq_kclient_evict(c, "default", "nobody", 0, on_result, &r),
                   0);
  assert_true(run_until(&r.done, 30000));
  assert_int_equal(r.rc, GQ_ENOTFOUND);
  json_decref(r.obj);
  done_with(c, &cfg);
}

static void test_conflict_and_retries(void **state)
{
  struct gq_kubeconfig cfg;
  struct gq_kclient_opts o = {.backoff_ms = 10, .backoff_max_ms = 50};
  struct gq_kclient *c = client_for(sim.kubeconfig, &cfg, &o);
  json_t *ns = call(c, "GET", "/api/v1/namespaces/bm", NULL, 0);

  (void)state;
  json_object_set_new(json_object_get(ns, "metadata"), "labels",
                      json_pack("{s:s}", "v", "1"));
  json_decref(call(c, "PUT", "/api/v1/namespaces/bm", json_incref(ns), 0));
  json_decref(call(c, "PUT", "/api/v1/namespaces/bm", json_incref(ns),
                   GQ_ECONFLICT));
  /* An event about the namespace, found by its involvedObject. */
  {
    struct result r = {0};

    assert_int_equal(gq_kclient_event(c, ns, "Normal", "Checked",
                                      "looked at it", "gpuq", on_result, &r),
                     0);
    assert_true(run_until(&r.done, 30000));
    assert_int_equal(r.rc, 0);
    json_decref(r.obj);
    r.obj = call(c, "GET", "/api/v1/namespaces/default/events?fieldSelector="
                           "involvedObject.name%3Dbm,reason%3DChecked",
                 NULL, 0);
    assert_int_equal(json_array_size(json_object_get(r.obj, "items")), 1);
    json_decref(r.obj);
  }
  json_decref(ns);
  sim_post("/sim/v1/faults", "{\"verb\":\"get\",\"resource\":\"namespaces\","
                             "\"status\":500,\"count\":2}");
  json_decref(call(c, "GET", "/api/v1/namespaces/bm", NULL, 0));
  sim_post("/sim/v1/faults", "{\"verb\":\"create\",\"resource\":\"namespaces\","
                             "\"status\":429,\"count\":2}");
  json_decref(call(c, "POST", "/api/v1/namespaces",
                   json_loads("{\"metadata\":{\"name\":\"after-429\"}}", 0,
                              NULL),
                   0));
  sim_post("/sim/v1/faults", "{\"verb\":\"create\",\"resource\":\"namespaces\","
                             "\"status\":500,\"count\":1}");
  /* A POST is not repeated after a 500: the server may have done it. */
  json_decref(call(c, "POST", "/api/v1/namespaces",
                   json_loads("{\"metadata\":{\"name\":\"no-retry\"}}", 0,
                              NULL),
                   GQ_EUNAVAIL));
  done_with(c, &cfg);
}

static void test_rate_limit(void **state)
{
  struct gq_kubeconfig cfg;
  struct gq_kclient_opts o = {.qps = 20, .burst = 1};
  struct gq_kclient *c = client_for(sim.kubeconfig, &cfg, &o);
  struct result r[10];
  int64_t t0 = gq_clock_mono_ms();
  int all = 0;

  (void)state;
  memset(r, 0, sizeof(r));
  for (int i = 0; i < 10; i++)
    gq_kclient_get(c, "/version", on_result, &r[i]);
  while (!all) {
    all = 1;
    for (int i = 0; i < 10; i++)
      all &= r[i].done;
    if (!all)
      uv_run(&loop, UV_RUN_ONCE);
  }
  /* 10 requests at 20/s with a burst of 1: at least 9 x 50 ms apart. */
  assert_true(gq_clock_mono_ms() - t0 >= 450);
  for (int i = 0; i < 10; i++)
    json_decref(r[i].obj);
  done_with(c, &cfg);
}

struct ordered {
  struct result r;
  int *seq, at; /* at: 1-based completion rank */
  int sent;     /* times the sent hook ran */
};

static void on_ordered(int rc, const struct gq_k8s_status *st,
                       const json_t *obj, void *arg)
{
  struct ordered *o = arg;

  assert_int_equal(o->sent, 1); /* on the wire before it can end */
  on_result(rc, st, obj, &o->r);
  o->at = ++*o->seq;
}

static void on_sent(void *arg)
{
  struct ordered *o = arg;

  assert_false(o->r.done);
  o->sent++;
}

/* Runs the loop until every o[i] is done, checking that the client never
 * has more than max requests on the wire; returns the most it had. */
static unsigned run_all(struct gq_kclient *c, struct ordered *o, int n,
                        unsigned max)
{
  int64_t end = gq_clock_mono_ms() + 30000;
  unsigned most = 0;
  int all = 0;

  while (!all && gq_clock_mono_ms() < end) {
    uv_run(&loop, UV_RUN_ONCE);
    if (gq_kclient_inflight(c) > most)
      most = gq_kclient_inflight(c);
    assert_true(gq_kclient_inflight(c) <= max);
    all = 1;
    for (int i = 0; i < n; i++)
      all &= o[i].r.done;
  }
  assert_true(all);
  return most;
}

/* The next token goes to the waiting request of the highest priority, and
 * the window bounds the requests on the wire: with one token at a time
 * (and then one request at a time), the first low-priority request goes,
 * then every high one, then the other low ones, each group in order; the
 * sent hook runs once for each, before its callback. A success without
 * body parsing gives no object; an error is still decoded. */
static void test_priorities_and_window(void **state)
{
  static const struct gq_kclient_call low = {GQ_KPRIO_LOW, 0, on_sent, 0},
                                      high = {GQ_KPRIO_HIGH, 0, on_sent, 0},
                                      normal = {GQ_KPRIO_NORMAL, 0, on_sent, 0},
                                      nobody = {GQ_KPRIO_NORMAL, 1, NULL, 0};
  struct gq_kubeconfig cfg;
  struct gq_kclient_opts o1 = {.qps = 20, .burst = 1};
  struct gq_kclient_opts o2 = {.qps = -1, .max_inflight = 1};
  struct gq_kclient_opts o3 = {.qps = -1, .max_inflight = 3};
  struct gq_kclient *c;
  struct ordered q[8];
  struct result r = {0}, e = {0};
  int seq;

  (void)state;
  for (int round = 0; round < 2; round++) {
    c = client_for(sim.kubeconfig, &cfg, round ? &o2 : &o1);
    memset(q, 0, sizeof(q));
    seq = 0;
    for (int i = 0; i < 8; i++) {
      q[i].seq = &seq;
      assert_int_equal(gq_kclient_request_how(c, "GET", "/version", NULL,
                                              NULL, i < 4 ? &low : &high,
                                              on_ordered, &q[i]),
                       0);
    }
    assert_true(run_all(c, q, 8, round ? 1 : 64) >= 1);
    assert_int_equal(q[0].at, 1);
    for (int i = 4; i < 8; i++)
      assert_int_equal(q[i].at, i - 2); /* 2..5 */
    for (int i = 1; i < 4; i++)
      assert_int_equal(q[i].at, i + 5); /* 6..8 */
    for (int i = 0; i < 8; i++) {
      assert_int_equal(q[i].r.rc, 0);
      json_decref(q[i].r.obj);
    }
    done_with(c, &cfg);
  }
  /* a window of 3 is used whole and never exceeded */
  c = client_for(sim.kubeconfig, &cfg, &o3);
  memset(q, 0, sizeof(q));
  seq = 0;
  for (int i = 0; i < 8; i++) {
    q[i].seq = &seq;
    gq_kclient_request_how(c, "GET", "/version", NULL, NULL, &normal,
                           on_ordered, &q[i]);
  }
  assert_int_equal(run_all(c, q, 8, 3), 3);
  for (int i = 0; i < 8; i++)
    json_decref(q[i].r.obj);
  gq_kclient_request_how(c, "GET", "/version", NULL, NULL, &nobody,
                         on_result, &r);
  gq_kclient_request_how(c, "GET", "/api/v1/namespaces/nope/pods/nope", NULL,
                         NULL, &nobody, on_result, &e);
  assert_true(run_until(&r.done, 30000) && run_until(&e.done, 30000));
  assert_int_equal(r.rc, 0);
  assert_null(r.obj);
  assert_int_equal(e.rc, GQ_ENOTFOUND);
  assert_string_equal(e.reason, "NotFound");
  json_decref(e.obj);
  done_with(c, &cfg);
}

struct cand {
  int leading, started, stopped;
};

static void lead_start(void *arg)
{
  struct cand *c = arg;

  c->leading = 1;
  c->started++;
}

static void lead_stop(void *arg)
{
  struct cand *c = arg;

  c->leading = 0;
  c->stopped++;
}

static void test_leader_election(void **state)
{
  struct gq_kubeconfig ca, cb;
  struct gq_kclient *a = client_for(sim.kubeconfig, &ca, NULL);
  struct gq_kclient *b = client_for(sim.kubeconfig, &cb, NULL);
  struct cand x = {0}, y = {0};
  /* Short timings keep the test quick; the renew deadline still leaves a
   * loaded machine 2 s for one renewal round trip. */
  struct gq_leader_opts oa = {"default", "gpuq", "a", 3000, 2000, 200,
                              lead_start, lead_stop, &x, 0};
  struct gq_leader_opts ob = {"default", "gpuq", "b", 3000, 2000, 200,
                              lead_start, lead_stop, &y, 0};
  struct gq_leader *la = gq_leader_start(a, &oa), *lb;
  int either = 0, other = 0;

  (void)state;
  assert_true(run_until(&x.leading, 10000));
  lb = gq_leader_start(b, &ob);
  /* For a while (several renewals of a), exactly one leads. */
  for (int i = 0; i < 40; i++) {
    run_until(&either, 50);
    assert_true(x.leading + y.leading == 1);
  }
  assert_int_equal(y.started, 0);
  /* a stops renewing (no release): b takes over after the lease runs out. */
  gq_leader_stop(la);
  assert_int_equal(x.stopped, 1);
  assert_true(run_until(&y.leading, 15000));
  other = gq_leader_is_leader(lb);
  assert_true(other);
  gq_leader_stop(lb);
  done_with(a, &ca);
  done_with(b, &cb);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_token_over_tls),
      cmocka_unit_test(test_wrong_token_and_token_file),
      cmocka_unit_test(test_exec_plugin),
      cmocka_unit_test(test_list_pagination),
      cmocka_unit_test(test_watch_bookmarks),
      cmocka_unit_test(test_informer_resume_and_relist),
      cmocka_unit_test(test_informer_typed_only),
      cmocka_unit_test(test_delete_and_evict),
      cmocka_unit_test(test_conflict_and_retries),
      cmocka_unit_test(test_rate_limit),
      cmocka_unit_test(test_priorities_and_window),
      cmocka_unit_test(test_leader_election),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
