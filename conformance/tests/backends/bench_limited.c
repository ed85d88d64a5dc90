/* bench_limited.c — a TEST-ONLY backend for `attnconf bench`: the reference backend reporting
 * fewer capabilities (f32 only, and none of the sdpa mask parameters window / lengths / left
 * padding), so a suite shows NOT_SUPPORTED (f16, bf16) and the boolean mask route ("via":
 * "mask") for the shapes that need a parameter.  Its option crash_on_lk=N makes the second sdpa
 * call with Lk = N die of SIGSEGV (the first is the validated one), so the bench's child
 * isolation is shown to turn a crash into that benchmark's ERROR while the others run.
 * The reference's entry point is renamed so this file's is the one exported.
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define attnconf_backend_entry bl_reference_entry
#include "../../backends/reference/reference_backend.c"
#undef attnconf_backend_entry

typedef struct bl_ctx {
    void *ref;          /* the reference's context */
    long long crash_lk; /* 0 = never */
    int calls;          /* sdpa calls with Lk = crash_lk */
} bl_ctx;

static const attnconf_backend *bl_ref;

static int bl_open_with_options(void **ctx, const attnconf_option *opt, size_t n, char *err,
                                size_t errlen)
{
    bl_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ATTNCONF_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        char *end;
        c->crash_lk = strtoll(opt[i].value, &end, 10);
        if (strcmp(opt[i].key, "crash_on_lk") != 0 || *end || c->crash_lk < 0) {
            snprintf(err, errlen, "crash_on_lk: expected a key count");
            free(c);
            return ATTNCONF_EINVAL;
        }
    }
    int rc = bl_ref->open(&c->ref);
    if (rc != ATTNCONF_OK) {
        free(c);
        return rc;
    }
    *ctx = c;
    return ATTNCONF_OK;
}

static int bl_open(void **ctx)
{
    return bl_open_with_options(ctx, NULL, 0, NULL, 0);
}

static void bl_close(void *ctx)
{
    bl_ctx *c = ctx;
    if (c)
        bl_ref->close(c->ref);
    free(c);
}

static uint64_t bl_caps(void *ctx)
{
    (void)ctx;
    return ATTNCONF_CAP_F32 | ATTNCONF_CAP_MASK_BOOL | ATTNCONF_CAP_MASK_BCAST |
           ATTNCONF_CAP_CAUSAL | ATTNCONF_CAP_CAUSAL_OFFSET | ATTNCONF_CAP_GQA |
           ATTNCONF_CAP_DV_NE_D;
}

static int bl_sdpa(void *ctx, const attnconf_sdpa_args *a)
{
    bl_ctx *c = ctx;
    if (c->crash_lk && a->k->shape[2] == c->crash_lk && ++c->calls == 2)
        raise(SIGSEGV);
    return bl_ref->sdpa(c->ref, a);
}

static const char *bl_last_error(void *ctx)
{
    return bl_ref->last_error(((bl_ctx *)ctx)->ref);
}

static const attnconf_option_info bl_options[] = {
    {"crash_on_lk", "0", "die of SIGSEGV on the 2nd sdpa call with this many keys (0: never)"},
    {NULL, NULL, NULL}};

/* A second-revision table: no KV cache members, so no cache capability either. */
static const attnconf_backend bl_table = {
    .abi_version = ATTNCONF_ABI_VERSION,
    .struct_size = offsetof(attnconf_backend, open_with_options) +
                   sizeof(((attnconf_backend *)0)->open_with_options),
    .name = "bench_limited",
    .version = "0",
    .open = bl_open,
    .close = bl_close,
    .capabilities = bl_caps,
    .sdpa = bl_sdpa,
    .build_mask = NULL,
    .last_error = bl_last_error,
    .options = bl_options,
    .open_with_options = bl_open_with_options,
};

__attribute__((visibility("default"))) const attnconf_backend *attnconf_backend_entry(uint32_t v)
{
    bl_ref = bl_reference_entry(v);
    return bl_ref ? &bl_table : NULL;
}
