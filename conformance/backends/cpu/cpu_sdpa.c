/* cpu_sdpa.c — the cpu plugin's SDPA driver (cpu_sdpa.h): work items, packing, masks, the
 * online softmax and the flash-decoding merge.  The dense loops are the kernel table's
 * (cpu_kern.h); everything here is O(rows x keys) or less per tile. */
#include "cpu_sdpa.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"
#include "cpu_exp.h"
#include "cpu_plan.h"

#define ALIGN 64
#define CPU_WAKE_LINES 4 /* lines asked for early per run of a tile after the next */
#define CPU_HB_MAX 8     /* kv heads per bundle (bundle_run) */
/* A paged call bundles its heads when one head's K and V rows of a page are under this size. */
#define CPU_BUNDLE_RUN_BYTES ((size_t)64 << 10)

/* Below this many (rows x keys x (D + Dv)) multiply-adds a call runs on the calling thread only
 * (about 10-20 us of work: waking the pool costs as much). */
#define CPU_INLINE_WORK 5.0e5
/* Scratch per thread beyond which cpu_sdpa_run declines (returns 1). */
#define CPU_WS_MAX ((size_t)256 << 20)

static size_t round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

/* ---- per-thread scratch ---------------------------------------------------------------- */

/* The sections of one thread's scratch block (cpu_kern.h describes the tile layouts). */
typedef struct ws {
    float *qp;           /* [R][D] the item's query rows */
    float *o;            /* [R][dvp] accumulators */
    float *m, *l;        /* [R] running max and sum */
    int64_t *plo, *phi;  /* [bq] key interval of each query position */
    float *kt;           /* [D][CPU_BC] K tile, transposed */
    float *vp;           /* [CPU_BC][dvp] V tile */
    float *s;            /* [CPU_MR][CPU_BC] scores, then probabilities */
    float *corr;         /* [CPU_MR] */
    unsigned char *kept; /* [CPU_MR][CPU_BC] kept flags (non-finite V tiles only) */
    float *orow;         /* [dvp] one output row in f32 */
    unsigned char *obuf; /* [dvp * 4] one output row in the dtype (strided outputs) */
    int64_t *ppr;        /* [bq] ALiBi: the position nearest the query in its key range */
    double *pd0;         /* [bq] ALiBi: the distance from the query to it */
    unsigned char *pex;  /* [bq] 1: the key range is exact (cpu_row_keys) */
    unsigned char *rbad; /* [R] 1: a kept score was not finite (the row is redone in double) */
    double *acc;         /* [dvp] one row in double (row_f64) */
    float *qd;           /* [2 CPU_DR][2 D] the rows in the table's runs_q layout */
    const float *qr;     /* the rows as scores_runs reads them: qp or qd */
    size_t ldqr;         /* their stride: D or 2 D */
    int qdt;             /* the dtype scores_runs is given with them (runs_q's, else the call's) */
} ws;

#define WS_SECTIONS 17

typedef struct layout {
    size_t off[WS_SECTIONS];
    size_t bytes;
} layout;

/* Byte offsets of the sections for R rows, bq positions, dims D and dvp.  0 on overflow. */
static size_t ws_layout(layout *L, size_t R, size_t bq, size_t D, size_t dvp)
{
    const size_t f = sizeof(float);
    size_t sz[WS_SECTIONS];
    /* Every product is bounded: R, bq <= 2^31, D, dvp <= 2^31 + 16 (ATTNREF_MAX_NUMEL); check
     * the two that can be large together. */
    if (D && R > SIZE_MAX / 8 / D)
        return 0;
    if (dvp && R > SIZE_MAX / 8 / dvp)
        return 0;
    if (D > SIZE_MAX / 8 / CPU_BC)
        return 0;
    sz[0] = R * D * f;
    sz[1] = R * dvp * f;
    sz[2] = R * f;
    sz[3] = R * f;
    sz[4] = bq * sizeof(int64_t);
    sz[5] = bq * sizeof(int64_t);
    sz[6] = D * CPU_BC * f;
    sz[7] = (size_t)CPU_BC * dvp * f;
    sz[8] = (size_t)CPU_MR * CPU_BC * f;
    sz[9] = 16 * f;
    sz[10] = (size_t)CPU_MR * CPU_BC + dvp * f + dvp * 4; /* kept, orow, obuf */
    sz[11] = bq * sizeof(int64_t);
    sz[12] = bq * sizeof(double);
    sz[13] = bq;
    sz[14] = R;
    sz[15] = dvp * sizeof(double);
    sz[16] = 2 * CPU_DR * 2 * D * f;
    size_t at = 0;
    for (int i = 0; i < WS_SECTIONS; i++) {
        L->off[i] = at;
        if (sz[i] > SIZE_MAX / 2 - at)
            return 0;
        at = round_up(at + sz[i], ALIGN);
    }
    L->bytes = at;
    return at;
}

static ws ws_carve(void *base, const layout *L, size_t dvp)
{
    char *b = base;
    ws w;
    w.qp = (float *)(b + L->off[0]);
    w.o = (float *)(b + L->off[1]);
    w.m = (float *)(b + L->off[2]);
    w.l = (float *)(b + L->off[3]);
    w.plo = (int64_t *)(b + L->off[4]);
    w.phi = (int64_t *)(b + L->off[5]);
    w.kt = (float *)(b + L->off[6]);
    w.vp = (float *)(b + L->off[7]);
    w.s = (float *)(b + L->off[8]);
    w.corr = (float *)(b + L->off[9]);
    w.kept = (unsigned char *)(b + L->off[10]);
    w.orow = (float *)(b + L->off[10] + round_up((size_t)CPU_MR * CPU_BC, sizeof(float)));
    w.obuf = (unsigned char *)(w.orow + dvp);
    w.ppr = (int64_t *)(b + L->off[11]);
    w.pd0 = (double *)(b + L->off[12]);
    w.pex = (unsigned char *)(b + L->off[13]);
    w.rbad = (unsigned char *)(b + L->off[14]);
    w.acc = (double *)(b + L->off[15]);
    w.qd = (float *)(b + L->off[16]);
    w.qr = w.qp;
    w.ldqr = 0;
    w.qdt = 0;
    return w;
}

/* Grow *buf to at least bytes (64-byte aligned, zeroed when new so padding columns are 0 and
 * never uninitialised).  Returns 0 or -1. */
static int grow(void **buf, size_t *have, size_t bytes)
{
    if (*buf && *have >= bytes)
        return 0;
    free(*buf);
    *buf = NULL;
    *have = 0;
    void *p = aligned_alloc(ALIGN, round_up(bytes ? bytes : ALIGN, ALIGN));
    if (!p)
        return -1;
    memset(p, 0, round_up(bytes ? bytes : ALIGN, ALIGN));
    *buf = p;
    *have = bytes;
    return 0;
}

int cpu_engine_init(cpu_engine *e, int threads, const cpu_kernels *k)
{
    memset(e, 0, sizeof *e);
    e->threads = threads < 1 ? 1 : threads;
    e->k = k;
    e->ws = calloc((size_t)e->threads, sizeof *e->ws);
    e->ws_bytes = calloc((size_t)e->threads, sizeof *e->ws_bytes);
    if (!e->ws || !e->ws_bytes || cpu_pool_init(&e->pool, e->threads) != 0) {
        free(e->ws);
        free(e->ws_bytes);
        return -1;
    }
    return 0;
}

void cpu_engine_free(cpu_engine *e)
{
    cpu_pool_destroy(&e->pool);
    for (int t = 0; e->ws && t < e->threads; t++)
        free(e->ws[t]);
    free(e->ws);
    free(e->ws_bytes);
    free(e->partials);
    memset(e, 0, sizeof *e);
}

/* ---- one call ---------------------------------------------------------------------------- */

typedef struct job {
    const cpu_kernels *k;
    cpu_plan pl;
    const attnref_sdpa_params *p;
    const attnref_tensor *q, *kk, *v, *mask, *out;
    /* Where key j of (b, kv head) lives (kv_row): contiguous, table == NULL: row j of batch row
     * b of kk / v; paged: slot j % P of page table[b * tw + j / P] of the pools kk / v. */
    const int32_t *table;
    int64_t tw, P;
    const int64_t *qoff; /* paged: [B] position of query 0 of each row (cpu_rows.off) */
    int dt;              /* q/k/v/out dtype */
    size_t esz;          /* its size */
    int64_t mst[4];      /* mask strides broadcast to (B, Hq, Lq, Lk): 0 where the extent is 1 */
    float sigma;
    int capped; /* softcap given: cap and 1 / cap as f32 */
    float cap, rcap;
    int f64;         /* every row in double (row_f64): a softcap outside [2^-100, 2^100] */
    float *slope;    /* [Hq] ALiBi slopes as f32, or NULL */
    double *slope_d; /* [Hq] the same in binary64 */
    float *sink;     /* [Hq] sink logits, or NULL */
    int64_t off;     /* the causal offset: query i sits at off + i (ALiBi, segments) */
    size_t dvp;      /* Dv rounded up to CPU_NR */
    size_t rmax;     /* rows of the largest item */
    size_t pstride;  /* floats per row of a part: m, l, the bad flag, O */
    layout L;
    void **wsb;      /* per-thread scratch blocks */
    float *partials; /* [ngroups * nsplit][rmax * pstride] when nsplit > 1 */
    int hb;          /* kv heads per task: 1, or a bundled call (bundle_run) */
    int64_t ntasks;  /* bundled: tasks */
    int64_t *bundle; /* bundled: [ntasks][hb] item indices in kv head order, -1 past the last */
    cpu_pool *pool;  /* the pool running the tasks; NULL where the call runs them inline */
} job;

static inline float load_f(const void *data, int dt, int64_t i)
{
    switch (dt) {
    case ATTNREF_F16: return attnref_f16_to_f32(((const uint16_t *)data)[i]);
    case ATTNREF_BF16: return attnref_bf16_to_f32(((const uint16_t *)data)[i]);
    case ATTNREF_BOOL: return ((const unsigned char *)data)[i] != 0 ? 1.0f : 0.0f;
    default: return ((const float *)data)[i];
    }
}

static inline const char *elem(const attnref_tensor *t, size_t esz, int64_t off)
{
    return (const char *)t->data + (size_t)off * esz;
}

/* The key-row access every kernel path goes through: the element offsets of K and V row j of
 * (b, kv head hk) into *ko and *vo, and how many rows from j on follow at the same row stride
 * (the rest of the page; the rest of the keys when contiguous), so a tile is read as one run
 * per page, in place, with the pool's strides.  Only table entries of keys a row keeps are
 * read (j < L_b): unused entries and slots past L_b never are. */
static inline int64_t kv_row(const job *J, int64_t b, int64_t hk, int64_t j, int64_t *ko,
                             int64_t *vo)
{
    int64_t page = b, slot = j, run = INT64_MAX;
    if (J->table) {
        page = J->table[b * J->tw + j / J->P];
        slot = j % J->P;
        run = J->P - slot;
    }
    const attnref_tensor *k = J->kk, *v = J->v;
    *ko = page * k->strides[0] + hk * k->strides[1] + slot * k->strides[2];
    *vo = page * v->strides[0] + hk * v->strides[1] + slot * v->strides[2];
    return run;
}

/* The position of query 0 of batch row b (query i sits at this + i). */
static inline int64_t qpos0(const job *J, int64_t b)
{
    return J->qoff ? J->qoff[b] : J->off;
}

/* Group index -> (b, kv head, first query position, positions). */
static void group_coords(const cpu_plan *pl, int64_t g, int64_t *b, int64_t *hk, int64_t *i0,
                         int64_t *nq)
{
    const int64_t qb = g % pl->nqb, bh = g / pl->nqb;
    *hk = bh % pl->Hkv;
    *b = bh / pl->Hkv;
    *i0 = qb * pl->bq;
    *nq = pl->Lq - *i0 < pl->bq ? pl->Lq - *i0 : pl->bq;
}

/* The key ranges of the nq positions from i0 of batch row b into w (plo, phi, pex), and for
 * ALiBi the position nearest each query inside its range (ppr) and its distance (pd0): for
 * every key j of the range |p - j| = |ppr - j| + pd0, so the biases are formed from small
 * distances and the constant pd0 moves to the sink (softmax is shift-invariant). */
static void row_ranges(const job *J, ws *w, int64_t b, int64_t i0, int64_t nq)
{
    const int64_t off = qpos0(J, b);
    for (int64_t pi = 0; pi < nq; pi++) {
        const int64_t i = i0 + pi;
        w->pex[pi] = (unsigned char)cpu_row_keys(&J->pl.keys, b, i, &w->plo[pi], &w->phi[pi]);
        if (!J->slope)
            continue;
        const int64_t lo = w->plo[pi], hi = w->phi[pi];
        int64_t pr;
        if (lo >= hi)
            pr = lo;
        else if (off >= J->pl.Lk) /* p = off + i is past every key (and may not fit) */
            pr = hi - 1;
        else
            pr = off + i < lo ? lo : off + i > hi - 1 ? hi - 1 : off + i;
        w->ppr[pi] = pr;
        /* |p - pr| as the reference forms |p - j|. */
        w->pd0[pi] = fabs((double)off - (double)(pr - i));
    }
}

/* Row (b, h, i) computed as attnref_sdpa does, in double, and written to out: the row's f32
 * computation met a non-finite score or output (scores overflowing f32, a kept NaN or inf),
 * where the reference's double may stay finite; or the call's parameters are outside the f32
 * kernels' range (J->f64). */
static void row_f64(const job *J, ws *w, int64_t b, int64_t h, int64_t i)
{
    const attnref_sdpa_params *p = J->p;
    const attnref_tensor *q = J->q, *k = J->kk, *v = J->v, *m = J->mask, *out = J->out;
    const int64_t off = qpos0(J, b);
    const int64_t D = J->pl.D, Dv = J->pl.Dv, Lq = J->pl.Lq, Lk = J->pl.Lk;
    const int64_t hk = h / J->pl.G;
    const double scale = p->has_scale ? p->scale : 1.0 / sqrt((double)D);
    const double slope = J->slope ? J->slope_d[h] : 0.0;
    const int64_t qrow = b * q->strides[0] + h * q->strides[1] + i * q->strides[2];
    const int64_t mrow = b * J->mst[0] + h * J->mst[1] + i * J->mst[2];
    int64_t lo, hi;
    const int exact = cpu_row_keys(&J->pl.keys, b, i, &lo, &hi);
    double mx = -INFINITY, sum = 0.0;
    int64_t nkept = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t j = lo; j < hi; j++) {
            /* An exact range holds just the kept keys (always so in a paged call). */
            if (!exact && !attnref_sdpa_key_kept(p, Lq, Lk, b, i, j))
                continue;
            double add = 0.0;
            if (m) {
                const double mv = attnref_load(m->data, m->dtype, mrow + j * J->mst[3]);
                if (m->dtype == ATTNREF_BOOL ? mv == 0.0 : mv == -INFINITY)
                    continue;
                if (m->dtype != ATTNREF_BOOL)
                    add = mv;
            }
            int64_t krow, vrow;
            kv_row(J, b, hk, j, &krow, &vrow);
            double dot = 0.0;
            for (int64_t d = 0; d < D; d++)
                dot += attnref_load(q->data, q->dtype, qrow + d * q->strides[3]) *
                       attnref_load(k->data, k->dtype, krow + d * k->strides[3]);
            double s = scale * dot;
            if (p->softcap > 0.0)
                s = p->softcap * tanh(s / p->softcap);
            if (J->slope)
                s -= slope * fabs((double)off - (double)(j - i));
            s += add;
            if (pass == 0) {
                nkept++;
                mx = s > mx ? s : mx;
                continue;
            }
            const double wgt = exp(s - mx);
            sum += wgt;
            for (int64_t e = 0; e < Dv; e++)
                w->acc[e] += wgt * attnref_load(v->data, v->dtype, vrow + e * v->strides[3]);
        }
        if (pass == 0) {
            if (nkept == 0)
                break;
            if (J->sink && p->sinks[h] > mx)
                mx = p->sinks[h];
            sum = J->sink ? exp(p->sinks[h] - mx) : 0.0;
            for (int64_t e = 0; e < Dv; e++)
                w->acc[e] = 0.0;
        }
    }
    const int64_t o = b * out->strides[0] + h * out->strides[1] + i * out->strides[2];
    for (int64_t e = 0; e < Dv; e++)
        attnref_store(out->data, out->dtype, o + e * out->strides[3],
                      nkept > 0 ? w->acc[e] / sum : 0.0);
}

/* dst[e] = src[e] * f / lsum, e < n, each element rounded as the scalar expression does.  In
 * blocks of 8 of fixed count so that -O2 makes them vector multiplies and divides: its default
 * cost model leaves a loop of unknown count scalar, and one divide per element was about 3 % of
 * a prefill. */
static void scale_row(float *restrict dst, const float *restrict src, int64_t n, float f,
                      float lsum)
{
    int64_t e = 0;
    for (; e + 8 <= n; e += 8)
        for (int k = 0; k < 8; k++)
            dst[e + k] = src[e + k] * f / lsum;
    for (; e < n; e++)
        dst[e] = src[e] * f / lsum;
}

/* Write one finished row to out[b, h, i, :]: O / l with the sink joined (M = max(m, sink); one
 * more term exp(sink - M) in the sum), or +0 when the row kept no key (l = 0, sink or not).
 * pi: the row's position in the item (its ALiBi shift); bad: redo the row in double.  A row
 * whose f32 result is not finite is redone too (the reference may be finite where f32
 * overflowed; where it is not, double gives the reference's own NaN or inf). */
static void write_row(const job *J, ws *w, const float *o, float m, float l, int bad, int64_t b,
                      int64_t h, int64_t i, int64_t pi)
{
    const int64_t Dv = J->pl.Dv;
    if (Dv == 0)
        return;
    if (bad) {
        row_f64(J, w, b, h, i);
        return;
    }
    float f = 1.0f, lsum = l;
    if (J->sink && l != 0.0f) {
        float sg = J->sink[h];
        if (J->slope)
            sg = (float)((double)J->sink[h] + J->slope_d[h] * w->pd0[pi]);
        if (sg > m) {
            f = cpu_expf(m - sg);
            lsum = l * f + 1.0f;
        } else {
            lsum = l + cpu_expf(sg - m);
        }
    }
    if (l != 0.0f)
        scale_row(w->orow, o, Dv, f, lsum);
    else
        memset(w->orow, 0, (size_t)Dv * sizeof *w->orow);
    if (!J->k->finite(w->orow, (int)Dv)) {
        row_f64(J, w, b, h, i);
        return;
    }
    const attnref_tensor *out = J->out;
    const int64_t off = b * out->strides[0] + h * out->strides[1] + i * out->strides[2];
    char *dst = (char *)out->data + (size_t)off * J->esz;
    if (out->strides[3] == 1) {
        J->k->store_row(w->orow, Dv, J->dt, dst);
        return;
    }
    J->k->store_row(w->orow, Dv, J->dt, w->obuf);
    for (int64_t e = 0; e < Dv; e++)
        memcpy(dst + (size_t)(e * out->strides[3]) * J->esz, w->obuf + (size_t)e * J->esz, J->esz);
}

/* Widen q[b, h, i, :] into dst. */
static void load_q(const job *J, float *dst, int64_t b, int64_t h, int64_t i)
{
    const attnref_tensor *q = J->q;
    const int64_t off = b * q->strides[0] + h * q->strides[1] + i * q->strides[2];
    if (q->strides[3] == 1) {
        J->k->load_row(elem(q, J->esz, off), J->dt, J->pl.D, dst);
        return;
    }
    for (int64_t d = 0; d < J->pl.D; d++)
        dst[d] = load_f(q->data, J->dt, off + d * q->strides[3]);
}

/* Pack keys j0..j0+n-1 of (b, kv head hk): K transposed into w->kt, V into w->vp, one run of
 * rows per page (kv_row).  Returns 1 when the V tile holds a NaN or an infinity. */
static int pack_tile(const job *J, ws *w, int64_t b, int64_t hk, int64_t j0, int n)
{
    const attnref_tensor *k = J->kk, *v = J->v;
    const int64_t D = J->pl.D, Dv = J->pl.Dv;
    int bad = 0;
    for (int c0 = 0; c0 < n;) {
        int64_t kb, vb;
        const int64_t run = kv_row(J, b, hk, j0 + c0, &kb, &vb);
        const int len = run < n - c0 ? (int)run : n - c0;
        if (k->strides[3] == 1) {
            J->k->pack_kt(elem(k, J->esz, kb), J->dt, k->strides[2], len, D, w->kt + c0, CPU_BC);
        } else {
            for (int c = 0; c < len; c++)
                for (int64_t d = 0; d < D; d++)
                    w->kt[(size_t)d * CPU_BC + (size_t)(c0 + c)] =
                        load_f(k->data, J->dt, kb + c * k->strides[2] + d * k->strides[3]);
        }
        for (int c = 0; c < len; c++) {
            float *dst = w->vp + (size_t)(c0 + c) * J->dvp;
            const int64_t row = vb + c * v->strides[2];
            if (v->strides[3] == 1) {
                bad |= J->k->load_row(elem(v, J->esz, row), J->dt, Dv, dst);
            } else {
                for (int64_t e = 0; e < Dv; e++) {
                    dst[e] = load_f(v->data, J->dt, row + e * v->strides[3]);
                    bad |= !isfinite(dst[e]);
                }
            }
        }
        c0 += len;
    }
    return bad;
}

/* Exclude keys of one score row of tile [j0, j0+n): outside [a, z); inside it, where the
 * parameters drop the key (exact == 0: a document or block in several runs) and where the mask
 * tensor excludes (false / -inf); add the other additive values.  With kept != NULL also record
 * which keys the row keeps.  mrow: the mask offset of (b, h, i).  Returns 0 when an added
 * value left a kept score that is not finite (f32 overflow), else 1. */
static int mask_row(const job *J, float *s, unsigned char *kept, int n, int a, int z, int64_t mrow,
                    int64_t j0, int exact, int64_t b, int64_t i)
{
    for (int c = 0; c < a; c++)
        s[c] = -INFINITY;
    for (int c = z; c < n; c++)
        s[c] = -INFINITY;
    if (kept) {
        memset(kept, 0, (size_t)n);
        memset(kept + a, 1, (size_t)(z - a));
    }
    unsigned char drop[CPU_BC];
    if (!exact)
        for (int c = a; c < z; c++) {
            drop[c] = !attnref_sdpa_key_kept(J->p, J->pl.Lq, J->pl.Lk, b, i, j0 + c);
            if (drop[c]) {
                s[c] = -INFINITY;
                if (kept)
                    kept[c] = 0;
            }
        }
    const attnref_tensor *m = J->mask;
    if (!m)
        return 1;
    const int mdt = m->dtype;
    const int64_t ms = J->mst[3];
    int ok = 1;
    for (int c = a; c < z; c++) {
        if (!exact && drop[c])
            continue;
        const float mv = load_f(m->data, mdt, mrow + (j0 + c) * ms);
        if (mdt == ATTNREF_BOOL ? mv == 0.0f : mv == -INFINITY) {
            s[c] = -INFINITY; /* replaced, not added: a NaN score of an excluded key is gone */
            if (kept)
                kept[c] = 0;
        } else if (mdt != ATTNREF_BOOL) {
            s[c] = s[c] + mv; /* the mask is added in f32 (SPEC.md clause 13) */
            ok &= isfinite(s[c]) != 0;
        }
    }
    return ok;
}

/* The runs of rows (kv_row) of keys j0..j0+n-1 of (b, hk) into kr (K) and vr (V), at most n
 * of each; returns their count (1 for a contiguous tile, one per page for a paged one). */
static int tile_runs(const job *J, int64_t b, int64_t hk, int64_t j0, int n, cpu_run *kr,
                     cpu_run *vr)
{
    int nr = 0;
    for (int c0 = 0; c0 < n; nr++) {
        int64_t ko, vo;
        const int64_t run = kv_row(J, b, hk, j0 + c0, &ko, &vo);
        const int len = run < n - c0 ? (int)run : n - c0;
        kr[nr] = (cpu_run){elem(J->kk, J->esz, ko), J->kk->strides[2], len};
        vr[nr] = (cpu_run){elem(J->v, J->esz, vo), J->v->strides[2], len};
        c0 += len;
    }
    return nr;
}

/* Short runs (small pages, each a new place in memory) leave one core with too few misses in
 * flight: the hardware prefetchers drop each run when it ends and need a few misses of the next
 * before they follow it.  So the first lines of each run of the tile after the next are asked
 * for a tile early: by the time its rows are prefetched in full, the prefetchers already stream
 * them.  One thread, pages of 16, from memory: 1.08-1.14x (README, "Paged KV"). */
static void wake_runs(const job *J, int64_t b, int64_t hk, int64_t j0, int n)
{
    for (int c0 = 0; c0 < n;) {
        int64_t ko, vo;
        const int64_t run = kv_row(J, b, hk, j0 + c0, &ko, &vo);
        const char *kr = (const char *)elem(J->kk, J->esz, ko),
                   *vr = (const char *)elem(J->v, J->esz, vo);
        for (int l = 0; l < CPU_WAKE_LINES; l++) {
            __builtin_prefetch(kr + 64 * l);
            __builtin_prefetch(vr + 64 * l);
        }
        c0 += run < n - c0 ? (int)run : n - c0;
    }
}

/* Keys [*next, stop) of (b, kv head hk): their K and V rows requested into the level-2 cache,
 * up to `keys` of them from *next on (which advances).  A packed tile is read from the last-level
 * cache or memory when packed; asking for the next one a slice per row group of this one keeps
 * those reads off the critical path without flooding the miss queue. */
static void ask_rows(const job *J, int64_t b, int64_t hk, int64_t *next, int64_t stop, int keys)
{
    const size_t kb = (size_t)J->pl.D * J->esz, vb = (size_t)J->pl.Dv * J->esz;
    for (; keys > 0 && *next < stop; keys--, (*next)++) {
        int64_t ko, vo;
        kv_row(J, b, hk, *next, &ko, &vo);
        const char *kr = (const char *)elem(J->kk, J->esz, ko),
                   *vr = (const char *)elem(J->v, J->esz, vo);
        for (size_t o = 0; o < kb; o += 64)
            __builtin_prefetch(kr + o, 0, 2);
        for (size_t o = 0; o < vb; o += 64)
            __builtin_prefetch(vr + o, 0, 2);
    }
}

/* The rows of one decode tile as runs, and those of the next tile of the item (to prefetch
 * while this one is computed: decode streams K and V from memory once, and one core's hardware
 * prefetchers alone do not keep enough requests in flight, nor cross into another page). */
typedef struct dtile {
    cpu_run k[CPU_BC], v[CPU_BC], pk[CPU_BC], pv[CPU_BC];
    int n, npf;
} dtile;

/* The scores of rows r0 .. r0 + nr - 1 of w against the tile's keys read in place: one call of
 * the table's run kernel (the rows in its layout, w->qr), or one call of scores_rows per run
 * where the table has none. */
static void scores_direct(const job *J, const ws *w, int64_t r0, int nr, const dtile *t, int pf,
                          float *s)
{
    const cpu_kernels *K = J->k;
    if (K->scores_runs) {
        K->scores_runs(w->qr + (size_t)r0 * w->ldqr, w->ldqr, nr, t->k, t->n, w->qdt, J->pl.D,
                       J->sigma, s, CPU_BC, t->pk, pf ? t->npf : 0);
        return;
    }
    const float *q = w->qp + (size_t)r0 * (size_t)J->pl.D;
    for (int u = 0, c0 = 0; u < t->n; c0 += t->k[u].n, u++)
        K->scores_rows(q, (size_t)J->pl.D, nr, t->k[u].src, J->dt, t->k[u].rstride, t->k[u].n,
                       J->pl.D, J->sigma, s + c0, CPU_BC);
}

/* O = O * corr + P.V over the tile's keys read in place; without the run kernel one call of
 * pv_rows per run, the runs after the first adding to O unscaled (factor 1 is exact). */
static void pv_direct(const job *J, const float *p, int nr, const dtile *t, int pf,
                      const float *corr, float *o)
{
    static const float ones[CPU_DR] = {1.0f, 1.0f, 1.0f, 1.0f};
    const cpu_kernels *K = J->k;
    if (K->pv_runs) {
        K->pv_runs(p, CPU_BC, nr, t->v, t->n, J->dt, J->pl.Dv, corr, o, J->dvp, t->pv,
                   pf ? t->npf : 0);
        return;
    }
    for (int u = 0, c0 = 0; u < t->n; c0 += t->v[u].n, u++)
        K->pv_rows(p + c0, CPU_BC, nr, t->v[u].src, J->dt, t->v[u].rstride, t->v[u].n, J->pl.Dv,
                   u == 0 ? corr : ones, o, J->dvp);
}

/* The online softmax step of one score row over a tile of n keys, of which [a, z) may be kept
 * (excluded ones hold -inf): the row's running max *m and sum *l are updated and s becomes
 * P = exp(s - m_new).  Returns the factor exp(m_old - m_new) that rescales the row's O.  A row
 * that keeps nothing here is left alone (P = 0, factor 1: its O stays exactly as it was). */
static float softmax_step(const cpu_kernels *K, float *s, unsigned char *kept, int n, int a, int z,
                          float *m, float *l)
{
    if (a >= z) {
        memset(s, 0, (size_t)n * sizeof *s);
        return 1.0f; /* its kept flags are all 0 already (mask_row) */
    }
    const float mb = K->max(s, n);
    const float mnew = mb > *m ? mb : *m;
    if (mnew == -INFINITY) {
        /* No score above -inf: nothing kept, or only NaN scores (a kept key's NaN must still
         * poison the row: the max skipped it). */
        for (int c = a; c < z; c++)
            if (s[c] != s[c])
                *l = NAN;
        memset(s, 0, (size_t)n * sizeof *s);
        if (kept)
            memset(kept, 0, (size_t)n);
        return 1.0f;
    }
    const float corr = cpu_expf(*m - mnew);
    const float sum = K->exp_sum(s, n, mnew);
    *l = *l * corr + sum;
    *m = mnew;
    return corr;
}

/* One work item in progress: its coordinates and its scratch (a bundle runs several at once,
 * tile by tile). */
typedef struct irun {
    const cpu_item *it;
    ws w;
    int64_t b, hk, i0, nq, NR;
    int direct_item;
} irun;

/* Where the unit a thread runs after a tile lies, for its prefetch: batch row b, kv head hk,
 * keys j0 .. khi - 1. */
typedef struct inext {
    int64_t b, hk, j0, khi;
} inext;

/* Set s up for item it in the scratch block at base.  Returns 0 when nothing is left to do for
 * the tiles (rows done in double). */
static int item_begin(const job *J, irun *s, const cpu_item *it, void *base)
{
    const cpu_plan *pl = &J->pl;
    s->it = it;
    s->w = ws_carve(base, &J->L, J->dvp);
    ws *w = &s->w;
    group_coords(pl, it->group, &s->b, &s->hk, &s->i0, &s->nq);
    const int64_t G = pl->G, D = pl->D, NR = s->nq * G, b = s->b, hk = s->hk, i0 = s->i0;
    s->NR = NR;

    if (J->f64) {
        for (int64_t r = 0; pl->nsplit == 1 && r < NR; r++)
            row_f64(J, w, b, hk * G + r % G, i0 + r / G);
        return 0; /* split: merge_run computes the rows */
    }
    row_ranges(J, w, b, i0, s->nq);
    for (int64_t r = 0; r < NR; r++) {
        load_q(J, w->qp + (size_t)r * (size_t)D, b, hk * G + r % G, i0 + r / G);
        w->m[r] = -INFINITY;
        w->l[r] = 0.0f;
        w->rbad[r] = 0;
    }
    memset(w->o, 0, (size_t)NR * J->dvp * sizeof *w->o);

    /* Few rows (decode): K and V are read straight from their rows by the unpacked kernels
     * wherever a tile needs no exclusion, since packing would cost more than the rows reuse. */
    s->direct_item = NR <= 2 * CPU_DR && J->kk->strides[3] == 1 && J->v->strides[3] == 1;
    /* The rows as the table's scores_runs reads them, once for all the item's tiles. */
    w->qr = w->qp;
    w->ldqr = (size_t)D;
    w->qdt = J->dt;
    const int qdt = s->direct_item && J->k->scores_runs && J->k->runs_q
                        ? J->k->runs_q(w->qp, (int)NR, D, J->dt, J->sigma, w->qd)
                        : 0;
    if (qdt) {
        w->qr = w->qd;
        w->ldqr = 2 * (size_t)D;
        w->qdt = qdt;
    }
    return 1;
}

/* After the scores of rows r0 .. r0 + nr - 1 of (b, kv head hk) over the tile of keys j0 ..
 * (ng columns, row t keeping [ra[t], rz[t])): each row's score terms in SPEC order, the check
 * that its kept scores are finite (f32 overflow: the row is redone in double), the mask, and the
 * online softmax step, whose factor goes to w->corr[t]. */
static void rows_step(const job *J, const ws *wp, int64_t b, int64_t hk, int64_t i0, int64_t j0,
                      int64_t r0, int nr, int ng, const int *ra, const int *rz, int masked, int bad)
{
    const cpu_kernels *K = J->k;
    const int64_t G = J->pl.G;
    const ws w = *wp;
    for (int t = 0; t < nr; t++) {
        const int64_t r = r0 + t, pi = r / G, h = hk * G + r % G;
        float *sr = w.s + (size_t)t * CPU_BC;
        if (ra[t] < rz[t]) {
            if (J->capped)
                K->softcap(sr, ng, J->cap, J->rcap);
            if (J->slope)
                K->alibi(sr, ng, J->slope[h], w.ppr[pi] - j0);
            if (!K->finite(sr + ra[t], rz[t] - ra[t]))
                w.rbad[r] = 1;
        }
        if (masked) {
            const int64_t i = i0 + pi;
            const int64_t mrow = b * J->mst[0] + h * J->mst[1] + i * J->mst[2];
            if (!mask_row(J, sr, bad ? w.kept + (size_t)t * CPU_BC : NULL, ng, ra[t], rz[t], mrow,
                          j0, w.pex[pi], b, i))
                w.rbad[r] = 1;
        }
        w.corr[t] = softmax_step(K, sr, bad ? w.kept + (size_t)t * CPU_BC : NULL, ng, ra[t], rz[t],
                                 &w.m[r], &w.l[r]);
    }
}

/* The tile of keys j0.. of item s; nx: the unit the thread runs next (NULL: the item's next
 * tile). */
static void item_tile(const job *J, irun *s, int64_t j0, const inext *nx)
{
    const cpu_plan *pl = &J->pl;
    const cpu_item *it = s->it;
    const cpu_kernels *K = J->k;
    ws w = s->w;
    const int64_t b = s->b, hk = s->hk, i0 = s->i0, nq = s->nq, G = pl->G, D = pl->D, NR = s->NR;
    const size_t dvp = J->dvp;
    const int direct_item = s->direct_item;
    dtile dt; /* direct tiles only */
    const int bc = pl->bc;
    const int n = (int)(it->khi - j0 < bc ? it->khi - j0 : bc);
    int seen = 0, all = 1;
    for (int64_t pi = 0; pi < nq; pi++) {
        seen |= w.plo[pi] < j0 + n && w.phi[pi] > j0 && w.plo[pi] < w.phi[pi];
        all &= w.plo[pi] <= j0 && w.phi[pi] >= j0 + n && w.pex[pi];
    }
    if (!seen)
        return; /* no row keeps a key of this tile: never read it */
    /* Unpacked only where every row keeps every key: no V check needed (a non-finite value
     * at a kept key is the row's, and propagates as in the reference). */
    const int direct = direct_item && all && !J->mask;
    const int bad = direct ? 0 : pack_tile(J, &w, b, hk, j0, n);
    const int gs = direct ? CPU_DR : CPU_MR;
    if (direct) {
        dt.n = tile_runs(J, b, hk, j0, n, dt.k, dt.v);
        /* The unit this thread runs next: the item's next tile, in a bundle the next head's,
         * after an item's last tile the first tile of the item the thread claimed. */
        const int64_t pj = nx ? nx->j0 : j0 + n, left = (nx ? nx->khi : it->khi) - pj;
        dt.npf = left > 0 ? tile_runs(J, nx ? nx->b : b, nx ? nx->hk : hk, pj,
                                      left < bc ? (int)left : bc, dt.pk, dt.pv)
                          : 0;
        if (!nx && dt.npf > 1 && left > bc)
            wake_runs(J, b, hk, j0 + n + bc, left - bc < bc ? (int)(left - bc) : bc);
    }

    /* Packed tiles of many rows: the item's next tile asked for a slice per row group. */
    int64_t ask = j0 + n, ask_end = it->khi - ask < bc ? it->khi : ask + bc;
    const int ask_keys = !direct && NR >= 8 * gs ? (int)((bc * gs + NR - 1) / NR) : 0;
    for (int64_t r0 = 0; r0 < NR; r0 += gs) {
        const int nr = (int)(NR - r0 < gs ? NR - r0 : gs);
        if (ask_keys)
            ask_rows(J, b, hk, &ask, ask_end, ask_keys);
        int ra[CPU_MR], rz[CPU_MR], any = 0, full = 1, ng = 0, exact = 1;
        for (int t = 0; t < nr; t++) {
            const int64_t pi = (r0 + t) / G;
            /* The row's interval in tile coordinates, clamped to 0..n. */
            int64_t a = w.plo[pi] - j0, z = w.phi[pi] - j0;
            a = a < 0 ? 0 : a > n ? n : a;
            z = z > n ? n : z < a ? a : z;
            ra[t] = (int)a;
            rz[t] = (int)z;
            any |= a < z;
            full &= a == 0 && z == n && w.pex[pi];
            ng = a < z && (int)z > ng ? (int)z : ng;
            exact &= a >= z || w.pex[pi];
        }
        if (!any)
            continue;
        /* The group's rows keep no key at or past ng (on a causal diagonal, the later half
         * of the tile for the item's first rows): its scores, softmax and P.V stop there,
         * as if the tile had ng keys.  A direct tile is kept whole (ng == n). */
        const int ncols = (int)round_up((size_t)ng, CPU_NR);
        /* Only the rows' intervals exclude keys: softmax_rows for the group; with no score
         * term between the products and the softmax, both in one kernel call.  Not past
         * tile_keys: a decode plan's tiles may be longer than the table's fused kernels hold. */
        const int rows =
            K->softmax_rows && !direct && !J->mask && !bad && exact && ng <= K->tile_keys;
        const int fused = rows && K->scores_softmax && !J->capped && !J->slope;
        if (direct)
            scores_direct(J, &w, r0, nr, &dt, r0 == 0, w.s);
        else if (fused)
            K->scores_softmax(w.qp + (size_t)r0 * (size_t)D, (size_t)D, nr, w.kt, CPU_BC, ng, D,
                              J->sigma, w.s, CPU_BC, ra, rz, w.m + r0, w.l + r0, w.corr,
                              w.rbad + r0);
        else
            K->scores(w.qp + (size_t)r0 * (size_t)D, (size_t)D, nr, w.kt, CPU_BC, ncols, D,
                      J->sigma, w.s, CPU_BC);
        const int masked = !full || J->mask || bad;
        if (fused) {
            /* scores_softmax did the softmax step too */
        } else if (rows) {
            /* The finite check, the exclusion and the softmax step in one kernel call for
             * the group (the same values as the per-row calls below). */
            for (int t = 0; t < nr && (J->capped || J->slope); t++) {
                const int64_t pi = (r0 + t) / G, h = hk * G + (r0 + t) % G;
                float *sr = w.s + (size_t)t * CPU_BC;
                if (ra[t] < rz[t] && J->capped)
                    K->softcap(sr, ng, J->cap, J->rcap);
                if (ra[t] < rz[t] && J->slope)
                    K->alibi(sr, ng, J->slope[h], w.ppr[pi] - j0);
            }
            K->softmax_rows(w.s, CPU_BC, nr, ng, ra, rz, w.m + r0, w.l + r0, w.corr, w.rbad + r0);
        } else
            rows_step(J, &w, b, hk, i0, j0, r0, nr, ng, ra, rz, masked, bad);
        float *orows = w.o + (size_t)r0 * dvp;
        if (direct) {
            pv_direct(J, w.s, nr, &dt, r0 == 0, w.corr, orows);
            continue;
        }
        if (!bad) {
            K->pv(w.s, CPU_BC, nr, w.vp, dvp, ng, (int)dvp, w.corr, orows, dvp);
            continue;
        }
        /* A V tile with NaN/inf: add kept keys only (0 * inf would be NaN). */
        for (int t = 0; t < nr; t++) {
            float *orow = orows + (size_t)t * dvp;
            const float *pr = w.s + (size_t)t * CPU_BC;
            const unsigned char *kr = w.kept + (size_t)t * CPU_BC;
            for (size_t e = 0; e < dvp; e++)
                orow[e] *= w.corr[t];
            for (int c = 0; c < ng; c++) {
                if (!kr[c])
                    continue;
                const float *vr = w.vp + (size_t)c * dvp;
                for (size_t e = 0; e < dvp; e++)
                    orow[e] += pr[c] * vr[e];
            }
        }
    }
}

/* The rows of a finished item: to the output, or a part of a split group for the merge. */
static void item_end(const job *J, irun *s)
{
    const cpu_plan *pl = &J->pl;
    const cpu_item *it = s->it;
    ws w = s->w;
    const int64_t b = s->b, hk = s->hk, i0 = s->i0, G = pl->G, NR = s->NR;
    const size_t dvp = J->dvp;
    if (pl->nsplit == 1) {
        for (int64_t r = 0; r < NR; r++)
            write_row(J, &w, w.o + (size_t)r * dvp, w.m[r], w.l[r], w.rbad[r], b, hk * G + r % G,
                      i0 + r / G, r / G);
        return;
    }
    /* A part of a split group: keep (m, l, bad, O) for the merge. */
    float *part = J->partials + (size_t)(it->group * pl->nsplit + it->split) * J->rmax * J->pstride;
    for (int64_t r = 0; r < NR; r++) {
        float *pr = part + (size_t)r * J->pstride;
        pr[0] = w.m[r];
        pr[1] = w.l[r];
        pr[2] = w.rbad[r];
        memcpy(pr + 3, w.o + (size_t)r * dvp, dvp * sizeof *pr);
    }
}

static void item_run(void *varg, int64_t idx, int tid)
{
    const job *J = varg;
    const cpu_item *it = &J->pl.items[idx];
    irun s;
    if (!item_begin(J, &s, it, J->wsb[tid]))
        return;
    const int64_t bc = J->pl.bc;
    for (int64_t j0 = it->klo; j0 < it->khi; j0 += bc) {
        /* A decode item's last tile asks for the first tile of the item this thread runs next,
         * claimed now; otherwise every item starts with a tile that nothing asked for, which
         * the hardware prefetchers alone read at a third of the rate (README, "Item to
         * item"). */
        const int64_t c =
            s.direct_item && J->pool && j0 + bc >= it->khi ? cpu_pool_claim(J->pool, tid) : -1;
        inext nx = {0, 0, 0, 0};
        if (c >= 0) {
            const cpu_item *ni = &J->pl.items[c];
            int64_t i0, nq;
            group_coords(&J->pl, ni->group, &nx.b, &nx.hk, &i0, &nq);
            nx.j0 = ni->klo;
            nx.khi = ni->khi;
        }
        item_tile(J, &s, j0, c >= 0 ? &nx : NULL);
    }
    item_end(J, &s);
}

/* A run of kv head hk's rows where r is kv head hk0's: the heads of a page (or of a batch row)
 * lie a head stride apart. */
static cpu_run head_run(const attnref_tensor *t, size_t esz, cpu_run r, int64_t dh)
{
    r.src = (const char *)r.src + (ptrdiff_t)(dh * t->strides[1]) * (ptrdiff_t)esz;
    return r;
}

/* The tile of keys j0.. of a bundle's n heads, page by page: the scores of every head for a
 * page, then the next page, then each head's softmax step, then P.V the same way.  Why: a
 * page of 16 holds each head's rows in a 4-8 KiB piece, and reading them head by head (eight
 * pieces of eight pages, then the next head's) is a scattered read; page by page is one
 * in-order read per page, with the next page asked for as it goes (README, "Pages of 16 at
 * B 8: the order of the loads": 1.04-1.15x at B 8, 1.10x at B 1 in f32).  Every
 * head computes what item_tile computes: the scores per key are independent, and P.V over a
 * page at a time is O * corr, then the same FMAs in key order (after the first page O as it
 * is, which factor 1 gives exactly).  Returns 0 where the tile is not for this order (a head
 * not direct here, a row group of more than CPU_DR rows, a tile of one run or of runs under 16
 * keys on average): the caller runs item_tile per head. */
static int bundle_tile(const job *J, irun *s, const int *live, int n, int64_t j0)
{
    const cpu_kernels *K = J->k;
    if (!K->scores_runs || !K->pv_runs || J->mask)
        return 0;
    const int bc = J->pl.bc;
    const cpu_item *it = s[0].it;
    const int nk = (int)(it->khi - j0 < bc ? it->khi - j0 : bc);
    int h0 = -1;
    for (int k = 0; k < n; k++) {
        if (!live[k])
            continue;
        if (!s[k].direct_item || s[k].NR > CPU_DR)
            return 0;
        for (int64_t pi = 0; pi < s[k].nq; pi++)
            if (!(s[k].w.plo[pi] <= j0 && s[k].w.phi[pi] >= j0 + nk && s[k].w.pex[pi]))
                return 0;
        h0 = h0 < 0 ? k : h0;
    }
    if (h0 < 0)
        return 1;
    /* Pages under 16 slots make runs under 16 keys whatever the tile: no runs to list. */
    if (J->table && J->P < 16)
        return 0;
    cpu_run kr[CPU_BC], vr[CPU_BC];
    const int64_t b = s[h0].b, hk0 = s[h0].hk, D = J->pl.D;
    const int nr = tile_runs(J, b, hk0, j0, nk, kr, vr);
    /* Runs under 16 keys on average (pages of 1 to 8) would cost more in calls, and in O reloaded
     * per run, than their order gains: one call for the tile per head, as before. */
    if (nr < 2 || (int64_t)nr * 16 > nk)
        return 0;
    /* The next tile's first K run, to ask for during the last V page. */
    cpu_run nk0 = {NULL, 0, 0};
    if (it->khi > j0 + nk) {
        int64_t ko, vo;
        const int64_t run = kv_row(J, b, hk0, j0 + nk, &ko, &vo), left = it->khi - j0 - nk;
        const int64_t len = run < left ? run : left;
        nk0 = (cpu_run){elem(J->kk, J->esz, ko), J->kk->strides[2], (int)(len < bc ? len : bc)};
    }
    const size_t esz = J->esz;
    /* Across K and V (the last K page asks for the first V page, the last V page for the next
     * K page) only where their rows are as long: a kernel asks for rows of its own length. */
    const int across = D == J->pl.Dv;

    for (int u = 0, c0 = 0; u < nr; c0 += kr[u].n, u++)
        for (int k = 0; k < n; k++) {
            if (!live[k])
                continue;
            const int64_t dh = s[k].hk - hk0;
            const cpu_run r = head_run(J->kk, esz, kr[u], dh);
            /* Asked for meanwhile: this head's piece of the next page, or of the first V page. */
            const cpu_run pf =
                u + 1 < nr ? head_run(J->kk, esz, kr[u + 1], dh) : head_run(J->v, esz, vr[0], dh);
            K->scores_runs(s[k].w.qr, s[k].w.ldqr, (int)s[k].NR, &r, 1, s[k].w.qdt, D, J->sigma,
                           s[k].w.s + c0, CPU_BC, &pf, u + 1 < nr || across);
        }
    int ra[CPU_DR], rz[CPU_DR];
    for (int t = 0; t < CPU_DR; t++) {
        ra[t] = 0;
        rz[t] = nk;
    }
    for (int k = 0; k < n; k++)
        if (live[k])
            rows_step(J, &s[k].w, b, s[k].hk, s[k].i0, j0, 0, (int)s[k].NR, nk, ra, rz, 0, 0);
    for (int u = 0, c0 = 0; u < nr; c0 += vr[u].n, u++)
        for (int k = 0; k < n; k++) {
            if (!live[k])
                continue;
            const int64_t dh = s[k].hk - hk0;
            const cpu_run r = head_run(J->v, esz, vr[u], dh);
            /* Meanwhile: the next V page's piece, or the next tile's first K page's. */
            const cpu_run pf = u + 1 < nr ? head_run(J->v, esz, vr[u + 1], dh)
                               : nk0.n    ? head_run(J->kk, esz, nk0, dh)
                                          : r;
            K->pv_runs(s[k].w.s + c0, CPU_BC, (int)s[k].NR, &r, 1, J->dt, J->pl.Dv,
                       u == 0 ? s[k].w.corr : NULL, s[k].w.o, J->dvp, &pf,
                       u + 1 < nr || (nk0.n && across));
        }
    return 1;
}

/* Task t of a bundled call: the items of J->bundle[t], kv heads next to each other with the same
 * keys, run tile by tile, every head of a tile before the next tile (page by page within the
 * tile where bundle_tile can).  Why: a small page holds
 * each head's rows in a short run (pages of 16: 4-8 KiB per head), and one thread reading runs
 * that short, one head after the other, keeps too few misses in flight; the heads of a page
 * side by side are one longer run (README, "Paged KV"). */
static void bundle_run(void *varg, int64_t t, int tid)
{
    const job *J = varg;
    const int64_t *ids = J->bundle + (size_t)t * (size_t)J->hb;
    irun s[CPU_HB_MAX];
    int live[CPU_HB_MAX], n = 0, any = 0;
    while (n < J->hb && ids[n] >= 0) {
        live[n] = item_begin(J, &s[n], &J->pl.items[ids[n]],
                             (char *)J->wsb[tid] + (size_t)n * J->L.bytes);
        any |= live[n++];
    }
    const cpu_item *it = &J->pl.items[ids[0]]; /* a bundle's items have the same keys */
    const int bc = J->pl.bc;
    for (int64_t j0 = it->klo; any && j0 < it->khi; j0 += bc) {
        /* The next tile's pages start where its first head's runs do (the heads of a page lie
         * side by side): wake them now, as wake_runs does a tile ahead for a single item. */
        const int64_t left = it->khi - j0 - bc;
        if (left > 0)
            wake_runs(J, s[0].b, s[0].hk, j0 + bc, left < bc ? (int)left : bc);
        if (bundle_tile(J, s, live, n, j0))
            continue;
        for (int k = 0; k < n; k++) {
            const inext nx = k + 1 < n ? (inext){s[k + 1].b, s[k + 1].hk, j0, it->khi}
                                       : (inext){s[0].b, s[0].hk, j0 + bc, it->khi};
            if (live[k])
                item_tile(J, &s[k], j0, &nx);
        }
    }
    for (int k = 0; k < n; k++)
        if (live[k])
            item_end(J, &s[k]);
}

/* Merge the parts of group g (flash-decoding): M = max m_s, l = sum l_s exp(m_s - M),
 * O = sum O_s exp(m_s - M); parts that kept nothing (l_s = 0) are skipped, a NaN l_s poisons,
 * a part's bad flag sends the row to row_f64. */
static void merge_run(void *varg, int64_t g, int tid)
{
    const job *J = varg;
    const cpu_plan *pl = &J->pl;
    ws w = ws_carve(J->wsb[tid], &J->L, J->dvp);
    int64_t b, hk, i0, nq;
    group_coords(pl, g, &b, &hk, &i0, &nq);
    if (J->f64) {
        for (int64_t r = 0; r < nq * pl->G; r++)
            row_f64(J, &w, b, hk * pl->G + r % pl->G, i0 + r / pl->G);
        return;
    }
    row_ranges(J, &w, b, i0, nq);
    const size_t dvp = J->dvp, stride = J->rmax * J->pstride;
    const float *part = J->partials + (size_t)g * (size_t)pl->nsplit * stride;
    for (int64_t r = 0; r < nq * pl->G; r++) {
        float M = -INFINITY;
        int bad = 0;
        for (int s = 0; s < pl->nsplit; s++) {
            const float *pr = part + (size_t)s * stride + (size_t)r * J->pstride;
            M = pr[0] > M ? pr[0] : M;
            bad |= pr[2] != 0.0f;
        }
        float l = 0.0f;
        float *o = w.o; /* the thread's accumulator rows are free during the merge */
        memset(o, 0, dvp * sizeof *o);
        for (int s = 0; s < pl->nsplit && !bad; s++) {
            const float *pr = part + (size_t)s * stride + (size_t)r * J->pstride;
            if (pr[1] == 0.0f)
                continue;
            const float wgt = cpu_expf(pr[0] - M);
            l += pr[1] * wgt;
            for (size_t e = 0; e < dvp; e++)
                o[e] += pr[3 + e] * wgt;
        }
        write_row(J, &w, o, M, l, bad, b, hk * pl->G + r % pl->G, i0 + r / pl->G, r / pl->G);
    }
}

/* The per-head terms of a call as f32 (slopes, sinks) in one block at *buf. */
static int head_terms(job *J, const attnref_sdpa_params *p, int64_t Hq, void **buf)
{
    *buf = NULL;
    const int alibi = p->alibi_max_bias > 0.0, sinks = p->sinks != NULL;
    if (!alibi && !sinks)
        return 0;
    char *m = malloc((size_t)Hq * (2 * sizeof(float) + sizeof(double)));
    if (!m)
        return -1;
    *buf = m;
    if (alibi) {
        J->slope_d = (double *)m;
        J->slope = (float *)(m + (size_t)Hq * sizeof(double));
        for (int64_t h = 0; h < Hq; h++) {
            J->slope_d[h] = attnref_alibi_slope(p->alibi_max_bias, Hq, h);
            J->slope[h] = (float)J->slope_d[h];
        }
    }
    if (sinks) {
        J->sink = (float *)(m + (size_t)Hq * (sizeof(double) + sizeof(float)));
        for (int64_t h = 0; h < Hq; h++)
            J->sink[h] = (float)p->sinks[h]; /* the plugin's sinks are f32 already */
    }
    return 0;
}

/* The fields of a call's job that do not depend on where its keys live. */
static void job_init(job *J, cpu_engine *e, const attnref_tensor *q, const attnref_tensor *k,
                     const attnref_tensor *v, const attnref_sdpa_params *p,
                     const attnref_tensor *out)
{
    const int64_t D = q->shape[3], Dv = v->shape[3];
    memset(J, 0, sizeof *J);
    J->k = e->k;
    J->p = p;
    J->q = q;
    J->kk = k;
    J->v = v;
    J->out = out;
    J->dt = q->dtype;
    J->esz = attnref_dtype_size(q->dtype);
    /* The scale as an f32, applied to the finished dot product (clause 13's model);
     * attnref_sdpa_check refused one outside the f32 range. */
    J->sigma = p->has_scale ? (float)p->scale : (float)(1.0 / sqrt((double)D));
    if (p->softcap > 0.0) {
        J->capped = 1;
        J->cap = (float)p->softcap;
        J->rcap = (float)(1.0 / p->softcap);
        /* Far outside any model's caps, 1 / c or c * tanh would leave the normal f32 range. */
        J->f64 = !(p->softcap >= 0x1p-100 && p->softcap <= 0x1p100);
    }
    J->dvp = round_up((size_t)Dv, CPU_NR);
    J->pstride = J->dvp + 3;
}

/* A decode-shaped call: few rows per item (G query heads at Lq positions) and K and V rows
 * contiguous, whose tiles go to the run kernels in place. */
static int decode_shaped(const job *J, int64_t G, int64_t Lq)
{
    return Lq * G <= 2 * CPU_DR && J->kk->strides[3] == 1 && J->v->strides[3] == 1;
}

/* Kv heads per task (bundle_run): a paged call of few rows per item (decode: the rows are read
 * in place) whose pages hold each head's K and V rows in short runs bundles its heads; anything
 * else runs its items alone (1).  The bound on the runs also bounds D and Dv (P D and P Dv
 * elements under 64 KiB), so a bundle's hb scratch blocks stay under about 150 MiB per thread at
 * the extreme (P 1, D = Dv = 32767 in f16), inside CPU_WS_MAX, and a few hundred KiB at model
 * sizes. */
static int bundle_heads(const job *J, int64_t Hkv, int64_t G, int64_t Lq, int64_t D, int64_t Dv)
{
    if (!J->table || Hkv < 2 || !decode_shaped(J, G, Lq) ||
        (size_t)J->P * (size_t)D * J->esz >= CPU_BUNDLE_RUN_BYTES ||
        (size_t)J->P * (size_t)Dv * J->esz >= CPU_BUNDLE_RUN_BYTES)
        return 1;
    return Hkv < CPU_HB_MAX ? (int)Hkv : CPU_HB_MAX;
}

/* The tasks of a bundled call: the items of kv heads hb*k .. hb*k + hb - 1 of the same batch
 * row, query block and part, in the order the plan's cost sort first meets each bundle (its
 * items cost the same). */
static int make_bundles(job *J)
{
    const cpu_plan *pl = &J->pl;
    const int64_t hb = J->hb, nhb = (pl->Hkv + hb - 1) / hb;
    const int64_t nb = pl->B * nhb * pl->nqb * pl->nsplit;
    int64_t *pos = malloc((size_t)nb * sizeof *pos);
    J->bundle = malloc((size_t)nb * (size_t)hb * sizeof *J->bundle);
    if (!pos || !J->bundle) {
        free(pos);
        return -1;
    }
    for (int64_t t = 0; t < nb; t++)
        pos[t] = -1;
    for (int64_t t = 0; t < nb * hb; t++)
        J->bundle[t] = -1;
    J->ntasks = 0;
    for (int64_t n = 0; n < pl->nitems; n++) {
        const cpu_item *it = &pl->items[n];
        int64_t b, hk, i0, nq;
        group_coords(pl, it->group, &b, &hk, &i0, &nq);
        const int64_t id = ((b * nhb + hk / hb) * pl->nqb + i0 / pl->bq) * pl->nsplit + it->split;
        if (pos[id] < 0)
            pos[id] = J->ntasks++;
        J->bundle[pos[id] * hb + hk % hb] = n;
    }
    free(pos);
    return 0;
}

/* Plan and run a prepared job (the dimensions validated; rows: cpu_plan_make's).  Returns as
 * cpu_sdpa_run. */
static int job_exec(cpu_engine *e, job *J, int64_t B, int64_t Hq, int64_t Hkv, int64_t Lq,
                    int64_t Lk, int64_t D, int64_t Dv, const cpu_rows *rows, char *err,
                    size_t errlen)
{
    void *heads;
    if (head_terms(J, J->p, Hq, &heads) != 0) {
        snprintf(err, errlen, "cpu: cannot allocate the per-head terms");
        return -1;
    }
    J->hb = bundle_heads(J, Hkv, Hq / Hkv, Lq, D, Dv);
    /* Decode (few rows per item, K and V rows contiguous: the run kernels) takes CPU_BC keys per
     * tile whatever the table's tile_keys, which is sized for its prefill kernels (the AVX-512
     * table's hold a row's 64 scores in registers): the per-tile work (the softmax step, the run
     * lists, the O rows' reload) is spread over twice the keys there (README, "128-key tiles for
     * decode"). */
    const int runs = decode_shaped(J, Hq / Hkv, Lq);
    if (cpu_plan_make(&J->pl, J->p, B, Hq, Hkv, Lq, Lk, D, Dv, rows, e->threads, J->hb,
                      runs ? CPU_BC : J->k->tile_keys) != 0) {
        free(heads);
        snprintf(err, errlen, "cpu: cannot allocate the work list");
        return -1;
    }
    J->rmax = (size_t)(J->pl.G * J->pl.bq);
    if (!ws_layout(&J->L, J->rmax, (size_t)J->pl.bq, (size_t)D, J->dvp) ||
        J->L.bytes > CPU_WS_MAX) {
        /* A head dimension or GQA group far beyond any model's (the tiles would not fit in
         * memory, let alone a cache): not worth tiling. */
        cpu_plan_free(&J->pl);
        free(heads);
        return 1;
    }
    if (J->hb > 1 && make_bundles(J) != 0)
        goto nomem;
    for (int t = 0; t < e->threads; t++)
        if (grow(&e->ws[t], &e->ws_bytes[t], (size_t)J->hb * J->L.bytes) != 0)
            goto nomem;
    J->wsb = e->ws;
    if (J->pl.nsplit > 1) {
        const size_t per = J->rmax * J->pstride;
        const size_t parts = (size_t)J->pl.ngroups * (size_t)J->pl.nsplit;
        if (per > SIZE_MAX / sizeof(float) / parts)
            goto nomem;
        if (grow((void **)&e->partials, &e->partials_bytes, parts * per * sizeof(float)) != 0)
            goto nomem;
        J->partials = e->partials;
    }

    /* A call this small finishes before sleeping workers would wake up: run it here. */
    double work = 0.0;
    for (int64_t n = 0; n < J->pl.nitems; n++)
        work += J->pl.items[n].cost;
    const int64_t ntasks = J->hb > 1 ? J->ntasks : J->pl.nitems;
    const cpu_task_fn task = J->hb > 1 ? bundle_run : item_run;
    if (work * (double)(D + Dv) < CPU_INLINE_WORK) {
        for (int64_t n = 0; n < ntasks; n++)
            task(J, n, 0);
        for (int64_t g = 0; J->pl.nsplit > 1 && g < J->pl.ngroups; g++)
            merge_run(J, g, 0);
    } else {
        J->pool = &e->pool;
        cpu_pool_run(&e->pool, ntasks, task, J);
        if (J->pl.nsplit > 1)
            cpu_pool_run(&e->pool, J->pl.ngroups, merge_run, J);
    }
    cpu_plan_free(&J->pl);
    free(J->bundle);
    free(heads);
    return 0;

nomem:
    snprintf(err, errlen, "cpu: cannot allocate %zu bytes of scratch per thread (%d threads)",
             (size_t)J->hb * J->L.bytes, e->threads);
    cpu_plan_free(&J->pl);
    free(J->bundle);
    free(heads);
    return -1;
}

int cpu_sdpa_run(cpu_engine *e, const attnref_tensor *q, const attnref_tensor *k,
                 const attnref_tensor *v, const attnref_tensor *mask, const attnref_sdpa_params *p,
                 const attnref_tensor *out, char *err, size_t errlen)
{
    const int64_t B = q->shape[0], Hq = q->shape[1], Lq = q->shape[2], D = q->shape[3];
    const int64_t Hkv = k->shape[1], Lk = k->shape[2], Dv = v->shape[3];
    if (B == 0 || Hq == 0 || Lq == 0 || Dv == 0)
        return 0; /* nothing to write */

    job J;
    job_init(&J, e, q, k, v, p, out);
    J.mask = mask;
    J.off = p->has_causal_offset ? p->causal_offset : Lk - Lq;
    if (mask) {
        /* Broadcast a rank 0..4 mask to (B, Hq, Lq, Lk): stride 0 where the extent is 1. */
        const int32_t pad = 4 - mask->ndim;
        for (int d = 0; d < 4; d++) {
            const int64_t ext = d < pad ? 1 : mask->shape[d - pad];
            J.mst[d] = ext == 1 ? 0 : mask->strides[d - pad];
        }
    }

    return job_exec(e, &J, B, Hq, Hkv, Lq, Lk, D, Dv, NULL, err, errlen);
}

int cpu_paged_run(cpu_engine *e, const attnref_tensor *q, const cpu_paged_keys *pk,
                  const attnref_sdpa_params *p, const attnref_tensor *out, char *err, size_t errlen)
{
    const int64_t B = q->shape[0], Hq = q->shape[1], Lq = q->shape[2], D = q->shape[3];
    const int64_t Hkv = pk->k_pages->shape[1], P = pk->k_pages->shape[2];
    const int64_t Dv = pk->v_pages->shape[3];
    if (B == 0 || Hq == 0 || Lq == 0 || Dv == 0)
        return 0; /* nothing to write */
    int64_t *qoff = malloc((size_t)B * sizeof *qoff);
    if (!qoff) {
        snprintf(err, errlen, "cpu: cannot allocate the row offsets");
        return -1;
    }
    /* The keys of the call: the longest sequence; each row keeps only its own (lengths). */
    int64_t Lk = 0;
    for (int64_t b = 0; b < B; b++) {
        Lk = pk->seq_lens[b] > Lk ? pk->seq_lens[b] : Lk;
        qoff[b] = pk->seq_lens[b] - pk->query_lens[b];
    }
    attnref_sdpa_params pp = *p;
    pp.has_causal_offset = 0;
    pp.causal_offset = 0;
    pp.batch = B;
    pp.lengths = pk->seq_lens;
    pp.left_padding = NULL; /* chunks count from position 0 */
    pp.segment_ids = NULL;
    pp.block_ids = NULL;
    job J;
    job_init(&J, e, q, pk->k_pages, pk->v_pages, &pp, out);
    J.table = pk->table;
    J.tw = pk->tw;
    J.P = P;
    J.qoff = qoff;
    const cpu_rows rows = {qoff, pk->query_lens};
    const int rc = job_exec(e, &J, B, Hq, Hkv, Lq, Lk, D, Dv, &rows, err, errlen);
    free(qoff);
    return rc;
}
