/* opencl_sdpa.cl — the opencl backend's attention kernel (OpenCL C 1.2; README.md beside it).
 *
 * One work-group computes BQ query rows of one (batch b, query head h): the rows' Q in local
 * memory as f32, then, tile by tile of BK keys, K and V widened to f32 in local memory; the
 * scores of the tile (scale * q.k, softcap, ALiBi, the mask tensor), an online-softmax update of
 * each row's running max m, sum l and f32 accumulator O; finally O / l with the sink joined,
 * rounded once to the output dtype.  Every variant is a run-time argument, so the program is
 * built once per context.
 *
 * Exactness (SPEC.md clauses 9-13): an excluded key is never read (its K or V may hold NaN or
 * inf); a row that keeps no key is +0; a kept score or a result that is not finite in f32 sets
 * the row's flag and the host computes that row again in binary64 (clause 2: f32 overflow from
 * finite inputs; a kept NaN).  f16 goes through vload_half / vstore_half_rte (exact), bf16
 * through bit operations (exact widening, round to nearest even on output).
 */

/* dtypes, as attnconf_dtype */
#define DT_F32 1
#define DT_F16 2
#define DT_BF16 3
#define DT_BOOL 4

/* meta[]: the call's integers (opencl_backend.c fills it in this order). */
#define M_B 0
#define M_HQ 1
#define M_HKV 2
#define M_LQ 3
#define M_LK 4
#define M_D 5
#define M_DV 6
#define M_QS 7   /* q strides, 4 */
#define M_KS 11  /* k strides */
#define M_VS 15  /* v strides */
#define M_OS 19  /* out strides */
#define M_MS 23  /* mask strides, broadcast to (B, Hq, Lq, Lk): 0 on broadcast axes */
#define M_DT 27  /* q/k/v/out dtype */
#define M_MDT 28 /* mask dtype, 0 = no mask */
#define M_CAUSAL 29
#define M_OFF 30 /* causal offset (Lk - Lq unless given) */
#define M_WINDOW 31
#define M_CHUNK 32
#define M_HAS_LEN 33
#define M_HAS_LP 34
#define M_HAS_SEG 35
#define M_HAS_BLK 36
#define M_HAS_SINK 37
#define M_HAS_ALIBI 38
#define M_BQ 39
#define M_BK 40
#define M_N 41

static float load_el(const __global uchar *base, long dt, long idx)
{
    if (dt == DT_F32)
        return ((const __global float *)base)[idx];
    if (dt == DT_F16)
        return vload_half((size_t)idx, (const __global half *)base);
    if (dt == DT_BF16)
        return as_float((uint)((const __global ushort *)base)[idx] << 16);
    return ((const __global uchar *)base)[idx] != 0 ? 1.0f : 0.0f; /* bool */
}

/* f32 -> bf16 bits, round to nearest even; a NaN stays a (quiet) NaN. */
static ushort to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (ushort)((u >> 16) | 0x40u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

static void store_el(__global uchar *base, long dt, long idx, float f)
{
    if (dt == DT_F32)
        ((__global float *)base)[idx] = f;
    else if (dt == DT_F16)
        vstore_half_rte(f, (size_t)idx, (__global half *)base);
    else
        ((__global ushort *)base)[idx] = to_bf16(f);
}

static long floor_div(long x, long c)
{
    const long q = x / c;
    return q - (x % c != 0 && x < 0);
}

/* attnref_sdpa_key_kept (reference/src/sdpa.c), the structural rule of clauses 3-5, 19, 20. */
static int key_kept(__constant long *meta, const __global long *len, const __global long *lpad,
                    const __global long *seg, const __global long *blk, long b, long i, long j)
{
    const long lk = meta[M_LK], off = meta[M_OFF];
    if (meta[M_HAS_LEN] && j >= len[b])
        return 0;
    if (meta[M_HAS_LP] && j < lpad[b])
        return 0;
    long pos = 0;
    int in_slot = 0;
    if (off < lk) {
        pos = off + i;
        in_slot = pos >= 0 && pos < lk;
    }
    if (meta[M_HAS_SEG] && (!in_slot || seg[b * lk + pos] != seg[b * lk + j]))
        return 0;
    if (!meta[M_CAUSAL])
        return 1;
    const long d = j - i, window = meta[M_WINDOW], chunk = meta[M_CHUNK];
    if (d > off) {
        if (!meta[M_HAS_BLK] || !in_slot || blk[b * lk + pos] < 0 ||
            blk[b * lk + pos] != blk[b * lk + j])
            return 0;
    } else if (window > 0 && (d < 0 && off > LONG_MAX + d ? 1 : off - d >= window)) {
        return 0;
    }
    if (chunk > 0) {
        const long lp = meta[M_HAS_LP] ? lpad[b] : 0;
        const long t = (j - lp) - floor_div(j - lp, chunk) * chunk;
        if (d > off) {
            if (floor_div(pos - lp, chunk) != floor_div(j - lp, chunk))
                return 0;
        } else if ((d < 0 && off > LONG_MAX + d) || off - d >= chunk - t) {
            return 0;
        }
    }
    return 1;
}

/* Local memory: lq[BQ*D], lk[BK*D], lv[BK*Dv], lo[BQ*Dv], ls[BQ*BK] (scores, then weights),
 * lkeep[BQ*BK], and per row m, l, alpha, bad. */
__kernel void attn(__constant long *meta, const __global uchar *q, const __global uchar *k,
                   const __global uchar *v, const __global uchar *mask, __global uchar *out,
                   const __global long *len, const __global long *lpad, const __global long *seg,
                   const __global long *blk, const __global float *sinks,
                   const __global float *slopes, float scale, float softcap,
                   __global int *bad_rows, __global int *bad_count, __local float *lq,
                   __local float *lk, __local float *lv, __local float *lo, __local float *ls,
                   __local uchar *lkeep, __local float *lrow)
{
    const long B = meta[M_B], Hq = meta[M_HQ], Hkv = meta[M_HKV], Lq = meta[M_LQ];
    const long Lk = meta[M_LK], D = meta[M_D], Dv = meta[M_DV], dt = meta[M_DT];
    const long mdt = meta[M_MDT], BQ = meta[M_BQ], BK = meta[M_BK], off = meta[M_OFF];
    const long nblk = (Lq + BQ - 1) / BQ;
    const long g = get_group_id(0);
    const long bh = g / nblk, i0 = (g % nblk) * BQ;
    const long b = bh / Hq, h = bh % Hq, hk = h / (Hq / Hkv);
    const long lid = get_local_id(0), nl = get_local_size(0);
    const long rows = min(BQ, Lq - i0);
    __local float *lm = lrow, *ll = lrow + BQ, *la = lrow + 2 * BQ, *lbad = lrow + 3 * BQ;
    if (b >= B)
        return;
    const float slope = meta[M_HAS_ALIBI] ? slopes[h] : 0.0f;

    for (long x = lid; x < rows * D; x += nl) {
        const long r = x / D, d = x % D;
        lq[x] = load_el(q, dt,
                        b * meta[M_QS] + h * meta[M_QS + 1] + (i0 + r) * meta[M_QS + 2] +
                            d * meta[M_QS + 3]);
    }
    for (long x = lid; x < rows * Dv; x += nl)
        lo[x] = 0.0f;
    for (long r = lid; r < BQ; r += nl) {
        lm[r] = -INFINITY;
        ll[r] = 0.0f;
        lbad[r] = 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    for (long j0 = 0; j0 < Lk; j0 += BK) {
        const long cols = min(BK, Lk - j0);
        /* Which keys some row keeps: only those are read. */
        for (long x = lid; x < rows * cols; x += nl) {
            const long r = x / cols, c = x % cols, j = j0 + c;
            int kept = key_kept(meta, len, lpad, seg, blk, b, i0 + r, j);
            if (kept && mdt) {
                const float mv =
                    load_el(mask, mdt,
                            b * meta[M_MS] + h * meta[M_MS + 1] + (i0 + r) * meta[M_MS + 2] +
                                j * meta[M_MS + 3]);
                kept = mdt == DT_BOOL ? mv != 0.0f : mv != -INFINITY;
                ls[r * BK + c] = mdt == DT_BOOL ? 0.0f : mv;
            } else {
                ls[r * BK + c] = 0.0f;
            }
            lkeep[r * BK + c] = (uchar)kept;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* K and V rows some row keeps, widened to f32. */
        for (long x = lid; x < cols * (D + Dv); x += nl) {
            const long c = x / (D + Dv), e = x % (D + Dv), j = j0 + c;
            int any = 0;
            for (long r = 0; r < rows && !any; r++)
                any = lkeep[r * BK + c];
            if (!any)
                continue;
            if (e < D)
                lk[c * D + e] = load_el(k, dt,
                                        b * meta[M_KS] + hk * meta[M_KS + 1] + j * meta[M_KS + 2] +
                                            e * meta[M_KS + 3]);
            else
                lv[c * Dv + (e - D)] =
                    load_el(v, dt,
                            b * meta[M_VS] + hk * meta[M_VS + 1] + j * meta[M_VS + 2] +
                                (e - D) * meta[M_VS + 3]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* Scores of the kept pairs, in SPEC order: scale, softcap, ALiBi, the additive mask. */
        for (long x = lid; x < rows * cols; x += nl) {
            const long r = x / cols, c = x % cols;
            if (!lkeep[r * BK + c])
                continue;
            float dot = 0.0f;
            for (long d = 0; d < D; d++)
                dot = fma(lq[r * D + d], lk[c * D + d], dot);
            float s = scale * dot;
            if (softcap > 0.0f)
                s = softcap * tanh(s / softcap);
            if (meta[M_HAS_ALIBI])
                s -= slope * (float)fabs((double)(off + i0 + r) - (double)(j0 + c));
            s += ls[r * BK + c];
            ls[r * BK + c] = s;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* One item per row: the online-softmax update; P replaces the scores. */
        for (long r = lid; r < rows; r += nl) {
            float mx = lm[r];
            int n = 0;
            for (long c = 0; c < cols; c++) {
                if (!lkeep[r * BK + c])
                    continue;
                const float s = ls[r * BK + c];
                if (!isfinite(s))
                    lbad[r] = 1.0f;
                mx = fmax(mx, s);
                n++;
            }
            if (n == 0 || lbad[r] != 0.0f) {
                la[r] = 1.0f;
                for (long c = 0; c < cols; c++)
                    lkeep[r * BK + c] = 0; /* nothing of this tile for the row */
                continue;
            }
            const float alpha = exp(lm[r] - mx); /* exp(-inf) = 0 on the first kept key */
            float sum = 0.0f;
            for (long c = 0; c < cols; c++) {
                if (!lkeep[r * BK + c])
                    continue;
                const float p = exp(ls[r * BK + c] - mx);
                ls[r * BK + c] = p;
                sum += p;
            }
            la[r] = alpha;
            ll[r] = ll[r] * alpha + sum;
            lm[r] = mx;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (long x = lid; x < rows * Dv; x += nl) {
            const long r = x / Dv, e = x % Dv;
            float acc = lo[x] * la[r];
            for (long c = 0; c < cols; c++)
                if (lkeep[r * BK + c])
                    acc = fma(ls[r * BK + c], lv[c * Dv + e], acc);
            lo[x] = acc;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    /* O / l with the sink joined; +0 for a row that kept no key; flagged rows go to the host. */
    for (long x = lid; x < rows * Dv; x += nl) {
        const long r = x / Dv, e = x % Dv, i = i0 + r;
        float val = 0.0f;
        const float l = ll[r];
        if (l != 0.0f) {
            float f = 1.0f, lsum = l;
            if (meta[M_HAS_SINK]) {
                const float sg = sinks[h], m = lm[r];
                if (sg > m) {
                    f = exp(m - sg);
                    lsum = l * f + 1.0f;
                } else {
                    lsum = l + exp(sg - m);
                }
            }
            val = lo[x] * f / lsum;
        }
        if (!isfinite(val))
            lbad[r] = 1.0f; /* read below only after the barrier */
        store_el(out, dt,
                 b * meta[M_OS] + h * meta[M_OS + 1] + i * meta[M_OS + 2] + e * meta[M_OS + 3],
                 val);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (long r = lid; r < rows; r += nl)
        if (lbad[r] != 0.0f) {
            bad_rows[(b * Hq + h) * Lq + i0 + r] = 1;
            atomic_inc(bad_count);
        }
}
