/* run.h — run one loaded case on a loaded backend and classify the outcome. */
#ifndef ATTNCONF_RUN_H
#define ATTNCONF_RUN_H

#include <stddef.h>

#include "attncase/case.h"
#include "backend/backend_load.h"
#include "run/run_ctx.h"
#include "results/result.h"

/* Start a result for case `id`: zeroes *r, sets id, family, first_bad = -1 and the rerun
 * command `ARGV0 run --backend B [--backend-option K=V]... [--timeout T] [--case-timeout T]
 * --cases DIR --filter 'ID'` (every word shell-quoted). */
void run_result_begin(const run_ctx *rn, const char *id, hr_result *r);

/* Run case c on rn->backend and fill *r (which run_result_begin must have started).  Never
 * aborts: a backend error, a mismatch or an unusable case becomes a status and a message.
 * ATTNCONF_EINEXPRESSIBLE is UNEXPRESSIBLE where the case (or cache step) must be rejected,
 * and a FAIL, with HR_EINEXPRESSIBLE_VALID in its message, anywhere else. */
void run_case(const run_ctx *rn, const acase *c, hr_result *r);

/* One sdpa call of a case, laid out exactly as run_case hands it to a backend: the inputs in
 * read-only guarded copies in the case's layout (contiguous BHLD, a (B,L,H,D) buffer seen
 * through permuted strides, stride-0 broadcasts), the mask parameters the case requires, the
 * output buffer prefilled with NaN.  `attnconf repro` sends these same arguments.  Returns
 * the call, or NULL with *r set to an ERROR (an unusable case, out of memory).  Release it
 * with run_sdpa_release (NULL is fine). */
typedef struct run_sdpa_call run_sdpa_call;
run_sdpa_call *run_sdpa_prepare(const acase *c, hr_result *r);
const attnconf_sdpa_args *run_sdpa_args(const run_sdpa_call *sc);
void run_sdpa_release(run_sdpa_call *sc);

/* Copy what r reports of the case itself (its rule ids and description) from c; run_case
 * does it, and the parent of a worker that died on the case does it for the CRASH result. */
void run_result_case_info(const acase *c, hr_result *r);

/* In a worker process, on its main thread: install SIGSEGV/SIGBUS handlers that, when the
 * fault is in one of the guarded buffers run.c hands a backend (a guard page, or a read-only
 * input) or is the main thread's stack overflowing (the handler runs on an alternate stack),
 * write a one-line explanation into note (n bytes, e.g. shared memory the parent reads after
 * the worker died) before dying of the signal.  note is cleared. */
void run_fault_note_install(char *note, size_t n);

/* For `attnconf fuzz`'s metamorphic checks: from now on (in this process and in workers
 * forked later), every sdpa or mask output that passes the descriptor checks is copied as
 * doubles in logical row-major order to sink (at most max values; a larger one is not copied)
 * and its element count stored in *n.  The caller sets *n = -1 before a case to tell "no
 * usable output".  sink and n may be shared memory a worker writes.  NULL sink: off. */
void run_capture_outputs(double *sink, int64_t max, volatile int64_t *n);

#endif
