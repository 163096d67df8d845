/* sim/defaults.c - the defaults kube-apiserver gives a Pod at create
 * (k8s.io/kubernetes pkg/apis/core/v1/defaults.go SetDefaults_Pod,
 * SetDefaults_PodSpec, SetDefaults_Container, and the ServiceAccount
 * admission plugin), written from the Kubernetes API reference: typed
 * clients (the official Python client's models) expect them set. Only
 * fields that are absent are set. */
#include "sim/sim.h"

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

void gq_sim_pod_defaults(json_t *pod)
{
  json_t *spec = json_object_get(pod, "spec"), *c;
  size_t i;

  if (!json_is_object(spec))
    return;
  gq_sim_default(spec, "restartPolicy", json_string("Always"));
  gq_sim_default(spec, "terminationGracePeriodSeconds", json_integer(30));
  gq_sim_default(spec, "dnsPolicy", json_string("ClusterFirst"));
  gq_sim_default(spec, "securityContext", json_object());
  gq_sim_default(spec, "schedulerName", json_string("default-scheduler"));
  gq_sim_default(spec, "enableServiceLinks", json_true());
  gq_sim_default(spec, "serviceAccountName", json_string("default"));
  if (!json_object_get(spec, "serviceAccount")) /* the deprecated alias */
    json_object_set(spec, "serviceAccount",
                    json_object_get(spec, "serviceAccountName"));
  for (int k = 0; k < 2; k++)
    json_array_foreach(
        json_object_get(spec, k ? "initContainers" : "containers"), i, c)
        container_defaults(c);
}
