/* tests/support/fixture.h - reading test fixtures from the repository.
 * Tests run from the source root (ctest WORKING_DIRECTORY), so paths are
 * relative to it. Test code only. */
#ifndef GQ_TEST_FIXTURE_H
#define GQ_TEST_FIXTURE_H
#include <stddef.h>

#include <jansson.h>

/* Lists the regular files in 'dir' whose names end in 'suffix', sorted by
 * name, as a NULL-terminated array of "dir/name" heap strings; *n gets the
 * count. Returns NULL if dir cannot be read. Free with
 * gq_test_free_list(). */
char **gq_test_list_dir(const char *dir, const char *suffix, size_t *n);
void gq_test_free_list(char **list);

/* Returns the whole file as a NUL-terminated heap string (NULL if it
 * cannot be read); *len gets its length if len is not NULL. */
char *gq_test_read_file(const char *path, size_t *len);

/* Writes len bytes of text to path (created or truncated). Returns 0, or
 * -1 if the file cannot be written. */
int gq_test_write_file(const char *path, const char *text, size_t len);

/* Removes a directory tree (files, then directories); errors are ignored,
 * as for cleanup at the end of a test. */
void gq_test_rmtree(const char *dir);

/* Sleeps ms milliseconds (polling loops that wait for a condition with a
 * deadline, never as the condition itself). */
void gq_test_sleep_ms(long ms);

/* Parses JSON written with single quotes for readability in test tables:
 * every ' becomes " (so no value may contain a quote), up to 8191 bytes.
 * Returns a new reference; fails the running cmocka test on bad JSON. */
json_t *gq_test_json_sq(const char *s);

/* Decode single-quoted JSON (as gq_test_json_sq()) into a typed object
 * with the API's own decoder (default product label), failing the running
 * test with the decoder's message if it is rejected. Release the object
 * with its gq_*_release(). */
struct gq_node;
struct gq_gpujob;
struct gq_teamquota;
void gq_test_node_sq(struct gq_node *n, const char *sq);
void gq_test_gpujob_sq(struct gq_gpujob *j, const char *sq);
void gq_test_teamquota_sq(struct gq_teamquota *t, const char *sq);

#endif
