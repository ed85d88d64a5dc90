/* options_backend.c — TEST-ONLY plugin that takes backend options (ABI v1, second revision).
 *
 * Options: `mode` = ok | refuse (default ok; refuse makes open_with_options fail, any other
 * value is EINVAL) and `label` = any text (default none).  It computes nothing: sdpa fails with
 * EBACKEND and last_error "options_test received mode=M label=L", so a run shows exactly what
 * reached the plugin (and the test can check that the case's rerun command reproduces it).
 *
 * OPTIONS_BACKEND_OLD_TABLE: the same members, but struct_size ends before `options` (a
 * first-revision table); the host must not read past struct_size, so the options are invisible.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnconf/backend.h"

typedef struct ob_ctx {
    char mode[16];
    char label[128];
    int has_label;
    char err[512];
} ob_ctx;

static int ob_open(void **ctx)
{
    ob_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ATTNCONF_ENOMEM;
    snprintf(c->mode, sizeof c->mode, "ok");
    *ctx = c;
    return ATTNCONF_OK;
}

static int ob_open_with_options(void **ctx, const attnconf_option *o, size_t n, char *err,
                                size_t errlen)
{
    *ctx = NULL;
    ob_ctx *c = NULL;
    int rc = ob_open((void **)&c);
    if (rc != ATTNCONF_OK) {
        snprintf(err, errlen, "out of memory");
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if (strcmp(o[i].key, "mode") == 0) {
            if (strcmp(o[i].value, "refuse") == 0) {
                snprintf(err, errlen, "mode=refuse: refused on request");
                free(c);
                return ATTNCONF_EINVAL;
            }
            if (strcmp(o[i].value, "ok") != 0) {
                snprintf(err, errlen, "mode must be ok or refuse, got '%.64s'", o[i].value);
                free(c);
                return ATTNCONF_EINVAL;
            }
            snprintf(c->mode, sizeof c->mode, "%s", o[i].value);
        } else if (strcmp(o[i].key, "label") == 0) {
            snprintf(c->label, sizeof c->label, "%s", o[i].value);
            c->has_label = 1;
        } else {
            /* The host checks keys against the list; reaching here is a host bug. */
            snprintf(err, errlen, "unknown option '%.64s' reached the backend", o[i].key);
            free(c);
            return ATTNCONF_EINVAL;
        }
    }
    *ctx = c;
    return ATTNCONF_OK;
}

static void ob_close(void *ctx)
{
    free(ctx);
}

static uint64_t ob_caps(void *ctx)
{
    (void)ctx;
    return ATTNCONF_CAP_F32;
}

static int ob_sdpa(void *ctx, const attnconf_sdpa_args *args)
{
    (void)args;
    ob_ctx *c = ctx;
    snprintf(c->err, sizeof c->err, "options_test received mode=%s label=%s", c->mode,
             c->has_label ? c->label : "(none)");
    return ATTNCONF_EBACKEND;
}

static const char *ob_last_error(void *ctx)
{
    return ctx ? ((ob_ctx *)ctx)->err : "";
}

static const attnconf_option_info ob_options[] = {
    {"mode", "ok", "ok or refuse (refuse: open_with_options fails)"},
    {"label", NULL, "any text, echoed in the error of every sdpa call"},
    {NULL, NULL, NULL},
};

static const attnconf_backend ob_table = {
    .abi_version = ATTNCONF_ABI_VERSION,
#ifdef OPTIONS_BACKEND_OLD_TABLE
    .struct_size = offsetof(attnconf_backend, options),
#else
    .struct_size = sizeof(attnconf_backend),
#endif
    .name = "options_test",
    .version = "1",
    .open = ob_open,
    .close = ob_close,
    .capabilities = ob_caps,
    .sdpa = ob_sdpa,
    .build_mask = NULL,
    .last_error = ob_last_error,
    .options = ob_options,
    .open_with_options = ob_open_with_options,
};

__attribute__((visibility("default"))) const attnconf_backend *attnconf_backend_entry(uint32_t v)
{
    (void)v;
    return &ob_table;
}
