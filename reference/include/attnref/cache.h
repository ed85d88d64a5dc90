/* attnref/cache.h — the reference KV cache: standard, rotating, chunked, quantized and batched.
 *
 * Semantics: SPEC.md clauses 14 (standard), 15 (rotating), 16 (chunked), 17 (quantized) and
 * 18 (batched); they follow mlx-lm's cache module as of v0.32 (KVCache, RotatingKVCache,
 * ChunkedKVCache, QuantizedKVCache, BatchKVCache, BatchRotatingKVCache) except where a clause
 * says "Differs from mlx-lm".
 *
 * Model.  A cache holds, for each batch row b, a sequence of T SLOTS in time order (the "key
 * axis"); T is shared by all rows.  Each slot either holds one token — its absolute position,
 * its key (Hkv x D) and its value (Hkv x Dv) — or is a PAD slot (batched caches only: left
 * padding).  Conformance is judged on this time-ordered view, never on a physical layout (a
 * ring buffer, spare capacity).  Shapes are (B, Hkv, T, D) for keys and (B, Hkv, T, Dv) for
 * values, in (B, H, L, D) order.
 *
 * offset[b] is the absolute position the next token of row b will take.  For non-batched kinds
 * it is the same for every row.  Batched rows start at offset -left_padding[b].  Every slot j
 * (0 <= j < T) of row b that is not a pad holds the token at position offset[b] - T + j, except
 * in a ROTATING cache with keep > 0, whose first `keep` slots hold positions 0..keep-1 once
 * evictions have begun (attnref_cache_positions always gives the truth).
 *
 * dtypes: the cache has one storage dtype (F32, F16 or BF16; f16/bf16 as uint16_t patterns,
 * attnref/dtype.h).  Keys/values given to update must have that dtype; the values stored are
 * those inputs exactly (QUANTIZED: their dequantized values, clause 17, exactly representable in
 * the cache dtype).  No arithmetic happens on stored values except quantization.
 *
 * Errors: every function returns ATTNREF_OK or a negative ATTNREF_* code (attnref/status.h) and
 * fills the optional diag with a one-line reason naming the argument/field.  A failed call
 * changes nothing (the cache is exactly as before).  Sizes are bounded by ATTNREF_CACHE_MAX_LEN
 * (slots, tokens, left padding) and ATTNREF_MAX_NUMEL (elements of any tensor the cache holds
 * or builds): exceeding either gives ATTNREF_ERANGE, never a huge allocation.
 *
 * Determinism: all computing is in binary64 with -ffp-contract=off; no randomness.
 */
#ifndef ATTNREF_CACHE_H
#define ATTNREF_CACHE_H

#include <stdint.h>

#include "attnref/dtype.h"
#include "attnref/sdpa.h"
#include "attnref/status.h"
#include "attnref/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest number of slots a cache may hold, tokens one update may append, or left padding a row
 * may have (2^24). */
#define ATTNREF_CACHE_MAX_LEN ((int64_t)1 << 24)

/* Cache kinds.  Values are stable (files, plugin ABI). */
typedef enum attnref_cache_kind {
    ATTNREF_CACHE_STANDARD = 1,      /* clause 14; mlx-lm KVCache */
    ATTNREF_CACHE_ROTATING = 2,      /* clause 15; mlx-lm RotatingKVCache(max_size, keep) */
    ATTNREF_CACHE_CHUNKED = 3,       /* clause 16; mlx-lm ChunkedKVCache(chunk_size) (Llama 4) */
    ATTNREF_CACHE_QUANTIZED = 4,     /* clause 17; mlx-lm QuantizedKVCache(group_size, bits) */
    ATTNREF_CACHE_BATCH = 5,         /* clause 18; mlx-lm BatchKVCache(left_padding) */
    ATTNREF_CACHE_BATCH_ROTATING = 6 /* clause 18; mlx-lm BatchRotatingKVCache(max_size, lp) */
} attnref_cache_kind;

/* Canonical name: "standard", "rotating", "chunked", "quantized", "batch", "batch_rotating";
 * "?" for an unknown value. */
const char *attnref_cache_kind_name(attnref_cache_kind kind);

/* Parse a canonical name.  ATTNREF_OK, or ATTNREF_EINVAL (any other string, NULL); *out is
 * untouched on error. */
int attnref_cache_kind_parse(const char *name, attnref_cache_kind *out);

/* Creation parameters.  Zero-initialise, then set what the kind needs; a field the kind does
 * not use must be 0 (NULL), so a misplaced parameter is an error rather than silently ignored. */
typedef struct attnref_cache_params {
    attnref_cache_kind kind;
    attnref_dtype dtype;         /* storage dtype: ATTNREF_F32, _F16 or _BF16 */
    int64_t batch;               /* B >= 1 (every kind; non-batched kinds share one offset) */
    int64_t kv_heads;            /* Hkv >= 1 */
    int64_t head_dim;            /* D >= 1 (keys) */
    int64_t value_dim;           /* Dv >= 1 (values) */
    int64_t max_size;            /* ROTATING, BATCH_ROTATING: 1..ATTNREF_CACHE_MAX_LEN */
    int64_t keep;                /* ROTATING only: 0 <= keep < max_size (never evicted) */
    int64_t chunk_size;          /* CHUNKED: 1..ATTNREF_CACHE_MAX_LEN */
    int64_t group_size;          /* QUANTIZED: 32, 64 or 128, dividing D and Dv */
    int64_t bits;                /* QUANTIZED: 4 or 8 */
    const int64_t *left_padding; /* BATCH, BATCH_ROTATING: [batch] entries
                                     0..ATTNREF_CACHE_MAX_LEN, or NULL = all 0; copied */
} attnref_cache_params;

typedef struct attnref_cache attnref_cache; /* opaque */

/* Create an empty cache (T = 0, offsets = -left_padding, or 0).
 * Errors: ATTNREF_EINVAL (NULL p/out, unknown kind, dtype not F32/F16/BF16, batch/kv_heads/
 * head_dim/value_dim < 1, a kind parameter out of range or given to a kind that does not use
 * it, group_size not dividing D or Dv, a left_padding entry out of range), ATTNREF_ERANGE
 * (batch * kv_heads * max(D, Dv) beyond ATTNREF_MAX_NUMEL, a size beyond
 * ATTNREF_CACHE_MAX_LEN), ATTNREF_ENOMEM.  *out is set only on success. */
int attnref_cache_create(const attnref_cache_params *p, attnref_cache **out, attnref_diag *diag);

/* Free a cache; NULL is a no-op. */
void attnref_cache_destroy(attnref_cache *c);

/* Deep copy (for snapshots: a caller that wants "the state before the step").  Errors:
 * ATTNREF_EINVAL (NULL), ATTNREF_ENOMEM. */
int attnref_cache_clone(const attnref_cache *c, attnref_cache **out, attnref_diag *diag);

/* Scalar state.  T is the key-axis length (slots in time order, pads included). */
typedef struct attnref_cache_info {
    attnref_cache_kind kind;
    attnref_dtype dtype;
    int64_t batch, kv_heads, head_dim, value_dim;
    int64_t max_size, keep, chunk_size, group_size, bits; /* as created (0 where unused) */
    int64_t T;    /* slots held per row (the length of the visible keys) */
    int prepared; /* 1 between attnref_cache_prepare(lengths) and attnref_cache_finalize */
} attnref_cache_info;

/* Fill *info.  Errors: ATTNREF_EINVAL (NULL). */
int attnref_cache_get_info(const attnref_cache *c, attnref_cache_info *info, attnref_diag *diag);

/* Append S >= 1 tokens to every row: k is (B, Hkv, S, D), v is (B, Hkv, S, Dv), any strides,
 * dtype = the cache dtype.  The kind's eviction rule runs first (ROTATING / BATCH_ROTATING:
 * clause 15/18; CHUNKED: clause 16), then the S tokens take positions offset[b]..offset[b]+S-1
 * and every offset grows by S.  QUANTIZED quantizes each group of group_size consecutive
 * elements along D (and Dv) and stores the dequantized values (clause 17).
 * Errors: ATTNREF_EINVAL (NULL, a bad descriptor, rank != 4, shape mismatch with the cache,
 * S = 0 — differs from mlx-lm, where an empty update is accepted and on a rotating cache
 * evicts —, a single-token update of a BATCH_ROTATING cache while prepared (mlx-lm raises
 * too), a non-finite value given to a QUANTIZED cache), ATTNREF_EDTYPE (k or v dtype != cache
 * dtype), ATTNREF_ERANGE (T or an offset would exceed ATTNREF_CACHE_MAX_LEN), ATTNREF_ENOMEM. */
int attnref_cache_update(attnref_cache *c, const attnref_tensor *k, const attnref_tensor *v,
                         attnref_diag *diag);

/* Remove up to n of the newest tokens; *trimmed (may be NULL) receives how many were removed.
 * STANDARD, QUANTIZED, BATCH: m = min(n, T) slots removed, offsets -= m.  CHUNKED: m = min(n,
 * tokens held).  ROTATING, BATCH_ROTATING: as above while offset < max_size (batched: the
 * columns appended since creation, net of trims, < max_size; as mlx-lm is_trimmable);
 * otherwise m = 0 and nothing changes (differs from mlx-lm, whose trim moves the offset
 * anyway, mlx-lm issue #1776).
 * Errors: ATTNREF_EINVAL (NULL c, n < 0 — differs from mlx-lm, which grows the offset; the
 * cache is unchanged and *trimmed is untouched). */
int attnref_cache_trim(attnref_cache *c, int64_t n, int64_t *trimmed, attnref_diag *diag);

/* Copy the offsets, offsets[0..B-1] (values: later updates do not change the copy).
 * Errors: ATTNREF_EINVAL (NULL). */
int attnref_cache_offsets(const attnref_cache *c, int64_t *offsets, attnref_diag *diag);

/* Copy left_padding[0..B-1] as mlx-lm BatchKVCache / BatchRotatingKVCache report it (clause
 * 18); 0 for non-batched kinds.  In a BATCH_ROTATING cache it falls by one for every slot
 * evicted and may be negative (then row b has no pad slot); padding added later (finalize,
 * extend) counts from max(0, left_padding[b]) (clause 18).  Pad slots of row b are exactly the
 * first max(0, left_padding[b]) slots (right padding is not a pad until finalize).
 * Errors: ATTNREF_EINVAL (NULL). */
int attnref_cache_left_padding(const attnref_cache *c, int64_t *left_padding, attnref_diag *diag);

/* Copy the absolute position of every slot, positions[b * T + j] for row b, slot j, in time
 * order; -1 marks a pad slot.  T from attnref_cache_get_info.  Errors: ATTNREF_EINVAL (NULL
 * with T > 0). */
int attnref_cache_positions(const attnref_cache *c, int64_t *positions, attnref_diag *diag);

/* Copy the visible keys and values, in time order, into caller tensors k (B, Hkv, T, D) and v
 * (B, Hkv, T, Dv) of the cache dtype, any strides (either may be NULL to skip it).  Pad slots
 * are written as a quiet NaN (never read them).  QUANTIZED: the dequantized values.
 * Errors: ATTNREF_EINVAL (bad descriptor, shape mismatch), ATTNREF_EDTYPE (dtype != cache
 * dtype). */
int attnref_cache_kv(const attnref_cache *c, attnref_tensor *k, attnref_tensor *v,
                     attnref_diag *diag);

/* Shape of the keep mask for the next N >= 1 queries: (B, 1, N, Tk), where Tk is the T the
 * cache will have after an update with N tokens.  Errors: ATTNREF_EINVAL (NULL, N < 1),
 * ATTNREF_ERANGE (N or Tk beyond ATTNREF_CACHE_MAX_LEN, B*N*Tk beyond ATTNREF_MAX_NUMEL). */
int attnref_cache_mask_shape(const attnref_cache *c, int64_t n, int64_t shape[4],
                             attnref_diag *diag);

/* Build the boolean keep mask (true = attend) for the next N queries, BEFORE the update that
 * stores their N tokens.  KEY AXIS: the mask's last axis indexes the slots the cache will hold
 * after that update, in time order — exactly what attnref_cache_positions / attnref_cache_kv
 * report after attnref_cache_update with N tokens (the slots surviving the eviction rule, then
 * the N new tokens).  Query i (0 <= i < N) of row b has absolute position offset[b] + i.
 * With P = Tk - N (old slots on the key axis), query i keeps slot j iff
 *     j <= P + i                          (causal, bottom-right)
 *     and j > P + i - W     when W > 0    (window counted in slots of the key axis)
 *     and slot j is not a pad of row b    (batched: j >= left_padding[b] after eviction)
 * where W = window for STANDARD, QUANTIZED, BATCH (0 = none) and W = window ? window :
 * max_size for ROTATING, BATCH_ROTATING (as mlx-lm make_mask; with keep > 0 the window can
 * hide the kept tokens, as there).  CHUNKED: window must be 0; query at position p keeps the
 * slot holding position q iff q <= p and q / chunk_size == p / chunk_size (integer division;
 * as the Llama 4 model in mlx-lm).  keep: a caller-allocated BOOL tensor of exactly the shape
 * from attnref_cache_mask_shape, any strides.
 * Errors: those of attnref_cache_mask_shape, ATTNREF_EINVAL (window < 0, window > 0 on a
 * CHUNKED cache, keep shape mismatch or bad descriptor), ATTNREF_EDTYPE (keep not BOOL).
 * Nothing is written on error. */
int attnref_cache_make_mask(const attnref_cache *c, int64_t n, int64_t window, attnref_tensor *keep,
                            attnref_diag *diag);

/* Attend a block through the cache: attnref_cache_update(c, k, v), then attnref_sdpa_f64 of q
 * (B, Hq, N, D; Hq % Hkv == 0, GQA as attnref_sdpa; dtype = cache dtype) over the visible
 * keys/values with the mask attnref_cache_make_mask(c, N, window) built before the update.
 * out_f64: caller-allocated contiguous (B, Hq, N, Dv) binary64, unrounded (the golden values).
 * A query whose mask row keeps nothing gives +0.  params: scale only (causal must be 0;
 * NULL = 1/sqrt(D)).  Errors: those of update, make_mask and attnref_sdpa_f64; on error the
 * cache is unchanged. */
int attnref_cache_attend(attnref_cache *c, const attnref_tensor *q, const attnref_tensor *k,
                         const attnref_tensor *v, int64_t window, const attnref_sdpa_params *params,
                         double *out_f64, attnref_diag *diag);

/* ---- batched operations (BATCH, BATCH_ROTATING; any other kind: ATTNREF_EINVAL) ---------- */

/* Prepare a (possibly chunked) prefill.  left_padding[B] (or NULL): add left padding, only to a
 * cache that has never been updated (offsets -= left_padding).  lengths[B] (or NULL): right
 * padding follows — only the next lengths[b] tokens appended to row b are valid; tokens
 * appended after them are right padding until attnref_cache_finalize (the mask does not hide
 * them; a query of a right-pad token has no specified output).  BATCH_ROTATING moves the right
 * padding appended so far to the front before each multi-token update's eviction, so padding
 * never evicts valid tokens (as mlx-lm).  Errors: ATTNREF_EINVAL (wrong kind, both NULL, a
 * negative or too large entry, left_padding on a used cache, lengths while already prepared). */
int attnref_cache_prepare(attnref_cache *c, const int64_t *left_padding, const int64_t *lengths,
                          attnref_diag *diag);

/* Convert the right padding of the prepared prefill to left padding: for row b, the
 * p_b = max(0, appended since prepare - lengths[b]) newest slots become pads moved to the
 * front (the row's tokens shift right to end at slot T-1), left_padding[b] += p_b,
 * offset[b] -= p_b.  A cache that is not prepared is unchanged (OK).  Errors: ATTNREF_EINVAL
 * (NULL, wrong kind). */
int attnref_cache_finalize(attnref_cache *c, attnref_diag *diag);

/* Keep rows rows[0..n-1] (indices 0..B-1, in that order; repeats allowed), B becomes n.  BATCH
 * then removes the m = min(min_b left_padding[b], T) leading slots all remaining rows pad
 * (T -= m, left_padding -= m; offsets unchanged).  BATCH_ROTATING keeps T (as mlx-lm).
 * Errors: ATTNREF_EINVAL (NULL, wrong kind, n < 1, an index out of range, while prepared),
 * ATTNREF_ENOMEM. */
int attnref_cache_filter(attnref_cache *c, const int64_t *rows, int64_t n, attnref_diag *diag);

/* Append other's rows after c's (B = Bc + Bo).  The shorter of the two is left-padded to
 * T = max(Tc, To) (its left_padding grows by the difference); offsets are kept.  other is
 * unchanged.  Both must have the same kind, dtype, Hkv, D, Dv (and max_size).
 * Errors: ATTNREF_EINVAL (NULL, wrong/mismatched kind or parameters, either prepared),
 * ATTNREF_ERANGE, ATTNREF_ENOMEM. */
int attnref_cache_extend(attnref_cache *c, const attnref_cache *other, attnref_diag *diag);

/* Merge n >= 1 single caches (B = 1 each, all STANDARD or all ROTATING with keep = 0 and one
 * max_size) into a new BATCH / BATCH_ROTATING cache of B = n: row i holds cache i's tokens
 * (ROTATING: its newest min(offset, max_size)), right-aligned to T = the longest, left-padded;
 * offsets are the inputs' offsets.  The inputs are unchanged.
 * Errors: ATTNREF_EINVAL (NULL, n < 1, a kind other than STANDARD/ROTATING, mixed kinds,
 * B != 1, keep > 0, mismatched dtype/Hkv/D/Dv/max_size), ATTNREF_ERANGE, ATTNREF_ENOMEM. */
int attnref_cache_merge(const attnref_cache *const *caches, int64_t n, attnref_cache **out,
                        attnref_diag *diag);

/* ---- quantization (clause 17), exposed for tests and golden generation ------------------- */

/* Quantize one group x[0..g-1] (values exactly representable in dt, all finite) with `bits`
 * (4 or 8) as clause 17 defines: scale and bias rounded to dt (returned as doubles, exact),
 * codes q[i] in 0..2^bits-1.  Errors: ATTNREF_EINVAL (NULL, g < 1, bits not 4/8, a non-finite
 * value), ATTNREF_EDTYPE (dt not F32/F16/BF16). */
int attnref_quantize_group(const double *x, int64_t g, int bits, attnref_dtype dt, uint8_t *q,
                           double *scale, double *bias, attnref_diag *diag);

/* The dequantized value of code q (clause 17): scale * q + bias evaluated in binary64, then
 * rounded once to dt (RNE); returned as a double (exact in dt). */
double attnref_dequantize(uint8_t q, double scale, double bias, attnref_dtype dt);

#ifdef __cplusplus
}
#endif
#endif
