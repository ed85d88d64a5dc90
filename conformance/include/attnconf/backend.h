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
 * Results: values are compared with |got - exp| <= atol + rtol*|exp| per case; NaN must meet NaN
 * and inf the same-signed inf.  Returning ATTNCONF_ENOTSUP counts as NOT_SUPPORTED, except in a
 * case that must be rejected, where only the expected code (EDTYPE / EINVAL) passes.
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
    ATTNCONF_EINVAL = -1,  /* invalid arguments: rank, shape, broadcast, value range */
    ATTNCONF_EDTYPE = -2,  /* dtype rejected (q/k/v mismatch, a mask dtype that would upcast) */
    ATTNCONF_ENOMEM = -3,  /* out of memory */
    ATTNCONF_ENOTSUP = -4, /* valid input the backend does not implement */
    ATTNCONF_EBACKEND = -5 /* any other backend failure */
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
 * Attention tensors are (B, H, L, D).  Host-memory only in ABI v1. */
typedef struct attnconf_tensor {
    void *data;
    int32_t dtype;                      /* attnconf_dtype */
    int32_t ndim;                       /* 0..4 */
    int64_t shape[ATTNCONF_MAX_RANK];
    int64_t strides[ATTNCONF_MAX_RANK]; /* elements; may be permuted (non-contiguous) */
} attnconf_tensor;

/* Capability bits returned by `capabilities`.  A case declares the bits it needs; a backend
 * lacking one gets NOT_SUPPORTED for that case (neither pass nor fail). */
#define ATTNCONF_CAP_F32          (1ull << 0)  /* q/k/v/out in f32 */
#define ATTNCONF_CAP_F16          (1ull << 1)
#define ATTNCONF_CAP_BF16         (1ull << 2)
#define ATTNCONF_CAP_MASK_BOOL    (1ull << 3)  /* boolean mask tensor */
#define ATTNCONF_CAP_MASK_ADD     (1ull << 4)  /* additive mask tensor */
#define ATTNCONF_CAP_CAUSAL       (1ull << 5)  /* causal flag, bottom-right */
#define ATTNCONF_CAP_CAUSAL_OFFSET (1ull << 6) /* causal flag with an explicit offset */
#define ATTNCONF_CAP_GQA          (1ull << 7)  /* Hq > Hkv */
#define ATTNCONF_CAP_DV_NE_D      (1ull << 8)  /* Dv != D */
#define ATTNCONF_CAP_STRIDED      (1ull << 9)  /* non-contiguous q/k/v */
#define ATTNCONF_CAP_SCALE        (1ull << 10) /* an explicit scale */
#define ATTNCONF_CAP_MASK_BCAST   (1ull << 11) /* mask tensors of any broadcastable shape */
#define ATTNCONF_CAP_BUILD_MASK   (1ull << 12) /* build_mask: causal + offset */
#define ATTNCONF_CAP_WINDOW       (1ull << 13) /* build_mask: sliding window */
#define ATTNCONF_CAP_LENGTHS      (1ull << 14) /* build_mask: per-sequence lengths */
#define ATTNCONF_CAP_LEFT_PAD     (1ull << 15) /* build_mask: per-sequence left padding */

/* Arguments of `sdpa`.  out = softmax(scale * q.k^T + mask) . v, semantics as attnref/sdpa.h:
 * q (B,Hq,Lq,D), k (B,Hkv,Lk,D), v (B,Hkv,Lk,Dv), out (B,Hq,Lq,Dv). */
typedef struct attnconf_sdpa_args {
    uint32_t struct_size;         /* sizeof(attnconf_sdpa_args) as compiled by the host */
    const attnconf_tensor *q;
    const attnconf_tensor *k;
    const attnconf_tensor *v;
    const attnconf_tensor *mask;  /* NULL, BOOL (true = attend) or additive float; rank <= 4,
                                     broadcast to (B,Hq,Lq,Lk) */
    int32_t causal;               /* 1 = causal mask; then mask is NULL */
    int32_t has_causal_offset;    /* 0 = bottom-right: offset = Lk - Lq */
    int64_t causal_offset;        /* query i keeps key j iff j <= causal_offset + i */
    int32_t has_scale;            /* 0 = 1/sqrt(D) */
    double scale;
    /* Output.  The host sets data (a buffer of out_capacity bytes), shape (B,Hq,Lq,Dv),
     * contiguous strides and dtype = q's dtype.  The backend writes the result and MUST set
     * out->dtype (and strides, if it writes another layout) to what it actually produced, so
     * the host can report a silent upcast as INCORRECT_DTYPE. */
    attnconf_tensor *out;
    size_t out_capacity;          /* bytes at out->data; at least numel * 4 */
} attnconf_sdpa_args;

/* Arguments of `build_mask` (semantics as attnref/mask.h). */
typedef struct attnconf_mask_args {
    uint32_t struct_size;         /* sizeof(attnconf_mask_args) as compiled by the host */
    int64_t lq;                   /* new queries */
    int64_t offset;               /* tokens already in the KV cache */
    int64_t window;               /* sliding window in keys (own included); 0 = none */
    int64_t batch;                /* B (>= 1) when lengths or left_padding is set; else 1 */
    const int64_t *lengths;       /* [batch] total valid keys, cache included; NULL = none */
    const int64_t *left_padding;  /* [batch] first valid key; NULL = none */
    attnconf_tensor *keep;        /* host-allocated BOOL (B,1,Lq,offset+Lq), contiguous */
} attnconf_mask_args;

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
    uint32_t abi_version;   /* ATTNCONF_ABI_VERSION the backend was built against */
    uint32_t struct_size;   /* sizeof(attnconf_backend) as compiled by the backend */
    const char *name;       /* short identifier, [a-z0-9_-]+, e.g. "reference" */
    const char *version;    /* free-form version of the implementation */

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
     * the next call on the context. */
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
} attnconf_backend;

typedef const attnconf_backend *(*attnconf_backend_entry_fn)(uint32_t host_abi_version);

#ifdef __cplusplus
}
#endif
#endif
