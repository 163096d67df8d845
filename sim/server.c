/* sim/server.c - gpuq-sim's HTTP front: routing of Kubernetes API paths,
 * bearer-token authentication, fault injection and the other /sim/v1
 * endpoints, start-up and shutdown. */
#include "sim/server.h"

#include "api/hclient.h"
#include "api/yaml.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/log.h"
#include "decide/names.h"
#include "sim/engine.h"
#include "sim/replay.h"
#include "sim/report.h"
#include "sim/request.h"
#include "sim/schema.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const struct gq_lc lc_http = {"sim", "serve", NULL};

static const char *or(const char *a, const char *b)
{
  return a ? a : b;
}

int gq_sim_split_path(const char *path, char seg[GQ_SIM_MAX_SEGS][256])
{
  int n = 0;

  while (*path) {
    const char *slash;
    size_t len;

    while (*path == '/')
      path++;
    if (!*path)
      break;
    if (n == GQ_SIM_MAX_SEGS)
      return -1;
    slash = strchr(path, '/');
    len = slash ? (size_t)(slash - path) : strlen(path);
    if (len >= 256)
      return -1;
    memcpy(seg[n], path, len);
    seg[n++][len] = '\0';
    path += len;
  }
  return n;
}

int gq_sim_query_bool(const struct gq_sim_req *r, const char *key)
{
  const char *v = gq_http_query(r->http, key);
  int b = 0;

  return v && gq_parse_bool(v, &b) == 0 && b;
}

/* The verb of a routed request, as fault injection names them. */
static const char *verb_of(const struct gq_sim_req *r)
{
  int watch = gq_sim_query_bool(r, "watch");

  if (!strcmp(r->method, "GET"))
    return *r->name ? "get" : watch ? "watch" : "list";
  if (!strcmp(r->method, "POST"))
    return *r->sub ? r->sub : "create";
  if (!strcmp(r->method, "PUT"))
    return "update";
  if (!strcmp(r->method, "PATCH"))
    return "patch";
  if (!strcmp(r->method, "DELETE"))
    return *r->name ? "delete" : "deletecollection";
  return "";
}

/* Finds the first injected fault matching the request and uses up one of
 * its matches. Returns 1 with its status (0 = none) and delay. */
static int match_fault(struct gq_sim_req *r, const char *verb, int *status,
                       uint64_t *delay_ms)
{
  struct gq_sim *s = r->s;

  for (size_t i = 0; i < s->n_faults; i++) {
    struct gq_sim_fault *f = &s->faults[i];

    if ((strcmp(f->verb, "*") && strcmp(f->verb, verb)) ||
        (strcmp(f->resource, "*") && strcmp(f->resource, r->k->plural)))
      continue;
    *status = f->status;
    *delay_ms = f->delay_ms;
    if (f->count > 0 && --f->count == 0)
      s->faults[i] = s->faults[--s->n_faults];
    return 1;
  }
  return 0;
}

/* Answers with an injected error, after its delay if it has one. */
static void inject_error(struct gq_sim_req *r, const char *verb, int status,
                         uint64_t delay_ms)
{
  json_t *st;
  char msg[200], *body;

  snprintf(msg, sizeof(msg), "injected fault: %d for %s %s", status, verb,
           r->k->plural);
  st = gq_sim_status_json(status, gq_sim_reason_for(status), msg);
  body = json_dumps(st, JSON_COMPACT);
  if (delay_ms)
    gq_http_respond_later(r->http, delay_ms, (unsigned)status,
                          "application/json", body, strlen(body));
  else
    gq_http_respond(r->http, (unsigned)status, "application/json", body,
                    strlen(body), NULL);
  free(body);
  json_decref(st);
}

static void dispatch(struct gq_sim_req *r, const char *verb)
{
  if (!strcmp(verb, "get"))
    gq_sim_do_get(r);
  else if (!strcmp(verb, "list"))
    gq_sim_do_list(r);
  else if (!strcmp(verb, "watch"))
    gq_sim_do_watch(r);
  else if (!strcmp(verb, "create"))
    gq_sim_do_create(r);
  else if (!strcmp(verb, "eviction"))
    gq_sim_do_eviction(r);
  else if (!strcmp(verb, "binding"))
    gq_sim_do_binding(r);
  else if (!strcmp(verb, "update"))
    gq_sim_do_update(r);
  else if (!strcmp(verb, "patch"))
    gq_sim_do_patch(r);
  else if (!strcmp(verb, "delete"))
    gq_sim_do_delete(r);
  else if (!strcmp(verb, "deletecollection"))
    gq_sim_do_delete_collection(r);
  else
    gq_sim_status(r->http, 405, "MethodNotAllowed",
                  "the server does not allow this method on the requested "
                  "resource", NULL);
}

/* A request delayed by fault injection is served when its timer fires:
 * the handler runs then, against the state of that moment. */
struct delayed_req {
  uv_timer_t timer;
  struct gq_sim_req r;
  char verb[32];
};

static void on_delayed_closed(uv_handle_t *h)
{
  free(h->data);
}

static void on_delayed(uv_timer_t *t)
{
  struct delayed_req *d = t->data;

  dispatch(&d->r, d->verb);
  uv_close((uv_handle_t *)t, on_delayed_closed);
}

/* POST /sim/v1/nodes/NAME/ACTION [{"key","value","effect"}]: a node event
 * on demand (engine.h, gq_sim_node_event). */
static void node_action(struct gq_sim *s, struct gq_http_req *req,
                        const char *rest)
{
  const char *slash = strchr(rest, '/');
  size_t len;
  const char *body = gq_http_body(req, &len);
  json_t *arg = len ? json_loadb(body, len, 0, NULL) : NULL;
  char node[256], msg[512];
  int rc;

  if (!slash) {
    json_decref(arg);
    gq_sim_status(req, 404, "NotFound", "want /sim/v1/nodes/NAME/ACTION",
                  NULL);
    return;
  }
  snprintf(node, sizeof(node), "%.*s", (int)(slash - rest), rest);
  rc = gq_sim_node_event(s, node, slash + 1, arg, msg, sizeof(msg));
  json_decref(arg);
  if (rc == GQ_ENOTFOUND)
    gq_sim_status(req, 404, "NotFound", msg, NULL);
  else if (rc != 0)
    gq_sim_status(req, 400, "BadRequest", msg, NULL);
  else
    gq_sim_reply_success(req, 200);
}

/* POST /sim/v1/faults {"verb","resource","status","delayMs","count"},
 * DELETE /sim/v1/faults clears them; POST /sim/v1/close-watches ends every
 * watch. Tests drive failures through these (DESIGN §7). */
static void admin(struct gq_sim *s, struct gq_http_req *req, const char *path)
{
  const char *method = gq_http_method(req);
  size_t len;
  const char *body = gq_http_body(req, &len);

  if (!strcmp(path, "/sim/v1/close-watches") && !strcmp(method, "POST")) {
    gq_sim_watch_close_all(s);
    gq_sim_reply_success(req, 200);
  } else if (!strcmp(path, "/sim/v1/faults") && !strcmp(method, "DELETE")) {
    s->n_faults = 0;
    gq_sim_reply_success(req, 200);
  } else if (!strcmp(path, "/sim/v1/faults") && !strcmp(method, "POST")) {
    json_t *f = json_loadb(body, len, 0, NULL);
    struct gq_sim_fault *x = &s->faults[s->n_faults];

    if (!json_is_object(f) || s->n_faults == 32) {
      json_decref(f);
      gq_sim_status(req, 400, "BadRequest",
                    "a fault is {\"verb\",\"resource\",\"status\",\"delayMs\","
                    "\"count\"} (at most 32)", NULL);
      return;
    }
    memset(x, 0, sizeof(*x));
    snprintf(x->verb, sizeof(x->verb), "%s",
             or(json_string_value(json_object_get(f, "verb")), "*"));
    snprintf(x->resource, sizeof(x->resource), "%s",
             or(json_string_value(json_object_get(f, "resource")), "*"));
    x->status = (int)json_integer_value(json_object_get(f, "status"));
    x->delay_ms = (uint64_t)json_integer_value(json_object_get(f, "delayMs"));
    x->count = json_is_integer(json_object_get(f, "count"))
                   ? (int)json_integer_value(json_object_get(f, "count"))
                   : 1;
    s->n_faults++;
    json_decref(f);
    gq_sim_reply_success(req, 201);
  } else if (!strcmp(path, "/sim/v1/report") && !strcmp(method, "GET")) {
    json_t *rep = gq_sim_report_json(s), *live = gq_sim_replay_live(s);

    if (live)
      json_object_set_new(rep, "replay", live);
    gq_sim_reply(req, 200, rep);
  } else if (!strcmp(path, "/sim/v1/start") && !strcmp(method, "POST")) {
    if (gq_sim_replay_begin(s) != 0)
      gq_sim_status(req, 409, "Conflict",
                    "no scenario waits for a start (run with --scenario FILE "
                    "--hold)", NULL);
    else
      gq_sim_reply_success(req, 200);
  } else if (!strcmp(path, "/sim/v1/clock")) {
    gq_sim_clock_serve(s, req);
  } else if (!strncmp(path, "/sim/v1/nodes/", 14) && !strcmp(method, "POST")) {
    node_action(s, req, path + 14);
  } else {
    gq_sim_status(req, 404, "NotFound", "no such admin path", NULL);
  }
}

static void on_request(struct gq_http_req *req, void *arg)
{
  struct gq_sim *s = arg;
  const char *path = gq_http_path(req), *accept, *inc, *verb;
  char seg[GQ_SIM_MAX_SEGS][256];
  struct gq_sim_req r = {.s = s, .http = req};
  char msg[400];
  uint64_t delay = 0;
  int n, status = 0;

  s->requests++;
  GQ_LOG(GQ_DEBUG, &lc_http, "%s %s (%s)", gq_http_method(req), path,
         or(gq_http_header(req, "Kubectl-Command"), "-"));
  if (!strcmp(path, "/healthz") || !strcmp(path, "/readyz") ||
      !strcmp(path, "/livez")) {
    gq_http_respond(req, 200, "text/plain", "ok", 2, NULL);
    return;
  }
  if (!(r.user = gq_sim_authenticate(s, gq_http_header(req,
                                                        "Authorization")))) {
    gq_sim_status(req, 401, "Unauthorized", "Unauthorized", NULL);
    return;
  }
  if (!strcmp(path, "/apis/authentication.k8s.io/v1/selfsubjectreviews") &&
      !strcmp(gq_http_method(req), "POST")) {
    gq_sim_self_review(req, r.user);
    return;
  }
  if (!strncmp(path, "/sim/v1/", 8)) {
    admin(s, req, path);
    return;
  }
  if (gq_sim_discovery(s, req))
    return;
  n = gq_sim_split_path(path, seg);
  r.method = gq_http_method(req);
  if (n < 0 || gq_sim_route(&r, seg, n) != 0) {
    gq_sim_status(req, 404, "NotFound",
                  "the server could not find the requested resource", NULL);
    return;
  }
  if (gq_sim_query_check(gq_sim_http_query, req, msg, sizeof(msg)) != 0) {
    gq_sim_status(req, 400, "BadRequest", msg, NULL);
    return;
  }
  accept = gq_http_header(req, "Accept");
  inc = gq_http_query(req, "includeObject");
  r.table = accept && strstr(accept, "as=Table") != NULL;
  r.include_object = inc && !strcmp(inc, "Object");
  verb = verb_of(&r);
  if (match_fault(&r, verb, &status, &delay) && status) {
    inject_error(&r, verb, status, delay);
    return;
  }
  if (delay) {
    struct delayed_req *d = gq_xcalloc(1, sizeof(*d));

    d->r = r;
    snprintf(d->verb, sizeof(d->verb), "%s", verb);
    uv_timer_init(s->loop, &d->timer);
    d->timer.data = d;
    uv_timer_start(&d->timer, on_delayed, delay, 0);
    return; /* httpd parks the connection until we answer */
  }
  dispatch(&r, verb);
}

const json_t *gq_sim_seed(struct gq_sim *s, struct gq_sim_kind *k, json_t *obj,
                          char *err, size_t errlen)
{
  char uid[40], ts[40], api[128];
  json_t *meta = json_object_get(obj, "metadata");
  const char *name = json_string_value(json_object_get(meta, "name"));
  const char *ns = json_string_value(json_object_get(meta, "namespace"));

  if (!name || gq_sim_get(k, ns, name)) {
    snprintf(err, errlen, "%s \"%s\" %s", k->plural, name ? name : "",
             name ? "already exists" : "has no name");
    json_decref(obj);
    return NULL;
  }
  if (k->is_crd) {
    struct gq_schema_report rep;

    gq_schema_report_init(&rep);
    if (gq_schema_process(k->schema, obj, 1, &rep) != 0 && rep.n_causes) {
      snprintf(err, errlen, "%s \"%s\" is invalid: %s: %s", k->kind, name,
               rep.causes[0].field, rep.causes[0].message);
      gq_schema_report_release(&rep);
      json_decref(obj);
      return NULL;
    }
    gq_schema_report_release(&rep);
  }
  gq_sim_uuid(uid);
  gq_time_format(gq_clock_now_ms(), ts, sizeof(ts));
  json_object_set_new(obj, "apiVersion",
                      json_string(gq_sim_kind_api_version(k, api,
                                                          sizeof(api))));
  json_object_set_new(obj, "kind", json_string(k->kind));
  json_object_set_new(meta, "uid", json_string(uid));
  json_object_set_new(meta, "creationTimestamp", json_string(ts));
  json_object_set_new(meta, "generation", json_integer(1));
  return gq_sim_put(s, k, obj);
}

static void seed(struct gq_sim *s, struct gq_sim_kind *k, json_t *obj)
{
  char err[512];

  if (k->defaults)
    k->defaults(s, obj);
  gq_sim_seed(s, k, obj, err, sizeof(err));
}

static void seed_namespaces(struct gq_sim *s)
{
  static const char *const names[] = {"default", "kube-system", "kube-public",
                                      "kube-node-lease", NULL};
  struct gq_sim_kind *k = gq_sim_kind_find(s, "", "v1", "namespaces");

  for (int i = 0; names[i]; i++)
    seed(s, k,
         json_pack("{s:{s:s}}", "metadata", "name", names[i]));
}

/* Loads every CRD in dir (*.yaml, *.yml, *.json), as if created. */
static int load_crds(struct gq_sim *s, const char *dir, char *err,
                     size_t errlen)
{
  struct gq_sim_kind *k = gq_sim_kind_find(s, "apiextensions.k8s.io", "v1",
                                           "customresourcedefinitions");
  struct dirent **ents;
  int n = scandir(dir, &ents, NULL, alphasort), rc = 0;

  if (n < 0) {
    snprintf(err, errlen, "--crds: cannot read '%s'", dir);
    return GQ_EIO;
  }
  for (int i = 0; i < n; i++) {
    const char *dot = strrchr(ents[i]->d_name, '.');
    char path[1024];
    json_t *docs, *crd;
    size_t j;

    if (rc == 0 && dot && (!strcmp(dot, ".yaml") || !strcmp(dot, ".yml") ||
                           !strcmp(dot, ".json"))) {
      snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
      rc = gq_yaml_load_file(path, &docs, err, errlen);
      json_array_foreach(rc ? NULL : docs, j, crd) {
        json_t *c = json_deep_copy(crd);

        if ((rc = gq_sim_kind_from_crd(s, c, err, errlen)) != 0) {
          json_decref(c);
          break;
        }
        seed(s, k, c);
      }
      json_decref(rc ? NULL : docs);
    }
    free(ents[i]);
  }
  free(ents);
  return rc;
}

int gq_sim_start(struct gq_sim *s, uv_loop_t *loop,
                 const struct gq_sim_opts *o, char *err, size_t errlen)
{
  struct gq_httpd_opts ho = {o->host, o->port, o->tls_cert, o->tls_key,
                            GQ_SIM_MAX_BODY};
  int rc;

  memset(s, 0, sizeof(*s));
  s->loop = loop;
  s->opts = *o;
  gq_sim_store_init(s);
  gq_sim_clock_init(s);
  /* watches first: a client sees each change before what others store in
   * reaction to it (resourceVersion order) */
  gq_sim_store_observe(s, gq_sim_watch_notify, NULL);
  gq_sim_store_observe(s, gq_sim_pdb_observe, NULL);
  gq_sim_kinds_init(s);
  if (o->openapi_file)
    gq_sim_openapi_load(s, o->openapi_file); /* without it: CRDs only */
  seed_namespaces(s);
  if (o->token_auth_file &&
      (rc = gq_sim_users_load(s, o->token_auth_file, err, errlen)) != 0)
    return rc;
  if (o->crd_dir && (rc = load_crds(s, o->crd_dir, err, errlen)) != 0)
    return rc;
  gq_sim_engine_start(s);
  gq_sim_jobs_start(s);
  return gq_httpd_start(loop, &ho, on_request, s, &s->httpd, err, errlen);
}

void gq_sim_stop(struct gq_sim *s)
{
  gq_sim_record_stop(s);
  gq_sim_clock_stop(s);
  gq_sim_engine_stop(s);
  gq_sim_jobs_stop(s);
  gq_sim_admission_stop(s);
  if (s->hclient)
    gq_hclient_close(s->hclient);
  s->hclient = NULL;
  gq_httpd_close(s->httpd);
  s->httpd = NULL;
  gq_sim_dcgm_stop(s);
  uv_close((uv_handle_t *)&s->pending_timer, NULL);
}

/* Frees the registry and the store once the loop has closed the handles. */
void gq_sim_release(struct gq_sim *s)
{
  gq_sim_replay_release(s);
  gq_sim_engine_release(s);
  gq_sim_store_release(s);
  gq_sim_openapi_release(s);
  gq_sim_kinds_release(s);
  gq_sim_users_release(s);
  gq_sim_jobs_release(s);
}
