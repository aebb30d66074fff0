/*
 * cmd_probe.c - `tessel probe`: takes a full hardware profile of this
 * machine (ISA, caches, cores, and the measured FMA peak, latency and read
 * bandwidths) and shows it, with the blocking the planner's model derives
 * for a default context, as text or as one JSON object. Benchmarks parse
 * the JSON (e.g. "fma_peak_gflops"), so its key names are a contract.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "cli.h"
#include "hw/hw.h"

static const char usage[] = "tessel probe [--json]";

static void print_help(void)
{
    printf("usage: %s\n\n"
           "Measures this machine (under 2 s) and prints its profile: CPU, ISA\n"
           "flags and the ISA in use (after TESSEL_ISA), vector width, caches,\n"
           "cores, clock, FMA peak per core, FMA latency and issue rate, read\n"
           "bandwidth per memory level, fingerprint; then the model's blocking\n"
           "(mr, nr, kc, nc) for a default context.\n\n"
           "  --json   print one JSON object instead of text\n",
           usage);
}

/* The ISA flags the CPU reports, in a fixed order, for both outputs. */
typedef struct isa_flag {
    const char *name;
    bool present;
} isa_flag;

enum { NFLAGS = 8 };

static void collect_flags(const hw_profile *p, isa_flag flags[NFLAGS])
{
    const isa_flag all[NFLAGS] = {
        {"avx2", p->has_avx2},         {"fma", p->has_fma},
        {"avx512f", p->has_avx512f},   {"avx512bw", p->has_avx512bw},
        {"avx512vl", p->has_avx512vl}, {"avx512bf16", p->has_avx512bf16},
        {"amx", p->has_amx},           {"neon", p->has_neon},
    };
    memcpy(flags, all, sizeof all);
}

/* 32768 -> "32 KiB": cache sizes are powers of two or close to it. */
static void format_bytes(int64_t bytes, char *buf, size_t len)
{
    if (bytes >= (1 << 20) && bytes % (1 << 20) == 0)
        snprintf(buf, len, "%lld MiB", (long long)(bytes >> 20));
    else if (bytes >= 1024 && bytes % 1024 == 0)
        snprintf(buf, len, "%lld KiB", (long long)(bytes >> 10));
    else
        snprintf(buf, len, "%lld B", (long long)bytes);
}

static const char *level_keys[HW_LEVEL_COUNT] = {"l1", "l2", "l3", "dram"};
static const char *level_names[HW_LEVEL_COUNT] = {"L1", "L2", "L3", "DRAM"};

static void print_text(const hw_profile *p, const plan_model *m, int threads)
{
    isa_flag flags[NFLAGS];
    collect_flags(p, flags);

    printf("cpu          %s\n", p->cpu_name);
    printf("arch         %s\n", p->arch);
    printf("isa flags   ");
    int any = 0;
    for (int i = 0; i < NFLAGS; i++)
        if (flags[i].present) {
            printf(" %s", flags[i].name);
            any = 1;
        }
    printf("%s\n", any ? "" : " (none)");
    printf("isa in use   %s (%d floats per vector, %d vector registers)\n",
           hw_isa_name(p->isa), p->vec_floats, p->vec_registers);
    printf("cores        %d\n", p->cores);
    for (int i = 0; i < p->ncaches; i++) {
        const hw_cache *c = &p->caches[i];
        char size[32], ways[24];
        format_bytes(c->size_bytes, size, sizeof size);
        if (c->ways > 0)
            snprintf(ways, sizeof ways, "%d-way", c->ways);
        else
            snprintf(ways, sizeof ways, "ways unknown");
        printf("%-12s L%d%c %8s, %s, %d B lines, shared by %d\n", i == 0 ? "caches" : "",
               c->level, c->type, size, ways, c->line_bytes, c->shared_by);
    }
    printf("frequency    %.2f GHz (estimated)\n", p->freq_ghz);
    printf("fma peak     %.1f GFLOP/s per core\n", p->fma_peak_gflops);
    printf("fma          latency %.1f cycles, %.2f FMAs/cycle, a broadcast adds %.2f cycles\n",
           p->fma_latency_cycles, p->fma_per_cycle, p->broadcast_cycles);
    printf("read bw     ");
    for (int l = 0; l < HW_LEVEL_COUNT; l++)
        printf(" %s %.1f%s", level_names[l], p->read_gbs[l],
               l + 1 < HW_LEVEL_COUNT ? "," : " GB/s (one core)\n");
    printf("fingerprint  %016llx\n", (unsigned long long)p->fingerprint);
    printf("model        mr %d, nr %d, kc %lld, nc %lld (%s, %d threads)\n", m->mr,
           m->nr, (long long)m->kc, (long long)m->nc, hw_isa_name(m->hw.isa),
           threads);
}

static void print_json(const hw_profile *p, const plan_model *m, int threads)
{
    isa_flag flags[NFLAGS];
    collect_flags(p, flags);

    printf("{\"cpu_name\": ");
    cli_json_string(stdout, p->cpu_name);
    printf(", \"arch\": ");
    cli_json_string(stdout, p->arch);
    printf(", \"isa_flags\": [");
    const char *sep = "";
    for (int i = 0; i < NFLAGS; i++)
        if (flags[i].present) {
            printf("%s\"%s\"", sep, flags[i].name);
            sep = ", ";
        }
    printf("], \"isa\": ");
    cli_json_string(stdout, hw_isa_name(p->isa));
    printf(", \"vec_floats\": %d, \"vec_registers\": %d, \"cores\": %d", p->vec_floats,
           p->vec_registers, p->cores);
    printf(", \"freq_ghz\": ");
    cli_json_number(stdout, p->freq_ghz);
    printf(", \"fma_peak_gflops\": ");
    cli_json_number(stdout, p->fma_peak_gflops);
    printf(", \"fma_latency_cycles\": ");
    cli_json_number(stdout, p->fma_latency_cycles);
    printf(", \"fma_per_cycle\": ");
    cli_json_number(stdout, p->fma_per_cycle);
    printf(", \"broadcast_cycles\": ");
    cli_json_number(stdout, p->broadcast_cycles);
    printf(", \"caches\": [");
    for (int i = 0; i < p->ncaches; i++) {
        const hw_cache *c = &p->caches[i];
        printf("%s{\"level\": %d, \"type\": \"%c\", \"size_bytes\": %lld, \"ways\": %d, "
               "\"line_bytes\": %d, \"shared_by\": %d}",
               i ? ", " : "", c->level, c->type, (long long)c->size_bytes, c->ways,
               c->line_bytes, c->shared_by);
    }
    printf("], \"read_gbs\": {");
    for (int l = 0; l < HW_LEVEL_COUNT; l++) {
        printf("%s\"%s\": ", l ? ", " : "", level_keys[l]);
        cli_json_number(stdout, p->read_gbs[l]);
    }
    /* A string: 64-bit integers lose precision in many JSON readers. */
    printf("}, \"fingerprint\": \"%016llx\"", (unsigned long long)p->fingerprint);
    printf(", \"model\": {\"isa\": \"%s\", \"threads\": %d, \"mr\": %d, \"nr\": %d, "
           "\"kc\": %lld, \"nc\": %lld}}\n",
           hw_isa_name(m->hw.isa), threads, m->mr, m->nr, (long long)m->kc,
           (long long)m->nc);
}

int cmd_probe(int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            print_help();
            return CLI_OK;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else {
            return cli_usage_error("probe", usage, "unexpected argument '%s'", argv[i]);
        }
    }

    hw_profile p;
    if (hw_probe(&p, true) != 0) {
        /* The profile still holds the best class; say why it is not the
         * one asked for rather than failing the whole probe. */
        const char *want = getenv("TESSEL_ISA");
        fprintf(stderr, "tessel probe: warning: TESSEL_ISA=%s is unknown or not available "
                "here; showing %s\n", want ? want : "", hw_isa_name(p.isa));
    }

    /* The model comes from a real context, so it is exactly what gemm
     * calls plan with (the context's profile is the quick default one). */
    tessel_ctx *ctx;
    int rc = cli_context(&ctx, 0, json);
    if (rc != CLI_OK)
        return rc;
    const plan_model *m = api_ctx_model(ctx);
    if (json)
        print_json(&p, m, tessel_ctx_threads(ctx));
    else
        print_text(&p, m, tessel_ctx_threads(ctx));
    tessel_ctx_destroy(ctx);
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAIL;
}
