/* api/teamquota.h - decoding and validating the TeamQuota custom resource
 * (gpuq.dev/v1alpha1) into the typed struct gq_teamquota of
 * decide/teamquota.h, which states its semantics (DESIGN §2).
 *
 * Like GpuJob, the controller re-validates what the CRD schema checks,
 * plus what a schema cannot: no duplicate (flavor, resource) pair, and
 * lendingLimit <= nominal. An invalid TeamQuota is reported in its status.
 *
 * Ownership as in decide/teamquota.h: one reference to the document,
 * borrowed strings, owned arrays.
 */
#ifndef GQ_API_TEAMQUOTA_H
#define GQ_API_TEAMQUOTA_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "api/meta.h"
#include "decide/teamquota.h"

/* Decodes and validates a TeamQuota. Takes a new reference to obj.
 * Returns 0, or GQ_EINVAL with "field: problem, got value" in err (errlen
 * bytes); nothing to release on error. */
int gq_teamquota_decode(const json_t *obj, struct gq_teamquota *out, char *err,
                        size_t errlen);

/* Releases what gq_teamquota_decode() took; q is then empty. */
void gq_teamquota_release(struct gq_teamquota *q);

/* The informer hooks (api/informer.h decode / release): a new heap
 * TeamQuota decoded from obj, or NULL with the message in err; and its
 * release and free. */
void *gq_teamquota_decode_new(const json_t *obj, char *err, size_t errlen);
void gq_teamquota_free(void *q);

#endif
