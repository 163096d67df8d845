/* sim/checker.c - DESIGN §4's invariants, evaluated continuously from the
 * API state as changes happen (shared/cases conventions INV-1..INV-5):
 *   INV-1 no gpuq pod is bound to a node where the GPUs requested by the
 *         pods holding resources there then exceed its allocatable;
 *   INV-2 no new admission takes a team beyond nominal + borrowing limit;
 *   INV-4 no GpuJob vanishes before it ends (in a trace replay; in a
 *         scenario a deleted job was deleted by its user, and has ended);
 *   INV-5 never two generations (attempts) of one job's pods at once.
 * INV-3 (every admission released exactly once) is checked at the end of
 * a replay: each team's usage must be back to 0. */
#include "sim/engine.h"

#include "api/meta.h"
#include "api/pod.h"
#include "api/teamquota.h"
#include "base/alloc.h"
#include "sim/replay.h"
#include "sim/report.h"

#include <stdio.h>
#include <string.h>

static const char *node_of(const json_t *pod)
{
  const char *n = json_string_value(
      json_object_get(json_object_get(pod, "spec"), "nodeName"));

  return n && *n ? n : NULL;
}

static int holds(const json_t *pod)
{
  const char *ph = json_string_value(
      json_object_get(json_object_get(pod, "status"), "phase"));

  return !ph || (strcmp(ph, "Succeeded") && strcmp(ph, "Failed"));
}

/* GPUs (every nvidia.com/ resource) a pod requests. */
static int64_t pod_gpus(const json_t *pod, const char **resource)
{
  struct gq_pod p;
  char err[256];
  int64_t n = 0;

  *resource = NULL;
  if (gq_pod_decode(pod, &p, err, sizeof(err)) != 0)
    return 0;
  for (size_t i = 0; i < p.sched.n_extended; i++)
    if (!strncmp(p.sched.extended[i].name, "nvidia.com/", 11)) {
      n += p.sched.extended[i].value;
      *resource = strchr(p.sched.extended[i].name, '/') ? "nvidia.com/gpu"
                                                        : NULL;
    }
  gq_pod_release(&p);
  return n;
}

/* INV-1, when a gpuq pod becomes bound. */
static void check_overcommit(struct gq_sim *s, const json_t *pod)
{
  struct gq_sim_engine *e = s->engine;
  struct gq_sim_node *n;
  const char *node = node_of(pod);
  char msg[512];

  HASH_FIND_STR(e->nodes, node, n);
  if (!n || !n->node.json)
    return;
  for (size_t i = 0; i < n->used.n_ext; i++) {
    const char *res = n->used.ext[i].name;
    int64_t used = n->used.ext[i].value;
    int64_t alloc = gq_node_allocatable(&n->node, res);

    if (strncmp(res, "nvidia.com/", 11) || used <= alloc)
      continue;
    snprintf(msg, sizeof(msg), "pod %s/%s bound to node %s: %s requested "
             "%lld > allocatable %lld", gq_meta_str(pod, "namespace"),
             gq_meta_str(pod, "name"), node, res, (long long)used,
             (long long)alloc);
    gq_sim_report_violation(s, "INV-1", msg);
  }
}

/* Keeps the indexes the checks read, for a pod entering (sign 1) or
 * leaving (-1) the set of pods that hold resources: GPUs per team, and live
 * pods per (job uid, attempt). */
void gq_sim_check_account(struct gq_sim *s, const json_t *pod, int sign)
{
  struct gq_sim_engine *e = s->engine;
  const char *team = gq_meta_obj_label(pod, GQ_LBL_TEAM), *res;
  const char *ju = gq_meta_obj_label(pod, GQ_LBL_JOB_UID);
  const char *att = gq_meta_obj_label(pod, GQ_LBL_ATTEMPT);
  json_t *per, *v;

  /* only gpuq's own pods: a pod admitted outside GpuJobs (a batch/v1 Job's,
   * a user's) holds nothing a team's quota or a job's attempts count */
  if (!pod || !holds(pod) || !gq_meta_obj_label(pod, GQ_LBL_JOB))
    return;
  if (team) {
    v = json_object_get(e->team_used, team);
    json_object_set_new(e->team_used, team,
                        json_integer(json_integer_value(v) +
                                     sign * pod_gpus(pod, &res)));
  }
  if (ju && att) {
    per = json_object_get(e->attempts, ju);
    if (!per) {
      per = json_object();
      json_object_set_new(e->attempts, ju, per);
    }
    v = json_object_get(per, att);
    json_object_set_new(per, att, json_integer(json_integer_value(v) + sign));
    if (json_integer_value(json_object_get(per, att)) <= 0)
      json_object_del(per, att);
    if (json_object_size(per) == 0)
      json_object_del(e->attempts, ju);
  }
}

/* INV-5, when a gpuq pod is created: another attempt's pod still exists
 * (the new pod is already counted in the index). */
static void check_generations(struct gq_sim *s, const json_t *pod)
{
  const char *ju = gq_meta_obj_label(pod, GQ_LBL_JOB_UID);
  const char *att = gq_meta_obj_label(pod, GQ_LBL_ATTEMPT);
  const json_t *per = ju ? json_object_get(s->engine->attempts, ju) : NULL;
  const char *other;
  json_t *v;
  char msg[512];

  if (!per || !att)
    return;
  json_object_foreach((json_t *)per, other, v) {
    if (strcmp(other, att) == 0)
      continue;
    snprintf(msg, sizeof(msg), "pod %s/%s (attempt %s) created while pods "
             "of attempt %s of the same job still exist",
             gq_meta_str(pod, "namespace"), gq_meta_str(pod, "name"), att, other);
    gq_sim_report_violation(s, "INV-5", msg);
    return;
  }
}

/* The GPUs a team may hold at most under its TeamQuota, for the quota
 * entry charged for resource: nominal + borrowingLimit, or + every other
 * cohort member's nominal when the limit is absent (DESIGN §2). Returns -1
 * when the team has no quota. */
static int64_t team_limit(struct gq_sim *s, const char *team,
                          const char *resource)
{
  struct gq_sim_kind *k = gq_sim_kind_find(s, "gpuq.dev", "v1alpha1",
                                           "teamquotas");
  const json_t *obj = k ? gq_sim_get(k, NULL, team) : NULL;
  struct gq_teamquota q;
  int64_t limit = 0, cohort_nominal = 0;
  char err[512];
  json_t *all, *o;
  size_t i;

  if (!obj || gq_teamquota_decode(obj, &q, err, sizeof(err)) != 0)
    return -1;
  all = gq_sim_list(k, NULL);
  json_array_foreach(all, i, o) {
    struct gq_teamquota other;

    if (!q.cohort || gq_teamquota_decode(o, &other, err, sizeof(err)) != 0)
      continue;
    if (other.cohort && !strcmp(other.cohort, q.cohort) &&
        strcmp(other.meta.name, team))
      for (size_t r = 0; r < other.n_res; r++)
        if (!strcmp(other.res[r].resource, resource))
          cohort_nominal += other.res[r].nominal;
    gq_teamquota_release(&other);
  }
  json_decref(all);
  for (size_t r = 0; r < q.n_res; r++) {
    if (strcmp(q.res[r].resource, resource))
      continue;
    limit += q.res[r].nominal;
    if (q.cohort)
      limit += q.res[r].borrow_limit >= 0 ? q.res[r].borrow_limit
                                          : cohort_nominal;
  }
  gq_teamquota_release(&q);
  return limit;
}

/* INV-2, when a gpuq pod is created: the team's GPUs, this pod included
 * (already in the index). */
static void check_quota(struct gq_sim *s, const json_t *pod)
{
  const char *team = gq_meta_obj_label(pod, GQ_LBL_TEAM), *res;
  int64_t mine = pod_gpus(pod, &res), total, limit;
  char msg[512];

  if (!team || !mine || !res || (limit = team_limit(s, team, res)) < 0)
    return;
  total = json_integer_value(json_object_get(s->engine->team_used, team));
  if (total > limit) {
    snprintf(msg, sizeof(msg), "team %s holds %lld GPUs after pod %s/%s was "
             "created; nominal + borrowing limit is %lld", team,
             (long long)total, gq_meta_str(pod, "namespace"),
             gq_meta_str(pod, "name"), (long long)limit);
    gq_sim_report_violation(s, "INV-2", msg);
  }
}

void gq_sim_check_pod(struct gq_sim *s, const json_t *old, const json_t *pod,
                      int deleted)
{
  if (deleted || !gq_meta_obj_label(pod, GQ_LBL_JOB))
    return;
  if (!old) {
    check_generations(s, pod);
    check_quota(s, pod);
  }
  if (node_of(pod) && (!old || !node_of(old)) && holds(pod))
    check_overcommit(s, pod);
}

void gq_sim_placement_miss(struct gq_sim *s, const json_t *pod,
                           const char *why)
{
  struct gq_sim_engine *e = s->engine;
  const char *uid = gq_meta_str(pod, "uid");
  char msg[700];

  if (json_object_get(e->seen_miss, uid))
    return;
  json_object_set_new(e->seen_miss, uid, json_true());
  snprintf(msg, sizeof(msg), "pod %s/%s: %s", gq_meta_str(pod, "namespace"),
           gq_meta_str(pod, "name"), why);
  gq_sim_report_miss(s, msg);
}

void gq_sim_check_job(struct gq_sim *s, const json_t *old, const json_t *job,
                      int deleted)
{
  (void)old;
  gq_sim_replay_job_phase(s, job, deleted); /* INV-4 and job ends */
}
