/* reference_cache.c — the reference plugin's KV cache members (reference_cache.h): argument
 * checks the ABI asks for (struct_size, host buffer shapes), then one attnref/cache.h call each.
 * attnref changes nothing on error, which is the ABI's "after an error the cache is unchanged". */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "attnref/cache.h"
#include "attnref/status.h"
#include "attnref/tensor.h"
#include "reference_cache.h"

#if defined(ATTNCONF_CACHE_MUTANT) && ATTNCONF_CACHE_MUTANT
#include "cache_mutants.h"
#define RC_MUTANT 1
#else
#define RC_MUTANT 0
#endif

/* attnref status -> ABI code, with the diagnostic as last_error. */
static int rc_finish(void *ctx, int st, const attnref_diag *d, const char *what)
{
    rb_ctx *c = ctx;
    if (st == ATTNREF_OK) {
        c->err[0] = '\0';
        return ATTNCONF_OK;
    }
    return rb_fail(c, rb_map_status(st), "%s: %s", what, d->msg[0] ? d->msg : attnref_strerror(st));
}

#define RC_NEED(ctx, cond, what)                                                                   \
    do {                                                                                           \
        if (!(ctx))                                                                                \
            return ATTNCONF_EINVAL;                                                                \
        if (!(cond))                                                                               \
            return rb_fail((ctx), ATTNCONF_EINVAL, "%s", (what));                                  \
    } while (0)

int rc_create(void *ctx, const attnconf_cache_config *cfg, void **cache)
{
    RC_NEED(ctx, cfg && cache, "cache_create: NULL argument");
    RC_NEED(ctx, cfg->struct_size >= sizeof *cfg, "cache_create: cfg.struct_size too small");
    attnref_cache_params p;
    memset(&p, 0, sizeof p);
    p.kind = (attnref_cache_kind)cfg->kind;
    p.dtype = (attnref_dtype)cfg->dtype;
    p.batch = cfg->batch;
    p.kv_heads = cfg->kv_heads;
    p.head_dim = cfg->head_dim;
    p.value_dim = cfg->v_head_dim;
    p.max_size = cfg->max_size;
    p.keep = cfg->keep;
    p.chunk_size = cfg->chunk_size;
    p.group_size = cfg->group_size;
    p.bits = cfg->bits;
    p.left_padding = cfg->left_padding;
#if RC_MUTANT
    rcm_adjust_params(&p); /* test-only */
#endif
    attnref_cache *c = NULL;
    attnref_diag d = {{0}};
    int st = attnref_cache_create(&p, &c, &d);
    if (st == ATTNREF_OK)
        *cache = c;
    return rc_finish(ctx, st, &d, "cache_create");
}

int rc_update(void *ctx, void *cache, const attnconf_tensor *k, const attnconf_tensor *v)
{
    RC_NEED(ctx, cache && k && v, "cache_update: NULL argument");
    attnref_tensor rk, rv;
    rb_to_ref(k, &rk);
    rb_to_ref(v, &rv);
    attnref_diag d = {{0}};
#if RC_MUTANT
    int st = rcm_update(cache, &rk, &rv, &d); /* test-only: the update with the mutant's bug */
#else
    int st = attnref_cache_update(cache, &rk, &rv, &d);
#endif
    return rc_finish(ctx, st, &d, "cache_update");
}

int rc_trim(void *ctx, void *cache, int64_t n, int64_t *trimmed)
{
    RC_NEED(ctx, cache && trimmed, "cache_trim: NULL argument");
    attnref_diag d = {{0}};
#if RC_MUTANT
    int st = rcm_trim(cache, n, trimmed, &d);
#else
    int st = attnref_cache_trim(cache, n, trimmed, &d);
#endif
    return rc_finish(ctx, st, &d, "cache_trim");
}

int rc_make_mask(void *ctx, void *cache, const attnconf_cache_mask_args *a)
{
    RC_NEED(ctx, cache && a && a->keep, "cache_make_mask: NULL argument");
    RC_NEED(ctx, a->struct_size >= sizeof *a, "cache_make_mask: args.struct_size too small");
    attnref_tensor keep;
    rb_to_ref(a->keep, &keep);
    attnref_diag d = {{0}};
    int st = attnref_cache_make_mask(cache, a->n, a->window, &keep, &d);
#if RC_MUTANT
    if (st == ATTNREF_OK)
        rcm_after_mask(cache, a->n, a->window, &keep);
#endif
    return rc_finish(ctx, st, &d, "cache_make_mask");
}

/* A host tensor must be exactly (B, H, L, last) of the cache dtype. */
static int rc_shape_ok(const attnconf_tensor *t, const attnref_cache_info *in, int64_t last)
{
    return t->dtype == (int32_t)in->dtype && t->ndim == 4 && t->shape[0] == in->batch &&
           t->shape[1] == in->kv_heads && t->shape[2] == in->T && t->shape[3] == last;
}

int rc_state(void *ctx, void *cache, attnconf_cache_state *st)
{
    RC_NEED(ctx, cache && st, "cache_state: NULL argument");
    RC_NEED(ctx, st->struct_size >= sizeof *st, "cache_state: struct_size too small");
    attnref_cache_info in;
    attnref_diag d = {{0}};
    int s = attnref_cache_get_info(cache, &in, &d);
    if (s != ATTNREF_OK)
        return rc_finish(ctx, s, &d, "cache_state");
    st->batch = in.batch;
    st->length = in.T;
    if (!st->keys)
        return rc_finish(ctx, ATTNREF_OK, &d, "cache_state");
    RC_NEED(ctx, st->values && st->offsets && (st->positions || in.T == 0),
            "cache_state: offsets, positions, keys and values must all be given");
    if (!rc_shape_ok(st->keys, &in, in.head_dim) || !rc_shape_ok(st->values, &in, in.value_dim))
        return rb_fail(ctx, ATTNCONF_EINVAL,
                       "cache_state: keys/values must be (%lld, %lld, %lld, "
                       "D/Dv) of the cache dtype",
                       (long long)in.batch, (long long)in.kv_heads, (long long)in.T);
    attnref_tensor k, v;
    rb_to_ref(st->keys, &k);
    rb_to_ref(st->values, &v);
    if ((s = attnref_cache_offsets(cache, st->offsets, &d)) == ATTNREF_OK &&
        (s = attnref_cache_positions(cache, st->positions, &d)) == ATTNREF_OK)
        s = attnref_cache_kv(cache, &k, &v, &d);
    return rc_finish(ctx, s, &d, "cache_state");
}

void rc_destroy(void *ctx, void *cache)
{
    (void)ctx;
    attnref_cache_destroy(cache);
}

int rc_filter(void *ctx, void *cache, const int64_t *rows, int64_t n)
{
    RC_NEED(ctx, cache && rows, "cache_filter: NULL argument");
    attnref_diag d = {{0}};
#if RC_MUTANT
    return rc_finish(ctx, rcm_filter(cache, rows, n, &d), &d, "cache_filter");
#else
    return rc_finish(ctx, attnref_cache_filter(cache, rows, n, &d), &d, "cache_filter");
#endif
}

int rc_extend(void *ctx, void *cache, const void *other)
{
    RC_NEED(ctx, cache && other, "cache_extend: NULL argument");
    attnref_diag d = {{0}};
#if RC_MUTANT
    return rc_finish(ctx, rcm_extend(cache, other, &d), &d, "cache_extend");
#else
    return rc_finish(ctx, attnref_cache_extend(cache, other, &d), &d, "cache_extend");
#endif
}

int rc_merge(void *ctx, void *const *caches, int64_t n, void **out)
{
    RC_NEED(ctx, caches && out, "cache_merge: NULL argument");
    attnref_diag d = {{0}};
    attnref_cache *m = NULL;
#if RC_MUTANT
    int st = rcm_merge((const attnref_cache *const *)caches, n, &m, &d);
#else
    int st = attnref_cache_merge((const attnref_cache *const *)caches, n, &m, &d);
#endif
    if (st == ATTNREF_OK)
        *out = m;
    return rc_finish(ctx, st, &d, "cache_merge");
}

int rc_prepare(void *ctx, void *cache, const attnconf_cache_prepare_args *a)
{
    RC_NEED(ctx, cache && a, "cache_prepare: NULL argument");
    RC_NEED(ctx, a->struct_size >= sizeof *a, "cache_prepare: args.struct_size too small");
    attnref_diag d = {{0}};
#if RC_MUTANT
    return rc_finish(ctx, rcm_prepare(cache, a->left_padding, a->lengths, &d), &d, "cache_prepare");
#else
    return rc_finish(ctx, attnref_cache_prepare(cache, a->left_padding, a->lengths, &d), &d,
                     "cache_prepare");
#endif
}

int rc_finalize(void *ctx, void *cache)
{
    RC_NEED(ctx, cache, "cache_finalize: NULL argument");
    attnref_diag d = {{0}};
    return rc_finish(ctx, attnref_cache_finalize(cache, &d), &d, "cache_finalize");
}
