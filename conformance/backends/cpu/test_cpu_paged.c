/* Tests of the cpu plugin's paged KV members (Criterion): cpu_paged_sdpa against the reference
 * SDPA (attnref_sdpa_f64) and against the plugin's own contiguous SDPA (cpu_sdpa_run), both on
 * each sequence's keys gathered into a contiguous buffer here, on pools whose physical page
 * order is shuffled and fragmented, whose free slots, spare pages and unused table entries are
 * poison (NaN, +-inf, large stale values; unused entries -1 or 2^30, far outside the pool: a
 * read of one faults), with page sizes 1, 3, 16, 48 and 96, last pages of 1 and P slots, empty
 * sequences, padding query rows, GQA, a shared prefix page, the vLLM NHD layout, f32 / f16 /
 * bf16, both kernel tables, 1 and 3 threads (flash-decoding splits), and every term (window,
 * softcap, ALiBi, sinks, chunk, scale).  Then cpu_paged_append's placement across page
 * boundaries (every other pool byte unchanged) and every rejection of both members. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"
#include "attnref/sdpa.h"
#include "cpu_kern.h"
#include "cpu_paged.h"
#include "cpu_sdpa.h"
#include "test_cpu_tables.h"

static uint64_t rng_state = 0x7c4a1e9d3b2f6a85ull;
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

static const int dtypes[3] = {ATTNREF_F32, ATTNREF_F16, ATTNREF_BF16};
static const char *dtname(int dt)
{
    return dt == ATTNREF_F32 ? "f32" : dt == ATTNREF_F16 ? "f16" : "bf16";
}

#define MAXB 4

/* One paged scenario.  Sequence b holds L_b = la[b] * P + lc[b] keys (so last pages of 1 and
 * of P slots at every page size) and min(qn[b], L_b) queries. */
typedef struct pcase {
    const char *name;
    int64_t B, Hq, Hkv, Lq, D, Dv;
    int64_t la[MAXB], lc[MAXB], qn[MAXB];
    int causal;
    int64_t window, chunk;
    double softcap, alibi, scale; /* scale 0: the default */
    int sinks;                    /* 1: a sink logit per head */
    int shared;                   /* 1: row 1's first page is row 0's (a shared prefix) */
    int nhd;                      /* 1: the pool in vLLM's (num_pages, P, Hkv, D) layout */
    int exact;                    /* 1: on one thread, the contiguous cpu output bit for bit */
} pcase;

/* A built scenario: the logical keys (contiguous, row b's first L_b valid), the pool, the
 * table, q and the outputs. */
typedef struct pdata {
    int dt;
    size_t es;
    int64_t P, np, tw, Lmax;
    int64_t L[MAXB], qb[MAXB];
    void *kc, *vc; /* (B, Hkv, Lmax, D / Dv) logical keys and values */
    void *kpool, *vpool;
    attnref_tensor q, kp, vp, out;
    int32_t *table;
    float sinks_f[64];
    double sinks_d[64];
} pdata;

static void *xcalloc(size_t n, size_t s)
{
    void *p = calloc(n ? n : 1, s ? s : 1);
    cr_assert(p);
    return p;
}

/* A poison value in dtype dt: NaN, +inf, -inf or a large finite "stale" value. */
static void poison(void *data, int dt, int64_t x)
{
    static const double v[4] = {NAN, INFINITY, -INFINITY, 60000.0};
    attnref_store(data, (attnref_dtype)dt, x, v[rnd_u64() % 4]);
}

static void pool_view(attnref_tensor *t, void *data, int dt, int64_t np, int64_t hkv, int64_t P,
                      int64_t d, int nhd)
{
    memset(t, 0, sizeof *t);
    t->data = data;
    t->dtype = (attnref_dtype)dt;
    t->ndim = 4;
    const int64_t shape[4] = {np, hkv, P, d};
    memcpy(t->shape, shape, sizeof shape);
    if (nhd) { /* memory (np, P, hkv, d): the permuted view */
        t->strides[0] = P * hkv * d;
        t->strides[1] = d;
        t->strides[2] = hkv * d;
    } else {
        t->strides[0] = hkv * P * d;
        t->strides[1] = P * d;
        t->strides[2] = d;
    }
    t->strides[3] = 1;
}

static void contig(attnref_tensor *t, void *data, int dt, int64_t a, int64_t b, int64_t c,
                   int64_t d)
{
    const int64_t shape[4] = {a, b, c, d};
    attnref_diag diag = {{0}};
    cr_assert_eq(attnref_tensor_init(t, data, (attnref_dtype)dt, 4, shape, &diag), ATTNREF_OK);
}

static void build(const pcase *pc, int dt, int64_t P, pdata *d)
{
    memset(d, 0, sizeof *d);
    d->dt = dt;
    d->es = attnref_dtype_size((attnref_dtype)dt);
    d->P = P;
    int64_t used = 0, maxpages = 0;
    for (int64_t b = 0; b < pc->B; b++) {
        d->L[b] = pc->la[b] * P + pc->lc[b];
        d->qb[b] = pc->qn[b] < d->L[b] ? pc->qn[b] : d->L[b];
        d->Lmax = d->L[b] > d->Lmax ? d->L[b] : d->Lmax;
        const int64_t n = (d->L[b] + P - 1) / P;
        used += n;
        maxpages = n > maxpages ? n : maxpages;
    }
    d->np = used + 3; /* spare pages nobody lists, poisoned */
    d->tw = maxpages + 2;
    const int64_t H = pc->Hkv, D = pc->D, Dv = pc->Dv;
    /* The logical keys and values of each row, then the shared prefix copied from row 0. */
    d->kc = xcalloc((size_t)(pc->B * H * d->Lmax * D), d->es);
    d->vc = xcalloc((size_t)(pc->B * H * d->Lmax * Dv), d->es);
    for (int64_t x = 0; x < pc->B * H * d->Lmax * D; x++)
        attnref_store(d->kc, (attnref_dtype)dt, x, rnd_d(-1, 1));
    for (int64_t x = 0; x < pc->B * H * d->Lmax * Dv; x++)
        attnref_store(d->vc, (attnref_dtype)dt, x, rnd_d(-1, 1));
    if (pc->shared) {
        cr_assert(d->L[0] >= P && d->L[1] >= P);
        for (int64_t h = 0; h < H; h++)
            for (int64_t j = 0; j < P; j++) {
                memcpy((char *)d->kc + (size_t)(((1 * H + h) * d->Lmax + j) * D) * d->es,
                       (char *)d->kc + (size_t)(((0 * H + h) * d->Lmax + j) * D) * d->es,
                       (size_t)D * d->es);
                memcpy((char *)d->vc + (size_t)(((1 * H + h) * d->Lmax + j) * Dv) * d->es,
                       (char *)d->vc + (size_t)(((0 * H + h) * d->Lmax + j) * Dv) * d->es,
                       (size_t)Dv * d->es);
            }
    }
    /* A shuffled physical order: a random permutation of the pool's pages. */
    int32_t *perm = xcalloc((size_t)d->np, sizeof *perm);
    for (int64_t x = 0; x < d->np; x++)
        perm[x] = (int32_t)x;
    for (int64_t x = d->np - 1; x > 0; x--) {
        const int64_t y = (int64_t)(rnd_u64() % (uint64_t)(x + 1));
        const int32_t t = perm[x];
        perm[x] = perm[y];
        perm[y] = t;
    }
    d->table = xcalloc((size_t)(pc->B * d->tw), sizeof *d->table);
    int64_t next = 0;
    for (int64_t b = 0; b < pc->B; b++) {
        const int64_t n = (d->L[b] + P - 1) / P;
        for (int64_t e = 0; e < d->tw; e++)
            d->table[b * d->tw + e] = e < n ? -2 : (e % 2 ? -1 : (int32_t)1 << 30);
        for (int64_t e = 0; e < n; e++)
            d->table[b * d->tw + e] = (pc->shared && b == 1 && e == 0) ? d->table[0] : perm[next++];
    }
    free(perm);
    const int64_t nk = d->np * H * P * D, nv = d->np * H * P * Dv;
    d->kpool = xcalloc((size_t)nk, d->es);
    d->vpool = xcalloc((size_t)nv, d->es);
    for (int64_t x = 0; x < nk; x++)
        poison(d->kpool, dt, x);
    for (int64_t x = 0; x < nv; x++)
        poison(d->vpool, dt, x);
    pool_view(&d->kp, d->kpool, dt, d->np, H, P, D, pc->nhd);
    pool_view(&d->vp, d->vpool, dt, d->np, H, P, Dv, pc->nhd);
    for (int64_t b = 0; b < pc->B; b++)
        for (int64_t j = 0; j < d->L[b]; j++) {
            const int64_t page = d->table[b * d->tw + j / P], slot = j % P;
            for (int64_t h = 0; h < H; h++) {
                const int64_t ko =
                    page * d->kp.strides[0] + h * d->kp.strides[1] + slot * d->kp.strides[2];
                const int64_t vo =
                    page * d->vp.strides[0] + h * d->vp.strides[1] + slot * d->vp.strides[2];
                memcpy((char *)d->kpool + (size_t)ko * d->es,
                       (char *)d->kc + (size_t)(((b * H + h) * d->Lmax + j) * D) * d->es,
                       (size_t)D * d->es);
                memcpy((char *)d->vpool + (size_t)vo * d->es,
                       (char *)d->vc + (size_t)(((b * H + h) * d->Lmax + j) * Dv) * d->es,
                       (size_t)Dv * d->es);
            }
        }
    void *qd = xcalloc((size_t)(pc->B * pc->Hq * pc->Lq * D), d->es);
    contig(&d->q, qd, dt, pc->B, pc->Hq, pc->Lq, D);
    for (int64_t x = 0; x < pc->B * pc->Hq * pc->Lq * D; x++)
        attnref_store(qd, (attnref_dtype)dt, x, rnd_d(-1, 1));
    void *od = xcalloc((size_t)(pc->B * pc->Hq * pc->Lq * Dv), 4);
    contig(&d->out, od, dt, pc->B, pc->Hq, pc->Lq, Dv);
    /* NaN bytes: a row the call never writes fails the comparisons (calloc's +0 would pass
     * for a row of no keys). */
    memset(od, 0xff, (size_t)(pc->B * pc->Hq * pc->Lq * Dv) * 4);
    for (int64_t h = 0; h < pc->Hq && h < 64; h++) {
        d->sinks_f[h] = (float)rnd_d(-2, 2);
        d->sinks_d[h] = d->sinks_f[h];
    }
}

static void unbuild(pdata *d)
{
    free(d->kc);
    free(d->vc);
    free(d->kpool);
    free(d->vpool);
    free(d->table);
    free(d->q.data);
    free(d->out.data);
}

static attnconf_tensor host(const attnref_tensor *t)
{
    attnconf_tensor h;
    memset(&h, 0, sizeof h);
    h.data = t->data;
    h.dtype = (int32_t)t->dtype;
    h.ndim = t->ndim;
    for (int x = 0; x < 4; x++) {
        h.shape[x] = t->shape[x];
        h.strides[x] = t->strides[x];
    }
    return h;
}

/* The host arguments of scenario pc over d (tensors in *ht: q, k_pages, v_pages, out). */
static attnconf_paged_args args_of(const pcase *pc, pdata *d, attnconf_tensor *ht)
{
    ht[0] = host(&d->q);
    ht[1] = host(&d->kp);
    ht[2] = host(&d->vp);
    ht[3] = host(&d->out);
    attnconf_paged_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.q = &ht[0];
    a.k_pages = &ht[1];
    a.v_pages = &ht[2];
    a.block_table = d->table;
    a.table_width = d->tw;
    a.seq_lens = d->L;
    a.query_lens = d->qb;
    a.causal = pc->causal;
    a.window = pc->window;
    a.has_scale = pc->scale != 0.0;
    a.scale = pc->scale;
    a.softcap = pc->softcap;
    a.alibi_max_bias = pc->alibi;
    a.sinks = pc->sinks ? d->sinks_f : NULL;
    a.chunk = pc->chunk;
    a.out = &ht[3];
    a.out_capacity = (size_t)(pc->B * pc->Hq * pc->Lq * pc->Dv) * 4;
    return a;
}

static double ulp_dt(double x, int dt)
{
    const int p = dt == ATTNREF_F32 ? 24 : dt == ATTNREF_F16 ? 11 : 8;
    const int emin = dt == ATTNREF_F16 ? -14 : -126;
    int e;
    frexp(fabs(x), &e);
    if (x == 0.0 || e - 1 < emin)
        e = emin + 1;
    return ldexp(1.0, e - p);
}

/* Run pc at page size P in dtype dt on kernel table K with `threads` threads; compare every
 * output row with the reference and with cpu_sdpa_run on the gathered keys. */
static void check(const pcase *pc, int dt, int64_t P, const cpu_kernels *K, int threads)
{
    pdata d;
    build(pc, dt, P, &d);
    attnconf_tensor ht[4];
    attnconf_paged_args a = args_of(pc, &d, ht);
    cpu_engine eng;
    cr_assert_eq(cpu_engine_init(&eng, threads, K), 0);
    rb_ctx ctx = {{0}};
    const int rc = cpu_paged_sdpa(&ctx, &eng, &a);
    cr_assert_eq(rc, ATTNCONF_OK, "%s P=%lld %s: paged_sdpa %d: %s", pc->name, (long long)P,
                 dtname(dt), rc, ctx.err);
    cr_assert_eq(ht[3].dtype, dt);

    const int64_t Hq = pc->Hq, Lq = pc->Lq, Dv = pc->Dv, H = pc->Hkv;
    for (int64_t b = 0; b < pc->B; b++) {
        const int64_t L = d.L[b], qn = d.qb[b];
        const char *ob = (const char *)d.out.data + (size_t)(b * Hq * Lq * Dv) * d.es;
        double *want = NULL;
        void *mine = NULL;
        if (qn > 0) {
            /* Row b's queries and its keys gathered, as contiguous SDPA sees them. */
            attnref_tensor qv = d.q, kv, vv, ov;
            qv.data = (char *)d.q.data + (size_t)(b * d.q.strides[0]) * d.es;
            qv.shape[0] = 1;
            qv.shape[2] = qn;
            contig(&kv, (char *)d.kc + (size_t)(b * H * d.Lmax * pc->D) * d.es, dt, 1, H, d.Lmax,
                   pc->D);
            contig(&vv, (char *)d.vc + (size_t)(b * H * d.Lmax * Dv) * d.es, dt, 1, H, d.Lmax, Dv);
            kv.shape[2] = vv.shape[2] = L;
            const attnref_sdpa_params p = {.has_scale = pc->scale != 0.0,
                                           .scale = pc->scale,
                                           .causal = pc->causal,
                                           .has_causal_offset = 1,
                                           .causal_offset = L - qn,
                                           .window = pc->window,
                                           .softcap = pc->softcap,
                                           .alibi_max_bias = pc->alibi,
                                           .sinks = pc->sinks ? d.sinks_d : NULL,
                                           .chunk = pc->chunk};
            want = xcalloc((size_t)(Hq * qn * Dv), sizeof *want);
            attnref_diag diag = {{0}};
            cr_assert_eq(attnref_sdpa_f64(&qv, &kv, &vv, NULL, &p, want, &diag), ATTNREF_OK,
                         "%s: attnref_sdpa_f64: %s", pc->name, diag.msg);
            mine = xcalloc((size_t)(Hq * qn * Dv), d.es);
            contig(&ov, mine, dt, 1, Hq, qn, Dv);
            char err[256] = "";
            cr_assert_eq(cpu_sdpa_run(&eng, &qv, &kv, &vv, NULL, &p, &ov, err, sizeof err), 0,
                         "%s: cpu_sdpa_run: %s", pc->name, err);
        }
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Lq; i++)
                for (int64_t e = 0; e < Dv; e++) {
                    const int64_t x = (h * Lq + i) * Dv + e;
                    const double g = attnref_load(ob, (attnref_dtype)dt, x);
                    if (i >= qn) {
                        cr_assert(g == 0.0 && !signbit(g),
                                  "%s P=%lld %s (%s, %d threads): padding row (%lld, %lld, "
                                  "%lld)[%lld] = %g, not +0",
                                  pc->name, (long long)P, dtname(dt), K->name, threads,
                                  (long long)b, (long long)h, (long long)i, (long long)e, g);
                        continue;
                    }
                    const int64_t y = (h * qn + i) * Dv + e;
                    const double w = want[y];
                    const double c = attnref_load(mine, (attnref_dtype)dt, y);
                    /* f32 arithmetic on inputs in [-1, 1] (1e-4 covers the ALiBi biases of a
                     * few hundred keys), then one rounding to the dtype. */
                    const double tol = 1e-4 + ulp_dt(fabs(w) + 1e-4, dt);
                    cr_assert(fabs(g - w) <= tol,
                              "%s P=%lld %s (%s, %d threads): out[%lld, %lld, %lld, %lld] = "
                              "%.9g, reference %.9g (L_b %lld, q_b %lld)",
                              pc->name, (long long)P, dtname(dt), K->name, threads, (long long)b,
                              (long long)h, (long long)i, (long long)e, g, w, (long long)L,
                              (long long)qn);
                    /* One thread splits no row, so paged decode runs the contiguous call's
                     * tiles: the same arithmetic in the same order, whatever the pages. */
                    cr_assert(!pc->exact || threads != 1 || memcmp(&g, &c, sizeof g) == 0,
                              "%s P=%lld %s (%s, 1 thread): out[%lld, %lld, %lld, %lld] = %a, "
                              "contiguous cpu %a: not the same bits",
                              pc->name, (long long)P, dtname(dt), K->name, (long long)b,
                              (long long)h, (long long)i, (long long)e, g, c);
                    cr_assert(fabs(g - c) <= tol,
                              "%s P=%lld %s (%s, %d threads): out[%lld, %lld, %lld, %lld] = "
                              "%.9g, contiguous cpu %.9g",
                              pc->name, (long long)P, dtname(dt), K->name, threads, (long long)b,
                              (long long)h, (long long)i, (long long)e, g, c);
                }
        free(want);
        free(mine);
    }
    cpu_engine_free(&eng);
    unbuild(&d);
}

static const int64_t page_sizes[5] = {1, 3, 16, 48, 96};

static void run_case(const pcase *pc)
{
    const cpu_kernels *t[CPU_TEST_MAX_TABLES];
    const int nt = ntables(t);
    for (int x = 0; x < 3; x++)
        for (int y = 0; y < 5; y++)
            for (int k = 0; k < nt; k++)
                for (int th = 1; th <= 3; th += 2)
                    check(pc, dtypes[x], page_sizes[y], t[k], th);
}

/* Decode, the serving case: GQA 4, rows of 0 keys, of 2P + 1 (a last page of 1 slot), 3P (a
 * full last page) and 130 (+ 1 * P) keys, one query each (none for the empty row). */
#define DECODE_ROWS                                                                                \
    .B = 4, .Hq = 8, .Hkv = 2, .Lq = 1, .D = 32, .Dv = 32, .la = {0, 2, 3, 1},                     \
    .lc = {0, 1, 0, 130}, .qn = {1, 1, 1, 1}

Test(cpu_paged, decode)
{
    const pcase pc = {.name = "decode", DECODE_ROWS};
    run_case(&pc);
}

Test(cpu_paged, decode_nhd_shared_prefix)
{
    const pcase pc = {.name = "decode_nhd_shared",
                      .B = 2,
                      .Hq = 6,
                      .Hkv = 3,
                      .Lq = 1,
                      .D = 16,
                      .Dv = 24,
                      .la = {2, 1},
                      .lc = {5, 1},
                      .qn = {1, 1},
                      .shared = 1,
                      .nhd = 1};
    run_case(&pc);
}

/* One long sequence (flash-decoding splits on 3 threads, tiles across pages). */
Test(cpu_paged, decode_long_split)
{
    const pcase pc = {.name = "decode_long",
                      .B = 1,
                      .Hq = 4,
                      .Hkv = 1,
                      .Lq = 1,
                      .D = 64,
                      .Dv = 64,
                      .la = {1},
                      .lc = {700},
                      .qn = {1}};
    run_case(&pc);
}

/* Decode with its kv heads bundled (cpu_sdpa.c bundle_run: pages of fewer than 64 KiB per head):
 * ten kv heads, so a bundle of eight and one of two, and rows long enough for flash-decoding
 * to split them on 3 threads, each part running every head of a bundle tile by tile. */
Test(cpu_paged, decode_bundles_split)
{
    const pcase pc = {.name = "decode_bundles",
                      .B = 2,
                      .Hq = 20,
                      .Hkv = 10,
                      .Lq = 1,
                      .D = 16,
                      .Dv = 24,
                      .la = {2, 1},
                      .lc = {600, 37},
                      .qn = {1, 1}};
    run_case(&pc);
}

/* Bundled decode tile by tile, page by page (cpu_sdpa.c bundle_tile, pages of 16 and more):
 * eight kv heads of G 4, D 128, rows of 2P + 300 and P + 260 keys (partial last tiles; at
 * P 48 a last tile in one page, which runs head by head), so that, on one thread, the output
 * is the contiguous call's bit for bit at every page size. */
Test(cpu_paged, decode_bundles_exact)
{
    const pcase pc = {.name = "decode_bundles_exact",
                      .B = 2,
                      .Hq = 32,
                      .Hkv = 8,
                      .Lq = 1,
                      .D = 128,
                      .Dv = 128,
                      .la = {2, 1},
                      .lc = {300, 260},
                      .qn = {1, 1},
                      .exact = 1};
    run_case(&pc);
}

/* The same bundles with every row in binary64 (a softcap above 2^100: cpu_sdpa.c's f64 rows),
 * so no bundled item runs a tile: its rows are written when it starts, or by the merge when
 * split. */
Test(cpu_paged, decode_bundles_f64_rows)
{
    const pcase pc = {.name = "decode_bundles_f64",
                      .B = 2,
                      .Hq = 20,
                      .Hkv = 10,
                      .Lq = 1,
                      .D = 16,
                      .Dv = 24,
                      .la = {2, 1},
                      .lc = {600, 37},
                      .qn = {1, 1},
                      .softcap = 1e31};
    run_case(&pc);
}

/* Bundles of eight and a remainder of one (17 kv heads, G = 1), D and Dv not multiples of 16,
 * the NHD pool, a shared prefix page, rows of 0 keys and of no query next to long rows. */
Test(cpu_paged, decode_bundles_17_heads_nhd)
{
    const pcase pc = {.name = "decode_bundles_17",
                      .B = 4,
                      .Hq = 17,
                      .Hkv = 17,
                      .Lq = 1,
                      .D = 20,
                      .Dv = 40,
                      .la = {2, 1, 0, 1},
                      .lc = {300, 5, 0, 1},
                      .qn = {1, 1, 1, 0},
                      .shared = 1,
                      .nhd = 1,
                      .exact = 1};
    run_case(&pc);
}

/* Two bundles of exactly eight (16 kv heads), G = 1, every term on bundled causal decode. */
Test(cpu_paged, decode_bundles_16_heads_terms)
{
    const pcase pc = {.name = "decode_bundles_16_terms",
                      .B = 3,
                      .Hq = 16,
                      .Hkv = 16,
                      .Lq = 1,
                      .D = 24,
                      .Dv = 8,
                      .la = {1, 0, 3},
                      .lc = {200, 0, 2},
                      .qn = {1, 0, 1},
                      .causal = 1,
                      .window = 150,
                      .softcap = 0.7,
                      .alibi = 4.0,
                      .sinks = 1,
                      .exact = 1};
    run_case(&pc);
}

/* G = 8 (Lq * G = 8 rows per item: the most a bundle takes), 8 kv heads, chunked causal decode
 * with sinks and ALiBi. */
Test(cpu_paged, decode_bundles_g8_chunk)
{
    const pcase pc = {.name = "decode_bundles_g8",
                      .B = 2,
                      .Hq = 64,
                      .Hkv = 8,
                      .Lq = 1,
                      .D = 40,
                      .Dv = 33,
                      .la = {1, 2},
                      .lc = {260, 9},
                      .qn = {1, 1},
                      .causal = 1,
                      .chunk = 100,
                      .alibi = 1.0,
                      .sinks = 1};
    run_case(&pc);
}

/* Two query rows per sequence (speculative decode: Lq * G = 8, bundled), q_b of 2, 1 and 0,
 * 9 kv heads (a bundle of eight and one of one), a window and a softcap. */
Test(cpu_paged, decode_bundles_two_rows_9_heads)
{
    const pcase pc = {.name = "decode_bundles_lq2",
                      .B = 3,
                      .Hq = 36,
                      .Hkv = 9,
                      .Lq = 2,
                      .D = 17,
                      .Dv = 31,
                      .la = {2, 1, 1},
                      .lc = {333, 1, 0},
                      .qn = {2, 1, 0},
                      .causal = 1,
                      .window = 64,
                      .softcap = 2.0,
                      .nhd = 1};
    run_case(&pc);
}

/* Bundled rows whose f32 scores overflow (scale 1e38: each row is redone in binary64 from its
 * item's own scratch block, cpu_sdpa.c row_f64), 11 kv heads, split on 3 threads. */
Test(cpu_paged, decode_bundles_overflow_rows)
{
    const pcase pc = {.name = "decode_bundles_overflow",
                      .B = 2,
                      .Hq = 22,
                      .Hkv = 11,
                      .Lq = 1,
                      .D = 16,
                      .Dv = 16,
                      .la = {2, 0},
                      .lc = {400, 3},
                      .qn = {1, 1},
                      .scale = 1e38};
    run_case(&pc);
}

/* Chunked prefill: 20 query rows (the packed kernels: 80 rows per item), q_b 20, 1, 0 and 7,
 * causal bottom-right per sequence. */
#define PREFILL_ROWS                                                                               \
    .B = 4, .Hq = 4, .Hkv = 1, .Lq = 20, .D = 24, .Dv = 16, .la = {1, 2, 0, 1},                    \
    .lc = {20, 1, 0, 40}, .qn = {20, 1, 0, 7}, .causal = 1

Test(cpu_paged, prefill_causal)
{
    const pcase pc = {.name = "prefill", PREFILL_ROWS};
    run_case(&pc);
}

Test(cpu_paged, prefill_not_causal_scale)
{
    const pcase pc = {.name = "prefill_noncausal", PREFILL_ROWS, .scale = 0.3};
    pcase p2 = pc;
    p2.causal = 0;
    run_case(&p2);
}

Test(cpu_paged, terms_window)
{
    const pcase pc = {.name = "window", PREFILL_ROWS, .window = 9};
    run_case(&pc);
}

Test(cpu_paged, terms_softcap)
{
    const pcase pc = {.name = "softcap", PREFILL_ROWS, .softcap = 0.5, .scale = 4.0};
    run_case(&pc);
}

Test(cpu_paged, terms_alibi)
{
    const pcase pc = {.name = "alibi", PREFILL_ROWS, .alibi = 8.0};
    const pcase dc = {.name = "alibi_decode", DECODE_ROWS, .alibi = 2.0};
    run_case(&pc);
    run_case(&dc);
}

Test(cpu_paged, terms_sinks)
{
    const pcase pc = {.name = "sinks", PREFILL_ROWS, .sinks = 1};
    const pcase dc = {.name = "sinks_decode", DECODE_ROWS, .sinks = 1};
    run_case(&pc);
    run_case(&dc);
}

Test(cpu_paged, terms_chunk)
{
    const pcase pc = {.name = "chunk", PREFILL_ROWS, .chunk = 7};
    run_case(&pc);
}

/* ---- paged_append ------------------------------------------------------------------------ */

/* Append S = 5 tokens (new_lens 5, 0, 3) to rows of 2P - 2, 0 and P - 1 keys, crossing page
 * boundaries; every new slot must hold its token bit for bit and every other pool byte stay. */
static void append_case(int dt, int64_t P, int nhd)
{
    const int64_t B = 3, H = 2, S = 5, D = 8, Dv = 4;
    const int64_t L0[3] = {2 * P - 2, 0, P - 1}, nl[3] = {5, 0, 3};
    const size_t es = attnref_dtype_size((attnref_dtype)dt);
    const int64_t tw = 3 + (S + P - 1) / P + 2, np = B * tw + 2;
    int32_t *table = xcalloc((size_t)(B * tw), sizeof *table);
    int32_t *perm = xcalloc((size_t)np, sizeof *perm);
    for (int64_t x = 0; x < np; x++)
        perm[x] = (int32_t)x;
    for (int64_t x = np - 1; x > 0; x--) {
        const int64_t y = (int64_t)(rnd_u64() % (uint64_t)(x + 1));
        const int32_t t = perm[x];
        perm[x] = perm[y];
        perm[y] = t;
    }
    int64_t next = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t e = 0; e < tw; e++) {
            const int64_t need = (L0[b] + nl[b] + P - 1) / P;
            table[b * tw + e] = e < need ? perm[next++] : -1;
        }
    free(perm);
    void *kpool = xcalloc((size_t)(np * H * P * D), es),
         *vpool = xcalloc((size_t)(np * H * P * Dv), es);
    for (int64_t x = 0; x < np * H * P * D; x++)
        poison(kpool, dt, x);
    for (int64_t x = 0; x < np * H * P * Dv; x++)
        poison(vpool, dt, x);
    void *ksnap = xcalloc((size_t)(np * H * P * D), es),
         *vsnap = xcalloc((size_t)(np * H * P * Dv), es);
    memcpy(ksnap, kpool, (size_t)(np * H * P * D) * es);
    memcpy(vsnap, vpool, (size_t)(np * H * P * Dv) * es);
    attnref_tensor kp, vp, k, v;
    pool_view(&kp, kpool, dt, np, H, P, D, nhd);
    pool_view(&vp, vpool, dt, np, H, P, Dv, nhd);
    void *kd = xcalloc((size_t)(B * H * S * D), es), *vd = xcalloc((size_t)(B * H * S * Dv), es);
    contig(&k, kd, dt, B, H, S, D);
    contig(&v, vd, dt, B, H, S, Dv);
    for (int64_t x = 0; x < B * H * S * D; x++)
        attnref_store(kd, (attnref_dtype)dt, x, rnd_d(-4, 4));
    for (int64_t x = 0; x < B * H * S * Dv; x++)
        attnref_store(vd, (attnref_dtype)dt, x, rnd_d(-4, 4));
    attnconf_tensor hk = host(&k), hv = host(&v), hkp = host(&kp), hvp = host(&vp);
    const attnconf_paged_append_args a = {.struct_size = sizeof a,
                                          .k = &hk,
                                          .v = &hv,
                                          .k_pages = &hkp,
                                          .v_pages = &hvp,
                                          .block_table = table,
                                          .table_width = tw,
                                          .seq_lens = L0,
                                          .new_lens = nl};
    rb_ctx ctx = {{0}};
    cr_assert_eq(cpu_paged_append(&ctx, &a), ATTNCONF_OK, "append: %s", ctx.err);
    /* Put the expected tokens into the snapshot, then compare every byte. */
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < nl[b]; t++) {
            const int64_t pos = L0[b] + t, page = table[b * tw + pos / P], slot = pos % P;
            for (int64_t h = 0; h < H; h++) {
                for (int64_t x = 0; x < D; x++)
                    memcpy((char *)ksnap + (size_t)(page * kp.strides[0] + h * kp.strides[1] +
                                                    slot * kp.strides[2] + x) *
                                               es,
                           (char *)kd + (size_t)(((b * H + h) * S + t) * D + x) * es, es);
                for (int64_t x = 0; x < Dv; x++)
                    memcpy((char *)vsnap + (size_t)(page * vp.strides[0] + h * vp.strides[1] +
                                                    slot * vp.strides[2] + x) *
                                               es,
                           (char *)vd + (size_t)(((b * H + h) * S + t) * Dv + x) * es, es);
            }
        }
    cr_assert(memcmp(ksnap, kpool, (size_t)(np * H * P * D) * es) == 0,
              "append P=%lld %s: K pool differs from the expected bytes", (long long)P, dtname(dt));
    cr_assert(memcmp(vsnap, vpool, (size_t)(np * H * P * Dv) * es) == 0,
              "append P=%lld %s: V pool differs from the expected bytes", (long long)P, dtname(dt));
    free(table);
    free(kpool);
    free(vpool);
    free(ksnap);
    free(vsnap);
    free(kd);
    free(vd);
}

Test(cpu_paged, append_across_pages)
{
    for (int x = 0; x < 3; x++)
        for (int y = 0; y < 5; y++)
            for (int nhd = 0; nhd < 2; nhd++)
                append_case(dtypes[x], page_sizes[y], nhd);
}

/* ---- rejections -------------------------------------------------------------------------- */

/* A valid decode call (f32, P = 4) to break one field at a time. */
typedef struct bad {
    pdata d;
    attnconf_tensor ht[4];
    attnconf_paged_args a;
    cpu_engine eng;
    rb_ctx ctx;
    unsigned char *snap;
    size_t out_bytes;
} bad;

static const pcase bad_case = {.name = "bad", DECODE_ROWS, .causal = 0};

static void bad_make(bad *x)
{
    memset(x, 0, sizeof *x);
    build(&bad_case, ATTNREF_F32, 4, &x->d);
    x->a = args_of(&bad_case, &x->d, x->ht);
    cr_assert_eq(cpu_engine_init(&x->eng, 1, &cpu_kernels_portable), 0);
    x->out_bytes = x->a.out_capacity;
    memset(x->d.out.data, 0x5a, x->out_bytes);
    x->snap = xcalloc(x->out_bytes, 1);
    memcpy(x->snap, x->d.out.data, x->out_bytes);
}

/* The call must fail with code and a message containing `text`, writing nothing. */
static void bad_expect(bad *x, int code, const char *text, const char *what)
{
    const int rc = cpu_paged_sdpa(&x->ctx, &x->eng, &x->a);
    cr_assert_eq(rc, code, "%s: code %d, expected %d (%s)", what, rc, code, x->ctx.err);
    cr_assert(strstr(x->ctx.err, text), "%s: message '%s' lacks '%s'", what, x->ctx.err, text);
    cr_assert(memcmp(x->snap, x->d.out.data, x->out_bytes) == 0, "%s: out was written", what);
    x->ctx.err[0] = '\0';
}

static void bad_free(bad *x)
{
    cpu_engine_free(&x->eng);
    unbuild(&x->d);
    free(x->snap);
}

Test(cpu_paged, sdpa_rejections)
{
    bad x;
    bad_make(&x);
    /* The valid call passes (and the unused -1 / 2^30 entries are not errors). */
    cr_assert_eq(cpu_paged_sdpa(&x.ctx, &x.eng, &x.a), ATTNCONF_OK, "%s", x.ctx.err);
    memcpy(x.d.out.data, x.snap, x.out_bytes);
    const attnconf_paged_args ok = x.a;
    cr_assert_eq(cpu_paged_sdpa(&x.ctx, &x.eng, NULL), ATTNCONF_EINVAL);

#define BAD(code, text, stmt)                                                                      \
    do {                                                                                           \
        x.a = ok;                                                                                  \
        attnconf_tensor sv[4];                                                                     \
        memcpy(sv, x.ht, sizeof sv);                                                               \
        int64_t Ls[MAXB], Qs[MAXB];                                                                \
        memcpy(Ls, x.d.L, sizeof Ls);                                                              \
        memcpy(Qs, x.d.qb, sizeof Qs);                                                             \
        const int32_t t0 = x.d.table[0], t1 = x.d.table[x.d.tw + 1];                               \
        stmt;                                                                                      \
        bad_expect(&x, code, text, #stmt);                                                         \
        memcpy(x.ht, sv, sizeof sv);                                                               \
        memcpy(x.d.L, Ls, sizeof Ls);                                                              \
        memcpy(x.d.qb, Qs, sizeof Qs);                                                             \
        x.d.table[0] = t0;                                                                         \
        x.d.table[x.d.tw + 1] = t1;                                                                \
    } while (0)

    BAD(ATTNCONF_EINVAL, "struct_size", x.a.struct_size = 8);
    BAD(ATTNCONF_EINVAL, "q is NULL", x.a.q = NULL);
    BAD(ATTNCONF_EINVAL, "k_pages is NULL", x.a.k_pages = NULL);
    BAD(ATTNCONF_EINVAL, "out is NULL", x.a.out = NULL);
    BAD(ATTNCONF_EINVAL, "block_table is NULL", x.a.block_table = NULL);
    BAD(ATTNCONF_EINVAL, "seq_lens is NULL", x.a.seq_lens = NULL);
    BAD(ATTNCONF_EINVAL, "k_pages: rank 3", x.ht[1].ndim = 3);
    BAD(ATTNCONF_EDTYPE, "v_pages: dtype f16 differs", x.ht[2].dtype = ATTNCONF_F16);
    BAD(ATTNCONF_EDTYPE, "k_pages: dtype bf16 differs", x.ht[1].dtype = ATTNCONF_BF16);
    BAD(ATTNCONF_EDTYPE, "not f32, f16 or bf16", x.ht[0].dtype = ATTNCONF_BOOL);
    BAD(ATTNCONF_EINVAL, "v_pages: 2 pages", x.ht[2].shape[0] = 2);
    BAD(ATTNCONF_EINVAL, "slots per page", x.ht[2].shape[2] = 3);
    BAD(ATTNCONF_EINVAL, "kv heads", x.ht[2].shape[1] = 1);
    BAD(ATTNCONF_EINVAL, "k_pages: head_dim D = 16", x.ht[1].shape[3] = 16);
    BAD(ATTNCONF_EINVAL, "GQA", (x.ht[1].shape[1] = 3, x.ht[2].shape[1] = 3));
    BAD(ATTNCONF_EINVAL, "out: shape", x.ht[3].shape[3] = 31);
    BAD(ATTNCONF_EINVAL, "out_capacity", x.a.out_capacity = 16);
    BAD(ATTNCONF_EINVAL, "table_width: 0", x.a.table_width = 0);
    BAD(ATTNCONF_EINVAL, "seq_lens[1]: -1 is negative", x.d.L[1] = -1);
    BAD(ATTNCONF_EINVAL, "but a block table row has table_width", x.d.L[2] = x.d.tw * 4 + 1);
    BAD(ATTNCONF_EINVAL, "query_lens[3]: 2 is outside 0..Lq = 1", x.d.qb[3] = 2);
    BAD(ATTNCONF_EINVAL, "query_lens[0]: -1 is outside", x.d.qb[0] = -1);
    BAD(ATTNCONF_EINVAL, "query_lens[0]: 1 queries, but seq_lens[0] = 0", x.d.qb[0] = 1);
    /* NULL query_lens means Lq = 1 each: row 0 holds no key. */
    BAD(ATTNCONF_EINVAL, "query_lens[0]: 1 queries", x.a.query_lens = NULL);
    BAD(ATTNCONF_EINVAL, "block_table[1][1]: page -1", x.d.table[x.d.tw + 1] = -1);
    BAD(ATTNCONF_EINVAL, "is outside the pool", x.d.table[x.d.tw + 1] = (int32_t)x.d.np);
    BAD(ATTNCONF_EINVAL, "window", x.a.window = -1);
    BAD(ATTNCONF_EINVAL, "window", x.a.window = 4); /* without causal */
    BAD(ATTNCONF_EINVAL, "chunk", x.a.chunk = 4);   /* without causal */
    BAD(ATTNCONF_EINVAL, "chunk", (x.a.causal = 1, x.a.chunk = -2));
    BAD(ATTNCONF_EINVAL, "softcap", x.a.softcap = -1.0);
    BAD(ATTNCONF_EINVAL, "softcap", x.a.softcap = INFINITY);
    BAD(ATTNCONF_EINVAL, "alibi_max_bias", x.a.alibi_max_bias = NAN);
    BAD(ATTNCONF_EINVAL, "sinks[3]", (x.d.sinks_f[3] = NAN, x.a.sinks = x.d.sinks_f));
    BAD(ATTNCONF_EINVAL, "scale", (x.a.has_scale = 1, x.a.scale = INFINITY));
    BAD(ATTNCONF_EINVAL, "outside the f32 range", (x.a.has_scale = 1, x.a.scale = 1e39));
#undef BAD
    bad_free(&x);
}

Test(cpu_paged, append_rejections)
{
    const int64_t P = 4, np = 6, tw = 3, B = 2, H = 2, S = 3, D = 8;
    float *kpool = xcalloc((size_t)(np * H * P * D), 4),
          *vpool = xcalloc((size_t)(np * H * P * D), 4);
    float *snap = xcalloc((size_t)(np * H * P * D), 4);
    for (int64_t x = 0; x < np * H * P * D; x++)
        kpool[x] = vpool[x] = (float)x;
    memcpy(snap, kpool, (size_t)(np * H * P * D) * 4);
    float *kd = xcalloc((size_t)(B * H * S * D), 4);
    attnref_tensor kp, k;
    pool_view(&kp, kpool, ATTNREF_F32, np, H, P, D, 0);
    contig(&k, kd, ATTNREF_F32, B, H, S, D);
    attnconf_tensor hk = host(&k), hv = host(&k), hkp = host(&kp), hvp = host(&kp);
    hvp.data = vpool;
    /* Row 0: 3 keys + 3 = 6 (entries 0, 1), row 1: 8 + 3 = 11 (entries 2 only: 0 and 1 are
     * older positions, never checked by an append). */
    int32_t table[6] = {5, 0, -1, -7, 99, 3};
    int64_t L[2] = {3, 8}, nl[2] = {3, 3};
    const attnconf_paged_append_args ok = {.struct_size = sizeof ok,
                                           .k = &hk,
                                           .v = &hv,
                                           .k_pages = &hkp,
                                           .v_pages = &hvp,
                                           .block_table = table,
                                           .table_width = tw,
                                           .seq_lens = L,
                                           .new_lens = nl};
    rb_ctx ctx = {{0}};
    attnconf_paged_append_args a;
#define BADA(code, text, stmt)                                                                     \
    do {                                                                                           \
        a = ok;                                                                                    \
        const attnconf_tensor s0 = hk, s1 = hv, s2 = hkp;                                          \
        int32_t st[6];                                                                             \
        memcpy(st, table, sizeof st);                                                              \
        const int64_t l0 = L[0], l1 = L[1], n0 = nl[0], n1 = nl[1];                                \
        stmt;                                                                                      \
        const int rc = cpu_paged_append(&ctx, &a);                                                 \
        cr_assert_eq(rc, code, "%s: code %d (%s)", #stmt, rc, ctx.err);                            \
        cr_assert(strstr(ctx.err, text), "%s: message '%s' lacks '%s'", #stmt, ctx.err, text);     \
        cr_assert(memcmp(snap, kpool, (size_t)(np * H * P * D) * 4) == 0, "%s: K pool changed",    \
                  #stmt);                                                                          \
        cr_assert(memcmp(snap, vpool, (size_t)(np * H * P * D) * 4) == 0, "%s: V pool changed",    \
                  #stmt);                                                                          \
        hk = s0;                                                                                   \
        hv = s1;                                                                                   \
        hkp = s2;                                                                                  \
        memcpy(table, st, sizeof st);                                                              \
        L[0] = l0, L[1] = l1, nl[0] = n0, nl[1] = n1;                                              \
    } while (0)

    cr_assert_eq(cpu_paged_append(&ctx, NULL), ATTNCONF_EINVAL);
    BADA(ATTNCONF_EINVAL, "struct_size", a.struct_size = 4);
    BADA(ATTNCONF_EINVAL, "k is NULL", a.k = NULL);
    BADA(ATTNCONF_EINVAL, "v_pages is NULL", a.v_pages = NULL);
    BADA(ATTNCONF_EINVAL, "block_table is NULL", a.block_table = NULL);
    BADA(ATTNCONF_EDTYPE, "k_pages: dtype f16", hkp.dtype = ATTNCONF_F16);
    BADA(ATTNCONF_EDTYPE, "v: dtype bf16", hv.dtype = ATTNCONF_BF16);
    BADA(ATTNCONF_EINVAL, "v: 2 tokens (S)", hv.shape[2] = 2);
    BADA(ATTNCONF_EINVAL, "k: 1 kv heads", (hk.shape[1] = 1, hv.shape[1] = 1));
    BADA(ATTNCONF_EINVAL, "k: head_dim D = 4", hk.shape[3] = 4);
    BADA(ATTNCONF_EINVAL, "table_width: 0", a.table_width = 0);
    BADA(ATTNCONF_EINVAL, "seq_lens[1]: -2 is negative", L[1] = -2);
    BADA(ATTNCONF_EINVAL, "seq_lens[0]: 13 keys", L[0] = 13);
    BADA(ATTNCONF_EINVAL, "new_lens[1]: 4 is outside 0..S = 3", nl[1] = 4);
    BADA(ATTNCONF_EINVAL, "new_lens[0]: -1 is outside", nl[0] = -1);
    BADA(ATTNCONF_EINVAL, "new_lens[1]: 10 keys after appending 3", L[1] = 10);
    BADA(ATTNCONF_EINVAL, "block_table[0][1]: page 6", table[1] = 6);
    BADA(ATTNCONF_EINVAL, "block_table[1][2]: page -1", table[5] = -1);
    BADA(ATTNCONF_EINVAL, "block_table[0][0]: page -3", (table[0] = -3, L[0] = 0));
    BADA(ATTNCONF_EINVAL, "block_table[0][1]: page 6", (L[0] = 4, nl[0] = 1, table[1] = 6));
    /* Row 1's entry 2 = row 0's page 0: row 0's token 1 (position 4) and row 1's token 0
     * (position 8) both land in page 0 slot 0. */
    BADA(ATTNCONF_EINVAL,
         "new token 1 of row 0 and new token 0 of row 1 both land in page 0 slot 0", table[5] = 0);
#undef BADA
    /* The valid call writes row 0's positions 3..5 (page 5 slot 3, page 0 slots 0-1) and row
     * 1's 8..10 (page 3 slots 0-2); the bad entries for older positions are never read. */
    cr_assert_eq(cpu_paged_append(&ctx, &ok), ATTNCONF_OK, "%s", ctx.err);
    /* With new_lens 0 nothing is checked beyond the lengths. */
    free(kpool);
    free(vpool);
    free(snap);
    free(kd);
}
