/* attnref/dtype.h — element types, exact f16/bf16 conversions, and the mask promotion rule.
 *
 * f16 (IEEE 754 binary16) and bf16 (bfloat16: the top 16 bits of a binary32) are stored as
 * uint16_t bit patterns.  All conversions here are integer-only: they do not depend on the FPU
 * rounding mode, on FTZ/DAZ, or on compiler support for _Float16 / __bf16.
 *
 * Rounding: every narrowing conversion rounds to nearest, ties to even (RNE), produces
 * subnormals (no flush to zero), overflows to +-inf exactly where IEEE 754 says (for f16 from
 * f32: |x| >= 65520), keeps the sign of zero, and maps NaN to a quiet NaN of the same sign that
 * keeps the top payload bits (the behaviour of x86 F16C VCVTPS2PH).  Widening conversions are
 * exact; a signalling f16 NaN widens to the quiet NaN with the same payload (as F16C).
 */
#ifndef ATTNREF_DTYPE_H
#define ATTNREF_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types.  BOOL is one byte per element, 0 = false, any other value = true (writers
 * write 1).  Values are stable: they appear in files and in the plugin ABI. */
typedef enum attnref_dtype {
    ATTNREF_F32 = 1,
    ATTNREF_F16 = 2,
    ATTNREF_BF16 = 3,
    ATTNREF_BOOL = 4
} attnref_dtype;

/* Bytes per element: 4, 2, 2, 1; 0 for an unknown value. */
size_t attnref_dtype_size(attnref_dtype dt);

/* Canonical short name: "f32", "f16", "bf16", "bool"; "?" for an unknown value. */
const char *attnref_dtype_name(attnref_dtype dt);

/* Parse a canonical short name.  Returns ATTNREF_OK, or ATTNREF_EINVAL for any other string
 * (including NULL); *out is untouched on error. */
int attnref_dtype_parse(const char *name, attnref_dtype *out);

/* 1 for F32, F16, BF16; 0 otherwise. */
int attnref_dtype_is_float(attnref_dtype dt);

/* Conversions (see the rounding contract above). */
float attnref_f16_to_f32(uint16_t h);
float attnref_bf16_to_f32(uint16_t h);
uint16_t attnref_f32_to_f16(float f);
uint16_t attnref_f32_to_bf16(float f);
/* Single rounding from binary64 (no double rounding through f32). */
uint16_t attnref_f64_to_f16(double d);
uint16_t attnref_f64_to_bf16(double d);
float attnref_f64_to_f32(double d); /* the C conversion: RNE under the default rounding mode
                                       (unlike the f16/bf16 routines, it follows fesetround) */

/* Largest-magnitude finite negative value of a float dtype, as a double:
 * f32 -3.4028234663852886e38, f16 -65504, bf16 -3.3895313892515355e38.  This is the value an
 * additive mask uses for "masked" (never a constant such as -1e9, which is -inf in f16).
 * Returns 0.0 for BOOL or an unknown value. */
double attnref_dtype_finite_min(attnref_dtype dt);

/* One unit in the last place of `dt` at x: for |x| in [2^e, 2^(e+1)) within the normal range,
 * 2^(e - p + 1) with p = 24 (f32), 11 (f16), 8 (bf16); the smallest subnormal for |x| below
 * the normal range (x = 0 included); NaN for NaN, +inf for an infinity.  Any other dtype is
 * treated as f32.  Used by the tolerance rule (SPEC.md clause 13). */
double attnref_dtype_ulp(double x, attnref_dtype dt);

/* Read element `index` (in elements from `data`, strides already applied) as a double: exact
 * for every dtype; BOOL gives 0.0 or 1.0. */
double attnref_load(const void *data, attnref_dtype dt, int64_t index);

/* Store v into element `index`, rounding once (RNE) to dt; BOOL stores v != 0. */
void attnref_store(void *data, attnref_dtype dt, int64_t index, double v);

/* Type promotion of two float dtypes, as JAX/MLX define it for this set: equal types promote to
 * themselves, any pair containing f32 promotes to f32, and f16 with bf16 promotes to f32.
 * Returns ATTNREF_OK with *out set, or ATTNREF_EINVAL if either type is not a float. */
int attnref_promote(attnref_dtype a, attnref_dtype b, attnref_dtype *out);

/* The additive-mask dtype rule (mlx/fast.cpp scaled_dot_product_attention, MLX >= v0.22.0; the
 * seed discussion): a BOOL mask is always accepted; a float mask is accepted iff
 * promote(mask_dt, q_dt) == q_dt, so the computation is never upcast.  Returns 1 if accepted,
 * 0 if not.  A non-float q_dt is never a valid attention dtype, so it gives 0 even with a BOOL
 * mask. */
int attnref_mask_dtype_ok(attnref_dtype mask_dt, attnref_dtype q_dt);

#ifdef __cplusplus
}
#endif
#endif
