/* cpu_plan.h — which keys each query row keeps under the structural mask parameters, and how an
 * sdpa call is cut into work items for the thread pool.
 *
 * Structural masks as intervals.  Under causal (with its offset), window, lengths,
 * left_padding, chunk, segment_ids and block_ids the keys query row i of batch row b keeps are
 * one contiguous range [lo, hi) — exactly the j where attnref_sdpa_key_kept is 1 (SPEC.md
 * clauses 3, 4, 19, 20) — as long as each document and each block is one run of positions
 * (packed sequences, image blocks): a causal range ends at the query's position, and the later
 * keys a block adds start right after it.  An id found in several runs leaves a range that holds
 * the kept keys and others, tested key by key.  A mask tensor may exclude more inside it.
 *
 * Work items.  Query rows are grouped by (b, kv head, block of bq query positions): each item
 * holds the rows of all G = Hq/Hkv query heads of that kv head at those positions, so a K/V tile
 * packed once serves the whole GQA group.  An item covers the union of its rows' key ranges;
 * when there are too few items for the threads (decode, Lq <= 8 or a small batch), each group's
 * range is split into nsplit parts whose partial softmax states are merged at the end
 * (flash-decoding).  Items are sorted by estimated cost, largest first, for the pool's dynamic
 * scheduling. */
#ifndef ATTNCONF_CPU_PLAN_H
#define ATTNCONF_CPU_PLAN_H

#include <stdint.h>

#include "attnref/sdpa.h"

/* Keys per tile: each kernel table names the count its kernels are built for (cpu_kernels'
 * tile_keys, a multiple of CPU_NR); CPU_BC is the most any table names, and sizes the buffers
 * and their leading dimensions.  A K tile of D x 128 and a V tile of 128 x Dv f32 (64 KiB each
 * at D = 128) stay in the level-2 cache next to the rows of a work item. */
#define CPU_BC 128

/* Where the positions of each id of an id array (segment_ids / block_ids, [B * Lk]) lie:
 * lo[b*Lk + j] and hi[b*Lk + j] are the first position and one past the last one of row b
 * holding the id of position j, and one[b*Lk + j] is 1 when those positions are a single run
 * (every position in [lo, hi) holds the id).  All NULL when the array is not given. */
typedef struct cpu_runs {
    int64_t *lo, *hi;
    unsigned char *one;
} cpu_runs;

/* Where the queries of each batch row sit, for a paged call (cpu_sdpa.h cpu_paged_run): query i
 * of batch row b is at position off[b] + i (bottom-right per sequence), and its rows
 * i >= nq[b] are padding that keep no key.  Both NULL (a contiguous call): every row's queries
 * sit at the call's causal offset + i and every row is a query. */
typedef struct cpu_rows {
    const int64_t *off; /* [B] or NULL */
    const int64_t *nq;  /* [B] or NULL */
} cpu_rows;

/* What a call's parameters keep, prepared once per call. */
typedef struct cpu_keys {
    const attnref_sdpa_params *p; /* validated as attnref_sdpa does; NULL = none */
    int64_t lq, lk;
    cpu_runs seg, blk;
    cpu_rows rows; /* all NULL unless cpu_plan_make was given them */
} cpu_keys;

/* Prepare ks for a call with B batch rows (O(B * Lk log Lk) for the id arrays).  Returns 0, or
 * -1 when memory runs out (nothing to free then).  Free with cpu_keys_free. */
int cpu_keys_make(cpu_keys *ks, const attnref_sdpa_params *p, int64_t B, int64_t lq, int64_t lk);
void cpu_keys_free(cpu_keys *ks);

/* [*lo, *hi): a key range of query row i of batch row b (0..lk-1; *lo >= *hi when it keeps none)
 * holding every key attnref_sdpa_key_kept keeps.  Returns 1 when the row keeps exactly the
 * keys of the range (causal with any offset, window, lengths, left padding, chunk, and
 * documents and bidirectional blocks that are one run each), 0 when it keeps only some of them
 * (an id that occurs in several runs): then each key of the range is tested with
 * attnref_sdpa_key_kept.  Nothing overflows for any int64 offset.  With ks->rows set (a paged
 * call) the query's position is rows.off[b] + i and a padding row (i >= rows.nq[b]) keeps none;
 * such a call has no documents or blocks, so its ranges are always exact. */
int cpu_row_keys(const cpu_keys *ks, int64_t b, int64_t i, int64_t *lo, int64_t *hi);

typedef struct cpu_item {
    int64_t group;    /* (b * Hkv + kv head) * nqb + query block */
    int32_t split;    /* 0..nsplit-1 */
    int64_t klo, khi; /* keys of this item (a part of the group's union range) */
    double cost;
} cpu_item;

typedef struct cpu_plan {
    int64_t B, Hq, Hkv, G, Lq, Lk, D, Dv;
    cpu_keys keys;   /* the call's kept keys (cpu_row_keys) */
    int64_t bq;      /* query positions per group (the last group of a row may have fewer) */
    int64_t nqb;     /* query blocks per (b, kv head) */
    int64_t ngroups; /* B * Hkv * nqb */
    int nsplit;      /* key-range parts per group (1 = no flash-decoding merge) */
    int bc;          /* keys per tile (item bounds are multiples of it from the range start) */
    int64_t nitems;  /* ngroups * nsplit */
    cpu_item *items; /* [nitems], largest cost first */
} cpu_plan;

/* Plan a call with the validated dimensions for `threads` threads; rows (NULL for a contiguous
 * call) places each batch row's queries (cpu_rows: a paged call, whose Lk is the longest
 * sequence and whose p->lengths are the sequence lengths); hb (>= 1): the kv heads a thread runs
 * together as one task (the items of the same batch row, query block and part), for the split's
 * count of tasks; bc: keys per tile (a multiple of CPU_NR, at most CPU_BC).  Returns 0, or -1 when the item list or the key tables cannot be allocated
 * (nothing to free then).  Free with cpu_plan_free. */
int cpu_plan_make(cpu_plan *pl, const attnref_sdpa_params *p, int64_t B, int64_t Hq, int64_t Hkv,
                  int64_t Lq, int64_t Lk, int64_t D, int64_t Dv, const cpu_rows *rows, int threads,
                  int hb, int bc);
void cpu_plan_free(cpu_plan *pl);

#endif
