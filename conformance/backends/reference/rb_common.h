/* rb_common.h — the adapter pieces shared by the plugins built on attnref: the reference plugin
 * (reference_backend.c), its KV cache members (reference_cache.c, which the `cpu` plugin links
 * too) and the `cpu` plugin (conformance/backends/cpu/).
 *
 * A context of any of these plugins starts with an rb_ctx, so reference_cache.c can record its
 * errors on it whatever plugin owns it.  Every symbol here is hidden like everything in a plugin
 * but the entry point. */
#ifndef ATTNCONF_RB_COMMON_H
#define ATTNCONF_RB_COMMON_H

#include <stddef.h>

#include "attnconf/backend.h"
#include "attnref/mask.h"
#include "attnref/sdpa.h"
#include "attnref/status.h"
#include "attnref/tensor.h"

/* Per-context state shared by the plugin and the cache members: the text of the last error
 * (so there is no global error state and two contexts never see each other's messages).  A
 * plugin with more state embeds this as its FIRST member. */
typedef struct rb_ctx {
    char err[256];
} rb_ctx;

/* Record a printf-style message on ctx as its last error and return code. */
int rb_fail(rb_ctx *ctx, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The ATTNCONF code with the meaning of an attnref status (ERANGE, "too large to index", is an
 * invalid argument at this interface: EINVAL; an unknown status is EBACKEND). */
int rb_map_status(int st);

/* Finish a call: on ATTNREF_OK clear ctx's error and return ATTNCONF_OK; otherwise copy the
 * diagnostic (or the status text when it is empty) to ctx and return the mapped code. */
int rb_finish(rb_ctx *ctx, int st, const attnref_diag *diag);

/* Field copy of a host descriptor into an attnref one (same dtype values, element strides);
 * entries past ndim are copied too.  Nothing is validated here: attnref names a bad one. */
void rb_to_ref(const attnconf_tensor *in, attnref_tensor *out);

/* 1 if every element t can address lies inside capacity bytes of elem-byte elements, else 0
 * (also for a bad rank, a negative extent or stride, or one beyond ATTNREF_MAX_NUMEL: nothing
 * overflows). */
int rb_fits(const attnref_tensor *t, size_t elem, size_t capacity);

/* Query heads the plugins take sinks for (more is ENOTSUP: a reference for tests, not for
 * production head counts). */
#define RB_MAX_SINK_HEADS 1024

/* The attnref view of an sdpa call (rb_sdpa_unpack). */
typedef struct rb_sdpa_call {
    attnref_tensor q, k, v, mask, out; /* out.dtype is q's: the output dtype is never upcast */
    int has_mask;                      /* mask is meaningful */
    attnref_sdpa_params p;             /* scale, causal, offset, the clause-19 parameters and
                                          the terms of clauses 20-22 */
    double sinks[RB_MAX_SINK_HEADS];   /* p.sinks points here: the host's f32 sinks widened */
} rb_sdpa_call;

/* Unpack host sdpa arguments: NULL pointers, an args.struct_size below the ABI v1 struct
 * (EINVAL with a message on ctx), the descriptors and parameters (the clause-19 ones only when
 * struct_size covers them; lengths / left_padding have one entry per batch row of q), and the
 * output capacity (every element the out strides address must fit in out_capacity bytes:
 * EINVAL, after letting attnref name a bad out descriptor).  Returns ATTNCONF_OK or the code
 * with ctx's error set.  The arguments are NOT validated against SPEC (shapes, dtypes, the
 * parameters' ranges): attnref_sdpa or attnref_sdpa_check does that next. */
int rb_sdpa_unpack(rb_ctx *ctx, const attnconf_sdpa_args *args, rb_sdpa_call *call);

/* Unpack host build_mask arguments into attnref_build_mask's: NULL args or keep, or an
 * args.struct_size below the ABI v1 struct, is EINVAL with a message on ctx; kv_len is read only
 * when struct_size covers it.  Values are not validated (attnref_build_mask does that). */
int rb_mask_unpack(rb_ctx *ctx, const attnconf_mask_args *args, attnref_mask_params *p,
                   attnref_tensor *keep);

#endif
