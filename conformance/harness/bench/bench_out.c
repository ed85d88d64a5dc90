/* bench_out.c — write a bench JSON document atomically (bench.h).
 *
 * As `attnconf run --out`: the document goes to a temporary file next to FILE, is flushed and
 * fsynced, and is renamed over FILE only when complete, so a failed or killed run never leaves
 * FILE empty or half-written.  The temporary file is created before the run, so an unwritable
 * path costs nothing.
 */
#define _XOPEN_SOURCE 700 /* mkstemp, fchmod */

#include "bench.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int bo_open(bo_out *o, const char *path)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    const char *slash = strrchr(path, '/');
    int w = slash ? snprintf(o->tmp, sizeof o->tmp, "%.*s/.%s.XXXXXX", (int)(slash - path), path,
                             slash + 1)
                  : snprintf(o->tmp, sizeof o->tmp, ".%s.XXXXXX", path);
    if (w < 0 || (size_t)w >= sizeof o->tmp) {
        o->tmp[0] = '\0';
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        o->tmp[0] = '\0';
        return -1;
    }
    /* mkstemp makes 0600; the result gets what fopen(..., "w") would have given. */
    mode_t um = umask(0);
    umask(um);
    if (fchmod(fd, 0666 & ~um) != 0 || !(o->f = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        o->tmp[0] = '\0';
        errno = e;
        return -1;
    }
    return 0;
}

int bo_commit(bo_out *o, const struct json_t *doc)
{
    int bad = json_dumpf(doc, o->f, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0;
    bad |= fputc('\n', o->f) == EOF;
    bad |= fflush(o->f) != 0;
    bad |= fsync(fileno(o->f)) != 0;
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

void bo_discard(bo_out *o)
{
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp[0])
        unlink(o->tmp);
    o->tmp[0] = '\0';
}

void bo_utc_now(char out[32])
{
    time_t t = time(NULL);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, 32, "unknown");
}
