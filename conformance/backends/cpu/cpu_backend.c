/* cpu_backend.c — the `cpu` backend plugin (ABI v1): a fast CPU SDPA with the reference's
 * semantics.  See README.md next to this file.
 *
 * What comes from where:
 *   - sdpa: argument unpacking and the output-capacity check are the reference plugin's
 *     (rb_sdpa_unpack, rb_common.c), validation is attnref_sdpa_check (the reference's own
 *     checks: the same error codes and messages for every invalid call), and the computation is
 *     this plugin's (cpu_sdpa.c: tiled online softmax, AVX2 or portable micro-kernels, a thread
 *     pool).
 *   - build_mask: attnref_build_mask, as the reference plugin (not a hot path).
 *   - KV cache members: the reference plugin's (reference_cache.c, bookkeeping only); attention
 *     through a cache is a call to this plugin's sdpa (the host makes it), so it runs here.
 *   - paged_append / paged_sdpa (sixth revision, SPEC.md clause 23): cpu_paged.c; paged_sdpa
 *     runs the same kernels as sdpa, reading each page of the pool in place through the block
 *     table (cpu_sdpa.c kv_row).
 * The only exported symbol is attnconf_backend_entry (hidden visibility elsewhere).
 *
 * Options (cpu_options.h): threads, isa, and the test-only slowdown.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attnconf/backend.h"
#include "attnref/mask.h"
#include "attnref/sdpa.h"
#include "attnref/status.h"
#include "attnref/tensor.h"
#include "cpu_options.h"
#include "cpu_paged.h"
#include "cpu_sdpa.h"
#include "rb_common.h"
#include "reference_cache.h"

/* The project version (CMakeLists.txt project(VERSION)). */
#define CPU_VERSION "0.1.0"

typedef struct cpu_ctx {
    rb_ctx base; /* first: the shared KV cache members record their errors here */
    cpu_options opt;
    cpu_engine eng;
} cpu_ctx;

static int cpu_open_with_options(void **ctx, const attnconf_option *options, size_t n_options,
                                 char *err, size_t errlen)
{
    char scratch[256]; /* room for any message: cpu_open passes no buffer */
    if (!err || errlen == 0) {
        err = scratch;
        errlen = sizeof scratch;
    }
    err[0] = '\0';
    if (!ctx)
        return ATTNCONF_EINVAL;
    cpu_options opt;
    int rc = cpu_options_parse(options, n_options, &opt, err, errlen);
    if (rc != ATTNCONF_OK)
        return rc;
    const cpu_kernels *k = cpu_options_kernels(opt.isa, opt.prefetch, err, errlen);
    if (!k)
        return ATTNCONF_ENOTSUP;
    cpu_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "cannot allocate the context");
        return ATTNCONF_ENOMEM;
    }
    c->opt = opt;
    if (cpu_engine_init(&c->eng, opt.threads, k) != 0) {
        free(c);
        snprintf(err, errlen, "cannot set up %d threads", opt.threads);
        return ATTNCONF_ENOMEM;
    }
    *ctx = c;
    return ATTNCONF_OK;
}

static int cpu_open(void **ctx)
{
    return cpu_open_with_options(ctx, NULL, 0, NULL, 0);
}

static void cpu_close(void *vctx)
{
    cpu_ctx *c = vctx;
    if (!c)
        return;
    cpu_engine_free(&c->eng);
    free(c);
}

static uint64_t cpu_capabilities(void *ctx)
{
    (void)ctx;
    /* Everything the reference serves: every mask kind and parameter, the terms of current
     * models (softcap, ALiBi, sinks, chunk, documents, blocks: in the kernels, cpu_sdpa.c), any
     * strides (0 included), the KV caches (reference_cache.c); build_mask is the reference's,
     * so it takes chunk, documents and blocks too; paged KV (cpu_paged.c), with every term. */
    return ATTNCONF_CAP_F32 | ATTNCONF_CAP_F16 | ATTNCONF_CAP_BF16 | ATTNCONF_CAP_MASK_BOOL |
           ATTNCONF_CAP_MASK_ADD | ATTNCONF_CAP_CAUSAL | ATTNCONF_CAP_CAUSAL_OFFSET |
           ATTNCONF_CAP_GQA | ATTNCONF_CAP_DV_NE_D | ATTNCONF_CAP_STRIDED | ATTNCONF_CAP_SCALE |
           ATTNCONF_CAP_MASK_BCAST | ATTNCONF_CAP_BUILD_MASK | ATTNCONF_CAP_WINDOW |
           ATTNCONF_CAP_LENGTHS | ATTNCONF_CAP_LEFT_PAD | ATTNCONF_CAP_SDPA_WINDOW |
           ATTNCONF_CAP_SDPA_LENGTHS | ATTNCONF_CAP_SDPA_LEFT_PAD | ATTNCONF_CAP_STRIDE0 |
           ATTNCONF_CAP_KV_LEN | ATTNCONF_CAP_SOFTCAP | ATTNCONF_CAP_ALIBI | ATTNCONF_CAP_SINKS |
           ATTNCONF_CAP_CHUNK | ATTNCONF_CAP_SEGMENTS | ATTNCONF_CAP_BLOCKS |
           ATTNCONF_CAP_MASK_CHUNK | ATTNCONF_CAP_MASK_SEGMENTS | ATTNCONF_CAP_MASK_BLOCKS |
           ATTNCONF_CAP_PAGED | RC_CAPS;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* TEST-ONLY (option slowdown): spin on the calling thread until `extra` seconds have passed,
 * doing arithmetic the compiler cannot drop, so the call takes (1 + F) times as long. */
static void spin_for(double extra)
{
    const double until = now_s() + extra;
    volatile double sink = 1.0;
    while (now_s() < until)
        for (int i = 0; i < 1000; i++)
            sink = sink * 1.0000001 + 1e-9;
}

static int cpu_sdpa(void *vctx, const attnconf_sdpa_args *args)
{
    cpu_ctx *c = vctx;
    if (!c)
        return ATTNCONF_EINVAL;
    const double t0 = c->opt.slowdown > 0.0 ? now_s() : 0.0;
    rb_sdpa_call call;
    int rc = rb_sdpa_unpack(&c->base, args, &call);
    if (rc != ATTNCONF_OK)
        return rc;
    const attnref_tensor *mask = call.has_mask ? &call.mask : NULL;
    attnref_diag diag = {{0}};
    int st = attnref_sdpa_check(&call.q, &call.k, &call.v, mask, &call.p, &call.out, &diag);
    if (st != ATTNREF_OK)
        return rb_finish(&c->base, st, &diag);
    const int run = cpu_sdpa_run(&c->eng, &call.q, &call.k, &call.v, mask, &call.p, &call.out,
                                 c->base.err, sizeof c->base.err);
    if (run < 0)
        return ATTNCONF_ENOMEM;
    if (run > 0) {
        /* A shape too large to tile (cpu_sdpa.h): the reference computes it, O(Lk) memory. */
        st = attnref_sdpa(&call.q, &call.k, &call.v, mask, &call.p, &call.out, &diag);
        if (st != ATTNREF_OK)
            return rb_finish(&c->base, st, &diag);
    }
    args->out->dtype = (int32_t)call.out.dtype;
    c->base.err[0] = '\0';
    if (c->opt.slowdown > 0.0)
        spin_for(c->opt.slowdown * (now_s() - t0));
    return ATTNCONF_OK;
}

static int cpu_paged_sdpa_m(void *vctx, const attnconf_paged_args *args)
{
    cpu_ctx *c = vctx;
    if (!c)
        return ATTNCONF_EINVAL;
    const double t0 = c->opt.slowdown > 0.0 ? now_s() : 0.0;
    const int rc = cpu_paged_sdpa(&c->base, &c->eng, args);
    if (rc == ATTNCONF_OK && c->opt.slowdown > 0.0)
        spin_for(c->opt.slowdown * (now_s() - t0));
    return rc;
}

static int cpu_paged_append_m(void *vctx, const attnconf_paged_append_args *args)
{
    cpu_ctx *c = vctx;
    return c ? cpu_paged_append(&c->base, args) : ATTNCONF_EINVAL;
}

static int cpu_build_mask(void *vctx, const attnconf_mask_args *args)
{
    cpu_ctx *c = vctx;
    if (!c)
        return ATTNCONF_EINVAL;
    attnref_mask_params p;
    attnref_tensor keep;
    int rc = rb_mask_unpack(&c->base, args, &p, &keep);
    if (rc != ATTNCONF_OK)
        return rc;
    attnref_diag diag = {{0}};
    return rb_finish(&c->base, attnref_build_mask(&p, &keep, &diag), &diag);
}

static const char *cpu_last_error(void *vctx)
{
    cpu_ctx *c = vctx;
    return c ? c->base.err : "";
}

static const attnconf_backend cpu_table = {
    .abi_version = ATTNCONF_ABI_VERSION,
    .struct_size = sizeof(attnconf_backend),
    .name = "cpu",
    .version = CPU_VERSION,
    .open = cpu_open,
    .close = cpu_close,
    .capabilities = cpu_capabilities,
    .sdpa = cpu_sdpa,
    .build_mask = cpu_build_mask,
    .last_error = cpu_last_error,
    .options = cpu_option_info,
    .open_with_options = cpu_open_with_options,
    RC_TABLE_MEMBERS,
    .paged_append = cpu_paged_append_m,
    .paged_sdpa = cpu_paged_sdpa_m,
};

/* The plugin entry point (the only exported symbol): the table for a host that speaks ABI v1,
 * NULL for any other version. */
__attribute__((visibility("default"))) const attnconf_backend *
attnconf_backend_entry(uint32_t host_abi_version)
{
    if (host_abi_version != ATTNCONF_ABI_VERSION)
        return NULL;
    return &cpu_table;
}
