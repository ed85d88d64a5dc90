/* test_tensor.c — descriptor construction, validation (with its diagnostics) and offsets. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <string.h>

#include "attnref/tensor.h"

/* A descriptor whose every field is garbage, to show what init and check write or read. */
static attnref_tensor poisoned(void)
{
    attnref_tensor t;
    memset(&t, 0x5a, sizeof t);
    return t;
}

static attnref_diag dirty_diag(void)
{
    attnref_diag d;
    strcpy(d.msg, "stale message from an earlier call");
    return d;
}

/* A valid 2x3 f32 view to mutate one field at a time. */
static float buf6[6];

static attnref_tensor valid_2x3(void)
{
    attnref_tensor t;
    memset(&t, 0, sizeof t);
    t.data = buf6;
    t.dtype = ATTNREF_F32;
    t.ndim = 2;
    t.shape[0] = 2;
    t.shape[1] = 3;
    t.strides[0] = 3;
    t.strides[1] = 1;
    return t;
}

/* ---- init -------------------------------------------------------------------------------- */

Test(tensor, init_contiguous_strides)
{
    float data[120];
    const int64_t shape[4] = {2, 3, 4, 5};
    attnref_tensor t = poisoned();
    attnref_diag d = dirty_diag();
    cr_assert_eq(attnref_tensor_init(&t, data, ATTNREF_F32, 4, shape, &d), ATTNREF_OK, "init: %s",
                 d.msg);
    cr_assert_str_eq(d.msg, "", "diag cleared on success");
    cr_assert_eq(t.data, (void *)data, "data kept");
    cr_assert_eq(t.dtype, ATTNREF_F32, "dtype kept");
    cr_assert_eq(t.ndim, 4, "rank kept");
    const int64_t want[4] = {60, 20, 5, 1};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(t.shape[i], shape[i], "shape[%d]", i);
        cr_assert_eq(t.strides[i], want[i], "strides[%d] = %lld, want %lld", i,
                     (long long)t.strides[i], (long long)want[i]);
    }
    cr_assert_eq(attnref_tensor_numel(&t), 120, "numel");
    cr_assert_eq(attnref_tensor_check(&t, "q", &d), ATTNREF_OK,
                 "a fresh contiguous tensor checks: %s", d.msg);
}

Test(tensor, init_low_ranks)
{
    float x = 0.0f;
    attnref_tensor t = poisoned();
    cr_assert_eq(attnref_tensor_init(&t, &x, ATTNREF_F16, 0, NULL, NULL), ATTNREF_OK,
                 "rank 0 needs no shape");
    cr_assert_eq(t.ndim, 0, "rank 0");
    cr_assert_eq(attnref_tensor_numel(&t), 1, "rank 0 has one element");
    cr_assert_eq(attnref_tensor_offset(&t, NULL), 0, "rank 0 offset");

    const int64_t s1[1] = {7};
    cr_assert_eq(attnref_tensor_init(&t, &x, ATTNREF_BOOL, 1, s1, NULL), ATTNREF_OK, "rank 1");
    cr_assert_eq(t.strides[0], 1, "rank 1 stride");
    cr_assert_eq(attnref_tensor_numel(&t), 7, "rank 1 numel");
    /* Entries past ndim are not left as garbage, so a descriptor compares and prints cleanly. */
    for (int i = 1; i < ATTNREF_MAX_RANK; i++)
        cr_assert(t.shape[i] == 0 && t.strides[i] == 0, "entry %d past ndim is zeroed", i);
}

Test(tensor, init_zero_extent)
{
    const int64_t shape[3] = {2, 0, 3};
    attnref_tensor t = poisoned();
    cr_assert_eq(attnref_tensor_init(&t, NULL, ATTNREF_BF16, 3, shape, NULL), ATTNREF_OK,
                 "empty tensor");
    cr_assert_eq(attnref_tensor_numel(&t), 0, "numel 0");
    cr_assert_eq(t.strides[0], 0, "row-major stride left of the zero extent");
    cr_assert_eq(t.strides[1], 3, "stride of the zero extent");
    cr_assert_eq(t.strides[2], 1, "innermost stride");
    cr_assert_eq(attnref_tensor_check(&t, "k", NULL), ATTNREF_OK, "NULL data is fine when empty");

    /* A zero extent makes the count 0 even when the others would overflow int64. */
    const int64_t huge[4] = {(int64_t)1 << 40, (int64_t)1 << 40, (int64_t)1 << 40, 0};
    cr_assert_eq(attnref_tensor_init(&t, NULL, ATTNREF_F32, 4, huge, NULL), ATTNREF_OK,
                 "huge but empty");
    cr_assert_eq(attnref_tensor_numel(&t), 0, "numel 0 despite huge extents");
}

Test(tensor, init_rejects)
{
    float x;
    attnref_diag d = dirty_diag();
    attnref_tensor t = poisoned(), before = poisoned();
    const int64_t shape5[5] = {1, 1, 1, 1, 1};

    cr_assert_eq(attnref_tensor_init(&t, &x, ATTNREF_F32, 5, shape5, &d), ATTNREF_EINVAL, "rank 5");
    cr_assert_str_eq(d.msg, "tensor: rank 5 is outside 0..4", "diag: %s", d.msg);
    cr_assert_eq(attnref_tensor_init(&t, &x, ATTNREF_F32, -1, shape5, &d), ATTNREF_EINVAL,
                 "rank -1");

    const int64_t neg[3] = {4, 5, -3};
    cr_assert_eq(attnref_tensor_init(&t, &x, ATTNREF_F32, 3, neg, &d), ATTNREF_EINVAL,
                 "negative extent");
    cr_assert_str_eq(d.msg, "tensor: dimension 2 has negative extent -3", "diag: %s", d.msg);

    const int64_t ok2[2] = {2, 2};
    cr_assert_eq(attnref_tensor_init(&t, &x, (attnref_dtype)0, 2, ok2, &d), ATTNREF_EINVAL,
                 "dtype 0");
    cr_assert_eq(attnref_tensor_init(&t, &x, (attnref_dtype)5, 2, ok2, &d), ATTNREF_EINVAL,
                 "dtype 5");
    cr_assert(strstr(d.msg, "dtype") != NULL, "diag names the dtype: %s", d.msg);
    cr_assert_eq(attnref_tensor_init(&t, &x, ATTNREF_F32, 2, NULL, &d), ATTNREF_EINVAL,
                 "NULL shape");
    cr_assert_eq(attnref_tensor_init(NULL, &x, ATTNREF_F32, 2, ok2, &d), ATTNREF_EINVAL,
                 "NULL descriptor");

    const int64_t big[4] = {1 << 20, 1 << 20, 1 << 20, 1 << 20};
    cr_assert_eq(attnref_tensor_init(&t, &x, ATTNREF_F32, 4, big, &d), ATTNREF_ERANGE,
                 "2^80 elements");
    cr_assert(strstr(d.msg, "element count") != NULL, "diag: %s", d.msg);
    cr_assert_eq(memcmp(&t, &before, sizeof t), 0, "*t untouched by failed inits");

    /* An empty tensor still gets row-major strides, and init bounds them like the count, so
     * a zero extent in front of huge ones is rejected while one behind them is not. */
    const int64_t wide_empty[2] = {0, (int64_t)1 << 40};
    cr_assert_eq(attnref_tensor_init(&t, NULL, ATTNREF_F32, 2, wide_empty, &d), ATTNREF_ERANGE,
                 "stride 2^40 exceeds the bound even though the tensor is empty");
    cr_assert(strncmp(d.msg, "tensor: ", 8) == 0, "diag: %s", d.msg);
    const int64_t empty_wide[2] = {(int64_t)1 << 40, 0};
    cr_assert_eq(attnref_tensor_init(&t, NULL, ATTNREF_F32, 2, empty_wide, &d), ATTNREF_OK,
                 "strides {0, 1}: %s", d.msg);
    cr_assert(t.strides[0] == 0 && t.strides[1] == 1, "strides of the empty tensor");
}

Test(tensor, init_numel_bound_is_inclusive)
{
    attnref_tensor t;
    const int64_t at[1] = {ATTNREF_MAX_NUMEL};
    const int64_t over[2] = {2, ((int64_t)1 << 30) + 1};
    const int64_t at2[4] = {1 << 8, 1 << 8, 1 << 8, 1 << 7};
    cr_assert_eq(attnref_tensor_init(&t, NULL, ATTNREF_BOOL, 1, at, NULL), ATTNREF_OK,
                 "2^31 elements allowed");
    cr_assert_eq(attnref_tensor_numel(&t), ATTNREF_MAX_NUMEL, "numel 2^31");
    cr_assert_eq(attnref_tensor_init(&t, NULL, ATTNREF_BOOL, 4, at2, NULL), ATTNREF_OK,
                 "2^31 over 4 dims");
    cr_assert_eq(t.strides[0], (int64_t)1 << 23, "strides[0]");
    cr_assert_eq(attnref_tensor_init(&t, NULL, ATTNREF_BOOL, 2, over, NULL), ATTNREF_ERANGE,
                 "2^31 + 2 rejected");
}

/* ---- numel ------------------------------------------------------------------------------- */

Test(tensor, numel_values)
{
    attnref_tensor t = valid_2x3();
    cr_assert_eq(attnref_tensor_numel(&t), 6, "2x3");
    t.ndim = 0;
    cr_assert_eq(attnref_tensor_numel(&t), 1, "rank 0");
    t.ndim = 4;
    t.shape[2] = 5;
    t.shape[3] = 7;
    cr_assert_eq(attnref_tensor_numel(&t), 2 * 3 * 5 * 7, "rank 4");
    t.shape[1] = 0;
    cr_assert_eq(attnref_tensor_numel(&t), 0, "zero extent");
    /* numel has no status channel: an unrepresentable or invalid count comes back as -1. */
    for (int i = 0; i < 4; i++)
        t.shape[i] = (int64_t)1 << 20;
    cr_assert_eq(attnref_tensor_numel(&t), -1, "2^80 does not wrap");
    t.shape[3] = (int64_t)1 << 3; /* 2^63 */
    cr_assert_eq(attnref_tensor_numel(&t), -1, "2^63 does not wrap");
    t.shape[3] = (int64_t)1 << 2; /* 2^62 fits in int64 */
    cr_assert_eq(attnref_tensor_numel(&t), (int64_t)1 << 62, "2^62 is exact");
    t.shape[0] = -1;
    cr_assert_eq(attnref_tensor_numel(&t), -1, "negative extent");
    t = valid_2x3();
    t.ndim = 5;
    cr_assert_eq(attnref_tensor_numel(&t), -1, "rank 5");
    cr_assert_eq(attnref_tensor_numel(NULL), -1, "NULL");
}

/* ---- check ------------------------------------------------------------------------------- */

Test(tensor, check_accepts_and_clears_diag)
{
    attnref_tensor t = valid_2x3();
    attnref_diag d = dirty_diag();
    cr_assert_eq(attnref_tensor_check(&t, "q", &d), ATTNREF_OK, "valid: %s", d.msg);
    cr_assert_str_eq(d.msg, "", "diag cleared on success");
    cr_assert_eq(attnref_tensor_check(&t, "q", NULL), ATTNREF_OK, "diag may be NULL");

    t.strides[0] = 0; /* broadcast rows */
    cr_assert_eq(attnref_tensor_check(&t, "mask", &d), ATTNREF_OK, "stride 0 broadcasts: %s",
                 d.msg);
    t.shape[0] = 1;
    t.strides[0] = INT64_MAX; /* never multiplied by a nonzero index */
    cr_assert_eq(attnref_tensor_check(&t, "mask", &d), ATTNREF_OK,
                 "any stride on an extent-1 dim: %s", d.msg);
    t.dtype = ATTNREF_BOOL;
    cr_assert_eq(attnref_tensor_check(&t, "mask", &d), ATTNREF_OK, "bool dtype: %s", d.msg);
}

Test(tensor, check_rejects_rank)
{
    attnref_tensor t = valid_2x3();
    attnref_diag d;
    t.ndim = 5;
    cr_assert_eq(attnref_tensor_check(&t, "q", &d), ATTNREF_EINVAL, "rank 5");
    cr_assert_str_eq(d.msg, "q: rank 5 is outside 0..4", "diag: %s", d.msg);
    t.ndim = -2;
    cr_assert_eq(attnref_tensor_check(&t, "v", &d), ATTNREF_EINVAL, "rank -2");
    cr_assert_str_eq(d.msg, "v: rank -2 is outside 0..4", "diag: %s", d.msg);
}

Test(tensor, check_rejects_negative_extent)
{
    attnref_tensor t = valid_2x3();
    attnref_diag d;
    t.ndim = 3;
    t.shape[2] = -3;
    t.strides[2] = 1;
    cr_assert_eq(attnref_tensor_check(&t, "q", &d), ATTNREF_EINVAL, "negative extent");
    cr_assert_str_eq(d.msg, "q: dimension 2 has negative extent -3", "diag: %s", d.msg);
}

Test(tensor, check_rejects_negative_stride)
{
    attnref_tensor t = valid_2x3();
    attnref_diag d;
    t.strides[1] = -1;
    cr_assert_eq(attnref_tensor_check(&t, "k", &d), ATTNREF_EINVAL, "negative stride");
    cr_assert_str_eq(d.msg, "k: dimension 1 has negative stride -1", "diag: %s", d.msg);
}

Test(tensor, check_rejects_null_data)
{
    attnref_tensor t = valid_2x3();
    attnref_diag d;
    t.data = NULL;
    cr_assert_eq(attnref_tensor_check(&t, "out", &d), ATTNREF_EINVAL, "NULL data with 6 elements");
    cr_assert_str_eq(d.msg, "out: data is NULL but the tensor has 6 elements", "diag: %s", d.msg);
    t.shape[0] = 0;
    cr_assert_eq(attnref_tensor_check(&t, "out", &d), ATTNREF_OK, "NULL data with no elements: %s",
                 d.msg);
}

Test(tensor, check_rejects_unknown_dtype)
{
    attnref_tensor t = valid_2x3();
    attnref_diag d;
    const int bad[] = {0, 5, -1, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        t.dtype = (attnref_dtype)bad[i];
        cr_assert_eq(attnref_tensor_check(&t, "q", &d), ATTNREF_EINVAL, "dtype %d", bad[i]);
        cr_assert(strncmp(d.msg, "q: ", 3) == 0 && strstr(d.msg, "dtype") != NULL, "diag: %s",
                  d.msg);
    }
}

Test(tensor, check_rejects_numel_overflow)
{
    attnref_tensor t = valid_2x3();
    attnref_diag d;
    t.ndim = 4;
    for (int i = 0; i < 4; i++) {
        t.shape[i] = (int64_t)1 << 20;
        t.strides[i] = 0;
    }
    cr_assert_eq(attnref_tensor_check(&t, "mask", &d), ATTNREF_ERANGE, "2^80 elements");
    cr_assert(strncmp(d.msg, "mask: ", 6) == 0, "diag names the tensor: %s", d.msg);
    cr_assert(strstr(d.msg, "element count exceeds 2147483648") != NULL, "diag: %s", d.msg);

    /* Extents whose product wraps int64 to exactly 0 must not slip through as empty. */
    t.shape[0] = t.shape[1] = t.shape[2] = t.shape[3] = (int64_t)1 << 16;
    cr_assert_eq(attnref_tensor_check(&t, "mask", &d), ATTNREF_ERANGE, "2^64 elements");
    t.ndim = 2;
    t.shape[0] = (int64_t)1 << 31;
    t.shape[1] = 2;
    cr_assert_eq(attnref_tensor_check(&t, "mask", &d), ATTNREF_ERANGE, "2^32 elements");
}

Test(tensor, check_rejects_large_offsets)
{
    attnref_tensor t = valid_2x3();
    attnref_diag d;
    t.ndim = 1;
    t.shape[0] = 2;
    t.strides[0] = ATTNREF_MAX_NUMEL - 1; /* largest offset 2^31 - 1: spans exactly 2^31 elements */
    cr_assert_eq(attnref_tensor_check(&t, "k", &d), ATTNREF_OK, "span of 2^31 allowed: %s", d.msg);
    t.strides[0] = ATTNREF_MAX_NUMEL;
    cr_assert_eq(attnref_tensor_check(&t, "k", &d), ATTNREF_ERANGE, "largest offset 2^31");
    cr_assert(strncmp(d.msg, "k: largest element offset", 25) == 0, "diag: %s", d.msg);
    t.strides[0] = INT64_MAX; /* (extent-1)*stride must not be computed in wrapping arithmetic */
    cr_assert_eq(attnref_tensor_check(&t, "k", &d), ATTNREF_ERANGE, "INT64_MAX stride");

    /* Each term fits but the sum does not. */
    t.ndim = 2;
    t.shape[0] = 2;
    t.shape[1] = 2;
    t.strides[0] = (int64_t)1 << 30;
    t.strides[1] = (int64_t)1 << 30;
    cr_assert_eq(attnref_tensor_check(&t, "k", &d), ATTNREF_ERANGE, "offset 2^31 from two terms");
    t.strides[1] = ((int64_t)1 << 30) - 1;
    cr_assert_eq(attnref_tensor_check(&t, "k", &d), ATTNREF_OK, "offset 2^31 - 1: %s", d.msg);
}

Test(tensor, check_name_and_diag_robustness)
{
    attnref_tensor t = valid_2x3();
    attnref_diag d;
    t.strides[0] = -4;
    cr_assert_eq(attnref_tensor_check(&t, NULL, &d), ATTNREF_EINVAL, "NULL name");
    cr_assert_str_eq(d.msg, "tensor: dimension 0 has negative stride -4", "default name: %s",
                     d.msg);
    cr_assert_eq(attnref_tensor_check(NULL, "q", &d), ATTNREF_EINVAL, "NULL descriptor");
    cr_assert(strncmp(d.msg, "q: ", 3) == 0, "diag: %s", d.msg);
    cr_assert_eq(attnref_tensor_check(&t, "q", NULL), ATTNREF_EINVAL, "failure with NULL diag");

    char longname[400];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    memset(d.msg, 'z', sizeof d.msg);
    cr_assert_eq(attnref_tensor_check(&t, longname, &d), ATTNREF_EINVAL, "long name");
    cr_assert_eq(strlen(d.msg), sizeof d.msg - 1, "truncated to the buffer, NUL-terminated");
}

/* ---- offset ------------------------------------------------------------------------------ */

Test(tensor, offset_with_permuted_strides)
{
    /* A contiguous (B, L, H, D) = (2, 5, 3, 4) buffer viewed as (B, H, L, D). */
    enum { B = 2, L = 5, H = 3, D = 4 };
    float buf[B * L * H * D];
    for (int i = 0; i < B * L * H * D; i++)
        buf[i] = (float)i;
    attnref_tensor t;
    memset(&t, 0, sizeof t);
    t.data = buf;
    t.dtype = ATTNREF_F32;
    t.ndim = 4;
    const int64_t shape[4] = {B, H, L, D}, strides[4] = {L * H * D, D, H * D, 1};
    memcpy(t.shape, shape, sizeof shape);
    memcpy(t.strides, strides, sizeof strides);
    attnref_diag d;
    cr_assert_eq(attnref_tensor_check(&t, "q", &d), ATTNREF_OK, "permuted view: %s", d.msg);
    cr_assert_eq(attnref_tensor_numel(&t), B * L * H * D, "numel");

    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int l = 0; l < L; l++)
                for (int e = 0; e < D; e++) {
                    const int64_t idx[4] = {b, h, l, e};
                    int64_t want = ((int64_t)(b * L + l) * H + h) * D + e;
                    int64_t got = attnref_tensor_offset(&t, idx);
                    cr_assert_eq(got, want, "offset(%d,%d,%d,%d) = %lld, want %lld", b, h, l, e,
                                 (long long)got, (long long)want);
                    cr_assert_eq(attnref_load(t.data, t.dtype, got), (double)want, "element value");
                }

    const int64_t last[4] = {B - 1, H - 1, L - 1, D - 1};
    cr_assert_eq(attnref_tensor_offset(&t, last), B * L * H * D - 1,
                 "last element is the buffer end");
}

Test(tensor, offset_with_broadcast)
{
    attnref_tensor t = valid_2x3();
    t.strides[0] = 0;
    const int64_t a[2] = {0, 2}, b[2] = {1, 2};
    cr_assert_eq(attnref_tensor_offset(&t, a), 2, "row 0");
    cr_assert_eq(attnref_tensor_offset(&t, b), 2, "row 1 reads the same element");
}
