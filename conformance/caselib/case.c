/* case.c — the in-memory case model: allocation, validation, family, directory listing, and the
 * small helpers shared by the reader and the writer. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attnconf/backend.h"
#include "attnref/status.h"
#include "cache_internal.h"
#include "case_internal.h"

void acase__errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int acase__chk_fail(acase__chk *k, const char *field, const char *fmt, ...)
{
    acase__errf(k->field, k->fieldlen, "%s", field);
    if (k->why && k->whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(k->why, k->whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int acase__is_float_dtype(attnref_dtype dt)
{
    return dt == ATTNREF_F32 || dt == ATTNREF_F16 || dt == ATTNREF_BF16;
}

/* ---- model ---------------------------------------------------------------------------- */

acase *acase_new(void)
{
    acase *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->op = ACASE_OP_SDPA;
    return c;
}

static void tensor_free(acase_tensor *t)
{
    free(t->data);
    t->data = NULL;
}

void acase_free(acase *c)
{
    if (!c)
        return;
    free(c->description);
    for (int i = 0; i < c->nrules && i < ACASE_MAX_RULES; i++)
        free(c->rules[i]);
    free(c->lengths);
    free(c->left_padding);
    tensor_free(&c->q);
    tensor_free(&c->k);
    tensor_free(&c->v);
    tensor_free(&c->mask);
    free(c->expected.values);
    free(c->expected.row_check);
    free(c->row_atol);
    acase_cache_free(c->cache);
    free(c->path);
    free(c);
}

void acase_family(const char *id, char *out, size_t n)
{
    if (!out || n == 0)
        return;
    out[0] = '\0';
    if (!id)
        return;
    const char *dot1 = strchr(id, '.');
    const char *dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
    size_t len = dot2 ? (size_t)(dot2 - id) : strlen(id);
    if (len >= n)
        len = n - 1;
    memcpy(out, id, len);
    out[len] = '\0';
}

int acase_numel(int32_t ndim, const int64_t *shape, int64_t *numel, char *why, size_t whylen)
{
    if (ndim < 0 || ndim > 4) {
        acase__errf(why, whylen, "rank %d is not in 0..4", (int)ndim);
        return -1;
    }
    int64_t n = 1;
    for (int32_t i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            acase__errf(why, whylen, "extent %lld of dimension %d is negative",
                        (long long)shape[i], (int)i);
            return -1;
        }
    }
    for (int32_t i = 0; i < ndim; i++) {
        if (shape[i] == 0) {
            n = 0;
            break;
        }
        if (n > ACASE_MAX_TENSOR_NUMEL / shape[i]) {
            acase__errf(why, whylen, "more than %lld elements",
                        (long long)ACASE_MAX_TENSOR_NUMEL);
            return -1;
        }
        n *= shape[i];
    }
    if (n > ACASE_MAX_TENSOR_NUMEL) {
        acase__errf(why, whylen, "more than %lld elements", (long long)ACASE_MAX_TENSOR_NUMEL);
        return -1;
    }
    *numel = n;
    return 0;
}

int acase_tensor_alloc(acase_tensor *t, char *err, size_t errlen)
{
    char why[128];
    int64_t n;
    size_t es = attnref_dtype_size(t->dtype);
    if (es == 0) {
        acase__errf(err, errlen, "unknown dtype %d", (int)t->dtype);
        return -1;
    }
    if (acase_numel(t->ndim, t->shape, &n, why, sizeof why) != 0) {
        acase__errf(err, errlen, "shape: %s", why);
        return -1;
    }
    free(t->data);
    t->data = NULL;
    t->numel = n;
    /* Never NULL, even for zero elements, so a present tensor always has a buffer. */
    t->data = calloc((size_t)(n > 0 ? n : 1), es);
    if (!t->data) {
        acase__errf(err, errlen, "out of memory (%lld elements)", (long long)n);
        return -1;
    }
    return 0;
}

int acase_expected_alloc(acase_expected *e, char *err, size_t errlen)
{
    char why[128];
    int64_t n;
    if (acase_numel(e->ndim, e->shape, &n, why, sizeof why) != 0) {
        acase__errf(err, errlen, "shape: %s", why);
        return -1;
    }
    free(e->values);
    e->values = NULL;
    free(e->row_check); /* sized for the old shape */
    e->row_check = NULL;
    e->nrows = 0;
    e->numel = n;
    e->values = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    if (!e->values) {
        acase__errf(err, errlen, "out of memory (%lld elements)", (long long)n);
        return -1;
    }
    return 0;
}

/* Rows of a shape: the product of every extent but the last, or -1 with a reason. */
static int64_t expected_rows(const acase_expected *e, char *why, size_t whylen)
{
    int64_t n;
    if (acase_numel(e->ndim, e->shape, &n, why, whylen) != 0)
        return -1;
    if (e->ndim < 1) {
        acase__errf(why, whylen, "rank 0 has no rows");
        return -1;
    }
    int64_t rows = 1;
    for (int32_t i = 0; i + 1 < e->ndim; i++) {
        if (e->shape[i] == 0)
            return 0;
        if (rows > ACASE_MAX_TENSOR_NUMEL / e->shape[i]) {
            acase__errf(why, whylen, "more than %lld rows", (long long)ACASE_MAX_TENSOR_NUMEL);
            return -1;
        }
        rows *= e->shape[i];
    }
    return rows;
}

int64_t acase_expected_rows(const acase_expected *e)
{
    return e ? expected_rows(e, NULL, 0) : -1;
}

int acase_row_atol_alloc(acase *c, char *err, size_t errlen)
{
    char why[128];
    int64_t rows = expected_rows(&c->expected, why, sizeof why);
    if (rows < 0) {
        acase__errf(err, errlen, "expected.out.shape: %s", why);
        return -1;
    }
    free(c->row_atol);
    c->row_atol = calloc((size_t)(rows > 0 ? rows : 1), sizeof(double));
    if (!c->row_atol) {
        acase__errf(err, errlen, "out of memory (%lld rows)", (long long)rows);
        return -1;
    }
    return 0;
}

/* Flat logical index of the element of t's stored slice that element n stands for (the index
 * with the stride-0 dimensions set to 0). */
static int64_t slice_source(const acase_tensor *t, int64_t n)
{
    int64_t idx[4], off = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        idx[d] = t->shape[d] ? n % t->shape[d] : 0;
        n = t->shape[d] ? n / t->shape[d] : 0;
    }
    for (int d = 0; d < t->ndim; d++)
        off = off * t->shape[d] + ((t->stride0 >> d) & 1u ? 0 : idx[d]);
    return off;
}

int64_t acase__stride0_mismatch(const acase_tensor *t)
{
    size_t es = attnref_dtype_size(t->dtype);
    const unsigned char *d = t->data;
    for (int64_t n = 0; n < t->numel; n++) {
        int64_t src = slice_source(t, n);
        if (memcmp(d + (size_t)n * es, d + (size_t)src * es, es) != 0)
            return n;
    }
    return -1;
}

int acase_tensor_broadcast(acase_tensor *t, uint8_t stride0, const int64_t shape[4], char *err,
                           size_t errlen)
{
    if (t->ndim != 4 || (stride0 & ~3u)) {
        acase__errf(err, errlen, "stride0 needs a rank-4 tensor and dimensions 0..1");
        return -1;
    }
    for (int d = 0; d < 4; d++) {
        int want = (stride0 >> d) & 1u ? 1 : 0;
        if ((want && t->shape[d] != 1) || (!want && t->shape[d] != shape[d])) {
            acase__errf(err, errlen, "stored extent %lld of dimension %d does not fit the "
                        "logical extent %lld", (long long)t->shape[d], d, (long long)shape[d]);
            return -1;
        }
    }
    acase_tensor full = *t;
    memcpy(full.shape, shape, sizeof full.shape);
    full.stride0 = stride0;
    full.data = NULL;
    char why[128];
    if (acase_tensor_alloc(&full, why, sizeof why)) {
        acase__errf(err, errlen, "%s", why);
        return -1;
    }
    /* Element n of the full tensor comes from the stored slice (t->shape: extent 1 on the
     * stride-0 dimensions) at the same index with those dimensions set to 0. */
    size_t es = attnref_dtype_size(t->dtype);
    for (int64_t n = 0; n < full.numel; n++) {
        int64_t idx[4], rest = n, src = 0;
        for (int d = 3; d >= 0; d--) {
            idx[d] = rest % shape[d];
            rest /= shape[d];
        }
        for (int d = 0; d < 4; d++)
            src = src * t->shape[d] + ((stride0 >> d) & 1u ? 0 : idx[d]);
        memcpy((unsigned char *)full.data + (size_t)n * es,
               (const unsigned char *)t->data + (size_t)src * es, es);
    }
    free(t->data);
    *t = full;
    return 0;
}

int acase_expected_alloc_rows(acase_expected *e, char *err, size_t errlen)
{
    char why[128];
    int64_t rows = expected_rows(e, why, sizeof why);
    if (rows < 0) {
        acase__errf(err, errlen, "shape: %s", why);
        return -1;
    }
    free(e->row_check);
    e->nrows = 0;
    e->row_check = calloc((size_t)(rows > 0 ? rows : 1), 1);
    if (!e->row_check) {
        acase__errf(err, errlen, "out of memory (%lld rows)", (long long)rows);
        return -1;
    }
    e->nrows = rows;
    return 0;
}

/* ---- names ---------------------------------------------------------------------------- */

const char *acase__error_name(int status)
{
    if (status == ATTNREF_EDTYPE)
        return "edtype";
    if (status == ATTNREF_EINVAL)
        return "einval";
    return NULL;
}

int acase__error_from_name(const char *name)
{
    if (name && strcmp(name, "edtype") == 0)
        return ATTNREF_EDTYPE;
    if (name && strcmp(name, "einval") == 0)
        return ATTNREF_EINVAL;
    return 0;
}

int acase__dotted_valid(const char *s, int min_components)
{
    if (!s || !*s)
        return 0;
    int comps = 1;
    size_t comp_len = 0;
    for (const char *p = s; *p; p++) {
        char ch = *p;
        if (ch == '.') {
            if (comp_len == 0)
                return 0;
            comps++;
            comp_len = 0;
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_') {
            comp_len++;
        } else {
            return 0;
        }
    }
    return comp_len > 0 && comps >= min_components;
}

/* ---- PyYAML implicit typing of plain scalars ------------------------------------------- */

/* POSIX ERE transcriptions of the implicit resolvers of PyYAML 6 (yaml/resolver.py, YAML 1.1).
 * The empty scalar (null) is handled in code. */
static const char *const y11_patterns[] = {
    /* ACASE_Y11_BOOL */
    "^(yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
    /* ACASE_Y11_FLOAT */
    "^([-+]?[0-9][0-9_]*\\.[0-9_]*([eE][-+][0-9]+)?"
    "|\\.[0-9][0-9_]*([eE][-+][0-9]+)?"
    "|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\\.[0-9_]*"
    "|[-+]?\\.(inf|Inf|INF)"
    "|\\.(nan|NaN|NAN))$",
    /* ACASE_Y11_INT */
    "^([-+]?0b[0-1_]+"
    "|[-+]?0[0-7_]+"
    "|[-+]?(0|[1-9][0-9_]*)"
    "|[-+]?0x[0-9a-fA-F_]+"
    "|[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+)$",
    /* ACASE_Y11_NULL */
    "^(~|null|Null|NULL)$",
    /* ACASE_Y11_OTHER: merge, value, timestamp */
    "^(<<|="
    "|[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
    "|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?([Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9]"
    "(\\.[0-9]*)?([ \t]*(Z|[-+][0-9][0-9]?(:[0-9][0-9])?))?)$",
};
static const acase_y11 y11_kinds[] = {ACASE_Y11_BOOL, ACASE_Y11_FLOAT, ACASE_Y11_INT,
                                      ACASE_Y11_NULL, ACASE_Y11_OTHER};

int acase__y11_resolve(const char *s)
{
    if (!s || !*s)
        return ACASE_Y11_NULL;
    /* Every non-string form starts with one of these characters (PyYAML selects resolvers by
     * the first character the same way). */
    if (!strchr("yYnNtTfFoO-+0123456789.~<=", s[0]))
        return ACASE_Y11_STR;
    int result = ACASE_Y11_STR;
    for (size_t i = 0; i < sizeof y11_patterns / sizeof y11_patterns[0]; i++) {
        regex_t re;
        if (regcomp(&re, y11_patterns[i], REG_EXTENDED | REG_NOSUB) != 0)
            return -1;
        int m = regexec(&re, s, 0, NULL, 0);
        regfree(&re);
        if (m == 0) {
            result = (int)y11_kinds[i];
            break;
        }
    }
    return result;
}

/* ---- numbers -------------------------------------------------------------------------- */

void acase__fmt_double_short(double d, char *buf, size_t buflen)
{
    for (int prec = 1; prec <= 16; prec++) {
        snprintf(buf, buflen, "%.*e", prec, d);
        if (strtod(buf, NULL) == d)
            return;
    }
}

/* ---- validation ----------------------------------------------------------------------- */

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
        if (!isfinite(t->lo) || !isfinite(t->hi) || !(t->lo <= t->hi) ||
            !isfinite(t->hi - t->lo))
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

static int check_requires(acase__chk *k, const acase *c)
{
    uint64_t known = 0;
    for (int b = 0; b < 64; b++)
        if (acase_cap_name(1ull << b))
            known |= 1ull << b;
    if (c->requires & ~known)
        return acase__chk_fail(k, "requires", "unknown capability bits 0x%llx",
                               (unsigned long long)(c->requires & ~known));
    uint64_t missing = acase_derive_requires(c) & ~c->requires;
    if (missing) {
        char names[256] = "";
        size_t len = 0;
        for (int b = 0; b < 64; b++) {
            if (!(missing & (1ull << b)))
                continue;
            int w = snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "",
                             acase_cap_name(1ull << b));
            if (w < 0 || (size_t)w >= sizeof names - len)
                break;
            len += (size_t)w;
        }
        return acase__chk_fail(k, "requires", "missing %s (implied by the case content)", names);
    }
    return 0;
}

static int check_sdpa(acase__chk *k, const acase *c)
{
    const acase_expected *e = &c->expected;
    if (!c->q.present)
        return acase__chk_fail(k, "inputs.q", "required for op sdpa");
    if (!c->k.present)
        return acase__chk_fail(k, "inputs.k", "required for op sdpa");
    if (!c->v.present)
        return acase__chk_fail(k, "inputs.v", "required for op sdpa");
    if (check_tensor(k, "q", &c->q) || check_tensor(k, "k", &c->k) ||
        check_tensor(k, "v", &c->v))
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
    if (c->lengths || c->left_padding) {
        if (c->batch < 1 || c->batch > ACASE_MAX_BATCH)
            return acase__chk_fail(k, c->lengths ? "params.lengths" : "params.left_padding",
                                   "batch %lld is not in 1..%d", (long long)c->batch,
                                   ACASE_MAX_BATCH);
    }
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
    if (c->lengths || c->left_padding) {
        const char *f = c->lengths ? "params.lengths" : "params.left_padding";
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
    int64_t n;
    char why[128];
    if (acase_numel(e->ndim, e->shape, &n, why, sizeof why) != 0)
        return acase__chk_fail(k, "expected.out.shape", "%s", why);
    if (n != e->numel)
        return acase__chk_fail(k, "expected.out.shape", "numel %lld does not match the shape",
                               (long long)e->numel);
    if (n > 0 && !e->values)
        return acase__chk_fail(k, "expected.out.data", "no data");
    if (e->row_check) {
        int64_t rows = expected_rows(e, why, sizeof why);
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
    int64_t rows = expected_rows(e, why, sizeof why);
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

static int check_mask(acase__chk *k, const acase *c)
{
    const acase_expected *e = &c->expected;
    if (c->q.present || c->k.present || c->v.present || c->mask.present)
        return acase__chk_fail(k, "inputs", "not allowed for op mask");
    if (c->has_scale || c->causal || c->has_causal_offset)
        return acase__chk_fail(k, "params", "sdpa parameters are not allowed for op mask");
    /* The static key buffer: Lk = kv_len when given (a rejection case may give a bad one). */
    const int64_t lk = c->kv_len ? c->kv_len
                                 : (c->lq >= 0 && c->offset >= 0 && c->offset <= INT64_MAX - c->lq
                                        ? c->offset + c->lq : 0);
    if (c->lengths || c->left_padding) {
        if (c->batch < 1 || c->batch > ACASE_MAX_BATCH)
            return acase__chk_fail(k, c->lengths ? "params.lengths" : "params.left_padding",
                                   "batch %lld is not in 1..%d", (long long)c->batch,
                                   ACASE_MAX_BATCH);
    }
    /* The harness allocates the keep mask before calling a backend, also for a must-reject
     * case: a size over the limit could never be run, so it is a bad case, not a backend error. */
    if (c->lq >= 0 && c->offset >= 0) {
        const int64_t b = (c->lengths || c->left_padding) ? c->batch : 1;
        const int64_t lim = ACASE_MAX_TENSOR_NUMEL;
        if (c->offset > lim || c->lq > lim || lk > lim || lk < 0 ||
            (c->lq > 0 && lk > 0 && (lk > lim / c->lq || b > lim / (c->lq * lk))))
            return acase__chk_fail(k, "params.lq",
                                   "the keep mask (B, 1, lq, Lk) would exceed %lld elements",
                                   (long long)lim);
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
    int64_t b = (c->lengths || c->left_padding) ? c->batch : 1;
    int64_t want[4] = {b, 1, c->lq, lk};
    if (e->ndim != 4 || e->shape[0] != want[0] || e->shape[1] != want[1] ||
        e->shape[2] != want[2] || e->shape[3] != want[3])
        return acase__chk_fail(k, "expected.keep.shape",
                               "must be (B, 1, lq, %s) = [%lld, 1, %lld, %lld]",
                               c->kv_len ? "kv_len" : "offset + lq", (long long)want[0],
                               (long long)want[2], (long long)want[3]);
    int64_t n;
    char why[128];
    if (acase_numel(e->ndim, e->shape, &n, why, sizeof why) != 0)
        return acase__chk_fail(k, "expected.keep.shape", "%s", why);
    if (n != e->numel)
        return acase__chk_fail(k, "expected.keep.shape", "numel %lld does not match the shape",
                               (long long)e->numel);
    if (n > 0 && !e->values)
        return acase__chk_fail(k, "expected.keep.data", "no data");
    for (int64_t i = 0; i < n; i++)
        if (e->values[i] != 0.0 && e->values[i] != 1.0)
            return acase__chk_fail(k, "expected.keep.data", "element %lld is not 0 or 1",
                                   (long long)i);
    return 0;
}

int acase__check(const acase *c, char *field, size_t fieldlen, char *why, size_t whylen)
{
    acase__chk k = {field, fieldlen, why, whylen};
    if (!c)
        return acase__chk_fail(&k, "(case)", "NULL case");
    if (!memchr(c->id, '\0', sizeof c->id) || !acase__dotted_valid(c->id, 3))
        return acase__chk_fail(&k, "id",
                               "expected [a-z0-9_]+ components joined by '.', at least 3");
    if (!c->description || !c->description[0])
        return acase__chk_fail(&k, "description", "must be a non-empty string");
    if (c->nrules < 1 || c->nrules > ACASE_MAX_RULES)
        return acase__chk_fail(&k, "rules", "expected 1..%d rule ids", ACASE_MAX_RULES);
    for (int i = 0; i < c->nrules; i++) {
        if (!c->rules[i] || !acase__dotted_valid(c->rules[i], 1))
            return acase__chk_fail(&k, "rules",
                                   "rule %d is not [a-z0-9_]+ components joined by '.'", i);
        for (int j = 0; j < i; j++)
            if (strcmp(c->rules[i], c->rules[j]) == 0)
                return acase__chk_fail(&k, "rules", "duplicate rule '%s'", c->rules[i]);
    }
    if (c->op == ACASE_OP_CACHE) /* cache_case.c */
        return acase__cache_check(c, field, fieldlen, why, whylen) ? -1 : check_requires(&k, c);
    if (c->op != ACASE_OP_SDPA && c->op != ACASE_OP_MASK)
        return acase__chk_fail(&k, "op", "unknown op %d", (int)c->op);
    if (c->expected.error != 0 && !acase__error_name(c->expected.error))
        return acase__chk_fail(&k, "expected.error", "status %d is not edtype or einval",
                               c->expected.error);
    if ((c->expected.error || c->op != ACASE_OP_SDPA) && (c->ulps != 0 || c->row_atol))
        return acase__chk_fail(&k, "tolerance", "only allowed with expected.out");
    if (c->expected.row_check && (c->op != ACASE_OP_SDPA || c->expected.error))
        return acase__chk_fail(&k, "expected.row_checks", "only allowed with expected.out");
    if (c->op == ACASE_OP_SDPA ? check_sdpa(&k, c) : check_mask(&k, c))
        return -1;
    return check_requires(&k, c);
}

int acase_validate(const acase *c, char *err, size_t errlen)
{
    char field[96], why[256];
    if (acase__check(c, field, sizeof field, why, sizeof why) != 0) {
        acase__errf(err, errlen, "%s: %s", field, why);
        return -1;
    }
    return 0;
}

/* ---- directory listing ---------------------------------------------------------------- */

typedef struct pathvec {
    char **v;
    size_t n, cap;
} pathvec;

static int pv_push(pathvec *pv, char *s)
{
    if (pv->n == pv->cap) {
        size_t cap = pv->cap ? pv->cap * 2 : 64;
        char **v = realloc(pv->v, cap * sizeof *v);
        if (!v)
            return -1;
        pv->v = v;
        pv->cap = cap;
    }
    pv->v[pv->n++] = s;
    return 0;
}

static char *path_join(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    int slash = dl > 0 && dir[dl - 1] != '/';
    char *p = malloc(dl + (size_t)slash + nl + 1);
    if (!p)
        return NULL;
    memcpy(p, dir, dl);
    if (slash)
        p[dl] = '/';
    memcpy(p + dl + (size_t)slash, name, nl + 1);
    return p;
}

static int has_yaml_suffix(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".yaml") == 0;
}

static int list_rec(const char *dir, int depth, pathvec *pv, char *err, size_t errlen)
{
    if (depth > 32) {
        acase__errf(err, errlen, "%s: directories nested too deeply (symlink loop?)", dir);
        return -1;
    }
    DIR *d = opendir(dir);
    if (!d) {
        acase__errf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) {
                acase__errf(err, errlen, "%s: %s", dir, strerror(errno));
                rc = -1;
            }
            break;
        }
        if (de->d_name[0] == '.') /* ".", "..", and hidden files (editor backups, locks) */
            continue;
        char *p = path_join(dir, de->d_name);
        if (!p) {
            acase__errf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        struct stat st, lst;
        if (stat(p, &st) != 0 || lstat(p, &lst) != 0) {
            free(p); /* a dangling link: not a case file */
            continue;
        }
        /* A link to a directory is not followed: it may lead out of the tree (to /) or back
         * into it (a loop).  A link to a case file is read like the file. */
        if (S_ISDIR(st.st_mode) && S_ISLNK(lst.st_mode)) {
            free(p);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            rc = list_rec(p, depth + 1, pv, err, errlen);
            free(p);
            if (rc)
                break;
        } else if (S_ISREG(st.st_mode) && has_yaml_suffix(de->d_name)) {
            if (pv_push(pv, p) != 0) {
                free(p);
                acase__errf(err, errlen, "out of memory");
                rc = -1;
                break;
            }
        } else {
            free(p);
        }
    }
    closedir(d);
    return rc;
}

static int cmp_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int acase_list_dir(const char *dir, char ***paths, char *err, size_t errlen)
{
    pathvec pv = {0};
    if (!dir || !paths) {
        acase__errf(err, errlen, "acase_list_dir: NULL argument");
        return -1;
    }
    *paths = NULL;
    if (list_rec(dir, 0, &pv, err, errlen) != 0) {
        for (size_t i = 0; i < pv.n; i++)
            free(pv.v[i]);
        free(pv.v);
        return -1;
    }
    if (pv.n > (size_t)INT32_MAX) {
        for (size_t i = 0; i < pv.n; i++)
            free(pv.v[i]);
        free(pv.v);
        acase__errf(err, errlen, "%s: too many files", dir);
        return -1;
    }
    if (pv.n)
        qsort(pv.v, pv.n, sizeof *pv.v, cmp_paths);
    *paths = pv.v;
    return (int)pv.n;
}
