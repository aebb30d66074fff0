/*
 * pool.c - a persistent thread pool. A run publishes (fn, arg, ntasks)
 * under a new generation number, and every thread, the caller included,
 * takes task numbers from one atomic counter until none are left; the
 * caller returns once every task has ended.
 *
 * Each thread first takes its home task, if nobody has: the caller task 0,
 * worker i task i + 1. A plan split along N gives task t the same columns
 * on every call, so with home tasks each core finds its share of B in its
 * own L2 from the call before; taken from the counter alone, the worker
 * took task 0 in some calls and both halves crossed between the cores
 * (pre-packed 1-64 x 768 x 768 on 2 threads, 2.4 MB of B, 1.2 MB a core:
 * see DESIGN, "Runtime"). A thread that comes late still finds the rest
 * on the counter, so nobody waits for it.
 *
 * Waking a sleeping thread takes tens of microseconds here (more under a
 * hypervisor), longer than a small GEMM. So a worker that finishes a run
 * watches for the next one for a while before it sleeps, and the caller
 * watches for the last task before it sleeps, as OpenMP runtimes do; on
 * that path nothing takes a lock (with a mutex handed between the threads
 * at each step, an empty run of two tasks took 2.4 us, which is 8% of a
 * 127^3 GEMM split over 2 threads).
 *
 * Threads sleep on the word they watch, with the futex system call, not on
 * a condition variable. With glibc 2.36's condition variable a worker
 * once slept through every broadcast of whole bench rounds (66 runs, each
 * seeing it asleep and broadcasting; the caller did every task alone, at
 * 1 thread's speed). On the bert-base shapes at 2 threads, tessel's bench
 * rounds over 1.3x slower than its best went from 33 of 324 to 6.
 *
 * A worker may notice a run late, after it ended, and must then not read
 * the fields of the next run while the caller writes them. The generation
 * is odd while the caller sets a run up, even once the run is published.
 * A worker joins by counting itself in `active`, then checks that the
 * generation is still the one it saw; the caller makes the generation odd,
 * then waits for `active` to drop to zero before it writes. Both steps are
 * sequentially consistent, so one of the two sees the other: either the
 * worker sees the odd generation and leaves, or the caller waits for it.
 *
 * A worker woken from its sleep may be put on the CPU of the caller that
 * woke it, and Linux can leave the two sharing that CPU for many calls
 * while another CPU idles (measured in a 2-vCPU KVM guest: after 25 ms
 * idle, 100x768x768 on 2 threads ran at 1 thread's speed for 12-15
 * calls, 15 ms in all; with the threads pinned, never). So a worker
 * keeps off the CPU its caller publishes runs from: its affinity is the
 * one it started with less that CPU, set again only when the caller's CPU
 * changes. (Stepping off once on waking, the affinity restored at once,
 * still left the two on one CPU for whole rounds: 8x3072x768 on 2
 * threads ran at 1 thread's speed in 4 of 6 rounds.)
 */
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/runtime.h"

/* Tasks below this can be taken as home tasks; their `claimed` bits
 * say who took each first. (Contexts have at most PLAN_MAX_THREADS.) */
enum { HOME_TASKS = 256 };

typedef struct worker {
    rt_pool *pool;
    int home; /* its home task */
} worker;

struct rt_pool {
    pthread_t *workers;
    worker *homes;
    int nworkers;

    pthread_mutex_t run_lock; /* held by the one caller running the pool */

    atomic_uint generation;   /* odd: a run being set up; even: published */
    rt_task_fn fn;            /* the run: written only while the */
    void *arg;                /* generation is odd and no worker is */
    int ntasks;               /* active */
    atomic_int next_task;
    _Atomic uint64_t claimed[HOME_TASKS / 64];
    atomic_uint tasks_done;
    atomic_int active;        /* workers that joined a run and not left it */
    atomic_bool stop;

    /* Sleeping, once the watching is over: workers sleep on `generation`,
     * the caller on `tasks_done` (futex words: see sleep_on). */
    atomic_int workers_asleep;
    atomic_int caller_asleep;
    atomic_int caller_cpu;    /* where the caller published the last run */
};

/* The futex system call reads a word as a plain 32-bit integer. */
_Static_assert(sizeof(atomic_uint) == sizeof(uint32_t), "a futex word is 32 bits");

/* How long a thread watches for work before sleeping. */
static const double SPIN_SECONDS = 100e-6;

/* Sleeps while *word still holds `seen` (the kernel checks and sleeps in
 * one step, so a change made just before is never slept through); may
 * return early, so callers look again. */
static void sleep_on(atomic_uint *word, unsigned seen)
{
    syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}

/* Wakes every thread asleep on `word`, if `asleep` says one may be: the
 * waker changes the word first, so one asleep either counted itself
 * before (and is woken here) or sees the change before it sleeps. */
static void wake_all(atomic_uint *word, atomic_int *asleep)
{
    if (atomic_load(asleep) > 0)
        syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Whether this thread is the first to take task t. Past HOME_TASKS only
 * the counter hands tasks out, once each. */
static bool claim(rt_pool *p, int t)
{
    if (t >= HOME_TASKS)
        return true;
    uint64_t bit = (uint64_t)1 << (t % 64);
    return !(atomic_fetch_or(&p->claimed[t / 64], bit) & bit);
}

static void run_task(rt_pool *p, rt_task_fn fn, void *arg, int t, int ntasks)
{
    fn(arg, t, ntasks);
    if (atomic_fetch_add(&p->tasks_done, 1) + 1 == (unsigned)ntasks)
        wake_all(&p->tasks_done, &p->caller_asleep);
}

/* Takes the home task, if still free, then tasks until none are left. */
static void work(rt_pool *p, int home, rt_task_fn fn, void *arg, int ntasks)
{
    if (home < ntasks && home < HOME_TASKS && claim(p, home))
        run_task(p, fn, arg, home, ntasks);
    for (;;) {
        int t = atomic_fetch_add(&p->next_task, 1);
        if (t >= ntasks)
            return;
        if (claim(p, t))
            run_task(p, fn, arg, t, ntasks);
    }
}

/* A published generation other than `seen`, or stop. */
static bool new_run(rt_pool *p, unsigned seen)
{
    unsigned g = atomic_load(&p->generation);
    return atomic_load(&p->stop) || (g % 2 == 0 && g != seen);
}

static bool run_over(rt_pool *p, unsigned ntasks)
{
    return atomic_load(&p->tasks_done) >= ntasks;
}

/* Returns once `done` says so: watching for SPIN_SECONDS, then asleep on
 * `word`, the one `done` reads, counted in `*asleep` before the last look
 * (so a thread that changes the word and then reads `*asleep` either is
 * seen or sees it). */
static void wait_for(bool (*done)(rt_pool *, unsigned), rt_pool *p, unsigned arg,
                     atomic_uint *word, atomic_int *asleep)
{
    double deadline = rt_seconds() + SPIN_SECONDS;
    for (unsigned i = 1; !done(p, arg); i++) {
        rt_cpu_relax();
        if (i % 256 == 0 && rt_seconds() > deadline) {
            atomic_fetch_add(asleep, 1);
            for (;;) {
                unsigned seen = atomic_load(word);
                if (done(p, arg))
                    break;
                sleep_on(word, seen);
            }
            atomic_fetch_sub(asleep, 1);
            return;
        }
    }
}

/* Keeps the calling worker off `cpu`, the CPU its caller published the
 * run from: its affinity becomes `allowed` less that CPU (see the top).
 * Best effort: a call that fails leaves the affinity as it was. */
static void keep_off_cpu(const cpu_set_t *allowed, int cpu)
{
    if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, allowed))
        return;
    cpu_set_t others = *allowed;
    CPU_CLR(cpu, &others);
    if (CPU_COUNT(&others) > 0)
        pthread_setaffinity_np(pthread_self(), sizeof others, &others);
}

static void *worker_main(void *opaque)
{
    const worker *self = opaque;
    rt_pool *p = self->pool;
    unsigned seen = 0;
    cpu_set_t allowed;
    bool may_move = pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) == 0;
    int kept_off = -1;
    for (;;) {
        wait_for(new_run, p, seen, &p->generation, &p->workers_asleep);
        if (atomic_load(&p->stop))
            break;
        int caller = atomic_load(&p->caller_cpu);
        if (may_move && caller != kept_off) {
            keep_off_cpu(&allowed, caller);
            kept_off = caller;
        }
        unsigned g = atomic_load(&p->generation);
        atomic_fetch_add(&p->active, 1);
        if (g % 2 == 0 && atomic_load(&p->generation) == g)
            work(p, self->home, p->fn, p->arg, p->ntasks);
        atomic_fetch_sub(&p->active, 1);
        seen = g;
    }
    return NULL;
}

rt_pool *rt_pool_create(int nthreads)
{
    rt_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    int threads = nthreads < 1 ? 1 : nthreads;
    pthread_mutex_init(&p->run_lock, NULL);
    if (threads > 1) {
        p->workers = calloc((size_t)threads - 1, sizeof *p->workers);
        p->homes = calloc((size_t)threads - 1, sizeof *p->homes);
        if (!p->workers || !p->homes) {
            rt_pool_destroy(p);
            return NULL;
        }
        for (int i = 0; i < threads - 1; i++) {
            p->homes[i] = (worker){.pool = p, .home = i + 1};
            if (pthread_create(&p->workers[i], NULL, worker_main, &p->homes[i]) != 0) {
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
    /* the generation moves too, so that a worker about to sleep on it
     * does not sleep through the stop */
    atomic_store(&p->stop, true);
    atomic_fetch_add(&p->generation, 2);
    wake_all(&p->generation, &p->workers_asleep);
    for (int i = 0; i < p->nworkers; i++)
        pthread_join(p->workers[i], NULL);
    free(p->workers);
    free(p->homes);
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
    /* Set up: workers still in the last run (they took its last task
     * number and are on their way out) or joining it late leave first. */
    unsigned g = atomic_load(&p->generation);
    atomic_store(&p->generation, g + 1);
    while (atomic_load(&p->active) != 0)
        sched_yield();
    p->fn = fn;
    p->arg = arg;
    p->ntasks = ntasks;
    atomic_store(&p->next_task, 0);
    for (int w = 0; w < HOME_TASKS / 64; w++)
        atomic_store(&p->claimed[w], 0);
    atomic_store(&p->tasks_done, 0);
    atomic_store(&p->caller_cpu, sched_getcpu());
    atomic_store(&p->generation, g + 2);
    wake_all(&p->generation, &p->workers_asleep);

    work(p, 0, fn, arg, ntasks);

    /* Once every task has ended the run is over: a worker still inside
     * it only finds that no task is left. */
    wait_for(run_over, p, (unsigned)ntasks, &p->tasks_done, &p->caller_asleep);
    pthread_mutex_unlock(&p->run_lock);
}
