/* read.c — strict reader of case format v2 (cases/FORMAT.md): the file, the keys every case has,
 * and the op's own keys through the op table (op.h).
 *
 * The YAML itself is read by attncase/yread.h: the bounded first pass, the PyYAML-1.1 typing
 * and the "file:line:col: field: reason" errors are the same for every field of every op. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <yaml.h>

#include "fields.h"
#include "op.h"

static int read_case(acase__rd *r, yaml_node_t *root, acase *c)
{
    ayr *y = &r->y;
    /* The version first, so a file of another version is reported as such and not as a pile
     * of unknown keys. */
    if (root->type != YAML_MAPPING_NODE)
        return ayr_fail(y, root, "(document)", "expected a mapping (a case), got a %s",
                        root->type == YAML_SCALAR_NODE ? "scalar" : "sequence");
    yaml_node_t *ver = NULL;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = ayr_node(y, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strcmp(ayr_text(k), "attnconf_case") == 0) {
            ver = ayr_node(y, p->value);
            break;
        }
    }
    if (!ver)
        return ayr_fail(y, root, "attnconf_case",
                        "required key missing (not an attnconf case file?)");
    int64_t version;
    if (ayr_int(y, ver, "attnconf_case", &version))
        return -1;
    if (version != ACASE_FORMAT_VERSION)
        return ayr_fail(y, ver, "attnconf_case",
                        "unsupported format version %lld (this reader reads %d)",
                        (long long)version, ACASE_FORMAT_VERSION);

    ayr_field s[] = {
        {"attnconf_case", 1, NULL}, {"id", 1, NULL},     {"description", 1, NULL},
        {"rules", 1, NULL},         {"op", 1, NULL},     {"requires", 1, NULL},
        {"params", 1, NULL},        {"inputs", 0, NULL}, {"expected", 0, NULL},
        {"tolerance", 0, NULL},     {"steps", 0, NULL},  {"pool", 0, NULL},
    };
    enum {
        F_VER,
        F_ID,
        F_DESC,
        F_RULES,
        F_OP,
        F_REQ,
        F_PARAMS,
        F_INPUTS,
        F_EXP,
        F_TOL,
        F_STEPS,
        F_POOL
    };
    if (ayr_map(y, root, "", s, sizeof s / sizeof s[0]))
        return -1;

    const char *str;
    if (ayr_str(y, s[F_ID].val, "id", &str))
        return -1;
    if (strlen(str) >= ACASE_ID_MAX || !acase__dotted_valid(str, 3))
        return ayr_fail(y, s[F_ID].val, "id",
                        "expected [a-z0-9_]+ components joined by '.', at least 3, under %d bytes",
                        ACASE_ID_MAX);
    snprintf(c->id, sizeof c->id, "%s", str);

    if (ayr_str(y, s[F_DESC].val, "description", &str))
        return -1;
    if (!(c->description = strdup(str)))
        return ayr_fail(y, s[F_DESC].val, "description", "out of memory");

    yaml_node_t *n = s[F_RULES].val;
    if (ayr_seq(y, n, "rules", "a sequence of rule ids", NULL))
        return -1;
    if (ayr_seq_len(n) < 1 || ayr_seq_len(n) > ACASE_MAX_RULES)
        return ayr_fail(y, n, "rules", "expected 1..%d rule ids, got %zu", ACASE_MAX_RULES,
                        ayr_seq_len(n));
    for (size_t i = 0; i < ayr_seq_len(n); i++) {
        char fi[AYR_FIELD_MAX];
        yaml_node_t *it = ayr_item_at(y, n, "rules", i, fi);
        if (!it || ayr_str(y, it, fi, &str))
            return -1;
        if (!acase__dotted_valid(str, 1))
            return ayr_fail(y, it, fi, "expected [a-z0-9_]+ components joined by '.', got '%s'",
                            str);
        for (int j = 0; j < c->nrules; j++)
            if (strcmp(c->rules[j], str) == 0)
                return ayr_fail(y, it, fi, "duplicate rule '%s'", str);
        if (!(c->rules[c->nrules] = strdup(str)))
            return ayr_fail(y, it, fi, "out of memory");
        c->nrules++;
    }

    if (ayr_str(y, s[F_OP].val, "op", &str))
        return -1;
    const struct acase_op_impl *op = acase__op_by_name(str);
    if (!op)
        return ayr_fail(y, s[F_OP].val, "op",
                        "unknown op '%s' (expected sdpa, mask, cache or paged)", str);
    c->op = op->op;
    if (s[F_POOL].val && c->op != ACASE_OP_PAGED)
        return ayr_fail(y, s[F_POOL].val, "pool", "only for op paged");

    n = s[F_REQ].val;
    if (ayr_seq(y, n, "requires", "a sequence of capability names", NULL))
        return -1;
    for (size_t i = 0; i < ayr_seq_len(n); i++) {
        char fi[AYR_FIELD_MAX];
        yaml_node_t *it = ayr_item_at(y, n, "requires", i, fi);
        if (!it || ayr_str(y, it, fi, &str))
            return -1;
        uint64_t bit = acase_cap_from_name(str);
        if (!bit)
            return ayr_fail(y, it, fi, "unknown capability '%s'", str);
        if (c->requires & bit)
            return ayr_fail(y, it, fi, "duplicate capability '%s'", str);
        c->requires |= bit;
    }

    struct acase_op_nodes nodes = {.root = root,
                                   .params = s[F_PARAMS].val,
                                   .inputs = s[F_INPUTS].val,
                                   .expected = s[F_EXP].val,
                                   .tolerance = s[F_TOL].val,
                                   .steps = s[F_STEPS].val,
                                   .pool = s[F_POOL].val};
    if (op->read(r, &nodes, c))
        return -1;

    /* Cross-field rules (shapes agree, requires covers the content, ...). */
    char field[AYR_FIELD_MAX], why[256];
    if (acase_validate_field(c, field, sizeof field, why, sizeof why))
        return ayr_fail_at(y, ayr_mark(y, field), field, "%s", why);
    return 0;
}

int acase_load_mem(const char *path, const void *data, size_t len, acase **out, char *err,
                   size_t errlen)
{
    if (out)
        *out = NULL;
    if (!path || !out || (!data && len)) {
        acase__errf(err, errlen, "acase_load_mem: NULL argument");
        return -1;
    }
    if (len > (size_t)ACASE_MAX_FILE_BYTES) {
        acase__errf(err, errlen,
                    "%s: file is over the %lld-byte limit of a case file (give large tensors as "
                    "generate: specs)",
                    path, (long long)ACASE_MAX_FILE_BYTES);
        return -1;
    }
    const unsigned char *bytes = data ? data : (const unsigned char *)"";
    yaml_document_t doc;
    if (ayr_load(path, bytes, len, &doc, err, errlen))
        return -1;
    acase__rd *r = calloc(1, sizeof *r);
    acase *c = acase_new();
    int rc = -1;
    if (!r || !c) {
        acase__errf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    r->y.path = path;
    r->y.doc = &doc;
    r->y.err = err;
    r->y.errlen = errlen;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        acase__errf(err, errlen, "%s:1:1: (document): empty file, expected a case mapping", path);
        goto done;
    }
    /* ayr_prescan refused a second document, so the stream ends here. */
    if (read_case(r, root, c))
        goto done;
    if (!(c->path = strdup(path))) {
        acase__errf(err, errlen, "%s: out of memory", path);
        goto done;
    }
    *out = c;
    c = NULL;
    rc = 0;
done:
    yaml_document_delete(&doc);
    acase_free(c);
    free(r);
    return rc;
}

int acase_load_file(const char *path, acase **out, char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    if (!path || !out) {
        acase__errf(err, errlen, "acase_load_file: NULL argument");
        return -1;
    }
    FILE *f = acase__open_case_file(path, err, errlen);
    if (!f)
        return -1;
    /* libyaml keeps the whole document tree in memory, so bound the file before reading it
     * (fstat; reading also stops one byte past the limit, should the file grow meanwhile). */
    struct stat st;
    int have_st = fstat(fileno(f), &st) == 0;
    if (have_st && st.st_size > ACASE_MAX_FILE_BYTES) {
        acase__errf(err, errlen,
                    "%s: file is %lld bytes, over the %lld-byte limit of a case file (give large "
                    "tensors as generate: specs)",
                    path, (long long)st.st_size, (long long)ACASE_MAX_FILE_BYTES);
        fclose(f);
        return -1;
    }
    size_t cap = have_st && S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1 : 65536,
           len = 0;
    unsigned char *buf = malloc(cap);
    int rc = -1;
    if (!buf) {
        acase__errf(err, errlen, "%s: out of memory", path);
        goto out;
    }
    for (;;) {
        if (len == cap) {
            if (cap > (size_t)ACASE_MAX_FILE_BYTES) {
                acase__errf(err, errlen,
                            "%s: file is over the %lld-byte limit of a case file (give large "
                            "tensors as generate: specs)",
                            path, (long long)ACASE_MAX_FILE_BYTES);
                goto out;
            }
            size_t ncap = cap * 2 > (size_t)ACASE_MAX_FILE_BYTES + 1
                              ? (size_t)ACASE_MAX_FILE_BYTES + 1
                              : cap * 2;
            unsigned char *nb = realloc(buf, ncap);
            if (!nb) {
                acase__errf(err, errlen, "%s: out of memory", path);
                goto out;
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                acase__errf(err, errlen, "%s:1:1: yaml: cannot read the file", path);
                goto out;
            }
            break;
        }
    }
    rc = acase_load_mem(path, buf, len, out, err, errlen);
out:
    free(buf);
    fclose(f);
    return rc;
}
