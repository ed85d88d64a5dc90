/* bench_pages.c — transparent huge pages for a benchmark's memory (bench --huge-pages; bench.h,
 * perf/README.md "Huge pages").
 *
 * A decode step streams K and V far beyond the last-level cache; on 4 KiB pages each of its
 * streams also walks the page tables, which under a hypervisor's nested paging costs enough to
 * show in GB/s.  A serving engine on a host whose THP mode is `always` gets 2 MiB pages without
 * asking; on a `madvise` host only memory that asks for them.  --huge-pages makes every
 * benchmark's memory ask, the same way for every backend: through glibc's malloc tunable
 * glibc.malloc.hugetlb=1 (glibc 2.35 and later), which makes malloc advise its large mappings,
 * for whatever is malloc'd, in bench (q, k, v, the page pool) as in a backend, in process or in
 * an exec: adapter; and by madvise(MADV_HUGEPAGE) for the read loop's buffer, which bench maps
 * itself, so the bandwidth a decode is a share of is read on the same pages.  A tunable is read
 * when a process starts, so bench puts it in the environment and starts itself again; adapters
 * inherit it, with ATTNCONF_BENCH_HUGE_PAGES=1 beside it, which says the flag did it: a run is
 * "with huge pages" (bpg_huge) when both are there, in any process of it, so there is one
 * switch and no global state, and a GLIBC_TUNABLES the user set alone is not taken for the
 * flag (its effect still shows in huge_page_bytes). */
#define _GNU_SOURCE /* MADV_HUGEPAGE */

#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif

#define TUNABLE "glibc.malloc.hugetlb=1"
#define MARK "ATTNCONF_BENCH_HUGE_PAGES"
#define THP_ENABLED "/sys/kernel/mm/transparent_hugepage/enabled"
#define HUGE_BYTES ((size_t)2 << 20)

/* A sanitizer's allocator is not glibc's malloc and never reads its tunables. */
#if defined(__SANITIZE_ADDRESS__)
#define ASAN_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ASAN_MALLOC 1
#endif
#endif

/* GLIBC_TUNABLES ends with the setting bpg_request appends, so the last setting of the name,
 * which is the one glibc keeps, is TUNABLE exactly. */
static int tunable_set(void)
{
    const char *t = getenv("GLIBC_TUNABLES");
    int on = 0;
    for (const char *p = t; p && *p;) {
        const char *end = strchr(p, ':');
        const size_t n = end ? (size_t)(end - p) : strlen(p);
        static const char name[] = "glibc.malloc.hugetlb=";
        if (n > sizeof name - 1 && strncmp(p, name, sizeof name - 1) == 0)
            on = n == sizeof name && p[sizeof name - 1] == '1';
        p = end ? end + 1 : p + n;
    }
    return on;
}

int bpg_huge(void)
{
    const char *m = getenv(MARK);
    return m && !strcmp(m, "1") && tunable_set();
}

const char *bpg_pages_words(int huge)
{
    return huge ? "huge pages asked for (--huge-pages)" : "as the system gives them";
}

void bpg_thp_mode(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen(THP_ENABLED, "r");
    if (!f)
        return;
    char line[128];
    if (fgets(line, sizeof line, f)) {
        /* "always [madvise] never": the bracketed word is the mode */
        const char *a = strchr(line, '['), *b = a ? strchr(a, ']') : NULL;
        if (a && b && b - a - 1 > 0)
            snprintf(buf, len, "%.*s", (int)(b - a - 1), a + 1);
    }
    fclose(f);
}

int bpg_request(const char *argv0, int argc, char **argv, char *err, size_t errlen)
{
    char mode[32];
    bpg_thp_mode(mode, sizeof mode);
    if (strcmp(mode, "always") != 0 && strcmp(mode, "madvise") != 0) {
        /* "never", or "unknown": no THP in this kernel, or a file this code cannot read */
        snprintf(err, errlen,
                 "--huge-pages: this kernel's transparent huge pages are '%s' (%s), so no "
                 "memory can have them; run without --huge-pages, or set the mode to madvise",
                 mode, THP_ENABLED);
        return -1;
    }
#ifdef __GLIBC__
    const char *libc = gnu_get_libc_version();
    unsigned major = 0, minor = 0;
    if (sscanf(libc, "%u.%u", &major, &minor) != 2 || major < 2 || (major == 2 && minor < 35)) {
        snprintf(err, errlen,
                 "--huge-pages needs glibc 2.35 or later, whose malloc tunable %s gives "
                 "every backend's memory huge pages; this is glibc %s",
                 TUNABLE, libc);
        return -1;
    }
#else
    snprintf(err, errlen,
             "--huge-pages needs glibc (2.35 or later), whose malloc tunable %s gives every "
             "backend's memory huge pages",
             TUNABLE);
    return -1;
#endif
    if (bpg_huge())
        return 0;
    const char *old = getenv("GLIBC_TUNABLES");
    char *val = malloc((old ? strlen(old) : 0) + sizeof TUNABLE + 1);
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!val || !args) {
        free(val);
        free(args);
        snprintf(err, errlen, "--huge-pages: out of memory");
        return -1;
    }
    sprintf(val, "%s%s%s", old && old[0] ? old : "", old && old[0] ? ":" : "", TUNABLE);
    args[0] = (char *)argv0;
    for (int i = 0; i < argc; i++)
        args[i + 1] = argv[i];
    if (setenv("GLIBC_TUNABLES", val, 1) == 0 && setenv(MARK, "1", 1) == 0) {
        fflush(NULL);
        execv("/proc/self/exe", args);
    }
    snprintf(err, errlen, "--huge-pages: cannot start bench again with GLIBC_TUNABLES=%s: %s", val,
             strerror(errno));
    free(val);
    free(args);
    return -1;
}

const char *bpg_malloc_caveat(void)
{
#ifdef ASAN_MALLOC
    return "this attnconf is built with AddressSanitizer, whose malloc does not read "
           "glibc.malloc.hugetlb: the q, k, v and page pool that bench and in-process backends "
           "allocate stay on the pages the system gives (huge_page_bytes says what they had); "
           "the read loop's buffer and exec: adapters still get huge pages";
#else
    return NULL;
#endif
}

void bpg_advise(void *p, size_t bytes)
{
    if (!p || bytes < HUGE_BYTES || !bpg_huge())
        return;
    /* madvise takes a page-aligned start; the 2 MiB-aligned spans inside get huge pages. */
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t a = (uintptr_t)p, start = a & ~(page - 1);
    (void)madvise((void *)start, bytes + (a - start), MADV_HUGEPAGE); /* a hint: errors ignored */
}

int64_t bpg_anon_huge_bytes(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f)
        return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %lld kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : (int64_t)kb * 1024;
}
