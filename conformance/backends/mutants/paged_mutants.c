/* paged_mutants.c — the paged mutants' kernel (paged_mutants.h): attnref_paged_check, then per
 * row a gather through the table with the mutant's one bug and attnref_sdpa over the gathered
 * keys with the query offset L_b - q_b; the append as attnref_paged_append with its bug.  With
 * no bug switched on this is the reference, bit for bit. */
#include "paged_mutants.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnref/dtype.h"
#include "attnref/sdpa.h"

#define BUG(n) (ATTNCONF_PAGED_MUTANT == (n))

static int64_t pages_for(int64_t n, int64_t p)
{
    return n / p + (n % p != 0);
}

/* Keys row b's kernel gathers (the true L_b, or the bug's count). */
static int64_t gathered_len(int64_t len, int64_t psz)
{
    const int64_t n = pages_for(len, psz);
    if (BUG(RPM_LAST_FULL) || BUG(RPM_STALE_TAIL))
        return n * psz; /* the whole last page */
    if (BUG(RPM_LAST_EMPTY) && len > 0)
        return (n - 1) * psz + len % psz; /* a full last page counts 0 */
    return len;
}

/* The table entry of position pos in row b. */
static int64_t page_of(const attnref_paged_args *a, int64_t pitch, int64_t b, int64_t pos,
                       int64_t psz)
{
    const int64_t e = BUG(RPM_BOUNDARY) ? (pos + 1) / psz : pos / psz;
    const int64_t pg = a->block_table[b * pitch + e];
    /* A wrong entry may be an unused one (-1, past the pool): a real kernel faults or reads
     * whatever is there; here it reads page 0 (the cases poison what a wrong page holds). */
    return pg < 0 || pg >= a->k_pages->shape[0] ? 0 : pg;
}

static void copy_el(unsigned char *dst, int64_t di, const attnref_tensor *t, int64_t si)
{
    const size_t es = attnref_dtype_size(t->dtype);
    memcpy(dst + (size_t)di * es, (const unsigned char *)t->data + (size_t)si * es, es);
}

int rpm_sdpa(const attnref_paged_args *a, attnref_tensor *out, attnref_diag *diag)
{
    int rc = attnref_paged_check(a, out, diag);
    if (rc != ATTNREF_OK)
        return rc;
    const attnref_tensor *q = a->q, *kp = a->k_pages, *vp = a->v_pages;
    const int64_t batch = q->shape[0], hq = q->shape[1], lq = q->shape[2], d = q->shape[3];
    const int64_t hkv = kp->shape[1], psz = kp->shape[2], dv = vp->shape[3];
    const size_t es = attnref_dtype_size(q->dtype);
    int64_t pitch = a->table_width, maxlen = 0;
    if (BUG(RPM_ROW)) {
        pitch = 1; /* vLLM's max_num_blocks_per_seq of this batch, not the table's width */
        for (int64_t b = 0; b < batch; b++)
            if (pages_for(a->seq_lens[b], psz) > pitch)
                pitch = pages_for(a->seq_lens[b], psz);
    }
    for (int64_t b = 0; b < batch; b++)
        if (gathered_len(a->seq_lens[b], psz) > maxlen)
            maxlen = gathered_len(a->seq_lens[b], psz);
    unsigned char *kb = malloc((size_t)(hkv * maxlen * d) * es + 1);
    unsigned char *vb = malloc((size_t)(hkv * maxlen * dv) * es + 1);
    if (!kb || !vb) {
        free(kb);
        free(vb);
        return ATTNREF_ENOMEM;
    }
    for (int64_t b = 0; b < batch && rc == ATTNREF_OK; b++) {
        const int64_t len = a->seq_lens[b], ql = a->query_lens ? a->query_lens[b] : lq;
        const int64_t glen = gathered_len(len, psz);
        int tail_bad = 0; /* a non-finite K or V in the tail the stale-tail kernel weights by 0 */
        for (int64_t h = 0; h < hkv; h++)
            for (int64_t p = 0; p < glen; p++) {
                const int64_t pg = page_of(a, pitch, b, p, psz), sl = p % psz;
                for (int64_t e = 0; e < d; e++) {
                    const int64_t si = pg * kp->strides[0] + h * kp->strides[1] +
                                       sl * kp->strides[2] + e * kp->strides[3];
                    copy_el(kb, (h * glen + p) * d + e, kp, si);
                    if (p >= len && !isfinite(attnref_load(kp->data, kp->dtype, si)))
                        tail_bad = 1;
                }
                for (int64_t e = 0; e < dv; e++) {
                    const int64_t si = pg * vp->strides[0] + h * vp->strides[1] +
                                       sl * vp->strides[2] + e * vp->strides[3];
                    copy_el(vb, (h * glen + p) * dv + e, vp, si);
                    if (p >= len && !isfinite(attnref_load(vp->data, vp->dtype, si)))
                        tail_bad = 1;
                }
            }
        attnref_tensor k, v, qb = *q, ob = *out;
        const int64_t klen = BUG(RPM_STALE_TAIL) ? len : glen; /* the tail is masked, not cut */
        const int64_t ks[4] = {1, hkv, klen, d}, vs[4] = {1, hkv, klen, dv};
        attnref_tensor_init(&k, klen ? kb : NULL, kp->dtype, 4, ks, NULL);
        attnref_tensor_init(&v, klen ? vb : NULL, kp->dtype, 4, vs, NULL);
        k.strides[1] = glen * d; /* the gather's head pitch */
        v.strides[1] = glen * dv;
        qb.data = (unsigned char *)q->data + (size_t)(b * q->strides[0]) * es;
        qb.shape[0] = 1;
        qb.shape[2] = ql;
        ob.data = (unsigned char *)out->data + (size_t)(b * out->strides[0]) * es;
        ob.shape[0] = 1;
        ob.shape[2] = ql;
        attnref_sdpa_params p = a->params;
        /* The kernel's own idea of the length places the queries too (L_b - q_b + i with its
         * L_b); the stale-tail kernel knows the true length and masks by it. */
        p.has_causal_offset = 1;
        p.causal_offset = klen - ql;
        rc = attnref_sdpa(&qb, &k, &v, NULL, &p, &ob, diag);
        for (int64_t h = 0; h < hq && rc == ATTNREF_OK; h++)
            for (int64_t i = 0; i < lq; i++)
                for (int64_t e = 0; e < dv; e++) {
                    const int64_t oi = b * out->strides[0] + h * out->strides[1] +
                                       i * out->strides[2] + e * out->strides[3];
                    if (i >= ql)
                        attnref_store(out->data, out->dtype, oi, 0.0);
                    else if (tail_bad && len > 0)
                        /* exp(s) * 0 with s = q.NaN, or 0 * inf in P.V: NaN. */
                        attnref_store(out->data, out->dtype, oi, NAN);
                }
    }
    free(kb);
    free(vb);
    return rc;
}

int rpm_append(const attnref_paged_append_args *a, attnref_diag *diag)
{
    if (!BUG(RPM_SHARED_WRITE))
        return attnref_paged_append(a, diag);
    /* The right slots, then every later row's tokens also through row 0's entries (a kernel
     * that forgot the row's table offset), over whatever row 0 holds there. */
    const int64_t batch = a->k && a->k->ndim == 4 ? a->k->shape[0] : 0;
    int rc = attnref_paged_append(a, diag); /* writes the right slots ... */
    if (rc != ATTNREF_OK || batch < 2)
        return rc;
    const int64_t s = a->k->shape[2], psz = a->k_pages->shape[2];
    const size_t es = attnref_dtype_size(a->k->dtype);
    for (int64_t b = 1; b < batch; b++) { /* ... and rows >= 1 also through row 0's entries */
        const int64_t n = a->new_lens ? a->new_lens[b] : s;
        for (int64_t t = 0; t < n; t++) {
            const int64_t pos = a->seq_lens[b] + t, e = pos / psz, sl = pos % psz;
            if (e >= a->table_width)
                continue;
            const int64_t pg = a->block_table[e];
            if (pg < 0 || pg >= a->k_pages->shape[0])
                continue;
            for (int64_t h = 0; h < a->k->shape[1]; h++) {
                for (int64_t x = 0; x < a->k->shape[3]; x++)
                    memcpy((unsigned char *)a->k_pages->data +
                               (size_t)(pg * a->k_pages->strides[0] + h * a->k_pages->strides[1] +
                                        sl * a->k_pages->strides[2] + x * a->k_pages->strides[3]) *
                                   es,
                           (const unsigned char *)a->k->data +
                               (size_t)(b * a->k->strides[0] + h * a->k->strides[1] +
                                        t * a->k->strides[2] + x * a->k->strides[3]) *
                                   es,
                           es);
                for (int64_t x = 0; x < a->v->shape[3]; x++)
                    memcpy((unsigned char *)a->v_pages->data +
                               (size_t)(pg * a->v_pages->strides[0] + h * a->v_pages->strides[1] +
                                        sl * a->v_pages->strides[2] + x * a->v_pages->strides[3]) *
                                   es,
                           (const unsigned char *)a->v->data +
                               (size_t)(b * a->v->strides[0] + h * a->v->strides[1] +
                                        t * a->v->strides[2] + x * a->v->strides[3]) *
                                   es,
                           es);
            }
        }
    }
    return ATTNREF_OK;
}
