/*
 * main.c - the test runner: runs every suite (or those named on the command
 * line) and ends with "N passed, N failed"; exits 1 if anything failed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

static long passed, failed;

static const char *context; /* test_context's label, or NULL */

void test_context(const char *label)
{
    context = label;
}

void test_check(bool ok, const char *file, int line, const char *fmt, ...)
{
    if (ok) {
        passed++;
        return;
    }
    failed++;
    if (failed > 50)
        return; /* the count still tells how many */
    va_list args;
    va_start(args, fmt);
    printf("FAIL %s:%d: ", file, line);
    if (context)
        printf("[%s] ", context);
    vprintf(fmt, args);
    printf("\n");
    va_end(args);
}

uint64_t test_rng_next(test_rng *r)
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int64_t test_rng_range(test_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(test_rng_next(r) % (uint64_t)(hi - lo + 1));
}

float test_rng_float(test_rng *r)
{
    return (float)((double)(test_rng_next(r) >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

static const struct {
    const char *name;
    void (*run)(void);
} suites[] = {
    {"ref", suite_ref},
    {"hw", suite_hw},
    {"model", suite_model},
    {"candidates", suite_candidates},
    {"kernels", suite_kernels},
    {"gemm", suite_gemm},
    {"packed", suite_packed},
    {"bad_input", suite_bad_input},
    {"concurrency", suite_concurrency},
    {"pool", suite_pool},
    {"tune", suite_tune},
    {"plan_cache", suite_plan_cache},
    {"db", suite_db},
};

int main(int argc, char **argv)
{
    /* Plan from the analytic model whatever a user of this machine has
     * tuned; the suites that test the database set TESSEL_DB themselves. */
    setenv("TESSEL_DB", "off", 1);
    for (size_t s = 0; s < sizeof suites / sizeof suites[0]; s++) {
        bool wanted = argc < 2;
        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], suites[s].name) == 0;
        if (!wanted)
            continue;
        long before_pass = passed, before_fail = failed;
        suites[s].run();
        printf("suite %-12s %ld passed, %ld failed\n", suites[s].name,
               passed - before_pass, failed - before_fail);
        fflush(stdout);
    }
    printf("%ld passed, %ld failed\n", passed, failed);
    return failed ? 1 : 0;
}
