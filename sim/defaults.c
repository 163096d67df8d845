/* sim/defaults.c - the defaults kube-apiserver gives a Pod at create
 * (k8s.io/kubernetes pkg/apis/core/v1/defaults.go SetDefaults_Pod,
 * SetDefaults_PodSpec, SetDefaults_Container, and the ServiceAccount
 * admission plugin), written from the Kubernetes API reference: typed
 * clients (the official Python client's models) expect them set. Only
 * fields that are absent are set. */
#include "sim/sim.h"

#include <stdio.h>
#include <string.h>

void gq_sim_default(json_t *obj, const char *key, json_t *v)
{
  if (json_object_get(obj, key))
    json_decref(v);
  else
    json_object_set_new(obj, key, v);
}

/* imagePullPolicy's default: Always for an image with no tag or the tag
 * "latest" (and no digest), else IfNotPresent. */
static const char *pull_policy(const char *image)
{
  const char *slash = image ? strrchr(image, '/') : NULL;
  const char *last = slash ? slash + 1 : image;
  const char *colon;

  if (!image || strchr(image, '@'))
    return "IfNotPresent";
  colon = strrchr(last, ':');
  return !colon || !strcmp(colon + 1, "latest") ? "Always" : "IfNotPresent";
}

static void container_defaults(json_t *c)
{
  json_t *ports = json_object_get(c, "ports"), *p;
  size_t i;

  if (!json_is_object(c))
    return;
  gq_sim_default(
      c, "imagePullPolicy",
      json_string(pull_policy(json_string_value(json_object_get(c, "image")))));
  gq_sim_default(c, "terminationMessagePath",
                 json_string("/dev/termination-log"));
  gq_sim_default(c, "terminationMessagePolicy", json_string("File"));
  gq_sim_default(c, "resources", json_object());
  json_array_foreach(ports, i, p) if (json_is_object(p))
      gq_sim_default(p, "protocol", json_string("TCP"));
}

void gq_sim_podspec_defaults(json_t *spec)
{
  json_t *c;
  size_t i;

  if (!json_is_object(spec))
    return;
  gq_sim_default(spec, "restartPolicy", json_string("Always"));
  gq_sim_default(spec, "terminationGracePeriodSeconds", json_integer(30));
  gq_sim_default(spec, "dnsPolicy", json_string("ClusterFirst"));
  gq_sim_default(spec, "securityContext", json_object());
  gq_sim_default(spec, "schedulerName", json_string("default-scheduler"));
  gq_sim_default(spec, "enableServiceLinks", json_true());
  for (int k = 0; k < 2; k++)
    json_array_foreach(
        json_object_get(spec, k ? "initContainers" : "containers"), i, c)
        container_defaults(c);
}

void gq_sim_pod_defaults(json_t *pod)
{
  json_t *spec = json_object_get(pod, "spec");

  if (!json_is_object(spec))
    return;
  gq_sim_podspec_defaults(spec);
  gq_sim_default(spec, "serviceAccountName", json_string("default"));
  if (!json_object_get(spec, "serviceAccount")) /* the deprecated alias */
    json_object_set(spec, "serviceAccount",
                    json_object_get(spec, "serviceAccountName"));
}

/* --- other built-in kinds (gq_sim_kind.defaults, set in kinds.c) --- */

/* Namespace (SetDefaults_Namespace, SetDefaults_NamespaceStatus; the
 * namespace strategy's PrepareForCreate adds the "kubernetes"
 * finalizer): the kubernetes.io/metadata.name label, spec.finalizers
 * [kubernetes], status.phase Active. */
void gq_sim_namespace_defaults(struct gq_sim *s, json_t *ns)
{
  json_t *meta = json_object_get(ns, "metadata"), *labels, *spec, *st;
  const char *name = json_string_value(json_object_get(meta, "name"));

  (void)s;
  if (!json_is_object(meta) || !name)
    return;
  gq_sim_default(meta, "labels", json_object());
  labels = json_object_get(meta, "labels");
  if (json_is_object(labels))
    json_object_set_new(labels, "kubernetes.io/metadata.name",
                        json_string(name));
  gq_sim_default(ns, "spec", json_object());
  spec = json_object_get(ns, "spec");
  if (json_is_object(spec))
    gq_sim_default(spec, "finalizers", json_pack("[s]", "kubernetes"));
  gq_sim_default(ns, "status", json_object());
  st = json_object_get(ns, "status");
  if (json_is_object(st))
    gq_sim_default(st, "phase", json_string("Active"));
}

/* Service (SetDefaults_Service and the service registry's allocation at
 * create): type ClusterIP, sessionAffinity None (ClientIP gets
 * sessionAffinityConfig.clientIP.timeoutSeconds 10800); ports' protocol
 * TCP and targetPort = port; a clusterIP from 10.96.0.0/12 (handed out in
 * order from 10.96.0.2; "None" stays headless) with clusterIPs,
 * ipFamilies [IPv4] and ipFamilyPolicy SingleStack; internalTrafficPolicy
 * Cluster; NodePort and LoadBalancer: nodePorts from 30000-32767 in order,
 * externalTrafficPolicy Cluster, and for LoadBalancer
 * allocateLoadBalancerNodePorts true; status.loadBalancer {}. An
 * ExternalName service gets no IP. */
void gq_sim_service_defaults(struct gq_sim *s, json_t *svc)
{
  json_t *spec = json_object_get(svc, "spec"), *p;
  const char *type, *ip;
  int node_ports, ext_name;
  size_t i;

  if (!json_is_object(spec))
    return;
  gq_sim_default(spec, "type", json_string("ClusterIP"));
  type = json_string_value(json_object_get(spec, "type"));
  type = type ? type : "";
  ext_name = !strcmp(type, "ExternalName");
  node_ports = !strcmp(type, "NodePort") || !strcmp(type, "LoadBalancer");
  gq_sim_default(spec, "sessionAffinity", json_string("None"));
  if (!strcmp(json_string_value(json_object_get(spec, "sessionAffinity"))
                  ?: "", "ClientIP"))
    gq_sim_default(spec, "sessionAffinityConfig",
                   json_pack("{s:{s:i}}", "clientIP", "timeoutSeconds",
                             10800));
  json_array_foreach(json_object_get(spec, "ports"), i, p) {
    const json_t *tp;

    if (!json_is_object(p))
      continue;
    gq_sim_default(p, "protocol", json_string("TCP"));
    tp = json_object_get(p, "targetPort");
    if (!tp || (json_is_integer(tp) && json_integer_value(tp) == 0) ||
        (json_is_string(tp) && !*json_string_value(tp)))
      json_object_set(p, "targetPort", json_object_get(p, "port"));
    if (node_ports && !json_object_get(p, "nodePort"))
      json_object_set_new(p, "nodePort",
                          json_integer(30000 + s->node_ports++ % 2768));
  }
  if (ext_name)
    return;
  if (!json_is_string(json_object_get(spec, "clusterIP")) ||
      !*json_string_value(json_object_get(spec, "clusterIP"))) {
    uint32_t n = (10u << 24 | 96u << 16) + 2 + s->cluster_ips++ % 1048572;
    char buf[16];

    snprintf(buf, sizeof(buf), "%u.%u.%u.%u", n >> 24, (n >> 16) & 255,
             (n >> 8) & 255, n & 255);
    json_object_set_new(spec, "clusterIP", json_string(buf));
  }
  ip = json_string_value(json_object_get(spec, "clusterIP"));
  gq_sim_default(spec, "clusterIPs", json_pack("[s]", ip));
  gq_sim_default(spec, "ipFamilies", json_pack("[s]", "IPv4"));
  gq_sim_default(spec, "ipFamilyPolicy", json_string("SingleStack"));
  gq_sim_default(spec, "internalTrafficPolicy", json_string("Cluster"));
  if (node_ports)
    gq_sim_default(spec, "externalTrafficPolicy", json_string("Cluster"));
  if (!strcmp(type, "LoadBalancer"))
    gq_sim_default(spec, "allocateLoadBalancerNodePorts", json_true());
  gq_sim_default(svc, "status", json_object());
  if (json_is_object(json_object_get(svc, "status")))
    gq_sim_default(json_object_get(svc, "status"), "loadBalancer",
                   json_object());
}

void gq_sim_service_keep(const json_t *cur, json_t *next)
{
  static const char *const keys[] = {"clusterIP", "clusterIPs", "ipFamilies",
                                     "ipFamilyPolicy", NULL};
  const json_t *cspec = json_object_get(cur, "spec"), *cp;
  json_t *nspec = json_object_get(next, "spec"), *np;
  size_t i, j;

  if (!json_is_object(nspec))
    return;
  for (i = 0; keys[i]; i++)
    if (!json_object_get(nspec, keys[i]) && json_object_get(cspec, keys[i]))
      json_object_set(nspec, keys[i], json_object_get(cspec, keys[i]));
  json_array_foreach(json_object_get(nspec, "ports"), i, np) {
    if (!json_is_object(np) || json_object_get(np, "nodePort"))
      continue;
    json_array_foreach(json_object_get(cspec, "ports"), j, cp)
      if (json_equal(json_object_get(cp, "port"),
                     json_object_get(np, "port")) &&
          json_object_get(cp, "nodePort")) {
        json_object_set(np, "nodePort", json_object_get(cp, "nodePort"));
        break;
      }
  }
}

/* PriorityClass (scheduling/v1 SetDefaults_PriorityClass):
 * preemptionPolicy PreemptLowerPriority. */
void gq_sim_priorityclass_defaults(struct gq_sim *s, json_t *pc)
{
  (void)s;
  gq_sim_default(pc, "preemptionPolicy", json_string("PreemptLowerPriority"));
}

/* Mutating and ValidatingWebhookConfiguration (admissionregistration/v1
 * SetDefaults_ValidatingWebhook, _MutatingWebhook, _Rule,
 * _ServiceReference): per webhook failurePolicy Fail, matchPolicy
 * Equivalent, namespaceSelector and objectSelector {}, timeoutSeconds 10,
 * reinvocationPolicy Never (mutating only);
 * rules' scope "*"; clientConfig.service.port 443. */
static void webhook_defaults(json_t *cfg, int mutating)
{
  json_t *w, *r, *svc;
  size_t i, j;

  json_array_foreach(json_object_get(cfg, "webhooks"), i, w) {
    if (!json_is_object(w))
      continue;
    gq_sim_default(w, "failurePolicy", json_string("Fail"));
    gq_sim_default(w, "matchPolicy", json_string("Equivalent"));
    gq_sim_default(w, "namespaceSelector", json_object());
    gq_sim_default(w, "objectSelector", json_object());
    gq_sim_default(w, "timeoutSeconds", json_integer(10));
    if (mutating)
      gq_sim_default(w, "reinvocationPolicy", json_string("Never"));
    json_array_foreach(json_object_get(w, "rules"), j, r)
      if (json_is_object(r))
        gq_sim_default(r, "scope", json_string("*"));
    svc = json_object_get(json_object_get(w, "clientConfig"), "service");
    if (json_is_object(svc))
      gq_sim_default(svc, "port", json_integer(443));
  }
}

void gq_sim_mutating_defaults(struct gq_sim *s, json_t *cfg)
{
  (void)s;
  webhook_defaults(cfg, 1);
}

void gq_sim_validating_defaults(struct gq_sim *s, json_t *cfg)
{
  (void)s;
  webhook_defaults(cfg, 0);
}

/* Node (SetDefaults_NodeStatus): status.allocatable is the capacity when
 * unset. */
void gq_sim_node_defaults(struct gq_sim *s, json_t *node)
{
  json_t *st = json_object_get(node, "status");
  json_t *cap = json_object_get(st, "capacity");

  (void)s;
  if (json_is_object(cap))
    gq_sim_default(st, "allocatable", json_deep_copy(cap));
}

/* CustomResourceDefinition (apiextensions/v1
 * SetDefaults_CustomResourceDefinitionSpec, _ServiceReference):
 * names.singular the lower-case kind, names.listKind kind + "List",
 * conversion {strategy: None}; a webhook conversion's service port 443. */
void gq_sim_crd_defaults(struct gq_sim *s, json_t *crd)
{
  json_t *spec = json_object_get(crd, "spec");
  json_t *names = json_object_get(spec, "names"), *svc;
  const char *kind = json_string_value(json_object_get(names, "kind"));

  (void)s;
  if (!json_is_object(spec))
    return;
  if (json_is_object(names) && kind && *kind) {
    char lower[256];
    size_t i;

    for (i = 0; kind[i] && i + 1 < sizeof(lower); i++)
      lower[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] - 'A' + 'a'
                                                          : kind[i]);
    lower[i] = '\0';
    gq_sim_default(names, "singular", json_string(lower));
    gq_sim_default(names, "listKind", json_sprintf("%sList", kind));
  }
  gq_sim_default(spec, "conversion", json_pack("{s:s}", "strategy", "None"));
  svc = json_object_get(json_object_get(json_object_get(json_object_get(
                            spec, "conversion"), "webhook"), "clientConfig"),
                        "service");
  if (json_is_object(svc))
    gq_sim_default(svc, "port", json_integer(443));
}
