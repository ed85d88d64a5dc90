/* test_exec_paged.c — paged KV attention over the exec: protocol (PROTOCOL.md "Paged KV caches"),
 * end to end through the bridge (harness/backend/exec_backend.c) and attnconf_exec.py, with the
 * test adapter tests/adapters/paged_adapter.py (numpy; correct, or broken on purpose by MODE).
 *
 * A pool of 6 pages of 3 slots, Hkv 2, D 4, Dv 2, f32, its K pages a permuted (vLLM NHD) view;
 * every slot outside the rows poisoned (NaN, inf, stale values); two rows with fragmented tables
 * whose unused entries are -1 and 99.  The checks are the harness's own: after an append, the new
 * tokens' slots hold them bit for bit and every other pool byte is unchanged; after an attend,
 * the output equals attention over the gathered keys (computed here, in double).  The broken
 * modes must fail exactly those checks, and a reply that writes outside the pool must be refused
 * before any byte of it lands. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnconf/backend.h"
#include "backend/exec_backend.h"
#include "backend/plugin.h"

/* The page size: 3 for the numpy test adapter; the build of this file for OpenVINO's adapter
 * (test_exec_paged_openvino, ATTNCONF_TEST_PAGED_OPENVINO) uses 32, the only block size of
 * OpenVINO's CPU plugin.  The lengths scale with it so that the same things happen at both. */
#ifndef ATTNCONF_TEST_PAGE_SIZE
#define ATTNCONF_TEST_PAGE_SIZE 3
#endif
enum { NP = 6, HKV = 2, PS = ATTNCONF_TEST_PAGE_SIZE, D = 4, DV = 2, B = 2, W = 4, HQ = 4 };
enum { S = 3, LQ = 2 };

static const int32_t table[B * W] = {4, 1, 5, -1, /* row 1: */ 2, 0, 99, 7};
/* Row 0 crosses from page 1 into page 5 (positions 2P-2 .. 2P); row 1 fills page 2 exactly. */
static const int64_t lens0[B] = {2 * PS - 2, PS - 1}; /* before the append */
static const int64_t new_lens[B] = {3, 1};
static const int64_t lens1[B] = {2 * PS + 1, PS}; /* after it */

typedef struct {
    const attnconf_backend *be;
    void *ctx;
    float kmem[NP * PS * HKV * D]; /* (N, P, Hkv, D) memory, seen as (N, Hkv, P, D) */
    float vmem[NP * HKV * PS * DV];
    attnconf_tensor kp, vp;
    float k[B * HKV * S * D], v[B * HKV * S * DV];
    attnconf_tensor kt, vt;
} fixture;

static float poison(int i)
{
    static const float p[4] = {NAN, INFINITY, -INFINITY, 3.0e38f};
    return p[i % 4];
}

static float val(int a, int b, int c)
{
    return (float)sin(0.37 * a + 1.3 * b + 0.11 * c);
}

static float *kslot(fixture *f, int page, int h, int slot)
{
    return f->kmem + ((page * PS + slot) * HKV + h) * D;
}

static float *vslot(fixture *f, int page, int h, int slot)
{
    return f->vmem + ((page * HKV + h) * PS + slot) * DV;
}

/* The pool: poison everywhere, then the live prefix of each row in its pages (key p of row b has
 * values val(b, p, ...)), and the new tokens of the append. */
static void setup(fixture *f, const char *mode)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < NP * PS * HKV * D; i++)
        f->kmem[i] = poison(i);
    for (int i = 0; i < NP * HKV * PS * DV; i++)
        f->vmem[i] = poison(i + 1);
    for (int b = 0; b < B; b++)
        for (int p = 0; p < lens0[b]; p++)
            for (int h = 0; h < HKV; h++) {
                int page = table[b * W + p / PS], slot = p % PS;
                for (int d = 0; d < D; d++)
                    kslot(f, page, h, slot)[d] = val(b, p, h * 10 + d);
                for (int d = 0; d < DV; d++)
                    vslot(f, page, h, slot)[d] = val(b + 5, p, h * 10 + d);
            }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HKV; h++)
            for (int t = 0; t < S; t++) {
                int p = (int)lens0[b] + t;
                for (int d = 0; d < D; d++)
                    f->k[((b * HKV + h) * S + t) * D + d] = val(b, p, h * 10 + d);
                for (int d = 0; d < DV; d++)
                    f->v[((b * HKV + h) * S + t) * DV + d] = val(b + 5, p, h * 10 + d);
            }
    f->kp = (attnconf_tensor){
        f->kmem, ATTNCONF_F32, 4, {NP, HKV, PS, D}, {PS * HKV * D, D, HKV * D, 1}};
    f->vp = (attnconf_tensor){
        f->vmem, ATTNCONF_F32, 4, {NP, HKV, PS, DV}, {HKV * PS * DV, PS * DV, DV, 1}};
    f->kt = (attnconf_tensor){f->k, ATTNCONF_F32, 4, {B, HKV, S, D}, {HKV * S * D, S * D, D, 1}};
    f->vt =
        (attnconf_tensor){f->v, ATTNCONF_F32, 4, {B, HKV, S, DV}, {HKV * S * DV, S * DV, DV, 1}};
    char cmd[1024], err[1024];
    snprintf(cmd, sizeof cmd, "%s %s %s", ATTNCONF_TEST_PYTHON, ATTNCONF_TEST_PAGED_ADAPTER, mode);
    cr_assert_eq(xb_open(cmd, NULL, 0, 60, NULL, &f->be, &f->ctx, err, sizeof err), 0, "%s", err);
    cr_assert(f->be->capabilities(f->ctx) & ATTNCONF_CAP_PAGED, "hello lists paged");
}

static void teardown(fixture *f)
{
    f->be->close(f->ctx);
}

static int append(fixture *f)
{
    attnconf_paged_append_args a = {sizeof a, &f->kt, &f->vt, &f->kp,  &f->vp,
                                    table,    W,      lens0,  new_lens};
    return f->be->paged_append(f->ctx, &a);
}

/* Bytes of the pool that differ from `want` (the snapshot with the new tokens written in). */
static int pool_diff(const fixture *f, const fixture *want)
{
    int n = 0;
    for (size_t i = 0; i < sizeof f->kmem; i++)
        n += ((const unsigned char *)f->kmem)[i] != ((const unsigned char *)want->kmem)[i];
    for (size_t i = 0; i < sizeof f->vmem; i++)
        n += ((const unsigned char *)f->vmem)[i] != ((const unsigned char *)want->vmem)[i];
    return n;
}

/* The pool as an exact append leaves it. */
static void expected_pool(const fixture *f, fixture *want)
{
    memcpy(want->kmem, f->kmem, sizeof f->kmem);
    memcpy(want->vmem, f->vmem, sizeof f->vmem);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < new_lens[b]; t++) {
            int p = (int)lens0[b] + t, page = table[b * W + p / PS], slot = p % PS;
            for (int h = 0; h < HKV; h++) {
                memcpy(kslot(want, page, h, slot), &f->k[((b * HKV + h) * S + t) * D],
                       D * sizeof(float));
                memcpy(vslot(want, page, h, slot), &f->v[((b * HKV + h) * S + t) * DV],
                       DV * sizeof(float));
            }
        }
}

/* Attention of row b, query head h, query i (of q_b) over the gathered keys, in double. */
static double expect_out(fixture *f, const float *q, int b, int h, int i, int qb, int causal,
                         int dv)
{
    int g = h / (HQ / HKV), len = (int)lens1[b], pos = len - qb + i;
    double s[2 * PS + 1], mx = -INFINITY, sum = 0, o = 0;
    for (int j = 0; j < len; j++) {
        const float *kk = kslot(f, table[b * W + j / PS], g, j % PS);
        double dot = 0;
        for (int d = 0; d < D; d++)
            dot += (double)q[((b * HQ + h) * LQ + i) * D + d] * kk[d];
        s[j] = (causal && j > pos) ? -INFINITY : dot / sqrt(D);
        mx = s[j] > mx ? s[j] : mx;
    }
    for (int j = 0; j < len; j++)
        if (s[j] > -INFINITY) {
            double e = exp(s[j] - mx);
            sum += e;
            o += e * vslot(f, table[b * W + j / PS], g, j % PS)[dv];
        }
    return o / sum;
}

/* paged_sdpa after the append: q (B, HQ, LQ, D); returns the status and sets *bad to how many
 * elements differ by > 1e-5 (NaN included), padding rows required to be exactly 0. */
static int attend_status(fixture *f, int causal, const int64_t *qlens, int *bad)
{
    float q[B * HQ * LQ * D], out[B * HQ * LQ * DV];
    for (int i = 0; i < B * HQ * LQ * D; i++)
        q[i] = val(i, 7, 1);
    attnconf_tensor qt = {q, ATTNCONF_F32, 4, {B, HQ, LQ, D}, {HQ * LQ * D, LQ * D, D, 1}};
    attnconf_tensor ot = {out, ATTNCONF_F32, 4, {B, HQ, LQ, DV}, {HQ * LQ * DV, LQ * DV, DV, 1}};
    attnconf_paged_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.q = &qt;
    a.k_pages = &f->kp;
    a.v_pages = &f->vp;
    a.block_table = table;
    a.table_width = W;
    a.seq_lens = lens1;
    a.query_lens = qlens;
    a.causal = causal;
    a.out = &ot;
    a.out_capacity = sizeof out;
    int rc = f->be->paged_sdpa(f->ctx, &a);
    *bad = 0;
    if (rc != 0)
        return rc;
    cr_assert_eq(ot.dtype, ATTNCONF_F32);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < LQ; i++)
                for (int d = 0; d < DV; d++) {
                    int qb = qlens ? (int)qlens[b] : LQ;
                    double want = i < qb ? expect_out(f, q, b, h, i, qb, causal, d) : 0;
                    double got = out[((b * HQ + h) * LQ + i) * DV + d];
                    *bad += i < qb ? !(fabs(got - want) <= 1e-5) : got != 0;
                }
    return 0;
}

static int attend(fixture *f, int causal, const int64_t *qlens)
{
    int bad, rc = attend_status(f, causal, qlens, &bad);
    cr_assert_eq(rc, 0, "paged_sdpa: %d %s", rc, f->be->last_error(f->ctx));
    return bad;
}

#ifndef ATTNCONF_TEST_PAGED_OPENVINO

Test(exec_paged, append_then_attend)
{
    static fixture f, want;
    setup(&f, "ok");
    expected_pool(&f, &want);
    int rc = append(&f);
    cr_assert_eq(rc, 0, "paged_append: %d %s", rc, f.be->last_error(f.ctx));
    cr_expect_eq(pool_diff(&f, &want), 0, "new slots bit for bit, every other byte unchanged");
    const int64_t qlens[B] = {2, 1};
    cr_expect_eq(attend(&f, 1, qlens), 0, "chunked prefill, causal, row 1 padded");
    cr_expect_eq(attend(&f, 0, NULL), 0, "non-causal over both rows' full lengths");
    teardown(&f);
}

/* The checks catch each broken adapter: stray and row0 change bytes they must not; last_full
 * lets row 0's poisoned tail (page 5 slots 1, 2) into the softmax. */
Test(exec_paged, stray_write_caught)
{
    static fixture f, want;
    setup(&f, "stray");
    expected_pool(&f, &want);
    cr_assert_eq(append(&f), 0, "%s", f.be->last_error(f.ctx));
    cr_expect_gt(pool_diff(&f, &want), 0, "a write past the new slots is seen");
    teardown(&f);
}

Test(exec_paged, wrong_row_write_caught)
{
    static fixture f, want;
    setup(&f, "row0");
    expected_pool(&f, &want);
    cr_assert_eq(append(&f), 0, "%s", f.be->last_error(f.ctx));
    cr_expect_gt(pool_diff(&f, &want), 0, "row 1's token written through row 0's table is seen");
    teardown(&f);
}

Test(exec_paged, last_page_full_caught)
{
    static fixture f, ok;
    setup(&f, "last_full");
    cr_assert_eq(append(&f), 0, "%s", f.be->last_error(f.ctx));
    cr_expect_gt(attend(&f, 0, NULL), 0, "the stale tail of the last page reaches the output");
    teardown(&f);
    setup(&ok, "ok");
    cr_assert_eq(append(&ok), 0);
    cr_expect_eq(attend(&ok, 0, NULL), 0, "the same call passes on the correct adapter");
    teardown(&ok);
}

/* A reply naming a slot outside the pool is a transport failure, and nothing of it lands. */
Test(exec_paged, writes_outside_pool_refused)
{
    static fixture f, before;
    setup(&f, "bad_writes");
    memcpy(before.kmem, f.kmem, sizeof f.kmem);
    memcpy(before.vmem, f.vmem, sizeof f.vmem);
    cr_assert_eq(append(&f), HB_ETRANSPORT);
    cr_expect(strstr(f.be->last_error(f.ctx), "writes[0] = [6, 0] is outside the pool (6 pages "
                                              "of 3 slots)") != NULL,
              "%s", f.be->last_error(f.ctx));
    cr_expect_eq(pool_diff(&f, &before), 0, "the pool is unchanged");
    teardown(&f);
}

/* The adapter refuses a table entry outside the pool among those the append uses (row 0's
 * entry 2 becomes 9), and the pool stays as it was. */
Test(exec_paged, append_rejects_page_outside_pool)
{
    static fixture f, before;
    setup(&f, "ok");
    memcpy(before.kmem, f.kmem, sizeof f.kmem);
    memcpy(before.vmem, f.vmem, sizeof f.vmem);
    int32_t bad[B * W];
    memcpy(bad, table, sizeof bad);
    bad[2] = 9;
    attnconf_paged_append_args a = {sizeof a, &f.kt, &f.vt, &f.kp, &f.vp, bad, W, lens0, new_lens};
    cr_assert_eq(f.be->paged_append(f.ctx, &a), ATTNCONF_EINVAL);
    cr_expect(strstr(f.be->last_error(f.ctx), "block_table[2] = 9 is outside the pool") != NULL,
              "%s", f.be->last_error(f.ctx));
    cr_expect_eq(pool_diff(&f, &before), 0, "the pool is unchanged");
    teardown(&f);
}
#else

/* OpenVINO's PagedAttentionExtension on the CPU plugin (conformance/adapters/
 * openvino_adapter.py), P = 32.  What it does, asserted so that a change shows: the new tokens
 * land bit for bit, K is touched nowhere else, and the V slots past each row's length in its
 * last page are set to +0.0 (f32 cache: the kernel clears the tail of the last V block; SPEC
 * clause 23 says nothing else in the pool may change, so the harness reports this). */
static void ov_expected_pool(const fixture *f, fixture *want)
{
    expected_pool(f, want);
    for (int b = 0; b < B; b++) {
        int len = (int)lens1[b], page = table[b * W + (len - 1) / PS];
        for (int slot = (len - 1) % PS + 1; slot < PS; slot++)
            for (int h = 0; h < HKV; h++)
                for (int d = 0; d < DV; d++)
                    vslot(want, page, h, slot)[d] = 0.0f;
    }
}

Test(exec_paged_openvino, append_then_attend)
{
    static fixture f, want, exact;
    setup(&f, "");
    ov_expected_pool(&f, &want);
    expected_pool(&f, &exact);
    int rc = append(&f);
    cr_assert_eq(rc, 0, "paged_append: %d %s", rc, f.be->last_error(f.ctx));
    cr_expect_eq(pool_diff(&f, &want), 0, "new slots bit for bit, V tail of row 0's last page 0");
    cr_expect_gt(pool_diff(&f, &exact), 0, "which is not an exact append (the tail held poison)");
    const int64_t qlens[B] = {2, 1};
    cr_expect_eq(attend(&f, 1, qlens), 0, "chunked prefill, causal, row 1 padded");
    const int64_t decode[B] = {1, 1};
    cr_expect_eq(attend(&f, 0, decode), 0, "decode without causal (the same as with it)");
    int bad;
    cr_expect_eq(attend_status(&f, 0, NULL, &bad), ATTNCONF_ENOTSUP,
                 "causal = false with 2 queries a row: the op is always causal");
    cr_expect(strstr(f.be->last_error(f.ctx), "always causal") != NULL, "%s",
              f.be->last_error(f.ctx));
    teardown(&f);
}

#endif
