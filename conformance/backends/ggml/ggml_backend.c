/* ggml_backend.c — ggml (ggml-org/ggml, the tensor library under llama.cpp) as attnconf plugins
 * (ABI v1), validated in process on ggml's CPU backend.
 *
 * One source, built twice (conformance/backends/ggml/CMakeLists.txt):
 *
 *   ggml      (ATTNCONF_GGML_OPS=0)  ggml_flash_attn_ext(ctx, q, k, v, mask, scale, max_bias,
 *             logit_softcap), then ggml_flash_attn_ext_add_sinks(res, sinks) when there are
 *             sinks, called as llama.cpp's llm_graph_context::build_attn_mha calls it with flash
 *             attention on: q in F32, K/V in their cache type, the mask an F16 additive tensor,
 *             ggml_flash_attn_ext_set_prec(GGML_PREC_F32) (option `prec`).
 *   ggml-ops  (ATTNCONF_GGML_OPS=1)  the path build_attn_mha takes with flash attention off:
 *             kq = ggml_mul_mat(k, q) (ggml_mul_mat_set_prec(kq, GGML_PREC_F32)),
 *             with a softcap c: kq = ggml_scale(ggml_tanh(ggml_scale(kq, 1/c)), c) — on the RAW
 *             q.k, before the scale (SPEC clause 20 caps the scaled score; the two agree only
 *             when the scale is 1, as in llama.cpp's Gemma 2, which scales Q beforehand),
 *             kq = ggml_soft_max_ext(kq, mask, scale, max_bias) with llama.cpp's F32 mask,
 *             ggml_soft_max_add_sinks(kq, sinks) when there are sinks,
 *             kqv = ggml_mul_mat(ggml_cont(ggml_transpose(v)), kq),
 *             out = ggml_cont(ggml_permute(kqv, 0, 2, 1, 3)).
 *
 * Layout: ggml tensors are ne = [D, L, H, B] (ne[0] fastest).  An attnconf (B, H, L, D) view with
 * element strides s maps to ne = {D, L, H, B}, nb = {s3, s2, s1, s0} * element size: inputs that
 * reach ggml in their own type are passed as ggml tensors over the host memory with those byte
 * strides (strided / permuted views included, as llama.cpp passes permuted views of its KV
 * cache).  A view ggml could not take is packed into a contiguous copy first (the values are
 * unchanged): a D stride != 1 (ggml asserts nb[0] == type size), a stride-0 (broadcast) axis
 * (ggml's view checks would abort) or a "transposed" one (nb[0] > nb[1], which ggml_mul_mat
 * asserts against).
 * GQA by head counts: ggml broadcasts K/V heads as h / (Hq / Hkv) (rk2 = neq2 / nek2 in
 * ggml-cpu/ops.cpp, i02 = i12 / r2 in ggml_compute_forward_mul_mat); K and V are never tiled.
 * Output: ggml returns [Dv, Hq, Lq, B] (memory [B][Lq][Hq][Dv], the permute(0, 2, 1, 3) both
 * paths end with); it is copied into the harness's (B, Hq, Lq, Dv) buffer.
 *
 * THE RULE: an input that cannot reach ggml without changing its value is answered
 * ATTNCONF_ENOTSUP (NOT_SUPPORTED), never silently rounded and judged.
 *   - q: ggml's attention reads Q as F32 (ops.cpp casts q->data to float *; llama.cpp's Q is
 *     always F32).  An f16/bf16 q is widened to f32, which is exact.
 *   - K/V: passed in the case's own type: F32, F16 or BF16.  ggml-cpu's flash attention takes
 *     all three as they are (ggml_get_type_traits_cpu(k->type)->vec_dot with Q converted to the
 *     K type's vec_dot_type — F32/F16/BF16, exact when q has the K/V dtype; V through
 *     ggml_get_type_traits(v->type)->to_float); ggml_mul_mat takes them as src0 the same way.
 *     (llama.cpp casts an F32 K/V to F16 before flash attention when there is no KV cache; that
 *     cast would change values, so it is not done: f32 cases reach ggml in f32.)
 *   - mask: one additive tensor; there is no causal flag and no boolean mask in ggml.  As
 *     llama.cpp builds its KQ mask, a kept key is 0 and an excluded one -INFINITY: a BOOL mask
 *     becomes 0 / -inf, and causal becomes the (1, 1, Lq, Lk) mask keeping j <= offset + i
 *     (offset = Lk - Lq, bottom-right, or the explicit offset: llama.cpp always expresses
 *     causality through the mask, from the positions of the tokens).  An additive mask is
 *     passed with its values: ggml (flash) takes only an F16 mask
 *     (GGML_ASSERT(mask->type == GGML_TYPE_F16)), so an f32/bf16 mask goes as f16 only if every
 *     value converts exactly, else ENOTSUP; ggml-ops passes F32 as llama.cpp does (exact from
 *     every float dtype).  Extents: ggml broadcasts the mask over heads and batch by its own
 *     rule (q->ne[2] % mask->ne[2] == 0, head h reads mask head h % mask->ne[2]; the same for
 *     batch), which is kept: the mask's head/batch extents go to ggml as they are.  It has no
 *     broadcast along the query or key axis (it reads row i of ne[1] >= Lq rows, and Lk entries
 *     of each), so an extent 1 there is expanded explicitly — llama.cpp always builds full
 *     [n_kv, n_tokens] masks.  This ggml (0.20.x) has no GGML_KQ_MASK_PAD: no row padding.
 *   - scale: ggml takes a float and has no default: an explicit scale must be exactly a float
 *     (else ENOTSUP); none given → 1.0f / sqrtf((float)D), llama.cpp's kq_scale.
 * Output dtype: ggml's attention always produces F32 (ggml_flash_attn_ext creates its result as
 * GGML_TYPE_F32; mul_mat and soft_max produce F32 too).  llama.cpp users get that F32 tensor
 * (the next ggml_mul_mat with the output projection consumes it).  out->dtype is reported as
 * F32, honestly: on an f16/bf16 case the harness reports INCORRECT_DTYPE, with the values still
 * compared.
 *
 * Errors: ggml does not return errors, it aborts the process on a failed GGML_ASSERT (which
 * would kill the harness).  Before building the graph this shim checks exactly the
 * preconditions ggml asserts (or, where ggml does not check, would read out of bounds) and
 * returns the code itself, naming the ggml assert it avoided: that keeps the process alive, it
 * does not mask a library behaviour — everything ggml accepts is computed and judged.  ggml
 * has no q/k/v dtype agreement rule and no mask-dtype rule (its mask is always F16/F32), so
 * mismatched dtypes are computed, not rejected.  ggml takes one mask argument, so a causal
 * flag together with a mask (two masks) is EINVAL.
 *
 * Terms of current models (SPEC.md clauses 20-22), as llama.cpp poses them:
 *   - softcap (f_attn_logit_softcapping), max_bias (f_max_alibi_bias): floats, exactly a float
 *     value or ENOTSUP (as the scale); ggml validates neither, so a negative or NaN softcap and a
 *     negative max_bias are computed (with max_bias <= 0 ggml's slope is 1).
 *   - sinks: an F32 [Hq] tensor (ggml_*_add_sinks); an infinite sink is computed.
 *   - ALiBi: ggml derives each head's slope from max_bias and multiplies the mask by it, so, as
 *     llama.cpp's use_alibi mask, a kept key holds -|p0 - p1| and an excluded one -INFINITY
 *     (the flash path's F16 mask rounds distances above 2048 as llama.cpp's cast does).  An
 *     additive mask with finite values other than 0 cannot be combined with that (ggml has one
 *     mask, multiplied by the slope): ENOTSUP.
 *   - chunk, segment_ids, block_ids: the KQ mask, as llama.cpp's set_input_kq_mask fills it
 *     (gb_llama_keep): documents are sequence ids with their own positions, chunks are
 *     LLAMA_SWA_TYPE_CHUNKED on those positions, a block is an image decoded with causal
 *     attention off.  llama.cpp's n_swa is a uint32_t: a negative chunk is EINEXPRESSIBLE; a
 *     chunk or blocks without causal are computed as llama.cpp would (no rejection there).
 *   No window / lengths / left_padding parameters are posed (sdpa.window etc. unreported).
 *
 * Options: `threads` (auto = every online CPU, or a count: the n_threads of ggml_graph_plan /
 * ggml_graph_compute) and `prec` (f32 = GGML_PREC_F32, what llama.cpp sets on every attention
 * node, or default = GGML_PREC_DEFAULT; ggml-cpu computes both the same way: F32 accumulators)
 * and `kernels` (auto = ggml-cpu's choice by shape, or ref = ggml_cplan.use_ref, its reference
 * kernels only, as ggml_backend_cpu_set_use_ref sets; a second route through ggml).
 * No mask builder: ggml has none (llama.cpp builds its masks in C++).
 *
 * Only attnconf_backend_entry is exported (hidden visibility).
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ggml-cpu.h>
#include <ggml.h>

#include "attnconf/backend.h"

#ifndef ATTNCONF_GGML_OPS
#define ATTNCONF_GGML_OPS 0
#endif

#if ATTNCONF_GGML_OPS
#define GB_NAME "ggml-ops"
#define GB_MASK_TYPE GGML_TYPE_F32 /* llama.cpp's KQ mask, as ggml_soft_max_ext gets it */
#else
#define GB_NAME "ggml"
#define GB_MASK_TYPE GGML_TYPE_F16 /* the only mask type ggml_flash_attn_ext accepts */
#endif

#define GB_GRAPH_SIZE 16
#define GB_MAX_BYTES ((uint64_t)1 << 40) /* refuse absurd sizes before any multiplication */

typedef struct gb_ctx {
    char err[512];
    int n_threads;
    enum ggml_prec prec;
    int use_ref; /* ggml_cplan.use_ref: reference kernels only */
} gb_ctx;

__attribute__((format(printf, 3, 4))) static int gb_fail(gb_ctx *ctx, int code, const char *fmt,
                                                         ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
    return code;
}

static size_t gb_esize(int32_t dt)
{
    switch (dt) {
    case ATTNCONF_F32: return 4;
    case ATTNCONF_F16:
    case ATTNCONF_BF16: return 2;
    case ATTNCONF_BOOL: return 1;
    default: return 0;
    }
}

/* The ggml type a float attnconf dtype is stored as, bit for bit. */
static enum ggml_type gb_type(int32_t dt)
{
    return dt == ATTNCONF_F16    ? GGML_TYPE_F16
           : dt == ATTNCONF_BF16 ? GGML_TYPE_BF16
                                 : GGML_TYPE_F32;
}

static const char *gb_dtype_name(int32_t dt)
{
    switch (dt) {
    case ATTNCONF_F32: return "f32";
    case ATTNCONF_F16: return "f16";
    case ATTNCONF_BF16: return "bf16";
    case ATTNCONF_BOOL: return "bool";
    default: return "unknown";
    }
}

/* Element `off` (in elements) of a float or bool buffer, exactly, as a float. */
static float gb_load(const void *data, int32_t dt, int64_t off)
{
    switch (dt) {
    case ATTNCONF_F32: return ((const float *)data)[off];
    case ATTNCONF_F16: return ggml_fp16_to_fp32(((const ggml_fp16_t *)data)[off]);
    case ATTNCONF_BF16: {
        ggml_bf16_t b = {((const uint16_t *)data)[off]};
        return ggml_bf16_to_fp32(b);
    }
    default: return ((const uint8_t *)data)[off] ? 1.0f : 0.0f;
    }
}

/* Check a descriptor: rank 4 for q/k/v/out (rank <= 4 for a mask), non-negative extents and
 * strides, every product bounded. */
static int gb_check_desc(gb_ctx *ctx, const attnconf_tensor *t, const char *name, int exact4)
{
    if (!t->data && t->ndim > 0)
        return gb_fail(ctx, ATTNCONF_EINVAL, "%s: data is NULL", name);
    if (exact4 ? t->ndim != 4 : (t->ndim < 0 || t->ndim > 4))
        return gb_fail(ctx, ATTNCONF_EINVAL,
                       "%s: rank %d (%s; ggml tensors have at most GGML_MAX_DIMS = 4)", name,
                       (int)t->ndim, exact4 ? "q, k, v and out are (B, H, L, D)" : "mask");
    uint64_t numel = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0 || t->strides[i] < 0)
            return gb_fail(ctx, ATTNCONF_EINVAL, "%s: negative extent or stride on axis %d", name,
                           i);
        if ((uint64_t)t->shape[i] > GB_MAX_BYTES || (uint64_t)t->strides[i] > GB_MAX_BYTES)
            return gb_fail(ctx, ATTNCONF_ENOMEM, "%s: extent or stride too large", name);
        numel *= (uint64_t)t->shape[i];
        if (numel > GB_MAX_BYTES)
            return gb_fail(ctx, ATTNCONF_ENOMEM, "%s: too many elements", name);
    }
    return ATTNCONF_OK;
}

/* A ggml leaf tensor [ne0, ne1, ne2, ne3] of `type` for the attnconf (B, H, L, D) tensor t.
 * Without conversion (t's own type) and with a unit D stride it is a view of the host memory
 * (byte strides from t's element strides); otherwise t is packed into a new contiguous buffer,
 * widening f16/bf16 to f32 when type is F32 (exact).  *owned receives a buffer to free. */
static struct ggml_tensor *gb_leaf(struct ggml_context *cin, const attnconf_tensor *t,
                                   enum ggml_type type, void **owned)
{
    const int64_t B = t->shape[0], H = t->shape[1], L = t->shape[2], D = t->shape[3];
    struct ggml_tensor *g = ggml_new_tensor_4d(cin, type, D, L, H, B);
    size_t es = gb_esize(t->dtype);
    *owned = NULL;
    if (type == gb_type(t->dtype) && (t->strides[3] == 1 || D <= 1)) {
        /* Byte strides; an axis of extent 1 keeps ggml's dense stride (it is never stepped). */
        const int64_t ne[4] = {D, L, H, B};
        const int64_t s[4] = {1, t->strides[2], t->strides[1], t->strides[0]};
        size_t nb[4];
        for (int i = 0; i < 4; i++)
            nb[i] = ne[i] <= 1 ? g->nb[i] : (size_t)s[i] * es;
        /* A view ggml takes as it is: not "transposed" (nb[0] > nb[1], which ggml_mul_mat
         * asserts against) and no overlapping (stride-0) axis, which ggml's view checks
         * (data_size <= ggml_nbytes(view_src)) would abort on. */
        int ok = nb[0] <= nb[1];
        for (int i = 1; i < 4; i++)
            ok = ok && (ne[i] <= 1 || s[i] > 0);
        if (ok) {
            memcpy(g->nb, nb, sizeof nb);
            ok = ggml_nbytes(g) >= ggml_row_size(type, D) * (size_t)(L * H * B);
        }
        if (ok) {
            g->data = t->data;
            return g;
        }
        g->nb[0] = es; /* back to the dense layout of a packed copy */
        for (int i = 1; i < 4; i++)
            g->nb[i] = g->nb[i - 1] * (size_t)ne[i - 1];
    }
    size_t n = (size_t)(B * H * L * D);
    size_t os = ggml_type_size(type);
    unsigned char *buf = malloc(n ? n * os : 1);
    if (!buf)
        return NULL;
    size_t w = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t l = 0; l < L; l++)
                for (int64_t d = 0; d < D; d++, w++) {
                    int64_t off = b * t->strides[0] + h * t->strides[1] + l * t->strides[2] +
                                  d * t->strides[3];
                    if (type == GGML_TYPE_F32)
                        ((float *)buf)[w] = gb_load(t->data, t->dtype, off);
                    else
                        memcpy(buf + w * os, (const unsigned char *)t->data + (size_t)off * es, os);
                }
    g->data = buf;
    *owned = buf;
    return g;
}

/* llama.cpp's position of key slot x of batch row b, into pos[b * Lk + x]: the slot itself, or,
 * with segment_ids, its rank among the slots of its document (llama.cpp numbers each sequence's
 * tokens from 0, and a cell is compared with a token of the same sequence only). */
static void gb_positions(const attnconf_sdpa_args *a, int64_t B, int64_t Lk, int64_t *pos)
{
    for (int64_t b = 0; b < B; b++) {
        const int64_t *seg = a->segment_ids ? a->segment_ids + b * Lk : NULL;
        for (int64_t x = 0; x < Lk; x++) {
            int64_t r = x;
            if (seg) {
                r = 0;
                for (int64_t s = 0; s < x; s++)
                    r += seg[s] == seg[x];
            }
            pos[b * Lk + x] = r;
        }
    }
}

/* Whether llama.cpp's KQ mask (set_input_kq_mask) keeps key slot j for the query at slot p of
 * row b, and the two positions it compares.  A document is a sequence id: a cell of another
 * sequence is masked, a query outside every key slot has no sequence.  Causal masks a cell
 * whose position is after the token's, except inside a bidirectional block: llama.cpp decodes
 * an image's tokens as one batch with causal attention off, so they see each other (and the
 * cells before them), never the text after.  Chunked attention (LLAMA_SWA_TYPE_CHUNKED) masks a
 * cell before the start of the token's chunk, (p1 / C) * C on those positions: it never masks a
 * later cell, so a block that crosses a chunk boundary sees its later chunk. */
static int gb_llama_keep(const attnconf_sdpa_args *a, int64_t b, int64_t p, int64_t j, int64_t Lk,
                         const int64_t *pos, int64_t *p0, int64_t *p1)
{
    const int64_t *seg = a->segment_ids ? a->segment_ids + b * Lk : NULL;
    const int64_t *blk = a->block_ids ? a->block_ids + b * Lk : NULL;
    const int in = p >= 0 && p < Lk;
    *p0 = pos[b * Lk + j];
    *p1 = in ? pos[b * Lk + p] : p;
    if (seg && (!in || seg[p] != seg[j]))
        return 0;
    if (a->causal && *p0 > *p1 && !(blk && in && blk[p] >= 0 && blk[j] == blk[p]))
        return 0;
    if (a->chunk > 0 && *p0 < (*p1 / a->chunk) * a->chunk)
        return 0;
    return 1;
}

/* The additive mask ggml gets (NULL when there is none).  Returns ATTNCONF_OK with *out set,
 * or an error with the message recorded.  *owned receives the buffer to free.  As llama.cpp
 * builds it: 0 for a kept key, -INFINITY for an excluded one, and with ALiBi -|p0 - p1| for a
 * kept key (ggml multiplies the mask by each head's slope). */
static int gb_mask(gb_ctx *ctx, struct ggml_context *cin, const attnconf_sdpa_args *a, int64_t B,
                   int64_t Hq, int64_t Lq, int64_t Lk, struct ggml_tensor **out, void **owned)
{
    *out = NULL;
    *owned = NULL;
    const int alibi = a->alibi_max_bias != 0.0;
    const int per_row = a->segment_ids || a->block_ids; /* terms that differ by batch row */
    const int terms = a->causal || alibi || a->chunk || per_row;
    int64_t mb = 1, mh = 1, mq = Lq, mk = Lk; /* extents ggml gets */
    int64_t eb = 1, eh = 1;                   /* the case mask's batch and head extents */
    int64_t sb = 0, sh = 0, sq = 0, sk = 0;   /* source element strides (0: repeated) */
    const attnconf_tensor *m = a->mask;
    if (m) {
        int st = gb_check_desc(ctx, m, "mask", 0);
        if (st != ATTNCONF_OK)
            return st;
        if (m->dtype != ATTNCONF_BOOL && gb_type(m->dtype) == GGML_TYPE_F32 &&
            m->dtype != ATTNCONF_F32)
            return gb_fail(ctx, ATTNCONF_EDTYPE, "mask: dtype %d is neither bool nor float",
                           (int)m->dtype);
        /* NumPy alignment: missing leading axes have extent 1. */
        int64_t ext[4] = {1, 1, 1, 1}, str[4] = {0, 0, 0, 0};
        for (int i = 0; i < m->ndim; i++) {
            ext[4 - m->ndim + i] = m->shape[i];
            str[4 - m->ndim + i] = m->strides[i];
        }
        /* Key axis: ggml reads Lk mask entries per row and cannot broadcast there. */
#if ATTNCONF_GGML_OPS
        if (ext[3] != Lk && ext[3] != 1)
            return gb_fail(ctx, ATTNCONF_EINVAL,
                           "mask: key extent %lld for Lk = %lld: ggml_soft_max_ext would abort on "
                           "GGML_ASSERT(mask->ne[0] == a->ne[0])",
                           (long long)ext[3], (long long)Lk);
#else
        if (ext[3] < Lk && ext[3] != 1)
            return gb_fail(ctx, ATTNCONF_EINVAL,
                           "mask: key extent %lld < Lk = %lld: ggml_flash_attn_ext does not check "
                           "it and would read Lk entries of each mask row, past its end",
                           (long long)ext[3], (long long)Lk);
#endif
        /* Query axis: ggml needs mask->ne[1] >= Lq rows and reads row i. */
        if (ext[2] < Lq && ext[2] != 1)
            return gb_fail(ctx, ATTNCONF_EINVAL,
                           "mask: query extent %lld < Lq = %lld: ggml_soft_max_ext asserts "
                           "mask->ne[1] >= a->ne[1] and ggml_flash_attn_ext would read past the "
                           "mask",
                           (long long)ext[2], (long long)Lq);
        /* Heads and batch: ggml's own broadcast (modulo), as its asserts allow. */
        if (ext[1] == 0 || Hq % ext[1] != 0)
            return gb_fail(ctx, ATTNCONF_EINVAL,
                           "mask: head extent %lld with Hq = %lld: ggml would abort on "
                           "GGML_ASSERT(q->ne[2] %% mask->ne[2] == 0)",
                           (long long)ext[1], (long long)Hq);
        if (ext[0] == 0 || B % ext[0] != 0)
            return gb_fail(ctx, ATTNCONF_EINVAL,
                           "mask: batch extent %lld with B = %lld: ggml would abort on "
                           "GGML_ASSERT(q->ne[3] %% mask->ne[3] == 0)",
                           (long long)ext[0], (long long)B);
        eb = mb = ext[0];
        eh = mh = ext[1];
        mq = ext[2] == 1 ? Lq : ext[2]; /* an extent 1 is expanded; ggml reads the first Lq */
        mk = ext[3] == 1 ? Lk : ext[3];
        sb = str[0];
        sh = str[1];
        sq = ext[2] == 1 ? 0 : str[2];
        sk = ext[3] == 1 ? 0 : str[3];
    } else if (!terms) {
        return ATTNCONF_OK;
    }
    if (per_row)
        mb = B; /* llama.cpp's mask has a row per sequence stream; ggml's modulo repeats ours */

    size_t n = (size_t)(mb * mh * mq * mk);
    size_t os = ggml_type_size(GB_MASK_TYPE);
    unsigned char *buf = malloc(n ? n * os : 1);
    const size_t npos = (size_t)(B * Lk) + 1;
    int64_t *pos = terms ? malloc(npos * sizeof *pos) : NULL;
    if (!buf || (terms && !pos)) {
        free(buf);
        free(pos);
        return gb_fail(ctx, ATTNCONF_ENOMEM, "out of memory for a %zu-element mask", n);
    }
    if (terms)
        gb_positions(a, B, Lk, pos);
    int64_t offset = a->has_causal_offset ? a->causal_offset : Lk - Lq;
    size_t w = 0;
    int rc = ATTNCONF_OK;
    for (int64_t b = 0; b < mb && rc == ATTNCONF_OK; b++)
        for (int64_t h = 0; h < mh && rc == ATTNCONF_OK; h++)
            for (int64_t i = 0; i < mq && rc == ATTNCONF_OK; i++)
                for (int64_t j = 0; j < mk; j++, w++) {
                    float x = 0.0f;
                    int keep = 1, from_case = 0;
                    if (m) {
                        float v = gb_load(m->data, m->dtype,
                                          (b % eb) * sb + (h % eh) * sh + i * sq + j * sk);
                        if (m->dtype == ATTNCONF_BOOL) {
                            keep = v != 0.0f;
                        } else if (alibi && v != 0.0f && v != -INFINITY) {
                            rc = gb_fail(ctx, ATTNCONF_ENOTSUP,
                                         "ALiBi with an additive mask value %.9g (at b=%lld "
                                         "h=%lld i=%lld j=%lld): ggml's ALiBi is the head's slope "
                                         "times its one mask, which llama.cpp fills with "
                                         "-|p - j| (0 / -inf keep sets only), so a second, "
                                         "additive mask cannot reach ggml",
                                         (double)v, (long long)b, (long long)h, (long long)i,
                                         (long long)j);
                            break;
                        } else {
                            x = v;
                            keep = v != -INFINITY;
                            from_case = 1;
                        }
                    }
                    /* Rows past Lq and keys past Lk are never read by ggml. */
                    if (terms && keep && i < Lq && j < Lk) {
                        int64_t p0, p1;
                        keep = gb_llama_keep(a, b, offset + i, j, Lk, pos, &p0, &p1);
                        if (alibi) {
                            x = -(float)llabs(p1 - p0); /* llama.cpp's use_alibi mask */
                            from_case = 0;
                        }
                    }
                    if (!keep)
                        x = -INFINITY;
#if ATTNCONF_GGML_OPS
                    (void)from_case; /* an F32 mask holds every value */
                    ((float *)buf)[w] = x;
#else
                    /* A case's own value must be an f16 value; llama.cpp's ALiBi distances are
                     * rounded to f16 as its ggml_cast(kq_mask, GGML_TYPE_F16) rounds them. */
                    ggml_fp16_t hx = ggml_fp32_to_fp16(x);
                    float back = ggml_fp16_to_fp32(hx);
                    if (from_case && !(back == x || (isnan(back) && isnan(x)))) {
                        rc = gb_fail(ctx, ATTNCONF_ENOTSUP,
                                     "the %s mask value %.9g (at b=%lld h=%lld i=%lld j=%lld) "
                                     "is not an f16 value (it would become %.9g): "
                                     "ggml_flash_attn_ext takes only an F16 mask",
                                     gb_dtype_name(m->dtype), (double)x, (long long)b, (long long)h,
                                     (long long)i, (long long)j, (double)back);
                        break;
                    }
                    ((ggml_fp16_t *)buf)[w] = hx;
#endif
                }
    free(pos);
    if (rc != ATTNCONF_OK) {
        free(buf);
        return rc;
    }
    struct ggml_tensor *g = ggml_new_tensor_4d(cin, GB_MASK_TYPE, mk, mq, mh, mb);
    g->data = buf;
    *owned = buf;
    *out = g;
    return ATTNCONF_OK;
}

/* A double argument ggml takes as a float: exactly a float value (else ENOTSUP, as the scale);
 * NaN passes as NaN. */
static int gb_float_arg(gb_ctx *ctx, double x, const char *name, const char *ggml_name, float *out)
{
    *out = (float)x;
    if (!isnan(x) && (double)*out != x)
        return gb_fail(ctx, ATTNCONF_ENOTSUP,
                       "%s %.17g is not a float value (it would become %.9g): ggml takes %s as a "
                       "float",
                       name, x, (double)*out, ggml_name);
    return ATTNCONF_OK;
}

static int gb_sdpa(void *vctx, const attnconf_sdpa_args *a)
{
    gb_ctx *ctx = vctx;
    if (!ctx)
        return ATTNCONF_EINVAL;
    ctx->err[0] = '\0';
    if (!a)
        return gb_fail(ctx, ATTNCONF_EINVAL, "sdpa: args is NULL");
    if (a->struct_size < sizeof(attnconf_sdpa_args))
        return gb_fail(ctx, ATTNCONF_EINVAL,
                       "sdpa: args.struct_size is smaller than the ABI v1 struct");
    if (!a->q || !a->k || !a->v || !a->out)
        return gb_fail(ctx, ATTNCONF_EINVAL, "sdpa: %s is NULL",
                       !a->q   ? "q"
                       : !a->k ? "k"
                       : !a->v ? "v"
                               : "out");
    const attnconf_tensor *q = a->q, *k = a->k, *v = a->v;
    attnconf_tensor *out = a->out;
    int st;
    if ((st = gb_check_desc(ctx, q, "q", 1)) || (st = gb_check_desc(ctx, k, "k", 1)) ||
        (st = gb_check_desc(ctx, v, "v", 1)) || (st = gb_check_desc(ctx, out, "out", 1)))
        return st;
    for (int i = 0; i < 3; i++) {
        const attnconf_tensor *t = i == 0 ? q : i == 1 ? k : v;
        if (t->dtype != ATTNCONF_F32 && t->dtype != ATTNCONF_F16 && t->dtype != ATTNCONF_BF16)
            return gb_fail(ctx, ATTNCONF_EDTYPE, "%s: dtype %s has no ggml float type",
                           i == 0   ? "q"
                           : i == 1 ? "k"
                                    : "v",
                           gb_dtype_name(t->dtype));
    }
    const int64_t B = q->shape[0], Hq = q->shape[1], Lq = q->shape[2], D = q->shape[3];
    const int64_t Hkv = k->shape[1], Lk = k->shape[2], Dv = v->shape[3];

    /* ggml_can_mul_mat(k, q), asserted by ggml_flash_attn_ext and ggml_mul_mat. */
    if (k->shape[3] != D)
        return gb_fail(ctx, ATTNCONF_EINVAL,
                       "k head dim %lld != q head dim %lld: ggml would abort on "
                       "GGML_ASSERT(ggml_can_mul_mat(k, q)) (k->ne[0] == q->ne[0])",
                       (long long)k->shape[3], (long long)D);
    if (Hkv == 0 || Hq % Hkv != 0)
        return gb_fail(ctx, ATTNCONF_EINVAL,
                       "Hq = %lld is not a multiple of Hkv = %lld: ggml would abort on "
                       "GGML_ASSERT(ggml_can_mul_mat(k, q)) (q->ne[2] %% k->ne[2] == 0)",
                       (long long)Hq, (long long)Hkv);
    if (k->shape[0] != B || v->shape[0] != B)
        return gb_fail(ctx, ATTNCONF_EINVAL,
                       "batch of q, k, v differ: ggml would abort on "
                       "GGML_ASSERT(q->ne[3] == k->ne[3]) / (q->ne[3] == v->ne[3])");
    /* ggml_flash_attn_ext does not check V against K ("TODO: check if vT can be multiplied by
     * (k*qT)") and reads V row j for every key j of K; ggml_mul_mat(vT, kq) asserts it. */
    if (v->shape[1] != Hkv || v->shape[2] != Lk)
        return gb_fail(ctx, ATTNCONF_EINVAL,
                       "v (heads %lld, keys %lld) does not match k (heads %lld, keys %lld): "
                       "ggml_flash_attn_ext does not check V and would read past it",
                       (long long)v->shape[1], (long long)v->shape[2], (long long)Hkv,
                       (long long)Lk);
    if (out->shape[0] != B || out->shape[1] != Hq || out->shape[2] != Lq || out->shape[3] != Dv)
        return gb_fail(ctx, ATTNCONF_EINVAL, "out shape is not (B, Hq, Lq, Dv)");
#if ATTNCONF_GGML_OPS
    if (Lk == 0)
        return gb_fail(ctx, ATTNCONF_ENOTSUP,
                       "Lk = 0: ggml_mul_mat(ggml_cont(ggml_transpose(v)), kq) would abort on "
                       "GGML_ASSERT(!ggml_is_transposed(a)) (a [0, Dv] tensor has nb[0] > nb[1])");
#endif
    if (a->causal && a->mask)
        return gb_fail(ctx, ATTNCONF_EINVAL,
                       "a causal flag and a mask: ggml takes one mask tensor (causality is that "
                       "mask, as llama.cpp builds it), so there is no single ggml call for both");
    /* The output is written as f32 with the host's strides: check the buffer holds it. */
    {
        uint64_t last = 0;
        int empty = 0;
        for (int i = 0; i < 4; i++) {
            if (out->shape[i] == 0)
                empty = 1;
            else
                last += (uint64_t)(out->shape[i] - 1) * (uint64_t)out->strides[i];
        }
        if (!empty && (last + 1) * sizeof(float) > a->out_capacity)
            return gb_fail(ctx, ATTNCONF_EINVAL,
                           "out_capacity is too small for the f32 output ggml produces");
    }

    float scale;
    if (a->has_scale) {
        scale = (float)a->scale;
        if (isfinite(a->scale) && fabs(a->scale) > FLT_MAX) /* SPEC clause 2: EINVAL */
            return gb_fail(ctx, ATTNCONF_EINEXPRESSIBLE,
                           "scale %.17g is past the f32 range: ggml takes the scale as a float, "
                           "which cannot hold it",
                           a->scale);
        if ((double)scale != a->scale)
            return gb_fail(ctx, ATTNCONF_ENOTSUP,
                           "scale %.17g is not a float value (it would become %.9g): ggml takes "
                           "the scale as a float",
                           a->scale, (double)scale);
    } else {
        scale = 1.0f / sqrtf((float)D); /* llama.cpp's kq_scale */
    }
    /* The terms of current models, as llama.cpp passes them: f_attn_logit_softcapping and
     * f_max_alibi_bias are floats, the sinks an F32 [n_head] tensor.  ggml validates none of
     * them (a negative or NaN softcap, a negative max_bias, an infinite sink are computed), and
     * neither does this shim: what ggml does with them is what is judged. */
    float softcap = 0.0f, max_bias = 0.0f;
    if ((st = gb_float_arg(ctx, a->softcap, "softcap", "logit_softcap", &softcap)) ||
        (st = gb_float_arg(ctx, a->alibi_max_bias, "alibi_max_bias", "max_bias", &max_bias)))
        return st;
    if (a->chunk < 0)
        return gb_fail(ctx, ATTNCONF_EINEXPRESSIBLE,
                       "chunk %lld: llama.cpp's chunk size (n_swa with LLAMA_SWA_TYPE_CHUNKED) is "
                       "a uint32_t, so a negative chunk cannot be written",
                       (long long)a->chunk);

    /* Sizes of the tensors ggml allocates (results and intermediates), for one context. */
    const uint64_t n_out = (uint64_t)Dv * Hq * Lq * B;
    uint64_t data_bytes = n_out * 4;
#if ATTNCONF_GGML_OPS
    data_bytes += 2 * (uint64_t)Lk * Lq * Hq * B * 4; /* kq, softmax */
    if (softcap != 0.0f)
        data_bytes += 3 * (uint64_t)Lk * Lq * Hq * B * 4;           /* scale, tanh, scale */
    data_bytes += (uint64_t)Lk * Dv * Hkv * B * gb_esize(v->dtype); /* cont(transpose(v)) */
    data_bytes += n_out * 4;                                        /* permute + cont */
#endif
    if (data_bytes > GB_MAX_BYTES)
        return gb_fail(ctx, ATTNCONF_ENOMEM, "the ggml tensors would need %llu bytes",
                       (unsigned long long)data_bytes);
    size_t mem = (size_t)data_bytes + 16 * (ggml_tensor_overhead() + 2 * GGML_MEM_ALIGN) +
                 ggml_graph_overhead_custom(GB_GRAPH_SIZE, false) + 4096;
    size_t mem_in = 8 * ggml_tensor_overhead() + 1024;

    void *pool = malloc(mem), *pool_in = malloc(mem_in);
    void *own_q = NULL, *own_k = NULL, *own_v = NULL, *own_m = NULL, *own_s = NULL, *work = NULL;
    struct ggml_context *cin = NULL, *c = NULL;
    int rc = ATTNCONF_OK;
    if (!pool || !pool_in) {
        rc = gb_fail(ctx, ATTNCONF_ENOMEM, "out of memory for the ggml context (%zu bytes)", mem);
        goto done;
    }
    /* Leaves (no allocation: their data is the host memory or our own buffers). */
    cin = ggml_init(
        (struct ggml_init_params){.mem_size = mem_in, .mem_buffer = pool_in, .no_alloc = true});
    c = ggml_init(
        (struct ggml_init_params){.mem_size = mem, .mem_buffer = pool, .no_alloc = false});
    if (!cin || !c) {
        rc = gb_fail(ctx, ATTNCONF_EBACKEND, "ggml_init failed");
        goto done;
    }
    struct ggml_tensor *gq = gb_leaf(cin, q, GGML_TYPE_F32, &own_q);
    struct ggml_tensor *gk = gq ? gb_leaf(cin, k, gb_type(k->dtype), &own_k) : NULL;
    struct ggml_tensor *gv = gk ? gb_leaf(cin, v, gb_type(v->dtype), &own_v) : NULL;
    if (!gv) {
        rc = gb_fail(ctx, ATTNCONF_ENOMEM, "out of memory packing q, k or v");
        goto done;
    }
    struct ggml_tensor *gm = NULL;
    if ((rc = gb_mask(ctx, cin, a, B, Hq, Lq, Lk, &gm, &own_m)) != ATTNCONF_OK)
        goto done;
    struct ggml_tensor *gs_sinks = NULL;
    if (a->sinks) {
        gs_sinks = ggml_new_tensor_1d(cin, GGML_TYPE_F32, Hq);
        own_s = malloc((size_t)(Hq ? Hq : 1) * sizeof(float));
        if (!own_s) {
            rc = gb_fail(ctx, ATTNCONF_ENOMEM, "out of memory for the sinks");
            goto done;
        }
        memcpy(own_s, a->sinks, (size_t)Hq * sizeof(float));
        gs_sinks->data = own_s;
    }

#if ATTNCONF_GGML_OPS
    struct ggml_tensor *kq = ggml_mul_mat(c, gk, gq); /* [Lk, Lq, Hq, B] */
    ggml_mul_mat_set_prec(kq, ctx->prec);
    if (softcap != 0.0f) { /* llama.cpp caps the raw q.k, before soft_max_ext's kq_scale */
        kq = ggml_scale(c, kq, 1.0f / softcap);
        kq = ggml_tanh(c, kq);
        kq = ggml_scale(c, kq, softcap);
    }
    kq = ggml_soft_max_ext(c, kq, gm, scale, max_bias);
    if (gs_sinks)
        ggml_soft_max_add_sinks(kq, gs_sinks);
    struct ggml_tensor *vt = ggml_cont(c, ggml_transpose(c, gv));             /* [Lk, Dv, Hkv, B] */
    struct ggml_tensor *kqv = ggml_mul_mat(c, vt, kq);                        /* [Dv, Lq, Hq, B] */
    struct ggml_tensor *res = ggml_cont(c, ggml_permute(c, kqv, 0, 2, 1, 3)); /* [Dv,Hq,Lq,B] */
#else
    struct ggml_tensor *res = ggml_flash_attn_ext(c, gq, gk, gv, gm, scale, max_bias, softcap);
    ggml_flash_attn_ext_set_prec(res, ctx->prec);
    if (gs_sinks)
        ggml_flash_attn_ext_add_sinks(res, gs_sinks);
#endif

    struct ggml_cgraph *gf = ggml_new_graph_custom(c, GB_GRAPH_SIZE, false);
    ggml_build_forward_expand(gf, res);
    struct ggml_cplan plan = ggml_graph_plan(gf, ctx->n_threads, NULL);
    plan.use_ref = ctx->use_ref != 0;
    if (plan.work_size > 0) {
        work = malloc(plan.work_size);
        if (!work) {
            rc = gb_fail(ctx, ATTNCONF_ENOMEM, "out of memory for ggml's %zu-byte work buffer",
                         plan.work_size);
            goto done;
        }
        plan.work_data = work;
    }
    enum ggml_status gs = ggml_graph_compute(gf, &plan);
    if (gs != GGML_STATUS_SUCCESS) {
        rc = gb_fail(ctx, ATTNCONF_EBACKEND, "ggml_graph_compute returned status %d", (int)gs);
        goto done;
    }

    /* res: f32 [Dv, Hq, Lq, B], contiguous (memory [B][Lq][Hq][Dv]). */
    {
        const float *r = res->data;
        float *o = out->data;
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < Hq; h++)
                for (int64_t i = 0; i < Lq; i++)
                    for (int64_t d = 0; d < Dv; d++)
                        o[b * out->strides[0] + h * out->strides[1] + i * out->strides[2] +
                          d * out->strides[3]] = r[((b * Lq + i) * Hq + h) * Dv + d];
        out->dtype = ATTNCONF_F32; /* what ggml produced, whatever the case's dtype */
    }

done:
    if (c)
        ggml_free(c);
    if (cin)
        ggml_free(cin);
    free(work);
    free(own_q);
    free(own_k);
    free(own_v);
    free(own_m);
    free(own_s);
    free(pool);
    free(pool_in);
    return rc;
}

static int gb_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > GGML_MAX_N_THREADS ? GGML_MAX_N_THREADS : (int)n;
}

static int gb_open_with_options(void **vctx, const attnconf_option *options, size_t n_options,
                                char *err, size_t errlen)
{
    if (!vctx)
        return ATTNCONF_EINVAL;
    int threads = gb_default_threads();
    enum ggml_prec prec = GGML_PREC_F32;
    int use_ref = 0;
    for (size_t i = 0; i < n_options; i++) {
        const char *key = options[i].key ? options[i].key : "";
        const char *val = options[i].value ? options[i].value : "";
        if (strcmp(key, "threads") == 0) {
            if (strcmp(val, "auto") == 0) {
                threads = gb_default_threads();
            } else {
                char *end = NULL;
                long n = strtol(val, &end, 10);
                if (!*val || *end || n < 1 || n > GGML_MAX_N_THREADS) {
                    if (err && errlen)
                        snprintf(err, errlen, "threads=%.32s: expected auto or 1..%d", val,
                                 GGML_MAX_N_THREADS);
                    return ATTNCONF_EINVAL;
                }
                threads = (int)n;
            }
        } else if (strcmp(key, "prec") == 0) {
            if (strcmp(val, "f32") == 0) {
                prec = GGML_PREC_F32;
            } else if (strcmp(val, "default") == 0) {
                prec = GGML_PREC_DEFAULT;
            } else {
                if (err && errlen)
                    snprintf(err, errlen, "prec=%.32s: expected default or f32", val);
                return ATTNCONF_EINVAL;
            }
        } else if (strcmp(key, "kernels") == 0) {
            if (strcmp(val, "auto") == 0 || strcmp(val, "ref") == 0) {
                use_ref = strcmp(val, "ref") == 0;
            } else {
                if (err && errlen)
                    snprintf(err, errlen, "kernels=%.32s: expected auto or ref", val);
                return ATTNCONF_EINVAL;
            }
        } else {
            if (err && errlen)
                snprintf(err, errlen, "unknown option %.64s", key);
            return ATTNCONF_EINVAL;
        }
    }
    gb_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ATTNCONF_ENOMEM;
    c->n_threads = threads;
    c->prec = prec;
    c->use_ref = use_ref;
    ggml_cpu_init(); /* idempotent: F16 tables and CPU feature detection */
    *vctx = c;
    return ATTNCONF_OK;
}

static int gb_open(void **vctx)
{
    return gb_open_with_options(vctx, NULL, 0, NULL, 0);
}

static void gb_close(void *ctx)
{
    free(ctx);
}

static uint64_t gb_capabilities(void *ctx)
{
    (void)ctx;
    /* What reaches ggml: f32/f16/bf16 K/V in their own type (q widened exactly), bool and
     * additive masks as its additive mask, causal (with any offset) as that mask, GQA by head
     * counts, Dv != D, strided views, an explicit float scale, masks broadcast over heads and
     * batch by ggml and expanded along Lq/Lk; logit_softcap, max_bias and the sinks tensor;
     * chunk, documents and blocks through the KQ mask llama.cpp builds.  No mask builder. */
    return ATTNCONF_CAP_F32 | ATTNCONF_CAP_F16 | ATTNCONF_CAP_BF16 | ATTNCONF_CAP_MASK_BOOL |
           ATTNCONF_CAP_MASK_ADD | ATTNCONF_CAP_CAUSAL | ATTNCONF_CAP_CAUSAL_OFFSET |
           ATTNCONF_CAP_GQA | ATTNCONF_CAP_DV_NE_D | ATTNCONF_CAP_STRIDED | ATTNCONF_CAP_SCALE |
           ATTNCONF_CAP_MASK_BCAST | ATTNCONF_CAP_SOFTCAP | ATTNCONF_CAP_ALIBI |
           ATTNCONF_CAP_SINKS | ATTNCONF_CAP_CHUNK | ATTNCONF_CAP_SEGMENTS | ATTNCONF_CAP_BLOCKS;
}

static const char *gb_last_error(void *vctx)
{
    gb_ctx *ctx = vctx;
    return ctx ? ctx->err : "";
}

static const attnconf_option_info gb_options[] = {
    {"threads", "auto",
     "CPU threads for ggml_graph_compute: auto (every online CPU) or a count 1..512"},
    {"prec", "f32",
     "ggml_flash_attn_ext_set_prec / ggml_mul_mat_set_prec: f32 (GGML_PREC_F32, as llama.cpp "
     "sets) or default (GGML_PREC_DEFAULT)"},
    {"kernels", "auto",
     "auto (ggml-cpu picks its kernel by shape) or ref (ggml_cplan.use_ref, as "
     "ggml_backend_cpu_set_use_ref: reference kernels only; flash attention then always runs its "
     "one-row kernel, never the tiled or split-KV one)"},
    {NULL, NULL, NULL},
};

static char gb_version[96];

static const attnconf_backend gb_table = {
    .abi_version = ATTNCONF_ABI_VERSION,
    .struct_size = sizeof(attnconf_backend),
    .name = GB_NAME,
    .version = gb_version,
    .open = gb_open,
    .close = gb_close,
    .capabilities = gb_capabilities,
    .sdpa = gb_sdpa,
    .build_mask = NULL,
    .last_error = gb_last_error,
    .options = gb_options,
    .open_with_options = gb_open_with_options,
};

/* The plugin entry point (the only exported symbol). */
__attribute__((visibility("default"))) const attnconf_backend *
attnconf_backend_entry(uint32_t host_abi_version)
{
    if (host_abi_version != ATTNCONF_ABI_VERSION)
        return NULL;
    if (!gb_version[0])
        snprintf(gb_version, sizeof gb_version, "ggml %s (commit %s), CPU backend", ggml_version(),
                 ggml_commit());
    return &gb_table;
}
