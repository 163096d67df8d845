/* api/priorityclass.h - decoding and validation of scheduling.k8s.io/v1
 * PriorityClasses, the objects spec.priorityClassName of a GpuJob names.
 *
 * The rules are kube-apiserver's (pkg/apis/scheduling/validation,
 * ValidatePriorityClass, and the constants of pkg/apis/scheduling/types.go):
 *   - metadata.name a DNS subdomain;
 *   - value a JSON integer in int32; a class whose name does not start with
 *     "system-" may not go above GQ_PC_HIGHEST_USER (1,000,000,000,
 *     HighestUserDefinablePriority), a "system-" one not above
 *     system-node-critical's SystemCriticalPriority + 1000 (Kubernetes
 *     also reserves the prefix for its own two classes; not checked here);
 *   - globalDefault a boolean, preemptionPolicy PreemptLowerPriority
 *     (default) or Never, description a string.
 * gpuq-sim refuses a PriorityClass that fails them (422), so a priority
 * read back from a class the sim or an apiserver stored is always an int32.
 *
 * Pure: no I/O, no global state. The decoded struct borrows its strings
 * from the object, which it keeps one reference to.
 */
#ifndef GQ_API_PRIORITYCLASS_H
#define GQ_API_PRIORITYCLASS_H
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define GQ_PC_HIGHEST_USER 1000000000        /* HighestUserDefinablePriority */
#define GQ_PC_SYSTEM_CRITICAL (2 * GQ_PC_HIGHEST_USER) /* SystemCriticalPriority */

enum gq_pc_preemption { GQ_PC_PREEMPT_LOWER, GQ_PC_PREEMPT_NEVER };

struct gq_priorityclass {
  const char *name;
  int32_t value;
  int global_default;
  enum gq_pc_preemption preemption;
  const char *description;      /* "" if absent */
  json_t *json;                 /* the object (one reference) */
};

/* Decodes and validates the PriorityClass obj (borrowed; a reference is
 * kept in out->json). Returns 0, or GQ_EINVAL with "field: problem, got
 * value" in err (errlen bytes), e.g. "value: must be no more than
 * 1000000000 (the highest user-definable priority) unless the name starts
 * with \"system-\", got 2000000001"; nothing to release then. */
int gq_priorityclass_decode(const json_t *obj, struct gq_priorityclass *out,
                            char *err, size_t errlen);

/* Releases what gq_priorityclass_decode() took; pc is then empty. */
void gq_priorityclass_release(struct gq_priorityclass *pc);

/* The priority the class obj (borrowed, NULL = none) gives a job: its value
 * when obj is a valid PriorityClass; else dflt. *valid (may be NULL) says
 * which. This is the controller's read of a class it finds by name. */
int32_t gq_priorityclass_value(const json_t *obj, int32_t dflt, int *valid);

#endif
