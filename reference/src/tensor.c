/* tensor.c — validation and indexing of strided tensor descriptors.
 *
 * Size arithmetic is bounded by ATTNREF_MAX_NUMEL before it can overflow: every product is
 * tested by division first, so a hostile descriptor (say four extents of 2^20, whose product
 * 2^80 wraps int64) is rejected instead of passing as a small, wrapped count.
 */
#include "attnref/tensor.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

static void diag_clear(attnref_diag *diag)
{
    if (diag)
        diag->msg[0] = '\0';
}

static void diag_set(attnref_diag *diag, const char *name, const char *fmt, ...)
{
    if (!diag)
        return;
    int n = snprintf(diag->msg, sizeof diag->msg, "%s: ", name ? name : "tensor");
    if (n < 0 || (size_t)n >= sizeof diag->msg)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(diag->msg + n, sizeof diag->msg - (size_t)n, fmt, ap);
    va_end(ap);
}

/* *acc = *acc * v for non-negative operands; returns 0 (leaving *acc alone) if the product
 * would exceed `limit`. */
static int mul_within(int64_t *acc, int64_t v, int64_t limit)
{
    if (v != 0 && *acc > limit / v)
        return 0;
    *acc *= v;
    return 1;
}

/* The rank, dtype and extent checks that init and check share. */
static int check_shape(int32_t ndim, attnref_dtype dt, const int64_t *shape, const char *name,
                       attnref_diag *diag)
{
    if (ndim < 0 || ndim > ATTNREF_MAX_RANK) {
        diag_set(diag, name, "rank %" PRId32 " is outside 0..%d", ndim, ATTNREF_MAX_RANK);
        return ATTNREF_EINVAL;
    }
    if (!attnref_dtype_is_float(dt) && dt != ATTNREF_BOOL) {
        diag_set(diag, name, "unknown dtype %d", (int)dt);
        return ATTNREF_EINVAL;
    }
    if (ndim > 0 && shape == NULL) {
        diag_set(diag, name, "shape is NULL for rank %" PRId32, ndim);
        return ATTNREF_EINVAL;
    }
    for (int32_t i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            diag_set(diag, name, "dimension %" PRId32 " has negative extent %" PRId64, i, shape[i]);
            return ATTNREF_EINVAL;
        }
    }
    return ATTNREF_OK;
}

/* Element count, or -1 if it exceeds ATTNREF_MAX_NUMEL.  A zero extent is looked for first
 * because it makes the count 0 however large the other extents are. */
static int64_t numel_bounded(int32_t ndim, const int64_t *shape)
{
    for (int32_t i = 0; i < ndim; i++)
        if (shape[i] == 0)
            return 0;
    int64_t n = 1;
    for (int32_t i = 0; i < ndim; i++)
        if (!mul_within(&n, shape[i], ATTNREF_MAX_NUMEL))
            return -1;
    return n;
}

int attnref_tensor_init(attnref_tensor *t, void *data, attnref_dtype dt, int32_t ndim,
                        const int64_t *shape, attnref_diag *diag)
{
    if (t == NULL) {
        diag_set(diag, NULL, "descriptor pointer is NULL");
        return ATTNREF_EINVAL;
    }
    int rc = check_shape(ndim, dt, shape, NULL, diag);
    if (rc != ATTNREF_OK)
        return rc;
    if (numel_bounded(ndim, shape) < 0) {
        diag_set(diag, NULL, "element count exceeds %" PRId64, ATTNREF_MAX_NUMEL);
        return ATTNREF_ERANGE;
    }
    /* Build into a local so *t is written only on success.  With a zero extent the count is 0
     * but the extents to its right still form strides; bounding those too keeps every stride
     * that init hands out small enough for offset arithmetic to stay far from overflow. */
    int64_t strides[ATTNREF_MAX_RANK] = {0};
    int64_t s = 1;
    for (int32_t i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        if (i > 0 && !mul_within(&s, shape[i], ATTNREF_MAX_NUMEL)) {
            diag_set(diag, NULL, "contiguous stride of dimension %" PRId32 " exceeds %" PRId64,
                     i - 1, ATTNREF_MAX_NUMEL);
            return ATTNREF_ERANGE;
        }
    }
    t->data = data;
    t->dtype = dt;
    t->ndim = ndim;
    for (int32_t i = 0; i < ATTNREF_MAX_RANK; i++) {
        t->shape[i] = i < ndim ? shape[i] : 0;
        t->strides[i] = i < ndim ? strides[i] : 0;
    }
    diag_clear(diag);
    return ATTNREF_OK;
}

int64_t attnref_tensor_numel(const attnref_tensor *t)
{
    /* No status channel here: an invalid descriptor or an overflowing product gives -1, which
     * no caller can mistake for a size.  Call attnref_tensor_check first. */
    if (t == NULL || t->ndim < 0 || t->ndim > ATTNREF_MAX_RANK)
        return -1;
    for (int32_t i = 0; i < t->ndim; i++)
        if (t->shape[i] < 0)
            return -1;
    for (int32_t i = 0; i < t->ndim; i++)
        if (t->shape[i] == 0)
            return 0;
    int64_t n = 1;
    for (int32_t i = 0; i < t->ndim; i++)
        if (!mul_within(&n, t->shape[i], INT64_MAX))
            return -1;
    return n;
}

int attnref_tensor_check(const attnref_tensor *t, const char *name, attnref_diag *diag)
{
    if (name == NULL)
        name = "tensor";
    if (t == NULL) {
        diag_set(diag, name, "descriptor pointer is NULL");
        return ATTNREF_EINVAL;
    }
    int rc = check_shape(t->ndim, t->dtype, t->shape, name, diag);
    if (rc != ATTNREF_OK)
        return rc;
    for (int32_t i = 0; i < t->ndim; i++) {
        if (t->strides[i] < 0) {
            diag_set(diag, name, "dimension %" PRId32 " has negative stride %" PRId64, i,
                     t->strides[i]);
            return ATTNREF_EINVAL;
        }
    }
    int64_t n = numel_bounded(t->ndim, t->shape);
    if (n < 0) {
        diag_set(diag, name, "element count exceeds %" PRId64, ATTNREF_MAX_NUMEL);
        return ATTNREF_ERANGE;
    }
    if (n > 0) {
        if (t->data == NULL) {
            diag_set(diag, name, "data is NULL but the tensor has %" PRId64 " elements", n);
            return ATTNREF_EINVAL;
        }
        /* Offsets run from 0 to the sum of (extent-1)*stride; requiring that span to fit in
         * ATTNREF_MAX_NUMEL elements matches the bound on a contiguous tensor. */
        int64_t span = 1;
        for (int32_t i = 0; i < t->ndim; i++) {
            int64_t reach = t->shape[i] - 1;
            if (!mul_within(&reach, t->strides[i], ATTNREF_MAX_NUMEL) ||
                reach > ATTNREF_MAX_NUMEL - span) {
                diag_set(diag, name,
                         "largest element offset exceeds %" PRId64 " (dimension %" PRId32
                         ": extent %" PRId64 ", stride %" PRId64 ")",
                         ATTNREF_MAX_NUMEL - 1, i, t->shape[i], t->strides[i]);
                return ATTNREF_ERANGE;
            }
            span += reach;
        }
    }
    diag_clear(diag);
    return ATTNREF_OK;
}

int64_t attnref_tensor_offset(const attnref_tensor *t, const int64_t *idx)
{
    /* Unchecked by design: this is the inner-loop indexer, and a descriptor that passed
     * attnref_tensor_check with in-range indices cannot overflow here. */
    int64_t off = 0;
    for (int32_t i = 0; i < t->ndim; i++)
        off += idx[i] * t->strides[i];
    return off;
}
