/* cuda_backend.c — the `cuda` backend plugin (ABI v1, seventh revision: device memory), and,
 * compiled with CUDA_EMU, the test-only `cuda_emu` plugin that runs the same kernels on the host
 * (cuda_emu.cpp).  See README.md next to this file.
 *
 * What comes from where:
 *   - sdpa: argument unpacking and the output-capacity check are the reference plugin's
 *     (rb_sdpa_unpack), validation is attnref_sdpa_check (the reference's own checks, so every
 *     invalid call gets the reference's code and message; it reads descriptors, never data), the
 *     computation is cuda_kern.h on the device.  Tensors are device buffers from device_alloc;
 *     a host that passes host memory instead (a host without the seventh revision) is served
 *     through staging copies, so the plugin is correct under either kind of host.
 *   - build_mask: attnref_build_mask on the host (not a hot path); a keep tensor in device
 *     memory is filled through a host copy.
 *   - device members: cudaMalloc / cudaMemcpy / cudaDeviceSynchronize (cuda_dev.h).
 * No KV cache members (their capabilities stay unset).  The only exported symbol is
 * attnconf_backend_entry. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnconf/backend.h"
#include "attnref/mask.h"
#include "attnref/sdpa.h"
#include "attnref/status.h"
#include "attnref/tensor.h"
#include "cuda_dev.h"
#include "rb_common.h"

#define CUDA_VERSION_TEXT "0.1.0"

#ifdef CUDA_EMU
#define CUDA_NAME "cuda_emu"
#else
#define CUDA_NAME "cuda"
#endif

/* Blocks of the binary64 kernel at most (each holds Dv doubles of scratch). */
#define CUDA_F64_BLOCKS 256

typedef enum cuda_path {
    CUDA_PATH_AUTO = 0, /* tensor cores for f16/bf16, the f32 SIMT tiles for f32 */
    CUDA_PATH_SIMT,     /* the f32 SIMT tiles for every dtype */
    CUDA_PATH_F64       /* every row in binary64 (the slow, exact kernel) */
} cuda_path;

typedef struct cuda_ctx {
    rb_ctx base; /* first: rb_* record errors here */
    cudev_props props;
    int ordinal;
    cuda_path path;
    int device_memory; /* report ATTNCONF_CAP_DEVICE (always in `cuda`; an option in the emu) */
    rb_sdpa_call call; /* the unpacked call (~8 KiB of sinks: not on the stack) */
    void *aux;         /* device scratch: parameter arrays, row flags, binary64 accumulators */
    size_t aux_bytes;
} cuda_ctx;

static const attnconf_option_info cuda_option_info[] = {
    {"device", "0", "CUDA device ordinal"},
    {"path", "auto",
     "kernels: auto (tensor cores for f16/bf16) | simt (f32 tiles for every dtype) | f64 (every "
     "row in binary64)"},
#ifdef CUDA_EMU
    {"device_memory", "off",
     "on: report the device capability (buffers from device_alloc, host memory here)"},
#endif
    {NULL, NULL, NULL},
};

static int cuda_open_with_options(void **ctx, const attnconf_option *options, size_t n_options,
                                  char *err, size_t errlen)
{
    char scratch[256];
    if (!err || errlen == 0) {
        err = scratch;
        errlen = sizeof scratch;
    }
    err[0] = '\0';
    if (!ctx)
        return ATTNCONF_EINVAL;
    *ctx = NULL;
    int ordinal = 0, device_memory = 1;
    cuda_path path = CUDA_PATH_AUTO;
#ifdef CUDA_EMU
    device_memory = 0;
#endif
    for (size_t i = 0; i < n_options; i++) {
        const char *k = options[i].key, *v = options[i].value ? options[i].value : "";
        if (strcmp(k, "device") == 0) {
            char *end;
            long d = strtol(v, &end, 10);
            if (!v[0] || *end || d < 0 || d > 1024) {
                snprintf(err, errlen, "device: '%s' is not a device ordinal (0..1024)", v);
                return ATTNCONF_EINVAL;
            }
            ordinal = (int)d;
        } else if (strcmp(k, "path") == 0) {
            if (strcmp(v, "auto") == 0)
                path = CUDA_PATH_AUTO;
            else if (strcmp(v, "simt") == 0)
                path = CUDA_PATH_SIMT;
            else if (strcmp(v, "f64") == 0)
                path = CUDA_PATH_F64;
            else {
                snprintf(err, errlen, "path: '%s' is not auto, simt or f64", v);
                return ATTNCONF_EINVAL;
            }
#ifdef CUDA_EMU
        } else if (strcmp(k, "device_memory") == 0) {
            if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
                snprintf(err, errlen, "device_memory: '%s' is not on or off", v);
                return ATTNCONF_EINVAL;
            }
            device_memory = strcmp(v, "on") == 0;
#endif
        } else {
            snprintf(err, errlen, "unknown option '%s'", k);
            return ATTNCONF_EINVAL;
        }
    }
    cudev_props props;
    int rc = cudev_open(ordinal, &props, err, errlen);
    if (rc != ATTNCONF_OK)
        return rc;
    cuda_ctx *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "cannot allocate the context");
        return ATTNCONF_ENOMEM;
    }
    c->props = props;
    c->ordinal = ordinal;
    c->path = path;
    c->device_memory = device_memory;
    *ctx = c;
    return ATTNCONF_OK;
}

static int cuda_open(void **ctx)
{
    return cuda_open_with_options(ctx, NULL, 0, NULL, 0);
}

static void cuda_close(void *vctx)
{
    cuda_ctx *c = vctx;
    if (!c)
        return;
    char err[8];
    (void)cudev_sync(err, sizeof err); /* nothing may still use aux */
    cudev_free(c->aux);
    free(c);
}

static uint64_t cuda_capabilities(void *vctx)
{
    const cuda_ctx *c = vctx;
    /* Everything sdpa and the reference's build_mask serve; no KV cache members. */
    uint64_t caps = ATTNCONF_CAP_F32 | ATTNCONF_CAP_F16 | ATTNCONF_CAP_BF16 |
                    ATTNCONF_CAP_MASK_BOOL | ATTNCONF_CAP_MASK_ADD | ATTNCONF_CAP_CAUSAL |
                    ATTNCONF_CAP_CAUSAL_OFFSET | ATTNCONF_CAP_GQA | ATTNCONF_CAP_DV_NE_D |
                    ATTNCONF_CAP_STRIDED | ATTNCONF_CAP_SCALE | ATTNCONF_CAP_MASK_BCAST |
                    ATTNCONF_CAP_BUILD_MASK | ATTNCONF_CAP_WINDOW | ATTNCONF_CAP_LENGTHS |
                    ATTNCONF_CAP_LEFT_PAD | ATTNCONF_CAP_SDPA_WINDOW | ATTNCONF_CAP_SDPA_LENGTHS |
                    ATTNCONF_CAP_SDPA_LEFT_PAD | ATTNCONF_CAP_STRIDE0 | ATTNCONF_CAP_KV_LEN |
                    ATTNCONF_CAP_SOFTCAP | ATTNCONF_CAP_ALIBI | ATTNCONF_CAP_SINKS |
                    ATTNCONF_CAP_CHUNK | ATTNCONF_CAP_SEGMENTS | ATTNCONF_CAP_BLOCKS |
                    ATTNCONF_CAP_MASK_CHUNK | ATTNCONF_CAP_MASK_SEGMENTS | ATTNCONF_CAP_MASK_BLOCKS;
    if (c && c->device_memory)
        caps |= ATTNCONF_CAP_DEVICE;
    return caps;
}

/* Elements a descriptor's strides reach: 1 + sum (extent - 1) * stride, 0 when empty.  The
 * descriptor passed attnref_tensor_check, so this stays within ATTNREF_MAX_NUMEL. */
static size_t span_elems(const attnref_tensor *t)
{
    size_t n = 1;
    for (int32_t d = 0; d < t->ndim; d++) {
        if (t->shape[d] == 0)
            return 0;
        n += (size_t)(t->shape[d] - 1) * (size_t)t->strides[d];
    }
    return n;
}

/* Grow the device scratch to `bytes`. */
static int aux_reserve(cuda_ctx *c, size_t bytes)
{
    if (bytes <= c->aux_bytes)
        return ATTNCONF_OK;
    char err[200];
    (void)cudev_sync(err, sizeof err);
    cudev_free(c->aux);
    c->aux = NULL;
    c->aux_bytes = 0;
    int rc = cudev_alloc(bytes, &c->aux, err, sizeof err);
    if (rc != ATTNCONF_OK)
        return rb_fail(&c->base, rc, "device scratch of %zu bytes: %s", bytes, err);
    c->aux_bytes = bytes;
    return ATTNCONF_OK;
}

static size_t align256(size_t x)
{
    return (x + 255) & ~(size_t)255;
}

/* The flash kernel's tiles (ck_params.bq .. ldp) for the dtype and head dims, the largest that
 * fit the device's shared memory; 0 when none does (then every row goes to binary64). */
static int plan_tiles(ck_params *p, int tc, size_t smem_max, size_t *smem)
{
    static const int plans[][2] = {{64, 64}, {32, 64}, {16, 64}, {16, 32}, {16, 16}};
    const int64_t rows = p->group * p->Lq;
    for (size_t k = 0; k < sizeof plans / sizeof plans[0]; k++) {
        int bq = plans[k][0];
        const int bk = plans[k][1];
        /* Few rows per kv head (decode): smaller row tiles waste less. */
        while (bq > 16 && rows <= bq / 2)
            bq /= 2;
        if (p->D > (1 << 20) || p->Dv > (1 << 20))
            return 0;
        p->bq = bq;
        p->bk = bk;
        p->tc = tc;
        if (tc) {
            p->dp = (int32_t)((p->D + 15) / 16 * 16);
            p->dvp = (int32_t)((p->Dv + 15) / 16 * 16);
            p->ldq = p->ldk = p->dp + 8; /* 16-byte skew: fewer bank conflicts, WMMA-legal */
            p->ldv = p->dvp + 8;
            p->ldo = p->dvp + 4;
            p->ldp = bk + 8;
        } else {
            p->dp = (int32_t)p->D;
            p->dvp = (int32_t)p->Dv;
            p->ldq = p->dp;
            p->ldk = p->dp + 1; /* threads of a warp read K rows: an odd pitch spreads banks */
            p->ldv = p->dvp;
            p->ldo = p->dvp;
            p->ldp = bk;
        }
        const size_t s = ck_layout(p).total;
        if (s <= smem_max) {
            *smem = s;
            return 1;
        }
    }
    return 0;
}

/* Host tensors (a host without the seventh revision) are copied to device buffers of their
 * span with the same strides; stage[] holds what was allocated. */
typedef struct cuda_stage {
    void *buf[5]; /* q, k, v, mask, out */
} cuda_stage;

static void stage_free(cuda_stage *st)
{
    for (int i = 0; i < 5; i++)
        cudev_free(st->buf[i]);
    memset(st, 0, sizeof *st);
}

/* Copy t's span (elem-byte elements) to a fresh device buffer in st->buf[slot]; t->data becomes
 * it.  Nothing to do for an empty tensor or one already on the device. */
static int stage_in(cuda_ctx *c, cuda_stage *st, int slot, attnref_tensor *t, size_t elem)
{
    const size_t n = span_elems(t);
    if (n == 0 || cudev_is_device(t->data))
        return ATTNCONF_OK;
    char err[200];
    int rc = cudev_alloc(n * elem, &st->buf[slot], err, sizeof err);
    if (rc == ATTNCONF_OK)
        rc = cudev_copy(st->buf[slot], t->data, n * elem, CUDEV_H2D, err, sizeof err);
    if (rc != ATTNCONF_OK)
        return rb_fail(&c->base, rc, "staging a host tensor on the device: %s", err);
    t->data = st->buf[slot];
    return ATTNCONF_OK;
}

/* The kernel arguments of a validated call. */
static void fill_params(const rb_sdpa_call *call, ck_params *p)
{
    const attnref_tensor *q = &call->q, *k = &call->k, *v = &call->v, *o = &call->out;
    memset(p, 0, sizeof *p);
    p->dtype = (int32_t)q->dtype;
    p->B = q->shape[0];
    p->Hq = q->shape[1];
    p->Lq = q->shape[2];
    p->D = q->shape[3];
    p->Hkv = k->shape[1];
    p->Lk = k->shape[2];
    p->Dv = v->shape[3];
    p->group = p->Hq / p->Hkv;
    for (int d = 0; d < 4; d++) {
        p->qs[d] = q->strides[d];
        p->ks[d] = k->strides[d];
        p->vs[d] = v->strides[d];
        p->os[d] = o->strides[d];
    }
    p->q = q->data;
    p->k = k->data;
    p->v = v->data;
    p->out = o->data;
    if (call->has_mask) {
        const attnref_tensor *m = &call->mask;
        p->mask = m->data;
        p->mask_kind = m->dtype == ATTNREF_BOOL ? 1 : 2;
        p->mask_dtype = (int32_t)m->dtype;
        /* Trailing axes aligned (NumPy broadcast); an extent of 1 broadcasts: stride 0. */
        for (int d = 0; d < 4; d++) {
            const int src = d - (4 - m->ndim);
            p->ms[d] = src >= 0 && m->shape[src] != 1 ? m->strides[src] : 0;
        }
    }
    const attnref_sdpa_params *a = &call->p;
    p->causal = a->causal;
    p->off = a->has_causal_offset ? a->causal_offset : p->Lk - p->Lq;
    p->scale_d = a->has_scale ? a->scale : 1.0 / sqrt((double)p->D);
    p->scale_f = (float)p->scale_d; /* |scale| <= FLT_MAX: validated */
    p->window = a->window;
    p->chunk = a->chunk;
    p->softcap = a->softcap;
    p->alibi_max_bias = a->alibi_max_bias;
}

static int cuda_sdpa(void *vctx, const attnconf_sdpa_args *args)
{
    cuda_ctx *c = vctx;
    if (!c)
        return ATTNCONF_EINVAL;
    rb_sdpa_call *cp = &c->call;
    int rc = rb_sdpa_unpack(&c->base, args, cp);
    if (rc != ATTNCONF_OK)
        return rc;
    const attnref_tensor *mask = cp->has_mask ? &cp->mask : NULL;
    attnref_diag diag = {{0}};
    const int st = attnref_sdpa_check(&cp->q, &cp->k, &cp->v, mask, &cp->p, &cp->out, &diag);
    if (st != ATTNREF_OK)
        return rb_finish(&c->base, st, &diag);
    args->out->dtype = (int32_t)cp->q.dtype;
    const int64_t rows = cp->q.shape[0] * cp->q.shape[1] * cp->q.shape[2];
    if (rows == 0 || cp->v.shape[3] == 0) {
        c->base.err[0] = '\0';
        return ATTNCONF_OK; /* an empty output */
    }

    /* Host memory from a host that does not use device_alloc: staged through device copies. */
    const size_t esz = attnref_dtype_size(cp->q.dtype);
    cuda_stage stg = {{0}};
    void *host_out = cp->out.data;
    const size_t out_span = span_elems(&cp->out) * esz;
    if ((rc = stage_in(c, &stg, 0, &cp->q, esz)) != ATTNCONF_OK ||
        (rc = stage_in(c, &stg, 1, &cp->k, esz)) != ATTNCONF_OK ||
        (rc = stage_in(c, &stg, 2, &cp->v, esz)) != ATTNCONF_OK ||
        (cp->has_mask && (rc = stage_in(c, &stg, 3, &cp->mask,
                                        attnref_dtype_size(cp->mask.dtype))) != ATTNCONF_OK) ||
        (rc = stage_in(c, &stg, 4, &cp->out, esz)) != ATTNCONF_OK) {
        stage_free(&stg);
        return rc;
    }

    ck_params p;
    fill_params(cp, &p);
    const attnref_sdpa_params *a = &cp->p;
    const int64_t B = p.B, Lk = p.Lk, Hq = p.Hq;

    /* Device scratch: the parameter arrays, the row flags and their count, binary64 sums. */
    const size_t n_len = a->lengths ? (size_t)B : 0, n_lp = a->left_padding ? (size_t)B : 0;
    const size_t n_seg = a->segment_ids ? (size_t)(B * Lk) : 0;
    const size_t n_blk = a->block_ids ? (size_t)(B * Lk) : 0;
    const size_t n_sink = a->sinks ? (size_t)Hq : 0;
    int64_t f64_blocks = rows < CUDA_F64_BLOCKS ? rows : CUDA_F64_BLOCKS;
    const size_t o_len = 0, o_lp = o_len + align256(n_len * 8), o_seg = o_lp + align256(n_lp * 8);
    const size_t o_blk = o_seg + align256(n_seg * 8), o_sink = o_blk + align256(n_blk * 8);
    const size_t o_cnt = o_sink + align256(n_sink * 4), o_redo = o_cnt + 256;
    const size_t o_f64 = o_redo + align256((size_t)rows);
    const size_t total = o_f64 + (size_t)f64_blocks * (size_t)p.Dv * 8;
    if ((rc = aux_reserve(c, total)) != ATTNCONF_OK) {
        stage_free(&stg);
        return rc;
    }
    unsigned char *aux = c->aux;
    char err[240] = "";
    /* One host image of the arrays (sinks narrowed back to the host's f32: exact). */
    unsigned char *img = malloc(o_cnt ? o_cnt : 1);
    if (!img) {
        stage_free(&stg);
        return rb_fail(&c->base, ATTNCONF_ENOMEM, "sdpa: cannot allocate %zu bytes", o_cnt);
    }
    if (n_len)
        memcpy(img + o_len, a->lengths, n_len * 8);
    if (n_lp)
        memcpy(img + o_lp, a->left_padding, n_lp * 8);
    if (n_seg)
        memcpy(img + o_seg, a->segment_ids, n_seg * 8);
    if (n_blk)
        memcpy(img + o_blk, a->block_ids, n_blk * 8);
    for (size_t h = 0; h < n_sink; h++) {
        const float s = (float)a->sinks[h];
        memcpy(img + o_sink + 4 * h, &s, 4);
    }
    rc = cudev_copy(aux, img, o_cnt, CUDEV_H2D, err, sizeof err);
    free(img);
    if (rc == ATTNCONF_OK)
        rc = cudev_memset(aux + o_cnt, 0, o_f64 - o_cnt, err, sizeof err);
    if (rc != ATTNCONF_OK) {
        stage_free(&stg);
        return rb_fail(&c->base, rc, "sdpa: %s", err);
    }
    p.lengths = n_len ? (const int64_t *)(aux + o_len) : NULL;
    p.left_padding = n_lp ? (const int64_t *)(aux + o_lp) : NULL;
    p.segment_ids = n_seg ? (const int64_t *)(aux + o_seg) : NULL;
    p.block_ids = n_blk ? (const int64_t *)(aux + o_blk) : NULL;
    p.sinks = n_sink ? (const float *)(aux + o_sink) : NULL;
    p.redo_count = (unsigned int *)(aux + o_cnt);
    p.redo = aux + o_redo;
    p.f64_scratch = (double *)(aux + o_f64);

    /* The plan: tensor cores for f16/bf16 unless path says otherwise; a softcap far from any
     * model's (outside [2^-100, 2^100]) or tiles too large for shared memory: binary64. */
    size_t smem = 0;
    const int tc = p.dtype != CK_F32 && c->path == CUDA_PATH_AUTO;
    p.f64_all = c->path == CUDA_PATH_F64 ||
                (p.softcap > 0.0 && !(p.softcap >= 0x1p-100 && p.softcap <= 0x1p100)) ||
                !plan_tiles(&p, tc, c->props.smem_optin, &smem);
    rc = cudev_launch(&p, p.f64_all ? 0 : ck_flash_items(&p), f64_blocks, smem, err, sizeof err);
    if (rc == ATTNCONF_OK && stg.buf[4]) {
        /* A staged output: wait, and copy the span back to the host. */
        rc = cudev_copy(host_out, stg.buf[4], out_span, CUDEV_D2H, err, sizeof err);
    }
    if (rc == ATTNCONF_OK && (stg.buf[0] || stg.buf[1] || stg.buf[2] || stg.buf[3] || stg.buf[4]))
        rc = cudev_sync(err, sizeof err); /* staging buffers are freed below */
    stage_free(&stg);
    if (rc != ATTNCONF_OK)
        return rb_fail(&c->base, rc, "sdpa: %s", err);
    c->base.err[0] = '\0';
    return ATTNCONF_OK;
}

static int cuda_build_mask(void *vctx, const attnconf_mask_args *args)
{
    cuda_ctx *c = vctx;
    if (!c)
        return ATTNCONF_EINVAL;
    attnref_mask_params p;
    attnref_tensor keep;
    int rc = rb_mask_unpack(&c->base, args, &p, &keep);
    if (rc != ATTNCONF_OK)
        return rc;
    attnref_diag diag = {{0}};
    void *dev = NULL;
    size_t bytes = 0;
    if (keep.data && !c->props.emulated && cudev_is_device(keep.data)) {
        /* A keep tensor in device memory: build it on the host, then copy it over. */
        int64_t n = attnref_tensor_numel(&keep);
        if (n < 0 || n > ATTNREF_MAX_NUMEL)
            return rb_fail(&c->base, ATTNCONF_EINVAL, "keep: bad shape");
        bytes = span_elems(&keep);
        dev = keep.data;
        keep.data = calloc(bytes ? bytes : 1, 1);
        if (!keep.data)
            return rb_fail(&c->base, ATTNCONF_ENOMEM, "keep: cannot allocate %zu bytes", bytes);
    }
    rc = rb_finish(&c->base, attnref_build_mask(&p, &keep, &diag), &diag);
    if (dev) {
        char err[200];
        if (rc == ATTNCONF_OK) {
            rc = cudev_copy(dev, keep.data, bytes, CUDEV_H2D, err, sizeof err);
            if (rc != ATTNCONF_OK)
                rc = rb_fail(&c->base, rc, "keep: %s", err);
        }
        free(keep.data);
    }
    return rc;
}

static const char *cuda_last_error(void *vctx)
{
    cuda_ctx *c = vctx;
    return c ? c->base.err : "";
}

/* ---- seventh revision: device memory ---- */

static int cuda_device_info(void *vctx, attnconf_device_info *info)
{
    cuda_ctx *c = vctx;
    if (!c || !info || info->struct_size < offsetof(attnconf_device_info, name))
        return c ? rb_fail(&c->base, ATTNCONF_EINVAL, "device_info: bad info struct")
                 : ATTNCONF_EINVAL;
    attnconf_device_info d;
    memset(&d, 0, sizeof d);
    d.struct_size = info->struct_size;
    d.device_type = c->props.emulated ? ATTNCONF_DEVICE_CPU : ATTNCONF_DEVICE_CUDA;
    d.device_id = c->ordinal;
    snprintf(d.name, sizeof d.name, "%s", c->props.name);
    d.memory_bytes = c->props.memory;
    const size_t n = info->struct_size < sizeof d ? info->struct_size : sizeof d;
    memcpy(info, &d, n);
    return ATTNCONF_OK;
}

static int cuda_device_alloc(void *vctx, size_t bytes, void **handle)
{
    cuda_ctx *c = vctx;
    if (!c || !handle)
        return ATTNCONF_EINVAL;
    *handle = NULL;
    if (bytes == 0)
        return rb_fail(&c->base, ATTNCONF_EINVAL, "device_alloc: 0 bytes");
    char err[200];
    int rc = cudev_alloc(bytes, handle, err, sizeof err);
    return rc == ATTNCONF_OK ? ATTNCONF_OK : rb_fail(&c->base, rc, "device_alloc: %s", err);
}

static void cuda_device_free(void *vctx, void *handle)
{
    (void)vctx;
    cudev_free(handle);
}

static int cuda_copy_to_device(void *vctx, void *handle, size_t offset, const void *src,
                               size_t bytes)
{
    cuda_ctx *c = vctx;
    if (!c || !handle || (!src && bytes))
        return ATTNCONF_EINVAL;
    char err[200];
    int rc = cudev_copy((char *)handle + offset, src, bytes, CUDEV_H2D, err, sizeof err);
    return rc == ATTNCONF_OK ? ATTNCONF_OK : rb_fail(&c->base, rc, "copy_to_device: %s", err);
}

static int cuda_copy_from_device(void *vctx, void *dst, const void *handle, size_t offset,
                                 size_t bytes)
{
    cuda_ctx *c = vctx;
    if (!c || !handle || (!dst && bytes))
        return ATTNCONF_EINVAL;
    char err[200];
    int rc = cudev_copy(dst, (const char *)handle + offset, bytes, CUDEV_D2H, err, sizeof err);
    return rc == ATTNCONF_OK ? ATTNCONF_OK : rb_fail(&c->base, rc, "copy_from_device: %s", err);
}

static int cuda_synchronize(void *vctx)
{
    cuda_ctx *c = vctx;
    if (!c)
        return ATTNCONF_EINVAL;
    char err[200];
    int rc = cudev_sync(err, sizeof err);
    return rc == ATTNCONF_OK ? ATTNCONF_OK : rb_fail(&c->base, rc, "synchronize: %s", err);
}

static const attnconf_backend cuda_table = {
    .abi_version = ATTNCONF_ABI_VERSION,
    .struct_size = sizeof(attnconf_backend),
    .name = CUDA_NAME,
    .version = CUDA_VERSION_TEXT,
    .open = cuda_open,
    .close = cuda_close,
    .capabilities = cuda_capabilities,
    .sdpa = cuda_sdpa,
    .build_mask = cuda_build_mask,
    .last_error = cuda_last_error,
    .options = cuda_option_info,
    .open_with_options = cuda_open_with_options,
    .device_info = cuda_device_info,
    .device_alloc = cuda_device_alloc,
    .device_free = cuda_device_free,
    .copy_to_device = cuda_copy_to_device,
    .copy_from_device = cuda_copy_from_device,
    .synchronize = cuda_synchronize,
};

/* The plugin entry point (the only exported symbol). */
__attribute__((visibility("default"))) const attnconf_backend *
attnconf_backend_entry(uint32_t host_abi_version)
{
    if (host_abi_version != ATTNCONF_ABI_VERSION)
        return NULL;
    return &cuda_table;
}
