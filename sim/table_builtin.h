/* sim/table_builtin.h - Table columns of built-in kinds, as the real API
 * server prints them (k8s.io/kubernetes/pkg/printers/internalversion). Each
 * _cols returns a new column-definition array; each _cells a new row of
 * cells for obj at virtual time now_ms. */
#ifndef GQ_SIM_TABLE_BUILTIN_H
#define GQ_SIM_TABLE_BUILTIN_H
#include <jansson.h>
#include <stdint.h>

#define GQ_TB(name)                                                         \
  json_t *gq_tb_##name##_cols(void);                                        \
  json_t *gq_tb_##name##_cells(const json_t *obj, int64_t now_ms);

GQ_TB(namespace)
GQ_TB(node)
GQ_TB(pod)
GQ_TB(service)
GQ_TB(event)
GQ_TB(lease)
GQ_TB(pc)
GQ_TB(pdb)
GQ_TB(crd)
GQ_TB(generic)
#undef GQ_TB

/* The age cell of a timestamp: HumanDuration(now - ts), "<unknown>" if
 * absent or unparseable. New string reference. */
json_t *gq_tb_age(const json_t *ts, int64_t now_ms);

#endif
