/* base/err.h - gpuq's error codes.
 *
 * Functions return int: 0 on success, a negative GQ_E* value on failure
 * (libuv's convention). Positive values are used only where a function's
 * comment documents them as counts. The codes are generated once from
 * GQ_ERR_MAP so that the enum, gq_strerror() and gq_err_name() never drift
 * apart. The values sit below -4096, clear of negated errno values, so a
 * function may also pass a -errno from libc or libuv through unchanged and
 * gq_strerror() still describes it.
 */
#ifndef GQ_BASE_ERR_H
#define GQ_BASE_ERR_H

#define GQ_ERR_MAP(XX)                                                        \
  XX(EINVAL, "invalid argument")                                              \
  XX(ENOMEM, "out of memory")                                                 \
  XX(ETOOBIG, "input exceeds configured limit")                               \
  XX(EOVERFLOW, "arithmetic overflow")                                        \
  XX(EPARSE, "malformed input")                                               \
  XX(EIO, "input/output error")                                               \
  XX(ENOTFOUND, "not found")                                                  \
  XX(EEXIST, "already exists")                                                \
  XX(ECONFLICT, "conflict: object was modified")                              \
  XX(EGONE, "resource version expired")                                       \
  XX(EUNAUTHORIZED, "unauthorized")                                           \
  XX(EFORBIDDEN, "forbidden")                                                 \
  XX(ETOOMANY, "too many requests")                                           \
  XX(EUNAVAIL, "service unavailable")                                         \
  XX(ETIMEDOUT, "timed out")                                                  \
  XX(ECANCELED, "operation canceled")                                         \
  XX(ECLOSED, "connection closed")                                            \
  XX(EQUOTA, "quota exhausted")                                               \
  XX(ECAPACITY, "no capacity")                                                \
  XX(ESTATE, "object is in the wrong state for this operation")

enum gq_err {
  GQ_OK = 0,
  GQ__EBASE = -4096 - 64, /* clear of -errno values (Linux errno < 4096) */
#define XX(code, _) GQ_##code,
  GQ_ERR_MAP(XX)
#undef XX
  GQ__EMAX
};

/* Returns a lower-case human description of 'err' (a GQ_E* code or a negated
 * errno value). Never NULL; unknown codes give "unknown error". The string is
 * static. */
const char *gq_strerror(int err);

/* Returns the symbolic name of 'err' ("EGONE", or the errno name such as
 * "ENOENT" for negated errno values we know). Never NULL; static string. */
const char *gq_err_name(int err);

#endif
