/* Unit tests of the cpu plugin's internals (Criterion): the structural-mask intervals (chunk,
 * documents and blocks included) against attnref_sdpa_key_kept, the soft-capping against libm, cpu_expf against libm, and every kernel table against plain loops in
 * double or attnref's exact conversions.  The end-to-end semantics are the golden cases'
 * (ctest conformance.cpu.*) and the fuzzer's (harness.fuzz.cpu_survives). */
#include <criterion/criterion.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"
#include "attnref/sdpa.h"
#include "cpu_exp.h"
#include "cpu_kern.h"
#include "cpu_plan.h"
#include "test_cpu_tables.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd_u64(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int64_t rnd_int(int64_t lo, int64_t hi) /* [lo, hi] */
{
    return lo + (int64_t)(rnd_u64() % (uint64_t)(hi - lo + 1));
}
static float rnd_f(float lo, float hi)
{
    return lo + (hi - lo) * (float)((double)(rnd_u64() >> 11) / 9007199254740992.0);
}

/* ---- intervals ----------------------------------------------------------------------------- */

Test(cpu_plan, intervals_equal_key_kept)
{
    const int64_t offsets[] = {0,
                               1,
                               -1,
                               5,
                               -7,
                               INT64_MAX,
                               INT64_MAX - 3,
                               INT64_MIN,
                               INT64_MIN + 2,
                               (int64_t)1 << 40,
                               -((int64_t)1 << 40)};
    const int64_t windows[] = {0, 1, 2, 3, 17, INT64_MAX, INT64_MAX - 1, (int64_t)1 << 62};
    int64_t lengths[3], left[3];
    for (int trial = 0; trial < 3000; trial++) {
        attnref_sdpa_params p;
        memset(&p, 0, sizeof p);
        const int64_t lq = rnd_int(0, 12), lk = rnd_int(0, 20), B = 3;
        p.causal = rnd_int(0, 3) != 0;
        p.has_causal_offset = p.causal && rnd_int(0, 1);
        p.causal_offset = rnd_int(0, 2) ? rnd_int(-25, 25)
                                        : offsets[rnd_int(0, sizeof offsets / sizeof *offsets - 1)];
        p.window = p.causal && rnd_int(0, 1)
                       ? windows[rnd_int(0, sizeof windows / sizeof *windows - 1)]
                       : 0;
        if (p.causal && p.window == 0 && rnd_int(0, 1))
            p.window = rnd_int(1, 25);
        p.batch = B;
        for (int b = 0; b < B; b++) {
            lengths[b] = rnd_int(0, lk);
            left[b] = rnd_int(0, lk);
        }
        p.lengths = rnd_int(0, 1) ? lengths : NULL;
        p.left_padding = rnd_int(0, 1) ? left : NULL;
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < lq; i++) {
                int64_t lo, hi;
                cpu_keys ks = {&p, lq, lk, {0}, {0}, {0}};
                cpu_row_keys(&ks, b, i, &lo, &hi);
                cr_assert(lo >= 0 && hi <= lk && lo <= hi, "interval [%lld, %lld) outside 0..%lld",
                          (long long)lo, (long long)hi, (long long)lk);
                for (int64_t j = 0; j < lk; j++) {
                    const int want = attnref_sdpa_key_kept(&p, lq, lk, b, i, j);
                    const int got = lo <= j && j < hi;
                    cr_assert_eq(
                        got, want,
                        "trial %d: lq %lld lk %lld b %lld i %lld j %lld causal %d off %lld "
                        "(given %d) window %lld: interval [%lld, %lld) says %d, "
                        "attnref_sdpa_key_kept %d",
                        trial, (long long)lq, (long long)lk, (long long)b, (long long)i,
                        (long long)j, p.causal, (long long)p.causal_offset, p.has_causal_offset,
                        (long long)p.window, (long long)lo, (long long)hi, got, want);
                }
            }
    }
}

/* Chunk, documents and blocks on top of the others: where cpu_row_keys says its range is exact
 * it holds exactly the kept keys; elsewhere (an id in several runs) at least them. */
Test(cpu_plan, ranges_with_chunk_segments_blocks)
{
    const int64_t offsets[] = {0,
                               3,
                               -4,
                               INT64_MAX,
                               INT64_MAX - 7,
                               INT64_MIN,
                               INT64_MIN + 5,
                               (int64_t)1 << 40,
                               -((int64_t)1 << 40)};
    const int64_t chunks[] = {1, 2, 3, 7, INT64_MAX, INT64_MAX - 2, (int64_t)1 << 62};
    enum { B = 3, LK = 24 };
    int64_t lengths[B], left[B], seg[B * LK], blk[B * LK];
    int inexact = 0;
    for (int trial = 0; trial < 6000; trial++) {
        attnref_sdpa_params p;
        memset(&p, 0, sizeof p);
        const int64_t lq = rnd_int(0, 12), lk = rnd_int(0, LK);
        p.causal = rnd_int(0, 4) != 0;
        p.has_causal_offset = rnd_int(0, 1);
        p.causal_offset = rnd_int(0, 2) ? rnd_int(-25, 25)
                                        : offsets[rnd_int(0, sizeof offsets / sizeof *offsets - 1)];
        p.window = p.causal && rnd_int(0, 2) == 0 ? rnd_int(1, 9) : 0;
        p.chunk =
            p.causal && rnd_int(0, 1) ? (rnd_int(0, 3) ? rnd_int(1, 9) : chunks[rnd_int(0, 6)]) : 0;
        p.batch = B;
        const int scatter = rnd_int(0, 3) == 0;
        for (int64_t x = 0, id = 0; x < B * lk; x++) {
            if (rnd_int(0, 3) == 0)
                id++;
            seg[x] = scatter && rnd_int(0, 4) == 0 ? rnd_int(0, 3) : id;
            blk[x] = rnd_int(0, 2) == 0 ? -1 : (scatter ? rnd_int(0, 3) : x / 5);
        }
        for (int b = 0; b < B; b++) {
            lengths[b] = rnd_int(0, lk);
            left[b] = rnd_int(0, lk);
        }
        p.lengths = rnd_int(0, 2) == 0 ? lengths : NULL;
        p.left_padding = rnd_int(0, 1) ? left : NULL;
        p.segment_ids = rnd_int(0, 1) ? seg : NULL;
        p.block_ids = p.causal && rnd_int(0, 1) ? blk : NULL;
        cpu_keys ks;
        cr_assert_eq(cpu_keys_make(&ks, &p, B, lq, lk), 0);
        for (int64_t b = 0; b < B; b++)
            for (int64_t i = 0; i < lq; i++) {
                int64_t lo, hi;
                const int exact = cpu_row_keys(&ks, b, i, &lo, &hi);
                inexact += !exact;
                cr_assert(lo >= 0 && hi <= lk && lo <= hi);
                for (int64_t j = 0; j < lk; j++) {
                    const int want = attnref_sdpa_key_kept(&p, lq, lk, b, i, j);
                    const int in = lo <= j && j < hi;
                    cr_assert(exact ? in == want : in || !want,
                              "trial %d: lq %lld lk %lld b %lld i %lld j %lld causal %d off %lld "
                              "(given %d) window %lld chunk %lld seg %d blk %d: range [%lld, "
                              "%lld) exact %d, attnref_sdpa_key_kept %d",
                              trial, (long long)lq, (long long)lk, (long long)b, (long long)i,
                              (long long)j, p.causal, (long long)p.causal_offset,
                              p.has_causal_offset, (long long)p.window, (long long)p.chunk,
                              p.segment_ids != NULL, p.block_ids != NULL, (long long)lo,
                              (long long)hi, exact, want);
                }
            }
        cpu_keys_free(&ks);
    }
    cr_assert_gt(inexact, 0, "the key-by-key case is exercised");
}

Test(cpu_plan, splits_cover_each_group_once)
{
    attnref_sdpa_params p;
    memset(&p, 0, sizeof p);
    p.causal = 1;
    /* Decode over 3000 keys on 3 threads: B * Hkv = 2 groups, split into parts, with each
     * tile size a table uses. */
    const int bcs[] = {64, 128};
    for (size_t t = 0; t < sizeof bcs / sizeof *bcs; t++) {
        const int bc = bcs[t];
        cpu_plan pl;
        cr_assert_eq(cpu_plan_make(&pl, &p, 1, 8, 2, 1, 3000, 64, 64, NULL, 3, 1, bc), 0);
        cr_assert_gt(pl.nsplit, 1, "decode with 2 groups on 3 threads is split (tile %d)", bc);
        cr_assert_eq(pl.bc, bc);
        for (int64_t g = 0; g < pl.ngroups; g++) {
            int64_t covered = 0, parts = 0;
            for (int64_t n = 0; n < pl.nitems; n++)
                if (pl.items[n].group == g) {
                    covered += pl.items[n].khi - pl.items[n].klo;
                    parts++;
                    cr_assert(pl.items[n].klo % bc == 0 || pl.items[n].klo == pl.items[n].khi,
                              "tile %d: a part starts at key %lld", bc, (long long)pl.items[n].klo);
                }
            cr_assert_eq(parts, pl.nsplit);
            cr_assert_eq(covered, 3000, "group %lld covers %lld keys", (long long)g,
                         (long long)covered);
        }
        for (int64_t n = 1; n < pl.nitems; n++)
            cr_assert(pl.items[n - 1].cost >= pl.items[n].cost, "items largest first");
        cpu_plan_free(&pl);
    }
}

/* ---- exp ----------------------------------------------------------------------------------- */

static double ulp_f32(double x)
{
    x = fabs(x);
    if (x < FLT_MIN)
        return ldexp(1.0, -149);
    int e;
    frexp(x, &e);
    return ldexp(1.0, e - 24);
}

Test(cpu_exp, edges_and_accuracy)
{
    cr_assert_eq(cpu_expf(0.0f), 1.0f);
    cr_assert_eq(cpu_expf(-0.0f), 1.0f);
    cr_assert_eq(cpu_expf(-INFINITY), 0.0f);
    cr_assert(!signbit(cpu_expf(-INFINITY)));
    cr_assert_eq(cpu_expf(-200.0f), 0.0f);
    cr_assert_eq(cpu_expf(-104.0f), 0.0f, "below 2^-150: +0");
    cr_assert(isinf(cpu_expf(INFINITY)) && cpu_expf(INFINITY) > 0);
    cr_assert(isinf(cpu_expf(88.8f)));
    cr_assert(isfinite(cpu_expf(88.7f)));
    cr_assert(isnan(cpu_expf(NAN)));
    double worst = 0.0;
    for (int n = 0; n < 200000; n++) {
        const float x = -103.0f + (88.7f + 103.0f) * (float)n / 200000.0f;
        const double want = exp((double)x), got = cpu_expf(x);
        const double err = fabs(got - want) / ulp_f32(want);
        if (err > worst)
            worst = err;
        cr_assert(err <= 2.0, "exp(%.9g) = %.9g, libm %.17g: %.2f ulp", (double)x, got, want, err);
    }
    cr_log_info("cpu_expf: worst %.3f ulp on [-103, 88.7]", worst);
}

/* ---- kernel tables --------------------------------------------------------------------------- */

static float *falloc(size_t n)
{
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    cr_assert(p);
    return p;
}

/* Every column count a tile can have (a multiple of CPU_NR up to CPU_BC for scores; up to a
 * padded Dv beyond 128 for P.V), so each register-blocking width of each table is reached. */
static const int score_cols[] = {16, 32, 48, 64, 80, 128};
static const int pv_cols[] = {16, 32, 48, 64, 80, 144};

Test(cpu_kernels, scores_and_pv_match_double)
{
    const cpu_kernels *t[CPU_TEST_MAX_TABLES];
    const int nt = ntables(t);
    const int64_t Ds[] = {1, 7, 16, 128, 131};
    for (int k = 0; k < nt; k++)
        for (size_t di = 0; di < sizeof Ds / sizeof *Ds; di++)
            for (int nrows = 1; nrows <= CPU_MR; nrows++)
                for (size_t ci = 0; ci < sizeof score_cols / sizeof *score_cols; ci++) {
                    const int64_t D = Ds[di];
                    const int ncols = score_cols[ci], ldk = CPU_BC, lds = CPU_BC;
                    float *q = falloc((size_t)(CPU_MR * D)), *kt = falloc((size_t)(D * ldk));
                    float *s = falloc((size_t)(CPU_MR * lds));
                    for (int64_t i = 0; i < CPU_MR * D; i++)
                        q[i] = rnd_f(-2, 2);
                    for (int64_t i = 0; i < D * ldk; i++)
                        kt[i] = rnd_f(-2, 2);
                    /* Columns past ncols must not be written: poison them. */
                    for (int i = 0; i < CPU_MR * lds; i++)
                        s[i] = NAN;
                    const float sigma = 0.37f;
                    t[k]->scores(q, (size_t)D, nrows, kt, ldk, ncols, D, sigma, s, lds);
                    for (int r = 0; r < CPU_MR; r++)
                        for (int c = 0; c < lds; c++) {
                            if (r >= nrows || c >= ncols) {
                                cr_assert(isnan(s[r * lds + c]), "%s scores wrote row %d col %d",
                                          t[k]->name, r, c);
                                continue;
                            }
                            double dot = 0, mag = 0;
                            for (int64_t d = 0; d < D; d++) {
                                dot += (double)q[r * D + d] * kt[d * ldk + c];
                                mag += fabs((double)q[r * D + d] * kt[d * ldk + c]);
                            }
                            const double want = (double)sigma * dot;
                            const double tol = sigma * mag * (double)(D + 2) * 0x1p-24 + 1e-30;
                            cr_assert(fabs(s[r * lds + c] - want) <= tol,
                                      "%s scores D %lld ncols %d row %d col %d: %.9g vs %.9g",
                                      t[k]->name, (long long)D, ncols, r, c, (double)s[r * lds + c],
                                      want);
                        }
                    free(q);
                    free(kt);
                    free(s);
                }
    /* P.V: 37 keys, each column count, rescaled accumulators. */
    for (int k = 0; k < nt; k++)
        for (int nrows = 1; nrows <= CPU_MR; nrows++)
            for (size_t ci = 0; ci < sizeof pv_cols / sizeof *pv_cols; ci++) {
                const int nkeys = 37, ncol = pv_cols[ci], ldv = ncol + 16, ldo = ncol + 16;
                const int ldp = 64;
                float *p = falloc((size_t)(CPU_MR * ldp)), *v = falloc((size_t)(64 * ldv));
                float *o = falloc((size_t)(CPU_MR * ldo)), corr[CPU_MR];
                double want[CPU_MR][160];
                for (int i = 0; i < CPU_MR * ldp; i++)
                    p[i] = rnd_f(0, 1);
                for (int i = 0; i < 64 * ldv; i++)
                    v[i] = rnd_f(-3, 3);
                for (int r = 0; r < CPU_MR; r++) {
                    corr[r] = rnd_f(0, 1);
                    for (int e = 0; e < ldo; e++) {
                        o[r * ldo + e] = rnd_f(-1, 1);
                        want[r][e] = (double)o[r * ldo + e] * corr[r];
                        for (int c = 0; c < nkeys; c++)
                            want[r][e] += (double)p[r * ldp + c] * v[c * ldv + e];
                    }
                }
                /* A key past nkeys must not be read: poison it. */
                for (int e = 0; e < ldv; e++)
                    v[nkeys * ldv + e] = NAN;
                float keep[CPU_MR][16];
                for (int r = 0; r < CPU_MR; r++)
                    memcpy(keep[r], o + r * ldo + ncol, sizeof keep[r]);
                t[k]->pv(p, ldp, nrows, v, ldv, nkeys, ncol, corr, o, ldo);
                for (int r = 0; r < CPU_MR; r++) {
                    /* Rows past nrows and columns past ncol are left as they were. */
                    cr_assert(memcmp(keep[r], o + r * ldo + ncol, sizeof keep[r]) == 0,
                              "%s pv wrote past column %d in row %d", t[k]->name, ncol, r);
                    for (int e = 0; e < ncol && r < nrows; e++)
                        cr_assert(fabs(o[r * ldo + e] - want[r][e]) <= 1e-4,
                                  "%s pv ncol %d row %d col %d: %.9g vs %.9g", t[k]->name, ncol, r,
                                  e, (double)o[r * ldo + e], want[r][e]);
                }
                free(p);
                free(v);
                free(o);
            }
}

/* ---- the decode kernels over runs of rows ---------------------------------------------------- */

static float widen(const void *pool, int dt, size_t i)
{
    const uint16_t *h = pool;
    return dt == CPU_F32   ? ((const float *)pool)[i]
           : dt == CPU_F16 ? attnref_f16_to_f32(h[i])
                           : attnref_bf16_to_f32(h[i]);
}

static void put(void *pool, int dt, size_t i, float x)
{
    if (dt == CPU_F32)
        ((float *)pool)[i] = x;
    else
        ((uint16_t *)pool)[i] = dt == CPU_F16 ? attnref_f32_to_f16(x) : attnref_f32_to_bf16(x);
}

/* x rounded to dtype dt and widened back (exact): what the driver's query rows hold. */
static float widen_round(float x, int dt)
{
    uint16_t h[2];
    if (dt == CPU_F32)
        return x;
    put(h, dt, 0, x);
    return widen(h, dt, 0);
}

/* Whether the AVX-512 table's runs_q may give bf16 rows the pairs layout here: this build
 * compiled VDPBF16PS and the CPU has it. */
static int have_bf16_pairs(void)
{
#if CPU_HAVE_AVX512BF16
    return __builtin_cpu_supports("avx512bf16");
#else
    return 0;
#endif
}

/* scores_runs / pv_runs over a tile cut into runs (pages of 1, 3, 5, 16 rows and random sizes,
 * a last run cut short, the table's tile_keys and 1-3 fewer) scattered in a pool of NaN rows, with a prefetch
 * list of other rows: bit for bit the per-run kernels (scores_rows per run; pv_rows with corr,
 * then 1; the scores of bf16 rows in the pairs layout only within the bound), within the f32
 * bound of a double loop, and no NaN from the rows around them; pv_runs
 * with corr NULL as with corr 1, bit for bit.  Every
 * table of this machine that has them (avx2, and avx512 where the CPU has AVX-512). */
Test(cpu_kernels, decode_runs_match_per_run_kernels)
{
    const cpu_kernels *t[CPU_TEST_MAX_TABLES];
    const int nt = ntables(t);
    int tested = 0;
    const int64_t Ds[] = {128, 131, 16, 7, 120}; /* D % 8, Dv % 64 / 32 / 16 remainders */
    const int pages[] = {1, 3, 5, 16, 0};        /* 0: random run sizes */
    enum { SLOTS = 16, NPAGES = 2 * CPU_BC, LDS = CPU_BC, LDO = 144 };
    for (int k = 0; k < nt; k++) {
        /* The x86 tables (avx2, avx512) must have them, so they are tested here. */
        cr_assert(strcmp(t[k]->name, "portable") == 0 || (t[k]->scores_runs && t[k]->pv_runs),
                  "%s has no run kernels", t[k]->name);
        if (!t[k]->scores_runs || !t[k]->pv_runs)
            continue;
        tested++;
        for (int dt = CPU_F32; dt <= CPU_BF16; dt++)
            for (size_t di = 0; di < sizeof Ds / sizeof *Ds; di++)
                for (size_t pi = 0; pi < sizeof pages / sizeof *pages; pi++) {
                    const int64_t D = Ds[di], Dv = di == 3 ? 20 : D;
                    const int64_t W = (D > Dv ? D : Dv) + (pi & 1 ? 5 : 0); /* row stride */
                    const size_t esz = dt == CPU_F32 ? 4 : 2;
                    const size_t prow = (size_t)(NPAGES * SLOTS) * (size_t)W;
                    void *pool = malloc(prow * esz);
                    cr_assert(pool);
                    for (size_t i = 0; i < prow; i++)
                        put(pool, dt, i, NAN);
                    /* Runs: distinct random pages, each run inside its page. */
                    int perm[NPAGES];
                    for (int i = 0; i < NPAGES; i++)
                        perm[i] = i;
                    for (int i = NPAGES - 1; i > 0; i--) {
                        const int j = (int)rnd_int(0, i), x = perm[i];
                        perm[i] = perm[j];
                        perm[j] = x;
                    }
                    /* The table's whole tile, and tiles cut short by 1, 2, 3 keys. */
                    const int nk = t[k]->tile_keys - (int)(pi * 3 % 4);
                    cpu_run runs[CPU_BC], pf[4];
                    int nruns = 0;
                    for (int c = 0; c < nk; nruns++) {
                        int len = pages[pi] ? pages[pi] : (int)rnd_int(1, SLOTS);
                        len = len < nk - c ? len : nk - c;
                        const int first = (int)rnd_int(0, SLOTS - len);
                        const int64_t row0 = (int64_t)perm[nruns] * SLOTS + first;
                        runs[nruns] =
                            (cpu_run){(const char *)pool + (size_t)(row0 * W) * esz, W, len};
                        for (int r = 0; r < len; r++)
                            for (int64_t d = 0; d < (D > Dv ? D : Dv); d++)
                                put(pool, dt, (size_t)((row0 + r) * W + d), rnd_f(-2, 2));
                        c += len;
                    }
                    /* Prefetch: rows of pages no run uses (NaN: never read as data). */
                    const int npf = (int)rnd_int(0, 4);
                    for (int i = 0; i < npf; i++)
                        pf[i] =
                            (cpu_run){(const char *)pool +
                                          (size_t)((int64_t)perm[NPAGES - 1 - i] * SLOTS * W) * esz,
                                      W, (int)rnd_int(1, SLOTS)};
                    float q[CPU_DR * 131], s1[CPU_DR * LDS], s2[CPU_DR * LDS];
                    /* q in the dtype, as the driver's rows are (widened exactly). */
                    for (int i = 0; i < CPU_DR * 131; i++)
                        q[i] = widen_round(rnd_f(-2, 2), dt);
                    const float sigma = 0.37f;
                    /* The rows as scores_runs reads them (runs_q's layout where it has one). */
                    float qr[CPU_DR * 2 * 131];
                    const float *qs = q;
                    size_t ldqs = (size_t)D;
                    const int qdt = t[k]->runs_q ? t[k]->runs_q(q, CPU_DR, D, dt, sigma, qr) : 0;
                    if (qdt) {
                        qs = qr;
                        ldqs = 2 * (size_t)D;
                    }
                    /* The AVX-512 f16/bf16 kernels read their own layout: check that it is used,
                     * and that bf16 takes the pairs wherever this CPU and build allow them. */
                    cr_assert(strcmp(t[k]->name, "avx512") != 0 || dt == CPU_F32 || qs == qr,
                              "avx512 runs_q gave no layout for dtype %d", dt);
                    cr_assert(strcmp(t[k]->name, "avx512") != 0 || !qdt ||
                                  qdt == (dt == CPU_BF16 && D % 16 == 0 && have_bf16_pairs()
                                              ? CPU_BF16P
                                              : dt),
                              "avx512 runs_q dt %d D %lld gave layout %d", dt, (long long)D, qdt);
                    /* The pairs add with VDPBF16PS: within the bound, not the FMA kernels' bits. */
                    const int same_bits = qdt != CPU_BF16P;
                    float *p = falloc(CPU_DR * LDS), *o1 = falloc(CPU_DR * LDO);
                    float *o2 = falloc(CPU_DR * LDO), corr[CPU_DR];
                    float *o3 = falloc(CPU_DR * LDO), *o4 = falloc(CPU_DR * LDO);
                    static const float ones[CPU_DR] = {1, 1, 1, 1};
                    for (int nrows = 1; nrows <= CPU_DR; nrows++) {
                        for (int i = 0; i < CPU_DR * LDS; i++)
                            s1[i] = 12345.0f; /* columns >= nk and rows >= nrows stay so */
                        t[k]->scores_runs(qs, ldqs, nrows, runs, nruns, qdt ? qdt : dt, D, sigma,
                                          s1, LDS, pf, npf);
                        for (int i = 0; i < CPU_DR * LDS; i++)
                            if (i / LDS >= nrows || i % LDS >= nk)
                                cr_assert(s1[i] == 12345.0f,
                                          "%s scores_runs wrote row %d key %d (%d rows, %d keys)",
                                          t[k]->name, i / LDS, i % LDS, nrows, nk);
                        for (int u = 0, c0 = 0; u < nruns; c0 += runs[u].n, u++)
                            t[k]->scores_rows(q, (size_t)D, nrows, runs[u].src, dt, W, runs[u].n, D,
                                              sigma, s2 + c0, LDS);
                        for (int r = 0; r < nrows; r++)
                            for (int u = 0, c = 0; u < nruns; u++)
                                for (int x = 0; x < runs[u].n; x++, c++) {
                                    const size_t at = (size_t)(x * W);
                                    double dot = 0, mag = 0;
                                    for (int64_t d = 0; d < D; d++) {
                                        const double kd = widen(runs[u].src, dt, at + (size_t)d);
                                        dot += (double)q[r * D + d] * kd;
                                        mag += fabs((double)q[r * D + d] * kd);
                                    }
                                    const double want = (double)sigma * dot;
                                    const double tol = sigma * mag * (double)(D + 2) * 0x1p-24;
                                    cr_assert((!same_bits || s1[r * LDS + c] == s2[r * LDS + c]) &&
                                                  fabs(s1[r * LDS + c] - want) <= tol + 1e-30,
                                              "%s scores_runs dt %d D %lld P %d row %d key %d: "
                                              "%.9g, per run %.9g, double %.9g",
                                              t[k]->name, dt, (long long)D, pages[pi], r, c,
                                              (double)s1[r * LDS + c], (double)s2[r * LDS + c],
                                              want);
                                }
                        for (int r = 0; r < nrows; r++) {
                            corr[r] = rnd_f(0, 1);
                            for (int c = 0; c < nk; c++)
                                p[r * LDS + c] = rnd_f(0, 1);
                            for (int64_t e = 0; e < Dv; e++)
                                o1[r * LDO + e] = o2[r * LDO + e] = rnd_f(-1, 1);
                        }
                        memcpy(o3, o1, CPU_DR * LDO * sizeof *o1);
                        memcpy(o4, o1, CPU_DR * LDO * sizeof *o1);
                        double want[CPU_DR][131];
                        for (int r = 0; r < nrows; r++)
                            for (int64_t e = 0; e < Dv; e++) {
                                want[r][e] = (double)o1[r * LDO + e] * corr[r];
                                for (int u = 0, c = 0; u < nruns; u++)
                                    for (int x = 0; x < runs[u].n; x++, c++)
                                        want[r][e] += (double)p[r * LDS + c] *
                                                      widen(runs[u].src, dt, (size_t)(x * W + e));
                            }
                        t[k]->pv_runs(p, LDS, nrows, runs, nruns, dt, Dv, corr, o1, LDO, pf, npf);
                        for (int u = 0, c0 = 0; u < nruns; c0 += runs[u].n, u++)
                            t[k]->pv_rows(p + c0, LDS, nrows, runs[u].src, dt, W, runs[u].n, Dv,
                                          u == 0 ? corr : ones, o2, LDO);
                        for (int r = 0; r < nrows; r++)
                            for (int64_t e = 0; e < Dv; e++)
                                cr_assert(o1[r * LDO + e] == o2[r * LDO + e] &&
                                              fabs(o1[r * LDO + e] - want[r][e]) <= 1e-4,
                                          "%s pv_runs dt %d Dv %lld P %d row %d col %lld: %.9g, "
                                          "per run %.9g, double %.9g",
                                          t[k]->name, dt, (long long)Dv, pages[pi], r, (long long)e,
                                          (double)o1[r * LDO + e], (double)o2[r * LDO + e],
                                          want[r][e]);
                        /* corr NULL: O as it is, bit for bit what factor 1 gives. */
                        t[k]->pv_runs(p, LDS, nrows, runs, nruns, dt, Dv, NULL, o3, LDO, pf, npf);
                        t[k]->pv_runs(p, LDS, nrows, runs, nruns, dt, Dv, ones, o4, LDO, pf, npf);
                        cr_assert(memcmp(o3, o4, CPU_DR * LDO * sizeof *o3) == 0,
                                  "%s pv_runs dt %d Dv %lld P %d: corr NULL differs from corr 1",
                                  t[k]->name, dt, (long long)Dv, pages[pi]);
                    }
                    free(p);
                    free(o1);
                    free(o2);
                    free(o3);
                    free(o4);
                    free(pool);
                }
    }
    if (!tested)
        cr_skip_test("no kernel table here has the run kernels");
}

/* runs_q's bf16 pairs (VDPBF16PS: subnormal inputs read as zero, subnormal results flushed) only
 * where that cannot move a score: D a multiple of 16, q finite bf16 values none subnormal, and
 * |sigma| max(max |q|, 1) <= 2^64; else the doubled chunks of the FMA kernels.  A subnormal q
 * element against a key element of 2^100 is worth 2^-29 of the dot product: the rows runs_q
 * chose give it, and the same rows forced into the pairs lose it (what the check prevents). */
Test(cpu_kernels, runs_q_pairs_only_where_exact_enough)
{
    const cpu_kernels *t[CPU_TEST_MAX_TABLES];
    const int nt = ntables(t);
    int tested = 0;
    enum { D = 32, NK = 4 };
    for (int k = 0; k < nt; k++) {
        if (strcmp(t[k]->name, "avx512") != 0 || !have_bf16_pairs())
            continue;
        tested++;
        float q[CPU_DR * D], qr[CPU_DR * 2 * D];
        for (int i = 0; i < CPU_DR * D; i++)
            q[i] = widen_round(rnd_f(-2, 2), CPU_BF16);
        cr_assert(t[k]->runs_q(q, CPU_DR, D, CPU_BF16, 0.25f, qr) == CPU_BF16P);
        cr_assert(t[k]->runs_q(q, CPU_DR, D, CPU_F16, 0.25f, qr) == CPU_F16, "f16: no pairs");
        cr_assert(t[k]->runs_q(q, CPU_DR, 24, CPU_BF16, 0.25f, qr) == CPU_BF16, "D 24");
        /* The scale's bound, exactly at 2^64 and just past it (max |q| set to 2). */
        q[5] = 2.0f;
        cr_assert(t[k]->runs_q(q, CPU_DR, D, CPU_BF16, 0x1p63f, qr) == CPU_BF16P);
        cr_assert(t[k]->runs_q(q, CPU_DR, D, CPU_BF16, -0x1p63f, qr) == CPU_BF16P);
        cr_assert(t[k]->runs_q(q, CPU_DR, D, CPU_BF16, 0x1.02p63f, qr) == CPU_BF16, "scale");
        cr_assert(t[k]->runs_q(q, CPU_DR, D, CPU_BF16, INFINITY, qr) == CPU_BF16, "inf scale");
        cr_assert(t[k]->runs_q(q, CPU_DR, D, CPU_BF16, NAN, qr) == CPU_BF16, "NaN scale");
        /* In the last row, so every row is looked at. */
        const float bad[] = {0x1p66f, INFINITY, -INFINITY, NAN, 1.0f + 0x1p-20f, 0x1p-129f};
        for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
            const float keep = q[3 * D + 7];
            q[3 * D + 7] = bad[b];
            cr_assert(t[k]->runs_q(q, CPU_DR, D, CPU_BF16, 1.0f, qr) == CPU_BF16,
                      "q element %a took the pairs", (double)bad[b]);
            q[3 * D + 7] = keep;
        }

        /* What the subnormal would cost: every row 2^-129 (a bf16 subnormal) at d 0, else 0;
         * every key 2^100 at d 0, 1 elsewhere. */
        uint16_t kb[NK * D];
        for (int i = 0; i < NK * D; i++)
            kb[i] = attnref_f32_to_bf16(i % D == 0 ? 0x1p100f : 1.0f);
        for (int i = 0; i < CPU_DR * D; i++)
            q[i] = i % D == 0 ? 0x1p-129f : 0.0f;
        const cpu_run run = {kb, D, NK};
        float s[CPU_DR * CPU_BC];
        const int qdt = t[k]->runs_q(q, CPU_DR, D, CPU_BF16, 1.0f, qr);
        cr_assert(qdt == CPU_BF16);
        t[k]->scores_runs(qr, 2 * D, CPU_DR, &run, 1, qdt, D, 1.0f, s, CPU_BC, NULL, 0);
        for (int r = 0; r < CPU_DR; r++)
            for (int c = 0; c < NK; c++)
                cr_assert(s[r * CPU_BC + c] == 0x1p-29f, "row %d key %d: %a", r, c,
                          (double)s[r * CPU_BC + c]);
        /* The same rows written in the pairs layout by hand (bf16 bits, each chunk of 16 twice). */
        uint16_t *pr = (uint16_t *)qr;
        for (int r = 0; r < CPU_DR; r++)
            for (int d = 0; d < D; d++)
                pr[(size_t)r * 4 * D + (size_t)(2 * (d & ~15) + (d & 15))] =
                    pr[(size_t)r * 4 * D + (size_t)(2 * (d & ~15) + 16 + (d & 15))] =
                        attnref_f32_to_bf16(q[r * D + d]);
        t[k]->scores_runs(qr, 2 * D, CPU_DR, &run, 1, CPU_BF16P, D, 1.0f, s, CPU_BC, NULL, 0);
        cr_assert(s[0] == 0.0f, "VDPBF16PS kept the subnormal: %a", (double)s[0]);
    }
    cr_log_info("runs_q pairs checked on %d table(s)", tested);
}

/* The AVX-512 scores and P.V do per lane what the AVX2 ones do (an FMA per product in the same
 * order, the scale last): equal bits on the same inputs, at every row and column count. */
Test(cpu_kernels, avx512_dense_equals_avx2)
{
    const cpu_kernels *t[CPU_TEST_MAX_TABLES];
    const int nt = ntables(t);
    const cpu_kernels *a2 = NULL, *a5 = NULL;
    for (int i = nt - 1; i >= 0; i--) {
        if (strcmp(t[i]->name, "avx2") == 0)
            a2 = t[i];
        if (strcmp(t[i]->name, "avx512") == 0)
            a5 = t[i];
    }
    if (!a2 || !a5) {
        cr_skip_test("no AVX-512 kernels on this machine: nothing to compare");
    }
    const int64_t D = 131;
    const int ld = 160;
    float *q = falloc((size_t)(CPU_MR * D)), *kt = falloc((size_t)(D * ld));
    float *s2 = falloc((size_t)(CPU_MR * ld)), *s5 = falloc((size_t)(CPU_MR * ld));
    float *o2 = falloc((size_t)(CPU_MR * ld)), *o5 = falloc((size_t)(CPU_MR * ld));
    float *p = falloc((size_t)(CPU_MR * ld));
    for (int i = 0; i < CPU_MR * ld; i++)
        p[i] = rnd_f(0, 1);
    for (int64_t i = 0; i < CPU_MR * D; i++)
        q[i] = rnd_f(-2, 2);
    for (int64_t i = 0; i < D * ld; i++)
        kt[i] = rnd_f(-2, 2);
    float corr[CPU_MR];
    for (int r = 0; r < CPU_MR; r++)
        corr[r] = rnd_f(0, 1);
    for (int nrows = 1; nrows <= CPU_MR; nrows++)
        for (int ncols = 16; ncols <= ld; ncols += 16) {
            a2->scores(q, (size_t)D, nrows, kt, (size_t)ld, ncols, D, 0.37f, s2, (size_t)ld);
            a5->scores(q, (size_t)D, nrows, kt, (size_t)ld, ncols, D, 0.37f, s5, (size_t)ld);
            for (int r = 0; r < nrows; r++)
                cr_assert(memcmp(s2 + r * ld, s5 + r * ld, (size_t)ncols * sizeof(float)) == 0,
                          "scores differ: %d rows, %d columns, row %d", nrows, ncols, r);
            for (int i = 0; i < CPU_MR * ld; i++)
                o2[i] = o5[i] = rnd_f(-1, 1);
            /* kt's rows serve as V. */
            a2->pv(p, (size_t)ld, nrows, kt, (size_t)ld, 57, ncols, corr, o2, (size_t)ld);
            a5->pv(p, (size_t)ld, nrows, kt, (size_t)ld, 57, ncols, corr, o5, (size_t)ld);
            cr_assert(memcmp(o2, o5, (size_t)(CPU_MR * ld) * sizeof(float)) == 0,
                      "pv differs: %d rows, %d columns", nrows, ncols);
        }
    free(q);
    free(kt);
    free(s2);
    free(s5);
    free(o2);
    free(o5);
    free(p);
}

Test(cpu_kernels, exp_sum_and_max_are_the_scalar_exp)
{
    const cpu_kernels *t[CPU_TEST_MAX_TABLES];
    const int nt = ntables(t);
    for (int k = 0; k < nt; k++)
        for (int n = 0; n <= 37; n++) {
            float x[40], y[40];
            for (int c = 0; c < n; c++)
                x[c] = rnd_int(0, 6) == 0 ? -INFINITY : rnd_f(-120, 10);
            memcpy(y, x, sizeof x);
            const float m = n ? t[k]->max(x, n) : -INFINITY;
            float mref = -INFINITY;
            for (int c = 0; c < n; c++)
                mref = x[c] > mref ? x[c] : mref;
            cr_assert_eq(m, mref, "%s max n %d", t[k]->name, n);
            const float mm = isfinite(m) ? m : 0.0f;
            const float sum = t[k]->exp_sum(y, n, mm);
            double sref = 0;
            for (int c = 0; c < n; c++) {
                const float e = cpu_expf(x[c] - mm);
                cr_assert_eq(y[c], e, "%s exp_sum n %d [%d]: %.9g, cpu_expf %.9g", t[k]->name, n, c,
                             (double)y[c], (double)e);
                sref += e;
            }
            cr_assert(fabs(sum - sref) <= 1e-6 * (sref + 1), "%s sum", t[k]->name);
        }
    /* A sweep of the whole range exp_sum sees (x - m <= 0 in a softmax, but any x here): every
     * lane and every tail length gives cpu_expf's bits, subnormal results and overflow included
     * (the AVX-512 exp scales by 2^n in one VSCALEFPS where cpu_expf multiplies twice). */
    enum { NS = 1 << 16 };
    float *sx = falloc(NS), *sy = falloc(NS);
    for (int k = 0; k < nt; k++) {
        for (int i = 0; i < NS; i++)
            sx[i] = -120.0f + 215.0f * (float)i / (float)NS + rnd_f(0, 1e-3f);
        sx[0] = -INFINITY;
        sx[1] = NAN;
        sx[2] = 0.0f;
        sx[3] = -103.972f; /* results around the smallest subnormal */
        sx[4] = 88.7228f;  /* around the largest finite result */
        /* Quiet NaNs with payloads: the AVX2 exp adds a shift of n / 2 to y's exponent field,
         * where n comes from a NaN too; a NaN must stay that NaN, never become a number. */
        const uint32_t nans[] = {0x7fc00100u, 0x7fc0ff80u, 0xffc12345u,
                                 0x7fffffffu, 0xffffff00u, 0x7fd00080u};
        for (size_t i = 0; i < sizeof nans / sizeof *nans; i++)
            memcpy(&sx[5 + i], &nans[i], sizeof *sx);
        for (int n = NS - 15; n <= NS; n += 5) {
            memcpy(sy, sx, (size_t)NS * sizeof *sx);
            t[k]->exp_sum(sy, n, 0.0f);
            for (int i = 0; i < n; i++) {
                const float e = cpu_expf(sx[i]);
                cr_assert(memcmp(&sy[i], &e, sizeof e) == 0, "%s exp_sum of %.9g: %a, cpu_expf %a",
                          t[k]->name, (double)sx[i], (double)sy[i], (double)e);
            }
            for (int i = n; i < NS; i++)
                cr_assert(memcmp(&sy[i], &sx[i], sizeof *sx) == 0, "%s exp_sum wrote past n",
                          t[k]->name);
        }
    }
    free(sx);
    free(sy);
    /* max ignores NaN */
    for (int k = 0; k < nt; k++) {
        float x[19];
        for (int c = 0; c < 19; c++)
            x[c] = c == 3 || c == 17 ? NAN : (float)c - 100.0f;
        cr_assert_eq(t[k]->max(x, 19), -82.0f, "%s: max skips NaN", t[k]->name);
        for (int c = 0; c < 19; c++)
            x[c] = NAN;
        cr_assert_eq(t[k]->max(x, 19), -INFINITY, "%s: all NaN", t[k]->name);
    }
}

/* Bit patterns covering the conversions' hard cases: zeros, subnormals, ties, inf, NaN. */
static uint16_t h_special(int i)
{
    static const uint16_t s[] = {0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff,
                                 0x7c00, 0xfc00, 0x7e00, 0x7d01, 0xfbff, 0x8001, 0x3555};
    return i < (int)(sizeof s / sizeof *s) ? s[i] : (uint16_t)rnd_u64();
}

Test(cpu_kernels, conversions_are_exact)
{
    const cpu_kernels *t[CPU_TEST_MAX_TABLES];
    const int nt = ntables(t);
    enum { N = 45 };
    for (int k = 0; k < nt; k++) {
        for (int dt = CPU_F32; dt <= CPU_BF16; dt++) {
            uint16_t h[N];
            float f[N], out[N], want[N];
            for (int i = 0; i < N; i++) {
                h[i] = h_special(i);
                f[i] = i == 5 ? INFINITY : rnd_f(-1e4f, 1e4f);
            }
            const void *src = dt == CPU_F32 ? (const void *)f : (const void *)h;
            int bad_want = 0;
            for (int i = 0; i < N; i++) {
                want[i] = dt == CPU_F32   ? f[i]
                          : dt == CPU_F16 ? attnref_f16_to_f32(h[i])
                                          : attnref_bf16_to_f32(h[i]);
                bad_want |= !isfinite(want[i]);
            }
            const int bad = t[k]->load_row(src, dt, N, out);
            cr_assert_eq(bad, bad_want, "%s load_row dtype %d non-finite flag", t[k]->name, dt);
            cr_assert_eq(memcmp(out, want, sizeof out), 0, "%s load_row dtype %d", t[k]->name, dt);
            /* A finite row is not flagged. */
            float fin[N];
            for (int i = 0; i < N; i++)
                fin[i] = rnd_f(-1, 1);
            cr_assert_eq(t[k]->load_row(fin, CPU_F32, N, out), 0);
            /* One infinity anywhere, in a full vector or the tail, is flagged. */
            for (int at = 0; at < N; at += 7) {
                uint16_t hf[N];
                for (int i = 0; i < N; i++) {
                    fin[i] = rnd_f(-1, 1);
                    hf[i] = dt == CPU_F16 ? 0x3c00 : 0x3f80; /* 1.0 */
                }
                fin[at] = -INFINITY;
                hf[at] = dt == CPU_F16 ? 0xfc00 : 0xff80;
                cr_assert_eq(t[k]->load_row(dt == CPU_F32 ? (const void *)fin : (const void *)hf,
                                            dt, N, out),
                             1, "%s load_row dtype %d: -inf at %d not flagged", t[k]->name, dt, at);
            }
            /* pack_kt: 11 and 37 keys of 45 elements (full and partial blocks of 8 and 16
             * keys and dimensions), row stride 50, transposed; the columns past nk untouched. */
            enum { NK = 37, LDK = 48 };
            uint16_t hs[NK * 50];
            float fs[NK * 50], kt[45 * LDK];
            for (int i = 0; i < NK * 50; i++) {
                hs[i] = h_special(i % 60);
                fs[i] = rnd_f(-5, 5);
            }
            const void *ks = dt == CPU_F32 ? (const void *)fs : (const void *)hs;
            for (int nk = 11; nk <= NK; nk += NK - 11) {
                for (int i = 0; i < 45 * LDK; i++)
                    kt[i] = -7.0f;
                t[k]->pack_kt(ks, dt, 50, nk, 45, kt, LDK);
                for (int c = 0; c < LDK; c++)
                    for (int d = 0; d < 45; d++) {
                        const int i = c * 50 + d;
                        const float w = c >= nk         ? -7.0f
                                        : dt == CPU_F32 ? fs[i]
                                        : dt == CPU_F16 ? attnref_f16_to_f32(hs[i])
                                                        : attnref_bf16_to_f32(hs[i]);
                        cr_assert(memcmp(&kt[d * LDK + c], &w, sizeof w) == 0,
                                  "%s pack_kt dtype %d nk %d key %d d %d", t[k]->name, dt, nk, c,
                                  d);
                    }
            }
        }
        /* store_row: RNE, subnormals, overflow, NaN, as attnref's scalar conversions. */
        float x[N];
        const float sp[] = {0.0f,
                            -0.0f,
                            1.0f + 0x1p-11f,
                            1.0f + 3 * 0x1p-11f,
                            65520.0f,
                            65519.0f,
                            0x1p-25f,
                            0x1.8p-24f,
                            INFINITY,
                            -INFINITY,
                            NAN,
                            1.0f + 0x1p-8f,
                            1.0f + 0x1.8p-8f,
                            FLT_MAX,
                            -FLT_MAX,
                            0x1p-130f};
        for (int i = 0; i < N; i++)
            x[i] = i < (int)(sizeof sp / sizeof *sp)
                       ? sp[i]
                       : rnd_f(-70000, 70000) * (i % 3 ? 1e-6f : 1.0f);
        for (int dt = CPU_F16; dt <= CPU_BF16; dt++) {
            uint16_t got[N];
            t[k]->store_row(x, N, dt, got);
            for (int i = 0; i < N; i++) {
                const uint16_t w =
                    dt == CPU_F16 ? attnref_f32_to_f16(x[i]) : attnref_f32_to_bf16(x[i]);
                const int both_nan = (dt == CPU_F16 ? ((w & 0x7c00) == 0x7c00 && (w & 0x3ff))
                                                    : ((w & 0x7f80) == 0x7f80 && (w & 0x7f))) &&
                                     isnan(x[i]);
                cr_assert(got[i] == w ||
                              (both_nan && (dt == CPU_F16 ? (got[i] & 0x7e00) == 0x7e00
                                                          : (got[i] & 0x7fc0) == 0x7fc0)),
                          "%s store_row dtype %d [%d] %.9g: 0x%04x, attnref 0x%04x", t[k]->name, dt,
                          i, (double)x[i], got[i], w);
            }
        }
        float back[N];
        t[k]->store_row(x, N, CPU_F32, back);
        cr_assert_eq(memcmp(back, x, sizeof x), 0);
    }
}

Test(cpu_kernels, softcap_alibi_finite)
{
    const cpu_kernels *t[CPU_TEST_MAX_TABLES];
    const int nt = ntables(t);
    const float caps[] = {50.0f, 30.0f, 1.0f, 0.01f, 1e6f};
    double worst = 0.0;
    for (int k = 0; k < nt; k++)
        for (int ci = 0; ci < 5; ci++) {
            const float c = caps[ci], rc = (float)(1.0 / (double)c);
            enum { N = 4003 };
            static float x[N], y[N];
            for (int i = 0; i < N; i++) {
                /* s / c from 0 to about 12 either way, densely around the 0.625 switch. */
                const double u = i < 2000 ? (i - 1000) * 0.0125 : rnd_f(-0.7f, 0.7f);
                x[i] = (float)(u * c);
            }
            x[N - 3] = INFINITY;
            x[N - 2] = -INFINITY;
            x[N - 1] = NAN;
            memcpy(y, x, sizeof x);
            t[k]->softcap(y, N, c, rc);
            for (int i = 0; i < N - 3; i++) {
                const double want = (double)c * tanh((double)x[i] / (double)c);
                const double err = fabs(y[i] - want) / ulp_f32(want);
                worst = err > worst ? err : worst;
                cr_assert(err <= 3.0, "%s softcap %g of %.9g: %.9g, libm %.17g (%.2f ulp)",
                          t[k]->name, (double)c, (double)x[i], (double)y[i], want, err);
                cr_assert_eq(y[i], cpu_softcapf(x[i], c, rc), "%s: the scalar's value", t[k]->name);
            }
            cr_assert_eq(y[N - 3], c);
            cr_assert_eq(y[N - 2], -c);
            cr_assert(isnan(y[N - 1]));
        }
    cr_log_info("softcap: worst %.3f ulp", worst);
    for (int k = 0; k < nt; k++)
        for (int n = 0; n <= 37; n++) {
            float s[40], want[40];
            const int64_t base = rnd_int(-50, 90);
            const float m = rnd_f(0, 1);
            for (int c = 0; c < n; c++) {
                s[c] = rnd_f(-5, 5);
                const float d = (float)llabs(base - c);
                want[c] = s[c] - m * d;
            }
            t[k]->alibi(s, n, m, base);
            for (int c = 0; c < n; c++)
                cr_assert_eq(s[c], want[c], "%s alibi n %d c %d", t[k]->name, n, c);
            for (int c = 0; c < n; c++)
                s[c] = rnd_f(-5, 5);
            cr_assert_eq(t[k]->finite(s, n), 1);
            if (n > 0) {
                const float bad[3] = {INFINITY, -INFINITY, NAN};
                s[rnd_int(0, n - 1)] = bad[rnd_int(0, 2)];
                cr_assert_eq(t[k]->finite(s, n), 0, "%s finite n %d", t[k]->name, n);
            }
        }
}

/* softmax_rows (where a table has it) against the per-row calls it replaces (cpu_sdpa.c's finite
 * check, exclusion outside [a, z) and softmax_step, on the same table's finite, max and exp_sum):
 * bit for bit on P, m, l, the factor and the bad flag, for every n and interval, with NaN, inf and
 * -inf scores, rows that keep nothing, rows whose only kept scores are NaN or -inf, and running
 * maxima of -inf.  Columns past n rounded up to CPU_NR stay untouched. */
static void softmax_rows_ref(const cpu_kernels *K, float *s, int n, int a, int z, float *m,
                             float *l, float *corr, unsigned char *bad)
{
    if (a < z && !K->finite(s + a, z - a))
        *bad = 1;
    for (int c = 0; c < n; c++)
        if (c < a || c >= z)
            s[c] = -INFINITY;
    *corr = 1.0f;
    if (a >= z) {
        memset(s, 0, (size_t)n * sizeof *s);
        return;
    }
    const float mb = K->max(s, n);
    const float mnew = mb > *m ? mb : *m;
    if (mnew == -INFINITY) {
        for (int c = a; c < z; c++)
            if (s[c] != s[c])
                *l = NAN;
        memset(s, 0, (size_t)n * sizeof *s);
        return;
    }
    *corr = cpu_expf(*m - mnew);
    *l = *l * *corr + K->exp_sum(s, n, mnew);
    *m = mnew;
}

Test(cpu_kernels, softmax_rows_equals_the_row_calls)
{
    const cpu_kernels *t[CPU_TEST_MAX_TABLES];
    const int nt = ntables(t);
    enum { LD = CPU_BC + 16 }; /* a multiple of 16 past a tile's columns, to see stray writes */
    float *s = falloc((size_t)CPU_MR * LD), *r = falloc((size_t)CPU_MR * LD);
    int tested = 0;
    for (int k = 0; k < nt; k++) {
        if (!t[k]->softmax_rows)
            continue;
        tested++;
        for (int trial = 0; trial < 4000; trial++) {
            const int nrows = (int)rnd_int(1, CPU_MR), n = (int)rnd_int(1, t[k]->tile_keys);
            const int kind = (int)rnd_int(0, 9);
            int a[CPU_MR], z[CPU_MR];
            float m[CPU_MR], l[CPU_MR], corr[CPU_MR], m2[CPU_MR], l2[CPU_MR], corr2[CPU_MR];
            unsigned char bad[CPU_MR], bad2[CPU_MR];
            for (int i = 0; i < CPU_MR * LD; i++)
                s[i] = 1234.5f; /* sentinel past each row's n */
            for (int row = 0; row < nrows; row++) {
                a[row] = (int)rnd_int(0, n);
                z[row] = (int)rnd_int(0, n);
                if (rnd_int(0, 2) == 0) { /* whole rows often */
                    a[row] = 0;
                    z[row] = n;
                }
                m[row] = rnd_int(0, 3) == 0 ? -INFINITY : rnd_f(-20, 20);
                l[row] = m[row] == -INFINITY ? 0.0f : rnd_f(0, 50);
                bad[row] = (unsigned char)rnd_int(0, 1);
                corr[row] = -7.0f;
                for (int c = 0; c < n; c++) {
                    float x = rnd_f(-40, 15);
                    const int64_t u = rnd_int(0, 99);
                    if (kind == 0) /* only -inf and NaN scores: m_new stays -inf */
                        x = u < 50 ? -INFINITY : NAN;
                    else if (kind == 1)
                        x = -INFINITY;
                    else if (u < 3)
                        x = NAN;
                    else if (u < 6)
                        x = u == 3 ? INFINITY : -INFINITY;
                    else if (u < 8)
                        x = rnd_f(-3e38f, 3e38f);
                    s[(size_t)row * LD + (size_t)c] = x;
                }
            }
            memcpy(r, s, (size_t)CPU_MR * LD * sizeof *s);
            memcpy(m2, m, sizeof m);
            memcpy(l2, l, sizeof l);
            memcpy(bad2, bad, sizeof bad);
            for (int row = 0; row < nrows; row++)
                softmax_rows_ref(t[k], r + (size_t)row * LD, n, a[row], z[row], &m2[row], &l2[row],
                                 &corr2[row], &bad2[row]);
            t[k]->softmax_rows(s, LD, nrows, n, a, z, m, l, corr, bad);
            const int nz = (n + CPU_NR - 1) / CPU_NR * CPU_NR;
            for (int row = 0; row < nrows; row++) {
                const float *sr = s + (size_t)row * LD, *rr = r + (size_t)row * LD;
                cr_assert(memcmp(sr, rr, (size_t)n * sizeof *sr) == 0,
                          "%s softmax_rows P: trial %d row %d n %d [%d, %d)", t[k]->name, trial,
                          row, n, a[row], z[row]);
                for (int c = n; c < LD; c++)
                    cr_assert(c < nz ? sr[c] == 0.0f || sr[c] == 1234.5f : sr[c] == 1234.5f,
                              "%s softmax_rows wrote column %d of n %d", t[k]->name, c, n);
                cr_assert(memcmp(&m[row], &m2[row], sizeof *m) == 0, "%s m: trial %d row %d",
                          t[k]->name, trial, row);
                cr_assert(memcmp(&l[row], &l2[row], sizeof *l) == 0 ||
                              (l[row] != l[row] && l2[row] != l2[row]),
                          "%s l %a, rows %a: trial %d row %d", t[k]->name, (double)l[row],
                          (double)l2[row], trial, row);
                cr_assert(memcmp(&corr[row], &corr2[row], sizeof *corr) == 0,
                          "%s corr: trial %d row %d", t[k]->name, trial, row);
                cr_assert_eq(bad[row], bad2[row], "%s bad: trial %d row %d", t[k]->name, trial,
                             row);
            }
            for (int row = nrows; row < CPU_MR; row++)
                for (int c = 0; c < LD; c++)
                    cr_assert(s[(size_t)row * LD + (size_t)c] == 1234.5f);
        }
    }
    free(s);
    free(r);
    if (!tested)
        cr_skip_test("no table here has softmax_rows");
}

/* scores_softmax (where a table has it) against the same table's scores followed by its
 * softmax_rows: bit for bit on the whole block (P, the columns up to the next multiple of CPU_NR
 * and nothing past them), m, l, the factor and the bad flag, over random row counts, key counts
 * (tails included), depths, intervals (rows keeping nothing, whole rows) and running maxima, with
 * keys that make scores NaN, +-inf (an infinite K element, or an f32 overflow) or -inf for every
 * row.  A third of the trials are blocks whose rows all keep a whole tile of a multiple of
 * CPU_NR keys, the case a kernel may take apart (the AVX2 table's max from the score tiles),
 * some with running maxima just above the least score plus 86, the edge of its cheaper exp. */
static void ssm_fill(float *q, float *kt, int64_t D, int n, int kind)
{
    for (int64_t i = 0; i < CPU_MR * D; i++)
        q[i] = rnd_f(-2, 2);
    for (int64_t i = 0; i < D * CPU_BC; i++)
        kt[i] = rnd_f(-2, 2);
    for (int c = 0; c < n; c++) {
        const int64_t u = rnd_int(0, 99);
        if (kind >= 10) { /* 10: finite scores only; 11: and NaN ones; 12: NaN only */
            if ((kind == 11 && u < 3) || kind == 12)
                kt[c] = NAN;
            continue;
        }
        if (kind == 0 || (kind == 1 && u < 70)) { /* -inf for every row: q[r][0] > 0 */
            kt[c] = -INFINITY;
            continue;
        }
        if (kind == 0 || u < 3)
            kt[c] = NAN;
        else if (u < 6)
            kt[(int64_t)rnd_int(0, D - 1) * CPU_BC + c] = u == 3 ? INFINITY : -INFINITY;
        else if (u < 8)
            kt[c] = rnd_f(1e37f, 3e38f); /* scores overflow for rows with large q[r][0] */
    }
    if (kind <= 1)
        for (int r = 0; r < CPU_MR; r++)
            q[(int64_t)r * D] = rnd_f(0.5f, 2.0f);
    else if (rnd_int(0, 1) == 0)
        for (int r = 0; r < CPU_MR; r++)
            q[(int64_t)r * D] = rnd_f(-1e3f, 1e3f);
}

Test(cpu_kernels, scores_softmax_equals_scores_then_softmax_rows)
{
    const cpu_kernels *t[CPU_TEST_MAX_TABLES];
    const int nt = ntables(t);
    enum { LD = CPU_BC + 16, DMAX = 140 };
    float *q = falloc((size_t)CPU_MR * DMAX), *kt = falloc((size_t)DMAX * CPU_BC);
    float *s = falloc((size_t)CPU_MR * LD), *r = falloc((size_t)CPU_MR * LD);
    int tested = 0;
    for (int k = 0; k < nt; k++) {
        if (!t[k]->scores_softmax)
            continue;
        tested++;
        for (int trial = 0; trial < 3000; trial++) {
            const int whole = trial % 3 == 0, nrows = (int)rnd_int(1, CPU_MR);
            const int n = whole ? CPU_NR * (int)rnd_int(1, t[k]->tile_keys / CPU_NR)
                                : (int)rnd_int(1, t[k]->tile_keys);
            const int64_t D = rnd_int(0, 3) == 0 ? 128 : rnd_int(1, DMAX);
            const int kind = (int)rnd_int(0, whole ? 12 : 9);
            const int ncols = (n + CPU_NR - 1) / CPU_NR * CPU_NR;
            const float sigma = rnd_int(0, 1) ? 1.0f : 1.0f / sqrtf((float)D);
            int a[CPU_MR], z[CPU_MR];
            float m[CPU_MR], l[CPU_MR], corr[CPU_MR], m2[CPU_MR], l2[CPU_MR], corr2[CPU_MR];
            unsigned char bad[CPU_MR], bad2[CPU_MR];
            ssm_fill(q, kt, D, n, kind);
            for (int i = 0; i < CPU_MR * LD; i++)
                s[i] = r[i] = 1234.5f;
            for (int row = 0; row < nrows; row++) {
                a[row] = (int)rnd_int(0, n);
                z[row] = (int)rnd_int(0, n);
                if (whole || rnd_int(0, 2) == 0) {
                    a[row] = 0;
                    z[row] = n;
                }
                m[row] = rnd_int(0, 3) == 0 ? -INFINITY : rnd_f(-20, 20);
                l[row] = m[row] == -INFINITY ? 0.0f : rnd_f(0, 50);
                bad[row] = (unsigned char)rnd_int(0, 1);
                corr[row] = corr2[row] = -7.0f;
            }
            if (whole && kind >= 10 && rnd_int(0, 1) == 0) {
                /* Running maxima that put the rows' least scores 84-88 or 108-112 below them,
                 * across the edge of the exp's range shortcut (AVX2: 86; AVX-512: 110, its
                 * clamp). */
                t[k]->scores(q, (size_t)D, nrows, kt, CPU_BC, ncols, D, sigma, r, LD);
                for (int row = 0; row < nrows; row++) {
                    float lo = INFINITY, hi = -INFINITY;
                    for (int c = 0; c < n; c++) {
                        const float x = r[(size_t)row * LD + (size_t)c];
                        lo = x < lo ? x : lo;
                        hi = x > hi ? x : hi;
                    }
                    const float mr =
                        lo + (rnd_int(0, 1) ? rnd_f(84.0f, 88.0f) : rnd_f(108.0f, 112.0f));
                    if (mr >= hi)
                        m[row] = mr;
                }
            }
            memcpy(m2, m, sizeof m);
            memcpy(l2, l, sizeof l);
            memcpy(bad2, bad, sizeof bad);
            t[k]->scores(q, (size_t)D, nrows, kt, CPU_BC, ncols, D, sigma, r, LD);
            t[k]->softmax_rows(r, LD, nrows, n, a, z, m2, l2, corr2, bad2);
            t[k]->scores_softmax(q, (size_t)D, nrows, kt, CPU_BC, n, D, sigma, s, LD, a, z, m, l,
                                 corr, bad);
            cr_assert(memcmp(s, r, (size_t)CPU_MR * LD * sizeof *s) == 0,
                      "%s scores_softmax P: trial %d rows %d n %d D %lld kind %d", t[k]->name,
                      trial, nrows, n, (long long)D, kind);
            for (int row = 0; row < nrows; row++) {
                cr_assert(memcmp(&m[row], &m2[row], sizeof *m) == 0, "%s m: trial %d row %d",
                          t[k]->name, trial, row);
                cr_assert(memcmp(&l[row], &l2[row], sizeof *l) == 0 ||
                              (l[row] != l[row] && l2[row] != l2[row]),
                          "%s l %a, reference %a: trial %d row %d", t[k]->name, (double)l[row],
                          (double)l2[row], trial, row);
                cr_assert(memcmp(&corr[row], &corr2[row], sizeof *corr) == 0,
                          "%s corr: trial %d row %d", t[k]->name, trial, row);
                cr_assert_eq(bad[row], bad2[row], "%s bad: trial %d row %d", t[k]->name, trial,
                             row);
            }
        }
    }
    free(q);
    free(kt);
    free(s);
    free(r);
    if (!tested)
        cr_skip_test("no table here has scores_softmax");
}
