/* Tests for api/kubeconfig: context selection, client-go's merge precedence
 * across two and three files, relative paths, base64, exec plugin configs,
 * every error message, in-cluster configuration and token files. Fixtures
 * live in tests/fixtures/kubeconfig (see its README); the error cases write
 * small kubeconfigs into a temporary directory. Run from the repository
 * root (ctest does). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "api/exec.h"
#include "api/kubeconfig.h"
#include "base/alloc.h"
#include "base/err.h"
#include "tests/support/fixture.h"

#define FX "tests/fixtures/kubeconfig"

static char tmpdir[] = "/tmp/gq-kubeconfig-XXXXXX";
static char cwd[4096];

/* ---- helpers ---------------------------------------------------------------
 */

static void write_file(const char *path, const char *data, size_t len)
{
  FILE *f = fopen(path, "wb");

  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, len, f), len);
  assert_int_equal(fclose(f), 0);
}

/* Copies 'in' into out, replacing @D with the temporary directory, @F with
 * @D/config and @C with the current directory. */
static void expand(const char *in, char *out, size_t len)
{
  size_t o = 0;

  for (; *in && o + 1 < len; in++) {
    const char *rep = NULL;

    if (in[0] == '@' && in[1] == 'D')
      rep = tmpdir;
    else if (in[0] == '@' && in[1] == 'C')
      rep = cwd;
    else if (in[0] == '@' && in[1] == 'F')
      rep = "@D/config";
    if (!rep) {
      out[o++] = *in;
      continue;
    }
    if (in[1] == 'F')
      o += (size_t)snprintf(out + o, len - o, "%s/config", tmpdir);
    else
      o += (size_t)snprintf(out + o, len - o, "%s", rep);
    in++;
  }
  out[o < len ? o : len - 1] = '\0';
}

/* Asserts that data[0..len) is the content of the fixture at path. */
static void assert_file_bytes(const unsigned char *data, size_t len,
                              const char *path)
{
  size_t want_len;
  char *want = gq_test_read_file(path, &want_len);

  assert_non_null(want);
  assert_non_null(data);
  assert_int_equal(len, want_len);
  assert_memory_equal(data, want, len);
  assert_int_equal(data[len], '\0'); /* usable as a string */
  free(want);
}

/* Compares a path field: want NULL means absent; a relative want is taken
 * relative to the current directory (the loader makes paths absolute). */
static void assert_path(const char *got, const char *want)
{
  char buf[8192];

  if (!want) {
    assert_null(got);
    return;
  }
  assert_non_null(got);
  if (want[0] == '/')
    snprintf(buf, sizeof(buf), "%s", want);
  else
    snprintf(buf, sizeof(buf), "%s/%s", cwd, want);
  assert_string_equal(got, buf);
}

static void assert_str_or_null(const char *got, const char *want)
{
  if (want)
    assert_string_equal(got ? got : "(null)", want);
  else
    assert_null(got);
}

static int setup(void **state)
{
  (void)state;
  assert_non_null(getcwd(cwd, sizeof(cwd)));
  assert_non_null(mkdtemp(tmpdir));
  unsetenv("KUBECONFIG");
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  gq_test_rmtree(tmpdir);
  return 0;
}

/* ---- successful loads ------------------------------------------------------
 */

struct load_case {
  const char *name;
  const char *paths;   /* the list as given */
  const char *context; /* NULL = current-context */
  const char *want_context, *want_cluster, *want_user, *want_ns;
  const char *want_server;
  const char *want_ca;      /* fixture whose bytes ca_data holds, or NULL */
  const char *want_ca_file; /* see assert_path() */
  int want_insecure;
  const char *want_sni;
  const char *want_token;
  const char *want_token_file;      /* see assert_path() */
  const char *want_cert, *want_key; /* fixtures, or NULL */
  const char *want_source;
  int want_exec;
};

#define CONFIG FX "/config.yaml"
#define BASE FX "/merge/base.yaml"
#define TEAM FX "/merge/team/team.yaml"
#define OVERRIDE FX "/merge/override.yaml"
#define CI_TOKEN                                                               \
  "eyJhbGciOiJSUzI1NiIsImtpZCI6ImNpIn0.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY29"    \
  "1bnQ6Z3B1cTpjaSJ9.c2lnbmF0dXJl"

static const struct load_case load_cases[] = {
    {.name = "current-context, token, CA data",
     .paths = CONFIG,
     .want_context = "dev",
     .want_cluster = "dev",
     .want_user = "dev-admin",
     .want_ns = "ml-dev",
     .want_server = "https://dev.gpu.example.com:6443",
     .want_ca = FX "/certs/ca.crt",
     .want_token = "dev-admin-5f3b9c2e.8a1d4f7b6c0e2a9d",
     .want_source = "kubeconfig " CONFIG},
    {.name = "tokenFile read and trimmed, CA file, tls-server-name",
     .paths = CONFIG,
     .context = "staging",
     .want_context = "staging",
     .want_cluster = "staging",
     .want_user = "ci",
     .want_ns = "ml-staging",
     .want_server = "https://10.20.0.1:6443",
     .want_ca = FX "/certs/staging-ca.crt",
     .want_ca_file = FX "/certs/staging-ca.crt",
     .want_sni = "kubernetes.staging.internal",
     .want_token = CI_TOKEN,
     .want_token_file = FX "/tokens/ci-token",
     .want_source = "kubeconfig " CONFIG},
    {.name = "client certificate data, namespace defaults",
     .paths = CONFIG,
     .context = "staging-alice",
     .want_context = "staging-alice",
     .want_cluster = "staging",
     .want_user = "alice",
     .want_ns = "default",
     .want_server = "https://10.20.0.1:6443",
     .want_ca = FX "/certs/staging-ca.crt",
     .want_ca_file = FX "/certs/staging-ca.crt",
     .want_sni = "kubernetes.staging.internal",
     .want_cert = FX "/certs/client.crt",
     .want_key = FX "/certs/client.key",
     .want_source = "kubeconfig " CONFIG},
    {.name = "client certificate files, insecure, IPv6 server",
     .paths = CONFIG,
     .context = "lab",
     .want_context = "lab",
     .want_cluster = "lab",
     .want_user = "alice-files",
     .want_ns = "research",
     .want_server = "https://[fd00:10::1]:6443",
     .want_insecure = 1,
     .want_cert = FX "/certs/client.crt",
     .want_key = FX "/certs/client.key",
     .want_source = "kubeconfig " CONFIG},
    {.name = "token wins over tokenFile, which is kept unread",
     .paths = CONFIG,
     .context = "local",
     .want_context = "local",
     .want_cluster = "local",
     .want_user = "token-and-file",
     .want_ns = "default",
     .want_server = "http://127.0.0.1:8080",
     .want_token = "inline-token-wins",
     .want_token_file = "/var/run/secrets/tokens/gpuq-token",
     .want_source = "kubeconfig " CONFIG},
    {.name = "exec v1",
     .paths = FX "/exec.yaml",
     .want_context = "eks",
     .want_cluster = "eks-prod",
     .want_user = "eks-user",
     .want_ns = "training",
     .want_server = "https://ABCDEF0123456789ABCDEF0123456789.gr7.us-west-2."
                    "eks.amazonaws.com",
     .want_ca = FX "/certs/ca.crt",
     .want_source = "kubeconfig " FX "/exec.yaml",
     .want_exec = 1},
    /* Merging. current-context comes from team.yaml (base.yaml sets none);
     * the CA path resolves against merge/team/. */
    {.name = "three files: current-context from the second",
     .paths = BASE ":" TEAM ":" OVERRIDE,
     .want_context = "team",
     .want_cluster = "team-cluster",
     .want_user = "team-user",
     .want_ns = "team-b",
     .want_server = "https://team.example.com:6443",
     .want_ca = FX "/certs/ca.crt",
     .want_ca_file = FX "/merge/team/../../certs/ca.crt",
     .want_token = "team-b-token-from-file",
     .want_token_file = FX "/merge/team/token",
     .want_source = "kubeconfig " TEAM},
    {.name = "three files: first definition of a context wins",
     .paths = BASE ":" TEAM ":" OVERRIDE,
     .context = "common",
     .want_context = "common",
     .want_cluster = "shared",
     .want_user = "shared-user",
     .want_ns = "from-base",
     .want_server = "https://first.example.com:6443",
     .want_insecure = 1,
     .want_token = "token-from-base",
     .want_source = "kubeconfig " BASE},
    {.name = "three files: context from one file, cluster from another",
     .paths = BASE ":" TEAM ":" OVERRIDE,
     .context = "mixed",
     .want_context = "mixed",
     .want_cluster = "shared",
     .want_user = "team-user",
     .want_ns = "default",
     .want_server = "https://first.example.com:6443",
     .want_insecure = 1,
     .want_token = "team-b-token-from-file",
     .want_token_file = FX "/merge/team/token",
     .want_source = "kubeconfig " TEAM},
    {.name = "three files: last file's context, first file's user",
     .paths = BASE ":" TEAM ":" OVERRIDE,
     .context = "override",
     .want_context = "override",
     .want_cluster = "override-cluster",
     .want_user = "shared-user",
     .want_ns = "default",
     .want_server = "https://override.example.com",
     .want_token = "token-from-base",
     .want_source = "kubeconfig " OVERRIDE},
    {.name = "reversed order: current-context from the first file",
     .paths = OVERRIDE ":" TEAM ":" BASE,
     .want_context = "override",
     .want_cluster = "override-cluster",
     .want_user = "shared-user",
     .want_ns = "default",
     .want_server = "https://override.example.com",
     .want_token = "token-from-override",
     .want_source = "kubeconfig " OVERRIDE},
    {.name = "reversed order: the context defined first wins",
     .paths = OVERRIDE ":" TEAM ":" BASE,
     .context = "team",
     .want_context = "team",
     .want_cluster = "override-cluster",
     .want_user = "shared-user",
     .want_ns = "from-override",
     .want_server = "https://override.example.com",
     .want_token = "token-from-override",
     .want_source = "kubeconfig " OVERRIDE},
    {.name = "reversed order: whole entries win, fields are not merged",
     .paths = OVERRIDE ":" TEAM ":" BASE,
     .context = "common",
     .want_context = "common",
     .want_cluster = "shared",
     .want_user = "shared-user",
     .want_ns = "from-team",
     .want_server = "https://second.example.com:6443",
     .want_token = "token-from-override",
     .want_source = "kubeconfig " TEAM},
    {.name = "two files",
     .paths = BASE ":" OVERRIDE,
     .want_context = "override",
     .want_cluster = "override-cluster",
     .want_user = "shared-user",
     .want_ns = "default",
     .want_server = "https://override.example.com",
     .want_token = "token-from-base",
     .want_source = "kubeconfig " OVERRIDE},
    {.name = "missing files, repeats and empty entries are skipped",
     .paths = FX "/no-such-file.yaml::" BASE ":" BASE ":" TEAM ":",
     .want_context = "team",
     .want_cluster = "team-cluster",
     .want_user = "team-user",
     .want_ns = "team-b",
     .want_server = "https://team.example.com:6443",
     .want_ca = FX "/certs/ca.crt",
     .want_ca_file = FX "/merge/team/../../certs/ca.crt",
     .want_token = "team-b-token-from-file",
     .want_token_file = FX "/merge/team/token",
     .want_source = "kubeconfig " TEAM},
    {.name = "an empty file merges as nothing",
     .paths = FX "/empty.yaml:./" BASE,
     .context = "common",
     .want_context = "common",
     .want_cluster = "shared",
     .want_user = "shared-user",
     .want_ns = "from-base",
     .want_server = "https://first.example.com:6443",
     .want_insecure = 1,
     .want_token = "token-from-base",
     .want_source = "kubeconfig ./" BASE},
};

static void check_load(const struct load_case *c, const struct gq_kubeconfig *k)
{
  assert_string_equal(k->context, c->want_context);
  assert_string_equal(k->cluster_name, c->want_cluster);
  assert_string_equal(k->user_name, c->want_user);
  assert_string_equal(k->namespace_, c->want_ns);
  assert_string_equal(k->server, c->want_server);
  if (c->want_ca)
    assert_file_bytes(k->ca_data, k->ca_len, c->want_ca);
  else
    assert_null(k->ca_data);
  assert_path(k->ca_file, c->want_ca_file);
  assert_int_equal(k->insecure, c->want_insecure);
  assert_str_or_null(k->tls_server_name, c->want_sni);
  assert_str_or_null(k->token, c->want_token);
  assert_path(k->token_file, c->want_token_file);
  if (c->want_cert)
    assert_file_bytes(k->cert_data, k->cert_len, c->want_cert);
  else
    assert_null(k->cert_data);
  if (c->want_key)
    assert_file_bytes(k->key_data, k->key_len, c->want_key);
  else
    assert_null(k->key_data);
  assert_string_equal(k->source, c->want_source);
  assert_int_equal(k->exec != NULL, c->want_exec);
}

static void test_load(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(load_cases) / sizeof(load_cases[0]); i++) {
    const struct load_case *c = &load_cases[i];
    struct gq_kubeconfig k;
    char err[1024] = "x";
    int rc;

    print_message("case: %s\n", c->name);
    rc = gq_kubeconfig_load(c->paths, c->context, &k, err, sizeof(err));
    if (rc != 0)
      print_message("  error: %s\n", err);
    assert_int_equal(rc, 0);
    assert_string_equal(err, "");
    check_load(c, &k);
    gq_kubeconfig_release(&k);
    assert_null(k.server); /* released structs are zeroed */
  }
}

/* ---- exec plugin configurations ------------------------------------------ */

struct exec_case {
  const char *name;
  const char *context;
  const char *want_command; /* see assert_path() when want_resolved */
  int want_resolved;
  const char *want_args; /* joined with '|' */
  const char *want_env;  /* joined with '|' */
  const char *want_api_version;
  const char *want_hint;
  int want_interactive;
};

static const struct exec_case exec_cases[] = {
    {"v1, args, env, hint, Never", "eks", "aws", 0,
     "--region|us-west-2|eks|get-token|--cluster-name|prod|--output|json",
     "AWS_PROFILE=ml-prod|AWS_STS_REGIONAL_ENDPOINTS=regional|EMPTY_VALUE=",
     GQ_EXEC_API_V1,
     "Install the AWS CLI:\nhttps://docs.aws.amazon.com/cli/latest/"
     "userguide/getting-started-install.html\n",
     GQ_EXEC_NEVER},
    {"v1beta1 defaults to IfAvailable", "gke", "gke-gcloud-auth-plugin", 0, "",
     "", GQ_EXEC_API_V1BETA1,
     "Install gke-gcloud-auth-plugin for use with kubectl by following "
     "https://cloud.google.com/kubernetes-engine/docs/how-to/"
     "cluster-access-for-kubectl#install_plugin",
     GQ_EXEC_IF_AVAILABLE},
    {"a command with a '/' is relative to the file", "local-plugin",
     FX "/bin/get-token", 1, "--audience|gpuq", "", GQ_EXEC_API_V1, NULL,
     GQ_EXEC_IF_AVAILABLE},
};

static void join(char *const *v, size_t n, char *out, size_t len)
{
  size_t o = 0;

  out[0] = '\0';
  for (size_t i = 0; i < n && o < len; i++)
    o += (size_t)snprintf(out + o, len - o, "%s%s", i ? "|" : "", v[i]);
}

static void test_exec_config(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(exec_cases) / sizeof(exec_cases[0]); i++) {
    const struct exec_case *c = &exec_cases[i];
    struct gq_kubeconfig k;
    char err[512], buf[1024];

    print_message("case: %s\n", c->name);
    assert_int_equal(
        gq_kubeconfig_load(FX "/exec.yaml", c->context, &k, err, sizeof(err)),
        0);
    assert_non_null(k.exec);
    if (c->want_resolved)
      assert_path(k.exec->command, c->want_command);
    else
      assert_string_equal(k.exec->command, c->want_command);
    join(k.exec->args, k.exec->n_args, buf, sizeof(buf));
    assert_string_equal(buf, c->want_args);
    join(k.exec->env, k.exec->n_env, buf, sizeof(buf));
    assert_string_equal(buf, c->want_env);
    assert_string_equal(k.exec->api_version, c->want_api_version);
    assert_str_or_null(k.exec->install_hint, c->want_hint);
    assert_int_equal(k.exec->interactive, c->want_interactive);
    assert_int_equal(k.exec->timeout_ms, 0);
    assert_null(k.token);
    gq_kubeconfig_release(&k);
  }
}

/* ---- base64 ------------------------------------------------------------- */

struct b64_case {
  const char *name;
  const char *data; /* certificate-authority-data, as YAML flow scalar */
  const char *want;
  size_t want_len;
};

static const struct b64_case b64_cases[] = {
    {"two padding bytes", "YQ==", "a", 1},
    {"one padding byte", "YWI=", "ab", 2},
    {"no padding", "YWJj", "abc", 3},
    {"longer, two padding bytes", "Z3B1cSBDQQ==", "gpuq CA", 7},
    {"line breaks are skipped", "\"YWJj\\nZGVm\\r\\nZw==\\n\"", "abcdefg", 7},
    {"binary with zero bytes", "AAEA/w==", "\x00\x01\x00\xff", 4},
    {"all padding cases in one", "AAAA", "\x00\x00\x00", 3},
};

static void test_base64(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(b64_cases) / sizeof(b64_cases[0]); i++) {
    const struct b64_case *c = &b64_cases[i];
    char yaml[512], path[4200], err[512];
    struct gq_kubeconfig k;
    int n;

    print_message("case: %s\n", c->name);
    n = snprintf(yaml, sizeof(yaml),
                 "clusters:\n- name: c\n  cluster:\n    server: https://x\n"
                 "    certificate-authority-data: %s\n"
                 "users:\n- name: u\n  user: {}\n"
                 "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
                 "current-context: x\n",
                 c->data);
    snprintf(path, sizeof(path), "%s/config", tmpdir);
    write_file(path, yaml, (size_t)n);
    assert_int_equal(gq_kubeconfig_load(path, NULL, &k, err, sizeof(err)), 0);
    assert_int_equal(k.ca_len, c->want_len);
    assert_memory_equal(k.ca_data, c->want, c->want_len);
    assert_int_equal(k.ca_data[k.ca_len], 0);
    assert_null(k.ca_file);
    gq_kubeconfig_release(&k);
  }
}

/* ---- errors -------------------------------------------------------------- */

struct error_case {
  const char *name;
  const char *yaml;  /* written to @F and loaded; NULL: use paths */
  const char *paths; /* with @D, @F, @C expanded */
  const char *context;
  int want_rc;
  const char *want_msg; /* exact, with @D, @F, @C expanded */
};

/* A well-formed tail: the cluster "dev", the user "dev-admin". */
#define DEV_CLUSTER "clusters:\n- name: dev\n  cluster: {server: https://d}\n"
#define DEV_USER "users:\n- name: dev-admin\n  user: {token: t}\n"
#define DEV_CONTEXT                                                            \
  "contexts:\n- name: dev\n  context: {cluster: dev, user: dev-admin}\n"
#define CTX "current-context: dev\n"
/* A file with the given cluster body (indented 4) and a usable rest. */
#define WITH_CLUSTER(body)                                                     \
  CTX DEV_USER DEV_CONTEXT "clusters:\n- name: dev\n  cluster:\n" body
#define WITH_USER(body)                                                        \
  CTX DEV_CLUSTER DEV_CONTEXT "users:\n- name: dev-admin\n  user:\n" body
#define EXEC_V1 "      apiVersion: client.authentication.k8s.io/v1\n"

static const struct error_case error_cases[] = {
    /* selecting the context */
    {"context not found",
     CTX DEV_CLUSTER DEV_USER DEV_CONTEXT
     "- name: staging\n  context: {cluster: dev, user: dev-admin}\n",
     NULL, "prod", GQ_ENOTFOUND,
     "kubeconfig @F: context \"prod\" not found (contexts: dev, staging)"},
    {"current-context names a missing context",
     "current-context: gone\n" DEV_CLUSTER DEV_USER DEV_CONTEXT, NULL, NULL,
     GQ_ENOTFOUND, "kubeconfig @F: context \"gone\" not found (contexts: dev)"},
    {"no current-context and no context given",
     DEV_CLUSTER DEV_USER DEV_CONTEXT, NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: current-context is not set and no context was given "
     "(contexts: dev)"},
    {"empty file", "# nothing\n", NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: current-context is not set and no context was given "
     "(contexts: none)"},
    {"cluster of the context not found",
     CTX DEV_CLUSTER DEV_USER
     "contexts:\n- name: dev\n  context: {cluster: nope, user: dev-admin}\n",
     NULL, NULL, GQ_ENOTFOUND,
     "kubeconfig @F: contexts[0].context.cluster: cluster \"nope\" not found "
     "(clusters: dev)"},
    {"user of the context not found",
     CTX DEV_CLUSTER DEV_USER
     "contexts:\n- name: x\n  context: {}\n"
     "- name: dev\n  context: {cluster: dev, user: nobody}\n",
     NULL, NULL, GQ_ENOTFOUND,
     "kubeconfig @F: contexts[1].context.user: user \"nobody\" not found "
     "(users: dev-admin)"},
    {"context without user",
     CTX DEV_CLUSTER DEV_USER
     "contexts:\n- name: dev\n  context: {cluster: dev}\n",
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: contexts[0].context.user: required value"},
    {"context without body",
     CTX DEV_CLUSTER DEV_USER "contexts:\n- name: dev\n", NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: contexts[0].context.cluster: required value"},
    {"namespace not a DNS label",
     CTX DEV_CLUSTER DEV_USER
     "contexts:\n- name: dev\n  context: {cluster: dev, user: dev-admin, "
     "namespace: ML_Team}\n",
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: contexts[0].context.namespace: must be a DNS-1123 label "
     "(at most 63 lower-case letters, digits or '-', starting and ending "
     "with a letter or digit), got \"ML_Team\""},
    /* clusters */
    {"server missing", WITH_CLUSTER("    insecure-skip-tls-verify: true\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: clusters[0].cluster.server: required value"},
    {"server without scheme", WITH_CLUSTER("    server: 10.0.0.1:6443\n"), NULL,
     NULL, GQ_EINVAL,
     "kubeconfig @F: clusters[0].cluster.server: must be an https:// or "
     "http:// URL, got \"10.0.0.1:6443\""},
    {"server not a string", WITH_CLUSTER("    server: [a]\n"), NULL, NULL,
     GQ_EINVAL,
     "kubeconfig @F: clusters[0].cluster.server: must be a string, got "
     "[\"a\"]"},
    {"insecure not a boolean",
     WITH_CLUSTER("    server: https://d\n    insecure-skip-tls-verify: "
                  "\"yes\"\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: clusters[0].cluster.insecure-skip-tls-verify: must be a "
     "boolean, got \"yes\""},
    {"CA file and CA data",
     WITH_CLUSTER("    server: https://d\n    certificate-authority: ca.crt\n"
                  "    certificate-authority-data: YWJj\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: clusters[0].cluster: certificate-authority and "
     "certificate-authority-data are both set"},
    {"insecure with a CA",
     WITH_CLUSTER("    server: https://d\n    insecure-skip-tls-verify: true\n"
                  "    certificate-authority-data: YWJj\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: clusters[0].cluster: insecure-skip-tls-verify and a "
     "certificate authority are both set"},
    {"CA file missing",
     WITH_CLUSTER("    server: https://d\n"
                  "    certificate-authority: missing-ca.crt\n"),
     NULL, NULL, GQ_EIO,
     "kubeconfig @F: clusters[0].cluster.certificate-authority: cannot read "
     "'@D/missing-ca.crt': No such file or directory"},
    {"CA data with a bad character",
     WITH_CLUSTER("    server: https://d\n"
                  "    certificate-authority-data: \"not base64!\"\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: clusters[0].cluster.certificate-authority-data: invalid "
     "base64"},
    {"CA data of a bad length",
     WITH_CLUSTER("    server: https://d\n"
                  "    certificate-authority-data: YWJjZA=\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: clusters[0].cluster.certificate-authority-data: invalid "
     "base64"},
    {"CA data without padding",
     WITH_CLUSTER("    server: https://d\n"
                  "    certificate-authority-data: YQ\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: clusters[0].cluster.certificate-authority-data: invalid "
     "base64"},
    {"CA data with padding inside",
     WITH_CLUSTER("    server: https://d\n"
                  "    certificate-authority-data: YQ==YWJj\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: clusters[0].cluster.certificate-authority-data: invalid "
     "base64"},
    {"CA data of only padding",
     WITH_CLUSTER("    server: https://d\n"
                  "    certificate-authority-data: \"====\"\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: clusters[0].cluster.certificate-authority-data: invalid "
     "base64"},
    {"proxy-url",
     WITH_CLUSTER("    server: https://d\n"
                  "    proxy-url: http://proxy:3128\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: clusters[0].cluster.proxy-url: not supported"},
    /* users */
    {"client-certificate-data invalid",
     CTX DEV_CLUSTER DEV_CONTEXT
     "users:\n- name: other\n  user: {}\n- name: dev-admin\n  user:\n"
     "    client-certificate-data: LS0t*\n    client-key-data: YWJj\n",
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[1].user.client-certificate-data: invalid base64"},
    {"client-key-data invalid",
     WITH_USER("    client-certificate-data: YWJj\n"
               "    client-key-data: YWJ\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user.client-key-data: invalid base64"},
    {"certificate without key", WITH_USER("    client-certificate: c.crt\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user: client-certificate needs client-key or "
     "client-key-data"},
    {"key without certificate", WITH_USER("    client-key-data: YWJj\n"), NULL,
     NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user: client-key needs client-certificate or "
     "client-certificate-data"},
    {"certificate file and data",
     WITH_USER("    client-certificate: c.crt\n"
               "    client-certificate-data: YWJj\n"
               "    client-key-data: YWJj\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user: client-certificate and "
     "client-certificate-data are both set"},
    {"key file and data",
     WITH_USER("    client-certificate-data: YWJj\n"
               "    client-key: c.key\n    client-key-data: YWJj\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user: client-key and client-key-data are both "
     "set"},
    {"key file missing",
     WITH_USER("    client-certificate-data: YWJj\n"
               "    client-key: keys/alice.key\n"),
     NULL, NULL, GQ_EIO,
     "kubeconfig @F: users[0].user.client-key: cannot read "
     "'@D/keys/alice.key': No such file or directory"},
    {"tokenFile missing", WITH_USER("    tokenFile: no-token\n"), NULL, NULL,
     GQ_EIO,
     "kubeconfig @F: users[0].user.tokenFile: cannot read token file "
     "'@D/no-token': No such file or directory"},
    {"token not a string", WITH_USER("    token: 12345\n"), NULL, NULL,
     GQ_EINVAL,
     "kubeconfig @F: users[0].user.token: must be a string, got 12345"},
    {"token with a line break", WITH_USER("    token: \"abc\\r\\nX: y\"\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user.token: must not contain control "
     "characters"},
    {"basic auth", WITH_USER("    username: admin\n    password: hunter2\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user: username/password (basic auth) is not "
     "supported"},
    {"auth-provider",
     WITH_USER("    auth-provider:\n      name: oidc\n      config: {}\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user.auth-provider: not supported (use an exec "
     "plugin)"},
    /* exec */
    {"exec without command",
     WITH_USER("    exec:\n" EXEC_V1 "      interactiveMode: Never\n"), NULL,
     NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user.exec.command: required value"},
    {"exec without apiVersion", WITH_USER("    exec:\n      command: aws\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user.exec.apiVersion: required value"},
    {"exec v1alpha1",
     WITH_USER("    exec:\n      command: aws\n      apiVersion: "
               "client.authentication.k8s.io/v1alpha1\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user.exec.apiVersion: must be one of "
     "client.authentication.k8s.io/v1, client.authentication.k8s.io/v1beta1, "
     "got \"client.authentication.k8s.io/v1alpha1\""},
    {"exec v1 without interactiveMode",
     WITH_USER("    exec:\n      command: aws\n" EXEC_V1), NULL, NULL,
     GQ_EINVAL,
     "kubeconfig @F: users[0].user.exec.interactiveMode: required value"},
    {"exec bad interactiveMode",
     WITH_USER("    exec:\n      command: aws\n" EXEC_V1
               "      interactiveMode: Sometimes\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user.exec.interactiveMode: must be one of "
     "Never, IfAvailable, Always, got \"Sometimes\""},
    {"exec env entry without name",
     WITH_USER("    exec:\n      command: aws\n" EXEC_V1
               "      interactiveMode: Never\n      env:\n"
               "      - {name: A, value: b}\n      - {value: c}\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user.exec.env[1].name: required value"},
    {"exec env entry not an object",
     WITH_USER("    exec:\n      command: aws\n" EXEC_V1
               "      interactiveMode: Never\n      env: [A=b]\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user.exec.env[0]: must be an object, got "
     "\"A=b\""},
    {"exec args not strings",
     WITH_USER("    exec:\n      command: aws\n" EXEC_V1
               "      interactiveMode: Never\n      args: [1]\n"),
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user.exec.args[0]: must be a string, got 1"},
    {"exec not an object", WITH_USER("    exec: aws\n"), NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0].user.exec: must be an object, got \"aws\""},
    /* file structure */
    {"clusters not a list", CTX DEV_USER DEV_CONTEXT "clusters: {dev: {}}\n",
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: clusters: must be an array, got {\"dev\":{}}"},
    {"entry not an object", CTX DEV_CLUSTER DEV_CONTEXT "users: [token]\n",
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: users[0]: must be an object, got \"token\""},
    {"entry without name",
     CTX DEV_USER DEV_CONTEXT "clusters:\n- cluster: {server: https://x}\n",
     NULL, NULL, GQ_EINVAL, "kubeconfig @F: clusters[0].name: required value"},
    {"entry body not an object",
     CTX DEV_USER DEV_CONTEXT "clusters:\n- name: dev\n  cluster: 5\n", NULL,
     NULL, GQ_EINVAL,
     "kubeconfig @F: clusters[0].cluster: must be an object, got 5"},
    {"duplicate names in one file",
     CTX DEV_CLUSTER DEV_USER DEV_CONTEXT
     "- name: dev\n  context: {cluster: dev, user: dev-admin}\n",
     NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: contexts[1].name: duplicate name \"dev\""},
    {"current-context not a string",
     "current-context: 5\n" DEV_CLUSTER DEV_USER DEV_CONTEXT, NULL, NULL,
     GQ_EINVAL, "kubeconfig @F: current-context: must be a string, got 5"},
    {"top level a list", "- a\n- b\n", NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: must be a mapping with clusters, users and contexts"},
    {"two documents", CTX "---\n" DEV_CLUSTER, NULL, NULL, GQ_EINVAL,
     "kubeconfig @F: holds 2 YAML documents, want one"},
    {"YAML syntax", "clusters:\n- name: [dev\n", NULL, NULL, GQ_EPARSE,
     "kubeconfig @F:3:1: did not find expected ',' or ']' while parsing a "
     "flow sequence at 2:9"},
    {"duplicate YAML key", CTX CTX, NULL, NULL, GQ_EPARSE,
     "kubeconfig @F:2:1: duplicate mapping key 'current-context'"},
    /* the list of files */
    {"no such file", NULL, "@D/nope", NULL, GQ_ENOTFOUND,
     "kubeconfig @D/nope: no such file"},
    {"none of the files exists", NULL, "@D/a:@D/b", NULL, GQ_ENOTFOUND,
     "kubeconfig @D/a:@D/b: none of the files exists"},
    {"a missing directory on the way", NULL, "@D/nope/config", NULL,
     GQ_ENOTFOUND, "kubeconfig @D/nope/config: no such file"},
    {"empty list", NULL, "::", NULL, GQ_EINVAL, "kubeconfig: empty path list"},
    {"a directory", NULL, "@D", NULL, GQ_EIO,
     "kubeconfig @D: cannot read '@D': Is a directory"},
    {"context not found across files", NULL, BASE ":" TEAM ":" OVERRIDE, "prod",
     GQ_ENOTFOUND,
     "kubeconfig " BASE ":" TEAM ":" OVERRIDE ": context \"prod\" not found "
     "(contexts: common, team, mixed, override)"},
    {"a bad file among good ones", "clusters: 7\n", BASE ":@F:" TEAM, NULL,
     GQ_EINVAL, "kubeconfig @F: clusters: must be an array, got 7"},
};

static void test_errors(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(error_cases) / sizeof(error_cases[0]); i++) {
    const struct error_case *c = &error_cases[i];
    char paths[8192], want[8192], err[1024], file[4200];
    struct gq_kubeconfig k;
    int rc;

    print_message("case: %s\n", c->name);
    snprintf(file, sizeof(file), "%s/config", tmpdir);
    if (c->yaml)
      write_file(file, c->yaml, strlen(c->yaml));
    expand(c->paths ? c->paths : "@F", paths, sizeof(paths));
    expand(c->want_msg, want, sizeof(want));
    memset(&k, 0x5a, sizeof(k));
    rc = gq_kubeconfig_load(paths, c->context, &k, err, sizeof(err));
    assert_string_equal(err, want);
    assert_int_equal(rc, c->want_rc);
    assert_null(k.server); /* zeroed on failure */
    assert_null(k.exec);
    gq_kubeconfig_release(&k);
    unlink(file);
  }
}

/* A short error buffer is truncated, never overrun; NULL is allowed. */
static void test_error_buffer(void **state)
{
  struct gq_kubeconfig k;
  char err[8];

  (void)state;
  assert_int_equal(gq_kubeconfig_load(FX "/nope", NULL, &k, err, sizeof(err)),
                   GQ_ENOTFOUND);
  assert_string_equal(err, "kubecon");
  assert_int_equal(gq_kubeconfig_load(FX "/nope", NULL, &k, NULL, 0),
                   GQ_ENOTFOUND);
  assert_int_equal(gq_kubeconfig_load(CONFIG, NULL, NULL, err, sizeof(err)),
                   GQ_EINVAL);
  gq_kubeconfig_release(NULL);
}

/* ---- where the list comes from ------------------------------------------ */

static void test_default_paths(void **state)
{
  char dir[4200], kc[4300], src[4400], err[512], *home = getenv("HOME");
  char *saved_home = home ? gq_xstrdup(home) : NULL;
  struct gq_kubeconfig k;

  (void)state;
  /* $KUBECONFIG, as a list. */
  setenv("KUBECONFIG", BASE ":" OVERRIDE, 1);
  assert_int_equal(gq_kubeconfig_load(NULL, NULL, &k, err, sizeof(err)), 0);
  assert_string_equal(k.context, "override");
  assert_string_equal(k.token, "token-from-base");
  gq_kubeconfig_release(&k);
  /* An explicit list wins over $KUBECONFIG. */
  assert_int_equal(gq_kubeconfig_load(CONFIG, NULL, &k, err, sizeof(err)), 0);
  assert_string_equal(k.context, "dev");
  gq_kubeconfig_release(&k);
  /* An empty $KUBECONFIG counts as unset: ~/.kube/config. */
  setenv("KUBECONFIG", "", 1);
  snprintf(dir, sizeof(dir), "%s/.kube", tmpdir);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(kc, sizeof(kc), "%s/config", dir);
  write_file(kc, CTX DEV_CLUSTER DEV_USER DEV_CONTEXT,
             strlen(CTX DEV_CLUSTER DEV_USER DEV_CONTEXT));
  setenv("HOME", tmpdir, 1);
  assert_int_equal(gq_kubeconfig_load(NULL, NULL, &k, err, sizeof(err)), 0);
  assert_string_equal(k.server, "https://d");
  assert_string_equal(k.token, "t");
  snprintf(src, sizeof(src), "kubeconfig %s", kc);
  assert_string_equal(k.source, src);
  gq_kubeconfig_release(&k);
  unsetenv("HOME");
  assert_int_equal(gq_kubeconfig_load(NULL, NULL, &k, err, sizeof(err)),
                   GQ_EINVAL);
  assert_string_equal(err, "kubeconfig: HOME is not set and no path was "
                           "given");
  if (saved_home)
    setenv("HOME", saved_home, 1);
  free(saved_home);
  unsetenv("KUBECONFIG");
}

/* ---- in-cluster ---------------------------------------------------------- */

struct ic_case {
  const char *name;
  const char *host, *port; /* NULL = unset */
  const char *pod_ns;      /* $POD_NAMESPACE, NULL = unset */
  const char *token;       /* token file content, NULL = no file */
  int ca;                  /* write ca.crt (the fixture CA) */
  const char *ns_file;     /* namespace file content, NULL = no file */
  int want_rc;
  const char *want_msg; /* @D = the service account directory */
  const char *want_server, *want_token, *want_ns;
};

static const struct ic_case ic_cases[] = {
    {"IPv4 service", "10.96.0.1", "443", NULL, "sa-token\n", 1, "ml-prod\n", 0,
     "", "https://10.96.0.1:443", "sa-token", "ml-prod"},
    {"IPv6 service in brackets", "fd00:10:96::1", "6443", NULL, "t", 1,
     "ml-prod", 0, "", "https://[fd00:10:96::1]:6443", "t", "ml-prod"},
    {"POD_NAMESPACE wins", "10.96.0.1", "443", "from-env", "t", 1, "ml-prod", 0,
     "", "https://10.96.0.1:443", "t", "from-env"},
    {"no namespace file", "10.96.0.1", "443", NULL, "t", 1, NULL, 0, "",
     "https://10.96.0.1:443", "t", "default"},
    {"blank namespace file", "10.96.0.1", "443", NULL, "t", 1, " \n", 0, "",
     "https://10.96.0.1:443", "t", "default"},
    {"no ca.crt", "kubernetes.default.svc", "443", NULL, "t", 0, "a", 0, "",
     "https://kubernetes.default.svc:443", "t", "a"},
    {"host unset", NULL, "443", NULL, "t", 1, NULL, GQ_ENOTFOUND,
     "not running in a cluster: KUBERNETES_SERVICE_HOST is not set", NULL, NULL,
     NULL},
    {"host empty", "", "443", NULL, "t", 1, NULL, GQ_ENOTFOUND,
     "not running in a cluster: KUBERNETES_SERVICE_HOST is not set", NULL, NULL,
     NULL},
    {"port unset", "10.96.0.1", NULL, NULL, "t", 1, NULL, GQ_ENOTFOUND,
     "not running in a cluster: KUBERNETES_SERVICE_PORT is not set", NULL, NULL,
     NULL},
    {"port not a number", "10.96.0.1", "https", NULL, "t", 1, NULL, GQ_EINVAL,
     "in-cluster config: KUBERNETES_SERVICE_PORT must be a port number, got "
     "'https'",
     NULL, NULL, NULL},
    {"port out of range", "10.96.0.1", "65536", NULL, "t", 1, NULL, GQ_EINVAL,
     "in-cluster config: KUBERNETES_SERVICE_PORT must be a port number, got "
     "'65536'",
     NULL, NULL, NULL},
    {"token missing", "10.96.0.1", "443", NULL, NULL, 1, NULL, GQ_EIO,
     "in-cluster config: cannot read token file '@D/token': No such file or "
     "directory",
     NULL, NULL, NULL},
    {"token empty", "10.96.0.1", "443", NULL, "\n", 1, NULL, GQ_EINVAL,
     "in-cluster config: token file '@D/token' is empty", NULL, NULL, NULL},
};

static void ic_setenv(const char *name, const char *value)
{
  if (value)
    setenv(name, value, 1);
  else
    unsetenv(name);
}

/* Writes the service account directory for c; returns its path. */
static void ic_prepare(const struct ic_case *c, char *sa, size_t len)
{
  char p[4300];

  snprintf(sa, len, "%s/sa", tmpdir);
  gq_test_rmtree(sa);
  assert_int_equal(mkdir(sa, 0700), 0);
  snprintf(p, sizeof(p), "%s/token", sa);
  if (c->token)
    write_file(p, c->token, strlen(c->token));
  snprintf(p, sizeof(p), "%s/namespace", sa);
  if (c->ns_file)
    write_file(p, c->ns_file, strlen(c->ns_file));
  if (c->ca) {
    size_t n;
    char *ca = gq_test_read_file(FX "/certs/ca.crt", &n);

    snprintf(p, sizeof(p), "%s/ca.crt", sa);
    write_file(p, ca, n);
    free(ca);
  }
  ic_setenv("KUBERNETES_SERVICE_HOST", c->host);
  ic_setenv("KUBERNETES_SERVICE_PORT", c->port);
  ic_setenv("POD_NAMESPACE", c->pod_ns);
}

static void ic_check(const struct ic_case *c, const struct gq_kubeconfig *k,
                     const char *sa)
{
  char p[4300];

  assert_string_equal(k->server, c->want_server);
  assert_string_equal(k->token, c->want_token);
  snprintf(p, sizeof(p), "%s/token", sa);
  assert_string_equal(k->token_file, p);
  assert_string_equal(k->namespace_, c->want_ns);
  assert_string_equal(k->source, "in-cluster");
  assert_null(k->context);
  assert_null(k->exec);
  if (c->ca) {
    assert_file_bytes(k->ca_data, k->ca_len, FX "/certs/ca.crt");
    snprintf(p, sizeof(p), "%s/ca.crt", sa);
    assert_string_equal(k->ca_file, p);
  } else {
    assert_null(k->ca_data);
    assert_null(k->ca_file);
  }
}

static void test_in_cluster(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(ic_cases) / sizeof(ic_cases[0]); i++) {
    const struct ic_case *c = &ic_cases[i];
    char sa[4200], err[1024], want[8192], fmt[1024];
    struct gq_kubeconfig k;
    int rc;

    print_message("case: %s\n", c->name);
    ic_prepare(c, sa, sizeof(sa));
    rc = gq_kubeconfig_in_cluster(sa, &k, err, sizeof(err));
    /* @D in in-cluster messages stands for the service account dir. */
    snprintf(fmt, sizeof(fmt), "%s", c->want_msg);
    expand(fmt, want, sizeof(want));
    if (strstr(c->want_msg, "@D")) {
      char *at = strstr(want, tmpdir) + strlen(tmpdir);
      memmove(at + 3, at, strlen(at) + 1);
      memcpy(at, "/sa", 3);
    }
    assert_string_equal(err, want);
    assert_int_equal(rc, c->want_rc);
    if (rc == 0)
      ic_check(c, &k, sa);
    else
      assert_null(k.server);
    gq_kubeconfig_release(&k);
  }
  unsetenv("KUBERNETES_SERVICE_HOST");
  unsetenv("KUBERNETES_SERVICE_PORT");
  unsetenv("POD_NAMESPACE");
}

/* ---- token files --------------------------------------------------------- */

struct token_case {
  const char *name;
  const char *content; /* NULL = no file */
  size_t len;          /* 0 = strlen(content) */
  int want_rc;
  const char *want_token;
  const char *want_msg; /* @D/token is the file */
};

static const struct token_case token_cases[] = {
    {"newline trimmed", "abc\n", 0, 0, "abc", ""},
    {"all trailing whitespace trimmed", "abc \t\r\n\n", 0, 0, "abc", ""},
    {"leading whitespace kept", "  abc", 0, 0, "  abc", ""},
    {"no trailing newline", "eyJhbGciOiJSUzI1NiJ9.x.y", 0, 0,
     "eyJhbGciOiJSUzI1NiJ9.x.y", ""},
    {"empty", "", 0, GQ_EINVAL, NULL, "token file '@D/token' is empty"},
    {"only whitespace", " \n\t\r\n", 0, GQ_EINVAL, NULL,
     "token file '@D/token' is empty"},
    {"line break inside", "abc\ndef\n", 0, GQ_EINVAL, NULL,
     "token file '@D/token' holds control characters"},
    {"NUL inside", "abc\0def", 7, GQ_EINVAL, NULL,
     "token file '@D/token' holds control characters"},
    {"missing", NULL, 0, GQ_EIO, NULL,
     "cannot read token file '@D/token': No such file or directory"},
};

static void test_token_file(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(token_cases) / sizeof(token_cases[0]); i++) {
    const struct token_case *c = &token_cases[i];
    char path[4200], want[8192], err[1024];
    char *tok = (char *)"sentinel";
    int rc;

    print_message("case: %s\n", c->name);
    snprintf(path, sizeof(path), "%s/token", tmpdir);
    unlink(path);
    if (c->content)
      write_file(path, c->content, c->len ? c->len : strlen(c->content));
    rc = gq_kubeconfig_read_token_file(path, &tok, err, sizeof(err));
    expand(c->want_msg, want, sizeof(want));
    assert_string_equal(err, want);
    assert_int_equal(rc, c->want_rc);
    assert_str_or_null(tok, c->want_token);
    free(tok);
  }
}

/* The 64 KiB cap: at the cap is fine, one byte over is GQ_ETOOBIG. */
static void test_token_file_cap(void **state)
{
  size_t cap = GQ_KUBECONFIG_MAX_TOKEN;
  char path[4200], want[4400], err[1024], *big = gq_xmalloc(cap + 1), *tok;

  (void)state;
  memset(big, 'a', cap + 1);
  snprintf(path, sizeof(path), "%s/big-token", tmpdir);
  write_file(path, big, cap);
  assert_int_equal(gq_kubeconfig_read_token_file(path, &tok, err, sizeof(err)),
                   0);
  assert_int_equal(strlen(tok), cap);
  free(tok);
  write_file(path, big, cap + 1);
  assert_int_equal(gq_kubeconfig_read_token_file(path, &tok, err, sizeof(err)),
                   GQ_ETOOBIG);
  assert_null(tok);
  snprintf(want, sizeof(want), "token file '%s' is larger than 65536 bytes",
           path);
  assert_string_equal(err, want);
  assert_int_equal(gq_kubeconfig_read_token_file(NULL, &tok, err, sizeof(err)),
                   GQ_EINVAL);
  free(big);
  unlink(path);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_load),
      cmocka_unit_test(test_exec_config),
      cmocka_unit_test(test_base64),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_error_buffer),
      cmocka_unit_test(test_default_paths),
      cmocka_unit_test(test_in_cluster),
      cmocka_unit_test(test_token_file),
      cmocka_unit_test(test_token_file_cap),
  };

  return cmocka_run_group_tests(tests, setup, teardown);
}
