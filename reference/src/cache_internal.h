/* cache_internal.h — the reference KV cache's state, shared by the cache_*.c files.
 *
 * Everything is kept in time order: row b, slot j (0 <= j < T) holds the token at absolute
 * position pos[b * cap + j], or is a pad (pos -1).  Keys and values are kept as binary64 (every
 * storage dtype converts exactly), so the cache never rounds what it was given.  The same
 * operations run on a "shadow" (k == v == NULL) to predict the layout the next update will
 * produce, which is how make_mask finds its key axis without a second copy of the rules.
 */
#ifndef ATTNREF_CACHE_INTERNAL_H
#define ATTNREF_CACHE_INTERNAL_H

#include <stdint.h>

#include "attnref/cache.h"

struct attnref_cache {
    attnref_cache_params p; /* as created; p.left_padding is NULL (copied into lp) */
    int64_t B, H, D, Dv;
    int64_t T, cap;   /* slots held per row; allocated slots per row */
    int64_t *offset;  /* [B] next absolute position of each row */
    int64_t *lp;      /* [B] left padding as mlx-lm reports it (batched kinds) */
    int64_t *pos;     /* [B * cap] absolute position, -1 = pad */
    double *k;        /* [((b * H + h) * cap + j) * D + d]; NULL in a shadow */
    double *v;        /* same with Dv */
    int64_t appended; /* columns appended net of trims (mlx-lm _offset): trimmability */
    int shadow;       /* 1: positions only, no keys/values */
    int has_keys;     /* ever stored a column (mlx-lm "keys is not None") */
    int prepared;     /* right padding pending (attnref_cache_prepare with lengths) */
    int64_t *limit;   /* [B] offset at which row b's right padding starts, when prepared */
};

#define CACHE_IS_BATCH(c)                                                                          \
    ((c)->p.kind == ATTNREF_CACHE_BATCH || (c)->p.kind == ATTNREF_CACHE_BATCH_ROTATING)
#define CACHE_IS_ROTATING(c)                                                                       \
    ((c)->p.kind == ATTNREF_CACHE_ROTATING || (c)->p.kind == ATTNREF_CACHE_BATCH_ROTATING)

/* Make room for `need` slots per row (keeps contents).  ATTNREF_OK, ATTNREF_ERANGE or
 * ATTNREF_ENOMEM; the cache is unchanged on error. */
int attnref__cache_reserve(attnref_cache *c, int64_t need, attnref_diag *diag);

/* Allocate a cache with B rows and the shape of `like`'s parameters (B replaced), empty. */
int attnref__cache_alloc(const attnref_cache_params *p, int64_t B, int shadow, attnref_cache **out,
                         attnref_diag *diag);

/* Copy of c; shadow = 1 leaves out keys and values. */
int attnref__cache_copy(const attnref_cache *c, int shadow, attnref_cache **out,
                        attnref_diag *diag);

/* Slot-level edits on one row or all rows (data moved too unless a shadow). */
void attnref__cache_drop_front(attnref_cache *c, int64_t from, int64_t n); /* all rows */
void attnref__cache_rotate_row(attnref_cache *c, int64_t b,
                               int64_t n);                  /* last n -> pads in front */
void attnref__cache_pad_front(attnref_cache *c, int64_t n); /* all rows, n pads; needs cap */

/* Turn row b's pending right padding into left padding (clause 18). */
void attnref__cache_move_pending_pad(attnref_cache *c, int64_t b);

/* The quantize-then-dequantize of one group, in place (clause 17). */
void attnref__quant_roundtrip(double *x, int64_t g, int bits, attnref_dtype dt);

#endif
