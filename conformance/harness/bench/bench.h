/* bench.h — `attnconf bench`: perf suites, the work a shape does, the machine's limits, and
 * the timed, validated run of one shape (internal interfaces of the harness; not installed).
 *
 * A perf suite (perf/suites/NAME.yaml, format in bench_suite.c and perf/README.md) lists SDPA
 * shapes in (B, H, L, D) terms: q (B, Hq, Lq, D), k (B, Hkv, Lk, D), v (B, Hkv, Lk, Dv),
 * out (B, Hq, Lq, Dv), with the structural mask parameters of SPEC clauses 3, 4 and 19
 * (causal with its offset, window, per-row lengths and left padding).  Each shape expands over
 * its dtypes into one benchmark "<id>.<dtype>".
 *
 * The modules: bench_suite.c reads a suite, bench_count.c counts the work of a shape exactly
 * (visible query-key pairs, FLOPs, bytes), bench_peak.c measures the machine's limits,
 * bench_run.c times one shape on a backend in the current process (the CLI in bench.c forks a
 * child for it), bench_validate.c checks its first result against the reference.
 */
#ifndef ATTNCONF_BENCH_H
#define ATTNCONF_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attncase/case.h"
#include "attnconf/backend.h"
#include "attnref/dtype.h"

/* ---- suites (bench_suite.c) ------------------------------------------------------------- */

/* The format version a suite declares as `attnconf_perf_suite: 1`. */
#define BS_FORMAT_VERSION 1

/* Limits that keep a mistaken or hostile suite from asking for a huge allocation or an
 * endless run.  Per tensor, at most ATTNREF_MAX_NUMEL (2^31) elements, so the reference can
 * check the result; Lk * max(D, Dv) at most ACASE_MAX_TENSOR_NUMEL (2^24), the size of the
 * one-row slice whose clause-13 bound the validation computes; and q, k, v and out together
 * at most half the machine's physical memory (a backend needs room for its own buffers: the
 * issue's target is a peak below twice these bytes). */
#define BS_MAX_FILE_BYTES (1 << 20)
#define BS_MAX_SHAPES 1024
#define BS_MAX_BATCH ACASE_MAX_BATCH
#define BS_MAX_HEADS 4096
#define BS_MAX_SEQ ((int64_t)1 << 24)
#define BS_MAX_HEAD_DIM 4096
#define BS_MAX_OFFSET ((int64_t)1 << 40) /* |causal_offset|: keeps every count in int64 */
#define BS_NAME_MAX 64
#define BS_MAX_DTYPES 3
#define BS_MAX_PAGE 65536 /* slots per page of a paged shape */
#define BS_MAX_CURVES 64  /* cost curves of a suite */

/* Which machine limit a shape's "% of limit" refers to. */
typedef enum bs_bound { BS_BOUND_COMPUTE = 0, BS_BOUND_MEMORY = 1 } bs_bound;

typedef struct bs_shape {
    char id[ACASE_ID_MAX]; /* [A-Za-z0-9_.-]+, unique in the suite, without the dtype */
    int line;              /* 1-based line of the entry in the suite file */
    attnref_dtype dtypes[BS_MAX_DTYPES];
    int ndtypes; /* 1..3, distinct, in file order */
    int64_t b, hq, hkv, lq, lk, d, dv;
    int causal; /* 1: causal (bottom-right unless has_causal_offset) */
    int has_causal_offset;
    int64_t causal_offset; /* |offset| <= BS_MAX_OFFSET */
    int64_t window;        /* 0 = none; needs causal */
    int64_t *lengths;      /* [b] in 0..lk, or NULL (owned) */
    int64_t *left_padding; /* [b] in 0..lk, or NULL (owned) */
    /* The terms of current models (SPEC clauses 20-22; perf/README.md). */
    double softcap;        /* 0 = none; c > 0 */
    double alibi_max_bias; /* 0 = none; > 0 */
    double *sinks;         /* [hq] sink logits (each an f32 value), or NULL (owned) */
    float *sinks_f32;      /* the same as f32 for the call, or NULL (owned) */
    int64_t chunk;         /* 0 = none; >= 1, needs causal */
    int64_t *segment_ids;  /* [b * lk] from the suite's documents (every row alike), or NULL */
    int64_t *block_ids;    /* [b * lk] from the suite's blocks (-1 outside), or NULL */
    /* Paged KV (SPEC clause 23; perf/README.md): 0 = contiguous K/V and sdpa; P >= 1 = K and V
     * copied into a pool of P-slot pages in a shuffled physical order, and paged_sdpa (every
     * row holds lk keys and lq queries, bottom-right). */
    int64_t page_size;
    bs_bound bound;
    char curve[BS_NAME_MAX]; /* the cost curve it is a point of (a name in the suite's curves),
                                "" for none */
} bs_shape;

/* What a cost curve sweeps: the one size that changes from point to point (perf/README.md,
 * "Cost curves").  With lk, lq may follow it (prefill, Lq = Lk) or stay fixed (decode). */
typedef enum bs_curve_x { BS_X_LK = 0, BS_X_LQ = 1, BS_X_BATCH = 2 } bs_curve_x;

/* A cost curve: the suite's shapes whose `curve` names it, timed at increasing sizes, and the
 * exponent k that time ~ size^k should have (perf-report fits it). */
typedef struct bs_curve {
    char name[BS_NAME_MAX]; /* [a-z0-9_-]+, unique in the suite */
    bs_curve_x x;
    double expect; /* the expected exponent, in (0, 8] */
} bs_curve;

/* "lk", "lq", "batch". */
const char *bs_curve_x_name(bs_curve_x x);

typedef struct bs_suite {
    char name[BS_NAME_MAX]; /* [a-z0-9_-]+ */
    char *description;      /* one line (owned) */
    char *path;             /* the file it was read from (owned) */
    bs_shape *shapes;       /* owned, n entries */
    size_t n;
    bs_curve curves[BS_MAX_CURVES]; /* the suite's cost curves (optional `curves`)... */
    size_t ncurves;                 /* ...when there are any, every shape names one */
    /* The suite's own timing defaults (optional `defaults`), which bench's --min-time and
     * --min-reps override: a negative value where the suite gives none. */
    double min_time_s;
    int64_t min_reps;
} bs_suite;

/* Read a perf suite.  mem_bytes is the machine's physical memory (bp_mem_bytes()); a shape
 * whose q, k, v and out exceed half of it in its widest dtype is refused.  Strict, like the
 * case reader: unknown or duplicate keys, wrong types, values out of range, a missing field,
 * inconsistent shapes (Hq % Hkv, window without causal, lengths not [batch] entries in 0..Lk)
 * and inconsistent curves (a shape without a curve in a suite that has curves, a curve with
 * fewer than two shapes, two points at the same size, points that differ in more than the size
 * the curve sweeps) are errors.  Returns 0 with *out filled (free with bs_suite_free), or -1 with err =
 * "FILE:LINE: FIELD: reason" (FIELD e.g. "shapes[2].lengths"). */
int bs_suite_load(const char *path, uint64_t mem_bytes, bs_suite *out, char *err, size_t errlen);
void bs_suite_free(bs_suite *s);

/* "f32", "f16", "bf16" (NULL for another dtype), and back (0 for an unknown name). */
const char *bs_dtype_name(attnref_dtype dt);
attnref_dtype bs_dtype_from_name(const char *name);

/* ---- the work of a shape (bench_count.c) ------------------------------------------------- */

/* Counted exactly from the structural parameters, never from a result.  With chunk, documents
 * or blocks each row's keys are counted one by one with attnref_sdpa_key_kept (O(B Lq Lk));
 * otherwise: row (b, i) keeps the
 * keys j in [lo, hi) with hi = min(Lk, lengths[b], off + i + 1 when causal) and
 * lo = max(0, left_padding[b], off + i - W + 1 when a window is given) (attnref_sdpa_key_kept's
 * rule; off = causal_offset, or Lk - Lq).  Both bounds are piecewise linear in i, so each batch
 * row is summed in closed form over at most five intervals of i, whatever Lq. */
typedef struct bs_counts {
    int64_t visible_pairs; /* kept (query, key) pairs over b, query heads and rows */
    double flops;          /* (2 D + 2 Dv) per visible pair: q.k and p.v, one multiply and one
                               add each; the softmax and masked pairs are not counted */
    int64_t kv_bytes;      /* bytes of K and V in the keys some row of batch row b keeps (one
                               interval: the rows' intervals overlap), once per (b, kv head) */
    int64_t io_bytes;      /* bytes of q, k, v and out in the dtype */
} bs_counts;

/* The counts of shape s in dtype dt (f32, f16 or bf16). */
void bs_count(const bs_shape *s, attnref_dtype dt, bs_counts *out);

/* The keys query row i of batch row b keeps (any head). */
int64_t bs_row_keys(const bs_shape *s, int64_t b, int64_t i);

/* The visible pairs of batch row b for ONE query head, and the number of distinct keys its
 * rows keep (*keys, may be NULL): the closed form above. */
int64_t bs_row_pairs(const bs_shape *s, int64_t b, int64_t *keys);

/* ---- the machine (bench_peak.c) ---------------------------------------------------------- */

typedef struct bp_machine {
    char cpu_model[256];        /* "model name" of /proc/cpuinfo, "unknown" if none */
    int cores;                  /* CPUs in this process's affinity mask */
    uint64_t mem_bytes;         /* physical memory */
    double fma_gflops;          /* measured f32 FMA throughput, all cores, GFLOP/s (1e9) */
    double mem_read_gbs;        /* measured sustained read bandwidth, all cores, GB/s (1e9) */
    char limits_from[1100];     /* "measured" or "file:PATH" */
    char fma_isa[16];           /* "avx512f", "avx2+fma" or "portable": the code that measured
                                   the FMA peak (bp_fma_isa) */
    uint64_t read_buffer_bytes; /* the buffer the bandwidth was read from */
    double cpu_share;           /* the smaller share of the CPUs the measuring threads had in
                                   the two best runs (1 = the machine to themselves; lower:
                                   the limits are too low); 0 = unknown */
    char cpu_signature[96];     /* "VENDOR family F model M" of /proc/cpuinfo (x86), "" if not
                                   there: tells apart CPUs of one model name */
    char thp_mode[16];          /* the kernel's THP mode (bpg_thp_mode) */
    int huge_pages;             /* 1: the run asks for huge pages (bpg_huge, --huge-pages) */
} bp_machine;

/* Physical memory in bytes (sysconf), 0 if unknown. */
uint64_t bp_mem_bytes(void);

/* CPU model, cores and memory, without measuring anything. */
void bp_machine_describe(bp_machine *m);

/* Measure the limits (bp_machine_describe first): f32 FMA throughput with one thread per core
 * (16-wide AVX-512 or 8-wide AVX2+FMA chains, or portable code: bp_fma_isa), then the read
 * bandwidth of the same threads summing a buffer of max(1 GiB, 8 x the last-level cache), at
 * most a quarter of the available memory; each for about seconds_each, best of 3.  log (may be NULL)
 * gets a line per result.  Returns 0, or -1 with err set (no memory for the buffer, threads, a
 * bad ATTNCONF_CPU_ISA). */
int bp_measure(bp_machine *m, double seconds_each, FILE *log, char *err, size_t errlen);

/* The largest cache of CPU 0 in bytes (the last level), 0 if unknown. */
uint64_t bp_llc_bytes(void);

/* The read loop of bp_measure's bandwidth measurement on a buffer of its own, for a caller that
 * reads it a few passes at a time: bench_run.c measures the read bandwidth beside a
 * memory-bound shape's repetitions with it (perf/README.md). */
typedef struct bp_reader {
    uint64_t *buf;  /* mapped and resident; NULL when closed */
    uint64_t bytes; /* its size */
    int threads;    /* the readers, each summing its contiguous part */
} bp_reader;

/* Map a buffer of `want` bytes, at most a quarter of the memory available now, rounded down to
 * whole 128-byte blocks per thread, and write a word of every 4 KiB page so it is resident (not
 * the shared zero page) before anything is timed; `threads` readers (bp_measure's: one per CPU
 * of the affinity mask).  Returns 0, or -1 with err set (nothing to close) when fewer than
 * `need` bytes are available or the mapping fails. */
int bp_reader_open(bp_reader *r, uint64_t want, uint64_t need, int threads, char *err,
                   size_t errlen);
/* `passes` passes of r's threads over the buffer, each thread its part, with bp_measure's loop
 * (AVX2 loads where the CPU has them): GB/s (1e9 bytes/s) from the common start to the last
 * thread's end, or -1 when the threads cannot start. */
double bp_reader_run(const bp_reader *r, int passes);
void bp_reader_close(bp_reader *r);

/* Fill m's fma_gflops and mem_read_gbs (and cpu_model, cores, mem_bytes, fma_isa when present)
 * from the "machine" object of a JSON file written by `bench --out` or `bench --peak --out`;
 * limits_from becomes "file:PATH".  Returns 0, or -1 with err = "PATH: reason". */
int bp_limits_load(const char *path, bp_machine *m, char *err, size_t errlen);

/* Transparent huge pages for a benchmark's memory (bench_pages.c, perf/README.md "Huge
 * pages"): whether this process was started by bench --huge-pages (ATTNCONF_BENCH_HUGE_PAGES=1
 * beside a GLIBC_TUNABLES whose last hugetlb setting is glibc.malloc.hugetlb=1: then malloc
 * advises its large mappings, in bench and in every backend and adapter it starts). */
int bpg_huge(void);
/* How a run's memory gets its pages, for the table's header: "huge pages asked for
 * (--huge-pages)" when huge (bpg_huge), else "as the system gives them". */
const char *bpg_pages_words(int huge);
/* --huge-pages: put glibc.malloc.hugetlb=1 into GLIBC_TUNABLES, and ATTNCONF_BENCH_HUGE_PAGES=1
 * beside it, and start this program again (/proc/self/exe with argv0 then argv[0..argc-1]), so
 * that its malloc reads it.  Returns 0
 * when the environment already asks (the started-again process), else -1 with err set: the
 * kernel's THP mode is neither always nor madvise (no memory could have huge pages), the C
 * library is not glibc 2.35 or later (no tunable to pass on), or the exec failed.  Never
 * returns on success. */
int bpg_request(const char *argv0, int argc, char **argv, char *err, size_t errlen);
/* Why malloc'd memory will not get huge pages even with the tunable, or NULL when it will (glibc's
 * malloc): "this attnconf is built with AddressSanitizer, ..." where its allocator replaces
 * malloc.  bench prints it as a note under --huge-pages. */
const char *bpg_malloc_caveat(void);
/* madvise(MADV_HUGEPAGE) over [p, p + bytes) when bpg_huge() and bytes >= 2 MiB, for memory
 * bench maps itself (malloc's is advised by the tunable); a hint, so a refusal is ignored
 * (read_beside_huge_bytes in the results says what was had). */
void bpg_advise(void *p, size_t bytes);
/* The kernel's THP mode (/sys/kernel/mm/transparent_hugepage/enabled): "always", "madvise",
 * "never", or "unknown" when it cannot be read. */
void bpg_thp_mode(char *buf, size_t len);
/* This process's anonymous memory on transparent huge pages (AnonHugePages of
 * /proc/self/smaps_rollup) in bytes, or -1 when unknown. */
int64_t bpg_anon_huge_bytes(void);

/* The "machine" object of the bench JSON (jansson json_t *, new reference). */
struct json_t;
struct json_t *bp_machine_json(const bp_machine *m);

/* `attnconf bench --peak [--out FILE]`: measure, print, optionally write {"attnconf_peak": 1,
 * "machine": {...}}.  Returns the exit status. */
int bp_peak_main(const char *out_path);

/* The code the FMA peak is measured with: the widest vector ISA the cpu backend
 * (conformance/backends/cpu) of this build would use on this CPU, so its "% of limit" is a share
 * of what its own instructions can do.  As the cpu backend, the environment variable
 * ATTNCONF_CPU_ISA (auto|avx512|avx2|portable) narrows it: set it for both to compare, e.g.,
 * the AVX2 kernels with an AVX2 peak.  BP_ISA_AVX512: AVX-512 F/BW/DQ/VL with AVX2, FMA, F16C
 * (and the OS saving the ZMM state); BP_ISA_AVX2: AVX2 and FMA; BP_ISA_PORTABLE: plain C. */
typedef enum bp_isa { BP_ISA_PORTABLE = 0, BP_ISA_AVX2 = 1, BP_ISA_AVX512 = 2 } bp_isa;

/* The ISA for this machine and environment (above), or -1 with err set when ATTNCONF_CPU_ISA
 * holds another value, or asks for an ISA this CPU or build lacks (the cpu backend refuses to
 * open then too). */
int bp_fma_isa(char *err, size_t errlen);

/* The fma_isa label of an ISA: "avx512f", "avx2+fma", "portable". */
const char *bp_isa_name(bp_isa isa);

/* 1 when this build has the AVX2 kernels below and the CPU runs them (bench_peak.c). */
int bp_have_avx2_fma(void);
/* Kernels (bench_peak_avx2.c, built for x86-64 with -mavx2 -mfma, ATTNCONF_BENCH_AVX2 defined;
 * absent elsewhere): call them only when bp_have_avx2_fma() is 1. */
/* iters x 12 independent 8-wide FMA chains; returns a value that depends on all of them. */
float bp_fma_avx2(uint64_t iters, float seed);
/* Sum of the 64-bit words of buf[0..n) (n a multiple of 16), read with 256-bit loads. */
uint64_t bp_read_avx2(const uint64_t *buf, size_t n);
/* bench_peak_avx512.c (built with -mavx512f where the compiler accepts it, ATTNCONF_BENCH_AVX512
 * defined): iters x BP_AVX512_CHAINS independent 16-wide FMA chains; call it only when
 * bp_fma_isa() is BP_ISA_AVX512. */
#define BP_AVX512_CHAINS 16
float bp_fma_avx512(uint64_t iters, float seed);

/* ---- one timed shape (bench_run.c, bench_validate.c) ------------------------------------ */

typedef struct bb_config {
    double min_time_s; /* timed repetitions add up to at least this (wall time)... */
    int64_t min_reps;  /* ...and number at least this... */
    int64_t max_reps;  /* ...but never more than this */
    const bp_machine *machine;
    double timeout_s; /* one benchmark's process is killed after this (--timeout) */
} bb_config;

/* How the structural parameters reach the backend. */
typedef enum bb_via { BB_VIA_PARAMS = 0, BB_VIA_MASK = 1 } bb_via;

/* Whether a backend with capabilities caps can run shape s in dtype dt, and how
 * (bench_count.c): 0 with *via set, or -1 with the missing capabilities named in why
 * ("needs f16, gqa"). */
int bb_supported(const bs_shape *s, attnref_dtype dt, uint64_t caps, bb_via *via, char *why,
                 size_t whylen);

/* The JSON object of one benchmark with everything known before it runs: id, dtype, the
 * structure, the counts and status (a string, e.g. "SKIPPED") with message; the measured
 * fields are null until bb_run fills them. */
struct json_t *bb_shape_json(const bs_shape *s, attnref_dtype dt, bb_via via, const char *status,
                             const char *message);

/* The time a backend itself reports for its last sdpa call on ctx, in seconds, or a negative
 * value when it reported none (exec_backend.h xb_last_seconds, for exec: adapters). */
typedef double (*bb_reported_fn)(void *ctx);

/* Run shape s in dtype dt on the loaded backend hb (backend_load.h) in this process: allocate and fill q, k, v (SplitMix64, deterministic per shape and dtype; with
 * via BB_VIA_MASK the structure as a boolean mask), call sdpa once and validate that result
 * (the output descriptor, then bv_validate), then time repetitions as cfg says, flipping the
 * sign of one q element before each so no result can be reused.  Each repetition's time is
 * the wall time around be->sdpa, or, with `reported` non-NULL, reported(ctx) after it: the
 * time the backend measured itself (an exec: adapter, whose call also carries the transport);
 * a repetition it reports no time for is an ERROR (min_time still counts wall time).  Sets, in o (from bb_shape_json), status
 * OK / INCORRECT / ERROR / NOT_SUPPORTED (ENOTSUP) with its message, the measurements and
 * peak_rss_bytes (getrusage: this process's peak resident memory).  On a device backend
 * (ATTNCONF_CAP_DEVICE) q, k, v (and the mask) are copied to device buffers once and stay
 * there: each repetition is sdpa + synchronize on resident data (the flipped q element is
 * copied before it, untimed), the result of the first call is copied back for the validation,
 * and the two copies are reported apart (copy_to_device_s / _bytes: the inputs;
 * copy_from_device_s / _bytes: the output; absent for a host backend).  A memory-bound shape
 * gets the read bandwidth measured beside its repetitions (bp_reader passes between them, in
 * this process): read_gbs_beside, the median of read_beside_passes passes, which its % of
 * limit is of in bench's table and perf-report (pct_limit stays of the machine's mem_read_gbs,
 * as in files from before); or, when the buffer could not be had, read_beside_note.
 * peak_rss_bytes leaves that buffer out.  progress (may be NULL)
 * gets a status line while it runs (a terminal). */
struct hb_backend;
void bb_run(const struct hb_backend *hb, const bs_shape *s, attnref_dtype dt, bb_via via,
            const bb_config *cfg, bb_reported_fn reported, struct json_t *o, FILE *progress,
            const char *progress_prefix);

/* The paged form of a shape with page_size P (bench_paged.c): K and V (contiguous (B, Hkv, lk,
 * D / Dv), as bb_run fills them) copied into a pool of B * ceil(lk / P) pages (num_pages, Hkv,
 * P, D) in a shuffled order drawn from seed; each row's table lists its pages in key order,
 * table_width = ceil(lk / P), seq_lens = lk, and the slots past lk of its last page are NaN. */
typedef struct bb_pool {
    void *k, *v;
    attnconf_tensor kp, vp;
    int32_t *table;
    int64_t *seq_lens;
    int64_t np, tw;
} bb_pool;

/* 0, or -1 when memory runs out (nothing to free then). */
int bb_pool_make(const bs_shape *s, attnref_dtype dt, const void *k, const void *v, uint64_t seed,
                 bb_pool *p);
void bb_pool_free(bb_pool *p);
/* The paged_sdpa arguments of shape s over pool p: q and out as sdpa's, query_lens NULL (lq
 * queries at the end of every row), causal, window and the terms of s. */
void bb_paged_args(const bs_shape *s, bb_pool *p, const attnconf_tensor *q, attnconf_tensor *out,
                   size_t capacity, attnconf_paged_args *a);

/* The validation's verdict. */
typedef struct bv_outcome {
    int ok;               /* 1: every sampled element within its clause-13 bound */
    int rows;             /* rows checked */
    double max_err_ratio; /* max |got - exp| / allowed over them (0 / 0 counts 0) */
    char message[512];    /* why not ok: the first bad row, element and error */
} bv_outcome;

/* Check the output `out` of shape s in dtype dt (the descriptor as the backend left it, already
 * checked by the caller: same buffer, dtype and shape, strides inside the buffer) with
 * inputs q, k, v (contiguous (B, H, L, D)) on up to 64 rows (b, h, i): every row when there are
 * no more, else the first and last query rows of the first and last (b, h), then rows drawn
 * from a fixed seed, while their kept keys x (D + Dv) add up to at most 2^26 (the reference
 * and the bound read each kept key a few times through the exact, slow loads: a few seconds),
 * the first four rows always.  Each row is computed by attnref_sdpa_f64 on a one-row slice
 * (the causal offset moved by i, the same window, lengths and left padding of batch row b) and
 * judged by the bound of SPEC clause 13 (acase_sdpa_bound on an in-memory case around the
 * slice, borrowing the data) with the harness comparator (compare.h): a row with no kept key
 * must be exactly 0.  Returns 0 with *res set, or -1 with res->message set when the check
 * itself could not run (out of memory). */
int bv_validate(const bs_shape *s, attnref_dtype dt, const void *q, const void *k, const void *v,
                const attnconf_tensor *out, bv_outcome *res);

/* ---- output (bench_out.c) ----------------------------------------------------------------- */

/* The JSON output file, written atomically (common/outfile.h).  bo_open: of_open, printing
 * "attnconf bench: --out PATH: why" on failure; returns 0 or -1.  bo_commit: writes doc
 * (indented JSON, keys in insertion order) and commits (of_commit); returns 0 or -1 with errno,
 * the temporary file removed either way. */
struct of_file; /* common/outfile.h: not included, so the unit tests need no harness_common */
int bo_open(struct of_file *o, const char *path);
int bo_commit(struct of_file *o, const struct json_t *doc);
/* The current UTC time as "2026-12-01T01:02:03Z". */
void bo_utc_now(char out[32]);

#endif
