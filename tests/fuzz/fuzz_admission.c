/* AdmissionReview decoding (api/admission.h), both webhook decisions
 * (decide/admission.h) over three TeamQuotas, and the response render. */
#include "fuzz.h"

#include "api/admission.h"
#include "decide/gpujob.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static const char *ns_a[] = {"team-a"}, *ns_s[] = {"shared", "team-b"};
  static const struct gq_teamquota a = {
      .meta = {.name = "team-a"}, .namespaces = ns_a, .n_namespaces = 1};
  static const struct gq_teamquota b = {
      .meta = {.name = "team-b"}, .namespaces = ns_s, .n_namespaces = 2};
  static const struct gq_teamquota c = {
      .meta = {.name = "team-c"}, .namespaces = ns_s, .n_namespaces = 1};
  const struct gq_teamquota *const tq[] = {&a, &b, &c};
  json_t *obj = fuzz_json(data, size);
  struct gq_admission_review rv;
  struct gq_adm_result res;
  char err[512];

  if (!obj)
    return 0;
  if (gq_admission_review_decode(obj, &rv, err, sizeof(err)) == 0) {
    gq_adm_mutate(&rv.req, tq, 3, &res);
    json_decref(gq_admission_response(rv.uid, &res));
    gq_adm_validate(&rv.req, tq, 3, GQ_CONTROLLER_USER, &res);
    json_decref(gq_admission_response(rv.uid, &res));
    gq_admission_review_release(&rv);
  }
  json_decref(obj);
  return 0;
}
