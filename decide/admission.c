/* decide/admission.c - the admission webhooks' decisions (see
 * admission.h). */
#include "decide/admission.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "decide/gpujob.h"

int gq_adm_is_gpu_resource(const char *name)
{
  return !strcmp(name, "nvidia.com/gpu") ||
         !strncmp(name, "nvidia.com/mig-", strlen("nvidia.com/mig-"));
}

/* A bounded appender: text past the end is dropped, and the buffer ends
 * with "..." when anything was. */
struct app {
  char *buf;
  size_t cap, len;
};

static void app_add(struct app *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void app_add(struct app *a, const char *fmt, ...)
{
  va_list ap;
  int n;

  if (a->len + 1 < a->cap) {
    va_start(ap, fmt);
    n = vsnprintf(a->buf + a->len, a->cap - a->len, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < a->cap - a->len) {
      a->len += (size_t)n;
      return;
    }
  }
  /* Full (now, or already): mark the cut. */
  a->len = a->cap - 1;
  if (a->cap > 4)
    memcpy(a->buf + a->cap - 4, "...", 4);
}

/* "team-a [team-a], team-b [team-b, shared]", or "none". */
static void list_teams(struct app *a, const struct gq_teamquota *const *tq,
                       size_t n)
{
  if (n == 0)
    app_add(a, "none");
  for (size_t i = 0; i < n; i++) {
    app_add(a, "%s%s [", i ? ", " : "", tq[i]->meta.name);
    for (size_t j = 0; j < tq[i]->n_namespaces; j++)
      app_add(a, "%s%s", j ? ", " : "", tq[i]->namespaces[j]);
    app_add(a, "]");
  }
}

/* The names of the TeamQuotas admitting ns, comma-separated. */
static void list_admitting(struct app *a, const struct gq_teamquota *const *tq,
                           size_t n, const char *ns)
{
  int first = 1;

  for (size_t i = 0; i < n; i++)
    if (gq_teamquota_admits_namespace(tq[i], ns)) {
      app_add(a, "%s%s", first ? "" : ", ", tq[i]->meta.name);
      first = 0;
    }
  if (first)
    app_add(a, "none");
}

static void refuse(struct gq_adm_result *out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void refuse(struct gq_adm_result *out, const char *fmt, ...)
{
  va_list ap;

  out->allowed = 0;
  va_start(ap, fmt);
  vsnprintf(out->msg, sizeof(out->msg), fmt, ap);
  va_end(ap);
}

/* How a workload's team resolves. */
enum gq_adm_team_rc gq_adm_team(const char *label, const char *ns,
                                const struct gq_teamquota *const *tq,
                                size_t n, const char **team)
{
  size_t admitting = 0;

  *team = NULL;
  for (size_t i = 0; i < n; i++) {
    if (!gq_teamquota_admits_namespace(tq[i], ns))
      continue;
    admitting++;
    if (!label || !strcmp(label, tq[i]->meta.name))
      *team = tq[i]->meta.name;
  }
  if (label)
    return *team ? GQ_ADM_TEAM_OK : GQ_ADM_TEAM_BAD_LABEL;
  if (admitting > 1)
    *team = NULL;
  return admitting == 0   ? GQ_ADM_TEAM_NONE
         : admitting == 1 ? GQ_ADM_TEAM_OK
                          : GQ_ADM_TEAM_AMBIGUOUS;
}

static enum gq_adm_team_rc resolve_team(const struct gq_adm_req *r,
                                        const struct gq_teamquota *const *tq,
                                        size_t n, const char **team)
{
  return gq_adm_team(gq_kv_get(r->obj.labels, r->obj.n_labels, GQ_LBL_TEAM),
                     r->ns, tq, n, team);
}

static int has_gate(const struct gq_adm_obj *o, const char *gate)
{
  for (size_t i = 0; i < o->n_gates; i++)
    if (!strcmp(o->gates[i], gate))
      return 1;
  return 0;
}

/* Writes key into dst as one RFC 6901 reference token ('~' -> "~0",
 * '/' -> "~1"), truncated to fit. */
static void pointer_token(struct app *a, const char *key)
{
  for (const char *p = key; *p; p++)
    app_add(a, "%s", *p == '~' ? "~0" : *p == '/' ? "~1" : (char[2]){*p, 0});
}

/* Appends s as a JSON string (RFC 8259 §7: '"', '\\' and controls
 * escaped). */
static void json_str(struct app *a, const char *s)
{
  app_add(a, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      app_add(a, "\\%c", *p);
    else if (*p < 0x20)
      app_add(a, "\\u%04x", *p);
    else
      app_add(a, "%c", *p);
  }
  app_add(a, "\"");
}

static struct gq_adm_patch *new_op(struct gq_adm_result *out)
{
  struct gq_adm_patch *p = &out->ops[out->n_ops++];

  p->op = "add";
  p->path[0] = p->value[0] = '\0';
  return p;
}

/* Adds metadata.<map>[key] = value: the whole map when it is absent. */
static void add_meta(struct gq_adm_result *out, const char *map, int has_map,
                     const char *key, const char *value)
{
  struct gq_adm_patch *p = new_op(out);
  struct app path = {p->path, sizeof(p->path), 0};
  struct app val = {p->value, sizeof(p->value), 0};

  app_add(&path, "/metadata/%s", map);
  if (has_map) {
    app_add(&path, "/");
    pointer_token(&path, key);
  } else {
    app_add(&val, "{");
    json_str(&val, key);
    app_add(&val, ":");
  }
  json_str(&val, value);
  if (!has_map)
    app_add(&val, "}");
}

/* The gate (appended, or the array created), for a pod without it. */
static void add_gate(struct gq_adm_result *out, const struct gq_adm_obj *o)
{
  struct gq_adm_patch *p;

  if (has_gate(o, GQ_GATE_ADMISSION))
    return;
  p = new_op(out);
  snprintf(p->path, sizeof(p->path), "/spec/schedulingGates%s",
           o->has_gates ? "/-" : "");
  snprintf(p->value, sizeof(p->value), "%s{\"name\":\"%s\"}%s",
           o->has_gates ? "" : "[", GQ_GATE_ADMISSION, o->has_gates ? "" : "]");
}

/* The annotation and the team label, unless the object has them. */
static void add_marks(struct gq_adm_result *out, const struct gq_adm_obj *o,
                      const char *team)
{
  const char *lbl = gq_kv_get(o->labels, o->n_labels, GQ_LBL_TEAM);

  if (!o->managed || strcmp(o->managed, "true"))
    add_meta(out, "annotations", o->has_annotations, GQ_ANN_MANAGED, "true");
  if (!lbl || strcmp(lbl, team))
    add_meta(out, "labels", o->has_labels, GQ_LBL_TEAM, team);
}

static int gpuqs_own(const struct gq_adm_obj *o)
{
  return gq_kv_get(o->labels, o->n_labels, GQ_LBL_JOB_UID) != NULL;
}

size_t gq_adm_mutate(const struct gq_adm_req *r,
                     const struct gq_teamquota *const *tq, size_t n,
                     struct gq_adm_result *out)
{
  const struct gq_adm_obj *o = &r->obj;
  int labelled = gq_kv_get(o->labels, o->n_labels, GQ_LBL_TEAM) != NULL;

  memset(out, 0, sizeof(*out));
  out->allowed = 1;
  if (r->op != GQ_ADM_CREATE || r->kind == GQ_ADM_OTHER || gpuqs_own(o))
    return 0;
  /* A Job joins gpuq by its team label too; a pod only by its GPUs. */
  if (!o->gpus && !(r->kind == GQ_ADM_JOB && labelled))
    return 0;
  if (resolve_team(r, tq, n, &out->team) != GQ_ADM_TEAM_OK)
    return 0; /* unchanged: not a team's, or refused by validation */
  if (r->kind == GQ_ADM_POD) {
    add_gate(out, o);
  } else if (!o->suspend) {
    struct gq_adm_patch *p = new_op(out);

    snprintf(p->path, sizeof(p->path), "/spec/suspend");
    snprintf(p->value, sizeof(p->value), "true");
  }
  add_marks(out, o, out->team);
  return out->n_ops;
}

/* The workload's noun in messages. */
static const char *noun(const struct gq_adm_req *r)
{
  return r->kind == GQ_ADM_JOB ? "GPU Jobs" : "GPU pods";
}

/* The CREATE rules (and a changed team label on UPDATE): 0 refused. */
static int check_team(const struct gq_adm_req *r,
                      const struct gq_teamquota *const *tq, size_t n,
                      struct gq_adm_result *out)
{
  const char *lbl = gq_kv_get(r->obj.labels, r->obj.n_labels, GQ_LBL_TEAM);
  char list[GQ_ADM_MSG_MAX / 2] = "";
  struct app a = {list, sizeof(list), 0};

  switch (resolve_team(r, tq, n, &out->team)) {
  case GQ_ADM_TEAM_OK:
    return 1;
  case GQ_ADM_TEAM_NONE:
    if (!r->obj.gpus)
      return 1;
    list_teams(&a, tq, n);
    refuse(out,
           "namespace \"%s\" is not admitted by any TeamQuota "
           "(TeamQuotas: %s); %s must run in a team namespace",
           r->ns, list, noun(r));
    return 0;
  case GQ_ADM_TEAM_AMBIGUOUS:
    if (!r->obj.gpus)
      return 1;
    list_admitting(&a, tq, n, r->ns);
    refuse(out,
           "metadata.labels[\"%s\"]: required: namespace \"%s\" is "
           "admitted by several TeamQuotas (%s); %s there must name their "
           "team",
           GQ_LBL_TEAM, r->ns, list, noun(r));
    return 0;
  case GQ_ADM_TEAM_BAD_LABEL:
    break;
  }
  for (size_t i = 0; i < n; i++)
    if (!strcmp(tq[i]->meta.name, lbl)) {
      list_admitting(&a, tq, n, r->ns);
      refuse(out,
             "metadata.labels[\"%s\"]: TeamQuota \"%s\" does not admit "
             "namespace \"%s\" (TeamQuotas admitting it: %s), got \"%s\"",
             GQ_LBL_TEAM, lbl, r->ns, list, lbl);
      return 0;
    }
  list_teams(&a, tq, n);
  refuse(out,
         "metadata.labels[\"%s\"]: no TeamQuota \"%s\" exists "
         "(TeamQuotas: %s), got \"%s\"",
         GQ_LBL_TEAM, lbl, list, lbl);
  return 0;
}

/* UPDATE of a pod: only the controller lifts the gate. 0 refused. */
static int check_gate(const struct gq_adm_req *r, const char *controller_user,
                      struct gq_adm_result *out)
{
  if (r->kind != GQ_ADM_POD || !has_gate(&r->old, GQ_GATE_ADMISSION) ||
      has_gate(&r->obj, GQ_GATE_ADMISSION) || !strcmp(r->user, controller_user))
    return 1;
  refuse(out,
         "spec.schedulingGates: only \"%s\" may remove gate \"%s\" "
         "(gpuq removes it when it admits the pod), got user \"%s\"",
         controller_user, GQ_GATE_ADMISSION, r->user);
  return 0;
}

int gq_adm_validate(const struct gq_adm_req *r,
                    const struct gq_teamquota *const *tq, size_t n,
                    const char *controller_user, struct gq_adm_result *out)
{
  const char *lbl, *old;

  memset(out, 0, sizeof(*out));
  out->allowed = 1;
  if (r->kind == GQ_ADM_OTHER)
    return 1;
  if (r->op == GQ_ADM_CREATE && !gpuqs_own(&r->obj))
    return check_team(r, tq, n, out);
  if (r->op != GQ_ADM_UPDATE || !check_gate(r, controller_user, out))
    return out->allowed;
  /* A label changed on UPDATE must still name a team of the namespace;
   * objects that kept theirs keep working when a TeamQuota changes. */
  lbl = gq_kv_get(r->obj.labels, r->obj.n_labels, GQ_LBL_TEAM);
  old = gq_kv_get(r->old.labels, r->old.n_labels, GQ_LBL_TEAM);
  if (lbl && (!old || strcmp(lbl, old)) && !gpuqs_own(&r->obj)) {
    struct gq_adm_req c = *r;

    c.obj.gpus = 0; /* a running pod is not refused for its namespace */
    check_team(&c, tq, n, out);
  }
  return out->allowed;
}
