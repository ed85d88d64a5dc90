/* attncase/cache_case.h — the cache part of an `op: cache` case (case format v2, cases/FORMAT.md
 * "Cache cases"): the cache parameters and a sequence of steps, each with the state the cache
 * must show afterwards.
 *
 * A cache case runs on one or more caches, numbered in the order they are made: cache 0 from
 * `params`, then one per `create` or `merge` step.  After every step the harness compares the
 * step's cache (offsets, retained absolute positions in time order, keys and values of every
 * non-padding slot exactly) and, for `attend`, the keep mask the cache builds and the attention
 * output within the step's tolerance.  Semantics: SPEC.md clauses 14-18.
 */
#ifndef ATTNCASE_CACHE_CASE_H
#define ATTNCASE_CACHE_CASE_H

#include <stdint.h>

#include "attncase/case.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACASE_MAX_CACHE_STEPS 1024 /* steps per case */
#define ACASE_MAX_CACHES 16        /* caches per case (params + create + merge) */

/* Cache kinds: the values of attnconf_cache_kind (backend.h). */
typedef enum acase_cache_kind {
    ACASE_CACHE_STANDARD = 1,
    ACASE_CACHE_ROTATING = 2,
    ACASE_CACHE_CHUNKED = 3,
    ACASE_CACHE_QUANTIZED = 4,
    ACASE_CACHE_BATCH = 5,
    ACASE_CACHE_BATCH_ROTATING = 6
} acase_cache_kind;

/* `params` of a cache case, or of a `create` step: attnconf_cache_config's fields. */
typedef struct acase_cache_params {
    acase_cache_kind kind;
    attnref_dtype dtype; /* f32, f16, bf16 */
    int64_t batch, kv_heads, head_dim, v_head_dim;
    int64_t max_size, keep;   /* max_size: rotating, batch_rotating; keep: rotating */
    int64_t chunk_size;       /* chunked */
    int64_t group_size, bits; /* quantized */
    int64_t *left_padding;    /* owned, [batch], or NULL (all 0): batch kinds only */
} acase_cache_params;

typedef enum acase_cache_op {
    ACASE_CSTEP_CREATE = 1, /* make the next cache from `params` */
    ACASE_CSTEP_UPDATE,     /* append k (B,Hkv,S,D), v (B,Hkv,S,Dv) */
    ACASE_CSTEP_ATTEND,     /* update with k, v, then q (B,Hq,S,D) attends through the cache */
    ACASE_CSTEP_TRIM,       /* trim(n) -> returns */
    ACASE_CSTEP_FILTER,     /* keep rows `rows` */
    ACASE_CSTEP_EXTEND,     /* append cache `other`'s rows */
    ACASE_CSTEP_MERGE,      /* a new batched cache from caches `rows` */
    ACASE_CSTEP_PREPARE,    /* declare left_padding / lengths (right padding follows) */
    ACASE_CSTEP_FINALIZE    /* right padding -> left padding */
} acase_cache_op;

/* One step and what must hold after it. */
typedef struct acase_cache_step {
    acase_cache_op op;
    int64_t cache;             /* the cache it acts on (CREATE / MERGE: the one it makes) */
    acase_cache_params params; /* CREATE */
    acase_tensor k, v, q;      /* UPDATE, ATTEND (q: ATTEND only) */
    int64_t n;                 /* TRIM: n (may be negative in a rejection step) */
    int64_t window;            /* ATTEND: 0 = the cache's own, else a model's window */
    int64_t *rows;             /* owned: FILTER row indices, MERGE cache indices */
    int64_t nrows;
    int64_t other;                   /* EXTEND: the cache whose rows are appended */
    int64_t *left_padding, *lengths; /* owned, PREPARE: [npad] or NULL */
    int64_t npad;

    /* expect: */
    int error;             /* 0, or ATTNREF_EINVAL / ATTNREF_EDTYPE: the step must be
                                   rejected and the cache left unchanged (the state below) */
    int64_t returns;       /* TRIM: tokens removed */
    int64_t batch, length; /* the state: B rows of L slots */
    int64_t *offsets;      /* owned [batch] */
    int64_t *positions;    /* owned [batch*length], -1 = padding slot */
    double *keys, *values; /* owned (B,Hkv,L,D) / (B,Hkv,L,Dv), exact (dequantized); a
                                   padding slot's entries are not compared (written 0) */
    /* ATTEND: */
    uint8_t *keep; /* owned (B,1,S,L): the mask the cache builds (file: `sees`) */
    attnref_dtype out_dtype;
    int64_t out_shape[4]; /* (B,Hq,S,Dv) */
    double *out;          /* owned, f64 reference values */
    uint8_t *row_check;   /* owned [B*Hq*S] ACASE_CHECK_* per output row, or NULL (all
                                   CLOSE): file `row_checks`, as expected.row_checks */
    double ulps;          /* tolerance as acase.ulps / row_atol (SPEC clause 13) */
    double *row_atol;     /* owned [B*Hq*S] */
} acase_cache_step;

typedef struct acase_cache {
    acase_cache_params params; /* cache 0 */
    int64_t nsteps;
    acase_cache_step *steps; /* owned [nsteps] */
} acase_cache;

/* Names: "standard", "rotating", "chunked", "quantized", "batch", "batch_rotating"; "update",
 * "attend", ...  NULL for an unknown value. */
const char *acase_cache_kind_name(acase_cache_kind k);
const char *acase_cache_op_name(acase_cache_op op);

/* Element counts a step's state implies: keys B*Hkv*L*D, values B*Hkv*L*Dv, for the cache the
 * step acts on (its params: cache 0, a create step, or for a merge the merged caches). */
const acase_cache_params *acase_cache_params_of(const acase_cache *cc, int64_t step);

/* The capabilities a cache case needs: the dtypes, the kinds, cache.batch for any batched
 * cache or batch op, and the sdpa features its attend steps use (mask.bool, mask.broadcast when
 * Hq > 1, gqa when Hq != Hkv). */
uint64_t acase_cache_requires(const acase_cache *cc);

/* A new empty cache part / free one (NULL is a no-op). */
acase_cache *acase_cache_new(void);
void acase_cache_free(acase_cache *cc);
/* Grow cc->steps by one zeroed step and return it (NULL when out of memory or at
 * ACASE_MAX_CACHE_STEPS). */
acase_cache_step *acase_cache_add_step(acase_cache *cc, acase_cache_op op);

#ifdef __cplusplus
}
#endif
#endif
