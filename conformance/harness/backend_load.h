/* backend_load.h — find, dlopen and validate an attnconf backend plugin (ABI v1). */
#ifndef ATTNCONF_BACKEND_LOAD_H
#define ATTNCONF_BACKEND_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "attnconf/backend.h"

/* A loaded, validated backend with one open context. */
typedef struct hb_backend {
    void *handle;                /* dlopen handle */
    const attnconf_backend *be;  /* the plugin's table (validated) */
    void *ctx;                   /* from be->open */
    uint64_t caps;               /* be->capabilities(ctx), with the mask-builder bits cleared
                                    when build_mask is NULL */
    char path[1024];             /* the file that was loaded */
} hb_backend;

/* 1 if `spec` names a file rather than a backend: it contains '/' or ends in ".so". */
int hb_spec_is_path(const char *spec);

/* Resolve `--backend NAME|PATH` to a file.  A path is used as is.  A NAME is looked up as
 * NAME.so in each directory of $ATTNCONF_BACKEND_PATH (colon-separated, empty entries ignored)
 * and then in ATTNCONF_BACKEND_DIR (`builtin_dir`, may be NULL).  Returns 0 with `path` set, or
 * -1 with `err` naming the name and every directory searched. */
int hb_resolve(const char *spec, const char *builtin_dir, char *path, size_t pathlen, char *err,
               size_t errlen);

/* Resolve, dlopen (RTLD_NOW | RTLD_LOCAL), fetch attnconf_backend_entry, validate the table
 * (non-NULL, abi_version == ATTNCONF_ABI_VERSION, struct_size >= the v1 size, required members
 * non-NULL, a non-empty name), open a context and read the capabilities.  Returns 0 with *out
 * filled, or -1 with `err` = "PATH: problem" and nothing left loaded. */
int hb_load(const char *spec, const char *builtin_dir, hb_backend *out, char *err, size_t errlen);

/* Close the context and unload the library (the library stays mapped under ASan so leak
 * reports keep their symbols).  Safe on a zeroed or already unloaded hb_backend. */
void hb_unload(hb_backend *b);

#endif
