/* attnref/status.h — status codes and diagnostics of the attnref reference library.
 *
 * Every public attnref function returns an int status: ATTNREF_OK (0) or one of the negative
 * codes below (the libuv convention: no global error state).  Functions that can fail also take
 * an optional `attnref_diag *` (may be NULL) that receives a one-line, human-readable reason
 * naming the offending argument or field, e.g. "mask: dtype f32 does not promote to q dtype f16
 * (the computation would be upcast)".  The library never aborts and never prints.
 */
#ifndef ATTNREF_STATUS_H
#define ATTNREF_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

enum {
    ATTNREF_OK = 0,
    ATTNREF_EINVAL = -1, /* invalid argument: rank, shape, broadcast, range, NULL pointer */
    ATTNREF_EDTYPE = -2, /* dtype not allowed: q/k/v differ, output dtype != q dtype, or an
                             additive mask whose dtype does not promote to the q dtype */
    ATTNREF_ENOMEM = -3, /* a scratch allocation failed */
    ATTNREF_ERANGE = -4  /* a size is too large to index or allocate safely (see tensor.h) */
};

/* Detail for a failed call.  msg is always NUL-terminated; empty when the call succeeded. */
typedef struct attnref_diag {
    char msg[256];
} attnref_diag;

/* Short constant text for a status code, e.g. "invalid argument".  Never NULL; unknown codes
 * give "unknown status". */
const char *attnref_strerror(int status);

/* Stable identifier for a status code: "ok", "einval", "edtype", "enomem", "erange", "unknown". */
const char *attnref_status_name(int status);

#ifdef __cplusplus
}
#endif
#endif
