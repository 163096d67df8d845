/* sim/dump.h - compact JSON text of the objects gpuq-sim sends.
 *
 * json_dumps() checks every object and array it writes for a reference
 * loop: a snprintf of the pointer and a hash table insert and delete per
 * container. A managedFields tree is hundreds of tiny objects ({} per
 * owned field), so that check was most of what a reply or a watch event
 * cost once objects carried managedFields (bench/README.md "sim_cost").
 * gq_sim_dumps() writes the same bytes as json_dumps(v, JSON_COMPACT |
 * JSON_ENCODE_ANY) without it: the trees gpuq-sim stores come from the
 * parser and from its own code, which make no loops, and depth is capped
 * instead. A managedFields entry's fieldsV1, or a part of one ("f:spec"),
 * that sim/fields.c shares between objects is not walked at all: its text,
 * kept since it was interned, is copied in (gq_fields_v1_text()).
 */
#ifndef GQ_SIM_DUMP_H
#define GQ_SIM_DUMP_H
#include <jansson.h>
#include <stddef.h>

/* Deepest nesting written; deeper is an error (jansson's parser stops at
 * 2,048 levels, so no parsed body comes near it). */
#define GQ_SIM_DUMP_MAX_DEPTH 4096

/* The compact JSON text of v, byte for byte what json_dumps(v,
 * JSON_COMPACT | JSON_ENCODE_ANY) writes: keys in the object's own order,
 * strings escaped as jansson escapes them (\" \\ \b \f \n \r \t, other
 * control bytes as \u00XX with upper-case hex, everything else as is),
 * integers in decimal, reals through jansson itself. Returns a heap string
 * the caller frees, with its length in *len (len may be NULL); NULL when v
 * is NULL or nested deeper than GQ_SIM_DUMP_MAX_DEPTH. */
char *gq_sim_dumps(const json_t *v, size_t *len);

/* As gq_sim_dumps(), between prefix and suffix (both NUL-terminated, may be
 * ""): "{\"type\":\"ADDED\",\"object\":" + v + "}" for a watch event
 * without building the event object. */
char *gq_sim_dumps_framed(const char *prefix, const json_t *v,
                          const char *suffix, size_t *len);

/* A growing text, for writers of JSON by hand (sim/fields.c writes a
 * create's FieldsV1 this way). Start it zeroed; free(t.p) when done. After
 * any put, t.p is NUL-terminated. */
struct gq_sim_text {
  char *p;
  size_t len, cap;
};
/* Appends n bytes of s. */
void gq_sim_text_put(struct gq_sim_text *t, const char *s, size_t n);
/* Appends the n bytes of s escaped as inside a JSON string (no quotes),
 * as gq_sim_dumps() escapes them. */
void gq_sim_text_escaped(struct gq_sim_text *t, const char *s, size_t n);

#endif
