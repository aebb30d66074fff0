/*
 * test.h - the tiny test framework: CHECK counts one assertion, prints the
 * first failures with their location, and the runner ends with the line
 * "N passed, N failed". Each suite is a function listed in main.c.
 */
#ifndef TESSEL_TEST_H
#define TESSEL_TEST_H

#include <stdbool.h>
#include <stdint.h>

void test_check(bool ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* CHECK(condition, "printf-style message shown on failure", ...) */
#define CHECK(cond, ...) test_check((cond), __FILE__, __LINE__, __VA_ARGS__)

/* Labels the failures that follow (e.g. the machine a planner check ran
 * on); NULL clears it. */
void test_context(const char *label);

/* Deterministic pseudo-random numbers (splitmix64), so every run tests the
 * same shapes and values. */
typedef struct { uint64_t state; } test_rng;
uint64_t test_rng_next(test_rng *r);
int64_t test_rng_range(test_rng *r, int64_t lo, int64_t hi); /* [lo, hi] */
float test_rng_float(test_rng *r);                           /* [-1, 1) */

/* The suites, one per file. */
void suite_ref(void);
void suite_hw(void);
void suite_model(void);
void suite_candidates(void);
void suite_kernels(void);
void suite_gemm(void);
void suite_packed(void);
void suite_bad_input(void);
void suite_concurrency(void);
void suite_pool(void);
void suite_tune(void);
void suite_plan_cache(void);
void suite_db(void);

#endif /* TESSEL_TEST_H */
