/* cpu_paged.h — the cpu plugin's paged KV members (ABI v1 sixth revision, SPEC.md clause 23):
 * argument unpacking and validation, paged_append (a copy into the pool through the block
 * table) and paged_sdpa (validation here, the computation cpu_paged_run: the contiguous
 * kernels reading each page in place).
 *
 * Validation follows the header comment of attnconf_backend.paged_sdpa: EINVAL for a NULL
 * argument, a struct_size below the sixth revision's struct, a bad descriptor or rank, shapes
 * that disagree (B, Hkv, P, D, Dv; Hq % Hkv), table_width < 1, a negative length, a length
 * beyond the table (ceil(L / P) > table_width; for an append the length after it),
 * query_lens[b] outside 0..min(Lq, L_b), new_lens[b] outside 0..S, a page index outside
 * 0..num_pages-1 among the entries the call uses, an output buffer too small, and the parameter
 * values attnref_sdpa rejects (scale, window, the terms of clauses 20-22: checked by
 * attnref_sdpa_check itself, so the messages are the reference's); EDTYPE for q / k / v / pools
 * of different or non-float dtypes.  Nothing is written on error.  Messages name the field
 * ("seq_lens[2]: ...", "block_table[1][3]: ...").
 */
#ifndef ATTNCONF_CPU_PAGED_H
#define ATTNCONF_CPU_PAGED_H

#include "attnconf/backend.h"
#include "cpu_sdpa.h"
#include "rb_common.h"

/* paged_sdpa on the engine; errors recorded on ctx (rb_fail).  Returns an ATTNCONF code. */
int cpu_paged_sdpa(rb_ctx *ctx, cpu_engine *e, const attnconf_paged_args *a);

/* paged_append: validate, then copy each new token's K and V rows into its slot (same dtype:
 * a bit copy).  Only those slots are written.  Returns an ATTNCONF code. */
int cpu_paged_append(rb_ctx *ctx, const attnconf_paged_append_args *a);

#endif
