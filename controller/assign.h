/* controller/assign.h - flavor assignment: under which of its team's quota
 * lines a job is admitted, and on which nodes it then goes.
 *
 * A TeamQuota line is (flavor, resource, nominal, borrowingLimit,
 * lendingLimit); its flavor is a GPU product label value or "*" (any
 * product). As in Kueue's flavor assignment (FlavorAssigner, pkg/scheduler/
 * flavorassigner), gpuq tries the team's lines for the job's resource in
 * the order the TeamQuota lists them and takes the first whose quota allows
 * the job now (queue/quota.c, within nominal or by borrowing) and whose
 * nodes have room for the whole gang (controller/place.h). A line whose
 * flavor is not in the job's spec.gpu.products is skipped.
 *
 * The cohort's numbers for one line are built from every team of the
 * cohort: a team with a line of the same (flavor, resource) contributes its
 * limits, a team without one has nominal 0 and neither lends nor borrows
 * (its use of that flavor, if any, counts as borrowed). Use comes from the
 * ledger, keyed by gq_assign_flavor_key().
 *
 * Pure; the capacity snapshot is used as in gq_place_job() and left as it
 * was.
 */
#ifndef GQ_CONTROLLER_ASSIGN_H
#define GQ_CONTROLLER_ASSIGN_H
#include <stddef.h>
#include <stdint.h>

#include "api/gpujob.h"
#include "api/teamquota.h"
#include "decide/place.h"
#include "decide/quota.h"

/* Room for any flavor key: a qualified resource name (<= 253 + 1 + 63), a
 * ':' and a label value (<= 63), and the NUL. */
#define GQ_FLAVOR_KEY_MAX 384

/* Writes the ledger's key for (resource, flavor) into buf (len bytes,
 * GQ_FLAVOR_KEY_MAX suffice): the flavor itself for the default resource
 * nvidia.com/gpu, else "<resource>:<flavor>" (label values and "*" contain
 * no ':', so keys never collide). */
void gq_assign_flavor_key(const char *resource, const char *flavor, char *buf,
                   size_t len);

struct gq_assignment {
  size_t line;                  /* index into the team's res[] */
  const char *flavor;           /* borrowed from the TeamQuota */
  char key[GQ_FLAVOR_KEY_MAX];  /* ledger key for the admission */
  enum gq_qverdict verdict;     /* FITS_NOMINAL or FITS_BORROWING on
                                   success, the refusal on GQ_EQUOTA */
  int64_t borrowed_after;       /* the team's borrowed GPUs of that flavor
                                   once admitted */
};

/* Assigns job j of team teams[team] (teams: the n_teams TeamQuotas of its
 * cohort, or just its own when it has no cohort; borrowed) given the
 * cohort's ledger use[0..n_use-1] (team indexes into teams) and snapshot c.
 * Returns:
 *   0             a line's quota allows j and its nodes hold the gang: *a
 *                 says which, out[0..j->replicas-1] the node indexes;
 *   GQ_ECAPACITY  some line's quota allows j but no nodes of its flavor
 *                 hold the gang (a preemption candidate): *a names the
 *                 first such line;
 *   GQ_EQUOTA     every candidate line's quota refuses j now; *a names the
 *                 first refusing line and its verdict, skipping lines
 *                 refused with GQ_Q_ZERO_QUOTA (which never clears) when a
 *                 later line's refusal can clear;
 *   GQ_ENOTFOUND  the team has no line for j's resource that j's products
 *                 accept (j can never run under this TeamQuota).
 * why (whylen bytes; NULL when whylen is 0) gets one clause per line tried, joined with "; ",
 * e.g. "flavor NVIDIA-H100-80GB-HBM3: team 'research' uses 16 of its 16
 * nominal GPUs ...; flavor *: 0/4 nodes fit 1 replica of 8
 * nvidia.com/gpu: 4 Insufficient nvidia.com/gpu". */
int gq_assign_job(struct gq_snapshot *c, const struct gq_gpujob *j,
              const struct gq_teamquota *const *teams, size_t n_teams,
              size_t team, const struct gq_ledger_use *use, size_t n_use,
              struct gq_assignment *a, size_t *out, char *why, size_t whylen);

#endif
