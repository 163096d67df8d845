/* api/gpujob.c - GpuJob decoding and validation (see gpujob.h). */
#include "api/gpujob.h"

#include "base/alloc.h"
#include "base/err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const phase_names[] = {
    "",          "Pending", "Queued", "Admitted",  "Running",
    "Preempting", "Succeeded", "Failed", "Suspended", NULL};
static const char *const drain_names[] = {"Checkpoint", "Requeue", "Wait",
                                          NULL};

const char *gq_job_phase_name(enum gq_job_phase p)
{
  return p <= GQ_PHASE_SUSPENDED ? phase_names[p] : "";
}

const char *gq_drain_policy_name(enum gq_drain_policy p)
{
  return p <= GQ_DRAIN_WAIT ? drain_names[p] : "";
}

int gq_job_phase_final(enum gq_job_phase p)
{
  return p == GQ_PHASE_SUCCEEDED || p == GQ_PHASE_FAILED;
}

static int32_t get_i32(struct gq_dec *d, const json_t *o, const char *path,
                       int64_t min, int64_t max, int64_t dflt)
{
  int64_t v;

  gq_dec_int(d, o, path, min, max, dflt, &v);
  return (int32_t)v;
}

static void decode_gpu(struct gq_dec *d, const json_t *spec,
                       struct gq_gpujob *j)
{
  const json_t *gpu = gq_dec_object(d, spec, "spec.gpu", 0);

  j->gpu_resource = gq_dec_string(d, gpu, "spec.gpu.resource", 0, 253,
                                  GQ_DEFAULT_GPU_RESOURCE);
  if (!d->rc && !strchr(j->gpu_resource, '/'))
    gq_dec_fail_got(d, "spec.gpu.resource", gq_dec_get(gpu, "resource"),
                    "must be an extended resource name with a domain, such "
                    "as nvidia.com/gpu or nvidia.com/mig-1g.10gb");
  if (!d->rc)
    gq_dec_qualified_name(d, "spec.gpu.resource", j->gpu_resource);
  gq_dec_int(d, gpu, "spec.gpu.minMemoryMiB", 0, GQ_MAX_MIN_MEMORY_MIB, 0,
             &j->min_memory_mib);
  j->products = gq_dec_string_array(d, gpu, "spec.gpu.products", 0,
                                    GQ_MAX_PRODUCTS, gq_dec_label_value,
                                    &j->n_products);
}

static void decode_checkpoint(struct gq_dec *d, const json_t *spec,
                              struct gq_gpujob *j)
{
  const json_t *ck = gq_dec_object(d, spec, "spec.checkpoint", 0);

  j->has_checkpoint = ck != NULL;
  j->grace_s = j->checkpoint_interval_s = -1;
  if (!ck)
    return;
  if (!gq_dec_get(ck, "gracePeriodSeconds")) {
    gq_dec_fail(d, "spec.checkpoint.gracePeriodSeconds", "required value");
    return;
  }
  gq_dec_int(d, ck, "spec.checkpoint.gracePeriodSeconds", 1, GQ_MAX_GRACE_S,
             -1, &j->grace_s);
  gq_dec_int(d, ck, "spec.checkpoint.intervalSeconds", 1, GQ_MAX_DURATION_S,
             -1, &j->checkpoint_interval_s);
}

/* The pod template: a PodTemplateSpec whose spec gpuq completes. */
static void decode_template(struct gq_dec *d, const json_t *spec,
                            struct gq_gpujob *j)
{
  const json_t *tmpl = gq_dec_object(d, spec, "spec.template", 1);
  const json_t *pspec = gq_dec_object(d, tmpl, "spec.template.spec", 1);
  int64_t own;

  j->template = tmpl;
  if (d->rc || gq_podsched_decode(d, pspec, "spec.template.spec", &j->sched))
    return;
  if (*j->sched.node_name) {
    gq_dec_fail_got(d, "spec.template.spec.nodeName",
                    gq_dec_get(pspec, "nodeName"),
                    "must be empty (gpuq chooses the node)");
    return;
  }
  own = gq_podsched_request(&j->sched, j->gpu_resource);
  if (own != 0)
    gq_dec_fail(d, "spec.template.spec.containers",
                "must not request %s (gpuq sets it from "
                "spec.gpusPerReplica), got %lld",
                j->gpu_resource, (long long)own);
}

static void decode_status(struct gq_dec *d, const json_t *obj,
                          struct gq_gpujob_status *st)
{
  const json_t *s = gq_dec_object(d, obj, "status", 0), *ck;

  st->phase = gq_dec_enum(d, s, "status.phase", phase_names + 1, 0, -1) + 1;
  st->reason = gq_dec_string(d, s, "status.reason", 0, 1024, "");
  gq_dec_time(d, s, "status.queuedAt", &st->queued_ms);
  gq_dec_time(d, s, "status.admittedAt", &st->admitted_ms);
  gq_dec_time(d, s, "status.startTime", &st->start_ms);
  gq_dec_time(d, s, "status.completionTime", &st->completion_ms);
  gq_dec_int(d, s, "status.attempts", 0, INT32_MAX, 0, &st->attempts);
  gq_dec_int(d, s, "status.preemptions", 0, INT32_MAX, 0, &st->preemptions);
  gq_dec_int(d, s, "status.failedAttempts", 0, INT32_MAX, 0, &st->failures);
  gq_dec_int(d, s, "status.observedGeneration", 0, INT64_MAX, 0,
             &st->observed_generation);
  ck = gq_dec_object(d, s, "status.lastCheckpoint", 0);
  st->checkpoint =
      gq_dec_string(d, ck, "status.lastCheckpoint.location", 0, 4096, NULL);
  gq_dec_time(d, ck, "status.lastCheckpoint.time", &st->checkpoint_ms);
}

static void decode_spec(struct gq_dec *d, const json_t *spec,
                        struct gq_gpujob *j)
{
  int64_t v;

  j->team = gq_dec_string(d, spec, "spec.team", 1, 63, "");
  if (!d->rc)
    gq_dec_dns_label(d, "spec.team", j->team);
  j->priority = get_i32(d, spec, "spec.priority", INT32_MIN, INT32_MAX, 0);
  j->priority_class =
      gq_dec_string(d, spec, "spec.priorityClassName", 0, 253, NULL);
  j->replicas = get_i32(d, spec, "spec.replicas", 1, GQ_MAX_REPLICAS, 1);
  if (!d->rc && !gq_dec_get(spec, "gpusPerReplica"))
    gq_dec_fail(d, "spec.gpusPerReplica", "required value");
  j->gpus_per_replica = get_i32(d, spec, "spec.gpusPerReplica", 1,
                                GQ_MAX_GPUS_PER_REPLICA, 1);
  if (!d->rc && gq_mul_i64(j->replicas, j->gpus_per_replica, &j->gpus) != 0)
    gq_dec_fail(d, "spec.gpusPerReplica", "replicas x gpusPerReplica "
                "overflows");
  decode_gpu(d, spec, j);
  j->preemptible = gq_dec_bool(d, spec, "spec.preemptible", 1);
  decode_checkpoint(d, spec, j);
  j->drain = gq_dec_enum(d, spec, "spec.drainPolicy", drain_names, 0,
                         j->has_checkpoint ? GQ_DRAIN_CHECKPOINT
                                           : GQ_DRAIN_REQUEUE);
  if (!d->rc && j->drain == GQ_DRAIN_CHECKPOINT && !j->has_checkpoint)
    gq_dec_fail(d, "spec.drainPolicy",
                "Checkpoint requires spec.checkpoint (how long the job needs "
                "to write one)");
  gq_dec_int(d, spec, "spec.expectedDurationSeconds", 1, GQ_MAX_DURATION_S, -1,
             &j->expected_duration_s);
  gq_dec_int(d, spec, "spec.activeDeadlineSeconds", 1, GQ_MAX_DURATION_S, -1,
             &j->active_deadline_s);
  gq_dec_int(d, spec, "spec.startupTimeoutSeconds", 1, GQ_MAX_GRACE_S, -1,
             &j->startup_timeout_s);
  gq_dec_int(d, spec, "spec.backoffLimit", 0, GQ_MAX_BACKOFF_LIMIT,
             GQ_DEFAULT_BACKOFF_LIMIT, &v);
  j->backoff_limit = (int32_t)v;
  j->suspend = gq_dec_bool(d, spec, "spec.suspend", 0);
  decode_template(d, spec, j);
}

int gq_gpujob_decode(const json_t *obj, struct gq_gpujob *out, char *err,
                     size_t errlen)
{
  struct gq_dec d;

  memset(out, 0, sizeof(*out));
  gq_dec_init(&d);
  if (!json_is_object(obj))
    gq_dec_fail_got(&d, "(root)", obj, "must be an object");
  if (gq_meta_decode(&d, obj,
                     GQ_META_NAMESPACED | GQ_META_NAME_LABEL, &out->meta) == 0)
    decode_spec(&d, gq_dec_object(&d, obj, "spec", 1), out);
  decode_status(&d, obj, &out->status);
  if (d.rc) {
    snprintf(err, errlen, "%s", d.msg);
    out->json = NULL;
    gq_gpujob_release(out);
    return d.rc;
  }
  out->json = json_incref((json_t *)obj);
  return 0;
}

void gq_gpujob_release(struct gq_gpujob *j)
{
  gq_meta_release(&j->meta);
  gq_podsched_release(&j->sched);
  free(j->products);
  json_decref(j->json);
  memset(j, 0, sizeof(*j));
}
