/* fields.c — the case-format fields of fields.h: what op sdpa, op mask and op cache share (the
 * readers moved out of read.c, the writers out of write.c and cache_case.c). */
#include "fields.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading ---------------------------------------------------------------------------- */
/* Charge n (>= 0, at most ACASE_MAX_TENSOR_NUMEL) elements that are about to be allocated to
 * the file's budget; -1 with the error at node/field once the running total would exceed
 * ACASE_MAX_CASE_NUMEL (checked before anything is allocated, so a file whose every tensor is
 * within the per-tensor limit still cannot make the reader allocate without bound). */
int acase__rd_charge(acase__rd *r, const yaml_node_t *node, const char *field, int64_t n)
{
    ayr *y = &r->y;
    /* Both operands are within [0, ACASE_MAX_CASE_NUMEL], so the comparison cannot overflow. */
    if (n < 0 || n > ACASE_MAX_CASE_NUMEL - r->numel_total)
        return ayr_fail(y, node, field,
                        "the case's tensors exceed %lld elements in total "
                        "(ACASE_MAX_CASE_NUMEL; %lld already read, this one has %lld)",
                        (long long)ACASE_MAX_CASE_NUMEL, (long long)r->numel_total, (long long)n);
    r->numel_total += n;
    return 0;
}

int acase__rd_shape(ayr *y, const yaml_node_t *n, const char *field, int32_t *ndim,
                    int64_t shape[4])
{
    static const char what[] = "expected a sequence of 0..4 non-negative integers";
    if (n->type != YAML_SEQUENCE_NODE || ayr_seq_len(n) > 4)
        return ayr_fail(y, n, field, "%s", what);
    if (ayr_check_tag(y, n, field))
        return -1;
    size_t len = ayr_seq_len(n);
    for (size_t i = 0; i < len; i++) {
        yaml_node_t *it = ayr_item(y, n, i);
        if (!it || it->type != YAML_SCALAR_NODE ||
            it->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || ayr_check_tag(y, it, field) ||
            !ayr_int_text(ayr_text(it), 1))
            return ayr_fail(y, n, field, "%s (item %zu is not an integer)", what, i);
        errno = 0;
        long long v = strtoll(ayr_text(it), NULL, 10);
        if (errno == ERANGE)
            return ayr_fail(y, n, field, "%s (item %zu is out of range)", what, i);
        if (v < 0)
            return ayr_fail(y, n, field, "%s (item %zu is %lld)", what, i, v);
        shape[i] = (int64_t)v;
    }
    for (size_t i = len; i < 4; i++)
        shape[i] = 0;
    *ndim = (int32_t)len;
    return 0;
}

int acase__rd_dtype(ayr *y, const yaml_node_t *n, const char *field, attnref_dtype *dt)
{
    const char *s;
    if (ayr_str(y, n, field, &s))
        return -1;
    if (!strcmp(s, "f32"))
        *dt = ATTNREF_F32;
    else if (!strcmp(s, "f16"))
        *dt = ATTNREF_F16;
    else if (!strcmp(s, "bf16"))
        *dt = ATTNREF_BF16;
    else if (!strcmp(s, "bool"))
        *dt = ATTNREF_BOOL;
    else
        return ayr_fail(y, n, field, "unknown dtype '%s' (expected f32, f16, bf16 or bool)", s);
    return 0;
}

/* Check that a data sequence has exactly numel items (before anything is allocated). */
static int check_data_len(ayr *y, const yaml_node_t *n, const char *field, int64_t numel)
{
    if (ayr_seq(y, n, field, "a sequence of values", NULL))
        return -1;
    size_t len = ayr_seq_len(n);
    if ((uint64_t)len != (uint64_t)numel)
        return ayr_fail(y, n, field, "has %zu values, the shape needs %lld", len, (long long)numel);
    return 0;
}

static int hex16_text(const char *s, unsigned *out)
{
    if (s[0] != '0' || s[1] != 'x')
        return 0;
    size_t nd = 0;
    unsigned v = 0;
    for (const char *p = s + 2; *p; p++, nd++) {
        char ch = *p;
        unsigned d;
        if (ch >= '0' && ch <= '9')
            d = (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            d = (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F')
            d = (unsigned)(ch - 'A' + 10);
        else
            return 0;
        if (nd >= 4)
            return 0;
        v = v * 16 + d;
    }
    if (nd == 0)
        return 0;
    *out = v;
    return 1;
}

/* Decode one inline element into element i of t. */
static int read_element(ayr *y, const yaml_node_t *it, const char *field, acase_tensor *t,
                        int64_t i)
{
    const char *what = t->dtype == ATTNREF_BOOL  ? "a byte 0..255"
                       : t->dtype == ATTNREF_F32 ? "a float"
                                                 : "a 0x0000..0xffff bit pattern";
    if (!it)
        return ayr_fail(y, NULL, field, "malformed sequence");
    if (ayr_expect_plain(y, it, field, what))
        return -1;
    const char *s = ayr_text(it);
    if (t->dtype == ATTNREF_BOOL) {
        /* Any byte: 0 is false, every other value true (the ABI's BOOL), so a case can hold
         * 2 or 255 and catch a backend that tests == 1 or & 1. */
        size_t len = strlen(s);
        int ok =
            len >= 1 && len <= 3 && strspn(s, "0123456789") == len && (len == 1 || s[0] != '0');
        long v = ok ? strtol(s, NULL, 10) : -1;
        if (!ok || v > 255)
            return ayr_fail(y, it, field, "expected a byte 0..255, got '%s'", s);
        ((uint8_t *)t->data)[i] = (uint8_t)v;
        return 0;
    }
    int kind = ayr_float_text(s);
    if (t->dtype == ATTNREF_F32) {
        if (!kind)
            return ayr_fail(y, it, field, "%s, got '%s'", ayr_float_hint, s);
        float f;
        if (kind >= 2) {
            double d;
            ayr_parse_f64(s, kind, &d); /* a special value: cannot overflow */
            f = (float)d;
        } else {
            f = strtof(s, NULL); /* correctly rounded (RNE) from the decimal text */
            if (isinf(f))
                return ayr_fail(y, it, field, "'%s' overflows f32 (write .inf)", s);
        }
        ((float *)t->data)[i] = f;
        return 0;
    }
    /* f16 / bf16: a bit pattern, or a decimal that the dtype represents exactly. */
    unsigned bits;
    uint16_t h;
    if (hex16_text(s, &bits)) {
        h = (uint16_t)bits;
    } else if (kind == 1 || kind == 2) {
        double d;
        if (ayr_parse_f64(s, kind, &d))
            return ayr_fail(y, it, field, "'%s' overflows binary64", s);
        h = t->dtype == ATTNREF_F16 ? attnref_f64_to_f16(d) : attnref_f64_to_bf16(d);
        double back = t->dtype == ATTNREF_F16 ? (double)attnref_f16_to_f32(h)
                                              : (double)attnref_bf16_to_f32(h);
        if (back != d || signbit(back) != signbit(d))
            return ayr_fail(y, it, field,
                            "%s is not exactly representable in %s (use a bit pattern)", s,
                            attnref_dtype_name(t->dtype));
    } else {
        return ayr_fail(y, it, field,
                        "expected a bit pattern 0x0000..0xffff or an exactly representable decimal"
                        " (NaN only as a bit pattern), got '%s'",
                        s);
    }
    ((uint16_t *)t->data)[i] = h;
    return 0;
}

static int read_generate(ayr *y, const yaml_node_t *n, const char *path, acase_tensor *t)
{
    ayr_field g[] = {{"kind", 1, NULL}, {"seed", 1, NULL}, {"lo", 1, NULL}, {"hi", 1, NULL}};
    char f[AYR_FIELD_MAX];
    if (ayr_map(y, n, path, g, 4))
        return -1;
    const char *kind;
    ayr_join(f, path, "kind");
    if (ayr_str(y, g[0].val, f, &kind))
        return -1;
    if (strcmp(kind, "uniform") != 0)
        return ayr_fail(y, g[0].val, f, "unknown generator '%s' (expected uniform)", kind);
    ayr_join(f, path, "seed");
    if (ayr_u64(y, g[1].val, f, &t->seed))
        return -1;
    ayr_join(f, path, "lo");
    if (ayr_double(y, g[2].val, f, &t->lo))
        return -1;
    ayr_join(f, path, "hi");
    if (ayr_double(y, g[3].val, f, &t->hi))
        return -1;
    if (t->dtype == ATTNREF_BOOL)
        return ayr_fail(y, n, path, "only f32, f16 and bf16 tensors can be generated");
    if (!isfinite(t->lo) || !isfinite(t->hi) || !(t->lo <= t->hi) || !isfinite(t->hi - t->lo))
        return ayr_fail(y, n, path, "need finite lo <= hi with a finite hi - lo");
    t->source = ACASE_SRC_UNIFORM;
    char why[256];
    if (acase_tensor_generate(t, why, sizeof why))
        return ayr_fail(y, n, path, "%s", why);
    return 0;
}

/* `stride0: [d, ...]`: a non-empty, strictly increasing list of dimensions in 0..1 of a rank-4
 * tensor. */
static int read_stride0(ayr *y, const yaml_node_t *n, const char *field, const acase_tensor *t,
                        uint8_t *bits)
{
    if (ayr_seq(y, n, field, "a sequence of dimensions (0 = batch, 1 = heads)", NULL))
        return -1;
    size_t len = ayr_seq_len(n);
    if (len < 1 || len > 2)
        return ayr_fail(y, n, field, "expected 1 or 2 dimensions out of 0 (batch) and 1 (heads)");
    if (t->ndim != 4)
        return ayr_fail(y, n, field, "needs a rank-4 tensor (rank is %d)", (int)t->ndim);
    int64_t prev = -1;
    for (size_t i = 0; i < len; i++) {
        char fi[AYR_FIELD_MAX];
        yaml_node_t *it = ayr_item_at(y, n, field, i, fi);
        int64_t d;
        if (!it || ayr_int(y, it, fi, &d))
            return -1;
        if (d < 0 || d > 1)
            return ayr_fail(y, it, fi,
                            "dimension %lld: only 0 (batch) and 1 (heads) can have "
                            "stride 0",
                            (long long)d);
        if (d <= prev)
            return ayr_fail(y, it, fi, "dimensions must be strictly increasing");
        *bits |= (uint8_t)(1u << d);
        prev = d;
    }
    return 0;
}

static int expand_stride0(ayr *y, const yaml_node_t *n, const char *path, acase_tensor *t,
                          uint8_t stride0, const int64_t logical[4])
{
    char f[AYR_FIELD_MAX], why[256];
    ayr_join(f, path, "stride0");
    if (acase_tensor_broadcast(t, stride0, logical, why, sizeof why))
        return ayr_fail(y, n, f, "%s", why);
    return 0;
}

int acase__rd_tensor(acase__rd *r, const yaml_node_t *n, const char *name, acase_tensor *t)
{
    ayr *y = &r->y;
    char path[AYR_FIELD_MAX], f[AYR_FIELD_MAX], why[128];
    /* A name with a '.' is already a full path (a cache step's "steps[3].k"). */
    ayr_fieldf(path, strchr(name, '.') ? "%s" : "inputs.%s", name);
    ayr_field s[] = {{"dtype", 1, NULL},   {"shape", 1, NULL},    {"layout", 0, NULL},
                     {"data", 0, NULL},    {"generate", 0, NULL}, {"stride0", 0, NULL},
                     {"row_pad", 0, NULL}, {"view", 0, NULL}};
    if (ayr_map(y, n, path, s, 8))
        return -1;
    t->present = 1;
    ayr_join(f, path, "dtype");
    if (acase__rd_dtype(y, s[0].val, f, &t->dtype))
        return -1;
    ayr_join(f, path, "shape");
    if (acase__rd_shape(y, s[1].val, f, &t->ndim, t->shape))
        return -1;
    if (acase_numel(t->ndim, t->shape, &t->numel, why, sizeof why))
        return ayr_fail(y, s[1].val, f, "%s", why);
    t->layout = ACASE_LAYOUT_BHLD;
    if (s[2].val) {
        const char *lay;
        ayr_join(f, path, "layout");
        if (ayr_str(y, s[2].val, f, &lay))
            return -1;
        if (!strcmp(lay, "bhld"))
            t->layout = ACASE_LAYOUT_BHLD;
        else if (!strcmp(lay, "blhd"))
            t->layout = ACASE_LAYOUT_BLHD;
        else
            return ayr_fail(y, s[2].val, f, "unknown layout '%s' (expected bhld or blhd)", lay);
        if (t->layout == ACASE_LAYOUT_BLHD && t->ndim != 4)
            return ayr_fail(y, s[2].val, f, "blhd needs a rank-4 tensor");
    }
    if (s[6].val) {
        ayr_join(f, path, "row_pad");
        if (ayr_int(y, s[6].val, f, &t->row_pad))
            return -1;
        if (t->row_pad < 1 || t->row_pad > ACASE_MAX_ROW_PAD || t->ndim != 4)
            return ayr_fail(y, s[6].val, f, "expected 1..%d on a rank-4 tensor", ACASE_MAX_ROW_PAD);
    }
    if (s[7].val) {
        /* v seen through k's buffer: its values are k's first Dv columns, filled in by the op's
         * reader once k is read, so the file holds no data for it. */
        const char *view;
        ayr_join(f, path, "view");
        if (ayr_str(y, s[7].val, f, &view))
            return -1;
        if (strcmp(view, "k_prefix") != 0)
            return ayr_fail(y, s[7].val, f, "unknown view '%s' (expected k_prefix)", view);
        if (strcmp(name, "v") != 0 || t->ndim != 4)
            return ayr_fail(y, s[7].val, f, "only a rank-4 inputs.v can be a view of k");
        if (s[3].val || s[4].val || s[5].val || s[2].val || s[6].val)
            return ayr_fail(y, n, path,
                            "a view takes k's data and layout: no data, generate, "
                            "layout, stride0 or row_pad");
        t->view_k_prefix = 1;
        t->source = ACASE_SRC_INLINE;
        ayr_join(f, path, "shape");
        return acase__rd_charge(r, s[1].val, f, t->numel);
    }
    if (!!s[3].val == !!s[4].val)
        return ayr_fail(y, n, path, "exactly one of data and generate is required");
    /* stride0: the data describe the stored slice (extent 1 on those dimensions); it is
     * repeated to the logical shape once read. */
    uint8_t stride0 = 0;
    int64_t logical[4];
    memcpy(logical, t->shape, sizeof logical);
    if (s[5].val) {
        ayr_join(f, path, "stride0");
        if (read_stride0(y, s[5].val, f, t, &stride0))
            return -1;
        for (int d = 0; d < 2; d++)
            if ((stride0 >> d) & 1u)
                t->shape[d] = 1;
        if (acase_numel(t->ndim, t->shape, &t->numel, why, sizeof why))
            return ayr_fail(y, s[1].val, f, "%s", why);
    }
    /* The logical tensor (for stride0 the broadcast copy, which is at least the slice). */
    int64_t logical_numel;
    ayr_join(f, path, "shape");
    if (acase_numel(t->ndim, logical, &logical_numel, why, sizeof why))
        return ayr_fail(y, s[1].val, f, "%s", why);
    if (acase__rd_charge(r, s[1].val, f, logical_numel))
        return -1;
    if (s[4].val) {
        ayr_join(f, path, "generate");
        if (read_generate(y, s[4].val, f, t))
            return -1;
        return stride0 ? expand_stride0(y, s[5].val, path, t, stride0, logical) : 0;
    }
    ayr_join(f, path, "data");
    if (check_data_len(y, s[3].val, f, t->numel))
        return -1;
    t->source = ACASE_SRC_INLINE;
    if (acase_tensor_alloc(t, why, sizeof why))
        return ayr_fail(y, s[3].val, f, "%s", why);
    for (int64_t i = 0; i < t->numel; i++) {
        char fi[AYR_FIELD_MAX];
        ayr_fieldf(fi, "%s[%lld]", f, (long long)i);
        if (read_element(y, ayr_item(y, s[3].val, (size_t)i), fi, t, i))
            return -1;
    }
    return stride0 ? expand_stride0(y, s[5].val, path, t, stride0, logical) : 0;
}

static int read_expected_values(acase__rd *r, const yaml_node_t *n, const char *field,
                                acase_expected *e, int bool_values)
{
    ayr *y = &r->y;
    char why[128];
    if (check_data_len(y, n, field, e->numel))
        return -1;
    if (acase__rd_charge(r, n, field, e->numel))
        return -1;
    if (acase_expected_alloc(e, why, sizeof why))
        return ayr_fail(y, n, field, "%s", why);
    for (int64_t i = 0; i < e->numel; i++) {
        char fi[AYR_FIELD_MAX];
        yaml_node_t *it = ayr_item_at(y, n, field, (size_t)i, fi);
        if (!it)
            return -1;
        if (bool_values) {
            if (ayr_expect_plain(y, it, fi, "0 or 1"))
                return -1;
            const char *s = ayr_text(it);
            if (strcmp(s, "0") && strcmp(s, "1"))
                return ayr_fail(y, it, fi, "expected 0 or 1, got '%s'", s);
            e->values[i] = s[0] == '1' ? 1.0 : 0.0;
        } else if (ayr_double(y, it, fi, &e->values[i])) {
            return -1;
        }
    }
    return 0;
}

int acase__rd_expected_data(acase__rd *r, const yaml_node_t *shape, const yaml_node_t *data,
                            const char *name, acase_expected *e)
{
    char fs[AYR_FIELD_MAX], fd[AYR_FIELD_MAX], why[128];
    ayr_fieldf(fs, "expected.%s.shape", name);
    ayr_fieldf(fd, "expected.%s.data", name);
    if (acase__rd_shape(&r->y, shape, fs, &e->ndim, e->shape))
        return -1;
    if (acase_numel(e->ndim, e->shape, &e->numel, why, sizeof why))
        return ayr_fail(&r->y, shape, fs, "%s", why);
    return read_expected_values(r, data, fd, e, e->dtype == ATTNREF_BOOL);
}

int acase__rd_one_shot(acase__rd *r, const struct acase_op_nodes *n)
{
    if (n->steps)
        return ayr_fail(&r->y, n->steps, "steps", "only allowed for op cache");
    if (!n->expected)
        return ayr_fail(&r->y, n->root, "expected", "required key missing");
    return 0;
}

int acase__rd_padding(acase__rd *r, const yaml_node_t *lengths, const yaml_node_t *left_padding,
                      acase *c)
{
    ayr *y = &r->y;
    int64_t nl = 0, np = 0;
    if (lengths && ayr_int_list(y, lengths, "params.lengths", ACASE_MAX_BATCH, &c->lengths, &nl))
        return -1;
    if (left_padding && ayr_int_list(y, left_padding, "params.left_padding", ACASE_MAX_BATCH,
                                     &c->left_padding, &np))
        return -1;
    if (c->lengths && c->left_padding && nl != np)
        return ayr_fail(y, left_padding, "params.left_padding",
                        "has %lld entries, lengths has %lld (they must match)", (long long)np,
                        (long long)nl);
    c->batch = nl ? nl : np ? np : 1;
    return 0;
}

int acase__rd_expected(acase__rd *r, const yaml_node_t *n, acase *c, int want_out,
                       yaml_node_t **result, yaml_node_t **row_checks)
{
    ayr *y = &r->y;
    ayr_field s[] = {
        {"out", 0, NULL}, {"keep", 0, NULL}, {"error", 0, NULL}, {"row_checks", 0, NULL}};
    if (ayr_map(y, n, "expected", s, 4))
        return -1;
    if (!!s[0].val + !!s[1].val + !!s[2].val != 1)
        return ayr_fail(y, n, "expected", "exactly one of out, keep and error is required");
    if (s[3].val && !s[0].val)
        return ayr_fail(y, s[3].val, "expected.row_checks",
                        "only allowed with expected.out (op sdpa), not with expected.%s",
                        s[1].val ? "keep" : "error");
    *result = NULL;
    *row_checks = s[3].val;
    if (s[2].val) {
        const char *name;
        if (ayr_str(y, s[2].val, "expected.error", &name))
            return -1;
        c->expected.error = acase__error_from_name(name);
        if (!c->expected.error)
            return ayr_fail(y, s[2].val, "expected.error",
                            "unknown error '%s' (expected edtype or einval)", name);
        return 0;
    }
    if (want_out && s[1].val)
        return ayr_fail(y, s[1].val, "expected.keep", "only for op mask (op sdpa uses out)");
    if (!want_out && s[0].val)
        return ayr_fail(y, s[0].val, "expected.out", "only for op sdpa (op mask uses keep)");
    *result = want_out ? s[0].val : s[1].val;
    return 0;
}

/* ---- checking --------------------------------------------------------------------------- */

int acase__chk_batch(acase__chk *k, const acase *c)
{
    if (c->lengths || c->left_padding) {
        if (c->batch < 1 || c->batch > ACASE_MAX_BATCH)
            return acase__chk_fail(k, c->lengths ? "params.lengths" : "params.left_padding",
                                   "batch %lld is not in 1..%d", (long long)c->batch,
                                   ACASE_MAX_BATCH);
    }
    return 0;
}

int acase__chk_expected_data(acase__chk *k, const acase_expected *e, const char *name)
{
    char fs[AYR_FIELD_MAX], fd[AYR_FIELD_MAX], why[128];
    int64_t n;
    ayr_fieldf(fs, "expected.%s.shape", name);
    ayr_fieldf(fd, "expected.%s.data", name);
    if (acase_numel(e->ndim, e->shape, &n, why, sizeof why) != 0)
        return acase__chk_fail(k, fs, "%s", why);
    if (n != e->numel)
        return acase__chk_fail(k, fs, "numel %lld does not match the shape", (long long)e->numel);
    if (n > 0 && !e->values)
        return acase__chk_fail(k, fd, "no data");
    return 0;
}

int acase__chk_expected(acase__chk *k, const acase *c, int may_have_out)
{
    if (c->expected.error != 0 && !acase__error_name(c->expected.error))
        return acase__chk_fail(k, "expected.error", "status %d is not edtype or einval",
                               c->expected.error);
    int has_out = may_have_out && !c->expected.error;
    if (!has_out && (c->ulps != 0 || c->row_atol))
        return acase__chk_fail(k, "tolerance", "only allowed with expected.out");
    if (!has_out && c->expected.row_check)
        return acase__chk_fail(k, "expected.row_checks", "only allowed with expected.out");
    return 0;
}

/* ---- writing ---------------------------------------------------------------------------- */

/* Whether logical element n of t has index 0 on every stride-0 dimension. */
static int in_stored_slice(const acase_tensor *t, int64_t n)
{
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t i = t->shape[d] ? n % t->shape[d] : 0;
        if (((t->stride0 >> d) & 1u) && i != 0)
            return 0;
        n = t->shape[d] ? n / t->shape[d] : 0;
    }
    return 1;
}

void acase__w_tensor(ayw *w, const char *name, const acase_tensor *t)
{
    ayw_plain(w, name);
    ayw_map(w, 1);
    ayw_plain(w, "dtype");
    ayw_plain(w, attnref_dtype_name(t->dtype));
    ayw_kints(w, "shape", t->shape, t->ndim);
    if (t->layout == ACASE_LAYOUT_BLHD) {
        ayw_plain(w, "layout");
        ayw_plain(w, "blhd");
    }
    if (t->view_k_prefix) {
        ayw_plain(w, "view");
        ayw_plain(w, "k_prefix");
        ayw_map_end(w);
        return;
    }
    if (t->row_pad)
        ayw_kint(w, "row_pad", t->row_pad);
    if (t->stride0) {
        ayw_plain(w, "stride0");
        ayw_seq(w, 1);
        for (int d = 0; d < 2; d++)
            if ((t->stride0 >> d) & 1u)
                ayw_int(w, d);
        ayw_seq_end(w);
    }
    if (t->source == ACASE_SRC_UNIFORM) {
        char buf[32];
        ayw_plain(w, "generate");
        ayw_map(w, 1);
        ayw_plain(w, "kind");
        ayw_plain(w, "uniform");
        ayw_plain(w, "seed");
        snprintf(buf, sizeof buf, "%" PRIu64, t->seed);
        ayw_plain(w, buf);
        ayw_plain(w, "lo");
        ayw_double_short(w, t->lo);
        ayw_plain(w, "hi");
        ayw_double_short(w, t->hi);
        ayw_map_end(w);
    } else {
        ayw_plain(w, "data");
        ayw_seq(w, 1);
        for (int64_t i = 0; i < t->numel && !w->failed; i++) {
            char buf[16];
            if (t->stride0 && !in_stored_slice(t, i))
                continue; /* the file holds one slice of a stride-0 tensor */
            switch (t->dtype) {
            case ATTNREF_F32: ayw_f32(w, ((const float *)t->data)[i]); break;
            case ATTNREF_F16:
            case ATTNREF_BF16:
                snprintf(buf, sizeof buf, "0x%04x", (unsigned)((const uint16_t *)t->data)[i]);
                ayw_plain(w, buf);
                break;
            default: /* BOOL: the byte as stored, so 2 or 255 survive a round trip */
                snprintf(buf, sizeof buf, "%u", (unsigned)((const uint8_t *)t->data)[i]);
                ayw_plain(w, buf);
                break;
            }
        }
        ayw_seq_end(w);
    }
    ayw_map_end(w);
}

void acase__w_row_checks(ayw *w, const uint8_t *row_check, int64_t nrows)
{
    static const char *const names[2] = {"exact", "finite"};
    static const uint8_t modes[2] = {ACASE_CHECK_EXACT, ACASE_CHECK_FINITE};
    int64_t count[2] = {0, 0};
    for (int64_t r = 0; row_check && r < nrows; r++)
        for (int m = 0; m < 2; m++)
            count[m] += row_check[r] == modes[m];
    if (count[0] + count[1] == 0)
        return;
    ayw_plain(w, "row_checks");
    ayw_map(w, 1);
    for (int m = 0; m < 2; m++) {
        if (!count[m])
            continue;
        ayw_plain(w, names[m]);
        ayw_seq(w, 1);
        for (int64_t r = 0; r < nrows && !w->failed; r++)
            if (row_check[r] == modes[m])
                ayw_int(w, r);
        ayw_seq_end(w);
    }
    ayw_map_end(w);
}

void acase__w_padding(ayw *w, const acase *c)
{
    if (c->window)
        ayw_kint(w, "window", c->window);
    if (c->lengths)
        ayw_kints(w, "lengths", c->lengths, c->batch);
    if (c->left_padding)
        ayw_kints(w, "left_padding", c->left_padding, c->batch);
}

void acase__w_expected(ayw *w, const acase *c, void (*result)(ayw *w, const acase *c))
{
    ayw_plain(w, "expected");
    ayw_map(w, 0);
    if (c->expected.error) {
        ayw_plain(w, "error");
        ayw_plain(w, acase__error_name(c->expected.error));
    } else {
        result(w, c);
    }
    ayw_map_end(w);
}

/* A step's expect.row_checks (cache and paged cases; fields.h). */
int acase__rd_row_checks(acase__rd *r, yaml_node_t *n, const char *path, uint8_t **row_check,
                         int64_t nrows)
{
    static const char *const names[2] = {"exact", "finite"};
    static const uint8_t modes[2] = {ACASE_CHECK_EXACT, ACASE_CHECK_FINITE};
    ayr_field s[] = {{"exact", 0, NULL}, {"finite", 0, NULL}};
    char f[AYR_FIELD_MAX];
    ayr_fieldf(f, "%s.row_checks", path);
    if (ayr_map(&r->y, n, f, s, 2))
        return -1;
    if (!((*row_check) = calloc((size_t)(nrows ? nrows : 1), 1)))
        return ayr_fail(&r->y, n, f, "out of memory");
    for (int m = 0; m < 2; m++) {
        if (!s[m].val)
            continue;
        int64_t *rows = NULL, cnt = 0;
        ayr_fieldf(f, "%s.row_checks.%s", path, names[m]);
        if (ayr_int_list(&r->y, s[m].val, f, nrows > 0 ? nrows : 1, &rows, &cnt))
            return -1;
        for (int64_t i = 0; i < cnt; i++) {
            if (rows[i] < 0 || rows[i] >= nrows || (i && rows[i] <= rows[i - 1]) ||
                (*row_check)[rows[i]]) {
                free(rows);
                return ayr_fail(&r->y, s[m].val, f,
                                "rows must be strictly increasing, in 0..%lld, each in one list",
                                (long long)(nrows - 1));
            }
            (*row_check)[rows[i]] = modes[m];
        }
        free(rows);
    }
    return 0;
}
