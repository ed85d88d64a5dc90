/* backend_load.c — find, dlopen and validate an attnconf backend plugin (ABI v1).
 *
 * Every failure is reported as "PATH: problem" so a user with several builds can tell which file
 * was rejected and why (the OpenCL/Vulkan loaders' lesson: silent fallbacks waste hours).
 */
#define _POSIX_C_SOURCE 200809L

#include "backend/backend_load.h"
#include "common/locate.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attncase/case.h"
#include "backend/exec_backend.h"

/* The size of the ABI v1 table: the end of its last v1 member.  A table may be larger (a newer
 * minor revision appends members) but never smaller. */
#define HB_V1_SIZE                                                                                 \
    (offsetof(attnconf_backend, last_error) + sizeof(((attnconf_backend *)0)->last_error))

/* snprintf into err (if given); always returns -1 so callers can `return hb_err(...)`. */
__attribute__((format(printf, 3, 4))) static int hb_err(char *err, size_t errlen, const char *fmt,
                                                        ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int hb_spec_is_exec(const char *spec)
{
    return strncmp(spec, "exec:", 5) == 0;
}

int hb_spec_is_path(const char *spec)
{
    if (hb_spec_is_exec(spec))
        return 0;
    size_t n = strlen(spec);
    return strchr(spec, '/') != NULL || (n >= 3 && strcmp(spec + n - 3, ".so") == 0);
}

const char *hb_option_add(const char *word, attnconf_option *opt,
                          char (*keys)[HB_OPTION_KEY_MAX + 1], size_t *n, size_t max)
{
    const char *eq = strchr(word, '=');
    if (!eq)
        return "--backend-option: expected KEY=VALUE";
    size_t kl = (size_t)(eq - word);
    if (kl == 0 || kl > HB_OPTION_KEY_MAX)
        return "--backend-option: KEY must be [a-z0-9_.-]+ (at most 128 characters)";
    if (*n == max)
        return "--backend-option: too many (at most 32)";
    memcpy(keys[*n], word, kl);
    keys[*n][kl] = '\0';
    if (!hb_option_key_valid(keys[*n]))
        return "--backend-option: KEY must be [a-z0-9_.-]+ (at most 128 characters)";
    for (size_t j = 0; j < *n; j++)
        if (strcmp(keys[j], keys[*n]) == 0) /* which one would win is anyone's guess */
            return "--backend-option: key given twice";
    opt[*n].key = keys[*n];
    opt[*n].value = eq + 1;
    (*n)++;
    return NULL;
}

/* 1 if path names an existing regular file. */
static int hb_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Try DIR/NAME.so (dir of length dlen).  Returns 1 and fills path if it is a file. */
static int hb_try_dir(const char *dir, size_t dlen, const char *name, char *path, size_t pathlen)
{
    if (dlen == 0)
        return 0;
    int n = snprintf(path, pathlen, "%.*s%s%s.so", (int)dlen, dir, dir[dlen - 1] == '/' ? "" : "/",
                     name);
    if (n < 0 || (size_t)n >= pathlen)
        return 0;
    return hb_is_file(path);
}

int hb_resolve(const char *spec, const char *builtin_dir, char *path, size_t pathlen, char *err,
               size_t errlen)
{
    if (!spec || !spec[0])
        return hb_err(err, errlen, "--backend: empty backend name");
    if (hb_spec_is_path(spec)) {
        /* dlopen would search the library path for a name without '/', e.g. "x.so"; a path the
         * user typed means the file in the current directory. */
        int n = snprintf(path, pathlen, "%s%s", strchr(spec, '/') ? "" : "./", spec);
        if (n < 0 || (size_t)n >= pathlen)
            return hb_err(err, errlen, "%s: path too long", spec);
        errno = 0;
        if (!hb_is_file(path))
            return hb_err(err, errlen, "%s: no such backend file (%s)", spec,
                          errno ? strerror(errno) : "not a regular file");
        return 0;
    }
    for (const char *c = spec; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
            return hb_err(err, errlen,
                          "--backend %s: a backend name is [a-z0-9_-]+ (give a path with '/' "
                          "or ending in .so to load a file)",
                          spec);

    char searched[1536] = "";
    size_t used = 0;
    const char *env = getenv("ATTNCONF_BACKEND_PATH");
    if (env) {
        for (const char *p = env;;) {
            const char *colon = strchr(p, ':');
            size_t len = colon ? (size_t)(colon - p) : strlen(p);
            if (hb_try_dir(p, len, spec, path, pathlen))
                return 0;
            if (len && used < sizeof searched) {
                int n = snprintf(searched + used, sizeof searched - used, "%s%.*s",
                                 used ? ", " : "", (int)len, p);
                if (n > 0)
                    used += (size_t)n;
            }
            if (!colon)
                break;
            p = colon + 1;
        }
    }
    /* The built-in directory, then (from the build tree only) the test-only mutants, so a
     * mutant runs by name like any backend. */
    const char *dirs[2] = {builtin_dir, hl_mutant_dir()};
    for (int k = 0; k < 2; k++) {
        if (!dirs[k] || !dirs[k][0])
            continue;
        if (hb_try_dir(dirs[k], strlen(dirs[k]), spec, path, pathlen))
            return 0;
        size_t at = strlen(searched);
        if (at < sizeof searched)
            snprintf(searched + at, sizeof searched - at, "%s%s", at ? ", " : "", dirs[k]);
    }
    return hb_err(err, errlen,
                  "backend '%s' not found: no %s.so in %s (set ATTNCONF_BACKEND_PATH or give a "
                  "path; an exec adapter runs as --backend 'exec:COMMAND')",
                  spec, spec, searched[0] ? searched : "(no directories)");
}

/* dlclose unless this is a sanitizer build: LSan symbolises leaks after exit and reports
 * "<unknown module>" frames for an unloaded plugin (c-tooling.md 1.6). */
static void hb_dlclose(void *handle)
{
#if defined(__SANITIZE_ADDRESS__)
    (void)handle;
#else
    if (handle) {
        hb_call_enter("dlclose"); /* the plugin's destructors run in it */
        dlclose(handle);
        hb_call_leave();
    }
#endif
}

/* Check a table returned by the entry point; returns 0 or -1 with err = "path: problem". */
static int hb_validate(const attnconf_backend *be, const char *path, char *err, size_t errlen)
{
    if (!be)
        return hb_err(err, errlen,
                      "%s: %s(%u) returned NULL (the backend cannot serve ABI version %u)", path,
                      ATTNCONF_ENTRY_SYMBOL, ATTNCONF_ABI_VERSION, ATTNCONF_ABI_VERSION);
    if (be->abi_version != ATTNCONF_ABI_VERSION)
        return hb_err(err, errlen, "%s: ABI version %u, harness speaks %u", path,
                      (unsigned)be->abi_version, ATTNCONF_ABI_VERSION);
    if (be->struct_size < HB_V1_SIZE)
        return hb_err(err, errlen,
                      "%s: backend table struct_size %u is smaller than the ABI v1 table (%zu)",
                      path, (unsigned)be->struct_size, (size_t)HB_V1_SIZE);
    const char *missing = !be->open           ? "open"
                          : !be->close        ? "close"
                          : !be->capabilities ? "capabilities"
                          : !be->sdpa         ? "sdpa"
                          : !be->last_error   ? "last_error"
                                              : NULL;
    if (missing)
        return hb_err(err, errlen, "%s: required member '%s' is NULL", path, missing);
    if (!be->name || !be->name[0])
        return hb_err(err, errlen, "%s: backend name is empty", path);
    /* The name ends up in file names, JUnit suite names and the report: hold it to the ABI's
     * [a-z0-9_-]+ (at most 64 characters). */
    size_t nlen = strlen(be->name);
    if (nlen > 64 || strspn(be->name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != nlen)
        return hb_err(err, errlen, "%s: backend name '%.64s' is not [a-z0-9_-]{1,64}", path,
                      be->name);
    return 0;
}

/* More than this many entries means the list is not NULL-terminated: stop before running off
 * into unrelated memory. */
#define HB_MAX_LISTED_OPTIONS 256

/* The table's option list and its length (NULL, 0 for none or a first-revision table).
 * Returns 0, or -1 with err set for a malformed list or options without open_with_options. */
static int hb_table_options(const attnconf_backend *be, const char *path,
                            const attnconf_option_info **list, size_t *n, char *err, size_t errlen)
{
    *list = NULL;
    *n = 0;
    if (!HB_HAS(be, options))
        return 0;
    size_t k = 0;
    for (; k <= HB_MAX_LISTED_OPTIONS && be->options[k].key; k++)
        if (!hb_option_key_valid(be->options[k].key))
            return hb_err(err, errlen,
                          "%s: backend '%s' lists option key '%.64s', which is not "
                          "[a-z0-9_.-]+",
                          path, be->name, be->options[k].key);
    if (k > HB_MAX_LISTED_OPTIONS)
        return hb_err(err, errlen,
                      "%s: backend '%s' lists more than %d options (is the list "
                      "terminated by a NULL key?)",
                      path, be->name, HB_MAX_LISTED_OPTIONS);
    /* Checked even when the user gives no option: such a table is broken for everyone. */
    if (k > 0 && !HB_HAS(be, open_with_options))
        return hb_err(err, errlen,
                      "%s: backend '%s' lists options but open_with_options is "
                      "NULL",
                      path, be->name);
    *list = be->options;
    *n = k;
    return 0;
}

/* The capabilities a plugin reports against what its table can serve: every bit names a
 * capability this host knows (an unknown one is a newer ABI's, or garbage), and a cache kind
 * comes with the cache members it needs (backend.h, fourth revision), paged with paged_append
 * and paged_sdpa (sixth).  Returns 0, or -1 with
 * err naming the bits or the missing member. */
static int hb_check_caps(const attnconf_backend *be, uint64_t caps, const char *path, char *err,
                         size_t errlen)
{
    uint64_t unknown = 0;
    for (int b = 0; b < 64; b++)
        if ((caps >> b & 1) && !acase_cap_name(1ull << b))
            unknown |= 1ull << b;
    if (unknown)
        return hb_err(err, errlen,
                      "%s: backend '%s' reports capability bits 0x%llx, which name "
                      "no capability of ABI version %u (an uninitialised value, or a backend "
                      "built for a newer attnconf)",
                      path, be->name, (unsigned long long)unknown, (unsigned)ATTNCONF_ABI_VERSION);
    const uint64_t any_cache = ATTNCONF_CAP_CACHE_STD | ATTNCONF_CAP_CACHE_ROTATING |
                               ATTNCONF_CAP_CACHE_CHUNKED | ATTNCONF_CAP_CACHE_QUANTIZED |
                               ATTNCONF_CAP_CACHE_BATCH | ATTNCONF_CAP_CACHE_BATCH_ROTATING;
    const uint64_t batch = ATTNCONF_CAP_CACHE_BATCH; /* the members backend.h ties to it */
    /* clang-format would break this braced initializer over three lines */
    /* clang-format off */
#define HB_MEMBER(m) {#m, HB_HAS(be, m)}
    /* clang-format on */
    const struct {
        const char *name;
        int present;
    } core[] = {HB_MEMBER(cache_create),    HB_MEMBER(cache_update), HB_MEMBER(cache_trim),
                HB_MEMBER(cache_make_mask), HB_MEMBER(cache_state),  HB_MEMBER(cache_destroy)},
      batched[] = {HB_MEMBER(cache_filter), HB_MEMBER(cache_extend), HB_MEMBER(cache_merge),
                   HB_MEMBER(cache_prepare), HB_MEMBER(cache_finalize)},
      paged[] = {HB_MEMBER(paged_append), HB_MEMBER(paged_sdpa)},
      device[] = {HB_MEMBER(device_info),    HB_MEMBER(device_alloc),     HB_MEMBER(device_free),
                  HB_MEMBER(copy_to_device), HB_MEMBER(copy_from_device), HB_MEMBER(synchronize)};
#undef HB_MEMBER
    for (size_t i = 0; (caps & any_cache) && i < sizeof core / sizeof core[0]; i++)
        if (!core[i].present)
            return hb_err(err, errlen,
                          "%s: backend '%s' reports a cache capability but its "
                          "table has no %s (NULL, or past struct_size)",
                          path, be->name, core[i].name);
    for (size_t i = 0; (caps & batch) && i < sizeof batched / sizeof batched[0]; i++)
        if (!batched[i].present)
            return hb_err(err, errlen,
                          "%s: backend '%s' reports cache.batch but its table has "
                          "no %s (NULL, or past struct_size)",
                          path, be->name, batched[i].name);
    /* The sixth revision: paged needs both paged members (backend.h). */
    for (size_t i = 0; (caps & ATTNCONF_CAP_PAGED) && i < sizeof paged / sizeof paged[0]; i++)
        if (!paged[i].present)
            return hb_err(err, errlen,
                          "%s: backend '%s' reports paged but its table has "
                          "no %s (NULL, or past struct_size)",
                          path, be->name, paged[i].name);
    /* Seventh revision: a device backend's buffers are reached only through these members. */
    for (size_t i = 0; (caps & ATTNCONF_CAP_DEVICE) && i < sizeof device / sizeof device[0]; i++)
        if (!device[i].present)
            return hb_err(err, errlen,
                          "%s: backend '%s' reports device but its table has no %s (NULL, "
                          "or past struct_size)",
                          path, be->name, device[i].name);
    return 0;
}

/* Every user key known to the table; else err names the key and what the backend takes. */
static int hb_match_options(const attnconf_backend *be, const char *path,
                            const attnconf_option_info *list, size_t nlist,
                            const attnconf_option *opt, size_t nopt, char *err, size_t errlen)
{
    for (size_t i = 0; i < nopt; i++) {
        size_t k = 0;
        while (k < nlist && strcmp(list[k].key, opt[i].key) != 0)
            k++;
        if (k < nlist)
            continue;
        if (nlist == 0)
            return hb_err(err, errlen, "%s: backend '%s' has no option '%s' (it takes no options)",
                          path, be->name, opt[i].key);
        char takes[512];
        size_t used = 0;
        takes[0] = '\0';
        for (k = 0; k < nlist && used < sizeof takes; k++) {
            int w = snprintf(takes + used, sizeof takes - used, "%s%s", k ? ", " : "", list[k].key);
            if (w > 0)
                used += (size_t)w;
        }
        return hb_err(err, errlen, "%s: backend '%s' has no option '%s' (it takes: %s)", path,
                      be->name, opt[i].key, takes);
    }
    return 0;
}

/* The user's options: keys of the form [a-z0-9_.-]+, each at most once, values present. */
static int hb_check_user_options(const char *spec, const attnconf_option *opt, size_t nopt,
                                 char *err, size_t errlen)
{
    for (size_t i = 0; i < nopt; i++) {
        if (!opt[i].key || !hb_option_key_valid(opt[i].key))
            return hb_err(err, errlen, "%s: option key '%.64s' is not [a-z0-9_.-]+", spec,
                          opt[i].key ? opt[i].key : "(null)");
        if (!opt[i].value)
            return hb_err(err, errlen, "%s: option '%s' has no value", spec, opt[i].key);
        for (size_t j = 0; j < i; j++)
            if (strcmp(opt[i].key, opt[j].key) == 0)
                return hb_err(err, errlen, "%s: option '%s' given twice", spec, opt[i].key);
    }
    return 0;
}

/* "exec:CMDLINE": start the adapter; its hello supplies the table. */
static int hb_load_exec(const char *spec, const attnconf_option *opt, size_t nopt, double timeout_s,
                        const char *stderr_to, hb_backend *out, char *err, size_t errlen)
{
    int w = snprintf(out->path, sizeof out->path, "%s", spec + 5);
    if (w < 0 || (size_t)w >= sizeof out->path)
        return hb_err(err, errlen, "exec: command line over %zu bytes", sizeof out->path - 1);
    const attnconf_backend *be = NULL;
    void *ctx = NULL;
    char why[1024];
    if (xb_open(spec + 5, opt, nopt, timeout_s, stderr_to, &be, &ctx, why, sizeof why) != 0)
        return hb_err(err, errlen, "%s: %s", spec, why);
    out->be = be;
    out->ctx = ctx;
    out->caps = be->capabilities(ctx);
    return 0;
}

int hb_load(const char *spec, const char *builtin_dir, const hb_open_opts *oo, hb_backend *out,
            char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t nopt = oo ? oo->n_options : 0;
    const attnconf_option *opt = nopt ? oo->options : NULL;
    if (!spec || !spec[0])
        return hb_err(err, errlen, "--backend: empty backend name");
    if (nopt && !opt)
        return hb_err(err, errlen, "%s: %zu options but no option list", spec, nopt);
    if (hb_check_user_options(spec, opt, nopt, err, errlen) != 0)
        return -1;
    if (hb_spec_is_exec(spec))
        return hb_load_exec(spec, opt, nopt,
                            oo && oo->timeout_s > 0 ? oo->timeout_s : HB_DEFAULT_TIMEOUT_S,
                            oo ? oo->adapter_stderr : NULL, out, err, errlen);
    if (hb_resolve(spec, builtin_dir, out->path, sizeof out->path, err, errlen) != 0)
        return -1;

    /* From here on the plugin's code runs in this process (its constructors in dlopen). */
    hb_exit_guard_arm();
    dlerror(); /* clear any stale message */
    hb_call_enter("dlopen");
    void *h = dlopen(out->path, RTLD_NOW | RTLD_LOCAL);
    hb_call_leave();
    if (!h) {
        const char *e = dlerror();
        return hb_err(err, errlen, "%s: cannot load: %s", out->path, e ? e : "unknown error");
    }

    /* POSIX idiom: object pointer -> function pointer through the pointer's representation. */
    attnconf_backend_entry_fn entry = NULL;
    dlerror();
    *(void **)&entry = dlsym(h, ATTNCONF_ENTRY_SYMBOL);
    const char *e = dlerror();
    if (e || !entry) {
        hb_err(err, errlen, "%s: not an attnconf backend: no symbol %s (%s)", out->path,
               ATTNCONF_ENTRY_SYMBOL, e ? e : "it is NULL");
        hb_dlclose(h);
        return -1;
    }

    hb_call_enter(ATTNCONF_ENTRY_SYMBOL);
    const attnconf_backend *be = entry(ATTNCONF_ABI_VERSION);
    hb_call_leave();
    if (hb_validate(be, out->path, err, errlen) != 0) {
        hb_dlclose(h);
        return -1;
    }

    const attnconf_option_info *list;
    size_t nlist;
    if (hb_table_options(be, out->path, &list, &nlist, err, errlen) != 0 ||
        hb_match_options(be, out->path, list, nlist, opt, nopt, err, errlen) != 0) {
        hb_dlclose(h);
        return -1;
    }

    void *ctx = NULL;
    int rc;
    if (nopt) {
        char why[512] = "";
        hb_call_enter("open_with_options");
        rc = be->open_with_options(&ctx, opt, nopt, why, sizeof why);
        hb_call_leave();
        why[sizeof why - 1] = '\0'; /* a backend that forgot the terminator */
        if (rc != ATTNCONF_OK) {
            if (why[0])
                hb_err(err, errlen, "%s: backend '%s' refused its options: %s", out->path, be->name,
                       why);
            else
                hb_err(err, errlen,
                       "%s: backend '%s' refused its options (code %d, no reason "
                       "given)",
                       out->path, be->name, rc);
            hb_dlclose(h);
            return -1;
        }
    } else {
        hb_call_enter("open");
        rc = be->open(&ctx);
        hb_call_leave();
        if (rc != ATTNCONF_OK) {
            /* open() has no room for a reason; open_with_options with no options (the same
             * open) can say why, e.g. "no CUDA device" from a GPU backend (ENOTSUP). */
            char why[512] = "";
            if (HB_HAS(be, open_with_options)) {
                void *again = NULL;
                hb_call_enter("open_with_options");
                if (be->open_with_options(&again, NULL, 0, why, sizeof why) == ATTNCONF_OK) {
                    hb_call_enter("close");
                    be->close(again); /* it worked this time: no reason to give */
                }
                hb_call_leave();
                why[sizeof why - 1] = '\0';
            }
            hb_err(err, errlen, "%s: backend '%s' open() failed with code %d%s%s%s", out->path,
                   be->name, rc, rc == ATTNCONF_ENOTSUP ? " (not supported here)" : "",
                   why[0] ? ": " : "", why);
            hb_dlclose(h);
            return -1;
        }
    }

    hb_call_enter("capabilities");
    uint64_t caps = be->capabilities(ctx);
    hb_call_leave();
    if (hb_check_caps(be, caps, out->path, err, errlen) != 0) {
        hb_call_enter("close");
        be->close(ctx);
        hb_call_leave();
        hb_dlclose(h);
        return -1;
    }
    /* Without build_mask the mask-builder capabilities are meaningless: never route a mask case
     * to a NULL member, whatever the backend claims. */
    if (!be->build_mask)
        caps &= ~(ATTNCONF_CAP_BUILD_MASK | ATTNCONF_CAP_WINDOW | ATTNCONF_CAP_LENGTHS |
                  ATTNCONF_CAP_LEFT_PAD);
    out->handle = h;
    out->be = be;
    out->ctx = ctx;
    out->caps = caps;
    return 0;
}

void hb_restart(const hb_backend *b)
{
    if (b->be && b->ctx && b->handle == NULL)
        xb_restart(b->ctx);
}

void hb_unload(hb_backend *b)
{
    if (!b)
        return;
    if (b->be && b->ctx) {
        hb_call_enter("close");
        b->be->close(b->ctx);
        hb_call_leave();
    }
    hb_dlclose(b->handle);
    b->handle = NULL;
    b->be = NULL;
    b->ctx = NULL;
}
