"""attnconf repro writer for the ggml plugins (conformance/backends/ggml/ggml_backend.c).

A C plugin cannot answer the exec protocol's repro request (PROTOCOL.md "repro"), so this
program answers it for the plugins `ggml` and `ggml-ops` (the request's "backend" member says
which): it speaks hello + repro over attnconf_exec and writes a C file that builds against
libggml alone (the libggml-python package: headers, libggml, libggml-base, libggml-cpu) and
poses the case to ggml exactly as the plugin does.  The build command is in the file's header
comment.  It needs no ggml itself: only the text is written (numpy, for the embedded inputs).

What mirrors what in ggml_backend.c:
  refusals()      gb_sdpa's and gb_mask's checks, in their order: a case the plugin refuses
                  before calling ggml (what ggml would abort on, or a value ggml cannot take
                  unchanged) is answered with the plugin's status and reason: there is no ggml
                  call to reproduce;
  leaf()          gb_leaf: ne = {D, L, H, B} over the host buffer with byte strides when ggml
                  takes the view, else a packed copy (q always widened to F32);
  make_mask()     gb_mask: the one additive mask (bool -> 0 / -INFINITY, causal -> j <=
                  offset + i), F16 for ggml_flash_attn_ext, F32 for ggml_soft_max_ext,
                  extents 1 on the query / key axes expanded, heads and batch as given;
  the graph       gb_sdpa: ggml_flash_attn_ext(q, k, v, mask, scale, 0, 0) with
                  ggml_flash_attn_ext_set_prec (ggml), or mul_mat / soft_max_ext / mul_mat of
                  cont(transpose(v)) / cont(permute(0, 2, 1, 3)) (ggml-ops); the options
                  threads, prec and kernels (ggml_cplan.use_ref) as the plugin takes them;
  the scale       1.0f / sqrtf((float)D), or the explicit scale (a float value);
  the output      F32 [Dv, Hq, Lq, B], read back into (B, Hq, Lq, Dv).

Run by `attnconf repro --backend ggml ...` (conformance/repro/writers.tsv), or directly:
    attnconf repro --backend ggml --writer 'exec:python3 conformance/repro/ggml_repro.py' --case ID
"""

import importlib.util
import os
import sys
import textwrap

sys.dont_write_bytecode = True  # the checkout's modules are imported, never cached in it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "adapters"))
import attnconf_exec as ax  # noqa: E402  first: it protects the protocol channel
import attnconf_repro as repro_text  # noqa: E402

import numpy as np  # noqa: E402

PLUGINS = ("ggml", "ggml-ops")
DTYPE_CODE = {"f32": 1, "f16": 2, "bf16": 3, "bool": 4}  # this file's codes, not the ABI's
MAX_THREADS = 512  # GGML_MAX_N_THREADS


def values(t) -> np.ndarray:
    """A request tensor's values as float64 (bf16 from its bit patterns)."""
    a = np.asarray(t.array)
    if t.dtype == "bf16":
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float64)


def refusals(req: ax.SdpaRequest, ops: bool):
    """(status, reason) of a case the plugin refuses before building a ggml graph (gb_sdpa's
    and gb_mask's checks, in their order), or None: ggml is called."""
    q, k, v, m = req.q, req.k, req.v, req.mask
    for name, t in (("q", q), ("k", k), ("v", v)):  # gb_check_desc(exact4)
        if len(t.shape) != 4:
            return ax.EINVAL, f"{name}: rank {len(t.shape)} (q, k, v and out are (B, H, L, D))"
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype not in ("f32", "f16", "bf16"):
            return ax.EDTYPE, f"{name}: dtype {t.dtype} has no ggml float type"
    B, Hq, Lq, D = q.shape
    Hkv, Lk = k.shape[1], k.shape[2]
    if k.shape[3] != D:
        return ax.EINVAL, (f"k head dim {k.shape[3]} != q head dim {D}: ggml would abort on "
                           "GGML_ASSERT(ggml_can_mul_mat(k, q))")
    if Hkv == 0 or Hq % Hkv:
        return ax.EINVAL, (f"Hq = {Hq} is not a multiple of Hkv = {Hkv}: ggml would abort on "
                           "GGML_ASSERT(ggml_can_mul_mat(k, q))")
    if k.shape[0] != B or v.shape[0] != B:
        return ax.EINVAL, "batch of q, k, v differ: ggml would abort on GGML_ASSERT"
    if v.shape[1] != Hkv or v.shape[2] != Lk:
        return ax.EINVAL, "v does not match k: ggml_flash_attn_ext would read past it"
    if ops and Lk == 0:
        return ax.ENOTSUP, "Lk = 0: ggml_mul_mat would abort on GGML_ASSERT(!ggml_is_transposed(a))"
    if req.causal and m is not None:
        return ax.EINVAL, "a causal flag and a mask: ggml takes one mask tensor"
    if req.scale is not None and float(np.float32(req.scale)) != req.scale:
        return ax.ENOTSUP, f"scale {req.scale!r} is not a float value: ggml takes a float"
    if m is not None:  # gb_mask
        if len(m.shape) > 4:
            return ax.EINVAL, f"mask: rank {len(m.shape)}"
        ext = [1] * (4 - len(m.shape)) + list(m.shape)
        if ops and ext[3] not in (Lk, 1):
            return ax.EINVAL, (f"mask: key extent {ext[3]} for Lk = {Lk}: ggml_soft_max_ext "
                               "would abort on GGML_ASSERT(mask->ne[0] == a->ne[0])")
        if not ops and ext[3] < Lk and ext[3] != 1:
            return ax.EINVAL, (f"mask: key extent {ext[3]} < Lk = {Lk}: ggml_flash_attn_ext "
                               "would read past the mask")
        if ext[2] < Lq and ext[2] != 1:
            return ax.EINVAL, f"mask: query extent {ext[2]} < Lq = {Lq}"
        if ext[1] == 0 or Hq % ext[1]:
            return ax.EINVAL, (f"mask: head extent {ext[1]} with Hq = {Hq}: ggml would abort "
                               "on GGML_ASSERT(q->ne[2] % mask->ne[2] == 0)")
        if ext[0] == 0 or B % ext[0]:
            return ax.EINVAL, (f"mask: batch extent {ext[0]} with B = {B}: ggml would abort "
                               "on GGML_ASSERT(q->ne[3] % mask->ne[3] == 0)")
        if not ops and m.dtype != "bool":
            x = values(m)
            back = x.astype(np.float16).astype(np.float64)
            bad = ~((back == x) | (np.isnan(back) & np.isnan(x)))
            if bad.any():
                i = tuple(int(j) for j in np.argwhere(bad)[0])
                return ax.ENOTSUP, (f"the {m.dtype} mask value {x[i]!r} is not an f16 value: "
                                    "ggml_flash_attn_ext takes only an F16 mask")
    return None


def c_words(data: bytes) -> str:
    """The bytes as a C initializer of uint32 words (little-endian), 8 a line."""
    pad = data + b"\0" * (-len(data) % 4)
    words = np.frombuffer(pad, "<u4") if pad else np.zeros(1, "<u4")
    lines = []
    for i in range(0, len(words), 8):
        lines.append("    " + ", ".join(f"0x{int(w):08x}u" for w in words[i:i + 8]) + ",")
    return "\n".join(lines)


def c_tensor(name: str, t) -> str:
    shape = list(t.shape) + [1] * (4 - len(t.shape))
    strides = list(t.strides) + [0] * (4 - len(t.strides))
    return "\n".join([
        f"static const uint32_t {name}_words[] = {{",
        c_words(np.ascontiguousarray(t.storage).tobytes()),
        "};",
        f"static const tensor {name}_t = {{{DTYPE_CODE[t.dtype]}, {len(t.shape)}, "
        f"{{{', '.join(map(str, shape))}}}, {{{', '.join(map(str, strides))}}}, {name}_words}};",
    ])


def c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def ggml_prefix() -> str:
    spec = importlib.util.find_spec("libggml")
    if spec and spec.origin:
        return os.path.dirname(spec.origin)
    return "$GGML_PREFIX"


class GgmlReproWriter(ax.ReproWriter):
    plugins = PLUGINS
    # gb_options
    options = [
        ax.Option("threads", "auto", "CPU threads for ggml_graph_compute: auto or 1..512"),
        ax.Option("prec", "f32", "f32 (GGML_PREC_F32) or default (GGML_PREC_DEFAULT)"),
        ax.Option("kernels", "auto", "auto, or ref (ggml_cplan.use_ref)"),
    ]

    def open(self, options):
        t = options["threads"]
        if t != "auto" and not (t.isdigit() and 1 <= int(t) <= MAX_THREADS):
            raise ax.Refusal(ax.EINVAL, f"threads={t}: expected auto or 1..{MAX_THREADS}")
        if options["prec"] not in ("f32", "default"):
            raise ax.Refusal(ax.EINVAL, f"prec={options['prec']}: expected default or f32")
        if options["kernels"] not in ("auto", "ref"):
            raise ax.Refusal(ax.EINVAL, f"kernels={options['kernels']}: expected auto or ref")
        self.opts = options
        # gb_capabilities
        caps = ["f32", "f16", "bf16", "mask.bool", "mask.additive", "causal", "causal.offset",
                "gqa", "dv_ne_d", "strided", "scale", "mask.broadcast"]
        return ax.Identity("ggml-repro", "attnconf repro writer for the ggml plugins", caps)

    def repro(self, req: ax.SdpaRequest, header: dict):
        plugin, version = self.plugin_of(header)
        ops = plugin == "ggml-ops"
        refused = refusals(req, ops)
        if refused:
            status, why = refused
            raise ax.Refusal(ax.ENOTSUP, f"{plugin} answers this case itself before calling ggml "
                             f"({'einval' if status == ax.EINVAL else 'edtype' if status == ax.EDTYPE else 'enotsup'}: "
                             f"{why}): there is no ggml call to reproduce")
        return self.c_file(req, header, plugin, ops, version or "ggml"), "c"

    def c_file(self, req, header, plugin, ops, version) -> str:
        expect = header.get("expect") or {}
        status = expect.get("status", "ok")
        case = str(header.get("case") or "case")
        prefix = ggml_prefix()
        fname = f"repro_{case.replace('.', '_')}.c"
        build = (f"cc -std=c11 -O1 -o repro {fname} -I{prefix}/include -L{prefix}/lib64 "
                 f"-Wl,-rpath,{prefix}/lib64 -lggml -lggml-base -lggml-cpu -lm")
        rules = ", ".join(header.get("rules") or []) or "(none listed)"
        desc = " ".join(str(header.get("description") or "").split())
        threads = self.opts["threads"]
        if status == "ok":
            atol = float(expect.get("atol") or 0)
            wants = f"the output (in q's dtype) within {atol:.3g} of SPEC.md's result"
        else:
            wants = f"a rejection ({status}): ggml must not compute these inputs"
        graph = ("ggml_mul_mat(k, q) (set_prec), ggml_soft_max_ext(kq, mask, scale, 0),\n"
                 "   ggml_mul_mat(ggml_cont(ggml_transpose(v)), kq), ggml_cont(ggml_permute(.., 0, "
                 "2, 1, 3))" if ops else
                 "ggml_flash_attn_ext(q, k, v, mask, scale, 0, 0) with ggml_flash_attn_ext_set_prec")
        doc = "\n".join([
            f"Reproducer: attnconf case {case} on {plugin} ({version}).",
            "",
            *textwrap.wrap(f"What SPEC.md expects ({rules}): {desc}", 92),
            f"Required: {wants}.",
            "",
            "How the case is posed (as attnconf's ggml plugin, ggml_backend.c, poses it, the way",
            "llama.cpp's build_attn_mha does): q as F32, K/V in the case's type, ne = {D, L, H, B}",
            "views of the buffers; one additive mask (bool -> 0 / -inf, causal -> keys j <= offset + i);",
            f"   {graph};",
            f"options threads={threads} prec={self.opts['prec']} kernels={self.opts['kernels']}.",
            "The inputs are embedded as the raw little-endian bytes attnconf passed; the expected",
            "values come from the float64 reference below, written from SPEC.md.",
            "",
            f"Build: {build}",
            "   (the libggml-python package's directory: python3 -c 'import libggml, os; "
            "print(os.path.dirname(libggml.__file__))')",
            "Run:   ./repro   (exit 1: ggml disagrees with SPEC.md beyond the tolerance, or "
            "accepts",
            "       inputs it must reject; 0: it agrees)",
        ]).replace("*/", "* /")
        tensors = [c_tensor(n, getattr(req, n)) for n in ("q", "k", "v", "mask")
                   if getattr(req, n) is not None]
        rows = expect.get("row_checks")
        atol = expect.get("atol")
        params = "\n".join([
            f"#define USE_OPS {int(ops)}",
            f"#define HAS_MASK {int(req.mask is not None)}",
            f"#define CAUSAL {int(req.causal)}",
            f"#define HAS_OFFSET {int(req.causal and req.causal_offset is not None)}",
            f"#define CAUSAL_OFFSET {int(req.causal_offset or 0)}",
            f"#define HAS_SCALE {int(req.scale is not None)}",
            f"#define SCALE {float(req.scale or 0)!r}",
            f"#define EXPECT_OK {int(status == 'ok')}",
            f"#define EXPECT_STATUS {c_string(status)}",
            f"#define ATOL {float(atol or 0)!r} /* the largest error the case allows any element */",
            f"#define THREADS {0 if threads == 'auto' else int(threads)} /* 0: every online CPU */",
            f"#define PREC {'GGML_PREC_F32' if self.opts['prec'] == 'f32' else 'GGML_PREC_DEFAULT'}",
            f"#define USE_REF {int(self.opts['kernels'] == 'ref')}",
            f"static const char *ROW_CHECKS = {c_string(rows) if rows else 'NULL'};",
        ])
        body = (C_TEMPLATE.replace("@DOC@", doc).replace("@PARAMS@", params)
                .replace("@TENSORS@", "\n".join(tensors))
                .replace("@MASK_ARG@", "&mask_t" if req.mask is not None else "NULL"))
        return body


C_TEMPLATE = r'''/*
@DOC@
*/
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ggml-cpu.h>
#include <ggml.h>

/* One input as attnconf passed it: dtype (1 f32, 2 f16, 3 bf16, 4 bool: one byte, nonzero =
 * attend), rank, (B, H, L, D) extents and element strides into the little-endian buffer. */
typedef struct tensor {
    int dtype, ndim;
    int64_t shape[4], strides[4];
    const void *data;
} tensor;

@PARAMS@

@TENSORS@

static size_t esize(int dt) { return dt == 1 ? 4 : dt == 4 ? 1 : 2; }

static enum ggml_type gtype(int dt)
{
    return dt == 2 ? GGML_TYPE_F16 : dt == 3 ? GGML_TYPE_BF16 : GGML_TYPE_F32;
}

/* Element off of a buffer, exactly, as a float (ggml's own conversions). */
static float load(const tensor *t, int64_t off)
{
    switch (t->dtype) {
    case 1: return ((const float *)t->data)[off];
    case 2: return ggml_fp16_to_fp32(((const ggml_fp16_t *)t->data)[off]);
    case 3: {
        ggml_bf16_t b = {((const uint16_t *)t->data)[off]};
        return ggml_bf16_to_fp32(b);
    }
    default: return ((const uint8_t *)t->data)[off] ? 1.0f : 0.0f;
    }
}

/* As the plugin's gb_leaf: a ggml tensor ne = {D, L, H, B} viewing the buffer with byte
 * strides when ggml takes the view as it is, else a packed copy (widened to F32 for q). */
static struct ggml_tensor *leaf(struct ggml_context *cin, const tensor *t, enum ggml_type type)
{
    const int64_t B = t->shape[0], H = t->shape[1], L = t->shape[2], D = t->shape[3];
    struct ggml_tensor *g = ggml_new_tensor_4d(cin, type, D, L, H, B);
    size_t es = esize(t->dtype);
    if (type == gtype(t->dtype) && (t->strides[3] == 1 || D <= 1)) {
        const int64_t ne[4] = {D, L, H, B};
        const int64_t s[4] = {1, t->strides[2], t->strides[1], t->strides[0]};
        size_t nb[4];
        for (int i = 0; i < 4; i++)
            nb[i] = ne[i] <= 1 ? g->nb[i] : (size_t)s[i] * es;
        int ok = nb[0] <= nb[1];
        for (int i = 1; i < 4; i++)
            ok = ok && (ne[i] <= 1 || s[i] > 0);
        if (ok) {
            memcpy(g->nb, nb, sizeof nb);
            ok = ggml_nbytes(g) >= ggml_row_size(type, D) * (size_t)(L * H * B);
        }
        if (ok) {
            g->data = (void *)t->data;
            return g;
        }
        g->nb[0] = es;
        for (int i = 1; i < 4; i++)
            g->nb[i] = g->nb[i - 1] * (size_t)ne[i - 1];
    }
    size_t os = ggml_type_size(type), w = 0;
    unsigned char *buf = malloc((size_t)(B * H * L * D) * os + 1);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t l = 0; l < L; l++)
                for (int64_t d = 0; d < D; d++, w++) {
                    int64_t off = b * t->strides[0] + h * t->strides[1] + l * t->strides[2] +
                                  d * t->strides[3];
                    if (type == GGML_TYPE_F32)
                        ((float *)buf)[w] = load(t, off);
                    else
                        memcpy(buf + w * os, (const unsigned char *)t->data + (size_t)off * es, os);
                }
    g->data = buf;
    return g;
}

/* As the plugin's gb_mask: the one additive mask, NULL without mask and causal. */
static struct ggml_tensor *make_mask(struct ggml_context *cin, const tensor *m, int64_t B,
                                     int64_t Hq, int64_t Lq, int64_t Lk)
{
    (void)B;
    (void)Hq;
    const enum ggml_type type = USE_OPS ? GGML_TYPE_F32 : GGML_TYPE_F16;
    int64_t mb = 1, mh = 1, mq = Lq, mk = Lk, sb = 0, sh = 0, sq = 0, sk = 0;
    if (m) {
        int64_t ext[4] = {1, 1, 1, 1}, str[4] = {0, 0, 0, 0};
        for (int i = 0; i < m->ndim; i++) {
            ext[4 - m->ndim + i] = m->shape[i];
            str[4 - m->ndim + i] = m->strides[i];
        }
        mb = ext[0];
        mh = ext[1];
        mq = ext[2] == 1 ? Lq : ext[2];
        mk = ext[3] == 1 ? Lk : ext[3];
        sb = str[0];
        sh = str[1];
        sq = ext[2] == 1 ? 0 : str[2];
        sk = ext[3] == 1 ? 0 : str[3];
    } else if (!CAUSAL) {
        return NULL;
    }
    const int64_t offset = HAS_OFFSET ? CAUSAL_OFFSET : Lk - Lq;
    unsigned char *buf = malloc((size_t)(mb * mh * mq * mk) * ggml_type_size(type) + 1);
    size_t w = 0;
    for (int64_t b = 0; b < mb; b++)
        for (int64_t h = 0; h < mh; h++)
            for (int64_t i = 0; i < mq; i++)
                for (int64_t j = 0; j < mk; j++, w++) {
                    float x;
                    if (!m) {
                        x = j <= offset + i ? 0.0f : -INFINITY;
                    } else {
                        float v = load(m, b * sb + h * sh + i * sq + j * sk);
                        x = m->dtype == 4 ? (v != 0.0f ? 0.0f : -INFINITY) : v;
                    }
                    if (type == GGML_TYPE_F32)
                        ((float *)buf)[w] = x;
                    else
                        ((ggml_fp16_t *)buf)[w] = ggml_fp32_to_fp16(x);
                }
    struct ggml_tensor *g = ggml_new_tensor_4d(cin, type, mk, mq, mh, mb);
    g->data = buf;
    return g;
}

/* ---- SPEC.md's semantics in float64, and the comparison ------------------------------------ */

static double value(const tensor *t, int64_t b, int64_t h, int64_t i, int64_t d)
{
    const int64_t idx[4] = {b, h, i, d};
    int64_t off = 0;
    for (int k = 0; k < t->ndim; k++) /* q, k, v are rank 4: (B, H, L, D) */
        off += idx[k] * t->strides[k];
    return (double)load(t, off);
}

/* The mask entry for (b, h, i, j), broadcast by NumPy rules (trailing axes aligned). */
static double mask_at(const tensor *m, int64_t b, int64_t h, int64_t i, int64_t j)
{
    const int64_t idx[4] = {b, h, i, j};
    int64_t off = 0;
    for (int k = 0; k < m->ndim; k++) {
        int a = 4 - m->ndim + k;
        off += (m->shape[k] == 1 ? 0 : idx[a]) * m->strides[k];
    }
    return (double)load(m, off);
}

/* out[b, h, i] = sum over kept keys j of softmax_j(scale * q.k_j + bias) v_j, with kv head
 * h / (Hq / Hkv); a key is kept when the bool mask says so (a float mask is added, and only
 * -inf excludes) and, under causal, when j <= offset + i (offset = Lk - Lq unless given); a row
 * that keeps no key is 0; a key not kept contributes nothing, whatever its K and V hold. */
static void reference(const tensor *q, const tensor *k, const tensor *v, const tensor *m,
                      double *out)
{
    const int64_t B = q->shape[0], Hq = q->shape[1], Lq = q->shape[2], D = q->shape[3];
    const int64_t Hkv = k->shape[1], Lk = k->shape[2], Dv = v->shape[3];
    const double scale = HAS_SCALE ? SCALE : 1.0 / sqrt((double)D);
    const int64_t offset = HAS_OFFSET ? CAUSAL_OFFSET : Lk - Lq;
    double *s = malloc(sizeof(double) * (size_t)(Lk + 1));
    int *kept = malloc(sizeof(int) * (size_t)(Lk + 1));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Lq; i++) {
                const int64_t kh = h / (Hq / Hkv);
                double best = -INFINITY;
                int any = 0;
                for (int64_t j = 0; j < Lk; j++) {
                    int keep = !CAUSAL || j <= offset + i;
                    double bias = 0;
                    if (m && m->dtype == 4) {
                        keep = keep && mask_at(m, b, h, i, j) != 0;
                    } else if (m) {
                        bias = mask_at(m, b, h, i, j);
                        keep = keep && bias != -INFINITY;
                    }
                    kept[j] = keep;
                    if (!keep)
                        continue;
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++)
                        dot += value(q, b, h, i, d) * value(k, b, kh, j, d);
                    s[j] = scale * dot + bias;
                    if (!any || s[j] > best)
                        best = s[j];
                    any = 1;
                }
                double *o = out + ((b * Hq + h) * Lq + i) * Dv;
                for (int64_t d = 0; d < Dv; d++)
                    o[d] = 0;
                if (!any)
                    continue; /* a row that keeps no key is 0 */
                double sum = 0;
                for (int64_t j = 0; j < Lk; j++)
                    if (kept[j])
                        sum += exp(s[j] - best);
                for (int64_t j = 0; j < Lk; j++)
                    if (kept[j]) /* a key not kept is never read: its K and V may be NaN */
                        for (int64_t d = 0; d < Dv; d++)
                            o[d] += exp(s[j] - best) / sum * value(v, b, kh, j, d);
            }
    free(kept);
    free(s);
}

/* x rounded once to the case's dtype, ties to even (an exact row's expected value). */
static double rounded(double x, int dt)
{
    if (dt == 1 || !isfinite(x) || x == 0)
        return dt == 1 ? (double)(float)x : x;
    int e;
    frexp(x, &e);
    const int bits = dt == 2 ? 11 : 8, emin = dt == 2 ? -13 : -125;
    if (e < emin)
        e = emin;
    return ldexp(nearbyint(ldexp(x, bits - e)), e - bits);
}

/* %.17g, with one spelling for NaN ("nan"; printf may write "-nan"). */
static void number(double x, char out[32])
{
    if (isnan(x))
        snprintf(out, 32, "nan");
    else
        snprintf(out, 32, "%.17g", x);
}

static int same_special(double g, double w)
{
    return (isnan(g) && isnan(w)) || (isinf(g) && g == w);
}

int main(void)
{
    const tensor *q = &q_t, *k = &k_t, *v = &v_t, *m = @MASK_ARG@;
    printf("ggml %s (commit %s)\n", ggml_version(), ggml_commit());
    const int64_t B = q->shape[0], Hq = q->shape[1], Lq = q->shape[2], D = q->shape[3];
    const int64_t Hkv = k->shape[1], Lk = k->shape[2], Dv = v->shape[3];
    (void)Hkv;
    const float scale = HAS_SCALE ? (float)SCALE : 1.0f / sqrtf((float)D);

    ggml_cpu_init();
    size_t mem = (size_t)(4 * Dv * Hq * Lq * B) * 2 + (size_t)(2 * Lk * Lq * Hq * B) * 4 +
                 (size_t)(Lk * Dv * Hq * B) * 4 + 16 * (ggml_tensor_overhead() + 64) +
                 ggml_graph_overhead_custom(16, false) + 4096;
    struct ggml_context *cin = ggml_init((struct ggml_init_params){
        .mem_size = 8 * ggml_tensor_overhead() + 1024, .mem_buffer = NULL, .no_alloc = true});
    struct ggml_context *c =
        ggml_init((struct ggml_init_params){.mem_size = mem, .mem_buffer = NULL, .no_alloc = false});
    struct ggml_tensor *gq = leaf(cin, q, GGML_TYPE_F32);
    struct ggml_tensor *gk = leaf(cin, k, gtype(k->dtype));
    struct ggml_tensor *gv = leaf(cin, v, gtype(v->dtype));
    struct ggml_tensor *gm = make_mask(cin, m, B, Hq, Lq, Lk);
#if USE_OPS
    struct ggml_tensor *kq = ggml_mul_mat(c, gk, gq);
    ggml_mul_mat_set_prec(kq, PREC);
    kq = ggml_soft_max_ext(c, kq, gm, scale, 0.0f);
    struct ggml_tensor *vt = ggml_cont(c, ggml_transpose(c, gv));
    struct ggml_tensor *kqv = ggml_mul_mat(c, vt, kq);
    struct ggml_tensor *res = ggml_cont(c, ggml_permute(c, kqv, 0, 2, 1, 3));
#else
    struct ggml_tensor *res = ggml_flash_attn_ext(c, gq, gk, gv, gm, scale, 0.0f, 0.0f);
    ggml_flash_attn_ext_set_prec(res, PREC);
#endif
    struct ggml_cgraph *gf = ggml_new_graph_custom(c, 16, false);
    ggml_build_forward_expand(gf, res);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = THREADS ? THREADS : (ncpu < 1 ? 1 : ncpu > 512 ? 512 : (int)ncpu);
    struct ggml_cplan plan = ggml_graph_plan(gf, threads, NULL);
    plan.use_ref = USE_REF;
    void *work = plan.work_size ? malloc(plan.work_size) : NULL;
    plan.work_data = work;
    enum ggml_status gs = ggml_graph_compute(gf, &plan);
    if (gs != GGML_STATUS_SUCCESS) {
        printf("%s: ggml_graph_compute returned status %d\n",
               EXPECT_OK ? "MISMATCH" : "ok: rejected", (int)gs);
        return EXPECT_OK ? 1 : 0;
    }
    if (!EXPECT_OK) {
        printf("MISMATCH: ggml computed inputs SPEC.md requires it to reject (%s)\n",
               EXPECT_STATUS);
        return 1;
    }
    /* res: F32 [Dv, Hq, Lq, B] (memory [B][Lq][Hq][Dv]) -> (B, Hq, Lq, Dv) */
    const int64_t n = B * Hq * Lq * Dv;
    double *got = malloc(sizeof(double) * (size_t)(n + 1)), *want = malloc(sizeof(double) * (size_t)(n + 1));
    const float *r = res->data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Lq; i++)
                for (int64_t d = 0; d < Dv; d++)
                    got[((b * Hq + h) * Lq + i) * Dv + d] = r[((b * Lq + i) * Hq + h) * Dv + d];
    reference(q, k, v, m, want);

    int bad_dtype = q->dtype != 1;
    if (bad_dtype)
        printf("MISMATCH: output dtype f32 (ggml's attention always produces F32), expected %s "
               "(q's dtype)\n", q->dtype == 2 ? "f16" : "bf16");
    int64_t nbad = 0, first = -1, gnan = 0, wnan = 0;
    double maxerr = 0;
    for (int64_t e = 0; e < n; e++) {
        char mode = ROW_CHECKS ? ROW_CHECKS[e / (Dv ? Dv : 1)] : 'c';
        double g = got[e], w = mode == 'e' ? rounded(want[e], q->dtype) : want[e];
        gnan += isnan(g) != 0;
        wnan += mode != 'f' && isnan(w);
        int ok;
        if (mode == 'f')
            ok = isfinite(g);
        else if (isfinite(g) && isfinite(w))
            ok = mode == 'e' ? g == w : fabs(g - w) <= ATOL;
        else
            ok = same_special(g, w);
        if (mode != 'f' && isfinite(g) && isfinite(w) && fabs(g - w) > maxerr)
            maxerr = fabs(g - w);
        if (!ok && nbad++ == 0)
            first = e;
    }
    printf("output f32 [%lld, %lld, %lld, %lld]: max abs error %.3g over the finite pairs "
           "(tolerance %.3g), NaN: got %lld, expected %lld\n",
           (long long)B, (long long)Hq, (long long)Lq, (long long)Dv, maxerr, (double)ATOL,
           (long long)gnan, (long long)wnan);
    if (nbad == 0) {
        printf(bad_dtype ? "the values agree; the dtype does not\n"
                         : "ok: the library agrees with SPEC.md\n");
        return bad_dtype;
    }
    int64_t d = first % Dv, i = first / Dv % Lq, h = first / Dv / Lq % Hq, b = first / Dv / Lq / Hq;
    char mode = ROW_CHECKS ? ROW_CHECKS[first / Dv] : 'c';
    char gtext[32], wtext[32];
    number(got[first], gtext);
    number(mode == 'e' ? rounded(want[first], q->dtype) : want[first], wtext);
    printf("MISMATCH: %lld of %lld elements differ; first at [%lld, %lld, %lld, %lld]: got %s, "
           "expected %s (required: %s)\n",
           (long long)nbad, (long long)n, (long long)b, (long long)h, (long long)i, (long long)d,
           gtext, wtext,
           mode == 'e' ? "exactly, rounded once to the case's dtype"
           : mode == 'f' ? "finite"
                         : "within the tolerance");
    free(work);
    ggml_free(c);
    ggml_free(cin);
    return 1;
}
'''


if __name__ == "__main__":
    ax.serve(GgmlReproWriter())
