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

/* Boundary values of the batch operations (issue 20, cases/EDGES.md): */
#define RCM_FILTER_KEEPS_PAD 6 /* filter keeps the leading padding every kept row shares [18] */
#define RCM_MERGE_RIGHT_PAD 7  /* merge pads the shorter caches on the right [18] */
#define RCM_EXTEND_PAD_SELF                                                                        \
    8 /* extend left-pads only the other cache: when the other is longer, the cache's own rows
         are padded on the right [18] */
#define RCM_PREPARE_ZERO_FULL                                                                      \
    9 /* prepare takes a length of 0 for "no right padding" (a falsy length) [18] */
#define RCM_QUANT_G128_SPLIT                                                                       \
    10 /* a 128-wide quantization group quantized as two groups of 64 [17] */

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
#elif ATTNCONF_CACHE_MUTANT == RCM_FILTER_KEEPS_PAD
#define RCM_NAME "mutant_cache_filter_keeps_pad"
#define RCM_BREAKS "18"
#elif ATTNCONF_CACHE_MUTANT == RCM_MERGE_RIGHT_PAD
#define RCM_NAME "mutant_cache_merge_right_pad"
#define RCM_BREAKS "18"
#elif ATTNCONF_CACHE_MUTANT == RCM_EXTEND_PAD_SELF
#define RCM_NAME "mutant_cache_extend_pad_self"
#define RCM_BREAKS "18"
#elif ATTNCONF_CACHE_MUTANT == RCM_PREPARE_ZERO_FULL
#define RCM_NAME "mutant_cache_prepare_zero_full"
#define RCM_BREAKS "18"
#elif ATTNCONF_CACHE_MUTANT == RCM_QUANT_G128_SPLIT
#define RCM_NAME "mutant_cache_quant_g128_split"
#define RCM_BREAKS "17"
#else
#error "unknown ATTNCONF_CACHE_MUTANT"
#endif

/* The hooks (each the correct call unless it is this mutant's bug). */
void rcm_adjust_params(attnref_cache_params *p);
int rcm_update(attnref_cache *c, const attnref_tensor *k, const attnref_tensor *v, attnref_diag *d);
int rcm_trim(attnref_cache *c, int64_t n, int64_t *trimmed, attnref_diag *d);
void rcm_after_mask(const attnref_cache *c, int64_t n, int64_t window, attnref_tensor *keep);
int rcm_filter(attnref_cache *c, const int64_t *rows, int64_t n, attnref_diag *d);
int rcm_extend(attnref_cache *c, const attnref_cache *other, attnref_diag *d);
int rcm_merge(const attnref_cache *const *caches, int64_t n, attnref_cache **out, attnref_diag *d);
int rcm_prepare(attnref_cache *c, const int64_t *left_padding, const int64_t *lengths,
                attnref_diag *d);

#endif
