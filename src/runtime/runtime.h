/*
 * runtime.h - what the operators run on: a persistent thread pool, a wait
 * for the counters its tasks share, and aligned scratch memory for packed
 * panels.
 */
#ifndef TESSEL_RUNTIME_H
#define TESSEL_RUNTIME_H

#include <stdatomic.h>
#include <stddef.h>

typedef struct rt_pool rt_pool;

/* One task of a parallel run: task `task` of `ntasks`. */
typedef void (*rt_task_fn)(void *arg, int task, int ntasks);

/* A pool of `nthreads` threads, the caller of rt_pool_run counting as one
 * (so nthreads - 1 workers are started). NULL if threads could not start. */
rt_pool *rt_pool_create(int nthreads);
void rt_pool_destroy(rt_pool *pool);

/* Runs fn(arg, t, ntasks) for every t in [0, ntasks) and returns when all
 * have ended. The calling thread works too. If another caller is using the
 * pool, every task runs on the calling thread: correct, never
 * oversubscribed, only slower. */
void rt_pool_run(rt_pool *pool, rt_task_fn fn, void *arg, int ntasks);

/* A cache of 64-byte aligned buffers for packed panels, reused between
 * calls: packing into fresh memory would add page faults to every GEMM.
 * Each concurrent caller acquires its own buffer, so the cache is safe to
 * share. Buffers are acquired before any output is written, so running out
 * of memory leaves the output untouched. */
typedef struct rt_buffers rt_buffers;
rt_buffers *rt_buffers_create(void);
void rt_buffers_destroy(rt_buffers *cache);
/* A buffer of at least `bytes`, or NULL if memory ran out. */
void *rt_buffer_acquire(rt_buffers *cache, size_t bytes);
void rt_buffer_release(rt_buffers *cache, void *buffer);

/* Returns once *counter >= target (read with acquire order, so what the
 * threads that moved it wrote before is visible): spins a little, then
 * yields the CPU between looks. For waits of microseconds between the
 * tasks of one run, which all run at once or one after another (a
 * counter a later task would move is never waited for by an earlier one
 * in the second case; see ops/gemm.c). */
void rt_wait_at_least(atomic_int *counter, int target);

/* Tells the core this thread is spinning: on x86 a pause of a few dozen
 * cycles, which leaves the core's resources to a sibling hyperthread
 * (a virtual CPU may be one) instead of issuing loads flat out. */
static inline void rt_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Seconds on the monotonic clock, for timing. */
double rt_seconds(void);

#endif /* TESSEL_RUNTIME_H */
