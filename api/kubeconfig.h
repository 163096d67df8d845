/* api/kubeconfig.h - where the API server is and who we are to it.
 *
 * Resolves a client configuration the way kubectl does
 * (k8s.io/client-go/tools/clientcmd: loader.go merges files, client_config.go
 * and validation.go pick and check one context), or the way a pod does
 * (k8s.io/client-go/rest.InClusterConfig).
 *
 * Merging (loader.go). KUBECONFIG-style lists name several files, separated
 * by ':'. For clusters, users and contexts, matched by name, the FIRST file
 * that defines a name wins and later definitions of that name are ignored
 * whole (fields are not merged); current-context comes from the first file
 * that sets it. Files that do not exist are skipped; a file that exists but
 * cannot be read or parsed is an error. A name defined twice in ONE file is
 * an error, as in client-go's conversion.
 *
 * Relative paths in a file (certificate-authority, client-certificate,
 * client-key, tokenFile, and an exec command that contains a '/') are
 * relative to the directory of the file that holds them, which is made
 * absolute first, as client-go's ResolveLocalPaths does.
 *
 * Checks (validation.go ConfirmUsable, for the selected context only): the
 * context names a cluster and a user that exist; the cluster has a server
 * (which must start with https:// or http://); a certificate authority is
 * given as a file or as data, not both, and not together with
 * insecure-skip-tls-verify; a client certificate comes with a key; an exec
 * plugin has a command, a known apiVersion and named env entries. gpuq does
 * not implement basic auth, auth-provider or proxy-url, so a selected entry
 * that uses them is refused rather than silently ignored.
 *
 * Files read: the kubeconfig files (through api/yaml.h, capped there), the
 * certificate and key files (GQ_KUBECONFIG_MAX_PEM each) and token files
 * (GQ_KUBECONFIG_MAX_TOKEN). Messages name the file and the field:
 *   kubeconfig /x: context "prod" not found (contexts: dev, staging)
 *   kubeconfig /x: users[0].user.client-certificate-data: invalid base64
 *
 * Secrets: token, key_data and the exec env may hold secrets; they never
 * appear in error messages. Callers register the token with
 * gq_log_add_secret() before using it.
 *
 * No global state besides reading the environment; blocking file I/O, so
 * call it at start-up or off the loop.
 */
#ifndef GQ_API_KUBECONFIG_H
#define GQ_API_KUBECONFIG_H
#include <stddef.h>

struct gq_exec_config; /* api/exec.h */

/* Largest certificate, key or CA file read, in bytes. */
#define GQ_KUBECONFIG_MAX_PEM ((size_t)1024 * 1024)
/* Largest token file read, in bytes. */
#define GQ_KUBECONFIG_MAX_TOKEN ((size_t)64 * 1024)
/* Where a pod's service account is mounted. */
#define GQ_KUBECONFIG_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* A resolved client configuration. Every pointer is owned (heap) and NULL
 * when absent. Each byte array holds *_len bytes followed by a NUL that is
 * not counted, so PEM can also be used as a C string. */
struct gq_kubeconfig {
  char *server;           /* "https://host:port" */
  char *context;          /* selected context; NULL in-cluster */
  char *cluster_name;     /* its cluster; NULL in-cluster */
  char *user_name;        /* its user; NULL in-cluster */
  char *namespace_;       /* context's namespace, "default" when unset */
  unsigned char *ca_data; /* PEM: decoded certificate-authority-data, or */
  size_t ca_len;          /* the content of the certificate-authority file */
  char *ca_file;          /* that file's absolute path, for messages */
  int insecure;           /* insecure-skip-tls-verify */
  char *tls_server_name;  /* tls-server-name (SNI and verified name) */
  char *token;            /* users[].user.token, else the tokenFile's content */
  char *token_file; /* users[].user.tokenFile, absolute; the client re-reads
                       it (client-go: every minute) */
  unsigned char *cert_data; /* client-certificate(-data), PEM */
  size_t cert_len;
  unsigned char *key_data; /* client-key(-data), PEM */
  size_t key_len;
  struct gq_exec_config *exec; /* users[].user.exec, or NULL */
  char *source; /* "kubeconfig <file of the context>" or "in-cluster" */
};

/* Loads the files in 'paths' (a ':'-separated list; NULL means $KUBECONFIG
 * when set and non-empty, else $HOME/.kube/config), merges them and resolves
 * 'context' (NULL = current-context) into *out. Empty list entries and
 * repeated paths are skipped. A tokenFile is read now when token is unset
 * (client-go does the same), so a broken file fails here, not at the first
 * request.
 *
 * Returns 0 with *out filled (release with gq_kubeconfig_release()), or a
 * negative code with *out zeroed and a message in err (errlen bytes, always
 * NUL-terminated when errlen > 0; "" on success):
 *   GQ_EINVAL    out is NULL; empty path list; HOME unset; a malformed file
 *                (wrong types, duplicate or missing names, more than one
 *                YAML document); no context given and no current-context;
 *                a check above failed; invalid base64
 *   GQ_EPARSE    YAML syntax or a duplicate key ("kubeconfig /x:3:5: ...")
 *   GQ_ENOTFOUND none of the files exists; the context, or the cluster or
 *                user it names, does not exist
 *   GQ_EIO       a file (kubeconfig, CA, certificate, key, token) exists but
 *                cannot be read
 *   GQ_ETOOBIG   a file over its cap
 * paths and context are borrowed for the call. */
int gq_kubeconfig_load(const char *paths, const char *context,
                       struct gq_kubeconfig *out, char *err, size_t errlen);

/* Builds the configuration of a pod (rest.InClusterConfig): server
 * "https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT" (an IPv6 host
 * goes in brackets), and from sa_dir (NULL = GQ_KUBECONFIG_SA_DIR) the
 * token (token_file is set to sa_dir/token and the token is read now), the
 * CA (ca.crt; a missing file leaves ca_data NULL, as client-go only logs it)
 * and the namespace ($POD_NAMESPACE when set, else the namespace file, else
 * "default", as client-go's inClusterClientConfig.Namespace does). source is
 * "in-cluster". Returns 0, or with *out zeroed and a message in err:
 *   GQ_ENOTFOUND "not running in a cluster: KUBERNETES_SERVICE_HOST is not
 *                set" (or ..._PORT)
 *   GQ_EINVAL    out is NULL, or the port is not a number in 1..65535
 *   GQ_EIO, GQ_ETOOBIG, GQ_EINVAL from reading the token, ca.crt or
 *                namespace file ("in-cluster config: cannot read ...")
 * sa_dir is borrowed. */
int gq_kubeconfig_in_cluster(const char *sa_dir, struct gq_kubeconfig *out,
                             char *err, size_t errlen);

/* Frees everything *c owns (including the exec config) and zeroes it;
 * c may be NULL, and releasing a zeroed struct is a no-op. */
void gq_kubeconfig_release(struct gq_kubeconfig *c);

/* Reads a bearer token from 'path' (at most GQ_KUBECONFIG_MAX_TOKEN bytes)
 * and strips trailing whitespace (spaces, tabs, CR, LF): files written with
 * echo end in a newline, and client-go's file token source trims too.
 * Returns 0 with *token set (owned, free() it), or with *token NULL and a
 * message in err:
 *   GQ_EIO      "cannot read token file '/p': No such file or directory"
 *   GQ_ETOOBIG  "token file '/p' is larger than 65536 bytes"
 *   GQ_EINVAL   "token file '/p' is empty" (also when only whitespace);
 *               "token file '/p' holds control characters" (a CR, LF or
 *               NUL inside would corrupt the Authorization header); path or
 *               token is NULL
 * path is borrowed. */
int gq_kubeconfig_read_token_file(const char *path, char **token, char *err,
                                  size_t errlen);

/* Decodes padded standard base64 (RFC 4648 section 4) of s (n bytes), as
 * Go's encoding/json encodes []byte fields (certificate-authority-data, an
 * admission webhook's caBundle and JSONPatch); CR and LF are skipped.
 * Returns 0 with *out owned by the caller (NUL-terminated after *len
 * bytes), or GQ_EINVAL for bad input. */
int gq_b64_decode(const char *s, size_t n, unsigned char **out, size_t *len);

#endif
