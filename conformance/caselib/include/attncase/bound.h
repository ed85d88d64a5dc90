/* attncase/bound.h — the SDPA forward error bound of SPEC.md clause 13, element by element.
 *
 * acase_sdpa_bound (attncase/case.h) is what casegen writes into a case: ulps and one row_atol per
 * output row.  This header exposes the parts it is built from, so that casegen's statistics, the
 * tests and `attnconf fuzz` see the same numbers, and the one statement of which keys an sdpa
 * row keeps (the reference's parameter rule plus the case's mask tensor).
 */
#ifndef ATTNCASE_BOUND_H
#define ATTNCASE_BOUND_H

#include <stdint.h>

#include "attncase/case.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The constants of the model (SPEC.md clause 13, "Model").  ACASE_BOUND_SAFETY multiplies every
 * term but the output rounding; ACASE_BOUND_ULPS is the output rounding in units of the output
 * dtype's ulp at the expected value (round to nearest: half an ulp). */
#ifndef ACASE_BOUND_SAFETY /* overridden only by a test-only build (tools/CMakeLists.txt) */
#define ACASE_BOUND_SAFETY 2.0
#endif
#define ACASE_BOUND_ULPS 0.5
#define ACASE_BOUND_EXP_ULPS 4.0 /* relative error of exp/exp2 in f32, in units of 2^-24 */
/* The terms of clauses 20-22 as an f32 kernel computes them: tanhf of the softcap (and the
 * division by c and product by c around it), and an ALiBi slope from powf / exp2f of the
 * f32 max_bias, times the distance; in units of 2^-24 of the result. */
#define ACASE_BOUND_TANH_ULPS 6.0
#define ACASE_BOUND_ALIBI_ULPS 8.0

/* Which keys output row (b, h, i) of an op: sdpa case keeps: acase_sdpa_keeps
 * (attncase/sdpa_rows.h: the parameters AND the mask tensor) for every key.  kept[Lk] gets 0/1
 * and add[Lk] (may be NULL) the additive mask value of each kept key (0 without an additive
 * mask).  Returns the number of kept keys. */
int64_t acase_sdpa_row_keys(const acase *c, int64_t b, int64_t h, int64_t i, uint8_t *kept,
                            double *add);

/* The per-element bound of clause 13 before it is compacted into rows: rest[n] (numel entries,
 * flat row-major over (B, Hq, Lq, Dv)) receives SAFETY * (softmax + probability rounding + f32
 * arithmetic terms) for every element of a CLOSE row (0 in EXACT / FINITE rows and where the
 * expected value is not finite).  The output rounding is not included (it is the ulps term).
 * Returns 0, or -1 with err set (not an sdpa case with an output, out of memory). */
int acase_sdpa_bound_elems(const acase *c, double *rest, char *err, size_t errlen);

/* The smallest decimal with 3 significant digits that is >= x (x finite, >= 0), as the double
 * strtod reads it: what a stored bound is rounded to, so it is never below the computed one. */
double acase_round_up_3(double x);

#ifdef __cplusplus
}
#endif
#endif
