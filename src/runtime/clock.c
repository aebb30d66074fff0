/*
 * clock.c - the monotonic clock every timing above the hardware probe
 * uses (calibration, tuning, the CLI's timed runs).
 */
#include <time.h>

#include "runtime/runtime.h"

double rt_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
