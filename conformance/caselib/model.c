/* model.c — the in-memory case model below the ops: element counts, allocation of tensors and
 * expected results, rows of an output, stride-0 broadcast, an id's family. */
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "util.h"

void acase_family(const char *id, char *out, size_t n)
{
    if (!out || n == 0)
        return;
    out[0] = '\0';
    if (!id)
        return;
    const char *dot1 = strchr(id, '.');
    const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    size_t len = dot2 ? (size_t)(dot2 - id) : strlen(id);
    if (len >= n)
        len = n - 1;
    memcpy(out, id, len);
    out[len] = '\0';
}

int acase_numel(int32_t ndim, const int64_t *shape, int64_t *numel, char *why, size_t whylen)
{
    if (ndim < 0 || ndim > 4) {
        acase__errf(why, whylen, "rank %d is not in 0..4", (int)ndim);
        return -1;
    }
    int64_t n = 1;
    for (int32_t i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            acase__errf(why, whylen, "extent %lld of dimension %d is negative", (long long)shape[i],
                        (int)i);
            return -1;
        }
    }
    for (int32_t i = 0; i < ndim; i++) {
        if (shape[i] == 0) {
            n = 0;
            break;
        }
        if (n > ACASE_MAX_TENSOR_NUMEL / shape[i]) {
            acase__errf(why, whylen, "more than %lld elements", (long long)ACASE_MAX_TENSOR_NUMEL);
            return -1;
        }
        n *= shape[i];
    }
    if (n > ACASE_MAX_TENSOR_NUMEL) {
        acase__errf(why, whylen, "more than %lld elements", (long long)ACASE_MAX_TENSOR_NUMEL);
        return -1;
    }
    *numel = n;
    return 0;
}

int acase_tensor_alloc(acase_tensor *t, char *err, size_t errlen)
{
    char why[128];
    int64_t n;
    size_t es = attnref_dtype_size(t->dtype);
    if (es == 0) {
        acase__errf(err, errlen, "unknown dtype %d", (int)t->dtype);
        return -1;
    }
    if (acase_numel(t->ndim, t->shape, &n, why, sizeof why) != 0) {
        acase__errf(err, errlen, "shape: %s", why);
        return -1;
    }
    free(t->data);
    t->data = NULL;
    t->numel = n;
    /* Never NULL, even for zero elements, so a present tensor always has a buffer. */
    t->data = calloc((size_t)(n > 0 ? n : 1), es);
    if (!t->data) {
        acase__errf(err, errlen, "out of memory (%lld elements)", (long long)n);
        return -1;
    }
    return 0;
}

int acase_expected_alloc(acase_expected *e, char *err, size_t errlen)
{
    char why[128];
    int64_t n;
    if (acase_numel(e->ndim, e->shape, &n, why, sizeof why) != 0) {
        acase__errf(err, errlen, "shape: %s", why);
        return -1;
    }
    free(e->values);
    e->values = NULL;
    free(e->row_check); /* sized for the old shape */
    e->row_check = NULL;
    e->nrows = 0;
    e->numel = n;
    e->values = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    if (!e->values) {
        acase__errf(err, errlen, "out of memory (%lld elements)", (long long)n);
        return -1;
    }
    return 0;
}

/* Rows of a shape: the product of every extent but the last, or -1 with a reason. */
int64_t acase__expected_rows_why(const acase_expected *e, char *why, size_t whylen)
{
    int64_t n;
    if (acase_numel(e->ndim, e->shape, &n, why, whylen) != 0)
        return -1;
    if (e->ndim < 1) {
        acase__errf(why, whylen, "rank 0 has no rows");
        return -1;
    }
    int64_t rows = 1;
    for (int32_t i = 0; i + 1 < e->ndim; i++) {
        if (e->shape[i] == 0)
            return 0;
        if (rows > ACASE_MAX_TENSOR_NUMEL / e->shape[i]) {
            acase__errf(why, whylen, "more than %lld rows", (long long)ACASE_MAX_TENSOR_NUMEL);
            return -1;
        }
        rows *= e->shape[i];
    }
    return rows;
}

int64_t acase_expected_rows(const acase_expected *e)
{
    return e ? acase__expected_rows_why(e, NULL, 0) : -1;
}

int acase_row_atol_alloc(acase *c, char *err, size_t errlen)
{
    char why[128];
    int64_t rows = acase__expected_rows_why(&c->expected, why, sizeof why);
    if (rows < 0) {
        acase__errf(err, errlen, "expected.out.shape: %s", why);
        return -1;
    }
    free(c->row_atol);
    c->row_atol = calloc((size_t)(rows > 0 ? rows : 1), sizeof(double));
    if (!c->row_atol) {
        acase__errf(err, errlen, "out of memory (%lld rows)", (long long)rows);
        return -1;
    }
    return 0;
}

/* Flat logical index of the element of t's stored slice that element n stands for (the index
 * with the stride-0 dimensions set to 0). */
static int64_t slice_source(const acase_tensor *t, int64_t n)
{
    int64_t idx[4], off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = t->shape[d] ? n % t->shape[d] : 0;
        n = t->shape[d] ? n / t->shape[d] : 0;
    }
    for (int d = 0; d < t->ndim; d++)
        off = off * t->shape[d] + ((t->stride0 >> d) & 1u ? 0 : idx[d]);
    return off;
}

int64_t acase__stride0_mismatch(const acase_tensor *t)
{
    size_t es = attnref_dtype_size(t->dtype);
    const unsigned char *d = t->data;
    for (int64_t n = 0; n < t->numel; n++) {
        int64_t src = slice_source(t, n);
        if (memcmp(d + (size_t)n * es, d + (size_t)src * es, es) != 0)
            return n;
    }
    return -1;
}

int acase_tensor_broadcast(acase_tensor *t, uint8_t stride0, const int64_t shape[4], char *err,
                           size_t errlen)
{
    if (t->ndim != 4 || (stride0 & ~3u)) {
        acase__errf(err, errlen, "stride0 needs a rank-4 tensor and dimensions 0..1");
        return -1;
    }
    for (int d = 0; d < 4; d++) {
        int want = (stride0 >> d) & 1u ? 1 : 0;
        if ((want && t->shape[d] != 1) || (!want && t->shape[d] != shape[d])) {
            acase__errf(err, errlen,
                        "stored extent %lld of dimension %d does not fit the "
                        "logical extent %lld",
                        (long long)t->shape[d], d, (long long)shape[d]);
            return -1;
        }
    }
    acase_tensor full = *t;
    memcpy(full.shape, shape, sizeof full.shape);
    full.stride0 = stride0;
    full.data = NULL;
    char why[128];
    if (acase_tensor_alloc(&full, why, sizeof why)) {
        acase__errf(err, errlen, "%s", why);
        return -1;
    }
    /* Element n of the full tensor comes from the stored slice (t->shape: extent 1 on the
     * stride-0 dimensions) at the same index with those dimensions set to 0. */
    size_t es = attnref_dtype_size(t->dtype);
    for (int64_t n = 0; n < full.numel; n++) {
        int64_t idx[4], rest = n, src = 0;
        for (int d = 3; d >= 0; d--) {
            idx[d] = rest % shape[d];
            rest /= shape[d];
        }
        for (int d = 0; d < 4; d++)
            src = src * t->shape[d] + ((stride0 >> d) & 1u ? 0 : idx[d]);
        memcpy((unsigned char *)full.data + (size_t)n * es,
               (const unsigned char *)t->data + (size_t)src * es, es);
    }
    free(t->data);
    *t = full;
    return 0;
}

int acase_expected_alloc_rows(acase_expected *e, char *err, size_t errlen)
{
    char why[128];
    int64_t rows = acase__expected_rows_why(e, why, sizeof why);
    if (rows < 0) {
        acase__errf(err, errlen, "shape: %s", why);
        return -1;
    }
    free(e->row_check);
    e->nrows = 0;
    e->row_check = calloc((size_t)(rows > 0 ? rows : 1), 1);
    if (!e->row_check) {
        acase__errf(err, errlen, "out of memory (%lld rows)", (long long)rows);
        return -1;
    }
    e->nrows = rows;
    return 0;
}
