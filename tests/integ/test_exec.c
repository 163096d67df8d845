/* Integration tests for api/exec: real plugin scripts, written by the test
 * into a temporary directory and run through gq_exec_run() on a uv loop to
 * completion. Each case asserts that the callback ran exactly once, never
 * inside gq_exec_run(), with the right outcome, and that uv_loop_close()
 * returns 0 afterwards (no handle left open, no process left unreaped). */
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
#include <uv.h>

#include "api/exec.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/err.h"
#include "tests/support/fixture.h"

#define V1 GQ_EXEC_API_V1
#define V1BETA1 GQ_EXEC_API_V1BETA1

static char tmpdir[] = "/tmp/gq-exec-XXXXXX";

/* What the callback saw, copied (the arguments die with the call). */
struct outcome {
  int calls;
  int status;
  char *err;
  char *token, *cert, *key;
  int64_t expires_ms;
};

static void on_done(int status, const struct gq_exec_credential *cred,
                    const char *err, void *arg)
{
  struct outcome *o = arg;

  o->calls++;
  o->status = status;
  assert_non_null(err);
  o->err = gq_xstrdup(err);
  assert_true((status == 0) == (cred != NULL));
  if (!cred)
    return;
  o->token = cred->token ? gq_xstrdup(cred->token) : NULL;
  o->cert = cred->cert_data ? gq_xstrdup(cred->cert_data) : NULL;
  o->key = cred->key_data ? gq_xstrdup(cred->key_data) : NULL;
  o->expires_ms = cred->expires_ms;
}

static void outcome_free(struct outcome *o)
{
  free(o->err);
  free(o->token);
  free(o->cert);
  free(o->key);
  memset(o, 0, sizeof(*o));
}

static void assert_str_or_null(const char *got, const char *want)
{
  if (want)
    assert_string_equal(got ? got : "(null)", want);
  else
    assert_null(got);
}

/* Writes a plugin script with the given body and mode; returns its path
 * (owned). */
static char *write_plugin(const char *name, const char *body, mode_t mode)
{
  char *path = gq_xasprintf("%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");

  assert_non_null(f);
  fprintf(f, "#!/bin/sh\n%s", body);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(chmod(path, mode), 0);
  return path;
}

/* Replaces every @P in 'in' with 'plugin'. Owned. */
static char *expand(const char *in, const char *plugin)
{
  size_t n = strlen(in) + 1;
  char *out, *o;

  for (const char *p = strstr(in, "@P"); p; p = strstr(p + 2, "@P"))
    n += strlen(plugin);
  out = o = gq_xmalloc(n);
  while (*in) {
    if (in[0] == '@' && in[1] == 'P') {
      o += snprintf(o, n - (size_t)(o - out), "%s", plugin);
      in += 2;
    } else {
      *o++ = *in++;
    }
  }
  *o = '\0';
  return out;
}

/* Runs c on a fresh loop to completion. */
static void run_plugin(const struct gq_exec_config *c, const char *server,
                       struct outcome *o)
{
  uv_loop_t loop;

  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(gq_exec_run(&loop, c, server, on_done, o), 0);
  assert_int_equal(o->calls, 0); /* never synchronous */
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(o->calls, 1);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- table ----------------------------------------------------------------
 */

#define CRED(ver, status)                                                      \
  "cat <<'EOF'\n{\"apiVersion\":\"" ver "\",\"kind\":\"ExecCredential\","      \
  "\"status\":" status "}\nEOF\n"

/* Checks everything gpuq promises the plugin about its environment, then
 * prints a credential; any mismatch exits non-zero with the reason. */
#define ENV_CHECK(info)                                                        \
  "want='" info "'\n"                                                          \
  "if [ \"$KUBERNETES_EXEC_INFO\" != \"$want\" ]; then\n"                      \
  "  echo \"bad KUBERNETES_EXEC_INFO: $KUBERNETES_EXEC_INFO\" >&2; exit 3\n"   \
  "fi\n"                                                                       \
  "[ \"$GQ_TEST_ENV\" = from-config ] || "                                     \
  "{ echo \"bad GQ_TEST_ENV: $GQ_TEST_ENV\" >&2; exit 4; }\n"                  \
  "[ \"$GQ_TEST_INHERITED\" = from-parent ] || "                               \
  "{ echo \"not inherited: $GQ_TEST_INHERITED\" >&2; exit 5; }\n"              \
  "[ \"$GQ_TEST_EMPTY\" = '' ] && [ \"${GQ_TEST_EMPTY+set}\" = set ] || "      \
  "{ echo 'GQ_TEST_EMPTY not set empty' >&2; exit 6; }\n"                      \
  "[ \"$#\" -eq 2 ] && [ \"$1\" = --cluster ] && [ \"$2\" = 'a b' ] || "       \
  "{ echo \"bad args: $*\" >&2; exit 7; }\n"                                   \
  "[ -z \"$(cat)\" ] || { echo 'stdin not empty' >&2; exit 8; }\n"             \
  "[ \"$(env | grep -c '^GQ_TEST_ENV=')\" = 1 ] || "                           \
  "{ echo 'GQ_TEST_ENV set twice' >&2; exit 9; }\n"

struct exec_case {
  const char *name;
  const char *script;  /* body after #!/bin/sh; NULL = no file */
  mode_t mode;         /* 0 = 0755 */
  const char *command; /* NULL = the script's path */
  const char *api_version;
  const char *server;
  const char *hint;
  int interactive;
  int timeout_ms;
  int64_t max_elapsed_ms; /* 0 = 10 s */
  int check_child;        /* the script wrote a child's pid to $0.child */
  int want_rc;
  const char *want_msg; /* exact, @P = the command; NULL: see want_sub */
  const char *want_sub; /* must appear in the message */
  const char *want_token, *want_cert, *want_key;
  int64_t want_expires_ms;
};

static const struct exec_case cases[] = {
    {.name = "v1 token with expiry",
     .script = CRED(V1, "{\"token\":\"tok-v1\",\"expirationTimestamp\":"
                        "\"2030-01-02T03:04:05Z\"}"),
     .api_version = V1,
     .want_msg = "",
     .want_token = "tok-v1",
     .want_expires_ms = 1893553445000},
    {.name = "v1beta1 token, offset expiry",
     .script = CRED(V1BETA1, "{\"token\":\"tok-b\",\"expirationTimestamp\":"
                             "\"2030-01-02T05:04:05.250+02:00\"}"),
     .api_version = V1BETA1,
     .want_msg = "",
     .want_token = "tok-b",
     .want_expires_ms = 1893553445250},
    {.name = "token without expiry",
     .script = CRED(V1, "{\"token\":\"forever\"}"),
     .api_version = V1,
     .want_msg = "",
     .want_token = "forever"},
    {.name = "client certificate and key",
     .script = CRED(V1, "{\"clientCertificateData\":\"-----BEGIN "
                        "CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----"
                        "\\n\",\"clientKeyData\":\"-----BEGIN PRIVATE "
                        "KEY-----\\nMIGH\\n-----END PRIVATE KEY-----\\n\"}"),
     .api_version = V1,
     .want_msg = "",
     .want_cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END "
                  "CERTIFICATE-----\n",
     .want_key = "-----BEGIN PRIVATE KEY-----\nMIGH\n-----END PRIVATE "
                 "KEY-----\n"},
    {.name = "environment, arguments, stdin",
     .script = ENV_CHECK("{\"apiVersion\":\"" V1 "\",\"kind\":"
                         "\"ExecCredential\",\"spec\":{\"interactive\":false,"
                         "\"cluster\":{\"server\":"
                         "\"https://10.0.0.1:6443\"}}}")
         CRED(V1, "{\"token\":\"env-ok\"}"),
     .api_version = V1,
     .server = "https://10.0.0.1:6443",
     .want_msg = "",
     .want_token = "env-ok"},
    {.name = "no server: spec.cluster left out",
     .script = ENV_CHECK("{\"apiVersion\":\"" V1BETA1 "\",\"kind\":"
                         "\"ExecCredential\",\"spec\":{\"interactive\":"
                         "false}}") CRED(V1BETA1, "{\"token\":\"no-cluster\"}"),
     .api_version = V1BETA1,
     .interactive = GQ_EXEC_IF_AVAILABLE,
     .want_msg = "",
     .want_token = "no-cluster"},
    /* failures of the plugin */
    {.name = "exit 1 with stderr",
     .script = "echo 'error: SSO session expired' >&2\n"
               "printf 'run: aws sso login\\r\\n\\n' >&2\nexit 1\n",
     .api_version = V1,
     .want_rc = GQ_EIO,
     .want_msg = "exec plugin '@P' failed: exit status 1: error: SSO session "
                 "expired; run: aws sso login"},
    {.name = "exit 2 without stderr",
     .script = "exit 2\n",
     .api_version = V1,
     .want_rc = GQ_EIO,
     .want_msg = "exec plugin '@P' failed: exit status 2"},
    {.name = "killed by a signal",
     .script = "kill -TERM $$\nsleep 5\n",
     .api_version = V1,
     .want_rc = GQ_EIO,
     .want_msg = "exec plugin '@P' failed: killed by signal 15"},
    {.name = "failure wins over a credential on stdout",
     .script = CRED(V1, "{\"token\":\"x\"}") "exit 1\n",
     .api_version = V1,
     .want_rc = GQ_EIO,
     .want_msg = "exec plugin '@P' failed: exit status 1"},
    {.name = "stderr is capped",
     .script = "head -c 200000 /dev/zero | tr '\\0' e >&2\nexit 1\n",
     .api_version = V1,
     .want_rc = GQ_EIO,
     .want_sub = "failed: exit status 1: eeeeeeee"},
    /* output that is not an ExecCredential */
    {.name = "garbage",
     .script = "echo 'this is not json'\n",
     .api_version = V1,
     .want_rc = GQ_EPARSE,
     .want_msg = "exec plugin '@P': output is not an ExecCredential: 1:4: "
                 "'[' or '{' expected near 'this'"},
    {.name = "empty output",
     .script = "exit 0\n",
     .api_version = V1,
     .want_rc = GQ_EPARSE,
     .want_msg = "exec plugin '@P': output is not an ExecCredential: 1:0: "
                 "'[' or '{' expected near end of file"},
    {.name = "wrong kind",
     .script = "echo '{\"apiVersion\":\"" V1 "\",\"kind\":\"Secret\","
               "\"status\":{\"token\":\"x\"}}'\n",
     .api_version = V1,
     .want_rc = GQ_EPARSE,
     .want_msg = "exec plugin '@P': output is not an ExecCredential: kind: "
                 "must be \"ExecCredential\", got \"Secret\""},
    {.name = "apiVersion other than configured",
     .script = CRED(V1BETA1, "{\"token\":\"x\"}"),
     .api_version = V1,
     .want_rc = GQ_EPARSE,
     .want_msg =
         "exec plugin '@P': output is not an ExecCredential: "
         "apiVersion: must be \"" V1 "\" as configured, got \"" V1BETA1 "\""},
    {.name = "no status",
     .script = "echo '{\"apiVersion\":\"" V1 "\",\"kind\":"
               "\"ExecCredential\"}'\n",
     .api_version = V1,
     .want_rc = GQ_EPARSE,
     .want_msg = "exec plugin '@P': output is not an ExecCredential: status: "
                 "required value"},
    {.name = "status without credential",
     .script = CRED(V1, "{\"expirationTimestamp\":\"2030-01-02T03:04:05Z\"}"),
     .api_version = V1,
     .want_rc = GQ_EPARSE,
     .want_msg = "exec plugin '@P': output is not an ExecCredential: status: "
                 "must hold a token or a clientCertificateData and "
                 "clientKeyData pair"},
    {.name = "certificate without key",
     .script = CRED(V1, "{\"clientCertificateData\":\"pem\"}"),
     .api_version = V1,
     .want_rc = GQ_EPARSE,
     .want_msg = "exec plugin '@P': output is not an ExecCredential: status: "
                 "clientCertificateData and clientKeyData must be set "
                 "together"},
    {.name = "token not a string",
     .script = CRED(V1, "{\"token\":42}"),
     .api_version = V1,
     .want_rc = GQ_EPARSE,
     .want_msg = "exec plugin '@P': output is not an ExecCredential: "
                 "status.token: must be a string, got 42"},
    {.name = "token with a line break",
     .script = CRED(V1, "{\"token\":\"a\\r\\nX-Evil: 1\"}"),
     .api_version = V1,
     .want_rc = GQ_EPARSE,
     .want_msg = "exec plugin '@P': output is not an ExecCredential: "
                 "status.token: must not contain line breaks"},
    {.name = "bad expirationTimestamp",
     .script = CRED(V1, "{\"token\":\"x\",\"expirationTimestamp\":"
                        "\"tomorrow\"}"),
     .api_version = V1,
     .want_rc = GQ_EPARSE,
     .want_msg = "exec plugin '@P': output is not an ExecCredential: "
                 "status.expirationTimestamp: must be an RFC 3339 time, got "
                 "\"tomorrow\""},
    {.name = "output too big",
     .script = "head -c 2000000 /dev/zero | tr '\\0' a\n",
     .api_version = V1,
     .want_rc = GQ_ETOOBIG,
     .want_msg = "exec plugin '@P': output is larger than 1048576 bytes"},
    /* plugins that cannot run */
    {.name = "missing, with install hint",
     .script = NULL,
     .api_version = V1,
     .hint = "brew install gpuq-auth\nsee https://example.com/gpuq-auth\n",
     .want_rc = GQ_ENOTFOUND,
     .want_msg = "exec plugin '@P': not found (brew install gpuq-auth; see "
                 "https://example.com/gpuq-auth)"},
    {.name = "missing from PATH, no hint",
     .script = NULL,
     .command = "gq-no-such-credential-plugin",
     .api_version = V1,
     .want_rc = GQ_ENOTFOUND,
     .want_msg = "exec plugin 'gq-no-such-credential-plugin': not found"},
    {.name = "not executable",
     .script = CRED(V1, "{\"token\":\"x\"}"),
     .mode = 0644,
     .api_version = V1,
     .want_rc = GQ_EIO,
     .want_msg = "exec plugin '@P' failed: cannot start: permission denied"},
    {.name = "interactiveMode Always",
     .script = CRED(V1, "{\"token\":\"x\"}"),
     .api_version = V1,
     .interactive = GQ_EXEC_ALWAYS,
     .want_rc = GQ_EINVAL,
     .want_msg = "exec plugin '@P': interactiveMode Always needs a terminal, "
                 "and gpuq runs plugins without one"},
    /* timeouts: the whole process group dies, not just the shell */
    {.name = "sleeps past the timeout",
     .script = "sleep 30 &\necho $! > \"$0.child\"\nwait\n",
     .api_version = V1,
     .timeout_ms = 500,
     .max_elapsed_ms = 5000,
     .check_child = 1,
     .want_rc = GQ_ETIMEDOUT,
     .want_msg = "exec plugin '@P': timed out after 500 ms"},
    {.name = "exits but a child keeps stdout open",
     .script =
         "sleep 30 &\necho $! > \"$0.child\"\n" CRED(V1, "{\"token\":\"x\"}"),
     .api_version = V1,
     .timeout_ms = 500,
     .max_elapsed_ms = 5000,
     .check_child = 1,
     .want_rc = GQ_ETIMEDOUT,
     .want_msg = "exec plugin '@P': timed out after 500 ms"},
};

static void check_outcome(const struct exec_case *c, const struct outcome *o,
                          const char *cmd)
{
  char *want = expand(c->want_msg ? c->want_msg : "", cmd);

  if (c->want_msg)
    assert_string_equal(o->err, want);
  if (c->want_sub)
    assert_non_null(strstr(o->err, c->want_sub));
  assert_int_equal(o->status, c->want_rc);
  assert_str_or_null(o->token, c->want_token);
  assert_str_or_null(o->cert, c->want_cert);
  assert_str_or_null(o->key, c->want_key);
  assert_int_equal(o->expires_ms, c->want_expires_ms);
  free(want);
}

/* Asserts that the process whose pid the plugin wrote to <plugin>.child is
 * gone (or a zombie waiting for init): the timeout killed the whole process
 * group, not just the plugin. */
static void assert_child_dead(const char *plugin)
{
  char *pidfile = gq_xasprintf("%s.child", plugin), *pid, *stat_path, *st;
  int dead = 0;

  pid = gq_test_read_file(pidfile, NULL);
  assert_non_null(pid);
  pid[strcspn(pid, "\n")] = '\0';
  stat_path = gq_xasprintf("/proc/%s/stat", pid);
  for (int i = 0; i < 200 && !dead; i++) {
    st = gq_test_read_file(stat_path, NULL);
    dead = !st || strstr(st, ") Z ") != NULL;
    free(st);
    if (!dead)
      gq_test_sleep_ms(10);
  }
  assert_true(dead);
  free(stat_path);
  free(pid);
  free(pidfile);
}

static void run_case(size_t i)
{
  const struct exec_case *c = &cases[i];
  char name[32], *args[] = {"--cluster", "a b"};
  char *env[] = {"GQ_TEST_ENV=first",
                 "GQ_TEST_EMPTY=", "GQ_TEST_ENV=from-config"};
  struct gq_exec_config cfg = {
      .args = args, .n_args = 2, .env = env, .n_env = 3};
  struct outcome o = {0};
  char *path;
  int64_t t0;

  snprintf(name, sizeof(name), "plugin-%zu", i);
  path = c->script ? write_plugin(name, c->script, c->mode ? c->mode : 0755)
                   : gq_xasprintf("%s/%s", tmpdir, name);
  cfg.command = (char *)(c->command ? c->command : path);
  cfg.api_version = (char *)c->api_version;
  cfg.install_hint = (char *)c->hint;
  cfg.interactive = c->interactive;
  cfg.timeout_ms = c->timeout_ms;
  t0 = gq_clock_mono_ms();
  run_plugin(&cfg, c->server, &o);
  assert_true(gq_clock_mono_ms() - t0 <
              (c->max_elapsed_ms ? c->max_elapsed_ms : 10000));
  check_outcome(c, &o, cfg.command);
  if (c->check_child)
    assert_child_dead(path);
  outcome_free(&o);
  free(path);
}

static void test_cases(void **state)
{
  (void)state;
  setenv("GQ_TEST_INHERITED", "from-parent", 1);
  setenv("GQ_TEST_ENV", "from-parent-must-be-replaced", 1);
  setenv("KUBERNETES_EXEC_INFO", "stale", 1);
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    print_message("case: %s\n", cases[i].name);
    run_case(i);
  }
  unsetenv("GQ_TEST_INHERITED");
  unsetenv("GQ_TEST_ENV");
  unsetenv("KUBERNETES_EXEC_INFO");
}

/* Several plugins at once on one loop, each with its own outcome. */
static void test_concurrent(void **state)
{
  struct gq_exec_config cfg = {.api_version = (char *)V1};
  struct outcome o[4];
  uv_loop_t loop;
  char *ok, *slow, *bad;

  (void)state;
  memset(o, 0, sizeof(o));
  ok = write_plugin("ok", CRED(V1, "{\"token\":\"fast\"}"), 0755);
  slow = write_plugin("slow", "sleep 0.3\n" CRED(V1, "{\"token\":\"slow\"}"),
                      0755);
  bad = write_plugin("bad", "exit 9\n", 0755);
  assert_int_equal(uv_loop_init(&loop), 0);
  cfg.command = slow;
  assert_int_equal(gq_exec_run(&loop, &cfg, NULL, on_done, &o[0]), 0);
  cfg.command = ok;
  assert_int_equal(gq_exec_run(&loop, &cfg, NULL, on_done, &o[1]), 0);
  cfg.command = bad;
  assert_int_equal(gq_exec_run(&loop, &cfg, NULL, on_done, &o[2]), 0);
  cfg.command = ok;
  assert_int_equal(gq_exec_run(&loop, &cfg, NULL, on_done, &o[3]), 0);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
  for (int i = 0; i < 4; i++)
    assert_int_equal(o[i].calls, 1);
  assert_string_equal(o[0].token, "slow");
  assert_string_equal(o[1].token, "fast");
  assert_int_equal(o[2].status, GQ_EIO);
  assert_string_equal(o[3].token, "fast");
  for (int i = 0; i < 4; i++)
    outcome_free(&o[i]);
  free(ok);
  free(slow);
  free(bad);
}

/* Bad arguments: an error, and the callback never runs. */
static void test_invalid(void **state)
{
  struct gq_exec_config good = {.command = (char *)"true",
                                .api_version = (char *)V1};
  struct gq_exec_config no_cmd = {.api_version = (char *)V1};
  struct gq_exec_config no_ver = {.command = (char *)"true"};
  struct gq_exec_config neg = {
      .command = (char *)"true", .api_version = (char *)V1, .timeout_ms = -1};
  struct outcome o = {0};
  uv_loop_t loop;

  (void)state;
  assert_int_equal(uv_loop_init(&loop), 0);
  assert_int_equal(gq_exec_run(NULL, &good, NULL, on_done, &o), GQ_EINVAL);
  assert_int_equal(gq_exec_run(&loop, NULL, NULL, on_done, &o), GQ_EINVAL);
  assert_int_equal(gq_exec_run(&loop, &no_cmd, NULL, on_done, &o), GQ_EINVAL);
  assert_int_equal(gq_exec_run(&loop, &no_ver, NULL, on_done, &o), GQ_EINVAL);
  assert_int_equal(gq_exec_run(&loop, &neg, NULL, on_done, &o), GQ_EINVAL);
  assert_int_equal(gq_exec_run(&loop, &good, NULL, NULL, &o), GQ_EINVAL);
  assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
  assert_int_equal(o.calls, 0);
  assert_int_equal(uv_loop_close(&loop), 0);
}

struct valid_case {
  const char *name;
  struct gq_exec_credential cred;
  int64_t now_ms;
  int want;
};

static const struct valid_case valid_cases[] = {
    {"token without expiry", {.token = (char *)"t"}, 1000, 1},
    {"token well before expiry",
     {.token = (char *)"t", .expires_ms = 60000},
     40000,
     1},
    {"token just outside the slack",
     {.token = (char *)"t", .expires_ms = 60000},
     49999,
     1},
    {"token inside the slack",
     {.token = (char *)"t", .expires_ms = 60000},
     50000,
     0},
    {"token expired", {.token = (char *)"t", .expires_ms = 60000}, 70000, 0},
    {"empty token", {.token = (char *)""}, 0, 0},
    {"nothing", {.expires_ms = 0}, 0, 0},
    {"certificate pair",
     {.cert_data = (char *)"c", .key_data = (char *)"k"},
     0,
     1},
    {"certificate pair expired",
     {.cert_data = (char *)"c", .key_data = (char *)"k", .expires_ms = 5},
     10,
     0},
    {"certificate without key", {.cert_data = (char *)"c"}, 0, 0},
};

static void test_valid(void **state)
{
  (void)state;
  for (size_t i = 0; i < sizeof(valid_cases) / sizeof(valid_cases[0]); i++) {
    print_message("case: %s\n", valid_cases[i].name);
    assert_int_equal(
        gq_exec_credential_valid(&valid_cases[i].cred, valid_cases[i].now_ms),
        valid_cases[i].want);
  }
  assert_int_equal(gq_exec_credential_valid(NULL, 0), 0);
}

/* Release and free accept NULL and leave a released credential zeroed. */
static void test_release(void **state)
{
  struct gq_exec_credential c = {.token = gq_xstrdup("t"),
                                 .cert_data = gq_xstrdup("c"),
                                 .key_data = gq_xstrdup("k"),
                                 .expires_ms = 7};
  struct gq_exec_config *cfg = gq_xcalloc(1, sizeof(*cfg));

  (void)state;
  gq_exec_credential_release(&c);
  assert_null(c.token);
  assert_int_equal(c.expires_ms, 0);
  gq_exec_credential_release(NULL);
  cfg->command = gq_xstrdup("x");
  cfg->args = gq_xcalloc(1, sizeof(char *));
  cfg->args[0] = gq_xstrdup("a");
  cfg->n_args = 1;
  gq_exec_config_free(cfg);
  gq_exec_config_free(NULL);
}

static int setup(void **state)
{
  (void)state;
  assert_non_null(mkdtemp(tmpdir));
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  gq_test_rmtree(tmpdir);
  return 0;
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cases),   cmocka_unit_test(test_concurrent),
      cmocka_unit_test(test_invalid), cmocka_unit_test(test_valid),
      cmocka_unit_test(test_release),
  };

  return cmocka_run_group_tests(tests, setup, teardown);
}
