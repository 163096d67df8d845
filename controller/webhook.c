/* controller/webhook.c - the admission webhooks over HTTPS (see
 * webhook.h): the server, its TeamQuotas and its certificate reload. The
 * AdmissionReview is decoded and rendered by api/admission.c; the
 * decisions are decide/admission.c. */
#include "controller/webhook.h"

#include <errno.h>
#include <jansson.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/admission.h"
#include "api/gpujob.h"
#include "api/httpd.h"
#include "api/informer.h"
#include "api/json.h"
#include "api/teamquota.h"
#include "base/alloc.h"
#include "base/err.h"
#include "base/log.h"
#include "controller/metrics.h"
#include "decide/admission.h"
#include "decide/gpujob.h"

#define JSON_CTYPE "application/json"
#define TEXT_CTYPE "text/plain; charset=utf-8"

static const struct gq_lc lc = {"controller", "webhook", NULL};

/* What identifies a file's content cheaply: a Secret volume replaces the
 * file (new inode) through its ..data symlink, an editor rewrites it (new
 * mtime or size). */
struct file_sig {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
};

struct gq_webhook {
  uv_loop_t *loop;
  struct gq_webhook_opts o;
  char host[64];
  int port;
  struct gq_httpd *httpd;
  char *cert, *key;                  /* the PEM pair serving now */
  struct file_sig cert_sig, key_sig; /* last seen (loaded or not) */
  unsigned generation;
  uv_timer_t reload;
  struct gq_informer *quotas;
  struct gq_metric *requests; /* NULL without a registry */
};

/* ---- certificate pair --------------------------------------------------- */

/* Reads a whole (small) file: a new string, or NULL with err set. The
 * read blocks, but a local PEM file is a few KB, read once per change. */
static char *read_pem(const char *path, char *err, size_t errlen)
{
  FILE *f = fopen(path, "rb");
  struct gq_buf b;
  char chunk[4096];
  size_t n;

  if (!f) {
    snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
    return NULL;
  }
  gq_buf_init(&b, GQ_WEBHOOK_MAX_PEM);
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
    if (gq_buf_append(&b, chunk, n) != 0) {
      snprintf(err, errlen, "cannot read '%s': larger than %u bytes", path,
               GQ_WEBHOOK_MAX_PEM);
      fclose(f);
      return NULL; /* gq_buf_append released b */
    }
  fclose(f);
  return gq_buf_take(&b);
}

/* 0 if cert (PEM, first certificate) and key (PEM private key) parse and
 * belong together (X509_check_private_key), else -1 with err naming the
 * file and the problem. */
static int check_pair(const struct gq_webhook_opts *o, const char *cert,
                      const char *key, char *err, size_t errlen)
{
  BIO *bc = BIO_new_mem_buf(cert, -1), *bk = BIO_new_mem_buf(key, -1);
  X509 *x = bc ? PEM_read_bio_X509(bc, NULL, NULL, NULL) : NULL;
  EVP_PKEY *k = bk ? PEM_read_bio_PrivateKey(bk, NULL, NULL, NULL) : NULL;
  int rc = -1;

  if (!x)
    snprintf(err, errlen, "--webhook-cert '%s': no PEM certificate",
             o->cert_file);
  else if (!k)
    snprintf(err, errlen,
             "--webhook-key '%s': no PEM private key (or it "
             "is encrypted)",
             o->key_file);
  else if (X509_check_private_key(x, k) != 1)
    snprintf(err, errlen,
             "--webhook-key '%s' does not match the "
             "certificate in --webhook-cert '%s'",
             o->key_file, o->cert_file);
  else
    rc = 0;
  X509_free(x);
  EVP_PKEY_free(k);
  BIO_free(bc);
  BIO_free(bk);
  return rc;
}

static void file_sig(const char *path, struct file_sig *s)
{
  struct stat st;

  memset(s, 0, sizeof(*s));
  if (stat(path, &st) != 0)
    return; /* all zero: "missing", a change like any other */
  s->dev = st.st_dev;
  s->ino = st.st_ino;
  s->size = st.st_size;
  s->mtime = st.st_mtim;
}

static int same_sig(const struct file_sig *a, const struct file_sig *b)
{
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtime.tv_sec == b->mtime.tv_sec &&
         a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* Reads and checks the pair: 0 with new strings in *cert and *key, or -1
 * with err set (nothing to free). */
static int load_pair(const struct gq_webhook_opts *o, char **cert, char **key,
                     char *err, size_t errlen)
{
  *cert = read_pem(o->cert_file, err, errlen);
  *key = *cert ? read_pem(o->key_file, err, errlen) : NULL;
  if (*key && check_pair(o, *cert, *key, err, errlen) == 0)
    return 0;
  free(*cert);
  free(*key);
  *cert = *key = NULL;
  return -1;
}

/* ---- requests ----------------------------------------------------------- */

struct tq_list {
  const struct gq_teamquota **v;
  size_t n, cap;
};

static void collect_tq(const json_t *obj, void *typed, void *arg)
{
  struct tq_list *l = arg;

  (void)obj;
  if (!typed)
    return; /* invalid TeamQuota: it admits nothing */
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 16;
    l->v = gq_xrealloc(l->v, l->cap * sizeof(*l->v));
  }
  l->v[l->n++] = typed;
}

static int cmp_tq(const void *a, const void *b)
{
  const struct gq_teamquota *x = *(const struct gq_teamquota *const *)a;
  const struct gq_teamquota *y = *(const struct gq_teamquota *const *)b;

  return strcmp(x->meta.name, y->meta.name);
}

static void respond_text(struct gq_http_req *r, unsigned status,
                         const char *text)
{
  gq_http_respond(r, status, TEXT_CTYPE, text, strlen(text), NULL);
}

/* Decides one decoded review and answers it. */
static void answer(struct gq_webhook *w, struct gq_http_req *r,
                   const struct gq_admission_review *rv, int mutate)
{
  struct tq_list l = {0};
  struct gq_adm_result res;
  const char *user =
      w->o.controller_user ? w->o.controller_user : GQ_CONTROLLER_USER;
  const char *labels[2];
  json_t *out;
  char *text;

  gq_informer_foreach(w->quotas, collect_tq, &l);
  if (l.n)
    qsort(l.v, l.n, sizeof(*l.v), cmp_tq);
  if (mutate)
    gq_adm_mutate(&rv->req, l.v, l.n, &res);
  else
    gq_adm_validate(&rv->req, l.v, l.n, user, &res);
  free(l.v);
  out = gq_admission_response(rv->uid, &res);
  text = json_dumps(out, JSON_COMPACT);
  json_decref(out);
  gq_http_respond(r, 200, JSON_CTYPE, text, strlen(text), NULL);
  free(text);
  labels[0] = mutate ? "mutate" : "validate";
  labels[1] = res.allowed ? "true" : "false";
  if (w->requests)
    gq_metric_add(w->requests, labels, 1);
  if (!res.allowed || res.n_ops)
    GQ_LOG(GQ_DEBUG, &lc, "%s uid=%s ns=%s user=%s: %s", labels[0], rv->uid,
           rv->req.ns, rv->req.user, res.allowed ? "patched" : res.msg);
}

/* 400 with the problem as text. */
static void bad_request(struct gq_http_req *r, const char *what)
{
  char msg[GQ_DEC_MSG_MAX + 64];

  snprintf(msg, sizeof(msg), "malformed AdmissionReview: %s", what);
  respond_text(r, 400, msg);
}

static void on_review(struct gq_webhook *w, struct gq_http_req *r, int mutate)
{
  struct gq_admission_review rv;
  char err[GQ_DEC_MSG_MAX];
  json_error_t je;
  size_t len;
  const char *body = gq_http_body(r, &len);
  json_t *root = json_loadb(body, len, 0, &je);

  if (!root) {
    snprintf(err, sizeof(err), "body: not JSON: %s (line %d, column %d)",
             je.text, je.line, je.column);
    bad_request(r, err);
    return;
  }
  if (gq_admission_review_decode(root, &rv, err, sizeof(err)) != 0) {
    bad_request(r, err);
  } else {
    answer(w, r, &rv, mutate);
    gq_admission_review_release(&rv);
  }
  json_decref(root);
}

static void on_request(struct gq_http_req *r, void *arg)
{
  static const char *const allow[] = {"Allow", "POST", NULL};
  struct gq_webhook *w = arg;
  const char *path = gq_http_path(r);
  int mutate = !strcmp(path, "/mutate");

  if (!mutate && strcmp(path, "/validate")) {
    respond_text(r, 404,
                 "404 page not found: the webhooks are /mutate and "
                 "/validate");
  } else if (strcmp(gq_http_method(r), "POST")) {
    static const char msg[] = "method not allowed: POST an AdmissionReview";

    gq_http_respond(r, 405, TEXT_CTYPE, msg, sizeof(msg) - 1, allow);
  } else if (!gq_informer_synced(w->quotas)) {
    respond_text(r, 503, "TeamQuotas not listed yet: try again");
  } else {
    on_review(w, r, mutate);
  }
}

/* ---- server and reload -------------------------------------------------- */

/* Serves the pair (taken on success) on w->port. 0, or an error with err
 * set (cert and key still the caller's). */
static int serve(struct gq_webhook *w, char *cert, char *key, char *err,
                 size_t errlen)
{
  struct gq_httpd_opts ho = {w->host, w->port, cert, key, GQ_WEBHOOK_MAX_BODY};
  int rc = gq_httpd_start(w->loop, &ho, on_request, w, &w->httpd, err, errlen);

  if (rc != 0)
    return rc;
  w->port = gq_httpd_port(w->httpd);
  free(w->cert);
  free(w->key);
  w->cert = cert;
  w->key = key;
  w->generation++;
  return 0;
}

/* Restarts the server on the same port with the new pair (taken); on
 * failure goes back to the old pair. */
static void swap_pair(struct gq_webhook *w, char *cert, char *key)
{
  char err[512], err2[512];

  gq_httpd_close(w->httpd); /* closes the listening socket now */
  w->httpd = NULL;
  if (serve(w, cert, key, err, sizeof(err)) == 0) {
    GQ_LOG(GQ_INFO, &lc, "serving the new certificate from '%s' on port %d "
           "(pair %u)", w->o.cert_file, w->port, w->generation);
    return;
  }
  free(cert);
  free(key);
  GQ_LOG(GQ_ERROR, &lc,
         "cannot serve the new certificate: %s; keeping the "
         "old one",
         err);
  if (serve(w, w->cert, w->key, err2, sizeof(err2)) != 0) {
    /* w->cert/key stay owned; the next tick tries again */
    GQ_LOG(GQ_ERROR, &lc, "cannot serve the webhooks: %s", err2);
  }
}

static void on_reload(uv_timer_t *t)
{
  struct gq_webhook *w = t->data;
  struct file_sig c, k;
  char *cert, *key, err[512];

  file_sig(w->o.cert_file, &c);
  file_sig(w->o.key_file, &k);
  if (same_sig(&c, &w->cert_sig) && same_sig(&k, &w->key_sig) && w->httpd)
    return;
  w->cert_sig = c;
  w->key_sig = k;
  if (load_pair(&w->o, &cert, &key, err, sizeof(err)) != 0) {
    /* Logged once per change: a cert written before its key is fixed by
     * the key's own change a tick later. */
    GQ_LOG(GQ_ERROR, &lc,
           "cannot reload the webhook certificate: %s; "
           "keeping the old one",
           err);
    return;
  }
  if (w->httpd && !strcmp(cert, w->cert) && !strcmp(key, w->key)) {
    free(cert); /* touched, not changed */
    free(key);
    return;
  }
  swap_pair(w, cert, key);
}

/* The first pair and the first server. */
static int first_start(struct gq_webhook *w, char *err, size_t errlen)
{
  char *cert, *key;
  int rc;

  if (gq_httpd_parse_addr(w->o.addr, w->host, sizeof(w->host), &w->port)) {
    snprintf(err, errlen,
             "--webhook-addr: invalid listen address '%s': "
             "want IPV4:PORT or [IPV6]:PORT",
             w->o.addr);
    return GQ_EINVAL;
  }
  if (!w->o.cert_file || !w->o.key_file) {
    snprintf(err, errlen,
             "--webhook-addr needs --webhook-cert and "
             "--webhook-key (PEM files)");
    return GQ_EINVAL;
  }
  file_sig(w->o.cert_file, &w->cert_sig);
  file_sig(w->o.key_file, &w->key_sig);
  if (load_pair(&w->o, &cert, &key, err, errlen) != 0)
    return GQ_EINVAL;
  if ((rc = serve(w, cert, key, err, errlen)) != 0) {
    free(cert);
    free(key);
  }
  return rc;
}

static void on_quotas_synced(void *arg)
{
  struct gq_webhook *w = arg;

  GQ_LOG(GQ_INFO, &lc, "admission webhooks answering: %zu TeamQuotas listed",
         gq_informer_size(w->quotas));
}

int gq_webhook_start(uv_loop_t *loop, struct gq_kclient *kc,
                     const struct gq_webhook_opts *o, struct gq_webhook **out,
                     char *err, size_t errlen)
{
  static const char *const names[] = {"webhook", "allowed"};
  struct gq_informer_handlers h = {0};
  struct gq_informer_opts io = {0};
  struct gq_webhook *w = gq_xcalloc(1, sizeof(*w));
  int rc;

  w->loop = loop;
  w->o = *o;
  if (!w->o.reload_ms)
    w->o.reload_ms = GQ_WEBHOOK_RELOAD_MS;
  if ((rc = first_start(w, err, errlen)) != 0) {
    free(w);
    return rc;
  }
  if (o->metrics)
    w->requests = gq_metrics_counter(
        o->metrics, "gpuq_webhook_requests_total",
        "AdmissionReviews answered, by webhook (mutate, validate) and "
        "verdict",
        2, names);
  h.synced = on_quotas_synced;
  h.decode = gq_teamquota_decode_new;
  h.release = gq_teamquota_free;
  io.path = "/apis/" GQ_GROUP "/" GQ_VERSION "/teamquotas";
  w->quotas = gq_informer_start(kc, &io, &h, w);
  uv_timer_init(loop, &w->reload);
  w->reload.data = w;
  uv_timer_start(&w->reload, on_reload, w->o.reload_ms, w->o.reload_ms);
  *out = w;
  return 0;
}

int gq_webhook_port(const struct gq_webhook *w)
{
  return w->port;
}

static void on_reload_closed(uv_handle_t *h)
{
  struct gq_webhook *w = h->data;

  free(w->cert);
  free(w->key);
  free(w);
}

void gq_webhook_close(struct gq_webhook *w)
{
  if (!w)
    return;
  gq_httpd_close(w->httpd);
  gq_informer_stop(w->quotas);
  uv_close((uv_handle_t *)&w->reload, on_reload_closed);
}
