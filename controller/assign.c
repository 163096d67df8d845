/* controller/assign.c - flavor assignment (see assign.h). */
#include "decide/assign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/err.h"

void gq_assign_flavor_key(const char *resource, const char *flavor, char *buf,
                   size_t len)
{
  if (strcmp(resource, GQ_DEFAULT_GPU_RESOURCE) == 0)
    snprintf(buf, len, "%s", flavor);
  else
    snprintf(buf, len, "%s:%s", resource, flavor);
}

static const struct gq_quota_res *find_line(const struct gq_teamquota *t,
                                            const char *resource,
                                            const char *flavor)
{
  for (size_t i = 0; i < t->n_res; i++)
    if (strcmp(t->res[i].resource, resource) == 0 &&
        strcmp(t->res[i].flavor, flavor) == 0)
      return &t->res[i];
  return NULL;
}

static int accepts(const struct gq_gpujob *j, const char *flavor)
{
  if (j->n_products == 0 || strcmp(flavor, GQ_FLAVOR_ANY) == 0)
    return 1;
  for (size_t i = 0; i < j->n_products; i++)
    if (strcmp(j->products[i], flavor) == 0)
      return 1;
  return 0;
}

/* Fills qt[0..n_teams-1] with the cohort's numbers for one line. */
static void cohort_for(const struct gq_teamquota *const *teams, size_t n_teams,
                       const struct gq_quota_res *line, const char *key,
                       const struct gq_ledger_use *use, size_t n_use,
                       struct gq_qteam *qt)
{
  for (size_t k = 0; k < n_teams; k++) {
    const struct gq_quota_res *l =
        find_line(teams[k], line->resource, line->flavor);

    qt[k].name = teams[k]->meta.name;
    qt[k].nominal = l ? l->nominal : 0;
    qt[k].borrow_limit = l ? l->borrow_limit : 0;
    qt[k].lend_limit = l ? l->lend_limit : 0;
    qt[k].weight = teams[k]->weight;
    qt[k].used = 0;
    qt[k].pending = 0;
  }
  for (size_t u = 0; u < n_use; u++)
    if (use[u].team < n_teams && strcmp(use[u].flavor, key) == 0)
      qt[use[u].team].used += use[u].gpus;
}

/* Appends "; " (unless first) and "flavor F: msg" to why. */
static void clause(char *why, size_t whylen, const char *flavor,
                   const char *msg)
{
  size_t len;

  if (whylen == 0)
    return;
  len = strlen(why);
  if (len + 1 < whylen)
    snprintf(why + len, whylen - len, "%sflavor %s: %s", len ? "; " : "",
             flavor, msg);
}

/* Records line i (its flavor, ledger key and quota verdict) in *a. */
static void note(struct gq_assignment *a, size_t i, const char *flavor,
                 const char *key, enum gq_qverdict v, int64_t borrowed)
{
  a->line = i;
  a->flavor = flavor;
  snprintf(a->key, sizeof(a->key), "%s", key);
  a->verdict = v;
  a->borrowed_after = borrowed;
}

int gq_assign_job(struct gq_snapshot *c, const struct gq_gpujob *j,
              const struct gq_teamquota *const *teams, size_t n_teams,
              size_t team, const struct gq_ledger_use *use, size_t n_use,
              struct gq_assignment *a, size_t *out, char *why, size_t whylen)
{
  const struct gq_teamquota *t = teams[team];
  struct gq_qteam *qt = gq_xcalloc(n_teams, sizeof(*qt));
  struct gq_qcohort co = {qt, n_teams, t->cohort != NULL};
  char msg[GQ_QVERDICT_MESSAGE_LEN + 512];
  int rc = GQ_ENOTFOUND;

  if (whylen)
    why[0] = '\0';
  for (size_t i = 0; i < t->n_res; i++) {
    const struct gq_quota_res *line = &t->res[i];
    char key[GQ_FLAVOR_KEY_MAX];
    enum gq_qverdict v;
    int64_t borrowed;
    int placed;

    if (strcmp(line->resource, j->gpu_resource) != 0 ||
        !accepts(j, line->flavor))
      continue;
    gq_assign_flavor_key(line->resource, line->flavor, key, sizeof(key));
    cohort_for(teams, n_teams, line, key, use, n_use, qt);
    v = gq_quota_check(&co, team, j->gpus, &borrowed);
    if (v != GQ_Q_FITS_NOMINAL && v != GQ_Q_FITS_BORROWING) {
      gq_qverdict_message(v, &qt[team], j->gpus, msg, sizeof(msg));
      clause(why, whylen, line->flavor, msg);
      /* report the first refusal, or the first that can clear when an
       * earlier line's quota is zero (it never will) */
      if (rc != GQ_ECAPACITY &&
          (rc != GQ_EQUOTA || (a->verdict == GQ_Q_ZERO_QUOTA &&
                               v != GQ_Q_ZERO_QUOTA))) {
        rc = GQ_EQUOTA;
        note(a, i, line->flavor, key, v, borrowed);
      }
      continue;
    }
    placed = gq_place_job(c, j, line->flavor, out, msg, sizeof(msg)) == 0;
    if (placed || rc != GQ_ECAPACITY) {
      note(a, i, line->flavor, key, v, borrowed);
    }
    if (placed) {
      rc = 0;
      if (whylen)
        why[0] = '\0';
      break;
    }
    rc = GQ_ECAPACITY;
    clause(why, whylen, line->flavor, msg);
  }
  if (rc == GQ_ENOTFOUND && whylen)
    snprintf(why, whylen,
             "team '%s' has no quota line for %s%s", t->meta.name,
             j->gpu_resource,
             j->n_products ? " with a flavor in spec.gpu.products" : "");
  free(qt);
  return rc;
}
