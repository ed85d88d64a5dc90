/* cpu_pool.c — the cpu plugin's thread pool (cpu_pool.h). */
#include "cpu_pool.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct worker_arg {
    cpu_pool *pool;
    int tid;
} worker_arg;

/* Take items until none is left: the one an item claimed, else the next of the counter. */
static void drain(cpu_pool *p, int tid)
{
    p->claim[tid] = -1;
    for (int64_t i = atomic_fetch_add(&p->next, 1); i < p->n;) {
        p->fn(p->arg, i, tid);
        i = p->claim[tid] >= 0 ? p->claim[tid] : atomic_fetch_add(&p->next, 1);
        p->claim[tid] = -1;
    }
}

int64_t cpu_pool_claim(cpu_pool *p, int tid)
{
    if (p->claim[tid] < 0)
        p->claim[tid] = atomic_fetch_add(&p->next, 1); /* n or more: none left, kept as such */
    return p->claim[tid] < p->n ? p->claim[tid] : -1;
}

static void *worker_main(void *varg)
{
    worker_arg wa = *(worker_arg *)varg;
    free(varg);
    cpu_pool *p = wa.pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->generation == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop)
            break;
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        drain(p, wa.tid);
        pthread_mutex_lock(&p->mu);
        if (--p->busy == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static int sync_init(cpu_pool *p)
{
    int e = pthread_mutex_init(&p->mu, NULL);
    if (e)
        return e;
    if ((e = pthread_cond_init(&p->wake, NULL)) != 0) {
        pthread_mutex_destroy(&p->mu);
        return e;
    }
    if ((e = pthread_cond_init(&p->done, NULL)) != 0) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
        return e;
    }
    return 0;
}

int cpu_pool_init(cpu_pool *p, int threads)
{
    memset(p, 0, sizeof *p);
    p->threads = threads < 1 ? 1 : threads > CPU_POOL_MAX_THREADS ? CPU_POOL_MAX_THREADS : threads;
    atomic_init(&p->next, 0);
    return sync_init(p);
}

/* Start the workers in this process; on failure keep the ones that started. */
static void start(cpu_pool *p)
{
    p->started = 0;
    p->pid = getpid();
    p->stop = 0;
    p->generation = 0;
    p->busy = 0;
    if (p->threads <= 1)
        return;
    p->workers = calloc((size_t)(p->threads - 1), sizeof *p->workers);
    if (!p->workers)
        return;
    for (int t = 1; t < p->threads; t++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa)
            break;
        wa->pool = p;
        wa->tid = t;
        if (pthread_create(&p->workers[t - 1], NULL, worker_main, wa) != 0) {
            free(wa);
            break;
        }
        p->started++;
    }
}

void cpu_pool_run(cpu_pool *p, int64_t n, cpu_task_fn fn, void *arg)
{
    if (n <= 0)
        return;
    if (p->pid != getpid()) {
        /* First run, or the first in a forked child: the parent's workers do not exist here
         * and its mutex may have been copied in any state, so start afresh (the copied worker
         * array names the parent's threads: only its memory is ours). */
        free(p->workers);
        p->workers = NULL;
        sync_init(p);
        start(p);
    }
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    atomic_store(&p->next, 0);
    if (p->started == 0 || n == 1) {
        drain(p, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->busy = p->started;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    drain(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->busy > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void cpu_pool_destroy(cpu_pool *p)
{
    if (p->pid == getpid() && p->started > 0) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
        for (int t = 0; t < p->started; t++)
            pthread_join(p->workers[t], NULL);
    }
    if (p->pid == getpid() || p->pid == 0) {
        pthread_cond_destroy(&p->done);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
    }
    free(p->workers);
    memset(p, 0, sizeof *p);
}
