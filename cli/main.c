/* cli/main.c - kubectl-gpuq, the kubectl plugin ("kubectl gpuq ...").
 *
 * kubectl runs any executable named kubectl-<name> on PATH as
 * "kubectl <name>" and passes the remaining arguments through
 * (kubernetes.io/docs/tasks/extend-kubectl/kubectl-plugins).
 */
#include "cli/commands.h"
#include "cli/validate.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
  fprintf(f,
          "Usage: kubectl gpuq <command> [flags]\n"
          "\n"
          "Commands:\n"
          "  queue [-n NS | -A] [--team T]\n"
          "                     waiting GpuJobs per team: position, ETA, age,\n"
          "                     reason\n"
          "  teams [--team T]   per team and flavor: nominal, used, borrowed,\n"
          "                     lent and pending GPUs (TeamQuota status)\n"
          "  nodes              per GPU node: capacity, allocatable, used and\n"
          "                     free GPUs, cordoned or draining\n"
          "  why JOB [-n NS]    why a GpuJob is pending: the controller's\n"
          "                     reason and, per node, the first constraint\n"
          "                     that fails\n"
          "  usage [--since D] [--by team|namespace|job] [--price P=USD]\n"
          "                     per team (namespace, job): allocated, used\n"
          "                     and idle GPU-hours, efficiency, queue time\n"
          "                     p50/p95 and cost, from the GpuJobs' status;\n"
          "                     prices per GPU-hour from ConfigMap\n"
          "                     gpuq-system/gpuq-prices, --price overrides\n"
          "  top [-n NS | -A] [--team T]\n"
          "                     running GpuJobs: GPUs, utilization, Idle\n"
          "                     condition, nodes\n"
          "  validate -f PATH   check GpuJob and TeamQuota manifests (a file\n"
          "                     or a directory) with the controller's own\n"
          "                     validation, before kubectl apply\n"
          "\n"
          "Flags (after the command, as kubectl's): --kubeconfig PATH,\n"
          "--context NAME, -n/--namespace NS, -A/--all-namespaces, -o json.\n"
          "The kubeconfig is --kubeconfig, else $KUBECONFIG, else\n"
          "~/.kube/config, else the pod's service account.\n");
}

static int cmd_validate(int argc, char **argv)
{
  int bad = 0, files = 0;

  for (int i = 0; i < argc; i++) {
    const char *path = NULL;

    if ((strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "--filename") == 0) &&
        i + 1 < argc)
      path = argv[++i];
    else if (strncmp(argv[i], "--filename=", 11) == 0)
      path = argv[i] + 11;
    else {
      fprintf(stderr, "error: unknown flag '%s' for 'validate'\n", argv[i]);
      return 2;
    }
    files++;
    bad += gq_validate_path(path, stdout) != 0;
  }
  if (files == 0) {
    fprintf(stderr, "error: validate needs -f PATH\n");
    return 2;
  }
  return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
  if (argc < 2 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "validate") == 0)
    return cmd_validate(argc - 2, argv + 2);
  if (strcmp(argv[1], "queue") == 0)
    return gq_cli_queue(argc - 2, argv + 2);
  if (strcmp(argv[1], "teams") == 0)
    return gq_cli_teams(argc - 2, argv + 2);
  if (strcmp(argv[1], "nodes") == 0)
    return gq_cli_nodes(argc - 2, argv + 2);
  if (strcmp(argv[1], "why") == 0)
    return gq_cli_why(argc - 2, argv + 2);
  if (strcmp(argv[1], "usage") == 0)
    return gq_cli_usage(argc - 2, argv + 2);
  if (strcmp(argv[1], "top") == 0)
    return gq_cli_top(argc - 2, argv + 2);
  fprintf(stderr, "error: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}
