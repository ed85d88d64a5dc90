/* plugin.c — names of the ABI status codes, and the exit guard (backend/plugin.h). */
#define _DEFAULT_SOURCE /* on_exit (glibc), with POSIX 2008 */

#include "backend/plugin.h"

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

void hb_call_enter(const char *member)
{
    atomic_store(&hb_member, member);
}

void hb_call_leave(void)
{
    atomic_store(&hb_member, NULL);
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
}

void hb_exit_guard_refuse(void)
{
    atomic_store(&hb_guard_refused, 1);
    atomic_store(&hb_guard_pid, 0);
}
