/* worker.c — run a backend plugin's cases in a forked worker process (see worker.h). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, with POSIX 2008 */

#include "run/worker.h"

#include "backend/call.h"
#include "backend/plugin.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/proc.h"

void hw_describe(const hb_backend *hb, hw_hello *hello)
{
    const attnconf_backend *be = hb->be;
    memset(hello, 0, sizeof *hello);
    hello->ok = 1;
    snprintf(hello->name, sizeof hello->name, "%s", be->name);
    snprintf(hello->version, sizeof hello->version, "%s", be->version ? be->version : "");
    snprintf(hello->path, sizeof hello->path, "%s", hb->path);
    hello->caps = hb->caps;
    if (hb_is_device(hb)) {
        attnconf_device_info di;
        int rc = hb_device_info(hb, &di);
        static const char *const kinds[] = {[1] = "cpu",    [2] = "cuda",  [4] = "opencl",
                                            [7] = "vulkan", [8] = "metal", [10] = "rocm"};
        const char *kind = di.device_type >= 1 && di.device_type <= 10 && kinds[di.device_type]
                               ? kinds[di.device_type]
                               : "unknown type";
        if (rc != ATTNCONF_OK)
            snprintf(hello->device, sizeof hello->device, "device_info returned %s: %.160s",
                     hb_code_name(rc), hb_last_error(hb));
        else if (di.memory_bytes)
            snprintf(hello->device, sizeof hello->device, "%s %d: %s, %llu MiB", kind,
                     (int)di.device_id, di.name, (unsigned long long)(di.memory_bytes >> 20));
        else
            snprintf(hello->device, sizeof hello->device, "%s %d: %s, memory unknown", kind,
                     (int)di.device_id, di.name);
    }
    /* A first-revision table has no options member (hb_load's rule). */
    const attnconf_option_info *list = HB_HAS_MEMBER(be, options) ? be->options : NULL;
    size_t n = 0;
    while (list && list[n].key && n < 256)
        n++;
    hello->noptions = (uint32_t)n;
    /* Room is kept for the closing line, so a cut list says it was cut. */
    const size_t keep = 96;
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        size_t room = sizeof hello->options - keep - used;
        int w = snprintf(hello->options + used, room, "  %s (default: %s): %s\n", list[i].key,
                         list[i].default_value ? list[i].default_value : "none",
                         list[i].help ? list[i].help : "");
        if (w < 0 || (size_t)w >= room) {
            snprintf(hello->options + used, sizeof hello->options - used,
                     "  ... and %zu more, not shown (the list is over %d bytes)\n", n - i,
                     HW_OPTIONS_TEXT);
            break;
        }
        used += (size_t)w;
    }
}

/* What hw_child needs, through proc_fork's one argument. */
typedef struct hw_child_arg {
    const hw_config *cfg;
    char *note;
    size_t note_len;
} hw_child_arg;

/* The worker process (proc_fork has given it its process group, PDEATHSIG, its stdout on
 * the harness's stderr, which the backend must not corrupt, and no core files): never
 * returns. */
static void hw_child(int fd, void *arg)
{
    const hw_config *cfg = ((const hw_child_arg *)arg)->cfg;
    char *note = ((const hw_child_arg *)arg)->note;
    size_t note_len = ((const hw_child_arg *)arg)->note_len;
    /* A backend's exit() ends this worker with the backend's own status, which the parent
     * reports as the case's CRASH ("exited with status N"): not plugin.h's in-process verdict. */
    hb_exit_guard_refuse();
    if (cfg->memory_limit_mib) {
        struct rlimit rl;
        rl.rlim_cur = rl.rlim_max = (rlim_t)cfg->memory_limit_mib * 1024 * 1024;
        setrlimit(RLIMIT_AS, &rl);
    }
    run_fault_note_install(note, note_len);

    static hw_hello hello;
    static hb_backend hb;
    memset(&hello, 0, sizeof hello);
    if (hb_load(cfg->spec, cfg->builtin_dir, cfg->oo, &hb, hello.err, sizeof hello.err) == 0)
        hw_describe(&hb, &hello);
    if (proc_send(fd, &hello, sizeof hello) != 0 || !hello.ok)
        _exit(0);
    if (!cfg->rn) { /* hw_probe: the hello was all it asked for */
        hb_unload(&hb);
        _exit(0);
    }
    run_ctx rn = *cfg->rn;
    rn.backend = &hb;
    static hr_result r;
    for (;;) {
        uint64_t i;
        if (proc_recv(fd, &i, sizeof i, 0, 0) != 0)
            break; /* the parent is done (or gone) */
        const acase *c = cfg->get_case(cfg->ud, (size_t)i);
        note[0] = '\0';
        run_result_begin(&rn, c ? c->id : "?", &r);
        if (c)
            run_case(&rn, c, &r);
        else
            r.status = HR_ERROR; /* cannot happen: the parent sends only loaded cases */
        /* What the backend printed and left in stdout's buffer (empty at the fork: proc_fork
         * flushed it) goes out now, to the harness's stderr with its case, not lost at _exit. */
        fflush(stdout);
        if (proc_send(fd, &r, sizeof r) != 0)
            break;
    }
    hb_unload(&hb);
    /* _exit: the parent's stdio buffers were copied by fork and are not ours to flush. */
    _exit(0);
}

/* After proc_recv's EOF (rc 1) from a worker that may still live (it, or the backend, closed the
 * socket): it gets until the deadline to exit, else it is a hang like any other (rc 2). */
static int hw_after_eof(const hw_worker *w, int rc, double deadline)
{
    return rc == 1 && !proc_wait_exit(w->pid, deadline, NULL) ? 2 : rc;
}

/* Reap the worker (already dead, or killed here first when `kill_it`); returns the wait
 * status, or -1. */
static int hw_reap(hw_worker *w, int kill_it)
{
    /* hw_worker keeps its own pid and fd (cmd_run.c and fuzz set them): a proc_child view. */
    proc_child c = {w->pid, w->fd, -1};
    int st = proc_reap(&c, kill_it);
    w->fd = -1;
    w->pid = 0;
    return st;
}

int hw_start(hw_worker *w, const hw_config *cfg, hw_hello *hello)
{
    memset(hello, 0, sizeof *hello);
    if (!w->note) {
        /* Shared with every worker, so the parent can read a dead worker's last words. */
        void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            snprintf(hello->err, sizeof hello->err, "cannot start a worker: mmap: %s",
                     strerror(errno));
            return -1;
        }
        w->note = m;
        w->note_len = 4096;
    }
    w->note[0] = '\0';
    /* What a backend forks and moves out of the worker's process group (setsid) is orphaned
     * to the harness instead of init when the worker dies, so hw_reap can end it too.  Only
     * for a worker that runs cases (run, fuzz): the harness then has no other children. */
    if (cfg->rn)
        proc_subreaper();
    hw_child_arg arg = {cfg, w->note, w->note_len};
    proc_child c;
    char why[256];
    if (proc_fork(&c, hw_child, &arg, why, sizeof why) != 0) {
        snprintf(hello->err, sizeof hello->err, "cannot start a worker: %s", why);
        return -1;
    }
    const pid_t pid = c.pid;
    w->pid = pid;
    w->fd = c.fd;
    /* Loading (dlopen, open) is bounded like a case: a backend that hangs in open must not
     * hang the run. */
    const double deadline = mono_now() + cfg->case_timeout_s;
    int rc = proc_recv(w->fd, hello, sizeof *hello, deadline, pid);
    if (rc != 0) {
        rc = hw_after_eof(w, rc, deadline);
        int st = hw_reap(w, 1);
        if (rc == 2)
            snprintf(hello->err, sizeof hello->err,
                     "%s: the worker loading the backend gave no answer after %g s", cfg->spec,
                     cfg->case_timeout_s);
        else if (st != -1 && WIFSIGNALED(st)) {
            char sig[128];
            proc_describe_signal(WTERMSIG(st), sig, sizeof sig);
            snprintf(hello->err, sizeof hello->err,
                     "%s: loading the backend killed the worker with %s%s%.300s", cfg->spec, sig,
                     w->note[0] ? ": " : "",
                     w->note); /* the fault handler's note, e.g. a stack overflow in open */
        } else
            snprintf(hello->err, sizeof hello->err,
                     "%s: loading the backend made the worker exit with status %d", cfg->spec,
                     st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        return -1;
    }
    hello->err[sizeof hello->err - 1] = '\0';
    hello->name[sizeof hello->name - 1] = '\0';
    hello->version[sizeof hello->version - 1] = '\0';
    hello->path[sizeof hello->path - 1] = '\0';
    hello->options[sizeof hello->options - 1] = '\0';
    hello->device[sizeof hello->device - 1] = '\0';
    if (hello->noptions > 256)
        hello->noptions = 256;
    if (!hello->ok)
        hw_reap(w, 0); /* it exits after a failed hello */
    return 0;
}

/* Force the terminators of a result that came over the wire (from our own code, but written
 * in a process a backend may have scribbled over). */
static void hw_sanitize(hr_result *r)
{
#define TERM(f) r->f[sizeof r->f - 1] = '\0'
    TERM(id);
    TERM(family);
    TERM(message);
    TERM(rerun);
    TERM(repro);
    TERM(description);
    TERM(dtype);
    TERM(expect_pattern);
    TERM(expect_reason);
    TERM(expect_upstream);
    TERM(expect_varies);
#undef TERM
    if (r->nrules < 0 || r->nrules > ACASE_MAX_RULES)
        r->nrules = 0;
    for (int k = 0; k < ACASE_MAX_RULES; k++)
        r->rules[k][HR_RULE_MAX - 1] = '\0';
    if ((unsigned)r->status >= (unsigned)HR_STATUS_COUNT)
        r->status = HR_ERROR;
    if (r->bad_ndim < 0 || r->bad_ndim > 4)
        r->bad_ndim = 0;
}

void hw_run(hw_worker *w, const hw_config *cfg, size_t i, hr_result *r)
{
    uint64_t idx = i;
    double t0 = mono_now();
    int rc = proc_send(w->fd, &idx, sizeof idx) == 0 ? 0 : 1;
    static hr_result got; /* ~12 KiB: not on the stack */
    const double deadline = t0 + cfg->case_timeout_s;
    if (rc == 0)
        rc = proc_recv(w->fd, &got, sizeof got, deadline, w->pid);
    if (rc == 0) {
        hw_sanitize(&got);
        if (strcmp(got.id, r->id) == 0) {
            *r = got;
            return;
        }
        /* Not this case's result: a copy of the worker the backend forked answered too, or
         * something wrote into the socket.  Nothing more from this worker can be trusted. */
        char other[sizeof got.id];
        snprintf(other, sizeof other, "%s", got.id);
        hw_reap(w, 1);
        r->seconds = mono_now() - t0;
        r->has_stats = 0;
        r->status = HR_CRASH;
        snprintf(r->message, sizeof r->message,
                 "the worker answered with the result of case '%.200s' (a process the backend "
                 "forked, or a stray write to the harness's socket, broke the exchange): the "
                 "worker and its process group were killed",
                 other);
        return;
    }
    rc = hw_after_eof(w, rc, deadline);
    int st = hw_reap(w, rc == 2);
    r->seconds = mono_now() - t0;
    r->has_stats = 0;
    if (rc == 2) {
        snprintf(r->message, sizeof r->message,
                 "no result after %g s (--case-timeout): the worker was killed",
                 cfg->case_timeout_s);
        r->status = HR_TIMEOUT;
        return;
    }
    r->status = HR_CRASH;
    char how[256];
    proc_describe(st, how, sizeof how);
    w->note[w->note_len - 1] = '\0';
    snprintf(r->message, sizeof r->message, "backend crashed its worker process: %s%s%s%s", how,
             st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL
                 ? ", not by the harness: it may have run out of memory (the kernel's OOM "
                   "killer) or hit a hard resource limit it set (RLIMIT_CPU)"
                 : "",
             w->note[0] ? ": " : "", w->note);
}

void hw_stop(hw_worker *w)
{
    if (w->pid <= 0)
        return;
    shutdown(w->fd, SHUT_RDWR); /* EOF: the worker closes the backend and exits */
    /* A backend whose close hangs is killed after a grace period. */
    int hung = !proc_wait_exit(w->pid, mono_now() + 5.0, NULL);
    int st = hw_reap(w, 1); /* the worker, if still alive, and whatever the backend left behind */
    /* Every result is in by now, so this changes none: but a backend that dies in close()
     * would leak or corrupt in real use, so it is said. */
    if (hung)
        fprintf(stderr, "attnconf: warning: the backend's close() did not return within 5 s: "
                        "its worker was killed\n");
    else if (st != -1 && WIFSIGNALED(st)) {
        char sig[128];
        proc_describe_signal(WTERMSIG(st), sig, sizeof sig);
        fprintf(stderr, "attnconf: warning: the backend's close() killed its worker with %s\n",
                sig);
    } else if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != 0)
        fprintf(stderr,
                "attnconf: warning: the backend's close() made its worker exit with "
                "status %d\n",
                WEXITSTATUS(st));
}

int hw_probe(const char *spec, const char *builtin_dir, const hb_open_opts *oo, double timeout_s,
             hw_hello *hello)
{
    hw_config cfg = {spec, builtin_dir, oo, NULL, timeout_s, 0, NULL, NULL};
    hw_worker w = {0, -1, NULL, 0};
    int rc = hw_start(&w, &cfg, hello);
    hw_stop(&w); /* it exits after its hello; a close that hangs is killed */
    if (w.note)
        munmap(w.note, w.note_len);
    return rc == 0 && hello->ok ? 0 : -1;
}
