/* attnref/sdpa.h — reference scaled-dot-product attention (SDPA).
 *
 *     out = softmax(scale * q . k^T + mask) . v
 *
 * Shapes (B, H, L, D order): q (B, Hq, Lq, D), k (B, Hkv, Lk, D), v (B, Hkv, Lk, Dv),
 * out (B, Hq, Lq, Dv).  All four are rank 4, any strides.
 *
 * GQA: Hq % Hkv == 0 and query head h uses kv head h / (Hq / Hkv) (repeat-interleave, as
 * mlx.fast.scaled_dot_product_attention and PyTorch enable_gqa; never tiling h % Hkv).
 *
 * Scale: params.has_scale ? params.scale : 1 / sqrt(D) (D of q/k, never Dv).  A given scale of
 * 0 is used as 0.
 *
 * Masks (at most one of a mask tensor and causal):
 *   - none;
 *   - boolean (dtype BOOL, true = attend): a false key is skipped entirely;
 *   - additive (float dtype): its value is added to the scaled score; a -inf value skips the key;
 *     finite values (however negative) take part in the softmax;
 *   - causal (bottom-right, as mlx "causal" and FlashAttention >= 2.1): query i sits at
 *     absolute position offset + i and keeps key j iff j <= offset + i, where
 *     offset = params.has_causal_offset ? params.causal_offset : Lk - Lq (any int64; a very
 *     negative offset keeps nothing, a very large one keeps everything).  Offset 0 given
 *     explicitly is top-left alignment.  When Lq > Lk the first Lq - Lk rows keep nothing.
 *   A mask tensor has rank <= 4 and broadcasts to (B, Hq, Lq, Lk) by NumPy rules (trailing
 *   dimensions aligned; each extent equal or 1); per-head masks index query heads.
 *
 * Mask parameters (SPEC clauses 19 and 20; the way fast kernels take masks, without a tensor):
 * the keep set is the intersection of every constraint given, except that a bidirectional block
 * adds the later keys of its own block to the causal set.
 *   - window W >= 1 (needs causal): query i, at absolute position off + i with off the causal
 *     offset above, also drops key j when j <= off + i - W, so it keeps the W keys
 *     off + i - W < j <= off + i (its own position counts: SPEC clause 4);
 *   - lengths[b] in 0..Lk: batch row b keeps only keys j < lengths[b] (right padding);
 *   - left_padding[b] in 0..Lk: batch row b keeps only keys j >= left_padding[b].
 *   - chunk C >= 1 (needs causal): the query at p keeps key j only when
 *     floor((j - lp) / C) == floor((p - lp) / C), lp = left_padding[b] (0 without it);
 *   - segment_ids [B, Lk]: the query at p keeps key j only when segment_ids[b][p] ==
 *     segment_ids[b][j]; a query whose p is outside 0..Lk-1 keeps nothing;
 *   - block_ids [B, Lk] (needs causal): the causal rule becomes (j <= p OR (block_ids[b][p] >= 0
 *     AND block_ids[b][p] == block_ids[b][j])); window, chunk, segments, lengths and left
 *     padding still apply to the keys a block adds (SPEC clause 20);
 *   lengths and left padding never move the causal offset (it stays Lk - Lq unless given; ONNX
 *   opset 24's nonpad_kv_seqlen moves it, a documented divergence).  lengths and left_padding
 *   compose with causal or with a mask tensor; window, needing causal, never meets a mask tensor.
 *
 * Score terms (SPEC clauses 20-22), in this order for each kept key j of a row:
 *   s_j = scale * q.k_j;  s_j = c * tanh(s_j / c) when softcap c > 0;  s_j -= m_h * |p - j| with
 *   ALiBi (p the query's absolute position off + i);  s_j += the additive mask value.  A sink
 *   sigma_h joins the softmax as one more logit with no value vector:
 *   out = sum_j e^(s_j - M) v_j / (sum_j e^(s_j - M) + e^(sigma_h - M)), M = max(max_j s_j, sigma_h).
 *   A row that keeps no key is still exactly 0.
 *
 * dtypes: q, k, v share one float dtype, which is the output dtype (out->dtype must equal it).
 * A BOOL mask is always accepted; an additive mask only if promote(mask, q) == q
 * (attnref_mask_dtype_ok; MLX >= v0.22.0), so nothing is ever silently upcast.
 *
 * Numerics: inputs are read exactly, scores, softmax (max-subtracted) and the weighted sum of V
 * are computed in double, and each output element is rounded once to the output dtype (RNE).
 * A row whose keys are all skipped (fully masked, or Lk = 0) is exactly +0.  Finite additive
 * values never skip a key, so a row masked only by the finite minimum (what
 * attnref_mask_to_additive produces) is not fully masked: it attends uniformly to its keys.  A skipped key contributes
 * nothing even if its K or V hold NaN or inf.  Deterministic: fixed loop order, no FMA
 * contraction.
 */
#ifndef ATTNREF_SDPA_H
#define ATTNREF_SDPA_H

#include <stdint.h>

#include "attnref/status.h"
#include "attnref/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct attnref_sdpa_params {
    int has_scale;         /* 0: scale = 1/sqrt(D) */
    double scale;          /* used iff has_scale */
    int causal;            /* 1: bottom-right causal mask (see above); mask must be NULL */
    int has_causal_offset; /* 0: offset = Lk - Lq */
    int64_t causal_offset; /* absolute position of query 0; used iff causal && has_causal_offset */
    /* Mask parameters (see above, SPEC clause 19).  Zero / NULL: not given. */
    int64_t window;              /* 0 = none; W >= 1 needs causal */
    int64_t batch;               /* entries of lengths / left_padding; must equal B when either is
                                  given (ignored otherwise) */
    const int64_t *lengths;      /* [batch] keys kept from the start, 0..Lk; NULL = none */
    const int64_t *left_padding; /* [batch] first key kept, 0..Lk; NULL = none */
    /* Terms of current models (SPEC clauses 20-22; zero / NULL: not given).  Appended, so the
     * positional initialisers above stay valid. */
    double softcap;             /* 0 = none; c > 0 (finite): s -> c * tanh(s / c) on the scaled
                                   score, before the bias and the mask [20] */
    double alibi_max_bias;      /* 0 = none; > 0 (finite): ALiBi, bias -m_h * |p - j| with
                                   m_h = attnref_alibi_slope(alibi_max_bias, Hq, h) [21] */
    const double *sinks;        /* [Hq] finite sink logits, one per query head, or NULL [22] */
    int64_t chunk;              /* 0 = none; C >= 1 (needs causal): chunked attention [20] */
    const int64_t *segment_ids; /* [batch * Lk] document id of each key position, or NULL:
                                   packed sequences (a query attends within its document) */
    const int64_t *block_ids;   /* [batch * Lk] bidirectional block id of each key position
                                   (< 0 = none), or NULL; needs causal */
} attnref_sdpa_params;

/* The ALiBi slope of query head h of hq (SPEC clause 21; Press et al.'s get_slopes, ggml's
 * max_bias): with n = 2^floor(log2 hq), m_h = 2^(-max_bias (h + 1) / n) for h < n and
 * 2^(-(max_bias / 2) (2 (h - n) + 1) / n) otherwise, in binary64.  Preconditions: hq >= 1,
 * 0 <= h < hq, max_bias finite.  No error return. */
double attnref_alibi_slope(double max_bias, int64_t hq, int64_t h);

/* 1 if query row i of batch row b keeps key j under the parameters alone: causal with its
 * offset (default Lk - Lq), window, lengths[b] and left_padding[b]; 0 if any of them excludes
 * it.  The mask tensor is not consulted (a row keeps key j iff this is 1 AND the mask keeps
 * it).  The one statement of which keys the parameters keep, used by the reference itself and
 * by every tool that needs to know (tolerance bounds, fuzzing, mutants).
 * p may be NULL (no parameters: 1).  Preconditions (what attnref_sdpa validates): window >= 0,
 * and 0 <= b < p->batch when lengths or left_padding is given; i and j are not range-checked
 * (any int64 offset is safe: nothing overflows).  No error return. */
int attnref_sdpa_key_kept(const attnref_sdpa_params *p, int64_t lq, int64_t lk, int64_t b,
                          int64_t i, int64_t j);

/* Compute out (see the file comment).  mask may be NULL; params may be NULL (defaults: no
 * explicit scale, not causal, no mask parameters).
 * Errors:
 *   ATTNREF_EINVAL  a NULL tensor, a bad descriptor, rank != 4, D == 0, B/D/Lk mismatch between q, k, v,
 *                   Hkv != v's heads, Hq % Hkv != 0, Hkv == 0, out shape != (B,Hq,Lq,Dv), a mask
 *                   of rank > 4 or not broadcastable to (B,Hq,Lq,Lk), both causal and a mask,
 *                   a non-finite explicit scale or one outside the f32 range
 *                   (|scale| > FLT_MAX); window < 0, window without causal,
 *                   lengths / left_padding / segment_ids / block_ids given with batch != B, an
 *                   entry of lengths or left_padding outside 0..Lk; softcap or alibi_max_bias
 *                   negative or not finite; a sink that is not finite; chunk < 0; chunk or
 *                   block_ids without causal;
 *   ATTNREF_EDTYPE  q/k/v dtypes differ or are not float, out dtype != q dtype, an additive mask
 *                   dtype that does not promote to the q dtype;
 *   ATTNREF_ERANGE  a tensor larger than ATTNREF_MAX_NUMEL;
 *   ATTNREF_ENOMEM  the O(Lk) scratch row could not be allocated.
 * Nothing is written to out on error. */
int attnref_sdpa(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                 const attnref_tensor *mask, const attnref_sdpa_params *params, attnref_tensor *out,
                 attnref_diag *diag);

/* Validate the arguments of attnref_sdpa without computing anything: the same checks in the
 * same order, so the same status and the same diag message for every invalid call (what a fast
 * implementation runs before its own kernel, to reject exactly what the reference rejects).
 * out may be NULL: then it is not checked (as attnref_sdpa_f64, whose output is the q dtype);
 * params may be NULL (defaults).  Returns ATTNREF_OK (diag cleared) or one of attnref_sdpa's
 * errors except ATTNREF_ENOMEM (nothing is allocated). */
int attnref_sdpa_check(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                       const attnref_tensor *mask, const attnref_sdpa_params *params,
                       const attnref_tensor *out, attnref_diag *diag);

/* As attnref_sdpa, but writes the unrounded binary64 results (before the final rounding) to
 * out_f64, a caller-allocated contiguous (B, Hq, Lq, Dv) array.  These are the golden values
 * the conformance cases store.  Errors: as attnref_sdpa, except that there is no out tensor to
 * validate (out_f64 NULL -> ATTNREF_EINVAL); the output dtype is the q dtype. */
int attnref_sdpa_f64(const attnref_tensor *q, const attnref_tensor *k, const attnref_tensor *v,
                     const attnref_tensor *mask, const attnref_sdpa_params *params, double *out_f64,
                     attnref_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
