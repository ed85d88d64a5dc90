/* op_cache.c — `op: cache` cases (cases/FORMAT.md, "Cache cases"): model, strict reader,
 * cross-field rules, deterministic writer and capabilities, one slice over the shared fields
 * (op.h).
 *
 * One table (step_keys) says which keys each step op takes; the reader, the checker and the
 * writer all follow it, so the three cannot disagree on a step's shape. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/cache_case.h"
#include "attnconf/backend.h"
#include "attnref/status.h"
#include "fields.h"
#include "op.h"

_Static_assert((int)ACASE_CACHE_STANDARD == (int)ATTNCONF_CACHE_STANDARD &&
                   (int)ACASE_CACHE_ROTATING == (int)ATTNCONF_CACHE_ROTATING &&
                   (int)ACASE_CACHE_CHUNKED == (int)ATTNCONF_CACHE_CHUNKED &&
                   (int)ACASE_CACHE_QUANTIZED == (int)ATTNCONF_CACHE_QUANTIZED &&
                   (int)ACASE_CACHE_BATCH == (int)ATTNCONF_CACHE_BATCH &&
                   (int)ACASE_CACHE_BATCH_ROTATING == (int)ATTNCONF_CACHE_BATCH_ROTATING,
               "cache kinds are the ABI's values");

/* ---- names and the step table ---------------------------------------------------------- */

static const char *const kind_names[] = {NULL,        "standard", "rotating",      "chunked",
                                         "quantized", "batch",    "batch_rotating"};
#define KIND_MAX ACASE_CACHE_BATCH_ROTATING

const char *acase_cache_kind_name(acase_cache_kind k)
{
    return k >= ACASE_CACHE_STANDARD && k <= KIND_MAX ? kind_names[k] : NULL;
}

/* Keys of a step besides op, cache and expect: R = required, O = optional, else forbidden. */
enum {
    SK_PARAMS,
    SK_K,
    SK_V,
    SK_Q,
    SK_N,
    SK_WINDOW,
    SK_ROWS,
    SK_OTHER,
    SK_CACHES,
    SK_LPAD,
    SK_LENS,
    SK_COUNT
};
static const char *const sk_names[SK_COUNT] = {
    "params", "k", "v", "q", "n", "window", "rows", "other", "caches", "left_padding", "lengths"};
static const struct {
    const char *name;
    acase_cache_op op;
    const char *keys; /* SK_COUNT chars: 'R', 'O' or '-' */
} step_ops[] = {
    {"create", ACASE_CSTEP_CREATE, "R----------"},
    {"update", ACASE_CSTEP_UPDATE, "-RR--------"},
    {"attend", ACASE_CSTEP_ATTEND, "-RRR-O-----"},
    {"trim", ACASE_CSTEP_TRIM, "----R------"},
    {"filter", ACASE_CSTEP_FILTER, "------R----"},
    {"extend", ACASE_CSTEP_EXTEND, "-------R---"},
    {"merge", ACASE_CSTEP_MERGE, "--------R--"},
    {"prepare", ACASE_CSTEP_PREPARE, "---------OO"},
    {"finalize", ACASE_CSTEP_FINALIZE, "-----------"},
};
#define N_STEP_OPS (sizeof step_ops / sizeof step_ops[0])

static int op_index(acase_cache_op op)
{
    for (size_t i = 0; i < N_STEP_OPS; i++)
        if (step_ops[i].op == op)
            return (int)i;
    return -1;
}

const char *acase_cache_op_name(acase_cache_op op)
{
    int i = op_index(op);
    return i < 0 ? NULL : step_ops[i].name;
}

/* ---- model ------------------------------------------------------------------------------ */

acase_cache *acase_cache_new(void)
{
    return calloc(1, sizeof(acase_cache));
}

static void step_free(acase_cache_step *s)
{
    free(s->params.left_padding);
    free(s->k.data);
    free(s->v.data);
    free(s->q.data);
    free(s->rows);
    free(s->left_padding);
    free(s->lengths);
    free(s->offsets);
    free(s->positions);
    free(s->keys);
    free(s->values);
    free(s->keep);
    free(s->out);
    free(s->row_check);
    free(s->row_atol);
}

void acase_cache_free(acase_cache *cc)
{
    if (!cc)
        return;
    free(cc->params.left_padding);
    for (int64_t i = 0; i < cc->nsteps; i++)
        step_free(&cc->steps[i]);
    free(cc->steps);
    free(cc);
}

acase_cache_step *acase_cache_add_step(acase_cache *cc, acase_cache_op op)
{
    if (!cc || cc->nsteps >= ACASE_MAX_CACHE_STEPS)
        return NULL;
    acase_cache_step *ns = realloc(cc->steps, (size_t)(cc->nsteps + 1) * sizeof *ns);
    if (!ns)
        return NULL;
    cc->steps = ns;
    acase_cache_step *s = &ns[cc->nsteps++];
    memset(s, 0, sizeof *s);
    s->op = op;
    return s;
}

/* The params each cache was made with, walking the steps up to `upto` (exclusive); a merged
 * cache takes its first source's (its batch is not used from there).  Returns the number of
 * caches made, or -1 when a step refers to a cache not made yet. */
static int64_t cache_table(const acase_cache *cc, int64_t upto,
                           const acase_cache_params *tab[ACASE_MAX_CACHES])
{
    int64_t n = 1;
    tab[0] = &cc->params;
    for (int64_t i = 0; i < upto && i < cc->nsteps; i++) {
        const acase_cache_step *s = &cc->steps[i];
        if (s->op == ACASE_CSTEP_CREATE || s->op == ACASE_CSTEP_MERGE) {
            if (n >= ACASE_MAX_CACHES)
                return -1;
            if (s->op == ACASE_CSTEP_CREATE)
                tab[n] = &s->params;
            else if (s->nrows >= 1 && s->rows && s->rows[0] >= 0 && s->rows[0] < n)
                tab[n] = tab[s->rows[0]];
            else
                return -1;
            n++;
        }
    }
    return n;
}

const acase_cache_params *acase_cache_params_of(const acase_cache *cc, int64_t step)
{
    const acase_cache_params *tab[ACASE_MAX_CACHES];
    if (!cc || step < 0 || step >= cc->nsteps)
        return NULL;
    int64_t n = cache_table(cc, step + 1, tab);
    int64_t i = cc->steps[step].cache;
    return n < 0 || i < 0 || i >= n ? NULL : tab[i];
}

static uint64_t params_caps(const acase_cache_params *p)
{
    static const uint64_t kind_cap[] = {0,
                                        ATTNCONF_CAP_CACHE_STD,
                                        ATTNCONF_CAP_CACHE_ROTATING,
                                        ATTNCONF_CAP_CACHE_CHUNKED,
                                        ATTNCONF_CAP_CACHE_QUANTIZED,
                                        ATTNCONF_CAP_CACHE_BATCH,
                                        ATTNCONF_CAP_CACHE_BATCH |
                                            ATTNCONF_CAP_CACHE_BATCH_ROTATING};
    uint64_t r = acase__dtype_cap(p->dtype);
    if (p->kind >= ACASE_CACHE_STANDARD && p->kind <= KIND_MAX)
        r |= kind_cap[p->kind];
    return r;
}

uint64_t acase_cache_requires(const acase_cache *cc)
{
    if (!cc)
        return 0;
    uint64_t r = params_caps(&cc->params);
    for (int64_t i = 0; i < cc->nsteps; i++) {
        const acase_cache_step *s = &cc->steps[i];
        switch (s->op) {
        case ACASE_CSTEP_CREATE: r |= params_caps(&s->params); break;
        case ACASE_CSTEP_FILTER:
        case ACASE_CSTEP_EXTEND:
        case ACASE_CSTEP_PREPARE:
        case ACASE_CSTEP_FINALIZE: r |= ATTNCONF_CAP_CACHE_BATCH; break;
        case ACASE_CSTEP_MERGE: {
            /* Merging rotating caches makes a batched rotating one. */
            const acase_cache_params *p = acase_cache_params_of(cc, i);
            r |= ATTNCONF_CAP_CACHE_BATCH;
            if (p && p->kind == ACASE_CACHE_ROTATING)
                r |= ATTNCONF_CAP_CACHE_BATCH_ROTATING;
            break;
        }
        case ACASE_CSTEP_ATTEND: {
            /* The host attends with the backend's sdpa and the cache's BOOL (B,1,S,L) mask. */
            const acase_cache_params *p = acase_cache_params_of(cc, i);
            r |= ATTNCONF_CAP_MASK_BOOL;
            if (s->q.ndim == 4 && s->q.shape[1] != 1)
                r |= ATTNCONF_CAP_MASK_BCAST;
            if (p && s->q.ndim == 4 && s->q.shape[1] != p->kv_heads)
                r |= ATTNCONF_CAP_GQA;
            if (p && p->v_head_dim != p->head_dim)
                r |= ATTNCONF_CAP_DV_NE_D;
            break;
        }
        default: break;
        }
    }
    return r;
}

/* ---- cross-field rules -------------------------------------------------------------------- */

static int check_params(acase__chk *k, const char *path, const acase_cache_params *p)
{
    char f[AYR_FIELD_MAX];
    ayr_fieldf(f, "%s.kind", path);
    if (!acase_cache_kind_name(p->kind))
        return acase__chk_fail(k, f, "unknown cache kind %d", (int)p->kind);
    ayr_fieldf(f, "%s.dtype", path);
    if (!acase__is_float_dtype(p->dtype))
        return acase__chk_fail(k, f, "must be f32, f16 or bf16");
    const struct {
        const char *name;
        int64_t v, lo, hi;
    } ranges[] = {
        {"batch", p->batch, 1, ACASE_MAX_BATCH},
        {"kv_heads", p->kv_heads, 1, 4096},
        {"head_dim", p->head_dim, 1, 65536},
        {"v_head_dim", p->v_head_dim, 1, 65536},
    };
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        ayr_fieldf(f, "%s.%s", path, ranges[i].name);
        if (ranges[i].v < ranges[i].lo || ranges[i].v > ranges[i].hi)
            return acase__chk_fail(k, f, "%lld is not in %lld..%lld", (long long)ranges[i].v,
                                   (long long)ranges[i].lo, (long long)ranges[i].hi);
    }
    int rot = p->kind == ACASE_CACHE_ROTATING, chk = p->kind == ACASE_CACHE_CHUNKED,
        qnt = p->kind == ACASE_CACHE_QUANTIZED, brot = p->kind == ACASE_CACHE_BATCH_ROTATING;
    ayr_fieldf(f, "%s.max_size", path);
    if (rot || brot ? p->max_size < 1 || p->max_size > ACASE_MAX_TENSOR_NUMEL : p->max_size != 0)
        return acase__chk_fail(
            k, f, rot || brot ? "must be >= 1" : "only for kinds rotating, batch_rotating");
    ayr_fieldf(f, "%s.keep", path);
    if (rot ? p->keep < 0 || p->keep >= p->max_size : p->keep != 0)
        return acase__chk_fail(k, f, rot ? "must be in 0..max_size-1" : "only for kind rotating");
    ayr_fieldf(f, "%s.chunk_size", path);
    if (chk ? p->chunk_size < 1 || p->chunk_size > ACASE_MAX_TENSOR_NUMEL : p->chunk_size != 0)
        return acase__chk_fail(k, f, chk ? "must be >= 1" : "only for kind chunked");
    ayr_fieldf(f, "%s.group_size", path);
    if (qnt ? (p->group_size != 32 && p->group_size != 64 && p->group_size != 128) ||
                  p->head_dim % p->group_size || p->v_head_dim % p->group_size
            : p->group_size != 0)
        return acase__chk_fail(k, f,
                               qnt ? "must be 32, 64 or 128 and divide head_dim and v_head_dim"
                                   : "only for kind quantized");
    ayr_fieldf(f, "%s.bits", path);
    if (qnt ? p->bits != 4 && p->bits != 8 : p->bits != 0)
        return acase__chk_fail(k, f, qnt ? "must be 4 or 8" : "only for kind quantized");
    if (p->left_padding) {
        ayr_fieldf(f, "%s.left_padding", path);
        if (p->kind != ACASE_CACHE_BATCH && p->kind != ACASE_CACHE_BATCH_ROTATING)
            return acase__chk_fail(k, f, "only for kinds batch and batch_rotating");
        for (int64_t b = 0; b < p->batch; b++)
            if (p->left_padding[b] < 0 || p->left_padding[b] > ACASE_MAX_TENSOR_NUMEL)
                return acase__chk_fail(k, f, "entry %lld = %lld is negative or too large",
                                       (long long)b, (long long)p->left_padding[b]);
    }
    return 0;
}

/* The step's tensor `name`: rank 4 (B, H, S, last) of the cache dtype. */
static int check_tensor(acase__chk *k, const char *path, const char *name, const acase_tensor *t,
                        const acase_cache_params *p, int64_t heads, int64_t last)
{
    char f[AYR_FIELD_MAX], why[128];
    int64_t n;
    ayr_fieldf(f, "%s.%s", path, name);
    if (!t->present || !t->data)
        return acase__chk_fail(k, f, "required");
    if (t->dtype != p->dtype)
        return acase__chk_fail(k, f, "dtype %s, the cache holds %s", attnref_dtype_name(t->dtype),
                               attnref_dtype_name(p->dtype));
    if (t->layout != ACASE_LAYOUT_BHLD || t->stride0)
        return acase__chk_fail(k, f, "layout and stride0 are not used in cache steps");
    if (acase_numel(t->ndim, t->shape, &n, why, sizeof why) || n != t->numel)
        return acase__chk_fail(k, f, "bad shape: %s", why[0] ? why : "numel mismatch");
    if (t->ndim != 4 || t->shape[2] < 1 || (heads > 0 && t->shape[1] != heads) ||
        t->shape[3] != last)
        return acase__chk_fail(k, f, "must have shape (B, %s, S >= 1, %lld)",
                               heads > 0 ? "Hkv" : "Hq", (long long)last);
    return 0;
}

static int check_step(acase__chk *k, const acase_cache *cc, int64_t i, int64_t ncaches,
                      const acase_cache_params *p)
{
    const acase_cache_step *s = &cc->steps[i];
    char path[AYR_FIELD_MAX], f[AYR_FIELD_MAX];
    ayr_fieldf(path, "steps[%lld]", (long long)i);
    int oi = op_index(s->op);
    if (oi < 0)
        return acase__chk_fail(k, path, "unknown op %d", (int)s->op);
    ayr_fieldf(f, "%s.cache", path);
    if (s->cache < 0 || s->cache >= ncaches || !p)
        return acase__chk_fail(k, f, "cache %lld does not exist (%lld made so far)",
                               (long long)s->cache, (long long)ncaches);
    if (s->error && s->error != ATTNREF_EINVAL && s->error != ATTNREF_EDTYPE)
        return acase__chk_fail(k, path, "expect.error must be einval or edtype");
    switch (s->op) {
    case ACASE_CSTEP_CREATE:
        if (check_params(k, path, &s->params))
            return -1;
        break;
    case ACASE_CSTEP_UPDATE:
    case ACASE_CSTEP_ATTEND:
        if (check_tensor(k, path, "k", &s->k, p, p->kv_heads, p->head_dim) ||
            check_tensor(k, path, "v", &s->v, p, p->kv_heads, p->v_head_dim))
            return -1;
        if (s->k.shape[0] != s->v.shape[0] || s->k.shape[2] != s->v.shape[2])
            return acase__chk_fail(k, path, "k and v must have the same B and S");
        if (s->op == ACASE_CSTEP_ATTEND) {
            if (check_tensor(k, path, "q", &s->q, p, 0, p->head_dim))
                return -1;
            if (s->q.shape[0] != s->k.shape[0] || s->q.shape[2] != s->k.shape[2] ||
                s->q.shape[1] % p->kv_heads)
                return acase__chk_fail(k, path,
                                       "q must be (B, Hq, S, D) with the update's B and S and "
                                       "Hq a multiple of Hkv");
            if (s->window < 0)
                return acase__chk_fail(k, path, "window must be >= 0");
        }
        break;
    case ACASE_CSTEP_FILTER:
    case ACASE_CSTEP_MERGE:
        if (s->nrows < 1 || s->nrows > ACASE_MAX_BATCH || !s->rows)
            return acase__chk_fail(k, path, "needs 1..%d entries", ACASE_MAX_BATCH);
        for (int64_t j = 0; j < s->nrows; j++)
            if (s->rows[j] < 0 || (s->op == ACASE_CSTEP_MERGE && s->rows[j] >= s->cache))
                return acase__chk_fail(k, path, "entry %lld = %lld is out of range", (long long)j,
                                       (long long)s->rows[j]);
        break;
    case ACASE_CSTEP_EXTEND:
        if (s->other < 0 || s->other >= ncaches || s->other == s->cache)
            return acase__chk_fail(k, path, "other = %lld is not another existing cache",
                                   (long long)s->other);
        break;
    case ACASE_CSTEP_PREPARE:
        if (!s->left_padding && !s->lengths)
            return acase__chk_fail(k, path, "needs left_padding or lengths");
        if (s->npad < 1 || s->npad > ACASE_MAX_BATCH)
            return acase__chk_fail(k, path, "padding lists need 1..%d entries", ACASE_MAX_BATCH);
        break;
    default: break;
    }
    if (s->op == ACASE_CSTEP_TRIM && !s->error && (s->returns < 0 || s->returns > s->n))
        return acase__chk_fail(k, path, "expect.returns must be in 0..n");
    /* The state. */
    ayr_fieldf(f, "%s.expect", path);
    if (s->batch < 1 || s->batch > ACASE_MAX_BATCH || s->length < 0 || !s->offsets ||
        (s->length > 0 && !s->positions))
        return acase__chk_fail(k, f, "offset / positions missing or empty");
    int64_t shk[4] = {s->batch, p->kv_heads, s->length, p->head_dim}, nk;
    int64_t shv[4] = {s->batch, p->kv_heads, s->length, p->v_head_dim}, nv;
    if (acase_numel(4, shk, &nk, NULL, 0) || acase_numel(4, shv, &nv, NULL, 0))
        return acase__chk_fail(k, f, "the state is over %lld elements",
                               (long long)ACASE_MAX_TENSOR_NUMEL);
    if ((nk > 0 && !s->keys) || (nv > 0 && !s->values))
        return acase__chk_fail(k, f, "keys / values missing");
    for (int64_t b = 0; b < s->batch; b++) {
        int64_t prev = -1;
        for (int64_t j = 0; j < s->length; j++) {
            int64_t pos = s->positions[b * s->length + j];
            if (pos < -1 || (pos >= 0 && pos <= prev))
                return acase__chk_fail(
                    k, f, "row %lld: positions must be -1 (padding) or increasing", (long long)b);
            if (pos >= 0)
                prev = pos;
        }
    }
    for (int64_t j = 0; j < nk; j++)
        if (!isfinite(s->keys[j]) && !isnan(s->keys[j]))
            return acase__chk_fail(k, f, "keys[%lld] is infinite", (long long)j);
    if (s->op != ACASE_CSTEP_ATTEND || s->error)
        return (s->keep || s->out || s->row_atol || s->row_check)
                   ? acase__chk_fail(k, f, "sees/out/tolerance/row_checks only for an attend step")
                   : 0;
    int64_t S = s->q.shape[2];
    if (s->batch != s->q.shape[0] || !s->keep)
        return acase__chk_fail(k, f, "sees must hold B = %lld rows", (long long)s->q.shape[0]);
    if (!acase__is_float_dtype(s->out_dtype) || s->out_dtype != p->dtype)
        return acase__chk_fail(k, f, "out.dtype must be the cache dtype");
    if (s->out_shape[0] != s->batch || s->out_shape[1] != s->q.shape[1] || s->out_shape[2] != S ||
        s->out_shape[3] != p->v_head_dim || !s->out || !s->row_atol)
        return acase__chk_fail(k, f,
                               "out must be (B, Hq, S, Dv) = [%lld, %lld, %lld, %lld] with a "
                               "tolerance",
                               (long long)s->batch, (long long)s->q.shape[1], (long long)S,
                               (long long)p->v_head_dim);
    if (!isfinite(s->ulps) || s->ulps < 0)
        return acase__chk_fail(k, f, "tolerance.ulps must be finite and >= 0");
    for (int64_t r = 0; r < s->batch * s->q.shape[1] * S; r++)
        if (s->row_check && s->row_check[r] > ACASE_CHECK_FINITE)
            return acase__chk_fail(k, f, "row_checks: row %lld has mode %u", (long long)r,
                                   (unsigned)s->row_check[r]);
    for (int64_t r = 0; r < s->batch * s->q.shape[1] * S; r++)
        if (!isfinite(s->row_atol[r]) || s->row_atol[r] < 0)
            return acase__chk_fail(k, f, "tolerance.row_atol[%lld] must be finite and >= 0",
                                   (long long)r);
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t q = 0; q < S; q++)
            for (int64_t j = 0; j < s->length; j++)
                if (s->keep[(b * S + q) * s->length + j] > 1 ||
                    (s->keep[(b * S + q) * s->length + j] && s->positions[b * s->length + j] < 0))
                    return acase__chk_fail(k, f, "sees: row %lld query %lld sees a padding slot",
                                           (long long)b, (long long)q);
    return 0;
}

static int cache_check(acase__chk *k, const acase *c)
{
    const acase_cache *cc = c->cache;
    if (!cc)
        return acase__chk_fail(k, "steps", "required for op cache");
    if (c->q.present || c->k.present || c->v.present || c->mask.present || c->expected.values ||
        c->expected.error || c->lengths || c->left_padding || c->causal || c->has_scale)
        return acase__chk_fail(k, "inputs", "op cache keeps inputs and expectations in its steps");
    if (check_params(k, "params", &cc->params))
        return -1;
    if (cc->nsteps < 1 || cc->nsteps > ACASE_MAX_CACHE_STEPS || !cc->steps)
        return acase__chk_fail(k, "steps", "expected 1..%d steps", ACASE_MAX_CACHE_STEPS);
    const acase_cache_params *tab[ACASE_MAX_CACHES];
    for (int64_t i = 0; i < cc->nsteps; i++) {
        int64_t n = cache_table(cc, i + 1, tab);
        const acase_cache_step *s = &cc->steps[i];
        if (n < 0)
            return acase__chk_fail(k, "steps",
                                   "step %lld: more than %d caches, or a merge of a cache "
                                   "not made yet",
                                   (long long)i, ACASE_MAX_CACHES);
        if ((s->op == ACASE_CSTEP_CREATE || s->op == ACASE_CSTEP_MERGE) && s->cache != n - 1) {
            char f[AYR_FIELD_MAX];
            ayr_fieldf(f, "steps[%lld].cache", (long long)i);
            return acase__chk_fail(k, f, "a %s step makes cache %lld", acase_cache_op_name(s->op),
                                   (long long)(n - 1));
        }
        const acase_cache_params *p = s->cache >= 0 && s->cache < n ? tab[s->cache] : NULL;
        if (check_step(k, cc, i, n, p))
            return -1;
    }
    return 0;
}

/* ---- reader ------------------------------------------------------------------------------ */

/* Exactly `want` floats (want checked against the tensor limit by the caller). */
static int rd_double_list(acase__rd *r, yaml_node_t *n, const char *field, int64_t want,
                          double **out)
{
    size_t len;
    if (ayr_seq(&r->y, n, field, "a sequence of floats", &len))
        return -1;
    if ((int64_t)len != want)
        return ayr_fail(&r->y, n, field, "has %zu values, the state needs %lld", len,
                        (long long)want);
    if (acase__rd_charge(r, n, field, want))
        return -1;
    double *a = calloc(len ? len : 1, sizeof *a);
    if (!a)
        return ayr_fail(&r->y, n, field, "out of memory");
    if (ayr_items(&r->y, n, field, len, NULL, a)) {
        free(a);
        return -1;
    }
    *out = a;
    return 0;
}

static int rd_kind(acase__rd *r, yaml_node_t *n, const char *field, acase_cache_kind *k)
{
    const char *s;
    if (ayr_str(&r->y, n, field, &s))
        return -1;
    for (int i = ACASE_CACHE_STANDARD; i <= KIND_MAX; i++)
        if (strcmp(s, kind_names[i]) == 0) {
            *k = (acase_cache_kind)i;
            return 0;
        }
    return ayr_fail(&r->y, n, field,
                    "unknown cache kind '%s' (expected standard, rotating, "
                    "chunked, quantized, batch or batch_rotating)",
                    s);
}

static int rd_params(acase__rd *r, yaml_node_t *n, const char *path, acase_cache_params *p)
{
    ayr_field s[] = {{"kind", 1, NULL},       {"dtype", 1, NULL},    {"batch", 1, NULL},
                     {"kv_heads", 1, NULL},   {"head_dim", 1, NULL}, {"v_head_dim", 0, NULL},
                     {"max_size", 0, NULL},   {"keep", 0, NULL},     {"chunk_size", 0, NULL},
                     {"group_size", 0, NULL}, {"bits", 0, NULL},     {"left_padding", 0, NULL}};
    int64_t *ints[] = {NULL,           NULL,           &p->batch,    &p->kv_heads,
                       &p->head_dim,   &p->v_head_dim, &p->max_size, &p->keep,
                       &p->chunk_size, &p->group_size, &p->bits};
    char f[AYR_FIELD_MAX];
    if (ayr_map(&r->y, n, path, s, sizeof s / sizeof s[0]))
        return -1;
    ayr_fieldf(f, "%s.kind", path);
    if (rd_kind(r, s[0].val, f, &p->kind))
        return -1;
    ayr_fieldf(f, "%s.dtype", path);
    if (acase__rd_dtype(&r->y, s[1].val, f, &p->dtype))
        return -1;
    for (size_t i = 2; i < sizeof ints / sizeof ints[0]; i++) {
        ayr_fieldf(f, "%s.%s", path, s[i].key);
        if (s[i].val && ayr_int(&r->y, s[i].val, f, ints[i]))
            return -1;
    }
    if (!s[5].val)
        p->v_head_dim = p->head_dim;
    /* Presence by kind (values are range-checked with the other cross-field rules). */
    /* Which kinds take a key: R required, O optional (by kind 1..6). */
    static const struct {
        int key;
        const char *by_kind;
    } need[] = {{6, "-R---R"}, {7, "-O----"},  {8, "--R---"},
                {9, "---R--"}, {10, "---R--"}, {11, "----OO"}};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        char want = need[i].by_kind[p->kind - 1];
        ayr_fieldf(f, "%s.%s", path, s[need[i].key].key);
        if (want == 'R' && !s[need[i].key].val)
            return ayr_fail(&r->y, n, f, "required key missing (kind %s)", kind_names[p->kind]);
        if (want == '-' && s[need[i].key].val)
            return ayr_fail(&r->y, s[need[i].key].val, f, "not allowed for kind %s",
                            kind_names[p->kind]);
    }
    if (s[11].val) {
        int64_t cnt;
        ayr_fieldf(f, "%s.left_padding", path);
        if (ayr_int_list(&r->y, s[11].val, f, ACASE_MAX_BATCH, &p->left_padding, &cnt))
            return -1;
        if (cnt != p->batch)
            return ayr_fail(&r->y, s[11].val, f, "has %lld entries, batch is %lld", (long long)cnt,
                            (long long)p->batch);
    }
    return 0;
}

/* `sees: [[[pos, ...] per query] per row]` -> keep (B,1,S,L) over the state's positions. */
static int rd_sees(acase__rd *r, yaml_node_t *n, const char *field, acase_cache_step *st, int64_t S)
{
    size_t nb;
    if (ayr_seq(&r->y, n, field, "a sequence (rows) of sequences (queries) of positions", &nb))
        return -1;
    if ((int64_t)nb != st->batch)
        return ayr_fail(&r->y, n, field, "has %zu rows, the state has %lld", nb,
                        (long long)st->batch);
    int64_t sh[4] = {st->batch, 1, S, st->length}, numel;
    char why[128];
    if (acase_numel(4, sh, &numel, why, sizeof why))
        return ayr_fail(&r->y, n, field, "%s", why);
    if (acase__rd_charge(r, n, field, numel))
        return -1;
    if (!(st->keep = calloc((size_t)(numel ? numel : 1), 1)))
        return ayr_fail(&r->y, n, field, "out of memory");
    for (int64_t b = 0; b < st->batch; b++) {
        char fb[AYR_FIELD_MAX];
        yaml_node_t *row = ayr_item_at(&r->y, n, field, (size_t)b, fb);
        size_t nq;
        if (!row || ayr_seq(&r->y, row, fb, "a sequence (queries) of position lists", &nq))
            return -1;
        if ((int64_t)nq != S)
            return ayr_fail(&r->y, row, fb, "has %zu queries, the step has S = %lld", nq,
                            (long long)S);
        for (int64_t q = 0; q < S; q++) {
            char fq[AYR_FIELD_MAX];
            yaml_node_t *ql = ayr_item_at(&r->y, row, fb, (size_t)q, fq);
            size_t np;
            if (!ql || ayr_seq(&r->y, ql, fq, "a sequence of positions", &np))
                return -1;
            int64_t slot = 0;
            for (size_t i = 0; i < np; i++) {
                char fi[AYR_FIELD_MAX];
                int64_t pos;
                yaml_node_t *it = ayr_item_at(&r->y, ql, fq, i, fi);
                if (!it || ayr_int(&r->y, it, fi, &pos))
                    return -1;
                /* Positions increase along the slots, so one forward scan finds each. */
                while (slot < st->length && st->positions[b * st->length + slot] != pos)
                    slot++;
                if (pos < 0 || slot == st->length)
                    return ayr_fail(&r->y, it, fi,
                                    "position %lld is not a later retained "
                                    "position of row %lld",
                                    (long long)pos, (long long)b);
                st->keep[(b * S + q) * st->length + slot] = 1;
                slot++;
            }
        }
    }
    return 0;
}

/* expect: {error?, returns?, offset, positions, keys, values, sees?, out?, tolerance?,
 * row_checks?} */
static int rd_expect(acase__rd *r, yaml_node_t *n, const char *path, acase_cache_step *st,
                     const acase_cache_params *p)
{
    ayr_field s[] = {{"error", 0, NULL},     {"returns", 0, NULL}, {"offset", 1, NULL},
                     {"positions", 1, NULL}, {"keys", 1, NULL},    {"values", 1, NULL},
                     {"sees", 0, NULL},      {"out", 0, NULL},     {"tolerance", 0, NULL},
                     {"row_checks", 0, NULL}};
    char f[AYR_FIELD_MAX], why[128];
    if (ayr_map(&r->y, n, path, s, sizeof s / sizeof s[0]))
        return -1;
    if (s[0].val) {
        const char *name;
        ayr_fieldf(f, "%s.error", path);
        if (ayr_str(&r->y, s[0].val, f, &name))
            return -1;
        if (!(st->error = acase__error_from_name(name)))
            return ayr_fail(&r->y, s[0].val, f,
                            "unknown error '%s' (expected edtype or "
                            "einval)",
                            name);
    }
    int is_trim = st->op == ACASE_CSTEP_TRIM, is_attend = st->op == ACASE_CSTEP_ATTEND;
    ayr_fieldf(f, "%s.returns", path);
    if (is_trim && !st->error && !s[1].val)
        return ayr_fail(&r->y, n, f, "required key missing (a trim step)");
    if (s[1].val && (!is_trim || st->error))
        return ayr_fail(&r->y, s[1].val, f, "only for a trim step that is not rejected");
    if (s[1].val && ayr_int(&r->y, s[1].val, f, &st->returns))
        return -1;
    for (int i = 6; i < 10; i++) {
        ayr_fieldf(f, "%s.%s", path, s[i].key);
        if (is_attend && !st->error && !s[i].val && i < 9)
            return ayr_fail(&r->y, n, f, "required key missing (an attend step)");
        if (s[i].val && (!is_attend || st->error))
            return ayr_fail(&r->y, s[i].val, f, "only for an attend step that is not rejected");
    }
    ayr_fieldf(f, "%s.offset", path);
    if (ayr_int_list(&r->y, s[2].val, f, ACASE_MAX_BATCH, &st->offsets, &st->batch))
        return -1;
    /* positions: B rows of L ints each. */
    size_t nb, len0 = 0;
    ayr_fieldf(f, "%s.positions", path);
    if (ayr_seq(&r->y, s[3].val, f, "a sequence (rows) of position lists", &nb))
        return -1;
    if ((int64_t)nb != st->batch)
        return ayr_fail(&r->y, s[3].val, f, "has %zu rows, offset has %lld", nb,
                        (long long)st->batch);
    for (size_t b = 0; b < nb; b++) {
        char fb[AYR_FIELD_MAX];
        size_t len;
        yaml_node_t *row = ayr_item_at(&r->y, s[3].val, f, b, fb);
        if (!row || ayr_seq(&r->y, row, fb, "a sequence of positions (-1 = padding)", &len))
            return -1;
        if (b == 0) {
            int64_t sh[2] = {st->batch, (int64_t)len}, numel;
            if (acase_numel(2, sh, &numel, why, sizeof why))
                return ayr_fail(&r->y, row, fb, "%s", why);
            if (acase__rd_charge(r, s[3].val, f, numel))
                return -1;
            len0 = len;
            st->length = (int64_t)len;
            if (!(st->positions = calloc((size_t)(numel ? numel : 1), sizeof(int64_t))))
                return ayr_fail(&r->y, row, fb, "out of memory");
        } else if (len != len0) {
            return ayr_fail(&r->y, row, fb,
                            "has %zu slots, row 0 has %zu (rows are padded to "
                            "one length)",
                            len, len0);
        }
        if (ayr_items(&r->y, row, fb, len, &st->positions[b * len0], NULL))
            return -1;
    }
    int64_t shk[4] = {st->batch, p->kv_heads, st->length, p->head_dim}, nk;
    int64_t shv[4] = {st->batch, p->kv_heads, st->length, p->v_head_dim}, nv;
    ayr_fieldf(f, "%s.keys", path);
    if (acase_numel(4, shk, &nk, why, sizeof why))
        return ayr_fail(&r->y, s[4].val, f, "%s", why);
    if (rd_double_list(r, s[4].val, f, nk, &st->keys))
        return -1;
    ayr_fieldf(f, "%s.values", path);
    if (acase_numel(4, shv, &nv, why, sizeof why))
        return ayr_fail(&r->y, s[5].val, f, "%s", why);
    if (rd_double_list(r, s[5].val, f, nv, &st->values))
        return -1;
    if (!is_attend || st->error)
        return 0;
    if (st->q.ndim != 4)
        return ayr_fail(&r->y, n, path, "the step's q must have rank 4");
    ayr_fieldf(f, "%s.sees", path);
    if (rd_sees(r, s[6].val, f, st, st->q.shape[2]))
        return -1;
    /* out: {dtype, shape, data} */
    ayr_field o[] = {{"dtype", 1, NULL}, {"shape", 1, NULL}, {"data", 1, NULL}};
    ayr_fieldf(f, "%s.out", path);
    if (ayr_map(&r->y, s[7].val, f, o, 3))
        return -1;
    ayr_fieldf(f, "%s.out.dtype", path);
    if (acase__rd_dtype(&r->y, o[0].val, f, &st->out_dtype))
        return -1;
    ayr_fieldf(f, "%s.out.shape", path);
    size_t ns;
    if (ayr_seq(&r->y, o[1].val, f, "a sequence of 4 integers", &ns))
        return -1;
    if (ns != 4)
        return ayr_fail(&r->y, o[1].val, f, "expected 4 extents (B, Hq, S, Dv)");
    for (size_t d = 0; d < 4; d++) {
        yaml_node_t *it = ayr_item(&r->y, o[1].val, d);
        if (!it || ayr_int(&r->y, it, f, &st->out_shape[d]))
            return it ? -1 : ayr_fail(&r->y, o[1].val, f, "malformed sequence");
    }
    int64_t no;
    if (acase_numel(4, st->out_shape, &no, why, sizeof why))
        return ayr_fail(&r->y, o[1].val, f, "%s", why);
    ayr_fieldf(f, "%s.out.data", path);
    if (rd_double_list(r, o[2].val, f, no, &st->out))
        return -1;
    ayr_field t[] = {{"ulps", 1, NULL}, {"row_atol", 1, NULL}};
    ayr_fieldf(f, "%s.tolerance", path);
    if (ayr_map(&r->y, s[8].val, f, t, 2))
        return -1;
    ayr_fieldf(f, "%s.tolerance.ulps", path);
    if (ayr_double(&r->y, t[0].val, f, &st->ulps))
        return -1;
    ayr_fieldf(f, "%s.tolerance.row_atol", path);
    int64_t nrows = st->out_shape[0] * st->out_shape[1] * st->out_shape[2];
    if (rd_double_list(r, t[1].val, f, nrows, &st->row_atol))
        return -1;
    return s[9].val ? acase__rd_row_checks(r, s[9].val, path, &st->row_check, nrows) : 0;
}

static int rd_step(acase__rd *r, yaml_node_t *n, int64_t i, acase_cache *cc, int64_t *ncaches)
{
    char path[AYR_FIELD_MAX], f[AYR_FIELD_MAX];
    ayr_fieldf(path, "steps[%lld]", (long long)i);
    ayr_field s[3 + SK_COUNT] = {{"op", 1, NULL}, {"cache", 0, NULL}, {"expect", 1, NULL}};
    for (int k = 0; k < SK_COUNT; k++)
        s[3 + k].key = sk_names[k];
    if (ayr_map(&r->y, n, path, s, sizeof s / sizeof s[0]))
        return -1;
    const char *name;
    ayr_fieldf(f, "%s.op", path);
    if (ayr_str(&r->y, s[0].val, f, &name))
        return -1;
    int oi = -1;
    for (size_t k = 0; k < N_STEP_OPS && oi < 0; k++)
        if (strcmp(step_ops[k].name, name) == 0)
            oi = (int)k;
    if (oi < 0)
        return ayr_fail(&r->y, s[0].val, f,
                        "unknown step op '%s' (expected create, update, "
                        "attend, trim, filter, extend, merge, prepare or finalize)",
                        name);
    acase_cache_step *st = acase_cache_add_step(cc, step_ops[oi].op);
    if (!st)
        return ayr_fail(&r->y, n, path, "out of memory, or more than %d steps",
                        ACASE_MAX_CACHE_STEPS);
    for (int k = 0; k < SK_COUNT; k++) {
        char want = step_ops[oi].keys[k];
        ayr_fieldf(f, "%s.%s", path, sk_names[k]);
        if (want == 'R' && !s[3 + k].val)
            return ayr_fail(&r->y, n, f, "required key missing (op %s)", name);
        if (want == '-' && s[3 + k].val)
            return ayr_fail(&r->y, s[3 + k].val, f, "not allowed for op %s", name);
    }
    int makes = st->op == ACASE_CSTEP_CREATE || st->op == ACASE_CSTEP_MERGE;
    ayr_fieldf(f, "%s.cache", path);
    if (s[1].val && ayr_int(&r->y, s[1].val, f, &st->cache))
        return -1;
    if (makes && s[1].val)
        return ayr_fail(&r->y, s[1].val, f, "not allowed for op %s: it makes cache %lld", name,
                        (long long)*ncaches);
    if (makes) {
        if (*ncaches >= ACASE_MAX_CACHES)
            return ayr_fail(&r->y, n, path, "more than %d caches", ACASE_MAX_CACHES);
        st->cache = *ncaches;
    } else if (st->cache < 0 || st->cache >= *ncaches) {
        return ayr_fail(&r->y, s[1].val, f, "cache %lld does not exist (%lld made so far)",
                        (long long)st->cache, (long long)*ncaches);
    }
    yaml_node_t *v[SK_COUNT]; /* the values by SK_* */
    for (int k = 0; k < SK_COUNT; k++)
        v[k] = s[3 + k].val;
    char fk[AYR_FIELD_MAX];
#define KPATH(key) (ayr_fieldf(fk, "%s.%s", path, (key)), fk)
    if (v[SK_PARAMS] && rd_params(r, v[SK_PARAMS], KPATH("params"), &st->params))
        return -1;
    if (v[SK_K] && acase__rd_tensor(r, v[SK_K], KPATH("k"), &st->k))
        return -1;
    if (v[SK_V] && acase__rd_tensor(r, v[SK_V], KPATH("v"), &st->v))
        return -1;
    if (v[SK_Q] && acase__rd_tensor(r, v[SK_Q], KPATH("q"), &st->q))
        return -1;
    if (v[SK_N] && ayr_int(&r->y, v[SK_N], KPATH("n"), &st->n))
        return -1;
    if (v[SK_WINDOW] && ayr_int(&r->y, v[SK_WINDOW], KPATH("window"), &st->window))
        return -1;
    if (v[SK_ROWS] &&
        ayr_int_list(&r->y, v[SK_ROWS], KPATH("rows"), ACASE_MAX_BATCH, &st->rows, &st->nrows))
        return -1;
    if (v[SK_CACHES] &&
        ayr_int_list(&r->y, v[SK_CACHES], KPATH("caches"), ACASE_MAX_CACHES, &st->rows, &st->nrows))
        return -1;
    if (v[SK_OTHER] && ayr_int(&r->y, v[SK_OTHER], KPATH("other"), &st->other))
        return -1;
    int64_t nl = 0, nr = 0;
    if (v[SK_LPAD] && ayr_int_list(&r->y, v[SK_LPAD], KPATH("left_padding"), ACASE_MAX_BATCH,
                                   &st->left_padding, &nl))
        return -1;
    if (v[SK_LENS] &&
        ayr_int_list(&r->y, v[SK_LENS], KPATH("lengths"), ACASE_MAX_BATCH, &st->lengths, &nr))
        return -1;
#undef KPATH
    if (st->op == ACASE_CSTEP_PREPARE && !nl && !nr)
        return ayr_fail(&r->y, n, path, "prepare needs left_padding or lengths");
    if (nl && nr && nl != nr)
        return ayr_fail(&r->y, v[SK_LENS], path,
                        "left_padding and lengths must have "
                        "as many entries");
    st->npad = nl ? nl : nr;
    if (st->op == ACASE_CSTEP_MERGE)
        for (int64_t j = 0; j < st->nrows; j++)
            if (st->rows[j] < 0 || st->rows[j] >= *ncaches)
                return ayr_fail(&r->y, v[SK_CACHES], path,
                                "merge of cache %lld, which does "
                                "not exist",
                                (long long)st->rows[j]);
    if (makes)
        ++*ncaches;
    /* Looked up again (not kept): cc->steps moves as it grows. */
    const acase_cache_params *p = acase_cache_params_of(cc, i);
    if (!p)
        return ayr_fail(&r->y, n, path, "the step's cache is undefined");
    ayr_fieldf(f, "%s.expect", path);
    return rd_expect(r, s[2].val, f, st, p);
}

static int cache_read(acase__rd *r, const struct acase_op_nodes *nodes, acase *c)
{
    yaml_node_t *params = nodes->params, *steps = nodes->steps, *root = nodes->root;
    /* Its steps hold what the other ops keep in inputs, expected and tolerance. */
    yaml_node_t *x = nodes->inputs     ? nodes->inputs
                     : nodes->expected ? nodes->expected
                                       : nodes->tolerance;
    if (x)
        return ayr_fail(&r->y, x,
                        nodes->inputs     ? "inputs"
                        : nodes->expected ? "expected"
                                          : "tolerance",
                        "not allowed for op cache (its steps hold inputs and expectations)");
    if (!steps)
        return ayr_fail(&r->y, root, "steps", "required key missing (op cache)");
    if (!(c->cache = acase_cache_new()))
        return ayr_fail(&r->y, root, "steps", "out of memory");
    acase_cache *cc = c->cache;
    if (rd_params(r, params, "params", &cc->params))
        return -1;
    size_t n;
    if (ayr_seq(&r->y, steps, "steps", "a sequence of steps", &n))
        return -1;
    if (n < 1 || n > ACASE_MAX_CACHE_STEPS)
        return ayr_fail(&r->y, steps, "steps", "expected 1..%d steps, got %zu",
                        ACASE_MAX_CACHE_STEPS, n);
    /* The steps' structure needs each cache's Hkv / D: a table as the steps make caches.  The
     * params are range-checked first so those sizes are sane. */
    char field[AYR_FIELD_MAX], why[256];
    acase__chk k = {field, sizeof field, why, sizeof why};
    if (check_params(&k, "params", &cc->params))
        return ayr_fail(&r->y, params, field, "%s", why);
    int64_t ncaches = 1;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *it = ayr_item(&r->y, steps, i);
        if (!it)
            return ayr_fail(&r->y, steps, "steps", "malformed sequence");
        if (rd_step(r, it, (int64_t)i, cc, &ncaches))
            return -1;
        const acase_cache_step *st = &cc->steps[i];
        if (st->op == ACASE_CSTEP_CREATE && check_params(&k, "params", &st->params))
            return ayr_fail(&r->y, it, field, "%s", why);
    }
    return 0;
}

/* ---- writer ------------------------------------------------------------------------------ */

static void write_params(ayw *w, const acase_cache_params *p)
{
    ayw_map(w, 1);
    ayw_plain(w, "kind");
    ayw_plain(w, kind_names[p->kind]);
    ayw_plain(w, "dtype");
    ayw_plain(w, attnref_dtype_name(p->dtype));
    ayw_kint(w, "batch", p->batch);
    ayw_kint(w, "kv_heads", p->kv_heads);
    ayw_kint(w, "head_dim", p->head_dim);
    if (p->v_head_dim != p->head_dim)
        ayw_kint(w, "v_head_dim", p->v_head_dim);
    if (p->kind == ACASE_CACHE_ROTATING || p->kind == ACASE_CACHE_BATCH_ROTATING)
        ayw_kint(w, "max_size", p->max_size);
    if (p->kind == ACASE_CACHE_ROTATING)
        ayw_kint(w, "keep", p->keep);
    if (p->kind == ACASE_CACHE_CHUNKED)
        ayw_kint(w, "chunk_size", p->chunk_size);
    if (p->kind == ACASE_CACHE_QUANTIZED) {
        ayw_kint(w, "group_size", p->group_size);
        ayw_kint(w, "bits", p->bits);
    }
    if (p->left_padding)
        ayw_kints(w, "left_padding", p->left_padding, p->batch);
    ayw_map_end(w);
}

static void write_expect(ayw *w, const acase_cache_step *s, const acase_cache_params *p)
{
    ayw_plain(w, "expect");
    ayw_map(w, 1);
    if (s->error) {
        ayw_plain(w, "error");
        ayw_plain(w, acase__error_name(s->error));
    }
    if (s->op == ACASE_CSTEP_TRIM && !s->error)
        ayw_kint(w, "returns", s->returns);
    ayw_kints(w, "offset", s->offsets, s->batch);
    ayw_plain(w, "positions");
    ayw_seq(w, 1);
    for (int64_t b = 0; b < s->batch; b++)
        ayw_ints(w, s->positions + b * s->length, s->length);
    ayw_seq_end(w);
    ayw_plain(w, "keys");
    ayw_doubles(w, s->keys, s->batch * p->kv_heads * s->length * p->head_dim, 1);
    ayw_plain(w, "values");
    ayw_doubles(w, s->values, s->batch * p->kv_heads * s->length * p->v_head_dim, 1);
    if (s->op == ACASE_CSTEP_ATTEND && !s->error) {
        int64_t S = s->q.shape[2];
        ayw_plain(w, "sees");
        ayw_seq(w, 1);
        for (int64_t b = 0; b < s->batch; b++) {
            ayw_seq(w, 1);
            for (int64_t q = 0; q < S; q++) {
                ayw_seq(w, 1);
                for (int64_t j = 0; j < s->length; j++)
                    if (s->keep[(b * S + q) * s->length + j])
                        ayw_int(w, s->positions[b * s->length + j]);
                ayw_seq_end(w);
            }
            ayw_seq_end(w);
        }
        ayw_seq_end(w);
        ayw_plain(w, "out");
        ayw_map(w, 1);
        ayw_plain(w, "dtype");
        ayw_plain(w, attnref_dtype_name(s->out_dtype));
        ayw_kints(w, "shape", s->out_shape, 4);
        ayw_plain(w, "data");
        int64_t no = s->out_shape[0] * s->out_shape[1] * s->out_shape[2] * s->out_shape[3];
        ayw_doubles(w, s->out, no, 0);
        ayw_map_end(w);
        ayw_plain(w, "tolerance");
        ayw_map(w, 1);
        ayw_plain(w, "ulps");
        ayw_double_short(w, s->ulps);
        ayw_plain(w, "row_atol");
        ayw_doubles(w, s->row_atol, s->out_shape[0] * s->out_shape[1] * s->out_shape[2], 1);
        ayw_map_end(w);
        acase__w_row_checks(w, s->row_check, s->out_shape[0] * s->out_shape[1] * s->out_shape[2]);
    }
    ayw_map_end(w);
}

static void cache_write(ayw *w, const acase *c)
{
    const acase_cache *cc = c->cache;
    ayw_plain(w, "params");
    write_params(w, &cc->params);
    ayw_plain(w, "steps");
    ayw_seq(w, 0);
    for (int64_t i = 0; i < cc->nsteps && !w->failed; i++) {
        const acase_cache_step *s = &cc->steps[i];
        const acase_cache_params *p = acase_cache_params_of(cc, i);
        if (!p) {
            w->failed = 1;
            return;
        }
        ayw_map(w, 0);
        ayw_plain(w, "op");
        ayw_plain(w, acase_cache_op_name(s->op));
        if (s->cache && s->op != ACASE_CSTEP_CREATE && s->op != ACASE_CSTEP_MERGE)
            ayw_kint(w, "cache", s->cache);
        switch (s->op) {
        case ACASE_CSTEP_CREATE:
            ayw_plain(w, "params");
            write_params(w, &s->params);
            break;
        case ACASE_CSTEP_UPDATE:
        case ACASE_CSTEP_ATTEND:
            acase__w_tensor(w, "k", &s->k);
            acase__w_tensor(w, "v", &s->v);
            if (s->op == ACASE_CSTEP_ATTEND) {
                acase__w_tensor(w, "q", &s->q);
                if (s->window)
                    ayw_kint(w, "window", s->window);
            }
            break;
        case ACASE_CSTEP_TRIM: ayw_kint(w, "n", s->n); break;
        case ACASE_CSTEP_FILTER: ayw_kints(w, "rows", s->rows, s->nrows); break;
        case ACASE_CSTEP_EXTEND: ayw_kint(w, "other", s->other); break;
        case ACASE_CSTEP_MERGE: ayw_kints(w, "caches", s->rows, s->nrows); break;
        case ACASE_CSTEP_PREPARE:
            if (s->left_padding)
                ayw_kints(w, "left_padding", s->left_padding, s->npad);
            if (s->lengths)
                ayw_kints(w, "lengths", s->lengths, s->npad);
            break;
        default: break;
        }
        write_expect(w, s, p);
        ayw_map_end(w);
    }
    ayw_seq_end(w);
}

/* ---- the op ----------------------------------------------------------------------------- */

static uint64_t cache_requires(const acase *c)
{
    return acase_cache_requires(c->cache);
}

static void cache_free(acase *c)
{
    acase_cache_free(c->cache);
    c->cache = NULL;
}

const struct acase_op_impl acase__op_cache = {.name = "cache",
                                              .op = ACASE_OP_CACHE,
                                              .read = cache_read,
                                              .check = cache_check,
                                              .write = cache_write,
                                              .requires = cache_requires,
                                              .free = cache_free};
