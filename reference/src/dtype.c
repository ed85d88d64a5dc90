/* dtype.c — element types and exact f16/bf16 conversions.
 *
 * Every conversion works on bit patterns with integer arithmetic only, so results do not depend
 * on the FPU rounding mode, on FTZ/DAZ (a process linked with -ffast-math flushes f32
 * subnormals, which include every bf16 subnormal), or on compiler support for _Float16/__bf16.
 * The f32 -> f16 / bf16 routines were checked against the F16C hardware conversion on all 2^32
 * inputs when they were written; the unit tests re-check every 16-bit pattern and millions of
 * rounding cases against an independent oracle.
 */
#include <math.h>
#include "attnref/dtype.h"

#include <string.h>

#include "attnref/status.h"

size_t attnref_dtype_size(attnref_dtype dt)
{
    switch (dt) {
    case ATTNREF_F32: return 4;
    case ATTNREF_F16: return 2;
    case ATTNREF_BF16: return 2;
    case ATTNREF_BOOL: return 1;
    default: return 0;
    }
}

const char *attnref_dtype_name(attnref_dtype dt)
{
    switch (dt) {
    case ATTNREF_F32: return "f32";
    case ATTNREF_F16: return "f16";
    case ATTNREF_BF16: return "bf16";
    case ATTNREF_BOOL: return "bool";
    default: return "?";
    }
}

int attnref_dtype_parse(const char *name, attnref_dtype *out)
{
    static const attnref_dtype all[] = {ATTNREF_F32, ATTNREF_F16, ATTNREF_BF16, ATTNREF_BOOL};
    if (name == NULL || out == NULL)
        return ATTNREF_EINVAL;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(name, attnref_dtype_name(all[i])) == 0) {
            *out = all[i];
            return ATTNREF_OK;
        }
    }
    return ATTNREF_EINVAL;
}

int attnref_dtype_is_float(attnref_dtype dt)
{
    return dt == ATTNREF_F32 || dt == ATTNREF_F16 || dt == ATTNREF_BF16;
}

static float f32_from_bits(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static uint32_t f32_bits(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static double f64_from_bits(uint64_t x)
{
    double d;
    memcpy(&d, &x, sizeof d);
    return d;
}

static uint64_t f64_bits(double d)
{
    uint64_t x;
    memcpy(&x, &d, sizeof x);
    return x;
}

float attnref_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    if (e == 0x1f) {
        /* Setting the quiet bit for a NaN matches F16C VCVTPH2PS, which quiets sNaN. */
        x = sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u);
    } else if (e) {
        x = sign | ((e + 112) << 23) | (m << 13);
    } else if (!m) {
        x = sign;
    } else {
        /* Every f16 subnormal is an f32 normal: shift the leading one into the hidden bit. */
        e = 113;
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        x = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
    return f32_from_bits(x);
}

float attnref_bf16_to_f32(uint16_t h)
{
    return f32_from_bits((uint32_t)h << 16);
}

uint16_t attnref_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
    /* 0x477ff000 is 65520 = 65504 + half an ulp; the tie goes to the even neighbour 2^16 = inf. */
    if (ax >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {
        /* Below 2^-14 the result is subnormal; 2^-25 itself is a tie that goes to even (0). */
        if (ax < 0x33000000u)
            return (uint16_t)sign;
        uint32_t e = ax >> 23, m = (ax & 0x7fffffu) | 0x800000u, sh = 126 - e;
        uint32_t q = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
        /* A carry into 0x400 yields the smallest normal, which is the correct result. */
        q += (rem > half) || (rem == half && (q & 1));
        return (uint16_t)(sign | q);
    }
    uint32_t r = ax - 0x38000000u; /* rebias the exponent from 127 to 15 */
    /* Adding 0xfff plus the kept lsb rounds to nearest even; a mantissa carry correctly bumps
     * the exponent, and anything that would reach inf was caught above. */
    r += 0xfffu + ((r >> 13) & 1);
    return (uint16_t)(sign | (r >> 13));
}

uint16_t attnref_f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    /* Same RNE trick as f16; a carry out of the largest finite value lands exactly on inf. */
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

/* Rounds the binary64 pattern x once (RNE) to a 16-bit IEEE-style format with `mbits` fraction
 * bits and exponent bias `bias` (f16: 10, 15; bf16: 7, 127).  Rounding straight from the 53-bit
 * significand avoids the double rounding of going through f32, which is wrong whenever x lies
 * just off a 16-bit halfway point by less than half an f32 ulp. */
static uint16_t narrow_f64(uint64_t x, unsigned mbits, int bias)
{
    const uint64_t frac_mask = ((uint64_t)1 << 52) - 1;
    const uint32_t inf = ((1u << (15 - mbits)) - 1) << mbits;
    uint32_t sign = (uint32_t)(x >> 48) & 0x8000u;
    uint64_t ax = x & 0x7fffffffffffffffu;

    if (ax > 0x7ff0000000000000u) {
        /* Quiet NaN, same sign, top payload bits kept: what (f16)(f32)x gives on F16C. */
        uint32_t payload = (uint32_t)((ax & frac_mask) >> (52 - mbits));
        return (uint16_t)(sign | inf | (1u << (mbits - 1)) | payload);
    }
    if (ax == 0x7ff0000000000000u)
        return (uint16_t)(sign | inf);
    /* Zero and binary64 subnormals (< 2^-1022) are far below half the smallest subnormal of
     * either target, so they round to a signed zero. */
    if ((ax >> 52) == 0)
        return (uint16_t)sign;

    int e = (int)(ax >> 52) - 1023;
    const int emin = 1 - bias;
    /* |x| >= 2^(bias+1) lies beyond the largest finite value plus half an ulp. */
    if (e > bias)
        return (uint16_t)(sign | inf);

    uint64_t m = (ax & frac_mask) | ((uint64_t)1 << 52);
    /* Subnormal results share the quantum of the smallest binade, so shift further there. */
    int eq = e < emin ? emin : e;
    unsigned sh = (unsigned)(52 - (int)mbits + (eq - e));
    /* With sh >= 54 the half-quantum 2^(sh-1) exceeds m, so the result is a signed zero. */
    if (sh >= 54)
        return (uint16_t)sign;

    uint64_t q = m >> sh;
    uint64_t rem = m & (((uint64_t)1 << sh) - 1), half = (uint64_t)1 << (sh - 1);
    q += (rem > half) || (rem == half && (q & 1));
    /* For a normal result q carries the hidden bit, so adding it to the exponent field offset by
     * one gives the right pattern; a rounding carry to 2^(mbits+1) bumps the exponent, and a
     * subnormal that rounds up to 2^mbits becomes the smallest normal. */
    uint32_t bits = ((uint32_t)(eq - emin) << mbits) + (uint32_t)q;
    if (bits >= inf)
        return (uint16_t)(sign | inf);
    return (uint16_t)(sign | bits);
}

uint16_t attnref_f64_to_f16(double d)
{
    return narrow_f64(f64_bits(d), 10, 15);
}

uint16_t attnref_f64_to_bf16(double d)
{
    return narrow_f64(f64_bits(d), 7, 127);
}

float attnref_f64_to_f32(double d)
{
    return (float)d;
}

/* Integer-only f32 -> f64 widening: a hardware conversion would flush f32 subnormals (all bf16
 * subnormals among them) to zero under DAZ.  NaNs get the quiet bit, as CVTSS2SD does. */
static double f32_bits_to_f64(uint32_t x)
{
    uint64_t sign = (uint64_t)(x >> 31) << 63;
    uint32_t e = (x >> 23) & 0xffu, m = x & 0x7fffffu;
    uint64_t r;
    if (e == 0xff) {
        r = sign | 0x7ff0000000000000u | ((uint64_t)m << 29) | (m ? (uint64_t)1 << 51 : 0u);
    } else if (e) {
        r = sign | ((uint64_t)(e + 896) << 52) | ((uint64_t)m << 29);
    } else if (!m) {
        r = sign;
    } else {
        uint32_t e64 = 897;
        while (!(m & 0x800000u)) {
            m <<= 1;
            e64--;
        }
        r = sign | ((uint64_t)e64 << 52) | ((uint64_t)(m & 0x7fffffu) << 29);
    }
    return f64_from_bits(r);
}

double attnref_dtype_finite_min(attnref_dtype dt)
{
    switch (dt) {
    case ATTNREF_F32: return -0x1.fffffep127; /* -FLT_MAX */
    case ATTNREF_F16: return -65504.0;
    case ATTNREF_BF16: return -0x1.fep127; /* bf16 0xff7f */
    default: return 0.0;
    }
}

double attnref_load(const void *data, attnref_dtype dt, int64_t index)
{
    const unsigned char *p = data;
    switch (dt) {
    case ATTNREF_F32: {
        uint32_t x;
        memcpy(&x, p + index * 4, sizeof x);
        return f32_bits_to_f64(x);
    }
    case ATTNREF_F16: {
        uint16_t h;
        memcpy(&h, p + index * 2, sizeof h);
        return f32_bits_to_f64(f32_bits(attnref_f16_to_f32(h)));
    }
    case ATTNREF_BF16: {
        uint16_t h;
        memcpy(&h, p + index * 2, sizeof h);
        return f32_bits_to_f64((uint32_t)h << 16);
    }
    case ATTNREF_BOOL: return p[index] != 0 ? 1.0 : 0.0;
    default: return 0.0;
    }
}

void attnref_store(void *data, attnref_dtype dt, int64_t index, double v)
{
    unsigned char *p = data;
    switch (dt) {
    case ATTNREF_F32: {
        float f = attnref_f64_to_f32(v);
        memcpy(p + index * 4, &f, sizeof f);
        break;
    }
    case ATTNREF_F16: {
        uint16_t h = attnref_f64_to_f16(v);
        memcpy(p + index * 2, &h, sizeof h);
        break;
    }
    case ATTNREF_BF16: {
        uint16_t h = attnref_f64_to_bf16(v);
        memcpy(p + index * 2, &h, sizeof h);
        break;
    }
    case ATTNREF_BOOL: p[index] = v != 0.0; break;
    default: break;
    }
}

int attnref_promote(attnref_dtype a, attnref_dtype b, attnref_dtype *out)
{
    if (!attnref_dtype_is_float(a) || !attnref_dtype_is_float(b) || out == NULL)
        return ATTNREF_EINVAL;
    /* Among f32/f16/bf16 every mixed pair needs f32: f16 and bf16 each lack the other's range
     * or precision. */
    *out = a == b ? a : ATTNREF_F32;
    return ATTNREF_OK;
}

int attnref_mask_dtype_ok(attnref_dtype mask_dt, attnref_dtype q_dt)
{
    if (!attnref_dtype_is_float(q_dt))
        return 0;
    if (mask_dt == ATTNREF_BOOL)
        return 1;
    attnref_dtype p;
    if (attnref_promote(mask_dt, q_dt, &p) != ATTNREF_OK)
        return 0;
    return p == q_dt;
}

double attnref_dtype_ulp(double x, attnref_dtype dt)
{
    /* p: significand bits; emin: exponent of the smallest normal. */
    int p = 24, emin = -126;
    if (dt == ATTNREF_F16) {
        p = 11;
        emin = -14;
    } else if (dt == ATTNREF_BF16) {
        p = 8;
    }
    if (isnan(x))
        return NAN;
    if (isinf(x))
        return INFINITY;
    x = fabs(x);
    int e;
    if (x == 0.0)
        e = emin;
    else {
        (void)frexp(x, &e); /* x = m * 2^e, m in [0.5, 1): x in [2^(e-1), 2^e) */
        e -= 1;
        if (e < emin)
            e = emin;
    }
    return ldexp(1.0, e - p + 1);
}
