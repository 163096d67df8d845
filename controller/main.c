/* controller/main.c - gpuq-controller.
 *
 *   gpuq-controller [--kubeconfig PATH] [--context C] --check-connection
 *
 * Configuration: --kubeconfig (a KUBECONFIG-style list), else in-cluster
 * when KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG or ~/.kube/config.
 * This build carries the connection check; the queueing and admission
 * loop comes with the controller issue (7) and refuses to start here
 * rather than pretend. */
#include "api/kubeconfig.h"
#include "base/alloc.h"
#include "base/log.h"
#include "controller/check.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
  fprintf(f, "usage: gpuq-controller [--kubeconfig PATH] [--context NAME] "
             "[--log-level L] --check-connection\n");
}

/* Loads the configuration the way kubectl would find it. */
static int load_config(const char *kubeconfig, const char *context,
                       struct gq_kubeconfig *cfg)
{
  char err[1024];
  int rc;

  if (!kubeconfig && getenv("KUBERNETES_SERVICE_HOST"))
    rc = gq_kubeconfig_in_cluster(NULL, cfg, err, sizeof(err));
  else
    rc = gq_kubeconfig_load(kubeconfig, context, cfg, err, sizeof(err));
  if (rc != 0)
    fprintf(stderr, "gpuq-controller: %s\n", err);
  return rc;
}

int main(int argc, char **argv)
{
  const char *kubeconfig = NULL, *context = NULL;
  struct gq_kubeconfig cfg;
  int check = 0, rc, lvl;

  json_set_alloc_funcs(gq_xmalloc, free);
  signal(SIGPIPE, SIG_IGN);
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

    if (!strcmp(f, "--check-connection"))
      check = 1;
    else if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
      usage(stdout);
      return 0;
    } else if (v && !strcmp(f, "--kubeconfig") && ++i)
      kubeconfig = v;
    else if (v && !strcmp(f, "--context") && ++i)
      context = v;
    else if (v && !strcmp(f, "--log-level") && ++i) {
      if (gq_log_parse_level(v, &lvl) != 0) {
        fprintf(stderr, "gpuq-controller: --log-level: want debug, info, "
                "warn or error, got '%s'\n", v);
        return 2;
      }
      gq_log_level = lvl;
    } else {
      fprintf(stderr, "gpuq-controller: unknown or incomplete flag '%s'\n", f);
      usage(stderr);
      return 2;
    }
  }
  if (!check) {
    fprintf(stderr, "gpuq-controller: this build has only --check-connection;"
            " the admission loop comes with the controller (issue 7)\n");
    return 2;
  }
  if (load_config(kubeconfig, context, &cfg) != 0)
    return 1;
  rc = gq_check_connection(&cfg, stdout, stderr);
  gq_kubeconfig_release(&cfg);
  return rc;
}
