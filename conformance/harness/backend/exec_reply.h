/* exec_reply.h — validating an exec: adapter's reply headers (PROTOCOL.md, version 1), apart
 * from the adapter process and its pipes.
 *
 * An adapter is untrusted: its header is checked here field by field before the bridge
 * (exec_backend.c) reads a payload byte, allocates, or believes a number.  Every function takes
 * bytes or an already parsed header, touches nothing else, and answers 0 or -1 with the reason
 * in `why` (text for "adapter reply: <why>").  Being free of I/O, this is what the libFuzzer
 * target conformance/fuzz/fuzz_exec_reply.c drives.
 */
#ifndef ATTNCONF_EXEC_REPLY_H
#define ATTNCONF_EXEC_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "attnconf/backend.h"
#include "backend/plugin.h" /* xr_dense_perm, the rule replies share with plugin outputs */

/* The largest tensor the protocol carries, in elements.  Not the case-file limit: `attnconf
 * bench` sends tensors far larger than any case (a 32K-key KV cache); a reply larger than the
 * host's buffer is drained, never stored. */
#define XR_MAX_NUMEL ((int64_t)1 << 34)

/* The most entries a hello's "options" may list. */
#define XR_MAX_OPTIONS 256

/* A cache id above this is refused (the handle is id + 1 in a pointer). */
#define XR_MAX_CACHE_ID ((json_int_t)1 << 40)

/* The protocol's dtype name of an ATTNCONF_* dtype ("f32", "f16", "bf16", "bool") and its
 * element size in bytes; NULL for a dtype the protocol cannot name. */
const char *xr_dtype_name(int32_t dtype, size_t *elem_size);

/* The ATTNCONF_* dtype of a protocol name and its element size; 0 for an unknown name. */
int32_t xr_dtype_from(const char *name, size_t *elem_size);

/* Element count of a shape of rank ndim (0..4), or -1 for a negative extent or more than
 * XR_MAX_NUMEL elements (checked before each multiplication: no overflow). */
int64_t xr_numel(int32_t ndim, const int64_t *shape);

/* "(1,1,2,2)" into buf (truncated to n bytes). */
void xr_shape_text(int32_t ndim, const int64_t *shape, char *buf, size_t n);

/* A reply tensor descriptor, validated: dtype known, rank <= 4, extents >= 0, at most
 * XR_MAX_NUMEL elements, nbytes == elements * element size, strides (in elements, >= 0;
 * row-major when the reply gave none) that address each element of the nbytes buffer once
 * (xr_dense_perm, backend/plugin.h: replies keep the dense rule, PROTOCOL.md). */
typedef struct xr_desc {
    int32_t dtype, ndim;
    int64_t shape[ATTNCONF_MAX_RANK], strides[ATTNCONF_MAX_RANK];
    size_t nbytes;
} xr_desc;

/* The most tensors one success reply carries (paged_append's k_slots and v_slots). */
#define XR_MAX_REPLY_TENSORS 2

/* A reply header that keeps the protocol. */
typedef struct xr_reply {
    json_t *root;      /* the parsed header: the caller json_decref()s it (also after -1, when
                          set: NULL if the line was not a JSON object) */
    int status;        /* -6 (ATTNCONF_EINEXPRESSIBLE) .. 0 (success) */
    const char *error; /* status < 0: the adapter's "error" text (inside root) */
    int has_tensor;    /* 1: status 0 and one tensor `want_tensor`, described by desc; its
                          desc.nbytes payload bytes follow the header line */
    xr_desc desc;
    /* xr_parse_n: the tensors of a success reply, in the order asked for (desc = descs[0]); their
     * payloads follow the header in that order. */
    size_t ntensors;
    xr_desc descs[XR_MAX_REPLY_TENSORS];
} xr_reply;

/* Parse and check one header line (len bytes, without the newline; need not be NUL-terminated)
 * answering request `op` ("hello", "sdpa", ...; for messages).  want_tensor: the one tensor a
 * success reply must carry ("out", "keep", "keys", "values") or NULL when it carries none.
 * Checks: a JSON object without duplicate keys, "protocol": 1, "status" an integer in -6..0,
 * an error reply with an "error" string and no tensors, a success reply with exactly the
 * tensors asked for (xr_desc's rules).  Returns 0 with *r filled, or -1 with why set. */
int xr_parse(const char *line, size_t len, const char *op, const char *want_tensor, xr_reply *r,
             char *why, size_t n);

/* xr_parse for a success reply carrying exactly the nwant (1..XR_MAX_REPLY_TENSORS) tensors named
 * want[0..nwant), in that order: r->ntensors and r->descs (and, as xr_parse, has_tensor and desc
 * for the first). */
int xr_parse_n(const char *line, size_t len, const char *op, const char *const *want, size_t nwant,
               xr_reply *r, char *why, size_t n);

/* The pool a paged_append reply writes into (PROTOCOL.md "paged_append"). */
typedef struct xr_pool {
    int64_t num_pages, page_size, kv_heads, head_dim, v_head_dim;
    int32_t dtype;
} xr_pool;

/* The writes of a paged_append success reply (root and descs from xr_parse_n with want
 * {"k_slots", "v_slots"}): "writes", a list of m [page, slot] pairs, each page in
 * 0..num_pages-1, each slot in 0..page_size-1, no pair twice (m <= num_pages * page_size); the
 * tensors k_slots (m, kv_heads, head_dim) and v_slots (m, kv_heads, v_head_dim) in the pool's
 * dtype.  pairs receives the 2m integers (room for 2 * num_pages * page_size), seen is scratch
 * of num_pages * page_size bytes.  Returns 0 with *m set, or -1. */
int xr_paged_writes(json_t *root, const xr_pool *pool, const xr_desc descs[2], int64_t *pairs,
                    unsigned char *seen, int64_t *m, char *why, size_t n);

/* The capability by which an adapter says it reads tensors with stride 0 as they are, in a
 * buffer of the span their strides address (PROTOCOL.md "Tensor descriptors").  A protocol
 * capability, not a case's: no ATTNCONF_CAP_* bit, never in a case's `requires`. */
#define XR_CAP_STRIDE0_WIRE "stride0.wire"

/* A hello reply's contents, pointing into the reply's root (valid while it lives). */
typedef struct xr_hello {
    const char *name;    /* [a-z0-9_-]{1,64} */
    const char *version; /* any string */
    uint64_t caps;       /* ATTNCONF_CAP_* bits, every listed name known */
    int stride0_wire;    /* 1: "stride0.wire" listed (XR_CAP_STRIDE0_WIRE) */
    size_t noptions;     /* entries of options, <= XR_MAX_OPTIONS */
    json_t *options;     /* array (or NULL when none): objects whose "key" is a valid option
                            key; "default" and "help" are taken when strings */
} xr_hello;

/* Check a success reply to hello (root from xr_parse).  Returns 0 with *h filled, or -1. */
int xr_hello_take(json_t *root, xr_hello *h, char *why, size_t n);

/* The optional "seconds" of an sdpa success reply: absent gives *seconds = -1; anything but a
 * finite number >= 0 that does not exceed the exchange's own duration (exchange_s, by the
 * harness's clock, plus 1 % and 1 ms of slack for two processes reading one clock) is -1. */
int xr_seconds(json_t *root, double exchange_s, double *seconds, char *why, size_t n);

/* The integer member `key` of a success reply to `op`. */
int xr_int(json_t *root, const char *op, const char *key, json_int_t *v, char *why, size_t n);

/* The "cache" id of a reply to `op` (cache_create, cache_merge): an integer in
 * 0..XR_MAX_CACHE_ID. */
int xr_cache_id(json_t *root, const char *op, json_int_t *id, char *why, size_t n);

/* The sizes of a cache_state reply: "batch" in 1..max_batch, "length" in 0..max_length. */
int xr_state_sizes(json_t *root, int64_t max_batch, int64_t max_length, int64_t *batch,
                   int64_t *length, char *why, size_t n);

/* The rows of a cache_state reply whose sizes xr_state_sizes returned: "offsets", batch
 * integers, into offsets[batch]; "positions", batch rows of length integers, into
 * positions[batch * length].  Nothing is written past those sizes. */
int xr_state_rows(json_t *root, int64_t batch, int64_t length, int64_t *offsets, int64_t *positions,
                  char *why, size_t n);

#endif
