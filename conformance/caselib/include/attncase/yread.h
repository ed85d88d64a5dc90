/* attncase/yread.h — the strict YAML node reader the suite's YAML formats share: the bounded
 * first pass over a stream, PyYAML-1.1 typing of plain scalars, typed getters and the mapping
 * walk.
 *
 * libyaml does no typing: every scalar is text.  The getters check it against the grammar
 * PyYAML (YAML 1.1) uses, so a file they accept gives the Python tools values of the same types.
 * Every error is one line, "path:line:col: field: reason", with the 1-based line and column of
 * the offending node and the caller's dotted field path; nothing is kept between calls but the
 * caller's own ayr. */
#ifndef ATTNCASE_YREAD_H
#define ATTNCASE_YREAD_H

#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "attncase/ylimits.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The bounded first pass every file gets before its tree is built: streams libyaml's events over
 * data[0..len) and returns -1, with err = "PATH:LINE:COL: yaml: reason", at the first node over
 * ACASE_MAX_DEPTH / ACASE_MAX_NODES / ACASE_MAX_SCALAR_BYTES, at an anchor or alias, or at a
 * second document; 0 when the stream is within the limits. */
int ayr_prescan(const char *path, const void *data, size_t len, char *err, size_t errlen);

/* ayr_prescan, then the same bytes as a document tree into *doc (free it with
 * yaml_document_delete).  Returns 0, or -1 with err = "PATH:LINE:COL: yaml: reason" (or
 * "PATH: out of memory"). */
int ayr_load(const char *path, const void *data, size_t len, yaml_document_t *doc, char *err,
             size_t errlen);

/* ---- the strict reader ------------------------------------------------------------------- */

#define AYR_FIELD_MAX 96 /* a dotted field path ("steps[3].expect.keys"); longer is truncated */
/* Marks kept per document: a cache case of many steps has several fields per step, and a step's
 * cross-field error points at that step only while its mark is kept (1:1 otherwise).  The
 * reader is on the heap (about 120 bytes a mark). */
#define AYR_MAX_MARKS 4096

/* One document being read.  The caller sets path, doc, err and errlen (zero the rest). */
typedef struct ayr {
    const char *path;
    yaml_document_t *doc;
    char *err;
    size_t errlen;
    /* Start marks of the fields ayr_map has seen, and of each mapping it read under a path, so
     * a semantic error found after parsing can still point at the right line (ayr_mark). */
    struct {
        char field[AYR_FIELD_MAX];
        yaml_mark_t mark;
    } marks[AYR_MAX_MARKS];
    int nmarks;
} ayr;

/* Write "path:line:col: field: reason" (the mark of node n, 1:1 when n is NULL, or mark m) into
 * y->err; return -1. */
int ayr_fail(ayr *y, const yaml_node_t *n, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int ayr_fail_at(ayr *y, yaml_mark_t m, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The mark ayr_map remembered for field, else for its closest dotted parent, else 1:1. */
yaml_mark_t ayr_mark(const ayr *y, const char *field);

/* A field path into an AYR_FIELD_MAX buffer (truncation only shortens a message); ayr_join:
 * "parent.key", or "key" when parent is "". */
void ayr_fieldf(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ayr_join(char *out, const char *parent, const char *key);

/* Node idx of the document (NULL when out of range); the text of a scalar node. */
yaml_node_t *ayr_node(const ayr *y, int idx);
const char *ayr_text(const yaml_node_t *n);

/* Explicit tags (!!float, !foo) are refused: the reader and PyYAML would type them
 * differently. */
int ayr_check_tag(ayr *y, const yaml_node_t *n, const char *field);
/* A scalar (no tag, no NUL byte) described as `what` in the error; ayr_expect_plain: also
 * written plain (numbers, booleans, bit patterns). */
int ayr_expect_scalar(ayr *y, const yaml_node_t *n, const char *field, const char *what);
int ayr_expect_plain(ayr *y, const yaml_node_t *n, const char *field, const char *what);

/* A sequence (no tag), `what` in the error; its length into *len when len is not NULL. */
int ayr_seq(ayr *y, const yaml_node_t *n, const char *field, const char *what, size_t *len);
size_t ayr_seq_len(const yaml_node_t *n);
/* Item i (< ayr_seq_len) of a sequence; NULL only in a malformed document. */
yaml_node_t *ayr_item(const ayr *y, const yaml_node_t *seq, size_t i);
/* The same, with the item's field "field[i]" written into fi (AYR_FIELD_MAX bytes) for the
 * reads that follow; NULL with the error written (at seq) in a malformed document. */
yaml_node_t *ayr_item_at(ayr *y, const yaml_node_t *seq, const char *field, size_t i, char *fi);

/* ---- scalars: the YAML 1.1 grammar ------------------------------------------------------- */

/* How PyYAML (YAML 1.1 implicit resolvers, yaml/resolver.py) types a PLAIN scalar. */
typedef enum ayr_y11 {
    AYR_Y11_STR = 0,
    AYR_Y11_NULL,
    AYR_Y11_BOOL,
    AYR_Y11_INT,
    AYR_Y11_FLOAT,
    AYR_Y11_OTHER /* timestamp, merge '<<', value '=' */
} ayr_y11;

/* The PyYAML type of the plain scalar s.  Returns -1 if the regular expressions could not be
 * compiled (out of memory). */
int ayr_y11_resolve(const char *s);

/* [-+]?(0|[1-9][0-9]*) (no '-' unless allow_minus): an int for PyYAML without octal, hex,
 * underscores or sexagesimal. */
int ayr_int_text(const char *s, int allow_minus);
/* Float text accepted for float fields, a subset of the YAML 1.1 float type:
 *   [-+]?[0-9]+\.[0-9]*([eE][-+][0-9]+)?   |   [-+]?\.(inf|Inf|INF)   |   \.(nan|NaN|NAN)
 * Returns 0 (not a float), 1 (decimal), 2 (infinity) or 3 (NaN). */
int ayr_float_text(const char *s);
/* s, matched by ayr_float_text as `kind` (1..3), as a binary64; -1 when a decimal overflows
 * (underflow to a subnormal or zero is a correct rounding). */
int ayr_parse_f64(const char *s, int kind, double *out);
/* The reason given for a scalar that is not float text. */
extern const char ayr_float_hint[];

/* Typed getters: each returns 0, or -1 with the error written. */
int ayr_int(ayr *y, const yaml_node_t *n, const char *field, int64_t *out);
int ayr_u64(ayr *y, const yaml_node_t *n, const char *field, uint64_t *out);
int ayr_double(ayr *y, const yaml_node_t *n, const char *field, double *out);
int ayr_bool(ayr *y, const yaml_node_t *n, const char *field, int *out);
/* A non-empty string; a plain one must also be a string for PyYAML ("yes", "1.0" are not). */
int ayr_str(ayr *y, const yaml_node_t *n, const char *field, const char **out);

/* Items 0..len-1 (len <= its length) of the sequence n, read as integers into ints or (ints
 * NULL) floats into dbls; an item's field is "field[i]". */
int ayr_items(ayr *y, const yaml_node_t *n, const char *field, size_t len, int64_t *ints,
              double *dbls);
/* A sequence of 1..max_len integers, allocated into *out (*count of them). */
int ayr_int_list(ayr *y, const yaml_node_t *n, const char *field, int64_t max_len, int64_t **out,
                 int64_t *count);

/* ---- mappings ---------------------------------------------------------------------------- */

/* A key a mapping may have: key and required in, the value node out (NULL when absent). */
typedef struct ayr_field {
    const char *key;
    int required;
    yaml_node_t *val;
} ayr_field;

/* Match the pairs of mapping n against spec, strictly: not a mapping, a tag, a key that is not a
 * scalar, unknown and duplicate keys, and missing required keys are errors (fields named
 * "path.key"; path "" is the document).  Found values are remembered for ayr_mark. */
int ayr_map(ayr *y, const yaml_node_t *n, const char *path, ayr_field *spec, size_t nspec);

/* What stopped ayr_walk. */
typedef enum ayr_walk_result {
    AYR_WALK_OK = 0,
    AYR_WALK_NOT_MAPPING, /* m is not a mapping node */
    AYR_WALK_MALFORMED,   /* a pair whose key or value node is missing (at.key may be NULL) */
    AYR_WALK_BAD_KEY,     /* a key that is not a scalar */
    AYR_WALK_UNKNOWN,     /* a key not in spec */
    AYR_WALK_DUPLICATE,   /* a key given twice (at.key: the second) */
    AYR_WALK_STOPPED      /* the hook returned nonzero (its error is written) */
} ayr_walk_result;

typedef struct ayr_walk_at {
    yaml_node_t *key; /* the key node of the pair the walk stopped at */
    const char *name; /* its text when it is a scalar, else NULL */
    size_t index;     /* DUPLICATE, STOPPED: the spec entry */
} ayr_walk_at;

/* The mapping walk itself, for formats with messages of their own: the pairs of m in document
 * order, each key matched against spec (val set, `required` not looked at), hook(ctx, i) (may
 * be NULL) called as spec[i] is found, so value errors keep their order among key errors.
 * Stops at the first problem and says where in *at.  Reports, formats nothing. */
ayr_walk_result ayr_walk(yaml_document_t *doc, const yaml_node_t *m, ayr_field *spec, size_t nspec,
                         int (*hook)(void *ctx, size_t i), void *ctx, ayr_walk_at *at);

#ifdef __cplusplus
}
#endif
#endif
