/* tests/fuzz/fuzz.h - helpers shared by the libFuzzer harnesses.
 *
 * Each harness is one .c file defining LLVMFuzzerTestOneInput(): it hands
 * the fuzzer's bytes to one decoder and releases everything the decoder
 * returned, so a leak is a finding too. The same file links either with
 * libFuzzer (clang, -DGQ_FUZZ=ON, `make fuzz`) or with driver.c, which
 * replays a seed corpus once (gcc, the sanitizer build, `make test`).
 * Harnesses never print and keep no state between inputs (sim_request
 * registers gpuq-sim's kinds once, on the first input, and only reads them
 * after).
 */
#ifndef GQ_TESTS_FUZZ_H
#define GQ_TESTS_FUZZ_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The entry point libFuzzer and driver.c call, once per input. data is
 * borrowed for the call; returns 0 (a kept input). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Returns a new NUL-terminated copy of data (the caller free()s it). A NUL
 * inside the bytes ends the string early, as it would for a C caller. */
static inline char *fuzz_cstr(const uint8_t *data, size_t size)
{
  char *s = malloc(size + 1);

  if (!s)
    abort();
  if (size)
    memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

/* Parses data as one JSON document (any value at the top, NULs refused);
 * returns a new reference, or NULL when it is not JSON. */
static inline json_t *fuzz_json(const uint8_t *data, size_t size)
{
  return json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
}

/* A patch function of api/patch.h: target and patch borrowed, the result
 * in *out (new reference) on 0. */
typedef int (*fuzz_patch_fn)(const json_t *target, const json_t *patch,
                             json_t **out, char *err, size_t len);

/* The patch harnesses' input: data is a JSON array [target, patch];
 * anything else that parses is applied as a patch to {}. Runs fn on it and
 * releases everything; returns 0. */
static inline int fuzz_patch(const uint8_t *data, size_t size,
                             fuzz_patch_fn fn)
{
  json_t *doc = fuzz_json(data, size), *empty = json_object(), *out = NULL;
  const json_t *target = empty, *patch = doc;
  char err[256];

  if (doc) {
    if (json_is_array(doc) && json_array_size(doc) == 2) {
      target = json_array_get(doc, 0);
      patch = json_array_get(doc, 1);
    }
    if (fn(target, patch, &out, err, sizeof(err)) == 0)
      json_decref(out);
  }
  json_decref(doc);
  json_decref(empty);
  return 0;
}

#endif
