/* fam_cache.c — golden KV cache sequences (families cache.standard, cache.rotating,
 * cache.chunked, cache.quantized, cache.batch; SPEC.md clauses 14-18).
 *
 * A sequence is written as a script of steps on a reference cache (attnref/cache.h); after each
 * step the expectation is read back from the reference: offsets, positions, keys/values and,
 * for attend, the mask and the binary64 output.  Many sequences use head_dim 1 with key = value
 * = the token's absolute position, so a failure names the wrong token.  The end-to-end
 * properties (a cache run equals one-shot attention over the whole sequence; a batch row equals
 * the unbatched run of its own prompt) are checked here, at generation: casegen stops if the
 * reference breaks one.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/cache_case.h"
#include "attnref/cache.h"
#include "attnref/sdpa.h"
#include "casegen.h"

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("casegen: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* ---- the script builder ------------------------------------------------------------------ */

#define VAL_POSITION 1 /* key = value = the token's absolute position (head_dim 1 cases) */
#define VAL_RANDOM 0

typedef struct seq {
    acase *c;
    attnref_cache *ref[ACASE_MAX_CACHES];
    int n;      /* caches made */
    int values; /* VAL_POSITION or VAL_RANDOM */
    int step;   /* steps so far, for tensor seeds */
    /* The attend outputs of cache 0, row-major per attend step, for the one-shot property. */
    double *outs;
    int64_t nouts;
} seq;

static attnref_cache_params ref_params(const acase_cache_params *p)
{
    attnref_cache_params r;
    memset(&r, 0, sizeof r);
    r.kind = (attnref_cache_kind)p->kind;
    r.dtype = p->dtype;
    r.batch = p->batch;
    r.kv_heads = p->kv_heads;
    r.head_dim = p->head_dim;
    r.value_dim = p->v_head_dim;
    r.max_size = p->max_size;
    r.keep = p->keep;
    r.chunk_size = p->chunk_size;
    r.group_size = p->group_size;
    r.bits = p->bits;
    r.left_padding = p->left_padding;
    return r;
}

static void copy_params(acase_cache_params *dst, const acase_cache_params *src)
{
    *dst = *src;
    dst->left_padding = NULL;
    if (src->left_padding) {
        dst->left_padding = malloc((size_t)src->batch * sizeof(int64_t));
        if (!dst->left_padding)
            die("out of memory");
        memcpy(dst->left_padding, src->left_padding, (size_t)src->batch * sizeof(int64_t));
    }
}

static seq *seq_new(const char *id, const char *desc, const char *rule, const acase_cache_params *p,
                    int values)
{
    seq *s = calloc(1, sizeof *s);
    if (!s)
        die("out of memory");
    s->c = cg_new(ACASE_OP_CACHE, id, desc, rule);
    if (!(s->c->cache = acase_cache_new()))
        die("out of memory");
    copy_params(&s->c->cache->params, p);
    attnref_cache_params rp = ref_params(p);
    attnref_diag d;
    if (attnref_cache_create(&rp, &s->ref[0], &d) != ATTNREF_OK)
        die("%s: reference create: %s", id, d.msg);
    s->n = 1;
    s->values = values;
    return s;
}

static acase_cache_step *add(seq *s, acase_cache_op op, int cache)
{
    acase_cache_step *st = acase_cache_add_step(s->c->cache, op);
    if (!st)
        die("%s: too many steps", s->c->id);
    st->cache = cache;
    s->step++;
    return st;
}

static int64_t *xints(const int64_t *a, int64_t n)
{
    int64_t *r = malloc((size_t)(n ? n : 1) * sizeof *r);
    if (!r)
        die("out of memory");
    memcpy(r, a, (size_t)n * sizeof *r);
    return r;
}

/* The state of cache `cache` after the step, from the reference. */
static void snapshot(seq *s, acase_cache_step *st)
{
    attnref_cache *rc = s->ref[st->cache];
    attnref_cache_info in;
    attnref_diag d;
    if (attnref_cache_get_info(rc, &in, &d) != ATTNREF_OK)
        die("%s: info: %s", s->c->id, d.msg);
    st->batch = in.batch;
    st->length = in.T;
    st->offsets = calloc((size_t)in.batch, sizeof(int64_t));
    st->positions = calloc((size_t)(in.batch * in.T + 1), sizeof(int64_t));
    int64_t nk = in.batch * in.kv_heads * in.T * in.head_dim;
    int64_t nv = in.batch * in.kv_heads * in.T * in.value_dim;
    st->keys = calloc((size_t)nk + 1, sizeof(double));
    st->values = calloc((size_t)nv + 1, sizeof(double));
    size_t es = attnref_dtype_size(in.dtype);
    void *kb = calloc((size_t)nk + 1, es), *vb = calloc((size_t)nv + 1, es);
    if (!st->offsets || !st->positions || !st->keys || !st->values || !kb || !vb)
        die("out of memory");
    attnref_tensor kt, vt;
    int64_t shk[4] = {in.batch, in.kv_heads, in.T, in.head_dim};
    int64_t shv[4] = {in.batch, in.kv_heads, in.T, in.value_dim};
    if (attnref_tensor_init(&kt, kb, in.dtype, 4, shk, &d) != ATTNREF_OK ||
        attnref_tensor_init(&vt, vb, in.dtype, 4, shv, &d) != ATTNREF_OK ||
        attnref_cache_offsets(rc, st->offsets, &d) != ATTNREF_OK ||
        attnref_cache_positions(rc, st->positions, &d) != ATTNREF_OK ||
        attnref_cache_kv(rc, &kt, &vt, &d) != ATTNREF_OK)
        die("%s: state: %s", s->c->id, d.msg);
    /* Pad slots are NaN in the reference; the file holds 0 there (never compared). */
    for (int kv = 0; kv < 2; kv++) {
        int64_t dd = kv ? in.value_dim : in.head_dim;
        double *dst = kv ? st->values : st->keys;
        const void *src = kv ? vb : kb;
        for (int64_t b = 0; b < in.batch; b++)
            for (int64_t h = 0; h < in.kv_heads; h++)
                for (int64_t j = 0; j < in.T; j++)
                    for (int64_t e = 0; e < dd; e++) {
                        int64_t at = ((b * in.kv_heads + h) * in.T + j) * dd + e;
                        dst[at] =
                            st->positions[b * in.T + j] < 0 ? 0.0 : attnref_load(src, in.dtype, at);
                    }
    }
    free(kb);
    free(vb);
}

/* k and v of S new tokens for cache `cache`: positions offset[b]..offset[b]+S-1, or random. */
static void new_kv(seq *s, acase_cache_step *st, int cache, int64_t S)
{
    attnref_cache_info in;
    attnref_diag d;
    attnref_cache_get_info(s->ref[cache], &in, &d);
    char name[48];
    if (s->values == VAL_RANDOM) {
        snprintf(name, sizeof name, "s%d.k", s->step);
        cg_gen4(s->c, &st->k, name, in.dtype, in.batch, in.kv_heads, S, in.head_dim, -1.0, 1.0);
        snprintf(name, sizeof name, "s%d.v", s->step);
        cg_gen4(s->c, &st->v, name, in.dtype, in.batch, in.kv_heads, S, in.value_dim, -1.0, 1.0);
        return;
    }
    int64_t off[ACASE_MAX_BATCH];
    attnref_cache_offsets(s->ref[cache], off, &d);
    for (int kv = 0; kv < 2; kv++) {
        int64_t dd = kv ? in.value_dim : in.head_dim;
        int64_t shape[4] = {in.batch, in.kv_heads, S, dd};
        double *vals = malloc((size_t)(in.batch * in.kv_heads * S * dd) * sizeof *vals);
        if (!vals)
            die("out of memory");
        for (int64_t b = 0; b < in.batch; b++)
            for (int64_t h = 0; h < in.kv_heads; h++)
                for (int64_t i = 0; i < S; i++)
                    for (int64_t e = 0; e < dd; e++)
                        vals[((b * in.kv_heads + h) * S + i) * dd + e] = (double)(off[b] + i);
        cg_inline(kv ? &st->v : &st->k, in.dtype, 4, shape, vals);
        free(vals);
    }
}

static attnref_tensor view(const acase_tensor *t)
{
    attnref_tensor v;
    attnref_diag d;
    if (attnref_tensor_init(&v, t->data, t->dtype, t->ndim, t->shape, &d) != ATTNREF_OK)
        die("view: %s", d.msg);
    return v;
}

static void update(seq *s, int cache, int64_t S)
{
    acase_cache_step *st = add(s, ACASE_CSTEP_UPDATE, cache);
    new_kv(s, st, cache, S);
    attnref_tensor k = view(&st->k), v = view(&st->v);
    attnref_diag d;
    if (attnref_cache_update(s->ref[cache], &k, &v, &d) != ATTNREF_OK)
        die("%s: update: %s", s->c->id, d.msg);
    snapshot(s, st);
}

/* An update the cache must reject (EINVAL): S tokens whose element `at` of k is `bad`. */
static void update_rejected(seq *s, int cache, int64_t S, int64_t at, double bad)
{
    acase_cache_step *st = add(s, ACASE_CSTEP_UPDATE, cache);
    new_kv(s, st, cache, S);
    cg_poke(&st->k, at, bad);
    attnref_tensor k = view(&st->k), v = view(&st->v);
    attnref_diag d;
    if (attnref_cache_update(s->ref[cache], &k, &v, &d) != ATTNREF_EINVAL)
        die("%s: the reference accepted an update that must be rejected", s->c->id);
    st->error = ATTNREF_EINVAL;
    snapshot(s, st);
}

/* The clause 13 tolerance of the attention, from casegen's one tolerance function, on the sdpa
 * case this attend amounts to (q over the state with the cache's mask). */
static void attend_tolerance(seq *s, acase_cache_step *st, const acase_cache_params *p)
{
    acase *t = cg_new(ACASE_OP_SDPA, s->c->id, "attend", "tolerance");
    int64_t B = st->batch, L = st->length, S = st->q.shape[2];
    double *kz = malloc((size_t)(B * p->kv_heads * L * p->head_dim + 1) * sizeof(double));
    double *vz = malloc((size_t)(B * p->kv_heads * L * p->v_head_dim + 1) * sizeof(double));
    double *mz = malloc((size_t)(B * S * L + 1) * sizeof(double));
    if (!kz || !vz || !mz)
        die("out of memory");
    memcpy(kz, st->keys, (size_t)(B * p->kv_heads * L * p->head_dim) * sizeof(double));
    memcpy(vz, st->values, (size_t)(B * p->kv_heads * L * p->v_head_dim) * sizeof(double));
    for (int64_t i = 0; i < B * S * L; i++)
        mz[i] = st->keep[i];
    int64_t shk[4] = {B, p->kv_heads, L, p->head_dim}, shv[4] = {B, p->kv_heads, L, p->v_head_dim};
    int64_t shm[4] = {B, 1, S, L};
    cg_inline(&t->k, p->dtype, 4, shk, kz);
    cg_inline(&t->v, p->dtype, 4, shv, vz);
    cg_inline(&t->mask, ATTNREF_BOOL, 4, shm, mz);
    t->q = st->q;
    t->q.data = malloc((size_t)st->q.numel * attnref_dtype_size(p->dtype) + 1);
    if (!t->q.data)
        die("out of memory");
    memcpy(t->q.data, st->q.data, (size_t)st->q.numel * attnref_dtype_size(p->dtype));
    acase_expected *e = &t->expected;
    char err[256];
    e->dtype = p->dtype;
    e->ndim = 4;
    memcpy(e->shape, st->out_shape, sizeof e->shape);
    if (acase_expected_alloc(e, err, sizeof err) != 0)
        die("%s: %s", s->c->id, err);
    memcpy(e->values, st->out, (size_t)e->numel * sizeof(double));
    cg_row_checks(t);
    cg_tolerance(t);
    int64_t rows = B * st->q.shape[1] * S;
    /* A query at a padding position keeps no key: clause 9 makes such an sdpa row exactly 0
     * (sdpa.fully_masked checks that); in a cache sequence the row is a pad token's output,
     * which models discard, so it only has to be finite here. */
    for (int64_t r = 0; t->expected.row_check && r < rows; r++)
        if (t->expected.row_check[r] != ACASE_CHECK_CLOSE) {
            if (!st->row_check && !(st->row_check = calloc((size_t)rows, 1)))
                die("out of memory");
            st->row_check[r] = ACASE_CHECK_FINITE;
        }
    st->ulps = t->ulps;
    st->row_atol = malloc((size_t)(rows + 1) * sizeof(double));
    if (!st->row_atol)
        die("out of memory");
    memcpy(st->row_atol, t->row_atol, (size_t)rows * sizeof(double));
    free(kz);
    free(vz);
    free(mz);
    acase_free(t);
}

/* S new tokens attended by q (B, hq, S, D) through cache `cache`, with a model window (0 =
 * the cache's own). */
static void attend(seq *s, int cache, int64_t S, int64_t hq, int64_t window)
{
    acase_cache_step *st = add(s, ACASE_CSTEP_ATTEND, cache);
    const acase_cache_params *p = acase_cache_params_of(s->c->cache, s->c->cache->nsteps - 1);
    attnref_cache_info in;
    attnref_diag d;
    attnref_cache_get_info(s->ref[cache], &in, &d);
    new_kv(s, st, cache, S);
    char name[48];
    snprintf(name, sizeof name, "s%d.q", s->step);
    cg_gen4(s->c, &st->q, name, in.dtype, in.batch, hq, S, in.head_dim, -1.0, 1.0);
    st->window = window;
    int64_t shape[4];
    if (attnref_cache_mask_shape(s->ref[cache], S, shape, &d) != ATTNREF_OK)
        die("%s: mask shape: %s", s->c->id, d.msg);
    uint8_t *keep = calloc((size_t)(shape[0] * shape[2] * shape[3] + 1), 1);
    if (!keep)
        die("out of memory");
    attnref_tensor kt;
    if (attnref_tensor_init(&kt, keep, ATTNREF_BOOL, 4, shape, &d) != ATTNREF_OK ||
        attnref_cache_make_mask(s->ref[cache], S, window, &kt, &d) != ATTNREF_OK)
        die("%s: make_mask: %s", s->c->id, d.msg);
    st->out_dtype = in.dtype;
    st->out_shape[0] = in.batch;
    st->out_shape[1] = hq;
    st->out_shape[2] = S;
    st->out_shape[3] = in.value_dim;
    int64_t no = in.batch * hq * S * in.value_dim;
    if (!(st->out = malloc((size_t)(no + 1) * sizeof(double))))
        die("out of memory");
    attnref_tensor q = view(&st->q), k = view(&st->k), v = view(&st->v);
    if (attnref_cache_attend(s->ref[cache], &q, &k, &v, window, NULL, st->out, &d) != ATTNREF_OK)
        die("%s: attend: %s", s->c->id, d.msg);
    snapshot(s, st);
    if (shape[3] != st->length)
        die("%s: the mask has %lld keys, the cache %lld", s->c->id, (long long)shape[3],
            (long long)st->length);
    st->keep = keep;
    if (p)
        attend_tolerance(s, st, p);
    if (cache == 0) {
        double *o = realloc(s->outs, (size_t)(s->nouts + no) * sizeof *o);
        if (!o)
            die("out of memory");
        memcpy(o + s->nouts, st->out, (size_t)no * sizeof *o);
        s->outs = o;
        s->nouts += no;
    }
}

static void trim(seq *s, int cache, int64_t n)
{
    acase_cache_step *st = add(s, ACASE_CSTEP_TRIM, cache);
    st->n = n;
    attnref_diag d;
    int rc = attnref_cache_trim(s->ref[cache], n, &st->returns, &d);
    if (rc != ATTNREF_OK) {
        if (rc != ATTNREF_EINVAL)
            die("%s: trim: %s", s->c->id, d.msg);
        st->error = ATTNREF_EINVAL;
        st->returns = 0;
    }
    snapshot(s, st);
}

static void create(seq *s, const acase_cache_params *p)
{
    acase_cache_step *st = add(s, ACASE_CSTEP_CREATE, s->n);
    copy_params(&st->params, p);
    attnref_cache_params rp = ref_params(p);
    attnref_diag d;
    if (attnref_cache_create(&rp, &s->ref[s->n], &d) != ATTNREF_OK)
        die("%s: create: %s", s->c->id, d.msg);
    s->n++;
    snapshot(s, st);
}

static void filter(seq *s, int cache, const int64_t *rows, int64_t n)
{
    acase_cache_step *st = add(s, ACASE_CSTEP_FILTER, cache);
    st->rows = xints(rows, n);
    st->nrows = n;
    attnref_diag d;
    if (attnref_cache_filter(s->ref[cache], rows, n, &d) != ATTNREF_OK)
        die("%s: filter: %s", s->c->id, d.msg);
    snapshot(s, st);
}

static void extend(seq *s, int cache, int other)
{
    acase_cache_step *st = add(s, ACASE_CSTEP_EXTEND, cache);
    st->other = other;
    attnref_diag d;
    if (attnref_cache_extend(s->ref[cache], s->ref[other], &d) != ATTNREF_OK)
        die("%s: extend: %s", s->c->id, d.msg);
    snapshot(s, st);
}

static void merge(seq *s, const int64_t *from, int64_t n)
{
    acase_cache_step *st = add(s, ACASE_CSTEP_MERGE, s->n);
    st->rows = xints(from, n);
    st->nrows = n;
    const attnref_cache *src[ACASE_MAX_CACHES];
    for (int64_t i = 0; i < n; i++)
        src[i] = s->ref[from[i]];
    attnref_diag d;
    if (attnref_cache_merge(src, n, &s->ref[s->n], &d) != ATTNREF_OK)
        die("%s: merge: %s", s->c->id, d.msg);
    s->n++;
    snapshot(s, st);
}

static void prepare(seq *s, int cache, const int64_t *left, const int64_t *lengths, int64_t n)
{
    acase_cache_step *st = add(s, ACASE_CSTEP_PREPARE, cache);
    st->left_padding = left ? xints(left, n) : NULL;
    st->lengths = lengths ? xints(lengths, n) : NULL;
    st->npad = n;
    attnref_diag d;
    if (attnref_cache_prepare(s->ref[cache], left, lengths, &d) != ATTNREF_OK)
        die("%s: prepare: %s", s->c->id, d.msg);
    snapshot(s, st);
}

static void finalize(seq *s, int cache)
{
    acase_cache_step *st = add(s, ACASE_CSTEP_FINALIZE, cache);
    attnref_diag d;
    if (attnref_cache_finalize(s->ref[cache], &d) != ATTNREF_OK)
        die("%s: finalize: %s", s->c->id, d.msg);
    snapshot(s, st);
}

/* Require the last step's retained positions of row 0 (a check on the script itself, so a
 * report's numbers stay what the report says). */
static void require_positions(seq *s, const int64_t *want, int64_t n)
{
    const acase_cache *cc = s->c->cache;
    const acase_cache_step *st = &cc->steps[cc->nsteps - 1];
    int ok = st->length == n;
    for (int64_t j = 0; ok && j < n; j++)
        ok = st->positions[j] == want[j];
    if (!ok)
        die("%s: step %lld retains other positions than the report says", s->c->id,
            (long long)(cc->nsteps - 1));
}

static void emit(cg *g, seq *s)
{
    for (int i = 0; i < s->n; i++)
        attnref_cache_destroy(s->ref[i]);
    free(s->outs);
    cg_emit(g, s->c);
    free(s);
}

/* ---- end-to-end properties ---------------------------------------------------------------- */

/* Every attend output of cache 0 (a non-batched cache fed one sequence) must equal one-shot
 * causal attention over the whole sequence: rebuild q, k, v of the whole run from the steps and
 * compare row by row (1e-12 relative: the same f64 sums over the same kept keys). */
static void require_one_shot(seq *s, int64_t window)
{
    const acase_cache *cc = s->c->cache;
    const acase_cache_params *p = &cc->params;
    int64_t total = 0, hq = 0;
    for (int64_t i = 0; i < cc->nsteps; i++)
        if (cc->steps[i].op == ACASE_CSTEP_ATTEND) {
            total += cc->steps[i].q.shape[2];
            hq = cc->steps[i].q.shape[1];
        } else if (cc->steps[i].op != ACASE_CSTEP_CREATE) {
            die("%s: the one-shot property needs attend steps only", s->c->id);
        }
    int64_t B = p->batch, H = p->kv_heads, D = p->head_dim, Dv = p->v_head_dim;
    size_t es = attnref_dtype_size(p->dtype);
    char *q = calloc((size_t)(B * hq * total * D), es),
         *k = calloc((size_t)(B * H * total * D), es);
    char *v = calloc((size_t)(B * H * total * Dv), es);
    double *out = malloc((size_t)(B * hq * total * Dv) * sizeof *out);
    if (!q || !k || !v || !out)
        die("out of memory");
    int64_t at = 0;
    for (int64_t i = 0; i < cc->nsteps; i++) {
        const acase_cache_step *st = &cc->steps[i];
        int64_t S = st->q.shape[2];
        for (int64_t b = 0; b < B; b++)
            for (int64_t t = 0; t < S; t++) {
                for (int64_t h = 0; h < hq; h++)
                    memcpy(q + (((b * hq + h) * total + at + t) * D) * es,
                           (char *)st->q.data + (((b * hq + h) * S + t) * D) * es, (size_t)D * es);
                for (int64_t h = 0; h < H; h++) {
                    memcpy(k + (((b * H + h) * total + at + t) * D) * es,
                           (char *)st->k.data + (((b * H + h) * S + t) * D) * es, (size_t)D * es);
                    memcpy(v + (((b * H + h) * total + at + t) * Dv) * es,
                           (char *)st->v.data + (((b * H + h) * S + t) * Dv) * es, (size_t)Dv * es);
                }
            }
        at += S;
    }
    attnref_tensor qt, kt, vt;
    attnref_diag d;
    int64_t shq[4] = {B, hq, total, D}, shk[4] = {B, H, total, D}, shv[4] = {B, H, total, Dv};
    attnref_tensor_init(&qt, q, p->dtype, 4, shq, &d);
    attnref_tensor_init(&kt, k, p->dtype, 4, shk, &d);
    attnref_tensor_init(&vt, v, p->dtype, 4, shv, &d);
    attnref_sdpa_params sp;
    memset(&sp, 0, sizeof sp);
    sp.causal = 1;
    sp.window = window;
    if (attnref_sdpa_f64(&qt, &kt, &vt, NULL, &sp, out, &d) != ATTNREF_OK)
        die("%s: one-shot sdpa: %s", s->c->id, d.msg);
    /* s->outs holds each attend's (B, hq, S, Dv) block in step order. */
    int64_t off = 0;
    at = 0;
    for (int64_t i = 0; i < cc->nsteps; i++) {
        const acase_cache_step *st = &cc->steps[i];
        int64_t S = st->q.shape[2];
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < hq; h++)
                for (int64_t t = 0; t < S; t++)
                    for (int64_t e = 0; e < Dv; e++) {
                        double got = s->outs[off + ((b * hq + h) * S + t) * Dv + e];
                        double want = out[((b * hq + h) * total + at + t) * Dv + e];
                        if (fabs(got - want) > 1e-12 * (fabs(want) + 1e-300) + 1e-300)
                            die("%s: step %lld: attention through the cache (%.17g) differs "
                                "from one-shot attention (%.17g)",
                                s->c->id, (long long)i, got, want);
                    }
        off += B * hq * S * Dv;
        at += S;
    }
    free(q);
    free(k);
    free(v);
    free(out);
}

/* ---- the families ------------------------------------------------------------------------- */

static acase_cache_params P(acase_cache_kind kind, attnref_dtype dt, int64_t b, int64_t h,
                            int64_t d)
{
    acase_cache_params p;
    memset(&p, 0, sizeof p);
    p.kind = kind;
    p.dtype = dt;
    p.batch = b;
    p.kv_heads = h;
    p.head_dim = d;
    p.v_head_dim = d;
    return p;
}

static void fam_standard(cg *g)
{
    acase_cache_params p1 = P(ACASE_CACHE_STANDARD, ATTNREF_F32, 1, 1, 1);
    seq *s;
    for (int i = 0; i < 3; i++) {
        char id[96];
        /* The report: trim(7) then trim(4) on 10 tokens; trim(-5) rejected. */
        acase_cache_params pt = P(ACASE_CACHE_STANDARD, CG_DTYPES[i], 1, 1, 1);
        cg_id_dt(id, sizeof id, "cache.standard.trim_report", CG_DTYPES[i]);
        s = seq_new(id,
                    "A standard cache holding 10 tokens (key = value = position): trim(-5) "
                    "is rejected and changes nothing (mlx-lm 0.32 grows the offset instead); "
                    "trim(7) returns 7, then trim(4) returns the 3 left; the next block starts "
                    "again at position 0.",
                    "clause14.trim", &pt, VAL_POSITION);
        cg_rule(s->c, "clause14.trim_negative");
        update(s, 0, 10);
        trim(s, 0, -5);
        trim(s, 0, 7);
        trim(s, 0, 4);
        attend(s, 0, 2, 1, 0);
        emit(g, s);
    }

    /* Prefill, decodes, a chunk: every attend equals one-shot causal attention. */
    for (int i = 0; i < 3; i++) {
        char id[96];
        acase_cache_params p = P(ACASE_CACHE_STANDARD, CG_DTYPES[i], 1, 1, 1);
        cg_id_dt(id, sizeof id, "cache.standard.decode_positions", CG_DTYPES[i]);
        s = seq_new(id,
                    "Head_dim 1, key = value = position: a 3-token prefill, three decodes "
                    "and a 2-token chunk attend through the cache; each query sees exactly the "
                    "positions up to its own, and the outputs equal one-shot causal attention.",
                    "clause14.append", &p, VAL_POSITION);
        cg_rule(s->c, "clause14.mask");
        attend(s, 0, 3, 1, 0);
        for (int j = 0; j < 3; j++)
            attend(s, 0, 1, 1, 0);
        attend(s, 0, 2, 1, 0);
        require_one_shot(s, 0);
        emit(g, s);

        p = P(ACASE_CACHE_STANDARD, CG_DTYPES[i], 2, 2, 16);
        p.v_head_dim = 8;
        cg_id_dt(id, sizeof id, "cache.standard.end_to_end", CG_DTYPES[i]);
        s = seq_new(id,
                    "End to end (B 2, Hq 4 over Hkv 2, D 16, Dv 8, random data): prefill 5, "
                    "three decodes, a chunked prefill of 4 and one more decode on one cache "
                    "give the outputs of one-shot causal attention over the 13 tokens.",
                    "clause14.one_shot", &p, VAL_RANDOM);
        attend(s, 0, 5, 4, 0);
        for (int j = 0; j < 3; j++)
            attend(s, 0, 1, 4, 0);
        attend(s, 0, 4, 4, 0);
        attend(s, 0, 1, 4, 0);
        require_one_shot(s, 0);
        emit(g, s);
    }

    /* Boundary values (cases/EDGES.md): trim(0) is a no-op that returns 0. */
    for (int i = 0; i < 2; i++) {
        char id[96];
        acase_cache_params pz = P(ACASE_CACHE_STANDARD, CG_DTYPES[i], 1, 1, 1);
        cg_id_dt(id, sizeof id, "cache.standard.trim_zero", CG_DTYPES[i]);
        s = seq_new(id,
                    "trim(0) on 4 tokens returns 0 and changes nothing; the next token takes "
                    "position 4 (boundary value, cases/EDGES.md).",
                    "clause14.trim", &pz, VAL_POSITION);
        update(s, 0, 4);
        trim(s, 0, 0);
        attend(s, 0, 1, 1, 0);
        emit(g, s);
    }

    s = seq_new("cache.standard.trim_then_attend",
                "Trim rewinds: after 6 tokens and trim(2), the next 2-token block takes positions "
                "4 and 5 again and its queries see [0..4] and [0..5].",
                "clause14.trim", &p1, VAL_POSITION);
    update(s, 0, 6);
    trim(s, 0, 2);
    attend(s, 0, 2, 1, 0);
    emit(g, s);
}

static void fam_rotating(cg *g)
{
    acase_cache_params p = P(ACASE_CACHE_ROTATING, ATTNREF_F32, 1, 1, 1);
    p.max_size = 4;
    static const int64_t a[] = {2, 3, 4, 5}, b[] = {3, 4, 5, 6}, c[] = {3, 4, 5, 6, 7};
    seq *s = seq_new("cache.rotating.report_single_tokens",
                     "The report (a): max_size 4, keep 0, six single-token updates: the cache "
                     "retains positions [2,3,4,5] and every decode query sees exactly those.",
                     "clause15.retain_single", &p, VAL_POSITION);
    for (int j = 0; j < 6; j++)
        attend(s, 0, 1, 1, 0);
    require_positions(s, a, 4);
    emit(g, s);

    s = seq_new("cache.rotating.report_long_prefill",
                "The report (b): max_size 4: one 6-token update is stored whole (every query of "
                "the chunk sees its own last 4 positions), then one single-token update retains "
                "[3,4,5,6].",
                "clause15.first_chunk", &p, VAL_POSITION);
    cg_rule(s->c, "clause15.retain_single");
    attend(s, 0, 6, 1, 0);
    attend(s, 0, 1, 1, 0);
    require_positions(s, b, 4);
    emit(g, s);

    s = seq_new("cache.rotating.report_chunk_after_decode",
                "The report (c): max_size 4: a 3-token prefill, three decodes, then a 2-token "
                "chunk; the chunk keeps max_size - 1 + 2 = 5 positions [3..7]; the query at "
                "position 6 sees [3,4,5,6] and the one at 7 sees [4,5,6,7].",
                "clause15.retain_multi", &p, VAL_POSITION);
    cg_rule(s->c, "clause15.mask_window");
    attend(s, 0, 3, 1, 0);
    for (int j = 0; j < 3; j++)
        attend(s, 0, 1, 1, 0);
    attend(s, 0, 2, 1, 0);
    require_positions(s, c, 5);
    emit(g, s);

    acase_cache_params p8 = p;
    p8.max_size = 8;
    s = seq_new("cache.rotating.report_trim_after_wrap",
                "The report: max_size 8 fed 20 single tokens: trim(3) returns 0 and changes "
                "nothing, and the next update still shows the right 8 tokens [13..20].",
                "clause15.trim_wrapped", &p8, VAL_POSITION);
    for (int j = 0; j < 20; j++)
        update(s, 0, 1);
    trim(s, 0, 3);
    attend(s, 0, 1, 1, 0);
    emit(g, s);

    s = seq_new("cache.rotating.trim_before_wrap",
                "max_size 8 holding 5 tokens (no eviction yet): trim(2) returns 2 and the next "
                "token takes position 3.",
                "clause15.trim", &p8, VAL_POSITION);
    update(s, 0, 5);
    trim(s, 0, 2);
    attend(s, 0, 1, 1, 0);
    emit(g, s);

    acase_cache_params pk = p;
    pk.max_size = 6;
    pk.keep = 2;
    s = seq_new("cache.rotating.keep",
                "max_size 6, keep 2: after 10 single tokens the cache holds [0,1,6,7,8,9] (the "
                "first 2 are never evicted) and a decode query sees those it is allowed to.",
                "clause15.keep", &pk, VAL_POSITION);
    for (int j = 0; j < 10; j++)
        attend(s, 0, 1, 1, 0);
    emit(g, s);

    s = seq_new("cache.rotating.model_window",
                "max_size 8 with a model window of 3 (as a sliding-window layer asks): a 5-token "
                "prefill then decodes see only the last 3 positions.",
                "clause15.mask_window", &p8, VAL_POSITION);
    attend(s, 0, 5, 1, 3);
    for (int j = 0; j < 4; j++)
        attend(s, 0, 1, 1, 3);
    emit(g, s);

    /* Boundary value (cases/EDGES.md): a first update longer than max_size, in random data,
     * attends as one-shot causal attention with a window of max_size. */
    for (int i = 1; i < 3; i++) {
        char id[96];
        acase_cache_params pl = P(ACASE_CACHE_ROTATING, CG_DTYPES[i], 1, 1, 8);
        pl.max_size = 4;
        cg_id_dt(id, sizeof id, "cache.rotating.long_prefill", CG_DTYPES[i]);
        s = seq_new(id,
                    "max_size 4, one 7-token prefill (past max_size) then two decodes, random "
                    "data: each output equals one-shot causal attention with a window of 4 "
                    "(boundary value, cases/EDGES.md).",
                    "clause15.first_chunk", &pl, VAL_RANDOM);
        attend(s, 0, 7, 2, 0);
        attend(s, 0, 1, 2, 0);
        attend(s, 0, 1, 2, 0);
        require_one_shot(s, 4);
        emit(g, s);
    }

    for (int i = 0; i < 3; i++) {
        char id[96];
        acase_cache_params pe = P(ACASE_CACHE_ROTATING, CG_DTYPES[i], 1, 2, 16);
        pe.max_size = 6;
        cg_id_dt(id, sizeof id, "cache.rotating.end_to_end", CG_DTYPES[i]);
        s = seq_new(id,
                    "End to end (Hq 4 over Hkv 2, D 16, random): max_size 6; prefill 4, "
                    "decodes past the wrap-around, a 3-token chunk: every output equals one-shot "
                    "causal attention with a window of 6 over the whole sequence.",
                    "clause15.retain_multi", &pe, VAL_RANDOM);
        cg_rule(s->c, "clause15.mask_window");
        attend(s, 0, 4, 4, 0);
        for (int j = 0; j < 5; j++)
            attend(s, 0, 1, 4, 0);
        attend(s, 0, 3, 4, 0);
        attend(s, 0, 1, 4, 0);
        require_one_shot(s, 6);
        emit(g, s);
    }
}

static void fam_chunked(cg *g)
{
    acase_cache_params p = P(ACASE_CACHE_CHUNKED, ATTNREF_F32, 1, 1, 1);
    p.chunk_size = 4;
    seq *s = seq_new("cache.chunked.positions",
                     "chunk_size 4, key = value = position: a 6-token prefill (queries 4 and 5 "
                     "see only their own chunk [4..]), decodes across the next chunk boundary "
                     "drop the keys before the current chunk.",
                     "clause16.retain", &p, VAL_POSITION);
    cg_rule(s->c, "clause16.mask_chunk");
    attend(s, 0, 6, 1, 0);
    for (int j = 0; j < 4; j++)
        attend(s, 0, 1, 1, 0);
    attend(s, 0, 3, 1, 0);
    emit(g, s);

    for (int i = 0; i < 3; i++) {
        char id[96];
        acase_cache_params pe = P(ACASE_CACHE_CHUNKED, CG_DTYPES[i], 1, 2, 8);
        pe.chunk_size = 3;
        cg_id_dt(id, sizeof id, "cache.chunked.random", CG_DTYPES[i]);
        s = seq_new(id,
                    "chunk_size 3, Hq 4 over Hkv 2, D 8, random data: prefill 4, decodes, "
                    "a 2-token chunk, trim(1) and a decode.",
                    "clause16.mask_chunk", &pe, VAL_RANDOM);
        cg_rule(s->c, "clause16.trim");
        attend(s, 0, 4, 4, 0);
        attend(s, 0, 1, 4, 0);
        attend(s, 0, 1, 4, 0);
        attend(s, 0, 2, 4, 0);
        trim(s, 0, 1);
        attend(s, 0, 1, 4, 0);
        emit(g, s);
    }
}

static void fam_quantized(cg *g)
{
    static const struct {
        attnref_dtype dt;
        int64_t group, bits, d;
        const char *stem;
    } qs[] = {
        {ATTNREF_F16, 32, 4, 64, "cache.quantized.g32_b4"},
        {ATTNREF_BF16, 64, 8, 64, "cache.quantized.g64_b8"},
        {ATTNREF_F32, 128, 4, 128, "cache.quantized.g128_b4"},
        {ATTNREF_F16, 64, 8, 128, "cache.quantized.g64_b8"},
    };
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        char id[96];
        acase_cache_params p = P(ACASE_CACHE_QUANTIZED, qs[i].dt, 1, 2, qs[i].d);
        p.group_size = qs[i].group;
        p.bits = qs[i].bits;
        cg_id_dt(id, sizeof id, qs[i].stem, qs[i].dt);
        seq *s = seq_new(id,
                         "Quantized cache, random data: the keys/values read back are the "
                         "dequantized values of SPEC clause 17 exactly, and attention through "
                         "the cache is within the sdpa tolerance.",
                         "clause17.formula", &p, VAL_RANDOM);
        attend(s, 0, 5, 4, 0);
        attend(s, 0, 1, 4, 0);
        attend(s, 0, 2, 4, 0);
        trim(s, 0, 1);
        attend(s, 0, 1, 2, 0);
        emit(g, s);
    }

    /* Ties: a group 0..15 in steps of 0.5 under 4 bits has scale 1 and codes at exact halves;
     * half to even and half away from zero give different values. */
    for (int t = 0; t < 3; t++) {
        char id[96];
        acase_cache_params p = P(ACASE_CACHE_QUANTIZED, CG_DTYPES[t], 1, 1, 32);
        p.group_size = 32;
        p.bits = 4;
        cg_id_dt(id, sizeof id, "cache.quantized.ties_b4", CG_DTYPES[t]);
        seq *s = seq_new(id,
                         "4-bit groups whose values fall exactly halfway between two codes "
                         "(0, 0.5, 1, ..., 15 and back, scale 1): SPEC clause 17 rounds ties to "
                         "even, so 0.5 reads back as 0, 1.5 as 2, 2.5 as 2.",
                         "clause17.ties_even", &p, VAL_RANDOM);
        acase_cache_step *st = add(s, ACASE_CSTEP_UPDATE, 0);
        double vals[64];
        for (int i = 0; i < 32; i++) {
            vals[i] = i < 31 ? 0.5 * i : 15.0;
            vals[32 + i] = 15.0 - vals[i];
        }
        int64_t shape[4] = {1, 1, 2, 32};
        cg_inline(&st->k, CG_DTYPES[t], 4, shape, vals);
        cg_inline(&st->v, CG_DTYPES[t], 4, shape, vals);
        attnref_tensor k = view(&st->k), v = view(&st->v);
        attnref_diag d;
        if (attnref_cache_update(s->ref[0], &k, &v, &d) != ATTNREF_OK)
            die("%s: update: %s", s->c->id, d.msg);
        snapshot(s, st);
        if (st->keys[1] != 0.0 || st->keys[5] != 2.0)
            die("%s: clause 17 no longer rounds ties to even", s->c->id);
        attend(s, 0, 1, 1, 0);
        emit(g, s);
    }

    /* A constant group: scale 0, every code 0, the value back exactly. */
    acase_cache_params pc = P(ACASE_CACHE_QUANTIZED, ATTNREF_F16, 1, 1, 64);
    pc.group_size = 32;
    pc.bits = 8;
    seq *s = seq_new("cache.quantized.constant_group.f16",
                     "A constant f16 group of -1.75 (and one of 0.0) next to a varying one: the "
                     "scale is 0, every code 0, and the values read back exactly.",
                     "clause17.constant_group", &pc, VAL_RANDOM);
    acase_cache_step *st = add(s, ACASE_CSTEP_UPDATE, 0);
    double vals[64];
    for (int i = 0; i < 64; i++)
        vals[i] = i < 32 ? -1.75 : (i % 2 ? 0.25 * (i - 32) : 0.0);
    int64_t shape[4] = {1, 1, 1, 64};
    cg_inline(&st->k, ATTNREF_F16, 4, shape, vals);
    for (int i = 0; i < 64; i++)
        vals[i] = i < 32 ? 0.0 : -0.125 * (i - 32);
    cg_inline(&st->v, ATTNREF_F16, 4, shape, vals);
    attnref_tensor k = view(&st->k), v = view(&st->v);
    attnref_diag d;
    if (attnref_cache_update(s->ref[0], &k, &v, &d) != ATTNREF_OK)
        die("%s: update: %s", s->c->id, d.msg);
    snapshot(s, st);
    for (int i = 0; i < 32; i++)
        if (st->keys[i] != -1.75 || st->values[i] != 0.0)
            die("%s: a constant group does not read back exactly", s->c->id);
    attend(s, 0, 1, 1, 0);
    emit(g, s);

    acase_cache_params pn = P(ACASE_CACHE_QUANTIZED, ATTNREF_F32, 1, 2, 32);
    pn.group_size = 32;
    pn.bits = 4;
    s = seq_new("cache.quantized.nonfinite.f32",
                "A key holding NaN cannot be quantized: the update is rejected (einval) and the "
                "cache keeps its 3 tokens; the next block attends as if it never came.",
                "clause17.nonfinite", &pn, VAL_RANDOM);
    attend(s, 0, 3, 2, 0);
    update_rejected(s, 0, 1, 5, NAN);
    attend(s, 0, 1, 2, 0);
    emit(g, s);
}

static void fam_batch(cg *g)
{
    acase_cache_params p = P(ACASE_CACHE_BATCH, ATTNREF_F32, 2, 1, 1);
    int64_t lp[] = {2, 0};
    p.left_padding = lp;
    seq *s = seq_new("cache.batch.left_padding_decode",
                     "Batch of 2, left padding [2, 0], key = value = position: a 4-token prefill "
                     "(row 0's first two tokens are padding) then decodes (N = 1): a decode query "
                     "of row 0 never sees the pad slots (poisoned with NaN by the reference).",
                     "clause18.left_padding", &p, VAL_POSITION);
    cg_rule(s->c, "clause18.mask");
    attend(s, 0, 4, 1, 0);
    for (int j = 0; j < 3; j++)
        attend(s, 0, 1, 1, 0);
    emit(g, s);

    for (int i = 0; i < 3; i++) {
        char id[96];
        acase_cache_params pw = P(ACASE_CACHE_BATCH, CG_DTYPES[i], 2, 1, 1);
        int64_t lp2[] = {1, 2};
        pw.left_padding = lp2;
        cg_id_dt(id, sizeof id, "cache.batch.write_position", CG_DTYPES[i]);
        s = seq_new(id,
                    "Batch of 2 with left padding [1, 2] in both rows: after a 3-token "
                    "prefill the row offsets are [2, 1] but the next token goes to slot 3 (the "
                    "stored length), not to the largest offset.",
                    "clause18.left_padding", &pw, VAL_POSITION);
        attend(s, 0, 3, 1, 0);
        attend(s, 0, 1, 1, 0);
        attend(s, 0, 1, 1, 0);
        emit(g, s);
    }

    acase_cache_params p3 = P(ACASE_CACHE_BATCH, ATTNREF_F32, 3, 1, 1);
    int64_t lp3[] = {3, 1, 2};
    p3.left_padding = lp3;
    s = seq_new("cache.batch.filter",
                "Batch of 3 with left padding [3, 1, 2]: filter keeps rows [2, 0]; the padding "
                "both still share (2 slots) is dropped; decodes continue.",
                "clause18.filter", &p3, VAL_POSITION);
    attend(s, 0, 5, 1, 0);
    static const int64_t rows[] = {2, 0};
    filter(s, 0, rows, 2);
    attend(s, 0, 1, 1, 0);
    emit(g, s);

    acase_cache_params pa = P(ACASE_CACHE_BATCH, ATTNREF_F32, 1, 1, 1);
    int64_t z[] = {0};
    pa.left_padding = z;
    s = seq_new("cache.batch.extend",
                "Two batched caches of 5 and 2 tokens: extend joins them, left-padding the "
                "shorter one by 3; a decode of both rows attends correctly.",
                "clause18.extend", &pa, VAL_POSITION);
    attend(s, 0, 5, 1, 0);
    create(s, &pa);
    attend(s, 1, 2, 1, 0);
    extend(s, 0, 1);
    attend(s, 0, 1, 1, 0);
    emit(g, s);

    acase_cache_params ps = P(ACASE_CACHE_STANDARD, ATTNREF_F32, 1, 1, 1);
    s = seq_new("cache.batch.merge",
                "Three standard caches of 4, 1 and 6 tokens merged into one batch (left padding "
                "[2, 5, 0]); decodes of the batch see each row's own positions only.",
                "clause18.merge", &ps, VAL_POSITION);
    attend(s, 0, 4, 1, 0);
    create(s, &ps);
    attend(s, 1, 1, 1, 0);
    create(s, &ps);
    attend(s, 2, 6, 1, 0);
    static const int64_t from[] = {0, 1, 2};
    merge(s, from, 3);
    attend(s, 3, 1, 1, 0);
    attend(s, 3, 1, 1, 0);
    emit(g, s);

    acase_cache_params pr = P(ACASE_CACHE_ROTATING, ATTNREF_F32, 1, 1, 1);
    pr.max_size = 4;
    s = seq_new("cache.batch.merge_rotating",
                "Two rotating caches (max_size 4) of 6 and 2 tokens merged into a batched "
                "rotating cache; decodes wrap around per row.",
                "clause18.merge", &pr, VAL_POSITION);
    cg_rule(s->c, "clause18.rotating_evict");
    attend(s, 0, 6, 1, 0);
    create(s, &pr);
    attend(s, 1, 2, 1, 0);
    static const int64_t from2[] = {0, 1};
    merge(s, from2, 2);
    for (int j = 0; j < 3; j++)
        attend(s, 2, 1, 1, 0);
    emit(g, s);

    acase_cache_params pbr = P(ACASE_CACHE_BATCH_ROTATING, ATTNREF_F32, 2, 1, 1);
    int64_t lpr[] = {2, 0};
    pbr.max_size = 4;
    pbr.left_padding = lpr;
    s = seq_new("cache.batch.rotating_decode",
                "A batched rotating cache (max_size 4, left padding [2, 0]): a 5-token prefill "
                "evicts one column (row 0 loses a pad, row 1 a token), then four decodes wrap "
                "around; every query sees its row's last 4 positions and never a pad.",
                "clause18.rotating_evict", &pbr, VAL_POSITION);
    cg_rule(s->c, "clause18.mask");
    attend(s, 0, 5, 1, 0);
    for (int j = 0; j < 4; j++)
        attend(s, 0, 1, 1, 0);
    emit(g, s);

    pbr.max_size = 6;
    pbr.left_padding = NULL;
    s = seq_new("cache.batch.rotating_prepare_finalize",
                "A batched rotating cache (max_size 6) prefilled with right-padded prompts of "
                "lengths [5, 3]: prepare(lengths), a 5-token update, finalize moves row 1's two "
                "trailing pads to the front; decodes then see only real tokens.",
                "clause18.prepare_finalize", &pbr, VAL_POSITION);
    cg_rule(s->c, "clause18.rotating_evict");
    static const int64_t lens2[] = {5, 3};
    prepare(s, 0, NULL, lens2, 2);
    update(s, 0, 5);
    finalize(s, 0);
    for (int j = 0; j < 3; j++)
        attend(s, 0, 1, 1, 0);
    emit(g, s);

    acase_cache_params pp = P(ACASE_CACHE_BATCH, ATTNREF_F32, 2, 1, 1);
    pp.left_padding = NULL;
    s = seq_new("cache.batch.prepare_finalize",
                "Right-padded prompts of lengths [4, 2] in a batch of 2: prepare(lengths), a "
                "4-token prefill, finalize turns row 1's 2 trailing pads into left padding; the "
                "decodes that follow see only real tokens.",
                "clause18.prepare_finalize", &pp, VAL_POSITION);
    static const int64_t lens[] = {4, 2};
    prepare(s, 0, NULL, lens, 2);
    update(s, 0, 4);
    finalize(s, 0);
    for (int j = 0; j < 2; j++)
        attend(s, 0, 1, 1, 0);
    emit(g, s);

    /* Every row of a batch equals the unbatched run of its own prompt. */
    for (int i = 0; i < 3; i++) {
        char id[96];
        acase_cache_params pb = P(ACASE_CACHE_BATCH, CG_DTYPES[i], 3, 2, 8);
        int64_t lpb[] = {0, 3, 1};
        pb.left_padding = lpb;
        cg_id_dt(id, sizeof id, "cache.batch.rows_equal_unbatched", CG_DTYPES[i]);
        s = seq_new(id,
                    "Batch of 3 prompts of 6, 3 and 5 tokens (left padding [0, 3, 1], Hq 4 "
                    "over Hkv 2, D 8, random): after the prefill and three decodes, every "
                    "valid row equals the run of its own prompt on an unbatched cache.",
                    "clause18.row_equals_single", &pb, VAL_RANDOM);
        attend(s, 0, 6, 4, 0);
        for (int j = 0; j < 3; j++)
            attend(s, 0, 1, 4, 0);
        /* The property: rerun each row alone and compare its valid queries. */
        const acase_cache *cc = s->c->cache;
        for (int64_t row = 0; row < 3; row++) {
            acase_cache_params one = P(ACASE_CACHE_STANDARD, CG_DTYPES[i], 1, 2, 8);
            attnref_cache_params rp = ref_params(&one);
            attnref_cache *rc;
            attnref_diag d;
            if (attnref_cache_create(&rp, &rc, &d) != ATTNREF_OK)
                die("%s: %s", id, d.msg);
            for (int64_t k = 0; k < cc->nsteps; k++) {
                const acase_cache_step *st = &cc->steps[k];
                int64_t S = st->q.shape[2], skip = k == 0 ? lpb[row] : 0;
                size_t es = attnref_dtype_size(CG_DTYPES[i]);
                /* Row `row`'s tokens of this step, without its pads. */
                attnref_tensor q, kk, vv;
                int64_t shq[4] = {1, 4, S - skip, 8}, shk[4] = {1, 2, S - skip, 8};
                char *qb = malloc((size_t)(4 * S * 8) * es), *kb = malloc((size_t)(2 * S * 8) * es);
                char *vb = malloc((size_t)(2 * S * 8) * es);
                double *o = malloc((size_t)(4 * S * 8) * sizeof(double));
                if (!qb || !kb || !vb || !o)
                    die("out of memory");
                for (int64_t h = 0; h < 4; h++)
                    memcpy(qb + (size_t)(h * (S - skip) * 8) * es,
                           (char *)st->q.data + (size_t)(((row * 4 + h) * S + skip) * 8) * es,
                           (size_t)((S - skip) * 8) * es);
                for (int64_t h = 0; h < 2; h++) {
                    memcpy(kb + (size_t)(h * (S - skip) * 8) * es,
                           (char *)st->k.data + (size_t)(((row * 2 + h) * S + skip) * 8) * es,
                           (size_t)((S - skip) * 8) * es);
                    memcpy(vb + (size_t)(h * (S - skip) * 8) * es,
                           (char *)st->v.data + (size_t)(((row * 2 + h) * S + skip) * 8) * es,
                           (size_t)((S - skip) * 8) * es);
                }
                attnref_tensor_init(&q, qb, CG_DTYPES[i], 4, shq, &d);
                attnref_tensor_init(&kk, kb, CG_DTYPES[i], 4, shk, &d);
                attnref_tensor_init(&vv, vb, CG_DTYPES[i], 4, shk, &d);
                if (attnref_cache_attend(rc, &q, &kk, &vv, 0, NULL, o, &d) != ATTNREF_OK)
                    die("%s: unbatched attend: %s", id, d.msg);
                for (int64_t h = 0; h < 4; h++)
                    for (int64_t t = skip; t < S; t++)
                        for (int64_t e = 0; e < 8; e++) {
                            double want = o[(h * (S - skip) + t - skip) * 8 + e];
                            double got = st->out[((row * 4 + h) * S + t) * 8 + e];
                            if (fabs(got - want) > 1e-12 * fabs(want) + 1e-300)
                                die("%s: step %lld row %lld differs from its unbatched run "
                                    "(%.17g vs %.17g)",
                                    id, (long long)k, (long long)row, got, want);
                        }
                free(qb);
                free(kb);
                free(vb);
                free(o);
            }
            attnref_cache_destroy(rc);
        }
        emit(g, s);
    }
}

/* ---- boundary values of the cache operations (cases/EDGES.md, issue 20) ------------------------
 *
 * One operation's edge each, key = value = position (head_dim 1) unless the edge is in the
 * values, in f16 and bf16 (f32 where a mutant needs a third case, or where an older f32 case
 * already poses it): keep = max_size - 1, a 128-wide quantization group in 8 bits, filter
 * keeping one row and reordering rows (both dropping the padding the kept rows share), extend
 * with the other cache shorter, longer and empty, merge of one cache, of unequal lengths and of
 * rotating caches, prepare with a length of 0 before a chunked prefill, prepare with left
 * padding, and finalize with and without right padding to move. */

static const attnref_dtype HALF[2] = {ATTNREF_F16, ATTNREF_BF16};

static void edges_rotating_quantized(cg *g, attnref_dtype dt)
{
    char id[96];
    acase_cache_params pk = P(ACASE_CACHE_ROTATING, dt, 1, 1, 1);
    pk.max_size = 4;
    pk.keep = 3;
    cg_id_dt(id, sizeof id, "cache.rotating.keep_last", dt);
    seq *s = seq_new(id,
                     "max_size 4, keep 3 (= max_size - 1, a ring of one slot): a 3-token "
                     "prefill, four decodes and a 2-token chunk; the first 3 positions are never "
                     "evicted and each query sees them with its own latest tokens.",
                     "clause15.keep", &pk, VAL_POSITION);
    attend(s, 0, 3, 1, 0);
    for (int j = 0; j < 4; j++)
        attend(s, 0, 1, 1, 0);
    attend(s, 0, 2, 1, 0);
    emit(g, s);

    acase_cache_params pq = P(ACASE_CACHE_QUANTIZED, dt, 1, 1, 128);
    pq.group_size = 128;
    pq.bits = 8;
    cg_id_dt(id, sizeof id, "cache.quantized.g128_b8", dt);
    s = seq_new(id,
                "A quantized cache with one 128-wide group per row in 8 bits, random data: the "
                "keys/values read back are clause 17's dequantized values (one scale and bias "
                "over all 128 elements, not two groups of 64).",
                "clause17.formula", &pq, VAL_RANDOM);
    attend(s, 0, 3, 2, 0);
    attend(s, 0, 1, 2, 0);
    emit(g, s);
}

static void edges_filter(cg *g, attnref_dtype dt)
{
    char id[96];
    acase_cache_params p3 = P(ACASE_CACHE_BATCH, dt, 3, 1, 1);
    int64_t lp3[] = {3, 1, 2};
    p3.left_padding = lp3;
    cg_id_dt(id, sizeof id, "cache.batch.filter_one", dt);
    seq *s = seq_new(id,
                     "Batch of 3 with left padding [3, 1, 2]: filter keeps row 0 alone; its 3 "
                     "leading pads are dropped (2 slots left), and a decode sees positions 0..2.",
                     "clause18.filter", &p3, VAL_POSITION);
    attend(s, 0, 5, 1, 0);
    static const int64_t one[] = {0};
    filter(s, 0, one, 1);
    attend(s, 0, 1, 1, 0);
    emit(g, s);

    cg_id_dt(id, sizeof id, "cache.batch.filter_reorder", dt);
    s = seq_new(id,
                "Batch of 3 with left padding [3, 1, 2]: filter keeps rows [2, 0] in that order; "
                "the 2 pads both still share are dropped, and decodes continue per row.",
                "clause18.filter", &p3, VAL_POSITION);
    attend(s, 0, 5, 1, 0);
    static const int64_t two[] = {2, 0};
    filter(s, 0, two, 2);
    attend(s, 0, 1, 1, 0);
    attend(s, 0, 1, 1, 0);
    emit(g, s);
}

/* extend of a batched cache holding `mine` tokens by one holding `theirs` (0: empty). */
static void edges_extend(cg *g, attnref_dtype dt, const char *stem, int64_t mine, int64_t theirs,
                         const char *desc)
{
    char id[96];
    acase_cache_params pa = P(ACASE_CACHE_BATCH, dt, 1, 1, 1);
    int64_t z[] = {0};
    pa.left_padding = z;
    cg_id_dt(id, sizeof id, stem, dt);
    seq *s = seq_new(id, desc, "clause18.extend", &pa, VAL_POSITION);
    attend(s, 0, mine, 1, 0);
    create(s, &pa);
    if (theirs)
        attend(s, 1, theirs, 1, 0);
    extend(s, 0, 1);
    attend(s, 0, 1, 1, 0);
    attend(s, 0, 1, 1, 0);
    emit(g, s);
}

static void edges_merge(cg *g, attnref_dtype dt)
{
    char id[96];
    acase_cache_params ps = P(ACASE_CACHE_STANDARD, dt, 1, 1, 1);
    cg_id_dt(id, sizeof id, "cache.batch.merge_one", dt);
    seq *s = seq_new(id,
                     "One standard cache of 3 tokens merged alone: a batch of one row with no "
                     "padding; decodes continue at positions 3 and 4.",
                     "clause18.merge", &ps, VAL_POSITION);
    attend(s, 0, 3, 1, 0);
    static const int64_t from1[] = {0};
    merge(s, from1, 1);
    attend(s, 1, 1, 1, 0);
    attend(s, 1, 1, 1, 0);
    emit(g, s);

    cg_id_dt(id, sizeof id, "cache.batch.merge_unequal", dt);
    s = seq_new(id,
                "Three standard caches of 4, 1 and 6 tokens merged into one batch: the shorter "
                "rows are padded on the left (left padding [2, 5, 0]), and decodes see each "
                "row's own positions only.",
                "clause18.merge", &ps, VAL_POSITION);
    attend(s, 0, 4, 1, 0);
    create(s, &ps);
    attend(s, 1, 1, 1, 0);
    create(s, &ps);
    attend(s, 2, 6, 1, 0);
    static const int64_t from3[] = {0, 1, 2};
    merge(s, from3, 3);
    attend(s, 3, 1, 1, 0);
    attend(s, 3, 1, 1, 0);
    emit(g, s);

    acase_cache_params pr = P(ACASE_CACHE_ROTATING, dt, 1, 1, 1);
    pr.max_size = 4;
    cg_id_dt(id, sizeof id, "cache.batch.merge_rotating", dt);
    s = seq_new(id,
                "Two rotating caches (max_size 4) of 6 tokens (wrapped: it holds [2..5]) and 2 "
                "merged into a batched rotating cache: row 1 is padded on the left by 2; decodes "
                "wrap around per row.",
                "clause18.merge", &pr, VAL_POSITION);
    cg_rule(s->c, "clause18.rotating_evict");
    attend(s, 0, 6, 1, 0);
    create(s, &pr);
    attend(s, 1, 2, 1, 0);
    static const int64_t from2[] = {0, 1};
    merge(s, from2, 2);
    for (int j = 0; j < 3; j++)
        attend(s, 2, 1, 1, 0);
    emit(g, s);
}

static void edges_prepare_chunked(cg *g, attnref_dtype dt)
{
    char id[96];
    acase_cache_params pp = P(ACASE_CACHE_BATCH, dt, 3, 1, 1);
    cg_id_dt(id, sizeof id, "cache.batch.prepare_chunked", dt);
    seq *s = seq_new(id,
                     "Right-padded prompts of lengths [6, 0, 4] (row 1 empty: all padding) "
                     "prefilled in two chunks of 4 and 2 between prepare and finalize: finalize "
                     "moves each row's trailing pads to the front (row 1 all pads), and decodes "
                     "see only real tokens.",
                     "clause18.prepare_finalize", &pp, VAL_POSITION);
    static const int64_t lens[] = {6, 0, 4};
    prepare(s, 0, NULL, lens, 3);
    update(s, 0, 4);
    update(s, 0, 2);
    finalize(s, 0);
    attend(s, 0, 1, 1, 0);
    attend(s, 0, 1, 1, 0);
    emit(g, s);
}

static void edges_prepare_left(cg *g, attnref_dtype dt)
{
    char id[96];
    acase_cache_params pp = P(ACASE_CACHE_BATCH, dt, 2, 1, 1);
    cg_id_dt(id, sizeof id, "cache.batch.prepare_left_padding", dt);
    seq *s = seq_new(id,
                     "prepare(left_padding [1, 3]) on an empty batch of 2, a 4-token prefill "
                     "(each row's first slots are pads), then prepare(lengths [2, 2]) for a "
                     "2-token chunk with no right padding: finalize moves nothing; a decode sees "
                     "only real tokens.",
                     "clause18.prepare_finalize", &pp, VAL_POSITION);
    cg_rule(s->c, "clause18.left_padding");
    static const int64_t left[] = {1, 3}, lens[] = {2, 2};
    prepare(s, 0, left, NULL, 2);
    attend(s, 0, 4, 1, 0);
    prepare(s, 0, NULL, lens, 2);
    update(s, 0, 2);
    finalize(s, 0);
    attend(s, 0, 1, 1, 0);
    emit(g, s);
}

static void fam_cache_edges(cg *g)
{
    for (int i = 0; i < 2; i++) {
        const attnref_dtype dt = HALF[i];
        edges_rotating_quantized(g, dt);
        edges_filter(g, dt);
        edges_extend(g, dt, "cache.batch.extend_shorter", 5, 2,
                     "Two batched caches of 5 and 2 tokens: extend left-pads the shorter other "
                     "by 3; decodes of both rows see their own positions.");
        edges_extend(g, dt, "cache.batch.extend_empty", 3, 0,
                     "A batched cache of 3 tokens extended by an empty one: the new row is all "
                     "padding (3 slots) and its first decode sees only itself, at position 0.");
        edges_merge(g, dt);
        edges_prepare_left(g, dt);
    }
    for (int i = 0; i < 3; i++) {
        /* three dtypes: mutants cache_extend_pad_self and cache_prepare_zero_full each need
         * three cases */
        edges_extend(g, CG_DTYPES[i], "cache.batch.extend_longer", 2, 5,
                     "A batched cache of 2 tokens extended by one of 5: this time the cache's "
                     "own row is left-padded by 3; decodes of both rows see their own positions.");
        edges_prepare_chunked(g, CG_DTYPES[i]);
    }
}

void fam_cache(cg *g)
{
    fam_standard(g);
    fam_rotating(g);
    fam_chunked(g);
    fam_quantized(g);
    fam_batch(g);
    fam_cache_edges(g);
}
