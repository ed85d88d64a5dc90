/* run_cache.h — run an `op: cache` case (a sequence of KV cache steps) on a backend. */
#ifndef ATTNCONF_RUN_CACHE_H
#define ATTNCONF_RUN_CACHE_H

#include "attncase/case.h"
#include "results/result.h"
#include "run/run_ctx.h"

/* Run every step of c (op: cache) on rn->backend's cache members and fill *r: PASS, or the
 * first step that differs, "step I (OP): what differed", as FAIL (wrong state, mask, output,
 * or a wrong accept/reject, einexpressible on a step that must succeed), ERROR (the backend
 * failed a step that must succeed), NOT_SUPPORTED (it returned enotsup, or has no cache
 * members) or UNEXPRESSIBLE (einexpressible on a step that must be rejected).  run_case dispatches here
 * after the capability check. */
void run_cache_case(const run_ctx *rn, const acase *c, hr_result *r);

#endif
