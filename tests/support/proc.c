/* tests/support/proc.c - gpuq-sim, kubectl and HTTP for tests. */
#include "tests/support/proc.h"
#include "tests/support/redis.h"

#include "base/alloc.h"
#include "tests/support/fixture.h"
#include "base/buf.h"

#include <curl/curl.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#ifndef GQ_BINARY_DIR
#define GQ_BINARY_DIR "build"
#endif

static char *slurp(const char *path)
{
  char *text = gq_test_read_file(path, NULL);

  return text ? text : gq_xstrdup("");
}

int gq_test_wait_file(const char *path, const char *needle, int timeout_ms)
{
  for (int t = 0; t < timeout_ms; t += 20) {
    char *text = slurp(path);
    int hit = strstr(text, needle) != NULL;

    free(text);
    if (hit)
      return 1;
    gq_test_sleep_ms(20);
  }
  return 0;
}

int gq_test_sim_start(struct gq_test_sim *s, const char *const *extra)
{
  const char *tmp = getenv("TMPDIR");
  char out[320], sim[512];
  const char *argv[48];
  int n = 0;
  struct stat st;

  memset(s, 0, sizeof(*s));
  snprintf(s->dir, sizeof(s->dir), "%s/gpuq-test-sim-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(s->dir))
    return -1;
  snprintf(s->kubeconfig, sizeof(s->kubeconfig), "%s/kubeconfig", s->dir);
  snprintf(s->cache, sizeof(s->cache), "%s/kube-cache", s->dir);
  snprintf(s->log, sizeof(s->log), "%s/sim.log", s->dir);
  snprintf(out, sizeof(out), "%s/sim.out", s->dir);
  snprintf(sim, sizeof(sim), "%s/gpuq-sim", GQ_BINARY_DIR);
  argv[n++] = sim;
  argv[n++] = "--listen";
  argv[n++] = "127.0.0.1:0";
  argv[n++] = "--kubeconfig-out";
  argv[n++] = s->kubeconfig;
  argv[n++] = "--crds";
  argv[n++] = "crds";
  for (; extra && *extra && n < 46; extra++)
    argv[n++] = *extra;
  argv[n] = NULL;
  s->pid = fork();
  if (s->pid == 0) {
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fe = open(s->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    prctl(PR_SET_PDEATHSIG, SIGTERM);
    dup2(fo, 1);
    dup2(fe, 2);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  for (int t = 0; t < 20000; t += 10) {
    int status;

    if (stat(s->kubeconfig, &st) == 0) {
      char *text = slurp(out), *nl;

      nl = strchr(text, '\n');
      if (nl)
        *nl = '\0';
      snprintf(s->url, sizeof(s->url), "%s",
               strncmp(text, "listening on ", 13) ? "" : text + 13);
      free(text);
      return 0;
    }
    if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
      char *log = slurp(s->log);

      fprintf(stderr, "gpuq-sim exited early (status %d):\n%s\n", status, log);
      free(log);
      s->pid = 0;
      return -1;
    }
    gq_test_sleep_ms(10);
  }
  fprintf(stderr, "gpuq-sim wrote no kubeconfig in 20 s\n");
  return -1;
}

int gq_test_sim_wait(struct gq_test_sim *s, int timeout_ms)
{
  int status, rc = -1;

  for (int t = 0; s->pid > 0 && t < timeout_ms; t += 20) {
    if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
      rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      s->pid = 0;
      break;
    }
    gq_test_sleep_ms(20);
  }
  if (rc != 0) {
    char *log = slurp(s->log);

    fprintf(stderr, "gpuq-sim exit %d; log:\n%s\n", rc, log);
    free(log);
  }
  return rc;
}

int gq_test_sim_stop(struct gq_test_sim *s)
{
  int status = -1, rc = s->pid > 0 ? -1 : 0; /* 0: it exited already */

  if (s->pid > 0) {
    kill(s->pid, SIGTERM);
    for (int t = 0; t < 5000; t += 10) {
      if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
        rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        s->pid = 0;
        break;
      }
      gq_test_sleep_ms(10);
    }
    if (s->pid > 0) {
      kill(s->pid, SIGKILL);
      waitpid(s->pid, &status, 0);
      s->pid = 0;
    }
  }
  if (rc != 0 && s->log[0]) {
    char *log = slurp(s->log);

    fprintf(stderr, "gpuq-sim log:\n%s\n", log);
    free(log);
  }
  if (s->dir[0])
    gq_test_rmtree(s->dir);
  s->dir[0] = '\0';
  return rc;
}

/* Builds kubectl's argv: kubectl --kubeconfig K --cache-dir C args... */
static int kubectl_argv(const struct gq_test_sim *s, const char **argv,
                        va_list ap)
{
  int n = 0;
  const char *a;

  argv[n++] = "kubectl";
  argv[n++] = "--kubeconfig";
  argv[n++] = s->kubeconfig;
  argv[n++] = "--cache-dir";
  argv[n++] = s->cache;
  while ((a = va_arg(ap, const char *)) != NULL && n < 62)
    argv[n++] = a;
  argv[n] = NULL;
  return n;
}

/* Runs argv (argv[0] looked up on PATH) with stdin_text on stdin, its
 * files in dir, waits for it (cap_ms) and captures its output into *o.
 * With kubeconfig set, the child gets KUBECONFIG=kubeconfig and the build
 * directory first on PATH, as a user of the plugin would have. */
static int run_capture(const char *dir, const char *const *argv,
                       const char *stdin_text, const char *kubeconfig,
                       struct gq_test_out *o, int cap_ms)
{
  char in[400], out[400], err[400];
  pid_t pid;
  int status;

  snprintf(in, sizeof(in), "%s/kubectl.in", dir);
  snprintf(out, sizeof(out), "%s/kubectl.out", dir);
  snprintf(err, sizeof(err), "%s/kubectl.err", dir);
  {
    FILE *f = fopen(in, "w");

    if (f) {
      fputs(stdin_text ? stdin_text : "", f);
      fclose(f);
    }
  }
  pid = fork();
  if (pid == 0) {
    int fi = open(in, O_RDONLY), fo = open(out, O_WRONLY | O_CREAT | O_TRUNC,
                                           0600);
    int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(fi, 0);
    dup2(fo, 1);
    dup2(fe, 2);
    if (kubeconfig) {
      const char *path = getenv("PATH");
      char *p = gq_xasprintf("%s:%s", GQ_BINARY_DIR,
                             path ? path : "/usr/bin:/bin");

      setenv("PATH", p, 1);
      setenv("KUBECONFIG", kubeconfig, 1);
    }
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  o->status = -1;
  for (int t = 0; t < cap_ms; t += 5) {
    if (waitpid(pid, &status, WNOHANG) == pid) {
      o->status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      break;
    }
    gq_test_sleep_ms(5);
  }
  if (o->status == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  o->out = slurp(out);
  o->err = slurp(err);
  return o->status;
}

int gq_test_kubectl(const struct gq_test_sim *s, struct gq_test_out *o,
                    const char *stdin_text, ...)
{
  const char *argv[64];
  va_list ap;

  va_start(ap, stdin_text);
  kubectl_argv(s, argv, ap);
  va_end(ap);
  return run_capture(s->dir, argv, stdin_text, NULL, o, 60000);
}

int gq_test_kubectl_plugin(const struct gq_test_sim *s, struct gq_test_out *o,
                           ...)
{
  const char *argv[64], *a;
  va_list ap;
  int n = 0;

  argv[n++] = "kubectl";
  va_start(ap, o);
  while ((a = va_arg(ap, const char *)) != NULL && n < 63)
    argv[n++] = a;
  va_end(ap);
  argv[n] = NULL;
  return run_capture(s->dir, argv, NULL, s->kubeconfig, o, 60000);
}

int gq_test_run(const char *dir, const char *const *argv,
                struct gq_test_out *o)
{
  return run_capture(dir, argv, NULL, NULL, o, 60000);
}

int gq_test_run_for(const char *dir, const char *const *argv,
                    struct gq_test_out *o, int cap_ms)
{
  return run_capture(dir, argv, NULL, NULL, o, cap_ms);
}

void gq_test_out_free(struct gq_test_out *o)
{
  free(o->out);
  free(o->err);
  o->out = o->err = NULL;
}

pid_t gq_test_kubectl_bg(const struct gq_test_sim *s, const char *out_path,
                         ...)
{
  const char *argv[64];
  va_list ap;
  pid_t pid;

  va_start(ap, out_path);
  kubectl_argv(s, argv, ap);
  va_end(ap);
  pid = fork();
  if (pid == 0) {
    int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(fo, 1);
    dup2(fo, 2);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
  }
  return pid;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
  return gq_buf_append(arg, p, size * n) == 0 ? size * n : 0;
}

int gq_test_http_ex(const char *method, const char *url, const char *body,
                    const char *ctype, const char *const *headers,
                    struct gq_test_http_resp *r)
{
  CURL *c = curl_easy_init();
  struct curl_slist *h = NULL;
  struct gq_buf b, hd;
  char hdr[512];
  long code = -1;

  gq_buf_init(&b, 64u << 20);
  gq_buf_init(&hd, 1u << 20);
  curl_easy_setopt(c, CURLOPT_URL, url);
  curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &hd);
  if (getenv("GQ_TEST_CAINFO")) /* a test's own CA for an https sim */
    curl_easy_setopt(c, CURLOPT_CAINFO, getenv("GQ_TEST_CAINFO"));
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    snprintf(hdr, sizeof(hdr), "Content-Type: %s",
             ctype ? ctype : "application/json");
    h = curl_slist_append(h, hdr);
  }
  for (size_t i = 0; headers && headers[i]; i++)
    h = curl_slist_append(h, headers[i]);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
  curl_slist_free_all(h);
  curl_easy_cleanup(c);
  r->len = b.len;
  r->body = gq_buf_take(&b);
  r->headers = gq_buf_take(&hd);
  return (int)code;
}

void gq_test_http_resp_free(struct gq_test_http_resp *r)
{
  free(r->body);
  free(r->headers);
  r->body = r->headers = NULL;
}

int gq_test_http(const char *method, const char *url, const char *body,
                 const char *ctype, const char *token, char **resp)
{
  struct gq_test_http_resp r;
  char auth[512];
  const char *headers[] = {token ? auth : NULL, NULL};
  int code;

  snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token ? token : "");
  code = gq_test_http_ex(method, url, body, ctype, headers, &r);
  free(r.headers);
  *resp = r.body;
  return code;
}

int gq_test_make_cert(const char *dir, const char *name, char *crt, char *key)
{
  pid_t pid;
  int status;

  snprintf(key, 300, "%s/%s.key", dir, name);
  snprintf(crt, 300, "%s/%s.crt", dir, name);
  pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);

    dup2(null, 2);
    execlp("openssl", "openssl", "req", "-x509", "-newkey", "rsa:2048",
           "-nodes", "-keyout", key, "-out", crt, "-days", "2", "-subj",
           "/CN=gpuq-sim", "-addext", "subjectAltName=IP:127.0.0.1",
           (char *)NULL);
    _exit(127);
  }
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

json_t *gq_test_sim_call(const struct gq_test_sim *s, const char *method,
                         const char *path, const char *body, int want)
{
  char url[512], *resp;
  int code;
  json_t *j;

  snprintf(url, sizeof(url), "%s%s", s->url, path);
  code = gq_test_http(method, url, body, NULL, NULL, &resp);
  if (code != want)
    fail_msg("%s %s: status %d, want %d: %s", method, path, code, want, resp);
  j = json_loads(resp, JSON_DECODE_ANY, NULL);
  free(resp);
  return j;
}

/* The clock answer's nowMs, failing the test if it has none. */
static int64_t clock_now(json_t *c, const char *what)
{
  const json_t *now = json_object_get(c, "nowMs");
  int64_t v;

  if (!json_is_integer(now))
    fail_msg("%s: no nowMs in the sim's answer", what);
  v = (int64_t)json_integer_value(now);
  json_decref(c);
  return v;
}

int64_t gq_test_sim_now_ms(const struct gq_test_sim *s)
{
  return clock_now(gq_test_sim_call(s, "GET", "/sim/v1/clock", NULL, 200),
                   "GET /sim/v1/clock");
}

int64_t gq_test_sim_wait_until(const struct gq_test_sim *s, int64_t until_ms)
{
  char body[64];

  snprintf(body, sizeof(body), "{\"untilMs\":%lld}", (long long)until_ms);
  return clock_now(gq_test_sim_call(s, "POST", "/sim/v1/clock", body, 200),
                   "POST /sim/v1/clock");
}

int64_t gq_test_sim_wait_virtual(const struct gq_test_sim *s, double seconds)
{
  char body[64];

  snprintf(body, sizeof(body), "{\"seconds\":%.3f}", seconds);
  return clock_now(gq_test_sim_call(s, "POST", "/sim/v1/clock", body, 200),
                   "POST /sim/v1/clock");
}

void gq_test_sim_expect_clean(const struct gq_test_sim *s, long misses)
{
  json_t *r = gq_test_sim_call(s, "GET", "/sim/v1/report", NULL, 200);
  long long v = json_integer_value(json_object_get(r, "invariant_violations"));
  long long m = json_integer_value(json_object_get(r, "placement_misses"));

  json_decref(r);
  if (v != 0 || m != misses)
    fail_msg("sim report: %lld invariant violations, %lld placement misses "
             "(want 0 and %ld)", v, m, misses);
}

int gq_test_ctl_start(struct gq_test_ctl *c, const struct gq_test_sim *s,
                      const char *redis_url, int metrics,
                      const char *const *extra)
{
  static int starts;
  char bin[512], maddr[64];
  const char *argv[48];
  int n = 0;

  memset(c, 0, sizeof(*c));
  snprintf(c->log, sizeof(c->log), "%s/ctl-%d.log", s->dir, ++starts);
  snprintf(bin, sizeof(bin), "%s/gpuq-controller", GQ_BINARY_DIR);
  argv[n++] = bin;
  argv[n++] = "--kubeconfig";
  argv[n++] = s->kubeconfig;
  argv[n++] = "--redis";
  argv[n++] = redis_url;
  argv[n++] = "--log-level";
  argv[n++] = "debug";
  if (metrics) {
    c->metrics_port = gq_test_free_port();
    snprintf(maddr, sizeof(maddr), "127.0.0.1:%d", c->metrics_port);
    argv[n++] = "--metrics-addr";
    argv[n++] = maddr;
  }
  for (; extra && *extra && n < 46; extra++)
    argv[n++] = *extra;
  argv[n] = NULL;
  c->pid = fork();
  if (c->pid < 0)
    return -1;
  if (c->pid == 0) {
    int fe = open(c->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fo = open("/dev/null", O_WRONLY);

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(fo, 1);
    dup2(fe, 2);
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  return 0;
}

static void dump_log(const char *path)
{
  char *log = slurp(path);

  fprintf(stderr, "gpuq-controller log (%s):\n%s\n", path, log ? log : "");
  free(log);
}

int gq_test_ctl_stop(struct gq_test_ctl *c)
{
  int status, rc = -1;

  if (c->pid <= 0)
    return 0;
  kill(c->pid, SIGTERM);
  for (int t = 0; t < 15000; t += 10) {
    if (waitpid(c->pid, &status, WNOHANG) == c->pid) {
      rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      c->pid = 0;
      break;
    }
    gq_test_sleep_ms(10);
  }
  if (c->pid > 0) {
    kill(c->pid, SIGKILL);
    waitpid(c->pid, &status, 0);
    c->pid = 0;
  }
  if (rc != 0)
    dump_log(c->log);
  return rc;
}

int gq_test_ctl_sim_stop(struct gq_test_ctl *c, struct gq_test_sim *s)
{
  int rc = gq_test_ctl_stop(c) != 0;

  rc |= gq_test_sim_stop(s) != 0;
  return rc ? -1 : 0;
}

void gq_test_ctl_kill(struct gq_test_ctl *c)
{
  int status;

  if (c->pid <= 0)
    return;
  kill(c->pid, SIGKILL);
  waitpid(c->pid, &status, 0);
  c->pid = 0;
}

int gq_test_wait_field(const struct gq_test_sim *s, const char *obj,
                       const char *path, const char *want, int timeout_ms)
{
  char url[1024], *resp = NULL, seg[256];

  snprintf(url, sizeof(url), "%s%s", s->url, obj);
  for (int t = 0; t <= timeout_ms; t += 50) {
    json_t *root, *v;
    const char *p = path, *dot;
    int st = gq_test_http("GET", url, NULL, NULL, NULL, &resp);

    root = st == 200 && resp ? json_loads(resp, 0, NULL) : NULL;
    free(resp);
    resp = NULL;
    v = root;
    while (v && *p) {
      dot = strchr(p, '.');
      snprintf(seg, sizeof(seg), "%.*s", dot ? (int)(dot - p) : (int)strlen(p),
               p);
      v = json_object_get(v, seg);
      p = dot ? dot + 1 : p + strlen(p);
    }
    if (v && ((json_is_string(v) && !strcmp(json_string_value(v), want)) ||
              (json_is_integer(v) &&
               json_integer_value(v) == strtoll(want, NULL, 10) &&
               *want))) {
      json_decref(root);
      return 1;
    }
    json_decref(root);
    gq_test_sleep_ms(50);
  }
  return 0;
}


void gq_test_assert_has(const char *text, const char *needle)
{
  if (!text || !strstr(text, needle))
    fail_msg("missing '%s' in:\n%s", needle, text ? text : "(null)");
}

json_t *gq_test_parse_json(const char *text)
{
  json_error_t e;
  json_t *doc = json_loads(text, 0, &e);

  if (!doc)
    fail_msg("not JSON (%s):\n%s", e.text, text);
  return doc;
}
