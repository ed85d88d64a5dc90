/* exec_reply.c — validating an exec: adapter's reply headers (see exec_reply.h). */
#include "exec_reply.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attncase/case.h"
#include "backend/plugin.h"

/* An sdpa reply's "seconds" may not exceed the exchange it came in (the harness's own clock,
 * from the first byte sent to the last byte read) by more than this: the same monotonic clock
 * read by two processes, plus room for another clock's granularity or rate. */
#define XR_SECONDS_SLACK_ABS 1e-3
#define XR_SECONDS_SLACK_REL 1e-2

__attribute__((format(printf, 3, 4))) static int xr_fail(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return -1;
}

static const struct {
    const char *name;
    int32_t dtype;
    size_t size;
} xr_dtypes[] = {{"f32", ATTNCONF_F32, 4},
                 {"f16", ATTNCONF_F16, 2},
                 {"bf16", ATTNCONF_BF16, 2},
                 {"bool", ATTNCONF_BOOL, 1}};

const char *xr_dtype_name(int32_t dt, size_t *size)
{
    for (size_t i = 0; i < sizeof xr_dtypes / sizeof xr_dtypes[0]; i++)
        if (xr_dtypes[i].dtype == dt) {
            *size = xr_dtypes[i].size;
            return xr_dtypes[i].name;
        }
    return NULL;
}

int32_t xr_dtype_from(const char *name, size_t *size)
{
    for (size_t i = 0; i < sizeof xr_dtypes / sizeof xr_dtypes[0]; i++)
        if (strcmp(xr_dtypes[i].name, name) == 0) {
            *size = xr_dtypes[i].size;
            return xr_dtypes[i].dtype;
        }
    return 0;
}

void xr_shape_text(int32_t ndim, const int64_t *shape, char *buf, size_t n)
{
    size_t j = 0;
    buf[0] = '\0';
    j += (size_t)snprintf(buf, n, "(");
    for (int32_t d = 0; d < ndim && j < n; d++)
        j += (size_t)snprintf(buf + j, n - j, "%s%lld", d ? "," : "", (long long)shape[d]);
    if (j < n)
        snprintf(buf + j, n - j, ")");
}

int64_t xr_numel(int32_t ndim, const int64_t *shape)
{
    int64_t n = 1;
    for (int32_t i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return -1;
        if (shape[i] > 0 && n > XR_MAX_NUMEL / shape[i])
            return -1;
        n *= shape[i];
    }
    return n <= XR_MAX_NUMEL ? n : -1;
}

int xr_dense_perm(int32_t ndim, const int64_t *shape, const int64_t *strides)
{
    int idx[ATTNCONF_MAX_RANK], m = 0;
    for (int32_t d = 0; d < ndim; d++) {
        if (shape[d] == 0)
            return 1;
        if (strides[d] < 0)
            return 0;
        if (shape[d] > 1)
            idx[m++] = (int)d;
    }
    for (int i = 1; i < m; i++)
        for (int j = i; j > 0 && strides[idx[j]] < strides[idx[j - 1]]; j--) {
            int t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
    int64_t expect = 1;
    for (int i = 0; i < m; i++) {
        if (strides[idx[i]] != expect)
            return 0;
        expect *= shape[idx[i]];
    }
    return 1;
}

void xr_ints_text(int32_t ndim, const int64_t *v, char *buf, size_t n)
{
    xr_shape_text(ndim, v, buf, n);
    buf[0] = '[';
    size_t l = strlen(buf);
    if (l > 1 && buf[l - 1] == ')')
        buf[l - 1] = ']';
}

/* Validate a reply tensor descriptor (xr_desc's rules). */
static int xr_parse_desc(json_t *t, const char *want, xr_desc *d, char *why, size_t n)
{
    memset(d, 0, sizeof *d);
    json_t *jn = json_object_get(t, "name"), *jd = json_object_get(t, "dtype"),
           *js = json_object_get(t, "shape"), *jst = json_object_get(t, "strides"),
           *jb = json_object_get(t, "nbytes");
    if (!json_is_object(t) || !json_is_string(jn))
        return xr_fail(why, n, "a tensor without a \"name\" string");
    const char *name = json_string_value(jn);
    if (strcmp(name, want) != 0)
        return xr_fail(why, n, "tensor '%.64s', expected '%s'", name, want);
    size_t es = 0;
    if (!json_is_string(jd) || !(d->dtype = xr_dtype_from(json_string_value(jd), &es)))
        return xr_fail(why, n, "tensor '%s': dtype %s%.32s%s is not f32, f16, bf16 or bool", want,
                       json_is_string(jd) ? "'" : "",
                       json_is_string(jd) ? json_string_value(jd) : "(missing)",
                       json_is_string(jd) ? "'" : "");
    if (!json_is_array(js) || json_array_size(js) > ATTNCONF_MAX_RANK)
        return xr_fail(why, n, "tensor '%s': \"shape\" is not an array of at most 4 integers",
                       want);
    d->ndim = (int32_t)json_array_size(js);
    for (int32_t i = 0; i < d->ndim; i++) {
        json_t *e = json_array_get(js, (size_t)i);
        if (!json_is_integer(e) || json_integer_value(e) < 0)
            return xr_fail(why, n, "tensor '%s': shape[%d] is not a non-negative integer", want,
                           (int)i);
        d->shape[i] = json_integer_value(e);
    }
    char st[96];
    xr_shape_text(d->ndim, d->shape, st, sizeof st);
    int64_t numel = xr_numel(d->ndim, d->shape);
    if (numel < 0)
        return xr_fail(why, n, "tensor '%s': shape %s has more than %lld elements", want, st,
                       (long long)XR_MAX_NUMEL);
    size_t expect = (size_t)numel * es;
    if (!json_is_integer(jb) || json_integer_value(jb) < 0 ||
        (uint64_t)json_integer_value(jb) != (uint64_t)expect) {
        if (json_is_integer(jb))
            return xr_fail(why, n, "tensor '%s': nbytes %lld does not match %s %s (%zu bytes)",
                           want, (long long)json_integer_value(jb), json_string_value(jd), st,
                           expect);
        return xr_fail(why, n, "tensor '%s': \"nbytes\" is missing or not an integer", want);
    }
    d->nbytes = expect;
    if (!jst || json_is_null(jst)) {
        int64_t s = 1;
        for (int32_t i = d->ndim - 1; i >= 0; i--) {
            d->strides[i] = s;
            s *= d->shape[i] > 0 ? d->shape[i] : 1;
        }
        return 0;
    }
    if (!json_is_array(jst) || json_array_size(jst) != (size_t)d->ndim)
        return xr_fail(why, n, "tensor '%s': \"strides\" is not an array of %d integers", want,
                       (int)d->ndim);
    int64_t last = 0;
    for (int32_t i = 0; i < d->ndim; i++) {
        json_t *e = json_array_get(jst, (size_t)i);
        if (!json_is_integer(e) || json_integer_value(e) < 0 ||
            json_integer_value(e) > XR_MAX_NUMEL)
            return xr_fail(why, n, "tensor '%s': strides[%d] is not an integer in 0..%lld", want,
                           (int)i, (long long)XR_MAX_NUMEL);
        d->strides[i] = json_integer_value(e);
        if (d->shape[i] > 0)
            last += (d->shape[i] - 1) * d->strides[i]; /* <= 4 * 2^34 * 2^34: no overflow */
    }
    if (numel > 0 && last >= numel)
        return xr_fail(why, n, "tensor '%s': strides address element %lld of a %s buffer of %lld",
                       want, (long long)last, st, (long long)numel);
    /* Inside the buffer is not enough: strides that repeat or skip elements (zeros, two axes of
     * stride 1) would make the host read the dense payload as another tensor, and blame the
     * adapter for writing past its output. */
    if (!xr_dense_perm(d->ndim, d->shape, d->strides)) {
        int64_t dense[ATTNCONF_MAX_RANK];
        int64_t s = 1;
        for (int32_t i = d->ndim - 1; i >= 0; i--) {
            dense[i] = s;
            s *= d->shape[i];
        }
        char got[128], want_st[128];
        xr_ints_text(d->ndim, d->strides, got, sizeof got);
        xr_ints_text(d->ndim, dense, want_st, sizeof want_st);
        return xr_fail(why, n,
                       "tensor '%s': strides %s are not the dense strides %s of shape %s, nor a "
                       "permutation of its axes (a reply holds each element once, PROTOCOL.md)",
                       want, got, want_st, st);
    }
    return 0;
}

int xr_parse(const char *line, size_t len, const char *op, const char *want_tensor, xr_reply *r,
             char *why, size_t n)
{
    return xr_parse_n(line, len, op, want_tensor ? &want_tensor : NULL, want_tensor ? 1 : 0, r, why,
                      n);
}

int xr_parse_n(const char *line, size_t len, const char *op, const char *const *want, size_t nwant,
               xr_reply *r, char *why, size_t n)
{
    if (nwant > XR_MAX_REPLY_TENSORS)
        return xr_fail(why, n, "reply to %s: more than %d tensors asked for", op,
                       XR_MAX_REPLY_TENSORS);
    memset(r, 0, sizeof *r);
    json_error_t je;
    json_t *root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    if (!root || !json_is_object(root)) {
        json_decref(root);
        char head[81];
        size_t hl = len < 80 ? len : 80;
        memcpy(head, line, hl);
        head[hl] = '\0';
        for (char *p = head; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7F)
                *p = ' ';
        return xr_fail(why, n,
                       "header to %s is not a JSON object (%s): '%s%s' (stdout must "
                       "carry only the protocol; log to stderr)",
                       op, root ? "not an object" : je.text, head, len > 80 ? "..." : "");
    }
    r->root = root;
    json_t *jp = json_object_get(root, "protocol"), *js = json_object_get(root, "status");
    if (!json_is_integer(jp) || json_integer_value(jp) != 1)
        return xr_fail(why, n, "header to %s lacks \"protocol\": 1", op);
    if (!json_is_integer(js) || json_integer_value(js) > 0 ||
        json_integer_value(js) < ATTNCONF_EINEXPRESSIBLE)
        return xr_fail(why, n, "header to %s: \"status\" is not an integer in -6..0", op);
    r->status = (int)json_integer_value(js);
    json_t *jt = json_object_get(root, "tensors");
    size_t nt = json_is_array(jt) ? json_array_size(jt) : 0;
    if (jt && !json_is_null(jt) && !json_is_array(jt))
        return xr_fail(why, n, "header to %s: \"tensors\" is not an array", op);
    if (r->status != 0) {
        json_t *je2 = json_object_get(root, "error");
        if (!json_is_string(je2))
            return xr_fail(why, n, "status %d to %s without an \"error\" string", r->status, op);
        if (nt)
            return xr_fail(why, n, "status %d to %s with tensors (an error reply has none)",
                           r->status, op);
        r->error = json_string_value(je2);
        return 0;
    }
    if (!nwant) {
        if (nt)
            return xr_fail(why, n, "reply to %s lists tensors; it has none", op);
        return 0;
    }
    if (nt != nwant && nwant == 1)
        return xr_fail(why, n, "success reply to %s lists %zu tensors, expected one ('%s')", op, nt,
                       want[0]);
    if (nt != nwant)
        return xr_fail(why, n, "success reply to %s lists %zu tensors, expected %zu ('%s', '%s')",
                       op, nt, nwant, want[0], want[1]);
    for (size_t i = 0; i < nwant; i++)
        if (xr_parse_desc(json_array_get(jt, i), want[i], &r->descs[i], why, n) != 0)
            return -1;
    r->ntensors = nwant;
    r->desc = r->descs[0];
    r->has_tensor = nwant == 1;
    return 0;
}

int xr_paged_writes(json_t *root, const xr_pool *pool, const xr_desc descs[2], int64_t *pairs,
                    unsigned char *seen, int64_t *m, char *why, size_t n)
{
    json_t *w = json_object_get(root, "writes");
    const int64_t slots = pool->num_pages * pool->page_size;
    if (!json_is_array(w))
        return xr_fail(why, n, "reply to paged_append lacks the list \"writes\"");
    const int64_t count = (int64_t)json_array_size(w);
    if (count > slots)
        return xr_fail(why, n,
                       "reply to paged_append: %lld writes, more than the pool's %lld slots",
                       (long long)count, (long long)slots);
    memset(seen, 0, (size_t)slots);
    for (int64_t i = 0; i < count; i++) {
        json_t *e = json_array_get(w, (size_t)i);
        json_t *jp = json_array_get(e, 0), *js = json_array_get(e, 1);
        if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_integer(jp) ||
            !json_is_integer(js))
            return xr_fail(why, n, "reply to paged_append: writes[%lld] is not [page, slot]",
                           (long long)i);
        const json_int_t page = json_integer_value(jp), slot = json_integer_value(js);
        if (page < 0 || page >= pool->num_pages || slot < 0 || slot >= pool->page_size)
            return xr_fail(why, n,
                           "reply to paged_append: writes[%lld] = [%lld, %lld] is outside the "
                           "pool (%lld pages of %lld slots)",
                           (long long)i, (long long)page, (long long)slot,
                           (long long)pool->num_pages, (long long)pool->page_size);
        const int64_t at = page * pool->page_size + slot;
        if (seen[at])
            return xr_fail(why, n, "reply to paged_append: [%lld, %lld] is written twice",
                           (long long)page, (long long)slot);
        seen[at] = 1;
        pairs[2 * i] = page;
        pairs[2 * i + 1] = slot;
    }
    const char *names[2] = {"k_slots", "v_slots"};
    const int64_t dims[2] = {pool->head_dim, pool->v_head_dim};
    for (int t = 0; t < 2; t++) {
        const xr_desc *d = &descs[t];
        if (d->dtype != pool->dtype || d->ndim != 3 || d->shape[0] != count ||
            d->shape[1] != pool->kv_heads || d->shape[2] != dims[t]) {
            char got[96];
            xr_shape_text(d->ndim, d->shape, got, sizeof got);
            size_t es;
            return xr_fail(why, n,
                           "reply to paged_append: %s is %s %s, expected %s (%lld,%lld,%lld): one "
                           "row per write, in the pool's dtype",
                           names[t], xr_dtype_name(d->dtype, &es), got,
                           xr_dtype_name(pool->dtype, &es), (long long)count,
                           (long long)pool->kv_heads, (long long)dims[t]);
        }
    }
    *m = count;
    return 0;
}

int xr_hello_take(json_t *r, xr_hello *h, char *why, size_t n)
{
    memset(h, 0, sizeof *h);
    json_t *jn = json_object_get(r, "name"), *jv = json_object_get(r, "version"),
           *jc = json_object_get(r, "capabilities"), *jo = json_object_get(r, "options");
    const char *name = json_is_string(jn) ? json_string_value(jn) : NULL;
    size_t nl = name ? strlen(name) : 0;
    if (!name || nl == 0 || nl > 64 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != nl)
        return xr_fail(why, n, "hello: \"name\" %s%.64s%s is not [a-z0-9_-]{1,64}", name ? "'" : "",
                       name ? name : "(missing)", name ? "'" : "");
    if (!json_is_string(jv))
        return xr_fail(why, n, "hello: \"version\" is missing or not a string");
    if (!json_is_array(jc))
        return xr_fail(why, n, "hello: \"capabilities\" is missing or not an array");
    uint64_t caps = 0;
    int stride0_wire = 0;
    for (size_t i = 0; i < json_array_size(jc); i++) {
        json_t *e = json_array_get(jc, i);
        if (json_is_string(e) && strcmp(json_string_value(e), XR_CAP_STRIDE0_WIRE) == 0) {
            stride0_wire = 1;
            continue;
        }
        uint64_t bit = json_is_string(e) ? acase_cap_from_name(json_string_value(e)) : 0;
        /* Device memory (seventh revision) has no wire form: an adapter owns its device and
         * receives host bytes (PROTOCOL.md). */
        if (bit == ATTNCONF_CAP_DEVICE)
            return xr_fail(why, n,
                           "hello: capability 'device' is not one an exec: adapter can list (the "
                           "protocol carries host bytes; the adapter owns its device)");
        if (!bit) {
            char known[600]; /* every name the table knows, so the list never goes stale */
            uint64_t all = 0;
            for (int b = 0; b < 64; b++)
                all |= acase_cap_name(1ull << b) ? 1ull << b : 0;
            acase_caps_text(all, ", ", known, sizeof known);
            return xr_fail(why, n, "hello: unknown capability %s%.64s%s (known: %s, %s)",
                           json_is_string(e) ? "'" : "",
                           json_is_string(e) ? json_string_value(e) : "(not a string)",
                           json_is_string(e) ? "'" : "", known, XR_CAP_STRIDE0_WIRE);
        }
        caps |= bit;
    }
    size_t no = json_is_array(jo) ? json_array_size(jo) : 0;
    if (jo && !json_is_null(jo) && !json_is_array(jo))
        return xr_fail(why, n, "hello: \"options\" is not an array");
    if (no > XR_MAX_OPTIONS)
        return xr_fail(why, n, "hello: more than %d options", XR_MAX_OPTIONS);
    for (size_t i = 0; i < no; i++) {
        json_t *e = json_array_get(jo, i), *k = json_object_get(e, "key");
        if (!json_is_object(e) || !json_is_string(k) || !hb_option_key_valid(json_string_value(k)))
            return xr_fail(why, n, "hello: options[%zu] has no \"key\" of the form [a-z0-9_.-]+",
                           i);
    }
    h->name = name;
    h->version = json_string_value(jv);
    h->caps = caps;
    h->stride0_wire = stride0_wire;
    h->noptions = no;
    h->options = no ? jo : NULL;
    return 0;
}

int xr_seconds(json_t *r, double exchange_s, double *seconds, char *why, size_t n)
{
    *seconds = -1;
    json_t *js = json_object_get(r, "seconds");
    if (!js)
        return 0;
    if (!json_is_number(js))
        return xr_fail(why, n, "reply to sdpa: \"seconds\" is %s, not a number of seconds",
                       json_is_string(js)    ? "a string"
                       : json_is_null(js)    ? "null"
                       : json_is_boolean(js) ? "a boolean"
                                             : "an object or array");
    const double s = json_number_value(js);
    if (!isfinite(s) || s < 0)
        return xr_fail(why, n, "reply to sdpa: \"seconds\" %.6g is not a finite number >= 0", s);
    if (s > exchange_s * (1 + XR_SECONDS_SLACK_REL) + XR_SECONDS_SLACK_ABS)
        return xr_fail(why, n,
                       "reply to sdpa: \"seconds\" %.6g is longer than the whole "
                       "exchange took (%.6g s): it must be the time of the call alone, in "
                       "seconds",
                       s, exchange_s);
    *seconds = s;
    return 0;
}

int xr_int(json_t *r, const char *op, const char *key, json_int_t *v, char *why, size_t n)
{
    json_t *j = json_object_get(r, key);
    if (!json_is_integer(j))
        return xr_fail(why, n, "reply to %s lacks the integer \"%s\"", op, key);
    *v = json_integer_value(j);
    return 0;
}

int xr_cache_id(json_t *r, const char *op, json_int_t *id, char *why, size_t n)
{
    if (xr_int(r, op, "cache", id, why, n))
        return -1;
    if (*id < 0 || *id > XR_MAX_CACHE_ID)
        return xr_fail(why, n, "reply to %s: cache id %lld out of range", op, (long long)*id);
    return 0;
}

int xr_state_sizes(json_t *r, int64_t max_batch, int64_t max_length, int64_t *batch,
                   int64_t *length, char *why, size_t n)
{
    json_int_t b = 0, l = 0;
    if (xr_int(r, "cache_state", "batch", &b, why, n) ||
        xr_int(r, "cache_state", "length", &l, why, n))
        return -1;
    if (b < 1 || b > max_batch || l < 0 || l > max_length)
        return xr_fail(why, n, "reply to cache_state: batch %lld / length %lld out of range",
                       (long long)b, (long long)l);
    *batch = b;
    *length = l;
    return 0;
}

int xr_state_rows(json_t *r, int64_t b, int64_t l, int64_t *offsets, int64_t *positions, char *why,
                  size_t n)
{
    json_t *off = json_object_get(r, "offsets"), *pos = json_object_get(r, "positions");
    int ok = b >= 0 && l >= 0 && json_is_array(off) && json_array_size(off) == (size_t)b &&
             json_is_array(pos) && json_array_size(pos) == (size_t)b;
    for (int64_t i = 0; ok && i < b; i++) {
        json_t *o = json_array_get(off, (size_t)i), *row = json_array_get(pos, (size_t)i);
        ok = json_is_integer(o) && json_is_array(row) && json_array_size(row) == (size_t)l;
        if (ok)
            offsets[i] = json_integer_value(o);
        for (int64_t j = 0; ok && j < l; j++) {
            json_t *p = json_array_get(row, (size_t)j);
            ok = json_is_integer(p);
            if (ok)
                positions[i * l + j] = json_integer_value(p);
        }
    }
    if (!ok)
        return xr_fail(why, n,
                       "reply to cache_state: \"offsets\" / \"positions\" are not %lld "
                       "integers / %lld rows of %lld integers",
                       (long long)b, (long long)b, (long long)l);
    return 0;
}
