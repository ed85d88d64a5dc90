/* op_sdpa.c — `op: sdpa` cases (cases/FORMAT.md): one scaled-dot-product attention call, its
 * inputs and parameters, and the expected output within a tolerance or the rejection.  The
 * reader, the cross-field rules, the writer and the implied capabilities of the op, in one
 * slice over the shared fields (op.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnconf/backend.h"
#include "fields.h"
#include "model.h"
#include "op.h"

/* ---- reader ----------------------------------------------------------------------------- */

static int read_params(acase__rd *r, const yaml_node_t *n, acase *c)
{
    ayr *y = &r->y;
    ayr_field s[] = {{"scale", 0, NULL},   {"causal", 1, NULL},         {"causal_offset", 0, NULL},
                     {"window", 0, NULL},  {"lengths", 0, NULL},        {"left_padding", 0, NULL},
                     {"softcap", 0, NULL}, {"alibi_max_bias", 0, NULL}, {"sinks", 0, NULL},
                     {"chunk", 0, NULL},   {"segment_ids", 0, NULL},    {"block_ids", 0, NULL}};
    if (ayr_map(y, n, "params", s, 12))
        return -1;
    if (s[0].val) {
        if (ayr_double(y, s[0].val, "params.scale", &c->scale))
            return -1;
        c->has_scale = 1;
    }
    if (ayr_bool(y, s[1].val, "params.causal", &c->causal))
        return -1;
    if (s[2].val) {
        if (ayr_int(y, s[2].val, "params.causal_offset", &c->causal_offset))
            return -1;
        c->has_causal_offset = 1;
    }
    if (s[3].val && ayr_int(y, s[3].val, "params.window", &c->window))
        return -1;
    const acase__terms_nodes t = {s[6].val, s[7].val, s[8].val, s[9].val, s[10].val, s[11].val};
    return acase__rd_padding(r, s[4].val, s[5].val, c) || acase__rd_terms(r, &t, c) ? -1 : 0;
}

/* expected.row_checks: {exact: [r, ...], finite: [r, ...]} on an SDPA output whose shape has
 * been read.  Each list strictly increasing, indices in 0..nrows-1, no row in both lists (exact
 * is applied first, so an overlap is reported at its item in finite). */
static int read_row_checks(ayr *y, const yaml_node_t *n, acase_expected *e)
{
    static const char *const names[2] = {"exact", "finite"};
    static const uint8_t modes[2] = {ACASE_CHECK_EXACT, ACASE_CHECK_FINITE};
    ayr_field s[] = {{"exact", 0, NULL}, {"finite", 0, NULL}};
    char why[128];
    if (ayr_map(y, n, "expected.row_checks", s, 2))
        return -1;
    if (!s[0].val && !s[1].val)
        return ayr_fail(y, n, "expected.row_checks", "expected at least one of exact and finite");
    if (acase_expected_alloc_rows(e, why, sizeof why))
        return ayr_fail(y, n, "expected.row_checks", "%s", why);
    for (int m = 0; m < 2; m++) {
        yaml_node_t *list = s[m].val;
        if (!list)
            continue;
        char f[AYR_FIELD_MAX];
        ayr_fieldf(f, "expected.row_checks.%s", names[m]);
        if (ayr_seq(y, list, f, "a sequence of row indices", NULL))
            return -1;
        int64_t prev = -1;
        for (size_t i = 0; i < ayr_seq_len(list); i++) {
            char fi[AYR_FIELD_MAX];
            yaml_node_t *it = ayr_item_at(y, list, f, i, fi);
            int64_t row;
            if (!it || ayr_int(y, it, fi, &row))
                return -1;
            if (row < 0 || row >= e->nrows) {
                if (e->nrows == 0)
                    return ayr_fail(y, it, fi, "row %lld is out of range: the output has no rows",
                                    (long long)row);
                return ayr_fail(y, it, fi, "row %lld is out of range 0..%lld (B*Hq*Lq = %lld rows)",
                                (long long)row, (long long)(e->nrows - 1), (long long)e->nrows);
            }
            if (row <= prev)
                return ayr_fail(y, it, fi,
                                "row %lld does not follow %lld: indices must be "
                                "strictly increasing",
                                (long long)row, (long long)prev);
            if (e->row_check[row] != ACASE_CHECK_CLOSE)
                return ayr_fail(y, it, fi, "row %lld is also listed in %s", (long long)row,
                                names[e->row_check[row] == ACASE_CHECK_EXACT ? 0 : 1]);
            e->row_check[row] = modes[m];
            prev = row;
        }
    }
    return 0;
}

/* tolerance: {ulps: float, row_atol: [float, ...]} with one row_atol per output row (the
 * expected output has been read). */
static int read_tolerance(ayr *y, const yaml_node_t *n, acase *c)
{
    ayr_field t[] = {{"ulps", 1, NULL}, {"row_atol", 1, NULL}};
    char why[128];
    if (ayr_map(y, n, "tolerance", t, 2))
        return -1;
    if (ayr_double(y, t[0].val, "tolerance.ulps", &c->ulps))
        return -1;
    if (!isfinite(c->ulps) || c->ulps < 0)
        return ayr_fail(y, t[0].val, "tolerance.ulps", "must be finite and >= 0");
    yaml_node_t *list = t[1].val;
    if (ayr_seq(y, list, "tolerance.row_atol", "a sequence of floats, one per output row", NULL))
        return -1;
    int64_t rows = acase_expected_rows(&c->expected);
    if (rows < 0)
        return ayr_fail(y, list, "tolerance.row_atol", "the output shape has no rows");
    if ((int64_t)ayr_seq_len(list) != rows)
        return ayr_fail(y, list, "tolerance.row_atol",
                        "has %zu values, the output has B*Hq*Lq = %lld rows", ayr_seq_len(list),
                        (long long)rows);
    if (acase_row_atol_alloc(c, why, sizeof why))
        return ayr_fail(y, list, "tolerance.row_atol", "%s", why);
    for (int64_t i = 0; i < rows; i++) {
        char fi[AYR_FIELD_MAX];
        yaml_node_t *it = ayr_item_at(y, list, "tolerance.row_atol", (size_t)i, fi);
        if (!it || ayr_double(y, it, fi, &c->row_atol[i]))
            return -1;
        if (!isfinite(c->row_atol[i]) || c->row_atol[i] < 0)
            return ayr_fail(y, it, fi, "must be finite and >= 0");
    }
    return 0;
}

/* expected.out: {dtype, shape, data} of a float dtype, then its row checks. */
static int read_out(acase__rd *r, const yaml_node_t *n, const yaml_node_t *row_checks,
                    acase_expected *e)
{
    ayr *y = &r->y;
    ayr_field o[] = {{"dtype", 1, NULL}, {"shape", 1, NULL}, {"data", 1, NULL}};
    if (ayr_map(y, n, "expected.out", o, 3))
        return -1;
    if (acase__rd_dtype(y, o[0].val, "expected.out.dtype", &e->dtype))
        return -1;
    if (e->dtype == ATTNREF_BOOL)
        return ayr_fail(y, o[0].val, "expected.out.dtype", "must be f32, f16 or bf16");
    if (acase__rd_expected_data(r, o[1].val, o[2].val, "out", e))
        return -1;
    return row_checks ? read_row_checks(y, row_checks, e) : 0;
}

/* v of `view: k_prefix`: its values are the first Dv columns of k. */
static int fill_k_prefix(ayr *y, const yaml_node_t *n, acase *c)
{
    acase_tensor *k = &c->k, *v = &c->v;
    char why[128];
    if (k->ndim != 4 || k->dtype != v->dtype || k->shape[0] != v->shape[0] ||
        k->shape[1] != v->shape[1] || k->shape[2] != v->shape[2] || v->shape[3] > k->shape[3])
        return ayr_fail(y, n, "inputs.v.view",
                        "k_prefix needs v of k's dtype and shape but a last extent Dv <= D");
    if (acase_tensor_alloc(v, why, sizeof why))
        return ayr_fail(y, n, "inputs.v", "%s", why);
    const size_t es = attnref_dtype_size(v->dtype);
    const int64_t rows = v->shape[0] * v->shape[1] * v->shape[2];
    const int64_t dv = v->shape[3], d = k->shape[3];
    for (int64_t r = 0; r < rows && dv > 0; r++)
        memcpy((char *)v->data + (size_t)(r * dv) * es,
               (const char *)k->data + (size_t)(r * d) * es, (size_t)dv * es);
    return 0;
}

static int sdpa_read(acase__rd *r, const struct acase_op_nodes *n, acase *c)
{
    ayr *y = &r->y;
    if (acase__rd_one_shot(r, n) || read_params(r, n->params, c))
        return -1;
    if (!n->inputs)
        return ayr_fail(y, n->root, "inputs", "required key missing (op sdpa)");
    ayr_field in[] = {{"q", 1, NULL}, {"k", 1, NULL}, {"v", 1, NULL}, {"mask", 0, NULL}};
    if (ayr_map(y, n->inputs, "inputs", in, 4))
        return -1;
    if (acase__rd_tensor(r, in[0].val, "q", &c->q) || acase__rd_tensor(r, in[1].val, "k", &c->k) ||
        acase__rd_tensor(r, in[2].val, "v", &c->v))
        return -1;
    if (in[3].val && acase__rd_tensor(r, in[3].val, "mask", &c->mask))
        return -1;
    if (c->v.view_k_prefix && fill_k_prefix(y, in[2].val, c))
        return -1;

    yaml_node_t *out, *row_checks;
    if (acase__rd_expected(r, n->expected, c, 1, &out, &row_checks) ||
        (out && read_out(r, out, row_checks, &c->expected)))
        return -1;

    int has_out = !c->expected.error;
    if (has_out && !n->tolerance)
        return ayr_fail(y, n->root, "tolerance", "required key missing (expected.out is given)");
    if (!has_out && n->tolerance)
        return ayr_fail(y, n->tolerance, "tolerance", "only allowed with expected.out");
    return n->tolerance ? read_tolerance(y, n->tolerance, c) : 0;
}

/* ---- cross-field rules ------------------------------------------------------------------ */

static int check_tensor(acase__chk *k, const char *name, const acase_tensor *t)
{
    char f[64], why[128];
    int64_t n;
    snprintf(f, sizeof f, "inputs.%s.dtype", name);
    if (t->dtype < ATTNREF_F32 || t->dtype > ATTNREF_BOOL)
        return acase__chk_fail(k, f, "unknown dtype %d", (int)t->dtype);
    snprintf(f, sizeof f, "inputs.%s.shape", name);
    if (acase_numel(t->ndim, t->shape, &n, why, sizeof why) != 0)
        return acase__chk_fail(k, f, "%s", why);
    if (n != t->numel)
        return acase__chk_fail(k, f, "numel %lld does not match the shape (%lld elements)",
                               (long long)t->numel, (long long)n);
    snprintf(f, sizeof f, "inputs.%s.layout", name);
    if (t->layout != ACASE_LAYOUT_BHLD && t->layout != ACASE_LAYOUT_BLHD)
        return acase__chk_fail(k, f, "unknown layout %d", (int)t->layout);
    if (t->layout == ACASE_LAYOUT_BLHD && t->ndim != 4)
        return acase__chk_fail(k, f, "blhd needs a rank-4 tensor (rank is %d)", (int)t->ndim);
    if (t->stride0) {
        snprintf(f, sizeof f, "inputs.%s.stride0", name);
        if (t->stride0 & ~3u)
            return acase__chk_fail(k, f,
                                   "only dimensions 0 (batch) and 1 (heads) can have stride 0");
        if (t->ndim != 4)
            return acase__chk_fail(k, f, "needs a rank-4 tensor (rank is %d)", (int)t->ndim);
        if (strcmp(name, "mask") == 0)
            return acase__chk_fail(k, f, "only q, k and v (a mask broadcasts by its shape)");
        if (n > 0 && t->data) {
            int64_t at;
            if ((at = acase__stride0_mismatch(t)) >= 0)
                return acase__chk_fail(k, f,
                                       "element %lld differs from its slice: a stride-0 tensor "
                                       "must be constant along those dimensions",
                                       (long long)at);
        }
    }
    if (t->source == ACASE_SRC_UNIFORM) {
        snprintf(f, sizeof f, "inputs.%s.generate", name);
        if (!acase__is_float_dtype(t->dtype))
            return acase__chk_fail(k, f, "only float tensors can be generated (dtype is %s)",
                                   attnref_dtype_name(t->dtype));
        if (!isfinite(t->lo) || !isfinite(t->hi) || !(t->lo <= t->hi) || !isfinite(t->hi - t->lo))
            return acase__chk_fail(k, f, "need finite lo <= hi with a finite hi - lo");
    } else if (t->source != ACASE_SRC_INLINE) {
        snprintf(f, sizeof f, "inputs.%s", name);
        return acase__chk_fail(k, f, "unknown source %d", (int)t->source);
    }
    if (n > 0 && !t->data) {
        snprintf(f, sizeof f, "inputs.%s.data", name);
        return acase__chk_fail(k, f, "no data");
    }
    return 0;
}

/* Format v3's row_pad (q, k, v) and v's `view: k_prefix`: v then is the first Dv columns of
 * k's buffer, so it must be one with k in everything but its last extent, and hold exactly
 * those values. */
static int check_views(acase__chk *k, const acase *c)
{
    const acase_tensor *ts[4] = {&c->q, &c->k, &c->v, &c->mask};
    const char *names[4] = {"q", "k", "v", "mask"};
    for (int t = 0; t < 4; t++) {
        if (!ts[t]->present)
            continue;
        char f[64];
        if (ts[t]->row_pad) {
            snprintf(f, sizeof f, "inputs.%s.row_pad", names[t]);
            if (t == 3)
                return acase__chk_fail(k, f, "only q, k and v");
            if (ts[t]->ndim != 4 || ts[t]->row_pad < 0 || ts[t]->row_pad > ACASE_MAX_ROW_PAD)
                return acase__chk_fail(k, f, "needs a rank-4 tensor and 1..%d elements",
                                       ACASE_MAX_ROW_PAD);
            if (ts[t]->stride0 || ts[t]->layout != ACASE_LAYOUT_BHLD)
                return acase__chk_fail(k, f, "only with the bhld layout and without stride0");
        }
        if (ts[t]->view_k_prefix && t != 2) {
            snprintf(f, sizeof f, "inputs.%s.view", names[t]);
            return acase__chk_fail(k, f, "only v can be a view of k");
        }
    }
    const acase_tensor *kt = &c->k, *vt = &c->v;
    if (!vt->present || !vt->view_k_prefix)
        return 0;
    if (!kt->present || kt->ndim != 4 || vt->ndim != 4 || kt->dtype != vt->dtype ||
        kt->shape[0] != vt->shape[0] || kt->shape[1] != vt->shape[1] ||
        kt->shape[2] != vt->shape[2] || vt->shape[3] > kt->shape[3])
        return acase__chk_fail(k, "inputs.v.view",
                               "k_prefix needs v of k's dtype and shape but a last extent "
                               "Dv <= D");
    if (vt->stride0 || vt->row_pad || vt->layout != ACASE_LAYOUT_BHLD)
        return acase__chk_fail(k, "inputs.v.view", "k_prefix takes k's layout: give v none");
    const size_t es = attnref_dtype_size(vt->dtype);
    const int64_t rows = vt->shape[0] * vt->shape[1] * vt->shape[2];
    const int64_t dv = vt->shape[3], d = kt->shape[3];
    for (int64_t r = 0; vt->data && kt->data && r < rows; r++)
        if (memcmp((const char *)vt->data + (size_t)(r * dv) * es,
                   (const char *)kt->data + (size_t)(r * d) * es, (size_t)dv * es) != 0)
            return acase__chk_fail(k, "inputs.v.view",
                                   "v row %lld differs from the first Dv columns of k",
                                   (long long)r);
    return 0;
}

static int sdpa_check(acase__chk *k, const acase *c)
{
    const acase_expected *e = &c->expected;
    if (acase__chk_expected(k, c, 1))
        return -1;
    if (!c->q.present)
        return acase__chk_fail(k, "inputs.q", "required for op sdpa");
    if (!c->k.present)
        return acase__chk_fail(k, "inputs.k", "required for op sdpa");
    if (!c->v.present)
        return acase__chk_fail(k, "inputs.v", "required for op sdpa");
    if (check_tensor(k, "q", &c->q) || check_tensor(k, "k", &c->k) || check_tensor(k, "v", &c->v))
        return -1;
    if (c->mask.present && check_tensor(k, "mask", &c->mask))
        return -1;
    if (c->causal != 0 && c->causal != 1)
        return acase__chk_fail(k, "params.causal", "must be 0 or 1");
    if (c->has_scale != 0 && c->has_scale != 1)
        return acase__chk_fail(k, "params.scale", "has_scale must be 0 or 1");
    if (c->has_causal_offset && !c->causal)
        return acase__chk_fail(k, "params.causal_offset", "only allowed with causal: true");
    if (c->lq || c->offset || c->kv_len)
        return acase__chk_fail(k, "params", "mask-builder parameters are not allowed for op sdpa");
    if (acase__chk_batch(k, c))
        return -1;
    if (check_views(k, c))
        return -1;
    const int qk4 = c->q.ndim == 4 && c->k.ndim == 4;
    if (acase__chk_terms(k, c, qk4 ? c->q.shape[1] : 0, qk4 ? c->k.shape[2] : 0, c->causal))
        return -1;
    if (e->error)
        return 0;
    if (c->window < 0)
        return acase__chk_fail(k, "params.window", "must be >= 0 unless expected is an error");
    if (c->window && !c->causal)
        return acase__chk_fail(k, "params.window",
                               "needs causal: true unless expected is an error");
    /* A case with an expected output must be well formed enough to allocate it. */
    if (c->q.ndim != 4 || c->k.ndim != 4 || c->v.ndim != 4)
        return acase__chk_fail(k, "inputs",
                               "q, k and v must have rank 4 unless expected is an error");
    if (c->causal && c->mask.present)
        return acase__chk_fail(k, "params.causal",
                               "causal together with a mask tensor must be an error case");
    if (c->lengths || c->left_padding || c->segment_ids || c->block_ids) {
        const char *f = c->lengths        ? "params.lengths"
                        : c->left_padding ? "params.left_padding"
                        : c->segment_ids  ? "params.segment_ids"
                                          : "params.block_ids";
        if (c->batch != c->q.shape[0])
            return acase__chk_fail(k, f,
                                   "has %lld entries, q has batch %lld (must be equal unless "
                                   "expected is an error)",
                                   (long long)c->batch, (long long)c->q.shape[0]);
        for (int64_t b = 0; b < c->batch; b++) {
            if (c->lengths && (c->lengths[b] < 0 || c->lengths[b] > c->k.shape[2]))
                return acase__chk_fail(k, "params.lengths",
                                       "entry %lld = %lld is not in 0..Lk = %lld", (long long)b,
                                       (long long)c->lengths[b], (long long)c->k.shape[2]);
            if (c->left_padding && (c->left_padding[b] < 0 || c->left_padding[b] > c->k.shape[2]))
                return acase__chk_fail(k, "params.left_padding",
                                       "entry %lld = %lld is not in 0..Lk = %lld", (long long)b,
                                       (long long)c->left_padding[b], (long long)c->k.shape[2]);
        }
    }
    if (!acase__is_float_dtype(e->dtype))
        return acase__chk_fail(k, "expected.out.dtype", "must be f32, f16 or bf16");
    int64_t want[4] = {c->q.shape[0], c->q.shape[1], c->q.shape[2], c->v.shape[3]};
    if (e->ndim != 4 || e->shape[0] != want[0] || e->shape[1] != want[1] ||
        e->shape[2] != want[2] || e->shape[3] != want[3])
        return acase__chk_fail(
            k, "expected.out.shape", "must be (B, Hq, Lq, Dv) = [%lld, %lld, %lld, %lld]",
            (long long)want[0], (long long)want[1], (long long)want[2], (long long)want[3]);
    char why[128];
    if (acase__chk_expected_data(k, e, "out"))
        return -1;
    if (e->row_check) {
        int64_t rows = acase__expected_rows_why(e, why, sizeof why);
        if (rows < 0)
            return acase__chk_fail(k, "expected.out.shape", "%s", why);
        if (e->nrows != rows)
            return acase__chk_fail(k, "expected.row_checks",
                                   "has %lld rows, the output has B*Hq*Lq = %lld",
                                   (long long)e->nrows, (long long)rows);
        for (int64_t r = 0; r < e->nrows; r++)
            if (e->row_check[r] > ACASE_CHECK_FINITE)
                return acase__chk_fail(k, "expected.row_checks",
                                       "row %lld has unknown check mode %u", (long long)r,
                                       (unsigned)e->row_check[r]);
    }
    if (!isfinite(c->ulps) || c->ulps < 0)
        return acase__chk_fail(k, "tolerance.ulps", "must be finite and >= 0");
    int64_t rows = acase__expected_rows_why(e, why, sizeof why);
    if (rows < 0)
        return acase__chk_fail(k, "expected.out.shape", "%s", why);
    if (rows > 0 && !c->row_atol)
        return acase__chk_fail(k, "tolerance.row_atol", "missing (one value per output row)");
    for (int64_t r = 0; r < rows; r++)
        if (!isfinite(c->row_atol[r]) || c->row_atol[r] < 0)
            return acase__chk_fail(k, "tolerance.row_atol", "row %lld: %g is not finite and >= 0",
                                   (long long)r, c->row_atol[r]);
    return 0;
}

/* ---- writer ----------------------------------------------------------------------------- */

static void write_out(ayw *w, const acase *c)
{
    const acase_expected *e = &c->expected;
    ayw_plain(w, "out");
    ayw_map(w, 1);
    ayw_plain(w, "dtype");
    ayw_plain(w, attnref_dtype_name(e->dtype));
    ayw_kints(w, "shape", e->shape, e->ndim);
    ayw_plain(w, "data");
    ayw_doubles(w, e->values, e->numel, 0);
    ayw_map_end(w);
    acase__w_row_checks(w, e->row_check, e->nrows);
}

static void sdpa_write(ayw *w, const acase *c)
{
    ayw_plain(w, "params");
    ayw_map(w, 1);
    if (c->has_scale) {
        ayw_plain(w, "scale");
        ayw_double_short(w, c->scale);
    }
    ayw_plain(w, "causal");
    ayw_plain(w, c->causal ? "true" : "false");
    if (c->has_causal_offset)
        ayw_kint(w, "causal_offset", c->causal_offset);
    acase__w_padding(w, c);
    acase__w_terms(w, c);
    ayw_map_end(w);

    ayw_plain(w, "inputs");
    ayw_map(w, 0);
    acase__w_tensor(w, "q", &c->q);
    acase__w_tensor(w, "k", &c->k);
    acase__w_tensor(w, "v", &c->v);
    if (c->mask.present)
        acase__w_tensor(w, "mask", &c->mask);
    ayw_map_end(w);

    acase__w_expected(w, c, write_out);
    if (!c->expected.error) {
        ayw_plain(w, "tolerance");
        ayw_map(w, 1);
        ayw_plain(w, "ulps");
        ayw_double_short(w, c->ulps);
        ayw_plain(w, "row_atol");
        ayw_doubles(w, c->row_atol, acase_expected_rows(&c->expected), 1);
        ayw_map_end(w);
    }
}

/* ---- capabilities ----------------------------------------------------------------------- */

static uint64_t sdpa_requires(const acase *c)
{
    uint64_t r = 0;
    const acase_tensor *q = &c->q, *k = &c->k, *v = &c->v, *m = &c->mask;
    /* The float dtypes of q, k and v (equal in a valid call; an error case that mixes them needs
     * every dtype it uses). */
    if (q->present)
        r |= acase__dtype_cap(q->dtype);
    if (k->present)
        r |= acase__dtype_cap(k->dtype);
    if (v->present)
        r |= acase__dtype_cap(v->dtype);
    if (m->present)
        r |= m->dtype == ATTNREF_BOOL ? ATTNCONF_CAP_MASK_BOOL : ATTNCONF_CAP_MASK_ADD;
    if (c->causal)
        r |= ATTNCONF_CAP_CAUSAL;
    if (c->has_causal_offset)
        r |= ATTNCONF_CAP_CAUSAL_OFFSET;
    if (c->has_scale)
        r |= ATTNCONF_CAP_SCALE;
    if (c->window != 0)
        r |= ATTNCONF_CAP_SDPA_WINDOW;
    if (c->lengths)
        r |= ATTNCONF_CAP_SDPA_LENGTHS;
    if (c->left_padding)
        r |= ATTNCONF_CAP_SDPA_LEFT_PAD;
    if (c->softcap != 0.0)
        r |= ATTNCONF_CAP_SOFTCAP;
    if (c->alibi_max_bias != 0.0)
        r |= ATTNCONF_CAP_ALIBI;
    if (c->sinks)
        r |= ATTNCONF_CAP_SINKS;
    if (c->chunk != 0)
        r |= ATTNCONF_CAP_CHUNK;
    if (c->segment_ids)
        r |= ATTNCONF_CAP_SEGMENTS;
    if (c->block_ids)
        r |= ATTNCONF_CAP_BLOCKS;
    /* A padded row pitch, or V seen through K's buffer (its rows are D apart, not Dv), is a
     * non-contiguous view. */
    if ((q->present && q->row_pad) || (k->present && k->row_pad) || (v->present && v->row_pad))
        r |= ATTNCONF_CAP_STRIDED;
    if (v->present && v->view_k_prefix && k->present && k->ndim == 4 && v->ndim == 4 &&
        v->shape[3] != k->shape[3])
        r |= ATTNCONF_CAP_STRIDED;
    if ((q->present && q->stride0) || (k->present && k->stride0) || (v->present && v->stride0))
        r |= ATTNCONF_CAP_STRIDE0;
    if ((q->present && q->layout == ACASE_LAYOUT_BLHD) ||
        (k->present && k->layout == ACASE_LAYOUT_BLHD) ||
        (v->present && v->layout == ACASE_LAYOUT_BLHD))
        r |= ATTNCONF_CAP_STRIDED;
    int qk4 = q->present && k->present && q->ndim == 4 && k->ndim == 4;
    if (qk4 && q->shape[1] != k->shape[1])
        r |= ATTNCONF_CAP_GQA;
    if (q->present && v->present && q->ndim == 4 && v->ndim == 4 && v->shape[3] != q->shape[3])
        r |= ATTNCONF_CAP_DV_NE_D;
    if (m->present) {
        /* Anything but exactly (B, Hq, Lq, Lk) is a broadcast; when q or k is not rank 4 (an
         * error case) the full shape is unknown and only a rank != 4 counts. */
        if (m->ndim != 4)
            r |= ATTNCONF_CAP_MASK_BCAST;
        else if (qk4 && (m->shape[0] != q->shape[0] || m->shape[1] != q->shape[1] ||
                         m->shape[2] != q->shape[2] || m->shape[3] != k->shape[2]))
            r |= ATTNCONF_CAP_MASK_BCAST;
    }
    return r;
}

/* No free: every part of an sdpa case is a common field of acase. */
const struct acase_op_impl acase__op_sdpa = {.name = "sdpa",
                                             .op = ACASE_OP_SDPA,
                                             .read = sdpa_read,
                                             .check = sdpa_check,
                                             .write = sdpa_write,
                                             .requires = sdpa_requires,
                                             .free = NULL};
