/* perf_json.h — strict reading of bench result files (`attnconf bench --out FILE.json`, schema
 * "attnconf_bench": 1, specified in perf/README.md) for `attnconf perf-compare` and
 * `attnconf perf-report`.  Internal to the harness; not installed.
 *
 * Every key those commands read is checked: a missing key, a value of the wrong type, an
 * unknown status / bound, a negative or non-finite number, "reps" that disagrees with the
 * length of "times_s", or a (backend, shape id) listed twice is an error printed as
 * "PROG: FILE: KEY: REASON" (KEY a path such as backends[0].shapes[3].times_s).  Unknown extra
 * keys are ignored, so bench may add fields.  Timing keys (reps, times_s, median_s, min_s,
 * iqr_s, gflops, kv_gbs, pct_limit) are required for status OK; for any other status they are
 * read (and checked) only when times_s holds at least one value, so an untimed shape may leave
 * them out or null.  A backend's "timing" is optional ("in-process" when absent), else
 * "in-process" or "adapter".  A cost-curve suite's file has "curves" (a list of {name, x,
 * expect}: unique names, x "lk", "lq" or "batch", expect in (0, 8] as bench allows) and then
 * a "curve" in every shape, naming one of them; a file without "curves" has no "curve".  As
 * bench checks a suite, a backend's points of one curve differ in its size alone (bound, hq,
 * hkv, d, dv, causal, window, page_size, and b, lk or lq where the curve does not sweep them),
 * with one point per size and dtype.  A paged
 * shape has "page_size" (a positive count; absent or 0: contiguous K/V).  A memory-bound
 * shape may have "read_gbs_beside" (a positive number: the read bandwidth bench measured
 * beside its repetitions), which its % of limit is then of (pj_pct_limit). */
#ifndef ATTNCONF_PERF_JSON_H
#define ATTNCONF_PERF_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Files larger than this are refused before parsing: a bench file holds every repetition of
 * every shape (thousands of numbers), never hundreds of megabytes. */
#define PJ_MAX_FILE_BYTES (64L << 20)

/* The largest cost exponent a curve may expect (bench_suite.c reads a suite's to the same). */
#define PJ_MAX_EXPECT 8.0

typedef enum pj_status {
    PJ_OK,            /* measured, first repetition validated */
    PJ_NOT_SUPPORTED, /* the backend lacks a capability the shape needs */
    PJ_ERROR,         /* the backend refused the call or its child process died */
    PJ_INCORRECT,     /* the validated repetition broke the clause-13 bound */
    PJ_SKIPPED,       /* not run (over --max-gflop) */
    PJ_STATUS_COUNT
} pj_status;

typedef enum pj_bound { PJ_COMPUTE, PJ_MEMORY } pj_bound;

/* The size a cost curve sweeps (bench.h bs_curve_x). */
typedef enum pj_curve_x { PJ_X_LK, PJ_X_LQ, PJ_X_BATCH } pj_curve_x;

/* A cost curve of the suite (perf_curve.h): its shapes are those whose "curve" names it. */
typedef struct pj_curve {
    const char *name;
    pj_curve_x x;
    double expect; /* the exponent the suite expects, > 0 */
} pj_curve;

/* The "machine" object: what the limits were measured on, and the limits. */
typedef struct pj_machine {
    const char *cpu_model;   /* borrowed from the parsed JSON, as every string below */
    const char *limits_from; /* "measured" or "file:PATH" */
    int64_t cores, mem_bytes;
    double fma_gflops;   /* f32 FMA throughput on all cores, GFLOP/s (> 0) */
    double mem_read_gbs; /* sustained memory read bandwidth, GB/s (1e9 bytes/s, > 0) */
    int huge_pages;      /* 1: run with bench --huge-pages, 0: without, -1: not recorded */
} pj_machine;

/* One shape of one backend.  Shapes are B, Hq, Hkv, Lq, Lk, D, Dv as in SPEC.md. */
typedef struct pj_shape {
    const char *id, *dtype, *message, *via; /* via: "params", "mask" or "" when absent */
    const char *curve;                      /* the cost curve it is a point of, or "" */
    int64_t b, hq, hkv, lq, lk, d, dv, window;
    int64_t page_size; /* slots per page of a paged shape (SPEC clause 23); 0: contiguous */
    int causal;
    pj_bound bound;
    pj_status status;
    double flops;    /* 2 (D + Dv) per visible query-key pair */
    double kv_bytes; /* K and V bytes in the visible key range */
    int timed;       /* 1: the timing fields below are present (always for OK) */
    size_t reps;     /* = number of times */
    double *times;   /* every timed repetition, seconds, in order (owned) */
    double median_s, min_s, iqr_s, gflops, kv_gbs, pct_limit; /* as bench computed them */
    /* A memory-bound shape's read bandwidth measured beside its repetitions (GB/s, the
     * optional "read_gbs_beside"; perf/README.md), 0 when the file has none. */
    double read_gbs_beside;
} pj_shape;

typedef struct pj_backend {
    const char *name, *version;
    char *options;      /* "k=v, k=v" sorted by key, "" when none (owned) */
    int adapter_timing; /* 1: "timing": "adapter" (times an exec: adapter measured around
                             its library call); 0: "in-process", or no "timing" (older files) */
    pj_shape *shapes;
    size_t n;
} pj_backend;

typedef struct pj_file {
    const char *path; /* as given to pj_load */
    json_t *root;
    const char *suite, *suite_file, *label, *started;
    pj_machine machine;
    pj_backend *backends;
    size_t nb;
    pj_curve *curves; /* the suite's cost curves (owned), ncurves of them; none: NULL, 0 */
    size_t ncurves;
} pj_file;

/* Load and check PATH (see the top comment).  Messages go to stderr prefixed by `prog` (e.g.
 * "attnconf perf-compare").  Returns 0, or -1 after printing the first problem found; in both
 * cases pj_free(f) releases what was loaded. */
int pj_load(const char *prog, const char *path, pj_file *f);
void pj_free(pj_file *f);

/* "OK", "NOT_SUPPORTED", "ERROR", "INCORRECT", "SKIPPED". */
const char *pj_status_name(pj_status s);

/* "lk", "lq", "batch" (the names in the file), and the axis label "Lk", "Lq", "B". */
const char *pj_curve_x_name(pj_curve_x x);
const char *pj_curve_x_label(pj_curve_x x);

/* The size of shape sh along a curve that sweeps x: its lk, lq or b.  Inline: perf_curve.c's
 * unit tests link it without this reader. */
static inline int64_t pj_curve_size(const pj_shape *sh, pj_curve_x x)
{
    return x == PJ_X_LQ ? sh->lq : x == PJ_X_BATCH ? sh->b : sh->lk;
}

/* The backend named `name` in f, or NULL. */
const pj_backend *pj_find_backend(const pj_file *f, const char *name);
/* The shape with id `id` of backend be, or NULL. */
const pj_shape *pj_find_shape(const pj_backend *be, const char *id);

/* The machine's limit of a bound: fma_gflops (compute) or mem_read_gbs (memory). */
double pj_limit(const pj_machine *m, pj_bound bound);

/* The % of its limit of a timed shape: for a memory-bound shape with read_gbs_beside,
 * 100 kv_gbs / read_gbs_beside (the bandwidth of the minutes it ran in), else pct_limit as
 * bench wrote it (of the machine's limit: files from before the beside figure). */
double pj_pct_limit(const pj_shape *s);

/* 1 when two runs' machines count as the same for comparing raw times: same cpu_model, each
 * limit within 10 % of the other run's (relative to the smaller value), and the same pages
 * (huge_pages, where both record it: bench --huge-pages).  Otherwise times are compared as
 * fractions of each run's limit (time x limit). */
int pj_same_machine(const pj_machine *a, const pj_machine *b);

/* 1 when two limits count as the same for pj_same_machine: within 10 % of the smaller. */
int pj_limits_close(double a, double b);

/* 1 when two shapes with the same id describe the same problem (dtype, bound, every size and
 * mask parameter and the page size equal): a suite edited between two runs must not be compared
 * as if unchanged. */
int pj_same_geometry(const pj_shape *a, const pj_shape *b);

#endif
