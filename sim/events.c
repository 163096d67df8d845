/* sim/events.c - events.k8s.io/v1 Events as a view of core/v1 Events.
 *
 * A real API server stores one Event and serves it under both groups
 * (k8s.io/kubernetes/pkg/apis/events/v1 conversion): regarding is
 * involvedObject, note is message, deprecatedSource / deprecatedCount /
 * deprecatedFirstTimestamp / deprecatedLastTimestamp are source, count,
 * firstTimestamp and lastTimestamp, and series.count is count for a
 * repeated event. gpuq-sim stores core events and converts at the edges,
 * so an event the controller writes through either group is seen by
 * `kubectl describe` (core) and by events.k8s.io readers alike. */
#include "sim/sim.h"

#include <string.h>

struct rename {
  const char *core, *view;
};

/* Fields with the same meaning under different names. */
static const struct rename renames[] = {
    {"involvedObject", "regarding"},
    {"message", "note"},
    {"source", "deprecatedSource"},
    {"firstTimestamp", "deprecatedFirstTimestamp"},
    {"lastTimestamp", "deprecatedLastTimestamp"},
    {"count", "deprecatedCount"},
    {"reportingComponent", "reportingController"},
    {NULL, NULL},
};

/* Copies obj renaming keys from -> to per the table (dir 0: core->view). */
static json_t *convert(const json_t *obj, int to_view, const char *api)
{
  json_t *out = json_object();
  const char *key;
  json_t *v;

  json_object_foreach((json_t *)obj, key, v) {
    const char *name = key;

    for (int i = 0; renames[i].core; i++) {
      if (!strcmp(key, to_view ? renames[i].core : renames[i].view)) {
        name = to_view ? renames[i].view : renames[i].core;
        break;
      }
    }
    json_object_set(out, name, v);
  }
  json_object_set_new(out, "apiVersion", json_string(api));
  json_object_set_new(out, "kind", json_string("Event"));
  return out;
}

json_t *gq_sim_event_to_view(const json_t *core)
{
  json_t *out = convert(core, 1, "events.k8s.io/v1");
  const json_t *series = json_object_get(core, "series");

  if (!json_object_get(out, "eventTime"))
    json_object_set_new(out, "eventTime", json_null());
  if (json_is_object(series))
    json_object_set(out, "series", (json_t *)series);
  return out;
}

json_t *gq_sim_event_from_view(const json_t *view)
{
  json_t *out = convert(view, 0, "v1");
  const json_t *series = json_object_get(view, "series");

  if (json_is_object(series) && !json_object_get(out, "count"))
    json_object_set(out, "count", json_object_get(series, "count"));
  if (json_is_null(json_object_get(out, "eventTime")))
    json_object_del(out, "eventTime");
  return out;
}
