/* run_ctx.h — what running a case needs besides the case (run.h and the op runners beside
 * run.c share it; a header of its own so that run.c can include the runners it dispatches to
 * without the runners including run.h back). */
#ifndef ATTNCONF_RUN_RUN_CTX_H
#define ATTNCONF_RUN_RUN_CTX_H

#include <stddef.h>

#include "attnconf/backend.h"
#include "backend/backend_load.h"

/* What a run needs besides the case: the backend and the words that re-run a case alone. */
typedef struct run_ctx {
    const hb_backend *backend;
    const char *argv0;       /* the harness as it should be re-invoked (absolute if it had '/') */
    const char *backend_arg; /* --backend as it should be re-given */
    const char *cases_dir;   /* --cases as it should be re-given */
    /* --backend-option pairs and --timeout as they should be re-given: a rerun without them
     * would run a differently configured backend. */
    const attnconf_option *options;
    size_t n_options;
    /* --timeout and --case-timeout in seconds, 0 = not given.  Numbers, not the text given:
     * the re-run command spells them in the fewest digits that read back to the same double,
     * so `--timeout 000...05` costs the command no more than `--timeout 5`. */
    double timeout_s;
    double case_timeout_s;
} run_ctx;

#endif
