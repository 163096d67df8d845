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
 */
#ifndef GQ_CLI_COMMANDS_H
#define GQ_CLI_COMMANDS_H
#include <jansson.h>
#include <stdint.h>

int gq_cli_queue(int argc, char **argv);
int gq_cli_teams(int argc, char **argv);
int gq_cli_nodes(int argc, char **argv);
int gq_cli_why(int argc, char **argv);

/* The `queue` row of one GpuJob document (borrowed): namespace, name,
 * team, priority (0 when unset), gpus, phase ("Pending" before gpuq has
 * seen it), position (status.queuePosition; null when none), eta ("-"
 * without status.estimatedStartTime, "now" when it has passed, else the
 * time left in kubectl's HumanDuration form, "5m30s"),
 * estimatedStartTime, age (since metadata.creationTimestamp), reason and
 * message. now_ms: Unix milliseconds. Returns a new object. */
json_t *gq_cli_queue_row(const json_t *job, int64_t now_ms);

#endif
