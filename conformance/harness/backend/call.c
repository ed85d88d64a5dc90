/* call.c — the one way into a loaded backend's members (call.h). */
#include "backend/call.h"

#include "common/clock.h"

const char *hb_last_error(const hb_backend *b)
{
    const char *e = HB_HAS(b->be, last_error) ? b->be->last_error(b->ctx) : NULL;
    return e ? e : "";
}

int hb_sdpa(const hb_backend *b, const attnconf_sdpa_args *a, double *seconds)
{
    if (!HB_HAS(b->be, sdpa))
        return ATTNCONF_ENOTSUP;
    double t0 = mono_now();
    int rc = b->be->sdpa(b->ctx, a);
    if (seconds)
        *seconds = mono_now() - t0;
    return rc;
}

int hb_build_mask(const hb_backend *b, const attnconf_mask_args *a, double *seconds)
{
    if (!HB_HAS(b->be, build_mask))
        return ATTNCONF_ENOTSUP;
    double t0 = mono_now();
    int rc = b->be->build_mask(b->ctx, a);
    if (seconds)
        *seconds = mono_now() - t0;
    return rc;
}

int hb_cache_create(const hb_backend *b, const attnconf_cache_config *cfg, void **cache)
{
    return HB_HAS(b->be, cache_create) ? b->be->cache_create(b->ctx, cfg, cache) : ATTNCONF_ENOTSUP;
}

int hb_cache_update(const hb_backend *b, void *cache, const attnconf_tensor *k,
                    const attnconf_tensor *v)
{
    return HB_HAS(b->be, cache_update) ? b->be->cache_update(b->ctx, cache, k, v)
                                       : ATTNCONF_ENOTSUP;
}

int hb_cache_trim(const hb_backend *b, void *cache, int64_t n, int64_t *trimmed)
{
    return HB_HAS(b->be, cache_trim) ? b->be->cache_trim(b->ctx, cache, n, trimmed)
                                     : ATTNCONF_ENOTSUP;
}

int hb_cache_make_mask(const hb_backend *b, void *cache, const attnconf_cache_mask_args *a)
{
    return HB_HAS(b->be, cache_make_mask) ? b->be->cache_make_mask(b->ctx, cache, a)
                                          : ATTNCONF_ENOTSUP;
}

int hb_cache_state(const hb_backend *b, void *cache, attnconf_cache_state *st)
{
    return HB_HAS(b->be, cache_state) ? b->be->cache_state(b->ctx, cache, st) : ATTNCONF_ENOTSUP;
}

void hb_cache_destroy(const hb_backend *b, void *cache)
{
    if (cache && HB_HAS(b->be, cache_destroy))
        b->be->cache_destroy(b->ctx, cache);
}

int hb_cache_filter(const hb_backend *b, void *cache, const int64_t *rows, int64_t n)
{
    return HB_HAS(b->be, cache_filter) ? b->be->cache_filter(b->ctx, cache, rows, n)
                                       : ATTNCONF_ENOTSUP;
}

int hb_cache_extend(const hb_backend *b, void *cache, const void *other)
{
    return HB_HAS(b->be, cache_extend) ? b->be->cache_extend(b->ctx, cache, other)
                                       : ATTNCONF_ENOTSUP;
}

int hb_cache_merge(const hb_backend *b, void *const *caches, int64_t n, void **out)
{
    return HB_HAS(b->be, cache_merge) ? b->be->cache_merge(b->ctx, caches, n, out)
                                      : ATTNCONF_ENOTSUP;
}

int hb_cache_prepare(const hb_backend *b, void *cache, const attnconf_cache_prepare_args *a)
{
    return HB_HAS(b->be, cache_prepare) ? b->be->cache_prepare(b->ctx, cache, a) : ATTNCONF_ENOTSUP;
}

int hb_cache_finalize(const hb_backend *b, void *cache)
{
    return HB_HAS(b->be, cache_finalize) ? b->be->cache_finalize(b->ctx, cache) : ATTNCONF_ENOTSUP;
}

int hb_paged_append(const hb_backend *b, const attnconf_paged_append_args *a)
{
    return HB_HAS(b->be, paged_append) ? b->be->paged_append(b->ctx, a) : ATTNCONF_ENOTSUP;
}

int hb_paged_sdpa(const hb_backend *b, const attnconf_paged_args *a, double *seconds)
{
    if (!HB_HAS(b->be, paged_sdpa))
        return ATTNCONF_ENOTSUP;
    double t0 = mono_now();
    int rc = b->be->paged_sdpa(b->ctx, a);
    if (seconds)
        *seconds = mono_now() - t0;
    return rc;
}
