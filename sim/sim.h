/* sim/sim.h - gpuq-sim's API server: shared internal types.
 *
 * gpuq-sim serves the Kubernetes API faithfully enough for the real
 * kubectl and for gpuq's controller (DESIGN §7, shared/docs/
 * kubectl-api-contract.md). Every file of sim/:
 *
 * The API server (this header):
 *   main.c       the gpuq-sim command: flags, TLS, the kubeconfig, signals
 *   server.c     HTTP routing, auth, fault injection and the other /sim/v1
 *                endpoints, start-up and shutdown (server.h: a routed
 *                request, shared with verbs.c and evict.c)
 *   reply.c      JSON and Status replies
 *   dump.c       their compact JSON text, written without jansson's
 *                per-object loop check (dump.h)
 *   fields.c     field sets and managedFields for server-side apply
 *                (fields.h)
 *   verbs.c      get, list, watch, create, update, patch, delete
 *   evict.c      pods/eviction and pods/binding, PodDisruptionBudget status
 *   auth.c       who a request is: --token, --token-auth-file, the sim's
 *                own users; SelfSubjectReview
 *   admission.c  admission webhooks (Mutating/ValidatingWebhookConfiguration)
 *                called on the loop before storage
 *   jobs.c       batch/v1 Jobs: defaults, template rules, the Job controller
 *   kinds.c      the resource registry: built-in kinds and CRD-defined ones
 *   schema.c     CRD schemas: pruning, defaulting, validation (schema.h)
 *   store.c      objects, the global resourceVersion, the event window,
 *                graceful deletion, finalizers, owner cascading, and the
 *                observers told of every change (watches, budgets, engine)
 *   watch.c      watch streams (resume, bookmarks, 410 Gone, filters)
 *   events.c     events.k8s.io/v1 as a view of core/v1 Events
 *   table.c      server-side printing (meta.k8s.io/v1 Table; the built-in
 *                kinds' columns in table_builtin.h)
 *   discovery.c  /version, /api, /apis (aggregated and legacy), /openapi/v3
 *   defaults.c   the built-in kinds' defaults, on create and update
 *   record.c     --record: every JSON answer, one line each, to a file
 *   protobuf.c   the protobuf bodies kubectl sends (protobuf.h)
 *   clock.c      /sim/v1/clock: reading the virtual clock, waiting until a
 *                virtual time is settled
 * The simulated cluster (engine.h):
 *   kubelet.c    the engine: scheduler and kubelets, timed work run
 *   gpus.c       GPU indices, UUIDs, per-pod utilization, XID errors
 *   gpuutil.c    the utilization annotation and its integral (gpuutil.h)
 *   usage.c      allocated / used / idle GPU-seconds per team (usage.h)
 *   dcgm.c       a dcgm-exporter /metrics for every node's GPUs
 *   timers.c     the timed-work heap on one uv timer, in virtual time
 *   nodeops.c    node events: cordon, drain, device-plugin loss, NotReady
 *   checker.c    DESIGN §4's invariants and placement misses
 *   cluster.c    cluster files: the nodes to start with (cluster.h)
 *   report.c     measurements and report.json (report.h)
 *   replay.c     trace replay (replay.h; replay_int.h shared with
 *                scenario.c)
 *   scenario.c   scenarios: timed jobs, node events, hooks, expectations
 *
 * Stored objects are immutable json_t values: a change stores a new value
 * and the old one lives on only in the event window and in watch snapshots
 * that still reference it. That makes events and list snapshots cheap
 * (a reference, not a copy) and safe.
 *
 * Loop thread only.
 */
#ifndef GQ_SIM_SIM_H
#define GQ_SIM_SIM_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <uthash.h>
#include <uv.h>

#include "api/httpd.h"
#include "api/selector.h"

struct gq_sim;
struct gq_sim_kind;

/* A printer column of a CRD (additionalPrinterColumns). */
struct gq_sim_col {
  char *name, *type, *format, *description, *jsonpath;
  int priority;
};

/* Built-in table: column definitions (new JSON array) and one row's cells
 * (new JSON array) of obj at virtual time now_ms. */
typedef json_t *(*gq_sim_coldefs_fn)(void);
typedef json_t *(*gq_sim_cells_fn)(const json_t *obj, int64_t now_ms);

struct gq_sim_obj {
  char *key;    /* "ns/name" or "name" */
  json_t *obj;  /* immutable; one reference owned */
  UT_hash_handle hh;
};

/* How many stored objects name a uid among their ownerReferences (the
 * garbage collector's dependents index: a removal cascades only when
 * something depends on the removed object). */
struct gq_sim_owner {
  char *uid;
  size_t dependents;
  UT_hash_handle hh;
};

struct gq_sim_kind {
  char *group;        /* "" for core */
  char *version;
  char *plural, *singular, *kind, *list_kind;
  int namespaced;
  char **short_names;
  size_t n_short;
  char **categories;
  size_t n_categories;
  int has_status;     /* status subresource */
  int has_scale;
  int is_crd;
  int dropped;        /* its CRD was deleted: not served */
  int unsorted;       /* objs needs sorting before the next list */
  const char *extra_sub; /* "eviction" + "binding" for pods, else NULL */
  json_t *crd;        /* CRD object (owned) for custom resources */
  const json_t *schema; /* its openAPIV3Schema (borrowed from crd) */
  /* a built-in kind's generated OpenAPI definition (borrowed from
   * gq_sim.openapi; Swagger 2.0 form), or NULL (discovery.c) */
  const json_t *builtin_schema;
  struct gq_sim_col *cols;
  size_t n_cols;
  gq_sim_coldefs_fn coldefs;
  gq_sim_cells_fn cells;
  struct gq_sim_obj *objs; /* uthash by key */
  /* A view of another kind's objects (events.k8s.io over core events):
   * requests are served from view_of, converted at the edges. */
  struct gq_sim_kind *view_of;
  json_t *(*present)(const json_t *stored); /* stored -> view, new ref */
  json_t *(*absorb)(const json_t *view);    /* view -> stored, new ref */
  /* create-time defaults (defaults.c), or NULL; obj changed in place */
  void (*defaults)(struct gq_sim *s, json_t *obj);
  struct gq_sim_kind *next;
};

enum gq_sim_ev_type { GQ_EV_ADDED, GQ_EV_MODIFIED, GQ_EV_DELETED };

/* One change in the event window. */
struct gq_sim_event {
  uint64_t rv;
  enum gq_sim_ev_type type;
  struct gq_sim_kind *kind;
  json_t *obj;  /* state after the change (last state for DELETED) */
  json_t *old;  /* state before (NULL for ADDED) */
};

struct gq_sim_watch;

/* A store observer: called after every change, in the order observers
 * were registered (gq_sim_store_observe()), with the change. ev and the
 * objects it names are borrowed for the call (they hold their own
 * references meanwhile). The observer may store further changes; those
 * are observed in turn, nested inside this call. */
typedef void (*gq_sim_observer_fn)(struct gq_sim *s,
                                   const struct gq_sim_event *ev, void *arg);

struct gq_sim_observer {
  gq_sim_observer_fn fn;
  void *arg;
};

#define GQ_SIM_MAX_OBSERVERS 8

/* A pending graceful deletion (pods): due at real time due_ms. */
struct gq_sim_pending {
  uint64_t due_ms;
  struct gq_sim_kind *kind;
  char *key;
  char *uid;
};

/* Fault injection (/sim/v1/faults): answer the next 'count' requests that
 * match verb and resource with 'status', or delay them by delay_ms. */
struct gq_sim_fault {
  char verb[32];      /* "get", "list", "watch", "create", "update",
                         "patch", "delete", or "*" */
  char resource[64];  /* plural, or "*" */
  int status;         /* 0 = no error (delay only) */
  uint64_t delay_ms;
  int count;          /* remaining matches; -1 = forever */
};

/* A user a bearer token authenticates (kube-apiserver's
 * --token-auth-file), or one of the sim's own components. */
struct gq_sim_user {
  char *token;             /* NULL for the built-in users */
  char *name, *uid;
  char **groups;           /* includes system:authenticated */
  size_t n_groups;
  struct gq_sim_user *next;
};

struct gq_sim_opts {
  const char *host;
  int port;
  const char *token;       /* required bearer token, or NULL */
  const char *tls_cert;    /* PEM text */
  const char *tls_key;
  const char *crd_dir;
  size_t watch_window;     /* events kept for resumption */
  uint64_t bookmark_ms;    /* real ms between watch bookmarks (0 = 10 s) */
  const char *token_auth_file; /* --token-auth-file path, or NULL */
  /* the generated OpenAPI definitions of the built-in kinds
   * (sim/openapi_gen.mjs), or NULL: OpenAPI for the CRDs only */
  const char *openapi_file;
};

struct gq_sim_engine;
struct gq_sim_clock_wait;
struct gq_hclient;

struct gq_sim {
  uv_loop_t *loop;
  struct gq_sim_engine *engine; /* simulated kubelets etc. (engine.h) */
  int exit_code;                /* set by a finished replay */
  void (*finish_cb)(struct gq_sim *s); /* a replay ended */
  struct gq_httpd *httpd;
  struct gq_httpd *dcgm;        /* --dcgm-listen, or NULL (dcgm.c) */
  struct gq_sim_opts opts;
  struct gq_sim_kind *kinds;
  struct gq_sim_owner *owners; /* uthash by uid (store.c) */
  uint64_t rv;              /* last resourceVersion handed out */
  uint64_t compacted_rv;    /* events <= this are gone from the window */
  uint64_t kinds_gen;       /* bumps when the registry changes */
  struct gq_sim_event *events; /* ring of opts.watch_window */
  size_t ev_head, ev_count;
  struct gq_sim_observer observers[GQ_SIM_MAX_OBSERVERS]; /* store.c */
  size_t n_observers;
  struct gq_sim_watch *watches;
  struct gq_sim_pending *pending; /* sorted by due_ms */
  size_t n_pending, cap_pending;
  uv_timer_t pending_timer;
  struct gq_sim_fault faults[32];
  size_t n_faults;
  uint64_t requests;        /* served, for the log */
  struct gq_sim_clock_wait *clock_waits; /* POST /sim/v1/clock (clock.c) */
  uv_timer_t clock_timer;
  struct gq_sim_user *users; /* --token-auth-file (auth.c) */
  struct gq_hclient *hclient; /* admission webhook calls; made on first use */
  void *admits;              /* admission chains with a call out (admission.c) */
  json_t *jobs_dirty;        /* Job keys to reconcile (jobs.c) */
  json_t *jobs_inflight;     /* Job uid -> pods awaiting admission */
  uv_timer_t jobs_timer;     /* runs them on the next loop turn */
  int jobs_closing;
  FILE *record;              /* --record (record.c), or NULL */
  uint32_t cluster_ips;      /* Service clusterIPs handed out (defaults.c) */
  uint32_t node_ports;       /* Service nodePorts handed out */
  json_t *openapi;           /* --openapi's document (openapi.h), or NULL */
  char *openapi_v2;          /* /openapi/v2 as JSON, for openapi_v2_gen */
  char *openapi_v2_pb;       /* ... and as protobuf, openapi_v2_pb_len bytes */
  size_t openapi_v2_pb_len;
  uint64_t openapi_v2_gen;   /* the kinds_gen the two were made for */
};

/* --- record.c --- */
/* --record PATH: from now on, every answer with a JSON content type
 * (application/json, with or without parameters) is appended to PATH
 * (created or truncated) as one line {"method", "path" (no query),
 * "status", "contentType", "stream" (a watch frame), "body" (the text)},
 * flushed at once; whitespace-only stream writes are skipped. Returns 0,
 * or -1 with "--record: cannot write 'PATH': why" in err. Call after
 * gq_sim_start(). */
int gq_sim_record_start(struct gq_sim *s, const char *path, char *err,
                        size_t errlen);
/* Stops recording and closes the file; nothing when not recording. */
void gq_sim_record_stop(struct gq_sim *s);

/* --- jobs.c --- */
/* Returns 1 if k is batch/v1 jobs. */
int gq_sim_is_job(const struct gq_sim_kind *k);
/* The defaults the apiserver gives a new Job (batch/v1 SetDefaults_Job
 * and the Job strategy's selector): completions and parallelism 1 when
 * both are unset (else parallelism 1), backoffLimit 6, suspend false,
 * completionMode NonIndexed, podReplacementPolicy TerminatingOrFailed
 * (without a podFailurePolicy), the template's labels as the Job's when
 * it has none; the template's batch.kubernetes.io/controller-uid and
 * job-name labels (and the legacy controller-uid, job-name) and the
 * matching selector; the template's pod spec defaults
 * (gq_sim_podspec_defaults) with restartPolicy Never when unset. job: its
 * uid and name set, changed in place. */
void gq_sim_job_defaults(json_t *job);
/* The template rule of a Job update: spec.template is immutable, except
 * while the Job is suspended and never started (JobMutableNodeScheduling-
 * Directives; the sim lets the whole template change then). Returns 0, or
 * -1 with "spec.template: Invalid value: ...: field is immutable" in err. */
int gq_sim_job_check_update(const json_t *cur, const json_t *next,
                            char *err, size_t len);
/* Starts the Job controller: a store observer and a 0 ms uv timer on
 * s->loop that reconciles the marked Jobs (pods from the template, status
 * counts and conditions). */
void gq_sim_jobs_start(struct gq_sim *s);
/* Closes its timer (run the loop to finish). */
void gq_sim_jobs_stop(struct gq_sim *s);
/* Frees what is left after the loop ran the close. */
void gq_sim_jobs_release(struct gq_sim *s);

/* --- auth.c --- */
/* The user of the single --token, and of every request when the sim
 * checks no token: system:admin in group system:masters. */
extern const struct gq_sim_user gq_sim_user_admin;
/* The sim's Job controller: system:serviceaccount:kube-system:job-controller
 * (kube-controller-manager's service account for it). */
extern const struct gq_sim_user gq_sim_user_job_controller;
/* The simulated kubelets: "system:node:" + the node's name, in group
 * system:nodes (the Node authorizer's convention). */
extern const struct gq_sim_user gq_sim_user_node;
/* Reads a kube-apiserver token file (--token-auth-file): CSV lines
 * token,user,uid[,"group1,group2"]; blank lines and lines starting with
 * '#' are skipped. Every user also gets group system:authenticated, as the
 * apiserver adds it. Tokens are registered as log secrets. Returns 0, or
 * GQ_EIO / GQ_EINVAL with the reason in err. */
int gq_sim_users_load(struct gq_sim *s, const char *path, char *err,
                      size_t errlen);
/* Frees the users gq_sim_users_load() read. */
void gq_sim_users_release(struct gq_sim *s);
/* The user an Authorization header value (may be NULL) authenticates:
 * system:admin when the sim checks no token, or for the --token; a file
 * user for its token; NULL when refused (then 401). Borrowed, valid while
 * the sim runs. */
const struct gq_sim_user *gq_sim_authenticate(const struct gq_sim *s,
                                              const char *authorization);
/* u as an authentication.k8s.io/v1 UserInfo {username, uid, groups} (new
 * reference); node completes gq_sim_user_node's name (else ignored). */
json_t *gq_sim_user_info(const struct gq_sim_user *u, const char *node);
/* Answers POST /apis/authentication.k8s.io/v1/selfsubjectreviews (what
 * `kubectl auth whoami` calls; KEP-3325) with u's UserInfo, 201. */
void gq_sim_self_review(struct gq_http_req *req,
                        const struct gq_sim_user *u);

/* --- kinds.c --- */
void gq_sim_kinds_init(struct gq_sim *s);
void gq_sim_kinds_release(struct gq_sim *s);
/* Writes the built-in kinds of the registry to f as one JSON array,
 * [{"group", "version", "kind", "listKind"}] in registry order, plus the
 * kinds of the pods' eviction and binding subresources (without
 * listKind): the input of the build's OpenAPI generator
 * (`gpuq-sim --print-kinds`, sim/openapi_gen.mjs). Returns 0, or -1 if
 * writing failed. */
int gq_sim_kinds_print(FILE *f);
/* Finds a kind by group, version and plural (or short name or singular
 * when 'any_name'); NULL if unknown. */
struct gq_sim_kind *gq_sim_kind_find(struct gq_sim *s, const char *group,
                                     const char *version, const char *plural);
/* Returns 1 if some served kind has this group and version. */
int gq_sim_kind_find_gv(struct gq_sim *s, const char *group,
                        const char *version);
struct gq_sim_kind *gq_sim_kind_by_kind(struct gq_sim *s, const char *group,
                                        const char *kind);
/* Registers (or re-registers) the kinds a CRD object defines, after
 * giving crd its defaults (gq_sim_crd_defaults, in place). Takes a
 * reference to crd. Returns 0 or GQ_EINVAL with a message. */
int gq_sim_kind_from_crd(struct gq_sim *s, json_t *crd, char *err,
                         size_t errlen);
/* Stops serving a CRD's kind (its objects must be removed first). */
void gq_sim_kind_drop_crd(struct gq_sim *s, const char *crd_name);
/* "apiVersion" for objects of k ("v1", "gpuq.dev/v1alpha1"). */
const char *gq_sim_kind_api_version(const struct gq_sim_kind *k, char *buf,
                                    size_t len);

/* --- defaults.c --- */
/* Sets obj[key] = v (taken) unless obj has key: an API default. */
void gq_sim_default(json_t *obj, const char *key, json_t *v);
/* Sets the defaults kube-apiserver gives a new Pod (pod, changed in
 * place; absent fields only): spec restartPolicy Always,
 * terminationGracePeriodSeconds 30, dnsPolicy ClusterFirst,
 * securityContext {}, schedulerName default-scheduler, enableServiceLinks
 * true, serviceAccountName (and serviceAccount) default; each container's
 * imagePullPolicy (Always for no tag or :latest, else IfNotPresent),
 * terminationMessagePath /dev/termination-log, terminationMessagePolicy
 * File, resources {}, ports' protocol TCP (pkg/apis/core/v1/defaults.go). */
void gq_sim_pod_defaults(json_t *pod);
/* The pod spec part of gq_sim_pod_defaults() (SetDefaults_PodSpec and
 * _Container, without the ServiceAccount admission's serviceAccountName),
 * for pod templates (a Job's spec.template.spec): spec changed in place. */
void gq_sim_podspec_defaults(json_t *spec);
/* The create-time defaults of the other built-in kinds, each a kind's
 * gq_sim_kind.defaults (kinds.c), obj changed in place (absent fields
 * only); sim/defaults.c says which fields, after which defaults.go.
 * Namespace: label kubernetes.io/metadata.name, spec.finalizers
 * [kubernetes], status.phase Active. */
void gq_sim_namespace_defaults(struct gq_sim *s, json_t *ns);
/* Service: type, sessionAffinity, ports' protocol and targetPort, an
 * allocated clusterIP (10.96.0.0/12, from s->cluster_ips) and nodePorts
 * (30000-32767, from s->node_ports), ipFamilies, ipFamilyPolicy, traffic
 * policies, status.loadBalancer. */
void gq_sim_service_defaults(struct gq_sim *s, json_t *svc);
/* A Service update (next, changed in place) that leaves out what create
 * allocated keeps cur's (borrowed): clusterIP, clusterIPs, ipFamilies,
 * ipFamilyPolicy, and each port's nodePort (matched by port number), as
 * the service registry's patchAllocatedValues does. */
void gq_sim_service_keep(const json_t *cur, json_t *next);
/* PriorityClass: preemptionPolicy PreemptLowerPriority. */
void gq_sim_priorityclass_defaults(struct gq_sim *s, json_t *pc);
/* Webhook configurations: failurePolicy Fail, matchPolicy Equivalent,
 * namespace/objectSelector {}, timeoutSeconds 10, rules' scope "*",
 * service port 443; reinvocationPolicy Never for mutating ones. */
void gq_sim_mutating_defaults(struct gq_sim *s, json_t *cfg);
void gq_sim_validating_defaults(struct gq_sim *s, json_t *cfg);
/* Node: status.allocatable = status.capacity when unset. */
void gq_sim_node_defaults(struct gq_sim *s, json_t *node);
/* CRD: names.singular, names.listKind, conversion {strategy: None},
 * a conversion webhook service's port 443. */
void gq_sim_crd_defaults(struct gq_sim *s, json_t *crd);

/* --- store.c --- */
/* A deep copy of obj (any JSON value; NULL gives NULL) that shares obj's
 * metadata.managedFields instead of copying it: gpuq-sim never changes a
 * managedFields array or its entries in place (a write replaces the whole
 * array, sim/fields.h), and copying it was most of what a kubelet status
 * write or a status patch copied. New reference; change anything in it
 * but metadata.managedFields' contents. */
json_t *gq_sim_copy(const json_t *obj);
/* Looks up an object (borrowed, immutable) or NULL. */
const json_t *gq_sim_get(struct gq_sim_kind *k, const char *ns,
                         const char *name);
/* Stores obj (takes the reference) as the new state of its key, assigning
 * the next resourceVersion into a copy-on-write, and emits ADDED or
 * MODIFIED. Returns the stored object (borrowed). */
const json_t *gq_sim_put(struct gq_sim *s, struct gq_sim_kind *k, json_t *obj);
/* Removes the object and emits DELETED; cascades to dependents (objects
 * whose ownerReferences name its uid) unless orphan. */
void gq_sim_remove(struct gq_sim *s, struct gq_sim_kind *k, const char *ns,
                   const char *name, int orphan);
/* Starts deletion as the API server does: immediate removal, or (pods on a
 * node, finalizers) deletionTimestamp set and removal later. grace_s < 0 =
 * the object's default. Returns the object's state after the call (new
 * reference; the last state if removed). */
json_t *gq_sim_delete(struct gq_sim *s, struct gq_sim_kind *k, const char *ns,
                      const char *name, int64_t grace_s, int orphan);
/* Finishes deletions whose grace period is over; re-arms the timer. */
void gq_sim_pending_run(struct gq_sim *s);
/* Registers fn (with arg) to be called after every change, after those
 * registered before it. Returns 0, or GQ_ETOOBIG when
 * GQ_SIM_MAX_OBSERVERS are registered already. */
int gq_sim_store_observe(struct gq_sim *s, gq_sim_observer_fn fn, void *arg);
void gq_sim_store_init(struct gq_sim *s);
void gq_sim_store_release(struct gq_sim *s);
/* Sorted snapshot of a kind's objects (optionally in one namespace):
 * a new JSON array of references. */
json_t *gq_sim_list(struct gq_sim_kind *k, const char *ns);
/* 1 if obj names uid among its metadata.ownerReferences, else 0. */
int gq_sim_owned_by(const json_t *obj, const char *uid);
/* "ns/name" key of an object into buf. */
const char *gq_sim_key(const struct gq_sim_kind *k, const char *ns,
                       const char *name, char *buf, size_t len);
/* A new RFC 4122 version-4 UUID string into buf (>= 37 bytes). */
void gq_sim_uuid(char *buf);

/* --- watch.c --- */
struct gq_sim_watch_opts {
  struct gq_sim_kind *kind;
  const char *ns;              /* NULL = all namespaces */
  struct gq_labelsel *labels;  /* taken; NULL = all */
  struct gq_fieldsel *fields;  /* taken; NULL = all */
  int table;                   /* send one-row Tables */
  int include_object;          /* Table rows carry the full object */
  int bookmarks;
  uint64_t from_rv;            /* 0 = synthetic ADDED first */
  int64_t timeout_s;           /* 0 = none */
  struct gq_sim_kind *view;    /* present objects through this view */
};
/* Opens a watch on req. Returns 0, or GQ_EGONE when from_rv has been
 * compacted (the caller answers with the 410 ERROR event). */
int gq_sim_watch_open(struct gq_sim *s, struct gq_http_req *req,
                      struct gq_sim_watch_opts *o);
/* The store observer that delivers a change to every matching watch
 * (registered first, so that watchers see changes in resourceVersion
 * order even when a later observer stores more). arg is unused. */
void gq_sim_watch_notify(struct gq_sim *s, const struct gq_sim_event *ev,
                         void *arg);
/* Ends every watch (fault injection and shutdown). */
void gq_sim_watch_close_all(struct gq_sim *s);

/* --- events.c --- */
json_t *gq_sim_event_to_view(const json_t *core);
json_t *gq_sim_event_from_view(const json_t *view);

/* --- table.c --- */
/* Builds a meta.k8s.io/v1 Table of the objects in items (array). */
json_t *gq_sim_table(struct gq_sim_kind *k, const json_t *items,
                     int include_object, int with_coldefs);

/* --- discovery.c --- */
/* Answers discovery and OpenAPI paths; returns 1 if it answered. */
int gq_sim_discovery(struct gq_sim *s, struct gq_http_req *req);
/* Loads the generated OpenAPI definitions of the built-in kinds from
 * 'path' (sim/openapi.h) and links each built-in kind of the registry to
 * its definition (gq_sim_kind.builtin_schema), so that /openapi/v2 and
 * /openapi/v3 serve them and writes prune unknown fields by them. Logs
 * what it loaded. Returns 0; on an error (the file is missing or not
 * such a document) logs a warning that only the CRDs have OpenAPI and
 * returns the error of gq_openapi_load(): the sim then runs as without
 * the file. */
int gq_sim_openapi_load(struct gq_sim *s, const char *path);
/* Frees what gq_sim_openapi_load() and /openapi/v2 kept. */
void gq_sim_openapi_release(struct gq_sim *s);

/* --- clock.c --- */
/* Sets up the timer of /sim/v1/clock's waiters on s->loop. */
void gq_sim_clock_init(struct gq_sim *s);
/* Serves /sim/v1/clock (docs/sim.md): GET answers the clock at once; POST
 * {"untilMs": T} or {"seconds": N} answers once virtual time T is settled
 * (the clock shows T and the sim's timed work due by T is done), 504 at
 * the wait's real timeout, 400 for a bad body. req is answered, now or
 * later. */
void gq_sim_clock_serve(struct gq_sim *s, struct gq_http_req *req);
/* Answers every waiter with 503 (the server, closing next, may drop the
 * answer with the connection) and closes the timer. Call before the
 * server closes; run the loop to finish. */
void gq_sim_clock_stop(struct gq_sim *s);

/* --- reply.c --- */
/* Answers req with obj as compact JSON and HTTP status code. Takes the
 * reference to obj (freed here); req is answered and must not be used
 * again. */
void gq_sim_reply(struct gq_http_req *req, int code, json_t *obj);
/* A new Status object (kind Status, status Failure) with HTTP status code,
 * reason ("NotFound") and message (both copied), no details. */
json_t *gq_sim_status_json(int code, const char *reason, const char *message);
/* Answers req with gq_sim_status_json(code, reason, message), plus details
 * when not NULL (reference taken). */
void gq_sim_status(struct gq_http_req *req, int code, const char *reason,
                   const char *message, json_t *details);
/* Answers req with a Status of status Success and HTTP status code. */
void gq_sim_reply_success(struct gq_http_req *req, int code);
/* The Status reason an API server gives for HTTP status code ("Conflict"
 * for 409; "InternalError" for codes it has no name for); static string. */
const char *gq_sim_reason_for(int code);

/* --- server.c --- */
#define GQ_SIM_MAX_SEGS 10
/* Splits a URL path into its segments (each < 256 bytes). Returns the
 * count, or -1 if there are more than GQ_SIM_MAX_SEGS or one is too long. */
int gq_sim_split_path(const char *path, char seg[GQ_SIM_MAX_SEGS][256]);
int gq_sim_start(struct gq_sim *s, uv_loop_t *loop,
                 const struct gq_sim_opts *o, char *err, size_t errlen);
/* Stops serving and closes the sim's handles (run the loop to finish). */
void gq_sim_stop(struct gq_sim *s);
/* Frees the registry and store after the loop has run the closes. */
void gq_sim_release(struct gq_sim *s);
/* Creates obj (taken) as if POSTed: metadata the server owns, CRD schema
 * defaults and validation. Returns the stored object (borrowed), or NULL
 * with the reason in err. */
const json_t *gq_sim_seed(struct gq_sim *s, struct gq_sim_kind *k, json_t *obj,
                          char *err, size_t errlen);
/* Selector helpers: field value of obj for a field selector term. */
const char *gq_sim_field_value(const json_t *obj, const char *field,
                               char *buf, size_t len);

#endif
