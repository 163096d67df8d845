/* api/teamquota.c - TeamQuota decoding and validation (see teamquota.h). */
#include "api/teamquota.h"

#include "api/gpujob.h"
#include "base/alloc.h"
#include "base/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void decode_namespaces(struct gq_dec *d, const json_t *spec,
                              struct gq_teamquota *q)
{
  q->namespaces = gq_dec_string_array(d, spec, "spec.namespaces", 1,
                                      GQ_MAX_TEAM_NAMESPACES, gq_dec_dns_label,
                                      &q->n_namespaces);
  if (!d->rc && q->n_namespaces == 0)
    gq_dec_fail(d, "spec.namespaces", "must name at least one namespace");
}

/* One spec.resources[i] entry. */
static void decode_res(struct gq_dec *d, const json_t *r, const char *base,
                       struct gq_quota_res *out)
{
  char p[GQ_DEC_PATH_MAX];

  if (!json_is_object(r)) {
    gq_dec_fail_got(d, base, r, "must be an object");
    return;
  }
  out->flavor = gq_dec_string(d, r, gq_dec_path(p, "%s.flavor", base), 1, 63,
                              "");
  if (!d->rc && strcmp(out->flavor, GQ_FLAVOR_ANY) != 0)
    gq_dec_label_value(d, p, out->flavor);
  out->resource = gq_dec_string(d, r, gq_dec_path(p, "%s.resource", base), 0,
                                253, GQ_DEFAULT_GPU_RESOURCE);
  if (!d->rc)
    gq_dec_qualified_name(d, p, out->resource);
  if (!d->rc && !gq_dec_get(r, "nominal"))
    gq_dec_fail(d, gq_dec_path(p, "%s.nominal", base), "required value");
  gq_dec_int(d, r, gq_dec_path(p, "%s.nominal", base), 0, GQ_MAX_QUOTA_GPUS, 0,
             &out->nominal);
  gq_dec_int(d, r, gq_dec_path(p, "%s.borrowingLimit", base), 0,
             GQ_MAX_QUOTA_GPUS, GQ_NO_LIMIT, &out->borrow_limit);
  gq_dec_int(d, r, gq_dec_path(p, "%s.lendingLimit", base), 0,
             GQ_MAX_QUOTA_GPUS, GQ_NO_LIMIT, &out->lend_limit);
  if (!d->rc && out->lend_limit > out->nominal)
    gq_dec_fail_got(d, p, gq_dec_get(r, "lendingLimit"),
                    "must not exceed nominal (%lld)", (long long)out->nominal);
}

static void decode_resources(struct gq_dec *d, const json_t *spec,
                             struct gq_teamquota *q)
{
  const json_t *arr = gq_dec_array(d, spec, "spec.resources", 1,
                                   GQ_MAX_QUOTA_RESOURCES), *r;
  char base[GQ_DEC_PATH_MAX];
  size_t i;

  if (!arr || d->rc)
    return;
  if (json_array_size(arr) == 0) {
    gq_dec_fail(d, "spec.resources", "must have at least one entry");
    return;
  }
  q->res = gq_xcalloc(json_array_size(arr), sizeof(*q->res));
  json_array_foreach((json_t *)arr, i, r) {
    struct gq_quota_res *cur = &q->res[i];

    gq_dec_path(base, "spec.resources[%zu]", i);
    decode_res(d, r, base, cur);
    if (d->rc)
      return;
    for (size_t k = 0; k < i; k++)
      if (strcmp(q->res[k].flavor, cur->flavor) == 0 &&
          strcmp(q->res[k].resource, cur->resource) == 0) {
        gq_dec_fail(d, base, "duplicate flavor \"%s\" for resource %s (also "
                    "in spec.resources[%zu])", cur->flavor, cur->resource, k);
        return;
      }
    q->n_res = i + 1;
  }
}

static const char *const within_names[] = {"Never", "LowerPriority", NULL};
static const char *const reclaim_names[] = {"Never", "LowerPriority", "Any",
                                            NULL};
/* enum gq_sched_policy's order (decide/las.h) */
static const char *const sched_names[] = {"fifo-backfill", "attained-service",
                                          NULL};

static const char *const idle_actions[] = {"Report", "Preempt", NULL};

/* spec.idlePolicy (issue 22): threshold percent, afterMinutes, action. */
static void decode_idle(struct gq_dec *d, const json_t *spec,
                        struct gq_idle_policy *ip)
{
  const json_t *o = gq_dec_object(d, spec, "spec.idlePolicy", 0);
  int64_t thr = GQ_IDLE_THRESHOLD_DEFAULT;

  ip->set = o != NULL;
  gq_dec_int(d, o, "spec.idlePolicy.threshold", 0, 100,
             GQ_IDLE_THRESHOLD_DEFAULT, &thr);
  ip->threshold_pct = (int)thr;
  gq_dec_int(d, o, "spec.idlePolicy.afterMinutes", 1, GQ_IDLE_AFTER_MIN_MAX,
             GQ_IDLE_AFTER_MIN_DEFAULT, &ip->after_min);
  ip->action = gq_dec_enum(d, o, "spec.idlePolicy.action", idle_actions, 0,
                           GQ_IDLE_REPORT);
}

static void decode_spec(struct gq_dec *d, const json_t *spec,
                        struct gq_teamquota *q)
{
  const json_t *pre;

  if (!d->rc && strlen(q->meta.name) > 63)
    gq_dec_fail(d, "metadata.name", "must be no more than 63 characters (it "
                "names the team in GpuJobs and labels), got %zu",
                strlen(q->meta.name));
  if (!d->rc)
    gq_dec_dns_label(d, "metadata.name", q->meta.name);
  decode_namespaces(d, spec, q);
  q->cohort = gq_dec_string(d, spec, "spec.cohort", 0, 63, NULL);
  if (!d->rc && q->cohort && !*q->cohort)
    q->cohort = NULL; /* "" means no cohort, as absent does */
  if (!d->rc && q->cohort)
    gq_dec_dns_label(d, "spec.cohort", q->cohort);
  gq_dec_number(d, spec, "spec.weight", 0.001, 1000000, 1, &q->weight);
  decode_resources(d, spec, q);
  pre = gq_dec_object(d, spec, "spec.preemption", 0);
  q->within_team = gq_dec_enum(d, pre, "spec.preemption.withinTeam",
                               within_names, 0, GQ_WITHIN_LOWER_PRIORITY);
  q->reclaim = gq_dec_enum(d, pre, "spec.preemption.reclaimFromCohort",
                           reclaim_names, 0, GQ_RECLAIM_ANY);
  q->sched = gq_dec_enum(d, spec, "spec.schedulingPolicy", sched_names, 0, -1);
  decode_idle(d, spec, &q->idle);
}

int gq_teamquota_decode(const json_t *obj, struct gq_teamquota *out, char *err,
                        size_t errlen)
{
  struct gq_dec d;

  memset(out, 0, sizeof(*out));
  gq_dec_init(&d);
  if (!json_is_object(obj))
    gq_dec_fail_got(&d, "(root)", obj, "must be an object");
  if (gq_meta_decode(&d, obj, 0, &out->meta) == 0)
    decode_spec(&d, gq_dec_object(&d, obj, "spec", 1), out);
  if (d.rc) {
    snprintf(err, errlen, "%s", d.msg);
    gq_teamquota_release(out);
    return d.rc;
  }
  out->json = json_incref((json_t *)obj);
  return 0;
}

void gq_teamquota_release(struct gq_teamquota *q)
{
  gq_meta_release(&q->meta);
  free(q->namespaces);
  free(q->res);
  json_decref(q->json);
  memset(q, 0, sizeof(*q));
}

void *gq_teamquota_decode_new(const json_t *obj, char *err, size_t errlen)
{
  struct gq_teamquota *q = gq_xcalloc(1, sizeof(*q));

  if (gq_teamquota_decode(obj, q, err, errlen) == 0)
    return q;
  free(q);
  return NULL;
}

void gq_teamquota_free(void *q)
{
  gq_teamquota_release(q);
  free(q);
}
