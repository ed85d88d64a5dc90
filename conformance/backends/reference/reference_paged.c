/* reference_paged.c — paged_append / paged_sdpa of the reference plugin (reference_paged.h):
 * unpack the host's arguments (struct_size, NULL pointers, the output capacity, the f32 sinks
 * widened) and call attnref_paged_append / attnref_paged_sdpa, which validate everything. */
#include "reference_paged.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/paged.h"
#include "attnref/status.h"

#if defined(ATTNCONF_PAGED_MUTANT) && ATTNCONF_PAGED_MUTANT
#include "paged_mutants.h" /* test-only: one paging bug */
#endif

int rp_append(void *vctx, const attnconf_paged_append_args *args)
{
    rb_ctx *ctx = vctx;
    if (!ctx)
        return ATTNCONF_EINVAL;
    if (!args || args->struct_size < sizeof(attnconf_paged_append_args))
        return rb_fail(ctx, ATTNCONF_EINVAL,
                       "paged_append: args is NULL or smaller than the sixth-revision struct");
    if (!args->k || !args->v || !args->k_pages || !args->v_pages)
        return rb_fail(ctx, ATTNCONF_EINVAL, "paged_append: a tensor is NULL");
    attnref_tensor k, v, kp, vp;
    rb_to_ref(args->k, &k);
    rb_to_ref(args->v, &v);
    rb_to_ref(args->k_pages, &kp);
    rb_to_ref(args->v_pages, &vp);
    attnref_paged_append_args a = {.k = &k,
                                   .v = &v,
                                   .k_pages = &kp,
                                   .v_pages = &vp,
                                   .block_table = args->block_table,
                                   .table_width = args->table_width,
                                   .seq_lens = args->seq_lens,
                                   .new_lens = args->new_lens};
    attnref_diag diag = {{0}};
#if defined(ATTNCONF_PAGED_MUTANT) && ATTNCONF_PAGED_MUTANT
    int st = rpm_append(&a, &diag);
#else
    int st = attnref_paged_append(&a, &diag);
#endif
    return rb_finish(ctx, st, &diag);
}

int rp_sdpa(void *vctx, const attnconf_paged_args *args)
{
    rb_ctx *ctx = vctx;
    if (!ctx)
        return ATTNCONF_EINVAL;
    if (!args || args->struct_size < sizeof(attnconf_paged_args))
        return rb_fail(ctx, ATTNCONF_EINVAL,
                       "paged_sdpa: args is NULL or smaller than the sixth-revision struct");
    if (!args->q || !args->k_pages || !args->v_pages || !args->out)
        return rb_fail(ctx, ATTNCONF_EINVAL, "paged_sdpa: a tensor is NULL");
    attnref_tensor q, kp, vp, out;
    rb_to_ref(args->q, &q);
    rb_to_ref(args->k_pages, &kp);
    rb_to_ref(args->v_pages, &vp);
    rb_to_ref(args->out, &out);
    out.dtype = q.dtype; /* the output dtype is q's, never an upcast */
    attnref_paged_args a = {.q = &q,
                            .k_pages = &kp,
                            .v_pages = &vp,
                            .block_table = args->block_table,
                            .table_width = args->table_width,
                            .seq_lens = args->seq_lens,
                            .query_lens = args->query_lens};
    attnref_sdpa_params *p = &a.params;
    p->has_scale = args->has_scale != 0;
    p->scale = args->scale;
    p->causal = args->causal != 0;
    p->window = args->window;
    p->softcap = args->softcap;
    p->alibi_max_bias = args->alibi_max_bias;
    p->chunk = args->chunk;
    double *widened = NULL;
    if (args->sinks && q.ndim >= 2) {
        if (q.shape[1] > RB_MAX_SINK_HEADS || q.shape[1] < 0)
            return rb_fail(ctx, ATTNCONF_ENOTSUP,
                           "sinks: %lld query heads, this plugin takes sinks for at most %d",
                           (long long)q.shape[1], RB_MAX_SINK_HEADS);
        widened = calloc((size_t)q.shape[1] + 1, sizeof *widened);
        if (!widened)
            return rb_fail(ctx, ATTNCONF_ENOMEM, "sinks: out of memory");
        for (int64_t h = 0; h < q.shape[1]; h++)
            widened[h] = (double)args->sinks[h];
        p->sinks = widened;
    }
    const size_t esz = attnref_dtype_size(out.dtype);
    if (esz != 0 && attnref_dtype_is_float(out.dtype) && out.data &&
        !rb_fits(&out, esz, args->out_capacity)) {
        attnref_diag d = {{0}};
        int st = attnref_tensor_check(&out, "out", &d);
        free(widened);
        if (st != ATTNREF_OK)
            return rb_finish(ctx, st, &d);
        return rb_fail(ctx, ATTNCONF_EINVAL,
                       "out: out_capacity is too small for the output shape and strides");
    }
    attnref_diag diag = {{0}};
#if defined(ATTNCONF_PAGED_MUTANT) && ATTNCONF_PAGED_MUTANT
    int st = rpm_sdpa(&a, &out, &diag);
#else
    int st = attnref_paged_sdpa(&a, &out, &diag);
#endif
    free(widened);
    if (st == ATTNREF_OK)
        args->out->dtype = (int32_t)out.dtype;
    return rb_finish(ctx, st, &diag);
}
