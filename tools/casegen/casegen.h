/* casegen.h — building golden cases from the reference.
 *
 * A family file (fam_*.c) describes inputs; cg_emit computes the expected result with attnref,
 * derives the capabilities and the tolerance, and writes (or, with --check, compares) the file
 * <dir>/<family>/<id>.yaml.  casegen is a developer tool: an internal inconsistency (the
 * reference rejecting a case meant to pass, a duplicate id) stops it with a message.
 *
 * Adding a family (the first two components of the ids, "sdpa.window", one directory of cases/):
 *  1. Ids are <op>.<family>.<what>[.<dtype>] ([a-z0-9_], cg_id_dt for the dtype variants), each
 *     case citing the SPEC.md clauses it checks as rule ids "clause<N>.<name>" (tools/spec-table
 *     refuses a rule outside its clause list).
 *  2. Write the family as a function in a fam_*.c of its kind, or in a new fam_<name>.c: then add
 *     the file to casegen's sources in tools/CMakeLists.txt, declare the function under
 *     "Families" below and call it from main.c.  Build each case with cg_new / cg_sdpa and the
 *     input helpers, cg_expect_error for a must-reject case, and hand it to cg_emit (or
 *     cg_emit_rounded), which computes the expectation, requires and tolerance.
 *  3. A case the format cannot hold yet is a caselib change first: a field of an op is read,
 *     checked and written in that op's slice (conformance/caselib/op_<op>.c), a new op is a new
 *     slice and a row of op.c (conformance/caselib/op.h), and cases/FORMAT.md documents it.
 *  4. Regenerate: cmake --build build/h --target casegen && build/h/tools/casegen --out cases
 *     (deletes the files it no longer writes), then tools/spec-table for SPEC.md's clause table,
 *     and re-run cmake so the new cases/<family>/ gets its conformance.<backend>.<family> tests.
 *  5. Check: build/h/tools/casegen --check cases (ctest cases.regenerate_identical: the committed
 *     files are exactly what the sources write), ctest -L cases (PyYAML reads every case with
 *     the documented types, the clause table is current) and
 *     ctest -R 'conformance\.(reference|cpu)\.<family>$' (the built-in backends pass them);
 *     a divergence of a third-party implementation goes into conformance/expected/.
 */
#ifndef CASEGEN_H
#define CASEGEN_H

#include <stdint.h>

#include "attncase/case.h"
#include "attnref/dtype.h"

typedef struct cg {
    const char *dir; /* cases root */
    int check;       /* 1: compare with the files instead of writing */
    int count;       /* cases emitted */
    int mismatches;  /* --check: files missing or different */
    char **paths;    /* relative paths emitted, to find stale files */
    int npaths, cap;
} cg;

/* The three float dtypes, in the order families cross them: f32, f16, bf16. */
extern const attnref_dtype CG_DTYPES[3];

/* "<stem>.<dtype name>" into buf: the id of one dtype's variant of a case. */
const char *cg_id_dt(char *buf, size_t n, const char *stem, attnref_dtype dt);

/* Start a case: id, one-paragraph description, first spec rule id. */
acase *cg_new(acase_op op, const char *id, const char *description, const char *rule);
void cg_rule(acase *c, const char *rule);
/* An SDPA case with q, k generated in [-amp, amp) and v in [-1, 1), shapes q (b,hq,lq,d),
 * k (b,hkv,lk,d), v (b,hkv,lk,dv). */
acase *cg_sdpa(const char *id, const char *desc, const char *rule, attnref_dtype dt, int64_t b,
               int64_t hq, int64_t hkv, int64_t lq, int64_t lk, int64_t d, int64_t dv, double amp);
/* Set c->mask to the keep mask of the mask builder (SPEC clauses 3-5) for these parameters, as
 * BOOL, or as an additive mask in dt (0 / dt's finite minimum) when dt is a float dtype. */
void cg_builder_mask(acase *c, attnref_dtype dt, int64_t lq, int64_t offset, int64_t window,
                     int64_t batch, const int64_t *lengths, const int64_t *left_padding);

/* A generated rank-4 (or any rank) input; the seed is derived from the case id and the tensor
 * name, so every case's inputs are independent and stable under reordering. */
void cg_gen4(acase *c, acase_tensor *t, const char *name, attnref_dtype dt, int64_t b, int64_t h,
             int64_t l, int64_t d, double lo, double hi);
void cg_gen(acase *c, acase_tensor *t, const char *name, attnref_dtype dt, int ndim,
            const int64_t *shape, double lo, double hi);
/* An inline input: values rounded (RNE) to dt; for BOOL, nonzero = true. */
void cg_inline(acase_tensor *t, attnref_dtype dt, int ndim, const int64_t *shape,
               const double *values);
/* Overwrite one element (logical flat index) of an input; it is written inline from then on. */
void cg_poke(acase_tensor *t, int64_t flat, double value);

/* A malloc'd copy of n int64 values (NULL when a is NULL or n is 0). */
int64_t *cg_copy_i64(const int64_t *a, int64_t n);
/* NaN / +-inf in K and V at every (b, kv head, j) that no query row of batch row b keeps under
 * the case's parameters (SPEC clause 10); stops casegen when every slot is kept by some row. */
void cg_poison_excluded(acase *c);

/* The case must be rejected with this attnref status (ATTNREF_EDTYPE or ATTNREF_EINVAL). */
void cg_expect_error(acase *c, int status);

/* Compute, write/check, count, free c. */
void cg_emit(cg *g, acase *c);

/* Families. */
void fam_mask(cg *g);
void fam_sdpa(cg *g);
void fam_reports(cg *g);
void fam_paths(cg *g);
void fam_cache(cg *g); /* fam_cache.c: cache.* sequences (SPEC 14-18) */
void fam_params(cg *g);
void fam_exact(cg *g);
void fam_kinds(cg *g); /* fam_kinds.c: sentinels, overflow_qk, layout, decode, static */
void fam_terms(cg *g); /* fam_terms.c: sdpa.terms.*, mask.terms.* (SPEC 20-22) */
void fam_edges(cg *g); /* fam_edges.c: sdpa.edges.*, mask.edges.* (cases/EDGES.md) */
void fam_paged(cg *g); /* fam_paged.c: paged.* (SPEC 23) */

/* Tolerance (tolerance.c, SPEC.md clause 13): sets c->ulps / c->row_atol from the first-order
 * error bound (acase_sdpa_bound), then stops casegen unless every honest implementation
 * (honest.c) passes the case under its row modes. */
void cg_tolerance(acase *c);
/* The correctly-rounded form of a case (tolerance.c): every row still CLOSE after
 * cg_row_checks becomes EXACT and its expected values are rounded (RNE) to the output dtype.
 * Only for inputs on which every intermediate of an f32-accumulating kernel is exact
 * (fam_exact.c); cg_tolerance then proves it on each honest implementation. */
void cg_rows_rounded(acase *c);
/* cg_emit for such a case: cg_rows_rounded between the row checks and the tolerance. */
void cg_emit_rounded(cg *g, acase *c);

/* Honest implementations (honest.c): SDPA computed the ways real kernels do (f32 accumulation,
 * scores rounded only after scaling, P rounded to the dtype before P.V or kept in f32, two-pass,
 * online, split-K), each output element rounded once to the dtype.  cg_honest_sdpa writes
 * implementation `which` (0 .. cg_honest_count() - 1) of case c into out (numel, row-major
 * (B, Hq, Lq, Dv)), with the keys acase_sdpa_row_keys keeps; a row that keeps none is 0. */
int cg_honest_count(void);
const char *cg_honest_name(int which);
void cg_honest_sdpa(const acase *c, int which, double *out);
/* Per-row check modes (tolerance.c): rows that keep no key must be exactly 0 (clause 9); rows
 * whose kept keys are all at the additive mask's finite minimum are implementation-defined and
 * only need to be finite (clause 11); every other row is compared within tolerance. */
void cg_row_checks(acase *c);

#endif
