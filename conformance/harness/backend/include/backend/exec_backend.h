/* exec_backend.h — the `exec:` bridge: an out-of-process adapter (PROTOCOL.md) served through
 * the same attnconf_backend table a plugin provides, so run.c has one code path for both. */
#ifndef ATTNCONF_EXEC_BACKEND_H
#define ATTNCONF_EXEC_BACKEND_H

#include <stddef.h>

#include <jansson.h>

#include "attnconf/backend.h"

/* Start `/bin/sh -c cmdline` (ATTNCONF_PROTOCOL=1 in its environment), send `hello` with the
 * options and validate the reply.  The adapter's stderr goes to an unlinked temporary file, so
 * an adapter that logs a lot never blocks; its last line is quoted in a transport failure.
 * stderr_to (--adapter-stderr; NULL: none) also receives all of it, every adapter started on
 * ctx in turn: "-" is attnconf's own stderr, anything else a file opened for appending
 * (created 0666 & ~umask), to which the bytes are copied after every reply and when an adapter
 * ends, so its lines never break into the middle of the harness's own messages.  On success returns 0, *table points to a table whose name,
 * version, capabilities and options are the adapter's (valid until table->close(*ctx), which
 * ends the adapter and frees both) and *ctx to its context.  Calls on the table that meet a
 * transport failure return HB_ETRANSPORT with the reason in last_error, kill the adapter and
 * start a fresh one (with the same hello) at the next call; a request whose header would
 * exceed the protocol's 1 MiB is not sent and returns HB_ETRANSPORT, the adapter kept.  Each
 * call may take up to timeout_s seconds.  Returns -1 with err = the problem (without the
 * "exec:CMD: " prefix; an adapter's refusal reads "adapter refused hello: ERROR") and nothing
 * left running. */
int xb_open(const char *cmdline, const attnconf_option *options, size_t n_options, double timeout_s,
            const char *stderr_to, const attnconf_backend **table, void **ctx, char *err,
            size_t errlen);

/* --restart (attnconf run): end the adapter on ctx (`close`, then SIGKILL to its process group
 * after 5 s) if it has answered any request since its hello, so the next call starts a fresh
 * one with the same hello; an adapter that has not served yet is as fresh as a new one and
 * is kept.  Caches the adapter held are gone with it.  ctx is a context from xb_open. */
void xb_restart(void *ctx);

/* The "seconds" of the last sdpa call's success reply on ctx (PROTOCOL.md "sdpa": the wall time
 * the adapter spent in its implementation's own call, transport and conversions excluded), or
 * -1 when that call failed or its reply carried none.  `attnconf bench` times an exec: backend
 * by this; `attnconf run` ignores it.  ctx is a context from xb_open. */
double xb_last_seconds(void *ctx);

/* PROTOCOL.md "repro": ask the adapter on ctx (from xb_open) for a reproducer of one case.
 * The request is the sdpa request of a (the same header members and tensors as the `sdpa` call
 * sends; a->out is not used) with op "repro" and every member of the JSON object extra added
 * (borrowed: "case", "expect", "description", "rules", "backend").  Returns 0 with *script the
 * reply's text (malloc'd, the caller frees it) and language "python" or "c" (language_len >= 8);
 * else the adapter's status (0 .. -5: -1 or -4 from an adapter that writes no reproducers),
 * HB_ETRANSPORT, or another ATTNCONF code, with the reason in the table's last_error and
 * *script NULL.  A reply without a "script" string and a known "language" is a transport
 * failure. */
int xb_repro(void *ctx, const attnconf_sdpa_args *a, json_t *extra, char **script, char *language,
             size_t language_len);

#endif
