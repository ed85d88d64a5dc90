/* run_paged.c — run a paged case step by step (cases/FORMAT.md "Paged cases", SPEC clause 23).
 *
 * The pool (K and V pages, in the case's layout: head-major or vLLM's token-major view) lives in
 * two guarded mappings for the whole case.  Before each step the harness keeps a byte snapshot
 * of both; an append runs with the pool writable and afterwards every new token's (page, slot)
 * must hold its bits and every other byte must equal the snapshot; an attention runs with the
 * pool read-only (a write faults: CRASH) and its output is compared as an sdpa output (clause
 * 13, hc_compare_rows).  A rejected step must leave the pool byte for byte as it was.  The
 * block table and the lengths are read-only guarded copies.  The first difference ends the case
 * with a message naming the step, and for the pool the row, token, page and slot.
 */
#include "run_paged.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/paged_case.h"
#include "attnref/status.h"
#include "backend/call.h"
#include "backend/plugin.h"
#include "common/clip.h"
#include "run/compare.h"
#include "run_guard.h"
#include "run_step.h"

typedef struct rpg {
    run_step st; /* the backend, the result, where we are, its last_error (run_step.h) */
    const acase *c;
    const acase_paged *pc;
    run_guarded kp, vp;       /* the pool */
    attnconf_tensor tkp, tvp; /* its descriptors */
    unsigned char *snap[2];   /* the pool's bytes before the step */
    const int32_t *table;     /* the table in force */
    int64_t width;
    int64_t *lens; /* [B] the lengths in force */
} rpg;

/* The call's return code against the step's expectation: 1 when the case is decided here. */
static int rpg_rc(rpg *x, const acase_paged_step *s, const char *call, int rc)
{
    return run_step_rc(&x->st, s->error, call, rc);
}

/* (page, head, slot, element) of a pool element at buffer offset `el` (elements), from the
 * descriptor's strides (a permutation of a contiguous buffer). */
static void pool_coords(const attnconf_tensor *t, int64_t el, int64_t c[4])
{
    int order[4] = {0, 1, 2, 3};
    for (int i = 0; i < 4; i++) /* dimensions by decreasing stride */
        for (int j = i + 1; j < 4; j++)
            if (t->strides[order[j]] > t->strides[order[i]]) {
                int tmp = order[i];
                order[i] = order[j], order[j] = tmp;
            }
    for (int i = 0; i < 4; i++) {
        const int d = order[i];
        c[d] = t->strides[d] ? el / t->strides[d] : 0;
        el -= c[d] * t->strides[d];
    }
}

/* The pool against `want` (snapshot plus the step's expected writes): 0, or 1 with a FAIL
 * naming the first differing element (page, slot, head) and whose slot it is. */
static int pool_compare(rpg *x, int which, const unsigned char *want, const acase_paged_step *s)
{
    const run_guarded *g = which ? &x->vp : &x->kp;
    const attnconf_tensor *t = which ? &x->tvp : &x->tkp;
    if (run_guarded_check(g, x->st.r))
        return 1;
    if (memcmp(g->data, want, g->len) == 0)
        return 0;
    const size_t es = attnref_dtype_size(x->pc->dtype);
    size_t off = 0;
    while (off < g->len && g->data[off] == want[off])
        off++;
    int64_t c[4];
    pool_coords(t, (int64_t)(off / es), c);
    /* Whose slot is it: a new token of this step, or no one's. */
    char who[96] = "no new token's slot (a stray write)";
    if (s && s->op == ACASE_PSTEP_APPEND && !s->error) {
        int64_t i = 0;
        for (int64_t b = 0; b < x->pc->batch; b++) {
            const int64_t n = s->new_lens ? s->new_lens[b] : s->k.shape[2];
            for (int64_t tk = 0; tk < n; tk++, i++)
                if (s->slots[2 * i] == c[0] && s->slots[2 * i + 1] == c[2])
                    snprintf(who, sizeof who, "the slot of row %lld's new token %lld (wrong bits)",
                             (long long)b, (long long)tk);
        }
    }
    run_step_set(&x->st, HR_FAIL,
                 "%s pool byte changed at page %lld slot %lld (kv head %lld, element %lld): %s",
                 which ? "V" : "K", (long long)c[0], (long long)c[2], (long long)c[1],
                 (long long)c[3], who);
    return 1;
}

/* The snapshot of both pools before a step. */
static void take_snapshot(rpg *x)
{
    memcpy(x->snap[0], x->kp.data, x->kp.len);
    memcpy(x->snap[1], x->vp.data, x->vp.len);
}

/* A step's new tokens (k or v: (B, Hkv, S, last), logical row-major in the case) written into
 * `want` at their expected slots, through the pool descriptor t. */
static void put_tokens(const rpg *x, unsigned char *want, const attnconf_tensor *t,
                       const acase_tensor *src, const acase_paged_step *s)
{
    const size_t es = attnref_dtype_size(x->pc->dtype);
    const int64_t H = src->shape[1], S = src->shape[2], E = src->shape[3];
    int64_t i = 0;
    for (int64_t b = 0; b < x->pc->batch; b++) {
        const int64_t n = s->new_lens ? s->new_lens[b] : S;
        for (int64_t tk = 0; tk < n; tk++, i++) {
            const int64_t pg = s->slots[2 * i], sl = s->slots[2 * i + 1];
            for (int64_t h = 0; h < H; h++)
                for (int64_t e = 0; e < E; e++) {
                    const int64_t to = pg * t->strides[0] + h * t->strides[1] + sl * t->strides[2] +
                                       e * t->strides[3];
                    const int64_t from = ((b * H + h) * S + tk) * E + e;
                    memcpy(want + (size_t)to * es,
                           (const unsigned char *)src->data + (size_t)from * es, es);
                }
        }
    }
}

/* A read-only guarded copy of the table in force. */
static int table_copy(rpg *x, run_guarded *g)
{
    const size_t n = (size_t)(x->pc->batch * x->width) * sizeof(int32_t);
    if (run_guarded_alloc(g, n, "block table"))
        return -1;
    memcpy(g->data, x->table, n);
    return run_guarded_readonly(g);
}

static int rpg_append(rpg *x, const acase_paged_step *s)
{
    const int64_t B = x->pc->batch;
    run_guarded gk, gv, gt, gl, gn;
    memset(&gt, 0, sizeof gt), memset(&gl, 0, sizeof gl), memset(&gn, 0, sizeof gn);
    attnconf_tensor k, v;
    const int64_t *lens = NULL, *new_lens = NULL;
    int ret = -1;
    if (run_describe(&s->k, &k, &gk, "input k") || run_describe(&s->v, &v, &gv, "input v") ||
        table_copy(x, &gt) || run_readonly_ints(x->lens, (size_t)B, &gl, "seq_lens", &lens) ||
        run_readonly_ints(s->new_lens, (size_t)B, &gn, "new_lens", &new_lens) ||
        run_guarded_writable(&x->kp) || run_guarded_writable(&x->vp)) {
        run_step_set(&x->st, HR_ERROR, "harness: cannot lay out the append's buffers");
        goto done;
    }
    take_snapshot(x);
    attnconf_paged_append_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.k = &k;
    a.v = &v;
    a.k_pages = &x->tkp;
    a.v_pages = &x->tvp;
    a.block_table = (const int32_t *)(const void *)gt.data;
    a.table_width = x->width;
    a.seq_lens = lens;
    a.new_lens = new_lens;
    const int rc = hb_paged_append(x->st.hb, &a);
    if (rpg_rc(x, s, "paged_append", rc))
        goto done;
    if (!s->error) {
        put_tokens(x, x->snap[0], &x->tkp, &s->k, s);
        put_tokens(x, x->snap[1], &x->tvp, &s->v, s);
    }
    if (pool_compare(x, 0, x->snap[0], s) || pool_compare(x, 1, x->snap[1], s) ||
        run_guarded_check(&gk, x->st.r) || run_guarded_check(&gv, x->st.r))
        goto done;
    if (!s->error)
        for (int64_t b = 0; b < B; b++)
            x->lens[b] += s->new_lens ? s->new_lens[b] : s->k.shape[2];
    ret = 0;
done:
    run_guarded_free(&gk);
    run_guarded_free(&gv);
    run_guarded_free(&gt);
    run_guarded_free(&gl);
    run_guarded_free(&gn);
    return ret;
}

static int rpg_attend(rpg *x, const acase_paged_step *s)
{
    const int64_t B = x->pc->batch;
    run_guarded gq, gt, gl, gql, gs, go;
    memset(&gt, 0, sizeof gt), memset(&gl, 0, sizeof gl), memset(&gql, 0, sizeof gql);
    memset(&gs, 0, sizeof gs), memset(&go, 0, sizeof go);
    attnconf_tensor q, out;
    const int64_t *lens = NULL, *qlens = NULL;
    int ret = -1;
    const int64_t Hq = s->q.ndim == 4 ? s->q.shape[1] : 0, Lq = s->q.ndim == 4 ? s->q.shape[2] : 0;
    const int64_t Dv = x->pc->v_head_dim, numel = B * Hq * Lq * Dv;
    const size_t cap = (size_t)(numel > 0 ? numel : 1) * 8;
    if (run_describe(&s->q, &q, &gq, "input q") || table_copy(x, &gt) ||
        run_readonly_ints(x->lens, (size_t)B, &gl, "seq_lens", &lens) ||
        run_readonly_ints(s->query_lens, (size_t)B, &gql, "query_lens", &qlens) ||
        run_guarded_alloc(&go, cap, "output buffer") || run_guarded_readonly(&x->kp) ||
        run_guarded_readonly(&x->vp)) {
        run_step_set(&x->st, HR_ERROR, "harness: cannot lay out the attention's buffers");
        goto done;
    }
    const float *sinks = NULL;
    if (s->sinks) {
        if (run_guarded_alloc(&gs, (size_t)s->nsinks * sizeof(float), "sinks")) {
            run_step_set(&x->st, HR_ERROR, "harness: out of memory for the sinks");
            goto done;
        }
        for (int64_t h = 0; h < s->nsinks; h++)
            ((float *)(void *)gs.data)[h] = (float)s->sinks[h];
        run_guarded_readonly(&gs);
        sinks = (const float *)(const void *)gs.data;
    }
    memset(go.data, 0xFF, cap);
    hb_tensor4(&out, go.data, q.dtype, B, Hq, Lq, Dv);
    take_snapshot(x);
    attnconf_paged_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.q = &q;
    a.k_pages = &x->tkp;
    a.v_pages = &x->tvp;
    a.block_table = (const int32_t *)(const void *)gt.data;
    a.table_width = x->width;
    a.seq_lens = lens;
    a.query_lens = qlens;
    a.causal = s->causal;
    a.window = s->window;
    a.has_scale = s->has_scale;
    a.scale = s->scale;
    /* The terms reach only a backend with their bits (the case requires them). */
    const uint64_t caps = x->st.hb->caps;
    a.softcap = caps & ATTNCONF_CAP_SOFTCAP ? s->softcap : 0;
    a.alibi_max_bias = caps & ATTNCONF_CAP_ALIBI ? s->alibi_max_bias : 0;
    a.sinks = caps & ATTNCONF_CAP_SINKS ? sinks : NULL;
    a.chunk = caps & ATTNCONF_CAP_CHUNK ? s->chunk : 0;
    a.out = &out;
    a.out_capacity = cap;
    const int rc = hb_paged_sdpa(x->st.hb, &a, NULL);
    if (rpg_rc(x, s, "paged_sdpa", rc) || run_guarded_check(&go, x->st.r) ||
        pool_compare(x, 0, x->snap[0], NULL) || pool_compare(x, 1, x->snap[1], NULL))
        goto done;
    if (s->error) {
        ret = 0;
        goto done;
    }
    if (out.dtype != (int32_t)x->pc->dtype || out.data != go.data) {
        run_step_set(&x->st, HR_INCORRECT_DTYPE, "paged_sdpa produced dtype %d, expected %s",
                     (int)out.dtype, attnref_dtype_name(x->pc->dtype));
        goto done;
    }
    hc_tol tol = {s->ulps, x->pc->dtype, s->row_atol, 0};
    hc_stats hs;
    const int ok = hc_compare_rows(go.data, x->pc->dtype, 4, out.shape, out.strides, s->out, &tol,
                                   s->row_check, Dv, &hs);
    hr_result *r = x->st.r;
    r->has_stats = 1;
    /* Never NaN: NaN mismatches are counted apart (hs.nans), kept with the failing step. */
    if (hs.max_abs_err > r->max_abs_err)
        r->max_abs_err = hs.max_abs_err;
    if (hs.max_rel_err > r->max_rel_err)
        r->max_rel_err = hs.max_rel_err;
    if (!ok) {
        char msg[400];
        r->first_bad = hs.first_bad;
        r->bad_ndim = hs.ndim;
        memcpy(r->bad_index, hs.bad_index, sizeof r->bad_index);
        r->bad_got = hs.bad_got;
        r->bad_expected = hs.bad_expected;
        r->nans = hs.nans;
        hc_failure_message(&hs, &tol, msg, sizeof msg);
        run_step_set(&x->st, HR_FAIL, "row %lld (L_b = %lld): %s", (long long)hs.bad_index[0],
                     (long long)x->lens[hs.bad_index[0] < B ? hs.bad_index[0] : 0], msg);
        goto done;
    }
    ret = 0;
done:
    run_guarded_free(&gq);
    run_guarded_free(&gt);
    run_guarded_free(&gl);
    run_guarded_free(&gql);
    run_guarded_free(&gs);
    run_guarded_free(&go);
    return ret;
}

void run_paged_case(const run_ctx *rn, const acase *c, hr_result *r)
{
    rpg x;
    memset(&x, 0, sizeof x);
    x.st.hb = rn->backend;
    x.c = c;
    x.pc = c->paged;
    x.st.r = r;
    snprintf(x.st.where, sizeof x.st.where, "pool");
    if (!x.pc) {
        run_step_set(&x.st, HR_ERROR, "case: no paged part");
        return;
    }
    if (!HB_HAS(rn->backend->be, paged_append) || !HB_HAS(rn->backend->be, paged_sdpa)) {
        run_step_set(&x.st, HR_NOT_SUPPORTED, "backend has no paged members");
        return;
    }
    const acase_paged *pc = x.pc;
    x.lens = calloc((size_t)pc->batch, sizeof *x.lens);
    if (!x.lens || run_describe(&pc->k_pages, &x.tkp, &x.kp, "K pool") ||
        run_describe(&pc->v_pages, &x.tvp, &x.vp, "V pool") || !(x.snap[0] = malloc(x.kp.len)) ||
        !(x.snap[1] = malloc(x.vp.len))) {
        run_step_set(&x.st, HR_ERROR, "harness: cannot lay out the pool");
        goto done;
    }
    memcpy(x.lens, pc->seq_lens, (size_t)pc->batch * sizeof *x.lens);
    x.table = pc->block_table;
    x.width = pc->table_width;
    r->status = HR_PASS;
    r->message[0] = '\0';
    for (int64_t i = 0; i < pc->nsteps; i++) {
        const acase_paged_step *s = &pc->steps[i];
        snprintf(x.st.where, sizeof x.st.where, "step %lld (%s)", (long long)i,
                 acase_paged_op_name(s->op));
        if (s->block_table)
            x.table = s->block_table, x.width = s->table_width;
        if (s->seq_lens)
            memcpy(x.lens, s->seq_lens, (size_t)pc->batch * sizeof *x.lens);
        if ((s->op == ACASE_PSTEP_APPEND ? rpg_append(&x, s) : rpg_attend(&x, s)) != 0)
            break;
    }
done:
    run_guarded_free(&x.kp);
    run_guarded_free(&x.vp);
    free(x.snap[0]);
    free(x.snap[1]);
    free(x.lens);
}
