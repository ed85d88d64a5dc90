/* run_paged.h — run an `op: paged` case (appends and attentions on a paged KV cache) on a
 * backend. */
#ifndef ATTNCONF_RUN_PAGED_H
#define ATTNCONF_RUN_PAGED_H

#include "attncase/case.h"
#include "results/result.h"
#include "run/run_ctx.h"

/* Run every step of c (op: paged) through the backend's paged_append / paged_sdpa and fill *r:
 * PASS, or the first step that differs, "step I (OP): what differed", as FAIL (a new token's
 * slot without its bits, any other pool byte changed, an output out of tolerance, a wrong
 * accept or reject), INCORRECT_DTYPE, ERROR (a call that must succeed failed), NOT_SUPPORTED
 * (enotsup, or no paged members) or UNEXPRESSIBLE.  The pool lives in guarded mappings,
 * read-only during an attention and writable during an append; the table and the lengths are
 * read-only copies.  run_case dispatches here after the capability check. */
void run_paged_case(const run_ctx *rn, const acase *c, hr_result *r);

#endif
