/* api/exec.c - exec credential plugins on libuv (see exec.h).
 *
 * One struct exec_run per call owns four handles: the process, a pipe for
 * its stdout, one for its stderr, and the timeout timer. The run ends in two
 * steps (STYLE ownership rule 4): finish() decides the outcome and closes
 * every handle; the last close callback calls the user's callback and frees
 * the run. The callback therefore runs after the handles are gone, so a
 * caller may close its loop right after uv_run() returns, and it never runs
 * inside gq_exec_run(), not even for a program that cannot be started,
 * because close callbacks always run on a later loop iteration.
 *
 * When is the plugin done? After it has exited (we always wait for the exit
 * so that libuv reaps it; a closed uv_process_t would leave a zombie) and
 * both pipes are at EOF. A plugin that exits but leaves a child holding
 * stdout open would stall that forever, so the timeout also covers the time
 * after the exit. The plugin runs in its own process group
 * (UV_PROCESS_DETACHED, i.e. setsid) and the timeout kills the whole group:
 * killing only a shell script would leave its 'sleep' or 'curl' running and
 * holding the pipes.
 *
 * client-go uses os/exec, which blocks a goroutine; this is the same
 * protocol without blocking: cmd.Env = os.Environ() + exec.env +
 * KUBERNETES_EXEC_INFO (later entries win, as Go's exec dedups them), stdin
 * only when interactive (never here), stdout decoded as an ExecCredential.
 */
#include "api/exec.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/json.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/err.h"

extern char **environ;

/* Largest token or PEM field accepted in an ExecCredential. */
#define MAX_FIELD (GQ_EXEC_MAX_STDOUT)

struct exec_run {
  uv_process_t proc;
  uv_pipe_t out;
  uv_pipe_t errp;
  uv_timer_t timer;
  struct gq_buf obuf; /* stdout, capped at GQ_EXEC_MAX_STDOUT */
  struct gq_buf ebuf; /* stderr, the first GQ_EXEC_MAX_STDERR bytes */
  char *command;      /* copies of what messages and decoding need */
  char *api_version;
  char *install_hint;
  int timeout_ms;
  gq_exec_cb cb;
  void *arg;
  int open;      /* handles not closed yet */
  int eofs;      /* pipes done (EOF or read error) */
  int proc_init; /* uv_spawn was called, so proc must be closed */
  int spawned;   /* the process exists (exit_cb will come) */
  int exited;
  int64_t exit_status;
  int term_signal;
  int finishing;
  int rc;    /* first failure, 0 while none */
  char *msg; /* its message */
  struct gq_exec_credential cred;
  char chunk[64 * 1024]; /* read buffer shared by both pipes: libuv calls
                            alloc_cb and read_cb back to back */
};

static void maybe_finish(struct exec_run *r);

/* Records the first failure as "exec plugin 'cmd'<detail>"; later failures
 * (the kill after a timeout, say) are consequences and are dropped. */
__attribute__((format(printf, 3, 4))) static void
fail(struct exec_run *r, int rc, const char *fmt, ...)
{
  char detail[1024];
  va_list ap;

  if (r->rc != 0)
    return;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof(detail), fmt, ap);
  va_end(ap);
  r->rc = rc;
  r->msg = gq_xasprintf("exec plugin '%s'%s", r->command, detail);
}

/* s made fit for a one-line message: trailing whitespace dropped, line
 * breaks turned into "; ", other control characters into spaces. Owned. */
static char *one_line(const char *s, size_t n)
{
  struct gq_buf b;
  char c;

  while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' ||
                   s[n - 1] == '\t'))
    n--;
  gq_buf_init(&b, n * 2 + 1);
  for (size_t i = 0; i < n; i++) {
    c = s[i];
    if (c == '\r' && i + 1 < n && s[i + 1] == '\n')
      continue;
    if (c == '\n' || c == '\r')
      gq_buf_puts(&b, "; ");
    else
      gq_buf_append(&b, (unsigned char)c < 0x20 || c == 0x7f ? " " : &c, 1);
  }
  return gq_buf_take(&b);
}

/* ---- completion ---------------------------------------------------------- */

static void run_free(struct exec_run *r)
{
  gq_buf_release(&r->obuf);
  gq_buf_release(&r->ebuf);
  gq_exec_credential_release(&r->cred);
  free(r->command);
  free(r->api_version);
  free(r->install_hint);
  free(r->msg);
  free(r);
}

/* The last of the run's handles has closed: only now is it safe to call
 * the user (who may close the loop) and to free the run. */
static void on_closed(uv_handle_t *h)
{
  struct exec_run *r = h->data;

  if (--r->open > 0)
    return;
  if (r->rc == 0)
    r->cb(0, &r->cred, "", r->arg);
  else
    r->cb(r->rc, NULL, r->msg, r->arg);
  run_free(r);
}

static void close_all(struct exec_run *r)
{
  r->open = 3 + r->proc_init;
  uv_close((uv_handle_t *)&r->timer, on_closed);
  uv_close((uv_handle_t *)&r->out, on_closed);
  uv_close((uv_handle_t *)&r->errp, on_closed);
  if (r->proc_init)
    uv_close((uv_handle_t *)&r->proc, on_closed);
}

/* Kills the plugin's process group: the plugin and anything it started. */
static void kill_group(struct exec_run *r)
{
  if (r->spawned && (!r->exited || r->eofs < 2))
    uv_kill(-r->proc.pid, SIGKILL);
}

static void fail_exit(struct exec_run *r)
{
  char *err = one_line(gq_buf_str(&r->ebuf), r->ebuf.len);
  char how[64];

  if (r->term_signal)
    snprintf(how, sizeof(how), "killed by signal %d", r->term_signal);
  else
    snprintf(how, sizeof(how), "exit status %lld", (long long)r->exit_status);
  fail(r, GQ_EIO, " failed: %s%s%s", how, *err ? ": " : "", err);
  free(err);
}

/* ---- the ExecCredential -------------------------------------------------- */

static int nonempty(const char *s)
{
  return s && *s;
}

static void check_kind(struct gq_dec *d, const json_t *root, const char *want)
{
  const char *kind = gq_dec_string(d, root, "kind", 1, 256, NULL);
  const char *ver = gq_dec_string(d, root, "apiVersion", 1, 256, NULL);

  if (kind && strcmp(kind, "ExecCredential") != 0)
    gq_dec_fail_got(d, "kind", json_object_get(root, "kind"),
                    "must be \"ExecCredential\"");
  if (ver && strcmp(ver, want) != 0)
    gq_dec_fail_got(d, "apiVersion", json_object_get(root, "apiVersion"),
                    "must be \"%s\" as configured", want);
}

/* Decodes status into c, with client-go's checks (exec.go: a token or a
 * certificate and key pair, never half a pair). */
static void decode_status(struct gq_dec *d, const json_t *root,
                          struct gq_exec_credential *c)
{
  const json_t *st = gq_dec_object(d, root, "status", 1);
  const char *tok, *cert, *key, *exp;

  tok = gq_dec_string(d, st, "status.token", 0, MAX_FIELD, NULL);
  cert =
      gq_dec_string(d, st, "status.clientCertificateData", 0, MAX_FIELD, NULL);
  key = gq_dec_string(d, st, "status.clientKeyData", 0, MAX_FIELD, NULL);
  exp = gq_dec_string(d, st, "status.expirationTimestamp", 0, 64, NULL);
  if (gq_dec_failed(d))
    return;
  if (!nonempty(tok) && !nonempty(cert) && !nonempty(key))
    gq_dec_fail(d, "status",
                "must hold a token or a clientCertificateData "
                "and clientKeyData pair");
  else if (nonempty(cert) != nonempty(key))
    gq_dec_fail(d, "status",
                "clientCertificateData and clientKeyData must "
                "be set together");
  else if (tok && strpbrk(tok, "\r\n"))
    gq_dec_fail(d, "status.token", "must not contain line breaks");
  else if (exp && gq_time_parse(exp, &c->expires_ms) != 0)
    gq_dec_fail_got(d, "status.expirationTimestamp",
                    json_object_get(st, "expirationTimestamp"),
                    "must be an RFC 3339 time");
  if (gq_dec_failed(d))
    return;
  c->token = nonempty(tok) ? gq_xstrdup(tok) : NULL;
  c->cert_data = nonempty(cert) ? gq_xstrdup(cert) : NULL;
  c->key_data = nonempty(key) ? gq_xstrdup(key) : NULL;
}

static void parse_output(struct exec_run *r)
{
  const char *text = gq_buf_str(&r->obuf);
  json_error_t je;
  json_t *root = json_loadb(text, r->obuf.len, 0, &je);
  struct gq_dec d;

  if (!root) {
    fail(r, GQ_EPARSE, ": output is not an ExecCredential: %d:%d: %s", je.line,
         je.column, je.text);
    return;
  }
  gq_dec_init(&d);
  check_kind(&d, root, r->api_version);
  decode_status(&d, root, &r->cred);
  if (gq_dec_failed(&d)) {
    gq_exec_credential_release(&r->cred);
    fail(r, GQ_EPARSE, ": output is not an ExecCredential: %s", d.msg);
  }
  json_decref(root);
}

/* Ends the run once the plugin has exited and its output is complete, or
 * it has exited after a failure; see the file comment. */
static void maybe_finish(struct exec_run *r)
{
  if (r->finishing || (r->spawned && !r->exited) || (r->rc == 0 && r->eofs < 2))
    return;
  r->finishing = 1;
  if (r->rc == 0 && (r->term_signal || r->exit_status != 0))
    fail_exit(r);
  if (r->rc == 0)
    parse_output(r);
  close_all(r);
}

/* ---- handle callbacks ---------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
  struct exec_run *r = h->data;

  (void)hint;
  buf->base = r->chunk;
  buf->len = sizeof(r->chunk);
}

/* A pipe reached EOF (or failed): stop reading it; when both are done and
 * the plugin has exited, the run can end. */
static void pipe_done(struct exec_run *r, uv_stream_t *s, ssize_t n)
{
  uv_read_stop(s);
  r->eofs++;
  if (n != UV_EOF)
    fail(r, GQ_EIO, ": cannot read its output: %s", uv_strerror((int)n));
  maybe_finish(r);
}

static void on_stdout(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
  struct exec_run *r = s->data;

  if (n < 0) {
    pipe_done(r, s, n);
  } else if (n > 0 && gq_buf_append(&r->obuf, buf->base, (size_t)n) != 0) {
    fail(r, GQ_ETOOBIG, ": output is larger than %zu bytes",
         GQ_EXEC_MAX_STDOUT);
    kill_group(r);
    maybe_finish(r);
  }
}

/* stderr is only for messages: keep the head, drop the rest. Reading on
 * after the cap matters: a plugin blocked on a full stderr pipe would never
 * exit. */
static void on_stderr(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
  struct exec_run *r = s->data;
  size_t room = GQ_EXEC_MAX_STDERR - r->ebuf.len;

  if (n < 0)
    pipe_done(r, s, UV_EOF); /* a broken stderr does not fail the run */
  else if (n > 0)
    gq_buf_append(&r->ebuf, buf->base, (size_t)n < room ? (size_t)n : room);
}

static void on_proc_exit(uv_process_t *p, int64_t status, int sig)
{
  struct exec_run *r = p->data;

  r->exited = 1;
  r->exit_status = status;
  r->term_signal = sig;
  maybe_finish(r);
}

static void on_timeout(uv_timer_t *t)
{
  struct exec_run *r = t->data;

  fail(r, GQ_ETIMEDOUT, ": timed out after %d ms", r->timeout_ms);
  kill_group(r);
  maybe_finish(r);
}

/* ---- starting ------------------------------------------------------------ */

/* "KUBERNETES_EXEC_INFO=<ExecCredential JSON>". Owned. */
static char *exec_info(const char *api_version, const char *server)
{
  json_t *o = json_pack("{s:s, s:s, s:{s:b}}", "apiVersion", api_version,
                        "kind", "ExecCredential", "spec", "interactive", 0);
  char *json, *out;

  if (server)
    json_object_set_new(json_object_get(o, "spec"), "cluster",
                        json_pack("{s:s}", "server", server));
  json = json_dumps(o, JSON_COMPACT);
  out = gq_xasprintf("KUBERNETES_EXEC_INFO=%s", json ? json : "{}");
  free(json);
  json_decref(o);
  return out;
}

/* Whether "NAME=..." entries a and b set the same variable. */
static int same_name(const char *a, const char *b)
{
  size_t n = strcspn(a, "=");

  return strncmp(a, b, n) == 0 && (b[n] == '=' || b[n] == '\0');
}

/* Whether 'entry' is set again by one of list[0..n) or by 'last'. */
static int shadowed(const char *entry, char *const *list, size_t n,
                    const char *last)
{
  for (size_t i = 0; i < n; i++)
    if (same_name(entry, list[i]))
      return 1;
  return same_name(entry, last);
}

/* environ + c->env + info, each name once, the last setting winning. The
 * array is owned; its strings are borrowed. */
static char **build_env(const struct gq_exec_config *c, char *info)
{
  size_t n = 0, k = 0;
  char **env;

  while (environ[n])
    n++;
  env = gq_xcalloc(n + c->n_env + 2, sizeof(*env));
  for (size_t i = 0; i < n; i++)
    if (!shadowed(environ[i], c->env, c->n_env, info))
      env[k++] = environ[i];
  for (size_t i = 0; i < c->n_env; i++)
    if (!shadowed(c->env[i], c->env + i + 1, c->n_env - i - 1, info))
      env[k++] = c->env[i];
  env[k++] = info;
  env[k] = NULL;
  return env;
}

/* client-go words a missing binary at length and appends installHint; the
 * hint is the useful part, so it goes into the one-line message. */
static void spawn_failed(struct exec_run *r, int rc)
{
  if (rc == UV_ENOENT)
    fail(r, GQ_ENOTFOUND, ": not found%s%s%s", r->install_hint ? " (" : "",
         r->install_hint ? r->install_hint : "", r->install_hint ? ")" : "");
  else
    fail(r, GQ_EIO, " failed: cannot start: %s", uv_strerror(rc));
}

static void spawn(struct exec_run *r, uv_loop_t *loop,
                  const struct gq_exec_config *c, const char *server)
{
  uv_process_options_t o;
  uv_stdio_container_t io[3];
  char *info = exec_info(c->api_version, server);
  char **argv = gq_xcalloc(c->n_args + 2, sizeof(*argv));
  int rc;

  memset(&o, 0, sizeof(o));
  argv[0] = c->command;
  for (size_t i = 0; i < c->n_args; i++)
    argv[i + 1] = c->args[i];
  io[0].flags = UV_IGNORE; /* libuv puts /dev/null there */
  io[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  io[1].data.stream = (uv_stream_t *)&r->out;
  io[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  io[2].data.stream = (uv_stream_t *)&r->errp;
  o.file = c->command;
  o.args = argv;
  o.env = build_env(c, info);
  o.stdio = io;
  o.stdio_count = 3;
  o.flags = UV_PROCESS_DETACHED; /* own group, killed as one */
  o.exit_cb = on_proc_exit;
  r->proc_init = 1; /* uv_spawn initializes proc even when it fails */
  rc = uv_spawn(loop, &r->proc, &o);
  free(o.env);
  free(argv);
  free(info);
  if (rc != 0) {
    spawn_failed(r, rc);
    return;
  }
  r->spawned = 1;
  uv_read_start((uv_stream_t *)&r->out, on_alloc, on_stdout);
  uv_read_start((uv_stream_t *)&r->errp, on_alloc, on_stderr);
  uv_timer_start(&r->timer, on_timeout, (uint64_t)r->timeout_ms, 0);
}

static struct exec_run *run_new(uv_loop_t *loop, const struct gq_exec_config *c,
                                gq_exec_cb cb, void *arg)
{
  struct exec_run *r = gq_xcalloc(1, sizeof(*r));

  gq_buf_init(&r->obuf, GQ_EXEC_MAX_STDOUT);
  gq_buf_init(&r->ebuf, GQ_EXEC_MAX_STDERR);
  r->command = gq_xstrdup(c->command);
  r->api_version = gq_xstrdup(c->api_version);
  r->install_hint = c->install_hint
                        ? one_line(c->install_hint, strlen(c->install_hint))
                        : NULL;
  r->timeout_ms = c->timeout_ms ? c->timeout_ms : GQ_EXEC_TIMEOUT_MS;
  r->cb = cb;
  r->arg = arg;
  uv_timer_init(loop, &r->timer);
  uv_pipe_init(loop, &r->out, 0);
  uv_pipe_init(loop, &r->errp, 0);
  r->timer.data = r->out.data = r->errp.data = r->proc.data = r;
  return r;
}

int gq_exec_run(uv_loop_t *loop, const struct gq_exec_config *c,
                const char *server, gq_exec_cb cb, void *arg)
{
  struct exec_run *r;

  if (!loop || !c || !c->command || !c->api_version || !cb || c->timeout_ms < 0)
    return GQ_EINVAL;
  r = run_new(loop, c, cb, arg);
  if (c->interactive == GQ_EXEC_ALWAYS)
    fail(r, GQ_EINVAL,
         ": interactiveMode Always needs a terminal, and "
         "gpuq runs plugins without one");
  else
    spawn(r, loop, c, server);
  maybe_finish(r);
  return 0;
}

void gq_exec_config_free(struct gq_exec_config *c)
{
  if (!c)
    return;
  free(c->command);
  for (size_t i = 0; i < c->n_args; i++)
    free(c->args[i]);
  free(c->args);
  for (size_t i = 0; i < c->n_env; i++)
    free(c->env[i]);
  free(c->env);
  free(c->api_version);
  free(c->install_hint);
  free(c);
}

void gq_exec_credential_release(struct gq_exec_credential *c)
{
  if (!c)
    return;
  free(c->token);
  free(c->cert_data);
  free(c->key_data);
  memset(c, 0, sizeof(*c));
}

/* client-go's credsExpired() has no slack; ours keeps a request from
 * leaving with a token that expires while it is in flight. */
int gq_exec_credential_valid(const struct gq_exec_credential *c, int64_t now_ms)
{
  if (!c || (!nonempty(c->token) &&
             !(nonempty(c->cert_data) && nonempty(c->key_data))))
    return 0;
  return c->expires_ms == 0 || now_ms < c->expires_ms - GQ_EXEC_EXPIRY_SLACK_MS;
}
