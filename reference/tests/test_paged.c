/* Unit tests for the reference's paged KV caches (attnref/paged.h, SPEC clause 23): a
 * hand-computed case (SPEC's example), equality with contiguous attnref_sdpa over shuffled,
 * fragmented pools with every term, every rejection (and nothing written on one), the append's
 * exact slot placement across page boundaries, and shared prefix pages left untouched. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"
#include "attnref/paged.h"
#include "attnref/sdpa.h"
#include "attnref/status.h"
#include "attnref/tensor.h"
#include "tensor_test_util.h"

/* A small deterministic generator (xorshift), values in [-1, 1). */
static uint64_t rng_state = 88172645463325252ull;
static double urand(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / (double)(1ull << 52) - 1.0;
}

/* SPEC clause 23's example: P = 3, 5 pages, tables [4, 1, -1] and [4, 0, 2] (page 4 shared),
 * L = (5, 7), D = Dv = 1, keys 0, values 1, 2, 3 ... by position, NaN everywhere else. */
#define EX_PAGES 5
#define EX_P 3
static float ex_k[EX_PAGES * EX_P], ex_v[EX_PAGES * EX_P];
static const int32_t ex_table[6] = {4, 1, -1, 4, 0, 2};
static const int64_t ex_lens[2] = {5, 7};

static void example_pool(void)
{
    for (int i = 0; i < EX_PAGES * EX_P; i++)
        ex_k[i] = ex_v[i] = NAN;
    for (int b = 0; b < 2; b++)
        for (int64_t p = 0; p < ex_lens[b]; p++) {
            const int pg = ex_table[b * 3 + p / EX_P];
            ex_k[pg * EX_P + p % EX_P] = 0.0f;
            ex_v[pg * EX_P + p % EX_P] = (float)(p + 1);
        }
}

Test(paged, spec_example_decode)
{
    example_pool();
    float q[2] = {0.5f, -2.0f}, out[2] = {-1.0f, -1.0f};
    attnref_tensor tq = mk4(q, ATTNREF_F32, 2, 1, 1, 1);
    attnref_tensor tk = mk4(ex_k, ATTNREF_F32, EX_PAGES, 1, EX_P, 1);
    attnref_tensor tv = mk4(ex_v, ATTNREF_F32, EX_PAGES, 1, EX_P, 1);
    attnref_tensor to = mk4(out, ATTNREF_F32, 2, 1, 1, 1);
    attnref_paged_args a = {.q = &tq,
                            .k_pages = &tk,
                            .v_pages = &tv,
                            .block_table = ex_table,
                            .table_width = 3,
                            .seq_lens = ex_lens,
                            .params = {.causal = 1}};
    attnref_diag dg;
    cr_assert_eq(attnref_paged_sdpa(&a, &to, &dg), ATTNREF_OK, "%s", dg.msg);
    /* Equal scores: the mean of the values, (1+...+5)/5 and (1+...+7)/7, NaN never read. */
    cr_assert_eq(out[0], 3.0f);
    cr_assert_eq(out[1], 4.0f);
}

Test(paged, hand_computed_weights)
{
    /* One row, P = 2, its 3 keys in pages 2 and 0 (shuffled), slot 1 of page 0 stale NaN.
     * D = 1, q = 1, scale 1: keys 0, 1, -1 give weights 1, e, 1/e over values 1, 2, 4. */
    float k[3 * 2] = {-1.0f, NAN, 7.0f, 7.0f, 0.0f, 1.0f};
    float v[3 * 2] = {4.0f, NAN, INFINITY, -INFINITY, 1.0f, 2.0f};
    const int32_t table[2] = {2, 0};
    const int64_t len[1] = {3};
    float q[1] = {1.0f}, out[1];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 1, 1, 1, 1), tk = mk4(k, ATTNREF_F32, 3, 1, 2, 1);
    attnref_tensor tv = mk4(v, ATTNREF_F32, 3, 1, 2, 1), to = mk4(out, ATTNREF_F32, 1, 1, 1, 1);
    attnref_paged_args a = {.q = &tq,
                            .k_pages = &tk,
                            .v_pages = &tv,
                            .block_table = table,
                            .table_width = 2,
                            .seq_lens = len,
                            .params = {.has_scale = 1, .scale = 1.0}};
    cr_assert_eq(attnref_paged_sdpa(&a, &to, NULL), ATTNREF_OK);
    const double e = exp(1.0), want = (1.0 + 2.0 * e + 4.0 / e) / (1.0 + e + 1.0 / e);
    cr_assert_eq(out[0], (float)want, "got %.9g want %.9g", out[0], want);
    double o64[1];
    cr_assert_eq(attnref_paged_sdpa_f64(&a, o64, NULL), ATTNREF_OK);
    cr_assert(fabs(o64[0] - want) < 1e-15);
}

/* The contiguous comparison: B rows of lengths len[b] in a contiguous (B, Hkv, Lmax, D)
 * buffer, scattered into a pool of shuffled pages (never the identity), every other slot
 * poisoned; paged attention must equal attnref_sdpa over row b's contiguous keys, bit for bit,
 * and output rows past query_lens[b] are 0. */
typedef struct {
    attnref_dtype dt;
    int64_t b, hq, hkv, lq, d, dv, psz, width;
    int64_t len[4], ql[4];
    attnref_sdpa_params p;
    double sinks[8];
    int nhd; /* pool stored token-major (num_pages, P, Hkv, D) and viewed permuted */
} cmp_case;

static int64_t gcd(int64_t x, int64_t y)
{
    while (y) {
        const int64_t r = x % y;
        x = y, y = r;
    }
    return x;
}

static void run_cmp(const cmp_case *c)
{
    const size_t es = attnref_dtype_size(c->dt);
    int64_t lmax = 0, used = 0;
    for (int64_t b = 0; b < c->b; b++) {
        if (c->len[b] > lmax)
            lmax = c->len[b];
        used += (c->len[b] + c->psz - 1) / c->psz;
    }
    const int64_t num_pages = used + 3; /* three pages nobody lists */
    unsigned char *q = malloc((size_t)(c->b * c->hq * c->lq * c->d) * es);
    unsigned char *kc = malloc((size_t)(c->b * c->hkv * lmax * c->d) * es + 1);
    unsigned char *vc = malloc((size_t)(c->b * c->hkv * lmax * c->dv) * es + 1);
    unsigned char *kp = malloc((size_t)(num_pages * c->hkv * c->psz * c->d) * es);
    unsigned char *vp = malloc((size_t)(num_pages * c->hkv * c->psz * c->dv) * es);
    for (int64_t i = 0; i < c->b * c->hq * c->lq * c->d; i++)
        attnref_store(q, c->dt, i, urand());
    for (int64_t i = 0; i < c->b * c->hkv * lmax * c->d; i++)
        attnref_store(kc, c->dt, i, urand());
    for (int64_t i = 0; i < c->b * c->hkv * lmax * c->dv; i++)
        attnref_store(vc, c->dt, i, urand());
    /* Poison: NaN, inf and a large finite stale value, in turn. */
    const double poison[3] = {NAN, INFINITY, 3.0e4};
    for (int64_t i = 0; i < num_pages * c->hkv * c->psz * c->d; i++)
        attnref_store(kp, c->dt, i, poison[i % 3]);
    for (int64_t i = 0; i < num_pages * c->hkv * c->psz * c->dv; i++)
        attnref_store(vp, c->dt, i, poison[(i + 1) % 3]);
    /* A shuffled page order: page n of the allocation is physical page perm(n), never n. */
    int32_t *table = malloc((size_t)(c->b * c->width) * sizeof *table);
    int64_t next = 0, step = 5;
    while (gcd(step, num_pages) != 1) /* a stride coprime with the pool: a permutation */
        step++;
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t e = 0; e < c->width; e++) {
            const int64_t need = (c->len[b] + c->psz - 1) / c->psz;
            table[b * c->width + e] =
                e < need ? (int32_t)((next++ * step + 2) % num_pages) : (e % 2 ? -1 : 9999);
        }
    attnref_tensor tk, tv;
    if (c->nhd) {
        /* (num_pages, P, Hkv, D) storage viewed as (num_pages, Hkv, P, D). */
        tk = mk4(kp, c->dt, num_pages, c->psz, c->hkv, c->d);
        tv = mk4(vp, c->dt, num_pages, c->psz, c->hkv, c->dv);
        for (attnref_tensor *t = &tk; t; t = t == &tk ? &tv : NULL) {
            int64_t s = t->shape[1], st = t->strides[1];
            t->shape[1] = t->shape[2];
            t->strides[1] = t->strides[2];
            t->shape[2] = s;
            t->strides[2] = st;
        }
    } else {
        tk = mk4(kp, c->dt, num_pages, c->hkv, c->psz, c->d);
        tv = mk4(vp, c->dt, num_pages, c->hkv, c->psz, c->dv);
    }
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t h = 0; h < c->hkv; h++)
            for (int64_t p = 0; p < c->len[b]; p++) {
                const int64_t pg = table[b * c->width + p / c->psz], sl = p % c->psz;
                for (int64_t e = 0; e < c->d; e++)
                    memcpy(kp + (size_t)(pg * tk.strides[0] + h * tk.strides[1] +
                                         sl * tk.strides[2] + e * tk.strides[3]) *
                                    es,
                           kc + (size_t)(((b * c->hkv + h) * lmax + p) * c->d + e) * es, es);
                for (int64_t e = 0; e < c->dv; e++)
                    memcpy(vp + (size_t)(pg * tv.strides[0] + h * tv.strides[1] +
                                         sl * tv.strides[2] + e * tv.strides[3]) *
                                    es,
                           vc + (size_t)(((b * c->hkv + h) * lmax + p) * c->dv + e) * es, es);
            }
    const size_t on = (size_t)(c->b * c->hq * c->lq * c->dv);
    unsigned char *out = malloc(on * es), *ref = malloc(on * es + 1);
    attnref_tensor tq = mk4(q, c->dt, c->b, c->hq, c->lq, c->d);
    attnref_tensor to = mk4(out, c->dt, c->b, c->hq, c->lq, c->dv);
    attnref_paged_args a = {.q = &tq,
                            .k_pages = &tk,
                            .v_pages = &tv,
                            .block_table = table,
                            .table_width = c->width,
                            .seq_lens = c->len,
                            .query_lens = c->ql,
                            .params = c->p};
    attnref_diag dg;
    cr_assert_eq(attnref_paged_sdpa(&a, &to, &dg), ATTNREF_OK, "%s", dg.msg);
    for (int64_t b = 0; b < c->b; b++) {
        attnref_tensor qb = tq, kb = mk4(kc, c->dt, 1, c->hkv, c->len[b], c->d);
        attnref_tensor vb = mk4(vc, c->dt, 1, c->hkv, c->len[b], c->dv);
        /* Row b of the contiguous buffer, keys 0..len-1 of a Lmax-long axis. */
        kb.data = kc + (size_t)(b * c->hkv * lmax * c->d) * es;
        kb.strides[1] = lmax * c->d;
        vb.data = vc + (size_t)(b * c->hkv * lmax * c->dv) * es;
        vb.strides[1] = lmax * c->dv;
        qb.data = q + (size_t)(b * tq.strides[0]) * es;
        qb.shape[0] = 1;
        qb.shape[2] = c->ql[b];
        attnref_tensor ob = mk4(ref, c->dt, 1, c->hq, c->ql[b], c->dv);
        cr_assert_eq(attnref_sdpa(&qb, &kb, &vb, NULL, &c->p, &ob, &dg), ATTNREF_OK, "%s", dg.msg);
        for (int64_t h = 0; h < c->hq; h++)
            for (int64_t i = 0; i < c->lq; i++)
                for (int64_t e = 0; e < c->dv; e++) {
                    const double got =
                        attnref_load(out, c->dt, ((b * c->hq + h) * c->lq + i) * c->dv + e);
                    const double want =
                        i < c->ql[b] ? attnref_load(ref, c->dt, (h * c->ql[b] + i) * c->dv + e)
                                     : 0.0;
                    cr_assert(got == want && !signbit(got) == !signbit(want),
                              "row %ld head %ld query %ld e %ld: got %.9g want %.9g", (long)b,
                              (long)h, (long)i, (long)e, got, want);
                }
    }
    free(q), free(kc), free(vc), free(kp), free(vp), free(table), free(out), free(ref);
}

Test(paged, equals_contiguous_decode_gqa_f32)
{
    cmp_case c = {.dt = ATTNREF_F32,
                  .b = 3,
                  .hq = 8,
                  .hkv = 2,
                  .lq = 1,
                  .d = 16,
                  .dv = 16,
                  .psz = 3,
                  .width = 6,
                  .len = {7, 1, 12},
                  .ql = {1, 1, 1},
                  .p = {.causal = 1}};
    run_cmp(&c);
}

Test(paged, equals_contiguous_prefill_mixed_f16_nhd)
{
    /* Mixed decode and chunked-prefill rows, an L = 0 row (its output 0), Dv != D, GQA 3:1,
     * a token-major pool. */
    cmp_case c = {.dt = ATTNREF_F16,
                  .b = 4,
                  .hq = 6,
                  .hkv = 2,
                  .lq = 5,
                  .d = 8,
                  .dv = 4,
                  .psz = 4,
                  .width = 4,
                  .len = {9, 0, 4, 16},
                  .ql = {5, 0, 1, 3},
                  .p = {.causal = 1},
                  .nhd = 1};
    run_cmp(&c);
}

Test(paged, equals_contiguous_terms_bf16)
{
    /* Window, softcap, ALiBi, sinks and chunk together, page size 1. */
    cmp_case c = {.dt = ATTNREF_BF16,
                  .b = 2,
                  .hq = 4,
                  .hkv = 4,
                  .lq = 4,
                  .d = 8,
                  .dv = 8,
                  .psz = 1,
                  .width = 12,
                  .len = {10, 6},
                  .ql = {4, 2}};
    c.sinks[0] = 0.5, c.sinks[1] = -1.0, c.sinks[2] = 2.0, c.sinks[3] = 0.0;
    c.p = (attnref_sdpa_params){.causal = 1,
                                .window = 5,
                                .softcap = 2.0,
                                .alibi_max_bias = 8.0,
                                .sinks = c.sinks,
                                .chunk = 4};
    run_cmp(&c);
}

Test(paged, equals_contiguous_non_causal)
{
    cmp_case c = {.dt = ATTNREF_F32,
                  .b = 2,
                  .hq = 2,
                  .hkv = 1,
                  .lq = 3,
                  .d = 4,
                  .dv = 4,
                  .psz = 16,
                  .width = 2,
                  .len = {16, 17},
                  .ql = {3, 2},
                  .p = {.has_scale = 1, .scale = 0.25, .alibi_max_bias = 4.0}};
    run_cmp(&c);
}

/* ---- rejections: each with nothing written ---- */

typedef struct {
    float k[EX_PAGES * EX_P], v[EX_PAGES * EX_P], q[2 * 2], out[2 * 2];
    attnref_tensor tq, tk, tv, to;
    int32_t table[6];
    int64_t lens[2], ql[2];
    attnref_paged_args a;
} reject_fx;

static void reject_setup(reject_fx *f)
{
    example_pool();
    memcpy(f->k, ex_k, sizeof f->k);
    memcpy(f->v, ex_v, sizeof f->v);
    memcpy(f->table, ex_table, sizeof f->table);
    f->lens[0] = 5, f->lens[1] = 7, f->ql[0] = 2, f->ql[1] = 1;
    for (int i = 0; i < 4; i++)
        f->q[i] = 1.0f, f->out[i] = -7.0f;
    f->tq = mk4(f->q, ATTNREF_F32, 2, 1, 2, 1);
    f->tk = mk4(f->k, ATTNREF_F32, EX_PAGES, 1, EX_P, 1);
    f->tv = mk4(f->v, ATTNREF_F32, EX_PAGES, 1, EX_P, 1);
    f->to = mk4(f->out, ATTNREF_F32, 2, 1, 2, 1);
    f->a = (attnref_paged_args){.q = &f->tq,
                                .k_pages = &f->tk,
                                .v_pages = &f->tv,
                                .block_table = f->table,
                                .table_width = 3,
                                .seq_lens = f->lens,
                                .query_lens = f->ql,
                                .params = {.causal = 1}};
}

static void expect_reject(reject_fx *f, int code, const char *what)
{
    attnref_diag dg;
    cr_assert_eq(attnref_paged_sdpa(&f->a, &f->to, &dg), code, "%s: %s", what, dg.msg);
    cr_assert_neq(dg.msg[0], '\0', "%s: no message", what);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(f->out[i], -7.0f, "%s: out written", what);
}

Test(paged, valid_fixture_passes)
{
    reject_fx f;
    reject_setup(&f);
    cr_assert_eq(attnref_paged_sdpa(&f.a, &f.to, NULL), ATTNREF_OK);
    /* Row 1 has one query: its second output row is padding, exactly +0. */
    cr_assert_eq(f.out[3], 0.0f);
    cr_assert(!signbit(f.out[3]));
}

Test(paged, rejects)
{
    reject_fx f;
    reject_setup(&f);
    f.table[1] = 5; /* a used entry past the pool */
    expect_reject(&f, ATTNREF_EINVAL, "page past the pool");
    reject_setup(&f);
    f.table[4] = -1; /* a used entry of row 1 */
    expect_reject(&f, ATTNREF_EINVAL, "page -1 in use");
    reject_setup(&f);
    f.lens[0] = 10; /* 4 pages of 3, the row has 3 entries */
    expect_reject(&f, ATTNREF_EINVAL, "length beyond the table");
    reject_setup(&f);
    f.a.table_width = 2; /* row too short for row 1's 7 keys (and rows shift) */
    expect_reject(&f, ATTNREF_EINVAL, "table row too short");
    reject_setup(&f);
    f.lens[1] = -1;
    expect_reject(&f, ATTNREF_EINVAL, "negative length");
    reject_setup(&f);
    f.ql[0] = 3; /* > Lq = 2 */
    expect_reject(&f, ATTNREF_EINVAL, "query_lens > Lq");
    reject_setup(&f);
    f.lens[1] = 0; /* q_b = 1 > L_b = 0 */
    expect_reject(&f, ATTNREF_EINVAL, "query_lens > seq_lens");
    reject_setup(&f);
    f.ql[1] = -1;
    expect_reject(&f, ATTNREF_EINVAL, "negative query length");
    reject_setup(&f);
    f.a.table_width = 0;
    expect_reject(&f, ATTNREF_EINVAL, "table width 0");
    reject_setup(&f);
    f.a.params.causal = 0;
    f.a.params.window = 2;
    expect_reject(&f, ATTNREF_EINVAL, "window without causal");
    reject_setup(&f);
    f.a.params.chunk = -1;
    expect_reject(&f, ATTNREF_EINVAL, "chunk < 0");
    reject_setup(&f);
    f.a.params.softcap = NAN;
    expect_reject(&f, ATTNREF_EINVAL, "softcap NaN");
    reject_setup(&f);
    f.a.params.has_causal_offset = 1;
    expect_reject(&f, ATTNREF_EINVAL, "a causal offset");
    reject_setup(&f);
    f.tv.shape[0] = 4;
    expect_reject(&f, ATTNREF_EINVAL, "pools of different page counts");
    reject_setup(&f);
    f.tq = mk4(f.q, ATTNREF_F32, 2, 1, 1, 2), f.to = mk4(f.out, ATTNREF_F32, 2, 1, 1, 1);
    f.ql[0] = 1;
    expect_reject(&f, ATTNREF_EINVAL, "D mismatch");
    reject_setup(&f);
    f.tq.shape[1] = 3, f.tk.shape[1] = f.tv.shape[1] = 2, f.tk.shape[0] = f.tv.shape[0] = 2;
    f.to.shape[1] = 3;
    expect_reject(&f, ATTNREF_EINVAL, "Hq % Hkv");
    reject_setup(&f);
    f.to.shape[3] = 2;
    expect_reject(&f, ATTNREF_EINVAL, "out shape");
    reject_setup(&f);
    uint16_t kh[EX_PAGES * EX_P] = {0};
    f.tk.data = kh, f.tk.dtype = ATTNREF_F16;
    expect_reject(&f, ATTNREF_EDTYPE, "k_pages f16 with f32 q");
    reject_setup(&f);
    f.to.dtype = ATTNREF_F16;
    expect_reject(&f, ATTNREF_EDTYPE, "out dtype");
}

Test(paged, unused_entries_never_checked)
{
    reject_fx f;
    reject_setup(&f);
    f.table[2] = -1; /* row 0 needs 2 entries: the third is unused */
    cr_assert_eq(attnref_paged_sdpa(&f.a, &f.to, NULL), ATTNREF_OK);
    f.table[2] = INT32_MAX;
    cr_assert_eq(attnref_paged_sdpa(&f.a, &f.to, NULL), ATTNREF_OK);
    /* L_b = 0 with q_b = 0 uses no entry at all. */
    f.lens[1] = 0, f.ql[1] = 0, f.table[3] = f.table[4] = f.table[5] = -1;
    f.out[2] = f.out[3] = 5.0f;
    cr_assert_eq(attnref_paged_sdpa(&f.a, &f.to, NULL), ATTNREF_OK);
    cr_assert_eq(f.out[2], 0.0f);
    cr_assert_eq(f.out[3], 0.0f);
}

/* ---- appends ---- */

#define AP_PAGES 6
#define AP_P 3
typedef struct {
    uint16_t kp[AP_PAGES * AP_P * 2], vp[AP_PAGES * AP_P], k0[AP_PAGES * AP_P * 2],
        v0[AP_PAGES * AP_P];
    uint16_t k[2 * 6 * 2], v[2 * 6];
    attnref_tensor tkp, tvp, tk, tv;
    int32_t table[2 * 4];
    int64_t lens[2], nl[2];
    attnref_paged_append_args a;
} append_fx;

/* f16 pool, Hkv = 1, D = 2, Dv = 1, P = 3; every pool element a distinct stale pattern.  Row 0
 * [5, 1, 3, -1], row 1 [5, 2, 0, 4]: page 5 is a shared full prefix page. */
static void append_setup(append_fx *f, int64_t s)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < AP_PAGES * AP_P * 2; i++)
        f->kp[i] = (uint16_t)(0x7c01 + i); /* NaN payloads */
    for (int i = 0; i < AP_PAGES * AP_P; i++)
        f->vp[i] = (uint16_t)(0x5000 + i); /* finite stale values */
    memcpy(f->k0, f->kp, sizeof f->kp);
    memcpy(f->v0, f->vp, sizeof f->vp);
    for (int i = 0; i < 2 * 6 * 2; i++)
        f->k[i] = (uint16_t)(0x3c00 + i);
    for (int i = 0; i < 2 * 6; i++)
        f->v[i] = (uint16_t)(0x4400 + i);
    const int32_t t[8] = {5, 1, 3, -1, 5, 2, 0, 4};
    memcpy(f->table, t, sizeof t);
    f->tkp = mk4(f->kp, ATTNREF_F16, AP_PAGES, 1, AP_P, 2);
    f->tvp = mk4(f->vp, ATTNREF_F16, AP_PAGES, 1, AP_P, 1);
    f->tk = mk4(f->k, ATTNREF_F16, 2, 1, s, 2);
    f->tv = mk4(f->v, ATTNREF_F16, 2, 1, s, 1);
    f->a = (attnref_paged_append_args){.k = &f->tk,
                                       .v = &f->tv,
                                       .k_pages = &f->tkp,
                                       .v_pages = &f->tvp,
                                       .block_table = f->table,
                                       .table_width = 4,
                                       .seq_lens = f->lens,
                                       .new_lens = f->nl};
}

/* Expected pool after the append, computed independently: token t of row b at position
 * lens[b] + t, page table[b][pos / 3], slot pos % 3. */
static void check_pool(const append_fx *f, int64_t s)
{
    uint16_t ke[AP_PAGES * AP_P * 2], ve[AP_PAGES * AP_P];
    memcpy(ke, f->k0, sizeof ke);
    memcpy(ve, f->v0, sizeof ve);
    for (int b = 0; b < 2; b++)
        for (int64_t t = 0; t < f->nl[b]; t++) {
            const int64_t pos = f->lens[b] + t, pg = f->table[b * 4 + pos / AP_P];
            const int64_t sl = pos % AP_P;
            ke[(pg * AP_P + sl) * 2] = f->k[(b * s + t) * 2];
            ke[(pg * AP_P + sl) * 2 + 1] = f->k[(b * s + t) * 2 + 1];
            ve[pg * AP_P + sl] = f->v[b * s + t];
        }
    for (int i = 0; i < AP_PAGES * AP_P * 2; i++)
        cr_assert_eq(f->kp[i], ke[i], "k pool element %d (page %d slot %d): %04x, expected %04x", i,
                     i / (AP_P * 2), i / 2 % AP_P, f->kp[i], ke[i]);
    for (int i = 0; i < AP_PAGES * AP_P; i++)
        cr_assert_eq(f->vp[i], ve[i], "v pool element %d: %04x, expected %04x", i, f->vp[i], ve[i]);
}

Test(paged, append_crosses_page_boundaries)
{
    append_fx f;
    append_setup(&f, 5);
    /* Row 0 from position 4 (page 1 slot 1): 5 tokens -> page 1 slots 1, 2, page 3 slots 0-2.
     * Row 1 from position 3 (page 2 slot 0, a fresh page after the full shared one): 2. */
    f.lens[0] = 4, f.lens[1] = 3, f.nl[0] = 5, f.nl[1] = 2;
    cr_assert_eq(attnref_paged_append(&f.a, NULL), ATTNREF_OK);
    check_pool(&f, 5);
    /* The placement spelled out: row 0 token 2 (position 6) is page 3 slot 0. */
    cr_assert_eq(f.kp[(3 * AP_P + 0) * 2], f.k[2 * 2]);
    cr_assert_eq(f.vp[3 * AP_P + 2], f.v[4]);
    cr_assert_eq(f.vp[2 * AP_P + 1], f.v[5 + 1]);
    cr_assert_eq(f.vp[1 * AP_P + 0], f.v0[1 * AP_P + 0], "slot before the append changed");
    /* The shared page 5 is untouched. */
    cr_assert_eq(memcmp(f.vp + 5 * AP_P, f.v0 + 5 * AP_P, AP_P * sizeof f.vp[0]), 0);
    int64_t page, slot;
    attnref_paged_locate(f.table, 4, AP_P, 1, 6, &page, &slot);
    cr_assert(page == 0 && slot == 0);
}

Test(paged, append_fills_page_exactly_then_next)
{
    append_fx f;
    append_setup(&f, 2);
    /* Row 0 at 4 keys: 2 tokens fill page 1 (last_page_len 3 = P); row 1 pads (n = 0). */
    f.lens[0] = 4, f.lens[1] = 3, f.nl[0] = 2, f.nl[1] = 0;
    cr_assert_eq(attnref_paged_append(&f.a, NULL), ATTNREF_OK);
    check_pool(&f, 2);
    cr_assert_eq(f.vp[1 * AP_P + 2], f.v[1]);
    memcpy(f.k0, f.kp, sizeof f.kp);
    memcpy(f.v0, f.vp, sizeof f.vp);
    /* The next token starts page 3 at slot 0. */
    f.lens[0] = 6, f.nl[0] = 1;
    cr_assert_eq(attnref_paged_append(&f.a, NULL), ATTNREF_OK);
    check_pool(&f, 2);
    cr_assert_eq(f.vp[3 * AP_P + 0], f.v[0]);
}

Test(paged, append_rejects_and_writes_nothing)
{
    append_fx f;
    struct {
        int64_t l0, n0, width;
        int32_t e, val;
        int code;
        const char *what;
    } bad[] = {
        {4, 6, 4, -1, 0, ATTNREF_EINVAL, "new_lens > S"},
        {4, -1, 4, -1, 0, ATTNREF_EINVAL, "negative new_lens"},
        {-1, 1, 4, -1, 0, ATTNREF_EINVAL, "negative seq_lens"},
        {8, 5, 4, -1, 0, ATTNREF_EINVAL, "length after the append beyond the table"},
        {6, 1, 4, 2, 6, ATTNREF_EINVAL, "entry in use past the pool"},
        {8, 2, 4, 3, -1, ATTNREF_EINVAL, "entry 3 (-1) reached by the append"},
        {4, 1, 0, -1, 0, ATTNREF_EINVAL, "table width 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        append_setup(&f, 5);
        f.lens[0] = bad[i].l0, f.nl[0] = bad[i].n0, f.lens[1] = 3, f.nl[1] = 1;
        f.a.table_width = bad[i].width;
        if (bad[i].e >= 0)
            f.table[bad[i].e] = bad[i].val;
        attnref_diag dg;
        cr_assert_eq(attnref_paged_append(&f.a, &dg), bad[i].code, "%s: %s", bad[i].what, dg.msg);
        cr_assert_neq(dg.msg[0], '\0');
        cr_assert_eq(memcmp(f.kp, f.k0, sizeof f.kp), 0, "%s: k pool written", bad[i].what);
        cr_assert_eq(memcmp(f.vp, f.v0, sizeof f.vp), 0, "%s: v pool written", bad[i].what);
    }
    /* Older entries are not the append's business: -1 at entry 0 of row 0 with the append
     * writing entry 1 only is valid. */
    append_setup(&f, 1);
    f.table[0] = -1, f.lens[0] = 4, f.nl[0] = 1, f.lens[1] = 3, f.nl[1] = 0;
    cr_assert_eq(attnref_paged_append(&f.a, NULL), ATTNREF_OK);
    /* A dtype mismatch: f32 pool with f16 tokens. */
    append_setup(&f, 1);
    float kf[AP_PAGES * AP_P * 2];
    f.tkp.data = kf, f.tkp.dtype = ATTNREF_F32;
    f.lens[0] = 1, f.nl[0] = 1, f.lens[1] = 3, f.nl[1] = 1;
    cr_assert_eq(attnref_paged_append(&f.a, NULL), ATTNREF_EDTYPE);
    cr_assert_eq(memcmp(f.vp, f.v0, sizeof f.vp), 0);
    /* Shapes that disagree: Dv of v against the pool's. */
    append_setup(&f, 1);
    f.tv.shape[3] = 2;
    f.lens[0] = 1, f.nl[0] = 1, f.lens[1] = 3, f.nl[1] = 1;
    cr_assert_eq(attnref_paged_append(&f.a, NULL), ATTNREF_EINVAL);
}

Test(paged, append_then_attend_equals_contiguous)
{
    /* Decode loop: the SPEC example's row 0 gets one token at a time through the page boundary
     * and each attention equals the mean over the values so far (keys 0). */
    example_pool();
    int32_t table[6] = {4, 1, 3, 4, 0, 2};
    int64_t lens[2] = {5, 7}, nl[2] = {1, 0};
    float q[2] = {1.0f, 1.0f}, out[2], kn[2] = {0.0f, 0.0f}, vn[2];
    attnref_tensor tq = mk4(q, ATTNREF_F32, 2, 1, 1, 1);
    attnref_tensor tk = mk4(ex_k, ATTNREF_F32, EX_PAGES, 1, EX_P, 1);
    attnref_tensor tv = mk4(ex_v, ATTNREF_F32, EX_PAGES, 1, EX_P, 1);
    attnref_tensor to = mk4(out, ATTNREF_F32, 2, 1, 1, 1);
    attnref_tensor tkn = mk4(kn, ATTNREF_F32, 2, 1, 1, 1), tvn = mk4(vn, ATTNREF_F32, 2, 1, 1, 1);
    for (int step = 0; step < 4; step++) {
        vn[0] = (float)(lens[0] + 1), vn[1] = 99.0f;
        attnref_paged_append_args ap = {.k = &tkn,
                                        .v = &tvn,
                                        .k_pages = &tk,
                                        .v_pages = &tv,
                                        .block_table = table,
                                        .table_width = 3,
                                        .seq_lens = lens,
                                        .new_lens = nl};
        cr_assert_eq(attnref_paged_append(&ap, NULL), ATTNREF_OK);
        lens[0]++;
        attnref_paged_args a = {.q = &tq,
                                .k_pages = &tk,
                                .v_pages = &tv,
                                .block_table = table,
                                .table_width = 3,
                                .seq_lens = lens};
        cr_assert_eq(attnref_paged_sdpa(&a, &to, NULL), ATTNREF_OK);
        cr_assert_eq(out[0], (float)(lens[0] + 1) / 2.0f, "step %d", step);
        cr_assert_eq(out[1], 4.0f, "row 1 changed at step %d", step);
    }
    /* 9 keys = the table's capacity: one more is beyond the table. */
    attnref_paged_append_args ap = {.k = &tkn,
                                    .v = &tvn,
                                    .k_pages = &tk,
                                    .v_pages = &tv,
                                    .block_table = table,
                                    .table_width = 3,
                                    .seq_lens = lens,
                                    .new_lens = nl};
    cr_assert_eq(attnref_paged_append(&ap, NULL), ATTNREF_EINVAL);
}

/* Two new tokens of one append that land in the same (page, slot) are EINVAL with nothing
 * written: the result would depend on the order of the writes (clause 23). */
Test(paged, append_rejects_two_tokens_in_one_slot)
{
    append_fx f;
    /* Rows 0 and 1 both at position 4 through entry 1 = page 1: page 1 slot 1 twice. */
    append_setup(&f, 1);
    f.table[4 + 1] = 1;
    f.lens[0] = 4, f.nl[0] = 1, f.lens[1] = 4, f.nl[1] = 1;
    attnref_diag dg;
    cr_assert_eq(attnref_paged_append(&f.a, &dg), ATTNREF_EINVAL);
    cr_assert(strstr(dg.msg, "page 1 slot 1") != NULL, "%s", dg.msg);
    cr_assert_eq(memcmp(f.kp, f.k0, sizeof f.kp), 0, "k pool written");
    cr_assert_eq(memcmp(f.vp, f.v0, sizeof f.vp), 0, "v pool written");
    /* One row whose table lists page 1 twice: positions 4 and 7 both at page 1 slot 1. */
    append_setup(&f, 5);
    f.table[2] = 1;
    f.lens[0] = 4, f.nl[0] = 4, f.lens[1] = 3, f.nl[1] = 0;
    cr_assert_eq(attnref_paged_append(&f.a, &dg), ATTNREF_EINVAL);
    cr_assert(strstr(dg.msg, "row 0") != NULL, "%s", dg.msg);
    cr_assert_eq(memcmp(f.vp, f.v0, sizeof f.vp), 0, "v pool written");
    /* The same table with 3 tokens (positions 4..6: page 1 slots 1, 2, 0) is valid. */
    append_setup(&f, 5);
    f.table[2] = 1;
    f.lens[0] = 4, f.nl[0] = 3, f.lens[1] = 3, f.nl[1] = 0;
    cr_assert_eq(attnref_paged_append(&f.a, NULL), ATTNREF_OK);
    check_pool(&f, 5);
}
