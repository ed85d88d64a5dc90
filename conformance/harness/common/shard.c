/* shard.c — slices of a run for many machines (shard.h). */
#define _POSIX_C_SOURCE 200809L /* futimens */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cli.h"
#include "common/shard.h"

/* A decimal integer 0..lim with no sign, space or leading '+'; the end in *end.  Leading zeros
 * are read here and refused by the callers, with their own message (cli_leading_zero). */
static int parse_u32(const char *s, uint32_t lim, uint32_t *out, const char **end)
{
    if (*s < '0' || *s > '9')
        return -1;
    uint64_t v = 0;
    while (*s >= '0' && *s <= '9') {
        v = v * 10 + (uint64_t)(*s++ - '0');
        if (v > lim)
            return -1;
    }
    *out = (uint32_t)v;
    *end = s;
    return 0;
}

const char *shard_parse(const char *text, shard_spec *out)
{
    static const char *const why = "expected K/N with 0 <= K < N <= 10000 (K counts from 0, as "
                                   "GTEST_SHARD_INDEX does: --shard 0/3, 1/3, 2/3)";
    uint32_t k, n;
    const char *p;
    if (!text || parse_u32(text, SHARD_MAX_TOTAL, &k, &p) != 0 || *p != '/' ||
        parse_u32(p + 1, SHARD_MAX_TOTAL, &n, &p) != 0 || *p != '\0' || n == 0 || k >= n)
        return why;
    if (cli_leading_zero(text) || cli_leading_zero(strchr(text, '/') + 1))
        return "expected K/N without leading zeros (--shard 0/3, not 00/03)";
    out->index = k;
    out->total = n;
    return NULL;
}

int shard_from_env(shard_spec *out, char *why, size_t cap)
{
    const char *t = getenv(SHARD_ENV_TOTAL), *i = getenv(SHARD_ENV_INDEX);
    out->index = out->total = 0;
    if (!t && !i)
        return 0;
    if (!t || !i) {
        snprintf(why, cap, "%s is set (%s) but %s is not: set both, or neither",
                 t ? SHARD_ENV_TOTAL : SHARD_ENV_INDEX, t ? t : i,
                 t ? SHARD_ENV_INDEX : SHARD_ENV_TOTAL);
        return -1;
    }
    uint32_t n, k;
    const char *end;
    if (parse_u32(t, SHARD_MAX_TOTAL, &n, &end) != 0 || *end || n == 0) {
        snprintf(why, cap, "%s=%s: expected a whole number of shards from 1 to %u", SHARD_ENV_TOTAL,
                 t, SHARD_MAX_TOTAL);
        return -1;
    }
    if (cli_leading_zero(t)) {
        snprintf(why, cap, "%s=%s: expected a number without leading zeros (%u)", SHARD_ENV_TOTAL,
                 t, n);
        return -1;
    }
    if (parse_u32(i, SHARD_MAX_TOTAL, &k, &end) != 0 || *end || k >= n) {
        snprintf(why, cap, "%s=%s: expected a shard index from 0 to %u (%s=%u; it counts from 0)",
                 SHARD_ENV_INDEX, i, n - 1, SHARD_ENV_TOTAL, n);
        return -1;
    }
    if (cli_leading_zero(i)) {
        snprintf(why, cap, "%s=%s: expected a number without leading zeros (%u)", SHARD_ENV_INDEX,
                 i, k);
        return -1;
    }
    out->index = k;
    out->total = n;
    return 0;
}

int shard_touch_status_file(char *why, size_t cap)
{
    const char *p = getenv(SHARD_ENV_STATUS);
    if (!p || !*p)
        return 0;
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0666);
    int bad = fd < 0 || futimens(fd, NULL) != 0;
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        snprintf(why, cap, "%s=%s: %s", SHARD_ENV_STATUS, p, strerror(e));
        return -1;
    }
    return 0;
}

uint64_t shard_cost_add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t shard_cost_mul(uint64_t a, uint64_t b)
{
    return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

/* ---- the greedy ---------------------------------------------------------------------------- */

typedef struct item {
    uint64_t cost;
    const char *key;
    size_t i;
} item;

static int item_cmp(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->cost != y->cost)
        return x->cost > y->cost ? -1 : 1;
    int d = strcmp(x->key, y->key);
    return d ? d : (x->i > y->i) - (x->i < y->i); /* equal keys: input order (stable) */
}

/* A min-heap of slices by (load, index): the least loaded slice, the lowest on ties. */
typedef struct slot {
    uint64_t load;
    uint32_t k;
} slot;

static int slot_less(const slot *a, const slot *b)
{
    return a->load != b->load ? a->load < b->load : a->k < b->k;
}

static void sift_down(slot *h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && slot_less(&h[l], &h[m]))
            m = l;
        if (r < n && slot_less(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        slot t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

int shard_assign(const uint64_t *cost, const char *const *key, size_t n, uint32_t total,
                 uint32_t *shard_of, uint64_t *load)
{
    if (total == 0)
        return -1;
    item *it = malloc((n ? n : 1) * sizeof *it);
    slot *h = malloc(total * sizeof *h);
    if (!it || !h) {
        free(it);
        free(h);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        it[i] = (item){cost[i], key[i], i};
    qsort(it, n, sizeof *it, item_cmp);
    for (uint32_t k = 0; k < total; k++)
        h[k] = (slot){0, k}; /* all 0, ascending k: already a heap */
    for (size_t j = 0; j < n; j++) {
        shard_of[it[j].i] = h[0].k;
        h[0].load = shard_cost_add(h[0].load, it[j].cost);
        sift_down(h, total, 0);
    }
    if (load)
        for (uint32_t k = 0; k < total; k++)
            load[h[k].k] = h[k].load;
    free(it);
    free(h);
    return 0;
}

/* ---- the selection's digest ---------------------------------------------------------------- */

uint64_t shard_digest_add(uint64_t h, const char *key)
{
    for (const unsigned char *p = (const unsigned char *)key;; p++) {
        h ^= *p ? *p : '\n';
        h *= 0x100000001b3ull;
        if (!*p)
            return h;
    }
}

void shard_digest_text(uint64_t h, char out[SHARD_DIGEST_TEXT])
{
    snprintf(out, SHARD_DIGEST_TEXT, "fnv1a64:%016" PRIx64, h);
}
