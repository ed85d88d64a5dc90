/* fuzz.h — `attnconf fuzz`: differential random testing of a backend's sdpa against the
 * reference, metamorphic checks, and shrinking of a failing call (internal interfaces).
 *
 * A random call is an hf_call: shapes, dtypes, mask and parameters, and the input values as
 * doubles (each exactly representable in its tensor's dtype).  hf_build turns it into an
 * in-memory acase with the reference's expected output, row checks and error bound, which runs
 * through the same path as a golden case (run_case in the worker, guarded buffers, the
 * harness's comparator); a failing one is written as a YAML case file.  Shrinking edits the
 * hf_call (slicing tensors keeps every remaining value) and rebuilds the case.
 */
#ifndef ATTNCONF_FUZZ_H
#define ATTNCONF_FUZZ_H

#include <stdint.h>

#include "attncase/case.h"
#include "attnref/sdpa.h"

/* Mask kinds of a call. */
enum { HF_MASK_NONE = 0, HF_MASK_BOOL = 1, HF_MASK_ADD = 2 };

typedef struct hf_call {
    attnref_dtype dt; /* q, k, v and output dtype */
    int64_t B, Hq, Hkv, Lq, Lk, D, Dv;
    acase_layout layout[3]; /* q, k, v */
    uint8_t stride0[3];     /* q, k, v: bit 0 batch, bit 1 heads (values constant there) */
    int has_scale;
    double scale;
    int causal, has_offset;
    int64_t offset;
    int64_t window;        /* 0 = none (needs causal) */
    int64_t *lengths;      /* [B] or NULL */
    int64_t *left_padding; /* [B] or NULL */
    int mask_kind;         /* HF_MASK_* */
    attnref_dtype mask_dt;
    int32_t mask_ndim;        /* 1..4: the mask's rank as passed */
    int64_t mshape[4];        /* the mask's shape padded to rank 4 (leading 1s); each
                                     extent 1 or the full (B, Hq, Lq, Lk) extent */
    double *q, *k, *v, *mask; /* logical row-major values (mask: numel of mshape) */
    int poison;               /* 1: some excluded K/V slots hold NaN/inf */
    int exact;                /* 1: a correctly rounded call (hf_exact_ok holds): every
                                     row EXACT, holding the reference rounded once (RNE) */
    /* Terms of current models (SPEC clauses 20-22, attnconf_sdpa_args' fifth revision); zero /
     * NULL: not given.  Each is drawn only under its capability bit. */
    double softcap;        /* 0 or > 0: s -> c tanh(s / c) */
    double alibi_max_bias; /* 0 or > 0: ALiBi with attnref_alibi_slope(max_bias, Hq, h) */
    double *sinks;         /* [Hq] finite sink logits (bf16 values), or NULL */
    int64_t chunk;         /* 0 or >= 1 (needs causal) */
    int64_t *segment_ids;  /* [B * Lk] document ids, or NULL (Lk >= 1) */
    int64_t *block_ids;    /* [B * Lk] bidirectional block ids (< 0: none), or NULL (needs
                               causal; Lk >= 1) */
} hf_call;

void hf_call_free(hf_call *c);
/* Deep copy; returns 0 or -1 (out of memory). */
int hf_call_copy(hf_call *dst, const hf_call *src);
/* One line describing the call's shape and features, for messages. */
void hf_call_text(const hf_call *c, char *buf, size_t n);

/* Draw a random valid call from *rng using only what `caps` (ATTNCONF_CAP_*) allows.
 * Returns 0, or -1 (out of memory). */
int hf_draw(uint64_t *rng, uint64_t caps, hf_call *out);
/* The same with boundary value `edge` (an index of hf_edges, or -1 for none) forced into the
 * call and everything else drawn as hf_draw draws it (fuzz_edges.c).  The edge must be usable
 * under caps (hf_edge_usable). */
int hf_draw_edge(uint64_t *rng, uint64_t caps, int edge, hf_call *out);

/* ---- boundary values (fuzz_edges.c) ---------------------------------------------------------
 *
 * One generator per drawable row of cases/EDGES.md, keyed by the row's id (tools/edge-table
 * writes it).  ctest cases.edge_table_fuzz compares the two lists (`attnconf fuzz --list-edges`
 * against the table's rows, minus the rows it names as not drawn, each with its reason), and
 * harness.fuzz.edges_posed checks on the calls drawn that each generator poses its row, by the
 * table's own predicate. */

/* Which terms a call gets (SPEC clauses 20-22), decided before its shapes. */
typedef struct hf_terms {
    int softcap, alibi, sinks, chunk, segments, blocks;
} hf_terms;

/* The points of hf_draw_edge where a generator may act, in order. */
enum {
    HF_PHASE_TERMS = 0, /* the terms chosen (t), nothing drawn yet */
    HF_PHASE_SHAPES,    /* B, heads, Lq, Lk, D, Dv drawn and fitted: set extents; returns the
                           HF_FIX_* bits of the axes the edge needs kept when the call is refitted */
    HF_PHASE_PARAMS,    /* scale, layouts, causal / offset / window, the mask's kind and shape,
                           lengths, left padding drawn; nothing allocated but lengths/padding */
    HF_PHASE_VALUES     /* every value drawn, terms included (not yet the poison): set values;
                           returns 0 or -1 (out of memory) */
};
enum { HF_FIX_B = 1, HF_FIX_HEADS = 2, HF_FIX_LQ = 4, HF_FIX_LK = 8, HF_FIX_D = 16 };

typedef struct hf_edge_ctx {
    int phase;
    uint64_t *rng;
    uint64_t caps;
    hf_call *c;
    hf_terms *t;
} hf_edge_ctx;

typedef struct hf_edge {
    const char *id; /* the row's id in cases/EDGES.md */
    uint64_t needs; /* capability bits the edge needs (all of them) */
    int (*pose)(hf_edge_ctx *x);
} hf_edge;

extern const hf_edge hf_edges[];
extern const int hf_nedges;
int hf_edge_usable(int edge, uint64_t caps);

/* Helpers fuzz_gen.c shares with fuzz_edges.c. */
uint64_t hf_below(uint64_t *rng, uint64_t n);
double hf_unit(uint64_t *rng);
double hf_in_dtype(double x, attnref_dtype dt);
void hf_make_stride0(double *x, int64_t B, int64_t H, int64_t L, int64_t X, uint8_t s0);

/* The reference's parameters of a call (pointers into c). */
attnref_sdpa_params hf_call_params(const hf_call *c);

/* Whether a call keeps the correctly rounded property (SPEC clause 13, as casegen's
 * sdpa.rounding): no ALiBi and no sinks, every score exactly 0 (q or k all zeros, finite), no poison, every row keeping
 * 0 or a power-of-two number of keys (so each weight 1/n is exact), Lk <= 1024, and every V a
 * multiple of 2^-11 below 4 in magnitude, so every f32 partial sum of V (under 2^12, 23 bits)
 * is exact in any order.  Then the output of an f32-accumulating kernel is the mean of the
 * kept V rounded once, and a truncating kernel differs by one ulp.  Returns 1 or 0. */
int hf_exact_ok(const hf_call *c);

/* The case for a call: id, description, inputs, the reference's expected output
 * (attnref_sdpa_f64), row checks and the error bound (hf_bound); for an exact call every CLOSE
 * row is EXACT with the expectation rounded once to the dtype (acase_sdpa_rows_rounded).  Returns the case, or NULL
 * with err set (the reference rejected it, or out of memory). */
acase *hf_build(const hf_call *c, const char *id, char *err, size_t errlen);

/* The call (and its case id) as bytes, to hand it to a worker process: hf_call_pack returns the
 * size written, 0 when over cap; hf_call_unpack rebuilds the call (0, or -1 out of memory or a
 * buffer of another wire version, HF_WIRE_VERSION: parent and worker must agree). */
#define HF_WIRE_VERSION 2u /* 2: the terms of clauses 20-22 */
size_t hf_call_pack(const hf_call *c, const char *id, void *buf, size_t cap);
int hf_call_unpack(const void *buf, hf_call *out, char *id, size_t idlen);

/* The per-element bound of a built case (acase_sdpa_bound, SPEC clause 13): c->ulps and
 * c->row_atol (allocated here).  Returns 0, or -1 with err set. */
int hf_bound(acase *c, char *err, size_t errlen);

/* Metamorphic relations (hf_meta_*): from a base call, a derived call whose output determines
 * the base output without an oracle.  hf_meta_derive builds the derived call(s) for relation
 * `rel` (HF_META_*); hf_meta_map maps the derived outputs back onto the base output's layout
 * (B, Hq, Lq, Dv), so the two can be compared within the bound.  Returns 0 when the relation
 * applies (outputs filled), 1 when it does not apply to this call, -1 out of memory. */
enum {
    HF_META_PERMUTE_KEYS = 0, /* keys permuted together with the mask: output unchanged */
    HF_META_BATCH_ROW,        /* one batch row run alone equals that row of the batched run */
    HF_META_GQA_REPEAT,       /* K/V heads repeated explicitly (Hkv = Hq) equals GQA */
    HF_META_CHUNKED,          /* causal prefill in two chunks equals one shot */
    HF_META_COUNT
};
const char *hf_meta_name(int rel);
/* Up to 2 derived calls in out[] (*n set); `pick` chooses the permutation / row / split. */
int hf_meta_derive(int rel, const hf_call *base, uint64_t pick, hf_call out[2], int *n);
/* Where each element of the base output comes from: for flat base index e, src_call[e] (0/1,
 * or 255: not determined by the derived calls) and src_index[e] (flat index in that call's
 * output).  Arrays of base numel, allocated here (free both).  Same rel and pick as
 * hf_meta_derive.  Returns 0, or -1 out of memory. */
int hf_meta_map(int rel, const hf_call *base, uint64_t pick, const hf_call derived[2],
                uint8_t **src_call, int64_t **src_index);

/* Shrinking steps (fuzz_shrink.c): candidate k (0, 1, 2, ...) of the simplifications of c, in
 * the order tried (fewer batches, heads, keys, queries, smaller D/Dv, simpler mask and
 * parameters, no poison, plain layouts, no terms).  Returns 0 with *out a strictly simpler valid call,
 * 1 when candidate k does not apply (try k + 1), 2 when k is past the last candidate, -1 out
 * of memory. */
int hf_shrink_candidate(const hf_call *c, int k, hf_call *out);

/* Axes of a call, for hf_restrict. */
enum { HF_AX_B = 0, HF_AX_HQ, HF_AX_HKV, HF_AX_LQ, HF_AX_LK, HF_AX_D, HF_AX_DV };
/* The call restricted to indices lo..hi-1 of one axis (HF_AX_B, HF_AX_LQ, HF_AX_LK, HF_AX_D or
 * HF_AX_DV; not the head axes): every kept value is kept, lengths / left padding count the
 * kept keys below their old bound.  Returns 0, or -1 out of memory. */
int hf_restrict(const hf_call *c, int ax, int64_t lo, int64_t hi, hf_call *out);

#endif
