/* run_step.c — the verdict of one step of a multi-step case (run_step.h). */
#include "run_step.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attnref/status.h"
#include "backend/plugin.h"

void run_step_set(run_step *x, hr_status s, const char *fmt, ...)
{
    char why[sizeof x->r->message - sizeof x->where - 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    x->r->status = s;
    /* where (< 64 bytes) + ": " + why fit the message */
    size_t w = strlen(x->where);
    memcpy(x->r->message, x->where, w);
    memcpy(x->r->message + w, ": ", 2);
    snprintf(x->r->message + w + 2, sizeof x->r->message - w - 2, "%s", why);
    for (char *p = x->r->message; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

const char *run_step_err(run_step *x)
{
    return clip_error(hb_last_error(x->hb), x->err, sizeof x->err);
}

void run_step_fail(run_step *x, int rc, hr_status other, const char *call)
{
    if (rc == ATTNCONF_EINEXPRESSIBLE)
        run_step_set(x, HR_FAIL, "%s " HR_EINEXPRESSIBLE_VALID ": %s", call, run_step_err(x));
    else
        run_step_set(x, rc == ATTNCONF_ENOTSUP ? HR_NOT_SUPPORTED : other, "%s returned %s: %s",
                     call, hb_code_name(rc), run_step_err(x));
}

int run_step_rc(run_step *x, int error, const char *call, int rc)
{
    if (hb_transport_failure(x->hb, rc)) {
        run_step_set(x, HR_ERROR, "%s: adapter failure: %s", call, run_step_err(x));
        return 1;
    }
    if (error) {
        const int want = error == ATTNREF_EDTYPE ? ATTNCONF_EDTYPE : ATTNCONF_EINVAL;
        if (rc == want)
            return 0;
        if (rc == ATTNCONF_EINEXPRESSIBLE)
            run_step_set(x, HR_UNEXPRESSIBLE,
                         "%s: the backend cannot write this invalid step in its API "
                         "(einexpressible, where %s is required): %s",
                         call, hb_code_name(want), run_step_err(x));
        else if (rc == ATTNCONF_OK)
            run_step_set(x, HR_FAIL, "%s accepted a step that must be rejected with %s", call,
                         hb_code_name(want));
        else
            run_step_set(x, HR_FAIL, "%s rejected with %s, expected %s: %s", call, hb_code_name(rc),
                         hb_code_name(want), run_step_err(x));
        return 1;
    }
    if (rc == ATTNCONF_OK)
        return 0;
    run_step_fail(x, rc, HR_ERROR, call);
    return 1;
}
