/* sim/cluster.c - cluster files (see cluster.h). */
#include "sim/cluster.h"

#include "api/gpujob.h"
#include "api/json.h"
#include "api/node.h"
#include "api/quantity.h"
#include "api/yaml.h"
#include "base/alloc.h"
#include "base/err.h"

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#define MAX_GROUP_NODES 100000

static json_t *quantity_or(const json_t *v, const char *dflt)
{
  if (json_is_string(v))
    return json_incref((json_t *)v);
  if (json_is_integer(v)) {
    char buf[32];

    snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
    return json_string(buf);
  }
  return json_string(dflt);
}

/* The rest of status.nodeInfo a kubelet reports (NodeSystemInfo: every
 * field is required in the API's schema): boot, machine and system ids
 * (derived from the node's name with uthash's Jenkins hash, so a node keeps
 * them), the kube-proxy version and the operating system. */
static void node_ids(json_t *info, const char *name)
{
  static const char *const keys[] = {"bootID", "systemUUID", "machineID"};
  unsigned h[4];
  char salted[300], id[40];

  for (int k = 0; k < 3; k++) {
    for (int i = 0; i < 4; i++) {
      int n = snprintf(salted, sizeof(salted), "%d/%d/%s", k, i, name);

      HASH_VALUE(salted, (size_t)n, h[i]);
    }
    if (k == 2) /* /etc/machine-id: 32 hex digits */
      snprintf(id, sizeof(id), "%08x%08x%08x%08x", h[0], h[1], h[2], h[3]);
    else
      snprintf(id, sizeof(id), "%08x-%04x-%04x-%04x-%04x%08x", h[0],
               h[1] >> 16, h[1] & 0xffff, h[2] >> 16, h[2] & 0xffff, h[3]);
    json_object_set_new(info, keys[k], json_string(id));
  }
  json_object_set_new(info, "kubeProxyVersion",
                      json_string("v1.32.0-gpuq-sim"));
  json_object_set_new(info, "operatingSystem", json_string("linux"));
}

static json_t *resources(const json_t *g)
{
  const json_t *gpu = json_object_get(g, "gpu"), *extra;
  json_t *r = json_object();
  const char *key;
  json_t *v;
  char buf[32];

  json_object_set_new(r, "cpu", quantity_or(json_object_get(g, "cpu"), "32"));
  json_object_set_new(r, "memory",
                      quantity_or(json_object_get(g, "memory"), "256Gi"));
  json_object_set_new(r, "pods", quantity_or(json_object_get(g, "pods"), "110"));
  json_object_set_new(r, "ephemeral-storage", json_string("1Ti"));
  snprintf(buf, sizeof(buf), "%lld",
           (long long)json_integer_value(json_object_get(gpu, "count")));
  json_object_set_new(r, GQ_DEFAULT_GPU_RESOURCE, json_string(buf));
  extra = json_object_get(g, "resources");
  json_object_foreach((json_t *)extra, key, v)
    json_object_set_new(r, key, quantity_or(v, "0"));
  return r;
}

json_t *gq_sim_cluster_node(const json_t *g, size_t i)
{
  const json_t *gpu = json_object_get(g, "gpu");
  const char *prefix = json_string_value(json_object_get(g, "prefix"));
  json_t *labels = json_deep_copy(json_object_get(g, "labels"));
  json_t *res = resources(g), *node;
  json_t *taints = json_deep_copy(json_object_get(g, "taints"));
  char name[256], buf[64], ip[32];

  snprintf(name, sizeof(name), "%s%02zu", prefix, i);
  snprintf(ip, sizeof(ip), "10.%zu.%zu.%zu", 1 + (i >> 16) % 200,
           (i >> 8) & 255, i & 255);
  if (!labels)
    labels = json_object();
  json_object_set_new(labels, GQ_LABEL_HOSTNAME, json_string(name));
  json_object_set_new(labels, "kubernetes.io/os", json_string("linux"));
  json_object_set(labels, GQ_LABEL_GPU_PRODUCT, json_object_get(gpu, "product"));
  snprintf(buf, sizeof(buf), "%lld",
           (long long)json_integer_value(json_object_get(gpu, "memoryMiB")));
  json_object_set_new(labels, GQ_LABEL_GPU_MEMORY, json_string(buf));
  snprintf(buf, sizeof(buf), "%lld",
           (long long)json_integer_value(json_object_get(gpu, "count")));
  json_object_set_new(labels, GQ_LABEL_GPU_COUNT, json_string(buf));
  node = json_pack(
      "{s:s, s:s, s:{s:s, s:o}, s:{s:o}, s:{s:O, s:o, s:[{s:s, s:s, s:s, "
      "s:s}], s:{s:s, s:s, s:s, s:s, s:s}, s:[{s:s, s:s}, {s:s, s:s}]}}",
      "apiVersion", "v1", "kind", "Node", "metadata", "name", name, "labels",
      labels, "spec", "taints", taints ? taints : json_array(), "status", "capacity", res, "allocatable", json_deep_copy(res),
      "conditions", "type", "Ready", "status", "True", "reason",
      "KubeletReady", "message", "kubelet is posting ready status",
      "nodeInfo", "kubeletVersion", "v1.32.0-gpuq-sim", "osImage",
      "gpuq-sim", "kernelVersion", "6.1.0", "containerRuntimeVersion",
      "containerd://1.7.0", "architecture", "amd64", "addresses", "type",
      "InternalIP", "address", ip, "type", "Hostname", "address", name);
  json_decref(res);
  node_ids(json_object_get(json_object_get(node, "status"), "nodeInfo"), name);
  return node;
}

/* Checks one group, naming the field on error. */
static int check_group(struct gq_dec *d, const json_t *g, size_t gi)
{
  static const char *const qty[] = {"cpu", "memory", "pods", NULL};
  char p[GQ_DEC_PATH_MAX], base[64];
  const json_t *gpu, *v;
  struct gq_kv *labels;
  size_t n;
  int64_t x;

  snprintf(base, sizeof(base), "groups[%zu]", gi);
  if (!json_is_object(g))
    return gq_dec_fail_got(d, base, g, "must be an object");
  gq_dec_int(d, g, gq_dec_path(p, "%s.count", base), 1, MAX_GROUP_NODES, 1, &x);
  gq_dec_string(d, g, gq_dec_path(p, "%s.prefix", base), 1, 200, NULL);
  gpu = gq_dec_object(d, g, gq_dec_path(p, "%s.gpu", base), 1);
  gq_dec_string(d, gpu, gq_dec_path(p, "%s.gpu.product", base), 1, 63, NULL);
  gq_dec_int(d, gpu, gq_dec_path(p, "%s.gpu.memoryMiB", base), 0,
             16777216, 0, &x);
  gq_dec_int(d, gpu, gq_dec_path(p, "%s.gpu.count", base), 0, 1024, 0, &x);
  for (int i = 0; qty[i] && !d->rc; i++) {
    v = json_object_get(g, qty[i]);
    if (v && gq_quantity_from_json(v, 0, &x) != 0)
      gq_dec_fail_got(d, gq_dec_path(p, "%s.%s", base, qty[i]), v,
                      "must be a quantity such as 48, 500m or 256Gi");
  }
  gq_dec_string_map(d, g, gq_dec_path(p, "%s.labels", base), 1, &labels, &n);
  free(labels);
  gq_dec_array(d, g, gq_dec_path(p, "%s.taints", base), 0, 64);
  gq_dec_object(d, g, gq_dec_path(p, "%s.resources", base), 0);
  return d->rc;
}

/* Reads a Node JSON file named relative to the cluster file's folder. */
static json_t *node_file(struct gq_dec *d, const char *cluster_path,
                         const json_t *v, size_t i)
{
  char dir[1024], path[2048], p[64];
  json_error_t jerr;
  json_t *node;

  snprintf(p, sizeof(p), "nodes[%zu]", i);
  if (!json_is_string(v)) {
    gq_dec_fail_got(d, p, v, "must be the path of a Node JSON file");
    return NULL;
  }
  snprintf(dir, sizeof(dir), "%s", cluster_path);
  snprintf(path, sizeof(path), "%s/%s", dirname(dir), json_string_value(v));
  if (json_string_value(v)[0] == '/')
    snprintf(path, sizeof(path), "%s", json_string_value(v));
  node = json_load_file(path, 0, &jerr);
  if (!node)
    gq_dec_fail(d, p, "cannot read Node '%s': %s", path, jerr.text);
  return node;
}

int gq_sim_cluster_from_json(const json_t *doc, const char *rel_to,
                             json_t **nodes, char *err, size_t errlen)
{
  json_t *out = json_array();
  const json_t *groups, *files, *g, *v;
  struct gq_dec d;
  size_t i, j;

  *nodes = NULL;
  gq_dec_init(&d);
  groups = gq_dec_array(&d, doc, "groups", 0, 1000);
  files = gq_dec_array(&d, doc, "nodes", 0, 100000);
  json_array_foreach((json_t *)groups, i, g) {
    if (check_group(&d, g, i) != 0)
      break;
    for (j = 0; j < (size_t)json_integer_value(json_object_get(g, "count"));
         j++)
      json_array_append_new(out, gq_sim_cluster_node(g, j));
  }
  json_array_foreach((json_t *)(d.rc ? NULL : files), i, v) {
    json_t *node = node_file(&d, rel_to, v, i);

    if (!node)
      break;
    json_array_append_new(out, node);
  }
  if (d.rc) {
    snprintf(err, errlen, "%s: %s", rel_to, d.msg);
    json_decref(out);
    return d.rc;
  }
  *nodes = out;
  return 0;
}

int gq_sim_cluster_load(const char *path, json_t **nodes, char *err,
                        size_t errlen)
{
  json_t *docs;
  int rc;

  *nodes = NULL;
  if ((rc = gq_yaml_load_file(path, &docs, err, errlen)) != 0)
    return rc;
  rc = gq_sim_cluster_from_json(json_array_get(docs, 0), path, nodes, err,
                                errlen);
  json_decref(docs);
  return rc;
}
