/* api/exec.h - client-go exec credential plugins, run on the uv loop.
 *
 * A kubeconfig user may name a program that prints credentials instead of
 * holding them (users[].user.exec: aws eks get-token, gke-gcloud-auth-plugin,
 * kubelogin). The protocol is client-go's
 * (k8s.io/client-go/plugin/pkg/client/auth/exec, API group
 * client.authentication.k8s.io, versions v1 and v1beta1; v1alpha1 was
 * removed in Kubernetes 1.24):
 *
 *   - the plugin runs with the parent's environment plus the configured env
 *     entries plus KUBERNETES_EXEC_INFO, a JSON ExecCredential
 *     {"apiVersion":..., "kind":"ExecCredential", "spec":{"interactive":false,
 *     "cluster":{"server":...}}} (client-go sends spec.cluster only when
 *     provideClusterInfo is true; gpuq always sends the server, which
 *     plugins that do not ask for it ignore);
 *   - it prints an ExecCredential of the same apiVersion on stdout whose
 *     status holds a bearer token or a PEM client certificate and key, and
 *     optionally an RFC 3339 expirationTimestamp.
 *
 * gpuq never gives a plugin a terminal: stdin is /dev/null and spec.interactive
 * is always false, so a plugin configured with interactiveMode Always fails
 * (client-go fails the same way when stdin is not a terminal).
 *
 * gq_exec_run() never blocks the loop: the plugin is started with uv_spawn in
 * its own process group, its stdout (capped at GQ_EXEC_MAX_STDOUT) and stderr
 * (first GQ_EXEC_MAX_STDERR bytes kept, for error messages) are read through
 * pipes, and a timer kills the whole group after the timeout. The run
 * finishes when the plugin has exited and both pipes are at EOF (or when it
 * failed and has exited), so no zombie and no open handle is left behind.
 *
 * Callbacks follow libuv's rule (STYLE "Errors and logging"): gq_exec_run()
 * either returns an error and never calls cb, or returns 0 and calls cb
 * exactly once, never from inside gq_exec_run(). A run cannot be cancelled;
 * it keeps the loop alive until it finishes, which the timeout bounds.
 *
 * Loop thread only. Error messages follow git's style, fit on one line and
 * never contain the credential itself (the plugin's stderr is included, its
 * line breaks turned into "; ", so what a plugin prints there is its
 * responsibility).
 */
#ifndef GQ_API_EXEC_H
#define GQ_API_EXEC_H
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

/* The two ExecCredential versions client-go still speaks. */
#define GQ_EXEC_API_V1 "client.authentication.k8s.io/v1"
#define GQ_EXEC_API_V1BETA1 "client.authentication.k8s.io/v1beta1"

/* Default time a plugin may run before it is killed (client-go has no
 * timeout of its own; a minute covers an SSO login that was already done). */
#define GQ_EXEC_TIMEOUT_MS 60000
/* Largest ExecCredential accepted on stdout, in bytes. */
#define GQ_EXEC_MAX_STDOUT ((size_t)1024 * 1024)
/* Bytes of stderr kept for error messages; the rest is read and dropped. */
#define GQ_EXEC_MAX_STDERR ((size_t)64 * 1024)
/* Slack before expiry at which a credential counts as expired, so a request
 * does not leave with a token that dies on the wire. */
#define GQ_EXEC_EXPIRY_SLACK_MS 10000

/* users[].user.exec.interactiveMode. */
enum gq_exec_interactive {
  GQ_EXEC_NEVER = 0,        /* "Never" */
  GQ_EXEC_IF_AVAILABLE = 1, /* "IfAvailable", v1beta1's default */
  GQ_EXEC_ALWAYS = 2        /* "Always": needs a terminal we never have */
};

/* A plugin's configuration, as decoded from a kubeconfig by
 * gq_kubeconfig_load(). A heap object: every pointer is owned, and
 * gq_exec_config_free() frees them and the struct. */
struct gq_exec_config {
  char *command; /* program; a path or a name looked up in $PATH */
  char **args;   /* n_args arguments after the program name */
  size_t n_args;
  char **env; /* n_env "NAME=value" entries added to the environment */
  size_t n_env;
  char *api_version;  /* GQ_EXEC_API_V1 or GQ_EXEC_API_V1BETA1 */
  char *install_hint; /* shown when the program is not found; may be NULL */
  int interactive;    /* enum gq_exec_interactive; nonzero = not "Never" */
  int timeout_ms;     /* 0 = GQ_EXEC_TIMEOUT_MS */
};

/* What a plugin returned. Strings are owned, NULL when absent; released by
 * gq_exec_credential_release(). */
struct gq_exec_credential {
  char *token;        /* status.token */
  char *cert_data;    /* status.clientCertificateData, PEM */
  char *key_data;     /* status.clientKeyData, PEM */
  int64_t expires_ms; /* status.expirationTimestamp in Unix ms; 0 = none */
};

/* Called once per gq_exec_run(). status is 0 and cred is set, or status is
 * a negative GQ_E* code, cred is NULL and err is a message:
 *   GQ_ENOTFOUND  "exec plugin 'aws': not found (<install hint>)"
 *   GQ_EIO        "exec plugin 'aws' failed: exit status 1: <stderr>", or
 *                 "... failed: killed by signal 9: <stderr>", or
 *                 "... failed: cannot start: permission denied"
 *   GQ_EPARSE     "exec plugin 'aws': output is not an ExecCredential: ..."
 *   GQ_ETIMEDOUT  "exec plugin 'aws': timed out after 60000 ms"
 *   GQ_ETOOBIG    "exec plugin 'aws': output is larger than 1048576 bytes"
 *   GQ_EINVAL     "exec plugin 'aws': interactiveMode Always needs a
 *                 terminal, and gpuq runs plugins without one"
 * cred and err are valid only during the call (STYLE ownership rule 3):
 * copy what you keep. When status is 0, err is "". */
typedef void (*gq_exec_cb)(int status, const struct gq_exec_credential *cred,
                           const char *err, void *arg);

/* Starts the plugin c on loop for the cluster at 'server' (put into
 * KUBERNETES_EXEC_INFO; may be NULL, then spec.cluster is left out). c and
 * server are borrowed for the call only (what the run needs is copied).
 * Returns 0, after which cb(..., arg) runs exactly once from the loop, or
 * GQ_EINVAL when loop, c, c->command, c->api_version or cb is NULL or
 * c->timeout_ms is negative; then cb is never called. Failures of the plugin
 * itself, including a program that does not exist, reach cb. */
int gq_exec_run(uv_loop_t *loop, const struct gq_exec_config *c,
                const char *server, gq_exec_cb cb, void *arg);

/* Frees c's strings and arrays and c itself. c may be NULL. */
void gq_exec_config_free(struct gq_exec_config *c);

/* Frees c's strings and zeroes it (c itself is not freed). c may be NULL. */
void gq_exec_credential_release(struct gq_exec_credential *c);

/* Returns 1 if c holds a token, or a certificate and key pair, that does not
 * expire within GQ_EXEC_EXPIRY_SLACK_MS of now_ms (Unix ms); 0 otherwise,
 * and for c == NULL. A credential without expirationTimestamp stays valid
 * until the server rejects it (client-go then runs the plugin again). */
int gq_exec_credential_valid(const struct gq_exec_credential *c,
                             int64_t now_ms);

#endif
