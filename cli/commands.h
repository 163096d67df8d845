/* cli/commands.h - the read-only subcommands of kubectl-gpuq, each given
 * the arguments after its name (kubectl's flags among them, cli/kube.h).
 * Each prints a table (or -o json) to stdout and returns the process exit
 * code: 0, 1 for an API or configuration error (message on stderr as
 * "error: ..."), 2 for bad usage. Sources of what they show:
 *   queue  GpuJobs not Running and not final: status.queuePosition,
 *          estimatedStartTime, reason (controller/status.c writes them)
 *   teams  TeamQuota spec lines and status.flavors (used, borrowed, lent,
 *          pending GPUs), one row per flavor
 *   nodes  per GPU node and GPU resource: capacity, allocatable, used and
 *          free (cli/cluster.h), cordoned and draining
 *   why    one GpuJob: its phase and the controller's reason, then per node
 *          the first constraint that fails (gq_cli_why_nodes())
 *   usage  every GpuJob's status.allocatedGPUSeconds, usedGPUSeconds,
 *          idleGPUSeconds, flavor and queue time, summed per team,
 *          namespace or job (cli/usage.h), priced from ConfigMap
 *          gpuq-system/gpuq-prices and --price (cli/commands_usage.c)
 *   top    running GpuJobs: GPUs, status.gpuUtilization, the Idle
 *          condition, nodes
 */
#ifndef GQ_CLI_COMMANDS_H
#define GQ_CLI_COMMANDS_H
#include <jansson.h>
#include <stdint.h>

#include "cli/usage.h"

int gq_cli_queue(int argc, char **argv);
int gq_cli_teams(int argc, char **argv);
int gq_cli_nodes(int argc, char **argv);
int gq_cli_why(int argc, char **argv);
int gq_cli_usage(int argc, char **argv);
int gq_cli_top(int argc, char **argv);

/* The `queue` row of one GpuJob document (borrowed): namespace, name,
 * team, priority (0 when unset), gpus, phase ("Pending" before gpuq has
 * seen it), position (status.queuePosition; null when none), eta ("-"
 * without status.estimatedStartTime, "now" when it has passed, else the
 * time left in kubectl's HumanDuration form, "5m30s"),
 * estimatedStartTime, age (since metadata.creationTimestamp), reason and
 * message. now_ms: Unix milliseconds (`queue` passes gq_cli_now_ms(): the
 * sim's virtual clock against an accelerated gpuq-sim). Returns a new
 * object. */
json_t *gq_cli_queue_row(const json_t *job, int64_t now_ms);

/* Fills *j from one GpuJob document (borrowed; j's strings point into it):
 * metadata.namespace and name, spec.team, status.flavor, the three
 * GPU-second counters (absent or negative: 0), the queue time
 * status.startTime (else status.admittedAt) minus
 * metadata.creationTimestamp in whole seconds (-1 when neither is set; a
 * start before the creation, clock skew, counts as 0) and
 * status.completionTime (0 when absent). Never fails. */
void gq_cli_usage_job(const json_t *job, struct gq_usage_job *j);

/* The -o json items of report r (borrowed; the strings are copied): per
 * row the key member named by 'by' ("team", "namespace" or "job"; --by job
 * adds "namespace", "team" and "flavor"), then "jobs",
 * "allocated_gpu_hours", "used_gpu_hours", "idle_gpu_hours" (reals,
 * rounded to 1/1000 h), the same as integer "allocated_gpu_seconds",
 * "used_gpu_seconds", "idle_gpu_seconds", "efficiency_pct" (rounded to
 * 0.1; null without allocation), "queue_p50_s" and "queue_p95_s" (integers;
 * null when no job of the row started) and "cost" (USD, rounded to cents;
 * null when priced is 0 or none of the row's allocation has a price).
 * Returns a new array. */
json_t *gq_cli_usage_rows(const struct gq_usage_report *r,
                          enum gq_usage_by by, int priced);

/* The `top` row of one running GpuJob (borrowed): namespace, name, team,
 * gpus (status.gpus), gpuUtilization (integer %, null when unknown),
 * util ("87%", "<unknown>" without status.gpuUtilization),
 * utilizationTime, idle (the Idle condition as "STATUS (FOR)", e.g.
 * "True (45m)" where FOR is the time since its lastTransitionTime; "-"
 * without the condition), idleStatus, idleReason, nodes (array of
 * status.nodes), startTime and age (since metadata.creationTimestamp).
 * now_ms: Unix ms (gq_cli_now_ms()). Returns a new object. */
json_t *gq_cli_top_row(const json_t *job, int64_t now_ms);

#endif
