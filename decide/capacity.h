/* decide/capacity.h - what holds resources on which node, and the
 * capacity snapshot built from it (DESIGN §3).
 *
 * One builder for everyone who asks "what is free where": the controller
 * feeds it from its informers (every pod event, every pod it creates), and
 * `kubectl gpuq nodes` / `why` (cli/cluster.c) feed it from one list of
 * nodes and pods, so the two can never disagree about a node.
 *
 * A pod holds its node's resources while it has not finished
 * (gq_pod_holds_resources(): a terminating pod still holds them) and is
 *   - bound (spec.nodeName), or
 *   - one of gpuq's own pods (label gpuq.dev/job-uid) pinned to a node by
 *     the annotation gpuq.dev/node but not bound yet: gpuq decided to put
 *     it there, so its GPUs are taken from that moment.
 * A pod gpuq is creating and has not seen yet is "assumed" on its node
 * (client-go's scheduler cache: assume, then confirm or forget) until the
 * pod shows up or its create fails.
 *
 * Every record keeps its own copy of the requests (names owned), so the
 * pod objects it was made from may be released at once.
 *
 * No I/O. One struct gq_capacity belongs to one thread.
 */
#ifndef GQ_CONTROLLER_CAPACITY_H
#define GQ_CONTROLLER_CAPACITY_H
#include <stddef.h>
#include <stdint.h>
#include <uthash.h>

#include "decide/node.h"
#include "decide/pod.h"
#include "decide/snapshot.h"

/* A pod that holds resources on a node (keyed by "ns/name"). */
struct gq_cap_pod {
  char *key;      /* "ns/name" (owned) */
  char *node;     /* the node it holds resources on (owned) */
  char *job_uid;  /* gpuq's pods: the GpuJob's uid (owned); NULL otherwise */
  struct gq_podsched req; /* owned copy of its requests */
  int64_t deletion_ms;    /* metadata.deletionTimestamp (virtual ms), 0 */
  int64_t grace_s;        /* the grace it was deleted with, else its own */
  int leaving;    /* being deleted or evicted (deletionTimestamp, or a
                     DisruptionTarget condition) */
  int committed;  /* counted in the snapshot (its node is in it) */
  int forced;     /* force-deleted by the controller (disrupt.c) */
  UT_hash_handle hh;
};

/* A pod gpuq is creating and has not seen yet. */
struct gq_cap_assumed {
  char *key;  /* "ns/name" (owned) */
  char *node; /* owned */
  struct gq_podsched req; /* owned copy */
  UT_hash_handle hh;
};

struct gq_capacity {
  struct gq_snapshot snap;     /* valid only while 'valid' */
  const struct gq_node **nodes; /* borrowed node pointers (owned array) */
  int valid;                   /* snap matches the nodes given last */
  struct gq_cap_pod *held;     /* by key */
  struct gq_cap_assumed *assumed; /* by key */
  const char *topology_key;    /* borrowed */
};

/* Empties cap; topology_key (borrowed, may be NULL) goes to the snapshot
 * (gq_snapshot_init). The snapshot is invalid until gq_capacity_set_nodes. */
void gq_capacity_init(struct gq_capacity *cap, const char *topology_key);

/* Frees every record and the snapshot; cap is then as after init. */
void gq_capacity_release(struct gq_capacity *cap);

/* Rebuilds the snapshot over nodes[0..n) (borrowed: they must outlive the
 * snapshot, i.e. until the next call or gq_capacity_invalidate) and
 * commits every held pod and assumption on it again. */
void gq_capacity_set_nodes(struct gq_capacity *cap,
                           const struct gq_node *const *nodes, size_t n);

/* The nodes changed: the snapshot must be rebuilt before it is used. The
 * records stay. */
void gq_capacity_invalidate(struct gq_capacity *cap);

/* Records pod key ("ns/name") as it is now; pod NULL means it is gone.
 * What it held before is uncommitted, then what it holds now (see the
 * rules above) is committed. Returns the record (borrowed, valid until the
 * next change of that key), or NULL when the pod holds nothing. */
const struct gq_cap_pod *gq_capacity_pod(struct gq_capacity *cap,
                                         const char *key,
                                         const struct gq_pod *pod);

/* Assumes pod key on node with requests req (copied) until it is seen or
 * forgotten; an earlier assumption of the same key is replaced. */
void gq_capacity_assume(struct gq_capacity *cap, const char *key,
                        const char *node, const struct gq_podsched *req);

/* Drops the assumption of pod key (it was seen, or its create failed).
 * Returns 1 if there was one, else 0. */
int gq_capacity_unassume(struct gq_capacity *cap, const char *key);

/* 1 if pod key is assumed, else 0. */
int gq_capacity_is_assumed(const struct gq_capacity *cap, const char *key);

/* Copies the requests of r into out with the extended resource names
 * owned (node_name ""; the rest of out empty). Free with
 * gq_capacity_request_free(). */
void gq_capacity_request_copy(const struct gq_podsched *r,
                              struct gq_podsched *out);

/* Frees what gq_capacity_request_copy() put in req; req is then zeroed. */
void gq_capacity_request_free(struct gq_podsched *req);

#endif
