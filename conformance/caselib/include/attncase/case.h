/* attncase/case.h — in-memory model of a golden case (case format v4, cases/FORMAT.md), its
 * YAML reader and writer, and the seeded input generator.
 *
 * One library owns the format so that casegen (the writer) and the harness (the reader) cannot
 * drift apart.  Reading is strict: unknown keys, wrong types, bad numbers, sizes over the limits
 * and inconsistent shapes are errors that name the file, line and field.
 */
#ifndef ATTNCASE_CASE_H
#define ATTNCASE_CASE_H

#include <stdint.h>
#include <stdio.h>

#include "attncase/ylimits.h"
#include "attnref/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACASE_FORMAT_VERSION 4

/* Limits that keep a malformed or hostile case file from causing a huge allocation. */
#define ACASE_MAX_TENSOR_NUMEL ((int64_t)1 << 24) /* per tensor */
/* Per case file: all the elements the reader materialises (every tensor, expected value, cache
 * step state and keep mask), checked as a running total before each allocation, so a file of
 * many tensors each within ACASE_MAX_TENSOR_NUMEL cannot add up to a huge allocation
 * (committed: 1051648, sdpa.sizes.lk1025_d256_dv256.f32; at most 16 MiB of f32). */
#define ACASE_MAX_CASE_NUMEL ((int64_t)1 << 22)
#define ACASE_MAX_FILE_BYTES ((int64_t)16 << 20) /* per case file: bounds libyaml's memory */
#define ACASE_MAX_BATCH 4096                     /* lengths / left_padding entries */
#define ACASE_MAX_RULES 16
/* The bounds on the YAML stream (ACASE_MAX_DEPTH, ACASE_MAX_NODES, ACASE_MAX_SCALAR_BYTES) are
 * attncase/ylimits.h's, checked while libyaml parses, before the document tree is built, so a
 * hostile file cannot make parsing slow or large (cases/FORMAT.md, "Files"). */
#define ACASE_ID_MAX 128
#define ACASE_MAX_ROW_PAD 64 /* format v3 row_pad */

typedef enum acase_op {
    ACASE_OP_MASK = 1,
    ACASE_OP_SDPA = 2,
    ACASE_OP_CACHE = 3, /* a sequence of KV cache operations (attncase/cache_case.h) */
    ACASE_OP_PAGED = 4  /* format v4: appends and attentions on a paged KV cache
                           (attncase/paged_case.h) */
} acase_op;

struct acase_cache; /* the cache part of an ACASE_OP_CACHE case, attncase/cache_case.h */
struct acase_paged; /* the paged part of an ACASE_OP_PAGED case, attncase/paged_case.h */

/* Physical layout of a rank-4 q/k/v input.  BHLD: contiguous (B,H,L,D).  BLHD: the buffer is a
 * contiguous (B,L,H,D) array and the backend sees it as (B,H,L,D) through permuted strides. */
typedef enum acase_layout { ACASE_LAYOUT_BHLD = 0, ACASE_LAYOUT_BLHD = 1 } acase_layout;

typedef enum acase_source { ACASE_SRC_INLINE = 0, ACASE_SRC_UNIFORM = 1 } acase_source;

/* An input tensor.  `data` always holds the materialised values in logical row-major order of
 * `shape`, in the storage of `dtype` (float, uint16_t bit patterns, or uint8_t 0/1). */
typedef struct acase_tensor {
    int present; /* 0: the input is absent (only the mask may be) */
    attnref_dtype dtype;
    int32_t ndim;
    int64_t shape[4];
    acase_layout layout;
    /* Format v2 `stride0: [dims]`: bit d set = the harness hands the backend this tensor with
     * stride 0 on dimension d (d in 0..1: batch or heads; rank 4 only).  `data` is still the
     * full logical tensor, constant along those dimensions; the file stores one slice. */
    uint8_t stride0;
    /* Format v3 `row_pad: N` (rank-4 q/k/v, 1..ACASE_MAX_ROW_PAD): the harness lays each row of
     * the last dimension out N elements apart from the next (NaN poison between), so the
     * backend sees strides[2] = D + N (and so on up); 0 = none. */
    int64_t row_pad;
    /* Format v3 `view: k_prefix` (v only): the backend sees v as the first Dv columns of k's
     * own buffer (V a prefix view of K, as absorbed MLA stores it); `data` still holds v's
     * values, which must equal those columns of k. */
    int view_k_prefix;
    acase_source source;
    uint64_t seed; /* ACASE_SRC_UNIFORM: SplitMix64 seed */
    double lo, hi; /* ACASE_SRC_UNIFORM: half-open range [lo, hi) */
    int64_t numel;
    void *data; /* owned; numel * attnref_dtype_size(dtype) bytes */
} acase_tensor;

/* Per-row check modes of an SDPA output (`expected.row_checks`, FORMAT.md).  A row is one
 * (b, h, i) of the (B, Hq, Lq, Dv) output: flat row r = (b*Hq + h)*Lq + i covers the elements
 * [r*Dv, (r+1)*Dv).
 *   CLOSE:  every element within the tolerance (|got - exp| <= ulps * ulp(exp) + row_atol[r],
 *           SPEC.md clause 13; NaN must meet NaN, an infinity the same infinity) — the default
 *           for every row;
 *   EXACT:  got == exp as doubles for every element (+0 and -0 both match 0; NaN only where exp
 *           is NaN);
 *   FINITE: every element finite; the expected value is ignored (implementation-defined, SPEC.md
 *           clause 11). */
enum { ACASE_CHECK_CLOSE = 0, ACASE_CHECK_EXACT = 1, ACASE_CHECK_FINITE = 2 };

/* Expected result.  Exactly one of: error (a rejection), mask keep values, SDPA output. */
typedef struct acase_expected {
    int error;           /* 0, or the attnref status the input must be rejected with
                                  (ATTNREF_EDTYPE or ATTNREF_EINVAL) */
    attnref_dtype dtype; /* output dtype (BOOL for mask cases) */
    int32_t ndim;
    int64_t shape[4];
    int64_t numel;
    double *values; /* owned; f64 reference values (0/1 for mask cases) */
    /* SDPA output only: the check mode of each row, ACASE_CHECK_*.  NULL (and nrows 0): every
     * row is CLOSE.  Otherwise nrows entries, nrows = B*Hq*Lq (the product of every extent but
     * the last); allocate with acase_expected_alloc_rows. */
    uint8_t *row_check; /* owned, [nrows], or NULL */
    int64_t nrows;
} acase_expected;

typedef struct acase {
    char id[ACASE_ID_MAX]; /* hierarchical, [a-z0-9_]+ joined by '.', >= 3 components */
    char *description;     /* owned */
    int nrules;
    char *rules[ACASE_MAX_RULES]; /* owned; spec rule ids, e.g. "mask.causal" */
    acase_op op;
    uint64_t requires; /* ATTNCONF_CAP_* bits the backend must have */

    /* op == ACASE_OP_MASK.  batch: the number of lengths / left_padding entries; the reader
     * sets 1 when neither is given.  kv_len: 0 = offset + lq (format v2 `kv_len`: a static key
     * buffer, keep shape (B, 1, lq, kv_len)).
     * op == ACASE_OP_SDPA (format v2, the kernels' own mask parameters, SPEC clause 19):
     * window (0 = none; needs causal), lengths / left_padding ([batch] with batch == B, or
     * NULL) are passed as attnconf_sdpa_args.window / .lengths / .left_padding. */
    int64_t lq, offset, window, batch, kv_len;
    int64_t *lengths;      /* owned, [batch], or NULL */
    int64_t *left_padding; /* owned, [batch], or NULL */
    /* Format v3, the terms of current models (SPEC clauses 20-22; cases/FORMAT.md, params).
     * op == ACASE_OP_SDPA: all of them; op == ACASE_OP_MASK: chunk, segment_ids, block_ids.
     * segment_ids / block_ids are batch rows of ids_len (= Lk) entries, row-major; batch is
     * then their row count (and agrees with lengths / left_padding when those are given). */
    double softcap;        /* 0 = none */
    double alibi_max_bias; /* 0 = none */
    double *sinks;         /* owned, [nsinks] (= Hq), or NULL */
    int64_t nsinks;
    int64_t chunk;        /* 0 = none */
    int64_t *segment_ids; /* owned, [batch * ids_len], or NULL */
    int64_t *block_ids;   /* owned, [batch * ids_len], or NULL */
    int64_t ids_len;

    /* op == ACASE_OP_SDPA */
    int has_scale;
    double scale;
    int causal;
    int has_causal_offset;
    int64_t causal_offset;
    acase_tensor q, k, v, mask;

    acase_expected expected;
    /* Tolerance of a CLOSE row (format v2 `tolerance: {ulps, row_atol}`, SPEC clause 13): an
     * element e of row r passes iff |got - e| <= ulps * attnref_dtype_ulp(e, out dtype) + row_atol[r].
     * row_atol: owned, [expected.nrows] (allocated with the row checks), finite, >= 0. */
    double ulps;
    double *row_atol;

    /* op == ACASE_OP_CACHE: owned, NULL otherwise. */
    struct acase_cache *cache;
    /* op == ACASE_OP_PAGED: owned, NULL otherwise. */
    struct acase_paged *paged;

    char *path; /* owned; the file it was read from (NULL if built in memory) */
} acase;

/* Family of an id: its first two components ("sdpa.causal" for "sdpa.causal.lq_lt_lk.f16").
 * Writes at most n bytes including the NUL. */
void acase_family(const char *id, char *out, size_t n);

/* Capability names used in `requires:` (e.g. "f16", "mask.bool", "gqa") <-> ATTNCONF_CAP_* bit.
 * acase_cap_from_name returns 0 for an unknown name. */
uint64_t acase_cap_from_name(const char *name);
const char *acase_cap_name(uint64_t bit);
/* The names of the capability bits set in `bits`, in bit order, joined by `sep`, into buf (n
 * bytes, always terminated; a bit without a name is "bitN"); "" when no bit is set. */
void acase_caps_text(uint64_t bits, const char *sep, char *buf, size_t n);

/* The capabilities implied by a case's content (dtypes, mask kind, GQA, Dv != D, layouts,
 * explicit scale, causal offset, mask broadcast, mask-builder features). */
uint64_t acase_derive_requires(const acase *c);

/* The cross-field rules of FORMAT.md on an in-memory case (what acase_load_file checks after
 * parsing, and what acase_write checks before writing): id and rule grammar, shapes and numel,
 * expected shape consistent with the inputs/params, tolerance, and requires a superset of
 * acase_derive_requires.  Returns 0, or -1 with "field.path: reason" in err. */
int acase_validate(const acase *c, char *err, size_t errlen);
/* acase_validate with the dotted field path (fieldlen bytes) and the reason (whylen bytes)
 * apart, so a reader can point the error at the field's line. */
int acase_validate_field(const acase *c, char *field, size_t fieldlen, char *why, size_t whylen);

/* The generator of format v1 (FORMAT.md, "Generated inputs"): SplitMix64 from `seed`; for each
 * element in logical row-major order x = lo + (hi - lo) * ((u >> 11) * 2^-53) in binary64, then
 * rounded to f32 (RNE), then to the tensor dtype (RNE).  Fills t->data (allocating it). */
int acase_tensor_generate(acase_tensor *t, char *err, size_t errlen);

uint64_t acase_splitmix64_next(uint64_t *state);

/* Element count of a shape: 0 (with *numel) if the rank is 0..4, no extent is negative and the
 * product (overflow-checked) is at most ACASE_MAX_TENSOR_NUMEL; else -1 with the reason in why
 * (which may be NULL).
 * Everything that sizes a buffer from a shape it did not make checks it here first. */
int acase_numel(int32_t ndim, const int64_t *shape, int64_t *numel, char *why, size_t whylen);

/* Allocate t->data for the current dtype/shape (numel computed, limits checked), zeroed. */
int acase_tensor_alloc(acase_tensor *t, char *err, size_t errlen);
/* acase_expected_alloc: values for the current shape, zeroed; it also frees row_check (the
 * shape may have changed) and sets nrows 0. */
int acase_expected_alloc(acase_expected *e, char *err, size_t errlen);
/* Allocate e->row_check for the current shape, zeroed (every row CLOSE), replacing any previous
 * one: nrows = the product of every extent but the last (numel / shape[ndim-1] when that is
 * non-zero; with Dv == 0 the rows exist but are empty; a zero leading extent gives 0 rows).
 * Needs rank >= 1.  Returns 0, or -1 with err set. */
int acase_expected_alloc_rows(acase_expected *e, char *err, size_t errlen);

/* The SDPA error bound of SPEC clause 13 for an op: sdpa case with expected.out: computes, from
 * the case's inputs and parameters, ulps and one row_atol per row (what casegen writes and
 * `attnconf fuzz` uses), with the clause's safety factor.  row_atol must hold nrows entries.
 * Returns 0, or -1 with err set. */
int acase_sdpa_bound(const acase *c, double *ulps, double *row_atol, char *err, size_t errlen);

/* Rows of an SDPA output (the product of every extent of e's shape but the last: B*Hq*Lq), or
 * -1 for rank 0 or a shape over the limits. */
int64_t acase_expected_rows(const acase_expected *e);
/* Allocate c->row_atol for the rows of c->expected (shape already set), zeroed, replacing any
 * previous one.  Returns 0, or -1 with err set. */
int acase_row_atol_alloc(acase *c, char *err, size_t errlen);

/* Give t (rank 4, currently holding its STORED slice: extent 1 on every dimension in stride0)
 * the logical `shape` by repeating the slice along the stride0 dimensions (bit d = dimension d,
 * d in 0..1), and set t->stride0.  What the reader does with `stride0:`; casegen builds such a
 * tensor the same way.  Returns 0, or -1 with err set (t unchanged). */
int acase_tensor_broadcast(acase_tensor *t, uint8_t stride0, const int64_t shape[4], char *err,
                           size_t errlen);

/* Load one case file.  On success returns 0 and *out (free with acase_free).  On failure returns
 * -1 and writes "path:line:col: field: reason" into err, or "path: reason" for a file that
 * cannot be read: a file that is not a regular file or a link to one (a FIFO, a device, a
 * dangling link) is refused before it is opened. */
int acase_load_file(const char *path, acase **out, char *err, size_t errlen);
/* The top-level `id:` of the case file at path, read without loading the rest (a streaming
 * parse that stops at the id, or after a bounded number of events).  Returns 0 with the id in
 * id[idlen], or -1 when it cannot tell (unreadable file, no scalar id near the top, id longer
 * than idlen - 1): only a hint for selecting files, never a check; acase_load_file decides
 * whether the file is a valid case and reports why not. */
int acase_peek_id(const char *path, char *id, size_t idlen);
/* The same from a buffer of len bytes (at most ACASE_MAX_FILE_BYTES); name is used in messages
 * and as the case's path.  Both read through attncase/yread.h (its bounded first pass first). */
int acase_load_mem(const char *name, const void *data, size_t len, acase **out, char *err,
                   size_t errlen);

/* Write a case as a v1 YAML document.  Deterministic: the same case gives the same bytes.
 * Returns 0, or -1 with err set. */
int acase_write(const acase *c, FILE *f, char *err, size_t errlen);

/* All *.yaml files under dir (recursively), sorted by path; *paths owned by the caller
 * (free each, then the array). Returns the count, or -1 with err set.  Names starting with '.'
 * are skipped, and links to directories are not followed; every other *.yaml that is not a
 * directory is listed, also a dangling link or a FIFO, which acase_load_file then refuses
 * (a case directory holding one is an error, not a case fewer). */
int acase_list_dir(const char *dir, char ***paths, char *err, size_t errlen);

acase *acase_new(void);
void acase_free(acase *c);

#ifdef __cplusplus
}
#endif
#endif
