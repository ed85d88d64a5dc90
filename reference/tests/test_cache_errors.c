/* test_cache_errors.c — every error path of the KV cache API; a failed call changes nothing. */
#include "cache_test_util.h"

/* ---- bad inputs: every error path, and a failed call changes nothing -------------------- */

typedef struct bad_create {
    const char *what;
    attnref_cache_kind kind;
    attnref_dtype dtype;
    int64_t batch, heads, D, Dv, max_size, keep, chunk, group, bits;
    int lp_bad;
    int rc;
} bad_create;

static const int64_t lp_neg[] = {-1};

static const bad_create bads[] = {
    {"kind", (attnref_cache_kind)9, ATTNREF_F32, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, ATTNREF_EINVAL},
    {"dtype", ATTNREF_CACHE_STANDARD, ATTNREF_BOOL, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, ATTNREF_EINVAL},
    {"batch", ATTNREF_CACHE_STANDARD, ATTNREF_F32, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, ATTNREF_EINVAL},
    {"kv_heads", ATTNREF_CACHE_STANDARD, ATTNREF_F32, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0, ATTNREF_EINVAL},
    {"head_dim", ATTNREF_CACHE_STANDARD, ATTNREF_F32, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, ATTNREF_EINVAL},
    {"value_dim", ATTNREF_CACHE_STANDARD, ATTNREF_F32, 1, 1, 1, -3, 0, 0, 0, 0, 0, 0,
     ATTNREF_EINVAL},
    {"head_dim", ATTNREF_CACHE_STANDARD, ATTNREF_F32, 1, 1, (int64_t)1 << 40, 1, 0, 0, 0, 0, 0, 0,
     ATTNREF_ERANGE},
    {"batch * kv_heads", ATTNREF_CACHE_STANDARD, ATTNREF_F32, 1 << 20, 1 << 20, 4, 4, 0, 0, 0, 0, 0,
     0, ATTNREF_ERANGE},
    {"max_size", ATTNREF_CACHE_STANDARD, ATTNREF_F32, 1, 1, 1, 1, 4, 0, 0, 0, 0, 0, ATTNREF_EINVAL},
    {"max_size", ATTNREF_CACHE_ROTATING, ATTNREF_F32, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, ATTNREF_EINVAL},
    {"keep", ATTNREF_CACHE_ROTATING, ATTNREF_F32, 1, 1, 1, 1, 4, 4, 0, 0, 0, 0, ATTNREF_EINVAL},
    {"keep", ATTNREF_CACHE_BATCH_ROTATING, ATTNREF_F32, 1, 1, 1, 1, 4, 1, 0, 0, 0, 0,
     ATTNREF_EINVAL},
    {"chunk_size", ATTNREF_CACHE_CHUNKED, ATTNREF_F32, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0,
     ATTNREF_EINVAL},
    {"chunk_size", ATTNREF_CACHE_ROTATING, ATTNREF_F32, 1, 1, 1, 1, 4, 0, 4, 0, 0, 0,
     ATTNREF_EINVAL},
    {"group_size", ATTNREF_CACHE_QUANTIZED, ATTNREF_F32, 1, 1, 64, 64, 0, 0, 0, 48, 4, 0,
     ATTNREF_EINVAL},
    {"bits", ATTNREF_CACHE_QUANTIZED, ATTNREF_F32, 1, 1, 64, 64, 0, 0, 0, 64, 3, 0, ATTNREF_EINVAL},
    {"group_size", ATTNREF_CACHE_QUANTIZED, ATTNREF_F32, 1, 1, 96, 64, 0, 0, 0, 64, 4, 0,
     ATTNREF_EINVAL},
    {"group_size", ATTNREF_CACHE_STANDARD, ATTNREF_F32, 1, 1, 64, 64, 0, 0, 0, 64, 0, 0,
     ATTNREF_EINVAL},
    {"left_padding", ATTNREF_CACHE_STANDARD, ATTNREF_F32, 1, 1, 1, 1, 0, 0, 0, 0, 0, 2,
     ATTNREF_EINVAL},
    {"left_padding", ATTNREF_CACHE_BATCH, ATTNREF_F32, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1,
     ATTNREF_EINVAL},
};

Test(cache, create_rejects_bad_parameters)
{
    static const int64_t lp_ok[] = {0};
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        const bad_create *b = &bads[i];
        attnref_cache_params p = {
            b->kind,     b->dtype, b->batch,
            b->heads,    b->D,     b->Dv,
            b->max_size, b->keep,  b->chunk,
            b->group,    b->bits,  b->lp_bad == 1 ? lp_neg : b->lp_bad == 2 ? lp_ok : NULL};
        attnref_cache *c = (attnref_cache *)&p; /* must stay untouched */
        attnref_diag d;
        int rc = attnref_cache_create(&p, &c, &d);
        cr_assert_eq(rc, b->rc, "case %zu (%s): rc %d, expected %d (%s)", i, b->what, rc, b->rc,
                     d.msg);
        cr_assert(strstr(d.msg, b->what) != NULL, "case %zu: diag '%s' does not name '%s'", i,
                  d.msg, b->what);
        cr_assert_eq(c, (attnref_cache *)&p, "case %zu: *out written on error", i);
    }
    attnref_cache *c;
    cr_assert_eq(attnref_cache_create(NULL, &c, NULL), ATTNREF_EINVAL);
    attnref_cache_params p = base(ATTNREF_CACHE_STANDARD, 1);
    cr_assert_eq(attnref_cache_create(&p, NULL, NULL), ATTNREF_EINVAL);
}

Test(cache, update_rejects_bad_blocks)
{
    attnref_cache *c = mk(base(ATTNREF_CACHE_STANDARD, 1));
    feed_ok(c, 2);
    float buf[8] = {0};
    uint16_t hbuf[8] = {0};
    attnref_tensor k, v, kh, k0, k3;
    int64_t s1[4] = {1, 1, 1, 1}, s0[4] = {1, 1, 0, 1}, sD[4] = {1, 1, 1, 2}, s3[3] = {1, 1, 1};
    attnref_tensor_init(&k, buf, ATTNREF_F32, 4, s1, NULL);
    attnref_tensor_init(&v, buf, ATTNREF_F32, 4, sD, NULL);
    attnref_tensor_init(&kh, hbuf, ATTNREF_F16, 4, s1, NULL);
    attnref_tensor_init(&k0, buf, ATTNREF_F32, 4, s0, NULL);
    attnref_tensor_init(&k3, buf, ATTNREF_F32, 3, s3, NULL);
    attnref_diag d;
    cr_assert_eq(attnref_cache_update(c, &k, &v, &d), ATTNREF_EINVAL); /* v has Dv 2 */
    cr_assert(strstr(d.msg, "v:") != NULL, "%s", d.msg);
    cr_assert_eq(attnref_cache_update(c, &kh, &k, &d), ATTNREF_EDTYPE);
    cr_assert_eq(attnref_cache_update(c, &k0, &k0, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_update(c, &k3, &k3, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_update(c, NULL, &k, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_update(c, &k, NULL, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_update(NULL, &k, &k, &d), ATTNREF_EINVAL);
    int64_t want[] = {0, 1};
    expect_row(c, 0, want, 2);
    /* masks */
    int64_t shape[4];
    uint8_t mb[8];
    float fb[8];
    attnref_tensor keep, fkeep, wrong;
    int64_t ms[4] = {1, 1, 1, 3}, ms2[4] = {1, 1, 1, 2};
    attnref_tensor_init(&keep, mb, ATTNREF_BOOL, 4, ms, NULL);
    attnref_tensor_init(&fkeep, fb, ATTNREF_F32, 4, ms, NULL);
    attnref_tensor_init(&wrong, mb, ATTNREF_BOOL, 4, ms2, NULL);
    cr_assert_eq(attnref_cache_mask_shape(c, 0, shape, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_mask_shape(c, (int64_t)1 << 30, shape, &d), ATTNREF_ERANGE);
    cr_assert_eq(attnref_cache_make_mask(c, 1, -1, &keep, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_make_mask(c, 1, 0, &fkeep, &d), ATTNREF_EDTYPE);
    cr_assert_eq(attnref_cache_make_mask(c, 1, 0, &wrong, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_make_mask(c, 1, 0, NULL, &d), ATTNREF_EINVAL);
    /* kv read-back */
    cr_assert_eq(attnref_cache_kv(c, &fkeep, NULL, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_kv(c, &wrong, NULL, &d), ATTNREF_EDTYPE);
    /* batch operations on a non-batched cache */
    int64_t rows[] = {0};
    cr_assert_eq(attnref_cache_filter(c, rows, 1, &d), ATTNREF_EINVAL);
    cr_assert(strstr(d.msg, "standard") != NULL, "%s", d.msg);
    cr_assert_eq(attnref_cache_prepare(c, NULL, rows, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_finalize(c, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_extend(c, c, &d), ATTNREF_EINVAL);
    attnref_cache_destroy(c);
    attnref_cache_destroy(NULL);
}

Test(cache, chunked_mask_rejects_window)
{
    attnref_cache_params p = base(ATTNREF_CACHE_CHUNKED, 1);
    p.chunk_size = 2;
    attnref_cache *c = mk(p);
    uint8_t mb[4];
    attnref_tensor keep;
    int64_t ms[4] = {1, 1, 1, 1};
    attnref_tensor_init(&keep, mb, ATTNREF_BOOL, 4, ms, NULL);
    attnref_diag d;
    cr_assert_eq(attnref_cache_make_mask(c, 1, 2, &keep, &d), ATTNREF_EINVAL);
    cr_assert(strstr(d.msg, "window") != NULL, "%s", d.msg);
    attnref_cache_destroy(c);
}

Test(cache, batch_operations_reject_bad_arguments)
{
    attnref_cache_params p = base(ATTNREF_CACHE_BATCH, 2);
    attnref_cache *c = mk(p);
    attnref_diag d;
    int64_t bad_rows[] = {0, 2}, neg[] = {0, -1}, ok[] = {1, 1};
    cr_assert_eq(attnref_cache_filter(c, bad_rows, 2, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_filter(c, bad_rows, 0, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_prepare(c, NULL, NULL, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_prepare(c, neg, NULL, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_prepare(c, NULL, neg, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_prepare(c, ok, ok, &d), ATTNREF_OK);
    int64_t off[] = {-1, -1};
    expect_offsets(c, off);
    cr_assert_eq(attnref_cache_prepare(c, NULL, ok, &d), ATTNREF_EINVAL); /* already prepared */
    cr_assert_eq(attnref_cache_filter(c, ok, 1, &d), ATTNREF_EINVAL);     /* prepared */
    feed_ok(c, 2);
    cr_assert_eq(attnref_cache_prepare(c, ok, NULL, &d),
                 ATTNREF_EINVAL); /* left padding after tokens */
    cr_assert_eq(attnref_cache_finalize(c, &d), ATTNREF_OK);
    cr_assert_eq(attnref_cache_finalize(c, &d), ATTNREF_OK); /* not prepared: no-op */
    attnref_cache_params r = base(ATTNREF_CACHE_BATCH_ROTATING, 1);
    r.max_size = 4;
    attnref_cache *rc = mk(r);
    cr_assert_eq(attnref_cache_extend(c, rc, &d), ATTNREF_EINVAL);
    /* merge */
    attnref_cache_params q = base(ATTNREF_CACHE_ROTATING, 1);
    q.max_size = 4;
    q.keep = 1;
    attnref_cache *rk = mk(q);
    q.keep = 0;
    q.max_size = 5;
    attnref_cache *r5 = mk(q);
    attnref_cache *s = mk(base(ATTNREF_CACHE_STANDARD, 1));
    attnref_cache *m = NULL;
    const attnref_cache *in1[] = {rk};
    const attnref_cache *in2[] = {s, r5};
    const attnref_cache *in3[] = {c};
    const attnref_cache *in4[] = {s, NULL};
    cr_assert_eq(attnref_cache_merge(in1, 1, &m, &d), ATTNREF_EINVAL);
    cr_assert(strstr(d.msg, "keep") != NULL, "%s", d.msg);
    cr_assert_eq(attnref_cache_merge(in2, 2, &m, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_merge(in3, 1, &m, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_merge(in4, 2, &m, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_merge(in1, 0, &m, &d), ATTNREF_EINVAL);
    cr_assert_null(m);
    attnref_cache_destroy(c), attnref_cache_destroy(rc), attnref_cache_destroy(rk);
    attnref_cache_destroy(r5), attnref_cache_destroy(s);
}

Test(cache, attend_rejects_bad_arguments_and_keeps_the_cache)
{
    attnref_cache *c = mk(base(ATTNREF_CACHE_STANDARD, 1));
    feed_ok(c, 2);
    float b1[4] = {0};
    uint16_t h1[4] = {0};
    attnref_tensor q, qh, q3, k;
    int64_t s1[4] = {1, 1, 1, 1}, s3[4] = {1, 1, 1, 2};
    attnref_tensor_init(&q, b1, ATTNREF_F32, 4, s1, NULL);
    attnref_tensor_init(&k, b1, ATTNREF_F32, 4, s1, NULL);
    attnref_tensor_init(&qh, h1, ATTNREF_F16, 4, s1, NULL);
    attnref_tensor_init(&q3, b1, ATTNREF_F32, 4, s3, NULL);
    double out[4];
    attnref_diag d;
    attnref_sdpa_params sp = {0};
    sp.causal = 1;
    cr_assert_eq(attnref_cache_attend(c, &q, &k, &k, 0, &sp, out, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_attend(c, &qh, &k, &k, 0, NULL, out, &d), ATTNREF_EDTYPE);
    cr_assert_eq(attnref_cache_attend(c, &q, &k, &k, -1, NULL, out, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_attend(c, &q, &k, &k, 0, NULL, NULL, &d), ATTNREF_EINVAL);
    cr_assert_eq(attnref_cache_attend(c, &q, &k, &qh, 0, NULL, out, &d), ATTNREF_EDTYPE);
    int64_t want[] = {0, 1};
    expect_row(c, 0, want, 2);
    sp.causal = 0;
    sp.has_scale = 1;
    sp.scale = 0.5;
    cr_assert_eq(attnref_cache_attend(c, &q3, &k, &k, 0, &sp, out, &d),
                 ATTNREF_EINVAL); /* q's D is 2 */
    expect_row(c, 0, want, 2);
    cr_assert_eq(attnref_cache_attend(c, &q, &k, &k, 0, &sp, out, &d), ATTNREF_OK); /* scale 0.5 */
    cr_assert(fabs(out[0] - 667.0) < 1e-9,
              "q = 0: the mean of the values 1000, 1001 and 0, got %.17g", out[0]);
    attnref_cache_destroy(c);
}
