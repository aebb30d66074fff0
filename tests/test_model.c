/*
 * test_model.c - the analytic model and the planner, checked against
 * numbers computed by hand from DESIGN's rules for two known machines, and
 * the planner's invariants (exact cover of M, optimal remainder cover,
 * balanced thread split) on every M up to 1000.
 */
#include <math.h>
#include <string.h>

#include "plan/candidates.h"
#include "plan/plan.h"
#include "plan/plan_rules.h"
#include "test.h"

/* Hand computation, zen4 preset (AVX-512: 16 floats, 32 registers; L1 32 KiB
 * 8-way 64 B lines = 64 sets; L2 1 MiB 8-way = 2048 sets, 131072 B a way;
 * L3 32 MiB 16-way shared by 16; FMA latency 4, 1 FMA per cycle):
 *  - rule 1: mr * nv >= 4; load ports: (mr + nv) <= 2 mr nv, all pass;
 *  - rule 2, most accumulators within mr nv + nv + 1 <= 32: 14 x 2 = 28
 *    (9 x 3 = 27, 6 x 4 = 24, 16 x 1 = 16). Winner 14 x 32.
 *  - rule 3: C_B = floor(7 / (1 + 14 / 32)) = 4; kc = 4 * 64 * 64 / (32 * 4) = 128;
 *    but a k step of 14 x 32 reads (14 + 32) * 4 = 184 bytes in 28 cycles
 *    of FMAs, 6.57 a cycle, at most the 7 the L2 feeds, so A fills the L1
 *    less a way: kc = 7 * 64 * 64 / (14 * 4) = 512 (with two FMA pipes,
 *    13.1 a cycle: 128);
 *  - rule 4: the A micro-panel 14 * 512 * 4 = 28672 B takes one L2 way, B
 *    gets 8 - 1 - 1 = 6: nc = 6 * 131072 / (512 * 4) = 384 (32 | 384);
 *    half a CPU's share of the L3 (32 MiB / 16 / 2 = 1 MiB) holds more:
 *    nc = 1048576 / (512 * 4) = 512;
 *  - A is packed tile by tile from 8 rows up. */
static void zen4_by_hand(void)
{
    hw_profile hw;
    CHECK(hw_profile_preset(&hw, "zen4") == 0, "zen4 preset exists");
    const hw_cache *l1 = hw_data_cache(&hw, 1);
    CHECK(model_l1_ways_for_b(8, 6, 64) == 6, "C_B for 6x64 on 8 ways");
    CHECK(model_l1_ways_for_b(8, 14, 32) == 4, "C_B for 14x32 on 8 ways");
    CHECK(model_l1_ways_for_b(12, 14, 32) == 7, "C_B for 14x32 on 12 ways");
    CHECK(model_kc(l1, 6, 64) == 96, "kc 6x64 = %lld", (long long)model_kc(l1, 6, 64));
    CHECK(model_kc(l1, 14, 32) == 128, "kc 14x32 = %lld", (long long)model_kc(l1, 14, 32));
    CHECK(fabs(model_panel_bytes_per_cycle(14, 32, 16, 1) - 184.0 / 28) < 1e-12 &&
              fabs(model_panel_bytes_per_cycle(6, 16, 8, 1) - 88.0 / 12) < 1e-12,
          "panel bytes a cycle: 14x32 one pipe 6.57, 6x16 (AVX2) one pipe 7.33");
    CHECK(model_tile_kc(l1, 14, 32, 16, 1) == 512, "14x32 one pipe: kc %lld",
          (long long)model_tile_kc(l1, 14, 32, 16, 1));
    CHECK(model_tile_kc(l1, 14, 32, 16, 2) == 128 && model_tile_kc(l1, 6, 16, 8, 1) == 320,
          "14x32 on two pipes, 6x16 on one: the L1 rule's kc");
    CHECK(model_registers(14, 2) == 31 && model_registers(9, 3) == 31, "register counts");
    CHECK(model_hides_latency(1, 4, 4, 1) && !model_hides_latency(1, 3, 4, 1), "latency rule");
    CHECK(model_fits_load_ports(6, 2, 2, 2) && !model_fits_load_ports(14, 1, 2, 2),
          "load-port rule: 6x2 fits two ports at 2 FMAs a cycle, 14x1 does not");
    CHECK(model_tile_cycles(9, 3, 4, 1, 2, 0) == 27.0, "9x3 tile: FMA-bound 27 cycles");
    CHECK(model_tile_cycles(1, 1, 4, 1, 2, 0) == 4.0, "1x1 tile: latency-bound 4 cycles");
    CHECK(fabs(model_tile_cycles(6, 2, 5, 1, 2, 0.25) - 13.5) < 1e-12,
          "6x2 tile, broadcasts a quarter cycle each: 12 + 1.5 cycles");

#if defined(__x86_64__)
    plan_model m;
    CHECK(plan_model_init(&m, &hw) == 0, "zen4 model builds");
    CHECK(m.mr == 14 && m.nv == 2 && m.nr == 32, "zen4 tile %dx%d", m.mr, m.nr);
    CHECK(m.kc == 512, "zen4 kc %lld", (long long)m.kc);
    CHECK(m.nc == 512, "zen4 nc %lld", (long long)m.nc);
    gemm_shape tall = {.M = 97, .N = 640, .K = 100};
    gemm_plan p;
    plan_gemm(&m, &tall, 1, &p);
    CHECK(p.pack_a, "97 rows of A are packed tile by tile");
    gemm_shape short_a = {.M = 4, .N = 640, .K = 100};
    gemm_shape narrow = {.M = 97, .N = 64, .K = 100};
    plan_gemm(&m, &short_a, 1, &p);
    CHECK(!p.pack_a, "4 rows of A are read in place");
    plan_gemm(&m, &narrow, 1, &p);
    CHECK(!p.pack_a, "rows of A used by 2 panels are read in place");
    /* A few rows reading B in place take the widest tile where one such
     * tile covers them (6 rows of 4 vectors here), wherever B's rows fall
     * in the L1 sets (768 or 3072 columns); not for more rows, not for
     * B^T (packed). */
    gemm_shape few = {.M = 2, .N = 768, .K = 768};
    plan_gemm_choice(&m, &few, 1, &(plan_choice){0}, &p);
    CHECK(p.nv == UK_MAX_NV && p.ntiles == 1 && !p.pack_b, "2x768x768: %d vectors wide",
          p.nv);
    few.N = 3072;
    plan_gemm_choice(&m, &few, 2, &(plan_choice){0}, &p);
    CHECK(p.nv == UK_MAX_NV, "2x3072x768: %d vectors wide", p.nv);
    few.N = 2304;
    plan_gemm_choice(&m, &few, 2, &(plan_choice){0}, &p);
    CHECK(p.nv == UK_MAX_NV, "2x2304x768: %d vectors wide", p.nv);
    few.M = m.bulk_mr[UK_MAX_NV];
    plan_gemm_choice(&m, &few, 2, &(plan_choice){0}, &p);
    CHECK(p.nv == UK_MAX_NV && p.ntiles == 1, "%lldx2304x768: %d vectors wide",
          (long long)few.M, p.nv);
    few.M++;
    plan_gemm_choice(&m, &few, 2, &(plan_choice){0}, &p);
    CHECK(p.nv == 3 && p.ntiles == 1, "%lldx2304x768: %d vectors wide", (long long)few.M,
          p.nv);
    few.M = 2;
    few.transb = true;
    plan_gemm_choice(&m, &few, 1, &(plan_choice){0}, &p);
    CHECK(p.nv == m.nv, "2x2304x768, B^T: %d vectors wide", p.nv);
    /* 7-9 rows, past the widest tile and within one 48-wide tile, take it
     * over a B whose rows crowd the L1 sets (3072 and 1024 floats apart),
     * and wherever that tile asks for B far ahead into L2 (any B a cache
     * keeps, 2304 or 768 floats apart too); not over B streamed from
     * memory whose rows do not crowd (16000 x 768: 16 wide on one thread,
     * the rule below, 32 on two). 10 rows, past one 48-wide tile, keep 32. */
    struct { int64_t M, N, K; int nv[2]; /* on 1, 2 threads */ } crowded_rows[] = {
        {7, 3072, 768, {3, 3}},  {9, 3072, 768, {3, 3}},   {8, 1024, 4096, {3, 3}},
        {7, 4096, 1024, {3, 3}}, {7, 2304, 768, {3, 3}},   {9, 768, 768, {3, 3}},
        {8, 768, 3072, {3, 3}},  {7, 16000, 768, {1, 2}}, {10, 3072, 768, {2, 2}}};
    for (size_t i = 0; i < sizeof crowded_rows / sizeof crowded_rows[0]; i++)
        for (int threads = 1; threads <= 2; threads++) {
            gemm_shape shape = {.M = crowded_rows[i].M, .N = crowded_rows[i].N,
                                .K = crowded_rows[i].K};
            plan_gemm_choice(&m, &shape, threads, &(plan_choice){0}, &p);
            CHECK(p.nv == crowded_rows[i].nv[threads - 1] && p.ntiles == 1,
                  "%lldx%lldx%lld, %d threads: %d vectors wide, %lld row tiles",
                  (long long)shape.M, (long long)shape.N, (long long)shape.K, threads, p.nv,
                  (long long)p.ntiles);
        }
    /* 17-18 rows, two row tiles of 32 wide or of 48, take 48 where its
     * tiles ask for B far ahead and the 32-wide ones do not (rows that do
     * not collide in the L1); over colliding rows (1024 or 3072 floats
     * apart) both do, and 32 stays. 19 rows, three tiles of 48, keep 32. */
    struct { int64_t M, N, K; int nv; } two_tiles[] = {
        {17, 768, 3072, 3}, {18, 2304, 768, 3}, {17, 768, 768, 3},
        {17, 3072, 768, 2}, {17, 1024, 4096, 2}, {19, 768, 768, 2}};
    for (size_t i = 0; i < sizeof two_tiles / sizeof two_tiles[0]; i++)
        for (int threads = 1; threads <= 2; threads++) {
            gemm_shape sh = {.M = two_tiles[i].M, .N = two_tiles[i].N, .K = two_tiles[i].K};
            plan_gemm_choice(&m, &sh, threads, &(plan_choice){0}, &p);
            CHECK(p.nv == two_tiles[i].nv && p.ntiles == 2,
                  "%lldx%lldx%lld, %d threads: %d vectors wide, %lld row tiles",
                  (long long)sh.M, (long long)sh.N, (long long)sh.K, threads, p.nv,
                  (long long)p.ntiles);
        }
    /* 5-8 rows (more than the 4 chains one FMA pipe keeps in flight, at
     * most twice that) over a shallow B whose rows spread over the L1
     * sets take the 16-wide tile on one thread where the one wider tile
     * that covers them would not ask for B far ahead: B streamed from
     * memory (16000 x 768; 5-6 rows of it take the row form). Not at 4 or
     * 9 rows, not on 2 threads, not for K 3072, rows 4 KiB apart (1024
     * columns), or B^T; over a B a cache keeps (2304 x 768) the wide tile
     * asks far ahead, and 5-8 rows take it, 64 wide to 6 rows, then 48. */
    for (int64_t rows = 4; rows <= 9; rows++)
        for (int threads = 1; threads <= 2; threads++) {
            gemm_shape sh = {.M = rows, .N = 16000, .K = 768};
            plan_gemm_choice(&m, &sh, threads, &(plan_choice){0}, &p);
            bool narrow = threads == 1 && rows >= 7 && rows <= 8;
            CHECK(p.row || (narrow == (p.nv == 1) && p.ntiles == 1),
                  "%lldx16000x768 on %d threads: %d vectors wide, %lld row tiles",
                  (long long)rows, threads, p.nv, (long long)p.ntiles);
            sh.N = 2304;
            plan_gemm_choice(&m, &sh, threads, &(plan_choice){0}, &p);
            int wide = rows <= m.bulk_mr[UK_MAX_NV] ? UK_MAX_NV : 3;
            CHECK(p.nv == wide && p.ntiles == 1,
                  "%lldx2304x768 on %d threads: %d vectors wide, %lld row tiles",
                  (long long)rows, threads, p.nv, (long long)p.ntiles);
        }
    gemm_shape not_narrow[] = {{.M = 5, .N = 768, .K = 3072},
                               {.M = 5, .N = 1024, .K = 768},
                               {.M = 5, .N = 768, .K = 768, .transb = true}};
    for (size_t i = 0; i < sizeof not_narrow / sizeof not_narrow[0]; i++) {
        plan_gemm_choice(&m, &not_narrow[i], 1, &(plan_choice){0}, &p);
        CHECK(p.nv != 1, "5x%lldx%lld%s: %d vectors wide", (long long)not_narrow[i].N,
              (long long)not_narrow[i].K, not_narrow[i].transb ? " NT" : "", p.nv);
    }
    /* 15-16 rows, one past the main tile: one 16-wide tile of 16 rows
     * covers them where the 32-wide family needs two tiles, each reading
     * B; 14 and 17 rows keep the main width, and so does B^T. With two
     * FMA pipes 16x16 overruns the load ports and the rule is off. */
    for (int64_t rows = m.mr - 1; rows <= m.bulk_mr[1] + 1; rows++)
        for (int t = 0; t < 2; t++) {
            gemm_shape sh = {.M = rows, .N = 3072, .K = 768, .transb = t == 1};
            plan_gemm_choice(&m, &sh, 2, &(plan_choice){0}, &p);
            bool narrow = !sh.transb && rows > m.mr && rows <= m.bulk_mr[1];
            CHECK(narrow ? p.nv == 1 && p.ntiles == 1 : p.nv == m.nv,
                  "%lldx3072x768%s: %d vectors wide, %lld row tiles", (long long)rows,
                  sh.transb ? " NT" : "", p.nv, (long long)p.ntiles);
        }
    /* Covers of equal cost take the one whose shortest tile is tallest:
     * 17 rows as 9 + 8 (34 cycles a k step), not 14 + 3 (also 34). */
    gemm_shape seventeen = {.M = 17, .N = 3072, .K = 768};
    plan_gemm_choice(&m, &seventeen, 1, &(plan_choice){0}, &p);
    int64_t row0, row1;
    int mr0 = 0, mr1 = 0;
    if (p.ntiles == 2) {
        plan_tile_rows(&p, 0, &row0, &mr0);
        plan_tile_rows(&p, 1, &row1, &mr1);
    }
    CHECK(p.nv == m.nv && p.ntiles == 2 && mr0 == 9 && mr1 == 8,
          "17x3072x768: %lld row tiles, %d + %d rows", (long long)p.ntiles, mr0, mr1);
    /* Up to 4 rows reading B in place from L3 leave rows 4 KiB (the L1's
     * way span) apart unprefetched; not 5 rows, B^T, nor a B of a third
     * of the L3 or more. (2-5 x 3072 x 768 take the row form now, below.) */
    const struct {
        int64_t M, N, K;
        bool transb;
        int64_t stride;
    } unprefetched[] = {
        {2, 2048, 768, false, 4096}, {4, 1024, 1024, false, 4096}, {5, 3072, 768, false, 0},
        {3, 3072, 768, true, 0},     {3, 3072, 1024, false, 0},
    };
    for (size_t i = 0; i < sizeof unprefetched / sizeof unprefetched[0]; i++) {
        gemm_shape sh = {.M = unprefetched[i].M, .N = unprefetched[i].N, .K = unprefetched[i].K,
                         .transb = unprefetched[i].transb};
        plan_gemm_choice(&m, &sh, 1, &(plan_choice){0}, &p);
        CHECK(p.b_unprefetched_stride == unprefetched[i].stride,
              "%lldx%lldx%lld%s: B unprefetched at a stride of %lld bytes, want %lld",
              (long long)sh.M, (long long)sh.N, (long long)sh.K, sh.transb ? " NT" : "",
              (long long)p.b_unprefetched_stride, (long long)unprefetched[i].stride);
    }
    /* B read in place: a tile whose k step takes 12 or more cycles of
     * FMAs, over a panel three lines wide or more or over rows that
     * collide in the L1, asks for B's rows 2048 cycles of its FMAs ahead
     * into L2 instead of near into L1; shorter steps (2x64) and a 32-wide
     * panel over rows that do not collide (12x32 over 768 columns) keep
     * the near prefetch, and B^T, which is packed, has neither. */
    const struct {
        int64_t M, N, K;
        int threads;
        bool transb;
        int64_t far_rows;
    } far[] = {
        {5, 768, 3072, 1, false, 2048 / 20}, {3, 2304, 768, 1, false, 2048 / 12},
        {16, 3072, 768, 1, false, 2048 / 16}, {2, 768, 768, 1, false, 0},
        {5, 768, 768, 1, false, 2048 / 20},   {7, 768, 768, 2, false, 2048 / 21},
        {12, 768, 768, 1, false, 0},          {12, 3072, 768, 2, false, 2048 / 24},
        {5, 768, 3072, 1, true, 0},
    };
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
        gemm_shape sh = {.M = far[i].M, .N = far[i].N, .K = far[i].K, .transb = far[i].transb};
        plan_gemm_choice(&m, &sh, far[i].threads, &(plan_choice){0}, &p);
        int64_t row;
        int mr;
        plan_tile_rows(&p, 0, &row, &mr);
        int64_t rows = plan_b_far_rows(&p, mr, sh.N * (int64_t)sizeof(float));
        CHECK(rows == far[i].far_rows && (rows == 0 || !p.pack_b),
              "%lldx%lldx%lld%s, %d threads, %dx%d tiles: B asked %lld rows ahead into L2, "
              "want %lld", (long long)sh.M, (long long)sh.N, (long long)sh.K,
              sh.transb ? " NT" : "", far[i].threads, mr, p.nr, (long long)rows,
              (long long)far[i].far_rows);
    }
    /* B the call packs into a kc x nc block that fits the L1 is not
     * prefetched: 81 x 81 B^T of K = 64 (a 24 KiB block); 200 x 200 (56
     * KiB) is, B read in place has no packed panels, and pre-packed
     * weights are prefetched whatever their size. */
    gemm_shape tokens = {.M = 81, .N = 81, .K = 64, .transb = true};
    plan_gemm_choice(&m, &tokens, 1, &(plan_choice){0}, &p);
    CHECK(p.pack_b && p.b_panels_in_l1, "81x81x64 NT: packed B in L1, not prefetched");
    tokens.M = tokens.N = 200;
    plan_gemm_choice(&m, &tokens, 1, &(plan_choice){0}, &p);
    CHECK(p.pack_b && !p.b_panels_in_l1, "200x200x64 NT: packed B prefetched");
    plan_gemm_choice(&m, &seventeen, 1, &(plan_choice){0}, &p);
    CHECK(!p.pack_b && !p.b_panels_in_l1, "17x3072x768: B in place, no packed panels");
    gemm_shape weights = {.M = 81, .N = 81, .K = 64, .prepacked_kc = 64};
    plan_gemm_choice(&m, &weights, 1, &(plan_choice){0}, &p);
    CHECK(p.pack_b && !p.b_panels_in_l1, "81x81x64 pre-packed: the caller's panels prefetched");
    /* One row times B takes the row form, its vectors of columns split
     * evenly over the threads; not with B^T (dot tiles), nor B packed. */
    gemm_shape one_row = {.M = 1, .N = 3072, .K = 768};
    gemm_shape split_row = {.M = 1, .N = 2048, .K = 768};
    plan_gemm_choice(&m, &split_row, 2, &(plan_choice){.split = 'N'}, &p);
    CHECK(p.row && !p.dot && p.split == 'N' && p.threads == 2 && p.nr == m.vec &&
              p.bounds[1] == 64 && p.bounds[2] == 128,
          "1x2048x768 at 2 threads: row form %d, %d threads, columns to %lld and %lld",
          p.row, p.threads, (long long)p.bounds[1] * p.nr, (long long)p.bounds[2] * p.nr);
    /* The row form streams B where each thread's columns of it outgrow
     * the L2 (1 MiB on this preset), and reads blocks of its rows where
     * they fit. */
    CHECK(p.b_from_memory, "1x2048x768 at 2 threads: 3 MiB of B a thread, streamed");
    /* By the rules, B of an L2 or more: the threads split K instead, each
     * the row form over its rows of B. */
    plan_gemm_choice(&m, &one_row, 2, &(plan_choice){0}, &p);
    CHECK(p.row && p.split == 'K' && p.threads == 2 && p.bounds[1] == 384 && p.bounds[2] == 768,
          "1x3072x768 at 2 threads: row form %d, split %c, rows of B to %lld and %lld", p.row,
          p.split, (long long)p.bounds[1], (long long)p.bounds[2]);
    gemm_shape l2_row = {.M = 1, .N = 512, .K = 512}; /* 1 MiB */
    plan_gemm_choice(&m, &l2_row, 2, &(plan_choice){0}, &p);
    CHECK(p.split == 'K', "1x512x512 at 2 threads: split %c", p.split);
    l2_row.N = 256;
    plan_gemm_choice(&m, &l2_row, 2, &(plan_choice){0}, &p);
    CHECK(p.split == 'N', "1x256x512 at 2 threads: split %c", p.split);
    gemm_shape small_row = {.M = 1, .N = 256, .K = 768};
    plan_gemm_choice(&m, &small_row, 1, &(plan_choice){0}, &p);
    CHECK(p.row && !p.b_from_memory, "1x256x768: 768 KiB of B, read in blocks");
    small_row.N = 512;
    plan_gemm_choice(&m, &small_row, 2, &(plan_choice){0}, &p);
    CHECK(p.row && !p.b_from_memory, "1x512x768 at 2 threads: 768 KiB a thread, in blocks");
    plan_gemm_choice(&m, &small_row, 1, &(plan_choice){0}, &p);
    CHECK(p.row && p.b_from_memory, "1x512x768 at 1 thread: 1.5 MiB of B, streamed");
    gemm_shape head_row = {.M = 1, .N = 50257, .K = 768};
    plan_gemm_choice(&m, &head_row, 1, &(plan_choice){0}, &p);
    CHECK(p.row && p.b_from_memory, "1x50257x768: the row form, B streaming from memory");
    one_row.transb = true;
    plan_gemm_choice(&m, &one_row, 1, &(plan_choice){0}, &p);
    CHECK(!p.row && p.dot, "1x3072x768 NT: dot tiles, not the row form");
    /* Fewer rows than the dot tile's: the best member of that height
     * (zen4: 4x5; 3x7, 2x8 and 1x8 below it), not the tile's remainder. */
    for (int rows = 1; rows <= 4; rows++) {
        static const int nj_for[5] = {0, 8, 8, 7, 5};
        gemm_shape decode = {.M = rows, .N = 4096, .K = 4096, .transb = true};
        plan_gemm_choice(&m, &decode, 1, &(plan_choice){0}, &p);
        CHECK(p.dot && p.dot_mr == rows && p.dot_nj == nj_for[rows],
              "%dx4096x4096 NT: dot tile %dx%d, want %dx%d", rows, p.dot_mr, p.dot_nj, rows,
              nj_for[rows]);
    }
    one_row.transb = false;
    one_row.prepacked_kc = m.kc;
    plan_gemm_choice(&m, &one_row, 2, &(plan_choice){0}, &p);
    CHECK(p.row && p.nr == m.nr && p.kc == m.kc && !p.b_from_memory && p.threads == 2,
          "1x3072x768 with B pre-packed: the row form across its panels, split in them "
          "(row %d, nr %d, kc %lld, from memory %d, threads %d)",
          p.row, p.nr, (long long)p.kc, p.b_from_memory, p.threads);
    /* Up to 6 rows too, each row's share of the 16 accumulators (8 at 2
     * rows, 2 at 6) hiding the latency of one pipe (4 chains); 7 rows
     * take tiles. */
    for (int rows = 2; rows <= 7; rows++) {
        one_row.M = rows;
        plan_gemm_choice(&m, &one_row, 1, &(plan_choice){0}, &p);
        CHECK(p.row == (rows <= 6), "%dx3072x768 with B pre-packed: row form %d", rows, p.row);
    }
    /* Rows of B a multiple of 2 KiB apart (half a 4 KiB L1 way: they
     * crowd one or two L1 sets) in a B of more than a quarter of the 32
     * MiB L3: the streaming row form up to 3 rows at 1 thread. Not at 4
     * rows, nor rows 9 KiB apart (2304), nor a B of 4 MiB (1024 x 1024);
     * at 2 threads the split along K leaves each thread 4.5 MiB of B, and
     * tiles. */
    struct { int64_t M, N, K; int threads; bool row; } crowded[] = {
        {2, 3072, 768, 1, true},  {3, 3072, 768, 1, true},   {4, 3072, 768, 1, false},
        {5, 4096, 1024, 1, false},
        {3, 1024, 4096, 1, true}, {3, 2304, 768, 1, false},  {3, 1024, 1024, 1, false},
        {3, 3072, 768, 2, false},
    };
    for (size_t i = 0; i < sizeof crowded / sizeof crowded[0]; i++) {
        gemm_shape s = {.M = crowded[i].M, .N = crowded[i].N, .K = crowded[i].K};
        plan_gemm_choice(&m, &s, crowded[i].threads, &(plan_choice){0}, &p);
        CHECK(p.row == crowded[i].row && (!p.row || p.b_from_memory),
              "%lldx%lldx%lld at %d threads: row form %d, streaming %d", (long long)s.M,
              (long long)s.N, (long long)s.K, crowded[i].threads, p.row, p.b_from_memory);
        const char *why = plan_row_form_reason(&m, &s, 1);
        CHECK(crowded[i].threads > 1 || (why != NULL) == p.row,
              "%lldx%lldx%lld: reason \"%s\" for row form %d", (long long)s.M, (long long)s.N,
              (long long)s.K, why ? why : "(none)", p.row);
    }
    gemm_shape crowding = {.M = 3, .N = 3072, .K = 768};
    const char *why = plan_row_form_reason(&m, &crowding, 1);
    CHECK(why && strstr(why, "L1 sets"), "3x3072x768: the row form's reason names the L1 sets");
    /* B is packed past a few row tiles. Where the L2 feeds the tile at
     * its pace (one FMA pipe: 6.6 bytes a cycle) from 11 tiles (141 rows
     * of 14) at 1 thread and 38 (519 rows) at more, whatever B's shape;
     * with two FMA pipes (13.1 bytes a cycle), at any thread count, deep
     * or square B from 5 tiles (57 rows), B wider than deep or whose rows
     * collide in the L1 (4 KiB apart, 1024 floats) from 3 tiles (29
     * rows); rows 3 KiB apart (768 floats) do not collide. */
    hw_profile two_pipes = hw;
    two_pipes.fma_per_cycle = 2.0;
    plan_model m2;
    CHECK(plan_model_init(&m2, &two_pipes) == 0 && !m2.l2_feeds_tile && m.l2_feeds_tile &&
              m2.mr == 14 && m2.nv == 2,
          "zen4 with two FMA pipes: 14x32, not fed at its pace from the L2");
    gemm_shape deep_b = {.M = 600, .N = 768, .K = 768};
    for (int t = 1; t <= 2; t++) {
        plan_gemm_choice(&m, &deep_b, t, &(plan_choice){0}, &p);
        CHECK(p.pack_b, "600x768x768 at %d thread(s): B packed", t);
    }
    /* threads 0: at 1 and at 2 alike. */
    struct { const plan_model *model; int threads; int64_t M, N, K; bool packed; } reads[] = {
        {&m2, 0, 56, 768, 768, false},  {&m2, 0, 57, 768, 768, true},
        {&m2, 0, 40, 768, 3072, false}, {&m2, 0, 28, 3072, 768, false},
        {&m2, 0, 29, 3072, 768, true},  {&m2, 0, 28, 1024, 1024, false},
        {&m2, 0, 29, 1024, 1024, true}, {&m2, 0, 40, 1024, 4096, true},
        {&m2, 0, 100, 768, 3072, true}, {&m, 0, 140, 768, 768, false},
        {&m, 1, 141, 768, 768, true},   {&m, 0, 140, 3072, 768, false},
        {&m, 1, 141, 3072, 768, true},  {&m, 0, 140, 1024, 1024, false},
        {&m, 0, 100, 768, 3072, false}, {&m, 1, 141, 1024, 4096, true},
        {&m, 2, 518, 768, 768, false},  {&m, 2, 519, 768, 768, true},
        {&m, 2, 512, 3072, 768, false}, {&m, 2, 519, 1024, 4096, true}};
    for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
        for (int t = 1; t <= 2; t++) {
            if (reads[i].threads && reads[i].threads != t)
                continue;
            gemm_shape sh = {.M = reads[i].M, .N = reads[i].N, .K = reads[i].K};
            plan_gemm_choice(reads[i].model, &sh, t, &(plan_choice){0}, &p);
            CHECK(p.pack_b == reads[i].packed, "%s pipe(s), %lldx%lldx%lld at %d thread(s): B %s",
                  reads[i].model == &m ? "one" : "two", (long long)sh.M, (long long)sh.N,
                  (long long)sh.K, t, p.pack_b ? "packed" : "in place");
        }
    gemm_shape wide_b = {.M = 512, .N = 3072, .K = 768};
    plan_gemm_choice(&m, &wide_b, 1, &(plan_choice){0}, &p);
    CHECK(p.pack_b, "512x3072x768 at 1 thread: B packed");
    wide_b.M = 1296;
    plan_gemm_choice(&m, &wide_b, 2, &(plan_choice){0}, &p);
    CHECK(p.pack_b, "1296x3072x768 at 2 threads: B packed");
    /* With two pipes the 16-wide tile is off; rows that one tile of a
     * wider width covers take the widest (7-9 rows 48 wide), and rows
     * that take two tiles of the main width and two of a wider one take
     * the wider: 15-18 rows 48 wide (9 rows a tile); not 10-14 (one tile
     * of 32 against two of 48) nor 19 (three of 48). */
    for (int64_t rows = 7; rows <= 19; rows++) {
        gemm_shape sh = {.M = rows, .N = 3072, .K = 768};
        plan_gemm_choice(&m2, &sh, 1, &(plan_choice){0}, &p);
        bool wide = rows <= 9 || (rows >= 15 && rows <= 18);
        int64_t tiles = rows <= 9 ? 1 : rows <= 14 ? 1 : 2;
        CHECK(p.nv == (wide ? 3 : m2.nv) && p.ntiles == tiles,
              "%lldx3072x768 with two FMA pipes: %d vectors wide, %lld row tiles",
              (long long)rows, p.nv, (long long)p.ntiles);
    }
    gemm_shape sixteen_t = {.M = 16, .N = 3072, .K = 768, .transb = true};
    plan_gemm_choice(&m2, &sixteen_t, 1, &(plan_choice){0}, &p);
    CHECK(p.nv == m2.nv, "16x3072x768 NT with two FMA pipes: %d vectors wide", p.nv);
    /* B packed by a block's first tile as it reads it: with few row tiles
     * the block fills at most half the L2 (its source passes the L2 too);
     * with many it takes the model's nc. */
    for (int64_t rows = 64; rows <= 1024; rows *= 16) {
        gemm_shape sh = {.M = rows, .N = 4096, .K = 1024};
        plan_gemm_choice(&m, &sh, 1, &(plan_choice){.pack_b = PLAN_B_PACKED}, &p);
        double block = (double)(p.kc * p.nc) * sizeof(float);
        bool half = block <= m.l2_bytes / 2;
        CHECK(p.pack_b && half == (rows == 64) && p.nc_half_l2 == half,
              "%lldx4096x1024, B packed: a %.0f KiB block of B in a %lld KiB L2%s",
              (long long)rows, block / 1024, (long long)m.l2_bytes / 1024,
              p.nc_half_l2 ? " (capped)" : "");
    }
    /* B of short rows (64 or 128 columns: attention's P V) is read in
     * place by the widest tile, whatever M (5-8 rows too, which over
     * wider B go 16 wide on one thread), and a calibrated planner may
     * neither pack it nor narrow it; not for B^T, nor for rows a
     * kilobyte long. Its rows are prefetched 8 ahead (4 lines each) where
     * prefetched at all (ops/gemm_blocks.c), a 32-wide tile's 16 (2 lines). */
    gemm_shape pv_shape = {.M = 128, .N = UK_MAX_NV * m.vec, .K = 128};
    for (int64_t n = pv_shape.N; n <= 2 * UK_MAX_NV * m.vec; n += pv_shape.N)
        for (int64_t rows = 5; rows <= 512; rows = rows < 8 ? rows + 1 : rows * 3) {
            gemm_shape sh = {.M = rows, .N = n, .K = rows};
            plan_gemm_choice(&m, &sh, 1, &(plan_choice){0}, &p);
            CHECK(p.nv == UK_MAX_NV && !p.pack_b && p.b_prefetch == 8,
                  "%lldx%lldx%lld: %d vectors wide, B %s, prefetch %d rows", (long long)rows,
                  (long long)n, (long long)rows, p.nv, p.pack_b ? "packed" : "in place",
                  p.b_prefetch);
            CHECK(!plan_variant_admissible(&m, &p, &(plan_choice){.pack_b = PLAN_B_PACKED}) &&
                      !plan_variant_admissible(&m, &p, &(plan_choice){.nv = m.nv}),
                  "%lldx%lldx%lld: no packed or narrower variant", (long long)rows,
                  (long long)n, (long long)rows);
        }
    plan_gemm_choice(&m, &(gemm_shape){.M = 128, .N = 256, .K = 256}, 1, &(plan_choice){0}, &p);
    CHECK(p.nv == m.nv, "128x256x256 (rows of a kilobyte): %d vectors wide", p.nv);
    pv_shape.transb = true;
    plan_gemm_choice(&m, &pv_shape, 1, &(plan_choice){0}, &p);
    CHECK(p.nv != UK_MAX_NV || p.pack_b, "B^T of 64 columns is not read in place 64 wide");
    plan_gemm_choice(&m, &(gemm_shape){.M = 64, .N = 768, .K = 768}, 1,
                     &(plan_choice){.pack_b = PLAN_B_IN_PLACE}, &p);
    CHECK(p.nv == m.nv && p.b_prefetch == 16, "32 wide in place: prefetch %d rows",
          p.b_prefetch);
    /* B^T takes the dot tiles while their lane sums cost less than the
     * copy of B and the lanes a panel wastes (plan_dot.c,
     * dot_beats_panels): 4 or 16 rows over K = 768, 4 or 8 rows over 64;
     * attention's 17 or 24 tokens over 17 columns, which take two vectors
     * a panel; not 16 rows over 64 columns, nor 17 or 32 tokens over as
     * many full vectors of columns; narrower than a vector, always. */
    struct { int64_t M, N, K; bool dot; } dots[] = {
        {4, 768, 768, true}, {16, 768, 768, true}, {4, 64, 64, true},   {8, 64, 64, true},
        {16, 64, 64, false}, {17, 64, 64, false},  {32, 32, 64, false}, {17, 17, 64, true},
        {24, 17, 64, true},  {16, 5, 64, true}};
    for (size_t i = 0; i < sizeof dots / sizeof dots[0]; i++) {
        gemm_shape nt = {.M = dots[i].M, .N = dots[i].N, .K = dots[i].K, .transb = true};
        plan_gemm_choice(&m, &nt, 1, &(plan_choice){0}, &p);
        CHECK(p.dot == dots[i].dot, "%lldx%lldx%lld NT: %s", (long long)nt.M, (long long)nt.N,
              (long long)nt.K, p.dot ? "dot tiles" : "B^T packed");
    }
    /* One row over B^T past half the L1, of short rows (a query token
     * against a key cache), asks for the rows of the tiles two on
     * (plan_dot.c, dot_prefetches_ahead); not two rows, not a B^T the L1
     * holds, not rows so long that the lines would wait 256 KiB. */
    struct { int64_t M, N, K; bool ahead; } aheads[] = {
        {1, 512, 64, true}, {1, 300, 128, true}, {2, 512, 64, false},
        {1, 64, 64, false}, {1, 4096, 4096, false}};
    for (size_t i = 0; i < sizeof aheads / sizeof aheads[0]; i++) {
        gemm_shape nt = {.M = aheads[i].M, .N = aheads[i].N, .K = aheads[i].K, .transb = true};
        plan_gemm_choice(&m, &nt, 1, &(plan_choice){0}, &p);
        CHECK(p.dot && (p.b_prefetch == 2 * p.dot_nj) == aheads[i].ahead &&
                  (aheads[i].ahead || p.b_prefetch == 0),
              "%lldx%lldx%lld NT: dot %d, rows of B^T ahead %d", (long long)nt.M,
              (long long)nt.N, (long long)nt.K, p.dot, p.b_prefetch);
    }
    /* Dot tile: 32 registers allow mr * nj + mr + nj <= 32; rule 1 wants
     * mr * nj >= 4; FMAs per load mr nj / (mr + nj) peaks at 4 x 5 (2.22). */
    CHECK(m.dot_mr == 4 && m.dot_nj == 5, "zen4 dot tile %dx%d", m.dot_mr, m.dot_nj);
    /* 128 rows are 10 row tiles (5 x 14 + 3 x 12 + 2 x 11), 768 columns 24 panels. On
     * 2 threads with B in place, tiles claimed k block by block end at
     * most a sixth of a tile apart (kc 128 of K 768): the split is along
     * M, each thread packing only its own rows of A. Charged a whole
     * tile, as a run sharing packed B is, it went along N. */
    gemm_shape layer = {.M = 128, .N = 768, .K = 768};
    plan_gemm_choice(&m, &layer, 2, &(plan_choice){.pack_b = PLAN_B_IN_PLACE}, &p);
    CHECK(p.split == 'M' && p.threads == 2, "128x768x768, B in place: split %c", p.split);
    /* With fewer rows B weighs more: along M each thread fetches all of
     * B in place (2.4 MB, past this L2), along N only its half, so 64
     * rows (5 tiles) go along N, as do 40 (3 tiles), which would also be
     * charged the half k block a thread may wait. */
    gemm_shape fewer = {.M = 64, .N = 768, .K = 768};
    plan_gemm_choice(&m, &fewer, 2, &(plan_choice){.pack_b = PLAN_B_IN_PLACE}, &p);
    CHECK(p.split == 'N' && p.ntiles == 5, "64x768x768, B in place: split %c", p.split);
    fewer.M = 40;
    plan_gemm_choice(&m, &fewer, 2, &(plan_choice){.pack_b = PLAN_B_IN_PLACE}, &p);
    CHECK(p.split == 'N' && p.ntiles == 3, "40x768x768, B in place: split %c", p.split);
    layer.prepacked_kc = m.kc; /* likewise with B packed before the call */
    plan_gemm(&m, &layer, 2, &p);
    CHECK(p.split == 'M' && p.threads == 2, "128x768x768, B pre-packed: split %c", p.split);

    /* The rules count whole FMA pipes: a probe that read 1.88 FMAs a
     * cycle still rejects 16x16 (8.5 load cycles a k step, 8 of FMAs). */
    hw_profile slow_probe = hw;
    slow_probe.fma_per_cycle = 1.88;
    plan_model slow;
    CHECK(plan_model_init(&slow, &slow_probe) == 0, "model of a slow probe builds");
    CHECK(model_tile_verdict(&slow, 16, 1).failed == TILE_RULE_LOAD_PORTS &&
              model_tile_verdict(&slow, 14, 2).failed == TILE_RULE_PASSES,
          "1.88 FMAs a cycle: 16x16 fails the load ports, 14x32 passes");

    /* B read in place within a third of the L3 runs as one block, K and N
     * whole (plan_gemm.c, WHOLE_B_L3_PARTS), but not a B of 16 MiB; where
     * a split along M gives the threads unequal counts of row tiles, N is
     * cut in a block a thread (split_lone_block). */
    gemm_shape ffn = {.M = 64, .N = 768, .K = 3072}; /* B 9 MiB of 32 */
    plan_gemm(&m, &ffn, 1, &p);
    CHECK(!p.pack_b && p.b_one_block && p.kc == 3072 && p.nc == 768 && !p.nc_half_l2,
          "64x768x3072: one block, kc %lld, nc %lld", (long long)p.kc, (long long)p.nc);
    plan_gemm_choice(&m, &ffn, 2, &(plan_choice){.split = 'M'}, &p);
    CHECK(p.split == 'M' && p.ntiles == 5 && p.b_one_block && p.kc == 3072 && p.nc == 384,
          "64x768x3072 along M on 2 threads, %lld tiles: kc %lld, nc %lld", (long long)p.ntiles,
          (long long)p.kc, (long long)p.nc);
    ffn.M = 4 * m.mr;
    plan_gemm_choice(&m, &ffn, 2, &(plan_choice){.split = 'M'}, &p);
    CHECK(p.split == 'M' && p.ntiles == 4 && p.b_one_block && p.kc == 3072 && p.nc == 768,
          "%lldx768x3072 along M on 2 threads: one block", (long long)ffn.M);
    /* B in panels runs k blocks of twice the kc (512 here), K whole up to
     * 1.5 times that, else evened out: pre-packed handles (plan_kc) and B
     * packed by the call alike. */
    CHECK(plan_kc(&m, 1536) == 1536 && plan_kc(&m, 1537) == 769 && plan_kc(&m, 3072) == 1024 &&
              plan_kc(&m, 768) == 768,
          "plan_kc 1536, 1537, 3072, 768: %lld, %lld, %lld, %lld", (long long)plan_kc(&m, 1536),
          (long long)plan_kc(&m, 1537), (long long)plan_kc(&m, 3072), (long long)plan_kc(&m, 768));
    gemm_shape packed_layer = {.M = 512, .N = 768, .K = 768};
    plan_gemm(&m, &packed_layer, 1, &p);
    CHECK(p.pack_b && p.kc == 768, "512x768x768 packs B, kc %lld", (long long)p.kc);
    /* The deeper block keeps the bytes the L3 rule gives B's block: nc
     * sized again for the kc, not the rules' nc for a kc half as deep. */
    gemm_shape deep_block = {.M = 384, .N = 4096, .K = 1024};
    plan_gemm(&m, &deep_block, 1, &p);
    CHECK(p.pack_b && p.kc == 1024 && p.kc * p.nc * 4 <= (int64_t)8 << 20,
          "384x4096x1024: kc %lld, nc %lld", (long long)p.kc, (long long)p.nc);
    gemm_shape large = {.M = 64, .N = 1024, .K = 4096}; /* 16 MiB */
    plan_gemm(&m, &large, 1, &p);
    CHECK(!p.pack_b && !p.b_one_block && p.kc < 4096, "64x1024x4096: kc %lld",
          (long long)p.kc);

    /* The rules below size B's blocks by the L2, where the L3 does not
     * keep B (unknown here, as a probe may leave it). */
    hw_profile no_l3 = hw;
    no_l3.ncaches = 0;
    for (int i = 0; i < hw.ncaches; i++)
        if (hw.caches[i].level < 3)
            no_l3.caches[no_l3.ncaches++] = hw.caches[i];
    plan_model l2m;
    CHECK(plan_model_init(&l2m, &no_l3) == 0 && hw_data_cache(&l2m.hw, 3) == NULL,
          "zen4 model without its L3 builds");

    /* One row tile (of more than one row: one row takes the row form):
     * K whole (kc 384 otherwise, 512 evened over 768) up to 768 rows,
     * while the tile's A rows fit half the L1 (16 KiB), wherever B is. */
    gemm_shape one_tile = {.M = 2, .N = 192, .K = 768}; /* B 576 KiB */
    plan_gemm(&l2m, &one_tile, 1, &p);
    CHECK(p.whole_k && p.kc == 768, "2x192x768: kc %lld", (long long)p.kc);
    one_tile.M = 6; /* A rows 18 KiB */
    plan_gemm(&l2m, &one_tile, 1, &p);
    CHECK(p.ntiles == 1 && !p.whole_k && p.kc < 768, "6x192x768: kc %lld", (long long)p.kc);
    /* At most 12 B panels a thread, the rules' kc doubled (deepen_kc),
     * the thread's block of B within half the L2; 24 panels keep it. */
    gemm_shape few_panels = {.M = 64, .N = 384, .K = 3072};
    plan_gemm(&l2m, &few_panels, 1, &p);
    CHECK(p.deep_kc && p.kc > l2m.kc_for[p.nv] && p.kc * p.nc * 4 <= l2m.l2_bytes / 2,
          "64x384x3072: kc %lld (rules' %lld), nc %lld", (long long)p.kc,
          (long long)l2m.kc_for[p.nv], (long long)p.nc);
    few_panels.N = 768;
    plan_gemm(&l2m, &few_panels, 1, &p);
    CHECK(!p.deep_kc && p.kc <= l2m.kc_for[p.nv], "64x768x3072: kc %lld", (long long)p.kc);
    gemm_shape split_n = {.M = 32, .N = 768, .K = 768};
    plan_choice along_n = {.split = 'N'};
    plan_gemm_choice(&l2m, &split_n, 2, &along_n, &p);
    /* Here the rules' kc (384 over K 768) is already as deep as the
     * thread's half of the L2 allows, so it is not deepened further. */
    CHECK(p.split == 'N' && p.kc == 384 && p.nc <= 384,
          "32x768x768 along N on 2 threads: kc %lld, nc %lld", (long long)p.kc,
          (long long)p.nc);
    gemm_shape deep = {.M = 2, .N = 96, .K = 1536}; /* B 576 KiB */
    plan_gemm(&l2m, &deep, 1, &p);
    CHECK(!p.whole_k && p.kc < 768, "2x96x1536: kc %lld", (long long)p.kc);
    gemm_shape wide = {.M = 2, .N = 3072, .K = 384}; /* B 4.5 MiB */
    for (int threads = 1; threads <= 2; threads++) {
        plan_gemm(&l2m, &wide, threads, &p);
        CHECK(p.whole_k && p.kc == 384, "2x3072x384 on %d threads: kc %lld", threads,
              (long long)p.kc);
    }
#endif
}

/* The model counts whole FMA units, so the probe's noise does not reach
 * the plans: a probe of this machine's kind that read a clock-dropped
 * 1.4 FMAs a cycle, latency 3.85, builds the same model as one that read
 * 2 and 4, to the byte of every table the planner reads. A one-pipe core
 * stays one pipe, and an emulated probe (a fraction of an FMA a cycle,
 * tens of cycles) takes latency times rate as the FMAs in flight. */
static void whole_fma_units(void)
{
#if defined(__x86_64__)
    hw_profile clean, noisy;
    CHECK(hw_profile_preset(&clean, "zen4") == 0, "zen4 preset exists");
    clean.fma_per_cycle = 2.0;
    clean.fma_latency_cycles = 4.0;
    noisy = clean;
    noisy.fma_per_cycle = 1.4;
    noisy.fma_latency_cycles = 3.85;
    plan_model a, b;
    CHECK(plan_model_init(&a, &clean) == 0 && plan_model_init(&b, &noisy) == 0,
          "both models build");
    CHECK(b.hw.fma_per_cycle == 2.0 && b.hw.fma_latency_cycles == 4.0,
          "1.4 FMAs a cycle, latency 3.85: counted as %g pipes, latency %g",
          b.hw.fma_per_cycle, b.hw.fma_latency_cycles);
    CHECK(memcmp(a.tile_cycles, b.tile_cycles, sizeof a.tile_cycles) == 0 &&
              memcmp(a.bulk_mr, b.bulk_mr, sizeof a.bulk_mr) == 0 &&
              memcmp(a.dp_first, b.dp_first, sizeof a.dp_first) == 0 && a.mr == b.mr &&
              a.nv == b.nv && a.kc == b.kc && a.nc == b.nc && a.dot_mr == b.dot_mr &&
              a.dot_nj == b.dot_nj,
          "the noisy probe's model plans as the clean one's");
    /* A calibration's figures override the probe's: a process that read
     * 1.2 FMAs a cycle (one pipe) plans as the calibration's 2 pipes did;
     * an uncalibrated cost, or one stored without the figures, leaves the
     * probe's model alone. */
    noisy.fma_per_cycle = 1.2;
    noisy.fma_latency_cycles = 4.0;
    CHECK(plan_model_init(&b, &noisy) == 0 && b.hw.fma_per_cycle == 1.0, "1.2 reads one pipe");
    cost_model calibrated = a.cost;
    calibrated.calibrated = true;
    CHECK(calibrated.fma_per_cycle == 2.0 && calibrated.fma_latency == 4.0,
          "the cost records the model's FMA figures (%g a cycle, latency %g)",
          calibrated.fma_per_cycle, calibrated.fma_latency);
    plan_model c = b;
    CHECK(plan_model_set_cost(&c, &calibrated) == 0 && c.cost.calibrated &&
              c.hw.fma_per_cycle == 2.0 &&
              memcmp(a.tile_cycles, c.tile_cycles, sizeof a.tile_cycles) == 0 &&
              memcmp(a.bulk_mr, c.bulk_mr, sizeof a.bulk_mr) == 0 && a.mr == c.mr &&
              a.nv == c.nv && a.kc == c.kc,
          "with the calibration's figures it builds the clean model (%dx%d)", c.mr, c.nv);
    c = b;
    calibrated.fma_per_cycle = calibrated.fma_latency = 0; /* stored before */
    CHECK(plan_model_set_cost(&c, &calibrated) == 0 && c.hw.fma_per_cycle == 1.0 &&
              memcmp(b.tile_cycles, c.tile_cycles, sizeof b.tile_cycles) == 0,
          "without them the probe's model stays");
    noisy.fma_per_cycle = 1.04; /* one pipe, a little timing noise */
    noisy.fma_latency_cycles = 4.1;
    CHECK(plan_model_init(&b, &noisy) == 0 && b.hw.fma_per_cycle == 1.0 &&
              b.hw.fma_latency_cycles == 4.0,
          "1.04 FMAs a cycle, latency 4.1: %g pipes, latency %g", b.hw.fma_per_cycle,
          b.hw.fma_latency_cycles);
    noisy.fma_per_cycle = 0.05; /* emulated */
    noisy.fma_latency_cycles = 40.0;
    CHECK(plan_model_init(&b, &noisy) == 0 && b.hw.fma_per_cycle == 1.0 &&
              b.hw.fma_latency_cycles == 2.0 && b.mr > 0,
          "emulated 0.05 FMAs a cycle, latency 40: %g pipes, latency %g, main tile %dx%d",
          b.hw.fma_per_cycle, b.hw.fma_latency_cycles, b.mr, b.nv);
#endif
}

/* Hand computation, avx2-16 preset (8 floats, 16 registers; L1 32 KiB
 * 8-way = 64 sets; L2 256 KiB 4-way, 65536 B a way; L3 8 MiB 16-way
 * shared by 8; FMA latency 5, 2 FMAs per cycle):
 *  - rule 1: mr * nv >= 10; load ports: (mr + nv) * 2 <= 2 mr nv rules out
 *    14 x 1 (30 > 28);
 *  - most accumulators within 16 registers: 6 x 2 and 4 x 3, 12 each; the
 *    taller wins: 6 x 16.
 *  - rule 3: C_B = floor(7 / (1 + 6 / 16)) = 5; kc = 5 * 64 * 64 / (16 * 4) = 320;
 *  - rule 4: the A micro-panel 6 * 320 * 4 = 7680 B takes one L2 way, B
 *    gets 4 - 1 - 1 = 2: nc = 2 * 65536 / (320 * 4) = 102 -> 96 (16 | nc);
 *    half a CPU's share of the L3 (8 MiB / 8 / 2 = 512 KiB) holds more:
 *    nc = 524288 / (320 * 4) = 409 -> 400. */
static void avx2_by_hand(void)
{
    hw_profile hw;
    CHECK(hw_profile_preset(&hw, "avx2-16") == 0, "avx2-16 preset exists");
    CHECK(model_tile_cycles(4, 3, 5, 2, 2, 0) == 6.0, "4x3 tile: 6 cycles");
    CHECK(model_tile_cycles(2, 1, 5, 2, 2, 0) == 5.0, "2x1 tile: latency-bound");
#if defined(__x86_64__)
    plan_model m;
    CHECK(plan_model_init(&m, &hw) == 0, "avx2-16 model builds");
    CHECK(m.mr == 6 && m.nv == 2 && m.nr == 16, "avx2-16 tile %dx%d", m.mr, m.nr);
    CHECK(m.kc == 320, "avx2-16 kc %lld", (long long)m.kc);
    CHECK(m.nc == 400, "avx2-16 nc %lld", (long long)m.nc);
    /* Dot tile: 16 registers fit at most 9 accumulators (3 x 3), short of
     * the 10 chains rule 1 wants, so the most accumulators win: 3 x 3. */
    CHECK(m.dot_mr == 3 && m.dot_nj == 3, "avx2-16 dot tile %dx%d", m.dot_mr, m.dot_nj);
    /* Its widest tile, 2 rows of 4 vectors, loads more per FMA than 6x2:
     * B of short rows keeps the model's width. */
    gemm_plan p;
    plan_gemm_choice(&m, &(gemm_shape){.M = 43, .N = 64, .K = 43}, 1, &(plan_choice){0}, &p);
    CHECK(p.nv == m.nv, "avx2-16, 43x64x43: %d vectors wide", p.nv);
    /* The row form's 8 accumulators, 4 a row at 2 rows, fall short of the
     * 10 chains: two rows over pre-packed B take tiles. */
    plan_gemm_choice(&m, &(gemm_shape){.M = 2, .N = 768, .K = 768, .prepacked_kc = m.kc}, 1,
                     &(plan_choice){0}, &p);
    CHECK(!p.row, "avx2-16, 2x768x768 with B pre-packed: tiles, not the row form");
#endif
}

/* Zen 1 (AVX2, one FMA pipe of latency 5, broadcasts 0.2 cycles each) by
 * hand: broadcasts add 0.2 / nv of the FMA time, 5% 32 wide (2 x 32
 * passes rules 1-3: 8 chains >= 5), so 8 wide (20%) is rejected and 16
 * wide (10%) is not; of 6 x 16 and 4 x 24, 12 accumulators each, the
 * taller: kc = floor(7 / (1 + 6 / 16)) = 5 ways of 64 lines of 64 B, over
 * 16 floats of 4 B = 320. A probe that reads broadcasts dear still gets a
 * tile: the widest passes against itself. */
static void zen1_broadcasts(void)
{
#if defined(__x86_64__)
    hw_profile hw;
    CHECK(hw_profile_preset(&hw, "zen1") == 0, "zen1 preset exists");
    plan_model m;
    CHECK(plan_model_init(&m, &hw) == 0, "zen1 model builds");
    CHECK(m.mr == 6 && m.nv == 2 && m.kc == 320, "zen1 tile %dx%d, kc %lld", m.mr, m.nr,
          (long long)m.kc);
    CHECK(fabs(m.least_broadcast_share - 0.05) < 1e-12, "zen1 least broadcast share %g",
          m.least_broadcast_share);
    CHECK(model_tile_verdict(&m, 14, 1).failed == TILE_RULE_BROADCASTS &&
              model_tile_verdict(&m, 5, 1).failed == TILE_RULE_BROADCASTS,
          "zen1: 8-wide tiles pass the broadcast rule");
    CHECK(model_tile_verdict(&m, 4, 3).failed == TILE_RULE_PASSES, "zen1: 4x24 rejected");

    /* B from memory (9.4 MB, over 16 L2s) in one-line panels: read in
     * place 64 rows deep, where deep up to 40 tiles of 6 rows at 1 thread
     * and 16 at 2 (K split aside: a plan asking for N), where wide up to 7. */
    struct { int64_t M, N, K; int threads; bool in_place; } streams[] = {
        {17, 768, 3072, 1, true},  {96, 768, 3072, 2, true},  {97, 768, 3072, 2, false},
        {240, 768, 3072, 1, true}, {241, 768, 3072, 1, false},
        {42, 3072, 768, 1, true},  {43, 3072, 768, 1, false}, {7, 3072, 768, 1, true},
    };
    for (size_t i = 0; i < sizeof streams / sizeof streams[0]; i++) {
        gemm_plan p;
        gemm_shape s = {.M = streams[i].M, .N = streams[i].N, .K = streams[i].K};
        plan_gemm_choice(&m, &s, streams[i].threads, &(plan_choice){.split = 'N'}, &p);
        CHECK(p.b_from_memory && p.pack_b == !streams[i].in_place &&
                  (p.pack_b || p.kc == 64),
              "zen1 %lldx%lldx%lld, %d threads: B %s, kc %lld", (long long)s.M,
              (long long)s.N, (long long)s.K, streams[i].threads,
              p.pack_b ? "packed" : "in place", (long long)p.kc);
    }
    /* A B of more than half the L3 (7 MB of 8 MiB): the streaming row form
     * up to 4 rows; not at 5, nor for a B that leaves half the L3 free. */
    struct { int64_t M, N; bool row; } l3_rows[] = {
        {2, 2304, true}, {4, 2304, true}, {5, 2304, false}, {2, 768, false},
    };
    for (size_t i = 0; i < sizeof l3_rows / sizeof l3_rows[0]; i++) {
        gemm_plan p;
        gemm_shape s = {.M = l3_rows[i].M, .N = l3_rows[i].N, .K = 768};
        plan_gemm_choice(&m, &s, 1, &(plan_choice){0}, &p);
        CHECK(p.row == l3_rows[i].row && (!p.row || p.b_from_memory),
              "zen1 %lldx%lldx768: row form %d, streaming %d", (long long)s.M,
              (long long)s.N, p.row, p.b_from_memory);
    }

    /* 2 threads, B packed by the call: with four row tiles or more a
     * thread the split is along M, whose tiles are claimed one at a time,
     * unless N is predicted more than STATIC_SPLIT_SLACK faster; with
     * fewer, the rules' split along N stays. */
    struct { int64_t M, N, K; char split; } splits[] = {
        {256, 2304, 768, 'M'}, {512, 768, 768, 'M'}, {1600, 2304, 768, 'M'}, {24, 768, 768, 'N'},
    };
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; i++) {
        gemm_plan p;
        gemm_shape s = {.M = splits[i].M, .N = splits[i].N, .K = splits[i].K};
        plan_gemm_choice(&m, &s, 2, &(plan_choice){0}, &p);
        CHECK(p.split == splits[i].split, "zen1 %lldx%lldx%lld at 2 threads: split %c",
              (long long)s.M, (long long)s.N, (long long)s.K, p.split);
    }

    hw.broadcast_cycles = 3.0;
    CHECK(plan_model_init(&m, &hw) == 0 && m.nv == 4 && m.mr == 2,
          "broadcasts of 3 cycles: tile %dx%d", m.mr, m.nr);
#endif
}

/* Zen 3 (AVX2, 16-wide main panels of one cache line, two FMA pipes):
 * the rules measured there. */
static void zen3_rules(void)
{
#if defined(__x86_64__)
    hw_profile hw;
    CHECK(hw_profile_preset(&hw, "zen3") == 0, "zen3 preset exists");
    plan_model m;
    CHECK(plan_model_init(&m, &hw) == 0, "zen3 model builds");
    CHECK(m.nv == 2 && m.nr == 16, "zen3 panels %d wide, one line", m.nr);
    gemm_plan p;
    /* Panels a line wide are packed past a tile or two of rows where B's
     * rows collide in the L1 (1024 floats apart), past four tiles where
     * they do not (768, 2304), on any number of threads; fewer rows read
     * B in place. */
    struct { int64_t M, N, K; int threads; bool packed; } packs[] = {
        {1024, 1024, 1024, 2, true}, {1024, 1024, 1024, 1, true}, {17, 1024, 1024, 1, true},
        {450, 768, 768, 2, true},    {12, 1024, 1024, 2, false},  {8, 768, 768, 1, false},
        {24, 768, 768, 1, false},    {24, 2304, 768, 2, false},   {31, 768, 768, 1, true},
        {24, 1024, 1024, 1, true},
    };
    for (size_t i = 0; i < sizeof packs / sizeof packs[0]; i++) {
        gemm_shape s = {.M = packs[i].M, .N = packs[i].N, .K = packs[i].K};
        plan_gemm_choice(&m, &s, packs[i].threads, &(plan_choice){0}, &p);
        CHECK(p.pack_b == packs[i].packed, "zen3 %lldx%lldx%lld at %d threads: B %s",
              (long long)s.M, (long long)s.N, (long long)s.K, packs[i].threads,
              p.pack_b ? "packed" : "in place");
    }
    /* With two FMA pipes, rows one 24-wide tile covers take it (3 rows: 9
     * chains for 2 pipes of 4 cycles, where 16 wide holds 6; 4 rows: 12
     * against 8); 5-6 and 9 keep the main width; 7-8 rows take two tiles
     * of 24 (4 rows a tile, against two of 16: as many tiles, more
     * accumulators). */
    for (int64_t rows = 3; rows <= 9; rows++) {
        plan_gemm_choice(&m, &(gemm_shape){.M = rows, .N = 768, .K = 768}, 1,
                         &(plan_choice){0}, &p);
        bool wide = rows <= 4 || rows == 7 || rows == 8;
        CHECK(p.nv == (wide ? 3 : m.nv), "zen3 %lldx768x768: %d vectors wide", (long long)rows,
              p.nv);
    }
    plan_gemm_choice(&m, &(gemm_shape){.M = 3, .N = 768, .K = 768, .transb = true}, 1,
                     &(plan_choice){0}, &p);
    CHECK(p.nv != 3, "zen3 3x768x768 with B^T: not the 24-wide rule");
    /* B streamed in place (9.4 MB, over 16 of its L2s) by tiles is
     * prefetched along its rows, its rows a multiple of 4 KiB apart or
     * not; up to 6 rows take the streaming row form instead. */
    gemm_shape stream = {.M = 7, .N = 3072, .K = 768};
    plan_gemm_choice(&m, &stream, 1, &(plan_choice){0}, &p);
    /* 16-wide panels are a line a row: 64 rows make the 64 lines. */
    CHECK(!p.row && p.b_from_memory && !p.pack_b && p.kc == 64 && p.b_prefetch_along == 64 &&
              !plan_b_unprefetched(&p, stream.N * (int64_t)sizeof(float)),
          "zen3 7x3072x768 streams B, prefetched %d floats along its rows", p.b_prefetch_along);
    for (int64_t rows = 2; rows <= 4; rows++) {
        stream.M = rows;
        plan_gemm_choice(&m, &stream, 2, &(plan_choice){.split = 'N'}, &p);
        CHECK(p.row && p.b_from_memory && p.threads == 2 && p.kc == 768,
              "zen3 %lldx3072x768: the streaming row form on %d threads", (long long)rows,
              p.threads);
    }
    gemm_shape cached = {.M = 3, .N = 768, .K = 768};
    plan_gemm_choice(&m, &cached, 1, &(plan_choice){0}, &p);
    CHECK(!p.pack_b && p.b_prefetch_along == 0 && p.b_prefetch > 0,
          "zen3 3x768x768: B in place, prefetched rows ahead");
#endif
}

/* The cheapest cover of `len` rows, by exhaustive recursion. */
static double brute_cover(const plan_model *m, int nv, int len, double *memo)
{
    if (len == 0)
        return 0.0;
    if (memo[len] >= 0)
        return memo[len];
    double best = INFINITY;
    for (int h = 1; h <= len && h <= UK_MAX_MR; h++) {
        if (m->tile_cycles[nv][h] == 0.0 || (nv == m->nv && h > m->mr))
            continue;
        double tile = m->tile_cycles[nv][h] + (30.0 + 2.0 * h * nv) / (double)m->kc;
        double cost = tile + brute_cover(m, nv, len - h, memo);
        if (cost < best)
            best = cost;
    }
    return memo[len] = best;
}

static void planner_invariants_on(const hw_profile *hw)
{
    plan_model m;
    CHECK(plan_model_init(&m, hw) == 0, "the model builds");

    /* The variants a calibrated model picks from keep to widths whose
     * main tile the rules accept. */
    gemm_shape layer_shape = {.M = 64, .N = 768, .K = 3072};
    plan_choice variants[16];
    int nvariants = plan_variants(&m, &layer_shape, 2, variants, 16);
    for (int i = 0; i < nvariants; i++)
        if (variants[i].nv > 0) {
            int nv = variants[i].nv;
            CHECK(model_tile_verdict(&m, m.bulk_mr[nv], nv).failed == TILE_RULE_PASSES,
                  "variant width %d: its %dx%d tile passes the rules", nv, m.bulk_mr[nv],
                  nv * m.vec);
        }

    for (int nv = 1; nv <= UK_MAX_NV; nv++) {
        double memo[PLAN_DP_LEN + 1];
        for (int i = 0; i <= PLAN_DP_LEN; i++)
            memo[i] = -1.0;
        int worse = 0;
        for (int len = 1; len <= PLAN_DP_LEN; len++)
            worse += fabs(m.dp_cost[nv][len] - brute_cover(&m, nv, len, memo)) > 1e-9;
        CHECK(worse == 0, "DP covers for nv %d: %d lengths not optimal", nv, worse);
    }

    int bad_cover = 0, bad_kernel = 0, bad_split = 0, bad_balance = 0, bad_order = 0, dots = 0;
    for (int64_t M = 0; M <= 1000; M++) {
        for (int threads = 1; threads <= 3; threads++) {
            /* N narrow (1-2: dot tiles on any ISA), about a vector, or wide. */
            int64_t N = M % 3 == 0 ? 5 + M % 11 : M % 3 == 1 ? 100 + M % 7 : 1 + M % 2;
            gemm_shape s = {.M = M, .N = N, .K = 64};
            gemm_plan p;
            plan_gemm(&m, &s, threads, &p);
            if (p.dot) {
                /* Narrow op(B): dot tiles, the bounds over row or column tiles. */
                int64_t units = p.split == 'M' ? (M + p.dot_mr - 1) / p.dot_mr : p.npanels;
                bool ok = s.N < p.vec && p.threads >= 1 && p.threads <= threads &&
                          p.bounds[0] == 0 && p.bounds[p.threads] == units;
                for (int t = 0; t < p.threads; t++)
                    ok = ok && p.bounds[t] < p.bounds[t + 1];
                bad_split += !ok;
                /* The members the plan holds: the full tile and the exact
                 * last row and column tiles. */
                int last_rows = (int)(M - (M - 1) / p.dot_mr * p.dot_mr);
                int last_cols = (int)(N - (N - 1) / p.dot_nj * p.dot_nj);
                for (int r = 0; r < 2 && M > 0; r++)
                    for (int c = 0; c < 2; c++) {
                        ukernel_fn want = ukernel_dot_lookup(p.isa, r ? last_rows : p.dot_mr,
                                                             c ? last_cols : p.dot_nj);
                        bad_kernel += want == NULL || p.dot_fn[r][c] != want;
                    }
                dots++;
                continue;
            }
            int64_t rows = 0;
            for (int i = 0; i < p.nruns; i++) {
                rows += p.runs[i].mr * p.runs[i].count;
                int nv = p.npanels == 1 ? (int)((s.N + p.vec - 1) / p.vec) : p.nv;
                ukernel_desc d = {.isa = p.isa, .mr = p.runs[i].mr, .nv = nv, .a_packed = true};
                bad_kernel += ukernel_lookup(&d) == NULL;
                /* Tallest first, each height one run. */
                bad_order += i > 0 && p.runs[i].mr >= p.runs[i - 1].mr;
            }
            bad_cover += rows != M;
            int64_t units = p.split == 'M' ? p.ntiles : p.npanels;
            bool ok = p.threads >= 1 && p.threads <= threads && p.bounds[0] == 0 &&
                      p.bounds[p.threads] == units;
            for (int t = 0; t < p.threads; t++)
                ok = ok && p.bounds[t] <= p.bounds[t + 1];
            bad_split += !ok;
            /* Balanced: no share exceeds an even share by more than one unit. */
            if (ok && p.split == 'M' && M > 0) {
                for (int t = 0; t < p.threads; t++) {
                    int64_t share = p.bounds[t + 1] - p.bounds[t];
                    bad_balance += share > units / p.threads + 2;
                }
            }
        }
    }
    CHECK(bad_cover == 0, "tessellation covers M exactly (%d misses)", bad_cover);
    CHECK(bad_kernel == 0, "every tile height has a ukernel (%d missing)", bad_kernel);
    CHECK(bad_order == 0, "row runs go tallest first, one per height (%d out of order)",
          bad_order);
    CHECK(bad_split == 0, "thread bounds partition the work (%d bad)", bad_split);
    CHECK(dots > 0, "narrow B ran dot tiles in some of these (%d)", dots);
    CHECK(bad_balance == 0, "thread shares are balanced (%d unbalanced)", bad_balance);

    /* Column blocks are even: the last is short of the others by fewer
     * panels than there are blocks (2304 wide is 2 x 1152, not 2048 +
     * 256). B streamed from memory keeps its long blocks. */
    int uneven = 0, plans = 0;
    for (int64_t N = 1; N <= 12000; N += 7)
        for (int64_t M = 16; M <= 400; M += 384) {
            gemm_shape s = {.M = M, .N = N, .K = 768};
            gemm_plan p;
            plan_gemm(&m, &s, 1, &p);
            if (p.dot || (p.b_from_memory && !p.pack_b))
                continue;
            int64_t panels = (N + p.nr - 1) / p.nr, per_block = p.nc / p.nr;
            int64_t blocks = (N + p.nc - 1) / p.nc;
            int64_t last = panels - (blocks - 1) * per_block;
            uneven += p.nc % p.nr != 0 || per_block - last >= blocks;
            plans++;
        }
    CHECK(plans > 1000 && uneven == 0, "column blocks are even (%d of %d plans uneven)",
          uneven, plans);

    /* Small M skips packing when op(B) rows are contiguous: the tiles
     * read B in place and ask for its rows ahead, or, where this
     * machine's measured L3 is as slow as memory (under qemu it may be:
     * plan_b.c, plan_b_streams), the row form reads both in place. */
    gemm_plan p;
    gemm_shape small = {.M = 2, .N = 768, .K = 768};
    plan_gemm(&m, &small, 1, &p);
    bool row = plan_takes_row_form(&m, &small, 1);
    CHECK(!p.pack_a && !p.pack_b && p.row == row && (row || p.b_prefetch > 0),
          "M = 2 reads A and B in place (%s)", row ? "row form" : "tiles");
    small.M = 1;
    small.transb = true;
    plan_gemm(&m, &small, 1, &p);
    CHECK(p.dot && p.dot_mr >= 1 && p.dot_nj >= 1, "M = 1 with B transposed: dot tiles");
    gemm_shape tall = {.M = 17, .N = 768, .K = 768, .transb = true};
    plan_gemm(&m, &tall, 1, &p);
    CHECK(!p.dot && p.pack_b, "M = 17 with B transposed packs B");
    /* Its k blocks follow the packed rule (plan_gemm.c, packed_kc): K
     * whole up to 1.5 times twice the tile's kc, which a deep L1 reaches
     * (qemu's probe gave a kc of 804, and 2048 rows went whole). */
    gemm_shape big = {.M = 2048, .N = 2048, .K = 2048};
    plan_gemm(&m, &big, 1, &p);
    int64_t packed_whole_k = 3 * m.kc_for[p.nv];
    CHECK(p.pack_a && p.pack_b && p.kc <= packed_whole_k && p.predicted_seconds > 0,
          "large GEMM packs B, and A tile by tile (pack_a %d, pack_b %d, kc %lld of at most %lld)",
          p.pack_a, p.pack_b, (long long)p.kc, (long long)packed_whole_k);
    big.transa = true;
    plan_gemm(&m, &big, 1, &p);
    CHECK(p.pack_a, "large GEMM with A transposed packs A");

    /* B read in place from memory is streamed a few rows deep, also
     * where a choice asks for other blocking; B that fits a few L2s is
     * not. */
    gemm_shape head = {.M = 7, .N = 50257, .K = 768};
    plan_choice deep = {.kc = 384, .nc = 672};
    plan_gemm_choice(&m, &head, 1, &deep, &p);
    int64_t row_lines = (m.nr * 4 + 63) / 64;
    CHECK(!p.pack_b && p.kc == 64 / row_lines && p.nc >= 4096 && p.nc < 4096 + p.nr,
          "7x50257x768 streams B: kc %lld, nc %lld", (long long)p.kc, (long long)p.nc);
    head.M = UK_ROW_STREAM_MAX_M;
    plan_gemm_choice(&m, &head, 1, &deep, &p);
    CHECK(p.row && p.b_from_memory, "%dx50257x768: the streaming row form", UK_ROW_STREAM_MAX_M);
    /* N between one panel and two, not a multiple of the panel: one
     * wider panel, also against a choice; N = 64 keeps the choice's where
     * it is a multiple of the model's panel (32 wide), and is one panel
     * where it is not (a model of 48-wide panels, as a probe slowed by
     * ASan once picked on a Xeon). */
    int wider = m.nv + 1; /* a width the family has one size up, N a multiple of its vectors */
    gemm_shape narrow = {.M = 100, .N = (int64_t)wider * m.vec, .K = 100};
    plan_choice two = {.nv = 2};
    plan_gemm_choice(&m, &narrow, 1, &two, &p);
    CHECK(m.nv < 2 || wider > UK_MAX_NV || m.bulk_mr[wider] == 0 ||
              (p.npanels == 1 && p.nv == wider),
          "N = %lld is one panel (nv %d)", (long long)narrow.N, p.nv);
    gemm_shape n64 = {.M = 100, .N = 64, .K = 100};
    plan_gemm_choice(&m, &n64, 1, &two, &p);
    int n64_vecs = 64 / m.vec;
    bool n64_one_panel = 64 % m.nr != 0 && n64_vecs > m.nv && n64_vecs <= UK_MAX_NV &&
                         m.bulk_mr[n64_vecs] > 0;
    if (n64_one_panel)
        CHECK(p.npanels == 1 && p.nv == n64_vecs,
              "N = 64 over %d-wide panels is one panel (nv %d, %lld panels)", m.nr, p.nv,
              (long long)p.npanels);
    else
        CHECK(p.nv == 2, "N = 64 keeps the choice's width (nv %d)", p.nv);

    /* A choice of kc alone sizes nc for it: the B block still fits half
     * this CPU's share of the L3 (with the rules' nc it did not). */
    const hw_cache *l3 = hw_data_cache(&m.hw, 3);
    int64_t bound = m.l2_bytes; /* the L2, or half an L3 share that feeds the tiles */
    int64_t l3_share = l3 ? l3->size_bytes / (l3->shared_by > 0 ? l3->shared_by : 1) : 0;
    if (m.l3_feeds_tile && l3_share / 2 > bound)
        bound = l3_share / 2;
    /* N wide enough that twice the rules' kc by all of N would not fit
     * (8192 columns fit a 32 MiB L3's share at kc 256) */
    int64_t wide = 2 * bound / ((int64_t)sizeof(float) * m.kc);
    /* K deep enough that the rules' kc for B in panels (twice the
     * model's, packed_kc) is not K whole, so that a choice can go deeper */
    gemm_shape square = {.M = 2048, .N = wide > 8192 ? wide : 8192, .K = 8 * m.kc};
    gemm_plan rules;
    plan_gemm_choice(&m, &square, 1, &(plan_choice){0}, &rules);
    plan_gemm_choice(&m, &square, 1, &(plan_choice){.kc = 2 * rules.kc}, &p);
    /* (the asked kc is evened out over K's blocks, so it may come out a little less) */
    CHECK(p.kc > rules.kc && p.kc <= 2 * rules.kc && p.nc < rules.nc && p.kc * p.nc * 4 <= bound,
          "kc %lld x nc %lld (the rules' %lld x %lld) within %lld bytes", (long long)p.kc,
          (long long)p.nc, (long long)rules.kc, (long long)rules.nc, (long long)bound);

    /* Two B panels: K in one block while op(B) fits half the L2. */
    gemm_shape pv = {.M = 512, .N = 2 * m.nr, .K = 512};
    plan_gemm_choice(&m, &pv, 1, &(plan_choice){0}, &p);
    CHECK(p.whole_k && p.kc == 512, "512x%lldx512: kc %lld", (long long)pv.N, (long long)p.kc);
    /* Past half the L2 K is blocked, unless B read in place runs as one
     * block, kept by a third of an L3 that feeds the tiles (plan_gemm.c,
     * WHOLE_B_L3_PARTS). */
    pv.K = m.l2_bytes / (int64_t)sizeof(float) / pv.N;
    plan_gemm_choice(&m, &pv, 1, &(plan_choice){0}, &p);
    bool one_block = !p.pack_b && l3 && m.l3_feeds_tile && pv.K * pv.N * 4 <= l3->size_bytes / 3;
    CHECK(!p.whole_k && p.b_one_block == one_block && (one_block ? p.kc == pv.K : p.kc < pv.K),
          "512x%lldx%lld: kc %lld, one block %d", (long long)pv.N, (long long)pv.K,
          (long long)p.kc, p.b_one_block);

    gemm_shape layer = {.M = 1, .N = 768, .K = 768};
    plan_gemm(&m, &layer, 1, &p);
    CHECK(!p.pack_b && p.kc > 32, "1x768x768 keeps the model's kc (%lld)", (long long)p.kc);
}

/* Sets a cache level's size and ways in a profile. */
static void set_cache(hw_profile *hw, int level, int64_t kib, int ways)
{
    for (int i = 0; i < hw->ncaches; i++)
        if (hw->caches[i].level == level && hw->caches[i].type != 'I') {
            hw->caches[i].size_bytes = kib << 10;
            hw->caches[i].ways = ways;
        }
}

/* The invariants hold whatever the probe measures, so they run on this
 * machine's profile and on others the suite cannot own: what an emulator
 * reads (qemu-user on a Xeon: a hundredth of an FMA a cycle, broadcasts
 * dear, every level as slow; its kc of 804 once broke a check here that
 * assumed a fast core), and on x86 the presets and a Xeon whose L3 does
 * not feed the tiles (48 KiB 12-way L1, 2 MiB L2, two pipes, L3 at 30
 * GB/s). */
static void planner_invariants(void)
{
    test_context("this machine");
    planner_invariants_on(hw_default_profile());

    hw_profile emulated = *hw_default_profile();
    set_cache(&emulated, 1, 48, 12);
    emulated.freq_ghz = 2.7;
    emulated.fma_latency_cycles = 127.4;
    emulated.fma_per_cycle = 0.01;
    emulated.broadcast_cycles = 11.5;
    for (int level = 0; level < HW_LEVEL_COUNT; level++)
        emulated.read_gbs[level] = 0.6;
    test_context("an emulator's probe");
    planner_invariants_on(&emulated);
    /* The same on the generic class, as test-arm runs it: 4-float
     * vectors, 32 registers on aarch64 and 16 on x86 (probe.c, set_isa). */
    emulated.isa = HW_ISA_GENERIC;
    emulated.vec_floats = 4;
#if defined(__aarch64__)
    emulated.vec_registers = 32;
#else
    emulated.vec_registers = 16;
#endif
    test_context("an emulator's probe, generic vectors");
    planner_invariants_on(&emulated);
    /* Another run of that probe read the latency and broadcasts as cheap
     * (a taller tile, 14 rows on aarch64, and a shallower kc). */
    emulated.fma_latency_cycles = 4;
    emulated.broadcast_cycles = 0;
    test_context("an emulator's probe, generic vectors, cheap broadcasts");
    planner_invariants_on(&emulated);

#if defined(__x86_64__)
    static const char *const presets[] = {"zen4", "zen3", "zen1", "avx2-16"};
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        hw_profile hw;
        CHECK(hw_profile_preset(&hw, presets[i]) == 0, "%s preset exists", presets[i]);
        test_context(presets[i]);
        planner_invariants_on(&hw);
    }
    hw_profile xeon;
    CHECK(hw_profile_preset(&xeon, "zen4") == 0, "zen4 preset exists");
    set_cache(&xeon, 1, 48, 12);
    set_cache(&xeon, 2, 2048, 16);
    xeon.fma_per_cycle = 2.0;
    xeon.freq_ghz = 3.8;
    xeon.read_gbs[HW_LEVEL_L3] = 30.0;
    test_context("a Xeon of a slow L3");
    planner_invariants_on(&xeon);
#endif
    test_context(NULL);
}

/* Whether the L3 feeds the tiles, by hand: a k step of an mr-row tile
 * reads 64 bytes of B (AVX-512) per vector of FMAs on mr rows. The Xeon
 * (two pipes, 3.8 GHz, L3 30 GB/s = 7.9 bytes a cycle) against 14x32's
 * 64 * 2 / 14 = 9.1: under the margin of 1.2; a Zen 4 (one pipe, 4.6 a
 * cycle) reading its L3 at 100 GB/s (27 a cycle) over it. Unmeasured: fed,
 * the rules as measured. Where not fed, B's blocks are sized for the L2
 * and B in place is not one block. */
static void l3_feed(void)
{
    hw_profile xeon;
    CHECK(hw_profile_preset(&xeon, "zen4") == 0, "zen4 preset exists");
    CHECK(model_l3_feeds_tile(&xeon, 14, 16, 2.0), "unmeasured L3: fed");
    xeon.fma_per_cycle = 2.0;
    xeon.freq_ghz = 3.8;
    xeon.read_gbs[HW_LEVEL_L3] = 30.0;
    CHECK(!model_l3_feeds_tile(&xeon, 14, 16, 2.0) && model_l3_feeds_tile(&xeon, 14, 16, 0.75),
          "L3 at 7.9 bytes a cycle: 14 rows on two pipes (9.1) not fed, on 0.75 (3.4) fed");
    hw_profile zen4 = xeon;
    zen4.fma_per_cycle = 1.0;
    zen4.read_gbs[HW_LEVEL_L3] = 100.0;
    CHECK(model_l3_feeds_tile(&zen4, 14, 16, 1.0), "L3 at 26 bytes a cycle feeds 14 rows");
    /* Zen 3, AVX2: 6x16 on two pipes takes 8 * 4 * 2 / 6 = 10.7 bytes a
     * cycle; its slowest quick probe, 53 GB/s at 3.24 GHz (16.4), feeds
     * it; 40 GB/s (12.3, 1.16 times) does not. */
    hw_profile zen3 = xeon;
    zen3.freq_ghz = 3.24;
    zen3.read_gbs[HW_LEVEL_L3] = 53.0;
    CHECK(model_l3_feeds_tile(&zen3, 6, 8, 2.0), "Zen 3's L3 at 16.4 bytes a cycle feeds 6 rows");
    zen3.read_gbs[HW_LEVEL_L3] = 40.0;
    CHECK(!model_l3_feeds_tile(&zen3, 6, 8, 2.0), "12.3 bytes a cycle is under the margin");

#if defined(__x86_64__)
    hw_profile fast_l3 = xeon; /* 31.6 bytes a cycle */
    fast_l3.read_gbs[HW_LEVEL_L3] = 120.0;
    plan_model fed, starved;
    CHECK(plan_model_init(&fed, &fast_l3) == 0 && plan_model_init(&starved, &xeon) == 0 &&
              fed.l3_feeds_tile && !starved.l3_feeds_tile,
          "models of a fed and a starved L3 build");
    /* Rule 4 without the L3: 6 of the L2's 8 ways for B (see zen4_by_hand). */
    int64_t way_bytes = starved.l2_bytes / 8;
    for (int nv = 1; nv <= UK_MAX_NV; nv++)
        if (starved.bulk_mr[nv] > 0)
            CHECK(starved.nc_for[nv] * starved.kc_for[nv] * 4 <= 7 * way_bytes,
                  "starved L3, nv %d: kc %lld x nc %lld within the L2", nv,
                  (long long)starved.kc_for[nv], (long long)starved.nc_for[nv]);
    CHECK(fed.nc > starved.nc, "a fed L3 widens B's block: nc %lld, %lld starved",
          (long long)fed.nc, (long long)starved.nc);
    gemm_shape layer = {.M = 16, .N = 768, .K = 3072}; /* B 9 MiB, under a third of 32 MiB */
    gemm_plan p;
    plan_gemm(&fed, &layer, 1, &p);
    CHECK(!p.pack_b && p.b_one_block && p.kc == 3072, "fed: 16x768x3072 in one block (kc %lld)",
          (long long)p.kc);
    plan_gemm(&starved, &layer, 1, &p);
    CHECK(!p.pack_b && !p.b_one_block && p.kc < 3072 && p.kc * p.nc * 4 <= starved.l2_bytes,
          "starved: 16x768x3072 blocked for the L2 (kc %lld, nc %lld)", (long long)p.kc,
          (long long)p.nc);
    /* B the call packs, shared along M, comes to each thread half from
     * the other's cache, charged at the L3's rate where that is slower
     * than the fitted one (plan_split.c, B_FETCH_GBS): 2 threads split
     * 256x768x3072 along N over a slow L3, along M over a fast one. */
    gemm_shape ffn = {.M = 256, .N = 768, .K = 3072};
    plan_gemm(&starved, &ffn, 2, &p);
    CHECK(p.pack_b && p.split == 'N', "starved: 256x768x3072 on 2 threads split %c", p.split);
    /* Over a starved L3, B over two L2s (2 MiB here) a thread streams for
     * up to two row tiles (plan_b.c, STREAM_L3_B_L2S), from 7 rows at 2
     * threads; 3 rows at 1 thread take the streaming row form. */
    struct { int threads; int64_t M, N, K; bool streams; } streams[] = {
        {1, 8, 3072, 768, true},  {1, 2 * 14, 3072, 768, true}, {1, 2 * 14 + 1, 3072, 768, false},
        {1, 16, 512, 1024, false}, {2, 8, 3072, 768, true},     {2, 3, 3072, 768, false},
        {2, 8, 768, 768, false},   {1, 8, 768, 768, true},
    };
    for (int i = 0; i < (int)(sizeof streams / sizeof streams[0]); i++) {
        gemm_shape b = {.M = streams[i].M, .N = streams[i].N, .K = streams[i].K};
        CHECK(plan_b_streams(&starved, &b, streams[i].threads) == streams[i].streams &&
                  !plan_b_streams(&fed, &b, streams[i].threads),
              "%lldx%lldx%lld on %d thread(s): streams %d starved, never fed", (long long)b.M,
              (long long)b.N, (long long)b.K, streams[i].threads, streams[i].streams);
    }
    gemm_shape few = {.M = 3, .N = 2304, .K = 768}; /* rows that do not crowd the L1 sets */
    plan_gemm(&starved, &few, 1, &p);
    CHECK(p.row && p.b_from_memory, "starved: 3x2304x768 at 1 thread streams in the row form");
    plan_gemm(&starved, &few, 2, &p);
    CHECK(!p.row && !p.b_from_memory, "starved: 3x2304x768 at 2 threads keeps the tiles");
    few.M = 8;
    few.N = 3072;
    plan_gemm(&starved, &few, 1, &p);
    CHECK(!p.row && !p.pack_b && p.b_from_memory,
          "starved: 8x3072x768 streams B in place through the tiles");
    /* Streamed from the starved L3, wide B is read 128 lines a panel
     * step (64 rows of the main tile's two lines), deep B 64 (plan_gemm.c,
     * STREAM_L3_WIDE_LINES); B from memory keeps 64 lines. */
    struct { int64_t M, N, K, kc; } depths[] = {
        {13, 3072, 768, 64}, {24, 768, 3072, 32}, {16, 50257, 768, 32},
    };
    for (int i = 0; i < (int)(sizeof depths / sizeof depths[0]); i++) {
        gemm_shape b = {.M = depths[i].M, .N = depths[i].N, .K = depths[i].K};
        plan_gemm(&starved, &b, 1, &p);
        CHECK(!p.pack_b && p.b_from_memory && p.kc == depths[i].kc,
              "starved: %lldx%lldx%lld streams %lld rows deep (kc %lld)",
              (long long)b.M, (long long)b.N, (long long)b.K, (long long)depths[i].kc,
              (long long)p.kc);
    }
    /* Split along M with B packed by the call: each thread its own copy
     * of B over a starved L3, one shared copy over a fed one
     * (plan_split.c, threads_pack_own_b). */
    gemm_shape tall = {.M = 1296, .N = 768, .K = 768};
    plan_choice along_m = {.split = 'M', .pack_b = PLAN_B_PACKED};
    plan_gemm_choice(&starved, &tall, 2, &along_m, &p);
    CHECK(p.split == 'M' && p.pack_b && p.b_per_thread,
          "starved: 1296x768x768 split M on 2 threads, each thread its own B");
    plan_gemm_choice(&fed, &tall, 2, &along_m, &p);
    CHECK(p.split == 'M' && p.pack_b && !p.b_per_thread, "fed: one B shared along M");
    plan_gemm_choice(&starved, &tall, 1, &along_m, &p);
    CHECK(!p.b_per_thread, "starved, 1 thread: no copy per thread");
    hw_profile fast_fetch = xeon;
    fast_fetch.read_gbs[HW_LEVEL_L3] = 0; /* unmeasured: the fitted rate */
    plan_model unmeasured;
    CHECK(plan_model_init(&unmeasured, &fast_fetch) == 0, "model of an unmeasured L3 builds");
    plan_gemm(&unmeasured, &ffn, 2, &p);
    CHECK(p.pack_b && p.split == 'M', "unmeasured L3: 256x768x3072 on 2 threads split %c",
          p.split);
#endif
}

void suite_model(void)
{
    zen4_by_hand();
    whole_fma_units();
    avx2_by_hand();
    zen1_broadcasts();
    zen3_rules();
    l3_feed();
    planner_invariants();
}
