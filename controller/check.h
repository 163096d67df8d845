/* controller/check.h - `gpuq-controller --check-connection`: resolve the
 * configuration, reach the API server, list nodes and GpuJobs once, and
 * say in one line what works or exactly what does not (runbook's first
 * step when something is wrong). */
#ifndef GQ_CONTROLLER_CHECK_H
#define GQ_CONTROLLER_CHECK_H
#include <stdio.h>

#include "api/kubeconfig.h"

/* Runs the check on a private loop with cfg (borrowed). Prints the server,
 * its version, the authentication used and what it listed to out; or one
 * message naming what failed to err. Returns 0 or 1 (the exit status). */
int gq_check_connection(const struct gq_kubeconfig *cfg, FILE *out,
                        FILE *err);

#endif
