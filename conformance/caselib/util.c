/* util.c — the leaf helpers of util.h: error text, the semantic-check reporter, names, the
 * opening of a case file. */
#define _POSIX_C_SOURCE 200809L /* lstat, fdopen, O_CLOEXEC */

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnconf/backend.h"
#include "attnref/status.h"

void acase__errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int acase__chk_fail(acase__chk *k, const char *field, const char *fmt, ...)
{
    acase__errf(k->field, k->fieldlen, "%s", field);
    if (k->why && k->whylen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(k->why, k->whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int acase__is_float_dtype(attnref_dtype dt)
{
    return dt == ATTNREF_F32 || dt == ATTNREF_F16 || dt == ATTNREF_BF16;
}

uint64_t acase__dtype_cap(attnref_dtype dt)
{
    switch (dt) {
    case ATTNREF_F32: return ATTNCONF_CAP_F32;
    case ATTNREF_F16: return ATTNCONF_CAP_F16;
    case ATTNREF_BF16: return ATTNCONF_CAP_BF16;
    default: return 0;
    }
}

const char *acase__error_name(int status)
{
    if (status == ATTNREF_EDTYPE)
        return "edtype";
    if (status == ATTNREF_EINVAL)
        return "einval";
    return NULL;
}

int acase__error_from_name(const char *name)
{
    if (name && strcmp(name, "edtype") == 0)
        return ATTNREF_EDTYPE;
    if (name && strcmp(name, "einval") == 0)
        return ATTNREF_EINVAL;
    return 0;
}

int acase__dotted_valid(const char *s, int min_components)
{
    if (!s || !*s)
        return 0;
    int comps = 1;
    size_t comp_len = 0;
    for (const char *p = s; *p; p++) {
        char ch = *p;
        if (ch == '.') {
            if (comp_len == 0)
                return 0;
            comps++;
            comp_len = 0;
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_') {
            comp_len++;
        } else {
            return 0;
        }
    }
    return comp_len > 0 && comps >= min_components;
}

void acase__fmt_double_short(double d, char *buf, size_t buflen)
{
    for (int prec = 1; prec <= 16; prec++) {
        snprintf(buf, buflen, "%.*e", prec, d);
        if (strtod(buf, NULL) == d)
            return;
    }
}

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m)                 ? "a directory"
           : S_ISFIFO(m)              ? "a FIFO"
           : S_ISSOCK(m)              ? "a socket"
           : S_ISCHR(m) || S_ISBLK(m) ? "a device"
                                      : "a special file";
}

FILE *acase__open_case_file(const char *path, char *err, size_t errlen)
{
    /* stat first: a FIFO is never opened, since opening one for reading waits for a writer
     * (a listing of cases would hang on it). */
    struct stat st, lst;
    if (stat(path, &st) != 0) {
        int e = errno;
        if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
            acase__errf(err, errlen, "%s: broken symbolic link: %s", path, strerror(e));
        else
            acase__errf(err, errlen, "%s: %s", path, strerror(e));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        acase__errf(err, errlen,
                    "%s: not a regular file (%s): a case file is a regular file or a link to one",
                    path, file_kind(st.st_mode));
        return NULL;
    }
    /* O_NONBLOCK: a file swapped for a FIFO after the stat cannot block the open either (it
     * changes nothing for a regular file); fstat then sees what was opened. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        acase__errf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        acase__errf(err, errlen, "%s: no longer a regular file when opened (replaced?)", path);
        close(fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        acase__errf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}
