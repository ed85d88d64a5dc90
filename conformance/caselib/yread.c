/* yread.c — the strict, bounded YAML node reader of attncase/yread.h (moved out of read.c, the
 * case schema, so the suite's other YAML formats read with the same rules). */
#define _POSIX_C_SOURCE 200809L

#include "attncase/yread.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* ---- the bounded first pass ------------------------------------------------------------- */

/* Report the parser's error (a syntax error, or out of memory). */
static void parser_errf(const yaml_parser_t *parser, const char *path, char *err, size_t errlen)
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

/* Stream the events (libyaml holds only the current token window and stacks as deep as the
 * nesting) and stop at the first one over a limit, before any document tree is built: libyaml's
 * scanner costs O(depth) per token inside flow collections, so unbounded nesting is quadratic,
 * and its tree costs ~150 bytes per node.  Also refuses anchors and aliases (an alias can make
 * the tree cyclic) and a second document (it would be loaded whole). */
int ayr_prescan(const char *path, const void *data_, size_t len, char *err, size_t errlen)
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
            parser_errf(&parser, path, err, errlen);
            break;
        }
        yaml_mark_t m = ev.start_mark;
        char why[128] = "";
        const yaml_char_t *anchor = NULL;
        int is_node = 0;
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT: docs++; break;
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
        case YAML_MAPPING_END_EVENT: depth--; break;
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
        default: break;
        }
        if (!why[0] && anchor)
            snprintf(why, sizeof why, "anchors (&name) are not allowed");
        if (!why[0] && is_node && ++nodes > ACASE_MAX_NODES)
            snprintf(why, sizeof why, "more than %lld YAML nodes (ACASE_MAX_NODES)",
                     (long long)ACASE_MAX_NODES);
        if (!why[0] && is_node && docs > 1) {
            acase__errf(err, errlen,
                        "%s:%zu:%zu: (document): more than one YAML document in the file", path,
                        m.line + 1, m.column + 1);
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

int ayr_load(const char *path, const void *data, size_t len, yaml_document_t *doc, char *err,
             size_t errlen)
{
    if (ayr_prescan(path, data, len, err, errlen))
        return -1;
    /* Pass 2: the same bytes, now known to be within the limits, as a document tree (the tree
     * does not need the parser once loaded). */
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        acase__errf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    yaml_parser_set_input_string(&parser, data, len);
    int rc = 0;
    if (!yaml_parser_load(&parser, doc)) {
        parser_errf(&parser, path, err, errlen);
        rc = -1;
    }
    yaml_parser_delete(&parser);
    return rc;
}

/* ---- errors and field paths ------------------------------------------------------------- */

static int vfail_at(ayr *y, yaml_mark_t m, const char *field, const char *fmt, va_list ap)
{
    if (y->err && y->errlen) {
        char why[384];
        vsnprintf(why, sizeof why, fmt, ap);
        snprintf(y->err, y->errlen, "%s:%zu:%zu: %s: %s", y->path, m.line + 1, m.column + 1, field,
                 why);
    }
    return -1;
}

int ayr_fail_at(ayr *y, yaml_mark_t m, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_at(y, m, field, fmt, ap);
    va_end(ap);
    return -1;
}

int ayr_fail(ayr *y, const yaml_node_t *n, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail_at(y, n ? n->start_mark : (yaml_mark_t){0, 0, 0}, field, fmt, ap);
    va_end(ap);
    return -1;
}

static void remember(ayr *y, const char *field, yaml_mark_t m)
{
    if (y->nmarks < AYR_MAX_MARKS) {
        snprintf(y->marks[y->nmarks].field, AYR_FIELD_MAX, "%s", field);
        y->marks[y->nmarks].mark = m;
        y->nmarks++;
    }
}

yaml_mark_t ayr_mark(const ayr *y, const char *field)
{
    char f[AYR_FIELD_MAX];
    snprintf(f, sizeof f, "%s", field);
    for (;;) {
        for (int i = 0; i < y->nmarks; i++)
            if (strcmp(y->marks[i].field, f) == 0)
                return y->marks[i].mark;
        char *dot = strrchr(f, '.');
        if (!dot)
            break;
        *dot = '\0';
    }
    yaml_mark_t m = {0, 0, 0};
    return m;
}

void ayr_fieldf(char *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, AYR_FIELD_MAX, fmt, ap);
    va_end(ap);
}

void ayr_join(char *out, const char *parent, const char *key)
{
    if (parent[0])
        ayr_fieldf(out, "%s.%s", parent, key);
    else
        ayr_fieldf(out, "%s", key);
}

/* ---- nodes ------------------------------------------------------------------------------ */

yaml_node_t *ayr_node(const ayr *y, int idx)
{
    return yaml_document_get_node(y->doc, idx);
}

const char *ayr_text(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

int ayr_check_tag(ayr *y, const yaml_node_t *n, const char *field)
{
    const char *want = n->type == YAML_SCALAR_NODE     ? YAML_DEFAULT_SCALAR_TAG
                       : n->type == YAML_SEQUENCE_NODE ? YAML_DEFAULT_SEQUENCE_TAG
                                                       : YAML_DEFAULT_MAPPING_TAG;
    if (!n->tag || strcmp((const char *)n->tag, want) != 0)
        return ayr_fail(y, n, field, "explicit YAML tags are not allowed");
    return 0;
}

int ayr_expect_scalar(ayr *y, const yaml_node_t *n, const char *field, const char *what)
{
    if (n->type != YAML_SCALAR_NODE)
        return ayr_fail(y, n, field, "expected %s, got a %s", what,
                        n->type == YAML_MAPPING_NODE ? "mapping" : "sequence");
    if (ayr_check_tag(y, n, field))
        return -1;
    if (strlen(ayr_text(n)) != n->data.scalar.length)
        return ayr_fail(y, n, field, "NUL byte in scalar");
    return 0;
}

int ayr_expect_plain(ayr *y, const yaml_node_t *n, const char *field, const char *what)
{
    if (ayr_expect_scalar(y, n, field, what))
        return -1;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return ayr_fail(y, n, field, "expected %s, got a quoted string", what);
    return 0;
}

int ayr_seq(ayr *y, const yaml_node_t *n, const char *field, const char *what, size_t *len)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return ayr_fail(y, n, field, "expected %s", what);
    if (ayr_check_tag(y, n, field))
        return -1;
    if (len)
        *len = ayr_seq_len(n);
    return 0;
}

size_t ayr_seq_len(const yaml_node_t *n)
{
    return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

yaml_node_t *ayr_item(const ayr *y, const yaml_node_t *n, size_t i)
{
    return ayr_node(y, n->data.sequence.items.start[i]);
}

yaml_node_t *ayr_item_at(ayr *y, const yaml_node_t *n, const char *field, size_t i, char *fi)
{
    ayr_fieldf(fi, "%s[%zu]", field, i);
    yaml_node_t *it = ayr_item(y, n, i);
    if (!it)
        ayr_fail(y, n, fi, "malformed sequence");
    return it;
}

/* ---- scalars ---------------------------------------------------------------------------- */

/* POSIX ERE transcriptions of the implicit resolvers of PyYAML 6 (yaml/resolver.py, YAML 1.1).
 * The empty scalar (null) is handled in code. */
static const char *const y11_patterns[] = {
    /* AYR_Y11_BOOL */
    "^(yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
    /* AYR_Y11_FLOAT */
    "^([-+]?[0-9][0-9_]*\\.[0-9_]*([eE][-+][0-9]+)?"
    "|\\.[0-9][0-9_]*([eE][-+][0-9]+)?"
    "|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\\.[0-9_]*"
    "|[-+]?\\.(inf|Inf|INF)"
    "|\\.(nan|NaN|NAN))$",
    /* AYR_Y11_INT */
    "^([-+]?0b[0-1_]+"
    "|[-+]?0[0-7_]+"
    "|[-+]?(0|[1-9][0-9_]*)"
    "|[-+]?0x[0-9a-fA-F_]+"
    "|[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+)$",
    /* AYR_Y11_NULL */
    "^(~|null|Null|NULL)$",
    /* AYR_Y11_OTHER: merge, value, timestamp */
    "^(<<|="
    "|[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
    "|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?([Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9]"
    "(\\.[0-9]*)?([ \t]*(Z|[-+][0-9][0-9]?(:[0-9][0-9])?))?)$",
};
static const ayr_y11 y11_kinds[] = {AYR_Y11_BOOL, AYR_Y11_FLOAT, AYR_Y11_INT, AYR_Y11_NULL,
                                    AYR_Y11_OTHER};

int ayr_y11_resolve(const char *s)
{
    if (!s || !*s)
        return AYR_Y11_NULL;
    /* Every non-string form starts with one of these characters (PyYAML selects resolvers by
     * the first character the same way). */
    if (!strchr("yYnNtTfFoO-+0123456789.~<=", s[0]))
        return AYR_Y11_STR;
    int result = AYR_Y11_STR;
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

static const char *y11_name(int kind)
{
    switch (kind) {
    case AYR_Y11_NULL: return "null";
    case AYR_Y11_BOOL: return "boolean";
    case AYR_Y11_INT: return "integer";
    case AYR_Y11_FLOAT: return "float";
    default: return "timestamp or special value";
    }
}

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

int ayr_int_text(const char *s, int allow_minus)
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

int ayr_float_text(const char *s)
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

int ayr_parse_f64(const char *s, int kind, double *out)
{
    if (kind >= 2) {
        *out = kind == 3 ? NAN : s[0] == '-' ? -INFINITY : INFINITY;
        return 0;
    }
    double d = strtod(s, NULL);
    if (isinf(d))
        return -1;
    *out = d;
    return 0;
}

const char ayr_float_hint[] = "expected a float such as 1.5e-03 (with a '.'), .inf, -.inf or .nan";

int ayr_int(ayr *y, const yaml_node_t *n, const char *field, int64_t *out)
{
    if (ayr_expect_plain(y, n, field, "an integer"))
        return -1;
    const char *s = ayr_text(n);
    if (!ayr_int_text(s, 1))
        return ayr_fail(y, n, field, "expected a decimal integer, got '%s'", s);
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno == ERANGE)
        return ayr_fail(y, n, field, "integer '%s' out of range", s);
    *out = (int64_t)v;
    return 0;
}

int ayr_u64(ayr *y, const yaml_node_t *n, const char *field, uint64_t *out)
{
    if (ayr_expect_plain(y, n, field, "a non-negative integer"))
        return -1;
    const char *s = ayr_text(n);
    if (!ayr_int_text(s, 0))
        return ayr_fail(y, n, field, "expected a non-negative decimal integer, got '%s'", s);
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE)
        return ayr_fail(y, n, field, "integer '%s' out of range 0..2^64-1", s);
    *out = (uint64_t)v;
    return 0;
}

int ayr_double(ayr *y, const yaml_node_t *n, const char *field, double *out)
{
    if (ayr_expect_plain(y, n, field, "a float"))
        return -1;
    const char *s = ayr_text(n);
    int kind = ayr_float_text(s);
    if (!kind)
        return ayr_fail(y, n, field, "%s, got '%s'", ayr_float_hint, s);
    if (ayr_parse_f64(s, kind, out))
        return ayr_fail(y, n, field, "'%s' overflows binary64 (write .inf)", s);
    return 0;
}

int ayr_bool(ayr *y, const yaml_node_t *n, const char *field, int *out)
{
    if (ayr_expect_plain(y, n, field, "true or false"))
        return -1;
    const char *s = ayr_text(n);
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
        *out = 1;
    else if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
        *out = 0;
    else
        return ayr_fail(y, n, field, "expected true or false, got '%s'", s);
    return 0;
}

int ayr_str(ayr *y, const yaml_node_t *n, const char *field, const char **out)
{
    *out = NULL;
    if (ayr_expect_scalar(y, n, field, "a string"))
        return -1;
    const char *s = ayr_text(n);
    if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
        int kind = ayr_y11_resolve(s);
        if (kind < 0)
            return ayr_fail(y, n, field, "out of memory");
        if (kind != AYR_Y11_STR)
            return ayr_fail(y, n, field, "expected a string; YAML reads '%s' as a %s (quote it)", s,
                            y11_name(kind));
    }
    if (!s[0])
        return ayr_fail(y, n, field, "expected a non-empty string");
    *out = s;
    return 0;
}

int ayr_items(ayr *y, const yaml_node_t *n, const char *field, size_t len, int64_t *ints,
              double *dbls)
{
    for (size_t i = 0; i < len; i++) {
        char fi[AYR_FIELD_MAX];
        yaml_node_t *it = ayr_item_at(y, n, field, i, fi);
        if (!it)
            return -1;
        if (ints ? ayr_int(y, it, fi, &ints[i]) : ayr_double(y, it, fi, &dbls[i]))
            return -1;
    }
    return 0;
}

int ayr_int_list(ayr *y, const yaml_node_t *n, const char *field, int64_t max_len, int64_t **out,
                 int64_t *count)
{
    size_t len = 0;
    if (ayr_seq(y, n, field, "a sequence of integers", &len))
        return -1;
    if (len < 1 || (int64_t)len > max_len)
        return ayr_fail(y, n, field, "expected 1..%lld integers, got %zu", (long long)max_len, len);
    int64_t *a = calloc(len, sizeof *a);
    if (!a)
        return ayr_fail(y, n, field, "out of memory");
    if (ayr_items(y, n, field, len, a, NULL)) {
        free(a);
        return -1;
    }
    *out = a;
    *count = (int64_t)len;
    return 0;
}

/* ---- mappings --------------------------------------------------------------------------- */

ayr_walk_result ayr_walk(yaml_document_t *doc, const yaml_node_t *m, ayr_field *spec, size_t nspec,
                         int (*hook)(void *ctx, size_t i), void *ctx, ayr_walk_at *at)
{
    *at = (ayr_walk_at){NULL, NULL, 0};
    for (size_t i = 0; i < nspec; i++)
        spec[i].val = NULL;
    if (m->type != YAML_MAPPING_NODE)
        return AYR_WALK_NOT_MAPPING;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        at->key = k;
        at->name = k && k->type == YAML_SCALAR_NODE ? ayr_text(k) : NULL;
        if (!k || !v)
            return AYR_WALK_MALFORMED;
        if (!at->name)
            return AYR_WALK_BAD_KEY;
        size_t i;
        for (i = 0; i < nspec; i++)
            if (strcmp(spec[i].key, at->name) == 0)
                break;
        if (i == nspec)
            return AYR_WALK_UNKNOWN;
        at->index = i;
        if (spec[i].val)
            return AYR_WALK_DUPLICATE;
        spec[i].val = v;
        if (hook && hook(ctx, i))
            return AYR_WALK_STOPPED;
    }
    *at = (ayr_walk_at){NULL, NULL, 0};
    return AYR_WALK_OK;
}

typedef struct map_ctx {
    ayr *y;
    const char *path;
    const ayr_field *spec;
} map_ctx;

static int remember_field(void *ctx_, size_t i)
{
    const map_ctx *ctx = ctx_;
    char f[AYR_FIELD_MAX];
    ayr_join(f, ctx->path, ctx->spec[i].key);
    remember(ctx->y, f, ctx->spec[i].val->start_mark);
    return 0;
}

int ayr_map(ayr *y, const yaml_node_t *n, const char *path, ayr_field *spec, size_t nspec)
{
    const char *shown = path[0] ? path : "(document)";
    if (n->type != YAML_MAPPING_NODE)
        return ayr_fail(y, n, shown, "expected a mapping, got a %s",
                        n->type == YAML_SCALAR_NODE ? "scalar" : "sequence");
    if (ayr_check_tag(y, n, shown))
        return -1;
    /* The mapping itself: a rule about the whole of it ("steps[2]: expect.returns ...") points
     * at its first line. */
    if (path[0])
        remember(y, path, n->start_mark);
    map_ctx ctx = {y, path, spec};
    ayr_walk_at at;
    char f[AYR_FIELD_MAX];
    switch (ayr_walk(y->doc, n, spec, nspec, remember_field, &ctx, &at)) {
    case AYR_WALK_OK: break;
    case AYR_WALK_BAD_KEY: return ayr_fail(y, at.key, shown, "mapping keys must be plain strings");
    case AYR_WALK_UNKNOWN: ayr_join(f, path, at.name); return ayr_fail(y, at.key, f, "unknown key");
    case AYR_WALK_DUPLICATE:
        ayr_join(f, path, at.name);
        return ayr_fail(y, at.key, f, "duplicate key");
    default: /* NOT_MAPPING was refused above, and remember_field does not stop */
        return ayr_fail(y, n, shown, "malformed mapping");
    }
    for (size_t i = 0; i < nspec; i++) {
        if (spec[i].required && !spec[i].val) {
            ayr_join(f, path, spec[i].key);
            return ayr_fail(y, n, f, "required key missing");
        }
    }
    return 0;
}
