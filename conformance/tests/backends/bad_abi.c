/* bad_abi.c — TEST-ONLY broken backends that the harness loader must reject with a clear
 * message.  One source, several modules, chosen by BAD_ABI_MODE:
 *   1  abi_version 2 (a plugin built against a future ABI)
 *   2  no attnconf_backend_entry symbol (some other shared library)
 *   3  a required member (sdpa) is NULL
 *   4  the entry point returns NULL (refuses this host's ABI version)
 *   5  lists options but has no open_with_options to receive them
 *   9  struct_size 16: a table shorter than the first revision's members (a truncated or
 *      foreign struct), which the host must not read past
 *  10  capabilities() sets bit 21, which names no capability
 *  11  capabilities() reports cache.standard, but the table has no cache members
 * and some that take down the process loading them (the harness loads plugins in a worker):
 *   6  open() writes through a NULL pointer (SIGSEGV)
 *   7  the entry point never returns
 *   8  open() recurses until the stack runs out
 */
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "attnconf/backend.h"
#include "faults.h"

#ifndef BAD_ABI_MODE
#define BAD_ABI_MODE 1
#endif

static int bad_open(void **ctx)
{
#if BAD_ABI_MODE == 6
    tf_write((volatile unsigned char *)(uintptr_t)0, 1);
#elif BAD_ABI_MODE == 8
    if (tf_recurse(0) == 1)
        return ATTNCONF_EBACKEND; /* uses the result; not reached with a stack limit */
#endif
    *ctx = NULL;
    return ATTNCONF_OK;
}

static void bad_close(void *ctx)
{
    (void)ctx;
}

static uint64_t bad_caps(void *ctx)
{
    (void)ctx;
    return ATTNCONF_CAP_F32 | (BAD_ABI_MODE == 10 ? 1ull << 30 : 0) |
           (BAD_ABI_MODE == 11 ? ATTNCONF_CAP_CACHE_STD : 0);
}

static int bad_sdpa(void *ctx, const attnconf_sdpa_args *args)
{
    (void)ctx;
    (void)args;
    return ATTNCONF_EBACKEND;
}

static const char *bad_last_error(void *ctx)
{
    (void)ctx;
    return "bad_abi test backend";
}

#if BAD_ABI_MODE == 5
static const attnconf_option_info bad_options[] = {{"device", "cpu", "where to run"},
                                                   {NULL, NULL, NULL}};
#endif

static const attnconf_backend bad_table = {
    .abi_version = BAD_ABI_MODE == 1 ? 2u : ATTNCONF_ABI_VERSION,
    .struct_size = BAD_ABI_MODE == 9 ? 16u : sizeof(attnconf_backend),
    .name = "bad_abi",
    .version = "0",
    .open = bad_open,
    .close = bad_close,
    .capabilities = bad_caps,
    .sdpa = BAD_ABI_MODE == 3 ? NULL : bad_sdpa,
    .build_mask = NULL,
    .last_error = bad_last_error,
#if BAD_ABI_MODE == 5
    .options = bad_options,
#endif
};

#if BAD_ABI_MODE == 2
/* Exported under the wrong name: the loader must say the entry symbol is missing. */
__attribute__((visibility("default"))) const attnconf_backend *not_the_entry(uint32_t v)
#else
__attribute__((visibility("default"))) const attnconf_backend *attnconf_backend_entry(uint32_t v)
#endif
{
    (void)v;
#if BAD_ABI_MODE == 7
    for (;;)
        pause();
#endif
    return BAD_ABI_MODE == 4 ? NULL : &bad_table;
}
