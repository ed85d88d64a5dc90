/* op.h — the table of case ops (not installed): what read.c, write.c, case.c and caps.c call for
 * the part of a case that belongs to its op (`op: sdpa`, `op: mask`, `op: cache`, `op: paged`).
 *
 * Each op is one slice, op_<name>.c, with its reader, checker, writer and capabilities, built
 * only on the layers below (attncase/yread.h, ywrite.h, fields.h, model.h, util.h): the
 * dispatchers call down through this table, an op never calls back up.  Adding an op is a new
 * slice, one ACASE_OP_* value and one row in op.c.
 *
 * Only forward declarations here: case.c includes this header, so it must not include
 * attncase/case.h back (that would make case and op one tangled module). */
#ifndef ATTNCASE_OP_H
#define ATTNCASE_OP_H

#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

struct acase;
struct acase__rd;
struct acase__chk;
struct ayw;

/* The top-level values of a case file that are the op's (NULL when absent).  The common keys
 * (attnconf_case, id, description, rules, op, requires) are read by read.c. */
struct acase_op_nodes {
    yaml_node_t *root;
    yaml_node_t *params, *inputs, *expected, *tolerance, *steps, *pool;
};

struct acase_op_impl {
    const char *name; /* the `op:` value */
    int op;           /* ACASE_OP_* */
    /* Read the op's keys into c (refusing those it does not take); 0, or -1 with the error
     * written. */
    int (*read)(struct acase__rd *r, const struct acase_op_nodes *n, struct acase *c);
    /* The op's cross-field rules, after the common ones (acase__chk_fail's contract). */
    int (*check)(struct acase__chk *k, const struct acase *c);
    /* Emit the op's keys and values into the open top-level mapping (c is valid). */
    void (*write)(struct ayw *w, const struct acase *c);
    /* The capabilities the op's content implies (acase_derive_requires). */
    uint64_t (*requires)(const struct acase *c);
    /* Free what the op hangs on the case beyond the common fields (may be NULL).  Called for
     * every op on every case: a case whose op changed after its parts were made still owns
     * them. */
    void (*free)(struct acase *c);
};

extern const struct acase_op_impl acase__op_mask, acase__op_sdpa, acase__op_cache, acase__op_paged;

/* The op with that ACASE_OP_* value / `op:` name, or NULL. */
const struct acase_op_impl *acase__op_by_id(int op);
const struct acase_op_impl *acase__op_by_name(const char *name);
/* The i-th op of the table (i from 0), NULL past the end. */
const struct acase_op_impl *acase__op_at(size_t i);

#endif
