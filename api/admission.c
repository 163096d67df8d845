/* api/admission.c - AdmissionReview in, decision out (see admission.h). */
#include "api/admission.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json.h"
#include "base/alloc.h"
#include "base/err.h"
#include "decide/gpujob.h"

#define MAX_ITEMS 4096 /* containers read per list: far above any valid pod */

void gq_admission_review_release(struct gq_admission_review *rv)
{
  for (int i = 0; i < 2; i++) {
    free(rv->_labels[i]);
    free((void *)rv->_gates[i]);
  }
  memset(rv, 0, sizeof(*rv));
}

/* metadata.labels as borrowed pairs, leniently: the mutating webhook runs
 * before the API server validates the object, and a refusal of ours
 * should not mask its message; non-string values are skipped. */
static void read_labels(const json_t *meta, struct gq_adm_obj *o,
                        struct gq_kv **own)
{
  const json_t *m = json_object_get(meta, "labels"), *v;
  const char *k;

  o->has_labels = json_is_object(m);
  if (!o->has_labels || !json_object_size(m))
    return;
  *own = gq_xcalloc(json_object_size(m), sizeof(**own));
  json_object_foreach((json_t *)m, k, v) if (json_is_string(v))
  {
    (*own)[o->n_labels].key = k;
    (*own)[o->n_labels++].value = json_string_value(v);
  }
  o->labels = *own;
}

/* 1 if a resources.requests or .limits key of one of the containers in
 * spec.<list> is a GPU resource. */
static int list_gpus(const json_t *spec, const char *list)
{
  static const char *const maps[] = {"requests", "limits"};
  const json_t *arr = json_object_get(spec, list), *c, *v;
  const char *name;
  size_t i;

  json_array_foreach(arr, i, c)
  {
    if (i >= MAX_ITEMS)
      break;
    for (size_t m = 0; m < 2; m++)
      json_object_foreach(
          json_object_get(json_object_get(c, "resources"), maps[m]), name,
          v) if (gq_adm_is_gpu_resource(name)) return 1;
  }
  return 0;
}

/* spec.schedulingGates[].name, borrowed, into *own. */
static void read_gates(const json_t *spec, struct gq_adm_obj *o,
                       const char ***own)
{
  const json_t *arr = json_object_get(spec, "schedulingGates"), *g;
  size_t i;

  o->has_gates = json_is_array(arr);
  if (!o->has_gates || !json_array_size(arr))
    return;
  *own = gq_xcalloc(json_array_size(arr), sizeof(**own));
  json_array_foreach(arr, i, g)
  {
    const char *name = json_string_value(json_object_get(g, "name"));

    if (name)
      (*own)[o->n_gates++] = name;
  }
  o->gates = *own;
}

/* One object (request.object or .oldObject) at path: 0, or GQ_EINVAL
 * recorded in d when it is not an object. */
static int decode_obj(struct gq_dec *d, const json_t *req, const char *path,
                      struct gq_admission_review *rv, int which)
{
  struct gq_adm_obj *o = which ? &rv->req.old : &rv->req.obj;
  const json_t *obj = gq_dec_object(d, req, path, 1), *meta, *spec, *ann;

  if (!obj)
    return GQ_EINVAL;
  meta = json_object_get(obj, "metadata");
  read_labels(meta, o, &rv->_labels[which]);
  ann = json_object_get(meta, "annotations");
  o->has_annotations = json_is_object(ann);
  o->managed = json_string_value(json_object_get(ann, GQ_ANN_MANAGED));
  spec = json_object_get(obj, "spec");
  if (rv->req.kind == GQ_ADM_JOB) {
    o->suspend = json_is_true(json_object_get(spec, "suspend"));
    spec = json_object_get(json_object_get(spec, "template"), "spec");
  } else {
    read_gates(spec, o, &rv->_gates[which]);
  }
  o->gpus = list_gpus(spec, "containers") || list_gpus(spec, "initContainers");
  return 0;
}

/* request.kind: Pod (core) or Job (batch), else other. */
static enum gq_adm_kind decode_kind(const json_t *req)
{
  const json_t *k = json_object_get(req, "kind");
  const char *group = json_string_value(json_object_get(k, "group"));
  const char *kind = json_string_value(json_object_get(k, "kind"));

  if (!kind)
    return GQ_ADM_OTHER;
  if ((!group || !*group) && !strcmp(kind, "Pod"))
    return GQ_ADM_POD;
  if (group && !strcmp(group, "batch") && !strcmp(kind, "Job"))
    return GQ_ADM_JOB;
  return GQ_ADM_OTHER;
}

/* The AdmissionReview in root: 0, or GQ_EINVAL with "field: problem" in
 * d. */
static int decode_review(struct gq_dec *d, const json_t *root,
                         struct gq_admission_review *rv)
{
  static const char *const ops[] = {"CREATE", "UPDATE", "DELETE", "CONNECT",
                                    NULL};
  const char *api = gq_dec_string(d, root, "apiVersion", 1, 64, NULL);
  const char *kind = gq_dec_string(d, root, "kind", 1, 64, NULL);
  const json_t *req;

  if (api && strcmp(api, GQ_ADMISSION_VERSION))
    return gq_dec_fail_got(d, "apiVersion", json_object_get(root, "apiVersion"),
                           "must be %s", GQ_ADMISSION_VERSION);
  if (kind && strcmp(kind, "AdmissionReview"))
    return gq_dec_fail_got(d, "kind", json_object_get(root, "kind"),
                           "must be AdmissionReview");
  req = gq_dec_object(d, root, "request", 1);
  rv->uid = gq_dec_string(d, req, "request.uid", 1, 256, NULL);
  rv->req.op = gq_dec_enum(d, req, "request.operation", ops, 1, 0);
  rv->req.ns = gq_dec_string(d, req, "request.namespace", 0, 253, "");
  rv->req.user = gq_dec_string(d, json_object_get(req, "userInfo"),
                               "request.userInfo.username", 0, 1024, "");
  if (gq_dec_failed(d))
    return d->rc;
  rv->req.kind = decode_kind(req);
  if (rv->req.kind == GQ_ADM_OTHER || rv->req.op == GQ_ADM_DELETE ||
      rv->req.op == GQ_ADM_CONNECT)
    return 0; /* nothing to read: both webhooks allow these */
  if (decode_obj(d, req, "request.object", rv, 0) != 0)
    return d->rc;
  if (rv->req.op == GQ_ADM_UPDATE &&
      decode_obj(d, req, "request.oldObject", rv, 1) != 0)
    return d->rc;
  return 0;
}

int gq_admission_review_decode(const json_t *root,
                               struct gq_admission_review *out, char *err,
                               size_t errlen)
{
  struct gq_dec d;

  memset(out, 0, sizeof(*out));
  gq_dec_init(&d);
  if (!json_is_object(root))
    gq_dec_fail(&d, "body", "must be a JSON object");
  else
    decode_review(&d, root, out);
  if (!gq_dec_failed(&d))
    return 0;
  snprintf(err, errlen, "%s", d.msg);
  gq_admission_review_release(out);
  return GQ_EINVAL;
}

/* ---- decision out ------------------------------------------------------- */

/* The patch as base64 of its compact JSON (a new string), or NULL without
 * operations. */
static char *encode_patch(const struct gq_adm_result *res)
{
  json_t *arr;
  char *text, *b64;
  size_t n;

  if (!res->n_ops)
    return NULL;
  arr = json_array();
  for (size_t i = 0; i < res->n_ops; i++)
    json_array_append_new(
        arr, json_pack("{s:s,s:s,s:o}", "op", res->ops[i].op, "path",
                       res->ops[i].path, "value",
                       json_loads(res->ops[i].value, JSON_DECODE_ANY, NULL)));
  text = json_dumps(arr, JSON_COMPACT);
  json_decref(arr);
  n = strlen(text);
  b64 = gq_xmalloc(4 * ((n + 2) / 3) + 1);
  EVP_EncodeBlock((unsigned char *)b64, (unsigned char *)text, (int)n);
  free(text);
  return b64;
}

/* The AdmissionReview answering uid with res (a new reference). */
json_t *gq_admission_response(const char *uid, const struct gq_adm_result *res)
{
  json_t *resp = json_pack("{s:s,s:b}", "uid", uid, "allowed", res->allowed);
  char *patch = encode_patch(res);

  if (!res->allowed)
    json_object_set_new(resp, "status",
                        json_pack("{s:i,s:s,s:s,s:s}", "code", 403, "status",
                                  "Failure", "reason", "Forbidden", "message",
                                  res->msg));
  if (patch) {
    json_object_set_new(resp, "patchType", json_string("JSONPatch"));
    json_object_set_new(resp, "patch", json_string(patch));
    free(patch);
  }
  return json_pack("{s:s,s:s,s:o}", "apiVersion", GQ_ADMISSION_VERSION, "kind",
                   "AdmissionReview", "response", resp);
}
