/* cmd_run.c — `attnconf run`, `backend-info` and `list`: run cases on a backend, describe it,
 * list cases.
 *
 * Exit status (the automake/CTest convention): 0 all selected cases passed or were correctly
 * rejected (some may be NOT_SUPPORTED or UNEXPRESSIBLE); 1 a FAIL, INCORRECT_DTYPE, ERROR, CRASH or TIMEOUT, an
 * unloadable backend or an unwritable output; 2 a usage error or a filter that selects nothing;
 * 3 a case file could not be read (CASE_ERROR: the suite's problem) and the backend failed
 * nothing; 77 every selected case was NOT_SUPPORTED (CTest SKIP_RETURN_CODE).  With --expect
 * FILE the run is judged against the file instead (expect.h): 0 every status is the recorded
 * one, 1 one differs or an entry is stale, 3 as above; 2 as above, or a broken file or one for
 * another backend.
 *
 * Plugins run in a forked worker (worker.h) unless --in-process; exec: adapters run in their
 * own processes already, so their bridge stays in the harness.  --out is written to a
 * temporary file next to FILE and renamed over it only when complete; meanwhile the results so
 * far are saved after every case to FILE.partial.json (JSON, "complete": false, same atomic
 * write plus fsync), which --resume continues from and a completed run removes.
 */
#define _XOPEN_SOURCE 700 /* realpath, fnmatch, mkstemp */

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attncase/case.h"
#include "backend/backend_load.h"
#include "common/cli.h"
#include "common/locate.h"
#include "common/outfile.h"
#include "common/shard.h"
#include "results/expect.h"
#include "results/output.h"
#include "results/partial.h"
#include "results/result.h"
#include "run/case_cost.h"
#include "run/cmd.h"
#include "run/run.h"
#include "run/worker.h"

#include <sys/stat.h>
#include <unistd.h>

/* The build tree's directories for the binary in it, else those of its installation. */
#define ATTNCONF_BACKEND_DIR hl_backend_dir()
#define ATTNCONF_DEFAULT_CASES hl_cases_dir()

/* The options of run, backend-info and list, and their exit status (also the second half of
 * `attnconf --help`). */
void run_usage_options(FILE *f)
{
    fprintf(
        f,
        "  --backend  a backend name (NAME.so in $ATTNCONF_BACKEND_PATH, then %s)\n"
        "             or a path to a plugin (contains '/' or ends in .so)\n"
        "             or exec:CMD, an adapter process run by /bin/sh -c CMD that speaks\n"
        "             the exec protocol (conformance/include/attnconf/PROTOCOL.md)\n"
        "  --backend-option  KEY=VALUE passed to the backend (repeatable, each KEY once);\n"
        "             `backend-info` lists the keys a backend accepts\n"
        "  --timeout  seconds an exec: adapter may take per call (default %g)\n"
        "  --adapter-stderr  FILE\n"
        "             %s\n"
        "             (exec: only; without it only the last line is kept, quoted when the\n"
        "             adapter dies, hangs or breaks the protocol)\n"
        "  --case-timeout  seconds a plugin may take per case (default %g): each case runs\n"
        "             in a worker process, and a worker that crashes (CRASH) or misses the\n"
        "             deadline (TIMEOUT, killed) costs only that case; exec: adapters are\n"
        "             separate processes already and keep --timeout; loading a plugin\n"
        "             (run, backend-info) is bounded by it too\n"
        "  --memory-limit  MiB of address space for the worker, 64 or more (RLIMIT_AS;\n"
        "             default none; not with --in-process)\n"
        "  --restart  never|family|case: a fresh exec: adapter (`close`, then a new\n"
        "             process and hello) before each case family or each case, for a\n"
        "             library whose state (JIT and kernel caches) could make a result\n"
        "             depend on the cases before it (default never: one adapter)\n"
        "  --in-process  run a plugin inside the harness, without a worker (for a\n"
        "             debugger): a crash in the backend then ends the run\n"
        "  --cases    directory of case files (default %s)\n"
        "  --filter   shell glob matched against case ids, e.g. 'sdpa.causal.*'; repeatable:\n"
        "             a case runs when it matches any of them\n"
        "  --exclude  shell glob of case ids not to run, e.g. '*.bf16' (repeatable; wins\n"
        "             over --filter)\n"
        "  --format   output format (default text)\n"
        "  --out      write results to FILE and print a summary line on stdout; FILE is\n"
        "             replaced only when the run completes, and meanwhile the results so\n"
        "             far are saved after every case to FILE.partial.json (JSON,\n"
        "             \"complete\": false; removed when the run completes); a FILE that\n"
        "             exists and is not a regular file (a link, a FIFO, a device) is refused\n"
        "  --resume   with --out FILE: continue an interrupted run from FILE.partial.json\n"
        "             (same backend, version, --backend-option, --cases and --filter, else\n"
        "             exit 2): its results are kept and only the other cases run\n"
        "  --expect   an expected-results file (conformance/expected/NAME.yaml): the run\n"
        "             passes when every status is the recorded one, divergences included\n"
        "  --shard    K/N: run only slice K of N (K from 0 to N-1, as gtest's\n"
        "             GTEST_SHARD_INDEX) of the selected cases; the N slices are disjoint,\n"
        "             together they are the selection, and they are balanced by each case's\n"
        "             estimated work; without it `run` takes GTEST_TOTAL_SHARDS and\n"
        "             GTEST_SHARD_INDEX from the environment (and creates\n"
        "             GTEST_SHARD_STATUS_FILE when set); `list --shard` shows a slice\n"
        "\n"
        "exit status: 0 ok (NOT_SUPPORTED and UNEXPRESSIBLE cases are neither passed\n"
        "             nor failed), 1 failures, errors, crashes or timeouts, 2 usage or nothing\n"
        "             selected, 3 a case file could not be read (and nothing else failed),\n"
        "             77 every selected case was NOT_SUPPORTED; with --expect: 0 every\n"
        "             status as recorded, 1 a status differs or an entry is stale (an\n"
        "             UNEXPRESSIBLE result conforms only where the file lists its case)\n",
        ATTNCONF_BACKEND_DIR[0] ? ATTNCONF_BACKEND_DIR : "(none)", HB_DEFAULT_TIMEOUT_S,
        CLI_ADAPTER_STDERR_HELP, HW_DEFAULT_CASE_TIMEOUT_S, ATTNCONF_DEFAULT_CASES);
}

static void usage(FILE *f)
{
    fputs("usage: " RUN_USAGE_RUN "       " RUN_USAGE_BACKEND_INFO "       " RUN_USAGE_LIST "\n",
          f);
    run_usage_options(f);
}

/* At most this many --backend-option; more is a usage error (no backend needs that many). */
#define MAX_BACKEND_OPTIONS 32

/* At most this many --filter and as many --exclude. */
#define MAX_GLOBS 32

/* Options shared by the subcommands; NULL (0) when not given. */
typedef struct opts {
    const char *backend, *cases, *format, *out, *expect;
    const char *adapter_stderr; /* --adapter-stderr FILE or "-" */
    const char *restart;        /* --restart never|family|case (run_restart) */
    /* Case selection: a case runs when its id matches any --filter (or there is none) and no
     * --exclude.  `filter` is the selection as one string for messages, the results' "filter"
     * field and --resume: the filters, then each exclude as !GLOB, space-separated (case ids
     * hold no spaces); NULL when there is neither. */
    const char *filters[MAX_GLOBS], *excludes[MAX_GLOBS];
    size_t n_filters, n_excludes;
    const char *filter;
    char filter_buf[sizeof(((hr_run *)0)->filter)]; /* what a results file can record */
    /* --timeout and --case-timeout: given or not (the re-run commands repeat them), and the
     * numbers */
    const char *timeout, *case_timeout;
    double timeout_s, case_timeout_s;
    uint64_t memory_limit_mib; /* 0: none */
    int in_process, resume;
    const char *shard;                               /* --shard K/N as given; NULL: absent */
    const char *backend_option[MAX_BACKEND_OPTIONS]; /* repeatable: every KEY=VALUE given */
    size_t n_backend_option;
} opts;

/* Parse a subcommand's options: `allowed` names the rows of the shared table it takes.
 * Returns 0, CLI_HELP, or CLI_EXIT_USAGE (message printed). */
static int parse_opts(const char *cmd, int argc, char **argv, const char *const *allowed, opts *o)
{
    memset(o, 0, sizeof *o);
    o->timeout_s = HB_DEFAULT_TIMEOUT_S;
    o->case_timeout_s = HW_DEFAULT_CASE_TIMEOUT_S;
    cli_opt adapter_stderr = cli_opt_adapter_stderr(&o->adapter_stderr);
    adapter_stderr.help = NULL; /* run_usage_options lists it with the others */
    const cli_opt all[] = {
        {.name = "--backend", .kind = CLI_STRING, .dest = &o->backend},
        adapter_stderr,
        {.name = "--cases", .kind = CLI_STRING, .dest = &o->cases},
        {.name = "--filter",
         .kind = CLI_STRINGS,
         .dest = o->filters,
         .max = MAX_GLOBS,
         .count = &o->n_filters},
        {.name = "--exclude",
         .kind = CLI_STRINGS,
         .dest = o->excludes,
         .max = MAX_GLOBS,
         .count = &o->n_excludes},
        {.name = "--format", .kind = CLI_STRING, .dest = &o->format},
        {.name = "--out", .kind = CLI_STRING, .dest = &o->out},
        {.name = "--timeout", .kind = CLI_SECONDS, .dest = &o->timeout_s, .raw = &o->timeout},
        {.name = "--backend-option",
         .kind = CLI_STRINGS,
         .dest = o->backend_option,
         .max = MAX_BACKEND_OPTIONS,
         .count = &o->n_backend_option},
        {.name = "--expect", .kind = CLI_STRING, .dest = &o->expect},
        {.name = "--case-timeout",
         .kind = CLI_SECONDS,
         .dest = &o->case_timeout_s,
         .raw = &o->case_timeout},
        {.name = "--memory-limit", .kind = CLI_MIB, .dest = &o->memory_limit_mib, .lo = 64},
        {.name = "--in-process", .kind = CLI_FLAG, .dest = &o->in_process},
        {.name = "--resume", .kind = CLI_FLAG, .dest = &o->resume},
        {.name = "--restart", .kind = CLI_STRING, .dest = &o->restart},
        {.name = "--shard", .kind = CLI_STRING, .dest = &o->shard},
    };
    cli_opt take[CLI_COUNT_OF(all)];
    size_t n = 0;
    for (size_t k = 0; k < CLI_COUNT_OF(all); k++)
        for (const char *const *a = allowed; *a; a++)
            if (!strcmp(*a, all[k].name))
                take[n++] = all[k];
    const cli_cmd c = {.name = cmd, .usage = usage, .opts = take, .nopts = n};
    int rc = cli_parse(&c, argc, argv);
    if (rc)
        return rc;
    if (o->in_process && o->memory_limit_mib)
        return cli_usage_error(&c, "--memory-limit applies to the worker; not with --in-process",
                               NULL);
    if (o->adapter_stderr && o->backend && !hb_spec_is_exec(o->backend))
        return cli_usage_error(&c, CLI_ADAPTER_STDERR_NOT_EXEC, o->backend);
    if (o->restart && strcmp(o->restart, "never") && strcmp(o->restart, "family") &&
        strcmp(o->restart, "case"))
        return cli_usage_error(&c, "--restart: expected never, family or case", o->restart);
    if (o->restart && strcmp(o->restart, "never") && o->backend && !hb_spec_is_exec(o->backend))
        return cli_usage_error(&c,
                               "--restart applies to exec: adapters (a plugin's state lives "
                               "in its worker)",
                               o->backend);
    if (o->n_filters || o->n_excludes) {
        size_t used = 0;
        for (size_t k = 0; k < o->n_filters + o->n_excludes; k++) {
            int ex = k >= o->n_filters;
            const char *g = ex ? o->excludes[k - o->n_filters] : o->filters[k];
            if (strchr(g, ' '))
                return cli_usage_error(&c, "a case id glob has no spaces", g);
            int w = snprintf(o->filter_buf + used, sizeof o->filter_buf - used, "%s%s%s",
                             used ? " " : "", ex ? "!" : "", g);
            if (w < 0 || (size_t)w >= sizeof o->filter_buf - used)
                return cli_usage_error(&c, "--filter/--exclude: too long together", g);
            used += (size_t)w;
        }
        o->filter = o->filter_buf;
    }
    return cli_adapter_stderr_check(cmd, o->adapter_stderr);
}

/* A usage error found after parsing (cli_usage_error with this file's usage). */
static int usage_error(const char *cmd, const char *what, const char *arg)
{
    const cli_cmd c = {.name = cmd, .usage = usage};
    return cli_usage_error(&c, what, arg);
}

/* Whether a case id is selected by the --filter and --exclude globs (fnmatch, no flags). */
static int selected(const opts *o, const char *id)
{
    int in = o->n_filters == 0;
    for (size_t k = 0; k < o->n_filters && !in; k++)
        in = fnmatch(o->filters[k], id, 0) == 0;
    for (size_t k = 0; k < o->n_excludes && in; k++)
        in = fnmatch(o->excludes[k], id, 0) != 0;
    return in;
}

/* The --backend-option words split into KEY and VALUE. */
typedef struct backend_opts {
    attnconf_option opt[MAX_BACKEND_OPTIONS]; /* values point into argv */
    char key[MAX_BACKEND_OPTIONS][HB_OPTION_KEY_MAX + 1];
    size_t n;
    char summary[512]; /* "k=v,k=v", for the results header */
} backend_opts;

/* Split and check --backend-option.  Returns 0 or CLI_EXIT_USAGE (message printed). */
static int parse_backend_opts(const char *cmd, const opts *o, backend_opts *b)
{
    memset(b, 0, sizeof *b);
    size_t used = 0;
    for (size_t i = 0; i < o->n_backend_option; i++) {
        const char *kv = o->backend_option[i];
        const char *why = hb_option_add(kv, b->opt, b->key, &b->n, MAX_BACKEND_OPTIONS);
        if (why)
            return usage_error(cmd, why, kv);
        /* Recorded whole in the results, or refused: a cut summary would name other options. */
        int w = snprintf(b->summary + used, sizeof b->summary - used, "%s%s", i ? "," : "", kv);
        if (w < 0 || (size_t)w >= sizeof b->summary - used)
            return usage_error(cmd,
                               "--backend-option: the options add up to more than 511 "
                               "characters",
                               kv);
        used += (size_t)w;
    }
    return 0;
}

/* ---- incremental --out: FILE.partial.json ------------------------------------------------ */

/* Save the results done so far (done[i], in run order) as the sidecar: a JSON results
 * document with "complete": false, written to a temporary file beside it, fsynced and renamed
 * over it, so a kill at any moment leaves the previous or the new version, never a torn one.
 * When the done cases are a prefix the results are written in place; otherwise (a resumed run
 * whose kept cases are not all first) they are gathered into view.  Returns 0 or -1. */
static int save_partial(const hr_run *run, const unsigned char *done, size_t n, hr_result *view,
                        const char *side)
{
    hr_run p = *run;
    size_t prefix = 0, ndone = 0;
    while (prefix < n && done[prefix])
        prefix++;
    for (size_t i = 0; i < n; i++)
        ndone += done[i] != 0;
    p.partial = 1;
    p.count = ndone;
    if (prefix != ndone) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (done[i])
                view[k++] = run->results[i];
        p.results = view;
    }
    static of_file t; /* two paths: not on the stack */
    char why[512];
    if (of_open(&t, side, why, sizeof why) != 0) {
        errno = EEXIST; /* the callers' warning names the sidecar; why is in FILE's check */
        return -1;
    }
    if (hr_write(&p, HR_FMT_JSON, t.f) != 0) {
        int e = errno;
        of_discard(&t);
        errno = e ? e : EIO;
        return -1;
    }
    return of_commit(&t);
}

/* Same path, or both resolve to the same directory. */
static int same_dir(const char *a, const char *b)
{
    if (strcmp(a, b) == 0)
        return 1;
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

/* ---- loading cases --------------------------------------------------------------------- */

/* One case file: either loaded (c) or failed (err). */
typedef struct entry {
    char id[ACASE_ID_MAX]; /* the case id, or the file's pseudo-id when it failed to load */
    char *path;
    acase *c;
    char *err;
} entry;

static int entry_cmp(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    int d = strcmp(x->id, y->id);
    return d ? d : strcmp(x->path, y->path);
}

/* The id a file that fails to load is reported under: its file name without ".yaml" (casegen
 * names each file <family>/<id>.yaml, so a filter on the family still selects it). */
static void pseudo_id(const char *path, char *out, size_t n)
{
    const char *base = strrchr(path, '/');
    snprintf(out, n, "%s", base ? base + 1 : path);
    size_t l = strlen(out);
    if (l > 5 && strcmp(out + l - 5, ".yaml") == 0)
        out[l - 5] = '\0';
}

/* hw_config.get_case: the loaded case at index i (in the worker's copy of the entries). */
static const acase *entry_case(void *ud, size_t i)
{
    return ((const entry *)ud)[i].c;
}

static void entry_free(entry *e)
{
    acase_free(e->c);
    free(e->path);
    free(e->err);
}

static void entries_free(entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        entry_free(&e[i]);
    free(e);
}

/* ---- --shard: this machine's slice of the selection ----------------------------------------- */

/* The shard of a command: --shard K/N, else (env set) GTEST_TOTAL_SHARDS / GTEST_SHARD_INDEX.
 * Returns 0 (sp->total 0: not sharded) or CLI_EXIT_USAGE (message printed). */
static int shard_resolve(const char *cmd, const opts *o, int env, shard_spec *sp)
{
    memset(sp, 0, sizeof *sp);
    if (o->shard) {
        const char *why = shard_parse(o->shard, sp);
        if (!why)
            return 0;
        char what[256];
        snprintf(what, sizeof what, "--shard: %s", why);
        return usage_error(cmd, what, o->shard);
    }
    char why[512];
    if (env && shard_from_env(sp, why, sizeof why) != 0)
        return usage_error(cmd, why, NULL);
    return 0;
}

/* What slicing found: the whole selection's size and digest, the slice's cost and the bound
 * a balanced slice keeps (the average plus the largest case). */
typedef struct shard_info {
    uint64_t selected, digest;
    uint64_t cost, total_cost, largest;
    size_t kept;
} shard_info;

/* Keep only slice sp of the selected entries e[0..*n) (sorted by id), freeing the others.
 * Entries with the same id (a duplicate case id: CASE_ERROR later) go together, so the slices
 * are a partition of the ids.  Each case's cost is run_case_cost; a file that did not load
 * costs RUN_CASE_COST_BASE.  Returns 0 or -1 (out of memory, message printed). */
static int shard_entries(entry *e, size_t *n, shard_spec sp, shard_info *si)
{
    memset(si, 0, sizeof *si);
    const size_t m = *n;
    uint64_t h = SHARD_DIGEST_INIT;
    for (size_t i = 0; i < m; i++)
        h = shard_digest_add(h, e[i].id);
    si->selected = m;
    si->digest = h;
    uint64_t *cost = calloc(m ? m : 1, sizeof *cost);
    const char **key = calloc(m ? m : 1, sizeof *key);
    uint32_t *of = calloc(m ? m : 1, sizeof *of);
    size_t *group = calloc(m ? m : 1, sizeof *group); /* entry i -> its item */
    if (!cost || !key || !of || !group) {
        free(cost), free(key), free(of), free(group);
        fprintf(stderr, "attnconf: out of memory\n");
        return -1;
    }
    size_t items = 0;
    for (size_t i = 0; i < m; i++) {
        if (i == 0 || strcmp(e[i].id, e[i - 1].id) != 0)
            key[items++] = e[i].id;
        group[i] = items - 1;
        uint64_t c = e[i].c ? run_case_cost(e[i].c) : RUN_CASE_COST_BASE;
        cost[items - 1] = shard_cost_add(cost[items - 1], c);
    }
    if (shard_assign(cost, key, items, sp.total, of, NULL) != 0) {
        free(cost), free(key), free(of), free(group);
        fprintf(stderr, "attnconf: out of memory\n");
        return -1;
    }
    /* The slice's cost from what it was given (not from the greedy's own tally), so that
     * `list --shard` shows the balance a slice really has. */
    for (size_t g = 0; g < items; g++) {
        si->total_cost = shard_cost_add(si->total_cost, cost[g]);
        si->largest = cost[g] > si->largest ? cost[g] : si->largest;
        if (of[g] == sp.index)
            si->cost = shard_cost_add(si->cost, cost[g]);
    }
    size_t k = 0;
    for (size_t i = 0; i < m; i++) {
        if (of[group[i]] == sp.index)
            e[k++] = e[i];
        else
            entry_free(&e[i]);
    }
    si->kept = k;
    *n = k;
    free(cost), free(key), free(of), free(group);
    return 0;
}

/* Load every case file under dir whose id the --filter/--exclude globs select (all when there
 * are none), sorted by id.  A file that fails to load becomes an entry with err set (kept if its
 * pseudo-id is selected; otherwise only warned about on stderr, unless its header already named
 * an unselected id, so it was never read in full).  Returns 0 with *out / *n, or
 * -1 with a message printed (the directory could not be read). */
static int load_cases(const char *dir, const opts *o, entry **out, size_t *n)
{
    char err[1024];
    char **paths = NULL;
    int np = acase_list_dir(dir, &paths, err, sizeof err);
    if (np < 0) {
        fprintf(stderr, "attnconf: --cases %s: %s\n", dir, err);
        return -1;
    }
    entry *e = calloc((size_t)np + 1, sizeof *e);
    if (!e) {
        fprintf(stderr, "attnconf: out of memory\n");
        for (int i = 0; i < np; i++)
            free(paths[i]);
        free(paths);
        return -1;
    }
    size_t k = 0;
    for (int i = 0; i < np; i++) {
        acase *c = NULL;
        err[0] = '\0';
        /* A file neither its header's id nor its name selects is not read in full: a filtered
         * run costs what it selects, not the whole directory. */
        char hid[ACASE_ID_MAX], pid[ACASE_ID_MAX];
        pseudo_id(paths[i], pid, sizeof pid);
        if (!selected(o, pid) && acase_peek_id(paths[i], hid, sizeof hid) == 0 &&
            !selected(o, hid)) { /* the name first: no peek when it (or no filter) selects */
            free(paths[i]);
            continue;
        }
        if (acase_load_file(paths[i], &c, err, sizeof err) == 0) {
            if (!selected(o, c->id)) {
                acase_free(c);
                free(paths[i]);
                continue;
            }
            snprintf(e[k].id, sizeof e[k].id, "%s", c->id);
            e[k].c = c;
        } else {
            if (!selected(o, pid)) {
                fprintf(stderr, "attnconf: warning: %s\n", err[0] ? err : paths[i]);
                free(paths[i]);
                continue;
            }
            snprintf(e[k].id, sizeof e[k].id, "%s", pid);
            e[k].err = strdup(err[0] ? err : "cannot load case file");
        }
        e[k].path = paths[i];
        k++;
    }
    free(paths);
    qsort(e, k, sizeof *e, entry_cmp);
    *out = e;
    *n = k;
    return 0;
}

/* ---- subcommands ----------------------------------------------------------------------- */

static const char *op_name(acase_op op)
{
    return op == ACASE_OP_SDPA    ? "sdpa"
           : op == ACASE_OP_MASK  ? "mask"
           : op == ACASE_OP_CACHE ? "cache"
           : op == ACASE_OP_PAGED ? "paged"
                                  : "?";
}

int cmd_list(const char *argv0, int argc, char **argv)
{
    (void)argv0;
    static const char *const allowed[] = {"--cases", "--filter", "--exclude", "--shard", NULL};
    opts o;
    int rc = parse_opts("list", argc, argv, allowed, &o);
    if (rc)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    shard_spec sp; /* --shard only: a dry run of `run --shard`, never the environment's */
    if ((rc = shard_resolve("list", &o, 0, &sp)) != 0)
        return rc;
    const char *dir = o.cases ? o.cases : ATTNCONF_DEFAULT_CASES;
    entry *e;
    size_t n;
    if (load_cases(dir, &o, &e, &n) != 0)
        return CLI_EXIT_USAGE;
    if (n == 0) {
        fprintf(stderr, "attnconf: no case in %s matches '%s'\n", dir, o.filter ? o.filter : "*");
        entries_free(e, n);
        return CLI_EXIT_USAGE;
    }
    if (sp.total) {
        shard_info si;
        if (shard_entries(e, &n, sp, &si) != 0) {
            entries_free(e, n);
            return CLI_EXIT_FAIL;
        }
        /* The slice's size and estimated work beside the whole selection's: a slice is
         * balanced when its cost is at most the average plus the largest case's. */
        fprintf(stderr,
                "attnconf list: shard %" PRIu32 "/%" PRIu32 ": %zu of %" PRIu64
                " cases, cost %" PRIu64 " of %" PRIu64 " (largest case %" PRIu64 ")\n",
                sp.index, sp.total, n, si.selected, si.cost, si.total_cost, si.largest);
    }
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].err) {
            fprintf(stderr, "attnconf: %s\n", e[i].err);
            bad = 1;
            continue;
        }
        if (i > 0 && strcmp(e[i].id, e[i - 1].id) == 0) {
            fprintf(stderr, "attnconf: %s: duplicate case id '%s' (also in %s)\n", e[i].path,
                    e[i].id, e[i - 1].path);
            bad = 1;
            continue;
        }
        char caps[1024];
        acase_caps_text(e[i].c->requires, ",", caps, sizeof caps);
        printf("%s\t%s\t%s\n", e[i].id, op_name(e[i].c->op), caps[0] ? caps : "-");
    }
    entries_free(e, n);
    /* A case file that cannot be read is the suite's problem: exit 3, as `run` gives. */
    return bad ? CLI_EXIT_CASE_ERROR : 0;
}

/* argv[0] as a re-run command should spell it: made absolute when it contained a '/' (a
 * relative path breaks as soon as the user changes directory); a bare name found on PATH is
 * kept. */
static void absolute_argv0(const char *argv0, char *out, size_t n)
{
    char buf[PATH_MAX];
    if (!strchr(argv0, '/') || !realpath(argv0, buf))
        snprintf(out, n, "%s", argv0);
    else
        snprintf(out, n, "%s", buf);
}

/* A path argument made absolute for a re-run command (kept as given if it cannot be
 * resolved). */
static void absolute_path(const char *p, char *out, size_t n)
{
    char buf[PATH_MAX];
    snprintf(out, n, "%s", realpath(p, buf) ? buf : p);
}

/* ---- `attnconf run`, phase by phase ---------------------------------------------------------
 * cmd_run reads as its table of contents: check the arguments, read what must be read before
 * anything runs (the sidecar for --resume, the expected-results file), open --out, reach the
 * backend, load the cases, start the worker, run every case, judge, write.  Everything a phase
 * makes lives in one session and is freed once, by session_free, on every path. */

typedef struct session {
    const char *argv0;
    opts o;
    backend_opts bo;
    hr_format fmt;
    const char *dir;     /* --cases, or the default */
    char side[PATH_MAX]; /* FILE.partial.json of --out FILE; "" without --out */
    hr_run prev;         /* the sidecar's results (--resume) */
    int resuming;
    hx_file xf;    /* --expect */
    of_file out;   /* --out FILE, written to a temporary until committed */
    int isolated;  /* plugins run in a worker (worker.h) */
    hb_backend hb; /* the backend, loaded here when not isolated */
    hb_open_opts oo;
    entry *e; /* the selected case files, sorted by id */
    size_t n;
    char a0[PATH_MAX], be_arg[PATH_MAX], dir_abs[PATH_MAX]; /* as re-run commands spell them */
    run_ctx rn;
    hw_config wc;
    hw_worker w;
    hw_hello hello;
    const char *be_name, *be_version, *be_path;
    hr_run run;
    unsigned char *done;            /* done[i]: case i has its result */
    hr_result *view;                /* room for save_partial's view of the done results */
    char last_family[ACASE_ID_MAX]; /* of the last case sent to the backend (--restart) */
    size_t passed, failed, skipped, unexpressible, unreadable;
    shard_spec sp; /* --shard or the environment's; sp.total 0: not sharded */
    shard_info si;
} session;

static void session_free(session *s)
{
    hw_stop(&s->w);
    hb_unload(&s->hb);
    free(s->run.results);
    free(s->done);
    free(s->view);
    free(s->prev.results);
    if (s->e)
        entries_free(s->e, s->n);
    of_discard(&s->out); /* nothing once committed */
    hx_free(&s->xf);
    free(s);
}

/* Options that only make sense together, and the sidecar's name.  Returns 0 or an exit
 * status. */
static int session_check_args(session *s)
{
    if (!s->o.backend)
        return usage_error("run", "--backend is required", NULL);
    int rc = parse_backend_opts("run", &s->o, &s->bo);
    if (rc != 0)
        return rc;
    if (s->o.format && hr_format_parse(s->o.format, &s->fmt) != 0)
        return usage_error("run", "unknown format (text, tap, junit, json)", s->o.format);
    s->dir = s->o.cases ? s->o.cases : ATTNCONF_DEFAULT_CASES;
    if ((rc = shard_resolve("run", &s->o, 1, &s->sp)) != 0)
        return rc;
    /* gtest's handshake: a runner that sets GTEST_SHARD_STATUS_FILE learns that this program
     * shards by finding the file. */
    char why[600];
    if (shard_touch_status_file(why, sizeof why) != 0) {
        fprintf(stderr, "attnconf run: %s\n", why);
        return CLI_EXIT_USAGE;
    }
    if (s->o.resume && !s->o.out)
        return usage_error("run", "--resume needs --out FILE (it continues from FILE.partial.json)",
                           NULL);
    /* The sidecar FILE.partial.json: the results so far, rewritten after every case. */
    if (s->o.out) {
        int w = snprintf(s->side, sizeof s->side, "%s.partial.json", s->o.out);
        if (w < 0 || (size_t)w >= sizeof s->side)
            return usage_error("run", "--out: path too long", s->o.out);
    }
    return 0;
}

/* --resume: read and check an existing sidecar before anything runs.  Returns 0 or an exit
 * status. */
static int session_resume_load(session *s)
{
    if (!s->o.resume)
        return 0;
    struct stat sb;
    if (stat(s->side, &sb) != 0 && errno == ENOENT) {
        fprintf(stderr, "attnconf: --resume: no %s: starting from scratch\n", s->side);
        return 0;
    }
    char perr[1024];
    if (hr_partial_load(s->side, &s->prev, perr, sizeof perr) != 0) {
        fprintf(stderr, "attnconf: --resume: cannot resume from %s\n", perr);
        return CLI_EXIT_USAGE;
    }
    const char *filter = s->o.filter ? s->o.filter : "";
    const char *what = strcmp(s->prev.backend_options, s->bo.summary) != 0 ? "backend options"
                       : strcmp(s->prev.filter, filter) != 0               ? "filter"
                       : !same_dir(s->prev.cases_dir, s->dir)              ? "cases dir"
                                                                           : NULL;
    if (what) {
        fprintf(stderr,
                "attnconf: --resume: %s was made with %s '%s', this run has "
                "'%s': rerun with the same options, or without --resume to start over\n",
                s->side, what,
                what[0] == 'b'   ? s->prev.backend_options
                : what[0] == 'f' ? s->prev.filter
                                 : s->prev.cases_dir,
                what[0] == 'b'   ? s->bo.summary
                : what[0] == 'f' ? filter
                                 : s->dir);
        return CLI_EXIT_USAGE;
    }
    if (s->prev.shard_index != s->sp.index || s->prev.shard_total != s->sp.total) {
        fprintf(stderr,
                "attnconf: --resume: %s was made with shard %" PRIu32 "/%" PRIu32
                ", this run has shard %" PRIu32 "/%" PRIu32
                " (0/0: not sharded): rerun with the same --shard (or GTEST_* variables), "
                "or without --resume to start over\n",
                s->side, s->prev.shard_index, s->prev.shard_total, s->sp.index, s->sp.total);
        return CLI_EXIT_USAGE;
    }
    s->resuming = 1;
    return 0;
}

/* The expected-results file is read before anything runs: a broken file must not cost a whole
 * run.  Returns 0 or an exit status. */
static int session_expect_load(session *s)
{
    char xerr[1024];
    if (s->o.expect && hx_load(s->o.expect, &s->xf, xerr, sizeof xerr) != 0) {
        fprintf(stderr, "attnconf: --expect %s\n", xerr);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* --out goes to a temporary file in FILE's directory, renamed over FILE once complete: a run
 * that fails or is killed never leaves FILE empty or half-written.  Creating it now keeps the
 * up-front check: an unwritable path cannot cost a whole run. */
static int session_open_out(session *s)
{
    char why[512];
    if (s->o.out && of_open(&s->out, s->o.out, why, sizeof why) != 0) {
        fprintf(stderr, "attnconf run: --out %s: %s\n", s->o.out, why);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* Plugins run in a worker process (worker.h); exec: adapters are processes of their own
 * already, so their bridge stays here, and --in-process keeps everything here.  Returns 0 or
 * an exit status. */
static int session_reach_backend(session *s)
{
    s->isolated = !s->o.in_process && !hb_spec_is_exec(s->o.backend);
    s->oo = (hb_open_opts){s->bo.opt, s->bo.n, s->o.timeout_s, s->o.adapter_stderr};
    char err[1024];
    if (s->isolated) {
        /* Resolve here, so a typo in --backend fails before any case is parsed; the worker
         * loads the file. */
        char path[4096];
        if (hb_resolve(s->o.backend, ATTNCONF_BACKEND_DIR, path, sizeof path, err, sizeof err)) {
            fprintf(stderr, "attnconf: %s\n", err);
            return CLI_EXIT_FAIL;
        }
    } else if (hb_load(s->o.backend, ATTNCONF_BACKEND_DIR, &s->oo, &s->hb, err, sizeof err) != 0) {
        fprintf(stderr, "attnconf: %s\n", err);
        return CLI_EXIT_FAIL;
    }
    return 0;
}

/* The selected case files, and the words of the command that re-runs one.  Returns 0 or an
 * exit status. */
static int session_load_cases(session *s)
{
    if (load_cases(s->dir, &s->o, &s->e, &s->n) != 0)
        return CLI_EXIT_USAGE;
    if (s->n == 0) {
        fprintf(stderr, "attnconf: no case in %s matches '%s'\n", s->dir,
                s->o.filter ? s->o.filter : "*");
        return CLI_EXIT_USAGE;
    }
    /* The slice is cut from the whole selection: the same cases and the same N give the same
     * slices on every machine.  An empty slice (more shards than cases) is no error. */
    if (s->sp.total) {
        if (shard_entries(s->e, &s->n, s->sp, &s->si) != 0)
            return CLI_EXIT_FAIL;
        if (s->n == 0)
            fprintf(stderr,
                    "attnconf: shard %" PRIu32 "/%" PRIu32 " holds none of the %" PRIu64
                    " selected cases (more shards than cases)\n",
                    s->sp.index, s->sp.total, s->si.selected);
    }
    absolute_argv0(s->argv0, s->a0, sizeof s->a0);
    if (hb_spec_is_path(s->o.backend))
        absolute_path(s->o.backend, s->be_arg, sizeof s->be_arg);
    else
        snprintf(s->be_arg, sizeof s->be_arg, "%s", s->o.backend);
    absolute_path(s->dir, s->dir_abs, sizeof s->dir_abs);
    s->rn = (run_ctx){.backend = &s->hb,
                      .argv0 = s->a0,
                      .backend_arg = s->be_arg,
                      .cases_dir = s->dir_abs,
                      .options = s->bo.opt,
                      .n_options = s->bo.n,
                      .timeout_s = s->o.timeout ? s->o.timeout_s : 0,
                      .case_timeout_s = s->o.case_timeout ? s->o.case_timeout_s : 0};
    /* Every failure prints the command that re-runs it: if that command would not fit for the
     * longest possible case id, say so now rather than print none later. */
    char longest[ACASE_ID_MAX];
    memset(longest, 'a', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    hr_result probe;
    run_result_begin(&s->rn, longest, &probe);
    if (!probe.rerun[0]) {
        fprintf(stderr,
                "attnconf: the command that re-runs a case would be over %zu bytes "
                "(a very long --backend, --cases or --backend-option): shorten it\n",
                sizeof probe.rerun - 1);
        return CLI_EXIT_USAGE;
    }
    return 0;
}

/* The worker is forked once the cases are loaded, so it holds them (and every later worker
 * too): the parent sends only an index.  Then the backend's name and version must agree with
 * --expect and --resume, and the run's header is filled.  Returns 0 or an exit status. */
static int session_start(session *s)
{
    s->wc = (hw_config){s->o.backend,        ATTNCONF_BACKEND_DIR,  &s->oo,     &s->rn,
                        s->o.case_timeout_s, s->o.memory_limit_mib, entry_case, s->e};
    if (s->isolated) {
        if (hw_start(&s->w, &s->wc, &s->hello) != 0 || !s->hello.ok) {
            fprintf(stderr, "attnconf: %s\n", s->hello.err);
            return CLI_EXIT_FAIL;
        }
        s->be_name = s->hello.name;
        s->be_version = s->hello.version;
        s->be_path = s->hello.path;
    } else {
        s->be_name = s->hb.be->name;
        s->be_version = s->hb.be->version ? s->hb.be->version : "";
        s->be_path = s->hb.path;
    }
    if (s->o.expect && strcmp(s->xf.backend, s->be_name) != 0) {
        fprintf(stderr, "attnconf: --expect %s: the file is for backend '%s', this is '%s'\n",
                s->o.expect, s->xf.backend, s->be_name);
        return CLI_EXIT_USAGE;
    }
    if (s->resuming && (strcmp(s->prev.backend_name, s->be_name) != 0 ||
                        strcmp(s->prev.backend_version, s->be_version) != 0)) {
        fprintf(stderr,
                "attnconf: --resume: %s was made with backend '%s' %s, this is '%s' %s: "
                "rerun with the same backend, or without --resume to start over\n",
                s->side, s->prev.backend_name, s->prev.backend_version, s->be_name, s->be_version);
        return CLI_EXIT_USAGE;
    }
    hr_run *run = &s->run;
    snprintf(run->backend_name, sizeof run->backend_name, "%s", s->be_name);
    snprintf(run->backend_version, sizeof run->backend_version, "%s", s->be_version);
    snprintf(run->backend_path, sizeof run->backend_path, "%s", s->be_path);
    snprintf(run->cases_dir, sizeof run->cases_dir, "%s", s->dir);
    snprintf(run->filter, sizeof run->filter, "%s", s->o.filter ? s->o.filter : "");
    snprintf(run->backend_options, sizeof run->backend_options, "%s", s->bo.summary);
    if (s->sp.total) {
        run->shard_index = s->sp.index;
        run->shard_total = s->sp.total;
        run->shard_selected = s->si.selected;
        shard_digest_text(s->si.digest, run->shard_selection);
    }
    const size_t room = s->n ? s->n : 1; /* an empty shard has no case */
    run->results = calloc(room, sizeof *run->results);
    s->done = calloc(room, 1);
    s->view = s->o.out ? calloc(room, sizeof *s->view) : NULL;
    if (!run->results || !s->done || (s->o.out && !s->view)) {
        fprintf(stderr, "attnconf: out of memory\n");
        return CLI_EXIT_FAIL;
    }
    return 0;
}

/* --resume: keep the sidecar's result of every case still selected (each id once); an
 * unreadable or duplicate case file is cheap to judge again and is not kept. */
static void session_resume_merge(session *s)
{
    if (!s->resuming)
        return;
    const hr_run *prev = &s->prev;
    unsigned char *used = calloc(prev->count ? prev->count : 1, 1);
    size_t kept = 0;
    for (size_t i = 0; used && i < s->n; i++) {
        if (s->e[i].err || (i > 0 && strcmp(s->e[i].id, s->e[i - 1].id) == 0))
            continue;
        for (size_t j = 0; j < prev->count; j++)
            if (!used[j] && prev->results[j].status != HR_CASE_ERROR &&
                strcmp(prev->results[j].id, s->e[i].id) == 0) {
                s->run.results[i] = prev->results[j];
                used[j] = s->done[i] = 1;
                kept++;
                break;
            }
    }
    free(used);
    fprintf(stderr,
            "attnconf: --resume: %zu of %zu selected cases done in %s (%zu of its "
            "%zu results kept); running the other %zu\n",
            kept, s->n, s->side, kept, prev->count, s->n - kept);
}

/* --restart family|case: a fresh adapter before a case of another family, or before every
 * case (an adapter that has served nothing yet is kept: it is fresh). */
static void session_restart(session *s, const char *family)
{
    const char *p = s->o.restart ? s->o.restart : "never";
    if (!strcmp(p, "case") || (!strcmp(p, "family") && strcmp(family, s->last_family) != 0))
        hb_restart(&s->hb);
    snprintf(s->last_family, sizeof s->last_family, "%s", family);
}

/* Case i, into its result: a case file that did not load or repeats an id is the suite's
 * problem (CASE_ERROR, exit 3); otherwise it runs here or in the worker. */
static void session_run_one(session *s, size_t i)
{
    hr_result *r = &s->run.results[i];
    const entry *e = &s->e[i];
    run_result_begin(&s->rn, e->id, r);
    if (e->err) {
        r->status = HR_CASE_ERROR;
        snprintf(r->message, sizeof r->message, "%s", e->err);
    } else if (i > 0 && strcmp(e->id, s->e[i - 1].id) == 0) {
        r->status = HR_CASE_ERROR;
        snprintf(r->message, sizeof r->message, "%s: duplicate case id '%s' (also in %s)", e->path,
                 e->id, s->e[i - 1].path);
    } else if (!s->isolated) {
        session_restart(s, r->family);
        run_case(&s->rn, e->c, r);
    } else {
        /* A worker that died on the previous case is replaced; one that cannot be (the
         * backend now fails to load) makes this case a CRASH and is retried for the next. */
        if (s->w.pid == 0 && (hw_start(&s->w, &s->wc, &s->hello) != 0 || !s->hello.ok)) {
            r->status = HR_CRASH;
            snprintf(r->message, sizeof r->message, "cannot restart the worker: %.450s",
                     s->hello.err);
        } else {
            hw_run(&s->w, &s->wc, i, r);
        }
        if (r->status == HR_CRASH || r->status == HR_TIMEOUT)
            run_result_case_info(e->c, r); /* the dead worker could not send them */
    }
}

/* Every case not kept from the sidecar, saving the results so far after each. */
static void session_run_all(session *s)
{
    int side_warned = 0;
    for (size_t i = 0; i < s->n; i++) {
        int kept = s->done[i]; /* from the sidecar: it has that result already */
        if (!kept)
            session_run_one(s, i);
        /* Free each case as soon as it has run: only results are kept (a worker forked
         * later never asks for an earlier case). */
        acase_free(s->e[i].c);
        s->e[i].c = NULL;
        if (kept)
            continue;
        s->done[i] = 1;
        s->run.count = s->n;
        if (s->o.out && save_partial(&s->run, s->done, s->n, s->view, s->side) != 0 &&
            !side_warned) {
            fprintf(stderr,
                    "attnconf: warning: cannot save the results so far to %s: %s "
                    "(the run goes on; an interrupted run cannot be resumed)\n",
                    s->side, strerror(errno));
            side_warned = 1;
        }
    }
    s->run.count = s->n;
    hw_stop(&s->w);
    hb_unload(&s->hb);
}

/* The exit status: the statuses' own, or with --expect, the expected-results file's verdict. */
static int session_judge(session *s)
{
    hr_run *run = &s->run;
    size_t counts[HR_STATUS_COUNT] = {0};
    for (size_t i = 0; i < run->count; i++)
        counts[run->results[i].status]++;
    s->passed = counts[HR_PASS] + counts[HR_EXPECTED_ERROR];
    s->failed = counts[HR_FAIL] + counts[HR_INCORRECT_DTYPE] + counts[HR_ERROR] + counts[HR_CRASH] +
                counts[HR_TIMEOUT];
    s->skipped = counts[HR_NOT_SUPPORTED];
    s->unexpressible = counts[HR_UNEXPRESSIBLE];
    s->unreadable = counts[HR_CASE_ERROR];
    if (!s->o.expect) {
        /* A backend failure outranks an unreadable case file (exit 1, not 3): both need
         * fixing, and the backend's is what a CI run of a backend is about. */
        return s->failed       ? CLI_EXIT_FAIL
               : s->unreadable ? CLI_EXIT_CASE_ERROR
                               : (s->skipped == run->count && run->count ? CLI_EXIT_SKIP : 0);
    }
    /* Judged against the file instead: a recorded divergence passes, any change fails. */
    hx_file *xf = &s->xf;
    snprintf(run->expect_file, sizeof run->expect_file, "%s", s->o.expect);
    snprintf(run->expect_version, sizeof run->expect_version, "%s", xf->version);
    run->unexpected = hx_apply(xf, run);
    /* A filtered or sharded run sees only some cases: an entry for the others is not stale. */
    for (size_t k = 0; k < xf->n && !s->o.filter && !s->sp.total; k++)
        for (size_t j = 0; xf->entries[k].applies && j < xf->entries[k].npatterns; j++)
            if (xf->entries[k].hits[j] == 0) {
                fprintf(stderr,
                        "attnconf: %s:%d: stale entry: '%s' matches no case (or only cases "
                        "an earlier entry took)\n",
                        s->o.expect, xf->entries[k].line, xf->entries[k].patterns[j]);
                run->stale++;
            }
    if (strcmp(xf->version, run->backend_version) != 0)
        fprintf(stderr, "attnconf: note: %s was recorded with %s; this is %s\n", s->o.expect,
                xf->version, run->backend_version);
    /* CASE_ERRORs are never as expected (expect.c refuses to record them); alone they are the
     * suite's problem, exit 3 as without --expect. */
    return run->unexpected > s->unreadable || run->stale ? CLI_EXIT_FAIL
           : s->unreadable                               ? CLI_EXIT_CASE_ERROR
                                                         : 0;
}

/* The results, to --out (committed, the sidecar then removed, a summary line on stdout) or to
 * stdout.  Returns status, or CLI_EXIT_FAIL when they cannot be written. */
static int session_write(session *s, int status)
{
    FILE *f = s->o.out ? s->out.f : stdout;
    int wr = hr_write(&s->run, s->fmt, f);
    if (f != stdout) {
        wr |= of_commit(&s->out);
        if (wr == 0) /* FILE is complete: the sidecar has served */
            unlink(s->side);
    } else if (fflush(f) != 0) {
        wr = -1;
    }
    if (wr != 0) {
        fprintf(stderr, "attnconf: cannot write results to %s%s%s\n",
                s->o.out ? s->o.out : "stdout", s->o.out ? ": " : "",
                s->o.out ? strerror(errno) : "");
        return CLI_EXIT_FAIL;
    }
    if (s->o.out) {
        printf("attnconf: %s %s: %zu passed, %zu failed, %zu not supported", s->run.backend_name,
               s->run.backend_version, s->passed, s->failed, s->skipped);
        if (s->unexpressible)
            printf(", %zu unexpressible", s->unexpressible);
        if (s->unreadable)
            printf("; %zu case file%s unreadable", s->unreadable, s->unreadable == 1 ? "" : "s");
        printf(" (results in %s)\n", s->o.out);
    }
    return status;
}

int cmd_run(const char *argv0, int argc, char **argv)
{
    static const char *const allowed[] = {"--backend",
                                          "--cases",
                                          "--filter",
                                          "--exclude",
                                          "--format",
                                          "--out",
                                          "--timeout",
                                          "--backend-option",
                                          "--expect",
                                          "--case-timeout",
                                          "--memory-limit",
                                          "--in-process",
                                          "--resume",
                                          "--adapter-stderr",
                                          "--restart",
                                          "--shard",
                                          NULL};
    /* The session holds paths and buffers of a few tens of KiB: on the heap, not the stack. */
    session *s = calloc(1, sizeof *s);
    if (!s) {
        fprintf(stderr, "attnconf: out of memory\n");
        return CLI_EXIT_FAIL;
    }
    s->argv0 = argv0;
    s->w = (hw_worker){0, -1, NULL, 0}; /* no worker yet: session_free's hw_stop does nothing */
    int status = parse_opts("run", argc, argv, allowed, &s->o);
    if (status == CLI_HELP) {
        session_free(s);
        return CLI_EXIT_OK;
    }
    if (status == 0)
        status = session_check_args(s);
    if (status == 0)
        status = session_resume_load(s);
    if (status == 0)
        status = session_expect_load(s);
    if (status == 0)
        status = session_open_out(s);
    if (status == 0)
        status = session_reach_backend(s);
    if (status == 0)
        status = session_load_cases(s);
    if (status == 0)
        status = session_start(s);
    if (status == 0) {
        session_resume_merge(s);
        session_run_all(s);
        status = session_write(s, session_judge(s));
    }
    session_free(s);
    return status;
}

/* `attnconf backend-info`: load the backend (with the options given) and say what it is.  A
 * plugin is loaded in a worker (hw_probe), within --case-timeout as `run` loads it, so one that
 * crashes or hangs while loading is an error message; an exec: adapter is a process of its own
 * already, so its bridge loads here (as in `run`) within --timeout. */
int cmd_backend_info(const char *argv0, int argc, char **argv)
{
    (void)argv0;
    static const char *const allowed[] = {"--backend",      "--backend-option", "--timeout",
                                          "--case-timeout", "--adapter-stderr", NULL};
    opts o;
    int rc = parse_opts("backend-info", argc, argv, allowed, &o);
    if (rc)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    if (!o.backend)
        return usage_error("backend-info", "--backend is required", NULL);
    backend_opts bo;
    if ((rc = parse_backend_opts("backend-info", &o, &bo)) != 0)
        return rc;
    hb_open_opts oo = {bo.opt, bo.n, o.timeout_s, o.adapter_stderr};
    static hw_hello h; /* ~14 KiB: not on the stack */
    if (hb_spec_is_exec(o.backend)) {
        hb_backend hb;
        if (hb_load(o.backend, ATTNCONF_BACKEND_DIR, &oo, &hb, h.err, sizeof h.err) != 0) {
            fprintf(stderr, "attnconf: %s\n", h.err);
            return CLI_EXIT_FAIL;
        }
        hw_describe(&hb, &h);
        hb_unload(&hb);
    } else if (hw_probe(o.backend, ATTNCONF_BACKEND_DIR, &oo, o.case_timeout_s, &h) != 0) {
        fprintf(stderr, "attnconf: %s\n", h.err);
        return CLI_EXIT_FAIL;
    }
    printf("name: %s\nversion: %s\npath: %s\n", h.name, h.version, h.path);
    char caps[1024];
    acase_caps_text(h.caps, ", ", caps, sizeof caps);
    printf("capabilities: %s\n", caps[0] ? caps : "none");
    printf("device: %s\n", h.device[0] ? h.device : "host memory");
    printf("options:%s\n%s", h.noptions ? "" : " none", h.options);
    if (bo.summary[0])
        printf("given: %s\n", bo.summary);
    return fflush(stdout) == 0 ? 0 : CLI_EXIT_FAIL;
}
