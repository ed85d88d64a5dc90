/* reference_paged.h — the paged KV cache members of the reference plugin (ABI v1, sixth
 * revision; SPEC.md clause 23): thin adapters from attnconf_paged_args /
 * attnconf_paged_append_args to attnref/paged.h, compiled into reference_backend.c's table (and
 * so into every mutant built from it, the kernel_control one included).
 *
 * TEST-ONLY: compiled with -DATTNCONF_PAGED_MUTANT=<n> (RPM_* in mutants/paged_mutants.h) and
 * linked with paged_mutants.c, the two members go to rpm_sdpa / rpm_append, which carry one
 * deliberate paging bug. */
#ifndef ATTNCONF_REFERENCE_PAGED_H
#define ATTNCONF_REFERENCE_PAGED_H

#include "attnconf/backend.h"
#include "rb_common.h"

#define RP_CAPS ATTNCONF_CAP_PAGED

int rp_append(void *ctx, const attnconf_paged_append_args *args);
int rp_sdpa(void *ctx, const attnconf_paged_args *args);

/* The members in attnconf_backend's order, for the table initialiser. */
#define RP_TABLE_MEMBERS .paged_append = rp_append, .paged_sdpa = rp_sdpa

#endif
