/* Unit tests for the reference's terms of current models (attnref/sdpa.h, attnref/mask.h; SPEC
 * clauses 20-22): soft-capping, ALiBi, sinks, chunks, documents, bidirectional blocks, and the
 * scale's binary32 range (clause 2).
 *
 * The keep rules are checked against the SPEC examples written out as tables here; the score
 * terms against closed forms computed in these tests (one key or a few, values chosen so the
 * expected output is exact or a short formula), independently of the library's loops. */
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attnref/dtype.h"
#include "attnref/mask.h"
#include "attnref/sdpa.h"
#include "attnref/status.h"
#include "attnref/tensor.h"
#include "tensor_test_util.h"

/* The keep row of query i (one batch row) as a '0'/'1' string. */
static void keep_row(const attnref_sdpa_params *p, int64_t lq, int64_t lk, int64_t i, char *out)
{
    for (int64_t j = 0; j < lk; j++)
        out[j] = attnref_sdpa_key_kept(p, lq, lk, 0, i, j) ? '1' : '0';
    out[lk] = '\0';
}

Test(terms, chunk_counts_from_left_padding)
{
    /* SPEC clause 20's example: Lq = Lk = 8, C = 3, left padding 4. */
    const int64_t lp[1] = {4};
    attnref_sdpa_params p = {.causal = 1, .batch = 1, .left_padding = lp, .chunk = 3};
    char row[16];
    keep_row(&p, 8, 8, 7, row);
    cr_assert_str_eq(row, "00000001");
    keep_row(&p, 8, 8, 6, row);
    cr_assert_str_eq(row, "00001110");
    /* Counted from slot 0 (no left padding term, mlx-lm's Llama 4 mask) it would differ. */
    p.left_padding = NULL;
    keep_row(&p, 8, 8, 7, row);
    cr_assert_str_eq(row, "00000011");
}

Test(terms, chunk_query_past_every_slot)
{
    /* A static buffer: 8 slots, query at position 9 (explicit offset), chunk 16: keys 0..7 are
     * in its chunk; chunk 4: only keys 8.. would be, and none exists. */
    attnref_sdpa_params p = {.causal = 1, .has_causal_offset = 1, .causal_offset = 9, .chunk = 16};
    char row[16];
    keep_row(&p, 1, 8, 0, row);
    cr_assert_str_eq(row, "11111111");
    p.chunk = 4;
    keep_row(&p, 1, 8, 0, row);
    cr_assert_str_eq(row, "00000000");
    /* An offset near INT64_MAX overflows nothing: a different chunk from every key. */
    p.causal_offset = INT64_MAX - 1;
    keep_row(&p, 2, 8, 1, row);
    cr_assert_str_eq(row, "00000000");
}

Test(terms, documents)
{
    const int64_t seg[10] = {0, 0, 0, 0, 1, 1, 2, 2, 2, 2};
    attnref_sdpa_params p = {.causal = 1, .batch = 1, .segment_ids = seg};
    char row[16];
    keep_row(&p, 10, 10, 5, row);
    cr_assert_str_eq(row, "0000110000");
    keep_row(&p, 10, 10, 6, row);
    cr_assert_str_eq(row, "0000001000");
    p.causal = 0; /* an encoder: the whole document */
    keep_row(&p, 10, 10, 6, row);
    cr_assert_str_eq(row, "0000001111");
    /* A query whose position is not a key slot (Lq > Lk) keeps nothing. */
    keep_row(&p, 12, 10, 0, row);
    cr_assert_str_eq(row, "0000000000");
}

Test(terms, blocks_and_window)
{
    /* SPEC clause 20's example: an image at 2..8, W = 4. */
    const int64_t blk[11] = {-1, -1, 0, 0, 0, 0, 0, 0, 0, -1, -1};
    attnref_sdpa_params p = {.causal = 1, .window = 4, .batch = 1, .block_ids = blk};
    char row[16];
    keep_row(&p, 11, 11, 2, row);
    cr_assert_str_eq(row, "11111111100");
    keep_row(&p, 11, 11, 8, row);
    cr_assert_str_eq(row, "00000111100");
    keep_row(&p, 11, 11, 9, row);
    cr_assert_str_eq(row, "00000011110");
    /* Text never sees a later block, a block never sees another. */
    const int64_t two[6] = {0, 0, 1, 1, -1, -1};
    attnref_sdpa_params q = {.causal = 1, .batch = 1, .block_ids = two};
    keep_row(&q, 6, 6, 0, row);
    cr_assert_str_eq(row, "110000");
    keep_row(&q, 6, 6, 2, row);
    cr_assert_str_eq(row, "111100");
    keep_row(&q, 6, 6, 4, row);
    cr_assert_str_eq(row, "111110");
}

Test(terms, mask_builder_uses_the_same_rule)
{
    /* The builder's chunk / documents / blocks equal causal SDPA's with offset = cache. */
    const int64_t seg[2 * 6] = {0, 0, 1, 1, 1, 2, 5, 5, 5, 5, 6, 6};
    const int64_t blk[2 * 6] = {-1, -1, 3, 3, 3, -1, 0, 0, -1, -1, -1, -1};
    const int64_t lp[2] = {0, 1};
    attnref_mask_params mp = {.lq = 4,
                              .offset = 2,
                              .batch = 2,
                              .left_padding = lp,
                              .chunk = 3,
                              .segment_ids = seg,
                              .block_ids = blk};
    uint8_t keep[2 * 4 * 6];
    int64_t shape[4];
    cr_assert_eq(attnref_mask_shape(&mp, shape, NULL), ATTNREF_OK);
    attnref_tensor kt = mk4(keep, ATTNREF_BOOL, 2, 1, 4, 6);
    cr_assert_eq(attnref_build_mask(&mp, &kt, NULL), ATTNREF_OK);
    attnref_sdpa_params sp = {.causal = 1,
                              .has_causal_offset = 1,
                              .causal_offset = 2,
                              .batch = 2,
                              .left_padding = lp,
                              .chunk = 3,
                              .segment_ids = seg,
                              .block_ids = blk};
    int kept = 0;
    for (int64_t b = 0; b < 2; b++)
        for (int64_t i = 0; i < 4; i++)
            for (int64_t j = 0; j < 6; j++) {
                cr_assert_eq(keep[(b * 4 + i) * 6 + j], attnref_sdpa_key_kept(&sp, 4, 6, b, i, j));
                kept += keep[(b * 4 + i) * 6 + j];
            }
    cr_assert_gt(kept, 4);
    /* Block 3 is keys 2..4.  Query 1 (position 3, chunk [3, 6)) sees the later key 4 of its
     * block; query 0 (position 2, chunk [0, 3)) does not see keys 3, 4 of its block: another
     * chunk; and query 1 loses key 2 the same way. */
    cr_assert_eq(keep[1 * 6 + 4], 1);
    cr_assert_eq(keep[0 * 6 + 3], 0);
    cr_assert_eq(keep[1 * 6 + 2], 0);
}

Test(terms, alibi_slopes)
{
    /* Press's get_slopes: 8 heads 2^-1 .. 2^-8; 12 heads: those, then 2^-0.5 .. 2^-3.5. */
    for (int h = 0; h < 8; h++)
        cr_assert_eq(attnref_alibi_slope(8.0, 8, h), ldexp(1.0, -(h + 1)));
    for (int h = 0; h < 8; h++)
        cr_assert_eq(attnref_alibi_slope(8.0, 12, h), ldexp(1.0, -(h + 1)));
    const double tail[4] = {pow(2, -0.5), pow(2, -1.5), pow(2, -2.5), pow(2, -3.5)};
    for (int h = 8; h < 12; h++)
        cr_assert_float_eq(attnref_alibi_slope(8.0, 12, h), tail[h - 8], 1e-15);
    cr_assert_eq(attnref_alibi_slope(8.0, 1, 0), ldexp(1.0, -8));
    /* 3 heads, max_bias 16: n = 2, slopes 2^-8, 2^-16, then 2^-4. */
    cr_assert_eq(attnref_alibi_slope(16.0, 3, 0), ldexp(1.0, -8));
    cr_assert_eq(attnref_alibi_slope(16.0, 3, 1), ldexp(1.0, -16));
    cr_assert_eq(attnref_alibi_slope(16.0, 3, 2), ldexp(1.0, -4));
}

/* One head, D = 1, q = 0 (every dot product 0), V one column: the weights are visible in out. */
static double run1(attnref_sdpa_params *p, int64_t lq, int64_t lk, const float *v, int64_t i,
                   const float *qv, const float *kv)
{
    float q[8] = {0}, k[8] = {0}, out[8];
    for (int64_t x = 0; x < lq && qv; x++)
        q[x] = qv[x];
    for (int64_t x = 0; x < lk && kv; x++)
        k[x] = kv[x];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, lq, 1), tk = mk4(k, ATTNREF_F32, 1, 1, lk, 1);
    attnref_tensor tv = mk4((void *)v, ATTNREF_F32, 1, 1, lk, 1);
    attnref_tensor to = mk4(out, ATTNREF_F32, 1, 1, lq, 1);
    attnref_diag d;
    cr_assert_eq(attnref_sdpa(&tq, &tk, &tv, NULL, p, &to, &d), ATTNREF_OK, "%s", d.msg);
    return out[i];
}

Test(terms, alibi_distance_form)
{
    /* SPEC clause 21's example: Lq = 2, Lk = 4, not causal, m = 0.5 (Hq = 1 and max_bias 1:
     * 2^-1), V = e_j picked by one-hot columns: out for row 0 (p = 2) is the weight of key 3. */
    attnref_sdpa_params p = {.alibi_max_bias = 1.0};
    const float v3[4] = {0, 0, 0, 1};
    const double w[4] = {exp(-1.0), exp(-0.5), 1.0, exp(-0.5)};
    const double want = w[3] / (w[0] + w[1] + w[2] + w[3]);
    cr_assert_float_eq(run1(&p, 2, 4, v3, 0, NULL, NULL), want, 1e-7);
    cr_assert_float_eq(want, 0.2350, 1e-4);
}

Test(terms, softcap_then_mask_order)
{
    /* q.k = 6 for key 0 and 0 for key 1, scale 0.5: s = 3 and 0; cap 4: 4 tanh(0.75) and 0. */
    attnref_sdpa_params p = {.has_scale = 1, .scale = 0.5, .softcap = 4.0};
    const float qv[1] = {2.0f}, kv[2] = {3.0f, 0.0f}, v0[2] = {1, 0};
    const double s0 = 4.0 * tanh(0.75);
    const double got = run1(&p, 1, 2, v0, 0, qv, kv);
    cr_assert_float_eq(got, 1.0 / (1.0 + exp(-s0)), 1e-7);
    /* Capping the raw q.k and scaling afterwards (0.5 * 4 tanh(1.5)) is far off. */
    const double wrong = 0.5 * 4.0 * tanh(1.5);
    cr_assert(fabs(got - 1.0 / (1.0 + exp(-wrong))) > 0.05);
}

Test(terms, sinks)
{
    /* SPEC clause 22's example: one key, s = 0, v = 1: sigma 0 -> 0.5, ln 3 -> 0.25. */
    const float v1[1] = {1.0f};
    double sink = 0.0;
    attnref_sdpa_params p = {.sinks = &sink};
    cr_assert_float_eq(run1(&p, 1, 1, v1, 0, NULL, NULL), 0.5, 1e-7);
    sink = log(3.0);
    cr_assert_float_eq(run1(&p, 1, 1, v1, 0, NULL, NULL), 0.25, 1e-7);
    /* Never scaled: the scale 100 changes nothing here (s = 0). */
    p.has_scale = 1;
    p.scale = 100.0;
    cr_assert_float_eq(run1(&p, 1, 1, v1, 0, NULL, NULL), 0.25, 1e-7);
    /* A row with no key is 0 with a sink too. */
    attnref_sdpa_params c = {.causal = 1, .sinks = &sink};
    const float v2[2] = {1.0f, 1.0f};
    cr_assert_eq(run1(&c, 3, 2, v2, 0, NULL, NULL), 0.0);
}

Test(terms, invalid_terms)
{
    float q[4] = {0}, k[4] = {0}, v[4] = {0}, out[4];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 2, 1, 2), tk = mk4(k, ATTNREF_F32, 1, 1, 2, 2);
    attnref_tensor tv = mk4(v, ATTNREF_F32, 1, 1, 2, 2), to = mk4(out, ATTNREF_F32, 1, 2, 1, 2);
    const double bad_sinks[2] = {0.0, NAN};
    const int64_t ids[2] = {0, 0};
    const attnref_sdpa_params cases[] = {
        {.softcap = -1.0},
        {.softcap = INFINITY},
        {.alibi_max_bias = -8.0},
        {.alibi_max_bias = NAN},
        {.sinks = bad_sinks},
        {.causal = 1, .chunk = -1},
        {.chunk = 2},
        {.batch = 1, .block_ids = ids},
        {.causal = 1, .batch = 2, .segment_ids = ids},
        {.has_scale = 1, .scale = 3.5e38},
        {.has_scale = 1, .scale = -1e300},
    };
    for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
        attnref_diag d;
        cr_assert_eq(attnref_sdpa(&tq, &tk, &tv, NULL, &cases[n], &to, &d), ATTNREF_EINVAL,
                     "case %zu", n);
        cr_assert_neq(d.msg[0], '\0');
    }
    /* The largest f32 scale is valid. */
    const attnref_sdpa_params ok = {.has_scale = 1, .scale = FLT_MAX};
    cr_assert_eq(attnref_sdpa(&tq, &tk, &tv, NULL, &ok, &to, NULL), ATTNREF_OK);
}

Test(terms, scores_beyond_f32_stay_finite)
{
    /* Scale 3e38 with q.k = 5 and 4: the scores overflow f32, the exact softmax is one-hot on
     * key 0 (weight e^(-3e38) for key 1), so out = v0 = 1. */
    attnref_sdpa_params p = {.has_scale = 1, .scale = 3e38};
    const float qv[1] = {1.0f}, kv[2] = {5.0f, 4.0f}, v[2] = {1.0f, -1.0f};
    cr_assert_eq(run1(&p, 1, 2, v, 0, qv, kv), 1.0);
}
