/*
 * test_hw.c - the hardware model: the probe finds a sane cache hierarchy and
 * ISA flags that agree with the kernel's /proc/cpuinfo, TESSEL_ISA restricts
 * the class (and rejects what it cannot honour), the presets carry exactly
 * the documented numbers, fingerprints tell machines apart, and the quick
 * measurement of the default profile gives plausible numbers. The full
 * bandwidth measurement is left to `tessel` and the benchmarks: it takes
 * most of a second.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/hw.h"
#include "test.h"

static void check_probe_sanity(const hw_profile *p)
{
    CHECK(p->cpu_name[0] != '\0' && p->arch[0] != '\0', "cpu name '%s', arch '%s'",
          p->cpu_name, p->arch);
    CHECK(p->cores >= 1, "cores %d", p->cores);
    /* x86 caches come from cpuid. Elsewhere only sysfs describes them, and
     * some kernels (and qemu-user on a host without it) describe none: the
     * model then assumes default caches, so an empty list is sane there. */
#if defined(__x86_64__)
    bool caches_known = true;
#else
    bool caches_known = access("/sys/devices/system/cpu/cpu0/cache/index0/type", R_OK) == 0;
#endif
    CHECK(p->ncaches >= (caches_known ? 1 : 0) && p->ncaches <= HW_MAX_CACHES, "ncaches %d",
          p->ncaches);
    for (int i = 0; i < p->ncaches; i++) {
        const hw_cache *c = &p->caches[i];
        CHECK(c->line_bytes == 64, "cache %d: line %d", i, c->line_bytes);
        CHECK(c->level >= 1 && c->level <= 4, "cache %d: level %d", i, c->level);
        CHECK(c->type == 'D' || c->type == 'I' || c->type == 'U', "cache %d: type %d", i,
              c->type);
        CHECK(c->size_bytes >= 1024, "cache %d: size %lld", i, (long long)c->size_bytes);
        CHECK(c->ways >= 0 && c->shared_by >= 1, "cache %d: ways %d shared_by %d", i, c->ways,
              c->shared_by);
    }

    const hw_cache *l1 = hw_data_cache(p, 1), *l2 = hw_data_cache(p, 2), *l3 = hw_data_cache(p, 3);
    CHECK(l1 != NULL || !caches_known, "no L1 data cache");
    CHECK(l1 == NULL || l1->type != 'I', "hw_data_cache returned an instruction cache");
    if (l1 && l2)
        CHECK(l1->size_bytes <= l2->size_bytes, "L1 %lld > L2 %lld",
              (long long)l1->size_bytes, (long long)l2->size_bytes);
    if (l2 && l3)
        CHECK(l2->size_bytes <= l3->size_bytes, "L2 %lld > L3 %lld",
              (long long)l2->size_bytes, (long long)l3->size_bytes);
    CHECK(hw_data_cache(p, 9) == NULL, "a level-9 cache");
    CHECK(hw_data_cache(NULL, 1) == NULL, "a cache of no profile");

    static const int floats[HW_ISA_COUNT] = {4, 8, 16};
    CHECK(p->isa >= HW_ISA_GENERIC && p->isa < HW_ISA_COUNT, "isa %d", (int)p->isa);
    if (p->isa >= HW_ISA_GENERIC && p->isa < HW_ISA_COUNT)
        CHECK(p->vec_floats == floats[p->isa], "%s: vec_floats %d", hw_isa_name(p->isa),
              p->vec_floats);
    if (p->isa == HW_ISA_AVX512)
        CHECK(p->has_avx512f && p->has_avx512bw && p->has_avx512vl && p->vec_registers == 32,
              "avx512 class without its flags or 32 registers");
    if (p->isa == HW_ISA_AVX2)
        CHECK(p->has_avx2 && p->has_fma && p->vec_registers == 16,
              "avx2 class without its flags or 16 registers");
    CHECK(p->has_avx2 || !p->has_avx512f, "AVX-512 without AVX2");

    /* Without measuring: analytic latency and issue rate, nothing timed. */
    CHECK(p->fma_latency_cycles == 4 && p->fma_per_cycle == 2, "defaults %g, %g",
          p->fma_latency_cycles, p->fma_per_cycle);
    CHECK(p->freq_ghz == 0 && p->fma_peak_gflops == 0, "measured without measuring");
    for (int lv = 0; lv < HW_LEVEL_COUNT; lv++)
        CHECK(p->read_gbs[lv] == 0, "read_gbs[%d] %g without measuring", lv, p->read_gbs[lv]);
}

#if defined(__x86_64__)
/* Whether the first "flags" line of /proc/cpuinfo lists `flag`; -1 if the
 * file cannot be read. The kernel hides flags whose register state it does
 * not save, as the probe does, so the two must agree. */
static int cpuinfo_has(const char *flag)
{
    static char line[8192];
    static int loaded; /* 0 not yet, 1 read, -1 unreadable */
    if (!loaded) {
        loaded = -1;
        FILE *f = fopen("/proc/cpuinfo", "r");
        if (f) {
            while (fgets(line, sizeof line, f))
                if (strncmp(line, "flags", 5) == 0) {
                    loaded = 1;
                    break;
                }
            fclose(f);
        }
    }
    if (loaded < 0)
        return -1;
    size_t n = strlen(flag);
    for (const char *s = strchr(line, ':'); s && *s; s++) {
        if ((s[-1] == ' ' || s[-1] == ':') && strncmp(s, flag, n) == 0 &&
            (s[n] == ' ' || s[n] == '\n' || s[n] == '\0'))
            return 1;
    }
    return 0;
}

static void check_cpuinfo_flags(const hw_profile *p)
{
    const struct {
        const char *name;
        bool has;
    } flags[] = {
        {"avx2", p->has_avx2},
        {"fma", p->has_fma},
        {"avx512f", p->has_avx512f},
        {"avx512bw", p->has_avx512bw},
        {"avx512vl", p->has_avx512vl},
        {"avx512_bf16", p->has_avx512bf16},
        {"amx_tile", p->has_amx},
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        int k = cpuinfo_has(flags[i].name);
        if (k < 0)
            return; /* no /proc: nothing to compare with */
        CHECK(k == (int)flags[i].has, "%s: probe %d, /proc/cpuinfo %d", flags[i].name,
              (int)flags[i].has, k);
    }
    CHECK(!p->has_neon, "NEON on x86");
}
#elif defined(__aarch64__)
/* NEON (ASIMD) is mandatory in ARMv8-A Linux userspace, and no x86 flag
 * can appear. */
static void check_aarch64_flags(const hw_profile *p)
{
    CHECK(p->has_neon, "aarch64 without NEON (AT_HWCAP ASIMD)");
    CHECK(!p->has_avx2 && !p->has_fma && !p->has_avx512f && !p->has_amx,
          "x86 flags on aarch64");
    CHECK(strcmp(p->arch, "aarch64") == 0 && p->isa == HW_ISA_GENERIC &&
              p->vec_registers == 32,
          "aarch64: arch '%s', isa %s, %d registers", p->arch, hw_isa_name(p->isa),
          p->vec_registers);
}
#endif

/* TESSEL_ISA=`value`: the expected return and class given the best class. */
static void check_isa_env(const char *value, hw_isa best, const hw_profile *unrestricted)
{
    setenv("TESSEL_ISA", value, 1);
    hw_profile p;
    int rc = hw_probe(&p, false);
    int want = hw_isa_parse(value);
    if (want < 0 || want > (int)best) {
        CHECK(rc == -1, "TESSEL_ISA=%s on a %s CPU: rc %d", value, hw_isa_name(best), rc);
        CHECK(p.isa == best, "TESSEL_ISA=%s: isa %s, not the best %s", value,
              hw_isa_name(p.isa), hw_isa_name(best));
        CHECK(p.fingerprint == unrestricted->fingerprint, "TESSEL_ISA=%s: fingerprint changed",
              value);
    } else {
        CHECK(rc == 0, "TESSEL_ISA=%s: rc %d", value, rc);
        CHECK((int)p.isa == want, "TESSEL_ISA=%s: isa %s", value, hw_isa_name(p.isa));
        if (want != (int)best)
            CHECK(p.fingerprint != unrestricted->fingerprint,
                  "TESSEL_ISA=%s: same fingerprint as the unrestricted profile", value);
    }
    if (want == HW_ISA_AVX2 && rc == 0)
        CHECK(p.vec_floats == 8 && p.vec_registers == 16, "avx2: %d floats, %d registers",
              p.vec_floats, p.vec_registers);
    if (want == HW_ISA_GENERIC)
        CHECK(p.vec_floats == 4 && (p.vec_registers == 16 || p.vec_registers == 32),
              "generic: %d floats, %d registers", p.vec_floats, p.vec_registers);
    /* The restriction changes what tessel uses, never what the CPU has. */
    CHECK(p.has_avx2 == unrestricted->has_avx2 && p.has_avx512f == unrestricted->has_avx512f &&
              p.ncaches == unrestricted->ncaches && p.cores == unrestricted->cores,
          "TESSEL_ISA=%s changed the reported hardware", value);
}

static void check_cache(const hw_profile *p, int level, int64_t size, int ways)
{
    const hw_cache *c = hw_data_cache(p, level);
    CHECK(c != NULL, "%s: no L%d", p->cpu_name, level);
    if (!c)
        return;
    CHECK(c->size_bytes == size && c->ways == ways && c->line_bytes == 64,
          "%s L%d: %lld bytes %d-way line %d, want %lld %d-way line 64", p->cpu_name, level,
          (long long)c->size_bytes, c->ways, c->line_bytes, (long long)size, ways);
}

static void check_presets(const hw_profile *probed)
{
    hw_profile z, a, again;
    CHECK(hw_profile_preset(&z, "zen4") == 0, "zen4 preset");
    CHECK(z.isa == HW_ISA_AVX512 && z.vec_floats == 16 && z.vec_registers == 32,
          "zen4: %s, %d floats, %d registers", hw_isa_name(z.isa), z.vec_floats,
          z.vec_registers);
    check_cache(&z, 1, 32 << 10, 8);
    check_cache(&z, 2, 1 << 20, 8);
    check_cache(&z, 3, 32 << 20, 16);
    CHECK(hw_data_cache(&z, 3) && hw_data_cache(&z, 3)->shared_by == 16, "zen4 L3 sharing");
    CHECK(z.fma_latency_cycles == 4 && z.fma_per_cycle == 1, "zen4 FMA: latency %g, %g/cycle",
          z.fma_latency_cycles, z.fma_per_cycle);
    CHECK(z.freq_ghz == 0 && z.fma_peak_gflops == 0 && z.read_gbs[HW_LEVEL_DRAM] == 0,
          "zen4: measured fields set");
    CHECK(z.has_avx512f && z.has_avx512bw && z.has_avx512vl && z.has_avx2 && z.has_fma &&
              !z.has_amx,
          "zen4 flags");

    CHECK(hw_profile_preset(&a, "avx2-16") == 0, "avx2-16 preset");
    CHECK(a.isa == HW_ISA_AVX2 && a.vec_floats == 8 && a.vec_registers == 16,
          "avx2-16: %s, %d floats, %d registers", hw_isa_name(a.isa), a.vec_floats,
          a.vec_registers);
    check_cache(&a, 1, 32 << 10, 8);
    check_cache(&a, 2, 256 << 10, 4);
    check_cache(&a, 3, 8 << 20, 16);
    CHECK(a.fma_latency_cycles == 5 && a.fma_per_cycle == 2,
          "avx2-16 FMA: latency %g, %g/cycle", a.fma_latency_cycles, a.fma_per_cycle);
    CHECK(!a.has_avx512f && a.has_avx2 && a.has_fma, "avx2-16 flags");

    CHECK(hw_profile_preset(&again, "zen4") == 0 && again.fingerprint == z.fingerprint,
          "zen4 fingerprint not stable");
    CHECK(z.fingerprint != a.fingerprint, "zen4 and avx2-16 share a fingerprint");
    CHECK(probed->fingerprint != z.fingerprint && probed->fingerprint != a.fingerprint,
          "this machine has a preset's fingerprint");
    CHECK(hw_profile_preset(&again, "pentium") == -1, "unknown preset accepted");
    CHECK(hw_profile_preset(&again, NULL) == -1, "NULL preset accepted");
}

static void check_isa_names(void)
{
    for (int i = 0; i < HW_ISA_COUNT; i++)
        CHECK(hw_isa_parse(hw_isa_name((hw_isa)i)) == i, "isa %d does not round-trip", i);
    CHECK(hw_isa_parse("avx512") == HW_ISA_AVX512 && hw_isa_parse("avx2") == HW_ISA_AVX2 &&
              hw_isa_parse("generic") == HW_ISA_GENERIC,
          "isa names");
    CHECK(hw_isa_parse("sse") == -1 && hw_isa_parse("") == -1 && hw_isa_parse(NULL) == -1,
          "unknown isa names accepted");
}

static void check_default_profile(const hw_profile *probed)
{
    const hw_profile *d = hw_default_profile();
    CHECK(d != NULL && d == hw_default_profile(), "default profile not one object");
    if (!d)
        return;
    CHECK(d->fingerprint == probed->fingerprint, "default profile is another machine");
    /* The quick profile reads the L3 alone, where there is one past an L2. */
    for (int lv = 0; lv < HW_LEVEL_COUNT; lv++) {
        bool l3 = lv == HW_LEVEL_L3 && hw_data_cache(d, 2) && hw_data_cache(d, 3);
        CHECK(l3 ? d->read_gbs[lv] > 0 : d->read_gbs[lv] == 0,
              "quick profile: bandwidth of level %d %g GB/s", lv, d->read_gbs[lv]);
    }
    if (getenv("TESSEL_TEST_EMULATED")) {
        /* Set by `make test-arm`, which runs this suite in qemu-user: there
         * an FMA is a call into soft-float while integer steps run near
         * native speed, so the timings describe the emulator and only their
         * having been taken can be checked. */
        CHECK(d->freq_ghz > 0 && d->fma_peak_gflops > 0 && d->fma_latency_cycles > 0 &&
                  d->fma_per_cycle > 0,
              "emulated: frequency %g, peak %g, latency %g, %g per cycle", d->freq_ghz,
              d->fma_peak_gflops, d->fma_latency_cycles, d->fma_per_cycle);
        return;
    }
    /* Wide bounds: this must hold on a loaded CI runner too. */
    CHECK(d->freq_ghz > 0.3 && d->freq_ghz < 8, "frequency %g GHz", d->freq_ghz);
    CHECK(d->fma_peak_gflops > 1, "FMA peak %g GF/s", d->fma_peak_gflops);
    double bound = 2.0 * d->vec_floats * 4 * d->freq_ghz * 1.5;
    CHECK(d->fma_peak_gflops < bound, "FMA peak %g GF/s beyond 4 FMAs/cycle at %g GHz",
          d->fma_peak_gflops, d->freq_ghz);
    CHECK(d->fma_latency_cycles > 1 && d->fma_latency_cycles < 20, "FMA latency %g cycles",
          d->fma_latency_cycles);
    CHECK(d->fma_per_cycle > 0.1 && d->fma_per_cycle < 6, "%g FMAs per cycle",
          d->fma_per_cycle);
    CHECK(d->broadcast_cycles >= 0 && d->broadcast_cycles < 10, "a broadcast adds %g cycles",
          d->broadcast_cycles);
}

void suite_hw(void)
{
    /* The default profile first, under the environment the process was
     * started with, before this suite changes TESSEL_ISA. */
    hw_profile as_started;
    (void)hw_probe(&as_started, false);
    check_default_profile(&as_started);

    const char *env = getenv("TESSEL_ISA");
    char saved[64] = "";
    bool had_env = env != NULL;
    if (env)
        snprintf(saved, sizeof saved, "%s", env);
    unsetenv("TESSEL_ISA");

    hw_profile p, q;
    CHECK(hw_probe(&p, false) == 0, "probe failed without TESSEL_ISA");
    check_probe_sanity(&p);
#if defined(__x86_64__)
    check_cpuinfo_flags(&p);
#elif defined(__aarch64__)
    check_aarch64_flags(&p);
#endif
    CHECK(hw_probe(&q, false) == 0 && q.fingerprint == p.fingerprint,
          "fingerprint differs between two probes");

    check_isa_env("avx2", p.isa, &p);
    check_isa_env("generic", p.isa, &p);
    check_isa_env("avx512", p.isa, &p);
    check_isa_env("sse9", p.isa, &p);
    setenv("TESSEL_ISA", "", 1);
    CHECK(hw_probe(&q, false) == 0 && q.isa == p.isa, "empty TESSEL_ISA is not unset");

    if (had_env)
        setenv("TESSEL_ISA", saved, 1);
    else
        unsetenv("TESSEL_ISA");

    check_presets(&p);
    check_isa_names();
}
