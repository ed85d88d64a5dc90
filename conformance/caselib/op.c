/* op.c — the table of op.h: one row per op slice, in the order of the `op:` error message. */
#include "op.h"

#include <string.h>

static const struct acase_op_impl *const ops[] = {&acase__op_sdpa, &acase__op_mask,
                                                  &acase__op_cache, &acase__op_paged};

const struct acase_op_impl *acase__op_at(size_t i)
{
    return i < sizeof ops / sizeof ops[0] ? ops[i] : NULL;
}

const struct acase_op_impl *acase__op_by_id(int op)
{
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (ops[i]->op == op)
            return ops[i];
    return NULL;
}

const struct acase_op_impl *acase__op_by_name(const char *name)
{
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(ops[i]->name, name) == 0)
            return ops[i];
    return NULL;
}
