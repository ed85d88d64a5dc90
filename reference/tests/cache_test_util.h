/* cache_test_util.h — helpers shared by the KV cache tests (D = Dv = 1 caches whose keys are
 * their absolute positions and whose values are 1000 + position). */
#ifndef CACHE_TEST_UTIL_H
#define CACHE_TEST_UTIL_H

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "attnref/cache.h"
#include "attnref/sdpa.h"

#define MAXT 64

static inline attnref_cache_params base(attnref_cache_kind kind, int64_t B)
{
    attnref_cache_params p = {0};
    p.kind = kind;
    p.dtype = ATTNREF_F32;
    p.batch = B;
    p.kv_heads = 1;
    p.head_dim = 1;
    p.value_dim = 1;
    return p;
}

static inline attnref_cache *mk(attnref_cache_params p)
{
    attnref_cache *c = NULL;
    attnref_diag d;
    int rc = attnref_cache_create(&p, &c, &d);
    cr_assert_eq(rc, ATTNREF_OK, "create: %s", d.msg);
    return c;
}

static inline int64_t T_of(const attnref_cache *c)
{
    attnref_cache_info in;
    cr_assert_eq(attnref_cache_get_info(c, &in, NULL), ATTNREF_OK);
    return in.T;
}

static inline int64_t B_of(const attnref_cache *c)
{
    attnref_cache_info in;
    cr_assert_eq(attnref_cache_get_info(c, &in, NULL), ATTNREF_OK);
    return in.batch;
}

/* Append S tokens to every row of a D = Dv = 1 f32 cache; each token's key is its position and
 * its value is 1000 + position (pads: whatever position arithmetic gives, negative). */
static inline int feed(attnref_cache *c, int64_t S)
{
    int64_t B = B_of(c), off[MAXT];
    attnref_cache_offsets(c, off, NULL);
    float kb[MAXT * MAXT], vb[MAXT * MAXT];
    for (int64_t b = 0; b < B; b++)
        for (int64_t i = 0; i < S; i++) {
            kb[b * S + i] = (float)(off[b] + i);
            vb[b * S + i] = (float)(1000 + off[b] + i);
        }
    attnref_tensor k, v;
    int64_t shape[4] = {B, 1, S, 1};
    attnref_tensor_init(&k, kb, ATTNREF_F32, 4, shape, NULL);
    attnref_tensor_init(&v, vb, ATTNREF_F32, 4, shape, NULL);
    attnref_diag d;
    int rc = attnref_cache_update(c, &k, &v, &d);
    return rc;
}

static inline void feed_ok(attnref_cache *c, int64_t S)
{
    cr_assert_eq(feed(c, S), ATTNREF_OK);
}

/* Row b's slots must be exactly want[0..n-1] (-1 = pad), keys = positions, values = 1000+pos. */
static inline void expect_row(const attnref_cache *c, int64_t b, const int64_t *want, int64_t n)
{
    int64_t T = T_of(c), B = B_of(c);
    cr_assert_eq(T, n, "row %lld: T = %lld, expected %lld", (long long)b, (long long)T,
                 (long long)n);
    int64_t pos[MAXT * MAXT];
    float kb[MAXT * MAXT], vb[MAXT * MAXT];
    attnref_tensor k, v;
    int64_t shape[4] = {B, 1, T, 1};
    attnref_tensor_init(&k, kb, ATTNREF_F32, 4, shape, NULL);
    attnref_tensor_init(&v, vb, ATTNREF_F32, 4, shape, NULL);
    cr_assert_eq(attnref_cache_positions(c, pos, NULL), ATTNREF_OK);
    cr_assert_eq(attnref_cache_kv(c, &k, &v, NULL), ATTNREF_OK);
    for (int64_t j = 0; j < n; j++) {
        cr_assert_eq(pos[b * T + j], want[j], "row %lld slot %lld: position %lld, expected %lld",
                     (long long)b, (long long)j, (long long)pos[b * T + j], (long long)want[j]);
        if (want[j] < 0) {
            cr_assert(isnan(kb[b * T + j]) && isnan(vb[b * T + j]), "pad slot %lld must read NaN",
                      (long long)j);
        } else {
            cr_assert_eq(kb[b * T + j], (float)want[j], "row %lld slot %lld key", (long long)b,
                         (long long)j);
            cr_assert_eq(vb[b * T + j], (float)(1000 + want[j]), "row %lld slot %lld value",
                         (long long)b, (long long)j);
        }
    }
}

static inline void expect_offsets(const attnref_cache *c, const int64_t *want)
{
    int64_t off[MAXT];
    attnref_cache_offsets(c, off, NULL);
    for (int64_t b = 0; b < B_of(c); b++)
        cr_assert_eq(off[b], want[b], "offset[%lld] = %lld, expected %lld", (long long)b,
                     (long long)off[b], (long long)want[b]);
}

static inline void expect_lp(const attnref_cache *c, const int64_t *want)
{
    int64_t lp[MAXT];
    attnref_cache_left_padding(c, lp, NULL);
    for (int64_t b = 0; b < B_of(c); b++)
        cr_assert_eq(lp[b], want[b], "left_padding[%lld] = %lld, expected %lld", (long long)b,
                     (long long)lp[b], (long long)want[b]);
}

/* The mask for the next n queries, as a string per (row, query): 'T'/'F' per key slot. */
static inline void expect_mask(const attnref_cache *c, int64_t n, int64_t window,
                               const char *const *rows)
{
    int64_t shape[4];
    attnref_diag d;
    cr_assert_eq(attnref_cache_mask_shape(c, n, shape, &d), ATTNREF_OK, "%s", d.msg);
    uint8_t buf[MAXT * MAXT];
    attnref_tensor keep;
    attnref_tensor_init(&keep, buf, ATTNREF_BOOL, 4, shape, NULL);
    cr_assert_eq(attnref_cache_make_mask(c, n, window, &keep, &d), ATTNREF_OK, "%s", d.msg);
    for (int64_t r = 0; r < shape[0] * n; r++) {
        char got[MAXT + 1];
        for (int64_t j = 0; j < shape[3]; j++)
            got[j] = buf[r * shape[3] + j] ? 'T' : 'F';
        got[shape[3]] = '\0';
        cr_assert_str_eq(got, rows[r], "mask row %lld: %s, expected %s", (long long)r, got,
                         rows[r]);
    }
}

static inline float val(int64_t b, int64_t t, int64_t d, int which)
{
    return (float)(((b * 7 + t * 13 + d * 5 + which * 11) % 17) - 8) / 8.0f;
}

static inline void block(float *buf, int64_t B, int64_t H, int64_t t0, int64_t S, int64_t D,
                         int which)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < S; i++)
                for (int64_t d = 0; d < D; d++)
                    buf[((b * H + h) * S + i) * D + d] = val(b, t0 + i + h * 3, d, which);
}

#endif
