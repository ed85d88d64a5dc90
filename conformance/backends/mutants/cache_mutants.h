/* cache_mutants.h — test-only KV cache mutants: the reference plugin with one cache bug.
 *
 * reference_backend.c + reference_cache.c compiled with -DATTNCONF_CACHE_MUTANT=<number> (an
 * RCM_* constant) and linked with cache_mutants.c; reference_cache.c then routes create /
 * update / trim / make_mask through the rcm_* hooks below, which wrap the correct attnref calls
 * with the one bug.  Each exists to prove that a cache family catches a bug real caches have had
 * (SPEC clause in brackets); conformance/tests/CMakeLists.txt holds one "caught" test each.
 */
#ifndef ATTNCONF_CACHE_MUTANTS_H
#define ATTNCONF_CACHE_MUTANTS_H

#include "attnref/cache.h"

#define RCM_ROTATING_W1 1   /* a rotating cache retains max_size + 1 tokens [15] */
#define RCM_TRIM_NEGATIVE 2 /* trim(n < 0) accepted, growing the offset (mlx-lm 0.32) [14] */
#define RCM_LEFTPAD_DECODE                                                                         \
    3 /* a batched cache's decode mask (N = 1) ignores left padding
                                   [18] */
#define RCM_BATCH_WRITE_POS                                                                        \
    4 /* a batched cache writes at the largest row offset instead of
                                   the stored length [18] */
#define RCM_QUANT_HALF_AWAY                                                                        \
    5 /* quantization codes rounded half away from zero instead of
                                   half to even [17] */

#if !defined(ATTNCONF_CACHE_MUTANT)
#error "cache_mutants.h is only for cache mutant builds: define ATTNCONF_CACHE_MUTANT"
#elif ATTNCONF_CACHE_MUTANT == RCM_ROTATING_W1
#define RCM_NAME "mutant_cache_rotating_w1"
#define RCM_BREAKS "15"
#elif ATTNCONF_CACHE_MUTANT == RCM_TRIM_NEGATIVE
#define RCM_NAME "mutant_cache_trim_negative"
#define RCM_BREAKS "14"
#elif ATTNCONF_CACHE_MUTANT == RCM_LEFTPAD_DECODE
#define RCM_NAME "mutant_cache_leftpad_decode"
#define RCM_BREAKS "18"
#elif ATTNCONF_CACHE_MUTANT == RCM_BATCH_WRITE_POS
#define RCM_NAME "mutant_cache_batch_write_pos"
#define RCM_BREAKS "18"
#elif ATTNCONF_CACHE_MUTANT == RCM_QUANT_HALF_AWAY
#define RCM_NAME "mutant_cache_quant_half_away"
#define RCM_BREAKS "17"
#else
#error "unknown ATTNCONF_CACHE_MUTANT"
#endif

/* The hooks (each the correct call unless it is this mutant's bug). */
void rcm_adjust_params(attnref_cache_params *p);
int rcm_update(attnref_cache *c, const attnref_tensor *k, const attnref_tensor *v, attnref_diag *d);
int rcm_trim(attnref_cache *c, int64_t n, int64_t *trimmed, attnref_diag *d);
void rcm_after_mask(const attnref_cache *c, int64_t n, int64_t window, attnref_tensor *keep);

#endif
