/* The cpu plugin's thread pool (Criterion): every item of a run is done exactly once, whatever
 * the threads and however the items claim their successors (cpu_pool_claim); a claimed item is
 * the next one its thread runs; a second claim during an item gives the same item; a claim with
 * nothing left gives -1 and loses nothing. */
#include <criterion/criterion.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_pool.h"

#define MAXN 4096
#define MAXT 8

typedef struct trial {
    cpu_pool *pool;
    int64_t n;
    int claim_every; /* item i claims when i % claim_every == 0 (0: never) */
    atomic_int runs[MAXN];
    int64_t claimed[MAXT]; /* per thread: the item its last task claimed, or -1 */
    atomic_int claim_mismatch, twice_mismatch, claim_errors;
} trial;

static void task(void *arg, int64_t i, int tid)
{
    trial *t = arg;
    if (i < 0 || i >= t->n) {
        atomic_fetch_add(&t->claim_errors, 1);
        return;
    }
    /* The item this thread claimed last time must be this one. */
    if (t->claimed[tid] >= 0 && t->claimed[tid] != i)
        atomic_fetch_add(&t->claim_mismatch, 1);
    t->claimed[tid] = -1;
    atomic_fetch_add(&t->runs[i], 1);
    if (t->claim_every && i % t->claim_every == 0) {
        const int64_t c = cpu_pool_claim(t->pool, tid);
        if (cpu_pool_claim(t->pool, tid) != c)
            atomic_fetch_add(&t->twice_mismatch, 1);
        if (c >= t->n || c < -1)
            atomic_fetch_add(&t->claim_errors, 1);
        t->claimed[tid] = c;
    }
}

static void check(int threads, int64_t n, int claim_every, int calls)
{
    cpu_pool pool;
    cr_assert_eq(cpu_pool_init(&pool, threads), 0);
    trial *t = calloc(1, sizeof *t);
    cr_assert(t);
    for (int call = 0; call < calls; call++) {
        memset(t, 0, sizeof *t);
        t->pool = &pool;
        t->n = n;
        t->claim_every = claim_every;
        for (int k = 0; k < MAXT; k++)
            t->claimed[k] = -1;
        cpu_pool_run(&pool, n, task, t);
        for (int64_t i = 0; i < n; i++)
            cr_assert_eq(atomic_load(&t->runs[i]), 1,
                         "threads %d, n %lld, claim every %d, call %d: item %lld ran %d times",
                         threads, (long long)n, claim_every, call, (long long)i,
                         atomic_load(&t->runs[i]));
        cr_assert_eq(atomic_load(&t->claim_mismatch), 0, "a claimed item ran elsewhere or later");
        cr_assert_eq(atomic_load(&t->twice_mismatch), 0, "a second claim gave another item");
        cr_assert_eq(atomic_load(&t->claim_errors), 0, "an item or a claim out of range");
        /* Every claimed item ran on its thread (which reset the mark), and a claim with nothing
         * left gave -1: so each thread ends at -1, whatever it claimed last. */
        for (int k = 0; k < threads; k++)
            cr_assert_eq(t->claimed[k], -1,
                         "threads %d, n %lld, claim every %d, call %d: thread %d ends with a "
                         "claim of item %lld that never ran",
                         threads, (long long)n, claim_every, call, k, (long long)t->claimed[k]);
    }
    free(t);
    cpu_pool_destroy(&pool);
}

Test(cpu_pool, every_item_once_without_claims)
{
    for (int threads = 1; threads <= MAXT; threads++) {
        check(threads, 1, 0, 3);
        check(threads, 7, 0, 3);
        check(threads, MAXN, 0, 3);
    }
}

Test(cpu_pool, every_item_once_with_claims)
{
    const int every[] = {1, 2, 3};
    for (int threads = 1; threads <= MAXT; threads++)
        for (size_t e = 0; e < sizeof every / sizeof every[0]; e++) {
            check(threads, 1, every[e], 3);
            check(threads, 2, every[e], 3);
            check(threads, 7, every[e], 3);
            check(threads, MAXN, every[e], 5);
        }
}

/* One thread, every item claiming: the claims hand out the items in order and the last finds
 * none left. */
static int64_t seen_order[16];
static int seen_n;
static cpu_pool *seen_pool;
static int64_t last_claim;

static void order_task(void *arg, int64_t i, int tid)
{
    (void)arg;
    seen_order[seen_n++] = i;
    last_claim = cpu_pool_claim(seen_pool, tid);
}

Test(cpu_pool, claims_on_one_thread_go_in_order)
{
    cpu_pool pool;
    cr_assert_eq(cpu_pool_init(&pool, 1), 0);
    seen_pool = &pool;
    seen_n = 0;
    cpu_pool_run(&pool, 5, order_task, NULL);
    cr_assert_eq(seen_n, 5);
    for (int i = 0; i < 5; i++)
        cr_assert_eq(seen_order[i], i);
    cr_assert_eq(last_claim, -1);
    /* A second run starts from item 0 again, with no claim left over. */
    seen_n = 0;
    cpu_pool_run(&pool, 3, order_task, NULL);
    cr_assert_eq(seen_n, 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(seen_order[i], i);
    cr_assert_eq(last_claim, -1);
    cpu_pool_destroy(&pool);
}
