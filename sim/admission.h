/* sim/admission.h - gpuq-sim's users and admission webhook chain (see
 * admission.c for the rules and their sources). */
#ifndef GQ_SIM_ADMISSION_H
#define GQ_SIM_ADMISSION_H
#include <jansson.h>
#include <stddef.h>

#include "sim/server.h"

/* One user of --token-auth-file (all strings owned). */
struct gq_sim_user {
  char *token;  /* NULL for the built-in system:admin */
  char *name;
  char *uid;    /* or NULL */
  char *groups; /* "g1,g2" or NULL */
  struct gq_sim_user *next;
};

/* Loads kube-apiserver's static token file format (text: the file's
 * contents; lines "token,user,uid,\"group1,group2\"", '#' comments) into
 * s->users. Returns 0, or GQ_EINVAL with the line named in err. */
int gq_sim_users_load(struct gq_sim *s, const char *text, char *err,
                      size_t len);
void gq_sim_users_release(struct gq_sim *s);

/* The user a request's bearer token (NULL: none) authenticates: a user of
 * the token file, system:admin for --token (or for every request when the
 * sim requires no token), NULL when the token is unknown (401). Borrowed:
 * lives as long as s. */
const struct gq_sim_user *gq_sim_user_of(const struct gq_sim *s,
                                         const char *bearer);

/* Checks a Mutating- or ValidatingWebhookConfiguration as the API server
 * validates one, as far as the sim can call it: each webhook's name (a
 * domain of three or more segments), sideEffects None or NoneOnDryRun,
 * admissionReviewVersions with v1, and a clientConfig.url (Services are
 * not routed). Returns 0, or -1 with the field error in err. */
int gq_sim_webhook_config_check(const json_t *obj, char *err, size_t len);

/* What the request does once its chain has admitted obj (taken): stores
 * it and answers. Called later, with a copy of the request. */
typedef void (*gq_sim_admit_cont)(struct gq_sim_req *r, json_t *obj);

/* Runs the webhooks that match operation op ("CREATE", "UPDATE") of r on
 * obj (old: the stored object of an update, borrowed, or NULL). Returns 0
 * when none matches (obj untouched, still the caller's: go on at once),
 * or 1 when the chain took obj: it calls cont with the patched object, or
 * answers the request itself with the refusal (the request waits, the
 * loop does not). */
int gq_sim_admit(struct gq_sim_req *r, const char *op, json_t *obj,
                 const json_t *old, gq_sim_admit_cont cont);

#endif
