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
  char warning[512]; /* a Warning header to add, or "" */
  const struct gq_sim_user *user; /* who asks (auth.c); borrowed */
};

/* "pods" or "gpujobs.gpuq.dev", as Status messages name resources. */
const char *gq_sim_resname(const struct gq_sim_kind *k, char *buf,
                           size_t len);

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
