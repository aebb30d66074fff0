/*
 * pool.c - a persistent thread pool. Workers sleep on a condition variable
 * between runs; a run publishes (fn, arg, ntasks) under the mutex with a new
 * generation number, and every thread, the caller included, takes task
 * numbers from one atomic counter until none are left. The caller then waits
 * until every task has ended and every worker that joined the run has left
 * it, so the next run can safely reset the counters.
 *
 * Waking a sleeping thread takes tens of microseconds here (more under a
 * hypervisor), longer than a small GEMM. So a worker that finishes a run
 * watches for the next one for a while before it sleeps, and the caller
 * watches for the last task before it sleeps, as OpenMP runtimes do.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/runtime.h"

struct rt_pool {
    pthread_t *workers;
    int nworkers;

    pthread_mutex_t run_lock; /* held by the one caller running the pool */

    pthread_mutex_t lock;     /* guards everything below */
    pthread_cond_t wake;      /* a new generation or stop */
    pthread_cond_t finished;  /* a task ended or a worker left */
    atomic_ulong generation;
    bool stop;
    rt_task_fn fn;
    void *arg;
    int ntasks;
    int active;               /* workers inside the current run */
    atomic_int next_task;
    atomic_int tasks_done;
};

/* Takes tasks until none are left. */
static void work(rt_pool *p, rt_task_fn fn, void *arg, int ntasks)
{
    for (;;) {
        int t = atomic_fetch_add(&p->next_task, 1);
        if (t >= ntasks)
            return;
        fn(arg, t, ntasks);
        atomic_fetch_add(&p->tasks_done, 1);
    }
}

/* How long a thread watches for work before sleeping. */
static const double SPIN_SECONDS = 100e-6;

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Returns when `done` says so or SPIN_SECONDS have passed. */
static void spin_until(bool (*done)(rt_pool *, unsigned long), rt_pool *p, unsigned long arg)
{
    double deadline = seconds_now() + SPIN_SECONDS;
    for (unsigned i = 1; !done(p, arg); i++)
        if (i % 256 == 0 && seconds_now() > deadline)
            return;
}

static bool new_generation(rt_pool *p, unsigned long seen)
{
    return atomic_load(&p->generation) != seen;
}

static bool all_tasks_done(rt_pool *p, unsigned long ntasks)
{
    return (unsigned long)atomic_load(&p->tasks_done) >= ntasks;
}

static void *worker_main(void *opaque)
{
    rt_pool *p = opaque;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        pthread_mutex_unlock(&p->lock);
        spin_until(new_generation, p, seen);
        pthread_mutex_lock(&p->lock);
        while (!p->stop && atomic_load(&p->generation) == seen)
            pthread_cond_wait(&p->wake, &p->lock);
        if (p->stop)
            break;
        seen = atomic_load(&p->generation);
        rt_task_fn fn = p->fn;
        void *arg = p->arg;
        int ntasks = p->ntasks;
        p->active++;
        pthread_mutex_unlock(&p->lock);

        work(p, fn, arg, ntasks);

        pthread_mutex_lock(&p->lock);
        p->active--;
        pthread_cond_signal(&p->finished);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

rt_pool *rt_pool_create(int nthreads)
{
    rt_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    int threads = nthreads < 1 ? 1 : nthreads;
    pthread_mutex_init(&p->run_lock, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->finished, NULL);
    if (threads > 1) {
        p->workers = calloc((size_t)threads - 1, sizeof *p->workers);
        if (!p->workers) {
            rt_pool_destroy(p);
            return NULL;
        }
        for (int i = 0; i < threads - 1; i++) {
            if (pthread_create(&p->workers[i], NULL, worker_main, p) != 0) {
                rt_pool_destroy(p);
                return NULL;
            }
            p->nworkers++;
        }
    }
    return p;
}

void rt_pool_destroy(rt_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stop = true;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->nworkers; i++)
        pthread_join(p->workers[i], NULL);
    free(p->workers);
    pthread_cond_destroy(&p->finished);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->run_lock);
    free(p);
}

static void run_on_caller(rt_task_fn fn, void *arg, int ntasks)
{
    for (int t = 0; t < ntasks; t++)
        fn(arg, t, ntasks);
}

void rt_pool_run(rt_pool *p, rt_task_fn fn, void *arg, int ntasks)
{
    if (ntasks <= 0)
        return;
    if (ntasks == 1 || p->nworkers == 0 || pthread_mutex_trylock(&p->run_lock) != 0) {
        run_on_caller(fn, arg, ntasks);
        return;
    }
    pthread_mutex_lock(&p->lock);
    /* A worker can join a run after the caller saw every task end (it
     * noticed the new generation just then); it finds no task left and
     * leaves. The counters are reset only once it has, else its last
     * fetch of a task number would take one of this run's with the last
     * run's function. */
    while (p->active > 0)
        pthread_cond_wait(&p->finished, &p->lock);
    p->fn = fn;
    p->arg = arg;
    p->ntasks = ntasks;
    atomic_store(&p->next_task, 0);
    atomic_store(&p->tasks_done, 0);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    work(p, fn, arg, ntasks);

    spin_until(all_tasks_done, p, (unsigned long)ntasks);
    pthread_mutex_lock(&p->lock);
    while (atomic_load(&p->tasks_done) < ntasks || p->active > 0)
        pthread_cond_wait(&p->finished, &p->lock);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_unlock(&p->run_lock);
}
