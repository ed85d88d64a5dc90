/* plugin.h — what every part of the backend room (the loader, the exec: bridge and its reply
 * parser) and its users share about a backend's codes and options; includes nothing above the
 * ABI header, so the loader and the exec: bridge do not include each other. */
#ifndef ATTNCONF_BACKEND_PLUGIN_H
#define ATTNCONF_BACKEND_PLUGIN_H

#include <stddef.h>
#include <string.h>

#include "attnconf/backend.h"

/* A harness-internal status (never returned by a plugin, outside the ABI's range): an exec:
 * adapter died, hung or broke the protocol.  run.c reports it as ERROR in every case, a
 * must-reject case included, with last_error as the reason. */
#define HB_ETRANSPORT (-1000)

/* --timeout when none is given (PROTOCOL.md). */
#define HB_DEFAULT_TIMEOUT_S 300.0

/* 1 if `key` is a valid option key: [a-z0-9_.-]+ (backend.h), at most HB_OPTION_KEY_MAX bytes. */
#define HB_OPTION_KEY_MAX 128
static inline int hb_option_key_valid(const char *key)
{
    size_t n = key ? strlen(key) : 0;
    return n > 0 && n <= HB_OPTION_KEY_MAX &&
           strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/* 1 if the backend table be is large enough to hold member m (a later revision's member), set
 * or not; the table only grows at the end, gated by struct_size. */
#define HB_HAS_MEMBER(be, m)                                                                       \
    ((be)->struct_size >= offsetof(attnconf_backend, m) + sizeof(((attnconf_backend *)0)->m))

/* 1 if the table holds member m and m is set: the test before any call of an optional member. */
#define HB_HAS(be, m) (HB_HAS_MEMBER(be, m) && (be)->m != NULL)

/* Text name of an ATTNCONF status code: "ok", "einval", "edtype", "enomem", "enotsup",
 * "ebackend", "einexpressible"; "unknown" for anything else. */
const char *hb_code_name(int code);

#endif
