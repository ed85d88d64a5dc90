/* paged.c — paged KV caches (SPEC.md clause 23): validation, the gather of one row's keys into
 * a contiguous buffer, and attention as attnref_sdpa over it (one statement of the semantics,
 * not a second one); the append's slot placement. */
#include "attnref/paged.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ceil(n / p) for n >= 0, p >= 1, without n + p - 1 overflowing. */
static int64_t pages_for(int64_t n, int64_t p)
{
    return n / p + (n % p != 0);
}

void attnref_paged_locate(const int32_t *block_table, int64_t table_width, int64_t page_size,
                          int64_t b, int64_t pos, int64_t *page, int64_t *slot)
{
    *page = block_table[b * table_width + pos / page_size];
    *slot = pos % page_size;
}

/* A rank-4 tensor descriptor that passes attnref_tensor_check. */
static int check4(const attnref_tensor *t, const char *name, attnref_diag *diag)
{
    if (!t)
        return attnref__fail(diag, ATTNREF_EINVAL, "%s: NULL tensor", name);
    int rc = attnref_tensor_check(t, name, diag);
    if (rc != ATTNREF_OK)
        return rc;
    if (t->ndim != 4)
        return attnref__fail(diag, ATTNREF_EINVAL, "%s: rank %" PRId32 ", expected 4", name,
                             t->ndim);
    return ATTNREF_OK;
}

/* The pools: rank 4, one float dtype `dt`, the same num_pages, Hkv and P, P >= 1, Hkv >= 1. */
static int check_pools(const attnref_tensor *kp, const attnref_tensor *vp, attnref_dtype dt,
                       attnref_diag *diag)
{
    int rc = check4(kp, "k_pages", diag);
    if (rc == ATTNREF_OK)
        rc = check4(vp, "v_pages", diag);
    if (rc != ATTNREF_OK)
        return rc;
    if (kp->dtype != dt || vp->dtype != dt)
        return attnref__fail(diag, ATTNREF_EDTYPE,
                             "k_pages/v_pages: dtypes %s/%s, expected %s (one dtype throughout)",
                             attnref_dtype_name(kp->dtype), attnref_dtype_name(vp->dtype),
                             attnref_dtype_name(dt));
    for (int d = 0; d < 3; d++)
        if (kp->shape[d] != vp->shape[d])
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "v_pages: extent %" PRId64 " on axis %d, k_pages has %" PRId64
                                 " (num_pages, Hkv, P must agree)",
                                 vp->shape[d], d, kp->shape[d]);
    if (kp->shape[2] < 1)
        return attnref__fail(diag, ATTNREF_EINVAL, "k_pages: page size P = 0");
    if (kp->shape[1] < 1)
        return attnref__fail(diag, ATTNREF_EINVAL, "k_pages: Hkv = 0");
    return ATTNREF_OK;
}

/* The block table of B rows: present, width >= 1, B * width indexable. */
static int check_table(const int32_t *table, int64_t width, int64_t batch, attnref_diag *diag)
{
    if (width < 1)
        return attnref__fail(diag, ATTNREF_EINVAL, "table_width: %" PRId64 ", expected >= 1",
                             width);
    if (batch > 0 && width > ATTNREF_MAX_NUMEL / batch)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "block_table: B * table_width beyond %" PRId64 " entries",
                             (int64_t)ATTNREF_MAX_NUMEL);
    if (batch > 0 && !table)
        return attnref__fail(diag, ATTNREF_EINVAL, "block_table: NULL");
    return ATTNREF_OK;
}

/* Entries [first, end) of row b hold pages in 0..num_pages-1. */
static int check_entries(const int32_t *table, int64_t width, int64_t b, int64_t first, int64_t end,
                         int64_t num_pages, attnref_diag *diag)
{
    for (int64_t e = first; e < end; e++) {
        const int64_t pg = table[b * width + e];
        if (pg < 0 || pg >= num_pages)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "block_table[%" PRId64 "][%" PRId64 "]: page %" PRId64
                                 " outside the pool 0..%" PRId64,
                                 b, e, pg, num_pages - 1);
    }
    return ATTNREF_OK;
}

int attnref_paged_check(const attnref_paged_args *a, const attnref_tensor *out, attnref_diag *diag)
{
    if (!a)
        return attnref__fail(diag, ATTNREF_EINVAL, "args: NULL");
    int rc = check4(a->q, "q", diag);
    if (rc != ATTNREF_OK)
        return rc;
    const attnref_tensor *q = a->q;
    if (!attnref_dtype_is_float(q->dtype))
        return attnref__fail(diag, ATTNREF_EDTYPE, "q: dtype %s is not a float",
                             attnref_dtype_name(q->dtype));
    rc = check_pools(a->k_pages, a->v_pages, q->dtype, diag);
    if (rc != ATTNREF_OK)
        return rc;
    const attnref_tensor *kp = a->k_pages, *vp = a->v_pages;
    const int64_t batch = q->shape[0], hq = q->shape[1], lq = q->shape[2], d = q->shape[3];
    const int64_t num_pages = kp->shape[0], hkv = kp->shape[1], psz = kp->shape[2];
    if (d < 1)
        return attnref__fail(diag, ATTNREF_EINVAL, "q: head dim D = 0");
    if (kp->shape[3] != d)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "k_pages: head dim %" PRId64 ", q has D = %" PRId64, kp->shape[3], d);
    if (hq % hkv != 0)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "q: Hq = %" PRId64 " is not a multiple of Hkv = %" PRId64, hq, hkv);
    if (out) {
        rc = check4(out, "out", diag);
        if (rc != ATTNREF_OK)
            return rc;
        if (out->dtype != q->dtype)
            return attnref__fail(diag, ATTNREF_EDTYPE, "out: dtype %s, q has %s",
                                 attnref_dtype_name(out->dtype), attnref_dtype_name(q->dtype));
        const int64_t want[4] = {batch, hq, lq, vp->shape[3]};
        for (int i = 0; i < 4; i++)
            if (out->shape[i] != want[i])
                return attnref__fail(diag, ATTNREF_EINVAL,
                                     "out: extent %" PRId64 " on axis %d, expected %" PRId64,
                                     out->shape[i], i, want[i]);
    }
    if (vp->shape[3] > 0 && hq * lq > ATTNREF_MAX_NUMEL / vp->shape[3])
        return attnref__fail(diag, ATTNREF_ERANGE,
                             "out: (B, Hq, Lq, Dv) beyond %" PRId64 " elements per row",
                             (int64_t)ATTNREF_MAX_NUMEL);
    const attnref_sdpa_params *p = &a->params;
    if (p->has_causal_offset || p->lengths || p->left_padding || p->segment_ids || p->block_ids)
        return attnref__fail(diag, ATTNREF_EINVAL,
                             "params: causal offset, lengths, left_padding, segment_ids and "
                             "block_ids are not paged parameters (the offset is L_b - q_b)");
    rc = check_table(a->block_table, a->table_width, batch, diag);
    if (rc != ATTNREF_OK)
        return rc;
    if (batch > 0 && !a->seq_lens)
        return attnref__fail(diag, ATTNREF_EINVAL, "seq_lens: NULL");
    for (int64_t b = 0; b < batch; b++) {
        const int64_t len = a->seq_lens[b];
        if (len < 0)
            return attnref__fail(diag, ATTNREF_EINVAL, "seq_lens[%" PRId64 "]: %" PRId64 " < 0", b,
                                 len);
        const int64_t used = pages_for(len, psz);
        if (used > a->table_width)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "seq_lens[%" PRId64 "]: %" PRId64 " keys need %" PRId64
                                 " pages of %" PRId64 ", the table row has %" PRId64,
                                 b, len, used, psz, a->table_width);
        if (len > 0 && hkv * ((d > vp->shape[3] ? d : vp->shape[3])) > ATTNREF_MAX_NUMEL / len)
            return attnref__fail(diag, ATTNREF_ERANGE,
                                 "seq_lens[%" PRId64 "]: %" PRId64
                                 " keys, a gathered row beyond %" PRId64 " elements",
                                 b, len, (int64_t)ATTNREF_MAX_NUMEL);
        const int64_t ql = a->query_lens ? a->query_lens[b] : lq;
        if (ql < 0 || ql > lq || ql > len)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "query_lens[%" PRId64 "]: %" PRId64 " outside 0..min(Lq = %" PRId64
                                 ", seq_lens = %" PRId64 ")",
                                 b, ql, lq, len);
        rc = check_entries(a->block_table, a->table_width, b, 0, used, num_pages, diag);
        if (rc != ATTNREF_OK)
            return rc;
    }
    /* The batch-wide terms, as attnref_sdpa judges them: over empty row views (nothing is
     * read), so a bad term is rejected before any row is written. */
    attnref_tensor q0 = *q, k0 = *kp, v0 = *vp;
    q0.shape[0] = k0.shape[0] = v0.shape[0] = 1;
    q0.shape[2] = k0.shape[2] = v0.shape[2] = 0;
    rc = attnref_sdpa_check(&q0, &k0, &v0, NULL, p, NULL, diag);
    if (rc != ATTNREF_OK)
        return rc;
    attnref__ok(diag);
    return ATTNREF_OK;
}

/* Copy row b's keys and values 0..len-1 into contiguous (1, Hkv, len, D) / (1, Hkv, len, Dv)
 * buffers, element bits unchanged, and describe them. */
static void gather(const attnref_paged_args *a, int64_t b, int64_t len, unsigned char *kbuf,
                   unsigned char *vbuf, attnref_tensor *k, attnref_tensor *v)
{
    const attnref_tensor *kp = a->k_pages, *vp = a->v_pages;
    const int64_t hkv = kp->shape[1], psz = kp->shape[2], d = kp->shape[3], dv = vp->shape[3];
    const size_t es = attnref_dtype_size(kp->dtype);
    for (int64_t h = 0; h < hkv; h++)
        for (int64_t p = 0; p < len; p++) {
            int64_t page, slot;
            attnref_paged_locate(a->block_table, a->table_width, psz, b, p, &page, &slot);
            for (int64_t e = 0; e < d; e++) {
                const int64_t src = page * kp->strides[0] + h * kp->strides[1] +
                                    slot * kp->strides[2] + e * kp->strides[3];
                memcpy(kbuf + (size_t)((h * len + p) * d + e) * es,
                       (const unsigned char *)kp->data + (size_t)src * es, es);
            }
            for (int64_t e = 0; e < dv; e++) {
                const int64_t src = page * vp->strides[0] + h * vp->strides[1] +
                                    slot * vp->strides[2] + e * vp->strides[3];
                memcpy(vbuf + (size_t)((h * len + p) * dv + e) * es,
                       (const unsigned char *)vp->data + (size_t)src * es, es);
            }
        }
    const int64_t ks[4] = {1, hkv, len, d}, vs[4] = {1, hkv, len, dv};
    attnref_tensor_init(k, len ? kbuf : NULL, kp->dtype, 4, ks, NULL);
    attnref_tensor_init(v, len ? vbuf : NULL, kp->dtype, 4, vs, NULL);
}

/* Both entry points: validate, then row by row gather and call attnref_sdpa (out) or
 * attnref_sdpa_f64 (out_f64). */
static int paged_impl(const attnref_paged_args *a, attnref_tensor *out, double *out_f64,
                      attnref_diag *diag)
{
    int rc = attnref_paged_check(a, out, diag);
    if (rc != ATTNREF_OK)
        return rc;
    const attnref_tensor *q = a->q;
    const int64_t batch = q->shape[0], hq = q->shape[1], lq = q->shape[2];
    const int64_t hkv = a->k_pages->shape[1], d = q->shape[3], dv = a->v_pages->shape[3];
    const size_t es = attnref_dtype_size(q->dtype);
    int64_t maxlen = 0;
    for (int64_t b = 0; b < batch; b++)
        if (a->seq_lens[b] > maxlen)
            maxlen = a->seq_lens[b];
    /* One row's gather: bounded by the pool, which holds at least these keys. */
    unsigned char *kbuf = malloc((size_t)(hkv * maxlen * d) * es + 1);
    unsigned char *vbuf = malloc((size_t)(hkv * maxlen * dv) * es + 1);
    double *row = out_f64 ? malloc((size_t)(hq * lq * dv) * sizeof(double) + 1) : NULL;
    if (!kbuf || !vbuf || (out_f64 && !row)) {
        free(kbuf);
        free(vbuf);
        free(row);
        return attnref__fail(diag, ATTNREF_ENOMEM, "paged: gather buffer of %" PRId64 " keys",
                             maxlen);
    }
    for (int64_t b = 0; b < batch && rc == ATTNREF_OK; b++) {
        const int64_t len = a->seq_lens[b];
        const int64_t ql = a->query_lens ? a->query_lens[b] : lq;
        attnref_tensor k, v;
        gather(a, b, len, kbuf, vbuf, &k, &v);
        /* Row b's first ql queries: the offset defaults to Lk - Lq = len - ql, the position of
         * query 0 in its sequence (bottom-right per sequence). */
        attnref_tensor qb = *q;
        qb.data = (unsigned char *)q->data + (size_t)(b * q->strides[0]) * es;
        qb.shape[0] = 1;
        qb.shape[2] = ql;
        if (out_f64) {
            rc = attnref_sdpa_f64(&qb, &k, &v, NULL, &a->params, row, diag);
            for (int64_t h = 0; h < hq && rc == ATTNREF_OK; h++)
                for (int64_t i = 0; i < lq; i++)
                    for (int64_t e = 0; e < dv; e++)
                        out_f64[((b * hq + h) * lq + i) * dv + e] =
                            i < ql ? row[(h * ql + i) * dv + e] : 0.0;
        } else {
            attnref_tensor ob = *out;
            ob.data = (unsigned char *)out->data + (size_t)(b * out->strides[0]) * es;
            ob.shape[0] = 1;
            ob.shape[2] = ql;
            rc = attnref_sdpa(&qb, &k, &v, NULL, &a->params, &ob, diag);
            for (int64_t h = 0; h < hq && rc == ATTNREF_OK; h++)
                for (int64_t i = ql; i < lq; i++) /* padding query rows: exactly +0 */
                    for (int64_t e = 0; e < dv; e++)
                        attnref_store(out->data, out->dtype,
                                      b * out->strides[0] + h * out->strides[1] +
                                          i * out->strides[2] + e * out->strides[3],
                                      0.0);
        }
    }
    free(kbuf);
    free(vbuf);
    free(row);
    if (rc == ATTNREF_OK)
        attnref__ok(diag);
    return rc;
}

int attnref_paged_sdpa(const attnref_paged_args *a, attnref_tensor *out, attnref_diag *diag)
{
    if (!out)
        return attnref__fail(diag, ATTNREF_EINVAL, "out: NULL tensor");
    return paged_impl(a, out, NULL, diag);
}

int attnref_paged_sdpa_f64(const attnref_paged_args *a, double *out_f64, attnref_diag *diag)
{
    if (!out_f64)
        return attnref__fail(diag, ATTNREF_EINVAL, "out_f64: NULL pointer");
    return paged_impl(a, NULL, out_f64, diag);
}

/* A writable pool must not alias two slots: a stride of 0 on an axis of extent > 1. */
static int check_no_alias(const attnref_tensor *t, const char *name, attnref_diag *diag)
{
    for (int i = 0; i < 4; i++)
        if (t->shape[i] > 1 && t->strides[i] == 0)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "%s: stride 0 on axis %d aliases the slots of a written pool",
                                 name, i);
    return ATTNREF_OK;
}

static int append_check(const attnref_paged_append_args *a, attnref_diag *diag)
{
    if (!a)
        return attnref__fail(diag, ATTNREF_EINVAL, "args: NULL");
    int rc = check4(a->k, "k", diag);
    if (rc == ATTNREF_OK)
        rc = check4(a->v, "v", diag);
    if (rc != ATTNREF_OK)
        return rc;
    const attnref_tensor *k = a->k, *v = a->v;
    if (!attnref_dtype_is_float(k->dtype) || v->dtype != k->dtype)
        return attnref__fail(diag, ATTNREF_EDTYPE, "k/v: dtypes %s/%s, expected one float dtype",
                             attnref_dtype_name(k->dtype), attnref_dtype_name(v->dtype));
    rc = check_pools(a->k_pages, a->v_pages, k->dtype, diag);
    if (rc == ATTNREF_OK)
        rc = check_no_alias(a->k_pages, "k_pages", diag);
    if (rc == ATTNREF_OK)
        rc = check_no_alias(a->v_pages, "v_pages", diag);
    if (rc != ATTNREF_OK)
        return rc;
    const attnref_tensor *kp = a->k_pages, *vp = a->v_pages;
    const int64_t batch = k->shape[0], s = k->shape[2], psz = kp->shape[2];
    const int64_t kw[4] = {batch, kp->shape[1], s, kp->shape[3]};
    const int64_t vw[4] = {batch, kp->shape[1], s, vp->shape[3]};
    for (int i = 0; i < 4; i++) {
        if (k->shape[i] != kw[i])
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "k: extent %" PRId64 " on axis %d, expected %" PRId64
                                 " (B, Hkv of the pool, S, D of the pool)",
                                 k->shape[i], i, kw[i]);
        if (v->shape[i] != vw[i])
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "v: extent %" PRId64 " on axis %d, expected %" PRId64
                                 " (B, Hkv, S as k, Dv of the pool)",
                                 v->shape[i], i, vw[i]);
    }
    rc = check_table(a->block_table, a->table_width, batch, diag);
    if (rc != ATTNREF_OK)
        return rc;
    if (batch > 0 && !a->seq_lens)
        return attnref__fail(diag, ATTNREF_EINVAL, "seq_lens: NULL");
    for (int64_t b = 0; b < batch; b++) {
        const int64_t len = a->seq_lens[b], n = a->new_lens ? a->new_lens[b] : s;
        if (len < 0)
            return attnref__fail(diag, ATTNREF_EINVAL, "seq_lens[%" PRId64 "]: %" PRId64 " < 0", b,
                                 len);
        if (n < 0 || n > s)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "new_lens[%" PRId64 "]: %" PRId64 " outside 0..S = %" PRId64, b, n,
                                 s);
        /* len + n cannot overflow once len is within the table (checked first). */
        if (pages_for(len, psz) > a->table_width || len > a->table_width * psz - n)
            return attnref__fail(diag, ATTNREF_EINVAL,
                                 "seq_lens[%" PRId64 "] + new_lens: %" PRId64 " + %" PRId64
                                 " keys need more than the %" PRId64 " pages of %" PRId64
                                 " of the table row",
                                 b, len, n, a->table_width, psz);
        if (n > 0) {
            rc = check_entries(a->block_table, a->table_width, b, len / psz,
                               pages_for(len + n, psz), kp->shape[0], diag);
            if (rc != ATTNREF_OK)
                return rc;
        }
    }
    return ATTNREF_OK;
}

/* One new token's destination: flat slot page * P + slot, and who writes it. */
typedef struct slot_use {
    int64_t flat, b, t;
} slot_use;

static int slot_use_cmp(const void *x, const void *y)
{
    const slot_use *a = x, *b = y;
    if (a->flat != b->flat)
        return a->flat < b->flat ? -1 : 1;
    return a->b != b->b ? (a->b < b->b ? -1 : 1) : (a->t > b->t) - (a->t < b->t);
}

/* Two new tokens of one call (two rows, or one row whose table lists a page twice) that map to
 * the same (page, slot) make the append's result depend on the write order: EINVAL (clause 23),
 * checked on the sorted destinations after every other check, before any write. */
static int check_distinct_slots(const attnref_paged_append_args *a, attnref_diag *diag)
{
    const int64_t batch = a->k->shape[0], s = a->k->shape[2], psz = a->k_pages->shape[2];
    int64_t total = 0;
    for (int64_t b = 0; b < batch; b++)
        total += a->new_lens ? a->new_lens[b] : s;
    if (total < 2)
        return ATTNREF_OK;
    slot_use *u = malloc((size_t)total * sizeof *u);
    if (!u)
        return attnref__fail(diag, ATTNREF_ENOMEM,
                             "cannot allocate the %" PRId64 " new tokens' slot list", total);
    int64_t i = 0;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t t = 0, n = a->new_lens ? a->new_lens[b] : s; t < n; t++, i++) {
            int64_t page, slot;
            attnref_paged_locate(a->block_table, a->table_width, psz, b, a->seq_lens[b] + t, &page,
                                 &slot);
            u[i] = (slot_use){page * psz + slot, b, t};
        }
    qsort(u, (size_t)total, sizeof *u, slot_use_cmp);
    int rc = ATTNREF_OK;
    for (i = 1; i < total && rc == ATTNREF_OK; i++)
        if (u[i].flat == u[i - 1].flat)
            rc = attnref__fail(diag, ATTNREF_EINVAL,
                               "new token %" PRId64 " of row %" PRId64 " and new token %" PRId64
                               " of row %" PRId64 " both map to page %" PRId64 " slot %" PRId64,
                               u[i - 1].t, u[i - 1].b, u[i].t, u[i].b, u[i].flat / psz,
                               u[i].flat % psz);
    free(u);
    return rc;
}

/* Copy token t of row b (all heads) of `src` into slot (page, slot) of `pool`. */
static void put(const attnref_tensor *src, attnref_tensor *pool, int64_t b, int64_t t, int64_t page,
                int64_t slot)
{
    const size_t es = attnref_dtype_size(src->dtype);
    for (int64_t h = 0; h < src->shape[1]; h++)
        for (int64_t e = 0; e < src->shape[3]; e++) {
            const int64_t from = b * src->strides[0] + h * src->strides[1] + t * src->strides[2] +
                                 e * src->strides[3];
            const int64_t to = page * pool->strides[0] + h * pool->strides[1] +
                               slot * pool->strides[2] + e * pool->strides[3];
            memcpy((unsigned char *)pool->data + (size_t)to * es,
                   (const unsigned char *)src->data + (size_t)from * es, es);
        }
}

int attnref_paged_append(const attnref_paged_append_args *a, attnref_diag *diag)
{
    int rc = append_check(a, diag);
    if (rc == ATTNREF_OK)
        rc = check_distinct_slots(a, diag);
    if (rc != ATTNREF_OK)
        return rc;
    const int64_t batch = a->k->shape[0], s = a->k->shape[2], psz = a->k_pages->shape[2];
    for (int64_t b = 0; b < batch; b++) {
        const int64_t n = a->new_lens ? a->new_lens[b] : s;
        for (int64_t t = 0; t < n; t++) {
            int64_t page, slot;
            attnref_paged_locate(a->block_table, a->table_width, psz, b, a->seq_lens[b] + t, &page,
                                 &slot);
            put(a->k, a->k_pages, b, t, page, slot);
            put(a->v, a->v_pages, b, t, page, slot);
        }
    }
    attnref__ok(diag);
    return ATTNREF_OK;
}
