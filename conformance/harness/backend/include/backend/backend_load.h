/* backend_load.h — find, dlopen and validate an attnconf backend plugin (ABI v1). */
#ifndef ATTNCONF_BACKEND_LOAD_H
#define ATTNCONF_BACKEND_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "attnconf/backend.h"
#include "backend/plugin.h"

/* How to open a backend: the user's --backend-option pairs and --timeout. */
typedef struct hb_open_opts {
    const attnconf_option *options; /* KEY=VALUE pairs, keys unique; may be NULL when n == 0 */
    size_t n_options;
    double timeout_s; /* per-call limit for exec: adapters (> 0) */
    /* --adapter-stderr: NULL (an exec: adapter's stderr is kept only to quote its last line
     * in a transport failure), "-" (also copied to attnconf's stderr) or a FILE it is also
     * appended to (created if absent).  Plugins have no adapter: ignored for them. */
    const char *adapter_stderr;
} hb_open_opts;

/* A loaded, validated backend with one open context. */
typedef struct hb_backend {
    void *handle;               /* dlopen handle; NULL for exec: */
    const attnconf_backend *be; /* the plugin's table (validated) */
    void *ctx;                  /* from be->open */
    uint64_t caps;              /* be->capabilities(ctx), with the mask-builder bits cleared
                                    when build_mask is NULL */
    char path[4096];            /* the file that was loaded; for exec: the command line */
} hb_backend;

/* 1 if rc from backend hb is an exec: transport failure: HB_ETRANSPORT from an adapter's
 * bridge.  A plugin returning -1000 gets no such reading: that is an unknown code of its own. */
static inline int hb_transport_failure(const hb_backend *hb, int rc)
{
    return rc == HB_ETRANSPORT && hb->handle == NULL;
}

/* 1 if `spec` names a file rather than a backend: it contains '/' or ends in ".so", and is not
 * an "exec:" command line. */
int hb_spec_is_path(const char *spec);

/* 1 if `spec` is "exec:CMDLINE" (an out-of-process adapter, PROTOCOL.md). */
int hb_spec_is_exec(const char *spec);

/* Add one `--backend-option KEY=VALUE` word to opt[0..*n) (keys[] holds the keys opt points
 * to; max entries at most): split at the first '=', check the key and that it is not given
 * twice.  opt[*n].value points into word.  Returns NULL (and *n grew by one), or why the word
 * is refused ("expected KEY=VALUE", ...), for the caller's usage message. */
const char *hb_option_add(const char *word, attnconf_option *opt,
                          char (*keys)[HB_OPTION_KEY_MAX + 1], size_t *n, size_t max);

/* Resolve `--backend NAME|PATH` to a file.  A path is used as is.  A NAME is looked up as
 * NAME.so in each directory of $ATTNCONF_BACKEND_PATH (colon-separated, empty entries ignored)
 * and then in ATTNCONF_BACKEND_DIR (`builtin_dir`, may be NULL).  Returns 0 with `path` set, or
 * -1 with `err` naming the name and every directory searched. */
int hb_resolve(const char *spec, const char *builtin_dir, char *path, size_t pathlen, char *err,
               size_t errlen);

/* Resolve, dlopen (RTLD_NOW | RTLD_LOCAL), fetch attnconf_backend_entry, validate the table
 * (non-NULL, abi_version == ATTNCONF_ABI_VERSION, struct_size >= the v1 size, required members
 * non-NULL, a non-empty name), open a context and read the capabilities.  A spec starting with
 * "exec:" starts an exec adapter instead (PROTOCOL.md) and serves it through the same table.
 * With options (oo->n_options > 0) every key must be in the table's `options` list and the
 * context is made by open_with_options; oo may be NULL (no options, default timeout).
 * Returns 0 with *out filled, or -1 with `err` = "PATH: problem" and nothing left loaded. */
int hb_load(const char *spec, const char *builtin_dir, const hb_open_opts *oo, hb_backend *out,
            char *err, size_t errlen);

/* --restart: a fresh backend process for what follows.  An exec: adapter that has served a
 * request is ended (`close`), and the next call starts a new one with the same hello
 * (exec_backend.h xb_restart).  Nothing for a plugin: the commands refuse --restart for one. */
void hb_restart(const hb_backend *b);

/* Close the context and unload the library (the library stays mapped under ASan so leak
 * reports keep their symbols).  Safe on a zeroed or already unloaded hb_backend. */
void hb_unload(hb_backend *b);

#endif
