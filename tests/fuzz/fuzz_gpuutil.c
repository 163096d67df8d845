/* GPU utilization annotations (sim/gpuutil.h): the bytes as the value of
 * sim.gpuq.dev/gpu-utilization. A value that parses must give fractions in
 * [0, 1] at any time and an integral that never exceeds the allocation;
 * one that does not must say why. */
#include "fuzz.h"

#include "sim/gpuutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  char *text = fuzz_cstr(data, size), err[256];
  struct gq_sim_gpuutil u;
  struct gq_sim_usage acc = {0, 0, 0};
  const int64_t at[] = {-1, 0, 1, 999, 3600000, INT64_C(1) << 40};

  if (gq_sim_gpuutil_parse(text, &u, err, sizeof(err)) != 0) {
    if (!*err)
      abort(); /* every refusal is explained */
    free(text);
    return 0;
  }
  for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
    double f = gq_sim_gpuutil_at(&u, at[i]);

    if (!(f >= 0 && f <= 1) || gq_sim_gpuutil_phase_at(&u, at[i]) >= u.n)
      abort();
  }
  gq_sim_gpuutil_integrate(&u, 17, INT64_C(1) << 36, 8, 0.1, &acc);
  if (acc.used_s > acc.alloc_s * (1 + 1e-9) || acc.idle_s < 0 ||
      acc.idle_s > acc.alloc_s * (1 + 1e-9))
    abort();
  free(text);
  return 0;
}
