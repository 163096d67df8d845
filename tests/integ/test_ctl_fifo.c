/* gpuq-controller --policy fifo, the baseline bench/replay compares gpuq
 * with (issue 9): against gpuq-sim and a private redis-server, on two
 * nodes of 8 GPUs. While one node is held, a 2 x 8 GPU gang at the head of
 * the cohort's queue blocks a small short job of another team that
 * arrived after it, although the small job fits the free node and would
 * end long before the gang could start (gpuq would backfill it): it is
 * admitted only with or after the gang. Every wait is for a condition,
 * with a deadline.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/support/fixture.h"
#include "tests/support/proc.h"
#include "tests/support/redis.h"

static struct gq_test_sim sim;
static struct gq_test_redis redis;
static struct gq_test_ctl ctl;
static char dir[] = "/tmp/gpuq-fifo-XXXXXX";

#define WAIT_MS 30000
#define JOBS "/apis/gpuq.dev/v1alpha1/namespaces/%s/gpujobs"

static void create_quota(const char *team)
{
  char body[512];

  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"TeamQuota\","
           "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"namespaces\":"
           "[\"%s\"],\"cohort\":\"c\",\"resources\":[{\"flavor\":\"*\","
           "\"nominal\":8}]}}", team, team);
  json_decref(gq_test_sim_call(&sim, "POST",
                               "/apis/gpuq.dev/v1alpha1/teamquotas", body,
                               201));
  snprintf(body, sizeof(body), "{\"metadata\":{\"name\":\"%s\"}}", team);
  json_decref(gq_test_sim_call(&sim, "POST", "/api/v1/namespaces", body, 201));
}

static int setup(void **state)
{
  static const char *const cargs[] = {"--policy", "fifo", "--time-scale", "10",
                                      "--time-epoch", "1800000000", NULL};
  const char *args[] = {"--cluster", NULL, "--time-scale", "10",
                        "--time-epoch", "1800000000", NULL};
  char cluster[300];
  FILE *f;

  (void)state;
  if (!mkdtemp(dir))
    return -1;
  snprintf(cluster, sizeof(cluster), "%s/cluster.yaml", dir);
  if (!(f = fopen(cluster, "w")))
    return -1;
  fputs("groups:\n- count: 2\n  prefix: gpu-\n  gpu: {product: Tesla-P40, "
        "memoryMiB: 24576, count: 8}\n  cpu: \"48\"\n  memory: 256Gi\n"
        "  pods: 110\n", f);
  fclose(f);
  args[1] = cluster;
  if (gq_test_redis_start(&redis, NULL) != 0 ||
      gq_test_sim_start(&sim, args) != 0)
    return -1;
  create_quota("team-a");
  create_quota("team-b");
  return gq_test_ctl_start(&ctl, &sim, redis.url, 1, cargs);
}

static int teardown(void **state)
{
  int rc = 0;

  (void)state;
  rc |= gq_test_ctl_stop(&ctl) != 0;
  rc |= gq_test_sim_stop(&sim) != 0;
  gq_test_redis_stop(&redis);
  gq_test_rmtree(dir);
  return rc ? -1 : 0;
}

/* Creates job team/name of replicas x gpus GPUs, expected to run
 * expected_s virtual seconds; it runs until deleted (no run-seconds
 * annotation). */
static void create_job(const char *team, const char *name, int replicas,
                       int gpus, int expected_s)
{
  char body[1024], path[256];

  snprintf(body, sizeof(body),
           "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
           "\"metadata\":{\"name\":\"%s\",\"namespace\":\"%s\"},"
           "\"spec\":{\"team\":\"%s\",\"replicas\":%d,\"gpusPerReplica\":%d,"
           "\"expectedDurationSeconds\":%d,\"template\":{\"spec\":"
           "{\"containers\":[{\"name\":\"c\",\"image\":\"x\"}]}}}}",
           name, team, team, replicas, gpus, expected_s);
  snprintf(path, sizeof(path), JOBS, team);
  json_decref(gq_test_sim_call(&sim, "POST", path, body, 201));
}

static int wait_field(const char *team, const char *name, const char *field,
                      const char *want)
{
  char path[256];

  snprintf(path, sizeof(path), JOBS "/%s", team, name);
  return gq_test_wait_field(&sim, path, field, want, WAIT_MS);
}

/* status.admittedAt of team/name (RFC 3339, owned), or NULL. */
static char *admitted_at(const char *team, const char *name)
{
  char path[256];
  json_t *j;
  char *v;

  snprintf(path, sizeof(path), JOBS "/%s", team, name);
  j = gq_test_sim_call(&sim, "GET", path, NULL, 200);
  v = strdup(json_string_value(json_object_get(json_object_get(j, "status"),
                                               "admittedAt")));
  json_decref(j);
  return v;
}

static void test_head_blocks_the_queue(void **state)
{
  char *big, *small;

  (void)state;
  create_job("team-a", "hold", 1, 8, 3600);
  assert_true(wait_field("team-a", "hold", "status.phase", "Running"));
  create_job("team-a", "big", 2, 8, 3600);
  assert_true(wait_field("team-a", "big", "status.reason",
                         "WaitingForCapacity"));
  create_job("team-b", "small", 1, 4, 60);
  assert_true(wait_field("team-b", "small", "status.phase", "Queued"));
  assert_true(wait_field("team-a", "big", "status.phase", "Queued"));
  /* the node that held the gang back frees: the gang goes first */
  json_decref(gq_test_sim_call(&sim, "DELETE",
                               "/apis/gpuq.dev/v1alpha1/namespaces/team-a/"
                               "gpujobs/hold", NULL, 200));
  assert_true(wait_field("team-a", "big", "status.phase", "Running"));
  big = admitted_at("team-a", "big");
  /* the gang holds both nodes: small runs once it is gone */
  json_decref(gq_test_sim_call(&sim, "DELETE",
                               "/apis/gpuq.dev/v1alpha1/namespaces/team-a/"
                               "gpujobs/big", NULL, 200));
  assert_true(wait_field("team-b", "small", "status.phase", "Running"));
  small = admitted_at("team-b", "small");
  assert_non_null(big);
  assert_non_null(small);
  /* RFC 3339 UTC strings of one format compare as times */
  assert_true(strcmp(small, big) >= 0);
  free(big);
  free(small);
  gq_test_sim_expect_clean(&sim, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_head_blocks_the_queue),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
