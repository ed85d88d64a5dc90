/* Unit tests for the attnref mask builder (attnref/mask.h).
 *
 * Every expected keep pattern below is derived by hand from the rule in mask.h:
 * query i sits at p = offset + i and keeps key j iff j <= p, j > p - W (W > 0),
 * j < lengths[b] (if given) and j >= left_padding[b] (if given).
 */
#include <criterion/criterion.h>

#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"
#include "attnref/mask.h"
#include "attnref/status.h"
#include "attnref/tensor.h"

#define SENTINEL_BYTE 0xA5u

/* A contiguous row-major descriptor, built by hand (independent of attnref_tensor_init). */
static attnref_tensor mk_tensor(void *data, attnref_dtype dt, int32_t ndim, const int64_t *shape)
{
    attnref_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dt;
    t.ndim = ndim;
    int64_t stride = 1;
    for (int32_t d = ndim - 1; d >= 0; --d) {
        t.shape[d] = shape[d];
        t.strides[d] = stride;
        stride *= shape[d];
    }
    return t;
}

static attnref_mask_params mk_params(int64_t lq, int64_t offset, int64_t window, int64_t batch,
                                     const int64_t *lengths, const int64_t *left_padding)
{
    attnref_mask_params p;
    memset(&p, 0, sizeof p);
    p.lq = lq;
    p.offset = offset;
    p.window = window;
    p.batch = batch;
    p.lengths = lengths;
    p.left_padding = left_padding;
    return p;
}

static void fill_diag(attnref_diag *d)
{
    memset(d->msg, 'x', sizeof d->msg - 1);
    d->msg[sizeof d->msg - 1] = '\0';
}

/* Build a mask for p into a fresh contiguous buffer, checking the shape against the expected
 * (B, 1, lq, lk) and the call status; returns the malloc'd buffer (caller frees). */
static uint8_t *build_checked(const attnref_mask_params *p, int64_t b, int64_t lq, int64_t lk)
{
    int64_t shape[4] = {-7, -7, -7, -7};
    attnref_diag diag;
    fill_diag(&diag);
    int rc = attnref_mask_shape(p, shape, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "attnref_mask_shape failed: rc=%d (%s)", rc, diag.msg);
    cr_assert_eq(diag.msg[0], '\0', "diag must be empty on success, got \"%s\"", diag.msg);
    cr_assert_eq(shape[0], b, "shape[0]: expected %lld, got %lld", (long long)b,
                 (long long)shape[0]);
    cr_assert_eq(shape[1], 1, "shape[1]: expected 1, got %lld", (long long)shape[1]);
    cr_assert_eq(shape[2], lq, "shape[2]: expected %lld, got %lld", (long long)lq,
                 (long long)shape[2]);
    cr_assert_eq(shape[3], lk, "shape[3]: expected %lld, got %lld", (long long)lk,
                 (long long)shape[3]);

    size_t n = (size_t)(b * lq * lk);
    uint8_t *buf = malloc(n ? n : 1);
    cr_assert_not_null(buf, "malloc failed");
    memset(buf, SENTINEL_BYTE, n ? n : 1);
    attnref_tensor keep = mk_tensor(buf, ATTNREF_BOOL, 4, shape);
    fill_diag(&diag);
    rc = attnref_build_mask(p, &keep, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "attnref_build_mask failed: rc=%d (%s)", rc, diag.msg);
    cr_assert_eq(diag.msg[0], '\0', "diag must be empty on success, got \"%s\"", diag.msg);
    return buf;
}

/* Compare a contiguous (B,1,lq,lk) keep buffer with the expected 0/1 pattern (writers write 1). */
static void expect_keep(const uint8_t *got, const uint8_t *want, int64_t b, int64_t lq, int64_t lk,
                        const char *what)
{
    for (int64_t bi = 0; bi < b; ++bi)
        for (int64_t i = 0; i < lq; ++i)
            for (int64_t j = 0; j < lk; ++j) {
                int64_t idx = (bi * lq + i) * lk + j;
                cr_expect_eq(got[idx], want[idx],
                             "%s: keep[b=%lld, 0, i=%lld, j=%lld]: expected %u, got %u", what,
                             (long long)bi, (long long)i, (long long)j, (unsigned)want[idx],
                             (unsigned)got[idx]);
            }
}

/* ---------------------------------------------------------------- seed example */

Test(mask, seed_example_lengths_offset)
{
    /* lq=3, offset=1 -> Lk=4, p = 1,2,3.  Causal rows: {0,1}, {0,1,2}, {0,1,2,3}. */
    const int64_t lengths[4] = {1, 2, 3, 1};
    attnref_mask_params p = mk_params(3, 1, 0, 4, lengths, NULL);
    uint8_t *got = build_checked(&p, 4, 3, 4);
    static const uint8_t want[4 * 3 * 4] = {
        /* b0: lengths 1 */
        1,
        0,
        0,
        0,
        /**/ 1,
        0,
        0,
        0,
        /**/ 1,
        0,
        0,
        0,
        /* b1: lengths 2 */
        1,
        1,
        0,
        0,
        /**/ 1,
        1,
        0,
        0,
        /**/ 1,
        1,
        0,
        0,
        /* b2: lengths 3 */
        1,
        1,
        0,
        0,
        /**/ 1,
        1,
        1,
        0,
        /**/ 1,
        1,
        1,
        0,
        /* b3: lengths 1 */
        1,
        0,
        0,
        0,
        /**/ 1,
        0,
        0,
        0,
        /**/ 1,
        0,
        0,
        0,
    };
    expect_keep(got, want, 4, 3, 4, "seed example");
    free(got);
}

/* ---------------------------------------------------------------- causal */

Test(mask, causal_offset0_lower_triangular)
{
    attnref_mask_params p = mk_params(4, 0, 0, 1, NULL, NULL);
    uint8_t *got = build_checked(&p, 1, 4, 4);
    static const uint8_t want[16] = {
        1, 0, 0, 0, /**/ 1, 1, 0, 0, /**/ 1, 1, 1, 0, /**/ 1, 1, 1, 1,
    };
    expect_keep(got, want, 1, 4, 4, "causal offset 0");
    free(got);
}

Test(mask, causal_with_offset_bottom_right)
{
    /* lq=2, offset=3 -> Lk=5, p = 3, 4. */
    attnref_mask_params p = mk_params(2, 3, 0, 1, NULL, NULL);
    uint8_t *got = build_checked(&p, 1, 2, 5);
    static const uint8_t want[10] = {
        1, 1, 1, 1, 0, /**/ 1, 1, 1, 1, 1,
    };
    expect_keep(got, want, 1, 2, 5, "causal offset 3");
    free(got);
}

Test(mask, decode_single_query_sees_all_keys)
{
    attnref_mask_params p = mk_params(1, 4, 0, 1, NULL, NULL);
    uint8_t *got = build_checked(&p, 1, 1, 5);
    static const uint8_t want[5] = {1, 1, 1, 1, 1};
    expect_keep(got, want, 1, 1, 5, "decode lq=1 offset=4");
    free(got);
}

Test(mask, batch_ignored_without_per_sequence_arrays)
{
    /* batch is ignored (B = 1) when neither lengths nor left_padding is given, even 0 or 7. */
    int64_t shape[4];
    attnref_diag diag;
    attnref_mask_params p = mk_params(2, 1, 0, 7, NULL, NULL);
    int rc = attnref_mask_shape(&p, shape, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "batch=7 without arrays: rc=%d (%s)", rc, diag.msg);
    cr_expect(shape[0] == 1 && shape[1] == 1 && shape[2] == 2 && shape[3] == 3,
              "batch=7 without arrays: expected (1,1,2,3), got (%lld,%lld,%lld,%lld)",
              (long long)shape[0], (long long)shape[1], (long long)shape[2], (long long)shape[3]);
    p.batch = 0;
    rc = attnref_mask_shape(&p, shape, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "batch=0 without arrays: rc=%d (%s)", rc, diag.msg);
    cr_expect_eq(shape[0], 1, "batch=0 without arrays: B expected 1, got %lld",
                 (long long)shape[0]);
}

Test(mask, empty_chunk_lq0)
{
    /* lq=0 is valid: shape (1,1,0,offset), nothing to write. */
    int64_t shape[4];
    attnref_diag diag;
    attnref_mask_params p = mk_params(0, 3, 0, 1, NULL, NULL);
    int rc = attnref_mask_shape(&p, shape, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "lq=0: rc=%d (%s)", rc, diag.msg);
    cr_expect(shape[0] == 1 && shape[1] == 1 && shape[2] == 0 && shape[3] == 3,
              "lq=0 offset=3: expected (1,1,0,3), got (%lld,%lld,%lld,%lld)", (long long)shape[0],
              (long long)shape[1], (long long)shape[2], (long long)shape[3]);
    uint8_t dummy = SENTINEL_BYTE;
    attnref_tensor keep = mk_tensor(&dummy, ATTNREF_BOOL, 4, shape);
    rc = attnref_build_mask(&p, &keep, &diag);
    cr_expect_eq(rc, ATTNREF_OK, "lq=0 build: rc=%d (%s)", rc, diag.msg);
    cr_expect_eq(dummy, SENTINEL_BYTE, "lq=0 build wrote into the buffer");
}

/* ---------------------------------------------------------------- sliding window */

Test(mask, window3_len6_row_counts)
{
    /* W=3: row i keeps j in (i-3, i]. */
    attnref_mask_params p = mk_params(6, 0, 3, 1, NULL, NULL);
    uint8_t *got = build_checked(&p, 1, 6, 6);
    static const uint8_t want[36] = {
        1, 0, 0, 0, 0, 0, /**/
        1, 1, 0, 0, 0, 0, /**/
        1, 1, 1, 0, 0, 0, /**/
        0, 1, 1, 1, 0, 0, /**/
        0, 0, 1, 1, 1, 0, /**/
        0, 0, 0, 1, 1, 1,
    };
    expect_keep(got, want, 1, 6, 6, "window 3, L 6");
    static const int counts[6] = {1, 2, 3, 3, 3, 3};
    for (int i = 0; i < 6; ++i) {
        int c = 0;
        for (int j = 0; j < 6; ++j)
            c += got[i * 6 + j] != 0;
        cr_expect_eq(c, counts[i], "window 3 row %d: expected %d keys, got %d", i, counts[i], c);
    }
    free(got);
}

Test(mask, window4_len8_last_row)
{
    attnref_mask_params p = mk_params(8, 0, 4, 1, NULL, NULL);
    uint8_t *got = build_checked(&p, 1, 8, 8);
    /* row 7 keeps keys 4..7 */
    static const uint8_t row7[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    for (int j = 0; j < 8; ++j)
        cr_expect_eq(got[7 * 8 + j], row7[j], "W=4 L=8 row 7 key %d: expected %u, got %u", j,
                     (unsigned)row7[j], (unsigned)got[7 * 8 + j]);
    /* row 2 keeps 0..2 (window not yet full) */
    static const uint8_t row2[8] = {1, 1, 1, 0, 0, 0, 0, 0};
    for (int j = 0; j < 8; ++j)
        cr_expect_eq(got[2 * 8 + j], row2[j], "W=4 L=8 row 2 key %d: expected %u, got %u", j,
                     (unsigned)row2[j], (unsigned)got[2 * 8 + j]);
    free(got);
}

Test(mask, window1_is_diagonal)
{
    attnref_mask_params p = mk_params(3, 1, 1, 1, NULL, NULL);
    uint8_t *got = build_checked(&p, 1, 3, 4);
    /* p = 1,2,3: only key p. */
    static const uint8_t want[12] = {
        0, 1, 0, 0, /**/ 0, 0, 1, 0, /**/ 0, 0, 0, 1,
    };
    expect_keep(got, want, 1, 3, 4, "window 1");
    free(got);
}

Test(mask, window_with_offset_mlx_lm_values)
{
    /* (lq=5, offset=1, W=3): Lk=6, p=1..5, rows {0,1},{0,1,2},{1,2,3},{2,3,4},{3,4,5}. */
    {
        attnref_mask_params p = mk_params(5, 1, 3, 1, NULL, NULL);
        uint8_t *got = build_checked(&p, 1, 5, 6);
        static const uint8_t want[30] = {
            1, 1, 0, 0, 0, 0, /**/
            1, 1, 1, 0, 0, 0, /**/
            0, 1, 1, 1, 0, 0, /**/
            0, 0, 1, 1, 1, 0, /**/
            0, 0, 0, 1, 1, 1,
        };
        expect_keep(got, want, 1, 5, 6, "(5,1,3)");
        static const int sums[5] = {2, 3, 3, 3, 3};
        for (int i = 0; i < 5; ++i) {
            int c = 0;
            for (int j = 0; j < 6; ++j)
                c += got[i * 6 + j] != 0;
            cr_expect_eq(c, sums[i], "(5,1,3) row %d sum: expected %d, got %d", i, sums[i], c);
        }
        free(got);
    }
    /* (lq=5, offset=2, W=3): Lk=7, p=2..6, every row keeps 3 keys {p-2..p}. */
    {
        attnref_mask_params p = mk_params(5, 2, 3, 1, NULL, NULL);
        uint8_t *got = build_checked(&p, 1, 5, 7);
        static const uint8_t want[35] = {
            1, 1, 1, 0, 0, 0, 0, /**/
            0, 1, 1, 1, 0, 0, 0, /**/
            0, 0, 1, 1, 1, 0, 0, /**/
            0, 0, 0, 1, 1, 1, 0, /**/
            0, 0, 0, 0, 1, 1, 1,
        };
        expect_keep(got, want, 1, 5, 7, "(5,2,3)");
        free(got);
    }
}

/* ---------------------------------------------------------------- padding */

Test(mask, right_padding_lengths)
{
    /* lq=3, offset 0: b0 = causal & [T,F,F], b1 = causal & [T,T,F], b2 = causal. */
    const int64_t lengths[3] = {1, 2, 3};
    attnref_mask_params p = mk_params(3, 0, 0, 3, lengths, NULL);
    uint8_t *got = build_checked(&p, 3, 3, 3);
    static const uint8_t want[27] = {
        1, 0, 0, /**/ 1, 0, 0, /**/ 1, 0, 0, /* b0 */
        1, 0, 0, /**/ 1, 1, 0, /**/ 1, 1, 0, /* b1 */
        1, 0, 0, /**/ 1, 1, 0, /**/ 1, 1, 1, /* b2 */
    };
    expect_keep(got, want, 3, 3, 3, "right padding");
    free(got);
}

Test(mask, left_padding)
{
    /* lq=3, offset 0, left_padding {2,1,0}: causal & [F,F,T], causal & [F,T,T], causal. */
    const int64_t left[3] = {2, 1, 0};
    attnref_mask_params p = mk_params(3, 0, 0, 3, NULL, left);
    uint8_t *got = build_checked(&p, 3, 3, 3);
    static const uint8_t want[27] = {
        0, 0, 0, /**/ 0, 0, 0, /**/ 0, 0, 1, /* b0 */
        0, 0, 0, /**/ 0, 1, 0, /**/ 0, 1, 1, /* b1 */
        1, 0, 0, /**/ 1, 1, 0, /**/ 1, 1, 1, /* b2 */
    };
    expect_keep(got, want, 3, 3, 3, "left padding");
    free(got);
}

Test(mask, causal_window_lengths_left_padding_combined)
{
    /* lq=4, offset=2 -> Lk=6, p=2..5, W=3 -> causal+window rows {0,1,2},{1,2,3},{2,3,4},{3,4,5}.
     * b0: lengths 5 (j<5), left 1 (j>=1).  b1: lengths 6 (all), left 3 (j>=3). */
    const int64_t lengths[2] = {5, 6};
    const int64_t left[2] = {1, 3};
    attnref_mask_params p = mk_params(4, 2, 3, 2, lengths, left);
    uint8_t *got = build_checked(&p, 2, 4, 6);
    static const uint8_t want[48] = {
        /* b0 */
        0,
        1,
        1,
        0,
        0,
        0, /**/
        0,
        1,
        1,
        1,
        0,
        0, /**/
        0,
        0,
        1,
        1,
        1,
        0, /**/
        0,
        0,
        0,
        1,
        1,
        0, /**/
        /* b1 */
        0,
        0,
        0,
        0,
        0,
        0, /**/
        0,
        0,
        0,
        1,
        0,
        0, /**/
        0,
        0,
        0,
        1,
        1,
        0, /**/
        0,
        0,
        0,
        1,
        1,
        1,
    };
    expect_keep(got, want, 2, 4, 6, "combined");
    free(got);
}

Test(mask, lengths_zero_fully_masked)
{
    /* lq=2, offset=1 -> Lk=3, p=1,2.  b0 lengths 0: nothing; b1 lengths 3: causal. */
    const int64_t lengths[2] = {0, 3};
    attnref_mask_params p = mk_params(2, 1, 0, 2, lengths, NULL);
    uint8_t *got = build_checked(&p, 2, 2, 3);
    static const uint8_t want[12] = {
        0, 0, 0, /**/ 0, 0, 0, /* b0 */
        1, 1, 0, /**/ 1, 1, 1, /* b1 */
    };
    expect_keep(got, want, 2, 2, 3, "lengths 0");
    free(got);
}

Test(mask, left_padding_equal_to_lk_fully_masked)
{
    /* left_padding may be offset+lq (the whole row is padding). */
    const int64_t left[1] = {3};
    attnref_mask_params p = mk_params(2, 1, 0, 1, NULL, left);
    uint8_t *got = build_checked(&p, 1, 2, 3);
    static const uint8_t want[6] = {0, 0, 0, 0, 0, 0};
    expect_keep(got, want, 1, 2, 3, "left padding = Lk");
    free(got);
}

/* ---------------------------------------------------------------- strided output */

Test(mask, noncontiguous_keep_same_values)
{
    /* Seed example written into a (B,1,Lq,Lk) view of a buffer laid out [Lk][B][Lq] with a
     * gap of 2 unused bytes after every Lk plane: strides (3, 0, 1, 14). */
    const int64_t lengths[4] = {1, 2, 3, 1};
    attnref_mask_params p = mk_params(3, 1, 0, 4, lengths, NULL);
    enum { B = 4, LQ = 3, LK = 4, PLANE = 14 };
    uint8_t buf[PLANE * LK];
    memset(buf, SENTINEL_BYTE, sizeof buf);
    attnref_tensor keep;
    memset(&keep, 0, sizeof keep);
    keep.data = buf;
    keep.dtype = ATTNREF_BOOL;
    keep.ndim = 4;
    keep.shape[0] = B;
    keep.shape[1] = 1;
    keep.shape[2] = LQ;
    keep.shape[3] = LK;
    keep.strides[0] = LQ;
    keep.strides[1] = 0;
    keep.strides[2] = 1;
    keep.strides[3] = PLANE;
    attnref_diag diag;
    int rc = attnref_build_mask(&p, &keep, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "strided build: rc=%d (%s)", rc, diag.msg);
    static const uint8_t want[B * LQ * LK] = {
        1, 0, 0, 0, /**/ 1, 0, 0, 0, /**/ 1, 0, 0, 0, /**/
        1, 1, 0, 0, /**/ 1, 1, 0, 0, /**/ 1, 1, 0, 0, /**/
        1, 1, 0, 0, /**/ 1, 1, 1, 0, /**/ 1, 1, 1, 0, /**/
        1, 0, 0, 0, /**/ 1, 0, 0, 0, /**/ 1, 0, 0, 0,
    };
    for (int b = 0; b < B; ++b)
        for (int i = 0; i < LQ; ++i)
            for (int j = 0; j < LK; ++j) {
                uint8_t g = buf[b * LQ + i + j * PLANE];
                uint8_t w = want[(b * LQ + i) * LK + j];
                cr_expect_eq(g, w, "strided keep[%d,0,%d,%d]: expected %u, got %u", b, i, j,
                             (unsigned)w, (unsigned)g);
            }
    for (int j = 0; j < LK; ++j)
        for (int g = B * LQ; g < PLANE; ++g)
            cr_expect_eq(buf[j * PLANE + g], SENTINEL_BYTE,
                         "gap byte %d of plane %d was written (0x%02x)", g, j,
                         (unsigned)buf[j * PLANE + g]);
}

/* ---------------------------------------------------------------- errors */

static void expect_shape_and_build_fail(const attnref_mask_params *p, int want_rc, const char *what)
{
    int64_t shape[4] = {11, 12, 13, 14};
    attnref_diag diag;
    fill_diag(&diag);
    int rc = attnref_mask_shape(p, shape, &diag);
    cr_expect_eq(rc, want_rc, "%s: attnref_mask_shape rc expected %d (%s), got %d", what, want_rc,
                 attnref_status_name(want_rc), rc);
    cr_expect_neq(diag.msg[0], '\0', "%s: attnref_mask_shape diag must be set", what);
    cr_expect(strcmp(diag.msg, "") != 0 && diag.msg[0] != 'x',
              "%s: attnref_mask_shape diag not written: \"%s\"", what, diag.msg);

    /* A plausible small keep tensor: must stay untouched. */
    uint8_t buf[64];
    memset(buf, SENTINEL_BYTE, sizeof buf);
    const int64_t kshape[4] = {1, 1, 2, 4};
    attnref_tensor keep = mk_tensor(buf, ATTNREF_BOOL, 4, kshape);
    fill_diag(&diag);
    rc = attnref_build_mask(p, &keep, &diag);
    cr_expect_eq(rc, want_rc, "%s: attnref_build_mask rc expected %d (%s), got %d", what, want_rc,
                 attnref_status_name(want_rc), rc);
    cr_expect(diag.msg[0] != '\0' && diag.msg[0] != 'x',
              "%s: attnref_build_mask diag not written: \"%s\"", what, diag.msg);
    for (size_t i = 0; i < sizeof buf; ++i)
        cr_expect_eq(buf[i], SENTINEL_BYTE, "%s: byte %zu written on error", what, i);
}

Test(mask, error_negative_lq)
{
    attnref_mask_params p = mk_params(-1, 3, 0, 1, NULL, NULL);
    expect_shape_and_build_fail(&p, ATTNREF_EINVAL, "lq=-1");
}

Test(mask, error_negative_offset)
{
    attnref_mask_params p = mk_params(2, -1, 0, 1, NULL, NULL);
    expect_shape_and_build_fail(&p, ATTNREF_EINVAL, "offset=-1");
}

Test(mask, error_negative_window)
{
    attnref_mask_params p = mk_params(2, 2, -1, 1, NULL, NULL);
    expect_shape_and_build_fail(&p, ATTNREF_EINVAL, "window=-1");
}

Test(mask, error_batch_zero_with_arrays)
{
    const int64_t lengths[1] = {1};
    attnref_mask_params p = mk_params(2, 2, 0, 0, lengths, NULL);
    expect_shape_and_build_fail(&p, ATTNREF_EINVAL, "batch=0 with lengths");
    const int64_t left[1] = {0};
    p = mk_params(2, 2, 0, 0, NULL, left);
    expect_shape_and_build_fail(&p, ATTNREF_EINVAL, "batch=0 with left_padding");
}

Test(mask, error_lengths_out_of_range_names_field_and_row)
{
    /* lq=3, offset=0 -> valid lengths 0..3; row 5 holds 9. */
    const int64_t lengths[6] = {1, 1, 1, 1, 1, 9};
    attnref_mask_params p = mk_params(3, 0, 0, 6, lengths, NULL);
    expect_shape_and_build_fail(&p, ATTNREF_EINVAL, "lengths[5]=9");
    int64_t shape[4];
    attnref_diag diag;
    fill_diag(&diag);
    int rc = attnref_mask_shape(&p, shape, &diag);
    cr_assert_eq(rc, ATTNREF_EINVAL, "lengths[5]=9: rc expected EINVAL, got %d", rc);
    cr_expect_not_null(strstr(diag.msg, "lengths"), "diag must name \"lengths\": \"%s\"", diag.msg);
    cr_expect_not_null(strstr(diag.msg, "5"), "diag must name the batch row 5: \"%s\"", diag.msg);

    /* lengths == offset + lq is the largest valid value; one more is invalid. */
    const int64_t ok_len[2] = {4, 4};
    p = mk_params(3, 1, 0, 2, ok_len, NULL);
    rc = attnref_mask_shape(&p, shape, &diag);
    cr_expect_eq(rc, ATTNREF_OK, "lengths = offset+lq must be accepted: rc=%d (%s)", rc, diag.msg);
    const int64_t bad_len[2] = {4, 5};
    p = mk_params(3, 1, 0, 2, bad_len, NULL);
    expect_shape_and_build_fail(&p, ATTNREF_EINVAL, "lengths[1]=5 > offset+lq=4");
}

Test(mask, error_negative_lengths_entry)
{
    const int64_t lengths[2] = {2, -1};
    attnref_mask_params p = mk_params(2, 0, 0, 2, lengths, NULL);
    expect_shape_and_build_fail(&p, ATTNREF_EINVAL, "lengths[1]=-1");
}

Test(mask, error_left_padding_out_of_range_names_field)
{
    const int64_t left[3] = {0, 0, 7};
    attnref_mask_params p = mk_params(3, 1, 0, 3, NULL, left);
    expect_shape_and_build_fail(&p, ATTNREF_EINVAL, "left_padding[2]=7");
    int64_t shape[4];
    attnref_diag diag;
    fill_diag(&diag);
    int rc = attnref_mask_shape(&p, shape, &diag);
    cr_assert_eq(rc, ATTNREF_EINVAL, "left_padding[2]=7: rc expected EINVAL, got %d", rc);
    cr_expect_not_null(strstr(diag.msg, "left_padding"), "diag must name \"left_padding\": \"%s\"",
                       diag.msg);
    const int64_t neg[3] = {0, -2, 0};
    p = mk_params(3, 1, 0, 3, NULL, neg);
    expect_shape_and_build_fail(&p, ATTNREF_EINVAL, "left_padding[1]=-2");
}

Test(mask, error_keep_wrong_dtype)
{
    attnref_mask_params p = mk_params(2, 1, 0, 1, NULL, NULL);
    float buf[6];
    memset(buf, SENTINEL_BYTE, sizeof buf);
    const int64_t shape[4] = {1, 1, 2, 3};
    attnref_tensor keep = mk_tensor(buf, ATTNREF_F32, 4, shape);
    attnref_diag diag;
    fill_diag(&diag);
    int rc = attnref_build_mask(&p, &keep, &diag);
    cr_expect_eq(rc, ATTNREF_EDTYPE, "f32 keep tensor: expected EDTYPE, got %d", rc);
    cr_expect(diag.msg[0] != '\0' && diag.msg[0] != 'x', "diag not written: \"%s\"", diag.msg);
    const uint8_t *bytes = (const uint8_t *)buf;
    for (size_t i = 0; i < sizeof buf; ++i)
        cr_expect_eq(bytes[i], SENTINEL_BYTE, "f32 keep: byte %zu written on error", i);
}

Test(mask, error_keep_wrong_shape)
{
    attnref_mask_params p = mk_params(2, 1, 0, 1, NULL, NULL); /* (1,1,2,3) */
    static const int64_t bad[][4] = {
        {1, 1, 2, 2}, /* Lk = lq, offset forgotten */
        {1, 1, 3, 3},
        {2, 1, 2, 3}, /* B wrong */
        {1, 2, 2, 3}, /* head dim must be 1 */
    };
    for (size_t c = 0; c < sizeof bad / sizeof bad[0]; ++c) {
        uint8_t buf[64];
        memset(buf, SENTINEL_BYTE, sizeof buf);
        attnref_tensor keep = mk_tensor(buf, ATTNREF_BOOL, 4, bad[c]);
        attnref_diag diag;
        fill_diag(&diag);
        int rc = attnref_build_mask(&p, &keep, &diag);
        cr_expect_eq(rc, ATTNREF_EINVAL,
                     "keep shape (%lld,%lld,%lld,%lld): expected EINVAL, got %d",
                     (long long)bad[c][0], (long long)bad[c][1], (long long)bad[c][2],
                     (long long)bad[c][3], rc);
        for (size_t i = 0; i < sizeof buf; ++i)
            cr_expect_eq(buf[i], SENTINEL_BYTE, "case %zu: byte %zu written on error", c, i);
    }
    /* rank 3 keep with the right trailing extents is still the wrong shape */
    uint8_t buf[6];
    memset(buf, SENTINEL_BYTE, sizeof buf);
    const int64_t s3[3] = {1, 2, 3};
    attnref_tensor keep = mk_tensor(buf, ATTNREF_BOOL, 3, s3);
    attnref_diag diag;
    int rc = attnref_build_mask(&p, &keep, &diag);
    cr_expect_eq(rc, ATTNREF_EINVAL, "rank-3 keep: expected EINVAL, got %d", rc);
    for (size_t i = 0; i < sizeof buf; ++i)
        cr_expect_eq(buf[i], SENTINEL_BYTE, "rank-3 keep: byte %zu written on error", i);
}

Test(mask, error_huge_erange)
{
    /* 2^20 queries x (2^20 + 2^20) keys = 2^41 elements > ATTNREF_MAX_NUMEL. */
    attnref_mask_params p = mk_params((int64_t)1 << 20, (int64_t)1 << 20, 0, 1, NULL, NULL);
    expect_shape_and_build_fail(&p, ATTNREF_ERANGE, "lq=offset=2^20");
    /* Just over the limit: 2^16 x (2^15 + 2^16) = 2^31 + 2^32 ... keep it simple: lq=2^16,
     * offset=2^15 -> 2^16 * 3*2^15 = 3*2^31. */
    p = mk_params((int64_t)1 << 16, (int64_t)1 << 15, 0, 1, NULL, NULL);
    expect_shape_and_build_fail(&p, ATTNREF_ERANGE, "lq=2^16 offset=2^15");
    /* The per-sequence batch multiplies in: 4 x 2^15 x 2^15 = 2^32. */
    int64_t *lengths = calloc(4, sizeof *lengths);
    cr_assert_not_null(lengths, "calloc");
    p = mk_params((int64_t)1 << 15, 0, 0, 4, lengths, NULL);
    expect_shape_and_build_fail(&p, ATTNREF_ERANGE, "batch 4 x 2^15 x 2^15");
    free(lengths);
    /* offset + lq would overflow int64: must be ERANGE, not undefined behaviour. */
    p = mk_params(INT64_MAX, 1, 0, 1, NULL, NULL);
    expect_shape_and_build_fail(&p, ATTNREF_ERANGE, "lq=INT64_MAX offset=1");
    p = mk_params(INT64_MAX / 2 + 1, INT64_MAX / 2 + 1, 0, 1, NULL, NULL);
    expect_shape_and_build_fail(&p, ATTNREF_ERANGE, "lq=offset=2^62");
}

Test(mask, at_numel_limit_shape_ok)
{
    /* Exactly ATTNREF_MAX_NUMEL = 2^31 elements is allowed (the bound is "exceed"): lq = 2^15,
     * offset = 2^16 - 2^15 -> Lk = 2^16, numel = 2^31.  Only the shape is queried. */
    attnref_mask_params p = mk_params((int64_t)1 << 15, (int64_t)1 << 15, 0, 1, NULL, NULL);
    int64_t shape[4];
    attnref_diag diag;
    int rc = attnref_mask_shape(&p, shape, &diag);
    cr_expect_eq(rc, ATTNREF_OK, "numel = 2^31 must be accepted: rc=%d (%s)", rc, diag.msg);
    cr_expect(shape[2] == ((int64_t)1 << 15) && shape[3] == ((int64_t)1 << 16),
              "expected (1,1,2^15,2^16), got (%lld,%lld,%lld,%lld)", (long long)shape[0],
              (long long)shape[1], (long long)shape[2], (long long)shape[3]);
}

/* ---------------------------------------------------------------- to_additive */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

Test(mask, to_additive_f32)
{
    /* keep values: any non-zero byte is true. */
    uint8_t keep_buf[6] = {1, 0, 2, 0xff, 0, 1};
    const int64_t shape[2] = {2, 3};
    attnref_tensor keep = mk_tensor(keep_buf, ATTNREF_BOOL, 2, shape);
    float out_buf[6];
    for (int i = 0; i < 6; ++i)
        out_buf[i] = 123.0f;
    attnref_tensor out = mk_tensor(out_buf, ATTNREF_F32, 2, shape);
    attnref_diag diag;
    fill_diag(&diag);
    int rc = attnref_mask_to_additive(&keep, &out, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "to_additive f32: rc=%d (%s)", rc, diag.msg);
    cr_expect_eq(diag.msg[0], '\0', "diag must be empty on success, got \"%s\"", diag.msg);
    const uint32_t neg_max = 0xff7fffffu; /* -FLT_MAX */
    cr_expect_eq(f32_bits(-FLT_MAX), neg_max, "sanity: -FLT_MAX bits");
    for (int i = 0; i < 6; ++i) {
        uint32_t want = keep_buf[i] ? 0x00000000u : neg_max;
        cr_expect_eq(f32_bits(out_buf[i]), want,
                     "f32 additive[%d] (keep %u): expected 0x%08x, got 0x%08x", i,
                     (unsigned)keep_buf[i], want, f32_bits(out_buf[i]));
    }
}

Test(mask, to_additive_f16_finite_min_not_inf)
{
    uint8_t keep_buf[4] = {1, 0, 0, 1};
    const int64_t shape[1] = {4};
    attnref_tensor keep = mk_tensor(keep_buf, ATTNREF_BOOL, 1, shape);
    uint16_t out_buf[4] = {0x1234, 0x1234, 0x1234, 0x1234};
    attnref_tensor out = mk_tensor(out_buf, ATTNREF_F16, 1, shape);
    attnref_diag diag;
    int rc = attnref_mask_to_additive(&keep, &out, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "to_additive f16: rc=%d (%s)", rc, diag.msg);
    for (int i = 0; i < 4; ++i) {
        uint16_t want = keep_buf[i] ? 0x0000u : 0xfbffu; /* -65504, never 0xfc00 (-inf) */
        cr_expect_eq(out_buf[i], want, "f16 additive[%d]: expected 0x%04x, got 0x%04x", i,
                     (unsigned)want, (unsigned)out_buf[i]);
        cr_expect_neq(out_buf[i], 0xfc00u, "f16 additive[%d] is -inf", i);
    }
}

Test(mask, to_additive_bf16)
{
    uint8_t keep_buf[3] = {0, 1, 0};
    const int64_t shape[4] = {1, 1, 1, 3};
    attnref_tensor keep = mk_tensor(keep_buf, ATTNREF_BOOL, 4, shape);
    uint16_t out_buf[3] = {0x1234, 0x1234, 0x1234};
    attnref_tensor out = mk_tensor(out_buf, ATTNREF_BF16, 4, shape);
    attnref_diag diag;
    int rc = attnref_mask_to_additive(&keep, &out, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "to_additive bf16: rc=%d (%s)", rc, diag.msg);
    for (int i = 0; i < 3; ++i) {
        uint16_t want = keep_buf[i] ? 0x0000u : 0xff7fu; /* -3.3895e38, never 0xff80 (-inf) */
        cr_expect_eq(out_buf[i], want, "bf16 additive[%d]: expected 0x%04x, got 0x%04x", i,
                     (unsigned)want, (unsigned)out_buf[i]);
    }
}

Test(mask, to_additive_strided)
{
    /* keep (2,3) contiguous -> out (2,3) viewed transposed in a 3x2 buffer: strides (1, 2). */
    uint8_t keep_buf[6] = {1, 0, 1, 0, 0, 1};
    const int64_t shape[2] = {2, 3};
    attnref_tensor keep = mk_tensor(keep_buf, ATTNREF_BOOL, 2, shape);
    float out_buf[6];
    for (int i = 0; i < 6; ++i)
        out_buf[i] = 7.0f;
    attnref_tensor out = mk_tensor(out_buf, ATTNREF_F32, 2, shape);
    out.strides[0] = 1;
    out.strides[1] = 2;
    attnref_diag diag;
    int rc = attnref_mask_to_additive(&keep, &out, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "to_additive strided: rc=%d (%s)", rc, diag.msg);
    for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 3; ++c) {
            float g = out_buf[r + 2 * c];
            uint32_t want = keep_buf[r * 3 + c] ? 0u : 0xff7fffffu;
            cr_expect_eq(f32_bits(g), want, "strided additive[%d,%d]: expected 0x%08x, got 0x%08x",
                         r, c, want, f32_bits(g));
        }
}

Test(mask, to_additive_built_mask_roundtrip)
{
    /* The builder's keep mask converted to f16: the seed example's b2 rows. */
    const int64_t lengths[1] = {3};
    attnref_mask_params p = mk_params(3, 1, 0, 1, lengths, NULL);
    uint8_t *kb = build_checked(&p, 1, 3, 4);
    const int64_t shape[4] = {1, 1, 3, 4};
    attnref_tensor keep = mk_tensor(kb, ATTNREF_BOOL, 4, shape);
    uint16_t out_buf[12];
    attnref_tensor out = mk_tensor(out_buf, ATTNREF_F16, 4, shape);
    attnref_diag diag;
    int rc = attnref_mask_to_additive(&keep, &out, &diag);
    cr_assert_eq(rc, ATTNREF_OK, "to_additive: rc=%d (%s)", rc, diag.msg);
    static const uint16_t want[12] = {
        0x0000, 0x0000, 0xfbff, 0xfbff, /**/
        0x0000, 0x0000, 0x0000, 0xfbff, /**/
        0x0000, 0x0000, 0x0000, 0xfbff,
    };
    for (int i = 0; i < 12; ++i)
        cr_expect_eq(out_buf[i], want[i], "additive[%d]: expected 0x%04x, got 0x%04x", i,
                     (unsigned)want[i], (unsigned)out_buf[i]);
    free(kb);
}

Test(mask, to_additive_errors)
{
    const int64_t shape[2] = {2, 2};
    uint8_t kb[4] = {1, 0, 1, 0};
    float fb[4] = {0};
    uint16_t hb[4] = {0};
    uint8_t bb[4] = {0};
    attnref_diag diag;
    int rc;

    /* keep not BOOL */
    attnref_tensor keep_f = mk_tensor(fb, ATTNREF_F32, 2, shape);
    attnref_tensor out_h = mk_tensor(hb, ATTNREF_F16, 2, shape);
    fill_diag(&diag);
    rc = attnref_mask_to_additive(&keep_f, &out_h, &diag);
    cr_expect_eq(rc, ATTNREF_EDTYPE, "keep f32: expected EDTYPE, got %d", rc);
    cr_expect(diag.msg[0] != '\0' && diag.msg[0] != 'x', "keep f32: diag not written");

    /* out BOOL (not a float dtype) */
    attnref_tensor keep = mk_tensor(kb, ATTNREF_BOOL, 2, shape);
    attnref_tensor out_b = mk_tensor(bb, ATTNREF_BOOL, 2, shape);
    rc = attnref_mask_to_additive(&keep, &out_b, &diag);
    cr_expect_eq(rc, ATTNREF_EDTYPE, "out bool: expected EDTYPE, got %d", rc);

    /* out unknown dtype */
    attnref_tensor out_u = mk_tensor(fb, (attnref_dtype)99, 2, shape);
    rc = attnref_mask_to_additive(&keep, &out_u, &diag);
    cr_expect(rc == ATTNREF_EDTYPE || rc == ATTNREF_EINVAL,
              "out dtype 99: expected EDTYPE or EINVAL, got %d", rc);

    /* shape mismatch */
    const int64_t shape2[2] = {2, 3};
    float fb6[6];
    attnref_tensor out_f = mk_tensor(fb6, ATTNREF_F32, 2, shape2);
    rc = attnref_mask_to_additive(&keep, &out_f, &diag);
    cr_expect_eq(rc, ATTNREF_EINVAL, "shape (2,2) -> (2,3): expected EINVAL, got %d", rc);

    /* bad descriptor: negative stride */
    attnref_tensor out_neg = mk_tensor(fb, ATTNREF_F32, 2, shape);
    out_neg.strides[1] = -1;
    rc = attnref_mask_to_additive(&keep, &out_neg, &diag);
    cr_expect_eq(rc, ATTNREF_EINVAL, "negative stride: expected EINVAL, got %d", rc);

    /* NULL tensors */
    attnref_tensor out_ok = mk_tensor(fb, ATTNREF_F32, 2, shape);
    rc = attnref_mask_to_additive(NULL, &out_ok, &diag);
    cr_expect_eq(rc, ATTNREF_EINVAL, "NULL keep: expected EINVAL, got %d", rc);
    rc = attnref_mask_to_additive(&keep, NULL, &diag);
    cr_expect_eq(rc, ATTNREF_EINVAL, "NULL out: expected EINVAL, got %d", rc);
}

Test(mask, null_arguments)
{
    int64_t shape[4];
    attnref_diag diag;
    int rc = attnref_mask_shape(NULL, shape, &diag);
    cr_expect_eq(rc, ATTNREF_EINVAL, "mask_shape(NULL params): expected EINVAL, got %d", rc);
    attnref_mask_params p = mk_params(2, 0, 0, 1, NULL, NULL);
    rc = attnref_mask_shape(&p, NULL, &diag);
    cr_expect_eq(rc, ATTNREF_EINVAL, "mask_shape(NULL shape): expected EINVAL, got %d", rc);
    rc = attnref_build_mask(&p, NULL, &diag);
    cr_expect_eq(rc, ATTNREF_EINVAL, "build_mask(NULL keep): expected EINVAL, got %d", rc);
    /* diag may be NULL */
    uint8_t buf[4];
    const int64_t ks[4] = {1, 1, 2, 2};
    attnref_tensor keep = mk_tensor(buf, ATTNREF_BOOL, 4, ks);
    rc = attnref_build_mask(&p, &keep, NULL);
    cr_expect_eq(rc, ATTNREF_OK, "build_mask with NULL diag: rc=%d", rc);
    static const uint8_t want[4] = {1, 0, 1, 1};
    for (int i = 0; i < 4; ++i)
        cr_expect_eq(buf[i], want[i], "NULL diag build [%d]: expected %u, got %u", i,
                     (unsigned)want[i], (unsigned)buf[i]);
    p.lq = -1;
    rc = attnref_mask_shape(&p, shape, NULL);
    cr_expect_eq(rc, ATTNREF_EINVAL, "NULL diag error: expected EINVAL, got %d", rc);
}

/* ---------------------------------------------------------------- static key buffer (kv_len) */

/* A static cache of 8 slots holding 5 tokens, 2 new queries: positions 5 and 6 keep 0..5 and
 * 0..6; slot 7 (never written yet) is kept by no row. */
Test(mask, kv_len_static_buffer_slots_past_end_never_kept)
{
    attnref_mask_params p = mk_params(2, 5, 0, 1, NULL, NULL);
    p.kv_len = 8;
    uint8_t *got = build_checked(&p, 1, 2, 8);
    static const uint8_t want[2 * 8] = {
        1, 1, 1, 1, 1, 1, 0, 0, /**/ 1, 1, 1, 1, 1, 1, 1, 0,
    };
    expect_keep(got, want, 1, 2, 8, "kv_len 8, offset 5, lq 2");
    free(got);
}

/* kv_len composes with window, lengths and left padding, whose ranges grow to 0..kv_len. */
Test(mask, kv_len_with_window_lengths_left_padding)
{
    /* lq=2, offset=3, kv_len=7, W=3: positions 3, 4 keep {1,2,3}, {2,3,4}; b0 lengths 7
     * (= kv_len, valid), b1 lengths 4 and left padding 2. */
    const int64_t lengths[2] = {7, 4}, left[2] = {0, 2};
    attnref_mask_params p = mk_params(2, 3, 3, 2, lengths, left);
    p.kv_len = 7;
    uint8_t *got = build_checked(&p, 2, 2, 7);
    static const uint8_t want[2 * 2 * 7] = {
        0, 1, 1, 1, 0, 0, 0, /**/ 0, 0, 1, 1, 1, 0, 0,
        0, 0, 1, 1, 0, 0, 0, /**/ 0, 0, 1, 1, 0, 0, 0,
    };
    expect_keep(got, want, 2, 2, 7, "kv_len 7 with window, lengths, left padding");
    free(got);
}

/* kv_len = offset + lq is the default shape; kv_len = 0 means the same. */
Test(mask, kv_len_equal_to_offset_plus_lq_is_plain)
{
    attnref_mask_params p = mk_params(3, 2, 0, 1, NULL, NULL);
    p.kv_len = 5;
    uint8_t *a = build_checked(&p, 1, 3, 5);
    p.kv_len = 0;
    uint8_t *b = build_checked(&p, 1, 3, 5);
    expect_keep(a, b, 1, 3, 5, "kv_len 5 vs 0");
    free(a);
    free(b);
}

Test(mask, error_kv_len_shorter_or_negative)
{
    attnref_mask_params p = mk_params(2, 5, 0, 1, NULL, NULL);
    p.kv_len = 6; /* < offset + lq = 7 */
    expect_shape_and_build_fail(&p, ATTNREF_EINVAL, "kv_len 6 < offset + lq 7");
    int64_t shape[4];
    attnref_diag diag;
    fill_diag(&diag);
    cr_assert_eq(attnref_mask_shape(&p, shape, &diag), ATTNREF_EINVAL);
    cr_expect_not_null(strstr(diag.msg, "kv_len"), "diag must name \"kv_len\": \"%s\"", diag.msg);
    p.kv_len = -1;
    expect_shape_and_build_fail(&p, ATTNREF_EINVAL, "kv_len -1");
    /* lengths may reach kv_len, not beyond. */
    const int64_t over[1] = {9};
    p = mk_params(2, 5, 0, 1, over, NULL);
    p.kv_len = 8;
    expect_shape_and_build_fail(&p, ATTNREF_EINVAL, "lengths 9 > kv_len 8");
    p.kv_len = ATTNREF_MAX_NUMEL + 1;
    expect_shape_and_build_fail(&p, ATTNREF_ERANGE, "kv_len over the element limit");
}
