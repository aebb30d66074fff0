/*
 * test_pool.c - the thread pool runs every task of every run exactly once
 * when runs follow each other faster than workers wake. A worker joining a
 * run just as it ended once took a task number of the next run with the
 * previous run's function; that needs a preemption at one point, which
 * this test makes likely but cannot force (it was found by a stress run
 * with the machine loaded, where the old pool hung or computed twice).
 * Each thread takes its home task first (the caller task 0), and runs of
 * more tasks than have homes still run each once.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

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

static void count_many(void *arg, int task, int ntasks)
{
    (void)ntasks;
    atomic_fetch_add(&((atomic_int *)arg)[task], 1);
}

/* Two tasks that wait for each other (up to a second): each records the
 * thread it ran on, so a worker that slept through its wake-up shows as
 * both tasks on the caller. */
typedef struct {
    atomic_int started;
    pthread_t ran_on[2];
} rendezvous;

static void meet_task(void *arg, int task, int ntasks)
{
    rendezvous *r = arg;
    r->ran_on[task] = pthread_self();
    atomic_fetch_add(&r->started, 1);
    double give_up = rt_seconds() + 1.0;
    while (atomic_load(&r->started) < ntasks && rt_seconds() < give_up)
        rt_cpu_relax();
}

static void pause_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

/* A worker that went to sleep between runs is woken by the next one and
 * takes its task; a pool destroyed while its worker sleeps stops. */
static void workers_wake(void)
{
    rt_pool *pool = rt_pool_create(2);
    CHECK(pool != NULL, "pool of 2 threads starts");
    if (!pool)
        return;
    enum { ROUNDS = 100 };
    int missed = 0, away = 0;
    for (int round = 0; round < ROUNDS && !missed; round++) {
        pause_ms(round % 2 ? 2 : 0); /* 2 ms: longer than a worker watches */
        rendezvous r = {0};
        rt_pool_run(pool, meet_task, &r, 2);
        missed += pthread_equal(r.ran_on[0], r.ran_on[1]) != 0;
        /* Task 1 waits for task 0 to start, so the worker cannot reach
         * task 0 before the caller takes it as its home task. */
        away += !pthread_equal(r.ran_on[0], pthread_self());
    }
    CHECK(missed == 0, "a sleeping worker was not woken for a run");
    CHECK(away == 0, "task 0 ran away from the caller in %d of %d runs", away, ROUNDS);
    pause_ms(2);
    rt_pool_destroy(pool); /* hangs if the stop does not wake the worker */
}

void suite_pool(void)
{
    workers_wake();

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
    /* Past the tasks that can be home tasks, the counter alone. */
    enum { MANY = 300 };
    static atomic_int many[MANY];
    for (int t = 0; t < MANY; t++)
        atomic_init(&many[t], 0);
    for (int run = 0; run < 50; run++)
        rt_pool_run(pools[run % POOLS], count_many, many, MANY);
    wrong = 0;
    for (int t = 0; t < MANY; t++)
        wrong += atomic_load(&many[t]) != 50;
    CHECK(wrong == 0, "%d of %d tasks did not run once a run", wrong, MANY);
    for (int i = 0; i < POOLS; i++)
        rt_pool_destroy(pools[i]);
}
