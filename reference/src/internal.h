/* internal.h — helpers shared by the attnref sources (not installed). */
#ifndef ATTNREF_INTERNAL_H
#define ATTNREF_INTERNAL_H

#include <stdarg.h>
#include <stdio.h>

#include "attnref/status.h"
#include "attnref/tensor.h"

/* Record a failure reason (printf-style) in diag, if given, and return `status` so callers can
 * write `return attnref__fail(diag, ATTNREF_EINVAL, "...", ...)`. */
__attribute__((format(printf, 3, 4))) static inline int
attnref__fail(attnref_diag *diag, int status, const char *fmt, ...)
{
    if (diag) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(diag->msg, sizeof diag->msg, fmt, ap);
        va_end(ap);
    }
    return status;
}

static inline void attnref__ok(attnref_diag *diag)
{
    if (diag)
        diag->msg[0] = '\0';
}

/* View a rank-r tensor (r <= 4) as rank 4 by prepending extent-1, stride-0 dimensions, so every
 * loop in the library can be a fixed 4-deep nest. */
static inline void attnref__as_rank4(const attnref_tensor *t, int64_t shape[4], int64_t strides[4])
{
    int pad = 4 - t->ndim;
    for (int d = 0; d < 4; d++) {
        shape[d] = d < pad ? 1 : t->shape[d - pad];
        strides[d] = d < pad ? 0 : t->strides[d - pad];
    }
}

/* Format a shape as "(a, b, c)" into buf. */
static inline const char *attnref__shape_str(char *buf, size_t n, int32_t ndim,
                                             const int64_t *shape)
{
    size_t used = (size_t)snprintf(buf, n, "(");
    for (int32_t d = 0; d < ndim && used < n; d++)
        used += (size_t)snprintf(buf + used, n - used, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (used < n)
        snprintf(buf + used, n - used, ")");
    return buf;
}

#endif
