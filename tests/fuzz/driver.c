/* tests/fuzz/driver.c - replays seed corpora through a harness without
 * libFuzzer: `fuzz_<target> <file or directory>...` calls
 * LLVMFuzzerTestOneInput() once per file (a directory's regular files, not
 * recursive) and exits 0, so a crash or a sanitizer report in the sanitizer
 * build fails the ctest test that runs it (make test). Exits 2 when a path
 * cannot be read or no input was found, so an empty corpus is noticed. */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

#define DRIVER_MAX_INPUT (1 << 20) /* libFuzzer's -max_len default is far lower */

/* Runs one file; returns 0, or -1 if it cannot be read. */
static int run_file(const char *path)
{
  FILE *f = fopen(path, "rb");
  uint8_t *buf;
  size_t n;

  if (!f) {
    fprintf(stderr, "cannot open '%s'\n", path);
    return -1;
  }
  buf = malloc(DRIVER_MAX_INPUT);
  if (!buf)
    abort();
  n = fread(buf, 1, DRIVER_MAX_INPUT, f);
  fclose(f);
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return 0;
}

/* Runs path (a file, or each regular file of a directory); returns the
 * number of inputs run, or -1. */
static int run_path(const char *path)
{
  struct stat st;
  struct dirent *e;
  DIR *d;
  int count = 0;

  if (stat(path, &st) != 0) {
    fprintf(stderr, "cannot stat '%s'\n", path);
    return -1;
  }
  if (!S_ISDIR(st.st_mode))
    return run_file(path) == 0 ? 1 : -1;
  d = opendir(path);
  if (!d)
    return -1;
  while ((e = readdir(d)) != NULL) {
    char p[4096];

    if (e->d_name[0] == '.')
      continue;
    snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
    if (stat(p, &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (run_file(p) != 0) {
      closedir(d);
      return -1;
    }
    count++;
  }
  closedir(d);
  return count;
}

int main(int argc, char **argv)
{
  int total = 0;

  for (int i = 1; i < argc; i++) {
    int n = run_path(argv[i]);

    if (n < 0)
      return 2;
    total += n;
  }
  if (total == 0) {
    fprintf(stderr, "no inputs\n");
    return 2;
  }
  printf("%d inputs ran\n", total);
  return 0;
}
