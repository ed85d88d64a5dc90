/* mybackend.c — a minimal attnconf backend: scaled-dot-product attention (SDPA) in f32.
 *
 * Start your own backend from this file: replace sdpa_rows() by a call into your kernel and keep
 * the checks around it.  The ABI is attnconf/backend.h (ABI version 1); the semantics every case
 * checks are SPEC.md's numbered clauses (installed in share/doc/attnconf).
 *
 * What it implements, and so reports in capabilities():
 *   f32 q/k/v/out in any layout (strides), no mask, a boolean mask of any broadcastable shape,
 *   the causal flag (bottom-right, or with an explicit offset), GQA, Dv != D, an explicit scale.
 * What it does not, and says so (the suite then reports those cases NOT_SUPPORTED, neither pass
 * nor fail): f16/bf16, additive masks, the batched mask builder (build_mask = NULL), the
 * kernel's own window / lengths / left-padding parameters, stride-0 inputs and KV caches.
 *
 * Error codes (backend.h): ATTNCONF_EINVAL for inputs no backend may accept (a wrong rank,
 * mismatched shapes, a mask that does not broadcast, a mask together with the causal flag), and
 * ATTNCONF_EDTYPE for q/k/v of different dtypes: the suite's sdpa.invalid cases require exactly
 * these.  ATTNCONF_ENOTSUP for valid input this backend does not implement.
 *
 * Numerics: scores, softmax and the weighted sum of V are accumulated in double and each output
 * is rounded once to f32, which keeps the results well inside the suite's tolerances.  An f32
 * kernel passes too when its error stays within them (SPEC.md clause 13).
 */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <attnconf/backend.h>

/* Only attnconf_backend_entry is exported; everything else is static.  The CMake target also
 * builds with hidden visibility, so nothing else of yours leaks into the host. */
#define MB_EXPORT __attribute__((visibility("default")))

/* One context per run (the host opens one and closes it after the last case). */
typedef struct mb_ctx {
    char err[256]; /* last_error(): why the last call failed */
} mb_ctx;

/* Record a reason and return `code`: the host prints it next to the case that failed. */
static int mb_fail(mb_ctx *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return code;
}

static int mb_open(void **out)
{
    mb_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ATTNCONF_ENOMEM;
    *out = c;
    return ATTNCONF_OK;
}

static void mb_close(void *ctx)
{
    free(ctx);
}

/* Report exactly what sdpa() implements: a case needing anything else is NOT_SUPPORTED.  A bit
 * claimed without the behaviour behind it shows up as FAIL in that capability's cases. */
static uint64_t mb_capabilities(void *ctx)
{
    (void)ctx;
    return ATTNCONF_CAP_F32 | ATTNCONF_CAP_MASK_BOOL | ATTNCONF_CAP_MASK_BCAST |
           ATTNCONF_CAP_CAUSAL | ATTNCONF_CAP_CAUSAL_OFFSET | ATTNCONF_CAP_GQA |
           ATTNCONF_CAP_DV_NE_D | ATTNCONF_CAP_SCALE | ATTNCONF_CAP_STRIDED;
}

static const char *mb_last_error(void *ctx)
{
    return ((mb_ctx *)ctx)->err;
}

/* Element (i0, i1, i2, i3) of a rank-4 f32 view: strides are in elements and may be anything
 * (permuted layouts, and 0 on the broadcast axes of a mask). */
static size_t mb_index(const int64_t st[4], int64_t i0, int64_t i1, int64_t i2, int64_t i3)
{
    return (size_t)(i0 * st[0] + i1 * st[1] + i2 * st[2] + i3 * st[3]);
}

/* The strides that read a mask of rank <= 4 as the full (B, Hq, Lq, Lk) tensor: trailing axes
 * aligned (NumPy rules), an axis of extent 1 or a missing one read with stride 0.  The head axis
 * counts QUERY heads (SPEC clause 7).  Returns 0, or -1 if the mask does not broadcast. */
static int mb_mask_strides(const attnconf_tensor *m, const int64_t full[4], int64_t st[4])
{
    int lead = 4 - m->ndim;
    for (int a = 0; a < 4; a++) {
        int64_t extent = a < lead ? 1 : m->shape[a - lead];
        if (extent != 1 && extent != full[a])
            return -1;
        st[a] = extent == 1 ? 0 : m->strides[a - lead];
    }
    return 0;
}

/* out[b, h, i, :] = softmax over the kept keys of scale * q.k, times V.  `keep` is a scratch
 * row of Lk flags, `score` one of Lk doubles. */
static void sdpa_rows(const attnconf_sdpa_args *a, double scale, const int64_t mst[4],
                      unsigned char *keep, double *score)
{
    const attnconf_tensor *q = a->q, *k = a->k, *v = a->v, *m = a->mask;
    const float *qd = q->data, *kd = k->data, *vd = v->data;
    const unsigned char *md = m ? m->data : NULL;
    float *od = a->out->data;
    int64_t B = q->shape[0], Hq = q->shape[1], Lq = q->shape[2], D = q->shape[3];
    int64_t Hkv = k->shape[1], Lk = k->shape[2], Dv = v->shape[3];
    int64_t group = Hq / Hkv; /* GQA: query head h reads kv head h / group (SPEC clause 1) */
    int64_t off = a->has_causal_offset ? a->causal_offset : Lk - Lq; /* bottom-right [3] */

    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Lq; i++) {
                int64_t hk = h / group;
                double max = -INFINITY;
                int any = 0;
                for (int64_t j = 0; j < Lk; j++) {
                    /* causal: keep j <= off + i, written so that no offset overflows */
                    keep[j] = !(a->causal && j - i > off) &&
                              !(md && md[mb_index(mst, b, h, i, j)] == 0); /* nonzero = attend */
                    if (!keep[j])
                        continue; /* an excluded key is never read: NaN there must not leak [10] */
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++)
                        dot += (double)qd[mb_index(q->strides, b, h, i, d)] *
                               (double)kd[mb_index(k->strides, b, hk, j, d)];
                    score[j] = scale * dot;
                    if (!any || score[j] > max)
                        max = score[j];
                    any = 1;
                }
                double sum = 0;
                for (int64_t j = 0; j < Lk; j++)
                    if (keep[j]) {
                        score[j] = exp(score[j] - max); /* max-subtracted: no overflow */
                        sum += score[j];
                    }
                for (int64_t e = 0; e < Dv; e++) {
                    double acc = 0;
                    for (int64_t j = 0; j < Lk; j++)
                        if (keep[j])
                            acc += score[j] * (double)vd[mb_index(v->strides, b, hk, j, e)];
                    /* A row with no kept key is exactly 0, never NaN or mean(V) [9]. */
                    od[mb_index(a->out->strides, b, h, i, e)] = any ? (float)(acc / sum) : 0.0f;
                }
            }
}

static int mb_sdpa(void *ctx, const attnconf_sdpa_args *a)
{
    mb_ctx *c = ctx;
    const attnconf_tensor *q = a->q, *k = a->k, *v = a->v, *m = a->mask;
    attnconf_tensor *out = a->out;
    if (!q || !k || !v || !out)
        return mb_fail(c, ATTNCONF_EINVAL, "q, k, v and out are required");
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4)
        return mb_fail(c, ATTNCONF_EINVAL, "q, k, v must have rank 4 (B, H, L, D), got %d, %d, %d",
                       (int)q->ndim, (int)k->ndim, (int)v->ndim);
    /* dtypes first: a mismatch is EDTYPE whatever this backend implements [8]. */
    if (k->dtype != q->dtype || v->dtype != q->dtype)
        return mb_fail(c, ATTNCONF_EDTYPE, "q, k, v dtypes differ (%d, %d, %d)", (int)q->dtype,
                       (int)k->dtype, (int)v->dtype);
    if (q->dtype != ATTNCONF_F32)
        return mb_fail(c, ATTNCONF_ENOTSUP, "only f32 is implemented (dtype %d)", (int)q->dtype);

    int64_t B = q->shape[0], Hq = q->shape[1], Lq = q->shape[2], D = q->shape[3];
    int64_t Hkv = k->shape[1], Lk = k->shape[2], Dv = v->shape[3];
    for (int a4 = 0; a4 < 4; a4++)
        if (q->shape[a4] < 0 || k->shape[a4] < 0 || v->shape[a4] < 0)
            return mb_fail(c, ATTNCONF_EINVAL, "negative extent");
    if (k->shape[0] != B || v->shape[0] != B)
        return mb_fail(c, ATTNCONF_EINVAL, "batch differs: q %lld, k %lld, v %lld", (long long)B,
                       (long long)k->shape[0], (long long)v->shape[0]);
    if (k->shape[3] != D || D == 0)
        return mb_fail(c, ATTNCONF_EINVAL, "head_dim: q %lld, k %lld (must be equal, >= 1)",
                       (long long)D, (long long)k->shape[3]);
    if (v->shape[1] != Hkv || v->shape[2] != Lk)
        return mb_fail(c, ATTNCONF_EINVAL,
                       "k (.., %lld, %lld, ..) and v (.., %lld, %lld, ..) differ", (long long)Hkv,
                       (long long)Lk, (long long)v->shape[1], (long long)v->shape[2]);
    if (Hkv == 0 || Hq % Hkv != 0)
        return mb_fail(c, ATTNCONF_EINVAL, "query heads %lld are not a multiple of kv heads %lld",
                       (long long)Hq, (long long)Hkv);
    if (a->has_scale && !isfinite(a->scale))
        return mb_fail(c, ATTNCONF_EINVAL, "scale is not finite");
    /* SPEC clause 2: a scale no f32 holds is refused (kernels hold it as an f32). */
    if (a->has_scale && fabs(a->scale) > FLT_MAX)
        return mb_fail(c, ATTNCONF_EINVAL, "scale %g is outside the f32 range", a->scale);

    int64_t mst[4] = {0, 0, 0, 0};
    if (m) {
        int64_t full[4] = {B, Hq, Lq, Lk};
        if (a->causal)
            return mb_fail(c, ATTNCONF_EINVAL, "a mask tensor and the causal flag together");
        if (m->ndim < 0 || m->ndim > 4)
            return mb_fail(c, ATTNCONF_EINVAL, "mask rank %d (at most 4)", (int)m->ndim);
        if (m->dtype != ATTNCONF_BOOL)
            return mb_fail(c, ATTNCONF_ENOTSUP, "only boolean masks are implemented");
        if (mb_mask_strides(m, full, mst) != 0)
            return mb_fail(c, ATTNCONF_EINVAL, "mask does not broadcast to (B, Hq, Lq, Lk)");
    }
    /* Members of a later ABI revision are read only when the host's struct covers them
     * (backend.h); the host sets them only for a backend reporting their bits, so this is a
     * safety net. */
    if (a->struct_size >= offsetof(attnconf_sdpa_args, left_padding) + sizeof a->left_padding &&
        (a->window || a->lengths || a->left_padding))
        return mb_fail(c, ATTNCONF_ENOTSUP, "window / lengths / left_padding not implemented");

    if (out->ndim != 4 || out->shape[0] != B || out->shape[1] != Hq || out->shape[2] != Lq ||
        out->shape[3] != Dv)
        return mb_fail(c, ATTNCONF_EINVAL, "out shape is not (B, Hq, Lq, Dv)");
    /* Every extent is at most the size of a buffer the host made, so this cannot overflow. */
    if ((double)B * (double)Hq * (double)Lq * (double)Dv * sizeof(float) > (double)a->out_capacity)
        return mb_fail(c, ATTNCONF_EINVAL, "out buffer too small");

    unsigned char *keep = malloc(Lk ? (size_t)Lk : 1);
    double *score = malloc((Lk ? (size_t)Lk : 1) * sizeof *score);
    if (!keep || !score) {
        free(keep);
        free(score);
        return mb_fail(c, ATTNCONF_ENOMEM, "no memory for a row of %lld keys", (long long)Lk);
    }
    /* Default scale 1/sqrt(D) of q/k, never of Dv; an explicit 0 is 0 [2]. */
    double scale = a->has_scale ? a->scale : 1.0 / sqrt((double)D);
    sdpa_rows(a, scale, mst, keep, score);
    free(keep);
    free(score);
    out->dtype = ATTNCONF_F32; /* what was actually produced: an upcast would be reported */
    c->err[0] = '\0';
    return ATTNCONF_OK;
}

/* The table: const, static, and only ever read by the host.  Members not named here (the
 * mask builder, options, the KV cache members) are NULL: not implemented. */
static const attnconf_backend mb_table = {
    .abi_version = ATTNCONF_ABI_VERSION,
    .struct_size = sizeof(attnconf_backend),
    .name = "mybackend", /* [a-z0-9_-]+: appears in every result */
    .version = "0.1.0",  /* your implementation's version, recorded in the results */
    .open = mb_open,
    .close = mb_close,
    .capabilities = mb_capabilities,
    .sdpa = mb_sdpa,
    .build_mask = NULL, /* no ATTNCONF_CAP_BUILD_MASK: the mask.* families are skipped */
    .last_error = mb_last_error,
};

MB_EXPORT const attnconf_backend *attnconf_backend_entry(uint32_t host_abi_version)
{
    if (host_abi_version != ATTNCONF_ABI_VERSION)
        return NULL; /* a host of another ABI: refuse rather than misread its structs */
    return &mb_table;
}
