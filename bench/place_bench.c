/* bench_place: the cost of gpuq's placement decisions on a large snapshot
 * (decide/place.h, forecast.h). See bench/README.md, "bench/place".
 *
 * Builds N Ready nodes of 8 GPUs (alternating H100 and A100 products, in Z
 * zones), commits a seeded random load of 1-GPU pods (each node 1-8 used,
 * each pod with an expected end), then times, per call:
 *   place_1gpu     gq_place_job for a 1-GPU job;
 *   place_gang     gq_place_job for an 8 x 8 GPU gang (topology preferred);
 *   forecast_gang  gq_forecast_start for a 64 x 8 GPU gang that does not fit
 *                  now, releasing pods in end order until it does.
 * Every node holds at least one pod, so no 8-GPU replica fits anywhere
 * until releases free whole nodes.
 * Prints one line:
 *   place: nodes=N place_1gpu_us=A place_gang_us=B forecast_gang_us=C
 * Usage: bench_place [NODES [ZONES]] (defaults 2000 and 10).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/gpujob.h"
#include "api/node.h"
#include "base/alloc.h"
#include "base/err.h"
#include "decide/forecast.h"
#include "decide/names.h"
#include "decide/place.h"

static double now_us(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static void die(const char *what, const char *err)
{
  fprintf(stderr, "bench_place: %s: %s\n", what, err);
  exit(1);
}

static void make_node(struct gq_node *n, int i, int zones)
{
  char buf[1024], err[256];
  json_t *obj;

  snprintf(buf, sizeof(buf),
           "{\"metadata\":{\"name\":\"gpu-%05d\",\"labels\":{"
           "\"kubernetes.io/hostname\":\"gpu-%05d\","
           "\"topology.kubernetes.io/zone\":\"zone-%02d\","
           "\"nvidia.com/gpu.product\":\"%s\"}},\"spec\":{},"
           "\"status\":{\"allocatable\":{\"cpu\":\"128\",\"memory\":\"2000Gi\","
           "\"pods\":\"110\",\"nvidia.com/gpu\":\"8\"},"
           "\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
           i, i, i % zones, i % 2 ? "NVIDIA-A100-SXM4-80GB" : "NVIDIA-H100-80GB-HBM3");
  obj = json_loads(buf, 0, NULL);
  if (!obj || gq_node_decode(obj, NULL, n, err, sizeof(err)) != 0)
    die("node", obj ? err : "bad JSON");
  json_decref(obj);
}

static void make_job(struct gq_gpujob *j, int replicas, int gpus)
{
  char buf[1024], err[256];
  json_t *obj;

  snprintf(buf, sizeof(buf),
           "{\"apiVersion\":\"gpuq.dev/v1alpha1\",\"kind\":\"GpuJob\","
           "\"metadata\":{\"name\":\"j\",\"namespace\":\"ns\",\"uid\":\"u\"},"
           "\"spec\":{\"team\":\"t\",\"replicas\":%d,\"gpusPerReplica\":%d,"
           "\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\","
           "\"image\":\"x\",\"resources\":{\"requests\":{\"cpu\":\"4\","
           "\"memory\":\"32Gi\"}}}]}}}}",
           replicas, gpus);
  obj = json_loads(buf, 0, NULL);
  if (!obj || gq_gpujob_decode(obj, j, err, sizeof(err)) != 0)
    die("job", obj ? err : "bad JSON");
  json_decref(obj);
}

/* Average µs per call of place (or forecast) over iters calls. */
static double time_place(struct gq_snapshot *c, const struct gq_gpujob *j,
                         int iters, size_t *out)
{
  double t0 = now_us();

  for (int i = 0; i < iters; i++)
    if (gq_place_job(c, j, NULL, out, NULL, 0) != 0)
      die("place", "job did not fit");
  return (now_us() - t0) / iters;
}

int main(int argc, char **argv)
{
  int64_t n64 = 2000, zones64 = 10;
  int n, zones;
  struct gq_node *nodes;
  const struct gq_node **ptr;
  struct gq_snapshot cap;
  struct gq_gpujob one, gang, big;
  struct gq_podsched r1;
  struct gq_forecast_release *rel;
  size_t n_rel = 0, *out;
  unsigned seed = 12345;
  double a, b, f, t0;
  int64_t start;
  int iters = 20;

  if ((argc > 1 && gq_parse_int64(argv[1], &n64) != 0) ||
      (argc > 2 && gq_parse_int64(argv[2], &zones64) != 0))
    n64 = 0;
  n = n64 >= 16 && n64 <= 1000000 ? (int)n64 : 0;
  zones = (int)(zones64 >= 1 && zones64 <= 99 ? zones64 : 0);
  if (n < 16 || zones < 1 || zones > 99) {
    fprintf(stderr, "usage: bench_place [NODES 16-1000000 [ZONES 1-99]]\n");
    return 2;
  }
  nodes = gq_xcalloc((size_t)n, sizeof(*nodes));
  ptr = gq_xcalloc((size_t)n, sizeof(*ptr));
  for (int i = 0; i < n; i++) {
    make_node(&nodes[i], i, zones);
    ptr[i] = &nodes[i];
  }
  gq_snapshot_init(&cap, ptr, (size_t)n, GQ_TOPOLOGY_ZONE);
  make_job(&one, 1, 1);
  make_job(&gang, 8, 8);
  make_job(&big, 64, 8);
  gq_place_replica_request(&one, &r1);
  rel = gq_xcalloc((size_t)n * 8, sizeof(*rel));
  out = gq_xcalloc(64, sizeof(*out));

  /* Load: each node 1-8 GPUs used by 1-GPU pods ending within 10 hours;
   * a quarter of the nodes left empty so the 8 x 8 gang fits now. */
  for (int i = 0; i < n; i++) {
    int used = i % 4 == 0 ? 0 : 1 + (int)(rand_r(&seed) % 8);

    for (int k = 0; k < used; k++) {
      rel[n_rel].node = nodes[i].meta.name;
      rel[n_rel].req = &r1;
      rel[n_rel].end_ms = (int64_t)(rand_r(&seed) % 36000) * 1000;
      gq_snapshot_commit(&cap, rel[n_rel].node, &r1, +1);
      n_rel++;
    }
  }
  /* Fill the empty nodes with pods of unknown end but one GPU, so the
   * 64 x 8 gang fits only after releases. */
  for (int i = 0; i < n; i += 4) {
    rel[n_rel].node = nodes[i].meta.name;
    rel[n_rel].req = &r1;
    rel[n_rel].end_ms = 36000 * 1000;
    gq_snapshot_commit(&cap, rel[n_rel].node, &r1, +1);
    n_rel++;
  }

  /* place_1gpu */
  a = time_place(&cap, &one, 2000, out);
  /* place_gang: free 8 nodes' worth for it first (not timed) */
  for (int i = 0; i < 8 * 4 && i < n; i += 4)
    gq_snapshot_commit(&cap, nodes[i].meta.name, &r1, -1);
  b = time_place(&cap, &gang, iters, out);
  for (int i = 0; i < 8 * 4 && i < n; i += 4)
    gq_snapshot_commit(&cap, nodes[i].meta.name, &r1, +1);

  /* forecast_gang */
  t0 = now_us();
  for (int i = 0; i < iters; i++)
    if (gq_forecast_start(&cap, &big, NULL, rel, n_rel, 0, &start, out) != 0)
      die("forecast", "no start found");
  f = (now_us() - t0) / iters;
  fprintf(stderr, "bench_place: %zu pods committed; 64 x 8 gang starts at %lld s\n",
          n_rel, (long long)(start / 1000));

  printf("place: nodes=%d place_1gpu_us=%.1f place_gang_us=%.1f "
         "forecast_gang_us=%.0f\n",
         n, a, b, f);

  gq_place_replica_release(&r1);
  gq_gpujob_release(&one);
  gq_gpujob_release(&gang);
  gq_gpujob_release(&big);
  gq_snapshot_release(&cap);
  for (int i = 0; i < n; i++)
    gq_node_release(&nodes[i]);
  free(nodes);
  free(ptr);
  free(rel);
  free(out);
  return 0;
}
