/* cpu_paged.c — the cpu plugin's paged KV members (cpu_paged.h): validation, paged_append, and
 * paged_sdpa's hand-over to cpu_paged_run. */
#include "cpu_paged.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"

/* The host descriptor t as attnref's in *out: present, a valid descriptor, rank 4. */
static int tensor4(rb_ctx *ctx, const char *op, const attnconf_tensor *t, const char *name,
                   const char *layout, attnref_tensor *out)
{
    if (!t)
        return rb_fail(ctx, ATTNCONF_EINVAL, "%s: %s is NULL", op, name);
    rb_to_ref(t, out);
    attnref_diag d = {{0}};
    const int st = attnref_tensor_check(out, name, &d);
    if (st != ATTNREF_OK)
        return rb_finish(ctx, st, &d);
    if (out->ndim != 4)
        return rb_fail(ctx, ATTNCONF_EINVAL, "%s: rank %d, expected 4 %s", name, (int)out->ndim,
                       layout);
    return ATTNCONF_OK;
}

/* Every tensor of t[0..n) in one float dtype (EDTYPE otherwise). */
static int same_float(rb_ctx *ctx, const attnref_tensor *const *t, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        if (!attnref_dtype_is_float(t[i]->dtype))
            return rb_fail(ctx, ATTNCONF_EDTYPE, "%s: dtype %s is not f32, f16 or bf16", names[i],
                           attnref_dtype_name(t[i]->dtype));
        if (t[i]->dtype != t[0]->dtype)
            return rb_fail(ctx, ATTNCONF_EDTYPE,
                           "%s: dtype %s differs from %s's %s (the pool, q and the new tokens "
                           "share one dtype)",
                           names[i], attnref_dtype_name(t[i]->dtype), names[0],
                           attnref_dtype_name(t[0]->dtype));
    }
    return ATTNCONF_OK;
}

/* k_pages (num_pages, Hkv, P, D) and v_pages (num_pages, Hkv, P, Dv) describe one pool. */
static int pools_agree(rb_ctx *ctx, const attnref_tensor *kp, const attnref_tensor *vp)
{
    static const char *const what[3] = {"pages", "kv heads", "slots per page"};
    for (int d = 0; d < 3; d++)
        if (vp->shape[d] != kp->shape[d])
            return rb_fail(ctx, ATTNCONF_EINVAL, "v_pages: %lld %s, but k_pages has %lld",
                           (long long)vp->shape[d], what[d], (long long)kp->shape[d]);
    if (kp->shape[1] < 1)
        return rb_fail(ctx, ATTNCONF_EINVAL, "k_pages: Hkv = 0 kv heads (must be >= 1)");
    if (kp->shape[2] < 1)
        return rb_fail(ctx, ATTNCONF_EINVAL, "k_pages: page size P = 0 slots (must be >= 1)");
    return ATTNCONF_OK;
}

/* The block table's presence and pitch for B rows. */
static int table_ok(rb_ctx *ctx, const char *op, const int32_t *table, int64_t tw,
                    const int64_t *seq_lens, int64_t B)
{
    if (!table)
        return rb_fail(ctx, ATTNCONF_EINVAL, "%s: block_table is NULL", op);
    if (!seq_lens)
        return rb_fail(ctx, ATTNCONF_EINVAL, "%s: seq_lens is NULL", op);
    if (tw < 1)
        return rb_fail(ctx, ATTNCONF_EINVAL, "table_width: %lld (must be >= 1)", (long long)tw);
    if (B > 0 && tw > INT64_MAX / B)
        return rb_fail(ctx, ATTNCONF_EINVAL, "table_width: %lld entries x %lld rows overflow",
                       (long long)tw, (long long)B);
    return ATTNCONF_OK;
}

/* Pages a length of L keys needs (L >= 0, P >= 1), without overflow. */
static int64_t pages_for(int64_t L, int64_t P)
{
    return L / P + (L % P != 0);
}

/* Entries e0..e1-1 of row b (the ones the call reads or writes through) name pages 0..np-1. */
static int entries_ok(rb_ctx *ctx, const int32_t *table, int64_t tw, int64_t b, int64_t e0,
                      int64_t e1, int64_t np)
{
    for (int64_t e = e0; e < e1; e++) {
        const int32_t x = table[b * tw + e];
        if (x < 0 || x >= np)
            return rb_fail(ctx, ATTNCONF_EINVAL,
                           "block_table[%lld][%lld]: page %d is outside the pool (0..%lld)",
                           (long long)b, (long long)e, (int)x, (long long)np - 1);
    }
    return ATTNCONF_OK;
}

/* A length against the table: L >= 0 and ceil(L / P) <= table_width. */
static int length_ok(rb_ctx *ctx, const char *field, int64_t b, int64_t L, int64_t P, int64_t tw)
{
    if (L < 0)
        return rb_fail(ctx, ATTNCONF_EINVAL, "%s[%lld]: %lld is negative", field, (long long)b,
                       (long long)L);
    if (pages_for(L, P) > tw)
        return rb_fail(ctx, ATTNCONF_EINVAL,
                       "%s[%lld]: %lld keys need %lld pages of %lld slots, but a block table row "
                       "has table_width = %lld entries",
                       field, (long long)b, (long long)L, (long long)pages_for(L, P), (long long)P,
                       (long long)tw);
    return ATTNCONF_OK;
}

int cpu_paged_sdpa(rb_ctx *ctx, cpu_engine *e, const attnconf_paged_args *a)
{
    static const char op[] = "paged_sdpa";
    if (!a)
        return rb_fail(ctx, ATTNCONF_EINVAL, "%s: args is NULL", op);
    if (a->struct_size < sizeof *a)
        return rb_fail(ctx, ATTNCONF_EINVAL,
                       "%s: args.struct_size %u is smaller than the sixth revision's "
                       "attnconf_paged_args (%zu)",
                       op, (unsigned)a->struct_size, sizeof *a);
    attnref_tensor q, kp, vp, out;
    int rc;
    if ((rc = tensor4(ctx, op, a->q, "q", "(B, Hq, Lq, D)", &q)) != ATTNCONF_OK ||
        (rc = tensor4(ctx, op, a->k_pages, "k_pages", "(num_pages, Hkv, P, D)", &kp)) !=
            ATTNCONF_OK ||
        (rc = tensor4(ctx, op, a->v_pages, "v_pages", "(num_pages, Hkv, P, Dv)", &vp)) !=
            ATTNCONF_OK)
        return rc;
    if (!a->out)
        return rb_fail(ctx, ATTNCONF_EINVAL, "%s: out is NULL", op);
    const attnref_tensor *ts[3] = {&q, &kp, &vp};
    const char *const names[3] = {"q", "k_pages", "v_pages"};
    if ((rc = same_float(ctx, ts, names, 3)) != ATTNCONF_OK ||
        (rc = pools_agree(ctx, &kp, &vp)) != ATTNCONF_OK)
        return rc;
    const int64_t B = q.shape[0], Hq = q.shape[1], Lq = q.shape[2];
    const int64_t np = kp.shape[0], Hkv = kp.shape[1], P = kp.shape[2];
    if (kp.shape[3] != q.shape[3])
        return rb_fail(ctx, ATTNCONF_EINVAL, "k_pages: head_dim D = %lld, but q has D = %lld",
                       (long long)kp.shape[3], (long long)q.shape[3]);
    if ((rc = table_ok(ctx, op, a->block_table, a->table_width, a->seq_lens, B)) != ATTNCONF_OK)
        return rc;

    /* Scale, causal, window, the terms and the output's shape: attnref_sdpa_check on views of
     * the pools as a keyless (B, Hkv, 0, D) cache, so every value the reference refuses is
     * refused here with its own message. */
    attnref_sdpa_params p;
    memset(&p, 0, sizeof p);
    p.has_scale = a->has_scale != 0;
    p.scale = a->scale;
    p.causal = a->causal != 0;
    p.window = a->window;
    p.softcap = a->softcap;
    p.alibi_max_bias = a->alibi_max_bias;
    p.chunk = a->chunk;
    p.batch = B;
    double *sinks = NULL;
    int64_t *qlens = malloc(((size_t)B + 1) * sizeof *qlens);
    if (a->sinks) {
        sinks = malloc(((size_t)Hq + 1) * sizeof *sinks);
        for (int64_t h = 0; sinks && h < Hq; h++)
            sinks[h] = (double)a->sinks[h];
        p.sinks = sinks;
    }
    if (!qlens || (a->sinks && !sinks)) {
        rc =
            rb_fail(ctx, ATTNCONF_ENOMEM, "%s: cannot allocate %lld row lengths", op, (long long)B);
        goto done;
    }
    attnref_tensor kview = kp, vview = vp;
    kview.shape[0] = vview.shape[0] = B;
    kview.shape[2] = vview.shape[2] = 0;
    rb_to_ref(a->out, &out);
    out.dtype = q.dtype; /* the output dtype is q's, never an upcast */
    attnref_diag diag = {{0}};
    const int st = attnref_sdpa_check(&q, &kview, &vview, NULL, &p, &out, &diag);
    if (st != ATTNREF_OK) {
        rc = rb_finish(ctx, st, &diag);
        goto done;
    }
    if (!rb_fits(&out, attnref_dtype_size(out.dtype), a->out_capacity)) {
        rc = rb_fail(ctx, ATTNCONF_EINVAL,
                     "out: out_capacity is too small for the output shape and strides");
        goto done;
    }

    /* Each row: its length against the table, its queries, the pages it reads. */
    for (int64_t b = 0; b < B; b++) {
        const int64_t L = a->seq_lens[b];
        if ((rc = length_ok(ctx, "seq_lens", b, L, P, a->table_width)) != ATTNCONF_OK)
            goto done;
        const int64_t qb = a->query_lens ? a->query_lens[b] : Lq;
        if (qb < 0 || qb > Lq) {
            rc = rb_fail(ctx, ATTNCONF_EINVAL, "query_lens[%lld]: %lld is outside 0..Lq = %lld",
                         (long long)b, (long long)qb, (long long)Lq);
            goto done;
        }
        if (qb > L) {
            rc = rb_fail(ctx, ATTNCONF_EINVAL,
                         "query_lens[%lld]: %lld queries, but seq_lens[%lld] = %lld keys (the "
                         "queries' own tokens are among the keys)",
                         (long long)b, (long long)qb, (long long)b, (long long)L);
            goto done;
        }
        qlens[b] = qb;
        if ((rc = entries_ok(ctx, a->block_table, a->table_width, b, 0, pages_for(L, P), np)) !=
            ATTNCONF_OK)
            goto done;
    }

    const cpu_paged_keys pk = {.k_pages = &kp,
                               .v_pages = &vp,
                               .table = a->block_table,
                               .tw = a->table_width,
                               .seq_lens = a->seq_lens,
                               .query_lens = qlens};
    const int run = cpu_paged_run(e, &q, &pk, &p, &out, ctx->err, sizeof ctx->err);
    if (run < 0) {
        rc = ATTNCONF_ENOMEM;
        goto done;
    }
    if (run > 0) {
        rc = rb_fail(ctx, ATTNCONF_ENOTSUP,
                     "%s: head dimension %lld or GQA group %lld too large for the cpu kernels' "
                     "scratch",
                     op, (long long)q.shape[3], (long long)(Hq / Hkv));
        goto done;
    }
    a->out->dtype = (int32_t)q.dtype;
    ctx->err[0] = '\0';
    rc = ATTNCONF_OK;
done:
    free(sinks);
    free(qlens);
    return rc;
}

/* Copy n elements of esz bytes from src (element stride ss) to dst (stride ds). */
static void copy_row(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n, size_t esz)
{
    if (ds == 1 && ss == 1) {
        memcpy(dst, src, (size_t)n * esz);
        return;
    }
    for (int64_t x = 0; x < n; x++)
        memcpy(dst + (size_t)(x * ds) * esz, src + (size_t)(x * ss) * esz, esz);
}

static int cmp_i64(const void *x, const void *y)
{
    const int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* No two new tokens of the call may land in one (page, slot) (clause 23: the result would
 * depend on the order of the writes).  The flat slots page * P + slot of every new token,
 * sorted; a repeat is EINVAL naming both tokens. */
static int slots_distinct(rb_ctx *ctx, const attnconf_paged_append_args *a, int64_t B, int64_t S,
                          int64_t P)
{
    const int64_t tw = a->table_width;
    int64_t total = 0;
    for (int64_t b = 0; b < B; b++)
        total += a->new_lens ? a->new_lens[b] : S;
    if (total < 2)
        return ATTNCONF_OK;
    int64_t *flat = malloc((size_t)total * sizeof *flat);
    if (!flat)
        return rb_fail(ctx, ATTNCONF_ENOMEM, "paged_append: cannot allocate %lld slot numbers",
                       (long long)total);
    int64_t i = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0, n = a->new_lens ? a->new_lens[b] : S; t < n; t++) {
            const int64_t pos = a->seq_lens[b] + t;
            flat[i++] = (int64_t)a->block_table[b * tw + pos / P] * P + pos % P;
        }
    qsort(flat, (size_t)total, sizeof *flat, cmp_i64);
    int64_t dup = -1;
    for (i = 1; i < total && dup < 0; i++)
        if (flat[i] == flat[i - 1])
            dup = flat[i];
    free(flat);
    if (dup < 0)
        return ATTNCONF_OK;
    /* Name the first two tokens (row order) that share it. */
    int64_t fb = -1, ft = -1;
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0, n = a->new_lens ? a->new_lens[b] : S; t < n; t++) {
            const int64_t pos = a->seq_lens[b] + t;
            if ((int64_t)a->block_table[b * tw + pos / P] * P + pos % P != dup)
                continue;
            if (fb < 0) {
                fb = b, ft = t;
                continue;
            }
            return rb_fail(ctx, ATTNCONF_EINVAL,
                           "paged_append: new token %lld of row %lld and new token %lld of row "
                           "%lld both land in page %lld slot %lld",
                           (long long)ft, (long long)fb, (long long)t, (long long)b,
                           (long long)(dup / P), (long long)(dup % P));
        }
    return rb_fail(ctx, ATTNCONF_EINVAL, "paged_append: two new tokens land in page %lld slot %lld",
                   (long long)(dup / P), (long long)(dup % P));
}

int cpu_paged_append(rb_ctx *ctx, const attnconf_paged_append_args *a)
{
    static const char op[] = "paged_append";
    if (!a)
        return rb_fail(ctx, ATTNCONF_EINVAL, "%s: args is NULL", op);
    if (a->struct_size < sizeof *a)
        return rb_fail(ctx, ATTNCONF_EINVAL,
                       "%s: args.struct_size %u is smaller than the sixth revision's "
                       "attnconf_paged_append_args (%zu)",
                       op, (unsigned)a->struct_size, sizeof *a);
    attnref_tensor k, v, kp, vp;
    int rc;
    if ((rc = tensor4(ctx, op, a->k, "k", "(B, Hkv, S, D)", &k)) != ATTNCONF_OK ||
        (rc = tensor4(ctx, op, a->v, "v", "(B, Hkv, S, Dv)", &v)) != ATTNCONF_OK ||
        (rc = tensor4(ctx, op, a->k_pages, "k_pages", "(num_pages, Hkv, P, D)", &kp)) !=
            ATTNCONF_OK ||
        (rc = tensor4(ctx, op, a->v_pages, "v_pages", "(num_pages, Hkv, P, Dv)", &vp)) !=
            ATTNCONF_OK)
        return rc;
    const attnref_tensor *ts[4] = {&k, &v, &kp, &vp};
    const char *const names[4] = {"k", "v", "k_pages", "v_pages"};
    if ((rc = same_float(ctx, ts, names, 4)) != ATTNCONF_OK ||
        (rc = pools_agree(ctx, &kp, &vp)) != ATTNCONF_OK)
        return rc;
    static const char *const kdim[3] = {"rows (B)", "kv heads", "tokens (S)"};
    for (int d = 0; d < 3; d++)
        if (v.shape[d] != k.shape[d])
            return rb_fail(ctx, ATTNCONF_EINVAL, "v: %lld %s, but k has %lld",
                           (long long)v.shape[d], kdim[d], (long long)k.shape[d]);
    if (k.shape[1] != kp.shape[1])
        return rb_fail(ctx, ATTNCONF_EINVAL, "k: %lld kv heads, but k_pages has %lld",
                       (long long)k.shape[1], (long long)kp.shape[1]);
    if (k.shape[3] != kp.shape[3])
        return rb_fail(ctx, ATTNCONF_EINVAL, "k: head_dim D = %lld, but k_pages has D = %lld",
                       (long long)k.shape[3], (long long)kp.shape[3]);
    if (v.shape[3] != vp.shape[3])
        return rb_fail(ctx, ATTNCONF_EINVAL, "v: head_dim Dv = %lld, but v_pages has Dv = %lld",
                       (long long)v.shape[3], (long long)vp.shape[3]);
    const int64_t B = k.shape[0], Hkv = k.shape[1], S = k.shape[2], D = k.shape[3];
    const int64_t Dv = v.shape[3], np = kp.shape[0], P = kp.shape[2], tw = a->table_width;
    if ((rc = table_ok(ctx, op, a->block_table, tw, a->seq_lens, B)) != ATTNCONF_OK)
        return rc;
    /* Every row before any write: nothing changes on error. */
    for (int64_t b = 0; b < B; b++) {
        const int64_t L = a->seq_lens[b], n = a->new_lens ? a->new_lens[b] : S;
        if ((rc = length_ok(ctx, "seq_lens", b, L, P, tw)) != ATTNCONF_OK)
            return rc;
        if (n < 0 || n > S)
            return rb_fail(ctx, ATTNCONF_EINVAL, "new_lens[%lld]: %lld is outside 0..S = %lld",
                           (long long)b, (long long)n, (long long)S);
        if (L > INT64_MAX - n || pages_for(L + n, P) > tw)
            return rb_fail(ctx, ATTNCONF_EINVAL,
                           "new_lens[%lld]: %lld keys after appending %lld need more than the "
                           "table_width = %lld pages of %lld slots a block table row holds",
                           (long long)b, (long long)L, (long long)n, (long long)tw, (long long)P);
        if (n > 0 && (rc = entries_ok(ctx, a->block_table, tw, b, L / P, (L + n - 1) / P + 1,
                                      np)) != ATTNCONF_OK)
            return rc;
    }
    if ((rc = slots_distinct(ctx, a, B, S, P)) != ATTNCONF_OK)
        return rc;
    const size_t esz = attnref_dtype_size(k.dtype);
    for (int64_t b = 0; b < B; b++) {
        const int64_t L = a->seq_lens[b], n = a->new_lens ? a->new_lens[b] : S;
        for (int64_t t = 0; t < n; t++) {
            const int64_t pos = L + t, page = a->block_table[b * tw + pos / P], slot = pos % P;
            for (int64_t h = 0; h < Hkv; h++) {
                const int64_t ks = b * k.strides[0] + h * k.strides[1] + t * k.strides[2];
                const int64_t vs = b * v.strides[0] + h * v.strides[1] + t * v.strides[2];
                const int64_t kd = page * kp.strides[0] + h * kp.strides[1] + slot * kp.strides[2];
                const int64_t vd = page * vp.strides[0] + h * vp.strides[1] + slot * vp.strides[2];
                copy_row((char *)kp.data + (size_t)kd * esz, kp.strides[3],
                         (const char *)k.data + (size_t)ks * esz, k.strides[3], D, esz);
                copy_row((char *)vp.data + (size_t)vd * esz, vp.strides[3],
                         (const char *)v.data + (size_t)vs * esz, v.strides[3], Dv, esz);
            }
        }
    }
    ctx->err[0] = '\0';
    return ATTNCONF_OK;
}
