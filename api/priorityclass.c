/* api/priorityclass.c - PriorityClass decoding (see priorityclass.h). */
#include "api/priorityclass.h"

#include "api/json.h"
#include "base/err.h"

#include <stdio.h>
#include <string.h>

static const char *const preemption_names[] = {"PreemptLowerPriority",
                                               "Never", NULL};

static void decode_value(struct gq_dec *d, const json_t *obj,
                         struct gq_priorityclass *pc)
{
  int system = strncmp(pc->name, "system-", 7) == 0;
  int64_t v = 0;

  if (!gq_dec_get(obj, "value")) {
    gq_dec_fail(d, "value", "required value");
    return;
  }
  if (gq_dec_int(d, obj, "value", INT32_MIN, INT32_MAX, 0, &v) < 0)
    return;
  /* ValidatePriorityClass: a system class is one of the two Kubernetes
   * defines, and nothing else may claim their range. */
  if (!system && v > GQ_PC_HIGHEST_USER)
    gq_dec_fail_got(d, "value", gq_dec_get(obj, "value"),
                    "must be no more than %d (the highest user-definable "
                    "priority) unless the name starts with \"system-\"",
                    GQ_PC_HIGHEST_USER);
  else if (system && v > GQ_PC_SYSTEM_CRITICAL + 1000)
    gq_dec_fail_got(d, "value", gq_dec_get(obj, "value"),
                    "must be no more than %d for a system class",
                    GQ_PC_SYSTEM_CRITICAL + 1000);
  pc->value = (int32_t)v;
}

int gq_priorityclass_decode(const json_t *obj, struct gq_priorityclass *out,
                            char *err, size_t errlen)
{
  struct gq_dec d;
  const json_t *meta;

  memset(out, 0, sizeof(*out));
  gq_dec_init(&d);
  if (!json_is_object(obj))
    gq_dec_fail_got(&d, "(root)", obj, "must be an object");
  meta = gq_dec_object(&d, obj, "metadata", 1);
  out->name = gq_dec_string(&d, meta, "metadata.name", 1, 253, "");
  if (!d.rc)
    gq_dec_dns_subdomain(&d, "metadata.name", out->name, 253);
  if (!d.rc)
    decode_value(&d, obj, out);
  out->global_default = gq_dec_bool(&d, obj, "globalDefault", 0);
  out->preemption = (enum gq_pc_preemption)gq_dec_enum(
      &d, obj, "preemptionPolicy", preemption_names, 0, GQ_PC_PREEMPT_LOWER);
  out->description = gq_dec_string(&d, obj, "description", 0, 65536, "");
  if (d.rc) {
    if (err && errlen)
      snprintf(err, errlen, "%s", d.msg);
    memset(out, 0, sizeof(*out));
    return d.rc;
  }
  out->json = json_incref((json_t *)obj);
  return 0;
}

void gq_priorityclass_release(struct gq_priorityclass *pc)
{
  json_decref(pc->json);
  memset(pc, 0, sizeof(*pc));
}

int32_t gq_priorityclass_value(const json_t *obj, int32_t dflt, int *valid)
{
  struct gq_priorityclass pc;
  int32_t v = dflt;
  int ok = obj && gq_priorityclass_decode(obj, &pc, NULL, 0) == 0;

  if (ok) {
    v = pc.value;
    gq_priorityclass_release(&pc);
  }
  if (valid)
    *valid = ok;
  return v;
}
