/* test_cache.c — the reference KV cache (SPEC clauses 14-16): retained positions, masks and
 * trim of the standard, rotating and chunked caches, and attention through a cache.
 *
 * Most caches here have head_dim 1 and store value = absolute position, so a wrong retained
 * set names the wrong token: the keys read back must equal the positions reported. */
#include "cache_test_util.h"

/* ---- single-row kinds: a table of update sequences and the retained positions ------------ */

typedef struct seq_case {
    const char *name;
    attnref_cache_kind kind;
    int64_t max_size, keep, chunk;
    int64_t steps[12]; /* update sizes, 0-terminated */
    int64_t want[16];  /* retained positions in time order, -2-terminated */
} seq_case;

static const seq_case seqs[] = {
    /* the real reports, max_size 4 keep 0 */
    {"rotating: six singles",
     ATTNREF_CACHE_ROTATING,
     4,
     0,
     0,
     {1, 1, 1, 1, 1, 1},
     {2, 3, 4, 5, -2}},
    {"rotating: 6-token then single", ATTNREF_CACHE_ROTATING, 4, 0, 0, {6, 1}, {3, 4, 5, 6, -2}},
    {"rotating: first chunk stored whole",
     ATTNREF_CACHE_ROTATING,
     4,
     0,
     0,
     {6},
     {0, 1, 2, 3, 4, 5, -2}},
    {"rotating: multi-token keeps max_size-1+S",
     ATTNREF_CACHE_ROTATING,
     4,
     0,
     0,
     {1, 1, 1, 1, 1, 3},
     {2, 3, 4, 5, 6, 7, -2}},
    {"rotating: below max_size nothing evicted",
     ATTNREF_CACHE_ROTATING,
     4,
     0,
     0,
     {2, 1},
     {0, 1, 2, -2}},
    {"rotating: reaching max_size evicts nothing",
     ATTNREF_CACHE_ROTATING,
     4,
     0,
     0,
     {3, 2},
     {0, 1, 2, 3, 4, -2}},
    {"rotating: keep 1 singles",
     ATTNREF_CACHE_ROTATING,
     4,
     1,
     0,
     {1, 1, 1, 1, 1, 1},
     {0, 3, 4, 5, -2}},
    {"rotating: keep 2 chunk", ATTNREF_CACHE_ROTATING, 5, 2, 0, {7, 2}, {0, 1, 5, 6, 7, 8, -2}},
    {"rotating: keep 2 chunk then single",
     ATTNREF_CACHE_ROTATING,
     5,
     2,
     0,
     {7, 2, 1},
     {0, 1, 7, 8, 9, -2}},
    {"rotating: max_size 1", ATTNREF_CACHE_ROTATING, 1, 0, 0, {1, 1, 1}, {2, -2}},
    {"chunked 4: prefill, single, pair",
     ATTNREF_CACHE_CHUNKED,
     0,
     0,
     4,
     {6, 1, 2},
     {3, 4, 5, 6, 7, 8, -2}},
    {"chunked 4: singles keep chunk_size+1",
     ATTNREF_CACHE_CHUNKED,
     0,
     0,
     4,
     {1, 1, 1, 1, 1, 1, 1},
     {2, 3, 4, 5, 6, -2}},
    {"standard: grows", ATTNREF_CACHE_STANDARD, 0, 0, 0, {3, 1, 2}, {0, 1, 2, 3, 4, 5, -2}},
};

Test(cache, sequences_retain_the_right_positions)
{
    for (size_t s = 0; s < sizeof seqs / sizeof seqs[0]; s++) {
        const seq_case *sc = &seqs[s];
        attnref_cache_params p = base(sc->kind, 1);
        p.max_size = sc->max_size;
        p.keep = sc->keep;
        p.chunk_size = sc->chunk;
        attnref_cache *c = mk(p);
        int64_t total = 0;
        for (int i = 0; sc->steps[i]; i++) {
            feed_ok(c, sc->steps[i]);
            total += sc->steps[i];
        }
        int64_t n = 0;
        while (sc->want[n] != -2)
            n++;
        cr_assert_eq(T_of(c), n, "%s: T = %lld, expected %lld", sc->name, (long long)T_of(c),
                     (long long)n);
        expect_row(c, 0, sc->want, n);
        expect_offsets(c, &total);
        attnref_cache_destroy(c);
    }
}

/* (c): prefill 3, three decodes, then a 2-token chunk: position 6 sees [3,4,5,6], 7 sees [4..7]. */
Test(cache, rotating_chunk_after_decode_mask_and_attention)
{
    attnref_cache_params p = base(ATTNREF_CACHE_ROTATING, 1);
    p.max_size = 4;
    attnref_cache *c = mk(p);
    feed_ok(c, 3);
    for (int i = 0; i < 3; i++)
        feed_ok(c, 1);
    const char *rows[] = {"TTTTF", "FTTTT"}; /* key axis after the store: positions 3,4,5,6,7 */
    expect_mask(c, 2, 0, rows);
    /* q = 0 makes every kept key weigh the same: the output is the mean of the kept values. */
    float qb[2] = {0, 0}, kb[2] = {6, 7}, vb[2] = {1006, 1007};
    attnref_tensor q, k, v;
    int64_t shape[4] = {1, 1, 2, 1};
    attnref_tensor_init(&q, qb, ATTNREF_F32, 4, shape, NULL);
    attnref_tensor_init(&k, kb, ATTNREF_F32, 4, shape, NULL);
    attnref_tensor_init(&v, vb, ATTNREF_F32, 4, shape, NULL);
    double out[2];
    attnref_diag d;
    cr_assert_eq(attnref_cache_attend(c, &q, &k, &v, 0, NULL, out, &d), ATTNREF_OK, "%s", d.msg);
    cr_assert_eq(out[0], 1004.5);
    cr_assert_eq(out[1], 1005.5);
    int64_t want[] = {3, 4, 5, 6, 7};
    expect_row(c, 0, want, 5);
    attnref_cache_destroy(c);
}

Test(cache, rotating_keep_mask_counts_slots)
{
    attnref_cache_params p = base(ATTNREF_CACHE_ROTATING, 1);
    p.max_size = 4;
    p.keep = 1;
    attnref_cache *c = mk(p);
    for (int i = 0; i < 6; i++)
        feed_ok(c, 1);                       /* [0,3,4,5] */
    const char *rows[] = {"TTTTF", "FTTTT"}; /* axis [0,4,5,6,7]: the window hides the kept token */
    expect_mask(c, 2, 0, rows);
    const char *one[] = {"TTTT"}; /* single decode: axis [0,4,5,6] */
    expect_mask(c, 1, 0, one);
    const char *w2[] = {"FFTT"}; /* a model window of 2 */
    expect_mask(c, 1, 2, w2);
    attnref_cache_destroy(c);
}

Test(cache, standard_mask_window_and_causal)
{
    attnref_cache *c = mk(base(ATTNREF_CACHE_STANDARD, 1));
    feed_ok(c, 2);
    const char *rows[] = {"TTTFF", "TTTTF", "TTTTT"};
    expect_mask(c, 3, 0, rows);
    const char *win[] = {"FTTFF", "FFTTF", "FFFTT"};
    expect_mask(c, 3, 2, win);
    attnref_cache_destroy(c);
}

Test(cache, chunked_mask_stays_in_chunk)
{
    attnref_cache_params p = base(ATTNREF_CACHE_CHUNKED, 1);
    p.chunk_size = 4;
    attnref_cache *c = mk(p);
    const char *pre[] = {"TFFFFF", "TTFFFF", "TTTFFF", "TTTTFF", "FFFFTF", "FFFFTT"};
    expect_mask(c, 6, 0, pre);
    feed_ok(c, 6);
    const char *one[] = {"FFTTT"}; /* axis [2,3,4,5,6]; position 6 is in chunk 4..7 */
    expect_mask(c, 1, 0, one);
    feed_ok(c, 1);
    const char *two[] = {"FTTTTF", "FFFFFT"}; /* axis [3..8]; 7 in chunk 4..7, 8 starts chunk 8 */
    expect_mask(c, 2, 0, two);
    int64_t tr = -1;
    cr_assert_eq(attnref_cache_trim(c, 2, &tr, NULL), ATTNREF_OK);
    cr_assert_eq(tr, 2);
    int64_t want[] = {2, 3, 4};
    expect_row(c, 0, want, 3);
    cr_assert_eq(attnref_cache_trim(c, 10, &tr, NULL), ATTNREF_OK);
    cr_assert_eq(tr, 3);
    attnref_cache_destroy(c);
}

/* ---- trim ------------------------------------------------------------------------------- */

Test(cache, standard_trim_real_report)
{
    attnref_cache *c = mk(base(ATTNREF_CACHE_STANDARD, 1));
    feed_ok(c, 10);
    int64_t tr = 99, off;
    attnref_diag d;
    cr_assert_eq(attnref_cache_trim(c, -5, &tr, &d), ATTNREF_EINVAL);
    cr_assert(strstr(d.msg, "negative") != NULL, "%s", d.msg);
    cr_assert_eq(tr, 99, "a rejected trim writes nothing");
    off = 10;
    expect_offsets(c, &off);
    cr_assert_eq(attnref_cache_trim(c, 7, &tr, NULL), ATTNREF_OK);
    cr_assert_eq(tr, 7);
    cr_assert_eq(attnref_cache_trim(c, 4, &tr, NULL), ATTNREF_OK);
    cr_assert_eq(tr, 3);
    off = 0;
    expect_offsets(c, &off);
    feed_ok(c, 2);
    int64_t want[] = {0, 1};
    expect_row(c, 0, want, 2);
    attnref_cache_destroy(c);
}

Test(cache, rotating_trim_after_wrap_changes_nothing)
{
    attnref_cache_params p = base(ATTNREF_CACHE_ROTATING, 1);
    p.max_size = 8;
    attnref_cache *c = mk(p);
    for (int i = 0; i < 20; i++)
        feed_ok(c, 1);
    int64_t tr = 99, off = 20;
    cr_assert_eq(attnref_cache_trim(c, 3, &tr, NULL), ATTNREF_OK);
    cr_assert_eq(tr, 0);
    expect_offsets(c, &off);
    feed_ok(c, 1);
    int64_t want[] = {13, 14, 15, 16, 17, 18, 19, 20};
    expect_row(c, 0, want, 8);
    attnref_cache_destroy(c);
}

Test(cache, rotating_trim_before_wrap)
{
    attnref_cache_params p = base(ATTNREF_CACHE_ROTATING, 1);
    p.max_size = 4;
    attnref_cache *c = mk(p);
    feed_ok(c, 3);
    int64_t tr;
    cr_assert_eq(attnref_cache_trim(c, 2, &tr, NULL), ATTNREF_OK);
    cr_assert_eq(tr, 2);
    feed_ok(c, 1);
    feed_ok(c, 2);
    int64_t want[] = {0, 1, 2, 3};
    expect_row(c, 0, want, 4);
    /* offset 4 = max_size: no longer trimmable (as mlx-lm is_trimmable) */
    cr_assert_eq(attnref_cache_trim(c, 1, &tr, NULL), ATTNREF_OK);
    cr_assert_eq(tr, 0);
    attnref_cache_destroy(c);
}

/* ---- end-to-end: attention through the cache equals one-shot attention ------------------ */

Test(cache, prefill_decode_chunk_equals_one_shot)
{
    enum { D = 4, L = 9 };
    attnref_cache_params p = base(ATTNREF_CACHE_STANDARD, 1);
    p.head_dim = D, p.value_dim = D, p.kv_heads = 1;
    attnref_cache *c = mk(p);
    const int64_t steps[] = {4, 1, 1, 3};
    double got[L * 2 * D];
    int64_t t0 = 0;
    for (int s = 0; s < 4; s++) {
        int64_t S = steps[s];
        float qb[2 * L * D], kb[L * D], vb[L * D];
        block(qb, 1, 2, t0, S, D, 0); /* two query heads: GQA over one kv head */
        block(kb, 1, 1, t0, S, D, 1);
        block(vb, 1, 1, t0, S, D, 2);
        attnref_tensor q, k, v;
        int64_t qs[4] = {1, 2, S, D}, ks[4] = {1, 1, S, D};
        attnref_tensor_init(&q, qb, ATTNREF_F32, 4, qs, NULL);
        attnref_tensor_init(&k, kb, ATTNREF_F32, 4, ks, NULL);
        attnref_tensor_init(&v, vb, ATTNREF_F32, 4, ks, NULL);
        double out[2 * L * D];
        attnref_diag d;
        cr_assert_eq(attnref_cache_attend(c, &q, &k, &v, 0, NULL, out, &d), ATTNREF_OK, "%s",
                     d.msg);
        for (int64_t h = 0; h < 2; h++)
            for (int64_t i = 0; i < S; i++)
                for (int64_t e = 0; e < D; e++)
                    got[(h * L + t0 + i) * D + e] = out[(h * S + i) * D + e];
        t0 += S;
    }
    float qb[2 * L * D], kb[L * D], vb[L * D];
    block(qb, 1, 2, 0, L, D, 0);
    block(kb, 1, 1, 0, L, D, 1);
    block(vb, 1, 1, 0, L, D, 2);
    attnref_tensor q, k, v;
    int64_t qs[4] = {1, 2, L, D}, ks[4] = {1, 1, L, D};
    attnref_tensor_init(&q, qb, ATTNREF_F32, 4, qs, NULL);
    attnref_tensor_init(&k, kb, ATTNREF_F32, 4, ks, NULL);
    attnref_tensor_init(&v, vb, ATTNREF_F32, 4, ks, NULL);
    attnref_sdpa_params sp = {0};
    sp.causal = 1;
    double want[2 * L * D];
    cr_assert_eq(attnref_sdpa_f64(&q, &k, &v, NULL, &sp, want, NULL), ATTNREF_OK);
    for (int i = 0; i < 2 * L * D; i++)
        cr_assert_eq(got[i], want[i], "element %d", i);
    attnref_cache_destroy(c);
}

Test(cache, kind_names_round_trip)
{
    for (int k = ATTNREF_CACHE_STANDARD; k <= ATTNREF_CACHE_BATCH_ROTATING; k++) {
        attnref_cache_kind out;
        cr_assert_eq(attnref_cache_kind_parse(attnref_cache_kind_name((attnref_cache_kind)k), &out),
                     ATTNREF_OK);
        cr_assert_eq((int)out, k);
    }
    attnref_cache_kind out;
    cr_assert_eq(attnref_cache_kind_parse("ring", &out), ATTNREF_EINVAL);
    cr_assert_str_eq(attnref_cache_kind_name((attnref_cache_kind)0), "?");
}

Test(cache, clone_is_independent)
{
    attnref_cache *c = mk(base(ATTNREF_CACHE_STANDARD, 1)), *d = NULL;
    feed_ok(c, 3);
    cr_assert_eq(attnref_cache_clone(c, &d, NULL), ATTNREF_OK);
    feed_ok(c, 1);
    int64_t want[] = {0, 1, 2};
    expect_row(d, 0, want, 3);
    attnref_cache_destroy(c), attnref_cache_destroy(d);
}

Test(cache, half_precision_storage_is_exact)
{
    attnref_cache_params p = base(ATTNREF_CACHE_ROTATING, 1);
    p.dtype = ATTNREF_BF16;
    p.max_size = 2;
    attnref_cache *c = mk(p);
    uint16_t kb[3] = {0x3f80, 0xff80, 0x0001},
             vb[3] = {0x7fc1, 0x4000, 0x8000}; /* 1, -inf, tiny; NaN, 2, -0 */
    attnref_tensor k, v;
    int64_t sh[4] = {1, 1, 3, 1};
    attnref_tensor_init(&k, kb, ATTNREF_BF16, 4, sh, NULL);
    attnref_tensor_init(&v, vb, ATTNREF_BF16, 4, sh, NULL);
    cr_assert_eq(attnref_cache_update(c, &k, &v, NULL), ATTNREF_OK);
    uint16_t ko[3], vo[3];
    attnref_tensor_init(&k, ko, ATTNREF_BF16, 4, sh, NULL);
    attnref_tensor_init(&v, vo, ATTNREF_BF16, 4, sh, NULL);
    cr_assert_eq(attnref_cache_kv(c, &k, &v, NULL), ATTNREF_OK);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(ko[i], kb[i], "key %d", i);
        cr_assert_eq(vo[i], vb[i], "value %d", i);
    }
    attnref_cache_destroy(c);
}
