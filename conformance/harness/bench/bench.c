/* bench.c — `attnconf bench`: time a perf suite on one or more backends (bench.h).
 *
 *   attnconf bench --backend NAME|PATH.so|exec:CMD [--backend-option KEY=VALUE]... [--backend ...]
 *                  --suite FILE [--filter GLOB]... [--out FILE.json] [--label TEXT]
 *                  [--min-time S] [--min-reps N] [--max-reps N] [--max-gflop X]
 *                  [--limits FILE.json] [--huge-pages]
 *   attnconf bench --peak [--out FILE.json] [--huge-pages]
 *
 * Each --backend-option applies to the --backend before it.  Plugins are loaded in process and
 * timed around the call (no worker: a worker's transport would be timed too; "timing":
 * "in-process" in the JSON).  An exec: adapter (PROTOCOL.md) cannot be timed from here without
 * timing its pipe transport, so it is timed by what it reports: the "seconds" of each sdpa
 * reply, the time it spent in its library's own call (exec_backend.h xb_last_seconds; "timing":
 * "adapter"; a repetition whose reply has none is an ERROR).  Every backend is loaded once up
 * front (a plugin in a worker process, worker.h: one that crashes or hangs there is an error,
 * exit 1), so a typo, a refused option or an adapter that does not start fails before anything
 * runs, and then once more in a forked child per benchmark (shape x dtype): the child loads it
 * (starting its own adapter), runs bb_run and sends the result back as one JSON object over a
 * pipe.  A crash costs that benchmark alone (ERROR, naming the signal), the child's getrusage
 * gives the benchmark's own peak resident memory (for an adapter, that of the adapter process:
 * RUSAGE_CHILDREN once it has exited), and a backend's threads are never forked (the parent
 * holds no open context).
 *
 * --huge-pages starts bench again with malloc's huge-page tunable in its environment
 * (bench_pages.c), before anything else, so every process of the run inherits it.
 *
 * The machine's limits are measured first (bench_peak.c, about 6 s) unless --limits reuses the
 * "machine" object of an earlier JSON file.  A memory-bound benchmark's child also measures the
 * read bandwidth beside its repetitions (bench_run.c), and its %limit is of that.  Results: a table on stdout, a progress line on
 * stderr when it is a terminal, and with --out the JSON document (perf/README.md) written
 * atomically.  Exit status: 0 every benchmark OK, NOT_SUPPORTED or SKIPPED; 1 an INCORRECT or
 * ERROR, a backend that cannot be loaded, or an output that cannot be written; 2 usage errors
 * and bad input (a suite file, a --limits file, a filter that selects nothing).
 */
#define _GNU_SOURCE /* fnmatch */

#include "bench.h"

#include <errno.h>
#include <fnmatch.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend_load.h"
#include "backend/exec_backend.h"
#include "backend/plugin.h"
#include "common/cli.h"
#include "common/clock.h"
#include "common/outfile.h"
#include "common/locate.h"
#include "common/proc.h"
#include "run/worker.h"

/* --timeout when none is given: far above any committed suite's slowest benchmark (a 34-GFLOP
 * call on a slow third-party path, 10 repetitions and the reference check), so it only ends
 * a hang. */
#define BENCH_DEFAULT_TIMEOUT_S 1800.0

#define MAX_BACKENDS 16
#define MAX_OPTIONS 32
#define MAX_FILTERS 64
#define MAX_REPS_LIMIT 1000000

static void usage(FILE *f)
{
    fprintf(
        f, "usage: attnconf bench --backend NAME|PATH.so|exec:CMD [--backend-option KEY=VALUE]...\n"
           "                      [--backend ...] --suite FILE [--filter GLOB]...\n"
           "                      [--out FILE.json] [--label TEXT] [--min-time S] [--min-reps N]\n"
           "                      [--max-reps N] [--max-gflop X] [--limits FILE.json]\n"
           "                      [--timeout SECONDS] [--adapter-stderr FILE] [--huge-pages]\n"
           "       attnconf bench --peak [--out FILE.json] [--huge-pages]\n"
           "\n"
           "  Times every shape of a perf suite (perf/suites/NAME.yaml) in each of its dtypes\n"
           "  on each backend, in a forked child per benchmark; the first result is checked\n"
           "  against the reference on up to 64 rows within the SPEC clause 13 bound\n"
           "  (INCORRECT otherwise), then repetitions are timed, q changing slightly before\n"
           "  each.\n"
           "  --backend         a plugin: a name (NAME.so in $ATTNCONF_BACKEND_PATH, then the\n"
           "                    build tree) or a path, timed around the call; or exec:COMMAND,\n"
           "                    an adapter (PROTOCOL.md), timed by the \"seconds\" it reports\n"
           "                    for its library call; repeatable (one name once)\n"
           "  --backend-option  KEY=VALUE for the --backend just before it (repeatable)\n"
           "  --suite           the suite file (one per run)\n"
           "  --filter          shell glob on \"<shape id>.<dtype>\" (repeatable: any matches)\n"
           "  --out             the results as JSON (written atomically; a FILE that exists\n"
           "                    and is not a regular file is refused)\n"
           "  --label           free text recorded in the JSON (e.g. a commit)\n"
           "  --min-time        seconds of timed repetitions per benchmark, at least (0.5,\n"
           "                    or the suite's `defaults`; wall time: an adapter's transport\n"
           "                    counts here)\n"
           "  --min-reps        timed repetitions, at least (10, or the suite's `defaults`)\n"
           "  --max-reps        timed repetitions, at most (1000, or --min-reps where larger)\n"
           "  --max-gflop       skip (SKIPPED) a benchmark of more GFLOP than this per call\n"
           "  --timeout         seconds one benchmark may take, its checks and repetitions\n"
           "                    together (default 1800); past it its process is killed and\n"
           "                    the benchmark is an ERROR\n"
           "  --adapter-stderr  FILE\n"
           "                    " CLI_ADAPTER_STDERR_HELP "\n"
           "                    (every benchmark's adapter; exec: only)\n"
           "  --limits          reuse the \"machine\" limits of an earlier bench or --peak JSON\n"
           "                    instead of measuring them (about 6 s)\n"
           "  --huge-pages      every benchmark's memory asks for transparent huge pages:\n"
           "                    what the harness, a backend or an adapter mallocs through\n"
           "                    glibc's tunable (GLIBC_TUNABLES glibc.malloc.hugetlb=1;\n"
           "                    bench starts itself again with it), the read loop's buffer\n"
           "                    by madvise;\n"
           "                    refused (exit 2) where the kernel's THP mode is never or\n"
           "                    unreadable, or the C library is not glibc 2.35 or later\n"
           "  --peak            only measure and print this machine's limits: f32 FMA GFLOP/s\n"
           "                    and read GB/s on all cores (best of 3 x 1 s each)\n"
           "  FLOPs = (2 D + 2 Dv) per visible query-key pair; GB/s = bytes of K and V in the\n"
           "  visible key range / median time; %% limit = of the FMA peak (bound: compute) or of\n"
           "  the read bandwidth (bound: memory): for a memory-bound shape the bandwidth read\n"
           "  beside it (--peak's read loop run between its repetitions, in the same process,\n"
           "  about a quarter of its time), so the ratio holds on a machine whose bandwidth\n"
           "  changes under other tenants; the limits' figure only when that buffer cannot be\n"
           "  had (a note says so).\n"
           "  exit status: 0 all OK, NOT_SUPPORTED or SKIPPED, 1 an INCORRECT or ERROR (or a\n"
           "  backend that cannot load), 2 usage or input errors\n");
}

typedef struct bench_backend {
    const char *spec;
    attnconf_option opt[MAX_OPTIONS];
    char key[MAX_OPTIONS][HB_OPTION_KEY_MAX + 1];
    size_t nopt;
    int adapter;                /* 1: an exec: adapter, timed by the seconds it reports */
    const char *adapter_stderr; /* --adapter-stderr, for an adapter */
    /* From the up-front load. */
    char name[128], version[128];
    uint64_t caps;
    char device[256]; /* a device backend's device (hw_hello.device); "" for host memory */
} bench_backend;

typedef struct bench_opts {
    bench_backend be[MAX_BACKENDS];
    int nbe;
    const char *suite, *out, *label, *limits, *adapter_stderr;
    const char *filter[MAX_FILTERS];
    size_t nfilter;
    double min_time_s, max_gflop, timeout_s;
    int64_t min_reps, max_reps;
    int peak, huge_pages;
    int min_time_given, min_reps_given, max_reps_given; /* on the command line */
} bench_opts;

/* --backend: a new entry, which the --backend-option after it fill. */
static int opt_backend(const cli_cmd *c, void *ud, const char *v)
{
    bench_opts *o = ud;
    if (o->nbe == MAX_BACKENDS)
        return cli_usage_error(c, "too many --backend (at most 16)", v);
    o->be[o->nbe].adapter = hb_spec_is_exec(v);
    o->be[o->nbe++].spec = v;
    return 0;
}

static int opt_backend_option(const cli_cmd *c, void *ud, const char *v)
{
    bench_opts *o = ud;
    if (o->nbe == 0)
        return cli_usage_error(c,
                               "--backend-option applies to the --backend before it; give "
                               "--backend first",
                               v);
    bench_backend *b = &o->be[o->nbe - 1];
    const char *why = hb_option_add(v, b->opt, b->key, &b->nopt, MAX_OPTIONS);
    return why ? cli_usage_error(c, why, v) : 0;
}

/* --suite once, and saying why: the JSON of one --out holds one suite. */
static int opt_suite(const cli_cmd *c, void *ud, const char *v)
{
    bench_opts *o = ud;
    if (o->suite)
        return cli_usage_error(c,
                               "--suite given twice (one suite per run, so one per --out "
                               "file)",
                               v);
    o->suite = v;
    return 0;
}

/* Returns 0, CLI_HELP or the exit status of a usage error (message printed). */
static int parse(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->min_time_s = 0.5;
    o->min_reps = 10;
    o->max_reps = -1;
    o->max_gflop = -1;
    o->timeout_s = BENCH_DEFAULT_TIMEOUT_S;
    /* the numbers as given: --peak refuses them */
    const char *given[5] = {NULL, NULL, NULL, NULL, NULL};
    cli_opt adapter_stderr = cli_opt_adapter_stderr(&o->adapter_stderr);
    adapter_stderr.help = NULL; /* the usage text lists it with the others */
    const cli_opt opts[] = {
        {.name = "--backend", .kind = CLI_CALL, .fn = opt_backend},
        {.name = "--backend-option", .kind = CLI_CALL, .fn = opt_backend_option},
        {.name = "--suite", .kind = CLI_CALL, .fn = opt_suite},
        {.name = "--filter",
         .kind = CLI_STRINGS,
         .dest = o->filter,
         .max = MAX_FILTERS,
         .count = &o->nfilter},
        {.name = "--out", .kind = CLI_STRING, .dest = &o->out},
        {.name = "--label", .kind = CLI_STRING, .dest = &o->label},
        {.name = "--min-time",
         .kind = CLI_NUMBER,
         .dest = &o->min_time_s,
         .lo = 0,
         .hi = 3600,
         .raw = &given[0]},
        {.name = "--min-reps",
         .kind = CLI_COUNT,
         .dest = &o->min_reps,
         .hi = MAX_REPS_LIMIT,
         .raw = &given[1]},
        {.name = "--max-reps",
         .kind = CLI_COUNT,
         .dest = &o->max_reps,
         .hi = MAX_REPS_LIMIT,
         .raw = &given[2]},
        {.name = "--max-gflop",
         .kind = CLI_NUMBER,
         .dest = &o->max_gflop,
         .lo = 0,
         .hi = 1e12,
         .raw = &given[3]},
        {.name = "--limits", .kind = CLI_STRING, .dest = &o->limits},
        {.name = "--timeout", .kind = CLI_SECONDS, .dest = &o->timeout_s, .raw = &given[4]},
        {.name = "--peak", .kind = CLI_FLAG, .dest = &o->peak},
        {.name = "--huge-pages", .kind = CLI_FLAG, .dest = &o->huge_pages},
        adapter_stderr,
    };
    const cli_cmd c = {
        .name = "bench", .usage = usage, .opts = opts, .nopts = CLI_COUNT_OF(opts), .ud = o};
    int rc = cli_parse(&c, argc, argv);
    if (rc)
        return rc;
    o->min_time_given = given[0] != NULL;
    o->min_reps_given = given[1] != NULL;
    o->max_reps_given = given[2] != NULL;
    if (o->peak) {
        int other = o->nbe || o->nfilter || o->suite || o->label || o->limits || o->adapter_stderr;
        for (size_t k = 0; k < 5; k++)
            other |= given[k] != NULL;
        return other ? cli_usage_error(&c, "--peak takes only --out and --huge-pages", NULL) : 0;
    }
    if (!o->nbe)
        return cli_usage_error(&c, "--backend is required", NULL);
    if (!o->suite)
        return cli_usage_error(&c, "--suite is required", NULL);
    /* Both given: refused here.  Otherwise --min-reps may still come from the suite's defaults,
     * so the check (and the default --max-reps) waits for the suite (bench_main). */
    if (o->min_reps_given && o->max_reps_given && o->max_reps < o->min_reps) {
        char why[96];
        snprintf(why, sizeof why, "--max-reps %lld is below --min-reps %lld",
                 (long long)o->max_reps, (long long)o->min_reps);
        return cli_usage_error(&c, why, NULL);
    }
    int adapters = 0;
    for (int x = 0; x < o->nbe; x++) {
        adapters += o->be[x].adapter;
        o->be[x].adapter_stderr = o->be[x].adapter ? o->adapter_stderr : NULL;
    }
    if (o->adapter_stderr && !adapters)
        return cli_usage_error(&c, CLI_ADAPTER_STDERR_NOT_EXEC, NULL);
    return cli_adapter_stderr_check("bench", o->adapter_stderr);
}

/* ---- one benchmark in a child ------------------------------------------------------------ */

/* What the benchmark child needs, through proc_fork's one argument. */
typedef struct child_arg {
    const bench_backend *b;
    const bs_shape *s;
    attnref_dtype dt;
    bb_via via;
    const bb_config *cfg;
    FILE *progress;
    const char *prefix;
} child_arg;

/* The benchmark child (proc_fork: its own process group, PDEATHSIG, stdout on bench's stderr
 * so a backend's prints miss the table, no core files): loads the backend, runs the benchmark
 * and sends its result object on fd.  Never returns. */
static void bench_child(int fd, void *arg)
{
    const child_arg *a = arg;
    const bench_backend *b = a->b;
    /* The parent names how this child ended, a backend's exit status included. */
    hb_exit_guard_refuse();
    /* A backend's fault ends this child with its own signal, which the parent names; a
     * sanitizer's handler would print a report and abort (SIGABRT) instead. */
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t f = 0; f < sizeof faults / sizeof faults[0]; f++)
        signal(faults[f], SIG_DFL);
    json_t *o = bb_shape_json(a->s, a->dt, a->via, "ERROR", "");
    hb_backend hb;
    char err[1024];
    hb_open_opts oo = {b->opt, b->nopt, HB_DEFAULT_TIMEOUT_S, b->adapter_stderr};
    if (hb_load(b->spec, hl_backend_dir(), &oo, &hb, err, sizeof err) != 0) {
        json_object_set_new(o, "message", json_string(err));
    } else {
        bb_run(&hb, a->s, a->dt, a->via, a->cfg, b->adapter ? xb_last_seconds : NULL, o,
               a->progress, a->prefix);
        hb_unload(&hb); /* an adapter: closed, exited and reaped */
        struct rusage ru;
        if (b->adapter && getrusage(RUSAGE_CHILDREN, &ru) == 0) /* KiB on Linux */
            json_object_set_new(o, "peak_rss_bytes", json_integer((json_int_t)ru.ru_maxrss * 1024));
    }
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    const int ok = text && proc_send(fd, text, strlen(text)) == 0;
    free(text);
    _exit(ok ? 0 : 3);
}

/* Run benchmark (s, dt) of backend b in a supervised child (common/proc.h); returns its result
 * object (never NULL): the child's, or one the parent made for a child that died or sent
 * nothing usable. */
static json_t *run_child(const bench_backend *b, const bs_shape *s, attnref_dtype dt, bb_via via,
                         const bb_config *cfg, FILE *progress, const char *prefix)
{
    /* What the backend forks and moves out of the child's process group (setsid) is orphaned
     * to bench, which then ends it with the child: bench's only children are these. */
    proc_subreaper();
    child_arg arg = {b, s, dt, via, cfg, progress, prefix};
    proc_child c;
    char why[256];
    if (proc_fork(&c, bench_child, &arg, why, sizeof why) != 0)
        return bb_shape_json(s, dt, via, "ERROR",
                             strncmp(why, "fork", 4) == 0 ? "harness: cannot fork"
                                                          : "harness: cannot make a pipe");
    char *buf = NULL;
    size_t len = 0;
    const double deadline = mono_now() + cfg->timeout_s;
    /* Ends at the child's exit too, though a process it forked may hold the socket open. */
    int timed_out = proc_read_all(c.fd, deadline, c.pid, &buf, &len) == 2;
    /* EOF: the child exits now, unless the backend closed the socket and went on (or hangs in
     * its close): it gets until the deadline. */
    if (!timed_out && !proc_wait_exit(c.pid, deadline, NULL))
        timed_out = 1;
    const int st = proc_reap(&c, 1); /* and its process group, and what escaped it */
    json_t *o = NULL;
    if (buf && !timed_out && st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
        o = json_loadb(buf, len, 0, NULL);
    free(buf);
    if (json_is_object(o))
        return o;
    json_decref(o);
    char msg[256], how[128];
    if (timed_out) {
        snprintf(msg, sizeof msg,
                 "no result after %g s (--timeout): the benchmark process was "
                 "killed",
                 cfg->timeout_s);
    } else if (st != -1 && WIFSIGNALED(st)) {
        proc_describe_signal(WTERMSIG(st), how, sizeof how);
        snprintf(msg, sizeof msg, "the backend crashed: %s%s", how,
                 WTERMSIG(st) == SIGKILL ? " (not sent by the harness: out of memory?)" : "");
    } else {
        snprintf(msg, sizeof msg, "the benchmark process exited with status %d and no result",
                 st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    return bb_shape_json(s, dt, via, "ERROR", msg);
}

/* ---- output ------------------------------------------------------------------------------- */

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* Column widths of the backend name and the benchmark id: the longest of each. */
typedef struct widths {
    int backend, id;
} widths;

static void print_header(const widths *w)
{
    printf("%-*s %-*s %-13s %11s %9s %8s %7s %6s %9s %7s\n", w->backend, "backend", w->id,
           "benchmark", "status", "median", "GFLOP/s", "GB/s", "%limit", "reps", "peak RSS", "err");
}

/* One benchmark's line: "err" is the validation's worst error / allowed error. */
static void print_row(const widths *w, const char *backend, const json_t *o)
{
    const char *status = json_string_value(json_object_get(o, "status"));
    const char *msg = json_string_value(json_object_get(o, "message"));
    printf("%-*s %-*s %-13s", w->backend, backend, w->id,
           json_string_value(json_object_get(o, "id")), status);
    const double med = num(o, "median_s"), beside = num(o, "read_gbs_beside");
    if (isfinite(med)) {
        /* A memory-bound shape: of the bandwidth read beside it, where it was. */
        const double pct = isfinite(beside) ? 100 * num(o, "kv_gbs") / beside : num(o, "pct_limit");
        printf(" %8.3f %s %9.2f %8.2f %6.1f%% %6.0f", med >= 1 ? med : med * 1e3,
               med >= 1 ? "s " : "ms", num(o, "gflops"), num(o, "kv_gbs"),
               isfinite(pct) ? pct : 0.0, num(o, "reps"));
    } else {
        printf(" %11s %9s %8s %7s %6s", "-", "-", "-", "-", "-");
    }
    const double rss = num(o, "peak_rss_bytes"), err = num(o, "max_err_ratio");
    if (isfinite(rss))
        printf(" %5.0f MiB", rss / 1048576.0);
    else
        printf(" %9s", "-");
    if (isfinite(err))
        printf(" %7.3f", err);
    printf("\n");
    if (msg && msg[0])
        printf("    %s\n", msg);
    /* A device backend: the time above is the kernel's on resident data; the copies apart. */
    const double to = num(o, "copy_to_device_s"), from = num(o, "copy_from_device_s");
    if (isfinite(to) && isfinite(from))
        printf("    copies: to the device %.3f ms (%.1f KiB), from the device %.3f ms (%.1f KiB)\n",
               to * 1e3, num(o, "copy_to_device_bytes") / 1024.0, from * 1e3,
               num(o, "copy_from_device_bytes") / 1024.0);
    /* A memory-bound shape: the bandwidth read beside it that its %limit is of, or why none. */
    const char *note = json_string_value(json_object_get(o, "read_beside_note"));
    if (isfinite(beside))
        printf("    %%limit of %.1f GB/s read beside it (median of %.0f pass%s)\n", beside,
               num(o, "read_beside_passes"), num(o, "read_beside_passes") == 1 ? "" : "es");
    else if (note)
        printf("    %s\n", note);
    fflush(stdout);
}

static json_t *config_json(const bench_opts *o)
{
    json_t *c = json_object();
    json_object_set_new(c, "min_time_s", json_real(o->min_time_s));
    json_object_set_new(c, "min_reps", json_integer(o->min_reps));
    json_object_set_new(c, "max_reps", json_integer(o->max_reps));
    json_object_set_new(c, "warmup", json_integer(1)); /* the validated call */
    json_object_set_new(c, "threads_hint", json_null());
    json_object_set_new(c, "max_gflop", o->max_gflop >= 0 ? json_real(o->max_gflop) : json_null());
    return c;
}

static json_t *backend_json(const bench_backend *b)
{
    json_t *x = json_object(), *opts = json_object();
    json_object_set_new(x, "name", json_string(b->name));
    json_object_set_new(x, "version", json_string(b->version));
    for (size_t k = 0; k < b->nopt; k++)
        json_object_set_new(opts, b->opt[k].key, json_string(b->opt[k].value));
    json_object_set_new(x, "options", opts);
    json_object_set_new(x, "timing", json_string(b->adapter ? "adapter" : "in-process"));
    if (b->device[0]) /* a device backend: times are the kernel's, copies apart (perf/README.md) */
        json_object_set_new(x, "device", json_string(b->device));
    json_object_set_new(x, "shapes", json_array());
    return x;
}

/* Bytes of the boolean mask bb_run builds for a backend without the sdpa parameters. */
static double mask_bytes(const bs_shape *s)
{
    return (double)s->b * (double)(s->causal || s->window || s->segment_ids ? s->lq : 1) *
           (double)s->lk;
}

/* ---- the command -------------------------------------------------------------------------- */

/* Whether benchmark id is selected; hit (may be NULL) marks every --filter glob that matches. */
static int selected(const bench_opts *o, const char *id, unsigned char *hit)
{
    int any = !o->nfilter;
    for (size_t f = 0; f < o->nfilter; f++)
        if (fnmatch(o->filter[f], id, 0) == 0) {
            any = 1;
            if (!hit)
                break;
            hit[f] = 1;
        }
    return any;
}

/* Every backend once, before anything runs: a typo, a refused option or a duplicate name
 * fails now; the name, version and capabilities are kept.  A plugin is loaded in a worker
 * (hw_probe, bounded by the default --case-timeout), so one that crashes or hangs while
 * loading is this error, not a crash of bench, and no backend thread ever exists here to be
 * forked with a child; an exec: adapter is a process of its own, loaded here and closed.
 * Returns 0 or the exit status (message printed). */
static int load_backends(bench_opts *o, char *err, size_t errlen)
{
    static hw_hello h; /* ~14 KiB: not on the stack */
    for (int x = 0; x < o->nbe; x++) {
        bench_backend *b = &o->be[x];
        hb_open_opts oo = {b->opt, b->nopt, HB_DEFAULT_TIMEOUT_S, b->adapter_stderr};
        if (b->adapter) {
            hb_backend hb;
            if (hb_load(b->spec, hl_backend_dir(), &oo, &hb, err, errlen) != 0) {
                fprintf(stderr, "attnconf bench: %s\n", err);
                return CLI_EXIT_FAIL;
            }
            hw_describe(&hb, &h);
            hb_unload(&hb);
        } else if (hw_probe(b->spec, hl_backend_dir(), &oo, HW_DEFAULT_CASE_TIMEOUT_S, &h) != 0) {
            fprintf(stderr, "attnconf bench: %s\n", h.err);
            return CLI_EXIT_FAIL;
        }
        snprintf(b->name, sizeof b->name, "%s", h.name);
        snprintf(b->version, sizeof b->version, "%.*s", (int)sizeof b->version - 1, h.version);
        b->caps = h.caps;
        snprintf(b->device, sizeof b->device, "%s", h.device);
        for (int y = 0; y < x; y++)
            if (!strcmp(o->be[y].name, b->name)) {
                fprintf(stderr,
                        "attnconf bench: backend '%s' given twice (%s, %s): results are "
                        "keyed by name; compare options in separate --out files\n",
                        b->name, o->be[y].spec, b->spec);
                return CLI_EXIT_USAGE;
            }
    }
    return 0;
}

/* One benchmark's result: SKIPPED (--max-gflop), NOT_SUPPORTED (a capability, or the mask a
 * backend without the parameters needs would not fit), else what its child reports. */
static json_t *bench_one(const bench_opts *o, const bench_backend *b, const bs_shape *s,
                         attnref_dtype dt, const bb_config *cfg, FILE *progress, const char *prefix)
{
    bs_counts c;
    bs_count(s, dt, &c);
    bb_via via;
    char why[600];
    if (o->max_gflop >= 0 && c.flops > o->max_gflop * 1e9) {
        snprintf(why, sizeof why, "%.3g GFLOP per call, over --max-gflop %g", c.flops / 1e9,
                 o->max_gflop);
        return bb_shape_json(s, dt, BB_VIA_PARAMS, "SKIPPED", why);
    }
    if (bb_supported(s, dt, b->caps, &via, why, sizeof why) != 0)
        return bb_shape_json(s, dt, BB_VIA_PARAMS, "NOT_SUPPORTED", why);
    const double mem = (double)cfg->machine->mem_bytes;
    if (via == BB_VIA_MASK && (double)c.io_bytes + mask_bytes(s) > mem / 2) {
        /* The suite's size check counted q, k, v and out; this mask comes on top. */
        snprintf(why, sizeof why,
                 "the boolean mask this backend needs (it lacks the sdpa "
                 "parameters) takes %.2f GiB: with the inputs, over half of the %.2f GiB of "
                 "memory",
                 mask_bytes(s) / 1073741824.0, mem / 1073741824.0);
        return bb_shape_json(s, dt, via, "NOT_SUPPORTED", why);
    }
    json_t *r = run_child(b, s, dt, via, cfg, progress, prefix);
    if (progress)
        fprintf(progress, "\r\033[K");
    return r;
}

int cmd_bench(const char *argv0, int argc, char **argv)
{
    bench_opts o;
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    char err[2048];
    /* Started again with malloc's tunable in the environment (bench_pages.c); returns here in
     * the process that has it. */
    if (o.huge_pages && bpg_request(argv0, argc, argv, err, sizeof err) != 0) {
        fprintf(stderr, "attnconf bench: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    if (o.peak)
        return bp_peak_main(o.out);
    if (o.huge_pages && bpg_malloc_caveat())
        fprintf(stderr, "attnconf bench: note: --huge-pages: %s\n", bpg_malloc_caveat());

    bs_suite suite;
    if (bs_suite_load(o.suite, bp_mem_bytes(), &suite, err, sizeof err) != 0) {
        fprintf(stderr, "attnconf bench: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    /* The suite's own defaults, where the command line says nothing (a cost-curve suite's
     * largest shapes take seconds a call: a few repetitions). */
    if (!o.min_time_given && suite.min_time_s >= 0)
        o.min_time_s = suite.min_time_s;
    if (!o.min_reps_given && suite.min_reps >= 0)
        o.min_reps = suite.min_reps;
    if (!o.max_reps_given)
        o.max_reps = o.min_reps > 1000 ? o.min_reps : 1000;
    else if (o.max_reps < o.min_reps) {
        fprintf(stderr, "attnconf bench: --max-reps %lld is below %s %lld\n", (long long)o.max_reps,
                o.min_reps_given      ? "--min-reps"
                : suite.min_reps >= 0 ? "the suite's min_reps"
                                      : "the default --min-reps",
                (long long)o.min_reps);
        bs_suite_free(&suite);
        return CLI_EXIT_USAGE;
    }
    /* The selected benchmarks, in suite order. */
    size_t nsel = 0;
    char id[ACASE_ID_MAX + 8];
    unsigned char hit[MAX_FILTERS] = {0};
    for (size_t i = 0; i < suite.n; i++)
        for (int d = 0; d < suite.shapes[i].ndtypes; d++) {
            snprintf(id, sizeof id, "%s.%s", suite.shapes[i].id,
                     bs_dtype_name(suite.shapes[i].dtypes[d]));
            nsel += selected(&o, id, hit);
        }
    /* Each glob that selects nothing: the error when none selects anything, else a warning (a
     * mistyped one among several would drop its benchmarks unseen). */
    for (size_t f = 0; f < o.nfilter; f++) {
        if (!hit[f])
            fprintf(stderr, "attnconf bench: %s: --filter '%s' matches no benchmark of %s%s\n",
                    nsel ? "warning" : "error", o.filter[f], o.suite,
                    nsel ? ""
                         : " (a glob is matched against \"<shape id>.<dtype>\", e.g. "
                           "'decode.B1.Lk4096.f16' or 'decode.B1.*')");
    }
    if (nsel == 0) {
        bs_suite_free(&suite);
        return CLI_EXIT_USAGE;
    }
    static of_file out; /* two paths: not on the stack */
    if (o.out && bo_open(&out, o.out) != 0) {
        bs_suite_free(&suite);
        return CLI_EXIT_USAGE;
    }
    int status = 0;
    json_t *doc = NULL;

    if ((status = load_backends(&o, err, sizeof err)) != 0)
        goto finish;

    bp_machine m;
    bp_machine_describe(&m);
    if (o.limits) {
        if (bp_limits_load(o.limits, &m, err, sizeof err) != 0) {
            fprintf(stderr, "attnconf bench: --limits %s\n", err);
            status = CLI_EXIT_USAGE;
            goto finish;
        }
    } else {
        fprintf(stderr, "attnconf bench: measuring this machine's limits (about 6 s; --limits "
                        "FILE reuses earlier ones)\n");
        if (bp_measure(&m, 1.0, stderr, err, sizeof err) != 0) {
            fprintf(stderr, "attnconf bench: cannot measure the machine's limits: %s\n", err);
            status = CLI_EXIT_FAIL;
            goto finish;
        }
    }
    printf("suite %s (%s): %s\n", suite.name, o.suite, suite.description);
    printf("machine: %s, %d cores, %.1f GiB; limits (%s): %.1f GFLOP/s f32 FMA, %.1f GB/s "
           "read (memory-bound shapes: of the bandwidth read beside each)\n",
           m.cpu_model, m.cores, (double)m.mem_bytes / 1073741824.0, m.limits_from, m.fma_gflops,
           m.mem_read_gbs);
    printf("pages: %s (THP mode %s)\n", bpg_pages_words(m.huge_pages), m.thp_mode);
    widths w = {(int)strlen("backend"), (int)strlen("benchmark")};
    for (int x = 0; x < o.nbe; x++)
        if ((int)strlen(o.be[x].name) > w.backend)
            w.backend = (int)strlen(o.be[x].name);
    for (size_t i = 0; i < suite.n; i++)
        if ((int)strlen(suite.shapes[i].id) + 5 > w.id)
            w.id = (int)strlen(suite.shapes[i].id) + 5;
    for (int x = 0; x < o.nbe; x++)
        if (o.be[x].adapter)
            printf("%s: an exec: adapter, timed by the seconds it reports for its library call "
                   "(the pipe transport not included)\n",
                   o.be[x].name);
    print_header(&w);

    char started[32];
    bo_utc_now(started);
    doc = json_object();
    json_object_set_new(doc, "attnconf_bench", json_integer(1));
    json_object_set_new(doc, "suite", json_string(suite.name));
    json_object_set_new(doc, "suite_file", json_string(o.suite));
    if (suite.ncurves) {
        /* What perf-report fits: each curve's swept size and expected exponent. */
        json_t *cs = json_array();
        for (size_t k = 0; k < suite.ncurves; k++) {
            json_t *cj = json_object();
            json_object_set_new(cj, "name", json_string(suite.curves[k].name));
            json_object_set_new(cj, "x", json_string(bs_curve_x_name(suite.curves[k].x)));
            json_object_set_new(cj, "expect", json_real(suite.curves[k].expect));
            json_array_append_new(cs, cj);
        }
        json_object_set_new(doc, "curves", cs);
    }
    json_object_set_new(doc, "label", json_string(o.label ? o.label : ""));
    json_object_set_new(doc, "started", json_string(started));
    json_object_set_new(doc, "machine", bp_machine_json(&m));
    json_object_set_new(doc, "config", config_json(&o));
    json_t *backends = json_array();
    json_object_set_new(doc, "backends", backends);

    const bb_config cfg = {o.min_time_s, o.min_reps, o.max_reps, &m, o.timeout_s};
    FILE *progress = isatty(STDERR_FILENO) ? stderr : NULL;
    size_t counts[5] = {0}; /* OK, NOT_SUPPORTED, SKIPPED, INCORRECT, ERROR */
    static const char *const names[5] = {"OK", "NOT_SUPPORTED", "SKIPPED", "INCORRECT", "ERROR"};
    size_t done = 0, total = nsel * (size_t)o.nbe;
    for (int x = 0; x < o.nbe; x++) {
        const bench_backend *b = &o.be[x];
        json_t *bj = backend_json(b);
        json_array_append_new(backends, bj);
        json_t *shapes = json_object_get(bj, "shapes");
        for (size_t i = 0; i < suite.n; i++) {
            const bs_shape *s = &suite.shapes[i];
            for (int d = 0; d < s->ndtypes; d++) {
                const attnref_dtype dt = s->dtypes[d];
                snprintf(id, sizeof id, "%s.%s", s->id, bs_dtype_name(dt));
                if (!selected(&o, id, NULL))
                    continue;
                char prefix[300];
                snprintf(prefix, sizeof prefix, "[%zu/%zu] %s %s", ++done, total, b->name, id);
                json_t *r = bench_one(&o, b, s, dt, &cfg, progress, prefix);
                const char *st = json_string_value(json_object_get(r, "status"));
                for (int k = 0; k < 5; k++)
                    if (st && !strcmp(st, names[k]))
                        counts[k]++;
                print_row(&w, b->name, r);
                json_array_append_new(shapes, r);
            }
        }
    }
    printf("%zu OK, %zu INCORRECT, %zu ERROR, %zu NOT_SUPPORTED, %zu SKIPPED\n", counts[0],
           counts[3], counts[4], counts[1], counts[2]);
    status = counts[3] + counts[4] ? CLI_EXIT_FAIL : 0;
    if (o.out) {
        if (bo_commit(&out, doc) != 0) {
            fprintf(stderr, "attnconf bench: cannot write %s: %s\n", o.out, strerror(errno));
            status = CLI_EXIT_FAIL;
        } else {
            printf("results in %s\n", o.out);
        }
        o.out = NULL; /* committed or removed */
    }

finish:
    if (o.out)
        of_discard(&out);
    json_decref(doc);
    bs_suite_free(&suite);
    if (fflush(stdout) != 0 && status == 0)
        status = CLI_EXIT_FAIL;
    return status;
}
