/* cpu_pool.h — the cpu plugin's thread pool: a fixed set of workers owned by one context, fed
 * one parallel loop at a time.
 *
 * cpu_pool_run(pool, n, fn, arg) calls fn(arg, item, tid) once for every item in 0..n-1, spread
 * over the calling thread (tid 0) and the workers (tid 1..threads-1) by an atomic counter (each
 * thread takes the next item when it is free: dynamic scheduling, so items given in decreasing
 * cost balance well), and returns when all are done.  The harness calls a context from one
 * thread at a time, so runs never overlap.  An item may claim the one its thread runs next
 * (cpu_pool_claim) before it ends, to start reading that item's data while it finishes.
 *
 * Workers start at the first run that needs them, not at init.  A process forked after they
 * started (a benchmark child of a process that already ran) has none of them: the first run in
 * the child sees the new process id and starts its own, never waiting for the parent's. */
#ifndef ATTNCONF_CPU_POOL_H
#define ATTNCONF_CPU_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

typedef void (*cpu_task_fn)(void *arg, int64_t item, int tid);

#define CPU_POOL_MAX_THREADS 1024

typedef struct cpu_pool {
    int threads; /* wanted, the caller included (>= 1) */
    int started; /* workers running in process `pid` */
    pid_t pid;
    pthread_t *workers; /* [threads - 1] */
    pthread_mutex_t mu;
    pthread_cond_t wake; /* a new generation of work, or stop */
    pthread_cond_t done; /* the last worker left the current generation */
    uint64_t generation;
    int stop;
    int busy; /* workers still in the current generation */
    /* the current loop */
    cpu_task_fn fn;
    void *arg;
    int64_t n;
    atomic_llong next;
    int64_t claim[CPU_POOL_MAX_THREADS]; /* per thread: the item claimed to run next, or -1 */
} cpu_pool;

/* Prepare a pool of `threads` threads in all (1..CPU_POOL_MAX_THREADS; the caller counts as
 * one).  Starts nothing.  Returns 0, or an errno value from pthread initialisation. */
int cpu_pool_init(cpu_pool *p, int threads);

/* Run fn over items 0..n-1 (see the file comment).  If workers cannot be started the caller
 * runs every item itself: the result is the same, only slower. */
void cpu_pool_run(cpu_pool *p, int64_t n, cpu_task_fn fn, void *arg);

/* Called by a task running item i on thread tid (inside cpu_pool_run): take the item this thread
 * runs after i, now rather than when i ends.  A second call during i returns the same item.
 * Returns it, or -1 when no item is left.  Claim late in an item: a claimed item waits for its
 * thread, so claiming early would unbalance the last items. */
int64_t cpu_pool_claim(cpu_pool *p, int tid);

/* Stop and join the workers (of this process) and free the pool's memory. */
void cpu_pool_destroy(cpu_pool *p);

#endif
