/* sim/kinds.c - the resource registry: built-in kinds and CRD kinds. */
#include "sim/sim.h"

#include "api/jsonpath.h"
#include "base/alloc.h"
#include "base/err.h"
#include "sim/schema.h"
#include "sim/table_builtin.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char **strv(size_t *n, ...)
{
  va_list ap;
  const char *s;
  char **v = gq_xcalloc(8, sizeof(*v));

  *n = 0;
  va_start(ap, n);
  while ((s = va_arg(ap, const char *)) != NULL && *n < 7)
    v[(*n)++] = gq_xstrdup(s);
  va_end(ap);
  return v;
}

static struct gq_sim_kind *add_kind(struct gq_sim *s, const char *group,
                                    const char *version, const char *plural,
                                    const char *singular, const char *kind,
                                    int namespaced)
{
  struct gq_sim_kind *k = gq_xcalloc(1, sizeof(*k));

  k->group = gq_xstrdup(group);
  k->version = gq_xstrdup(version);
  k->plural = gq_xstrdup(plural);
  k->singular = gq_xstrdup(singular);
  k->kind = gq_xstrdup(kind);
  k->list_kind = gq_xasprintf("%sList", kind);
  k->namespaced = namespaced;
  k->short_names = strv(&k->n_short, NULL);
  k->categories = strv(&k->n_categories, NULL);
  k->next = s->kinds;
  s->kinds = k;
  s->kinds_gen++;
  return k;
}

static void set_short(struct gq_sim_kind *k, const char *a, const char *b)
{
  for (size_t i = 0; i < k->n_short; i++)
    free(k->short_names[i]);
  free(k->short_names);
  k->short_names = strv(&k->n_short, a, b, NULL);
}

static void set_table(struct gq_sim_kind *k, gq_sim_coldefs_fn d,
                      gq_sim_cells_fn c)
{
  k->coldefs = d;
  k->cells = c;
}

/* The built-in kinds gpuq and kubectl use (DESIGN §7). */
void gq_sim_kinds_init(struct gq_sim *s)
{
  struct gq_sim_kind *k, *core_events;

  k = add_kind(s, "", "v1", "namespaces", "namespace", "Namespace", 0);
  set_short(k, "ns", NULL);
  k->has_status = 1;
  k->defaults = gq_sim_namespace_defaults;
  set_table(k, gq_tb_namespace_cols, gq_tb_namespace_cells);
  k = add_kind(s, "", "v1", "nodes", "node", "Node", 0);
  set_short(k, "no", NULL);
  k->has_status = 1;
  k->defaults = gq_sim_node_defaults;
  set_table(k, gq_tb_node_cols, gq_tb_node_cells);
  k = add_kind(s, "", "v1", "pods", "pod", "Pod", 1);
  set_short(k, "po", NULL);
  k->has_status = 1;
  k->extra_sub = "pods";
  free(k->categories);
  k->categories = strv(&k->n_categories, "all", NULL);
  set_table(k, gq_tb_pod_cols, gq_tb_pod_cells);
  k = add_kind(s, "", "v1", "services", "service", "Service", 1);
  set_short(k, "svc", NULL);
  k->has_status = 1;
  k->defaults = gq_sim_service_defaults;
  set_table(k, gq_tb_service_cols, gq_tb_service_cells);
  /* stored as given (no status, no checks): `kubectl gpuq usage` reads
   * its prices from ConfigMap gpuq-system/gpuq-prices */
  k = add_kind(s, "", "v1", "configmaps", "configmap", "ConfigMap", 1);
  set_short(k, "cm", NULL);
  k = add_kind(s, "", "v1", "events", "event", "Event", 1);
  set_short(k, "ev", NULL);
  set_table(k, gq_tb_event_cols, gq_tb_event_cells);
  core_events = k;
  k = add_kind(s, "events.k8s.io", "v1", "events", "event", "Event", 1);
  set_short(k, "ev", NULL);
  set_table(k, gq_tb_event_cols, gq_tb_event_cells);
  k->view_of = core_events;
  k->present = gq_sim_event_to_view;
  k->absorb = gq_sim_event_from_view;
  k = add_kind(s, "coordination.k8s.io", "v1", "leases", "lease", "Lease", 1);
  set_table(k, gq_tb_lease_cols, gq_tb_lease_cells);
  k = add_kind(s, "scheduling.k8s.io", "v1", "priorityclasses",
               "priorityclass", "PriorityClass", 0);
  set_short(k, "pc", NULL);
  k->defaults = gq_sim_priorityclass_defaults;
  set_table(k, gq_tb_pc_cols, gq_tb_pc_cells);
  k = add_kind(s, "policy", "v1", "poddisruptionbudgets",
               "poddisruptionbudget", "PodDisruptionBudget", 1);
  set_short(k, "pdb", NULL);
  k->has_status = 1;
  set_table(k, gq_tb_pdb_cols, gq_tb_pdb_cells);
  k = add_kind(s, "batch", "v1", "jobs", "job", "Job", 1);
  k->has_status = 1;
  free(k->categories);
  k->categories = strv(&k->n_categories, "all", NULL);
  k = add_kind(s, "admissionregistration.k8s.io", "v1",
               "mutatingwebhookconfigurations",
               "mutatingwebhookconfiguration", "MutatingWebhookConfiguration",
               0);
  k->defaults = gq_sim_mutating_defaults;
  k = add_kind(s, "admissionregistration.k8s.io", "v1",
               "validatingwebhookconfigurations",
               "validatingwebhookconfiguration",
               "ValidatingWebhookConfiguration", 0);
  k->defaults = gq_sim_validating_defaults;
  k = add_kind(s, "apiextensions.k8s.io", "v1", "customresourcedefinitions",
               "customresourcedefinition", "CustomResourceDefinition", 0);
  set_short(k, "crd", "crds");
  k->has_status = 1;
  k->defaults = gq_sim_crd_defaults;
  set_table(k, gq_tb_crd_cols, gq_tb_crd_cells);
}

int gq_sim_kinds_print(FILE *f)
{
  struct gq_sim s;
  json_t *out = json_array();
  int rc;

  memset(&s, 0, sizeof s);
  gq_sim_kinds_init(&s);
  /* The registry is a list with the newest first: registry order is the
   * reverse, so each new entry goes in front. */
  for (struct gq_sim_kind *k = s.kinds; k; k = k->next) {
    json_array_insert_new(out, 0,
                          json_pack("{s:s, s:s, s:s, s:s}", "group", k->group,
                                    "version", k->version, "kind", k->kind,
                                    "listKind", k->list_kind));
    if (k->extra_sub) {
      json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "group",
                                           "policy", "version", "v1", "kind",
                                           "Eviction"));
      json_array_append_new(out, json_pack("{s:s, s:s, s:s}", "group", "",
                                           "version", "v1", "kind",
                                           "Binding"));
    }
  }
  gq_sim_kinds_release(&s);
  rc = json_dumpf(out, f, JSON_INDENT(1)) == 0 && fputc('\n', f) != EOF &&
               fflush(f) == 0
           ? 0
           : -1;
  json_decref(out);
  return rc;
}

static void clear_crd_fields(struct gq_sim_kind *k);

static void free_kind(struct gq_sim_kind *k)
{
  struct gq_sim_obj *o, *tmp;

  HASH_ITER(hh, k->objs, o, tmp) {
    HASH_DEL(k->objs, o);
    json_decref(o->obj);
    free(o->key);
    free(o);
  }
  clear_crd_fields(k);
  free(k->group);
  free(k->version);
  free(k->plural);
  free(k);
}

void gq_sim_kinds_release(struct gq_sim *s)
{
  while (s->kinds) {
    struct gq_sim_kind *k = s->kinds;

    s->kinds = k->next;
    free_kind(k);
  }
}

struct gq_sim_kind *gq_sim_kind_find(struct gq_sim *s, const char *group,
                                     const char *version, const char *plural)
{
  for (struct gq_sim_kind *k = s->kinds; k; k = k->next)
    if (!k->dropped && strcmp(k->group, group) == 0 &&
        strcmp(k->version, version) == 0 && strcmp(k->plural, plural) == 0)
      return k;
  return NULL;
}

int gq_sim_kind_find_gv(struct gq_sim *s, const char *group,
                        const char *version)
{
  for (struct gq_sim_kind *k = s->kinds; k; k = k->next)
    if (!k->dropped && strcmp(k->group, group) == 0 &&
        strcmp(k->version, version) == 0)
      return 1;
  return 0;
}

struct gq_sim_kind *gq_sim_kind_by_kind(struct gq_sim *s, const char *group,
                                        const char *kind)
{
  for (struct gq_sim_kind *k = s->kinds; k; k = k->next)
    if (!k->dropped && strcmp(k->group, group) == 0 &&
        strcmp(k->kind, kind) == 0)
      return k;
  return NULL;
}

const char *gq_sim_kind_api_version(const struct gq_sim_kind *k, char *buf,
                                    size_t len)
{
  if (*k->group)
    snprintf(buf, len, "%s/%s", k->group, k->version);
  else
    snprintf(buf, len, "%s", k->version);
  return buf;
}

static char *jstr(const json_t *o, const char *key)
{
  const char *v = json_string_value(json_object_get(o, key));

  return gq_xstrdup(v ? v : "");
}

static char **jstrv(const json_t *arr, size_t *n)
{
  char **v = gq_xcalloc(json_array_size(arr) + 1, sizeof(*v));
  const json_t *e;
  size_t i;

  *n = 0;
  json_array_foreach((json_t *)arr, i, e)
    if (json_is_string(e))
      v[(*n)++] = gq_xstrdup(json_string_value(e));
  return v;
}

/* Reads additionalPrinterColumns of the served version; a bad column is
 * reported with its field path, as the apiserver's CRD validation does. */
static int read_columns(struct gq_sim_kind *k, const json_t *ver, char *err,
                        size_t errlen)
{
  const json_t *cols = json_object_get(ver, "additionalPrinterColumns"), *c;
  char why[256];
  size_t i;

  k->cols = gq_xcalloc(json_array_size(cols) + 1, sizeof(*k->cols));
  json_array_foreach((json_t *)cols, i, c) {
    struct gq_sim_col *col = &k->cols[k->n_cols++];

    col->name = jstr(c, "name");
    col->type = jstr(c, "type");
    col->format = jstr(c, "format");
    col->description = jstr(c, "description");
    col->jsonpath = jstr(c, "jsonPath");
    col->priority = (int)json_integer_value(json_object_get(c, "priority"));
    if (!*col->name || !*col->type) {
      snprintf(err, errlen, "spec.versions[0].additionalPrinterColumns[%zu]: "
               "Required value: name and type are required", i);
      return GQ_EINVAL;
    }
    if (gq_jsonpath_valid(col->jsonpath, why, sizeof(why)) != 0) {
      snprintf(err, errlen, "spec.versions[0].additionalPrinterColumns[%zu]."
               "jsonPath: Invalid value: \"%s\": %s", i, col->jsonpath, why);
      return GQ_EINVAL;
    }
  }
  return 0;
}

/* The version a CRD serves as storage (we serve exactly one). */
static const json_t *served_version(const json_t *spec, char *err,
                                    size_t errlen)
{
  const json_t *vers = json_object_get(spec, "versions"), *v;
  size_t i;

  json_array_foreach((json_t *)vers, i, v)
    if (json_is_true(json_object_get(v, "storage")))
      return v;
  snprintf(err, errlen, "spec.versions: must have exactly one storage version");
  return NULL;
}

/* Frees what a CRD kind took from its CRD (names, columns, the CRD). */
static void clear_crd_fields(struct gq_sim_kind *k)
{
  for (size_t i = 0; i < k->n_short; i++)
    free(k->short_names[i]);
  for (size_t i = 0; i < k->n_categories; i++)
    free(k->categories[i]);
  for (size_t i = 0; i < k->n_cols; i++) {
    free(k->cols[i].name);
    free(k->cols[i].type);
    free(k->cols[i].format);
    free(k->cols[i].description);
    free(k->cols[i].jsonpath);
  }
  free(k->short_names);
  free(k->categories);
  free(k->cols);
  free(k->singular);
  free(k->kind);
  free(k->list_kind);
  json_decref(k->crd);
  k->short_names = k->categories = NULL;
  k->cols = NULL;
  k->n_short = k->n_categories = k->n_cols = 0;
  k->crd = NULL;
}

/* Fills a CRD kind's names, columns and schema from the CRD. */
static int fill_crd_fields(struct gq_sim_kind *k, json_t *crd,
                           const json_t *ver, const json_t *schema,
                           char *err, size_t errlen)
{
  const json_t *spec = json_object_get(crd, "spec");
  const json_t *names = json_object_get(spec, "names");
  const char *kind = json_string_value(json_object_get(names, "kind"));

  /* singular and listKind: the CRD's defaults (gq_sim_crd_defaults) */
  k->singular = jstr(names, "singular");
  k->kind = gq_xstrdup(kind);
  k->list_kind = jstr(names, "listKind");
  k->short_names = jstrv(json_object_get(names, "shortNames"), &k->n_short);
  k->categories = jstrv(json_object_get(names, "categories"),
                        &k->n_categories);
  k->has_status = json_object_get(json_object_get(ver, "subresources"),
                                  "status") != NULL;
  k->has_scale = json_object_get(json_object_get(ver, "subresources"),
                                 "scale") != NULL;
  k->crd = json_incref(crd);
  k->schema = schema;
  return read_columns(k, ver, err, errlen);
}

int gq_sim_kind_from_crd(struct gq_sim *s, json_t *crd, char *err,
                         size_t errlen)
{
  const json_t *spec = json_object_get(crd, "spec");
  const json_t *names = json_object_get(spec, "names");
  const json_t *ver = served_version(spec, err, errlen), *schema;
  const char *group = json_string_value(json_object_get(spec, "group"));
  const char *plural = json_string_value(json_object_get(names, "plural"));
  const char *kind = json_string_value(json_object_get(names, "kind"));
  const char *scope = json_string_value(json_object_get(spec, "scope"));
  const char *version;
  struct gq_sim_kind *k;
  char why[512];

  gq_sim_crd_defaults(s, crd); /* names.singular, listKind (in place) */
  if (!ver)
    return GQ_EINVAL;
  version = json_string_value(json_object_get(ver, "name"));
  if (!group || !plural || !kind || !scope || !version) {
    snprintf(err, errlen, "spec: group, names.plural, names.kind, scope and "
             "versions[].name are required");
    return GQ_EINVAL;
  }
  schema = gq_schema_for_version(crd, version);
  if (!schema) {
    snprintf(err, errlen, "spec.versions[0].schema.openAPIV3Schema: Required "
             "value");
    return GQ_EINVAL;
  }
  if (gq_schema_check_structural(schema, why, sizeof(why)) != 0) {
    snprintf(err, errlen, "spec.versions[0].schema.openAPIV3Schema.%s", why);
    return GQ_EINVAL;
  }
  /* A kind is never freed while the sim runs (events and watches point at
   * it): a re-created or updated CRD reuses its kind. */
  for (k = s->kinds; k; k = k->next)
    if (k->is_crd && strcmp(k->group, group) == 0 &&
        strcmp(k->plural, plural) == 0)
      break;
  if (!k) {
    k = add_kind(s, group, version, plural, "", kind,
                 strcmp(scope, "Namespaced") == 0);
    k->is_crd = 1;
  }
  clear_crd_fields(k);
  free(k->version);
  k->version = gq_xstrdup(version);
  k->namespaced = strcmp(scope, "Namespaced") == 0;
  k->dropped = 0;
  s->kinds_gen++;
  if (fill_crd_fields(k, crd, ver, schema, err, errlen) != 0) {
    k->dropped = 1;
    return GQ_EINVAL;
  }
  return 0;
}

void gq_sim_kind_drop_crd(struct gq_sim *s, const char *crd_name)
{
  char name[512];

  for (struct gq_sim_kind *k = s->kinds; k; k = k->next) {
    if (!k->is_crd || k->dropped)
      continue;
    snprintf(name, sizeof(name), "%s.%s", k->plural, k->group);
    if (strcmp(name, crd_name) == 0) {
      k->dropped = 1;
      s->kinds_gen++;
      return;
    }
  }
}
