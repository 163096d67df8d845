/* sim/admission.c - users and the admission webhook chain of gpuq-sim, as
 * kube-apiserver has them (the Kubernetes reference "Dynamic Admission
 * Control", admissionregistration.k8s.io/v1, admission.k8s.io/v1).
 *
 * Users: --token-auth-file FILE holds lines "token,user,uid,"g1,g2""
 * (kube-apiserver's static token file); --token is the user system:admin
 * (group system:masters), as is every request when no token is required.
 *
 * Webhooks: before a create or update through the API is stored, every
 * MutatingWebhookConfiguration webhook whose rules, namespaceSelector and
 * objectSelector match is called in turn (configurations by name, webhooks
 * in their order) and its JSONPatch applied; then every matching
 * ValidatingWebhookConfiguration webhook. Each call is an HTTPS POST of an
 * AdmissionReview to clientConfig.url (clientConfig.service is refused at
 * create: the sim has no Services to route to), trusting caBundle, within
 * timeoutSeconds (default 10). A denial refuses the request with the
 * webhook's name and message; a call that fails refuses it with HTTP 500
 * under failurePolicy Fail (the default) and is skipped under Ignore. The
 * request waits without blocking the loop. Deletes and connects are not
 * sent to webhooks (nothing gpuq serves needs them): docs/sim.md.
 */
#include "sim/admission.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/hclient.h"
#include "api/kubeconfig.h"
#include "api/meta.h"
#include "api/patch.h"
#include "api/selector.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/log.h"

static const struct gq_lc lc = {"sim", "admission", NULL};

#define GROUP "admissionregistration.k8s.io"

/* ---- users -------------------------------------------------------------- */

static const struct gq_sim_user admin = {.name = (char *)"system:admin"};

/* Splits one CSV field off *p (quoted or not); NULL at the end. Owned. */
static char *csv_field(const char **p)
{
  const char *s = *p, *e;
  char *out;

  if (!s)
    return NULL;
  if (*s == '"') {
    e = strchr(s + 1, '"');
    if (!e)
      return NULL;
    out = gq_xstrndup(s + 1, (size_t)(e - s - 1));
    e++;
  } else {
    e = s + strcspn(s, ",");
    out = gq_xstrndup(s, (size_t)(e - s));
  }
  *p = *e == ',' ? e + 1 : NULL;
  return out;
}

int gq_sim_users_load(struct gq_sim *s, const char *text, char *err,
                      size_t len)
{
  const char *line = text;
  int n = 0;

  while (line && *line) {
    const char *end = strchr(line, '\n');
    char *l = gq_xstrndup(line, end ? (size_t)(end - line) : strlen(line));
    const char *p = l;
    struct gq_sim_user *u;
    char *token = csv_field(&p), *name = csv_field(&p);

    n++;
    line = end ? end + 1 : NULL;
    if (!*l || *l == '#') {
      free(token);
      free(name);
      free(l);
      continue;
    }
    if (!token || !*token || !name || !*name) {
      snprintf(err, len, "--token-auth-file: line %d: want "
               "token,user,uid[,\"group1,group2\"]", n);
      free(token);
      free(name);
      free(l);
      return GQ_EINVAL;
    }
    u = gq_xcalloc(1, sizeof(*u));
    u->token = token;
    u->name = name;
    u->uid = csv_field(&p);
    u->groups = csv_field(&p);
    u->next = s->users;
    s->users = u;
    free(l);
  }
  return 0;
}

void gq_sim_users_release(struct gq_sim *s)
{
  struct gq_sim_user *u = s->users, *next;

  for (; u; u = next) {
    next = u->next;
    free(u->token);
    free(u->name);
    free(u->uid);
    free(u->groups);
    free(u);
  }
  s->users = NULL;
}

const struct gq_sim_user *gq_sim_user_of(const struct gq_sim *s,
                                         const char *bearer)
{
  const struct gq_sim_user *u;

  if (!s->opts.token && !s->users)
    return &admin;
  if (!bearer)
    return NULL;
  if (s->opts.token && !strcmp(bearer, s->opts.token))
    return &admin;
  for (u = s->users; u; u = u->next)
    if (!strcmp(u->token, bearer))
      return u;
  return NULL;
}

/* userInfo of an AdmissionReview. */
static json_t *user_info(const struct gq_sim_user *u)
{
  json_t *groups = json_array();
  const char *p = u->groups;

  if (u == &admin)
    json_array_append_new(groups, json_string("system:masters"));
  while (p && *p) {
    size_t n = strcspn(p, ",");

    json_array_append_new(groups, json_stringn(p, n));
    p = p[n] ? p + n + 1 : NULL;
  }
  json_array_append_new(groups, json_string("system:authenticated"));
  return json_pack("{s:s, s:s, s:o}", "username", u->name, "uid",
                   u->uid ? u->uid : "", "groups", groups);
}

/* ---- configurations ----------------------------------------------------- */

int gq_sim_webhook_config_check(const json_t *obj, char *err, size_t len)
{
  const json_t *hooks = json_object_get(obj, "webhooks"), *w;
  size_t i;

  json_array_foreach((json_t *)hooks, i, w) {
    const char *name = json_string_value(json_object_get(w, "name"));
    const char *se = json_string_value(json_object_get(w, "sideEffects"));
    const json_t *cc = json_object_get(w, "clientConfig");
    const json_t *v, *arv = json_object_get(w, "admissionReviewVersions");
    size_t j;
    int v1 = 0;

    json_array_foreach((json_t *)arv, j, v)
      v1 |= json_is_string(v) && !strcmp(json_string_value(v), "v1");
    if (!name || !strchr(name, '.'))
      snprintf(err, len, "webhooks[%zu].name: Invalid value: \"%s\": should "
               "be a domain with at least three segments separated by dots",
               i, name ? name : "");
    else if (!se || (strcmp(se, "None") && strcmp(se, "NoneOnDryRun")))
      snprintf(err, len, "webhooks[%zu].sideEffects: Unsupported value: "
               "\"%s\": supported values: \"None\", \"NoneOnDryRun\"", i,
               se ? se : "");
    else if (!v1)
      snprintf(err, len, "webhooks[%zu].admissionReviewVersions: Invalid "
               "value: must include at least one of v1", i);
    else if (!json_is_string(json_object_get(cc, "url")))
      snprintf(err, len, "webhooks[%zu].clientConfig.url: Required value: "
               "gpuq-sim calls webhooks by url only (it routes no "
               "Services)", i);
    else
      continue;
    return -1;
  }
  return 0;
}

static int in_list(const json_t *list, const char *v)
{
  const json_t *e;
  size_t i;

  json_array_foreach((json_t *)list, i, e) {
    const char *s = json_string_value(e);

    if (s && (!strcmp(s, "*") || !strcmp(s, v)))
      return 1;
  }
  return 0;
}

/* rules[].resources entry res against resource (plural) and sub ("" none). */
static int res_match(const char *res, const char *plural, const char *sub)
{
  const char *slash = strchr(res, '/');
  size_t n = slash ? (size_t)(slash - res) : strlen(res);
  int main_ok = (n == 1 && *res == '*') ||
                (n == strlen(plural) && !strncmp(res, plural, n));

  if (!main_ok)
    return 0;
  if (!slash)
    return *sub == '\0';
  return !strcmp(slash + 1, "*") || !strcmp(slash + 1, sub);
}

static int rule_match(const json_t *rule, const struct gq_sim_req *r,
                      const char *op)
{
  const char *scope = json_string_value(json_object_get(rule, "scope"));
  const json_t *res = json_object_get(rule, "resources"), *e;
  size_t i;

  if (!in_list(json_object_get(rule, "apiGroups"), r->k->group) ||
      !in_list(json_object_get(rule, "apiVersions"), r->k->version) ||
      !in_list(json_object_get(rule, "operations"), op))
    return 0;
  if (scope && !strcmp(scope, "Cluster") && r->k->namespaced)
    return 0;
  if (scope && !strcmp(scope, "Namespaced") && !r->k->namespaced)
    return 0;
  json_array_foreach((json_t *)res, i, e)
    if (json_is_string(e) &&
        res_match(json_string_value(e), r->k->plural, r->sub))
      return 1;
  return 0;
}

/* A LabelSelector (absent: everything) against labels. */
static int selects(const json_t *sel, const json_t *labels)
{
  struct gq_labelsel *ls;
  char err[256];
  int ok;

  if (!json_is_object(sel) || json_object_size(sel) == 0)
    return 1;
  if (gq_labelsel_from_json(sel, &ls, err, sizeof(err)) != 0)
    return 0; /* an invalid selector matches nothing */
  ok = gq_labelsel_match(ls, labels);
  gq_labelsel_free(ls);
  return ok;
}

static const json_t *labels_of(const json_t *obj)
{
  return json_object_get(json_object_get(obj, "metadata"), "labels");
}

static int hook_match(struct gq_sim *s, const json_t *w,
                      const struct gq_sim_req *r, const char *op,
                      const json_t *obj, const json_t *old)
{
  const json_t *rules = json_object_get(w, "rules"), *rule;
  const json_t *nss = json_object_get(w, "namespaceSelector");
  size_t i;
  int any = 0;

  json_array_foreach((json_t *)rules, i, rule)
    any |= rule_match(rule, r, op);
  if (!any)
    return 0;
  if (r->k->namespaced && *r->ns) {
    struct gq_sim_kind *nk = gq_sim_kind_find(s, "", "v1", "namespaces");
    const json_t *ns = nk ? gq_sim_get(nk, NULL, r->ns) : NULL;

    if (!selects(nss, ns ? labels_of(ns) : NULL))
      return 0;
  }
  return selects(json_object_get(w, "objectSelector"), labels_of(obj)) ||
         (old && selects(json_object_get(w, "objectSelector"),
                         labels_of(old)));
}

/* ---- the chain ---------------------------------------------------------- */

struct hook {
  json_t *w;     /* the webhook (a reference) */
  int mutating;
};

struct chain {
  struct gq_sim_req r; /* a copy: the request waits for the chain */
  char op[16];
  json_t *obj;         /* owned: the object as patched so far */
  json_t *old;         /* owned, or NULL */
  struct hook *hooks;
  size_t n, next;
  gq_sim_admit_cont cont;
  char uid[40];
  unsigned char *ca;   /* the current call's CA (owned) */
  size_t ca_len;
  struct gq_hclient_tls tls;
};

static void collect(struct gq_sim *s, struct chain *ch, const char *plural,
                    int mutating)
{
  struct gq_sim_kind *k = gq_sim_kind_find(s, GROUP, "v1", plural);
  json_t *cfgs = k ? gq_sim_list(k, NULL) : NULL, *cfg, *w;
  size_t i, j;

  json_array_foreach(cfgs, i, cfg) /* sorted by name */
    json_array_foreach(json_object_get(cfg, "webhooks"), j, w) {
      if (!hook_match(s, w, &ch->r, ch->op, ch->obj, ch->old))
        continue;
      ch->hooks = gq_xrealloc(ch->hooks, (ch->n + 1) * sizeof(*ch->hooks));
      ch->hooks[ch->n].w = json_incref(w);
      ch->hooks[ch->n++].mutating = mutating;
    }
  json_decref(cfgs);
}

static void chain_free(struct chain *ch)
{
  for (size_t i = 0; i < ch->n; i++)
    json_decref(ch->hooks[i].w);
  free(ch->hooks);
  json_decref(ch->obj);
  json_decref(ch->old);
  free(ch->ca);
  free(ch);
}

static json_t *review(const struct chain *ch)
{
  const struct gq_sim_req *r = &ch->r;
  json_t *gvk = json_pack("{s:s, s:s, s:s}", "group", r->k->group, "version",
                          r->k->version, "kind", r->k->kind);
  json_t *gvr = json_pack("{s:s, s:s, s:s}", "group", r->k->group,
                          "version", r->k->version, "resource",
                          r->k->plural);
  json_t *req = json_pack(
      "{s:s, s:O, s:O, s:o, s:o, s:s, s:s, s:s, s:o, s:O, s:b}", "uid",
      ch->uid, "kind", gvk, "resource", gvr, "requestKind", gvk,
      "requestResource", gvr, "name", gq_meta_str(ch->obj, "name"),
      "namespace", r->ns, "operation", ch->op, "userInfo",
      user_info(r->user ? r->user : &admin), "object", ch->obj, "dryRun", 0);

  if (*r->sub)
    json_object_set_new(req, "subResource", json_string(r->sub));
  json_object_set(req, "oldObject", ch->old ? ch->old : json_null());
  return json_pack("{s:s, s:s, s:o}", "apiVersion", "admission.k8s.io/v1",
                   "kind", "AdmissionReview", "request", req);
}

static void step(struct chain *ch);

static const char *hook_name(const struct chain *ch)
{
  return json_string_value(json_object_get(ch->hooks[ch->next].w, "name"));
}

/* The call of the current webhook failed (why): refused under
 * failurePolicy Fail, skipped under Ignore. */
static void call_failed(struct chain *ch, const char *why)
{
  const json_t *w = ch->hooks[ch->next].w;
  const char *fp = json_string_value(json_object_get(w, "failurePolicy"));
  const char *url = json_string_value(json_object_get(
      json_object_get(w, "clientConfig"), "url"));
  char msg[1500];

  GQ_LOG(GQ_INFO, &lc, "webhook %s: %s", hook_name(ch), why);
  if (fp && !strcmp(fp, "Ignore")) {
    ch->next++;
    step(ch);
    return;
  }
  snprintf(msg, sizeof(msg), "Internal error occurred: failed calling "
           "webhook \"%s\": failed to call webhook: Post \"%s\": %s",
           hook_name(ch), url ? url : "", why);
  gq_sim_status(ch->r.http, 500, "InternalError", msg, NULL);
  chain_free(ch);
}

static void denied(struct chain *ch, const json_t *st)
{
  const char *m = json_string_value(json_object_get(st, "message"));
  json_int_t code = json_integer_value(json_object_get(st, "code"));
  char msg[1500];

  if (code < 400)
    code = 400;
  snprintf(msg, sizeof(msg), "admission webhook \"%s\" denied the request%s%s",
           hook_name(ch), m && *m ? ": " : " without explanation",
           m && *m ? m : "");
  gq_sim_status(ch->r.http, (int)code, code == 403 ? "Forbidden"
                : code == 400 ? "BadRequest" : "", msg, NULL);
  chain_free(ch);
}

/* Applies the response's JSONPatch to ch->obj. Returns 0, or -1 with why. */
static int apply(struct chain *ch, const json_t *resp, char *why, size_t len)
{
  const char *pt = json_string_value(json_object_get(resp, "patchType"));
  const char *b64 = json_string_value(json_object_get(resp, "patch"));
  unsigned char *bin = NULL;
  size_t n = 0;
  json_t *ops, *out;
  int rc;

  if (!b64)
    return 0;
  if (!ch->hooks[ch->next].mutating || !pt || strcmp(pt, "JSONPatch")) {
    snprintf(why, len, "a patch from a %s webhook (patchType \"%s\")",
             ch->hooks[ch->next].mutating ? "mutating" : "validating",
             pt ? pt : "");
    return -1;
  }
  if (gq_b64_decode(b64, strlen(b64), &bin, &n) != 0 ||
      !(ops = json_loadb((const char *)bin, n, 0, NULL))) {
    free(bin);
    snprintf(why, len, "response.patch is not base64 of a JSON array");
    return -1;
  }
  free(bin);
  rc = gq_patch_json(ch->obj, ops, &out, why, len);
  json_decref(ops);
  if (rc != 0)
    return -1;
  json_decref(ch->obj);
  ch->obj = out;
  return 0;
}

static void answered(int rc, long status, const char *body, size_t len,
                     const char *retry_after, const char *err, void *arg)
{
  struct chain *ch = arg;
  json_t *doc = NULL;
  const json_t *resp;
  const char *uid;
  char why[600];

  (void)retry_after;
  if (rc == GQ_ECANCELED) {
    chain_free(ch);
    return;
  }
  if (rc != 0) {
    call_failed(ch, err && *err ? err : "no answer");
    return;
  }
  doc = json_loadb(body, len, 0, NULL);
  resp = json_object_get(doc, "response");
  uid = json_string_value(json_object_get(resp, "uid"));
  if (status != 200 || !json_is_object(resp)) {
    snprintf(why, sizeof(why), "expected a 200 AdmissionReview response, "
             "got HTTP %ld", status);
    call_failed(ch, why);
  } else if (!uid || strcmp(uid, ch->uid)) {
    snprintf(why, sizeof(why), "expected response.uid \"%s\", got \"%s\"",
             ch->uid, uid ? uid : "");
    call_failed(ch, why);
  } else if (!json_is_true(json_object_get(resp, "allowed"))) {
    denied(ch, json_object_get(resp, "status"));
  } else if (apply(ch, resp, why, sizeof(why)) != 0) {
    call_failed(ch, why);
  } else {
    ch->next++;
    step(ch);
  }
  json_decref(doc);
}

/* Calls webhook ch->next, or ends the chain (ch->cont). */
static void step(struct chain *ch)
{
  struct gq_sim *s = ch->r.s;
  const json_t *w, *cc;
  const char *ca64;
  json_int_t t;
  struct gq_hclient_opts o = {0};
  json_t *rv;
  char *body;

  if (ch->next == ch->n) {
    json_t *obj = json_incref(ch->obj);

    ch->cont(&ch->r, obj);
    chain_free(ch);
    return;
  }
  w = ch->hooks[ch->next].w;
  cc = json_object_get(w, "clientConfig");
  ca64 = json_string_value(json_object_get(cc, "caBundle"));
  free(ch->ca);
  ch->ca = NULL;
  ch->ca_len = 0;
  if (ca64 && gq_b64_decode(ca64, strlen(ca64), &ch->ca, &ch->ca_len)) {
    call_failed(ch, "clientConfig.caBundle is not base64");
    return;
  }
  ch->tls = (struct gq_hclient_tls){ch->ca, ch->ca_len, 0, NULL, NULL, NULL,
                                    0, 0};
  t = json_integer_value(json_object_get(w, "timeoutSeconds"));
  if (!s->hc && gq_hclient_new(s->loop, "gpuq-sim", &s->hc) != 0) {
    call_failed(ch, "cannot start an HTTP client");
    return;
  }
  gq_sim_uuid(ch->uid);
  rv = review(ch);
  body = json_dumps(rv, JSON_COMPACT);
  json_decref(rv);
  o.method = "POST";
  o.url = json_string_value(json_object_get(cc, "url"));
  o.body = body;
  o.body_len = strlen(body);
  o.content_type = "application/json";
  o.tls = &ch->tls;
  o.timeout_ms = (t >= 1 && t <= 30 ? t : 10) * 1000;
  o.max_body = 8u << 20;
  if (!gq_hclient_do(s->hc, &o, NULL, answered, ch))
    call_failed(ch, "the webhook's url cannot be called");
  free(body);
}

int gq_sim_admit(struct gq_sim_req *r, const char *op, json_t *obj,
                 const json_t *old, gq_sim_admit_cont cont)
{
  struct chain *ch = gq_xcalloc(1, sizeof(*ch));

  ch->r = *r;
  snprintf(ch->op, sizeof(ch->op), "%s", op);
  ch->obj = obj;
  ch->old = old ? json_deep_copy(old) : NULL;
  ch->cont = cont;
  if (strcmp(r->k->group, GROUP)) { /* configurations are not admitted */
    collect(r->s, ch, "mutatingwebhookconfigurations", 1);
    collect(r->s, ch, "validatingwebhookconfigurations", 0);
  }
  if (ch->n == 0) {
    ch->obj = NULL;
    chain_free(ch);
    return 0;
  }
  step(ch);
  return 1;
}
