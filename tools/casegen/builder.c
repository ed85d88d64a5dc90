/* builder.c — case construction, expected values from the reference, and file output. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attnref/mask.h"
#include "attncase/sdpa_rows.h"
#include "attnref/sdpa.h"
#include "casegen.h"

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("casegen: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (!d)
        die("out of memory");
    return d;
}

const attnref_dtype CG_DTYPES[3] = {ATTNREF_F32, ATTNREF_F16, ATTNREF_BF16};

const char *cg_id_dt(char *buf, size_t n, const char *stem, attnref_dtype dt)
{
    snprintf(buf, n, "%s.%s", stem, attnref_dtype_name(dt));
    return buf;
}

acase *cg_new(acase_op op, const char *id, const char *description, const char *rule)
{
    acase *c = acase_new();
    if (!c)
        die("out of memory");
    if (strlen(id) >= sizeof c->id)
        die("%s: id too long", id);
    strcpy(c->id, id);
    c->op = op;
    c->description = xstrdup(description);
    cg_rule(c, rule);
    return c;
}

/* q, k, v generated uniformly in [-1, 1) (q and k scaled by `amp`). */
acase *cg_sdpa(const char *id, const char *desc, const char *rule, attnref_dtype dt, int64_t b,
               int64_t hq, int64_t hkv, int64_t lq, int64_t lk, int64_t d, int64_t dv, double amp)
{
    acase *c = cg_new(ACASE_OP_SDPA, id, desc, rule);
    cg_gen4(c, &c->q, "q", dt, b, hq, lq, d, -amp, amp);
    cg_gen4(c, &c->k, "k", dt, b, hkv, lk, d, -amp, amp);
    cg_gen4(c, &c->v, "v", dt, b, hkv, lk, dv, -1.0, 1.0);
    return c;
}

void cg_rule(acase *c, const char *rule)
{
    if (c->nrules >= ACASE_MAX_RULES)
        die("%s: too many rules", c->id);
    c->rules[c->nrules++] = xstrdup(rule);
}

/* FNV-1a 64 of "id/name": the per-tensor seed. */
static uint64_t seed_of(const char *id, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *s = id; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    h = (h ^ '/') * 0x100000001b3ull;
    for (const char *s = name; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static void set_shape(acase_tensor *t, attnref_dtype dt, int ndim, const int64_t *shape)
{
    free(t->data);
    memset(t, 0, sizeof *t);
    t->present = 1;
    t->dtype = dt;
    t->ndim = ndim;
    for (int d = 0; d < ndim; d++)
        t->shape[d] = shape[d];
}

void cg_gen(acase *c, acase_tensor *t, const char *name, attnref_dtype dt, int ndim,
            const int64_t *shape, double lo, double hi)
{
    char err[256];
    set_shape(t, dt, ndim, shape);
    t->source = ACASE_SRC_UNIFORM;
    t->seed = seed_of(c->id, name);
    t->lo = lo;
    t->hi = hi;
    if (acase_tensor_generate(t, err, sizeof err) != 0)
        die("%s: %s: %s", c->id, name, err);
}

void cg_gen4(acase *c, acase_tensor *t, const char *name, attnref_dtype dt, int64_t b, int64_t h,
             int64_t l, int64_t d, double lo, double hi)
{
    const int64_t shape[4] = {b, h, l, d};
    cg_gen(c, t, name, dt, 4, shape, lo, hi);
}

void cg_inline(acase_tensor *t, attnref_dtype dt, int ndim, const int64_t *shape,
               const double *values)
{
    char err[256];
    set_shape(t, dt, ndim, shape);
    t->source = ACASE_SRC_INLINE;
    if (acase_tensor_alloc(t, err, sizeof err) != 0)
        die("inline tensor: %s", err);
    for (int64_t n = 0; n < t->numel; n++)
        attnref_store(t->data, dt, n, values[n]);
}

void cg_poke(acase_tensor *t, int64_t flat, double value)
{
    if (flat < 0 || flat >= t->numel)
        die("cg_poke: index %lld out of range", (long long)flat);
    t->source = ACASE_SRC_INLINE;
    attnref_store(t->data, t->dtype, flat, value);
}

/* The mask builder's keep mask for p as 0/1 bytes (caller frees), its shape in shape[4] and
 * element count in *n; an error from the reference stops casegen with `what` and the reason. */
static uint8_t *build_keep(const char *id, const char *what, const attnref_mask_params *p,
                           int64_t shape[4], int64_t *n)
{
    attnref_diag diag;
    attnref_tensor kt;
    if (attnref_mask_shape(p, shape, &diag) != ATTNREF_OK)
        die("%s: %s: %s", id, what, diag.msg);
    *n = shape[0] * shape[1] * shape[2] * shape[3];
    uint8_t *keep = calloc((size_t)*n + 1, 1);
    if (!keep)
        die("out of memory");
    if (attnref_tensor_init(&kt, keep, ATTNREF_BOOL, 4, shape, &diag) != ATTNREF_OK ||
        attnref_build_mask(p, &kt, &diag) != ATTNREF_OK)
        die("%s: %s: %s", id, what, diag.msg);
    return keep;
}

static void require_non_degenerate(const char *id, const attnref_mask_params *p,
                                   const uint8_t *keep, int64_t n);

void cg_builder_mask(acase *c, attnref_dtype dt, int64_t lq, int64_t offset, int64_t window,
                     int64_t batch, const int64_t *lengths, const int64_t *left_padding)
{
    attnref_mask_params p = {.lq = lq,
                             .offset = offset,
                             .window = window,
                             .batch = batch,
                             .lengths = lengths,
                             .left_padding = left_padding};
    int64_t shape[4], n;
    uint8_t *keep = build_keep(c->id, "mask", &p, shape, &n);
    double *vals = malloc(((size_t)n + 1) * sizeof *vals);
    if (!vals)
        die("out of memory");
    require_non_degenerate(c->id, &p, keep, n);
    const double masked = attnref_dtype_finite_min(dt);
    for (int64_t i = 0; i < n; i++)
        vals[i] = dt == ATTNREF_BOOL ? keep[i] : (keep[i] ? 0.0 : masked);
    cg_inline(&c->mask, dt, 4, shape, vals);
    free(keep);
    free(vals);
}

int64_t *cg_copy_i64(const int64_t *a, int64_t n)
{
    if (!a || n <= 0)
        return NULL;
    int64_t *d = malloc((size_t)n * sizeof *d);
    if (!d)
        die("out of memory");
    memcpy(d, a, (size_t)n * sizeof *d);
    return d;
}

void cg_poison_excluded(acase *c)
{
    const attnref_sdpa_params p = acase_sdpa_params(c);
    const int64_t B = c->q.shape[0], Lq = c->q.shape[2], D = c->q.shape[3];
    const int64_t Hkv = c->k.shape[1], Lk = c->k.shape[2], Dv = c->v.shape[3];
    int64_t poisoned = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t j = 0; j < Lk; j++) {
            int used = 0;
            for (int64_t i = 0; i < Lq && !used; i++)
                used = attnref_sdpa_key_kept(&p, Lq, Lk, b, i, j);
            if (used)
                continue;
            poisoned++;
            for (int64_t h = 0; h < Hkv; h++) {
                for (int64_t e = 0; e < D; e++)
                    cg_poke(&c->k, ((b * Hkv + h) * Lk + j) * D + e, (j + e) % 2 ? NAN : INFINITY);
                for (int64_t e = 0; e < Dv; e++)
                    cg_poke(&c->v, ((b * Hkv + h) * Lk + j) * Dv + e,
                            (j + e) % 2 ? -INFINITY : NAN);
            }
        }
    if (!poisoned)
        die("%s: poison asked for, but every key slot is kept by some row", c->id);
}

void cg_expect_error(acase *c, int status)
{
    c->expected.error = status;
}

/* A contiguous attnref view of a case tensor (case data is logical row-major). */
static attnref_tensor view(const acase_tensor *t)
{
    attnref_tensor v;
    attnref_diag diag;
    if (attnref_tensor_init(&v, t->data, t->dtype, t->ndim, t->shape, &diag) != ATTNREF_OK)
        die("tensor view: %s", diag.msg);
    return v;
}

static void expect_mask(acase *c)
{
    attnref_mask_params p = {.lq = c->lq,
                             .offset = c->offset,
                             .window = c->window,
                             .batch = c->batch,
                             .lengths = c->lengths,
                             .left_padding = c->left_padding,
                             .kv_len = c->kv_len,
                             .chunk = c->chunk,
                             .segment_ids = c->segment_ids,
                             .block_ids = c->block_ids};
    attnref_diag diag;
    int64_t shape[4];
    int rc = attnref_mask_shape(&p, shape, &diag);
    if (rc != ATTNREF_OK) {
        if (rc != c->expected.error)
            die("%s: reference rejected the mask params: %s", c->id, diag.msg);
        return;
    }
    if (c->expected.error)
        die("%s: the reference accepted a case that must be rejected", c->id);
    acase_expected *e = &c->expected;
    char err[256];
    int64_t n;
    uint8_t *keep = build_keep(c->id, "mask", &p, shape, &n);
    require_non_degenerate(c->id, &p, keep, n);
    e->dtype = ATTNREF_BOOL;
    e->ndim = 4;
    memcpy(e->shape, shape, sizeof shape);
    if (acase_expected_alloc(e, err, sizeof err) != 0)
        die("%s: %s", c->id, err);
    for (int64_t i = 0; i < n; i++)
        e->values[i] = keep[i];
    free(keep);
}

static void expect_sdpa(acase *c)
{
    attnref_tensor q = view(&c->q), k = view(&c->k), v = view(&c->v), m;
    if (c->mask.present)
        m = view(&c->mask);
    const attnref_sdpa_params p = acase_sdpa_params(c);
    acase_expected *e = &c->expected;
    char err[256];
    e->dtype = c->q.dtype;
    e->ndim = 4;
    e->shape[0] = c->q.shape[0];
    e->shape[1] = c->q.shape[1];
    e->shape[2] = c->q.shape[2];
    e->shape[3] = c->v.shape[3];
    const int want_error = e->error;
    if (acase_expected_alloc(e, err, sizeof err) != 0)
        die("%s: %s", c->id, err);
    attnref_diag diag;
    int rc = attnref_sdpa_f64(&q, &k, &v, c->mask.present ? &m : NULL, &p, e->values, &diag);
    if (rc != want_error)
        die("%s: reference returned %s (%s), the case expects %s", c->id, attnref_status_name(rc),
            diag.msg, attnref_status_name(want_error));
    if (want_error) {
        /* A rejection case has no values: keep the dtype, drop the array. */
        free(e->values);
        e->values = NULL;
        e->numel = 0;
        e->ndim = 0;
        e->error = want_error;
    }
}

static void mkdirs(const char *path)
{
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *s = buf + 1; *s; s++)
        if (*s == '/') {
            *s = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                die("mkdir %s: %s", buf, strerror(errno));
            *s = '/';
        }
}

/* Whole file into memory; NULL if it does not exist. */
static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 > cap) {
            cap = cap ? cap * 2 : 65536;
            char *nb = realloc(buf, cap);
            if (!nb)
                die("out of memory");
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* Keep mask for p with one constraint dropped (which: 0 window, 1 lengths, 2 left padding), as
 * 0/1 bytes; the shape never changes because the batch stays. */
static uint8_t *keep_without(const char *id, const attnref_mask_params *given, int which)
{
    attnref_mask_params p = *given;
    int64_t *full = NULL;
    if (which == 0)
        p.window = 0;
    if (which == 2)
        p.left_padding = NULL;
    if (which == 1) {
        /* No right padding, but keep the batch (lengths = Lk for every sequence). */
        full = malloc((size_t)p.batch * sizeof *full);
        if (!full)
            die("out of memory");
        for (int64_t b = 0; b < p.batch; b++)
            full[b] = p.offset + p.lq;
        p.lengths = full;
    }
    int64_t shape[4], n;
    uint8_t *keep = build_keep(id, "non-degeneracy check", &p, shape, &n);
    free(full);
    return keep;
}

/* ONNX's composition tests assert this by hand; here every composed mask gets it: with two or
 * more of window / lengths / left padding, dropping any one must change the keep mask (of n
 * elements), else the case cannot tell a backend that ignores that constraint. */
static void require_non_degenerate(const char *id, const attnref_mask_params *p,
                                   const uint8_t *keep, int64_t n)
{
    const int has[3] = {p->window > 0, p->lengths != NULL, p->left_padding != NULL};
    if (has[0] + has[1] + has[2] < 2)
        return;
    const char *names[3] = {"window", "lengths", "left_padding"};
    for (int w = 0; w < 3; w++) {
        if (!has[w])
            continue;
        uint8_t *k = keep_without(id, p, w);
        int differs = 0;
        for (int64_t i = 0; i < n && !differs; i++)
            differs = k[i] != keep[i];
        free(k);
        if (!differs)
            die("%s: degenerate composed mask: dropping %s does not change it", id, names[w]);
    }
}

static void emit(cg *g, acase *c, int rounded);

void cg_emit(cg *g, acase *c)
{
    emit(g, c, 0);
}

void cg_emit_rounded(cg *g, acase *c)
{
    emit(g, c, 1);
}

/* rounded: the correctly-rounded form (cg_rows_rounded). */
static void emit(cg *g, acase *c, int rounded)
{
    char err[256], family[ACASE_ID_MAX];
    if (c->op == ACASE_OP_MASK)
        expect_mask(c);
    else if (c->op == ACASE_OP_SDPA)
        expect_sdpa(c); /* op cache: fam_cache.c filled every step's expectation */
    c->requires = acase_derive_requires(c);
    if (c->op == ACASE_OP_SDPA && !c->expected.error) {
        cg_row_checks(c);
        if (rounded)
            cg_rows_rounded(c);
        cg_tolerance(c);
    }

    acase_family(c->id, family, sizeof family);
    char rel[512], path[1536];
    snprintf(rel, sizeof rel, "%s/%s.yaml", family, c->id);
    snprintf(path, sizeof path, "%s/%s", g->dir, rel);
    for (int i = 0; i < g->npaths; i++)
        if (strcmp(g->paths[i], rel) == 0)
            die("duplicate case id %s", c->id);
    if (g->npaths == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 128;
        g->paths = realloc(g->paths, (size_t)g->cap * sizeof *g->paths);
        if (!g->paths)
            die("out of memory");
    }
    g->paths[g->npaths++] = xstrdup(rel);

    char *text = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&text, &len);
    if (!mf || acase_write(c, mf, err, sizeof err) != 0)
        die("%s: write: %s", c->id, err);
    fclose(mf);

    if (g->check) {
        size_t have_len = 0;
        char *have = slurp(path, &have_len);
        if (!have) {
            fprintf(stderr, "casegen --check: %s: missing (regenerate with casegen --out)\n", path);
            g->mismatches++;
        } else if (have_len != len || memcmp(have, text, len) != 0) {
            fprintf(stderr, "casegen --check: %s: differs from what casegen writes\n", path);
            g->mismatches++;
        }
        free(have);
    } else {
        mkdirs(path);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0)
            die("%s: %s", path, strerror(errno));
    }
    free(text);
    g->count++;
    acase_free(c);
}
