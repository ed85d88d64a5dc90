/* End-to-end tests of the cpu plugin's SDPA (Criterion): cpu_sdpa_run against attnref_sdpa_f64
 * on the terms of current models (softcap, ALiBi, sinks, chunk, documents, blocks: SPEC.md
 * clauses 20-22), on shapes either side of the kernels' thresholds (the unpacked decode path
 * at <= 8 rows per item, 64-key tiles, 256-row query blocks, flash-decoding splits on 3
 * threads), f32 / f16 / bf16, both kernel tables; and the rows whose f32 scores overflow
 * (issue 20), which must equal the reference.  The bound is a first-order one in the style of
 * SPEC clause 13 (f32 arithmetic on exactly read inputs), computed per row from the inputs; the
 * golden cases carry casegen's own. */
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"
#include "attnref/sdpa.h"
#include "cpu_kern.h"
#include "cpu_sdpa.h"
#include "test_cpu_tables.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rnd_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double rnd_d(double lo, double hi)
{
    return lo + (hi - lo) * ((double)(rnd_u64() >> 11) / 9007199254740992.0);
}
static int64_t rnd_int(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd_u64() % (uint64_t)(hi - lo + 1));
}

/* One call: shapes, dtype, the parameters (their arrays owned by the case), input ranges. */
typedef struct tcase {
    const char *name;
    int dt;
    int64_t B, Hq, Hkv, Lq, Lk, D, Dv;
    double qmax, kmax, vmax; /* inputs uniform in [-max, max] (rounded to the dtype) */
    int mask;                /* 0 none, 1 boolean (random, 1 in 5 false), 2 additive */
    attnref_sdpa_params p;
} tcase;

typedef struct tdata {
    attnref_tensor q, k, v, m, out;
    double *want;
} tdata;

static void fill(attnref_tensor *t, int dt, int64_t a, int64_t b, int64_t c, int64_t d, double mx)
{
    const int64_t shape[4] = {a, b, c, d};
    const int64_t n = a * b * c * d;
    void *data = calloc((size_t)(n > 0 ? n : 1), 4);
    cr_assert(data);
    attnref_diag diag = {{0}};
    cr_assert_eq(attnref_tensor_init(t, data, (attnref_dtype)dt, 4, shape, &diag), ATTNREF_OK);
    for (int64_t x = 0; x < n; x++)
        attnref_store(data, (attnref_dtype)dt, x, rnd_d(-mx, mx));
}

static void make(const tcase *tc, tdata *d)
{
    fill(&d->q, tc->dt, tc->B, tc->Hq, tc->Lq, tc->D, tc->qmax);
    fill(&d->k, tc->dt, tc->B, tc->Hkv, tc->Lk, tc->D, tc->kmax);
    fill(&d->v, tc->dt, tc->B, tc->Hkv, tc->Lk, tc->Dv, tc->vmax);
    fill(&d->out, tc->dt, tc->B, tc->Hq, tc->Lq, tc->Dv, 0.0);
    memset(&d->m, 0, sizeof d->m);
    if (tc->mask) {
        fill(&d->m, tc->mask == 1 ? ATTNREF_BOOL : tc->dt, tc->B, tc->Hq, tc->Lq, tc->Lk, 0);
        const int64_t n = tc->B * tc->Hq * tc->Lq * tc->Lk;
        for (int64_t x = 0; x < n; x++) {
            if (tc->mask == 1)
                ((unsigned char *)d->m.data)[x] = rnd_int(0, 4) != 0;
            else
                attnref_store(d->m.data, (attnref_dtype)tc->dt, x,
                              rnd_int(0, 6) == 0 ? -INFINITY : rnd_d(-3.0, 1.0));
        }
    }
    const size_t no = (size_t)(tc->B * tc->Hq * tc->Lq * tc->Dv);
    d->want = malloc((no ? no : 1) * sizeof *d->want);
    cr_assert(d->want);
    attnref_diag diag = {{0}};
    const int rc =
        attnref_sdpa_f64(&d->q, &d->k, &d->v, tc->mask ? &d->m : NULL, &tc->p, d->want, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "%s: attnref_sdpa_f64: %s", tc->name, diag.msg);
}

static void unmake(tdata *d)
{
    free(d->q.data);
    free(d->k.data);
    free(d->v.data);
    free(d->out.data);
    free(d->m.data);
    free(d->want);
}

static double ulp_dt(double x, int dt)
{
    const int p = dt == ATTNREF_F32 ? 24 : dt == ATTNREF_F16 ? 11 : 8;
    const int emin = dt == ATTNREF_F16 ? -14 : -126;
    x = fabs(x);
    int e;
    frexp(x, &e); /* x in [2^(e-1), 2^e) */
    if (x == 0.0 || e - 1 < emin)
        e = emin + 1;
    return ldexp(1.0, e - 1 - p + 1);
}

/* The row's error bound before the output rounding: its scores' f32 errors through the
 * softmax, the f32 sums (see the file comment).  -1 when the row keeps no key (it must be exactly 0). */
static double row_bound(const tcase *tc, const tdata *d, int64_t b, int64_t h, int64_t i)
{
    const attnref_sdpa_params *p = &tc->p;
    const double w = 0x1p-24;
    const double scale = p->has_scale ? p->scale : 1.0 / sqrt((double)tc->D);
    const int64_t off = p->has_causal_offset ? p->causal_offset : tc->Lk - tc->Lq;
    const int64_t hk = h / (tc->Hq / tc->Hkv);
    const double slope =
        p->alibi_max_bias > 0.0 ? attnref_alibi_slope(p->alibi_max_bias, tc->Hq, h) : 0.0;
    double dmax = 0.0, vmax = 0.0, bmin = INFINITY, bmax = 0.0;
    int64_t n = 0;
    for (int64_t j = 0; j < tc->Lk; j++) {
        if (!attnref_sdpa_key_kept(p, tc->Lq, tc->Lk, b, i, j))
            continue;
        double add = 0.0;
        if (tc->mask) {
            const int64_t mi = ((b * tc->Hq + h) * tc->Lq + i) * tc->Lk + j;
            const double mv = attnref_load(d->m.data, d->m.dtype, mi);
            if (tc->mask == 1 ? mv == 0.0 : mv == -INFINITY)
                continue;
            add = tc->mask == 2 ? mv : 0.0;
        }
        double dot = 0.0, A = 0.0;
        for (int64_t x = 0; x < tc->D; x++) {
            const double qv =
                attnref_load(d->q.data, d->q.dtype, ((b * tc->Hq + h) * tc->Lq + i) * tc->D + x);
            const double kv =
                attnref_load(d->k.data, d->k.dtype, ((b * tc->Hkv + hk) * tc->Lk + j) * tc->D + x);
            dot += qv * kv;
            A += fabs(qv * kv);
        }
        const double s = scale * dot;
        const double bias = slope * fabs((double)off - (double)(j - i));
        bmin = bias < bmin ? bias : bmin;
        bmax = bias > bmax ? bias : bmax;
        /* The bias as a distance from the range's nearest key (cpu forms it so): its part
         * common to every key moves to the sink. */
        const double dj =
            fabs(scale) * A * (double)(tc->D + 2) * w + 8.0 * w * (fabs(s) + fabs(add)) + 8.0 * w;
        dmax = dj > dmax ? dj : dmax;
        for (int64_t x = 0; x < tc->Dv; x++) {
            const double vv = fabs(attnref_load(d->v.data, d->v.dtype,
                                                ((b * tc->Hkv + hk) * tc->Lk + j) * tc->Dv + x));
            vmax = vv > vmax ? vv : vmax;
        }
        n++;
    }
    if (n == 0)
        return -1.0;
    dmax += 8.0 * w * (bmax - bmin);
    if (p->sinks)
        dmax += 4.0 * w * (fabs(p->sinks[h]) + (isfinite(bmin) ? bmin : 0.0));
    return 4.0 * (2.0 * dmax * vmax + (double)(2 * n + 6) * w * vmax);
}

/* Run tc on the kernel table K with `threads` threads and compare; returns the worst
 * error / bound. */
static double check(const tcase *tc, const tdata *d, const cpu_kernels *K, int threads)
{
    cpu_engine eng;
    cr_assert_eq(cpu_engine_init(&eng, threads, K), 0);
    char err[256] = "";
    const int rc = cpu_sdpa_run(&eng, &d->q, &d->k, &d->v, tc->mask ? &d->m : NULL, &tc->p, &d->out,
                                err, sizeof err);
    cpu_engine_free(&eng);
    cr_assert_eq(rc, 0, "%s: cpu_sdpa_run %d: %s", tc->name, rc, err);
    double worst = 0.0;
    for (int64_t b = 0; b < tc->B; b++)
        for (int64_t h = 0; h < tc->Hq; h++)
            for (int64_t i = 0; i < tc->Lq; i++) {
                const int64_t row = (b * tc->Hq + h) * tc->Lq + i;
                const double tol = row_bound(tc, d, b, h, i);
                for (int64_t x = 0; x < tc->Dv; x++) {
                    const double e = d->want[row * tc->Dv + x];
                    const double g = attnref_load(d->out.data, d->out.dtype, row * tc->Dv + x);
                    if (tol < 0.0) {
                        cr_assert(g == 0.0 && !signbit(g),
                                  "%s (%s, %d threads): row (%lld, %lld, %lld) keeps no key, "
                                  "element %lld is %.9g, not +0",
                                  tc->name, K->name, threads, (long long)b, (long long)h,
                                  (long long)i, (long long)x, g);
                        continue;
                    }
                    /* Half an ulp of the output dtype, in the coarser binade where the error
                     * reaches it. */
                    const double t = tol + 0.5 * ulp_dt(fabs(e) + tol, tc->dt);
                    const double r = fabs(g - e) / t;
                    cr_assert(r <= 1.0,
                              "%s (%s, %d threads): out[%lld, %lld, %lld, %lld] = %.9g, reference "
                              "%.17g, error %.3g > bound %.3g",
                              tc->name, K->name, threads, (long long)b, (long long)h, (long long)i,
                              (long long)x, g, e, fabs(g - e), t);
                    worst = r > worst ? r : worst;
                }
            }
    return worst;
}

static void run_all(const tcase *tc)
{
    const cpu_kernels *t[CPU_TEST_MAX_TABLES];
    const int nt = ntables(t);
    tdata d;
    make(tc, &d);
    for (int k = 0; k < nt; k++) {
        const int threads[] = {1, 3};
        for (int x = 0; x < 2; x++) {
            const double r = check(tc, &d, t[k], threads[x]);
            cr_log_info("%s (%s, %d threads): worst error %.3f of the bound", tc->name, t[k]->name,
                        threads[x], r);
        }
    }
    unmake(&d);
}

static const int dtypes[3] = {ATTNREF_F32, ATTNREF_F16, ATTNREF_BF16};
static const char *dtname(int dt)
{
    return dt == ATTNREF_F32 ? "f32" : dt == ATTNREF_F16 ? "f16" : "bf16";
}

/* The shapes: decode on the unpacked kernels (G = 4: 4 rows), decode split over 3 threads (700
 * keys), decode with 16 rows (packed), tile edges (63 / 64 / 65 / 129 keys), prefill of two
 * query blocks (300 queries, G = 1: 256-row blocks), GQA with G = 3. */
typedef struct shape {
    int64_t B, Hq, Hkv, Lq, Lk, D;
} shape;
static const shape shapes[] = {
    {2, 8, 2, 1, 700, 64},  {1, 12, 4, 1, 65, 32},   {1, 16, 1, 2, 129, 64}, {1, 4, 4, 63, 64, 32},
    {2, 6, 2, 65, 129, 16}, {1, 2, 1, 300, 300, 32}, {1, 9, 3, 70, 200, 24},
};
#define NSHAPES (sizeof shapes / sizeof *shapes)

static tcase base(const shape *s, int dt, const char *name)
{
    tcase tc;
    memset(&tc, 0, sizeof tc);
    tc.name = name;
    tc.dt = dt;
    tc.B = s->B;
    tc.Hq = s->Hq;
    tc.Hkv = s->Hkv;
    tc.Lq = s->Lq;
    tc.Lk = s->Lk;
    tc.D = s->D;
    tc.Dv = s->D;
    tc.qmax = tc.kmax = tc.vmax = 1.0;
    return tc;
}

/* ---- each term alone and combined ---------------------------------------------------------- */

Test(cpu_sdpa, softcap)
{
    for (size_t si = 0; si < NSHAPES; si++)
        for (int di = 0; di < 3; di++) {
            char name[96];
            snprintf(name, sizeof name, "softcap50 shape %zu %s", si, dtname(dtypes[di]));
            tcase tc = base(&shapes[si], dtypes[di], name);
            /* |scale q.k| around 20-200: tanh far from linear. */
            tc.qmax = 104.0; /* std(scale q.k) = 104 / 3 ~ 35 for k in [-1, 1], any D */
            tc.p.softcap = 50.0;
            tc.p.causal = si % 2 == 0;
            run_all(&tc);
        }
}

Test(cpu_sdpa, alibi)
{
    for (size_t si = 0; si < NSHAPES; si++)
        for (int di = 0; di < 3; di++) {
            char name[96];
            snprintf(name, sizeof name, "alibi shape %zu %s", si, dtname(dtypes[di]));
            tcase tc = base(&shapes[si], dtypes[di], name);
            tc.p.alibi_max_bias = 8.0;
            tc.p.causal = si % 3 != 1;
            if (si % 3 == 2) { /* an explicit offset, and one without causal */
                tc.p.has_causal_offset = 1;
                tc.p.causal_offset = 37;
            }
            run_all(&tc);
        }
    /* Non power-of-two head counts (12, 9: the second slope series), no causal, an offset
     * past every key, and a huge one (the distances are formed relative to the range). */
    const int64_t offs[] = {0, 5000, (int64_t)1 << 40};
    for (int o = 0; o < 3; o++) {
        const shape s = {1, 12, 3, 5, 80, 16};
        tcase tc = base(&s, ATTNREF_F32, "alibi offsets");
        tc.p.alibi_max_bias = 8.0;
        tc.p.has_causal_offset = 1;
        tc.p.causal_offset = offs[o];
        tc.p.causal = o != 0;
        run_all(&tc);
    }
}

Test(cpu_sdpa, sinks)
{
    double sinks[16];
    for (int h = 0; h < 16; h++)
        sinks[h] = (double)(float)rnd_d(-2.0, 4.0);
    int64_t lengths[2] = {0, 50};
    for (size_t si = 0; si < NSHAPES; si++)
        for (int di = 0; di < 3; di++) {
            char name[96];
            snprintf(name, sizeof name, "sinks shape %zu %s", si, dtname(dtypes[di]));
            tcase tc = base(&shapes[si], dtypes[di], name);
            tc.p.sinks = sinks;
            tc.p.causal = 1;
            if (tc.B == 2) { /* batch row 0 keeps no key: exactly 0 with a sink */
                tc.p.batch = 2;
                lengths[1] = tc.Lk / 2;
                tc.p.lengths = lengths;
            }
            if (si == 3) { /* Lq > Lk - ... causal offset -5: the first rows keep nothing */
                tc.p.has_causal_offset = 1;
                tc.p.causal_offset = -5;
            }
            run_all(&tc);
        }
}

Test(cpu_sdpa, chunk)
{
    int64_t left[2] = {5, 70};
    const int64_t chunks[] = {1, 16, 37, 64, 100};
    for (size_t si = 0; si < NSHAPES; si++)
        for (int di = 0; di < 3; di++) {
            char name[96];
            snprintf(name, sizeof name, "chunk shape %zu %s", si, dtname(dtypes[di]));
            tcase tc = base(&shapes[si], dtypes[di], name);
            tc.p.causal = 1;
            tc.p.chunk = chunks[(si + (size_t)di) % 5];
            if (tc.B == 2) {
                tc.p.batch = 2;
                left[1] = tc.Lk / 3;
                tc.p.left_padding = left;
            }
            if (si == 4)
                tc.p.window = 20;
            run_all(&tc);
        }
}

/* Document ids of n keys: runs of 1..maxlen (several of length 1); with scatter, some ids
 * reused later (documents in several runs: the key-by-key path). */
static void docs(int64_t *ids, int64_t n, int64_t maxlen, int scatter)
{
    int64_t id = 0, left = 0;
    for (int64_t j = 0; j < n; j++) {
        if (left == 0) {
            id++;
            left = rnd_int(0, 2) == 0 ? 1 : rnd_int(1, maxlen);
        }
        ids[j] = scatter && rnd_int(0, 5) == 0 ? id % 3 : id;
        left--;
    }
}

Test(cpu_sdpa, segments)
{
    for (size_t si = 0; si < NSHAPES; si++)
        for (int di = 0; di < 3; di++)
            for (int scatter = 0; scatter < 2; scatter++) {
                char name[96];
                snprintf(name, sizeof name, "segments%s shape %zu %s", scatter ? " scattered" : "",
                         si, dtname(dtypes[di]));
                tcase tc = base(&shapes[si], dtypes[di], name);
                int64_t *ids = malloc((size_t)(tc.B * tc.Lk) * sizeof *ids);
                docs(ids, tc.B * tc.Lk, si % 2 ? 90 : 9, scatter);
                tc.p.segment_ids = ids;
                tc.p.batch = tc.B;
                tc.p.causal = si != 1;
                run_all(&tc);
                free(ids);
            }
}

Test(cpu_sdpa, blocks)
{
    for (size_t si = 0; si < NSHAPES; si++)
        for (int di = 0; di < 3; di++)
            for (int scatter = 0; scatter < 2; scatter++) {
                char name[96];
                snprintf(name, sizeof name, "blocks%s shape %zu %s", scatter ? " scattered" : "",
                         si, dtname(dtypes[di]));
                tcase tc = base(&shapes[si], dtypes[di], name);
                /* Blocks of up to 90 keys (past tile edges), text (-1) between them, longer
                 * than the sliding window of 8. */
                int64_t *ids = malloc((size_t)(tc.B * tc.Lk) * sizeof *ids);
                for (int64_t j = 0; j < tc.B * tc.Lk;) {
                    const int64_t len = rnd_int(1, 90), id = rnd_int(0, 1) ? -1 : j;
                    for (int64_t x = 0; x < len && j < tc.B * tc.Lk; x++, j++)
                        ids[j] = scatter && rnd_int(0, 9) == 0 ? 3 : id;
                }
                tc.p.block_ids = ids;
                tc.p.batch = tc.B;
                tc.p.causal = 1;
                tc.p.window = si % 2 ? 8 : 0;
                tc.p.chunk = si == 4 ? 50 : 0;
                run_all(&tc);
                free(ids);
            }
}

Test(cpu_sdpa, all_terms_with_masks)
{
    double sinks[12];
    for (int h = 0; h < 12; h++)
        sinks[h] = rnd_d(-1.0, 2.0);
    const shape s[] = {{1, 12, 4, 1, 300, 64}, {2, 12, 3, 130, 130, 32}};
    for (int x = 0; x < 2; x++)
        for (int di = 0; di < 3; di++)
            for (int mk = 0; mk < 3; mk++) {
                tcase tc = base(&s[x], dtypes[di], "softcap+alibi+sinks+mask");
                int64_t *ids = malloc((size_t)(tc.B * tc.Lk) * sizeof *ids);
                docs(ids, tc.B * tc.Lk, 70, 0);
                tc.qmax = 20.0;
                tc.mask = mk;
                tc.p.softcap = 30.0;
                tc.p.alibi_max_bias = 4.0;
                tc.p.sinks = sinks;
                tc.p.segment_ids = ids;
                tc.p.batch = tc.B;
                tc.p.causal = mk == 0;
                run_all(&tc);
                free(ids);
            }
}

Test(cpu_sdpa, mla_decode)
{
    /* DeepSeek's MLA in its absorbed decode form: one latent kv head of 576 (512 + 64 rope)
     * read as K, its first 512 as V, 16 query heads, scale 192^-0.5. */
    for (int di = 0; di < 3; di++)
        for (int lq = 1; lq <= 2; lq++) {
            const shape s = {1, 16, 1, lq, 400, 576};
            tcase tc = base(&s, dtypes[di], "mla decode");
            tc.Dv = 512;
            tc.p.has_scale = 1;
            tc.p.scale = 1.0 / sqrt(192.0);
            tc.p.causal = 1;
            run_all(&tc);
        }
}

/* ---- issue 20: scores beyond f32 from finite inputs ------------------------------------------ */

/* cpu's rows where f32 overflowed are attnref's own (the same double computation): with
 * `exact`, every row overflows and equals attnref_sdpa's; else each is finite and in bound. */
static void expect_reference(const tcase *tc, int exact)
{
    const cpu_kernels *t[CPU_TEST_MAX_TABLES];
    const int nt = ntables(t);
    tdata d;
    make(tc, &d);
    attnref_tensor ref = d.out;
    const size_t bytes = (size_t)(tc->B * tc->Hq * tc->Lq * tc->Dv) * 4;
    ref.data = malloc(bytes);
    attnref_diag diag = {{0}};
    cr_assert_eq(attnref_sdpa(&d.q, &d.k, &d.v, tc->mask ? &d.m : NULL, &tc->p, &ref, &diag),
                 ATTNREF_OK);
    for (int k = 0; k < nt; k++)
        for (int th = 1; th <= 3; th += 2) {
            memset(d.out.data, 0xff, bytes);
            check(tc, &d, t[k], th);
            const int64_t n = tc->B * tc->Hq * tc->Lq * tc->Dv;
            for (int64_t x = 0; x < n; x++) {
                const double g = attnref_load(d.out.data, d.out.dtype, x);
                const double w = attnref_load(ref.data, ref.dtype, x);
                cr_assert(isfinite(g) && (g == w || !exact),
                          "%s (%s, %d threads): [%lld] %.9g, attnref %.9g", tc->name, t[k]->name,
                          th, (long long)x, g, w);
            }
        }
    free(ref.data);
    unmake(&d);
}

Test(cpu_sdpa, scores_overflowing_f32)
{
    /* scale 3e38 with q, k in [-1, 1]: every scaled score is beyond f32 (the old kernels gave
     * NaN: +inf - +inf in the softmax, and keys at -inf silently dropped). */
    const shape s[] = {{1, 4, 2, 3, 100, 16}, {1, 8, 2, 1, 700, 16}};
    for (int x = 0; x < 2; x++)
        for (int di = 0; di < 3; di++) {
            tcase tc = base(&s[x], dtypes[di], "scale 3e38");
            tc.p.has_scale = 1;
            tc.p.scale = 3e38;
            expect_reference(&tc, 1);
        }
    /* q.k itself beyond f32 (f32 inputs of 1e20), the default scale. */
    {
        tcase tc = base(&s[0], ATTNREF_F32, "q.k beyond f32");
        tc.qmax = tc.kmax = 1e20;
        expect_reference(&tc, 1);
    }
    /* An additive mask near -FLT_MAX added to a score of -1e38. */
    {
        tcase tc = base(&s[0], ATTNREF_F32, "mask + score beyond f32");
        tc.p.has_scale = 1;
        tc.p.scale = 1e38;
        tc.mask = 2;
        expect_reference(&tc, 0);
    }
    /* P.V beyond f32: values near FLT_MAX summed over many keys. */
    {
        tcase tc = base(&s[1], ATTNREF_F32, "P.V beyond f32");
        tc.vmax = 3e38;
        tc.qmax = 0.0;
        expect_reference(&tc, 0);
    }
}

Test(cpu_sdpa, scale_outside_f32_is_einval)
{
    const shape s = {1, 1, 1, 1, 4, 4};
    tcase tc = base(&s, ATTNREF_F32, "scale 1e39");
    tdata d;
    make(&tc, &d);
    tc.p.has_scale = 1;
    tc.p.scale = 1e39;
    attnref_diag diag = {{0}};
    cr_assert_eq(attnref_sdpa_check(&d.q, &d.k, &d.v, NULL, &tc.p, &d.out, &diag), ATTNREF_EINVAL);
    tc.p.scale = FLT_MAX;
    cr_assert_eq(attnref_sdpa_check(&d.q, &d.k, &d.v, NULL, &tc.p, &d.out, &diag), ATTNREF_OK);
    unmake(&d);
}

Test(cpu_sdpa, softcap_outside_f32_range_in_double)
{
    /* Caps far from any model's (1e-35, 1e35): every row in double, as the reference. */
    const double caps[] = {1e-35, 1e35};
    for (int c = 0; c < 2; c++) {
        const shape s = {1, 4, 2, 2, 70, 16};
        tcase tc = base(&s, ATTNREF_F32, "softcap extreme");
        tc.p.softcap = caps[c];
        tc.qmax = 1e3;
        expect_reference(&tc, 1);
    }
}
