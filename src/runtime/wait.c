/*
 * wait.c - waiting for a counter that other threads of the same run move
 * forward: the tasks of a GEMM that share packed panels wait for each
 * other this way, for microseconds at a time. A short spin keeps that wait
 * near the latency of the cache line; past it, the thread yields its CPU,
 * so a caller running more threads than cores still makes progress.
 */
#include <sched.h>

#include "runtime/runtime.h"

/* Spins before each yield: about a microsecond of polling. */
static const int SPINS_BEFORE_YIELD = 1000;

void rt_wait_at_least(atomic_int *counter, int target)
{
    for (;;) {
        for (int i = 0; i < SPINS_BEFORE_YIELD; i++) {
            if (atomic_load_explicit(counter, memory_order_acquire) >= target)
                return;
            rt_cpu_relax();
        }
        sched_yield();
    }
}
