/* bench_peak.c — the machine's limits for `attnconf bench` (bench.h): what this machine can do
 * at best, measured here and now, so a result is read as a fraction of its limits and results
 * from different machines are compared that way, never raw.
 *
 *   - f32 FMA throughput: one thread per CPU of the affinity mask, each running independent
 *     FMA chains of the widest ISA the cpu backend would use here (bp_fma_isa: 16-wide AVX-512,
 *     bench_peak_avx512.c; 8-wide AVX2+FMA, bench_peak_avx2.c; otherwise a portable
 *     multiply-add loop; labelled so) in chunks until the time is up; FLOPs = 2 per lane per
 *     FMA, divided by the wall time from the common start to the last thread's end.
 *   - sustained read bandwidth: the same threads sum 64-bit words of a buffer much larger than
 *     the last-level cache (max(1 GiB, 8 x LLC), at most a quarter of the available memory),
 *     each its own contiguous part, 16 MiB at a time; bytes read / wall time.  The buffer is
 *     written first (by the thread that will read each part) so it is resident.
 * Each is measured for about a second, best of three: a limit is an upper bound, and
 * interference only ever lowers a measurement.
 * The read loop also serves bench_run.c (bp_reader): a few passes at a time over a buffer of
 * its own, beside a memory-bound shape's repetitions.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */

#include "bench.h"

#include "common/outfile.h"

#include "common/cli.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/clock.h"

#define BP_RUNS 3
#define BP_FMA_CHUNK 200000u             /* iterations between looks at the clock (~0.3 ms) */
#define BP_READ_PIECE ((size_t)16 << 20) /* bytes between looks at the clock */
#define BP_MAX_THREADS 1024

uint64_t bp_mem_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

/* MemAvailable of /proc/meminfo in bytes, else the physical memory. */
static uint64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib ? (uint64_t)kib * 1024 : bp_mem_bytes();
}

uint64_t bp_llc_bytes(void)
{
    uint64_t best = 0;
    for (int i = 0; i < 16; i++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        unsigned long long v = 0;
        char unit = 0;
        if (fscanf(f, "%llu%c", &v, &unit) >= 1) {
            v *= unit == 'K' ? 1024ull : unit == 'M' ? 1048576ull : unit == 'G' ? 1073741824ull : 1;
            if (v > best)
                best = v;
        }
        fclose(f);
    }
    return best;
}

void bp_machine_describe(bp_machine *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->cpu_model, sizeof m->cpu_model, "unknown");
    /* The first processor's block: its model name, and vendor, family and model numbers (x86),
     * which tell apart CPUs that a cloud names alike ("AMD EPYC": a Zen 3, 4 or 5). */
    char vendor[32] = "", family[16] = "", model[16] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        if (line[0] == '\n')
            break; /* the end of the first processor's block */
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        v[strcspn(v, "\r\n")] = '\0';
        size_t kl = (size_t)(colon - line);
        while (kl > 0 && (line[kl - 1] == ' ' || line[kl - 1] == '\t'))
            kl--;
        line[kl] = '\0';
        if (!*v)
            continue;
        if (!strcmp(line, "model name"))
            snprintf(m->cpu_model, sizeof m->cpu_model, "%s", v);
        else if (!strcmp(line, "vendor_id"))
            snprintf(vendor, sizeof vendor, "%s", v);
        else if (!strcmp(line, "cpu family"))
            snprintf(family, sizeof family, "%s", v);
        else if (!strcmp(line, "model"))
            snprintf(model, sizeof model, "%s", v);
    }
    if (f)
        fclose(f);
    if (vendor[0] && family[0] && model[0])
        snprintf(m->cpu_signature, sizeof m->cpu_signature, "%s family %s model %s", vendor, family,
                 model);
    cpu_set_t set;
    m->cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    if (m->cores < 1) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        m->cores = n > 0 ? (int)n : 1;
    }
    m->mem_bytes = bp_mem_bytes();
    bpg_thp_mode(m->thp_mode, sizeof m->thp_mode);
    m->huge_pages = bpg_huge();
    snprintf(m->limits_from, sizeof m->limits_from, "measured");
    char err[160];
    const int isa = bp_fma_isa(err, sizeof err);
    snprintf(m->fma_isa, sizeof m->fma_isa, "%s", isa < 0 ? "unknown" : bp_isa_name((bp_isa)isa));
}

const char *bp_isa_name(bp_isa isa)
{
    return isa == BP_ISA_AVX512 ? "avx512f" : isa == BP_ISA_AVX2 ? "avx2+fma" : "portable";
}

/* The set the cpu backend's AVX-512 kernels need (backends/cpu/cpu_options.c have_avx512): GCC's
 * and Clang's "avx512f" is 0 unless the OS saves the ZMM and opmask state (XCR0). */
static int have_avx512(void)
{
#if defined(ATTNCONF_BENCH_AVX512)
    __builtin_cpu_init();
    return bp_have_avx2_fma() && __builtin_cpu_supports("f16c") &&
           __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
    return 0;
#endif
}

int bp_fma_isa(char *err, size_t errlen)
{
    const int widest = have_avx512()        ? BP_ISA_AVX512
                       : bp_have_avx2_fma() ? BP_ISA_AVX2
                                            : BP_ISA_PORTABLE;
    const char *v = getenv("ATTNCONF_CPU_ISA");
    if (!v || !*v || strcmp(v, "auto") == 0)
        return widest;
    const int want = strcmp(v, "avx512") == 0     ? BP_ISA_AVX512
                     : strcmp(v, "avx2") == 0     ? BP_ISA_AVX2
                     : strcmp(v, "portable") == 0 ? BP_ISA_PORTABLE
                                                  : -1;
    if (want < 0) {
        snprintf(err, errlen,
                 "ATTNCONF_CPU_ISA: '%.40s' is not one of auto, avx512, avx2, portable", v);
        return -1;
    }
    if (want > widest) {
        snprintf(err, errlen, "ATTNCONF_CPU_ISA=%s: this CPU (or this build) lacks %s", v,
                 want == BP_ISA_AVX512 ? "AVX-512 F/BW/DQ/VL" : "AVX2 or FMA");
        return -1;
    }
    return want;
}

int bp_have_avx2_fma(void)
{
#if defined(ATTNCONF_BENCH_AVX2)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return 0;
#endif
}

/* The portable multiply-add loop: 32 independent chains, which a compiler may vectorise for
 * the baseline ISA (SSE2 on x86-64); a multiply and an add count 2 FLOPs, as one FMA. */
static float fma_portable(uint64_t iters, float seed)
{
    float c[32];
    for (int k = 0; k < 32; k++)
        c[k] = seed + (float)k * 1e-7f;
    for (uint64_t i = 0; i < iters; i++)
        for (int k = 0; k < 32; k++)
            c[k] = c[k] * 0.999999f + 1e-7f;
    float s = 0;
    for (int k = 0; k < 32; k++)
        s += c[k];
    return s;
}

static uint64_t read_portable(const uint64_t *p, size_t n)
{
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i < n; i += 4) {
        s0 += p[i];
        s1 += p[i + 1];
        s2 += p[i + 2];
        s3 += p[i + 3];
    }
    return s0 + s1 + s2 + s3;
}

/* One measurement's threads.  Each waits for `go`, works until `stop`, and records the work
 * done and its end time. */
typedef struct job {
    atomic_int *go, *stop;
    int isa;    /* bp_isa of the FMA chains */
    int avx2;   /* 1: read with AVX2 loads */
    int fma;    /* 1: FMA chains; 0: read part [part, part + part_words) */
    int passes; /* reading: this many passes over the part; 0: until `stop` */
    const uint64_t *part;
    size_t part_words;
    double work; /* FLOPs or bytes done */
    double end;
    volatile uint64_t sink; /* keeps the results alive */
} job;

/* One pass over the job's part, 16 MiB at a time (a look at `stop` after each). */
static uint64_t read_part(job *j)
{
    uint64_t acc = 0;
    const size_t piece = BP_READ_PIECE / sizeof(uint64_t);
    for (size_t at = 0; at < j->part_words; at += piece) {
        size_t n = j->part_words - at < piece ? j->part_words - at : piece;
#if defined(ATTNCONF_BENCH_AVX2)
        acc += j->avx2 ? bp_read_avx2(j->part + at, n) : read_portable(j->part + at, n);
#else
        acc += read_portable(j->part + at, n);
#endif
        j->work += (double)n * sizeof(uint64_t);
        if (atomic_load_explicit(j->stop, memory_order_relaxed))
            break;
    }
    return acc;
}

/* FMA chains until `stop`: the seed of the next chunk (it depends on every chain). */
static float fma_until_stop(job *j, float seed)
{
    while (!atomic_load_explicit(j->stop, memory_order_relaxed)) {
#if defined(ATTNCONF_BENCH_AVX512)
        if (j->isa == BP_ISA_AVX512) {
            seed = bp_fma_avx512(BP_FMA_CHUNK / 2, seed) * 1e-12f + 1.0f;
            j->work += (double)(BP_FMA_CHUNK / 2) * BP_AVX512_CHAINS * 16 * 2;
            continue;
        }
#endif
#if defined(ATTNCONF_BENCH_AVX2)
        if (j->isa == BP_ISA_AVX2) {
            seed = bp_fma_avx2(BP_FMA_CHUNK, seed) * 1e-12f + 1.0f;
            j->work += (double)BP_FMA_CHUNK * 12 * 8 * 2;
            continue;
        }
#endif
        seed = fma_portable(BP_FMA_CHUNK / 4, seed) * 1e-12f + 1.0f;
        j->work += (double)(BP_FMA_CHUNK / 4) * 32 * 2;
    }
    return seed;
}

static void *worker(void *arg)
{
    job *j = arg;
    while (!atomic_load(j->go))
        sched_yield();
    float seed = 1.0f;
    uint64_t acc = 0;
    if (j->fma)
        seed = fma_until_stop(j, seed);
    else if (j->passes)
        for (int p = 0; p < j->passes && !atomic_load(j->stop); p++)
            acc += read_part(j);
    else
        while (!atomic_load_explicit(j->stop, memory_order_relaxed))
            acc += read_part(j);
    j->end = mono_now();
    j->sink = acc + (uint64_t)seed;
    return NULL;
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Run `threads` workers for about `seconds`, or, reading with passes > 0, until each has read
 * its part that many times: the work per second of wall time, or -1.  *share gets the CPU time
 * they had over threads x the wall time: below 1, other processes took part of the CPUs and the
 * rate is below this machine's limit. */
static double measure(int threads, int isa, int fma, const uint64_t *buf, size_t words, int passes,
                      double seconds, double *share)
{
    pthread_t tid[BP_MAX_THREADS];
    job jobs[BP_MAX_THREADS];
    atomic_int go = 0, stop = 0;
    /* Parts are whole 16-word blocks (the AVX2 loop's step), 64-byte aligned. */
    const size_t per = words / (size_t)threads / 16 * 16;
    int started = 0;
    for (int t = 0; t < threads; t++) {
        jobs[t] = (job){.go = &go,
                        .stop = &stop,
                        .isa = isa,
                        .avx2 = bp_have_avx2_fma(),
                        .fma = fma,
                        .passes = passes,
                        .part = buf ? buf + (size_t)t * per : NULL,
                        .part_words = per};
        if (pthread_create(&tid[t], NULL, worker, &jobs[t]) != 0)
            break;
        started++;
    }
    if (started < threads) /* the ones started stop at once: no measurement */
        atomic_store(&stop, 1);
    const double t0 = mono_now(), c0 = cpu_s();
    atomic_store(&go, 1);
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (started == threads && !(!fma && passes) && nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    if (fma || !passes)
        atomic_store(&stop, 1);
    double work = 0, end = t0;
    for (int t = 0; t < started; t++) {
        pthread_join(tid[t], NULL);
        work += jobs[t].work;
        end = jobs[t].end > end ? jobs[t].end : end;
    }
    *share = end > t0 ? (cpu_s() - c0) / ((end - t0) * threads) : 0;
    return started == threads && end > t0 ? work / (end - t0) : -1;
}

int bp_reader_open(bp_reader *r, uint64_t want, uint64_t need, int threads, char *err,
                   size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->threads = threads < 1 ? 1 : threads < BP_MAX_THREADS ? threads : BP_MAX_THREADS;
    const uint64_t avail = mem_available() / 4, block = (uint64_t)r->threads * 128;
    uint64_t size = want < avail ? want : avail;
    size = size / block * block;
    if (size < need || size == 0) {
        snprintf(err, errlen, "only %.0f MiB of memory available for the bandwidth buffer",
                 (double)size / 1048576.0);
        return -1;
    }
    uint64_t *buf = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        snprintf(err, errlen, "cannot map a %.0f MiB buffer: %s", (double)size / 1048576.0,
                 strerror(errno));
        return -1;
    }
    bpg_advise(buf, size); /* --huge-pages: like the K and V it is read beside */
    /* Made resident (and not a shared zero page) before anything is timed. */
    const size_t words = size / sizeof(uint64_t);
    for (size_t i = 0; i < words; i += 512)
        buf[i] = i;
    r->buf = buf;
    r->bytes = size;
    return 0;
}

double bp_reader_run(const bp_reader *r, int passes)
{
    double share;
    const double x = measure(r->threads, BP_ISA_PORTABLE, 0, r->buf, r->bytes / sizeof(uint64_t),
                             passes, 0, &share);
    return x < 0 ? -1 : x / 1e9;
}

void bp_reader_close(bp_reader *r)
{
    if (r->buf)
        munmap(r->buf, r->bytes);
    r->buf = NULL;
    r->bytes = 0;
}

/* Below this share of the CPUs, a measurement's limits are too low (other processes ran). */
#define BP_SHARE_LOW 0.9

/* The log's note on a measurement whose threads did not have the CPUs to themselves. */
static void share_note(FILE *log, double share, int threads)
{
    if (log && share < BP_SHARE_LOW)
        fprintf(log,
                "  warning: the measuring threads had only %.0f%% of the %d CPUs (other "
                "processes were running): this limit is too low; measure on an idle machine\n",
                100 * share, threads);
}

int bp_measure(bp_machine *m, double seconds_each, FILE *log, char *err, size_t errlen)
{
    const int threads = m->cores < BP_MAX_THREADS ? m->cores : BP_MAX_THREADS;
    const int isa = bp_fma_isa(err, errlen);
    if (isa < 0)
        return -1;
    snprintf(m->fma_isa, sizeof m->fma_isa, "%s", bp_isa_name((bp_isa)isa));
    double best = 0, best_share = 0, share;
    for (int r = 0; r < BP_RUNS; r++) {
        double x = measure(threads, isa, 1, NULL, 0, 0, seconds_each, &share);
        if (x < 0) {
            snprintf(err, errlen, "cannot start %d threads", threads);
            return -1;
        }
        if (x > best)
            best = x, best_share = share;
    }
    m->fma_gflops = best / 1e9;
    m->cpu_share = best_share;
    if (log)
        fprintf(log, "f32 FMA (%s, %d threads): %.1f GFLOP/s (best of %d x %.1f s)\n", m->fma_isa,
                threads, m->fma_gflops, BP_RUNS, seconds_each);
    share_note(log, best_share, threads);

    const uint64_t llc = bp_llc_bytes();
    const uint64_t want = llc * 8 > ((uint64_t)1 << 30) ? llc * 8 : (uint64_t)1 << 30;
    bp_reader rd;
    if (bp_reader_open(&rd, want, (uint64_t)64 << 20, threads, err, errlen) != 0)
        return -1;
    const uint64_t size = rd.bytes;
    best = 0;
    for (int r = 0; r < BP_RUNS; r++) {
        double x =
            measure(threads, isa, 0, rd.buf, size / sizeof(uint64_t), 0, seconds_each, &share);
        if (x < 0) {
            bp_reader_close(&rd);
            snprintf(err, errlen, "cannot start %d threads", threads);
            return -1;
        }
        if (x > best)
            best = x, best_share = share;
    }
    bp_reader_close(&rd);
    m->mem_read_gbs = best / 1e9;
    m->read_buffer_bytes = size;
    if (log)
        fprintf(log,
                "memory read (%d threads, %.2f GiB buffer, last-level cache %.0f MiB): "
                "%.1f GB/s (best of %d x %.1f s)\n",
                threads, (double)size / 1073741824.0, (double)llc / 1048576.0, m->mem_read_gbs,
                BP_RUNS, seconds_each);
    share_note(log, best_share, threads);
    if (best_share < m->cpu_share)
        m->cpu_share = best_share;
    snprintf(m->limits_from, sizeof m->limits_from, "measured");
    return 0;
}

json_t *bp_machine_json(const bp_machine *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "cpu_model", json_string(m->cpu_model));
    json_object_set_new(o, "cores", json_integer(m->cores));
    json_object_set_new(o, "mem_bytes", json_integer((json_int_t)m->mem_bytes));
    json_object_set_new(o, "fma_gflops", json_real(m->fma_gflops));
    json_object_set_new(o, "mem_read_gbs", json_real(m->mem_read_gbs));
    json_object_set_new(o, "limits_from", json_string(m->limits_from));
    json_object_set_new(o, "fma_isa", json_string(m->fma_isa));
    json_object_set_new(o, "read_buffer_bytes", json_integer((json_int_t)m->read_buffer_bytes));
    json_object_set_new(o, "cpu_share", m->cpu_share > 0 ? json_real(m->cpu_share) : json_null());
    json_object_set_new(o, "cpu_signature",
                        m->cpu_signature[0] ? json_string(m->cpu_signature) : json_null());
    json_object_set_new(o, "thp_mode", json_string(m->thp_mode));
    json_object_set_new(o, "huge_pages", json_boolean(m->huge_pages));
    return o;
}

int bp_limits_load(const char *path, bp_machine *m, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* A limits file is a few hundred bytes: anything else is not one, and is not read whole. */
    if (!S_ISREG(st.st_mode) || st.st_size > (1 << 20)) {
        snprintf(err, errlen, "%s: %s", path,
                 !S_ISREG(st.st_mode) ? "not a regular file" : "over 1 MiB: not a limits file");
        return -1;
    }
    json_error_t je;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        if (je.line > 0)
            snprintf(err, errlen, "%s:%d: not valid JSON: %s", path, je.line, je.text);
        else
            snprintf(err, errlen, "%s: %s", path, je.text);
        return -1;
    }
    json_t *mo = json_object_get(doc, "machine");
    json_t *f = json_object_get(mo, "fma_gflops"), *r = json_object_get(mo, "mem_read_gbs");
    const char *why = !json_is_object(mo) ? "no \"machine\" object"
                      : !json_is_number(f) || !(json_number_value(f) > 0)
                          ? "machine.fma_gflops: expected a positive number"
                      : !json_is_number(r) || !(json_number_value(r) > 0)
                          ? "machine.mem_read_gbs: expected a positive number"
                          : NULL;
    if (why) {
        snprintf(err, errlen, "%s: %s", path, why);
        json_decref(doc);
        return -1;
    }
    m->fma_gflops = json_number_value(f);
    m->mem_read_gbs = json_number_value(r);
    const char *isa = json_string_value(json_object_get(mo, "fma_isa"));
    if (isa)
        snprintf(m->fma_isa, sizeof m->fma_isa, "%s", isa);
    json_t *cs = json_object_get(mo, "cpu_share");
    m->cpu_share = json_is_number(cs) ? json_number_value(cs) : 0;
    /* The warning --peak printed when it measured them, again each time they are used. */
    if (m->cpu_share > 0 && m->cpu_share < BP_SHARE_LOW)
        fprintf(stderr,
                "attnconf bench: warning: --limits %s was measured with only %.0f%% of the CPUs "
                "(other processes were running): its limits are too low; measure again on an "
                "idle machine\n",
                path, 100 * m->cpu_share);
    json_t *rb = json_object_get(mo, "read_buffer_bytes");
    m->read_buffer_bytes =
        json_is_integer(rb) && json_integer_value(rb) > 0 ? (uint64_t)json_integer_value(rb) : 0;
    /* Limits measured on another machine describe that machine: say so, keep them (the user
     * asked), and keep this machine's own description. */
    const char *model = json_string_value(json_object_get(mo, "cpu_model"));
    const char *sig = json_string_value(json_object_get(mo, "cpu_signature"));
    json_t *cores = json_object_get(mo, "cores");
    if ((model && strcmp(model, m->cpu_model) != 0) ||
        (sig && m->cpu_signature[0] && strcmp(sig, m->cpu_signature) != 0) ||
        (json_is_integer(cores) && json_integer_value(cores) != m->cores))
        fprintf(stderr,
                "attnconf bench: warning: --limits %s was measured on '%s' (%s) with %lld "
                "cores; this is '%s' (%s) with %d\n",
                path, model ? model : "?", sig ? sig : "?",
                json_is_integer(cores) ? (long long)json_integer_value(cores) : 0LL, m->cpu_model,
                m->cpu_signature[0] ? m->cpu_signature : "?", m->cores);
    /* The read bandwidth of 4 KiB pages is not that of huge ones (perf/README.md); a file from
     * before the key says nothing either way. */
    const json_t *hp = json_object_get(mo, "huge_pages");
    const int file_huge = json_is_true(hp);
    if (json_is_boolean(hp) && file_huge != m->huge_pages)
        fprintf(stderr,
                "attnconf bench: warning: --limits %s was measured %s huge pages; this run is "
                "%s them\n",
                path, file_huge ? "with" : "without", m->huge_pages ? "with" : "without");
    snprintf(m->limits_from, sizeof m->limits_from, "file:%s", path);
    json_decref(doc);
    return 0;
}

int bp_peak_main(const char *out_path)
{
    static of_file out; /* two paths: not on the stack */
    if (out_path && bo_open(&out, out_path) != 0)
        return CLI_EXIT_USAGE;
    bp_machine m;
    bp_machine_describe(&m);
    printf("cpu: %s, %d cores in the affinity mask, %.1f GiB of memory; pages: %s (THP mode "
           "%s)\n",
           m.cpu_model, m.cores, (double)m.mem_bytes / 1073741824.0, bpg_pages_words(m.huge_pages),
           m.thp_mode);
    fflush(stdout);
    char err[512];
    if (bp_measure(&m, 1.0, stdout, err, sizeof err) != 0) {
        fprintf(stderr, "attnconf bench --peak: %s\n", err);
        if (out_path)
            of_discard(&out);
        return CLI_EXIT_FAIL;
    }
    if (!out_path)
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    char started[32];
    bo_utc_now(started);
    json_t *doc = json_object();
    json_object_set_new(doc, "attnconf_peak", json_integer(1));
    json_object_set_new(doc, "started", json_string(started));
    json_object_set_new(doc, "machine", bp_machine_json(&m));
    int rc = bo_commit(&out, doc);
    json_decref(doc);
    if (rc != 0) {
        fprintf(stderr, "attnconf bench: cannot write %s: %s\n", out_path, strerror(errno));
        return CLI_EXIT_FAIL;
    }
    printf("machine limits written to %s\n", out_path);
    return 0;
}
