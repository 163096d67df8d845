/* sim/engine.h - the simulated cluster behind gpuq-sim's API: scheduler,
 * kubelets, node events, the invariant checker and trace replay.
 *
 * The engine observes the store (gq_sim_engine_observe() is registered with
 * gq_sim_store_observe(), so it sees every change) and acts like the
 * components of a real cluster:
 *   scheduler  binds pending pods (kube-scheduler's filters, decide/match.h)
 *   kubelet    admits bound pods (OutOf<resource> when they do not fit),
 *              runs them for the time their annotations give, handles
 *              SIGTERM with the checkpoint contract (DESIGN §5)
 *   nodeops    cordon, drain, device-plugin loss, NotReady, taints, deletion
 *   checker    DESIGN §4's invariants and placement misses
 *   gpus       GPU indices and UUIDs of running pods, their utilization
 *              timelines, XID errors, and a dcgm-exporter (issue 22)
 *   replay     GpuJobs from a trace at their submit times, the report
 * Work is level-based: observed pods are marked dirty and reconciled from
 * the stored state on the next loop turn, a bounded number per turn.
 * Timed work (a pod finishing, a checkpoint written, a job submitted) sits
 * in one heap served by one uv timer, in virtual time (base/clock.h;
 * timers.c).
 *
 * Loop thread only. */
#ifndef GQ_SIM_ENGINE_H
#define GQ_SIM_ENGINE_H
#include <jansson.h>
#include <stdint.h>
#include <uthash.h>
#include <uv.h>

#include "api/gpujob.h" /* GQ_LBL_*: the labels gpuq puts on its pods */
#include "api/node.h"
#include "base/buf.h"
#include "decide/match.h"
#include "sim/gpuutil.h"
#include "sim/sim.h"

/* Pod annotations the simulated kubelet reads (docs/sim.md). */
#define GQ_ANN_RUN "sim.gpuq.dev/run-seconds"
#define GQ_ANN_CKPT "sim.gpuq.dev/checkpoint-seconds"
#define GQ_ANN_INTERVAL "sim.gpuq.dev/checkpoint-interval-seconds"
#define GQ_ANN_FAIL_AFTER "sim.gpuq.dev/fail-after-seconds"
#define GQ_ANN_EXIT "sim.gpuq.dev/exit-code"
/* on a pod or a Node: seconds from the kubelet's admission of a bound pod
 * to its start (a slow image pull; on a node: its kubelet is slow) */
#define GQ_ANN_START_DELAY "sim.gpuq.dev/start-delay-seconds"


enum gq_tev_type {
  GQ_TEV_POD_DONE,   /* run time reached: Succeeded */
  GQ_TEV_POD_FAIL,   /* fail-after reached: Failed */
  GQ_TEV_POD_EXIT,   /* after SIGTERM: checkpoint written, or killed */
  GQ_TEV_POD_START,  /* a delayed start is due (GQ_ANN_START_DELAY) */
  GQ_TEV_DRAIN,      /* retry evictions of a draining node */
  GQ_TEV_SUBMIT,     /* replay: create the next trace jobs */
  GQ_TEV_TIMELINE,   /* a scripted node event */
  GQ_TEV_SAMPLE,     /* replay: time-series sample */
  GQ_TEV_RESTORE,    /* end of a timed node event (device plugin back) */
  GQ_TEV_DEADLINE,   /* a scenario's timeout */
  GQ_TEV_EXPECT      /* a scenario's expectation with 'at' */
};

struct gq_tev {
  int64_t due_vms;   /* virtual ms */
  uint64_t seq;      /* FIFO among equal times */
  enum gq_tev_type type;
  char *key;         /* pod "ns/name", node name, ... */
  char *uid;         /* pod uid the event belongs to, or NULL */
  int64_t arg;
};

/* What the simulated kubelet knows of a pod it runs. */
struct gq_sim_pod {
  char *uid;
  char *key;           /* "ns/name" */
  char *node;
  char *job_uid;       /* gpuq.dev/job-uid, or NULL for other pods */
  char *job, *ns, *team;
  int64_t attempt;
  int64_t gpus;
  int running;         /* started and not yet exited */
  int terminating;     /* SIGTERM sent */
  int64_t start_vms;   /* virtual ms when it started */
  double base_s;       /* progress it resumed from (seconds of work) */
  int64_t run_s, ckpt_s, interval_s, fail_s, exit_code; /* -1 = absent */
  double exit_progress_s; /* progress when it stopped */
  /* GPUs (issue 22): the utilization timeline (GQ_SIM_ANN_GPU_UTIL, else
   * the engine's default), the whole GPUs it holds (nvidia.com/gpu; MIG
   * slices are not GPUs here), their indices on the node while it runs,
   * and the virtual time up to which the report has counted its usage. */
  struct gq_sim_gpuutil util;
  int64_t whole_gpus;
  int *gpu_idx;        /* owned; n_idx entries, ascending */
  size_t n_idx;
  char *container;     /* its first container's name (dcgm labels) */
  int64_t acct_vms;
  UT_hash_handle hh;   /* by uid */
};

/* One GPU of a node, as DCGM sees it: the pod using it (NULL when free)
 * and the last XID error (xid_until_vms: when it clears; INT64_MAX never,
 * 0 none). */
struct gq_sim_gpu {
  struct gq_sim_pod *pod; /* borrowed from the engine's pods */
  int64_t xid;
  int64_t xid_until_vms;
};

/* Per node: requests of the pods bound to it that still hold resources,
 * and the decoded Node (refreshed when its resourceVersion changes). */
struct gq_sim_node {
  char *name;
  struct gq_node node;      /* decoded; node.json NULL if undecodable */
  struct gq_node_usage used;
  json_t *saved_alloc;      /* allocatable before device-plugin loss */
  int draining;
  struct gq_sim_gpu *gpus;  /* owned; indices 0..n_gpus-1 (grown to the
                               nvidia.com/gpu capacity on use) */
  size_t n_gpus;
  UT_hash_handle hh;
};

struct gq_sim_report;
struct gq_sim_replay;

/* The timed-work heap (timers.c): a binary min-heap on (due_vms, seq),
 * served by one uv timer armed for its earliest entry. */
struct gq_sim_timers {
  struct gq_tev *heap;  /* owned, with each entry's key and uid */
  size_t n, cap;
  uint64_t seq;         /* next sequence number */
  uv_timer_t timer;
};

struct gq_sim_engine {
  struct gq_sim *s;
  struct gq_sim_timers tev;
  uv_timer_t kick;      /* runs the dirty set soon */
  json_t *dirty;        /* set of pod keys to reconcile */
  json_t *unsched;      /* pods left Unschedulable: retried on changes */
  json_t *seen_miss;    /* pod uids already counted as placement misses */
  json_t *team_used;    /* team -> GPUs its pods hold (checker) */
  json_t *attempts;     /* job uid -> {attempt: live pods} (checker) */
  json_t *starting;     /* pod uid -> virtual ms its delayed start is due */
  struct gq_sim_pod *pods;
  struct gq_sim_node *nodes;
  struct gq_sim_report *report;
  struct gq_sim_replay *replay;
  double default_util;  /* --gpu-utilization: pods without the annotation
                           (default 0.9) */
  double idle_pct;      /* --idle-threshold: utilization under this many
                           percent is idle (default 10) */
  int closing;
};

/* Creates the engine on s (s->engine). Returns 0. */
int gq_sim_engine_start(struct gq_sim *s);
/* Stops timers (run the loop to close them), then frees. */
void gq_sim_engine_stop(struct gq_sim *s);
void gq_sim_engine_release(struct gq_sim *s);

/* The store observer (gq_sim_store_observe()) that feeds the engine every
 * change: pods are marked dirty, nodes retry unschedulable pods, the
 * checker sees pods and GpuJobs. arg is unused. */
void gq_sim_engine_observe(struct gq_sim *s, const struct gq_sim_event *ev,
                           void *arg);

/* Runs one due timed entry t (borrowed; timers.c frees it afterwards). */
void gq_sim_engine_run_tev(struct gq_sim_engine *e, const struct gq_tev *t);

/* Work left for the loop: 1 while pods are marked for reconciling (the
 * dirty set is not empty), else 0. */
int gq_sim_engine_busy(const struct gq_sim_engine *e);

/* --- timers.c --- */
/* Sets up the heap's uv timer on e->s->loop (e->tev zeroed before). */
void gq_sim_timers_init(struct gq_sim_engine *e);
/* Closes the uv timer (run the loop to finish); nothing runs afterwards. */
void gq_sim_timers_close(struct gq_sim_engine *e);
/* Frees the entries left and the heap (after the close). */
void gq_sim_timers_release(struct gq_sim_engine *e);
/* Queues timed work at virtual time due_vms (Unix ms; a time already past
 * runs on the next loop turn). key and uid (either may be NULL) are
 * copied. Equal times run in the order they were added. */
void gq_sim_tev_add(struct gq_sim_engine *e, int64_t due_vms,
                    enum gq_tev_type type, const char *key, const char *uid,
                    int64_t arg);
/* The virtual time (Unix ms) of the earliest queued entry, or INT64_MAX
 * when the heap is empty. */
int64_t gq_sim_tev_next_due(const struct gq_sim_engine *e);

/* The engine's record of a node (created empty on first use). */
struct gq_sim_node *gq_sim_node_rec(struct gq_sim_engine *e, const char *name);
/* The record of a stored node with its decoded Node refreshed (when the
 * stored object changed), or NULL if there is no such node or it does not
 * decode. Borrowed; valid until the node is removed. */
struct gq_sim_node *gq_sim_node_get(struct gq_sim_engine *e, const char *name);

/* --- gpus.c: the GPUs of the simulated nodes (issue 22) --- */
/* A 64-bit hash of s (FNV-1a from a basis changed by salt, then
 * SplitMix64's finalizer, so similar strings differ in every bit): stable
 * across runs and machines, for deterministic choices. */
uint64_t gq_sim_hash(const char *s, uint64_t salt);
/* Bytes of a GPU UUID with its NUL: "GPU-" + 8-4-4-4-12 hex digits. */
#define GQ_SIM_GPU_UUID_LEN 41
/* Writes the UUID of GPU index of node (deterministic: the same node name
 * and index always give the same UUID) into buf (at least
 * GQ_SIM_GPU_UUID_LEN bytes). */
void gq_sim_gpu_uuid(const char *node, int64_t index, char *buf);
/* Sets r's utilization from its pod's GQ_SIM_ANN_GPU_UTIL annotation, or
 * the engine's default when absent. A value that does not parse never
 * stops the pod: it gets the default, and a Warning Event on the pod
 * (reason FailedUtilization) and a log line name the annotation, the value
 * and what is wrong. pod is borrowed. */
void gq_sim_gpus_pod_util(struct gq_sim_engine *e, const json_t *pod,
                          struct gq_sim_pod *r);
/* Gives a starting pod r the lowest free indices of its node, one per
 * whole GPU it holds (r->whole_gpus), as the device plugin does; fewer
 * (logged) if the node has fewer free. */
void gq_sim_gpus_assign(struct gq_sim_engine *e, struct gq_sim_pod *r);
/* Frees r's indices (it stopped running, or is gone). Idempotent. */
void gq_sim_gpus_free(struct gq_sim_engine *e, struct gq_sim_pod *r);
/* The nvidia.com/gpu capacity of a node record (0 if undecoded). */
int64_t gq_sim_gpus_capacity(const struct gq_sim_node *n);
/* Applies the node event xid: arg {gpu: INDEX, xid: CODE, for: SECONDS}
 * (for absent: until the next xid on that GPU; xid 0 clears). Returns 0,
 * GQ_ENOTFOUND for an unknown node, GQ_EINVAL with the reason in msg. */
int gq_sim_gpus_xid(struct gq_sim *s, const char *node, const json_t *arg,
                    char *msg, size_t msglen);

/* --- dcgm.c: a dcgm-exporter for every node's GPUs (issue 22) --- */
/* Starts serving GET /metrics on addr ("127.0.0.1:PORT"; loopback only,
 * port 0 picks one) on s->loop, in s->dcgm. Returns 0, or GQ_EINVAL (not
 * a loopback HOST:PORT) / GQ_EIO (cannot bind) with the reason in err. */
int gq_sim_dcgm_start(struct gq_sim *s, const char *addr, char *err,
                      size_t errlen);
/* The bound port, or 0 when not serving. */
int gq_sim_dcgm_port(const struct gq_sim *s);
/* Stops serving (run the loop to finish). Idempotent. */
void gq_sim_dcgm_stop(struct gq_sim *s);
/* Appends the exposition (Prometheus text format 0.0.4, dcgm-exporter's
 * names and labels) of every node's GPUs at virtual time now_vms to out.
 * Returns 0, or GQ_ETOOBIG past out's cap (out is then released). */
int gq_sim_dcgm_render(struct gq_sim *s, int64_t now_vms, struct gq_buf *out);

/* --- nodeops.c --- */
/* Applies a node event: "cordon", "uncordon", "drain", "device-plugin-loss",
 * "device-plugin-restore", "notready", "ready", "delete", "taint",
 * "untaint" (taint: {key, value, effect} in arg), "xid" (arg {gpu, xid,
 * for}: gq_sim_gpus_xid()). Returns 0, GQ_ENOTFOUND
 * for an unknown node, GQ_EINVAL for an unknown action (msg says why). */
int gq_sim_node_event(struct gq_sim *s, const char *node, const char *action,
                      const json_t *arg, char *msg, size_t msglen);
/* Retries a draining node's evictions (GQ_TEV_DRAIN). */
void gq_sim_drain_retry(struct gq_sim *s, const char *node);
/* Evicts ns/name as the Eviction API does (budget checked when
 * check_budget), with DisruptionTarget reason 'reason'. Returns 0, 429 when
 * a budget refuses (msg says which), 404, or 500 for several budgets. */
int gq_sim_evict(struct gq_sim *s, const char *ns, const char *name,
                 int64_t grace_s, int check_budget, const char *reason,
                 char *msg, size_t msglen);

/* --- checker.c --- */
/* Updates the checker's indexes for a pod that starts (sign 1) or stops
 * (-1) holding resources. */
void gq_sim_check_account(struct gq_sim *s, const json_t *pod, int sign);
void gq_sim_check_pod(struct gq_sim *s, const json_t *old, const json_t *pod,
                      int deleted);
void gq_sim_check_job(struct gq_sim *s, const json_t *old, const json_t *job,
                      int deleted);
void gq_sim_placement_miss(struct gq_sim *s, const json_t *pod,
                           const char *why);

#endif
