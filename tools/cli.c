/*
 * cli.c - the helpers every subcommand shares: strict number parsing (so
 * "12x", "" and "-3" never slip through as sizes), option values in both
 * "--opt v" and "--opt=v" forms, error reporting with fixed exit codes,
 * the monotonic clock, and the little JSON writing the tool needs.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "cli.h"

int cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tessel %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: %s\n", usage);
    return CLI_USAGE;
}

int cli_library_error(tessel_status status)
{
    fprintf(stderr, "tessel: %s: %s\n", tessel_status_str(status), tessel_last_error());
    return CLI_FAIL;
}

int cli_parse_i64(const char *text, int64_t min, int64_t max, int64_t *out)
{
    /* strtoll skips leading blanks and accepts a sign; a size written
     * " 12" or "+12" is odd but harmless, "" and "12x" are not. */
    if (!text || !*text)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end || end == text || v < min || v > max)
        return -1;
    *out = (int64_t)v;
    return 0;
}

int cli_parse_float(const char *text, float *out)
{
    if (!text || !*text)
        return -1;
    char *end;
    errno = 0;
    float v = strtof(text, &end);
    if (errno || *end || end == text || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

float *cli_alloc_matrix(int64_t rows, int64_t cols)
{
    if (rows > 0 && cols > (int64_t)(PTRDIFF_MAX / sizeof(float) / 2) / rows)
        return NULL;
    size_t bytes = (size_t)(rows * cols) * sizeof(float);
    bytes = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
}

/* splitmix64 */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

void cli_fill_random(float *x, int64_t n, uint64_t seed)
{
    /* 24 random bits are exactly representable in a float. */
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)((int64_t)(next_random(&seed) >> 40) - (1 << 23)) * 0x1p-23f;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cli_median(double *x, int n)
{
    if (n <= 0)
        return 0.0;
    qsort(x, (size_t)n, sizeof *x, compare_doubles);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

int cli_parse_trans(const char *text, char *transa, char *transb)
{
    if (strlen(text) != 2 || !strchr("NnTt", text[0]) || !strchr("NnTt", text[1]))
        return -1;
    *transa = text[0] == 'n' || text[0] == 'N' ? 'N' : 'T';
    *transb = text[1] == 'n' || text[1] == 'N' ? 'N' : 'T';
    return 0;
}

cli_problem cli_problem_default(void)
{
    return (cli_problem){.transa = 'N', .transb = 'N', .batch = 1};
}

static const char *const SIZE_NAMES[3] = {"M", "N", "K"};

int cli_take_problem_arg(const char *cmd, const char *usage, int argc, char **argv, int *i,
                         cli_problem *p)
{
    const char *arg = argv[*i], *value = NULL;
    int r;
    if ((r = cli_take_value(argc, argv, i, "--trans", &value)) != 0) {
        if (r < 0 || cli_parse_trans(value, &p->transa, &p->transb) != 0)
            return cli_usage_error(cmd, usage, "--trans takes two of N/T, e.g. NT");
        return CLI_OK;
    }
    if ((r = cli_take_value(argc, argv, i, "--threads", &value)) != 0) {
        int64_t t;
        if (r < 0 || cli_parse_i64(value, 0, 1 << 20, &t) != 0)
            return cli_usage_error(cmd, usage, "--threads takes a count >= 0");
        p->threads = (int)t;
        return CLI_OK;
    }
    if ((r = cli_take_value(argc, argv, i, "--batch", &value)) != 0) {
        if (r < 0 || cli_parse_i64(value, 1, INT32_MAX, &p->batch) != 0)
            return cli_usage_error(cmd, usage, "--batch takes a count >= 1");
        return CLI_OK;
    }
    if (arg[0] == '-' && !(arg[1] >= '0' && arg[1] <= '9'))
        return CLI_NOT_TAKEN; /* an option, and not one of ours */
    if (p->sizes == 3)
        return cli_usage_error(cmd, usage, "unexpected argument '%s'", arg);
    /* The API takes sizes below 2^31; saying so here beats allocating
     * gigabytes first. */
    int64_t *sizes[3] = {&p->M, &p->N, &p->K};
    if (cli_parse_i64(arg, 0, INT32_MAX, sizes[p->sizes]) != 0)
        return cli_usage_error(cmd, usage, "%s must be an integer in 0..%d, not '%s'",
                               SIZE_NAMES[p->sizes], INT32_MAX, arg);
    p->sizes++;
    return CLI_OK;
}

int cli_problem_complete(const char *cmd, const char *usage, const cli_problem *p)
{
    if (p->sizes < 3)
        return cli_usage_error(cmd, usage, "missing size %s", SIZE_NAMES[p->sizes]);
    return CLI_OK;
}

int cli_context(tessel_ctx **ctx, int threads, int quiet)
{
    tessel_status s = tessel_ctx_create(ctx, threads);
    if (TESSEL_IS_ERROR(s))
        return cli_library_error(s);
    if (s != TESSEL_OK && !quiet)
        fprintf(stderr, "tessel: warning: %s\n", tessel_last_error());
    return CLI_OK;
}

int cli_take_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return 1;
    }
    if (arg[n] != '\0')
        return 0; /* a longer option that merely starts with `name` */
    if (*i + 1 >= argc)
        return -1;
    *value = argv[++*i];
    return 1;
}

int cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_json_string(FILE *out, const char *text)
{
    fputc('"', out);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(out, "\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", out);
        else if (*c == '\t')
            fputs("\\t", out);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(out, "\\u%04x", *c);
        else
            fputc(*c, out); /* bytes >= 0x80 pass through: UTF-8 stays UTF-8 */
    }
    fputc('"', out);
}

void cli_json_number(FILE *out, double value)
{
    if (isfinite(value))
        fprintf(out, "%.6g", value);
    else
        fputs("null", out);
}
