/* test_cache_case.c — the `op: cache` part of the case format (caselib cache_case.c): a small
 * sequence read, checked value by value, written back byte-identically; one strict error per
 * rule, each naming file:line:col and the field; and every committed cache case surviving
 * read -> write -> read unchanged. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/cache_case.h"
#include "attncase/case.h"
#include "attnconf/backend.h"
#include "attnref/status.h"

/* A rotating cache (max_size 2): two single tokens, a rejected trim, then an attend step that
 * evicts position 0. Canonical form (what acase_write produces). */
static const char base[] =
    "attnconf_case: 4\n"
    "id: cache.test.small\n"
    "description: \"A small rotating sequence.\"\n"
    "rules: [clause15.retain_single]\n"
    "op: cache\n"
    "requires: [f32, mask.bool, cache.rotating]\n"
    "params: {kind: rotating, dtype: f32, batch: 1, kv_heads: 1, head_dim: 1, max_size: 2, keep: 0}\n"
    "steps:\n"
    "- op: update\n"
    "  k: {dtype: f32, shape: [1, 1, 2, 1], data: [0.00000000e+00, 1.00000000e+00]}\n"
    "  v: {dtype: f32, shape: [1, 1, 2, 1], data: [0.00000000e+00, 1.00000000e+00]}\n"
    "  expect: {offset: [2], positions: [[0, 1]], keys: [0.0e+00, 1.0e+00], values: [0.0e+00, 1.0e+00]}\n"
    "- op: trim\n"
    "  n: -1\n"
    "  expect: {error: einval, offset: [2], positions: [[0, 1]], keys: [0.0e+00, 1.0e+00], values: [0.0e+00, 1.0e+00]}\n"
    "- op: attend\n"
    "  k: {dtype: f32, shape: [1, 1, 1, 1], data: [2.00000000e+00]}\n"
    "  v: {dtype: f32, shape: [1, 1, 1, 1], data: [2.00000000e+00]}\n"
    "  q: {dtype: f32, shape: [1, 1, 1, 1], data: [5.00000000e-01]}\n"
    "  expect: {offset: [3], positions: [[1, 2]], keys: [1.0e+00, 2.0e+00], values: [1.0e+00, 2.0e+00], sees: [[[1, 2]]], out: {dtype: f32, shape: [1, 1, 1, 1], data: [1.6224593312018547e+00]}, tolerance: {ulps: 5.0e-01, row_atol: [1.0e-06]}}\n";

static acase *load(const char *text, char *err, size_t n)
{
    acase *c = NULL;
    if (acase_load_mem("t.yaml", text, strlen(text), &c, err, n) != 0)
        return NULL;
    return c;
}

Test(cachecase, reads_every_field)
{
    char err[512];
    acase *c = load(base, err, sizeof err);
    cr_assert_not_null(c, "%s", err);
    cr_assert_eq(c->op, ACASE_OP_CACHE);
    const acase_cache *cc = c->cache;
    cr_assert_eq(cc->params.kind, ACASE_CACHE_ROTATING);
    cr_assert_eq(cc->params.max_size, 2);
    cr_assert_eq(cc->params.v_head_dim, 1);
    cr_assert_eq(cc->nsteps, 3);
    cr_assert_eq(cc->steps[1].op, ACASE_CSTEP_TRIM);
    cr_assert_eq(cc->steps[1].n, -1);
    cr_assert_eq(cc->steps[1].error, ATTNREF_EINVAL);
    const acase_cache_step *a = &cc->steps[2];
    cr_assert_eq(a->op, ACASE_CSTEP_ATTEND);
    cr_assert_eq(a->offsets[0], 3);
    cr_assert_eq(a->length, 2);
    cr_assert_eq(a->positions[0], 1);
    cr_assert_eq(a->positions[1], 2);
    cr_assert_eq(a->keys[1], 2.0);
    cr_assert_eq(a->keep[0], 1);
    cr_assert_eq(a->keep[1], 1);
    cr_assert_eq(a->out[0], 1.6224593312018547);
    cr_assert_eq(a->row_atol[0], 1.0e-06);
    cr_assert_eq(acase_derive_requires(c),
                 ATTNCONF_CAP_F32 | ATTNCONF_CAP_MASK_BOOL | ATTNCONF_CAP_CACHE_ROTATING);
    acase_free(c);
}

Test(cachecase, write_is_canonical)
{
    char err[512], *text = NULL;
    size_t len = 0;
    acase *c = load(base, err, sizeof err);
    cr_assert_not_null(c, "%s", err);
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(acase_write(c, f, err, sizeof err), 0, "%s", err);
    fclose(f);
    cr_assert_str_eq(text, base);
    free(text);
    acase_free(c);
}

/* Replace the first occurrence of `from` in base by `to`. */
static char *mutate(const char *from, const char *to)
{
    const char *at = strstr(base, from);
    cr_assert_not_null(at, "fixture lacks '%s'", from);
    size_t n = strlen(base) - strlen(from) + strlen(to) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
    return s;
}

static const struct {
    const char *from, *to, *want;
} bad[] = {
    {"kind: rotating", "kind: ring", "t.yaml:7:16: params.kind: unknown cache kind 'ring'"},
    {"max_size: 2, keep: 0}", "keep: 0}", "params.max_size: required key missing (kind rotating)"},
    {"head_dim: 1, max_size", "head_dim: 1, chunk_size: 4, max_size",
     "params.chunk_size: not allowed for kind rotating"},
    {"- op: trim", "- op: rewind", "steps[1].op: unknown step op 'rewind'"},
    {"  n: -1\n", "", "steps[1].n: required key missing (op trim)"},
    {"- op: trim\n", "- op: trim\n  cache: 3\n", "steps[1].cache: cache 3 does not exist"},
    {"positions: [[0, 1]], keys: [0.0e+00, 1.0e+00], values: [0.0e+00, 1.0e+00]}\n- op: trim",
     "positions: [[0, 1]], keys: [0.0e+00], values: [0.0e+00, 1.0e+00]}\n- op: trim",
     "steps[0].expect.keys: has 1 values, the state needs 2"},
    {"sees: [[[1, 2]]]", "sees: [[[0, 2]]]",
     "steps[2].expect.sees[0][0][0]: position 0 is not a later retained position of row 0"},
    {"sees: [[[1, 2]]], ", "", "steps[2].expect.sees: required key missing (an attend step)"},
    {"expect: {error: einval, offset", "expect: {error: einval, returns: 0, offset",
     "steps[1].expect.returns: only for a trim step that is not rejected"},
    {"requires: [f32, mask.bool, cache.rotating]", "requires: [f32, mask.bool]",
     "requires: missing cache.rotating"},
    {"op: cache\n", "op: cache\ninputs: {}\n", "inputs: not allowed for op cache"},
    {"  q: {dtype: f32, shape: [1, 1, 1, 1]", "  q: {dtype: f16, shape: [1, 1, 1, 1]",
     "steps[2].q"},
};

Test(cachecase, strict_errors)
{
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *text = mutate(bad[i].from, bad[i].to), err[512] = "";
        acase *c = load(text, err, sizeof err);
        cr_expect_null(c, "case %zu was accepted", i);
        cr_expect(strstr(err, bad[i].want) != NULL, "case %zu: got '%s', want '%s'", i, err,
                  bad[i].want);
        cr_expect(strncmp(err, "t.yaml:", 7) == 0, "case %zu: no file:line:col in '%s'", i, err);
        acase_free(c);
        free(text);
    }
}

/* A cache case adds up every step's tensors against the per-file budget (ACASE_MAX_CASE_NUMEL):
 * steps whose k and v are each within the per-tensor limit are refused, before anything is
 * generated, at the step where the running total runs out (the fuzz regression
 * cache-steps-huge-tensors.yaml is the same shape at full size). */
Test(cachecase, steps_share_the_case_budget)
{
    const int64_t L = ACASE_MAX_CASE_NUMEL / 4; /* k and v of two steps fill the budget */
    cr_assert_leq(L, ACASE_MAX_TENSOR_NUMEL);
    size_t cap = 4096;
    char *text = malloc(cap);
    cr_assert_not_null(text);
    int len = snprintf(text, cap,
                       "attnconf_case: 4\n"
                       "id: cache.test.budget\n"
                       "description: \"Over the per-file budget.\"\n"
                       "rules: [clause14.append]\n"
                       "op: cache\n"
                       "requires: [f32, cache.standard]\n"
                       "params: {kind: standard, dtype: f32, batch: 1, kv_heads: 1, head_dim: 1}\n"
                       "steps:\n");
    for (int i = 0; i < 3; i++) /* step i: lines 9 + 4i (op), 10 + 4i (k), 11 + 4i (v), ... */
        len += snprintf(text + len, cap - (size_t)len,
                        "- op: update\n"
                        "  k: {dtype: f32, shape: [1, 1, %lld, 1], generate: {kind: uniform, "
                        "seed: %d, lo: -1.0, hi: 1.0}}\n"
                        "  v: {dtype: f32, shape: [1, 1, %lld, 1], generate: {kind: uniform, "
                        "seed: %d, lo: -1.0, hi: 1.0}}\n"
                        "  expect: {offset: [0], positions: [[]], keys: [], values: []}\n",
                        (long long)L, 2 * i + 1, (long long)L, 2 * i + 2);
    cr_assert_lt((size_t)len, cap);
    char err[512] = "", want[200];
    acase *c = load(text, err, sizeof err);
    cr_expect_null(c);
    snprintf(want, sizeof want,
             "t.yaml:18:26: steps[2].k.shape: the case's tensors exceed %lld "
             "elements in total (ACASE_MAX_CASE_NUMEL; %lld already read, this one has %lld)",
             (long long)ACASE_MAX_CASE_NUMEL, (long long)ACASE_MAX_CASE_NUMEL, (long long)L);
    cr_expect(strstr(err, want) != NULL, "got '%s', want '%s'", err, want);
    acase_free(c);
    free(text);
}

/* Every committed cache case reads, writes back to its own bytes (the files are casegen's
 * canonical output). */
Test(cachecase, committed_cases_round_trip)
{
    char **paths = NULL, err[512];
    int n = acase_list_dir(ATTNCONF_CASES_DIR, &paths, err, sizeof err);
    cr_assert_geq(n, 0, "%s", err);
    int seen = 0;
    for (int i = 0; i < n; i++) {
        if (strstr(paths[i], "/cache.") && strstr(paths[i], ".yaml")) {
            acase *c = NULL;
            cr_expect_eq(acase_load_file(paths[i], &c, err, sizeof err), 0, "%s", err);
            if (c) {
                FILE *in = fopen(paths[i], "rb");
                char *have = NULL, *text = NULL;
                size_t hl = 0, len = 0;
                FILE *m = open_memstream(&have, &hl);
                int ch;
                while (in && (ch = fgetc(in)) != EOF)
                    fputc(ch, m);
                fclose(m);
                if (in)
                    fclose(in);
                FILE *f = open_memstream(&text, &len);
                cr_expect_eq(acase_write(c, f, err, sizeof err), 0, "%s: %s", paths[i], err);
                fclose(f);
                cr_expect(len == hl && memcmp(text, have, len) == 0, "%s: not canonical", paths[i]);
                free(text);
                free(have);
                acase_free(c);
                seen++;
            }
        }
        free(paths[i]);
    }
    free(paths);
    cr_expect_gt(seen, 0, "no committed cache case found");
}
