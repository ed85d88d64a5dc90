/* test_caselib.c — Criterion tests of the attncase library (case format v2, cases/FORMAT.md).
 *
 * Suites: caselib (model, names, capabilities, listing), generator (the documented generator
 * and its test vector), casewrite (canonical text, write -> read -> write), caseread (strict
 * reading: every malformed input is an error with the right line, column and field). */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attncase/case.h"
#include "attnconf/backend.h"
#include "attnref/status.h"
#include "sample_cases.h"

/* ---- helpers -------------------------------------------------------------------------- */

static char *write_to_string(const acase *c, char *err, size_t errlen, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    *rc = acase_write(c, f, err, errlen);
    fclose(f);
    return buf;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot create %s", path);
    cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    cr_assert_eq(fclose(f), 0);
}

/* Load `text` from a fresh temporary file named case.yaml. */
static int load_text(const char *text, acase **out, char *err, size_t errlen)
{
    char dir[] = "/tmp/attncase_test.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[64];
    snprintf(path, sizeof path, "%s/case.yaml", dir);
    write_file(path, text);
    int rc = acase_load_file(path, out, err, errlen);
    unlink(path);
    rmdir(dir);
    return rc;
}

static acase *write_and_reload(const acase *c, char **text)
{
    char err[512] = "";
    int rc;
    char *t = write_to_string(c, err, sizeof err, &rc);
    cr_assert_eq(rc, 0, "write %s: %s", c->id, err);
    acase *back = NULL;
    rc = load_text(t, &back, err, sizeof err);
    cr_assert_eq(rc, 0, "reload %s: %s\n%s", c->id, err, t);
    if (text)
        *text = t;
    else
        free(t);
    return back;
}

static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static void assert_same_tensor(const char *name, const acase_tensor *a, const acase_tensor *b)
{
    cr_assert_eq(a->present, b->present, "%s.present", name);
    if (!a->present)
        return;
    cr_assert_eq(a->dtype, b->dtype, "%s.dtype", name);
    cr_assert_eq(a->ndim, b->ndim, "%s.ndim", name);
    for (int i = 0; i < a->ndim; i++)
        cr_assert_eq(a->shape[i], b->shape[i], "%s.shape[%d]", name, i);
    cr_assert_eq(a->layout, b->layout, "%s.layout", name);
    cr_assert_eq(a->stride0, b->stride0, "%s.stride0", name);
    cr_assert_eq(a->source, b->source, "%s.source", name);
    if (a->source == ACASE_SRC_UNIFORM) {
        cr_assert_eq(a->seed, b->seed, "%s.seed", name);
        cr_assert(same_bits(a->lo, b->lo) && same_bits(a->hi, b->hi), "%s lo/hi", name);
    }
    cr_assert_eq(a->numel, b->numel, "%s.numel", name);
    cr_assert(memcmp(a->data, b->data, (size_t)a->numel * attnref_dtype_size(a->dtype)) == 0,
              "%s.data differs", name);
}

static void assert_same_case(const acase *a, const acase *b)
{
    cr_assert_str_eq(a->id, b->id);
    cr_assert_str_eq(a->description, b->description);
    cr_assert_eq(a->nrules, b->nrules);
    for (int i = 0; i < a->nrules; i++)
        cr_assert_str_eq(a->rules[i], b->rules[i]);
    cr_assert_eq(a->op, b->op);
    cr_assert_eq(a->requires, b->requires);
    cr_assert_eq(a->lq, b->lq);
    cr_assert_eq(a->offset, b->offset);
    cr_assert_eq(a->window, b->window);
    cr_assert_eq(a->kv_len, b->kv_len);
    cr_assert_eq(a->batch, b->batch);
    cr_assert_eq(!a->lengths, !b->lengths);
    cr_assert_eq(!a->left_padding, !b->left_padding);
    if (a->lengths)
        cr_assert(memcmp(a->lengths, b->lengths, (size_t)a->batch * sizeof(int64_t)) == 0);
    if (a->left_padding)
        cr_assert(memcmp(a->left_padding, b->left_padding, (size_t)a->batch * sizeof(int64_t)) ==
                  0);
    cr_assert_eq(a->has_scale, b->has_scale);
    cr_assert(same_bits(a->scale, b->scale));
    cr_assert_eq(a->causal, b->causal);
    cr_assert_eq(a->has_causal_offset, b->has_causal_offset);
    cr_assert_eq(a->causal_offset, b->causal_offset);
    assert_same_tensor("q", &a->q, &b->q);
    assert_same_tensor("k", &a->k, &b->k);
    assert_same_tensor("v", &a->v, &b->v);
    assert_same_tensor("mask", &a->mask, &b->mask);
    const acase_expected *x = &a->expected, *y = &b->expected;
    cr_assert_eq(x->error, y->error);
    if (!x->error) {
        cr_assert_eq(x->dtype, y->dtype);
        cr_assert_eq(x->ndim, y->ndim);
        for (int i = 0; i < x->ndim; i++)
            cr_assert_eq(x->shape[i], y->shape[i]);
        cr_assert_eq(x->numel, y->numel);
        cr_assert(memcmp(x->values, y->values, (size_t)x->numel * sizeof(double)) == 0,
                  "expected values differ");
    }
    /* Row checks: NULL means every row close, the same as all ACASE_CHECK_CLOSE. */
    if (x->row_check && y->row_check)
        cr_assert_eq(x->nrows, y->nrows, "expected.nrows");
    int64_t nrows = x->row_check ? x->nrows : y->row_check ? y->nrows : 0;
    for (int64_t r = 0; r < nrows; r++)
        cr_assert_eq(x->row_check ? x->row_check[r] : 0, y->row_check ? y->row_check[r] : 0,
                     "row_check[%lld]", (long long)r);
    cr_assert(same_bits(a->ulps, b->ulps), "ulps");
    cr_assert_eq(!a->row_atol, !b->row_atol, "row_atol present");
    int64_t tol_rows = a->row_atol ? acase_expected_rows(x) : 0;
    for (int64_t r = 0; r < tol_rows; r++)
        cr_assert(same_bits(a->row_atol[r], b->row_atol[r]), "row_atol[%lld]", (long long)r);
}

/* ---- caselib -------------------------------------------------------------------------- */

Test(caselib, new_and_free)
{
    acase *c = acase_new();
    cr_assert_not_null(c);
    cr_assert_eq(c->q.present, 0);
    cr_assert_null(c->description);
    cr_assert_eq(c->expected.error, 0);
    acase_free(c);
    acase_free(NULL);
}

Test(caselib, family)
{
    char out[ACASE_ID_MAX];
    acase_family("sdpa.causal.lq_lt_lk.f16", out, sizeof out);
    cr_assert_str_eq(out, "sdpa.causal");
    acase_family("mask.window.w1", out, sizeof out);
    cr_assert_str_eq(out, "mask.window");
    acase_family("two.parts", out, sizeof out);
    cr_assert_str_eq(out, "two.parts");
    char small[5];
    acase_family("sdpa.causal.x", small, sizeof small);
    cr_assert_str_eq(small, "sdpa");
}

Test(caselib, cap_names)
{
    static const struct {
        const char *name;
        uint64_t bit;
    } want[] = {
        {"f32", ATTNCONF_CAP_F32},
        {"f16", ATTNCONF_CAP_F16},
        {"bf16", ATTNCONF_CAP_BF16},
        {"mask.bool", ATTNCONF_CAP_MASK_BOOL},
        {"mask.additive", ATTNCONF_CAP_MASK_ADD},
        {"causal", ATTNCONF_CAP_CAUSAL},
        {"causal.offset", ATTNCONF_CAP_CAUSAL_OFFSET},
        {"gqa", ATTNCONF_CAP_GQA},
        {"dv_ne_d", ATTNCONF_CAP_DV_NE_D},
        {"strided", ATTNCONF_CAP_STRIDED},
        {"scale", ATTNCONF_CAP_SCALE},
        {"mask.broadcast", ATTNCONF_CAP_MASK_BCAST},
        {"build_mask", ATTNCONF_CAP_BUILD_MASK},
        {"window", ATTNCONF_CAP_WINDOW},
        {"lengths", ATTNCONF_CAP_LENGTHS},
        {"left_padding", ATTNCONF_CAP_LEFT_PAD},
        {"sdpa.window", ATTNCONF_CAP_SDPA_WINDOW},
        {"sdpa.lengths", ATTNCONF_CAP_SDPA_LENGTHS},
        {"sdpa.left_padding", ATTNCONF_CAP_SDPA_LEFT_PAD},
        {"mask.kv_len", ATTNCONF_CAP_KV_LEN},
        {"stride0", ATTNCONF_CAP_STRIDE0},
        {"sdpa.softcap", ATTNCONF_CAP_SOFTCAP},
        {"sdpa.alibi", ATTNCONF_CAP_ALIBI},
        {"sdpa.sinks", ATTNCONF_CAP_SINKS},
        {"sdpa.chunk", ATTNCONF_CAP_CHUNK},
        {"sdpa.segments", ATTNCONF_CAP_SEGMENTS},
        {"sdpa.blocks", ATTNCONF_CAP_BLOCKS},
        {"mask.chunk", ATTNCONF_CAP_MASK_CHUNK},
        {"mask.segments", ATTNCONF_CAP_MASK_SEGMENTS},
        {"mask.blocks", ATTNCONF_CAP_MASK_BLOCKS},
        {"paged", ATTNCONF_CAP_PAGED},
    };
    uint64_t all = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        cr_assert_eq(acase_cap_from_name(want[i].name), want[i].bit, "%s", want[i].name);
        cr_assert_str_eq(acase_cap_name(want[i].bit), want[i].name);
        all |= want[i].bit;
    }
    cr_assert_eq(all, 0x3fffffffull | ATTNCONF_CAP_PAGED);
    cr_assert_eq(acase_cap_from_name("f64"), 0);
    cr_assert_eq(acase_cap_from_name(""), 0);
    cr_assert_eq(acase_cap_from_name(NULL), 0);
    cr_assert_null(acase_cap_name(1ull << 30));
    cr_assert_null(acase_cap_name(ATTNCONF_CAP_F32 | ATTNCONF_CAP_F16));
}

Test(caselib, derive_requires_samples)
{
    static const uint64_t want[SAMPLE_COUNT] = {
        ATTNCONF_CAP_F32 | ATTNCONF_CAP_MASK_BOOL | ATTNCONF_CAP_GQA | ATTNCONF_CAP_DV_NE_D |
            ATTNCONF_CAP_STRIDED | ATTNCONF_CAP_SCALE | ATTNCONF_CAP_MASK_BCAST,
        ATTNCONF_CAP_F16 | ATTNCONF_CAP_CAUSAL | ATTNCONF_CAP_CAUSAL_OFFSET | ATTNCONF_CAP_STRIDED,
        ATTNCONF_CAP_BF16 | ATTNCONF_CAP_MASK_ADD | ATTNCONF_CAP_DV_NE_D | ATTNCONF_CAP_MASK_BCAST,
        ATTNCONF_CAP_BF16 | ATTNCONF_CAP_F32 | ATTNCONF_CAP_MASK_BOOL | ATTNCONF_CAP_STRIDED |
            ATTNCONF_CAP_MASK_BCAST,
        ATTNCONF_CAP_BUILD_MASK | ATTNCONF_CAP_WINDOW | ATTNCONF_CAP_LENGTHS |
            ATTNCONF_CAP_LEFT_PAD,
        ATTNCONF_CAP_BUILD_MASK,
        ATTNCONF_CAP_F32 | ATTNCONF_CAP_CAUSAL | ATTNCONF_CAP_DV_NE_D | ATTNCONF_CAP_SDPA_WINDOW |
            ATTNCONF_CAP_SDPA_LENGTHS | ATTNCONF_CAP_SDPA_LEFT_PAD | ATTNCONF_CAP_STRIDE0,
        ATTNCONF_CAP_BUILD_MASK | ATTNCONF_CAP_LENGTHS | ATTNCONF_CAP_KV_LEN,
    };
    for (int i = 0; i < SAMPLE_COUNT; i++) {
        acase *c = sample_case(i);
        cr_assert_not_null(c);
        cr_assert_eq(acase_derive_requires(c), want[i], "sample %d (%s): 0x%llx", i, c->id,
                     (unsigned long long)acase_derive_requires(c));
        char err[256];
        cr_assert_eq(acase_validate(c, err, sizeof err), 0, "%s: %s", c->id, err);
        acase_free(c);
    }
}

Test(caselib, derive_requires_full_mask_is_not_broadcast)
{
    acase *c = sample_case(0);
    cr_assert_not_null(c);
    /* A mask of exactly (B, Hq, Lq, Lk) = (1, 2, 3, 5) is no broadcast. */
    c->mask.ndim = 4;
    c->mask.shape[0] = 1;
    c->mask.shape[1] = 2;
    c->mask.shape[2] = 3;
    c->mask.shape[3] = 5;
    cr_assert_eq(acase_derive_requires(c) & ATTNCONF_CAP_MASK_BCAST, 0);
    c->mask.shape[1] = 1;
    cr_assert_neq(acase_derive_requires(c) & ATTNCONF_CAP_MASK_BCAST, 0);
    acase_free(c);
}

Test(caselib, validate_rejects)
{
    char err[256];
    acase *c = sample_case(1);
    cr_assert_not_null(c);
    c->requires &= ~ATTNCONF_CAP_CAUSAL_OFFSET;
    cr_assert_eq(acase_validate(c, err, sizeof err), -1);
    cr_assert_str_eq(err, "requires: missing causal.offset (implied by the case content)");
    c->requires |= ATTNCONF_CAP_CAUSAL_OFFSET | ATTNCONF_CAP_GQA; /* a superset is fine */
    cr_assert_eq(acase_validate(c, err, sizeof err), 0, "%s", err);
    snprintf(c->id, sizeof c->id, "sdpa.Bad.id");
    cr_assert_eq(acase_validate(c, err, sizeof err), -1);
    cr_assert(strncmp(err, "id: ", 4) == 0, "%s", err);
    snprintf(c->id, sizeof c->id, "sdpa.two");
    cr_assert_eq(acase_validate(c, err, sizeof err), -1);
    snprintf(c->id, sizeof c->id, "sdpa.sample.x");
    c->expected.shape[3] = 5;
    cr_assert_eq(acase_validate(c, err, sizeof err), -1);
    cr_assert(strncmp(err, "expected.out.shape: ", 20) == 0, "%s", err);
    acase_free(c);
}

Test(caselib, expected_alloc_rows)
{
    acase_expected e;
    memset(&e, 0, sizeof e);
    e.dtype = ATTNREF_F32;
    e.ndim = 4;
    int64_t s[4] = {2, 3, 4, 5};
    memcpy(e.shape, s, sizeof s);
    cr_assert_eq(acase_expected_alloc(&e, NULL, 0), 0);
    cr_assert_null(e.row_check);
    cr_assert_eq(e.nrows, 0);
    char err[128];
    cr_assert_eq(acase_expected_alloc_rows(&e, err, sizeof err), 0, "%s", err);
    cr_assert_eq(e.nrows, 24, "B*Hq*Lq = numel / Dv");
    for (int64_t r = 0; r < e.nrows; r++)
        cr_assert_eq(e.row_check[r], ACASE_CHECK_CLOSE);
    /* Dv = 0: the rows exist but are empty. */
    e.shape[3] = 0;
    cr_assert_eq(acase_expected_alloc_rows(&e, err, sizeof err), 0, "%s", err);
    cr_assert_eq(e.nrows, 24);
    /* A zero leading extent: no rows. */
    e.shape[3] = 5;
    e.shape[1] = 0;
    cr_assert_eq(acase_expected_alloc_rows(&e, err, sizeof err), 0, "%s", err);
    cr_assert_eq(e.nrows, 0);
    cr_assert_not_null(e.row_check, "never NULL after a successful allocation");
    /* Reallocating the values drops the rows (the shape may have changed). */
    e.shape[1] = 3;
    cr_assert_eq(acase_expected_alloc(&e, NULL, 0), 0);
    cr_assert_null(e.row_check);
    cr_assert_eq(e.nrows, 0);
    e.ndim = 0;
    cr_assert_eq(acase_expected_alloc_rows(&e, err, sizeof err), -1);
    cr_assert_str_eq(err, "shape: rank 0 has no rows");
    cr_assert_null(e.row_check);
    free(e.values);
}

Test(caselib, validate_row_checks)
{
    char err[256];
    acase *c = sample_case(0);
    cr_assert_not_null(c);
    cr_assert_eq(c->expected.nrows, 6);
    cr_assert_eq(acase_validate(c, err, sizeof err), 0, "%s", err);
    c->expected.row_check[2] = 3;
    cr_assert_eq(acase_validate(c, err, sizeof err), -1);
    cr_assert_str_eq(err, "expected.row_checks: row 2 has unknown check mode 3");
    c->expected.row_check[2] = ACASE_CHECK_CLOSE;
    c->expected.nrows = 5;
    cr_assert_eq(acase_validate(c, err, sizeof err), -1);
    cr_assert_str_eq(err, "expected.row_checks: has 5 rows, the output has B*Hq*Lq = 6");
    acase_free(c);

    /* Only sdpa cases with expected.out may carry row checks. */
    for (int i = 3; i <= 4; i++) {
        c = sample_case(i); /* 3: a rejection, 4: a mask case */
        cr_assert_not_null(c);
        c->expected.row_check = calloc(1, 1);
        c->expected.nrows = 1;
        cr_assert_eq(acase_validate(c, err, sizeof err), -1, "sample %d", i);
        cr_assert_str_eq(err, "expected.row_checks: only allowed with expected.out");
        acase_free(c);
    }
}

Test(caselib, list_dir_recursive_sorted)
{
    char dir[] = "/tmp/attncase_list.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    static const char *const dirs[] = {"b", "a", "a/z", ".hidden"};
    static const char *const files[] = {
        "b/2.yaml",  "b/10.yaml",   "a/z/x.yaml",     "a/y.yaml",    "top.yaml",
        "other.yml", "a/readme.md", ".hidden/h.yaml", "a/.swp.yaml", "a/z/case.yaml.bak"};
    char p[256];
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, dirs[i]);
        cr_assert_eq(mkdir(p, 0700), 0);
    }
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        write_file(p, "x: 1\n");
    }
    char **paths = NULL, err[256];
    int n = acase_list_dir(dir, &paths, err, sizeof err);
    static const char *const want[] = {"a/y.yaml", "a/z/x.yaml", "b/10.yaml", "b/2.yaml",
                                       "top.yaml"};
    cr_assert_eq(n, 5, "%d: %s", n, n < 0 ? err : "");
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, want[i]);
        cr_assert_str_eq(paths[i], p);
        free(paths[i]);
    }
    free(paths);
    /* A trailing slash gives the same paths (no "//"). */
    snprintf(p, sizeof p, "%s/", dir);
    n = acase_list_dir(p, &paths, err, sizeof err);
    cr_assert_eq(n, 5);
    snprintf(p, sizeof p, "%s/a/y.yaml", dir);
    cr_assert_str_eq(paths[0], p);
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    for (int i = (int)(sizeof files / sizeof files[0]) - 1; i >= 0; i--) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    for (int i = (int)(sizeof dirs / sizeof dirs[0]) - 1; i >= 0; i--) {
        snprintf(p, sizeof p, "%s/%s", dir, dirs[i]);
        rmdir(p);
    }
    rmdir(dir);
    n = acase_list_dir(dir, &paths, err, sizeof err);
    cr_assert_eq(n, -1);
    cr_assert_not_null(strstr(err, "No such file"), "%s", err);
}

/* acase_peek_id reads the top-level id only, and says "don't know" (-1) for anything it cannot
 * be sure of, so that `run --filter` never skips a file on a guess. */
Test(caselib, peek_id)
{
    char p[] = "/tmp/attncase_peek.XXXXXX";
    int fd = mkstemp(p);
    cr_assert_geq(fd, 0);
    close(fd);
    char id[ACASE_ID_MAX];
    static const struct {
        const char *text, *id; /* id NULL: expect -1 */
    } rows[] = {
        {"attnconf_case: 4\nid: sdpa.nomask.basic.f32\nop: sdpa\n", "sdpa.nomask.basic.f32"},
        /* after nested values of every kind, and quoted */
        {"a: {x: [1, {y: 2}], id: nested.not.this}\nb: [[id, z]]\nc: &k 3\nd: *k\n"
         "id: \"x.y.z\"\n",
         "x.y.z"},
        {"id: [a.b.c]\n", NULL},          /* not a scalar */
        {"a: 1\n", NULL},                 /* no id */
        {"- id: a.b.c\n", NULL},          /* not a mapping */
        {"? [id]\n: a.b.c\n", NULL},      /* complex key */
        {"id: a.b.c\nb: [1,\n", "a.b.c"}, /* stops at the id: a later error unseen */
        {"a: [1,\nid: a.b.c\n", NULL},    /* a syntax error before the id */
        {"", NULL},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        write_file(p, rows[i].text);
        int rc = acase_peek_id(p, id, sizeof id);
        if (rows[i].id) {
            cr_assert_eq(rc, 0, "row %zu", i);
            cr_assert_str_eq(id, rows[i].id, "row %zu", i);
        } else {
            cr_assert_eq(rc, -1, "row %zu: got '%s'", i, id);
        }
    }
    /* An id that does not fit, and deep nesting before the id: both "don't know", bounded. */
    cr_assert_eq(acase_peek_id(p, id, 0), -1);
    write_file(p, "id: abcdefgh\n");
    cr_assert_eq(acase_peek_id(p, id, 8), -1);
    cr_assert_eq(acase_peek_id(p, id, 9), 0);
    cr_assert_str_eq(id, "abcdefgh");
    {
        FILE *f = fopen(p, "w");
        cr_assert_not_null(f);
        fputs("a: ", f);
        for (int i = 0; i < 20000; i++)
            fputc('[', f);
        fclose(f);
        cr_assert_eq(acase_peek_id(p, id, sizeof id), -1);
    }
    unlink(p);
    cr_assert_eq(acase_peek_id(p, id, sizeof id), -1); /* gone */
    cr_assert_eq(acase_peek_id(NULL, id, sizeof id), -1);
}

Test(caselib, list_dir_does_not_follow_directory_links)
{
    /* A link to the tree itself (a loop) and one to / (out of the tree) are skipped; a link to
     * a case file is listed like the file. */
    char dir[] = "/tmp/attncase_links.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char p[256], q[256];
    snprintf(p, sizeof p, "%s/case.yaml", dir);
    write_file(p, "x: 1\n");
    snprintf(q, sizeof q, "%s/self", dir);
    cr_assert_eq(symlink(".", q), 0);
    snprintf(q, sizeof q, "%s/root", dir);
    cr_assert_eq(symlink("/", q), 0);
    snprintf(q, sizeof q, "%s/alias.yaml", dir);
    cr_assert_eq(symlink("case.yaml", q), 0);
    char **paths = NULL, err[256];
    int n = acase_list_dir(dir, &paths, err, sizeof err);
    cr_assert_eq(n, 2, "%d: %s", n, n < 0 ? err : "");
    snprintf(q, sizeof q, "%s/alias.yaml", dir);
    cr_assert_str_eq(paths[0], q);
    cr_assert_str_eq(paths[1], p);
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
    static const char *const names[] = {"self", "root", "alias.yaml", "case.yaml"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(q, sizeof q, "%s/%s", dir, names[i]);
        unlink(q);
    }
    rmdir(dir);
}

/* ---- generator ------------------------------------------------------------------------ */

Test(generator, splitmix64_reference_outputs)
{
    /* SplitMix64 from seed 1 (Vigna's splitmix64.c). */
    uint64_t s = 1;
    cr_assert_eq(acase_splitmix64_next(&s), 0x910a2dec89025cc1ull);
    cr_assert_eq(acase_splitmix64_next(&s), 0xbeeb8da1658eec67ull);
    cr_assert_eq(acase_splitmix64_next(&s), 0xf893a2eefb32555eull);
    cr_assert_eq(acase_splitmix64_next(&s), 0x71c18690ee42c90bull);
}

/* The test vector of FORMAT.md ("Generated inputs"); check_generator.py asserts the same
 * literals in Python and that FORMAT.md contains them. */
Test(generator, format_md_test_vector)
{
    static const uint32_t f32_bits[4] = {0x3e08516f, 0x3efbae37, 0x3f712746, 0xbde3e797};
    static const char *const f32_text[4] = {"1.33123145e-01", "4.91563529e-01", "9.42005515e-01",
                                            "-1.11281566e-01"};
    static const uint16_t f16_bits[4] = {0x3043, 0x37dd, 0x3b89, 0xaf1f};
    static const uint16_t bf16_bits[4] = {0x3e08, 0x3efc, 0x3f71, 0xbde4};
    static const attnref_dtype dts[3] = {ATTNREF_F32, ATTNREF_F16, ATTNREF_BF16};
    for (int d = 0; d < 3; d++) {
        acase_tensor t;
        memset(&t, 0, sizeof t);
        t.present = 1;
        t.dtype = dts[d];
        t.ndim = 1;
        t.shape[0] = 4;
        t.seed = 1;
        t.lo = -1.0;
        t.hi = 1.0;
        char err[128];
        cr_assert_eq(acase_tensor_generate(&t, err, sizeof err), 0, "%s", err);
        cr_assert_eq(t.source, ACASE_SRC_UNIFORM);
        for (int i = 0; i < 4; i++) {
            if (dts[d] == ATTNREF_F32) {
                uint32_t b;
                memcpy(&b, (float *)t.data + i, 4);
                cr_assert_eq(b, f32_bits[i], "f32[%d] = 0x%08x", i, b);
                char txt[32];
                snprintf(txt, sizeof txt, "%.8e", (double)((float *)t.data)[i]);
                cr_assert_str_eq(txt, f32_text[i]);
            } else {
                uint16_t h = ((uint16_t *)t.data)[i];
                cr_assert_eq(h, dts[d] == ATTNREF_F16 ? f16_bits[i] : bf16_bits[i],
                             "%s[%d] = 0x%04x", attnref_dtype_name(dts[d]), i, h);
            }
        }
        free(t.data);
    }
}

/* FORMAT.md's double-rounding example: x rounds to the f32 0x3e875000, an f16 halfway point,
 * which rounds to even (0x343a); one rounding from binary64 would give 0x343b. */
Test(generator, format_md_double_rounding_example)
{
    acase_tensor t;
    memset(&t, 0, sizeof t);
    t.present = 1;
    t.ndim = 1;
    t.shape[0] = 1;
    t.seed = 18042;
    t.lo = -1.0;
    t.hi = 1.0;
    t.dtype = ATTNREF_F32;
    cr_assert_eq(acase_tensor_generate(&t, NULL, 0), 0);
    uint32_t b;
    memcpy(&b, t.data, 4);
    cr_assert_eq(b, 0x3e875000u);
    char txt[32];
    snprintf(txt, sizeof txt, "%.8e", (double)*(float *)t.data);
    cr_assert_str_eq(txt, "2.64282227e-01");
    t.dtype = ATTNREF_F16;
    cr_assert_eq(acase_tensor_generate(&t, NULL, 0), 0);
    cr_assert_eq(*(uint16_t *)t.data, 0x343a);
    uint64_t s = 18042;
    double x = -1.0 + 2.0 * ((double)(acase_splitmix64_next(&s) >> 11) * 0x1p-53);
    cr_assert_eq(attnref_f64_to_f16(x), 0x343b);
    free(t.data);
}

Test(generator, logical_order_independent_of_layout)
{
    acase_tensor a, b;
    memset(&a, 0, sizeof a);
    a.present = 1;
    a.dtype = ATTNREF_F16;
    a.ndim = 4;
    a.shape[0] = 1;
    a.shape[1] = 2;
    a.shape[2] = 3;
    a.shape[3] = 4;
    a.seed = 99;
    a.lo = -2.0;
    a.hi = 3.0;
    b = a;
    b.layout = ACASE_LAYOUT_BLHD;
    cr_assert_eq(acase_tensor_generate(&a, NULL, 0), 0);
    cr_assert_eq(acase_tensor_generate(&b, NULL, 0), 0);
    cr_assert(memcmp(a.data, b.data, 24 * 2) == 0);
    /* Element n is the n-th output of one stream: a 1-D tensor of 24 has the same values. */
    acase_tensor c;
    memset(&c, 0, sizeof c);
    c.present = 1;
    c.dtype = ATTNREF_F16;
    c.ndim = 1;
    c.shape[0] = 24;
    c.seed = 99;
    c.lo = -2.0;
    c.hi = 3.0;
    cr_assert_eq(acase_tensor_generate(&c, NULL, 0), 0);
    cr_assert(memcmp(a.data, c.data, 24 * 2) == 0);
    for (int i = 0; i < 24; i++) {
        float f = attnref_f16_to_f32(((uint16_t *)a.data)[i]);
        cr_assert(f >= -2.0f && f <= 3.0f);
    }
    free(a.data);
    free(b.data);
    free(c.data);
}

Test(generator, degenerate_and_invalid_ranges)
{
    acase_tensor t;
    memset(&t, 0, sizeof t);
    t.present = 1;
    t.dtype = ATTNREF_F32;
    t.ndim = 2;
    t.shape[0] = 3;
    t.shape[1] = 0;
    t.lo = 1.5;
    t.hi = 1.5;
    cr_assert_eq(acase_tensor_generate(&t, NULL, 0), 0);
    cr_assert_eq(t.numel, 0);
    t.shape[1] = 2;
    cr_assert_eq(acase_tensor_generate(&t, NULL, 0), 0);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(((float *)t.data)[i], 1.5f);
    char err[128];
    t.hi = 1.0;
    cr_assert_eq(acase_tensor_generate(&t, err, sizeof err), -1);
    t.lo = -DBL_MAX;
    t.hi = DBL_MAX; /* hi - lo overflows */
    cr_assert_eq(acase_tensor_generate(&t, err, sizeof err), -1);
    t.lo = 0;
    t.hi = 1;
    t.dtype = ATTNREF_BOOL;
    cr_assert_eq(acase_tensor_generate(&t, err, sizeof err), -1);
    free(t.data);
}

/* ---- casewrite ------------------------------------------------------------------------ */

/* The canonical text of a small case, byte for byte (FORMAT.md "Canonical form"). */
Test(casewrite, canonical_text)
{
    acase *c = acase_new();
    cr_assert_not_null(c);
    snprintf(c->id, sizeof c->id, "sdpa.example.tiny");
    c->description = strdup("Tiny: one query # not a comment.");
    c->rules[0] = strdup("sdpa.scale.default");
    c->nrules = 1;
    c->op = ACASE_OP_SDPA;
    int64_t s[4] = {1, 1, 1, 2};
    acase_tensor *ts[3] = {&c->q, &c->k, &c->v};
    for (int i = 0; i < 3; i++) {
        ts[i]->present = 1;
        ts[i]->dtype = ATTNREF_F16;
        ts[i]->ndim = 4;
        memcpy(ts[i]->shape, s, sizeof s);
        cr_assert_eq(acase_tensor_alloc(ts[i], NULL, 0), 0);
    }
    ((uint16_t *)c->q.data)[0] = 0x3c00;
    ((uint16_t *)c->q.data)[1] = 0x8000;
    c->k.layout = ACASE_LAYOUT_BLHD;
    c->v.source = ACASE_SRC_UNIFORM;
    c->v.seed = 7;
    c->v.lo = -1.0;
    c->v.hi = 0.1;
    cr_assert_eq(acase_tensor_generate(&c->v, NULL, 0), 0);
    c->expected.dtype = ATTNREF_F16;
    c->expected.ndim = 4;
    memcpy(c->expected.shape, s, sizeof s);
    cr_assert_eq(acase_expected_alloc(&c->expected, NULL, 0), 0);
    c->expected.values[0] = 0.5;
    c->expected.values[1] = -0.0;
    cr_assert_eq(acase_row_atol_alloc(c, NULL, 0), 0);
    c->ulps = 2.0;
    c->row_atol[0] = 1e-3;
    c->requires = acase_derive_requires(c);
    char err[256];
    int rc;
    char *text = write_to_string(c, err, sizeof err, &rc);
    cr_assert_eq(rc, 0, "%s", err);
    static const char want[] =
        "attnconf_case: 4\n"
        "id: sdpa.example.tiny\n"
        "description: \"Tiny: one query # not a comment.\"\n"
        "rules: [sdpa.scale.default]\n"
        "op: sdpa\n"
        "requires: [f16, strided]\n"
        "params: {causal: false}\n"
        "inputs:\n"
        "  q: {dtype: f16, shape: [1, 1, 1, 2], data: [0x3c00, 0x8000]}\n"
        "  k: {dtype: f16, shape: [1, 1, 1, 2], layout: blhd, data: [0x0000, 0x0000]}\n"
        "  v: {dtype: f16, shape: [1, 1, 1, 2], generate: {kind: uniform, seed: 7, lo: -1.0e+00, hi: 1.0e-01}}\n"
        "expected:\n"
        "  out: {dtype: f16, shape: [1, 1, 1, 2], data: [5.0000000000000000e-01, -0.0000000000000000e+00]}\n"
        "tolerance: {ulps: 2.0e+00, row_atol: [1.0e-03]}\n";
    cr_assert_str_eq(text, want);
    free(text);
    acase_free(c);
}

Test(casewrite, number_forms)
{
    char *text;
    acase *c = sample_case(0);
    cr_assert_not_null(c);
    acase *back = write_and_reload(c, &text);
    /* f32 specials and extremes, f64 expected values. */
    cr_assert_not_null(strstr(text, "data: [.nan, .inf, -.inf, -0.00000000e+00, 0.00000000e+00, "
                                    "1.40129846e-45, -1.40129846e-45, 1.17549435e-38, "
                                    "3.40282347e+38, -3.40282347e+38, 1.00000001e-01, "),
                       "%s", text);
    cr_assert_not_null(strstr(text, "data: [.nan, .inf, -.inf, -0.0000000000000000e+00, "
                                    "0.0000000000000000e+00, 4.9406564584124654e-324, "),
                       "%s", text);
    cr_assert_not_null(strstr(text, "layout: blhd, generate: {kind: uniform, seed: 17, lo: "
                                    "-1.0e+00, hi: 1.0e+00}"));
    cr_assert_not_null(strstr(text, "mask: {dtype: bool, shape: [3, 5], data: [0, 1, 1, 0, "));
    cr_assert_not_null(strstr(text, "params: {scale: 1.25e-01, causal: false}\n"));
    cr_assert_not_null(strstr(text, "tolerance: {ulps: 2.5e+00, row_atol: [1.0e-06, 0.0e+00, "
                                    "4.9e-324, 1.7976931348623157e+308, 3.333333333333333e-01, "
                                    "1.0e-01]}\n"),
                       "%s", text);
    cr_assert(signbit(((float *)back->q.data)[3]) && ((float *)back->q.data)[3] == 0.0f);
    cr_assert(signbit(back->expected.values[3]) && back->expected.values[3] == 0.0);
    cr_assert(isnan(((float *)back->q.data)[0]));
    free(text);
    acase_free(back);
    acase_free(c);

    c = sample_case(1);
    cr_assert_not_null(c);
    back = write_and_reload(c, &text);
    cr_assert_not_null(
        strstr(text, "data: [0x3c00, 0xbc00, 0x7e01, 0xfe00, 0x8000, 0x0001, 0x7bff, 0xfc00]"));
    cr_assert_not_null(strstr(text, "seed: 18446744073709551615, lo: -1.0e-03, hi: 1.0e-03}"));
    cr_assert_not_null(strstr(text, "params: {causal: true, causal_offset: -1}\n"));
    free(text);
    acase_free(back);
    acase_free(c);

    c = sample_case(4);
    cr_assert_not_null(c);
    back = write_and_reload(c, &text);
    cr_assert_not_null(strstr(text, "params: {lq: 3, offset: 1, window: 2, lengths: [4, 3], "
                                    "left_padding: [0, 1]}\n"),
                       "%s", text);
    cr_assert_not_null(
        strstr(text, "expected:\n  keep: {shape: [2, 1, 3, 4], data: [1, 1, 0, 0, 0, 1, 1, 0, "));
    cr_assert_null(strstr(text, "inputs"));
    cr_assert_null(strstr(text, "tolerance"));
    free(text);
    acase_free(back);
    acase_free(c);

    /* v2: sdpa window / lengths / left_padding after causal; stride0 after layout, before the
     * data (one slice) or generate; kv_len last in the mask params. */
    c = sample_case(6);
    cr_assert_not_null(c);
    back = write_and_reload(c, &text);
    cr_assert_not_null(strstr(text, "params: {causal: true, window: 2, lengths: [5, 4], "
                                    "left_padding: [0, 1]}\n"),
                       "%s", text);
    cr_assert_not_null(strstr(text, "  k: {dtype: f32, shape: [2, 2, 5, 4], stride0: [0], data: "
                                    "[-2.50000000e+00, "));
    cr_assert_not_null(strstr(text, "2.25000000e+00, 2.37500000e+00]}\n  v: "),
                       "k holds its 40-value slice, not the 80 logical values");
    cr_assert_not_null(strstr(text,
                              "  v: {dtype: f32, shape: [2, 2, 5, 3], stride0: [0, 1], "
                              "generate: {kind: uniform, seed: 62, lo: -2.0e+00, hi: 2.0e+00}}\n"));
    cr_assert_not_null(strstr(text, "tolerance: {ulps: 2.0e+00, row_atol: [3.0e-07, 1.5e-06, "
                                    "0.0e+00, 3.0e-07, "));
    cr_assert_eq(back->k.numel, 80);
    cr_assert(memcmp(back->k.data, (const float *)back->k.data + 40, 40 * sizeof(float)) == 0);
    free(text);
    acase_free(back);
    acase_free(c);

    c = sample_case(7);
    cr_assert_not_null(c);
    back = write_and_reload(c, &text);
    cr_assert_not_null(strstr(text, "params: {lq: 2, offset: 3, lengths: [4], kv_len: 8}\n"), "%s",
                       text);
    cr_assert_not_null(strstr(text, "  keep: {shape: [1, 1, 2, 8], data: [1, 1, 1, 1, 0, 0, 0, 0, "
                                    "1, 1, 1, 1, 0, 0, 0, 0]}\n"));
    free(text);
    acase_free(back);
    acase_free(c);

    c = sample_case(3);
    cr_assert_not_null(c);
    back = write_and_reload(c, &text);
    cr_assert_not_null(strstr(text, "expected:\n  error: edtype\n"), "%s", text);
    cr_assert_not_null(strstr(text, "requires: [f32, bf16, mask.bool, strided, mask.broadcast]\n"));
    free(text);
    acase_free(back);
    acase_free(c);
}

/* write -> read -> write gives the same bytes, and the read case equals the in-memory one bit
 * for bit, for every sample (together they use every feature of the format). */
Test(casewrite, roundtrip_every_sample)
{
    for (int i = 0; i < SAMPLE_COUNT; i++) {
        acase *c = sample_case(i);
        cr_assert_not_null(c);
        char *first, *second, err[256];
        acase *back = write_and_reload(c, &first);
        cr_assert_not_null(back->path);
        assert_same_case(c, back);
        int rc;
        second = write_to_string(back, err, sizeof err, &rc);
        cr_assert_eq(rc, 0, "%s", err);
        cr_assert_str_eq(first, second, "sample %d (%s) is not byte-identical", i, c->id);
        free(first);
        free(second);
        acase_free(back);
        acase_free(c);
    }
}

/* expected.row_checks: written after out, only when a row is not close, keys exact then
 * finite, an empty list omitted; it reads back to the same modes, byte-identical. */
Test(casewrite, row_checks_text_and_roundtrip)
{
    char *text, err[256];
    acase *c = sample_case(0);
    cr_assert_not_null(c);
    acase *back = write_and_reload(c, &text);
    cr_assert_not_null(strstr(text, "]}\n  row_checks: {exact: [1, 4], finite: [5]}\n"
                                    "tolerance: "),
                       "%s", text);
    cr_assert_eq(back->expected.nrows, 6);
    static const uint8_t want[6] = {0, 1, 0, 0, 1, 2};
    cr_assert(memcmp(back->expected.row_check, want, 6) == 0);
    int rc;
    char *again = write_to_string(back, err, sizeof err, &rc);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(again, text, "row_checks round trip is not byte-identical");
    free(again);
    free(text);
    acase_free(back);

    /* Only finite rows: no exact key. */
    c->expected.row_check[1] = c->expected.row_check[4] = ACASE_CHECK_CLOSE;
    back = write_and_reload(c, &text);
    cr_assert_not_null(strstr(text, "  row_checks: {finite: [5]}\n"), "%s", text);
    free(text);
    acase_free(back);

    /* Only exact rows: no finite key. */
    c->expected.row_check[0] = ACASE_CHECK_EXACT;
    c->expected.row_check[5] = ACASE_CHECK_CLOSE;
    back = write_and_reload(c, &text);
    cr_assert_not_null(strstr(text, "  row_checks: {exact: [0]}\n"), "%s", text);
    free(text);
    acase_free(back);

    /* Every row close: the same bytes as without row checks. */
    c->expected.row_check[0] = ACASE_CHECK_CLOSE;
    back = write_and_reload(c, &text);
    cr_assert_null(strstr(text, "row_checks"), "%s", text);
    cr_assert_null(back->expected.row_check);
    free(c->expected.row_check);
    c->expected.row_check = NULL;
    c->expected.nrows = 0;
    int rc2;
    char *plain = write_to_string(c, err, sizeof err, &rc2);
    cr_assert_eq(rc2, 0, "%s", err);
    cr_assert_str_eq(plain, text);
    free(plain);
    free(text);
    acase_free(back);
    acase_free(c);
}

Test(casewrite, awkward_descriptions_roundtrip)
{
    static const char *const descs[] = {
        "key: value # comment",
        "- leading dash",
        "yes",
        "1.5",
        "line one\nline two\n\nafter a blank line",
        "  leading and trailing spaces  ",
        "tab\tand \"quotes\" and \\backslash and 'single'",
        "unicode: \xc3\xa9\xe2\x86\x92\xf0\x9f\x98\x80",
        "ends with a newline\n",
    };
    for (size_t i = 0; i < sizeof descs / sizeof descs[0]; i++) {
        acase *c = sample_case(5);
        cr_assert_not_null(c);
        free(c->description);
        c->description = strdup(descs[i]);
        char *text;
        acase *back = write_and_reload(c, &text);
        cr_assert_str_eq(back->description, descs[i], "%s", text);
        free(text);
        acase_free(back);
        acase_free(c);
    }
}

Test(casewrite, rejects_invalid_case)
{
    acase *c = sample_case(0);
    cr_assert_not_null(c);
    c->requires = ATTNCONF_CAP_F32;
    char err[256];
    int rc;
    char *text = write_to_string(c, err, sizeof err, &rc);
    cr_assert_eq(rc, -1);
    cr_assert_not_null(strstr(err, "requires: missing mask.bool, gqa, dv_ne_d, strided, scale, "
                                   "mask.broadcast"),
                       "%s", err);
    free(text);
    acase_free(c);
}

/* ---- caseread ------------------------------------------------------------------------- */

static const char base_case[] =
    "attnconf_case: 4\n"                                          /* 1 */
    "id: sdpa.test.base\n"                                        /* 2 */
    "description: \"Base case.\"\n"                               /* 3 */
    "rules: [sdpa.base]\n"                                        /* 4 */
    "op: sdpa\n"                                                  /* 5 */
    "requires: [f32]\n"                                           /* 6 */
    "params: {causal: false}\n"                                   /* 7 */
    "inputs:\n"                                                   /* 8 */
    "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, 2.0]}\n"  /* 9 */
    "  k: {dtype: f32, shape: [1, 1, 1, 2], data: [0.5, -0.5]}\n" /* 10 */
    "  v: {dtype: f32, shape: [1, 1, 1, 2], generate: {kind: uniform, seed: 3, lo: -1.0, hi: 1.0}}\n"
    "expected:\n"                                                     /* 12 */
    "  out: {dtype: f32, shape: [1, 1, 1, 2], data: [0.25, -0.75]}\n" /* 13 */
    "tolerance: {ulps: 2.0, row_atol: [1.0e-06]}\n";                  /* 14 */

/* base_case with 1-based line `line` replaced by `text` (NULL: removed). */
static char *base_with(int line, const char *text)
{
    size_t cap = sizeof base_case + (text ? strlen(text) : 0) + 2;
    char *out = malloc(cap);
    cr_assert_not_null(out);
    out[0] = '\0';
    const char *p = base_case;
    for (int n = 1; *p; n++) {
        const char *nl = strchr(p, '\n');
        size_t len = (size_t)(nl - p) + 1;
        if (n == line) {
            if (text) {
                strcat(out, text);
                strcat(out, "\n");
            }
        } else {
            strncat(out, p, len);
        }
        p += len;
    }
    return out;
}

/* Loading `text` fails with an error that contains "case.yaml:" + where (e.g.
 * "9:26: inputs.q.shape: expected"), and nothing leaks into *out. */
static void expect_error(const char *text, const char *where)
{
    char err[512] = "";
    acase *c = (acase *)0x1;
    int rc = load_text(text, &c, err, sizeof err);
    cr_assert_eq(rc, -1, "loaded but expected '%s':\n%s", where, text);
    cr_assert_null(c);
    char want[256];
    snprintf(want, sizeof want, "/case.yaml:%s", where);
    /* expect, not assert: a table of error cases reports every mismatch in one run */
    cr_expect_not_null(strstr(err, want), "error:\n  %s\nwanted:\n  %s", err, want);
}

static void expect_line_error(int line, const char *replacement, const char *where)
{
    char *text = base_with(line, replacement);
    expect_error(text, where);
    free(text);
}

Test(caseread, base_case_loads)
{
    acase *c = NULL;
    char err[256];
    cr_assert_eq(load_text(base_case, &c, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(c->id, "sdpa.test.base");
    cr_assert_str_eq(c->description, "Base case.");
    cr_assert_eq(c->op, ACASE_OP_SDPA);
    cr_assert_eq(c->requires, ATTNCONF_CAP_F32);
    cr_assert_eq(((float *)c->q.data)[1], 2.0f);
    cr_assert_eq(c->v.source, ACASE_SRC_UNIFORM);
    acase_tensor g = c->v;
    g.data = NULL;
    cr_assert_eq(acase_tensor_generate(&g, NULL, 0), 0);
    cr_assert(memcmp(g.data, c->v.data, 8) == 0);
    free(g.data);
    cr_assert_eq(c->expected.values[1], -0.75);
    cr_assert_eq(c->ulps, 2.0);
    cr_assert_not_null(c->row_atol);
    cr_assert_eq(c->row_atol[0], 1e-6);
    cr_assert_eq(c->mask.present, 0);
    acase_free(c);
}

Test(caseread, accepted_spellings)
{
    /* Key order is free; explicit bhld; YAML 1.1 spellings of booleans and specials; block
     * style; an f16 decimal that is exact; f32 decimals rounded to nearest. */
    static const char text[] =
        "id: sdpa.test.spellings\n"
        "attnconf_case: 4\n"
        "rules:\n  - sdpa.base\n"
        "description: plain text is fine\n"
        "op: sdpa\n"
        "requires: [f16, causal]\n"
        "params:\n  causal: True\n"
        "inputs:\n"
        "  q: {dtype: f16, layout: bhld, shape: [1, 1, 1, 4], data: [1.0, -0.0, 6.103515625e-05, -.inf]}\n"
        "  k: {dtype: f16, shape: [1, 1, 1, 4], data: [0x3C00, 0x7e01, 0x0, 0xFFFF]}\n"
        "  v: {dtype: f16, shape: [1, 1, 1, 4], data: [+.inf, .Inf, 65504.0, 5.9604644775390625e-08]}\n"
        "expected:\n"
        "  out: {dtype: f16, shape: [1, 1, 1, 4], data: [.NaN, +.INF, 4.9406564584124654e-324, 1.]}\n"
        "tolerance: {row_atol: [0.0], ulps: 0.0}\n";
    acase *c = NULL;
    char err[256];
    cr_assert_eq(load_text(text, &c, err, sizeof err), 0, "%s", err);
    const uint16_t *q = c->q.data, *k = c->k.data, *v = c->v.data;
    cr_assert_eq(q[0], 0x3c00);
    cr_assert_eq(q[1], 0x8000);
    cr_assert_eq(q[2], 0x0400);
    cr_assert_eq(q[3], 0xfc00);
    cr_assert_eq(k[0], 0x3c00);
    cr_assert_eq(k[1], 0x7e01);
    cr_assert_eq(k[2], 0x0000);
    cr_assert_eq(k[3], 0xffff);
    cr_assert_eq(v[0], 0x7c00);
    cr_assert_eq(v[2], 0x7bff);
    cr_assert_eq(v[3], 0x0001);
    cr_assert(isnan(c->expected.values[0]));
    cr_assert(isinf(c->expected.values[1]) && c->expected.values[1] > 0);
    cr_assert_eq(c->expected.values[2], 0x1p-1074);
    cr_assert_eq(c->causal, 1);
    acase_free(c);

    /* f32 inline values are rounded to nearest: 0.1 -> 0x3dcccccd. */
    char *t =
        base_with(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [0.1, 3.4028235677973366e+38]}");
    cr_assert_eq(load_text(t, &c, err, sizeof err), 0, "%s", err);
    uint32_t b;
    memcpy(&b, c->q.data, 4);
    cr_assert_eq(b, 0x3dcccccdu);
    cr_assert_eq(((float *)c->q.data)[1], FLT_MAX); /* rounds down to FLT_MAX: no overflow */
    free(t);
    acase_free(c);
}

Test(caseread, yaml_syntax_error)
{
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, 2.0}",
                      "9:55: yaml: did not find expected ',' or ']'");
    expect_error("a: [1, 2\n", "2:1: yaml: did not find expected ',' or ']'");
    expect_error("a: b: c\n", "1:5: yaml: mapping values are not allowed in this context");
    expect_error("\t- x\n", "1:1: yaml: found character that cannot start any token");
}

Test(caseread, document_level)
{
    expect_error("", "1:1: (document): empty file");
    expect_error("# only a comment\n", "1:1: (document): empty file");
    expect_error("- 1\n- 2\n", "1:1: (document): expected a mapping (a case), got a sequence");
    expect_error("just text\n", "1:1: (document): expected a mapping (a case), got a scalar");
    char text[sizeof base_case + 16];
    snprintf(text, sizeof text, "%s---\nx: 1\n", base_case);
    expect_error(text, "16:1: (document): more than one YAML document");
}

Test(caseread, version)
{
    /* Version 1 files (atol/rtol tolerances, no v2 keys) are refused as such. */
    expect_line_error(1, "attnconf_case: 1",
                      "1:16: attnconf_case: unsupported format version 1 (this reader reads 4)");
    /* Version 2 and 3 files lack nothing version 4 needs, but are refused all the same: a
     * version is regenerated, never read as another. */
    expect_line_error(1, "attnconf_case: 2",
                      "1:16: attnconf_case: unsupported format version 2 (this reader reads 4)");
    expect_line_error(1, "attnconf_case: 3",
                      "1:16: attnconf_case: unsupported format version 3 (this reader reads 4)");
    expect_line_error(1, "attnconf_case: 5",
                      "1:16: attnconf_case: unsupported format version 5 (this reader reads 4)");
    expect_line_error(1, "attnconf_case: \"4\"",
                      "1:16: attnconf_case: expected an integer, got a "
                      "quoted string");
    expect_line_error(1, "attnconf_case: 4.0", "1:16: attnconf_case: expected a decimal integer");
    expect_line_error(1, NULL, "1:1: attnconf_case: required key missing");
    /* A future version with unknown keys is reported as a version problem. */
    char *t = base_with(1, "attnconf_case: 5\nnew_field: 3");
    expect_error(t, "1:16: attnconf_case: unsupported format version 5");
    free(t);
    /* A whole version-1 file (its v1 tolerance included): the version, not the tolerance. */
    t = base_with(1, "attnconf_case: 1");
    char *u = malloc(strlen(t) + 32);
    cr_assert_not_null(u);
    char *tol = strstr(t, "tolerance:");
    snprintf(u, strlen(t) + 32, "%.*stolerance: {atol: 1.0e-06, rtol: 0.0}\n", (int)(tol - t), t);
    expect_error(u, "1:16: attnconf_case: unsupported format version 1 (this reader reads 4)");
    free(u);
    free(t);
}

Test(caseread, unknown_duplicate_and_missing_keys)
{
    expect_line_error(5, "op: sdpa\nfrobnicate: 1", "6:1: frobnicate: unknown key");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, 2.0], foo: 1}",
                      "9:58: inputs.q.foo: unknown key");
    expect_line_error(
        11,
        "  v: {dtype: f32, shape: [1, 1, 1, 2], generate: {kind: uniform, seed: 3, lo: -1.0, hi: 1.0, hue: 2}}",
        "11:94: inputs.v.generate.hue: unknown key");
    expect_line_error(5, "op: sdpa\nop: sdpa", "6:1: op: duplicate key");
    expect_line_error(2, NULL, "1:1: id: required key missing");
    expect_line_error(9, "  q: {shape: [1, 1, 1, 2], data: [1.0, 2.0]}",
                      "9:6: inputs.q.dtype: required key missing");
    expect_line_error(9, NULL, "9:3: inputs.q: required key missing");
    expect_line_error(14, NULL, "1:1: tolerance: required key missing");
    expect_line_error(7, "params: {causal: false, kv_len: 2}", "7:25: params.kv_len: unknown key");
    expect_line_error(7, "params: {causal: false, lq: 2}", "7:25: params.lq: unknown key");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2]}",
                      "9:6: inputs.q: exactly one of data and generate is required");
}

Test(caseread, data_length_mismatch)
{
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, 2.0, 3.0]}",
                      "9:46: inputs.q.data: has 3 values, the shape needs 2");
    expect_line_error(13, "  out: {dtype: f32, shape: [1, 1, 1, 2], data: [0.25]}",
                      "13:48: expected.out.data: has 1 values, the shape needs 2");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: 1.0}",
                      "9:46: inputs.q.data: expected a sequence of values");
}

Test(caseread, shapes)
{
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, -1, 2], data: [1.0, 2.0]}",
                      "9:26: inputs.q.shape: expected a sequence of 0..4 non-negative integers "
                      "(item 2 is -1)");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2, 1], data: [1.0, 2.0]}",
                      "9:26: inputs.q.shape: expected a sequence of 0..4 non-negative integers");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, x, 2], data: [1.0, 2.0]}",
                      "9:26: inputs.q.shape: expected a sequence of 0..4 non-negative integers "
                      "(item 2 is not an integer)");
    expect_line_error(9, "  q: {dtype: f32, shape: 4, data: [1.0, 2.0]}",
                      "9:26: inputs.q.shape: expected a sequence of 0..4 non-negative integers");
    /* Too many elements (and an int64 overflow) are caught before any allocation. */
    expect_line_error(9, "  q: {dtype: f32, shape: [65536, 65536, 65536, 65536], data: []}",
                      "9:26: inputs.q.shape: more than 16777216 elements");
    expect_line_error(9, "  q: {dtype: f32, shape: [9223372036854775807, 2, 1, 1], data: []}",
                      "9:26: inputs.q.shape: more than 16777216 elements");
    expect_line_error(9, "  q: {dtype: f32, shape: [99999999999999999999, 1, 1, 1], data: []}",
                      "9:26: inputs.q.shape: expected a sequence of 0..4 non-negative integers "
                      "(item 0 is out of range)");
    expect_line_error(
        9,
        "  q: {dtype: f32, shape: [4097, 4097], generate: {kind: uniform, seed: 1, lo: 0.0, hi: 1.0}}",
        "9:26: inputs.q.shape: more than 16777216 elements");
    expect_line_error(13, "  out: {dtype: f32, shape: [1, 1, 1, 1], data: [0.25]}",
                      "13:28: expected.out.shape: must be (B, Hq, Lq, Dv) = [1, 1, 1, 2]");
    expect_line_error(9, "  q: {dtype: f32, shape: [2, 1], layout: blhd, data: [1.0, 2.0]}",
                      "9:42: inputs.q.layout: blhd needs a rank-4 tensor");
}

/* The per-file budget (ACASE_MAX_CASE_NUMEL): tensors that are each well within the per-tensor
 * limit but together exceed the budget are refused, before allocation, at the field where the
 * running total ran out; a case exactly at the budget loads. */
Test(caseread, case_numel_budget)
{
    /* q (2) + k (2L) + v (2L) + expected.out (2) = 4L + 4 elements. */
    const int64_t at = ACASE_MAX_CASE_NUMEL / 4 - 1;
    cr_assert_eq(4 * at + 4, ACASE_MAX_CASE_NUMEL);
    cr_assert_lt(2 * (at + 1), ACASE_MAX_TENSOR_NUMEL, "each tensor within the per-tensor limit");
    for (int over = 0; over < 2; over++) {
        int64_t L = at + over;
        char k[160], v[160];
        snprintf(k, sizeof k,
                 "  k: {dtype: f32, shape: [1, 1, %lld, 2], generate: {kind: "
                 "uniform, seed: 1, lo: -1.0, hi: 1.0}}",
                 (long long)L);
        snprintf(v, sizeof v,
                 "  v: {dtype: f32, shape: [1, 1, %lld, 2], generate: {kind: "
                 "uniform, seed: 2, lo: -1.0, hi: 1.0}}",
                 (long long)L);
        char *t1 = base_with(10, k);
        size_t cap = strlen(t1) + strlen(v) + 2;
        char *text = malloc(cap);
        cr_assert_not_null(text);
        /* base_with works on base_case only: splice line 11 by hand. */
        const char *l11 = t1;
        for (int n = 1; n < 11; n++)
            l11 = strchr(l11, '\n') + 1;
        snprintf(text, cap, "%.*s%s\n%s", (int)(l11 - t1), t1, v, strchr(l11, '\n') + 1);
        free(t1);
        if (!over) {
            acase *c = NULL;
            char err[512] = "";
            cr_assert_eq(load_text(text, &c, err, sizeof err), 0, "%s", err);
            cr_assert_eq(c->k.numel + c->v.numel + c->q.numel + c->expected.numel,
                         ACASE_MAX_CASE_NUMEL);
            acase_free(c);
        } else {
            char want[200];
            snprintf(want, sizeof want,
                     "11:26: inputs.v.shape: the case's tensors exceed %lld "
                     "elements in total (ACASE_MAX_CASE_NUMEL",
                     (long long)ACASE_MAX_CASE_NUMEL);
            expect_error(text, want);
        }
        free(text);
    }
}

Test(caseread, dtypes_and_values)
{
    expect_line_error(9, "  q: {dtype: f8, shape: [1, 1, 1, 2], data: [1.0, 2.0]}",
                      "9:14: inputs.q.dtype: unknown dtype 'f8'");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, abc]}",
                      "9:52: inputs.q.data[1]: expected a float");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, 2]}",
                      "9:52: inputs.q.data[1]: expected a float");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, 1e5]}",
                      "9:52: inputs.q.data[1]: expected a float");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, 1.0e5]}",
                      "9:52: inputs.q.data[1]: expected a float");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, \"2.0\"]}",
                      "9:52: inputs.q.data[1]: expected a float, got a quoted string");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, [2.0]]}",
                      "9:52: inputs.q.data[1]: expected a float, got a sequence");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, -.nan]}",
                      "9:52: inputs.q.data[1]: expected a float");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, 1.0e+39]}",
                      "9:52: inputs.q.data[1]: '1.0e+39' overflows f32 (write .inf)");
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, !!float 2.0]}",
                      "9:52: inputs.q.data[1]: explicit YAML tags are not allowed");
    expect_line_error(13, "  out: {dtype: f32, shape: [1, 1, 1, 2], data: [0.25, 1.0e+309]}",
                      "13:55: expected.out.data[1]: '1.0e+309' overflows binary64");
    expect_line_error(13, "  out: {dtype: bool, shape: [1, 1, 1, 2], data: [0.25, 1.0]}",
                      "13:16: expected.out.dtype: must be f32, f16 or bf16");
    /* f16 / bf16: bit patterns of at most 4 hex digits, or exact decimals. */
    static const char f16[] = "  q: {dtype: f16, shape: [1, 1, 1, 2], data: [0x3c00, %s]}\n"
                              "  k: {dtype: f16, shape: [1, 1, 1, 2], data: [0x3c00, 0x3c00]}\n"
                              "  v: {dtype: f16, shape: [1, 1, 1, 2], data: [0x3c00, 0x3c00]}";
    static const struct {
        const char *value, *where;
    } bad16[] = {
        {"0x10000", "9:55: inputs.q.data[1]: expected a bit pattern 0x0000..0xffff"},
        {"0x", "9:55: inputs.q.data[1]: expected a bit pattern"},
        {"15360", "9:55: inputs.q.data[1]: expected a bit pattern"},
        {"0.1", "9:55: inputs.q.data[1]: 0.1 is not exactly representable in f16"},
        {"65520.0", "9:55: inputs.q.data[1]: 65520.0 is not exactly representable in f16"},
        {".nan", "9:55: inputs.q.data[1]: expected a bit pattern"},
        {"\"0x3c00\"", "9:55: inputs.q.data[1]: expected a 0x0000..0xffff bit pattern, got a "
                       "quoted string"},
    };
    for (size_t i = 0; i < sizeof bad16 / sizeof bad16[0]; i++) {
        char lines[512];
        snprintf(lines, sizeof lines, f16, bad16[i].value);
        char *t = base_with(9, lines);
        char *k = strstr(t, "  k: {dtype: f32");
        cr_assert_not_null(k);
        /* drop the base k and v lines (now lines 12 and 13) */
        char *after = strstr(k, "expected:");
        memmove(k, after, strlen(after) + 1);
        char *req = strstr(t, "requires: [f32]");
        memcpy(req, "requires: [f16]", 15);
        expect_error(t, bad16[i].where);
        free(t);
    }
    expect_line_error(9, "  q: {dtype: bool, shape: [1, 1, 1, 2], data: [1, 256]}",
                      "9:51: inputs.q.data[1]: expected a byte 0..255, got '256'");
    expect_line_error(9, "  q: {dtype: bool, shape: [1, 1, 1, 2], data: [1, 07]}",
                      "9:51: inputs.q.data[1]: expected a byte 0..255, got '07'");
}

Test(caseread, scalars_and_strings)
{
    expect_line_error(7, "params: {causal: yes}",
                      "7:18: params.causal: expected true or false, "
                      "got 'yes'");
    expect_line_error(7, "params: {causal: 1}", "7:18: params.causal: expected true or false");
    expect_line_error(4, "rules: [yes]",
                      "4:9: rules[0]: expected a string; YAML reads 'yes' as "
                      "a boolean (quote it)");
    expect_line_error(4, "rules: [Sdpa.Base]", "4:9: rules[0]: expected [a-z0-9_]+ components");
    expect_line_error(4, "rules: []", "4:8: rules: expected 1..16 rule ids, got 0");
    expect_line_error(4, "rules: [a.b, a.b]", "4:14: rules[1]: duplicate rule 'a.b'");
    expect_line_error(2, "id: sdpa.base",
                      "2:5: id: expected [a-z0-9_]+ components joined by '.', "
                      "at least 3");
    expect_line_error(2, "id: 2024-01-01",
                      "2:5: id: expected a string; YAML reads '2024-01-01' "
                      "as a timestamp or special value (quote it)");
    expect_line_error(3, "description:",
                      "3:13: description: expected a string; YAML reads '' as "
                      "a null (quote it)");
    expect_line_error(3, "description: \"\"", "3:14: description: expected a non-empty string");
    expect_line_error(3, "description: [a]",
                      "3:14: description: expected a string, got a sequence");
    expect_line_error(5, "op: attention", "5:5: op: unknown op 'attention'");
    expect_line_error(6, "requires: [f32, f64]", "6:17: requires[1]: unknown capability 'f64'");
    expect_line_error(6, "requires: [f32, f32]", "6:17: requires[1]: duplicate capability 'f32'");
    expect_line_error(6, "requires: f32",
                      "6:11: requires: expected a sequence of capability names");
    expect_line_error(14, "tolerance: {ulps: 2, row_atol: [1.0e-06]}",
                      "14:19: tolerance.ulps: expected a float such as 1.5e-03");
    expect_line_error(
        11,
        "  v: {dtype: f32, shape: [1, 1, 1, 2], generate: {kind: uniform, seed: -3, lo: -1.0, hi: 1.0}}",
        "11:72: inputs.v.generate.seed: expected a non-negative decimal integer");
    expect_line_error(
        11,
        "  v: {dtype: f32, shape: [1, 1, 1, 2], generate: {kind: uniform, seed: 18446744073709551616, lo: -1.0, hi: 1.0}}",
        "11:72: inputs.v.generate.seed: integer '18446744073709551616' out of range");
    expect_line_error(
        11,
        "  v: {dtype: f32, shape: [1, 1, 1, 2], generate: {kind: normal, seed: 3, lo: -1.0, hi: 1.0}}",
        "11:57: inputs.v.generate.kind: unknown generator 'normal'");
    expect_line_error(
        11,
        "  v: {dtype: f32, shape: [1, 1, 1, 2], generate: {kind: uniform, seed: 3, lo: 1.0, hi: -1.0}}",
        "11:50: inputs.v.generate: need finite lo <= hi");
    expect_line_error(
        11,
        "  v: {dtype: f32, shape: [1, 1, 1, 2], generate: {kind: uniform, seed: 010, lo: -1.0, hi: 1.0}}",
        "11:72: inputs.v.generate.seed: expected a non-negative decimal integer, "
        "got '010'");
}

Test(caseread, semantic_rules)
{
    expect_line_error(6, "requires: [f16]",
                      "6:11: requires: missing f32 (implied by the case "
                      "content)");
    expect_line_error(7, "params: {causal: false, causal_offset: 0}",
                      "7:40: params.causal_offset: only allowed with causal: true");
    char *t = base_with(11, "  v: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, 2.0]}\n"
                            "  mask: {dtype: bool, shape: [1, 1], data: [1]}");
    char *p = strstr(t, "params: {causal: false}");
    memcpy(p, "params: {causal: true} ", 23);
    p = strstr(t, "requires: [f32]");
    cr_assert_not_null(p);
    char *fixed = malloc(strlen(t) + 64);
    cr_assert_not_null(fixed);
    snprintf(fixed, strlen(t) + 64, "%.*srequires: [f32, mask.bool, causal, mask.broadcast]%s",
             (int)(p - t), t, p + strlen("requires: [f32]"));
    expect_error(fixed, "7:18: params.causal: causal together with a mask tensor must be an error "
                        "case");
    free(fixed);
    free(t);
    expect_line_error(9, "  q: {dtype: f32, shape: [1, 1, 2], data: [1.0, 2.0]}",
                      "9:3: inputs: q, k and v must have rank 4 unless expected is an error");
}

Test(caseread, expected_and_tolerance)
{
    /* An error case carries no tolerance. */
    char *t = base_with(13, "  error: einval");
    expect_error(t, "14:12: tolerance: only allowed with expected.out");
    free(t);
    t = base_with(13, "  error: eperm");
    expect_error(t, "13:10: expected.error: unknown error 'eperm'");
    free(t);
    t = base_with(13,
                  "  error: einval\n  out: {dtype: f32, shape: [1, 1, 1, 2], data: [0.25, -0.75]}");
    expect_error(t, "13:3: expected: exactly one of out, keep and error is required");
    free(t);
    t = base_with(13, "  keep: {shape: [1, 1, 1, 2], data: [0, 1]}");
    expect_error(t, "13:9: expected.keep: only for op mask");
    free(t);
    /* A loadable error case. */
    t = base_with(13, "  error: edtype");
    char *tol = strstr(t, "tolerance:");
    *tol = '\0';
    acase *c = NULL;
    char err[256];
    cr_assert_eq(load_text(t, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c->expected.error, ATTNREF_EDTYPE);
    acase_free(c);
    free(t);
}

static const char mask_case[] =
    "attnconf_case: 4\n"
    "id: mask.test.base\n"
    "description: \"Mask.\"\n"
    "rules: [mask.causal]\n"
    "op: mask\n"
    "requires: [build_mask, lengths, left_padding]\n"
    "params: {lq: 1, offset: 1, lengths: [2, 1], left_padding: [0, 1]}\n"
    "expected:\n"
    "  keep: {shape: [2, 1, 1, 2], data: [1, 1, 1, 0]}\n";

static char *mask_with(const char *from, const char *to)
{
    const char *at = strstr(mask_case, from);
    cr_assert_not_null(at);
    size_t n = sizeof mask_case + strlen(to);
    char *out = malloc(n);
    cr_assert_not_null(out);
    snprintf(out, n, "%.*s%s%s", (int)(at - mask_case), mask_case, to, at + strlen(from));
    return out;
}

Test(caseread, mask_op)
{
    acase *c = NULL;
    char err[256];
    cr_assert_eq(load_text(mask_case, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c->op, ACASE_OP_MASK);
    cr_assert_eq(c->batch, 2);
    cr_assert_eq(c->lengths[1], 1);
    cr_assert_eq(c->left_padding[1], 1);
    cr_assert_eq(c->expected.dtype, ATTNREF_BOOL);
    cr_assert_eq(c->expected.values[3], 0.0);
    acase_free(c);

    static const struct {
        const char *from, *to, *where;
    } bad[] = {
        {"left_padding: [0, 1]", "left_padding: [0, 1, 2]",
         "7:59: params.left_padding: has 3 entries, lengths has 2"},
        {"[2, 1, 1, 2]", "[2, 1, 2, 1]",
         "9:17: expected.keep.shape: must be (B, 1, lq, offset + lq)"},
        {"[1, 1, 1, 0]", "[1, 1, 1, 2]", "9:47: expected.keep.data[3]: expected 0 or 1, got '2'"},
        {"requires: [build_mask, lengths, left_padding]", "requires: [build_mask, lengths]",
         "6:11: requires: missing left_padding"},
        {"op: mask\n", "op: mask\ninputs: {}\n", "6:9: inputs: not allowed for op mask"},
        {"expected:\n", "tolerance: {ulps: 0.0, row_atol: [0.0]}\nexpected:\n",
         "8:12: tolerance: only allowed with expected.out"},
        {"  keep:", "  out:", "9:8: expected.out: only for op sdpa"},
        {"lq: 1,", "lq: -1,", "7:14: params.lq: must be >= 0 unless expected is an error"},
        {"lengths: [2, 1]", "lengths: []",
         "7:37: params.lengths: expected 1..4096 integers, got 0"},
        {"offset: 1", "offset: 1.0", "7:25: params.offset: expected a decimal integer, got '1.0'"},
        {"params: {lq: 1, ", "params: {", "7:9: params.lq: required key missing"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *t = mask_with(bad[i].from, bad[i].to);
        expect_error(t, bad[i].where);
        free(t);
    }

    /* More than ACASE_MAX_BATCH lengths. */
    size_t cap = 8 * (ACASE_MAX_BATCH + 1) + 64;
    char *many = malloc(cap);
    cr_assert_not_null(many);
    strcpy(many, "lengths: [");
    for (int i = 0; i <= ACASE_MAX_BATCH; i++)
        strcat(many, i ? ", 1" : "1");
    strcat(many, "]");
    char *t = mask_with("lengths: [2, 1]", many);
    expect_error(t, "7:37: params.lengths: expected 1..4096 integers, got 4097");
    free(t);
    free(many);
}

Test(caseread, missing_file)
{
    acase *c = NULL;
    char err[256];
    cr_assert_eq(acase_load_file("/nonexistent/dir/x.yaml", &c, err, sizeof err), -1);
    cr_assert_null(c);
    cr_assert_str_eq(err, "/nonexistent/dir/x.yaml: No such file or directory");
    /* A NULL or zero-length error buffer is fine. */
    cr_assert_eq(acase_load_file("/nonexistent/dir/x.yaml", &c, NULL, 0), -1);
    cr_assert_eq(load_text("x: [", &c, NULL, 0), -1);
}

/* ---- caseread: expected.row_checks ---------------------------------------------------- */

/* Canonical: write(read(rows_case)) is rows_case, byte for byte.  Output (1, 1, 4, 2): 4 rows. */
static const char rows_case[] =
    "attnconf_case: 4\n"               /* 1 */
    "id: sdpa.test.rows\n"             /* 2 */
    "description: \"Row checks.\"\n"   /* 3 */
    "rules: [fully_masked_row.zero]\n" /* 4 */
    "op: sdpa\n"                       /* 5 */
    "requires: [f32]\n"                /* 6 */
    "params: {causal: false}\n"        /* 7 */
    "inputs:\n"                        /* 8 */
    "  q: {dtype: f32, shape: [1, 1, 4, 2], generate: {kind: uniform, seed: 1, lo: -1.0e+00, hi: 1.0e+00}}\n"
    "  k: {dtype: f32, shape: [1, 1, 3, 2], generate: {kind: uniform, seed: 2, lo: -1.0e+00, hi: 1.0e+00}}\n"
    "  v: {dtype: f32, shape: [1, 1, 3, 2], generate: {kind: uniform, seed: 3, lo: -1.0e+00, hi: 1.0e+00}}\n"
    "expected:\n" /* 12 */
    "  out: {dtype: f32, shape: [1, 1, 4, 2], data: [2.5000000000000000e-01, "
    "-7.5000000000000000e-01, 0.0000000000000000e+00, 0.0000000000000000e+00, "
    "5.0000000000000000e-01, .nan, 1.0000000000000000e+00, .inf]}\n"                /* 13 */
    "  row_checks: {exact: [1], finite: [2, 3]}\n"                                  /* 14 */
    "tolerance: {ulps: 1.0e+00, row_atol: [1.0e-06, 0.0e+00, 2.5e-01, 0.0e+00]}\n"; /* 15 */

/* `base` with 1-based line `line` replaced by `text` (NULL: removed). */
static char *lines_with(const char *base, int line, const char *text)
{
    size_t cap = strlen(base) + (text ? strlen(text) : 0) + 2;
    char *out = malloc(cap);
    cr_assert_not_null(out);
    out[0] = '\0';
    const char *p = base;
    for (int n = 1; *p; n++) {
        const char *nl = strchr(p, '\n');
        size_t len = (size_t)(nl - p) + 1;
        if (n == line) {
            if (text) {
                strcat(out, text);
                strcat(out, "\n");
            }
        } else {
            strncat(out, p, len);
        }
        p += len;
    }
    return out;
}

Test(caseread, row_checks_load_and_roundtrip)
{
    acase *c = NULL;
    char err[256];
    cr_assert_eq(load_text(rows_case, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c->expected.nrows, 4);
    static const uint8_t want[4] = {ACASE_CHECK_CLOSE, ACASE_CHECK_EXACT, ACASE_CHECK_FINITE,
                                    ACASE_CHECK_FINITE};
    cr_assert(memcmp(c->expected.row_check, want, 4) == 0);
    int rc;
    char *text = write_to_string(c, err, sizeof err, &rc);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(text, rows_case);
    free(text);
    acase_free(c);
}

Test(caseread, row_checks_accepted_spellings)
{
    /* Key order is free (in expected and in row_checks); an empty list may be given; block
     * style. */
    static const struct {
        int line;
        const char *text;
        uint8_t want[4];
    } ok[] = {
        {14, "  row_checks: {finite: [2, 3], exact: [1]}", {0, 1, 2, 2}},
        {14, "  row_checks: {exact: [], finite: [0]}", {2, 0, 0, 0}},
        {14, "  row_checks: {exact: [0, 1, 2, 3]}", {1, 1, 1, 1}},
        {14, "  row_checks:\n    exact:\n      - 3", {0, 0, 0, 1}},
        {14, NULL, {0, 0, 0, 0}},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char *t = lines_with(rows_case, ok[i].line, ok[i].text);
        acase *c = NULL;
        char err[256];
        cr_assert_eq(load_text(t, &c, err, sizeof err), 0, "%zu: %s", i, err);
        for (int r = 0; r < 4; r++)
            cr_assert_eq(c->expected.row_check ? c->expected.row_check[r] : 0, ok[i].want[r],
                         "variant %zu row %d", i, r);
        if (!ok[i].text)
            cr_assert_null(c->expected.row_check);
        acase_free(c);
        free(t);
    }
    /* row_checks before out. */
    const char *out = strstr(rows_case, "  out:");
    const char *rcl = strstr(rows_case, "  row_checks:");
    const char *tol = strstr(rows_case, "tolerance:");
    size_t head = (size_t)(out - rows_case), rcn = (size_t)(tol - rcl), outn = (size_t)(rcl - out);
    char *t = malloc(sizeof rows_case);
    cr_assert_not_null(t);
    memcpy(t, rows_case, head);
    memcpy(t + head, rcl, rcn);
    memcpy(t + head + rcn, out, outn);
    strcpy(t + head + rcn + outn, tol);
    acase *c = NULL;
    char err[256];
    cr_assert_eq(load_text(t, &c, err, sizeof err), 0, "%s\n%s", err, t);
    cr_assert_eq(c->expected.row_check[1], ACASE_CHECK_EXACT);
    acase_free(c);
    free(t);
}

Test(caseread, row_checks_malformed)
{
    static const struct {
        const char *text, *where;
    } bad[] = {
        {"  row_checks: {exact: [1], fuzzy: [2]}", "14:28: expected.row_checks.fuzzy: unknown key"},
        {"  row_checks: {exact: [1], exact: [2]}",
         "14:28: expected.row_checks.exact: duplicate key"},
        {"  row_checks: {}",
         "14:15: expected.row_checks: expected at least one of exact and finite"},
        {"  row_checks: [1]", "14:15: expected.row_checks: expected a mapping, got a sequence"},
        {"  row_checks: {exact: 1}",
         "14:23: expected.row_checks.exact: expected a sequence of row indices"},
        {"  row_checks: {exact: [2, 1]}",
         "14:27: expected.row_checks.exact[1]: row 1 does not follow 2: indices must be strictly "
         "increasing"},
        {"  row_checks: {finite: [0, 2, 2]}",
         "14:31: expected.row_checks.finite[2]: row 2 does not follow 2"},
        {"  row_checks: {finite: [4]}",
         "14:25: expected.row_checks.finite[0]: row 4 is out of range 0..3 (B*Hq*Lq = 4 rows)"},
        {"  row_checks: {exact: [-1]}",
         "14:24: expected.row_checks.exact[0]: row -1 is out of range 0..3"},
        {"  row_checks: {exact: [1, 2], finite: [2]}",
         "14:40: expected.row_checks.finite[0]: row 2 is also listed in exact"},
        {"  row_checks: {finite: [2], exact: [0, 2]}",
         "14:25: expected.row_checks.finite[0]: row 2 is also listed in exact"},
        {"  row_checks: {exact: [1.0]}",
         "14:24: expected.row_checks.exact[0]: expected a decimal integer, got '1.0'"},
        {"  row_checks: {exact: [\"1\"]}",
         "14:24: expected.row_checks.exact[0]: expected an integer, got a quoted string"},
        {"  row_checks: {exact: [01]}",
         "14:24: expected.row_checks.exact[0]: expected a decimal integer, got '01'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *t = lines_with(rows_case, 14, bad[i].text);
        expect_error(t, bad[i].where);
        free(t);
    }
    /* The output shape decides the row count: (1, 1, 2, 4) has 2 rows. */
    char *t = lines_with(rows_case, 13,
                         "  out: {dtype: f32, shape: [1, 1, 2, 4], data: [0.0, 0.0, "
                         "0.0, 0.0, 0.0, 0.0, 0.0, 0.0]}");
    expect_error(t, "14:37: expected.row_checks.finite[0]: row 2 is out of range 0..1");
    free(t);
}

Test(caseread, row_checks_only_with_expected_out)
{
    /* A rejection case (no tolerance). */
    char *t = lines_with(rows_case, 15, NULL);
    char *u = lines_with(t, 13, "  error: einval");
    expect_error(u, "14:15: expected.row_checks: only allowed with expected.out (op sdpa), not "
                    "with expected.error");
    free(u);
    free(t);
    /* A mask case. */
    size_t n = sizeof mask_case + 64;
    t = malloc(n);
    cr_assert_not_null(t);
    snprintf(t, n, "%s  row_checks: {exact: [0]}\n", mask_case);
    expect_error(t, "10:15: expected.row_checks: only allowed with expected.out (op sdpa), not "
                    "with expected.keep");
    free(t);
}

/* ---- caseread: bounded parsing (ACASE_MAX_DEPTH / _NODES / _SCALAR_BYTES) -------------- */

/* Each test is refused while libyaml streams the file, before a tree is built; the timeout
 * only bounds the test (unbounded, 400 KB of '[' took minutes). */

static char *repeat(const char *head, const char *unit, size_t n, const char *tail)
{
    size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
    char *s = malloc(hl + ul * n + tl + 1);
    cr_assert_not_null(s);
    memcpy(s, head, hl);
    for (size_t i = 0; i < n; i++)
        memcpy(s + hl + i * ul, unit, ul);
    memcpy(s + hl + n * ul, tail, tl + 1);
    return s;
}

/* The load fails, and not because of any of the stream limits. */
static void expect_error_not_limit(const char *text)
{
    char err[512] = "";
    acase *c = NULL;
    cr_assert_eq(load_text(text, &c, err, sizeof err), -1);
    cr_assert_null(strstr(err, "ACASE_MAX"), "%s", err);
}

Test(caseread, deep_flow_nesting_refused, .timeout = 20)
{
    char *t = repeat("a: ", "[", 400000, "");
    expect_error(t, "1:67: yaml: nesting deeper than 64 levels (ACASE_MAX_DEPTH)");
    free(t);
    t = repeat("a: ", "{a: ", 100000, "");
    expect_error(t, "1:256: yaml: nesting deeper than 64 levels (ACASE_MAX_DEPTH)");
    free(t);
    /* 64 levels (the root mapping and 63 sequences) are within the limit. */
    t = repeat("a: ", "[", 63, "");
    expect_error_not_limit(t);
    free(t);
}

Test(caseread, deep_block_nesting_refused, .timeout = 20)
{
    size_t n = 3000, len = 0;
    char *t = malloc(n * (n + 3) / 2 + n * 3 + 1);
    cr_assert_not_null(t);
    for (size_t i = 0; i < n; i++) {
        memset(t + len, ' ', i);
        len += i;
        memcpy(t + len, "- \n", 3);
        len += 3;
    }
    t[len] = '\0';
    expect_error(t, "65:65: yaml: nesting deeper than 64 levels (ACASE_MAX_DEPTH)");
    free(t);
}

Test(caseread, too_many_nodes_refused, .timeout = 20)
{
    /* mapping, key, sequence, then scalars: node ACASE_MAX_NODES + 1 is scalar number
     * ACASE_MAX_NODES - 3 (0-based), at column 5 + 2 * that. */
    char *t = repeat("a: [", "0,", (size_t)ACASE_MAX_NODES, "0]\n");
    char where[128];
    snprintf(where, sizeof where, "1:%lld: yaml: more than %lld YAML nodes (ACASE_MAX_NODES)",
             5 + 2 * ((long long)ACASE_MAX_NODES - 3), (long long)ACASE_MAX_NODES);
    expect_error(t, where);
    free(t);
    /* Exactly ACASE_MAX_NODES nodes are within the limit. */
    t = repeat("a: [", "0,", (size_t)ACASE_MAX_NODES - 4, "0]\n");
    expect_error_not_limit(t);
    free(t);
}

Test(caseread, huge_scalar_refused, .timeout = 20)
{
    char *t = repeat("a: \"", "x", (size_t)ACASE_MAX_SCALAR_BYTES + 1, "\"\n");
    expect_error(t, "1:4: yaml: scalar of 65537 bytes, over the limit of 65536 "
                    "(ACASE_MAX_SCALAR_BYTES)");
    free(t);
    t = repeat("a: ", "x", 15u << 20, "\n"); /* a plain one near the file limit */
    expect_error(t, "1:4: yaml: scalar of 15728640 bytes, over the limit of 65536");
    free(t);
    t = repeat("a: \"", "x", (size_t)ACASE_MAX_SCALAR_BYTES, "\"\n");
    expect_error_not_limit(t);
    free(t);
}

Test(caseread, anchors_and_aliases_refused)
{
    expect_error("a: &x [*x]\n", "1:4: yaml: anchors (&name) are not allowed");
    expect_error("a: [1]\nb: *x\n", "2:4: yaml: aliases (*name) are not allowed");
    char *t = base_with(3, "description: &d \"Base case.\"");
    expect_error(t, "3:14: yaml: anchors (&name) are not allowed");
    free(t);
}

Test(caseread, load_mem)
{
    acase *c = NULL;
    char err[512] = "";
    cr_assert_eq(acase_load_mem("mem.yaml", base_case, strlen(base_case), &c, err, sizeof err), 0,
                 "%s", err);
    cr_assert_str_eq(c->path, "mem.yaml");
    cr_assert_str_eq(c->id, "sdpa.test.base");
    acase_free(c);
    cr_assert_eq(acase_load_mem("mem.yaml", NULL, 0, &c, err, sizeof err), -1);
    cr_assert_str_eq(err, "mem.yaml:1:1: (document): empty file, expected a case mapping");
    cr_assert_eq(acase_load_mem("mem.yaml", "a: [", 4, &c, NULL, 0), -1);
    cr_assert_null(c);
    cr_assert_eq(acase_load_mem(NULL, "a", 1, &c, err, sizeof err), -1);
    cr_assert_eq(acase_load_mem("big", "", (size_t)ACASE_MAX_FILE_BYTES + 1, &c, err, sizeof err),
                 -1);
    cr_assert_not_null(strstr(err, "over the 16777216-byte limit"), "%s", err);
}

/* ---- caseread / casewrite: the keys new in format v2 ------------------------------------ */

/* Canonical: write(read(v2_case)) is v2_case, byte for byte.  Output (2, 2, 2, 2): 8 rows.
 * k is stored as its batch-0 slice (2, 3, 2) = 12 values, v as one (3, 2) slice. */
static const char v2_case[] =
    "attnconf_case: 4\n"                                                               /* 1 */
    "id: sdpa.test.v2\n"                                                               /* 2 */
    "description: \"Format v2 keys.\"\n"                                               /* 3 */
    "rules: [sdpa.window]\n"                                                           /* 4 */
    "op: sdpa\n"                                                                       /* 5 */
    "requires: [f32, causal, sdpa.window, sdpa.lengths, sdpa.left_padding, stride0]\n" /* 6 */
    "params: {causal: true, window: 2, lengths: [3, 2], left_padding: [0, 1]}\n"       /* 7 */
    "inputs:\n"                                                                        /* 8 */
    "  q: {dtype: f32, shape: [2, 2, 2, 2], generate: {kind: uniform, seed: 1, lo: -1.0e+00, hi: 1.0e+00}}\n"
    "  k: {dtype: f32, shape: [2, 2, 3, 2], stride0: [0], data: [1.00000000e+00, 2.00000000e+00, "
    "3.00000000e+00, 4.00000000e+00, 5.00000000e+00, 6.00000000e+00, 7.00000000e+00, "
    "8.00000000e+00, 9.00000000e+00, 1.00000000e+01, 1.10000000e+01, 1.20000000e+01]}\n" /* 10 */
    "  v: {dtype: f32, shape: [2, 2, 3, 2], stride0: [0, 1], generate: {kind: uniform, seed: 3, lo: -1.0e+00, hi: 1.0e+00}}\n"
    "expected:\n" /* 12 */
    "  out: {dtype: f32, shape: [2, 2, 2, 2], data: [2.5000000000000000e-01, "
    "5.0000000000000000e-01, 7.5000000000000000e-01, 1.0000000000000000e+00, "
    "2.5000000000000000e-01, 5.0000000000000000e-01, 7.5000000000000000e-01, "
    "1.0000000000000000e+00, 2.5000000000000000e-01, 5.0000000000000000e-01, "
    "7.5000000000000000e-01, 1.0000000000000000e+00, 2.5000000000000000e-01, "
    "5.0000000000000000e-01, 7.5000000000000000e-01, 1.0000000000000000e+00]}\n" /* 13 */
    "tolerance: {ulps: 2.0e+00, row_atol: [1.0e-06, 0.0e+00, 2.5e-01, 1.0e-06, 1.0e-06, "
    "1.0e-06, 1.0e-06, 1.0e-06]}\n"; /* 14 */

static void expect_v2_line_error(int line, const char *text, const char *where)
{
    char *t = lines_with(v2_case, line, text);
    expect_error(t, where);
    free(t);
}

Test(caseread, v2_keys_load_and_roundtrip)
{
    acase *c = NULL;
    char err[256];
    cr_assert_eq(load_text(v2_case, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c->window, 2);
    cr_assert_eq(c->batch, 2);
    cr_assert_eq(c->lengths[0], 3);
    cr_assert_eq(c->lengths[1], 2);
    cr_assert_eq(c->left_padding[0], 0);
    cr_assert_eq(c->left_padding[1], 1);
    cr_assert_eq(c->ulps, 2.0);
    static const double ra[8] = {1e-6, 0.0, 0.25, 1e-6, 1e-6, 1e-6, 1e-6, 1e-6};
    for (int r = 0; r < 8; r++)
        cr_assert_eq(c->row_atol[r], ra[r], "row_atol[%d]", r);
    /* stride0: the logical tensor is materialised, the slice repeated along the dims. */
    cr_assert_eq(c->k.stride0, 1u);
    cr_assert_eq(c->v.stride0, 3u);
    cr_assert_eq(c->q.stride0, 0u);
    static const int64_t logical[4] = {2, 2, 3, 2};
    for (int d = 0; d < 4; d++) {
        cr_assert_eq(c->k.shape[d], logical[d], "k.shape[%d]", d);
        cr_assert_eq(c->v.shape[d], logical[d], "v.shape[%d]", d);
    }
    cr_assert_eq(c->k.numel, 24);
    cr_assert_eq(c->v.numel, 24);
    const float *k = c->k.data, *v = c->v.data;
    for (int i = 0; i < 12; i++) {
        cr_assert_eq(k[i], (float)(i + 1), "k batch 0 [%d]", i);
        cr_assert_eq(k[12 + i], (float)(i + 1), "k batch 1 [%d]", i);
    }
    /* v: one generated (3, 2) slice (seed 3), the same in all four (b, h). */
    acase_tensor slice;
    memset(&slice, 0, sizeof slice);
    slice.present = 1;
    slice.dtype = ATTNREF_F32;
    slice.ndim = 1;
    slice.shape[0] = 6;
    slice.seed = 3;
    slice.lo = -1.0;
    slice.hi = 1.0;
    cr_assert_eq(acase_tensor_generate(&slice, NULL, 0), 0);
    for (int bh = 0; bh < 4; bh++)
        cr_assert(memcmp(v + 6 * bh, slice.data, 6 * sizeof(float)) == 0, "v slice %d", bh);
    free(slice.data);
    cr_assert_eq(acase_derive_requires(c),
                 ATTNCONF_CAP_F32 | ATTNCONF_CAP_CAUSAL | ATTNCONF_CAP_SDPA_WINDOW |
                     ATTNCONF_CAP_SDPA_LENGTHS | ATTNCONF_CAP_SDPA_LEFT_PAD | ATTNCONF_CAP_STRIDE0);
    int rc;
    char *text = write_to_string(c, err, sizeof err, &rc);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(text, v2_case);
    free(text);
    acase_free(c);
}

Test(caseread, v2_stride0_each_form_roundtrips)
{
    /* [1] on k with data: the slice is (2, 1, 3, 2) = 12 values; the heads are repeated. */
    char *t =
        lines_with(v2_case, 10,
                   "  k: {dtype: f32, shape: [2, 2, 3, 2], stride0: [1], data: [1.00000000e+00, "
                   "2.00000000e+00, 3.00000000e+00, 4.00000000e+00, 5.00000000e+00, "
                   "6.00000000e+00, 7.00000000e+00, 8.00000000e+00, 9.00000000e+00, "
                   "1.00000000e+01, 1.10000000e+01, 1.20000000e+01]}");
    acase *c = NULL;
    char err[256];
    cr_assert_eq(load_text(t, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c->k.stride0, 2u);
    const float *k = c->k.data;
    /* logical (b, h, l, d): the value is stored at (b, 0, l, d) = b * 6 + l * 2 + d (+1). */
    for (int b = 0; b < 2; b++)
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 6; i++)
                cr_assert_eq(k[(b * 2 + h) * 6 + i], (float)(b * 6 + i + 1), "k[%d,%d,%d]", b, h,
                             i);
    int rc;
    char *text = write_to_string(c, err, sizeof err, &rc);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(text, t, "stride0 [1] is not byte-identical");
    free(text);
    acase_free(c);
    free(t);
    /* [0] on q with generate; without stride0 on v (full generated tensor). */
    t = lines_with(v2_case, 9,
                   "  q: {dtype: f32, shape: [2, 2, 2, 2], stride0: [0], generate: "
                   "{kind: uniform, seed: 1, lo: -1.0e+00, hi: 1.0e+00}}");
    char *u = lines_with(t, 11,
                         "  v: {dtype: f32, shape: [2, 2, 3, 2], generate: {kind: uniform, "
                         "seed: 3, lo: -1.0e+00, hi: 1.0e+00}}");
    cr_assert_eq(load_text(u, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c->q.stride0, 1u);
    cr_assert_eq(c->v.stride0, 0u);
    cr_assert(memcmp(c->q.data, (const float *)c->q.data + 8, 8 * sizeof(float)) == 0);
    cr_assert(memcmp(c->v.data, (const float *)c->v.data + 6, 6 * sizeof(float)) != 0,
              "a full generated v is not repeated");
    text = write_to_string(c, err, sizeof err, &rc);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(text, u);
    free(text);
    acase_free(c);
    free(u);
    free(t);
}

Test(caseread, v2_sdpa_params_errors)
{
    static const struct {
        int line;
        const char *text, *where;
    } bad[] = {
        {7, "params: {causal: false, window: 2, lengths: [3, 2], left_padding: [0, 1]}",
         "7:33: params.window: needs causal: true unless expected is an error"},
        {7, "params: {causal: true, window: -1, lengths: [3, 2], left_padding: [0, 1]}",
         "7:32: params.window: must be >= 0 unless expected is an error"},
        {7, "params: {causal: true, window: 2.0, lengths: [3, 2], left_padding: [0, 1]}",
         "7:32: params.window: expected a decimal integer, got '2.0'"},
        {7, "params: {causal: true, window: 2, lengths: [3, 2, 1], left_padding: [0, 1, 0]}",
         "7:44: params.lengths: has 3 entries, q has batch 2 (must be equal unless expected is "
         "an error)"},
        {7, "params: {causal: true, window: 2, lengths: [3]}",
         "7:44: params.lengths: has 1 entries, q has batch 2"},
        {7, "params: {causal: true, window: 2, left_padding: [0]}",
         "7:49: params.left_padding: has 1 entries, q has batch 2"},
        {7, "params: {causal: true, window: 2, lengths: [3, 2], left_padding: [0, 1, 0]}",
         "7:66: params.left_padding: has 3 entries, lengths has 2 (they must match)"},
        {7, "params: {causal: true, window: 2, lengths: [4, 2], left_padding: [0, 1]}",
         "7:44: params.lengths: entry 0 = 4 is not in 0..Lk = 3"},
        {7, "params: {causal: true, window: 2, lengths: [3, -1], left_padding: [0, 1]}",
         "7:44: params.lengths: entry 1 = -1 is not in 0..Lk = 3"},
        {7, "params: {causal: true, window: 2, lengths: [3, 2], left_padding: [0, 4]}",
         "7:66: params.left_padding: entry 1 = 4 is not in 0..Lk = 3"},
        {7, "params: {causal: true, window: 2, lengths: [], left_padding: [0, 1]}",
         "7:44: params.lengths: expected 1..4096 integers, got 0"},
        {6, "requires: [f32, causal, sdpa.lengths, sdpa.left_padding, stride0]",
         "6:11: requires: missing sdpa.window (implied by the case content)"},
        {6, "requires: [f32, causal, sdpa.window, sdpa.left_padding, stride0]",
         "6:11: requires: missing sdpa.lengths"},
        {6, "requires: [f32, causal, sdpa.window, sdpa.lengths, stride0]",
         "6:11: requires: missing sdpa.left_padding"},
        {6, "requires: [f32, causal, sdpa.window, sdpa.lengths, sdpa.left_padding]",
         "6:11: requires: missing stride0"},
        {6, "requires: [f32, causal, sdpa.window, sdpa.lengths, sdpa.left_padding, stride1]",
         "6:71: requires[5]: unknown capability 'stride1'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_v2_line_error(bad[i].line, bad[i].text, bad[i].where);
}

Test(caseread, v2_stride0_errors)
{
    static const char k12[] = "[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]";
    static const struct {
        const char *stride0, *shape, *where;
    } bad[] = {
        {"[2]", "[2, 2, 3, 2]",
         "10:50: inputs.k.stride0[0]: dimension 2: only 0 (batch) and 1 (heads) can have stride 0"},
        {"[3]", "[2, 2, 3, 2]", "10:50: inputs.k.stride0[0]: dimension 3: only 0 (batch)"},
        {"[-1]", "[2, 2, 3, 2]", "10:50: inputs.k.stride0[0]: dimension -1: only 0 (batch)"},
        {"[1, 0]", "[2, 2, 3, 2]",
         "10:53: inputs.k.stride0[1]: dimensions must be strictly increasing"},
        {"[0, 0]", "[2, 2, 3, 2]",
         "10:53: inputs.k.stride0[1]: dimensions must be strictly increasing"},
        {"[]", "[2, 2, 3, 2]",
         "10:49: inputs.k.stride0: expected 1 or 2 dimensions out of 0 (batch) and 1 (heads)"},
        {"[0, 1, 1]", "[2, 2, 3, 2]", "10:49: inputs.k.stride0: expected 1 or 2 dimensions"},
        {"0", "[2, 2, 3, 2]",
         "10:49: inputs.k.stride0: expected a sequence of dimensions (0 = batch, 1 = heads)"},
        {"[0.0]", "[2, 2, 3, 2]",
         "10:50: inputs.k.stride0[0]: expected a decimal integer, got '0.0'"},
        {"[0]", "[2, 3, 2]", "10:46: inputs.k.stride0: needs a rank-4 tensor (rank is 3)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char line[512];
        snprintf(line, sizeof line, "  k: {dtype: f32, shape: %s, stride0: %s, data: %s}",
                 bad[i].shape, bad[i].stride0, k12);
        expect_v2_line_error(10, line, bad[i].where);
    }
    /* The data hold the stored slice: 12 values for stride0 [0], not the logical 24. */
    char line[1024];
    snprintf(line, sizeof line,
             "  k: {dtype: f32, shape: [2, 2, 3, 2], stride0: [0], data: "
             "[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 1.0, 2.0, 3.0, "
             "4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]}");
    expect_v2_line_error(10, line, "10:60: inputs.k.data: has 24 values, the shape needs 12");
    /* A mask broadcasts by its shape, never by stride0. */
    char *t = base_with(11, "  v: {dtype: f32, shape: [1, 1, 1, 2], data: [1.0, 2.0]}\n"
                            "  mask: {dtype: bool, shape: [1, 1, 1, 1], stride0: [0], data: [1]}");
    char *p = strstr(t, "requires: [f32]");
    cr_assert_not_null(p);
    char *u = malloc(strlen(t) + 64);
    cr_assert_not_null(u);
    snprintf(u, strlen(t) + 64, "%.*srequires: [f32, mask.bool, mask.broadcast]%s", (int)(p - t), t,
             p + strlen("requires: [f32]"));
    expect_error(u, "12:53: inputs.mask.stride0: only q, k and v (a mask broadcasts by its shape)");
    free(u);
    free(t);
}

/* A stride-0 tensor built in memory must be constant along its stride-0 dimensions:
 * acase_validate (and so the writer) refuses one that is not, naming the first element. */
Test(caselib, validate_stride0_data_constant)
{
    acase *c = NULL;
    char err[256];
    cr_assert_eq(load_text(v2_case, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(acase_validate(c, err, sizeof err), 0, "%s", err);
    ((float *)c->k.data)[12 + 5] = -1.0f; /* logical (1, 0, 2, 1) differs from (0, 0, 2, 1) */
    cr_assert_eq(acase_validate(c, err, sizeof err), -1);
    cr_assert_str_eq(err, "inputs.k.stride0: element 17 differs from its slice: a stride-0 tensor "
                          "must be constant along those dimensions");
    int rc;
    char *text = write_to_string(c, err, sizeof err, &rc);
    cr_assert_eq(rc, -1, "the writer would silently drop element 17");
    cr_assert_not_null(strstr(err, "inputs.k.stride0: element 17 differs"), "%s", err);
    free(text);
    ((float *)c->k.data)[12 + 5] = 6.0f;
    /* v is stride 0 on batch and heads: an element of head 1 must match head 0 too. */
    float *v = c->v.data;
    v[6] = v[6] + 1.0f;
    cr_assert_eq(acase_validate(c, err, sizeof err), -1);
    cr_assert_str_eq(err, "inputs.v.stride0: element 6 differs from its slice: a stride-0 tensor "
                          "must be constant along those dimensions");
    v[6] = v[0];
    cr_assert_eq(acase_validate(c, err, sizeof err), 0, "%s", err);
    /* stride0 bits outside 0..1 and on a mask. */
    c->k.stride0 = 4;
    cr_assert_eq(acase_validate(c, err, sizeof err), -1);
    cr_assert_str_eq(err, "inputs.k.stride0: only dimensions 0 (batch) and 1 (heads) can have "
                          "stride 0");
    acase_free(c);
}

Test(caselib, tensor_broadcast)
{
    /* (2, 1, 1, 2) stored for stride0 [1] of a logical (2, 2, 1, 2): heads repeated per batch. */
    acase_tensor t;
    memset(&t, 0, sizeof t);
    t.present = 1;
    t.dtype = ATTNREF_F32;
    t.ndim = 4;
    const int64_t stored[4] = {2, 1, 1, 2}, logical[4] = {2, 2, 1, 2};
    memcpy(t.shape, stored, sizeof stored);
    cr_assert_eq(acase_tensor_alloc(&t, NULL, 0), 0);
    for (int i = 0; i < 4; i++)
        ((float *)t.data)[i] = (float)(i + 1);
    char err[256];
    cr_assert_eq(acase_tensor_broadcast(&t, 2u, logical, err, sizeof err), 0, "%s", err);
    static const float want[8] = {1, 2, 1, 2, 3, 4, 3, 4};
    cr_assert_eq(t.numel, 8);
    cr_assert_eq(t.stride0, 2u);
    for (int i = 0; i < 8; i++)
        cr_assert_eq(((float *)t.data)[i], want[i], "element %d: %g", i, ((float *)t.data)[i]);
    free(t.data);
    /* Refusals leave t unchanged. */
    memset(&t, 0, sizeof t);
    t.present = 1;
    t.dtype = ATTNREF_F32;
    t.ndim = 4;
    memcpy(t.shape, logical, sizeof logical); /* extent 2 on the stride-0 dimension */
    cr_assert_eq(acase_tensor_alloc(&t, NULL, 0), 0);
    cr_assert_eq(acase_tensor_broadcast(&t, 2u, logical, err, sizeof err), -1);
    cr_assert_str_eq(err, "stored extent 2 of dimension 1 does not fit the logical extent 2");
    cr_assert_eq(t.numel, 8);
    cr_assert_eq(acase_tensor_broadcast(&t, 4u, logical, err, sizeof err), -1);
    cr_assert_str_eq(err, "stride0 needs a rank-4 tensor and dimensions 0..1");
    t.ndim = 3;
    cr_assert_eq(acase_tensor_broadcast(&t, 1u, logical, err, sizeof err), -1);
    cr_assert_str_eq(err, "stride0 needs a rank-4 tensor and dimensions 0..1");
    free(t.data);
}

Test(caseread, v2_tolerance_errors)
{
    static const struct {
        const char *text, *where;
    } bad[] = {
        {"tolerance: {ulps: 2.0e+00, row_atol: [1.0e-06, 0.0e+00, 2.5e-01]}",
         "14:38: tolerance.row_atol: has 3 values, the output has B*Hq*Lq = 8 rows"},
        {"tolerance: {ulps: 2.0e+00, row_atol: [1.0e-06, 0.0e+00, 2.5e-01, 1.0e-06, 1.0e-06, "
         "1.0e-06, 1.0e-06, 1.0e-06, 1.0e-06]}",
         "14:38: tolerance.row_atol: has 9 values, the output has B*Hq*Lq = 8 rows"},
        {"tolerance: {ulps: 2.0e+00, row_atol: []}",
         "14:38: tolerance.row_atol: has 0 values, the output has B*Hq*Lq = 8 rows"},
        {"tolerance: {ulps: 2.0e+00, row_atol: [1.0e-06, -1.0e-06, 2.5e-01, 1.0e-06, 1.0e-06, "
         "1.0e-06, 1.0e-06, 1.0e-06]}",
         "14:48: tolerance.row_atol[1]: must be finite and >= 0"},
        {"tolerance: {ulps: 2.0e+00, row_atol: [1.0e-06, 0.0e+00, .inf, 1.0e-06, 1.0e-06, "
         "1.0e-06, 1.0e-06, 1.0e-06]}",
         "14:57: tolerance.row_atol[2]: must be finite and >= 0"},
        {"tolerance: {ulps: 2.0e+00, row_atol: [.nan, 0.0e+00, 2.5e-01, 1.0e-06, 1.0e-06, "
         "1.0e-06, 1.0e-06, 1.0e-06]}",
         "14:39: tolerance.row_atol[0]: must be finite and >= 0"},
        {"tolerance: {ulps: 2.0e+00, row_atol: [1, 0.0e+00, 2.5e-01, 1.0e-06, 1.0e-06, "
         "1.0e-06, 1.0e-06, 1.0e-06]}",
         "14:39: tolerance.row_atol[0]: expected a float such as 1.5e-03 (with a '.'), .inf, -.inf "
         "or .nan, got '1'"},
        {"tolerance: {ulps: 2.0e+00, row_atol: 1.0e-06}",
         "14:38: tolerance.row_atol: expected a sequence of floats, one per output row"},
        {"tolerance: {ulps: -1.0, row_atol: [1.0e-06]}",
         "14:19: tolerance.ulps: must be finite and >= 0"},
        {"tolerance: {ulps: .inf, row_atol: [1.0e-06]}",
         "14:19: tolerance.ulps: must be finite and >= 0"},
        {"tolerance: {ulps: .nan, row_atol: [1.0e-06]}",
         "14:19: tolerance.ulps: must be finite and >= 0"},
        {"tolerance: {ulps: 2, row_atol: [1.0e-06]}",
         "14:19: tolerance.ulps: expected a float such as 1.5e-03 (with a '.'), .inf, -.inf or "
         ".nan, got '2'"},
        {"tolerance: {row_atol: [1.0e-06]}", "14:12: tolerance.ulps: required key missing"},
        {"tolerance: {ulps: 2.0}", "14:12: tolerance.row_atol: required key missing"},
        /* The version-1 keys are unknown keys now. */
        {"tolerance: {atol: 1.0e-06, rtol: 0.0}", "14:13: tolerance.atol: unknown key"},
        {"tolerance: {ulps: 2.0, row_atol: [1.0e-06, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], "
         "rtol: 0.0}",
         "14:80: tolerance.rtol: unknown key"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        expect_v2_line_error(14, bad[i].text, bad[i].where);
}

Test(caselib, validate_tolerance)
{
    acase *c = NULL;
    char err[256];
    cr_assert_eq(load_text(v2_case, &c, err, sizeof err), 0, "%s", err);
    c->row_atol[7] = -0.5;
    cr_assert_eq(acase_validate(c, err, sizeof err), -1);
    cr_assert_str_eq(err, "tolerance.row_atol: row 7: -0.5 is not finite and >= 0");
    c->row_atol[7] = INFINITY;
    cr_assert_eq(acase_validate(c, err, sizeof err), -1);
    cr_assert_str_eq(err, "tolerance.row_atol: row 7: inf is not finite and >= 0");
    c->row_atol[7] = 0.0;
    c->ulps = -1.0;
    cr_assert_eq(acase_validate(c, err, sizeof err), -1);
    cr_assert_str_eq(err, "tolerance.ulps: must be finite and >= 0");
    c->ulps = 0.0;
    cr_assert_eq(acase_validate(c, err, sizeof err), 0, "%s", err);
    free(c->row_atol);
    c->row_atol = NULL;
    cr_assert_eq(acase_validate(c, err, sizeof err), -1);
    cr_assert_str_eq(err, "tolerance.row_atol: missing (one value per output row)");
    acase_free(c);
    /* A rejection case and a mask case carry no tolerance. */
    for (int i = 3; i <= 4; i++) {
        c = sample_case(i);
        cr_assert_not_null(c);
        c->ulps = 1.0;
        cr_assert_eq(acase_validate(c, err, sizeof err), -1, "sample %d", i);
        cr_assert_str_eq(err, "tolerance: only allowed with expected.out");
        acase_free(c);
    }
}

Test(caseread, v2_mask_kv_len)
{
    /* kv_len 4 > offset + lq = 2: keep (B, 1, lq, kv_len); slots past offset + lq never kept. */
    char *t =
        mask_with("params: {lq: 1, offset: 1, lengths: [2, 1], left_padding: [0, 1]}\n"
                  "expected:\n  keep: {shape: [2, 1, 1, 2], data: [1, 1, 1, 0]}\n",
                  "params: {lq: 1, offset: 1, lengths: [2, 1], left_padding: [0, 1], kv_len: 4}\n"
                  "expected:\n  keep: {shape: [2, 1, 1, 4], data: [1, 1, 0, 0, 0, 1, 0, 0]}\n");
    char *u = mask_with("requires: [build_mask, lengths, left_padding]",
                        "requires: [build_mask, lengths, left_padding, mask.kv_len]");
    char *ok = malloc(strlen(t) + 32);
    cr_assert_not_null(ok);
    {
        /* t with u's requires line */
        const char *at = strstr(t, "requires: [build_mask, lengths, left_padding]");
        cr_assert_not_null(at);
        snprintf(ok, strlen(t) + 32,
                 "%.*srequires: [build_mask, lengths, left_padding, "
                 "mask.kv_len]%s",
                 (int)(at - t), t,
                 at + strlen("requires: [build_mask, lengths, "
                             "left_padding]"));
    }
    free(u);
    free(t);
    acase *c = NULL;
    char err[256];
    cr_assert_eq(load_text(ok, &c, err, sizeof err), 0, "%s\n%s", err, ok);
    cr_assert_eq(c->kv_len, 4);
    cr_assert_eq(c->expected.shape[3], 4);
    cr_assert_eq(acase_derive_requires(c), ATTNCONF_CAP_BUILD_MASK | ATTNCONF_CAP_LENGTHS |
                                               ATTNCONF_CAP_LEFT_PAD | ATTNCONF_CAP_KV_LEN);
    int rc;
    char *text = write_to_string(c, err, sizeof err, &rc);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(text, ok, "the mask case with kv_len is canonical");
    free(text);
    acase_free(c);

    static const struct {
        const char *from, *to, *where;
    } bad[] = {
        {"kv_len: 4", "kv_len: 1",
         "7:75: params.kv_len: 1 is below offset + lq = 2 (unless expected is an error)"},
        {"kv_len: 4", "kv_len: 0", "7:75: params.kv_len: must be >= 1 (omit it for offset + lq)"},
        {"kv_len: 4", "kv_len: -3", "7:75: params.kv_len: must be >= 1"},
        {"kv_len: 4", "kv_len: 4.0", "7:75: params.kv_len: expected a decimal integer, got '4.0'"},
        {"keep: {shape: [2, 1, 1, 4], data: [1, 1, 0, 0, 0, 1, 0, 0]}",
         "keep: {shape: [2, 1, 1, 2], data: [1, 1, 0, 1]}",
         "9:17: expected.keep.shape: must be (B, 1, lq, kv_len) = [2, 1, 1, 4]"},
        {", mask.kv_len]", "]", "6:11: requires: missing mask.kv_len"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *at = strstr(ok, bad[i].from);
        cr_assert_not_null(at, "%s", bad[i].from);
        size_t n = strlen(ok) + strlen(bad[i].to) + 1;
        char *b = malloc(n);
        cr_assert_not_null(b);
        snprintf(b, n, "%.*s%s%s", (int)(at - ok), ok, bad[i].to, at + strlen(bad[i].from));
        expect_error(b, bad[i].where);
        free(b);
    }
    free(ok);
}

/* A must-reject case may hold any parameter values (that is what it tests), and still round
 * trips byte for byte. */
Test(caseread, v2_sdpa_params_in_error_case)
{
    char *t = lines_with(v2_case, 14, NULL);
    char *u = lines_with(t, 13, "  error: einval");
    char *w = lines_with(u, 7,
                         "params: {causal: false, window: -1, lengths: [9, -1, 2], "
                         "left_padding: [0, 7, -3]}");
    acase *c = NULL;
    char err[256];
    cr_assert_eq(load_text(w, &c, err, sizeof err), 0, "%s", err);
    cr_assert_eq(c->window, -1);
    cr_assert_eq(c->batch, 3);
    cr_assert_eq(c->lengths[0], 9);
    cr_assert_eq(c->left_padding[2], -3);
    cr_assert_null(c->row_atol);
    cr_assert_eq(c->ulps, 0.0);
    int rc;
    char *text = write_to_string(c, err, sizeof err, &rc);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert_str_eq(text, w);
    free(text);
    acase_free(c);
    /* ...but no tolerance. */
    char *x = lines_with(w, 13, "  error: einval\ntolerance: {ulps: 0.0, row_atol: []}");
    expect_error(x, "14:12: tolerance: only allowed with expected.out");
    free(x);
    free(w);
    free(u);
    free(t);
}
