/* tests/support/redis.c - a private redis-server per test (see redis.h). */
#include "tests/support/redis.h"

#include "base/alloc.h"
#include "tests/support/fixture.h"
#include "base/err.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Asks the kernel for a free loopback port. Another process may take it
 * before redis binds it; start() then sees redis exit and retries. */
int gq_test_free_port(void)
{
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t len = sizeof(a);
  int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

  if (fd < 0)
    return -errno;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
      getsockname(fd, (struct sockaddr *)&a, &len) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

static pid_t spawn(const struct gq_test_redis *r, const char *const *extra)
{
  char port[16];
  const char *argv[64];
  int n = 0;
  pid_t pid;

  snprintf(port, sizeof(port), "%d", r->port);
  argv[n++] = "redis-server";
  argv[n++] = "--bind";
  argv[n++] = "127.0.0.1";
  argv[n++] = "--port";
  argv[n++] = port;
  argv[n++] = "--dir";
  argv[n++] = r->dir;
  argv[n++] = "--logfile";
  argv[n++] = r->log;
  argv[n++] = "--save";
  argv[n++] = "";
  argv[n++] = "--appendonly";
  argv[n++] = "no";
  argv[n++] = "--daemonize";
  argv[n++] = "no";
  for (; extra && *extra && n < 62; extra++)
    argv[n++] = *extra;
  argv[n] = NULL;
  pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    execvp(argv[0], (char *const *)argv);
    fprintf(stderr, "cannot exec redis-server: %s\n", strerror(errno));
    _exit(127);
  }
  return pid;
}

/* Returns 1 once our server's own log says it accepts connections. Reading
 * the log (not a PING) proves that the answering server is ours and not
 * another test's that grabbed the port first. */
static int log_says_ready(const struct gq_test_redis *r)
{
  char line[512];
  int ready = 0;
  FILE *f = fopen(r->log, "r");

  if (!f)
    return 0;
  while (!ready && fgets(line, sizeof(line), f))
    ready = strstr(line, "Ready to accept connections") != NULL;
  fclose(f);
  return ready;
}

/* Polls until the server is ready (0), exits (-1), or 10 s pass. */
static int wait_ready(struct gq_test_redis *r)
{
  for (int i = 0; i < 1000; i++) {
    int status;

    if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
      r->pid = 0;
      return -1;
    }
    if (log_says_ready(r))
      return 0;
    gq_test_sleep_ms(10);
  }
  return GQ_ETIMEDOUT;
}

int gq_test_redis_start(struct gq_test_redis *r, const char *const *extra_args)
{
  return gq_test_redis_start_port(r, 0, extra_args);
}

int gq_test_redis_start_port(struct gq_test_redis *r, int port,
                             const char *const *extra_args)
{
  const char *tmp = getenv("TMPDIR");

  memset(r, 0, sizeof(*r));
  snprintf(r->dir, sizeof(r->dir), "%s/gpuq-test-redis-XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(r->dir)) {
    fprintf(stderr, "cannot create '%s': %s\n", r->dir, strerror(errno));
    return -errno;
  }
  snprintf(r->log, sizeof(r->log), "%s/redis.log", r->dir);
  for (int attempt = 0; attempt < 5; attempt++) {
    int rc;

    r->port = port ? port : gq_test_free_port();
    if (r->port < 0)
      break;
    snprintf(r->url, sizeof(r->url), "redis://127.0.0.1:%d/0", r->port);
    r->pid = spawn(r, extra_args);
    if (r->pid < 0)
      break;
    rc = wait_ready(r);
    if (rc == 0)
      return 0;
    remove(r->log); /* a retry must not read the failed run's log */
    if (port) /* the port asked for is taken: no other to try */
      break;
    if (rc != -1) {
      fprintf(stderr, "redis-server on port %d not ready in 10 s\n", r->port);
      gq_test_redis_stop(r);
      return rc;
    }
  }
  fprintf(stderr, "cannot start redis-server (is it installed? run 'make "
                  "deps')\n");
  gq_test_redis_stop(r);
  return GQ_EIO;
}

void gq_test_redis_stop(struct gq_test_redis *r)
{
  if (r->pid > 0) {
    int status;

    kill(r->pid, SIGTERM);
    for (int i = 0; i < 500; i++) {
      if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
        r->pid = 0;
        break;
      }
      gq_test_sleep_ms(10);
    }
    if (r->pid > 0) {
      kill(r->pid, SIGKILL);
      waitpid(r->pid, &status, 0);
      r->pid = 0;
    }
  }
  if (r->dir[0]) {
    gq_test_rmtree(r->dir);
    r->dir[0] = '\0';
  }
}

static char *reply_text(const redisReply *rep)
{
  switch (rep->type) {
  case REDIS_REPLY_STRING:
  case REDIS_REPLY_STATUS:
    return gq_xstrndup(rep->str, rep->len);
  case REDIS_REPLY_ERROR:
    return gq_xasprintf("ERR %s", rep->str);
  case REDIS_REPLY_INTEGER:
    return gq_xasprintf("%lld", rep->integer);
  case REDIS_REPLY_NIL:
    return gq_xstrdup("(nil)");
  default:
    return gq_xasprintf("(array of %zu)", rep->elements);
  }
}

char *gq_test_redis_cmd(const struct gq_test_redis *r, const char *fmt, ...)
{
  struct timeval tv = {1, 0};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
  redisReply *rep;
  char *out = NULL;
  va_list ap;

  if (!c || c->err) {
    redisFree(c);
    return NULL;
  }
  redisSetTimeout(c, tv);
  va_start(ap, fmt);
  rep = redisvCommand(c, fmt, ap);
  va_end(ap);
  if (rep)
    out = reply_text(rep);
  freeReplyObject(rep);
  redisFree(c);
  return out;
}
