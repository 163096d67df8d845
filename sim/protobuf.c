/* sim/protobuf.c - protobuf envelope and ObjectMeta (see protobuf.h);
 * wire format per https://protobuf.dev/programming-guides/encoding/. */
#include "sim/protobuf.h"

#include "base/buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct pb {
  const unsigned char *p, *end;
};

static int varint(struct pb *b, uint64_t *v)
{
  *v = 0;
  for (int shift = 0; shift < 64 && b->p < b->end; shift += 7) {
    unsigned char c = *b->p++;

    *v |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80))
      return 0;
  }
  return -1;
}

/* Reads the next field: number, wire type, and for length-delimited
 * fields the sub-buffer. Skips other wire types. */
static int field(struct pb *b, uint64_t *num, struct pb *sub)
{
  uint64_t key, len;

  if (varint(b, &key) != 0)
    return -1;
  *num = key >> 3;
  sub->p = sub->end = NULL;
  switch (key & 7) {
  case 0:
    return varint(b, &len);
  case 1:
    if (b->end - b->p < 8)
      return -1;
    b->p += 8;
    return 0;
  case 5:
    if (b->end - b->p < 4)
      return -1;
    b->p += 4;
    return 0;
  case 2:
    if (varint(b, &len) != 0 || len > (uint64_t)(b->end - b->p))
      return -1;
    sub->p = b->p;
    sub->end = b->p + len;
    b->p += len;
    return 0;
  default:
    return -1;
  }
}

static json_t *str(const struct pb *s)
{
  return json_stringn((const char *)s->p, (size_t)(s->end - s->p));
}

/* A map<string,string> entry: key = 1, value = 2. */
static void map_entry(struct pb e, json_t *map)
{
  struct pb sub, k = {0}, v = {0};
  uint64_t num;

  while (e.p < e.end && field(&e, &num, &sub) == 0) {
    if (num == 1 && sub.p)
      k = sub;
    else if (num == 2 && sub.p)
      v = sub;
  }
  if (k.p) {
    json_t *key = str(&k);

    json_object_set_new(map, json_string_value(key),
                        v.p ? str(&v) : json_string(""));
    json_decref(key);
  }
}

static json_t *object_meta(struct pb m)
{
  json_t *meta = json_object(), *labels = json_object(), *ann = json_object();
  struct pb sub;
  uint64_t num;

  while (m.p < m.end && field(&m, &num, &sub) == 0) {
    if (!sub.p)
      continue;
    if (num == 1)
      json_object_set_new(meta, "name", str(&sub));
    else if (num == 2)
      json_object_set_new(meta, "generateName", str(&sub));
    else if (num == 3)
      json_object_set_new(meta, "namespace", str(&sub));
    else if (num == 11)
      map_entry(sub, labels);
    else if (num == 12)
      map_entry(sub, ann);
  }
  if (json_object_size(labels))
    json_object_set(meta, "labels", labels);
  if (json_object_size(ann))
    json_object_set(meta, "annotations", ann);
  json_decref(labels);
  json_decref(ann);
  return meta;
}

int gq_pb_is_protobuf(const char *body, size_t len)
{
  return len >= 4 && memcmp(body, "k8s\0", 4) == 0;
}

json_t *gq_pb_decode_meta(const char *body, size_t len)
{
  struct pb b = {(const unsigned char *)body + 4,
                 (const unsigned char *)body + len}, sub, raw = {0}, tm = {0};
  json_t *out = json_object();
  uint64_t num;

  if (!gq_pb_is_protobuf(body, len))
    goto bad;
  while (b.p < b.end) {
    if (field(&b, &num, &sub) != 0)
      goto bad;
    if (num == 1 && sub.p)
      tm = sub;
    else if (num == 2 && sub.p)
      raw = sub;
  }
  while (tm.p && tm.p < tm.end && field(&tm, &num, &sub) == 0)
    if (sub.p)
      json_object_set_new(out, num == 1 ? "apiVersion" : "kind", str(&sub));
  while (raw.p && raw.p < raw.end) {
    if (field(&raw, &num, &sub) != 0)
      goto bad;
    if (num == 1 && sub.p)
      json_object_set_new(out, "metadata", object_meta(sub));
  }
  if (!json_object_get(out, "metadata"))
    goto bad;
  return out;
bad:
  json_decref(out);
  return NULL;
}

/* --- encoding (openapi.v2.Document) --- */

/* No encoded document comes near this; it only gives the buffers a cap. */
#define PB_OUT_CAP ((size_t)1 << 30)

static void put_varint(struct gq_buf *b, uint64_t v)
{
  unsigned char c[10];
  size_t n = 0;

  do {
    c[n] = (unsigned char)(v & 0x7f);
    v >>= 7;
    if (v)
      c[n] |= 0x80;
    n++;
  } while (v);
  gq_buf_append(b, c, n);
}

static void put_bytes(struct gq_buf *b, unsigned num, const void *p, size_t n)
{
  put_varint(b, (uint64_t)num << 3 | 2);
  put_varint(b, n);
  gq_buf_append(b, p, n);
}

static void put_str(struct gq_buf *b, unsigned num, const char *s)
{
  if (s)
    put_bytes(b, num, s, strlen(s));
}

/* Appends the sub-message 'sub' as field num and releases it. */
static void put_msg(struct gq_buf *b, unsigned num, struct gq_buf *sub)
{
  put_bytes(b, num, sub->data ? sub->data : "", sub->len);
  gq_buf_release(sub);
}

static void schema_pb(const json_t *s, struct gq_buf *out);

/* Field num: a message whose field 1 is the schema s (ItemsItem,
 * AdditionalPropertiesItem). */
static void put_wrapped_schema(struct gq_buf *b, unsigned num, const json_t *s)
{
  struct gq_buf w, in;

  gq_buf_init(&w, PB_OUT_CAP);
  gq_buf_init(&in, PB_OUT_CAP);
  schema_pb(s, &in);
  put_msg(&w, 1, &in);
  put_msg(b, num, &w);
}

/* Field num: a message of repeated NamedSchema {name, schema} (field 1),
 * as Properties and Definitions are. */
static void put_named_schemas(struct gq_buf *b, unsigned num, const json_t *o)
{
  struct gq_buf m;
  const char *k;
  json_t *v;

  gq_buf_init(&m, PB_OUT_CAP);
  json_object_foreach((json_t *)o, k, v) {
    struct gq_buf named, sc;

    gq_buf_init(&named, PB_OUT_CAP);
    gq_buf_init(&sc, PB_OUT_CAP);
    put_str(&named, 1, k);
    schema_pb(v, &sc);
    put_msg(&named, 2, &sc);
    put_msg(&m, 1, &named);
  }
  put_msg(b, num, &m);
}

/* Field 31: NamedAny {name, Any {yaml = the value as JSON}}. */
static void put_extension(struct gq_buf *b, const char *name, const json_t *v)
{
  struct gq_buf named, any;
  char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

  gq_buf_init(&named, PB_OUT_CAP);
  gq_buf_init(&any, PB_OUT_CAP);
  put_str(&any, 2, text ? text : "null");
  free(text);
  put_str(&named, 1, name);
  put_msg(&named, 2, &any);
  put_msg(b, 31, &named);
}

/* openapi.v2.Schema, field numbers of OpenAPIv2.proto. */
static void schema_pb(const json_t *s, struct gq_buf *out)
{
  const json_t *v;
  const char *k;
  size_t i;
  json_t *e;

  put_str(out, 1, json_string_value(json_object_get(s, "$ref")));
  put_str(out, 2, json_string_value(json_object_get(s, "format")));
  put_str(out, 3, json_string_value(json_object_get(s, "title")));
  put_str(out, 4, json_string_value(json_object_get(s, "description")));
  json_array_foreach(json_object_get(s, "required"), i, e)
    put_str(out, 19, json_string_value(e));
  v = json_object_get(s, "additionalProperties");
  if (json_is_object(v)) {
    put_wrapped_schema(out, 21, v);
  } else if (json_is_boolean(v)) {
    struct gq_buf w;

    gq_buf_init(&w, PB_OUT_CAP);
    put_varint(&w, 2 << 3 | 0);
    put_varint(&w, json_is_true(v));
    put_msg(out, 21, &w);
  }
  v = json_object_get(s, "type");
  if (json_is_string(v) || json_is_array(v)) {
    struct gq_buf t;

    gq_buf_init(&t, PB_OUT_CAP);
    if (json_is_string(v))
      put_str(&t, 1, json_string_value(v));
    json_array_foreach(v, i, e)
      put_str(&t, 1, json_string_value(e));
    put_msg(out, 22, &t);
  }
  if (json_is_object(v = json_object_get(s, "items")))
    put_wrapped_schema(out, 23, v);
  json_array_foreach(json_object_get(s, "allOf"), i, e) {
    struct gq_buf sub;

    gq_buf_init(&sub, PB_OUT_CAP);
    schema_pb(e, &sub);
    put_msg(out, 24, &sub);
  }
  if (json_is_object(v = json_object_get(s, "properties")))
    put_named_schemas(out, 25, v);
  json_object_foreach((json_t *)s, k, e) {
    if (!strncmp(k, "x-", 2))
      put_extension(out, k, e);
  }
}

char *gq_pb_openapi_v2(const json_t *doc, size_t *len)
{
  const json_t *info = json_object_get(doc, "info");
  const json_t *defs = json_object_get(doc, "definitions");
  struct gq_buf out, in;
  char *bytes;

  gq_buf_init(&out, PB_OUT_CAP);
  put_str(&out, 1, json_string_value(json_object_get(doc, "swagger")));
  gq_buf_init(&in, PB_OUT_CAP);
  put_str(&in, 1, json_string_value(json_object_get(info, "title")));
  put_str(&in, 2, json_string_value(json_object_get(info, "version")));
  put_msg(&out, 2, &in);
  if (json_is_object(defs))
    put_named_schemas(&out, 9, defs);
  *len = out.len;
  bytes = gq_buf_take(&out);
  return bytes;
}
