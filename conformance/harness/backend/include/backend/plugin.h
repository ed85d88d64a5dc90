/* plugin.h — what every part of the backend room (the loader, the exec: bridge and its reply
 * parser) and its users share about a backend's codes, options and output layouts, and the exit
 * guard of every call into a plugin; includes nothing above the ABI header, so the loader and the exec: bridge
 * do not include each other. */
#ifndef ATTNCONF_BACKEND_PLUGIN_H
#define ATTNCONF_BACKEND_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attnconf/backend.h"

/* A harness-internal status (never returned by a plugin, outside the ABI's range): an exec:
 * adapter died, hung or broke the protocol.  run.c reports it as ERROR in every case, a
 * must-reject case included, with last_error as the reason. */
#define HB_ETRANSPORT (-1000)

/* --timeout when none is given (PROTOCOL.md). */
#define HB_DEFAULT_TIMEOUT_S 300.0

/* 1 if `key` is a valid option key: [a-z0-9_.-]+ (backend.h), at most HB_OPTION_KEY_MAX bytes. */
#define HB_OPTION_KEY_MAX 128
static inline int hb_option_key_valid(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    return n > 0 && n <= HB_OPTION_KEY_MAX &&
           strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/* 1 if the backend table be is large enough to hold member m (a later revision's member), set
 * or not; the table only grows at the end, gated by struct_size. */
#define HB_HAS_MEMBER(be, m)                                                                       \
    ((be)->struct_size >= offsetof(attnconf_backend, m) + sizeof(((attnconf_backend *)0)->m))

/* 1 if the table holds member m and m is set: the test before any call of an optional member. */
#define HB_HAS(be, m) (HB_HAS_MEMBER(be, m) && (be)->m != NULL)

/* ---- a backend that calls exit() --------------------------------------------------------
 * A plugin run inside attnconf's own process (run and fuzz --in-process) that calls exit() in
 * a member would end attnconf with the backend's status, 0 included, with nothing said and no
 * results: a run that checked nothing would pass.  No return code can carry that, so this is
 * process-wide state: every call into a plugin is marked while it runs (call.c's member calls;
 * hb_load's and hb_unload's dlopen, entry point, open, capabilities, close and dlclose), and
 * once hb_exit_guard_arm has run, an exit() during a marked call prints why on stderr and ends
 * the process with CLI_EXIT_FAIL.  A backend's _exit() or quick_exit() goes around it. */

/* Mark a call of `member` (a string literal, quoted in the message) as running, and unmark it.
 * Once the guard is armed they also keep the plugin off attnconf's stdout (run and fuzz
 * --in-process): while a marked call runs, fd 1 is stderr, as in a worker (proc_fork), so what
 * the plugin prints cannot corrupt TAP or JSON on stdout; stdout's buffer is flushed at each
 * switch, so attnconf's own output stays whole and in order.  What a plugin's own thread
 * prints between calls still reaches stdout: a worker (no --in-process) has no such gap. */
void hb_call_enter(const char *member);
void hb_call_leave(void);

/* The case the following calls serve (quoted in the message), or NULL for none; id must stay
 * valid until the next hb_call_case. */
void hb_call_case(const char *id);

/* Register the exit hook (once per process) and arm it, and the stdout guard, for this
 * process; hb_load does it for a plugin.  Nothing after hb_exit_guard_refuse. */
void hb_exit_guard_arm(void);

/* Never arm the hook in this process: for a supervised process (run's worker) whose parent
 * reports how it ended, the backend's own exit status included. */
void hb_exit_guard_refuse(void);

/* 1 if strides (>= 0) address each element of a dense buffer of the shape exactly once: the
 * row-major strides or a permutation of its axes (the stride of an extent of 1 is free, as it
 * never multiplies a non-zero index); always 1 for a shape with no element.  The one layout
 * rule for a backend's output, whichever way it comes: an exec: reply (exec_reply.c, which
 * defines it) and a plugin's output descriptor (run.c) alike. */
int xr_dense_perm(int32_t ndim, const int64_t *shape, const int64_t *strides);

/* "[16,8,8,1]" into buf (truncated to n bytes): strides as both messages about that rule write
 * them. */
void xr_ints_text(int32_t ndim, const int64_t *v, char *buf, size_t n);

/* Text name of an ATTNCONF status code: "ok", "einval", "edtype", "enomem", "enotsup",
 * "ebackend", "einexpressible"; "unknown" for anything else. */
const char *hb_code_name(int code);

#endif
