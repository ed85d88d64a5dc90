/* test_cache_quant.c — the quantized KV cache (SPEC clause 17): exact codes and values. */
#include "cache_test_util.h"

/* ---- quantization ----------------------------------------------------------------------- */

Test(cache, quantize_constant_group_is_exact)
{
    double x[32];
    uint8_t q[32];
    double s, b;
    for (int i = 0; i < 32; i++)
        x[i] = -1.75;
    cr_assert_eq(attnref_quantize_group(x, 32, 4, ATTNREF_F16, q, &s, &b, NULL), ATTNREF_OK);
    cr_assert_eq(s, 0.0);
    cr_assert_eq(b, -1.75);
    for (int i = 0; i < 32; i++) {
        cr_assert_eq(q[i], 0);
        cr_assert_eq(attnref_dequantize(q[i], s, b, ATTNREF_F16), -1.75);
    }
}

/* scale 1, bias 0: ties go to the even code (0.5 -> 0, 1.5 -> 2, 2.5 -> 2); rounding half away
 * from zero would give 1, 2, 3. */
Test(cache, quantize_known_group_ties_to_even)
{
    double x[32];
    uint8_t q[32];
    double s, b;
    for (int i = 0; i < 32; i++)
        x[i] = 7;
    x[0] = 0, x[1] = 0.5, x[2] = 1.5, x[3] = 2.5, x[4] = 3.5, x[5] = 15;
    cr_assert_eq(attnref_quantize_group(x, 32, 4, ATTNREF_F32, q, &s, &b, NULL), ATTNREF_OK);
    cr_assert_eq(s, 1.0);
    cr_assert_eq(b, 0.0);
    const uint8_t want[6] = {0, 0, 2, 2, 4, 15};
    for (int i = 0; i < 6; i++)
        cr_assert_eq(q[i], want[i], "q[%d] = %d, expected %d", i, q[i], want[i]);
    cr_assert_eq(q[6], 7);
}

/* 8 bits, range 2.55 in bf16: scale = bf16(0.01) = 0.010009765625, a non-trivial rounding. */
Test(cache, quantize_eight_bits_bf16_scale_rounds)
{
    double x[32] = {0};
    uint8_t q[32];
    double s, b;
    x[1] = 2.546875; /* bf16-exact; max */
    x[2] = 1.0;
    x[3] = -0.0;
    cr_assert_eq(attnref_quantize_group(x, 32, 8, ATTNREF_BF16, q, &s, &b, NULL), ATTNREF_OK);
    cr_assert_eq(s, 0.010009765625); /* 2.546875/255 = 0.0099877.. -> bf16 */
    cr_assert_eq(b, 0.0);
    cr_assert_eq(q[1], 254); /* 2.546875/0.010009765625 = 254.44 */
    cr_assert_eq(q[2], 100); /* 99.90 */
    cr_assert_eq(attnref_dequantize(q[2], s, b, ATTNREF_BF16), 1.0); /* 1.0009765625 -> bf16 1.0 */
    cr_assert_eq(attnref_dequantize(q[1], s, b, ATTNREF_BF16), 2.546875); /* 2.54248.. -> bf16 */
}

Test(cache, quantized_cache_stores_dequantized_values)
{
    attnref_cache_params p = base(ATTNREF_CACHE_QUANTIZED, 1);
    p.head_dim = 32, p.value_dim = 32, p.group_size = 32, p.bits = 4;
    attnref_cache *c = mk(p);
    float kb[32], vb[32];
    for (int i = 0; i < 32; i++)
        kb[i] = 7, vb[i] = 3;
    kb[0] = 0, kb[1] = 0.5f, kb[2] = 1.5f, kb[3] = 2.5f, kb[5] = 15;
    attnref_tensor k, v;
    int64_t shape[4] = {1, 1, 1, 32};
    attnref_tensor_init(&k, kb, ATTNREF_F32, 4, shape, NULL);
    attnref_tensor_init(&v, vb, ATTNREF_F32, 4, shape, NULL);
    cr_assert_eq(attnref_cache_update(c, &k, &v, NULL), ATTNREF_OK);
    float ko[32], vo[32];
    attnref_tensor_init(&k, ko, ATTNREF_F32, 4, shape, NULL);
    attnref_tensor_init(&v, vo, ATTNREF_F32, 4, shape, NULL);
    cr_assert_eq(attnref_cache_kv(c, &k, &v, NULL), ATTNREF_OK);
    cr_assert_eq(ko[1], 0.0f);
    cr_assert_eq(ko[2], 2.0f);
    cr_assert_eq(ko[3], 2.0f);
    cr_assert_eq(ko[5], 15.0f);
    cr_assert_eq(vo[0], 3.0f);
    kb[4] = INFINITY;
    attnref_tensor_init(&k, kb, ATTNREF_F32, 4, shape, NULL);
    attnref_tensor_init(&v, vb, ATTNREF_F32, 4, shape, NULL);
    attnref_diag d;
    cr_assert_eq(attnref_cache_update(c, &k, &v, &d), ATTNREF_EINVAL);
    cr_assert(strstr(d.msg, "finite") != NULL, "%s", d.msg);
    cr_assert_eq(T_of(c), 1, "a failed update changes nothing");
    attnref_cache_destroy(c);
}
