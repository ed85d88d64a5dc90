/* generate.c — the seeded input generator of case format v1 (cases/FORMAT.md, "Generated
 * inputs").  Bit-exact by construction: integer PRNG, one binary64 multiply and one add (the
 * build uses -ffp-contract=off, so no FMA), then the integer-only attnref conversions. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attncase/case.h"
#include "util.h"

uint64_t acase_splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int acase_tensor_generate(acase_tensor *t, char *err, size_t errlen)
{
    if (!t) {
        acase__errf(err, errlen, "NULL tensor");
        return -1;
    }
    if (t->dtype != ATTNREF_F32 && t->dtype != ATTNREF_F16 && t->dtype != ATTNREF_BF16) {
        acase__errf(err, errlen, "generate: only f32, f16 and bf16 tensors can be generated");
        return -1;
    }
    if (!isfinite(t->lo) || !isfinite(t->hi) || !(t->lo <= t->hi) || !isfinite(t->hi - t->lo)) {
        acase__errf(err, errlen, "generate: need finite lo <= hi with a finite hi - lo");
        return -1;
    }
    if (acase_tensor_alloc(t, err, errlen) != 0)
        return -1;
    t->source = ACASE_SRC_UNIFORM;
    uint64_t state = t->seed;
    /* volatile keeps each binary64 operation a separately rounded step even if a later build
     * forgets -ffp-contract=off. */
    volatile double range = t->hi - t->lo;
    for (int64_t i = 0; i < t->numel; i++) {
        uint64_t u = acase_splitmix64_next(&state);
        double unit = (double)(u >> 11) * 0x1p-53; /* exact: a 53-bit integer times 2^-53 */
        volatile double scaled = range * unit;
        volatile double x = t->lo + scaled;
        float f = attnref_f64_to_f32(x);
        switch (t->dtype) {
        case ATTNREF_F32: ((float *)t->data)[i] = f; break;
        case ATTNREF_F16: ((uint16_t *)t->data)[i] = attnref_f32_to_f16(f); break;
        default: ((uint16_t *)t->data)[i] = attnref_f32_to_bf16(f); break;
        }
    }
    return 0;
}
