/* attnref/mask.h — the batched attention mask builder (causal + KV cache offset + sliding
 * window + right padding by per-sequence lengths + left padding).
 *
 * Semantics (as mlx-lm create_causal_mask, v0.28+, with `lengths` = offset + Lq - right_padding;
 * the seed discussion, ml-explore/mlx-examples PR #1173): the chunk holds Lq new queries, the
 * KV cache already holds `offset` tokens, so there are Lk = offset + Lq key positions.  Query i
 * sits at absolute position p = offset + i (bottom-right causal alignment) and keeps key j iff
 *
 *     j <= p                                  (causal)
 *     and j > p - W             when W > 0    (sliding window: W keys in total, its own included)
 *     and j < lengths[b]        when lengths  (right padding: total valid keys, cache included)
 *     and j >= left_padding[b]  when left_padding
 *
 *     and, with the terms of SPEC clause 20: the same chunk (chunk C, counted from
 *     left_padding[b]), the same document (segment_ids), and a bidirectional block that also
 *     keeps the later keys of the query's own block (block_ids), exactly as attnref_sdpa_key_kept
 *     says for causal SDPA with causal_offset = offset.
 *
 * The result is a boolean keep mask (true = attend) of shape (B, 1, Lq, Lk); B = 1 when
 * neither lengths nor left_padding is given.  Composition is an intersection of keep sets.
 *
 * Static key buffers (SPEC.md clauses 4 and 5): with kv_len > 0 the keys live in a preallocated
 * buffer of kv_len slots (kv_len >= offset + Lq), so Lk = kv_len; the slots past offset + Lq
 * hold no token yet and are never kept (the causal rule already excludes them: j <= offset + i
 * < offset + Lq).  kv_len = 0 means Lk = offset + Lq.
 */
#ifndef ATTNREF_MASK_H
#define ATTNREF_MASK_H

#include <stdint.h>

#include "attnref/status.h"
#include "attnref/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attnref_mask_params {
    int64_t lq;                  /* new queries in this chunk, >= 0 */
    int64_t offset;              /* tokens already in the KV cache, >= 0 */
    int64_t window;              /* sliding window W in keys, >= 1; 0 = no window */
    int64_t batch;               /* B; must be >= 1 when lengths or left_padding is given,
                                    ignored (B = 1) otherwise */
    const int64_t *lengths;      /* [batch] total valid keys, 0..Lk; NULL = none */
    const int64_t *left_padding; /* [batch] first valid key, 0..Lk; NULL = none */
    int64_t kv_len;              /* 0: Lk = offset + lq; else the static key buffer's length
                                    Lk = kv_len >= offset + lq (slots past offset + lq are never
                                    kept).  Last, so positional initialisers stay valid. */
    /* Terms of current models (SPEC clause 20), meaning exactly what the attnref_sdpa_params
     * fields of the same names mean with causal and causal_offset = offset (attnref/sdpa.h). */
    int64_t chunk;              /* 0 = none; C >= 1: chunks counted from left_padding[b] */
    const int64_t *segment_ids; /* [batch * Lk] document ids, or NULL */
    const int64_t *block_ids;   /* [batch * Lk] bidirectional block ids (< 0 = none), or NULL */
} attnref_mask_params;

/* Shape of the keep mask for p: (B, 1, lq, Lk), Lk = kv_len when kv_len > 0, else offset + lq,
 * written to shape[0..3].
 * Returns ATTNREF_OK, ATTNREF_EINVAL (a negative count, window < 0, chunk < 0, batch < 1 with
 * per-sequence arrays (lengths, left_padding, segment_ids, block_ids), kv_len < 0 or 0 < kv_len < offset + lq, a lengths/left_padding entry outside 0..Lk)
 * or ATTNREF_ERANGE (the mask would exceed ATTNREF_MAX_NUMEL elements).  The diagnostic names
 * the field and the batch row. */
int attnref_mask_shape(const attnref_mask_params *p, int64_t shape[4], attnref_diag *diag);

/* Write the keep mask into `keep`, a caller-allocated BOOL tensor of exactly the shape given by
 * attnref_mask_shape (any strides).  Errors: those of attnref_mask_shape, ATTNREF_EDTYPE if keep
 * is not BOOL, ATTNREF_EINVAL if its shape differs.  Nothing is written on error. */
int attnref_build_mask(const attnref_mask_params *p, attnref_tensor *keep, attnref_diag *diag);

/* Convert a boolean keep mask to an additive mask of the same shape in `out` (caller-allocated,
 * any strides): true -> +0, false -> attnref_dtype_finite_min(out->dtype).  The finite minimum
 * is used, never -inf and never a constant such as -1e9 (which rounds to -inf in f16).
 * Errors: ATTNREF_EDTYPE (keep not BOOL, or out not a float dtype), ATTNREF_EINVAL (shape
 * mismatch or a bad descriptor). */
int attnref_mask_to_additive(const attnref_tensor *keep, attnref_tensor *out, attnref_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
