/* reference_cache.h — the KV cache members of the reference plugin (ABI v1, fourth revision):
 * thin adapters from attnconf_cache_* to attnref/cache.h, compiled into reference_backend.c's
 * table.  A cache handle is the attnref_cache itself.  Pad slots of the state are the quiet NaN
 * attnref_cache_kv writes (poison: a backend that attends to them fails).
 *
 * TEST-ONLY: compiled with -DATTNCONF_CACHE_MUTANT=<n> (RCM_* in mutants/cache_mutants.h) and
 * linked with cache_mutants.c, one member carries one deliberate cache bug. */
#ifndef ATTNCONF_REFERENCE_CACHE_H
#define ATTNCONF_REFERENCE_CACHE_H

#include "attnconf/backend.h"
#include "attnref/tensor.h"

/* Per-context state shared with reference_backend.c: the text of the last error. */
typedef struct rb_ctx {
    char err[256];
} rb_ctx;

/* reference_backend.c's adapters, shared with the cache members (hidden like every symbol but
 * the entry point).  rb_fail: record a message on ctx and return code.  rb_map_status: the
 * ATTNCONF code for an attnref status (ERANGE is EINVAL).  rb_to_ref: field copy of a host
 * descriptor into an attnref one. */
int rb_fail(rb_ctx *ctx, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int rb_map_status(int st);
void rb_to_ref(const attnconf_tensor *in, attnref_tensor *out);

/* Every cache capability the reference serves. */
#define RC_CAPS                                                                                 \
    (ATTNCONF_CAP_CACHE_STD | ATTNCONF_CAP_CACHE_ROTATING | ATTNCONF_CAP_CACHE_CHUNKED |       \
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
#define RC_TABLE_MEMBERS                                                                       \
    .cache_create = rc_create, .cache_update = rc_update, .cache_trim = rc_trim,               \
    .cache_make_mask = rc_make_mask, .cache_state = rc_state, .cache_destroy = rc_destroy,     \
    .cache_filter = rc_filter, .cache_extend = rc_extend, .cache_merge = rc_merge,             \
    .cache_prepare = rc_prepare, .cache_finalize = rc_finalize

#endif
