/* fuzz_run.h — how `attnconf fuzz` runs a call and judges it (fuzz_run.c; internal). */
#ifndef ATTNCONF_FUZZ_RUN_H
#define ATTNCONF_FUZZ_RUN_H

#include <limits.h>
#include <stdint.h>

#include "backend/backend_load.h"
#include "fuzz.h"
#include "results/result.h"
#include "run/run.h"
#include "run/worker.h"

#define HF_BUF_MAX ((size_t)8 << 20)
#define HF_OUT_MAX ((int64_t)1 << 17)
#define HF_META_MAX_KV ((int64_t)1 << 15)
#define HF_SHRINK_SECONDS 30.0 /* shrinking stops here, keeping the smallest failure so far */
#define HF_SHRINK_ATTEMPTS 3000

/* The mapping shared with the worker: the case to run next, and the output it produced. */
typedef struct hf_shared {
    volatile int64_t out_n;
    double out[HF_OUT_MAX];
    unsigned char buf[HF_BUF_MAX]; /* hf_call_pack */
} hf_shared;

typedef struct hf_ctx {
    hf_shared *sh;
    int isolated;
    hb_backend hb;
    hw_worker w;
    hw_config wc;
    hb_open_opts oo;
    run_ctx rn;
    uint64_t caps;
    int meta_only; /* --meta-only: a value mismatch with the reference is not a failure */
    char name[128], version[256];
    size_t seq;
} hf_ctx;

/* What went wrong with a call, so shrinking keeps failing the same way. */
typedef struct hf_fail {
    int meta;         /* -1 differential, else the HF_META_* relation */
    hr_status status; /* differential: the status */
    uint64_t pick;    /* metamorphic: the derivation's choice */
    /* the call's result message whole (a backend's text in it is clipped already), after a
     * few words naming the call */
    char message[sizeof(((hr_result *)0)->message) + 160];
} hf_fail;

/* hw_config.get_case of the fuzz worker: ud is the hf_shared mapping. */
const acase *hf_worker_case(void *ud, size_t i);

/* Differential check of one call: 1 failing (*r bad; with --meta-only a FAIL does not count),
 * 0 passing, 2 not run (unsupported or unexpressible, or a capability the call needs is
 * missing), -1 internal error (err set).  With keep, the built case is handed back (free it). */
int hf_check_call(hf_ctx *x, const hf_call *call, const char *id, hr_result *r, acase **keep,
                  char *err, size_t errlen);

/* Metamorphic check `rel` (HF_META_*, choice `pick`) of a call.  Returns 1 failing (*f filled;
 * a derived call failing its own differential check counts too), 0 passing, 2 not applicable
 * or not run, -1 internal error.  With write_dir, the failing pair is written there as case
 * files (the derived calls with the backend's own base output as expected values, the bound
 * the sum of both calls'), their paths appended to written[*nw]. */
int hf_check_meta(hf_ctx *x, int rel, uint64_t pick, const hf_call *base, const char *id,
                  hf_fail *f, const char *write_dir, char written[][PATH_MAX], int *nw, char *err,
                  size_t errlen);

/* Greedy shrinking: the first candidate (hf_shrink_candidate) that still fails as f says
 * replaces *best and the search starts over; stops when none does or the budget is spent. */
void hf_shrink(hf_ctx *x, hf_call *best, const char *id, const hf_fail *f, int *steps,
               int *attempts);

#endif
