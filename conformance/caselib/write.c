/* write.c — deterministic writer of case format v1 with the libyaml event emitter.
 *
 * Block style at the top level, flow style for tensors and small mappings, no line folding
 * (width -1), fixed key order, and number texts that read back bit-exactly (FORMAT.md,
 * "Canonical form"). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "cache_internal.h"
#include "case_internal.h"

typedef struct wr {
    yaml_emitter_t em;
    int failed;
} wr;

static void emit(wr *w, yaml_event_t *ev, int ok)
{
    if (w->failed) {
        if (ok)
            yaml_event_delete(ev);
        return;
    }
    if (!ok || !yaml_emitter_emit(&w->em, ev))
        w->failed = 1; /* yaml_emitter_emit frees the event even when it fails */
}

static void scalar_styled(wr *w, const char *s, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    /* No tag, both implicit flags: the emitter never writes a tag, whatever style it picks. */
    emit(w, &ev,
         yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
                                      style));
}

/* Plain text for numbers, booleans and names the reader knows are of the right type. */
static void plain(wr *w, const char *s)
{
    scalar_styled(w, s, YAML_PLAIN_SCALAR_STYLE);
}

/* A string: plain when PyYAML reads the plain form as a string, else double-quoted. */
static void string(wr *w, const char *s)
{
    int kind = acase__y11_resolve(s);
    if (kind < 0)
        w->failed = 1;
    scalar_styled(w, s, kind == ACASE_Y11_STR ? YAML_PLAIN_SCALAR_STYLE
                                              : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

static void map_start(wr *w, int flow)
{
    yaml_event_t ev;
    emit(w, &ev,
         yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                             flow ? YAML_FLOW_MAPPING_STYLE
                                                  : YAML_BLOCK_MAPPING_STYLE));
}

static void map_end(wr *w)
{
    yaml_event_t ev;
    emit(w, &ev, yaml_mapping_end_event_initialize(&ev));
}

static void seq_start(wr *w)
{
    yaml_event_t ev;
    emit(w, &ev,
         yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_FLOW_SEQUENCE_STYLE));
}

static void seq_end(wr *w)
{
    yaml_event_t ev;
    emit(w, &ev, yaml_sequence_end_event_initialize(&ev));
}

static void key(wr *w, const char *k)
{
    plain(w, k);
}

static void int_val(wr *w, int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, v);
    plain(w, buf);
}

/* NaN and infinities as YAML 1.1 floats; NaN sign and payload are not kept. */
static int special(double d, char *buf, size_t n)
{
    if (isnan(d))
        snprintf(buf, n, ".nan");
    else if (isinf(d))
        snprintf(buf, n, d < 0 ? "-.inf" : ".inf");
    else
        return 0;
    return 1;
}

/* A scalar binary64 parameter: the shortest %.Ne (N >= 1) that reads back exactly. */
static void double_short(wr *w, double d)
{
    char buf[40];
    if (!special(d, buf, sizeof buf))
        acase__fmt_double_short(d, buf, sizeof buf);
    plain(w, buf);
}

static void f32_val(wr *w, float f)
{
    char buf[40];
    if (!special((double)f, buf, sizeof buf))
        snprintf(buf, sizeof buf, "%.8e", (double)f);
    plain(w, buf);
}

static void f64_val(wr *w, double d)
{
    char buf[40];
    if (!special(d, buf, sizeof buf))
        snprintf(buf, sizeof buf, "%.16e", d);
    plain(w, buf);
}

static void shape_val(wr *w, int32_t ndim, const int64_t *shape)
{
    seq_start(w);
    for (int32_t i = 0; i < ndim; i++)
        int_val(w, shape[i]);
    seq_end(w);
}

static void int_array(wr *w, const int64_t *a, int64_t n)
{
    seq_start(w);
    for (int64_t i = 0; i < n; i++)
        int_val(w, a[i]);
    seq_end(w);
}

/* Whether logical element n of t has index 0 on every stride-0 dimension. */
static int in_stored_slice(const acase_tensor *t, int64_t n)
{
    for (int d = t->ndim - 1; d >= 0; d--) {
        int64_t i = t->shape[d] ? n % t->shape[d] : 0;
        if (((t->stride0 >> d) & 1u) && i != 0)
            return 0;
        n = t->shape[d] ? n / t->shape[d] : 0;
    }
    return 1;
}

static void tensor(wr *w, const char *name, const acase_tensor *t)
{
    key(w, name);
    map_start(w, 1);
    key(w, "dtype");
    plain(w, attnref_dtype_name(t->dtype));
    key(w, "shape");
    shape_val(w, t->ndim, t->shape);
    if (t->layout == ACASE_LAYOUT_BLHD) {
        key(w, "layout");
        plain(w, "blhd");
    }
    if (t->stride0) {
        key(w, "stride0");
        seq_start(w);
        for (int d = 0; d < 2; d++)
            if ((t->stride0 >> d) & 1u)
                int_val(w, d);
        seq_end(w);
    }
    if (t->source == ACASE_SRC_UNIFORM) {
        char buf[32];
        key(w, "generate");
        map_start(w, 1);
        key(w, "kind");
        plain(w, "uniform");
        key(w, "seed");
        snprintf(buf, sizeof buf, "%" PRIu64, t->seed);
        plain(w, buf);
        key(w, "lo");
        double_short(w, t->lo);
        key(w, "hi");
        double_short(w, t->hi);
        map_end(w);
    } else {
        key(w, "data");
        seq_start(w);
        for (int64_t i = 0; i < t->numel && !w->failed; i++) {
            char buf[16];
            if (t->stride0 && !in_stored_slice(t, i))
                continue; /* the file holds one slice of a stride-0 tensor */
            switch (t->dtype) {
            case ATTNREF_F32:
                f32_val(w, ((const float *)t->data)[i]);
                break;
            case ATTNREF_F16:
            case ATTNREF_BF16:
                snprintf(buf, sizeof buf, "0x%04x", (unsigned)((const uint16_t *)t->data)[i]);
                plain(w, buf);
                break;
            default: /* BOOL: the byte as stored, so 2 or 255 survive a round trip */
                snprintf(buf, sizeof buf, "%u", (unsigned)((const uint8_t *)t->data)[i]);
                plain(w, buf);
                break;
            }
        }
        seq_end(w);
    }
    map_end(w);
}

/* expected.row_checks, only when some row is not CLOSE: keys exact, finite; an empty list is
 * omitted. */
static void row_checks(wr *w, const acase_expected *e)
{
    static const char *const names[2] = {"exact", "finite"};
    static const uint8_t modes[2] = {ACASE_CHECK_EXACT, ACASE_CHECK_FINITE};
    int64_t count[2] = {0, 0};
    for (int64_t r = 0; e->row_check && r < e->nrows; r++)
        for (int m = 0; m < 2; m++)
            count[m] += e->row_check[r] == modes[m];
    if (count[0] + count[1] == 0)
        return;
    key(w, "row_checks");
    map_start(w, 1);
    for (int m = 0; m < 2; m++) {
        if (!count[m])
            continue;
        key(w, names[m]);
        seq_start(w);
        for (int64_t r = 0; r < e->nrows && !w->failed; r++)
            if (e->row_check[r] == modes[m])
                int_val(w, r);
        seq_end(w);
    }
    map_end(w);
}

/* window, lengths, left_padding: the same keys, in the same order, for op sdpa (the kernels'
 * own mask parameters) and op mask (the mask builder). */
static void mask_params(wr *w, const acase *c)
{
    if (c->window) {
        key(w, "window");
        int_val(w, c->window);
    }
    if (c->lengths) {
        key(w, "lengths");
        int_array(w, c->lengths, c->batch);
    }
    if (c->left_padding) {
        key(w, "left_padding");
        int_array(w, c->left_padding, c->batch);
    }
}

static void write_case(wr *w, const acase *c)
{
    char buf[32];
    yaml_event_t ev;
    emit(w, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
    emit(w, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
    map_start(w, 0);

    key(w, "attnconf_case");
    snprintf(buf, sizeof buf, "%d", ACASE_FORMAT_VERSION);
    plain(w, buf);
    key(w, "id");
    string(w, c->id);
    key(w, "description");
    scalar_styled(w, c->description, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    key(w, "rules");
    seq_start(w);
    for (int i = 0; i < c->nrules; i++)
        string(w, c->rules[i]);
    seq_end(w);
    key(w, "op");
    plain(w, c->op == ACASE_OP_SDPA ? "sdpa" : c->op == ACASE_OP_CACHE ? "cache" : "mask");
    key(w, "requires");
    seq_start(w);
    for (int b = 0; b < 64; b++)
        if (c->requires & (1ull << b))
            string(w, acase_cap_name(1ull << b));
    seq_end(w);

    /* op: cache: params and steps (cache_case.c), nothing else. */
    if (c->op == ACASE_OP_CACHE) {
        if (acase__cache_write(&w->em, c))
            w->failed = 1;
        goto end;
    }
    key(w, "params");
    map_start(w, 1);
    if (c->op == ACASE_OP_SDPA) {
        if (c->has_scale) {
            key(w, "scale");
            double_short(w, c->scale);
        }
        key(w, "causal");
        plain(w, c->causal ? "true" : "false");
        if (c->has_causal_offset) {
            key(w, "causal_offset");
            int_val(w, c->causal_offset);
        }
        mask_params(w, c);
    } else {
        key(w, "lq");
        int_val(w, c->lq);
        key(w, "offset");
        int_val(w, c->offset);
        mask_params(w, c);
        if (c->kv_len) {
            key(w, "kv_len");
            int_val(w, c->kv_len);
        }
    }
    map_end(w);

    if (c->op == ACASE_OP_SDPA) {
        key(w, "inputs");
        map_start(w, 0);
        tensor(w, "q", &c->q);
        tensor(w, "k", &c->k);
        tensor(w, "v", &c->v);
        if (c->mask.present)
            tensor(w, "mask", &c->mask);
        map_end(w);
    }

    const acase_expected *e = &c->expected;
    key(w, "expected");
    map_start(w, 0);
    if (e->error) {
        key(w, "error");
        plain(w, acase__error_name(e->error));
    } else if (c->op == ACASE_OP_SDPA) {
        key(w, "out");
        map_start(w, 1);
        key(w, "dtype");
        plain(w, attnref_dtype_name(e->dtype));
        key(w, "shape");
        shape_val(w, e->ndim, e->shape);
        key(w, "data");
        seq_start(w);
        for (int64_t i = 0; i < e->numel && !w->failed; i++)
            f64_val(w, e->values[i]);
        seq_end(w);
        map_end(w);
        row_checks(w, e);
    } else {
        key(w, "keep");
        map_start(w, 1);
        key(w, "shape");
        shape_val(w, e->ndim, e->shape);
        key(w, "data");
        seq_start(w);
        for (int64_t i = 0; i < e->numel && !w->failed; i++)
            plain(w, e->values[i] != 0.0 ? "1" : "0");
        seq_end(w);
        map_end(w);
    }
    map_end(w);

    if (!e->error && c->op == ACASE_OP_SDPA) {
        key(w, "tolerance");
        map_start(w, 1);
        key(w, "ulps");
        double_short(w, c->ulps);
        key(w, "row_atol");
        seq_start(w);
        int64_t rows = acase_expected_rows(e);
        for (int64_t r = 0; r < rows && !w->failed; r++)
            double_short(w, c->row_atol[r]);
        seq_end(w);
        map_end(w);
    }

end:
    map_end(w);
    emit(w, &ev, yaml_document_end_event_initialize(&ev, 1));
    emit(w, &ev, yaml_stream_end_event_initialize(&ev));
}

int acase_write(const acase *c, FILE *f, char *err, size_t errlen)
{
    if (!c || !f) {
        acase__errf(err, errlen, "acase_write: NULL argument");
        return -1;
    }
    if (acase_validate(c, err, errlen) != 0)
        return -1;
    wr w;
    memset(&w, 0, sizeof w);
    if (!yaml_emitter_initialize(&w.em)) {
        acase__errf(err, errlen, "out of memory");
        return -1;
    }
    yaml_emitter_set_output_file(&w.em, f);
    yaml_emitter_set_width(&w.em, -1);
    yaml_emitter_set_unicode(&w.em, 1);
    yaml_emitter_set_indent(&w.em, 2);
    yaml_emitter_set_break(&w.em, YAML_LN_BREAK);
    write_case(&w, c);
    int rc = 0;
    if (w.failed || !yaml_emitter_flush(&w.em)) {
        acase__errf(err, errlen, "%s: yaml emitter: %s", c->id,
                    w.em.problem ? w.em.problem : "write error");
        rc = -1;
    } else if (fflush(f) != 0 || ferror(f)) {
        acase__errf(err, errlen, "%s: write error", c->id);
        rc = -1;
    }
    yaml_emitter_delete(&w.em);
    return rc;
}
