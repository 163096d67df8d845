/* sim/protobuf.c - protobuf envelope and ObjectMeta (see protobuf.h);
 * wire format per https://protobuf.dev/programming-guides/encoding/. */
#include "sim/protobuf.h"

#include <stdint.h>
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
