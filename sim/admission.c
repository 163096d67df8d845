/* sim/admission.c - dynamic admission control as kube-apiserver runs it
 * (admissionregistration.k8s.io/v1; "Dynamic Admission Control" in the
 * Kubernetes reference): after the sim's own decoding and before storage,
 * the matching MutatingWebhookConfiguration webhooks (configurations by
 * name, webhooks in order) are called and their JSONPatches applied, then
 * the matching validating webhooks see the final object. Calls go through
 * api/hclient on the sim's loop, so the request waits (its connection
 * parked by httpd) while the loop serves everything else. Validating
 * webhooks are called one after the other, not in parallel as the
 * apiserver does: the outcome is the same, only slower. */
#include "sim/server.h"

#include "api/hclient.h"
#include "api/kubeconfig.h"
#include "api/meta.h"
#include "api/patch.h"
#include "base/alloc.h"
#include "base/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REVIEW_BODY (4u << 20)

struct admit_ctx {
  struct gq_sim_req r;   /* a copy: the request stays parked meanwhile */
  struct admit_ctx *next_ctx; /* s->admits: the chains with a call out */
  struct gq_hcall *call; /* the webhook call in flight, or NULL */
  int stopped;           /* answered by gq_sim_admission_stop() */
  char op[16];
  json_t *old, *obj;     /* owned; obj NULL on DELETE */
  json_t *hooks;         /* webhooks left to call, in order */
  int mutating;          /* hooks are mutating ones */
  size_t next;
  char uid[40];
  unsigned char *ca;     /* decoded caBundle of the call in flight */
  size_t ca_len;
  struct gq_hclient_tls tls;
  gq_sim_admit_cb cb;
  void *arg;
};

static int has_str(const json_t *arr, const char *want)
{
  const json_t *v;
  size_t i;

  json_array_foreach((json_t *)arr, i, v) {
    const char *s = json_string_value(v);

    if (s && (!strcmp(s, "*") || !strcmp(s, want)))
      return 1;
  }
  return 0;
}

/* Does resource pattern p ("pods", "pods/status", "*", "*\/status",
 * "pods/\*", "*\/\*") name plural with subresource sub? */
static int res_match(const char *p, const char *plural, const char *sub)
{
  const char *slash = strchr(p, '/');
  size_t n = slash ? (size_t)(slash - p) : strlen(p);

  if (!(n == 1 && p[0] == '*') &&
      !(strlen(plural) == n && !strncmp(p, plural, n)))
    return 0;
  if (!slash)
    return !*sub;
  return !strcmp(slash + 1, "*") || !strcmp(slash + 1, sub);
}

/* Does one of the webhook's rules match the request? */
static int rules_match(const json_t *hook, const struct gq_sim_req *r,
                       const char *op)
{
  const json_t *rules = json_object_get(hook, "rules"), *rule, *res;
  size_t i, j;

  json_array_foreach((json_t *)rules, i, rule) {
    const char *scope = json_string_value(json_object_get(rule, "scope"));
    int any = 0;

    if (!has_str(json_object_get(rule, "apiGroups"), r->k->group) ||
        !has_str(json_object_get(rule, "apiVersions"), r->k->version) ||
        !has_str(json_object_get(rule, "operations"), op))
      continue;
    if (scope && ((!strcmp(scope, "Cluster") && r->k->namespaced) ||
                  (!strcmp(scope, "Namespaced") && !r->k->namespaced)))
      continue;
    json_array_foreach(json_object_get(rule, "resources"), j, res)
      any |= json_is_string(res) &&
             res_match(json_string_value(res), r->k->plural, r->sub);
    if (any)
      return 1;
  }
  return 0;
}

/* Does label selector sel (LabelSelector JSON; NULL = everything) match
 * the labels of obj? A selector that does not parse matches nothing. */
static int sel_match(const json_t *sel, const json_t *obj)
{
  struct gq_labelsel *ls;
  char err[256];
  int m;

  if (!sel)
    return 1;
  if (gq_labelsel_from_json(sel, &ls, err, sizeof(err)) != 0)
    return 0;
  m = gq_labelsel_match(ls, json_object_get(json_object_get(obj, "metadata"),
                                            "labels"));
  gq_labelsel_free(ls);
  return m;
}

/* Matching as the apiserver does: rules, then namespaceSelector over the
 * labels of the object's namespace (cluster-scoped objects other than
 * namespaces always pass), then objectSelector over the new object or the
 * old one (either passing is enough). */
static int hook_matches(const json_t *hook, const struct admit_ctx *c)
{
  const json_t *nsel = json_object_get(hook, "namespaceSelector");
  const json_t *osel = json_object_get(hook, "objectSelector");

  if (!rules_match(hook, &c->r, c->op))
    return 0;
  if (nsel && c->r.k->namespaced) {
    struct gq_sim_kind *nsk = gq_sim_kind_find(c->r.s, "", "v1",
                                               "namespaces");

    if (!sel_match(nsel, gq_sim_get(nsk, NULL, c->r.ns)))
      return 0;
  } else if (nsel && !strcmp(c->r.k->plural, "namespaces") && !*c->r.k->group) {
    if (!sel_match(nsel, c->obj ? c->obj : c->old))
      return 0;
  }
  return !osel || (c->obj && sel_match(osel, c->obj)) ||
         (c->old && sel_match(osel, c->old));
}

/* The webhooks of every configuration of 'plural' that match, in order. */
static json_t *collect(struct admit_ctx *c, const char *plural)
{
  struct gq_sim_kind *k = gq_sim_kind_find(c->r.s, "admissionregistration.k8s.io",
                                           "v1", plural);
  json_t *cfgs = k ? gq_sim_list(k, NULL) : json_array(), *cfg, *h;
  json_t *out = json_array();
  size_t i, j;

  json_array_foreach(cfgs, i, cfg) {
    json_array_foreach(json_object_get(cfg, "webhooks"), j, h)
      if (hook_matches(h, c))
        json_array_append(out, h);
  }
  json_decref(cfgs);
  return out;
}

/* The AdmissionReview of the call (new reference). */
static json_t *review(const struct admit_ctx *c)
{
  const struct gq_sim_req *r = &c->r;
  const char *dr = r->http ? gq_http_query(r->http, "dryRun") : NULL;
  json_t *gvk = json_pack("{s:s, s:s, s:s}", "group", r->k->group, "version",
                          r->k->version, "kind", r->k->kind);
  json_t *gvr = json_pack("{s:s, s:s, s:s}", "group", r->k->group, "version",
                          r->k->version, "resource", r->k->plural);
  json_t *req = json_pack(
      "{s:s, s:O, s:O, s:O, s:O, s:s, s:s, s:o, s:b}", "uid", c->uid, "kind",
      gvk, "resource", gvr, "requestKind", gvk, "requestResource", gvr,
      "name", r->name, "operation", c->op, "userInfo",
      gq_sim_user_info(r->user ? r->user : &gq_sim_user_admin, NULL),
      "dryRun", dr && !strcmp(dr, "All"));

  if (*r->sub)
    json_object_set_new(req, "subResource", json_string(r->sub));
  if (r->k->namespaced)
    json_object_set_new(req, "namespace", json_string(r->ns));
  json_object_set(req, "object", c->obj ? c->obj : json_null());
  json_object_set(req, "oldObject", c->old ? c->old : json_null());
  json_decref(gvk);
  json_decref(gvr);
  return json_pack("{s:s, s:s, s:o}", "apiVersion", "admission.k8s.io/v1",
                   "kind", "AdmissionReview", "request", req);
}

/* Takes c off s->admits (where it is while a call is out). */
static void unlink_ctx(struct admit_ctx *c)
{
  struct admit_ctx **pp = (struct admit_ctx **)&c->r.s->admits;

  while (*pp && *pp != c)
    pp = &(*pp)->next_ctx;
  if (*pp)
    *pp = c->next_ctx;
  c->call = NULL;
}

static void ctx_free(struct admit_ctx *c)
{
  json_decref(c->old);
  json_decref(c->obj);
  json_decref(c->hooks);
  free(c->ca);
  free(c);
}

static const char *hook_name(const struct admit_ctx *c)
{
  return json_string_value(json_object_get(json_array_get(c->hooks, c->next),
                                           "name"));
}

/* Ends the chain: refuses with code and msg (the request is answered). */
static void refuse(struct admit_ctx *c, int code, const char *reason,
                   const char *msg)
{
  if (c->r.refused)
    c->r.refused(&c->r, code, msg, c->arg);
  else
    gq_sim_status(c->r.http, code,
                  reason ? reason : gq_sim_reason_for(code), msg, NULL);
  ctx_free(c);
}

static void call_next(struct admit_ctx *c);

/* A webhook could not be called or answered nonsense: failurePolicy
 * Ignore goes on as if it allowed; Fail (the default) refuses with 500. */
static void call_failed(struct admit_ctx *c, const char *why)
{
  const json_t *h = json_array_get(c->hooks, c->next);
  const char *fp = json_string_value(json_object_get(h, "failurePolicy"));
  const char *url = json_string_value(
      json_object_get(json_object_get(h, "clientConfig"), "url"));
  char msg[1500];

  if (fp && !strcmp(fp, "Ignore")) {
    c->next++;
    call_next(c);
    return;
  }
  snprintf(msg, sizeof(msg), "Internal error occurred: failed calling "
           "webhook \"%s\": failed to call webhook: Post \"%s\": %s",
           hook_name(c), url ? url : "", why);
  refuse(c, 500, "InternalError", msg);
}

/* Applies a mutating webhook's response patch to c->obj. Returns 0 or -1
 * with why. */
static int apply_response_patch(struct admit_ctx *c, const json_t *resp,
                                char *why, size_t len)
{
  const char *b64 = json_string_value(json_object_get(resp, "patch"));
  const char *pt = json_string_value(json_object_get(resp, "patchType"));
  unsigned char *raw;
  size_t n;
  json_t *ops, *out = NULL;

  if (!b64 || !c->mutating || !c->obj)
    return 0;
  if ((pt && strcmp(pt, "JSONPatch")) ||
      gq_b64_decode(b64, strlen(b64), &raw, &n) != 0) {
    snprintf(why, len, "the response's patch is not a base64 JSONPatch");
    return -1;
  }
  ops = json_loadb((const char *)raw, n, 0, NULL);
  free(raw);
  if (!ops || gq_patch_json(c->obj, ops, &out, why, len) != 0) {
    if (!ops)
      snprintf(why, len, "the response's patch is not JSON");
    json_decref(ops);
    return -1;
  }
  json_decref(ops);
  json_decref(c->obj);
  c->obj = out;
  c->r.mutated = 1;
  return 0;
}

/* A webhook answered allowed=false: the request is refused with the
 * response status's code (400 below 400; the sim caps it at 599) and the
 * apiserver's wording (webhook/errors ToStatusErr: the message, else the
 * reason, else "without explanation"). */
static void denied(struct admit_ctx *c, const json_t *resp)
{
  const json_t *st = json_object_get(resp, "status");
  const char *m = json_string_value(json_object_get(st, "message"));
  const char *reason = json_string_value(json_object_get(st, "reason"));
  json_int_t code = json_integer_value(json_object_get(st, "code"));
  char msg[1500];

  if ((m && *m) || (reason && *reason)) /* ToStatusErr's order */
    snprintf(msg, sizeof(msg), "admission webhook \"%s\" denied the "
             "request: %s", hook_name(c), m && *m ? m : reason);
  else
    snprintf(msg, sizeof(msg), "admission webhook \"%s\" denied the "
             "request without explanation", hook_name(c));
  refuse(c, code >= 400 && code < 600 ? (int)code : 400, reason, msg);
}

static void on_review(int rc, long status, const char *body, size_t len,
                      const char *retry_after, const char *err, void *arg)
{
  struct admit_ctx *c = arg;
  json_t *rv, *resp;
  const char *uid;
  char why[600];

  (void)retry_after;
  unlink_ctx(c);
  if (c->stopped) { /* answered already: the sim is stopping */
    ctx_free(c);
    return;
  }
  rv = rc == 0 ? json_loadb(body, len, 0, NULL) : NULL;
  resp = json_object_get(rv, "response");
  uid = json_string_value(json_object_get(resp, "uid"));
  free(c->ca);
  c->ca = NULL;
  if (rc != 0)
    snprintf(why, sizeof(why), "%s", err && *err ? err : "call failed");
  else if (status != 200)
    snprintf(why, sizeof(why), "the server responded with status %ld",
             status);
  else if (!json_is_object(resp) || !uid || strcmp(uid, c->uid))
    snprintf(why, sizeof(why), "expected response.uid=\"%s\", got \"%s\"",
             c->uid, uid ? uid : "");
  else if (!json_is_true(json_object_get(resp, "allowed"))) {
    denied(c, resp);
    json_decref(rv);
    return;
  } else if (apply_response_patch(c, resp, why, sizeof(why)) == 0) {
    json_decref(rv);
    c->next++;
    call_next(c);
    return;
  }
  json_decref(rv);
  call_failed(c, why);
}

/* Calls webhook c->next: POST of the AdmissionReview to clientConfig.url,
 * trusting caBundle, within timeoutSeconds (default 10). */
static void call_hook(struct admit_ctx *c, const json_t *h)
{
  const json_t *cc = json_object_get(h, "clientConfig");
  const char *url = json_string_value(json_object_get(cc, "url"));
  const char *ca = json_string_value(json_object_get(cc, "caBundle"));
  json_t *to = json_object_get(h, "timeoutSeconds");
  struct gq_hclient_opts o = {0};
  json_t *rv;
  char *body;

  if (!url) {
    call_failed(c, "clientConfig.service is not supported by gpuq-sim; "
                   "give clientConfig.url");
    return;
  }
  memset(&c->tls, 0, sizeof(c->tls));
  if (ca && gq_b64_decode(ca, strlen(ca), &c->ca, &c->ca_len) == 0) {
    c->tls.ca = c->ca;
    c->tls.ca_len = c->ca_len;
  }
  gq_sim_uuid(c->uid);
  rv = review(c);
  body = json_dumps(rv, JSON_COMPACT);
  json_decref(rv);
  o.method = "POST";
  o.url = url;
  o.body = body;
  o.body_len = strlen(body);
  o.content_type = "application/json";
  o.tls = &c->tls;
  o.timeout_ms = (json_is_integer(to) ? (long)json_integer_value(to) : 10) *
                 1000;
  o.max_body = MAX_REVIEW_BODY;
  c->call = gq_hclient_do(c->r.s->hclient, &o, NULL, on_review, c);
  free(body);
  if (!c->call) {
    call_failed(c, "bad webhook URL");
    return;
  }
  c->next_ctx = c->r.s->admits;
  c->r.s->admits = c;
}

/* Runs the next webhook, or moves from the mutating to the validating
 * ones, or ends the chain with the callback. */
static void call_next(struct admit_ctx *c)
{
  const json_t *h = json_array_get(c->hooks, c->next);
  json_t *obj;

  if (h) {
    call_hook(c, h);
    return;
  }
  if (c->mutating) {
    json_decref(c->hooks);
    c->mutating = 0;
    c->next = 0;
    c->hooks = collect(c, "validatingwebhookconfigurations");
    call_next(c);
    return;
  }
  obj = c->obj;
  c->obj = NULL;
  c->cb(&c->r, obj, c->arg);
  ctx_free(c);
}

/* 1 if a webhook configuration of 'plural' is stored. */
static int any_config(struct gq_sim *s, const char *plural)
{
  struct gq_sim_kind *k = gq_sim_kind_find(s, "admissionregistration.k8s.io",
                                           "v1", plural);

  return k && k->objs;
}

void gq_sim_admit(struct gq_sim_req *r, const char *op, const json_t *old,
                  json_t *obj, gq_sim_admit_cb cb, void *arg)
{
  struct admit_ctx *c;

  r->mutated = 0;
  if (!any_config(r->s, "mutatingwebhookconfigurations") &&
      !any_config(r->s, "validatingwebhookconfigurations")) {
    cb(r, obj, arg); /* nothing to call: no copy, no wait */
    return;
  }
  c = gq_xcalloc(1, sizeof(*c));
  c->r = *r;
  snprintf(c->op, sizeof(c->op), "%s", op);
  c->old = gq_sim_copy(old);
  c->obj = obj;
  c->cb = cb;
  c->arg = arg;
  c->mutating = 1;
  c->hooks = collect(c, "mutatingwebhookconfigurations");
  if (json_array_size(c->hooks) == 0) {
    json_decref(c->hooks);
    c->mutating = 0;
    c->hooks = collect(c, "validatingwebhookconfigurations");
    if (json_array_size(c->hooks) == 0) {
      c->obj = NULL;
      cb(r, obj, arg); /* nothing matches: no wait */
      ctx_free(c);
      return;
    }
  }
  if (!r->s->hclient && gq_hclient_new(r->s->loop, "gpuq-sim",
                                       &r->s->hclient) != 0) {
    refuse(c, 500, "InternalError", "Internal error occurred: cannot "
           "create the webhook client");
    return;
  }
  call_next(c);
}

void gq_sim_admission_stop(struct gq_sim *s)
{
  for (struct admit_ctx *c = s->admits; c; c = c->next_ctx) {
    if (c->stopped)
      continue;
    c->stopped = 1;
    if (c->r.refused)
      c->r.refused(&c->r, 503, "the server is shutting down", c->arg);
    else
      gq_sim_status(c->r.http, 503, "ServiceUnavailable",
                    "the server is shutting down", NULL);
  }
}

/* One webhook of a configuration: the checks the apiserver makes on
 * create and update (ValidateMutatingWebhookConfiguration). */
static int check_hook(const json_t *h, size_t i, char *err, size_t len)
{
  const char *se = json_string_value(json_object_get(h, "sideEffects"));
  const json_t *to = json_object_get(h, "timeoutSeconds");
  const json_t *cc = json_object_get(h, "clientConfig");

  if (!json_string_value(json_object_get(h, "name")))
    snprintf(err, len, "webhooks[%zu].name: Required value", i);
  else if (!se || (strcmp(se, "None") && strcmp(se, "NoneOnDryRun")))
    snprintf(err, len, "webhooks[%zu].sideEffects: Unsupported value: "
             "\"%s\": supported values: \"None\", \"NoneOnDryRun\"", i,
             se ? se : "");
  else if (!has_str(json_object_get(h, "admissionReviewVersions"), "v1"))
    snprintf(err, len, "webhooks[%zu].admissionReviewVersions: Invalid "
             "value: must include at least one of v1", i);
  else if (to && (!json_is_integer(to) || json_integer_value(to) < 1 ||
                  json_integer_value(to) > 30))
    snprintf(err, len, "webhooks[%zu].timeoutSeconds: Invalid value: the "
             "timeout value must be between 1 and 30 seconds", i);
  else if (!json_object_get(cc, "url") && !json_object_get(cc, "service"))
    snprintf(err, len, "webhooks[%zu].clientConfig: Required value: exactly "
             "one of url or service is required", i);
  else
    return 0;
  return -1;
}

int gq_sim_webhook_config_check(const struct gq_sim_kind *k,
                                const json_t *obj, char *err, size_t len)
{
  const json_t *h;
  size_t i;

  if (strcmp(k->group, "admissionregistration.k8s.io"))
    return 0;
  json_array_foreach(json_object_get(obj, "webhooks"), i, h)
    if (check_hook(h, i, err, len) != 0)
      return -1;
  return 0;
}
