/* rb_common.c — adapters shared by the attnref-based plugins (see rb_common.h).  Moved out of
 * reference_backend.c unchanged in behaviour, so the reference plugin, its KV cache members and
 * the `cpu` plugin report the same errors with the same codes. */
#include "rb_common.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "attnref/dtype.h"

int rb_fail(rb_ctx *ctx, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx->err, sizeof ctx->err, fmt, ap);
    va_end(ap);
    return code;
}

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

int rb_finish(rb_ctx *ctx, int st, const attnref_diag *diag)
{
    if (st == ATTNREF_OK) {
        ctx->err[0] = '\0';
        return ATTNCONF_OK;
    }
    snprintf(ctx->err, sizeof ctx->err, "%s", diag->msg[0] ? diag->msg : attnref_strerror(st));
    return rb_map_status(st);
}

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

int rb_fits(const attnref_tensor *t, size_t elem, size_t capacity)
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

int rb_sdpa_unpack(rb_ctx *ctx, const attnconf_sdpa_args *args, rb_sdpa_call *c)
{
    if (!args)
        return rb_fail(ctx, ATTNCONF_EINVAL, "sdpa: args is NULL");
    /* The first-revision struct ends before window; a host that knows the mask parameters
     * sets them only when the backend reports their ATTNCONF_CAP_SDPA_* bits, and
     * struct_size gates the read. */
    const size_t sdpa_v1_size = offsetof(attnconf_sdpa_args, window);
    if (args->struct_size < sdpa_v1_size)
        return rb_fail(ctx, ATTNCONF_EINVAL,
                       "sdpa: args.struct_size is smaller than the ABI v1 struct");
    if (!args->q || !args->k || !args->v || !args->out)
        return rb_fail(ctx, ATTNCONF_EINVAL, "sdpa: %s is NULL",
                       !args->q   ? "q"
                       : !args->k ? "k"
                       : !args->v ? "v"
                                  : "out");

    memset(c, 0, sizeof *c);
    rb_to_ref(args->q, &c->q);
    rb_to_ref(args->k, &c->k);
    rb_to_ref(args->v, &c->v);
    c->has_mask = args->mask != NULL;
    if (c->has_mask)
        rb_to_ref(args->mask, &c->mask);
    /* The output dtype is the q dtype (never an upcast); the host's dtype field is a request
     * the plugin overwrites with what it produces, as the ABI asks. */
    rb_to_ref(args->out, &c->out);
    c->out.dtype = c->q.dtype;

    attnref_sdpa_params *p = &c->p;
    p->has_scale = args->has_scale != 0;
    p->scale = args->scale;
    p->causal = args->causal != 0;
    p->has_causal_offset = args->has_causal_offset != 0;
    p->causal_offset = args->causal_offset;
    /* The mask parameters (SPEC clause 19): one lengths / left_padding entry per batch row of
     * q (attnref rejects a q that is not rank 4 before reading them). */
    if (args->struct_size >=
        offsetof(attnconf_sdpa_args, left_padding) + sizeof args->left_padding) {
        p->window = args->window;
        p->lengths = args->lengths;
        p->left_padding = args->left_padding;
        p->batch = args->q->ndim >= 1 ? args->q->shape[0] : 0;
    }
    /* The terms of current models (SPEC clauses 20-22, fifth revision). */
    if (args->struct_size >= offsetof(attnconf_sdpa_args, block_ids) + sizeof args->block_ids) {
        p->softcap = args->softcap;
        p->alibi_max_bias = args->alibi_max_bias;
        p->chunk = args->chunk;
        p->segment_ids = args->segment_ids;
        p->block_ids = args->block_ids;
        if (args->sinks && args->q->ndim >= 2) {
            const int64_t hq = args->q->shape[1];
            if (hq > RB_MAX_SINK_HEADS)
                return rb_fail(ctx, ATTNCONF_ENOTSUP,
                               "sinks: %lld query heads, this plugin takes sinks for at most %d",
                               (long long)hq, RB_MAX_SINK_HEADS);
            for (int64_t h = 0; h < hq; h++)
                c->sinks[h] = (double)args->sinks[h];
            p->sinks = c->sinks;
        }
    }

    /* The output buffer must hold every element the strides address; check it before anything
     * writes (attnref does not know the capacity).  Only a valid float dtype has a size. */
    size_t esz = attnref_dtype_size(c->out.dtype);
    if (esz != 0 && attnref_dtype_is_float(c->out.dtype) && c->out.data &&
        !rb_fits(&c->out, esz, args->out_capacity)) {
        attnref_diag d = {{0}};
        /* Let attnref name a bad descriptor first; otherwise the capacity is the problem. */
        int st = attnref_tensor_check(&c->out, "out", &d);
        if (st != ATTNREF_OK)
            return rb_finish(ctx, st, &d);
        return rb_fail(ctx, ATTNCONF_EINVAL,
                       "out: out_capacity is too small for the output shape and strides");
    }
    return ATTNCONF_OK;
}

int rb_mask_unpack(rb_ctx *ctx, const attnconf_mask_args *args, attnref_mask_params *p,
                   attnref_tensor *keep)
{
    if (!args)
        return rb_fail(ctx, ATTNCONF_EINVAL, "build_mask: args is NULL");
    /* The first-revision struct ends before kv_len; a host that knows kv_len sets it only
     * when the backend reports ATTNCONF_CAP_KV_LEN, and struct_size gates the read. */
    const size_t mask_v1_size = offsetof(attnconf_mask_args, kv_len);
    if (args->struct_size < mask_v1_size)
        return rb_fail(ctx, ATTNCONF_EINVAL,
                       "build_mask: args.struct_size is smaller than the ABI v1 struct");
    if (!args->keep)
        return rb_fail(ctx, ATTNCONF_EINVAL, "build_mask: keep is NULL");

    memset(p, 0, sizeof *p);
    p->lq = args->lq;
    p->offset = args->offset;
    p->window = args->window;
    p->batch = args->batch;
    p->lengths = args->lengths;
    p->left_padding = args->left_padding;
    if (args->struct_size >= mask_v1_size + sizeof args->kv_len)
        p->kv_len = args->kv_len;
    if (args->struct_size >= offsetof(attnconf_mask_args, block_ids) + sizeof args->block_ids) {
        p->chunk = args->chunk;
        p->segment_ids = args->segment_ids;
        p->block_ids = args->block_ids;
    }
    rb_to_ref(args->keep, keep);
    return ATTNCONF_OK;
}
