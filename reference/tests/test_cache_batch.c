/* test_cache_batch.c — the batched KV caches (SPEC clause 18), on mlx-lm's own examples. */
#include "cache_test_util.h"

/* ---- batched caches --------------------------------------------------------------------- */

/* mlx-lm's BatchKVCache([2,3,4]) test: 4 tokens, filter rows 0 and 1. */
Test(cache, batch_filter_removes_shared_padding)
{
    attnref_cache_params p = base(ATTNREF_CACHE_BATCH, 3);
    int64_t lp[] = {2, 3, 4};
    p.left_padding = lp;
    attnref_cache *c = mk(p);
    feed_ok(c, 4);
    int64_t off[] = {2, 1, 0};
    expect_offsets(c, off);
    int64_t r0[] = {-1, -1, 0, 1}, r2[] = {-1, -1, -1, -1};
    expect_row(c, 0, r0, 4);
    expect_row(c, 2, r2, 4);
    int64_t rows[] = {0, 1};
    cr_assert_eq(attnref_cache_filter(c, rows, 2, NULL), ATTNREF_OK);
    cr_assert_eq(T_of(c), 2);
    int64_t lp2[] = {0, 1}, off2[] = {2, 1};
    expect_lp(c, lp2);
    expect_offsets(c, off2);
    const char *m[] = {"TTT", "FTT"};
    expect_mask(c, 1, 0, m);
    attnref_cache_destroy(c);
}

Test(cache, batch_extend_left_pads_the_shorter)
{
    attnref_cache_params p = base(ATTNREF_CACHE_BATCH, 3);
    int64_t lpa[] = {2, 1, 2}, lpb[] = {3, 0};
    p.left_padding = lpa;
    attnref_cache *a = mk(p);
    p.batch = 2;
    p.left_padding = lpb;
    attnref_cache *b = mk(p);
    feed_ok(a, 8);
    feed_ok(b, 4);
    cr_assert_eq(attnref_cache_extend(a, b, NULL), ATTNREF_OK);
    int64_t off[] = {6, 7, 6, 1, 4}, lp[] = {2, 1, 2, 7, 4};
    expect_offsets(a, off);
    expect_lp(a, lp);
    int64_t r3[] = {-1, -1, -1, -1, -1, -1, -1, 0}, r4[] = {-1, -1, -1, -1, 0, 1, 2, 3};
    expect_row(a, 3, r3, 8);
    expect_row(a, 4, r4, 8);
    int64_t offb[] = {1, 4};
    expect_offsets(b, offb); /* other unchanged */
    attnref_cache_destroy(a);
    attnref_cache_destroy(b);
}

Test(cache, batch_prepare_finalize_right_to_left)
{
    attnref_cache *c = mk(base(ATTNREF_CACHE_BATCH, 2));
    int64_t len[] = {3, 1};
    cr_assert_eq(attnref_cache_prepare(c, NULL, len, NULL), ATTNREF_OK);
    feed_ok(c, 3);
    int64_t before[] = {3, 3};
    expect_offsets(c, before); /* right padding counts until finalize */
    cr_assert_eq(attnref_cache_finalize(c, NULL), ATTNREF_OK);
    int64_t off[] = {3, 1}, lp[] = {0, 2};
    expect_offsets(c, off);
    expect_lp(c, lp);
    int64_t r1[] = {-1, -1, 0};
    expect_row(c, 1, r1, 3);
    const char *m[] = {"TTTT", "FFTT"};
    expect_mask(c, 1, 0, m);
    feed_ok(c, 1);
    int64_t r1b[] = {-1, -1, 0, 1};
    expect_row(c, 1, r1b, 4);
    attnref_cache_destroy(c);
}

Test(cache, batch_rotating_eviction_lowers_left_padding)
{
    attnref_cache_params p = base(ATTNREF_CACHE_BATCH_ROTATING, 2);
    int64_t lp0[] = {1, 0};
    p.left_padding = lp0;
    p.max_size = 4;
    attnref_cache *c = mk(p);
    feed_ok(c, 3);
    for (int i = 0; i < 3; i++)
        feed_ok(c, 1);
    int64_t off[] = {5, 6}, lp[] = {-1, -2};
    expect_offsets(c, off);
    expect_lp(c, lp);
    int64_t r0[] = {1, 2, 3, 4}, r1[] = {2, 3, 4, 5};
    expect_row(c, 0, r0, 4);
    expect_row(c, 1, r1, 4);
    int64_t tr;
    cr_assert_eq(attnref_cache_trim(c, 1, &tr, NULL), ATTNREF_OK);
    cr_assert_eq(tr, 0);
    attnref_cache_destroy(c);
}

Test(cache, batch_rotating_chunked_prefill_with_right_padding)
{
    attnref_cache_params p = base(ATTNREF_CACHE_BATCH_ROTATING, 2);
    p.max_size = 4;
    attnref_cache *c = mk(p);
    int64_t len[] = {5, 2};
    cr_assert_eq(attnref_cache_prepare(c, NULL, len, NULL), ATTNREF_OK);
    feed_ok(c, 3);
    cr_assert_eq(feed(c, 1), ATTNREF_EINVAL, "single-token update while prepared");
    feed_ok(c, 3);
    cr_assert_eq(attnref_cache_finalize(c, NULL), ATTNREF_OK);
    int64_t off[] = {5, 2}, lp[] = {1, 4};
    expect_offsets(c, off);
    expect_lp(c, lp);
    int64_t r0[] = {-1, 0, 1, 2, 3, 4}, r1[] = {-1, -1, -1, -1, 0, 1};
    expect_row(c, 0, r0, 6);
    expect_row(c, 1, r1, 6);
    const char *m[] = {"TTTT", "FTTT"}; /* axis after evicting 3 columns: [2,3,4,5], [pad,0,1,2] */
    expect_mask(c, 1, 0, m);
    feed_ok(c, 1);
    int64_t offb[] = {6, 3};
    expect_offsets(c, offb);
    int64_t r0b[] = {2, 3, 4, 5}, r1b[] = {-1, 0, 1, 2};
    expect_row(c, 0, r0b, 4);
    expect_row(c, 1, r1b, 4);
    int64_t lpb[] = {-2, 1};
    expect_lp(c, lpb);
    attnref_cache_destroy(c);
}

Test(cache, merge_standard_and_rotating)
{
    attnref_cache *s1 = mk(base(ATTNREF_CACHE_STANDARD, 1)),
                  *s2 = mk(base(ATTNREF_CACHE_STANDARD, 1));
    feed_ok(s1, 2);
    feed_ok(s2, 4);
    const attnref_cache *in[] = {s1, s2};
    attnref_cache *m = NULL;
    cr_assert_eq(attnref_cache_merge(in, 2, &m, NULL), ATTNREF_OK);
    int64_t off[] = {2, 4}, lp[] = {2, 0}, r0[] = {-1, -1, 0, 1};
    expect_offsets(m, off);
    expect_lp(m, lp);
    expect_row(m, 0, r0, 4);
    attnref_cache_info in_info;
    attnref_cache_get_info(m, &in_info, NULL);
    cr_assert_eq(in_info.kind, ATTNREF_CACHE_BATCH);
    attnref_cache_destroy(m);

    attnref_cache_params p = base(ATTNREF_CACHE_ROTATING, 1);
    p.max_size = 4;
    attnref_cache *r1 = mk(p), *r2 = mk(p);
    for (int i = 0; i < 6; i++)
        feed_ok(r1, 1);
    feed_ok(r2, 2);
    const attnref_cache *rin[] = {r1, r2};
    cr_assert_eq(attnref_cache_merge(rin, 2, &m, NULL), ATTNREF_OK);
    int64_t roff[] = {6, 2}, rlp[] = {0, 2}, rr0[] = {2, 3, 4, 5}, rr1[] = {-1, -1, 0, 1};
    expect_offsets(m, roff);
    expect_lp(m, rlp);
    expect_row(m, 0, rr0, 4);
    expect_row(m, 1, rr1, 4);
    attnref_cache_destroy(m);
    attnref_cache_destroy(s1), attnref_cache_destroy(s2), attnref_cache_destroy(r1),
        attnref_cache_destroy(r2);
}

/* Every row of a left-padded batch attends exactly as the unbatched run of its own prompt. */
static void row_block(float *buf, int64_t B, int64_t S, int64_t D, const int64_t *first, int which)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < S; i++)
            for (int64_t d = 0; d < D; d++) {
                int64_t t = first[b] + i; /* position; negative = pad, poisoned */
                buf[(b * S + i) * D + d] = t < 0 ? NAN : val(b, t, d, which);
            }
}

static void attend_rows(attnref_cache *c, int64_t B, int64_t S, int64_t D, const int64_t *first,
                        double *out)
{
    float qb[2 * 8 * 4], kb[2 * 8 * 4], vb[2 * 8 * 4];
    row_block(qb, B, S, D, first, 0);
    row_block(kb, B, S, D, first, 1);
    row_block(vb, B, S, D, first, 2);
    for (int i = 0; i < B * S * D; i++)
        if (isnan(qb[i]))
            qb[i] = 0; /* pad queries: any finite value */
    attnref_tensor q, k, v;
    int64_t sh[4] = {B, 1, S, D};
    attnref_tensor_init(&q, qb, ATTNREF_F32, 4, sh, NULL);
    attnref_tensor_init(&k, kb, ATTNREF_F32, 4, sh, NULL);
    attnref_tensor_init(&v, vb, ATTNREF_F32, 4, sh, NULL);
    attnref_diag d;
    cr_assert_eq(attnref_cache_attend(c, &q, &k, &v, 0, NULL, out, &d), ATTNREF_OK, "%s", d.msg);
}

Test(cache, batch_row_equals_single_run)
{
    enum { D = 4 };
    attnref_cache_params p = base(ATTNREF_CACHE_BATCH, 2);
    p.head_dim = D, p.value_dim = D;
    int64_t lp[] = {3, 0};
    p.left_padding = lp;
    attnref_cache *c = mk(p);
    int64_t first[2] = {-3, 0};
    double bout[2 * 5 * D];
    attend_rows(c, 2, 5, D, first, bout); /* row 0: prompt of 2, row 1: prompt of 5 */
    double dec[2][2 * D];
    for (int s = 0; s < 2; s++) {
        int64_t off[2];
        attnref_cache_offsets(c, off, NULL);
        attend_rows(c, 2, 1, D, off, dec[s]);
    }
    for (int64_t b = 0; b < 2; b++) {
        attnref_cache_params sp = base(ATTNREF_CACHE_STANDARD, 1);
        sp.head_dim = D, sp.value_dim = D;
        attnref_cache *one = mk(sp);
        int64_t n = 5 - lp[b], f0 = 0;
        double out[8 * D];
        /* the single run: the row's own tokens only, with its own batch index for the values */
        float qb[8 * D], kb[8 * D], vb[8 * D];
        for (int64_t i = 0; i < n; i++)
            for (int64_t d = 0; d < D; d++) {
                qb[i * D + d] = val(b, i, d, 0);
                kb[i * D + d] = val(b, i, d, 1);
                vb[i * D + d] = val(b, i, d, 2);
            }
        attnref_tensor q, k, v;
        int64_t sh[4] = {1, 1, n, D};
        attnref_tensor_init(&q, qb, ATTNREF_F32, 4, sh, NULL);
        attnref_tensor_init(&k, kb, ATTNREF_F32, 4, sh, NULL);
        attnref_tensor_init(&v, vb, ATTNREF_F32, 4, sh, NULL);
        cr_assert_eq(attnref_cache_attend(one, &q, &k, &v, 0, NULL, out, NULL), ATTNREF_OK);
        for (int64_t i = 0; i < n; i++)
            for (int64_t d = 0; d < D; d++)
                cr_assert_eq(bout[(b * 5 + lp[b] + i) * D + d], out[i * D + d],
                             "row %lld prefill %lld", (long long)b, (long long)i);
        for (int s = 0; s < 2; s++) {
            int64_t at = n + s;
            (void)f0;
            for (int64_t d = 0; d < D; d++) {
                qb[d] = val(b, at, d, 0), kb[d] = val(b, at, d, 1), vb[d] = val(b, at, d, 2);
            }
            int64_t s1[4] = {1, 1, 1, D};
            attnref_tensor_init(&q, qb, ATTNREF_F32, 4, s1, NULL);
            attnref_tensor_init(&k, kb, ATTNREF_F32, 4, s1, NULL);
            attnref_tensor_init(&v, vb, ATTNREF_F32, 4, s1, NULL);
            cr_assert_eq(attnref_cache_attend(one, &q, &k, &v, 0, NULL, out, NULL), ATTNREF_OK);
            for (int64_t d = 0; d < D; d++)
                cr_assert_eq(dec[s][b * D + d], out[d], "row %lld decode %d", (long long)b, s);
        }
        attnref_cache_destroy(one);
    }
    attnref_cache_destroy(c);
}

/* Right padding must never evict valid tokens: row 1 has one valid token in a 9-token prefill
 * of three chunks through a max_size 4 cache; it survives because its padding is moved to the
 * front before each chunk's eviction.  Row 0's left padding counts from 0 after eviction made
 * it negative (mlx-lm reports -1 here, clause 18). */
Test(cache, batch_rotating_padding_never_evicts_valid_tokens)
{
    attnref_cache_params p = base(ATTNREF_CACHE_BATCH_ROTATING, 2);
    p.max_size = 4;
    attnref_cache *c = mk(p);
    int64_t len[] = {7, 1};
    cr_assert_eq(attnref_cache_prepare(c, NULL, len, NULL), ATTNREF_OK);
    for (int i = 0; i < 3; i++)
        feed_ok(c, 3);
    cr_assert_eq(attnref_cache_finalize(c, NULL), ATTNREF_OK);
    int64_t off[] = {7, 1}, lp[] = {2, 5};
    expect_offsets(c, off);
    expect_lp(c, lp);
    int64_t r0[] = {-1, -1, 3, 4, 5, 6}, r1[] = {-1, -1, -1, -1, -1, 0};
    expect_row(c, 0, r0, 6);
    expect_row(c, 1, r1, 6);
    attnref_cache_destroy(c);
}

Test(cache, merge_and_extend_of_empty_caches)
{
    attnref_cache *s1 = mk(base(ATTNREF_CACHE_STANDARD, 1)),
                  *s2 = mk(base(ATTNREF_CACHE_STANDARD, 1));
    const attnref_cache *in[] = {s1, s2};
    attnref_cache *m = NULL;
    cr_assert_eq(attnref_cache_merge(in, 2, &m, NULL), ATTNREF_OK);
    int64_t zero[] = {0, 0};
    cr_assert_eq(T_of(m), 0);
    expect_offsets(m, zero);
    expect_lp(m, zero);
    /* two never-updated batch caches: rows and left padding are concatenated */
    attnref_cache_params p = base(ATTNREF_CACHE_BATCH, 1);
    int64_t lp1[] = {2};
    p.left_padding = lp1;
    attnref_cache *a = mk(p);
    cr_assert_eq(attnref_cache_extend(m, a, NULL), ATTNREF_OK);
    int64_t off3[] = {0, 0, -2}, lp3[] = {0, 0, 2};
    expect_offsets(m, off3);
    expect_lp(m, lp3);
    feed_ok(m, 3);
    int64_t r2[] = {-1, -1, 0};
    expect_row(m, 2, r2, 3);
    attnref_cache_destroy(m), attnref_cache_destroy(a), attnref_cache_destroy(s1),
        attnref_cache_destroy(s2);
}

Test(cache, batch_rotating_extend_right_aligns)
{
    attnref_cache_params p = base(ATTNREF_CACHE_BATCH_ROTATING, 1);
    p.max_size = 4;
    attnref_cache *a = mk(p), *b = mk(p);
    for (int i = 0; i < 6; i++)
        feed_ok(a, 1); /* [2,3,4,5], left_padding -2 */
    feed_ok(b, 2);
    cr_assert_eq(attnref_cache_extend(a, b, NULL), ATTNREF_OK);
    int64_t off[] = {6, 2}, lp[] = {-2, 2}, r0[] = {2, 3, 4, 5}, r1[] = {-1, -1, 0, 1};
    expect_offsets(a, off);
    expect_lp(a, lp);
    expect_row(a, 0, r0, 4);
    expect_row(a, 1, r1, 4);
    const char *m[] = {"TTTT", "FTTT"}; /* decode: one column evicted, row 1 keeps 0, 1 and 2 */
    expect_mask(a, 1, 0, m);
    attnref_cache_destroy(a), attnref_cache_destroy(b);
}
