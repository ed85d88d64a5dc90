/* opencl_backend.c — the `opencl` backend: SDPA with the semantics of `cpu` (SPEC.md clauses
 * 1-13, 19-22) as one OpenCL kernel (opencl_sdpa.cl), on device memory (ABI v1 seventh
 * revision: the device members, OpenCL buffers as handles).  README.md beside it.
 *
 * The context takes the first GPU of the first platform that has one, else the first device of
 * any kind (PoCL's CPU device in CI), and builds the program once (PoCL compiles it with LLVM:
 * seconds; its cache, POCL_CACHE_DIR, makes later runs fast).  Without an OpenCL platform the
 * backend still opens without the `device` bit: sdpa rejects what must be rejected and answers
 * every valid call ENOTSUP saying why (NOT_SUPPORTED), as do the device members.
 *
 * Validation is the reference's (rb_sdpa_unpack + attnref_sdpa_check on the descriptors; no
 * data is read), so exactly what attnref rejects is rejected, with its message.  The int64 /
 * f32 parameter arrays (lengths, left padding, ids, sinks) are host memory in the ABI: they are
 * copied into small buffers per call.  Rows the kernel flags (a kept score or a result not
 * finite in f32: clause 2's overflow from finite inputs, a kept NaN or inf) are computed again
 * on the host in binary64 as attnref_sdpa does, from copies of the device buffers, as the cpu
 * backend does on its own threads.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnconf/backend.h"
#include "attnref/dtype.h"
#include "attnref/sdpa.h"
#include "opencl_sdpa_cl.h" /* ocl_kernel_source: opencl_sdpa.cl, embedded by CMake */
#include "rb_common.h"

/* The kernel's meta[] layout (opencl_sdpa.cl M_*). */
enum {
    M_B = 0,
    M_HQ,
    M_HKV,
    M_LQ,
    M_LK,
    M_D,
    M_DV,
    M_QS,
    M_KS = M_QS + 4,
    M_VS = M_KS + 4,
    M_OS = M_VS + 4,
    M_MS = M_OS + 4,
    M_DT = M_MS + 4,
    M_MDT,
    M_CAUSAL,
    M_OFF,
    M_WINDOW,
    M_CHUNK,
    M_HAS_LEN,
    M_HAS_LP,
    M_HAS_SEG,
    M_HAS_BLK,
    M_HAS_SINK,
    M_HAS_ALIBI,
    M_BQ,
    M_BK,
    M_N
};
_Static_assert(M_N == 41, "meta[] must match opencl_sdpa.cl");

typedef struct ocl_ctx {
    rb_ctx rb; /* first: the shared adapters record errors here */
    int ready; /* 1: a device, a queue and the built kernel */
    char why[200];
    cl_device_id dev;
    cl_context cx;
    cl_command_queue qu;
    cl_program prog;
    cl_kernel kern;
    cl_device_type type;
    char name[128];
    uint64_t mem_bytes, local_bytes;
    size_t max_wg;
} ocl_ctx;

static int ocl_cl_fail(ocl_ctx *c, const char *what, cl_int e)
{
    return rb_fail(&c->rb,
                   e == CL_MEM_OBJECT_ALLOCATION_FAILURE || e == CL_OUT_OF_RESOURCES ||
                           e == CL_OUT_OF_HOST_MEMORY
                       ? ATTNCONF_ENOMEM
                       : ATTNCONF_EBACKEND,
                   "opencl: %s failed (OpenCL error %d)", what, (int)e);
}

/* Pick a device: the first GPU of any platform, else the first device.  0, or -1 with why. */
static int ocl_pick(ocl_ctx *c)
{
    cl_platform_id plats[16];
    cl_uint np = 0;
    cl_int e = clGetPlatformIDs(16, plats, &np);
    if (e != CL_SUCCESS || np == 0) {
        snprintf(c->why, sizeof c->why,
                 "no OpenCL platform (clGetPlatformIDs: %d, %u platforms; install an ICD such "
                 "as pocl-opencl-icd)",
                 (int)e, (unsigned)np);
        return -1;
    }
    for (int pass = 0; pass < 2; pass++)
        for (cl_uint p = 0; p < np && p < 16; p++) {
            cl_uint nd = 0;
            cl_device_id d;
            if (clGetDeviceIDs(plats[p], pass == 0 ? CL_DEVICE_TYPE_GPU : CL_DEVICE_TYPE_ALL, 1, &d,
                               &nd) == CL_SUCCESS &&
                nd > 0) {
                c->dev = d;
                return 0;
            }
        }
    snprintf(c->why, sizeof c->why, "OpenCL: %u platforms but no device", (unsigned)np);
    return -1;
}

static int ocl_setup(ocl_ctx *c)
{
    if (ocl_pick(c) != 0)
        return -1;
    cl_ulong gm = 0, lm = 0;
    clGetDeviceInfo(c->dev, CL_DEVICE_NAME, sizeof c->name - 1, c->name, NULL);
    clGetDeviceInfo(c->dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof gm, &gm, NULL);
    clGetDeviceInfo(c->dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof lm, &lm, NULL);
    clGetDeviceInfo(c->dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof c->max_wg, &c->max_wg, NULL);
    clGetDeviceInfo(c->dev, CL_DEVICE_TYPE, sizeof c->type, &c->type, NULL);
    c->mem_bytes = gm;
    c->local_bytes = lm;
    cl_int e;
    c->cx = clCreateContext(NULL, 1, &c->dev, NULL, NULL, &e);
    if (!c->cx) {
        snprintf(c->why, sizeof c->why, "clCreateContext failed (%d)", (int)e);
        return -1;
    }
    c->qu = clCreateCommandQueue(c->cx, c->dev, 0, &e);
    if (!c->qu) {
        snprintf(c->why, sizeof c->why, "clCreateCommandQueue failed (%d)", (int)e);
        return -1;
    }
    const char *src = ocl_kernel_source;
    c->prog = clCreateProgramWithSource(c->cx, 1, &src, NULL, &e);
    if (!c->prog) {
        snprintf(c->why, sizeof c->why, "clCreateProgramWithSource failed (%d)", (int)e);
        return -1;
    }
    /* No fast-math flags: the kernel's f32 arithmetic is the error model of clause 13. */
    e = clBuildProgram(c->prog, 1, &c->dev, "-cl-std=CL1.2", NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[160] = "";
        clGetProgramBuildInfo(c->prog, c->dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
        snprintf(c->why, sizeof c->why, "building the kernel failed (%d): %s", (int)e, log);
        return -1;
    }
    c->kern = clCreateKernel(c->prog, "attn", &e);
    if (!c->kern) {
        snprintf(c->why, sizeof c->why, "clCreateKernel failed (%d)", (int)e);
        return -1;
    }
    c->ready = 1;
    return 0;
}

static void ocl_close(void *ctx)
{
    ocl_ctx *c = ctx;
    if (!c)
        return;
    if (c->kern)
        clReleaseKernel(c->kern);
    if (c->prog)
        clReleaseProgram(c->prog);
    if (c->qu)
        clReleaseCommandQueue(c->qu);
    if (c->cx)
        clReleaseContext(c->cx);
    free(c);
}

static int ocl_open(void **ctx)
{
    if (!ctx)
        return ATTNCONF_EINVAL;
    ocl_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ATTNCONF_ENOMEM;
    ocl_setup(c); /* without a device: open, report nothing, say why on every call */
    *ctx = c;
    return ATTNCONF_OK;
}

static uint64_t ocl_capabilities(void *ctx)
{
    const ocl_ctx *c = ctx;
    if (!c)
        return 0;
    /* Without a device: the same bits but `device` (host memory, so the host calls sdpa
     * directly), and sdpa validates, then answers ENOTSUP saying why. */
    return (c->ready ? ATTNCONF_CAP_DEVICE : 0) | ATTNCONF_CAP_F32 | ATTNCONF_CAP_F16 |
           ATTNCONF_CAP_BF16 | ATTNCONF_CAP_MASK_BOOL | ATTNCONF_CAP_MASK_ADD |
           ATTNCONF_CAP_CAUSAL | ATTNCONF_CAP_CAUSAL_OFFSET | ATTNCONF_CAP_GQA |
           ATTNCONF_CAP_DV_NE_D | ATTNCONF_CAP_STRIDED | ATTNCONF_CAP_SCALE |
           ATTNCONF_CAP_MASK_BCAST | ATTNCONF_CAP_SDPA_WINDOW | ATTNCONF_CAP_SDPA_LENGTHS |
           ATTNCONF_CAP_SDPA_LEFT_PAD | ATTNCONF_CAP_STRIDE0 | ATTNCONF_CAP_SOFTCAP |
           ATTNCONF_CAP_ALIBI | ATTNCONF_CAP_SINKS | ATTNCONF_CAP_CHUNK | ATTNCONF_CAP_SEGMENTS |
           ATTNCONF_CAP_BLOCKS;
}

static const char *ocl_last_error(void *ctx)
{
    const ocl_ctx *c = ctx;
    return c ? c->rb.err : "";
}

static int ocl_not_ready(ocl_ctx *c)
{
    return rb_fail(&c->rb, ATTNCONF_ENOTSUP, "opencl: %s", c->why);
}

/* ---- device memory ---------------------------------------------------------------------- */

static int ocl_device_info(void *ctx, attnconf_device_info *info)
{
    ocl_ctx *c = ctx;
    if (!c->ready)
        return ocl_not_ready(c);
    if (!info || info->struct_size < sizeof *info)
        return rb_fail(&c->rb, ATTNCONF_EINVAL, "device_info: struct_size too small");
    info->device_type = ATTNCONF_DEVICE_OPENCL;
    info->device_id = 0;
    snprintf(info->name, sizeof info->name, "%.100s (%s)", c->name,
             c->type & CL_DEVICE_TYPE_GPU   ? "GPU"
             : c->type & CL_DEVICE_TYPE_CPU ? "CPU"
                                            : "accelerator");
    info->memory_bytes = c->mem_bytes;
    return ATTNCONF_OK;
}

static int ocl_device_alloc(void *ctx, size_t bytes, void **handle)
{
    ocl_ctx *c = ctx;
    if (!c->ready)
        return ocl_not_ready(c);
    cl_int e;
    cl_mem m = clCreateBuffer(c->cx, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &e);
    if (!m)
        return ocl_cl_fail(c, "clCreateBuffer", e);
    *handle = m;
    return ATTNCONF_OK;
}

static void ocl_device_free(void *ctx, void *handle)
{
    (void)ctx;
    if (handle)
        clReleaseMemObject((cl_mem)handle);
}

static int ocl_copy_to_device(void *ctx, void *handle, size_t offset, const void *src, size_t bytes)
{
    ocl_ctx *c = ctx;
    if (!c->ready)
        return ocl_not_ready(c);
    if (!bytes)
        return ATTNCONF_OK;
    cl_int e =
        clEnqueueWriteBuffer(c->qu, (cl_mem)handle, CL_TRUE, offset, bytes, src, 0, NULL, NULL);
    return e == CL_SUCCESS ? ATTNCONF_OK : ocl_cl_fail(c, "clEnqueueWriteBuffer", e);
}

static int ocl_copy_from_device(void *ctx, void *dst, const void *handle, size_t offset,
                                size_t bytes)
{
    ocl_ctx *c = ctx;
    if (!c->ready)
        return ocl_not_ready(c);
    if (!bytes)
        return ATTNCONF_OK;
    cl_int e = clEnqueueReadBuffer(c->qu, (cl_mem)(uintptr_t)handle, CL_TRUE, offset, bytes, dst, 0,
                                   NULL, NULL);
    return e == CL_SUCCESS ? ATTNCONF_OK : ocl_cl_fail(c, "clEnqueueReadBuffer", e);
}

static int ocl_synchronize(void *ctx)
{
    ocl_ctx *c = ctx;
    if (!c->ready)
        return ocl_not_ready(c);
    cl_int e = clFinish(c->qu);
    return e == CL_SUCCESS ? ATTNCONF_OK : ocl_cl_fail(c, "clFinish", e);
}

/* ---- sdpa --------------------------------------------------------------------------------- */

/* The whole of a device buffer in host memory (malloc'd), or NULL. */
static void *ocl_fetch(ocl_ctx *c, cl_mem m)
{
    size_t n = 0;
    if (clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof n, &n, NULL) != CL_SUCCESS || n == 0)
        return NULL;
    void *p = malloc(n);
    if (p && clEnqueueReadBuffer(c->qu, m, CL_TRUE, 0, n, p, 0, NULL, NULL) != CL_SUCCESS) {
        free(p);
        return NULL;
    }
    return p;
}

/* A small read-only buffer holding bytes of src (a 16-byte dummy when src is NULL). */
static cl_mem ocl_small(ocl_ctx *c, const void *src, size_t bytes, cl_int *e)
{
    static const unsigned char zero[16];
    if (!src || bytes == 0) {
        src = zero;
        bytes = sizeof zero;
    }
    return clCreateBuffer(c->cx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bytes, (void *)src, e);
}

/* Row (b, h, i) in binary64, as attnref_sdpa (and cpu's row_f64): the host copies qd, kd, vd, md
 * of the device buffers, the mask strides ms broadcast to (B, Hq, Lq, Lk). */
static void ocl_row_f64(const rb_sdpa_call *x, const void *qd, const void *kd, const void *vd,
                        const void *md, const int64_t ms[4], void *od, int64_t b, int64_t h,
                        int64_t i, double *acc)
{
    const attnref_sdpa_params *p = &x->p;
    const attnref_tensor *q = &x->q, *k = &x->k, *v = &x->v, *out = &x->out;
    const int64_t D = q->shape[3], Dv = v->shape[3], Lq = q->shape[2], Lk = k->shape[2];
    const int64_t hk = h / (q->shape[1] / k->shape[1]);
    const double scale = p->has_scale ? p->scale : 1.0 / sqrt((double)D);
    const int64_t off = p->has_causal_offset ? p->causal_offset : Lk - Lq;
    const double slope =
        p->alibi_max_bias > 0 ? attnref_alibi_slope(p->alibi_max_bias, q->shape[1], h) : 0.0;
    const int64_t qrow = b * q->strides[0] + h * q->strides[1] + i * q->strides[2];
    const int64_t mrow = b * ms[0] + h * ms[1] + i * ms[2];
    double mx = -INFINITY, sum = 0.0;
    int64_t nkept = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t j = 0; j < Lk; j++) {
            if (!attnref_sdpa_key_kept(p, Lq, Lk, b, i, j))
                continue;
            double add = 0.0;
            if (md) {
                const double mv = attnref_load(md, x->mask.dtype, mrow + j * ms[3]);
                if (x->mask.dtype == ATTNREF_BOOL ? mv == 0.0 : mv == -INFINITY)
                    continue;
                if (x->mask.dtype != ATTNREF_BOOL)
                    add = mv;
            }
            const int64_t krow = b * k->strides[0] + hk * k->strides[1] + j * k->strides[2];
            double dot = 0.0;
            for (int64_t d = 0; d < D; d++)
                dot += attnref_load(qd, q->dtype, qrow + d * q->strides[3]) *
                       attnref_load(kd, k->dtype, krow + d * k->strides[3]);
            double s = scale * dot;
            if (p->softcap > 0.0)
                s = p->softcap * tanh(s / p->softcap);
            if (slope != 0.0)
                s -= slope * fabs((double)off - (double)(j - i));
            s += add;
            if (pass == 0) {
                nkept++;
                mx = s > mx ? s : mx;
                continue;
            }
            const double w = exp(s - mx);
            sum += w;
            const int64_t vrow = b * v->strides[0] + hk * v->strides[1] + j * v->strides[2];
            for (int64_t e = 0; e < Dv; e++)
                acc[e] += w * attnref_load(vd, v->dtype, vrow + e * v->strides[3]);
        }
        if (pass == 0) {
            if (nkept == 0)
                break;
            if (p->sinks && p->sinks[h] > mx)
                mx = p->sinks[h];
            sum = p->sinks ? exp(p->sinks[h] - mx) : 0.0;
            for (int64_t e = 0; e < Dv; e++)
                acc[e] = 0.0;
        }
    }
    const int64_t o = b * out->strides[0] + h * out->strides[1] + i * out->strides[2];
    for (int64_t e = 0; e < Dv; e++)
        attnref_store(od, out->dtype, o + e * out->strides[3], nkept > 0 ? acc[e] / sum : 0.0);
}

/* The flagged rows (bad[row], or every row when all) again in binary64 on the host. */
static int ocl_redo_rows(ocl_ctx *c, const rb_sdpa_call *x, const int32_t *bad, int all,
                         const int64_t ms[4])
{
    const int64_t B = x->q.shape[0], Hq = x->q.shape[1], Lq = x->q.shape[2];
    const int64_t Dv = x->v.shape[3];
    void *qd = ocl_fetch(c, (cl_mem)x->q.data), *kd = ocl_fetch(c, (cl_mem)x->k.data);
    void *vd = ocl_fetch(c, (cl_mem)x->v.data), *od = ocl_fetch(c, (cl_mem)x->out.data);
    void *md = x->has_mask ? ocl_fetch(c, (cl_mem)x->mask.data) : NULL;
    double *acc = calloc((size_t)(Dv > 0 ? Dv : 1), sizeof *acc);
    int rc = ATTNCONF_OK;
    if (!qd || !kd || !vd || !od || (x->has_mask && !md) || !acc) {
        rc = rb_fail(&c->rb, ATTNCONF_ENOMEM, "opencl: no host memory for the binary64 rows");
    } else {
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < Hq; h++)
                for (int64_t i = 0; i < Lq; i++)
                    if (all || bad[(b * Hq + h) * Lq + i])
                        ocl_row_f64(x, qd, kd, vd, md, ms, od, b, h, i, acc);
        size_t n = 0;
        clGetMemObjectInfo((cl_mem)x->out.data, CL_MEM_SIZE, sizeof n, &n, NULL);
        cl_int e =
            clEnqueueWriteBuffer(c->qu, (cl_mem)x->out.data, CL_TRUE, 0, n, od, 0, NULL, NULL);
        if (e != CL_SUCCESS)
            rc = ocl_cl_fail(c, "clEnqueueWriteBuffer (binary64 rows)", e);
    }
    free(qd);
    free(kd);
    free(vd);
    free(od);
    free(md);
    free(acc);
    return rc;
}

/* Tile sizes whose local memory fits: BQ rows, BK keys.  0 when none does. */
static int ocl_tiles(const ocl_ctx *c, int64_t D, int64_t Dv, int64_t *bq, int64_t *bk,
                     size_t *parts)
{
    static const int64_t qs[] = {16, 8, 4, 1}, ks[] = {32, 16, 8, 1};
    for (size_t a = 0; a < 4; a++)
        for (size_t z = 0; z < 4; z++) {
            const int64_t Q = qs[a], K = ks[z];
            parts[0] = (size_t)(Q * D) * 4;
            parts[1] = (size_t)(K * D) * 4;
            parts[2] = (size_t)(K * Dv) * 4 + 4;
            parts[3] = (size_t)(Q * Dv) * 4 + 4;
            parts[4] = (size_t)(Q * K) * 4;
            parts[5] = (size_t)(Q * K);
            parts[6] = (size_t)(4 * Q) * 4;
            size_t total = 0;
            for (int t = 0; t < 7; t++)
                total += parts[t];
            if (total <= c->local_bytes / 2) {
                *bq = Q;
                *bk = K;
                return 1;
            }
        }
    return 0;
}

static int ocl_sdpa(void *ctx, const attnconf_sdpa_args *args)
{
    ocl_ctx *c = ctx;
    if (!c)
        return ATTNCONF_EINVAL;
    static rb_sdpa_call x; /* ~8 KiB of sinks: not on the stack (one call at a time) */
    int rc = rb_sdpa_unpack(&c->rb, args, &x);
    if (rc != ATTNCONF_OK)
        return rc;
    attnref_diag diag = {{0}};
    int st = attnref_sdpa_check(&x.q, &x.k, &x.v, x.has_mask ? &x.mask : NULL, &x.p, &x.out, &diag);
    if (st != ATTNREF_OK)
        return rb_finish(&c->rb, st, &diag);
    if (!c->ready) /* a must-reject case is still rejected above */
        return ocl_not_ready(c);
    args->out->dtype = (int32_t)x.out.dtype;
    const int64_t B = x.q.shape[0], Hq = x.q.shape[1], Hkv = x.k.shape[1], Lq = x.q.shape[2];
    const int64_t Lk = x.k.shape[2], D = x.q.shape[3], Dv = x.v.shape[3];
    if (B == 0 || Hq == 0 || Lq == 0 || Dv == 0)
        return rb_finish(&c->rb, ATTNREF_OK, &diag); /* nothing to write */
    int64_t bq, bk;
    size_t loc[7];
    if (!ocl_tiles(c, D, Dv, &bq, &bk, loc))
        return rb_fail(&c->rb, ATTNCONF_ENOTSUP,
                       "opencl: D = %lld, Dv = %lld need more local memory than the device's "
                       "%llu bytes",
                       (long long)D, (long long)Dv, (unsigned long long)c->local_bytes);

    cl_long meta[M_N];
    memset(meta, 0, sizeof meta);
    meta[M_B] = B;
    meta[M_HQ] = Hq;
    meta[M_HKV] = Hkv;
    meta[M_LQ] = Lq;
    meta[M_LK] = Lk;
    meta[M_D] = D;
    meta[M_DV] = Dv;
    for (int d = 0; d < 4; d++) {
        meta[M_QS + d] = x.q.strides[d];
        meta[M_KS + d] = x.k.strides[d];
        meta[M_VS + d] = x.v.strides[d];
        meta[M_OS + d] = x.out.strides[d];
    }
    /* The mask's strides, its axes right-aligned to (B, Hq, Lq, Lk); 0 where it broadcasts. */
    int64_t ms[4] = {0, 0, 0, 0};
    if (x.has_mask) {
        const int r = x.mask.ndim;
        for (int a = 0; a < 4; a++) {
            const int m = a - (4 - r);
            ms[a] = m < 0 || x.mask.shape[m] == 1 ? 0 : x.mask.strides[m];
            meta[M_MS + a] = ms[a];
        }
        meta[M_MDT] = x.mask.dtype;
    }
    meta[M_DT] = x.q.dtype;
    meta[M_CAUSAL] = x.p.causal;
    meta[M_OFF] = x.p.has_causal_offset ? x.p.causal_offset : Lk - Lq;
    meta[M_WINDOW] = x.p.window;
    meta[M_CHUNK] = x.p.chunk;
    meta[M_HAS_LEN] = x.p.lengths != NULL;
    meta[M_HAS_LP] = x.p.left_padding != NULL;
    meta[M_HAS_SEG] = x.p.segment_ids != NULL;
    meta[M_HAS_BLK] = x.p.block_ids != NULL;
    meta[M_HAS_SINK] = x.p.sinks != NULL;
    meta[M_HAS_ALIBI] = x.p.alibi_max_bias > 0;
    meta[M_BQ] = bq;
    meta[M_BK] = bk;

    float *sinks = calloc((size_t)Hq, sizeof *sinks), *slopes = calloc((size_t)Hq, sizeof *slopes);
    const size_t rows = (size_t)(B * Hq * Lq);
    int32_t *bad = calloc(rows, sizeof *bad);
    if (!sinks || !slopes || !bad) {
        free(sinks);
        free(slopes);
        free(bad);
        return rb_fail(&c->rb, ATTNCONF_ENOMEM, "opencl: out of host memory");
    }
    for (int64_t h = 0; h < Hq; h++) {
        sinks[h] = x.p.sinks ? (float)x.p.sinks[h] : 0.0f;
        slopes[h] =
            x.p.alibi_max_bias > 0 ? (float)attnref_alibi_slope(x.p.alibi_max_bias, Hq, h) : 0.0f;
    }
    const size_t ids = (size_t)(B * Lk) * sizeof(int64_t);
    cl_int e = CL_SUCCESS, e2;
    cl_mem bufs[10] = {0};
    bufs[0] = ocl_small(c, meta, sizeof meta, &e);
    bufs[1] = ocl_small(c, x.p.lengths, (size_t)B * sizeof(int64_t), &e2);
    e = e ? e : e2;
    bufs[2] = ocl_small(c, x.p.left_padding, (size_t)B * sizeof(int64_t), &e2);
    e = e ? e : e2;
    bufs[3] = ocl_small(c, x.p.segment_ids, ids, &e2);
    e = e ? e : e2;
    bufs[4] = ocl_small(c, x.p.block_ids, ids, &e2);
    e = e ? e : e2;
    bufs[5] = ocl_small(c, sinks, (size_t)Hq * sizeof(float), &e2);
    e = e ? e : e2;
    bufs[6] = ocl_small(c, slopes, (size_t)Hq * sizeof(float), &e2);
    e = e ? e : e2;
    bufs[7] = clCreateBuffer(c->cx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, rows * sizeof *bad,
                             bad, &e2);
    e = e ? e : e2;
    int32_t nbad = 0;
    bufs[8] =
        clCreateBuffer(c->cx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof nbad, &nbad, &e2);
    e = e ? e : e2;
    if (e != CL_SUCCESS) {
        rc = ocl_cl_fail(c, "clCreateBuffer (parameters)", e);
        goto done;
    }
    {
        cl_mem qm = (cl_mem)x.q.data, km = (cl_mem)x.k.data, vm = (cl_mem)x.v.data;
        cl_mem mm = x.has_mask ? (cl_mem)x.mask.data : qm, om = (cl_mem)x.out.data;
        const float scale = x.p.has_scale ? (float)x.p.scale : (float)(1.0 / sqrt((double)D));
        const float softcap = (float)x.p.softcap;
        cl_uint a = 0;
        e = clSetKernelArg(c->kern, a++, sizeof(cl_mem), &bufs[0]);
        e |= clSetKernelArg(c->kern, a++, sizeof(cl_mem), &qm);
        e |= clSetKernelArg(c->kern, a++, sizeof(cl_mem), &km);
        e |= clSetKernelArg(c->kern, a++, sizeof(cl_mem), &vm);
        e |= clSetKernelArg(c->kern, a++, sizeof(cl_mem), &mm);
        e |= clSetKernelArg(c->kern, a++, sizeof(cl_mem), &om);
        for (int t = 1; t <= 6; t++)
            e |= clSetKernelArg(c->kern, a++, sizeof(cl_mem), &bufs[t]);
        e |= clSetKernelArg(c->kern, a++, sizeof(float), &scale);
        e |= clSetKernelArg(c->kern, a++, sizeof(float), &softcap);
        e |= clSetKernelArg(c->kern, a++, sizeof(cl_mem), &bufs[7]);
        e |= clSetKernelArg(c->kern, a++, sizeof(cl_mem), &bufs[8]);
        for (int t = 0; t < 7; t++)
            e |= clSetKernelArg(c->kern, a++, loc[t], NULL);
        if (e != CL_SUCCESS) {
            rc = ocl_cl_fail(c, "clSetKernelArg", e);
            goto done;
        }
        const size_t wg = c->max_wg >= 64 ? 64 : c->max_wg;
        const size_t groups = (size_t)(B * Hq * ((Lq + bq - 1) / bq));
        const size_t global = groups * wg;
        e = clEnqueueNDRangeKernel(c->qu, c->kern, 1, NULL, &global, &wg, 0, NULL, NULL);
        if (e != CL_SUCCESS) {
            rc = ocl_cl_fail(c, "clEnqueueNDRangeKernel", e);
            goto done;
        }
    }
    /* The flags decide whether rows go to binary64: reading them waits for the kernel. */
    e = clEnqueueReadBuffer(c->qu, bufs[8], CL_TRUE, 0, sizeof nbad, &nbad, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
        rc = ocl_cl_fail(c, "clEnqueueReadBuffer (row flags)", e);
        goto done;
    }
    /* A softcap outside the f32 kernel's range: every row in binary64 (as cpu). */
    const int all = x.p.softcap > 0 && !(x.p.softcap >= 0x1p-100 && x.p.softcap <= 0x1p100);
    if (nbad > 0 && !all) {
        e = clEnqueueReadBuffer(c->qu, bufs[7], CL_TRUE, 0, rows * sizeof *bad, bad, 0, NULL, NULL);
        if (e != CL_SUCCESS) {
            rc = ocl_cl_fail(c, "clEnqueueReadBuffer (row flags)", e);
            goto done;
        }
    }
    if (nbad > 0 || all)
        rc = ocl_redo_rows(c, &x, bad, all, ms);
    if (rc == ATTNCONF_OK)
        rc = rb_finish(&c->rb, ATTNREF_OK, &diag);
done:
    for (int t = 0; t < 10; t++)
        if (bufs[t])
            clReleaseMemObject(bufs[t]);
    free(sinks);
    free(slopes);
    free(bad);
    return rc;
}

static const attnconf_backend ocl_table = {
    .abi_version = ATTNCONF_ABI_VERSION,
    .struct_size = sizeof(attnconf_backend),
    .name = "opencl",
    .version = "0.1.0",
    .open = ocl_open,
    .close = ocl_close,
    .capabilities = ocl_capabilities,
    .sdpa = ocl_sdpa,
    .last_error = ocl_last_error,
    .device_info = ocl_device_info,
    .device_alloc = ocl_device_alloc,
    .device_free = ocl_device_free,
    .copy_to_device = ocl_copy_to_device,
    .copy_from_device = ocl_copy_from_device,
    .synchronize = ocl_synchronize,
};

__attribute__((visibility("default"))) const attnconf_backend *
attnconf_backend_entry(uint32_t host_abi_version)
{
    return host_abi_version == ATTNCONF_ABI_VERSION ? &ocl_table : NULL;
}
