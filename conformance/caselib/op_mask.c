/* op_mask.c — `op: mask` cases (cases/FORMAT.md): the keep mask the mask builder must produce
 * for causal / window / padding parameters (SPEC clauses 3-5), or the rejection.  The reader,
 * the cross-field rules, the writer and the implied capabilities of the op, in one slice over
 * the shared fields (op.h). */
#include <stdint.h>

#include "attnconf/backend.h"
#include "fields.h"
#include "op.h"

/* ---- reader ----------------------------------------------------------------------------- */

static int read_params(acase__rd *r, const yaml_node_t *n, acase *c)
{
    ayr *y = &r->y;
    ayr_field s[] = {{"lq", 1, NULL},      {"offset", 1, NULL},       {"window", 0, NULL},
                     {"lengths", 0, NULL}, {"left_padding", 0, NULL}, {"kv_len", 0, NULL},
                     {"chunk", 0, NULL},   {"segment_ids", 0, NULL},  {"block_ids", 0, NULL}};
    if (ayr_map(y, n, "params", s, 9))
        return -1;
    if (ayr_int(y, s[0].val, "params.lq", &c->lq) ||
        ayr_int(y, s[1].val, "params.offset", &c->offset))
        return -1;
    if (s[2].val && ayr_int(y, s[2].val, "params.window", &c->window))
        return -1;
    if (s[5].val) {
        if (ayr_int(y, s[5].val, "params.kv_len", &c->kv_len))
            return -1;
        if (c->kv_len <= 0)
            return ayr_fail(y, s[5].val, "params.kv_len", "must be >= 1 (omit it for offset + lq)");
    }
    const acase__terms_nodes t = {NULL, NULL, NULL, s[6].val, s[7].val, s[8].val};
    return acase__rd_padding(r, s[3].val, s[4].val, c) || acase__rd_terms(r, &t, c) ? -1 : 0;
}

/* expected.keep: {shape, data} of 0 / 1 values. */
static int read_keep(acase__rd *r, const yaml_node_t *n, acase_expected *e)
{
    ayr *y = &r->y;
    ayr_field k[] = {{"shape", 1, NULL}, {"data", 1, NULL}};
    if (ayr_map(y, n, "expected.keep", k, 2))
        return -1;
    e->dtype = ATTNREF_BOOL;
    return acase__rd_expected_data(r, k[0].val, k[1].val, "keep", e);
}

static int mask_read(acase__rd *r, const struct acase_op_nodes *n, acase *c)
{
    ayr *y = &r->y;
    if (acase__rd_one_shot(r, n) || read_params(r, n->params, c))
        return -1;
    if (n->inputs)
        return ayr_fail(y, n->inputs, "inputs", "not allowed for op mask");
    yaml_node_t *keep, *row_checks;
    if (acase__rd_expected(r, n->expected, c, 0, &keep, &row_checks) ||
        (keep && read_keep(r, keep, &c->expected)))
        return -1;
    if (n->tolerance)
        return ayr_fail(y, n->tolerance, "tolerance", "only allowed with expected.out");
    return 0;
}

/* ---- cross-field rules ------------------------------------------------------------------ */

static int mask_check(acase__chk *k, const acase *c)
{
    const acase_expected *e = &c->expected;
    if (acase__chk_expected(k, c, 0))
        return -1;
    if (c->q.present || c->k.present || c->v.present || c->mask.present)
        return acase__chk_fail(k, "inputs", "not allowed for op mask");
    if (c->has_scale || c->causal || c->has_causal_offset)
        return acase__chk_fail(k, "params", "sdpa parameters are not allowed for op mask");
    /* The static key buffer: Lk = kv_len when given (a rejection case may give a bad one). */
    const int64_t lk = c->kv_len ? c->kv_len
                                 : (c->lq >= 0 && c->offset >= 0 && c->offset <= INT64_MAX - c->lq
                                        ? c->offset + c->lq
                                        : 0);
    if (acase__chk_batch(k, c))
        return -1;
    if (c->softcap != 0.0 || c->alibi_max_bias != 0.0 || c->sinks)
        return acase__chk_fail(k, "params", "softcap, alibi_max_bias and sinks are sdpa terms");
    if (acase__chk_terms(k, c, 0, lk, 1))
        return -1;
    const int per_seq = c->lengths || c->left_padding || c->segment_ids || c->block_ids;
    /* The harness allocates the keep mask before calling a backend, also for a must-reject
     * case: a size over the limit could never be run, so it is a bad case, not a backend error. */
    if (c->lq >= 0 && c->offset >= 0) {
        const int64_t b = per_seq ? c->batch : 1;
        const int64_t lim = ACASE_MAX_TENSOR_NUMEL;
        if (c->offset > lim || c->lq > lim || lk > lim || lk < 0 ||
            (c->lq > 0 && lk > 0 && (lk > lim / c->lq || b > lim / (c->lq * lk)))) {
            /* Blame the field that alone is too large, else lq (the rows times Lk). */
            const char *field = c->lq > lim                                       ? "params.lq"
                                : c->kv_len && (c->kv_len > lim || c->kv_len < 0) ? "params.kv_len"
                                : c->offset > lim || (!c->kv_len && lk > lim)     ? "params.offset"
                                                                                  : "params.lq";
            return acase__chk_fail(k, field,
                                   "the keep mask (B, 1, lq, Lk) with lq = %lld, offset = %lld, "
                                   "kv_len = %lld would exceed %lld elements",
                                   (long long)c->lq, (long long)c->offset, (long long)c->kv_len,
                                   (long long)lim);
        }
    }
    if (e->error)
        return 0;
    if (c->lq < 0)
        return acase__chk_fail(k, "params.lq", "must be >= 0 unless expected is an error");
    if (c->offset < 0)
        return acase__chk_fail(k, "params.offset", "must be >= 0 unless expected is an error");
    if (c->window < 0)
        return acase__chk_fail(k, "params.window", "must be >= 0 unless expected is an error");
    if (c->offset > INT64_MAX - c->lq)
        return acase__chk_fail(k, "params.offset", "offset + lq overflows");
    if (c->kv_len != 0 && c->kv_len < c->offset + c->lq)
        return acase__chk_fail(k, "params.kv_len",
                               "%lld is below offset + lq = %lld (unless expected "
                               "is an error)",
                               (long long)c->kv_len, (long long)(c->offset + c->lq));
    for (int64_t i = 0; (c->lengths || c->left_padding) && i < c->batch; i++) {
        if (c->lengths && (c->lengths[i] < 0 || c->lengths[i] > lk))
            return acase__chk_fail(k, "params.lengths",
                                   "entry %lld = %lld is not in 0..Lk = %lld "
                                   "(unless expected is an error)",
                                   (long long)i, (long long)c->lengths[i], (long long)lk);
        if (c->left_padding && (c->left_padding[i] < 0 || c->left_padding[i] > lk))
            return acase__chk_fail(k, "params.left_padding",
                                   "entry %lld = %lld is not in 0..Lk = %lld "
                                   "(unless expected is an error)",
                                   (long long)i, (long long)c->left_padding[i], (long long)lk);
    }
    if (e->dtype != ATTNREF_BOOL)
        return acase__chk_fail(k, "expected.keep", "dtype must be bool");
    int64_t b = per_seq ? c->batch : 1;
    int64_t want[4] = {b, 1, c->lq, lk};
    if (e->ndim != 4 || e->shape[0] != want[0] || e->shape[1] != want[1] ||
        e->shape[2] != want[2] || e->shape[3] != want[3])
        return acase__chk_fail(k, "expected.keep.shape",
                               "must be (B, 1, lq, %s) = [%lld, 1, %lld, %lld]",
                               c->kv_len ? "kv_len" : "offset + lq", (long long)want[0],
                               (long long)want[2], (long long)want[3]);
    if (acase__chk_expected_data(k, e, "keep"))
        return -1;
    for (int64_t i = 0; i < e->numel; i++)
        if (e->values[i] != 0.0 && e->values[i] != 1.0)
            return acase__chk_fail(k, "expected.keep.data", "element %lld is not 0 or 1",
                                   (long long)i);
    return 0;
}

/* ---- writer ----------------------------------------------------------------------------- */

static void write_keep(ayw *w, const acase *c)
{
    const acase_expected *e = &c->expected;
    ayw_plain(w, "keep");
    ayw_map(w, 1);
    ayw_kints(w, "shape", e->shape, e->ndim);
    ayw_plain(w, "data");
    ayw_seq(w, 1);
    for (int64_t i = 0; i < e->numel && !w->failed; i++)
        ayw_plain(w, e->values[i] != 0.0 ? "1" : "0");
    ayw_seq_end(w);
    ayw_map_end(w);
}

static void mask_write(ayw *w, const acase *c)
{
    ayw_plain(w, "params");
    ayw_map(w, 1);
    ayw_kint(w, "lq", c->lq);
    ayw_kint(w, "offset", c->offset);
    acase__w_padding(w, c);
    if (c->kv_len)
        ayw_kint(w, "kv_len", c->kv_len);
    acase__w_terms(w, c);
    ayw_map_end(w);
    acase__w_expected(w, c, write_keep);
}

/* ---- capabilities ----------------------------------------------------------------------- */

static uint64_t mask_requires(const acase *c)
{
    uint64_t r = ATTNCONF_CAP_BUILD_MASK;
    if (c->window != 0)
        r |= ATTNCONF_CAP_WINDOW;
    if (c->lengths)
        r |= ATTNCONF_CAP_LENGTHS;
    if (c->left_padding)
        r |= ATTNCONF_CAP_LEFT_PAD;
    if (c->kv_len != 0)
        r |= ATTNCONF_CAP_KV_LEN;
    if (c->chunk != 0)
        r |= ATTNCONF_CAP_MASK_CHUNK;
    if (c->segment_ids)
        r |= ATTNCONF_CAP_MASK_SEGMENTS;
    if (c->block_ids)
        r |= ATTNCONF_CAP_MASK_BLOCKS;
    return r;
}

/* No free: every part of a mask case is a common field of acase. */
const struct acase_op_impl acase__op_mask = {.name = "mask",
                                             .op = ACASE_OP_MASK,
                                             .read = mask_read,
                                             .check = mask_check,
                                             .write = mask_write,
                                             .requires = mask_requires,
                                             .free = NULL};
