/* outfile.h — the atomic writer of every command's output file (--out, fuzz --json, run's
 * FILE.partial.json).
 *
 * The output goes to a temporary file beside FILE, is flushed and fsynced, and is renamed over
 * FILE only when complete, so a command that fails or is killed never leaves FILE empty or
 * half-written.  A rename would put a regular file in place of whatever FILE is, so a FILE
 * that exists and is not a regular file (a symbolic link, a FIFO, a device such as /dev/null
 * as root, a directory) is refused before anything is written.
 */
#ifndef ATTNCONF_COMMON_OUTFILE_H
#define ATTNCONF_COMMON_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

/* Linux's PATH_MAX, spelled out: the includers build with and without the POSIX feature macros
 * that make <limits.h> define it. */
#define OF_PATH_MAX 4096

typedef struct of_file {
    FILE *f; /* the temporary file, open for writing; NULL once committed/discarded */
    char path[OF_PATH_MAX]; /* FILE */
    char tmp[OF_PATH_MAX];  /* DIR/.BASE.XXXXXX; "" once renamed or removed */
} of_file;

/* Whether `path` may be replaced: returns 0 when it does not exist or is a regular file, else
 * -1 with why = "exists and is a FIFO, not a regular file: ..." (also "a symbolic link",
 * "a device", "a directory", "a special file"). */
int of_check(const char *path, char *why, size_t n);

/* Check `path` (of_check) and create its temporary file, mode as fopen(..., "w") would give.
 * Returns 0 with o->f open, or -1 with why set (of_check's message, or strerror: a missing
 * directory, no permission, a path too long); nothing is left behind then. */
int of_open(of_file *o, const char *path, char *why, size_t n);

/* Flush, fsync, close and rename the temporary file over FILE.  Returns 0, or -1 with errno
 * set (a write error earlier included); the temporary file is removed either way and FILE is
 * as it was on failure. */
int of_commit(of_file *o);

/* Remove the temporary file, leaving FILE as it was; nothing for an of_file already committed
 * or discarded, or zeroed. */
void of_discard(of_file *o);

/* Write len bytes of buf to o and commit (of_commit), or to stdout and flush it when o is NULL
 * (a command without --out).  Returns 0, or -1 with errno set (the temporary file removed). */
int of_write_commit(of_file *o, const char *buf, size_t len);

#endif
