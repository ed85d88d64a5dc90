/* bench_run.c — time one perf shape on a backend, in this process (bench.h).  The CLI
 * (bench.c) calls bb_run in a forked child, so a crash costs one shape and getrusage's peak
 * resident set is the shape's own.
 *
 * Inputs: q, k, v contiguous (B, H, L, D) in the dtype, uniform in [-1, 1) from SplitMix64
 * (attncase/case.h) on a grid exact in the dtype (fill()), seeded from the benchmark id and the
 * tensor, so every backend sees the same numbers.  out has the ABI's minimum capacity (numel x
 * 4 bytes); only its first numel x sizeof(dtype) bytes are written by the harness (a NaN
 * pattern before the validated call), so a correct backend's resident memory is what it
 * touches itself.
 *
 * Sequence: one call whose result is validated (bench_validate.c; it is also the warm-up),
 * then timed calls until their total reaches min_time and their count min_reps, or max_reps.
 * A call's time is the wall time around it, or what the backend reports for it (an exec:
 * adapter's "seconds", when the caller passes `reported`).  min_time always counts wall time,
 * so an adapter whose transport dwarfs its call (a decode step's cache through a pipe) takes
 * about as long as a plugin would, not thousands of repetitions.
 * Before each timed call the sign of one element of q flips (a different element each time),
 * so a backend cannot return a cached result; the change costs nothing measurable.
 * A memory-bound shape also has the machine's read bandwidth measured beside it: between the
 * timed calls, --peak's read loop over a buffer of its own (beside_maybe: about a quarter of
 * the benchmark's time, spread over its repetitions), so its "% of limit" is of the bandwidth
 * of the same minutes, whatever the backend (an exec: adapter waits on its pipe meanwhile).
 */
#define _POSIX_C_SOURCE 200809L

#include "bench.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "attnref/sdpa.h"
#include "common/clip.h"
#include "common/clock.h"
#include "results/result.h"
#include "run/run.h"
#include "common/jsonv.h"
#include "backend/call.h"
#include "backend/plugin.h"

json_t *bb_shape_json(const bs_shape *s, attnref_dtype dt, bb_via via, const char *status,
                      const char *message)
{
    char id[ACASE_ID_MAX + 8];
    snprintf(id, sizeof id, "%s.%s", s->id, bs_dtype_name(dt));
    bs_counts c;
    bs_count(s, dt, &c);
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(id));
    json_object_set_new(o, "dtype", json_string(bs_dtype_name(dt)));
    json_object_set_new(o, "b", json_integer(s->b));
    json_object_set_new(o, "hq", json_integer(s->hq));
    json_object_set_new(o, "hkv", json_integer(s->hkv));
    json_object_set_new(o, "lq", json_integer(s->lq));
    json_object_set_new(o, "lk", json_integer(s->lk));
    json_object_set_new(o, "d", json_integer(s->d));
    json_object_set_new(o, "dv", json_integer(s->dv));
    json_object_set_new(o, "causal", json_boolean(s->causal));
    json_object_set_new(o, "window", json_integer(s->window));
    if (s->page_size > 0) /* a paged shape (a contiguous one's keys stay as they were) */
        json_object_set_new(o, "page_size", json_integer(s->page_size));
    json_object_set_new(o, "bound",
                        json_string(s->bound == BS_BOUND_MEMORY ? "memory" : "compute"));
    if (s->curve[0]) /* a point of a cost curve (the suite's "curves") */
        json_object_set_new(o, "curve", json_string(s->curve));
    json_object_set_new(o, "via", json_string(via == BB_VIA_MASK ? "mask" : "params"));
    json_object_set_new(o, "status", json_string(status));
    json_object_set_new(o, "message", json_string(message));
    json_object_set_new(o, "visible_pairs", json_integer(c.visible_pairs));
    json_object_set_new(o, "flops", json_real(c.flops));
    json_object_set_new(o, "kv_bytes", json_integer(c.kv_bytes));
    json_object_set_new(o, "io_bytes", json_integer(c.io_bytes));
    json_object_set_new(o, "reps", json_integer(0));
    json_object_set_new(o, "times_s", json_array());
    static const char *const unmeasured[] = {"median_s", "min_s",     "iqr_s",         "gflops",
                                             "kv_gbs",   "pct_limit", "peak_rss_bytes"};
    for (size_t x = 0; x < sizeof unmeasured / sizeof unmeasured[0]; x++)
        json_object_set_new(o, unmeasured[x], json_null());
    json_object_set_new(o, "validated_rows", json_integer(0));
    json_object_set_new(o, "max_err_ratio", json_null());
    json_object_set_new(o, "huge_page_bytes", json_null()); /* set after a correct first call */
    return o;
}

static void set_status(json_t *o, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_status(json_t *o, const char *status, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_object_set_new(o, "status", json_string(status));
    json_object_set_new(o, "message", json_string(msg));
}

/* A seed per benchmark and tensor (FNV-1a of the id, then the tensor's number). */
static uint64_t seed_of(const char *id, int tensor)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = id; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return h ^ (0x9E3779B97F4A7C15ull * (uint64_t)(tensor + 1));
}

/* Element x of a tensor: u uniform on the grid k 2^(1-p) - 1, k in [0, 2^p), p = 24, 11 or 8
 * the significand bits of f32, f16 or bf16, so every value in [-1, 1) is exact in the dtype
 * and is stored without a rounding step (attnref's exact conversions cost ~30 ns an element,
 * too slow for inputs of a GiB).  An f16 on that grid is 0 or normal: its bits come straight
 * from the f32's. */
static void fill(void *data, attnref_dtype dt, int64_t n, uint64_t seed)
{
    const int p = dt == ATTNREF_F32 ? 24 : dt == ATTNREF_F16 ? 11 : 8;
    for (int64_t x = 0; x < n; x++) {
        const int64_t k = (int64_t)(acase_splitmix64_next(&seed) >> (64 - p));
        const float f = (float)(k - ((int64_t)1 << (p - 1))) * ldexpf(1.0f, 1 - p);
        uint32_t b;
        memcpy(&b, &f, sizeof b);
        if (dt == ATTNREF_F32) {
            ((float *)data)[x] = f;
        } else if (dt == ATTNREF_BF16) {
            ((uint16_t *)data)[x] = (uint16_t)(b >> 16);
        } else {
            const uint32_t sign = (b >> 16) & 0x8000u, e = (b >> 23) & 0xFFu;
            ((uint16_t *)data)[x] =
                (uint16_t)(e == 0 ? sign : sign | ((e - 127 + 15) << 10) | ((b >> 13) & 0x3FFu));
        }
    }
}

/* The sign bit of element x of q. */
static void flip_sign(void *q, attnref_dtype dt, int64_t x)
{
    if (dt == ATTNREF_F32)
        ((uint32_t *)q)[x] ^= 0x80000000u;
    else
        ((uint16_t *)q)[x] ^= 0x8000u;
}

static void *alloc(size_t bytes)
{
    void *p = NULL;
    return posix_memalign(&p, 64, bytes ? bytes : 64) == 0 ? p : NULL;
}

/* The structure as a boolean mask (B, 1, Lq, Lk), or (B, 1, 1, Lk) when every row keeps the
 * same keys (neither causal, window nor documents). */
static void fill_mask(const bs_shape *s, uint8_t *m, int64_t rows)
{
    const attnref_sdpa_params p = {.causal = s->causal,
                                   .has_causal_offset = s->has_causal_offset,
                                   .causal_offset = s->causal_offset,
                                   .window = s->window,
                                   .batch = s->b,
                                   .lengths = s->lengths,
                                   .left_padding = s->left_padding,
                                   .chunk = s->chunk,
                                   .segment_ids = s->segment_ids,
                                   .block_ids = s->block_ids};
    for (int64_t b = 0; b < s->b; b++)
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < s->lk; j++)
                *m++ = (uint8_t)attnref_sdpa_key_kept(&p, s->lq, s->lk, b, i, j);
}

/* The output descriptor the backend left: NULL if usable (same buffer, dtype, shape; strides
 * inside the buffer), else why not. */
static const char *output_problem(const attnconf_tensor *before, const attnconf_tensor *after,
                                  size_t capacity, char *buf, size_t n)
{
    if (after->data != before->data)
        return "the backend replaced the output data pointer";
    if (after->dtype != before->dtype) {
        snprintf(buf, n, "output dtype %s, expected %s (SPEC clause 8: never upcast)",
                 after->dtype >= 1 && after->dtype <= 3 ? bs_dtype_name((attnref_dtype)after->dtype)
                                                        : "unknown",
                 bs_dtype_name((attnref_dtype)before->dtype));
        return buf;
    }
    int64_t last = 0;
    for (int d = 0; d < 4; d++) {
        if (after->ndim != 4 || after->shape[d] != before->shape[d])
            return "the backend changed the output shape";
        if (after->strides[d] < 0 || after->strides[d] > ((int64_t)1 << 40))
            return "the backend set a negative or huge output stride";
        last += (after->shape[d] - 1) * after->strides[d];
    }
    if ((uint64_t)(last + 1) * attnref_dtype_size((attnref_dtype)after->dtype) > capacity)
        return "the backend's output strides address past the buffer";
    return NULL;
}

static void stats(json_t *o, double *t, int64_t n, const bs_shape *s, attnref_dtype dt,
                  const bp_machine *m)
{
    json_t *arr = json_array();
    for (int64_t x = 0; x < n; x++)
        json_array_append_new(arr, json_real(t[x]));
    json_object_set_new(o, "times_s", arr);
    json_object_set_new(o, "reps", json_integer(n));
    gsl_sort(t, 1, (size_t)n);
    const double med = gsl_stats_median_from_sorted_data(t, 1, (size_t)n);
    const double iqr = gsl_stats_quantile_from_sorted_data(t, 1, (size_t)n, 0.75) -
                       gsl_stats_quantile_from_sorted_data(t, 1, (size_t)n, 0.25);
    bs_counts c;
    bs_count(s, dt, &c);
    json_object_set_new(o, "median_s", json_real(med));
    json_object_set_new(o, "min_s", json_real(t[0]));
    json_object_set_new(o, "iqr_s", json_real(iqr));
    if (!(med > 0))
        return; /* a clock too coarse for the call: no rates */
    const double gflops = c.flops / med / 1e9, gbs = (double)c.kv_bytes / med / 1e9;
    json_object_set_new(o, "gflops", json_real(gflops));
    json_object_set_new(o, "kv_gbs", json_real(gbs));
    const double limit = s->bound == BS_BOUND_MEMORY ? m->mem_read_gbs : m->fma_gflops;
    if (limit > 0)
        json_object_set_new(
            o, "pct_limit",
            json_real(100.0 * (s->bound == BS_BOUND_MEMORY ? gbs : gflops) / limit));
}

static void progress_line(FILE *f, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void progress_line(FILE *f, const char *prefix, const char *fmt, ...)
{
    if (!f)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(f, "\r\033[K%s: ", prefix);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fflush(f);
}

/* The read bandwidth beside a memory-bound shape (perf/README.md): bp_measure's read loop, in
 * this process, between the timed repetitions, so the shape's "% of limit" is of the bandwidth
 * the machine had while it ran, not at the start of a long run on a machine shared with other
 * tenants.  The buffer is max(K + V bytes, 4 x the last-level cache) (64 MiB when the cache
 * size is unknown), at most a quarter of the memory available: larger than any cache, so what
 * it measures is memory, as --peak's. */
typedef struct beside {
    bp_reader r;       /* r.buf NULL: no buffer (compute-bound, or it could not be had) */
    double *gbs;       /* one figure per pass, at most one pass per repetition */
    int64_t n;         /* passes measured */
    double read_s;     /* their wall time */
    double rss_before; /* peak resident bytes before the buffer existed */
    int64_t huge;      /* bytes of the buffer on huge pages, -1 unknown */
    char note[300];    /* why there is no figure, "" when none is owed */
} beside;

static void beside_open(beside *b, const bs_shape *s, size_t kv_bytes, const bb_config *cfg)
{
    memset(b, 0, sizeof *b);
    if (s->bound != BS_BOUND_MEMORY)
        return;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) /* ru_maxrss is in KiB on Linux */
        b->rss_before = (double)ru.ru_maxrss * 1024;
    const uint64_t llc = bp_llc_bytes(), floor = 4 * (llc ? llc : (uint64_t)16 << 20);
    char why[200];
    b->gbs = calloc((size_t)cfg->max_reps, sizeof *b->gbs);
    if (!b->gbs)
        snprintf(why, sizeof why, "out of memory");
    const int64_t huge_before = bpg_anon_huge_bytes();
    if (!b->gbs || bp_reader_open(&b->r, kv_bytes > floor ? kv_bytes : floor, floor,
                                  cfg->machine->cores, why, sizeof why) != 0)
        snprintf(b->note, sizeof b->note,
                 "no read bandwidth beside the repetitions (%s): %%limit is of the "
                 "machine's",
                 why);
    /* Like for like with K and V (bench --huge-pages): what of the buffer has huge pages. */
    const int64_t huge_after = bpg_anon_huge_bytes();
    b->huge = huge_before >= 0 && huge_after >= huge_before ? huge_after - huge_before : -1;
}

/* After a timed repetition: one read pass when the passes so far took under a third of the
 * repetitions' wall time (reps_s), so reading is about a quarter of the benchmark's time and
 * its passes are spread over the repetitions: one after the first, then one every few
 * repetitions.  Each pass evicts the caches, so the repetition after it starts cold; for a
 * shape whose K and V exceed the last-level cache that changes nothing (each call streams them
 * from memory), and for one that fits, few repetitions follow a pass (a pass reads 4 x the
 * cache; a repetition reads less than the cache). */
static void beside_maybe(beside *b, double reps_s)
{
    if (!b->r.buf || b->read_s >= reps_s / 3)
        return;
    const double t0 = mono_now(), g = bp_reader_run(&b->r, 1);
    b->read_s += mono_now() - t0;
    if (g > 0)
        b->gbs[b->n++] = g;
}

/* The median of the passes in GB/s, 0 when none was measured (the note says why). */
static double beside_median(beside *b)
{
    if (!b->r.buf)
        return 0;
    if (b->n == 0) {
        snprintf(b->note, sizeof b->note,
                 "no read bandwidth beside the repetitions (the read threads did not start): "
                 "%%limit is of the machine's");
        return 0;
    }
    gsl_sort(b->gbs, 1, (size_t)b->n);
    return gsl_stats_median_from_sorted_data(b->gbs, 1, (size_t)b->n);
}

/* The buffer freed; the peak resident memory (in o, set before) without it: the buffer is
 * resident from its first write to its unmapping, so the benchmark's own peak is the larger of
 * the peak before it and the peak with it less its bytes. */
static void beside_close(beside *b, json_t *o)
{
    if (b->r.buf) {
        const json_t *rss = json_object_get(o, "peak_rss_bytes");
        if (json_is_integer(rss)) {
            double own = (double)json_integer_value(rss) - (double)b->r.bytes;
            own = own > b->rss_before ? own : b->rss_before;
            json_object_set_new(o, "peak_rss_bytes", json_integer((json_int_t)own));
        }
    }
    bp_reader_close(&b->r);
    free(b->gbs);
}

/* The device buffers of a device backend's benchmark (bb_run). */
typedef struct bb_dev {
    void *h[5]; /* q, k, v, mask, out; NULL = none */
} bb_dev;

/* Put host[i] (bytes[i], NULL = none) in device buffers, the inputs' copy time summed in
 * *copy_s (the output's 0xFF fill is the harness's, not the workload's: untimed).  Returns
 * NULL, or why not. */
static const char *bb_dev_put(const hb_backend *hb, bb_dev *d, void *const host[5],
                              const size_t bytes[5], double *copy_s, char *buf, size_t n)
{
    static const char *const names[5] = {"q", "k", "v", "mask", "out"};
    for (int i = 0; i < 5; i++) {
        if (!host[i])
            continue;
        int rc = hb_device_alloc(hb, bytes[i], &d->h[i]);
        if (rc == ATTNCONF_OK)
            rc = hb_copy_to_device(hb, d->h[i], 0, host[i], bytes[i], i < 4 ? copy_s : NULL);
        if (rc != ATTNCONF_OK) {
            char le[CLIP_MAX + 1];
            clip_error(hb_last_error(hb), le, sizeof le);
            snprintf(buf, n, "%s of %s (%zu bytes) returned %s%s%s",
                     d->h[i] ? "copy_to_device" : "device_alloc", names[i], bytes[i],
                     hb_code_name(rc), le[0] ? ": " : "", le);
            return buf;
        }
    }
    return NULL;
}

void bb_run(const hb_backend *hbp, const bs_shape *s, attnref_dtype dt, bb_via via,
            const bb_config *cfg, bb_reported_fn reported, json_t *o, FILE *progress,
            const char *progress_prefix)
{
    const hb_backend hb = *hbp;
    void *ctx = hb.ctx;
    const int device = hb_is_device(&hb);
    bb_dev dev = {{NULL}};
    bb_pool pool; /* a paged shape's pages (bench_paged.c) */
    beside bw;    /* the read bandwidth beside a memory-bound shape */
    memset(&bw, 0, sizeof bw);
    attnconf_paged_args pa;
    memset(&pool, 0, sizeof pool);
    const size_t es = attnref_dtype_size(dt);
    const int64_t nq = s->b * s->hq * s->lq * s->d, nk = s->b * s->hkv * s->lk * s->d;
    const int64_t nv = s->b * s->hkv * s->lk * s->dv, no = s->b * s->hq * s->lq * s->dv;
    const int64_t mrows = s->causal || s->window || s->segment_ids ? s->lq : 1;
    const size_t capacity = (size_t)no * 4;
    const char *id = json_string_value(json_object_get(o, "id"));
    void *q = alloc((size_t)nq * es), *k = alloc((size_t)nk * es), *v = alloc((size_t)nv * es);
    void *outd = alloc(capacity);
    uint8_t *mask = via == BB_VIA_MASK ? alloc((size_t)(s->b * mrows * s->lk)) : NULL;
    double *times = calloc((size_t)cfg->max_reps, sizeof *times);
    if (!q || !k || !v || !outd || !times || (via == BB_VIA_MASK && !mask)) {
        set_status(o, "ERROR", "harness: out of memory for the inputs (%.2f GiB)",
                   (double)((size_t)(nq + nk + nv) * es + capacity) / 1073741824.0);
        goto done;
    }
    progress_line(progress, progress_prefix, "filling inputs");
    fill(q, dt, nq, seed_of(id, 0));
    fill(k, dt, nk, seed_of(id, 1));
    fill(v, dt, nv, seed_of(id, 2));
    memset(outd, 0xFF, (size_t)no * es); /* 0xFF.. is a NaN in f32, f16 and bf16 */

    attnconf_tensor tq, tk, tv, tm, out, before;
    hb_tensor4(&tq, q, (int32_t)dt, s->b, s->hq, s->lq, s->d);
    hb_tensor4(&tk, k, (int32_t)dt, s->b, s->hkv, s->lk, s->d);
    hb_tensor4(&tv, v, (int32_t)dt, s->b, s->hkv, s->lk, s->dv);
    hb_tensor4(&out, outd, (int32_t)dt, s->b, s->hq, s->lq, s->dv);
    before = out;
    attnconf_sdpa_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.q = &tq;
    a.k = &tk;
    a.v = &tv;
    a.out = &out;
    a.out_capacity = capacity;
    if (via == BB_VIA_MASK) {
        fill_mask(s, mask, mrows);
        hb_tensor4(&tm, mask, (int32_t)ATTNREF_BOOL, s->b, 1, mrows, s->lk);
        a.mask = &tm;
    } else {
        a.causal = s->causal;
        a.has_causal_offset = s->has_causal_offset;
        a.causal_offset = s->causal_offset;
        a.window = s->window;
        a.lengths = s->lengths;
        a.left_padding = s->left_padding;
        a.chunk = s->chunk;
        a.segment_ids = s->segment_ids;
        a.block_ids = s->block_ids;
    }
    a.softcap = s->softcap;
    a.alibi_max_bias = s->alibi_max_bias;
    a.sinks = s->sinks_f32;
    /* A paged shape: the same K and V through a shuffled pool and paged_sdpa. */
    if (s->page_size > 0 && device) {
        /* The paged members take host pools (the seventh revision covers sdpa only). */
        set_status(o, "NOT_SUPPORTED", "a paged shape on a device backend (host pools only)");
        goto done;
    }
    if (s->page_size > 0) {
        progress_line(progress, progress_prefix, "filling the pages");
        if (bb_pool_make(s, dt, k, v, seed_of(id, 3), &pool) != 0) {
            set_status(o, "ERROR", "harness: out of memory for the page pool");
            goto done;
        }
        bb_paged_args(s, &pool, &tq, &out, capacity, &pa);
    }

    /* A device backend computes on resident device buffers: the inputs go there once. */
    double copy_in = 0, copy_out = 0;
    const size_t in_bytes =
        (size_t)(nq + nk + nv) * es + (via == BB_VIA_MASK ? (size_t)(s->b * mrows * s->lk) : 0);
    const size_t out_bytes = (size_t)no * es;
    if (device) {
        progress_line(progress, progress_prefix, "copying to the device");
        void *const host[5] = {q, k, v, via == BB_VIA_MASK ? (void *)mask : NULL, outd};
        const size_t bytes[5] = {(size_t)nq * es, (size_t)nk * es, (size_t)nv * es,
                                 via == BB_VIA_MASK ? (size_t)(s->b * mrows * s->lk) : 0, capacity};
        char why[CLIP_MAX + 256];
        const char *bad = bb_dev_put(&hb, &dev, host, bytes, &copy_in, why, sizeof why);
        if (bad) {
            set_status(o, "ERROR", "%s", bad);
            goto done;
        }
        tq.data = dev.h[0];
        tk.data = dev.h[1];
        tv.data = dev.h[2];
        if (via == BB_VIA_MASK)
            tm.data = dev.h[3];
        out.data = dev.h[4];
        before = out;
    }

    progress_line(progress, progress_prefix, "first call");
    int rc = s->page_size > 0 ? hb_paged_sdpa(&hb, &pa, NULL) : hb_sdpa_synchronized(&hb, &a, NULL);
    if (rc != ATTNCONF_OK) {
        char le[CLIP_MAX + 1];
        clip_error(hb_last_error(&hb), le, sizeof le);
        set_status(o, rc == ATTNCONF_ENOTSUP ? "NOT_SUPPORTED" : "ERROR", "%s returned %s%s%s",
                   s->page_size > 0 ? "paged_sdpa" : "sdpa", hb_code_name(rc), le[0] ? ": " : "",
                   le);
        goto done;
    }
    char buf[256];
    const char *bad = output_problem(&before, &out, capacity, buf, sizeof buf);
    if (bad) {
        set_status(o, "INCORRECT", "%s", bad);
        goto done;
    }
    attnconf_tensor got = out; /* the result in host memory */
    if (device) {
        rc = hb_copy_from_device(&hb, outd, dev.h[4], 0, out_bytes, &copy_out);
        if (rc != ATTNCONF_OK) {
            char le[CLIP_MAX + 1];
            clip_error(hb_last_error(&hb), le, sizeof le);
            set_status(o, "ERROR", "copy_from_device of the output returned %s%s%s",
                       hb_code_name(rc), le[0] ? ": " : "", le);
            goto done;
        }
        got.data = outd;
        json_object_set_new(o, "copy_to_device_s", json_real(copy_in));
        json_object_set_new(o, "copy_to_device_bytes", json_integer((json_int_t)in_bytes));
        json_object_set_new(o, "copy_from_device_s", json_real(copy_out));
        json_object_set_new(o, "copy_from_device_bytes", json_integer((json_int_t)out_bytes));
    }
    progress_line(progress, progress_prefix, "validating");
    bv_outcome vo;
    if (bv_validate(s, dt, q, k, v, &got, &vo) != 0) {
        set_status(o, "ERROR", "harness: %s", vo.message);
        goto done;
    }
    json_object_set_new(o, "validated_rows", json_integer(vo.rows));
    json_object_set_new(o, "max_err_ratio", jsonv_num(vo.max_err_ratio));
    if (!vo.ok) {
        set_status(o, "INCORRECT", "%s", vo.message);
        goto done;
    }

    /* What of this process is on huge pages after the first call: K and V, and what an
     * in-process backend allocated; an exec: adapter's own memory is not counted here. */
    const int64_t huge = bpg_anon_huge_bytes();
    if (huge >= 0)
        json_object_set_new(o, "huge_page_bytes", json_integer((json_int_t)huge));

    /* Allocated and written now, outside the timed calls and after the backend's first one. */
    if (s->bound == BS_BOUND_MEMORY)
        progress_line(progress, progress_prefix, "the read bandwidth buffer");
    beside_open(&bw, s, (size_t)(nk + nv) * es, cfg);
    int64_t n = 0;
    double total = 0, last_shown = mono_now();
    while (n < cfg->max_reps && (n < cfg->min_reps || total < cfg->min_time_s)) {
        const int64_t x = (int64_t)(((uint64_t)n * 0x9E3779B97F4A7C15ull) % (uint64_t)nq);
        flip_sign(q, dt, x);
        /* On a device the flipped element follows q there, outside the timed call. */
        if (device &&
            (rc = hb_copy_to_device(&hb, dev.h[0], (size_t)x * es,
                                    (const unsigned char *)q + x * es, es, NULL)) != ATTNCONF_OK) {
            set_status(o, "ERROR", "repetition %lld: copy_to_device returned %s", (long long)n + 1,
                       hb_code_name(rc));
            goto done;
        }
        out = before;
        double wall;
        rc = s->page_size > 0 ? hb_paged_sdpa(&hb, &pa, &wall)
                              : hb_sdpa_synchronized(&hb, &a, &wall);
        if (rc != ATTNCONF_OK) {
            char le[CLIP_MAX + 1];
            clip_error(hb_last_error(&hb), le, sizeof le);
            set_status(o, "ERROR", "repetition %lld: %s returned %s%s%s", (long long)n + 1,
                       s->page_size > 0 ? "paged_sdpa" : "sdpa", hb_code_name(rc),
                       le[0] ? ": " : "", le);
            goto done;
        }
        const double t = reported ? reported(ctx) : wall;
        if (!(t >= 0)) {
            set_status(o, "ERROR",
                       "repetition %lld: the adapter reported no time for its call: "
                       "an exec: backend is timed by the \"seconds\" of its sdpa reply "
                       "(PROTOCOL.md), which this reply lacks",
                       (long long)n + 1);
            goto done;
        }
        times[n++] = t;
        total += wall;
        beside_maybe(&bw, total);
        if (progress && mono_now() - last_shown > 0.25) {
            last_shown = mono_now();
            progress_line(progress, progress_prefix, "repetition %lld, %.3g s each", (long long)n,
                          t);
        }
    }
    const double read_beside = beside_median(&bw);
    stats(o, times, n, s, dt, cfg->machine);
    if (read_beside > 0) {
        json_object_set_new(o, "read_gbs_beside", json_real(read_beside));
        json_object_set_new(o, "read_beside_passes", json_integer(bw.n));
        if (bw.huge >= 0)
            json_object_set_new(o, "read_beside_huge_bytes", json_integer((json_int_t)bw.huge));
    } else if (bw.note[0]) {
        json_object_set_new(o, "read_beside_note", json_string(bw.note));
    }
    set_status(o, "OK", "%s", "");

done:;
    for (int i = 0; i < 5; i++)
        hb_device_free(&hb, dev.h[i]);
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0) /* ru_maxrss is in KiB on Linux */
        json_object_set_new(o, "peak_rss_bytes", json_integer((json_int_t)ru.ru_maxrss * 1024));
    beside_close(&bw, o);
    free(q);
    free(k);
    free(v);
    free(outd);
    free(mask);
    free(times);
    bb_pool_free(&pool);
}
