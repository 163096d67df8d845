/* deploy/ (issue 11): `kubectl kustomize deploy/` renders without a
 * cluster and holds every kind of the installation with the settings the
 * issue asks for (2 replicas with --leader-elect, probes, requests,
 * non-root read-only containers, Redis with AOF everysec, a PVC and its
 * password from a Secret); gpuq-controller accepts the Deployment's
 * arguments, and runs the workload with its Redis URL and a password; the RBAC rules have no wildcard and cover every
 * (API group, resource, verb) the real controller used against gpuq-sim
 * while it admitted, ran, drained and deleted jobs with leader election
 * (read from the sim's request log); promtool checks the rendered alert
 * rules and the live controller's /metrics; every gpuq_* name in the
 * alerts and the Grafana dashboard exists on that /metrics; the dashboard
 * puts allocated and used GPUs side by side per team, and promtool test
 * rules fires the idle-allocation alert for the right team only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "api/yaml.h"
#include "tests/support/fixture.h"
#include "tests/support/proc.h"
#include "tests/support/redis.h"

static struct gq_test_sim sim;
static struct gq_test_redis redis;
static struct gq_test_ctl ctl;
static json_t *docs;    /* the rendered installation */
static char *metrics;   /* the live controller's /metrics */
static char *sim_log;   /* the sim's request log after the workload */

/* 1 if an executable 'tool' is on PATH. */
static int have(const char *tool)
{
  char path[512];
  const char *p = getenv("PATH");

  while (p && *p) {
    size_t n = strcspn(p, ":");

    snprintf(path, sizeof(path), "%.*s/%s", (int)n, p, tool);
    if (access(path, X_OK) == 0)
      return 1;
    p += n + (p[n] == ':');
  }
  return 0;
}

static int ctl_status = -2;
#define PASSWORD "0123456789abcdef" /* the Secret's value in the tests */ /* gq_test_ctl_stop() after the workload */

/* Runs kubectl against the sim and fails unless it exits 0. kubectl sends
 * Kubectl-Command, so the sim's log tells its requests from the
 * controller's (which show "-"). */
#define KUBECTL(stdin_text, ...)                                             \
  do {                                                                       \
    struct gq_test_out o_;                                                   \
    gq_test_kubectl(&sim, &o_, (stdin_text), __VA_ARGS__, NULL);             \
    if (o_.status != 0)                                                      \
      fail_msg("kubectl: exit %d\n%s%s", o_.status, o_.out, o_.err);         \
    gq_test_out_free(&o_);                                                   \
  } while (0)

/* Waits (deadline 60 s) until `kubectl get gpujob NAME -n team-a -o
 * jsonpath={.status.phase}` prints want, or, with want NULL, until the job
 * is gone. Returns 1 if it did. */
static int wait_job(const char *name, const char *want)
{
  for (int t = 0; t < 600; t++) {
    struct gq_test_out o;
    int ok;

    gq_test_kubectl(&sim, &o, NULL, "get", "gpujob", name, "-n", "team-a",
                    "-o", "jsonpath={.status.phase}", NULL);
    ok = want ? o.status == 0 && !strcmp(o.out, want)
              : o.status != 0 && strstr(o.err, "NotFound") != NULL;
    gq_test_out_free(&o);
    if (ok)
      return 1;
    gq_test_sleep_ms(100);
  }
  return 0;
}

static const char *workload =
    "apiVersion: gpuq.dev/v1alpha1\n"
    "kind: TeamQuota\n"
    "metadata: {name: team-a}\n"
    "spec:\n"
    "  namespaces: [team-a]\n"
    "  resources: [{flavor: '*', nominal: 16}]\n"
    "---\n"
    "apiVersion: gpuq.dev/v1alpha1\n"
    "kind: GpuJob\n"
    "metadata: {name: gang, namespace: team-a}\n"
    "spec:\n"
    "  team: team-a\n"
    "  replicas: 2\n"
    "  gpusPerReplica: 4\n"
    "  checkpoint: {gracePeriodSeconds: 5}\n"
    "  drainPolicy: Wait\n"
    "  template:\n"
    "    metadata: {annotations: {sim.gpuq.dev/run-seconds: '3'}}\n"
    "    spec: {containers: [{name: c, image: x}]}\n"
    "---\n"
    "apiVersion: gpuq.dev/v1alpha1\n"
    "kind: GpuJob\n"
    "metadata: {name: longrun, namespace: team-a}\n"
    "spec:\n"
    "  team: team-a\n"
    "  gpusPerReplica: 8\n"
    "  template: {spec: {containers: [{name: c, image: x}]}}\n";

static int deployment_redis_url(char *buf, size_t len);

/* Renders deploy/, then runs the workload under leader election: a
 * drainPolicy Wait gang (its pods, Service and PodDisruptionBudget) that
 * finishes, and a job deleted while it runs (pods deleted, finalizer
 * removed); takes /metrics, stops the controller (it releases its Lease)
 * and keeps the sim's request log. */
static int setup(void **state)
{
  static const char *const sargs[] = {"--cluster", "clusters/mixed.yaml",
                                      "--log-level", "debug", NULL};
  static const char *const cargs[] = {"--leader-elect", "--lease-namespace",
                                      "gpuq-system", NULL};
  const char *const render[] = {"kubectl", "kustomize", "deploy/", NULL};
  struct gq_test_out o;
  char err[512], url[128];

  static const char *const rargs[] = {"--requirepass", PASSWORD, NULL};
  char redis_url[256];

  (void)state;
  if (gq_test_redis_start(&redis, rargs) != 0 ||
      gq_test_sim_start(&sim, sargs) != 0)
    return -1;
  if (gq_test_run(sim.dir, render, &o) != 0 ||
      gq_yaml_parse(o.out, strlen(o.out), &docs, err, sizeof(err)) != 0) {
    fprintf(stderr, "kubectl kustomize deploy/: %s\n%s", err, o.err);
    gq_test_out_free(&o);
    return -1;
  }
  gq_test_out_free(&o);
  /* the Deployment's own Redis URL, with the Secret's password, pointed at
   * the test's password-protected redis-server */
  if (deployment_redis_url(redis_url, sizeof(redis_url)) != 0)
    return -1;
  KUBECTL(NULL, "create", "namespace", "gpuq-system");
  KUBECTL(NULL, "create", "namespace", "team-a");
  if (gq_test_ctl_start(&ctl, &sim, redis_url, 1, cargs) != 0)
    return -1;
  KUBECTL(workload, "apply", "-f", "-");
  if (!wait_job("longrun", "Running") || !wait_job("gang", "Succeeded"))
    return -1;
  snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", ctl.metrics_port);
  if (gq_test_http("GET", url, NULL, NULL, NULL, &metrics) != 200)
    return -1;
  KUBECTL(NULL, "delete", "gpujob", "longrun", "-n", "team-a", "--wait=false");
  if (!wait_job("longrun", NULL))
    return -1;
  ctl_status = gq_test_ctl_stop(&ctl);
  sim_log = gq_test_read_file(sim.log, NULL);
  return sim_log ? 0 : -1;
}

static int teardown(void **state)
{
  int rc = ctl_status != 0;

  (void)state;
  json_decref(docs);
  free(metrics);
  free(sim_log);
  if (ctl_status == -2)
    gq_test_ctl_stop(&ctl);
  rc |= gq_test_sim_stop(&sim) != 0;
  gq_test_redis_stop(&redis);
  return rc ? -1 : 0;
}

/* The rendered object of kind (and name, if not NULL), or NULL. */
static const json_t *find(const char *kind, const char *name)
{
  const json_t *d;
  size_t i;

  json_array_foreach(docs, i, d) {
    const char *k = json_string_value(json_object_get(d, "kind"));
    const char *n = json_string_value(
        json_object_get(json_object_get(d, "metadata"), "name"));

    if (k && !strcmp(k, kind) && (!name || (n && !strcmp(n, name))))
      return d;
  }
  return NULL;
}

/* doc.k1.k2... (keys, or "[N]" for an array index), borrowed or NULL. */
static const json_t *at(const json_t *doc, ...)
{
  va_list ap;
  const char *k;

  va_start(ap, doc);
  while (doc && (k = va_arg(ap, const char *)) != NULL)
    doc = k[0] == '[' ? json_array_get(doc, strtoul(k + 1, NULL, 10))
                      : json_object_get(doc, k);
  va_end(ap);
  return doc;
}

/* The controller container's args of the rendered Deployment. */
static const json_t *controller_args(void)
{
  return at(find("Deployment", "gpuq-controller"), "spec", "template", "spec",
            "containers", "[0]", "args", NULL);
}

/* Copies s into buf (len bytes) with every $(NAME) replaced by its test
 * value, as the kubelet expands container args from the env. Returns 0,
 * or -1 for a variable the container's env does not define. */
static int expand(const char *s, char *buf, size_t len)
{
  static const char *const vars[][2] = {{"POD_NAME", "gpuq-controller-x1"},
                                        {"POD_NAMESPACE", "gpuq-system"},
                                        {"REDIS_PASSWORD", PASSWORD}};
  const json_t *env = at(find("Deployment", "gpuq-controller"), "spec",
                         "template", "spec", "containers", "[0]", "env",
                         NULL);
  size_t o = 0;

  while (*s && o + 1 < len) {
    size_t v;
    int known = 0;

    if (strncmp(s, "$(", 2)) {
      buf[o++] = *s++;
      continue;
    }
    for (v = 0; v < sizeof(vars) / sizeof(vars[0]); v++) {
      size_t n = strlen(vars[v][0]);
      const json_t *e;
      size_t i;

      if (strncmp(s + 2, vars[v][0], n) || s[2 + n] != ')')
        continue;
      json_array_foreach(env, i, e)
        known |= !strcmp(json_string_value(json_object_get(e, "name")),
                         vars[v][0]);
      if (!known)
        return -1;
      o += (size_t)snprintf(buf + o, len - o, "%s", vars[v][1]);
      s += 3 + n;
      break;
    }
    if (!known)
      return -1;
  }
  buf[o < len ? o : len - 1] = '\0';
  return 0;
}

static int deployment_redis_url(char *buf, size_t len)
{
  const json_t *args = controller_args();
  char url[256], *host;
  size_t i;

  for (i = 0; i + 1 < json_array_size(args); i++)
    if (!strcmp(json_string_value(json_array_get(args, i)), "--redis"))
      break;
  if (i + 1 >= json_array_size(args) ||
      expand(json_string_value(json_array_get(args, i + 1)), url,
             sizeof(url)) != 0 ||
      !(host = strstr(url, "@gpuq-redis:6379"))) {
    fprintf(stderr, "the Deployment has no --redis "
            "redis://:$(REDIS_PASSWORD)@gpuq-redis:6379/... argument\n");
    return -1;
  }
  *host = '\0';
  return snprintf(buf, len, "%s@127.0.0.1:%d%s", url, redis.port,
                  host + strlen("@gpuq-redis:6379")) < (int)len ? 0 : -1;
}

static int has_string(const json_t *arr, const char *s)
{
  const json_t *v;
  size_t i;

  json_array_foreach(arr, i, v)
    if (json_is_string(v) && !strcmp(json_string_value(v), s))
      return 1;
  return 0;
}

static void test_kinds(void **state)
{
  static const char *const kinds[] = {
      "Namespace", "CustomResourceDefinition", "ServiceAccount",
      "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
      "Deployment", "Service", "StatefulSet", "ConfigMap", "ServiceMonitor",
      "PrometheusRule", NULL};

  (void)state;
  for (size_t i = 0; kinds[i]; i++)
    if (!find(kinds[i], NULL))
      fail_msg("kind %s missing from kubectl kustomize deploy/", kinds[i]);
  assert_non_null(find("CustomResourceDefinition", "gpujobs.gpuq.dev"));
  assert_non_null(find("CustomResourceDefinition", "teamquotas.gpuq.dev"));
  assert_non_null(find("Service", "gpuq-controller-metrics"));
  assert_non_null(find("ConfigMap", "gpuq-grafana-dashboard"));
  assert_string_equal(json_string_value(at(find("Deployment", NULL),
                          "metadata", "namespace", NULL)), "gpuq-system");
}

static void test_controller(void **state)
{
  const json_t *d = find("Deployment", "gpuq-controller"), *pod, *c, *svc;

  (void)state;
  assert_non_null(d);
  assert_int_equal(json_integer_value(at(d, "spec", "replicas", NULL)), 2);
  pod = at(d, "spec", "template", "spec", NULL);
  c = at(pod, "containers", "[0]", NULL);
  assert_true(has_string(at(c, "args", NULL), "--leader-elect"));
  assert_string_equal(json_string_value(at(c, "livenessProbe", "httpGet",
                                           "path", NULL)), "/healthz");
  assert_string_equal(json_string_value(at(c, "readinessProbe", "httpGet",
                                           "path", NULL)), "/readyz");
  assert_non_null(at(c, "resources", "requests", "cpu", NULL));
  assert_non_null(at(c, "resources", "requests", "memory", NULL));
  assert_true(json_is_true(at(pod, "securityContext", "runAsNonRoot", NULL)));
  assert_true(json_integer_value(at(pod, "securityContext", "runAsUser",
                                    NULL)) > 0);
  assert_true(json_is_true(at(c, "securityContext", "readOnlyRootFilesystem",
                              NULL)));
  assert_true(json_is_false(at(c, "securityContext",
                               "allowPrivilegeEscalation", NULL)));
  assert_string_equal(json_string_value(at(pod, "serviceAccountName", NULL)),
                      "gpuq-controller");
  /* the ServiceMonitor selects the metrics Service, which keeps not-ready
   * replicas (no Redis) scraped */
  svc = find("Service", "gpuq-controller-metrics");
  assert_true(json_is_true(at(svc, "spec", "publishNotReadyAddresses", NULL)));
  assert_true(json_equal(
      (json_t *)at(find("ServiceMonitor", NULL), "spec", "selector",
                   "matchLabels", NULL),
      (json_t *)at(svc, "spec", "selector", NULL)));
}

/* One webhook of a rendered configuration: path, fixed settings and the
 * namespaceSelector skipping exempt namespaces and kube-system. */
static void check_webhook(const json_t *wh, const char *path)
{
  const json_t *svc = at(wh, "clientConfig", "service", NULL), *e;
  int exempt = 0, kube_system = 0;
  size_t i;

  assert_string_equal(json_string_value(at(svc, "name", NULL)),
                      "gpuq-controller-webhook");
  assert_string_equal(json_string_value(at(svc, "namespace", NULL)),
                      "gpuq-system");
  assert_string_equal(json_string_value(at(svc, "path", NULL)), path);
  assert_int_equal(json_integer_value(at(svc, "port", NULL)), 9443);
  assert_string_equal(json_string_value(at(wh, "failurePolicy", NULL)),
                      "Fail");
  assert_string_equal(json_string_value(at(wh, "sideEffects", NULL)), "None");
  assert_int_equal(json_integer_value(at(wh, "timeoutSeconds", NULL)), 5);
  json_array_foreach(at(wh, "namespaceSelector", "matchExpressions", NULL), i,
                     e) {
    const char *k = json_string_value(at(e, "key", NULL));
    int notin = !strcmp(json_string_value(at(e, "operator", NULL)), "NotIn");

    exempt |= notin && !strcmp(k, "gpuq.dev/exempt") &&
              has_string(at(e, "values", NULL), "true");
    kube_system |= notin && !strcmp(k, "kubernetes.io/metadata.name") &&
                   has_string(at(e, "values", NULL), "kube-system");
  }
  assert_true(exempt && kube_system);
}

/* The admission webhooks (docs/integrations.md): both configurations, the
 * Service on 9443, the TLS Secret mounted where the args point, and
 * gpuq-system exempt (the controller must start with no webhook up). */
static void test_webhooks(void **state)
{
  const json_t *mut = find("MutatingWebhookConfiguration", "gpuq");
  const json_t *val = find("ValidatingWebhookConfiguration", "gpuq");
  const json_t *pod = at(find("Deployment", "gpuq-controller"), "spec",
                         "template", "spec", NULL);

  (void)state;
  assert_non_null(mut);
  assert_non_null(val);
  assert_int_equal(json_array_size(at(mut, "webhooks", NULL)), 2);
  check_webhook(at(mut, "webhooks", "[0]", NULL), "/mutate");
  check_webhook(at(mut, "webhooks", "[1]", NULL), "/mutate");
  check_webhook(at(val, "webhooks", "[0]", NULL), "/validate");
  assert_int_equal(json_integer_value(at(find("Service",
      "gpuq-controller-webhook"), "spec", "ports", "[0]", "port", NULL)),
      9443);
  /* the webhooks need no Redis: a not-ready replica still answers them */
  assert_true(json_is_true(at(find("Service", "gpuq-controller-webhook"),
                              "spec", "publishNotReadyAddresses", NULL)));
  assert_string_equal(json_string_value(at(pod, "volumes", "[0]", "secret",
                                           "secretName", NULL)),
                      "gpuq-webhook-tls");
  assert_string_equal(json_string_value(at(pod, "containers", "[0]",
      "volumeMounts", "[0]", "mountPath", NULL)), "/etc/gpuq/webhook");
  assert_true(has_string(controller_args(), "/etc/gpuq/webhook/tls.crt"));
  assert_true(has_string(controller_args(), "/etc/gpuq/webhook/tls.key"));
  assert_string_equal(json_string_value(at(find("Namespace", "gpuq-system"),
      "metadata", "labels", "gpuq.dev/exempt", NULL)), "true");
}

/* gpuq-controller accepts the Deployment's arguments as the kubelet
 * expands them: every $(VAR) defined in the env, every flag known (the
 * parser stops at the first unknown one, before the final --help). */
static void test_controller_args(void **state)
{
  const json_t *args = controller_args();
  const char *argv[40];
  char vals[32][256], bin[512];
  struct gq_test_out o;
  size_t n = json_array_size(args);

  (void)state;
  assert_true(n > 0 && n < 32);
  snprintf(bin, sizeof(bin), "%s/gpuq-controller", GQ_BINARY_DIR);
  argv[0] = bin;
  for (size_t i = 0; i < n; i++) {
    if (expand(json_string_value(json_array_get(args, i)), vals[i],
               sizeof(vals[i])) != 0)
      fail_msg("arg '%s' uses a variable the env does not define",
               json_string_value(json_array_get(args, i)));
    argv[i + 1] = vals[i];
  }
  argv[n + 1] = "--help";
  argv[n + 2] = NULL;
  gq_test_run(sim.dir, argv, &o);
  if (o.status != 0)
    fail_msg("gpuq-controller rejects the Deployment's args: exit %d\n%s",
             o.status, o.err);
  gq_test_out_free(&o);
}

static void test_redis(void **state)
{
  const json_t *ss = find("StatefulSet", "gpuq-redis"), *c, *env, *e;
  const char *conf = json_string_value(
      at(find("ConfigMap", "gpuq-redis"), "data", "redis.conf", NULL));
  size_t i;
  int from_secret = 0;

  (void)state;
  assert_non_null(ss);
  assert_non_null(conf);
  assert_non_null(strstr(conf, "appendonly yes"));
  assert_non_null(strstr(conf, "appendfsync everysec"));
  assert_null(strstr(conf, "requirepass")); /* never in a ConfigMap */
  assert_int_equal(json_array_size(at(ss, "spec", "volumeClaimTemplates",
                                      NULL)), 1);
  c = at(ss, "spec", "template", "spec", "containers", "[0]", NULL);
  env = at(c, "env", NULL);
  json_array_foreach(env, i, e)
    from_secret |= !strcmp(json_string_value(at(e, "name", NULL)),
                           "REDIS_PASSWORD") &&
                   at(e, "valueFrom", "secretKeyRef", "name", NULL);
  assert_true(from_secret);
  assert_true(json_is_true(at(c, "securityContext", "readOnlyRootFilesystem",
                              NULL)));
  assert_true(json_is_true(at(ss, "spec", "template", "spec",
                              "securityContext", "runAsNonRoot", NULL)));
}

/* Every rule of every ClusterRole and Role: no "*" anywhere. */
static void test_rbac_no_wildcard(void **state)
{
  static const char *const fields[] = {"apiGroups", "resources", "verbs",
                                       "resourceNames", "nonResourceURLs",
                                       NULL};
  const json_t *d, *rule;
  size_t i, j, rules = 0;

  (void)state;
  json_array_foreach(docs, i, d) {
    const char *k = json_string_value(json_object_get(d, "kind"));

    if (!k || (strcmp(k, "ClusterRole") && strcmp(k, "Role")))
      continue;
    json_array_foreach(json_object_get(d, "rules"), j, rule) {
      for (size_t f = 0; fields[f]; f++)
        if (has_string(json_object_get(rule, fields[f]), "*"))
          fail_msg("%s rule %zu: wildcard in %s", k, j, fields[f]);
      assert_true(json_array_size(json_object_get(rule, "verbs")) > 0);
      rules++;
    }
  }
  assert_true(rules >= 10);
}

/* 1 if a rule of role (a ClusterRole or Role document) grants verb on
 * group/resource. */
static int granted(const json_t *role, const char *group, const char *res,
                   const char *verb)
{
  const json_t *rule;
  size_t i;

  json_array_foreach(json_object_get(role, "rules"), i, rule)
    if (has_string(json_object_get(rule, "apiGroups"), group) &&
        has_string(json_object_get(rule, "resources"), res) &&
        has_string(json_object_get(rule, "verbs"), verb))
      return 1;
  return 0;
}

/* Checks one request the controller made ("GET /api/v1/pods"): the
 * ClusterRole, or for the controller's own namespace also the Role, must
 * grant it. A GET of a collection is an informer's list and then watch
 * (the log has no query string): both are required. Returns the number of
 * (resource, verb) pairs checked; non-resource paths (/version, /api)
 * count 0. */
static int check_request(const char *method, const char *path)
{
  const json_t *cr = find("ClusterRole", "gpuq-controller");
  const json_t *role = find("Role", "gpuq-controller-leader-election");
  char *seg[16], *save = NULL, res[256], copy[1024];
  const char *group, *ns = NULL, *verbs[2] = {NULL, NULL};
  int n = 0, r, rest;

  snprintf(copy, sizeof(copy), "%s", path);
  for (char *t = strtok_r(copy, "/", &save); t && n < 16;
       t = strtok_r(NULL, "/", &save))
    seg[n++] = t;
  if (n >= 2 && !strcmp(seg[0], "api"))
    group = "", r = 2;
  else if (n >= 3 && !strcmp(seg[0], "apis"))
    group = seg[1], r = 3;
  else
    return 0;
  if (n - r >= 3 && !strcmp(seg[r], "namespaces"))
    ns = seg[r + 1], r += 2;
  rest = n - r;
  if (rest < 1)
    return 0;
  snprintf(res, sizeof(res), "%s%s%s", seg[r], rest >= 3 ? "/" : "",
           rest >= 3 ? seg[r + 2] : "");
  if (!strcmp(method, "GET"))
    verbs[0] = rest == 1 ? "list" : "get", verbs[1] = rest == 1 ? "watch" : NULL;
  else if (!strcmp(method, "POST"))
    verbs[0] = "create";
  else if (!strcmp(method, "PUT"))
    verbs[0] = "update";
  else if (!strcmp(method, "PATCH"))
    verbs[0] = "patch";
  else if (!strcmp(method, "DELETE"))
    verbs[0] = rest == 1 ? "deletecollection" : "delete";
  for (int v = 0; v < 2 && verbs[v]; v++)
    if (!granted(cr, group, res, verbs[v]) &&
        !(ns && !strcmp(ns, "gpuq-system") &&
          granted(role, group, res, verbs[v])))
      fail_msg("the controller called %s %s (%s on %s/%s%s%s) and no rule "
               "grants it", method, path, verbs[v], group, res,
               ns ? " in " : "", ns ? ns : "");
  return verbs[1] ? 2 : 1;
}

static void test_rbac_covers_controller(void **state)
{
  const char *p = sim_log;
  int checked = 0, leases = 0, pdbs = 0, services = 0;

  (void)state;
  /* lines: msg="GET /api/v1/pods (-)": "-" = not kubectl */
  while ((p = strstr(p, "msg=\"")) != NULL) {
    char method[16], path[1024], who[64];

    p += 5;
    if (sscanf(p, "%15s %1023s (%63[^)])", method, path, who) != 3 ||
        strcmp(who, "-") || path[0] != '/')
      continue;
    leases += strstr(path, "/leases") != NULL;
    pdbs += strstr(path, "/poddisruptionbudgets") != NULL;
    services += !strcmp(method, "POST") && strstr(path, "/services");
    checked += check_request(method, path);
  }
  /* the workload really exercised what the rules are for */
  assert_true(checked > 20);
  assert_true(leases > 0);
  assert_true(pdbs > 0);
  assert_true(services > 0);
}

/* Writes the PrometheusRule's spec (a Prometheus rule file: JSON is YAML)
 * to a file in the sim's directory and runs promtool check rules. */
static void test_promtool_rules(void **state)
{
  char path[400];
  const char *argv[] = {"promtool", "check", "rules", path, NULL};
  struct gq_test_out o;

  (void)state;
  if (!have("promtool"))
    skip();
  snprintf(path, sizeof(path), "%s/rules.json", sim.dir);
  assert_int_equal(json_dump_file(at(find("PrometheusRule", NULL), "spec",
                                     NULL), path, JSON_INDENT(2)), 0);
  gq_test_run(sim.dir, argv, &o);
  if (o.status != 0 || !strstr(o.out, "SUCCESS: 8 rules found"))
    fail_msg("promtool check rules: exit %d\n%s%s", o.status, o.out, o.err);
  gq_test_out_free(&o);
}

static void test_promtool_metrics(void **state)
{
  char path[400], cmd[] = "promtool check metrics < metrics.txt";
  const char *argv[] = {"sh", "-c", cmd, NULL};
  struct gq_test_out o;
  FILE *f;

  (void)state;
  if (!have("promtool"))
    skip();
  snprintf(path, sizeof(path), "%s/metrics.txt", sim.dir);
  f = fopen(path, "w");
  assert_non_null(f);
  fputs(metrics, f);
  fclose(f);
  {
    char full[600];

    snprintf(full, sizeof(full), "cd '%s' && %s", sim.dir, cmd);
    argv[2] = full;
    gq_test_run(sim.dir, argv, &o);
  }
  if (o.status != 0)
    fail_msg("promtool check metrics: exit %d\n%s%s", o.status, o.out, o.err);
  gq_test_out_free(&o);
  /* the workload shows in it */
  assert_non_null(strstr(metrics, "gpuq_leader 1"));
  assert_non_null(strstr(metrics, "gpuq_redis_up 1"));
  assert_non_null(strstr(metrics, "gpuq_admissions_total{team=\"team-a\"} 2"));
}

/* 1 if name is registered in the controller's sources (a labelled family
 * appears on /metrics only once it has a child: preemptions, say). */
static int registered(const char *name)
{
  static const char *const files[] = {"controller/ctl.c",
                                      "controller/disrupt.c",
                                      "controller/usage.c", NULL};
  char quoted[160];
  int found = 0;

  snprintf(quoted, sizeof(quoted), "\"%s\"", name);
  for (size_t i = 0; files[i] && !found; i++) {
    char *src = gq_test_read_file(files[i], NULL);

    found = src && strstr(src, quoted);
    free(src);
  }
  return found;
}

/* Every gpuq_* name in text must be a family (# TYPE) on /metrics, or one
 * the controller registers, with _bucket, _sum and _count standing for
 * their histogram. Returns the number of names found on /metrics. */
static int check_names(const char *text, const char *where)
{
  int n = 0;

  for (const char *p = strstr(text, "gpuq_"); p; p = strstr(p + 1, "gpuq_")) {
    char name[128], want[160];
    size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz_0123456789");

    if (p > text && (p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z')))
      continue; /* part of a longer word */
    snprintf(name, sizeof(name), "%.*s", (int)len, p);
    for (const char *suf = "_bucket\0_sum\0_count\0"; *suf;
         suf += strlen(suf) + 1) {
      size_t l = strlen(name), sl = strlen(suf);

      if (l > sl && !strcmp(name + l - sl, suf)) {
        name[l - sl] = '\0';
        break;
      }
    }
    snprintf(want, sizeof(want), "# TYPE %s ", name);
    if (strstr(metrics, want))
      n++;
    else if (!registered(name))
      fail_msg("%s uses %s, which the controller does not export", where,
               name);
  }
  return n;
}

static void test_metric_names(void **state)
{
  char *dash = gq_test_read_file("deploy/monitoring/gpuq-dashboard.json",
                                 NULL);
  char *rules = json_dumps(at(find("PrometheusRule", NULL), "spec", NULL), 0);
  json_t *d;

  (void)state;
  assert_non_null(dash);
  d = json_loads(dash, 0, NULL);
  assert_non_null(d); /* the dashboard is valid JSON */
  assert_true(json_array_size(json_object_get(d, "panels")) >= 10);
  assert_true(check_names(rules, "PrometheusRule") >= 7);
  assert_true(check_names(dash, "the Grafana dashboard") >= 15);
  json_decref(d);
  free(rules);
  free(dash);
}

/* The panel of dashboard d whose title is 'title' (borrowed), or NULL. */
static const json_t *panel(const json_t *d, const char *title)
{
  const json_t *p;
  size_t i;

  json_array_foreach(json_object_get(d, "panels"), i, p) {
    const char *t = json_string_value(json_object_get(p, "title"));

    if (t && !strcmp(t, title))
      return p;
  }
  return NULL;
}

/* 1 if a target of panel p has an expr containing 'needle'. */
static int panel_uses(const json_t *p, const char *needle)
{
  const json_t *t;
  size_t i;

  json_array_foreach(json_object_get(p, "targets"), i, t) {
    const char *e = json_string_value(json_object_get(t, "expr"));

    if (e && strstr(e, needle))
      return 1;
  }
  return 0;
}

/* Issue 22: allocated and active use side by side per team in one panel,
 * idle allocated GPUs in another. */
static void test_usage_panels(void **state)
{
  char *dash = gq_test_read_file("deploy/monitoring/gpuq-dashboard.json",
                                 NULL);
  json_t *d = dash ? json_loads(dash, 0, NULL) : NULL;
  const json_t *p;

  (void)state;
  assert_non_null(d);
  p = panel(d, "Allocated vs used GPUs per team");
  assert_non_null(p);
  assert_true(panel_uses(p, "sum by (team) (rate("
                            "gpuq_allocated_gpu_seconds_total"));
  assert_true(panel_uses(p, "sum by (team) (rate("
                            "gpuq_used_gpu_seconds_total"));
  p = panel(d, "Idle allocated GPUs per team");
  assert_non_null(p);
  assert_true(panel_uses(p, "max by (team) (gpuq_idle_allocated_gpus"));
  json_decref(d);
  free(dash);
}

/* The alert rule named 'name' of the rendered PrometheusRule, or NULL. */
static const json_t *alert(const char *name)
{
  const json_t *r;
  size_t i;

  json_array_foreach(at(find("PrometheusRule", NULL), "spec", "groups", "[0]",
                        "rules", NULL), i, r) {
    const char *a = json_string_value(json_object_get(r, "alert"));

    if (a && !strcmp(a, name))
      return r;
  }
  return NULL;
}

/* s with every "{{ $labels.team }}" and "{{ $value }}" filled in (new). */
static json_t *render(const json_t *s, const char *team, const char *value)
{
  const char *p = json_string_value(s);
  char out[2048];
  size_t o = 0;

  while (p && *p && o + 64 < sizeof(out)) {
    if (!strncmp(p, "{{ $labels.team }}", 18)) {
      o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", team);
      p += 18;
    } else if (!strncmp(p, "{{ $value }}", 12)) {
      o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", value);
      p += 12;
    } else {
      out[o++] = *p++;
    }
  }
  out[o] = '\0';
  return json_string(out);
}

/* promtool test rules on the idle alert: one replica reports 8 idle GPUs
 * for team vision (the standby 0, team nlp 0); nothing at 20 minutes,
 * firing for vision alone at 45, severity warning, the annotations naming
 * the team. */
static void test_idle_alert(void **state)
{
  const json_t *r = alert("GpuqIdleGpusAllocated");
  const json_t *ann = at(r, "annotations", NULL);
  char rules[400], tests[400];
  const char *argv[] = {"promtool", "test", "rules", tests, NULL};
  struct gq_test_out o;
  json_t *t, *want = json_object(), *v;
  const char *k;

  (void)state;
  assert_non_null(r);
  assert_string_equal(json_string_value(at(r, "labels", "severity", NULL)),
                      "warning");
  assert_non_null(strstr(json_string_value(at(ann, "summary", NULL)),
                         "{{ $labels.team }}"));
  assert_non_null(strstr(json_string_value(at(ann, "description", NULL)),
                         "{{ $labels.team }}"));
  if (!have("promtool"))
    skip();
  json_object_foreach((json_t *)ann, k, v)
    json_object_set_new(want, k, render(v, "vision", "8"));
  snprintf(rules, sizeof(rules), "%s/idle-rules.json", sim.dir);
  snprintf(tests, sizeof(tests), "%s/idle-test.json", sim.dir);
  assert_int_equal(json_dump_file(at(find("PrometheusRule", NULL), "spec",
                                     NULL), rules, JSON_INDENT(2)), 0);
  t = json_pack(
      "{s:[s],s:s,s:[{s:s,s:[{s:s,s:s},{s:s,s:s},{s:s,s:s}],s:["
      "{s:s,s:s,s:[]},{s:s,s:s,s:[{s:{s:s,s:s},s:o}]}]}]}",
      "rule_files", "idle-rules.json", "evaluation_interval", "1m",
      "tests", "interval", "1m", "input_series",
      "series", "gpuq_idle_allocated_gpus{team=\"vision\",pod=\"c-0\"}",
      "values", "8x60",
      "series", "gpuq_idle_allocated_gpus{team=\"vision\",pod=\"c-1\"}",
      "values", "0x60",
      "series", "gpuq_idle_allocated_gpus{team=\"nlp\",pod=\"c-0\"}",
      "values", "0x60",
      "alert_rule_test",
      "eval_time", "20m", "alertname", "GpuqIdleGpusAllocated", "exp_alerts",
      "eval_time", "45m", "alertname", "GpuqIdleGpusAllocated", "exp_alerts",
      "exp_labels", "severity", "warning", "team", "vision",
      "exp_annotations", want);
  assert_non_null(t);
  assert_int_equal(json_dump_file(t, tests, JSON_INDENT(2)), 0);
  json_decref(t);
  gq_test_run(sim.dir, argv, &o);
  if (o.status != 0 || !strstr(o.out, "SUCCESS"))
    fail_msg("promtool test rules: exit %d\n%s%s", o.status, o.out, o.err);
  gq_test_out_free(&o);
}

/* GitHub's anchor of a Markdown heading: lower case, spaces to '-',
 * punctuation other than '-' and '_' dropped. */
static void anchor(const char *heading, char *buf, size_t len)
{
  size_t o = 0;

  for (; *heading && *heading != '\n' && o + 1 < len; heading++) {
    char ch = *heading;

    if (ch >= 'A' && ch <= 'Z')
      buf[o++] = (char)(ch - 'A' + 'a');
    else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
             ch == '-' || ch == '_')
      buf[o++] = ch;
    else if (ch == ' ')
      buf[o++] = '-';
  }
  buf[o] = '\0';
}

/* Every alert names a section of docs/runbook.md that exists. */
static void test_runbook_links(void **state)
{
  char *book = gq_test_read_file("docs/runbook.md", NULL);
  const json_t *rule;
  size_t i;

  (void)state;
  assert_non_null(book);
  json_array_foreach(at(find("PrometheusRule", NULL), "spec", "groups", "[0]",
                        "rules", NULL), i, rule) {
    const char *link = json_string_value(at(rule, "annotations", "runbook",
                                            NULL));
    const char *want = link ? strchr(link, '#') : NULL;
    int found = 0;

    if (!want || strncmp(link, "docs/runbook.md#", 16))
      fail_msg("alert %zu: no docs/runbook.md# link", i);
    for (const char *h = strstr(book, "\n#"); h && !found;
         h = strstr(h + 1, "\n#")) {
      char a[256];

      h++;
      while (*h == '#')
        h++;
      anchor(h + (*h == ' '), a, sizeof(a));
      found = !strcmp(a, want + 1);
    }
    if (!found)
      fail_msg("alert %zu links to %s: no such heading", i, link);
  }
  free(book);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kinds),
      cmocka_unit_test(test_controller),
      cmocka_unit_test(test_webhooks),
      cmocka_unit_test(test_controller_args),
      cmocka_unit_test(test_redis),
      cmocka_unit_test(test_rbac_no_wildcard),
      cmocka_unit_test(test_rbac_covers_controller),
      cmocka_unit_test(test_promtool_rules),
      cmocka_unit_test(test_promtool_metrics),
      cmocka_unit_test(test_metric_names),
      cmocka_unit_test(test_usage_panels),
      cmocka_unit_test(test_idle_alert),
      cmocka_unit_test(test_runbook_links),
  };

  return cmocka_run_group_tests(tests, setup, teardown);
}
