/* paged_mutants.h — test-only paged KV cache mutants: the reference plugin with one paging bug.
 *
 * reference_backend.c + reference_paged.c compiled with -DATTNCONF_PAGED_MUTANT=<number> (an
 * RPM_* constant) and linked with paged_mutants.c; paged_append / paged_sdpa then go to
 * rpm_append / rpm_sdpa, a small paged kernel of its own (validate as the reference, gather each
 * row through the table, attnref_sdpa over it) with the one bug.  Each is a bug class of issue
 * 21 that real paged kernels have had (SPEC clause 23); conformance/tests/CMakeLists.txt holds
 * one "caught" test and one proof count each. */
#ifndef ATTNCONF_PAGED_MUTANTS_H
#define ATTNCONF_PAGED_MUTANTS_H

#include "attnref/paged.h"

#define RPM_LAST_FULL 1    /* the last page read as P slots: L_b taken as n_b * P */
#define RPM_LAST_EMPTY 2   /* last_page_len taken as L_b % P: a full last page counts 0 keys */
#define RPM_BOUNDARY 3     /* the page of position p taken from entry (p + 1) / P */
#define RPM_ROW 4          /* table rows read with the pitch max_b ceil(L_b / P), not the width */
#define RPM_SHARED_WRITE 5 /* an append writes through row 0's table (into row 0's pages) */
#define RPM_STALE_TAIL 6   /* the whole last page enters the softmax, the tail weighted by 0 */

#if !defined(ATTNCONF_PAGED_MUTANT)
#error "paged_mutants.h is only for paged mutant builds: define ATTNCONF_PAGED_MUTANT"
#elif ATTNCONF_PAGED_MUTANT == RPM_LAST_FULL
#define RPM_NAME "mutant_paged_last_full"
#elif ATTNCONF_PAGED_MUTANT == RPM_LAST_EMPTY
#define RPM_NAME "mutant_paged_last_empty"
#elif ATTNCONF_PAGED_MUTANT == RPM_BOUNDARY
#define RPM_NAME "mutant_paged_boundary"
#elif ATTNCONF_PAGED_MUTANT == RPM_ROW
#define RPM_NAME "mutant_paged_row"
#elif ATTNCONF_PAGED_MUTANT == RPM_SHARED_WRITE
#define RPM_NAME "mutant_paged_shared_write"
#elif ATTNCONF_PAGED_MUTANT == RPM_STALE_TAIL
#define RPM_NAME "mutant_paged_stale_tail"
#else
#error "unknown ATTNCONF_PAGED_MUTANT"
#endif
#define RPM_BREAKS "23"

int rpm_sdpa(const attnref_paged_args *a, attnref_tensor *out, attnref_diag *diag);
int rpm_append(const attnref_paged_append_args *a, attnref_diag *diag);

#endif
