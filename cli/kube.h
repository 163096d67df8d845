/* cli/kube.h - kubectl's flags and a blocking API connection for the
 * kubectl-gpuq subcommands.
 *
 * kubectl runs a plugin with the arguments that follow its name and passes
 * none of its own flags (flags before the plugin name stop kubectl from
 * finding it), so the plugin parses kubectl's habits itself
 * (k8s.io/cli-runtime genericclioptions.ConfigFlags): --kubeconfig PATH,
 * --context NAME, -n/--namespace NS, -A/--all-namespaces, -o/--output
 * json, each as "--flag value" or "--flag=value", anywhere after the
 * subcommand. The kubeconfig comes from --kubeconfig, else $KUBECONFIG,
 * else ~/.kube/config, else (inside a pod) the service account; the
 * default namespace is the context's.
 *
 * The connection is api/client.h on a private libuv loop, run until each
 * call's callback: a command-line tool waits for its answer, so blocking
 * is the point here (the controller never does this).
 */
#ifndef GQ_CLI_KUBE_H
#define GQ_CLI_KUBE_H
#include <jansson.h>
#include <stddef.h>
#include <uv.h>

#include "api/client.h"
#include "api/kubeconfig.h"

/* Which of the optional flags a subcommand accepts. */
enum gq_cli_flags {
  GQ_CLI_NS = 1 << 0,   /* -n, -A */
  GQ_CLI_TEAM = 1 << 1, /* --team */
  GQ_CLI_USAGE = 1 << 2, /* --since, --by, --price (repeatable) */
};

#define GQ_CLI_MAX_ARGS 4
#define GQ_CLI_MAX_PRICES 64

struct gq_cli_opts {
  const char *kubeconfig; /* --kubeconfig, or NULL */
  const char *context;    /* --context, or NULL */
  const char *ns;         /* -n, or NULL: the context's namespace */
  int all_ns;             /* -A */
  int json;               /* -o json */
  const char *team;       /* --team, or NULL */
  const char *since;      /* --since, or NULL (checked by the command) */
  const char *by;         /* --by, or NULL */
  const char *prices[GQ_CLI_MAX_PRICES]; /* --price values, in order */
  int n_prices;
  const char *args[GQ_CLI_MAX_ARGS]; /* positional arguments */
  int n_args;
};

/* Parses argv[0..argc-1] (what follows the subcommand 'cmd') into *o
 * (strings borrowed from argv). 'allowed' is a mask of enum gq_cli_flags;
 * the kubeconfig, context and output flags are always accepted; at most
 * max_args positional arguments and GQ_CLI_MAX_PRICES --price flags. The
 * values of --since, --by and --price are the command's to check.
 * Returns 0, or 2 (kubectl's usage exit code) after printing "error: ..."
 * naming the flag and value to stderr. */
int gq_cli_parse(int argc, char **argv, const char *cmd, unsigned allowed,
                 int max_args, struct gq_cli_opts *o);

struct gq_cli_conn {
  uv_loop_t loop;
  struct gq_kclient *kc;
  struct gq_kubeconfig cfg;
  const char *ns; /* -n, or the context's namespace (borrowed) */
};

/* Loads the configuration as described above and creates the client.
 * Returns 0, or a negative GQ_E* with the kubeconfig's or client's message
 * in err (errlen bytes); nothing to close then. */
int gq_cli_connect(struct gq_cli_conn *c, const struct gq_cli_opts *o,
                   char *err, size_t errlen);

/* GETs 'path' and, when list is set, every page of the collection (the
 * result is then {"items": [...]}). Blocks until the answer. Returns 0 with
 * *out a new reference, or a negative GQ_E* (GQ_ENOTFOUND for 404, ...)
 * with the server's message in err and *out NULL. */
int gq_cli_get(struct gq_cli_conn *c, const char *path, int list,
               json_t **out, char *err, size_t errlen);

/* gq_cli_connect(), printing "error: <message>" to stderr on failure.
 * Returns 0, or 1 (the exit code; nothing to close then). */
int gq_cli_open(struct gq_cli_conn *c, const struct gq_cli_opts *o);

/* gq_cli_get(), printing "error: <message> (GET <path>: <reason>)" to
 * stderr on failure. Returns 0 with *out a new reference, or the negative
 * GQ_E* with *out NULL. */
int gq_cli_fetch(struct gq_cli_conn *c, const char *path, int list,
                 json_t **out);

/* The cluster's "now" in Unix ms: the clock the API server writes its
 * timestamps with. gpuq-sim runs on an accelerated virtual clock
 * (base/clock.h: a replay at 2000x writes creationTimestamps far ahead of
 * the real time) and serves it at GET /sim/v1/clock; its nowMs is used when
 * the server answers that (so ages and --since windows are in the
 * timestamps' own time, as the sim's `kubectl get` ages are). Any other
 * server answers 404 or 403 there, and this machine's real clock is used,
 * which is what kubectl does. Never fails. */
int64_t gq_cli_now_ms(struct gq_cli_conn *c);

/* Closes the client, runs the loop until its handles are gone and releases
 * the configuration. */
void gq_cli_close(struct gq_cli_conn *c);

#endif
