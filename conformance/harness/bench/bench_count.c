/* bench_count.c — the work of a perf shape, counted exactly from its structure, and the
 * capabilities it needs from a backend (bench.h).
 *
 * Why a closed form: a row-by-row loop over Lq (let alone Lq x Lk) costs as much as a slow
 * benchmark for the long shapes, while the keep rule of the reference (attnref_sdpa_key_kept)
 * makes each row's kept keys one interval [lo(i), hi(i)) whose ends are piecewise linear in
 * the row i with slopes 0 and 1.  Split at the (at most two) points where a slope changes,
 * the length hi - lo is linear on each piece, and the positive part of a linear sequence sums
 * in closed form.  The intersection with a row's interval is empty or an interval; lo and hi
 * never decrease and lo moves by at most one key per row, so the rows that keep something are
 * consecutive and their intervals overlap: their union is [lo(first), hi(last)).
 * test_bench.c checks all of it against the reference's rule, key by key.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>

#include "attnref/sdpa.h"

/* Chunk, documents or blocks: the closed form does not hold, the keys are counted one by one. */
static int per_key(const bs_shape *s)
{
    return s->chunk > 0 || s->segment_ids || s->block_ids;
}

/* The shape's parameters for batch row b alone (batch 1, its lengths, padding and ids). */
static attnref_sdpa_params row_params(const bs_shape *s, int64_t b)
{
    const attnref_sdpa_params p = {
        .causal = s->causal,
        .has_causal_offset = s->has_causal_offset,
        .causal_offset = s->causal_offset,
        .window = s->window,
        .batch = 1,
        .lengths = s->lengths ? &s->lengths[b] : NULL,
        .left_padding = s->left_padding ? &s->left_padding[b] : NULL,
        .chunk = s->chunk,
        .segment_ids = s->segment_ids ? s->segment_ids + b * s->lk : NULL,
        .block_ids = s->block_ids ? s->block_ids + b * s->lk : NULL,
    };
    return p;
}

static int64_t keys_one_by_one(const bs_shape *s, int64_t b, int64_t i)
{
    const attnref_sdpa_params p = row_params(s, b);
    int64_t n = 0;
    for (int64_t j = 0; j < s->lk; j++)
        n += attnref_sdpa_key_kept(&p, s->lq, s->lk, 0, i, j);
    return n;
}

/* The pairs of batch row b one by one, and the keys some row keeps (not one interval here). */
static int64_t pairs_one_by_one(const bs_shape *s, int64_t b, int64_t *keys)
{
    const attnref_sdpa_params p = row_params(s, b);
    unsigned char *seen = calloc((size_t)s->lk + 1, 1);
    int64_t sum = 0, distinct = 0;
    for (int64_t i = 0; i < s->lq; i++)
        for (int64_t j = 0; j < s->lk; j++)
            if (attnref_sdpa_key_kept(&p, s->lq, s->lk, 0, i, j)) {
                sum++;
                if (seen && !seen[j]) {
                    seen[j] = 1;
                    distinct++;
                }
            }
    free(seen);
    if (keys)
        *keys = distinct;
    return sum;
}

/* Row i keeps [lo(i), hi(i)) with
 *   hi(i) = min(cap, a + i)  (causal, a = off + 1)   or cap,
 *   lo(i) = max(floor, c + i) (window, c = off - W + 1) or floor. */
typedef struct row_bounds {
    int64_t cap, a, floor, c;
    int hi_lin, lo_lin;
} row_bounds;

static int64_t hi_at(const row_bounds *r, int64_t i)
{
    return r->hi_lin && r->a + i < r->cap ? r->a + i : r->cap;
}

static int64_t lo_at(const row_bounds *r, int64_t i)
{
    return r->lo_lin && r->c + i > r->floor ? r->c + i : r->floor;
}

static int64_t clamp64(int64_t x, int64_t lo, int64_t hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* Sum of the consecutive integers first..last (k of them, k >= 1), without the halving
 * losing the odd product: one of k and first + last is even. */
static int64_t series(int64_t first, int64_t last, int64_t k)
{
    return k % 2 == 0 ? k / 2 * (first + last) : k * ((first + last) / 2);
}

static row_bounds bounds_of(const bs_shape *s, int64_t b)
{
    const int64_t off = s->has_causal_offset ? s->causal_offset : s->lk - s->lq;
    row_bounds r = {s->lk, off + 1, 0, 0, s->causal, s->causal && s->window > 0};
    if (s->lengths && s->lengths[b] < r.cap)
        r.cap = s->lengths[b];
    if (s->left_padding && s->left_padding[b] > r.floor)
        r.floor = s->left_padding[b];
    if (r.lo_lin)
        r.c = off - s->window + 1;
    return r;
}

int64_t bs_row_keys(const bs_shape *s, int64_t b, int64_t i)
{
    if (per_key(s))
        return keys_one_by_one(s, b, i);
    const row_bounds r = bounds_of(s, b);
    const int64_t n = hi_at(&r, i) - lo_at(&r, i);
    return n > 0 ? n : 0;
}

int64_t bs_row_pairs(const bs_shape *s, int64_t b, int64_t *keys)
{
    if (per_key(s))
        return pairs_one_by_one(s, b, keys);
    const row_bounds r = bounds_of(s, b);

    /* Piece boundaries: where hi stops growing (i = cap - a) and lo starts (i = floor - c). */
    int64_t cut[4] = {0, s->lq, r.hi_lin ? clamp64(r.cap - r.a, 0, s->lq) : 0,
                      r.lo_lin ? clamp64(r.floor - r.c, 0, s->lq) : 0};
    for (int x = 1; x < 4; x++) /* insertion sort of four */
        for (int y = x; y > 0 && cut[y - 1] > cut[y]; y--) {
            int64_t t = cut[y];
            cut[y] = cut[y - 1];
            cut[y - 1] = t;
        }
    int64_t sum = 0, first = -1, last = -1;
    for (int x = 0; x < 3; x++) {
        const int64_t st = cut[x], n = cut[x + 1] - cut[x];
        if (n <= 0)
            continue;
        /* On [st, st + n) each end is on one side of its boundary, so one slope each. */
        const int up = r.hi_lin && st < r.cap - r.a;
        const int down = r.lo_lin && st >= r.floor - r.c;
        const int64_t d0 = hi_at(&r, st) - lo_at(&r, st);
        int64_t t0, t1; /* the rows st + t0 .. st + t1 - 1 keep something */
        if (up == down) {
            t0 = 0;
            t1 = d0 > 0 ? n : 0;
            if (t1)
                sum += n * d0;
        } else if (up) { /* d0 + t, positive from t = 1 - d0 */
            t0 = d0 >= 1 ? 0 : 1 - d0;
            t1 = n;
            if (t0 < n)
                sum += series(d0 + t0, d0 + n - 1, n - t0);
        } else { /* d0 - t, positive below t = d0 */
            t0 = 0;
            t1 = clamp64(d0, 0, n);
            if (t1 > 0)
                sum += series(d0 - t1 + 1, d0, t1);
        }
        if (t0 < t1) {
            if (first < 0)
                first = st + t0;
            last = st + t1 - 1;
        }
    }
    if (keys)
        *keys = first < 0 ? 0 : hi_at(&r, last) - lo_at(&r, first);
    return sum;
}

void bs_count(const bs_shape *s, attnref_dtype dt, bs_counts *out)
{
    const int64_t es = (int64_t)attnref_dtype_size(dt);
    int64_t pairs = 0, keys = 0;
    for (int64_t b = 0; b < s->b; b++) {
        int64_t kb;
        pairs += bs_row_pairs(s, b, &kb);
        keys += kb;
    }
    out->visible_pairs = pairs * s->hq;
    out->flops = (double)out->visible_pairs * (double)(2 * s->d + 2 * s->dv);
    out->kv_bytes = keys * s->hkv * (s->d + s->dv) * es;
    out->io_bytes = s->b * (s->hq * s->lq + s->hkv * s->lk) * (s->d + s->dv) * es;
}

int bb_supported(const bs_shape *s, attnref_dtype dt, uint64_t caps, bb_via *via, char *why,
                 size_t whylen)
{
    uint64_t need = dt == ATTNREF_F32   ? ATTNCONF_CAP_F32
                    : dt == ATTNREF_F16 ? ATTNCONF_CAP_F16
                                        : ATTNCONF_CAP_BF16;
    if (s->hq != s->hkv)
        need |= ATTNCONF_CAP_GQA;
    if (s->dv != s->d)
        need |= ATTNCONF_CAP_DV_NE_D;
    /* The structure through the kernel's own parameters, or else folded into one boolean
     * mask tensor (B, 1, Lq or 1, Lk) broadcast over the heads (a mask excludes causal). */
    uint64_t params = 0;
    if (s->causal)
        params |= ATTNCONF_CAP_CAUSAL;
    if (s->has_causal_offset)
        params |= ATTNCONF_CAP_CAUSAL_OFFSET;
    if (s->window > 0)
        params |= ATTNCONF_CAP_SDPA_WINDOW;
    if (s->lengths)
        params |= ATTNCONF_CAP_SDPA_LENGTHS;
    if (s->left_padding)
        params |= ATTNCONF_CAP_SDPA_LEFT_PAD;
    if (s->chunk > 0)
        params |= ATTNCONF_CAP_CHUNK;
    if (s->segment_ids)
        params |= ATTNCONF_CAP_SEGMENTS;
    if (s->block_ids)
        params |= ATTNCONF_CAP_BLOCKS;
    /* Score terms have no mask form: a backend takes them or the shape is not supported. */
    if (s->softcap > 0.0)
        need |= ATTNCONF_CAP_SOFTCAP;
    if (s->alibi_max_bias > 0.0)
        need |= ATTNCONF_CAP_ALIBI;
    if (s->sinks)
        need |= ATTNCONF_CAP_SINKS;
    if (s->page_size > 0) {
        /* Paged: causal and window are paged_sdpa's own parameters; a term needs its bit too
         * (SPEC clause 23), and there is no mask route. */
        need |= ATTNCONF_CAP_PAGED | (s->chunk > 0 ? ATTNCONF_CAP_CHUNK : 0);
        params = 0;
    }
    const uint64_t mask =
        params && s->page_size == 0 ? ATTNCONF_CAP_MASK_BOOL | ATTNCONF_CAP_MASK_BCAST : 0;
    *via = BB_VIA_PARAMS;
    if ((caps & (need | params)) == (need | params))
        return 0;
    if ((caps & (need | mask)) == (need | mask)) {
        *via = BB_VIA_MASK;
        return 0;
    }
    /* Name only what is missing: the structural bits when neither route serves them. */
    const int structure_ok = !(params & ~caps) || (mask && !(mask & ~caps));
    char a[256], b[256];
    acase_caps_text((need & ~caps) | (structure_ok ? 0 : params & ~caps), ", ", a, sizeof a);
    acase_caps_text(mask & ~caps, ", ", b, sizeof b);
    if (structure_ok || !mask)
        snprintf(why, whylen, "needs %s", a);
    else
        snprintf(why, whylen, "needs %s (or %s, for a boolean mask tensor)", a, b);
    return -1;
}
