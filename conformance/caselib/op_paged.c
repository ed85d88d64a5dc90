/* op_paged.c — `op: paged` cases (cases/FORMAT.md, "Paged cases"; SPEC.md clause 23): model,
 * strict reader, cross-field rules, deterministic writer and capabilities, one slice over the
 * shared fields (op.h).
 *
 * One table (step_keys) says which keys each step op takes; the reader, the checker and the
 * writer all follow it.  A rejection step (expect.error) may hold any well-formed data (that is
 * what it tests): its tensors' dtypes and shapes and its lengths are not checked against the
 * params. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/paged_case.h"
#include "attnconf/backend.h"
#include "attnref/status.h"
#include "fields.h"
#include "op.h"

/* ---- names and the step table ---------------------------------------------------------- */

/* Keys of a step besides op and expect: R = required, O = optional, - = not allowed. */
enum {
    PK_TABLE,
    PK_SEQ_LENS,
    PK_K,
    PK_V,
    PK_NEW_LENS,
    PK_Q,
    PK_QUERY_LENS,
    PK_CAUSAL,
    PK_WINDOW,
    PK_SCALE,
    PK_SOFTCAP,
    PK_ALIBI,
    PK_SINKS,
    PK_CHUNK,
    PK_COUNT
};
static const char *const pk_names[PK_COUNT] = {
    "block_table", "seq_lens", "k",     "v",       "new_lens",       "q",     "query_lens",
    "causal",      "window",   "scale", "softcap", "alibi_max_bias", "sinks", "chunk"};
static const struct {
    const char *name;
    acase_paged_op op;
    const char *keys; /* PK_COUNT chars */
} step_ops[] = {
    {"append", ACASE_PSTEP_APPEND, "OORRO---------"},
    {"attend", ACASE_PSTEP_ATTEND, "OO---ROOOOOOOO"},
};
#define N_STEP_OPS (sizeof step_ops / sizeof step_ops[0])

const char *acase_paged_op_name(acase_paged_op op)
{
    for (size_t i = 0; i < N_STEP_OPS; i++)
        if (step_ops[i].op == op)
            return step_ops[i].name;
    return NULL;
}

/* ---- model ------------------------------------------------------------------------------ */

acase_paged *acase_paged_new(void)
{
    return calloc(1, sizeof(acase_paged));
}

static void step_free(acase_paged_step *s)
{
    free(s->block_table);
    free(s->seq_lens);
    free(s->k.data);
    free(s->v.data);
    free(s->new_lens);
    free(s->q.data);
    free(s->query_lens);
    free(s->sinks);
    free(s->slots);
    free(s->out);
    free(s->row_check);
    free(s->row_atol);
}

void acase_paged_free(acase_paged *pc)
{
    if (!pc)
        return;
    free(pc->block_table);
    free(pc->seq_lens);
    free(pc->k_pages.data);
    free(pc->v_pages.data);
    for (int64_t i = 0; i < pc->nsteps; i++)
        step_free(&pc->steps[i]);
    free(pc->steps);
    free(pc);
}

acase_paged_step *acase_paged_add_step(acase_paged *pc, acase_paged_op op)
{
    if (!pc || pc->nsteps >= ACASE_MAX_PAGED_STEPS)
        return NULL;
    acase_paged_step *ns = realloc(pc->steps, (size_t)(pc->nsteps + 1) * sizeof *ns);
    if (!ns)
        return NULL;
    pc->steps = ns;
    acase_paged_step *s = &ns[pc->nsteps++];
    memset(s, 0, sizeof *s);
    s->op = op;
    return s;
}

uint64_t acase_paged_requires(const acase_paged *pc)
{
    if (!pc)
        return 0;
    uint64_t r = ATTNCONF_CAP_PAGED | acase__dtype_cap(pc->dtype);
    if (pc->v_head_dim != pc->head_dim)
        r |= ATTNCONF_CAP_DV_NE_D;
    for (int64_t i = 0; i < pc->nsteps; i++) {
        const acase_paged_step *s = &pc->steps[i];
        if (s->op != ACASE_PSTEP_ATTEND)
            continue;
        if (s->q.present && s->q.ndim == 4 && s->q.shape[1] != pc->kv_heads)
            r |= ATTNCONF_CAP_GQA;
        if (s->has_scale)
            r |= ATTNCONF_CAP_SCALE;
        if (s->softcap != 0)
            r |= ATTNCONF_CAP_SOFTCAP;
        if (s->alibi_max_bias != 0)
            r |= ATTNCONF_CAP_ALIBI;
        if (s->sinks)
            r |= ATTNCONF_CAP_SINKS;
        if (s->chunk != 0)
            r |= ATTNCONF_CAP_CHUNK;
    }
    return r;
}

/* ---- cross-field rules -------------------------------------------------------------------- */

static int check_range(acase__chk *k, const char *field, int64_t v, int64_t lo, int64_t hi)
{
    if (v < lo || v > hi)
        return acase__chk_fail(k, field, "%lld is not in %lld..%lld", (long long)v, (long long)lo,
                               (long long)hi);
    return 0;
}

static int check_params(acase__chk *k, const acase_paged *pc)
{
    if (!acase__is_float_dtype(pc->dtype))
        return acase__chk_fail(k, "params.dtype", "must be f32, f16 or bf16");
    if (check_range(k, "params.batch", pc->batch, 1, ACASE_MAX_BATCH) ||
        check_range(k, "params.kv_heads", pc->kv_heads, 1, 4096) ||
        check_range(k, "params.head_dim", pc->head_dim, 1, 65536) ||
        check_range(k, "params.v_head_dim", pc->v_head_dim, 1, 65536) ||
        check_range(k, "params.page_size", pc->page_size, 1, ACASE_MAX_PAGE_SIZE) ||
        check_range(k, "params.num_pages", pc->num_pages, 1, ACASE_MAX_PAGES) ||
        check_range(k, "params.block_table", pc->table_width, 1, ACASE_MAX_TABLE_WIDTH))
        return -1;
    if (!pc->block_table || !pc->seq_lens)
        return acase__chk_fail(k, "params", "block_table and seq_lens are required");
    for (int64_t b = 0; b < pc->batch; b++)
        if (pc->seq_lens[b] < 0 || pc->seq_lens[b] > pc->table_width * pc->page_size)
            return acase__chk_fail(k, "params.seq_lens",
                                   "entry %lld = %lld is not in 0..table_width * page_size",
                                   (long long)b, (long long)pc->seq_lens[b]);
    const struct {
        const char *name;
        const acase_tensor *t;
        int64_t last;
    } pools[2] = {{"pool.k_pages", &pc->k_pages, pc->head_dim},
                  {"pool.v_pages", &pc->v_pages, pc->v_head_dim}};
    for (int i = 0; i < 2; i++) {
        const acase_tensor *t = pools[i].t;
        if (!t->present || !t->data)
            return acase__chk_fail(k, pools[i].name, "required");
        if (t->dtype != pc->dtype)
            return acase__chk_fail(k, pools[i].name, "dtype %s, params.dtype is %s",
                                   attnref_dtype_name(t->dtype), attnref_dtype_name(pc->dtype));
        if (t->ndim != 4 || t->shape[0] != pc->num_pages || t->shape[1] != pc->kv_heads ||
            t->shape[2] != pc->page_size || t->shape[3] != pools[i].last)
            return acase__chk_fail(k, pools[i].name,
                                   "must have shape (num_pages, Hkv, P, %s) = [%lld, %lld, %lld, "
                                   "%lld]",
                                   i ? "Dv" : "D", (long long)pc->num_pages,
                                   (long long)pc->kv_heads, (long long)pc->page_size,
                                   (long long)pools[i].last);
        if (t->source != ACASE_SRC_INLINE || t->stride0 || t->row_pad || t->view_k_prefix)
            return acase__chk_fail(k, pools[i].name,
                                   "inline data only, no stride0, row_pad or view");
        if (t->layout != pools[0].t->layout)
            return acase__chk_fail(k, pools[i].name, "both pools have one layout");
    }
    return 0;
}

/* A step tensor: rank 4 of (B, heads, any >= 0 (q: >= 1 rows not needed), last) in the cache
 * dtype; heads 0 = any multiple of Hkv (q). */
static int check_tensor(acase__chk *k, const char *path, const char *name, const acase_tensor *t,
                        const acase_paged *pc, int64_t heads, int64_t last)
{
    char f[AYR_FIELD_MAX];
    ayr_fieldf(f, "%s.%s", path, name);
    if (!t->present || !t->data)
        return acase__chk_fail(k, f, "required");
    if (t->dtype != pc->dtype)
        return acase__chk_fail(k, f, "dtype %s, the pool holds %s (unless the step is rejected)",
                               attnref_dtype_name(t->dtype), attnref_dtype_name(pc->dtype));
    if (t->stride0 || t->row_pad || t->view_k_prefix)
        return acase__chk_fail(k, f, "stride0, row_pad and view are not used in paged steps");
    if (t->ndim != 4 || t->shape[0] != pc->batch ||
        (heads > 0 ? t->shape[1] != heads : t->shape[1] < 1 || t->shape[1] % pc->kv_heads) ||
        t->shape[3] != last)
        return acase__chk_fail(k, f, "must have shape (B = %lld, %s, L, %lld)",
                               (long long)pc->batch, heads > 0 ? "Hkv" : "Hq = a multiple of Hkv",
                               (long long)last);
    return 0;
}

static int binary32(double x)
{
    return isnan(x) || (double)(float)x == x;
}

static int check_attend(acase__chk *k, const char *path, const acase_paged_step *s,
                        const acase_paged *pc)
{
    char f[AYR_FIELD_MAX];
    if (check_tensor(k, path, "q", &s->q, pc, 0, pc->head_dim))
        return -1;
    const int64_t B = pc->batch, Hq = s->q.shape[1], Lq = s->q.shape[2];
    ayr_fieldf(f, "%s.query_lens", path);
    for (int64_t b = 0; s->query_lens && b < B; b++)
        if (s->query_lens[b] < 0 || s->query_lens[b] > Lq)
            return acase__chk_fail(k, f, "entry %lld = %lld is not in 0..Lq = %lld", (long long)b,
                                   (long long)s->query_lens[b], (long long)Lq);
    ayr_fieldf(f, "%s.window", path);
    if (s->window < 0 || (s->window && !s->causal))
        return acase__chk_fail(k, f, "must be >= 0, and non-zero only with causal: true");
    ayr_fieldf(f, "%s.chunk", path);
    if (s->chunk < 0 || (s->chunk && !s->causal))
        return acase__chk_fail(k, f, "must be >= 0, and non-zero only with causal: true");
    ayr_fieldf(f, "%s.softcap", path);
    if (!isfinite(s->softcap) || s->softcap < 0)
        return acase__chk_fail(k, f, "must be finite and >= 0");
    ayr_fieldf(f, "%s.alibi_max_bias", path);
    if (!isfinite(s->alibi_max_bias) || s->alibi_max_bias < 0)
        return acase__chk_fail(k, f, "must be finite and >= 0");
    ayr_fieldf(f, "%s.sinks", path);
    if (s->sinks && s->nsinks != Hq)
        return acase__chk_fail(k, f, "has %lld values, q has Hq = %lld heads", (long long)s->nsinks,
                               (long long)Hq);
    for (int64_t h = 0; s->sinks && h < s->nsinks; h++)
        if (!isfinite(s->sinks[h]))
            return acase__chk_fail(k, f, "entry %lld must be finite", (long long)h);
    ayr_fieldf(f, "%s.expect.out", path);
    if (!s->out || !s->row_atol)
        return acase__chk_fail(k, f, "an attend step that is not rejected needs out and tolerance");
    if (s->out_dtype != pc->dtype)
        return acase__chk_fail(k, f, "dtype must be the pool's, %s", attnref_dtype_name(pc->dtype));
    if (s->out_shape[0] != B || s->out_shape[1] != Hq || s->out_shape[2] != Lq ||
        s->out_shape[3] != pc->v_head_dim)
        return acase__chk_fail(k, f, "shape must be (B, Hq, Lq, Dv) = [%lld, %lld, %lld, %lld]",
                               (long long)B, (long long)Hq, (long long)Lq,
                               (long long)pc->v_head_dim);
    ayr_fieldf(f, "%s.expect.tolerance", path);
    if (!isfinite(s->ulps) || s->ulps < 0)
        return acase__chk_fail(k, f, "ulps must be finite and >= 0");
    for (int64_t r = 0; r < B * Hq * Lq; r++) {
        if (!isfinite(s->row_atol[r]) || s->row_atol[r] < 0)
            return acase__chk_fail(k, f, "row_atol[%lld] must be finite and >= 0", (long long)r);
        if (s->row_check && s->row_check[r] > ACASE_CHECK_FINITE)
            return acase__chk_fail(k, f, "row_checks: row %lld has mode %u", (long long)r,
                                   (unsigned)s->row_check[r]);
    }
    return 0;
}

static int check_append(acase__chk *k, const char *path, const acase_paged_step *s,
                        const acase_paged *pc)
{
    char f[AYR_FIELD_MAX];
    if (check_tensor(k, path, "k", &s->k, pc, pc->kv_heads, pc->head_dim) ||
        check_tensor(k, path, "v", &s->v, pc, pc->kv_heads, pc->v_head_dim))
        return -1;
    const int64_t S = s->k.shape[2];
    if (s->v.shape[2] != S)
        return acase__chk_fail(k, path, "k and v must have the same S");
    int64_t total = 0;
    ayr_fieldf(f, "%s.new_lens", path);
    for (int64_t b = 0; b < pc->batch; b++) {
        const int64_t n = s->new_lens ? s->new_lens[b] : S;
        if (n < 0 || n > S)
            return acase__chk_fail(k, f, "entry %lld = %lld is not in 0..S = %lld", (long long)b,
                                   (long long)n, (long long)S);
        total += n;
    }
    ayr_fieldf(f, "%s.expect.slots", path);
    if (s->nslots != total || (total && !s->slots))
        return acase__chk_fail(k, f, "has %lld slots, the step appends %lld tokens",
                               (long long)s->nslots, (long long)total);
    for (int64_t i = 0; i < total; i++)
        if (s->slots[2 * i] < 0 || s->slots[2 * i] >= pc->num_pages || s->slots[2 * i + 1] < 0 ||
            s->slots[2 * i + 1] >= pc->page_size)
            return acase__chk_fail(k, f, "slot %lld = [%lld, %lld] is outside the pool",
                                   (long long)i, (long long)s->slots[2 * i],
                                   (long long)s->slots[2 * i + 1]);
    return 0;
}

static int check_step(acase__chk *k, const acase_paged *pc, int64_t i)
{
    const acase_paged_step *s = &pc->steps[i];
    char path[AYR_FIELD_MAX];
    ayr_fieldf(path, "steps[%lld]", (long long)i);
    if (!acase_paged_op_name(s->op))
        return acase__chk_fail(k, path, "unknown op %d", (int)s->op);
    if (s->error && s->error != ATTNREF_EINVAL && s->error != ATTNREF_EDTYPE)
        return acase__chk_fail(k, path, "expect.error must be einval or edtype");
    if (s->block_table && check_range(k, path, s->table_width, 1, ACASE_MAX_TABLE_WIDTH))
        return -1;
    const int attend = s->op == ACASE_PSTEP_ATTEND;
    if (s->error || !attend) {
        if (s->out || s->row_atol || s->row_check)
            return acase__chk_fail(k, path,
                                   "out, tolerance and row_checks only for an attend "
                                   "step that is not rejected");
    }
    if (s->error || attend) {
        if (s->slots || s->nslots)
            return acase__chk_fail(k, path, "slots only for an append step that is not rejected");
    }
    if (attend ? !s->q.present : !s->k.present || !s->v.present)
        return acase__chk_fail(k, path, "the step's tensors are missing");
    if (s->error)
        return 0;
    return attend ? check_attend(k, path, s, pc) : check_append(k, path, s, pc);
}

static int paged_check(acase__chk *k, const acase *c)
{
    const acase_paged *pc = c->paged;
    if (!pc)
        return acase__chk_fail(k, "steps", "required for op paged");
    if (c->q.present || c->k.present || c->v.present || c->mask.present || c->expected.values ||
        c->expected.error || c->lengths || c->left_padding || c->causal || c->has_scale || c->cache)
        return acase__chk_fail(k, "inputs", "op paged keeps inputs and expectations in its steps");
    if (check_params(k, pc))
        return -1;
    if (pc->nsteps < 1 || pc->nsteps > ACASE_MAX_PAGED_STEPS || !pc->steps)
        return acase__chk_fail(k, "steps", "expected 1..%d steps", ACASE_MAX_PAGED_STEPS);
    for (int64_t i = 0; i < pc->nsteps; i++)
        if (check_step(k, pc, i))
            return -1;
    return 0;
}

/* ---- reader ------------------------------------------------------------------------------ */

/* Exactly `want` floats. */
static int rd_doubles(acase__rd *r, yaml_node_t *n, const char *field, int64_t want, double **out)
{
    size_t len;
    if (ayr_seq(&r->y, n, field, "a sequence of floats", &len))
        return -1;
    if ((int64_t)len != want)
        return ayr_fail(&r->y, n, field, "has %zu values, expected %lld", len, (long long)want);
    if (acase__rd_charge(r, n, field, want))
        return -1;
    double *a = calloc(len ? len : 1, sizeof *a);
    if (!a)
        return ayr_fail(&r->y, n, field, "out of memory");
    if (ayr_items(&r->y, n, field, len, NULL, a)) {
        free(a);
        return -1;
    }
    *out = a;
    return 0;
}

/* Exactly `batch` ints (any values). */
static int rd_row_ints(acase__rd *r, yaml_node_t *n, const char *field, int64_t batch,
                       int64_t **out)
{
    int64_t cnt;
    if (ayr_int_list(&r->y, n, field, ACASE_MAX_BATCH, out, &cnt))
        return -1;
    if (cnt != batch)
        return ayr_fail(&r->y, n, field, "has %lld entries, batch is %lld", (long long)cnt,
                        (long long)batch);
    return 0;
}

/* block_table: `batch` rows of one width (1..ACASE_MAX_TABLE_WIDTH) of int32 values. */
static int rd_table(acase__rd *r, yaml_node_t *n, const char *field, int64_t batch, int32_t **out,
                    int64_t *width)
{
    size_t nb;
    if (ayr_seq(&r->y, n, field, "a sequence (rows) of sequences of page indices", &nb))
        return -1;
    if ((int64_t)nb != batch)
        return ayr_fail(&r->y, n, field, "has %zu rows, batch is %lld", nb, (long long)batch);
    int64_t *row = NULL;
    for (int64_t b = 0; b < batch; b++) {
        char fb[AYR_FIELD_MAX];
        int64_t cnt;
        yaml_node_t *it = ayr_item_at(&r->y, n, field, (size_t)b, fb);
        if (!it || ayr_int_list(&r->y, it, fb, ACASE_MAX_TABLE_WIDTH, &row, &cnt))
            return -1;
        if (b == 0) {
            if (cnt < 1) {
                free(row);
                return ayr_fail(&r->y, it, fb, "a row needs at least one entry");
            }
            *width = cnt;
            if (acase__rd_charge(r, n, field, batch * cnt) ||
                !(*out = calloc((size_t)(batch * cnt), sizeof **out))) {
                free(row);
                return *out ? -1 : ayr_fail(&r->y, n, field, "out of memory");
            }
        } else if (cnt != *width) {
            free(row);
            return ayr_fail(&r->y, it, fb, "has %lld entries, row 0 has %lld", (long long)cnt,
                            (long long)*width);
        }
        for (int64_t e = 0; e < cnt; e++) {
            if (row[e] < INT32_MIN || row[e] > INT32_MAX) {
                free(row);
                return ayr_fail(&r->y, it, fb, "entry %lld is not an int32", (long long)e);
            }
            (*out)[b * cnt + e] = (int32_t)row[e];
        }
        free(row);
        row = NULL;
    }
    return 0;
}

static int rd_params(acase__rd *r, yaml_node_t *root, yaml_node_t *n, acase_paged *pc)
{
    ayr_field s[] = {{"dtype", 1, NULL},     {"batch", 1, NULL},       {"kv_heads", 1, NULL},
                     {"head_dim", 1, NULL},  {"v_head_dim", 0, NULL},  {"page_size", 1, NULL},
                     {"num_pages", 1, NULL}, {"block_table", 1, NULL}, {"seq_lens", 1, NULL}};
    int64_t *ints[] = {NULL,           &pc->batch,    &pc->kv_heads, &pc->head_dim, &pc->v_head_dim,
                       &pc->page_size, &pc->num_pages};
    char f[AYR_FIELD_MAX];
    if (!n)
        return ayr_fail(&r->y, root, "params", "required key missing");
    if (ayr_map(&r->y, n, "params", s, sizeof s / sizeof s[0]))
        return -1;
    if (acase__rd_dtype(&r->y, s[0].val, "params.dtype", &pc->dtype))
        return -1;
    for (size_t i = 1; i < sizeof ints / sizeof ints[0]; i++) {
        ayr_fieldf(f, "params.%s", s[i].key);
        if (s[i].val && ayr_int(&r->y, s[i].val, f, ints[i]))
            return -1;
    }
    if (!s[4].val)
        pc->v_head_dim = pc->head_dim;
    if (pc->batch < 1 || pc->batch > ACASE_MAX_BATCH)
        return ayr_fail(&r->y, s[1].val, "params.batch", "%lld is not in 1..%d",
                        (long long)pc->batch, ACASE_MAX_BATCH);
    return rd_table(r, s[7].val, "params.block_table", pc->batch, &pc->block_table,
                    &pc->table_width) ||
           rd_row_ints(r, s[8].val, "params.seq_lens", pc->batch, &pc->seq_lens);
}

/* expect.slots: per row, a sequence of [page, slot] pairs. */
static int rd_slots(acase__rd *r, yaml_node_t *n, const char *field, const acase_paged *pc,
                    acase_paged_step *st)
{
    size_t nb;
    if (ayr_seq(&r->y, n, field, "a sequence (rows) of [page, slot] lists", &nb))
        return -1;
    if ((int64_t)nb != pc->batch)
        return ayr_fail(&r->y, n, field, "has %zu rows, batch is %lld", nb, (long long)pc->batch);
    const int64_t S = st->k.ndim == 4 ? st->k.shape[2] : 0;
    int64_t total = 0;
    for (int64_t b = 0; b < pc->batch; b++) {
        const int64_t nl = st->new_lens ? st->new_lens[b] : S;
        if (nl < 0 || nl > S)
            return ayr_fail(&r->y, n, field, "new_lens[%lld] = %lld is not in 0..S", (long long)b,
                            (long long)nl);
        total += nl;
    }
    if (acase__rd_charge(r, n, field, 2 * total))
        return -1;
    if (!(st->slots = calloc((size_t)(2 * total + 1), sizeof *st->slots)))
        return ayr_fail(&r->y, n, field, "out of memory");
    st->nslots = total;
    int64_t i = 0;
    for (int64_t b = 0; b < pc->batch; b++) {
        char fb[AYR_FIELD_MAX];
        size_t cnt;
        yaml_node_t *row = ayr_item_at(&r->y, n, field, (size_t)b, fb);
        if (!row || ayr_seq(&r->y, row, fb, "a sequence of [page, slot] pairs", &cnt))
            return -1;
        const int64_t nl = st->new_lens ? st->new_lens[b] : S;
        if ((int64_t)cnt != nl)
            return ayr_fail(&r->y, row, fb, "has %zu slots, row %lld appends %lld tokens", cnt,
                            (long long)b, (long long)nl);
        for (size_t t = 0; t < cnt; t++, i++) {
            char ft[AYR_FIELD_MAX];
            size_t two;
            yaml_node_t *pr = ayr_item_at(&r->y, row, fb, t, ft);
            if (!pr || ayr_seq(&r->y, pr, ft, "[page, slot]", &two))
                return -1;
            if (two != 2)
                return ayr_fail(&r->y, pr, ft, "expected [page, slot]");
            if (ayr_items(&r->y, pr, ft, 2, &st->slots[2 * i], NULL))
                return -1;
        }
    }
    return 0;
}

/* expect: {error} | {slots} (append) | {out, tolerance, row_checks?} (attend). */
static int rd_expect(acase__rd *r, yaml_node_t *n, const char *path, const acase_paged *pc,
                     acase_paged_step *st)
{
    ayr_field s[] = {{"error", 0, NULL},
                     {"slots", 0, NULL},
                     {"out", 0, NULL},
                     {"tolerance", 0, NULL},
                     {"row_checks", 0, NULL}};
    char f[AYR_FIELD_MAX], why[128];
    if (ayr_map(&r->y, n, path, s, sizeof s / sizeof s[0]))
        return -1;
    if (s[0].val) {
        const char *name;
        ayr_fieldf(f, "%s.error", path);
        if (ayr_str(&r->y, s[0].val, f, &name))
            return -1;
        if (!(st->error = acase__error_from_name(name)))
            return ayr_fail(&r->y, s[0].val, f, "unknown error '%s' (expected edtype or einval)",
                            name);
    }
    const int attend = st->op == ACASE_PSTEP_ATTEND;
    for (int i = 1; i < 5; i++) {
        const int mine = (i == 1) != attend && !st->error;
        ayr_fieldf(f, "%s.%s", path, s[i].key);
        if (mine && !s[i].val && i < 4)
            return ayr_fail(&r->y, n, f, "required key missing (an %s step that is not rejected)",
                            attend ? "attend" : "append");
        if (s[i].val && !mine)
            return ayr_fail(&r->y, s[i].val, f, "only for an %s step that is not rejected",
                            i == 1 ? "append" : "attend");
    }
    if (st->error)
        return 0;
    if (!attend) {
        ayr_fieldf(f, "%s.slots", path);
        return rd_slots(r, s[1].val, f, pc, st);
    }
    ayr_field o[] = {{"dtype", 1, NULL}, {"shape", 1, NULL}, {"data", 1, NULL}};
    ayr_fieldf(f, "%s.out", path);
    if (ayr_map(&r->y, s[2].val, f, o, 3))
        return -1;
    ayr_fieldf(f, "%s.out.dtype", path);
    if (acase__rd_dtype(&r->y, o[0].val, f, &st->out_dtype))
        return -1;
    ayr_fieldf(f, "%s.out.shape", path);
    int32_t nd;
    if (acase__rd_shape(&r->y, o[1].val, f, &nd, st->out_shape))
        return -1;
    if (nd != 4)
        return ayr_fail(&r->y, o[1].val, f, "expected 4 extents (B, Hq, Lq, Dv)");
    int64_t no;
    if (acase_numel(4, st->out_shape, &no, why, sizeof why))
        return ayr_fail(&r->y, o[1].val, f, "%s", why);
    ayr_fieldf(f, "%s.out.data", path);
    if (rd_doubles(r, o[2].val, f, no, &st->out))
        return -1;
    ayr_field t[] = {{"ulps", 1, NULL}, {"row_atol", 1, NULL}};
    ayr_fieldf(f, "%s.tolerance", path);
    if (ayr_map(&r->y, s[3].val, f, t, 2))
        return -1;
    ayr_fieldf(f, "%s.tolerance.ulps", path);
    if (ayr_double(&r->y, t[0].val, f, &st->ulps))
        return -1;
    ayr_fieldf(f, "%s.tolerance.row_atol", path);
    const int64_t nrows = st->out_shape[0] * st->out_shape[1] * st->out_shape[2];
    if (rd_doubles(r, t[1].val, f, nrows, &st->row_atol))
        return -1;
    return s[4].val ? acase__rd_row_checks(r, s[4].val, path, &st->row_check, nrows) : 0;
}

static int rd_step(acase__rd *r, yaml_node_t *n, int64_t i, acase_paged *pc)
{
    char path[AYR_FIELD_MAX], f[AYR_FIELD_MAX];
    ayr_fieldf(path, "steps[%lld]", (long long)i);
    ayr_field s[2 + PK_COUNT] = {{"op", 1, NULL}, {"expect", 1, NULL}};
    for (int k = 0; k < PK_COUNT; k++)
        s[2 + k].key = pk_names[k];
    if (ayr_map(&r->y, n, path, s, sizeof s / sizeof s[0]))
        return -1;
    const char *name;
    ayr_fieldf(f, "%s.op", path);
    if (ayr_str(&r->y, s[0].val, f, &name))
        return -1;
    int oi = -1;
    for (size_t k = 0; k < N_STEP_OPS && oi < 0; k++)
        if (strcmp(step_ops[k].name, name) == 0)
            oi = (int)k;
    if (oi < 0)
        return ayr_fail(&r->y, s[0].val, f, "unknown step op '%s' (expected append or attend)",
                        name);
    acase_paged_step *st = acase_paged_add_step(pc, step_ops[oi].op);
    if (!st)
        return ayr_fail(&r->y, n, path, "out of memory, or more than %d steps",
                        ACASE_MAX_PAGED_STEPS);
    yaml_node_t *v[PK_COUNT];
    for (int k = 0; k < PK_COUNT; k++) {
        char want = step_ops[oi].keys[k];
        v[k] = s[2 + k].val;
        ayr_fieldf(f, "%s.%s", path, pk_names[k]);
        if (want == 'R' && !v[k])
            return ayr_fail(&r->y, n, f, "required key missing (op %s)", name);
        if (want == '-' && v[k])
            return ayr_fail(&r->y, v[k], f, "not allowed for op %s", name);
    }
    char fk[AYR_FIELD_MAX];
#define KPATH(key) (ayr_fieldf(fk, "%s.%s", path, (key)), fk)
    if (v[PK_TABLE] && rd_table(r, v[PK_TABLE], KPATH("block_table"), pc->batch, &st->block_table,
                                &st->table_width))
        return -1;
    if (v[PK_SEQ_LENS] &&
        rd_row_ints(r, v[PK_SEQ_LENS], KPATH("seq_lens"), pc->batch, &st->seq_lens))
        return -1;
    if (v[PK_K] && acase__rd_tensor(r, v[PK_K], KPATH("k"), &st->k))
        return -1;
    if (v[PK_V] && acase__rd_tensor(r, v[PK_V], KPATH("v"), &st->v))
        return -1;
    if (v[PK_NEW_LENS] &&
        rd_row_ints(r, v[PK_NEW_LENS], KPATH("new_lens"), pc->batch, &st->new_lens))
        return -1;
    if (v[PK_Q] && acase__rd_tensor(r, v[PK_Q], KPATH("q"), &st->q))
        return -1;
    if (v[PK_QUERY_LENS] &&
        rd_row_ints(r, v[PK_QUERY_LENS], KPATH("query_lens"), pc->batch, &st->query_lens))
        return -1;
    if (v[PK_CAUSAL] && ayr_bool(&r->y, v[PK_CAUSAL], KPATH("causal"), &st->causal))
        return -1;
    if (v[PK_WINDOW] && ayr_int(&r->y, v[PK_WINDOW], KPATH("window"), &st->window))
        return -1;
    if (v[PK_SCALE]) {
        if (ayr_double(&r->y, v[PK_SCALE], KPATH("scale"), &st->scale))
            return -1;
        st->has_scale = 1;
    }
    if (v[PK_SOFTCAP] && ayr_double(&r->y, v[PK_SOFTCAP], KPATH("softcap"), &st->softcap))
        return -1;
    if (v[PK_ALIBI] && ayr_double(&r->y, v[PK_ALIBI], KPATH("alibi_max_bias"), &st->alibi_max_bias))
        return -1;
    if (v[PK_SINKS]) {
        size_t ns;
        if (ayr_seq(&r->y, v[PK_SINKS], KPATH("sinks"), "a sequence of floats", &ns))
            return -1;
        if (ns < 1 || ns > 4096)
            return ayr_fail(&r->y, v[PK_SINKS], fk, "expected 1..4096 values");
        if (rd_doubles(r, v[PK_SINKS], fk, (int64_t)ns, &st->sinks))
            return -1;
        st->nsinks = (int64_t)ns;
    }
    if (v[PK_CHUNK] && ayr_int(&r->y, v[PK_CHUNK], KPATH("chunk"), &st->chunk))
        return -1;
#undef KPATH
    /* softcap, alibi_max_bias and the sinks are exactly binary32 values (the ABI passes sinks
     * as f32; FORMAT.md asks the same of the scalars), even in a rejection step. */
    ayr_fieldf(f, "%s.softcap", path);
    if (!binary32(st->softcap))
        return ayr_fail(&r->y, v[PK_SOFTCAP], f, "must be exactly a binary32 value");
    ayr_fieldf(f, "%s.alibi_max_bias", path);
    if (!binary32(st->alibi_max_bias))
        return ayr_fail(&r->y, v[PK_ALIBI], f, "must be exactly a binary32 value");
    ayr_fieldf(f, "%s.sinks", path);
    for (int64_t h = 0; h < st->nsinks; h++)
        if (!binary32(st->sinks[h]))
            return ayr_fail(&r->y, v[PK_SINKS], f, "entry %lld is not a binary32 value",
                            (long long)h);
    ayr_fieldf(f, "%s.expect", path);
    return rd_expect(r, s[1].val, f, pc, st);
}

static int paged_read(acase__rd *r, const struct acase_op_nodes *nodes, acase *c)
{
    yaml_node_t *x = nodes->inputs     ? nodes->inputs
                     : nodes->expected ? nodes->expected
                                       : nodes->tolerance;
    if (x)
        return ayr_fail(&r->y, x,
                        nodes->inputs     ? "inputs"
                        : nodes->expected ? "expected"
                                          : "tolerance",
                        "not allowed for op paged (its steps hold inputs and expectations)");
    if (!nodes->steps)
        return ayr_fail(&r->y, nodes->root, "steps", "required key missing (op paged)");
    if (!nodes->pool)
        return ayr_fail(&r->y, nodes->root, "pool", "required key missing (op paged)");
    if (!(c->paged = acase_paged_new()))
        return ayr_fail(&r->y, nodes->root, "steps", "out of memory");
    acase_paged *pc = c->paged;
    if (rd_params(r, nodes->root, nodes->params, pc))
        return -1;
    ayr_field p[] = {{"k_pages", 1, NULL}, {"v_pages", 1, NULL}};
    if (ayr_map(&r->y, nodes->pool, "pool", p, 2) ||
        acase__rd_tensor(r, p[0].val, "pool.k_pages", &pc->k_pages) ||
        acase__rd_tensor(r, p[1].val, "pool.v_pages", &pc->v_pages))
        return -1;
    char field[AYR_FIELD_MAX], why[256];
    acase__chk k = {field, sizeof field, why, sizeof why};
    if (check_params(&k, pc))
        return ayr_fail_at(&r->y, ayr_mark(&r->y, field), field, "%s", why);
    size_t n;
    if (ayr_seq(&r->y, nodes->steps, "steps", "a sequence of steps", &n))
        return -1;
    if (n < 1 || n > ACASE_MAX_PAGED_STEPS)
        return ayr_fail(&r->y, nodes->steps, "steps", "expected 1..%d steps, got %zu",
                        ACASE_MAX_PAGED_STEPS, n);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *it = ayr_item(&r->y, nodes->steps, i);
        if (!it)
            return ayr_fail(&r->y, nodes->steps, "steps", "malformed sequence");
        if (rd_step(r, it, (int64_t)i, pc))
            return -1;
    }
    return 0;
}

/* ---- writer ------------------------------------------------------------------------------ */

static void w_table(ayw *w, const char *key, const int32_t *table, int64_t batch, int64_t width)
{
    ayw_plain(w, key);
    ayw_seq(w, 1);
    for (int64_t b = 0; b < batch; b++) {
        ayw_seq(w, 1);
        for (int64_t e = 0; e < width; e++)
            ayw_int(w, table[b * width + e]);
        ayw_seq_end(w);
    }
    ayw_seq_end(w);
}

static void w_expect(ayw *w, const acase_paged *pc, const acase_paged_step *s)
{
    ayw_plain(w, "expect");
    ayw_map(w, 1);
    if (s->error) {
        ayw_plain(w, "error");
        ayw_plain(w, acase__error_name(s->error));
    } else if (s->op == ACASE_PSTEP_APPEND) {
        ayw_plain(w, "slots");
        ayw_seq(w, 1);
        const int64_t S = s->k.shape[2];
        int64_t i = 0;
        for (int64_t b = 0; b < pc->batch; b++) {
            ayw_seq(w, 1);
            for (int64_t t = 0, n = s->new_lens ? s->new_lens[b] : S; t < n; t++, i++)
                ayw_ints(w, &s->slots[2 * i], 2);
            ayw_seq_end(w);
        }
        ayw_seq_end(w);
    } else {
        const int64_t nrows = s->out_shape[0] * s->out_shape[1] * s->out_shape[2];
        ayw_plain(w, "out");
        ayw_map(w, 1);
        ayw_plain(w, "dtype");
        ayw_plain(w, attnref_dtype_name(s->out_dtype));
        ayw_kints(w, "shape", s->out_shape, 4);
        ayw_plain(w, "data");
        ayw_doubles(w, s->out, nrows * s->out_shape[3], 0);
        ayw_map_end(w);
        ayw_plain(w, "tolerance");
        ayw_map(w, 1);
        ayw_plain(w, "ulps");
        ayw_double_short(w, s->ulps);
        ayw_plain(w, "row_atol");
        ayw_doubles(w, s->row_atol, nrows, 1);
        ayw_map_end(w);
        acase__w_row_checks(w, s->row_check, nrows);
    }
    ayw_map_end(w);
}

static void paged_write(ayw *w, const acase *c)
{
    const acase_paged *pc = c->paged;
    ayw_plain(w, "params");
    ayw_map(w, 1);
    ayw_plain(w, "dtype");
    ayw_plain(w, attnref_dtype_name(pc->dtype));
    ayw_kint(w, "batch", pc->batch);
    ayw_kint(w, "kv_heads", pc->kv_heads);
    ayw_kint(w, "head_dim", pc->head_dim);
    if (pc->v_head_dim != pc->head_dim)
        ayw_kint(w, "v_head_dim", pc->v_head_dim);
    ayw_kint(w, "page_size", pc->page_size);
    ayw_kint(w, "num_pages", pc->num_pages);
    w_table(w, "block_table", pc->block_table, pc->batch, pc->table_width);
    ayw_kints(w, "seq_lens", pc->seq_lens, pc->batch);
    ayw_map_end(w);
    ayw_plain(w, "pool");
    ayw_map(w, 0);
    acase__w_tensor(w, "k_pages", &pc->k_pages);
    acase__w_tensor(w, "v_pages", &pc->v_pages);
    ayw_map_end(w);
    ayw_plain(w, "steps");
    ayw_seq(w, 0);
    for (int64_t i = 0; i < pc->nsteps && !w->failed; i++) {
        const acase_paged_step *s = &pc->steps[i];
        ayw_map(w, 0);
        ayw_plain(w, "op");
        ayw_plain(w, acase_paged_op_name(s->op));
        if (s->block_table)
            w_table(w, "block_table", s->block_table, pc->batch, s->table_width);
        if (s->seq_lens)
            ayw_kints(w, "seq_lens", s->seq_lens, pc->batch);
        if (s->op == ACASE_PSTEP_APPEND) {
            acase__w_tensor(w, "k", &s->k);
            acase__w_tensor(w, "v", &s->v);
            if (s->new_lens)
                ayw_kints(w, "new_lens", s->new_lens, pc->batch);
        } else {
            acase__w_tensor(w, "q", &s->q);
            if (s->query_lens)
                ayw_kints(w, "query_lens", s->query_lens, pc->batch);
            if (s->causal) {
                ayw_plain(w, "causal");
                ayw_plain(w, "true");
            }
            if (s->window)
                ayw_kint(w, "window", s->window);
            if (s->has_scale) {
                ayw_plain(w, "scale");
                ayw_double_short(w, s->scale);
            }
            if (s->softcap != 0) {
                ayw_plain(w, "softcap");
                ayw_double_short(w, s->softcap);
            }
            if (s->alibi_max_bias != 0) {
                ayw_plain(w, "alibi_max_bias");
                ayw_double_short(w, s->alibi_max_bias);
            }
            if (s->sinks) {
                ayw_plain(w, "sinks");
                ayw_doubles(w, s->sinks, s->nsinks, 1);
            }
            if (s->chunk)
                ayw_kint(w, "chunk", s->chunk);
        }
        w_expect(w, pc, s);
        ayw_map_end(w);
    }
    ayw_seq_end(w);
}

/* ---- the op ----------------------------------------------------------------------------- */

static uint64_t paged_requires(const acase *c)
{
    return acase_paged_requires(c->paged);
}

static void paged_free(acase *c)
{
    acase_paged_free(c->paged);
    c->paged = NULL;
}

const struct acase_op_impl acase__op_paged = {.name = "paged",
                                              .op = ACASE_OP_PAGED,
                                              .read = paged_read,
                                              .check = paged_check,
                                              .write = paged_write,
                                              .requires = paged_requires,
                                              .free = paged_free};
