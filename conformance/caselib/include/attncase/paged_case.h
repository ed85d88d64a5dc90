/* attncase/paged_case.h — the paged part of an `op: paged` case (case format v4, cases/FORMAT.md
 * "Paged cases"): one paged KV cache (a pool of pages, a block table, per-row lengths) and a
 * sequence of append and attend steps, each with what must hold afterwards.
 *
 * The initial pool holds the live keys of every row in their pages and poison (NaN, inf, large
 * finite stale values) in every slot no row's length covers.  After an append the harness
 * checks that each new token's (page, slot) holds its bits and that every other byte of both
 * pools is unchanged; after an attend, the output within the step's clause 13 tolerance.  A
 * step may first replace the table or the lengths (they stay in force); after a successful
 * append seq_lens[b] grows by n_b.  Semantics: SPEC.md clause 23.
 */
#ifndef ATTNCASE_PAGED_CASE_H
#define ATTNCASE_PAGED_CASE_H

#include <stdint.h>

#include "attncase/case.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACASE_MAX_PAGED_STEPS 1024 /* steps per case */
#define ACASE_MAX_PAGE_SIZE 65536  /* P */
#define ACASE_MAX_PAGES 65536      /* num_pages */
#define ACASE_MAX_TABLE_WIDTH 4096 /* entries per block table row */

typedef enum acase_paged_op {
    ACASE_PSTEP_APPEND = 1, /* paged_append: k (B,Hkv,S,D), v (B,Hkv,S,Dv), new_lens */
    ACASE_PSTEP_ATTEND = 2  /* paged_sdpa: q (B,Hq,Lq,D), query_lens and the params */
} acase_paged_op;

/* One step and what must hold after it. */
typedef struct acase_paged_step {
    acase_paged_op op;
    /* Replacements in force from this step on (NULL: the previous ones). */
    int32_t *block_table; /* owned [batch * table_width] or NULL */
    int64_t table_width;  /* with block_table */
    int64_t *seq_lens;    /* owned [batch] or NULL: any values (a rejection step's) */

    /* APPEND */
    acase_tensor k, v;
    int64_t *new_lens; /* owned [batch] or NULL (S each) */
    /* ATTEND */
    acase_tensor q;
    int64_t *query_lens; /* owned [batch] or NULL (Lq each) */
    int causal;
    int64_t window;
    int has_scale;
    double scale;
    double softcap, alibi_max_bias; /* 0 = none */
    double *sinks;                  /* owned [nsinks] (= Hq) or NULL */
    int64_t nsinks;
    int64_t chunk; /* 0 = none */

    /* expect: */
    int error; /* 0, or ATTNREF_EINVAL / ATTNREF_EDTYPE: the step must be rejected, the pool
                  unchanged */
    /* APPEND (not rejected): the (page, slot) pair of every new token, row by row in token
     * order: nslots pairs, nslots = sum of n_b. */
    int64_t *slots; /* owned [2 * nslots] */
    int64_t nslots;
    /* ATTEND (not rejected): the output as expected.out, its row checks and tolerance. */
    attnref_dtype out_dtype;
    int64_t out_shape[4]; /* (B, Hq, Lq, Dv) */
    double *out;          /* owned, f64 reference values */
    uint8_t *row_check;   /* owned [B*Hq*Lq] or NULL (all CLOSE) */
    double ulps;
    double *row_atol; /* owned [B*Hq*Lq] */
} acase_paged_step;

typedef struct acase_paged {
    attnref_dtype dtype; /* f32, f16, bf16: the pool and every step tensor */
    int64_t batch, kv_heads, head_dim, v_head_dim, page_size, num_pages;
    int64_t table_width;
    int32_t *block_table; /* owned [batch * table_width] */
    int64_t *seq_lens;    /* owned [batch]: L_b before the first step */
    /* The pool: (num_pages, Hkv, P, D) and (num_pages, Hkv, P, Dv), inline data; layout BLHD =
     * token-major (num_pages, P, Hkv, D) buffers (vLLM's NHD), seen through permuted strides. */
    acase_tensor k_pages, v_pages;
    int64_t nsteps;
    acase_paged_step *steps; /* owned [nsteps] */
} acase_paged;

/* "append", "attend"; NULL for an unknown value. */
const char *acase_paged_op_name(acase_paged_op op);

/* The capabilities a paged case needs: paged, the dtype, and for its attend steps gqa (Hq !=
 * Hkv), dv_ne_d, scale (an explicit scale), sdpa.softcap, sdpa.alibi, sdpa.sinks, sdpa.chunk
 * (causal and window are paged_sdpa's own parameters). */
uint64_t acase_paged_requires(const acase_paged *pc);

acase_paged *acase_paged_new(void);
void acase_paged_free(acase_paged *pc);
/* Grow pc->steps by one zeroed step (NULL when out of memory or at ACASE_MAX_PAGED_STEPS). */
acase_paged_step *acase_paged_add_step(acase_paged *pc, acase_paged_op op);

#ifdef __cplusplus
}
#endif
#endif
