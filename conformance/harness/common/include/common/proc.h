/* proc.h — a supervised child process: the one place the harness starts, watches and ends the
 * processes that run untrusted code (run's worker, the exec: bridge's adapter, bench's
 * benchmark child).
 *
 * What every such child gets (SECURITY.md): a process group of its own, so one kill reaches
 * whatever the untrusted code forked; the parent's death ending it (PR_SET_PDEATHSIG); with
 * proc_subreaper, what escaped the group (setsid) is orphaned to this process and ended by
 * proc_reap too; I/O bounded by a deadline that also sees the child's death while a process it
 * forked holds the pipe open (the exit is polled, unreaped, every 100 ms); and one wording for
 * how it ended ("killed by signal 11 (Segmentation fault)").
 *
 * Wait statuses here are the encoding of waitpid (WIFEXITED, WTERMSIG, ... decode them); -1
 * means none.  A child stays unreaped, its pid and process group id reserved, until
 * proc_reap: the group kill that precedes the reap then cannot reach a stranger.
 */
#ifndef ATTNCONF_COMMON_PROC_H
#define ATTNCONF_COMMON_PROC_H

#include <stddef.h>
#include <sys/types.h>

typedef struct proc_child {
    pid_t pid; /* the child, also its process group id; 0 = none */
    int fd;    /* proc_fork: the parent's end of a socketpair; proc_spawn: the child's stdout
                * (non-blocking); -1 = none */
    int in_fd; /* proc_spawn: the child's stdin (non-blocking); -1 = none */
} proc_child;

#define PROC_CHILD_NONE                                                                            \
    {                                                                                              \
        0, -1, -1                                                                                  \
    }

/* What proc_poll saw. */
enum { PROC_IO_ERROR = -1, PROC_IO_TIMEOUT = 0, PROC_IO_READY = 1, PROC_IO_EXITED = 2 };

/* Make this process a subreaper (Linux PR_SET_CHILD_SUBREAPER): what a child's descendants
 * move out of its process group is orphaned to us, and proc_reap then kills and reaps every
 * child of this process, not only the one reaped, so call it only in a process whose children
 * are all supervised children.  Not inherited by forks.  Returns 1 if this process is now a
 * subreaper, 0 if not (another system, or the call failed). */
int proc_subreaper(void);

/* Fork a child that runs fn(fd, arg) with fd its end of a socketpair (SOCK_STREAM, close on
 * exec), in a process group of its own, killed when this thread dies, with SIGTTOU ignored (a
 * background group may still write to the terminal), its stdout on this process's stderr (the
 * untrusted code's prints must not land in the harness's results) and no core files.  fn must
 * not return (it ends with _exit); if it does, the child exits 0.  stdout and stderr are
 * flushed first, so the child's copies are never written twice.  Returns 0 with *c the running
 * child, or -1 with *c PROC_CHILD_NONE and err (n bytes) "socketpair: REASON" or
 * "fork: REASON". */
int proc_fork(proc_child *c, void (*fn)(int fd, void *arg), void *arg, char *err, size_t n);

/* Start `/bin/sh -c cmd` with environment envp (not copied; it need only live through the
 * call), its stdin and stdout non-blocking pipes (c->in_fd, c->fd), its stderr err_fd, SIGPIPE
 * at its default and no signal blocked, in a process group of its own that is killed when this
 * thread dies.  One spawned child is live at a time: until it is reaped, a SIGINT, SIGTERM,
 * SIGHUP or SIGQUIT this process receives (where it has no handler of its own) kills that
 * child's group before it ends this process.  Returns 0, or -1 with err (n bytes)
 * "cannot create pipes: REASON" or "cannot start /bin/sh: REASON" and nothing left running. */
int proc_spawn(proc_child *c, const char *cmd, char *const envp[], int err_fd, char *err, size_t n);

/* Wait until fd is ready for `events` (poll's POLLIN, POLLOUT), or until deadline (mono_now
 * seconds).  With pid > 0, also until process pid has exited with nothing left to read on fd
 * (a process it forked may hold the pipe open, so its exit shows no EOF); it stays unreaped.
 * Returns PROC_IO_READY (a hangup included: the read or write that follows says how),
 * PROC_IO_TIMEOUT, PROC_IO_EXITED, or PROC_IO_ERROR (errno set). */
int proc_poll(int fd, short events, double deadline, pid_t pid);

/* Send all n bytes on socket fd; a dead peer is an error, not a SIGPIPE.  Returns 0 or -1. */
int proc_send(int fd, const void *p, size_t n);

/* Receive exactly n bytes from socket fd into p, before the deadline (<= 0: none, blocking) and,
 * with a deadline and pid > 0, while process pid lives (proc_poll).  Returns 0, 1 on EOF, error
 * or pid's exit, or 2 on timeout. */
int proc_recv(int fd, void *p, size_t n, double deadline, pid_t pid);

/* Read fd until EOF, the deadline, or the exit of process pid (> 0; proc_poll), appending to a
 * malloc'ed buffer: *buf (the caller frees it, also on failure; NULL if nothing was read) and
 * *len.  Returns 0 at EOF or exit, 1 on a read error or out of memory, 2 on timeout. */
int proc_read_all(int fd, double deadline, pid_t pid, char **buf, size_t *len);

/* 1 if process pid (> 0) has exited, unreaped; else 0. */
int proc_exited(pid_t pid);

/* Poll (every 5 ms, unreaped) until process pid has exited or `until` (mono_now seconds) has
 * passed.  Returns 1 with *status (may be NULL) its wait status, or 0. */
int proc_wait_exit(pid_t pid, double until, int *status);

/* End the child: SIGKILL it first when kill_it, then its process group (what it forked), reap
 * it, and, in a subreaper (proc_subreaper), kill and reap every other child of this process
 * (what escaped the group).  Bounded: a descendant forking as fast as it is killed is not
 * chased for ever.  Closes c's descriptors and leaves *c PROC_CHILD_NONE.  Returns the child's
 * wait status, or -1 (none was running, or it could not be reaped). */
int proc_reap(proc_child *c, int kill_it);

/* "signal SIG (NAME)", e.g. "signal 11 (Segmentation fault)", into out (n bytes). */
void proc_describe_signal(int sig, char *out, size_t n);

/* How a child ended, from its wait status: "killed by signal 11 (Segmentation fault)",
 * "exited with status 3", or for -1 "lost (no exit status)"; into out (n bytes). */
void proc_describe(int status, char *out, size_t n);

#endif
