/*
 * cli.h - what the subcommands of the `tessel` tool share: their entry
 * points, argument parsing that rejects anything not wholly a number,
 * the exit codes, the monotonic clock and the one way library errors are
 * reported. The tool is thin: it parses, calls the library, and prints;
 * it may include internal headers (src/) because it ships with the library.
 */
#ifndef TESSEL_CLI_H
#define TESSEL_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "tessel.h"

/* Exit codes: 0 success, 1 the library failed (or --check found an error),
 * 2 the command line was wrong. Scripts tell "bad usage" from "bad result". */
enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

/* Subcommands: argv[0] is the subcommand's name. Each returns an exit code. */
int cmd_probe(int argc, char **argv);
int cmd_gemm(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_tune(int argc, char **argv);

/* Prints "tessel <cmd>: <message>" and the usage line to stderr and returns
 * CLI_USAGE, so a parser can `return cli_usage_error(...)`. */
int cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prints "tessel: <status_str>: <tessel_last_error()>" to stderr and
 * returns CLI_FAIL. */
int cli_library_error(tessel_status status);

/* Creates a context of `threads` threads; a warning (the tuning database
 * could not be used) is printed to stderr unless quiet, and is not a
 * failure. Returns CLI_OK, or the failure's exit code after printing it. */
int cli_context(tessel_ctx **ctx, int threads, int quiet);

/* A rows x cols float matrix, 64-byte aligned like the library's panels;
 * NULL if the size overflows or memory runs out, never for 0 elements. */
float *cli_alloc_matrix(int64_t rows, int64_t cols);

/* Seeded values uniform in [-1, 1): the same matrices on every run. */
void cli_fill_random(float *x, int64_t n, uint64_t seed);

/* The median of n doubles (sorts them; the mean of the middle two for even n). */
double cli_median(double *x, int n);

/* Parses all of `text` as a decimal integer in [min, max]; 0 on success,
 * -1 if it is not a number, has trailing characters, or is out of range. */
int cli_parse_i64(const char *text, int64_t min, int64_t max, int64_t *out);

/* Parses a --trans value, two of N/n/T/t ("NT"), into upper-case flags;
 * 0 on success, -1 otherwise. */
int cli_parse_trans(const char *text, char *transa, char *transb);

/* Parses all of `text` as a finite float; 0 on success, -1 otherwise. */
int cli_parse_float(const char *text, float *out);

/* Whether argv[*i] is option `name`, given as "--name value" or
 * "--name=value": returns 1 and sets *value (advancing *i past a separate
 * value), 0 if argv[*i] is something else, -1 if the value is missing. */
int cli_take_value(int argc, char **argv, int *i, const char *name, const char **value);

/* The problem `tessel gemm` and `tessel explain` both take: the sizes M N K
 * (positional, in that order), --trans XY, --threads T and --batch COUNT. */
typedef struct cli_problem {
    int64_t M, N, K;
    char transa, transb;  /* 'N' or 'T' */
    int threads;          /* 0: the library's default */
    int64_t batch;        /* matrices of each operand (strided batched GEMM) */
    int sizes;            /* how many of M, N, K were given */
} cli_problem;

enum { CLI_NOT_TAKEN = -2 };

/* How long `tessel gemm` (without --repeat) and `tessel explain` time a
 * problem: calls for about this many seconds, within these counts. */
#define CLI_TIMED_SECONDS 0.2
enum { CLI_MIN_REPEAT = 3, CLI_MAX_REPEAT = 100000 };

/* NN, the library's threads, one matrix, no sizes yet. */
cli_problem cli_problem_default(void);

/* Takes argv[*i] into *p if it is --trans, --threads, --batch or, not being an
 * option, the next size: returns CLI_OK (having advanced *i past an
 * option's separate value), CLI_USAGE after saying why it is wrong, or
 * CLI_NOT_TAKEN for anything else, which is the caller's. */
int cli_take_problem_arg(const char *cmd, const char *usage, int argc, char **argv, int *i,
                         cli_problem *p);

/* CLI_OK once M, N and K were all given; else CLI_USAGE after naming the
 * first one missing. */
int cli_problem_complete(const char *cmd, const char *usage, const cli_problem *p);

/* Whether `arg` asks for help (-h, --help). */
int cli_is_help(const char *arg);

/* Seconds on the monotonic clock: immune to wall-clock adjustments. */
double cli_now(void);

/* Writes `text` as a JSON string literal, quotes included. */
void cli_json_string(FILE *out, const char *text);

/* Writes a JSON number, or null for NaN and infinities (JSON has neither). */
void cli_json_number(FILE *out, double value);

#endif /* TESSEL_CLI_H */
