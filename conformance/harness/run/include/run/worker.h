/* worker.h — run a backend plugin's cases in a forked worker process (crash isolation).
 *
 * A backend is untrusted code: a segfault, abort, exit or endless loop in it must cost only
 * the case in flight, never the run.  The harness forks a worker that loads and opens the
 * backend itself (so a library that starts threads at load, like MLX or ggml, is never forked
 * after they exist), sends back a hello (name, version, capabilities, options or the load
 * error), then runs one case per request: the parent sends a case index over a socketpair, the
 * worker runs run_case on its copy of the loaded cases (it is a fork, so they are in its
 * memory) and sends back the hr_result, a fixed-size struct.  A worker that dies or misses the deadline
 * makes that case CRASH or TIMEOUT, and the next case gets a fresh worker.
 */
#ifndef ATTNCONF_WORKER_H
#define ATTNCONF_WORKER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attncase/case.h"
#include "backend/backend_load.h"
#include "results/result.h"
#include "run/run.h"

/* --case-timeout when none is given. */
#define HW_DEFAULT_CASE_TIMEOUT_S 120.0

/* What a worker needs: how to load the backend, the runner (its backend member is set in the
 * worker), and the cases by index (called in the worker, on its copy of the parent's memory).
 * With rn NULL the worker only loads the backend, sends its hello and exits (hw_probe). */
typedef struct hw_config {
    const char *spec;
    const char *builtin_dir;
    const hb_open_opts *oo;
    const run_ctx *rn;
    double case_timeout_s;     /* > 0 */
    uint64_t memory_limit_mib; /* RLIMIT_AS of the worker; 0 = none */
    const acase *(*get_case)(void *ud, size_t i);
    void *ud;
} hw_config;

/* Bytes of the option list a hello carries (truncated with a last "  ..." line beyond). */
#define HW_OPTIONS_TEXT 8192

/* The worker's first message: everything `attnconf backend-info` prints about the backend.
 * Fixed-size, as it crosses a socketpair. */
typedef struct hw_hello {
    int ok; /* 1 loaded and opened; 0 err says why */
    char err[1024];
    char name[128];
    char version[256];
    char path[4096];
    uint64_t caps;
    uint32_t noptions;             /* options the table lists (at most 256 are read) */
    char options[HW_OPTIONS_TEXT]; /* one "  KEY (default: D): HELP\n" line per option */
    char device[256]; /* a device backend's device_info as one line ("opencl 0: NAME, N MiB");
                         "" for a host backend */
} hw_hello;

typedef struct hw_worker {
    pid_t pid;  /* 0 = none running */
    int fd;     /* the parent's end of the socketpair */
    char *note; /* shared page: the fault handler's explanation (run.h) */
    size_t note_len;
} hw_worker;

/* Fork a worker and wait for its hello (bounded by the case timeout).  Returns 0 with *hello
 * filled (hello->ok says whether the backend loaded), or -1 with hello->err set (the worker
 * could not be started or died before its hello; no worker is left running). */
int hw_start(hw_worker *w, const hw_config *cfg, hw_hello *hello);

/* Run case i (whose result r the parent has begun with run_result_begin) in the worker.  On a
 * result, *r is the worker's.  On death or timeout the worker is reaped, r becomes CRASH or
 * TIMEOUT with the reason, and w is left stopped (w->pid == 0) for hw_start. */
void hw_run(hw_worker *w, const hw_config *cfg, size_t i, hr_result *r);

/* Ask the worker to close the backend and exit; kill it if it does not within a few seconds. */
void hw_stop(hw_worker *w);

/* Load and open a plugin in a worker only to describe it (backend-info, bench's up-front
 * check), so a plugin that crashes or hangs while loading costs an error message, not the
 * harness.  Loading is bounded by timeout_s.  Returns 0 with *hello filled, or -1 with
 * hello->err saying why (a load error "PATH: problem", or the worker's death or silence); no
 * worker is left running either way. */
int hw_probe(const char *spec, const char *builtin_dir, const hb_open_opts *oo, double timeout_s,
             hw_hello *hello);

/* Fill *hello (ok = 1, name, version, path, capabilities, option list) from a loaded backend:
 * in the worker, and in process for an exec: adapter. */
void hw_describe(const hb_backend *hb, hw_hello *hello);

#endif
