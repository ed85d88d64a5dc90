/* attnref/paged.h — reference paged KV caches (SPEC.md clause 23).
 *
 * A pool of num_pages pages of P slots: K pages (num_pages, Hkv, P, D), V pages
 * (num_pages, Hkv, P, Dv), one float dtype, any strides (a token-major (num_pages, P, Hkv, D)
 * buffer is a permuted view).  Batch row b owns the table row block_table[b * table_width ...]:
 * its logical key p (0 <= p < L_b) lives in page block_table[b * table_width + p / P], slot
 * p % P.  Entries at or past ceil(L_b / P), slots p >= L_b and pages no row lists are never read
 * (they may hold NaN, inf, -1 ...).  Two rows may list the same page (a shared prefix).
 *
 * attnref_paged_sdpa is, row by row, attnref_sdpa over the keys 0..L_b-1 gathered into a
 * contiguous (1, Hkv, L_b, D) buffer, with the first q_b = query_lens[b] query rows of row b at
 * positions L_b - q_b + i (attnref_sdpa's default bottom-right offset for Lq = q_b, Lk = L_b);
 * output rows i >= q_b are exactly 0.  That is the one statement of the semantics: every mask
 * term (causal, window, softcap, ALiBi, sinks, chunk) means exactly what it means there.
 *
 * attnref_paged_append writes token t < n_b of row b at logical position seq_lens[b] + t,
 * copying its bits (one dtype throughout); no other byte of the pool changes.
 *
 * Both validate everything before writing anything (nothing written on error).
 */
#ifndef ATTNREF_PAGED_H
#define ATTNREF_PAGED_H

#include <stdint.h>

#include "attnref/sdpa.h"
#include "attnref/status.h"
#include "attnref/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Arguments of attnref_paged_sdpa / attnref_paged_sdpa_f64. */
typedef struct attnref_paged_args {
    const attnref_tensor *q;       /* (B, Hq, Lq, D), any strides */
    const attnref_tensor *k_pages; /* (num_pages, Hkv, P, D), any strides, P >= 1 */
    const attnref_tensor *v_pages; /* (num_pages, Hkv, P, Dv), same dtype */
    const int32_t *block_table;    /* [B * table_width] */
    int64_t table_width;           /* >= 1 */
    const int64_t *seq_lens;       /* [B] L_b >= 0, ceil(L_b / P) <= table_width */
    const int64_t *query_lens;     /* [B] 0 <= q_b <= min(Lq, L_b), or NULL: Lq each */
    /* has_scale, scale, causal, window, softcap, alibi_max_bias, sinks and chunk as
     * attnref_sdpa (the batch-wide params); the offset and the per-row parameters are the
     * paged call's own, so has_causal_offset, lengths, left_padding, segment_ids and block_ids
     * must be 0 / NULL (EINVAL). */
    attnref_sdpa_params params;
} attnref_paged_args;

/* Arguments of attnref_paged_append. */
typedef struct attnref_paged_append_args {
    const attnref_tensor *k;    /* (B, Hkv, S, D) new keys, any strides */
    const attnref_tensor *v;    /* (B, Hkv, S, Dv) new values */
    attnref_tensor *k_pages;    /* (num_pages, Hkv, P, D): written */
    attnref_tensor *v_pages;    /* (num_pages, Hkv, P, Dv): written */
    const int32_t *block_table; /* [B * table_width] */
    int64_t table_width;        /* >= 1 */
    const int64_t *seq_lens;    /* [B] keys of row b before the append, >= 0 */
    const int64_t *new_lens;    /* [B] 0 <= n_b <= S, or NULL: S each */
} attnref_paged_append_args;

/* Validate a paged attention call without computing: the checks of attnref_paged_sdpa, in its
 * order.  out may be NULL (not checked; the f64 variant's output is q's dtype).
 * Errors:
 *   ATTNREF_EINVAL  NULL args, q, k_pages, v_pages, seq_lens, or block_table with B >= 1; a bad
 *                   descriptor; rank != 4; P == 0; D == 0; Hkv == 0; D or Hkv disagreeing
 *                   between q and the pools, or num_pages / Hkv / P between the pools;
 *                   Hq % Hkv != 0; out shape != (B, Hq, Lq, Dv); table_width < 1;
 *                   B * table_width beyond ATTNREF_MAX_NUMEL; L_b < 0; ceil(L_b / P) >
 *                   table_width ("a length beyond the table"); q_b < 0, q_b > Lq or q_b > L_b;
 *                   an entry e < ceil(L_b / P) of row b outside 0..num_pages-1; a parameter
 *                   the paged call does not take (has_causal_offset, lengths, left_padding,
 *                   segment_ids, block_ids); every parameter attnref_sdpa rejects (window
 *                   or chunk without causal, a bad scale, softcap, ALiBi or sink value ...);
 *   ATTNREF_EDTYPE  q, k_pages, v_pages of different dtypes or not float; out dtype != q's;
 *   ATTNREF_ERANGE  a tensor beyond ATTNREF_MAX_NUMEL. */
int attnref_paged_check(const attnref_paged_args *a, const attnref_tensor *out, attnref_diag *diag);

/* out (B, Hq, Lq, Dv), any strides, q's dtype: row b's first q_b query rows attend to its
 * gathered keys (see the file comment), rows i >= q_b are +0.  Errors: attnref_paged_check's,
 * and ATTNREF_ENOMEM (the O(Hkv * L_b * (D + Dv)) gather buffer of one row). */
int attnref_paged_sdpa(const attnref_paged_args *a, attnref_tensor *out, attnref_diag *diag);

/* As attnref_paged_sdpa, but the unrounded binary64 results into out_f64, a caller-allocated
 * contiguous (B, Hq, Lq, Dv) array (the golden values of the cases); out_f64 NULL -> EINVAL. */
int attnref_paged_sdpa_f64(const attnref_paged_args *a, double *out_f64, attnref_diag *diag);

/* Write the new tokens into the pool (see the file comment).
 * Errors (the pool unchanged):
 *   ATTNREF_EINVAL  NULL args, tensors, seq_lens, or block_table with B >= 1; a bad descriptor;
 *                   rank != 4; P == 0; B, Hkv, S, D or Dv disagreeing between k, v and the
 *                   pools; num_pages, Hkv or P between the pools; table_width < 1; B *
 *                   table_width beyond ATTNREF_MAX_NUMEL; seq_lens[b] < 0; n_b < 0 or > S; a
 *                   length after the append beyond the table (ceil((L_b + n_b) / P) >
 *                   table_width); an entry covering positions L_b .. L_b + n_b - 1 outside
 *                   0..num_pages-1 (older entries are not checked: only attention reads them);
 *                   a pool with a stride of 0 on an axis of extent > 1 (its slots alias);
 *                   two new tokens of the call (of two rows, or of one row whose table lists
 *                   a page twice) that map to the same (page, slot): the result would depend
 *                   on the order of the writes (checked last);
 *   ATTNREF_EDTYPE  k, v, k_pages, v_pages of different dtypes or not float;
 *   ATTNREF_ERANGE  a tensor beyond ATTNREF_MAX_NUMEL;
 *   ATTNREF_ENOMEM  the list of the new tokens' slots (one entry per new token). */
int attnref_paged_append(const attnref_paged_append_args *a, attnref_diag *diag);

/* Where token t of row b lands: *page and *slot for logical position seq_lens[b] + t, no
 * validation (the caller has checked the call).  Used by the case generator to write the
 * expected slot list and by the harness. */
void attnref_paged_locate(const int32_t *block_table, int64_t table_width, int64_t page_size,
                          int64_t b, int64_t pos, int64_t *page, int64_t *slot);

#ifdef __cplusplus
}
#endif

#endif
