/* cache_batch.c — batch operations of the batched KV caches (SPEC clause 18): prepare and
 * finalize (right padding becomes left padding), filter, extend and merge. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cache_internal.h"
#include "internal.h"

static int need_batch(const attnref_cache *c, const char *op, attnref_diag *diag)
{
    if (!c)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache %s: NULL cache", op);
    if (!CACHE_IS_BATCH(c))
        return attnref__fail(diag, ATTNREF_EINVAL, "cache %s: a %s cache has no batch operations",
                             op, attnref_cache_kind_name(c->p.kind));
    return ATTNREF_OK;
}

static int check_counts(const int64_t *a, int64_t B, const char *op, const char *name,
                        attnref_diag *diag)
{
    for (int64_t b = 0; b < B; b++)
        if (a[b] < 0 || a[b] > ATTNREF_CACHE_MAX_LEN)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "cache %s: %s[%" PRId64 "] = %" PRId64 " is outside 0..%" PRId64,
                                 op, name, b, a[b], ATTNREF_CACHE_MAX_LEN);
    return ATTNREF_OK;
}

int attnref_cache_prepare(attnref_cache *c, const int64_t *left_padding, const int64_t *lengths,
                          attnref_diag *diag)
{
    int rc = need_batch(c, "prepare", diag);
    if (rc != ATTNREF_OK)
        return rc;
    if (!left_padding && !lengths)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "cache prepare: neither left_padding nor lengths given");
    if (left_padding) {
        if (c->has_keys)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "cache prepare: left_padding on a cache that holds tokens");
        if ((rc = check_counts(left_padding, c->B, "prepare", "left_padding", diag)) != ATTNREF_OK)
            return rc;
        for (int64_t b = 0; b < c->B; b++)
            if (c->lp[b] + left_padding[b] > ATTNREF_CACHE_MAX_LEN)
                return attnref__fail(diag, ATTNREF_EINVAL,
                                     "cache prepare: left_padding[%" PRId64 "] grows past %" PRId64,
                                     b, ATTNREF_CACHE_MAX_LEN);
    }
    if (lengths) {
        if (c->prepared)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "cache prepare: already prepared (finalize first)");
        if ((rc = check_counts(lengths, c->B, "prepare", "lengths", diag)) != ATTNREF_OK)
            return rc;
    }
    for (int64_t b = 0; left_padding && b < c->B; b++) {
        c->lp[b] += left_padding[b];
        c->offset[b] -= left_padding[b];
    }
    if (lengths) {
        for (int64_t b = 0; b < c->B; b++)
            c->limit[b] = c->offset[b] + lengths[b];
        c->prepared = 1;
    }
    attnref__ok(diag);
    return ATTNREF_OK;
}

int attnref_cache_finalize(attnref_cache *c, attnref_diag *diag)
{
    int rc = need_batch(c, "finalize", diag);
    if (rc != ATTNREF_OK)
        return rc;
    if (c->prepared) {
        for (int64_t b = 0; b < c->B; b++)
            attnref__cache_move_pending_pad(c, b);
        c->prepared = 0;
    }
    attnref__ok(diag);
    return ATTNREF_OK;
}

/* Copy row sb of src, right-aligned after `left` pads, into row db of dst (dst->T already set;
 * src's last `len` slots are taken). */
static void copy_row(attnref_cache *dst, int64_t db, const attnref_cache *src, int64_t sb,
                     int64_t left, int64_t len)
{
    int64_t from = src->T - len;
    for (int64_t j = 0; j < dst->T; j++)
        dst->pos[db * dst->cap + j] = j < left ? -1 : src->pos[sb * src->cap + from + j - left];
    for (int64_t h = 0; h < dst->H; h++) {
        double *k = dst->k + (db * dst->H + h) * dst->cap * dst->D;
        double *v = dst->v + (db * dst->H + h) * dst->cap * dst->Dv;
        const double *sk = src->k + (sb * src->H + h) * src->cap * src->D + from * src->D;
        const double *sv = src->v + (sb * src->H + h) * src->cap * src->Dv + from * src->Dv;
        for (int64_t i = 0; i < left * dst->D; i++)
            k[i] = NAN;
        for (int64_t i = 0; i < left * dst->Dv; i++)
            v[i] = NAN;
        if (len) {
            memcpy(k + left * dst->D, sk, (size_t)(len * dst->D) * sizeof *k);
            memcpy(v + left * dst->Dv, sv, (size_t)(len * dst->Dv) * sizeof *v);
        }
    }
    dst->offset[db] = src->offset[sb];
    dst->limit[db] = src->limit[sb];
}

/* Move d's contents into c (c keeps its address), freeing c's old state. */
static void replace(attnref_cache *c, attnref_cache *d)
{
    attnref_cache t = *c;
    *c = *d;
    *d = t;
    attnref_cache_destroy(d);
}

/* A new cache like `like` with B rows and room for T slots (T set). */
static int make_like(const attnref_cache_params *like, int64_t B, int64_t T, attnref_cache **out,
                     attnref_diag *diag)
{
    attnref_cache *d;
    int rc = attnref__cache_alloc(like, B, 0, &d, diag);
    if (rc != ATTNREF_OK)
        return rc;
    if ((rc = attnref__cache_reserve(d, T, diag)) != ATTNREF_OK) {
        attnref_cache_destroy(d);
        return rc;
    }
    d->T = T;
    *out = d;
    return ATTNREF_OK;
}

int attnref_cache_filter(attnref_cache *c, const int64_t *rows, int64_t n, attnref_diag *diag)
{
    int rc = need_batch(c, "filter", diag);
    if (rc != ATTNREF_OK)
        return rc;
    if (!rows || n < 1)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache filter: no rows to keep");
    if (c->prepared)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache filter: prepared (finalize first)");
    for (int64_t i = 0; i < n; i++)
        if (rows[i] < 0 || rows[i] >= c->B)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "cache filter: rows[%" PRId64 "] = %" PRId64
                                 " is outside 0..%" PRId64,
                                 i, rows[i], c->B - 1);
    if (n > ATTNREF_CACHE_MAX_LEN ||
        (c->T && n * c->H > ATTNREF_MAX_NUMEL / c->T / (c->D > c->Dv ? c->D : c->Dv)))
        return attnref__fail(diag, ATTNREF_ERANGE,
                             "cache filter: %" PRId64 " rows exceed the size limits", n);
    attnref_cache *d;
    if ((rc = make_like(&c->p, n, c->T, &d, diag)) != ATTNREF_OK)
        return rc;
    for (int64_t i = 0; i < n; i++) {
        copy_row(d, i, c, rows[i], 0, c->T);
        d->lp[i] = c->lp[rows[i]];
    }
    d->appended = c->appended;
    d->has_keys = c->has_keys;
    if (c->p.kind == ATTNREF_CACHE_BATCH) {
        /* Drop the leading slots every remaining row pads. */
        int64_t m = d->T;
        for (int64_t i = 0; i < n; i++)
            m = d->lp[i] < m ? d->lp[i] : m;
        if (m > 0) {
            attnref__cache_drop_front(d, 0, m);
            for (int64_t i = 0; i < n; i++)
                d->lp[i] -= m;
        }
    }
    replace(c, d);
    attnref__ok(diag);
    return ATTNREF_OK;
}

static int same_shape(const attnref_cache *a, const attnref_cache *b)
{
    return a->p.dtype == b->p.dtype && a->H == b->H && a->D == b->D && a->Dv == b->Dv;
}

int attnref_cache_extend(attnref_cache *c, const attnref_cache *other, attnref_diag *diag)
{
    int rc = need_batch(c, "extend", diag);
    if (rc != ATTNREF_OK)
        return rc;
    if (!other)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache extend: NULL other");
    if (other->p.kind != c->p.kind || other->p.max_size != c->p.max_size || !same_shape(c, other))
        return attnref__fail(
            diag, ATTNREF_EINVAL,
            "cache extend: other differs in kind, max_size, dtype, kv_heads, head_dim or value_dim");
    if (c->prepared || other->prepared)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "cache extend: a prepared cache (finalize first)");
    int64_t B = c->B + other->B, T = c->T > other->T ? c->T : other->T;
    if (B > ATTNREF_CACHE_MAX_LEN)
        return attnref__fail(diag, ATTNREF_ERANGE,
                             "cache extend: %" PRId64 " rows exceed the limit", B);
    attnref_cache *d;
    if ((rc = make_like(&c->p, B, T, &d, diag)) != ATTNREF_OK)
        return rc;
    const attnref_cache *src[2] = {c, other};
    int64_t row = 0;
    for (int s = 0; s < 2; s++) {
        int64_t left = T - src[s]->T;
        for (int64_t b = 0; b < src[s]->B; b++, row++) {
            copy_row(d, row, src[s], b, left, src[s]->T);
            int64_t lp = src[s]->lp[b];
            /* Added padding counts from zero when eviction made the left padding negative. */
            d->lp[row] = left > 0 ? (lp > 0 ? lp : 0) + left : lp;
        }
    }
    d->appended = c->appended > other->appended ? c->appended : other->appended;
    d->has_keys = c->has_keys || other->has_keys;
    replace(c, d);
    attnref__ok(diag);
    return ATTNREF_OK;
}

int attnref_cache_merge(const attnref_cache *const *caches, int64_t n, attnref_cache **out,
                        attnref_diag *diag)
{
    if (!caches || !out || n < 1)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache merge: no caches");
    if (n > ATTNREF_CACHE_MAX_LEN)
        return attnref__fail(diag, ATTNREF_ERANGE, "cache merge: %" PRId64 " caches", n);
    const attnref_cache *f = caches[0];
    for (int64_t i = 0; i < n; i++) {
        const attnref_cache *c = caches[i];
        if (!c)
            return attnref__fail(diag, ATTNREF_EINVAL, "cache merge: caches[%" PRId64 "] is NULL",
                                 i);
        if (c->p.kind != ATTNREF_CACHE_STANDARD && c->p.kind != ATTNREF_CACHE_ROTATING)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "cache merge: caches[%" PRId64
                                 "] is %s (need standard or rotating)",
                                 i, attnref_cache_kind_name(c->p.kind));
        if (c->p.kind != f->p.kind || c->p.max_size != f->p.max_size || !same_shape(c, f))
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "cache merge: caches[%" PRId64
                                 "] differs from caches[0] in kind, max_size, dtype or shape",
                                 i);
        if (c->B != 1)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "cache merge: caches[%" PRId64 "] has batch %" PRId64 " (need 1)",
                                 i, c->B);
        if (c->p.keep != 0)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "cache merge: caches[%" PRId64 "] has keep %" PRId64
                                 " (a batched rotating cache has no keep)",
                                 i, c->p.keep);
    }
    int rot = f->p.kind == ATTNREF_CACHE_ROTATING;
    int64_t T = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t l = caches[i]->T;
        if (rot && caches[i]->offset[0] < l)
            l = caches[i]->offset[0];
        if (rot && f->p.max_size < l)
            l = f->p.max_size;
        T = l > T ? l : T;
    }
    attnref_cache_params p = f->p;
    p.kind = rot ? ATTNREF_CACHE_BATCH_ROTATING : ATTNREF_CACHE_BATCH;
    p.batch = n;
    p.keep = 0;
    p.left_padding = NULL;
    attnref_cache *d;
    int rc = make_like(&p, n, T, &d, diag);
    if (rc != ATTNREF_OK)
        return rc;
    for (int64_t i = 0; i < n; i++) {
        const attnref_cache *c = caches[i];
        int64_t l = c->T;
        if (rot && c->offset[0] < l)
            l = c->offset[0];
        if (rot && f->p.max_size < l)
            l = f->p.max_size;
        if (T == 0) { /* nothing stored anywhere: an empty batch, offsets 0 (as mlx-lm) */
            d->offset[i] = 0;
            d->lp[i] = 0;
            continue;
        }
        copy_row(d, i, c, 0, T - l, l);
        d->lp[i] = T - l;
    }
    d->appended = T;
    d->has_keys = T > 0;
    *out = d;
    attnref__ok(diag);
    return ATTNREF_OK;
}
