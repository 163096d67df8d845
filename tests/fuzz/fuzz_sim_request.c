/* gpuq-sim's reading of an API request (sim/request.h), without a server:
 *   line 1   METHOD PATH[?QUERY]   routed to a kind (404 if none); the
 *            query, split at '&' and '=' and %-decoded as libmicrohttpd
 *            does, checked (boolean parameters) and parsed (labelSelector,
 *            fieldSelector, limit, continue, resourceVersion,
 *            timeoutSeconds), the selectors then matched against the body
 *   line 2   Content-Type ("" for JSON)
 *   rest     the body, decoded (JSON, YAML or protobuf) and validated: by
 *            the CRD's schema (sim/schema.h: prune, default, validate) for
 *            GpuJob and TeamQuota, by the built-in checks otherwise.
 * The kinds, with the CRDs of crds/, are registered once. */
#include "fuzz.h"

#include "api/selector.h"
#include "api/yaml.h"
#include "sim/request.h"
#include "sim/schema.h"

#include <stdio.h>

#define MAX_PARAMS 32

struct query {
  size_t n;
  char *key[MAX_PARAMS], *val[MAX_PARAMS];
};

static struct gq_sim *sim_once(void)
{
  static struct gq_sim s;
  static const char *const crds[] = {"gpujobs.gpuq.dev.yaml",
                                     "teamquotas.gpuq.dev.yaml", NULL};
  static int ready;
  char path[1024], err[512];

  if (ready)
    return &s;
  ready = 1;
  gq_sim_kinds_init(&s);
  for (int i = 0; crds[i]; i++) {
    json_t *docs, *crd;
    size_t j;

    snprintf(path, sizeof(path), "%s/crds/%s", GQ_SOURCE_DIR, crds[i]);
    if (gq_yaml_load_file(path, &docs, err, sizeof(err)) != 0)
      abort(); /* the harness must see the real schemas */
    json_array_foreach(docs, j, crd) {
      json_t *c = json_deep_copy(crd);

      if (gq_sim_kind_from_crd(&s, c, err, sizeof(err)) != 0)
        abort();
      json_decref(c);
    }
    json_decref(docs);
  }
  return &s;
}

static int hex(int c)
{
  return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Decodes %XX and '+' in place, as MHD does for query arguments. */
static void unescape(char *s)
{
  char *o = s;

  for (; *s; s++) {
    if (*s == '%' && hex(s[1]) >= 0 && hex(s[2]) >= 0) {
      *o++ = (char)(hex(s[1]) * 16 + hex(s[2]));
      s += 2;
    } else {
      *o++ = *s == '+' ? ' ' : *s;
    }
  }
  *o = '\0';
}

/* Splits qs (modified) into q; the first of a repeated key wins. */
static void split_query(char *qs, struct query *q)
{
  char *save = qs;

  q->n = 0;
  while (save && *save && q->n < MAX_PARAMS) {
    char *amp = strchr(save, '&'), *eq;

    if (amp)
      *amp = '\0';
    eq = strchr(save, '=');
    if (eq)
      *eq = '\0';
    q->key[q->n] = save;
    q->val[q->n] = eq ? eq + 1 : save + strlen(save);
    unescape(q->key[q->n]);
    unescape(q->val[q->n]);
    q->n++;
    save = amp ? amp + 1 : NULL;
  }
}

static const char *lookup(void *arg, const char *key)
{
  const struct query *q = arg;

  for (size_t i = 0; i < q->n; i++)
    if (!strcmp(q->key[i], key))
      return q->val[i];
  return NULL;
}

static const char *field_of(const char *field, void *arg)
{
  static char buf[256];

  return gq_sim_field_value(arg, field, buf, sizeof(buf));
}

/* Decodes and validates the body as the create or update of r would. */
static void body(const struct gq_sim_req *r, const struct gq_sim_params *p,
                 int params_ok, const char *ctype, const char *b, size_t len)
{
  struct gq_schema_report rep;
  char err[1024];
  json_t *obj;
  int code;

  obj = gq_sim_body_decode(r->k, b, len, *ctype ? ctype : NULL, &code, err,
                           sizeof(err));
  if (!obj) {
    if (code != 400 && code != 415)
      abort();
    return;
  }
  if (json_is_object(obj)) {
    if (r->k->is_crd && r->k->schema) {
      gq_schema_report_init(&rep);
      gq_schema_process(r->k->schema, obj, 1, &rep);
      gq_schema_report_release(&rep);
    } else {
      gq_sim_builtin_check(r->k, obj, err, sizeof(err));
    }
    if (params_ok) {
      if (p->labels)
        gq_labelsel_match(p->labels, json_object_get(json_object_get(
                                         obj, "metadata"), "labels"));
      if (p->fields)
        gq_fieldsel_match(p->fields, field_of, obj);
    }
  }
  json_decref(obj);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  const uint8_t *nl1 = memchr(data, '\n', size), *nl2;
  char *line, *ctype, *sp, *qs, err[1024];
  char seg[GQ_SIM_MAX_SEGS][256];
  struct gq_sim_req r;
  struct gq_sim_params p;
  struct query q;
  int n, ok;

  if (!nl1 || !(nl2 = memchr(nl1 + 1, '\n', size - (size_t)(nl1 + 1 - data))))
    return 0;
  line = fuzz_cstr(data, (size_t)(nl1 - data));
  ctype = fuzz_cstr(nl1 + 1, (size_t)(nl2 - nl1 - 1));
  memset(&r, 0, sizeof(r));
  r.s = sim_once();
  sp = strchr(line, ' ');
  r.method = line;
  if (sp) {
    *sp = '\0';
    qs = strchr(sp + 1, '?');
    if (qs)
      *qs++ = '\0';
    n = gq_sim_split_path(sp + 1, seg);
    if (n >= 0 && gq_sim_route(&r, seg, n) == 0) {
      split_query(qs, &q);
      if (gq_sim_query_check(lookup, &q, err, sizeof(err)) == 0) {
        ok = gq_sim_params_parse(r.k, lookup, &q, &p, err, sizeof(err)) == 0;
        body(&r, &p, ok, ctype, (const char *)nl2 + 1,
             size - (size_t)(nl2 + 1 - data));
        if (ok)
          gq_sim_params_release(&p);
      }
    }
  }
  free(line);
  free(ctype);
  return 0;
}
