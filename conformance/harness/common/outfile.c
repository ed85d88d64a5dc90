/* outfile.c — the atomic output-file writer (outfile.h): temp file beside FILE, fsync, rename
 * on commit, and the refusal of a FILE that a rename would replace with a regular file. */
#define _XOPEN_SOURCE 700 /* mkstemp, fchmod, lstat */

#include "common/outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int of_check(const char *path, char *why, size_t n)
{
    struct stat st;
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode))
        return 0;
    snprintf(why, n,
             "exists and is %s, not a regular file: the output is written to a new "
             "file renamed over FILE, which would replace it (give a new path, or the link's "
             "target)",
             S_ISDIR(st.st_mode)                          ? "a directory"
             : S_ISLNK(st.st_mode)                        ? "a symbolic link"
             : S_ISFIFO(st.st_mode)                       ? "a FIFO"
             : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                          : "a special file");
    return -1;
}

int of_open(of_file *o, const char *path, char *why, size_t n)
{
    memset(o, 0, sizeof *o);
    if (of_check(path, why, n) != 0)
        return -1;
    const char *slash = strrchr(path, '/');
    int w = snprintf(o->path, sizeof o->path, "%s", path);
    int t = slash ? snprintf(o->tmp, sizeof o->tmp, "%.*s/.%s.XXXXXX", (int)(slash - path), path,
                             slash + 1)
                  : snprintf(o->tmp, sizeof o->tmp, ".%s.XXXXXX", path);
    if (w < 0 || (size_t)w >= sizeof o->path || t < 0 || (size_t)t >= sizeof o->tmp) {
        o->tmp[0] = '\0';
        snprintf(why, n, "%s", strerror(ENAMETOOLONG));
        return -1;
    }
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        snprintf(why, n, "%s", strerror(errno));
        o->tmp[0] = '\0';
        return -1;
    }
    /* mkstemp makes 0600; the output gets what fopen(..., "w") would have given. */
    mode_t um = umask(0);
    umask(um);
    if (fchmod(fd, 0666 & ~um) != 0 || !(o->f = fdopen(fd, "w"))) {
        snprintf(why, n, "%s", strerror(errno));
        close(fd);
        unlink(o->tmp);
        o->tmp[0] = '\0';
        return -1;
    }
    return 0;
}

int of_commit(of_file *o)
{
    errno = 0;
    int bad = fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0;
    int e = errno;
    bad |= fclose(o->f) != 0;
    o->f = NULL;
    if (!bad && rename(o->tmp, o->path) == 0) {
        o->tmp[0] = '\0';
        return 0;
    }
    e = bad ? (e ? e : EIO) : errno;
    unlink(o->tmp);
    o->tmp[0] = '\0';
    errno = e;
    return -1;
}

void of_discard(of_file *o)
{
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp[0])
        unlink(o->tmp);
    o->tmp[0] = '\0';
}

int of_write_commit(of_file *o, const char *buf, size_t len)
{
    if (!o)
        return fwrite(buf, 1, len, stdout) == len && fflush(stdout) == 0 ? 0 : -1;
    if (fwrite(buf, 1, len, o->f) != len) {
        int e = errno ? errno : EIO;
        of_discard(o);
        errno = e;
        return -1;
    }
    return of_commit(o);
}
