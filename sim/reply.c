/* sim/reply.c - answering a request: JSON bodies and Kubernetes Status
 * objects (metav1.Status, kind Status), shared by the routing, the verbs
 * and the /sim/v1 endpoints. */
#include "sim/sim.h"

#include "sim/dump.h"

#include <stdlib.h>
#include <string.h>

void gq_sim_reply(struct gq_http_req *req, int code, json_t *obj)
{
  size_t n;
  char *s = gq_sim_dumps(obj, &n);

  if (!s) { /* nested too deep to write */
    json_decref(obj);
    gq_sim_status(req, 500, "InternalError", "the object is nested too deep",
                  NULL);
    return;
  }
  gq_http_respond(req, (unsigned)code, "application/json", s, n, NULL);
  free(s);
  json_decref(obj);
}

json_t *gq_sim_status_json(int code, const char *reason, const char *message)
{
  return json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status",
                   "apiVersion", "v1", "metadata", "status", "Failure",
                   "message", message, "reason", reason, "code", code);
}

void gq_sim_status(struct gq_http_req *req, int code, const char *reason,
                   const char *message, json_t *details)
{
  json_t *st = gq_sim_status_json(code, reason, message);

  if (details)
    json_object_set_new(st, "details", details);
  gq_sim_reply(req, code, st);
}

void gq_sim_reply_success(struct gq_http_req *req, int code)
{
  gq_sim_reply(req, code,
               json_pack("{s:s, s:s, s:{}, s:s, s:i}", "kind", "Status",
                         "apiVersion", "v1", "metadata", "status", "Success",
                         "code", code));
}

const char *gq_sim_reason_for(int code)
{
  switch (code) {
  case 400: return "BadRequest";
  case 401: return "Unauthorized";
  case 403: return "Forbidden";
  case 404: return "NotFound";
  case 409: return "Conflict";
  case 410: return "Expired";
  case 422: return "Invalid";
  case 429: return "TooManyRequests";
  case 503: return "ServiceUnavailable";
  case 504: return "Timeout";
  default: return "InternalError";
  }
}
