/* decide/gpujob.c - predicates on a typed GpuJob (see gpujob.h). */
#include "decide/gpujob.h"

#include <stdio.h>
#include <string.h>
#include <uthash.h>

int gq_job_phase_final(enum gq_job_phase p)
{
  return p == GQ_PHASE_SUCCEEDED || p == GQ_PHASE_FAILED;
}

void gq_wl_shadow_name(enum gq_wl_kind kind, const char *name, char *out,
                       size_t len)
{
  const char *pre = kind == GQ_WL_JOB ? "job-"
                    : kind == GQ_WL_POD_GROUP ? "group-" : "pod-";
  char full[512];
  unsigned h = 0;
  size_t n;

  snprintf(full, sizeof(full), "%s%s", pre, name);
  for (char *p = full; *p; p++)
    if (*p == '.')
      *p = '-';
  n = strlen(full);
  if (n <= GQ_WL_NAME_MAX) {
    snprintf(out, len, "%s", full);
    return;
  }
  HASH_VALUE(full, n, h);
  n = GQ_WL_NAME_MAX - 9;
  while (n > 0 && full[n - 1] == '-')
    n--;
  snprintf(out, len, "%.*s-%08x", (int)n, full, h);
}
