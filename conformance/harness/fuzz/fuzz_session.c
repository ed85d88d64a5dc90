/* fuzz_session.c — `attnconf fuzz`: differential random testing of a backend's sdpa with shrinking.
 *
 *   attnconf fuzz --backend X [--seed S] [--count N | --seconds T] [--out-dir DIR]
 *                 [--json FILE] [--backend-option K=V]... [--timeout S] [--case-timeout S]
 *                 [--in-process] [--no-meta | --meta-only] [--draw uniform|edges|mixed]
 *                 [--trace FILE] [--save-calls DIR]
 *   attnconf fuzz --backend X --seed-range A..B [--shard K/N] --count N ...
 *   attnconf fuzz --list-edges
 *
 * A campaign over many machines: --seed-range A..B runs --count calls of each seed A to B (both
 * included), and --shard K/N (or GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX) takes slice K of N of
 * those seeds.  Every seed costs the same --count calls, so the balanced slice is every N-th
 * seed: A+K, A+K+N, ... (common/shard.h's greedy gives the same on equal costs); the slices
 * are disjoint and together they are the range, on any machine.  A campaign stops at its first
 * failure, as a single seed does.
 *
 * Call n of seed S is drawn from SplitMix64 seeded with a hash of (S, n), so any call can be
 * replayed alone and `--seed S --count n+1` replays a run up to it.  Every call becomes an
 * in-memory acase (fuzz_gen.c) that runs exactly as a golden case does (run_case): in the
 * forked worker with guarded buffers (or in process for exec: adapters and --in-process),
 * compared by the harness's comparator within the clause 13 bound.  The worker is forked
 * once; each call reaches it through a shared mapping (hf_call_pack; the worker rebuilds the
 * same case), and the output comes back through the same mapping (run.h run_capture_outputs)
 * for the metamorphic checks (fuzz_meta.c).  Failing calls are written as YAML case files
 * (acase_write); ctest checks that `attnconf run` fails them as the fuzzer did.  The first failure is shrunk greedily (fuzz_shrink.c) and written to
 * --out-dir as case files that `attnconf run` reproduces.
 *
 * --draw chooses what a call poses: `uniform` draws every call from the fuzzer's own
 * distributions; `edges` forces one boundary value of cases/EDGES.md into every call (the
 * generators of fuzz_edges.c, round robin over an order the seed shuffles, so every edge the
 * backend's capabilities allow comes once in each round); `mixed` (the default) does that on odd
 * calls and draws even calls uniformly.  --trace FILE writes one line per call (number, case
 * id, the edge posed or "-", the call), --save-calls DIR every call's case file:
 * harness.fuzz.edges_posed checks each traced edge with the table's own predicate.
 *
 * --json FILE writes one JSON object (schema "attnconf-fuzz/1"): backend, backend_version, seed
 * (a decimal string: a uint64; in a campaign the seed that failed, else the last one run), draw,
 * calls, skipped (not supported), metamorphic_checks, seconds, and failure: null, or {call, edge
 * (the id posed, or null), seconds, check ("differential" or a relation name), status, message,
 * original, shrunk, shrink_steps, case_files, replay} — the input of tools/fuzz-survival.  A
 * campaign adds seed_range ("A..B"), shard ({index, total}, only when sharded) and seeds (the
 * seeds run, in order, as decimal strings; the last is the failing one after a failure).
 *
 * Exit status: 0 no failure, 1 a failure found (or the backend could not be loaded), 2 usage,
 * 77 (CLI_EXIT_SKIP, as `attnconf run`) every call NOT_SUPPORTED: nothing was checked.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, strdup, open_memstream, with POSIX 2008 */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "attncase/case.h"
#include "common/clock.h"
#include "backend/backend_load.h"
#include "fuzz.h"
#include "fuzz_run.h"
#include "results/result.h"
#include "common/cli.h"
#include "common/locate.h"
#include "common/outfile.h"
#include "run/run.h"
#include "run/worker.h"
#include "common/shard.h"
#include "common/shell.h"

#define HF_DEFAULT_SECONDS 60.0
#define HF_MAX_OPTIONS 32
#define HF_REPLAY_MAX 16384

/* ---- options --------------------------------------------------------------------------- */

typedef struct hf_opts {
    const char *backend, *out_dir, *json, *timeout, *case_timeout; /* the two as given */
    const char *adapter_stderr;
    double timeout_s, case_timeout_s;
    uint64_t seed;
    const char *seed_given;
    int64_t count;  /* 0 = until --seconds */
    double seconds; /* 0 = until --count */
    int in_process, no_meta, meta_only, list_edges;
    const char *draw, *trace, *save_calls;
    int draw_mode; /* HF_DRAW_* */
    /* --seed-range A..B (has_range), and its slice (shard.total 0: every seed) */
    const char *seed_range;
    int has_range;
    uint64_t first, last;
    const char *shard_given;
    shard_spec shard;
    attnconf_option opt[HF_MAX_OPTIONS];
    char key[HF_MAX_OPTIONS][HB_OPTION_KEY_MAX + 1];
    size_t nopt;
} hf_opts;

enum { HF_DRAW_UNIFORM = 0, HF_DRAW_EDGES, HF_DRAW_MIXED };
static const char *const hf_draw_names[] = {"uniform", "edges", "mixed"};

static void hf_usage(FILE *f)
{
    fprintf(f,
            "usage: attnconf fuzz --backend NAME|PATH.so|exec:CMD [--seed S]\n"
            "                     [--count N | --seconds T] [--out-dir DIR] [--json FILE]\n"
            "                     [--backend-option KEY=VALUE]... [--timeout SECONDS]\n"
            "                     [--case-timeout SECONDS] [--in-process]\n"
            "                     [--no-meta | --meta-only] [--adapter-stderr FILE]\n"
            "                     [--draw uniform|edges|mixed] [--trace FILE]\n"
            "                     [--save-calls DIR]\n"
            "       attnconf fuzz --backend ... --seed-range A..B [--shard K/N] --count N ...\n"
            "       attnconf fuzz --list-edges\n"
            "  random sdpa calls (what the backend's capabilities allow) checked against the\n"
            "  reference within the clause 13 bound, plus metamorphic checks; the first\n"
            "  failure is shrunk and written to DIR (default attnconf-fuzz) as case files\n"
            "  for `attnconf run --cases DIR`.  Default --seconds %g; --seed defaults to a\n"
            "  fresh one (printed).  --meta-only: only the metamorphic checks judge values\n"
            "  (for a backend whose semantics differ from the reference on purpose).\n"
            "  --draw: `uniform` calls from the fuzzer's own distributions, `edges` one\n"
            "  boundary value of cases/EDGES.md forced into every call (each edge the\n"
            "  backend allows once per round, in an order the seed shuffles), `mixed`\n"
            "  (default) edges on odd calls, uniform on even ones.  --list-edges prints the\n"
            "  ids of the edge generators.  --trace FILE: one line per call (number, case\n"
            "  id, edge or -, the call); --save-calls DIR: every call as a case file.\n"
            "  --seed-range A..B runs --count calls of every seed from A to B; --shard K/N\n"
            "  (K from 0, as GTEST_SHARD_INDEX; without it GTEST_TOTAL_SHARDS and\n"
            "  GTEST_SHARD_INDEX when set) runs only seeds A+K, A+K+N, ... so that N\n"
            "  machines share the range.\n"
            "  Exit 0 no failure, 1 a failure, 2 usage, 77 every call not supported\n"
            "  (nothing checked).\n",
            HF_DEFAULT_SECONDS);
}

static int hf_backend_option(const cli_cmd *c, void *ud, const char *v)
{
    hf_opts *o = ud;
    const char *why = hb_option_add(v, o->opt, o->key, &o->nopt, HF_MAX_OPTIONS);
    return why ? cli_usage_error(c, why, v) : 0;
}

/* A decimal uint64 (no sign or space) at *s, advancing it. */
static int hf_u64(const char **s, uint64_t *out)
{
    const char *p = *s;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return -1;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *s = p;
    *out = v;
    return 0;
}

/* "A..B" with A <= B. */
static int hf_parse_range(const char *text, uint64_t *a, uint64_t *b)
{
    const char *p = text;
    if (hf_u64(&p, a) != 0 || strncmp(p, "..", 2) != 0)
        return -1;
    p += 2;
    return hf_u64(&p, b) == 0 && *p == '\0' && *a <= *b ? 0 : -1;
}

/* Returns 0, CLI_HELP or CLI_EXIT_USAGE (message printed). */
static int hf_parse(int argc, char **argv, hf_opts *o)
{
    memset(o, 0, sizeof *o);
    o->out_dir = "attnconf-fuzz";
    o->timeout_s = HB_DEFAULT_TIMEOUT_S;
    o->case_timeout_s = HW_DEFAULT_CASE_TIMEOUT_S;
    const cli_opt opts[] = {
        {.name = "--backend",
         .kind = CLI_STRING,
         .dest = &o->backend,
         .help = "the backend: a plugin name or path, or exec:CMD (an adapter)"},
        {.name = "--seed",
         .kind = CLI_UINT64,
         .dest = &o->seed,
         .raw = &o->seed_given,
         .help = "the run's seed (an unsigned integer; default a fresh one)"},
        {.name = "--count", .kind = CLI_COUNT, .dest = &o->count, .help = "stop after N calls"},
        {.name = "--seconds",
         .kind = CLI_SECONDS,
         .dest = &o->seconds,
         .help = "stop after T seconds (at least one call)"},
        {.name = "--out-dir",
         .kind = CLI_STRING,
         .dest = &o->out_dir,
         .help = "where the failing case files go (default attnconf-fuzz)"},
        {.name = "--json",
         .kind = CLI_STRING,
         .dest = &o->json,
         .help = "the run as JSON (attnconf-fuzz/1), written atomically"},
        {.name = "--backend-option",
         .kind = CLI_CALL,
         .fn = hf_backend_option,
         .help = "KEY=VALUE passed to the backend (repeatable, each KEY once)"},
        {.name = "--timeout",
         .kind = CLI_SECONDS,
         .dest = &o->timeout_s,
         .raw = &o->timeout,
         .help = "seconds an exec: adapter may take per call"},
        {.name = "--case-timeout",
         .kind = CLI_SECONDS,
         .dest = &o->case_timeout_s,
         .raw = &o->case_timeout,
         .help = "seconds a plugin may take per call (in its worker)"},
        {.name = "--in-process",
         .kind = CLI_FLAG,
         .dest = &o->in_process,
         .help = "run a plugin inside the harness, without a worker"},
        {.name = "--no-meta",
         .kind = CLI_FLAG,
         .dest = &o->no_meta,
         .help = "no metamorphic checks"},
        {.name = "--meta-only",
         .kind = CLI_FLAG,
         .dest = &o->meta_only,
         .help = "only the metamorphic checks judge values"},
        {.name = "--draw",
         .kind = CLI_STRING,
         .dest = &o->draw,
         .help = "uniform, edges or mixed (default): what each call poses"},
        {.name = "--trace",
         .kind = CLI_STRING,
         .dest = &o->trace,
         .help = "one line per call: number, case id, the edge posed, the call"},
        {.name = "--save-calls",
         .kind = CLI_STRING,
         .dest = &o->save_calls,
         .help = "write every call's case file into DIR"},
        {.name = "--list-edges",
         .kind = CLI_FLAG,
         .dest = &o->list_edges,
         .help = "print the ids of the edge generators and exit"},
        cli_opt_adapter_stderr(&o->adapter_stderr),
        {.name = "--seed-range",
         .kind = CLI_STRING,
         .dest = &o->seed_range,
         .help = "A..B: every seed from A to B (both included), --count calls each"},
        {.name = "--shard",
         .kind = CLI_STRING,
         .dest = &o->shard_given,
         .help = "K/N: with --seed-range, only slice K (from 0) of N of its seeds"},
    };
    const cli_cmd c = {
        .name = "fuzz", .usage = hf_usage, .opts = opts, .nopts = CLI_COUNT_OF(opts), .ud = o};
    int rc = cli_parse(&c, argc, argv);
    if (rc)
        return rc;
    if (o->list_edges)
        return 0;
    if (!o->backend)
        return cli_usage_error(&c, "--backend is required", NULL);
    o->draw_mode = HF_DRAW_MIXED;
    if (o->draw) {
        int m = 0;
        while (m < 3 && strcmp(o->draw, hf_draw_names[m]) != 0)
            m++;
        if (m == 3)
            return cli_usage_error(&c, "--draw: expected uniform, edges or mixed", o->draw);
        o->draw_mode = m;
    }
    if (o->count && o->seconds)
        return cli_usage_error(&c, "give --count or --seconds, not both", NULL);
    if (o->no_meta && o->meta_only)
        return cli_usage_error(&c, "give --no-meta or --meta-only, not both", NULL);
    if (o->adapter_stderr && !hb_spec_is_exec(o->backend))
        return cli_usage_error(&c, CLI_ADAPTER_STDERR_NOT_EXEC, o->backend);
    if (o->seed_range) {
        if (hf_parse_range(o->seed_range, &o->first, &o->last) != 0)
            return cli_usage_error(&c, "--seed-range: expected A..B, unsigned integers with A <= B",
                                   o->seed_range);
        if (cli_leading_zero(o->seed_range) || cli_leading_zero(strstr(o->seed_range, "..") + 2))
            return cli_usage_error(&c,
                                   "--seed-range: expected A..B without leading zeros (1..3, not "
                                   "01..03)",
                                   o->seed_range);
        /* B - A + 1 seeds must fit the uint64 that counts them (hf_seeds): only the whole
         * range does not, and a run over it could never end anyway. */
        if (o->first == 0 && o->last == UINT64_MAX)
            return cli_usage_error(&c,
                                   "--seed-range: the whole uint64 range is 2^64 seeds, one more "
                                   "than a 64-bit count holds (start at 1 or end at "
                                   "18446744073709551614)",
                                   o->seed_range);
        o->has_range = 1;
        if (o->seed_given)
            return cli_usage_error(&c, "give --seed or --seed-range, not both", NULL);
        if (!o->count)
            return cli_usage_error(&c,
                                   "--seed-range needs --count (calls per seed: a campaign split "
                                   "across machines must do the same work on each)",
                                   NULL);
    }
    if (o->shard_given) {
        const char *why = shard_parse(o->shard_given, &o->shard);
        if (why) {
            char what[256];
            snprintf(what, sizeof what, "--shard: %s", why);
            return cli_usage_error(&c, what, o->shard_given);
        }
        if (!o->has_range)
            return cli_usage_error(&c, "--shard splits a --seed-range: give one", NULL);
    } else if (o->has_range) {
        char why[512];
        if (shard_from_env(&o->shard, why, sizeof why) != 0)
            return cli_usage_error(&c, why, NULL);
    }
    if (!o->count && !o->seconds)
        o->seconds = HF_DEFAULT_SECONDS;
    return cli_adapter_stderr_check("fuzz", o->adapter_stderr);
}

/* The seeds of this machine: with --seed-range, slice K of N of A..B (every N-th seed from
 * A+K); without, the one --seed.  *n the count (0: an empty slice), *step the stride. */
static void hf_seeds(const hf_opts *o, uint64_t *start, uint64_t *step, uint64_t *n)
{
    if (!o->has_range) {
        *start = o->seed;
        *step = 1;
        *n = 1;
        return;
    }
    const uint64_t k = o->shard.total ? o->shard.index : 0,
                   total = o->shard.total ? o->shard.total : 1;
    *start = o->first + k;
    *step = total;
    /* hf_parse refused the one range (0..UINT64_MAX) whose last - first + 1 wraps to 0 */
    *n = k > o->last - o->first ? 0 : (o->last - o->first - k) / total + 1;
}

/* The seed of call n of run seed s: calls are independent and each replayable alone. */
static uint64_t hf_call_seed(uint64_t s, long long n)
{
    uint64_t st = s ^ (0xD1B54A32D192ED03ull * (uint64_t)(n + 1));
    acase_splitmix64_next(&st);
    return acase_splitmix64_next(&st);
}

/* The edges usable under caps, in the order seed s shuffles them (Fisher-Yates on SplitMix64):
 * the run's rounds.  Returns how many (order[] holds hf_nedges slots). */
static int hf_edge_order(uint64_t s, uint64_t caps, int *order)
{
    int n = 0;
    for (int e = 0; e < hf_nedges; e++)
        if (hf_edge_usable(e, caps))
            order[n++] = e;
    uint64_t st = s ^ 0xed6e0da3ull;
    for (int i = n - 1; i > 0; i--) {
        const int j = (int)(acase_splitmix64_next(&st) % (uint64_t)(i + 1));
        const int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    return n;
}

/* The edge call n poses (an index of hf_edges), or -1 (a uniform call). */
static int hf_call_edge(int mode, const int *order, int n_order, long long n)
{
    if (n_order == 0 || mode == HF_DRAW_UNIFORM || (mode == HF_DRAW_MIXED && n % 2 == 0))
        return -1;
    const long long k = mode == HF_DRAW_MIXED ? n / 2 : n;
    return order[k % n_order];
}

static int hf_mkdir(const char *dir)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *s = buf + 1;; s++) {
        if (*s == '/' || !*s) {
            char c = *s;
            *s = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST)
                return -1;
            *s = c;
            if (!c)
                return 0;
        }
    }
}

/* The one JSON document of --json (schema "attnconf-fuzz/1"). */
static int hf_write_json(of_file *out, const hf_ctx *x, const hf_opts *o, json_t *seeds,
                         long long calls, long long skipped, long long metas, double seconds,
                         int failed, long long fail_n, int fail_edge, double fail_s,
                         const hf_fail *f, const char *orig, const char *shrunk, int steps,
                         char files[][PATH_MAX], int nfiles, char replay[][HF_REPLAY_MAX],
                         int nreplay)
{
    json_t *j = json_object();
    json_object_set_new(j, "schema", json_string("attnconf-fuzz/1"));
    json_object_set_new(j, "backend", json_string(x->name));
    json_object_set_new(j, "backend_version", json_string(x->version));
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
    json_object_set_new(j, "seed", json_string(seed));
    json_object_set_new(j, "draw", json_string(hf_draw_names[o->draw_mode]));
    if (o->has_range) {
        json_object_set_new(j, "seed_range", json_string(o->seed_range));
        json_object_set(j, "seeds", seeds); /* borrowed: the caller frees it */
        if (o->shard.total) {
            json_t *sh = json_object();
            json_object_set_new(sh, "index", json_integer(o->shard.index));
            json_object_set_new(sh, "total", json_integer(o->shard.total));
            json_object_set_new(j, "shard", sh);
        }
    }
    json_object_set_new(j, "calls", json_integer(calls));
    json_object_set_new(j, "skipped", json_integer(skipped));
    json_object_set_new(j, "metamorphic_checks", json_integer(metas));
    json_object_set_new(j, "seconds", json_real(seconds));
    if (!failed) {
        json_object_set_new(j, "failure", json_null());
    } else {
        json_t *fj = json_object();
        json_object_set_new(fj, "call", json_integer(fail_n));
        json_object_set_new(fj, "edge",
                            fail_edge >= 0 ? json_string(hf_edges[fail_edge].id) : json_null());
        json_object_set_new(fj, "seconds", json_real(fail_s));
        json_object_set_new(fj, "check",
                            json_string(f->meta < 0 ? "differential" : hf_meta_name(f->meta)));
        json_object_set_new(fj, "status", json_string(hr_status_name(f->status)));
        json_object_set_new(fj, "message", json_string(f->message));
        json_object_set_new(fj, "original", json_string(orig));
        json_object_set_new(fj, "shrunk", json_string(shrunk));
        json_object_set_new(fj, "shrink_steps", json_integer(steps));
        json_t *fa = json_array();
        for (int k = 0; k < nfiles; k++)
            json_array_append_new(fa, json_string(files[k]));
        json_object_set_new(fj, "case_files", fa);
        json_t *ra = json_array();
        for (int k = 0; k < nreplay; k++)
            json_array_append_new(ra, json_string(replay[k]));
        json_object_set_new(fj, "replay", ra);
        json_object_set_new(j, "failure", fj);
    }
    int rc = json_dumpf(j, out->f, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(j);
    if (rc != 0) {
        of_discard(out);
        return -1;
    }
    return of_commit(out);
}

/* Write one differential case file; returns 0 and the path in out. */
static int hf_write_case(const hf_call *call, const char *dir, const char *id, char *out, char *err,
                         size_t errlen)
{
    acase *c = hf_build(call, id, err, errlen);
    if (!c)
        return -1;
    snprintf(out, PATH_MAX, "%s/%s.yaml", dir, id);
    FILE *f = fopen(out, "w");
    int rc = f ? acase_write(c, f, err, errlen) : -1;
    if (!f)
        snprintf(err, errlen, "%s: %s", out, strerror(errno));
    if (f && fclose(f) != 0 && rc == 0) {
        snprintf(err, errlen, "%s: %s", out, strerror(errno));
        rc = -1;
    }
    acase_free(c);
    return rc;
}

int cmd_fuzz(const char *argv0, int argc, char **argv)
{
    hf_opts o;
    int rc = hf_parse(argc, argv, &o);
    if (rc)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    if (o.list_edges) {
        for (int e = 0; e < hf_nedges; e++)
            printf("%s\n", hf_edges[e].id);
        return CLI_EXIT_OK;
    }
    if (!o.seed_given) {
        uint64_t st = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        o.seed = acase_splitmix64_next(&st) % 1000000000ull;
    }
    static of_file jf; /* two paths: not on the stack; zeroed until --json is opened */

    static hf_ctx x;
    memset(&x, 0, sizeof x);
    x.w.fd = -1;
    x.sh = mmap(NULL, sizeof *x.sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (x.sh == MAP_FAILED) {
        fprintf(stderr, "attnconf fuzz: mmap: %s\n", strerror(errno));
        of_discard(&jf);
        return CLI_EXIT_FAIL;
    }
    run_capture_outputs(x.sh->out, HF_OUT_MAX, &x.sh->out_n);
    x.isolated = !o.in_process && !hb_spec_is_exec(o.backend);
    x.meta_only = o.meta_only;
    x.oo = (hb_open_opts){o.opt, o.nopt, o.timeout_s, o.adapter_stderr};
    char a0[PATH_MAX], be[PATH_MAX], dir_abs[PATH_MAX], err[1024];
    if (!strchr(argv0, '/') || !realpath(argv0, a0))
        snprintf(a0, sizeof a0, "%s", argv0);
    if (!hb_spec_is_path(o.backend) || !realpath(o.backend, be))
        snprintf(be, sizeof be, "%s", o.backend);
    if (hf_mkdir(o.out_dir) != 0 || !realpath(o.out_dir, dir_abs)) {
        fprintf(stderr, "attnconf fuzz: --out-dir %s: %s\n", o.out_dir, strerror(errno));
        of_discard(&jf);
        return CLI_EXIT_USAGE;
    }
    /* --json is written at the end, atomically; a path it would refuse must not cost a run.
     * Opened after --out-dir is made: the tests put the file in the directory above it. */
    char why[512];
    if (o.json && of_open(&jf, o.json, why, sizeof why) != 0) {
        fprintf(stderr, "attnconf fuzz: --json %s: %s\n", o.json, why);
        return CLI_EXIT_USAGE;
    }
    x.rn = (run_ctx){.backend = &x.hb,
                     .argv0 = a0,
                     .backend_arg = be,
                     .cases_dir = dir_abs,
                     .options = o.opt,
                     .n_options = o.nopt,
                     .timeout_s = o.timeout ? o.timeout_s : 0,
                     .case_timeout_s = o.case_timeout ? o.case_timeout_s : 0};
    x.wc = (hw_config){o.backend, hl_backend_dir(), &x.oo, &x.rn, o.case_timeout_s,
                       0,         hf_worker_case,   x.sh};
    if (x.isolated) {
        hw_hello hello;
        if (hw_start(&x.w, &x.wc, &hello) != 0 || !hello.ok) {
            fprintf(stderr, "attnconf fuzz: %s\n", hello.err);
            of_discard(&jf);
            return CLI_EXIT_FAIL;
        }
        x.caps = hello.caps;
        snprintf(x.name, sizeof x.name, "%s", hello.name);
        snprintf(x.version, sizeof x.version, "%s", hello.version);
    } else {
        if (hb_load(o.backend, hl_backend_dir(), &x.oo, &x.hb, err, sizeof err) != 0) {
            fprintf(stderr, "attnconf fuzz: %s\n", err);
            of_discard(&jf);
            return CLI_EXIT_FAIL;
        }
        x.caps = x.hb.caps;
        snprintf(x.name, sizeof x.name, "%s", x.hb.be->name);
        snprintf(x.version, sizeof x.version, "%s", x.hb.be->version ? x.hb.be->version : "");
    }

    /* The edges' order for this seed, and the trace / saved calls of --trace, --save-calls. */
    static int order[256];
    _Static_assert(sizeof order / sizeof order[0] >= 128, "room for every edge generator");
    const int n_usable = hf_nedges <= 256 ? hf_edge_order(o.seed, x.caps, order) : 0;
    if (o.draw_mode != HF_DRAW_UNIFORM && n_usable == 0)
        fprintf(stderr, "attnconf fuzz: %s allows no edge generator: every call is uniform\n",
                x.name);
    FILE *trace = NULL;
    char calls_dir[PATH_MAX] = "";
    if (o.trace && !(trace = fopen(o.trace, "w"))) {
        fprintf(stderr, "attnconf fuzz: --trace %s: %s\n", o.trace, strerror(errno));
        of_discard(&jf);
        hw_stop(&x.w);
        hb_unload(&x.hb);
        return CLI_EXIT_USAGE;
    }
    if (o.save_calls && (hf_mkdir(o.save_calls) != 0 || !realpath(o.save_calls, calls_dir))) {
        fprintf(stderr, "attnconf fuzz: --save-calls %s: %s\n", o.save_calls, strerror(errno));
        if (trace)
            fclose(trace);
        of_discard(&jf);
        hw_stop(&x.w);
        hb_unload(&x.hb);
        return CLI_EXIT_USAGE;
    }

    const int tty = isatty(STDERR_FILENO);
    const double t0 = mono_now();
    double last_progress = 0;
    int fail_edge = -1;
    long long n = 0, skipped = 0, metas = 0, fail_n = -1;
    double fail_s = 0;
    hf_fail f;
    memset(&f, 0, sizeof f);
    hf_call failing;
    memset(&failing, 0, sizeof failing);
    int internal = 0;
    /* Seeds one after another (one without --seed-range); each seed's calls from call 0. */
    uint64_t s0, step, nseeds;
    hf_seeds(&o, &s0, &step, &nseeds);
    json_t *seeds_run = o.has_range ? json_array() : NULL;
    long long total = 0; /* calls over every seed */
    if (o.has_range && !seeds_run) {
        fprintf(stderr, "attnconf fuzz: out of memory\n");
        internal = 1;
    }
    /* Only a slice can be empty (hf_parse refuses a range with no countable seeds). */
    const int empty_shard = o.has_range && o.shard.total && nseeds == 0;
    if (empty_shard)
        fprintf(stderr,
                "attnconf fuzz: shard %" PRIu32 "/%" PRIu32 " (from %s) of seeds %s holds no seed "
                "(more shards than seeds)\n",
                o.shard.index, o.shard.total,
                o.shard_given ? "--shard" : SHARD_ENV_INDEX " and " SHARD_ENV_TOTAL, o.seed_range);
    if (o.has_range)
        o.seed = o.first;
    for (uint64_t j = 0; j < nseeds && fail_n < 0 && !internal; j++) {
        o.seed = s0 + j * step;
        char sd[32];
        snprintf(sd, sizeof sd, "%" PRIu64, o.seed);
        if (seeds_run && json_array_append_new(seeds_run, json_string(sd)) != 0) {
            fprintf(stderr, "attnconf fuzz: out of memory\n");
            internal = 1;
            break;
        }
        n = 0;
        /* The edges' order for this seed (each seed of a campaign shuffles its own). */
        const int n_order = hf_nedges <= 256 ? hf_edge_order(o.seed, x.caps, order) : 0;
        for (;; n++) {
            const double now = mono_now();
            /* --seconds stops after at least one call: a run that checked nothing must not
             * pass, however small T is. */
            if ((o.count && n >= o.count) || (o.seconds && n > 0 && now - t0 >= o.seconds))
                break;
            if (tty && now - last_progress > 0.25) {
                fprintf(stderr, "\rattnconf fuzz: seed %llu: %lld calls, %lld skipped, %.0f s ",
                        (unsigned long long)o.seed, n, skipped, now - t0);
                last_progress = now;
            }
            uint64_t st = hf_call_seed(o.seed, n);
            hf_call call;
            const int edge = hf_call_edge(o.draw_mode, order, n_order, n);
            rc = hf_draw_edge(&st, x.caps, edge, &call);
            if (rc == -2) {
                fprintf(stderr, "attnconf fuzz: %s supports none of f32, f16, bf16\n", x.name);
                internal = 1;
                break;
            }
            if (rc != 0) {
                fprintf(stderr, "attnconf fuzz: out of memory\n");
                internal = 1;
                break;
            }
            char id[ACASE_ID_MAX];
            snprintf(id, sizeof id, "fuzz.%llu.%lld", (unsigned long long)o.seed, n);
            if (trace) {
                char text[512];
                hf_call_text(&call, text, sizeof text);
                fprintf(trace, "%lld\t%s\t%s\t%s\n", n, id, edge >= 0 ? hf_edges[edge].id : "-",
                        text);
            }
            if (calls_dir[0]) {
                char path[PATH_MAX];
                if (hf_write_case(&call, calls_dir, id, path, err, sizeof err) != 0) {
                    fprintf(stderr, "%sattnconf fuzz: --save-calls: call %lld: %s\n",
                            tty ? "\n" : "", n, err);
                    hf_call_free(&call);
                    internal = 1;
                    break;
                }
            }
            hr_result r;
            rc = hf_check_call(&x, &call, id, &r, NULL, err, sizeof err);
            if (rc < 0) {
                fprintf(stderr, "%sattnconf fuzz: internal error at call %lld: %s\n",
                        tty ? "\n" : "", n, err);
                hf_call_free(&call);
                internal = 1;
                break;
            }
            if (rc == 1) {
                f.meta = -1;
                f.status = r.status;
                snprintf(f.message, sizeof f.message, "%s: %s", hr_status_name(r.status),
                         r.message);
            } else if (rc == 2) {
                skipped++;
            } else if (!o.no_meta) {
                const int rel = (int)(n % HF_META_COUNT);
                rc = hf_check_meta(&x, rel, acase_splitmix64_next(&st), &call, id, &f, NULL, NULL,
                                   NULL, err, sizeof err);
                metas += rc == 0 || rc == 1;
                if (rc < 0) {
                    fprintf(stderr,
                            "%sattnconf fuzz: internal error in a metamorphic check at call "
                            "%lld: %s\n",
                            tty ? "\n" : "", n, err);
                    hf_call_free(&call);
                    internal = 1;
                    break;
                }
                if (rc != 1)
                    rc = 0;
            }
            if (rc == 1) {
                fail_n = n;
                fail_edge = edge;
                fail_s = mono_now() - t0;
                failing = call;
                break;
            }
            hf_call_free(&call);
        }
        total += fail_n >= 0 ? fail_n + 1 : n;
    }
    if (tty)
        fprintf(stderr, "\r%*s\r", 70, "");
    if (trace && fclose(trace) != 0) {
        fprintf(stderr, "attnconf fuzz: --trace %s: %s\n", o.trace, strerror(errno));
        internal = 1;
    }
    const double elapsed = mono_now() - t0;
    const long long calls = total;
    /* Calls were made but the backend served none: a pass would claim a check never made
     * (metamorphic checks run only on a served call, so none ran either). */
    const int unchecked = fail_n < 0 && !internal && calls > 0 && skipped == calls;

    char orig_text[512] = "", min_text[512] = "";
    char files[4][PATH_MAX];
    char replay[3][HF_REPLAY_MAX];
    int nfiles = 0, nreplay = 0, steps = 0, attempts = 0;
    if (fail_n >= 0) {
        hf_call_text(&failing, orig_text, sizeof orig_text);
        printf("attnconf fuzz: %s %s, seed %llu: call %lld failed after %.1f s (%s check)\n"
               "  %s\n  call: %s\n",
               x.name, x.version, (unsigned long long)o.seed, fail_n, fail_s,
               f.meta < 0 ? "differential" : hf_meta_name(f.meta), f.message, orig_text);
        if (fail_edge >= 0)
            printf("  edge posed: %s (cases/EDGES.md)\n", hf_edges[fail_edge].id);
        fflush(stdout);
        char id[ACASE_ID_MAX];
        snprintf(id, sizeof id, "fuzz.%llu.%lld", (unsigned long long)o.seed, fail_n);
        hf_call best;
        if (hf_call_copy(&best, &failing) != 0) {
            fprintf(stderr, "attnconf fuzz: out of memory\n");
            of_discard(&jf);
            return CLI_EXIT_FAIL;
        }
        hf_shrink(&x, &best, id, &f, &steps, &attempts);
        hf_call_text(&best, min_text, sizeof min_text);
        printf("  shrunk in %d steps (%d tried): %s\n", steps, attempts, min_text);
        /* Written: the shrunk call and the original (differential), or the shrunk pair
         * (metamorphic). */
        char mid[ACASE_ID_MAX + 8], oid[ACASE_ID_MAX + 8];
        snprintf(mid, sizeof mid, "%.100s.min", id);
        snprintf(oid, sizeof oid, "%.100s.orig", id);
        int wrc = 0;
        if (f.meta < 0) {
            wrc = hf_write_case(&best, dir_abs, mid, files[nfiles], err, sizeof err);
            nfiles += wrc == 0;
            if (wrc == 0) {
                wrc = hf_write_case(&failing, dir_abs, oid, files[nfiles], err, sizeof err);
                nfiles += wrc == 0;
            }
        } else {
            hf_fail g = f;
            wrc = hf_check_meta(&x, f.meta, f.pick, &best, mid, &g, dir_abs, files, &nfiles, err,
                                sizeof err) == 1
                      ? 0
                      : -1;
            if (wrc != 0 && !err[0])
                snprintf(err, sizeof err, "the shrunk pair no longer fails when written");
        }
        if (wrc != 0)
            fprintf(stderr, "attnconf fuzz: cannot write the failing case: %s\n", err);
        for (int k = 0; k < nfiles; k++)
            printf("  wrote %s\n", files[k]);
        char qa0[PATH_MAX + 64], qbe[PATH_MAX + 64], qdir[PATH_MAX + 64];
        shell_quote(a0, qa0, sizeof qa0);
        shell_quote(be, qbe, sizeof qbe);
        shell_quote(dir_abs, qdir, sizeof qdir);
        char opts[1024] = "";
        for (size_t k = 0; k < o.nopt; k++) {
            char kv[600], q[700];
            snprintf(kv, sizeof kv, "%s=%s", o.opt[k].key, o.opt[k].value);
            shell_quote(kv, q, sizeof q);
            size_t l = strlen(opts);
            snprintf(opts + l, sizeof opts - l, " --backend-option %s", q);
        }
        int w =
            snprintf(replay[nreplay], sizeof replay[0],
                     "%s run --backend %s%s --cases %s --filter '%s.*'", qa0, qbe, opts, qdir, id);
        nreplay += w > 0 && (size_t)w < sizeof replay[0];
        w = snprintf(replay[nreplay], sizeof replay[0],
                     "%s fuzz --backend %s%s --seed %llu "
                     "--count %lld --draw %s%s",
                     qa0, qbe, opts, (unsigned long long)o.seed, fail_n + 1,
                     hf_draw_names[o.draw_mode],
                     o.no_meta     ? " --no-meta"
                     : o.meta_only ? " --meta-only"
                                   : "");
        nreplay += w > 0 && (size_t)w < sizeof replay[0];
        printf("replay:\n");
        for (int k = 0; k < nreplay; k++)
            printf("  %s\n", replay[k]);
        hf_call_free(&best);
    } else if (!internal) {
        char which[160];
        if (o.has_range && o.shard.total)
            snprintf(which, sizeof which,
                     "seeds %s, shard %" PRIu32 "/%" PRIu32 " (%" PRIu64 " seeds)", o.seed_range,
                     o.shard.index, o.shard.total, nseeds);
        else if (o.has_range)
            snprintf(which, sizeof which, "seeds %s (%" PRIu64 " seeds)", o.seed_range, nseeds);
        else
            snprintf(which, sizeof which, "seed %llu", (unsigned long long)o.seed);
        printf("attnconf fuzz: %s %s, %s: %lld calls (%lld not supported, %lld metamorphic "
               "checks) in %.1f s, %s\n",
               x.name, x.version, which, total, skipped, metas, elapsed,
               /* exit 0 all the same, as gtest for an empty shard: the other shards ran the
                * seeds, and a CI matrix wider than the range must not fail on it */
               empty_shard ? "nothing checked: this shard holds no seed"
               : unchecked ? "nothing checked: every call was not supported"
                           : "no failure");
    }
    if (o.json && hf_write_json(&jf, &x, &o, seeds_run, calls, skipped, metas, elapsed, fail_n >= 0,
                                fail_n, fail_edge, fail_s, &f, orig_text, min_text, steps, files,
                                nfiles, replay, nreplay) != 0) {
        fprintf(stderr, "attnconf fuzz: cannot write %s\n", o.json);
        internal = 1;
    }
    json_decref(seeds_run);
    hf_call_free(&failing);
    hw_stop(&x.w);
    hb_unload(&x.hb);
    munmap(x.sh, sizeof *x.sh);
    return fail_n >= 0 || internal ? CLI_EXIT_FAIL : unchecked ? CLI_EXIT_SKIP : CLI_EXIT_OK;
}
