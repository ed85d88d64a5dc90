/* plugin.c — names of the ABI status codes, the exit guard and the stdout guard
 * (backend/plugin.h). */
#define _DEFAULT_SOURCE /* on_exit (glibc), with POSIX 2008 */

#include "backend/plugin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/cli.h"

const char *hb_code_name(int code)
{
    switch (code) {
    case ATTNCONF_OK: return "ok";
    case ATTNCONF_EINVAL: return "einval";
    case ATTNCONF_EDTYPE: return "edtype";
    case ATTNCONF_ENOMEM: return "enomem";
    case ATTNCONF_ENOTSUP: return "enotsup";
    case ATTNCONF_EBACKEND: return "ebackend";
    case ATTNCONF_EINEXPRESSIBLE: return "einexpressible";
    default: return "unknown";
    }
}

/* ---- the exit guard (plugin.h) --------------------------------------------------------------
 * Atomics: a backend's own thread may call exit() while the harness's thread is in a call. */
static _Atomic(const char *) hb_member; /* the member running now, NULL between calls */
static _Atomic(const char *) hb_case;   /* the case it serves, or NULL */
/* The process the hook is armed for (0: none): a process the backend forks inherits the hook
 * and the mark, but its exit() does not end attnconf. */
static _Atomic pid_t hb_guard_pid;
static atomic_int hb_guard_refused;

/* ---- the stdout guard (plugin.h) ------------------------------------------------------------
 * A plugin and attnconf share one C library, so one `stdout` FILE and one fd 1: a plugin's
 * printf cannot be told from attnconf's own output by where it is written, only by when.  So
 * fd 1 points at stderr while a marked call runs, and back at attnconf's stdout between calls;
 * stdout's buffer is flushed at each switch, so attnconf's own bytes go out before the call in
 * their order, and the plugin's (buffered or not) go to stderr.  Only the harness's thread
 * makes marked calls, so this state is its own.  The fd is never closed while armed: the
 * process ends with it. */
static int hb_real_stdout = -1; /* attnconf's stdout (a duplicate); -1: the guard is off */
static int hb_stdout_swapped;   /* 1 while fd 1 is stderr */

/* Point fd 1 at `fd`, stdout's buffer flushed first (to where fd 1 points until then). */
static void hb_stdout_to(int fd)
{
    fflush(stdout);
    while (dup2(fd, STDOUT_FILENO) < 0 && errno == EINTR) {
    }
}

void hb_call_enter(const char *member)
{
    atomic_store(&hb_member, member);
    if (hb_real_stdout >= 0 && !hb_stdout_swapped && fcntl(STDERR_FILENO, F_GETFD) >= 0) {
        hb_stdout_to(STDERR_FILENO);
        hb_stdout_swapped = 1;
    }
}

void hb_call_leave(void)
{
    atomic_store(&hb_member, NULL);
    if (hb_stdout_swapped) {
        hb_stdout_to(hb_real_stdout);
        hb_stdout_swapped = 0;
    }
}

void hb_call_case(const char *id)
{
    atomic_store(&hb_case, id);
}

/* The hook; `how` is "exit(N)", or "exit()" where the C library does not pass the status.  It is
 * registered before the plugin is loaded, so the plugin's own exit handlers have run by now. */
static void hb_exit_hook(const char *how)
{
    const char *member = atomic_load(&hb_member);
    if (!member || atomic_load(&hb_guard_pid) != getpid())
        return;
    const char *id = atomic_load(&hb_case);
    fflush(stdout); /* what was printed stays printed, as exit() would have it */
    fprintf(stderr,
            "attnconf: the backend called %s during an in-process call (%s%s%s): a backend must "
            "return an error code, never exit. Stopped with status %d%s\n",
            how, member, id ? ", case " : "", id ? id : "", CLI_EXIT_FAIL,
            id ? ", the run incomplete: only what was saved is kept (with run --out, the cases "
                 "before this one, in FILE.partial.json); without --in-process a worker reports "
                 "this as the case's CRASH and the run goes on"
               : "");
    /* _exit, not a return: exit() would go on to end the process with the backend's status. */
    _exit(CLI_EXIT_FAIL);
}

#ifdef __GLIBC__
static void hb_on_exit(int status, void *arg)
{
    (void)arg;
    char how[32];
    snprintf(how, sizeof how, "exit(%d)", status);
    hb_exit_hook(how);
}
#else
static void hb_at_exit(void)
{
    hb_exit_hook("exit()");
}
#endif

void hb_exit_guard_arm(void)
{
    static atomic_int registered;
    if (atomic_load(&hb_guard_refused))
        return;
    if (!atomic_exchange(&registered, 1)) {
#ifdef __GLIBC__
        int failed = on_exit(hb_on_exit, NULL);
#else
        int failed = atexit(hb_at_exit);
#endif
        if (failed) {
            atomic_store(&registered, 0); /* no room: unguarded, as before; tried again later */
            return;
        }
    }
    atomic_store(&hb_guard_pid, getpid());
    /* The stdout guard, armed with it: the same process runs the plugin's code in its own.  A
     * closed fd 1 has nothing to protect (and no duplicate to take). */
    if (hb_real_stdout < 0) {
        fflush(stdout);
        hb_real_stdout = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    }
}

void hb_exit_guard_refuse(void)
{
    atomic_store(&hb_guard_refused, 1);
    atomic_store(&hb_guard_pid, 0);
    /* A supervised process has its fd 1 on stderr already (proc_fork); a duplicate inherited
     * from an armed parent would be the parent's stdout. */
    if (hb_real_stdout >= 0) {
        close(hb_real_stdout);
        hb_real_stdout = -1;
    }
}
