/* cache_quant.c — affine group quantization of the quantized KV cache (SPEC clause 17).
 *
 * Every step is one correctly rounded binary64 operation, then at most one rounding to the
 * cache dtype, so any implementation that follows the clause step by step reproduces the codes
 * and the dequantized values bit for bit.  Rounding to an integer is written out (ties to even)
 * rather than left to nearbyint, which would follow the FPU rounding mode. */
#include <math.h>

#include "cache_internal.h"
#include "internal.h"

static double round_to(double x, attnref_dtype dt)
{
    union {
        float f;
        uint16_t h;
    } buf;
    attnref_store(&buf, dt, 0, x);
    return attnref_load(&buf, dt, 0);
}

/* Nearest integer, ties to even, for 0 <= t < 2^52. */
static double round_half_even(double t)
{
    double f = floor(t), r = t - f;
    if (r > 0.5)
        return f + 1.0;
    if (r < 0.5)
        return f;
    return fmod(f, 2.0) == 0.0 ? f : f + 1.0;
}

static void quantize(const double *x, int64_t g, int bits, attnref_dtype dt, uint8_t *q,
                     double *scale, double *bias)
{
    double mn = x[0], mx = x[0], levels = (double)((1 << bits) - 1);
    for (int64_t i = 1; i < g; i++) {
        if (x[i] < mn)
            mn = x[i];
        if (x[i] > mx)
            mx = x[i];
    }
    double s = round_to((mx - mn) / levels, dt);
    *scale = s;
    *bias = mn; /* already a dt value: exact */
    for (int64_t i = 0; i < g; i++) {
        if (s == 0.0) { /* a constant group (or a range below the dtype's smallest step) */
            q[i] = 0;
            continue;
        }
        double c = round_half_even((x[i] - mn) / s);
        q[i] = (uint8_t)(c > levels ? levels : c);
    }
}

double attnref_dequantize(uint8_t q, double scale, double bias, attnref_dtype dt)
{
    return round_to(scale * (double)q + bias, dt);
}

int attnref_quantize_group(const double *x, int64_t g, int bits, attnref_dtype dt, uint8_t *q,
                           double *scale, double *bias, attnref_diag *diag)
{
    if (!x || !q || !scale || !bias)
        return attnref__fail(diag, ATTNREF_EINVAL, "quantize: NULL argument");
    if (g < 1)
        return attnref__fail(diag, ATTNREF_EINVAL, "quantize: group of %lld values", (long long)g);
    if (bits != 4 && bits != 8)
        return attnref__fail(diag, ATTNREF_EINVAL, "quantize: bits %d is not 4 or 8", bits);
    if (!attnref_dtype_is_float(dt))
        return attnref__fail(diag, ATTNREF_EDTYPE, "quantize: dtype %s is not f32, f16 or bf16",
                             attnref_dtype_name(dt));
    for (int64_t i = 0; i < g; i++)
        if (!isfinite(x[i]))
            return attnref__fail(diag, ATTNREF_EINVAL, "quantize: x[%lld] is not finite",
                                 (long long)i);
    quantize(x, g, bits, dt, q, scale, bias);
    attnref__ok(diag);
    return ATTNREF_OK;
}

void attnref__quant_roundtrip(double *x, int64_t g, int bits, attnref_dtype dt)
{
    uint8_t q[128];
    double s, b;
    quantize(x, g, bits, dt, q, &s, &b);
    for (int64_t i = 0; i < g; i++)
        x[i] = attnref_dequantize(q[i], s, b, dt);
}
