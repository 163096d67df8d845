/* tests/support/fixture.c - fixture files (see fixture.h). */
#define _XOPEN_SOURCE 700 /* nftw */
#include "tests/support/fixture.h"

#include "api/gpujob.h"
#include "api/node.h"
#include "api/teamquota.h"
#include "base/alloc.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <ftw.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int ends_with(const char *s, const char *suffix)
{
  size_t a = strlen(s), b = strlen(suffix);

  return a >= b && strcmp(s + a - b, suffix) == 0;
}

char **gq_test_list_dir(const char *dir, const char *suffix, size_t *n)
{
  struct dirent **ents;
  char **out;
  int count = scandir(dir, &ents, NULL, alphasort);

  *n = 0;
  if (count < 0)
    return NULL;
  out = gq_xcalloc((size_t)count + 1, sizeof(*out));
  for (int i = 0; i < count; i++) {
    if (ends_with(ents[i]->d_name, suffix) && ents[i]->d_name[0] != '.')
      out[(*n)++] = gq_xasprintf("%s/%s", dir, ents[i]->d_name);
    free(ents[i]);
  }
  free(ents);
  return out;
}

void gq_test_free_list(char **list)
{
  for (char **p = list; p && *p; p++)
    free(*p);
  free(list);
}

char *gq_test_read_file(const char *path, size_t *len)
{
  FILE *f = fopen(path, "rb");
  char *buf;
  long size;

  if (!f)
    return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return NULL;
  }
  buf = gq_xmalloc((size_t)size + 1);
  if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
    free(buf);
    fclose(f);
    return NULL;
  }
  buf[size] = '\0';
  fclose(f);
  if (len)
    *len = (size_t)size;
  return buf;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
  (void)st;
  (void)flag;
  (void)ftw;
  remove(path);
  return 0;
}

int gq_test_write_file(const char *path, const char *text, size_t len)
{
  FILE *f = fopen(path, "wb");
  int ok = f && fwrite(text, 1, len, f) == len;

  if (f && fclose(f) != 0)
    ok = 0;
  return ok ? 0 : -1;
}

void gq_test_rmtree(const char *dir)
{
  nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

void gq_test_sleep_ms(long ms)
{
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

  nanosleep(&ts, NULL);
}

json_t *gq_test_json_sq(const char *s)
{
  char buf[8192];
  json_error_t jerr;
  json_t *v;
  size_t i;

  for (i = 0; s[i] && i + 1 < sizeof(buf); i++)
    buf[i] = s[i] == '\'' ? '"' : s[i];
  buf[i] = '\0';
  v = json_loads(buf, 0, &jerr);
  if (!v)
    fail_msg("bad test JSON %s: %s", buf, jerr.text);
  return v;
}

void gq_test_node_sq(struct gq_node *n, const char *sq)
{
  char err[512];
  json_t *obj = gq_test_json_sq(sq);
  int rc = gq_node_decode(obj, NULL, n, err, sizeof(err));

  json_decref(obj);
  if (rc != 0)
    fail_msg("node %s: %s", sq, err);
}

void gq_test_gpujob_sq(struct gq_gpujob *j, const char *sq)
{
  char err[512];
  json_t *obj = gq_test_json_sq(sq);
  int rc = gq_gpujob_decode(obj, j, err, sizeof(err));

  json_decref(obj);
  if (rc != 0)
    fail_msg("gpujob %s: %s", sq, err);
}

void gq_test_teamquota_sq(struct gq_teamquota *t, const char *sq)
{
  char err[512];
  json_t *obj = gq_test_json_sq(sq);
  int rc = gq_teamquota_decode(obj, t, err, sizeof(err));

  json_decref(obj);
  if (rc != 0)
    fail_msg("teamquota %s: %s", sq, err);
}
