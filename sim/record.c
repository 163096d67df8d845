/* sim/record.c - --record FILE: every JSON answer the API server sends,
 * one line each, for the schema check of tests/integ/clients (the
 * official Python client's typed models read every recorded body). */
#include "sim/sim.h"

#include "api/httpd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1 if the n bytes are only whitespace (a watch's line end, or the
 * newline an idle watch gets every 5 s). */
static int blank(const char *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (p[i] != '\n' && p[i] != '\r' && p[i] != ' ' && p[i] != '\t')
      return 0;
  return 1;
}

static void on_answer(const char *method, const char *path, unsigned status,
                      const char *ctype, const char *body, size_t len,
                      int stream, void *arg)
{
  FILE *f = arg;
  json_t *line;

  if (strncmp(ctype, "application/json", 16) != 0 || blank(body, len))
    return;
  line = json_pack("{s:s, s:s, s:i, s:s, s:b, s:s%}", "method", method,
                   "path", path, "status", (int)status, "contentType",
                   ctype, "stream", stream, "body", body, len);
  if (line)
    json_dumpf(line, f, JSON_COMPACT);
  fputc('\n', f);
  fflush(f);
  json_decref(line);
}

int gq_sim_record_start(struct gq_sim *s, const char *path, char *err,
                        size_t errlen)
{
  FILE *f = fopen(path, "w");

  if (!f) {
    snprintf(err, errlen, "--record: cannot write '%s': %s", path,
             strerror(errno));
    return -1;
  }
  s->record = f;
  gq_httpd_set_tap(s->httpd, on_answer, f);
  return 0;
}

void gq_sim_record_stop(struct gq_sim *s)
{
  if (!s->record)
    return;
  if (s->httpd)
    gq_httpd_set_tap(s->httpd, NULL, NULL);
  fclose(s->record);
  s->record = NULL;
}
