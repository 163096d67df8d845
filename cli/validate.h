/* cli/validate.h - offline validation of gpuq manifests.
 *
 * `kubectl gpuq validate -f PATH` checks GpuJob and TeamQuota manifests with
 * exactly the decoders the controller uses, so a user learns before
 * `kubectl apply` what the controller would reject (a real API server
 * checks only the CRD schema; the controller checks more, DESIGN §2).
 */
#ifndef GQ_CLI_VALIDATE_H
#define GQ_CLI_VALIDATE_H
#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* Validates one decoded object (a GpuJob or TeamQuota; other kinds are
 * skipped). Returns 1 if it is a gpuq kind and valid, 0 if skipped,
 * GQ_EINVAL if invalid; err (errlen bytes) gets the controller's message
 * ("spec.replicas: must be between 1 and 4096, got 0") or, for a wrong or
 * missing kind, one that names apiVersion/kind. */
int gq_validate_object(const json_t *obj, char *err, size_t errlen);

/* Validates every document of every YAML or JSON file at 'path' (a file,
 * "-" for stdin, or a directory whose *.yaml, *.yml and *.json files are
 * read in name order); kind: List documents are validated item by item.
 * Writes one line per object to out ("ok   GpuJob research/llama" or
 * "FAIL GpuJob research/llama: <message>"). Returns the number of invalid
 * objects and unreadable files (0 = all good; finding no GpuJob or
 * TeamQuota at all counts as 1), or a negative GQ_E* if path itself
 * cannot be read (message on out). */
int gq_validate_path(const char *path, FILE *out);

#endif
