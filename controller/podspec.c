/* controller/podspec.c - pods and Services for GpuJobs (see podspec.h). */
#include "controller/podspec.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "api/node.h"
#include "decide/names.h"

#define HOSTNAME_LABEL "kubernetes.io/hostname"

/* Copies at most max characters of name into out as a DNS-1123 label
 * part: '.' (allowed in a GpuJob name, a DNS subdomain) becomes '-', and
 * trailing '-' are dropped. Returns the length written. */
static size_t label_part(const char *name, size_t max, char *out)
{
  size_t n = 0;

  for (; name[n] && n < max; n++)
    out[n] = name[n] == '.' ? '-' : name[n];
  while (n > 0 && out[n - 1] == '-')
    n--;
  out[n] = '\0';
  return n;
}

void gq_podspec_pod_name(const struct gq_gpujob *j, int64_t attempt, int32_t replica,
                 char *buf, size_t len)
{
  char part[33];

  label_part(j->meta.name, 32, part);
  snprintf(buf, len, "%s-%.8s-%" PRId64 "-%d", part, j->meta.uid, attempt,
           (int)replica);
}

void gq_podspec_service_name(const struct gq_gpujob *j, char *buf, size_t len)
{
  const char *name = j->meta.name;
  char part[64];

  if (isalpha((unsigned char)name[0]) &&
      gq_dns_label_ok(name, strlen(name)))
    snprintf(buf, len, "%s", name);
  else {
    label_part(name, 50, part);
    snprintf(buf, len, "gj-%s-%.8s", part, j->meta.uid);
  }
}

/* Returns obj[key], creating an empty object there if absent or not one. */
static json_t *obj_at(json_t *obj, const char *key)
{
  json_t *v = json_object_get(obj, key);

  if (!json_is_object(v)) {
    v = json_object();
    json_object_set_new(obj, key, v);
  }
  return v;
}

static json_t *arr_at(json_t *obj, const char *key)
{
  json_t *v = json_object_get(obj, key);

  if (!json_is_array(v)) {
    v = json_array();
    json_object_set_new(obj, key, v);
  }
  return v;
}

static json_t *owner_refs(const struct gq_gpujob *j)
{
  return json_pack("[{s:s, s:s, s:s, s:s, s:b, s:b}]", "apiVersion",
                   GQ_API_VERSION, "kind", "GpuJob", "name", j->meta.name,
                   "uid", j->meta.uid, "controller", 1, "blockOwnerDeletion",
                   1);
}

/* Sets env var name=value on container c: in place of the first entry of
 * that name (so template variables that refer to it with $(NAME) keep
 * their order), removing any later duplicates; appended if absent. */
static void env_set(json_t *c, const char *name, const char *value)
{
  json_t *env = arr_at(c, "env");
  json_t *v = json_pack("{s:s, s:s}", "name", name, "value", value);
  int done = 0;

  for (size_t i = 0; i < json_array_size(env);) {
    const char *n =
        json_string_value(json_object_get(json_array_get(env, i), "name"));

    if (!n || strcmp(n, name) != 0) {
      i++;
    } else if (!done) {
      json_array_set(env, i++, v);
      done = 1;
    } else {
      json_array_remove(env, i);
    }
  }
  if (!done)
    json_array_append(env, v);
  json_decref(v);
}

static void env_set_int(json_t *c, const char *name, int64_t v)
{
  char buf[32];

  snprintf(buf, sizeof(buf), "%" PRId64, v);
  env_set(c, name, buf);
}

/* Adds the pin to every non-empty term of the template's required node
 * affinity, or makes it the only term. An empty (or non-object) term
 * matches no node in Kubernetes and stays that way. The pin is
 * kubernetes.io/hostname In [the nodes' hostname labels] (DESIGN §3); if a
 * node has no such label, metadata.name In [the nodes' names] by
 * matchFields, as the DaemonSet controller does. */
void gq_podspec_pin_nodes(json_t *spec, const struct gq_node *const *nodes,
                          size_t n)
{
  json_t *req = obj_at(obj_at(obj_at(spec, "affinity"), "nodeAffinity"),
                       "requiredDuringSchedulingIgnoredDuringExecution");
  json_t *terms = arr_at(req, "nodeSelectorTerms");
  json_t *values = json_array(), *pin, *t;
  int by_host = 1;
  const char *list;
  size_t i;

  for (i = 0; i < n; i++)
    by_host &= gq_meta_label(&nodes[i]->meta, HOSTNAME_LABEL) != NULL;
  for (i = 0; i < n; i++)
    json_array_append_new(values, json_string(
        by_host ? gq_meta_label(&nodes[i]->meta, HOSTNAME_LABEL)
                : nodes[i]->meta.name));
  list = by_host ? "matchExpressions" : "matchFields";
  pin = json_pack("{s:s, s:s, s:o}", "key",
                  by_host ? HOSTNAME_LABEL : "metadata.name", "operator", "In",
                  "values", values);
  if (json_array_size(terms) == 0) {
    json_array_append_new(terms, json_pack("{s:[O]}", list, pin));
  } else {
    json_array_foreach(terms, i, t) {
      if (!json_is_object(t))
        json_array_set_new(terms, i, json_object());
      else if (json_array_size(json_object_get(t, "matchExpressions")) > 0 ||
               json_array_size(json_object_get(t, "matchFields")) > 0)
        json_array_append(arr_at(t, list), pin);
    }
  }
  json_decref(pin);
}

static void pin_node(json_t *spec, const struct gq_node *node)
{
  gq_podspec_pin_nodes(spec, &node, 1);
}

/* The environment gpuq gives every container and init container of
 * replica 'replica' (DESIGN §3: GPUQ_*, and torch.distributed's RANK,
 * WORLD_SIZE, MASTER_ADDR, MASTER_PORT for a gang); master: the first
 * replica's address (gangs only). */
static void container_env(const struct gq_gpujob *j, json_t *spec,
                          int64_t attempt, int32_t replica,
                          const char *resume_from, const char *master)
{
  json_t *c;
  size_t i;

  for (int k = 0; k < 2; k++) {
    json_t *list = json_object_get(spec, k ? "initContainers" : "containers");

    json_array_foreach(list, i, c) {
      if (!json_is_object(c))
        continue;
      if (j->has_checkpoint && k == 0) /* the location goes there */
        json_object_set_new(c, "terminationMessagePolicy",
                            json_string("File"));
      env_set(c, GQ_ENV_JOB, j->meta.name);
      env_set_int(c, GQ_ENV_ATTEMPT, attempt);
      if (resume_from)
        env_set(c, GQ_ENV_RESUME_FROM, resume_from);
      if (j->replicas > 1) {
        env_set_int(c, "RANK", replica);
        env_set_int(c, "WORLD_SIZE", j->replicas);
        env_set(c, "MASTER_ADDR", master);
        env_set_int(c, "MASTER_PORT", GQ_MASTER_PORT);
        env_set_int(c, GQ_ENV_REPLICA, replica);
        env_set_int(c, GQ_ENV_REPLICAS, j->replicas);
      }
    }
  }
}

json_t *gq_podspec_pod(const struct gq_gpujob *j, int64_t attempt,
                     int32_t replica, const struct gq_node *node,
                     const char *resume_from)
{
  json_t *tmpl = gq_gpujob_template_json(j), *tmeta, *pod, *meta, *labels,
         *spec, *containers, *c;
  char name[GQ_POD_NAME_MAX + 1], svc[64], buf[320];

  if (!tmpl)
    return NULL;
  tmeta = json_object_get(tmpl, "metadata");
  pod = json_object();
  gq_podspec_pod_name(j, attempt, replica, name, sizeof(name));
  json_object_set_new(pod, "apiVersion", json_string("v1"));
  json_object_set_new(pod, "kind", json_string("Pod"));
  meta = obj_at(pod, "metadata");
  json_object_set_new(meta, "name", json_string(name));
  json_object_set_new(meta, "namespace", json_string(j->meta.ns));
  labels = json_object_get(tmeta, "labels");
  labels = json_is_object(labels) ? json_incref(labels) : json_object();
  json_object_set_new(meta, "labels", labels);
  if (json_is_object(json_object_get(tmeta, "annotations")))
    json_object_set(meta, "annotations", json_object_get(tmeta, "annotations"));
  json_object_set_new(labels, GQ_LBL_JOB, json_string(j->meta.name));
  json_object_set_new(labels, GQ_LBL_JOB_UID, json_string(j->meta.uid));
  json_object_set_new(labels, GQ_LBL_TEAM, json_string(j->team));
  snprintf(buf, sizeof(buf), "%" PRId64, attempt);
  json_object_set_new(labels, GQ_LBL_ATTEMPT, json_string(buf));
  snprintf(buf, sizeof(buf), "%d", (int)replica);
  json_object_set_new(labels, GQ_LBL_REPLICA, json_string(buf));
  json_object_set_new(meta, "ownerReferences", owner_refs(j));

  spec = json_object_get(tmpl, "spec"); /* the decoder requires an object */
  json_object_set(pod, "spec", spec);
  json_decref(tmpl); /* the pod holds what it took of the parsed copy */
  if (!json_object_get(spec, "restartPolicy"))
    json_object_set_new(spec, "restartPolicy", json_string("Never"));
  if (j->priority_class)
    json_object_set_new(spec, "priorityClassName",
                        json_string(j->priority_class));
  if (j->has_checkpoint) /* SIGTERM leaves it the time to checkpoint */
    json_object_set_new(spec, "terminationGracePeriodSeconds",
                        json_integer(j->grace_s));
  pin_node(spec, node);

  containers = json_object_get(spec, "containers");
  c = json_array_get(containers, 0); /* the decoder requires one */
  {
    json_t *res = obj_at(c, "resources");

    snprintf(buf, sizeof(buf), "%d", (int)j->gpus_per_replica);
    json_object_set_new(obj_at(res, "requests"), j->gpu_resource,
                        json_string(buf));
    json_object_set_new(obj_at(res, "limits"), j->gpu_resource,
                        json_string(buf));
  }

  gq_podspec_service_name(j, svc, sizeof(svc));
  if (j->replicas > 1) {
    char master[GQ_POD_NAME_MAX + 1];

    json_object_set_new(spec, "hostname", json_string(name));
    json_object_set_new(spec, "subdomain", json_string(svc));
    gq_podspec_pod_name(j, attempt, 0, master, sizeof(master));
    snprintf(buf, sizeof(buf), "%s.%s.%s.svc", master, svc, j->meta.ns);
  }
  container_env(j, spec, attempt, replica, resume_from, buf);
  return pod;
}

json_t *gq_podspec_pdb(const struct gq_gpujob *j)
{
  char name[64];

  gq_podspec_service_name(j, name, sizeof(name));
  return json_pack(
      "{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}, s:o}, "
      "s:{s:i, s:{s:{s:s}}}}",
      "apiVersion", "policy/v1", "kind", "PodDisruptionBudget", "metadata",
      "name", name, "namespace", j->meta.ns, "labels", GQ_LBL_JOB,
      j->meta.name, GQ_LBL_JOB_UID, j->meta.uid, "ownerReferences",
      owner_refs(j), "spec", "maxUnavailable", 0, "selector", "matchLabels",
      GQ_LBL_JOB_UID, j->meta.uid);
}

json_t *gq_podspec_service(const struct gq_gpujob *j)
{
  char svc[64];

  gq_podspec_service_name(j, svc, sizeof(svc));
  return json_pack(
      "{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}, s:o}, "
      "s:{s:s, s:b, s:{s:s}, s:[{s:s, s:i, s:s}]}}",
      "apiVersion", "v1", "kind", "Service", "metadata", "name", svc,
      "namespace", j->meta.ns, "labels", GQ_LBL_JOB, j->meta.name,
      GQ_LBL_JOB_UID, j->meta.uid, "ownerReferences", owner_refs(j), "spec",
      "clusterIP", "None", "publishNotReadyAddresses", 1, "selector",
      GQ_LBL_JOB_UID, j->meta.uid, "ports", "name", "rendezvous", "port",
      GQ_MASTER_PORT, "protocol", "TCP");
}
