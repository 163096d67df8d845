/* kubeconfig loading (api/kubeconfig.h): the bytes are written to a file
 * of this process (the loader reads paths) and loaded with the file's own
 * current-context. Paths named inside (certificates, tokens) resolve
 * against the temporary directory; run with stdin at /dev/null. */
#include "fuzz.h"

#include "api/kubeconfig.h"

#include <stdio.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static char path[64];
  struct gq_kubeconfig kc;
  char err[512];
  FILE *f;

  if (!path[0])
    snprintf(path, sizeof(path), "/tmp/gq-fuzz-kubeconfig.%ld",
             (long)getpid());
  f = fopen(path, "wb");
  if (!f)
    abort();
  if (size && fwrite(data, 1, size, f) != size)
    abort();
  fclose(f);
  memset(&kc, 0, sizeof(kc));
  if (gq_kubeconfig_load(path, NULL, &kc, err, sizeof(err)) == 0)
    gq_kubeconfig_release(&kc);
  unlink(path);
  return 0;
}
