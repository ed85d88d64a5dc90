/* run_step.h — the verdict of one step of a multi-step case (private to the run room): the
 * cache runner (run_cache.c) and the paged runner (run_paged.c) judge each step's return code
 * and word its failure the same way. */
#ifndef ATTNCONF_RUN_STEP_H
#define ATTNCONF_RUN_STEP_H

#include "backend/call.h"
#include "common/clip.h"
#include "results/result.h"

typedef struct run_step {
    const hb_backend *hb;
    hr_result *r;
    char where[64];         /* "step 7 (update)": the prefix of every message */
    char err[CLIP_MAX + 1]; /* the backend's last_error, clipped (run_step_err) */
} run_step;

/* r's status and message, "<where>: <fmt...>" on one line (newlines become spaces). */
__attribute__((format(printf, 3, 4))) void run_step_set(run_step *x, hr_status s, const char *fmt,
                                                        ...);
/* The backend's last_error, its head and tail when long (common/clip.h). */
const char *run_step_err(run_step *x);
/* A call that must succeed returned rc != 0: NOT_SUPPORTED for enotsup, FAIL for
 * einexpressible (an input that must succeed is never unexpressible), else `other`. */
void run_step_fail(run_step *x, int rc, hr_status other, const char *call);
/* The return code of a step's call against what the step expects (error: 0, or the ATTNREF_*
 * code it must be rejected with).  Returns 1 when the case is decided (a failure), 0 when the
 * runner goes on (success, or the expected rejection, whose state still needs checking). */
int run_step_rc(run_step *x, int error, const char *call, int rc);

#endif
