/* inexpressible.c — TEST-ONLY backends that answer ATTNCONF_EINEXPRESSIBLE (backend.h), to
 * prove the harness grants UNEXPRESSIBLE only where a case (or cache step) must be rejected.
 * Each is the reference backend, except, by INEXPRESSIBLE_MODE:
 *   1 rejections  every call the reference rejects (EINVAL, EDTYPE) answers -6 instead: each
 *                 must-reject sdpa, mask and cache case is UNEXPRESSIBLE, the rest PASS
 *   2 updates     every cache_update answers -6 without looking: a cache case whose update must
 *                 succeed FAILs saying so (sdpa and masks are the reference's)
 * The reference's entry point is renamed so this file's is the one exported.
 */
#include <string.h>

#define attnconf_backend_entry ix_reference_entry
#include "../../backends/reference/reference_backend.c"
#undef attnconf_backend_entry

#ifndef INEXPRESSIBLE_MODE
#define INEXPRESSIBLE_MODE 1
#endif

/* The reference's table, whose members the wrappers call. */
static const attnconf_backend *ix_ref;

/* Mode 1: a rejection becomes -6. */
static int ix_lie(int rc)
{
    return rc == ATTNCONF_EINVAL || rc == ATTNCONF_EDTYPE ? ATTNCONF_EINEXPRESSIBLE : rc;
}

static int ix_sdpa(void *ctx, const attnconf_sdpa_args *a)
{
    return ix_lie(ix_ref->sdpa(ctx, a));
}

static int ix_build_mask(void *ctx, const attnconf_mask_args *a)
{
    return ix_lie(ix_ref->build_mask(ctx, a));
}

static int ix_cache_create(void *ctx, const attnconf_cache_config *cfg, void **cache)
{
    return ix_lie(ix_ref->cache_create(ctx, cfg, cache));
}

static int ix_cache_update(void *ctx, void *cache, const attnconf_tensor *k,
                           const attnconf_tensor *v)
{
    if (INEXPRESSIBLE_MODE == 2)
        return ATTNCONF_EINEXPRESSIBLE;
    return ix_lie(ix_ref->cache_update(ctx, cache, k, v));
}

static int ix_cache_trim(void *ctx, void *cache, int64_t n, int64_t *trimmed)
{
    return ix_lie(ix_ref->cache_trim(ctx, cache, n, trimmed));
}

static attnconf_backend ix_table;

__attribute__((visibility("default"))) const attnconf_backend *
attnconf_backend_entry(uint32_t host_abi_version)
{
    if (host_abi_version != ATTNCONF_ABI_VERSION)
        return NULL;
    ix_ref = ix_reference_entry(host_abi_version);
    ix_table = *ix_ref;
    ix_table.name = INEXPRESSIBLE_MODE == 1 ? "inexpressible_rejections" : "inexpressible_updates";
    ix_table.sdpa = ix_sdpa;
    ix_table.build_mask = ix_build_mask;
    ix_table.cache_create = ix_cache_create;
    ix_table.cache_update = ix_cache_update;
    ix_table.cache_trim = ix_cache_trim;
    return &ix_table;
}
