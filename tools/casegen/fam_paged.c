/* fam_paged.c — golden paged KV cache cases (family paged.*, SPEC.md clause 23): decode and
 * chunked prefill over a pool of pages through a block table.
 *
 * Each row of the table below is one scenario, crossed with dtypes: the pool is laid out as a
 * serving engine's allocator leaves it (the physical pages a seeded shuffle of the pool, never
 * the identity; spare pages no row lists), every slot outside every row's length holds poison
 * (NaN, +-inf or large finite "stale" values, by the scenario), unused table entries hold -1 or
 * indices past the pool, and the steps append new tokens and attend through the table.  The
 * expectations come from the reference (attnref/paged.h): the (page, slot) of every appended
 * token, the binary64 output of every attention, and its clause 13 tolerance from casegen's one
 * tolerance function applied row by row to the contiguous sdpa call the row amounts to (so
 * every honest implementation of that call is proven to pass).  The must-reject scenarios end
 * in a step the reference must refuse, with nothing written.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/paged_case.h"
#include "attnref/paged.h"
#include "casegen.h"

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("casegen: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz);
    if (!p)
        die("out of memory");
    return p;
}

/* ---- the scenario table ------------------------------------------------------------------- */

enum { PZ_NAN = 1, PZ_INF, PZ_STALE, PZ_MIXED };      /* what the unread slots hold */
enum { UN_NEG1 = 0, UN_PAST = 1, UN_BOTH = 2 };       /* what unused table entries hold */
enum { DT_ALL = 0, DT_F32_F16 = 1, DT_F16_BF16 = 2 }; /* dtypes a scenario is posed in */
enum {
    RJ_NONE = 0,
    RJ_PAGE_PAST,
    RJ_PAGE_NEG,
    RJ_BEYOND_TABLE,
    RJ_QLEN_GT_LEN,
    RJ_QLEN_GT_LQ,
    RJ_NEG_LEN,
    RJ_NEG_QLEN,
    RJ_APPEND_PAGE,
    RJ_APPEND_BEYOND,
    RJ_NEWLEN_GT_S,
    RJ_NEG_NEWLEN,
    RJ_TWO_ROWS_ONE_SLOT,
    RJ_ONE_ROW_ONE_SLOT,
    RJ_DTYPE_APPEND,
    RJ_DTYPE_ATTEND,
    RJ_APPEND_PAGE_PAST
};

#define NOLENS (-2) /* lens[0] == NOLENS: new_lens / query_lens absent (S / Lq each) */

typedef struct pstep {
    char op;         /* 'a' append, 't' attend, 0 = end */
    int64_t s;       /* append: S; attend: Lq */
    int64_t lens[4]; /* new_lens / query_lens per row, or lens[0] == NOLENS */
    int causal;
    int64_t window, chunk;
    double softcap, alibi, scale; /* scale 0 = default */
    int sinks;
} pstep;

typedef struct pspec {
    const char *what;
    const char *desc;
    const char *rule2; /* a second clause 23 rule id besides the first step's, or NULL */
    int dts;
    int64_t b, hq, hkv, d, dv, p;
    int64_t tw;     /* table width; 0 = exactly max ceil(final L_b / P) */
    int64_t spare;  /* pool pages no row lists */
    int64_t shared; /* rows >= 1 list row 0's first `shared` pages (a shared prefix) */
    int64_t lens[4];
    int poison, unused, nhd;
    int reject; /* RJ_*: a final step the reference must refuse */
    pstep steps[4];
} pspec;

#define APP(S, ...)                                                                                \
    {                                                                                              \
        'a', (S), {__VA_ARGS__}, 0, 0, 0, 0, 0, 0, 0                                               \
    }
#define ATT(LQ, CAUSAL, ...)                                                                       \
    {                                                                                              \
        't', (LQ), {__VA_ARGS__}, (CAUSAL), 0, 0, 0, 0, 0, 0                                       \
    }

static const pspec specs[] = {
    /* ---- decode (Lq = 1) ---- */
    {"decode.p16_gqa4",
     "Decode of three sequences, P = 16, GQA 4:1: one appended token per row, "
     "then one query each. Lengths 37, 15 and 0 before the append: row 1's append fills its "
     "page exactly (last_page_len 16 = P), row 2 starts from nothing (last_page_len 1), row 0 "
     "has a partial last page whose NaN tail must not be read.",
     "clause23.last_page",
     DT_ALL,
     3,
     4,
     1,
     8,
     8,
     16,
     0,
     2,
     0,
     {37, 15, 0},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_NONE,
     {APP(1, NOLENS), ATT(1, 1, NOLENS)}},
    {"decode.p32",
     "Decode with OpenVINO's 32-slot blocks, GQA 2:1, a table wider than needed "
     "(unused entries -1): lengths 40 and 63 before the append, so row 1's last page is full "
     "after it and row 0 keeps a partial last page with a NaN tail.",
     "clause23.unused",
     DT_ALL,
     2,
     4,
     2,
     8,
     8,
     32,
     4,
     1,
     0,
     {40, 63},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_NONE,
     {APP(1, NOLENS), ATT(1, 1, NOLENS)}},
    {"decode.p32_inf_tail",
     "Decode with 32-slot blocks, +-inf in every unread slot, unused "
     "table entries past the pool, three rows of 33, 64 and 1 keys (last_page_len 1, 32, 1); "
     "no append: attention over the pool as given.",
     "clause23.unused",
     DT_F32_F16,
     3,
     2,
     2,
     8,
     8,
     32,
     3,
     2,
     0,
     {33, 64, 1},
     PZ_INF,
     UN_PAST,
     0,
     RJ_NONE,
     {ATT(1, 0, NOLENS)}},
    {"decode.p32_stale",
     "Decode with 32-slot blocks where every unread slot holds a large "
     "finite stale value of a freed sequence (they must still weigh nothing), non-causal "
     "queries and an explicit scale.",
     "clause23.unused",
     DT_F32_F16,
     2,
     2,
     1,
     8,
     8,
     32,
     2,
     3,
     0,
     {45, 32},
     PZ_STALE,
     UN_BOTH,
     0,
     RJ_NONE,
     {APP(1, NOLENS), {'t', 1, {NOLENS}, 0, 0, 0, 0, 0, 0.25, 0}}},
    {"decode.p48",
     "Decode with a page size of 48 (not a power of two), mixed poison (NaN, "
     "+-inf and stale values by slot), lengths 50 and 95 before a one-token append.",
     "clause23.boundary",
     DT_ALL,
     2,
     2,
     2,
     4,
     4,
     48,
     0,
     2,
     0,
     {50, 95},
     PZ_MIXED,
     UN_NEG1,
     0,
     RJ_NONE,
     {APP(1, NOLENS), ATT(1, 1, NOLENS)}},
    {"decode.p1",
     "Page size 1: every key in its own page, in shuffled order, with stale "
     "values in the spare pages; two appended tokens per row then a decode query.",
     "clause23.boundary",
     DT_ALL,
     2,
     2,
     2,
     4,
     4,
     1,
     9,
     3,
     0,
     {5, 3},
     PZ_STALE,
     UN_PAST,
     0,
     RJ_NONE,
     {APP(2, NOLENS), ATT(1, 1, NOLENS)}},
    {"decode.nhd_dv",
     "vLLM's token-major (NHD) pool, (num_pages, P, Hkv, D), seen as a "
     "permuted view; Dv = 4 != D = 8, GQA 2:1, P = 16, lengths 20 and 31.",
     "clause23.pool",
     DT_ALL,
     2,
     4,
     2,
     8,
     4,
     16,
     0,
     2,
     0,
     {20, 31},
     PZ_NAN,
     UN_NEG1,
     1,
     RJ_NONE,
     {APP(1, NOLENS), ATT(1, 1, NOLENS)}},
    {"decode.p32_nhd",
     "An NHD pool of 32-slot blocks: decode over lengths 31 and 64.",
     "clause23.pool",
     DT_F32_F16,
     2,
     2,
     1,
     8,
     8,
     32,
     0,
     2,
     0,
     {31, 64},
     PZ_NAN,
     UN_NEG1,
     1,
     RJ_NONE,
     {APP(1, NOLENS), ATT(1, 1, NOLENS)}},
    /* ---- chunked prefill and mixed batches ---- */
    {"prefill.mixed_p3",
     "Chunked prefill and decode in one batch, P = 3, GQA 3:1: row 0 "
     "decodes one token, row 1 (empty before) prefills 4, row 2 appends a chunk of 3 that "
     "crosses a page boundary; queries at L_b - q_b + i, causal per sequence; +-inf tails.",
     "clause23.decode",
     DT_ALL,
     3,
     3,
     1,
     8,
     8,
     3,
     5,
     2,
     0,
     {7, 0, 5},
     PZ_INF,
     UN_PAST,
     0,
     RJ_NONE,
     {APP(4, 1, 4, 3), ATT(4, 1, 1, 4, 3)}},
    {"prefill.p32",
     "Chunked prefill with 32-slot blocks: chunks of 3 and 5 queries over 20 and "
     "33 keys (the second chunk crosses into a new block), causal, NaN tails.",
     "clause23.boundary",
     DT_ALL,
     2,
     2,
     2,
     8,
     8,
     32,
     3,
     1,
     0,
     {20, 33},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_NONE,
     {APP(5, 3, 5), ATT(5, 1, 3, 5)}},
    {"prefill.p32_stale",
     "Chunked prefill with 32-slot blocks and stale finite tails: a chunk "
     "of 4 filling row 0's block exactly (28 + 4 = 32) beside a decode row.",
     "clause23.last_page",
     DT_F32_F16,
     2,
     4,
     2,
     8,
     8,
     32,
     2,
     2,
     0,
     {28, 40},
     PZ_STALE,
     UN_BOTH,
     0,
     RJ_NONE,
     {APP(4, 4, 1), ATT(4, 1, 4, 1)}},
    {"prefill.p96_window",
     "A page of 96 slots: a chunk of 6 queries over 100 keys with a sliding "
     "window of 8, beside an empty row that attends nothing (L_b = 0, query_lens 0).",
     "clause23.terms",
     DT_ALL,
     2,
     2,
     1,
     4,
     4,
     96,
     0,
     1,
     0,
     {94, 0},
     PZ_MIXED,
     UN_NEG1,
     0,
     RJ_NONE,
     {APP(6, 6, 0), {'t', 6, {6, 0}, 1, 8, 0, 0, 0, 0, 0}}},
    {"prefill.fill_then_next",
     "P = 16: an append of 3 fills row 0's page exactly (13 + 3 = 16), the "
     "next token starts the next table entry at slot 0; attention after each.",
     "clause23.boundary",
     DT_ALL,
     2,
     2,
     2,
     4,
     4,
     16,
     0,
     2,
     0,
     {13, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_NONE,
     {APP(3, 3, 1), ATT(1, 1, NOLENS), APP(1, NOLENS), ATT(2, 1, 1, 2)}},
    {"prefill.shared_prefix",
     "Rows 1 and 2 list row 0's first two pages (a shared prompt prefix of 8 "
     "keys, P = 4): each row appends two tokens into its own pages, the shared pages stay as "
     "they were; then a chunk of two queries per row.",
     "clause23.shared",
     DT_ALL,
     3,
     2,
     1,
     8,
     8,
     4,
     0,
     2,
     2,
     {10, 11, 8},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_NONE,
     {APP(2, NOLENS), ATT(2, 1, NOLENS)}},
    {"decode.not_causal_l0",
     "Non-causal attention over a pool with an empty row (L_b = 0: no page, an "
     "exactly zero output), a full last page and a partial one; query_lens 0, 2, 1.",
     "clause23.table",
     DT_ALL,
     3,
     2,
     2,
     4,
     4,
     3,
     0,
     2,
     0,
     {0, 6, 4},
     PZ_INF,
     UN_BOTH,
     0,
     RJ_NONE,
     {ATT(2, 0, 0, 2, 1)}},
    {"prefill.idle_row",
     "P = 8, a mixed batch where row 1 holds 9 keys but neither appends (new_lens 0) nor "
     "queries (query_lens 0: its rows are padding, exactly 0) this step; row 0's chunk of 4 "
     "fills its last page and its whole table (20 + 4 = 3 pages of 8), row 2's decode token "
     "starts a new page at slot 0.",
     "clause23.prefill",
     DT_ALL,
     3,
     2,
     1,
     4,
     4,
     8,
     0,
     2,
     0,
     {20, 9, 16},
     PZ_MIXED,
     UN_BOTH,
     0,
     RJ_NONE,
     {APP(4, 4, 0, 1), ATT(4, 1, 4, 0, 1)}},
    /* ---- the terms of clauses 20-22 over pages ---- */
    {"terms.window",
     "A sliding window of 5 keys over a chunked prefill of 4 queries, P = 3.",
     "clause23.terms",
     DT_ALL,
     2,
     2,
     1,
     8,
     8,
     3,
     0,
     1,
     0,
     {9, 14},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_NONE,
     {APP(4, NOLENS), {'t', 4, {NOLENS}, 1, 5, 0, 0, 0, 0, 0}}},
    {"terms.softcap",
     "Logit soft-capping (c = 5) on a mixed batch over pages of 16.",
     "clause23.terms",
     DT_ALL,
     2,
     2,
     2,
     8,
     8,
     16,
     0,
     1,
     0,
     {17, 30},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_NONE,
     {APP(2, 2, 1), {'t', 2, {2, 1}, 1, 0, 0, 5.0, 0, 0, 0}}},
    {"terms.alibi",
     "ALiBi (max bias 8) over pages of 5: the bias uses each query's position "
     "L_b - q_b + i.",
     "clause23.terms",
     DT_ALL,
     2,
     4,
     2,
     8,
     8,
     5,
     0,
     1,
     0,
     {12, 6},
     PZ_INF,
     UN_PAST,
     0,
     RJ_NONE,
     {APP(3, 3, 2), {'t', 3, {3, 2}, 1, 0, 0, 0, 8.0, 0, 0}}},
    {"terms.sinks",
     "Attention sinks (one logit per query head) over pages of 16, decode.",
     "clause23.terms",
     DT_ALL,
     2,
     4,
     2,
     8,
     8,
     16,
     0,
     1,
     0,
     {21, 16},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_NONE,
     {APP(1, NOLENS), {'t', 1, {NOLENS}, 1, 0, 0, 0, 0, 0, 1}}},
    {"terms.chunk",
     "Chunked attention (C = 8, counted from position 0) over pages of 3: a chunk "
     "of 5 queries crossing a chunk boundary.",
     "clause23.terms",
     DT_ALL,
     2,
     2,
     1,
     8,
     8,
     3,
     0,
     1,
     0,
     {6, 11},
     PZ_MIXED,
     UN_NEG1,
     0,
     RJ_NONE,
     {APP(5, 5, 3), {'t', 5, {5, 3}, 1, 0, 8, 0, 0, 0, 0}}},
    /* ---- must be rejected (the last step; nothing written) ---- */
    {"invalid.page_past_pool",
     "paged_sdpa with a used table entry past the pool: EINVAL.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {4, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_PAGE_PAST,
     {{0}}},
    {"invalid.page_negative",
     "paged_sdpa with a used table entry of -1: EINVAL.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {4, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_PAGE_NEG,
     {{0}}},
    {"invalid.length_beyond_table",
     "paged_sdpa with seq_lens[1] needing more pages than the "
     "table row holds: EINVAL.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {4, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_BEYOND_TABLE,
     {{0}}},
    {"invalid.query_lens_gt_seq_lens",
     "paged_sdpa with query_lens[0] = 3 > seq_lens[0] = 2: "
     "EINVAL.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {2, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_QLEN_GT_LEN,
     {{0}}},
    {"invalid.query_lens_gt_lq",
     "paged_sdpa with query_lens[1] = 3 > Lq = 2: EINVAL.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {4, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_QLEN_GT_LQ,
     {{0}}},
    {"invalid.negative_seq_len",
     "paged_sdpa with seq_lens[0] = -1: EINVAL.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {4, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_NEG_LEN,
     {{0}}},
    {"invalid.negative_query_len",
     "paged_sdpa with query_lens[1] = -1: EINVAL.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {4, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_NEG_QLEN,
     {{0}}},
    {"invalid.append_page_unused",
     "paged_append whose new token's position falls in a table "
     "entry of -1: EINVAL, the pool unchanged.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {6, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_APPEND_PAGE,
     {{0}}},
    {"invalid.append_beyond_table",
     "paged_append of 2 tokens to a row whose table holds room "
     "for 1 more: EINVAL, the pool unchanged.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {8, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_APPEND_BEYOND,
     {{0}}},
    {"invalid.append_page_past_pool",
     "paged_append whose new token's position falls in a table "
     "entry holding num_pages (the first index past the pool): EINVAL, the pool unchanged.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {6, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_APPEND_PAGE_PAST,
     {{0}}},
    {"invalid.new_lens_gt_s",
     "paged_append with new_lens[0] = 3 > S = 2: EINVAL.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {4, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_NEWLEN_GT_S,
     {{0}}},
    {"invalid.negative_new_len",
     "paged_append with new_lens[1] = -1: EINVAL.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {4, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_NEG_NEWLEN,
     {{0}}},
    {"invalid.two_rows_one_slot",
     "paged_append where row 1's table sends its new token into "
     "the page and slot row 0's new token goes to: EINVAL (the pool would depend on the order "
     "of the writes), nothing written.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {4, 4},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_TWO_ROWS_ONE_SLOT,
     {{0}}},
    {"invalid.one_row_one_slot",
     "paged_append of 4 tokens through a row that lists one page "
     "twice (positions 4 and 7 both land in its slot 1): EINVAL, nothing written.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {4, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_ONE_ROW_ONE_SLOT,
     {{0}}},
    {"invalid.dtype_append",
     "paged_append of new tokens in another dtype than the pool's: "
     "EDTYPE, nothing written.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {4, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_DTYPE_APPEND,
     {{0}}},
    {"invalid.dtype_attend",
     "paged_sdpa with q in another dtype than the pool's: EDTYPE.",
     "clause23.invalid",
     DT_F32_F16,
     2,
     2,
     1,
     4,
     4,
     3,
     0,
     1,
     0,
     {4, 5},
     PZ_NAN,
     UN_NEG1,
     0,
     RJ_DTYPE_ATTEND,
     {{0}}},
};

/* ---- building one case -------------------------------------------------------------------- */

static uint64_t seed_of(const char *id)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = id; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static double poison(int mode, int64_t i)
{
    static const double stale[4] = {3072.0, -2560.0, 1536.0, -4096.0};
    switch (mode == PZ_MIXED ? (int)(i % 4) + 1 : mode) {
    case PZ_NAN: return NAN;
    case PZ_INF: return i % 2 ? -INFINITY : INFINITY;
    default: return stale[i % 4];
    }
}

static int64_t pages_for(int64_t n, int64_t p)
{
    return n <= 0 ? 0 : (n + p - 1) / p;
}

typedef struct pool {
    attnref_dtype dt;
    int64_t np, hkv, p, d, dv;
    void *k, *v; /* logical (np, Hkv, P, D|Dv), dtype storage */
    attnref_tensor tk, tv;
} pool;

static void pool_tensor(acase_tensor *t, const pool *pl, const void *data, int64_t last, int nhd)
{
    memset(t, 0, sizeof *t);
    t->present = 1;
    t->dtype = pl->dt;
    t->ndim = 4;
    t->shape[0] = pl->np, t->shape[1] = pl->hkv, t->shape[2] = pl->p, t->shape[3] = last;
    t->layout = nhd ? ACASE_LAYOUT_BLHD : ACASE_LAYOUT_BHLD;
    t->source = ACASE_SRC_INLINE;
    t->numel = pl->np * pl->hkv * pl->p * last;
    size_t bytes = (size_t)t->numel * attnref_dtype_size(pl->dt);
    t->data = xcalloc(bytes, 1);
    memcpy(t->data, data, bytes);
}

static int64_t *copy_lens(const int64_t *src, int64_t b)
{
    if (src[0] == NOLENS)
        return NULL;
    return cg_copy_i64(src, b);
}

/* The clause 13 tolerance of an attend step, row by row of the batch: row b is the sdpa call
 * (1, Hq, q_b, D) over its gathered keys (1, Hkv, L_b, D) with the step's parameters. */
static void attend_tolerance(const char *id, const pspec *sp, acase_paged_step *st, const pool *pl,
                             const int32_t *table, int64_t tw, const int64_t *lens)
{
    const int64_t B = sp->b, Hq = sp->hq, Lq = st->q.shape[2], rows = B * Hq * Lq;
    st->row_atol = xcalloc((size_t)rows, sizeof(double));
    st->row_check = xcalloc((size_t)rows, 1);
    for (int64_t b = 0; b < B; b++) {
        const int64_t L = lens[b], ql = st->query_lens ? st->query_lens[b] : Lq;
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = ql; i < Lq; i++)
                st->row_check[(b * Hq + h) * Lq + i] = ACASE_CHECK_EXACT; /* padding rows: 0 */
        if (ql == 0)
            continue;
        acase *t = cg_new(ACASE_OP_SDPA, id, "attend", "tolerance");
        double *qz = xcalloc((size_t)(Hq * ql * sp->d), sizeof(double));
        double *kz = xcalloc((size_t)(pl->hkv * L * sp->d), sizeof(double));
        double *vz = xcalloc((size_t)(pl->hkv * L * sp->dv), sizeof(double));
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < ql; i++)
                for (int64_t e = 0; e < sp->d; e++)
                    qz[(h * ql + i) * sp->d + e] =
                        attnref_load(st->q.data, pl->dt, ((b * Hq + h) * Lq + i) * sp->d + e);
        for (int64_t h = 0; h < pl->hkv; h++)
            for (int64_t j = 0; j < L; j++) {
                const int64_t pg = table[b * tw + j / pl->p], sl = j % pl->p;
                for (int64_t e = 0; e < sp->d; e++)
                    kz[(h * L + j) * sp->d + e] =
                        attnref_load(pl->k, pl->dt, ((pg * pl->hkv + h) * pl->p + sl) * sp->d + e);
                for (int64_t e = 0; e < sp->dv; e++)
                    vz[(h * L + j) * sp->dv + e] =
                        attnref_load(pl->v, pl->dt, ((pg * pl->hkv + h) * pl->p + sl) * sp->dv + e);
            }
        const int64_t shq[4] = {1, Hq, ql, sp->d}, shk[4] = {1, pl->hkv, L, sp->d},
                      shv[4] = {1, pl->hkv, L, sp->dv};
        cg_inline(&t->q, pl->dt, 4, shq, qz);
        cg_inline(&t->k, pl->dt, 4, shk, kz);
        cg_inline(&t->v, pl->dt, 4, shv, vz);
        t->causal = st->causal;
        t->window = st->window;
        t->has_scale = st->has_scale;
        t->scale = st->scale;
        t->softcap = st->softcap;
        t->alibi_max_bias = st->alibi_max_bias;
        t->chunk = st->chunk;
        if (st->sinks) {
            t->sinks = xcalloc((size_t)Hq, sizeof(double));
            memcpy(t->sinks, st->sinks, (size_t)Hq * sizeof(double));
            t->nsinks = Hq;
        }
        acase_expected *e = &t->expected;
        char err[256];
        e->dtype = pl->dt;
        e->ndim = 4;
        e->shape[0] = 1, e->shape[1] = Hq, e->shape[2] = ql, e->shape[3] = sp->dv;
        if (acase_expected_alloc(e, err, sizeof err) != 0)
            die("%s: %s", id, err);
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < ql; i++)
                memcpy(&e->values[(h * ql + i) * sp->dv],
                       &st->out[((b * Hq + h) * Lq + i) * sp->dv], (size_t)sp->dv * sizeof(double));
        cg_row_checks(t);
        cg_tolerance(t);
        if (t->ulps > st->ulps)
            st->ulps = t->ulps;
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < ql; i++) {
                const int64_t r = (b * Hq + h) * Lq + i, rr = h * ql + i;
                st->row_atol[r] = t->row_atol[rr];
                st->row_check[r] = t->expected.row_check ? t->expected.row_check[rr] : 0;
            }
        free(qz);
        free(kz);
        free(vz);
        acase_free(t);
    }
    int any = 0;
    for (int64_t r = 0; r < rows; r++)
        any |= st->row_check[r] != ACASE_CHECK_CLOSE;
    if (!any) {
        free(st->row_check);
        st->row_check = NULL;
    }
}

static void set_table(acase_paged_step *st, const int32_t *table, int64_t b, int64_t tw)
{
    st->block_table = xcalloc((size_t)(b * tw), sizeof(int32_t));
    memcpy(st->block_table, table, (size_t)(b * tw) * sizeof(int32_t));
    st->table_width = tw;
}

/* The must-reject step of sp->reject, appended to the case; the reference must refuse it with
 * the expected code and leave the pool as it was. */
static void reject_step(acase *c, const pspec *sp, pool *pl, int32_t *table, int64_t tw,
                        int64_t *lens)
{
    acase_paged *pc = c->paged;
    const int rj = sp->reject;
    const int attend = rj <= RJ_NEG_QLEN || rj == RJ_DTYPE_ATTEND;
    acase_paged_step *st =
        acase_paged_add_step(pc, attend ? ACASE_PSTEP_ATTEND : ACASE_PSTEP_APPEND);
    if (!st)
        die("out of memory");
    int32_t *tab = xcalloc((size_t)(sp->b * tw), sizeof(int32_t));
    memcpy(tab, table, (size_t)(sp->b * tw) * sizeof(int32_t));
    int64_t ln[4] = {0}, ql[4] = {1, 1, 1, 1}, nl[4] = {1, 1, 1, 1};
    memcpy(ln, lens, (size_t)sp->b * sizeof(int64_t));
    int64_t S = 1, Lq = 1, over_table = 0, over_lens = 0;
    attnref_dtype tdt = pl->dt;
    switch (rj) {
    case RJ_PAGE_PAST: tab[1 * tw + 0] = (int32_t)pl->np, over_table = 1; break;
    case RJ_PAGE_NEG: tab[1 * tw + 1] = -1, over_table = 1; break;
    case RJ_BEYOND_TABLE: ln[1] = tw * sp->p + 1, over_lens = 1; break;
    case RJ_QLEN_GT_LEN: Lq = 3, ql[0] = 3, ql[1] = 2; break;
    case RJ_QLEN_GT_LQ: Lq = 2, ql[0] = 1, ql[1] = 3; break;
    case RJ_NEG_LEN: ln[0] = -1, over_lens = 1; break;
    case RJ_NEG_QLEN: ql[1] = -1; break;
    case RJ_APPEND_PAGE: break;      /* row 0 at 6 keys = 2 full pages: its entry 2 is -1 */
    case RJ_APPEND_PAGE_PAST: break; /* ... or num_pages */
    case RJ_APPEND_BEYOND: S = 2, nl[0] = 2, nl[1] = 1; break; /* 8 + 2 > 3 pages of 3 */
    case RJ_NEWLEN_GT_S: S = 2, nl[0] = 3, nl[1] = 1; break;
    case RJ_NEG_NEWLEN: S = 2, nl[0] = 1, nl[1] = -1; break;
    case RJ_TWO_ROWS_ONE_SLOT: tab[1 * tw + 1] = table[0 * tw + 1], over_table = 1; break;
    case RJ_ONE_ROW_ONE_SLOT:
        S = 4, nl[0] = 4, nl[1] = 0, tab[0 * tw + 2] = table[0 * tw + 1], over_table = 1;
        break;
    case RJ_DTYPE_APPEND:
    case RJ_DTYPE_ATTEND: tdt = pl->dt == ATTNREF_F32 ? ATTNREF_F16 : ATTNREF_F32; break;
    default: die("%s: unknown rejection %d", c->id, rj);
    }
    if (over_table)
        set_table(st, tab, sp->b, tw);
    if (over_lens)
        st->seq_lens = cg_copy_i64(ln, sp->b);
    attnref_tensor tq, tk, tv;
    attnref_diag dg;
    int rc;
    if (attend) {
        cg_gen4(c, &st->q, "reject.q", tdt, sp->b, sp->hq, Lq, sp->d, -1.0, 1.0);
        st->query_lens = cg_copy_i64(ql, sp->b);
        st->causal = 1;
        double *out = xcalloc((size_t)(sp->b * sp->hq * Lq * sp->dv), sizeof(double));
        attnref_tensor_init(&tq, st->q.data, tdt, 4, st->q.shape, NULL);
        attnref_paged_args a = {.q = &tq,
                                .k_pages = &pl->tk,
                                .v_pages = &pl->tv,
                                .block_table = tab,
                                .table_width = tw,
                                .seq_lens = ln,
                                .query_lens = st->query_lens};
        a.params.causal = 1;
        rc = attnref_paged_sdpa_f64(&a, out, &dg);
        free(out);
    } else {
        cg_gen4(c, &st->k, "reject.k", tdt, sp->b, sp->hkv, S, sp->d, -1.0, 1.0);
        cg_gen4(c, &st->v, "reject.v", tdt, sp->b, sp->hkv, S, sp->dv, -1.0, 1.0);
        st->new_lens = cg_copy_i64(nl, sp->b);
        attnref_tensor_init(&tk, st->k.data, tdt, 4, st->k.shape, NULL);
        attnref_tensor_init(&tv, st->v.data, tdt, 4, st->v.shape, NULL);
        attnref_paged_append_args a = {.k = &tk,
                                       .v = &tv,
                                       .k_pages = &pl->tk,
                                       .v_pages = &pl->tv,
                                       .block_table = tab,
                                       .table_width = tw,
                                       .seq_lens = ln,
                                       .new_lens = st->new_lens};
        rc = attnref_paged_append(&a, &dg);
    }
    const int want =
        rj == RJ_DTYPE_APPEND || rj == RJ_DTYPE_ATTEND ? ATTNREF_EDTYPE : ATTNREF_EINVAL;
    if (rc != want)
        die("%s: the reference returned %d on a step that must be rejected with %d (%s)", c->id, rc,
            want, rc ? dg.msg : "accepted");
    st->error = want;
    free(tab);
}

static void build(cg *g, const pspec *sp, attnref_dtype dt)
{
    char stem[ACASE_ID_MAX], id[ACASE_ID_MAX];
    snprintf(stem, sizeof stem, "paged.%s", sp->what);
    cg_id_dt(id, sizeof id, stem, dt);
    const int rejecting = sp->reject != RJ_NONE;
    acase *c = cg_new(ACASE_OP_PAGED, id, sp->desc,
                      rejecting                ? "clause23.invalid"
                      : sp->steps[0].op == 'a' ? "clause23.append"
                                               : "clause23.decode");
    if (sp->rule2 && strcmp(sp->rule2, c->rules[0]) != 0)
        cg_rule(c, sp->rule2);
    if (!sp->rule2 || strcmp(sp->rule2, "clause23.table") != 0)
        cg_rule(c, "clause23.table");
    acase_paged *pc = c->paged = acase_paged_new();
    if (!pc)
        die("out of memory");
    const int64_t B = sp->b, P = sp->p;
    /* Final lengths: the pages each row needs over the whole script. */
    int64_t fin[4] = {0}, need[4] = {0}, maxneed = 0;
    for (int64_t b = 0; b < B; b++) {
        fin[b] = sp->lens[b];
        for (int s = 0; s < 4 && sp->steps[s].op; s++)
            if (sp->steps[s].op == 'a')
                fin[b] += sp->steps[s].lens[0] == NOLENS ? sp->steps[s].s : sp->steps[s].lens[b];
        need[b] = pages_for(fin[b], P);
        if (need[b] > maxneed)
            maxneed = need[b];
    }
    if (rejecting) /* the rejection scenarios' tables: 3 entries per row */
        maxneed = maxneed > 3 ? maxneed : 3;
    const int64_t tw = sp->tw ? sp->tw : maxneed;
    if (tw < maxneed || maxneed < 1)
        die("%s: table width %lld below the %lld pages a row needs", id, (long long)tw,
            (long long)maxneed);
    int64_t own = 0;
    for (int64_t b = 0; b < B; b++) {
        if (b > 0 && sp->shared && (sp->lens[b] < sp->shared * P || sp->lens[0] < sp->shared * P))
            die("%s: a shared page must be full", id);
        own += need[b] - (b > 0 ? sp->shared : 0);
    }
    if (rejecting)
        own = 3 * B;
    pool pl = {dt, own + sp->spare, sp->hkv, P, sp->d, sp->dv, NULL, NULL, {0}, {0}};
    /* The physical order: a seeded shuffle of the pool, never the identity. */
    uint64_t st_ = seed_of(id);
    int32_t *perm = xcalloc((size_t)pl.np, sizeof(int32_t));
    for (int64_t i = 0; i < pl.np; i++)
        perm[i] = (int32_t)i;
    for (int64_t i = pl.np - 1; i > 0; i--) {
        int64_t j = (int64_t)(acase_splitmix64_next(&st_) % (uint64_t)(i + 1));
        int32_t t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    int ident = 1;
    for (int64_t i = 0; i < pl.np; i++)
        ident &= perm[i] == i;
    if (ident && pl.np > 1) { /* rotate: a shuffle that happens to be the identity */
        int32_t t = perm[0];
        memmove(perm, perm + 1, (size_t)(pl.np - 1) * sizeof(int32_t));
        perm[pl.np - 1] = t;
    }
    int32_t *table = xcalloc((size_t)(B * tw), sizeof(int32_t));
    int64_t next = 0;
    for (int64_t b = 0; b < B; b++) {
        const int64_t n = rejecting ? 3 : need[b];
        for (int64_t e = 0; e < tw; e++) {
            int32_t v;
            if (e < n && b > 0 && e < sp->shared)
                v = table[e]; /* row 0's page */
            else if (e < n)
                v = perm[next++];
            else if (sp->unused == UN_NEG1 || (sp->unused == UN_BOTH && (b + e) % 2 == 0))
                v = -1;
            else
                v = (int32_t)(pl.np + 3 * b + e);
            table[b * tw + e] = v;
        }
    }
    if (sp->reject == RJ_APPEND_PAGE)
        table[0 * tw + 2] = -1; /* row 0's third entry unused: its append has no page */
    if (sp->reject == RJ_APPEND_PAGE_PAST)
        table[0 * tw + 2] = (int32_t)pl.np; /* ... or one past the pool */
    /* The pool: poison everywhere, then each row's live keys. */
    const int64_t nk = pl.np * pl.hkv * P * pl.d, nv = pl.np * pl.hkv * P * pl.dv;
    const size_t es = attnref_dtype_size(dt);
    pl.k = xcalloc((size_t)nk, es);
    pl.v = xcalloc((size_t)nv, es);
    for (int64_t i = 0; i < nk; i++)
        attnref_store(pl.k, dt, i, poison(sp->poison, i));
    for (int64_t i = 0; i < nv; i++)
        attnref_store(pl.v, dt, i, poison(sp->poison, i + 1));
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = b > 0 ? sp->shared * P : 0; j < sp->lens[b]; j++) {
            const int64_t pg = table[b * tw + j / P], sl = j % P;
            for (int64_t h = 0; h < pl.hkv; h++) {
                for (int64_t e = 0; e < pl.d; e++) {
                    double u = (double)(acase_splitmix64_next(&st_) >> 11) * 0x1p-53;
                    attnref_store(pl.k, dt, ((pg * pl.hkv + h) * P + sl) * pl.d + e, 2 * u - 1);
                }
                for (int64_t e = 0; e < pl.dv; e++) {
                    double u = (double)(acase_splitmix64_next(&st_) >> 11) * 0x1p-53;
                    attnref_store(pl.v, dt, ((pg * pl.hkv + h) * P + sl) * pl.dv + e, 2 * u - 1);
                }
            }
        }
    const int64_t shk[4] = {pl.np, pl.hkv, P, pl.d}, shv[4] = {pl.np, pl.hkv, P, pl.dv};
    attnref_tensor_init(&pl.tk, pl.k, dt, 4, shk, NULL);
    attnref_tensor_init(&pl.tv, pl.v, dt, 4, shv, NULL);
    pc->dtype = dt;
    pc->batch = B, pc->kv_heads = sp->hkv, pc->head_dim = sp->d, pc->v_head_dim = sp->dv;
    pc->page_size = P, pc->num_pages = pl.np, pc->table_width = tw;
    pc->block_table = xcalloc((size_t)(B * tw), sizeof(int32_t));
    memcpy(pc->block_table, table, (size_t)(B * tw) * sizeof(int32_t));
    int64_t lens[4] = {0};
    memcpy(lens, sp->lens, sizeof lens);
    pc->seq_lens = cg_copy_i64(lens, B);
    pool_tensor(&pc->k_pages, &pl, pl.k, pl.d, sp->nhd);
    pool_tensor(&pc->v_pages, &pl, pl.v, pl.dv, sp->nhd);

    for (int s = 0; s < 4 && sp->steps[s].op; s++) {
        const pstep *ps = &sp->steps[s];
        char name[32];
        attnref_diag dg;
        if (ps->op == 'a') {
            acase_paged_step *st = acase_paged_add_step(pc, ACASE_PSTEP_APPEND);
            if (!st)
                die("out of memory");
            snprintf(name, sizeof name, "s%d.k", s);
            cg_gen4(c, &st->k, name, dt, B, sp->hkv, ps->s, sp->d, -1.0, 1.0);
            snprintf(name, sizeof name, "s%d.v", s);
            cg_gen4(c, &st->v, name, dt, B, sp->hkv, ps->s, sp->dv, -1.0, 1.0);
            st->new_lens = copy_lens(ps->lens, B);
            attnref_tensor tk, tv;
            attnref_tensor_init(&tk, st->k.data, dt, 4, st->k.shape, NULL);
            attnref_tensor_init(&tv, st->v.data, dt, 4, st->v.shape, NULL);
            attnref_paged_append_args a = {.k = &tk,
                                           .v = &tv,
                                           .k_pages = &pl.tk,
                                           .v_pages = &pl.tv,
                                           .block_table = table,
                                           .table_width = tw,
                                           .seq_lens = lens,
                                           .new_lens = st->new_lens};
            if (attnref_paged_append(&a, &dg) != ATTNREF_OK)
                die("%s: step %d: the reference refused the append: %s", id, s, dg.msg);
            int64_t total = 0;
            for (int64_t b = 0; b < B; b++)
                total += st->new_lens ? st->new_lens[b] : ps->s;
            st->slots = xcalloc((size_t)(2 * total), sizeof(int64_t));
            st->nslots = total;
            int64_t i = 0;
            for (int64_t b = 0; b < B; b++) {
                const int64_t n = st->new_lens ? st->new_lens[b] : ps->s;
                for (int64_t t = 0; t < n; t++, i++)
                    attnref_paged_locate(table, tw, P, b, lens[b] + t, &st->slots[2 * i],
                                         &st->slots[2 * i + 1]);
                lens[b] += n;
            }
        } else {
            acase_paged_step *st = acase_paged_add_step(pc, ACASE_PSTEP_ATTEND);
            if (!st)
                die("out of memory");
            snprintf(name, sizeof name, "s%d.q", s);
            cg_gen4(c, &st->q, name, dt, B, sp->hq, ps->s, sp->d, -1.0, 1.0);
            st->query_lens = copy_lens(ps->lens, B);
            st->causal = ps->causal;
            st->window = ps->window;
            st->chunk = ps->chunk;
            st->softcap = ps->softcap;
            st->alibi_max_bias = ps->alibi;
            if (ps->scale != 0)
                st->has_scale = 1, st->scale = ps->scale;
            if (ps->sinks) {
                st->sinks = xcalloc((size_t)sp->hq, sizeof(double));
                for (int64_t h = 0; h < sp->hq; h++)
                    st->sinks[h] = (double)(float)(0.75 * (double)h - 1.0);
                st->nsinks = sp->hq;
            }
            attnref_tensor tq;
            attnref_tensor_init(&tq, st->q.data, dt, 4, st->q.shape, NULL);
            attnref_paged_args a = {.q = &tq,
                                    .k_pages = &pl.tk,
                                    .v_pages = &pl.tv,
                                    .block_table = table,
                                    .table_width = tw,
                                    .seq_lens = lens,
                                    .query_lens = st->query_lens};
            a.params.causal = st->causal;
            a.params.window = st->window;
            a.params.has_scale = st->has_scale;
            a.params.scale = st->scale;
            a.params.softcap = st->softcap;
            a.params.alibi_max_bias = st->alibi_max_bias;
            a.params.sinks = st->sinks;
            a.params.chunk = st->chunk;
            st->out_dtype = dt;
            st->out_shape[0] = B, st->out_shape[1] = sp->hq, st->out_shape[2] = ps->s;
            st->out_shape[3] = sp->dv;
            st->out = xcalloc((size_t)(B * sp->hq * ps->s * sp->dv), sizeof(double));
            if (attnref_paged_sdpa_f64(&a, st->out, &dg) != ATTNREF_OK)
                die("%s: step %d: the reference refused the attention: %s", id, s, dg.msg);
            attend_tolerance(id, sp, st, &pl, table, tw, lens);
        }
    }
    if (rejecting)
        reject_step(c, sp, &pl, table, tw, lens);
    free(perm);
    free(table);
    free(pl.k);
    free(pl.v);
    cg_emit(g, c);
}

void fam_paged(cg *g)
{
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        for (int x = 0; x < 3; x++) {
            if ((specs[i].dts == DT_F32_F16 && x == 2) || (specs[i].dts == DT_F16_BF16 && x == 0))
                continue;
            build(g, &specs[i], CG_DTYPES[x]);
        }
}
