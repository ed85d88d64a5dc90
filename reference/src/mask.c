/* mask.c — the batched keep-mask builder and the bool -> additive converter (see mask.h). */
#include "attnref/mask.h"

#include <stdint.h>

#include "attnref/dtype.h"
#include "attnref/sdpa.h"
#include "internal.h"

/* One row-range check for lengths[] / left_padding[]: every entry must index a key slot
 * boundary, 0..lk inclusive. */
static int check_per_seq(const int64_t *a, const char *name, int64_t batch, int64_t lk,
                         attnref_diag *diag)
{
    for (int64_t b = 0; b < batch; b++)
        if (a[b] < 0 || a[b] > lk)
            return attnref__fail(diag, ATTNREF_EINVAL, "%s[%lld]: %lld is outside 0..%lld (Lk)",
                                 name, (long long)b, (long long)a[b], (long long)lk);
    return ATTNREF_OK;
}

int attnref_mask_shape(const attnref_mask_params *p, int64_t shape[4], attnref_diag *diag)
{
    if (!p || !shape)
        return attnref__fail(diag, ATTNREF_EINVAL, "mask params: NULL pointer");
    if (p->lq < 0)
        return attnref__fail(diag, ATTNREF_EINVAL, "lq: must be >= 0, got %lld", (long long)p->lq);
    if (p->offset < 0)
        return attnref__fail(diag, ATTNREF_EINVAL, "offset: must be >= 0, got %lld",
                             (long long)p->offset);
    if (p->window < 0)
        return attnref__fail(diag, ATTNREF_EINVAL, "window: must be >= 1, or 0 for none; got %lld",
                             (long long)p->window);
    if (p->chunk < 0)
        return attnref__fail(diag, ATTNREF_EINVAL, "chunk: must be >= 1, or 0 for none; got %lld",
                             (long long)p->chunk);
    if (p->kv_len < 0)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "kv_len: must be >= offset + lq, or 0 for none; got %lld",
                             (long long)p->kv_len);
    const int per_seq = p->lengths != NULL || p->left_padding != NULL || p->segment_ids != NULL ||
                        p->block_ids != NULL;
    if (per_seq && p->batch < 1)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "batch: must be >= 1 when lengths, left_padding, segment_ids or "
                             "block_ids is given, got %lld",
                             (long long)p->batch);
    const int64_t batch = per_seq ? p->batch : 1;
    /* Every factor is checked before it is multiplied, so nothing below can overflow. */
    if (p->offset > ATTNREF_MAX_NUMEL || p->lq > ATTNREF_MAX_NUMEL || batch > ATTNREF_MAX_NUMEL ||
        p->kv_len > ATTNREF_MAX_NUMEL)
        return attnref__fail(
            diag, ATTNREF_ERANGE, "mask: lq %lld, offset %lld, batch %lld, kv_len %lld too large",
            (long long)p->lq, (long long)p->offset, (long long)batch, (long long)p->kv_len);
    int64_t lk = p->offset + p->lq;
    if (p->kv_len > 0) {
        if (p->kv_len < lk)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "kv_len: %lld is shorter than offset + lq = %lld",
                                 (long long)p->kv_len, (long long)lk);
        lk = p->kv_len;
    }
    if (p->lq > 0 && (lk > ATTNREF_MAX_NUMEL / p->lq || batch > ATTNREF_MAX_NUMEL / (p->lq * lk)))
        return attnref__fail(diag, ATTNREF_ERANGE,
                             "mask: (%lld, 1, %lld, %lld) exceeds %lld elements", (long long)batch,
                             (long long)p->lq, (long long)lk, (long long)ATTNREF_MAX_NUMEL);
    int rc;
    if (p->lengths && (rc = check_per_seq(p->lengths, "lengths", batch, lk, diag)) != ATTNREF_OK)
        return rc;
    if (p->left_padding &&
        (rc = check_per_seq(p->left_padding, "left_padding", batch, lk, diag)) != ATTNREF_OK)
        return rc;
    shape[0] = batch;
    shape[1] = 1;
    shape[2] = p->lq;
    shape[3] = lk;
    attnref__ok(diag);
    return ATTNREF_OK;
}

int attnref_build_mask(const attnref_mask_params *p, attnref_tensor *keep, attnref_diag *diag)
{
    int64_t shape[4];
    int rc = attnref_mask_shape(p, shape, diag);
    if (rc != ATTNREF_OK)
        return rc;
    if (!keep)
        return attnref__fail(diag, ATTNREF_EINVAL, "keep: NULL tensor");
    if ((rc = attnref_tensor_check(keep, "keep", diag)) != ATTNREF_OK)
        return rc;
    if (keep->dtype != ATTNREF_BOOL)
        return attnref__fail(diag, ATTNREF_EDTYPE, "keep: dtype %s, expected bool",
                             attnref_dtype_name(keep->dtype));
    if (keep->ndim != 4 || keep->shape[0] != shape[0] || keep->shape[1] != 1 ||
        keep->shape[2] != shape[2] || keep->shape[3] != shape[3]) {
        char got[96], want[96];
        return attnref__fail(diag, ATTNREF_EINVAL, "keep: shape %s, expected %s",
                             attnref__shape_str(got, sizeof got, keep->ndim, keep->shape),
                             attnref__shape_str(want, sizeof want, 4, shape));
    }

    /* The builder's keep set is causal SDPA's with the explicit offset (one statement of it:
     * attnref_sdpa_key_kept). */
    const attnref_sdpa_params sp = {.causal = 1,
                                    .has_causal_offset = 1,
                                    .causal_offset = p->offset,
                                    .window = p->window,
                                    .batch = shape[0],
                                    .lengths = p->lengths,
                                    .left_padding = p->left_padding,
                                    .chunk = p->chunk,
                                    .segment_ids = p->segment_ids,
                                    .block_ids = p->block_ids};
    uint8_t *base = keep->data;
    for (int64_t b = 0; b < shape[0]; b++)
        for (int64_t i = 0; i < shape[2]; i++)
            for (int64_t j = 0; j < shape[3]; j++)
                base[b * keep->strides[0] + i * keep->strides[2] + j * keep->strides[3]] =
                    (uint8_t)attnref_sdpa_key_kept(&sp, shape[2], shape[3], b, i, j);
    attnref__ok(diag);
    return ATTNREF_OK;
}

int attnref_mask_to_additive(const attnref_tensor *keep, attnref_tensor *out, attnref_diag *diag)
{
    if (!keep || !out)
        return attnref__fail(diag, ATTNREF_EINVAL, "%s: NULL tensor", keep ? "out" : "keep");
    int rc;
    if ((rc = attnref_tensor_check(keep, "keep", diag)) != ATTNREF_OK ||
        (rc = attnref_tensor_check(out, "out", diag)) != ATTNREF_OK)
        return rc;
    if (keep->dtype != ATTNREF_BOOL)
        return attnref__fail(diag, ATTNREF_EDTYPE, "keep: dtype %s, expected bool",
                             attnref_dtype_name(keep->dtype));
    if (!attnref_dtype_is_float(out->dtype))
        return attnref__fail(diag, ATTNREF_EDTYPE, "out: dtype %s, expected f32, f16 or bf16",
                             attnref_dtype_name(out->dtype));
    int same = keep->ndim == out->ndim;
    for (int32_t d = 0; same && d < keep->ndim; d++)
        same = keep->shape[d] == out->shape[d];
    if (!same) {
        char got[96], want[96];
        return attnref__fail(diag, ATTNREF_EINVAL, "out: shape %s, expected keep's shape %s",
                             attnref__shape_str(got, sizeof got, out->ndim, out->shape),
                             attnref__shape_str(want, sizeof want, keep->ndim, keep->shape));
    }
    const double masked = attnref_dtype_finite_min(out->dtype);
    int64_t sh[4], ks[4], os[4];
    attnref__as_rank4(keep, sh, ks);
    attnref__as_rank4(out, sh, os);
    const uint8_t *kb = keep->data;
    for (int64_t a = 0; a < sh[0]; a++)
        for (int64_t b = 0; b < sh[1]; b++)
            for (int64_t c = 0; c < sh[2]; c++)
                for (int64_t d = 0; d < sh[3]; d++) {
                    int64_t ko = a * ks[0] + b * ks[1] + c * ks[2] + d * ks[3];
                    int64_t oo = a * os[0] + b * os[1] + c * os[2] + d * os[3];
                    attnref_store(out->data, out->dtype, oo, kb[ko] ? 0.0 : masked);
                }
    attnref__ok(diag);
    return ATTNREF_OK;
}
