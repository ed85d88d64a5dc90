/* sdpa_rows.c — kept keys and row check modes of an op: sdpa case (attncase/sdpa_rows.h). */
#include "attncase/sdpa_rows.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/sdpa.h"

/* Logical (contiguous) index of the broadcast mask element for (b, h, i, j). */
static int64_t mask_index(const acase_tensor *m, const int64_t idx[4])
{
    int64_t off = 0;
    for (int r = 0; r < m->ndim; r++) {
        int d = 4 - m->ndim + r;
        off = off * m->shape[r] + (m->shape[r] == 1 ? 0 : idx[d]);
    }
    return off;
}

attnref_sdpa_params acase_sdpa_params(const acase *c)
{
    const attnref_sdpa_params p = {.has_scale = c->has_scale,
                                   .scale = c->scale,
                                   .causal = c->causal,
                                   .has_causal_offset = c->has_causal_offset,
                                   .causal_offset = c->causal_offset,
                                   .window = c->window,
                                   .batch = c->batch,
                                   .lengths = c->lengths,
                                   .left_padding = c->left_padding,
                                   .softcap = c->softcap,
                                   .alibi_max_bias = c->alibi_max_bias,
                                   .sinks = c->sinks,
                                   .chunk = c->chunk,
                                   .segment_ids = c->segment_ids,
                                   .block_ids = c->block_ids};
    return p;
}

int acase_sdpa_keeps(const acase *c, int64_t b, int64_t h, int64_t i, int64_t j, double *add)
{
    /* The parameters' keep set is the reference's own statement (attnref_sdpa_key_kept). */
    const attnref_sdpa_params p = acase_sdpa_params(c);
    *add = 0.0;
    if (!attnref_sdpa_key_kept(&p, c->q.shape[2], c->k.shape[2], b, i, j))
        return 0;
    if (c->mask.present) {
        const int64_t idx[4] = {b, h, i, j};
        double m = attnref_load(c->mask.data, c->mask.dtype, mask_index(&c->mask, idx));
        if (c->mask.dtype == ATTNREF_BOOL)
            return m != 0.0;
        if (m == -INFINITY)
            return 0;
        *add = m;
    }
    return 1;
}

int64_t acase_sdpa_row_modes(const acase *c, uint8_t *mode)
{
    const int64_t B = c->q.shape[0], Hq = c->q.shape[1], Lq = c->q.shape[2];
    const int64_t Lk = c->k.shape[2];
    /* "Masked" level of an additive mask: the finite minimum (or anything as negative). */
    const double masked = c->mask.present && c->mask.dtype != ATTNREF_BOOL
                              ? attnref_dtype_finite_min(c->mask.dtype) / 2
                              : -INFINITY;
    int64_t special = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t i = 0; i < Lq; i++) {
                int64_t kept = 0, live = 0;
                for (int64_t j = 0; j < Lk; j++) {
                    double add;
                    if (acase_sdpa_keeps(c, b, h, i, j, &add)) {
                        kept++;
                        live += !(add <= masked);
                    }
                }
                const int64_t r = (b * Hq + h) * Lq + i;
                /* A sink outweighs keys at the finite minimum: such a row is (within the
                 * tolerance) 0, no longer implementation-defined (clause 22). */
                mode[r] = kept == 0                ? ACASE_CHECK_EXACT  /* clause 9 */
                          : live == 0 && !c->sinks ? ACASE_CHECK_FINITE /* clause 11 */
                                                   : ACASE_CHECK_CLOSE;
                special += mode[r] != ACASE_CHECK_CLOSE;
            }
    return special;
}

int acase_sdpa_set_row_checks(acase *c, char *err, size_t errlen)
{
    const int64_t nrows = c->q.shape[0] * c->q.shape[1] * c->q.shape[2];
    uint8_t *mode = calloc((size_t)nrows + 1, 1);
    if (!mode) {
        if (err && errlen)
            snprintf(err, errlen, "%s: out of memory", c->id);
        return -1;
    }
    int rc = 0;
    if (acase_sdpa_row_modes(c, mode) > 0) {
        rc = acase_expected_alloc_rows(&c->expected, err, errlen);
        if (rc == 0)
            memcpy(c->expected.row_check, mode, (size_t)c->expected.nrows);
    }
    free(mode);
    return rc;
}

int acase_sdpa_rows_rounded(acase *c, char *err, size_t errlen)
{
    acase_expected *e = &c->expected;
    if (!e->row_check && acase_expected_alloc_rows(e, err, errlen) != 0)
        return -1;
    const int64_t dv = e->shape[3];
    for (int64_t r = 0; r < e->nrows; r++) {
        if (e->row_check[r] != ACASE_CHECK_CLOSE)
            continue;
        e->row_check[r] = ACASE_CHECK_EXACT;
        for (int64_t x = 0; x < dv; x++) {
            double *v = &e->values[r * dv + x];
            unsigned char cell[8];
            attnref_store(cell, e->dtype, 0, *v);
            *v = attnref_load(cell, e->dtype, 0);
        }
    }
    return 0;
}
