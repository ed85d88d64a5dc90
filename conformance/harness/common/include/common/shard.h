/* shard.h — one run split across machines: which slice of the work is this machine's.
 *
 * A shard is "K/N": slice K of N, K counted from 0 as gtest's GTEST_SHARD_INDEX counts (0 <= K <
 * N), N the number of slices (GTEST_TOTAL_SHARDS).  The slices of one selection are disjoint and
 * their union is the selection, whatever N is.
 *
 * The slice depends only on the items (their keys and costs), never on the machine, the order
 * they were found in or the time: shard_assign is a deterministic greedy by estimated cost
 * (longest processing time first: the costliest item goes to the least loaded slice), so no
 * slice is longer than the average by more than its largest item.
 *
 * A sharded run records the whole selection's size and digest (shard_digest_*), so that
 * whoever merges the slices (`attnconf report`) can tell a complete set from one with an item
 * dropped or added, without the items' costs.
 */
#ifndef ATTNCONF_COMMON_SHARD_H
#define ATTNCONF_COMMON_SHARD_H

#include <stddef.h>
#include <stdint.h>

/* The most slices one run may have: far more machines than any CI matrix holds (GitHub Actions
 * allows 256 jobs per matrix), and it bounds the per-slice tables. */
#define SHARD_MAX_TOTAL 10000u

/* The variables gtest-style runners set (read when a command's --shard is absent). */
#define SHARD_ENV_TOTAL "GTEST_TOTAL_SHARDS"
#define SHARD_ENV_INDEX "GTEST_SHARD_INDEX"
#define SHARD_ENV_STATUS "GTEST_SHARD_STATUS_FILE"

typedef struct shard_spec {
    uint32_t index; /* K: 0 .. total-1 */
    uint32_t total; /* N: 1 .. SHARD_MAX_TOTAL; 0: not sharded */
} shard_spec;

/* "K/N" (decimal, no sign, space or leading zero: "0/3", not "00/03") -> *out.  Returns NULL,
 * or why it is refused (a static string for a usage message: "expected K/N with 0 <= K < N
 * ..."). */
const char *shard_parse(const char *text, shard_spec *out);

/* From GTEST_TOTAL_SHARDS and GTEST_SHARD_INDEX: both unset -> 0 with out->total 0 (not
 * sharded); both set and valid -> 0 with *out; one without the other, a value that is not a
 * decimal integer or has a leading zero ("03"), or an index out of range -> -1 with why
 * (naming the variable and its value) in why[cap]. */
int shard_from_env(shard_spec *out, char *why, size_t cap);

/* gtest's protocol: when GTEST_SHARD_STATUS_FILE is set, create that file (or update its
 * time), telling the runner that this program understands sharding.  Returns 0 (also when the
 * variable is unset), or -1 with "FILE: why" in why[cap]. */
int shard_touch_status_file(char *why, size_t cap);

/* Assign n items to total slices: shard_of[i] in 0..total-1 for item i.  Items are taken by
 * cost, highest first, ties by key (strcmp, smallest first; keys should be distinct), each to
 * the slice with the least cost so far (ties: the lowest slice).  load[total], when non-NULL,
 * receives each slice's cost.  Returns 0, or -1 when out of memory or total is 0.  The same
 * keys and costs give the same slices in any input order. */
int shard_assign(const uint64_t *cost, const char *const *key, size_t n, uint32_t total,
                 uint32_t *shard_of, uint64_t *load);

/* The digest of a selection: FNV-1a (64 bits) over each item's key and a '\n', keys in
 * ascending strcmp order.  Start from SHARD_DIGEST_INIT and add each key in that order. */
#define SHARD_DIGEST_INIT 0xcbf29ce484222325ull
uint64_t shard_digest_add(uint64_t h, const char *key);
/* "fnv1a64:" and 16 lower-case hex digits, as results files record it (25 bytes with NUL). */
#define SHARD_DIGEST_TEXT 25
void shard_digest_text(uint64_t h, char out[SHARD_DIGEST_TEXT]);

/* a + b and a * b, saturating at UINT64_MAX (cost estimates must not wrap). */
uint64_t shard_cost_add(uint64_t a, uint64_t b);
uint64_t shard_cost_mul(uint64_t a, uint64_t b);

#endif
