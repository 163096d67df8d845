/* The capacity builder (decide/capacity.h) that the controller and
 * `kubectl gpuq nodes`/`why` share: which pods hold which node's GPUs
 * (bound, gpuq's pinned and not bound, terminating, finished, MIG), pods
 * assumed and forgotten, and a snapshot rebuilt over new nodes that counts
 * every record again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "api/node.h"
#include "api/pod.h"
#include "decide/capacity.h"
#include "tests/support/fixture.h"

/* A Ready node with 8 nvidia.com/gpu and 4 nvidia.com/mig-1g.10gb. */
static void node(struct gq_node *n, const char *name)
{
  char buf[1024];

  snprintf(buf, sizeof(buf),
           "{'metadata':{'name':'%s'},'status':{'allocatable':{'cpu':'64',"
           "'memory':'512Gi','pods':'110','nvidia.com/gpu':'8',"
           "'nvidia.com/mig-1g.10gb':'4'},'conditions':[{'type':'Ready',"
           "'status':'True'}]}}", name);
  gq_test_node_sq(n, buf);
}

/* Records pod (single-quoted JSON members of metadata, spec and status)
 * requesting 'res' (members of requests) under key ns/name. */
static const struct gq_cap_pod *pod(struct gq_capacity *cap, const char *name,
                                    const char *meta, const char *spec,
                                    const char *status, const char *res)
{
  char buf[2048], key[64];
  struct gq_pod p;
  const struct gq_cap_pod *r;
  json_t *o;
  char err[256];

  snprintf(buf, sizeof(buf),
           "{'metadata':{'name':'%s','namespace':'ns'%s},'spec':{%s"
           "'containers':[{'name':'c','image':'x','resources':{'requests':"
           "{%s},'limits':{%s}}}]},'status':{%s}}",
           name, meta, spec, res, res, status);
  o = gq_test_json_sq(buf);
  if (gq_pod_decode(o, &p, err, sizeof(err)) != 0)
    fail_msg("pod %s: %s", name, err);
  json_decref(o);
  snprintf(key, sizeof(key), "ns/%s", name);
  r = gq_capacity_pod(cap, key, &p);
  gq_pod_release(&p);
  return r;
}

static int64_t free_on(const struct gq_capacity *cap, const char *node,
                       const char *res)
{
  long i = gq_snapshot_find(&cap->snap, node);

  assert_true(i >= 0);
  return gq_snapshot_available(&cap->snap, (size_t)i, res);
}

struct fixture {
  struct gq_node nodes[2];
  const struct gq_node *ptr[2];
  struct gq_capacity cap;
};

static int setup(void **state)
{
  static struct fixture f;

  memset(&f, 0, sizeof(f));
  node(&f.nodes[0], "n0");
  node(&f.nodes[1], "n1");
  f.ptr[0] = &f.nodes[0];
  f.ptr[1] = &f.nodes[1];
  gq_capacity_init(&f.cap, NULL);
  gq_capacity_set_nodes(&f.cap, f.ptr, 2);
  *state = &f;
  return 0;
}

static int teardown(void **state)
{
  struct fixture *f = *state;

  gq_capacity_release(&f->cap);
  gq_node_release(&f->nodes[0]);
  gq_node_release(&f->nodes[1]);
  return 0;
}

#define GPU(n) "'nvidia.com/gpu':'" #n "'"
#define PINNED ",'labels':{'gpuq.dev/job-uid':'u1'},'annotations':" \
               "{'gpuq.dev/node':'n1'}"

/* Which pods hold resources, and where. */
static void test_holders(void **state)
{
  struct fixture *f = *state;
  struct gq_capacity *cap = &f->cap;
  const struct gq_cap_pod *r;

  assert_non_null(pod(cap, "bound", "", "'nodeName':'n0',",
                      "'phase':'Running'", GPU(2)));
  /* gpuq's pinned pod, not bound yet: its node's GPUs are taken */
  r = pod(cap, "pinned", PINNED, "", "'phase':'Pending'", GPU(4));
  assert_non_null(r);
  assert_string_equal(r->node, "n1");
  assert_string_equal(r->job_uid, "u1");
  /* the same annotation on someone else's pod means nothing */
  assert_null(pod(cap, "other", ",'annotations':{'gpuq.dev/node':'n1'}", "",
                  "'phase':'Pending'", GPU(1)));
  /* terminating: still holds, and is leaving */
  r = pod(cap, "term", ",'deletionTimestamp':'2026-01-01T00:00:00Z',"
          "'deletionGracePeriodSeconds':30", "'nodeName':'n0',",
          "'phase':'Running'", GPU(1));
  assert_non_null(r);
  assert_true(r->leaving);
  assert_int_equal(r->grace_s, 30);
  /* finished: holds nothing */
  assert_null(pod(cap, "done", "", "'nodeName':'n0',", "'phase':'Succeeded'",
                  GPU(3)));
  assert_non_null(pod(cap, "mig", "", "'nodeName':'n1',", "'phase':'Running'",
                      "'nvidia.com/mig-1g.10gb':'1'"));
  assert_int_equal(free_on(cap, "n0", "nvidia.com/gpu"), 5);
  assert_int_equal(free_on(cap, "n1", "nvidia.com/gpu"), 4);
  assert_int_equal(free_on(cap, "n1", "nvidia.com/mig-1g.10gb"), 3);
  /* a pod that ends gives its GPUs back; one that is gone too */
  assert_null(pod(cap, "bound", "", "'nodeName':'n0',", "'phase':'Failed'",
                  GPU(2)));
  assert_null(gq_capacity_pod(cap, "ns/term", NULL));
  assert_int_equal(free_on(cap, "n0", "nvidia.com/gpu"), 8);
}

/* Assumed pods count until forgotten; a rebuild over new nodes counts
 * every record again, and a pod on a node not in the snapshot counts
 * nowhere until its node appears. */
static void test_assume_and_rebuild(void **state)
{
  struct fixture *f = *state;
  struct gq_capacity *cap = &f->cap;
  struct gq_podsched req = {0};
  struct gq_res ext = {"nvidia.com/gpu", 3};
  const struct gq_cap_pod *r;

  req.node_name = "";
  req.extended = &ext;
  req.n_extended = 1;
  gq_capacity_assume(cap, "ns/a", "n0", &req);
  gq_capacity_assume(cap, "ns/a", "n0", &req); /* replaces, not adds */
  assert_true(gq_capacity_is_assumed(cap, "ns/a"));
  assert_int_equal(free_on(cap, "n0", "nvidia.com/gpu"), 5);
  r = pod(cap, "far", "", "'nodeName':'n9',", "'phase':'Running'", GPU(1));
  assert_non_null(r);
  assert_false(r->committed);
  gq_capacity_invalidate(cap);
  assert_false(cap->valid);
  gq_capacity_set_nodes(cap, f->ptr, 2);
  assert_int_equal(free_on(cap, "n0", "nvidia.com/gpu"), 5);
  assert_int_equal(gq_capacity_unassume(cap, "ns/a"), 1);
  assert_int_equal(gq_capacity_unassume(cap, "ns/a"), 0);
  assert_int_equal(free_on(cap, "n0", "nvidia.com/gpu"), 8);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_holders, setup, teardown),
      cmocka_unit_test_setup_teardown(test_assume_and_rebuild, setup,
                                      teardown),
  };

  return cmocka_run_group_tests(tests, NULL, NULL);
}
