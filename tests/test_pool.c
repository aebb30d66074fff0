/*
 * test_pool.c - the thread pool runs every task of every run exactly once
 * when runs follow each other faster than workers wake. A worker joining a
 * run just as it ended once took a task number of the next run with the
 * previous run's function; that needs a preemption at one point, which
 * this test makes likely but cannot force (it was found by a stress run
 * with the machine loaded, where the old pool hung or computed twice).
 */
#include <stdatomic.h>

#include "runtime/runtime.h"
#include "test.h"

enum { RUNS = 20000, TASKS = 3 };

typedef struct {
    atomic_int count[TASKS];
    int run;
} run_record;

static void count_task(void *arg, int task, int ntasks)
{
    run_record *r = arg;
    if (ntasks == TASKS)
        atomic_fetch_add(&r->count[task], 1);
}

void suite_pool(void)
{
    /* Three pools of 8 threads on a machine of a few cores, used in turn:
     * workers of idle pools spin and get preempted at every point, which
     * is what opens the window. */
    enum { POOLS = 3 };
    rt_pool *pools[POOLS];
    for (int i = 0; i < POOLS; i++) {
        pools[i] = rt_pool_create(8);
        CHECK(pools[i] != NULL, "pool of 8 threads starts");
        if (!pools[i])
            return;
    }
    int wrong = 0;
    for (int run = 0; run < RUNS; run++) {
        run_record r = {.run = run};
        for (int t = 0; t < TASKS; t++)
            atomic_init(&r.count[t], 0);
        rt_pool_run(pools[run % POOLS], count_task, &r, TASKS);
        for (int t = 0; t < TASKS; t++)
            wrong += atomic_load(&r.count[t]) != 1;
    }
    CHECK(wrong == 0, "%d tasks of %d runs did not run exactly once", wrong, RUNS);
    for (int i = 0; i < POOLS; i++)
        rt_pool_destroy(pools[i]);
}
