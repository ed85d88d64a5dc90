/* attnconf/backend.h — the attnconf backend plugin ABI, version 1.
 *
 * A backend is a shared library (a CMake MODULE) that exports one C symbol:
 *
 *     const attnconf_backend *attnconf_backend_entry(uint32_t host_abi_version);
 *
 * It returns a pointer to a const, statically allocated table, or NULL if it cannot serve a
 * host of that ABI version.  The table starts with the ABI version and the table's size; it only
 * ever grows at the end (as SQLite's sqlite3_vfs): a host reads a member only if
 * struct_size >= offsetof(member) + sizeof(member).  Changing or removing a member requires a
 * new ABI version, and the host accepts only abi_version == ATTNCONF_ABI_VERSION.
 *
 * This header is self-contained (C99 or later, no other attnconf header) so third-party
 * backends can copy it.  No member may abort, exit or print to stdout; errors are returned as
 * the negative codes below, with detail from last_error.
 *
 * Threading: the harness calls a context from one thread at a time.  Lifetime: the harness
 * opens one context per run and closes it after the last case.
 *
 * Semantics a backend must implement (normative text: SPEC.md in the attnconf repository;
 * clause numbers in brackets):
 *   - out = softmax(scale * q.k^T + mask) . v; scale omitted = 1/sqrt(D) of q/k, never of Dv;
 *     an explicit 0 is 0 [2].
 *   - GQA: query head h uses kv head h / (Hq / Hkv) (repeat-interleave), never h % Hkv [1].
 *   - causal: query i keeps key j iff j <= offset + i, offset = Lk - Lq unless given
 *     (bottom-right); when Lq > Lk the first Lq - Lk rows keep nothing [3].
 *   - build_mask: window W keeps W keys counting the query itself; lengths[b] = total valid keys
 *     (cache included, right padding); left_padding[b] = first valid key; everything composes by
 *     intersection [4, 5].
 *   - BOOL mask selects (true = attend); a float mask is added, and only -inf excludes a key [6];
 *     masks broadcast by NumPy rules to (B, Hq, Lq, Lk), head dims index QUERY heads [7].
 *   - dtypes: q, k, v share one dtype, which the output must have; an additive mask whose dtype
 *     does not promote to q's (f32 mask with f16/bf16 q, bf16 with f16, f16 with bf16) must be
 *     rejected with ATTNCONF_EDTYPE, never computed upcast [8].
 *   - a row with no kept key (fully masked, or Lk = 0) is exactly 0, never NaN or mean(V) [9];
 *     an excluded key contributes nothing even if its K or V hold NaN or inf [10].
 *   - KV cache (optional, fourth revision): conformance is judged after every operation on the
 *     absolute positions each row retains in time order, the keys/values there, the keep mask
 *     the cache builds and attention through it, never on the physical layout [14-18].
 *   - terms of current models (fifth revision): softcap, ALiBi, sinks, chunked attention,
 *     documents and bidirectional blocks, in the order given at attnconf_sdpa_args [20-22].
 *   - mask parameters (third revision): window (with causal), per-row lengths and left_padding
 *     exclude keys exactly as the build_mask parameters of the same name, composed by
 *     intersection with causal and a mask tensor; lengths never move the causal offset [19].
 * Results: each output element e passes iff |got - e| <= ulps * ulp(e) + row_atol[row], the
 * per-element error bound the case carries (SPEC.md clause 13: half an ulp of the output dtype
 * plus a first-order bound of an f32-accumulating kernel); NaN must meet NaN and inf the
 * same-signed inf.  Returning ATTNCONF_ENOTSUP counts as NOT_SUPPORTED, except in a
 * case that must be rejected, where only the expected code (EDTYPE / EINVAL) passes.
 * Returning ATTNCONF_EINEXPRESSIBLE in a case that must be rejected counts as UNEXPRESSIBLE
 * (neither passed nor failed; an expected-results file must list the case, with the reason,
 * for it to conform), and in any other case as FAIL (SPEC.md "Result classes").
 *
 * Inputs a backend must reject (cases sdpa.invalid.*, mask.invalid.*, sdpa.params.invalid.*,
 * and the dtype cases of clause 8; each such case requires only the capabilities needed to
 * express its input, so a backend without masks is never asked to reject a mask):
 *   ATTNCONF_EDTYPE: q, k, v of different dtypes; a q dtype that is not a float; an additive
 *     mask whose dtype does not promote to q's (f32 mask with f16/bf16 q, bf16 with f16, f16
 *     with bf16) [8].
 *   ATTNCONF_EINVAL: a q/k/v/out that is not rank 4; batch, kv heads, Lk or D that disagree
 *     between q, k, v and out; D = 0 (Dv = 0 is valid: an empty output); Hq not a multiple of
 *     Hkv (or Hkv = 0) [1]; a mask shape that does not broadcast to (B, Hq, Lq, Lk), e.g. kv
 *     heads where query heads are required [7]; causal
 *     together with a mask tensor; a non-finite scale, or one outside the f32 range [2];
 *     softcap or alibi_max_bias negative or not finite, a sink not finite, chunk < 0, chunk or
 *     block_ids without causal [20-22]; window < 0, or window without causal;
 *     lengths[b] or left_padding[b] outside 0..Lk [19]; and in build_mask: window < 0, lengths
 *     outside 0..offset+lq, left_padding < 0 [4, 5].
 * Any other error code, or a success, on such a case is a FAIL.
 *
 * Arguments structs start with struct_size (the host's sizeof): a backend must not read a member
 * that struct_size does not cover.  Strides are >= 0 (0 broadcasts).
 */
#ifndef ATTNCONF_BACKEND_H
#define ATTNCONF_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNCONF_ABI_VERSION 1u
#define ATTNCONF_ENTRY_SYMBOL "attnconf_backend_entry"

/* Status codes (0 or negative). */
enum {
    ATTNCONF_OK = 0,
    ATTNCONF_EINVAL = -1,   /* invalid arguments: rank, shape, broadcast, value range */
    ATTNCONF_EDTYPE = -2,   /* dtype rejected (q/k/v mismatch, a mask dtype that would upcast) */
    ATTNCONF_ENOMEM = -3,   /* out of memory */
    ATTNCONF_ENOTSUP = -4,  /* valid input the backend does not implement */
    ATTNCONF_EBACKEND = -5, /* any other backend failure */
    /* The input is invalid and cannot be written in the library's own API; only for
     * must-reject cases (a per-sequence key length of -1 when the API takes lengths as a 0/1
     * attention mask: there is no way to write -1).  Never for an input the API can write,
     * however it would answer it: a rejection the library could make must be made. */
    ATTNCONF_EINEXPRESSIBLE = -6
};

/* Element types; values are shared with the reference (attnref_dtype) and case files.
 * f16/bf16 are IEEE binary16 / bfloat16 bit patterns in uint16_t; BOOL is one byte, 0 = false. */
typedef enum attnconf_dtype {
    ATTNCONF_F32 = 1,
    ATTNCONF_F16 = 2,
    ATTNCONF_BF16 = 3,
    ATTNCONF_BOOL = 4
} attnconf_dtype;

#define ATTNCONF_MAX_RANK 4

/* A borrowed strided view (the DLPack DLTensor convention): strides are in ELEMENTS.
 * Attention tensors are (B, H, L, D).  data is host memory, except for a backend with
 * ATTNCONF_CAP_DEVICE (seventh revision), where the host passes device handles. */
typedef struct attnconf_tensor {
    void *data;
    int32_t dtype; /* attnconf_dtype */
    int32_t ndim;  /* 0..4 */
    int64_t shape[ATTNCONF_MAX_RANK];
    int64_t strides[ATTNCONF_MAX_RANK]; /* elements; may be permuted (non-contiguous) */
} attnconf_tensor;

/* Capability bits returned by `capabilities`.  A case declares the bits it needs; a backend
 * lacking one gets NOT_SUPPORTED for that case (neither pass nor fail).  Each comment starts
 * with the bit's one name everywhere else: in case files (`requires:`), in the harness's
 * messages ("requires capability mask.additive") and in `attnconf backend-info`. */
#define ATTNCONF_CAP_F32 (1ull << 0)           /* "f32": q/k/v/out in f32 */
#define ATTNCONF_CAP_F16 (1ull << 1)           /* "f16": q/k/v/out in f16 */
#define ATTNCONF_CAP_BF16 (1ull << 2)          /* "bf16": q/k/v/out in bf16 */
#define ATTNCONF_CAP_MASK_BOOL (1ull << 3)     /* "mask.bool": boolean mask tensor */
#define ATTNCONF_CAP_MASK_ADD (1ull << 4)      /* "mask.additive": additive mask tensor */
#define ATTNCONF_CAP_CAUSAL (1ull << 5)        /* "causal": causal flag, bottom-right */
#define ATTNCONF_CAP_CAUSAL_OFFSET (1ull << 6) /* "causal.offset": causal with an explicit offset */
#define ATTNCONF_CAP_GQA (1ull << 7)           /* "gqa": Hq > Hkv */
#define ATTNCONF_CAP_DV_NE_D (1ull << 8)       /* "dv_ne_d": Dv != D */
#define ATTNCONF_CAP_STRIDED (1ull << 9)       /* "strided": non-contiguous q/k/v */
#define ATTNCONF_CAP_SCALE (1ull << 10)        /* "scale": an explicit scale */
#define ATTNCONF_CAP_MASK_BCAST                                                                    \
    (1ull << 11)                             /* "mask.broadcast": masks of any broadcastable
                                                  shape */
#define ATTNCONF_CAP_BUILD_MASK (1ull << 12) /* "build_mask": causal + offset */
#define ATTNCONF_CAP_WINDOW (1ull << 13)     /* "window": build_mask: sliding window */
#define ATTNCONF_CAP_LENGTHS (1ull << 14)    /* "lengths": build_mask: per-sequence lengths */
#define ATTNCONF_CAP_LEFT_PAD                                                                      \
    (1ull << 15) /* "left_padding": build_mask: per-sequence left
                                                  padding */
/* Third revision of ABI v1: the kernels' own mask parameters (attnconf_sdpa_args.window,
 * .lengths, .left_padding), static key buffers and stride-0 inputs.  The host never passes a
 * parameter whose bit the backend does not report. */
#define ATTNCONF_CAP_SDPA_WINDOW                                                                   \
    (1ull << 16) /* "sdpa.window": sliding window parameter (with
                                                  causal) */
#define ATTNCONF_CAP_SDPA_LENGTHS                                                                  \
    (1ull << 17) /* "sdpa.lengths": per-sequence key lengths
                                                  parameter */
#define ATTNCONF_CAP_SDPA_LEFT_PAD                                                                 \
    (1ull << 18) /* "sdpa.left_padding": per-sequence left
                                                   padding parameter */
#define ATTNCONF_CAP_KV_LEN                                                                        \
    (1ull << 19) /* "mask.kv_len": build_mask with a key buffer
                                                  longer than offset + lq */
#define ATTNCONF_CAP_STRIDE0                                                                       \
    (1ull << 20) /* "stride0": q/k/v with stride 0 on the batch or
                                                  head axis */
/* Fifth revision of ABI v1: the terms of current models (attnconf_sdpa_args.softcap and the
 * members after it, attnconf_mask_args.chunk and after; SPEC.md clauses 20-22).  As in the
 * third revision, the host never passes a term whose bit the backend does not report. */
#define ATTNCONF_CAP_SOFTCAP (1ull << 21)       /* "sdpa.softcap": logit soft-capping [20] */
#define ATTNCONF_CAP_ALIBI (1ull << 22)         /* "sdpa.alibi": ALiBi from max_bias [21] */
#define ATTNCONF_CAP_SINKS (1ull << 23)         /* "sdpa.sinks": a sink logit per query head [22] */
#define ATTNCONF_CAP_CHUNK (1ull << 24)         /* "sdpa.chunk": chunked attention [20] */
#define ATTNCONF_CAP_SEGMENTS (1ull << 25)      /* "sdpa.segments": document ids (packing) [20] */
#define ATTNCONF_CAP_BLOCKS (1ull << 26)        /* "sdpa.blocks": bidirectional blocks [20] */
#define ATTNCONF_CAP_MASK_CHUNK (1ull << 27)    /* "mask.chunk": build_mask: chunk [20] */
#define ATTNCONF_CAP_MASK_SEGMENTS (1ull << 28) /* "mask.segments": build_mask: documents */
#define ATTNCONF_CAP_MASK_BLOCKS (1ull << 29)   /* "mask.blocks": build_mask: blocks */
/* Fourth revision of ABI v1: the KV cache members at the end of attnconf_backend (bits 32..47
 * are the cache's).  A backend reports a kind's bit only with cache_create, cache_update,
 * cache_trim, cache_make_mask, cache_state and cache_destroy all set; CACHE_BATCH also needs
 * cache_filter, cache_extend, cache_merge, cache_prepare and cache_finalize. */
#define ATTNCONF_CAP_CACHE_STD (1ull << 32)       /* "cache.standard": growing cache [14] */
#define ATTNCONF_CAP_CACHE_ROTATING (1ull << 33)  /* "cache.rotating": max_size, keep [15] */
#define ATTNCONF_CAP_CACHE_CHUNKED (1ull << 34)   /* "cache.chunked": Llama 4 style [16] */
#define ATTNCONF_CAP_CACHE_QUANTIZED (1ull << 35) /* "cache.quantized": affine [17] */
#define ATTNCONF_CAP_CACHE_BATCH                                                                   \
    (1ull << 36)                                       /* "cache.batch": batched, left padding, and
                                                     its ops [18] */
#define ATTNCONF_CAP_CACHE_BATCH_ROTATING (1ull << 37) /* "cache.batch_rotating" [18] */
/* Sixth revision of ABI v1: paged KV attention (attnconf_backend.paged_append / paged_sdpa,
 * SPEC.md clause 23).  A paged case that also uses softcap, ALiBi, sinks or chunk requires
 * that term's bit too: a backend reporting both serves the term on the paged path as well. */
#define ATTNCONF_CAP_PAGED (1ull << 38) /* "paged": paged_append and paged_sdpa [23] */

/* Seventh revision of ABI v1: device memory.  A backend with ATTNCONF_CAP_DEVICE computes on
 * buffers it allocates itself (GPU memory, an OpenCL buffer, ...).  The host then allocates
 * every tensor of a call with device_alloc, copies inputs in with copy_to_device, calls sdpa
 * with attnconf_tensor.data = the device handles, calls synchronize, and copies the output back
 * with copy_from_device; guards and canaries are checked on the copy.  `bench` times the
 * kernel (sdpa + synchronize) on resident data and the copies apart. */
#define ATTNCONF_CAP_DEVICE (1ull << 39) /* "device": buffers in device memory (DLPack-style) */

/* Arguments of `sdpa`.  out = softmax(scale * q.k^T + mask) . v, semantics as attnref/sdpa.h:
 * q (B,Hq,Lq,D), k (B,Hkv,Lk,D), v (B,Hkv,Lk,Dv), out (B,Hq,Lq,Dv). */
typedef struct attnconf_sdpa_args {
    uint32_t struct_size; /* sizeof(attnconf_sdpa_args) as compiled by the host */
    const attnconf_tensor *q;
    const attnconf_tensor *k;
    const attnconf_tensor *v;
    const attnconf_tensor *mask; /* NULL, BOOL (true = attend) or additive float; rank <= 4,
                                     broadcast to (B,Hq,Lq,Lk) */
    int32_t causal;              /* 1 = causal mask; then mask is NULL */
    int32_t has_causal_offset;   /* 0 = bottom-right: offset = Lk - Lq */
    int64_t causal_offset;       /* query i keeps key j iff j <= causal_offset + i */
    int32_t has_scale;           /* 0 = 1/sqrt(D) */
    double scale;
    /* Output.  The host sets data (a buffer of out_capacity bytes), shape (B,Hq,Lq,Dv),
     * contiguous strides and dtype = q's dtype.  The backend writes the result and MUST set
     * out->dtype (and strides, if it writes another layout) to what it actually produced, so
     * the host can report a silent upcast as INCORRECT_DTYPE. */
    attnconf_tensor *out;
    size_t out_capacity; /* bytes at out->data; at least numel * 4 */

    /* ---- third revision: the kernels' own mask parameters (SPEC.md clause 19).  Read only
     * when struct_size covers them; the host sets them only for a backend that reports the
     * matching ATTNCONF_CAP_SDPA_* bit.  Each excludes keys; they compose with the causal flag
     * and with a mask tensor by intersection (clause 5).  A row left with no key is 0 [9]. ---- */
    int64_t window;              /* 0 = none; W >= 1 (needs causal): query i also drops key j
                                     when j <= off + i - W, off the causal offset; W counts the
                                     query's own key [4] */
    const int64_t *lengths;      /* [B] or NULL: batch row b keeps only keys j < lengths[b]
                                     (right padding; 0 <= lengths[b] <= Lk).  Never moves the
                                     causal offset. */
    const int64_t *left_padding; /* [B] or NULL: batch row b keeps only keys
                                     j >= left_padding[b] (0 <= left_padding[b] <= Lk) */

    /* ---- fifth revision: the terms of current models (SPEC.md clauses 20-22).  Read only when
     * struct_size covers them; the host sets each only for a backend that reports its bit
     * (ATTNCONF_CAP_SOFTCAP ...).  The order for a kept key j of query row (b, h, i) at
     * absolute position p = off + i (off the causal offset, Lk - Lq unless given; also without
     * causal): s = scale * q.k; s = softcap * tanh(s / softcap); s -= m_h * |p - j| (ALiBi);
     * s += mask; then the sink joins the softmax as a logit with no value vector.  A row that
     * keeps no key is 0 [9], with or without a sink. ---- */
    double softcap;        /* 0 = none; c > 0 [20] */
    double alibi_max_bias; /* 0 = none; > 0: slope of query head h of Hq, n = 2^floor(log2 Hq):
                              m_h = 2^(-max_bias (h+1) / n) for h < n, else
                              2^(-(max_bias/2) (2 (h - n) + 1) / n) (ggml's max_bias) [21] */
    const float *sinks;    /* [Hq] or NULL: sink logit sigma_h of query head h, never scaled,
                              softcapped or biased [22] */
    int64_t chunk;         /* 0 = none; C >= 1 (needs causal): the query at p keeps key j only if
                              floor((j - lp) / C) == floor((p - lp) / C), lp = left_padding[b]
                              (0 without it) [20] */
    const int64_t *segment_ids; /* [B * Lk] (row b at b * Lk) or NULL: the query at p keeps key j
                                   only if segment_ids[p] == segment_ids[j] of its row; a query
                                   whose p is not in 0..Lk-1 keeps nothing [20] */
    const int64_t *block_ids;   /* [B * Lk] or NULL (needs causal): a key j > p is also kept when
                                   block_ids[p] >= 0 and block_ids[j] == block_ids[p]; window,
                                   chunk, segments and padding still apply [20] */
} attnconf_sdpa_args;

/* Arguments of `build_mask` (semantics as attnref/mask.h). */
typedef struct attnconf_mask_args {
    uint32_t struct_size;        /* sizeof(attnconf_mask_args) as compiled by the host */
    int64_t lq;                  /* new queries */
    int64_t offset;              /* tokens already in the KV cache */
    int64_t window;              /* sliding window in keys (own included); 0 = none */
    int64_t batch;               /* B (>= 1) when lengths or left_padding is set; else 1 */
    const int64_t *lengths;      /* [batch] total valid keys, cache included; NULL = none */
    const int64_t *left_padding; /* [batch] first valid key; NULL = none */
    attnconf_tensor *keep;       /* host-allocated BOOL (B,1,Lq,Lk), contiguous; Lk = kv_len
                                     when set, else offset + Lq */
    /* ---- third revision (read only when struct_size covers it; set only for a backend with
     * ATTNCONF_CAP_KV_LEN) ---- */
    int64_t kv_len; /* 0 = offset + lq; else the length of a static key buffer,
                                     >= offset + lq: slots past offset + lq are never kept */
    /* ---- fifth revision (read only when struct_size covers them; each set only for a backend
     * with ATTNCONF_CAP_MASK_CHUNK / _SEGMENTS / _BLOCKS): the terms of attnconf_sdpa_args of
     * the same names, with causal and causal_offset = offset; batch is their row count. ---- */
    int64_t chunk;              /* 0 = none; C >= 1 [20] */
    const int64_t *segment_ids; /* [batch * Lk] or NULL [20] */
    const int64_t *block_ids;   /* [batch * Lk] or NULL [20] */
} attnconf_mask_args;

/* ---- The KV cache (fourth revision; SPEC.md clauses 14-18; the members at the end of
 * attnconf_backend).  Layout (B, Hkv, T, D) as mlx-lm's caches (v0.32); conformance is judged on
 * which absolute positions each row retains, in time order, on the keys/values seen there and
 * on attention through the cache, never on the physical layout (a ring buffer is fine). ---- */
typedef enum attnconf_cache_kind {
    ATTNCONF_CACHE_STANDARD = 1,      /* grows; trim lowers the offset [14] */
    ATTNCONF_CACHE_ROTATING = 2,      /* keeps `keep` first tokens and a window of max_size [15] */
    ATTNCONF_CACHE_CHUNKED = 3,       /* drops keys before the current chunk [16] */
    ATTNCONF_CACHE_QUANTIZED = 4,     /* affine quantization per group of group_size values [17] */
    ATTNCONF_CACHE_BATCH = 5,         /* standard cache with per-row left padding [18] */
    ATTNCONF_CACHE_BATCH_ROTATING = 6 /* rotating cache with per-row left padding [18] */
} attnconf_cache_kind;

/* Arguments of cache_create.  EINVAL for any value outside its range. */
typedef struct attnconf_cache_config {
    uint32_t struct_size; /* sizeof(attnconf_cache_config) as compiled by the host */
    int32_t kind;         /* attnconf_cache_kind */
    int32_t dtype;        /* F32, F16 or BF16: keys, values (and quantization scales/biases) */
    int64_t batch;        /* B >= 1 */
    int64_t kv_heads;     /* Hkv >= 1 */
    int64_t head_dim;     /* D >= 1 (keys) */
    int64_t v_head_dim;   /* Dv >= 1 (values) */
    int64_t max_size;     /* ROTATING, BATCH_ROTATING: >= 1; else 0 */
    int64_t keep;         /* ROTATING: 0 <= keep < max_size; else 0 */
    int64_t chunk_size;   /* CHUNKED: >= 1; else 0 */
    int64_t group_size;   /* QUANTIZED: 32, 64 or 128, dividing D and Dv; else 0 */
    int64_t bits;         /* QUANTIZED: 4 or 8; else 0 */
    const int64_t *left_padding; /* BATCH, BATCH_ROTATING: [batch] (each >= 0) or NULL = all 0:
                                    row b starts at offset -left_padding[b] [18]; else NULL */
} attnconf_cache_config;

/* Arguments of cache_make_mask. */
typedef struct attnconf_cache_mask_args {
    uint32_t struct_size;  /* sizeof(attnconf_cache_mask_args) as compiled by the host */
    int64_t n;             /* queries: the n tokens the NEXT update appends (n >= 1) */
    int64_t window;        /* 0 = the cache's own (rotating: max_size); W >= 1: a model's
                                 sliding window, counted in slots (CHUNKED: must be 0) */
    attnconf_tensor *keep; /* host-allocated BOOL (B, 1, n, L), contiguous, L = the length
                                 the state will have after that update (EINVAL if not); the
                                 backend writes every element (1 = attend) */
} attnconf_cache_mask_args;

/* Arguments of cache_state.  The backend always sets batch and length.  When keys is NULL it
 * writes nothing else (a size query); otherwise offsets, positions, keys and values are host
 * buffers for exactly that batch and length (EINVAL if their shapes differ), and the backend
 * fills them: slot s of row b holds the token at absolute position positions[b*L + s]
 * (increasing along s), or is a padding slot (-1) whose keys/values are not compared. */
typedef struct attnconf_cache_state {
    uint32_t struct_size;    /* sizeof(attnconf_cache_state) as compiled by the host */
    int64_t batch;           /* out: B (filter/extend change it) */
    int64_t length;          /* out: L, the slots the next attention sees, padding included */
    int64_t *offsets;        /* [B] out: tokens written to row b minus its left padding (a batched
                                 cache's row offsets may be negative before its prompt) */
    int64_t *positions;      /* [B*L] out */
    attnconf_tensor *keys;   /* (B, Hkv, L, D) host-allocated, contiguous, cache dtype; values
                                 as stored (dequantized for a quantized cache) */
    attnconf_tensor *values; /* (B, Hkv, L, Dv) likewise */
} attnconf_cache_state;

/* Arguments of cache_prepare (batched cache, before its first update) [18]: */
typedef struct attnconf_cache_prepare_args {
    uint32_t struct_size;        /* sizeof(attnconf_cache_prepare_args) as compiled by the host */
    const int64_t *left_padding; /* [B] or NULL: more left padding (each >= 0) */
    const int64_t *lengths;      /* [B] or NULL: only the next lengths[b] tokens appended to row b
                                 are valid, the rest is right padding until cache_finalize moves
                                 it to the left */
} attnconf_cache_prepare_args;

/* ---- Paged KV caches (sixth revision; SPEC.md clause 23).  A pool of num_pages pages of P
 * slots each, K pages (num_pages, Hkv, P, D) and V pages (num_pages, Hkv, P, Dv) in the cache
 * dtype, any strides (vLLM's NHD pool (num_pages, P, Hkv, D) is a permuted view of it).
 * Sequence b's logical key p (0 <= p < L_b) lives in page block_table[b * table_width + p / P],
 * slot p % P.  Entries of a row at or past ceil(L_b / P), slots p >= L_b of the last page and
 * pages no row lists are never read (the host poisons them with NaN, inf or stale finite
 * values); the last page holds last_page_len = L_b - (n_b - 1) * P slots, 1 <= it <= P.  Two
 * rows may list the same page (a shared prefix): it is read-only to both. ---- */
typedef struct attnconf_paged_args {
    uint32_t struct_size;           /* sizeof(attnconf_paged_args) as compiled by the host */
    const attnconf_tensor *q;       /* (B, Hq, Lq, D): row b's first query_lens[b] rows */
    const attnconf_tensor *k_pages; /* (num_pages, Hkv, P, D), any strides, read-only */
    const attnconf_tensor *v_pages; /* (num_pages, Hkv, P, Dv), same dtype, read-only */
    const int32_t *block_table;     /* [B * table_width]; row b at b * table_width */
    int64_t table_width;            /* entries per row, >= 1 */
    const int64_t *seq_lens;        /* [B] L_b >= 0: keys of sequence b, its new tokens
                                       (already appended) included; ceil(L_b/P) <= table_width */
    const int64_t *query_lens;      /* [B] or NULL (= Lq for every row): 0 <= q_b <= Lq and
                                       q_b <= L_b; query i < q_b of row b is at position
                                       L_b - q_b + i (bottom-right per sequence); rows i >= q_b
                                       are padding and their output is exactly 0 */
    int32_t causal;                 /* 1 = the query at position p keeps keys j <= p; 0 = every
                                       key j < L_b (decode needs neither: q_b = 1 sees all) */
    int64_t window;                 /* 0 = none; W >= 1 (needs causal): also drop j <= p - W */
    int32_t has_scale;              /* 0 = 1/sqrt(D) */
    double scale;
    /* The terms of clauses 20-22, as in attnconf_sdpa_args (set only for a backend that
     * reports their bits; 0 / NULL = none).  ALiBi's p is the position above; chunk counts
     * from position 0 (there is no left padding in a paged sequence). */
    double softcap;
    double alibi_max_bias;
    const float *sinks; /* [Hq] or NULL */
    int64_t chunk;
    /* Output, as attnconf_sdpa_args.out: (B, Hq, Lq, Dv), contiguous, dtype = q's; the
     * backend must set out->dtype to what it produced. */
    attnconf_tensor *out;
    size_t out_capacity;
} attnconf_paged_args;

/* Arguments of paged_append: write new tokens into the pool through the block table. */
typedef struct attnconf_paged_append_args {
    uint32_t struct_size;       /* sizeof(attnconf_paged_append_args) as compiled by the host */
    const attnconf_tensor *k;   /* (B, Hkv, S, D) new keys, any strides, cache dtype */
    const attnconf_tensor *v;   /* (B, Hkv, S, Dv) new values */
    attnconf_tensor *k_pages;   /* (num_pages, Hkv, P, D): written */
    attnconf_tensor *v_pages;   /* (num_pages, Hkv, P, Dv): written */
    const int32_t *block_table; /* [B * table_width] */
    int64_t table_width;
    const int64_t *seq_lens; /* [B] keys of row b BEFORE the append */
    const int64_t *new_lens; /* [B] or NULL (= S each): 0 <= n_b <= S tokens to append to
                                    row b: token t (t < n_b) goes to logical position
                                    seq_lens[b] + t; tokens t >= n_b are padding, never written */
} attnconf_paged_append_args;

/* Where a backend's buffers live (the values of DLPack's DLDeviceType). */
typedef enum attnconf_device_type {
    ATTNCONF_DEVICE_CPU = 1, /* host memory (every backend without ATTNCONF_CAP_DEVICE) */
    ATTNCONF_DEVICE_CUDA = 2,
    ATTNCONF_DEVICE_OPENCL = 4,
    ATTNCONF_DEVICE_METAL = 8,
    ATTNCONF_DEVICE_VULKAN = 7,
    ATTNCONF_DEVICE_ROCM = 10
} attnconf_device_type;

typedef struct attnconf_device_info {
    uint32_t struct_size;  /* sizeof(attnconf_device_info) as compiled by the host */
    int32_t device_type;   /* attnconf_device_type */
    int32_t device_id;     /* ordinal within the type */
    char name[128];        /* e.g. "NVIDIA H200", "pthread-AMD EPYC (PoCL)"; NUL-terminated */
    uint64_t memory_bytes; /* device memory, 0 if unknown */
} attnconf_device_info;

/* A backend option, from `attnconf run --backend-option KEY=VALUE` (repeatable).  Both strings
 * are borrowed for the duration of the open call only. */
typedef struct attnconf_option {
    const char *key;   /* [a-z0-9_.-]+ */
    const char *value; /* any text, possibly empty */
} attnconf_option;

/* One option a backend accepts, for the host's validation and for `attnconf backend-info`. */
typedef struct attnconf_option_info {
    const char *key;           /* [a-z0-9_.-]+; NULL terminates the list */
    const char *default_value; /* what the backend uses when the option is absent; NULL = none */
    const char *help;          /* one line: meaning and accepted values */
} attnconf_option_info;

typedef struct attnconf_backend {
    /* ---- ABI version 1 ---- */
    uint32_t abi_version; /* ATTNCONF_ABI_VERSION the backend was built against */
    uint32_t struct_size; /* sizeof(attnconf_backend) as compiled by the backend */
    const char *name;     /* short identifier, [a-z0-9_-]+, e.g. "reference" */
    const char *version;  /* free-form version of the implementation */

    /* Create a context (required).  Returns ATTNCONF_OK and sets *ctx, or an error code (then
     * last_error cannot be asked; the host reports the code alone). */
    int (*open)(void **ctx);
    /* Destroy a context (required).  ctx may be NULL. */
    void (*close)(void *ctx);
    /* Capability bits, ATTNCONF_CAP_* (required). */
    uint64_t (*capabilities)(void *ctx);
    /* Scaled-dot-product attention (required).  Returns ATTNCONF_OK or an error code. */
    int (*sdpa)(void *ctx, const attnconf_sdpa_args *args);
    /* Batched mask builder (optional, NULL if absent; then ATTNCONF_CAP_BUILD_MASK is unset). */
    int (*build_mask)(void *ctx, const attnconf_mask_args *args);
    /* Text of the last error on this context (required); never NULL, "" if none.  Valid until
     * the next call on the context.  Give the library's message whole: the host keeps the first
     * 200 and last 600 bytes of a text over 840 bytes (with " [... N bytes ...] " between). */
    const char *(*last_error)(void *ctx);

    /* ---- ABI version 1, second revision: backend options.  A host reads these only when
     * struct_size covers them (a first-revision table simply takes no options). ---- */
    /* The options the backend accepts, terminated by an entry whose key is NULL; NULL (or an
     * empty list) = none.  The host refuses a KEY not listed here before calling anything, so
     * a typo never reaches the backend silently ignored. */
    const attnconf_option_info *options;
    /* Create a context with options (optional; required when `options` is non-empty).  The
     * host calls it instead of `open` whenever the user gave at least one option, with every
     * key already checked against `options`; each key occurs at most once.  Returns
     * ATTNCONF_OK and sets *ctx, or ATTNCONF_EINVAL (a value it does not accept) /
     * ATTNCONF_ENOTSUP (a valid value this build cannot serve, e.g. a GPU device without one)
     * / another code, with a one-line reason written to err (errlen bytes, NUL-terminated). */
    int (*open_with_options)(void **ctx, const attnconf_option *options, size_t n_options,
                             char *err, size_t errlen);

    /* ---- ABI version 1, fourth revision: the KV cache (SPEC.md clauses 14-18).  A host reads
     * these only when struct_size covers them, and calls them only for a kind whose
     * ATTNCONF_CAP_CACHE_* bit the backend reports.  A cache is an opaque handle made by
     * cache_create or cache_merge on one context and used only with that context.  Every member
     * returns ATTNCONF_OK or an error code with detail in last_error; after an error the cache
     * is unchanged.  See the attnconf_cache_* structs above for the arguments. ---- */
    /* Create an empty cache (offset 0 in every row).  EINVAL: a parameter out of range (see
     * attnconf_cache_config); ENOTSUP: a valid kind or parameter this backend does not serve. */
    int (*cache_create)(void *ctx, const attnconf_cache_config *cfg, void **cache);
    /* Append S new tokens to every row: k (B,Hkv,S,D) and v (B,Hkv,S,Dv), any strides, in the
     * cache dtype (else EDTYPE); S >= 1.  Afterwards `cache_state` shows what the next attention
     * sees (the keys mlx-lm's update_and_fetch returns, in time order).  k and v are borrowed
     * for the call only (the host unmaps them after it): the cache copies what it keeps.
     * EINVAL: a shape that does not match the cache. */
    int (*cache_update)(void *ctx, void *cache, const attnconf_tensor *k, const attnconf_tensor *v);
    /* Remove the newest n tokens: *trimmed = the number removed, min(n, trimmable) [14]; a
     * rotating cache whose offset reached max_size trims nothing (*trimmed = 0) [15].
     * EINVAL: n < 0 (the cache is unchanged). */
    int (*cache_trim)(void *ctx, void *cache, int64_t n, int64_t *trimmed);
    /* The keep mask for the next args->n queries, called BEFORE the update that appends their
     * n tokens (as mlx-lm's make_mask): the key axis is the slots `cache_state` will report
     * after that update, in the same order.  Causal by absolute position, the cache's window
     * (rotating) or chunk (chunked), args->window when given, never a padding slot [14-18]. */
    int (*cache_make_mask)(void *ctx, void *cache, const attnconf_cache_mask_args *args);
    /* What the cache holds (attnconf_cache_state): call with keys == NULL for the sizes, then
     * with host buffers of those sizes.  The host compares offsets, positions and (on non-pad
     * slots) keys/values exactly. */
    int (*cache_state)(void *ctx, void *cache, attnconf_cache_state *st);
    /* Free a cache (NULL is a no-op).  The host destroys every cache before closing ctx. */
    void (*cache_destroy)(void *ctx, void *cache);
    /* Batched cache only (ATTNCONF_CAP_CACHE_BATCH; EINVAL on any other cache): */
    /* Keep rows rows[0..n) in that order (each in 0..B-1, n >= 1), then drop the leading slots
     * that are padding in every remaining row [18]. */
    int (*cache_filter)(void *ctx, void *cache, const int64_t *rows, int64_t n);
    /* Append other's rows below cache's, left-padding the shorter side so both end at the same
     * slot [18].  other is unchanged and still owned by the caller. */
    int (*cache_extend)(void *ctx, void *cache, const void *other);
    /* A new BATCH (BATCH_ROTATING) cache whose row i is caches[i] (each a batch-1 STANDARD
     * (ROTATING, keep 0) cache, n >= 1), left-padded to the longest [18].  Inputs unchanged. */
    int (*cache_merge)(void *ctx, void *const *caches, int64_t n, void **out);
    /* Declare padding before a (possibly chunked) prefill (attnconf_cache_prepare_args) [18]. */
    int (*cache_prepare)(void *ctx, void *cache, const attnconf_cache_prepare_args *args);
    /* After the prefill: turn the declared right padding into left padding [18]. */
    int (*cache_finalize)(void *ctx, void *cache);

    /* ---- ABI version 1, sixth revision: paged KV attention (SPEC.md clause 23).  A host
     * reads these only when struct_size covers them and calls them only when the backend
     * reports ATTNCONF_CAP_PAGED.  The host owns the pool; the backend keeps nothing between
     * calls.  Errors (nothing written, pool unchanged): EINVAL for a page index outside
     * 0..num_pages-1 among the entries a call must use, a length beyond the table
     * (ceil(L/P) > table_width, for paged_append the length after the append), a negative
     * length, query_lens[b] > Lq or > L_b, new_lens[b] > S, shapes that disagree (B, Hkv, P,
     * D, Dv), Hq % Hkv != 0, window/chunk without causal and every term value clause 20-22
     * rejects, two new tokens of one append mapping to the same (page, slot); EDTYPE for
     * q/k/v/pages of different dtypes.  An append must write exactly the slots of its new
     * tokens: every other byte of the pool stays as it was. ---- */
    int (*paged_append)(void *ctx, const attnconf_paged_append_args *args);
    int (*paged_sdpa)(void *ctx, const attnconf_paged_args *args);

    /* ---- ABI version 1, seventh revision: device memory (ATTNCONF_CAP_DEVICE).  A host reads
     * these only when struct_size covers them and uses them only when the backend reports the
     * bit; then all six are required.  A device handle is an opaque pointer-sized value the
     * backend returns from device_alloc (it need not be an address the host can read); in
     * attnconf_tensor.data it stands for the buffer's first byte, and strides index elements
     * from there.  Offsets into a handle are given explicitly (copy_*: offset in bytes). ---- */
    int (*device_info)(void *ctx, attnconf_device_info *info);
    /* Allocate `bytes` (>= 1) of device memory: ENOMEM when the device has no room. */
    int (*device_alloc)(void *ctx, size_t bytes, void **handle);
    void (*device_free)(void *ctx, void *handle); /* NULL is a no-op */
    int (*copy_to_device)(void *ctx, void *handle, size_t offset, const void *src, size_t bytes);
    int (*copy_from_device)(void *ctx, void *dst, const void *handle, size_t offset, size_t bytes);
    /* Wait until every call made so far on ctx has finished; sdpa may return before its kernel
     * ends (asynchronous), so a host reads results and stops timers only after this. */
    int (*synchronize)(void *ctx);
} attnconf_backend;

typedef const attnconf_backend *(*attnconf_backend_entry_fn)(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif
#endif
