/* test_bench.c — `attnconf bench`'s arithmetic and input checks (harness/bench/bench_count.c:
 * counts and needed capabilities; bench_suite.c).  Every perf number is divided by the work
 * counted here, so the closed form is checked key by key against the reference's own keep rule
 * (attnref_sdpa_key_kept) on thousands of random structures; the suite reader must refuse bad
 * input with the file, line, field and reason. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnref/sdpa.h"
#include "bench.h"

/* ---- counts ------------------------------------------------------------------------------ */

static uint64_t rng_state = 12345;

static int64_t draw(int64_t lo, int64_t hi) /* uniform in [lo, hi] */
{
    return lo + (int64_t)(acase_splitmix64_next(&rng_state) % (uint64_t)(hi - lo + 1));
}

/* Pairs and distinct keys of batch row b, one key at a time. */
static void brute(const bs_shape *s, int64_t b, int64_t *pairs, int64_t *keys)
{
    const attnref_sdpa_params p = {.causal = s->causal,
                                   .has_causal_offset = s->has_causal_offset,
                                   .causal_offset = s->causal_offset,
                                   .window = s->window,
                                   .batch = s->b,
                                   .lengths = s->lengths,
                                   .left_padding = s->left_padding};
    *pairs = *keys = 0;
    for (int64_t j = 0; j < s->lk; j++) {
        int any = 0;
        for (int64_t i = 0; i < s->lq; i++)
            if (attnref_sdpa_key_kept(&p, s->lq, s->lk, b, i, j)) {
                (*pairs)++;
                any = 1;
            }
        *keys += any;
    }
}

Test(bench_count, closed_form_matches_the_keep_rule_key_by_key)
{
    int64_t lengths[4], pad[4];
    for (int n = 0; n < 20000; n++) {
        bs_shape s;
        memset(&s, 0, sizeof s);
        s.b = draw(1, 4);
        s.hq = s.hkv = 1;
        s.d = s.dv = 1;
        s.lq = draw(1, 40);
        s.lk = draw(1, 40);
        s.causal = draw(0, 3) != 0;
        if (s.causal && draw(0, 1)) {
            s.has_causal_offset = 1;
            /* Mostly near the interesting range, sometimes at the limits. */
            s.causal_offset = draw(0, 9) ? draw(-50, 50) : (draw(0, 1) ? 1 : -1) * BS_MAX_OFFSET;
        }
        if (s.causal && draw(0, 1))
            s.window = draw(1, 45);
        for (int64_t b = 0; b < s.b; b++) {
            lengths[b] = draw(0, s.lk);
            pad[b] = draw(0, s.lk);
        }
        s.lengths = draw(0, 1) ? lengths : NULL;
        s.left_padding = draw(0, 1) ? pad : NULL;
        for (int64_t b = 0; b < s.b; b++) {
            int64_t keys, want_pairs, want_keys;
            int64_t pairs = bs_row_pairs(&s, b, &keys);
            brute(&s, b, &want_pairs, &want_keys);
            cr_assert_eq(pairs, want_pairs,
                         "draw %d row %lld: lq %lld lk %lld causal %d off %lld(%d) W %lld len %lld "
                         "pad %lld: pairs %lld, expected %lld",
                         n, (long long)b, (long long)s.lq, (long long)s.lk, s.causal,
                         (long long)s.causal_offset, s.has_causal_offset, (long long)s.window,
                         (long long)(s.lengths ? s.lengths[b] : -1),
                         (long long)(s.left_padding ? s.left_padding[b] : -1), (long long)pairs,
                         (long long)want_pairs);
            cr_assert_eq(keys, want_keys, "draw %d row %lld: keys %lld, expected %lld", n,
                         (long long)b, (long long)keys, (long long)want_keys);
        }
    }
}

Test(bench_count, prefill_and_decode_numbers)
{
    bs_shape s;
    memset(&s, 0, sizeof s);
    s.b = 1, s.hq = 32, s.hkv = 8, s.lq = s.lk = 2048, s.d = s.dv = 128, s.causal = 1;
    bs_counts c;
    bs_count(&s, ATTNREF_F32, &c);
    cr_assert_eq(c.visible_pairs, 32LL * 2048 * 2049 / 2); /* 67141632 */
    cr_assert_eq(c.flops, 512.0 * 67141632.0);
    cr_assert_eq(c.kv_bytes, 8LL * 2048 * 256 * 4); /* every key of every kv head */
    cr_assert_eq(c.io_bytes, (2LL * 32 + 2 * 8) * 2048 * 128 * 4);
    bs_count(&s, ATTNREF_BF16, &c);
    cr_assert_eq(c.kv_bytes, 8LL * 2048 * 256 * 2);

    /* Decode: one query, every key visible, all of K and V read. */
    s.b = 8, s.lq = 1, s.lk = 32768, s.causal = 0;
    bs_count(&s, ATTNREF_F16, &c);
    cr_assert_eq(c.visible_pairs, 8LL * 32 * 32768);
    cr_assert_eq(c.kv_bytes, 8LL * 8 * 32768 * 256 * 2);

    /* A window of 1024 over 8192 causal rows: row i keeps min(i + 1, 1024) keys. */
    s.b = 1, s.lq = s.lk = 8192, s.causal = 1, s.window = 1024;
    bs_count(&s, ATTNREF_F32, &c);
    cr_assert_eq(c.visible_pairs, 32LL * (1024LL * 1025 / 2 + (8192 - 1024) * 1024LL));
}

Test(bench_count, lengths_cut_rows_and_keys)
{
    int64_t len[2] = {100, 0};
    bs_shape s;
    memset(&s, 0, sizeof s);
    s.b = 2, s.hq = 2, s.hkv = 1, s.lq = s.lk = 300, s.d = s.dv = 8, s.causal = 1;
    s.lengths = len;
    bs_counts c;
    bs_count(&s, ATTNREF_F32, &c);
    /* Row b = 0: rows i < 100 keep i + 1 keys, the other 200 keep 100; b = 1 keeps nothing. */
    cr_assert_eq(c.visible_pairs, 2 * (100LL * 101 / 2 + 200 * 100));
    cr_assert_eq(c.kv_bytes, 100LL * 16 * 4);
}

/* ---- capabilities -------------------------------------------------------------------------- */

Test(bench_supported, params_then_mask_then_refusal)
{
    int64_t len[1] = {10};
    bs_shape s;
    memset(&s, 0, sizeof s);
    s.b = 1, s.hq = 4, s.hkv = 2, s.lq = s.lk = 16, s.d = 8, s.dv = 8, s.causal = 1;
    s.lengths = len;
    const uint64_t base = ATTNCONF_CAP_F32 | ATTNCONF_CAP_GQA | ATTNCONF_CAP_CAUSAL;
    bb_via via;
    char why[256];
    cr_assert_eq(
        bb_supported(&s, ATTNREF_F32, base | ATTNCONF_CAP_SDPA_LENGTHS, &via, why, sizeof why), 0);
    cr_assert_eq(via, BB_VIA_PARAMS);
    cr_assert_eq(bb_supported(&s, ATTNREF_F32,
                              base | ATTNCONF_CAP_MASK_BOOL | ATTNCONF_CAP_MASK_BCAST, &via, why,
                              sizeof why),
                 0);
    cr_assert_eq(via, BB_VIA_MASK);
    cr_assert_eq(
        bb_supported(&s, ATTNREF_F32, base | ATTNCONF_CAP_MASK_BOOL, &via, why, sizeof why), -1);
    cr_assert_str_eq(why, "needs sdpa.lengths (or mask.broadcast, for a boolean mask tensor)");
    cr_assert_eq(
        bb_supported(&s, ATTNREF_F16, base | ATTNCONF_CAP_SDPA_LENGTHS, &via, why, sizeof why), -1);
    cr_assert_str_eq(why, "needs f16");
}

/* ---- the suite reader ---------------------------------------------------------------------- */

static char path[64];

/* Load `text` as a suite file; returns bs_suite_load's result, err filled. */
static int load_text(const char *text, uint64_t mem, bs_suite *s, char *err, size_t n)
{
    snprintf(path, sizeof path, "/tmp/test_bench_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs(text, f);
    fclose(f);
    int rc = bs_suite_load(path, mem, s, err, n);
    unlink(path);
    return rc;
}

#define HEAD "attnconf_perf_suite: 1\nname: t\ndescription: a test\nshapes:\n"
#define SHAPE                                                                                      \
    "  - id: t.a\n    dtypes: [f32]\n    batch: 3\n    q_heads: 4\n    kv_heads: 2\n"              \
    "    lq: 8\n    lk: 8\n    head_dim: 16\n    bound: compute\n"

/* The error of a suite made of HEAD + SHAPE + extra, with "PATH" standing for the file. */
static void expect_error(const char *extra, const char *want)
{
    char text[2048], err[1024], full[1200];
    snprintf(text, sizeof text, HEAD SHAPE "%s", extra);
    bs_suite s;
    cr_assert_eq(load_text(text, 1ull << 40, &s, err, sizeof err), -1, "accepted: %s", extra);
    snprintf(full, sizeof full, "%s%s", path, want);
    cr_assert_str_eq(err, full);
}

Test(bench_suite, good_file_loads)
{
    bs_suite s;
    char err[1024];
    cr_assert_eq(load_text(HEAD SHAPE "    causal: true\n    window: 3\n    lengths: [1, 8, 0]\n"
                                      "    v_head_dim: 24\n",
                           1ull << 40, &s, err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(s.n, 1);
    cr_assert_str_eq(s.name, "t");
    cr_assert_eq(s.shapes[0].dv, 24);
    cr_assert_eq(s.shapes[0].window, 3);
    cr_assert_eq(s.shapes[0].lengths[1], 8);
    cr_assert_eq(s.shapes[0].line, 5);
    bs_suite_free(&s);
}

Test(bench_suite, bad_fields_name_line_and_field)
{
    expect_error("    window: 4\n", ":14: shapes[0].window: needs causal: true (SPEC clause 4)");
    expect_error("    lengths: [1, 2]\n", ":14: shapes[0].lengths: 2 entries, batch is 3");
    expect_error("    left_padding: [1, 2, 9]\n",
                 ":14: shapes[0].left_padding: 9 is out of range (0..8)");
    expect_error("    colour: red\n",
                 ":14: shapes[0]: unknown key 'colour' (known: id, dtypes, "
                 "batch, q_heads, kv_heads, lq, lk, head_dim, v_head_dim, causal, causal_offset, "
                 "window, lengths, left_padding, softcap, alibi_max_bias, sinks, chunk, documents, "
                 "blocks, paged, bound, curve)");
    /* The terms of current models. */
    expect_error("    softcap: -1\n", ":14: shapes[0].softcap: '-1' is not a number in (0, 1e+30]");
    expect_error("    softcap: lots\n", ":14: shapes[0].softcap: expected a number");
    expect_error("    sinks: [1, 2]\n",
                 ":14: shapes[0].sinks: expected a list of 4 numbers (one per query head)");
    expect_error("    sinks: [1, 2, x, 4]\n",
                 ":14: shapes[0].sinks: entry 2: expected a number of magnitude <= 1e30");
    expect_error("    chunk: 4\n", ":14: shapes[0].chunk: needs causal: true (SPEC clause 20)");
    expect_error("    documents: [3, 4]\n",
                 ":14: shapes[0].documents: the lengths sum to 7, lk is 8");
    expect_error("    causal: true\n    blocks: [[2, 3], [4, 1]]\n",
                 ":15: shapes[0].blocks: 4 is out of range (5..7)");
    expect_error("    blocks: [[2, 3]]\n",
                 ":14: shapes[0].blocks: needs causal: true (SPEC clause 20)");
    expect_error("    causal: yes\n", ":14: shapes[0].causal: expected true or false");
    expect_error("    causal: true\n    causal_offset: 1099511627777\n",
                 ":15: shapes[0].causal_offset: 1099511627777 is out of range "
                 "(-1099511627776..1099511627776)");
    expect_error("  - id: t.a\n    dtypes: [f16]\n    batch: 1\n    q_heads: 1\n    kv_heads: 1\n"
                 "    lq: 1\n    lk: 1\n    head_dim: 1\n    bound: memory\n",
                 ":14: shapes[1].id: 't.a' is also shapes[0] (line 5)");
    expect_error("  - id: t.b\n    dtypes: [f16, f64]\n    batch: 1\n    q_heads: 1\n"
                 "    kv_heads: 1\n    lq: 1\n    lk: 1\n    head_dim: 1\n    bound: memory\n",
                 ":15: shapes[1].dtypes: unknown dtype 'f64' (f32, f16, bf16)");
    expect_error("  - id: t.c\n    dtypes: [f16]\n    batch: 1\n    q_heads: 3\n    kv_heads: 2\n"
                 "    lq: 1\n    lk: 1\n    head_dim: 1\n    bound: memory\n",
                 ":18: shapes[1].kv_heads: 2 does not divide q_heads 3");
    expect_error("  - id: t.d\n    dtypes: [f16]\n    batch: 1\n",
                 ":14: shapes[1].q_heads: missing");
    expect_error("  - id: T D\n    dtypes: [f16]\n    batch: 1\n    q_heads: 1\n    kv_heads: 1\n"
                 "    lq: 1\n    lk: 1\n    head_dim: 1\n    bound: memory\n",
                 ":14: shapes[1].id: 'T D' has a character outside [A-Za-z0-9_.-]");
}

/* A suite with cost curves: two curves, the suite's own timing defaults, shapes naming them. */
#define CHEAD                                                                                      \
    "attnconf_perf_suite: 1\nname: t\ndescription: a test\n"                                       \
    "curves:\n  - name: pre\n    x: lk\n    expect: 2\n  - name: bat\n    x: batch\n"              \
    "    expect: 1\ndefaults: {min_time: 0.25, min_reps: 4}\nshapes:\n"
/* A point (10 lines): id, curve, batch, Lq = Lk, q heads. */
#define PT(id, curve, b, l, hq)                                                                    \
    "  - id: " id "\n    curve: " curve "\n    dtypes: [f32]\n    batch: " b "\n"                  \
    "    q_heads: " hq "\n    kv_heads: 1\n    lq: " l "\n    lk: " l "\n    head_dim: 8\n"        \
    "    bound: compute\n"
#define GOOD PT("t.a", "pre", "1", "16", "2") PT("t.b", "pre", "1", "32", "2")

static void expect_curve_error(const char *text, const char *want)
{
    char err[1024], full[1200];
    bs_suite s;
    cr_assert_eq(load_text(text, 1ull << 40, &s, err, sizeof err), -1, "accepted: %s", text);
    snprintf(full, sizeof full, "%s%s", path, want);
    cr_assert_str_eq(err, full);
}

Test(bench_suite, curves_load_and_are_checked)
{
    char err[1024];
    bs_suite s;
    cr_assert_eq(load_text(CHEAD GOOD PT("t.c", "bat", "1", "16", "2")
                               PT("t.d", "bat", "4", "16", "2"),
                           1ull << 40, &s, err, sizeof err),
                 0, "%s", err);
    cr_assert_eq(s.ncurves, 2);
    cr_assert_str_eq(s.curves[0].name, "pre");
    cr_assert_eq(s.curves[0].x, BS_X_LK);
    cr_assert_eq(s.curves[0].expect, 2.0);
    cr_assert_eq(s.curves[1].x, BS_X_BATCH);
    cr_assert_eq(s.min_time_s, 0.25);
    cr_assert_eq(s.min_reps, 4);
    cr_assert_str_eq(s.shapes[1].curve, "pre");
    cr_assert_str_eq(s.shapes[3].curve, "bat");
    bs_suite_free(&s);
    /* Without curves or defaults: no curve, and "not given" defaults. */
    cr_assert_eq(load_text(HEAD SHAPE, 1ull << 40, &s, err, sizeof err), 0, "%s", err);
    cr_assert_eq(s.ncurves, 0);
    cr_assert_str_eq(s.shapes[0].curve, "");
    cr_assert(s.min_time_s < 0 && s.min_reps < 0);
    bs_suite_free(&s);

    /* Each shape of a curve suite names a curve the suite has. */
    expect_curve_error(CHEAD GOOD SHAPE,
                       ":33: shapes[2].curve: missing (the suite has curves: every shape is a "
                       "point of one)");
    expect_curve_error(CHEAD PT("t.a", "nope", "1", "16", "2"),
                       ":14: shapes[0].curve: 'nope' is not one of the suite's curves");
    expect_curve_error(HEAD PT("t.a", "pre", "1", "16", "2"),
                       ":6: shapes[0].curve: the suite has no curves (a top-level `curves` list "
                       "defines them)");
    /* A curve of one size; two points at one size; points that differ in more than the size. */
    expect_curve_error(CHEAD GOOD PT("t.c", "bat", "1", "16", "2"),
                       ": curves: 'bat' has 1 shape: a curve needs two sizes at least");
    expect_curve_error(CHEAD GOOD PT("t.c", "pre", "2", "32", "2"),
                       ":33: shapes[2].curve: 'pre' sweeps lk, but this shape's batch differs "
                       "from t.a's (line 13)");
    expect_curve_error(CHEAD GOOD PT("t.c", "pre", "1", "64", "4"),
                       ":33: shapes[2].curve: 'pre' sweeps lk, but this shape's q_heads differs "
                       "from t.a's (line 13)");
    expect_curve_error(CHEAD PT("t.a", "bat", "2", "16", "2") PT("t.b", "bat", "4", "32", "2"),
                       ":23: shapes[1].curve: 'bat' sweeps batch, but this shape's lk differs "
                       "from t.a's (line 13)");
    expect_curve_error(CHEAD GOOD PT("t.c", "pre", "1", "32", "2"),
                       ":33: shapes[2].curve: 'pre' already has a point at lk 32 (t.b)");
    /* The definitions. */
    expect_curve_error("attnconf_perf_suite: 1\nname: t\ndescription: a test\n"
                       "curves:\n  - name: pre\n    x: lz\n    expect: 2\nshapes:\n" SHAPE,
                       ":6: curves[0].x: expected lk, lq or batch (the size the curve sweeps)");
    expect_curve_error("attnconf_perf_suite: 1\nname: t\ndescription: a test\n"
                       "curves:\n  - name: pre\n    x: lk\n    expect: 0\nshapes:\n" SHAPE,
                       ":7: curves[0].expect: '0' is not a number in (0, 8]");
    expect_curve_error("attnconf_perf_suite: 1\nname: t\ndescription: a test\n"
                       "defaults: {min_reps: 3, max_reps: 4}\nshapes:\n" SHAPE,
                       ":4: defaults: unknown key 'max_reps' (known: min_time, min_reps)");
}

Test(bench_suite, terms_load_and_count)
{
    char err[1024];
    bs_suite s;
    cr_assert_eq(load_text(HEAD SHAPE "    causal: true\n    softcap: 50.0\n    alibi_max_bias: 8\n"
                                      "    sinks: [0.1, -1, 2.5e0, 3]\n    chunk: 5\n"
                                      "    documents: [3, 1, 4]\n    blocks: [[0, 2], [5, 3]]\n",
                           1ull << 40, &s, err, sizeof err),
                 0, "%s", err);
    const bs_shape *sh = &s.shapes[0];
    cr_assert_eq(sh->softcap, 50.0);
    cr_assert_eq(sh->alibi_max_bias, 8.0);
    cr_assert_eq(sh->sinks[0], (double)0.1f, "sinks are f32 values");
    cr_assert_eq(sh->sinks_f32[2], 2.5f);
    cr_assert_eq(sh->chunk, 5);
    const int64_t seg[8] = {0, 0, 0, 1, 2, 2, 2, 2}, blk[8] = {0, 0, -1, -1, -1, 1, 1, 1};
    for (int b = 0; b < 3; b++)
        for (int j = 0; j < 8; j++) {
            cr_assert_eq(sh->segment_ids[b * 8 + j], seg[j]);
            cr_assert_eq(sh->block_ids[b * 8 + j], blk[j]);
        }
    /* Counted key by key: the same as attnref_sdpa_key_kept over every pair. */
    const attnref_sdpa_params p = {.causal = 1,
                                   .batch = 3,
                                   .chunk = 5,
                                   .segment_ids = sh->segment_ids,
                                   .block_ids = sh->block_ids};
    int64_t want = 0;
    for (int64_t b = 0; b < 3; b++)
        for (int64_t i = 0; i < 8; i++)
            for (int64_t j = 0; j < 8; j++)
                want += attnref_sdpa_key_kept(&p, 8, 8, b, i, j);
    bs_counts c;
    bs_count(sh, ATTNREF_F32, &c);
    cr_assert_eq(c.visible_pairs, want * 4);
    /* The score terms need their bits; there is no mask form of them. */
    bb_via via;
    char why[256];
    const uint64_t base = ATTNCONF_CAP_F32 | ATTNCONF_CAP_GQA | ATTNCONF_CAP_CAUSAL |
                          ATTNCONF_CAP_CHUNK | ATTNCONF_CAP_SEGMENTS | ATTNCONF_CAP_BLOCKS |
                          ATTNCONF_CAP_SOFTCAP | ATTNCONF_CAP_ALIBI;
    cr_assert_eq(bb_supported(sh, ATTNREF_F32, base, &via, why, sizeof why), -1);
    cr_assert_str_eq(why, "needs sdpa.sinks");
    cr_assert_eq(bb_supported(sh, ATTNREF_F32, base | ATTNCONF_CAP_SINKS, &via, why, sizeof why),
                 0);
    cr_assert_eq(via, BB_VIA_PARAMS);
    bs_suite_free(&s);
}

Test(bench_suite, sizes_are_refused_before_allocating)
{
    char err[1024], full[1200];
    bs_suite s;
    /* q alone: 4096 x 4096 x 4096 x 1 elements, over the reference's 2^31. */
    cr_assert_eq(load_text(HEAD "  - id: big\n    dtypes: [f16]\n    batch: 4096\n"
                                "    q_heads: 4096\n    kv_heads: 1\n    lq: 4096\n    lk: 1\n"
                                "    head_dim: 1\n    bound: compute\n",
                           1ull << 40, &s, err, sizeof err),
                 -1);
    snprintf(full, sizeof full,
             "%s:5: shapes[0]: q has more than 2^31 elements (the reference's "
             "limit)",
             path);
    cr_assert_str_eq(err, full);
    /* The committed prefill suite on a machine with 256 MiB: L 8192 in f32 needs 320 MiB. */
    cr_assert_eq(bs_suite_load(PERF_SUITES_DIR "/prefill.yaml", 256ull << 20, &s, err, sizeof err),
                 -1);
    cr_assert_str_eq(err, PERF_SUITES_DIR
                     "/prefill.yaml:27: shapes[2]: q, k, v and out need "
                     "0.31 GiB, over half of this machine's 0.25 GiB of physical memory");
    /* A paged shape's pool counts: one key in a page of 65536 slots is 2 GiB of pool at B 4,
     * Hkv 8, D 128 in f32, though K and V are 32 KiB. */
    cr_assert_eq(load_text(HEAD "  - id: pool\n    dtypes: [f32]\n    batch: 4\n"
                                "    q_heads: 8\n    kv_heads: 8\n    lq: 1\n    lk: 1\n"
                                "    head_dim: 128\n    paged: {page_size: 65536}\n"
                                "    bound: memory\n",
                           1ull << 30, &s, err, sizeof err),
                 -1);
    snprintf(full, sizeof full,
             "%s:5: shapes[0]: q, k, v, the page pool and out need 2.00 GiB, over half of this "
             "machine's 1.00 GiB of physical memory",
             path);
    cr_assert_str_eq(err, full);
    cr_assert_eq(load_text("attnconf_perf_suite: 2\n", 1, &s, err, sizeof err), -1);
    snprintf(full, sizeof full, "%s:1: attnconf_perf_suite: 2 is out of range (1..1)", path);
    cr_assert_str_eq(err, full);
    cr_assert_eq(load_text("shapes: [\n", 1, &s, err, sizeof err), -1);
    cr_assert(strstr(err, ": yaml: ") != NULL, "%s", err);
}

Test(bench_suite, committed_suites_load)
{
    static const char *const names[] = {"prefill", "decode", "padded", "window", "smoke", "curves"};
    static const size_t shapes[] = {3, 6, 1, 1, 6, 42};
    for (size_t i = 0; i < 6; i++) {
        char p[512], err[1024];
        snprintf(p, sizeof p, "%s/%s.yaml", PERF_SUITES_DIR, names[i]);
        bs_suite s;
        cr_assert_eq(bs_suite_load(p, 64ull << 30, &s, err, sizeof err), 0, "%s", err);
        cr_assert_str_eq(s.name, names[i]);
        cr_assert_eq(s.n, shapes[i], "%s: %zu shapes", names[i], s.n);
        bs_suite_free(&s);
    }
}
