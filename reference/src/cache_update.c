/* cache_update.c — storing tokens, the eviction rules, the cache's mask, and attention through
 * the cache (SPEC clauses 14-18).
 *
 * One function, store_layout, applies a kind's rules before new tokens land (batch-rotating
 * right-padding moves, rotating and chunked evictions).  update runs it on the cache; make_mask
 * runs it on a positions-only shadow, so the mask's key axis is by construction the layout the
 * update will produce. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cache_internal.h"
#include "internal.h"

void attnref__cache_drop_front(attnref_cache *c, int64_t from, int64_t n)
{
    if (n <= 0)
        return;
    int64_t tail = c->T - from - n;
    for (int64_t b = 0; b < c->B; b++) {
        int64_t *pos = c->pos + b * c->cap;
        memmove(pos + from, pos + from + n, (size_t)tail * sizeof *pos);
        if (c->shadow)
            continue;
        for (int64_t h = 0; h < c->H; h++) {
            double *k = c->k + (b * c->H + h) * c->cap * c->D;
            double *v = c->v + (b * c->H + h) * c->cap * c->Dv;
            memmove(k + from * c->D, k + (from + n) * c->D, (size_t)(tail * c->D) * sizeof *k);
            memmove(v + from * c->Dv, v + (from + n) * c->Dv, (size_t)(tail * c->Dv) * sizeof *v);
        }
    }
    c->T -= n;
}

/* Shift row b's first T - n slots right by n; the n slots freed at the front become pads. */
static void shift_row(attnref_cache *c, int64_t b, int64_t n, int64_t keep_len)
{
    int64_t *pos = c->pos + b * c->cap;
    memmove(pos + n, pos, (size_t)keep_len * sizeof *pos);
    for (int64_t j = 0; j < n; j++)
        pos[j] = -1;
    if (c->shadow)
        return;
    for (int64_t h = 0; h < c->H; h++) {
        double *k = c->k + (b * c->H + h) * c->cap * c->D;
        double *v = c->v + (b * c->H + h) * c->cap * c->Dv;
        memmove(k + n * c->D, k, (size_t)(keep_len * c->D) * sizeof *k);
        memmove(v + n * c->Dv, v, (size_t)(keep_len * c->Dv) * sizeof *v);
        for (int64_t i = 0; i < n * c->D; i++)
            k[i] = NAN;
        for (int64_t i = 0; i < n * c->Dv; i++)
            v[i] = NAN;
    }
}

void attnref__cache_rotate_row(attnref_cache *c, int64_t b, int64_t n)
{
    if (n > c->T)
        n = c->T;
    if (n > 0)
        shift_row(c, b, n, c->T - n);
}

void attnref__cache_pad_front(attnref_cache *c, int64_t n)
{
    if (n <= 0)
        return;
    for (int64_t b = 0; b < c->B; b++)
        shift_row(c, b, n, c->T);
    c->T += n;
}

/* Right padding appended to row b since the last move (batched kinds, while prepared). */
static int64_t pending_pad(const attnref_cache *c, int64_t b)
{
    int64_t p = c->offset[b] - c->limit[b];
    return p > 0 ? p : 0;
}

/* Turn row b's pending right padding into left padding (clause 18).  mlx-lm adds it to a left
 * padding that eviction may have made negative, undercounting the pads; we count from zero. */
void attnref__cache_move_pending_pad(attnref_cache *c, int64_t b)
{
    int64_t p = pending_pad(c, b);
    if (p == 0)
        return;
    attnref__cache_rotate_row(c, b, p);
    c->lp[b] = (c->lp[b] > 0 ? c->lp[b] : 0) + p;
    c->offset[b] -= p;
}

/* The kind's rules that run before S new tokens are stored. */
static void store_layout(attnref_cache *c, int64_t S)
{
    if (c->p.kind == ATTNREF_CACHE_BATCH_ROTATING && c->prepared && S > 1)
        for (int64_t b = 0; b < c->B; b++)
            attnref__cache_move_pending_pad(c, b);
    if (CACHE_IS_ROTATING(c) && c->T >= c->p.max_size) {
        /* Keep max_size - 1 old slots, so every new query still sees max_size keys. */
        int64_t e = c->T - (c->p.max_size - 1);
        attnref__cache_drop_front(c, c->p.keep, e);
        if (c->p.kind == ATTNREF_CACHE_BATCH_ROTATING)
            for (int64_t b = 0; b < c->B; b++)
                c->lp[b] -= e;
    }
    if (c->p.kind == ATTNREF_CACHE_CHUNKED && c->T > c->p.chunk_size)
        attnref__cache_drop_front(c, 0, c->T - c->p.chunk_size);
}

/* Append S tokens (data from k/v unless a shadow); capacity already reserved. */
static void store_append(attnref_cache *c, const attnref_tensor *k, const attnref_tensor *v,
                         int64_t S)
{
    int64_t T = c->T;
    for (int64_t b = 0; b < c->B; b++) {
        for (int64_t i = 0; i < S; i++) {
            int64_t p = c->offset[b] + i;
            c->pos[b * c->cap + T + i] = p < 0 ? -1 : p;
        }
        if (c->shadow)
            continue;
        for (int64_t h = 0; h < c->H; h++)
            for (int64_t i = 0; i < S; i++) {
                double *kd = c->k + ((b * c->H + h) * c->cap + T + i) * c->D;
                double *vd = c->v + ((b * c->H + h) * c->cap + T + i) * c->Dv;
                for (int64_t d = 0; d < c->D; d++) {
                    int64_t idx[4] = {b, h, i, d};
                    kd[d] = attnref_load(k->data, k->dtype, attnref_tensor_offset(k, idx));
                }
                for (int64_t d = 0; d < c->Dv; d++) {
                    int64_t idx[4] = {b, h, i, d};
                    vd[d] = attnref_load(v->data, v->dtype, attnref_tensor_offset(v, idx));
                }
                if (c->p.kind == ATTNREF_CACHE_QUANTIZED) {
                    int bits = (int)c->p.bits;
                    for (int64_t g = 0; g < c->D; g += c->p.group_size)
                        attnref__quant_roundtrip(kd + g, c->p.group_size, bits, c->p.dtype);
                    for (int64_t g = 0; g < c->Dv; g += c->p.group_size)
                        attnref__quant_roundtrip(vd + g, c->p.group_size, bits, c->p.dtype);
                }
            }
    }
    for (int64_t b = 0; b < c->B; b++)
        c->offset[b] += S;
    c->T += S;
    c->appended += S;
    c->has_keys = 1;
}

static int check_kv_in(const attnref_cache *c, const attnref_tensor *t, const char *name,
                       int64_t dim, int64_t S, attnref_diag *diag)
{
    if (!t)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache update: NULL %s", name);
    int rc = attnref_tensor_check(t, name, diag);
    if (rc != ATTNREF_OK)
        return rc;
    if (t->dtype != c->p.dtype)
        return attnref__fail(diag, ATTNREF_EDTYPE, "%s: dtype %s differs from the cache dtype %s",
                             name, attnref_dtype_name(t->dtype), attnref_dtype_name(c->p.dtype));
    int64_t want[4] = {c->B, c->H, S, dim};
    if (t->ndim != 4 || memcmp(t->shape, want, sizeof want) != 0) {
        char got[64], exp[64];
        return attnref__fail(diag, ATTNREF_EINVAL, "%s: shape %s, expected (B, Hkv, S, %s) = %s",
                             name, attnref__shape_str(got, sizeof got, t->ndim, t->shape),
                             name[0] == 'k' ? "D" : "Dv",
                             attnref__shape_str(exp, sizeof exp, 4, want));
    }
    if (c->p.kind == ATTNREF_CACHE_QUANTIZED) {
        for (int64_t b = 0; b < c->B; b++)
            for (int64_t h = 0; h < c->H; h++)
                for (int64_t i = 0; i < S; i++)
                    for (int64_t d = 0; d < dim; d++) {
                        int64_t idx[4] = {b, h, i, d};
                        if (!isfinite(
                                attnref_load(t->data, t->dtype, attnref_tensor_offset(t, idx))))
                            return attnref__fail(diag, ATTNREF_EINVAL,
                                                 "%s[%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64
                                                 "]: a quantized cache needs finite values",
                                                 name, b, h, i, d);
                    }
    }
    return ATTNREF_OK;
}

/* Checks shared by update and make_mask for a block of S tokens. */
static int check_block(const attnref_cache *c, int64_t S, attnref_diag *diag)
{
    if (S < 1)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "cache: a block of %" PRId64 " tokens (need >= 1)", S);
    if (S > ATTNREF_CACHE_MAX_LEN || c->T + S > ATTNREF_CACHE_MAX_LEN)
        return attnref__fail(diag, ATTNREF_ERANGE,
                             "cache: %" PRId64 " + %" PRId64 " tokens exceed %" PRId64, c->T, S,
                             ATTNREF_CACHE_MAX_LEN);
    for (int64_t b = 0; b < c->B; b++)
        if (c->offset[b] + S > ATTNREF_CACHE_MAX_LEN)
            return attnref__fail(diag, ATTNREF_ERANGE,
                                 "cache: offset[%" PRId64 "] + %" PRId64 " exceeds %" PRId64, b, S,
                                 ATTNREF_CACHE_MAX_LEN);
    return ATTNREF_OK;
}

int attnref_cache_update(attnref_cache *c, const attnref_tensor *k, const attnref_tensor *v,
                         attnref_diag *diag)
{
    if (!c)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache update: NULL cache");
    int rc = check_kv_in(c, k, "k", c->D, k && k->ndim == 4 ? k->shape[2] : -1, diag);
    if (rc != ATTNREF_OK)
        return rc;
    int64_t S = k->shape[2];
    if ((rc = check_kv_in(c, v, "v", c->Dv, S, diag)) != ATTNREF_OK)
        return rc;
    if ((rc = check_block(c, S, diag)) != ATTNREF_OK)
        return rc;
    if (c->p.kind == ATTNREF_CACHE_BATCH_ROTATING && c->prepared && S == 1)
        return attnref__fail(
            diag, ATTNREF_EINVAL,
            "cache update: a single-token update of a prepared batch_rotating cache "
            "(finalize the prefill first)");
    /* Eviction only shrinks T, so reserving T + S first makes the update all-or-nothing. */
    if ((rc = attnref__cache_reserve(c, c->T + S, diag)) != ATTNREF_OK)
        return rc;
    store_layout(c, S);
    store_append(c, k, v, S);
    attnref__ok(diag);
    return ATTNREF_OK;
}

int attnref_cache_trim(attnref_cache *c, int64_t n, int64_t *trimmed, attnref_diag *diag)
{
    if (!c)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache trim: NULL cache");
    if (n < 0)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache trim: n = %" PRId64 " is negative", n);
    int64_t m = n < c->T ? n : c->T;
    /* A rotating cache that may have evicted cannot give back the right tokens. */
    if (CACHE_IS_ROTATING(c) && c->appended >= c->p.max_size)
        m = 0;
    c->T -= m;
    c->appended -= m;
    for (int64_t b = 0; b < c->B; b++)
        c->offset[b] -= m;
    if (trimmed)
        *trimmed = m;
    attnref__ok(diag);
    return ATTNREF_OK;
}

/* The layout after storing n tokens, as a positions-only shadow. */
static int shadow_after(const attnref_cache *c, int64_t n, attnref_cache **out, attnref_diag *diag)
{
    int rc = check_block(c, n, diag);
    if (rc != ATTNREF_OK)
        return rc;
    attnref_cache *s;
    if ((rc = attnref__cache_copy(c, 1, &s, diag)) != ATTNREF_OK)
        return rc;
    if ((rc = attnref__cache_reserve(s, s->T + n, diag)) != ATTNREF_OK) {
        attnref_cache_destroy(s);
        return rc;
    }
    store_layout(s, n);
    store_append(s, NULL, NULL, n);
    *out = s;
    return ATTNREF_OK;
}

int attnref_cache_mask_shape(const attnref_cache *c, int64_t n, int64_t shape[4],
                             attnref_diag *diag)
{
    if (!c || !shape)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache mask: NULL %s", c ? "shape" : "cache");
    attnref_cache *s;
    int rc = shadow_after(c, n, &s, diag);
    if (rc != ATTNREF_OK)
        return rc;
    int64_t Tk = s->T;
    attnref_cache_destroy(s);
    if (c->B * n > ATTNREF_MAX_NUMEL / Tk)
        return attnref__fail(diag, ATTNREF_ERANGE,
                             "cache mask: (%" PRId64 ", 1, %" PRId64 ", %" PRId64
                             ") exceeds ATTNREF_MAX_NUMEL",
                             c->B, n, Tk);
    shape[0] = c->B, shape[1] = 1, shape[2] = n, shape[3] = Tk;
    attnref__ok(diag);
    return ATTNREF_OK;
}

/* Does query i of row b keep slot j?  s is the layout after the store. */
static int keeps(const attnref_cache *s, int64_t n, int64_t W, int64_t b, int64_t i, int64_t j)
{
    int64_t q = s->pos[b * s->cap + j];
    if (q < 0)
        return 0; /* a pad */
    if (s->p.kind == ATTNREF_CACHE_CHUNKED) {
        int64_t p = s->offset[b] - n + i, C = s->p.chunk_size;
        return q <= p && q / C == p / C;
    }
    int64_t at = s->T - n + i; /* the query's own slot */
    return j <= at && (W == 0 || j > at - W);
}

int attnref_cache_make_mask(const attnref_cache *c, int64_t n, int64_t window, attnref_tensor *keep,
                            attnref_diag *diag)
{
    if (!c || !keep)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache mask: NULL %s", c ? "keep" : "cache");
    if (window < 0)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache mask: window %" PRId64 " is negative",
                             window);
    if (window > 0 && c->p.kind == ATTNREF_CACHE_CHUNKED)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache mask: a chunked cache takes no window");
    int64_t shape[4];
    int rc = attnref_cache_mask_shape(c, n, shape, diag);
    if (rc != ATTNREF_OK)
        return rc;
    if ((rc = attnref_tensor_check(keep, "keep", diag)) != ATTNREF_OK)
        return rc;
    if (keep->dtype != ATTNREF_BOOL)
        return attnref__fail(diag, ATTNREF_EDTYPE, "keep: dtype %s is not bool",
                             attnref_dtype_name(keep->dtype));
    if (keep->ndim != 4 || memcmp(keep->shape, shape, sizeof shape) != 0) {
        char got[64], exp[64];
        return attnref__fail(diag, ATTNREF_EINVAL, "keep: shape %s, expected %s",
                             attnref__shape_str(got, sizeof got, keep->ndim, keep->shape),
                             attnref__shape_str(exp, sizeof exp, 4, shape));
    }
    attnref_cache *s;
    if ((rc = shadow_after(c, n, &s, diag)) != ATTNREF_OK)
        return rc;
    int64_t W = window;
    if (W == 0 && CACHE_IS_ROTATING(c))
        W = c->p.max_size;
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < s->T; j++) {
                int64_t idx[4] = {b, 0, i, j};
                ((uint8_t *)keep->data)[attnref_tensor_offset(keep, idx)] =
                    (uint8_t)keeps(s, n, W, b, i, j);
            }
    attnref_cache_destroy(s);
    attnref__ok(diag);
    return ATTNREF_OK;
}

static void swap_caches(attnref_cache *a, attnref_cache *b)
{
    attnref_cache t = *a;
    *a = *b;
    *b = t;
}

int attnref_cache_attend(attnref_cache *c, const attnref_tensor *q, const attnref_tensor *k,
                         const attnref_tensor *v, int64_t window, const attnref_sdpa_params *params,
                         double *out_f64, attnref_diag *diag)
{
    if (!c || !q || !k || !out_f64)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache attend: NULL %s",
                             !c   ? "cache"
                             : !q ? "q"
                             : !k ? "k"
                                  : "out_f64");
    attnref_sdpa_params sp = {0};
    if (params) {
        if (params->causal || params->window || params->lengths || params->left_padding)
            return attnref__fail(
                diag, ATTNREF_EINVAL,
                "cache attend: params carry a mask; the cache builds it (only the scale is used)");
        sp.has_scale = params->has_scale;
        sp.scale = params->scale;
    }
    int rc = attnref_tensor_check(q, "q", diag);
    if (rc != ATTNREF_OK)
        return rc;
    if (q->dtype != c->p.dtype)
        return attnref__fail(diag, ATTNREF_EDTYPE, "q: dtype %s differs from the cache dtype %s",
                             attnref_dtype_name(q->dtype), attnref_dtype_name(c->p.dtype));
    if (k->ndim != 4 || q->ndim != 4 || q->shape[0] != c->B || q->shape[2] != k->shape[2] ||
        q->shape[3] != c->D || q->shape[1] < 1 || q->shape[1] % c->H)
        return attnref__fail(
            diag, ATTNREF_EINVAL,
            "q: shape must be (B, Hq, N, D) with Hq a multiple of Hkv and N = k's S");
    int64_t n = k->shape[2], shape[4];
    if ((rc = attnref_cache_mask_shape(c, n, shape, diag)) != ATTNREF_OK)
        return rc;
    attnref_cache *w = NULL;
    uint8_t *mbuf = NULL;
    void *kbuf = NULL, *vbuf = NULL;
    attnref_tensor mask, kt, vt;
    size_t es = attnref_dtype_size(c->p.dtype);
    int64_t Tk = shape[3];
    mbuf = malloc((size_t)(shape[0] * shape[2] * shape[3]) + 1);
    kbuf = malloc((size_t)(c->B * c->H * Tk * c->D) * es + 1);
    vbuf = malloc((size_t)(c->B * c->H * Tk * c->Dv) * es + 1);
    if (!mbuf || !kbuf || !vbuf) {
        rc = attnref__fail(diag, ATTNREF_ENOMEM, "cache attend: out of memory");
        goto done;
    }
    int64_t ks[4] = {c->B, c->H, Tk, c->D}, vs[4] = {c->B, c->H, Tk, c->Dv};
    if ((rc = attnref_tensor_init(&mask, mbuf, ATTNREF_BOOL, 4, shape, diag)) != ATTNREF_OK ||
        (rc = attnref_tensor_init(&kt, kbuf, c->p.dtype, 4, ks, diag)) != ATTNREF_OK ||
        (rc = attnref_tensor_init(&vt, vbuf, c->p.dtype, 4, vs, diag)) != ATTNREF_OK)
        goto done;
    if ((rc = attnref_cache_make_mask(c, n, window, &mask, diag)) != ATTNREF_OK)
        goto done;
    /* Work on a copy so a failure leaves c untouched. */
    if ((rc = attnref__cache_copy(c, 0, &w, diag)) != ATTNREF_OK)
        goto done;
    if ((rc = attnref_cache_update(w, k, v, diag)) != ATTNREF_OK)
        goto done;
    if ((rc = attnref_cache_kv(w, &kt, &vt, diag)) != ATTNREF_OK)
        goto done;
    if ((rc = attnref_sdpa_f64(q, &kt, &vt, &mask, &sp, out_f64, diag)) != ATTNREF_OK)
        goto done;
    swap_caches(c, w);
    attnref__ok(diag);
done:
    attnref_cache_destroy(w);
    free(mbuf), free(kbuf), free(vbuf);
    return rc;
}
