/* attncase/sdpa_rows.h — which keys an op: sdpa case keeps, and the per-row check modes that
 * follow from it (FORMAT.md `expected.row_checks`).
 *
 * One implementation for every producer of sdpa expectations (casegen's golden cases, the
 * harness's `attnconf fuzz`), so they cannot disagree on which rows are exact or finite.
 */
#ifndef ATTNCASE_SDPA_ROWS_H
#define ATTNCASE_SDPA_ROWS_H

#include <stdint.h>

#include "attncase/case.h"
#include "attnref/sdpa.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The reference's parameters for an op: sdpa case: scale, causal and offset, the mask
 * parameters and the terms of current models, borrowing c's arrays (valid while c is). */
attnref_sdpa_params acase_sdpa_params(const acase *c);

/* Whether query row (b, h, i) of case c keeps key j, by the intersection of SPEC clauses 3
 * (causal, bottom-right unless has_causal_offset), 19 (window W: j > off + i - W; lengths[b]:
 * j < lengths[b]; left_padding[b]: j >= left_padding[b]) and 6 (a false bool mask element or a
 * -inf additive one excludes).  *add receives the additive mask value of a kept key (0 without
 * an additive mask).  c must be a well-formed op: sdpa case (rank-4 q/k/v, in-range indices,
 * a mask broadcastable to (B, Hq, Lq, Lk) read from its logical data).  Returns 1 or 0. */
int acase_sdpa_keeps(const acase *c, int64_t b, int64_t h, int64_t i, int64_t j, double *add);

/* The check mode of each output row (SPEC clauses 9 and 11): ACASE_CHECK_EXACT for a row that
 * keeps no key (the output is exactly 0), ACASE_CHECK_FINITE for a row whose kept keys all
 * carry an additive value at or below half the mask dtype's finite minimum (implementation-
 * defined, only finiteness is checked) unless the case has sinks (the sink outweighs such keys:
 * the row is 0, clause 22), ACASE_CHECK_CLOSE otherwise.  Writes B*Hq*Lq modes into
 * mode (caller-allocated).  Returns the number of rows that are not CLOSE. */
int64_t acase_sdpa_row_modes(const acase *c, uint8_t *mode);

/* Set c->expected.row_check from acase_sdpa_row_modes: left NULL (every row CLOSE) when no row
 * needs another mode, else allocated with acase_expected_alloc_rows.  c->expected must already
 * have its (B, Hq, Lq, Dv) shape.  Returns 0, or -1 with err set (out of memory). */
int acase_sdpa_set_row_checks(acase *c, char *err, size_t errlen);

/* The correctly rounded form of a case whose inputs make every intermediate of an
 * f32-accumulating kernel exact (SPEC clause 13; casegen's sdpa.rounding, `attnconf fuzz`'s
 * correctly rounded draws): every CLOSE row becomes EXACT and its expected values are rounded
 * once (round to nearest even) to expected.dtype.  Call after acase_sdpa_set_row_checks, with
 * the unrounded binary64 expectation.  Returns 0, or -1 with err set (out of memory). */
int acase_sdpa_rows_rounded(acase *c, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
