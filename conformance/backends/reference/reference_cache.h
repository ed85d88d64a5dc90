/* reference_cache.h — the KV cache members of the reference plugin (ABI v1, fourth revision):
 * thin adapters from attnconf_cache_* to attnref/cache.h, compiled into reference_backend.c's
 * table and into the `cpu` plugin's (conformance/backends/cpu/).  A cache handle is the
 * attnref_cache itself.  Pad slots of the state are the quiet NaN attnref_cache_kv writes
 * (poison: a backend that attends to them fails).
 *
 * TEST-ONLY: compiled with -DATTNCONF_CACHE_MUTANT=<n> (RCM_* in mutants/cache_mutants.h) and
 * linked with cache_mutants.c, one member carries one deliberate cache bug. */
#ifndef ATTNCONF_REFERENCE_CACHE_H
#define ATTNCONF_REFERENCE_CACHE_H

#include "attnconf/backend.h"
#include "attnref/tensor.h"
#include "rb_common.h"

/* The context (rb_ctx: the first member of any plugin context using these members) and the
 * adapters rb_fail, rb_map_status and rb_to_ref come from rb_common.h (rb_common.c is linked with
 * this file). */

/* Every cache capability the reference serves. */
#define RC_CAPS                                                                                    \
    (ATTNCONF_CAP_CACHE_STD | ATTNCONF_CAP_CACHE_ROTATING | ATTNCONF_CAP_CACHE_CHUNKED |           \
     ATTNCONF_CAP_CACHE_QUANTIZED | ATTNCONF_CAP_CACHE_BATCH | ATTNCONF_CAP_CACHE_BATCH_ROTATING)

int rc_create(void *ctx, const attnconf_cache_config *cfg, void **cache);
int rc_update(void *ctx, void *cache, const attnconf_tensor *k, const attnconf_tensor *v);
int rc_trim(void *ctx, void *cache, int64_t n, int64_t *trimmed);
int rc_make_mask(void *ctx, void *cache, const attnconf_cache_mask_args *args);
int rc_state(void *ctx, void *cache, attnconf_cache_state *st);
void rc_destroy(void *ctx, void *cache);
int rc_filter(void *ctx, void *cache, const int64_t *rows, int64_t n);
int rc_extend(void *ctx, void *cache, const void *other);
int rc_merge(void *ctx, void *const *caches, int64_t n, void **out);
int rc_prepare(void *ctx, void *cache, const attnconf_cache_prepare_args *args);
int rc_finalize(void *ctx, void *cache);

/* The members in attnconf_backend's order, for the table initialiser. */
#define RC_TABLE_MEMBERS                                                                           \
    .cache_create = rc_create, .cache_update = rc_update, .cache_trim = rc_trim,                   \
    .cache_make_mask = rc_make_mask, .cache_state = rc_state, .cache_destroy = rc_destroy,         \
    .cache_filter = rc_filter, .cache_extend = rc_extend, .cache_merge = rc_merge,                 \
    .cache_prepare = rc_prepare, .cache_finalize = rc_finalize

#endif
