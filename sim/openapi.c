/* sim/openapi.c - loading the generated definitions and the forms
 * kube-apiserver serves them in (openapi.h). */
#include "sim/openapi.h"

#include "base/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define V2_PREFIX "#/definitions/"
#define V3_PREFIX "#/components/schemas/"
#define META_OBJECT "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
#define K_PRESERVE "x-kubernetes-preserve-unknown-fields"

int gq_openapi_load(const char *path, json_t **out, char *err, size_t errlen)
{
  struct stat st;
  json_error_t je;
  json_t *doc, *defs, *d;
  const char *name;

  *out = NULL;
  if (stat(path, &st) != 0) {
    snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
    return errno == ENOENT ? GQ_ENOTFOUND : GQ_EINVAL;
  }
  if ((size_t)st.st_size > GQ_OPENAPI_MAX_FILE) {
    snprintf(err, errlen, "'%s' is over %u bytes", path, GQ_OPENAPI_MAX_FILE);
    return GQ_ETOOBIG;
  }
  doc = json_load_file(path, 0, &je);
  if (!doc) {
    snprintf(err, errlen, "'%s': line %d: %s", path, je.line, je.text);
    return GQ_EINVAL;
  }
  defs = json_object_get(doc, "definitions");
  if (!json_is_object(defs)) {
    snprintf(err, errlen, "'%s': want an object with \"definitions\", an "
             "object", path);
    json_decref(doc);
    return GQ_EINVAL;
  }
  json_object_foreach(defs, name, d) {
    if (!json_is_object(d)) {
      snprintf(err, errlen, "'%s': definition '%s' is not an object", path,
               name);
      json_decref(doc);
      return GQ_EINVAL;
    }
  }
  *out = doc;
  return 0;
}

static int gvk_is(const json_t *e, const char *group, const char *version,
                  const char *kind)
{
  const char *g = json_string_value(json_object_get(e, "group"));
  const char *v = json_string_value(json_object_get(e, "version"));
  const char *k = json_string_value(json_object_get(e, "kind"));

  return g && v && k && !strcmp(g, group) && !strcmp(v, version) &&
         !strcmp(k, kind);
}

const char *gq_openapi_find(const json_t *defs, const char *group,
                            const char *version, const char *kind)
{
  const char *name;
  json_t *d, *e;
  size_t i;

  json_object_foreach((json_t *)defs, name, d) {
    json_array_foreach(json_object_get(d, "x-kubernetes-group-version-kind"),
                       i, e) {
      if (gvk_is(e, group, version, kind))
        return name;
    }
  }
  return NULL;
}

/* Every $ref below s, into 'out' with its own references. */
static void closure_refs(const json_t *defs, const json_t *s, json_t *out)
{
  const char *k, *ref;
  json_t *v;
  size_t i;

  if (json_is_array(s)) {
    json_array_foreach(s, i, v)
      closure_refs(defs, v, out);
    return;
  }
  if (!json_is_object(s))
    return;
  ref = json_string_value(json_object_get(s, "$ref"));
  if (ref && !strncmp(ref, V2_PREFIX, strlen(V2_PREFIX)))
    gq_openapi_closure(defs, ref + strlen(V2_PREFIX), out);
  json_object_foreach((json_t *)s, k, v) {
    /* An enum or a default is a value, not a schema. */
    if (strcmp(k, "enum") && strcmp(k, "default") && strcmp(k, "example"))
      closure_refs(defs, v, out);
  }
}

void gq_openapi_closure(const json_t *defs, const char *name, json_t *out)
{
  json_t *d = json_object_get(defs, name);

  if (!d || json_object_get(out, name))
    return;
  json_object_set(out, name, d);
  closure_refs(defs, d, out);
}

json_t *gq_openapi_to_v3(const json_t *s)
{
  const char *k, *ref;
  json_t *v, *out;
  size_t i;

  if (json_is_array(s)) {
    out = json_array();
    json_array_foreach(s, i, v)
      json_array_append_new(out, gq_openapi_to_v3(v));
    return out;
  }
  if (!json_is_object(s))
    return json_deep_copy(s);
  out = json_object();
  ref = json_string_value(json_object_get(s, "$ref"));
  json_object_foreach((json_t *)s, k, v) {
    if (!strcmp(k, "$ref"))
      continue;
    if (!strcmp(k, "enum") || !strcmp(k, "default") || !strcmp(k, "example"))
      json_object_set_new(out, k, json_deep_copy(v));
    else
      json_object_set_new(out, k, gq_openapi_to_v3(v));
  }
  if (ref) {
    const char *name = !strncmp(ref, V2_PREFIX, strlen(V2_PREFIX))
                           ? ref + strlen(V2_PREFIX)
                           : NULL;
    json_t *r = name ? json_sprintf(V3_PREFIX "%s", name) : json_string(ref);
    json_t *one = json_pack("{s:o}", "$ref", r);

    if (json_object_size(out) == 0) {
      json_decref(out);
      return one;
    }
    json_object_set_new(out, "allOf", json_pack("[o]", one));
  }
  return out;
}

/* A CRD schema node in the v2 form (see gq_openapi_crd_v2). */
static json_t *crd_node_v2(const json_t *s)
{
  const char *k;
  json_t *v, *out;
  size_t i;

  if (json_is_array(s)) {
    out = json_array();
    json_array_foreach(s, i, v)
      json_array_append_new(out, crd_node_v2(v));
    return out;
  }
  if (!json_is_object(s))
    return json_deep_copy(s);
  if (json_is_true(json_object_get(s, K_PRESERVE))) {
    out = json_object();
    if ((v = json_object_get(s, "description")))
      json_object_set(out, "description", v);
    return out;
  }
  out = json_object();
  json_object_foreach((json_t *)s, k, v) {
    if (!strcmp(k, "enum") || !strcmp(k, "default") || !strcmp(k, "example"))
      json_object_set_new(out, k, json_deep_copy(v));
    else
      json_object_set_new(out, k, crd_node_v2(v));
  }
  return out;
}

json_t *gq_openapi_crd_v2(const json_t *schema)
{
  json_t *out = crd_node_v2(schema), *props;

  if (!json_is_object(out))
    return out;
  props = json_object_get(out, "properties");
  if (!json_is_object(props)) {
    props = json_object();
    json_object_set_new(out, "properties", props);
  }
  if (!json_object_get(props, "apiVersion"))
    json_object_set_new(props, "apiVersion", json_pack("{s:s}", "type",
                                                       "string"));
  if (!json_object_get(props, "kind"))
    json_object_set_new(props, "kind", json_pack("{s:s}", "type", "string"));
  /* The apiserver's own ObjectMeta replaces whatever the CRD says. */
  json_object_set_new(props, "metadata",
                      json_pack("{s:s}", "$ref", V2_PREFIX META_OBJECT));
  return out;
}
