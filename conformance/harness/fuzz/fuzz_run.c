/* fuzz_run.c — how `attnconf fuzz` runs a call and judges it (fuzz_run.h).
 *
 * A call runs as a golden case does (run_case): in the worker, which gets the call through
 * the shared mapping (hf_call_pack) and rebuilds the same case, or in process.  The output
 * comes back through the mapping (run.h run_capture_outputs) for the metamorphic checks.
 */
#define _DEFAULT_SOURCE /* strdup, with POSIX 2008 */

#include "fuzz_run.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

/* hw_config.get_case, in the worker: the call the parent put in the shared mapping, built
 * into its case here exactly as the parent built it (hf_build is deterministic). */
const acase *hf_worker_case(void *ud, size_t i)
{
    static acase *cur;
    (void)i;
    const hf_shared *sh = ud;
    acase_free(cur);
    cur = NULL;
    hf_call call;
    char id[ACASE_ID_MAX], err[256];
    if (hf_call_unpack(sh->buf, &call, id, sizeof id) != 0)
        return NULL;
    cur = hf_build(&call, id, err, sizeof err);
    hf_call_free(&call);
    return cur;
}

/* Run call c (built into case `built` by the caller) as a golden case runs: run_case, in
 * the worker (which rebuilds the case from the call) or in process.  Fills *r; the output
 * values, when usable, are in x->sh->out (x->sh->out_n of them, -1: none).  Returns 0, or -1
 * when the call could not be passed on (err set). */
static int hf_run(hf_ctx *x, const hf_call *call, const acase *built, hr_result *r, char *err,
                  size_t errlen)
{
    x->sh->out_n = -1;
    run_result_begin(&x->rn, built->id, r);
    if (!x->isolated) {
        run_case(&x->rn, built, r);
        return 0;
    }
    if (!hf_call_pack(call, built->id, x->sh->buf, sizeof x->sh->buf)) {
        snprintf(err, errlen, "%s: the call is over the %zu-byte shared buffer", built->id,
                 sizeof x->sh->buf);
        return -1;
    }
    hw_hello hello;
    if (x->w.pid == 0 && (hw_start(&x->w, &x->wc, &hello) != 0 || !hello.ok)) {
        r->status = HR_CRASH;
        snprintf(r->message, sizeof r->message, "cannot restart the worker: %.450s", hello.err);
        return 0;
    }
    hw_run(&x->w, &x->wc, x->seq++, r);
    if (r->status == HR_ERROR && !r->message[0]) { /* the worker could not build it */
        snprintf(err, errlen, "%s: the worker could not rebuild the call", built->id);
        return -1;
    }
    return 0;
}

/* ---- checks ---------------------------------------------------------------------------- */

/* Differential check of one call: 1 failing (*r bad), 0 passing, 2 not run (unsupported, or a
 * capability the call needs is missing), -1 internal error. */
int hf_check_call(hf_ctx *x, const hf_call *call, const char *id, hr_result *r, acase **keep,
                  char *err, size_t errlen)
{
    acase *c = hf_build(call, id, err, errlen);
    if (!c)
        return -1;
    if (c->requires & ~x->caps) {
        acase_free(c);
        return 2;
    }
    if (hf_run(x, call, c, r, err, errlen) != 0) {
        acase_free(c);
        return -1;
    }
    if (keep)
        *keep = c;
    else
        acase_free(c);
    if (r->status == HR_NOT_SUPPORTED || r->status == HR_UNEXPRESSIBLE)
        return 2;
    if (x->meta_only && r->status == HR_FAIL)
        return 0;
    return hr_status_is_bad(r->status) ? 1 : 0;
}

/* |a - d| within the sum of both bounds (SPEC clause 13: ulps at the value plus the row's
 * absolute term), the row modes of the base case applied: an EXACT row must match exactly, a
 * FINITE row only be finite on both sides. */
static int hf_meta_close(double a, double d, attnref_dtype dt, double ulps, double atol, int mode)
{
    if (mode == ACASE_CHECK_FINITE)
        return isfinite(a) && isfinite(d);
    if (isnan(a) || isnan(d))
        return isnan(a) && isnan(d);
    if (isinf(a) || isinf(d) || mode == ACASE_CHECK_EXACT)
        return a == d;
    return fabs(a - d) <= ulps * attnref_dtype_ulp(a, dt) + atol;
}

/* Metamorphic check `rel` of a call.  Returns 1 failing (*f filled; a derived call failing its
 * own differential check counts too), 0 passing, 2 not applicable / not run, -1 internal
 * error.  With `write_dir`, the failing pair is written there as cases (the derived calls
 * with the backend's own base output as expected values). */
int hf_check_meta(hf_ctx *x, int rel, uint64_t pick, const hf_call *base, const char *id,
                  hf_fail *f, const char *write_dir, char written[][PATH_MAX], int *nw, char *err,
                  size_t errlen)
{
    hf_call d[2];
    memset(d, 0, sizeof d);
    int n = 0;
    int rc = hf_meta_derive(rel, base, pick, d, &n);
    if (rc != 0)
        return rc < 0 ? -1 : 2;
    for (int k = 0; k < n; k++) /* GQA repetition multiplies K/V: keep the calls cheap */
        if (d[k].B * d[k].Hkv * d[k].Lk * (d[k].D > d[k].Dv ? d[k].D : d[k].Dv) > HF_META_MAX_KV) {
            for (int j = 0; j < n; j++)
                hf_call_free(&d[j]);
            return 2;
        }
    hr_result r;
    acase *bc = NULL, *dc[2] = {NULL, NULL};
    double *base_out = NULL, *dout[2] = {NULL, NULL};
    uint8_t *src_call = NULL;
    int64_t *src_index = NULL;
    int result = 2;
    char bid[ACASE_ID_MAX];
    snprintf(bid, sizeof bid, "%s.base", id);
    rc = hf_check_call(x, base, bid, &r, &bc, err, errlen);
    if (rc != 0 || x->sh->out_n < 0) {
        result = rc == 1 ? 2 : rc; /* a failing base is the differential check's business */
        goto done;
    }
    const int64_t bn = x->sh->out_n;
    if (!(base_out = malloc((size_t)(bn + 1) * sizeof *base_out)))
        goto oom;
    memcpy(base_out, x->sh->out, (size_t)bn * sizeof *base_out);
    for (int k = 0; k < n; k++) {
        char did[ACASE_ID_MAX];
        snprintf(did, sizeof did, "%s.%s%d", id, hf_meta_name(rel), k);
        rc = hf_check_call(x, &d[k], did, &r, &dc[k], err, errlen);
        if (rc == 1) {
            f->meta = rel;
            f->status = r.status;
            f->pick = pick;
            snprintf(f->message, sizeof f->message, "derived call %.100s: %s %s", did,
                     hr_status_name(r.status), r.message);
            result = 1;
            goto done;
        }
        if (rc != 0 || x->sh->out_n < 0) {
            result = rc;
            goto done;
        }
        if (!(dout[k] = malloc((size_t)(x->sh->out_n + 1) * sizeof *dout[k])))
            goto oom;
        memcpy(dout[k], x->sh->out, (size_t)x->sh->out_n * sizeof *dout[k]);
    }
    if (hf_meta_map(rel, base, pick, d, &src_call, &src_index) != 0)
        goto oom;
    result = 0;
    const int64_t Dv = base->Dv;
    for (int64_t e = 0; e < bn && result == 0; e++) {
        if (src_call[e] > 1)
            continue;
        const int k = src_call[e];
        const int64_t row = Dv ? e / Dv : 0, drow = Dv ? src_index[e] / Dv : 0;
        const int mode = bc->expected.row_check ? bc->expected.row_check[row] : ACASE_CHECK_CLOSE;
        const double a = base_out[e], v = dout[k][src_index[e]];
        if (!hf_meta_close(a, v, base->dt, bc->ulps + dc[k]->ulps,
                           bc->row_atol[row] + dc[k]->row_atol[drow], mode)) {
            f->meta = rel;
            f->status = HR_FAIL;
            f->pick = pick;
            if (mode == ACASE_CHECK_FINITE)
                snprintf(f->message, sizeof f->message,
                         "metamorphic %s: row %lld must be finite: base output %.9g at flat index "
                         "%lld, the derived call gives %.9g",
                         hf_meta_name(rel), (long long)row, a, (long long)e, v);
            else
                snprintf(f->message, sizeof f->message,
                         "metamorphic %s: base output %.9g at flat index %lld, the derived call "
                         "gives %.9g (bound %.3g)",
                         hf_meta_name(rel), a, (long long)e, v,
                         bc->ulps * attnref_dtype_ulp(a, base->dt) + bc->row_atol[row] +
                             dc[k]->ulps * attnref_dtype_ulp(a, base->dt) + dc[k]->row_atol[drow]);
            result = 1;
        }
    }
    if (result == 1 && write_dir) {
        /* The derived calls with this backend's base output as the expected values: `attnconf
         * run` then fails them exactly as the check did (the bound is the sum of both). */
        for (int k = 0; k < n; k++) {
            for (int64_t e = 0; e < bn; e++)
                if (src_call[e] == k)
                    dc[k]->expected.values[src_index[e]] = base_out[e];
            for (int64_t e = 0; e < bn; e += Dv ? Dv : 1) {
                if (src_call[e] != k || !Dv)
                    continue;
                dc[k]->row_atol[src_index[e] / Dv] += bc->row_atol[e / Dv];
            }
            dc[k]->ulps += bc->ulps;
            char desc[2048];
            snprintf(desc, sizeof desc,
                     "attnconf fuzz, metamorphic %s: expected values are the "
                     "backend's own output of the base call %s (that run's output), with the sum "
                     "of both calls' clause 13 bounds; %s",
                     hf_meta_name(rel), bc->id, dc[k]->description);
            free(dc[k]->description);
            dc[k]->description = strdup(desc);
            acase *w[2] = {bc, dc[k]};
            for (int j = k ? 1 : 0; j < 2; j++) {
                if (!w[j]->description)
                    continue;
                snprintf(written[*nw], PATH_MAX, "%s/%s.yaml", write_dir, w[j]->id);
                FILE *fp = fopen(written[*nw], "w");
                if (!fp || acase_write(w[j], fp, err, errlen) != 0) {
                    if (fp)
                        fclose(fp);
                    result = -1;
                    goto done;
                }
                if (fclose(fp) == 0)
                    (*nw)++;
            }
        }
    }
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
    result = -1;
done:
    acase_free(bc);
    for (int k = 0; k < 2; k++) {
        acase_free(dc[k]);
        free(dout[k]);
        hf_call_free(&d[k]);
    }
    free(base_out);
    free(src_call);
    free(src_index);
    return result;
}

/* Does the call still fail as f says? */
static int hf_still_fails(hf_ctx *x, const hf_call *call, const char *id, const hf_fail *f)
{
    char err[512];
    if (f->meta < 0) {
        hr_result r;
        int rc = hf_check_call(x, call, id, &r, NULL, err, sizeof err);
        return rc == 1 && r.status == f->status;
    }
    hf_fail g;
    memset(&g, 0, sizeof g);
    return hf_check_meta(x, f->meta, f->pick, call, id, &g, NULL, NULL, NULL, err, sizeof err) == 1;
}

/* Greedy shrinking: take the first candidate that still fails, start over from it; stop when
 * no candidate fails or the budget is spent.  *best is replaced by the smallest failure. */
void hf_shrink(hf_ctx *x, hf_call *best, const char *id, const hf_fail *f, int *steps,
               int *attempts)
{
    const double t0 = mono_now();
    *steps = *attempts = 0;
    for (int k = 0;; k++) {
        if (*attempts >= HF_SHRINK_ATTEMPTS || mono_now() - t0 > HF_SHRINK_SECONDS)
            return;
        hf_call cand;
        int rc = hf_shrink_candidate(best, k, &cand);
        if (rc == 2 || rc < 0)
            return;
        if (rc == 1)
            continue;
        ++*attempts;
        if (hf_still_fails(x, &cand, id, f)) {
            hf_call_free(best);
            *best = cand;
            ++*steps;
            k = -1;
        } else {
            hf_call_free(&cand);
        }
    }
}
