/* sim/table.c - server-side printing: meta.k8s.io/v1 Table responses for
 * every kind, CRD columns from additionalPrinterColumns
 * (kubectl-api-contract §4). */
#include "sim/sim.h"

#include "api/jsonpath.h"
#include "base/clock.h"
#include "base/duration.h"
#include "sim/table_builtin.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

json_t *gq_tb_age(const json_t *ts, int64_t now_ms)
{
  int64_t t;
  char buf[32];

  if (!json_is_string(ts) || gq_time_parse(json_string_value(ts), &t) != 0)
    return json_string("<unknown>");
  gq_human_duration(now_ms - t, buf, sizeof(buf));
  return json_string(buf);
}

static json_t *col(const char *name, const char *type, const char *format,
                   const char *desc, int priority)
{
  return json_pack("{s:s, s:s, s:s, s:s, s:i}", "name", name, "type", type,
                   "format", format, "description", desc, "priority",
                   priority);
}

static json_t *name_col(void)
{
  return col("Name", "string", "name",
             "Name must be unique within a namespace.", 0);
}

/* Columns of a custom resource: Name, then the CRD's printer columns. */
static json_t *crd_coldefs(const struct gq_sim_kind *k)
{
  json_t *defs = json_array();

  json_array_append_new(defs, name_col());
  for (size_t i = 0; i < k->n_cols; i++)
    json_array_append_new(defs, col(k->cols[i].name, k->cols[i].type,
                                    k->cols[i].format,
                                    k->cols[i].description,
                                    k->cols[i].priority));
  return defs;
}

static json_t *crd_cells(const struct gq_sim_kind *k, const json_t *obj,
                         int64_t now_ms)
{
  json_t *cells = json_array();

  json_array_append(cells, json_object_get(json_object_get(obj, "metadata"),
                                           "name"));
  for (size_t i = 0; i < k->n_cols; i++) {
    const json_t *v = gq_jsonpath_get(obj, k->cols[i].jsonpath);

    if (!v)
      json_array_append_new(cells, json_null());
    else if (strcmp(k->cols[i].type, "date") == 0)
      json_array_append_new(cells, gq_tb_age(v, now_ms)); /* future: <invalid> */
    else
      json_array_append(cells, (json_t *)v);
  }
  return cells;
}

/* The row's object: the full object, or its PartialObjectMetadata. */
static json_t *row_object(const json_t *obj, int include_object)
{
  if (include_object)
    return json_incref((json_t *)obj);
  return json_pack("{s:s, s:s, s:O}", "kind", "PartialObjectMetadata",
                   "apiVersion", "meta.k8s.io/v1", "metadata",
                   json_object_get(obj, "metadata"));
}

json_t *gq_sim_table(struct gq_sim_kind *k, const json_t *items,
                     int include_object, int with_coldefs)
{
  int64_t now = gq_clock_now_ms();
  json_t *rows = json_array(), *defs;
  const json_t *it;
  size_t i;

  json_array_foreach((json_t *)items, i, it) {
    json_t *cells = k->is_crd ? crd_cells(k, it, now)
                    : k->cells ? k->cells(it, now)
                               : gq_tb_generic_cells(it, now);

    json_array_append_new(rows, json_pack("{s:o, s:o}", "cells", cells,
                                          "object",
                                          row_object(it, include_object)));
  }
  if (!with_coldefs)
    defs = json_null();
  else
    defs = k->is_crd ? crd_coldefs(k)
           : k->coldefs ? k->coldefs()
                        : gq_tb_generic_cols();
  return json_pack("{s:s, s:s, s:{}, s:o, s:o}", "kind", "Table",
                   "apiVersion", "meta.k8s.io/v1", "metadata",
                   "columnDefinitions", defs, "rows", rows);
}

/* --- built-in kinds --- */

static const json_t *meta_get(const json_t *obj, const char *key)
{
  return json_object_get(json_object_get(obj, "metadata"), key);
}

static const json_t *path2(const json_t *obj, const char *a, const char *b)
{
  return json_object_get(json_object_get(obj, a), b);
}

static json_t *str_or(const json_t *v, const char *dflt)
{
  return json_string(json_is_string(v) && *json_string_value(v)
                         ? json_string_value(v)
                         : dflt);
}

static json_t *cells_v(json_t *first, ...)
{
  json_t *cells = json_array(), *c = first;
  va_list ap;

  va_start(ap, first);
  while (c) {
    json_array_append_new(cells, c);
    c = va_arg(ap, json_t *);
  }
  va_end(ap);
  return cells;
}

static json_t *name_cell(const json_t *obj)
{
  return json_incref((json_t *)meta_get(obj, "name"));
}

static json_t *age_cell(const json_t *obj, int64_t now)
{
  return gq_tb_age(meta_get(obj, "creationTimestamp"), now);
}

json_t *gq_tb_generic_cols(void)
{
  return json_pack("[o, o]", name_col(),
                   col("Age", "string", "", "CreationTimestamp", 0));
}

json_t *gq_tb_generic_cells(const json_t *obj, int64_t now_ms)
{
  return cells_v(name_cell(obj), age_cell(obj, now_ms), NULL);
}

json_t *gq_tb_namespace_cols(void)
{
  return json_pack("[o, o, o]", name_col(),
                   col("Status", "string", "", "The status of the namespace", 0),
                   col("Age", "string", "", "CreationTimestamp", 0));
}

json_t *gq_tb_namespace_cells(const json_t *obj, int64_t now_ms)
{
  return cells_v(name_cell(obj),
                 str_or(path2(obj, "status", "phase"), "Active"),
                 age_cell(obj, now_ms), NULL);
}

json_t *gq_tb_node_cols(void)
{
  return json_pack(
      "[o, o, o, o, o, o, o, o, o, o]", name_col(),
      col("Status", "string", "", "The status of the node", 0),
      col("Roles", "string", "", "The roles of the node", 0),
      col("Age", "string", "", "CreationTimestamp", 0),
      col("Version", "string", "", "Kubelet Version reported by the node.", 0),
      col("Internal-IP", "string", "", "List of internal IPs.", 1),
      col("External-IP", "string", "", "List of external IPs.", 1),
      col("OS-Image", "string", "", "OS image reported by the node.", 1),
      col("Kernel-Version", "string", "", "Kernel version.", 1),
      col("Container-Runtime", "string", "", "Container runtime.", 1));
}

/* "Ready", "NotReady" or "Unknown", plus ",SchedulingDisabled". */
static json_t *node_status(const json_t *obj)
{
  const json_t *conds = path2(obj, "status", "conditions"), *c;
  const char *st = "Unknown";
  char buf[64];
  size_t i;

  json_array_foreach((json_t *)conds, i, c) {
    const char *type = json_string_value(json_object_get(c, "type"));
    const char *v = json_string_value(json_object_get(c, "status"));

    if (type && v && strcmp(type, "Ready") == 0)
      st = strcmp(v, "True") == 0 ? "Ready"
           : strcmp(v, "False") == 0 ? "NotReady"
                                     : "Unknown";
  }
  snprintf(buf, sizeof(buf), "%s%s", st,
           json_is_true(path2(obj, "spec", "unschedulable"))
               ? ",SchedulingDisabled"
               : "");
  return json_string(buf);
}

static json_t *node_roles(const json_t *obj)
{
  const json_t *labels = meta_get(obj, "labels");
  const char *key;
  json_t *v;
  char buf[256] = "";
  size_t len = 0;

  json_object_foreach((json_t *)labels, key, v) {
    const char *pfx = "node-role.kubernetes.io/";

    if (strncmp(key, pfx, strlen(pfx)) == 0 && len < sizeof(buf) - 1)
      len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
                              len ? "," : "", key + strlen(pfx));
  }
  return json_string(len ? buf : "<none>");
}

static json_t *node_address(const json_t *obj, const char *type)
{
  const json_t *addrs = path2(obj, "status", "addresses"), *a;
  size_t i;

  json_array_foreach((json_t *)addrs, i, a) {
    const char *t = json_string_value(json_object_get(a, "type"));

    if (t && strcmp(t, type) == 0)
      return str_or(json_object_get(a, "address"), "<none>");
  }
  return json_string("<none>");
}

json_t *gq_tb_node_cells(const json_t *obj, int64_t now_ms)
{
  const json_t *info = path2(obj, "status", "nodeInfo");

  return cells_v(name_cell(obj), node_status(obj), node_roles(obj),
                 age_cell(obj, now_ms),
                 str_or(json_object_get(info, "kubeletVersion"), ""),
                 node_address(obj, "InternalIP"),
                 node_address(obj, "ExternalIP"),
                 str_or(json_object_get(info, "osImage"), "<unknown>"),
                 str_or(json_object_get(info, "kernelVersion"), "<unknown>"),
                 str_or(json_object_get(info, "containerRuntimeVersion"),
                        "<unknown>"),
                 NULL);
}

json_t *gq_tb_pod_cols(void)
{
  return json_pack(
      "[o, o, o, o, o, o, o, o, o]", name_col(),
      col("Ready", "string", "", "The aggregate readiness state of this pod "
          "for accepting traffic.", 0),
      col("Status", "string", "", "The aggregate status of the containers in "
          "this pod.", 0),
      col("Restarts", "string", "", "The number of times the containers in "
          "this pod have been restarted.", 0),
      col("Age", "string", "", "CreationTimestamp", 0),
      col("IP", "string", "", "The IP address assigned to the pod", 1),
      col("Node", "string", "", "The name of the node to which the pod is "
          "assigned", 1),
      col("Nominated Node", "string", "", "The node the pod is nominated to", 1),
      col("Readiness Gates", "string", "", "The readiness gates of the pod", 1));
}

/* The STATUS column: Terminating, the pod's reason, a container's waiting
 * or terminated reason, else the phase (printers.printPod, simplified). */
static json_t *pod_status(const json_t *obj)
{
  const json_t *st = json_object_get(obj, "status"), *cs, *c;
  const char *reason = json_string_value(json_object_get(st, "reason"));
  size_t i;

  if (meta_get(obj, "deletionTimestamp"))
    return json_string("Terminating");
  if (reason && *reason)
    return json_string(reason);
  cs = json_object_get(st, "containerStatuses");
  json_array_foreach((json_t *)cs, i, c) {
    const json_t *state = json_object_get(c, "state");
    const char *r = json_string_value(path2(state, "waiting", "reason"));

    if (!r)
      r = json_string_value(path2(state, "terminated", "reason"));
    if (r && *r)
      return json_string(r);
  }
  return str_or(json_object_get(st, "phase"), "Pending");
}

json_t *gq_tb_pod_cells(const json_t *obj, int64_t now_ms)
{
  const json_t *st = json_object_get(obj, "status"), *c;
  const json_t *cs = json_object_get(st, "containerStatuses");
  size_t i, ready = 0, total = json_array_size(path2(obj, "spec",
                                                     "containers"));
  long long restarts = 0;
  char rd[32], rs[32];

  json_array_foreach((json_t *)cs, i, c) {
    ready += json_is_true(json_object_get(c, "ready"));
    restarts += json_integer_value(json_object_get(c, "restartCount"));
  }
  snprintf(rd, sizeof(rd), "%zu/%zu", ready, total);
  snprintf(rs, sizeof(rs), "%lld", restarts);
  return cells_v(name_cell(obj), json_string(rd), pod_status(obj),
                 json_string(rs), age_cell(obj, now_ms),
                 str_or(json_object_get(st, "podIP"), "<none>"),
                 str_or(path2(obj, "spec", "nodeName"), "<none>"),
                 str_or(json_object_get(st, "nominatedNodeName"), "<none>"),
                 json_string("<none>"), NULL);
}

json_t *gq_tb_service_cols(void)
{
  return json_pack(
      "[o, o, o, o, o, o]", name_col(),
      col("Type", "string", "", "The type of the service.", 0),
      col("Cluster-IP", "string", "", "The cluster IP of the service.", 0),
      col("External-IP", "string", "", "The external IP of the service.", 0),
      col("Port(s)", "string", "", "The ports of the service.", 0),
      col("Age", "string", "", "CreationTimestamp", 0));
}

json_t *gq_tb_service_cells(const json_t *obj, int64_t now_ms)
{
  const json_t *spec = json_object_get(obj, "spec"), *p;
  const json_t *ports = json_object_get(spec, "ports");
  char buf[256] = "";
  size_t i, len = 0;

  json_array_foreach((json_t *)ports, i, p) {
    if (len < sizeof(buf) - 1)
      len += (size_t)snprintf(
          buf + len, sizeof(buf) - len, "%s%lld/%s", len ? "," : "",
          (long long)json_integer_value(json_object_get(p, "port")),
          json_string_value(json_object_get(p, "protocol"))
              ? json_string_value(json_object_get(p, "protocol"))
              : "TCP");
  }
  return cells_v(name_cell(obj),
                 str_or(json_object_get(spec, "type"), "ClusterIP"),
                 str_or(json_object_get(spec, "clusterIP"), "None"),
                 json_string("<none>"), json_string(len ? buf : "<none>"),
                 age_cell(obj, now_ms), NULL);
}

json_t *gq_tb_event_cols(void)
{
  return json_pack(
      "[o, o, o, o, o, o]",
      col("Last Seen", "string", "", "Time of the last occurrence.", 0),
      col("Type", "string", "", "Type of the event.", 0),
      col("Reason", "string", "", "Short, machine understandable string.", 0),
      col("Object", "string", "", "The object the event is about.", 0),
      col("Message", "string", "", "A human-readable description.", 0),
      col("Name", "string", "name", "Name of the event.", 1));
}

json_t *gq_tb_event_cells(const json_t *obj, int64_t now_ms)
{
  const json_t *io = json_object_get(obj, "involvedObject");
  const json_t *last = json_object_get(obj, "lastTimestamp");
  const json_t *msg = json_object_get(obj, "message");
  const char *kind;
  char what[400], lower[128];
  size_t i;

  if (!io)
    io = json_object_get(obj, "regarding");
  if (!json_is_string(last))
    last = json_object_get(obj, "eventTime");
  kind = json_string_value(json_object_get(io, "kind"));
  for (i = 0; kind && kind[i] && i < sizeof(lower) - 1; i++)
    lower[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] + 32 : kind[i]);
  lower[i] = '\0';
  snprintf(what, sizeof(what), "%s/%s", lower,
           json_string_value(json_object_get(io, "name"))
               ? json_string_value(json_object_get(io, "name"))
               : "");
  return cells_v(gq_tb_age(last, now_ms),
                 str_or(json_object_get(obj, "type"), "Normal"),
                 str_or(json_object_get(obj, "reason"), ""), json_string(what),
                 str_or(msg ? msg : json_object_get(obj, "note"), ""),
                 name_cell(obj), NULL);
}

json_t *gq_tb_lease_cols(void)
{
  return json_pack("[o, o, o]", name_col(),
                   col("Holder", "string", "", "The holder of the lease", 0),
                   col("Age", "string", "", "CreationTimestamp", 0));
}

json_t *gq_tb_lease_cells(const json_t *obj, int64_t now_ms)
{
  return cells_v(name_cell(obj),
                 str_or(path2(obj, "spec", "holderIdentity"), ""),
                 age_cell(obj, now_ms), NULL);
}

json_t *gq_tb_pc_cols(void)
{
  return json_pack(
      "[o, o, o, o, o]", name_col(),
      col("Value", "integer", "", "The priority value", 0),
      col("Global-Default", "boolean", "", "Whether this is the default", 0),
      col("Age", "string", "", "CreationTimestamp", 0),
      col("PreemptionPolicy", "string", "", "The preemption policy", 0));
}

json_t *gq_tb_pc_cells(const json_t *obj, int64_t now_ms)
{
  return cells_v(name_cell(obj),
                 json_integer(json_integer_value(json_object_get(obj, "value"))),
                 json_boolean(json_is_true(json_object_get(obj,
                                                           "globalDefault"))),
                 age_cell(obj, now_ms),
                 str_or(json_object_get(obj, "preemptionPolicy"),
                        "PreemptLowerPriority"),
                 NULL);
}

json_t *gq_tb_pdb_cols(void)
{
  return json_pack(
      "[o, o, o, o, o]", name_col(),
      col("Min Available", "string", "", "The minimum number of pods", 0),
      col("Max Unavailable", "string", "", "The maximum unavailable", 0),
      col("Allowed Disruptions", "integer", "", "Disruptions allowed now", 0),
      col("Age", "string", "", "CreationTimestamp", 0));
}

static json_t *int_or_string(const json_t *v)
{
  char buf[32];

  if (json_is_integer(v)) {
    snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
    return json_string(buf);
  }
  return str_or(v, "N/A");
}

json_t *gq_tb_pdb_cells(const json_t *obj, int64_t now_ms)
{
  const json_t *spec = json_object_get(obj, "spec");

  return cells_v(name_cell(obj),
                 int_or_string(json_object_get(spec, "minAvailable")),
                 int_or_string(json_object_get(spec, "maxUnavailable")),
                 json_integer(json_integer_value(
                     path2(obj, "status", "disruptionsAllowed"))),
                 age_cell(obj, now_ms), NULL);
}

json_t *gq_tb_crd_cols(void)
{
  return json_pack("[o, o]", name_col(),
                   col("Created At", "date", "", "CreationTimestamp", 0));
}

json_t *gq_tb_crd_cells(const json_t *obj, int64_t now_ms)
{
  (void)now_ms;
  return cells_v(name_cell(obj),
                 json_incref((json_t *)meta_get(obj, "creationTimestamp")),
                 NULL);
}
