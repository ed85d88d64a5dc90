/* cache.c — creation, copies and state queries of the reference KV cache (SPEC clauses 14-18).
 * Updates, masks and attention live in cache_update.c, batch operations in cache_batch.c,
 * quantization in cache_quant.c. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cache_internal.h"
#include "internal.h"

static const char *const kind_names[] = {NULL,        "standard", "rotating",      "chunked",
                                         "quantized", "batch",    "batch_rotating"};

const char *attnref_cache_kind_name(attnref_cache_kind kind)
{
    if (kind < ATTNREF_CACHE_STANDARD || kind > ATTNREF_CACHE_BATCH_ROTATING)
        return "?";
    return kind_names[kind];
}

int attnref_cache_kind_parse(const char *name, attnref_cache_kind *out)
{
    if (!name || !out)
        return ATTNREF_EINVAL;
    for (int k = ATTNREF_CACHE_STANDARD; k <= ATTNREF_CACHE_BATCH_ROTATING; k++) {
        if (strcmp(name, kind_names[k]) == 0) {
            *out = (attnref_cache_kind)k;
            return ATTNREF_OK;
        }
    }
    return ATTNREF_EINVAL;
}

/* Which kind-specific fields each kind uses; anything else must be zero. */
enum { USE_MAX = 1, USE_KEEP = 2, USE_CHUNK = 4, USE_QUANT = 8, USE_LP = 16 };
static int kind_uses(attnref_cache_kind k)
{
    switch (k) {
    case ATTNREF_CACHE_STANDARD: return 0;
    case ATTNREF_CACHE_ROTATING: return USE_MAX | USE_KEEP;
    case ATTNREF_CACHE_CHUNKED: return USE_CHUNK;
    case ATTNREF_CACHE_QUANTIZED: return USE_QUANT;
    case ATTNREF_CACHE_BATCH: return USE_LP;
    case ATTNREF_CACHE_BATCH_ROTATING: return USE_MAX | USE_LP;
    }
    return -1;
}

static int check_params(const attnref_cache_params *p, attnref_diag *diag)
{
    int uses = kind_uses(p->kind);
    if (uses < 0)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache kind: unknown value %d", (int)p->kind);
    const char *kn = attnref_cache_kind_name(p->kind);
    if (!attnref_dtype_is_float(p->dtype))
        return attnref__fail(diag, ATTNREF_EINVAL, "cache dtype: %s is not f32, f16 or bf16",
                             attnref_dtype_name(p->dtype));
    const struct {
        const char *name;
        int64_t v;
    } dims[] = {{"batch", p->batch},
                {"kv_heads", p->kv_heads},
                {"head_dim", p->head_dim},
                {"value_dim", p->value_dim}};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
        if (dims[i].v < 1)
            return attnref__fail(diag, ATTNREF_EINVAL, "cache %s: %" PRId64 " is < 1", dims[i].name,
                                 dims[i].v);
        if (dims[i].v > ATTNREF_CACHE_MAX_LEN)
            return attnref__fail(diag, ATTNREF_ERANGE, "cache %s: %" PRId64 " exceeds %" PRId64,
                                 dims[i].name, dims[i].v, ATTNREF_CACHE_MAX_LEN);
    }
    int64_t dmax = p->head_dim > p->value_dim ? p->head_dim : p->value_dim;
    if (p->batch * p->kv_heads > ATTNREF_MAX_NUMEL / dmax)
        return attnref__fail(diag, ATTNREF_ERANGE,
                             "cache: batch * kv_heads * head_dim exceeds ATTNREF_MAX_NUMEL");
    /* Unused fields must be zero, so a parameter given to the wrong kind is caught. */
    const struct {
        const char *name;
        int flag;
        int set;
    } unused[] = {{"max_size", USE_MAX, p->max_size != 0},
                  {"keep", USE_KEEP, p->keep != 0},
                  {"chunk_size", USE_CHUNK, p->chunk_size != 0},
                  {"group_size", USE_QUANT, p->group_size != 0},
                  {"bits", USE_QUANT, p->bits != 0},
                  {"left_padding", USE_LP, p->left_padding != NULL}};
    for (size_t i = 0; i < sizeof unused / sizeof unused[0]; i++)
        if (unused[i].set && !(uses & unused[i].flag))
            return attnref__fail(diag, ATTNREF_EINVAL, "cache %s: not a parameter of a %s cache",
                                 unused[i].name, kn);
    if ((uses & USE_MAX) && (p->max_size < 1 || p->max_size > ATTNREF_CACHE_MAX_LEN))
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "cache max_size: %" PRId64 " is outside 1..%" PRId64, p->max_size,
                             ATTNREF_CACHE_MAX_LEN);
    if ((uses & USE_KEEP) && (p->keep < 0 || p->keep >= p->max_size))
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "cache keep: %" PRId64 " is outside 0..max_size-1 (%" PRId64 ")",
                             p->keep, p->max_size - 1);
    if ((uses & USE_CHUNK) && (p->chunk_size < 1 || p->chunk_size > ATTNREF_CACHE_MAX_LEN))
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "cache chunk_size: %" PRId64 " is outside 1..%" PRId64, p->chunk_size,
                             ATTNREF_CACHE_MAX_LEN);
    if (uses & USE_QUANT) {
        if (p->group_size != 32 && p->group_size != 64 && p->group_size != 128)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "cache group_size: %" PRId64 " is not 32, 64 or 128",
                                 p->group_size);
        if (p->bits != 4 && p->bits != 8)
            return attnref__fail(diag, ATTNREF_EINVAL, "cache bits: %" PRId64 " is not 4 or 8",
                                 p->bits);
        if (p->head_dim % p->group_size || p->value_dim % p->group_size)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "cache group_size: %" PRId64 " does not divide head_dim %" PRId64
                                 " and value_dim %" PRId64,
                                 p->group_size, p->head_dim, p->value_dim);
    }
    if (p->left_padding) {
        for (int64_t b = 0; b < p->batch; b++)
            if (p->left_padding[b] < 0 || p->left_padding[b] > ATTNREF_CACHE_MAX_LEN)
                return attnref__fail(diag, ATTNREF_EINVAL,
                                     "cache left_padding[%" PRId64 "]: %" PRId64
                                     " is outside 0..%" PRId64,
                                     b, p->left_padding[b], ATTNREF_CACHE_MAX_LEN);
    }
    return ATTNREF_OK;
}

int attnref__cache_alloc(const attnref_cache_params *p, int64_t B, int shadow, attnref_cache **out,
                         attnref_diag *diag)
{
    attnref_cache *c = calloc(1, sizeof *c);
    if (!c)
        return attnref__fail(diag, ATTNREF_ENOMEM, "cache: out of memory");
    c->shadow = shadow;
    c->p = *p;
    c->p.left_padding = NULL;
    c->p.batch = B;
    c->B = B;
    c->H = p->kv_heads;
    c->D = p->head_dim;
    c->Dv = p->value_dim;
    c->offset = calloc((size_t)B, sizeof *c->offset);
    c->lp = calloc((size_t)B, sizeof *c->lp);
    c->limit = calloc((size_t)B, sizeof *c->limit);
    if (!c->offset || !c->lp || !c->limit) {
        attnref_cache_destroy(c);
        return attnref__fail(diag, ATTNREF_ENOMEM, "cache: out of memory");
    }
    *out = c;
    return ATTNREF_OK;
}

int attnref_cache_create(const attnref_cache_params *p, attnref_cache **out, attnref_diag *diag)
{
    if (!p || !out)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache create: NULL %s", p ? "out" : "params");
    int rc = check_params(p, diag);
    if (rc != ATTNREF_OK)
        return rc;
    attnref_cache *c;
    if ((rc = attnref__cache_alloc(p, p->batch, 0, &c, diag)) != ATTNREF_OK)
        return rc;
    for (int64_t b = 0; b < c->B; b++) {
        c->lp[b] = p->left_padding ? p->left_padding[b] : 0;
        c->offset[b] = -c->lp[b];
    }
    *out = c;
    attnref__ok(diag);
    return ATTNREF_OK;
}

void attnref_cache_destroy(attnref_cache *c)
{
    if (!c)
        return;
    free(c->offset);
    free(c->lp);
    free(c->limit);
    free(c->pos);
    free(c->k);
    free(c->v);
    free(c);
}

/* Allocate arrays of `cap` slots per row; copy the first T slots of each row from c. */
static int realloc_slots(attnref_cache *c, int64_t cap, int with_data, attnref_diag *diag)
{
    int64_t B = c->B, H = c->H;
    int64_t dmax = c->D > c->Dv ? c->D : c->Dv;
    if (cap > ATTNREF_CACHE_MAX_LEN || (cap > 0 && B * H > ATTNREF_MAX_NUMEL / dmax / cap))
        return attnref__fail(diag, ATTNREF_ERANGE,
                             "cache: %" PRId64 " slots per row exceed the size limits", cap);
    size_t n = cap ? (size_t)cap : 1;
    int64_t *pos = malloc((size_t)B * n * sizeof *pos);
    double *k = with_data ? malloc((size_t)(B * H * c->D) * n * sizeof *k) : NULL;
    double *v = with_data ? malloc((size_t)(B * H * c->Dv) * n * sizeof *v) : NULL;
    if (!pos || (with_data && (!k || !v))) {
        free(pos), free(k), free(v);
        return attnref__fail(diag, ATTNREF_ENOMEM, "cache: out of memory for %" PRId64 " slots",
                             cap);
    }
    for (int64_t b = 0; b < B; b++) {
        if (c->T)
            memcpy(pos + b * cap, c->pos + b * c->cap, (size_t)c->T * sizeof *pos);
        if (!with_data || !c->T)
            continue;
        for (int64_t h = 0; h < H; h++) {
            int64_t r = b * H + h;
            memcpy(k + r * cap * c->D, c->k + r * c->cap * c->D, (size_t)(c->T * c->D) * sizeof *k);
            memcpy(v + r * cap * c->Dv, c->v + r * c->cap * c->Dv,
                   (size_t)(c->T * c->Dv) * sizeof *v);
        }
    }
    free(c->pos), free(c->k), free(c->v);
    c->pos = pos, c->k = k, c->v = v, c->cap = cap;
    return ATTNREF_OK;
}

int attnref__cache_reserve(attnref_cache *c, int64_t need, attnref_diag *diag)
{
    if (need <= c->cap && c->pos)
        return ATTNREF_OK;
    if (need > ATTNREF_CACHE_MAX_LEN)
        return attnref__fail(diag, ATTNREF_ERANGE, "cache: %" PRId64 " slots exceed %" PRId64, need,
                             ATTNREF_CACHE_MAX_LEN);
    int64_t cap = c->cap ? c->cap : 16;
    while (cap < need)
        cap *= 2;
    if (cap > ATTNREF_CACHE_MAX_LEN)
        cap = ATTNREF_CACHE_MAX_LEN;
    return realloc_slots(c, cap, !c->shadow, diag);
}

int attnref__cache_copy(const attnref_cache *c, int shadow, attnref_cache **out, attnref_diag *diag)
{
    attnref_cache *d;
    shadow = shadow || c->shadow;
    int rc = attnref__cache_alloc(&c->p, c->B, shadow, &d, diag);
    if (rc != ATTNREF_OK)
        return rc;
    memcpy(d->offset, c->offset, (size_t)c->B * sizeof *d->offset);
    memcpy(d->lp, c->lp, (size_t)c->B * sizeof *d->lp);
    memcpy(d->limit, c->limit, (size_t)c->B * sizeof *d->limit);
    d->appended = c->appended;
    d->has_keys = c->has_keys;
    d->prepared = c->prepared;
    if (c->pos) {
        int64_t cap = c->cap;
        size_t n = (size_t)cap;
        d->pos = malloc((size_t)c->B * n * sizeof *d->pos);
        if (!shadow) {
            d->k = malloc((size_t)(c->B * c->H * c->D) * n * sizeof *d->k);
            d->v = malloc((size_t)(c->B * c->H * c->Dv) * n * sizeof *d->v);
        }
        if (!d->pos || (!shadow && (!d->k || !d->v))) {
            attnref_cache_destroy(d);
            return attnref__fail(diag, ATTNREF_ENOMEM, "cache: out of memory");
        }
        memcpy(d->pos, c->pos, (size_t)c->B * n * sizeof *d->pos);
        if (!shadow) {
            memcpy(d->k, c->k, (size_t)(c->B * c->H * c->D) * n * sizeof *d->k);
            memcpy(d->v, c->v, (size_t)(c->B * c->H * c->Dv) * n * sizeof *d->v);
        }
        d->cap = cap;
        d->T = c->T;
    }
    *out = d;
    return ATTNREF_OK;
}

int attnref_cache_clone(const attnref_cache *c, attnref_cache **out, attnref_diag *diag)
{
    if (!c || !out)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache clone: NULL %s", c ? "out" : "cache");
    int rc = attnref__cache_copy(c, 0, out, diag);
    if (rc == ATTNREF_OK)
        attnref__ok(diag);
    return rc;
}

int attnref_cache_get_info(const attnref_cache *c, attnref_cache_info *info, attnref_diag *diag)
{
    if (!c || !info)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache info: NULL %s", c ? "info" : "cache");
    memset(info, 0, sizeof *info);
    info->kind = c->p.kind;
    info->dtype = c->p.dtype;
    info->batch = c->B;
    info->kv_heads = c->H;
    info->head_dim = c->D;
    info->value_dim = c->Dv;
    info->max_size = c->p.max_size;
    info->keep = c->p.keep;
    info->chunk_size = c->p.chunk_size;
    info->group_size = c->p.group_size;
    info->bits = c->p.bits;
    info->T = c->T;
    info->prepared = c->prepared;
    attnref__ok(diag);
    return ATTNREF_OK;
}

int attnref_cache_offsets(const attnref_cache *c, int64_t *offsets, attnref_diag *diag)
{
    if (!c || !offsets)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache offsets: NULL %s",
                             c ? "offsets" : "cache");
    memcpy(offsets, c->offset, (size_t)c->B * sizeof *offsets);
    attnref__ok(diag);
    return ATTNREF_OK;
}

int attnref_cache_left_padding(const attnref_cache *c, int64_t *left_padding, attnref_diag *diag)
{
    if (!c || !left_padding)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache left_padding: NULL %s",
                             c ? "left_padding" : "cache");
    for (int64_t b = 0; b < c->B; b++)
        left_padding[b] = CACHE_IS_BATCH(c) ? c->lp[b] : 0;
    attnref__ok(diag);
    return ATTNREF_OK;
}

int attnref_cache_positions(const attnref_cache *c, int64_t *positions, attnref_diag *diag)
{
    if (!c || (!positions && c->T > 0))
        return attnref__fail(diag, ATTNREF_EINVAL, "cache positions: NULL %s",
                             c ? "positions" : "cache");
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t j = 0; j < c->T; j++)
            positions[b * c->T + j] = c->pos[b * c->cap + j];
    attnref__ok(diag);
    return ATTNREF_OK;
}

static int check_out(const attnref_cache *c, attnref_tensor *t, const char *name, int64_t dim,
                     attnref_diag *diag)
{
    int rc = attnref_tensor_check(t, name, diag);
    if (rc != ATTNREF_OK)
        return rc;
    if (t->dtype != c->p.dtype)
        return attnref__fail(diag, ATTNREF_EDTYPE, "%s: dtype %s differs from the cache dtype %s",
                             name, attnref_dtype_name(t->dtype), attnref_dtype_name(c->p.dtype));
    int64_t want[4] = {c->B, c->H, c->T, dim};
    if (t->ndim != 4 || memcmp(t->shape, want, sizeof want) != 0) {
        char got[64], exp[64];
        return attnref__fail(diag, ATTNREF_EINVAL, "%s: shape %s, expected %s", name,
                             attnref__shape_str(got, sizeof got, t->ndim, t->shape),
                             attnref__shape_str(exp, sizeof exp, 4, want));
    }
    return ATTNREF_OK;
}

static void copy_out(const attnref_cache *c, const double *src, int64_t dim, attnref_tensor *t)
{
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t h = 0; h < c->H; h++)
            for (int64_t j = 0; j < c->T; j++) {
                int pad = c->pos[b * c->cap + j] < 0;
                const double *row = src + ((b * c->H + h) * c->cap + j) * dim;
                for (int64_t d = 0; d < dim; d++) {
                    int64_t idx[4] = {b, h, j, d};
                    attnref_store(t->data, t->dtype, attnref_tensor_offset(t, idx),
                                  pad ? NAN : row[d]);
                }
            }
}

int attnref_cache_kv(const attnref_cache *c, attnref_tensor *k, attnref_tensor *v,
                     attnref_diag *diag)
{
    if (!c)
        return attnref__fail(diag, ATTNREF_EINVAL, "cache kv: NULL cache");
    int rc;
    if (k && (rc = check_out(c, k, "k", c->D, diag)) != ATTNREF_OK)
        return rc;
    if (v && (rc = check_out(c, v, "v", c->Dv, diag)) != ATTNREF_OK)
        return rc;
    if (k)
        copy_out(c, c->k, c->D, k);
    if (v)
        copy_out(c, c->v, c->Dv, v);
    attnref__ok(diag);
    return ATTNREF_OK;
}
