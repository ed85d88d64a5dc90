/* terms.c — the format v3 parameters of current models' attention (SPEC.md clauses 20-22), read,
 * checked and written for op sdpa (every term) and op mask (chunk, segment_ids, block_ids):
 * one implementation for both ops, as fields.c is for the padding lists. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"

/* `name: [[id, ...], ...]`: rows of equally many integers; the row count must agree with
 * c->batch when lengths or left_padding set it, else it sets c->batch. */
static int read_ids(acase__rd *r, const yaml_node_t *n, const char *field, acase *c, int64_t **out)
{
    ayr *y = &r->y;
    size_t rows = 0;
    if (ayr_seq(y, n, field, "a sequence of rows (one per batch row) of integer ids", &rows))
        return -1;
    if (rows < 1 || rows > ACASE_MAX_BATCH)
        return ayr_fail(y, n, field, "expected 1..%d rows, got %zu", ACASE_MAX_BATCH, rows);
    if ((c->lengths || c->left_padding) && (int64_t)rows != c->batch)
        return ayr_fail(y, n, field, "has %zu rows, lengths / left_padding have %lld entries", rows,
                        (long long)c->batch);
    if ((c->segment_ids || c->block_ids) && (int64_t)rows != c->batch)
        return ayr_fail(y, n, field, "has %zu rows, the other id list has %lld", rows,
                        (long long)c->batch);
    int64_t cols = -1;
    int64_t *a = NULL;
    for (size_t b = 0; b < rows; b++) {
        char fb[AYR_FIELD_MAX];
        yaml_node_t *row = ayr_item_at(y, n, field, b, fb);
        size_t len = 0;
        if (!row || ayr_seq(y, row, fb, "a sequence of integer ids, one per key position", &len))
            goto fail;
        if (cols < 0) {
            if (len < 1) {
                ayr_fail(y, row, fb, "expected at least one id");
                goto fail;
            }
            if (c->ids_len && (int64_t)len != c->ids_len) {
                ayr_fail(y, row, fb, "has %zu ids, the other id list has %lld per row", len,
                         (long long)c->ids_len);
                goto fail;
            }
            cols = (int64_t)len;
            if (acase__rd_charge(r, n, field, (int64_t)rows * cols))
                goto fail;
            a = calloc(rows * (size_t)cols, sizeof *a);
            if (!a)
                return ayr_fail(y, n, field, "out of memory");
        } else if ((int64_t)len != cols) {
            ayr_fail(y, row, fb, "has %zu ids, row 0 has %lld (every row has one per key)", len,
                     (long long)cols);
            goto fail;
        }
        if (ayr_items(y, row, fb, len, a + b * (size_t)cols, NULL))
            goto fail;
    }
    *out = a;
    c->batch = (int64_t)rows;
    c->ids_len = cols;
    return 0;
fail:
    free(a);
    return -1;
}

int acase__rd_terms(acase__rd *r, const acase__terms_nodes *t, acase *c)
{
    ayr *y = &r->y;
    if (t->softcap && ayr_double(y, t->softcap, "params.softcap", &c->softcap))
        return -1;
    if (t->alibi_max_bias &&
        ayr_double(y, t->alibi_max_bias, "params.alibi_max_bias", &c->alibi_max_bias))
        return -1;
    if (t->sinks) {
        size_t len = 0;
        if (ayr_seq(y, t->sinks, "params.sinks", "a sequence of floats, one per query head", &len))
            return -1;
        if (len < 1 || len > ACASE_MAX_BATCH)
            return ayr_fail(y, t->sinks, "params.sinks", "expected 1..%d values, got %zu",
                            ACASE_MAX_BATCH, len);
        c->sinks = calloc(len, sizeof *c->sinks);
        if (!c->sinks)
            return ayr_fail(y, t->sinks, "params.sinks", "out of memory");
        c->nsinks = (int64_t)len;
        if (ayr_items(y, t->sinks, "params.sinks", len, NULL, c->sinks))
            return -1;
    }
    if (t->chunk && ayr_int(y, t->chunk, "params.chunk", &c->chunk))
        return -1;
    if (t->segment_ids && read_ids(r, t->segment_ids, "params.segment_ids", c, &c->segment_ids))
        return -1;
    if (t->block_ids && read_ids(r, t->block_ids, "params.block_ids", c, &c->block_ids))
        return -1;
    return 0;
}

/* v exactly representable in binary32 (what the ABI passes for these values); NaN and the
 * infinities are (a rejection case holds them). */
static int is_f32(double v)
{
    return isnan(v) || (double)(float)v == v;
}

int acase__chk_terms(acase__chk *k, const acase *c, int64_t hq, int64_t lk, int causal)
{
    if (c->softcap != 0.0 && !is_f32(c->softcap))
        return acase__chk_fail(k, "params.softcap", "%g is not exactly a binary32 value",
                               c->softcap);
    if (c->alibi_max_bias != 0.0 && !is_f32(c->alibi_max_bias))
        return acase__chk_fail(k, "params.alibi_max_bias", "%g is not exactly a binary32 value",
                               c->alibi_max_bias);
    for (int64_t h = 0; h < c->nsinks; h++)
        if (!is_f32(c->sinks[h]))
            return acase__chk_fail(k, "params.sinks",
                                   "entry %lld = %g is not exactly a binary32 "
                                   "value",
                                   (long long)h, c->sinks[h]);
    if ((c->segment_ids || c->block_ids) && (c->batch < 1 || c->batch > ACASE_MAX_BATCH))
        return acase__chk_fail(k, "params.segment_ids", "batch %lld is not in 1..%d",
                               (long long)c->batch, ACASE_MAX_BATCH);
    if (c->expected.error)
        return 0; /* a rejection case may hold any value: that is what it tests */
    if (!(c->softcap >= 0.0) || !isfinite(c->softcap))
        return acase__chk_fail(k, "params.softcap",
                               "must be finite and >= 0 unless expected is "
                               "an error");
    if (!(c->alibi_max_bias >= 0.0) || !isfinite(c->alibi_max_bias))
        return acase__chk_fail(k, "params.alibi_max_bias",
                               "must be finite and >= 0 unless expected is an error");
    if (c->sinks) {
        if (c->nsinks != hq)
            return acase__chk_fail(k, "params.sinks",
                                   "has %lld values, q has Hq = %lld heads (one per query head)",
                                   (long long)c->nsinks, (long long)hq);
        for (int64_t h = 0; h < c->nsinks; h++)
            if (!isfinite(c->sinks[h]))
                return acase__chk_fail(k, "params.sinks", "entry %lld is not finite", (long long)h);
    }
    if (c->chunk < 0)
        return acase__chk_fail(k, "params.chunk", "must be >= 0 unless expected is an error");
    if (c->chunk && !causal)
        return acase__chk_fail(k, "params.chunk", "needs causal: true unless expected is an error");
    if (c->block_ids && !causal)
        return acase__chk_fail(k, "params.block_ids",
                               "needs causal: true unless expected is an error");
    if ((c->segment_ids || c->block_ids) && c->ids_len != lk)
        return acase__chk_fail(k, c->segment_ids ? "params.segment_ids" : "params.block_ids",
                               "rows have %lld ids, there are Lk = %lld keys",
                               (long long)c->ids_len, (long long)lk);
    return 0;
}

static void write_ids(ayw *w, const char *key, const int64_t *ids, int64_t rows, int64_t cols)
{
    ayw_plain(w, key);
    ayw_seq(w, 1);
    for (int64_t b = 0; b < rows; b++)
        ayw_ints(w, ids + b * cols, cols);
    ayw_seq_end(w);
}

void acase__w_terms(ayw *w, const acase *c)
{
    if (c->softcap != 0.0) {
        ayw_plain(w, "softcap");
        ayw_double_short(w, c->softcap);
    }
    if (c->alibi_max_bias != 0.0) {
        ayw_plain(w, "alibi_max_bias");
        ayw_double_short(w, c->alibi_max_bias);
    }
    if (c->sinks) {
        ayw_plain(w, "sinks");
        ayw_doubles(w, c->sinks, c->nsinks, 1);
    }
    if (c->chunk)
        ayw_kint(w, "chunk", c->chunk);
    if (c->segment_ids)
        write_ids(w, "segment_ids", c->segment_ids, c->batch, c->ids_len);
    if (c->block_ids)
        write_ids(w, "block_ids", c->block_ids, c->batch, c->ids_len);
}
