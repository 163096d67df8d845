/* cli/validate.c - offline manifest validation (see validate.h). */
#include "cli/validate.h"

#include "api/gpujob.h"
#include "api/teamquota.h"
#include "api/yaml.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/err.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int gq_validate_object(const json_t *obj, char *err, size_t errlen)
{
  const char *api = json_string_value(json_object_get(obj, "apiVersion"));
  const char *kind = json_string_value(json_object_get(obj, "kind"));
  int is_job, rc;

  if (!kind || !api) {
    snprintf(err, errlen, "apiVersion and kind: required values");
    return GQ_EINVAL;
  }
  is_job = strcmp(kind, "GpuJob") == 0;
  if (!is_job && strcmp(kind, "TeamQuota") != 0)
    return 0;
  if (strcmp(api, GQ_API_VERSION) != 0) {
    snprintf(err, errlen, "apiVersion: must be %s for kind %s, got \"%s\"",
             GQ_API_VERSION, kind, api);
    return GQ_EINVAL;
  }
  if (is_job) {
    struct gq_gpujob j;

    rc = gq_gpujob_decode(obj, &j, err, errlen);
    if (rc == 0)
      gq_gpujob_release(&j);
  } else {
    struct gq_teamquota q;

    rc = gq_teamquota_decode(obj, &q, err, errlen);
    if (rc == 0)
      gq_teamquota_release(&q);
  }
  return rc == 0 ? 1 : rc;
}

/* "namespace/name" or "name" of obj, for the report line. */
static void object_name(const json_t *obj, char *buf, size_t len)
{
  const json_t *meta = json_object_get(obj, "metadata");
  const char *ns = json_string_value(json_object_get(meta, "namespace"));
  const char *name = json_string_value(json_object_get(meta, "name"));

  snprintf(buf, len, "%s%s%s", ns ? ns : "", ns ? "/" : "",
           name ? name : "(unnamed)");
}

/* Validates one object, or each item of a kind: List (what kubectl get
 * -o yaml prints). Counts the gpuq objects seen in *seen. */
static int validate_one(const json_t *obj, const char *path, FILE *out,
                        int *seen)
{
  const char *kind = json_string_value(json_object_get(obj, "kind"));
  char err[GQ_DEC_MSG_MAX + 256], name[320];
  const json_t *it;
  size_t i;
  int rc, bad = 0;

  if (kind && !strcmp(kind, "List")) {
    json_array_foreach(json_object_get(obj, "items"), i, it)
      bad += validate_one(it, path, out, seen);
    return bad;
  }
  rc = gq_validate_object(obj, err, sizeof(err));
  object_name(obj, name, sizeof(name));
  if (rc == 1)
    fprintf(out, "ok   %s %s\n", kind, name);
  else if (rc < 0)
    fprintf(out, "FAIL %s %s (%s): %s\n", kind ? kind : "?", name, path,
            err);
  *seen += rc != 0;
  return rc < 0;
}

static int validate_file(const char *path, FILE *out, int *seen)
{
  char err[GQ_DEC_MSG_MAX + 256];
  json_t *docs = NULL, *obj;
  size_t i;
  int bad = 0, rc;

  if (!strcmp(path, "-")) { /* stdin, as kubectl -f - */
    struct gq_buf b;
    char chunk[4096];
    size_t n;

    gq_buf_init(&b, 64u << 20);
    while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
      if (gq_buf_append(&b, chunk, n) != 0)
        break;
    rc = gq_yaml_parse(gq_buf_str(&b), b.len, &docs, err, sizeof(err));
    gq_buf_release(&b);
  } else {
    rc = gq_yaml_load_file(path, &docs, err, sizeof(err));
  }
  if (rc != 0) {
    fprintf(out, "FAIL %s%s%s\n", !strcmp(path, "-") ? "stdin: " : "",
            err, "");
    return 1;
  }
  json_array_foreach(docs, i, obj)
    bad += validate_one(obj, path, out, seen);
  json_decref(docs);
  return bad;
}

static int has_manifest_suffix(const char *name)
{
  const char *dot = strrchr(name, '.');

  return dot && (strcmp(dot, ".yaml") == 0 || strcmp(dot, ".yml") == 0 ||
                 strcmp(dot, ".json") == 0);
}

int gq_validate_path(const char *path, FILE *out)
{
  struct dirent **ents;
  struct stat st;
  int n, bad = 0, seen = 0;
  char dir[4096];

  if (!strcmp(path, "-")) {
    bad = validate_file(path, out, &seen);
    goto done;
  }
  if (stat(path, &st) != 0) {
    fprintf(out, "FAIL cannot read '%s': %s\n", path, strerror(errno));
    return -errno;
  }
  if (!S_ISDIR(st.st_mode)) {
    bad = validate_file(path, out, &seen);
    goto done;
  }
  snprintf(dir, sizeof(dir), "%s", path);
  for (size_t l = strlen(dir); l > 1 && dir[l - 1] == '/'; l--)
    dir[l - 1] = '\0'; /* "dir/" names files "dir/x", not "dir//x" */
  path = dir;
  n = scandir(path, &ents, NULL, alphasort);
  if (n < 0) {
    fprintf(out, "FAIL cannot list '%s': %s\n", path, strerror(errno));
    return -errno;
  }
  for (int i = 0; i < n; i++) {
    if (has_manifest_suffix(ents[i]->d_name)) {
      char *file = gq_xasprintf("%s/%s", path, ents[i]->d_name);

      bad += validate_file(file, out, &seen);
      free(file);
    }
    free(ents[i]);
  }
  free(ents);
done:
  if (!seen && !bad) {
    fprintf(out, "FAIL no GpuJob or TeamQuota found in '%s'\n", path);
    return 1;
  }
  return bad;
}
