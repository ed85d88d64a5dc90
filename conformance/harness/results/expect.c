/* expect.c — read expected-results files and judge a run against them (format: expect.h). */
#define _POSIX_C_SOURCE 200809L /* strdup, fnmatch */

#include "results/expect.h"

#include "attncase/case.h"
#include "attncase/yread.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <yaml.h>

/* Expectation files are small hand-written lists; anything this large is a mistake. */
#define HX_MAX_FILE_BYTES (4u << 20)

typedef struct hx_reader {
    const char *path;
    yaml_document_t *doc;
    char *err;
    size_t errlen;
} hx_reader;

__attribute__((format(printf, 3, 4))) static int hx_fail(const hx_reader *r, const yaml_node_t *at,
                                                         const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (at)
        snprintf(r->err, r->errlen, "%s:%lu:%lu: %s", r->path,
                 (unsigned long)at->start_mark.line + 1, (unsigned long)at->start_mark.column + 1,
                 msg);
    else
        snprintf(r->err, r->errlen, "%s: %s", r->path, msg);
    return -1;
}

static const char *hx_scalar(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* A one-line, non-empty string scalar for `key`, or -1 with the error set. */
static int hx_text(const hx_reader *r, const yaml_node_t *n, const char *key, const char **out)
{
    const char *s = hx_scalar(n);
    *out = NULL; /* set on every path, so callers never see an indeterminate pointer */
    if (!s)
        return hx_fail(r, n, "%s: expected a string", key);
    if (!s[0])
        return hx_fail(r, n, "%s: must not be empty", key);
    if (strpbrk(s, "\r\n"))
        return hx_fail(r, n, "%s: must be one line", key);
    *out = s;
    return 0;
}

static int hx_parse_status(const char *s, hr_status *out)
{
    /* CASE_ERROR is refused: an unreadable case file is the suite's to fix, and recording it
     * would hide the case for good. */
    for (int k = 0; k < HR_STATUS_COUNT; k++)
        if (k != HR_CASE_ERROR && strcmp(s, hr_status_name((hr_status)k)) == 0) {
            *out = (hr_status)k;
            return 0;
        }
    return -1;
}

static char *hx_dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Whether the flag list `flags` (space- or tab-separated words) lacks `flag`. */
static int hx_list_lacks(const char *flags, const char *flag)
{
    const size_t n = strlen(flag);
    for (const char *p = flags; *p;) {
        p += strspn(p, " \t");
        const size_t w = strcspn(p, " \t\n");
        if (w == n && strncmp(p, flag, n) == 0)
            return 0;
        p += w;
        if (*p == '\n')
            break;
    }
    return 1;
}

/* The x86 flags (as Linux's /proc/cpuinfo names them) a cpu_lacks entry may name: the
 * instruction sets a library's kernels are chosen by.  Why a list: a misspelt flag is lacked by
 * every CPU, so its entry would hold everywhere without a word.  A flag Linux names that an
 * entry needs and this list lacks is added here. */
static const char hx_known_flags[] =
    "sse sse2 pni ssse3 sse4_1 sse4_2 sse4a avx avx2 fma fma4 f16c bmi1 bmi2 avx512f avx512cd "
    "avx512dq avx512bw avx512vl avx512ifma avx512vbmi avx512_vbmi2 avx512_vnni avx512_bitalg "
    "avx512_vpopcntdq avx512_bf16 avx512_fp16 avx512_vp2intersect avx_vnni avx_vnni_int8 "
    "avx_ne_convert avx_ifma amx_tile amx_bf16 amx_int8 amx_fp16 amx_complex gfni vaes vpclmulqdq";

/* Whether this CPU lacks `flag` (expect.h, cpu_lacks): $ATTNCONF_CPU_FLAGS where set, else the
 * first "flags" line of /proc/cpuinfo; 0 (nothing known lacking) where neither can be read. */
static int hx_cpu_lacks(const char *flag)
{
    const char *env = getenv("ATTNCONF_CPU_FLAGS");
    if (env)
        return hx_list_lacks(env, flag);
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (!fp)
        return 0;
    char line[8192]; /* the flags line is about 1.5 KB today */
    int lacks = 0;
    while (fgets(line, sizeof line, fp))
        if (strncmp(line, "flags", 5) == 0 && strchr(line, ':')) {
            /* A line longer than the buffer is not read whole: nothing known lacking. */
            lacks = strchr(line, '\n') && hx_list_lacks(strchr(line, ':') + 1, flag);
            break;
        }
    fclose(fp);
    return lacks;
}

/* `case`: one id or glob, or a non-empty list of them; fills patterns and the joined name. */
static int hx_read_patterns(const hx_reader *r, const yaml_node_t *n, hx_entry *e)
{
    size_t count = 1;
    yaml_node_item_t *items = NULL;
    if (n->type == YAML_SEQUENCE_NODE) {
        items = n->data.sequence.items.start;
        count = (size_t)(n->data.sequence.items.top - items);
        if (count == 0)
            return hx_fail(r, n, "case: an empty list");
        if (count > 256)
            return hx_fail(r, n, "case: %zu patterns, over the limit of 256", count);
    }
    if (!(e->patterns = calloc(count, sizeof *e->patterns)) ||
        !(e->hits = calloc(count, sizeof *e->hits)))
        return hx_fail(r, n, "out of memory");
    size_t joined = 0;
    for (size_t i = 0; i < count; i++) {
        const yaml_node_t *p = items ? yaml_document_get_node(r->doc, items[i]) : n;
        const char *s;
        if (hx_text(r, p, "case", &s))
            return -1;
        if (strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_.*?[]-!") != strlen(s))
            return hx_fail(r, p, "case: '%s' is not a case id or glob", s);
        if (!(e->patterns[i] = hx_dup(s)))
            return hx_fail(r, p, "out of memory");
        e->npatterns = i + 1;
        joined += strlen(s) + 2;
    }
    /* Results carry the joined list (hr_result.expect_pattern) and reports group by it: it must
     * arrive whole. */
    if (joined >= sizeof((hr_result *)0)->expect_pattern)
        return hx_fail(r, n,
                       "case: the patterns add up to %zu characters, over %zu: split the "
                       "entry",
                       joined, sizeof((hr_result *)0)->expect_pattern - 1);
    if (!(e->pattern = malloc(joined + 1)))
        return hx_fail(r, n, "out of memory");
    e->pattern[0] = '\0';
    for (size_t i = 0; i < count; i++) {
        strcat(e->pattern, i ? ", " : "");
        strcat(e->pattern, e->patterns[i]);
    }
    return 0;
}

/* The keys of an entry (the index of each in hx_read_entry's table). */
enum { HX_CASE, HX_STATUS, HX_REASON, HX_UPSTREAM, HX_VARIES, HX_CLAUSE, HX_CPU_LACKS, HX_NKEYS };

typedef struct hx_entry_walk {
    const hx_reader *r;
    const ayr_field *keys;
    const char *text[HX_NKEYS];
} hx_entry_walk;

/* The one-line texts are checked as the walk meets them, so a bad value is reported before a
 * bad key further down, in the order the file reads. */
static int hx_entry_value(void *ctx, size_t i)
{
    hx_entry_walk *w = ctx;
    if (i == HX_CASE || i == HX_CLAUSE)
        return 0;
    return hx_text(w->r, w->keys[i].val, w->keys[i].key, &w->text[i]);
}

static int hx_read_entry(const hx_reader *r, const yaml_node_t *m, hx_entry *e)
{
    if (m->type != YAML_MAPPING_NODE)
        return hx_fail(r, m, "expect: each entry must be a mapping (case, status, clause, reason)");
    ayr_field keys[HX_NKEYS] = {{"case", 0, NULL},     {"status", 0, NULL}, {"reason", 0, NULL},
                                {"upstream", 0, NULL}, {"varies", 0, NULL}, {"clause", 0, NULL},
                                {"cpu_lacks", 0, NULL}};
    hx_entry_walk w = {r, keys, {NULL}};
    ayr_walk_at at;
    ayr_walk_result walked = ayr_walk(r->doc, m, keys, HX_NKEYS, hx_entry_value, &w, &at);
    if (walked == AYR_WALK_STOPPED)
        return -1;
    if (walked == AYR_WALK_UNKNOWN)
        return hx_fail(r, at.key,
                       "expect entry: unknown key '%s' (known: case, status, clause, reason, "
                       "upstream, varies, cpu_lacks)",
                       at.name);
    if (walked == AYR_WALK_DUPLICATE)
        return hx_fail(r, at.key, "expect entry: duplicate key '%s'", at.name);
    if (walked != AYR_WALK_OK)
        return hx_fail(r, at.key, "expect entry: keys must be strings");
    const char *status = w.text[HX_STATUS], *reason = w.text[HX_REASON],
               *upstream = w.text[HX_UPSTREAM], *varies = w.text[HX_VARIES],
               *cpu_lacks = w.text[HX_CPU_LACKS];
    const yaml_node_t *clause_node = keys[HX_CLAUSE].val, *status_node = keys[HX_STATUS].val,
                      *case_node = keys[HX_CASE].val;
    if (!case_node || !status || !reason || !clause_node)
        return hx_fail(r, m, "expect entry: missing '%s'",
                       !case_node ? "case"
                       : !status  ? "status"
                       : !reason  ? "reason"
                                  : "clause");
    if (hx_read_patterns(r, case_node, e))
        return -1;
    if (hx_parse_status(status, &e->status))
        return hx_fail(r, status_node,
                       "status: unknown '%s' (PASS, EXPECTED_ERROR, NOT_SUPPORTED, UNEXPRESSIBLE, "
                       "FAIL, INCORRECT_DTYPE, ERROR, CRASH, TIMEOUT)",
                       status);
    /* An UNEXPRESSIBLE claim is the library's word that its API cannot write an invalid input:
     * each one is reviewed case by case, so a glob cannot grant it to cases nobody looked at. */
    for (size_t k = 0; e->status == HR_UNEXPRESSIBLE && k < e->npatterns; k++)
        if (strpbrk(e->patterns[k], "*?[]!"))
            return hx_fail(r, case_node,
                           "case: '%s': an UNEXPRESSIBLE entry lists case ids, not globs "
                           "(each claim is reviewed case by case)",
                           e->patterns[k]);
    /* A plain integer as YAML reads it ("9", not "09" or a quoted "9"), so every YAML reader
     * sees the same number. */
    const char *cl = hx_scalar(clause_node);
    char *end = NULL;
    errno = 0;
    long c = cl ? strtol(cl, &end, 10) : 0;
    if (!cl || clause_node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || cl[0] < '1' ||
        cl[0] > '9' || *end || errno || c < 1 || c > SPEC_CLAUSES)
        return hx_fail(r, clause_node, "clause: expected a SPEC.md clause number 1..%d",
                       SPEC_CLAUSES);
    e->clause = (int)c;
    e->applies = 1;
    if (cpu_lacks) {
        if (strspn(cpu_lacks, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(cpu_lacks) ||
            strlen(cpu_lacks) > 64)
            return hx_fail(r, keys[HX_CPU_LACKS].val,
                           "cpu_lacks: '%s' is not a CPU flag (one word of lower-case letters, "
                           "digits and '_', as /proc/cpuinfo writes them)",
                           cpu_lacks);
        if (hx_list_lacks(hx_known_flags, cpu_lacks))
            return hx_fail(r, keys[HX_CPU_LACKS].val,
                           "cpu_lacks: '%s' is not an instruction-set flag this reader knows "
                           "(avx2, f16c, avx512f, avx512_bf16, avx512_fp16, amx_bf16, ...: "
                           "the list is in conformance/harness/results/expect.c)",
                           cpu_lacks);
        if (!(e->cpu_lacks = hx_dup(cpu_lacks)))
            return hx_fail(r, m, "out of memory");
        e->applies = hx_cpu_lacks(cpu_lacks);
    }
    e->line = (int)m->start_mark.line + 1;
    e->reason = hx_dup(reason);
    e->upstream = hx_dup(upstream);
    e->varies = hx_dup(varies);
    if (!e->reason || (upstream && !e->upstream) || (varies && !e->varies))
        return hx_fail(r, m, "out of memory");
    return 0;
}

static int hx_read_root(const hx_reader *r, hx_file *f)
{
    const yaml_node_t *root = yaml_document_get_root_node(r->doc);
    if (!root)
        return hx_fail(r, NULL, "empty file");
    if (root->type != YAML_MAPPING_NODE)
        return hx_fail(r, root, "the document must be a mapping");
    ayr_field keys[] = {{"attnconf_expected", 0, NULL},
                        {"backend", 0, NULL},
                        {"version", 0, NULL},
                        {"expect", 0, NULL}};
    ayr_walk_at at;
    ayr_walk_result walked = ayr_walk(r->doc, root, keys, 4, NULL, NULL, &at);
    if (walked == AYR_WALK_DUPLICATE)
        return hx_fail(r, at.key, "duplicate key '%s'", at.name);
    if (walked != AYR_WALK_OK)
        return hx_fail(r, at.key,
                       "unknown key '%s' (known: attnconf_expected, backend, version, expect)",
                       at.name ? at.name : "?");
    const yaml_node_t *ver = keys[0].val, *backend = keys[1].val, *version = keys[2].val,
                      *expect = keys[3].val;
    if (!ver)
        return hx_fail(r, root, "attnconf_expected: missing (the format version, 1)");
    const char *vs = hx_scalar(ver);
    if (!vs || strcmp(vs, "1") != 0)
        return hx_fail(r, ver,
                       "attnconf_expected: unsupported format version '%s' (this "
                       "harness reads 1)",
                       vs ? vs : "?");
    const char *s;
    if (!backend)
        return hx_fail(r, root, "backend: missing");
    if (hx_text(r, backend, "backend", &s) || !(f->backend = hx_dup(s)))
        return -1;
    if (!version)
        return hx_fail(r, root, "version: missing");
    if (hx_text(r, version, "version", &s) || !(f->version = hx_dup(s)))
        return -1;
    if (!expect)
        return hx_fail(r, root, "expect: missing (an empty list [] when the backend conforms)");
    if (expect->type != YAML_SEQUENCE_NODE)
        return hx_fail(r, expect, "expect: must be a list of entries");
    size_t n = (size_t)(expect->data.sequence.items.top - expect->data.sequence.items.start);
    if (n > HX_MAX_ENTRIES)
        return hx_fail(r, expect, "expect: %zu entries, over the limit of %d", n, HX_MAX_ENTRIES);
    f->entries = calloc(n ? n : 1, sizeof *f->entries);
    if (!f->entries)
        return hx_fail(r, expect, "out of memory");
    for (size_t i = 0; i < n; i++) {
        const yaml_node_t *m = yaml_document_get_node(r->doc, expect->data.sequence.items.start[i]);
        f->n = i + 1; /* so hx_free releases what a failing entry already allocated */
        if (hx_read_entry(r, m, &f->entries[i]))
            return -1;
        const hx_entry *e = &f->entries[i];
        for (size_t j = 0; j <= i; j++)
            for (size_t a = 0; a < f->entries[j].npatterns; a++)
                for (size_t b = 0; b < e->npatterns; b++)
                    if ((j < i || a < b) && !f->entries[j].cpu_lacks == !e->cpu_lacks &&
                        strcmp(f->entries[j].patterns[a], e->patterns[b]) == 0)
                        return hx_fail(r, m, "case: '%s' is listed twice (first on line %d)",
                                       e->patterns[b], f->entries[j].line);
    }
    return 0;
}

int hx_load(const char *path, hx_file *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    hx_reader r = {path, NULL, err, errlen};
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return hx_fail(&r, NULL, "%s", strerror(errno));
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(fp);
        return hx_fail(&r, NULL, "not a regular file");
    }
    if (sb.st_size > (off_t)HX_MAX_FILE_BYTES) {
        fclose(fp);
        return hx_fail(&r, NULL, "file is %lld bytes, over the %u-byte limit",
                       (long long)sb.st_size, HX_MAX_FILE_BYTES);
    }
    /* Read whole (bounded), then the case files' bounded pre-pass (depth, nodes, scalar size,
     * no anchors or aliases, one document) before libyaml builds a tree. */
    unsigned char *buf = malloc((size_t)sb.st_size + 1);
    size_t len = buf ? fread(buf, 1, (size_t)sb.st_size + 1, fp) : 0;
    int read_err = !buf || ferror(fp);
    fclose(fp);
    if (read_err) {
        free(buf);
        return hx_fail(&r, NULL, "%s", buf ? "cannot read the file" : "out of memory");
    }
    if (len > HX_MAX_FILE_BYTES || ayr_prescan(path, buf, len, err, errlen) != 0) {
        if (len > HX_MAX_FILE_BYTES)
            hx_fail(&r, NULL, "file grew over the %u-byte limit while read", HX_MAX_FILE_BYTES);
        free(buf);
        return -1;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser)) {
        free(buf);
        return hx_fail(&r, NULL, "out of memory");
    }
    yaml_parser_set_input_string(&parser, buf, len);
    if (!yaml_parser_load(&parser, &doc)) {
        snprintf(err, errlen, "%s:%lu:%lu: YAML: %s", path,
                 (unsigned long)parser.problem_mark.line + 1,
                 (unsigned long)parser.problem_mark.column + 1,
                 parser.problem ? parser.problem : "parse error");
        yaml_parser_delete(&parser);
        free(buf);
        return -1;
    }
    r.doc = &doc;
    out->path = hx_dup(path);
    int rc = out->path ? hx_read_root(&r, out) : hx_fail(&r, NULL, "out of memory");
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    free(buf);
    if (rc)
        hx_free(out);
    return rc;
}

/* A cpu_lacks entry took `id` on this CPU: the unconditional entry that takes it on other CPUs
 * (the first after it to match) counts the hit too, so it is not stale here for that. */
static void hx_shadow(hx_file *f, size_t from, const char *id)
{
    for (size_t j = from; j < f->n; j++)
        for (size_t q = 0; !f->entries[j].cpu_lacks && q < f->entries[j].npatterns; q++)
            if (fnmatch(f->entries[j].patterns[q], id, 0) == 0) {
                f->entries[j].hits[q]++;
                return;
            }
}

hx_entry *hx_match(hx_file *f, const char *id)
{
    for (size_t i = 0; i < f->n; i++)
        for (size_t k = 0; f->entries[i].applies && k < f->entries[i].npatterns; k++)
            if (fnmatch(f->entries[i].patterns[k], id, 0) == 0) {
                f->entries[i].hits[k]++;
                if (f->entries[i].cpu_lacks)
                    hx_shadow(f, i + 1, id);
                return &f->entries[i];
            }
    return NULL;
}

int hx_status_matches(const hr_result *r)
{
    /* Output that differs from run to run (`varies`: uninitialised memory) can come out right
     * by chance, all zeros where zeros are due: such a PASS is the same finding, not a fix, and
     * must not turn a run red. */
    if (r->expect_entry)
        return r->status == r->expect_status ||
               (r->expect_varies[0] && r->expect_status == HR_FAIL && r->status == HR_PASS);
    return r->status == HR_PASS || r->status == HR_EXPECTED_ERROR;
}

size_t hx_apply(hx_file *f, hr_run *run)
{
    size_t unexpected = 0;
    for (size_t i = 0; i < run->count; i++) {
        hr_result *r = &run->results[i];
        const hx_entry *e = hx_match(f, r->id);
        r->has_expect = 1;
        r->expect_entry = e != NULL;
        /* Without an entry the case must conform: PASS, or EXPECTED_ERROR where it must be
         * rejected (hx_status_matches accepts both; PASS stands for "conforms" here). */
        r->expect_status = e ? e->status : HR_PASS;
        r->expect_clause = e ? e->clause : 0;
        snprintf(r->expect_pattern, sizeof r->expect_pattern, "%s", e ? e->pattern : "");
        snprintf(r->expect_reason, sizeof r->expect_reason, "%s", e ? e->reason : "");
        snprintf(r->expect_upstream, sizeof r->expect_upstream, "%s",
                 e && e->upstream ? e->upstream : "");
        snprintf(r->expect_varies, sizeof r->expect_varies, "%s", e && e->varies ? e->varies : "");
        unexpected += !hx_status_matches(r);
    }
    return unexpected;
}

void hx_free(hx_file *f)
{
    if (!f)
        return;
    for (size_t i = 0; i < f->n; i++) {
        for (size_t k = 0; k < f->entries[i].npatterns; k++)
            free(f->entries[i].patterns[k]);
        free(f->entries[i].patterns);
        free(f->entries[i].hits);
        free(f->entries[i].pattern);
        free(f->entries[i].reason);
        free(f->entries[i].upstream);
        free(f->entries[i].varies);
        free(f->entries[i].cpu_lacks);
    }
    free(f->entries);
    free(f->path);
    free(f->backend);
    free(f->version);
    memset(f, 0, sizeof *f);
}
