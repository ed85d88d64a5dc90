/* call.c — the one way into a loaded backend's members (call.h). */
#include "backend/call.h"

#include "common/clock.h"

#include <string.h>

/* Member m of b's table called with the arguments after it, marked while it runs (plugin.h
 * hb_call_enter); the member's code. */
#define HB_MARKED(b, m, ...) (hb_call_enter(#m), hb_call_done((b)->be->m(__VA_ARGS__)))

static int hb_call_done(int rc)
{
    hb_call_leave();
    return rc;
}

/* ---- the members ------------------------------------------------------------------------- */

const char *hb_last_error(const hb_backend *b)
{
    const char *e = NULL;
    if (HB_HAS(b->be, last_error)) {
        hb_call_enter("last_error");
        e = b->be->last_error(b->ctx);
        hb_call_leave();
    }
    return e ? e : "";
}

int hb_sdpa(const hb_backend *b, const attnconf_sdpa_args *a, double *seconds)
{
    if (!HB_HAS(b->be, sdpa))
        return ATTNCONF_ENOTSUP;
    hb_call_enter("sdpa");
    double t0 = mono_now();
    int rc = b->be->sdpa(b->ctx, a);
    double t1 = mono_now();
    hb_call_leave();
    if (seconds)
        *seconds = t1 - t0;
    return rc;
}

int hb_build_mask(const hb_backend *b, const attnconf_mask_args *a, double *seconds)
{
    if (!HB_HAS(b->be, build_mask))
        return ATTNCONF_ENOTSUP;
    hb_call_enter("build_mask");
    double t0 = mono_now();
    int rc = b->be->build_mask(b->ctx, a);
    double t1 = mono_now();
    hb_call_leave();
    if (seconds)
        *seconds = t1 - t0;
    return rc;
}

int hb_cache_create(const hb_backend *b, const attnconf_cache_config *cfg, void **cache)
{
    return HB_HAS(b->be, cache_create) ? HB_MARKED(b, cache_create, b->ctx, cfg, cache)
                                       : ATTNCONF_ENOTSUP;
}

int hb_cache_update(const hb_backend *b, void *cache, const attnconf_tensor *k,
                    const attnconf_tensor *v)
{
    return HB_HAS(b->be, cache_update) ? HB_MARKED(b, cache_update, b->ctx, cache, k, v)
                                       : ATTNCONF_ENOTSUP;
}

int hb_cache_trim(const hb_backend *b, void *cache, int64_t n, int64_t *trimmed)
{
    return HB_HAS(b->be, cache_trim) ? HB_MARKED(b, cache_trim, b->ctx, cache, n, trimmed)
                                     : ATTNCONF_ENOTSUP;
}

int hb_cache_make_mask(const hb_backend *b, void *cache, const attnconf_cache_mask_args *a)
{
    return HB_HAS(b->be, cache_make_mask) ? HB_MARKED(b, cache_make_mask, b->ctx, cache, a)
                                          : ATTNCONF_ENOTSUP;
}

int hb_cache_state(const hb_backend *b, void *cache, attnconf_cache_state *st)
{
    return HB_HAS(b->be, cache_state) ? HB_MARKED(b, cache_state, b->ctx, cache, st)
                                      : ATTNCONF_ENOTSUP;
}

void hb_cache_destroy(const hb_backend *b, void *cache)
{
    if (cache && HB_HAS(b->be, cache_destroy)) {
        hb_call_enter("cache_destroy");
        b->be->cache_destroy(b->ctx, cache);
        hb_call_leave();
    }
}

int hb_cache_filter(const hb_backend *b, void *cache, const int64_t *rows, int64_t n)
{
    return HB_HAS(b->be, cache_filter) ? HB_MARKED(b, cache_filter, b->ctx, cache, rows, n)
                                       : ATTNCONF_ENOTSUP;
}

int hb_cache_extend(const hb_backend *b, void *cache, const void *other)
{
    return HB_HAS(b->be, cache_extend) ? HB_MARKED(b, cache_extend, b->ctx, cache, other)
                                       : ATTNCONF_ENOTSUP;
}

int hb_cache_merge(const hb_backend *b, void *const *caches, int64_t n, void **out)
{
    return HB_HAS(b->be, cache_merge) ? HB_MARKED(b, cache_merge, b->ctx, caches, n, out)
                                      : ATTNCONF_ENOTSUP;
}

int hb_cache_prepare(const hb_backend *b, void *cache, const attnconf_cache_prepare_args *a)
{
    return HB_HAS(b->be, cache_prepare) ? HB_MARKED(b, cache_prepare, b->ctx, cache, a)
                                        : ATTNCONF_ENOTSUP;
}

int hb_cache_finalize(const hb_backend *b, void *cache)
{
    return HB_HAS(b->be, cache_finalize) ? HB_MARKED(b, cache_finalize, b->ctx, cache)
                                         : ATTNCONF_ENOTSUP;
}

/* ---- device memory (seventh revision) ---- */

int hb_is_device(const hb_backend *b)
{
    const attnconf_backend *be = b->be;
    return (b->caps & ATTNCONF_CAP_DEVICE) && HB_HAS(be, device_info) && HB_HAS(be, device_alloc) &&
           HB_HAS(be, device_free) && HB_HAS(be, copy_to_device) && HB_HAS(be, copy_from_device) &&
           HB_HAS(be, synchronize);
}

int hb_device_info(const hb_backend *b, attnconf_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    if (!hb_is_device(b))
        return ATTNCONF_ENOTSUP;
    int rc = HB_MARKED(b, device_info, b->ctx, info);
    info->name[sizeof info->name - 1] = '\0'; /* a backend that forgot the terminator */
    return rc;
}

int hb_device_alloc(const hb_backend *b, size_t bytes, void **handle)
{
    *handle = NULL;
    return hb_is_device(b) ? HB_MARKED(b, device_alloc, b->ctx, bytes ? bytes : 1, handle)
                           : ATTNCONF_ENOTSUP;
}

void hb_device_free(const hb_backend *b, void *handle)
{
    if (handle && hb_is_device(b)) {
        hb_call_enter("device_free");
        b->be->device_free(b->ctx, handle);
        hb_call_leave();
    }
}

int hb_copy_to_device(const hb_backend *b, void *handle, size_t offset, const void *src,
                      size_t bytes, double *seconds)
{
    if (!hb_is_device(b))
        return ATTNCONF_ENOTSUP;
    hb_call_enter("copy_to_device");
    double t0 = mono_now();
    int rc = b->be->copy_to_device(b->ctx, handle, offset, src, bytes);
    double t1 = mono_now();
    hb_call_leave();
    if (seconds)
        *seconds += t1 - t0;
    return rc;
}

int hb_copy_from_device(const hb_backend *b, void *dst, const void *handle, size_t offset,
                        size_t bytes, double *seconds)
{
    if (!hb_is_device(b))
        return ATTNCONF_ENOTSUP;
    hb_call_enter("copy_from_device");
    double t0 = mono_now();
    int rc = b->be->copy_from_device(b->ctx, dst, handle, offset, bytes);
    double t1 = mono_now();
    hb_call_leave();
    if (seconds)
        *seconds += t1 - t0;
    return rc;
}

int hb_sdpa_synchronized(const hb_backend *b, const attnconf_sdpa_args *a, double *seconds)
{
    if (!hb_is_device(b))
        return hb_sdpa(b, a, seconds);
    hb_call_enter("sdpa");
    double t0 = mono_now();
    int rc = b->be->sdpa(b->ctx, a);
    /* Even a failed call may have queued work: the buffers are read only after it ends. */
    hb_call_enter("synchronize");
    int rs = b->be->synchronize(b->ctx);
    double t1 = mono_now();
    hb_call_leave();
    if (seconds)
        *seconds = t1 - t0;
    return rc != ATTNCONF_OK ? rc : rs;
}

int hb_paged_append(const hb_backend *b, const attnconf_paged_append_args *a)
{
    return HB_HAS(b->be, paged_append) ? HB_MARKED(b, paged_append, b->ctx, a) : ATTNCONF_ENOTSUP;
}

int hb_paged_sdpa(const hb_backend *b, const attnconf_paged_args *a, double *seconds)
{
    if (!HB_HAS(b->be, paged_sdpa))
        return ATTNCONF_ENOTSUP;
    hb_call_enter("paged_sdpa");
    double t0 = mono_now();
    int rc = b->be->paged_sdpa(b->ctx, a);
    double t1 = mono_now();
    hb_call_leave();
    if (seconds)
        *seconds = t1 - t0;
    return rc;
}

void hb_tensor4(attnconf_tensor *t, void *data, int32_t dtype, int64_t a, int64_t b, int64_t c,
                int64_t d)
{
    memset(t, 0, sizeof *t);
    t->data = data;
    t->dtype = dtype;
    t->ndim = 4;
    const int64_t shape[4] = {a, b, c, d};
    memcpy(t->shape, shape, sizeof shape);
    t->strides[3] = 1;
    t->strides[2] = d;
    t->strides[1] = c * d;
    t->strides[0] = b * c * d;
}
