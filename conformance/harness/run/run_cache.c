/* run_cache.c — run a cache case step by step (cases/FORMAT.md "Cache cases", SPEC 14-18).
 *
 * After every step the harness reads the cache's state through cache_state and compares it
 * exactly with the step's expectation: row offsets, retained absolute positions in time order,
 * and the keys/values of every non-padding slot.  An attend step is what one attention layer of
 * a model does: cache_make_mask for the S new queries, cache_update with their keys/values, then
 * the backend's own sdpa of q over the state's keys/values with that mask (pad slots included:
 * the reference poisons them with NaN, so attending to one shows).  The first difference ends
 * the case with a message naming the step, its op and what differed.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */

#include "run_cache.h"
#include "run_step.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "attncase/cache_case.h"
#include "attnref/status.h"
#include "run/compare.h"
#include "backend/call.h"
#include "backend/plugin.h"
#include "common/clip.h"

typedef struct rch {
    run_step st; /* the backend, the result, where we are, its last_error (run_step.h) */
    const acase *c;
    void *caches[ACASE_MAX_CACHES];
    int64_t i; /* the current step */
} rch;

/* The return code of a step's call against what the step expects.  Returns 1 when the case is
 * decided (a failure, or an expected rejection whose state still needs checking returns 0). */
static int rch_rc(rch *x, const acase_cache_step *s, const char *call, int rc)
{
    return run_step_rc(&x->st, s->error, call, rc);
}

/* A read-only copy of a step's input (k, v, q), as run.c gives sdpa inputs: a backend that
 * writes into one faults, and the worker reports the case as CRASH.  *map / *len: the mapping
 * to unmap (NULL when it could not be made: then the case's own buffer is used). */
static void rch_input(attnconf_tensor *t, const acase_tensor *a, void **map, size_t *len)
{
    size_t n = (size_t)a->numel * attnref_dtype_size(a->dtype);
    void *data = a->data;
    *map = NULL;
    *len = n ? n : 1;
    void *m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED) {
        memcpy(m, a->data, n);
        if (mprotect(m, *len, PROT_READ) == 0) {
            *map = m;
            data = m;
        } else {
            munmap(m, *len);
        }
    }
    hb_tensor4(t, data, (int32_t)a->dtype, a->shape[0], a->shape[1], a->shape[2], a->shape[3]);
}

static void rch_unmap(void *map, size_t len)
{
    if (map)
        munmap(map, len);
}

/* "[3,4,5]" (at most 32 entries, then "...") */
static void list_text(const int64_t *a, int64_t n, const uint8_t *pick, char *buf, size_t cap)
{
    size_t j = (size_t)snprintf(buf, cap, "[");
    int shown = 0;
    for (int64_t i = 0; i < n && j < cap; i++) {
        if (pick && !pick[i])
            continue;
        if (shown == 32) {
            j += (size_t)snprintf(buf + j, cap - j, ",...");
            break;
        }
        j += (size_t)snprintf(buf + j, cap - j, "%s%lld", shown ? "," : "", (long long)a[i]);
        shown++;
    }
    if (j < cap)
        snprintf(buf + j, cap - j, "]");
}

/* The state the backend holds, read with cache_state (sizes first, then the buffers). */
typedef struct rch_state {
    int64_t batch, length;
    int64_t *offsets, *positions;
    void *keys, *values;
    attnconf_tensor kt, vt;
} rch_state;

static void state_free(rch_state *st)
{
    free(st->offsets);
    free(st->positions);
    free(st->keys);
    free(st->values);
    memset(st, 0, sizeof *st);
}

static int rch_read_state(rch *x, void *cache, const acase_cache_params *p, rch_state *st)
{
    attnconf_cache_state a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    int rc = hb_cache_state(x->st.hb, cache, &a);
    if (rc == ATTNCONF_EINEXPRESSIBLE) {
        run_step_fail(&x->st, rc, HR_FAIL, "cache_state");
        return -1;
    }
    if (rc != ATTNCONF_OK) {
        run_step_set(&x->st, hb_transport_failure(x->st.hb, rc) ? HR_ERROR : HR_FAIL,
                     "cache_state returned %s: %s", hb_code_name(rc), run_step_err(&x->st));
        return -1;
    }
    int64_t shk[4] = {a.batch, p->kv_heads, a.length, p->head_dim}, nk;
    int64_t shv[4] = {a.batch, p->kv_heads, a.length, p->v_head_dim}, nv;
    if (a.batch < 1 || a.batch > ACASE_MAX_BATCH || a.length < 0 ||
        acase_numel(4, shk, &nk, NULL, 0) || acase_numel(4, shv, &nv, NULL, 0)) {
        run_step_set(&x->st, HR_FAIL, "cache_state reports batch %lld, length %lld (out of range)",
                     (long long)a.batch, (long long)a.length);
        return -1;
    }
    size_t es = attnref_dtype_size(p->dtype);
    st->batch = a.batch;
    st->length = a.length;
    st->offsets = calloc((size_t)a.batch, sizeof(int64_t));
    st->positions = calloc((size_t)(a.batch * a.length + 1), sizeof(int64_t));
    st->keys = malloc((size_t)nk * es + 1);
    st->values = malloc((size_t)nv * es + 1);
    if (!st->offsets || !st->positions || !st->keys || !st->values) {
        run_step_set(&x->st, HR_ERROR, "harness: out of memory for the cache state");
        return -1;
    }
    /* Unwritten elements read as NaN (0xFF..), like the sdpa output buffer. */
    memset(st->keys, 0xFF, (size_t)nk * es + 1);
    memset(st->values, 0xFF, (size_t)nv * es + 1);
    hb_tensor4(&st->kt, st->keys, (int32_t)p->dtype, a.batch, p->kv_heads, a.length, p->head_dim);
    hb_tensor4(&st->vt, st->values, (int32_t)p->dtype, a.batch, p->kv_heads, a.length,
               p->v_head_dim);
    a.offsets = st->offsets;
    a.positions = st->positions;
    a.keys = &st->kt;
    a.values = &st->vt;
    rc = hb_cache_state(x->st.hb, cache, &a);
    if (rc != ATTNCONF_OK || a.batch != st->batch || a.length != st->length) {
        run_step_set(&x->st, HR_FAIL, "cache_state (filling) returned %s: %s", hb_code_name(rc),
                     run_step_err(&x->st));
        return -1;
    }
    return 0;
}

/* Compare the backend's state with the step's expectation.  0 = equal. */
static int rch_check_state(rch *x, const acase_cache_step *s, const acase_cache_params *p,
                           const rch_state *st)
{
    char a[200], b[200];
    if (st->batch != s->batch) {
        run_step_set(&x->st, HR_FAIL, "the cache has %lld rows, expected %lld",
                     (long long)st->batch, (long long)s->batch);
        return -1;
    }
    for (int64_t r = 0; r < s->batch; r++)
        if (st->offsets[r] != s->offsets[r]) {
            run_step_set(&x->st, HR_FAIL, "row %lld offset %lld, expected %lld", (long long)r,
                         (long long)st->offsets[r], (long long)s->offsets[r]);
            return -1;
        }
    for (int64_t r = 0; r < s->batch; r++) {
        const int64_t *got = st->positions + r * st->length, *want = s->positions + r * s->length;
        int same = st->length == s->length;
        for (int64_t j = 0; same && j < s->length; j++)
            same = got[j] == want[j];
        if (!same) {
            list_text(got, st->length, NULL, a, sizeof a);
            list_text(want, s->length, NULL, b, sizeof b);
            char row[32] = "";
            if (s->batch > 1)
                snprintf(row, sizeof row, "row %lld ", (long long)r);
            run_step_set(&x->st, HR_FAIL, "%sretained positions %s, expected %s", row, a, b);
            return -1;
        }
    }
    /* Keys and values of the non-pad slots, exactly (dequantized for a quantized cache). */
    for (int kv = 0; kv < 2; kv++) {
        int64_t d = kv ? p->v_head_dim : p->head_dim;
        const void *got = kv ? st->values : st->keys;
        const double *want = kv ? s->values : s->keys;
        for (int64_t r = 0; r < s->batch; r++)
            for (int64_t h = 0; h < p->kv_heads; h++)
                for (int64_t j = 0; j < s->length; j++) {
                    if (s->positions[r * s->length + j] < 0)
                        continue;
                    for (int64_t e = 0; e < d; e++) {
                        int64_t at = ((r * p->kv_heads + h) * s->length + j) * d + e;
                        double g = attnref_load(got, p->dtype, at);
                        if (g == want[at] || (isnan(g) && isnan(want[at])))
                            continue;
                        run_step_set(&x->st, HR_FAIL,
                                     "%s of position %lld (row %lld, head %lld, element "
                                     "%lld) is %.9g, expected %.9g",
                                     kv ? "value" : "key",
                                     (long long)s->positions[r * s->length + j], (long long)r,
                                     (long long)h, (long long)e, g, want[at]);
                        return -1;
                    }
                }
    }
    return 0;
}

/* The keep mask the cache built, against `sees`. */
static int rch_check_mask(rch *x, const acase_cache_step *s, const uint8_t *keep)
{
    int64_t S = s->q.shape[2], L = s->length;
    for (int64_t r = 0; r < s->batch; r++)
        for (int64_t q = 0; q < S; q++) {
            const uint8_t *got = keep + (r * S + q) * L, *want = s->keep + (r * S + q) * L;
            int same = 1;
            for (int64_t j = 0; j < L && same; j++)
                same = (got[j] != 0) == (want[j] != 0);
            if (same)
                continue;
            char a[200], b[200];
            uint8_t gotb[4096];
            const int64_t *pos = s->positions + r * L;
            /* The pad slots the backend kept show as -1. */
            for (int64_t j = 0; j < L && j < 4096; j++)
                gotb[j] = got[j] != 0;
            list_text(pos, L < 4096 ? L : 4096, gotb, a, sizeof a);
            list_text(pos, L, want, b, sizeof b);
            char row[32] = "";
            if (s->batch > 1)
                snprintf(row, sizeof row, " of row %lld", (long long)r);
            run_step_set(&x->st, HR_FAIL, "the query at position %lld%s sees %s, expected %s",
                         (long long)(s->offsets[r] - S + q), row, a, b);
            return -1;
        }
    return 0;
}

/* q attends over the state with the cache's mask, through the backend's sdpa. */
static int rch_attend_sdpa(rch *x, const acase_cache_step *s, const acase_cache_params *p,
                           rch_state *st, uint8_t *keep)
{
    int64_t B = s->q.shape[0], Hq = s->q.shape[1], S = s->q.shape[2], Dv = p->v_head_dim;
    attnconf_tensor q, mask, out;
    void *qmap;
    size_t qlen;
    rch_input(&q, &s->q, &qmap, &qlen);
    hb_tensor4(&mask, keep, (int32_t)ATTNREF_BOOL, B, 1, S, st->length);
    int64_t numel = B * Hq * S * Dv;
    size_t cap = (size_t)(numel > 0 ? numel : 1) * 8;
    void *buf = malloc(cap);
    if (!buf) {
        rch_unmap(qmap, qlen);
        run_step_set(&x->st, HR_ERROR, "harness: out of memory for the output");
        return -1;
    }
    memset(buf, 0xFF, cap);
    hb_tensor4(&out, buf, (int32_t)p->dtype, B, Hq, S, Dv);
    attnconf_sdpa_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.q = &q;
    a.k = &st->kt;
    a.v = &st->vt;
    a.mask = &mask;
    a.out = &out;
    a.out_capacity = cap;
    int rc = hb_sdpa(x->st.hb, &a, NULL);
    int ret = -1;
    if (rc != ATTNCONF_OK) {
        run_step_fail(&x->st, rc, HR_ERROR, "sdpa through the cache");
    } else if (out.dtype != (int32_t)p->dtype || out.data != buf) {
        run_step_set(&x->st, HR_INCORRECT_DTYPE,
                     "sdpa through the cache produced dtype %d, expected %s", (int)out.dtype,
                     attnref_dtype_name(p->dtype));
    } else {
        hc_tol tol = {s->ulps, p->dtype, s->row_atol, 0};
        hc_stats hs;
        int ok = hc_compare_rows(buf, p->dtype, 4, out.shape, out.strides, s->out, &tol,
                                 s->row_check, Dv, &hs);
        hr_result *r = x->st.r;
        r->has_stats = 1;
        /* Never NaN: NaN mismatches are counted apart (hs.nans), kept with the failing step. */
        if (hs.max_abs_err > r->max_abs_err)
            r->max_abs_err = hs.max_abs_err;
        if (hs.max_rel_err > r->max_rel_err)
            r->max_rel_err = hs.max_rel_err;
        if (ok) {
            ret = 0;
        } else {
            char msg[400];
            r->first_bad = hs.first_bad;
            r->bad_ndim = hs.ndim;
            memcpy(r->bad_index, hs.bad_index, sizeof r->bad_index);
            r->bad_got = hs.bad_got;
            r->bad_expected = hs.bad_expected;
            r->nans = hs.nans;
            hc_failure_message(&hs, &tol, msg, sizeof msg);
            run_step_set(&x->st, HR_FAIL, "attention through the cache: %s", msg);
        }
    }
    free(buf);
    rch_unmap(qmap, qlen);
    return ret;
}

static int rch_config(const acase_cache_params *p, attnconf_cache_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->struct_size = sizeof *cfg;
    cfg->kind = (int32_t)p->kind;
    cfg->dtype = (int32_t)p->dtype;
    cfg->batch = p->batch;
    cfg->kv_heads = p->kv_heads;
    cfg->head_dim = p->head_dim;
    cfg->v_head_dim = p->v_head_dim;
    cfg->max_size = p->max_size;
    cfg->keep = p->keep;
    cfg->chunk_size = p->chunk_size;
    cfg->group_size = p->group_size;
    cfg->bits = p->bits;
    cfg->left_padding = p->left_padding;
    return 0;
}

/* One step: the call(s), then the state.  0 = the step passed. */
static int rch_step(rch *x, const acase_cache_step *s, const acase_cache_params *p)
{
    void *cache = x->caches[s->cache];
    uint8_t *keep = NULL;
    int rc = ATTNCONF_OK, mask_rc = ATTNCONF_OK, ret = -1;
    char mask_err[CLIP_MAX + 1] = "";
    rch_state st;
    memset(&st, 0, sizeof st);
    switch (s->op) {
    case ACASE_CSTEP_CREATE: {
        attnconf_cache_config cfg;
        rch_config(&s->params, &cfg);
        rc = hb_cache_create(x->st.hb, &cfg, &x->caches[s->cache]);
        if (rch_rc(x, s, "cache_create", rc))
            goto done;
        cache = x->caches[s->cache];
        break;
    }
    case ACASE_CSTEP_ATTEND: {
        int64_t B = s->q.shape[0], S = s->q.shape[2];
        if (s->error) /* a rejected attend is its update (the mask is not built) */
            goto update;
        if (!(keep = calloc((size_t)(B * S * (s->length > 0 ? s->length : 1)), 1))) {
            run_step_set(&x->st, HR_ERROR, "harness: out of memory for the keep mask");
            goto done;
        }
        memset(keep, 0xFF, (size_t)(B * S * s->length));
        attnconf_tensor kt;
        hb_tensor4(&kt, keep, (int32_t)ATTNREF_BOOL, B, 1, S, s->length);
        attnconf_cache_mask_args ma;
        memset(&ma, 0, sizeof ma);
        ma.struct_size = sizeof ma;
        ma.n = S;
        ma.window = s->window;
        ma.keep = &kt;
        mask_rc = hb_cache_make_mask(x->st.hb, cache, &ma);
        if (mask_rc != ATTNCONF_OK)
            snprintf(mask_err, sizeof mask_err, "%s", run_step_err(&x->st));
    }
    /* fall through */
    case ACASE_CSTEP_UPDATE:
    update : {
        attnconf_tensor k, v;
        void *km, *vm;
        size_t kl, vl;
        rch_input(&k, &s->k, &km, &kl);
        rch_input(&v, &s->v, &vm, &vl);
        rc = hb_cache_update(x->st.hb, cache, &k, &v);
        rch_unmap(km, kl);
        rch_unmap(vm, vl);
        if (rch_rc(x, s, "cache_update", rc))
            goto done;
        break;
    }
    case ACASE_CSTEP_TRIM: {
        int64_t got = -12345;
        rc = hb_cache_trim(x->st.hb, cache, s->n, &got);
        if (rch_rc(x, s, "cache_trim", rc))
            goto done;
        if (!s->error && got != s->returns) {
            run_step_set(&x->st, HR_FAIL, "trim(%lld) returned %lld, expected %lld",
                         (long long)s->n, (long long)got, (long long)s->returns);
            goto done;
        }
        break;
    }
    case ACASE_CSTEP_FILTER:
        rc = hb_cache_filter(x->st.hb, cache, s->rows, s->nrows);
        if (rch_rc(x, s, "cache_filter", rc))
            goto done;
        break;
    case ACASE_CSTEP_EXTEND:
        rc = hb_cache_extend(x->st.hb, cache, x->caches[s->other]);
        if (rch_rc(x, s, "cache_extend", rc))
            goto done;
        break;
    case ACASE_CSTEP_MERGE: {
        void *from[ACASE_MAX_CACHES];
        for (int64_t j = 0; j < s->nrows; j++)
            from[j] = x->caches[s->rows[j]];
        rc = hb_cache_merge(x->st.hb, from, s->nrows, &x->caches[s->cache]);
        if (rch_rc(x, s, "cache_merge", rc))
            goto done;
        cache = x->caches[s->cache];
        break;
    }
    case ACASE_CSTEP_PREPARE: {
        attnconf_cache_prepare_args pa;
        memset(&pa, 0, sizeof pa);
        pa.struct_size = sizeof pa;
        pa.left_padding = s->left_padding;
        pa.lengths = s->lengths;
        rc = hb_cache_prepare(x->st.hb, cache, &pa);
        if (rch_rc(x, s, "cache_prepare", rc))
            goto done;
        break;
    }
    case ACASE_CSTEP_FINALIZE:
        rc = hb_cache_finalize(x->st.hb, cache);
        if (rch_rc(x, s, "cache_finalize", rc))
            goto done;
        break;
    default: run_step_set(&x->st, HR_ERROR, "case: unknown step op %d", (int)s->op); goto done;
    }
    if (!cache) {
        run_step_set(&x->st, HR_FAIL, "the backend returned no cache handle");
        goto done;
    }
    /* The state first: a wrong retention explains a wrong mask or output. */
    if (rch_read_state(x, cache, p, &st) || rch_check_state(x, s, p, &st))
        goto done;
    if (s->op == ACASE_CSTEP_ATTEND && !s->error) {
        if (mask_rc == ATTNCONF_EINEXPRESSIBLE) {
            run_step_set(&x->st, HR_FAIL, "cache_make_mask(%lld) " HR_EINEXPRESSIBLE_VALID ": %s",
                         (long long)s->q.shape[2], mask_err);
            goto done;
        }
        if (mask_rc != ATTNCONF_OK) {
            run_step_set(&x->st, mask_rc == ATTNCONF_ENOTSUP ? HR_NOT_SUPPORTED : HR_FAIL,
                         "cache_make_mask(%lld) returned %s: %s", (long long)s->q.shape[2],
                         hb_code_name(mask_rc), mask_err);
            goto done;
        }
        if (rch_check_mask(x, s, keep) || rch_attend_sdpa(x, s, p, &st, keep))
            goto done;
    }
    ret = 0;
done:
    free(keep);
    state_free(&st);
    return ret;
}

void run_cache_case(const run_ctx *rn, const acase *c, hr_result *r)
{
    const attnconf_backend *be = rn->backend->be;
    rch x;
    memset(&x, 0, sizeof x);
    x.st.hb = rn->backend;
    x.c = c;
    x.st.r = r;
    snprintf(x.st.where, sizeof x.st.where, "create");
    if (!HB_HAS(be, cache_create) || !HB_HAS(be, cache_update) || !HB_HAS(be, cache_trim) ||
        !HB_HAS(be, cache_make_mask) || !HB_HAS(be, cache_state) || !HB_HAS(be, cache_destroy)) {
        run_step_set(&x.st, HR_NOT_SUPPORTED, "backend has no KV cache members");
        return;
    }
    const acase_cache *cc = c->cache;
    int batch_ops = (c->requires & ATTNCONF_CAP_CACHE_BATCH) != 0;
    if (batch_ops &&
        (!HB_HAS(be, cache_filter) || !HB_HAS(be, cache_extend) || !HB_HAS(be, cache_merge) ||
         !HB_HAS(be, cache_prepare) || !HB_HAS(be, cache_finalize))) {
        run_step_set(&x.st, HR_ERROR, "backend reports cache.batch without the batch members");
        return;
    }
    attnconf_cache_config cfg;
    rch_config(&cc->params, &cfg);
    int rc = hb_cache_create(rn->backend, &cfg, &x.caches[0]);
    if (rc != ATTNCONF_OK || !x.caches[0]) {
        run_step_fail(&x.st, rc, HR_ERROR, "cache_create");
        return;
    }
    r->status = HR_PASS;
    r->message[0] = '\0';
    for (int64_t i = 0; i < cc->nsteps; i++) {
        const acase_cache_step *s = &cc->steps[i];
        x.i = i;
        if (s->cache)
            snprintf(x.st.where, sizeof x.st.where, "step %lld (%s, cache %lld)", (long long)i,
                     acase_cache_op_name(s->op), (long long)s->cache);
        else
            snprintf(x.st.where, sizeof x.st.where, "step %lld (%s)", (long long)i,
                     acase_cache_op_name(s->op));
        const acase_cache_params *p = acase_cache_params_of(cc, i);
        if (!p) {
            run_step_set(&x.st, HR_ERROR, "case: the step's cache is undefined");
            break;
        }
        if (rch_step(&x, s, p))
            break;
    }
    for (int j = 0; j < ACASE_MAX_CACHES; j++)
        hb_cache_destroy(rn->backend, x.caches[j]);
}
