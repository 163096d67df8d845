/* api/prom.c - Prometheus HTTP API instant queries (see prom.h). */
#include "api/prom.h"

#include "api/hclient.h"
#include "base/alloc.h"
#include "base/err.h"

#include <curl/curl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gq_prom {
  struct gq_hclient *http;
  char *base;
  long timeout_ms;
};

struct pquery {
  struct gq_prom *p;
  gq_prom_cb cb;
  void *arg;
};

void gq_prom_vector_free(struct gq_prom_vector *v)
{
  free(v->v);
  json_decref(v->doc);
  *v = (struct gq_prom_vector){0};
}

const char *gq_prom_label(const struct gq_prom_sample *s, const char *name)
{
  const char *v = json_string_value(json_object_get(s->metric, name));

  return v ? v : "";
}

/* Reads result[i] into *s: 1 read, 0 skipped (not finite), -1 malformed. */
static int read_sample(const json_t *e, size_t i, struct gq_prom_sample *s,
                       char *err, size_t errlen)
{
  const json_t *m = json_object_get(e, "metric");
  const json_t *val = json_object_get(e, "value");
  const char *str = json_string_value(json_array_get(val, 1));
  char *end;
  double d;

  if (!json_is_object(m)) {
    snprintf(err, errlen, "data.result[%zu].metric: must be an object", i);
    return -1;
  }
  if (!json_is_array(val) || json_array_size(val) != 2 ||
      !json_is_number(json_array_get(val, 0)) || !str) {
    snprintf(err, errlen, "data.result[%zu].value: must be [time, \"value\"]",
             i);
    return -1;
  }
  d = strtod(str, &end);
  if (end == str || *end) {
    snprintf(err, errlen, "data.result[%zu].value: not a number: \"%.64s\"",
             i, str);
    return -1;
  }
  if (!isfinite(d))
    return 0;
  s->metric = m;
  s->value = d;
  return 1;
}

/* Checks status and resultType; returns data.result or NULL (err set). */
static const json_t *result_of(const json_t *doc, char *err, size_t errlen)
{
  const char *st = json_string_value(json_object_get(doc, "status"));
  const json_t *data = json_object_get(doc, "data");
  const char *rt = json_string_value(json_object_get(data, "resultType"));
  const json_t *res = json_object_get(data, "result");

  if (!st || strcmp(st, "success")) {
    const char *et = json_string_value(json_object_get(doc, "errorType"));
    const char *e = json_string_value(json_object_get(doc, "error"));

    snprintf(err, errlen, "status: \"%.32s\" (%.32s: %.200s)",
             st ? st : "(none)", et ? et : "no errorType",
             e ? e : "no error message");
    return NULL;
  }
  if (!rt || strcmp(rt, "vector")) {
    snprintf(err, errlen, "data.resultType: want \"vector\", got \"%.32s\"",
             rt ? rt : "(none)");
    return NULL;
  }
  if (!json_is_array(res)) {
    snprintf(err, errlen, "data.result: must be an array");
    return NULL;
  }
  if (json_array_size(res) > GQ_PROM_MAX_SAMPLES) {
    snprintf(err, errlen, "data.result: %zu samples, more than the limit %u",
             json_array_size(res), GQ_PROM_MAX_SAMPLES);
    return NULL;
  }
  return res;
}

int gq_prom_parse_vector(const char *body, size_t len,
                         struct gq_prom_vector *out, char *err, size_t errlen)
{
  json_error_t je;
  const json_t *res;
  const json_t *e;
  size_t i;

  *out = (struct gq_prom_vector){0};
  out->doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  if (!out->doc) {
    snprintf(err, errlen, "not JSON: %s (line %d)", je.text, je.line);
    return GQ_EPARSE;
  }
  res = result_of(out->doc, err, errlen);
  if (!res) {
    gq_prom_vector_free(out);
    return GQ_EPARSE;
  }
  out->v = gq_xcalloc(json_array_size(res) + 1, sizeof(*out->v));
  json_array_foreach(res, i, e) {
    int r = read_sample(e, i, &out->v[out->n], err, errlen);

    if (r < 0) {
      gq_prom_vector_free(out);
      return GQ_EPARSE;
    }
    out->n += (size_t)r;
  }
  return 0;
}

int gq_prom_new(uv_loop_t *loop, const char *base_url, long timeout_ms,
                struct gq_prom **out)
{
  struct gq_prom *p;
  size_t n;

  if (!base_url || (strncmp(base_url, "http://", 7) &&
                    strncmp(base_url, "https://", 8)))
    return GQ_EINVAL;
  p = gq_xcalloc(1, sizeof(*p));
  if (gq_hclient_new(loop, "gpuq-controller", &p->http) != 0) {
    free(p);
    return GQ_EIO;
  }
  p->base = gq_xstrdup(base_url);
  n = strlen(p->base);
  while (n > 0 && p->base[n - 1] == '/')
    p->base[--n] = '\0';
  p->timeout_ms = timeout_ms;
  *out = p;
  return 0;
}

const char *gq_prom_url(const struct gq_prom *p) { return p->base; }

static void on_done(int rc, long status, const char *body, size_t len,
                    const char *retry_after, const char *err, void *arg)
{
  struct pquery *q = arg;
  struct gq_prom_vector v = {0};
  char msg[512];

  (void)retry_after;
  if (rc == 0 && status != 200) {
    /* Prometheus answers 400/422/503 with the same JSON envelope */
    char why[384] = "";

    if (gq_prom_parse_vector(body, len, &v, why, sizeof(why)) == 0)
      snprintf(why, sizeof(why), "unexpected answer");
    gq_prom_vector_free(&v);
    snprintf(msg, sizeof(msg), "%s/api/v1/query: HTTP %ld: %s", q->p->base,
             status, why);
    rc = GQ_EIO;
  } else if (rc == 0) {
    char why[384];

    rc = gq_prom_parse_vector(body, len, &v, why, sizeof(why));
    if (rc)
      snprintf(msg, sizeof(msg), "%s/api/v1/query: %s", q->p->base, why);
  } else if (rc == GQ_ECANCELED) {
    snprintf(msg, sizeof(msg), "query canceled"); /* q->p may be gone */
  } else {
    snprintf(msg, sizeof(msg), "%s/api/v1/query: %s", q->p->base,
             err && *err ? err : gq_strerror(rc));
  }
  q->cb(rc, rc ? NULL : &v, rc ? msg : NULL, q->arg);
  gq_prom_vector_free(&v);
  free(q);
}

int gq_prom_query(struct gq_prom *p, const char *promql, gq_prom_cb cb,
                  void *arg)
{
  char *enc = curl_easy_escape(NULL, promql, 0);
  char *url;
  struct pquery *q;
  struct gq_hclient_opts o = {.method = "GET",
                              .timeout_ms = p->timeout_ms,
                              .max_body = GQ_PROM_MAX_BODY};

  if (!enc)
    return GQ_ENOMEM;
  url = gq_xasprintf("%s/api/v1/query?query=%s", p->base, enc);
  curl_free(enc);
  q = gq_xcalloc(1, sizeof(*q));
  *q = (struct pquery){p, cb, arg};
  o.url = url;
  if (!gq_hclient_do(p->http, &o, NULL, on_done, q)) {
    free(url);
    free(q);
    return GQ_EIO;
  }
  free(url); /* hclient copies the URL into curl */
  return 0;
}

void gq_prom_close(struct gq_prom *p)
{
  if (!p)
    return;
  gq_hclient_close(p->http);
  free(p->base);
  free(p);
}
