/*
 * tessel.c - the `tessel` command: finds the subcommand named by the first
 * argument and hands it the rest. The subcommands live in cmd_*.c; this
 * file only knows their names and one-line summaries, so adding one is a
 * line in the table below.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

static const subcommand subcommands[] = {
    {"probe", cmd_probe, "measure this machine and show the model's blocking"},
    {"gemm", cmd_gemm, "time (and check) one SGEMM shape"},
    {"explain", cmd_explain, "show the candidates, plan and tessellation of one shape"},
    {"tune", cmd_tune, "calibrate the cost model, transfer it, or tune shapes"},
};
enum { NSUBCOMMANDS = sizeof subcommands / sizeof subcommands[0] };

static const char usage_line[] = "tessel <command> [options]   (tessel --help)";

static void print_help(FILE *out)
{
    fprintf(out, "usage: tessel <command> [options]\n\n"
                 "tessel runs SGEMM fast for shapes known only at run time.\n\n"
                 "commands:\n");
    for (int i = 0; i < NSUBCOMMANDS; i++)
        fprintf(out, "  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\n'tessel <command> --help' describes one command.\n"
                 "Environment: TESSEL_NUM_THREADS (default thread count),\n"
                 "TESSEL_ISA=avx512|avx2|generic (restrict the ISA).\n");
}

static const subcommand *find(const char *name)
{
    for (int i = 0; i < NSUBCOMMANDS; i++)
        if (strcmp(subcommands[i].name, name) == 0)
            return &subcommands[i];
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "tessel: no command given\nusage: %s\n", usage_line);
        return CLI_USAGE;
    }
    const char *name = argv[1];
    if (cli_is_help(name)) {
        print_help(stdout);
        return CLI_OK;
    }
    /* "tessel help gemm" is "tessel gemm --help", as in git. */
    if (strcmp(name, "help") == 0) {
        if (argc == 2) {
            print_help(stdout);
            return CLI_OK;
        }
        const subcommand *cmd = find(argv[2]);
        if (!cmd) {
            fprintf(stderr, "tessel: unknown command '%s'\nusage: %s\n", argv[2], usage_line);
            return CLI_USAGE;
        }
        char help[] = "--help";
        char *args[] = {argv[2], help, NULL};
        return cmd->run(2, args);
    }
    const subcommand *cmd = find(name);
    if (!cmd) {
        fprintf(stderr, "tessel: unknown command '%s'\nusage: %s\n", name, usage_line);
        return CLI_USAGE;
    }
    return cmd->run(argc - 1, argv + 1);
}
