/* decide/gpujob.c - predicates on a typed GpuJob (see gpujob.h). */
#include "decide/gpujob.h"

int gq_job_phase_final(enum gq_job_phase p)
{
  return p == GQ_PHASE_SUCCEEDED || p == GQ_PHASE_FAILED;
}
