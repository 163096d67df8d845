/* api/informer.h - list then watch one collection into a local store, as
 * client-go's reflector + store + shared informer do (tools/cache).
 *
 * The store is keyed by "namespace/name" ("name" for cluster-scoped
 * objects) and holds each object's JSON (with its uid and resourceVersion)
 * and, when a decode hook is given, its typed form (api/ structs such as
 * struct gq_gpujob), decoded once. With typed_only the store keeps the
 * typed form alone and drops the JSON once decoded (a JSON tree costs about
 * ten times the object's text in heap); handlers still see the JSON of the
 * change during the call. Handlers see every change; the store's states
 * are a subsequence of the server's (client-go's contract). Every object's
 * metadata.managedFields is dropped before it is stored or handed to a
 * handler (client-go's TransformStripManagedFields: no controller reads
 * field ownership, and it is often the largest part of a pod); a watch
 * event's managedFields are cut from its text before it is parsed
 * and a listed page's from its text before it is parsed
 * (gq_json_drop_managed_fields()).
 *
 * Lists are read page by page (500 objects), each page stored as it
 * arrives, so that only one page's JSON is held at a time; objects the list
 * did not show are deleted after its last page. After the first list the
 * informer is synced. It then watches from the
 * list's resourceVersion with bookmarks, resumes from the last version it
 * saw when a watch ends or breaks, and relists on 410 Gone, synthesizing
 * deletes for objects that vanished in the gap and updates for changed
 * ones. Failures back off (800 ms .. 30 s, jitter, as the reflector).
 * Loop thread only; handlers never run synchronously from start.
 */
#ifndef GQ_API_INFORMER_H
#define GQ_API_INFORMER_H
#include <jansson.h>

#include "api/client.h"

struct gq_informer;

struct gq_informer_handlers {
  /* Each may be NULL. Objects are borrowed, valid during the call. */
  void (*add)(const json_t *obj, void *arg);
  void (*update)(const json_t *old, const json_t *obj, void *arg);
  void (*del)(const json_t *obj, void *arg);
  void (*synced)(void *arg); /* once, after the first complete list */
  /* Typed decoding (optional): returns a heap object or NULL with a
   * message in err (the JSON is stored anyway); release frees it. */
  void *(*decode)(const json_t *obj, char *err, size_t errlen);
  void (*release)(void *typed);
};

struct gq_informer_opts {
  const char *path;           /* collection, e.g. "/api/v1/pods" */
  const char *label_selector; /* NULL = all */
  const char *field_selector;
  int64_t watch_timeout_s;    /* 0 = 5..10 min with jitter */
  int typed_only;             /* keep no JSON for objects that decode (an
                                 object the decode hook rejects keeps its
                                 JSON); needs a decode hook. The old state
                                 an update handler gets, and the last state
                                 a delete handler gets for a relisted-away
                                 object, are then metadata-only objects:
                                 namespace, name, uid, resourceVersion */
};

/* Starts listing; the handlers (copied) get arg. Returns the informer. */
struct gq_informer *gq_informer_start(struct gq_kclient *c,
                                      const struct gq_informer_opts *o,
                                      const struct gq_informer_handlers *h,
                                      void *arg);

/* Stops watching and frees the store (handlers are not called again). */
void gq_informer_stop(struct gq_informer *inf);

/* 1 once the first list has been stored. */
int gq_informer_synced(const struct gq_informer *inf);

/* The stored JSON for key (borrowed, valid until the next change), or
 * NULL (also for a typed_only object); and its typed form (borrowed) or
 * NULL. */
const json_t *gq_informer_get(const struct gq_informer *inf, const char *key);
void *gq_informer_typed(const struct gq_informer *inf, const char *key);

/* Number of stored objects, and a new array of their stored JSON
 * (references; typed_only objects without JSON are left out). */
size_t gq_informer_size(const struct gq_informer *inf);
json_t *gq_informer_list(const struct gq_informer *inf);

/* Calls fn for every stored object (JSON and typed form, both borrowed;
 * typed NULL when not decoded, obj NULL for a typed_only object) in no
 * particular order. fn must not change
 * the store (it runs synchronously, between events). */
void gq_informer_foreach(const struct gq_informer *inf,
                         void (*fn)(const json_t *obj, void *typed, void *arg),
                         void *arg);

/* Counters for tests and metrics: lists done, watches started. */
unsigned gq_informer_lists(const struct gq_informer *inf);
unsigned gq_informer_watches(const struct gq_informer *inf);

#endif
