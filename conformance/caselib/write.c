/* write.c — deterministic writer of case format v2: the keys every case has, then its op's own
 * through the op table (op.h).
 *
 * Block style at the top level, flow style for tensors and small mappings, no line folding
 * (width -1), fixed key order, and number texts that read back bit-exactly (FORMAT.md,
 * "Canonical form"; the emitter settings and the texts are ywrite.h's). */
#include <stdio.h>
#include <string.h>

#include <yaml.h>

#include "attncase/case.h"
#include "op.h"
#include "util.h"
#include "ywrite.h"

static void write_case(ayw *w, const acase *c, const struct acase_op_impl *op)
{
    char buf[32];
    ayw_begin(w);
    ayw_map(w, 0);

    ayw_plain(w, "attnconf_case");
    snprintf(buf, sizeof buf, "%d", ACASE_FORMAT_VERSION);
    ayw_plain(w, buf);
    ayw_plain(w, "id");
    ayw_string(w, c->id);
    ayw_plain(w, "description");
    ayw_scalar(w, c->description, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    ayw_plain(w, "rules");
    ayw_seq(w, 1);
    for (int i = 0; i < c->nrules; i++)
        ayw_string(w, c->rules[i]);
    ayw_seq_end(w);
    ayw_plain(w, "op");
    ayw_plain(w, op->name);
    ayw_plain(w, "requires");
    ayw_seq(w, 1);
    for (int b = 0; b < 64; b++)
        if (c->requires & (1ull << b))
            ayw_string(w, acase_cap_name(1ull << b));
    ayw_seq_end(w);

    op->write(w, c);

    ayw_map_end(w);
    ayw_end(w);
}

int acase_write(const acase *c, FILE *f, char *err, size_t errlen)
{
    if (!c || !f) {
        acase__errf(err, errlen, "acase_write: NULL argument");
        return -1;
    }
    if (acase_validate(c, err, errlen) != 0)
        return -1;
    /* acase_validate refused an unknown op. */
    const struct acase_op_impl *op = acase__op_by_id((int)c->op);
    ayw w;
    if (ayw_init(&w, f)) {
        acase__errf(err, errlen, "out of memory");
        return -1;
    }
    write_case(&w, c, op);
    int rc = 0;
    if (w.failed || !yaml_emitter_flush(&w.em)) {
        acase__errf(err, errlen, "%s: yaml emitter: %s", c->id,
                    w.em.problem ? w.em.problem : "write error");
        rc = -1;
    } else if (fflush(f) != 0 || ferror(f)) {
        acase__errf(err, errlen, "%s: write error", c->id);
        rc = -1;
    }
    ayw_delete(&w);
    return rc;
}
