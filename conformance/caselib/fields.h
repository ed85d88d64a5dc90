/* fields.h — the case-format fields more than one op reads, checks or writes (not installed):
 * tensors, dtypes, shapes, expected values, the padding lists, row checks, and the file's
 * element budget.
 *
 * Below the ops (op_*.c) and above the generic reader and writer (attncase/yread.h, ywrite.h),
 * so an op that shares a field with another shares its code, not a call into a sibling. */
#ifndef ATTNCASE_FIELDS_H
#define ATTNCASE_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "attncase/case.h"
#include "attncase/yread.h"
#include "op.h"
#include "util.h"
#include "ywrite.h"

/* A case file being read: the strict reader and the elements materialised so far for this file
 * (ACASE_MAX_CASE_NUMEL), charged before each allocation so the budget holds whatever the
 * order of the fields. */
typedef struct acase__rd {
    ayr y;
    int64_t numel_total;
} acase__rd;

/* Each reader returns 0, or -1 with the error written (file:line:col: field: why). */

/* Charge numel elements about to be allocated to the file's ACASE_MAX_CASE_NUMEL budget
 * (acase__rd_tensor charges its own); -1 with the error at n/field when over it. */
int acase__rd_charge(acase__rd *r, const yaml_node_t *n, const char *field, int64_t numel);
/* f32, f16, bf16 or bool. */
int acase__rd_dtype(ayr *y, const yaml_node_t *n, const char *field, attnref_dtype *dt);
/* A sequence of 0..4 non-negative integers. */
int acase__rd_shape(ayr *y, const yaml_node_t *n, const char *field, int32_t *ndim,
                    int64_t shape[4]);
/* A tensor mapping {dtype, shape, layout?, data | generate, stride0?}, materialised; name "q"
 * is the field inputs.q, a name with a '.' ("steps[3].k") is already the full path. */
int acase__rd_tensor(acase__rd *r, const yaml_node_t *n, const char *name, acase_tensor *t);
/* What op sdpa and op mask, the one-call ops, refuse and require alike: no `steps` (op cache
 * only), an `expected`. */
int acase__rd_one_shot(acase__rd *r, const struct acase_op_nodes *n);
/* params.lengths / params.left_padding (either node may be NULL): 1..ACASE_MAX_BATCH integers
 * each, as many in both; c->batch from them (1 when neither is given). */
int acase__rd_padding(acase__rd *r, const yaml_node_t *lengths, const yaml_node_t *left_padding,
                      acase *c);
/* The format v3 terms of SPEC clauses 20-22 (terms.c): the value nodes, NULL when absent (op
 * mask passes only chunk, segment_ids and block_ids). */
typedef struct acase__terms_nodes {
    const yaml_node_t *softcap, *alibi_max_bias, *sinks, *chunk, *segment_ids, *block_ids;
} acase__terms_nodes;
/* Read them into c, after acase__rd_padding (the id lists' row count must agree with the
 * padding lists', and sets c->batch without them). */
int acase__rd_terms(acase__rd *r, const acase__terms_nodes *t, acase *c);
/* The cross-field rules of the terms for a call with hq query heads, lk keys and the causal flag
 * (acase__chk_fail's contract): always exact binary32 values; with an expected result also
 * their ranges, one sink per query head, chunk and blocks only with causal, Lk ids per row. */
int acase__chk_terms(acase__chk *k, const acase *c, int64_t hq, int64_t lk, int causal);
/* Write the terms of c that are set, in the canonical order. */
void acase__w_terms(ayw *w, const acase *c);

/* `expected`: exactly one of out, keep and error, row_checks only with out.  An error is read
 * into c->expected.error; else the op's result node (`out` when want_out, op sdpa; `keep`, op
 * mask) and row_checks are the op's to read (*result NULL for an error case), and the other
 * op's result is refused. */
int acase__rd_expected(acase__rd *r, const yaml_node_t *n, acase *c, int want_out,
                       yaml_node_t **result, yaml_node_t **row_checks);
/* expected.<name>.shape and expected.<name>.data (name: out, floats; keep, 0 / 1) into e,
 * whose dtype is set. */
int acase__rd_expected_data(acase__rd *r, const yaml_node_t *shape, const yaml_node_t *data,
                            const char *name, acase_expected *e);

/* The batch of the padding lists, when given, is in 1..ACASE_MAX_BATCH (acase__chk_fail's
 * contract). */
int acase__chk_batch(acase__chk *k, const acase *c);

/* expected.<name>.shape gives e->numel elements and the data exist (name: out or keep). */
int acase__chk_expected_data(acase__chk *k, const acase_expected *e, const char *name);
/* expected.error is a known status, and a tolerance and row checks come only with an output
 * (the op has one, may_have_out, and the case is not an error case). */
int acase__chk_expected(acase__chk *k, const acase *c, int may_have_out);

/* `expected: {error: NAME}` for an error case, else `expected:` with what result() writes. */
void acase__w_expected(ayw *w, const acase *c, void (*result)(ayw *w, const acase *c));
/* `name: {dtype, shape, layout?, stride0?, generate | data}` (inputs' flow form). */
void acase__w_tensor(ayw *w, const char *name, const acase_tensor *t);
/* `row_checks: {exact: [...], finite: [...]}` over nrows modes, only when some row is not
 * CLOSE; an empty list is omitted. */
void acase__w_row_checks(ayw *w, const uint8_t *row_check, int64_t nrows);
/* A cache or paged step's `<path>.row_checks: {exact: [rows], finite: [rows]}` over nrows output
 * rows: allocates *row_check (nrows bytes, ACASE_CHECK_CLOSE) and marks the listed rows; each
 * list strictly increasing, in 0..nrows-1, no row in both.  -1 after reporting (FORMAT.md). */
int acase__rd_row_checks(acase__rd *r, yaml_node_t *n, const char *path, uint8_t **row_check,
                         int64_t nrows);
/* window, lengths, left_padding of c when set: the same keys, in the same order, for op sdpa
 * (the kernels' own mask parameters) and op mask (the mask builder). */
void acase__w_padding(ayw *w, const acase *c);

#endif
