/* sim/auth.c - who a request is: bearer tokens from --token and from a
 * kube-apiserver style --token-auth-file, and the users the sim's own
 * components act as. The user is what admission webhooks are told in
 * userInfo and what SelfSubjectReview answers (docs/sim.md). */
#include "sim/sim.h"

#include "base/alloc.h"
#include "base/err.h"
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FIELDS 4

static const char *const admin_groups[] = {"system:masters",
                                           "system:authenticated"};
static const char *const ctl_groups[] = {"system:serviceaccounts",
                                         "system:serviceaccounts:kube-system",
                                         "system:authenticated"};
static const char *const node_groups[] = {"system:nodes",
                                          "system:authenticated"};

const struct gq_sim_user gq_sim_user_admin = {
    NULL, "system:admin", "", (char **)admin_groups, 2, NULL};
const struct gq_sim_user gq_sim_user_job_controller = {
    NULL, "system:serviceaccount:kube-system:job-controller", "",
    (char **)ctl_groups, 3, NULL};
const struct gq_sim_user gq_sim_user_node = {
    NULL, "system:node:", "", (char **)node_groups, 2, NULL};

/* Splits one CSV line into at most MAX_FIELDS fields in place (a field may
 * be double-quoted; "" inside quotes is a quote, as RFC 4180 says).
 * Returns the number of fields. */
static int split_csv(char *line, char *f[MAX_FIELDS])
{
  int n = 0;
  char *p = line;

  while (n < MAX_FIELDS) {
    char *out = p;

    f[n++] = p;
    if (*p == '"') {
      char *in = p + 1;

      for (; *in; in++) {
        if (*in == '"' && in[1] != '"')
          break;
        if (*in == '"')
          in++; /* "" is one quote */
        *out++ = *in;
      }
      p = *in ? in + 1 : in;
    } else {
      while (*p && *p != ',')
        *out++ = *p++;
    }
    if (*p != ',') {
      *out = '\0';
      break;
    }
    p++;
    *out = '\0';
  }
  return n;
}

/* Adds the user of one line "token,user,uid[,groups]" to s->users. */
static int add_user(struct gq_sim *s, char *line, int lineno, char *err,
                    size_t errlen)
{
  char *f[MAX_FIELDS] = {0}, *g;
  struct gq_sim_user *u;
  int n = split_csv(line, f);

  if (n < 3 || !*f[0] || !*f[1]) {
    snprintf(err, errlen, "--token-auth-file: line %d: want "
             "token,user,uid[,\"group1,group2\"]", lineno);
    return GQ_EINVAL;
  }
  u = gq_xcalloc(1, sizeof(*u));
  u->token = gq_xstrdup(f[0]);
  u->name = gq_xstrdup(f[1]);
  u->uid = gq_xstrdup(f[2]);
  for (g = n > 3 ? f[3] : NULL; g && *g;) {
    char *comma = strchr(g, ',');

    if (comma)
      *comma = '\0';
    u->groups = gq_xrealloc(u->groups, (u->n_groups + 2) * sizeof(char *));
    if (*g)
      u->groups[u->n_groups++] = gq_xstrdup(g);
    g = comma ? comma + 1 : NULL;
  }
  u->groups = gq_xrealloc(u->groups, (u->n_groups + 1) * sizeof(char *));
  u->groups[u->n_groups++] = gq_xstrdup("system:authenticated");
  gq_log_add_secret(u->token);
  u->next = s->users;
  s->users = u;
  return 0;
}

int gq_sim_users_load(struct gq_sim *s, const char *path, char *err,
                      size_t errlen)
{
  FILE *fp = fopen(path, "r");
  char line[4096];
  int lineno = 0, rc = 0;

  if (!fp) {
    snprintf(err, errlen, "--token-auth-file: cannot open '%s'", path);
    return GQ_EIO;
  }
  while (rc == 0 && fgets(line, sizeof(line), fp)) {
    size_t len = strcspn(line, "\r\n");

    lineno++;
    line[len] = '\0';
    if (len && line[0] != '#')
      rc = add_user(s, line, lineno, err, errlen);
  }
  fclose(fp);
  return rc;
}

void gq_sim_users_release(struct gq_sim *s)
{
  while (s->users) {
    struct gq_sim_user *u = s->users;

    s->users = u->next;
    free(u->token);
    free(u->name);
    free(u->uid);
    for (size_t i = 0; i < u->n_groups; i++)
      free(u->groups[i]);
    free(u->groups);
    free(u);
  }
}

const struct gq_sim_user *gq_sim_authenticate(const struct gq_sim *s,
                                              const char *authorization)
{
  const char *tok;

  if (!s->opts.token && !s->users)
    return &gq_sim_user_admin;
  if (!authorization || strncmp(authorization, "Bearer ", 7) != 0)
    return NULL;
  tok = authorization + 7;
  if (s->opts.token && !strcmp(tok, s->opts.token))
    return &gq_sim_user_admin;
  for (const struct gq_sim_user *u = s->users; u; u = u->next)
    if (!strcmp(u->token, tok))
      return u;
  return NULL;
}

json_t *gq_sim_user_info(const struct gq_sim_user *u, const char *node)
{
  json_t *groups = json_array();
  char name[512];

  for (size_t i = 0; i < u->n_groups; i++)
    json_array_append_new(groups, json_string(u->groups[i]));
  snprintf(name, sizeof(name), "%s%s", u->name,
           u == &gq_sim_user_node && node ? node : "");
  return json_pack("{s:s, s:s, s:o}", "username", name, "uid", u->uid,
                   "groups", groups);
}

void gq_sim_self_review(struct gq_http_req *req, const struct gq_sim_user *u)
{
  gq_sim_reply(req, 201,
               json_pack("{s:s, s:s, s:{s:n}, s:{s:o}}", "apiVersion",
                         "authentication.k8s.io/v1", "kind",
                         "SelfSubjectReview", "metadata",
                         "creationTimestamp", "status", "userInfo",
                         gq_sim_user_info(u, NULL)));
}
