/* reference_backend.c — the attnref reference implementation as an attnconf plugin (ABI v1).
 *
 * The only exported symbol is attnconf_backend_entry (the target builds with hidden visibility);
 * everything else is static or hidden (the adapters shared with other plugins: rb_common.h).  The plugin is a thin adapter: attnconf_tensor and attnref_tensor
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
#include "rb_common.h"
#include "reference_cache.h"
#include "reference_paged.h"

#if defined(ATTNCONF_CACHE_MUTANT) && ATTNCONF_CACHE_MUTANT
#include "cache_mutants.h" /* test-only: one cache bug in reference_cache.c */
#define RB_MUTANT 0
#define RB_NAME RCM_NAME
#elif defined(ATTNCONF_PAGED_MUTANT) && ATTNCONF_PAGED_MUTANT
#include "paged_mutants.h" /* test-only: one paging bug in reference_paged.c */
#define RB_MUTANT 0
#define RB_NAME RPM_NAME
#elif defined(ATTNCONF_MUTANT) && ATTNCONF_MUTANT
#include "mutants.h"
#define RB_MUTANT 1
#define RB_NAME RBM_NAME
#else
#define RB_MUTANT 0
#define RB_NAME "reference"
#endif

/* The project version (CMakeLists.txt project(VERSION)); the plugin has no other version.  A
 * mutant says which SPEC.md clauses its bug breaks, for `attnconf report`'s clause table. */
#if defined(RPM_BREAKS)
#define RB_VERSION "0.1.0 (test-only mutant; breaks SPEC.md clauses " RPM_BREAKS ")"
#elif defined(RCM_BREAKS)
#define RB_VERSION "0.1.0 (test-only mutant; breaks SPEC.md clauses " RCM_BREAKS ")"
#elif defined(RBM_BREAKS)
#define RB_VERSION "0.1.0 (test-only mutant; breaks SPEC.md clauses " RBM_BREAKS ")"
#else
#define RB_VERSION "0.1.0"
#endif

/* Per-context state (rb_ctx, rb_common.h): only the text of the last error.  The adapters
 * (rb_fail, rb_finish, rb_to_ref, rb_sdpa_unpack, ...) live in rb_common.c, shared with the KV
 * cache members and the `cpu` plugin. */

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
           ATTNCONF_CAP_STRIDE0 | ATTNCONF_CAP_KV_LEN | ATTNCONF_CAP_SOFTCAP | ATTNCONF_CAP_ALIBI |
           ATTNCONF_CAP_SINKS | ATTNCONF_CAP_CHUNK | ATTNCONF_CAP_SEGMENTS | ATTNCONF_CAP_BLOCKS |
           ATTNCONF_CAP_MASK_CHUNK | ATTNCONF_CAP_MASK_SEGMENTS | ATTNCONF_CAP_MASK_BLOCKS |
           RC_CAPS | RP_CAPS;
}

static int rb_sdpa(void *vctx, const attnconf_sdpa_args *args)
{
    rb_ctx *ctx = vctx;
    if (!ctx)
        return ATTNCONF_EINVAL;
    rb_sdpa_call c;
    int rc = rb_sdpa_unpack(ctx, args, &c);
    if (rc != ATTNCONF_OK)
        return rc;
    attnref_tensor *mask = c.has_mask ? &c.mask : NULL;

    attnref_diag diag = {{0}};
#if RB_MUTANT
    /* Test-only: the same call with the mutant's one bug (it may change out.dtype). */
    int st = rbm_sdpa(&c.q, &c.k, &c.v, mask, &c.p, &c.out, args->out_capacity, &diag);
#else
    int st = attnref_sdpa(&c.q, &c.k, &c.v, mask, &c.p, &c.out, &diag);
#endif
    if (st == ATTNREF_OK)
        args->out->dtype = (int32_t)c.out.dtype;
    return rb_finish(ctx, st, &diag);
}

static int rb_build_mask(void *vctx, const attnconf_mask_args *args)
{
    rb_ctx *ctx = vctx;
    if (!ctx)
        return ATTNCONF_EINVAL;
    attnref_mask_params p;
    attnref_tensor keep;
    int rc = rb_mask_unpack(ctx, args, &p, &keep);
    if (rc != ATTNCONF_OK)
        return rc;

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
    RP_TABLE_MEMBERS,
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
