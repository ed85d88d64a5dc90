/* test_dtype.c — exact checks of the f16/bf16 conversions, dtype names, load/store and the
 * promotion and mask-dtype rules.
 *
 * The rounding oracle here is deliberately unlike the library code: it tabulates every finite
 * non-negative 16-bit value with ldexp, finds the neighbours of |x| by binary search, and
 * compares |x| with their exact midpoint in double.  The library instead rounds with integer
 * bias tricks on the bit pattern, so a shared mistake is unlikely.
 */
#include <criterion/criterion.h>

#include <fenv.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attnref/dtype.h"
#include "attnref/status.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define HAVE_MXCSR 1
#endif

/* ---- helpers ----------------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static uint32_t bits32(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    return x;
}

static float from32(uint32_t x)
{
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

static uint64_t bits64(double d)
{
    uint64_t x;
    memcpy(&x, &d, sizeof x);
    return x;
}

static double from64(uint64_t x)
{
    double d;
    memcpy(&d, &x, sizeof d);
    return d;
}

/* Value of a non-NaN f16 pattern straight from the IEEE definition. */
static double f16_ref(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double mag = e == 0x1f ? INFINITY : e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    return (h & 0x8000) ? -mag : mag;
}

/* Value of a non-NaN bf16 pattern (8 exponent bits, bias 127, 7 fraction bits). */
static double bf16_ref(uint16_t h)
{
    int e = (h >> 7) & 0xff, m = h & 0x7f;
    double mag = e == 0xff ? INFINITY : e == 0 ? ldexp(m, -133) : ldexp(128 + m, e - 134);
    return (h & 0x8000) ? -mag : mag;
}

/* A 16-bit format for the oracle: tab[i] is the value of pattern i for every finite
 * non-negative pattern (patterns are monotonic in value), n of them, the first of which past
 * the end is +inf; `beyond` is where the next finite value would sit with an unbounded
 * exponent (IEEE rounds as if it existed, then overflows). */
typedef struct fmt16 {
    double tab[0x7f80];
    int n;
    double beyond;
} fmt16;

static fmt16 F16, BF16;

static void init_formats(void)
{
    F16.n = 0x7c00;
    for (int i = 0; i < F16.n; i++)
        F16.tab[i] = f16_ref((uint16_t)i);
    F16.beyond = 65536.0;
    BF16.n = 0x7f80;
    for (int i = 0; i < BF16.n; i++)
        BF16.tab[i] = bf16_ref((uint16_t)i);
    BF16.beyond = ldexp(1.0, 128);
}

/* Round a non-NaN double to the format, nearest with ties to the even pattern. */
static uint16_t oracle_round(const fmt16 *f, double x)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs(x);
    if (a >= f->beyond)
        return (uint16_t)(sign | f->n);
    int lo = 0, hi = f->n - 1; /* largest index with tab[index] <= a */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (f->tab[mid] <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (f->tab[lo] == a)
        return (uint16_t)(sign | lo);
    double up = lo + 1 < f->n ? f->tab[lo + 1] : f->beyond;
    double midpoint = (f->tab[lo] + up) / 2; /* exact: neighbours differ in one low bit */
    int pick;
    if (a < midpoint)
        pick = lo;
    else if (a > midpoint)
        pick = lo + 1;
    else
        pick = (lo & 1) ? lo + 1 : lo;
    return (uint16_t)(sign | pick);
}

/* The NaN rule of the header: quiet, same sign, top payload bits kept. */
static uint16_t nan_f16_from32(uint32_t x)
{
    return (uint16_t)(((x >> 16) & 0x8000) | 0x7e00 | ((x >> 13) & 0x3ff));
}

static uint16_t nan_bf16_from32(uint32_t x)
{
    return (uint16_t)((x >> 16) | 0x40);
}

static int f16_is_nan(uint16_t h)
{
    return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

static int bf16_is_nan(uint16_t h)
{
    return (h & 0x7f80) == 0x7f80 && (h & 0x7f);
}

/* ---- f16 <-> f32 ------------------------------------------------------------------------- */

Test(dtype, f16_to_f32_all_patterns)
{
    for (uint32_t i = 0; i < 0x10000; i++) {
        uint16_t h = (uint16_t)i;
        float f = attnref_f16_to_f32(h);
        uint32_t fb = bits32(f);
        if (f16_is_nan(h)) {
            /* Widening keeps sign and payload and sets the quiet bit, as F16C VCVTPH2PS. */
            uint32_t want =
                ((uint32_t)(h & 0x8000) << 16) | 0x7fc00000u | ((uint32_t)(h & 0x3ff) << 13);
            cr_assert_eq(fb, want, "f16 NaN %04x widened to %08x, want %08x", h, fb, want);
            continue;
        }
        double want = f16_ref(h);
        cr_assert((double)f == want && !!signbit(f) == !!(h & 0x8000), "f16 %04x -> %a, want %a", h,
                  (double)f, want);
    }
}

Test(dtype, f16_to_f32_literals)
{
    cr_assert_eq(attnref_f16_to_f32(0x3c00), 1.0f, "0x3c00 is 1.0");
    cr_assert_eq(attnref_f16_to_f32(0xc000), -2.0f, "0xc000 is -2.0");
    cr_assert_eq(attnref_f16_to_f32(0x3555), 0x1.554p-2f, "0x3555 is 0x1.554p-2");
    cr_assert_eq(attnref_f16_to_f32(0x7bff), 65504.0f, "0x7bff is 65504");
    cr_assert_eq(attnref_f16_to_f32(0x0400), 0x1p-14f, "0x0400 is the smallest normal 2^-14");
    cr_assert_eq(attnref_f16_to_f32(0x03ff), 0x1.ff8p-15f, "0x03ff is the largest subnormal");
    cr_assert_eq(attnref_f16_to_f32(0x0001), 0x1p-24f, "0x0001 is 2^-24");
    cr_assert_eq(bits32(attnref_f16_to_f32(0x8000)), 0x80000000u, "0x8000 is -0.0");
    cr_assert_eq(bits32(attnref_f16_to_f32(0x0000)), 0x00000000u, "0x0000 is +0.0");
    cr_assert_eq(bits32(attnref_f16_to_f32(0x7c00)), 0x7f800000u, "0x7c00 is +inf");
    cr_assert_eq(bits32(attnref_f16_to_f32(0xfc00)), 0xff800000u, "0xfc00 is -inf");
    cr_assert_eq(bits32(attnref_f16_to_f32(0x7e00)), 0x7fc00000u, "0x7e00 is the default qNaN");
    cr_assert_eq(bits32(attnref_f16_to_f32(0x7d00)), 0x7fe00000u, "sNaN 0x7d00 widens quieted");
}

Test(dtype, f16_round_trip_all_patterns)
{
    int nans = 0;
    for (uint32_t i = 0; i < 0x10000; i++) {
        uint16_t h = (uint16_t)i;
        uint16_t back = attnref_f32_to_f16(attnref_f16_to_f32(h));
        if (f16_is_nan(h)) {
            /* A NaN stays a NaN of the same sign and payload; a signalling NaN (quiet bit 0x200
             * clear) comes back quieted, because widening quiets it (the F16C behaviour). */
            nans++;
            cr_assert_eq(back, (uint16_t)(h | 0x0200), "f16 NaN %04x round-tripped to %04x", h,
                         back);
            cr_assert(f16_is_nan(back) && (back & 0x8000) == (h & 0x8000), "NaN %04x lost", h);
        } else {
            cr_assert_eq(back, h, "f16 %04x round-tripped to %04x", h, back);
        }
    }
    cr_assert_eq(nans, 2 * 1023, "expected 2046 NaN patterns, saw %d", nans);
}

/* ---- bf16 <-> f32 ------------------------------------------------------------------------ */

Test(dtype, bf16_to_f32_all_patterns)
{
    for (uint32_t i = 0; i < 0x10000; i++) {
        uint16_t h = (uint16_t)i;
        float f = attnref_bf16_to_f32(h);
        cr_assert_eq(bits32(f), (uint32_t)h << 16, "bf16 %04x widened to %08x", h, bits32(f));
        if (!bf16_is_nan(h)) {
            double want = bf16_ref(h);
            cr_assert((double)f == want && !!signbit(f) == !!(h & 0x8000),
                      "bf16 %04x -> %a, want %a", h, (double)f, want);
        }
    }
    cr_assert_eq(attnref_bf16_to_f32(0x3f80), 1.0f, "0x3f80 is 1.0");
    cr_assert_eq(attnref_bf16_to_f32(0x0001), 0x1p-133f, "0x0001 is the smallest subnormal");
    cr_assert_eq(attnref_bf16_to_f32(0x7f7f), 0x1.fep127f, "0x7f7f is the largest finite");
}

Test(dtype, bf16_round_trip_all_patterns)
{
    for (uint32_t i = 0; i < 0x10000; i++) {
        uint16_t h = (uint16_t)i;
        uint16_t back = attnref_f32_to_bf16(attnref_bf16_to_f32(h));
        if (bf16_is_nan(h)) {
            /* Narrowing quiets: a bf16 sNaN (bit 0x40 clear) comes back with 0x40 set. */
            cr_assert_eq(back, (uint16_t)(h | 0x0040), "bf16 NaN %04x round-tripped to %04x", h,
                         back);
        } else {
            cr_assert_eq(back, h, "bf16 %04x round-tripped to %04x", h, back);
        }
    }
}

/* ---- f32 -> f16 / bf16 rounding -------------------------------------------------------- */

static void check_f32_sample(int to_bf16, uint64_t seed, long count)
{
    init_formats();
    const fmt16 *fmt = to_bf16 ? &BF16 : &F16;
    uint64_t s = seed;
    long nan_seen = 0, finite_in_range = 0;
    for (long i = 0; i < count; i++) {
        uint64_t r = splitmix64(&s);
        uint32_t x = (uint32_t)r;
        if (i & 1) {
            /* Every other sample gets an exponent near the target range so the f16 rounding
             * paths (not just overflow and underflow) see most of the samples. */
            uint32_t lo = to_bf16 ? 0 : 100, span = to_bf16 ? 256 : 48;
            uint32_t e = lo + (uint32_t)((r >> 32) % span);
            x = (x & 0x807fffffu) | (e << 23);
        }
        float f = from32(x);
        uint16_t got = to_bf16 ? attnref_f32_to_bf16(f) : attnref_f32_to_f16(f);
        uint16_t want;
        if (isnan(f)) {
            nan_seen++;
            want = to_bf16 ? nan_bf16_from32(x) : nan_f16_from32(x);
        } else {
            want = oracle_round(fmt, (double)f);
            finite_in_range += (want & 0x7fff) != 0 && (want & 0x7fff) != fmt->n;
        }
        cr_assert_eq(got, want, "%s(%08x = %a) = %04x, oracle %04x",
                     to_bf16 ? "f32_to_bf16" : "f32_to_f16", x, (double)f, got, want);
    }
    cr_assert(nan_seen > 0 && finite_in_range > count / 4,
              "sample too narrow: %ld NaNs, %ld finite nonzero results", nan_seen, finite_in_range);
}

Test(dtype, f32_to_f16_random_4m)
{
    check_f32_sample(0, 0x5eed0f16u, 4L << 20);
}

Test(dtype, f32_to_bf16_random_4m)
{
    check_f32_sample(1, 0x5eedbf16u, 4L << 20);
}

Test(dtype, f32_to_f16_edges)
{
    struct {
        float in;
        uint16_t want;
        const char *why;
    } c[] = {
        {1.0f, 0x3c00, "1.0"},
        {1.0f + 0x1p-11f, 0x3c00, "1 + 2^-11 is a tie, goes to even 1.0"},
        {1.0f + 3 * 0x1p-11f, 0x3c02, "1 + 3*2^-11 is a tie, goes to even 1 + 2^-9"},
        {1.0f + 0x1p-11f + 0x1p-23f, 0x3c01, "just above the tie rounds up"},
        {65504.0f, 0x7bff, "65504 is the largest finite"},
        {65519.99f, 0x7bff, "65519.99 rounds down to 65504"},
        {65520.0f, 0x7c00, "65520 is the tie with 2^16 and overflows to +inf"},
        {-65520.0f, 0xfc00, "-65520 overflows to -inf"},
        {1e10f, 0x7c00, "large values overflow"},
        {FLT_MAX, 0x7c00, "FLT_MAX overflows"},
        {0x1p-14f, 0x0400, "smallest normal"},
        {0x1p-24f, 0x0001, "smallest subnormal 2^-24"},
        {0x1p-25f, 0x0000, "2^-25 is a tie between 0 and 2^-24, goes to even 0"},
        {0x1p-25f * 1.0000001f, 0x0001, "just above 2^-25 rounds up to 2^-24"},
        {-0x1p-25f, 0x8000, "-2^-25 rounds to -0"},
        {0x1.8p-24f, 0x0002, "1.5 * 2^-24 is a tie, goes to even 2 * 2^-24"},
        {0x1.ffcp-15f, 0x0400, "subnormal rounding up carries into the smallest normal"},
        {0x1p-149f, 0x0000, "f32 subnormal underflows to +0"},
        {-0.0f, 0x8000, "-0.0 keeps its sign"},
        {0.0f, 0x0000, "+0.0"},
        {INFINITY, 0x7c00, "+inf"},
        {-INFINITY, 0xfc00, "-inf"},
        {-1.5f, 0xbe00, "-1.5"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint16_t got = attnref_f32_to_f16(c[i].in);
        cr_assert_eq(got, c[i].want, "%s: %a -> %04x, want %04x", c[i].why, (double)c[i].in, got,
                     c[i].want);
    }
    uint16_t n = attnref_f32_to_f16(NAN);
    cr_assert(f16_is_nan(n), "NaN -> %04x is not NaN", n);
    cr_assert_eq(attnref_f32_to_f16(from32(0xff800001u)), 0xfe00,
                 "negative sNaN -> quiet, sign kept");
    cr_assert_eq(attnref_f32_to_f16(from32(0x7fa02000u)), 0x7f01,
                 "payload 0x202000 keeps top bits 0x101");
}

Test(dtype, f32_to_bf16_edges)
{
    struct {
        uint32_t in;
        uint16_t want;
        const char *why;
    } c[] = {
        {0x3f800000u, 0x3f80, "1.0"},
        {0x3f808000u, 0x3f80, "1 + 2^-8 is a tie, goes to even 1.0"},
        {0x3f818000u, 0x3f82, "1 + 3*2^-8 is a tie, goes to even 1 + 2^-6"},
        {0x3f808001u, 0x3f81, "just above the tie rounds up"},
        {0x3f807fffu, 0x3f80, "just below the tie rounds down"},
        {0x7f7f0000u, 0x7f7f, "largest finite bf16"},
        {0x7f7f7fffu, 0x7f7f, "below largest + half ulp stays finite"},
        {0x7f7f8000u, 0x7f80, "largest + half ulp is a tie with 2^128: +inf"},
        {0x7f7fffffu, 0x7f80, "FLT_MAX is above largest bf16 + half ulp: +inf"},
        {0xff7fffffu, 0xff80, "-FLT_MAX -> -inf"},
        {0x00010000u, 0x0001, "smallest bf16 subnormal is kept"},
        {0x00008000u, 0x0000, "half the smallest subnormal is a tie, goes to 0"},
        {0x00008001u, 0x0001, "just above it rounds up"},
        {0x00018000u, 0x0002, "1.5 * smallest subnormal ties to even 2"},
        {0x007f8000u, 0x0080, "subnormal rounding up carries into the smallest normal"},
        {0x80000000u, 0x8000, "-0.0 keeps its sign"},
        {0x7f800000u, 0x7f80, "+inf"},
        {0xff800000u, 0xff80, "-inf"},
        {0x7f800001u, 0x7fc0, "sNaN with low payload -> quiet NaN"},
        {0xffa00000u, 0xffe0, "negative sNaN keeps sign and top payload, quieted"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint16_t got = attnref_f32_to_bf16(from32(c[i].in));
        cr_assert_eq(got, c[i].want, "%s: %08x -> %04x, want %04x", c[i].why, c[i].in, got,
                     c[i].want);
    }
    cr_assert_eq(attnref_f32_to_bf16(FLT_MAX), 0x7f80, "FLT_MAX -> +inf");
}

/* ---- f64 -> f16 / bf16: single rounding ------------------------------------------------ */

Test(dtype, f64_single_rounding_beats_double_rounding)
{
    struct {
        double in;
        int bf16;
        uint16_t want;
        const char *why;
    } c[] = {
        /* 1 + 2^-11 + 2^-40 rounds to the f16 tie 1 + 2^-11 in f32, and the tie then goes to
         * 1.0; rounding once sees it is above the tie. */
        {1.0 + 0x1p-11 + 0x1p-40, 0, 0x3c01, "f16 just above a tie near 1"},
        {-(1.0 + 0x1p-11 + 0x1p-40), 0, 0xbc01, "negative of the same"},
        {0x1p-25 + 0x1p-60, 0, 0x0001, "f16 just above half the smallest subnormal"},
        /* The largest double below 65520 becomes exactly 65520 in f32, which overflows. */
        {0x1.ffdffffffffffp+15, 0, 0x7bff, "just below the f16 overflow threshold"},
        {1.0 + 0x1p-8 + 0x1p-40, 1, 0x3f81, "bf16 just above a tie near 1"},
        {0x1.fefffffffffffp127, 1, 0x7f7f, "just below the bf16 overflow threshold"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint16_t once = c[i].bf16 ? attnref_f64_to_bf16(c[i].in) : attnref_f64_to_f16(c[i].in);
        float via = attnref_f64_to_f32(c[i].in);
        uint16_t twice = c[i].bf16 ? attnref_f32_to_bf16(via) : attnref_f32_to_f16(via);
        cr_assert_eq(once, c[i].want, "%s: %a -> %04x, want %04x", c[i].why, c[i].in, once,
                     c[i].want);
        cr_assert_neq(twice, once, "%s: the example should show double rounding (%04x)", c[i].why,
                      twice);
    }
}

Test(dtype, f64_edges)
{
    cr_assert_eq(attnref_f64_to_f16(65520.0), 0x7c00, "65520 -> +inf");
    cr_assert_eq(attnref_f64_to_f16(-65520.0), 0xfc00, "-65520 -> -inf");
    cr_assert_eq(attnref_f64_to_f16(65504.0), 0x7bff, "65504");
    cr_assert_eq(attnref_f64_to_f16(1e300), 0x7c00, "1e300 -> +inf");
    cr_assert_eq(attnref_f64_to_f16(0x1p-25), 0x0000, "2^-25 ties to 0");
    cr_assert_eq(attnref_f64_to_f16(0x1p-24), 0x0001, "2^-24");
    cr_assert_eq(attnref_f64_to_f16(1.0 + 0x1p-11), 0x3c00, "exact tie goes to even");
    cr_assert_eq(attnref_f64_to_f16(1.0 + 3 * 0x1p-11), 0x3c02, "exact tie goes to even");
    cr_assert_eq(attnref_f64_to_f16(-0.0), 0x8000, "-0.0");
    cr_assert_eq(attnref_f64_to_f16(0x1p-1074), 0x0000, "smallest double subnormal -> +0");
    cr_assert_eq(attnref_f64_to_f16(-0x1p-1074), 0x8000, "negative double subnormal -> -0");
    cr_assert_eq(attnref_f64_to_f16(INFINITY), 0x7c00, "+inf");
    cr_assert_eq(attnref_f64_to_f16(-INFINITY), 0xfc00, "-inf");
    cr_assert_eq(attnref_f64_to_f16(from64(0x7ff8000000000000u)), 0x7e00, "default qNaN");
    cr_assert_eq(attnref_f64_to_f16(from64(0xfff0000000000001u)), 0xfe00,
                 "-sNaN quieted, sign kept");
    cr_assert_eq(attnref_f64_to_f16(from64(0x7ff4040000000000u)), 0x7f01, "top payload bits kept");

    cr_assert_eq(attnref_f64_to_bf16(0x1p-133), 0x0001, "smallest bf16 subnormal");
    cr_assert_eq(attnref_f64_to_bf16(0x1p-134), 0x0000, "half of it ties to 0");
    cr_assert_eq(attnref_f64_to_bf16(0x1p-134 + 0x1p-180), 0x0001, "just above the tie");
    cr_assert_eq(attnref_f64_to_bf16(0x1.ffp127), 0x7f80, "largest + half ulp ties to 2^128: inf");
    cr_assert_eq(attnref_f64_to_bf16(0x1.fefffffffffffp127), 0x7f7f,
                 "just below that stays finite");
    cr_assert_eq(attnref_f64_to_bf16((double)FLT_MAX), 0x7f80, "FLT_MAX -> inf");
    cr_assert_eq(attnref_f64_to_bf16(1e39), 0x7f80, "1e39 (beyond f32) -> inf");
    cr_assert_eq(attnref_f64_to_bf16(-1e300), 0xff80, "-1e300 -> -inf");
    cr_assert_eq(attnref_f64_to_bf16(-0.0), 0x8000, "-0.0");
    cr_assert_eq(attnref_f64_to_bf16(from64(0xfff0000000000001u)), 0xffc0, "-sNaN quieted");
    cr_assert_eq(attnref_f64_to_bf16(from64(0x7ff5000000000000u)), 0x7fe8, "top payload kept");
}

static void check_f64_sample(int to_bf16, uint64_t seed, long count)
{
    init_formats();
    const fmt16 *fmt = to_bf16 ? &BF16 : &F16;
    uint64_t s = seed;
    long near_ties = 0;
    for (long i = 0; i < count; i++) {
        uint64_t r = splitmix64(&s), r2 = splitmix64(&s);
        uint64_t x;
        switch (i & 3) {
        case 0: /* any pattern: mostly overflow/underflow, NaN and inf */ x = r; break;
        case 1: { /* exponent spread over the target's range and a little beyond */
            int lo = to_bf16 ? -140 : -30, span = to_bf16 ? 272 : 48;
            uint64_t e = (uint64_t)(1023 + lo + (int)(r2 % (uint64_t)span));
            x = (r & 0x800fffffffffffffu) | (e << 52);
            break;
        }
        case 2: { /* within a few double ulps of a 16-bit midpoint (where double rounding
                   * through f32 goes wrong), including the overflow threshold */
            int k = (int)(r2 % (uint64_t)fmt->n);
            double up = k + 1 < fmt->n ? fmt->tab[k + 1] : fmt->beyond;
            double m = (fmt->tab[k] + up) / 2;
            int steps = (int)((r >> 8) % 9) - 4;
            for (; steps > 0; steps--)
                m = nextafter(m, INFINITY);
            for (; steps < 0; steps++)
                m = nextafter(m, 0.0);
            x = bits64(m) | (r & 0x8000000000000000u);
            near_ties++;
            break;
        }
        default: { /* an f32 value nudged by a random amount below half an f32 ulp */
            uint32_t e = to_bf16 ? (uint32_t)(r2 % 256) : 100 + (uint32_t)(r2 % 48);
            x = bits64((double)from32(((uint32_t)r & 0x807fffffu) | (e << 23)));
            if ((x & 0x7ff0000000000000u) != 0x7ff0000000000000u)
                x += (r2 >> 40) & 0x0fffffffu;
            break;
        }
        }
        double d = from64(x);
        uint16_t got = to_bf16 ? attnref_f64_to_bf16(d) : attnref_f64_to_f16(d);
        uint16_t want;
        if (isnan(d)) {
            unsigned mb = to_bf16 ? 7 : 10;
            uint16_t inf = to_bf16 ? 0x7f80 : 0x7c00;
            want = (uint16_t)(((x >> 48) & 0x8000) | inf | (1u << (mb - 1)) |
                              ((x & 0x000fffffffffffffu) >> (52 - mb)));
        } else {
            want = oracle_round(fmt, d);
        }
        cr_assert_eq(got, want, "%s(%016llx = %a) = %04x, oracle %04x",
                     to_bf16 ? "f64_to_bf16" : "f64_to_f16", (unsigned long long)x, d, got, want);
    }
    cr_assert(near_ties > 0, "no near-tie samples");
}

Test(dtype, f64_to_f16_random_2m)
{
    check_f64_sample(0, 0xd0b1e0f16u, 2L << 20);
}

Test(dtype, f64_to_bf16_random_2m)
{
    check_f64_sample(1, 0xd0b1ebf16u, 2L << 20);
}

Test(dtype, f64_agrees_with_f32_on_f32_values)
{
    /* A double that is exactly an f32 value must narrow exactly as the f32 routine does. */
    uint64_t s = 42;
    for (long i = 0; i < (1L << 20); i++) {
        uint32_t x = (uint32_t)splitmix64(&s);
        float f = from32(x);
        double d = (double)f;
        cr_assert_eq(attnref_f64_to_f16(d), attnref_f32_to_f16(f), "f16 disagreement at %08x", x);
        cr_assert_eq(attnref_f64_to_bf16(d), attnref_f32_to_bf16(f), "bf16 disagreement at %08x",
                     x);
    }
}

/* ---- independence from the FP environment ---------------------------------------------- */

Test(dtype, conversions_ignore_rounding_mode)
{
    static const int modes[] = {FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        cr_assert_eq(fesetround(modes[m]), 0, "fesetround failed");
        volatile float tie = 1.0f + 0x1p-11f, below = 65519.99f, neg = -(1.0f + 3 * 0x1p-11f);
        volatile double d = 1.0 + 0x1p-11 + 0x1p-40, sub = 0x1.8p-24;
        cr_assert_eq(attnref_f32_to_f16(tie), 0x3c00, "mode %zu: tie", m);
        cr_assert_eq(attnref_f32_to_f16(below), 0x7bff, "mode %zu: 65519.99", m);
        cr_assert_eq(attnref_f32_to_f16(neg), 0xbc02, "mode %zu: negative tie", m);
        cr_assert_eq(attnref_f32_to_bf16(tie), 0x3f80, "mode %zu: bf16", m);
        cr_assert_eq(attnref_f64_to_f16(d), 0x3c01, "mode %zu: f64", m);
        cr_assert_eq(attnref_f64_to_f16(sub), 0x0002, "mode %zu: subnormal tie", m);
        cr_assert_eq(attnref_f64_to_bf16(d), 0x3f80, "mode %zu: f64 -> bf16", m);
    }
    fesetround(FE_TONEAREST);
}

#ifdef HAVE_MXCSR
Test(dtype, conversions_ignore_ftz_daz)
{
    unsigned saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8040u); /* FTZ (bit 15) and DAZ (bit 6), as -ffast-math sets */
    volatile uint16_t h = 0x0001;
    volatile float sub = from32(0x00010000u); /* bf16 0x0001 as an f32 subnormal */
    uint16_t bsub = attnref_f32_to_bf16(sub);
    float w = attnref_bf16_to_f32(h);
    uint32_t wb = bits32(w);
    unsigned char buf[2] = {0x01, 0x00};
    double loaded = attnref_load(buf, ATTNREF_BF16, 0);
    _mm_setcsr(saved);
    cr_assert_eq(bsub, 0x0001, "f32 subnormal narrowed to %04x under DAZ", bsub);
    cr_assert_eq(wb, 0x00010000u, "bf16 subnormal widened to %08x under FTZ", wb);
    cr_assert_eq(loaded, 0x1p-133, "bf16 subnormal loaded as %a under DAZ", loaded);
}
#endif

/* ---- load / store ---------------------------------------------------------------------- */

Test(dtype, load_store_each_dtype)
{
    float f32[3] = {0};
    uint16_t h[3] = {0};
    uint8_t b[4] = {0, 1, 7, 0};

    attnref_store(f32, ATTNREF_F32, 2, 0.1);
    cr_assert_eq(f32[2], 0.1f, "f32 store uses the C conversion");
    cr_assert_eq(attnref_load(f32, ATTNREF_F32, 2), (double)0.1f, "f32 load is exact");
    f32[1] = from32(0x00000001u);
    cr_assert_eq(attnref_load(f32, ATTNREF_F32, 1), 0x1p-149, "f32 subnormal loads exactly");

    attnref_store(h, ATTNREF_F16, 1, 1.0 + 0x1p-11 + 0x1p-40);
    cr_assert_eq(h[1], 0x3c01, "f16 store rounds once from f64, got %04x", h[1]);
    cr_assert_eq(attnref_load(h, ATTNREF_F16, 1), 1.0 + 0x1p-10, "f16 load");
    h[2] = 0x0001;
    cr_assert_eq(attnref_load(h, ATTNREF_F16, 2), 0x1p-24, "f16 subnormal load");
    cr_assert_eq(h[0], 0, "neighbouring element untouched");

    attnref_store(h, ATTNREF_BF16, 0, 1.0 + 0x1p-8 + 0x1p-40);
    cr_assert_eq(h[0], 0x3f81, "bf16 store rounds once from f64, got %04x", h[0]);
    cr_assert_eq(attnref_load(h, ATTNREF_BF16, 0), 1.0 + 0x1p-7, "bf16 load");
    h[0] = 0x8001;
    cr_assert_eq(attnref_load(h, ATTNREF_BF16, 0), -0x1p-133, "bf16 subnormal load");
    h[0] = 0xff80;
    cr_assert_eq(attnref_load(h, ATTNREF_BF16, 0), -INFINITY, "bf16 -inf load");

    cr_assert_eq(attnref_load(b, ATTNREF_BOOL, 0), 0.0, "bool 0");
    cr_assert_eq(attnref_load(b, ATTNREF_BOOL, 1), 1.0, "bool 1");
    cr_assert_eq(attnref_load(b, ATTNREF_BOOL, 2), 1.0, "any nonzero byte is true");
    attnref_store(b, ATTNREF_BOOL, 3, -0.25);
    cr_assert_eq(b[3], 1, "nonzero stores 1");
    attnref_store(b, ATTNREF_BOOL, 3, -0.0);
    cr_assert_eq(b[3], 0, "-0.0 stores 0");

    h[0] = 0x7e00;
    cr_assert(isnan(attnref_load(h, ATTNREF_F16, 0)), "f16 NaN loads as NaN");
}

Test(dtype, finite_min)
{
    cr_assert_eq(attnref_dtype_finite_min(ATTNREF_F32), -(double)FLT_MAX, "f32");
    cr_assert_eq(attnref_dtype_finite_min(ATTNREF_F32), -3.4028234663852886e38, "f32 literal");
    cr_assert_eq(attnref_dtype_finite_min(ATTNREF_F16), -65504.0, "f16");
    cr_assert_eq(attnref_dtype_finite_min(ATTNREF_BF16), -3.3895313892515355e38, "bf16");
    cr_assert_eq(attnref_dtype_finite_min(ATTNREF_BF16), (double)attnref_bf16_to_f32(0xff7f),
                 "bf16 0xff7f");
    cr_assert_eq(attnref_dtype_finite_min(ATTNREF_BOOL), 0.0, "bool");
    cr_assert_eq(attnref_dtype_finite_min((attnref_dtype)0), 0.0, "unknown");
    /* Storing it must give the largest-magnitude finite pattern, never -inf. */
    cr_assert_eq(attnref_f64_to_f16(attnref_dtype_finite_min(ATTNREF_F16)), 0xfbff,
                 "f16 stores finite");
    cr_assert_eq(attnref_f64_to_bf16(attnref_dtype_finite_min(ATTNREF_BF16)), 0xff7f,
                 "bf16 stores finite");
    cr_assert_eq(attnref_f64_to_f32(attnref_dtype_finite_min(ATTNREF_F32)), -FLT_MAX,
                 "f32 stores finite");
}

/* ---- ulp (the unit of the tolerance, SPEC clause 13) ------------------------------------ */

Test(dtype, ulp_exact_values)
{
    struct {
        attnref_dtype dt;
        double x, want;
        const char *why;
    } c[] = {
        {ATTNREF_F16, 1.0, 0x1p-10, "f16 at 1"},
        {ATTNREF_F16, -1.0, 0x1p-10, "f16 at -1: the magnitude counts"},
        {ATTNREF_F16, 0.999, 0x1p-11, "f16 just below 1"},
        {ATTNREF_F16, 0x1.ffcp-1, 0x1p-11, "f16 largest below 1"},
        {ATTNREF_F16, 2.0, 0x1p-9, "f16 at 2"},
        {ATTNREF_F16, 0.0, 0x1p-24, "f16 at 0: the smallest subnormal"},
        {ATTNREF_F16, -0.0, 0x1p-24, "f16 at -0"},
        {ATTNREF_F16, 0x1p-24, 0x1p-24, "f16 smallest subnormal"},
        {ATTNREF_F16, 0x1.ff8p-15, 0x1p-24, "f16 largest subnormal"},
        {ATTNREF_F16, 0x1p-14, 0x1p-24, "f16 smallest normal"},
        {ATTNREF_F16, 0x1p-15 * 3, 0x1p-24, "f16 subnormal range"},
        {ATTNREF_F16, 1e-30, 0x1p-24, "f16 far below the subnormals"},
        {ATTNREF_F16, 65504.0, 32.0, "f16 largest finite"},
        {ATTNREF_F16, 1e6, 0x1p9, "f16 beyond the finite range: the binade continues"},
        {ATTNREF_BF16, 1.0, 0x1p-7, "bf16 at 1"},
        {ATTNREF_BF16, 0.999, 0x1p-8, "bf16 just below 1"},
        {ATTNREF_BF16, 0.0, 0x1p-133, "bf16 at 0: the smallest subnormal"},
        {ATTNREF_BF16, 0x1p-126, 0x1p-133, "bf16 smallest normal"},
        {ATTNREF_BF16, 0x1p-130, 0x1p-133, "bf16 subnormal"},
        {ATTNREF_BF16, 3.3895313892515355e38, 0x1p120, "bf16 largest finite"},
        {ATTNREF_F32, 1.0, 0x1p-23, "f32 at 1"},
        {ATTNREF_F32, 0.999, 0x1p-24, "f32 just below 1"},
        {ATTNREF_F32, 0x1.fffffep-1, 0x1p-24, "f32 largest below 1"},
        {ATTNREF_F32, 0.0, 0x1p-149, "f32 at 0: the smallest subnormal"},
        {ATTNREF_F32, 0x1p-126, 0x1p-149, "f32 FLT_MIN"},
        {ATTNREF_F32, 0x1p-140, 0x1p-149, "f32 subnormal"},
        {ATTNREF_F32, (double)FLT_MAX, 0x1p104, "f32 FLT_MAX"},
        {ATTNREF_F32, 0.1, 0x1p-27, "f32 at 0.1 (in [2^-4, 2^-3))"},
        {ATTNREF_BOOL, 1.0, 0x1p-23, "another dtype counts as f32"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        cr_assert_eq(attnref_dtype_ulp(c[i].x, c[i].dt), c[i].want, "%s: got %a, want %a", c[i].why,
                     attnref_dtype_ulp(c[i].x, c[i].dt), c[i].want);
}

Test(dtype, ulp_nan_and_inf)
{
    static const attnref_dtype dts[3] = {ATTNREF_F32, ATTNREF_F16, ATTNREF_BF16};
    for (int d = 0; d < 3; d++) {
        cr_assert(isnan(attnref_dtype_ulp(NAN, dts[d])), "%s NaN", attnref_dtype_name(dts[d]));
        cr_assert(isnan(attnref_dtype_ulp(-NAN, dts[d])), "%s -NaN", attnref_dtype_name(dts[d]));
        cr_assert_eq(attnref_dtype_ulp(INFINITY, dts[d]), INFINITY, "%s +inf",
                     attnref_dtype_name(dts[d]));
        cr_assert_eq(attnref_dtype_ulp(-INFINITY, dts[d]), INFINITY, "%s -inf gives +inf",
                     attnref_dtype_name(dts[d]));
    }
}

/* Independent oracle: within the finite range the ulp at x is the gap from the representable
 * value at or below |x| to the next one up.  Every f16 and bf16 pattern, at the value itself,
 * its negation and the midpoint to the next value. */
static void check_ulp_gaps_16(attnref_dtype dt, uint16_t max_finite)
{
    for (uint32_t p = 0; p < max_finite; p++) {
        double v =
            dt == ATTNREF_F16 ? attnref_f16_to_f32((uint16_t)p) : attnref_bf16_to_f32((uint16_t)p);
        double n = dt == ATTNREF_F16 ? attnref_f16_to_f32((uint16_t)(p + 1))
                                     : attnref_bf16_to_f32((uint16_t)(p + 1));
        double gap = n - v;
        cr_assert_eq(attnref_dtype_ulp(v, dt), gap, "%s 0x%04x", attnref_dtype_name(dt), p);
        cr_assert_eq(attnref_dtype_ulp(-v, dt), gap, "%s -0x%04x", attnref_dtype_name(dt), p);
        cr_assert_eq(attnref_dtype_ulp(v + gap / 2, dt), gap, "%s mid 0x%04x",
                     attnref_dtype_name(dt), p);
    }
}

Test(dtype, ulp_is_the_gap_every_f16_bf16)
{
    check_ulp_gaps_16(ATTNREF_F16, 0x7bff);
    check_ulp_gaps_16(ATTNREF_BF16, 0x7f7f);
}

Test(dtype, ulp_is_the_gap_f32_random_1m)
{
    uint64_t s = 0x5eed;
    for (int i = 0; i < 1000000; i++) {
        uint32_t b = (uint32_t)splitmix64(&s) & 0x7fffffffu;
        if (b >= 0x7f7fffffu)
            continue; /* FLT_MAX and above: no next finite value */
        float v = from32(b);
        double gap = (double)nextafterf(v, INFINITY) - (double)v;
        cr_assert_eq(attnref_dtype_ulp(v, ATTNREF_F32), gap, "f32 0x%08x", b);
        cr_assert_eq(attnref_dtype_ulp(-(double)v, ATTNREF_F32), gap, "f32 -0x%08x", b);
    }
}

/* ---- names, sizes, promotion ----------------------------------------------------------- */

Test(dtype, names_sizes_parse)
{
    struct {
        attnref_dtype dt;
        const char *name;
        size_t size;
        int is_float;
    } c[] = {
        {ATTNREF_F32, "f32", 4, 1},
        {ATTNREF_F16, "f16", 2, 1},
        {ATTNREF_BF16, "bf16", 2, 1},
        {ATTNREF_BOOL, "bool", 1, 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        cr_assert_str_eq(attnref_dtype_name(c[i].dt), c[i].name, "name of %d", (int)c[i].dt);
        cr_assert_eq(attnref_dtype_size(c[i].dt), c[i].size, "size of %s", c[i].name);
        cr_assert_eq(attnref_dtype_is_float(c[i].dt), c[i].is_float, "is_float(%s)", c[i].name);
        attnref_dtype out = (attnref_dtype)0;
        cr_assert_eq(attnref_dtype_parse(c[i].name, &out), ATTNREF_OK, "parse %s", c[i].name);
        cr_assert_eq(out, c[i].dt, "parse %s round trip", c[i].name);
    }
    cr_assert_eq((int)ATTNREF_F32, 1, "stable ABI value");
    cr_assert_eq((int)ATTNREF_BOOL, 4, "stable ABI value");
    cr_assert_str_eq(attnref_dtype_name((attnref_dtype)0), "?", "unknown name");
    cr_assert_str_eq(attnref_dtype_name((attnref_dtype)99), "?", "unknown name");
    cr_assert_eq(attnref_dtype_size((attnref_dtype)99), 0, "unknown size");
    cr_assert_eq(attnref_dtype_is_float((attnref_dtype)99), 0, "unknown is not float");

    static const char *bad[] = {"F32", "float32", "f64", "", "bf16 ", " f16", "boolean", "f1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        attnref_dtype out = ATTNREF_F16;
        cr_assert_eq(attnref_dtype_parse(bad[i], &out), ATTNREF_EINVAL, "'%s' must be rejected",
                     bad[i]);
        cr_assert_eq(out, ATTNREF_F16, "*out untouched on error for '%s'", bad[i]);
    }
    attnref_dtype out = ATTNREF_F16;
    cr_assert_eq(attnref_dtype_parse(NULL, &out), ATTNREF_EINVAL, "NULL rejected");
    cr_assert_eq(out, ATTNREF_F16, "*out untouched for NULL");
}

Test(dtype, promote_table)
{
    const attnref_dtype F32 = ATTNREF_F32, F16 = ATTNREF_F16, B16 = ATTNREF_BF16;
    struct {
        attnref_dtype a, b, want;
    } c[] = {
        {F32, F32, F32}, {F32, F16, F32}, {F32, B16, F32}, {F16, F32, F32}, {F16, F16, F16},
        {F16, B16, F32}, {B16, F32, F32}, {B16, F16, F32}, {B16, B16, B16},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        attnref_dtype out = ATTNREF_BOOL;
        cr_assert_eq(attnref_promote(c[i].a, c[i].b, &out), ATTNREF_OK, "promote(%s, %s)",
                     attnref_dtype_name(c[i].a), attnref_dtype_name(c[i].b));
        cr_assert_eq(out, c[i].want, "promote(%s, %s) = %s, want %s", attnref_dtype_name(c[i].a),
                     attnref_dtype_name(c[i].b), attnref_dtype_name(out),
                     attnref_dtype_name(c[i].want));
    }
    attnref_dtype out = ATTNREF_F16;
    cr_assert_eq(attnref_promote(ATTNREF_BOOL, ATTNREF_F32, &out), ATTNREF_EINVAL,
                 "bool is not a float");
    cr_assert_eq(attnref_promote(ATTNREF_F32, ATTNREF_BOOL, &out), ATTNREF_EINVAL,
                 "bool is not a float");
    cr_assert_eq(attnref_promote(ATTNREF_F32, (attnref_dtype)9, &out), ATTNREF_EINVAL,
                 "unknown type");
    cr_assert_eq(out, ATTNREF_F16, "*out untouched on error");
}

Test(dtype, mask_dtype_rule)
{
    const attnref_dtype F32 = ATTNREF_F32, F16 = ATTNREF_F16, B16 = ATTNREF_BF16,
                        BOOL = ATTNREF_BOOL;
    struct {
        attnref_dtype mask, q;
        int ok;
        const char *why;
    } c[] = {
        {BOOL, F32, 1, "bool mask always ok"},
        {BOOL, F16, 1, "bool mask always ok"},
        {BOOL, B16, 1, "bool mask always ok"},
        {F32, F32, 1, "same dtype"},
        {F16, F16, 1, "same dtype"},
        {B16, B16, 1, "same dtype"},
        {F16, F32, 1, "f16 mask with f32 q promotes to f32"},
        {B16, F32, 1, "bf16 mask with f32 q promotes to f32"},
        {F32, F16, 0, "f32 mask would upcast an f16 q"},
        {F32, B16, 0, "f32 mask would upcast a bf16 q"},
        {B16, F16, 0, "bf16 mask with f16 q promotes to f32"},
        {F16, B16, 0, "f16 mask with bf16 q promotes to f32"},
        {(attnref_dtype)0, F32, 0, "unknown mask dtype"},
        {F32, BOOL, 0, "q must be a float"},
        {BOOL, (attnref_dtype)7, 0, "q must be a known float"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
        cr_assert_eq(attnref_mask_dtype_ok(c[i].mask, c[i].q), c[i].ok, "%s (mask %s, q %s)",
                     c[i].why, attnref_dtype_name(c[i].mask), attnref_dtype_name(c[i].q));
}

/* ---- status ---------------------------------------------------------------------------- */

Test(status, names_and_text)
{
    struct {
        int st;
        const char *name;
    } c[] = {
        {ATTNREF_OK, "ok"},
        {ATTNREF_EINVAL, "einval"},
        {ATTNREF_EDTYPE, "edtype"},
        {ATTNREF_ENOMEM, "enomem"},
        {ATTNREF_ERANGE, "erange"},
        {-99, "unknown"},
        {1, "unknown"},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        cr_assert_str_eq(attnref_status_name(c[i].st), c[i].name, "name of %d", c[i].st);
        cr_assert(attnref_strerror(c[i].st) != NULL && attnref_strerror(c[i].st)[0] != '\0',
                  "strerror(%d) empty", c[i].st);
    }
    cr_assert_str_eq(attnref_strerror(ATTNREF_EINVAL), "invalid argument", "EINVAL text");
    cr_assert_str_eq(attnref_strerror(12345), "unknown status", "unknown text");
    cr_assert_str_neq(attnref_strerror(ATTNREF_EDTYPE), attnref_strerror(ATTNREF_ERANGE),
                      "distinct");
}
