/* bench_suite.c — read a perf suite (perf/suites/NAME.yaml) into a bs_suite (bench.h).
 *
 * Format (version 1; perf/README.md shows an example):
 *
 *   attnconf_perf_suite: 1
 *   name: prefill                  # [a-z0-9_-]+
 *   description: one line
 *   shapes:                        # at least one; each expands over its dtypes: "<id>.<dtype>"
 *     - id: prefill.causal.L512    # [A-Za-z0-9_.-]+, unique in the suite
 *       dtypes: [f32, f16, bf16]   # distinct
 *       batch: 1                   # B
 *       q_heads: 32                # Hq
 *       kv_heads: 8                # Hkv, dividing Hq
 *       lq: 512                    # queries, >= 1
 *       lk: 512                    # keys, >= 1
 *       head_dim: 128              # D
 *       v_head_dim: 128            # Dv, optional (default head_dim)
 *       causal: true               # optional, default false
 *       causal_offset: 0           # optional (needs causal; default bottom-right, Lk - Lq)
 *       window: 0                  # optional: keep the W keys up to the query's own (needs
 *                                  #   causal; 0 = none)
 *       lengths: [64, 300]         # optional: batch entries in 0..lk, keys kept from the start
 *       left_padding: [0, 12]      # optional: batch entries in 0..lk, first key kept
 *       softcap: 50.0              # optional: s -> c tanh(s / c), c > 0 (SPEC clause 20)
 *       alibi_max_bias: 8.0        # optional: ALiBi slopes from max_bias > 0 (clause 21)
 *       sinks: [0.5, ...]          # optional: q_heads sink logits (rounded to f32) (clause 22)
 *       chunk: 256                 # optional: chunked attention, C >= 1 (needs causal)
 *       documents: [512, 1536]     # optional: document lengths (>= 1) summing to lk, the same
 *                                  #   packing in every batch row (segment_ids)
 *       blocks: [[100, 64]]        # optional: bidirectional blocks [start, length] in 0..lk,
 *                                  #   in order, not overlapping (block_ids; needs causal)
 *       paged: {page_size: 16}     # optional: K/V in a pool of pages of P slots (1..65536) in
 *                                  #   a shuffled order, through paged_sdpa (SPEC clause 23);
 *                                  #   not with causal_offset, lengths, left_padding,
 *                                  #   documents or blocks (a paged sequence has none)
 *       bound: compute             # compute | memory: the machine limit "% of limit" uses
 *       curve: prefill-causal      # the cost curve this shape is a point of (below)
 *
 * Optional at the top level:
 *
 *   curves:                        # cost curves: time against one size, fitted by perf-report
 *     - name: prefill-causal       # [a-z0-9_-]+, unique
 *       x: lk                      # the size it sweeps: lk (lq may follow it), lq or batch
 *       expect: 2                  # the exponent of time in that size the work implies, (0, 8]
 *   defaults: {min_time: 0.5, min_reps: 3}   # the suite's own --min-time / --min-reps, which
 *                                  #   the command line overrides (large shapes: fewer reps)
 *
 * A suite with curves is made of them: every shape names one, every curve has at least two
 * shapes at distinct sizes, and the shapes of one curve agree in bound, q_heads, kv_heads,
 * head_dim, v_head_dim, causal, window, batch (unless the curve sweeps it), lk (unless it sweeps
 * lk) and lq (when it sweeps batch; a sweep of lk may move lq with it, as prefill does), so a
 * curve's points differ in its size alone.
 *
 * Integers are plain decimal scalars, booleans plain true/false.  The reading is strict (the
 * case reader's rules): every problem is reported as "FILE:LINE: FIELD: reason", and the size
 * limits of bench.h are checked before anything is allocated from the numbers.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include "bench.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "attncase/yread.h"
#include "attnref/tensor.h"

typedef struct reader {
    const char *path;
    yaml_document_t *doc;
    char *err;
    size_t errlen;
} reader;

__attribute__((format(printf, 4, 5))) static int fail(const reader *r, const yaml_node_t *at,
                                                      const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (at)
        snprintf(r->err, r->errlen, "%s:%lu: %s: %s", r->path,
                 (unsigned long)at->start_mark.line + 1, field, msg);
    else
        snprintf(r->err, r->errlen, "%s: %s: %s", r->path, field, msg);
    return -1;
}

static const char *scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A plain decimal integer in [lo, hi]. */
static int get_int(const reader *r, const yaml_node_t *n, const char *field, int64_t lo, int64_t hi,
                   int64_t *out)
{
    const char *s = scalar(n);
    if (!s || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || !s[0])
        return fail(r, n, field, "expected an integer");
    const char *digits = s[0] == '-' ? s + 1 : s;
    if (!digits[0] || strspn(digits, "0123456789") != strlen(digits))
        return fail(r, n, field, "expected an integer, got '%s'", s);
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE || v < lo || v > hi)
        return fail(r, n, field, "%s is out of range (%" PRId64 "..%" PRId64 ")", s, lo, hi);
    *out = v;
    return 0;
}

static int get_bool(const reader *r, const yaml_node_t *n, const char *field, int *out)
{
    const char *s = scalar(n);
    if (s && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
        (strcmp(s, "true") == 0 || strcmp(s, "false") == 0)) {
        *out = s[0] == 't';
        return 0;
    }
    return fail(r, n, field, "expected true or false");
}

/* A one-line non-empty string made only of the characters in `set` (NULL = any printable). */
static int get_text(const reader *r, const yaml_node_t *n, const char *field, const char *set,
                    size_t max, const char **out)
{
    const char *s = scalar(n);
    if (!s)
        return fail(r, n, field, "expected a string");
    size_t len = strlen(s);
    if (len == 0)
        return fail(r, n, field, "must not be empty");
    if (len >= max)
        return fail(r, n, field, "longer than %zu characters", max - 1);
    if (!set && strpbrk(s, "\r\n"))
        return fail(r, n, field, "must be one line");
    if (set && strspn(s, set) != len)
        return fail(r, n, field, "'%s' has a character outside %s", s,
                    strchr(set, '.') ? "[A-Za-z0-9_.-]" : "[a-z0-9_-]");
    *out = s;
    return 0;
}

static size_t seq_len(const yaml_node_t *n)
{
    return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static const yaml_node_t *seq_item(const reader *r, const yaml_node_t *n, size_t i)
{
    return yaml_document_get_node(r->doc, n->data.sequence.items.start[i]);
}

static int get_dtypes(const reader *r, const yaml_node_t *n, const char *field, bs_shape *sh)
{
    if (n->type != YAML_SEQUENCE_NODE || seq_len(n) == 0 || seq_len(n) > BS_MAX_DTYPES)
        return fail(r, n, field, "expected a list of 1 to 3 dtypes (f32, f16, bf16)");
    for (size_t i = 0; i < seq_len(n); i++) {
        const yaml_node_t *it = seq_item(r, n, i);
        const char *s = scalar(it);
        attnref_dtype dt = s ? bs_dtype_from_name(s) : (attnref_dtype)0;
        if (!dt)
            return fail(r, it, field, "unknown dtype '%s' (f32, f16, bf16)", s ? s : "?");
        for (int j = 0; j < sh->ndtypes; j++)
            if (sh->dtypes[j] == dt)
                return fail(r, it, field, "'%s' is listed twice", s);
        sh->dtypes[sh->ndtypes++] = dt;
    }
    return 0;
}

/* lengths / left_padding: exactly `batch` entries in 0..lk. */
static int get_per_row(const reader *r, const yaml_node_t *n, const char *field, int64_t batch,
                       int64_t lk, int64_t **out)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(r, n, field, "expected a list of %" PRId64 " integers (one per batch row)",
                    batch);
    if ((int64_t)seq_len(n) != batch)
        return fail(r, n, field, "%zu entries, batch is %" PRId64, seq_len(n), batch);
    if (!(*out = calloc((size_t)batch, sizeof **out)))
        return fail(r, n, field, "out of memory");
    for (size_t i = 0; i < seq_len(n); i++)
        if (get_int(r, seq_item(r, n, i), field, 0, lk, &(*out)[i]))
            return -1;
    return 0;
}

/* A finite decimal number in (0, hi]. */
static int get_pos_num(const reader *r, const yaml_node_t *n, const char *field, double hi,
                       double *out)
{
    const char *s = scalar(n);
    if (!s || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || !s[0] ||
        strspn(s, "0123456789.eE+-") != strlen(s))
        return fail(r, n, field, "expected a number");
    char *end;
    errno = 0;
    const double v = strtod(s, &end);
    if (*end || errno == ERANGE || !(v > 0.0) || !(v <= hi))
        return fail(r, n, field, "'%s' is not a number in (0, %g]", s, hi);
    *out = v;
    return 0;
}

/* sinks: exactly hq finite numbers, each rounded to f32 (what the ABI passes). */
static int get_sinks(const reader *r, const yaml_node_t *n, const char *field, bs_shape *sh)
{
    if (n->type != YAML_SEQUENCE_NODE || (int64_t)seq_len(n) != sh->hq)
        return fail(r, n, field, "expected a list of %" PRId64 " numbers (one per query head)",
                    sh->hq);
    sh->sinks = calloc((size_t)sh->hq, sizeof *sh->sinks);
    sh->sinks_f32 = calloc((size_t)sh->hq, sizeof *sh->sinks_f32);
    if (!sh->sinks || !sh->sinks_f32)
        return fail(r, n, field, "out of memory");
    for (size_t i = 0; i < seq_len(n); i++) {
        const yaml_node_t *it = seq_item(r, n, i);
        const char *s = scalar(it);
        char *end = NULL;
        const double v = s ? strtod(s, &end) : 0.0;
        if (!s || !s[0] || *end || !isfinite(v) || fabs(v) > 1e30)
            return fail(r, it, field, "entry %zu: expected a number of magnitude <= 1e30", i);
        sh->sinks_f32[i] = (float)v;
        sh->sinks[i] = (double)sh->sinks_f32[i];
    }
    return 0;
}

/* documents: lengths >= 1 summing to lk, into segment_ids (document k has id k), every batch
 * row alike. */
static int get_documents(const reader *r, const yaml_node_t *n, const char *field, bs_shape *sh)
{
    if (n->type != YAML_SEQUENCE_NODE || seq_len(n) == 0)
        return fail(r, n, field, "expected a list of document lengths summing to lk");
    if (!(sh->segment_ids = calloc((size_t)(sh->b * sh->lk), sizeof *sh->segment_ids)))
        return fail(r, n, field, "out of memory");
    int64_t at = 0;
    for (size_t k = 0; k < seq_len(n); k++) {
        int64_t len;
        if (get_int(r, seq_item(r, n, k), field, 1, sh->lk - at, &len))
            return -1;
        for (int64_t j = at; j < at + len; j++)
            sh->segment_ids[j] = (int64_t)k;
        at += len;
    }
    if (at != sh->lk)
        return fail(r, n, field, "the lengths sum to %" PRId64 ", lk is %" PRId64, at, sh->lk);
    for (int64_t b = 1; b < sh->b; b++)
        memcpy(sh->segment_ids + b * sh->lk, sh->segment_ids, (size_t)sh->lk * sizeof(int64_t));
    return 0;
}

/* blocks: [start, length] pairs in order, inside 0..lk, not overlapping, into block_ids (block
 * k has id k, -1 elsewhere), every batch row alike. */
static int get_blocks(const reader *r, const yaml_node_t *n, const char *field, bs_shape *sh)
{
    if (n->type != YAML_SEQUENCE_NODE || seq_len(n) == 0)
        return fail(r, n, field, "expected a list of [start, length] pairs");
    if (!(sh->block_ids = malloc((size_t)(sh->b * sh->lk) * sizeof *sh->block_ids)))
        return fail(r, n, field, "out of memory");
    for (int64_t j = 0; j < sh->lk; j++)
        sh->block_ids[j] = -1;
    int64_t end = 0;
    for (size_t k = 0; k < seq_len(n); k++) {
        const yaml_node_t *it = seq_item(r, n, k);
        if (it->type != YAML_SEQUENCE_NODE || seq_len(it) != 2)
            return fail(r, it, field, "entry %zu: expected [start, length]", k);
        int64_t st, len;
        if (get_int(r, seq_item(r, it, 0), field, end, sh->lk - 1, &st) ||
            get_int(r, seq_item(r, it, 1), field, 1, sh->lk - st, &len))
            return -1;
        for (int64_t j = st; j < st + len; j++)
            sh->block_ids[j] = (int64_t)k;
        end = st + len;
    }
    for (int64_t b = 1; b < sh->b; b++)
        memcpy(sh->block_ids + b * sh->lk, sh->block_ids, (size_t)sh->lk * sizeof(int64_t));
    return 0;
}

/* Element count of a tensor, or -1 past ATTNREF_MAX_NUMEL. */
static int64_t numel4(int64_t a, int64_t b, int64_t c, int64_t d)
{
    int64_t n;
    if (__builtin_mul_overflow(a, b, &n) || __builtin_mul_overflow(n, c, &n) ||
        __builtin_mul_overflow(n, d, &n) || n > ATTNREF_MAX_NUMEL)
        return -1;
    return n;
}

enum {
    K_ID,
    K_DTYPES,
    K_BATCH,
    K_HQ,
    K_HKV,
    K_LQ,
    K_LK,
    K_D,
    K_DV,
    K_CAUSAL,
    K_OFFSET,
    K_WINDOW,
    K_LENGTHS,
    K_LEFTPAD,
    K_SOFTCAP,
    K_ALIBI,
    K_SINKS,
    K_CHUNK,
    K_DOCS,
    K_BLOCKS,
    K_PAGED,
    K_BOUND,
    K_CURVE,
    K_COUNT
};
static const char *const shape_keys[K_COUNT] = {
    "id",        "dtypes",       "batch",      "q_heads",        "kv_heads",      "lq",
    "lk",        "head_dim",     "v_head_dim", "causal",         "causal_offset", "window",
    "lengths",   "left_padding", "softcap",    "alibi_max_bias", "sinks",         "chunk",
    "documents", "blocks",       "paged",      "bound",          "curve"};

/* paged: {page_size: P}, P in 1..BS_MAX_PAGE; a paged sequence has no offset, padding,
 * documents or blocks, so a shape with one of them is refused. */
static int get_paged(const reader *r, const yaml_node_t *n, const char *field, bs_shape *sh)
{
    if (n->type != YAML_MAPPING_NODE)
        return fail(r, n, field, "expected a mapping {page_size: P}");
    ayr_field keys[1] = {{"page_size", 0, NULL}};
    ayr_walk_at at;
    const ayr_walk_result walked = ayr_walk(r->doc, n, keys, 1, NULL, NULL, &at);
    if (walked != AYR_WALK_OK)
        return fail(r, at.key ? at.key : n, field, "%s key '%s' (known: page_size)",
                    walked == AYR_WALK_DUPLICATE ? "duplicate" : "unknown",
                    at.name ? at.name : "?");
    if (!keys[0].val)
        return fail(r, n, field, "page_size missing");
    char f[128];
    snprintf(f, sizeof f, "%s.page_size", field);
    if (get_int(r, keys[0].val, f, 1, BS_MAX_PAGE, &sh->page_size))
        return -1;
    if (sh->lq > sh->lk)
        return fail(r, n, field,
                    "lq %" PRId64 " is over lk %" PRId64
                    " (a paged row's queries are among its keys)",
                    sh->lq, sh->lk);
    if (sh->has_causal_offset || sh->lengths || sh->left_padding || sh->segment_ids ||
        sh->block_ids)
        return fail(r, n, field,
                    "does not combine with %s (a paged sequence's queries sit at its end, its "
                    "keys start at 0)",
                    sh->has_causal_offset ? "causal_offset"
                    : sh->lengths         ? "lengths"
                    : sh->left_padding    ? "left_padding"
                    : sh->segment_ids     ? "documents"
                                          : "blocks");
    return 0;
}

static int read_shape(const reader *r, const yaml_node_t *m, size_t idx, uint64_t mem_bytes,
                      const bs_suite *suite, bs_shape *sh)
{
    char f[96]; /* the field being read, "shapes[3].lk" */
#define FIELD(k) (snprintf(f, sizeof f, "shapes[%zu].%s", idx, shape_keys[k]), f)
    snprintf(f, sizeof f, "shapes[%zu]", idx);
    if (m->type != YAML_MAPPING_NODE)
        return fail(r, m, f, "expected a mapping (id, dtypes, batch, ...)");
    sh->line = (int)m->start_mark.line + 1;
    ayr_field keys[K_COUNT];
    for (int k = 0; k < K_COUNT; k++)
        keys[k] = (ayr_field){shape_keys[k], 0, NULL};
    ayr_walk_at at;
    ayr_walk_result walked = ayr_walk(r->doc, m, keys, K_COUNT, NULL, NULL, &at);
    if (walked == AYR_WALK_DUPLICATE)
        return fail(r, at.key, FIELD(at.index), "given twice");
    if (walked != AYR_WALK_OK)
        return fail(r, at.key, f,
                    "unknown key '%s' (known: id, dtypes, batch, q_heads, "
                    "kv_heads, lq, lk, head_dim, v_head_dim, causal, causal_offset, window, "
                    "lengths, left_padding, softcap, alibi_max_bias, sinks, chunk, documents, "
                    "blocks, paged, bound, curve)",
                    at.name ? at.name : "?");
    const yaml_node_t *v[K_COUNT];
    for (int k = 0; k < K_COUNT; k++)
        v[k] = keys[k].val;
    static const int required[] = {K_ID, K_DTYPES, K_BATCH, K_HQ, K_HKV, K_LQ, K_LK, K_D, K_BOUND};
    for (size_t x = 0; x < sizeof required / sizeof required[0]; x++)
        if (!v[required[x]])
            return fail(r, m, FIELD(required[x]), "missing");

    const char *s;
    if (get_text(r, v[K_ID], FIELD(K_ID),
                 "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-",
                 ACASE_ID_MAX - 5 /* room for ".bf16" */, &s))
        return -1;
    snprintf(sh->id, sizeof sh->id, "%s", s);
    if (get_dtypes(r, v[K_DTYPES], FIELD(K_DTYPES), sh) ||
        get_int(r, v[K_BATCH], FIELD(K_BATCH), 1, BS_MAX_BATCH, &sh->b) ||
        get_int(r, v[K_HQ], FIELD(K_HQ), 1, BS_MAX_HEADS, &sh->hq) ||
        get_int(r, v[K_HKV], FIELD(K_HKV), 1, BS_MAX_HEADS, &sh->hkv) ||
        get_int(r, v[K_LQ], FIELD(K_LQ), 1, BS_MAX_SEQ, &sh->lq) ||
        get_int(r, v[K_LK], FIELD(K_LK), 1, BS_MAX_SEQ, &sh->lk) ||
        get_int(r, v[K_D], FIELD(K_D), 1, BS_MAX_HEAD_DIM, &sh->d))
        return -1;
    sh->dv = sh->d;
    if (v[K_DV] && get_int(r, v[K_DV], FIELD(K_DV), 1, BS_MAX_HEAD_DIM, &sh->dv))
        return -1;
    if (sh->hq % sh->hkv != 0)
        return fail(r, v[K_HKV], FIELD(K_HKV), "%" PRId64 " does not divide q_heads %" PRId64,
                    sh->hkv, sh->hq);
    if (v[K_CAUSAL] && get_bool(r, v[K_CAUSAL], FIELD(K_CAUSAL), &sh->causal))
        return -1;
    if (v[K_OFFSET]) {
        if (!sh->causal)
            return fail(r, v[K_OFFSET], FIELD(K_OFFSET), "needs causal: true");
        if (get_int(r, v[K_OFFSET], FIELD(K_OFFSET), -BS_MAX_OFFSET, BS_MAX_OFFSET,
                    &sh->causal_offset))
            return -1;
        sh->has_causal_offset = 1;
    }
    if (v[K_WINDOW]) {
        if (get_int(r, v[K_WINDOW], FIELD(K_WINDOW), 0, BS_MAX_SEQ, &sh->window))
            return -1;
        if (sh->window > 0 && !sh->causal)
            return fail(r, v[K_WINDOW], FIELD(K_WINDOW), "needs causal: true (SPEC clause 4)");
    }
    if (v[K_LENGTHS] && get_per_row(r, v[K_LENGTHS], FIELD(K_LENGTHS), sh->b, sh->lk, &sh->lengths))
        return -1;
    if (v[K_LEFTPAD] &&
        get_per_row(r, v[K_LEFTPAD], FIELD(K_LEFTPAD), sh->b, sh->lk, &sh->left_padding))
        return -1;
    if (v[K_SOFTCAP] && get_pos_num(r, v[K_SOFTCAP], FIELD(K_SOFTCAP), 1e30, &sh->softcap))
        return -1;
    if (v[K_ALIBI] && get_pos_num(r, v[K_ALIBI], FIELD(K_ALIBI), 1e6, &sh->alibi_max_bias))
        return -1;
    if (v[K_SINKS] && get_sinks(r, v[K_SINKS], FIELD(K_SINKS), sh))
        return -1;
    if (v[K_CHUNK]) {
        if (get_int(r, v[K_CHUNK], FIELD(K_CHUNK), 1, BS_MAX_SEQ, &sh->chunk))
            return -1;
        if (!sh->causal)
            return fail(r, v[K_CHUNK], FIELD(K_CHUNK), "needs causal: true (SPEC clause 20)");
    }
    if (v[K_DOCS] && get_documents(r, v[K_DOCS], FIELD(K_DOCS), sh))
        return -1;
    if (v[K_BLOCKS]) {
        if (!sh->causal)
            return fail(r, v[K_BLOCKS], FIELD(K_BLOCKS), "needs causal: true (SPEC clause 20)");
        if (get_blocks(r, v[K_BLOCKS], FIELD(K_BLOCKS), sh))
            return -1;
    }
    if (v[K_PAGED] && get_paged(r, v[K_PAGED], FIELD(K_PAGED), sh))
        return -1;
    const char *bound = scalar(v[K_BOUND]);
    if (!bound || (strcmp(bound, "compute") != 0 && strcmp(bound, "memory") != 0))
        return fail(r, v[K_BOUND], FIELD(K_BOUND), "expected compute or memory");
    sh->bound = bound[0] == 'm' ? BS_BOUND_MEMORY : BS_BOUND_COMPUTE;
    if (v[K_CURVE]) {
        if (!suite->ncurves)
            return fail(r, v[K_CURVE], FIELD(K_CURVE),
                        "the suite has no curves (a top-level "
                        "`curves` list defines them)");
        if (get_text(r, v[K_CURVE], FIELD(K_CURVE), "abcdefghijklmnopqrstuvwxyz0123456789_-",
                     BS_NAME_MAX, &s))
            return -1;
        size_t c = 0;
        while (c < suite->ncurves && strcmp(suite->curves[c].name, s) != 0)
            c++;
        if (c == suite->ncurves)
            return fail(r, v[K_CURVE], FIELD(K_CURVE), "'%s' is not one of the suite's curves", s);
        snprintf(sh->curve, sizeof sh->curve, "%s", s);
    } else if (suite->ncurves) {
        return fail(r, m, FIELD(K_CURVE),
                    "missing (the suite has curves: every shape is a point "
                    "of one)");
    }

    /* Sizes, before anyone allocates from these numbers. */
    snprintf(f, sizeof f, "shapes[%zu]", idx);
    const int64_t nq = numel4(sh->b, sh->hq, sh->lq, sh->d);
    const int64_t nk = numel4(sh->b, sh->hkv, sh->lk, sh->d);
    const int64_t nv = numel4(sh->b, sh->hkv, sh->lk, sh->dv);
    const int64_t no = numel4(sh->b, sh->hq, sh->lq, sh->dv);
    if (nq < 0 || nk < 0 || nv < 0 || no < 0)
        return fail(r, m, f, "%s has more than 2^31 elements (the reference's limit)",
                    nq < 0   ? "q"
                    : nk < 0 ? "k"
                    : nv < 0 ? "v"
                             : "out");
    const int64_t dmax = sh->d > sh->dv ? sh->d : sh->dv;
    if (sh->lk * dmax > ACASE_MAX_TENSOR_NUMEL)
        return fail(r, m, f,
                    "lk x max(head_dim, v_head_dim) = %" PRId64 " is over %" PRId64
                    " (the one-row slice the validation bounds)",
                    sh->lk * dmax, (int64_t)ACASE_MAX_TENSOR_NUMEL);
    size_t es = 0;
    for (int x = 0; x < sh->ndtypes; x++)
        if (attnref_dtype_size(sh->dtypes[x]) > es)
            es = attnref_dtype_size(sh->dtypes[x]);
    /* A paged shape also holds its pool: ceil(lk / P) whole pages of P slots per sequence, so
     * a page much longer than lk costs far more than K and V themselves. */
    const double pool =
        sh->page_size > 0 ? (double)sh->b * (double)((sh->lk + sh->page_size - 1) / sh->page_size) *
                                (double)sh->page_size * (double)sh->hkv * (double)(sh->d + sh->dv)
                          : 0.0;
    const double bytes = ((double)(nq + nk + nv + no) + pool) * (double)es;
    if (mem_bytes && bytes > (double)mem_bytes / 2)
        return fail(r, m, f,
                    "q, k, v%s and out need %.2f GiB, over half of this machine's "
                    "%.2f GiB of physical memory",
                    pool > 0.0 ? ", the page pool" : "", bytes / 1073741824.0,
                    (double)mem_bytes / 1073741824.0);
    return 0;
#undef FIELD
}

const char *bs_curve_x_name(bs_curve_x x)
{
    return x == BS_X_LQ ? "lq" : x == BS_X_BATCH ? "batch" : "lk";
}

/* curves: a non-empty list of {name, x, expect}. */
static int read_curves(const reader *r, const yaml_node_t *n, bs_suite *out)
{
    if (n->type != YAML_SEQUENCE_NODE || seq_len(n) == 0)
        return fail(r, n, "curves", "expected a non-empty list of {name, x, expect}");
    if (seq_len(n) > BS_MAX_CURVES)
        return fail(r, n, "curves", "%zu curves, over the limit of %d", seq_len(n), BS_MAX_CURVES);
    for (size_t i = 0; i < seq_len(n); i++) {
        const yaml_node_t *m = seq_item(r, n, i);
        char f[64];
        snprintf(f, sizeof f, "curves[%zu]", i);
        if (m->type != YAML_MAPPING_NODE)
            return fail(r, m, f, "expected a mapping {name, x, expect}");
        ayr_field keys[3] = {{"name", 0, NULL}, {"x", 0, NULL}, {"expect", 0, NULL}};
        ayr_walk_at at;
        const ayr_walk_result walked = ayr_walk(r->doc, m, keys, 3, NULL, NULL, &at);
        if (walked != AYR_WALK_OK)
            return fail(r, at.key ? at.key : m, f, "%s key '%s' (known: name, x, expect)",
                        walked == AYR_WALK_DUPLICATE ? "duplicate" : "unknown",
                        at.name ? at.name : "?");
        static const char *const req[3] = {"name", "x", "expect"};
        for (int k = 0; k < 3; k++)
            if (!keys[k].val) {
                snprintf(f, sizeof f, "curves[%zu].%s", i, req[k]);
                return fail(r, m, f, "missing");
            }
        bs_curve *c = &out->curves[i];
        const char *s;
        snprintf(f, sizeof f, "curves[%zu].name", i);
        if (get_text(r, keys[0].val, f, "abcdefghijklmnopqrstuvwxyz0123456789_-", BS_NAME_MAX, &s))
            return -1;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(out->curves[j].name, s))
                return fail(r, keys[0].val, f, "'%s' is also curves[%zu]", s, j);
        snprintf(c->name, sizeof c->name, "%s", s);
        snprintf(f, sizeof f, "curves[%zu].x", i);
        const char *x = scalar(keys[1].val);
        if (!x || (strcmp(x, "lk") && strcmp(x, "lq") && strcmp(x, "batch")))
            return fail(r, keys[1].val, f, "expected lk, lq or batch (the size the curve sweeps)");
        c->x = !strcmp(x, "lk") ? BS_X_LK : !strcmp(x, "lq") ? BS_X_LQ : BS_X_BATCH;
        snprintf(f, sizeof f, "curves[%zu].expect", i);
        if (get_pos_num(r, keys[2].val, f, 8.0, &c->expect))
            return -1;
        out->ncurves = i + 1;
    }
    return 0;
}

/* defaults: {min_time: S, min_reps: N}, each optional. */
static int read_defaults(const reader *r, const yaml_node_t *n, bs_suite *out)
{
    if (n->type != YAML_MAPPING_NODE)
        return fail(r, n, "defaults", "expected a mapping {min_time: S, min_reps: N}");
    ayr_field keys[2] = {{"min_time", 0, NULL}, {"min_reps", 0, NULL}};
    ayr_walk_at at;
    const ayr_walk_result walked = ayr_walk(r->doc, n, keys, 2, NULL, NULL, &at);
    if (walked != AYR_WALK_OK)
        return fail(r, at.key ? at.key : n, "defaults", "%s key '%s' (known: min_time, min_reps)",
                    walked == AYR_WALK_DUPLICATE ? "duplicate" : "unknown",
                    at.name ? at.name : "?");
    if (keys[0].val && get_pos_num(r, keys[0].val, "defaults.min_time", 3600, &out->min_time_s))
        return -1;
    if (keys[1].val && get_int(r, keys[1].val, "defaults.min_reps", 1, 1000, &out->min_reps))
        return -1;
    return 0;
}

/* The points of each curve differ in its size alone, at distinct sizes, two at least. */
static int check_curves(const reader *r, const yaml_node_t *shapes, const bs_suite *out)
{
    size_t counts[BS_MAX_CURVES] = {0};
    for (size_t c = 0; c < out->ncurves; c++) {
        const bs_curve *cv = &out->curves[c];
        const bs_shape *first = NULL;
        size_t n = 0;
        for (size_t i = 0; i < out->n; i++) {
            const bs_shape *sh = &out->shapes[i];
            if (strcmp(sh->curve, cv->name) != 0)
                continue;
            char f[96];
            snprintf(f, sizeof f, "shapes[%zu].curve", i);
            const yaml_node_t *at = seq_item(r, shapes, i);
            n++;
            if (!first) {
                first = sh;
                continue;
            }
            const char *differs = sh->bound != first->bound                    ? "bound"
                                  : sh->hq != first->hq                        ? "q_heads"
                                  : sh->hkv != first->hkv                      ? "kv_heads"
                                  : sh->d != first->d                          ? "head_dim"
                                  : sh->dv != first->dv                        ? "v_head_dim"
                                  : sh->causal != first->causal                ? "causal"
                                  : sh->window != first->window                ? "window"
                                  : cv->x != BS_X_BATCH && sh->b != first->b   ? "batch"
                                  : cv->x != BS_X_LK && sh->lk != first->lk    ? "lk"
                                  : cv->x == BS_X_BATCH && sh->lq != first->lq ? "lq"
                                                                               : NULL;
            if (differs)
                return fail(r, at, f,
                            "'%s' sweeps %s, but this shape's %s differs from %s's (line %d)",
                            cv->name, bs_curve_x_name(cv->x), differs, first->id, first->line);
            for (size_t j = 0; j < i; j++) {
                const bs_shape *o = &out->shapes[j];
                if (strcmp(o->curve, cv->name) != 0)
                    continue;
                const int64_t a = cv->x == BS_X_LK ? sh->lk : cv->x == BS_X_LQ ? sh->lq : sh->b;
                const int64_t b = cv->x == BS_X_LK ? o->lk : cv->x == BS_X_LQ ? o->lq : o->b;
                if (a == b)
                    return fail(r, at, f, "'%s' already has a point at %s %" PRId64 " (%s)",
                                cv->name, bs_curve_x_name(cv->x), a, o->id);
            }
        }
        counts[c] = n;
    }
    /* Then the counts: a mismatch above names a line, which is the more useful message. */
    for (size_t c = 0; c < out->ncurves; c++)
        if (counts[c] < 2)
            return fail(r, NULL, "curves", "'%s' has %zu shape%s: a curve needs two sizes at least",
                        out->curves[c].name, counts[c], counts[c] == 1 ? "" : "s");
    return 0;
}

static int read_root(const reader *r, uint64_t mem_bytes, bs_suite *out)
{
    const yaml_node_t *root = yaml_document_get_root_node(r->doc);
    if (!root)
        return fail(r, NULL, "attnconf_perf_suite", "empty file");
    if (root->type != YAML_MAPPING_NODE)
        return fail(r, root, "attnconf_perf_suite", "the document must be a mapping");
    ayr_field keys[] = {{"attnconf_perf_suite", 0, NULL},
                        {"name", 0, NULL},
                        {"description", 0, NULL},
                        {"shapes", 0, NULL},
                        {"curves", 0, NULL},
                        {"defaults", 0, NULL}};
    ayr_walk_at at;
    ayr_walk_result walked = ayr_walk(r->doc, root, keys, 6, NULL, NULL, &at);
    if (walked == AYR_WALK_DUPLICATE)
        return fail(r, at.key, at.name, "given twice");
    if (walked != AYR_WALK_OK)
        return fail(r, at.key, at.name ? at.name : "?",
                    "unknown key (known: attnconf_perf_suite, "
                    "name, description, shapes, curves, defaults)");
    const yaml_node_t *ver = keys[0].val, *name = keys[1].val, *desc = keys[2].val,
                      *shapes = keys[3].val;
    int64_t version;
    if (!ver)
        return fail(r, root, "attnconf_perf_suite", "missing (the format version, 1)");
    if (get_int(r, ver, "attnconf_perf_suite", BS_FORMAT_VERSION, BS_FORMAT_VERSION, &version))
        return -1;
    const char *s;
    if (!name)
        return fail(r, root, "name", "missing");
    if (get_text(r, name, "name", "abcdefghijklmnopqrstuvwxyz0123456789_-", BS_NAME_MAX, &s))
        return -1;
    snprintf(out->name, sizeof out->name, "%s", s);
    if (!desc)
        return fail(r, root, "description", "missing");
    if (get_text(r, desc, "description", NULL, 1024, &s))
        return -1;
    if (!(out->description = strdup(s)))
        return fail(r, desc, "description", "out of memory");
    if (keys[4].val && read_curves(r, keys[4].val, out))
        return -1;
    if (keys[5].val && read_defaults(r, keys[5].val, out))
        return -1;
    if (!shapes)
        return fail(r, root, "shapes", "missing");
    if (shapes->type != YAML_SEQUENCE_NODE || seq_len(shapes) == 0)
        return fail(r, shapes, "shapes", "expected a non-empty list of shapes");
    const size_t n = seq_len(shapes);
    if (n > BS_MAX_SHAPES)
        return fail(r, shapes, "shapes", "%zu shapes, over the limit of %d", n, BS_MAX_SHAPES);
    if (!(out->shapes = calloc(n, sizeof *out->shapes)))
        return fail(r, shapes, "shapes", "out of memory");
    for (size_t i = 0; i < n; i++) {
        out->n = i + 1; /* bs_suite_free releases what a failing entry allocated */
        if (read_shape(r, seq_item(r, shapes, i), i, mem_bytes, out, &out->shapes[i]))
            return -1;
        for (size_t j = 0; j < i; j++)
            if (strcmp(out->shapes[j].id, out->shapes[i].id) == 0) {
                char f[64];
                snprintf(f, sizeof f, "shapes[%zu].id", i);
                return fail(r, seq_item(r, shapes, i), f, "'%s' is also shapes[%zu] (line %d)",
                            out->shapes[i].id, j, out->shapes[j].line);
            }
    }
    return check_curves(r, shapes, out);
}

int bs_suite_load(const char *path, uint64_t mem_bytes, bs_suite *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->min_time_s = -1;
    out->min_reps = -1;
    reader r = {path, NULL, err, errlen};
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return fail(&r, NULL, "file", "%s", strerror(errno));
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > BS_MAX_FILE_BYTES) {
        fclose(fp);
        return fail(&r, NULL, "file", "not a regular file of at most %d bytes", BS_MAX_FILE_BYTES);
    }
    unsigned char *buf = malloc((size_t)sb.st_size + 1);
    size_t len = buf ? fread(buf, 1, (size_t)sb.st_size + 1, fp) : 0;
    int bad = !buf || ferror(fp) || len > (size_t)BS_MAX_FILE_BYTES;
    fclose(fp);
    if (bad) {
        free(buf);
        return fail(&r, NULL, "file", "cannot read it (or it grew while read)");
    }
    /* The case files' bounded first pass (depth, node count, scalar size, no aliases, one
     * document) before libyaml builds a tree. */
    if (ayr_prescan(path, buf, len, err, errlen) != 0) {
        free(buf);
        return -1;
    }
    if (!(out->path = strdup(path))) {
        free(buf);
        return fail(&r, NULL, "file", "out of memory");
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    int rc = -1;
    if (!yaml_parser_initialize(&parser)) {
        free(buf);
        bs_suite_free(out);
        return fail(&r, NULL, "file", "out of memory");
    }
    yaml_parser_set_input_string(&parser, buf, len);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, errlen, "%s:%lu: yaml: %s", path, (unsigned long)parser.problem_mark.line + 1,
                 parser.problem ? parser.problem : "syntax error");
    } else {
        r.doc = &doc;
        rc = read_root(&r, mem_bytes, out);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    free(buf);
    if (rc != 0)
        bs_suite_free(out);
    return rc;
}

void bs_suite_free(bs_suite *s)
{
    for (size_t i = 0; s->shapes && i < s->n; i++) {
        free(s->shapes[i].lengths);
        free(s->shapes[i].left_padding);
        free(s->shapes[i].sinks);
        free(s->shapes[i].sinks_f32);
        free(s->shapes[i].segment_ids);
        free(s->shapes[i].block_ids);
    }
    free(s->shapes);
    free(s->description);
    free(s->path);
    memset(s, 0, sizeof *s);
}

const char *bs_dtype_name(attnref_dtype dt)
{
    return dt == ATTNREF_F32    ? "f32"
           : dt == ATTNREF_F16  ? "f16"
           : dt == ATTNREF_BF16 ? "bf16"
                                : NULL;
}

attnref_dtype bs_dtype_from_name(const char *name)
{
    return strcmp(name, "f32") == 0    ? ATTNREF_F32
           : strcmp(name, "f16") == 0  ? ATTNREF_F16
           : strcmp(name, "bf16") == 0 ? ATTNREF_BF16
                                       : (attnref_dtype)0;
}
