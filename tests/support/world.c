/* tests/support/world.c - see world.h. */
#include "tests/support/world.h"

#include "tests/support/fixture.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIM_ARGS 32

static int write_cluster(const char *path)
{
  FILE *f = fopen(path, "w");

  if (!f)
    return -1;
  fprintf(f, "nodes: []\ngroups:\n");
  for (int i = 0; i < 2; i++)
    fprintf(f, "- {count: 1, prefix: 'p%c-', cpu: '128', memory: 2000Gi, "
            "pods: 110, gpu: {product: NVIDIA-H100-80GB-HBM3, memoryMiB: "
            "81559, count: 8}}\n", "ab"[i]);
  return fclose(f) == 0 ? 0 : -1;
}

int gq_test_world_up(struct gq_test_world *w, const char *name, int record,
                     const char *const *sim_args)
{
  static const char *const cargs[] = {"--time-scale", "10", "--time-epoch",
                                      "1800000000", "--leader-elect", NULL};
  const char *tmp = getenv("TMPDIR");
  const char *args[MAX_SIM_ARGS + 1];
  char cluster[320];
  size_t n = 0;

  memset(w, 0, sizeof(*w));
  snprintf(w->dir, sizeof(w->dir), "%s/gpuq-%s-XXXXXX",
           tmp && *tmp ? tmp : "/tmp", name);
  if (!mkdtemp(w->dir)) {
    w->dir[0] = '\0';
    return -1;
  }
  snprintf(cluster, sizeof(cluster), "%s/cluster.yaml", w->dir);
  snprintf(w->record, sizeof(w->record), "%s/record.jsonl", w->dir);
  if (write_cluster(cluster) != 0)
    return -1;
  args[n++] = "--cluster";
  args[n++] = cluster;
  args[n++] = "--time-scale";
  args[n++] = "10";
  args[n++] = "--time-epoch";
  args[n++] = "1800000000";
  if (record) {
    args[n++] = "--record";
    args[n++] = w->record;
  }
  for (size_t i = 0; sim_args && sim_args[i] && n < MAX_SIM_ARGS; i++)
    args[n++] = sim_args[i];
  args[n] = NULL;
  if (gq_test_redis_start(&w->redis, NULL) != 0 ||
      gq_test_sim_start(&w->sim, args) != 0)
    return -1;
  w->up = 1;
  json_decref(gq_test_sim_call(&w->sim, "POST", "/api/v1/namespaces",
                               "{\"metadata\":{\"name\":\"team-a\"}}", 201));
  json_decref(gq_test_sim_call(&w->sim, "POST", "/api/v1/namespaces",
                               "{\"metadata\":{\"name\":\"gpuq-system\"}}",
                               201));
  return gq_test_ctl_start(&w->ctl, &w->sim, w->redis.url, 0, cargs);
}

int gq_test_world_stop(struct gq_test_world *w)
{
  int rc;

  if (!w->up)
    return 0;
  rc = gq_test_ctl_sim_stop(&w->ctl, &w->sim);
  w->up = 0;
  return rc;
}

int gq_test_world_down(struct gq_test_world *w)
{
  int rc = gq_test_world_stop(w);

  gq_test_redis_stop(&w->redis);
  if (w->dir[0])
    gq_test_rmtree(w->dir);
  return rc;
}

static void print_file(const char *what, const char *path)
{
  char *text = gq_test_read_file(path, NULL);

  fprintf(stderr, "---- %s ----\n%s\n", what, text ? text : "");
  free(text);
}

int gq_test_world_run(struct gq_test_world *w, const char *const *argv,
                      int timeout_ms, int want)
{
  struct gq_test_out o = {0};
  int status;

  gq_test_run_for(w->dir, argv, &o, timeout_ms);
  if (o.status != want || getenv("GQ_TEST_LOGS"))
    fprintf(stderr, "---- %s: exit %d ----\n%s\n%s\n", argv[1] ? argv[1]
            : argv[0], o.status, o.out, o.err);
  if (o.status != want && w->up) {
    print_file("controller log", w->ctl.log);
    print_file("sim log", w->sim.log);
  }
  status = o.status;
  gq_test_out_free(&o);
  return status;
}
