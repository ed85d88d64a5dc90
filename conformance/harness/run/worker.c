/* worker.c — run a backend plugin's cases in a forked worker process (see worker.h). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, strsignal, with POSIX 2008 */

#include "run/worker.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

static double hw_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Send all n bytes; MSG_NOSIGNAL: a dead peer is an error return, not a SIGPIPE. */
static int hw_send(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

/* 1 if process pid has exited (it stays a zombie, its pid and process group reserved, until
 * reaped). */
static int hw_exited(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return pid > 0 && waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           si.si_pid == pid;
}

/* Receive exactly n bytes before the deadline (monotonic seconds; <= 0 = none).  Returns 0,
 * 1 on EOF or error (the peer died), or 2 on timeout.  With a deadline and a pid: the worker's
 * death also counts as EOF, checked every 100 ms, since a process the backend forked may hold
 * the socket open after the worker itself died. */
static int hw_recv(int fd, void *p, size_t n, double deadline, pid_t pid)
{
    char *c = p;
    while (n) {
        if (deadline > 0) {
            double left = deadline - hw_now();
            if (left <= 0)
                return 2;
            struct pollfd pfd = {fd, POLLIN, 0};
            int pr = poll(&pfd, 1, left > 0.1 ? 100 : (int)(left * 1000.0) + 1);
            if (pr < 0 && errno == EINTR)
                continue;
            if (pr < 0)
                return 1;
            if (pr == 0 && !hw_exited(pid))
                continue; /* re-check the deadline and the worker */
            /* Dead: one last look, for what it wrote before it died. */
            if (pr == 0 && poll(&pfd, 1, 0) <= 0)
                return 1;
        }
        ssize_t r = recv(fd, c, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

void hw_describe(const hb_backend *hb, hw_hello *hello)
{
    const attnconf_backend *be = hb->be;
    memset(hello, 0, sizeof *hello);
    hello->ok = 1;
    snprintf(hello->name, sizeof hello->name, "%s", be->name);
    snprintf(hello->version, sizeof hello->version, "%s", be->version ? be->version : "");
    snprintf(hello->path, sizeof hello->path, "%s", hb->path);
    hello->caps = hb->caps;
    /* A first-revision table has no options member (hb_load's rule). */
    const attnconf_option_info *list =
        be->struct_size >= offsetof(attnconf_backend, options) + sizeof be->options ? be->options
                                                                                   : NULL;
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

/* The worker process: never returns. */
static void hw_child(int fd, const hw_config *cfg, char *note, size_t note_len)
{
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a killed harness */
#endif
    /* A process group of its own (the parent sets it too, so neither order races): whatever
     * the backend forks dies with the worker (hw_reap kills the group).  The terminal's Ctrl-C
     * no longer reaches it directly; it dies with the harness instead (above).  A background
     * group writing to a terminal with `stty tostop` would be stopped by SIGTTOU: ignored, the
     * write goes through. */
    setpgid(0, 0);
    signal(SIGTTOU, SIG_IGN);
    /* The backend must not print to stdout (backend.h), but one that does must not corrupt
     * the results the harness may be writing there: its stdout is the harness's stderr. */
    dup2(STDERR_FILENO, STDOUT_FILENO);
    /* A crashing backend costs a case, not a core file per case. */
    struct rlimit rl = {0, 0};
    setrlimit(RLIMIT_CORE, &rl);
    if (cfg->memory_limit_mib) {
        rl.rlim_cur = rl.rlim_max = (rlim_t)cfg->memory_limit_mib * 1024 * 1024;
        setrlimit(RLIMIT_AS, &rl);
    }
    hr_fault_note_install(note, note_len);

    static hw_hello hello;
    static hb_backend hb;
    memset(&hello, 0, sizeof hello);
    if (hb_load(cfg->spec, cfg->builtin_dir, cfg->oo, &hb, hello.err, sizeof hello.err) == 0)
        hw_describe(&hb, &hello);
    if (hw_send(fd, &hello, sizeof hello) != 0 || !hello.ok)
        _exit(0);
    if (!cfg->rn) { /* hw_probe: the hello was all it asked for */
        hb_unload(&hb);
        _exit(0);
    }
    hr_runner rn = *cfg->rn;
    rn.backend = &hb;
    static hr_result r;
    for (;;) {
        uint64_t i;
        if (hw_recv(fd, &i, sizeof i, 0, 0) != 0)
            break; /* the parent is done (or gone) */
        const acase *c = cfg->get_case(cfg->ud, (size_t)i);
        note[0] = '\0';
        hr_result_begin(&rn, c ? c->id : "?", &r);
        if (c)
            hr_run_case(&rn, c, &r);
        else
            r.status = HR_ERROR; /* cannot happen: the parent sends only loaded cases */
        if (hw_send(fd, &r, sizeof r) != 0)
            break;
    }
    hb_unload(&hb);
    /* _exit: the parent's stdio buffers were copied by fork and are not ours to flush. */
    _exit(0);
}

/* Wait (polling, unreaped) until pid has exited or `until` passed; 1 if it exited. */
static int hw_wait_exit(pid_t pid, double until)
{
    while (!hw_exited(pid) && hw_now() < until) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return hw_exited(pid);
}

/* After hw_recv's EOF (rc 1) from a worker that may still live (it, or the backend, closed the
 * socket): it gets until the deadline to exit, else it is a hang like any other (rc 2). */
static int hw_after_eof(const hw_worker *w, int rc, double deadline)
{
    return rc == 1 && !hw_wait_exit(w->pid, deadline) ? 2 : rc;
}

/* 1 once this process is a subreaper for its workers (hw_start). */
static int hw_subreaper;

#ifdef __linux__
/* Kill and reap every child of this process: with the harness a subreaper
 * (hw_start), these are what a backend forked and moved out of the worker's process group
 * (setsid, setpgid), orphaned to us when the worker died.  Bounded: a backend forking as fast
 * as it is killed is not chased for ever. */
static void hw_reap_strays(void)
{
    const pid_t self = getpid();
    for (int round = 0; round < 50; round++) {
        DIR *d = opendir("/proc");
        if (!d)
            return;
        int found = 0;
        struct dirent *de;
        while ((de = readdir(d)) != NULL) {
            char *end;
            long pid = strtol(de->d_name, &end, 10);
            if (*end || pid <= 0)
                continue;
            char path[64], buf[512];
            snprintf(path, sizeof path, "/proc/%ld/stat", pid);
            FILE *f = fopen(path, "r");
            size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
            if (f)
                fclose(f);
            buf[n] = '\0';
            /* "pid (comm) state ppid ...": comm may hold spaces and parentheses. */
            const char *rp = strrchr(buf, ')');
            long ppid = 0;
            char state = 0;
            if (!rp || sscanf(rp + 1, " %c %ld", &state, &ppid) != 2 || ppid != self)
                continue;
            found = 1;
            kill((pid_t)pid, SIGKILL);
            while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
                ;
        }
        closedir(d);
        if (!found)
            return;
    }
}
#else
static void hw_reap_strays(void)
{
}
#endif

/* Reap the worker (already dead, or killed here first when `kill_it`); returns the wait
 * status, or -1. */
static int hw_reap(hw_worker *w, int kill_it)
{
    int st = -1;
    if (w->pid > 0) {
        if (kill_it)
            kill(w->pid, SIGKILL);
        /* Then what the backend forked (the worker's process group): done before the worker is
         * reaped, while its pid, the group's id, cannot have been given to anyone else. */
        kill(-w->pid, SIGKILL);
        while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (hw_subreaper)
            hw_reap_strays(); /* and what escaped the group */
    }
    if (w->fd >= 0)
        close(w->fd);
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
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(hello->err, sizeof hello->err, "cannot start a worker: socketpair: %s",
                 strerror(errno));
        return -1;
    }
#ifdef __linux__
    /* What a backend forks and moves out of the worker's process group (setsid) is orphaned
     * to the harness instead of init when the worker dies, so hw_reap can end it too.  Only
     * for a worker that runs cases (run, fuzz): the harness then has no other children. */
    if (cfg->rn)
        hw_subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
#endif
    fflush(stdout); /* else the child's copy of the buffer could be written twice */
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(hello->err, sizeof hello->err, "cannot start a worker: fork: %s",
                 strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0) {
        close(sv[0]);
        hw_child(sv[1], cfg, w->note, w->note_len);
    }
    close(sv[1]);
    setpgid(pid, pid); /* as the child does: whichever runs first */
    w->pid = pid;
    w->fd = sv[0];
    /* Loading (dlopen, open) is bounded like a case: a backend that hangs in open must not
     * hang the run. */
    const double deadline = hw_now() + cfg->case_timeout_s;
    int rc = hw_recv(w->fd, hello, sizeof *hello, deadline, pid);
    if (rc != 0) {
        rc = hw_after_eof(w, rc, deadline);
        int st = hw_reap(w, 1);
        if (rc == 2)
            snprintf(hello->err, sizeof hello->err,
                     "%s: the worker loading the backend gave no answer after %g s", cfg->spec,
                     cfg->case_timeout_s);
        else if (st != -1 && WIFSIGNALED(st))
            snprintf(hello->err, sizeof hello->err,
                     "%s: loading the backend killed the worker with signal %d (%s)%s%.300s",
                     cfg->spec, WTERMSIG(st), strsignal(WTERMSIG(st)), w->note[0] ? ": " : "",
                     w->note); /* the fault handler's note, e.g. a stack overflow in open */
        else
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
    TERM(description);
    TERM(dtype);
    TERM(expect_pattern);
    TERM(expect_reason);
    TERM(expect_upstream);
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
    double t0 = hw_now();
    int rc = hw_send(w->fd, &idx, sizeof idx) == 0 ? 0 : 1;
    static hr_result got; /* ~12 KiB: not on the stack */
    const double deadline = t0 + cfg->case_timeout_s;
    if (rc == 0)
        rc = hw_recv(w->fd, &got, sizeof got, deadline, w->pid);
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
        r->seconds = hw_now() - t0;
        r->has_stats = 0;
        r->status = HR_CRASH;
        snprintf(r->message, sizeof r->message,
                 "the worker answered with the result of case '%.200s' (a process the backend "
                 "forked, or a stray write to the harness's socket, broke the exchange): the "
                 "worker and its process group were killed", other);
        return;
    }
    rc = hw_after_eof(w, rc, deadline);
    int st = hw_reap(w, rc == 2);
    r->seconds = hw_now() - t0;
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
    if (st != -1 && WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        snprintf(how, sizeof how, "killed by signal %d (%s)%s", sig, strsignal(sig),
                 sig == SIGKILL ? ", not by the harness: it may have run out of memory (the "
                                  "kernel's OOM killer) or hit a hard resource limit it set "
                                  "(RLIMIT_CPU)"
                                : "");
    } else if (st != -1 && WIFEXITED(st)) {
        snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(st));
    } else {
        snprintf(how, sizeof how, "lost (no exit status)");
    }
    w->note[w->note_len - 1] = '\0';
    snprintf(r->message, sizeof r->message, "backend crashed its worker process: %s%s%s", how,
             w->note[0] ? ": " : "", w->note);
}

void hw_stop(hw_worker *w)
{
    if (w->pid <= 0)
        return;
    shutdown(w->fd, SHUT_RDWR); /* EOF: the worker closes the backend and exits */
    /* A backend whose close hangs is killed after a grace period. */
    int hung = !hw_wait_exit(w->pid, hw_now() + 5.0);
    int st = hw_reap(w, 1); /* the worker, if still alive, and whatever the backend left behind */
    /* Every result is in by now, so this changes none: but a backend that dies in close()
     * would leak or corrupt in real use, so it is said. */
    if (hung)
        fprintf(stderr, "attnconf: warning: the backend's close() did not return within 5 s: "
                "its worker was killed\n");
    else if (st != -1 && WIFSIGNALED(st))
        fprintf(stderr, "attnconf: warning: the backend's close() killed its worker with "
                "signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) != 0)
        fprintf(stderr, "attnconf: warning: the backend's close() made its worker exit with "
                "status %d\n", WEXITSTATUS(st));
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
