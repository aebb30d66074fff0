/*
 * probe.c - what this machine is: ISA flags from cpuid/xgetbv (x86) or the
 * auxiliary vector (aarch64), the cache hierarchy from cpuid or sysfs, the
 * cores this process may use, the TESSEL_ISA restriction and the profile's
 * fingerprint. Also the process-wide default profile and the presets that
 * describe known machines for tests. Timing lives in measure.c.
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

#include "hw/hw.h"
#include "hw/measure.h"

/* ------------------------------------------------------------------ x86 */

#if defined(__x86_64__)

typedef struct cpuid_regs {
    uint32_t eax, ebx, ecx, edx;
} cpuid_regs;

static cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
    cpuid_regs r;
    __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
    return r;
}

/* XCR0 says which register state the OS saves on a context switch; a CPU
 * flag alone does not make ymm/zmm safe to use (Intel SDM vol. 1, 13.3). */
static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static bool bit(uint32_t reg, int n)
{
    return (reg >> n) & 1u;
}

/* Leaf 1 ECX: 12 FMA, 27 OSXSAVE, 28 AVX. Leaf 7.0 EBX: 5 AVX2, 16 AVX512F,
 * 17 AVX512DQ, 30 AVX512BW, 31 AVX512VL; EDX: 24 AMX-TILE. Leaf 7.1 EAX:
 * 5 AVX512_BF16. XCR0: 1-2 SSE/AVX state, 5-7 opmask/ZMM_Hi256/Hi16_ZMM,
 * 17-18 TILECFG/TILEDATA (Intel SDM vol. 2A, CPUID; vol. 1, 13.1).
 * Returns whether AVX512DQ is usable too, which the avx512 class is compiled
 * with but the profile has no field for. */
static bool probe_x86_flags(hw_profile *p)
{
    uint32_t max_leaf = cpuid(0, 0).eax;
    if (max_leaf < 1)
        return false;
    cpuid_regs l1 = cpuid(1, 0);
    bool osxsave = bit(l1.ecx, 27);
    uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    bool os_ymm = osxsave && (xcr0 & 0x6) == 0x6;
    bool os_zmm = os_ymm && (xcr0 & 0xe0) == 0xe0;
    bool os_tiles = osxsave && (xcr0 & 0x60000) == 0x60000;

    cpuid_regs l7 = {0, 0, 0, 0}, l7s1 = {0, 0, 0, 0};
    if (max_leaf >= 7) {
        l7 = cpuid(7, 0);
        if (l7.eax >= 1)
            l7s1 = cpuid(7, 1);
    }
    bool avx = bit(l1.ecx, 28) && os_ymm;
    p->has_fma = avx && bit(l1.ecx, 12);
    p->has_avx2 = avx && bit(l7.ebx, 5);
    p->has_avx512f = os_zmm && bit(l7.ebx, 16);
    p->has_avx512bw = p->has_avx512f && bit(l7.ebx, 30);
    p->has_avx512vl = p->has_avx512f && bit(l7.ebx, 31);
    p->has_avx512bf16 = p->has_avx512f && bit(l7s1.eax, 5);
    p->has_amx = os_tiles && bit(l7.edx, 24);
    return p->has_avx512f && bit(l7.ebx, 17);
}

static void probe_x86_name(hw_profile *p)
{
    if (cpuid(0x80000000u, 0).eax < 0x80000004u)
        return;
    char brand[49];
    for (uint32_t i = 0; i < 3; i++) {
        cpuid_regs r = cpuid(0x80000002u + i, 0);
        memcpy(brand + 16 * i + 0, &r.eax, 4);
        memcpy(brand + 16 * i + 4, &r.ebx, 4);
        memcpy(brand + 16 * i + 8, &r.ecx, 4);
        memcpy(brand + 16 * i + 12, &r.edx, 4);
    }
    brand[48] = '\0';
    const char *s = brand;
    while (*s == ' ')
        s++; /* some brand strings are right-aligned with leading blanks */
    if (*s)
        snprintf(p->cpu_name, sizeof p->cpu_name, "%s", s);
}

/* Deterministic cache parameters: Intel leaf 4 and AMD leaf 0x8000001D share
 * one layout. EAX[4:0] type (0 none, 1 data, 2 instruction, 3 unified),
 * EAX[7:5] level, EAX[25:14] logical CPUs sharing it minus 1; EBX[11:0] line
 * size, [21:12] partitions, [31:22] ways, each minus 1; ECX sets minus 1
 * (Intel SDM vol. 2A, CPUID leaf 04H; AMD APM vol. 3, Fn8000_001D). */
static void probe_x86_caches(hw_profile *p)
{
    cpuid_regs l0 = cpuid(0, 0);
    char vendor[13];
    memcpy(vendor + 0, &l0.ebx, 4);
    memcpy(vendor + 4, &l0.edx, 4);
    memcpy(vendor + 8, &l0.ecx, 4);
    vendor[12] = '\0';

    uint32_t leaf = 4;
    if (strcmp(vendor, "AuthenticAMD") == 0 || strcmp(vendor, "HygonGenuine") == 0) {
        /* AMD has leaf 0x8000001D only with the TOPOEXT flag (0x80000001 ECX 22). */
        if (cpuid(0x80000000u, 0).eax < 0x8000001Du || !bit(cpuid(0x80000001u, 0).ecx, 22))
            return;
        leaf = 0x8000001Du;
    } else if (l0.eax < 4) {
        return;
    }

    /* A bound on subleaves in case a hypervisor never reports "no more". */
    for (uint32_t i = 0; i < 16 && p->ncaches < HW_MAX_CACHES; i++) {
        cpuid_regs r = cpuid(leaf, i);
        uint32_t type = r.eax & 0x1f;
        if (type == 0)
            break;
        if (type > 3)
            continue;
        hw_cache *c = &p->caches[p->ncaches++];
        c->level = (int)((r.eax >> 5) & 0x7);
        c->type = type == 1 ? 'D' : type == 2 ? 'I' : 'U';
        c->line_bytes = (int)(r.ebx & 0xfff) + 1;
        int partitions = (int)((r.ebx >> 12) & 0x3ff) + 1;
        c->ways = (int)((r.ebx >> 22) & 0x3ff) + 1;
        int64_t sets = (int64_t)r.ecx + 1;
        c->size_bytes = (int64_t)c->ways * partitions * c->line_bytes * sets;
        c->shared_by = (int)((r.eax >> 14) & 0xfff) + 1;
    }
}

#endif /* __x86_64__ */

/* ---------------------------------------------------------------- sysfs */

/* Reads one line of a small text file into buf; false if it cannot. */
static bool read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

static long read_long(const char *dir, const char *name)
{
    char path[256], buf[64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (!read_line(path, buf, sizeof buf))
        return 0;
    return strtol(buf, NULL, 10);
}

/* Counts the CPUs of a list such as "0-3,8,10-11". */
static int count_cpu_list(const char *s)
{
    int n = 0;
    while (*s) {
        char *end;
        long lo = strtol(s, &end, 10);
        if (end == s)
            break;
        long hi = lo;
        s = end;
        if (*s == '-') {
            hi = strtol(s + 1, &end, 10);
            s = end;
        }
        if (hi >= lo)
            n += (int)(hi - lo + 1);
        if (*s != ',')
            break;
        s++;
    }
    return n;
}

/* Linux describes every cache of cpu0 in index0, index1, ... (see the
 * kernel's Documentation/ABI/testing/sysfs-devices-system-cpu). */
static void probe_sysfs_caches(hw_profile *p)
{
    for (int i = 0; i < 16 && p->ncaches < HW_MAX_CACHES; i++) {
        char dir[128], path[192], buf[256];
        snprintf(dir, sizeof dir, "/sys/devices/system/cpu/cpu0/cache/index%d", i);
        snprintf(path, sizeof path, "%s/type", dir);
        if (!read_line(path, buf, sizeof buf))
            break;
        char type = strcmp(buf, "Data") == 0          ? 'D'
                    : strcmp(buf, "Instruction") == 0 ? 'I'
                    : strcmp(buf, "Unified") == 0     ? 'U'
                                                      : 0;
        if (!type)
            continue;

        snprintf(path, sizeof path, "%s/size", dir);
        if (!read_line(path, buf, sizeof buf))
            continue;
        char *unit;
        int64_t size = strtoll(buf, &unit, 10);
        if (*unit == 'K')
            size <<= 10;
        else if (*unit == 'M')
            size <<= 20;
        else if (*unit == 'G')
            size <<= 30;

        hw_cache *c = &p->caches[p->ncaches];
        c->level = (int)read_long(dir, "level");
        c->type = type;
        c->size_bytes = size;
        c->ways = (int)read_long(dir, "ways_of_associativity");
        c->line_bytes = (int)read_long(dir, "coherency_line_size");
        snprintf(path, sizeof path, "%s/shared_cpu_list", dir);
        c->shared_by = read_line(path, buf, sizeof buf) ? count_cpu_list(buf) : 1;
        if (c->shared_by < 1)
            c->shared_by = 1;
        if (c->level > 0 && c->size_bytes > 0)
            p->ncaches++;
    }
}

/* ------------------------------------------------------------ the rest */

/* Without a cpuid brand string, the name is the "model name" line of
 * /proc/cpuinfo if the kernel gives one (aarch64 kernels usually do not). */
static void probe_cpuinfo_name(hw_profile *p)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        const char *v = strchr(line, ':');
        if (v) {
            v++;
            while (*v == ' ' || *v == '\t')
                v++;
            line[strcspn(line, "\n")] = '\0';
            if (*v)
                snprintf(p->cpu_name, sizeof p->cpu_name, "%s", v);
        }
        break;
    }
    fclose(f);
}

static int probe_cores(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static void set_isa(hw_profile *p, hw_isa isa)
{
    static const int floats[HW_ISA_COUNT] = {4, 8, 16};
#if defined(__aarch64__)
    static const int registers[HW_ISA_COUNT] = {32, 16, 32};
#else
    static const int registers[HW_ISA_COUNT] = {16, 16, 32};
#endif
    p->isa = isa;
    p->vec_floats = floats[isa];
    p->vec_registers = registers[isa];
}

/* FNV-1a, 64-bit (offset basis 14695981039346656037, prime 1099511628211). */
static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t fnv1a_int(uint64_t h, int64_t v)
{
    /* Fixed little-endian bytes, so the hash does not depend on padding or
     * on the width of the field that held the value. */
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)v >> (8 * i));
    return fnv1a(h, b, sizeof b);
}

static uint64_t fingerprint(const hw_profile *p)
{
    uint64_t h = 14695981039346656037ull;
    h = fnv1a(h, p->cpu_name, strlen(p->cpu_name) + 1);
    h = fnv1a(h, p->arch, strlen(p->arch) + 1);
    int flags = p->has_avx2 | p->has_fma << 1 | p->has_avx512f << 2 |
                p->has_avx512bw << 3 | p->has_avx512vl << 4 |
                p->has_avx512bf16 << 5 | p->has_amx << 6 | p->has_neon << 7;
    h = fnv1a_int(h, flags);
    /* The class in use: a profile measured under TESSEL_ISA=avx2 describes
     * different ukernels than one measured with AVX-512. */
    h = fnv1a_int(h, p->isa);
    h = fnv1a_int(h, p->ncaches);
    for (int i = 0; i < p->ncaches; i++) {
        const hw_cache *c = &p->caches[i];
        h = fnv1a_int(h, c->level);
        h = fnv1a_int(h, c->type);
        h = fnv1a_int(h, c->size_bytes);
        h = fnv1a_int(h, c->ways);
        h = fnv1a_int(h, c->line_bytes);
        h = fnv1a_int(h, c->shared_by);
    }
    return fnv1a_int(h, p->cores);
}

/* The defaults the model assumes when nothing was measured: a 4-cycle FMA
 * (or add, for generic) issued twice per cycle, fed by broadcasts that
 * take only a load port, true of most current x86-64 and Arm server
 * cores. */
static void set_analytic_defaults(hw_profile *p)
{
    p->fma_latency_cycles = 4;
    p->fma_per_cycle = 2;
    p->broadcast_cycles = 0;
}

int hw_probe(hw_profile *p, bool measure)
{
    memset(p, 0, sizeof *p);
    snprintf(p->cpu_name, sizeof p->cpu_name, "unknown");
    hw_isa best = HW_ISA_GENERIC;

#if defined(__x86_64__)
    snprintf(p->arch, sizeof p->arch, "x86_64");
    bool avx512dq = probe_x86_flags(p);
    probe_x86_name(p);
    probe_x86_caches(p);
    if (p->has_avx512f && p->has_avx512bw && p->has_avx512vl && avx512dq)
        best = HW_ISA_AVX512;
    else if (p->has_avx2 && p->has_fma)
        best = HW_ISA_AVX2;
#elif defined(__aarch64__)
    snprintf(p->arch, sizeof p->arch, "aarch64");
    /* AT_HWCAP bit 1 is HWCAP_ASIMD (Linux arch/arm64/include/uapi/asm/hwcap.h). */
    p->has_neon = (getauxval(AT_HWCAP) >> 1) & 1;
#else
    snprintf(p->arch, sizeof p->arch, "unknown");
#endif
    if (strcmp(p->cpu_name, "unknown") == 0)
        probe_cpuinfo_name(p);
    if (p->ncaches == 0)
        probe_sysfs_caches(p);
    p->cores = probe_cores();

    int rc = 0;
    hw_isa isa = best;
    const char *want = getenv("TESSEL_ISA");
    if (want && *want) {
        int w = hw_isa_parse(want);
        if (w < 0 || w > (int)best)
            rc = -1; /* unknown or beyond this CPU: keep the best class */
        else
            isa = (hw_isa)w;
    }
    set_isa(p, isa);
    p->fingerprint = fingerprint(p);

    set_analytic_defaults(p);
    if (measure)
        hw_measure(p, HW_MEASURE_ALL);
    return rc;
}

static hw_profile default_profile;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;

static void probe_default(void)
{
    /* A bad TESSEL_ISA still leaves the best class filled in, which is the
     * most useful default; the error reaches callers of hw_probe. */
    (void)hw_probe(&default_profile, false);
    hw_measure(&default_profile, HW_MEASURE_QUICK);
}

const hw_profile *hw_default_profile(void)
{
    pthread_once(&default_once, probe_default);
    return &default_profile;
}

const hw_cache *hw_data_cache(const hw_profile *p, int level)
{
    if (!p)
        return NULL;
    for (int i = 0; i < p->ncaches; i++) {
        const hw_cache *c = &p->caches[i];
        if (c->level == level && (c->type == 'D' || c->type == 'U'))
            return c;
    }
    return NULL;
}

const char *hw_isa_name(hw_isa isa)
{
    switch (isa) {
    case HW_ISA_GENERIC:
        return "generic";
    case HW_ISA_AVX2:
        return "avx2";
    case HW_ISA_AVX512:
        return "avx512";
    default:
        return "unknown";
    }
}

int hw_isa_parse(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < HW_ISA_COUNT; i++)
        if (strcmp(name, hw_isa_name((hw_isa)i)) == 0)
            return i;
    return -1;
}

static void add_cache(hw_profile *p, int level, char type, int64_t size, int ways,
                      int shared_by)
{
    hw_cache *c = &p->caches[p->ncaches++];
    c->level = level;
    c->type = type;
    c->size_bytes = size;
    c->ways = ways;
    c->line_bytes = 64;
    c->shared_by = shared_by;
}

/* The presets: machines the tests plan for without owning them. Cache
 * sizes in KiB; every level 64-byte lines, L1 and L2 private. */
typedef struct hw_preset {
    const char *name;
    hw_isa isa;
    int l1_kib, l1_ways, l2_kib, l2_ways, l3_kib, l3_ways, l3_shared_by;
    int cores;
    double fma_latency_cycles, fma_per_cycle, broadcast_cycles;
} hw_preset;

static const hw_preset PRESETS[] = {
    /* One Zen 4 CCD: 8 cores, 16 threads share its L3. One 512-bit FMA
     * per cycle (two 256-bit pipes), latency 4. */
    {"zen4", HW_ISA_AVX512, 32, 8, 1024, 8, 32 << 10, 16, 16, 16, 4, 1, 0},
    /* One Zen 3 CCD: 8 cores, 16 threads share its L3. Two 256-bit FMA
     * pipes, latency 4; a 512 KiB L2. */
    {"zen3", HW_ISA_AVX2, 32, 8, 512, 8, 32 << 10, 16, 16, 16, 4, 2, 0},
    /* One Zen 1 CCX (AMD EPYC family 23): 4 cores share 8 MiB of L3. One
     * 256-bit FMA per cycle (two 128-bit pipes), latency 5, and a 256-bit
     * broadcast from memory that takes a vector pipe too: the probe reads
     * 0.20-0.23 cycles a broadcast on a 2-vCPU guest of one. */
    {"zen1", HW_ISA_AVX2, 32, 8, 512, 8, 8 << 10, 16, 4, 4, 5, 1, 0.2},
    /* A client AVX2 core with 16 ymm registers (Haswell class): two FMA
     * pipes of latency 5, eight cores sharing the L3. */
    {"avx2-16", HW_ISA_AVX2, 32, 8, 256, 4, 8 << 10, 16, 8, 8, 5, 2, 0},
};

int hw_profile_preset(hw_profile *p, const char *name)
{
    memset(p, 0, sizeof *p);
    if (!name)
        return -1;
    const hw_preset *preset = NULL;
    for (size_t i = 0; i < sizeof PRESETS / sizeof PRESETS[0]; i++)
        if (strcmp(name, PRESETS[i].name) == 0)
            preset = &PRESETS[i];
    if (!preset)
        return -1;
    snprintf(p->arch, sizeof p->arch, "x86_64");
    snprintf(p->cpu_name, sizeof p->cpu_name, "preset %s", preset->name);
    p->has_avx2 = p->has_fma = true;
    if (preset->isa == HW_ISA_AVX512)
        p->has_avx512f = p->has_avx512bw = p->has_avx512vl = p->has_avx512bf16 = true;
    set_isa(p, preset->isa);
    add_cache(p, 1, 'D', (int64_t)preset->l1_kib << 10, preset->l1_ways, 1);
    add_cache(p, 2, 'U', (int64_t)preset->l2_kib << 10, preset->l2_ways, 1);
    add_cache(p, 3, 'U', (int64_t)preset->l3_kib << 10, preset->l3_ways, preset->l3_shared_by);
    p->cores = preset->cores;
    p->fma_latency_cycles = preset->fma_latency_cycles;
    p->fma_per_cycle = preset->fma_per_cycle;
    p->broadcast_cycles = preset->broadcast_cycles;
    p->fingerprint = fingerprint(p);
    return 0;
}
