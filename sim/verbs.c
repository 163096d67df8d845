/* sim/verbs.c - the API verbs with the API server's semantics
 * (kubectl-api-contract §6-§8): get, list (selectors, paging), watch,
 * create, update, patch (merge, JSON, strategic, apply), delete (grace,
 * preconditions, finalizers, cascading), eviction (PodDisruptionBudgets)
 * and binding. */
#include "sim/server.h"

#include "api/meta.h"
#include "api/patch.h"
#include "api/pod.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "sim/dump.h"
#include "sim/fields.h"
#include "sim/request.h"
#include "sim/schema.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ERRLEN 1024

const char *gq_sim_resname(const struct gq_sim_kind *k, char *buf,
                           size_t len)
{
  if (*k->group)
    snprintf(buf, len, "%s.%s", k->plural, k->group);
  else
    snprintf(buf, len, "%s", k->plural);
  return buf;
}

static const char *q(const struct gq_sim_req *r, const char *key)
{
  return gq_http_query(r->http, key);
}

static int is_core(const struct gq_sim_kind *k, const char *plural)
{
  return !*k->group && strcmp(k->plural, plural) == 0;
}

static void not_found(struct gq_sim_req *r, const char *name)
{
  char res[200], msg[600];

  gq_sim_resname(r->k, res, sizeof(res));
  snprintf(msg, sizeof(msg), "%s \"%s\" not found", res, name);
  gq_sim_status(r->http, 404, "NotFound", msg,
                json_pack("{s:s, s:s, s:s}", "name", name, "group",
                          r->k->group, "kind", r->k->plural));
}

static void conflict(struct gq_sim_req *r, const char *name)
{
  char res[200], msg[800];

  gq_sim_resname(r->k, res, sizeof(res));
  snprintf(msg, sizeof(msg),
           "Operation cannot be fulfilled on %s \"%s\": the object has been "
           "modified; please apply your changes to the latest version and "
           "try again",
           res, name);
  gq_sim_status(r->http, 409, "Conflict", msg,
                json_pack("{s:s, s:s, s:s}", "name", name, "group",
                          r->k->group, "kind", r->k->plural));
}

/* 422 Invalid with details.causes (kubectl prints it from details). */
static void invalid(struct gq_sim_req *r, const char *name, json_t *causes)
{
  char msg[2048], kind[200];
  size_t off, n = json_array_size(causes);
  json_t *c;
  size_t i;

  snprintf(kind, sizeof(kind), "%s%s%s", r->k->kind, *r->k->group ? "." : "",
           r->k->group);
  off = (size_t)snprintf(msg, sizeof(msg), "%s \"%s\" is invalid: %s", kind,
                         name, n > 1 ? "[" : "");
  json_array_foreach(causes, i, c) {
    if (off < sizeof(msg))
      off += (size_t)snprintf(
          msg + off, sizeof(msg) - off, "%s%s: %s", i ? ", " : "",
          json_string_value(json_object_get(c, "field")),
          json_string_value(json_object_get(c, "message")));
  }
  if (n > 1 && off < sizeof(msg))
    snprintf(msg + off, sizeof(msg) - off, "]");
  gq_sim_status(r->http, 422, "Invalid", msg,
                json_pack("{s:s, s:s, s:s, s:o}", "name", name, "group",
                          r->k->group, "kind", r->k->kind, "causes", causes));
}

/* A single cause from a decoder message "field: detail". */
static void invalid_msg(struct gq_sim_req *r, const char *name,
                        const char *msg)
{
  const char *colon = strstr(msg, ": ");
  json_t *causes = json_array();

  json_array_append_new(
      causes, json_pack("{s:s, s:s, s:s#}", "reason", "FieldValueInvalid",
                        "message", colon ? colon + 2 : msg, "field",
                        colon ? msg : "", colon ? (int)(colon - msg) : 0));
  invalid(r, name, causes);
}

static void bad_request(struct gq_sim_req *r, const char *msg)
{
  gq_sim_status(r->http, 400, "BadRequest", msg, NULL);
}

/* The object as the request's kind shows it (a view converts). */
static json_t *present(const struct gq_sim_req *r, const json_t *obj)
{
  return r->view ? r->view->present(obj) : json_incref((json_t *)obj);
}

/* Most Warning headers one answer carries; kube-apiserver has a limit of
 * its own (4 KiB of warnings per request, k8s.io/apiserver warning). */
#define MAX_WARNINGS 16

/* "299 - \"TEXT\"": an RFC 7234 warn-value, TEXT with " and \ escaped as
 * kube-apiserver writes it (k8s.io/apiserver/pkg/endpoints/filters). */
static void warn_value(char *out, size_t len, const char *text, size_t n)
{
  size_t o = (size_t)snprintf(out, len, "299 - \"");

  for (size_t i = 0; i < n && o + 3 < len; i++) {
    if (text[i] == '"' || text[i] == '\\')
      out[o++] = '\\';
    out[o++] = text[i];
  }
  snprintf(out + o, len - o, "\"");
}

/* Sends obj (JSON, or a one-row Table when asked) with the warnings. */
static void reply_obj(struct gq_sim_req *r, int code, const json_t *obj)
{
  json_t *out;

  if (r->table && code == 200) {
    json_t *one = json_pack("[O]", obj);

    out = gq_sim_table(r->k, one, r->include_object, 1);
    json_decref(one);
  } else {
    out = present(r, obj);
  }
  if (r->warning[0]) {
    size_t len_out = 0;
    char *s = gq_sim_dumps(out, &len_out), hdr[MAX_WARNINGS][600];
    const char *extra[2 * MAX_WARNINGS + 1];
    size_t n = 0;

    for (const char *p = r->warning; *p && n < MAX_WARNINGS;) {
      const char *nl = strchr(p, '\n');
      size_t len = nl ? (size_t)(nl - p) : strlen(p);

      warn_value(hdr[n], sizeof(hdr[n]), p, len);
      extra[2 * n] = "Warning";
      extra[2 * n + 1] = hdr[n];
      n++;
      p += len + (nl ? 1 : 0);
    }
    extra[2 * n] = NULL;
    gq_http_respond(r->http, (unsigned)code, "application/json", s ? s : "",
                    len_out, extra);
    free(s);
    json_decref(out);
    return;
  }
  gq_sim_reply(r->http, code, out);
}

/* --- read --- */

void gq_sim_do_get(struct gq_sim_req *r)
{
  const json_t *obj = gq_sim_get(r->k, r->ns, r->name);

  if (!obj) {
    not_found(r, r->name);
    return;
  }
  reply_obj(r, 200, obj);
}

struct fa {
  const json_t *obj;
  char buf[256];
};

static const char *field_of(const char *field, void *arg)
{
  struct fa *a = arg;

  return gq_sim_field_value(a->obj, field, a->buf, sizeof(a->buf));
}

/* Parses the parameters of list, watch and deletecollection; answers 400
 * and returns -1 on a bad one. */
static int parse_params(struct gq_sim_req *r, struct gq_sim_params *p)
{
  char err[ERRLEN];

  if (gq_sim_params_parse(r->k, gq_sim_http_query, r->http, p, err,
                          sizeof(err)) == 0)
    return 0;
  bad_request(r, err);
  return -1;
}

static int selected(const json_t *obj, const struct gq_labelsel *ls,
                    const struct gq_fieldsel *fs)
{
  struct fa a = {.obj = obj};

  if (ls && !gq_labelsel_match(ls, json_object_get(json_object_get(obj,
                                                                   "metadata"),
                                                   "labels")))
    return 0;
  return !fs || gq_fieldsel_match(fs, field_of, &a);
}

/* Applies limit/continue: keeps at most 'limit' items after the continue
 * key. Returns the new continue token (heap) or NULL. */
static char *page(json_t *items, const char *cont, int64_t limit,
                  long *remaining)
{
  json_t *out = json_array(), *it;
  size_t i;
  char *next = NULL;

  *remaining = 0;
  json_array_foreach(items, i, it) {
    char key[600];

    snprintf(key, sizeof(key), "%s/%s", gq_meta_str(it, "namespace"),
             gq_meta_str(it, "name"));
    if (cont && *cont && strcmp(key, cont) <= 0)
      continue;
    if (limit > 0 && (int64_t)json_array_size(out) == limit) {
      (*remaining)++;
      continue;
    }
    json_array_append(out, it);
    free(next);
    next = gq_xstrdup(key);
  }
  json_array_clear(items);
  json_array_extend(items, out);
  json_decref(out);
  if (*remaining == 0) {
    free(next);
    next = NULL;
  }
  return next;
}

void gq_sim_do_list(struct gq_sim_req *r)
{
  struct gq_sim_params p;
  json_t *all, *items, *out, *it;
  char api[128], rv[32], *cont;
  long remaining;
  size_t i;

  if (parse_params(r, &p) != 0)
    return;
  items = json_array();
  all = gq_sim_list(r->k, *r->ns ? r->ns : NULL);
  json_array_foreach(all, i, it)
    if (selected(it, p.labels, p.fields))
      json_array_append(items, it);
  json_decref(all);
  cont = page(items, p.cont, p.limit, &remaining);
  gq_sim_params_release(&p);
  snprintf(rv, sizeof(rv), "%llu", (unsigned long long)r->s->rv);
  if (r->table) {
    out = gq_sim_table(r->k, items, r->include_object, 1);
  } else {
    const struct gq_sim_kind *lk = r->view ? r->view : r->k;
    json_t *shown = json_array();

    json_array_foreach(items, i, it)
      json_array_append_new(shown, present(r, it));
    out = json_pack("{s:s, s:s, s:{}, s:o}", "kind", lk->list_kind,
                    "apiVersion", gq_sim_kind_api_version(lk, api, sizeof(api)),
                    "metadata", "items", shown);
  }
  json_object_set_new(json_object_get(out, "metadata"), "resourceVersion",
                      json_string(rv));
  if (cont) {
    json_object_set_new(json_object_get(out, "metadata"), "continue",
                        json_string(cont));
    json_object_set_new(json_object_get(out, "metadata"),
                        "remainingItemCount", json_integer(remaining));
  }
  free(cont);
  json_decref(items);
  gq_sim_reply(r->http, 200, out);
}

void gq_sim_do_watch(struct gq_sim_req *r)
{
  struct gq_sim_watch_opts o = {.kind = r->k};
  struct gq_sim_params p;
  char msg[200];

  if (parse_params(r, &p) != 0)
    return;
  o.labels = p.labels; /* the watch takes them */
  o.fields = p.fields;
  o.ns = *r->ns ? r->ns : NULL;
  o.view = r->view;
  o.table = r->table;
  o.include_object = r->include_object;
  o.bookmarks = gq_sim_query_bool(r, "allowWatchBookmarks");
  o.from_rv = p.from_rv;
  o.timeout_s = p.timeout_s;
  if (gq_sim_watch_open(r->s, r->http, &o) == GQ_EGONE) {
    /* 200, then one ERROR event with a 410 Expired Status, then close. */
    struct gq_http_stream *st =
        gq_http_stream_open(r->http, "application/json", NULL, NULL);
    json_t *ev;
    char *line;

    snprintf(msg, sizeof(msg), "too old resource version: %llu (%llu)",
             (unsigned long long)o.from_rv,
             (unsigned long long)r->s->compacted_rv + 1);
    ev = json_pack("{s:s, s:o}", "type", "ERROR", "object",
                   gq_sim_status_json(410, "Expired", msg));
    line = json_dumps(ev, JSON_COMPACT);
    gq_http_stream_write(st, line, strlen(line));
    gq_http_stream_write(st, "\n", 1);
    gq_http_stream_close(st);
    free(line);
    json_decref(ev);
    gq_labelsel_free(o.labels);
    gq_fieldsel_free(o.fields);
  }
}

/* --- write helpers --- */

static json_t *read_body(struct gq_sim_req *r)
{
  size_t len;
  const char *body = gq_http_body(r->http, &len);
  char err[ERRLEN];
  int code;
  json_t *obj = gq_sim_body_decode(r->k, body, len,
                                   gq_http_header(r->http, "Content-Type"),
                                   &code, err, sizeof(err));

  if (!obj)
    gq_sim_status(r->http, code, code == 415 ? "UnsupportedMediaType"
                                             : "BadRequest", err, NULL);
  return obj;
}

/* Answers the unknown fields that pruning removed from the body of r as
 * the query's fieldValidation asks (kube-apiserver's handlers, after
 * KEP-2885): Strict is a 400 BadRequest naming every field ('strict
 * decoding error: unknown field "spec.foo"'), Warn (the default when the
 * parameter is absent, as there; kubectl sends Strict) one Warning header
 * per field, Ignore nothing. Another value is a 400 naming it. Returns -1
 * when it answered (the write stops), else 0. */
static int unknown_fields(struct gq_sim_req *r,
                          const struct gq_schema_report *rep)
{
  const char *fv = q(r, "fieldValidation");
  char err[ERRLEN];
  size_t off;

  if (fv && strcmp(fv, "Strict") && strcmp(fv, "Warn") &&
      strcmp(fv, "Ignore")) {
    snprintf(err, sizeof(err), "fieldValidation: Unsupported value: \"%s\": "
             "supported values: \"Ignore\", \"Strict\", \"Warn\"", fv);
    bad_request(r, err);
    return -1;
  }
  if (!rep->n_unknown || (fv && !strcmp(fv, "Ignore")))
    return 0;
  if (fv && !strcmp(fv, "Strict")) {
    off = (size_t)snprintf(err, sizeof(err), "%s in version \"%s\" cannot "
                           "be handled as a %s: strict decoding error: ",
                           r->k->kind, r->k->version, r->k->kind);
    for (size_t i = 0; i < rep->n_unknown && off < sizeof(err); i++)
      off += (size_t)snprintf(err + off, sizeof(err) - off,
                              "%sunknown field \"%s\"", i ? ", " : "",
                              rep->unknown[i]);
    bad_request(r, err);
    return -1;
  }
  off = strlen(r->warning);
  for (size_t i = 0; i < rep->n_unknown && off < sizeof(r->warning); i++)
    off += (size_t)snprintf(r->warning + off, sizeof(r->warning) - off,
                            "%sunknown field \"%s\"", off ? "\n" : "",
                            rep->unknown[i]);
  return 0;
}

/* Prunes obj by the schema of its kind (the CRD's, or the generated
 * definition of a built-in kind: none without the file, docs/sim.md) and
 * answers what was unknown (unknown_fields). For a CRD the schema's
 * defaults and validation follow (422 with the causes). Returns -1 when
 * it answered. */
static int check_schema(struct gq_sim_req *r, json_t *obj, const char *name)
{
  struct gq_schema_report rep;
  int rc = 0;

  if (r->k->is_crd)
    gq_schema_process(r->k->schema, obj, 1, &rep);
  else if (r->k->builtin_schema)
    gq_schema_prune(r->k->builtin_schema,
                    json_object_get(r->s->openapi, "definitions"), obj, &rep);
  else
    gq_schema_report_init(&rep);
  if (unknown_fields(r, &rep) != 0) {
    rc = -1;
  } else if (rep.n_causes) {
    json_t *causes = json_array();

    for (size_t i = 0; i < rep.n_causes; i++)
      json_array_append_new(
          causes, json_pack("{s:s, s:s, s:s}", "reason", rep.causes[i].reason,
                            "message", rep.causes[i].message, "field",
                            rep.causes[i].field));
    invalid(r, name, causes);
    rc = -1;
  }
  gq_schema_report_release(&rep);
  return rc;
}

/* Runs the CRD schema (prune, default, validate) or, for a built-in kind,
 * pruning by its generated schema and the built-in decoders over obj.
 * Answers and returns -1 when obj is rejected. */
static int validate(struct gq_sim_req *r, json_t *obj, const char *name)
{
  char err[ERRLEN];

  if (gq_sim_name_check(r->k, name, err, sizeof(err)) != 0) {
    invalid_msg(r, name, err);
    return -1;
  }
  if (check_schema(r, obj, name) != 0)
    return -1;
  if (!r->k->is_crd && gq_sim_builtin_check(r->k, obj, err, sizeof(err)) != 0) {
    invalid_msg(r, name, err);
    return -1;
  }
  return 0;
}

static int is_crd_kind(const struct gq_sim_kind *k)
{
  return !strcmp(k->group, "apiextensions.k8s.io") &&
         !strcmp(k->plural, "customresourcedefinitions");
}

/* Registers the kind of a stored CRD and marks it Established. */
static json_t *establish_crd(struct gq_sim_req *r, json_t *crd)
{
  char err[ERRLEN];
  const json_t *names = json_object_get(json_object_get(crd, "spec"), "names");
  char ts[40];

  if (gq_sim_kind_from_crd(r->s, crd, err, sizeof(err)) != 0) {
    invalid_msg(r, gq_meta_str(crd, "name"), err);
    json_decref(crd);
    return NULL;
  }
  gq_time_format(gq_clock_now_ms(), ts, sizeof(ts));
  json_object_set_new(
      crd, "status",
      json_pack("{s:[{s:s, s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s, s:s}],"
                " s:O, s:[s]}",
                "conditions", "type", "NamesAccepted", "status", "True",
                "reason", "NoConflicts", "message", "no conflicts found",
                "lastTransitionTime", ts, "type", "Established", "status",
                "True", "reason", "InitialNamesAccepted", "message",
                "the initial names have been accepted", "lastTransitionTime",
                ts, "acceptedNames", names, "storedVersions", "v1"));
  return crd;
}

/* Sets the fields the server owns on a new object. */
static void init_meta(struct gq_sim_req *r, json_t *obj)
{
  json_t *meta = json_object_get(obj, "metadata");
  char uid[40], ts[40], api[128];

  gq_sim_uuid(uid);
  gq_time_format(gq_clock_now_ms(), ts, sizeof(ts));
  json_object_set_new(obj, "apiVersion",
                      json_string(gq_sim_kind_api_version(r->k, api,
                                                          sizeof(api))));
  json_object_set_new(obj, "kind", json_string(r->k->kind));
  json_object_set_new(meta, "uid", json_string(uid));
  json_object_set_new(meta, "creationTimestamp", json_string(ts));
  json_object_set_new(meta, "generation", json_integer(1));
  json_object_del(meta, "resourceVersion");
  json_object_del(meta, "deletionTimestamp");
  json_object_del(meta, "deletionGracePeriodSeconds");
  json_object_del(meta, "managedFields");
  if (r->k->namespaced)
    json_object_set_new(meta, "namespace", json_string(r->ns));
  else
    json_object_del(meta, "namespace");
}

/* A pod's QoS class (k8s.io/kubernetes/pkg/apis/core/helper/qos):
 * BestEffort without any cpu/memory request or limit, Guaranteed when
 * every container limits cpu and memory and requests equal limits,
 * Burstable otherwise. */
static const char *qos_class(const json_t *pod)
{
  const json_t *cs = json_object_get(json_object_get(pod, "spec"),
                                     "containers"), *c;
  static const char *const res[] = {"cpu", "memory"};
  int any = 0, guaranteed = 1;
  size_t i;

  json_array_foreach((json_t *)cs, i, c) {
    const json_t *rr = json_object_get(c, "resources");
    const json_t *req = json_object_get(rr, "requests");
    const json_t *lim = json_object_get(rr, "limits");

    for (int k = 0; k < 2; k++) {
      const json_t *q = json_object_get(req, res[k]);
      const json_t *l = json_object_get(lim, res[k]);

      any |= q || l;
      if (!l || (q && !json_equal((json_t *)q, (json_t *)l)))
        guaranteed = 0;
    }
  }
  return !any ? "BestEffort" : guaranteed ? "Guaranteed" : "Burstable";
}

/* The status a new object starts with, for kinds the server resets. */
static void init_status(struct gq_sim_req *r, json_t *obj)
{
  if (is_core(r->k, "pods")) {
    json_object_set_new(obj, "status",
                        json_pack("{s:s, s:s}", "phase", "Pending",
                                  "qosClass", qos_class(obj)));
    gq_sim_pod_defaults(obj);
  } else if (is_core(r->k, "namespaces")) {
    json_object_set_new(obj, "status", json_object()); /* phase: defaults */
  } else if (r->k->has_status && !is_core(r->k, "nodes")) {
    /* nodes register with their status. A built-in kind's status is a Go
     * struct, which kube-apiserver always writes ("status": {} when
     * empty); a custom resource has none until one is written. */
    if (r->k->is_crd)
      json_object_del(obj, "status");
    else if (!strcmp(r->k->plural, "poddisruptionbudgets")) /* no omitempty */
      json_object_set_new(obj, "status",
                          json_pack("{s:i, s:i, s:i, s:i}", "currentHealthy",
                                    0, "desiredHealthy", 0,
                                    "disruptionsAllowed", 0, "expectedPods",
                                    0));
    else
      json_object_set_new(obj, "status", json_object());
  }
}

/* Picks metadata.name from name or generateName (5 random [a-z0-9]). */
static int choose_name(struct gq_sim_req *r, json_t *meta)
{
  static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
  const char *name = json_string_value(json_object_get(meta, "name"));
  const char *gen = json_string_value(json_object_get(meta, "generateName"));
  char buf[300], uid[40];

  if (name && *name)
    return 0;
  if (!gen || !*gen) {
    json_t *c = json_pack("[{s:s, s:s, s:s}]", "reason", "FieldValueRequired",
                          "message",
                          "Required value: name or generateName is required",
                          "field", "metadata.name");

    invalid(r, "", c);
    return -1;
  }
  gq_sim_uuid(uid);
  snprintf(buf, sizeof(buf), "%.240s", gen);
  for (int i = 0; i < 5; i++) {
    size_t n = strlen(buf);

    buf[n] = alnum[(unsigned char)uid[i * 3] % (sizeof(alnum) - 1)];
    buf[n + 1] = '\0';
  }
  json_object_set_new(meta, "name", json_string(buf));
  return 0;
}

static int namespace_exists(struct gq_sim_req *r)
{
  struct gq_sim_kind *nsk = gq_sim_kind_find(r->s, "", "v1", "namespaces");
  const json_t *ns = r->k->namespaced ? gq_sim_get(nsk, NULL, r->ns) : NULL;
  char msg[1024];

  if (ns && json_object_get(json_object_get(ns, "metadata"),
                            "deletionTimestamp")) {
    snprintf(msg, sizeof(msg), "%s \"%s\" is forbidden: unable to create "
             "new content in namespace %s because it is being terminated",
             r->k->plural, r->name, r->ns);
    gq_sim_status(r->http, 403, "Forbidden", msg, NULL);
    return 0;
  }
  if (!r->k->namespaced || ns)
    return 1;
  snprintf(msg, sizeof(msg), "namespaces \"%s\" not found", r->ns);
  gq_sim_status(r->http, 404, "NotFound", msg,
                json_pack("{s:s, s:s}", "name", r->ns, "kind", "namespaces"));
  return 0;
}

static int dry_run(const struct gq_sim_req *r)
{
  const char *d = q(r, "dryRun");

  return d && strcmp(d, "All") == 0;
}

/* --- field ownership (metadata.managedFields; sim/fields.h) --- */

/* 1 if fm is a fieldManager the apiserver takes (ValidateFieldManager):
 * at most 128 bytes of printable UTF-8; else the detail in detail. */
static int manager_ok(const char *fm, const char **reason, char *detail,
                      size_t len)
{
  json_t *t = json_string(fm);

  json_decref(t);
  if (strlen(fm) > 128) {
    *reason = "FieldValueTooLong";
    snprintf(detail, len, "Too long: may not be more than 128 bytes");
    return 0;
  }
  for (const char *p = fm; *p; p++)
    if (!t || (unsigned char)*p < 0x20 || *p == 0x7f) {
      *reason = "FieldValueInvalid";
      snprintf(detail, len, "Invalid value: \"%.128s\": invalid character "
               "(at position %d)", t ? fm : "", (int)(p - fm));
      return 0;
    }
  return 1;
}

/* Checks the options of a write as the apiserver's Validate*Options do
 * (opts "CreateOptions", "UpdateOptions" or "PatchOptions"): a
 * fieldManager of at most 128 printable bytes; for a patch, apply needs
 * a fieldManager and force belongs to apply only. Answers 422 and returns
 * 1 when they are bad. */
static int options_bad(struct gq_sim_req *r, const char *opts, int apply)
{
  const char *fm = q(r, "fieldManager");
  const char *field = "fieldManager", *reason = "FieldValueRequired";
  char detail[400], msg[600];

  int bad = fm && *fm && !manager_ok(fm, &reason, detail, sizeof(detail));

  if (!bad && apply && (!fm || !*fm)) {
    snprintf(detail, sizeof(detail),
             "Required value: is required for apply patch");
    bad = 1;
  }
  if (!bad && !apply && strcmp(opts, "PatchOptions") == 0 && q(r, "force")) {
    field = "force";
    reason = "FieldValueForbidden";
    snprintf(detail, sizeof(detail),
             "Forbidden: may not be specified for non-apply patch");
    bad = 1;
  }
  if (!bad)
    return 0;
  snprintf(msg, sizeof(msg), "%s.meta.k8s.io \"\" is invalid: %s: %s", opts,
           field, detail);
  gq_sim_status(r->http, 422, "Invalid", msg,
                json_pack("{s:s, s:s, s:s, s:[{s:s, s:s, s:s}]}", "name", "",
                          "group", "meta.k8s.io", "kind", opts, "causes",
                          "reason", reason, "message", detail, "field",
                          field));
  return 1;
}


/* Buffers behind a gq_fields_op. */
struct op_bufs {
  char manager[160], api[128], time[40];
};

/* The managedFields entry r's write makes: the fieldManager parameter,
 * else the User-Agent's program (kube-apiserver's prefixFromUserAgent). */
static void fields_op(const struct gq_sim_req *r, int apply,
                      struct gq_fields_op *op, struct op_bufs *b)
{
  gq_fields_manager(q(r, "fieldManager"),
                    gq_http_header(r->http, "User-Agent"), b->manager,
                    sizeof(b->manager));
  gq_time_format(gq_clock_now_ms(), b->time, sizeof(b->time));
  op->manager = b->manager;
  op->apply = apply;
  op->api_version = gq_sim_kind_api_version(r->k, b->api, sizeof(b->api));
  op->subresource = strcmp(r->sub, "status") == 0 ? "status" : "";
  op->time = b->time;
}

/* Strips from set what r's kind and subresource never record. */
static void fields_strip(const struct gq_sim_req *r, json_t *set)
{
  gq_fields_strip(set, strcmp(r->sub, "status") == 0,
                  r->k->has_status && !is_core(r->k, "namespaces"));
}

/* What a change from cur (NULL: a create) to next added or modified, and
 * removed, as r records it. A built-in object starts from its Go type's
 * zero value, whose spec and status exist (so they are never "added"). */
static void fields_diff(const struct gq_sim_req *r, const json_t *cur,
                        const json_t *next, json_t **changed,
                        json_t **removed)
{
  int status_sub = strcmp(r->sub, "status") == 0;
  int reset = r->k->has_status && !is_core(r->k, "namespaces");
  json_t *a, *b;

  if (!cur && !r->k->is_crd)
    a = json_pack("{s:{}, s:{}, s:{}}", "metadata", "spec", "status");
  else
    a = cur ? json_copy((json_t *)cur) : json_object(); /* shallow */
  b = json_copy((json_t *)next);
  /* Compare only what can be owned: a status write owns only status, a
   * main-resource write of a kind with /status never does (the status
   * patches a controller sends stay cheap). */
  if (status_sub) {
    json_t *sa = json_object(), *sb = json_object();

    if (json_object_get(a, "status"))
      json_object_set(sa, "status", json_object_get(a, "status"));
    if (json_object_get(b, "status"))
      json_object_set(sb, "status", json_object_get(b, "status"));
    json_decref(a);
    json_decref(b);
    a = sa;
    b = sb;
  } else if (reset) {
    json_object_del(a, "status");
    json_object_del(b, "status");
  }
  gq_fields_diff(a, b, changed, removed);
  json_decref(a);
  json_decref(b);
  fields_strip(r, *changed);
  fields_strip(r, *removed);
}

/* Gives next managedFields mf (taken), or none when mf is empty. */
static void set_fields(json_t *next, json_t *mf)
{
  if (json_array_size(mf))
    json_object_set_new(json_object_get(next, "metadata"), "managedFields",
                        mf);
  else
    json_decref(mf);
}

/* Records r's write of next (cur: the stored object, NULL on create) in
 * next's metadata.managedFields; applied is the set an Apply owns (NULL
 * for an Update). given: the managedFields the request's object carries
 * (NULL if none); on the main resource they replace cur's before this
 * write is recorded, as the apiserver lets a client rewrite them (kubectl
 * does, migrating client-side apply's ownership; [] and [{}] clear them;
 * decodeLiveOrNew). */
static void record_fields(struct gq_sim_req *r, const json_t *cur,
                          json_t *next, const json_t *applied,
                          const json_t *given)
{
  const json_t *managed = cur ? json_object_get(json_object_get(cur,
                                                                "metadata"),
                                                "managedFields")
                              : NULL;
  struct gq_fields_op op;
  struct op_bufs b;
  json_t *changed, *removed, *mf;

  if (json_is_array(given) && strcmp(r->sub, "status") != 0)
    managed = json_array_size(given) ? given : NULL; /* [] resets too */
  fields_op(r, applied != NULL, &op, &b);
  if (!cur && !applied) { /* a create: one pass over next */
    mf = gq_fields_record_create(next, &op, !r->k->is_crd,
                                 r->k->has_status &&
                                     !is_core(r->k, "namespaces"));
    set_fields(next, mf);
    return;
  }
  fields_diff(r, cur, next, &changed, &removed);
  mf = gq_fields_record(managed, &op, changed, removed, applied);
  set_fields(next, mf);
  json_decref(changed);
  json_decref(removed);
}

/* A write that changes only managedFields' times changes nothing
 * (kube-apiserver keeps the old times): gives next cur's managedFields
 * then. */
static void keep_field_times(const json_t *cur, json_t *next)
{
  json_t *cm = json_object_get(cur, "metadata");
  json_t *nm = json_object_get(next, "metadata");
  json_t *was = json_incref(json_object_get(nm, "managedFields"));

  if (!gq_fields_same_but_time(json_object_get(cm, "managedFields"), was)) {
    json_decref(was);
    return;
  }
  if (json_object_get(cm, "managedFields"))
    json_object_set(nm, "managedFields", json_object_get(cm, "managedFields"));
  else
    json_object_del(nm, "managedFields");
  if (!json_equal(next, (json_t *)cur) && was)
    json_object_set(nm, "managedFields", was);
  json_decref(was);
}

/* Answers 409 AlreadyExists and returns 1 if r's object exists. */
static int already_exists(struct gq_sim_req *r)
{
  char res[200], msg[600];

  if (!gq_sim_get(r->k, r->ns, r->name))
    return 0;
  gq_sim_resname(r->k, res, sizeof(res));
  snprintf(msg, sizeof(msg), "%s \"%s\" already exists", res, r->name);
  gq_sim_status(r->http, 409, "AlreadyExists", msg,
                json_pack("{s:s, s:s, s:s}", "name", r->name, "group",
                          r->k->group, "kind", r->k->plural));
  return 1;
}

static void create_admitted(struct gq_sim_req *r, json_t *obj, void *arg);

/* Creates obj (taken); applied: the set an Apply owns, or NULL for an
 * Update. Answers 201, or an error. */
static void create_obj(struct gq_sim_req *r, json_t *obj,
                       const json_t *applied)
{
  json_t *meta = json_object_get(obj, "metadata");
  const char *bns;

  if (!json_is_object(obj) || !json_is_object(meta)) {
    json_decref(obj);
    bad_request(r, "the body must be an object with metadata");
    return;
  }
  bns = json_string_value(json_object_get(meta, "namespace"));
  if (r->k->namespaced && bns && *bns && strcmp(bns, r->ns) != 0) {
    json_decref(obj);
    bad_request(r, "the namespace of the provided object does not match the "
                   "namespace sent on the request");
    return;
  }
  if (choose_name(r, meta) != 0 || !namespace_exists(r)) {
    json_decref(obj);
    return;
  }
  snprintf(r->name, sizeof(r->name), "%s", gq_meta_str(obj, "name"));
  if (already_exists(r)) {
    json_decref(obj);
    return;
  }
  init_meta(r, obj);
  init_status(r, obj);
  if (gq_sim_is_job(r->k))
    gq_sim_job_defaults(obj);
  if (r->k->defaults)
    r->k->defaults(r->s, obj);
  if (validate(r, obj, r->name) != 0) {
    json_decref(obj);
    return;
  }
  record_fields(r, NULL, obj, applied, NULL);
  gq_sim_admit(r, "CREATE", NULL, obj, create_admitted, NULL);
}

/* Stores a created object (taken) that admission let through: decoded
 * again if a webhook changed it (r->mutated), then 201. */
static void create_admitted(struct gq_sim_req *r, json_t *obj, void *arg)
{
  const json_t *stored;

  (void)arg;
  if (already_exists(r) || (r->mutated && validate(r, obj, r->name) != 0)) {
    json_decref(obj);
    return;
  }
  if (is_crd_kind(r->k) && !dry_run(r) && !(obj = establish_crd(r, obj)))
    return;
  if (dry_run(r)) {
    reply_obj(r, 201, obj);
    json_decref(obj);
    return;
  }
  stored = gq_sim_put(r->s, r->k, obj);
  reply_obj(r, 201, stored);
}

/* A body sent to a view, converted to the stored form (taken). */
static json_t *absorb(const struct gq_sim_req *r, json_t *body)
{
  json_t *out;

  if (!r->view || !body)
    return body;
  out = r->view->absorb(body);
  json_decref(body);
  return out;
}

void gq_sim_do_create(struct gq_sim_req *r)
{
  json_t *obj;

  if (options_bad(r, "CreateOptions", 0))
    return;
  obj = absorb(r, read_body(r));

  if (obj)
    create_obj(r, obj, NULL);
}

/* Is everything but metadata and status equal? (generation bumps.) */
static int spec_equal(const json_t *a, const json_t *b)
{
  json_t *x = json_copy((json_t *)a), *y = json_copy((json_t *)b);
  int eq;

  json_object_del(x, "metadata");
  json_object_del(x, "status");
  json_object_del(y, "metadata");
  json_object_del(y, "status");
  eq = json_equal(x, y);
  json_decref(x);
  json_decref(y);
  return eq;
}

/* Carries the server-owned metadata of cur into next. */
static void keep_meta(const json_t *cur, json_t *next)
{
  static const char *const owned[] = {"uid", "creationTimestamp",
                                      "deletionTimestamp",
                                      "deletionGracePeriodSeconds",
                                      "namespace", "name", "generation", NULL};
  const json_t *cm = json_object_get(cur, "metadata");
  json_t *nm = json_object_get(next, "metadata");

  for (int i = 0; owned[i]; i++) {
    const json_t *v = json_object_get(cm, owned[i]);

    if (v)
      json_object_set(nm, owned[i], (json_t *)v);
    else
      json_object_del(nm, owned[i]);
  }
  json_object_set(next, "apiVersion", json_object_get(cur, "apiVersion"));
  json_object_set(next, "kind", json_object_get(cur, "kind"));
}

/* Builds the stored form of an update: status from cur on the main
 * resource, only the status from next on /status. Takes next. */
static json_t *merge_update(struct gq_sim_req *r, const json_t *cur,
                            json_t *next)
{
  json_t *out;

  if (!strcmp(r->sub, "status")) {
    out = gq_sim_copy(cur);
    if (json_object_get(next, "status"))
      json_object_set(out, "status", json_object_get(next, "status"));
    else
      json_object_del(out, "status");
    json_decref(next);
    return out;
  }
  if (!json_is_object(json_object_get(next, "metadata")))
    json_object_set_new(next, "metadata", json_object());
  if (r->k->has_status && !is_core(r->k, "namespaces")) {
    if (json_object_get(cur, "status"))
      json_object_set(next, "status", json_object_get(cur, "status"));
    else
      json_object_del(next, "status");
  }
  return next;
}

/* After an update: an object being deleted whose finalizers are gone is
 * removed now (pods wait for their grace period instead). */
static int finalized(const struct gq_sim_req *r, const json_t *obj)
{
  const json_t *meta = json_object_get(obj, "metadata");

  return json_object_get(meta, "deletionTimestamp") &&
         json_array_size(json_object_get(meta, "finalizers")) == 0 &&
         !is_core(r->k, "pods");
}

/* Pod scheduling gates may only be removed by an update (KEP-3521;
 * pkg/apis/core/validation ValidatePodUpdate). The other scheduling
 * directives a gated pod may change (KEP-3838) need no check: the sim
 * does not make the pod spec immutable. Answers 422 and returns -1 when
 * next adds a gate. */
static int check_gates(struct gq_sim_req *r, const json_t *cur,
                       const json_t *next)
{
  const json_t *gs = json_object_get(json_object_get(next, "spec"),
                                     "schedulingGates"), *g;
  char msg[600];
  size_t i;

  if (!is_core(r->k, "pods") || *r->sub)
    return 0;
  json_array_foreach((json_t *)gs, i, g) {
    const char *n = json_string_value(json_object_get(g, "name"));

    if (!n || gq_pod_has_gate(cur, n))
      continue;
    snprintf(msg, sizeof(msg), "Forbidden: only deletion is allowed, but "
             "found new scheduling gate '%s'", n);
    invalid(r, r->name,
            json_pack("[{s:s, s:s, s:s}]", "reason", "FieldValueForbidden",
                      "message", msg, "field", "spec.schedulingGates"));
    return -1;
  }
  return 0;
}

static void update_admitted(struct gq_sim_req *r, json_t *next, void *arg);

/* A Job's template rule (jobs.c); answers 422 and returns -1 when broken. */
static int check_job(struct gq_sim_req *r, const json_t *cur,
                     const json_t *next)
{
  char err[ERRLEN];

  if (!gq_sim_is_job(r->k) || *r->sub ||
      gq_sim_job_check_update(cur, next, err, sizeof(err)) == 0)
    return 0;
  invalid_msg(r, r->name, err);
  return -1;
}

/* Defaults on update, as kube-apiserver defaults every body it decodes:
 * the kind's create-time defaults (a Service first keeps the IPs and node
 * ports it was given at create, gq_sim_service_keep). Not on /status, and
 * not for Jobs (their selector is the create's). */
static void update_defaults(struct gq_sim_req *r, const json_t *cur,
                            json_t *next)
{
  if (*r->sub)
    return;
  if (is_core(r->k, "pods")) {
    gq_sim_pod_defaults(next);
    return;
  }
  if (is_core(r->k, "services"))
    gq_sim_service_keep(cur, next);
  if (r->k->defaults)
    r->k->defaults(r->s, next);
}

/* Stores next (taken) as the new state of cur, with the API server's
 * update rules; applied as for create_obj(). Answers 200 or an error. */
static void commit_update(struct gq_sim_req *r, const json_t *cur,
                          json_t *next, const json_t *applied)
{
  const char *want_rv, *cur_rv = gq_meta_str(cur, "resourceVersion");
  json_t *given;

  next = merge_update(r, cur, next);
  update_defaults(r, cur, next);
  want_rv = gq_meta_str(next, "resourceVersion");
  if (*want_rv && strcmp(want_rv, cur_rv) != 0) {
    json_decref(next);
    conflict(r, r->name);
    return;
  }
  if (check_gates(r, cur, next) != 0 || check_job(r, cur, next) != 0) {
    json_decref(next);
    return;
  }
  keep_meta(cur, next);
  json_object_set_new(json_object_get(next, "metadata"), "resourceVersion",
                      json_string(cur_rv));
  given = json_incref(json_object_get(json_object_get(next, "metadata"),
                                      "managedFields"));
  json_object_del(json_object_get(next, "metadata"), "managedFields");
  /* Prune and default first: a change made only of unknown fields is no
   * change at all (same resourceVersion and generation). */
  if (validate(r, next, r->name) != 0) {
    json_decref(given);
    json_decref(next);
    return;
  }
  record_fields(r, cur, next, applied, given);
  json_decref(given);
  gq_sim_admit(r, "UPDATE", cur, next, update_admitted, NULL);
}

/* Stores an update (next, taken) that admission let through, unless the
 * object changed or went meanwhile (409, 404: the apiserver's optimistic
 * concurrency at storage). Answers 200 or an error. */
static void update_admitted(struct gq_sim_req *r, json_t *next, void *arg)
{
  const json_t *cur = gq_sim_get(r->k, r->ns, r->name), *stored;
  long long gen;

  (void)arg;
  if (!cur || strcmp(gq_meta_str(cur, "resourceVersion"),
                     gq_meta_str(next, "resourceVersion"))) {
    json_decref(next);
    if (cur)
      conflict(r, r->name);
    else
      not_found(r, r->name);
    return;
  }
  if (r->mutated && validate(r, next, r->name) != 0) {
    json_decref(next);
    return;
  }
  gen = json_integer_value(json_object_get(json_object_get(cur, "metadata"),
                                           "generation"));
  if (!spec_equal(cur, next))
    json_object_set_new(json_object_get(next, "metadata"), "generation",
                        json_integer(gen + 1));
  keep_field_times(cur, next);
  if (json_equal(next, (json_t *)cur) || dry_run(r)) {
    /* No change: same resourceVersion, no event (kubectl's "no change"). */
    reply_obj(r, 200, json_equal(next, (json_t *)cur) ? cur : next);
    json_decref(next);
    return;
  }
  if (is_crd_kind(r->k) && !(next = establish_crd(r, next)))
    return;
  stored = gq_sim_put(r->s, r->k, next);
  reply_obj(r, 200, stored);
  if (finalized(r, stored))
    gq_sim_remove(r->s, r->k, r->ns, r->name, 0);
}

void gq_sim_do_update(struct gq_sim_req *r)
{
  const json_t *cur = gq_sim_get(r->k, r->ns, r->name);
  json_t *next;
  const char *bname;

  if (options_bad(r, "UpdateOptions", 0))
    return;
  next = absorb(r, read_body(r));

  if (!next)
    return;
  bname = gq_meta_str(next, "name");
  if (*bname && strcmp(bname, r->name) != 0) {
    json_decref(next);
    bad_request(r, "the name of the object does not match the name on the "
                   "URL");
    return;
  }
  if (!cur) {
    json_decref(next);
    not_found(r, r->name);
    return;
  }
  commit_update(r, cur, next, NULL);
}

/* Applies the request's patch to cur; answers and returns NULL on error. */
static json_t *apply_patch(struct gq_sim_req *r, const json_t *cur,
                           const json_t *patch, const char *ct)
{
  char err[ERRLEN];
  json_t *out = NULL;
  int rc;

  if (strstr(ct, "application/json-patch+json"))
    rc = gq_patch_json(cur, patch, &out, err, sizeof(err));
  else if (strstr(ct, "application/strategic-merge-patch+json"))
    rc = gq_patch_strategic(cur, patch, &out, err, sizeof(err));
  else
    rc = gq_patch_merge(cur, patch, &out, err, sizeof(err));
  if (rc == GQ_EINVAL) {
    bad_request(r, err);
    return NULL;
  }
  if (rc != 0) {
    json_t *c = json_pack("[{s:s, s:s, s:s}]", "reason", "FieldValueInvalid",
                          "message", err, "field", "");

    invalid(r, r->name, c);
    return NULL;
  }
  return out;
}

/* The fields manager op applied last and applies no longer, that no other
 * manager owns, go from next (structured-merge-diff's prune). */
static void apply_prune(const json_t *managed, const struct gq_fields_op *op,
                        const json_t *applied, json_t *next)
{
  json_t *last = gq_fields_owned(managed, op), *keep;

  if (!last)
    return;
  keep = gq_fields_others(managed, op);
  gq_fields_union(keep, applied);
  gq_fields_subtract(last, keep);
  gq_fields_remove(next, last, keep);
  json_decref(keep);
  json_decref(last);
}

/* The fields kubectl's last client-side apply set (its
 * last-applied-configuration annotation) that still hold the values it
 * set: manager "kubectl" may take these over without a conflict, the
 * upgrade from client-side to server-side apply (the apiserver's
 * lastAppliedManager). New set, or NULL when cur has no annotation. */
static json_t *csa_fields(const json_t *cur)
{
  const char *la = json_string_value(json_object_get(
      json_object_get(json_object_get(cur, "metadata"), "annotations"),
      "kubectl.kubernetes.io/last-applied-configuration"));
  json_t *obj = la ? json_loads(la, 0, NULL) : NULL, *set, *changed, *removed;

  if (!json_is_object(obj)) {
    json_decref(obj);
    return NULL;
  }
  set = gq_fields_of_config(obj);
  gq_fields_diff(obj, cur, &changed, &removed);
  gq_fields_subtract(set, changed);
  json_decref(changed);
  json_decref(removed);
  json_decref(obj);
  return set;
}

/* Answers 409 and returns 1 when r's Apply of next over cur changes a
 * field another manager owns and force is not set. */
static int apply_conflicts(struct gq_sim_req *r, const json_t *cur,
                           const json_t *next, const struct gq_fields_op *op)
{
  const json_t *managed = json_object_get(json_object_get(cur, "metadata"),
                                          "managedFields");
  json_t *changed, *removed, *conflicts, *causes, *csa;
  char msg[2048];

  fields_diff(r, cur, next, &changed, &removed);
  conflicts = gq_fields_conflicts(managed, op, changed);
  if (conflicts && strcmp(op->manager, "kubectl") == 0 &&
      (csa = csa_fields(cur))) {
    gq_fields_subtract(changed, csa);
    json_decref(csa);
    json_decref(conflicts);
    conflicts = gq_fields_conflicts(managed, op, changed);
  }
  json_decref(changed);
  json_decref(removed);
  if (!conflicts || gq_sim_query_bool(r, "force")) {
    json_decref(conflicts);
    return 0;
  }
  causes = gq_fields_conflict_causes(conflicts, msg, sizeof(msg));
  json_decref(conflicts);
  gq_sim_status(r->http, 409, "Conflict", msg,
                json_pack("{s:o}", "causes", causes));
  return 1;
}

/* Server-side apply of config (taken): creates the object when absent;
 * otherwise merges config into cur as strategic merge patch does (keyed
 * lists by key, so that ownership and merging agree), prunes what this
 * manager no longer applies, and refuses with 409 a change to a field
 * another manager owns unless force=true. The applier then owns exactly
 * config's fields (docs/sim.md "Server-side apply"). */
static void apply_obj(struct gq_sim_req *r, const json_t *cur, json_t *config)
{
  struct gq_fields_op op;
  struct op_bufs b;
  json_t *applied, *shown, *next;

  if (!json_is_object(config)) {
    json_decref(config);
    bad_request(r, "the body must be an object");
    return;
  }
  applied = gq_fields_of_config(config);
  fields_strip(r, applied);
  if (!cur) {
    if (!json_is_object(json_object_get(config, "metadata")))
      json_object_set_new(config, "metadata", json_object());
    json_object_set_new(json_object_get(config, "metadata"), "name",
                        json_string(r->name));
    create_obj(r, absorb(r, config), applied);
    json_decref(applied);
    return;
  }
  fields_op(r, 1, &op, &b);
  shown = present(r, cur);
  next = absorb(r, apply_patch(r, shown, config,
                               "application/strategic-merge-patch+json"));
  json_decref(shown);
  json_decref(config);
  if (next)
    apply_prune(json_object_get(json_object_get(cur, "metadata"),
                                "managedFields"),
                &op, applied, next);
  if (next && apply_conflicts(r, cur, next, &op)) {
    json_decref(next);
    next = NULL;
  }
  if (next)
    commit_update(r, cur, next, applied);
  json_decref(applied);
}

void gq_sim_do_patch(struct gq_sim_req *r)
{
  const char *ct = gq_http_header(r->http, "Content-Type");
  const json_t *cur = gq_sim_get(r->k, r->ns, r->name);
  json_t *patch, *next, *shown;

  if (!ct)
    ct = "application/merge-patch+json";
  if (strstr(ct, "strategic-merge-patch") && r->k->is_crd) {
    gq_sim_status(r->http, 415, "UnsupportedMediaType",
                  "the body of the request was in an unknown format - "
                  "accepted media types include: application/json-patch+json, "
                  "application/merge-patch+json, application/apply-patch+yaml",
                  NULL);
    return;
  }
  if (options_bad(r, "PatchOptions", strstr(ct, "apply-patch") != NULL) ||
      !(patch = read_body(r)))
    return;
  if (strstr(ct, "apply-patch")) {
    apply_obj(r, cur, patch);
    return;
  }
  if (!cur) {
    json_decref(patch);
    not_found(r, r->name);
    return;
  }
  /* A view is patched as it is shown, then stored converted back. */
  shown = present(r, cur);
  next = absorb(r, apply_patch(r, shown, patch, ct));
  json_decref(shown);
  json_decref(patch);
  if (next)
    commit_update(r, cur, next, NULL);
}

/* --- delete --- */

struct del_opts {
  int64_t grace_s; /* -1: the object's default */
  int orphan;
  const char *uid, *rv; /* preconditions, or NULL */
  json_t *body;
};

/* DeleteOptions from the JSON body (a protobuf body is ignored, as the
 * real server would decode it: kubectl-api-contract §0.12) and query. */
static void delete_opts(struct gq_sim_req *r, struct del_opts *o)
{
  size_t len;
  const char *body = gq_http_body(r->http, &len);
  const char *g = q(r, "gracePeriodSeconds"), *pp = q(r, "propagationPolicy");
  const json_t *pre;

  memset(o, 0, sizeof(*o));
  o->grace_s = -1;
  if (len && body[0] == '{')
    o->body = json_loadb(body, len, 0, NULL);
  if (json_is_integer(json_object_get(o->body, "gracePeriodSeconds")))
    o->grace_s = json_integer_value(json_object_get(o->body,
                                                    "gracePeriodSeconds"));
  if (g && *g)
    o->grace_s = strtoll(g, NULL, 10);
  if (!pp)
    pp = json_string_value(json_object_get(o->body, "propagationPolicy"));
  if (!pp && json_is_false(json_object_get(o->body, "orphanDependents")))
    pp = "Background";
  o->orphan = pp && strcmp(pp, "Orphan") == 0;
  pre = json_object_get(o->body, "preconditions");
  o->uid = json_string_value(json_object_get(pre, "uid"));
  o->rv = json_string_value(json_object_get(pre, "resourceVersion"));
}

/* A deleted CRD takes its custom resources and its kind with it. */
static void drop_crd_objects(struct gq_sim *s, const json_t *crd)
{
  const json_t *spec = json_object_get(crd, "spec");
  const char *group = json_string_value(json_object_get(spec, "group"));
  const char *plural = json_string_value(
      json_object_get(json_object_get(spec, "names"), "plural"));

  for (struct gq_sim_kind *k = s->kinds; k; k = k->next) {
    json_t *items, *it;
    size_t i;

    if (!k->is_crd || k->dropped || !group || !plural ||
        strcmp(k->group, group) || strcmp(k->plural, plural))
      continue;
    items = gq_sim_list(k, NULL);
    json_array_foreach(items, i, it)
      gq_sim_remove(s, k, gq_meta_str(it, "namespace"), gq_meta_str(it, "name"), 1);
    json_decref(items);
  }
  gq_sim_kind_drop_crd(s, gq_meta_str(crd, "name"));
}

static void delete_admitted(struct gq_sim_req *r, json_t *none, void *arg);

void gq_sim_do_delete(struct gq_sim_req *r)
{
  const json_t *cur = gq_sim_get(r->k, r->ns, r->name);
  struct del_opts o;

  if (!cur) {
    not_found(r, r->name);
    return;
  }
  delete_opts(r, &o);
  if ((o.uid && strcmp(o.uid, gq_meta_str(cur, "uid"))) ||
      (o.rv && strcmp(o.rv, gq_meta_str(cur, "resourceVersion")))) {
    json_decref(o.body);
    conflict(r, r->name);
    return;
  }
  json_decref(o.body);
  r->del_grace_s = o.grace_s;
  r->del_orphan = o.orphan;
  gq_sim_admit(r, "DELETE", cur, NULL, delete_admitted, NULL);
}

/* Deletes r's object once admission let the delete through. */
static void delete_admitted(struct gq_sim_req *r, json_t *none, void *arg)
{
  const json_t *cur = gq_sim_get(r->k, r->ns, r->name);
  json_t *last;

  (void)arg;
  json_decref(none);
  if (!cur) {
    not_found(r, r->name);
    return;
  }
  if (dry_run(r)) {
    reply_obj(r, 200, cur);
    return;
  }
  last = gq_sim_delete(r->s, r->k, r->ns, r->name, r->del_grace_s,
                       r->del_orphan);
  if (is_crd_kind(r->k) && !gq_sim_get(r->k, NULL, r->name))
    drop_crd_objects(r->s, last);
  reply_obj(r, 200, last);
  json_decref(last);
}

void gq_sim_do_delete_collection(struct gq_sim_req *r)
{
  struct gq_sim_params p;
  struct del_opts o;
  json_t *items, *it, *out;
  char api[128];
  size_t i;

  if (parse_params(r, &p) != 0)
    return;
  out = json_array();
  delete_opts(r, &o);
  items = gq_sim_list(r->k, *r->ns ? r->ns : NULL);
  json_array_foreach(items, i, it) {
    if (selected(it, p.labels, p.fields))
      json_array_append_new(out, gq_sim_delete(r->s, r->k,
                                               gq_meta_str(it, "namespace"),
                                               gq_meta_str(it, "name"),
                                               o.grace_s, o.orphan));
  }
  json_decref(items);
  json_decref(o.body);
  gq_sim_params_release(&p);
  gq_sim_reply(r->http, 200,
               json_pack("{s:s, s:s, s:{}, s:o}", "kind", r->k->list_kind,
                         "apiVersion",
                         gq_sim_kind_api_version(r->k, api, sizeof(api)),
                         "metadata", "items", out));
}
