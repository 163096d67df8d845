/* cli/table.h - kubectl-style output of the kubectl-gpuq subcommands.
 *
 * A subcommand builds its answer as a JSON array of row objects (typed
 * values: integers stay integers) and prints it either as kubectl's table
 * (upper-case headers, columns padded to the widest cell plus three
 * spaces, "<none>"-style "-" for absent values) or, with -o json, as
 * {"kind": KIND, "items": rows}, so scripts read the same fields the
 * table shows.
 */
#ifndef GQ_CLI_TABLE_H
#define GQ_CLI_TABLE_H
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

struct gq_cli_col {
  const char *header; /* "POSITION" */
  const char *key;    /* the row member shown: "position" */
};

/* Prints rows (borrowed array of objects) with columns cols[0..n-1] to f,
 * or the JSON document when json is set (reals with 15 significant
 * digits). A member that is absent or null
 * prints "-"; integers print in decimal, reals with %g. No rows: prints
 * "No resources found" (kubectl's words) to stderr instead of a table. */
void gq_cli_print(FILE *f, const char *kind, const json_t *rows,
                  const struct gq_cli_col *cols, size_t n, int json);

/* Writes the age of a timestamp (now_ms - ms, both Unix milliseconds) in
 * kubectl's HumanDuration form into buf ("5m30s"); "-" when ms is 0. */
void gq_cli_age(int64_t now_ms, int64_t ms, char *buf, size_t len);

#endif
