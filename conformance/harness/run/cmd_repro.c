/* cmd_repro.c — `attnconf repro`: a self-contained reproducer of one case on a third-party
 * library, the text a bug report needs (PROTOCOL.md "repro").
 *
 * The case is loaded and its sdpa arguments are laid out by run_sdpa_prepare, the code `attnconf
 * run` calls the backend with, so the reproducer sees the very buffers, strides and parameters
 * the run did.  They are sent as a repro request to the exec: adapter itself, or, for a plugin
 * (which has no way to answer one), to a repro writer: a program that speaks the same protocol
 * and knows how the plugin poses a case (--writer, or the one the writers table registers for
 * the plugin's name).  The script comes back on stdout or in --out FILE.
 *
 * Exit status: 0 the reproducer was written; 1 it could not be (the backend or the writer
 * refused, failed or is missing, the backend lacks a capability the case needs, the output
 * could not be written); 2 a usage error, an unknown case or a case that is not an sdpa case.
 */
#define _XOPEN_SOURCE 700 /* realpath */

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "attncase/case.h"
#include "backend/backend_load.h"
#include "backend/exec_backend.h"
#include "backend/plugin.h"
#include "common/cli.h"
#include "common/locate.h"
#include "common/outfile.h"
#include "common/shell.h"
#include "repro.h"
#include "run/cmd.h"
#include "run/compare.h"
#include "run/run.h"
#include "run/worker.h"

#ifndef ATTNCONF_REPRO_PYTHON
#define ATTNCONF_REPRO_PYTHON ""
#endif

#define REPRO_MAX_OPTIONS 32

static void repro_usage(FILE *f)
{
    fputs("usage: " RUN_USAGE_REPRO "\n"
          "Write a self-contained reproducer of case ID as the backend's library runs it: a\n"
          "Python script (needs only the library and numpy) or a C file (its build command in\n"
          "its header comment) that embeds the inputs, calls the library exactly as the backend\n"
          "did, computes SPEC.md's result with its own reference, prints expected against got\n"
          "and exits 1 when they disagree beyond the case's tolerance, 0 otherwise.\n"
          "  --backend  an exec:CMD adapter that answers repro (PROTOCOL.md), or a plugin\n"
          "             name or path, whose reproducer a writer writes\n"
          "  --backend-option  KEY=VALUE as given to `attnconf run` (repeatable): the adapter\n"
          "             (or writer) poses the case with the same options\n"
          "  --writer   exec:CMD, a repro writer for a plugin (default: the one registered for\n"
          "             the plugin's name in conformance/repro/writers.tsv)\n"
          "  --cases    directory of case files (default the built-in cases)\n"
          "  --case     the case id (an sdpa case)\n"
          "  --out      write the reproducer to FILE (default stdout)\n"
          "  --timeout  seconds the adapter or writer may take (default 300)\n"
          "  --case-timeout  seconds loading a plugin may take (default 120)\n"
          "\n"
          "exit status: 0 written, 1 not written (refused, no writer, a missing capability,\n"
          "             an unwritable --out), 2 usage, an unknown case or not an sdpa case\n",
          f);
}

/* ---- the writers table ------------------------------------------------------------------- */

int repro_writer_for(const char *name, char *spec, size_t n, char *why, size_t why_n)
{
    if (why_n)
        why[0] = '\0';
    const char *table = getenv("ATTNCONF_REPRO_WRITERS");
    if (!table || !table[0])
        table = hl_repro_writers();
    if (!table[0]) {
        if (why_n)
            snprintf(why, why_n,
                     "an installed attnconf has no writers table (its writers serve the build "
                     "tree's third-party plugins, which are not installed; "
                     "$ATTNCONF_REPRO_WRITERS may name one)");
        return 0;
    }
    FILE *f = fopen(table, "r");
    if (!f) {
        if (why_n)
            snprintf(why, why_n, "no writers table: %s: %s", table, strerror(errno));
        return 0;
    }
    char line[1024];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        char *tab = strchr(line, '\t');
        if (line[0] == '#' || !tab)
            continue;
        *tab = '\0';
        if (strcmp(line, name) != 0)
            continue;
        const char *script = tab + 1;
        /* SCRIPT relative to the table's directory. */
        char path[OF_PATH_MAX];
        const char *slash = strrchr(table, '/');
        int dl = slash ? (int)(slash - table) : 1;
        int w = snprintf(path, sizeof path, "%.*s/%s", dl, slash ? table : ".", script);
        if (w < 0 || (size_t)w >= sizeof path)
            found = -1;
        const char *py = getenv("ATTNCONF_REPRO_PYTHON");
        if (!py || !py[0])
            py = ATTNCONF_REPRO_PYTHON[0] ? ATTNCONF_REPRO_PYTHON : "python3";
        char qpy[OF_PATH_MAX + 64], qpath[OF_PATH_MAX + 64];
        if (found == 0 && shell_quote(py, qpy, sizeof qpy) == 0 &&
            shell_quote(path, qpath, sizeof qpath) == 0) {
            w = snprintf(spec, n, "exec:%s %s", qpy, qpath);
            found = w < 0 || (size_t)w >= n ? -1 : 1;
        } else {
            found = -1;
        }
    }
    fclose(f);
    if (found == 0 && why_n)
        snprintf(why, why_n, "%s registers no writer for '%s'", table, name);
    return found;
}

/* ---- the case -------------------------------------------------------------------------------- */

/* Load case `id` from dir: the file named ID.yaml anywhere under it, whose id must be ID.
 * Returns the case, or NULL with the reason printed. */
static acase *repro_load_case(const char *dir, const char *id)
{
    char err[1024];
    char **paths = NULL;
    int np = acase_list_dir(dir, &paths, err, sizeof err);
    if (np < 0) {
        fprintf(stderr, "attnconf repro: --cases %s: %s\n", dir, err);
        return NULL;
    }
    char want[ACASE_ID_MAX + 8];
    snprintf(want, sizeof want, "%s.yaml", id);
    acase *c = NULL;
    int tried = 0;
    for (int i = 0; i < np; i++) {
        const char *base = strrchr(paths[i], '/');
        base = base ? base + 1 : paths[i];
        if (!c && !tried && strcmp(base, want) == 0) {
            tried = 1;
            if (acase_load_file(paths[i], &c, err, sizeof err) != 0) {
                fprintf(stderr, "attnconf repro: %s\n", err);
                c = NULL;
            } else if (strcmp(c->id, id) != 0) {
                fprintf(stderr, "attnconf repro: %s: its id is '%s', not '%s'\n", paths[i], c->id,
                        id);
                acase_free(c);
                c = NULL;
            }
        }
        free(paths[i]);
    }
    free(paths);
    if (!c && !tried)
        fprintf(stderr,
                "attnconf repro: no case '%s' in %s: no file named %s under it (repro finds a "
                "case by its file name, ID.yaml, as casegen names them)\n",
                id, dir, want);
    return c;
}

/* The largest error case c allows any element of a CLOSE row (SPEC clause 13: ulps at the
 * expected value plus the row's absolute term): the one tolerance the reproducer embeds. */
static double repro_atol(const acase *c)
{
    const hc_tol tol = {.ulps = c->ulps, .ulp_dtype = c->expected.dtype, .row_atol = c->row_atol};
    const int64_t row_len = c->expected.ndim >= 1 ? c->expected.shape[c->expected.ndim - 1] : 1;
    double atol = 0;
    for (int64_t i = 0; c->expected.values && i < c->expected.numel; i++) {
        int64_t row = row_len > 0 ? i / row_len : 0;
        double e = c->expected.values[i];
        if (!isfinite(e) || (c->expected.row_check && c->expected.row_check[row] != HC_ROW_CLOSE))
            continue;
        double a = hc_allowed(&tol, e, row);
        atol = a > atol ? a : atol;
    }
    return atol;
}

/* The repro request's members besides the sdpa ones (PROTOCOL.md "repro").  NULL: no memory. */
static json_t *repro_members(const acase *c, const char *be_name, const char *be_version)
{
    json_t *m = json_object(), *ex = json_object(), *rules = json_array(), *be = json_object();
    int err = !m || !ex || !rules || !be;
    err = err || json_object_set_new(ex, "status", json_string(hb_code_name(c->expected.error)));
    err = err || json_object_set_new(ex, "atol",
                                     c->expected.error ? json_null() : json_real(repro_atol(c)));
    if (!err && c->expected.error == 0 && c->expected.row_check) {
        char *rows = malloc((size_t)c->expected.nrows + 1);
        static const char letter[3] = {'c', 'e', 'f'};
        err = !rows;
        for (int64_t r = 0; rows && r < c->expected.nrows; r++)
            rows[r] = c->expected.row_check[r] < 3 ? letter[c->expected.row_check[r]] : 'c';
        if (rows) {
            rows[c->expected.nrows] = '\0';
            err = json_object_set_new(ex, "row_checks", json_string(rows)) != 0;
        }
        free(rows);
    }
    for (int i = 0; !err && i < c->nrules; i++)
        err = json_array_append_new(rules, json_string(c->rules[i] ? c->rules[i] : "")) != 0;
    err = err || json_object_set_new(be, "name", json_string(be_name)) ||
          json_object_set_new(be, "version", json_string(be_version));
    err =
        err || json_object_set_new(m, "case", json_string(c->id)) ||
        json_object_set(m, "expect", ex) ||
        json_object_set_new(m, "description", json_string(c->description ? c->description : "")) ||
        json_object_set(m, "rules", rules) || json_object_set(m, "backend", be);
    json_decref(ex);
    json_decref(rules);
    json_decref(be);
    if (err) {
        json_decref(m);
        return NULL;
    }
    return m;
}

/* ---- the command ----------------------------------------------------------------------------- */

int cmd_repro(const char *argv0, int argc, char **argv)
{
    (void)argv0;
    const char *backend = NULL, *writer = NULL, *cases = NULL, *id = NULL, *out = NULL;
    const char *adapter_stderr = NULL;
    const char *kv[REPRO_MAX_OPTIONS];
    size_t nkv = 0;
    double timeout_s = HB_DEFAULT_TIMEOUT_S, case_timeout_s = HW_DEFAULT_CASE_TIMEOUT_S;
    const cli_opt opts[] = {
        {.name = "--backend", .kind = CLI_STRING, .dest = &backend},
        {.name = "--backend-option",
         .kind = CLI_STRINGS,
         .dest = kv,
         .max = REPRO_MAX_OPTIONS,
         .count = &nkv},
        {.name = "--writer", .kind = CLI_STRING, .dest = &writer},
        {.name = "--cases", .kind = CLI_STRING, .dest = &cases},
        {.name = "--case", .kind = CLI_STRING, .dest = &id},
        {.name = "--out", .kind = CLI_STRING, .dest = &out},
        {.name = "--timeout", .kind = CLI_SECONDS, .dest = &timeout_s},
        {.name = "--case-timeout", .kind = CLI_SECONDS, .dest = &case_timeout_s},
        cli_opt_adapter_stderr(&adapter_stderr),
    };
    const cli_cmd cmd = {
        .name = "repro", .usage = repro_usage, .opts = opts, .nopts = CLI_COUNT_OF(opts)};
    int rc = cli_parse(&cmd, argc, argv);
    if (rc)
        return rc == CLI_HELP ? CLI_EXIT_OK : rc;
    if (!backend)
        return cli_usage_error(&cmd, "--backend is required", NULL);
    if (!id)
        return cli_usage_error(&cmd, "--case is required", NULL);
    if (writer && !hb_spec_is_exec(writer))
        return cli_usage_error(&cmd, "--writer must be exec:CMD", writer);
    if (adapter_stderr && !hb_spec_is_exec(backend) && !writer)
        return cli_usage_error(&cmd, CLI_ADAPTER_STDERR_NOT_EXEC, backend);
    if ((rc = cli_adapter_stderr_check("repro", adapter_stderr)) != 0)
        return rc;
    attnconf_option opt[REPRO_MAX_OPTIONS];
    char keys[REPRO_MAX_OPTIONS][HB_OPTION_KEY_MAX + 1];
    size_t nopt = 0;
    for (size_t i = 0; i < nkv; i++) {
        const char *why = hb_option_add(kv[i], opt, keys, &nopt, REPRO_MAX_OPTIONS);
        if (why)
            return cli_usage_error(&cmd, why, kv[i]);
    }
    char why[1024];
    if (out && of_check(out, why, sizeof why) != 0) {
        fprintf(stderr, "attnconf repro: --out %s: %s\n", out, why);
        return CLI_EXIT_FAIL;
    }
    acase *c = repro_load_case(cases ? cases : hl_cases_dir(), id);
    if (!c)
        return CLI_EXIT_USAGE;
    if (c->op != ACASE_OP_SDPA) {
        fprintf(stderr,
                "attnconf repro: %s: not supported: repro covers sdpa cases (this is an "
                "op: %s case)\n",
                id,
                c->op == ACASE_OP_MASK    ? "mask"
                : c->op == ACASE_OP_CACHE ? "cache"
                                          : "paged");
        acase_free(c);
        return CLI_EXIT_USAGE;
    }

    /* What the backend is (its name picks the writer; its capabilities say whether `run` poses
     * the case at all), then who answers: the exec: adapter, or the writer. */
    const hb_open_opts oo = {opt, nopt, timeout_s, adapter_stderr};
    static hw_hello h; /* ~14 KiB: not on the stack */
    hb_backend be, wr;
    memset(&be, 0, sizeof be);
    memset(&wr, 0, sizeof wr);
    hb_backend *target = NULL;
    char spec[OF_PATH_MAX * 2 + 80];
    char *script = NULL;
    json_t *members = NULL;
    run_sdpa_call *sc = NULL;
    int status = CLI_EXIT_FAIL;
    if (hb_spec_is_exec(backend)) {
        if (hb_load(backend, hl_backend_dir(), &oo, &be, h.err, sizeof h.err) != 0) {
            fprintf(stderr, "attnconf repro: %s\n", h.err);
            goto done;
        }
        hw_describe(&be, &h);
        if (!writer)
            target = &be;
    } else if (hw_probe(backend, hl_backend_dir(), &oo, case_timeout_s, &h) != 0) {
        fprintf(stderr, "attnconf repro: %s\n", h.err);
        goto done;
    }
    if (!target) {
        if (!writer) {
            int found = repro_writer_for(h.name, spec, sizeof spec, why, sizeof why);
            if (found <= 0) {
                fprintf(stderr, "attnconf repro: %s: %s; give one with --writer exec:CMD\n", h.name,
                        found < 0 ? "the writer's command line is too long" : why);
                goto done;
            }
            writer = spec;
        }
        if (hb_load(writer, NULL, &oo, &wr, why, sizeof why) != 0) {
            fprintf(stderr, "attnconf repro: writer %s\n", why);
            goto done;
        }
        target = &wr;
    }
    uint64_t missing = c->requires & ~h.caps;
    if (missing) {
        char names[400];
        acase_caps_text(missing, ", ", names, sizeof names);
        fprintf(stderr,
                "attnconf repro: %s: %s lacks %s: `attnconf run` reports it NOT_SUPPORTED "
                "without calling the library, so there is nothing to reproduce\n",
                id, h.name, names);
        goto done;
    }

    hr_result r;
    memset(&r, 0, sizeof r);
    sc = run_sdpa_prepare(c, &r);
    if (!sc) {
        fprintf(stderr, "attnconf repro: %s: %s\n", id, r.message);
        goto done;
    }
    members = repro_members(c, h.name, h.version);
    if (!members) {
        fprintf(stderr, "attnconf repro: out of memory\n");
        goto done;
    }
    char language[16];
    rc = xb_repro(target->ctx, run_sdpa_args(sc), members, &script, language, sizeof language);
    if (rc != 0) {
        const char *e = target->be->last_error(target->ctx);
        fprintf(stderr, "attnconf repro: %s: %s answered %s: %s\n", id,
                target == &be ? h.name : "the writer",
                rc == HB_ETRANSPORT ? "with a transport failure" : hb_code_name(rc),
                e && e[0] ? e : "(no message)");
        if (rc == ATTNCONF_EINVAL && e && strstr(e, "unknown op"))
            fprintf(stderr, "attnconf repro: this adapter has no repro op (PROTOCOL.md "
                            "\"repro\")\n");
        goto done;
    }
    of_file of;
    memset(&of, 0, sizeof of);
    if (out && of_open(&of, out, why, sizeof why) != 0) {
        fprintf(stderr, "attnconf repro: --out %s: %s\n", out, why);
        goto done;
    }
    if (of_write_commit(out ? &of : NULL, script, strlen(script)) != 0) {
        fprintf(stderr, "attnconf repro: cannot write %s\n", out ? out : "stdout");
        goto done;
    }
    if (out)
        fprintf(stderr, "attnconf repro: wrote %s (%s): run it with %s %s\n", out, language,
                strcmp(language, "c") == 0 ? "the build command in its header comment, then"
                                           : "python3",
                strcmp(language, "c") == 0 ? "the program" : out);
    status = CLI_EXIT_OK;
done:
    free(script);
    json_decref(members);
    run_sdpa_release(sc);
    hb_unload(&wr);
    hb_unload(&be);
    acase_free(c);
    return status;
}
