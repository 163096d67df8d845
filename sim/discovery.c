/* sim/discovery.c - /version, API discovery (aggregated v2 and legacy) and
 * OpenAPI v2 and v3, built from the registry (kubectl-api-contract §2, §3,
 * §6.5) and the generated definitions of the built-in kinds (openapi.h). */
#include "sim/sim.h"

#include "base/alloc.h"
#include "base/log.h"
#include "sim/openapi.h"
#include "sim/protobuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AGG_CTYPE "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

static const char *const all_verbs[] = {"create", "delete", "deletecollection",
                                        "get",    "list",   "patch",
                                        "update", "watch",  NULL};

static json_t *strs(const char *const *v, size_t n)
{
  json_t *a = json_array();

  for (size_t i = 0; (n ? i < n : v[i] != NULL); i++)
    json_array_append_new(a, json_string(v[i]));
  return a;
}

static void send_json(struct gq_http_req *req, json_t *doc, const char *ctype)
{
  char *s = json_dumps(doc, JSON_COMPACT);

  gq_http_respond(req, 200, ctype, s, strlen(s), NULL);
  free(s);
  json_decref(doc);
}

static json_t *version_doc(void)
{
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "major",
                   "1", "minor", "32", "gitVersion", "v1.32.0-gpuq-sim",
                   "gitCommit", "0000000000000000000000000000000000000000",
                   "gitTreeState", "clean", "buildDate",
                   "2026-01-01T00:00:00Z", "goVersion", "go1.23", "compiler",
                   "gc", "platform", "linux/amd64");
}

/* The group/versions served, in registry order without repeats: an array
 * of [group, version] pairs (core "" included). */
static json_t *group_versions(struct gq_sim *s)
{
  json_t *out = json_array(), *seen = json_object();
  char key[256];

  for (struct gq_sim_kind *k = s->kinds; k; k = k->next) {
    if (k->dropped)
      continue;
    snprintf(key, sizeof(key), "%s/%s", k->group, k->version);
    if (json_object_get(seen, key))
      continue;
    json_object_set_new(seen, key, json_true());
    json_array_append_new(out, json_pack("[s, s]", k->group, k->version));
  }
  json_decref(seen);
  return out;
}

/* One APIResource entry (legacy discovery). */
static json_t *legacy_resource(const struct gq_sim_kind *k)
{
  return json_pack("{s:s, s:s, s:b, s:s, s:o, s:o, s:o}", "name", k->plural,
                   "singularName", k->singular, "namespaced", k->namespaced,
                   "kind", k->kind, "verbs", strs(all_verbs, 0), "shortNames",
                   strs((const char *const *)k->short_names, k->n_short),
                   "categories",
                   strs((const char *const *)k->categories,
                        k->n_categories));
}

static json_t *legacy_sub(const struct gq_sim_kind *k, const char *sub,
                          const char *group, const char *version,
                          const char *kind, const char *verbs)
{
  char name[160];
  json_t *r;

  snprintf(name, sizeof(name), "%s/%s", k->plural, sub);
  r = json_pack("{s:s, s:s, s:b, s:s, s:[]}", "name", name, "singularName",
                "", "namespaced", k->namespaced, "kind", kind, "verbs");
  for (const char *v = verbs; *v;) {
    const char *sp = strchr(v, ' ');
    size_t n = sp ? (size_t)(sp - v) : strlen(v);

    json_array_append_new(json_object_get(r, "verbs"), json_stringn(v, n));
    v += n + (sp ? 1 : 0);
  }
  if (group) {
    json_object_set_new(r, "group", json_string(group));
    json_object_set_new(r, "version", json_string(version));
  }
  return r;
}

static json_t *resource_list(struct gq_sim *s, const char *group,
                             const char *version)
{
  json_t *res = json_array();
  char gv[200];

  for (struct gq_sim_kind *k = s->kinds; k; k = k->next) {
    if (k->dropped || strcmp(k->group, group) || strcmp(k->version, version))
      continue;
    json_array_append_new(res, legacy_resource(k));
    if (k->has_status)
      json_array_append_new(res, legacy_sub(k, "status", NULL, NULL, k->kind,
                                            "get patch update"));
    if (k->extra_sub) {
      json_array_append_new(res, legacy_sub(k, "eviction", "policy", "v1",
                                            "Eviction", "create"));
      json_array_append_new(res, legacy_sub(k, "binding", NULL, NULL,
                                            "Binding", "create"));
    }
  }
  snprintf(gv, sizeof(gv), "%s%s%s", group, *group ? "/" : "", version);
  return json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList",
                   "apiVersion", "v1", "groupVersion", gv, "resources", res);
}

static json_t *agg_kind_ref(const char *group, const char *version,
                            const char *kind)
{
  return json_pack("{s:s, s:s, s:s}", "group", group, "version", version,
                   "kind", kind);
}

static json_t *agg_resource(const struct gq_sim_kind *k)
{
  json_t *subs = json_array();
  json_t *r = json_pack(
      "{s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "resource", k->plural,
      "singularResource", k->singular, "scope",
      k->namespaced ? "Namespaced" : "Cluster", "responseKind",
      agg_kind_ref(k->group, k->version, k->kind), "verbs",
      strs(all_verbs, 0), "shortNames",
      strs((const char *const *)k->short_names, k->n_short), "categories",
      strs((const char *const *)k->categories, k->n_categories));

  if (k->has_status)
    json_array_append_new(
        subs, json_pack("{s:s, s:o, s:[s,s,s]}", "subresource", "status",
                        "responseKind",
                        agg_kind_ref(k->group, k->version, k->kind), "verbs",
                        "get", "patch", "update"));
  if (k->extra_sub) {
    json_array_append_new(
        subs, json_pack("{s:s, s:o, s:[s]}", "subresource", "eviction",
                        "responseKind", agg_kind_ref("policy", "v1", "Eviction"),
                        "verbs", "create"));
    json_array_append_new(
        subs, json_pack("{s:s, s:o, s:[s]}", "subresource", "binding",
                        "responseKind", agg_kind_ref("", "v1", "Binding"),
                        "verbs", "create"));
  }
  json_object_set_new(r, "subresources", subs);
  return r;
}

/* Aggregated discovery for /api (core == 1) or /apis. */
static json_t *aggregated(struct gq_sim *s, int core)
{
  json_t *items = json_array(), *gvs = group_versions(s), *gv;
  size_t i;

  json_array_foreach(gvs, i, gv) {
    const char *g = json_string_value(json_array_get(gv, 0));
    const char *v = json_string_value(json_array_get(gv, 1));
    json_t *res;

    if ((*g == '\0') != core)
      continue;
    res = json_array();
    for (struct gq_sim_kind *k = s->kinds; k; k = k->next)
      if (!k->dropped && !strcmp(k->group, g) && !strcmp(k->version, v))
        json_array_append_new(res, agg_resource(k));
    json_array_append_new(
        items, json_pack("{s:{s:s}, s:[{s:s, s:s, s:o}]}", "metadata", "name",
                         g, "versions", "version", v, "freshness", "Current",
                         "resources", res));
  }
  json_decref(gvs);
  return json_pack("{s:s, s:s, s:{}, s:o}", "kind", "APIGroupDiscoveryList",
                   "apiVersion", "apidiscovery.k8s.io/v2", "metadata",
                   "items", items);
}

static json_t *group_list(struct gq_sim *s)
{
  json_t *groups = json_array(), *gvs = group_versions(s), *gv;
  size_t i;

  json_array_foreach(gvs, i, gv) {
    const char *g = json_string_value(json_array_get(gv, 0));
    const char *v = json_string_value(json_array_get(gv, 1));
    char full[200];

    if (!*g)
      continue;
    snprintf(full, sizeof(full), "%s/%s", g, v);
    json_array_append_new(
        groups, json_pack("{s:s, s:[{s:s, s:s}], s:{s:s, s:s}}", "name", g,
                          "versions", "groupVersion", full, "version", v,
                          "preferredVersion", "groupVersion", full, "version",
                          v));
  }
  json_decref(gvs);
  return json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList", "apiVersion",
                   "v1", "groups", groups);
}

/* /apis/GROUP: the group's APIGroup (kube-apiserver serves one per group;
 * the official Python client's ApisApi reads them), or NULL if no kind of
 * the group is served. */
static json_t *api_group(struct gq_sim *s, const char *group)
{
  json_t *list = group_list(s), *g, *out = NULL;
  size_t i;

  json_array_foreach(json_object_get(list, "groups"), i, g)
    if (!strcmp(json_string_value(json_object_get(g, "name")), group)) {
      out = json_deep_copy(g);
      json_object_set_new(out, "kind", json_string("APIGroup"));
      json_object_set_new(out, "apiVersion", json_string("v1"));
      break;
    }
  json_decref(list);
  return out;
}

static json_t *api_versions(int port)
{
  char addr[64];

  snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
  return json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions",
                   "versions", "v1", "serverAddressByClientCIDRs",
                   "clientCIDR", "0.0.0.0/0", "serverAddress", addr);
}

/* --- OpenAPI v3 --- */

static json_t *openapi_root(struct gq_sim *s)
{
  json_t *paths = json_object(), *gvs = group_versions(s), *gv;
  size_t i;

  json_array_foreach(gvs, i, gv) {
    const char *g = json_string_value(json_array_get(gv, 0));
    const char *v = json_string_value(json_array_get(gv, 1));
    char key[200], url[300];

    snprintf(key, sizeof(key), "%s%s/%s", *g ? "apis/" : "api", g, v);
    if (!*g)
      snprintf(key, sizeof(key), "api/%s", v);
    snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%llu", key,
             (unsigned long long)s->kinds_gen);
    json_object_set_new(paths, key,
                        json_pack("{s:s}", "serverRelativeURL", url));
  }
  json_decref(gvs);
  return json_pack("{s:o}", "paths", paths);
}

/* A component name in the apiserver's style: dev.gpuq.v1alpha1.GpuJob
 * (the group's DNS labels reversed). */
static void schema_name(const struct gq_sim_kind *k, char *buf, size_t len)
{
  char g[128], *labels[16], *save = NULL;
  int n = 0;
  size_t off = 0;

  snprintf(g, sizeof(g), "%s", k->group);
  for (char *t = strtok_r(g, ".", &save); t && n < 16;
       t = strtok_r(NULL, ".", &save))
    labels[n++] = t;
  for (int i = n - 1; i >= 0 && off < len; i--)
    off += (size_t)snprintf(buf + off, len - off, "%s.", labels[i]);
  if (off < len)
    snprintf(buf + off, len - off, "%s.%s", k->version, k->kind);
}

static json_t *patch_op(const struct gq_sim_kind *k)
{
  return json_pack(
      "{s:{s:s, s:s, s:s}, s:[{s:s, s:s, s:{s:s}}], s:{s:{s:{}, s:{}, s:{}}},"
      " s:{s:{s:s}}}",
      "x-kubernetes-group-version-kind", "group", k->group, "version",
      k->version, "kind", k->kind, "parameters", "name", "fieldValidation",
      "in", "query", "schema", "type", "string", "requestBody", "content",
      "application/json-patch+json", "application/merge-patch+json",
      "application/apply-patch+yaml", "responses", "200", "description",
      "OK");
}

/* A CRD kind's schema as a component: a copy with its GVK. */
static json_t *crd_component(const struct gq_sim_kind *k, json_t *schema)
{
  json_object_set_new(schema, "x-kubernetes-group-version-kind",
                      json_pack("[{s:s, s:s, s:s}]", "group", k->group,
                                "version", k->version, "kind", k->kind));
  return schema;
}

/* Adds a built-in kind's definition, its list's and what they reach. */
static void builtin_closure(struct gq_sim *s, const struct gq_sim_kind *k,
                            json_t *out)
{
  const json_t *defs = json_object_get(s->openapi, "definitions");
  const char *name;

  if ((name = gq_openapi_find(defs, k->group, k->version, k->kind)))
    gq_openapi_closure(defs, name, out);
  if ((name = gq_openapi_find(defs, k->group, k->version, k->list_kind)))
    gq_openapi_closure(defs, name, out);
}

static json_t *openapi_gv(struct gq_sim *s, const char *group,
                          const char *version)
{
  json_t *paths = json_object(), *schemas = json_object();
  json_t *v2 = json_object(), *sc;
  const char *name;
  int found = 0;

  for (struct gq_sim_kind *k = s->kinds; k; k = k->next) {
    char path[400], cname[300];

    if (k->dropped || strcmp(k->group, group) || strcmp(k->version, version))
      continue;
    found = 1;
    if (*group)
      snprintf(path, sizeof(path), "/apis/%s/%s%s/%s/{name}", group, version,
               k->namespaced ? "/namespaces/{namespace}" : "", k->plural);
    else
      snprintf(path, sizeof(path), "/api/%s%s/%s/{name}", version,
               k->namespaced ? "/namespaces/{namespace}" : "", k->plural);
    json_object_set_new(paths, path, json_pack("{s:o}", "patch", patch_op(k)));
    if (k->schema) {
      schema_name(k, cname, sizeof(cname));
      json_object_set_new(schemas, cname,
                          crd_component(k, json_deep_copy(k->schema)));
    } else if (k->builtin_schema) {
      builtin_closure(s, k, v2);
    }
  }
  json_object_foreach(v2, name, sc)
    json_object_set_new(schemas, name, gq_openapi_to_v3(sc));
  json_decref(v2);
  if (!found) {
    json_decref(paths);
    json_decref(schemas);
    return NULL;
  }
  return json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:o}}", "openapi", "3.0.0",
                   "info", "title", "Kubernetes", "version", "v1.32.0",
                   "paths", paths, "components", "schemas", schemas);
}

/* --- OpenAPI v2 --- */

/* The Swagger 2.0 document: every generated definition, and the CRDs'
 * schemas in their v2 form (gq_openapi_crd_v2). */
static json_t *openapi_v2_doc(struct gq_sim *s)
{
  json_t *defs = json_deep_copy(json_object_get(s->openapi, "definitions"));

  for (struct gq_sim_kind *k = s->kinds; k; k = k->next) {
    char name[300];

    if (k->dropped || !k->schema)
      continue;
    schema_name(k, name, sizeof(name));
    json_object_set_new(defs, name,
                        crd_component(k, gq_openapi_crd_v2(k->schema)));
  }
  return json_pack("{s:s, s:{s:s, s:s}, s:{}, s:o}", "swagger", "2.0", "info",
                   "title", "Kubernetes", "version", "v1.32.0", "paths",
                   "definitions", defs);
}

/* GET /openapi/v2: protobuf when the Accept header asks for it (kubectl
 * does), JSON otherwise; 404 without the generated definitions, as
 * before they existed. Both forms are kept until the registry changes. */
static void openapi_v2(struct gq_sim *s, struct gq_http_req *req)
{
  const char *accept = gq_http_header(req, "Accept");

  if (!s->openapi) {
    gq_sim_status(req, 404, "NotFound", "the server could not find the "
                  "requested resource", NULL);
    return;
  }
  if (!s->openapi_v2 || s->openapi_v2_gen != s->kinds_gen) {
    json_t *doc = openapi_v2_doc(s);

    free(s->openapi_v2);
    free(s->openapi_v2_pb);
    s->openapi_v2 = json_dumps(doc, JSON_COMPACT);
    s->openapi_v2_pb = gq_pb_openapi_v2(doc, &s->openapi_v2_pb_len);
    s->openapi_v2_gen = s->kinds_gen;
    json_decref(doc);
  }
  if (accept && strstr(accept, "application/com.github.proto-openapi.spec.v2"))
    gq_http_respond(req, 200, GQ_PB_OPENAPI_V2_TYPE, s->openapi_v2_pb,
                    s->openapi_v2_pb_len, NULL);
  else
    gq_http_respond(req, 200, "application/json", s->openapi_v2,
                    strlen(s->openapi_v2), NULL);
}

int gq_sim_openapi_load(struct gq_sim *s, const char *path)
{
  static const struct gq_lc lc = {"sim", "openapi", NULL};
  char err[512];
  const json_t *defs;
  json_t *doc;
  int rc = gq_openapi_load(path, &doc, err, sizeof(err));

  if (rc != 0) {
    GQ_LOG(GQ_WARN, &lc, "no OpenAPI schemas for the built-in kinds: %s; "
           "serving OpenAPI for the CRDs only (docs/sim.md, \"OpenAPI\")",
           err);
    return rc;
  }
  gq_sim_openapi_release(s);
  s->openapi = doc;
  defs = json_object_get(doc, "definitions");
  for (struct gq_sim_kind *k = s->kinds; k; k = k->next) {
    const char *name;

    if (k->is_crd)
      continue;
    name = gq_openapi_find(defs, k->group, k->version, k->kind);
    k->builtin_schema = name ? json_object_get(defs, name) : NULL;
    if (!name)
      GQ_LOG(GQ_WARN, &lc, "'%s' has no definition of %s/%s %s", path,
             *k->group ? k->group : "core", k->version, k->kind);
  }
  GQ_LOG(GQ_INFO, &lc, "OpenAPI of the built-in kinds from '%s' (%s, "
         "Kubernetes %s, %zu definitions)", path,
         json_string_value(json_object_get(doc, "source")),
         json_string_value(json_object_get(doc, "kubernetes")),
         json_object_size(defs));
  return 0;
}

void gq_sim_openapi_release(struct gq_sim *s)
{
  for (struct gq_sim_kind *k = s->kinds; k; k = k->next)
    k->builtin_schema = NULL;
  json_decref(s->openapi);
  free(s->openapi_v2);
  free(s->openapi_v2_pb);
  s->openapi = NULL;
  s->openapi_v2 = s->openapi_v2_pb = NULL;
  s->openapi_v2_pb_len = 0;
}

static int openapi(struct gq_sim *s, struct gq_http_req *req,
                   char seg[GQ_SIM_MAX_SEGS][256], int n)
{
  json_t *doc = NULL;

  if (n == 2)
    doc = openapi_root(s);
  else if (n == 4 && strcmp(seg[2], "api") == 0)
    doc = openapi_gv(s, "", seg[3]);
  else if (n == 5 && strcmp(seg[2], "apis") == 0)
    doc = openapi_gv(s, seg[3], seg[4]);
  if (!doc) {
    gq_sim_status(req, 404, "NotFound", "the server could not find the "
                  "requested resource", NULL);
    return 1;
  }
  send_json(req, doc, "application/json");
  return 1;
}

int gq_sim_discovery(struct gq_sim *s, struct gq_http_req *req)
{
  const char *accept = gq_http_header(req, "Accept");
  int agg = accept && strstr(accept, "as=APIGroupDiscoveryList") != NULL;
  char seg[GQ_SIM_MAX_SEGS][256];
  int n = gq_sim_split_path(gq_http_path(req), seg);
  json_t *doc;

  if (n == 1 && strcmp(seg[0], "version") == 0)
    send_json(req, version_doc(), "application/json");
  else if (n >= 1 && strcmp(seg[0], "openapi") == 0) {
    if (n >= 2 && strcmp(seg[1], "v3") == 0)
      return openapi(s, req, seg, n);
    if (n == 2 && strcmp(seg[1], "v2") == 0) {
      openapi_v2(s, req);
      return 1;
    }
    gq_sim_status(req, 404, "NotFound", "the server could not find the "
                  "requested resource", NULL);
  } else if (n == 1 && strcmp(seg[0], "api") == 0)
    send_json(req, agg ? aggregated(s, 1) : api_versions(gq_httpd_port(s->httpd)),
              agg ? AGG_CTYPE : "application/json");
  else if (n == 1 && strcmp(seg[0], "apis") == 0)
    send_json(req, agg ? aggregated(s, 0) : group_list(s),
              agg ? AGG_CTYPE : "application/json");
  else if (n == 2 && strcmp(seg[0], "api") == 0 && strcmp(seg[1], "v1") == 0)
    send_json(req, resource_list(s, "", "v1"), "application/json");
  else if (n == 2 && strcmp(seg[0], "apis") == 0 &&
           (doc = api_group(s, seg[1])) != NULL)
    send_json(req, doc, "application/json");
  else if (n == 3 && strcmp(seg[0], "apis") == 0 &&
           gq_sim_kind_find_gv(s, seg[1], seg[2]))
    send_json(req, resource_list(s, seg[1], seg[2]), "application/json");
  else
    return 0;
  return 1;
}
