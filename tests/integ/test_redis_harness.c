/* The private redis-server harness: starts on loopback, serves, isolates
 * concurrent instances, honors extra arguments, and cleans up. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tests/support/redis.h"

static void assert_reply(char *got, const char *want)
{
  assert_non_null(got);
  assert_string_equal(got, want);
  free(got);
}

static void test_start_serve_stop(void **state)
{
  struct gq_test_redis r;
  struct stat st;
  char dir[256];
  pid_t pid;

  (void)state;
  assert_int_equal(gq_test_redis_start(&r, NULL), 0);
  assert_true(r.port > 0);
  assert_non_null(strstr(r.url, "redis://127.0.0.1:"));
  assert_reply(gq_test_redis_cmd(&r, "SET %s %s", "k", "v"), "OK");
  assert_reply(gq_test_redis_cmd(&r, "GET %s", "k"), "v");
  assert_reply(gq_test_redis_cmd(&r, "CONFIG GET %s", "bind"), "(array of 2)");
  snprintf(dir, sizeof(dir), "%s", r.dir);
  pid = r.pid;
  gq_test_redis_stop(&r);
  assert_int_equal(r.pid, 0);
  assert_int_equal(kill(pid, 0), -1);           /* process is gone */
  assert_int_equal(stat(dir, &st), -1);         /* directory removed */
  assert_null(gq_test_redis_cmd(&r, "PING"));   /* nothing listens */
  gq_test_redis_stop(&r);                       /* second stop is safe */
}

static void test_two_instances_are_isolated(void **state)
{
  struct gq_test_redis a, b;

  (void)state;
  assert_int_equal(gq_test_redis_start(&a, NULL), 0);
  assert_int_equal(gq_test_redis_start(&b, NULL), 0);
  assert_int_not_equal(a.port, b.port);
  assert_reply(gq_test_redis_cmd(&a, "SET %s %s", "only", "a"), "OK");
  assert_reply(gq_test_redis_cmd(&b, "GET %s", "only"), "(nil)");
  gq_test_redis_stop(&a);
  assert_reply(gq_test_redis_cmd(&b, "PING"), "PONG");
  gq_test_redis_stop(&b);
}

static void test_extra_args(void **state)
{
  static const char *const args[] = {"--requirepass", "hunter2-test", NULL};
  struct gq_test_redis r;
  char *got;

  (void)state;
  /* With a password, PING without AUTH is refused, so readiness is seen as
   * a NOAUTH error: start() must still succeed once the server answers. */
  assert_int_equal(gq_test_redis_start(&r, args), 0);
  got = gq_test_redis_cmd(&r, "GET %s", "x");
  assert_non_null(got);
  assert_non_null(strstr(got, "NOAUTH"));
  free(got);
  gq_test_redis_stop(&r);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_start_serve_stop),
      cmocka_unit_test(test_two_instances_are_isolated),
      cmocka_unit_test(test_extra_args),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
