/* cli/jget.h - lenient reads of API objects for the kubectl-gpuq tables.
 *
 * The controller decodes objects strictly (api/json.h); the plugin shows
 * what is there, and a member that is absent, null or of the wrong type
 * prints as "-" instead of failing the command. Every pointer returned is
 * borrowed from the document and lives as long as it does.
 */
#ifndef GQ_CLI_JGET_H
#define GQ_CLI_JGET_H
#include <jansson.h>
#include <stdint.h>

/* obj.k1.k2... (keys end with NULL): the member, or NULL if any step is
 * absent or the value is JSON null. obj may be NULL. */
const json_t *gq_cli_jget(const json_t *obj, ...);

/* The string value of v, or NULL when v is not a string. */
const char *gq_cli_jstr(const json_t *v);

/* The integer value of v, or dflt when v is not an integer. */
int64_t gq_cli_jint(const json_t *v, int64_t dflt);

/* The RFC 3339 timestamp v as Unix ms, or 0 when v is not a string or does
 * not parse (base/clock.h gq_time_parse). */
int64_t gq_cli_time_ms(const json_t *v);

#endif
