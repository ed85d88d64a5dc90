/* case.c — a case's lifetime and validation: acase_new / acase_free, the cross-field rules every
 * case has (id, rules, requires) around its op's own (op.h), and the directory listing. */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attncase/case.h"
#include "op.h"
#include "util.h"

/* ---- lifetime ------------------------------------------------------------------------- */

acase *acase_new(void)
{
    acase *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->op = ACASE_OP_SDPA;
    return c;
}

static void tensor_free(acase_tensor *t)
{
    free(t->data);
    t->data = NULL;
}

void acase_free(acase *c)
{
    if (!c)
        return;
    free(c->description);
    for (int i = 0; i < c->nrules && i < ACASE_MAX_RULES; i++)
        free(c->rules[i]);
    free(c->lengths);
    free(c->left_padding);
    free(c->sinks);
    free(c->segment_ids);
    free(c->block_ids);
    tensor_free(&c->q);
    tensor_free(&c->k);
    tensor_free(&c->v);
    tensor_free(&c->mask);
    free(c->expected.values);
    free(c->expected.row_check);
    free(c->row_atol);
    /* Every op's parts, not only c->op's: a case whose op was changed after its parts were made
     * still owns them. */
    for (size_t i = 0; acase__op_at(i); i++)
        if (acase__op_at(i)->free)
            acase__op_at(i)->free(c);
    free(c->path);
    free(c);
}

/* ---- validation ----------------------------------------------------------------------- */

static int check_requires(acase__chk *k, const acase *c)
{
    uint64_t known = 0;
    for (int b = 0; b < 64; b++)
        if (acase_cap_name(1ull << b))
            known |= 1ull << b;
    if (c->requires & ~known)
        return acase__chk_fail(k, "requires", "unknown capability bits 0x%llx",
                               (unsigned long long)(c->requires & ~known));
    uint64_t missing = acase_derive_requires(c) & ~c->requires;
    if (missing) {
        char names[256] = "";
        size_t len = 0;
        for (int b = 0; b < 64; b++) {
            if (!(missing & (1ull << b)))
                continue;
            int w = snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "",
                             acase_cap_name(1ull << b));
            if (w < 0 || (size_t)w >= sizeof names - len)
                break;
            len += (size_t)w;
        }
        return acase__chk_fail(k, "requires", "missing %s (implied by the case content)", names);
    }
    return 0;
}

int acase_validate_field(const acase *c, char *field, size_t fieldlen, char *why, size_t whylen)
{
    acase__chk k = {field, fieldlen, why, whylen};
    if (!c)
        return acase__chk_fail(&k, "(case)", "NULL case");
    if (!memchr(c->id, '\0', sizeof c->id) || !acase__dotted_valid(c->id, 3))
        return acase__chk_fail(&k, "id",
                               "expected [a-z0-9_]+ components joined by '.', at least 3");
    if (!c->description || !c->description[0])
        return acase__chk_fail(&k, "description", "must be a non-empty string");
    if (c->nrules < 1 || c->nrules > ACASE_MAX_RULES)
        return acase__chk_fail(&k, "rules", "expected 1..%d rule ids", ACASE_MAX_RULES);
    for (int i = 0; i < c->nrules; i++) {
        if (!c->rules[i] || !acase__dotted_valid(c->rules[i], 1))
            return acase__chk_fail(&k, "rules",
                                   "rule %d is not [a-z0-9_]+ components joined by '.'", i);
        for (int j = 0; j < i; j++)
            if (strcmp(c->rules[i], c->rules[j]) == 0)
                return acase__chk_fail(&k, "rules", "duplicate rule '%s'", c->rules[i]);
    }
    const struct acase_op_impl *op = acase__op_by_id((int)c->op);
    if (!op)
        return acase__chk_fail(&k, "op", "unknown op %d", (int)c->op);
    if (op->check(&k, c))
        return -1;
    return check_requires(&k, c);
}

int acase_validate(const acase *c, char *err, size_t errlen)
{
    char field[96], why[256];
    if (acase_validate_field(c, field, sizeof field, why, sizeof why) != 0) {
        acase__errf(err, errlen, "%s: %s", field, why);
        return -1;
    }
    return 0;
}

/* ---- directory listing ---------------------------------------------------------------- */

typedef struct pathvec {
    char **v;
    size_t n, cap;
} pathvec;

static int pv_push(pathvec *pv, char *s)
{
    if (pv->n == pv->cap) {
        size_t cap = pv->cap ? pv->cap * 2 : 64;
        char **v = realloc(pv->v, cap * sizeof *v);
        if (!v)
            return -1;
        pv->v = v;
        pv->cap = cap;
    }
    pv->v[pv->n++] = s;
    return 0;
}

static char *path_join(const char *dir, const char *name)
{
    size_t dl = strlen(dir), nl = strlen(name);
    int slash = dl > 0 && dir[dl - 1] != '/';
    char *p = malloc(dl + (size_t)slash + nl + 1);
    if (!p)
        return NULL;
    memcpy(p, dir, dl);
    if (slash)
        p[dl] = '/';
    memcpy(p + dl + (size_t)slash, name, nl + 1);
    return p;
}

static int has_yaml_suffix(const char *name)
{
    size_t n = strlen(name);
    return n > 5 && strcmp(name + n - 5, ".yaml") == 0;
}

static int list_rec(const char *dir, int depth, pathvec *pv, char *err, size_t errlen)
{
    if (depth > 32) {
        acase__errf(err, errlen, "%s: directories nested too deeply (symlink loop?)", dir);
        return -1;
    }
    DIR *d = opendir(dir);
    if (!d) {
        acase__errf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno) {
                acase__errf(err, errlen, "%s: %s", dir, strerror(errno));
                rc = -1;
            }
            break;
        }
        if (de->d_name[0] == '.') /* ".", "..", and hidden files (editor backups, locks) */
            continue;
        char *p = path_join(dir, de->d_name);
        if (!p) {
            acase__errf(err, errlen, "out of memory");
            rc = -1;
            break;
        }
        struct stat st, lst;
        if (lstat(p, &lst) != 0) {
            free(p); /* gone since readdir */
            continue;
        }
        const int is_dir = stat(p, &st) == 0 && S_ISDIR(st.st_mode);
        /* A link to a directory is not followed: it may lead out of the tree (to /) or back
         * into it (a loop).  A link to a case file is read like the file. */
        if (is_dir && S_ISLNK(lst.st_mode)) {
            free(p);
            continue;
        }
        if (is_dir) {
            rc = list_rec(p, depth + 1, pv, err, errlen);
            free(p);
            if (rc)
                break;
        } else if (has_yaml_suffix(de->d_name)) {
            /* Any other *.yaml is listed, a dangling link, a FIFO or a device included: the
             * loader refuses it by name (acase__open_case_file, which never opens a FIFO),
             * where skipping it here would drop a case without a word. */
            if (pv_push(pv, p) != 0) {
                free(p);
                acase__errf(err, errlen, "out of memory");
                rc = -1;
                break;
            }
        } else {
            free(p);
        }
    }
    closedir(d);
    return rc;
}

static int cmp_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int acase_list_dir(const char *dir, char ***paths, char *err, size_t errlen)
{
    pathvec pv = {0};
    if (!dir || !paths) {
        acase__errf(err, errlen, "acase_list_dir: NULL argument");
        return -1;
    }
    *paths = NULL;
    if (list_rec(dir, 0, &pv, err, errlen) != 0) {
        for (size_t i = 0; i < pv.n; i++)
            free(pv.v[i]);
        free(pv.v);
        return -1;
    }
    if (pv.n > (size_t)INT32_MAX) {
        for (size_t i = 0; i < pv.n; i++)
            free(pv.v[i]);
        free(pv.v);
        acase__errf(err, errlen, "%s: too many files", dir);
        return -1;
    }
    if (pv.n)
        qsort(pv.v, pv.n, sizeof *pv.v, cmp_paths);
    *paths = pv.v;
    return (int)pv.n;
}
