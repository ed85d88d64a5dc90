/* fuzz_exec_reply.c — libFuzzer target for the exec: reply parser (harness/backend/exec_reply.c): the
 * checks every adapter reply header passes before the bridge reads a payload byte, allocates,
 * or believes a number.  The input is one header line, tried as the reply to each kind of
 * request; whatever a function accepts must keep the promises exec_reply.h makes (a
 * descriptor's payload size and strides inside its buffer, a status in range, sizes within the
 * caps the caller gave), and nothing may crash, leak, hang or read out of bounds (ASan + UBSan
 * in the `fuzz` preset).  replay_exec_reply.c runs the same function without libFuzzer. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend_load.h"
#include "exec_reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The caps a cache_state reply is held to here: small, so that a reply within them can be
 * stored in full. */
#define FZ_MAX_BATCH 64
#define FZ_MAX_LENGTH 4096

#define FZ_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

static void fz_check_desc(const xr_desc *d)
{
    size_t es = 0;
    FZ_CHECK(xr_dtype_name(d->dtype, &es) != NULL);
    FZ_CHECK(d->ndim >= 0 && d->ndim <= ATTNCONF_MAX_RANK);
    int64_t numel = xr_numel(d->ndim, d->shape);
    FZ_CHECK(numel >= 0 && numel <= XR_MAX_NUMEL);
    FZ_CHECK(d->nbytes == (size_t)numel * es);
    int64_t last = 0;
    for (int32_t i = 0; i < d->ndim; i++) {
        FZ_CHECK(d->shape[i] >= 0 && d->strides[i] >= 0);
        if (d->shape[i] > 0)
            last += (d->shape[i] - 1) * d->strides[i];
    }
    FZ_CHECK(numel == 0 || last < numel);
}

static void fz_check_success(json_t *root, const char *op)
{
    char why[768];
    if (!strcmp(op, "hello")) {
        xr_hello h;
        if (xr_hello_take(root, &h, why, sizeof why) == 0) {
            size_t nl = strlen(h.name);
            FZ_CHECK(nl >= 1 && nl <= 64 && h.version);
            FZ_CHECK(h.noptions <= XR_MAX_OPTIONS && (h.noptions == 0) == (h.options == NULL));
            for (size_t i = 0; i < h.noptions; i++)
                FZ_CHECK(hb_option_key_valid(
                    json_string_value(json_object_get(json_array_get(h.options, i), "key"))));
        } else {
            FZ_CHECK(why[0]);
        }
    } else if (!strcmp(op, "sdpa")) {
        double s = 0;
        if (xr_seconds(root, 1.0, &s, why, sizeof why) == 0)
            FZ_CHECK(s == -1 || (isfinite(s) && s >= 0 && s <= 1.0 * 1.01 + 1e-3));
        else
            FZ_CHECK(why[0] && s == -1);
    } else if (!strcmp(op, "cache_create")) {
        json_int_t id = -1;
        if (xr_cache_id(root, op, &id, why, sizeof why) == 0)
            FZ_CHECK(id >= 0 && id <= XR_MAX_CACHE_ID);
    } else if (!strcmp(op, "cache_state")) {
        int64_t b = -1, l = -1;
        if (xr_state_sizes(root, FZ_MAX_BATCH, FZ_MAX_LENGTH, &b, &l, why, sizeof why) != 0)
            return;
        FZ_CHECK(b >= 1 && b <= FZ_MAX_BATCH && l >= 0 && l <= FZ_MAX_LENGTH);
        /* Exactly the sizes promised: ASan reports any write past them. */
        int64_t *off = malloc((size_t)b * sizeof *off);
        int64_t *pos = malloc((size_t)(b * l > 0 ? b * l : 1) * sizeof *pos);
        FZ_CHECK(off && pos);
        if (xr_state_rows(root, b, l, off, pos, why, sizeof why) != 0)
            FZ_CHECK(why[0]);
        free(off);
        free(pos);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const struct {
        const char *op, *want;
    } reqs[] = {{"hello", NULL},         {"sdpa", "out"},        {"build_mask", "keep"},
                {"cache_state", "keys"}, {"cache_create", NULL}, {"cache_trim", NULL}};
    for (size_t k = 0; k < sizeof reqs / sizeof reqs[0]; k++) {
        xr_reply r;
        char why[768];
        why[0] = '\0';
        int rc = xr_parse((const char *)data, size, reqs[k].op, reqs[k].want, &r, why, sizeof why);
        if (rc != 0) {
            FZ_CHECK(rc == -1 && why[0] && memchr(why, '\0', sizeof why));
            json_decref(r.root);
            continue;
        }
        FZ_CHECK(json_is_object(r.root) && r.status <= 0 && r.status >= ATTNCONF_EINEXPRESSIBLE);
        if (r.status < 0) {
            FZ_CHECK(r.error && !r.has_tensor);
        } else {
            FZ_CHECK(r.has_tensor == (reqs[k].want != NULL));
            if (r.has_tensor)
                fz_check_desc(&r.desc);
            json_int_t v;
            if (xr_int(r.root, reqs[k].op, "trimmed", &v, why, sizeof why) != 0)
                FZ_CHECK(why[0]);
            fz_check_success(r.root, reqs[k].op);
        }
        json_decref(r.root);
    }
    return 0;
}
