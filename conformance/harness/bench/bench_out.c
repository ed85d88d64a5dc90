/* bench_out.c — the bench JSON document through the atomic output writer (bench.h,
 * common/outfile.h), and the UTC time stamp it records.
 *
 * The temporary file is created before the run, so an unwritable path or a FILE that is not a
 * regular file costs nothing.
 */
#define _POSIX_C_SOURCE 200809L /* gmtime_r */

#include "bench.h"

#include "common/outfile.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>
#include <time.h>

int bo_open(of_file *o, const char *path)
{
    char why[512];
    if (of_open(o, path, why, sizeof why) == 0)
        return 0;
    fprintf(stderr, "attnconf bench: --out %s: %s\n", path, why);
    return -1;
}

int bo_commit(of_file *o, const struct json_t *doc)
{
    int bad = json_dumpf(doc, o->f, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0;
    bad |= fputc('\n', o->f) == EOF;
    if (bad) {
        int e = errno ? errno : EIO;
        of_discard(o);
        errno = e;
        return -1;
    }
    return of_commit(o);
}

void bo_utc_now(char out[32])
{
    time_t t = time(NULL);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(out, 32, "unknown");
}
