/* proc.c — a supervised child process (proc.h), moved here from run's worker and the exec:
 * bridge so every room that runs untrusted code gets the same hardening. */
#define _GNU_SOURCE /* pipe2, strsignal */

#include "common/proc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "common/clock.h"

/* The process that made itself a subreaper: a fork inherits the variable, not the role, so
 * only that process may treat its children as strays. */
static pid_t proc_subreaper_pid;

int proc_subreaper(void)
{
#ifdef __linux__
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) {
        proc_subreaper_pid = getpid();
        return 1;
    }
#endif
    return 0;
}

/* In the child, first thing: die with the parent.  A parent that died before the prctl
 * went unnoticed by it, hence the check after. */
static void proc_die_with(pid_t parent)
{
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    if (getppid() != parent)
        _exit(1);
}

int proc_fork(proc_child *c, void (*fn)(int fd, void *arg), void *arg, char *err, size_t n)
{
    *c = (proc_child)PROC_CHILD_NONE;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(err, n, "socketpair: %s", strerror(errno));
        return -1;
    }
    fflush(stdout); /* else the child's copy of the buffer could be written twice */
    fflush(stderr);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, n, "fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0) {
        close(sv[0]);
        proc_die_with(parent);
        /* A process group of its own (the parent sets it too, so neither order races):
         * whatever the child forks dies with it (proc_reap kills the group).  The terminal's
         * Ctrl-C no longer reaches it directly; it dies with the parent instead (above).  A
         * background group writing to a terminal with `stty tostop` would be stopped by
         * SIGTTOU: ignored, the write goes through. */
        setpgid(0, 0);
        signal(SIGTTOU, SIG_IGN);
        dup2(STDERR_FILENO, STDOUT_FILENO);
        /* A crashing backend costs a case, not a core file per case. */
        struct rlimit rl = {0, 0};
        setrlimit(RLIMIT_CORE, &rl);
        fn(sv[1], arg);
        _exit(0); /* not exit(): the parent's atexit handlers and buffers are its own */
    }
    close(sv[1]);
    setpgid(pid, pid); /* as the child does: whichever runs first */
    c->pid = pid;
    c->fd = sv[0];
    return 0;
}

/* The spawned child runs in a process group of its own, so a Ctrl-C at the terminal does not
 * reach it: when this process is interrupted or terminated, it takes the live child's group
 * down first (a hung child's descendants would otherwise outlive it), then dies of the same
 * signal. */
static volatile sig_atomic_t proc_live_pgid;

static void proc_on_fatal_signal(int sig)
{
    if (proc_live_pgid > 0)
        kill(-(pid_t)proc_live_pgid, SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void proc_guard_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
            continue; /* ignored, or someone else's handler (a debugger, a test): leave it */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = proc_on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

static void proc_close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* The spawned child between fork and exec: async-signal-safe calls only (the parent may have
 * threads).  A failed exec reports its errno on `report` (close on exec: EOF means it ran). */
static void proc_exec_child(pid_t parent, const int in[2], const int out[2], int err_fd, int report,
                            const char *cmd, char *const envp[])
{
    proc_die_with(parent);
    setpgid(0, 0); /* one kill reaches whatever the shell starts */
    if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err_fd, 2) < 0) {
        int e = errno;
        (void)!write(report, &e, sizeof e);
        _exit(127);
    }
    /* The harness ignores SIGPIPE; the child gets the default back. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPIPE, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)cmd, NULL};
    execve("/bin/sh", argv, envp);
    int e = errno;
    (void)!write(report, &e, sizeof e);
    _exit(127);
}

int proc_spawn(proc_child *c, const char *cmd, char *const envp[], int err_fd, char *err, size_t n)
{
    *c = (proc_child)PROC_CHILD_NONE;
    proc_guard_signals();
    int in[2] = {-1, -1}, out[2] = {-1, -1}, rep[2] = {-1, -1};
    int rc = -1;
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(rep, O_CLOEXEC) != 0) {
        snprintf(err, n, "cannot create pipes: %s", strerror(errno));
        goto done;
    }
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, n, "cannot start /bin/sh: %s", strerror(errno));
        goto done;
    }
    if (pid == 0)
        proc_exec_child(parent, in, out, err_fd, rep[1], cmd, envp);
    setpgid(pid, pid); /* as the child does: whichever runs first (EACCES once it has exec'd) */
    proc_live_pgid = pid;
    proc_close_fd(&rep[1]);
    int e = 0;
    ssize_t got;
    while ((got = read(rep[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    c->pid = pid;
    if (got > 0) { /* the exec failed: nothing ran */
        proc_reap(c, 1);
        snprintf(err, n, "cannot start /bin/sh: %s", strerror(e));
        goto done;
    }
    c->in_fd = in[1];
    c->fd = out[0];
    in[1] = out[0] = -1;
    fcntl(c->in_fd, F_SETFL, fcntl(c->in_fd, F_GETFL) | O_NONBLOCK);
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    rc = 0;
done:
    for (int i = 0; i < 2; i++) {
        proc_close_fd(&in[i]);
        proc_close_fd(&out[i]);
        proc_close_fd(&rep[i]);
    }
    return rc;
}

int proc_exited(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return pid > 0 && waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           si.si_pid == pid;
}

int proc_poll(int fd, short events, double deadline, pid_t pid)
{
    for (;;) {
        double left = deadline - mono_now();
        if (left <= 0)
            return PROC_IO_TIMEOUT;
        /* With a child to watch, its exit is looked at every 100 ms. */
        int ms = pid > 0 && left > 0.1 ? 100 : left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1;
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, ms);
        if (r > 0)
            return PROC_IO_READY;
        if (r < 0 && errno != EINTR)
            return PROC_IO_ERROR;
        if (r == 0 && proc_exited(pid)) /* what it wrote before it exited comes first */
            return poll(&p, 1, 0) > 0 ? PROC_IO_READY : PROC_IO_EXITED;
    }
}

int proc_send(int fd, const void *p, size_t n)
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

int proc_recv(int fd, void *p, size_t n, double deadline, pid_t pid)
{
    char *c = p;
    while (n) {
        if (deadline > 0) {
            int pr = proc_poll(fd, POLLIN, deadline, pid);
            if (pr == PROC_IO_TIMEOUT)
                return 2;
            if (pr != PROC_IO_READY)
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

int proc_read_all(int fd, double deadline, pid_t pid, char **buf, size_t *len)
{
    size_t cap = 0;
    *buf = NULL;
    *len = 0;
    for (;;) {
        int pr = proc_poll(fd, POLLIN, deadline, pid);
        if (pr == PROC_IO_TIMEOUT)
            return 2;
        if (pr == PROC_IO_EXITED)
            return 0;
        if (pr == PROC_IO_ERROR)
            return 1;
        if (*len + 65536 > cap) {
            char *nb = realloc(*buf, cap = 2 * cap + 65536);
            if (!nb)
                return 1;
            *buf = nb;
        }
        ssize_t r = read(fd, *buf + *len, cap - *len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return 1;
        if (r == 0)
            return 0;
        *len += (size_t)r;
    }
}

int proc_wait_exit(pid_t pid, double until, int *status)
{
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        int w = pid > 0 ? waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) : -1;
        if (w == 0 && si.si_pid == pid) {
            /* waitpid's encoding, for the WIF* macros. */
            if (status)
                *status = si.si_code == CLD_EXITED
                              ? (si.si_status & 0xff) << 8
                              : (si.si_status & 0x7f) | (si.si_code == CLD_DUMPED ? 0x80 : 0);
            return 1;
        }
        if ((w != 0 && (pid <= 0 || errno != EINTR)) || mono_now() >= until)
            return 0;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

#ifdef __linux__
/* Kill and reap every child of this process: in a subreaper, these are what a supervised
 * child's descendants moved out of its process group (setsid, setpgid), orphaned to us when
 * it died.  Bounded: a backend forking as fast as it is killed is not chased for ever. */
static void proc_reap_strays(void)
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
static void proc_reap_strays(void)
{
}
#endif

int proc_reap(proc_child *c, int kill_it)
{
    int st = -1;
    if (c->pid > 0) {
        if (kill_it)
            kill(c->pid, SIGKILL);
        /* Then what it forked (its process group): done before it is reaped, while its pid,
         * the group's id, cannot have been given to anyone else. */
        kill(-c->pid, SIGKILL);
        if (proc_live_pgid == c->pid)
            proc_live_pgid = 0;
        while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
            ;
        if (proc_subreaper_pid == getpid())
            proc_reap_strays(); /* and what escaped the group */
    }
    proc_close_fd(&c->fd);
    proc_close_fd(&c->in_fd);
    c->pid = 0;
    return st;
}

void proc_describe_signal(int sig, char *out, size_t n)
{
    snprintf(out, n, "signal %d (%s)", sig, strsignal(sig));
}

void proc_describe(int status, char *out, size_t n)
{
    char sig[128];
    if (status != -1 && WIFSIGNALED(status)) {
        proc_describe_signal(WTERMSIG(status), sig, sizeof sig);
        snprintf(out, n, "killed by %s", sig);
    } else if (status != -1 && WIFEXITED(status)) {
        snprintf(out, n, "exited with status %d", WEXITSTATUS(status));
    } else {
        snprintf(out, n, "lost (no exit status)");
    }
}
