/* api/yaml.h - YAML streams read into jansson values.
 *
 * gpuq works on JSON internally (the API server speaks JSON), but people
 * write manifests, CRDs and scenario files in YAML. This module turns a YAML
 * stream into an array of json_t values, one per document, so the decoders
 * in api/ see the same shapes whichever format a file used. It uses
 * libyaml's event parser and builds the values itself, which keeps every
 * error tied to a line and column.
 *
 * Scalar rules. Plain (unquoted) scalars are resolved by the YAML 1.2 core
 * schema (yaml.org/spec/1.2.2, section 10.3.2): null, booleans, integers
 * (decimal, 0o octal, 0x hex) and floats; "yes", "on" and the like stay
 * strings. Quoted and block (| >) scalars are always strings. The tags !!str,
 * !!int, !!float, !!bool, !!null, !!map and !!seq are honoured and checked;
 * the non-specific tag "!" makes a scalar a string; any other tag is an
 * error, so nothing is silently misread. JSON cannot hold NaN or infinity, so
 * .nan, .inf and floats that overflow a double are errors; integers that
 * overflow int64 become reals, as they would in a JSON parser.
 *
 * Mappings. Keys must be scalars and are taken as their text ("1: x" gives
 * the key "1"); a key may also be an alias to a string. Duplicate keys are
 * an error. The YAML 1.1 merge key "<<" (yaml.org/type/merge.html) merges a
 * mapping or a sequence of mappings: keys written in the mapping win, and
 * among merged mappings the earlier one wins.
 *
 * Ownership: the loader returns a new reference that the caller releases
 * with json_decref(). An alias yields the *same* json_t as its anchor (a
 * shared reference, not a copy), so treat the result as read-only or
 * json_deep_copy() a value before changing it.
 *
 * Limits (STYLE: every input is capped and returns GQ_ETOOBIG): the input
 * size, the nesting depth (the loader recurses once per level) and the number
 * of nodes reached through aliases, counted transitively, so a "billion
 * laughs" document is refused before anyone serialises the shared tree.
 *
 * Threading: no global state; concurrent calls are safe.
 */
#ifndef GQ_API_YAML_H
#define GQ_API_YAML_H
#include <stddef.h>

#include <jansson.h>

/* Largest accepted input, in bytes (64 MiB). */
#define GQ_YAML_MAX_BYTES ((size_t)64 * 1024 * 1024)
/* Deepest accepted nesting of mappings and sequences; the top-level
 * collection of a document is depth 1. An alias counts as the collections
 * inside its anchor, so aliases cannot build a deeper tree either. */
#define GQ_YAML_MAX_DEPTH 256
/* Most nodes that aliases may stand for in one call. An alias to a scalar
 * counts 1; an alias to a collection counts every node inside it, including
 * nodes that were themselves reached through aliases. */
#define GQ_YAML_MAX_ALIAS_NODES 100000

/* Parses the YAML stream text[0..len) (UTF-8, UTF-16 with a BOM also works,
 * as libyaml detects it; it need not be NUL-terminated; text may be NULL if
 * len is 0).
 *
 * Returns 0 and stores in *docs_out a new reference to a JSON array with one
 * value per document. Empty documents (a trailing "---", a file of only
 * comments) are skipped, so the array may be empty; "--- null" is a document
 * holding null and is kept.
 *
 * On failure returns a negative code, sets *docs_out to NULL and, if err is
 * not NULL and errlen > 0, writes a NUL-terminated message in git's style
 * ("3:5: duplicate mapping key 'team'", line and column 1-based):
 *   GQ_EINVAL   docs_out is NULL, or text is NULL with len > 0
 *   GQ_EPARSE   YAML syntax (libyaml's problem text and position), an
 *               undefined alias, a non-scalar or duplicate key, a bad merge
 *               value, an unsupported tag, a tagged scalar that does not
 *               parse as its tag, NaN or infinity
 *   GQ_ETOOBIG  len > GQ_YAML_MAX_BYTES, nesting (directly or through
 *               an alias) deeper than GQ_YAML_MAX_DEPTH, or aliases
 *               standing for more than GQ_YAML_MAX_ALIAS_NODES nodes
 *   GQ_ENOMEM   libyaml or jansson could not allocate
 * On success err is set to "" (if given). text is borrowed for the call. */
int gq_yaml_parse(const char *text, size_t len, json_t **docs_out, char *err,
                  size_t errlen);

/* Reads the file at 'path' and parses it as gq_yaml_parse() does; messages
 * start with the path ("examples/x.yaml:3:5: ..."). Returns what
 * gq_yaml_parse() returns, plus:
 *   GQ_EIO      the file cannot be opened or read ("cannot open 'p': ...",
 *               with strerror's text)
 *   GQ_ETOOBIG  the file is larger than GQ_YAML_MAX_BYTES (detected while
 *               reading, so a growing file or a pipe is capped too)
 * path is borrowed; *docs_out is a new reference on success, NULL on
 * failure. */
int gq_yaml_load_file(const char *path, json_t **docs_out, char *err,
                      size_t errlen);

#endif
