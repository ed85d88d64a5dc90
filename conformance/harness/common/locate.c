/* locate.c — default backend and cases directories: build tree or installation (locate.h). */
#define _XOPEN_SOURCE 700 /* realpath, readlink */

#include "common/locate.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef ATTNCONF_BUILD_EXE_DIR
#define ATTNCONF_BUILD_EXE_DIR ""
#endif
#ifndef ATTNCONF_BUILD_BACKEND_DIR
#define ATTNCONF_BUILD_BACKEND_DIR ""
#endif
#ifndef ATTNCONF_BUILD_MUTANT_DIR
#define ATTNCONF_BUILD_MUTANT_DIR ""
#endif
#ifndef ATTNCONF_BUILD_CASES_DIR
#define ATTNCONF_BUILD_CASES_DIR "cases"
#endif
#ifndef ATTNCONF_BUILD_REPRO_WRITERS
#define ATTNCONF_BUILD_REPRO_WRITERS ""
#endif
#ifndef ATTNCONF_INSTALL_BACKEND_REL
#define ATTNCONF_INSTALL_BACKEND_REL "../lib/attnconf/backends"
#endif
#ifndef ATTNCONF_INSTALL_CASES_REL
#define ATTNCONF_INSTALL_CASES_REL "../share/attnconf/cases"
#endif

static int resolved;
static char backend_dir[PATH_MAX], cases_dir[PATH_MAX], mutant_dir[PATH_MAX],
    repro_writers[PATH_MAX];

/* DIR/REL, tidied by realpath when it exists (messages then show a plain path); an absolute
 * REL (an absolute CMAKE_INSTALL_* directory) is used as is. */
static void join(const char *dir, const char *rel, char *out, size_t n)
{
    char buf[PATH_MAX], tidy[PATH_MAX];
    size_t dl = rel[0] == '/' ? 0 : strlen(dir), rl = strlen(rel);
    /* A path that does not fit PATH_MAX cannot be opened anyway: keep the previous value. */
    if (dl + 1 + rl >= sizeof buf)
        return;
    if (dl) {
        memcpy(buf, dir, dl);
        buf[dl++] = '/';
    }
    memcpy(buf + dl, rel, rl + 1);
    const char *path = realpath(buf, tidy) ? tidy : buf;
    if (strlen(path) < n)
        memcpy(out, path, strlen(path) + 1);
}

static void resolve(void)
{
    if (resolved)
        return;
    resolved = 1;
    snprintf(backend_dir, sizeof backend_dir, "%s", ATTNCONF_BUILD_BACKEND_DIR);
    snprintf(cases_dir, sizeof cases_dir, "%s", ATTNCONF_BUILD_CASES_DIR);
    snprintf(mutant_dir, sizeof mutant_dir, "%s", ATTNCONF_BUILD_MUTANT_DIR);
    snprintf(repro_writers, sizeof repro_writers, "%s", ATTNCONF_BUILD_REPRO_WRITERS);

    char exe[PATH_MAX], build[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return; /* no /proc: the build-tree paths, as before installation existed */
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return;
    *slash = '\0'; /* exe is now the executable's directory (a resolved path) */
    /* Still where it was linked: the build tree.  Compared after resolving symbolic links,
     * since /proc/self/exe is resolved. */
    if (realpath(ATTNCONF_BUILD_EXE_DIR, build) && strcmp(build, exe) == 0)
        return;
    mutant_dir[0] = '\0';    /* test-only mutants are never installed */
    repro_writers[0] = '\0'; /* nor the third-party plugins the writers serve */
    join(exe, ATTNCONF_INSTALL_BACKEND_REL, backend_dir, sizeof backend_dir);
    join(exe, ATTNCONF_INSTALL_CASES_REL, cases_dir, sizeof cases_dir);
}

const char *hl_backend_dir(void)
{
    resolve();
    return backend_dir;
}

const char *hl_cases_dir(void)
{
    resolve();
    return cases_dir;
}

const char *hl_mutant_dir(void)
{
    resolve();
    return mutant_dir;
}

const char *hl_repro_writers(void)
{
    resolve();
    return repro_writers;
}
