/* read.c — strict reader of case format v1 (cases/FORMAT.md) with the libyaml document API.
 *
 * libyaml does no typing: every scalar is text.  Numbers, booleans and strings are checked here
 * against the same grammar PyYAML (YAML 1.1) uses, so a file this reader accepts gives the
 * Python tools values of the right types.  Every error names the file, the 1-based line and
 * column of the offending node, and the dotted field path. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <yaml.h>

#include "attnref/status.h"
#include "cache_internal.h"
#include "case_internal.h"

#define FIELD_MAX 96
#define MAX_MARKS 96

typedef struct rd {
    const char *path;
    yaml_document_t *doc;
    char *err;
    size_t errlen;
    /* Start marks of the fields seen, so a semantic error found after parsing (acase__check)
     * can still point at the right line. */
    struct {
        char field[FIELD_MAX];
        yaml_mark_t mark;
    } marks[MAX_MARKS];
    int nmarks;
    /* Elements materialised so far for this file (ACASE_MAX_CASE_NUMEL), charged by charge()
     * before each allocation so the budget holds whatever the order of the fields. */
    int64_t numel_total;
} rd;

static int failm(rd *r, yaml_mark_t m, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int failm(rd *r, yaml_mark_t m, const char *field, const char *fmt, ...)
{
    if (r->err && r->errlen) {
        char why[384];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        snprintf(r->err, r->errlen, "%s:%zu:%zu: %s: %s", r->path, m.line + 1, m.column + 1,
                 field, why);
    }
    return -1;
}

#define fail(r, node, field, ...) failm((r), (node)->start_mark, (field), __VA_ARGS__)

/* Charge n (>= 0, at most ACASE_MAX_TENSOR_NUMEL) elements that are about to be allocated to
 * the file's budget; -1 with the error at node/field once the running total would exceed
 * ACASE_MAX_CASE_NUMEL (checked before anything is allocated, so a file whose every tensor is
 * within the per-tensor limit still cannot make the reader allocate without bound). */
static int charge(rd *r, const yaml_node_t *node, const char *field, int64_t n)
{
    /* Both operands are within [0, ACASE_MAX_CASE_NUMEL], so the comparison cannot overflow. */
    if (n < 0 || n > ACASE_MAX_CASE_NUMEL - r->numel_total)
        return fail(r, node, field, "the case's tensors exceed %lld elements in total "
                    "(ACASE_MAX_CASE_NUMEL; %lld already read, this one has %lld)",
                    (long long)ACASE_MAX_CASE_NUMEL, (long long)r->numel_total, (long long)n);
    r->numel_total += n;
    return 0;
}

static void remember(rd *r, const char *field, yaml_mark_t m)
{
    if (r->nmarks < MAX_MARKS) {
        snprintf(r->marks[r->nmarks].field, FIELD_MAX, "%s", field);
        r->marks[r->nmarks].mark = m;
        r->nmarks++;
    }
}

/* The mark of field, else of its closest remembered parent, else 1:1. */
static yaml_mark_t lookup_mark(const rd *r, const char *field)
{
    char f[FIELD_MAX];
    snprintf(f, sizeof f, "%s", field);
    for (;;) {
        for (int i = 0; i < r->nmarks; i++)
            if (strcmp(r->marks[i].field, f) == 0)
                return r->marks[i].mark;
        char *dot = strrchr(f, '.');
        if (!dot)
            break;
        *dot = '\0';
    }
    yaml_mark_t m = {0, 0, 0};
    return m;
}

/* Format a field path into a FIELD_MAX buffer (truncation is harmless: it only shortens a
 * message). */
static void fieldf(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fieldf(char *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, FIELD_MAX, fmt, ap);
    va_end(ap);
}

static void join(char *out, const char *parent, const char *key)
{
    if (parent[0])
        fieldf(out, "%s.%s", parent, key);
    else
        fieldf(out, "%s", key);
}

static yaml_node_t *get(rd *r, int idx)
{
    return yaml_document_get_node(r->doc, idx);
}

static const char *svalue(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

/* Reject explicit tags (!!float, !foo): the reader and PyYAML would type them differently. */
static int check_tag(rd *r, yaml_node_t *n, const char *field)
{
    const char *want = n->type == YAML_SCALAR_NODE     ? YAML_DEFAULT_SCALAR_TAG
                       : n->type == YAML_SEQUENCE_NODE ? YAML_DEFAULT_SEQUENCE_TAG
                                                       : YAML_DEFAULT_MAPPING_TAG;
    if (!n->tag || strcmp((const char *)n->tag, want) != 0)
        return fail(r, n, field, "explicit YAML tags are not allowed");
    return 0;
}

/* A scalar without embedded NUL bytes. */
static int expect_scalar(rd *r, yaml_node_t *n, const char *field, const char *what)
{
    if (n->type != YAML_SCALAR_NODE)
        return fail(r, n, field, "expected %s, got a %s", what,
                    n->type == YAML_MAPPING_NODE ? "mapping" : "sequence");
    if (check_tag(r, n, field))
        return -1;
    if (strlen(svalue(n)) != n->data.scalar.length)
        return fail(r, n, field, "NUL byte in scalar");
    return 0;
}

/* A scalar that must be written plain (numbers, booleans, hex patterns). */
static int expect_plain(rd *r, yaml_node_t *n, const char *field, const char *what)
{
    if (expect_scalar(r, n, field, what))
        return -1;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return fail(r, n, field, "expected %s, got a quoted string", what);
    return 0;
}

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* [-+]?(0|[1-9][0-9]*) : an int for PyYAML (no octal, hex, underscores or sexagesimal). */
static int int_text(const char *s, int allow_minus)
{
    if (*s == '+' || (allow_minus && *s == '-'))
        s++;
    if (s[0] == '0')
        return s[1] == '\0';
    if (!is_digit(*s))
        return 0;
    while (is_digit(*s))
        s++;
    return *s == '\0';
}

/* Float text accepted for float fields, a subset of the YAML 1.1 float type:
 *   [-+]?[0-9]+\.[0-9]*([eE][-+][0-9]+)?   |   [-+]?\.(inf|Inf|INF)   |   \.(nan|NaN|NAN)
 * Returns 0 (not a float), 1 (decimal), 2 (infinity) or 3 (NaN). */
static int float_text(const char *s)
{
    const char *p = s;
    if (strcmp(p, ".nan") == 0 || strcmp(p, ".NaN") == 0 || strcmp(p, ".NAN") == 0)
        return 3;
    if (*p == '-' || *p == '+')
        p++;
    if (strcmp(p, ".inf") == 0 || strcmp(p, ".Inf") == 0 || strcmp(p, ".INF") == 0)
        return 2;
    if (!is_digit(*p))
        return 0;
    while (is_digit(*p))
        p++;
    if (*p != '.')
        return 0;
    p++;
    while (is_digit(*p))
        p++;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p != '-' && *p != '+')
            return 0;
        p++;
        if (!is_digit(*p))
            return 0;
        while (is_digit(*p))
            p++;
    }
    return *p == '\0';
}

static double special_value(const char *s, int kind)
{
    if (kind == 3)
        return NAN;
    return s[0] == '-' ? -INFINITY : INFINITY;
}

static const char float_hint[] = "expected a float such as 1.5e-03 (with a '.'), .inf, -.inf or .nan";

static int get_int(rd *r, yaml_node_t *n, const char *field, int64_t *out)
{
    if (expect_plain(r, n, field, "an integer"))
        return -1;
    const char *s = svalue(n);
    if (!int_text(s, 1))
        return fail(r, n, field, "expected a decimal integer, got '%s'", s);
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return fail(r, n, field, "integer '%s' out of range", s);
    *out = (int64_t)v;
    return 0;
}

static int get_u64(rd *r, yaml_node_t *n, const char *field, uint64_t *out)
{
    if (expect_plain(r, n, field, "a non-negative integer"))
        return -1;
    const char *s = svalue(n);
    if (!int_text(s, 0))
        return fail(r, n, field, "expected a non-negative decimal integer, got '%s'", s);
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE)
        return fail(r, n, field, "integer '%s' out of range 0..2^64-1", s);
    *out = (uint64_t)v;
    return 0;
}

/* Parse s (already matched by float_text as `kind`) as a binary64. */
static int parse_f64_text(const char *s, int kind, double *out)
{
    if (kind >= 2) {
        *out = special_value(s, kind);
        return 0;
    }
    double d = strtod(s, NULL);
    if (isinf(d))
        return -1; /* overflow; underflow to a subnormal or zero is a correct rounding */
    *out = d;
    return 0;
}

static int get_double(rd *r, yaml_node_t *n, const char *field, double *out)
{
    if (expect_plain(r, n, field, "a float"))
        return -1;
    const char *s = svalue(n);
    int kind = float_text(s);
    if (!kind)
        return fail(r, n, field, "%s, got '%s'", float_hint, s);
    if (parse_f64_text(s, kind, out))
        return fail(r, n, field, "'%s' overflows binary64 (write .inf)", s);
    return 0;
}

static int get_bool(rd *r, yaml_node_t *n, const char *field, int *out)
{
    if (expect_plain(r, n, field, "true or false"))
        return -1;
    const char *s = svalue(n);
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
        *out = 1;
    else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
        *out = 0;
    else
        return fail(r, n, field, "expected true or false, got '%s'", s);
    return 0;
}

static const char *y11_name(int kind)
{
    switch (kind) {
    case ACASE_Y11_NULL:
        return "null";
    case ACASE_Y11_BOOL:
        return "boolean";
    case ACASE_Y11_INT:
        return "integer";
    case ACASE_Y11_FLOAT:
        return "float";
    default:
        return "timestamp or special value";
    }
}

/* A non-empty string; a plain one must also be a string for PyYAML. */
static int get_str(rd *r, yaml_node_t *n, const char *field, const char **out)
{
    *out = NULL;
    if (expect_scalar(r, n, field, "a string"))
        return -1;
    const char *s = svalue(n);
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        int kind = acase__y11_resolve(s);
        if (kind < 0)
            return fail(r, n, field, "out of memory");
        if (kind != ACASE_Y11_STR)
            return fail(r, n, field, "expected a string; YAML reads '%s' as a %s (quote it)", s,
                        y11_name(kind));
    }
    if (!s[0])
        return fail(r, n, field, "expected a non-empty string");
    *out = s;
    return 0;
}

/* ---- mappings ------------------------------------------------------------------------- */

typedef struct fieldspec {
    const char *key;
    int required;
    yaml_node_t *val; /* out */
} fieldspec;

/* Match the pairs of mapping n against spec: unknown and duplicate keys are errors, as are
 * missing required keys; found values are remembered under their field paths. */
static int get_map(rd *r, yaml_node_t *n, const char *path, fieldspec *spec, size_t nspec)
{
    const char *shown = path[0] ? path : "(document)";
    if (n->type != YAML_MAPPING_NODE)
        return fail(r, n, shown, "expected a mapping, got a %s",
                    n->type == YAML_SCALAR_NODE ? "scalar" : "sequence");
    if (check_tag(r, n, shown))
        return -1;
    for (size_t i = 0; i < nspec; i++)
        spec[i].val = NULL;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = get(r, p->key), *v = get(r, p->value);
        if (!k || !v)
            return fail(r, n, shown, "malformed mapping");
        if (k->type != YAML_SCALAR_NODE)
            return fail(r, k, shown, "mapping keys must be plain strings");
        const char *key = svalue(k);
        char f[FIELD_MAX];
        join(f, path, key);
        size_t i;
        for (i = 0; i < nspec; i++)
            if (strcmp(spec[i].key, key) == 0)
                break;
        if (i == nspec)
            return fail(r, k, f, "unknown key");
        if (spec[i].val)
            return fail(r, k, f, "duplicate key");
        spec[i].val = v;
        remember(r, f, v->start_mark);
    }
    for (size_t i = 0; i < nspec; i++) {
        if (spec[i].required && !spec[i].val) {
            char f[FIELD_MAX];
            join(f, path, spec[i].key);
            return fail(r, n, f, "required key missing");
        }
    }
    return 0;
}

static int expect_seq(rd *r, yaml_node_t *n, const char *field, const char *what)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(r, n, field, "expected %s", what);
    return check_tag(r, n, field);
}

static size_t seq_len(const yaml_node_t *n)
{
    return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static yaml_node_t *seq_item(rd *r, const yaml_node_t *n, size_t i)
{
    return get(r, n->data.sequence.items.start[i]);
}

/* ---- fields --------------------------------------------------------------------------- */

static int read_shape(rd *r, yaml_node_t *n, const char *field, int32_t *ndim, int64_t shape[4])
{
    static const char what[] = "expected a sequence of 0..4 non-negative integers";
    if (n->type != YAML_SEQUENCE_NODE || seq_len(n) > 4)
        return fail(r, n, field, "%s", what);
    if (check_tag(r, n, field))
        return -1;
    size_t len = seq_len(n);
    for (size_t i = 0; i < len; i++) {
        yaml_node_t *it = seq_item(r, n, i);
        if (!it || it->type != YAML_SCALAR_NODE || it->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
            check_tag(r, it, field) || !int_text(svalue(it), 1))
            return fail(r, n, field, "%s (item %zu is not an integer)", what, i);
        errno = 0;
        long long v = strtoll(svalue(it), NULL, 10);
        if (errno == ERANGE)
            return fail(r, n, field, "%s (item %zu is out of range)", what, i);
        if (v < 0)
            return fail(r, n, field, "%s (item %zu is %lld)", what, i, v);
        shape[i] = (int64_t)v;
    }
    for (size_t i = len; i < 4; i++)
        shape[i] = 0;
    *ndim = (int32_t)len;
    return 0;
}

static int read_dtype(rd *r, yaml_node_t *n, const char *field, attnref_dtype *dt)
{
    const char *s;
    if (get_str(r, n, field, &s))
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
        return fail(r, n, field, "unknown dtype '%s' (expected f32, f16, bf16 or bool)", s);
    return 0;
}

/* Check that a data sequence has exactly numel items (before anything is allocated). */
static int check_data_len(rd *r, yaml_node_t *n, const char *field, int64_t numel)
{
    if (expect_seq(r, n, field, "a sequence of values"))
        return -1;
    size_t len = seq_len(n);
    if ((uint64_t)len != (uint64_t)numel)
        return fail(r, n, field, "has %zu values, the shape needs %lld", len, (long long)numel);
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
static int read_element(rd *r, yaml_node_t *it, const char *field, acase_tensor *t, int64_t i)
{
    const char *what = t->dtype == ATTNREF_BOOL  ? "a byte 0..255"
                       : t->dtype == ATTNREF_F32 ? "a float"
                                                 : "a 0x0000..0xffff bit pattern";
    if (!it)
        return failm(r, (yaml_mark_t){0, 0, 0}, field, "malformed sequence");
    if (expect_plain(r, it, field, what))
        return -1;
    const char *s = svalue(it);
    if (t->dtype == ATTNREF_BOOL) {
        /* Any byte: 0 is false, every other value true (the ABI's BOOL), so a case can hold
         * 2 or 255 and catch a backend that tests == 1 or & 1. */
        size_t len = strlen(s);
        int ok = len >= 1 && len <= 3 && strspn(s, "0123456789") == len && (len == 1 || s[0] != '0');
        long v = ok ? strtol(s, NULL, 10) : -1;
        if (!ok || v > 255)
            return fail(r, it, field, "expected a byte 0..255, got '%s'", s);
        ((uint8_t *)t->data)[i] = (uint8_t)v;
        return 0;
    }
    int kind = float_text(s);
    if (t->dtype == ATTNREF_F32) {
        if (!kind)
            return fail(r, it, field, "%s, got '%s'", float_hint, s);
        float f;
        if (kind >= 2) {
            f = (float)special_value(s, kind);
        } else {
            f = strtof(s, NULL); /* correctly rounded (RNE) from the decimal text */
            if (isinf(f))
                return fail(r, it, field, "'%s' overflows f32 (write .inf)", s);
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
        if (parse_f64_text(s, kind, &d))
            return fail(r, it, field, "'%s' overflows binary64", s);
        h = t->dtype == ATTNREF_F16 ? attnref_f64_to_f16(d) : attnref_f64_to_bf16(d);
        double back = t->dtype == ATTNREF_F16 ? (double)attnref_f16_to_f32(h)
                                               : (double)attnref_bf16_to_f32(h);
        if (back != d || signbit(back) != signbit(d))
            return fail(r, it, field, "%s is not exactly representable in %s (use a bit pattern)",
                        s, attnref_dtype_name(t->dtype));
    } else {
        return fail(r, it, field,
                    "expected a bit pattern 0x0000..0xffff or an exactly representable decimal"
                    " (NaN only as a bit pattern), got '%s'", s);
    }
    ((uint16_t *)t->data)[i] = h;
    return 0;
}

static int read_generate(rd *r, yaml_node_t *n, const char *path, acase_tensor *t)
{
    fieldspec g[] = {{"kind", 1, NULL}, {"seed", 1, NULL}, {"lo", 1, NULL}, {"hi", 1, NULL}};
    char f[FIELD_MAX];
    if (get_map(r, n, path, g, 4))
        return -1;
    const char *kind;
    join(f, path, "kind");
    if (get_str(r, g[0].val, f, &kind))
        return -1;
    if (strcmp(kind, "uniform") != 0)
        return fail(r, g[0].val, f, "unknown generator '%s' (expected uniform)", kind);
    join(f, path, "seed");
    if (get_u64(r, g[1].val, f, &t->seed))
        return -1;
    join(f, path, "lo");
    if (get_double(r, g[2].val, f, &t->lo))
        return -1;
    join(f, path, "hi");
    if (get_double(r, g[3].val, f, &t->hi))
        return -1;
    if (t->dtype == ATTNREF_BOOL)
        return fail(r, n, path, "only f32, f16 and bf16 tensors can be generated");
    if (!isfinite(t->lo) || !isfinite(t->hi) || !(t->lo <= t->hi) || !isfinite(t->hi - t->lo))
        return fail(r, n, path, "need finite lo <= hi with a finite hi - lo");
    t->source = ACASE_SRC_UNIFORM;
    char why[256];
    if (acase_tensor_generate(t, why, sizeof why))
        return fail(r, n, path, "%s", why);
    return 0;
}

/* `stride0: [d, ...]`: a non-empty, strictly increasing list of dimensions in 0..1 of a rank-4
 * tensor. */
static int read_stride0(rd *r, yaml_node_t *n, const char *field, const acase_tensor *t,
                        uint8_t *bits)
{
    if (expect_seq(r, n, field, "a sequence of dimensions (0 = batch, 1 = heads)"))
        return -1;
    size_t len = seq_len(n);
    if (len < 1 || len > 2)
        return fail(r, n, field, "expected 1 or 2 dimensions out of 0 (batch) and 1 (heads)");
    if (t->ndim != 4)
        return fail(r, n, field, "needs a rank-4 tensor (rank is %d)", (int)t->ndim);
    int64_t prev = -1;
    for (size_t i = 0; i < len; i++) {
        char fi[FIELD_MAX];
        fieldf(fi, "%s[%zu]", field, i);
        yaml_node_t *it = seq_item(r, n, i);
        int64_t d;
        if (!it)
            return fail(r, n, fi, "malformed sequence");
        if (get_int(r, it, fi, &d))
            return -1;
        if (d < 0 || d > 1)
            return fail(r, it, fi, "dimension %lld: only 0 (batch) and 1 (heads) can have "
                        "stride 0", (long long)d);
        if (d <= prev)
            return fail(r, it, fi, "dimensions must be strictly increasing");
        *bits |= (uint8_t)(1u << d);
        prev = d;
    }
    return 0;
}

static int expand_stride0(rd *r, yaml_node_t *n, const char *path, acase_tensor *t,
                          uint8_t stride0, const int64_t logical[4])
{
    char f[FIELD_MAX], why[256];
    join(f, path, "stride0");
    if (acase_tensor_broadcast(t, stride0, logical, why, sizeof why))
        return fail(r, n, f, "%s", why);
    return 0;
}

static int read_tensor(rd *r, yaml_node_t *n, const char *name, acase_tensor *t)
{
    char path[FIELD_MAX], f[FIELD_MAX], why[128];
    /* A name with a '.' is already a full path (a cache step's "steps[3].k"). */
    fieldf(path, strchr(name, '.') ? "%s" : "inputs.%s", name);
    fieldspec s[] = {{"dtype", 1, NULL}, {"shape", 1, NULL},    {"layout", 0, NULL},
                     {"data", 0, NULL},  {"generate", 0, NULL}, {"stride0", 0, NULL}};
    if (get_map(r, n, path, s, 6))
        return -1;
    t->present = 1;
    join(f, path, "dtype");
    if (read_dtype(r, s[0].val, f, &t->dtype))
        return -1;
    join(f, path, "shape");
    if (read_shape(r, s[1].val, f, &t->ndim, t->shape))
        return -1;
    if (acase_numel(t->ndim, t->shape, &t->numel, why, sizeof why))
        return fail(r, s[1].val, f, "%s", why);
    t->layout = ACASE_LAYOUT_BHLD;
    if (s[2].val) {
        const char *lay;
        join(f, path, "layout");
        if (get_str(r, s[2].val, f, &lay))
            return -1;
        if (!strcmp(lay, "bhld"))
            t->layout = ACASE_LAYOUT_BHLD;
        else if (!strcmp(lay, "blhd"))
            t->layout = ACASE_LAYOUT_BLHD;
        else
            return fail(r, s[2].val, f, "unknown layout '%s' (expected bhld or blhd)", lay);
        if (t->layout == ACASE_LAYOUT_BLHD && t->ndim != 4)
            return fail(r, s[2].val, f, "blhd needs a rank-4 tensor");
    }
    if (!!s[3].val == !!s[4].val)
        return fail(r, n, path, "exactly one of data and generate is required");
    /* stride0: the data describe the stored slice (extent 1 on those dimensions); it is
     * repeated to the logical shape once read. */
    uint8_t stride0 = 0;
    int64_t logical[4];
    memcpy(logical, t->shape, sizeof logical);
    if (s[5].val) {
        join(f, path, "stride0");
        if (read_stride0(r, s[5].val, f, t, &stride0))
            return -1;
        for (int d = 0; d < 2; d++)
            if ((stride0 >> d) & 1u)
                t->shape[d] = 1;
        if (acase_numel(t->ndim, t->shape, &t->numel, why, sizeof why))
            return fail(r, s[1].val, f, "%s", why);
    }
    /* The logical tensor (for stride0 the broadcast copy, which is at least the slice). */
    int64_t logical_numel;
    join(f, path, "shape");
    if (acase_numel(t->ndim, logical, &logical_numel, why, sizeof why))
        return fail(r, s[1].val, f, "%s", why);
    if (charge(r, s[1].val, f, logical_numel))
        return -1;
    if (s[4].val) {
        join(f, path, "generate");
        if (read_generate(r, s[4].val, f, t))
            return -1;
        return stride0 ? expand_stride0(r, s[5].val, path, t, stride0, logical) : 0;
    }
    join(f, path, "data");
    if (check_data_len(r, s[3].val, f, t->numel))
        return -1;
    t->source = ACASE_SRC_INLINE;
    if (acase_tensor_alloc(t, why, sizeof why))
        return fail(r, s[3].val, f, "%s", why);
    for (int64_t i = 0; i < t->numel; i++) {
        char fi[FIELD_MAX];
        fieldf(fi, "%s[%lld]", f, (long long)i);
        if (read_element(r, seq_item(r, s[3].val, (size_t)i), fi, t, i))
            return -1;
    }
    return stride0 ? expand_stride0(r, s[5].val, path, t, stride0, logical) : 0;
}

/* Items 0..len-1 of the sequence n, read as integers into ints or (ints NULL) floats into dbls. */
static int read_items(rd *r, yaml_node_t *n, const char *field, size_t len, int64_t *ints,
                      double *dbls)
{
    for (size_t i = 0; i < len; i++) {
        char fi[FIELD_MAX];
        fieldf(fi, "%s[%zu]", field, i);
        yaml_node_t *it = seq_item(r, n, i);
        if (!it)
            return fail(r, n, fi, "malformed sequence");
        if (ints ? get_int(r, it, fi, &ints[i]) : get_double(r, it, fi, &dbls[i]))
            return -1;
    }
    return 0;
}

/* A sequence of 1..max_len integers, allocated into *out. */
static int read_int_array(rd *r, yaml_node_t *n, const char *field, int64_t max_len,
                          int64_t **out, int64_t *count)
{
    if (expect_seq(r, n, field, "a sequence of integers"))
        return -1;
    size_t len = seq_len(n);
    if (len < 1 || (int64_t)len > max_len)
        return fail(r, n, field, "expected 1..%lld integers, got %zu", (long long)max_len, len);
    int64_t *a = calloc(len, sizeof *a);
    if (!a)
        return fail(r, n, field, "out of memory");
    if (read_items(r, n, field, len, a, NULL)) {
        free(a);
        return -1;
    }
    *out = a;
    *count = (int64_t)len;
    return 0;
}

static int read_params(rd *r, yaml_node_t *n, acase *c)
{
    int64_t nl = 0, np = 0;
    if (c->op == ACASE_OP_SDPA) {
        fieldspec s[] = {{"scale", 0, NULL},  {"causal", 1, NULL},  {"causal_offset", 0, NULL},
                         {"window", 0, NULL}, {"lengths", 0, NULL}, {"left_padding", 0, NULL}};
        if (get_map(r, n, "params", s, 6))
            return -1;
        if (s[0].val) {
            if (get_double(r, s[0].val, "params.scale", &c->scale))
                return -1;
            c->has_scale = 1;
        }
        if (get_bool(r, s[1].val, "params.causal", &c->causal))
            return -1;
        if (s[2].val) {
            if (get_int(r, s[2].val, "params.causal_offset", &c->causal_offset))
                return -1;
            c->has_causal_offset = 1;
        }
        if (s[3].val && get_int(r, s[3].val, "params.window", &c->window))
            return -1;
        if (s[4].val &&
            read_int_array(r, s[4].val, "params.lengths", ACASE_MAX_BATCH, &c->lengths, &nl))
            return -1;
        if (s[5].val && read_int_array(r, s[5].val, "params.left_padding", ACASE_MAX_BATCH,
                                       &c->left_padding, &np))
            return -1;
        if (c->lengths && c->left_padding && nl != np)
            return fail(r, s[5].val, "params.left_padding",
                        "has %lld entries, lengths has %lld (they must match)", (long long)np,
                        (long long)nl);
        c->batch = nl ? nl : np ? np : 1;
        return 0;
    }
    fieldspec s[] = {{"lq", 1, NULL},      {"offset", 1, NULL},       {"window", 0, NULL},
                     {"lengths", 0, NULL}, {"left_padding", 0, NULL}, {"kv_len", 0, NULL}};
    if (get_map(r, n, "params", s, 6))
        return -1;
    if (get_int(r, s[0].val, "params.lq", &c->lq) ||
        get_int(r, s[1].val, "params.offset", &c->offset))
        return -1;
    if (s[2].val && get_int(r, s[2].val, "params.window", &c->window))
        return -1;
    if (s[5].val) {
        if (get_int(r, s[5].val, "params.kv_len", &c->kv_len))
            return -1;
        if (c->kv_len <= 0)
            return fail(r, s[5].val, "params.kv_len", "must be >= 1 (omit it for offset + lq)");
    }
    if (s[3].val &&
        read_int_array(r, s[3].val, "params.lengths", ACASE_MAX_BATCH, &c->lengths, &nl))
        return -1;
    if (s[4].val &&
        read_int_array(r, s[4].val, "params.left_padding", ACASE_MAX_BATCH, &c->left_padding, &np))
        return -1;
    if (c->lengths && c->left_padding && nl != np)
        return fail(r, s[4].val, "params.left_padding",
                    "has %lld entries, lengths has %lld (they must match)", (long long)np,
                    (long long)nl);
    c->batch = nl ? nl : np ? np : 1;
    return 0;
}

static int read_expected_values(rd *r, yaml_node_t *n, const char *field, acase_expected *e,
                                int bool_values)
{
    char why[128];
    if (check_data_len(r, n, field, e->numel))
        return -1;
    if (charge(r, n, field, e->numel))
        return -1;
    if (acase_expected_alloc(e, why, sizeof why))
        return fail(r, n, field, "%s", why);
    for (int64_t i = 0; i < e->numel; i++) {
        char fi[FIELD_MAX];
        fieldf(fi, "%s[%lld]", field, (long long)i);
        yaml_node_t *it = seq_item(r, n, (size_t)i);
        if (!it)
            return fail(r, n, fi, "malformed sequence");
        if (bool_values) {
            if (expect_plain(r, it, fi, "0 or 1"))
                return -1;
            const char *s = svalue(it);
            if (strcmp(s, "0") && strcmp(s, "1"))
                return fail(r, it, fi, "expected 0 or 1, got '%s'", s);
            e->values[i] = s[0] == '1' ? 1.0 : 0.0;
        } else if (get_double(r, it, fi, &e->values[i])) {
            return -1;
        }
    }
    return 0;
}

/* expected.row_checks: {exact: [r, ...], finite: [r, ...]} on an SDPA output whose shape has
 * been read.  Each list strictly increasing, indices in 0..nrows-1, no row in both lists (exact
 * is applied first, so an overlap is reported at its item in finite). */
static int read_row_checks(rd *r, yaml_node_t *n, acase_expected *e)
{
    static const char *const names[2] = {"exact", "finite"};
    static const uint8_t modes[2] = {ACASE_CHECK_EXACT, ACASE_CHECK_FINITE};
    fieldspec s[] = {{"exact", 0, NULL}, {"finite", 0, NULL}};
    char why[128];
    if (get_map(r, n, "expected.row_checks", s, 2))
        return -1;
    if (!s[0].val && !s[1].val)
        return fail(r, n, "expected.row_checks", "expected at least one of exact and finite");
    if (acase_expected_alloc_rows(e, why, sizeof why))
        return fail(r, n, "expected.row_checks", "%s", why);
    for (int m = 0; m < 2; m++) {
        yaml_node_t *list = s[m].val;
        if (!list)
            continue;
        char f[FIELD_MAX];
        fieldf(f, "expected.row_checks.%s", names[m]);
        if (expect_seq(r, list, f, "a sequence of row indices"))
            return -1;
        int64_t prev = -1;
        for (size_t i = 0; i < seq_len(list); i++) {
            char fi[FIELD_MAX];
            fieldf(fi, "%s[%zu]", f, i);
            yaml_node_t *it = seq_item(r, list, i);
            int64_t row;
            if (!it)
                return fail(r, list, fi, "malformed sequence");
            if (get_int(r, it, fi, &row))
                return -1;
            if (row < 0 || row >= e->nrows) {
                if (e->nrows == 0)
                    return fail(r, it, fi, "row %lld is out of range: the output has no rows",
                                (long long)row);
                return fail(r, it, fi, "row %lld is out of range 0..%lld (B*Hq*Lq = %lld rows)",
                            (long long)row, (long long)(e->nrows - 1), (long long)e->nrows);
            }
            if (row <= prev)
                return fail(r, it, fi, "row %lld does not follow %lld: indices must be strictly "
                            "increasing", (long long)row, (long long)prev);
            if (e->row_check[row] != ACASE_CHECK_CLOSE)
                return fail(r, it, fi, "row %lld is also listed in %s", (long long)row,
                            names[e->row_check[row] == ACASE_CHECK_EXACT ? 0 : 1]);
            e->row_check[row] = modes[m];
            prev = row;
        }
    }
    return 0;
}

static int read_expected(rd *r, yaml_node_t *n, acase *c)
{
    acase_expected *e = &c->expected;
    fieldspec s[] = {{"out", 0, NULL}, {"keep", 0, NULL}, {"error", 0, NULL},
                     {"row_checks", 0, NULL}};
    char why[128];
    if (get_map(r, n, "expected", s, 4))
        return -1;
    if (!!s[0].val + !!s[1].val + !!s[2].val != 1)
        return fail(r, n, "expected", "exactly one of out, keep and error is required");
    if (s[3].val && !s[0].val)
        return fail(r, s[3].val, "expected.row_checks",
                    "only allowed with expected.out (op sdpa), not with expected.%s",
                    s[1].val ? "keep" : "error");
    if (s[2].val) {
        const char *name;
        if (get_str(r, s[2].val, "expected.error", &name))
            return -1;
        e->error = acase__error_from_name(name);
        if (!e->error)
            return fail(r, s[2].val, "expected.error", "unknown error '%s' (expected edtype or einval)",
                        name);
        return 0;
    }
    if (s[0].val) {
        if (c->op != ACASE_OP_SDPA)
            return fail(r, s[0].val, "expected.out", "only for op sdpa (op mask uses keep)");
        fieldspec o[] = {{"dtype", 1, NULL}, {"shape", 1, NULL}, {"data", 1, NULL}};
        if (get_map(r, s[0].val, "expected.out", o, 3))
            return -1;
        if (read_dtype(r, o[0].val, "expected.out.dtype", &e->dtype))
            return -1;
        if (e->dtype == ATTNREF_BOOL)
            return fail(r, o[0].val, "expected.out.dtype", "must be f32, f16 or bf16");
        if (read_shape(r, o[1].val, "expected.out.shape", &e->ndim, e->shape))
            return -1;
        if (acase_numel(e->ndim, e->shape, &e->numel, why, sizeof why))
            return fail(r, o[1].val, "expected.out.shape", "%s", why);
        if (read_expected_values(r, o[2].val, "expected.out.data", e, 0))
            return -1;
        return s[3].val ? read_row_checks(r, s[3].val, e) : 0;
    }
    if (c->op != ACASE_OP_MASK)
        return fail(r, s[1].val, "expected.keep", "only for op mask (op sdpa uses out)");
    fieldspec k[] = {{"shape", 1, NULL}, {"data", 1, NULL}};
    if (get_map(r, s[1].val, "expected.keep", k, 2))
        return -1;
    e->dtype = ATTNREF_BOOL;
    if (read_shape(r, k[0].val, "expected.keep.shape", &e->ndim, e->shape))
        return -1;
    if (acase_numel(e->ndim, e->shape, &e->numel, why, sizeof why))
        return fail(r, k[0].val, "expected.keep.shape", "%s", why);
    return read_expected_values(r, k[1].val, "expected.keep.data", e, 1);
}

/* tolerance: {ulps: float, row_atol: [float, ...]} with one row_atol per output row (the
 * expected output has been read). */
static int read_tolerance(rd *r, yaml_node_t *n, acase *c)
{
    fieldspec t[] = {{"ulps", 1, NULL}, {"row_atol", 1, NULL}};
    char why[128];
    if (get_map(r, n, "tolerance", t, 2))
        return -1;
    if (get_double(r, t[0].val, "tolerance.ulps", &c->ulps))
        return -1;
    if (!isfinite(c->ulps) || c->ulps < 0)
        return fail(r, t[0].val, "tolerance.ulps", "must be finite and >= 0");
    yaml_node_t *list = t[1].val;
    if (expect_seq(r, list, "tolerance.row_atol", "a sequence of floats, one per output row"))
        return -1;
    int64_t rows = acase_expected_rows(&c->expected);
    if (rows < 0)
        return fail(r, list, "tolerance.row_atol", "the output shape has no rows");
    if ((int64_t)seq_len(list) != rows)
        return fail(r, list, "tolerance.row_atol", "has %zu values, the output has B*Hq*Lq = %lld "
                    "rows", seq_len(list), (long long)rows);
    if (acase_row_atol_alloc(c, why, sizeof why))
        return fail(r, list, "tolerance.row_atol", "%s", why);
    for (int64_t i = 0; i < rows; i++) {
        char fi[FIELD_MAX];
        fieldf(fi, "tolerance.row_atol[%lld]", (long long)i);
        yaml_node_t *it = seq_item(r, list, (size_t)i);
        if (!it)
            return fail(r, list, fi, "malformed sequence");
        if (get_double(r, it, fi, &c->row_atol[i]))
            return -1;
        if (!isfinite(c->row_atol[i]) || c->row_atol[i] < 0)
            return fail(r, it, fi, "must be finite and >= 0");
    }
    return 0;
}

static int read_case(rd *r, yaml_node_t *root, acase *c)
{
    /* The version first, so a file of another version is reported as such and not as a pile
     * of unknown keys. */
    if (root->type != YAML_MAPPING_NODE)
        return fail(r, root, "(document)", "expected a mapping (a case), got a %s",
                    root->type == YAML_SCALAR_NODE ? "scalar" : "sequence");
    yaml_node_t *ver = NULL;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = get(r, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strcmp(svalue(k), "attnconf_case") == 0) {
            ver = get(r, p->value);
            break;
        }
    }
    if (!ver)
        return fail(r, root, "attnconf_case", "required key missing (not an attnconf case file?)");
    int64_t version;
    if (get_int(r, ver, "attnconf_case", &version))
        return -1;
    if (version != ACASE_FORMAT_VERSION)
        return fail(r, ver, "attnconf_case", "unsupported format version %lld (this reader reads %d)",
                    (long long)version, ACASE_FORMAT_VERSION);

    fieldspec s[] = {
        {"attnconf_case", 1, NULL}, {"id", 1, NULL},       {"description", 1, NULL},
        {"rules", 1, NULL},         {"op", 1, NULL},       {"requires", 1, NULL},
        {"params", 1, NULL},        {"inputs", 0, NULL},   {"expected", 0, NULL},
        {"tolerance", 0, NULL},     {"steps", 0, NULL},
    };
    enum { F_VER, F_ID, F_DESC, F_RULES, F_OP, F_REQ, F_PARAMS, F_INPUTS, F_EXP, F_TOL, F_STEPS };
    if (get_map(r, root, "", s, sizeof s / sizeof s[0]))
        return -1;

    const char *str;
    if (get_str(r, s[F_ID].val, "id", &str))
        return -1;
    if (strlen(str) >= ACASE_ID_MAX || !acase__dotted_valid(str, 3))
        return fail(r, s[F_ID].val, "id",
                    "expected [a-z0-9_]+ components joined by '.', at least 3, under %d bytes",
                    ACASE_ID_MAX);
    snprintf(c->id, sizeof c->id, "%s", str);

    if (get_str(r, s[F_DESC].val, "description", &str))
        return -1;
    if (!(c->description = strdup(str)))
        return fail(r, s[F_DESC].val, "description", "out of memory");

    yaml_node_t *n = s[F_RULES].val;
    if (expect_seq(r, n, "rules", "a sequence of rule ids"))
        return -1;
    if (seq_len(n) < 1 || seq_len(n) > ACASE_MAX_RULES)
        return fail(r, n, "rules", "expected 1..%d rule ids, got %zu", ACASE_MAX_RULES, seq_len(n));
    for (size_t i = 0; i < seq_len(n); i++) {
        char fi[FIELD_MAX];
        fieldf(fi, "rules[%zu]", i);
        yaml_node_t *it = seq_item(r, n, i);
        if (!it)
            return fail(r, n, fi, "malformed sequence");
        if (get_str(r, it, fi, &str))
            return -1;
        if (!acase__dotted_valid(str, 1))
            return fail(r, it, fi, "expected [a-z0-9_]+ components joined by '.', got '%s'", str);
        for (int j = 0; j < c->nrules; j++)
            if (strcmp(c->rules[j], str) == 0)
                return fail(r, it, fi, "duplicate rule '%s'", str);
        if (!(c->rules[c->nrules] = strdup(str)))
            return fail(r, it, fi, "out of memory");
        c->nrules++;
    }

    if (get_str(r, s[F_OP].val, "op", &str))
        return -1;
    if (!strcmp(str, "sdpa"))
        c->op = ACASE_OP_SDPA;
    else if (!strcmp(str, "mask"))
        c->op = ACASE_OP_MASK;
    else if (!strcmp(str, "cache"))
        c->op = ACASE_OP_CACHE;
    else
        return fail(r, s[F_OP].val, "op", "unknown op '%s' (expected sdpa, mask or cache)", str);

    n = s[F_REQ].val;
    if (expect_seq(r, n, "requires", "a sequence of capability names"))
        return -1;
    for (size_t i = 0; i < seq_len(n); i++) {
        char fi[FIELD_MAX];
        fieldf(fi, "requires[%zu]", i);
        yaml_node_t *it = seq_item(r, n, i);
        if (!it)
            return fail(r, n, fi, "malformed sequence");
        if (get_str(r, it, fi, &str))
            return -1;
        uint64_t bit = acase_cap_from_name(str);
        if (!bit)
            return fail(r, it, fi, "unknown capability '%s'", str);
        if (c->requires & bit)
            return fail(r, it, fi, "duplicate capability '%s'", str);
        c->requires |= bit;
    }

    /* op: cache keeps its inputs and expectations in `steps` (cache_case.c). */
    if (c->op == ACASE_OP_CACHE) {
        yaml_node_t *x = s[F_INPUTS].val ? s[F_INPUTS].val : s[F_EXP].val ? s[F_EXP].val : s[F_TOL].val;
        if (x)
            return fail(r, x, s[F_INPUTS].val ? "inputs" : s[F_EXP].val ? "expected" : "tolerance",
                        "not allowed for op cache (its steps hold inputs and expectations)");
        if (acase__cache_read(r, s[F_PARAMS].val, s[F_STEPS].val, root, c))
            return -1;
        goto cross_field;
    }
    if (s[F_STEPS].val)
        return fail(r, s[F_STEPS].val, "steps", "only allowed for op cache");
    if (!s[F_EXP].val)
        return fail(r, root, "expected", "required key missing");
    if (read_params(r, s[F_PARAMS].val, c))
        return -1;

    if (c->op == ACASE_OP_SDPA) {
        if (!s[F_INPUTS].val)
            return fail(r, root, "inputs", "required key missing (op sdpa)");
        fieldspec in[] = {{"q", 1, NULL}, {"k", 1, NULL}, {"v", 1, NULL}, {"mask", 0, NULL}};
        if (get_map(r, s[F_INPUTS].val, "inputs", in, 4))
            return -1;
        if (read_tensor(r, in[0].val, "q", &c->q) || read_tensor(r, in[1].val, "k", &c->k) ||
            read_tensor(r, in[2].val, "v", &c->v))
            return -1;
        if (in[3].val && read_tensor(r, in[3].val, "mask", &c->mask))
            return -1;
    } else if (s[F_INPUTS].val) {
        return fail(r, s[F_INPUTS].val, "inputs", "not allowed for op mask");
    }

    if (read_expected(r, s[F_EXP].val, c))
        return -1;

    int has_out = !c->expected.error && c->op == ACASE_OP_SDPA;
    if (has_out && !s[F_TOL].val)
        return fail(r, root, "tolerance", "required key missing (expected.out is given)");
    if (!has_out && s[F_TOL].val)
        return fail(r, s[F_TOL].val, "tolerance", "only allowed with expected.out");
    if (s[F_TOL].val && read_tolerance(r, s[F_TOL].val, c))
        return -1;

cross_field:;
    /* Cross-field rules (shapes agree, requires covers the content, ...). */
    char field[FIELD_MAX], why[256];
    if (acase__check(c, field, sizeof field, why, sizeof why))
        return failm(r, lookup_mark(r, field), field, "%s", why);
    return 0;
}

/* Report the parser's error (a syntax error, or out of memory). */
static void yaml_errf(const yaml_parser_t *parser, const char *path, char *err, size_t errlen)
{
    if (parser->error == YAML_MEMORY_ERROR || !parser->problem) {
        acase__errf(err, errlen, "%s:1:1: yaml: %s", path,
                    parser->error == YAML_MEMORY_ERROR ? "out of memory" : "cannot read the file");
    } else {
        yaml_mark_t m = parser->problem_mark;
        acase__errf(err, errlen, "%s:%zu:%zu: yaml: %s%s%s", path, m.line + 1, m.column + 1,
                    parser->problem, parser->context ? " " : "",
                    parser->context ? parser->context : "");
    }
}

/* Pass 1: stream the events (libyaml holds only the current token window and stacks as deep as
 * the nesting) and stop at the first one over a limit, before any document tree is built:
 * libyaml's scanner costs O(depth) per token inside flow collections, so unbounded nesting is
 * quadratic, and its tree costs ~150 bytes per node.  Also refuses anchors and aliases (an alias
 * can make the tree cyclic) and a second document (it would be loaded whole).  Returns 0, or -1
 * with err set. */
int acase_yaml_prescan(const char *path, const void *data_, size_t len, char *err, size_t errlen)
{
    const unsigned char *data = data_;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        acase__errf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    yaml_parser_set_input_string(&parser, data, len);
    int64_t depth = 0, nodes = 0;
    int docs = 0, rc = -1;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            yaml_errf(&parser, path, err, errlen);
            break;
        }
        yaml_mark_t m = ev.start_mark;
        char why[128] = "";
        const yaml_char_t *anchor = NULL;
        int is_node = 0;
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT:
            docs++;
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            is_node = 1;
            anchor = ev.type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.anchor
                                                          : ev.data.mapping_start.anchor;
            if (++depth > ACASE_MAX_DEPTH)
                snprintf(why, sizeof why, "nesting deeper than %d levels (ACASE_MAX_DEPTH)",
                         ACASE_MAX_DEPTH);
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_SCALAR_EVENT:
            is_node = 1;
            anchor = ev.data.scalar.anchor;
            if (ev.data.scalar.length > (size_t)ACASE_MAX_SCALAR_BYTES)
                snprintf(why, sizeof why,
                         "scalar of %zu bytes, over the limit of %lld (ACASE_MAX_SCALAR_BYTES)",
                         ev.data.scalar.length, (long long)ACASE_MAX_SCALAR_BYTES);
            break;
        case YAML_ALIAS_EVENT:
            is_node = 1;
            snprintf(why, sizeof why, "aliases (*name) are not allowed");
            break;
        default:
            break;
        }
        if (!why[0] && anchor)
            snprintf(why, sizeof why, "anchors (&name) are not allowed");
        if (!why[0] && is_node && ++nodes > ACASE_MAX_NODES)
            snprintf(why, sizeof why, "more than %lld YAML nodes (ACASE_MAX_NODES)",
                     (long long)ACASE_MAX_NODES);
        if (!why[0] && is_node && docs > 1) {
            acase__errf(err, errlen, "%s:%zu:%zu: (document): more than one YAML document in the file",
                        path, m.line + 1, m.column + 1);
            yaml_event_delete(&ev);
            break;
        }
        int end = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
        if (why[0]) {
            acase__errf(err, errlen, "%s:%zu:%zu: yaml: %s", path, m.line + 1, m.column + 1, why);
            break;
        }
        if (end) {
            rc = 0;
            break;
        }
    }
    yaml_parser_delete(&parser);
    return rc;
}

int acase_load_mem(const char *path, const void *data, size_t len, acase **out, char *err,
                   size_t errlen)
{
    if (out)
        *out = NULL;
    if (!path || !out || (!data && len)) {
        acase__errf(err, errlen, "acase_load_mem: NULL argument");
        return -1;
    }
    if (len > (size_t)ACASE_MAX_FILE_BYTES) {
        acase__errf(err, errlen,
                    "%s: file is over the %lld-byte limit of a case file (give large tensors as "
                    "generate: specs)",
                    path, (long long)ACASE_MAX_FILE_BYTES);
        return -1;
    }
    const unsigned char *bytes = data ? data : (const unsigned char *)"";
    if (acase_yaml_prescan(path, bytes, len, err, errlen))
        return -1;
    /* Pass 2: the same bytes, now known to be within the limits, as a document tree. */
    rd *r = calloc(1, sizeof *r);
    acase *c = acase_new();
    yaml_parser_t parser;
    yaml_document_t doc;
    int have_parser = 0, have_doc = 0, rc = -1;
    if (!r || !c) {
        acase__errf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    r->path = path;
    r->doc = &doc;
    r->err = err;
    r->errlen = errlen;
    if (!yaml_parser_initialize(&parser)) {
        acase__errf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    have_parser = 1;
    yaml_parser_set_input_string(&parser, bytes, len);
    if (!yaml_parser_load(&parser, &doc)) {
        yaml_errf(&parser, path, err, errlen);
        goto done;
    }
    have_doc = 1;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        acase__errf(err, errlen, "%s:1:1: (document): empty file, expected a case mapping", path);
        goto done;
    }
    /* prescan refused a second document, so the stream ends here. */
    if (read_case(r, root, c))
        goto done;
    if (!(c->path = strdup(path))) {
        acase__errf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    *out = c;
    c = NULL;
    rc = 0;
done:
    if (have_doc)
        yaml_document_delete(&doc);
    if (have_parser)
        yaml_parser_delete(&parser);
    acase_free(c);
    free(r);
    return rc;
}

int acase_load_file(const char *path, acase **out, char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    if (!path || !out) {
        acase__errf(err, errlen, "acase_load_file: NULL argument");
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        acase__errf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* libyaml keeps the whole document tree in memory, so bound the file before reading it
     * (fstat for a regular file; reading stops one byte past the limit for anything else). */
    struct stat st;
    int have_st = fstat(fileno(f), &st) == 0;
    if (have_st && st.st_size > ACASE_MAX_FILE_BYTES) {
        acase__errf(err, errlen,
                    "%s: file is %lld bytes, over the %lld-byte limit of a case file (give large "
                    "tensors as generate: specs)",
                    path, (long long)st.st_size, (long long)ACASE_MAX_FILE_BYTES);
        fclose(f);
        return -1;
    }
    size_t cap = have_st && S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 65536, len = 0;
    unsigned char *buf = malloc(cap);
    int rc = -1;
    if (!buf) {
        acase__errf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    for (;;) {
        if (len == cap) {
            if (cap > (size_t)ACASE_MAX_FILE_BYTES) {
                acase__errf(err, errlen,
                            "%s: file is over the %lld-byte limit of a case file (give large "
                            "tensors as generate: specs)",
                            path, (long long)ACASE_MAX_FILE_BYTES);
                goto out;
            }
            size_t ncap = cap * 2 > (size_t)ACASE_MAX_FILE_BYTES + 1 ? (size_t)ACASE_MAX_FILE_BYTES + 1
                                                                     : cap * 2;
            unsigned char *nb = realloc(buf, ncap);
            if (!nb) {
                acase__errf(err, errlen, "%s: out of memory", path);
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                acase__errf(err, errlen, "%s:1:1: yaml: cannot read the file", path);
                goto out;
            }
            break;
        }
    }
    rc = acase_load_mem(path, buf, len, out, err, errlen);
out:
    free(buf);
    fclose(f);
    return rc;
}

/* ---- the typed-node readers for cache_case.c (cache_internal.h) ------------------------- */

int acase__rd_fail(rd *r, const yaml_node_t *n, const char *field, const char *fmt, ...)
{
    char why[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return failm(r, n ? n->start_mark : (yaml_mark_t){0, 0, 0}, field, "%s", why);
}

int acase__rd_map(rd *r, yaml_node_t *n, const char *path, acase__field *spec, size_t nspec)
{
    fieldspec fs[32];
    if (nspec > sizeof fs / sizeof fs[0])
        return acase__rd_fail(r, n, path, "internal: too many keys");
    for (size_t i = 0; i < nspec; i++)
        fs[i] = (fieldspec){spec[i].key, spec[i].required, NULL};
    int rc = get_map(r, n, path, fs, nspec);
    for (size_t i = 0; i < nspec; i++)
        spec[i].val = fs[i].val;
    return rc;
}

int acase__rd_seq(rd *r, yaml_node_t *n, const char *field, const char *what, size_t *len)
{
    if (expect_seq(r, n, field, what))
        return -1;
    *len = seq_len(n);
    return 0;
}

yaml_node_t *acase__rd_item(rd *r, const yaml_node_t *seq, size_t i)
{
    return seq_item(r, seq, i);
}

int acase__rd_int(rd *r, yaml_node_t *n, const char *field, int64_t *out)
{
    return get_int(r, n, field, out);
}

int acase__rd_double(rd *r, yaml_node_t *n, const char *field, double *out)
{
    return get_double(r, n, field, out);
}

int acase__rd_int_list(rd *r, yaml_node_t *n, const char *field, int64_t max_len, int64_t **out,
                       int64_t *count)
{
    return read_int_array(r, n, field, max_len, out, count);
}

int acase__rd_items(rd *r, yaml_node_t *n, const char *field, size_t len, int64_t *ints,
                    double *dbls)
{
    return read_items(r, n, field, len, ints, dbls);
}

int acase__rd_str(rd *r, yaml_node_t *n, const char *field, const char **out)
{
    return get_str(r, n, field, out);
}

int acase__rd_dtype(rd *r, yaml_node_t *n, const char *field, attnref_dtype *dt)
{
    return read_dtype(r, n, field, dt);
}

int acase__rd_tensor(rd *r, yaml_node_t *n, const char *path, acase_tensor *t)
{
    return read_tensor(r, n, path, t);
}

int acase__rd_charge(rd *r, const yaml_node_t *n, const char *field, int64_t numel)
{
    return charge(r, n, field, numel);
}
