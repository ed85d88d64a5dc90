/* fake_device.c — TEST-ONLY device backend (ABI v1, seventh revision): the reference backend
 * behind the device members, so the harness's device path (run.c: device buffers with canary
 * margins, copies in and out, synchronize; bench: kernel time and copy time apart) is tested
 * without a GPU.
 *
 * Its "device memory" is host memory the plugin allocates, reached only through handles that
 * are small integers (1, 2, ...): a host that dereferenced a handle instead of copying through
 * copy_from_device would fault at a tiny address, a CRASH.  sdpa looks every tensor's handle up,
 * calls the reference on the host pointers behind them and leaves the output descriptor's
 * data as the handle it was given.  Everything but the device members is the reference's;
 * build_mask and the KV cache are left out (their buffers are host memory in the ABI).
 *
 * FAKE_DEVICE_MODE selects a deliberate bug, for the proofs that the harness catches it:
 *   0 fake_device                  none: every supported case must pass through the device path
 *   1 fake_device_write_past       after a correct result, writes 4 bytes just past the end of
 *                                  the output buffer (out_capacity), inside the device
 *                                  allocation (the host's canary margin): a FAIL naming the
 *                                  output buffer
 *   2 fake_device_modify_input     after a correct result, flips a bit of q's first byte on the
 *                                  device: a FAIL naming input q
 * The reference's entry point is renamed so this file's is the one exported.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define attnconf_backend_entry fd_reference_entry
#include "../../backends/reference/reference_backend.c"
#undef attnconf_backend_entry

#ifndef FAKE_DEVICE_MODE
#define FAKE_DEVICE_MODE 0
#endif

#if FAKE_DEVICE_MODE == 1
#define FD_NAME "fake_device_write_past"
#elif FAKE_DEVICE_MODE == 2
#define FD_NAME "fake_device_modify_input"
#else
#define FD_NAME "fake_device"
#endif

/* At most this many live device buffers (an sdpa call needs five). */
#define FD_MAX_BUFS 64

typedef struct fd_buf {
    unsigned char *mem; /* NULL = free slot */
    size_t size;
} fd_buf;

typedef struct fd_ctx {
    void *ref; /* the reference's context */
    fd_buf bufs[FD_MAX_BUFS];
    char err[256];
    uint64_t syncs; /* synchronize calls (nothing is asynchronous here) */
} fd_ctx;

static const attnconf_backend *fd_ref;

__attribute__((format(printf, 2, 3))) static int fd_fail(fd_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    return ATTNCONF_EINVAL;
}

/* The slot behind a handle, or NULL if it is none of ours. */
static fd_buf *fd_lookup(fd_ctx *c, const void *handle)
{
    uintptr_t h = (uintptr_t)handle;
    if (h < 1 || h > FD_MAX_BUFS || !c->bufs[h - 1].mem)
        return NULL;
    return &c->bufs[h - 1];
}

static int fd_open(void **ctx)
{
    if (!ctx)
        return ATTNCONF_EINVAL;
    fd_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return ATTNCONF_ENOMEM;
    int rc = fd_ref->open(&c->ref);
    if (rc != ATTNCONF_OK) {
        free(c);
        return rc;
    }
    *ctx = c;
    return ATTNCONF_OK;
}

static void fd_close(void *ctx)
{
    fd_ctx *c = ctx;
    if (!c)
        return;
    for (int i = 0; i < FD_MAX_BUFS; i++)
        free(c->bufs[i].mem);
    fd_ref->close(c->ref);
    free(c);
}

static uint64_t fd_capabilities(void *ctx)
{
    fd_ctx *c = ctx;
    const uint64_t mask_builder = ATTNCONF_CAP_BUILD_MASK | ATTNCONF_CAP_WINDOW |
                                  ATTNCONF_CAP_LENGTHS | ATTNCONF_CAP_LEFT_PAD |
                                  ATTNCONF_CAP_KV_LEN | ATTNCONF_CAP_MASK_CHUNK |
                                  ATTNCONF_CAP_MASK_SEGMENTS | ATTNCONF_CAP_MASK_BLOCKS;
    return (fd_ref->capabilities(c->ref) & ~(uint64_t)RC_CAPS & ~(uint64_t)RP_CAPS &
            ~mask_builder) |
           ATTNCONF_CAP_DEVICE;
}

static const char *fd_last_error(void *ctx)
{
    fd_ctx *c = ctx;
    if (!c)
        return "";
    return c->err[0] ? c->err : fd_ref->last_error(c->ref);
}

static int fd_device_info(void *ctx, attnconf_device_info *info)
{
    (void)ctx;
    if (!info || info->struct_size < sizeof *info)
        return ATTNCONF_EINVAL;
    info->device_type = ATTNCONF_DEVICE_CPU;
    info->device_id = 0;
    snprintf(info->name, sizeof info->name, "fake device (host memory behind integer handles)");
    info->memory_bytes = 0;
    return ATTNCONF_OK;
}

static int fd_device_alloc(void *ctx, size_t bytes, void **handle)
{
    fd_ctx *c = ctx;
    c->err[0] = '\0';
    if (!handle || bytes == 0)
        return fd_fail(c, "device_alloc: %s", handle ? "0 bytes" : "no handle pointer");
    for (int i = 0; i < FD_MAX_BUFS; i++) {
        if (c->bufs[i].mem)
            continue;
        /* Fresh memory holds garbage, as a device's would: the host must write what it reads. */
        c->bufs[i].mem = malloc(bytes);
        if (!c->bufs[i].mem)
            return ATTNCONF_ENOMEM;
        memset(c->bufs[i].mem, 0x5A, bytes);
        c->bufs[i].size = bytes;
        *handle = (void *)(uintptr_t)(i + 1);
        return ATTNCONF_OK;
    }
    snprintf(c->err, sizeof c->err, "device_alloc: more than %d live buffers", FD_MAX_BUFS);
    return ATTNCONF_ENOMEM;
}

static void fd_device_free(void *ctx, void *handle)
{
    fd_ctx *c = ctx;
    fd_buf *b = handle ? fd_lookup(c, handle) : NULL;
    if (b) {
        free(b->mem);
        memset(b, 0, sizeof *b);
    }
}

/* The slot of handle if [offset, offset + bytes) lies inside it, else NULL with the error. */
static fd_buf *fd_range(fd_ctx *c, const char *what, const void *handle, size_t offset,
                        size_t bytes)
{
    c->err[0] = '\0';
    fd_buf *b = fd_lookup(c, handle);
    if (!b)
        fd_fail(c, "%s: %p is not a device handle of this context", what, handle);
    else if (offset > b->size || bytes > b->size - offset)
        fd_fail(c, "%s: bytes %zu..%zu outside the %zu-byte buffer", what, offset, offset + bytes,
                b->size);
    else
        return b;
    return NULL;
}

static int fd_copy_to_device(void *ctx, void *handle, size_t offset, const void *src, size_t bytes)
{
    fd_buf *b = fd_range(ctx, "copy_to_device", handle, offset, bytes);
    if (!b)
        return ATTNCONF_EINVAL;
    if (bytes)
        memcpy(b->mem + offset, src, bytes);
    return ATTNCONF_OK;
}

static int fd_copy_from_device(void *ctx, void *dst, const void *handle, size_t offset,
                               size_t bytes)
{
    fd_buf *b = fd_range(ctx, "copy_from_device", handle, offset, bytes);
    if (!b)
        return ATTNCONF_EINVAL;
    if (bytes)
        memcpy(dst, b->mem + offset, bytes);
    return ATTNCONF_OK;
}

static int fd_synchronize(void *ctx)
{
    fd_ctx *c = ctx;
    c->syncs++;
    return ATTNCONF_OK;
}

/* *host = t with its handle replaced by the host pointer behind it. */
static int fd_unwrap(fd_ctx *c, const char *name, const attnconf_tensor *t, attnconf_tensor *host)
{
    *host = *t;
    fd_buf *b = fd_lookup(c, t->data);
    if (!b)
        return fd_fail(c, "sdpa: %s->data %p is not a device handle of this context", name,
                       t->data);
    host->data = b->mem;
    return ATTNCONF_OK;
}

static int fd_sdpa(void *ctx, const attnconf_sdpa_args *args)
{
    fd_ctx *c = ctx;
    if (!c || !args || !args->q || !args->k || !args->v || !args->out)
        return ATTNCONF_EINVAL;
    c->err[0] = '\0';
    attnconf_tensor q, k, v, m, out;
    int rc;
    if ((rc = fd_unwrap(c, "q", args->q, &q)) != ATTNCONF_OK ||
        (rc = fd_unwrap(c, "k", args->k, &k)) != ATTNCONF_OK ||
        (rc = fd_unwrap(c, "v", args->v, &v)) != ATTNCONF_OK ||
        (args->mask && (rc = fd_unwrap(c, "mask", args->mask, &m)) != ATTNCONF_OK) ||
        (rc = fd_unwrap(c, "out", args->out, &out)) != ATTNCONF_OK)
        return rc;
    fd_buf *ob = fd_lookup(c, args->out->data);
    if (args->out_capacity > ob->size)
        return fd_fail(c, "sdpa: out_capacity %zu over the output's %zu-byte device buffer",
                       args->out_capacity, ob->size);
    attnconf_sdpa_args a;
    memset(&a, 0, sizeof a);
    memcpy(&a, args, args->struct_size < sizeof a ? args->struct_size : sizeof a);
    a.struct_size = args->struct_size < sizeof a ? args->struct_size : (uint32_t)sizeof a;
    a.q = &q;
    a.k = &k;
    a.v = &v;
    a.mask = args->mask ? &m : NULL;
    a.out = &out;
    rc = fd_ref->sdpa(c->ref, &a);
    /* What the reference says it produced, on the caller's descriptor (data stays the handle). */
    args->out->dtype = out.dtype;
    memcpy(args->out->strides, out.strides, sizeof out.strides);
#if FAKE_DEVICE_MODE == 1
    if (rc == ATTNCONF_OK) /* test-only bug: 4 bytes past the output buffer */
        for (size_t i = args->out_capacity; i < args->out_capacity + 4 && i < ob->size; i++)
            ob->mem[i] ^= 0x10;
#elif FAKE_DEVICE_MODE == 2
    if (rc == ATTNCONF_OK) /* test-only bug: an input changed on the device */
        ((unsigned char *)q.data)[0] ^= 0x01;
#endif
    return rc;
}

static attnconf_backend fd_table;

__attribute__((visibility("default"))) const attnconf_backend *
attnconf_backend_entry(uint32_t host_abi_version)
{
    if (host_abi_version != ATTNCONF_ABI_VERSION)
        return NULL;
    fd_ref = fd_reference_entry(host_abi_version);
    memset(&fd_table, 0, sizeof fd_table);
    fd_table.abi_version = ATTNCONF_ABI_VERSION;
    fd_table.struct_size = sizeof fd_table;
    fd_table.name = FD_NAME;
    fd_table.version = "0.1.0 (test-only device backend over the reference)";
    fd_table.open = fd_open;
    fd_table.close = fd_close;
    fd_table.capabilities = fd_capabilities;
    fd_table.sdpa = fd_sdpa;
    fd_table.last_error = fd_last_error;
    fd_table.device_info = fd_device_info;
    fd_table.device_alloc = fd_device_alloc;
    fd_table.device_free = fd_device_free;
    fd_table.copy_to_device = fd_copy_to_device;
    fd_table.copy_from_device = fd_copy_from_device;
    fd_table.synchronize = fd_synchronize;
    return &fd_table;
}
