/* base/err.c - the one table behind gq_strerror() and gq_err_name(). */
#include "base/err.h"

#include <errno.h>
#include <string.h>

static const char *const msgs[] = {
#define XX(code, msg) msg,
    GQ_ERR_MAP(XX)
#undef XX
};

static const char *const names[] = {
#define XX(code, _) #code,
    GQ_ERR_MAP(XX)
#undef XX
};

static int is_gq(int err)
{
  return err > GQ__EBASE && err < GQ__EMAX;
}

const char *gq_strerror(int err)
{
  if (err == 0)
    return "success";
  if (is_gq(err))
    return msgs[err - GQ__EBASE - 1];
  if (err < 0 && err > -4096)
    return strerror(-err); /* glibc: static table, never NULL */
  return "unknown error";
}

const char *gq_err_name(int err)
{
  if (err == 0)
    return "OK";
  if (is_gq(err))
    return names[err - GQ__EBASE - 1];
  switch (-err) {
  case ENOENT: return "ENOENT";
  case EACCES: return "EACCES";
  case EAGAIN: return "EAGAIN";
  case ECONNREFUSED: return "ECONNREFUSED";
  case ECONNRESET: return "ECONNRESET";
  case EADDRINUSE: return "EADDRINUSE";
  case EPIPE: return "EPIPE";
  default: return "EUNKNOWN";
  }
}
