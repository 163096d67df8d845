/* sim/request.c - routing, query parameters and body decoding of an API
 * request, without the connection (see request.h). */
#include "sim/request.h"

#include "api/node.h"
#include "api/pod.h"
#include "api/priorityclass.h"
#include "api/selector.h"
#include "api/yaml.h"
#include "base/err.h"
#include "decide/names.h"
#include "sim/protobuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gq_sim_http_query(void *arg, const char *key)
{
  return gq_http_query(arg, key);
}

int gq_sim_route(struct gq_sim_req *r, char seg[GQ_SIM_MAX_SEGS][256], int n)
{
  const char *group = "", *version;
  int i;

  if (n >= 3 && !strcmp(seg[0], "api")) {
    version = seg[1];
    i = 2;
  } else if (n >= 4 && !strcmp(seg[0], "apis")) {
    group = seg[1];
    version = seg[2];
    i = 3;
  } else {
    return -1;
  }
  /* /api/v1/namespaces/NAME[/status|/finalize] is the namespace itself. */
  if (!*group && !strcmp(seg[i], "namespaces") && n - i >= 2 &&
      (n - i == 2 || (n - i == 3 && (!strcmp(seg[i + 2], "status") ||
                                     !strcmp(seg[i + 2], "finalize"))))) {
    r->k = gq_sim_kind_find(r->s, "", version, "namespaces");
    snprintf(r->name, sizeof(r->name), "%s", seg[i + 1]);
    if (n - i == 3)
      snprintf(r->sub, sizeof(r->sub), "%s", seg[i + 2]);
    return r->k ? 0 : -1;
  }
  if (!strcmp(seg[i], "namespaces") && n - i >= 3) {
    snprintf(r->ns, sizeof(r->ns), "%s", seg[i + 1]);
    i += 2;
  }
  r->k = gq_sim_kind_find(r->s, group, version, seg[i]);
  if (!r->k || n - i > 3 || (*r->ns && !r->k->namespaced))
    return -1;
  if (r->k->view_of) {
    r->view = r->k;
    r->k = r->k->view_of;
  }
  if (n - i >= 2)
    snprintf(r->name, sizeof(r->name), "%s", seg[i + 1]);
  if (n - i == 3)
    snprintf(r->sub, sizeof(r->sub), "%s", seg[i + 2]);
  if (*r->sub && strcmp(r->sub, "status") &&
      !(r->k->extra_sub && (!strcmp(r->sub, "eviction") ||
                            !strcmp(r->sub, "binding"))))
    return -1;
  if (!strcmp(r->sub, "status") && !r->k->has_status)
    return -1;
  return 0;
}

/* The boolean query parameters kube-apiserver reads with Go's
 * strconv.ParseBool (decide/names.h gq_parse_bool). */
static const char *const bool_params[] = {"watch", "allowWatchBookmarks",
                                          "sendInitialEvents", "pretty",
                                          NULL};

int gq_sim_query_check(gq_sim_query_fn q, void *arg, char *err, size_t len)
{
  int b;

  for (size_t i = 0; bool_params[i]; i++) {
    const char *v = q(arg, bool_params[i]);

    if (v && gq_parse_bool(v, &b) != 0) {
      snprintf(err, len, "strconv.ParseBool: parsing \"%.200s\": invalid "
               "syntax", v);
      return -1;
    }
  }
  return 0;
}

static int is_core(const struct gq_sim_kind *k, const char *plural)
{
  return !*k->group && strcmp(k->plural, plural) == 0;
}

/* Fields a kind may be selected by, as the real server allows. */
static int field_supported(const struct gq_sim_kind *k, const char *f)
{
  static const char *const pods[] = {"spec.nodeName", "status.phase",
                                     "spec.schedulerName", "status.podIP",
                                     "spec.serviceAccountName", NULL};

  if (!strcmp(f, "metadata.name") || !strcmp(f, "metadata.namespace"))
    return 1;
  if (is_core(k, "pods")) {
    for (int i = 0; pods[i]; i++)
      if (!strcmp(f, pods[i]))
        return 1;
  }
  if (!strcmp(k->plural, "events"))
    return !strncmp(f, "involvedObject.", 15) || !strcmp(f, "reason") ||
           !strcmp(f, "type") || !strncmp(f, "source", 6) ||
           !strcmp(f, "reportingComponent") || !strncmp(f, "regarding.", 10);
  if (is_core(k, "nodes"))
    return !strcmp(f, "spec.unschedulable");
  return 0;
}

/* An int64 query parameter, as Go's strconv.ParseInt. 0 when absent. */
static int int_param(gq_sim_query_fn q, void *arg, const char *key,
                     int64_t *out, char *err, size_t len)
{
  const char *v = q(arg, key), *d;

  *out = 0;
  if (!v || gq_parse_int64(v, out) == 0)
    return 0;
  d = v + (*v == '-' || *v == '+');
  snprintf(err, len, "strconv.ParseInt: parsing \"%.200s\": %s", v,
           *d && strspn(d, "0123456789") == strlen(d) ? "value out of range"
                                                      : "invalid syntax");
  return -1;
}

static int selectors(const struct gq_sim_kind *k, gq_sim_query_fn q,
                     void *arg, struct gq_sim_params *p, char *err,
                     size_t len)
{
  const char *l = q(arg, "labelSelector"), *f = q(arg, "fieldSelector");

  if (l && *l && gq_labelsel_parse(l, &p->labels, err, len) != 0)
    return -1;
  if (f && *f && gq_fieldsel_parse(f, &p->fields, err, len) != 0)
    return -1;
  for (size_t i = 0; p->fields && i < gq_fieldsel_count(p->fields); i++) {
    if (!field_supported(k, gq_fieldsel_field(p->fields, i))) {
      snprintf(err, len, "field label not supported: %.200s",
               gq_fieldsel_field(p->fields, i));
      return -1;
    }
  }
  return 0;
}

int gq_sim_params_parse(const struct gq_sim_kind *k, gq_sim_query_fn q,
                        void *arg, struct gq_sim_params *p, char *err,
                        size_t len)
{
  const char *rv = q(arg, "resourceVersion");

  memset(p, 0, sizeof(*p));
  if (selectors(k, q, arg, p, err, len) != 0 ||
      int_param(q, arg, "limit", &p->limit, err, len) != 0 ||
      int_param(q, arg, "timeoutSeconds", &p->timeout_s, err, len) != 0) {
    gq_sim_params_release(p);
    return -1;
  }
  if (p->limit < 0)
    p->limit = 0;
  p->cont = q(arg, "continue");
  p->from_rv = rv && *rv ? strtoull(rv, NULL, 10) : 0;
  return 0;
}

void gq_sim_params_release(struct gq_sim_params *p)
{
  gq_labelsel_free(p->labels);
  gq_fieldsel_free(p->fields);
  p->labels = NULL;
  p->fields = NULL;
}

json_t *gq_sim_body_decode(const struct gq_sim_kind *k, const char *body,
                           size_t len, const char *ctype, int *code,
                           char *err, size_t errlen)
{
  json_error_t jerr;
  json_t *obj, *docs;
  char yerr[512];

  *code = 400;
  if (gq_pb_is_protobuf(body, len)) {
    /* kubectl sends some built-ins as protobuf. Only a namespace is all
     * metadata; for anything else reading the metadata alone would lose
     * the object's spec, so the sim says so instead of storing less. */
    if (!is_core(k, "namespaces")) {
      *code = 415;
      snprintf(err, errlen, "gpuq-sim reads protobuf bodies only for "
               "namespaces; write the object as YAML or JSON and use "
               "kubectl create -f or apply -f");
      return NULL;
    }
    obj = gq_pb_decode_meta(body, len);
    if (!obj)
      snprintf(err, errlen, "the body of the request is not a valid "
               "protobuf object");
    return obj;
  }
  if (ctype && strstr(ctype, "yaml")) {
    if (gq_yaml_parse(body, len, &docs, yerr, sizeof(yerr)) != 0 ||
        json_array_size(docs) != 1) {
      snprintf(err, errlen, "the body of the request is not valid YAML: %s",
               yerr);
      json_decref(docs);
      return NULL;
    }
    obj = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    return obj;
  }
  obj = json_loadb(body, len, JSON_DECODE_ANY, &jerr);
  if (!obj)
    snprintf(err, errlen, "the body of the request is not valid JSON: %s at "
             "line %d column %d", jerr.text, jerr.line, jerr.column);
  return obj;
}

int gq_sim_name_check(const struct gq_sim_kind *k, const char *name,
                      char *err, size_t len)
{
  size_t n = strlen(name);
  const char *why;

  if (!*k->group && !strcmp(k->plural, "namespaces")) {
    if (gq_dns_label_ok(name, n))
      return 0;
    why = "a lowercase RFC 1123 label must consist of lower case "
          "alphanumeric characters or '-', and must start and end with an "
          "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used "
          "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
  } else if (!*k->group && !strcmp(k->plural, "services")) {
    if (gq_dns_label_ok(name, n) && name[0] >= 'a' && name[0] <= 'z')
      return 0;
    why = "a DNS-1035 label must consist of lower case alphanumeric "
          "characters or '-', start with an alphabetic character, and end "
          "with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
          "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
  } else {
    if (gq_dns_subdomain_ok(name, n))
      return 0;
    why = "a lowercase RFC 1123 subdomain must consist of lower case "
          "alphanumeric characters, '-' or '.', and must start and end with "
          "an alphanumeric character (e.g. 'example.com', regex used for "
          "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]"
          "([-a-z0-9]*[a-z0-9])?)*')";
  }
  snprintf(err, len, "metadata.name: Invalid value: \"%s\": %s", name, why);
  return -1;
}

int gq_sim_builtin_check(const struct gq_sim_kind *k, const json_t *obj,
                         char *err, size_t len)
{
  if (is_core(k, "pods")) {
    struct gq_pod p;

    if (gq_pod_decode(obj, &p, err, len) != 0)
      return -1;
    gq_pod_release(&p);
  } else if (is_core(k, "nodes")) {
    struct gq_node n;

    if (gq_node_decode(obj, NULL, &n, err, len) != 0)
      return -1;
    gq_node_release(&n);
  } else if (!strcmp(k->group, "scheduling.k8s.io") &&
             !strcmp(k->plural, "priorityclasses")) {
    struct gq_priorityclass pc;

    if (gq_priorityclass_decode(obj, &pc, err, len) != 0)
      return -1;
    gq_priorityclass_release(&pc);
  } else if (gq_sim_webhook_config_check(k, obj, err, len) != 0) {
    return -1;
  }
  return 0;
}
