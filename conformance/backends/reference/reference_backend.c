/* reference_backend.c — the attnref reference implementation as an attnconf plugin (ABI v1).
 *
 * The only exported symbol is attnconf_backend_entry (the target builds with hidden visibility);
 * everything else is static.  The plugin is a thin adapter: attnconf_tensor and attnref_tensor
 * share dtype values and the (B,H,L,D) + element-strides convention, so a conversion is a field
 * copy, and attnref status codes map 1:1 to ATTNCONF codes (ERANGE, "too large to index", is an
 * invalid argument at this interface).
 *
 * TEST-ONLY MUTANTS.  Compiled with -DATTNCONF_MUTANT=<n> (one of the RBM_* constants in
 * conformance/backends/mutants/mutants.h; targets mutant_<bug>) and linked with mutants.c, the
 * plugin is named "mutant_<bug>" and carries exactly one deliberate bug, so the suite can prove
 * that its cases catch it.  The only difference here is which function the two calls below go
 * to (rbm_sdpa / rbm_build_mask, which wrap the same attnref calls with the bug); validation,
 * error mapping and the table are shared.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnconf/backend.h"
#include "attnref/mask.h"
#include "attnref/sdpa.h"
#include "attnref/status.h"
#include "attnref/tensor.h"
#include "reference_cache.h"

#if defined(ATTNCONF_CACHE_MUTANT) && ATTNCONF_CACHE_MUTANT
#include "cache_mutants.h" /* test-only: one cache bug in reference_cache.c */
#define RB_MUTANT 0
#define RB_NAME RCM_NAME
#elif defined(ATTNCONF_MUTANT) && ATTNCONF_MUTANT
#include "mutants.h"
#define RB_MUTANT 1
#define RB_NAME RBM_NAME
#else
#define RB_MUTANT 0
#define RB_NAME "reference"
#endif

/* The project version (CMakeLists.txt project(VERSION)); the plugin has no other version. */
#define RB_VERSION "0.1.0"

/* Per-context state (rb_ctx, shared with the cache members in reference_cache.h): only the
 * text of the last error, so there is no global error state and two contexts never see each
 * other's messages. */

/* Record an error message on ctx and return code. */
int rb_fail(rb_ctx *ctx, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
    return code;
}

/* Map an attnref status to the ATTNCONF code with the same meaning. */
int rb_map_status(int st)
{
    switch (st) {
    case ATTNREF_OK: return ATTNCONF_OK;
    case ATTNREF_EINVAL: return ATTNCONF_EINVAL;
    case ATTNREF_EDTYPE: return ATTNCONF_EDTYPE;
    case ATTNREF_ENOMEM: return ATTNCONF_ENOMEM;
    case ATTNREF_ERANGE: return ATTNCONF_EINVAL; /* a size the interface cannot accept */
    default: return ATTNCONF_EBACKEND;
    }
}

/* Finish a call: copy the attnref diagnostic (or clear the error) and map the status. */
static int rb_finish(rb_ctx *ctx, int st, const attnref_diag *diag)
{
    if (st == ATTNREF_OK) {
        ctx->err[0] = '\0';
        return ATTNCONF_OK;
    }
    snprintf(ctx->err, sizeof ctx->err, "%s", diag->msg[0] ? diag->msg : attnref_strerror(st));
    return rb_map_status(st);
}

/* Copy a host descriptor into an attnref descriptor.  Both use element strides and the same
 * dtype values; entries past ndim are copied too (attnref ignores them).  ndim is not checked
 * here: attnref_sdpa / attnref_build_mask validate every descriptor and name the argument. */
void rb_to_ref(const attnconf_tensor *in, attnref_tensor *out)
{
    memset(out, 0, sizeof *out);
    out->data = in->data;
    out->dtype = (attnref_dtype)in->dtype;
    out->ndim = in->ndim;
    for (int i = 0; i < ATTNCONF_MAX_RANK; i++) {
        out->shape[i] = in->shape[i];
        out->strides[i] = in->strides[i];
    }
}

static int rb_open(void **ctx)
{
    if (!ctx)
        return ATTNCONF_EINVAL;
    rb_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ATTNCONF_ENOMEM;
    *ctx = c;
    return ATTNCONF_OK;
}

static void rb_close(void *ctx)
{
    free(ctx);
}

static uint64_t rb_capabilities(void *ctx)
{
    (void)ctx;
    return ATTNCONF_CAP_F32 | ATTNCONF_CAP_F16 | ATTNCONF_CAP_BF16 | ATTNCONF_CAP_MASK_BOOL |
           ATTNCONF_CAP_MASK_ADD | ATTNCONF_CAP_CAUSAL | ATTNCONF_CAP_CAUSAL_OFFSET |
           ATTNCONF_CAP_GQA | ATTNCONF_CAP_DV_NE_D | ATTNCONF_CAP_STRIDED | ATTNCONF_CAP_SCALE |
           ATTNCONF_CAP_MASK_BCAST | ATTNCONF_CAP_BUILD_MASK | ATTNCONF_CAP_WINDOW |
           ATTNCONF_CAP_LENGTHS | ATTNCONF_CAP_LEFT_PAD | ATTNCONF_CAP_SDPA_WINDOW |
           ATTNCONF_CAP_SDPA_LENGTHS | ATTNCONF_CAP_SDPA_LEFT_PAD |
           /* attnref takes any non-negative strides, 0 included; kv_len is a mask param */
           ATTNCONF_CAP_STRIDE0 | ATTNCONF_CAP_KV_LEN | RC_CAPS;
}

/* Check that every element `t` can address lies inside `capacity` bytes, given an element size.
 * Returns 1 if so.  Overflow-safe: extents and strides are bounded by ATTNREF_MAX_NUMEL first. */
static int rb_fits(const attnref_tensor *t, size_t elem, size_t capacity)
{
    if (t->ndim < 0 || t->ndim > ATTNREF_MAX_RANK || elem == 0)
        return 0;
    int64_t last = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] < 0 || t->strides[i] < 0 || t->shape[i] > ATTNREF_MAX_NUMEL ||
            t->strides[i] > ATTNREF_MAX_NUMEL)
            return 0;
        if (t->shape[i] == 0)
            return 1; /* nothing is written */
        last += (t->shape[i] - 1) * t->strides[i];
        if (last > ATTNREF_MAX_NUMEL)
            return 0;
    }
    return (uint64_t)(last + 1) <= (uint64_t)(capacity / elem);
}

static int rb_sdpa(void *vctx, const attnconf_sdpa_args *args)
{
    rb_ctx *ctx = vctx;
    if (!ctx)
        return ATTNCONF_EINVAL;
    if (!args)
        return rb_fail(ctx, ATTNCONF_EINVAL, "sdpa: args is NULL");
    /* The first-revision struct ends before window; a host that knows the mask parameters
     * sets them only when this backend reports their ATTNCONF_CAP_SDPA_* bits, and
     * struct_size gates the read. */
    const size_t sdpa_v1_size = offsetof(attnconf_sdpa_args, window);
    if (args->struct_size < sdpa_v1_size)
        return rb_fail(ctx, ATTNCONF_EINVAL,
                       "sdpa: args.struct_size is smaller than the ABI v1 struct");
    if (!args->q || !args->k || !args->v || !args->out)
        return rb_fail(ctx, ATTNCONF_EINVAL, "sdpa: %s is NULL",
                       !args->q ? "q" : !args->k ? "k" : !args->v ? "v" : "out");

    attnref_tensor q, k, v, mask, out;
    rb_to_ref(args->q, &q);
    rb_to_ref(args->k, &k);
    rb_to_ref(args->v, &v);
    if (args->mask)
        rb_to_ref(args->mask, &mask);
    /* The output dtype is the q dtype (never an upcast); the host's dtype field is a request
     * we overwrite with what we produce, as the ABI asks. */
    rb_to_ref(args->out, &out);
    out.dtype = q.dtype;

    attnref_sdpa_params p = {0};
    p.has_scale = args->has_scale != 0;
    p.scale = args->scale;
    p.causal = args->causal != 0;
    p.has_causal_offset = args->has_causal_offset != 0;
    p.causal_offset = args->causal_offset;
    /* The mask parameters (SPEC clause 19): one lengths / left_padding entry per batch row of
     * q (attnref rejects a q that is not rank 4 before reading them). */
    if (args->struct_size >=
        offsetof(attnconf_sdpa_args, left_padding) + sizeof args->left_padding) {
        p.window = args->window;
        p.lengths = args->lengths;
        p.left_padding = args->left_padding;
        p.batch = args->q->ndim >= 1 ? args->q->shape[0] : 0;
    }

    /* The output buffer must hold every element the strides address; check it before attnref
     * writes (attnref does not know the capacity).  Only a valid float dtype has a size. */
    size_t esz = attnref_dtype_size(out.dtype);
    if (esz != 0 && attnref_dtype_is_float(out.dtype) && out.data &&
        !rb_fits(&out, esz, args->out_capacity)) {
        attnref_diag d = {{0}};
        /* Let attnref name a bad descriptor first; otherwise the capacity is the problem. */
        int st = attnref_tensor_check(&out, "out", &d);
        if (st != ATTNREF_OK)
            return rb_finish(ctx, st, &d);
        return rb_fail(ctx, ATTNCONF_EINVAL,
                       "out: out_capacity is too small for the output shape and strides");
    }

    attnref_diag diag = {{0}};
#if RB_MUTANT
    /* Test-only: the same call with the mutant's one bug (it may change out.dtype). */
    int st = rbm_sdpa(&q, &k, &v, args->mask ? &mask : NULL, &p, &out, args->out_capacity,
                      &diag);
#else
    int st = attnref_sdpa(&q, &k, &v, args->mask ? &mask : NULL, &p, &out, &diag);
#endif
    if (st == ATTNREF_OK)
        args->out->dtype = (int32_t)out.dtype;
    return rb_finish(ctx, st, &diag);
}

static int rb_build_mask(void *vctx, const attnconf_mask_args *args)
{
    rb_ctx *ctx = vctx;
    if (!ctx)
        return ATTNCONF_EINVAL;
    if (!args)
        return rb_fail(ctx, ATTNCONF_EINVAL, "build_mask: args is NULL");
    /* The first-revision struct ends before kv_len; a host that knows kv_len sets it only
     * when this backend reports ATTNCONF_CAP_KV_LEN, and struct_size gates the read. */
    const size_t mask_v1_size = offsetof(attnconf_mask_args, kv_len);
    if (args->struct_size < mask_v1_size)
        return rb_fail(ctx, ATTNCONF_EINVAL,
                       "build_mask: args.struct_size is smaller than the ABI v1 struct");
    if (!args->keep)
        return rb_fail(ctx, ATTNCONF_EINVAL, "build_mask: keep is NULL");

    attnref_mask_params p = {0};
    p.lq = args->lq;
    p.offset = args->offset;
    p.window = args->window;
    p.batch = args->batch;
    p.lengths = args->lengths;
    p.left_padding = args->left_padding;
    if (args->struct_size >= mask_v1_size + sizeof args->kv_len)
        p.kv_len = args->kv_len;
    attnref_tensor keep;
    rb_to_ref(args->keep, &keep);

    attnref_diag diag = {{0}};
#if RB_MUTANT
    int st = rbm_build_mask(&p, &keep, &diag); /* test-only: with the mutant's one bug */
#else
    int st = attnref_build_mask(&p, &keep, &diag);
#endif
    return rb_finish(ctx, st, &diag);
}

static const char *rb_last_error(void *vctx)
{
    rb_ctx *ctx = vctx;
    return ctx ? ctx->err : "";
}

static const attnconf_backend rb_table = {
    .abi_version = ATTNCONF_ABI_VERSION,
    .struct_size = sizeof(attnconf_backend),
    .name = RB_NAME,
    .version = RB_VERSION,
    .open = rb_open,
    .close = rb_close,
    .capabilities = rb_capabilities,
    .sdpa = rb_sdpa,
    .build_mask = rb_build_mask,
    .last_error = rb_last_error,
    RC_TABLE_MEMBERS,
};

/* The plugin entry point (the only exported symbol).  Returns the table for a host that speaks
 * ABI v1, NULL for any other version (the host then reports the mismatch). */
__attribute__((visibility("default"))) const attnconf_backend *
attnconf_backend_entry(uint32_t host_abi_version)
{
    if (host_abi_version != ATTNCONF_ABI_VERSION)
        return NULL;
    return &rb_table;
}
