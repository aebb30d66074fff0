/*
 * canary.h - how much of its usual speed the machine gives the benchmark
 * right now. On a shared host the benchmark's cores slow down in spells
 * (a neighbour on the same physical core, a vCPU held back) that the
 * kernel's CPU accounting does not show; a fixed piece of arithmetic, run
 * on every benchmark thread between the libraries' timing rounds and
 * timed against its best time so far, does show them.
 */
#ifndef TESSEL_BENCH_CANARY_H
#define TESSEL_BENCH_CANARY_H

/* Runs the canary on `threads` CPUs at once (the caller's and the next
 * ones it may run on; about 1.5 ms) and returns the slowest CPU's speed as
 * a fraction of the best this process has seen: 1.0 at full speed, about
 * 0.5 where the host gave a CPU half a core. Returns 1.0 if it cannot
 * run (no affinity, no threads). */
double canary_capacity(int threads);

#endif
