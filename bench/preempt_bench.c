/* bench_preempt: the cost of a victim search (decide/preempt.h) on a
 * full cluster. See bench/README.md, "bench_preempt".
 *
 * Builds N Ready nodes of 8 GPUs, each running two 4-GPU jobs of one team
 * (2N candidates) with seeded random priorities 0-9 and work at risk, so
 * no GPU is free; then times gq_preempt_select for a priority-100 job of
 * that team (mean of 10 searches each):
 *   one    1 x 8 GPUs (one whole node to free);
 *   gang   8 x 8 GPUs (eight whole nodes).
 * Prints one line:
 *   preempt: nodes=N candidates=C one_us=A one_victims=V gang_us=B
 *            gang_victims=W
 * Usage: bench_preempt [NODES] (default 2000).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/gpujob.h"
#include "api/node.h"
#include "api/teamquota.h"
#include "base/alloc.h"
#include "base/err.h"
#include "decide/names.h"
#include "decide/place.h"
#include "decide/preempt.h"

static double clock_us(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Decodes text with dec into out, or exits naming what failed. */
static void decode_or_die(const char *what, const char *text,
                          int (*dec)(const json_t *, void *, char *, size_t),
                          void *out)
{
  char err[256];
  json_t *obj = json_loads(text, 0, NULL);

  if (!obj || dec(obj, out, err, sizeof(err)) != 0) {
    fprintf(stderr, "bench_preempt: %s: %s\n", what, obj ? err : "bad JSON");
    exit(1);
  }
  json_decref(obj);
}

static int dec_node(const json_t *o, void *out, char *err, size_t len)
{
  return gq_node_decode(o, NULL, out, err, len);
}

static int dec_job(const json_t *o, void *out, char *err, size_t len)
{
  return gq_gpujob_decode(o, out, err, len);
}

static int dec_quota(const json_t *o, void *out, char *err, size_t len)
{
  return gq_teamquota_decode(o, out, err, len);
}

static void gpujob(struct gq_gpujob *j, int replicas, int gpus)
{
  char buf[512];

  snprintf(buf, sizeof(buf), "{\"apiVersion\":\"gpuq.dev/v1alpha1\","
           "\"kind\":\"GpuJob\",\"metadata\":{\"name\":\"p\",\"namespace\":"
           "\"t\",\"uid\":\"u\"},\"spec\":{\"team\":\"t\",\"replicas\":%d,"
           "\"gpusPerReplica\":%d,\"template\":{\"spec\":{\"containers\":"
           "[{\"name\":\"c\",\"image\":\"x\"}]}}}}", replicas, gpus);
  decode_or_die("job", buf, dec_job, j);
}

#define ITERS 10

/* Times ITERS searches (the snapshot is left as it was by each); returns
 * the mean µs, the victim count in *victims. */
static double search(const struct gq_preempt_ask *ask,
                     const struct gq_preempt_cand *cand, size_t n,
                     int *victims)
{
  size_t *v = gq_xcalloc(n + 1, sizeof(*v)), out[8];
  struct gq_assignment a;
  double t0 = clock_us();

  for (int i = 0; i < ITERS; i++)
    *victims = gq_preempt_select(ask, cand, n, v, &a, out);
  t0 = (clock_us() - t0) / ITERS;
  free(v);
  if (*victims <= 0) {
    fprintf(stderr, "bench_preempt: no victims found (%d)\n", *victims);
    exit(1);
  }
  return t0;
}

int main(int argc, char **argv)
{
  int64_t n64 = 2000;
  size_t n, nc;
  struct gq_node *nodes;
  const struct gq_node **ptr;
  struct gq_snapshot s;
  struct gq_teamquota q;
  const struct gq_teamquota *teams[1] = {&q};
  struct gq_gpujob four, one, gang;
  struct gq_podsched r4;
  struct gq_preempt_cand *cand;
  const char **names;
  const struct gq_podsched *reqp = &r4;
  struct gq_ledger_use use = {0, "*", 0};
  struct gq_preempt_ask ask;
  unsigned seed = 4242;
  char buf[1024];
  double t1, t8;
  int v1, v8;

  if ((argc > 1 && gq_parse_int64(argv[1], &n64) != 0) || n64 < 16 ||
      n64 > 100000) {
    fprintf(stderr, "usage: bench_preempt [NODES 16-100000]\n");
    return 2;
  }
  n = (size_t)n64;
  nc = 2 * n;
  nodes = gq_xcalloc(n, sizeof(*nodes));
  ptr = gq_xcalloc(n, sizeof(*ptr));
  names = gq_xcalloc(n, sizeof(*names));
  for (size_t i = 0; i < n; i++) {
    snprintf(buf, sizeof(buf), "{\"metadata\":{\"name\":\"gpu-%05zu\","
             "\"labels\":{\"kubernetes.io/hostname\":\"gpu-%05zu\"}},"
             "\"spec\":{},\"status\":{\"allocatable\":{\"cpu\":\"128\","
             "\"memory\":\"2000Gi\",\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},"
             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
             i, i);
    decode_or_die("node", buf, dec_node, &nodes[i]);
    ptr[i] = &nodes[i];
    names[i] = nodes[i].meta.name;
  }
  gq_snapshot_init(&s, ptr, n, NULL);
  snprintf(buf, sizeof(buf), "{\"apiVersion\":\"gpuq.dev/v1alpha1\","
           "\"kind\":\"TeamQuota\",\"metadata\":{\"name\":\"t\"},\"spec\":{"
           "\"namespaces\":[\"t\"],\"resources\":[{\"flavor\":\"*\","
           "\"nominal\":%zu}]}}", 8 * n + 64);
  decode_or_die("quota", buf, dec_quota, &q);
  gpujob(&four, 1, 4);
  gpujob(&one, 1, 8);
  gpujob(&gang, 8, 8);
  gq_place_replica_request(&four, &r4);
  cand = gq_xcalloc(nc, sizeof(*cand));
  for (size_t c = 0; c < nc; c++) {
    size_t node = c / 2;

    gq_snapshot_commit(&s, names[node], &r4, 1);
    cand[c] = (struct gq_preempt_cand){0, (int32_t)(rand_r(&seed) % 10), 4,
                                       "*", (int64_t)(rand_r(&seed) % 100000),
                                       1, 0, 0, 1, &names[node], &reqp};
  }
  use.gpus = (long long)(8 * n);
  ask = (struct gq_preempt_ask){&s, &one, 100, teams, 1, 0, &use, 1, 0, 0, 0};
  t1 = search(&ask, cand, nc, &v1);
  ask.j = &gang;
  t8 = search(&ask, cand, nc, &v8);
  printf("preempt: nodes=%zu candidates=%zu one_us=%.0f one_victims=%d "
         "gang_us=%.0f gang_victims=%d\n", n, nc, t1, v1, t8, v8);
  gq_place_replica_release(&r4);
  gq_gpujob_release(&four);
  gq_gpujob_release(&one);
  gq_gpujob_release(&gang);
  gq_teamquota_release(&q);
  gq_snapshot_release(&s);
  for (size_t i = 0; i < n; i++)
    gq_node_release(&nodes[i]);
  free(nodes);
  free(ptr);
  free(names);
  free(cand);
  return 0;
}
