/* mlx_backend.cpp — MLX (ml-explore/mlx) as attnconf plugins (ABI v1), validated in process.
 *
 * One source, built twice (conformance/backends/mlx/CMakeLists.txt):
 *
 *   mlx      (ATTNCONF_MLX_OPS=0)  calls mlx::core::fast::scaled_dot_product_attention exactly as
 *            the Python binding mx.fast.scaled_dot_product_attention does: mask_mode "" (none or
 *            an array mask passed as mask_arr) or "causal"; the scale as a float; GQA by head
 *            counts (K/V are never tiled).  MLX validates everything itself (ranks, shapes, GQA
 *            multiple, q/k/v dtypes, the additive-mask dtype rule); this shim adds no check of
 *            its own on top, so what is tested is MLX's own acceptance and rejection.
 *   mlx-ops  (ATTNCONF_MLX_OPS=1)  the same inputs computed from MLX primitives, as model code
 *            without the fused op does.  It follows MLX's own primitive reference in its test
 *            suite, `mlx_primitives_sdpa` / `mlx_primitives_sdpa_with_gqa` in
 *            python/tests/test_fast_sdpa.py (mlx 0.32.x), step by step:
 *              - GQA: K and V repeated over the head axis (mx.repeat(k, Hq // Hkv, axis=1),
 *                the same interleave as the test's concatenate+reshape);
 *              - scores = (q * scale) @ k^T in the input dtype; the Python float scale is a weak
 *                scalar there, so here it is an MLX scalar of q's dtype (bf16 rounds it);
 *              - bool mask: where(mask, scores, finfo(float32).min) with the minimum as a weak
 *                scalar, i.e. converted to the scores dtype (-inf in f16/bf16 after rounding);
 *              - additive mask: scores + mask, with MLX's ordinary type promotion;
 *              - softmax(scores.astype(float32), axis=-1).astype(scores.dtype) @ v.
 *            Differences from that reference: causal uses offset Lk - Lq (bottom-right, as MLX
 *            documents for the fused op and as its own C++ fallback in mlx/fast.cpp does), while
 *            the test helper clamps the offset with max(0, Lk - Lq), which differs only when
 *            Lq > Lk; and a causal flag together with an array mask, which the reference's single
 *            `mask` argument cannot take, is rejected with EINVAL (the fused op rejects it too).
 *            No other check is added: dtype behaviour is whatever the ops do.
 *
 * Inputs: host buffers are copied into MLX arrays; f16/bf16 as uint16 bit patterns, then
 * mlx::core::view to float16/bfloat16 (bit-exact); bool masks (bytes 0..255, nonzero = attend)
 * as uint8 then not_equal(u8, 0).  An additive mask keeps the case's dtype: MLX's own dtype rule
 * must see it.  Strided inputs become real MLX views: an array of the dense permuted shape, then
 * transpose (and broadcast_to for stride-0 axes), so MLX sees non-contiguous inputs.
 * Default scale (no explicit scale): 1.0f / std::sqrt((float)D), D = q.shape[3], computed in
 * float exactly as MLX users write it (the docstring: "typically 1.0 / sqrt(q.shape(-1))").
 * Output: eval, copy out row-contiguous, out->dtype = the dtype MLX produced (an upcast is
 * reported, never cast back).
 * Sinks (SPEC clause 22, mlx only): the fused op's `sinks` argument, shape (Hq,), in q's dtype
 * as mlx-lm's gpt-oss holds them (MLX rejects sinks that do not promote to the output type);
 * an f32 sink that is not exactly a value of q's dtype is ENOTSUP.  mlx-ops does not report
 * them: its reference, mlx_primitives_sdpa, has no sinks.  MLX has no softcap, ALiBi, chunk,
 * document or block argument: those terms are not reported (not emulated through masks).
 * Not expressible through MLX's API (answered ATTNCONF_ENOTSUP without calling MLX): an
 * explicit causal offset; there is no mask builder.
 * Error mapping: "Mask type must promote…" and "Received unsupported type…" → EDTYPE; any other
 * std::invalid_argument → EINVAL; std::bad_alloc → ENOMEM; anything else → EBACKEND; the text is
 * MLX's message on one line.
 * Option `device`: cpu (default) or gpu (MLX's GPU stream: Metal, or CUDA with mlx-cuda).
 *
 * Only attnconf_backend_entry is exported (hidden visibility plus a version script).
 */
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <mlx/mlx.h>

#include "attnconf/backend.h"

namespace mx = mlx::core;

#ifndef ATTNCONF_MLX_OPS
#define ATTNCONF_MLX_OPS 0
#endif

#if ATTNCONF_MLX_OPS
#define MB_NAME "mlx-ops"
#else
#define MB_NAME "mlx"
#endif

namespace {

struct MbCtx {
    mx::Device device{mx::Device::cpu};
    char err[512] = {0};
};

/* Copy a message into buf on one line (newlines and tabs become spaces). */
void mb_one_line(char *buf, size_t n, const char *msg)
{
    if (n == 0)
        return;
    size_t i = 0;
    for (; msg && msg[i] && i + 1 < n; i++)
        buf[i] = (msg[i] == '\n' || msg[i] == '\r' || msg[i] == '\t') ? ' ' : msg[i];
    buf[i] = '\0';
}

__attribute__((format(printf, 3, 4))) int mb_fail(MbCtx *ctx, int code, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    mb_one_line(ctx->err, sizeof ctx->err, tmp);
    return code;
}

/* Raised by the shim for a descriptor it cannot hand to MLX at all (not an MLX check). */
struct MbError {
    int code;
    std::string msg;
};

size_t mb_elem_size(int32_t dtype)
{
    switch (dtype) {
    case ATTNCONF_F32: return 4;
    case ATTNCONF_F16:
    case ATTNCONF_BF16: return 2;
    case ATTNCONF_BOOL: return 1;
    default: return 0;
    }
}

/* Build a dense MLX array of `shape` from `n` elements at `data`, in the case's dtype. */
mx::array mb_dense(const void *data, mx::Shape shape, int32_t dtype, mx::StreamOrDevice s)
{
    switch (dtype) {
    case ATTNCONF_F32:
        return mx::array(static_cast<const float *>(data), std::move(shape), mx::float32);
    case ATTNCONF_F16:
        return mx::view(
            mx::array(static_cast<const uint16_t *>(data), std::move(shape), mx::uint16),
            mx::float16, s);
    case ATTNCONF_BF16:
        return mx::view(
            mx::array(static_cast<const uint16_t *>(data), std::move(shape), mx::uint16),
            mx::bfloat16, s);
    case ATTNCONF_BOOL:
        return mx::not_equal(
            mx::array(static_cast<const uint8_t *>(data), std::move(shape), mx::uint8),
            mx::array(0, mx::uint8), s);
    default: throw MbError{ATTNCONF_EDTYPE, "unknown attnconf dtype code " + std::to_string(dtype)};
    }
}

mx::Dtype mb_mlx_dtype(int32_t dtype)
{
    switch (dtype) {
    case ATTNCONF_F32: return mx::float32;
    case ATTNCONF_F16: return mx::float16;
    case ATTNCONF_BF16: return mx::bfloat16;
    default: return mx::bool_;
    }
}

/* A host tensor as an MLX array of the same logical shape.  A layout whose non-broadcast axes
 * are a permutation of a dense row-major buffer (what the harness passes) becomes that dense
 * array then transpose (then broadcast_to for stride-0 axes): a real non-contiguous MLX view.
 * Any other layout (gaps, overlaps) is gathered on the host into a contiguous array. */
mx::array mb_from_host(const attnconf_tensor *t, const char *what, mx::StreamOrDevice s)
{
    if (t->ndim < 0 || t->ndim > ATTNCONF_MAX_RANK)
        throw MbError{ATTNCONF_EINVAL, std::string(what) + ": ndim " + std::to_string(t->ndim) +
                                           " is outside 0..4"};
    size_t es = mb_elem_size(t->dtype);
    if (es == 0)
        throw MbError{ATTNCONF_EDTYPE,
                      std::string(what) + ": unknown attnconf dtype code " + std::to_string(t->dtype)};
    const int nd = t->ndim;
    mx::Shape shape;
    int64_t numel = 1;
    for (int d = 0; d < nd; d++) {
        if (t->shape[d] < 0 || t->shape[d] > INT32_MAX || t->strides[d] < 0)
            throw MbError{ATTNCONF_EINVAL, std::string(what) + ": negative or too large extent/stride"};
        shape.push_back(static_cast<int>(t->shape[d]));
        numel *= t->shape[d];
    }
    if (numel == 0)
        return mx::zeros(shape, mb_mlx_dtype(t->dtype), s);
    if (!t->data)
        throw MbError{ATTNCONF_EINVAL, std::string(what) + ": data is NULL"};

    /* Real axes: extent > 1 and stride > 0, ordered by decreasing stride. */
    std::vector<int> real;
    bool bcast = false;
    for (int d = 0; d < nd; d++) {
        if (t->shape[d] > 1 && t->strides[d] > 0)
            real.push_back(d);
        else if (t->shape[d] > 1)
            bcast = true;
    }
    std::stable_sort(real.begin(), real.end(),
                     [t](int a, int b) { return t->strides[a] > t->strides[b]; });
    bool dense = true;
    int64_t expect = 1;
    for (size_t i = real.size(); i-- > 0;) {
        if (t->strides[real[i]] != expect) {
            dense = false;
            break;
        }
        expect *= t->shape[real[i]];
    }

    if (!dense) {
        /* Gather on the host (the harness never sends this; kept for other hosts). */
        std::vector<unsigned char> buf(static_cast<size_t>(numel) * es);
        std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
        for (int64_t e = 0; e < numel; e++) {
            int64_t off = 0;
            for (int d = 0; d < nd; d++)
                off += idx[static_cast<size_t>(d)] * t->strides[d];
            std::memcpy(&buf[static_cast<size_t>(e) * es],
                        static_cast<const unsigned char *>(t->data) + static_cast<size_t>(off) * es,
                        es);
            for (int d = nd - 1; d >= 0; d--) {
                if (++idx[static_cast<size_t>(d)] < t->shape[d])
                    break;
                idx[static_cast<size_t>(d)] = 0;
            }
        }
        return mb_dense(buf.data(), shape, t->dtype, s);
    }

    /* Dense buffer axes: the real axes by decreasing stride, then every other axis as extent 1
     * (size-1 axes do not change the layout). */
    std::vector<int> order = real;
    for (int d = 0; d < nd; d++)
        if (std::find(real.begin(), real.end(), d) == real.end())
            order.push_back(d);
    mx::Shape buf_shape;
    std::vector<int> axes(static_cast<size_t>(nd));
    bool identity = true;
    for (int i = 0; i < nd; i++) {
        int d = order[static_cast<size_t>(i)];
        bool is_real = i < static_cast<int>(real.size());
        buf_shape.push_back(is_real ? static_cast<int>(t->shape[d]) : 1);
        axes[static_cast<size_t>(d)] = i;
        if (d != i)
            identity = false;
    }
    mx::array a = mb_dense(t->data, buf_shape, t->dtype, s);
    if (!identity)
        a = mx::transpose(a, axes, s);
    if (bcast)
        a = mx::broadcast_to(a, shape, s);
    return a;
}

#if ATTNCONF_MLX_OPS
/* The primitive reference (see the file comment). */
mx::array mb_compute(const mx::array &q_in, const mx::array &k_in, const mx::array &v_in,
                     const std::optional<mx::array> &mask, bool causal, float scale,
                     const std::optional<mx::array> &, mx::StreamOrDevice s)
{
    if (causal && mask)
        throw std::invalid_argument("[mlx-ops] a causal flag and an array mask together: the "
                                    "primitive reference takes one mask argument");
    mx::array q = q_in, k = k_in, v = v_in;
    int n_q_heads = q.ndim() >= 3 ? q.shape(-3) : 1;
    int n_kv_heads = k.ndim() >= 3 ? k.shape(-3) : 1;
    int n_repeats = n_kv_heads > 0 ? n_q_heads / n_kv_heads : 1;
    if (n_repeats > 1) {
        k = mx::repeat(k, n_repeats, 1, s);
        v = mx::repeat(v, n_repeats, 1, s);
    }
    mx::array p = mx::matmul(mx::multiply(q, mx::array(scale, q.dtype()), s),
                             mx::transpose(k, {0, 1, 3, 2}, s), s);
    if (causal) {
        int lq = q.shape(2), lk = k.shape(2);
        int offset = lk - lq; /* bottom-right; the test helper uses max(0, lk - lq) */
        mx::array qi = mx::expand_dims(mx::arange(offset, offset + lq, s), 1, s);
        mx::array ki = mx::expand_dims(mx::arange(0, lk, s), 0, s);
        p = mx::where(mx::greater_equal(qi, ki, s), p,
                      mx::array(mx::finfo(mx::float32).min, p.dtype()), s);
    } else if (mask) {
        if (mask->dtype() == mx::bool_)
            p = mx::where(*mask, p, mx::array(mx::finfo(mx::float32).min, p.dtype()), s);
        else
            p = mx::add(p, *mask, s);
    }
    mx::array scores =
        mx::astype(mx::softmax(mx::astype(p, mx::float32, s), std::vector<int>{-1}, false, s),
                   p.dtype(), s);
    return mx::matmul(scores, v, s);
}
#else
/* The fused op, called as mx.fast.scaled_dot_product_attention does. */
mx::array mb_compute(const mx::array &q, const mx::array &k, const mx::array &v,
                     const std::optional<mx::array> &mask, bool causal, float scale,
                     const std::optional<mx::array> &sinks, mx::StreamOrDevice s)
{
    return mx::fast::scaled_dot_product_attention(q, k, v, scale, causal ? "causal" : "", mask,
                                                  sinks, false, s);
}
#endif

int mb_from_mlx_dtype(mx::Dtype d)
{
    if (d == mx::float32)
        return ATTNCONF_F32;
    if (d == mx::float16)
        return ATTNCONF_F16;
    if (d == mx::bfloat16)
        return ATTNCONF_BF16;
    return 0;
}

int mb_open_device(void **ctx, mx::Device::DeviceType type, char *err, size_t errlen)
{
    if (!ctx)
        return ATTNCONF_EINVAL;
    try {
        mx::Device dev(type);
        if (type == mx::Device::gpu && !mx::is_available(dev)) {
            if (err && errlen)
                mb_one_line(err, errlen,
                            "device=gpu: this MLX build has no GPU available (Metal on Apple "
                            "silicon, CUDA with the mlx-cuda package); use device=cpu");
            return ATTNCONF_ENOTSUP;
        }
        MbCtx *c = new (std::nothrow) MbCtx;
        if (!c)
            return ATTNCONF_ENOMEM;
        c->device = dev;
        *ctx = c;
        return ATTNCONF_OK;
    } catch (const std::exception &e) {
        if (err && errlen)
            mb_one_line(err, errlen, e.what());
        return ATTNCONF_EBACKEND;
    }
}

int mb_open(void **ctx)
{
    return mb_open_device(ctx, mx::Device::cpu, nullptr, 0);
}

int mb_open_with_options(void **ctx, const attnconf_option *options, size_t n_options, char *err,
                         size_t errlen)
{
    mx::Device::DeviceType type = mx::Device::cpu;
    for (size_t i = 0; i < n_options; i++) {
        const char *key = options[i].key ? options[i].key : "";
        const char *val = options[i].value ? options[i].value : "";
        if (std::strcmp(key, "device") == 0) {
            if (std::strcmp(val, "cpu") == 0) {
                type = mx::Device::cpu;
            } else if (std::strcmp(val, "gpu") == 0) {
                type = mx::Device::gpu;
            } else {
                if (err && errlen)
                    snprintf(err, errlen, "device=%.64s: accepted values are cpu and gpu", val);
                return ATTNCONF_EINVAL;
            }
        } else {
            if (err && errlen)
                snprintf(err, errlen, "unknown option %.64s", key);
            return ATTNCONF_EINVAL;
        }
    }
    return mb_open_device(ctx, type, err, errlen);
}

void mb_close(void *ctx)
{
    delete static_cast<MbCtx *>(ctx);
}

uint64_t mb_capabilities(void *)
{
    return ATTNCONF_CAP_F32 | ATTNCONF_CAP_F16 | ATTNCONF_CAP_BF16 | ATTNCONF_CAP_MASK_BOOL |
           ATTNCONF_CAP_MASK_ADD | ATTNCONF_CAP_CAUSAL | ATTNCONF_CAP_GQA |
           ATTNCONF_CAP_DV_NE_D | ATTNCONF_CAP_STRIDED | ATTNCONF_CAP_SCALE |
           ATTNCONF_CAP_MASK_BCAST
#if !ATTNCONF_MLX_OPS
           /* The fused op's `sinks`; mlx-ops's reference (mlx_primitives_sdpa) has none. */
           | ATTNCONF_CAP_SINKS
#endif
        ;
}

int mb_sdpa_impl(MbCtx *ctx, const attnconf_sdpa_args *args)
{
    if (args->has_causal_offset)
        return mb_fail(ctx, ATTNCONF_ENOTSUP,
                       "sdpa: an explicit causal offset is not expressible through MLX's API "
                       "(mask \"causal\" is always bottom-right)");
    mx::StreamOrDevice s = ctx->device;
    mx::array q = mb_from_host(args->q, "q", s);
    mx::array k = mb_from_host(args->k, "k", s);
    mx::array v = mb_from_host(args->v, "v", s);
    std::optional<mx::array> mask;
    if (args->mask)
        mask = mb_from_host(args->mask, "mask", s);
    /* As mlx-lm's gpt-oss passes them: a (Hq,) parameter in the model's dtype (its weights are
     * loaded in q's dtype), since MLX rejects sinks whose type does not promote to the output's
     * ("Type of sinks must promote to output type").  The ABI's f32 values go to q's dtype only
     * when they convert exactly (else ENOTSUP); MLX checks the shape itself. */
    std::optional<mx::array> sinks;
    if (args->sinks) {
        const int hq = q.ndim() == 4 ? q.shape(1) : 0;
        mx::array s32(args->sinks, mx::Shape{hq}, mx::float32);
        mx::Dtype dt = mb_mlx_dtype(args->q->dtype);
        if (dt == mx::float16 || dt == mx::bfloat16) {
            mx::array sd = mx::astype(s32, dt, s);
            mx::array back = mx::astype(sd, mx::float32, s);
            mx::eval(back);
            const float *bv = back.data<float>();
            for (int h = 0; h < hq; h++)
                if (!(bv[h] == args->sinks[h] || (std::isnan(bv[h]) && std::isnan(args->sinks[h]))))
                    return mb_fail(ctx, ATTNCONF_ENOTSUP,
                                   "sink %d = %.9g is not a %s value (it would become %.9g): MLX "
                                   "takes sinks in a type that promotes to the output's",
                                   h, (double)args->sinks[h],
                                   dt == mx::float16 ? "float16" : "bfloat16", (double)bv[h]);
            sinks = sd;
        } else {
            sinks = s32;
        }
    }

    float scale;
    if (args->has_scale) {
        scale = static_cast<float>(args->scale);
    } else {
        /* As MLX users write it: 1.0f / std::sqrt((float)D), D = q's last extent. */
        int D = q.ndim() > 0 ? q.shape(-1) : 1;
        scale = 1.0f / std::sqrt(static_cast<float>(D));
    }

    mx::array out = mb_compute(q, k, v, mask, args->causal != 0, scale, sinks, s);
    out = mx::contiguous(out, false, s);
    mx::eval(out);

    int dt = mb_from_mlx_dtype(out.dtype());
    if (dt == 0) {
        std::ostringstream m;
        m << "sdpa: MLX produced dtype " << out.dtype() << ", which the ABI cannot carry";
        return mb_fail(ctx, ATTNCONF_EBACKEND, "%s", m.str().c_str());
    }
    attnconf_tensor *o = args->out;
    bool same = static_cast<int>(out.ndim()) == o->ndim;
    for (int d = 0; same && d < o->ndim; d++)
        same = out.shape(d) == o->shape[d];
    if (!same) {
        std::string shp;
        for (size_t d = 0; d < out.ndim(); d++) {
            if (d)
                shp += ',';
            shp += std::to_string(out.shape(static_cast<int>(d)));
        }
        return mb_fail(ctx, ATTNCONF_EBACKEND, "sdpa: MLX produced shape (%s), not the output shape",
                       shp.c_str());
    }
    size_t nbytes = out.nbytes();
    if (nbytes > args->out_capacity)
        return mb_fail(ctx, ATTNCONF_EINVAL, "out: out_capacity %zu < %zu bytes MLX produced",
                       args->out_capacity, nbytes);
    if (!out.flags().row_contiguous)
        return mb_fail(ctx, ATTNCONF_EBACKEND, "sdpa: MLX output is not row-contiguous");
    if (nbytes > 0) {
        if (!o->data)
            return mb_fail(ctx, ATTNCONF_EINVAL, "out: data is NULL");
        std::memcpy(o->data, out.data<unsigned char>(), nbytes);
    }
    o->dtype = dt;
    int64_t st = 1;
    for (int d = o->ndim - 1; d >= 0; d--) {
        o->strides[d] = st;
        st *= o->shape[d] > 0 ? o->shape[d] : 1;
    }
    ctx->err[0] = '\0';
    return ATTNCONF_OK;
}

int mb_sdpa(void *vctx, const attnconf_sdpa_args *args)
{
    MbCtx *ctx = static_cast<MbCtx *>(vctx);
    if (!ctx)
        return ATTNCONF_EINVAL;
    if (!args)
        return mb_fail(ctx, ATTNCONF_EINVAL, "sdpa: args is NULL");
    if (args->struct_size < sizeof(attnconf_sdpa_args))
        return mb_fail(ctx, ATTNCONF_EINVAL,
                       "sdpa: args.struct_size is smaller than the ABI v1 struct");
    if (!args->q || !args->k || !args->v || !args->out)
        return mb_fail(ctx, ATTNCONF_EINVAL, "sdpa: %s is NULL",
                       !args->q ? "q" : !args->k ? "k" : !args->v ? "v" : "out");
    try {
        return mb_sdpa_impl(ctx, args);
    } catch (const MbError &e) {
        return mb_fail(ctx, e.code, "%s", e.msg.c_str());
    } catch (const std::invalid_argument &e) {
        const char *w = e.what();
        bool dtype = std::strstr(w, "Mask type must promote") ||
                     std::strstr(w, "unsupported type") || std::strstr(w, "Unsupported type");
        return mb_fail(ctx, dtype ? ATTNCONF_EDTYPE : ATTNCONF_EINVAL, "%s", w);
    } catch (const std::bad_alloc &e) {
        return mb_fail(ctx, ATTNCONF_ENOMEM, "%s", e.what());
    } catch (const std::exception &e) {
        return mb_fail(ctx, ATTNCONF_EBACKEND, "%s", e.what());
    } catch (...) {
        return mb_fail(ctx, ATTNCONF_EBACKEND, "sdpa: unknown exception from MLX");
    }
}

const char *mb_last_error(void *vctx)
{
    MbCtx *ctx = static_cast<MbCtx *>(vctx);
    return ctx ? ctx->err : "";
}

const attnconf_option_info mb_options[] = {
    {"device", "cpu",
     "MLX device: cpu (default) or gpu (Metal on Apple silicon, CUDA with mlx-cuda); gpu "
     "without one = not supported"},
    {nullptr, nullptr, nullptr},
};

/* The table, filled once at the first entry call: its version names the libmlx actually
 * loaded (mlx::core::version()), which may differ from the headers built against.  The device
 * is per context, so it is not in the version string. */
const attnconf_backend *mb_table()
{
    static const std::string version = std::string("mlx ") + mx::version();
    static const attnconf_backend table = [] {
        attnconf_backend t;
        std::memset(&t, 0, sizeof t);
        t.abi_version = ATTNCONF_ABI_VERSION;
        t.struct_size = sizeof(attnconf_backend);
        t.name = MB_NAME;
        t.version = version.c_str();
        t.open = mb_open;
        t.close = mb_close;
        t.capabilities = mb_capabilities;
        t.sdpa = mb_sdpa;
        t.build_mask = nullptr;
        t.last_error = mb_last_error;
        t.options = mb_options;
        t.open_with_options = mb_open_with_options;
        return t;
    }();
    return &table;
}

} // namespace

/* The plugin entry point (the only exported symbol). */
extern "C" __attribute__((visibility("default"))) const attnconf_backend *
attnconf_backend_entry(uint32_t host_abi_version)
{
    if (host_abi_version != ATTNCONF_ABI_VERSION)
        return nullptr;
    try {
        return mb_table();
    } catch (...) {
        return nullptr;
    }
}
