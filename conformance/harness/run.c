/* run.c — run one loaded case on a loaded backend and classify the outcome.
 *
 * The harness owns every buffer it hands to a backend: inputs are laid out as the case says
 * (contiguous BHLD, or a (B,L,H,D) buffer seen through permuted strides); the output buffer has
 * 8 bytes per element (room for a wrong, wider dtype) and is prefilled with 0xFF bytes, a NaN in
 * every float dtype, so a backend that leaves elements unwritten fails instead of passing on
 * leftovers.  Sizes are bounded by the case limits
 * (ACASE_MAX_TENSOR_NUMEL) before anything is allocated.
 */
#define _POSIX_C_SOURCE 200809L

#include "run.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compare.h"

/* ---- names ---------------------------------------------------------------------------- */

const char *hr_status_name(hr_status s)
{
    switch (s) {
    case HR_PASS: return "PASS";
    case HR_EXPECTED_ERROR: return "EXPECTED_ERROR";
    case HR_NOT_SUPPORTED: return "NOT_SUPPORTED";
    case HR_FAIL: return "FAIL";
    case HR_INCORRECT_DTYPE: return "INCORRECT_DTYPE";
    case HR_ERROR: return "ERROR";
    default: return "UNKNOWN";
    }
}

int hr_status_is_bad(hr_status s)
{
    return s == HR_FAIL || s == HR_INCORRECT_DTYPE || s == HR_ERROR;
}

int hr_format_parse(const char *name, hr_format *out)
{
    static const struct { const char *name; hr_format fmt; } tab[] = {
        {"text", HR_FMT_TEXT}, {"tap", HR_FMT_TAP}, {"junit", HR_FMT_JUNIT}, {"json", HR_FMT_JSON}};
    if (!name)
        return -1;
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strcmp(name, tab[i].name) == 0) {
            *out = tab[i].fmt;
            return 0;
        }
    return -1;
}

const char *hr_code_name(int code)
{
    switch (code) {
    case ATTNCONF_OK: return "ok";
    case ATTNCONF_EINVAL: return "einval";
    case ATTNCONF_EDTYPE: return "edtype";
    case ATTNCONF_ENOMEM: return "enomem";
    case ATTNCONF_ENOTSUP: return "enotsup";
    case ATTNCONF_EBACKEND: return "ebackend";
    default: return "unknown";
    }
}

/* A dtype name for messages; an out-of-range value (a confused backend) is shown as a number. */
static const char *hr_dtype_text(int32_t dt, char *buf, size_t n)
{
    if (dt >= ATTNCONF_F32 && dt <= ATTNCONF_BOOL)
        return attnref_dtype_name((attnref_dtype)dt);
    snprintf(buf, n, "#%d (not an attnconf_dtype)", (int)dt);
    return buf;
}

int hr_shell_quote(const char *s, char *out, size_t n)
{
    if (n == 0)
        return -1;
    int safe = s[0] != '\0';
    for (const char *c = s; *c && safe; c++)
        safe = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
               strchr("_./:=+,@%-", *c) != NULL;
    if (safe) {
        int w = snprintf(out, n, "%s", s);
        return w >= 0 && (size_t)w < n ? 0 : -1;
    }
    size_t j = 0;
    out[j++] = '\'';
    const char *c = s;
    for (; *c && j + 5 < n; c++) {
        if (*c == '\'') {
            memcpy(out + j, "'\\''", 4);
            j += 4;
        } else {
            out[j++] = *c;
        }
    }
    int whole = !*c && j + 1 < n;
    if (j + 1 < n)
        out[j++] = '\'';
    out[j < n ? j : n - 1] = '\0';
    return whole ? 0 : -1;
}

/* Append the words to the command in buf (cap bytes, *len used), each shell-quoted when
 * `quote`; returns -1 once anything did not fit (the command is then unusable). */
static int hr_cmd_add(char *buf, size_t cap, size_t *len, const char *word, int quote)
{
    if (*len >= cap)
        return -1;
    if (!quote) {
        int w = snprintf(buf + *len, cap - *len, "%s", word);
        if (w < 0 || (size_t)w >= cap - *len)
            return -1;
        *len += (size_t)w;
        return 0;
    }
    if (hr_shell_quote(word, buf + *len, cap - *len) != 0)
        return -1;
    *len += strlen(buf + *len);
    return 0;
}

void hr_result_begin(const hr_runner *rn, const char *id, hr_result *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", id);
    acase_family(id, r->family, sizeof r->family);
    r->first_bad = -1;
    char *cmd = r->rerun;
    size_t cap = sizeof r->rerun, len = 0;
    int bad = hr_cmd_add(cmd, cap, &len, rn->argv0 ? rn->argv0 : "attnconf", 1);
    bad |= hr_cmd_add(cmd, cap, &len, " run --backend ", 0);
    bad |= hr_cmd_add(cmd, cap, &len, rn->backend_arg ? rn->backend_arg : "", 1);
    for (size_t i = 0; i < rn->n_options && rn->options; i++) {
        char kv[sizeof r->rerun];
        int w = snprintf(kv, sizeof kv, "%s=%s", rn->options[i].key, rn->options[i].value);
        bad |= w < 0 || (size_t)w >= sizeof kv;
        bad |= hr_cmd_add(cmd, cap, &len, " --backend-option ", 0);
        bad |= hr_cmd_add(cmd, cap, &len, kv, 1);
    }
    if (rn->timeout_arg) {
        bad |= hr_cmd_add(cmd, cap, &len, " --timeout ", 0);
        bad |= hr_cmd_add(cmd, cap, &len, rn->timeout_arg, 1);
    }
    bad |= hr_cmd_add(cmd, cap, &len, " --cases ", 0);
    bad |= hr_cmd_add(cmd, cap, &len, rn->cases_dir ? rn->cases_dir : "", 1);
    bad |= hr_cmd_add(cmd, cap, &len, " --filter ", 0);
    /* The filter is always single-quoted: it is a glob and must reach fnmatch verbatim. */
    if (strchr(id, '\'')) {
        bad |= hr_cmd_add(cmd, cap, &len, id, 1);
    } else {
        bad |= hr_cmd_add(cmd, cap, &len, "'", 0);
        bad |= hr_cmd_add(cmd, cap, &len, id, 0);
        bad |= hr_cmd_add(cmd, cap, &len, "'", 0);
    }
    if (bad)
        r->rerun[0] = '\0'; /* a truncated command would run something else: give none */
}

/* ---- helpers -------------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static void hr_set(hr_result *r, hr_status s,
                                                         const char *fmt, ...)
{
    r->status = s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
    /* The message is one line (text/TAP outputs rely on it); a backend's last_error might not
     * be. */
    for (char *c = r->message; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
}

static double hr_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Element count of a shape, or -1 if it is invalid or exceeds the case limit (so the harness
 * never makes a huge allocation for a malformed or hostile case). */
static int64_t hr_numel_capped(int32_t ndim, const int64_t *shape)
{
    int64_t n;
    return acase_numel(ndim, shape, &n, NULL, 0) == 0 ? n : -1;
}

static void hr_contiguous_strides(int32_t ndim, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int32_t d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

/* Describe a case input for the backend.  BHLD (and any non-rank-4 tensor) is passed in place;
 * BLHD is copied into a new (B,L,H,D) buffer (*owned, freed by the caller) and described with
 * strides {L*H*D, D, H*D, 1}.  Returns 0, or -1 on allocation failure. */
static int hr_describe(const acase_tensor *t, attnconf_tensor *out, void **owned)
{
    memset(out, 0, sizeof *out);
    *owned = NULL;
    out->dtype = (int32_t)t->dtype;
    out->ndim = t->ndim;
    for (int32_t d = 0; d < t->ndim && d < 4; d++)
        out->shape[d] = t->shape[d];
    if (t->layout != ACASE_LAYOUT_BLHD || t->ndim != 4) {
        out->data = t->data;
        hr_contiguous_strides(t->ndim, t->shape, out->strides);
        return 0;
    }
    int64_t B = t->shape[0], H = t->shape[1], L = t->shape[2], D = t->shape[3];
    size_t es = attnref_dtype_size(t->dtype);
    unsigned char *buf = malloc((size_t)(t->numel > 0 ? t->numel : 1) * (es ? es : 1));
    if (!buf)
        return -1;
    const unsigned char *src = t->data;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t l = 0; l < L; l++) {
                int64_t from = ((b * H + h) * L + l) * D;
                int64_t to = ((b * L + l) * H + h) * D;
                memcpy(buf + (size_t)to * es, src + (size_t)from * es, (size_t)D * es);
            }
    out->data = buf;
    out->strides[0] = L * H * D;
    out->strides[1] = D;
    out->strides[2] = H * D;
    out->strides[3] = 1;
    *owned = buf;
    return 0;
}

/* "(2,4,8,16)" */
static void hr_shape_text(int32_t ndim, const int64_t *shape, char *buf, size_t n)
{
    size_t j = 0;
    j += (size_t)snprintf(buf, n, "(");
    for (int32_t d = 0; d < ndim && d < 4 && j < n; d++)
        j += (size_t)snprintf(buf + j, n - j, "%s%lld", d ? "," : "", (long long)shape[d]);
    if (j < n)
        snprintf(buf + j, n - j, ")");
}

/* Classify the backend's return code.  Returns 1 if classification is complete (an error
 * case, or a backend failure), 0 if the output must now be checked. */
static int hr_classify_rc(const hr_runner *rn, const acase *c, int rc, hr_result *r)
{
    const attnconf_backend *be = rn->backend->be;
    const char *why = rc != ATTNCONF_OK ? be->last_error(rn->backend->ctx) : "";
    if (!why)
        why = "";
    /* An exec: adapter that died, hung or broke the protocol produced no answer at all: that
     * is never a correct rejection, whatever the case expects. */
    if (rc == HB_ETRANSPORT) {
        hr_set(r, HR_ERROR, "adapter failure: %s", why);
        return 1;
    }
    int want = c->expected.error;
    if (want != 0) {
        if (rc == want)
            hr_set(r, HR_EXPECTED_ERROR, "rejected with %s as required: %s", hr_code_name(rc),
                   why);
        else if (rc == ATTNCONF_OK)
            hr_set(r, HR_FAIL, "accepted a case that must be rejected (expected %s)",
                   hr_code_name(want));
        else
            hr_set(r, HR_FAIL, "rejected with %s (%d), expected %s (%d): %s", hr_code_name(rc), rc,
                   hr_code_name(want), want, why);
        return 1;
    }
    if (rc == ATTNCONF_OK)
        return 0;
    if (rc == ATTNCONF_ENOTSUP)
        hr_set(r, HR_NOT_SUPPORTED, "backend returned enotsup: %s", why);
    else
        hr_set(r, HR_ERROR, "backend returned %s (%d): %s", hr_code_name(rc), rc, why);
    return 1;
}

/* Compare a produced tensor with the expected values and fill the statistics.  Sets PASS or
 * FAIL unless `keep_status` (an INCORRECT_DTYPE whose values are still worth reporting). */
static void hr_check_values(const acase *c, const attnconf_tensor *t, int exact, int keep_status,
                            hr_result *r)
{
    _Static_assert((int)HC_ROW_CLOSE == (int)ACASE_CHECK_CLOSE &&
                       (int)HC_ROW_EXACT == (int)ACASE_CHECK_EXACT &&
                       (int)HC_ROW_FINITE == (int)ACASE_CHECK_FINITE,
                   "compare.h row modes must be the case format's");
    /* Per-row check modes (expected.row_checks): one per row of the last extent (Dv). */
    const uint8_t *rows = c->expected.row_check;
    int64_t row_len = t->ndim >= 1 ? t->shape[t->ndim - 1] : 0, nrows = 1;
    for (int32_t d = 0; rows && d + 1 < t->ndim; d++)
        nrows *= t->shape[d];
    if (rows && (t->ndim < 1 || nrows != c->expected.nrows)) {
        if (!keep_status)
            hr_set(r, HR_ERROR, "case: row_checks has %lld rows, the output has %lld",
                   (long long)c->expected.nrows, (long long)nrows);
        return;
    }
    hc_stats st;
    int ok = hc_compare_rows(t->data, (attnref_dtype)t->dtype, t->ndim, t->shape, t->strides,
                             c->expected.values, c->atol, c->rtol, exact, rows, row_len, &st);
    r->has_stats = 1;
    r->max_abs_err = st.max_abs_err;
    r->max_rel_err = st.max_rel_err;
    r->first_bad = st.first_bad;
    r->bad_ndim = st.ndim;
    memcpy(r->bad_index, st.bad_index, sizeof r->bad_index);
    r->bad_got = st.bad_got;
    r->bad_expected = st.bad_expected;
    if (keep_status)
        return;
    if (ok) {
        hr_set(r, HR_PASS, "%s", "");
        return;
    }
    /* The first bad element and the error maxima are in the statistics fields (every output
     * format prints them); the message says how widespread the failure is, or which row check
     * (exact / finite) the first bad element broke. */
    char msg[sizeof r->message];
    hc_failure_message(&st, c->atol, c->rtol, exact, msg, sizeof msg);
    hr_set(r, HR_FAIL, "%s", msg);
}

/* Check the output descriptor the backend handed back and, if it is usable, compare the values.
 * The buffer must be the same, the shape unchanged, the strides inside the buffer (they may
 * change: the backend may write another layout) and the dtype the expected one.  A wrong but
 * known dtype is INCORRECT_DTYPE with the value statistics attached, so a report can tell a
 * pure upcast (right values) from a wrong result. */
static void hr_check_output(const acase *c, const attnconf_tensor *before,
                            const attnconf_tensor *after, size_t capacity, int exact,
                            hr_result *r)
{
    char b1[32], b2[32];
    if (after->data != before->data) {
        hr_set(r, HR_FAIL, "backend replaced the output data pointer");
        return;
    }
    int wrong_dtype = after->dtype != (int32_t)c->expected.dtype;
    if (wrong_dtype)
        hr_set(r, HR_INCORRECT_DTYPE, "output dtype %s, expected %s",
               hr_dtype_text(after->dtype, b1, sizeof b1),
               hr_dtype_text((int32_t)c->expected.dtype, b2, sizeof b2));
    size_t es = (after->dtype >= ATTNCONF_F32 && after->dtype <= ATTNCONF_BOOL)
                    ? attnref_dtype_size((attnref_dtype)after->dtype)
                    : 0;
    if (es == 0)
        return; /* an unknown dtype cannot be read */

    int same = after->ndim == before->ndim;
    for (int32_t d = 0; same && d < before->ndim; d++)
        same = after->shape[d] == before->shape[d];
    if (!same) {
        if (wrong_dtype)
            return;
        char s1[96], s2[96];
        hr_shape_text(after->ndim < 0 || after->ndim > 4 ? 0 : after->ndim, after->shape, s1,
                      sizeof s1);
        hr_shape_text(before->ndim, before->shape, s2, sizeof s2);
        hr_set(r, HR_FAIL, "backend changed the output shape to %s (rank %d), expected %s", s1,
               (int)after->ndim, s2);
        return;
    }
    int64_t last = 0, numel = 1;
    for (int32_t d = 0; d < after->ndim; d++) {
        numel *= after->shape[d];
        if (after->strides[d] < 0 || after->strides[d] > ACASE_MAX_TENSOR_NUMEL * 8) {
            if (!wrong_dtype)
                hr_set(r, HR_FAIL, "backend set output stride %d to %lld", (int)d,
                       (long long)after->strides[d]);
            return;
        }
        if (after->shape[d] > 0)
            last += (after->shape[d] - 1) * after->strides[d];
    }
    if (numel > 0 && (uint64_t)(last + 1) * es > capacity) {
        if (!wrong_dtype)
            hr_set(r, HR_FAIL, "backend output strides address past the %zu-byte buffer",
                   capacity);
        return;
    }
    hr_check_values(c, after, exact, wrong_dtype, r);
}

/* ---- the two ops ---------------------------------------------------------------------- */

static void hr_run_sdpa(const hr_runner *rn, const acase *c, hr_result *r)
{
    const hb_backend *hb = rn->backend;
    attnconf_tensor q, k, v, mask;
    void *own[4] = {NULL, NULL, NULL, NULL};
    void *outbuf = NULL;
    if (hr_describe(&c->q, &q, &own[0]) || hr_describe(&c->k, &k, &own[1]) ||
        hr_describe(&c->v, &v, &own[2]) ||
        (c->mask.present && hr_describe(&c->mask, &mask, &own[3]))) {
        hr_set(r, HR_ERROR, "harness: out of memory laying out the inputs");
        goto done;
    }

    /* Output (B,Hq,Lq,Dv): the expected shape when there is one; for a must-reject case the
     * shape q and v imply (1 where they are not rank 4), since the backend must reject before
     * writing anyway. */
    attnconf_tensor out;
    memset(&out, 0, sizeof out);
    out.ndim = 4;
    out.dtype = (int32_t)c->q.dtype;
    if (c->expected.error == 0) {
        out.ndim = c->expected.ndim;
        for (int32_t d = 0; d < c->expected.ndim && d < 4; d++)
            out.shape[d] = c->expected.shape[d];
    } else {
        for (int d = 0; d < 3; d++)
            out.shape[d] = c->q.ndim == 4 ? c->q.shape[d] : 1;
        out.shape[3] = c->v.ndim == 4 ? c->v.shape[3] : 1;
    }
    int64_t numel = hr_numel_capped(out.ndim, out.shape);
    if (numel < 0) {
        char s[96];
        hr_shape_text(out.ndim, out.shape, s, sizeof s);
        hr_set(r, HR_ERROR, "case: output shape %s is invalid or over the %lld-element limit", s,
               (long long)ACASE_MAX_TENSOR_NUMEL);
        goto done;
    }
    hr_contiguous_strides(out.ndim, out.shape, out.strides);
    /* 8 bytes per element: room for any dtype the backend might wrongly produce (an f64
     * upcast included), so a dtype mistake is reported as INCORRECT_DTYPE, not a crash. */
    size_t capacity = (size_t)(numel > 0 ? numel : 1) * 8;
    outbuf = malloc(capacity);
    if (!outbuf) {
        hr_set(r, HR_ERROR, "harness: out of memory for a %zu-byte output", capacity);
        goto done;
    }
    memset(outbuf, 0xFF, capacity); /* 0xFF.. is a NaN in f32, f16 and bf16 */
    out.data = outbuf;
    attnconf_tensor before = out;

    attnconf_sdpa_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.q = &q;
    a.k = &k;
    a.v = &v;
    a.mask = c->mask.present ? &mask : NULL;
    a.causal = c->causal;
    a.has_causal_offset = c->has_causal_offset;
    a.causal_offset = c->causal_offset;
    a.has_scale = c->has_scale;
    a.scale = c->scale;
    a.out = &out;
    a.out_capacity = capacity;

    double t0 = hr_now();
    int rc = hb->be->sdpa(hb->ctx, &a);
    r->seconds = hr_now() - t0;

    if (hr_classify_rc(rn, c, rc, r))
        goto done;
    hr_check_output(c, &before, &out, capacity, 0, r);

done:
    for (int i = 0; i < 4; i++)
        free(own[i]);
    free(outbuf);
}

static void hr_run_mask(const hr_runner *rn, const acase *c, hr_result *r)
{
    const hb_backend *hb = rn->backend;
    attnconf_tensor keep;
    memset(&keep, 0, sizeof keep);
    keep.dtype = ATTNCONF_BOOL;
    keep.ndim = 4;
    if (c->expected.error == 0) {
        keep.ndim = c->expected.ndim;
        for (int32_t d = 0; d < c->expected.ndim && d < 4; d++)
            keep.shape[d] = c->expected.shape[d];
    } else {
        /* A must-reject case: the shape its parameters imply, which may be negative; a
         * conforming backend rejects before writing. */
        keep.shape[0] = (c->lengths || c->left_padding) ? c->batch : 1;
        keep.shape[1] = 1;
        keep.shape[2] = c->lq;
        if (__builtin_add_overflow(c->offset, c->lq, &keep.shape[3]))
            keep.shape[3] = -1; /* unrepresentable: treated as invalid below */
    }
    int negative = 0;
    for (int32_t d = 0; d < keep.ndim; d++)
        negative |= keep.shape[d] < 0;
    int64_t numel = negative ? 0 : hr_numel_capped(keep.ndim, keep.shape);
    if (numel < 0) {
        char s[96];
        hr_shape_text(keep.ndim, keep.shape, s, sizeof s);
        hr_set(r, HR_ERROR, "case: keep mask shape %s is over the %lld-element limit", s,
               (long long)ACASE_MAX_TENSOR_NUMEL);
        return;
    }
    hr_contiguous_strides(keep.ndim, keep.shape, keep.strides);
    size_t bytes = (size_t)(numel > 0 ? numel : 1);
    unsigned char *buf = malloc(bytes);
    if (!buf) {
        hr_set(r, HR_ERROR, "harness: out of memory for a %zu-byte keep mask", bytes);
        return;
    }
    memset(buf, 0xFF, bytes);
    keep.data = buf;
    attnconf_tensor before = keep;

    attnconf_mask_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.lq = c->lq;
    a.offset = c->offset;
    a.window = c->window;
    a.batch = c->batch;
    a.lengths = c->lengths;
    a.left_padding = c->left_padding;
    a.keep = &keep;

    double t0 = hr_now();
    int rc = hb->be->build_mask(hb->ctx, &a);
    r->seconds = hr_now() - t0;

    if (!hr_classify_rc(rn, c, rc, r))
        hr_check_output(c, &before, &keep, bytes, 1, r);
    free(buf);
}

void hr_run_case(const hr_runner *rn, const acase *c, hr_result *r)
{
    const hb_backend *hb = rn->backend;
    /* The case's rule ids (hr_result_begin sees only the id; a case that did not load has none). */
    r->nrules = 0;
    for (int i = 0; i < c->nrules && i < ACASE_MAX_RULES; i++)
        if (c->rules[i])
            snprintf(r->rules[r->nrules++], sizeof r->rules[0], "%s", c->rules[i]);
    snprintf(r->description, sizeof r->description, "%s", c->description ? c->description : "");
    uint64_t missing = c->requires & ~hb->caps;
    if (c->op == ACASE_OP_MASK && !hb->be->build_mask)
        missing |= ATTNCONF_CAP_BUILD_MASK;
    if (missing) {
        char names[400];
        acase_caps_text(missing, ", ", names, sizeof names);
        hr_set(r, HR_NOT_SUPPORTED, "backend lacks %s", names);
        return;
    }
    if (c->expected.error == 0 && !c->expected.values && c->expected.numel > 0) {
        hr_set(r, HR_ERROR, "case: no expected values");
        return;
    }
    switch (c->op) {
    case ACASE_OP_SDPA: hr_run_sdpa(rn, c, r); break;
    case ACASE_OP_MASK: hr_run_mask(rn, c, r); break;
    default: hr_set(r, HR_ERROR, "case: unknown op %d", (int)c->op); break;
    }
}
