/* gpuq-sim's GPUs (issue 22): pods with sim.gpuq.dev/gpu-utilization
 * annotations run on a real gpuq-sim on loopback, its dcgm-exporter
 * endpoint (--dcgm-listen) is scraped over HTTP and checked for
 * dcgm-exporter's metric names, labels and values (GPU indices handed out
 * lowest first, deterministic UUIDs, pod labels only on used GPUs), an XID
 * error from the API and one from the node timeline, a bad annotation
 * (a Warning Event, the default used) and the report's allocated, used and
 * idle GPU-hours per team once the pods have ended. The sim runs at 60x:
 * a virtual minute is a real second. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/clock.h"
#include "tests/support/fixture.h"
#include "tests/support/proc.h"

#define NODE "gpu-a100-00"

static struct gq_test_sim sim;
static char metrics_url[256];
static int64_t sim_t0_ms; /* virtual time the sim was started at, or later */

static int group_setup(void **state)
{
  static const char *const args[] = {
      "--cluster", "clusters/mixed.yaml", "--time-scale", "60",
      "--dcgm-listen", "127.0.0.1:0", "--gpu-utilization", "0.05",
      "--idle-threshold", "10", "--events",
      "tests/fixtures/sim/dcgm-events.yaml", NULL};
  char path[400], *out, *line;

  (void)state;
  if (gq_test_sim_start(&sim, args) != 0)
    return -1;
  sim_t0_ms = gq_test_sim_now_ms(&sim);
  snprintf(path, sizeof(path), "%s/sim.out", sim.dir);
  out = gq_test_read_file(path, NULL);
  line = out ? strstr(out, "dcgm-exporter on ") : NULL;
  if (!line || sscanf(line, "dcgm-exporter on %255s", metrics_url) != 1) {
    fprintf(stderr, "no dcgm-exporter line in:\n%s\n", out ? out : "");
    free(out);
    return -1;
  }
  free(out);
  return 0;
}

static int group_teardown(void **state)
{
  (void)state;
  return gq_test_sim_stop(&sim) == 0 ? 0 : -1;
}

/* Creates default/name pinned to NODE: team label, gpus, run seconds and
 * the utilization annotation. */
static void create_pod(const char *name, const char *team, int gpus,
                       int run_s, const char *util)
{
  char body[2048];

  snprintf(body, sizeof(body),
           "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"gpuq.dev/team\":"
           "\"%s\"},\"annotations\":{\"sim.gpuq.dev/run-seconds\":\"%d\","
           "\"sim.gpuq.dev/gpu-utilization\":\"%s\"}},\"spec\":{"
           "\"nodeName\":\"" NODE "\",\"containers\":[{\"name\":\"%s-main\","
           "\"image\":\"i\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":"
           "\"%d\"}}},{\"name\":\"sidecar\",\"image\":\"i\"}]}}",
           name, team, run_s, util, name, gpus);
  json_decref(gq_test_sim_call(&sim, "POST", "/api/v1/namespaces/default/pods",
                               body, 201));
}

static int wait_phase(const char *name, const char *phase)
{
  char path[256];

  snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", name);
  return gq_test_wait_field(&sim, path, "status.phase", phase, 60000);
}

static char *scrape(void)
{
  char *body = NULL;

  assert_int_equal(gq_test_http("GET", metrics_url, NULL, NULL, NULL, &body),
                   200);
  return body;
}

/* The sample line of metric name for GPU gpu of node (NULL if none):
 * copied into line (len bytes). */
static const char *find(const char *text, const char *name, const char *node,
                        int gpu, char *line, size_t len)
{
  char want_gpu[32], want_host[300];
  const char *p = text;
  size_t n = strlen(name);

  snprintf(want_gpu, sizeof(want_gpu), "{gpu=\"%d\",", gpu);
  snprintf(want_host, sizeof(want_host), "Hostname=\"%s\"", node);
  while ((p = strstr(p, name))) {
    const char *eol = strchr(p, '\n');
    size_t l = eol ? (size_t)(eol - p) : strlen(p);

    if ((p == text || p[-1] == '\n') && !strncmp(p + n, want_gpu,
                                                  strlen(want_gpu))) {
      snprintf(line, len, "%.*s", (int)l, p);
      if (strstr(line, want_host))
        return line;
    }
    p += l;
  }
  return NULL;
}

static double value(const char *text, const char *name, const char *node,
                    int gpu)
{
  char line[1200];

  if (!find(text, name, node, gpu, line, sizeof(line)))
    fail_msg("no %s for GPU %d of %s", name, gpu, node);
  return strtod(strrchr(line, ' ') + 1, NULL);
}

static void expect_pod_labels(const char *text, int gpu, const char *pod)
{
  char line[1200], want[300];

  assert_non_null(find(text, "DCGM_FI_DEV_GPU_UTIL", NODE, gpu, line,
                       sizeof(line)));
  if (!pod) {
    if (strstr(line, "pod=") || strstr(line, "namespace=") ||
        strstr(line, "container="))
      fail_msg("free GPU %d has pod labels: %s", gpu, line);
    return;
  }
  snprintf(want, sizeof(want),
           ",Hostname=\"" NODE "\",container=\"%s-main\","
           "namespace=\"default\",pod=\"%s\"} ", pod, pod);
  if (!strstr(line, want))
    fail_msg("GPU %d: want %s in %s", gpu, want, line);
  assert_non_null(strstr(line, "modelName=\"NVIDIA A100-SXM4-80GB\""));
}

/* The UUID label of a sample line: "GPU-" and 8-4-4-4-12 hex digits. */
static void uuid_of(const char *line, char *uuid)
{
  const char *u = strstr(line, "UUID=\"");
  unsigned a, b, c, d;
  unsigned long long e;
  int n = 0;

  assert_non_null(u);
  assert_int_equal(sscanf(u + 6, "GPU-%8x-%4x-%4x-%4x-%12llx\"%n", &a, &b,
                          &c, &d, &e, &n), 5);
  assert_int_equal(n, 41); /* 40 characters and the quote */
  snprintf(uuid, 41, "%s", u + 6);
}

static void expect_families(const char *text)
{
  static const char *const names[] = {
      "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
      "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE",
      "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_XID_ERRORS"};
  char want[200], line[1200], uuids[8][41];

  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    snprintf(want, sizeof(want), "# TYPE %s gauge\n", names[i]);
    assert_non_null(strstr(text, want));
    snprintf(want, sizeof(want), "# HELP %s ", names[i]);
    assert_non_null(strstr(text, want));
  }
  /* one series per GPU: 8 on the A100 node, none past them */
  for (int g = 0; g < 8; g++) {
    assert_non_null(find(text, "DCGM_FI_DEV_GPU_UTIL", NODE, g, line,
                         sizeof(line)));
    snprintf(want, sizeof(want), ",pci_bus_id=\"00000000:%02X:00.0\","
             "device=\"nvidia%d\",", g + 1, g);
    assert_non_null(strstr(line, want));
    uuid_of(line, uuids[g]);
    for (int h = 0; h < g; h++)
      assert_string_not_equal(uuids[g], uuids[h]);
  }
  assert_null(find(text, "DCGM_FI_DEV_GPU_UTIL", NODE, 8, line, sizeof(line)));
  /* the H100 node's model name, from the product label */
  assert_non_null(find(text, "DCGM_FI_DEV_GPU_UTIL", "gpu-h100-00", 0, line,
                       sizeof(line)));
  assert_non_null(strstr(line, "modelName=\"NVIDIA H100 80GB HBM3\""));
}

/* The pod's running time in virtual seconds, from its status (whole
 * seconds, so within a second). */
static double ran_s(const char *name)
{
  char path[256];
  json_t *p;
  const char *start, *end;
  int64_t a = 0, b = 0;

  snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", name);
  p = gq_test_sim_call(&sim, "GET", path, NULL, 200);
  start = json_string_value(json_object_get(json_object_get(p, "status"),
                                            "startTime"));
  end = json_string_value(json_object_get(json_object_get(json_object_get(
      json_array_get(json_object_get(json_object_get(p, "status"),
                                     "containerStatuses"), 0),
      "state"), "terminated"), "finishedAt"));
  assert_non_null(start);
  assert_non_null(end);
  assert_int_equal(gq_time_parse(start, &a), 0);
  assert_int_equal(gq_time_parse(end, &b), 0);
  json_decref(p);
  return (double)(b - a) / 1000.0;
}

static void expect_hours(const json_t *u, double alloc, double used,
                         double idle, double tol)
{
  double a = json_real_value(json_object_get(u, "allocated_gpu_hours"));
  double b = json_real_value(json_object_get(u, "used_gpu_hours"));
  double c = json_real_value(json_object_get(u, "idle_gpu_hours"));

  if (fabs(a - alloc) > tol || fabs(b - used) > tol || fabs(c - idle) > tol)
    fail_msg("hours: got allocated %f used %f idle %f, want %f %f %f (+-%f)",
             a, b, c, alloc, used, idle, tol);
}

/* The report's GPU-hours once every pod has ended. team-a: "nb", 2 GPUs,
 * one cycle of busy 0.9 for 10m and idle 0.02 for 20m (and 0.9 for any
 * overrun past 30m). team-b: "steady" 1 GPU at 0.75 for 30m, "bad" 1 GPU
 * at the --gpu-utilization default 0.05 for 30m, idle (under 10 %). */
static void expect_report(void)
{
  json_t *rep = gq_test_sim_call(&sim, "GET", "/sim/v1/report", NULL, 200);
  const json_t *teams = json_object_get(rep, "teams");
  double nb = ran_s("nb"), st = ran_s("steady"), bad = ran_s("bad");
  double over = nb > 1800 ? nb - 1800 : 0, tol = 4 * 1.5 / 3600.0;
  double a_used = 2 * (0.9 * 600 + 0.02 * 1200 + 0.9 * over) / 3600;
  double b_used = (0.75 * st + 0.05 * bad) / 3600;

  expect_hours(json_object_get(teams, "team-a"), 2 * nb / 3600, a_used,
               2 * 1200 / 3600.0, tol);
  expect_hours(json_object_get(teams, "team-b"), (st + bad) / 3600, b_used,
               bad / 3600, tol);
  expect_hours(rep, (2 * nb + st + bad) / 3600, a_used + b_used,
               (2 * 1200 + bad) / 3600, tol);
  assert_float_equal(json_real_value(json_object_get(rep,
                                                     "idle_threshold_pct")),
                     10, 1e-9);
  assert_int_equal(json_integer_value(json_object_get(rep, "allocated_gpus")),
                   0);
  json_decref(rep);
}

static void expect_bad_annotation_event(void)
{
  json_t *list = gq_test_sim_call(
      &sim, "GET",
      "/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dbad",
      NULL, 200);
  const json_t *ev = json_array_get(json_object_get(list, "items"), 0);
  const char *msg = json_string_value(json_object_get(ev, "message"));

  assert_non_null(ev);
  assert_string_equal(json_string_value(json_object_get(ev, "reason")),
                      "FailedUtilization");
  assert_string_equal(json_string_value(json_object_get(ev, "type")),
                      "Warning");
  assert_non_null(msg);
  assert_non_null(strstr(msg, "sim.gpuq.dev/gpu-utilization"));
  assert_non_null(strstr(msg, "'lots'"));
  json_decref(list);
}

/* Prometheus' own parser on a scrape, when promtool (Debian: prometheus)
 * is installed. Its lint finds only what dcgm-exporter itself does: the
 * camelCase labels UUID, modelName and Hostname (exit 3); a text it cannot
 * parse exits 1. */
static void expect_promtool_parses(const char *text)
{
  char path[400];
  const char *argv[] = {"sh", "-c",
                        "command -v promtool >/dev/null || exit 77; "
                        "promtool check metrics <\"$0\"", path, NULL};
  struct gq_test_out o;
  int rc;

  snprintf(path, sizeof(path), "%s/metrics.txt", sim.dir);
  assert_int_equal(gq_test_write_file(path, text, strlen(text)), 0);
  rc = gq_test_run(sim.dir, argv, &o);
  if (rc != 0 && rc != 3 && rc != 77)
    fail_msg("promtool check metrics: exit %d: %s%s", rc, o.out, o.err);
  for (const char *l = o.err; rc == 3 && *l;) { /* one finding a line */
    const char *eol = strchr(l, '\n');
    const char *hit = strstr(l, "label names should be written in "
                                "'snake_case' not 'camelCase'");

    if (!hit || (eol && hit > eol))
      fail_msg("promtool check metrics: %s", l);
    l = eol ? eol + 1 : l + strlen(l);
  }
  gq_test_out_free(&o);
}

/* The first scrape, with nb in its busy phase: names, labels, indices,
 * values. */
static void expect_first_scrape(const char *m)
{
  char line[1200];

  expect_families(m);
  expect_promtool_parses(m);
  expect_pod_labels(m, 0, "nb");
  expect_pod_labels(m, 1, "nb");
  expect_pod_labels(m, 2, "steady");
  expect_pod_labels(m, 3, "bad");
  for (int g = 4; g < 8; g++)
    expect_pod_labels(m, g, NULL);
  assert_float_equal(value(m, "DCGM_FI_DEV_GPU_UTIL", NODE, 0), 90, 1e-9);
  assert_float_equal(value(m, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", NODE, 1), 0.9,
                     1e-9);
  assert_non_null(find(m, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", NODE, 1, line,
                       sizeof(line)));
  assert_non_null(strstr(line, "} 0.900000")); /* Go's %f */
  assert_float_equal(value(m, "DCGM_FI_DEV_GPU_UTIL", NODE, 2), 75, 1e-9);
  assert_float_equal(value(m, "DCGM_FI_DEV_GPU_UTIL", NODE, 3), 5, 1e-9);
  assert_float_equal(value(m, "DCGM_FI_DEV_GPU_UTIL", NODE, 4), 0, 1e-9);
  assert_float_equal(value(m, "DCGM_FI_DEV_FB_USED", NODE, 4), 0, 1e-9);
  assert_true(value(m, "DCGM_FI_DEV_FB_USED", NODE, 0) > 0);
  assert_true(value(m, "DCGM_FI_DEV_POWER_USAGE", NODE, 0) >
              value(m, "DCGM_FI_DEV_POWER_USAGE", NODE, 4));
  assert_true(value(m, "DCGM_FI_DEV_GPU_TEMP", NODE, 0) >
              value(m, "DCGM_FI_DEV_GPU_TEMP", NODE, 4));
  assert_float_equal(value(m, "DCGM_FI_DEV_XID_ERRORS", NODE, 3), 0, 1e-9);
}

/* An XID through the API: that GPU only, for 10 virtual minutes; and the
 * same UUIDs as on the scrape before (m1). */
static void expect_api_xid(const char *m1)
{
  char line[1200], uuid1[41], uuid2[41], *m2;

  json_decref(gq_test_sim_call(&sim, "POST", "/sim/v1/nodes/" NODE "/xid",
                               "{\"gpu\":3,\"xid\":79,\"for\":600}", 200));
  json_decref(gq_test_sim_call(&sim, "POST", "/sim/v1/nodes/" NODE "/xid",
                               "{\"gpu\":8,\"xid\":79}", 400));
  m2 = scrape();
  assert_float_equal(value(m2, "DCGM_FI_DEV_XID_ERRORS", NODE, 3), 79, 1e-9);
  assert_float_equal(value(m2, "DCGM_FI_DEV_XID_ERRORS", NODE, 2), 0, 1e-9);
  assert_non_null(find(m1, "DCGM_FI_DEV_GPU_UTIL", NODE, 5, line,
                       sizeof(line)));
  uuid_of(line, uuid1);
  assert_non_null(find(m2, "DCGM_FI_DEV_GPU_UTIL", NODE, 5, line,
                       sizeof(line)));
  uuid_of(line, uuid2);
  assert_string_equal(uuid1, uuid2);
  free(m2);
}

/* 15 minutes into nb (started at start): idle; the API's XID is over and
 * the pod on that GPU still runs. Then the timeline's XID: GPU 5 of
 * gpu-h100-00 from 1200 s for 1200 s. */
static void expect_later(int64_t start)
{
  json_t *pod;
  char *m;

  gq_test_sim_wait_until(&sim, start + 15 * 60 * 1000);
  m = scrape();
  assert_float_equal(value(m, "DCGM_FI_DEV_GPU_UTIL", NODE, 0), 2, 1e-9);
  assert_float_equal(value(m, "DCGM_FI_DEV_XID_ERRORS", NODE, 3), 0, 1e-9);
  free(m);
  pod = gq_test_sim_call(&sim, "GET", "/api/v1/namespaces/default/pods/bad",
                         NULL, 200);
  assert_string_equal(json_string_value(json_object_get(
                          json_object_get(pod, "status"), "phase")),
                      "Running");
  json_decref(pod);
  gq_test_sim_wait_until(&sim, sim_t0_ms + 1300 * 1000);
  m = scrape();
  assert_float_equal(value(m, "DCGM_FI_DEV_XID_ERRORS", "gpu-h100-00", 5), 48,
                     1e-9);
  assert_float_equal(value(m, "DCGM_FI_DEV_XID_ERRORS", "gpu-h100-00", 4), 0,
                     1e-9);
  free(m);
}

static void test_dcgm(void **state)
{
  int64_t start;
  char *m;

  (void)state;
  /* one at a time, so the lowest free indices are known: nb 0-1,
   * steady 2, bad 3 */
  create_pod("nb", "team-a", 2, 1800,
             "busy 0.9 for 10m, idle 0.02 for 20m");
  assert_true(wait_phase("nb", "Running"));
  start = gq_test_sim_now_ms(&sim);
  create_pod("steady", "team-b", 1, 1800, "0.75");
  assert_true(wait_phase("steady", "Running"));
  create_pod("bad", "team-b", 1, 1800, "lots");
  assert_true(wait_phase("bad", "Running"));
  m = scrape();
  if (gq_test_sim_now_ms(&sim) - start > 9 * 60 * 1000)
    fail_msg("too slow: nb left its busy phase before the scrape");
  expect_first_scrape(m);
  expect_bad_annotation_event();
  expect_api_xid(m);
  free(m);
  expect_later(start);
  assert_true(wait_phase("nb", "Succeeded"));
  assert_true(wait_phase("steady", "Succeeded"));
  assert_true(wait_phase("bad", "Succeeded"));
  m = scrape(); /* every GPU free again */
  expect_pod_labels(m, 0, NULL);
  assert_float_equal(value(m, "DCGM_FI_DEV_GPU_UTIL", NODE, 0), 0, 1e-9);
  free(m);
  expect_report();
  gq_test_sim_expect_clean(&sim, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dcgm),
  };

  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
