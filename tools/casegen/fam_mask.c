/* fam_mask.c — mask.* families: the batched mask builder (causal + KV cache offset, sliding
 * window, right padding by lengths, left padding, and their intersection). */
#include <stdlib.h>
#include <string.h>

#include "casegen.h"

static void mask_case(cg *g, const char *id, const char *desc, const char *rule, int64_t lq,
                      int64_t offset, int64_t window, int64_t batch, const int64_t *lengths,
                      const int64_t *left_padding)
{
    acase *c = cg_new(ACASE_OP_MASK, id, desc, rule);
    c->lq = lq;
    c->offset = offset;
    c->window = window;
    c->batch = (lengths || left_padding) ? batch : 0;
    c->lengths = cg_copy_i64(lengths, batch);
    c->left_padding = cg_copy_i64(left_padding, batch);
    cg_emit(g, c);
}

#define N(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))

void fam_mask(cg *g)
{
    /* mask.causal: bottom-right alignment with a KV cache offset. */
    mask_case(g, "mask.causal.offset0_l4",
              "Prefill with an empty cache: Lq=4, offset=0 gives a lower-triangular (1,1,4,4) "
              "keep mask; query i sees keys 0..i.",
              "clause3.bottom_right", 4, 0, 0, 1, NULL, NULL);
    mask_case(g, "mask.causal.offset2_lq3",
              "Chunked prefill after 2 cached tokens: Lq=3, offset=2, shape (1,1,3,5). Query i "
              "sits at absolute position 2+i and sees keys 0..2+i; a top-left implementation "
              "would hide the cached tokens.",
              "clause3.bottom_right", 3, 2, 0, 1, NULL, NULL);
    mask_case(g, "mask.causal.decode_lq1_offset4",
              "Decode step: one new query after 4 cached tokens sees all 5 keys, not only key 0.",
              "clause3.bottom_right", 1, 4, 0, 1, NULL, NULL);
    mask_case(g, "mask.causal.decode_lq1_offset0",
              "First token with an empty cache: shape (1,1,1,1), the query sees itself.",
              "clause3.bottom_right", 1, 0, 0, 1, NULL, NULL);
    mask_case(g, "mask.causal.offset7_lq5",
              "Long cache, multi-token chunk: Lq=5, offset=7, shape (1,1,5,12).",
              "clause3.bottom_right", 5, 7, 0, 1, NULL, NULL);

    /* mask.window: W keys in total, the query's own position included. */
    mask_case(g, "mask.window.w3_l6",
              "Sliding window W=3, L=6, no cache: row key counts 1,2,3,3,3,3 (W counts the "
              "query itself; a W+1 implementation gives 1,2,3,4,4,4).",
              "clause4.window_counts_self", 6, 0, 3, 1, NULL, NULL);
    mask_case(g, "mask.window.w4_l8", "W=4, L=8: row 7 sees keys 4..7 (four keys, not five).",
              "clause4.window_counts_self", 8, 0, 4, 1, NULL, NULL);
    mask_case(g, "mask.window.w3_l5_offset1",
              "W=3, Lq=5, offset=1 (mlx-lm create_causal_mask(5, 1, 3)): shape (1,1,5,6), row "
              "sums 2,3,3,3,3.",
              "clause4.window_counts_self", 5, 1, 3, 1, NULL, NULL);
    mask_case(g, "mask.window.w3_l5_offset2",
              "W=3, Lq=5, offset=2: shape (1,1,5,7), every row sees exactly 3 keys.",
              "clause4.window_counts_self", 5, 2, 3, 1, NULL, NULL);
    mask_case(g, "mask.window.w1_l4", "W=1: each query sees only its own position (the diagonal).",
              "clause4.window_counts_self", 4, 0, 1, 1, NULL, NULL);
    mask_case(g, "mask.window.w_ge_lk",
              "W=16 larger than every distance (Lq=4, offset=3): identical to the plain causal "
              "mask.",
              "clause4.window_counts_self", 4, 3, 16, 1, NULL, NULL);
    mask_case(g, "mask.window.decode_w4_offset9",
              "Decode with a window: Lq=1 after 9 cached tokens, W=4: keys 6..9 only.",
              "clause4.window_counts_self", 1, 9, 4, 1, NULL, NULL);

    /* mask.lengths: right padding by total valid keys per sequence. */
    {
        const int64_t len[] = {1, 2, 3, 1};
        mask_case(g, "mask.lengths.seed",
                  "The seed example (mlx-examples PR #1173): Lq=3, offset=1, lengths "
                  "[1,2,3,1] gives shape (4,1,3,4); b0 keeps [1,0,0,0] in every row, b1 "
                  "[1,1,0,0], b2 [1,1,0,0],[1,1,1,0],[1,1,1,0], b3 like b0. lengths count "
                  "valid keys including the cache, so the most recent slots are the padding.",
                  "clause5.right_padding", 3, 1, 0, N(len), len, NULL);
    }
    {
        const int64_t len[] = {1, 2, 3};
        mask_case(g, "mask.lengths.right_pad_lq3",
                  "Right padding without a cache: lengths [1,2,3] (mlx-lm right_padding "
                  "[2,1,0]) gives causal & [T,F,F], causal & [T,T,F], causal.",
                  "clause5.right_padding", 3, 0, 0, N(len), len, NULL);
    }
    {
        const int64_t len[] = {0, 4};
        mask_case(g, "mask.lengths.zero_length",
                  "A sequence of length 0 has every row fully masked; the other sequence is "
                  "plain causal.",
                  "clause5.right_padding", 4, 0, 0, N(len), len, NULL);
    }
    {
        const int64_t len[] = {6, 3, 1};
        mask_case(g, "mask.lengths.decode_batch",
                  "Batched decode: Lq=1 after 5 cached tokens, lengths [6,3,1]: each sequence "
                  "sees only its first lengths[b] keys.",
                  "clause5.right_padding", 1, 5, 0, N(len), len, NULL);
    }

    /* mask.left_padding: the first left_padding[b] key slots are padding. */
    {
        const int64_t lp[] = {2, 1, 0};
        mask_case(g, "mask.left_padding.lq3",
                  "Left padding [2,1,0], Lq=3 (mlx-lm BatchKVCache): causal & [F,F,T], causal "
                  "& [F,T,T], causal. Rows of a padding query that see no key are fully "
                  "masked.",
                  "clause5.left_padding", 3, 0, 0, N(lp), NULL, lp);
    }
    {
        const int64_t lp[] = {0, 2, 4};
        mask_case(g, "mask.left_padding.decode",
                  "Batched decode with left padding [0,2,4] after 4 cached tokens: key slots "
                  "below left_padding[b] are hidden, the new token is always visible.",
                  "clause5.left_padding", 1, 4, 0, N(lp), NULL, lp);
    }
    {
        const int64_t lp[] = {3, 0};
        mask_case(g, "mask.left_padding.all_pad",
                  "left_padding equal to Lk hides every key of sequence 0 (all rows fully "
                  "masked); sequence 1 is plain causal.",
                  "clause5.left_padding", 3, 0, 0, N(lp), NULL, lp);
    }

    /* mask.combined: intersections of keep sets. */
    {
        const int64_t len[] = {7, 5};
        mask_case(g, "mask.combined.window_lengths",
                  "Window W=3 with lengths [7,5], Lq=4, offset=3: window, causal and right "
                  "padding each remove keys the others keep.",
                  "clause5.intersection", 4, 3, 3, N(len), len, NULL);
    }
    {
        const int64_t lp[] = {1, 3};
        mask_case(g, "mask.combined.window_left_padding",
                  "Window W=3 with left padding [1,3], Lq=5, offset=0.", "clause5.intersection", 5,
                  0, 3, N(lp), NULL, lp);
    }
    {
        const int64_t len[] = {5, 6, 3}, lp[] = {1, 0, 2};
        mask_case(g, "mask.combined.lengths_left_padding",
                  "Both paddings: lengths [5,6,3] and left padding [1,0,2], Lq=3, offset=3.",
                  "clause5.intersection", 3, 3, 0, N(len), len, lp);
    }
    {
        const int64_t len[] = {7, 6, 4}, lp[] = {0, 1, 2};
        mask_case(g, "mask.combined.all",
                  "Causal, window W=3, lengths [7,6,4] and left padding [0,1,2], Lq=4, offset=3: "
                  "the keep set is the intersection of all four.",
                  "clause5.intersection", 4, 3, 3, N(len), len, lp);
    }
}
