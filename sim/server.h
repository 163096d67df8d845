/* sim/server.h - one API request being served (routing result), shared by
 * server.c (routing, auth, faults), verbs.c (the verbs) and evict.c
 * (eviction, binding, budgets). */
#ifndef GQ_SIM_SERVER_H
#define GQ_SIM_SERVER_H
#include "sim/sim.h"

struct gq_sim_req {
  struct gq_sim *s;
  struct gq_http_req *http;
  const char *method;
  struct gq_sim_kind *k;    /* the kind whose objects are stored */
  struct gq_sim_kind *view; /* the kind requested, when it is a view */
  char ns[256];      /* "" when the path names no namespace */
  char name[256];    /* "" for collections */
  char sub[32];      /* "status", "eviction", "binding" or "" */
  int table;         /* Accept asks for a Table */
  int include_object;
  /* Warning headers to add (kube-apiserver's warning.AddWarning: one per
   * unknown field), their texts one a line, or "" */
  char warning[2048];
  const struct gq_sim_user *user; /* who asks (auth.c); borrowed */
  int64_t del_grace_s; /* DELETE: the options, kept across admission */
  int del_orphan;
  /* An internal write (http NULL: the sim's Job controller) is told of a
   * refusal through this instead of an answer; arg is admission's. */
  void (*refused)(struct gq_sim_req *r, int code, const char *msg,
                  void *arg);
  /* Set by gq_sim_admit(): 1 once a mutating webhook's patch changed the
   * object, which must then be decoded and validated again; 0 when no
   * webhook changed it (it was validated before admission, so the
   * callback need not validate it twice). */
  int mutated;
};

/* "pods" or "gpujobs.gpuq.dev", as Status messages name resources. */
const char *gq_sim_resname(const struct gq_sim_kind *k, char *buf,
                           size_t len);

/* Continues a write admitted by gq_sim_admit(): r is valid only during
 * the call (it may be a copy); obj (taken; NULL on DELETE) is the object
 * after the mutating webhooks. The callback answers r. */
typedef void (*gq_sim_admit_cb)(struct gq_sim_req *r, json_t *obj,
                                void *arg);
/* Runs dynamic admission (admission.c) for operation op ("CREATE",
 * "UPDATE", "DELETE") of r: the matching mutating webhooks, their
 * JSONPatches applied to obj (taken), then the validating ones. When
 * nothing matches, cb runs now; otherwise later, after the webhook calls
 * on the loop (r's HTTP request stays parked; r itself is copied). A
 * denial or a failed call with failurePolicy Fail answers r with the
 * apiserver's Status instead, and cb never runs. old (borrowed, copied)
 * is the stored object for UPDATE and DELETE. */
void gq_sim_admit(struct gq_sim_req *r, const char *op, const json_t *old,
                  json_t *obj, gq_sim_admit_cb cb, void *arg);
/* Answers every request waiting for a webhook with 503 (the server is
 * stopping; httpd must not close with parked connections) and lets the
 * calls end with the hclient's close. Call before closing httpd. */
void gq_sim_admission_stop(struct gq_sim *s);
/* Checks a Mutating/ValidatingWebhookConfiguration (k its kind; any other
 * kind passes) as the apiserver validates it: sideEffects None or
 * NoneOnDryRun, admissionReviewVersions with v1, timeoutSeconds 1..30, a
 * clientConfig. Returns 0, or -1 with "field: reason" in err. */
int gq_sim_webhook_config_check(const struct gq_sim_kind *k,
                                const json_t *obj, char *err, size_t len);

/* 1 if boolean query parameter key of r is true by Go's strconv.ParseBool
 * (1, t, T, TRUE, true, True), 0 if absent or false. The router has
 * refused unparsable ones (400) before any verb runs. */
int gq_sim_query_bool(const struct gq_sim_req *r, const char *key);

void gq_sim_do_get(struct gq_sim_req *r);
void gq_sim_do_list(struct gq_sim_req *r);
void gq_sim_do_watch(struct gq_sim_req *r);
void gq_sim_do_create(struct gq_sim_req *r);
void gq_sim_do_update(struct gq_sim_req *r);
void gq_sim_do_patch(struct gq_sim_req *r);
void gq_sim_do_delete(struct gq_sim_req *r);
void gq_sim_do_delete_collection(struct gq_sim_req *r);
void gq_sim_do_eviction(struct gq_sim_req *r);
void gq_sim_do_binding(struct gq_sim_req *r);

/* The store observer that keeps PodDisruptionBudget status current: after
 * a change of a pod, recomputes the budgets of its namespace. arg is
 * unused. */
void gq_sim_pdb_observe(struct gq_sim *s, const struct gq_sim_event *ev,
                        void *arg);

#endif
