# tessel build. Plain GNU make, nothing downloaded: gcc or clang, make, libc and
# SQLite (libsqlite3-dev, on a fresh Debian machine).
#
#   make            library (build/libtessel.a, .so), CLI (build/tessel), tessel.pc
#   make test       builds and runs the test suite
#   make demo       builds, probes this machine, runs the dynamic-shape demo
#   make bench      peer benchmark (installs OpenBLAS, BLIS, oneDNN if missing)
#   make test-arm   aarch64 cross build, suite under qemu-user (installs both)
#   make install PREFIX=/usr/local
#
# BUILD selects the output folder and SAN adds sanitizer flags, so CI can
# build a sanitized copy beside the normal one:
#   make test BUILD=build-asan SAN="-fsanitize=address,undefined"

CC      ?= cc
BUILD   ?= build
PREFIX  ?= /usr/local
SAN     ?=
OPT     ?= -O2
VERSION := 0.1.0

CFLAGS_COMMON := -std=c11 $(OPT) -g -Wall -Wextra -Werror -fPIC -pthread \
                 -D_GNU_SOURCE -Iinclude -Isrc $(SAN) $(EXTRA_CFLAGS)
LDLIBS  := -lsqlite3 -lm -pthread

# Each ISA class of ukernels and probe loops is compiled with its own target
# flags and chosen at run time, so one binary runs on any x86-64. Files are
# tagged by suffix: *_avx512.c, *_avx2.c. Other architectures build only the
# generic class.
MACHINE := $(shell $(CC) -dumpmachine)
ifneq (,$(findstring x86_64,$(MACHINE)))
  ISA_FILTER :=
else
  ISA_FILTER := %_avx512.c %_avx2.c
endif
FLAGS_avx512 := -mavx512f -mavx512vl -mavx512bw -mavx512dq -mavx2 -mfma -mprefer-vector-width=512
FLAGS_avx2   := -mavx2 -mfma

LIB_SRC   := $(filter-out $(ISA_FILTER),$(wildcard src/*/*.c))
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_SRC   := $(wildcard tools/*.c)
CLI_OBJ   := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC  := $(wildcard tests/*.c)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
HEADERS   := $(wildcard include/*.h src/*/*.h tests/*.h tools/*.h)

.PHONY: all test demo bench bench-plan bench-ab install clean test-arm
all: $(BUILD)/libtessel.a $(BUILD)/libtessel.so $(BUILD)/tessel $(BUILD)/tessel.pc

$(BUILD)/obj/%.o: %.c $(HEADERS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_COMMON) $(KERNEL_FLAGS) $(ISA_FLAGS) -c $< -o $@

# Ukernels: unrolled loops and fused multiply-add contraction (C11 mode
# turns contraction off by default; the error bound of the tests allows it).
$(BUILD)/obj/src/kernels/%.o: KERNEL_FLAGS = -O3 -ffp-contract=fast
# The probe's timing loops measure the hardware, so they are optimised
# whatever OPT is: at -O1 each broadcast was built lane by lane.
$(BUILD)/obj/src/hw/measure_%.o: KERNEL_FLAGS = -O2
$(BUILD)/obj/%_avx512.o: ISA_FLAGS = $(FLAGS_avx512)
$(BUILD)/obj/%_avx2.o: ISA_FLAGS = $(FLAGS_avx2)

$(BUILD)/libtessel.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libtessel.so: $(LIB_OBJ)
	$(CC) -shared $(SAN) -o $@ $^ $(LDLIBS)

$(BUILD)/tessel: $(CLI_OBJ) $(BUILD)/libtessel.a
	$(CC) $(SAN) -o $@ $(CLI_OBJ) $(BUILD)/libtessel.a $(LDLIBS)

$(BUILD)/tessel_tests: $(TEST_OBJ) $(BUILD)/libtessel.a
	$(CC) $(SAN) -o $@ $(TEST_OBJ) $(BUILD)/libtessel.a $(LDLIBS)

# The pkg-config file names the prefix it is installed under: written for
# PREFIX at build time, and again by `make install`, so that a PREFIX given
# only to install (as in .ci/run) is the one the file names.
write_pc = printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: tessel\nDescription: fast tensor operators for dynamic shapes\nVersion: %s\nLibs: -L$${libdir} -ltessel\nLibs.private: -lsqlite3 -lm -pthread\nCflags: -I$${includedir}\n' \
	  '$(PREFIX)' '$(VERSION)'

$(BUILD)/tessel.pc: Makefile
	@mkdir -p $(BUILD)
	$(write_pc) > $@

test: $(BUILD)/tessel_tests $(BUILD)/tessel
	$(BUILD)/tessel_tests
	sh tests/cli.sh $(BUILD)/tessel

# The test suite cross-compiled for aarch64 (NEON) into build-arm/ and run
# under qemu-user; the script installs the cross compiler and qemu if needed.
test-arm:
	MAKE='$(MAKE)' sh tools/test-arm.sh

demo: all
	sh tools/demo.sh $(BUILD)/tessel

bench: all
	bench/run

# Micro-benchmark of planning and the plan cache (bench/README.md, "Plan
# cache"): prints a table, writes nothing. PLAN_BENCH_ARGS="--threads 1".
bench-plan: $(BUILD)/libtessel.a
	@mkdir -p $(BUILD)/bench
	$(CC) $(CFLAGS_COMMON) -o $(BUILD)/bench/plan_bench bench/plan_bench.c $(BUILD)/libtessel.a $(LDLIBS)
	$(BUILD)/bench/plan_bench $(PLAN_BENCH_ARGS)

# In-process A/B of plan choices for one shape (bench/README.md, "Plan
# A/B"): make bench-ab AB_ARGS='64 768 768 --threads 2 rules "nv=0 kc=0 nc=0 b=rules split=M"'
bench-ab: $(BUILD)/libtessel.a
	@mkdir -p $(BUILD)/bench
	$(CC) $(CFLAGS_COMMON) -o $(BUILD)/bench/plan_ab bench/plan_ab.c $(BUILD)/libtessel.a $(LDLIBS)
	$(if $(AB_ARGS),$(BUILD)/bench/plan_ab $(AB_ARGS))

install: all
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 include/tessel.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/libtessel.a $(BUILD)/libtessel.so $(DESTDIR)$(PREFIX)/lib/
	$(write_pc) > $(DESTDIR)$(PREFIX)/lib/pkgconfig/tessel.pc
	chmod 644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/tessel.pc
	install -m 755 $(BUILD)/tessel $(DESTDIR)$(PREFIX)/bin/

clean:
	rm -rf build build-*
