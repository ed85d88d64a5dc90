/* run.c — run one loaded case on a loaded backend and classify the outcome.
 *
 * The harness owns every buffer it hands to a backend: inputs are laid out as the case says
 * (contiguous BHLD, or a (B,L,H,D) buffer seen through permuted strides); the output buffer has
 * 8 bytes per element (room for a wrong, wider dtype) and is prefilled with 0xFF bytes, a NaN in
 * every float dtype, so a backend that leaves elements unwritten fails instead of passing on
 * leftovers.  Sizes are bounded by the case limits
 * (ACASE_MAX_TENSOR_NUMEL) before anything is allocated.
 *
 * A backend is untrusted code, so every buffer it sees lives in its own mapping (run_guarded):
 *   [1 MiB guard, PROT_NONE][front canary][data][back canary to the page end][1 MiB guard]
 * Inputs (q, k, v, mask, lengths, left_padding) are copied in and made PROT_READ, so a write
 * into them faults.  The output and keep buffers stay writable; their canaries are checked after
 * each call, so a write just outside is a FAIL naming the side and the byte offsets, and a far
 * one hits a guard page and faults.  A fault kills the worker process (worker.c), which reports
 * the case as CRASH; run_fault_note_install makes the fault handler say which buffer was hit
 * (or that the backend overflowed the worker's stack).
 * (With --in-process a fault takes the harness down: that mode is for debuggers.)
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS, sigaltstack, pthread_getattr_np */

#include "run/run.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "attncase/cache_case.h"
#include "run/compare.h"
#include "repro.h"
#include "run_cache.h"
#include "run_guard.h"
#include "run_paged.h"
#include "attncase/paged_case.h"
#include "common/cli.h"
#include "common/clip.h"
#include "common/shell.h"
#include "backend/call.h"
#include "backend/plugin.h"

/* ---- guarded buffers ------------------------------------------------------------------ */

/* The canary byte at distance i from lo: position-dependent, so neither a zero fill nor a NaN
 * (0xFF) fill nor a shifted copy of the canary itself goes unnoticed. */
static unsigned char run_canary_byte(size_t i)
{
    return (unsigned char)(0xA5u ^ (i * 0x3Bu) ^ (i >> 8));
}

/* The live guarded buffers, read by the fault handler (a fixed table: the handler must not
 * allocate or lock).  Slots are filled and cleared only between backend calls.  An sdpa call
 * holds up to 9 inputs (q, k, v, mask, lengths, left_padding, segment_ids, block_ids, sinks)
 * and its output at once; a mask build its keep buffer and inputs. */
#define HR_MAX_GUARDED 12
static run_guarded *volatile run_live[HR_MAX_GUARDED];

void run_guarded_free(run_guarded *g)
{
    for (int i = 0; i < HR_MAX_GUARDED; i++)
        if (run_live[i] == g)
            run_live[i] = NULL;
    if (g->map)
        munmap(g->map, g->map_len);
    memset(g, 0, sizeof *g);
}

/* Map a guarded buffer of len bytes (>= 1).  Returns 0, or -1 (out of memory, or more than
 * HR_MAX_GUARDED live buffers). */
int run_guarded_alloc(run_guarded *g, size_t len, const char *name)
{
    memset(g, 0, sizeof *g);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (len == 0)
        len = 1;
    if (len > SIZE_MAX / 2)
        return -1;
    size_t body = (HR_CANARY + len + HR_CANARY + page - 1) / page * page;
    int slot = -1;
    for (int i = 0; i < HR_MAX_GUARDED && slot < 0; i++)
        if (!run_live[i])
            slot = i;
    if (slot < 0)
        return -1;
    const size_t guard = (HR_GUARD_BYTES + page - 1) / page * page;
    /* Reserved PROT_NONE whole, then the body opened: the guards never take memory. */
    unsigned char *m =
        mmap(NULL, body + 2 * guard, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    if (mprotect(m + guard, body, PROT_READ | PROT_WRITE) != 0) {
        munmap(m, body + 2 * guard);
        return -1;
    }
    g->map = m;
    g->map_len = body + 2 * guard;
    g->lo = m + guard;
    g->hi = m + guard + body;
    g->data = g->lo + HR_CANARY;
    g->len = len;
    g->name = name;
    for (unsigned char *p = g->lo; p < g->data; p++)
        *p = run_canary_byte((size_t)(p - g->lo));
    for (unsigned char *p = g->data + len; p < g->hi; p++)
        *p = run_canary_byte((size_t)(p - g->lo));
    run_live[slot] = g;
    return 0;
}

/* Make the whole body (data and canaries) read-only: an input the backend must not write. */
int run_guarded_readonly(run_guarded *g)
{
    g->readonly = 1;
    return mprotect(g->lo, (size_t)(g->hi - g->lo), PROT_READ);
}

int run_guarded_writable(run_guarded *g)
{
    g->readonly = 0;
    return mprotect(g->lo, (size_t)(g->hi - g->lo), PROT_READ | PROT_WRITE);
}

/* After a call: 1 (and a FAIL in r) if a canary changed, naming the side and the byte offsets
 * relative to the buffer's start (before it) or end (past it); else 0. */

/* ---- the fault note ----------------------------------------------------------------------- */

static char *run_note;
static size_t run_note_len;

/* Async-signal-safe string building (no stdio in a signal handler). */
static size_t run_note_put(size_t j, const char *s)
{
    while (*s && j + 1 < run_note_len)
        run_note[j++] = *s++;
    run_note[j] = '\0';
    return j;
}

static size_t run_note_num(size_t j, char sign, size_t v)
{
    char d[32];
    int n = 0;
    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v && n < 30);
    char s[34];
    int k = 0;
    if (sign)
        s[k++] = sign;
    while (n)
        s[k++] = d[--n];
    s[k] = '\0';
    return run_note_put(j, s);
}

/* The main thread's stack as it was at install time: [lo, hi), lo the lowest address it may
 * grow down to (its limit).  0, 0 = unknown. */
static uintptr_t run_stack_lo, run_stack_hi;

/* A fault from 1 MiB below the stack's limit to 2 MiB above it is the stack running out:
 * below when RLIMIT_STACK stopped it, above when a mapping next to it did (the kernel keeps a
 * gap below a stack, stack_guard_gap, 1 MiB by default; twice that for a larger setting).
 * (A stray pointer into that range would be named a stack overflow too: it is the stack's own
 * reserve, where little else points.) */
#define HR_STACK_SLACK ((uintptr_t)1 << 20)

/* If a fault at a is the main thread's stack overflowing, say so in the note. */
static void run_note_stack_overflow(uintptr_t a)
{
    if (!run_stack_hi || a >= run_stack_hi || a + HR_STACK_SLACK < run_stack_lo ||
        a >= run_stack_lo + 2 * HR_STACK_SLACK)
        return;
    /* Measured from the top, which is fixed: how far the limit is from a depends on which of
     * the kernel's checks stopped the stack. */
    size_t j = run_note_put(0, "backend overflowed the stack of the worker's main thread (fault ");
    j = run_note_num(j, 0, (size_t)(run_stack_hi - a));
    j = run_note_put(j, " bytes below its top; its limit is ");
    j = run_note_num(j, 0, (size_t)(run_stack_hi - run_stack_lo));
    run_note_put(j, " bytes)");
}

static void run_fault_handler(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    const unsigned char *a = si ? (const unsigned char *)si->si_addr : NULL;
    int found = 0;
    for (int i = 0; i < HR_MAX_GUARDED && a && run_note; i++) {
        const run_guarded *g = run_live[i];
        if (!g || a < g->map || a >= g->map + g->map_len)
            continue;
        size_t j = run_note_put(0, "backend ");
        if (a < g->lo) {
            j = run_note_put(j, "accessed the guard page before the start of the ");
            j = run_note_put(j, g->name);
            j = run_note_put(j, " (offset ");
            j = run_note_num(j, '-', (size_t)(g->data - a));
        } else if (a >= g->hi) {
            j = run_note_put(j, "accessed the guard page past the end of the ");
            j = run_note_put(j, g->name);
            j = run_note_put(j, " (offset ");
            j = run_note_num(j, '+', (size_t)(a - (g->data + g->len)));
        } else {
            j = run_note_put(j, "wrote into the read-only ");
            j = run_note_put(j, g->name);
            j = run_note_put(j, " (offset ");
            j = a < g->data ? run_note_num(j, '-', (size_t)(g->data - a))
                            : run_note_num(j, '+', (size_t)(a - g->data));
        }
        run_note_put(j, ")");
        found = 1;
        break;
    }
    if (!found && a && run_note && sig == SIGSEGV)
        run_note_stack_overflow((uintptr_t)a);
    /* Die of the signal as if unhandled: the worker's parent reports the signal and the note. */
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Give the calling thread an alternate signal stack, so the handler can run when the fault is
 * that thread's own stack running out (without one the kernel has nowhere to put the handler's
 * frame and kills the process with SIGSEGV, the handler never run).  Under ASan this replaces
 * ASan's alternate stack, as the sigaction below replaces its handler.  Returns 0 or -1 (no
 * alternate stack: the handler still runs for any other fault). */
static int run_altstack_install(void)
{
    static void *mem; /* once per process: the worker installs once, but be safe */
    if (mem)
        return 0;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = (size_t)64 * 1024;
    if ((size_t)SIGSTKSZ * 4 > size)
        size = ((size_t)SIGSTKSZ * 4 + page - 1) / page * page;
    /* A guard page below it: a handler that overran it would fault, not corrupt memory. */
    unsigned char *m =
        mmap(NULL, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    if (mprotect(m, page, PROT_NONE) != 0) {
        munmap(m, size + page);
        return -1;
    }
    stack_t ss;
    memset(&ss, 0, sizeof ss);
    ss.ss_sp = m + page;
    ss.ss_size = size;
    if (sigaltstack(&ss, NULL) != 0) {
        munmap(m, size + page);
        return -1;
    }
    mem = m;
    return 0;
}

/* Record the calling (main) thread's stack bounds in run_stack_lo/hi, where the C library can
 * tell them; else leave them unknown (no stack-overflow note). */
static void run_stack_bounds(void)
{
    run_stack_lo = run_stack_hi = 0;
#if defined(__linux__) && defined(__GLIBC__)
    /* For the main thread glibc reads /proc/self/maps and RLIMIT_STACK: stackaddr is the lowest
     * address the stack may grow to, stackaddr + size its top (it grows down). */
    pthread_attr_t at;
    if (pthread_getattr_np(pthread_self(), &at) != 0)
        return;
    void *addr;
    size_t size;
    if (pthread_attr_getstack(&at, &addr, &size) == 0 && addr && size) {
        run_stack_lo = (uintptr_t)addr;
        run_stack_hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&at);
#endif
}

void run_fault_note_install(char *note, size_t n)
{
    run_note = note;
    run_note_len = n;
    if (note && n)
        note[0] = '\0';
    /* The alternate stack and the bounds are the main thread's (the worker calls this before
     * loading the backend).  A thread the backend creates has neither: its stack overflow
     * kills the worker before any handler can run, and is reported as a plain signal 11. */
    int alt = run_altstack_install();
    if (alt == 0)
        run_stack_bounds();
    else
        run_stack_lo = run_stack_hi = 0; /* the handler could not run on an overflow anyway */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = run_fault_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | (alt == 0 ? SA_ONSTACK : 0);
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

/* ---- output capture (attnconf fuzz) ------------------------------------------------------ */

static double *run_cap_sink;
static int64_t run_cap_max;
static volatile int64_t *run_cap_n;

void run_capture_outputs(double *sink, int64_t max, volatile int64_t *n)
{
    run_cap_sink = sink;
    run_cap_max = max;
    run_cap_n = n;
}

/* A usable output (known dtype, shape and strides checked) in logical row-major order. */
static void run_capture_output(const attnconf_tensor *t)
{
    if (!run_cap_sink || !run_cap_n)
        return;
    int64_t numel = 1;
    for (int32_t d = 0; d < t->ndim; d++)
        numel *= t->shape[d];
    if (numel > run_cap_max)
        return;
    int64_t idx[4] = {0, 0, 0, 0};
    for (int64_t e = 0; e < numel; e++) {
        int64_t off = 0;
        for (int32_t d = 0; d < t->ndim; d++)
            off += idx[d] * t->strides[d];
        run_cap_sink[e] = attnref_load(t->data, (attnref_dtype)t->dtype, off);
        for (int32_t d = t->ndim - 1; d >= 0; d--) {
            if (++idx[d] < t->shape[d])
                break;
            idx[d] = 0;
        }
    }
    *run_cap_n = numel;
}

/* ---- names ---------------------------------------------------------------------------- */

/* A dtype name for messages; an out-of-range value (a confused backend) is shown as a number. */
static const char *run_dtype_text(int32_t dt, char *buf, size_t n)
{
    if (dt >= ATTNCONF_F32 && dt <= ATTNCONF_BOOL)
        return attnref_dtype_name((attnref_dtype)dt);
    snprintf(buf, n, "#%d (not an attnconf_dtype)", (int)dt);
    return buf;
}

/* Append the words to the command in buf (cap bytes, *len used), each shell-quoted when
 * `quote`; returns -1 once anything did not fit (the command is then unusable). */
static int run_cmd_add(char *buf, size_t cap, size_t *len, const char *word, int quote)
{
    if (*len >= cap)
        return -1;
    if (!quote) {
        int w = snprintf(buf + *len, cap - *len, "%s", word);
        if (w < 0 || (size_t)w >= cap - *len)
            return -1;
        *len += (size_t)w;
        return 0;
    }
    if (shell_quote(word, buf + *len, cap - *len) != 0)
        return -1;
    *len += strlen(buf + *len);
    return 0;
}

/* The start of a command that runs this backend again: "ARGV0 SUB --backend B" with each
 * --backend-option and the --timeout.  Returns nonzero when cmd[cap] was too small. */
static int run_cmd_backend(const run_ctx *rn, const char *sub, char *cmd, size_t cap, size_t *len)
{
    int bad = run_cmd_add(cmd, cap, len, rn->argv0 ? rn->argv0 : "attnconf", 1);
    bad |= run_cmd_add(cmd, cap, len, sub, 0);
    bad |= run_cmd_add(cmd, cap, len, " --backend ", 0);
    bad |= run_cmd_add(cmd, cap, len, rn->backend_arg ? rn->backend_arg : "", 1);
    for (size_t i = 0; i < rn->n_options && rn->options; i++) {
        char kv[sizeof((hr_result *)0)->rerun];
        int w = snprintf(kv, sizeof kv, "%s=%s", rn->options[i].key, rn->options[i].value);
        bad |= w < 0 || (size_t)w >= sizeof kv;
        bad |= run_cmd_add(cmd, cap, len, " --backend-option ", 0);
        bad |= run_cmd_add(cmd, cap, len, kv, 1);
    }
    if (rn->timeout_s > 0) {
        char t[40];
        cli_seconds_text(rn->timeout_s, t, sizeof t);
        bad |= run_cmd_add(cmd, cap, len, " --timeout ", 0);
        bad |= run_cmd_add(cmd, cap, len, t, 1);
    }
    return bad;
}

void run_result_begin(const run_ctx *rn, const char *id, hr_result *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", id);
    acase_family(id, r->family, sizeof r->family);
    r->first_bad = -1;
    char *cmd = r->rerun;
    size_t cap = sizeof r->rerun, len = 0;
    int bad = run_cmd_backend(rn, " run", cmd, cap, &len);
    if (rn->case_timeout_s > 0) {
        char t[40];
        cli_seconds_text(rn->case_timeout_s, t, sizeof t);
        bad |= run_cmd_add(cmd, cap, &len, " --case-timeout ", 0);
        bad |= run_cmd_add(cmd, cap, &len, t, 1);
    }
    bad |= run_cmd_add(cmd, cap, &len, " --cases ", 0);
    bad |= run_cmd_add(cmd, cap, &len, rn->cases_dir ? rn->cases_dir : "", 1);
    bad |= run_cmd_add(cmd, cap, &len, " --filter ", 0);
    /* The filter is always single-quoted: it is a glob and must reach fnmatch verbatim. */
    if (strchr(id, '\'')) {
        bad |= run_cmd_add(cmd, cap, &len, id, 1);
    } else {
        bad |= run_cmd_add(cmd, cap, &len, "'", 0);
        bad |= run_cmd_add(cmd, cap, &len, id, 0);
        bad |= run_cmd_add(cmd, cap, &len, "'", 0);
    }
    if (bad)
        r->rerun[0] = '\0'; /* a truncated command would run something else: give none */
}

/* ---- helpers -------------------------------------------------------------------------- */

__attribute__((format(printf, 3, 4))) static void run_set(hr_result *r, hr_status s,
                                                          const char *fmt, ...)
{
    r->status = s;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, ap);
    va_end(ap);
    /* The message is one line (text/TAP outputs rely on it); a backend's last_error might not
     * be. */
    for (char *c = r->message; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
}

int run_guarded_check(const run_guarded *g, hr_result *r)
{
    const unsigned char *bad_lo = NULL, *bad_hi = NULL;
    for (const unsigned char *p = g->lo; p < g->data; p++)
        if (*p != run_canary_byte((size_t)(p - g->lo))) {
            if (!bad_lo)
                bad_lo = p;
            bad_hi = p;
        }
    if (bad_lo) {
        run_set(r, HR_FAIL,
                "backend wrote %zu bytes before the start of the %s (offset -%zu..-%zu)",
                (size_t)(bad_hi - bad_lo) + 1, g->name, (size_t)(g->data - bad_lo),
                (size_t)(g->data - bad_hi));
        return 1;
    }
    const unsigned char *end = g->data + g->len;
    for (const unsigned char *p = end; p < g->hi; p++)
        if (*p != run_canary_byte((size_t)(p - g->lo))) {
            if (!bad_lo)
                bad_lo = p;
            bad_hi = p;
        }
    if (bad_lo) {
        run_set(r, HR_FAIL, "backend wrote %zu bytes past the end of the %s (offset +%zu..+%zu)",
                (size_t)(bad_hi - bad_lo) + 1, g->name, (size_t)(bad_lo - end),
                (size_t)(bad_hi - end));
        return 1;
    }
    return 0;
}

/* Element count of a shape, or -1 if it is invalid or exceeds the case limit (so the harness
 * never makes a huge allocation for a malformed or hostile case). */
static int64_t run_numel_capped(int32_t ndim, const int64_t *shape)
{
    int64_t n;
    return acase_numel(ndim, shape, &n, NULL, 0) == 0 ? n : -1;
}

static void run_contiguous_strides(int32_t ndim, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int32_t d = ndim - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d] > 0 ? shape[d] : 1;
    }
}

/* Describe a case input for the backend, in a read-only guarded copy (*owned, freed by the
 * caller with run_guarded_free).  A non-rank-4 tensor is copied as is.  A rank-4 tensor is laid
 * out in its physical order, BHLD or BLHD (a (B,L,H,D) buffer seen as (B,H,L,D) through the
 * strides {L*H*D, D, H*D, 1}); the dimensions named by `stride0` (format v2: 0 batch, 1 heads)
 * are stored once (extent 1 in the buffer) and described with stride 0, so the backend reads
 * one slice for every index there, as a real K/V broadcast.  t->data holds the full logical
 * tensor, constant along those dimensions: index 0 is the slice.  Returns 0, or -1 on
 * allocation failure. */
int run_describe(const acase_tensor *t, attnconf_tensor *out, run_guarded *owned, const char *name)
{
    memset(out, 0, sizeof *out);
    memset(owned, 0, sizeof *owned);
    out->dtype = (int32_t)t->dtype;
    out->ndim = t->ndim;
    for (int32_t d = 0; d < t->ndim && d < 4; d++)
        out->shape[d] = t->shape[d];
    size_t es = attnref_dtype_size(t->dtype);
    if (t->ndim != 4 || (t->layout != ACASE_LAYOUT_BLHD && !t->stride0 && !t->row_pad)) {
        if (run_guarded_alloc(owned, (size_t)(t->numel > 0 ? t->numel : 1) * (es ? es : 1), name))
            return -1;
        if (t->data && t->numel > 0)
            memcpy(owned->data, t->data, (size_t)t->numel * es);
        out->data = owned->data;
        run_contiguous_strides(t->ndim, t->shape, out->strides);
        return run_guarded_readonly(owned);
    }
    /* Stored extents (1 on stride-0 dims) and the physical order of the dimensions. */
    int64_t st[4];
    for (int d = 0; d < 4; d++)
        st[d] = (d < 2 && (t->stride0 >> d) & 1) ? 1 : t->shape[d];
    const int order[2][4] = {{0, 1, 2, 3}, {0, 2, 1, 3}};
    const int *ph = order[t->layout == ACASE_LAYOUT_BLHD];
    /* Format v3 row_pad: each row of the last dimension is row_pad elements longer than D. */
    int64_t phys_stride[4], s = 1;
    for (int k = 3; k >= 0; k--) {
        phys_stride[ph[k]] = s;
        s *= (st[ph[k]] > 0 ? st[ph[k]] : 1) + (ph[k] == 3 ? t->row_pad : 0);
    }
    const int64_t stored = s;
    if (run_guarded_alloc(owned, (size_t)(stored > 0 ? stored : 1) * es, name))
        return -1;
    unsigned char *buf = owned->data;
    memset(buf, 0xFF, (size_t)(stored > 0 ? stored : 1) * es); /* the gaps: NaN in every dtype */
    const unsigned char *src = t->data;
    const int64_t H = t->shape[1], L = t->shape[2], D = t->shape[3];
    for (int64_t b = 0; b < st[0] && src; b++)
        for (int64_t h = 0; h < st[1]; h++)
            for (int64_t l = 0; l < st[2]; l++) {
                int64_t from = ((b * H + h) * L + l) * D;
                int64_t to = b * phys_stride[0] + h * phys_stride[1] + l * phys_stride[2];
                memcpy(buf + (size_t)to * es, src + (size_t)from * es, (size_t)D * es);
            }
    out->data = buf;
    for (int d = 0; d < 4; d++)
        out->strides[d] = (d < 2 && (t->stride0 >> d) & 1) ? 0 : phys_stride[d];
    return run_guarded_readonly(owned);
}

/* A read-only guarded copy of n int64 entries (lengths, left_padding), like the tensor inputs:
 * *out = NULL when src is NULL.  Returns 0, or -1 on allocation or protection failure. */
int run_readonly_ints(const int64_t *src, size_t n, run_guarded *g, const char *name,
                      const int64_t **out)
{
    *out = NULL;
    if (!src)
        return 0;
    if (run_guarded_alloc(g, n * sizeof *src, name))
        return -1;
    memcpy(g->data, src, n * sizeof *src);
    *out = (const int64_t *)(void *)g->data;
    return run_guarded_readonly(g);
}

/* A read-only guarded f32 copy of n doubles (the sinks, exact in f32 by the case format): *out
 * = NULL when src is NULL.  Returns 0, or -1 on allocation or protection failure. */
static int run_readonly_floats(const double *src, size_t n, run_guarded *g, const char *name,
                               const float **out)
{
    *out = NULL;
    if (!src)
        return 0;
    if (run_guarded_alloc(g, n * sizeof(float), name))
        return -1;
    float *f = (float *)(void *)g->data;
    for (size_t i = 0; i < n; i++)
        f[i] = (float)src[i];
    *out = f;
    return run_guarded_readonly(g);
}

/* "(2,4,8,16)" */
static void run_shape_text(int32_t ndim, const int64_t *shape, char *buf, size_t n)
{
    size_t j = 0;
    j += (size_t)snprintf(buf, n, "(");
    for (int32_t d = 0; d < ndim && d < 4 && j < n; d++)
        j += (size_t)snprintf(buf + j, n - j, "%s%lld", d ? "," : "", (long long)shape[d]);
    if (j < n)
        snprintf(buf + j, n - j, ")");
}

/* Classify the backend's return code.  Returns 1 if classification is complete (an error
 * case, or a backend failure), 0 if the output must now be checked. */
static int run_classify_rc(const run_ctx *rn, const acase *c, int rc, hr_result *r)
{
    char why[CLIP_MAX + 1]; /* its head and tail when long (common/clip.h) */
    clip_error(rc != ATTNCONF_OK ? hb_last_error(rn->backend) : "", why, sizeof why);
    /* An exec: adapter that died, hung or broke the protocol produced no answer at all: that
     * is never a correct rejection, whatever the case expects. */
    if (hb_transport_failure(rn->backend, rc)) {
        run_set(r, HR_ERROR, "adapter failure: %s", why);
        return 1;
    }
    int want = c->expected.error;
    if (rc == ATTNCONF_EINEXPRESSIBLE) {
        /* Granted only where the input must be rejected: never a way out of a computation. */
        if (want != 0)
            run_set(r, HR_UNEXPRESSIBLE,
                    "the backend cannot write this invalid input in its API (einexpressible, "
                    "where %s is required): %s",
                    hb_code_name(want), why);
        else
            run_set(r, HR_FAIL, HR_EINEXPRESSIBLE_VALID ": %s", why);
        return 1;
    }
    if (want != 0) {
        if (rc == want)
            run_set(r, HR_EXPECTED_ERROR, "rejected with %s as required: %s", hb_code_name(rc),
                    why);
        else if (rc == ATTNCONF_OK)
            run_set(r, HR_FAIL, "accepted a case that must be rejected (expected %s)",
                    hb_code_name(want));
        else
            run_set(r, HR_FAIL, "rejected with %s (%d), expected %s (%d): %s", hb_code_name(rc), rc,
                    hb_code_name(want), want, why);
        return 1;
    }
    if (rc == ATTNCONF_OK)
        return 0;
    if (rc == ATTNCONF_ENOTSUP)
        run_set(r, HR_NOT_SUPPORTED, "backend returned enotsup: %s", why);
    else
        run_set(r, HR_ERROR, "backend returned %s (%d): %s", hb_code_name(rc), rc, why);
    return 1;
}

/* Compare a produced tensor with the expected values and fill the statistics.  Sets PASS or
 * FAIL unless `keep_status` (an INCORRECT_DTYPE whose values are still worth reporting). */
static void run_check_values(const acase *c, const attnconf_tensor *t, int exact, int keep_status,
                             hr_result *r)
{
    _Static_assert((int)HC_ROW_CLOSE == (int)ACASE_CHECK_CLOSE &&
                       (int)HC_ROW_EXACT == (int)ACASE_CHECK_EXACT &&
                       (int)HC_ROW_FINITE == (int)ACASE_CHECK_FINITE,
                   "compare.h row modes must be the case format's");
    /* Per-row check modes (expected.row_checks): one per row of the last extent (Dv). */
    const uint8_t *rows = c->expected.row_check;
    int64_t row_len = t->ndim >= 1 ? t->shape[t->ndim - 1] : 0, nrows = 1;
    for (int32_t d = 0; rows && d + 1 < t->ndim; d++)
        nrows *= t->shape[d];
    if (rows && (t->ndim < 1 || nrows != c->expected.nrows)) {
        if (!keep_status)
            run_set(r, HR_ERROR, "case: row_checks has %lld rows, the output has %lld",
                    (long long)c->expected.nrows, (long long)nrows);
        return;
    }
    /* The tolerance of SPEC clause 13, counted in ulps of the EXPECTED dtype (an output of
     * another dtype is INCORRECT_DTYPE anyway; its values are still measured in these units). */
    const hc_tol tol = {
        .ulps = c->ulps, .ulp_dtype = c->expected.dtype, .row_atol = c->row_atol, .exact = exact};
    hc_stats st;
    int ok = hc_compare_rows(t->data, (attnref_dtype)t->dtype, t->ndim, t->shape, t->strides,
                             c->expected.values, &tol, rows, row_len, &st);
    r->has_stats = 1;
    r->max_abs_err = st.max_abs_err;
    r->max_rel_err = st.max_rel_err;
    r->max_ratio = st.max_ratio;
    r->nans = st.nans;
    r->first_bad = st.first_bad;
    r->bad_ndim = st.ndim;
    memcpy(r->bad_index, st.bad_index, sizeof r->bad_index);
    r->bad_got = st.bad_got;
    r->bad_expected = st.bad_expected;
    if (keep_status)
        return;
    if (ok) {
        run_set(r, HR_PASS, "%s", "");
        return;
    }
    /* The first bad element and the error maxima are in the statistics fields (every output
     * format prints them); the message says how widespread the failure is, or which row check
     * (exact / finite) the first bad element broke. */
    char msg[sizeof r->message];
    hc_failure_message(&st, &tol, msg, sizeof msg);
    run_set(r, HR_FAIL, "%s", msg);
}

/* Check the output descriptor the backend handed back and, if it is usable, compare the values.
 * The buffer must be the same, the shape unchanged, the strides a dense layout of it (they may
 * change: the backend may write another layout, but only one that holds each element once, the
 * rule exec: replies keep too: xr_dense_perm) and the dtype the expected one.  A wrong but
 * known dtype is INCORRECT_DTYPE with the value statistics attached, so a report can tell a
 * pure upcast (right values) from a wrong result. */
static void run_check_output(const acase *c, const attnconf_tensor *before,
                             const attnconf_tensor *after, size_t capacity, int exact, hr_result *r)
{
    char b1[32], b2[32];
    if (after->data != before->data) {
        run_set(r, HR_FAIL, "backend replaced the output data pointer");
        return;
    }
    /* The dtype first: the sizes below are counted in it, and a backend that wrote one dtype
     * and named another must be told so, not that it wrote past the end of the one it named. */
    const int32_t want = (int32_t)c->expected.dtype;
    int wrong_dtype = after->dtype != want;
    if (wrong_dtype)
        run_set(r, HR_INCORRECT_DTYPE, "output dtype %s, expected %s",
                run_dtype_text(after->dtype, b1, sizeof b1), run_dtype_text(want, b2, sizeof b2));
    size_t es = (after->dtype >= ATTNCONF_F32 && after->dtype <= ATTNCONF_BOOL)
                    ? attnref_dtype_size((attnref_dtype)after->dtype)
                    : 0;
    /* An unknown dtype cannot be read, and neither can bool bytes where numbers are expected
     * (nor numbers where a keep mask is): no statistics would mean anything. */
    if (es == 0 || (wrong_dtype && (after->dtype == ATTNCONF_BOOL) != (want == ATTNCONF_BOOL)))
        return;

    int same = after->ndim == before->ndim;
    for (int32_t d = 0; same && d < before->ndim; d++)
        same = after->shape[d] == before->shape[d];
    if (!same) {
        if (wrong_dtype)
            return;
        char s1[96], s2[96];
        run_shape_text(after->ndim < 0 || after->ndim > 4 ? 0 : after->ndim, after->shape, s1,
                       sizeof s1);
        run_shape_text(before->ndim, before->shape, s2, sizeof s2);
        run_set(r, HR_FAIL, "backend changed the output shape to %s (rank %d), expected %s", s1,
                (int)after->ndim, s2);
        return;
    }
    int64_t numel = 1;
    for (int32_t d = 0; d < after->ndim; d++)
        numel *= after->shape[d];
    /* Strides that repeat an element (all zeros) or skip some address a buffer smaller or
     * larger than the result: judged by size, they read as a write past the end.  Each
     * element once, or the layout itself is the fault. */
    if (!xr_dense_perm(after->ndim, after->shape, after->strides)) {
        if (!wrong_dtype) {
            char s1[128], s2[128], s3[96];
            int64_t dense[ATTNCONF_MAX_RANK];
            run_contiguous_strides(after->ndim, after->shape, dense);
            xr_ints_text(after->ndim, after->strides, s1, sizeof s1);
            xr_ints_text(after->ndim, dense, s2, sizeof s2);
            run_shape_text(after->ndim, after->shape, s3, sizeof s3);
            run_set(r, HR_FAIL,
                    "backend set output strides %s: not the dense strides %s of shape %s, nor a "
                    "permutation of its axes (an output holds each element once)",
                    s1, s2, s3);
        }
        return;
    }
    /* Dense: the result takes numel elements.  With a wrong dtype the backend may have written
     * either one, so the larger is the result's extent. */
    size_t ws = wrong_dtype ? attnref_dtype_size((attnref_dtype)want) : es;
    const size_t used = numel > 0 ? (size_t)numel * (ws > es ? ws : es) : 0;
    if ((size_t)numel * es > capacity) {
        if (!wrong_dtype)
            run_set(r, HR_FAIL, "backend output strides address past the %zu-byte buffer",
                    capacity);
        return;
    }
    /* The buffer is larger than the result (room for a wrong, wider dtype), so the canaries
     * sit past the capacity, not past the result: the bytes between must still hold the 0xFF
     * fill, or an off-by-one write past the result would pass unseen. */
    const unsigned char *buf = after->data;
    size_t lo = capacity, hi = 0;
    for (size_t i = used; i < capacity; i++)
        if (buf[i] != 0xFF) {
            lo = i < lo ? i : lo;
            hi = i;
        }
    if (lo < capacity) {
        run_set(r, HR_FAIL,
                "backend wrote %zu bytes past the end of its output (offset +%zu..+%zu "
                "from the end of the %zu bytes its dtype and shape take)",
                hi - lo + 1, lo - used, hi - used, used);
        return;
    }
    run_capture_output(after);
    run_check_values(c, after, exact, wrong_dtype, r);
}

/* ---- the two ops ---------------------------------------------------------------------- */

/* The inputs and output of one sdpa call as run_sdpa hands them to a backend (run.h). */
struct run_sdpa_call {
    attnconf_sdpa_args args;
    attnconf_tensor q, k, v, mask, out;
    attnconf_tensor before; /* out as described before the call */
    size_t capacity;        /* bytes of the output buffer */
    run_guarded own[9], outg;
};

void run_sdpa_release(run_sdpa_call *sc)
{
    if (!sc)
        return;
    for (int i = 0; i < 9; i++)
        run_guarded_free(&sc->own[i]);
    run_guarded_free(&sc->outg);
    free(sc);
}

const attnconf_sdpa_args *run_sdpa_args(const run_sdpa_call *sc)
{
    return &sc->args;
}

run_sdpa_call *run_sdpa_prepare(const acase *c, hr_result *r)
{
    run_sdpa_call *sc = calloc(1, sizeof *sc);
    if (!sc) {
        run_set(r, HR_ERROR, "harness: out of memory");
        return NULL;
    }
    /* The mask parameters (SPEC clause 19) are passed only when the case uses them: such a
     * case requires their capability bit, so a backend without it never gets here with them.
     * The ABI's arrays have one entry per batch row of q, so a case whose array length
     * differs cannot be posed (the reference API can: attnref_sdpa_params.batch). */
    const int64_t *lengths = NULL, *left_padding = NULL, *segment_ids = NULL, *block_ids = NULL;
    const float *sinks = NULL;
    const int per_seq = c->lengths || c->left_padding || c->segment_ids || c->block_ids;
    if (per_seq && (c->q.ndim < 1 || c->batch != c->q.shape[0])) {
        run_set(r, HR_ERROR,
                "case: %s has %lld entries but q has batch %lld: the ABI passes one "
                "per batch row",
                c->lengths        ? "params.lengths"
                : c->left_padding ? "params.left_padding"
                : c->segment_ids  ? "params.segment_ids"
                                  : "params.block_ids",
                (long long)c->batch, (long long)(c->q.ndim >= 1 ? c->q.shape[0] : 0));
        goto fail;
    }
    /* The id lists are [B, Lk] at the ABI: a case whose rows have another length cannot be
     * posed there. */
    if ((c->segment_ids || c->block_ids) && (c->k.ndim != 4 || c->ids_len != c->k.shape[2])) {
        run_set(r, HR_ERROR, "case: the id lists have %lld entries per row, k has Lk = %lld",
                (long long)c->ids_len, (long long)(c->k.ndim == 4 ? c->k.shape[2] : 0));
        goto fail;
    }
    if (c->sinks && (c->q.ndim < 2 || c->nsinks != c->q.shape[1])) {
        run_set(r, HR_ERROR, "case: params.sinks has %lld values, q has %lld heads",
                (long long)c->nsinks, (long long)(c->q.ndim >= 2 ? c->q.shape[1] : 0));
        goto fail;
    }
    const size_t ids = (size_t)c->batch * (size_t)c->ids_len;
    run_guarded *own = sc->own;
    if (run_describe(&c->q, &sc->q, &own[0], "input q") ||
        run_describe(&c->k, &sc->k, &own[1], "input k") ||
        run_describe(&c->v, &sc->v, &own[2], "input v") ||
        (c->mask.present && run_describe(&c->mask, &sc->mask, &own[3], "input mask")) ||
        run_readonly_ints(c->lengths, (size_t)c->batch, &own[4], "input lengths", &lengths) ||
        run_readonly_ints(c->left_padding, (size_t)c->batch, &own[5], "input left_padding",
                          &left_padding) ||
        run_readonly_ints(c->segment_ids, ids, &own[6], "input segment_ids", &segment_ids) ||
        run_readonly_ints(c->block_ids, ids, &own[7], "input block_ids", &block_ids) ||
        run_readonly_floats(c->sinks, (size_t)c->nsinks, &own[8], "input sinks", &sinks)) {
        run_set(r, HR_ERROR, "harness: out of memory laying out the inputs");
        goto fail;
    }
    if (c->v.view_k_prefix) {
        /* V a prefix view of K: k's own buffer and strides, Dv columns. */
        const int64_t dv = sc->v.shape[3];
        sc->v = sc->k;
        sc->v.shape[3] = dv;
    }

    /* Output (B,Hq,Lq,Dv): the expected shape when there is one; for a must-reject case the
     * shape q and v imply (1 where they are not rank 4), since the backend must reject before
     * writing anyway. */
    attnconf_tensor *out = &sc->out;
    out->ndim = 4;
    out->dtype = (int32_t)c->q.dtype;
    if (c->expected.error == 0) {
        out->ndim = c->expected.ndim;
        for (int32_t d = 0; d < c->expected.ndim && d < 4; d++)
            out->shape[d] = c->expected.shape[d];
    } else {
        for (int d = 0; d < 3; d++)
            out->shape[d] = c->q.ndim == 4 ? c->q.shape[d] : 1;
        out->shape[3] = c->v.ndim == 4 ? c->v.shape[3] : 1;
    }
    int64_t numel = run_numel_capped(out->ndim, out->shape);
    if (numel < 0) {
        char s[96];
        run_shape_text(out->ndim, out->shape, s, sizeof s);
        run_set(r, HR_ERROR, "case: output shape %s is invalid or over the %lld-element limit", s,
                (long long)ACASE_MAX_TENSOR_NUMEL);
        goto fail;
    }
    run_contiguous_strides(out->ndim, out->shape, out->strides);
    /* 8 bytes per element: room for any dtype the backend might wrongly produce (an f64
     * upcast included), so a dtype mistake is reported as INCORRECT_DTYPE, not a crash. */
    sc->capacity = (size_t)(numel > 0 ? numel : 1) * 8;
    if (run_guarded_alloc(&sc->outg, sc->capacity, "output buffer")) {
        run_set(r, HR_ERROR, "harness: out of memory for a %zu-byte output", sc->capacity);
        goto fail;
    }
    memset(sc->outg.data, 0xFF, sc->capacity); /* 0xFF.. is a NaN in f32, f16 and bf16 */
    out->data = sc->outg.data;
    sc->before = *out;

    attnconf_sdpa_args *a = &sc->args;
    a->struct_size = sizeof *a;
    a->q = &sc->q;
    a->k = &sc->k;
    a->v = &sc->v;
    a->mask = c->mask.present ? &sc->mask : NULL;
    a->causal = c->causal;
    a->has_causal_offset = c->has_causal_offset;
    a->causal_offset = c->causal_offset;
    a->has_scale = c->has_scale;
    a->scale = c->scale;
    a->out = out;
    a->out_capacity = sc->capacity;
    if (c->requires & ATTNCONF_CAP_SDPA_WINDOW)
        a->window = c->window;
    if (c->requires & ATTNCONF_CAP_SDPA_LENGTHS)
        a->lengths = lengths;
    if (c->requires & ATTNCONF_CAP_SDPA_LEFT_PAD)
        a->left_padding = left_padding;
    /* The terms of clauses 20-22, likewise only where the case requires their bits. */
    if (c->requires & ATTNCONF_CAP_SOFTCAP)
        a->softcap = c->softcap;
    if (c->requires & ATTNCONF_CAP_ALIBI)
        a->alibi_max_bias = c->alibi_max_bias;
    if (c->requires & ATTNCONF_CAP_CHUNK)
        a->chunk = c->chunk;
    if (c->requires & ATTNCONF_CAP_SEGMENTS)
        a->segment_ids = segment_ids;
    if (c->requires & ATTNCONF_CAP_BLOCKS)
        a->block_ids = block_ids;
    if (c->requires & ATTNCONF_CAP_SINKS)
        a->sinks = sinks;
    return sc;
fail:
    run_sdpa_release(sc);
    return NULL;
}

/* ---- device memory (seventh revision) ----------------------------------------------------
 *
 * For a backend with ATTNCONF_CAP_DEVICE, the host buffers laid out above are mirrored on the
 * device: each tensor (q, k, v, the mask, the output) gets a device buffer of its bytes plus
 * HR_DEVICE_MARGIN canary bytes after them, written through copy_to_device (the output's own
 * bytes with the 0xFF fill).  After sdpa and synchronize every buffer is copied back whole: a
 * changed canary is a write past the end of that buffer, a changed input byte a write into an
 * input, each a FAIL naming the buffer.  Then the output's bytes go into the guarded host
 * output and are judged as for a host backend.  No margin can precede a buffer: a handle
 * stands for its buffer's first byte and attnconf_tensor has no byte offset (backend.h). */
#define HR_DEVICE_MARGIN ((size_t)4096)

typedef struct run_dev_buf {
    void *handle;            /* NULL = none */
    const run_guarded *host; /* the host bytes it mirrors */
    const char *name;        /* "input q", ..., "output buffer" */
} run_dev_buf;

/* The canary of a device margin: the guarded buffers' pattern, from its own start. */
static void run_dev_canary(unsigned char *m, size_t n)
{
    for (size_t i = 0; i < n; i++)
        m[i] = run_canary_byte(i);
}

/* Allocate d's device buffer and write the host bytes and the canary margin.  0, or -1 with
 * an ERROR in r. */
static int run_dev_put(const hb_backend *hb, run_dev_buf *d, unsigned char *scratch, hr_result *r,
                       double *copy_s)
{
    const size_t len = d->host->len;
    int rc = hb_device_alloc(hb, len + HR_DEVICE_MARGIN, &d->handle);
    if (rc != ATTNCONF_OK || !d->handle) {
        d->handle = NULL;
        run_set(r, HR_ERROR, "device_alloc of %zu bytes for the %s returned %s: %s",
                len + HR_DEVICE_MARGIN, d->name, hb_code_name(rc), hb_last_error(hb));
        return -1;
    }
    run_dev_canary(scratch, HR_DEVICE_MARGIN);
    if ((rc = hb_copy_to_device(hb, d->handle, 0, d->host->data, len, copy_s)) != ATTNCONF_OK ||
        (rc = hb_copy_to_device(hb, d->handle, len, scratch, HR_DEVICE_MARGIN, copy_s)) !=
            ATTNCONF_OK) {
        run_set(r, HR_ERROR, "copy_to_device of the %s returned %s: %s", d->name, hb_code_name(rc),
                hb_last_error(hb));
        return -1;
    }
    return 0;
}

/* Copy d's whole device buffer into scratch (len + margin bytes) and check it: the margin
 * against the canary and, for an input (`input`), the bytes against the host copy.  Returns 1
 * with a FAIL (or an ERROR when the copy failed) in r, else 0. */
static int run_dev_check(const hb_backend *hb, const run_dev_buf *d, int input,
                         unsigned char *scratch, hr_result *r, double *copy_s)
{
    const size_t len = d->host->len;
    int rc = hb_copy_from_device(hb, scratch, d->handle, 0, len + HR_DEVICE_MARGIN, copy_s);
    if (rc != ATTNCONF_OK) {
        run_set(r, HR_ERROR, "copy_from_device of the %s returned %s: %s", d->name,
                hb_code_name(rc), hb_last_error(hb));
        return 1;
    }
    size_t lo = SIZE_MAX, hi = 0;
    for (size_t i = 0; i < HR_DEVICE_MARGIN; i++)
        if (scratch[len + i] != run_canary_byte(i)) {
            lo = lo == SIZE_MAX ? i : lo;
            hi = i;
        }
    if (lo != SIZE_MAX) {
        run_set(r, HR_FAIL,
                "backend wrote %zu bytes past the end of the %s on the device (offset "
                "+%zu..+%zu)",
                hi - lo + 1, d->name, lo, hi);
        return 1;
    }
    for (size_t i = 0; input && i < len; i++)
        if (scratch[i] != d->host->data[i]) {
            lo = lo == SIZE_MAX ? i : lo;
            hi = i;
        }
    if (lo != SIZE_MAX) {
        run_set(r, HR_FAIL,
                "backend modified the %s on the device (bytes %zu..%zu of %zu changed; inputs "
                "are read-only)",
                d->name, lo, hi, len);
        return 1;
    }
    if (!input)
        memcpy(d->host->data, scratch, len);
    return 0;
}

/* run_sdpa on a device backend: the same call with the tensors in device buffers. */
static void run_sdpa_device(const run_ctx *rn, const acase *c, run_sdpa_call *sc, hr_result *r)
{
    const hb_backend *hb = rn->backend;
    /* q, k, v, mask, out; v may be a view of k's buffer (view_k_prefix): one device buffer. */
    const attnconf_tensor *host[4] = {&sc->q, &sc->k, &sc->v, sc->args.mask};
    run_dev_buf dev[5];
    memset(dev, 0, sizeof dev);
    attnconf_tensor dt[5] = {sc->q, sc->k, sc->v, sc->mask, sc->out};
    static const char *const names[5] = {"input q", "input k", "input v", "input mask",
                                         "output buffer"};
    size_t most = sc->outg.len;
    for (int i = 0; i < 4; i++)
        most = sc->own[i].len > most ? sc->own[i].len : most;
    unsigned char *scratch = malloc(most + HR_DEVICE_MARGIN);
    double copy_s = 0;
    int rc = ATTNCONF_OK, bad = 0;
    if (!scratch) {
        run_set(r, HR_ERROR, "harness: out of memory for a %zu-byte device copy",
                most + HR_DEVICE_MARGIN);
        return;
    }
    for (int i = 0; i < 5 && !bad; i++) {
        if (i < 4 && !host[i])
            continue;
        int same = -1; /* an earlier input over the same host bytes */
        for (int j = 0; j < i && i < 4; j++)
            if (host[j] && host[j]->data == host[i]->data)
                same = j;
        if (same >= 0) {
            dt[i].data = dev[same].handle;
            continue;
        }
        dev[i].host = i < 4 ? &sc->own[i] : &sc->outg;
        dev[i].name = names[i];
        bad = run_dev_put(hb, &dev[i], scratch, r, &copy_s) != 0;
        dt[i].data = dev[i].handle;
    }
    if (!bad) {
        attnconf_sdpa_args a = sc->args;
        a.q = &dt[0];
        a.k = &dt[1];
        a.v = &dt[2];
        a.mask = sc->args.mask ? &dt[3] : NULL;
        a.out = &dt[4];
        rc = hb_sdpa_synchronized(hb, &a, &r->seconds);
        /* The output first (a write past it is the likeliest bug), then every input. */
        bad = run_dev_check(hb, &dev[4], 0, scratch, r, &copy_s);
        for (int i = 0; i < 4 && !bad; i++)
            if (dev[i].handle)
                bad = run_dev_check(hb, &dev[i], 1, scratch, r, &copy_s);
    }
    if (!bad && !run_classify_rc(rn, c, rc, r)) {
        if (dt[4].data != dev[4].handle) {
            run_set(r, HR_FAIL, "backend replaced the output data pointer (the device handle)");
        } else {
            dt[4].data = sc->outg.data; /* judged on the host copy */
            run_check_output(c, &sc->before, &dt[4], sc->capacity, 0, r);
        }
    }
    for (int i = 0; i < 5; i++)
        hb_device_free(hb, dev[i].handle);
    free(scratch);
}

static void run_sdpa(const run_ctx *rn, const acase *c, hr_result *r)
{
    run_sdpa_call *sc = run_sdpa_prepare(c, r);
    if (!sc)
        return;
    if (hb_is_device(rn->backend)) {
        run_sdpa_device(rn, c, sc, r);
        run_sdpa_release(sc);
        return;
    }
    int rc = hb_sdpa(rn->backend, &sc->args, &r->seconds);

    /* A write outside the buffer is a FAIL whatever the return code said: it would corrupt
     * the caller's memory in real use. */
    if (!run_guarded_check(&sc->outg, r) && !run_classify_rc(rn, c, rc, r))
        run_check_output(c, &sc->before, &sc->out, sc->capacity, 0, r);
    run_sdpa_release(sc);
}

static void run_mask(const run_ctx *rn, const acase *c, hr_result *r)
{
    const hb_backend *hb = rn->backend;
    attnconf_tensor keep;
    memset(&keep, 0, sizeof keep);
    keep.dtype = ATTNCONF_BOOL;
    keep.ndim = 4;
    if (c->expected.error == 0) {
        keep.ndim = c->expected.ndim;
        for (int32_t d = 0; d < c->expected.ndim && d < 4; d++)
            keep.shape[d] = c->expected.shape[d];
    } else {
        /* A must-reject case: the shape its parameters imply, which may be negative; a
         * conforming backend rejects before writing. */
        keep.shape[0] =
            (c->lengths || c->left_padding || c->segment_ids || c->block_ids) ? c->batch : 1;
        keep.shape[1] = 1;
        keep.shape[2] = c->lq;
        if (c->kv_len != 0)
            keep.shape[3] = c->kv_len; /* a static key buffer (may be invalid: rejected) */
        else if (__builtin_add_overflow(c->offset, c->lq, &keep.shape[3]))
            keep.shape[3] = -1; /* unrepresentable: treated as invalid below */
    }
    int negative = 0;
    for (int32_t d = 0; d < keep.ndim; d++)
        negative |= keep.shape[d] < 0;
    int64_t numel = negative ? 0 : run_numel_capped(keep.ndim, keep.shape);
    if (numel < 0) {
        char s[96];
        run_shape_text(keep.ndim, keep.shape, s, sizeof s);
        run_set(r, HR_ERROR, "case: keep mask shape %s is over the %lld-element limit", s,
                (long long)ACASE_MAX_TENSOR_NUMEL);
        return;
    }
    /* The ABI's id lists are [batch, Lk]: rows of another length cannot be posed there (a
     * backend would read past them). */
    if ((c->segment_ids || c->block_ids) && c->ids_len != keep.shape[3]) {
        run_set(r, HR_ERROR,
                "case: the id lists have %lld entries per row, the keep mask has Lk = %lld",
                (long long)c->ids_len, (long long)keep.shape[3]);
        return;
    }
    run_contiguous_strides(keep.ndim, keep.shape, keep.strides);
    size_t bytes = (size_t)(numel > 0 ? numel : 1);
    run_guarded kg, lg, pg, sg, bg;
    memset(&lg, 0, sizeof lg);
    memset(&pg, 0, sizeof pg);
    memset(&sg, 0, sizeof sg);
    memset(&bg, 0, sizeof bg);
    if (run_guarded_alloc(&kg, bytes, "keep mask buffer")) {
        run_set(r, HR_ERROR, "harness: out of memory for a %zu-byte keep mask", bytes);
        return;
    }
    memset(kg.data, 0xFF, bytes);
    keep.data = kg.data;
    /* lengths / left_padding: read-only copies, like the sdpa inputs. */
    size_t nb = c->batch > 0 ? (size_t)c->batch : 0; /* the reader's entry count */
    const int64_t *lengths = NULL, *left_padding = NULL, *segment_ids = NULL, *block_ids = NULL;
    const size_t ids = nb * (size_t)(c->ids_len > 0 ? c->ids_len : 0);
    if (run_readonly_ints(c->lengths, nb, &lg, "input lengths", &lengths) ||
        run_readonly_ints(c->left_padding, nb, &pg, "input left_padding", &left_padding) ||
        run_readonly_ints(c->segment_ids, ids, &sg, "input segment_ids", &segment_ids) ||
        run_readonly_ints(c->block_ids, ids, &bg, "input block_ids", &block_ids)) {
        run_set(r, HR_ERROR, "harness: out of memory laying out the inputs");
        goto done;
    }
    attnconf_tensor before = keep;

    attnconf_mask_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.lq = c->lq;
    a.offset = c->offset;
    a.window = c->window;
    a.batch = c->batch;
    a.lengths = lengths;
    a.left_padding = left_padding;
    a.keep = &keep;
    /* Set only for a backend that reports it (a case using it requires mask.kv_len, so
     * another backend never gets here with kv_len != 0). */
    if (hb->caps & ATTNCONF_CAP_KV_LEN)
        a.kv_len = c->kv_len;
    if (c->requires & ATTNCONF_CAP_MASK_CHUNK)
        a.chunk = c->chunk;
    if (c->requires & ATTNCONF_CAP_MASK_SEGMENTS)
        a.segment_ids = segment_ids;
    if (c->requires & ATTNCONF_CAP_MASK_BLOCKS)
        a.block_ids = block_ids;

    int rc = hb_build_mask(hb, &a, &r->seconds);

    if (!run_guarded_check(&kg, r) && !run_classify_rc(rn, c, rc, r))
        run_check_output(c, &before, &keep, bytes, 1, r);
done:
    run_guarded_free(&kg);
    run_guarded_free(&lg);
    run_guarded_free(&pg);
    run_guarded_free(&sg);
    run_guarded_free(&bg);
}

/* r->repro: the command that writes the reproducer of sdpa case c on rn's backend, when one
 * can be written: an exec: adapter (it answers repro itself, or says it cannot), or a plugin
 * a repro writer is registered for.  "" otherwise. */
static void run_result_repro(const run_ctx *rn, const acase *c, hr_result *r)
{
    r->repro[0] = '\0';
    const char *arg = rn->backend_arg ? rn->backend_arg : "";
    const char *name = rn->backend && rn->backend->be ? rn->backend->be->name : NULL;
    char spec[64]; /* only whether there is one: -1 (too long for spec) counts as one */
    /* The plugins' repro writers know the calls of ABI revisions one to four: a case using a
     * term of the fifth (SPEC clauses 20-22) gets no reproducer from them rather than one that
     * silently drops the term.  An exec: adapter answers for itself. */
    const uint64_t terms = ATTNCONF_CAP_SOFTCAP | ATTNCONF_CAP_ALIBI | ATTNCONF_CAP_SINKS |
                           ATTNCONF_CAP_CHUNK | ATTNCONF_CAP_SEGMENTS | ATTNCONF_CAP_BLOCKS;
    if (c->op != ACASE_OP_SDPA ||
        (!hb_spec_is_exec(arg) && (!name || (c->requires & terms) ||
                                   repro_writer_for(name, spec, sizeof spec, NULL, 0) == 0)))
        return;
    char *cmd = r->repro;
    size_t cap = sizeof r->repro, len = 0;
    int bad = run_cmd_backend(rn, " repro", cmd, cap, &len);
    bad |= run_cmd_add(cmd, cap, &len, " --cases ", 0);
    bad |= run_cmd_add(cmd, cap, &len, rn->cases_dir ? rn->cases_dir : "", 1);
    bad |= run_cmd_add(cmd, cap, &len, " --case ", 0);
    bad |= run_cmd_add(cmd, cap, &len, c->id, 1);
    if (bad)
        r->repro[0] = '\0'; /* a truncated command would write something else: give none */
}

void run_result_case_info(const acase *c, hr_result *r)
{
    /* The case's rule ids (run_result_begin sees only the id; a case that did not load has none). */
    r->nrules = 0;
    for (int i = 0; i < c->nrules && i < ACASE_MAX_RULES; i++)
        if (c->rules[i])
            snprintf(r->rules[r->nrules++], sizeof r->rules[0], "%s", c->rules[i]);
    snprintf(r->description, sizeof r->description, "%s", c->description ? c->description : "");
    snprintf(r->dtype, sizeof r->dtype, "%s",
             c->op == ACASE_OP_SDPA && c->q.present ? attnref_dtype_name(c->q.dtype)
             : c->op == ACASE_OP_MASK               ? "bool"
             : c->op == ACASE_OP_CACHE && c->cache  ? attnref_dtype_name(c->cache->params.dtype)
             : c->op == ACASE_OP_PAGED && c->paged  ? attnref_dtype_name(c->paged->dtype)
                                                    : "");
    r->elements = c->op == ACASE_OP_SDPA
                      ? c->q.numel + c->k.numel + c->v.numel + (c->mask.present ? c->mask.numel : 0)
                  : c->op == ACASE_OP_MASK ? c->expected.numel
                                           : 0;
}

static void run_case_calls(const run_ctx *rn, const acase *c, hr_result *r)
{
    const hb_backend *hb = rn->backend;
    run_result_case_info(c, r);
    run_result_repro(rn, c, r);
    uint64_t missing = c->requires & ~hb->caps;
    if (c->op == ACASE_OP_MASK && !HB_HAS(hb->be, build_mask))
        missing |= ATTNCONF_CAP_BUILD_MASK;
    if (missing) {
        char names[400];
        acase_caps_text(missing, ", ", names, sizeof names);
        run_set(r, HR_NOT_SUPPORTED, "backend lacks %s", names);
        return;
    }
    if (c->expected.error == 0 && !c->expected.values && c->expected.numel > 0) {
        run_set(r, HR_ERROR, "case: no expected values");
        return;
    }
    switch (c->op) {
    case ACASE_OP_SDPA: run_sdpa(rn, c, r); break;
    case ACASE_OP_MASK: run_mask(rn, c, r); break;
    case ACASE_OP_CACHE: run_cache_case(rn, c, r); break; /* run_cache.c */
    case ACASE_OP_PAGED: run_paged_case(rn, c, r); break; /* run_paged.c */
    default: run_set(r, HR_ERROR, "case: unknown op %d", (int)c->op); break;
    }
}

void run_case(const run_ctx *rn, const acase *c, hr_result *r)
{
    hb_call_case(c->id); /* for the exit guard's message (plugin.h), should the backend exit() */
    run_case_calls(rn, c, r);
    hb_call_case(NULL);
}
