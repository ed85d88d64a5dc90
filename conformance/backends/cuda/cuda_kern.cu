/* cuda_kern.cu — the device side of the `cuda` backend: the kernels of cuda_kern.h as CUDA
 * kernels, their tensor-core products (WMMA, f32 accumulators) and the runtime calls of the
 * device layer (cuda_dev.h).  Built for sm_80 and sm_90 (with sm_90 PTX for newer devices). */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <stdio.h>

#include "attnconf/backend.h"
#include "cuda_dev.h"
#include "cuda_kern.h"

using namespace nvcuda;

/* S (bq x bk, f32, pitch bk) = Q (bq x dp, pitch ldq) . K^T (K: bk x dp, pitch ldk), one 16x16
 * tile per warp job.  K read as a column-major B operand is K^T. */
template <typename T>
__device__ static void mma_qk_t(const ck_params *p, const T *qs, const T *ks, float *s)
{
    const int warp = (int)(threadIdx.x / 32);
    const int tn = p->bk / 16, jobs = (p->bq / 16) * tn;
    for (int job = warp; job < jobs; job += CK_WARPS) {
        const int mi = job / tn, ni = job % tn;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::fill_fragment(acc, 0.0f);
        for (int k0 = 0; k0 < p->dp; k0 += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b;
            wmma::load_matrix_sync(a, qs + (size_t)mi * 16 * p->ldq + k0, (unsigned)p->ldq);
            wmma::load_matrix_sync(b, ks + (size_t)ni * 16 * p->ldk + k0, (unsigned)p->ldk);
            wmma::mma_sync(acc, a, b, acc);
        }
        wmma::store_matrix_sync(s + (size_t)mi * 16 * p->bk + ni * 16, acc, (unsigned)p->bk,
                                wmma::mem_row_major);
    }
}

/* O (bq x dvp, f32, pitch ldo) += P (bq x bk, pitch ldp) . V (bk x dvp, pitch ldv). */
template <typename T>
__device__ static void mma_pv_t(const ck_params *p, const T *ps, const T *vs, float *o)
{
    const int warp = (int)(threadIdx.x / 32);
    const int tn = p->dvp / 16, jobs = (p->bq / 16) * tn;
    for (int job = warp; job < jobs; job += CK_WARPS) {
        const int mi = job / tn, ni = job % tn;
        float *ot = o + (size_t)mi * 16 * p->ldo + ni * 16;
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
        wmma::load_matrix_sync(acc, ot, (unsigned)p->ldo, wmma::mem_row_major);
        for (int k0 = 0; k0 < p->bk; k0 += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
            wmma::load_matrix_sync(a, ps + (size_t)mi * 16 * p->ldp + k0, (unsigned)p->ldp);
            wmma::load_matrix_sync(b, vs + (size_t)k0 * p->ldv + ni * 16, (unsigned)p->ldv);
            wmma::mma_sync(acc, a, b, acc);
        }
        wmma::store_matrix_sync(ot, acc, (unsigned)p->ldo, wmma::mem_row_major);
    }
}

__device__ void ck_mma_qk(const ck_params *p, const void *qs, const void *ks, float *s)
{
    if (p->dtype == CK_F16)
        mma_qk_t<__half>(p, (const __half *)qs, (const __half *)ks, s);
    else
        mma_qk_t<__nv_bfloat16>(p, (const __nv_bfloat16 *)qs, (const __nv_bfloat16 *)ks, s);
}

__device__ void ck_mma_pv(const ck_params *p, const void *ps, const void *vs, float *o)
{
    if (p->dtype == CK_F16)
        mma_pv_t<__half>(p, (const __half *)ps, (const __half *)vs, o);
    else
        mma_pv_t<__nv_bfloat16>(p, (const __nv_bfloat16 *)ps, (const __nv_bfloat16 *)vs, o);
}

__global__ void __launch_bounds__(CK_THREADS)
    ck_flash_kernel(const __grid_constant__ ck_params p, int64_t items)
{
    extern __shared__ __align__(128) unsigned char ck_sm[];
    for (int64_t it = blockIdx.x; it < items; it += gridDim.x) {
        ck_flash_block(&p, it, ck_sm);
        __syncthreads();
    }
}

__global__ void __launch_bounds__(CK_THREADS) ck_f64_kernel(const __grid_constant__ ck_params p)
{
    __shared__ ck_f64_shared sh;
    ck_f64_item(&p, blockIdx.x, gridDim.x, &sh);
}

/* ---- the device layer ---- */

static int fail(char *err, size_t errlen, int code, const char *what, cudaError_t e)
{
    if (err && errlen)
        snprintf(err, errlen, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return code;
}

extern "C" int cudev_open(int ordinal, cudev_props *pr, char *err, size_t errlen)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: clear it */
        return fail(err, errlen, ATTNCONF_ENOTSUP, "no CUDA device usable: cudaGetDeviceCount", e);
    }
    if (n == 0) {
        snprintf(err, errlen, "no CUDA device: cudaGetDeviceCount found none");
        return ATTNCONF_ENOTSUP;
    }
    if (ordinal < 0 || ordinal >= n) {
        snprintf(err, errlen, "device=%d: this machine has CUDA devices 0..%d", ordinal, n - 1);
        return ATTNCONF_ENOTSUP;
    }
    if ((e = cudaSetDevice(ordinal)) != cudaSuccess)
        return fail(err, errlen, ATTNCONF_ENOTSUP, "cudaSetDevice", e);
    cudaDeviceProp dp;
    if ((e = cudaGetDeviceProperties(&dp, ordinal)) != cudaSuccess)
        return fail(err, errlen, ATTNCONF_ENOTSUP, "cudaGetDeviceProperties", e);
    if (dp.major < 8) {
        snprintf(err, errlen,
                 "%s is compute capability %d.%d: the kernels are built for sm_80 and sm_90",
                 dp.name, dp.major, dp.minor);
        return ATTNCONF_ENOTSUP;
    }
    memset(pr, 0, sizeof *pr);
    memcpy(pr->name, dp.name, sizeof pr->name - 1); /* dp.name is longer: cut, terminated */
    pr->name[sizeof pr->name - 1] = '\0';
    pr->memory = (uint64_t)dp.totalGlobalMem;
    pr->cc_major = dp.major;
    pr->cc_minor = dp.minor;
    pr->sms = dp.multiProcessorCount;
    pr->smem_optin = dp.sharedMemPerBlockOptin;
    pr->emulated = 0;
    return ATTNCONF_OK;
}

extern "C" int cudev_alloc(size_t bytes, void **ptr, char *err, size_t errlen)
{
    *ptr = NULL;
    cudaError_t e = cudaMalloc(ptr, bytes);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        snprintf(err, errlen, "cudaMalloc: no room for %zu bytes", bytes);
        return ATTNCONF_ENOMEM;
    }
    return e == cudaSuccess ? ATTNCONF_OK : fail(err, errlen, ATTNCONF_EBACKEND, "cudaMalloc", e);
}

extern "C" void cudev_free(void *ptr)
{
    if (ptr)
        (void)cudaFree(ptr);
}

extern "C" int cudev_copy(void *dst, const void *src, size_t bytes, int kind, char *err,
                          size_t errlen)
{
    if (bytes == 0)
        return ATTNCONF_OK;
    cudaError_t e = cudaMemcpy(dst, src, bytes,
                               kind == CUDEV_H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost);
    return e == cudaSuccess ? ATTNCONF_OK : fail(err, errlen, ATTNCONF_EBACKEND, "cudaMemcpy", e);
}

extern "C" int cudev_memset(void *ptr, int value, size_t bytes, char *err, size_t errlen)
{
    if (bytes == 0)
        return ATTNCONF_OK;
    cudaError_t e = cudaMemsetAsync(ptr, value, bytes, 0);
    return e == cudaSuccess ? ATTNCONF_OK : fail(err, errlen, ATTNCONF_EBACKEND, "cudaMemset", e);
}

extern "C" int cudev_sync(char *err, size_t errlen)
{
    cudaError_t e = cudaDeviceSynchronize();
    return e == cudaSuccess ? ATTNCONF_OK
                            : fail(err, errlen, ATTNCONF_EBACKEND, "cudaDeviceSynchronize", e);
}

extern "C" int cudev_is_device(const void *ptr)
{
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, ptr) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

extern "C" int cudev_launch(const ck_params *p, int64_t items, int64_t f64_blocks, size_t smem,
                            char *err, size_t errlen)
{
    cudaError_t e;
    if (!p->f64_all && items > 0) {
        if (smem > 48 * 1024 &&
            (e = cudaFuncSetAttribute(ck_flash_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      (int)smem)) != cudaSuccess)
            return fail(err, errlen, ATTNCONF_EBACKEND, "cudaFuncSetAttribute", e);
        const unsigned grid = (unsigned)(items < (1 << 30) ? items : (1 << 30));
        ck_flash_kernel<<<grid, CK_THREADS, smem>>>(*p, items);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return fail(err, errlen, ATTNCONF_EBACKEND, "flash kernel launch", e);
    }
    if (f64_blocks > 0) {
        ck_f64_kernel<<<(unsigned)f64_blocks, CK_THREADS>>>(*p);
        if ((e = cudaGetLastError()) != cudaSuccess)
            return fail(err, errlen, ATTNCONF_EBACKEND, "binary64 kernel launch", e);
    }
    return ATTNCONF_OK;
}
