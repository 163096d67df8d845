/* api/kubeconfig.c - kubeconfig merging and in-cluster configuration.
 *
 * The files are parsed with api/yaml.h and kept as jansson trees while the
 * context is resolved; nothing is merged into a new tree. A lookup walks the
 * files in list order and takes the first entry with the name, which is
 * exactly client-go's "first file to set a map key wins" (loader.go merges
 * the map parts of the files in reverse order with override, so the first
 * file's entry ends up on top, whole). Keeping the trees also keeps the
 * origin of every field: messages can name the file and the index of the
 * entry as it is written there ("users[2].user.token").
 *
 * Each file is checked structurally when it is loaded (lists of named
 * objects, no duplicate names, as client-go's conversion rejects), but the
 * contents of entries are decoded only for the selected context, cluster
 * and user, as ConfirmUsable checks only what is used: a broken entry for
 * another cluster must not stop gpuq from reaching this one.
 *
 * Field reads go through struct gq_dec (api/json.h) so that type errors read
 * like Kubernetes field errors; this file adds the "kubeconfig <file>: "
 * prefix once, in dec_fail().
 */
#include "api/kubeconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "api/exec.h"
#include "api/json.h"
#include "api/yaml.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"

/* Entries per list and file; real kubeconfigs hold a handful. */
#define MAX_ENTRIES 4096
/* Names, servers, paths and other plain strings. */
#define MAX_FIELD 4096
/* Base64 fields: the PEM cap, 4/3 larger, plus line breaks. */
#define MAX_B64 (GQ_KUBECONFIG_MAX_PEM / 3 * 4 + GQ_KUBECONFIG_MAX_PEM / 32)
/* Exec plugin arguments and env entries. */
#define MAX_ARGS 1024
/* Longest list of names quoted in a "not found" message. */
#define NAMES_MAX 256

/* One file of the list that exists. */
struct kc_file {
  char *path;        /* as given, for messages */
  char *dir;         /* absolute directory, base of relative paths */
  json_t *docs;      /* the YAML stream; 'top' is borrowed from it */
  const json_t *top; /* the document, NULL for an empty file */
};

/* A load in progress. */
struct kc {
  struct kc_file *files;
  size_t n;
  char *list; /* the files found, joined with ':', for messages */
  char *err;
  size_t errlen;
};

/* An entry of clusters, users or contexts, found by name. */
struct kc_entry {
  const struct kc_file *f;
  const char *list;           /* "clusters" */
  const char *kind;           /* "cluster", the key of the entry's body */
  size_t idx;                 /* index in f's list */
  const json_t *body;         /* f's clusters[idx].cluster; may be NULL */
  char path[GQ_DEC_PATH_MAX]; /* scratch for at() */
};

__attribute__((format(printf, 4, 5))) static int
set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
  va_list ap;

  if (!err || errlen == 0)
    return rc;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return rc;
}

static void clear_err(char *err, size_t errlen)
{
  if (err && errlen > 0)
    err[0] = '\0';
}

static int nonempty(const char *s)
{
  return s && *s;
}

static int is_space(char c)
{
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Reads at most cap bytes of the file at path. Returns 0 with *out owned
 * and NUL-terminated and *len its length, GQ_ETOOBIG, or a negated errno
 * (-ENOENT when it does not exist). */
static int read_capped(const char *path, size_t cap, char **out, size_t *len)
{
  struct gq_buf b;
  char chunk[8192];
  ssize_t n;
  int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

  *out = NULL;
  *len = 0;
  if (fd < 0)
    return -errno;
  gq_buf_init(&b, cap);
  while (rc == 0 && (n = read(fd, chunk, sizeof(chunk))) != 0) {
    if (n < 0)
      rc = errno == EINTR ? 0 : -errno;
    else
      rc = gq_buf_append(&b, chunk, (size_t)n);
  }
  close(fd);
  if (rc != 0) {
    gq_buf_release(&b);
    return rc;
  }
  *len = b.len;
  *out = gq_buf_take(&b);
  return 0;
}

/* Decodes padded standard base64 (RFC 4648 section 4), the encoding Go's
 * encoding/json gives []byte fields such as certificate-authority-data. CR
 * and LF are skipped, as Go skips them. EVP_DecodeBlock decodes whole
 * quanta and counts the zero bytes that '=' padding stands for, so the
 * padding is subtracted from its result. Returns 0 with an owned buffer
 * (NUL-terminated after *len bytes), or GQ_EINVAL. */
int gq_b64_decode(const char *s, size_t n, unsigned char **out, size_t *len)
{
  unsigned char *clean = gq_xmalloc(n + 1), *bin;
  size_t m = 0, pad = 0;
  int got;

  for (size_t i = 0; i < n; i++)
    if (s[i] != '\r' && s[i] != '\n')
      clean[m++] = (unsigned char)s[i];
  while (pad < 2 && m > pad && clean[m - 1 - pad] == '=')
    pad++;
  bin = gq_xmalloc(m / 4 * 3 + 1);
  got = m % 4 == 0 && !memchr(clean, '=', m - pad)
            ? EVP_DecodeBlock(bin, clean, (int)m)
            : -1;
  free(clean);
  if (got < 0 || (size_t)got < pad) {
    free(bin);
    return GQ_EINVAL;
  }
  *len = (size_t)got - pad;
  bin[*len] = '\0';
  *out = bin;
  return 0;
}

/* The absolute directory of 'path' (client-go makes the file's location
 * absolute before resolving relative paths against it). Owned. */
static char *abs_dir(const char *path)
{
  char cwd[4096], *full, *slash;

  while (path[0] == '.' && path[1] == '/')
    path += 2;
  if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
    full = gq_xstrdup(path);
  else
    full = gq_xasprintf("%s/%s", cwd, path);
  slash = strrchr(full, '/');
  if (!slash) {
    free(full);
    return gq_xstrdup(".");
  }
  slash[slash == full ? 1 : 0] = '\0';
  return full;
}

/* p resolved against dir when relative; owned. */
static char *resolve(const char *dir, const char *p)
{
  if (p[0] == '/')
    return gq_xstrdup(p);
  return gq_xasprintf("%s/%s", strcmp(dir, "/") == 0 ? "" : dir, p);
}

__attribute__((format(printf, 3, 4))) static int kc_fail(struct kc *k, int rc,
                                                         const char *fmt, ...)
{
  va_list ap;

  if (!k->err || k->errlen == 0)
    return rc;
  va_start(ap, fmt);
  vsnprintf(k->err, k->errlen, fmt, ap);
  va_end(ap);
  return rc;
}

/* Reports the decode error recorded in d, prefixed with the file. */
static int dec_fail(struct kc *k, const struct kc_file *f,
                    const struct gq_dec *d)
{
  return kc_fail(k, d->rc, "kubeconfig %s: %s", f->path, d->msg);
}

/* "kubeconfig F: list[i].kind[.field]: <message>". */
__attribute__((format(printf, 5, 6))) static int
efail(struct kc *k, const struct kc_entry *e, const char *field, int rc,
      const char *fmt, ...)
{
  char msg[512];
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return kc_fail(k, rc, "kubeconfig %s: %s[%zu].%s%s%s: %s", e->f->path,
                 e->list, e->idx, e->kind, field ? "." : "", field ? field : "",
                 msg);
}

/* The path of a field of e ("users[0].user.token"); valid until the next
 * call with the same e. */
static const char *at(struct kc_entry *e, const char *field)
{
  snprintf(e->path, sizeof(e->path), "%s[%zu].%s.%s", e->list, e->idx, e->kind,
           field);
  return e->path;
}

/* ---- loading and checking files ---------------------------------------- */

/* Checks that top[list] is a list of objects with distinct, non-empty
 * names whose body (top[list][i][kind]) is an object when present. */
static void check_list(struct gq_dec *d, const json_t *top, const char *list,
                       const char *kind)
{
  const json_t *arr = gq_dec_array(d, top, list, 0, MAX_ENTRIES), *item;
  json_t *seen = json_object();
  char p[GQ_DEC_PATH_MAX];
  const char *name;
  size_t i;

  json_array_foreach((json_t *)arr, i, item)
  {
    if (!json_is_object(item)) {
      gq_dec_fail_got(d, gq_dec_path(p, "%s[%zu]", list, i), item,
                      "must be an object");
      break;
    }
    gq_dec_object(d, item, gq_dec_path(p, "%s[%zu].%s", list, i, kind), 0);
    name = gq_dec_string(d, item, gq_dec_path(p, "%s[%zu].name", list, i), 1,
                         MAX_FIELD, NULL);
    if (gq_dec_failed(d))
      break;
    if (json_object_get(seen, name)) {
      gq_dec_fail(d, p, "duplicate name \"%s\"", name);
      break;
    }
    json_object_set_new(seen, name, json_true());
  }
  json_decref(seen);
}

static int check_file(struct kc *k, struct kc_file *f)
{
  struct gq_dec d;

  if (json_array_size(f->docs) > 1)
    return kc_fail(k, GQ_EINVAL,
                   "kubeconfig %s: holds %zu YAML documents, "
                   "want one",
                   f->path, json_array_size(f->docs));
  f->top = json_array_get(f->docs, 0);
  if (f->top && json_is_null(f->top))
    f->top = NULL;
  if (f->top && !json_is_object(f->top))
    return kc_fail(k, GQ_EINVAL,
                   "kubeconfig %s: must be a mapping with "
                   "clusters, users and contexts",
                   f->path);
  gq_dec_init(&d);
  gq_dec_string(&d, f->top, "current-context", 0, MAX_FIELD, NULL);
  check_list(&d, f->top, "clusters", "cluster");
  check_list(&d, f->top, "users", "user");
  check_list(&d, f->top, "contexts", "context");
  return gq_dec_failed(&d) ? dec_fail(k, f, &d) : 0;
}

/* Loads one file of the list; a file that does not exist is skipped. */
static int add_file(struct kc *k, const char *path)
{
  struct kc_file *f;
  struct stat st;
  char msg[512];
  json_t *docs;
  int rc;

  for (size_t i = 0; i < k->n; i++)
    if (strcmp(k->files[i].path, path) == 0)
      return 0; /* client-go deduplicates the list */
  /* Only a file that does not exist is skipped, as loader.go does; one that
   * exists but cannot be read (permissions, a directory) is an error, since
   * skipping it would silently pick credentials from the next file. */
  if (stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR))
    return 0;
  rc = gq_yaml_load_file(path, &docs, msg, sizeof(msg));
  if (rc == GQ_EIO)
    return kc_fail(k, rc, "kubeconfig %s: %s", path, msg);
  if (rc != 0)
    return kc_fail(k, rc, "kubeconfig %s", msg); /* msg starts with path */
  k->files = gq_xrealloc(k->files, (k->n + 1) * sizeof(*k->files));
  f = &k->files[k->n++];
  f->path = gq_xstrdup(path);
  f->dir = abs_dir(path);
  f->docs = docs;
  f->top = NULL;
  return check_file(k, f);
}

/* The list to load: paths, else $KUBECONFIG, else ~/.kube/config. Owned. */
static char *default_paths(struct kc *k, const char *paths)
{
  const char *env = getenv("KUBECONFIG"), *home = getenv("HOME");

  if (paths)
    return gq_xstrdup(paths);
  if (nonempty(env))
    return gq_xstrdup(env);
  if (!nonempty(home)) {
    kc_fail(k, GQ_EINVAL,
            "kubeconfig: HOME is not set and no path was "
            "given");
    return NULL;
  }
  return gq_xasprintf("%s/.kube/config", home);
}

static int kc_open(struct kc *k, const char *paths)
{
  char *given_list = default_paths(k, paths), *work, *save = NULL, *p;
  struct gq_buf names;
  int rc = 0, given = 0;

  if (!given_list)
    return GQ_EINVAL;
  work = gq_xstrdup(given_list);
  for (p = strtok_r(work, ":", &save); p && rc == 0;
       p = strtok_r(NULL, ":", &save)) {
    given++;
    rc = add_file(k, p);
  }
  if (rc == 0 && given == 0)
    rc = kc_fail(k, GQ_EINVAL, "kubeconfig: empty path list");
  else if (rc == 0 && k->n == 0)
    rc = kc_fail(k, GQ_ENOTFOUND, "kubeconfig %s: %s", given_list,
                 given > 1 ? "none of the files exists" : "no such file");
  gq_buf_init(&names, (size_t)1 << 20);
  for (size_t i = 0; rc == 0 && i < k->n; i++)
    gq_buf_printf(&names, "%s%s", i ? ":" : "", k->files[i].path);
  k->list = gq_buf_take(&names);
  free(work);
  free(given_list);
  return rc;
}

static void kc_close(struct kc *k)
{
  for (size_t i = 0; i < k->n; i++) {
    free(k->files[i].path);
    free(k->files[i].dir);
    json_decref(k->files[i].docs);
  }
  free(k->files);
  free(k->list);
}

/* ---- lookups ----------------------------------------------------------- */

/* Finds the first entry called 'name' in 'list', in file order. */
static int kc_find(const struct kc *k, const char *list, const char *kind,
                   const char *name, struct kc_entry *e)
{
  const json_t *arr, *item;
  size_t j;

  for (size_t i = 0; i < k->n; i++) {
    arr = gq_dec_get(k->files[i].top, list);
    json_array_foreach((json_t *)arr, j, item)
    {
      if (strcmp(json_string_value(json_object_get(item, "name")), name))
        continue;
      e->f = &k->files[i];
      e->list = list;
      e->kind = kind;
      e->idx = j;
      e->body = gq_dec_get(item, kind);
      return 1;
    }
  }
  return 0;
}

/* Writes the distinct names of 'list' across the files, in order, into buf
 * ("dev, staging", "none"), cut with "..." when long. */
static void kc_names(const struct kc *k, const char *list, char *buf,
                     size_t len)
{
  json_t *seen = json_object(), *item;
  size_t off = 0, j;
  const char *name;

  snprintf(buf, len, "none");
  for (size_t i = 0; i < k->n; i++) {
    json_array_foreach(json_object_get(k->files[i].top, list), j, item)
    {
      name = json_string_value(json_object_get(item, "name"));
      if (json_object_get(seen, name) || off >= len)
        continue;
      json_object_set_new(seen, name, json_true());
      off +=
          (size_t)snprintf(buf + off, len - off, "%s%s", off ? ", " : "", name);
    }
  }
  if (off >= len && len > 4)
    memcpy(buf + len - 4, "...", 4);
  json_decref(seen);
}

static const char *current_context(const struct kc *k)
{
  const json_t *v;

  for (size_t i = 0; i < k->n; i++) {
    v = gq_dec_get(k->files[i].top, "current-context");
    if (v && json_string_length(v) > 0)
      return json_string_value(v);
  }
  return NULL;
}

/* Finds the cluster or user that context entry c names in its 'field'. */
static int find_ref(struct kc *k, const struct kc_entry *c, const char *field,
                    const char *list, const char *name, struct kc_entry *e)
{
  char names[NAMES_MAX];

  if (kc_find(k, list, field, name, e))
    return 0;
  kc_names(k, list, names, sizeof(names));
  return efail(k, c, field, GQ_ENOTFOUND, "%s \"%s\" not found (%s: %s)", field,
               name, list, names);
}

/* ---- fields ------------------------------------------------------------ */

/* Decodes base64 field 'field' of e into *out. */
static int load_b64(struct kc *k, const struct kc_entry *e, const char *field,
                    const char *b64, unsigned char **out, size_t *len)
{
  if (gq_b64_decode(b64, strlen(b64), out, len) != 0)
    return efail(k, e, field, GQ_EINVAL, "invalid base64");
  return 0;
}

/* Reads the file named by field 'field' of e (relative to e's file) into
 * *out; its absolute path goes to *path_out when that is not NULL. */
static int load_pem(struct kc *k, const struct kc_entry *e, const char *field,
                    const char *name, unsigned char **out, size_t *len,
                    char **path_out)
{
  char *path = resolve(e->f->dir, name), *data;
  int rc = read_capped(path, GQ_KUBECONFIG_MAX_PEM, &data, len);

  if (rc == GQ_ETOOBIG)
    rc = efail(k, e, field, rc, "'%s' is larger than %zu bytes", path,
               GQ_KUBECONFIG_MAX_PEM);
  else if (rc != 0)
    rc =
        efail(k, e, field, GQ_EIO, "cannot read '%s': %s", path, strerror(-rc));
  if (rc != 0) {
    free(path);
    return rc;
  }
  *out = (unsigned char *)data;
  if (path_out)
    *path_out = path;
  else
    free(path);
  return 0;
}

/* PEM from 'file' or from base64 'b64' (the caller ruled out both). */
static int load_either(struct kc *k, const struct kc_entry *e,
                       const char *field, const char *file, const char *b64,
                       unsigned char **out, size_t *len, char **path_out)
{
  char data_field[64];

  if (nonempty(b64)) {
    snprintf(data_field, sizeof(data_field), "%s-data", field);
    return load_b64(k, e, data_field, b64, out, len);
  }
  if (nonempty(file))
    return load_pem(k, e, field, file, out, len, path_out);
  return 0;
}

/* Tokens end up in an HTTP header, where a CR or LF would start a new
 * header line; refuse every control character. */
static int has_control(const char *s)
{
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f)
      return 1;
  return 0;
}

/* ---- context and cluster ------------------------------------------------ */

/* validation.go validateContext: a context names its cluster and user, and
 * a namespace, when given, must be a DNS-1123 label. An unset namespace is
 * "default" (client_config.go Namespace()). */
static int decode_context(struct kc *k, struct kc_entry *e,
                          struct gq_kubeconfig *out, const char **cluster,
                          const char **user)
{
  struct gq_dec d;
  const char *ns;

  gq_dec_init(&d);
  *cluster = gq_dec_string(&d, e->body, at(e, "cluster"), 1, MAX_FIELD, NULL);
  *user = gq_dec_string(&d, e->body, at(e, "user"), 1, MAX_FIELD, NULL);
  ns = gq_dec_string(&d, e->body, at(e, "namespace"), 0, MAX_FIELD, NULL);
  if (nonempty(ns))
    gq_dec_dns_label(&d, at(e, "namespace"), ns);
  if (gq_dec_failed(&d))
    return dec_fail(k, e->f, &d);
  out->namespace_ = gq_xstrdup(nonempty(ns) ? ns : "default");
  return 0;
}

/* client-go guesses a scheme for a bare "host:port" from the TLS settings.
 * gpuq refuses to guess: the guess decides whether the bearer token crosses
 * the network in clear text. */
static int check_server(struct gq_dec *d, struct kc_entry *e, const char *s)
{
  if (!s || strncmp(s, "https://", 8) == 0 || strncmp(s, "http://", 7) == 0)
    return 0;
  return gq_dec_fail_got(d, at(e, "server"), gq_dec_get(e->body, "server"),
                         "must be an https:// or http:// URL");
}

/* The conflicts are validation.go's (CA file and data) and client-go
 * transport's ("specifying a root certificates file with the insecure flag
 * is not allowed"). proxy-url is refused because gpuq's HTTP client does not
 * do proxies, and silently connecting directly could bypass a policy. */
static int decode_cluster(struct kc *k, struct kc_entry *e,
                          struct gq_kubeconfig *out)
{
  const char *server, *ca, *ca64, *sni;
  struct gq_dec d;

  gq_dec_init(&d);
  server = gq_dec_string(&d, e->body, at(e, "server"), 1, MAX_FIELD, NULL);
  check_server(&d, e, server);
  ca = gq_dec_string(&d, e->body, at(e, "certificate-authority"), 0, MAX_FIELD,
                     NULL);
  ca64 = gq_dec_string(&d, e->body, at(e, "certificate-authority-data"), 0,
                       MAX_B64, NULL);
  out->insecure =
      gq_dec_bool(&d, e->body, at(e, "insecure-skip-tls-verify"), 0);
  sni =
      gq_dec_string(&d, e->body, at(e, "tls-server-name"), 0, MAX_FIELD, NULL);
  if (nonempty(
          gq_dec_string(&d, e->body, at(e, "proxy-url"), 0, MAX_FIELD, NULL)))
    gq_dec_fail(&d, at(e, "proxy-url"), "not supported");
  if (gq_dec_failed(&d))
    return dec_fail(k, e->f, &d);
  if (nonempty(ca) && nonempty(ca64))
    return efail(k, e, NULL, GQ_EINVAL,
                 "certificate-authority and "
                 "certificate-authority-data are both set");
  if (out->insecure && (nonempty(ca) || nonempty(ca64)))
    return efail(k, e, NULL, GQ_EINVAL,
                 "insecure-skip-tls-verify and a "
                 "certificate authority are both set");
  out->server = gq_xstrdup(server);
  out->tls_server_name = nonempty(sni) ? gq_xstrdup(sni) : NULL;
  return load_either(k, e, "certificate-authority", ca, ca64, &out->ca_data,
                     &out->ca_len, &out->ca_file);
}

/* ---- exec plugin -------------------------------------------------------- */

static const char *const exec_versions[] = {GQ_EXEC_API_V1, GQ_EXEC_API_V1BETA1,
                                            NULL};
static const char *const exec_modes[] = {"Never", "IfAvailable", "Always",
                                         NULL};

/* users[].user.exec (client-go api/v1 ExecConfig). The strings are copied:
 * the config outlives the parsed files. */
static void exec_args(struct gq_dec *d, struct kc_entry *e, const json_t *x,
                      struct gq_exec_config *c)
{
  const char **args;
  size_t n;

  args = gq_dec_string_array(d, x, at(e, "exec.args"), 0, MAX_ARGS, NULL, &n);
  if (n == 0)
    return;
  c->args = gq_xcalloc(n, sizeof(*c->args));
  for (size_t i = 0; i < n; i++)
    c->args[c->n_args++] = gq_xstrdup(args[i]);
  free(args);
}

/* env: [{name, value}] becomes "name=value" entries. */
static void exec_env(struct gq_dec *d, struct kc_entry *e, const json_t *x,
                     struct gq_exec_config *c)
{
  const json_t *arr = gq_dec_array(d, x, at(e, "exec.env"), 0, MAX_ARGS);
  const json_t *item;
  const char *name, *value;
  char p[GQ_DEC_PATH_MAX];
  size_t i;

  c->env = gq_xcalloc(json_array_size(arr) + 1, sizeof(*c->env));
  json_array_foreach((json_t *)arr, i, item)
  {
    if (!json_is_object(item)) {
      gq_dec_fail_got(d, gq_dec_path(p, "%s[%zu]", at(e, "exec.env"), i), item,
                      "must be an object");
      return;
    }
    gq_dec_path(p, "%s[%zu].name", at(e, "exec.env"), i);
    name = gq_dec_string(d, item, p, 1, MAX_FIELD, NULL);
    if (name && strchr(name, '='))
      gq_dec_fail(d, p, "must not contain '='");
    gq_dec_path(p, "%s[%zu].value", at(e, "exec.env"), i);
    value = gq_dec_string(d, item, p, 0, MAX_B64, "");
    if (gq_dec_failed(d))
      return;
    c->env[c->n_env++] = gq_xasprintf("%s=%s", name, value);
  }
}

static void exec_fields(struct gq_dec *d, struct kc_entry *e, const json_t *x,
                        struct gq_exec_config *c)
{
  const char *cmd, *hint;
  int ver, mode;

  cmd = gq_dec_string(d, x, at(e, "exec.command"), 1, MAX_FIELD, NULL);
  ver = gq_dec_enum(d, x, at(e, "exec.apiVersion"), exec_versions, 1, 0);
  /* v1 made interactiveMode required; v1beta1 defaults to IfAvailable. */
  mode = gq_dec_enum(d, x, at(e, "exec.interactiveMode"), exec_modes,
                     !gq_dec_failed(d) && ver == 0, GQ_EXEC_IF_AVAILABLE);
  hint = gq_dec_string(d, x, at(e, "exec.installHint"), 0, MAX_FIELD, NULL);
  gq_dec_bool(d, x, at(e, "exec.provideClusterInfo"), 0);
  if (gq_dec_failed(d))
    return;
  /* Only a command with a '/' is a path (client-go: a bare name is looked
   * up in $PATH, so it must not be made relative to the file). */
  c->command = strchr(cmd, '/') ? resolve(e->f->dir, cmd) : gq_xstrdup(cmd);
  c->api_version = gq_xstrdup(exec_versions[ver]);
  c->install_hint = nonempty(hint) ? gq_xstrdup(hint) : NULL;
  c->interactive = mode;
}

static int decode_exec(struct kc *k, struct kc_entry *e, const json_t *x,
                       struct gq_kubeconfig *out)
{
  struct gq_exec_config *c = gq_xcalloc(1, sizeof(*c));
  struct gq_dec d;

  gq_dec_init(&d);
  exec_fields(&d, e, x, c);
  exec_args(&d, e, x, c);
  exec_env(&d, e, x, c);
  if (gq_dec_failed(&d)) {
    gq_exec_config_free(c);
    return dec_fail(k, e->f, &d);
  }
  out->exec = c;
  return 0;
}

/* ---- user ---------------------------------------------------------------- */

/* The fields of users[i].user, borrowed from the document. */
struct user_raw {
  const char *token, *token_file;
  const char *cert, *cert64, *key, *key64;
  const char *username, *password;
  const json_t *provider, *exec;
};

static void user_fields(struct gq_dec *d, struct kc_entry *e,
                        struct user_raw *u)
{
  const json_t *b = e->body;

  u->token =
      gq_dec_string(d, b, at(e, "token"), 0, GQ_KUBECONFIG_MAX_TOKEN, NULL);
  u->token_file = gq_dec_string(d, b, at(e, "tokenFile"), 0, MAX_FIELD, NULL);
  u->cert =
      gq_dec_string(d, b, at(e, "client-certificate"), 0, MAX_FIELD, NULL);
  u->cert64 =
      gq_dec_string(d, b, at(e, "client-certificate-data"), 0, MAX_B64, NULL);
  u->key = gq_dec_string(d, b, at(e, "client-key"), 0, MAX_FIELD, NULL);
  u->key64 = gq_dec_string(d, b, at(e, "client-key-data"), 0, MAX_B64, NULL);
  u->username = gq_dec_string(d, b, at(e, "username"), 0, MAX_FIELD, NULL);
  u->password = gq_dec_string(d, b, at(e, "password"), 0, MAX_FIELD, NULL);
  u->provider = gq_dec_object(d, b, at(e, "auth-provider"), 0);
  u->exec = gq_dec_object(d, b, at(e, "exec"), 0);
  if (u->token && has_control(u->token))
    gq_dec_fail(d, at(e, "token"), "must not contain control characters");
}

/* The combinations validation.go refuses, and what gpuq does not do. */
static int user_check(struct kc *k, const struct kc_entry *e,
                      const struct user_raw *u)
{
  const char *msg = NULL;
  int cert = nonempty(u->cert) || nonempty(u->cert64);
  int key = nonempty(u->key) || nonempty(u->key64);

  if (nonempty(u->username) || nonempty(u->password))
    msg = "username/password (basic auth) is not supported";
  else if (nonempty(u->cert) && nonempty(u->cert64))
    msg = "client-certificate and client-certificate-data are both set";
  else if (nonempty(u->key) && nonempty(u->key64))
    msg = "client-key and client-key-data are both set";
  else if (cert && !key)
    msg = "client-certificate needs client-key or client-key-data";
  else if (key && !cert)
    msg = "client-key needs client-certificate or client-certificate-data";
  if (msg)
    return efail(k, e, NULL, GQ_EINVAL, "%s", msg);
  if (u->provider)
    return efail(k, e, "auth-provider", GQ_EINVAL,
                 "not supported (use an exec plugin)");
  return 0;
}

/* token, else tokenFile read now; tokenFile is kept for re-reading. */
static int user_token(struct kc *k, const struct kc_entry *e,
                      const struct user_raw *u, struct gq_kubeconfig *out)
{
  char msg[512];
  int rc;

  if (nonempty(u->token))
    out->token = gq_xstrdup(u->token);
  if (!nonempty(u->token_file))
    return 0;
  out->token_file = resolve(e->f->dir, u->token_file);
  if (out->token)
    return 0;
  rc = gq_kubeconfig_read_token_file(out->token_file, &out->token, msg,
                                     sizeof(msg));
  return rc ? efail(k, e, "tokenFile", rc, "%s", msg) : 0;
}

static int decode_user(struct kc *k, struct kc_entry *e,
                       struct gq_kubeconfig *out)
{
  struct user_raw u;
  struct gq_dec d;
  int rc;

  gq_dec_init(&d);
  user_fields(&d, e, &u);
  if (gq_dec_failed(&d))
    return dec_fail(k, e->f, &d);
  rc = user_check(k, e, &u);
  if (rc == 0)
    rc = load_either(k, e, "client-certificate", u.cert, u.cert64,
                     &out->cert_data, &out->cert_len, NULL);
  if (rc == 0)
    rc = load_either(k, e, "client-key", u.key, u.key64, &out->key_data,
                     &out->key_len, NULL);
  if (rc == 0)
    rc = user_token(k, e, &u, out);
  if (rc == 0 && u.exec)
    rc = decode_exec(k, e, u.exec, out);
  return rc;
}

/* ---- resolving ----------------------------------------------------------- */

static int select_context(struct kc *k, const char *context,
                          struct kc_entry *ce, const char **name_out)
{
  const char *name = nonempty(context) ? context : current_context(k);
  char names[NAMES_MAX];

  *name_out = name;

  kc_names(k, "contexts", names, sizeof(names));
  if (!name)
    return kc_fail(k, GQ_EINVAL,
                   "kubeconfig %s: current-context is not set "
                   "and no context was given (contexts: %s)",
                   k->list, names);
  if (!kc_find(k, "contexts", "context", name, ce))
    return kc_fail(k, GQ_ENOTFOUND,
                   "kubeconfig %s: context \"%s\" not found "
                   "(contexts: %s)",
                   k->list, name, names);
  return 0;
}

/* client_config.go ClientConfig(): the context, then its cluster, then its
 * user, each failing with the entry's own file and index. */
static int kc_resolve(struct kc *k, const char *context,
                      struct gq_kubeconfig *out)
{
  struct kc_entry ce, cle, ue;
  const char *name, *cluster, *user;
  int rc = select_context(k, context, &ce, &name);

  if (rc == 0)
    rc = decode_context(k, &ce, out, &cluster, &user);
  if (rc == 0)
    rc = find_ref(k, &ce, "cluster", "clusters", cluster, &cle);
  if (rc == 0)
    rc = decode_cluster(k, &cle, out);
  if (rc == 0)
    rc = find_ref(k, &ce, "user", "users", user, &ue);
  if (rc == 0)
    rc = decode_user(k, &ue, out);
  if (rc != 0)
    return rc;
  out->context = gq_xstrdup(name);
  out->cluster_name = gq_xstrdup(cluster);
  out->user_name = gq_xstrdup(user);
  out->source = gq_xasprintf("kubeconfig %s", ce.f->path);
  return 0;
}

int gq_kubeconfig_load(const char *paths, const char *context,
                       struct gq_kubeconfig *out, char *err, size_t errlen)
{
  struct kc k = {.err = err, .errlen = errlen};
  int rc;

  clear_err(err, errlen);
  if (!out)
    return set_err(err, errlen, GQ_EINVAL, "kubeconfig: no output given");
  memset(out, 0, sizeof(*out));
  rc = kc_open(&k, paths);
  if (rc == 0)
    rc = kc_resolve(&k, context, out);
  kc_close(&k);
  if (rc != 0)
    gq_kubeconfig_release(out);
  return rc;
}

/* ---- token files -----------------------------------------------------------
 */

int gq_kubeconfig_read_token_file(const char *path, char **token, char *err,
                                  size_t errlen)
{
  char *data;
  size_t len;
  int rc;

  clear_err(err, errlen);
  if (token)
    *token = NULL;
  if (!path || !token)
    return set_err(err, errlen, GQ_EINVAL, "no token file given");
  rc = read_capped(path, GQ_KUBECONFIG_MAX_TOKEN, &data, &len);
  if (rc == GQ_ETOOBIG)
    return set_err(err, errlen, rc, "token file '%s' is larger than %zu bytes",
                   path, GQ_KUBECONFIG_MAX_TOKEN);
  if (rc != 0)
    return set_err(err, errlen, GQ_EIO, "cannot read token file '%s': %s", path,
                   strerror(-rc));
  while (len > 0 && is_space(data[len - 1]))
    data[--len] = '\0';
  if (len == 0 || has_control(data) || strlen(data) != len) {
    free(data);
    return set_err(err, errlen, GQ_EINVAL,
                   len == 0 ? "token file '%s' is empty"
                            : "token file '%s' holds control characters",
                   path);
  }
  *token = data;
  return 0;
}

/* ---- in-cluster
 * -------------------------------------------------------------- */

static int port_ok(const char *s)
{
  long v = 0;

  if (!*s || strlen(s) > 5)
    return 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return 0;
    v = v * 10 + (*p - '0');
  }
  return v >= 1 && v <= 65535;
}

/* "https://host:port", bracketing an IPv6 host (net.JoinHostPort). */
static char *join_host_port(const char *host, const char *port)
{
  if (strchr(host, ':') && host[0] != '[')
    return gq_xasprintf("https://[%s]:%s", host, port);
  return gq_xasprintf("https://%s:%s", host, port);
}

static int ic_token(const char *dir, struct gq_kubeconfig *out, char *err,
                    size_t errlen)
{
  char msg[512];
  int rc;

  out->token_file = gq_xasprintf("%s/token", dir);
  rc = gq_kubeconfig_read_token_file(out->token_file, &out->token, msg,
                                     sizeof(msg));
  return rc ? set_err(err, errlen, rc, "in-cluster config: %s", msg) : 0;
}

/* Reads dir/name into *data; a missing file gives 0 with *data NULL. */
static int ic_read(const char *dir, const char *name, size_t cap, char **path,
                   char **data, size_t *len, char *err, size_t errlen)
{
  int rc;

  *path = gq_xasprintf("%s/%s", dir, name);
  rc = read_capped(*path, cap, data, len);
  if (rc == -ENOENT)
    return 0;
  if (rc == GQ_ETOOBIG)
    return set_err(err, errlen, rc,
                   "in-cluster config: '%s' is larger than "
                   "%zu bytes",
                   *path, cap);
  if (rc != 0)
    return set_err(err, errlen, GQ_EIO,
                   "in-cluster config: cannot read "
                   "'%s': %s",
                   *path, strerror(-rc));
  return 0;
}

static int ic_ca(const char *dir, struct gq_kubeconfig *out, char *err,
                 size_t errlen)
{
  char *path, *data = NULL;
  int rc = ic_read(dir, "ca.crt", GQ_KUBECONFIG_MAX_PEM, &path, &data,
                   &out->ca_len, err, errlen);

  if (rc == 0 && data) {
    out->ca_data = (unsigned char *)data;
    out->ca_file = path;
    return 0;
  }
  free(path);
  return rc;
}

/* $POD_NAMESPACE, else the namespace file (trimmed), else "default". */
static int ic_namespace(const char *dir, struct gq_kubeconfig *out, char *err,
                        size_t errlen)
{
  const char *env = getenv("POD_NAMESPACE");
  char *path, *data = NULL, *p;
  size_t len;
  int rc;

  if (nonempty(env)) {
    out->namespace_ = gq_xstrdup(env);
    return 0;
  }
  rc = ic_read(dir, "namespace", MAX_FIELD, &path, &data, &len, err, errlen);
  free(path);
  for (p = data; p && is_space(*p); p++)
    ;
  while (len > 0 && data && is_space(data[len - 1]))
    data[--len] = '\0';
  out->namespace_ = gq_xstrdup(rc == 0 && nonempty(p) ? p : "default");
  free(data);
  return rc;
}

int gq_kubeconfig_in_cluster(const char *sa_dir, struct gq_kubeconfig *out,
                             char *err, size_t errlen)
{
  const char *host = getenv("KUBERNETES_SERVICE_HOST");
  const char *port = getenv("KUBERNETES_SERVICE_PORT");
  const char *dir = sa_dir ? sa_dir : GQ_KUBECONFIG_SA_DIR;
  int rc;

  clear_err(err, errlen);
  if (!out)
    return set_err(err, errlen, GQ_EINVAL,
                   "in-cluster config: no output "
                   "given");
  memset(out, 0, sizeof(*out));
  if (!nonempty(host) || !nonempty(port))
    return set_err(err, errlen, GQ_ENOTFOUND,
                   "not running in a cluster: "
                   "KUBERNETES_SERVICE_%s is not set",
                   nonempty(host) ? "PORT" : "HOST");
  if (!port_ok(port))
    return set_err(err, errlen, GQ_EINVAL,
                   "in-cluster config: "
                   "KUBERNETES_SERVICE_PORT must be a port number, got '%s'",
                   port);
  out->server = join_host_port(host, port);
  rc = ic_token(dir, out, err, errlen);
  if (rc == 0)
    rc = ic_ca(dir, out, err, errlen);
  if (rc == 0)
    rc = ic_namespace(dir, out, err, errlen);
  if (rc != 0) {
    gq_kubeconfig_release(out);
    return rc;
  }
  out->source = gq_xstrdup("in-cluster");
  return 0;
}

void gq_kubeconfig_release(struct gq_kubeconfig *c)
{
  if (!c)
    return;
  free(c->server);
  free(c->context);
  free(c->cluster_name);
  free(c->user_name);
  free(c->namespace_);
  free(c->ca_data);
  free(c->ca_file);
  free(c->tls_server_name);
  free(c->token);
  free(c->token_file);
  free(c->cert_data);
  free(c->key_data);
  gq_exec_config_free(c->exec);
  free(c->source);
  memset(c, 0, sizeof(*c));
}
