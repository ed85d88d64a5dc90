/* cuda_dev.h — the device layer under the `cuda` plugin (cuda_backend.c): one C interface, two
 * implementations.  cuda_dev.cu runs on a CUDA device through the runtime API (linked
 * statically, so the plugin loads where libcuda is absent and says so when opened);
 * cuda_emu.cpp runs the same kernels (cuda_kern.h) on the host, with host memory standing in for
 * device memory (the test-only plugin `cuda_emu`).  Every function returns an ATTNCONF_* code and
 * writes a one-line reason to err on failure. */
#ifndef ATTNCONF_CUDA_DEV_H
#define ATTNCONF_CUDA_DEV_H

#include <stddef.h>
#include <stdint.h>

#include "cuda_params.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cudev_props {
    char name[128];  /* "NVIDIA H200"; "host emulator" */
    uint64_t memory; /* bytes of device memory */
    int cc_major, cc_minor, sms;
    size_t smem_optin; /* shared memory a block may opt in to, bytes */
    int emulated;      /* 1: cuda_emu.cpp (device memory is host memory) */
} cudev_props;

/* Select device `ordinal`.  ENOTSUP (with the runtime's reason) when no CUDA device or driver is
 * usable, or the device is older than sm_80 (the kernels are built for sm_80 and sm_90). */
int cudev_open(int ordinal, cudev_props *pr, char *err, size_t errlen);
/* bytes >= 1; ENOMEM when the device has no room. */
int cudev_alloc(size_t bytes, void **ptr, char *err, size_t errlen);
void cudev_free(void *ptr); /* NULL is a no-op */
enum { CUDEV_H2D = 0, CUDEV_D2H = 1 };
int cudev_copy(void *dst, const void *src, size_t bytes, int kind, char *err, size_t errlen);
int cudev_memset(void *ptr, int value, size_t bytes, char *err, size_t errlen);
int cudev_sync(char *err, size_t errlen);
/* 1 if ptr is device memory the kernels can read (always 1 in the emulator). */
int cudev_is_device(const void *ptr);
/* The flash kernel over `items` work items (unless p->f64_all), then the binary64 kernel on
 * f64_blocks blocks (each with p->Dv doubles of p->f64_scratch).  Asynchronous on the device. */
int cudev_launch(const ck_params *p, int64_t items, int64_t f64_blocks, size_t smem, char *err,
                 size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
