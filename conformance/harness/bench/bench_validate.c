/* bench_validate.c — check a benchmark's first result against the reference (bench.h), so a
 * backend cannot be fast by being wrong.
 *
 * Why sampled rows: the reference computes in binary64 one element at a time, which for the
 * large shapes would take far longer than the benchmark.  Each output row (b, h, i) depends
 * only on query row i of head h and the keys of its kv head, so it is recomputed alone: a
 * one-row slice (1, 1, 1, D) of q with the (1, 1, Lk, D) keys and (1, 1, Lk, Dv) values of
 * kv head h / (Hq / Hkv), the causal offset moved to off + i (query 0 of the slice sits where
 * query i sat: SPEC clause 3) and the window, lengths[b] and left_padding[b] unchanged, as
 * the chunk, softcap and batch row b's documents and blocks; the sink of head h; and ALiBi
 * through the max_bias whose one-head slope is head h of Hq's, bit for bit (slice_max_bias).
 * The slices borrow the benchmark's buffers: nothing of the size of the inputs is copied.
 *
 * Each element is judged as a golden case's would be: the allowed error of SPEC clause 13,
 * computed from the slice's own inputs (acase_sdpa_bound on an in-memory case around the
 * slice), and the harness comparator (compare.h), which also requires a row with no kept key
 * to be exactly 0 (clause 9).
 */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/sdpa_rows.h"
#include "attnref/sdpa.h"
#include "attnref/tensor.h"
#include "run/compare.h"

#define BV_MAX_ROWS 64
/* Rows past the first four are checked while their kept keys x (D + Dv) stay within this:
 * a long decode row costs the reference and the bound about half a second. */
#define BV_MIN_ROWS 4
#define BV_WORK_BUDGET ((int64_t)1 << 26)

/* The rows to check, as flat (b * Hq + h) * Lq + i: all when there are at most 64; else the
 * first and last query rows of the first and last (b, h), then rows from a fixed seed (the
 * same rows for every backend). */
static int pick_rows(const bs_shape *s, int64_t rows[BV_MAX_ROWS])
{
    const int64_t total = s->b * s->hq * s->lq;
    int n = 0;
    if (total <= BV_MAX_ROWS) {
        for (int64_t r = 0; r < total; r++)
            rows[n++] = r;
        return n;
    }
    const int64_t last_bh = (s->b * s->hq - 1) * s->lq;
    const int64_t fixed[4] = {0, s->lq - 1, last_bh, last_bh + s->lq - 1};
    uint64_t st = 0x62656e6368ull; /* "bench" */
    for (int k = 0; n < BV_MAX_ROWS; k++) {
        const int64_t r =
            k < 4 ? fixed[k] : (int64_t)(acase_splitmix64_next(&st) % (uint64_t)total);
        int seen = 0;
        for (int x = 0; x < n; x++)
            seen |= rows[x] == r;
        if (!seen)
            rows[n++] = r;
    }
    return n;
}

/* The max_bias whose slope for head 0 of 1 is attnref_alibi_slope(max_bias, hq, h): that slope
 * is exp2(-(max_bias * (h + 1)) / n), or exp2(-((max_bias / 2) * (2 (h - n) + 1)) / n), and one
 * head (n = 1) makes it exp2(-(this * 1) / 1), the same operations on the same value. */
static double slice_max_bias(double max_bias, int64_t hq, int64_t h)
{
    int64_t n = 1;
    while (n * 2 <= hq)
        n *= 2;
    if (h < n)
        return max_bias * (double)(h + 1) / (double)n;
    return (max_bias / 2.0) * (double)(2 * (h - n) + 1) / (double)n;
}

/* Check row (b, h, i).  Returns 1 passed, 0 failed (message set), -1 the check could not run
 * (message set). */
static int check_row(const bs_shape *s, attnref_dtype dt, const char *q, const char *k,
                     const char *v, const attnconf_tensor *out, int64_t b, int64_t h, int64_t i,
                     double *exp, double *ratio, char *msg, size_t msglen)
{
    const size_t es = attnref_dtype_size(dt);
    const int64_t hk = h / (s->hq / s->hkv);
    const int64_t off = s->has_causal_offset ? s->causal_offset : s->lk - s->lq;
    void *qd = (void *)(q + (size_t)(((b * s->hq + h) * s->lq + i) * s->d) * es);
    void *kd = (void *)(k + (size_t)((b * s->hkv + hk) * s->lk * s->d) * es);
    void *vd = (void *)(v + (size_t)((b * s->hkv + hk) * s->lk * s->dv) * es);
    const int64_t qs[4] = {1, 1, 1, s->d}, ks[4] = {1, 1, s->lk, s->d},
                  vs[4] = {1, 1, s->lk, s->dv}, os[4] = {1, 1, 1, s->dv};
    attnref_tensor tq, tk, tv;
    attnref_diag diag = {{0}};
    int64_t *len = s->lengths ? &s->lengths[b] : NULL;
    int64_t *pad = s->left_padding ? &s->left_padding[b] : NULL;
    int64_t *seg = s->segment_ids ? s->segment_ids + b * s->lk : NULL;
    int64_t *blk = s->block_ids ? s->block_ids + b * s->lk : NULL;
    const double alibi =
        s->alibi_max_bias > 0.0 ? slice_max_bias(s->alibi_max_bias, s->hq, h) : 0.0;
    const attnref_sdpa_params p = {.causal = s->causal,
                                   .has_causal_offset = s->causal,
                                   .causal_offset = off + i,
                                   .window = s->window,
                                   .batch = 1,
                                   .lengths = len,
                                   .left_padding = pad,
                                   .softcap = s->softcap,
                                   .alibi_max_bias = alibi,
                                   .sinks = s->sinks ? &s->sinks[h] : NULL,
                                   .chunk = s->chunk,
                                   .segment_ids = seg,
                                   .block_ids = blk};
    int rc = attnref_tensor_init(&tq, qd, dt, 4, qs, &diag);
    if (rc == ATTNREF_OK)
        rc = attnref_tensor_init(&tk, kd, dt, 4, ks, &diag);
    if (rc == ATTNREF_OK)
        rc = attnref_tensor_init(&tv, vd, dt, 4, vs, &diag);
    if (rc == ATTNREF_OK)
        rc = attnref_sdpa_f64(&tq, &tk, &tv, NULL, &p, exp, &diag);
    if (rc != ATTNREF_OK) {
        snprintf(msg, msglen, "the reference refused row [%lld,%lld,%lld]: %s", (long long)b,
                 (long long)h, (long long)i, diag.msg);
        return -1;
    }

    /* The slice as an in-memory case, every buffer borrowed (so it is never acase_free'd). */
    acase c;
    memset(&c, 0, sizeof c);
    c.op = ACASE_OP_SDPA;
    snprintf(c.id, sizeof c.id, "bench.row.%lld_%lld_%lld", (long long)b, (long long)h,
             (long long)i);
    const acase_tensor base = {.present = 1,
                               .dtype = dt,
                               .ndim = 4,
                               .shape = {1, 1, 1, 1},
                               .layout = ACASE_LAYOUT_BHLD,
                               .source = ACASE_SRC_INLINE};
    c.q = c.k = c.v = base;
    memcpy(c.q.shape, qs, sizeof qs);
    memcpy(c.k.shape, ks, sizeof ks);
    memcpy(c.v.shape, vs, sizeof vs);
    c.q.numel = s->d, c.k.numel = s->lk * s->d, c.v.numel = s->lk * s->dv;
    c.q.data = qd, c.k.data = kd, c.v.data = vd;
    c.causal = s->causal;
    c.has_causal_offset = s->causal;
    c.causal_offset = off + i;
    c.window = s->window;
    c.batch = 1;
    c.lengths = len;
    c.left_padding = pad;
    /* The case's owned arrays borrowed too (never freed here). */
    c.softcap = s->softcap;
    c.alibi_max_bias = alibi;
    c.sinks = s->sinks ? &s->sinks[h] : NULL;
    c.nsinks = s->sinks ? 1 : 0;
    c.chunk = s->chunk;
    c.segment_ids = seg;
    c.block_ids = blk;
    c.ids_len = seg || blk ? s->lk : 0;
    c.expected.dtype = dt;
    c.expected.ndim = 4;
    memcpy(c.expected.shape, os, sizeof os);
    c.expected.numel = s->dv;
    c.expected.values = exp;
    double ulps, row_atol;
    char err[256];
    if (acase_sdpa_set_row_checks(&c, err, sizeof err) != 0 ||
        acase_sdpa_bound(&c, &ulps, &row_atol, err, sizeof err) != 0) {
        free(c.expected.row_check);
        snprintf(msg, msglen, "bound of row [%lld,%lld,%lld]: %s", (long long)b, (long long)h,
                 (long long)i, err);
        return -1;
    }

    const size_t eo = attnref_dtype_size((attnref_dtype)out->dtype);
    const int64_t at = b * out->strides[0] + h * out->strides[1] + i * out->strides[2];
    const char *got = (const char *)out->data + (size_t)at * eo;
    const int64_t ostr[4] = {0, 0, 0, out->strides[3]};
    const hc_tol tol = {ulps, dt, &row_atol, 0};
    hc_stats st;
    int ok = hc_compare_rows(got, (attnref_dtype)out->dtype, 4, os, ostr, exp, &tol,
                             c.expected.row_check, s->dv, &st);
    /* A NaN against a number has no ratio (compare.h leaves it out of max_ratio): the row's
     * figure is NaN then, which sticks in bv_validate's maximum, as a ratio must not read as
     * within tolerance.  The message counts them. */
    *ratio = st.nans_close.got + st.nans_close.missed > 0 ? NAN : st.max_ratio;
    if (!ok) {
        char m[400];
        hc_failure_message(&st, &tol, m, sizeof m);
        snprintf(msg, msglen, "row [%lld,%lld,%lld]: %s", (long long)b, (long long)h, (long long)i,
                 m);
    }
    free(c.expected.row_check);
    return ok;
}

int bv_validate(const bs_shape *s, attnref_dtype dt, const void *q, const void *k, const void *v,
                const attnconf_tensor *out, bv_outcome *res)
{
    memset(res, 0, sizeof *res);
    res->ok = 1;
    int64_t rows[BV_MAX_ROWS];
    const int n = pick_rows(s, rows);
    double *exp = malloc((size_t)s->dv * sizeof *exp);
    if (!exp) {
        snprintf(res->message, sizeof res->message, "validation: out of memory");
        return -1;
    }
    int64_t work = 0;
    for (int x = 0; x < n; x++) {
        const int64_t i = rows[x] % s->lq, bh = rows[x] / s->lq;
        const int64_t kept = bs_row_keys(s, bh / s->hq, i);
        work += (kept > 0 ? kept : 1) * (s->d + s->dv);
        if (x >= BV_MIN_ROWS && work > BV_WORK_BUDGET)
            break;
        double ratio = 0;
        char msg[sizeof res->message];
        int ok =
            check_row(s, dt, q, k, v, out, bh / s->hq, bh % s->hq, i, exp, &ratio, msg, sizeof msg);
        if (ok < 0) {
            snprintf(res->message, sizeof res->message, "%s", msg);
            free(exp);
            return -1;
        }
        res->rows++;
        if (!(ratio <= res->max_err_ratio)) /* a NaN ratio sticks */
            res->max_err_ratio = ratio;
        if (!ok && res->ok) {
            res->ok = 0;
            snprintf(res->message, sizeof res->message, "%s", msg);
        }
    }
    free(exp);
    return 0;
}
