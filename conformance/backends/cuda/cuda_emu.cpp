/* cuda_emu.cpp — the device layer (cuda_dev.h) as a host emulator, for the test-only plugin
 * `cuda_emu`: the kernels of cuda_kern.h run here block after block, each phase thread after
 * thread, on host memory standing in for device memory; the tensor-core products are the same
 * sums in f32 over the same shared-memory operands (cuda_kern.cu's WMMA tiles).  What it cannot
 * check: races, WMMA itself and device numerics (expf, tanhf); everything else is the code the
 * device runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "attnconf/backend.h"
#include "cuda_dev.h"
#include "cuda_kern.h"

static float emu_elem(const ck_params *p, const void *base, size_t i)
{
    const uint16_t h = ((const uint16_t *)base)[i];
    return p->dtype == CK_F16 ? ck_f16_to_f32(h) : ck_bf16_to_f32(h);
}

/* The WMMA tiles of cuda_kern.cu: one 16x16 output tile per job, k in steps of 16. */
void ck_mma_qk(const ck_params *p, const void *qs, const void *ks, float *s)
{
    for (int mi = 0; mi < p->bq / 16; mi++)
        for (int ni = 0; ni < p->bk / 16; ni++)
            for (int r = 0; r < 16; r++)
                for (int c = 0; c < 16; c++) {
                    float acc = 0.0f;
                    for (int d = 0; d < p->dp; d++)
                        acc += emu_elem(p, qs, (size_t)(mi * 16 + r) * p->ldq + d) *
                               emu_elem(p, ks, (size_t)(ni * 16 + c) * p->ldk + d);
                    s[(size_t)(mi * 16 + r) * p->bk + ni * 16 + c] = acc;
                }
}

void ck_mma_pv(const ck_params *p, const void *ps, const void *vs, float *o)
{
    for (int mi = 0; mi < p->bq / 16; mi++)
        for (int ni = 0; ni < p->dvp / 16; ni++)
            for (int r = 0; r < 16; r++)
                for (int c = 0; c < 16; c++) {
                    float *ot = &o[(size_t)(mi * 16 + r) * p->ldo + ni * 16 + c];
                    float acc = *ot;
                    for (int k = 0; k < p->bk; k++)
                        acc += emu_elem(p, ps, (size_t)(mi * 16 + r) * p->ldp + k) *
                               emu_elem(p, vs, (size_t)k * p->ldv + ni * 16 + c);
                    *ot = acc;
                }
}

extern "C" int cudev_open(int ordinal, cudev_props *pr, char *err, size_t errlen)
{
    if (ordinal != 0) {
        snprintf(err, errlen, "device=%d: the emulator has device 0 only", ordinal);
        return ATTNCONF_ENOTSUP;
    }
    memset(pr, 0, sizeof *pr);
    snprintf(pr->name, sizeof pr->name, "host emulator of the cuda kernels");
    pr->cc_major = 9;
    pr->sms = 1;
    pr->smem_optin = 227 * 1024; /* an H100/H200 block's opt-in limit: the same tile plans */
    pr->emulated = 1;
    return ATTNCONF_OK;
}

extern "C" int cudev_alloc(size_t bytes, void **ptr, char *err, size_t errlen)
{
    *ptr = calloc(1, bytes ? bytes : 1);
    if (!*ptr) {
        snprintf(err, errlen, "no room for %zu bytes", bytes);
        return ATTNCONF_ENOMEM;
    }
    return ATTNCONF_OK;
}

extern "C" void cudev_free(void *ptr)
{
    free(ptr);
}

extern "C" int cudev_copy(void *dst, const void *src, size_t bytes, int kind, char *err,
                          size_t errlen)
{
    (void)kind, (void)err, (void)errlen;
    if (bytes)
        memmove(dst, src, bytes);
    return ATTNCONF_OK;
}

extern "C" int cudev_memset(void *ptr, int value, size_t bytes, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    if (bytes)
        memset(ptr, value, bytes);
    return ATTNCONF_OK;
}

extern "C" int cudev_sync(char *err, size_t errlen)
{
    (void)err, (void)errlen;
    return ATTNCONF_OK;
}

extern "C" int cudev_is_device(const void *ptr)
{
    (void)ptr;
    return 1;
}

extern "C" int cudev_launch(const ck_params *p, int64_t items, int64_t f64_blocks, size_t smem,
                            char *err, size_t errlen)
{
    if (!p->f64_all && items > 0) {
        std::vector<unsigned char> sm;
        try {
            sm.assign(smem, 0xA5); /* garbage, as shared memory starts */
        } catch (...) {
            snprintf(err, errlen, "no room for %zu bytes of shared memory", smem);
            return ATTNCONF_ENOMEM;
        }
        for (int64_t it = 0; it < items; it++)
            ck_flash_block(p, it, sm.data());
    }
    ck_f64_shared sh;
    for (int64_t b = 0; b < f64_blocks; b++)
        ck_f64_item(p, b, f64_blocks, &sh);
    return ATTNCONF_OK;
}
